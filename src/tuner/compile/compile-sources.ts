/**
 * What the compilers get for a user's .cu file, exactly as it is: host code, main, <<<>>> launches, local headers,
 * the CUDA runtime's headers.
 *
 * Design. nvcc compiles such a file as it is (it separates host from device code itself), but it costs about a second
 * per configuration; NVRTC costs tens of milliseconds but takes device code only, without any system header. So every
 * file gets two programs:
 * - for NVRTC, the device unit: the file and the local headers it reaches (next to it, or on an include path) with
 *   their host code blanked character by character (main, host functions, host variables: see translation-unit.ts),
 *   handed to NVRTC as in-memory headers under the spelling of their #include; the CUDA toolkit's include directories
 *   on its include path (toolkit.ts finds them); system headers NVRTC lacks replaced by stand-ins (system-headers.ts);
 * - for nvcc, the file itself with the file's own directory and the include paths on its include path.
 * The tuner tries NVRTC first and falls back to nvcc with the same defines when NVRTC cannot take the file (see
 * chooseCompiler). Blanking keeps every line where it was and every file starts with a `#line 1 "<path>"`, so a
 * compiler's log names the user's files and lines, whichever program it compiled.
 *
 * Tunable parameters that the file already #defines (`#define BLOCK_SIZE 256`) are blanked in both programs, so the
 * tuner's -D value wins; the file's value is reported as the reference configuration's value.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CompileError } from '../../gpu/errors';
import type { CudaToolkit } from '../../gpu/toolkit';
import type { CompilerBackend } from '../../gpu/types';
import type { KernelProgram } from '../run/backend';
import { isDeviceUsableToolkitHeader, NVCC_IMPLICIT_PRELUDE, systemHeaderStandIn } from './system-headers';
import { blankRanges, hostCodeRanges, isHostOnly, outlineSource, type SourceOutline, type TopLevelItem } from '../source/translation-unit';
import { preprocess } from '../source/preprocessor';
import { findLocalHeader, isFile } from '../source/local-headers';

export interface CompileSourcesOptions {
  /** The file's absolute path, when it is on disk: its directory is searched for quoted includes. */
  filePath?: string;
  /** Name for diagnostics when there is no path (an unsaved editor buffer); default "kernel.cu". */
  fileName?: string;
  /** Directories searched for #include "..." after the file's own, and for #include <...> (like -I). */
  includePaths?: readonly string[];
  /** Tunable parameters: a #define of one of them in the file or its local headers gives way to the tuner's value. */
  tunableNames?: Iterable<string>;
  /** The CUDA toolkit whose headers NVRTC gets (null: none found, so toolkit headers cannot be resolved). */
  toolkit?: CudaToolkit | null;
  /** Reads a header; default the file system. An editor passes its unsaved buffers first. */
  readFile?: (absolutePath: string) => string | undefined;
}

export interface ProgramSources {
  source: string;
  /** In-memory headers: include spelling → text. */
  headers: Record<string, string>;
  includePaths: string[];
}

export interface CompileSources {
  /** The device unit for NVRTC, or why none could be made (then only nvcc can compile the file). */
  nvrtc: ProgramSources | { unavailable: string };
  /** The file as nvcc compiles it. */
  nvcc: ProgramSources;
  /** Values the file gives to tunable parameters (`#define NAME VALUE`), in the file's spelling. */
  fileValues: Record<string, string>;
  /** Local headers the file includes, directly or not (absolute paths). */
  localHeaders: string[];
  /** System headers NVRTC reads a stand-in for (and toolkit host-API headers reduced to their device part). */
  standIns: string[];
  /** Host code blanked for NVRTC, for the record: "main (line 105)", ... */
  blankedHost: string[];
}

