// PerformanceTracker arithmetic, overview, persistence; and the engine's time budget and error classes.
import { describe, expect, it } from 'vitest';
import { InvalidTest, LlmServerError, StructuredOutputError, TimeoutError, TIMEOUT_BUFFER_S, tuningTimeoutMs } from '../../src/engine/errors';
import { PerformanceTracker } from '../../src/engine/candidate/tracker';

function twoSteps(): PerformanceTracker {
  const tracker = new PerformanceTracker(2.0);
  tracker.addStep({
    description: 'Tile the loop | use shared memory',
    code: '__global__ void k() {}',
    newTimeMs: 1.5,
    tunableParams: { block_size_x: [64, 128], tile: [2, 4] },
    restrictions: ['block_size_x % tile == 0'],
    bestParams: { block_size_x: 128, tile: 4 },
    timestamp: '2025-01-02T03:04:05Z',
  });
  tracker.addStep({ description: 'Unroll\nthe inner loop', code: 'v2', newTimeMs: 0.5, bestParams: { block_size_x: 128, tile: 4, unroll: 8 } });
  return tracker;
}

describe('PerformanceTracker', () => {
  it('computes each step against the previous best time', () => {
    const tracker = twoSteps();
    const [first, second] = tracker.steps;
    expect(first).toMatchObject({ oldTimeMs: 2.0, newTimeMs: 1.5, improvementPct: 25, timestamp: '2025-01-02T03:04:05.000Z' });
    expect(second!.oldTimeMs).toBe(1.5);
    expect(second!.improvementPct).toBeCloseTo(66.667, 3);
    expect(Date.parse(second!.timestamp)).not.toBeNaN();
    expect(tracker.hasImprovements()).toBe(true);
  });

  it('totals from the baseline to the last step, in percent and as a speed-up', () => {
    const total = twoSteps().getTotalImprovement();
    expect(total).toEqual({ percent: 75, speedup: 4, baselineTimeMs: 2, finalTimeMs: 0.5 });
  });

  it('reports no change without a baseline or without steps, as the seed does', () => {
    expect(new PerformanceTracker(3).getTotalImprovement()).toEqual({ percent: 0, speedup: 1, baselineTimeMs: 3, finalTimeMs: null });
    const noBaseline = new PerformanceTracker();
    const step = noBaseline.addStep({ description: 's', code: 'c', newTimeMs: 1 });
    expect(step).toMatchObject({ oldTimeMs: null, improvementPct: 0 });
    expect(noBaseline.getTotalImprovement()).toEqual({ percent: 0, speedup: 1, baselineTimeMs: null, finalTimeMs: 1 });
    expect(new PerformanceTracker().hasImprovements()).toBe(false);
  });

  it('takes an explicit old time, and refuses times that are not positive', () => {
    const tracker = new PerformanceTracker(10);
    expect(tracker.addStep({ description: 's', code: 'c', oldTimeMs: 4, newTimeMs: 3 }).improvementPct).toBe(25);
    expect(() => tracker.addStep({ description: 's', code: 'c', newTimeMs: 0 })).toThrow(/newTimeMs must be a positive number/);
    expect(() => tracker.addStep({ description: 's', code: 'c', newTimeMs: Number.NaN })).toThrow(RangeError);
    expect(() => tracker.setBaselineTime(-1)).toThrow(/the baseline time must be a positive number/);
    expect(() => tracker.addStep({ description: 's', code: 'c', newTimeMs: 1, timestamp: 'yesterday' })).toThrow(/timestamp yesterday is not a date/);
  });

  it('writes a readable Markdown overview', () => {
    const overview = twoSteps().generateOverview();
    expect(overview).toBe(
      [
        '## Performance overview',
        '',
        'Baseline: 2 ms',
        '',
        '| # | Step | Before | After | Improvement | Best parameters |',
        '|---|------|--------|-------|-------------|-----------------|',
        '| 1 | Tile the loop \\| use shared memory | 2 ms | 1.5 ms | 25.0 % | block_size_x=128, tile=4 |',
        '| 2 | Unroll the inner loop | 1.5 ms | 0.5 ms | 66.7 % | block_size_x=128, tile=4, unroll=8 |',
        '',
        'Total: 2 ms → 0.5 ms, 75.0 % less time, 4.00x speed-up over 2 step(s).',
      ].join('\n'),
    );
    expect(new PerformanceTracker(0.123456).generateOverview()).toBe(
      '## Performance overview\n\nBaseline: 0.1235 ms\n\nNo performance improvements were recorded.',
    );
  });

  it('round-trips through JSON and rejects what is not a saved tracker', () => {
    const tracker = twoSteps();
    const restored = PerformanceTracker.fromJSON(JSON.parse(JSON.stringify(tracker)));
    expect(restored.toJSON()).toEqual(tracker.toJSON());
    expect(restored.generateOverview()).toBe(tracker.generateOverview());
    // The copy is independent.
    restored.addStep({ description: 'more', code: 'v3', newTimeMs: 0.25 });
    expect(tracker.steps).toHaveLength(2);
    expect(() => PerformanceTracker.fromJSON({ baselineTimeMs: 1, steps: [{ description: 'x' }] })).toThrow(/not a saved PerformanceTracker: steps\.0\.code/);
  });
});

describe('engine errors', () => {
  it("tuningTimeoutMs is the seed's max(timePerTest * combinations, timePerTest) + 10 s", () => {
    expect(TIMEOUT_BUFFER_S).toBe(10);
    expect(tuningTimeoutMs(15, 1)).toBe(25_000);
    expect(tuningTimeoutMs(15, 0)).toBe(25_000);
    expect(tuningTimeoutMs(2, 12)).toBe(34_000);
    expect(tuningTimeoutMs(0.5, 1)).toBe(10_500);
    expect(() => tuningTimeoutMs(0, 3)).toThrow(RangeError);
    expect(() => tuningTimeoutMs(1, 1.5)).toThrow(RangeError);
  });

  it('are distinguishable by class and name', () => {
    const timeout = new TimeoutError('tuning took longer than 34 s', 34_000);
    expect(timeout).toBeInstanceOf(Error);
    expect(timeout.name).toBe('TimeoutError');
    expect(timeout.limitMs).toBe(34_000);
    expect(new InvalidTest('input spec names no argument n').name).toBe('InvalidTest');
    expect(new LlmServerError('x').transient).toBe(true);
    expect(new StructuredOutputError('m', 'raw', ['a']).name).toBe('StructuredOutputError');
  });
});
