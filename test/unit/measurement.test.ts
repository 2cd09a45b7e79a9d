// The measurement protocol (src/tuner/run/measurement.ts) against kernels that keep state between launches to skip
// their work, run through TunableKernel.tune on the fake GPU backend (TEST DOUBLE, test/support/fake-backend.ts): the
// fake simulates what a GPU does with each launch (a module's memory, outputs reset or written), the protocol above it
// is the real one. The same patterns run as real CUDA kernels in test/gpu/stateful-kernels.test.ts.
//
// "Rejected" means: the configuration is wrong_result or inconsistent_timing, has no time and is not the best. A kernel
// that idles only after more launches than its module ever gets never behaves differently from the honest kernel
// while it is measured: then it must be accepted with exactly the honest kernel's time, never a faster one.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCacheText } from '../../src/tuner/cache/format';
import { median } from '../../src/gpu/stats';
import { DEFAULT_LAUNCHES, launchCountProblems, type AdaptiveLaunches } from '../../src/tuner/run/launch-count';
import {
  DISAGREEMENT_RATIO,
  KERNEL_TUNER_TIMING_UNCHECKED,
  MAX_CHECKPOINT_GAP,
  PROBE_LAUNCHES,
  RANDOM_VERIFIED_LAUNCHES,
  describeVerification,
  seriesEnd,
  timingDisagreement,
  verificationPlan,
} from '../../src/tuner/run/measurement';
import { FailedTestsError, KernelTest, TunableKernel, type TuneOptions } from '../../src/tuner/tunable-kernel';
import type { ConfigResult, TuneResult } from '../../src/tuner/types';
import { FakeBackend, type FakeBehaviour, type FakeLaunch } from '../support/fake-backend';
import { rng } from '../support/seeded';

const SOURCE = `
__global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}`;

/** The honest kernel's time per launch, and that of a launch that returns at once. */
const HONEST_MS = 0.047;
const IDLE_MS = 0.002;
const ITERATIONS = 32;
const WARMUP = 1;
/** Launches of the module the timed series loads: the warm-up and the timed ones. */
const TIMING_MODULE_LAUNCHES = WARMUP + ITERATIONS;

const work = { works: true, timeMs: HONEST_MS };
const skip = { works: false, timeMs: IDLE_MS };

/** The state-keeping patterns, as what each launch does with what its module remembers. */
const idleAfter =
  (k: number): FakeBehaviour =>
  (l) => (l.launchOfModule <= k ? work : skip);
const cachedBy =
  (key: (l: FakeLaunch) => unknown): FakeBehaviour =>
  (l) => {
    if (l.memory.get('seen') === key(l)) return skip;
    l.memory.set('seen', key(l));
    return work;
  };
const oneTimeFlag: FakeBehaviour = (l) => {
  if (l.memory.has('done')) return skip;
  l.memory.set('done', true);
  return work;
};
/** Honest, with a legitimate one-time initialisation: a lookup table built on a module's first launch, then used. */
const lookupTable: FakeBehaviour = (l) => {
  if (l.memory.has('table')) return work;
  l.memory.set('table', true);
  return { works: true, timeMs: 10 * HONEST_MS };
};

const test = KernelTest.fromSpec({
  problemSize: 'n',
  arguments: {
    c: { dtype: 'float32', length: 'n', output: true },
    a: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
    b: { dtype: 'float32', length: 'n', random: { kind: 'uniform', min: -1, max: 1 } },
    n: { dtype: 'int32', value: 1 << 20 },
  },
});

/** Tunes block size 128 (behaving as `behaviour`) and 256 (honest, the reference) on a fresh fake GPU. */
async function tuneWith(behaviour: FakeBehaviour, options: TuneOptions = {}): Promise<{ pattern: ConfigResult; honest: ConfigResult; result: TuneResult }> {
  const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
  const backend = new FakeBackend({ model: { timeMs: () => HONEST_MS, behaviour: (v) => (v.defines.block_size_x === '128' ? behaviour : undefined) } });
  const result = await kernel.tune(test, { block_size_x: [128, 256] }, [], { backend, referenceConfig: { block_size_x: 256 }, iterations: ITERATIONS, warmup: WARMUP, earlyStop: false, ...options });
  const [pattern, honest] = result.results as [ConfigResult, ConfigResult];
  return { pattern, honest, result };
}