function readFromDisk(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

const lineDirective = (file: string) => `#line 1 ${JSON.stringify(file)}\n`;

/** Builds the NVRTC and nvcc programs of a file (see the module comment). */
export async function compileSources(code: string, options: CompileSourcesOptions = {}): Promise<CompileSources> {
  return new SourcesBuilder(options).build(code);
}

interface ProcessedFile {
  /** Host code and tunable defines blanked, for NVRTC. */
  device: string;
  /** Only the tunable defines blanked, for nvcc; equal to the original when it has none. */
  whole: string;
  changedForNvcc: boolean;
}

class SourcesBuilder {
  private readonly tunables: Set<string>;
  private readonly includePaths: string[];
  private readonly toolkitDirs: string[];
  private readonly readFile: (file: string) => string | undefined;
  private readonly nvrtcHeaders = new Map<string, { file: string; text: string }>();
  private readonly nvccHeaders: Record<string, string> = {};
  private readonly fileValues: Record<string, string> = {};
  private readonly standIns = new Set<string>();
  private readonly blankedHost: string[] = [];
  private readonly visited = new Set<string>();
  private unavailable: string | undefined;
  /** Macros that stand for __device__ & co. anywhere in the file or its headers (`INLINE_FUNC` → `__device__ inline`). */
  private spaceMacros: ReadonlyMap<string, string> = new Map();
  /**
   * Each file as the preprocessor leaves it for every configuration (the open world of preprocessor.ts, kernel_tuner
   * defined): what is host code is read there, so that `__global__ void #if ... #endif k(...)` is the kernel it is.
   */
  private readonly views = new Map<string, string>();

  constructor(private readonly options: CompileSourcesOptions) {
    this.tunables = new Set(options.tunableNames ?? []);
    this.toolkitDirs = options.toolkit?.includeDirs.map((d) => path.resolve(d)) ?? [];
    // An include path that is the toolkit's own is the toolkit's business (its headers are not the user's to blank).
    this.includePaths = (options.includePaths ?? []).map((d) => path.resolve(d)).filter((d) => !this.toolkitDirs.includes(d));
    this.readFile = options.readFile ?? readFromDisk;
  }

  async build(code: string): Promise<CompileSources> {
    const filePath = this.options.filePath ? path.resolve(this.options.filePath) : undefined;
    const name = filePath ?? this.options.fileName ?? 'kernel.cu';
    if (filePath) this.visited.add(filePath);
    const unit = preprocess(code, name, { world: 'open', defines: { kernel_tuner: '1' }, includes: { ...(filePath && { filePath }), includePaths: this.includePaths, readFile: this.readFile } });
    this.spaceMacros = unit.spaceMacros;
    unit.files.forEach((f, i) => this.views.set(i === 0 ? name : f.path!, f.view));
    const main = await this.process(code, name, filePath ? path.dirname(filePath) : undefined);
    const userDirs = [...(filePath ? [path.dirname(filePath)] : []), ...this.includePaths];
    const nvrtc: CompileSources['nvrtc'] = this.unavailable
      ? { unavailable: this.unavailable }
      : {
          source: NVCC_IMPLICIT_PRELUDE + lineDirective(name) + main.device,
          headers: Object.fromEntries([...this.nvrtcHeaders].map(([spelling, h]) => [spelling, h.text])),
          includePaths: [...this.toolkitDirs, ...userDirs],
        };
    return {
      nvrtc,
      nvcc: { source: lineDirective(name) + main.whole, headers: this.nvccHeaders, includePaths: userDirs },
      fileValues: this.fileValues,
      localHeaders: [...this.visited].filter((f) => f !== filePath),
      standIns: [...this.standIns],
      blankedHost: this.blankedHost,
    };
  }

  /** Blanks one file's host code (and tunable defines) and resolves its includes, recursively. */
  private async process(code: string, name: string, dir: string | undefined): Promise<ProcessedFile> {
    const view = this.views.get(name);
    const outline = await outlineSource(view?.length === code.length ? view : code, { spaceMacros: this.spaceMacros });
    const tunableDefines = this.tunableDefines(outline, code);
    const host = hostCodeRanges(outline.items);
    for (const item of outline.items.filter(isHostOnly)) this.blankedHost.push(describeItem(item, code, name));
    for (const item of outline.items) if (item.kind === 'include' && item.include) await this.resolveInclude(item.include, dir);
    const whole = blankRanges(code, tunableDefines);
    return { device: blankRanges(code, [...tunableDefines, ...host]), whole, changedForNvcc: tunableDefines.length > 0 };
  }

  /** `#define NAME ...` and `#undef NAME` of tunable parameters; the first definition's value is the file's value. */
  private tunableDefines(outline: SourceOutline, code: string): { start: number; end: number }[] {
    if (this.tunables.size === 0) return [];
    const ranges: { start: number; end: number }[] = [];
    for (const item of outline.items) {
      if (item.kind === 'define' && item.macro && this.tunables.has(item.macro.name) && !item.macro.functionLike) {
        this.fileValues[item.macro.name] ??= item.macro.value;
        ranges.push(item);
      } else if (item.kind === 'directive') {
        const m = /^\s*#\s*undef\s+([A-Za-z_]\w*)/.exec(code.slice(item.start, item.end));
        if (m && this.tunables.has(m[1]!)) ranges.push(item);
      }
    }
    return ranges;
  }

  private async resolveInclude(include: { spelling: string; system: boolean }, dir: string | undefined): Promise<void> {
    const { spelling } = include;
    const local = findLocalHeader(include, dir, this.includePaths, this.toolkitDirs);
    if (local) return this.addLocalHeader(spelling, local);
    if (this.toolkitDirs.some((t) => isFile(path.join(t, spelling)))) {
      if (!isDeviceUsableToolkitHeader(spelling)) this.addNvrtcHeader(spelling, '<toolkit>', this.toolkitStandIn(spelling));
      return;
    }
    const standIn = systemHeaderStandIn(spelling);
    if (standIn !== undefined) {
      this.addNvrtcHeader(spelling, '<system>', standIn);
      this.standIns.add(spelling);
    }
    // Unknown and not found: left for the compiler to report (an include path may be missing).
  }

  private async addLocalHeader(spelling: string, file: string): Promise<void> {
    if (this.visited.has(file)) {
      const known = this.nvrtcHeaders.get(spelling);
      if (!known) this.addNvrtcHeader(spelling, file, [...this.nvrtcHeaders.values()].find((h) => h.file === file)?.text ?? '');
      return;
    }
    this.visited.add(file);
    const text = this.readFile(file);
    if (text === undefined) return;
    const processed = await this.process(text, file, path.dirname(file));
    this.addNvrtcHeader(spelling, file, lineDirective(file) + processed.device);
    if (processed.changedForNvcc) {
      if (path.isAbsolute(spelling)) {
        this.unavailableForNvcc(file);
      } else {
        this.nvccHeaders[spelling] = lineDirective(file) + processed.whole;
      }
    }
  }

  /** Tunable defines in a header included by an absolute path cannot be overridden for nvcc: say so rather than ignore it. */
  private unavailableForNvcc(file: string): never {
    throw new Error(
      `${file} #defines a tunable parameter and is included by an absolute path, so the tuner cannot give nvcc a copy ` +
        'without that #define: include it by a relative path, or guard the #define with #ifndef',
    );
  }

  private addNvrtcHeader(spelling: string, file: string, text: string): void {
    const known = this.nvrtcHeaders.get(spelling);
    if (known && known.file !== file) {
      this.unavailable ??= `#include "${spelling}" names two different files (${known.file} and ${file}), which NVRTC's in-memory headers cannot tell apart`;
      return;
    }
    this.nvrtcHeaders.set(spelling, { file, text });
  }

  /** A host-API toolkit header for NVRTC: the device-usable toolkit headers it includes, directly or not. */
  private toolkitStandIn(spelling: string): string {
    this.standIns.add(spelling);
    const found: string[] = [];
    const seen = new Set<string>();
    const walk = (name: string, depth: number) => {
      if (seen.has(name) || depth > 8) return;
      seen.add(name);
      const dir = this.toolkitDirs.find((t) => isFile(path.join(t, name)));
      const text = dir ? readFromDisk(path.join(dir, name)) : undefined;
      if (!text) return;
      for (const m of text.matchAll(/^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]/gm)) {
        const inner = m[1]!;
        if (isDeviceUsableToolkitHeader(inner)) {
          if (!found.includes(inner)) found.push(inner);
        } else {
          walk(inner, depth + 1);
        }
      }
    };
    walk(spelling, 0);
    return `// llm-kernel-tuner: <${spelling}> is a host API; NVRTC gets the device headers it includes\n${found.map((h) => `#include <${h}>`).join('\n')}\n`;
  }
}

