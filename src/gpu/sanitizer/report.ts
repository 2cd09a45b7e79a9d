// compute-sanitizer's text report read into findings. Every line of the tool starts with its prefix ("========="); a
// report starts on a line with one space after the prefix and goes on over the more indented lines below it:
//
//   ========= Invalid __global__ read of size 4 bytes
//   =========     at shift_read(float *, const float *, int)+0x90 in /work/shift.cu:7
//   =========     by thread (31,0,0) in block (3,0,0)
//   =========     Address 0x7f4c2e000200 is out of bounds
//   =========     and is 1 bytes after the nearest allocation at 0x7f4c2e000000 of size 512 bytes
//   =========     Saved host backtrace up to driver entry point at kernel launch time
//   =========         Host Frame: ...
//   ...
//   ========= ERROR SUMMARY: 1 error
//
// racecheck's analysis names both sides of a race ("Error: Race reported between Write access at ... in f.cu:14" /
// "and Read access at ... in f.cu:15 [4096 hazards]"), synccheck a barrier ("Barrier error detected. Divergent
// thread(s) in block", with the device frames of inlined calls), initcheck a read of memory never written
// ("Uninitialized __global__ memory read of size 4 bytes"). Older releases wrote a location as "0x148 in f.cu:3:fn".
// Pure: no process, no file.

export const SANITIZER_TOOLS = ['memcheck', 'racecheck', 'synccheck', 'initcheck'] as const;
export type SanitizerTool = (typeof SANITIZER_TOOLS)[number];

/** What a finding is about, by the report's headline. */
export type FindingKind = 'out_of_bounds' | 'misaligned' | 'invalid_access' | 'uninitialized' | 'race' | 'barrier' | 'fault' | 'other';

/** A place in the code: the function, and the file and line where the kernel was compiled with line information. */
export interface SanitizerFrame {
  function?: string;
  file?: string;
  line?: number;
}

/** One side of a race: the access ("Write", "Read", "Atomic") and where; the hazards counted against the first side. */
export interface RaceAccess {
  access: string;
  frame: SanitizerFrame;
  hazards?: number;
}

export interface SanitizerFinding {
  tool: SanitizerTool;
  kind: FindingKind;
  /** racecheck's warnings (a race inside a warp, among others) are hazards as well: the memory model makes no exception. */
  severity: 'error' | 'warning';
  /** The report's first line as the tool wrote it, without its severity ("Invalid __global__ read of size 4 bytes"). */
  message: string;
  /** Where it happened, innermost first: the frame it was reported at, then the device frames of the calls it was inlined into. */
  frames: SanitizerFrame[];
  /** A race: the access reported first, then each access that races with it. */
  accesses?: RaceAccess[];
  /** The first thread and block it was reported for, "(31,0,0)". */
  thread?: string;
  block?: string;
  /** The report's other lines ("Address 0x... is out of bounds", "and is 1 bytes after the nearest allocation ..."). */
  details: string[];
  /** Reports of the same finding at the same place (one per thread for memcheck). */
  occurrences: number;
}

export interface ParsedSanitizerReport {
  /** Distinct findings in the order the tool reported them. */
  findings: SanitizerFinding[];
  /** The count of the tool's summary line (ERROR SUMMARY, RACECHECK SUMMARY); undefined when it wrote none (it did not finish). */
  reported?: number;
  /** Reports of CUDA API calls that failed ("Program hit ..."): the launching process's, not the kernel's. */
  apiErrors: number;
  /** The tool's own messages that are no finding (why it could not run, for one). */
  notes: string[];
}

const PREFIX = /^={8,}(.*)$/;
const HAZARDS = /\s*\[(\d[\d,]*) hazards?\]\s*$/;

function count(text: string): number {
  return Number(text.replace(/,/g, ''));
}

/** A location as the report writes it: "fn(args)+0x90 in /f.cu:7", "fn(args)+0x90", or the older "0x90 in f.cu:7:fn(args)". */
export function parseFrame(text: string): SanitizerFrame {
  const t = text.trim();
  let m = /^(.*?)\+0x[0-9a-fA-F]+ in (.+):(\d+)$/.exec(t);
  if (m) return { function: m[1]!.trim(), file: m[2]!, line: Number(m[3]) };
  m = /^0x[0-9a-fA-F]+ in (.+?):(\d+):(.+)$/.exec(t);
  if (m) return { function: m[3]!.trim(), file: m[1]!, line: Number(m[2]) };
  m = /^(.*?)\+0x[0-9a-fA-F]+$/.exec(t) ?? /^0x[0-9a-fA-F]+ in (.+)$/.exec(t);
  return { function: (m ? m[1]! : t).trim() };
}

/** The kind of a memcheck, initcheck or synccheck report by its headline and details; undefined when it is none. */
function kindOf(headline: string, details: readonly string[]): FindingKind | undefined {
  if (/^Uninitialized __\w+__ memory read/.test(headline)) return 'uninitialized';
  if (/^Barrier error/.test(headline)) return 'barrier';
  if (/^Invalid __\w+__ (read|write|atomic)/.test(headline)) {
    if (details.some((d) => / is out of bounds/.test(d))) return 'out_of_bounds';
    if (details.some((d) => / is misaligned/.test(d))) return 'misaligned';
    return 'invalid_access';
  }
  if (/^Out-of-range/i.test(headline)) return 'out_of_bounds';
  if (/^Misaligned/i.test(headline)) return 'misaligned';
  if (/illegal|exception|trap|assert/i.test(headline)) return 'fault';
  return undefined;
}

