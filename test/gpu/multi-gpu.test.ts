// Several GPUs and shards on the device (node --test after bundling: dist/gpu-tests/multi-gpu.test.js). On a host with
// one GPU these run the same code with one worker: the search, the GPU recorded with each result, shards and merging.
//  - brute force over every GPU of the first GPU's model: each GPU loads the oracle, generates the inputs and runs the
//    oracle itself, and every configuration checks out against the outputs on the GPU that ran it; each result names
//    that GPU (ordinal and PCI address), and the first configurations start on different GPUs;
//  - a search split into two shards (each into its own cache) and merged holds every configuration once, as a single
//    run's cache does.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadExample, type LoadedSpec } from '../../examples/load';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { mergeCaches } from '../../src/tuner/cache/merge';
import type { GpuBackend } from '../../src/tuner/run/gpu-backend';
import type { TuneOptions } from '../../src/tuner/tunable-kernel';
import type { TuneResult } from '../../src/tuner/types';
import { gpuSkipReason } from '../support/gpu-available';
import { openGpusOfFirstModel } from '../support/gpus';

const root = path.resolve(__dirname, '..', '..');
const examplesDir = path.join(root, 'examples');

const skip = gpuSkipReason();
if (skip) console.log(`# multi-GPU tests skipped: ${skip}`);
const test = (name: string, fn: () => Promise<void>): void => {
  it(name, { skip, timeout: 600_000 }, fn);
};

function summary(result: TuneResult): string {
  return result.results.map((r) => `  ${r.key}: ${r.status} on GPU ${r.gpu?.ordinal ?? '-'}${r.error ? ` (${r.error.message.slice(0, 300)})` : ''}`).join('\n');
}

describe('several GPUs and shards on the device', () => {
  let gpus: GpuBackend[] = [];
  let scratch = '';
  before(async () => {
    if (skip) return;
    scratch = mkdtempSync(path.join(tmpdir(), 'lkt-multi-gpu-'));
    gpus = await openGpusOfFirstModel();
    console.log(`# ${gpus.length} GPU${gpus.length > 1 ? 's' : ''}: ${gpus.map(({ gpu: { device: d } }) => `${d.ordinal} ${d.name} ${d.pciBusId}`).join('; ')}`);
  });
  after(async () => {
    await Promise.all(gpus.map((g) => g.dispose()));
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const tune = (ex: LoadedSpec, options: TuneOptions): Promise<TuneResult> => ex.kernel.tune(ex.test, ex.tuneParams, ex.restrictions, { ...ex.options, iterations: 7, strategy: 'brute_force', ...options });

  test('brute force over every GPU: each configuration verified and timed on one GPU, which its result names', async () => {
    const ex = await loadExample(examplesDir, 'vector_add');
    const result = await tune(ex, { backend: gpus });
    const report = summary(result);
    assert.deepEqual(result.results.map((r) => r.status), ['ok', 'ok', 'ok', 'ok', 'ok'], report);
    const descriptions = await Promise.all(gpus.map((g) => g.describe()));
    assert.deepEqual(result.gpus?.map((g) => g.ordinal), descriptions.map((d) => d.ordinal));
    for (const r of result.results) {
      const d = descriptions.find((x) => x.ordinal === r.gpu?.ordinal);
      assert.ok(d, `${r.key} names no GPU of the search\n${report}`);
      assert.equal(r.gpu!.pciBusId, d.pciBusId);
    }
    // Every GPU takes a configuration as the search starts.
    assert.equal(new Set(result.results.map((r) => r.gpu!.ordinal)).size, Math.min(gpus.length, result.results.length), report);
  });

  test('two shards tuned into their own caches merge into one cache of every configuration', async () => {
    const ex = await loadExample(examplesDir, 'matmul_tiled');
    const shards = [0, 1].map((index) => path.join(scratch, `shard-${index}.json`));
    const results = [];
    for (const [index, cache] of shards.entries()) results.push(await tune(ex, { backend: gpus, shard: { index, count: 2 }, cache }));
    const merged = path.join(scratch, 'merged.json');
    const m = mergeCaches(shards, merged);
    assert.deepEqual(m.shards, ['0/2', '1/2']);
    assert.equal(m.duplicates, 0);
    const cache = CacheFile.load(merged);
    assert.equal(cache.size, 44); // the whole space: 40 that fit the device and 4 over its limits
    assert.equal(cache.header.lkt_shard, undefined);
    const keys = results.flatMap((r) => r.results.map((x) => x.key));
    assert.equal(new Set(keys).size, 44, 'the shards are disjoint and cover the space');
    // A configuration over the limits never reaches a GPU, and one that fails to compile fails before any GPU loads it.
    const ranOnGpu = (status: string) => status !== 'exceeds_device_limits' && status !== 'compile_error';
    for (const r of cache.results()) if (ranOnGpu(r.status)) assert.ok(r.gpu, `${r.key} (${r.status}) records its GPU`);
    assert.ok(cache.results().some((r) => r.status === 'ok'));
  });
});
