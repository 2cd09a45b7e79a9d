// The shipped examples (examples/*) and the GPU tests' kernels (test/fixtures/gpu), checked without a GPU: every spec
// validates and fits its kernel's signature, every search space has the size its README states, and every kernel
// compiles with nvcc for sm_90 at its #ifndef defaults and at configurations of its space, with the tuner's defines.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EXAMPLE_NAMES, loadExample, loadSpec, type LoadedSpec } from '../../examples/load';
import { CompileError, NvccCompiler, type CompiledProgram } from '../../src/gpu';
import { defines, Geometry, type GeometrySpec } from '../../src/tuner/space/geometry';
import { resolveTestSpec } from '../../src/tuner/spec/input-spec';
import { SearchSpace } from '../../src/tuner/space/search-space';
import type { Config } from '../../src/tuner/types';

const root = path.resolve(__dirname, '..', '..');
const examplesDir = path.join(root, 'examples');
const fixturesDir = path.join(root, 'test', 'fixtures', 'gpu');
/** The block limits of the H100 and H200 (and of every GPU since Volta): the space sizes in the READMEs assume them. */
const DEVICE_LIMITS = { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] as const };
/** The static shared memory a kernel may declare (ptxas refuses more). */
const STATIC_SHARED_LIMIT = 48 * 1024;

const nvccAvailable = await NvccCompiler.available();
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-examples-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const nvcc = new NvccCompiler({ defaultArch: 'sm_90', tempDir: scratch });

function spaceOf(loaded: LoadedSpec): SearchSpace {
  return new SearchSpace(loaded.tuneParams, loaded.restrictions, { deviceLimits: DEVICE_LIMITS, ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) });
}

function geometryOf(loaded: LoadedSpec, scalarNames: string[]): Geometry {
  const { gridDivX, gridDivY, gridDivZ, blockSizeNames } = loaded.options;
  const spec: GeometrySpec = {
    problemSize: loaded.spec.problemSize,
    ...(gridDivX !== undefined && { gridDivX }),
    ...(gridDivY !== undefined && { gridDivY }),
    ...(gridDivZ !== undefined && { gridDivZ }),
    ...(blockSizeNames && { blockSizeNames }),
  };
  return new Geometry(spec, { paramNames: Object.keys(loaded.tuneParams), scalarNames });
}

/** The program the tuner compiles for a configuration: the source with the defines of geometry.ts. */
function compileAt(loaded: LoadedSpec, config: Config | undefined): Promise<CompiledProgram> {
  const program = { source: loaded.source, fileName: path.basename(loaded.file), nameExpressions: [loaded.kernel.nameExpression] };
  if (!config) return nvcc.compile(program);
  const scalars = resolveTestSpec({ arguments: loaded.spec.arguments, problemSize: loaded.spec.problemSize }, loaded.kernel.signature).scalars;
  const geometry = geometryOf(loaded, Object.keys(scalars));
  return nvcc.compile({ ...program, defines: defines(config, geometry.launch(config, scalars), geometry.blockSizeNames) });
}

/** Static shared memory of matmul_tiled: a (block_size_y*tile_size_y) x block_size_x A tile, a block_size_x x (block_size_x*tile_size_x) B tile. */
function matmulTiledSharedBytes(c: Config): number {
  const [bx, by, tx, ty] = [c.block_size_x, c.block_size_y, c.tile_size_x, c.tile_size_y].map(Number) as [number, number, number, number];
  return 4 * (by * ty * bx + bx * bx * tx);
}

/** Runs at most two compiles at once (CI has two cores). */
async function eachLimited<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all([lane(), lane()]);
}

describe.each(EXAMPLE_NAMES)('example %s', (name) => {
  const readme = (): string => readFileSync(path.join(examplesDir, name, 'README.md'), 'utf8');

  it('has a valid spec whose kernel parses and whose inputs resolve against its signature', async () => {
    const loaded = await loadExample(examplesDir, name);
    expect(path.dirname(loaded.file)).toBe(path.join(examplesDir, name));
    expect(loaded.kernel.name).toBe(loaded.spec.kernel);
    const { data, problemSize } = loaded.test.resolve(loaded.kernel.signature);
    expect(data.kind).toBe('spec');
    if (data.kind !== 'spec') return;
    expect(data.test.arguments.map((a) => a.name)).toEqual(loaded.kernel.signature.parameters.map((p) => p.name));
    expect(data.test.arguments.filter((a) => a.kind === 'buffer' && a.output).length).toBeGreaterThan(0);
    expect(problemSize).toEqual(loaded.spec.problemSize);
    expect(readme()).toContain(`npx llm-kernel-tuner tune examples/${name}/tune.yaml`);
  });

  it('has the search space its README states, and a launch geometry for every configuration', async () => {
    const loaded = await loadExample(examplesDir, name);
    // "N configurations", or "N configurations, M of them searched" where some are over the device's limits.
    const stated = /Search space: (\d+) configurations(?:, (\d+) of them searched)?/.exec(readme());
    expect(stated, 'README states "Search space: N configurations"').not.toBeNull();
    const space = spaceOf(loaded);
    expect(space.size + space.excluded.length).toBe(Number(stated![1]));
    expect(space.size).toBe(Number(stated![2] ?? stated![1]));

    const scalars = resolveTestSpec({ arguments: loaded.spec.arguments, problemSize: loaded.spec.problemSize }, loaded.kernel.signature).scalars;
    const geometry = geometryOf(loaded, Object.keys(scalars));
    for (const config of space.configs()) {
      const { grid, block, problemSize } = geometry.launch(config, scalars);
      expect(block[0] * block[1] * block[2]).toBeLessThanOrEqual(DEVICE_LIMITS.maxThreadsPerBlock);
      if (name === 'reduction') {
        expect(grid).toEqual([config.num_blocks, 1, 1]); // a grid-stride loop: the grid is the parameter
        continue;
      }
      // Every element is some thread's: threads times the elements each one handles (tile_size_*) cover the problem.
      const covered = [grid[0] * block[0] * Number(config.tile_size_x ?? 1), grid[1] * block[1] * Number(config.tile_size_y ?? 1)];
      if (name === 'matmul_tiled') expect(covered).toEqual(problemSize.slice(0, 2)); // no bounds checks: exactly
      else for (const d of [0, 1]) expect(covered[d]).toBeGreaterThanOrEqual(problemSize[d]!);
    }
  });

  it.skipIf(!nvccAvailable)('compiles with nvcc for sm_90 at its defaults and at the first, middle and last configuration', { timeout: 180_000 }, async () => {
    const loaded = await loadExample(examplesDir, name);
    const space = spaceOf(loaded);
    // matmul_tiled's space holds configurations that cannot compile (checked in their own test below).
    const compilable = [...space.configs()].filter((c) => name !== 'matmul_tiled' || matmulTiledSharedBytes(c) <= STATIC_SHARED_LIMIT);
    const picks = [...new Set([0, compilable.length >> 1, compilable.length - 1])].map((i) => compilable[i]!);
    await eachLimited([undefined, ...picks], async (config) => {
      const compiled = await compileAt(loaded, config);
      expect(compiled.cubin.subarray(0, 4).toString('latin1'), JSON.stringify(config)).toBe('\x7fELF');
      expect(compiled.loweredNames[loaded.kernel.nameExpression]).toBeTruthy();
    });
  });
});

