/**
 * Pieces every prompt shares: who the model is asked to be, how kernels are shown, and the rules of the tuner that
 * every rewrite must follow (they are how Kernel Tuner launches and compiles a kernel, so a model that ignores them
 * produces kernels that cannot be tuned).
 */
import { basename } from 'node:path';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import type { DeviceDescription } from '../tuner/run/backend';
import { profileSourceText, type ConfigProfile } from '../tuner/run/profile';
import type { DeviceSpeedLimits, LaunchWork } from '../tuner/run/speed-of-light';
import type { ParamValue } from '../tuner/types';
import { engineContext } from './context';
import type { TuningStateValue } from './state';

export const SYSTEM_PROMPT = [
  'You are an expert in CUDA performance engineering. You analyse and optimize CUDA kernels that are tuned automatically:',
  'every kernel you write is compiled, checked for correct results against the original kernel and timed on a real GPU.',
  'Be precise. When asked for JSON, answer with JSON only.',
].join(' ');

/**
 * A kernel as the model sees it: its device unit (the kernel and the device code of its file it uses: see
 * src/tuner/source/device-unit.ts), and the device code it uses from the user's headers, which is context, not to be
 * changed.
 */
export interface KernelView {
  code: string;
  context: readonly { file: string; text: string }[];
}

/** The kernel in a ```cuda block, then each header's code it uses in its own block, marked read-only. */
export function kernelBlock(kernel: string | KernelView): string {
  const view = typeof kernel === 'string' ? { code: kernel, context: [] } : kernel;
  const fence = (code: string) => `\`\`\`cuda\n${code.trimEnd()}\n\`\`\``;
  return [
    fence(view.code),
    ...view.context.map((h) => `It uses this device code from ${basename(h.file)} (read-only: another file, which stays as it is; call it, do not copy or change it):\n${fence(h.text)}`),
  ].join('\n');
}

export function formatTuneParams(tuneParams: Record<string, readonly ParamValue[]>): string {
  const entries = Object.entries(tuneParams);
  return entries.length === 0 ? '(none)' : entries.map(([name, values]) => `${name} = [${values.join(', ')}]`).join('\n');
}

/** How a tunable kernel is compiled and launched: what the model must know to write one. */
export const TUNER_RULES = [
  'How the kernel is compiled and launched:',
  '- Every tunable parameter is injected as a preprocessor definition (`-Dname=value`): use the names directly, never #define them yourself. Give them distinctive names (tile_size_x, elements_per_thread): a common word such as mode or size would also replace that word inside the CUDA headers.',
  '- The thread block is (block_size_x, block_size_y, block_size_z): these three names are always defined. A block size must be one of these names; use it for compile-time sizes (shared memory arrays, loop bounds).',
  '- The grid is ceil(problem size / grid divisor) per dimension. The divisor defaults to the block size of that dimension; if each block handles more elements than it has threads, state the divisors (products of tunable parameter names).',
  '- The kernel name and its parameter list (names, types, order) must stay exactly as they are: the host code calls it.',
  '- Only device code may change: no host code, no compiler flags, no libraries beyond the CUDA runtime headers.',
  '- You see the kernel with the device code of its file it uses (the host program is not shown and stays as it is): return that code, rewritten. A helper you add goes into it; device code from other files is read-only.',
].join('\n');

/**
 * Headings of the parts of a prompt that state measurements: the GPU as the tuner measured it, and the current
 * kernel's profile. They differ from one GPU to the next, so a replay on another machine compares them by heading only
 * (withoutMeasurements). A measured part is its heading line and the `- ` lines that follow it.
 */
export const GPU_HEADING = 'The GPU, as the tuner measured it';
export const PROFILE_HEADING = 'Profile of the current kernel at its best configuration';
/** An evolutionary session's results so far (strategies/evolutionary/prompts.ts): times and outcomes of its variants. */
export const RESULTS_HEADING = 'Results of the variants so far';
/** The second parent's profile in a crossover request. */
export const SECOND_PROFILE_HEADING = 'Profile of the second parent at its best configuration';
const MEASURED_HEADINGS = [GPU_HEADING, PROFILE_HEADING, RESULTS_HEADING, SECOND_PROFILE_HEADING];

/** What the tuner measured that a prompt which plans or rewrites tells the model. */
export interface Measured {
  device: DeviceDescription;
  limits: DeviceSpeedLimits | null;
  /** The current kernel's time on the first test (null before the baseline), and the work of one launch there. */
  timeMs: number | null;
  work?: LaunchWork | undefined;
  profile: ConfigProfile | null;
}

/** The measurements of a session's current kernel on the run's device. */
export function measuredOf(state: TuningStateValue, config: LangGraphRunnableConfig): Measured {
  const ctx = engineContext(config);
  return { device: ctx.device, limits: ctx.speedLimits, timeMs: state.bestTimeMs, work: state.tests[0]?.work, profile: state.profile ?? null };
}

const sig = (v: number, digits = 3) => Number(v.toPrecision(digits)).toString();

function memory(bytes: number): string {
  const units: [number, string][] = [
    [1024 ** 3, 'GiB'],
    [1024 ** 2, 'MiB'],
    [1024, 'KiB'],
  ];
  const unit = units.find(([size]) => bytes >= size);
  return unit ? `${sig(bytes / unit[0])} ${unit[1]}` : `${bytes} B`;
}

