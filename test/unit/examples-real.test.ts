// The real-world examples (examples/real: files of llm.c and NVIDIA's cuda-samples as their projects have them, with a
// spec per tuned kernel), checked without a GPU or NVRTC (CI has nvcc 13, without the cuBLAS headers):
//  - the files are the upstream ones byte for byte (the git blob ids listed in the README), and Common/ holds exactly
//    the headers the samples include;
//  - every spec loads: its kernel parses, its template arguments name it, its arguments resolve against the signature;
//  - the programs the compilers get: every local header found, the host code blanked for NVRTC, the file's values of
//    its tunable #defines read;
//  - the search space has the size the README states, and every configuration launches the geometry the file's host
//    code does (every output element has its thread);
//  - nvcc compiles the whole file, as the tuner would fall back to, at two configurations with the tuner's defines.
// That NVRTC compiles the device units, and that every configuration is correct, is test/gpu/real-files.test.ts.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSpec, REAL_EXAMPLE_SPECS, type LoadedSpec, type RealExampleSpec } from '../../examples/load';
import { NvccCompiler } from '../../src/gpu';
import { findCudaToolkit } from '../../src/gpu/toolkit';
import { candidatePrograms, compileSources, type CompileSources } from '../../src/tuner/compile/compile-sources';
import { defines, Geometry, type LaunchGeometry } from '../../src/tuner/space/geometry';
import { resolveTestSpec } from '../../src/tuner/spec/input-spec';
import { SearchSpace } from '../../src/tuner/space/search-space';
import type { Config } from '../../src/tuner/types';

const root = path.resolve(__dirname, '..', '..');
const examplesDir = path.join(root, 'examples');
const realDir = path.join(examplesDir, 'real');
const readme = readFileSync(path.join(realDir, 'README.md'), 'utf8');
/** The block limits of every GPU since Volta: the space sizes in the README assume them. */
const DEVICE_LIMITS = { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] as const };
const STATIC_SHARED_LIMIT = 48 * 1024;

const toolkit = findCudaToolkit();
const nvccAvailable = await NvccCompiler.available();
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-real-examples-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const nvcc = new NvccCompiler({ defaultArch: 'sm_90', tempDir: scratch });

type Scalars = Record<string, number>;

interface Expectation {
  /** The local headers the file reaches, directly or not, by file name. */
  headers: string[];
  /** What the file #defines for the tunable parameters (the reference configuration's values). */
  fileValues?: Record<string, string>;
  /** The host function blanked for NVRTC that shows the host program is there (main, or the launcher). */
  host: RegExp;
  /** Toolkit headers the whole file needs that a toolkit may lack (nvcc cannot compile it without them). */
  needs?: string[];
  /** Asserts that a configuration's launch is the one the file's host code makes, covering every output element. */
  launch(g: LaunchGeometry, c: Config, s: Scalars): void;
}

const LLM_C_NEEDS = ['cublas_v2.h', 'cublasLt.h'];
const COMMON = ['helper_cuda.h', 'helper_string.h'];

