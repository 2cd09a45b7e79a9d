// Our strategies replayed on the benchmark hub's caches (--simulate's replay: each first evaluation charges its
// recorded compile, verification and benchmark time), scored as kernel_tuner/summarise.py scores Kernel Tuner's runs:
// per cache, strategy and budget the mean best found as % of the optimum over the seeds and the methodology's score
// (over evaluations 1..B for the max_fevals budgets, over the methodology's time range for the time budget); across
// caches the mean of the per-cache means and the methodology's aggregate.
import { replay } from '../../src/tuner/cache/replay';
import { resolveStrategy } from '../../src/tuner/strategies';
import type { StopReason } from '../../src/tuner/types';
import { chargedMs, type Problem } from './hub';
import { aggregate, CUTOFF_PERCENTILE, scoreOverFevals, scoreOverTime, type RunPoints } from './methodology';

export const BUDGETS = ['50', '100', '200', '400', 'time'] as const;
export type Budget = (typeof BUDGETS)[number];

export interface Run {
  seed: number;
  fevals: number;
  chargedMs: number;
  stop: StopReason;
  points: RunPoints;
}

export interface Cell {
  runs: number;
  mean_best_percent: number;
  score: number;
  mean_fevals: number;
  stops: Partial<Record<StopReason, number>>;
}

export interface CacheSummary {
  space_size: number;
  optimum: number;
  time_budget_s: number;
  strategies: Record<string, Partial<Record<Budget, Cell>>>;
}

/** The time budget of a space: the end of the methodology's time range (as run_kt.py's time_budget_s, rounded to ms). */
export function timeBudgetS(problem: Problem): number {
  return Math.round(problem.stats.cutoffPoint(CUTOFF_PERCENTILE)[2] * 1000) / 1000;
}

/** One replayed search: its evaluations with their cumulative recorded time and the best so far. */
export async function runOnce(problem: Problem, strategy: string, budget: Budget, seed: number, options: Record<string, unknown> = {}): Promise<Run> {
  const { evaluate, clock } = replay(problem.cache, { space: problem.space });
  const limit = budget === 'time' ? { timeLimitMs: timeBudgetS(problem) * 1000 } : { maxFevals: Number(budget) };
  const result = await resolveStrategy(strategy)(options).run(problem.space, evaluate, { seed, clock, ...limit });
  let spent = 0;
  let best: number | null = null;
  const points = result.results.map((r) => {
    spent += chargedMs(r);
    if (r.status === 'ok' && (best === null || r.timeMs! < best)) best = r.timeMs!;
    return [spent / 1000, best] as const;
  });
  return { seed, fevals: result.evaluations, chargedMs: spent, stop: result.stopReason, points };
}

export function summariseRuns(problem: Problem, budget: Budget, runs: Run[]): { cell: Cell; curve: Float64Array } {
  const { stats } = problem;
  const percents = runs.map((r) => {
    const best = r.points.at(-1)?.[1];
    return best ? (stats.optimum / best) * 100 : 0;
  });
  const { score, curve } =
    budget === 'time'
      ? scoreOverTime(stats, runs.map((r) => r.points))
      : scoreOverFevals(stats, runs.map((r) => r.points.map(([, b]) => b)), Number(budget));
  const stops: Cell['stops'] = {};
  for (const r of runs) stops[r.stop] = (stops[r.stop] ?? 0) + 1;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return {
    cell: {
      runs: runs.length,
      mean_best_percent: Math.round(mean(percents) * 100) / 100,
      score: Math.round(score * 1e4) / 1e4,
      mean_fevals: Math.round(mean(runs.map((r) => r.fevals)) * 10) / 10,
      stops,
    },
    curve,
  };
}

export interface Aggregate {
  mean_best_percent: number;
  score: number;
  score_error: number;
}

/** Across caches: the mean of the per-cache mean best % and the methodology's aggregate of their curves. */
export function aggregateCells(cells: Cell[], curves: Float64Array[]): Aggregate {
  const { score, error } = aggregate(curves);
  return {
    mean_best_percent: Math.round((cells.reduce((t, c) => t + c.mean_best_percent, 0) / cells.length) * 100) / 100,
    score: Math.round(score * 1e4) / 1e4,
    score_error: Math.round(error * 1e4) / 1e4,
  };
}
