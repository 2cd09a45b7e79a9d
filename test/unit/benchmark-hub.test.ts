// The benchmark hub's kernels (AutoTuningAssociation/benchmark_hub's files, unmodified, in test/fixtures/benchmark-hub;
// their specs in examples/benchmark_hub), without a GPU: each is found in its file as the preprocessor leaves it (dedispersion's and hotspot's declarations hold an #if,
// gemm's kernel sits in a header of its CUDA build), its spec or T1 problem resolves against it, nvcc compiles it as
// the tuner gives it to the compiler, and each replays a cache the hub recorded on a GPU with `tune --simulate`.
// That every configuration is correct on a GPU is test/gpu/benchmark-hub.test.ts.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSpec } from '../../examples/load';
import { NvccCompiler } from '../../src/gpu';
import { findCudaToolkit } from '../../src/gpu/toolkit';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { candidatePrograms, compileSources } from '../../src/tuner/compile/compile-sources';
import { programOf } from '../../src/tuner/run/backend';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { defines, Geometry } from '../../src/tuner/space/geometry';
import { SearchSpace } from '../../src/tuner/space/search-space';
import type { Config } from '../../src/tuner/types';

const root = path.resolve(__dirname, '..', '..');
const hubDir = path.join(root, 'examples', 'benchmark_hub');
const readme = readFileSync(path.join(hubDir, 'README.md'), 'utf8');
const cli = path.join(root, 'dist', 'cli.js');
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-hub-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const nvccAvailable = await NvccCompiler.available();
const nvcc = new NvccCompiler({ defaultArch: 'sm_90', tempDir: scratch });

interface HubKernel {
  /** The spec or T1 problem, relative to examples/benchmark_hub. */
  spec: string;
  kernel: string;
  /** The file that defines the kernel, relative to examples/benchmark_hub. */
  definedIn: string;
  /** Configurations of the space, as the README states. */
  space: number;
  /** A configuration nvcc compiles, besides the spec's reference configuration. */
  compileAt?: Config;
  /** The cache it replays and the narrowing of the space to configurations that cache holds. */
  cache: string;
  narrowing: Record<string, string>;
  /** The narrowing is the one the cache was cut to (README): the cache holds exactly its configurations. */
  cutBy?: true;
}

/** The hub's files, relative to examples/benchmark_hub. */
const HUB = '../../test/fixtures/benchmark-hub';
const CONVOLUTION_A100 = `${HUB}/cachefiles/convolution_milo/A100.json.gz`;
const HUB_KERNELS: HubKernel[] = [
  { spec: 'convolution_milo.yaml', kernel: 'convolution_kernel', definedIn: `${HUB}/kernels/convolution_milo.cu`, space: 4362, cache: CONVOLUTION_A100, narrowing: {} },
  { spec: `${HUB}/kernels/convolution_milo.json`, kernel: 'convolution_kernel', definedIn: `${HUB}/kernels/convolution_milo.cu`, space: 4362, cache: CONVOLUTION_A100, narrowing: { block_size_x: '16,32,48', tile_size_y: '1,2' } },
  {
    spec: 'dedispersion_milo.yaml',
    kernel: 'dedispersion_kernel',
    definedIn: `${HUB}/kernels/dedisp_milo/dedispersion.cu`,
    space: 11130,
    compileAt: { block_size_x: 8, block_size_y: 32, block_size_z: 1, tile_size_x: 2, tile_size_y: 4, tile_stride_x: 1, tile_stride_y: 0, loop_unroll_factor_channel: 0 },
    cache: 'caches/dedispersion_milo-A100.json',
    narrowing: { block_size_x: '4,8,16,32', block_size_y: '32,64,128', tile_size_x: '1,2', tile_size_y: '1,2,4' },
    cutBy: true,
  },
  {
    spec: 'hotspot_milo.yaml',
    kernel: 'calculate_temp',
    definedIn: `${HUB}/kernels/hotspot_milo.cu`,
    space: 8808,
    compileAt: { grid_width: 4096, grid_height: 4096, block_size_x: 64, block_size_y: 4, tile_size_x: 2, tile_size_y: 3, temporal_tiling_factor: 2, max_tfactor: 10, loop_unroll_factor_t: 2, sh_power: 1 },
    cache: 'caches/hotspot_milo-W7800.json',
    narrowing: { block_size_x: '1', block_size_y: '32', tile_size_x: '1,2,3,4', tile_size_y: '1,2,3,4' },
  },
  {
    spec: `${HUB}/kernels/hotspot_milo.json`,
    kernel: 'calculate_temp',
    definedIn: `${HUB}/kernels/hotspot_milo.cu`,
    space: 82984,
    cache: 'caches/hotspot_milo-W7800.json',
    narrowing: { block_size_x: '1', block_size_y: '32', tile_size_x: '1,2,3,4', tile_size_y: '1,2,3,4', temporal_tiling_factor: '1,2' },
    cutBy: true,
  },
  {
    spec: 'gemm_milo.yaml',
    kernel: 'Xgemm',
    definedIn: `${HUB}/kernels/gemm_milo/xgemm_part4.opencl`,
    space: 100016,
    compileAt: { GEMMK: 0, MWG: 128, NWG: 64, KWG: 16, MDIMC: 32, NDIMC: 8, MDIMA: 32, NDIMB: 8, KWI: 2, VWM: 4, VWN: 1, STRM: 1, STRN: 0, SA: 0, SB: 1, KREG: 1, PRECISION: 32 },
    cache: 'caches/gemm_milo-A6000.json',
    narrowing: { MWG: '16', NWG: '16', KWG: '16', MDIMC: '8', NDIMC: '8', VWM: '1,2', VWN: '1,2,4' },
    cutBy: true,
  },
];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

