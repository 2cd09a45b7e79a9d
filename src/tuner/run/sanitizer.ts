// What compute-sanitizer said of a configuration (TunableKernel.sanitize), as plain data: it goes into a tuning result,
// the event stream, the LLM's retry prompt, the panel and the report (no process or GPU here: the webview reads it).
//
// A finding names the user's code: the file as the tuner compiled it (every file it compiles starts with a `#line 1`
// naming it and keeps its lines where they were, so compute-sanitizer's line is the file's) and that line's text.

import type { SanitizerFinding, SanitizerTool } from '../../gpu/sanitizer/report';
import type { SanitizerIdentity } from '../../gpu/sanitizer/sanitize';
import type { Config, Dim3 } from '../types';

/** A line of the user's code: its file, its number (1-based) and its text. */
export interface SourceLine {
  file: string;
  line: number;
  text: string;
}

/** A finding and where it happened in the user's files (the kernel's file, its local headers). */
export interface LocatedFinding extends SanitizerFinding {
  /** The innermost of its frames that is in the user's files. */
  at?: SourceLine;
  /** A race: the line of each access, in the order of `accesses`. */
  accessesAt?: (SourceLine | null)[];
}

/** The launch that was checked: its geometry, and the scalar arguments made smaller than the test's (by name). */
export interface SanitizedLaunch {
  grid: Dim3;
  block: Dim3;
  reduced: Record<string, { from: number; to: number }>;
}

interface Ran {
  config: Config;
  launch: SanitizedLaunch;
  sanitizer: SanitizerIdentity;
  /** Milliseconds of each tool's runs. */
  toolMs: Partial<Record<SanitizerTool, number>>;
  /** Milliseconds of the whole check: compiles with line information, every tool, a confirmation. */
  elapsedMs: number;
  /** How a finding on a reduced problem was confirmed, or why it was set aside. */
  note?: string;
}

export type SanitizerVerdict =
  | ({ status: 'clean'; tools: SanitizerTool[] } & Ran)
  | ({ status: 'hazards'; findings: LocatedFinding[]; tools: SanitizerTool[] } & Ran)
  /** `no-backend`: a backend that runs no kernel (a replay from a cache). */
  | { status: 'unavailable'; config: Config; reason: 'not-found' | 'failed' | 'launch-failed' | 'no-backend'; message: string; elapsedMs: number }
  /** `unconfirmed`: what a reduced problem reported, when its confirmation on the test's own problem ran out of time. */
  | ({ status: 'timed_out'; tool: SanitizerTool; limitMs: number; clean: SanitizerTool[]; unconfirmed?: LocatedFinding[] } & Ran);

const MAX_TEXT = 120;

function basename(file: string): string {
  return file.slice(Math.max(file.lastIndexOf('/'), file.lastIndexOf('\\')) + 1);
}

/** "shift.cu:7 (`c[i] = a[i + 1];`)", or the function where the kernel had no line information. */
function where(at: SourceLine | null | undefined, frame: SanitizerFinding['frames'][number] | undefined): string {
  if (at) {
    const text = at.text.trim();
    const quoted = text === '' ? '' : ` (\`${text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text}\`)`;
    return `${basename(at.file)}:${at.line}${quoted}`;
  }
  if (frame?.file) return `${basename(frame.file)}:${frame.line}`;
  return frame?.function ? `${frame.function} (compiled without line information)` : 'an unknown place';
}

/** One finding in one line: the tool, what, where in the user's code (with the line's text), who. */
export function describeFinding(f: LocatedFinding): string {
  const warning = f.severity === 'warning' ? ' (reported as a warning: still a data race)' : '';
  if (f.kind === 'race' && f.accesses) {
    const [first, ...others] = f.accesses;
    const sides = others.map((a, i) => `a ${a.access.toLowerCase()} at ${where(f.accessesAt?.[i + 1], a.frame)}${a.hazards !== undefined ? ` (${a.hazards} hazards)` : ''}`);
    return `racecheck: a race between a ${first!.access.toLowerCase()} at ${where(f.accessesAt?.[0], first!.frame)} and ${sides.join(' and ')}, with no barrier between them${warning}`;
  }
  const who = f.thread ? ` by thread ${f.thread}${f.block ? ` in block ${f.block}` : ''}` : '';
  const more = f.occurrences > 1 ? ` and ${f.occurrences - 1} more like it` : '';
  const details = f.details.length > 0 ? `: ${f.details.join('; ')}` : '';
  return `${f.tool}: ${f.message} at ${where(f.at, f.frames[0])}${who}${more}${details}${warning}`;
}

