// Summary statistics of timing samples, shared by the GPU layer (benchmark) and the tuner (reports, comparisons).

import { argumentError } from './errors';

export interface TimingStats {
  /** Every timed launch, in order, in milliseconds. */
  samplesMs: number[];
  /** The middle sample; the mean of the two middle ones for an even count. This is the number that is compared. */
  medianMs: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
  /** Sample standard deviation (n − 1 in the denominator); 0 for a single sample. */
  stdMs: number;
  /** The 95 % confidence interval of the median (medianInterval); absent under MIN_SAMPLES_FOR_INTERVAL samples. */
  medianIntervalMs?: [number, number];
}

/** Confidence of the interval of a median. */
export const MEDIAN_CONFIDENCE = 0.95;

/** The arithmetic mean; undefined for no values. */
export function mean(values: readonly number[]): number | undefined {
  return values.length === 0 ? undefined : values.reduce((a, b) => a + b, 0) / values.length;
}
/** The fewest samples whose smallest and largest bound the median with MEDIAN_CONFIDENCE (1 - 2 / 2^n >= 0.95). */
export const MIN_SAMPLES_FOR_INTERVAL = 6;

/** By sample count: the 1-based rank j of the interval [j-th smallest, j-th largest] (0: none). */
const intervalRanks = new Map<number, number>();

/**
 * The rank j whose order statistics [x(j), x(n+1-j)] hold the median with at least MEDIAN_CONFIDENCE whatever the
 * distribution: the largest j with P(Bin(n, 1/2) < j) <= (1 - confidence) / 2. Summed in logarithms, so that 2^-n
 * does not underflow the terms that matter.
 */
function intervalRank(n: number): number {
  let rank = intervalRanks.get(n);
  if (rank !== undefined) return rank;
  const tail = (1 - MEDIAN_CONFIDENCE) / 2;
  let logTerm = -n * Math.LN2; // log P(Bin = 0)
  let below = 0; // P(Bin < j), for j = i + 1 after step i
  rank = 0;
  for (let i = 0; i <= n; i++) {
    below += Math.exp(logTerm);
    if (below > tail) break;
    rank = i + 1;
    logTerm += Math.log((n - i) / (i + 1));
  }
  intervalRanks.set(n, rank);
  return rank;
}

/**
 * The 95 % confidence interval of the median of the distribution the samples come from, from order statistics alone
 * (no assumption about its shape): [x(j), x(n+1-j)] of the sorted samples (intervalRank). Undefined under
 * MIN_SAMPLES_FOR_INTERVAL samples, for which no such interval exists.
 */
export function medianInterval(values: readonly number[]): [number, number] | undefined {
  const rank = intervalRank(values.length);
  if (rank === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return [sorted[rank - 1]!, sorted[values.length - rank]!];
}

export function median(values: readonly number[]): number {
  if (values.length === 0) throw argumentError('values', 'a non-empty array', values);
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function computeStats(samplesMs: readonly number[]): TimingStats {
  if (!Array.isArray(samplesMs) || samplesMs.length === 0)
    throw argumentError('samplesMs', 'a non-empty array of times', samplesMs);
  samplesMs.forEach((v, i) => {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0)
      throw argumentError(`samplesMs[${i}]`, 'a finite, non-negative number of milliseconds', v);
  });
  const n = samplesMs.length;
  const meanMs = samplesMs.reduce((a, b) => a + b, 0) / n;
  const variance = n > 1 ? samplesMs.reduce((a, v) => a + (v - meanMs) ** 2, 0) / (n - 1) : 0;
  const interval = medianInterval(samplesMs);
  return {
    samplesMs: [...samplesMs],
    medianMs: median(samplesMs),
    meanMs,
    minMs: samplesMs.reduce((a, b) => Math.min(a, b)),
    maxMs: samplesMs.reduce((a, b) => Math.max(a, b)),
    stdMs: Math.sqrt(variance),
    ...(interval && { medianIntervalMs: interval }),
  };
}