/** Git's id of a file's content (`git hash-object`). */
function gitBlobId(file: string): string {
  const content = readFileSync(file);
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

const load = (spec: string) => loadSpec(path.join(hubDir, spec));
const narrowed = (tuneParams: Record<string, readonly (number | string | boolean)[]>, narrowing: Record<string, string>) => ({
  ...tuneParams,
  ...Object.fromEntries(Object.entries(narrowing).map(([k, v]) => [k, v.split(',').map(Number)])),
});

describe('examples/benchmark_hub: the files', () => {
  it("are the hub's byte for byte: every file of test/fixtures/benchmark-hub is listed in the README with its git blob id", () => {
    const listed = [...readme.matchAll(/^([0-9a-f]{40}) {2}(\S+)$/gm)].map((m) => ({ id: m[1]!, file: m[2]! }));
    const fixtures = path.join(root, 'test', 'fixtures', 'benchmark-hub');
    const vendored = filesUnder(fixtures).map((f) => path.relative(root, f)).filter((f) => !f.endsWith('README.md'));
    expect(listed.map((l) => l.file).sort()).toEqual(vendored.sort());
    for (const { id, file } of listed) expect(gitBlobId(path.join(root, file)), file).toBe(id);
    expect(vendored).toContain('test/fixtures/benchmark-hub/LICENSE');
  });

  it("parse as Kernel Tuner's users write them, the #if inside a kernel's declaration included, without a configuration", async () => {
    for (const file of [`${HUB}/kernels/dedisp_milo/dedispersion.cu`, `${HUB}/kernels/hotspot_milo.cu`, `${HUB}/kernels/convolution_milo.cu`]) {
      const kernels = await parseKernels(readFileSync(path.join(hubDir, file), 'utf8'), path.basename(file));
      expect(kernels.length, file).toBeGreaterThan(0);
    }
  });
});

describe.each(HUB_KERNELS)('examples/benchmark_hub/$spec', (hub) => {
  it('finds the kernel where the preprocessor puts it and resolves the arguments against its signature', async () => {
    const loaded = await load(hub.spec);
    expect(loaded.kernel.name).toBe(hub.kernel);
    expect(loaded.kernel.signature.file ?? loaded.file).toBe(path.join(hubDir, hub.definedIn));
    const { data } = loaded.test.resolve(loaded.kernel.signature);
    if (data.kind !== 'spec') throw new Error('a spec test resolves to a spec');
    expect(data.test.arguments.map((a) => a.name)).toEqual(loaded.kernel.signature.parameters.map((p) => p.name));
    const space = new SearchSpace(loaded.tuneParams, loaded.restrictions, { deviceLimits: { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] }, ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) });
    expect(space.size + space.excluded.length).toBe(hub.space);
    expect(readme).toContain(`| [${hub.spec}](${hub.spec}) |`);
  });

  it('replays the cache the hub recorded: every configuration of the (narrowed) space, the fastest as the cache has it', async () => {
    const args = ['tune', path.join(hubDir, hub.spec), '--simulate', path.join(hubDir, hub.cache), '--json', '-q', '--no-report'];
    for (const [k, v] of Object.entries(hub.narrowing)) args.push('--param', `${k}=${v}`);
    const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8', timeout: 120_000, maxBuffer: 256 * 1024 ** 2 });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { results: { status: string; key: string; timeMs: number }[]; best: { key: string } };
    const loaded = await load(hub.spec);
    const space = new SearchSpace(narrowed(loaded.tuneParams, hub.narrowing), loaded.restrictions, { ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) });
    const cache = CacheFile.load(path.join(hubDir, hub.cache));
    const recorded = [...space.configs()].map((c) => cache.get(space.key(c))!);
    expect(recorded.length).toBeGreaterThan(50);
    // Each configuration once, with what the hub recorded for it (failures too: compile and launch errors).
    const byKey = (list: readonly { key: string; status: string }[]) => Object.fromEntries(list.map((x) => [x.key, x.status]));
    expect(out.results).toHaveLength(recorded.length);
    expect(byKey(out.results)).toEqual(byKey(recorded));
    const fastest = recorded.filter((x) => x.status === 'ok').reduce((a, b) => (b.timeMs! < a.timeMs! ? b : a));
    expect(out.best.key).toBe(fastest.key);
  });
});

