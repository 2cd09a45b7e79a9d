// The aggregate score of AutoTuningAssociation/autotuning_methodology, computed as kernel_tuner/methodology.py
// computes it (that file names the package's functions and its two departures from them; NOTES.md section 5 gives the
// formulas), so that our strategies and Kernel Tuner's are scored alike. Every step mirrors the Python one line for
// line: numpy's sort, median, searchsorted (left), linspace, interp and round (half to even), sklearn's isotonic
// regression (pool-adjacent-violators) and scipy's PCHIP. Units: objectives as recorded (ms), times in seconds.
// test/unit/search-quality-methodology.test.ts checks it against methodology.py on the same traces.

export const CUTOFF_PERCENTILE = 0.96;
export const CUTOFF_PERCENTILE_START = 0.5;
export const RESOLUTION = 1000;
const TIME_RANGE_MARGIN = 0.1;

/** Python's and numpy's round(): half to even. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

function median(sorted: Float64Array | number[]): number {
  const n = sorted.length;
  return n % 2 === 1 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
}

function mean(xs: ArrayLike<number>): number {
  let t = 0;
  for (let i = 0; i < xs.length; i++) t += xs[i]!;
  return t / xs.length;
}

/** numpy.linspace(a, b, n). */
export function linspace(a: number, b: number, n: number): Float64Array {
  if (n === 1) return Float64Array.of(a);
  const step = (b - a) / (n - 1);
  const out = Float64Array.from({ length: n }, (_, i) => a + i * step);
  out[n - 1] = b;
  return out;
}

/** searchspace_statistics.SearchspaceStatistics of one brute-forced space. */
export class SpaceStatistics {
  /** The valid objectives, ascending. */
  readonly dist: Float64Array;
  readonly size: number;
  readonly optimum: number;
  readonly median: number;
  readonly timeMedian: number;
  readonly timePerFeval: number;

  /** objectives: per configuration its objective, null where it failed; times: its recorded time in seconds. */
  constructor(objectives: readonly (number | null)[], times: readonly number[]) {
    if (objectives.length !== times.length) throw new RangeError('objectives and times must have one entry per configuration');
    this.dist = Float64Array.from(objectives.filter((v): v is number => v !== null)).sort();
    if (this.dist.length === 0) throw new RangeError('the space has no valid configuration');
    this.size = objectives.length;
    this.optimum = this.dist[0]!;
    this.median = median(this.dist);
    this.timeMedian = median(Float64Array.from(times).sort());
    const valid = times.filter((_, i) => objectives[i] !== null);
    const invalid = times.filter((_, i) => objectives[i] === null);
    this.timePerFeval = invalid.length > 0 ? mean(valid) + (invalid.length / times.length) * mean(invalid) : mean(times);
  }

  /** [objective at the cutoff, fevals, time]: random search's expected effort to get `percentile` of the way. */
  cutoffPoint(percentile: number): [number, number, number] {
    const target = this.optimum + (this.median - this.optimum) * (1 - percentile);
    const n = this.dist.length;
    let i = 0;
    while (i < n && !(this.dist[n - 1 - i]! <= target)) i++;
    if (i === n) i = 0; // numpy's argmax of an all-false mask
    const fevals = Math.ceil(i / (n + 1 - i));
    return [target, fevals, fevals * this.timeMedian];
  }

  timeRange(start = CUTOFF_PERCENTILE_START, end = CUTOFF_PERCENTILE, resolution = RESOLUTION): Float64Array {
    return linspace(this.cutoffPoint(start)[2], this.cutoffPoint(end)[2], resolution);
  }