const EXPECTED: Record<RealExampleSpec, Expectation> = {
  'real/softmax_forward_kernel4.yaml': {
    headers: ['common.h'],
    host: /^main \(softmax_forward\.cu:654\)$/,
    needs: LLM_C_NEEDS,
    launch: (g, c, s) => {
      expect(g.grid).toEqual([s.N, 1, 1]); // one block per row
      expect(g.sharedMemBytes).toBe((Number(c.block_size_x) / 32) * 4); // a float per warp
    },
  },
  'real/layernorm_forward_kernel3.yaml': {
    headers: ['common.h'],
    host: /^main \(layernorm_forward\.cu:537\)$/,
    needs: LLM_C_NEEDS,
    launch: (g, _c, s) => {
      expect(g.grid[0]).toBe(Math.ceil((s.N! * 32) / g.block[0])); // ceil_div(N * 32, block_size)
      expect((g.grid[0] * g.block[0]) / 32).toBeGreaterThanOrEqual(s.N!); // a warp per row
    },
  },
  'real/gelu_forward_kernel2.yaml': {
    headers: ['common.h'],
    host: /^main \(gelu_forward\.cu:105\)$/,
    needs: LLM_C_NEEDS,
    launch: (g, _c, s) => {
      expect(s.N! % 8).toBe(0); // whole Packed128s
      expect(g.grid[0]).toBe(Math.ceil(s.N! / (g.block[0] * 8)));
      expect(g.grid[0] * g.block[0] * 8).toBeGreaterThanOrEqual(s.N!);
    },
  },
  'real/encoder_forward_kernel3.yaml': {
    headers: ['common.h'],
    host: /^main \(encoder_forward\.cu:175\)$/,
    needs: LLM_C_NEEDS,
    launch: (g, _c, s) => {
      const n = s.B! * s.T! * s.C!;
      expect(s.C! % 8).toBe(0); // a Packed128 never straddles two rows
      expect(g.grid[0]).toBe(Math.ceil(n / (g.block[0] * 8)));
      expect(g.grid[0] * g.block[0] * 8).toBeGreaterThanOrEqual(n);
    },
  },
  'real/vectorAdd.yaml': {
    headers: COMMON,
    host: /^main \(vectorAdd\.cu:59\)$/,
    launch: (g, _c, s) => {
      expect(g.grid[0]).toBe(Math.ceil(s.numElements! / g.block[0]));
      expect(s.numElements! % g.block[0]).not.toBe(0); // the last block is partial: the bounds check matters
    },
  },
  'real/matrixMul.yaml': {
    headers: [...COMMON, 'helper_functions.h', 'helper_image.h', 'helper_timer.h', 'exception.h'],
    host: /^main \(matrixMul\.cu:287\)$/,
    launch: (g, _c, s) => {
      expect(g.block[0]).toBe(g.block[1]); // threads(block_size, block_size)
      // No bounds checks: the tiles cover C (hA x wB) exactly, and wA is a whole number of tiles.
      expect([g.grid[0] * g.block[0], g.grid[1] * g.block[1]]).toEqual([s.wB, 1152]);
      expect(s.wA! % g.block[0]).toBe(0);
    },
  },
  'real/fp16ScalarProduct.yaml': {
    headers: COMMON,
    fileValues: { NUM_OF_THREADS: '128' },
    host: /^main \(fp16ScalarProduct\.cu:146\)$/,
    launch: (g) => {
      expect(g.grid).toEqual([128, 1, 1]); // <<<NUM_OF_BLOCKS, NUM_OF_THREADS>>>, one result per block
      expect(g.block).toEqual([128, 1, 1]);
    },
  },
  'real/reduce6.yaml': {
    headers: [],
    host: /^reduce \(reduction_kernel\.cu:633\)$/,
    launch: (g, c) => {
      expect(g.grid).toEqual([1, 1, 1]); // one block: g_odata[0] is the whole sum
      expect(g.sharedMemBytes).toBe(Number(c.block_size_x) <= 32 ? 2 * Number(c.block_size_x) * 4 : Number(c.block_size_x) * 4); // smemSize
      expect([32, 64, 128, 256, 512]).toContain(g.block[0]); // the host's reduce6 switch, and its shared-memory steps
    },
  },
  'real/transposeNoBankConflicts.yaml': {
    headers: ['helper_cuda.h', 'helper_string.h', 'helper_image.h', 'exception.h'],
    fileValues: { TILE_DIM: '32', BLOCK_ROWS: '16' },
    host: /^main \(transpose\.cu:360\)$/,
    launch: (g, c, s) => {
      expect(g.block).toEqual([c.TILE_DIM, c.BLOCK_ROWS, 1]); // threads(TILE_DIM, BLOCK_ROWS)
      expect([g.grid[0] * Number(c.TILE_DIM), g.grid[1] * Number(c.TILE_DIM)]).toEqual([s.width, s.height]); // whole tiles
      expect(Number(c.TILE_DIM) % Number(c.BLOCK_ROWS)).toBe(0);
    },
  },
};

function spaceOf(loaded: LoadedSpec): SearchSpace {
  return new SearchSpace(loaded.tuneParams, loaded.restrictions, { deviceLimits: DEVICE_LIMITS, ...(loaded.spec.blockSizeNames && { blockSizeNames: loaded.spec.blockSizeNames }) });
}

function scalarsOf(loaded: LoadedSpec): Scalars {
  return resolveTestSpec({ arguments: loaded.spec.arguments, problemSize: loaded.spec.problemSize }, loaded.kernel.signature).scalars;
}