/** A quantity with the largest SI prefix that keeps it at 1 or more: "12.6 MB", "2.1 MFLOP". */
function si(value: number, unit: string): string {
  const prefixes: [number, string][] = [
    [1e12, 'T'],
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ];
  const [scale, prefix] = prefixes.find(([p]) => value >= p) ?? [1, ''];
  return `${sig(value / scale)} ${prefix}${unit}`;
}

function duration(ms: number): string {
  if (ms >= 1) return `${sig(ms)} ms`;
  return ms >= 1e-3 ? `${sig(ms * 1e3)} µs` : `${sig(ms * 1e6)} ns`;
}

/** The current kernel's time against its speed of light: the longer of its bytes at the bandwidth and its flops at the FP32 peak. */
function speedOfLightLine(m: Measured): string {
  if (m.timeMs === null) return '- the current kernel has not been timed yet';
  const time = `- the current kernel takes ${duration(m.timeMs)} on the first test`;
  if (!m.work || !m.limits) return `${time} (no speed of light: ${m.limits ? 'the work of a launch is not known' : "the device's limits were not measured"})`;
  const memoryMs = (m.work.bytes / (m.limits.bandwidthGBps * 1e9)) * 1e3;
  const computeMs = m.work.flops !== undefined && m.limits.fp32GFlops ? (m.work.flops / (m.limits.fp32GFlops * 1e9)) * 1e3 : undefined;
  const bound = computeMs !== undefined && computeMs > memoryMs ? 'FP32' : 'memory';
  const lightMs = Math.max(memoryMs, computeMs ?? 0);
  const parts = [
    `${si(m.work.bytes, 'B')} moved at the measured bandwidth take ${duration(memoryMs)}`,
    computeMs === undefined ? 'its FLOP count is not known' : `${si(m.work.flops!, 'FLOP')} at the FP32 peak ${duration(computeMs)}`,
  ];
  return `${time}, ${sig((100 * lightMs) / m.timeMs, 2)}% of its speed of light (${duration(lightMs)}, ${bound}-bound: ${parts.join('; ')})`;
}

/** The GPU and the current kernel's time against its limits; then its profile, when there is one. */
export function measuredBlock(m: Measured): string {
  const d = m.device;
  const perBlockShared = d.maxSharedMemoryPerBlock === undefined ? '' : `, ${memory(d.maxSharedMemoryPerBlock)} shared memory${d.maxSharedMemoryPerBlockOptin && d.maxSharedMemoryPerBlockOptin > d.maxSharedMemoryPerBlock ? ` (${memory(d.maxSharedMemoryPerBlockOptin)} when the kernel opts in)` : ''}`;
  const lines = [
    `${GPU_HEADING}:`,
    `- ${d.name}: compute capability ${d.computeCapability.join('.')} (${d.arch}), ${d.multiprocessors} SMs, ${memory(d.l2CacheBytes)} L2 cache, ${memory(d.globalMemoryBytes)} device memory`,
    `- per SM: ${d.maxThreadsPerMultiprocessor} threads, ${d.maxRegistersPerMultiprocessor} registers, ${memory(d.maxSharedMemoryPerMultiprocessor)} shared memory; per block: ${d.maxThreadsPerBlock} threads, ${d.maxRegistersPerBlock} registers${perBlockShared}`,
    m.limits
      ? `- memory bandwidth ${sig(m.limits.bandwidthGBps)} GB/s (measured with a copy kernel, bytes read + written); FP32 peak ${m.limits.fp32GFlops ? m.limits.fp32Formula : 'unknown'}`
      : "- memory bandwidth and FP32 peak: not measured on this device",
    speedOfLightLine(m),
  ];
  if (m.profile) {
    lines.push(
      '',
      `${PROFILE_HEADING} ${JSON.stringify(m.profile.config)} (${profileSourceText(m.profile)}):`,
      ...m.profile.summary.map((l) => `- ${l}`),
    );
  }
  return lines.join('\n');
}

/** Each line of the text with whether it belongs to a measured part (a heading of MEASURED_HEADINGS, or a `- ` line after one). */
function linesByPart(text: string): { line: string; heading?: string; measured: boolean }[] {
  let inMeasured = false;
  return text.split('\n').map((line) => {
    const heading = MEASURED_HEADINGS.find((h) => line.startsWith(h));
    inMeasured = heading !== undefined || (inMeasured && line.startsWith('- '));
    return { line, ...(heading && { heading }), measured: inMeasured };
  });
}

/**
 * The text with every measured part (see GPU_HEADING) reduced to its heading: what a replay compares, so that the
 * recording of a session on one GPU serves a replay on another.
 */
export function withoutMeasurements(text: string): string {
  return linesByPart(text)
    .flatMap((l) => (l.heading ? [`${l.heading}: (measured)`] : l.measured ? [] : [l.line]))
    .join('\n');
}

/** The lines of the text's measured parts, headings included: what a request told the model of the GPU and the kernel. */
export function measuredLines(text: string): string[] {
  return linesByPart(text).flatMap((l) => (l.measured ? [l.line] : []));
}
