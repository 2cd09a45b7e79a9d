/**
 * Speed of light: how close a configuration comes to what the device can do. The work of one launch (bytes moved to and
 * from device memory, floating-point operations) over its time is its achieved bandwidth and FLOP/s; over the device's
 * limits, its percentage of each. Pure arithmetic; the bandwidth limit is measured on the device (gpu/bandwidth.ts).
 *
 * The FP32 limit is the formula of the CUDA C++ Programming Guide's throughput table:
 *   peak FLOP/s = multiprocessors x FP32 lanes per multiprocessor x 2 (a fused multiply-add is two operations) x clock
 * with 64 lanes per SM on compute capability 6.0, 7.x and 8.0, and 128 on 5.x, 6.1, 6.2, 8.6 to 8.9 and 9.0 onwards.
 * An H100 SXM (132 SMs at 1.98 GHz): 132 x 128 x 2 x 1.98e9 = 66.9 TFLOP/s.
 */
import { dtypeBytes } from '../../gpu/dtype';
import { compileExpression, evaluateNumber } from '../space/expressions';
import type { ResolvedTest } from '../spec/input-spec';

/** The device's limits as the report states them, with where each number came from. */
export interface DeviceSpeedLimits {
  /** Device memory bandwidth in GB/s (1e9 bytes per second), bytes read plus bytes written. */
  bandwidthGBps: number;
  /** How it was measured, in words, with the numbers behind it. */
  bandwidthMethod: string;
  /** The driver's device-to-device copy (cuMemcpyDtoD), GB/s counted the same way: the yardstick of the copy kernel. */
  memcpyGBps: number;
  /** FP32 GFLOP/s by the formula above; null when the clock or the architecture is unknown. */
  fp32GFlops: number | null;
  fp32Formula: string;
}

/** The work of one launch on a test. */
export interface LaunchWork {
  /** Bytes read from and written to device memory. */
  bytes: number;
  /** Floating-point operations; undefined when nothing says how many. */
  flops?: number;
  /** Where the numbers come from (the spec's expressions, the model's analysis, or the sizes of the buffers). */
  source: string;
}

export interface Achieved {
  GBps: number;
  /** Percent of the bandwidth limit, when the limits are known. */
  bandwidthPct?: number;
  GFlops?: number;
  flopsPct?: number;
}

/** FP32 lanes (results per clock) of one multiprocessor of this compute capability; null before Maxwell (5.0). */
export function fp32LanesPerSm([major, minor]: readonly [number, number]): number | null {
  if (major < 5) return null;
  if (major === 6 && minor === 0) return 64;
  if (major === 7) return 64;
  if (major === 8 && minor === 0) return 64;
  return 128;
}

/** Peak FP32 FLOP/s by the formula above, or null when the clock (kHz) or the lanes are unknown. */
export function fp32PeakFlops(device: { multiprocessors: number; clockRateKHz: number; computeCapability: readonly [number, number] }): { flops: number; formula: string } | null {
  const lanes = fp32LanesPerSm(device.computeCapability);
  if (lanes === null || !(device.clockRateKHz > 0) || !(device.multiprocessors > 0)) return null;
  const flops = device.multiprocessors * lanes * 2 * device.clockRateKHz * 1e3;
  const ghz = device.clockRateKHz / 1e6;
  return { flops, formula: `${device.multiprocessors} SMs x ${lanes} FP32 lanes x 2 (FMA) x ${Number(ghz.toFixed(3))} GHz = ${(flops / 1e12).toFixed(1)} TFLOP/s` };
}

/** Achieved bandwidth and FLOP/s of a launch of `timeMs`, and their share of the limits when known. */
export function achieved(timeMs: number, work: LaunchWork, limits?: DeviceSpeedLimits | null): Achieved {
  const seconds = timeMs * 1e-3;
  const GBps = work.bytes / seconds / 1e9;
  const out: Achieved = { GBps };
  if (limits) out.bandwidthPct = (100 * GBps) / limits.bandwidthGBps;
  if (work.flops !== undefined) {
    out.GFlops = work.flops / seconds / 1e9;
    if (limits?.fp32GFlops) out.flopsPct = (100 * out.GFlops) / limits.fp32GFlops;
  }
  return out;
}

/** A buffer of a test as the work model sees it. */
export interface WorkBuffer {
  bytes: number;
  output: boolean;
  /** An output the kernel also reads (it has initial contents). */
  inOut: boolean;
}

/**
 * The bytes a launch must move at least when nothing better is known: every input read once, every output written
 * once, an in/out buffer both.
 */
export function compulsoryBytes(buffers: readonly WorkBuffer[]): number {
  return buffers.reduce((sum, b) => sum + (b.output ? (b.inOut ? 2 : 1) : 1) * b.bytes, 0);
}

/** An expression of work (`flops:` / `bytes:` of a spec or an analysis) over the problem size and scalar arguments. */
export function evaluateWork(expression: string | number, scalars: Readonly<Record<string, number>>, what: string): number {
  if (typeof expression === 'number') return expression;
  let value: number;
  try {
    value = evaluateNumber(compileExpression(expression, { knownNames: Object.keys(scalars) }), scalars);
  } catch (e) {
    throw new RangeError(`${what} "${expression}": ${(e as Error).message.split('\n', 1)[0]}`);
  }
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${what} "${expression}" gives ${value}, not a number of operations or bytes`);
  return value;
}

/**
 * The work of one launch on a resolved test: `given` expressions (a spec's or the model's) where there are some, else
 * the compulsory bytes of its buffers and no flop count. `from` names who gave the expressions ("the spec").
 */
export function launchWorkOf(test: ResolvedTest, given: { flops?: string | number | undefined; bytes?: string | number | undefined }, from: string): LaunchWork {
  const buffers = test.arguments.flatMap((a): WorkBuffer[] => (a.kind === 'buffer' ? [{ bytes: a.length * dtypeBytes(a.dtype), output: a.output, inOut: a.output && a.init !== undefined }] : []));
  const bytes = given.bytes === undefined ? compulsoryBytes(buffers) : evaluateWork(given.bytes, test.scalars, 'bytes');
  const flops = given.flops === undefined ? undefined : evaluateWork(given.flops, test.scalars, 'flops');
  const source = [
    given.bytes === undefined ? "bytes: the buffers' sizes (each input read once, each output written once)" : `bytes: "${given.bytes}" (${from})`,
    given.flops === undefined ? `flops: not given` : `flops: "${given.flops}" (${from})`,
  ].join('; ');
  return { bytes, ...(flops !== undefined && { flops }), source };
}