interface Block {
  headline: string;
  lines: string[];
}

/** The prefixed lines grouped into reports: a headline and the indented lines under it. */
function blocks(output: string): Block[] {
  const out: Block[] = [];
  let current: Block | undefined;
  for (const raw of output.split(/\r?\n/)) {
    const m = PREFIX.exec(raw);
    if (!m) continue; // the application's own output
    const rest = m[1]!;
    if (rest.trim() === '') {
      current = undefined;
    } else if (/^\s{2,}\S/.test(rest) && current) {
      current.lines.push(rest.trim());
    } else {
      current = { headline: rest.trim(), lines: [] };
      out.push(current);
    }
  }
  return out;
}

/** A race of racecheck's analysis: its sides, from the headline and the lines under it (a location may wrap). */
function raceOf(block: Block): Pick<SanitizerFinding, 'accesses' | 'frames'> | undefined {
  const text = [block.headline, ...block.lines.filter((l) => !/^(Saved host backtrace|Host Frame)/.test(l))].join(' ').replace(/\s+/g, ' ');
  const m = /Race reported between (\w+) access at (.*)$/.exec(text);
  if (!m) return undefined;
  const parts = m[2]!.split(/ and (\w+) access at /);
  const accesses: RaceAccess[] = [];
  for (let i = 0; i < parts.length; i += 2) {
    const access = i === 0 ? m[1]! : parts[i - 1]!;
    const hazards = HAZARDS.exec(parts[i]!);
    const side: RaceAccess = { access, frame: parseFrame(parts[i]!.replace(HAZARDS, '')), ...(hazards && { hazards: count(hazards[1]!) }) };
    // racecheck lists the other side once per instance (a warp, an address): the same access at the same place is one
    // side, its hazards summed.
    const same = i === 0 ? undefined : accesses.slice(1).find((a) => a.access === side.access && place(a.frame) === place(side.frame));
    if (!same) accesses.push(side);
    else if (side.hazards !== undefined) same.hazards = (same.hazards ?? 0) + side.hazards;
  }
  return { accesses, frames: [accesses[0]!.frame] };
}

function findingOf(tool: SanitizerTool, block: Block): SanitizerFinding | undefined {
  const severity = /^(warn|warning)\b/i.test(block.headline) ? 'warning' : 'error';
  const headline = block.headline.replace(/^(error|warn|warning)(\s*\([^)]*\))?\s*:\s*/i, '');
  const race = raceOf(block);
  if (race) {
    const sides = race.accesses!.map((a) => a.access);
    return { tool, kind: 'race', severity, message: `Race reported between ${sides[0]} access and ${sides.slice(1).join(' / ')} access`, ...race, details: [], occurrences: 1 };
  }
  const frames: SanitizerFrame[] = [];
  const details: string[] = [];
  let thread: string | undefined;
  let inBlock: string | undefined;
  for (const line of block.lines) {
    let m: RegExpExecArray | null;
    if ((m = /^at (.+)$/.exec(line)) || (m = /^Device Frame:\s*(.+)$/.exec(line))) frames.push(parseFrame(m[1]!));
    else if ((m = /^by thread \(([^)]*)\) in block \(([^)]*)\)/.exec(line))) [thread, inBlock] = [`(${m[1]})`, `(${m[2]})`];
    else if (!/^(Saved host backtrace|Host Frame)/.test(line)) details.push(line);
  }
  const kind = kindOf(headline, details) ?? (frames.length > 0 ? 'other' : undefined);
  if (!kind) return undefined;
  return { tool, kind, severity, message: headline, frames, ...(thread && { thread }), ...(inBlock && { block: inBlock }), details, occurrences: 1 };
}

const place = (f: SanitizerFrame | undefined): string => (f ? `${f.file ?? ''}:${f.line ?? ''}:${f.function ?? ''}` : '');

/** Reports of the same thing at the same place are one finding (memcheck reports each thread). */
function keyOf(f: SanitizerFinding): string {
  return [f.kind, f.message, place(f.frames[0]), ...(f.accesses ?? []).map((a) => `${a.access}@${place(a.frame)}`)].join('|');
}

/** The findings, summary count, API errors and messages of one tool's output. */
export function parseSanitizerOutput(tool: SanitizerTool, output: string): ParsedSanitizerReport {
  const byKey = new Map<string, SanitizerFinding>();
  const notes: string[] = [];
  let reported: number | undefined;
  let apiErrors = 0;
  for (const block of blocks(output)) {
    const summary = /^ERROR SUMMARY: ([\d,]+) errors?/.exec(block.headline);
    const raceSummary = /^RACECHECK SUMMARY: [\d,]+ hazards? displayed \(([\d,]+) errors?, ([\d,]+) warnings?\)/.exec(block.headline);
    if (summary) reported = count(summary[1]!);
    else if (raceSummary) reported = count(raceSummary[1]!) + count(raceSummary[2]!);
    else if (/^Program hit /.test(block.headline)) apiErrors++;
    else if (/^(COMPUTE-SANITIZER|LEAK SUMMARY)/.test(block.headline)) continue;
    else {
      const finding = findingOf(tool, block);
      if (!finding) {
        notes.push([block.headline, ...block.lines].join(' '));
        continue;
      }
      const key = keyOf(finding);
      const seen = byKey.get(key);
      if (seen) seen.occurrences++;
      else byKey.set(key, finding);
    }
  }
  return { findings: [...byKey.values()], ...(reported !== undefined && { reported }), apiErrors, notes };
}
