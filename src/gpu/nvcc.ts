// The nvcc backend: `nvcc -cubin -arch=sm_XY -Xptxas -v` in a temporary directory.
//
// Name expressions: nvcc has no nvrtcAddNameExpression, so the same effect is had by appending, after the source, one
// line per expression that takes the kernel's address (`(void*)&matmul<float, 16>`): this instantiates a templated
// kernel exactly like NVRTC does. The lowered names are then read from ptxas's "Compiling entry function '_Z...'"
// lines, demangled (cu++filt, else binutils' c++filt) and matched to the expressions by their normalized spelling
// (whitespace and integer-literal suffixes do not matter, so "f<float, 16>" matches "f<float, 16u>"); a plain name
// matches by its (qualified) name. Resources come from the same ptxas report: registers, barriers, static shared
// memory, constant bank 0, stack frame (local memory) and spill stores/loads.

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseDiagnostics, summarizeLog, type CompileDiagnostic } from './diagnostics';
import { CompileError, CudaUnavailableError, argumentError, compileFailure } from './errors';
import { Program, type ProgramInit } from './program';
import { findExecutable, isExecutable, pathDirs, runTool, type ToolRun } from './run-tool';
import { findNvcc } from './toolkit';
import type { CompiledProgram, CompileOptions, Compiler, KernelResources } from './types';

export interface NvccCompilerOptions {
  /** nvcc to use; default: the CUDA toolkit's (see toolkit.ts), else the first on PATH. */
  nvccPath?: string;
  /** Target when the program names none; default "sm_90" (pass the device's own, as selectCompiler does with a Gpu). */
  defaultArch?: string;
  /** Where the temporary directories go; default os.tmpdir(). */
  tempDir?: string;
  /** Time limit of one compile (ms); default 120 000. */
  timeoutMs?: number;
}

/** Label of the appended name-expression lines in diagnostics: line N is nameExpressions[N-1]. */
const ANCHOR_FILE = '<name expressions>';
const CUBIN = 'program.cubin';
/** In-memory headers are written under this directory of the compile's temporary directory, searched first. */
const HEADER_DIR = 'headers';
/** How a compile's tools are named in a timeout or an abort. */
const NVCC_RUN: Pick<ToolRun, 'tool' | 'method' | 'timeoutAdvice'> = {
  tool: 'nvcc',
  method: 'compile',
  timeoutAdvice: 'The compile was stopped; simplify the program (template recursion, huge unrolls) or raise timeoutMs.',
};

// ---------------------------------------------------------------------------------------------------------------------
// ptxas -v report

/** Resources per entry function (lowered name), from `-Xptxas -v` output, in report order. */
export function parsePtxasInfo(log: string): Map<string, KernelResources> {
  const entries = new Map<string, KernelResources>();
  const frames = new Map<string, { localBytes: number; spillStoreBytes: number; spillLoadBytes: number }>();
  let entry: string | null = null;
  let propertiesOf: string | null = null;
  for (const line of log.split(/\r?\n/)) {
    let m = /Compiling entry function '([^']+)'/.exec(line);
    if (m) {
      entry = m[1]!;
      entries.set(entry, { registers: 0, sharedBytes: 0, localBytes: 0, spillStoreBytes: 0, spillLoadBytes: 0, constantBytes: 0, barriers: 0 });
      continue;
    }
    m = /Function properties for (\S+)/.exec(line);
    if (m) {
      propertiesOf = m[1]!;
      continue;
    }
    m = /(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (m && propertiesOf) {
      frames.set(propertiesOf, { localBytes: Number(m[1]), spillStoreBytes: Number(m[2]), spillLoadBytes: Number(m[3]) });
      continue;
    }
    const r = entry ? entries.get(entry) : undefined;
    m = /Used (\d+) registers/.exec(line);
    if (m && r) {
      r.registers = Number(m[1]);
      r.barriers = Number(/used (\d+) barriers/.exec(line)?.[1] ?? 0);
      r.sharedBytes = Number(/(\d+) bytes smem/.exec(line)?.[1] ?? 0);
      r.constantBytes = Number(/(\d+) bytes cmem\[0\]/.exec(line)?.[1] ?? 0);
    }
  }
  for (const [name, r] of entries) Object.assign(r, frames.get(name));
  return entries;
}

// ---------------------------------------------------------------------------------------------------------------------
// Name expressions → lowered names

/** The function name with template arguments of a demangled signature: "void ns::f<float, 16u>(float*, int)" → "ns::f<float, 16u>". */
export function demangledName(demangled: string): string {
  let depth = 0;
  let end = demangled.length;
  let start = 0;
  for (let i = 0; i < demangled.length; i++) {
    const c = demangled[i];
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (depth === 0 && c === '(' && i > 0) {
      end = i;
      break;
    } else if (depth === 0 && c === ' ') start = i + 1;
  }
  return demangled.slice(start, end);
}

