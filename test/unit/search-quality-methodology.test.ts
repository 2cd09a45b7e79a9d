// The TypeScript port of the autotuning_methodology score (bench/search-quality/methodology.ts) against the Python one
// it mirrors (bench/search-quality/kernel_tuner/methodology.py): the same traces of our strategies on the benchmark
// hub's convolution A100 cache must give the same curves and scores. The Python side runs where /usr/bin/python3 has
// numpy; its numbers from such a run are also kept in test/fixtures/hub/methodology-expected.json, so the comparison
// holds on a machine without numpy too (and the test says which it used).
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadProblem } from '../../bench/search-quality/hub';
import { aggregate, pavaIncreasing, pchip, roundHalfEven, scoreOverFevals, scoreOverTime, SpaceStatistics } from '../../bench/search-quality/methodology';
import { chargedMs } from '../../bench/search-quality/hub';
import { runOnce, timeBudgetS } from '../../bench/search-quality/quality';

const HUB = join(__dirname, '../fixtures/hub');
const EXPECTED = join(HUB, 'methodology-expected.json');
const SCRIPT = join(__dirname, '../../bench/search-quality/kernel_tuner/score_traces.py');
const BUDGET = 100;

interface Scores {
  time_range: [number, number];
  cutoff: [number, number, number][];
  score_fevals: number;
  curve_fevals: number[];
  score_time: number;
  curve_time: number[];
  aggregate: [number, number];
}

/** The traces: greedy_mls and genetic_algorithm, 3 seeds each, over 100 evaluations and over the time budget. */
async function traces() {
  const problem = loadProblem(HUB, 'convolution_milo/A100');
  const fevalsRuns: (number | null)[][] = [];
  const timeRuns: [number, number | null][][] = [];
  for (const strategy of ['greedy_mls', 'genetic_algorithm']) {
    for (let seed = 0; seed < 3; seed++) {
      fevalsRuns.push((await runOnce(problem, strategy, '100', seed)).points.map(([, b]) => b));
      timeRuns.push((await runOnce(problem, strategy, 'time', seed)).points.map(([t, b]) => [t, b]));
    }
  }
  return {
    problem,
    input: {
      objectives: problem.results.map((r) => (r.status === 'ok' ? r.timeMs! : null)),
      times: problem.results.map((r) => chargedMs(r) / 1000),
      budget: BUDGET,
      fevals_runs: fevalsRuns,
      time_runs: timeRuns,
    },
  };
}

function python(input: unknown): Scores | undefined {
  const numpy = spawnSync('/usr/bin/python3', ['-c', 'import numpy'], { stdio: 'ignore' });
  if (numpy.status !== 0) return undefined;
  const file = join(mkdtempSync(join(tmpdir(), 'methodology-')), 'traces.json');
  writeFileSync(file, JSON.stringify(input));
  const run = spawnSync('/usr/bin/python3', [SCRIPT, file], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`score_traces.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Scores;
}

describe('the methodology score, TypeScript against Python', () => {
  it('gives the same curves and scores for the same traces', async () => {
    const { problem, input } = await traces();
    const stats = problem.stats;
    const fevals = scoreOverFevals(stats, input.fevals_runs, BUDGET);
    const timeRange = stats.timeRange();
    const time = scoreOverTime(stats, input.time_runs, timeRange);
    const ours: Scores = {
      time_range: [timeRange[0]!, timeRange.at(-1)!],
      cutoff: [stats.cutoffPoint(0.5), stats.cutoffPoint(0.96)],
      score_fevals: fevals.score,
      curve_fevals: [...fevals.curve],
      score_time: time.score,
      curve_time: [...time.curve],
      aggregate: Object.values(aggregate([fevals.curve, time.curve.subarray(0, BUDGET)])) as [number, number],
    };
    const live = python(input);
    const expected = live ?? (JSON.parse(readFileSync(EXPECTED, 'utf8')) as Scores);
    if (live && process.env.UPDATE_METHODOLOGY_EXPECTED) writeFileSync(EXPECTED, `${JSON.stringify(live)}\n`);
    console.info(`methodology cross-check against ${live ? 'methodology.py run now' : `${EXPECTED} (no numpy here)`}`);
    expect(ours.cutoff).toEqual(expected.cutoff);
    expect(ours.time_range[0]).toBeCloseTo(expected.time_range[0], 9);
    expect(ours.time_range[1]).toBeCloseTo(expected.time_range[1], 9);
    expect(ours.curve_fevals).toHaveLength(BUDGET);
    ours.curve_fevals.forEach((v, i) => expect(v).toBeCloseTo(expected.curve_fevals[i]!, 9));
    ours.curve_time.forEach((v, i) => expect(v).toBeCloseTo(expected.curve_time[i]!, 9));
    expect(ours.score_fevals).toBeCloseTo(expected.score_fevals, 9);
    expect(ours.score_time).toBeCloseTo(expected.score_time, 9);
    expect(ours.aggregate[0]).toBeCloseTo(expected.aggregate[0], 9);
    expect(ours.aggregate[1]).toBeCloseTo(expected.aggregate[1], 9);
    // A real comparison: the strategies are better than random search over the time range, not at its bounds.
    expect(ours.score_time).toBeGreaterThan(0);
    expect(ours.score_time).toBeLessThan(1);
    expect(timeBudgetS(problem)).toBeCloseTo(expected.time_range[1], 3);
  }, 120_000);

  it('rounds half to even and fits as numpy, scipy and sklearn do (hand-computed values)', () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999].map(roundHalfEven)).toEqual([0, 2, 2, -0, -2, 2]);
    expect(pavaIncreasing([1, 3, 2, 4], [1, 1, 3, 1])).toEqual([1, 2.25, 2.25, 4]);
    // Two points: a straight line; a monotone step keeps its plateaus (no overshoot).
    expect([...pchip([0, 2], [1, 3], [0, 1, 2])]).toEqual([1, 2, 3]);
    const flat = pchip([0, 1, 2, 3], [0, 0, 1, 1], [0.5, 2.5]);
    expect([...flat]).toEqual([0, 1]);
    // The python test's space: objectives 1..8 and two failures; target 2.75 at p = 0.5 -> 2 fevals of 1 s.
    const stats = new SpaceStatistics([5, null, 1, 8, 3, null, 2, 7, 4, 6], [1, 3, 1, 1, 1, 3, 1, 1, 1, 1]);
    expect(stats.cutoffPoint(0.5)).toEqual([2.75, 2, 2]);
    expect(stats.timePerFeval).toBeCloseTo(1.6, 12);
  });
});
