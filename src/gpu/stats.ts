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
  return {
    samplesMs: [...samplesMs],
    medianMs: median(samplesMs),
    meanMs,
    minMs: samplesMs.reduce((a, b) => Math.min(a, b)),
    maxMs: samplesMs.reduce((a, b) => Math.max(a, b)),
    stdMs: Math.sqrt(variance),
  };
}
