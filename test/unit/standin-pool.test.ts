// The model stand-in's pool for examples/matmul_naive (bench/standin/pools/matmul_naive): a tree of real rewrites the
// server can rely on (every kernel keeps matmul_naive's interface and names one variant, every variant a session can
// keep has children to draw and judge answers, every failing one a fix), whose recorded answers the engine accepts,
// and whose labels are true where a compiler can tell: with nvcc, every kernel compiles at the corners of its search
// space, without spilling registers where a session can keep it, and every "no-compile" one fails.
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkInterface, countConfigurations, mergeTuneParams } from '../../src/engine/candidate/code';
import { CompileError } from '../../src/gpu/errors';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { findNvcc } from '../../src/gpu/toolkit';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { compileRestrictions } from '../../src/tuner/space/restrictions';
import type { Config } from '../../src/tuner/types';
import { childrenOf, LABELS, loadPool, matchVariant, PoolError, UnknownKernelError, type Variant } from '../../bench/standin/pool';

const ROOT = join(__dirname, '..', '..');
const POOLS = join(ROOT, 'bench', 'standin', 'pools');
const pool = loadPool(POOLS, 'matmul_naive');
const ORIGINAL = readFileSync(join(ROOT, 'examples', 'matmul_naive', 'matmul_naive.cu'), 'utf8');

/** Every configuration of the variant's own search space that its restrictions allow. */
function spaceOf(v: Variant): Config[] {
  const names = Object.keys(v.tunableParameters);
  const allowed = compileRestrictions(v.restrictions, names);
  let configs: Config[] = [{}];
  for (const name of names) configs = configs.flatMap((c) => v.tunableParameters[name]!.map((value) => ({ ...c, [name]: value })));
  return configs.filter(allowed);
}

/** The smallest and the largest configuration of the space (by the product of the values): its corners. */
function cornersOf(v: Variant): Config[] {
  const size = (c: Config) => Object.values(c).reduce<number>((p, x) => p * Number(x), 1);
  const sorted = spaceOf(v).sort((a, b) => size(a) - size(b));
  return [...new Set([sorted[0]!, sorted.at(-1)!])];
}

const keeps = (v: Variant) => v.label !== 'wrong' && v.label !== 'no-compile';