/** The scalars made smaller, "n = 96 (the test's 4096)". */
export function describeReduction(launch: SanitizedLaunch): string {
  const reduced = Object.entries(launch.reduced).map(([name, r]) => `${name} = ${r.to} (the test's ${r.from})`);
  return `grid (${launch.grid.join(', ')}), block (${launch.block.join(', ')})${reduced.length > 0 ? `, ${reduced.join(', ')}` : ''}`;
}

/** The verdict in one line, without the findings themselves (the panel and the report list them below it). */
export function verdictSummary(v: SanitizerVerdict): string {
  if (v.status === 'unavailable') return `not checked with compute-sanitizer: ${v.message}`;
  const tool = `compute-sanitizer${v.sanitizer.version ? ` ${v.sanitizer.version}` : ''}`;
  const ran = `${describeReduction(v.launch)}; ${(v.elapsedMs / 1000).toFixed(1)} s`;
  const note = v.note ? `; ${v.note}` : '';
  switch (v.status) {
    case 'clean':
      return `${tool}: clean under ${v.tools.join(', ')} (${ran})${note}`;
    case 'hazards':
      return `${tool}: ${v.findings.length} finding${v.findings.length === 1 ? '' : 's'} (${ran})${note}`;
    case 'timed_out':
      return `${tool}: ${v.tool} ran out of time (${Number((v.limitMs / 1000).toFixed(1))} s for the whole check${v.clean.length > 0 ? `; clean under ${v.clean.join(', ')} before it` : ''}), so it is not fully checked${v.unconfirmed ? `; a reduced problem reported ${v.unconfirmed.length} finding(s), not confirmed on the test's own problem` : ''}`;
  }
}

/** The verdict in one line, the first finding included: for a log and the command line. */
export function describeVerdict(v: SanitizerVerdict): string {
  return v.status === 'hazards' ? `${verdictSummary(v)}; first: ${describeFinding(v.findings[0]!)}` : verdictSummary(v);
}

/** The findings a verdict shows: those that stand, or those a confirmation ran out of time on. */
export function shownFindings(v: SanitizerVerdict): readonly LocatedFinding[] {
  return v.status === 'hazards' ? v.findings : v.status === 'timed_out' ? (v.unconfirmed ?? []) : [];
}

/**
 * The findings with their lines in the user's files: `textOf(file)` is the text of a file the tuner compiled (the
 * kernel's file, its local headers), undefined for any other (the toolkit's headers).
 */
export function locateFindings(findings: readonly SanitizerFinding[], textOf: (file: string) => string | undefined): LocatedFinding[] {
  const lines = new Map<string, string[] | undefined>();
  const lineOf = (frame: SanitizerFinding['frames'][number]): SourceLine | undefined => {
    if (frame.file === undefined || frame.line === undefined) return undefined;
    if (!lines.has(frame.file)) lines.set(frame.file, textOf(frame.file)?.split(/\r?\n/));
    const text = lines.get(frame.file)?.[frame.line - 1];
    return text === undefined ? undefined : { file: frame.file, line: frame.line, text };
  };
  return findings.map((f) => {
    const at = f.frames.map(lineOf).find((l) => l !== undefined);
    const accessesAt = f.accesses?.map((a) => lineOf(a.frame) ?? null);
    return { ...f, ...(at && { at }), ...(accessesAt && { accessesAt }) };
  });
}

/** The first findings, one line each (the retry prompt, the panel, the report). */
export function findingLines(findings: readonly LocatedFinding[], max = 5): string[] {
  const lines = findings.slice(0, max).map(describeFinding);
  return findings.length > max ? [...lines, `… and ${findings.length - max} more`] : lines;
}