function geometryOf(loaded: LoadedSpec, scalars: Scalars): Geometry {
  const { gridDivX, gridDivY, gridDivZ, blockSizeNames, sharedMemBytes } = loaded.options;
  return new Geometry(
    {
      problemSize: loaded.spec.problemSize,
      ...(gridDivX !== undefined && { gridDivX }),
      ...(gridDivY !== undefined && { gridDivY }),
      ...(gridDivZ !== undefined && { gridDivZ }),
      ...(blockSizeNames && { blockSizeNames }),
      ...(sharedMemBytes !== undefined && { sharedMemBytes }),
    },
    { paramNames: Object.keys(loaded.tuneParams), scalarNames: Object.keys(scalars) },
  );
}

function sourcesOf(loaded: LoadedSpec): Promise<CompileSources> {
  return compileSources(loaded.source, { filePath: loaded.file, includePaths: loaded.spec.includePaths, tunableNames: Object.keys(loaded.tuneParams), toolkit });
}

/** The number of configurations the README's table gives the spec. */
function statedSpace(spec: string): number | undefined {
  const name = path.basename(spec);
  const row = readme.split('\n').find((l) => l.startsWith(`| [${name}](${name}) |`));
  const m = row && /\| (\d+) \|$/.exec(row.trimEnd());
  return m ? Number(m[1]) : undefined;
}

/** Git's id of a file's content (`git hash-object`). */
function gitBlobId(file: string): string {
  const content = readFileSync(file);
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

const toolkitHas = (header: string): boolean => toolkit?.includeDirs.some((d) => existsSync(path.join(d, header))) ?? false;

describe('examples/real: the files', () => {
  const listed = [...readme.matchAll(/^([0-9a-f]{40}) {2}(\S+)$/gm)].map((m) => ({ id: m[1]!, file: m[2]! }));

  it('are the upstream files byte for byte: every file of the projects is listed in the README with its git blob id', () => {
    const vendored = [...filesUnder(path.join(realDir, 'llm.c')), ...filesUnder(path.join(realDir, 'cuda-samples'))].map((f) => path.relative(realDir, f));
    expect(listed.map((l) => l.file).sort()).toEqual(vendored.sort());
    for (const { id, file } of listed) expect(gitBlobId(path.join(realDir, file)), file).toBe(id);
    expect(vendored).toContain('llm.c/LICENSE');
    expect(vendored).toContain('cuda-samples/LICENSE');
  });

  it('hold, of cuda-samples/Common, exactly the headers the samples include', async () => {
    const used = new Set<string>();
    for (const spec of REAL_EXAMPLE_SPECS) {
      const loaded = await loadSpec(path.join(examplesDir, spec));
      for (const h of (await sourcesOf(loaded)).localHeaders) if (h.includes(`${path.sep}Common${path.sep}`)) used.add(path.basename(h));
    }
    expect([...used].sort()).toEqual(readdirSync(path.join(realDir, 'cuda-samples', 'Common')).sort());
  });

  it('are the ones the table names, one row per spec, and every spec is exported', () => {
    const rows = readme.split('\n').filter((l) => /^\| \[[^\]]+\.yaml\]/.test(l));
    expect(rows.map((r) => /^\| \[([^\]]+)\]/.exec(r)![1]).sort()).toEqual(REAL_EXAMPLE_SPECS.map((s) => path.basename(s)).sort());
    expect(readdirSync(realDir).filter((f) => f.endsWith('.yaml')).sort()).toEqual(REAL_EXAMPLE_SPECS.map((s) => path.basename(s)).sort());
    expect(readme).toContain('node dist/cli.js tune examples/real/');
  });
});