function describeItem(item: TopLevelItem, code: string, file: string): string {
  const line = code.slice(0, item.start).split('\n').length;
  return `${item.names[0] ?? item.kind} (${path.basename(file)}:${line})`;
}

/** The program for each compiler the backend has, NVRTC's first (it is the fast one), with why one is missing. */
export function candidatePrograms(sources: CompileSources, fileName: string, compilers: readonly CompilerBackend[]): { programs: KernelProgram[]; skipped?: string } {
  const programs: KernelProgram[] = [];
  let skipped: string | undefined;
  if (compilers.includes('nvrtc')) {
    if ('unavailable' in sources.nvrtc) skipped = sources.nvrtc.unavailable;
    else programs.push({ compiler: 'nvrtc', fileName, ...sources.nvrtc });
  }
  if (compilers.includes('nvcc')) programs.push({ compiler: 'nvcc', fileName, ...sources.nvcc });
  return { programs, ...(skipped && { skipped }) };
}

export interface ProgramChoice<T> {
  built: T;
  program: KernelProgram;
  /** Why the program is not NVRTC's, when NVRTC was there to try. */
  note?: string;
}

/**
 * Builds with NVRTC's program and, when NVRTC cannot compile it, with nvcc's (same defines); every later configuration
 * then uses the program that compiled. When none compiles, the CompileError carries nvcc's log (the compiler that
 * saw the file as it is) and NVRTC's after it.
 */