  /** The position of a value in the ascending distribution (numpy.searchsorted, side left). */
  indexOf(value: number): number {
    let lo = 0;
    let hi = this.dist.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.dist[mid]! < value) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** The expected best of M random draws without replacement, for each M, smoothed by PCHIP as the package does. */
export function randomSearchOverFevals(stats: SpaceStatistics, fevals: ArrayLike<number>): Float64Array {
  const n = stats.dist.length;
  const worstFirst = (k: number) => stats.dist[n - 1 - k]!;
  const draws = Float64Array.from(fevals, (m) => worstFirst(Math.min(n - 1, roundHalfEven((m * (n + 1)) / (m + 1)))));
  if (fevals.length <= 2) return draws;
  const xs: number[] = [];
  const ys: number[] = [];
  for (let i = 0; i < fevals.length; i++) {
    if (i === 0 || fevals[i]! - fevals[i - 1]! > 0) {
      xs.push(fevals[i]!);
      ys.push(draws[i]!);
    }
  }
  return pchip(xs, ys, linspace(fevals[0]!, fevals[fevals.length - 1]!, fevals.length));
}

export function randomSearchOverTime(stats: SpaceStatistics, timeRange: ArrayLike<number>): Float64Array {
  return randomSearchOverFevals(stats, Float64Array.from(timeRange, (t) => roundHalfEven(Math.max(t / stats.timePerFeval, 1))));
}

export function standardise(stats: SpaceStatistics, curve: ArrayLike<number>, baseline: ArrayLike<number>): Float64Array {
  return Float64Array.from(curve, (v, i) => (v - baseline[i]!) / (stats.optimum - baseline[i]!));
}

/** One run: per evaluation, its cumulative recorded time (s) and the best objective so far (null before a valid one). */
export type RunPoints = readonly (readonly [number, number | null])[];

/** StochasticOptimizationAlgorithm.get_curve_over_time for the runs of one strategy on one space. */
export function strategyOverTime(stats: SpaceStatistics, runs: readonly RunPoints[], timeRange: Float64Array): Float64Array {
  const pointsT: number[] = [];
  const pointsY: number[] = [];
  const lastValidTimes: number[] = [];
  const low = timeRange[0]! * (1 - TIME_RANGE_MARGIN);
  const high = timeRange[timeRange.length - 1]! * (1 + TIME_RANGE_MARGIN);
  for (const run of runs) {
    const valid = run.filter(([, best]) => best !== null) as (readonly [number, number])[];
    if (valid.length > 0) lastValidTimes.push(valid[valid.length - 1]![0]);
    for (const [t, best] of valid) {
      if (low <= t && t <= high) {
        pointsT.push(t);
        pointsY.push(best);
      }
    }
  }
  if (lastValidTimes.length === 0) throw new RangeError('no run found a valid configuration');
  const stoppingTime = median(lastValidTimes.sort((a, b) => a - b));
  const n = stats.dist.length;
  let curveIndices: Int32Array;
  if (pointsT.length > 0) {
    const fitted = isotonicDecreasing(pointsT, pointsY.map((y) => stats.indexOf(y)), timeRange);
    curveIndices = Int32Array.from(fitted, (v) => Math.min(Math.max(roundHalfEven(v), 0), n - 1));
  } else {
    const finals = runs
      .map((run) => [...run].reverse().find(([, best]) => best !== null)?.[1])
      .filter((v): v is number => v !== undefined && v !== null)
      .map((v) => stats.indexOf(v))
      .sort((a, b) => a - b);
    curveIndices = new Int32Array(timeRange.length).fill(roundHalfEven(median(finals)));
  }
  const curve = Float64Array.from(curveIndices, (i) => stats.dist[i]!);
  if (stoppingTime < timeRange[timeRange.length - 1]!) {
    let stop = timeRange.findIndex((t) => t > stoppingTime);
    if (stop < 0) stop = 0;
    curve.fill(curve[stop]!, stop);
  }
  return curve;
}

/** get_curve_over_fevals for fevals 1..B; runs: per run, per evaluation the best so far or null. */
export function strategyOverFevals(stats: SpaceStatistics, runs: readonly (readonly (number | null)[])[], fevals: Int32Array): Float64Array {
  const lengths = runs.map((r) => r.length - 1).sort((a, b) => a - b);
  const lastCommon = Math.min(Math.floor(median(lengths)), fevals.length - 1);
  const kept = runs.filter((run) => run.length - 1 >= lastCommon);
  const curveIndices: number[] = [];
  for (const f of fevals.subarray(0, lastCommon + 1)) {
    const atF = kept.map((run) => run[f - 1]).filter((v): v is number => v !== null && v !== undefined);
    curveIndices.push(atF.length > 0 ? roundHalfEven(median(atF.map((v) => stats.indexOf(v)).sort((a, b) => a - b))) : stats.dist.length - 1);
  }
  while (curveIndices.length < fevals.length) curveIndices.push(curveIndices[curveIndices.length - 1]!);
  return Float64Array.from(curveIndices, (i) => stats.dist[i]!);
}

export function scoreOverTime(stats: SpaceStatistics, runs: readonly RunPoints[], timeRange = stats.timeRange()): { score: number; curve: Float64Array } {
  const curve = standardise(stats, strategyOverTime(stats, runs, timeRange), randomSearchOverTime(stats, timeRange));
  return { score: mean(curve), curve };
}

export function scoreOverFevals(stats: SpaceStatistics, runs: readonly (readonly (number | null)[])[], budget: number): { score: number; curve: Float64Array } {
  const fevals = Int32Array.from({ length: budget }, (_, i) => i + 1);
  const curve = standardise(stats, strategyOverFevals(stats, runs, fevals), randomSearchOverFevals(stats, fevals));
  return { score: mean(curve), curve };
}

/** The mean over spaces at each point of the range; the score is its mean, the error its standard deviation. */
export function aggregate(curves: readonly Float64Array[]): { score: number; error: number } {
  const meanCurve = Float64Array.from(curves[0]!, (_, i) => mean(curves.map((c) => c[i]!)));
  const m = mean(meanCurve);
  return { score: m, error: Math.sqrt(mean(Float64Array.from(meanCurve, (v) => (v - m) ** 2))) };
}

/**
 * sklearn IsotonicRegression(increasing=False, out_of_bounds="clip") fitted on (x, y), predicted at xNew: equal x are
 * merged into their mean, pool-adjacent-violators fits a non-increasing sequence, the prediction interpolates
 * linearly between the fitted points, clipped to the fitted range.
 */
export function isotonicDecreasing(x: readonly number[], y: readonly number[], xNew: ArrayLike<number>): Float64Array {
  const order = x.map((_, i) => i).sort((a, b) => x[a]! - x[b]! || y[a]! - y[b]!);
  const uniqueX: number[] = [];
  const sums: number[] = [];
  const counts: number[] = [];
  for (const i of order) {
    if (uniqueX.length > 0 && uniqueX[uniqueX.length - 1] === x[i]) {
      sums[sums.length - 1]! += y[i]!;
      counts[counts.length - 1]!++;
    } else {
      uniqueX.push(x[i]!);
      sums.push(y[i]!);
      counts.push(1);
    }
  }
  const means = sums.map((s, i) => s / counts[i]!);
  const fitted = pavaIncreasing([...means].reverse(), [...counts].reverse()).reverse();
  return Float64Array.from(xNew, (v) => interp(Math.min(Math.max(v, uniqueX[0]!), uniqueX[uniqueX.length - 1]!), uniqueX, fitted));
}

/** Weighted pool-adjacent-violators: the non-decreasing sequence closest to y in weighted least squares. */
export function pavaIncreasing(y: readonly number[], weights: readonly number[]): number[] {
  const values: number[] = [];
  const w: number[] = [];
  const sizes: number[] = [];
  y.forEach((value, i) => {
    values.push(value);
    w.push(weights[i]!);
    sizes.push(1);
    while (values.length > 1 && values[values.length - 2]! > values[values.length - 1]!) {
      const v = values.pop()!;
      const wt = w.pop()!;
      const size = sizes.pop()!;
      const merged = w[w.length - 1]! + wt;
      values[values.length - 1] = (values[values.length - 1]! * w[w.length - 1]! + v * wt) / merged;
      w[w.length - 1] = merged;
      sizes[sizes.length - 1]! += size;
    }
  });
  return values.flatMap((v, i) => new Array<number>(sizes[i]!).fill(v));
}

/** numpy.interp for x within [xp[0], xp[-1]]. */
function interp(x: number, xp: readonly number[], fp: readonly number[]): number {
  if (x <= xp[0]!) return fp[0]!;
  if (x >= xp[xp.length - 1]!) return fp[fp.length - 1]!;
  let lo = 0;
  let hi = xp.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xp[mid]! <= x) lo = mid;
    else hi = mid;
  }
  const t = (x - xp[lo]!) / (xp[hi]! - xp[lo]!);
  return fp[lo]! + t * (fp[hi]! - fp[lo]!);
}