/** Spelling-insensitive form of a name: no whitespace, no leading ::, integer literals without suffixes or casts. */
export function canonicalName(name: string): string {
  return name
    .replace(/\s+/g, '')
    .replace(/^::/, '')
    .replace(/\((?:unsigned|signed|int|long|short|char)+\)(-?\d+)/g, '$1')
    .replace(/\(bool\)1/g, 'true')
    .replace(/\(bool\)0/g, 'false')
    .replace(/\b(\d+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)\b/g, '$1');
}

/** The expression with each define's name replaced by its value (as the preprocessor would, a few levels deep). */
export function expandDefines(expression: string, defines: Readonly<Record<string, string | number>>): string {
  let out = expression;
  for (let level = 0; level < 8; level++) {
    const next = out.replace(/\b[A-Za-z_]\w*\b/g, (word) => (Object.hasOwn(defines, word) ? String(defines[word]) : word));
    if (next === out) break;
    out = next;
  }
  return out;
}

function withoutTemplateArgs(name: string): string {
  const i = name.indexOf('<');
  return i < 0 ? name : name.slice(0, i);
}

/** `_Z<len><name><params>` → name, for plain (non-nested, non-template) C++ names when no demangler is installed. */
function demangleSimple(mangled: string): string {
  const m = /^_Z(\d+)/.exec(mangled);
  if (!m) return mangled;
  const name = mangled.slice(m[0].length, m[0].length + Number(m[1]));
  return mangled[m[0].length + Number(m[1])] === 'I' ? mangled : name;
}

/**
 * Maps each name expression to one lowered name of `demangled` (lowered → demangled), or explains why it cannot.
 * Exact normalized match first; then, for a plain name, the entry of that name; then the only entry of that template.
 */
export function matchNameExpressions(
  expressions: readonly string[],
  demangled: ReadonlyMap<string, string>,
  log = '',
): Record<string, string> {
  const entries = [...demangled].map(([lowered, d]) => ({ lowered, name: canonicalName(demangledName(d)) }));
  const out: Record<string, string> = {};
  for (const expr of expressions) {
    const canon = canonicalName(expr);
    let found = entries.filter((e) => e.name === canon);
    if (found.length === 0 && !canon.includes('<')) found = entries.filter((e) => withoutTemplateArgs(e.name) === canon);
    if (found.length === 0) found = entries.filter((e) => withoutTemplateArgs(e.name) === withoutTemplateArgs(canon));
    if (found.length !== 1) {
      const list = [...demangled.values()].join(', ') || 'none';
      throw new CompileError(
        `Name expression ${JSON.stringify(expr)} ${found.length === 0 ? 'matches no kernel' : 'is ambiguous'} (kernels compiled: ${list})`,
        {
          code: 'NAME_EXPRESSION_UNRESOLVED',
          call: 'nvcc',
          log,
          diagnostics: [],
          explanation: 'Spell the name expression as the kernel is declared (namespace, template arguments), e.g. "ns::kernel<float, 16>".',
        },
      );
    }
    out[expr] = found[0]!.lowered;
  }
  return out;
}

/**
 * Writes in-memory headers as files nvcc finds first, and returns the directory to put first on its include path.
 * "../common.h" is a header one level above the including file: the directory is nested deep enough for every "..".
 */
async function writeHeaders(root: string, headers: Readonly<Record<string, string>>): Promise<string> {
  const names = Object.keys(headers);
  const depth = Math.max(0, ...names.map((n) => /^(\.\.\/)*/.exec(n.replace(/\\/g, '/'))![0].length / 3));
  const base = path.join(root, ...Array.from({ length: depth }, (_, i) => `up${i}`));
  for (const name of names) {
    const file = path.resolve(base, name);
    if (path.isAbsolute(name) || !file.startsWith(root + path.sep)) throw argumentError('headers', 'relative include names (nvcc)', name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, headers[name]!);
  }
  return base;
}

// ---------------------------------------------------------------------------------------------------------------------

export class NvccCompiler implements Compiler {
  readonly backend = 'nvcc' as const;
  private readonly options: NvccCompilerOptions;
  private readonly defaultArch: string;
  private readonly timeoutMs: number;
  private tools: Promise<{ nvcc: string; demangler: string | null }> | null = null;

  constructor(options: NvccCompilerOptions = {}) {
    this.options = options;
    this.defaultArch = options.defaultArch ?? 'sm_90';
    if (!/^sm_\d{2,3}[af]?$/.test(this.defaultArch)) throw argumentError('defaultArch', 'a target such as "sm_90"', this.defaultArch);
    this.timeoutMs = options.timeoutMs ?? 120_000;
  }

  /** The nvcc that would be used, or null. */
  static find(options: Pick<NvccCompilerOptions, 'nvccPath'> = {}): Promise<string | null> {
    if (options.nvccPath !== undefined) return isExecutable(options.nvccPath).then((ok) => (ok ? options.nvccPath! : null));
    return Promise.resolve(findNvcc());
  }

  static async available(options: Pick<NvccCompilerOptions, 'nvccPath'> = {}): Promise<boolean> {
    return (await NvccCompiler.find(options)) !== null;
  }