describe('the matmul_naive pool', () => {
  it('is a tree of 20 or more rewrites of the original, with every label and crossover children', () => {
    expect(pool.variants.length).toBeGreaterThanOrEqual(20);
    expect(pool.variants[0]!.id).toBe('original');
    expect(pool.variants[0]!.code).toBe(ORIGINAL);
    expect(new Set(pool.variants.map((v) => v.label))).toEqual(new Set(LABELS));
    // The expert session's four steps, as answers.json gives them.
    for (const step of ['step1_shared_tiles', 'step2_register_blocking', 'step3_vectorized', 'step4_double_buffered']) {
      expect(pool.byId.get(step)!.code).toBe(readFileSync(join(ROOT, 'examples', 'matmul_naive', 'expert', `${step}.cu`), 'utf8'));
    }
    expect(pool.byId.get('square_rows')!.parents).toEqual(['step1_shared_tiles', 'tiled_square']);
    expect(pool.variants.filter((v) => v.parents.length >= 2).length).toBeGreaterThanOrEqual(3);
    // Every variant descends from the original.
    const reached = new Set(['original']);
    let size = 0;
    while (reached.size > size) {
      size = reached.size;
      for (const v of pool.variants) if (v.parents.some((p) => reached.has(p))) reached.add(v.id);
    }
    expect(reached.size).toBe(pool.variants.length);
  });

  it('keeps matmul_naive\'s interface in every kernel, and a kernel names exactly one variant', async () => {
    const [original] = await parseKernels(ORIGINAL, 'matmul_naive.cu');
    for (const v of pool.variants) {
      await expect(checkInterface(v.code, original!, 'matmul_naive.cu'), v.id).resolves.toMatchObject({ name: 'matmul_naive' });
      expect(matchVariant(pool, v.code).id).toBe(v.id);
    }
    // The same kernel as a request shows it: the file's #define guards and other comments, another layout.
    const shown = `#ifndef block_size_x\n#define block_size_x 32\n#endif\n// the current kernel\n${pool.byId.get('tiled_square')!.code.replace(/\n {4}/g, '\n\t')}`;
    expect(matchVariant(pool, shown).id).toBe('tiled_square');
    // A rewrite spliced into its parent's file: square_rows's declarations, beside a define of the parent's that the
    // answer left out (the engine keeps it), in another order.
    const parentDefine = pool.byId.get('step2_register_blocking')!.code.split('\n').find((l) => l.startsWith('#define TILE_N'))!;
    const squareRows = pool.byId.get('square_rows')!.code.split('\n');
    const kernelAt = squareRows.findIndex((l) => l.startsWith('__global__'));
    const spliced = [...squareRows.slice(kernelAt), parentDefine, ...squareRows.slice(0, kernelAt)].join('\n');
    expect(matchVariant(pool, spliced).id).toBe('square_rows');
    expect(() => matchVariant(pool, ORIGINAL.replace('sum += A', 'sum -= A'))).toThrow(UnknownKernelError);
    expect(() => matchVariant(pool, ORIGINAL.replace('sum += A', 'sum -= A'))).toThrow(/the closest is original, which differs .* at "[^"]*sum-=A/);
  });

  it('records answers the engine takes: parameters the code uses, restrictions over them, modest search spaces', () => {
    for (const v of pool.variants) {
      const names = Object.keys(v.tunableParameters);
      expect(() => mergeTuneParams({}, v.tunableParameters, v.code), v.id).not.toThrow();
      expect(() => compileRestrictions(v.restrictions, names), v.id).not.toThrow();
      const divisors = [...v.gridDivisors.x, ...v.gridDivisors.y].filter((d) => typeof d === 'string');
      expect(divisors.every((d) => names.includes(d as string)), v.id).toBe(true);
      expect(spaceOf(v).length, v.id).toBeGreaterThan(0);
      // Seconds per evaluation on an H200: the pool's own spaces stay small (the expert steps keep theirs).
      if (!v.file.includes('/expert/')) expect(spaceOf(v).length, v.id).toBeLessThanOrEqual(48);
      expect(countConfigurations(v.tunableParameters), v.id).toBeLessThanOrEqual(96);
    }
  });

  it('gives every variant a session can keep children and judge answers, and every failing one a fix', () => {
    for (const v of pool.variants) {
      if (keeps(v)) {
        expect(childrenOf(pool.variants, v.id).length, v.id).toBeGreaterThan(0);
        expect(v.judge.length, v.id).toBeGreaterThan(0);
      } else {
        expect(v.fix, v.id).toBeDefined();
        expect(keeps(pool.byId.get(v.fix!)!), v.id).toBe(true);
      }
    }
  });

  it('reports every problem of a pool at once, and names the pools there are', () => {
    const dir = mkdtempSync(join(tmpdir(), 'standin-pool-'));
    mkdirSync(join(dir, 'broken'));
    const file = JSON.parse(readFileSync(join(POOLS, 'matmul_naive', 'pool.json'), 'utf8')) as { variants: Record<string, unknown>[] };
    const at = (id: string) => file.variants.find((v) => v.id === id)!;
    (at('tiled_square').parents as string[]).push('nowhere');
    at('tiled_wrong_b').file = '../../../../examples/matmul_naive/matmul_naive.cu';
    delete at('step2_skip_last').fix;
    for (const v of file.variants) v.file = join(POOLS, 'matmul_naive', v.file as string);
    writeFileSync(join(dir, 'broken', 'pool.json'), JSON.stringify(file));
    expect(() => loadPool(dir, 'broken')).toThrow(
      new PoolError(
        [
          'pool broken is inconsistent:',
          '- tiled_square: parent nowhere is not another variant of the pool',
          "- tiled_wrong_b: its kernel is original's (a request's kernel must name one variant)",
          '- step2_skip_last: labelled wrong, it fails, but has no fix to answer a retry with',
        ].join('\n'),
      ),
    );
    expect(() => loadPool(dir, 'matmul')).toThrow(`no pool named "matmul" in ${dir}; the pools are: broken`);
  });

  it.skipIf(!findNvcc())('compiles every kernel with nvcc -arch=sm_90 at the corners of its space (no spills where a session can keep it), and fails every no-compile one', async () => {
    const nvcc = new NvccCompiler({ defaultArch: 'sm_90' });
    const jobs = pool.variants.flatMap((v) => cornersOf(v).map((config) => ({ v, config })));
    const results: { v: Variant; config: Config; outcome: Awaited<ReturnType<NvccCompiler['compile']>> | CompileError }[] = [];
    // Two compiles at a time: nvcc spends most of its time starting up.
    const queue = [...jobs];
    await Promise.all(
      [0, 1].map(async () => {
        for (let job = queue.shift(); job; job = queue.shift()) {
          const defines = { block_size_z: 1, ...job.config } as Record<string, number>;
          const outcome = await nvcc.compile({ source: job.v.code, fileName: `${job.v.id}.cu`, nameExpressions: ['matmul_naive'], defines }).catch((e: unknown) => {
            if (e instanceof CompileError) return e;
            throw e;
          });
          results.push({ ...job, outcome });
        }
      }),
    );
    for (const { v, config, outcome } of results) {
      const where = `${v.id} ${JSON.stringify(config)}`;
      if (v.label === 'no-compile') {
        expect(outcome, where).toBeInstanceOf(CompileError);
        continue;
      }
      if (outcome instanceof CompileError) throw new Error(`${where} does not compile: ${outcome.log}`);
      expect(outcome.log, where).not.toMatch(/warning/i);
      if (keeps(v)) expect(outcome.resources?.matmul_naive, where).toMatchObject({ spillStoreBytes: 0, spillLoadBytes: 0 });
    }
    expect(results.filter((r) => r.v.label === 'no-compile').length).toBeGreaterThanOrEqual(3);
  }, 300_000);
});