describe.each(HUB_KERNELS.filter((h) => h.compileAt))('examples/benchmark_hub/$spec as the compilers get it', (hub) => {
  it.skipIf(!nvccAvailable)('nvcc compiles the kernel at its reference and another configuration, loop unroll factors as constexpr', { timeout: 300_000 }, async () => {
    const loaded = await load(hub.spec);
    const sources = await compileSources(readFileSync(loaded.file, 'utf8'), {
      filePath: loaded.file,
      fileName: path.basename(loaded.file),
      includePaths: loaded.spec.includePaths,
      tunableNames: Object.keys(loaded.tuneParams),
      toolkit: findCudaToolkit(),
    });
    // The NVRTC device unit keeps the device code a header's macro declares (`INLINE_FUNC` is `__device__ inline`).
    expect(sources.blankedHost.every((b) => /^Xgemm(Upper|Lower) /.test(b)), sources.blankedHost.join(', ')).toBe(true);
    const [program] = candidatePrograms(sources, path.basename(loaded.file), ['nvcc']).programs;
    const scalars = loaded.test.resolve(loaded.kernel.signature).data;
    const scalarValues = scalars.kind === 'spec' ? scalars.test.scalars : {};
    const geometry = new Geometry({ problemSize: loaded.spec.problemSize, ...(loaded.spec.gridDivX && { gridDivX: loaded.spec.gridDivX }), ...(loaded.spec.gridDivY && { gridDivY: loaded.spec.gridDivY }), ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) }, { paramNames: Object.keys(loaded.tuneParams), scalarNames: Object.keys(scalarValues) });
    const reference = loaded.spec.reference ? hub.compileAt! : loaded.spec.referenceConfig!;
    for (const config of [reference, hub.compileAt!]) {
      const request = { ...program!, nameExpression: loaded.kernel.nameExpression, defines: defines(config, geometry.launch(config, scalarValues), geometry.blockSizeNames), compilerOptions: [] };
      const compiled = await nvcc.compile(programOf(request));
      expect(compiled.cubin.subarray(0, 4).toString('latin1'), JSON.stringify(config)).toBe('\x7fELF');
      expect(compiled.log, JSON.stringify(config)).not.toMatch(/unroll pragma/);
    }
  });
});

it('the subsets of the hub\'s caches hold exactly the configurations of their narrowed spaces', async () => {
  for (const hub of HUB_KERNELS.filter((h) => h.cutBy)) {
    const loaded = await load(hub.spec);
    const cache = CacheFile.load(path.join(hubDir, hub.cache));
    const space = new SearchSpace(narrowed(cache.header.tune_params as Record<string, number[]>, hub.narrowing), loaded.restrictions, { ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) });
    expect(cache.results().length, hub.cache).toBe(space.size);
    for (const config of space.configs()) expect(cache.has(space.key(config)), `${hub.cache}: ${space.key(config)}`).toBe(true);
  }
});