  private resolveTools(): Promise<{ nvcc: string; demangler: string | null }> {
    this.tools ??= (async () => {
      const nvcc = await NvccCompiler.find(this.options);
      if (!nvcc)
        throw new CudaUnavailableError(
          'nvcc was not found (looked at nvccPath, $CUDA_HOME, $CUDA_PATH, PATH and the usual install locations)',
          { code: 'NVCC_NOT_FOUND', explanation: 'Install the CUDA toolkit (cuda-nvcc) or pass nvccPath.' },
        );
      const demangler =
        (await findExecutable('cu++filt', [path.dirname(nvcc), ...pathDirs()])) ?? (await findExecutable('c++filt', pathDirs()));
      return { nvcc, demangler };
    })();
    this.tools.catch(() => {
      this.tools = null; // try again next time (nvcc may be installed meanwhile)
    });
    return this.tools;
  }

  async compile(program: Program | ProgramInit, options: CompileOptions = {}): Promise<CompiledProgram> {
    const p = Program.from(program);
    const arch = p.arch ?? this.defaultArch;
    const { nvcc, demangler } = await this.resolveTools();
    const dir = await mkdtemp(path.join(this.options.tempDir ?? tmpdir(), 'lkt-nvcc-'));
    try {
      const anchors = p.nameExpressions.map((e, i) => `static void* const __lkt_name_expression_${i} __attribute__((unused)) = (void*)&${e};`);
      await writeFile(path.join(dir, p.fileName), `${p.source}\n#line 1 "${ANCHOR_FILE}"\n${anchors.join('\n')}\n`);
      const headerDir = await writeHeaders(path.join(dir, HEADER_DIR), p.headers);
      const args = [
        '-cubin',
        `-arch=${arch}`,
        '-x',
        'cu',
        '-Xptxas',
        '-v',
        ...p.defineOptions(),
        ...(Object.keys(p.headers).length > 0 ? [`-I${headerDir}`] : []),
        ...p.includePaths.map((i) => `-I${path.resolve(i)}`),
        ...p.options,
        ...(p.wantPtx ? ['-keep'] : []),
        '-o',
        CUBIN,
        p.fileName,
      ];
      const start = performance.now();
      const run = await runTool(nvcc, args, { ...NVCC_RUN, cwd: dir, timeoutMs: options.timeoutMs ?? this.timeoutMs, ...(options.signal && { signal: options.signal }) });
      const durationMs = performance.now() - start;
      const log = run.output;
      if (run.code !== 0) throw this.compileError(p, log, run.code);

      const entries = parsePtxasInfo(log);
      const lowered = [...entries.keys()];
      const demangled = await this.demangle(lowered, demangler);
      // A name expression may name the defines ("k<block_size_x>"): NVRTC expands them, and so does the appended anchor.
      const expanded = p.nameExpressions.map((e) => expandDefines(e, p.defines));
      const byExpanded = matchNameExpressions(expanded, demangled, log);
      const loweredNames = Object.fromEntries(p.nameExpressions.map((e, i) => [e, byExpanded[expanded[i]!]!]));
      const resources: Record<string, KernelResources> = {};
      for (const [expr, name] of Object.entries(loweredNames)) resources[expr] = entries.get(name)!;

      const compiled: CompiledProgram = {
        cubin: await readFile(path.join(dir, CUBIN)),
        log,
        loweredNames,
        backend: 'nvcc',
        arch,
        durationMs,
        resources,
      };
      if (p.wantPtx) {
        const ptxFile = (await readdir(dir)).find((f) => f.endsWith('.ptx'));
        if (ptxFile) compiled.ptx = await readFile(path.join(dir, ptxFile), 'utf8');
      }
      return compiled;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private compileError(p: Program, log: string, code: number | null): CompileError {
    const diagnostics: CompileDiagnostic[] = parseDiagnostics(log).map((d) =>
      d.file === ANCHOR_FILE ? { ...d, message: `name expression ${JSON.stringify(p.nameExpressions[d.line - 1] ?? '?')}: ${d.message}` } : d,
    );
    return compileFailure(`Compilation of ${p.fileName} failed (nvcc, exit code ${code}): ${summarizeLog(log, diagnostics)}`, {
      code: 'NVCC_COMPILATION_FAILED',
      call: 'nvcc',
      log,
      diagnostics,
      explanation: 'The CUDA source did not compile; see the diagnostics (file, line) and the full log.',
      details: { backend: 'nvcc' },
    });
  }

  /** lowered → demangled, through cu++filt/c++filt when present (extern "C" names come back unchanged). */
  private async demangle(names: readonly string[], demangler: string | null): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (names.length === 0) return out;
    if (demangler) {
      const run = await runTool(demangler, names, { ...NVCC_RUN, cwd: tmpdir(), timeoutMs: 10_000 });
      const lines = run.output.split(/\r?\n/);
      if (run.code === 0 && lines.length >= names.length) {
        names.forEach((n, i) => out.set(n, lines[i]!.trim()));
        return out;
      }
    }
    for (const n of names) out.set(n, demangleSimple(n));
    return out;
  }
}
