// The TypeScript port of the autotuning_methodology score (bench/search-quality/methodology.ts) against the Python one
// it mirrors (bench/search-quality/kernel_tuner/methodology.py).
//
// The fixture test/fixtures/hub/methodology-traces.json holds traces of our strategies on the benchmark hub's
// convolution A100 cache (the space's objectives and times, and the best-so-far of each run) beside methodology.py's
// numbers for exactly those traces. The first test scores the stored traces in TypeScript and compares: it needs no
// Python, and cannot drift when the strategies change, since the traces are data, not re-run.
// The second test re-runs the strategies now and runs methodology.py live on their traces; it runs where a python3 with
// numpy is found (PATH, then /usr/bin/python3) and is skipped elsewhere, saying so. With UPDATE_METHODOLOGY_FIXTURE=1 it
// rewrites the fixture from that live run.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chargedMs, loadProblem } from '../../bench/search-quality/hub';
import { aggregate, pavaIncreasing, pchip, roundHalfEven, scoreOverFevals, scoreOverTime, SpaceStatistics } from '../../bench/search-quality/methodology';
import { runOnce, timeBudgetS } from '../../bench/search-quality/quality';

const HUB = join(__dirname, '../fixtures/hub');
const FIXTURE = join(HUB, 'methodology-traces.json');
const SCRIPT = join(__dirname, '../../bench/search-quality/kernel_tuner/score_traces.py');
const BUDGET = 100;

/** What score_traces.py reads. */
interface Traces {
  objectives: (number | null)[];
  times: number[];
  budget: number;
  fevals_runs: (number | null)[][];
  time_runs: [number, number | null][][];
}

/** What score_traces.py writes. */
interface Scores {
  time_range: [number, number];
  cutoff: [number, number, number][];
  score_fevals: number;
  curve_fevals: number[];
  score_time: number;
  curve_time: number[];
  aggregate: [number, number];
}

interface Fixture {
  about: string;
  traces: Traces;
  expected: Scores;
}

/** The traces of greedy_mls and genetic_algorithm, 3 seeds each, over 100 evaluations and over the time budget, run now. */
async function tracesNow(): Promise<Traces> {
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
    objectives: problem.results.map((r) => (r.status === 'ok' ? r.timeMs! : null)),
    times: problem.results.map((r) => chargedMs(r) / 1000),
    budget: BUDGET,
    fevals_runs: fevalsRuns,
    time_runs: timeRuns,
  };
}

/** The TypeScript port's numbers for the traces, in score_traces.py's form. */
function scoreInTypeScript(traces: Traces): Scores {
  const stats = new SpaceStatistics(traces.objectives, traces.times);
  const fevals = scoreOverFevals(stats, traces.fevals_runs, traces.budget);
  const timeRange = stats.timeRange();
  const time = scoreOverTime(stats, traces.time_runs, timeRange);
  return {
    time_range: [timeRange[0]!, timeRange.at(-1)!],
    cutoff: [stats.cutoffPoint(0.5), stats.cutoffPoint(0.96)],
    score_fevals: fevals.score,
    curve_fevals: [...fevals.curve],
    score_time: time.score,
    curve_time: [...time.curve],
    aggregate: Object.values(aggregate([fevals.curve, time.curve.subarray(0, traces.budget)])) as [number, number],
  };
}

function expectSameScores(ours: Scores, expected: Scores, budget: number): void {
  expect(ours.cutoff).toEqual(expected.cutoff);
  expect(ours.time_range[0]).toBeCloseTo(expected.time_range[0], 9);
  expect(ours.time_range[1]).toBeCloseTo(expected.time_range[1], 9);
  expect(ours.curve_fevals).toHaveLength(budget);
  expect(ours.curve_time).toHaveLength(expected.curve_time.length);
  ours.curve_fevals.forEach((v, i) => expect(v, `curve_fevals[${i}]`).toBeCloseTo(expected.curve_fevals[i]!, 9));
  ours.curve_time.forEach((v, i) => expect(v, `curve_time[${i}]`).toBeCloseTo(expected.curve_time[i]!, 9));
  expect(ours.score_fevals).toBeCloseTo(expected.score_fevals, 9);
  expect(ours.score_time).toBeCloseTo(expected.score_time, 9);
  expect(ours.aggregate[0]).toBeCloseTo(expected.aggregate[0], 9);
  expect(ours.aggregate[1]).toBeCloseTo(expected.aggregate[1], 9);
}

/** A python3 that has numpy, or why there is none. */
function findNumpyPython(): { python: string } | { why: string } {
  for (const python of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(python, ['-c', 'import numpy'], { stdio: 'ignore' });
    if (probe.status === 0) return { python };
  }
  return { why: 'no python3 with numpy here (PATH, /usr/bin/python3)' };
}

function runMethodologyPy(python: string, traces: Traces): Scores {
  const file = join(mkdtempSync(join(tmpdir(), 'methodology-')), 'traces.json');
  writeFileSync(file, JSON.stringify(traces));
  const run = spawnSync(python, [SCRIPT, file], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`score_traces.py failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Scores;
}

const numpyPython = findNumpyPython();

describe('the methodology score, TypeScript against Python', () => {
  it("scores the stored traces as methodology.py scored them (no Python needed)", () => {
    const fixture = JSON.parse(readFileSync(FIXTURE, 'utf8')) as Fixture;
    const ours = scoreInTypeScript(fixture.traces);
    expectSameScores(ours, fixture.expected, fixture.traces.budget);
    // The traces compare strategies that beat random search over the time range without reaching the optimum at once.
    expect(ours.score_time).toBeGreaterThan(0);
    expect(ours.score_time).toBeLessThan(1);
  });

  it.skipIf('why' in numpyPython)(
    `scores today's traces as methodology.py does, run live (${'why' in numpyPython ? `skipped: ${numpyPython.why}` : `with ${numpyPython.python}`})`,
    async () => {
      if (!('python' in numpyPython)) return;
      const traces = await tracesNow();
      const live = runMethodologyPy(numpyPython.python, traces);
      expectSameScores(scoreInTypeScript(traces), live, BUDGET);
      expect(timeBudgetS(loadProblem(HUB, 'convolution_milo/A100'))).toBeCloseTo(live.time_range[1], 3);
      if (process.env.UPDATE_METHODOLOGY_FIXTURE) {
        const numpyVersion = spawnSync(numpyPython.python, ['-c', 'import numpy; print(numpy.__version__)'], { encoding: 'utf8' }).stdout.trim();
        const fixture: Fixture = {
          about: `traces of greedy_mls and genetic_algorithm (seeds 0-2) on convolution_milo/A100, scored by bench/search-quality/kernel_tuner/score_traces.py (numpy ${numpyVersion}); written by test/unit/search-quality-methodology.test.ts with UPDATE_METHODOLOGY_FIXTURE=1`,
          traces,
          expected: live,
        };
        writeFileSync(FIXTURE, `${JSON.stringify(fixture)}\n`);
      }
    },
    120_000,
  );

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
