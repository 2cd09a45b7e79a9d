// The benchmark hub's kernels on the device (node --test after bundling: dist/gpu-tests/benchmark-hub.test.js; no vitest,
// no node_modules there), tuned from their files unmodified (test/fixtures/benchmark-hub) with the specs of
// examples/benchmark_hub. Every test is skipped, with the reason, where the driver or a device is missing.
//  - each spec of examples/benchmark_hub tunes a random sample of its space, every configuration checked against its
//    reference (convolution_naive, dedispersion_naive, the reference configuration) and none failing, compiled with
//    NVRTC (the preprocessor's view of the file finds the kernels whose declaration holds an #if);
//  - the convolution kernel reads its filter from __constant__ memory, filled before every run from the data its
//    reference takes as an argument: without the constant memory, every configuration is wrong;
//  - the hub's own T1 problem of the convolution tunes as it is.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadSpec } from '../../examples/load';
import { t4Results } from '../../src/tuner/cache/t4';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';
import { KernelTest } from '../../src/tuner/tunable-kernel';
import { gpuSkipReason } from '../support/gpu-available';
import { assertAllCorrect, report } from '../support/tune-results';

// The bundle runs from dist/gpu-tests/; the repository root is two levels up.
const root = path.resolve(__dirname, '..', '..');
const hubDir = path.join(root, 'examples', 'benchmark_hub');

const skip = gpuSkipReason();
if (skip) console.log(`# benchmark hub GPU tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 600_000 }, fn);
};

/** How many configurations each spec samples: enough to cover its parameters, few enough for a test. */
const SAMPLES: Record<string, number> = { 'convolution_milo.yaml': 16, 'dedispersion_milo.yaml': 10, 'hotspot_milo.yaml': 16, 'gemm_milo.yaml': 12 };

describe('the benchmark hub\'s kernels on the device', () => {
  let gpu: GpuBackend;
  before(async () => {
    if (!skip) gpu = await GpuBackend.open();
  });
  after(async () => {
    await gpu?.dispose();
  });

  for (const [spec, samples] of Object.entries(SAMPLES)) {
    test(`examples/benchmark_hub/${spec} tunes from the hub's file, every configuration of a random sample correct`, async () => {
      const loaded = await loadSpec(path.join(hubDir, spec));
      const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, {
        ...loaded.options,
        backend: gpu,
        iterations: 7,
        strategy: 'random_sample',
        maxFevals: samples,
        seed: 7,
      });
      const message = report(spec, result);
      console.log(`# ${message.split('\n').join('\n# ')}`);
      assert.equal(result.results.length, samples, message);
      assertAllCorrect(result, message, 'max_fevals');
      assert.equal(result.compiler?.backend, 'nvrtc', message);
      assert.ok(t4Results(result.results).results.every((r) => r.invalidity === 'correct' && r.correctness === 1), message);
    });
  }

  test('the convolution kernel reads its filter from constant memory: without it, every configuration is wrong', async () => {
    const loaded = await loadSpec(path.join(hubDir, 'convolution_milo.yaml'));
    const withoutConstants = KernelTest.fromSpec({ arguments: loaded.spec.arguments, problemSize: loaded.spec.problemSize, seed: loaded.spec.seed });
    const result = await loaded.kernel.tune(withoutConstants, loaded.tuneParams, loaded.restrictions, {
      ...loaded.options,
      backend: gpu,
      iterations: 3,
      strategy: 'random_sample',
      maxFevals: 3,
      seed: 7,
    });
    const message = report('convolution_milo.yaml without constantMemory', result);
    console.log(`# ${message.split('\n').join('\n# ')}`);
    assert.deepEqual(
      result.results.map((r) => r.status),
      ['wrong_result', 'wrong_result', 'wrong_result'],
      message,
    );
  });

  test("the hub's T1 problem of the convolution (kernels/convolution_milo.json) tunes as it is, constant memory and all", async () => {
    const loaded = await loadSpec(path.join(root, 'test', 'fixtures', 'benchmark-hub', 'kernels', 'convolution_milo.json'));
    const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, {
      ...loaded.options,
      backend: gpu,
      iterations: 7,
      strategy: 'random_sample',
      maxFevals: 8,
      seed: 3,
    });
    const message = report('kernels/convolution_milo.json', result);
    console.log(`# ${message.split('\n').join('\n# ')}`);
    assert.deepEqual(result.reference?.config, loaded.spec.referenceConfig, message);
    assertAllCorrect(result, message, 'max_fevals');
  });

  test('tune --t4 on the device writes results and metadata that name the GPU', async () => {
    const out = mkdtempSync(path.join(tmpdir(), 'lkt-hub-t4-'));
    try {
      const file = path.join(out, 'dedispersion-results.json');
      // The command line bundle beside the tests' folder (dist/ or dist-gpu/).
      const r = spawnSync(process.execPath, [path.resolve(__dirname, '..', 'cli.js'), 'tune', path.join(hubDir, 'dedispersion_milo.yaml'), '--strategy', 'random_sample', '--max-fevals', '3', '--iterations', '5', '--t4', file, '--no-report', '-q'], {
        cwd: root,
        encoding: 'utf8',
        timeout: 300_000,
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const results = JSON.parse(readFileSync(file, 'utf8')) as { results: { invalidity: string }[] };
      assert.equal(results.results.length, 3);
      assert.ok(results.results.every((x) => x.invalidity === 'correct'), JSON.stringify(results));
      const metadata = JSON.parse(readFileSync(path.join(out, 'dedispersion-metadata.json'), 'utf8')) as { metadata: { environment: { device_query: Record<string, { name: string }>; requirements: string[] } } };
      assert.match(metadata.metadata.environment.device_query['llm-kernel-tuner']!.name, /NVIDIA/);
      assert.ok(metadata.metadata.environment.requirements.some((x) => x.startsWith('cuda-driver==')));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