describe('example matmul_tiled: the configurations over 48 KiB of static shared memory', () => {
  it('are the four with block_size_x 64 and tile_size_x >= 4', async () => {
    const space = spaceOf(await loadExample(examplesDir, 'matmul_tiled'));
    const over = [...space.configs()].filter((c) => matmulTiledSharedBytes(c) > STATIC_SHARED_LIMIT);
    expect(over.map((c) => [c.block_size_x, c.tile_size_x])).toEqual([
      [64, 4],
      [64, 8],
      [64, 4],
      [64, 8],
    ]);
  });

  it.skipIf(!nvccAvailable)('fail to compile with ptxas\'s shared memory error, while 48 KiB exactly compiles', { timeout: 120_000 }, async () => {
    const loaded = await loadExample(examplesDir, 'matmul_tiled');
    const atLimit = { block_size_x: 64, block_size_y: 16, tile_size_x: 2, tile_size_y: 4 };
    expect(matmulTiledSharedBytes(atLimit)).toBe(STATIC_SHARED_LIMIT);
    expect((await compileAt(loaded, atLimit)).cubin.byteLength).toBeGreaterThan(0);
    await expect(compileAt(loaded, { ...atLimit, tile_size_x: 4 })).rejects.toThrow(CompileError);
    await expect(compileAt(loaded, { ...atLimit, tile_size_x: 4 })).rejects.toThrow(/too much shared data/);
  });
});

describe('GPU test kernels (test/fixtures/gpu)', () => {
  const wrongKernels = readdirSync(fixturesDir).filter((f) => /^wrong_.*\.cu$/.test(f));

  it('are the nine wrong kernels the GPU tests expect', () => {
    expect(wrongKernels.sort()).toEqual(
      [
        'wrong_cached_result.cu',
        'wrong_fault.cu',
        'wrong_infinite_loop.cu',
        'wrong_overwrites_input.cu',
        'wrong_race.cu',
        'wrong_slightly_off.cu',
        'wrong_writes_half.cu',
        'wrong_writes_nothing.cu',
        'wrong_writes_zeros.cu',
      ].sort(),
    );
  });

  it('parse, and the wrong-kernel spec resolves against each of them and against its oracle', async () => {
    for (const file of wrongKernels) {
      const loaded = await loadSpec(path.join(fixturesDir, 'wrong_kernels.yaml'), { file: path.join(fixturesDir, file) });
      expect(loaded.test.resolve(loaded.kernel.signature).data.kind, file).toBe('spec');
      expect(loaded.options.oracle?.code).toBe(readFileSync(path.join(examplesDir, 'vector_add', 'vector_add.cu'), 'utf8'));
      expect(new SearchSpace(loaded.tuneParams, loaded.restrictions).size).toBe(2);
    }
    const slow = await loadSpec(path.join(fixturesDir, 'slow_vector_add.yaml'));
    expect(slow.test.resolve(slow.kernel.signature).data.kind).toBe('spec');
  });

  it.skipIf(!nvccAvailable)('compile with nvcc for sm_90 with the defect on and off, and the slow kernel at both settings', { timeout: 240_000 }, async () => {
    const jobs: { loaded: LoadedSpec; config: Config }[] = [];
    for (const file of wrongKernels) {
      const loaded = await loadSpec(path.join(fixturesDir, 'wrong_kernels.yaml'), { file: path.join(fixturesDir, file) });
      for (const broken of [1, 0]) jobs.push({ loaded, config: { block_size_x: 1024, broken } });
    }
    const slow = await loadSpec(path.join(fixturesDir, 'slow_vector_add.yaml'));
    for (const extra_fma of [0, 2048]) jobs.push({ loaded: slow, config: { block_size_x: 256, extra_fma } });
    await eachLimited(jobs, async ({ loaded, config }) => {
      const compiled = await compileAt(loaded, config);
      expect(compiled.loweredNames['vector_add'], `${loaded.file} ${JSON.stringify(config)}`).toBeTruthy();
    });
  });
});