/** scipy PchipInterpolator(x, y)(xNew) for xNew within [x[0], x[-1]]. */
export function pchip(x: readonly number[], y: readonly number[], xNew: ArrayLike<number>): Float64Array {
  const n = x.length;
  const h = Array.from({ length: n - 1 }, (_, k) => x[k + 1]! - x[k]!);
  const m = h.map((hk, k) => (y[k + 1]! - y[k]!) / hk);
  const d = new Array<number>(n).fill(0);
  if (n === 2) {
    d[0] = m[0]!;
    d[1] = m[0]!;
  } else {
    for (let k = 1; k < n - 1; k++) {
      if (m[k - 1]! * m[k]! > 0) {
        const w1 = 2 * h[k]! + h[k - 1]!;
        const w2 = h[k]! + 2 * h[k - 1]!;
        d[k] = (w1 + w2) / (w1 / m[k - 1]! + w2 / m[k]!);
      }
    }
    d[0] = pchipEndSlope(h[0]!, h[1]!, m[0]!, m[1]!);
    d[n - 1] = pchipEndSlope(h[n - 2]!, h[n - 3]!, m[n - 2]!, m[n - 3]!);
  }
  return Float64Array.from(xNew, (v) => {
    // numpy.searchsorted(x, v, side="right") - 1, clipped to [0, n - 2]
    let k = 0;
    while (k < n && x[k]! <= v) k++;
    k = Math.min(Math.max(k - 1, 0), n - 2);
    const t = (v - x[k]!) / h[k]!;
    const h00 = 2 * t ** 3 - 3 * t ** 2 + 1;
    const h10 = t ** 3 - 2 * t ** 2 + t;
    const h01 = -2 * t ** 3 + 3 * t ** 2;
    const h11 = t ** 3 - t ** 2;
    return h00 * y[k]! + h10 * h[k]! * d[k]! + h01 * y[k + 1]! + h11 * h[k]! * d[k + 1]!;
  });
}

function pchipEndSlope(h0: number, h1: number, m0: number, m1: number): number {
  const d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1);
  if (Math.sign(d) !== Math.sign(m0)) return 0;
  if (Math.sign(m0) !== Math.sign(m1) && Math.abs(d) > Math.abs(3 * m0)) return 3 * m0;
  return d;
}
