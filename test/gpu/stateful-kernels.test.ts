// Kernels that keep state between launches to skip their work, as real CUDA (test/fixtures/gpu/state_*.cu), tuned on
// the device against the correct vector add: each is rejected and none is the best configuration, while an honest
// kernel with a one-time initialisation is accepted (node --test after bundling: dist/gpu-tests/stateful-kernels.test.js;
// skipped, with the reason, without a driver or a device). The same patterns run on the fake backend in CI
// (test/unit/measurement.test.ts).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadSpec } from '../../examples/load';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { DEFAULT_LAUNCHES } from '../../src/tuner/run/launch-count';
import { describeVerification } from '../../src/tuner/run/measurement';
import type { ConfigResult, TuneParams, TuneResult } from '../../src/tuner/types';
import { gpuSkipReason } from '../support/gpu-available';

// The bundle runs from dist/gpu-tests/; the repository root is two levels up.
const fixturesDir = path.join(path.resolve(__dirname, '..', '..'), 'test', 'fixtures', 'gpu');

const skip = gpuSkipReason();
if (skip) console.log(`# stateful kernel GPU tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 600_000 }, fn);
};

/** One line per result, for assertion messages and the log the lead reads. */
function summary(result: TuneResult): string {
  return result.results
    .map((r) => {
      const time = r.stats ? ` median ${r.stats.medianMs.toFixed(4)} ms, min ${r.stats.minMs.toFixed(4)} ms` : '';
      const verified = r.verified ? ` verified: ${describeVerification(r.verified)}` : '';
      return `  ${JSON.stringify(r.config)}: ${r.status}${time}${verified}${r.error ? ` (${r.error.message.slice(0, 200)})` : ''}`;
    })
    .join('\n');
}

const rejected = (r: ConfigResult) => (r.status === 'wrong_result' || r.status === 'inconsistent_timing') && r.timeMs === undefined;

describe('kernels that keep state between launches, on the device', () => {
  let gpu: GpuBackend;
  before(async () => {
    if (!skip) gpu = await GpuBackend.open();
  });
  after(async () => {
    await gpu?.dispose();
  });

  async function tune(file: string, tuneParams: TuneParams): Promise<{ result: TuneResult; report: string }> {
    const loaded = await loadSpec(path.join(fixturesDir, 'state_kernels.yaml'), { file: path.join(fixturesDir, file) });
    const result = await loaded.kernel.tune(loaded.test, tuneParams, [], { ...loaded.options, backend: gpu });
    const report = `${file}:\n${summary(result)}`;
    console.log(`# ${report.replaceAll('\n', '\n# ')}`);
    return { result, report };
  }

  test('a __device__ launch counter that idles after K launches is rejected for every K the measurement reaches', async () => {
    // 1 warm-up and 32 timed launches in the timed series' own module: idle after 33 or more launches never shows.
    const K = [1, 2, 3, 4, 5, 8, 16, 32, 33, 1000, 0];
    const { result, report } = await tune('state_launch_counter.cu', { block_size_x: [256], idle_after: K });
    const byK = new Map(result.results.map((r) => [Number(r.config.idle_after), r]));
    for (const k of K) {
      const r = byK.get(k)!;
      if (k >= 1 && k <= 32) {
        assert.ok(rejected(r), `idle after ${k} launches must be rejected\n${report}`);
        if (k === 1) assert.match(r.error!.message, /^wrong result on input set 2/, report);
      } else {
        assert.equal(r.status, 'ok', `idle after ${k} launches never idles while measured\n${report}`);
      }
    }
    const honest = byK.get(0)!;
    assert.ok(result.best && [0, 33, 1000].includes(Number(result.best.config.idle_after)), `no idling configuration is best\n${report}`);
    // The ones that never idle while measured are the honest kernel: not faster than it beyond the noise.
    assert.ok(result.best.timeMs! >= 0.9 * honest.timeMs!, report);
  });

  test('with the adaptive series, a launch counter is rejected whenever a timed launch idles, and never accepted faster than honest', async () => {
    // The series stops at a checkpoint from 7 launches on, wherever the median is known within ±1 %: a counter that
    // idles within the minimum always shows it; one that idles later, only if its series reaches it.
    const K = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16, 24, 32, 0];
    const loaded = await loadSpec(path.join(fixturesDir, 'state_kernels.yaml'), { file: path.join(fixturesDir, 'state_launch_counter.cu') });
    const result = await loaded.kernel.tune(loaded.test, { block_size_x: [256], idle_after: K }, [], { ...loaded.options, backend: gpu, iterations: DEFAULT_LAUNCHES });
    const report = `state_launch_counter.cu, adaptive:\n${summary(result)}`;
    console.log(`# ${report.replaceAll('\n', '\n# ')}`);
    const warmup = loaded.options.warmup ?? 1;
    const byK = new Map(result.results.map((r) => [Number(r.config.idle_after), r]));
    const honest = byK.get(0)!;
    assert.equal(honest.status, 'ok', report);
    for (const k of K.filter((k) => k > 0)) {
      const r = byK.get(k)!;
      if (k - warmup + 1 <= DEFAULT_LAUNCHES.min) assert.ok(rejected(r), `idle after ${k} launches idles within the minimum and must be rejected\n${report}`);
      if (!rejected(r)) {
        assert.equal(r.status, 'ok', report);
        // Accepted only where it never idled while timed: then it is the honest kernel.
        assert.ok(r.stats!.samplesMs.length <= k - warmup, `idle after ${k} accepted after ${r.stats!.samplesMs.length} timed launches\n${report}`);
      }
    }
    // The best is a configuration that never idled while it was timed.
    const best = result.best;
    assert.ok(best && (Number(best.config.idle_after) === 0 || best.stats!.samplesMs.length <= Number(best.config.idle_after) - warmup), report);
  });

  for (const file of ['state_address_cache.cu', 'state_checksum_cache.cu', 'state_one_time_flag.cu']) {
    test(`${file} is rejected and the honest configuration is the best`, async () => {
      const { result, report } = await tune(file, { block_size_x: [256], broken: [1, 0] });
      const [cheat, honest] = result.results as [ConfigResult, ConfigResult];
      assert.equal(cheat.config.broken, 1);
      assert.ok(rejected(cheat), report);
      assert.match(cheat.error!.message, file === 'state_one_time_flag.cu' ? /^wrong result on input set 2 / : /^wrong result on timed launch \d+ of 32 /, report);
      assert.equal(honest.status, 'ok', report);
      assert.equal(result.best?.key, honest.key, report);
    });
  }

  test('an honest kernel that builds a lookup table on its first launch is accepted, as fast as without the table', async () => {
    const { result, report } = await tune('state_lookup_table.cu', { block_size_x: [256], lookup: [1, 0] });
    const [table, plain] = result.results as [ConfigResult, ConfigResult];
    assert.equal(table.status, 'ok', report);
    assert.equal(plain.status, 'ok', report);
    assert.equal(table.verified!.timedLaunches.at(-1), 32, report);
    // The table is built in the untimed warm-up; the timed launches read it (an L2-resident table: a few % at most).
    assert.ok(table.timeMs! <= 1.25 * plain.timeMs!, report);
  });
});
