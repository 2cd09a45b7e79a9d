// The compile pool with real processes: dist/gpu-worker.js started with --compile-only, hosting the scripted test
// double test/support/fake-addon.cjs (its fake NVRTC names, in each cubin, the process that compiled it and how many
// other compiles that process was running).
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AbortError, CompileError, CompilePool, GpuError, GpuWorker, KernelTimeoutError, WorkerCrashedError, type CompiledProgram } from '../../src/gpu';

const FAKE_ADDON = path.resolve(__dirname, '../support/fake-addon.cjs');
const ENV = { LKT_GPU_ADDON_MODULE: FAKE_ADDON };

const pools: CompilePool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.dispose()));
});

function pool(size: number): CompilePool {
  const p = new CompilePool({ size, env: ENV });
  pools.push(p);
  return p;
}

/** A program the fake NVRTC answers after `delayMs`; `tag` tells the compiles apart. */
function program(tag: string, delayMs = 0, extra = '') {
  return { source: `// fake-delay-ms: ${delayMs}\n// ${tag}\n${extra}`, nameExpressions: ['vector_add'] };
}

/** What the fake cubin says of the compile: the process and how many other compiles it was running. */
function origin(compiled: CompiledProgram): { pid: number; alongside: number } {
  return JSON.parse(compiled.cubin.toString('utf8')) as { pid: number; alongside: number };
}

describe('CompilePool', () => {
  it('runs as many compiles at once as it has processes, one per process, and starts no more processes than that', async () => {
    const compiles = pool(3);
    const results = await Promise.all(Array.from({ length: 7 }, (_, i) => compiles.compile(program(`c${i}`, 150), 'sm_90')));
    const origins = results.map(origin);
    expect(new Set(origins.map((o) => o.pid)).size).toBe(3);
    expect(compiles.started).toBe(3);
    expect(origins.every((o) => o.alongside === 0)).toBe(true);
    expect(results.every((r) => r.backend === 'nvrtc' && r.arch === 'sm_90')).toBe(true);
  });

  it('starts a process only when every started one is busy', async () => {
    const compiles = pool(4);
    for (let i = 0; i < 3; i++) await compiles.compile(program(`one at a time ${i}`), 'sm_90');
    expect(compiles.started).toBe(1);
  });

  it("gives the compiler's error as a CompileError with its log, and the process compiles on", async () => {
    const compiles = pool(1);
    const failed = await compiles.compile(program('bad', 0, '#error nope'), 'sm_90').catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(CompileError);
    expect((failed as CompileError).log).toContain('#error directive: nope');
    const first = origin(await compiles.compile(program('after the error'), 'sm_90'));
    expect(compiles.started).toBe(1);
    expect(first.alongside).toBe(0);
  });

  it('takes down the process of a compile past its time limit and compiles the next one in a fresh process', async () => {
    const compiles = pool(1);
    const warm = origin(await compiles.compile(program('warm'), 'sm_90'));
    const late = await compiles.compile(program('slow', 10_000), 'sm_90', { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(KernelTimeoutError);
    const next = origin(await compiles.compile(program('next'), 'sm_90'));
    expect(next.pid).not.toBe(warm.pid);
    expect(next.alongside).toBe(0); // the slow compile is not still running beside it
  });

  it('rejects an aborted compile, whether it runs or waits for a process', async () => {
    const compiles = pool(1);
    const running = new AbortController();
    const waiting = new AbortController();
    const first = compiles.compile(program('running', 10_000), 'sm_90', { signal: running.signal }).catch((e: unknown) => e);
    const second = compiles.compile(program('waiting', 0), 'sm_90', { signal: waiting.signal }).catch((e: unknown) => e);
    waiting.abort();
    expect(await second).toBeInstanceOf(AbortError);
    running.abort();
    expect(await first).toBeInstanceOf(AbortError);
    expect(origin(await compiles.compile(program('after'), 'sm_90')).alongside).toBe(0);
  });

  it('says the compiler crashed when a program kills its process on every attempt, and compiles on afterwards', async () => {
    const compiles = pool(1);
    const crashed = await compiles.compile(program('crash', 0, '// fake-crash'), 'sm_90').catch((e: unknown) => e);
    expect(crashed).toBeInstanceOf(WorkerCrashedError);
    expect((crashed as WorkerCrashedError).code).toBe('WORKER_REPLACED');
    expect(origin(await compiles.compile(program('after the crash'), 'sm_90')).alongside).toBe(0);
  });

  it('stays open until every owner has disposed it; then waiting compiles fail and processes exit', async () => {
    const compiles = pool(1);
    compiles.share();
    await compiles.dispose();
    await compiles.compile(program('still open'), 'sm_90');
    const running = compiles.compile(program('running', 5_000), 'sm_90').catch((e: unknown) => e);
    const waiting = compiles.compile(program('waiting'), 'sm_90').catch((e: unknown) => e);
    await compiles.dispose();
    for (const e of [await running, await waiting]) expect((e as GpuError).code).toBe('WORKER_DISPOSED');
    await expect(compiles.compile(program('too late'), 'sm_90')).rejects.toMatchObject({ code: 'WORKER_DISPOSED' });
  });
});

describe('a compile process (GpuWorker compileOnly)', () => {
  it('answers compiles and refuses every request that would need a CUDA context', async () => {
    const worker = new GpuWorker({ compileOnly: true, env: ENV });
    try {
      await expect(worker.request('memInfo', {})).rejects.toThrow(/compile process, started with --compile-only/);
      const compiled = await worker.request('compile', { source: '// k', fileName: 'k.cu', nameExpressions: ['k'], options: ['--gpu-architecture=sm_90'], wantPtx: false });
      expect(compiled.loweredNames).toEqual({ k: 'k' });
    } finally {
      await worker.dispose();
    }
  });
});