describe.each(REAL_EXAMPLE_SPECS)('examples/%s', (spec) => {
  const expected = EXPECTED[spec];

  it('loads: the kernel parses and the arguments resolve against its signature', async () => {
    const loaded = await loadSpec(path.join(examplesDir, spec));
    expect(loaded.kernel.name).toBe(loaded.spec.kernel);
    expect(loaded.file.startsWith(realDir + path.sep)).toBe(true);
    const { data } = loaded.test.resolve(loaded.kernel.signature);
    if (data.kind !== 'spec') throw new Error('a spec test resolves to a spec');
    expect(data.test.arguments.map((a) => a.name)).toEqual(loaded.kernel.signature.parameters.map((p) => p.name));
    expect(data.test.arguments.some((a) => a.kind === 'buffer' && a.output)).toBe(true);
    if (loaded.spec.templateArgs) expect(loaded.kernel.nameExpression).toBe(`${loaded.spec.kernel}<${loaded.spec.templateArgs.join(', ')}>`);
  });

  it('gives NVRTC the device unit (local headers found, host code blanked) and nvcc the whole file', async () => {
    const loaded = await loadSpec(path.join(examplesDir, spec));
    const sources = await sourcesOf(loaded);
    expect(sources.localHeaders.map((h) => path.basename(h)).sort()).toEqual([...expected.headers].sort());
    for (const h of sources.localHeaders) expect(h.startsWith(realDir + path.sep), h).toBe(true);
    expect(sources.fileValues).toEqual(expected.fileValues ?? {});
    expect(sources.blankedHost.some((b) => expected.host.test(b)), sources.blankedHost.join(', ')).toBe(true);
    if ('unavailable' in sources.nvrtc) throw new Error(`no NVRTC program: ${sources.nvrtc.unavailable}`);
    const hostProgram = /\bint\s+main\s*\(|\bvoid\s+reduce\s*\(/;
    expect(sources.nvrtc.source).not.toMatch(hostProgram);
    expect(sources.nvcc.source).toMatch(hostProgram);
    expect(sources.nvrtc.source).toMatch(new RegExp(`__global__[\\s\\S]*\\b${loaded.spec.kernel}\\s*\\(`));
    for (const name of Object.keys(expected.fileValues ?? {})) {
      for (const program of [sources.nvrtc, sources.nvcc]) expect(program.source).not.toMatch(new RegExp(`#define\\s+${name}\\b`));
    }
    // Every local header is in NVRTC's memory under the spelling the file includes it by.
    expect(Object.keys(sources.nvrtc.headers)).toEqual(expect.arrayContaining(expected.headers));
  });

  it('has the search space its README row states, each configuration launched as the host code launches it', async () => {
    const loaded = await loadSpec(path.join(examplesDir, spec));
    const space = spaceOf(loaded);
    expect(space.size).toBe(statedSpace(spec));
    const scalars = scalarsOf(loaded);
    const geometry = geometryOf(loaded, scalars);
    for (const config of space.configs()) {
      const g = geometry.launch(config, scalars);
      expect(g.block[0] * g.block[1] * g.block[2]).toBeLessThanOrEqual(DEVICE_LIMITS.maxThreadsPerBlock);
      expect(g.sharedMemBytes).toBeLessThanOrEqual(STATIC_SHARED_LIMIT);
      expected.launch(g, config, scalars);
    }
    // The reference configuration (the file's own values, else the first) is in the space.
    const first = space.config(0);
    const reference = { ...first, ...Object.fromEntries(Object.entries(expected.fileValues ?? {}).map(([k, v]) => [k, Number(v)])) };
    expect([...space.configs()]).toContainEqual(reference);
  });

  const skipNvcc = !nvccAvailable ? 'no nvcc' : expected.needs?.filter((h) => !toolkitHas(h)).map((h) => `this toolkit has no ${h}`).join(', ');
  it.skipIf(Boolean(skipNvcc))(`compiles with nvcc as a whole file at the first and last configuration${skipNvcc ? ` (skipped: ${skipNvcc})` : ''}`, { timeout: 300_000 }, async () => {
    const loaded = await loadSpec(path.join(examplesDir, spec));
    const sources = await sourcesOf(loaded);
    const [program] = candidatePrograms(sources, path.basename(loaded.file), ['nvcc']).programs;
    const scalars = scalarsOf(loaded);
    const geometry = geometryOf(loaded, scalars);
    const space = spaceOf(loaded);
    const configs = [...new Set([0, space.size - 1])].map((i) => space.config(i));
    await Promise.all(
      configs.map(async (config) => {
        const compiled = await nvcc.compile({
          source: program!.source,
          fileName: program!.fileName,
          nameExpressions: [loaded.kernel.nameExpression],
          defines: defines(config, geometry.launch(config, scalars), geometry.blockSizeNames),
          includePaths: program!.includePaths ?? [],
          headers: program!.headers ?? {},
        });
        expect(compiled.cubin.subarray(0, 4).toString('latin1'), JSON.stringify(config)).toBe('\x7fELF');
        expect(compiled.loweredNames[loaded.kernel.nameExpression], JSON.stringify(config)).toBeTruthy();
      }),
    );
  });
});