function expectRejected({ pattern, honest, result }: Awaited<ReturnType<typeof tuneWith>>): void {
  expect(['wrong_result', 'inconsistent_timing']).toContain(pattern.status);
  expect(pattern.timeMs).toBeUndefined();
  // A wrong result records where it was wrong instead of the launches that were right.
  if (pattern.status === 'wrong_result') expect(pattern.verified).toBeUndefined();
  expect(honest.status).toBe('ok');
  expect(result.best?.key).toBe(honest.key);
}

describe('kernels that keep state between launches', () => {
  it('idle after K launches, for K = 1..40: rejected, or (K beyond every module\'s launches) accepted with the honest time', async () => {
    for (let k = 1; k <= 40; k++) {
      const outcome = await tuneWith(idleAfter(k));
      const { pattern, honest, result } = outcome;
      const at = `K = ${k}: ${pattern.status} ${pattern.error?.message ?? ''}`;
      expect(honest.timeMs, at).toBe(HONEST_MS);
      expect(result.best?.timeMs, at).toBe(HONEST_MS);
      if (k === 1) {
        // The checks run on one module: its second launch, on the second input set, already idles.
        expectRejected(outcome);
        expect(pattern.error?.message, at).toMatch(/^wrong result on input set 2/);
      } else if (k < TIMING_MODULE_LAUNCHES) {
        // The timed series' module idles from launch K + 1 (timed launch K): at the latest its last timed launch,
        // which is verified, leaves its poisoned outputs unwritten.
        expectRejected(outcome);
        const [, launch] = /^wrong result on timed launch (\d+) of 32 /.exec(pattern.error?.message ?? '') ?? [];
        expect(Number(launch), at).toBeGreaterThanOrEqual(k);
        expect(pattern.error?.message, at).toMatch(/c \(never written\): 1048576 of 1048576 elements differ/);
      } else {
        // Never idle while measured: the honest kernel, with the honest kernel's time.
        expect(pattern.status, at).toBe('ok');
        expect(pattern.timeMs, at).toBe(HONEST_MS);
      }
    }
  });

  it('a result cached by input address is rejected', async () => {
    const outcome = await tuneWith(cachedBy((l) => l.inputAddress));
    expectRejected(outcome);
    expect(outcome.pattern.error?.message).toMatch(/^wrong result on timed launch \d+ of 32 \(right on every input set when checked: state kept between launches/);
  });

  it('a result cached by a checksum of the inputs is rejected', async () => {
    const outcome = await tuneWith(cachedBy((l) => l.inputChecksum));
    expectRejected(outcome);
    expect(outcome.pattern.error?.message).toMatch(/^wrong result on timed launch \d+ of 32/);
  });

  it('a one-time flag is rejected', async () => {
    const outcome = await tuneWith(oneTimeFlag);
    expectRejected(outcome);
    expect(outcome.pattern.error?.message).toMatch(/^wrong result on input set 2 \(right on the first input set/);
  });

  it('a kernel that knows the protocol (right on the checks and the last timed launch, idle between) is rejected', async () => {
    // Module launches 1 and 2 are the checks' (and the timed module's warm-up and first timed launch), the last is
    // the last timed launch: of the random verified ones, at least RANDOM_VERIFIED_LAUNCHES - 1 fall in between.
    const outcome = await tuneWith((l) => (l.launchOfModule <= 2 || l.launchOfModule === TIMING_MODULE_LAUNCHES ? work : skip));
    expectRejected(outcome);
    expect(outcome.pattern.status).toBe('wrong_result');
    expect(outcome.pattern.error?.message).toMatch(/^wrong result on timed launch ([2-9]|[12]\d|3[01]) of 32/);
  });

  it('a kernel that idles at random (its own choice, any share of the launches) is rejected: wrong where verified, else flagged', async () => {
    for (const share of [0.1, 0.3, 0.5, 0.7, 0.95]) {
      const random = rng(Math.round(share * 1000));
      const outcome = await tuneWith((l) => (l.launchOfModule <= 2 || random() >= share ? work : skip));
      expectRejected(outcome);
      if (outcome.pattern.status === 'inconsistent_timing') expect(outcome.pattern.error?.message).toMatch(/^its timed launches disagree/);
    }
  });

  it('a kernel whose launches are all right but far apart in time is flagged inconsistent_timing, keeps its samples, and is never best', async () => {
    // Every other launch is fast and right (say, a result copied from a cache of its own): the median would be a lie.
    const { pattern, honest, result } = await tuneWith((l) => ({ works: true, timeMs: l.launchOfModule % 2 === 0 ? IDLE_MS : HONEST_MS }));
    expect(pattern.status).toBe('inconsistent_timing');
    expect(pattern.error?.message).toMatch(/^its timed launches disagree: launch \d+ took 0\.002 ms, under half the median 0\.0245 ms .*; not eligible as best/);
    expect(pattern.timeMs).toBeUndefined();
    expect(pattern.stats?.samplesMs).toHaveLength(ITERATIONS);
    expect(pattern.verified?.timedLaunches.at(-1)).toBe(ITERATIONS);
    expect(result.best?.key).toBe(honest.key);
  });

  it('a series disturbed from outside (another process on the GPU) is timed again, and accepted when the second agrees', async () => {
    // Most launches of the first timed series run three times slower, as while another process shares the GPU; the
    // kernel itself is honest, so the series on the next fresh module agrees.
    const timedModules: unknown[] = [];
    const disturbedFirstSeries: FakeBehaviour = (l) => {
      if (l.launchOfModule === 1) timedModules.push(l.memory);
      const firstTimedModule = timedModules.length === 2 && timedModules[1] === l.memory;
      return firstTimedModule && l.launchOfModule > WARMUP + 4 ? { works: true, timeMs: 3 * HONEST_MS } : work;
    };
    const { pattern, result } = await tuneWith(disturbedFirstSeries);
    expect(timedModules).toHaveLength(3); // the checks' module, the first timed series', the second's
    expect(pattern.status).toBe('ok');
    expect(pattern.timeMs).toBe(HONEST_MS);
    expect(pattern.note).toMatch(/^timed again: in the first series the timed launches disagree: .*; the second agreed/);
    expect(result.best).toBeDefined();
  });

  it('a kernel that skips work disagrees in both timed series and is flagged, saying so', async () => {
    const { pattern } = await tuneWith((l) => ({ works: true, timeMs: l.launchOfModule % 2 === 0 ? IDLE_MS : HONEST_MS }));
    expect(pattern.status).toBe('inconsistent_timing');
    expect(pattern.error?.message).toMatch(/, in 2 timed series each on a fresh module; not eligible as best/);
  });

  it('test() of a configuration whose timed launches disagree throws FailedTestsError, saying so', async () => {
    const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
    // One timed launch (the timed module's fifth launch) far faster than the others, its outputs right all the same.
    const backend = new FakeBackend({ model: { timeMs: () => HONEST_MS, behaviour: (v) => (v.defines.block_size_x === '128' ? (l) => (l.launchOfModule === 5 ? { works: true, timeMs: IDLE_MS } : work) : undefined) } });
    const error = await kernel.test(test, { block_size_x: 128 }, { backend, referenceConfig: { block_size_x: 256 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FailedTestsError);
    expect((error as FailedTestsError).result.status).toBe('inconsistent_timing');
    expect((error as Error).message).toMatch(/^its timed launches disagree: launch 4 took 0\.002 ms, under half the median 0\.047 ms/);
  });

  it('honest kernels are accepted with their time: one that builds a lookup table on its first launch, one that reads its outputs', async () => {
    for (const warmup of [1, 0]) {
      const { pattern, result } = await tuneWith(lookupTable, { warmup });
      expect(pattern.status, `warm-up ${warmup}`).toBe('ok');
      // Without a warm-up the table is built in the first timed launch: one slow sample, the median unchanged.
      expect(pattern.timeMs).toBe(HONEST_MS);
      expect(pattern.stats?.maxMs).toBe(warmup === 0 ? 10 * HONEST_MS : HONEST_MS);
      expect(result.best?.timeMs).toBe(HONEST_MS);
    }
    // A kernel that skips its work when its outputs already hold a result: every timed launch starts from reset
    // outputs, so it always works, and its time is the honest one.
    const { pattern } = await tuneWith((l) => (l.outputs.kind === 'result' ? skip : work));
    expect(pattern.status).toBe('ok');
    expect(pattern.timeMs).toBe(HONEST_MS);
  });

  it('records the verified launches of an accepted configuration, reproducibly from the seed', async () => {
    const seeds = new Set<number>();
    for (const earlyStop of [false, 100] as const) {
      const { honest, pattern } = await tuneWith(() => work, { earlyStop });
      for (const r of [pattern, honest]) {
        const v = r.verified!;
        seeds.add(v.seed!);
        expect(v.inputSets).toBe(2);
        expect(v.of).toBe(ITERATIONS);
        // The early stop's probe is verified too once there is a best to stop against (the second configuration).
        const probing = earlyStop !== false && r === honest;
        expect(v.timedLaunches).toEqual(verificationPlan(v.seed!, ITERATIONS, probing));
        expect(v.timedLaunches.length).toBeGreaterThanOrEqual(RANDOM_VERIFIED_LAUNCHES + 1);
        expect(describeVerification(v)).toMatch(/^input sets 1–2, timed launch(es)? [\d, –]+ and the last of 32$/);
      }
    }
    // A fresh seed for every configuration, from the OS's cryptographic source.
    expect(seeds.size).toBe(4);
  });

  it('a configuration whose checks are clearly slower than the best gets no timed series', async () => {
    const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
    const backend = new FakeBackend({ model: { timeMs: (v) => (v.defines.block_size_x === '128' ? 10 * HONEST_MS : HONEST_MS) } });
    const result = await kernel.tune(test, { block_size_x: [256, 128] }, [], { backend, iterations: ITERATIONS });
    const slow = result.results[1]!;
    expect(slow.status).toBe('stopped_early');
    expect(slow.timeMs).toBe(10 * HONEST_MS);
    expect(slow.stats?.samplesMs).toEqual([10 * HONEST_MS, 10 * HONEST_MS]);
    expect(slow.verified).toEqual({ inputSets: 2, timedLaunches: [], of: 0 });
    expect(describeVerification(slow.verified!)).toBe('input sets 1–2');
    expect(slow.note).toBe('stopped after its checks: the faster took 0.4700 ms, more than 1.5x the best so far (0.04700 ms)');
    expect(backend.log.filter((e) => e.kind === 'time' && e.defines.block_size_x === '128')).toEqual([]);
  });

  it('a configuration stopped early at its probe had the probe verified', async () => {
    const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
    // As fast as the best on its module's first launch (the first check; the series' warm-up), ten times slower after.
    const slowAfterFirst: FakeBehaviour = (l) => ({ works: true, timeMs: l.launchOfModule === 1 ? HONEST_MS : 10 * HONEST_MS });
    const backend = new FakeBackend({ model: { timeMs: () => HONEST_MS, behaviour: (v) => (v.defines.block_size_x === '128' ? slowAfterFirst : undefined) } });
    const result = await kernel.tune(test, { block_size_x: [256, 128] }, [], { backend, iterations: ITERATIONS });
    const slow = result.results[1]!;
    expect(slow.status).toBe('stopped_early');
    expect(slow.verified).toEqual({ inputSets: 2, timedLaunches: verificationPlan(slow.verified!.seed!, ITERATIONS, true).filter((i) => i <= PROBE_LAUNCHES), of: PROBE_LAUNCHES, seed: slow.verified!.seed });
    expect(describeVerification(slow.verified!)).toMatch(/^input sets 1–2, (timed launch(es)? [12](–2)? and )?the last of 3$/);
    expect(slow.note).toBe('stopped after 3 timed launches: their median 0.4700 ms is more than 1.5x the best so far (0.04700 ms)');
  });
});

describe('the verified launches', () => {
  it('are the last, the probe\'s last when probing, and RANDOM_VERIFIED_LAUNCHES others drawn from the seed', () => {
    const picked = new Set<number>();
    for (let seed = 0; seed < 400; seed++) {
      const plan = verificationPlan(seed, ITERATIONS, false);
      expect(plan).toEqual(verificationPlan(seed, ITERATIONS, false));
      expect(plan).toHaveLength(RANDOM_VERIFIED_LAUNCHES + 1);
      expect(plan.at(-1)).toBe(ITERATIONS);
      expect([...plan].sort((a, b) => a - b)).toEqual(plan);
      for (const i of plan.slice(0, -1)) picked.add(i);
      expect(verificationPlan(seed, ITERATIONS, true)).toEqual([...new Set([...plan, PROBE_LAUNCHES])].sort((a, b) => a - b));
    }
    // Every earlier launch can be chosen: no launch count is safe from verification.
    expect([...picked].sort((a, b) => a - b)).toEqual(Array.from({ length: ITERATIONS - 1 }, (_, i) => i + 1));
    expect(verificationPlan(7, 1, false)).toEqual([1]);
    expect(verificationPlan(7, 3, false)).toEqual([1, 2, 3]);
  });

  it('are described for the report', () => {
    expect(describeVerification({ inputSets: 2, timedLaunches: [7, 19, 28, 32], of: 32, seed: 1 })).toBe('input sets 1–2, timed launches 7, 19, 28 and the last of 32');
    expect(describeVerification({ inputSets: 2, timedLaunches: [2, 3], of: 3, seed: 1 })).toBe('input sets 1–2, timed launch 2 and the last of 3');
    expect(describeVerification({ inputSets: 2, timedLaunches: [1, 3, 4, 5, 7, 9], of: 9, seed: 1 })).toBe('input sets 1–2, timed launches 1, 3–5, 7 and the last of 9');
    expect(describeVerification({ inputSets: 2, timedLaunches: [32], of: 32, seed: 1, mode: 'kernel_tuner' })).toBe(`input sets 1–2, the outputs after the last of 32 timed launches: ${KERNEL_TUNER_TIMING_UNCHECKED}`);
    expect(describeVerification({ inputSets: 2, timedLaunches: [1], of: 1, seed: 1 })).toBe('input sets 1–2, the one timed launch');
  });
});

describe('timed launches that disagree', () => {
  it('are flagged when a minority is far faster (the fastest under half the median)', () => {
    const samples = [...Array(28).fill(HONEST_MS), ...Array(4).fill(IDLE_MS)];
    expect(timingDisagreement(samples, [5, 12, 20, 32])).toBe('its timed launches disagree: launch 29 took 0.002 ms, under half the median 0.047 ms (launches that skip their work look like this)');
  });

  it('are flagged when a majority is far faster than the verified launches (the median under half of theirs)', () => {
    const samples = Array.from({ length: 32 }, (_, i) => ([4, 11, 23, 32].includes(i + 1) ? HONEST_MS : IDLE_MS * 10));
    expect(timingDisagreement(samples, [4, 11, 23, 32])).toBe(
      'its timed launches disagree: their median 0.02 ms is under half the 0.047 ms of the launches whose outputs were verified (4, 11, 23, 32), as when the others skip work',
    );
    // At the ratio itself they agree.
    expect(timingDisagreement(samples.map((t) => (t === HONEST_MS ? t : DISAGREEMENT_RATIO * HONEST_MS)), [4, 11, 23, 32])).toBeUndefined();
  });

  it('never flags the real timing samples of honest kernels (every example cache, whichever launches are verified)', () => {
    const examples = join(__dirname, '..', '..', 'examples');
    let checked = 0;
    for (const name of readdirSync(examples)) {
      let text: string;
      try {
        text = readFileSync(join(examples, name, 'cache.json'), 'utf8');
      } catch {
        continue;
      }
      for (const [key, entry] of parseCacheText(name, text).entries) {
        const samples = entry['times'] as number[] | undefined;
        if (!Array.isArray(samples) || samples.length < 2) continue;
        // The worst choice for the second test: the slowest launches as the verified ones (and the last).
        const slowest = samples
          .map((t, i) => [t, i + 1] as const)
          .sort((a, b) => b[0] - a[0])
          .slice(0, RANDOM_VERIFIED_LAUNCHES)
          .map(([, i]) => i);
        const verified = [...new Set([...slowest, samples.length])].sort((a, b) => a - b);
        expect(timingDisagreement(samples, verified), `${name} ${key}: ${samples.join(', ')}`).toBeUndefined();
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(150);
  });
});

/** Honest launches 5 % under and 5 % over their median in turn: its 95 % interval never narrows to ±1 %, so the series runs to its maximum. */
const spreading: FakeBehaviour = (l) => ({ works: true, timeMs: HONEST_MS * (l.launchOfModule % 2 === 0 ? 0.95 : 1.05) });

describe('an adaptive series', () => {
  const adaptive = (overrides: Partial<AdaptiveLaunches> = {}): TuneOptions => ({ iterations: { ...DEFAULT_LAUNCHES, ...overrides } });

  it('stops at its first checkpoint from the minimum on where the median is known, verifying that last launch', async () => {
    for (let round = 0; round < 20; round++) {
      const { pattern, honest } = await tuneWith(() => work, adaptive());
      for (const r of [pattern, honest]) {
        const v = r.verified!;
        const plan = verificationPlan(v.seed!, DEFAULT_LAUNCHES, false);
        // Every launch takes the same time: the median is known as soon as the rule may stop.
        expect(v.of).toBe(plan.find((c) => c >= DEFAULT_LAUNCHES.min));
        expect(v.of).toBeLessThanOrEqual(DEFAULT_LAUNCHES.min + MAX_CHECKPOINT_GAP - 1);
        expect(v.timedLaunches).toEqual(plan.filter((c) => c <= v.of));
        expect(r.stats?.samplesMs).toHaveLength(v.of);
        expect(r.stats?.medianIntervalMs).toEqual([HONEST_MS, HONEST_MS]);
        expect(r.timeMs).toBe(HONEST_MS);
      }
    }
  });

  it('runs to its maximum when the median is not known within the precision, and never past it', async () => {
    const { pattern } = await tuneWith(spreading, adaptive({ max: 20 }));
    expect(pattern.status).toBe('ok');
    expect(pattern.verified?.of).toBe(20);
    expect(pattern.stats?.samplesMs).toHaveLength(20);
    // The same spread within a coarser precision stops sooner.
    const coarse = await tuneWith(spreading, adaptive({ max: 20, precision: 0.06 }));
    expect(coarse.pattern.verified!.of).toBeLessThan(20);
    expect(coarse.pattern.verified!.of).toBeGreaterThanOrEqual(DEFAULT_LAUNCHES.min);
  });

  it('a kernel idle after K launches is rejected whenever one of its timed launches idles, for every K up to the maximum', async () => {
    // Steady times: the series stops early, so a kernel that idles later never idles while measured.
    for (let k = 1; k <= DEFAULT_LAUNCHES.max + WARMUP + 2; k++) {
      const outcome = await tuneWith(idleAfter(k), adaptive());
      const { pattern } = outcome;
      const at = `K = ${k}: ${pattern.status} ${pattern.error?.message ?? ''}`;
      // Idle from timed launch K - WARMUP + 1 on: within the minimum, which every series reaches.
      if (k - WARMUP + 1 <= DEFAULT_LAUNCHES.min) expectRejected(outcome);
      if (pattern.status === 'ok') {
        expect(pattern.stats!.samplesMs.length, at).toBeLessThanOrEqual(k - WARMUP);
        expect(pattern.timeMs, at).toBe(HONEST_MS);
      } else {
        expectRejected(outcome);
        if (k > 1) expect(pattern.error?.message, at).toMatch(/^wrong result on timed launch \d+ of at most 32 .*c \(never written\)/);
      }
    }
    // Times that spread: every series runs to the maximum, and every K that idles within it is rejected.
    for (let k = 1; k - WARMUP + 1 <= DEFAULT_LAUNCHES.max; k++) {
      const idle = idleAfter(k);
      const outcome = await tuneWith((l) => (idle(l).works ? spreading(l) : skip), adaptive());
      expectRejected(outcome);
    }
  });

  it('a kernel that bets on where the series stops (right on the checks and at the minimum, idle between) is rejected', async () => {
    const atMinimum = WARMUP + DEFAULT_LAUNCHES.min;
    for (let round = 0; round < 20; round++) {
      const outcome = await tuneWith((l) => (l.launchOfModule <= 2 || l.launchOfModule === atMinimum ? work : skip), adaptive());
      expectRejected(outcome);
      expect(outcome.pattern.status).toBe('wrong_result');
    }
  });

  it('checkpoints: one every 1 to MAX_CHECKPOINT_GAP launches up to the maximum, the probe when probing, reproducible from the seed', () => {
    const chosen = new Set<number>();
    for (let seed = 0; seed < 400; seed++) {
      const plan = verificationPlan(seed, DEFAULT_LAUNCHES, false);
      expect(plan).toEqual(verificationPlan(seed, DEFAULT_LAUNCHES, false));
      expect(plan.at(-1)).toBe(DEFAULT_LAUNCHES.max);
      expect(plan[0]).toBeLessThanOrEqual(MAX_CHECKPOINT_GAP);
      for (let i = 1; i < plan.length; i++) expect(plan[i]! - plan[i - 1]!).toBeGreaterThanOrEqual(1);
      for (let i = 1; i < plan.length - 1; i++) expect(plan[i]! - plan[i - 1]!).toBeLessThanOrEqual(MAX_CHECKPOINT_GAP);
      expect(verificationPlan(seed, DEFAULT_LAUNCHES, true)).toEqual([...new Set([...plan, PROBE_LAUNCHES])].sort((a, b) => a - b));
      for (const c of plan) chosen.add(c);
    }
    // No launch is safe from being a checkpoint, nor from being the last.
    expect([...chosen].sort((a, b) => a - b)).toEqual(Array.from({ length: DEFAULT_LAUNCHES.max }, (_, i) => i + 1));
  });

  it('ends where its median is known, at its maximum, or early once it cannot be the best', () => {
    const steady = Array(DEFAULT_LAUNCHES.min).fill(1);
    expect(seriesEnd(steady.slice(0, -1), DEFAULT_LAUNCHES, undefined)).toBeUndefined(); // under the minimum
    expect(seriesEnd(steady, DEFAULT_LAUNCHES, undefined)).toBe('precision');
    expect(seriesEnd([...steady.slice(0, -1), 1.02], DEFAULT_LAUNCHES, undefined)).toBeUndefined(); // the 95 % interval reaches 2 %
    expect(seriesEnd(Array.from({ length: 32 }, (_, i) => 1 + (i % 3) * 0.05), DEFAULT_LAUNCHES, undefined)).toBe('maximum');
    expect(seriesEnd([2, 2, 2], DEFAULT_LAUNCHES, 1.5)).toBe('early');
    expect(seriesEnd([2, 2], DEFAULT_LAUNCHES, 1.5)).toBeUndefined(); // the probe has 3 launches
    expect(seriesEnd(Array(32).fill(2), 32, 1.5)).toBe('count'); // its last launch ran: nothing left to save
  });
});

describe('the stopping rule on the recorded samples of every example cache', () => {
  /**
   * Where the series stops on a recorded series of 32 launches, with the checkpoints of `seed`, and its median then. A
   * recorded series is "steady" when the medians of its halves agree within the precision: one whose clock moved in the
   * middle (seen in matmul_naive's cache: a 4 % step at launch 11) has no median known to that precision even at 32
   * launches, so it cannot tell which order is right.
   */
  const replayed = (samples: readonly number[], seed: number) => {
    const stop = verificationPlan(seed, DEFAULT_LAUNCHES, false).find((c) => seriesEnd(samples.slice(0, c), DEFAULT_LAUNCHES, undefined) !== undefined)!;
    const steady = Math.abs(median(samples.slice(16)) / median(samples.slice(0, 16)) - 1) <= DEFAULT_LAUNCHES.precision;
    return { launches: stop, medianMs: median(samples.slice(0, stop)), fullMs: median(samples), steady };
  };

  it('stops within its minimum and maximum, where steady series agree with their 32 launches and are ranked as they rank', () => {
    const examples = join(__dirname, '..', '..', 'examples');
    let series = 0;
    for (const name of readdirSync(examples)) {
      let text: string;
      try {
        text = readFileSync(join(examples, name, 'cache.json'), 'utf8');
      } catch {
        continue;
      }
      for (const seed of [1, 2, 3]) {
        const rows = parseCacheText(name, text).entries.flatMap(([key, entry]) => {
          const samples = entry['times'] as number[] | undefined;
          return Array.isArray(samples) && samples.length === 32 ? [{ key, ...replayed(samples, seed + key.length) }] : [];
        });
        if (rows.length === 0) continue;
        series += rows.length;
        for (const r of rows) {
          expect(r.launches, `${name} ${r.key}`).toBeGreaterThanOrEqual(DEFAULT_LAUNCHES.min);
          expect(r.launches, `${name} ${r.key}`).toBeLessThanOrEqual(DEFAULT_LAUNCHES.max);
          if (r.steady) expect(Math.abs(r.medianMs / r.fullMs - 1), `${name} ${r.key}`).toBeLessThanOrEqual(DEFAULT_LAUNCHES.precision);
        }
        const steady = rows.filter((r) => r.steady);
        // Steady configurations whose 32-launch medians differ by more than twice the precision keep their order.
        for (const a of steady) for (const b of steady) if (a.fullMs * (1 + 2 * DEFAULT_LAUNCHES.precision) < b.fullMs) expect(a.medianMs, `${name}: ${a.key} before ${b.key}`).toBeLessThan(b.medianMs);
        const best = (by: (r: (typeof rows)[number]) => number) => steady.reduce((x, y) => (by(y) < by(x) ? y : x)).key;
        expect(best((r) => r.medianMs), name).toBe(best((r) => r.fullMs));
      }
    }
    expect(series).toBeGreaterThan(3 * 150);
  });

  it('saves most launches where the times are steady: the tiled matmul stops at 7 to 9 of 32', () => {
    const text = readFileSync(join(__dirname, '..', '..', 'examples', 'matmul_tiled', 'cache.json'), 'utf8');
    const launches = parseCacheText('matmul_tiled', text).entries.flatMap(([key, entry]) => {
      const samples = entry['times'] as number[] | undefined;
      return Array.isArray(samples) && samples.length === 32 ? [replayed(samples, key.length).launches] : [];
    });
    expect(launches.length).toBe(17);
    expect(Math.max(...launches)).toBeLessThanOrEqual(DEFAULT_LAUNCHES.min + MAX_CHECKPOINT_GAP - 1);
  });
});

describe('timed as Kernel Tuner times', () => {
  it('starts every launch from an idle GPU without resets, compares the outputs after the series only, and says what it cannot check', async () => {
    const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
    const backend = new FakeBackend({ model: { timeMs: () => HONEST_MS } });
    // With a launch time limit given, the reference kernel is not timed: every timed request is the configuration's.
    const result = await kernel.tune(test, { block_size_x: [256] }, [], { backend, iterations: ITERATIONS, timing: 'kernel_tuner', launchTimeoutMs: 1000 });
    const r = result.results[0]!;
    expect(r.status).toBe('ok');
    expect(r.verified).toMatchObject({ inputSets: 2, timedLaunches: [ITERATIONS], of: ITERATIONS, mode: 'kernel_tuner' });
    expect(r.note).toBe(KERNEL_TUNER_TIMING_UNCHECKED);
    const series = backend.log.filter((e) => e.kind === 'time');
    expect(series.every((e) => e.idleBeforeEach === true && e.resetBeforeEach === false && e.compared === false)).toBe(true);
  });

  it('lets a kernel that idles after its first launches through with a time it did not earn: the check it cannot make', async () => {
    // Verified timing rejects it; timed as Kernel Tuner does, the outputs its early launches wrote pass for the idle ones'.
    expectRejected(await tuneWith(idleAfter(4), { iterations: ITERATIONS }));
    const { pattern } = await tuneWith(idleAfter(4), { iterations: ITERATIONS, timing: 'kernel_tuner' });
    expect(pattern.status).toBe('ok');
    expect(pattern.timeMs).toBe(IDLE_MS);
    // A kernel that does its work on the checks' module only finds the outputs reset before its series.
    let checksModule: unknown;
    const onlyChecked: FakeBehaviour = (l) => ((checksModule ??= l.memory) === l.memory ? work : skip);
    const none = await tuneWith(onlyChecked, { iterations: ITERATIONS, timing: 'kernel_tuner' });
    expect(none.pattern.status).toBe('wrong_result');
  });
});

describe('the settings of the number of timed launches', () => {
  it('are refused outside their range, each with what it takes', () => {
    expect(launchCountProblems({})).toEqual([]);
    expect(launchCountProblems({ precision: 0.05, minIterations: 10, maxIterations: 100 })).toEqual([]);
    const messages = (s: Parameters<typeof launchCountProblems>[0]) => launchCountProblems(s).map((p) => `${p.field} ${p.message}`);
    expect(messages({ precision: 1 })).toEqual([
      'precision must be a fraction of the median from 0.001 (0.1 %) to 0.1 (10 %), is 1 (a fraction of the median: 1 % is 0.01): the series stops once the 95 % interval of its median lies within ±precision of it',
    ]);
    expect(messages({ precision: 0 })[0]).toMatch(/^precision must be a fraction of the median from 0\.001 \(0\.1 %\) to 0\.1 \(10 %\), is 0: /);
    expect(messages({ precision: 'tight' })[0]).toMatch(/, is "tight": /);
    expect(messages({ minIterations: 3 })).toEqual(['minIterations must be an integer from 6 to 1000 (is 3): the 95 % interval of a median needs at least 6 launches']);
    expect(messages({ minIterations: 40 })).toEqual([]); // the maximum follows a larger minimum
    expect(messages({ minIterations: 40, maxIterations: 20 })).toEqual(['maxIterations must be at least minIterations, 40 (is 20)']);
    expect(messages({ iterations: 32, precision: 0.02 })).toEqual(['iterations fixes the number of timed launches, while a minimum, a maximum or a precision makes it adapt to the kernel: give one or the other']);
    expect(messages({ iterations: 0 })).toEqual(['iterations must be an integer from 1 to 1000 (is 0)']);
  });

  it('reach the tuner through TunableKernel.tune, which refuses a bad one before any GPU work', async () => {
    const kernel = await TunableKernel.create(SOURCE, { fileName: 'vector_add.cu' });
    const backend = new FakeBackend({ model: { timeMs: () => HONEST_MS } });
    await expect(kernel.tune(test, { block_size_x: [256] }, [], { backend, iterations: { precision: 0.5 } })).rejects.toThrow(/^iterations\.precision must be a fraction of the median from 0\.001/);
    expect(backend.log).toEqual([]);
  });
});