export async function buildWithFallback<T>(
  candidates: { programs: KernelProgram[]; skipped?: string },
  build: (program: KernelProgram) => Promise<T>,
): Promise<ProgramChoice<T>> {
  const failures: { program: KernelProgram; error: CompileError }[] = [];
  for (const program of candidates.programs) {
    try {
      const built = await build(program);
      const nvrtcFailure = failures.find((f) => f.program.compiler === 'nvrtc');
      const why = nvrtcFailure ? `NVRTC could not compile the device unit: ${firstError(nvrtcFailure.error)}` : candidates.skipped;
      return { built, program, ...(why && program.compiler === 'nvcc' && { note: `compiled with nvcc: ${why}` }) };
    } catch (e) {
      if (!(e instanceof CompileError)) throw e;
      failures.push({ program, error: e });
    }
  }
  const [first, ...others] = [...failures].reverse();
  if (!first) throw new Error('internal: no compiler to build with');
  const log = [first, ...others].map((f) => `--- ${f.program.compiler} ---\n${f.error.log}`).join('\n');
  const also = others.map((f) => ` (${f.program.compiler} failed too: ${firstError(f.error)})`).join('');
  throw new CompileError(`${first.error.message}${also}`, { code: first.error.code, explanation: first.error.explanation, log, diagnostics: first.error.diagnostics });
}

function firstError(e: CompileError): string {
  const d = e.diagnostics.find((x) => x.severity === 'error') ?? e.diagnostics[0];
  return d ? `${d.file}:${d.line}: ${d.message}` : e.message.split('\n')[0]!;
}
