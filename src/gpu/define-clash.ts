// Tunable parameters reach the kernel as #defines, so a parameter that is also a word of a header (`mode`, `size`,
// `stride` are parameter names in the CUDA headers) turns that header into nonsense, and the compiler reports errors
// there, far from the user's code. A hint saying so must appear only when that is what went wrong: a define named at a
// line the compiler complains about is only a suspect, and the program is compiled again with the suspects renamed in
// the program's own code (its source and in-memory headers; a header on disk keeps the words it has). The clash is the
// cause where the errors at those lines go away.

import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CompileDiagnostic } from './diagnostics';
import { CompileError } from './errors';
import { Program, type ProgramInit } from './program';

export interface DefineClash {
  /** The define (tunable parameter). */
  name: string;
  /** Where a header uses the name: "file:line: text". */
  at: string;
}

/** Compiles a program the way the failed build was compiled (same compiler, same options). */
export type CompileAgain = (program: ProgramInit) => Promise<unknown>;

const RENAMED_SUFFIX = '__lkt_renamed';

function readFromDisk(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const sameLocation = (a: CompileDiagnostic, b: CompileDiagnostic): boolean => a.file === b.file && a.line === b.line;

/** The error diagnostics outside the program's own file that stand on a line naming a define, with that define. */
function suspects(diagnostics: readonly CompileDiagnostic[], program: Program, readFile: (file: string) => string | undefined): { name: string; at: string; diagnostic: CompileDiagnostic }[] {
  const lines = new Map<string, string[] | undefined>();
  const out: { name: string; at: string; diagnostic: CompileDiagnostic }[] = [];
  for (const d of diagnostics) {
    if (d.severity !== 'error' || path.basename(d.file) === program.fileName) continue;
    if (!lines.has(d.file)) {
      const header = Object.entries(program.headers).find(([name]) => d.file === name || d.file.endsWith(`/${name}`));
      lines.set(d.file, (header ? header[1] : readFile(d.file))?.split('\n'));
    }
    const line = lines.get(d.file)?.[d.line - 1];
    if (line === undefined) continue;
    for (const name of Object.keys(program.defines)) {
      if (new RegExp(`\\b${name}\\b`).test(line)) out.push({ name, at: `${path.basename(d.file)}:${d.line}: ${line.trim()}`, diagnostic: d });
    }
  }
  return out;
}

/** The program with `names` renamed in its own code and defines (a header on disk is left as it is). */
function renamed(program: Program, names: ReadonlySet<string>): ProgramInit {
  const words = new RegExp(`\\b(${[...names].join('|')})\\b`, 'g');
  const rename = (text: string): string => text.replace(words, `$1${RENAMED_SUFFIX}`);
  return {
    source: rename(program.source),
    fileName: program.fileName,
    nameExpressions: program.nameExpressions.map(rename),
    ...(program.arch && { arch: program.arch }),
    defines: Object.fromEntries(Object.entries(program.defines).map(([k, v]) => [names.has(k) ? `${k}${RENAMED_SUFFIX}` : k, v])),
    options: [...program.options],
    includePaths: [...program.includePaths],
    headers: Object.fromEntries(Object.entries(program.headers).map(([k, v]) => [k, rename(v)])),
    wantPtx: program.wantPtx,
  };
}

/**
 * The defines whose clash with a header caused `error`: the suspects whose error lines are gone once they are
 * renamed in the program's own code. [] when there is no suspect or renaming does not help (e.g. a syntax error).
 */
export async function confirmedDefineClashes(
  error: CompileError,
  program: Program | ProgramInit,
  compileAgain: CompileAgain,
  readFile: (file: string) => string | undefined = readFromDisk,
): Promise<DefineClash[]> {
  const p = Program.from(program);
  const found = suspects(error.diagnostics, p, readFile);
  if (found.length === 0) return [];
  let remaining: readonly CompileDiagnostic[] = [];
  try {
    await compileAgain(renamed(p, new Set(found.map((s) => s.name))));
  } catch (e) {
    if (!(e instanceof CompileError)) throw e;
    remaining = e.diagnostics.filter((d) => d.severity === 'error');
  }
  const confirmed = new Map<string, string>();
  for (const s of found) if (!confirmed.has(s.name) && !remaining.some((d) => sameLocation(d, s.diagnostic))) confirmed.set(s.name, s.at);
  return [...confirmed].map(([name, at]) => ({ name, at }));
}

/** `error` with a hint naming the tunable parameters that clash with a header, where that is confirmed as the cause. */
export async function withDefineClashHint(
  error: CompileError,
  program: Program | ProgramInit,
  compileAgain: CompileAgain,
  readFile?: (file: string) => string | undefined,
): Promise<CompileError> {
  const clashes = await confirmedDefineClashes(error, program, compileAgain, readFile);
  if (clashes.length === 0) return error;
  const many = clashes.length > 1;
  const names = clashes.map((c) => `'${c.name}'`).join(', ');
  const hint =
    `\nThe tunable parameter${many ? 's' : ''} ${names} ${many ? 'are' : 'is'} also a name in a header (${clashes[0]!.at}): parameters are ` +
    `#defines, so rename ${many ? 'them' : 'it'} to something no header uses (e.g. '${clashes[0]!.name}_value').`;
  return new CompileError(error.message + hint, {
    code: error.code,
    explanation: error.explanation,
    log: error.log,
    diagnostics: error.diagnostics,
    ...(error.call !== undefined && { call: error.call }),
    ...(error.details && { details: error.details }),
  });
}
