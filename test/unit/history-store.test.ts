import { spawnSync } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HistoryCorruptError, HistoryStore, type HistoryChange, type HistoryEntry } from '../../src/engine/store/history-store.js';

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(join(tmpdir(), 'lkt-history-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function entry(id: string, overrides: Partial<HistoryEntry> = {}): HistoryEntry {
  return {
    id,
    kernelName: 'vector_add',
    filePath: '/work/kernels/vadd.cu',
    createdAt: '2025-01-01T10:00:00.000Z',
    updatedAt: '2025-01-01T10:05:00.000Z',
    device: { name: 'NVIDIA H100 80GB HBM3', computeCapability: '9.0' },
    status: 'completed',
    baselineTimeMs: 1.5,
    bestTimeMs: 0.5,
    speedup: 3,
    steps: [
      { title: 'Tune block size', status: 'accepted', timeMs: 0.9, improvementPct: 40 },
      { title: 'Shared memory', status: 'rejected', reason: 'too little gain' },
    ],
    originalCode: '__global__ void vector_add() {}\n',
    finalCode: '__global__ void vector_add() { /* tuned */ }\n',
    threadId: `thread-${id}`,
    ...overrides,
  };
}

const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

describe('HistoryStore', () => {
  it('keeps a branch\'s parent, the settings and the model exchanges; the list shows the parent without the edited code', async () => {
    const store = new HistoryStore(root);
    const exchange = { purpose: 'plan', model: 'm', params: { temperature: 0 }, messages: [{ role: 'user' as const, content: 'plan it' }], response: { content: '{"steps": []}' }, startedAt: '2025-01-01T10:00:01.000Z', durationMs: 12 };
    await store.save(entry('parent'));
    await store.save(entry('child', { parent: { id: 'parent', threadId: 'thread-parent', stepId: '2', stepTitle: 'Shared memory', editedCode: '__global__ void vector_add() { /* mine */ }\n' }, llmExchanges: [exchange] }));
    expect((await store.get('child'))!).toMatchObject({ parent: { stepId: '2', editedCode: expect.stringContaining('mine') }, llmExchanges: [exchange] });
    const child = (await store.list()).sessions.find((x) => x.id === 'child')!;
    expect(child.parent).toEqual({ id: 'parent', threadId: 'thread-parent', stepId: '2', stepTitle: 'Shared memory' });
    expect(child).not.toHaveProperty('llmExchanges');
    await expect(store.save(entry('bad', { llmExchanges: [{ ...exchange, messages: [{ role: 'robot', content: 'x' }] }] as never }))).rejects.toThrow(/invalid session/);
    await expect(store.save(entry('orphan', { parent: { id: '../etc', threadId: 't', stepId: '1' } }))).rejects.toThrow(/invalid session/);
  });

  it('saves, gets and lists summaries newest first', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('old', { createdAt: '2024-06-01T00:00:00.000Z' }));
    await store.save(entry('new', { createdAt: '2025-03-01T00:00:00.000Z' }));
    await store.save(entry('mid-b', { createdAt: '2025-01-01T00:00:00.000Z' }));
    await store.save(entry('mid-a', { createdAt: '2025-01-01T00:00:00.000Z' }));

    const got = await store.get('new');
    expect(got).toMatchObject({ id: 'new', kernelName: 'vector_add', steps: [{ title: 'Tune block size' }, { reason: 'too little gain' }] });
    expect(await store.get('absent')).toBeUndefined();

    const { sessions, problems } = await store.list();
    expect(problems).toEqual([]);
    expect(sessions.map((s) => s.id)).toEqual(['new', 'mid-b', 'mid-a', 'old']);
    expect(sessions[0]).toMatchObject({ id: 'new', stepCount: 2, speedup: 3, device: { name: 'NVIDIA H100 80GB HBM3' }, threadId: 'thread-new' });
    expect(sessions[0]).not.toHaveProperty('originalCode');
    expect(sessions[0]).not.toHaveProperty('report');
    expect(sessions[0]).not.toHaveProperty('ownerPid');

    // A fresh instance (a reloaded window) reads the same through the index.
    const reloaded = await new HistoryStore(root).list();
    expect(reloaded.sessions).toEqual(sessions);
  });

  it('writes atomically: only session files and the index remain, each valid JSON', async () => {
    const store = new HistoryStore(root);
    for (let i = 0; i < 5; i++) await store.save(entry(`s${i}`));
    await store.update('s1', { status: 'failed', error: 'compile error' });
    await store.delete('s2');
    const names = (await fs.readdir(root)).sort();
    expect(names).toEqual(['.index.json', 's0.json', 's1.json', 's3.json', 's4.json']);
    for (const name of names) expect(() => JSON.parse(readFileSync(join(root, name), 'utf8'))).not.toThrow();
  });

  it('skips and reports corrupt files without failing the listing', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('good'));
    await fs.writeFile(join(root, 'truncated.json'), '{"id": "truncated", "kernelNa');
    await fs.writeFile(join(root, 'wrong-shape.json'), JSON.stringify({ ...entry('wrong-shape'), status: 'exploded' }));
    await fs.writeFile(join(root, 'renamed.json'), JSON.stringify(entry('other-id')));
    await fs.writeFile(join(root, 'notes.txt'), 'not a session');

    const { sessions, problems } = await store.list();
    expect(sessions.map((s) => s.id)).toEqual(['good']);
    expect(problems.map((p) => p.file.split('/').pop()).sort()).toEqual(['renamed.json', 'truncated.json', 'wrong-shape.json']);
    expect(problems.find((p) => p.file.endsWith('wrong-shape.json'))!.message).toMatch(/status/);
    await expect(store.get('truncated')).rejects.toBeInstanceOf(HistoryCorruptError);
  });

  it('answers list() from the index for unchanged files (they are not read again)', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('cached', { speedup: 2 }));
    const path = join(root, 'cached.json');
    const index = JSON.parse(await fs.readFile(join(root, '.index.json'), 'utf8'));
    const stat = await fs.stat(path);
    expect(index.files['cached.json']).toMatchObject({ size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino });

    // Blank the file in place (same inode and size) and put its mtime back: only a reader of the index still sees it.
    const when = new Date('2025-02-02T00:00:00.000Z');
    await fs.utimes(path, when, when);
    await store.list();
    const handle = await fs.open(path, 'r+');
    await handle.write(Buffer.alloc(stat.size, 0x20), 0, stat.size, 0);
    await handle.close();
    await fs.utimes(path, when, when);
    const { sessions, problems } = await new HistoryStore(root).list();
    expect(problems).toEqual([]);
    expect(sessions.map((s) => [s.id, s.speedup])).toEqual([['cached', 2]]);
  });

  it('survives a corrupt index and follows files changed or removed behind its back', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('a', { speedup: 1.1 }));
    await store.save(entry('b'));
    await store.list();
    // Another window rewrites `a` and deletes `b`; a crash left the index half-written.
    await fs.writeFile(join(root, 'a.json'), JSON.stringify(entry('a', { speedup: 7 })));
    await fs.rm(join(root, 'b.json'));
    const { sessions } = await store.list();
    expect(sessions.map((s) => [s.id, s.speedup])).toEqual([['a', 7]]);

    await fs.writeFile(join(root, '.index.json'), '{"version": 1, "files": {');
    const fresh = await new HistoryStore(root).list();
    expect(fresh.sessions.map((s) => [s.id, s.speedup])).toEqual([['a', 7]]);
    expect(fresh.problems).toEqual([]);
  });

  it('updates with a shallow patch, stamps updatedAt, and refuses invalid data without touching the file', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('s', { status: 'running' }));
    const before = Date.now();
    const updated = await store.update('s', { status: 'completed', bestTimeMs: 0.25 });
    expect(updated).toMatchObject({ status: 'completed', bestTimeMs: 0.25, createdAt: '2025-01-01T10:00:00.000Z' });
    expect(Date.parse(updated.updatedAt)).toBeGreaterThanOrEqual(before - 1000);
    const onDisk = await fs.readFile(join(root, 's.json'), 'utf8');
    await expect(store.update('s', { status: 'bogus' as never })).rejects.toThrow(/invalid session/);
    expect(await fs.readFile(join(root, 's.json'), 'utf8')).toBe(onDisk);
    await expect(store.update('missing', { status: 'failed' })).rejects.toThrow(/no session missing/);
    await expect(store.save(entry('../escape'))).rejects.toThrow(/invalid session/);
    await expect(store.get('../escape')).rejects.toThrow(RangeError);
  });

  it('marks sessions left running by a dead process as interrupted, not those of a live one', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('crashed-here', { status: 'running' })); // stamped with our pid: a previous life of this process
    await fs.writeFile(join(root, 'crashed-elsewhere.json'), JSON.stringify({ ...entry('crashed-elsewhere', { status: 'running' }), ownerPid: deadPid() }));
    await fs.writeFile(join(root, 'live-window.json'), JSON.stringify({ ...entry('live-window', { status: 'running' }), ownerPid: process.ppid }));
    await fs.writeFile(join(root, 'legacy.json'), JSON.stringify(entry('legacy', { status: 'running' })));
    await store.save(entry('done', { status: 'completed' }));
    const staleTemp = join(root, '.done.json.1234.abcdef.tmp');
    const freshTemp = join(root, '.done.json.1234.fedcba.tmp');
    await fs.writeFile(staleTemp, '{');
    await fs.writeFile(freshTemp, '{');
    const hourAgo = new Date(Date.now() - 3600_000);
    await fs.utimes(staleTemp, hourAgo, hourAgo);

    const marked = await store.markInterruptedOnStartup();
    expect(marked.sort()).toEqual(['crashed-elsewhere', 'crashed-here', 'legacy']);
    const statuses = Object.fromEntries((await store.list()).sessions.map((s) => [s.id, s.status]));
    expect(statuses).toEqual({ 'crashed-here': 'interrupted', 'crashed-elsewhere': 'interrupted', legacy: 'interrupted', 'live-window': 'running', done: 'completed' });
    expect((await store.get('legacy'))!.error).toMatch(/interrupted/);
    const names = await fs.readdir(root);
    expect(names).not.toContain('.done.json.1234.abcdef.tmp');
    expect(names).toContain('.done.json.1234.fedcba.tmp');
  });

  it('serializes concurrent saves and updates of one id; the last one wins, whole', async () => {
    const store = new HistoryStore(root);
    const big = 'x'.repeat(200_000);
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 20; i++) {
      writes.push(store.save(entry('same', { originalCode: `${i}:${big}`, speedup: i })));
      writes.push(store.update('same', { bestTimeMs: i }));
    }
    await Promise.all(writes);
    const final = await store.get('same');
    expect(final).toMatchObject({ speedup: 19, bestTimeMs: 19 });
    expect(final!.originalCode.startsWith('19:')).toBe(true);
    expect((await fs.readdir(root)).sort()).toEqual(['.index.json', 'same.json']);

    // Two windows (two store instances) racing on the same file: the file is always one of the complete versions.
    const other = new HistoryStore(root);
    await Promise.all([store.save(entry('same', { speedup: 100 })), other.save(entry('same', { speedup: 200 }))]);
    expect([100, 200]).toContain((await store.get('same'))!.speedup);
    expect((await store.list()).sessions).toHaveLength(1);
  });

  it('notifies listeners of saves and deletes until disposed', async () => {
    const store = new HistoryStore(root);
    const seen: HistoryChange[] = [];
    const sub = store.onDidChange((c) => seen.push(c));
    store.onDidChange(() => {
      throw new Error('a broken listener must not fail the write');
    });
    await store.save(entry('a'));
    await store.update('a', { status: 'failed' });
    expect(await store.delete('a')).toBe(true);
    expect(await store.delete('a')).toBe(false);
    sub.dispose();
    await store.save(entry('b'));
    expect(seen).toEqual([
      { type: 'saved', id: 'a' },
      { type: 'saved', id: 'a' },
      { type: 'deleted', id: 'a' },
    ]);
  });

  it('exports the full session as JSON', async () => {
    const store = new HistoryStore(root);
    const e = entry('exp', { report: { summary: 'ok', nested: { n: 1 } } });
    await store.save(e);
    const dest = join(root, 'out', 'session.json');
    await store.export('exp', 'json', dest);
    expect(JSON.parse(await fs.readFile(dest, 'utf8'))).toEqual(e);
  });

  it("exports configurations in Kernel Tuner's cache layout", async () => {
    const store = new HistoryStore(root);
    await store.save(
      entry('kt', {
        report: {
          problemSize: [1048576],
          configurations: [
            { config: { block_size_x: 256, tile: 2 }, timeMs: 0.41, timesMs: [0.4, 0.41, 0.42], compileTimeMs: 120, observed: { num_regs: 30, occupancy: 1, occupancy_source: 'driver', nvml_energy: 0.00012, nvml_power: 290.5 } },
            { config: { block_size_x: 128, tile: 2 }, timeMs: 0.5 },
            { config: { block_size_x: 1024, tile: 4 }, failure: 'compile_error' },
            { config: { block_size_x: 512, tile: 4 }, failure: 'restricted' },
            { config: { block_size_x: 64, tile: 4 }, failure: 'wrong_result', timestamp: '2025-01-02T00:00:00Z' },
          ],
        },
      }),
    );
    const dest = join(root, 'kt-cache.json');
    await store.export('kt', 'kernel-tuner-cache', dest);
    const cache = JSON.parse(await fs.readFile(dest, 'utf8'));
    expect(Object.keys(cache).sort()).toEqual(['cache', 'device_name', 'kernel_name', 'objective', 'problem_size', 'schema_version', 'tune_params', 'tune_params_keys']);
    expect(cache).toMatchObject({
      schema_version: '1.1.0',
      device_name: 'NVIDIA H100 80GB HBM3',
      kernel_name: 'vector_add',
      problem_size: [1048576],
      tune_params_keys: ['block_size_x', 'tile'],
      tune_params: { block_size_x: [64, 128, 256, 512, 1024], tile: [2, 4] },
      objective: 'time',
    });
    expect(Object.keys(cache.cache).sort()).toEqual(['1024,4', '128,2', '256,2', '512,4', '64,4']);
    expect(cache.cache['256,2']).toMatchObject({ block_size_x: 256, tile: 2, time: 0.41, times: [0.4, 0.41, 0.42], compile_time: 120 });
    // Observers' fields at top level under Kernel Tuner's names, as its own cache entries carry them.
    expect(cache.cache['256,2']).toMatchObject({ num_regs: 30, occupancy: 1, occupancy_source: 'driver', nvml_energy: 0.00012, nvml_power: 290.5 });
    expect(cache.cache['1024,4'].time).toBe('CompilationFailedConfig');
    expect(cache.cache['512,4'].time).toBe('InvalidConfig');
    expect(cache.cache['64,4']).toMatchObject({ time: 'RuntimeFailedConfig', timestamp: '2025-01-02T00:00:00Z' });
    for (const record of Object.values<Record<string, unknown>>(cache.cache)) {
      for (const required of ['time', 'compile_time', 'verification_time', 'benchmark_time', 'strategy_time', 'framework_time', 'timestamp']) {
        expect(record).toHaveProperty(required);
      }
    }
  });

  it('says in words why a cache export cannot be made: no accepted step, no problem size, mixed search spaces', async () => {
    const store = new HistoryStore(root);
    await store.save(entry('nosize', { report: { configurations: [{ config: { a: 1 }, timeMs: 1 }] } }));
    await store.save(entry('nosteps', { report: { problemSize: ['n'] } }));
    await store.save(entry('mixed', { report: { problemSize: 10, configurations: [{ config: { a: 1 }, timeMs: 1 }, { config: { b: 1 }, timeMs: 1 }] } }));
    await expect(store.export('nosize', 'kernel-tuner-cache', join(root, 'x.json'))).rejects.toThrow(/^The session of vector_add \(nosize\) cannot be exported as a Kernel Tuner cache: its report does not say the problem size its tests ran at, which a cache names\.$/);
    await expect(store.export('nosteps', 'kernel-tuner-cache', join(root, 'x.json'))).rejects.toThrow(/no step of it was accepted, so it has no search to export/);
    await expect(store.export('mixed', 'kernel-tuner-cache', join(root, 'y.json'))).rejects.toThrow(/mixes search spaces/);
    // The report as its events read now, given by the caller, instead of the one stored without the problem size.
    await store.export('nosize', 'kernel-tuner-cache', join(root, 'x.json'), { problemSize: ['n'], configurations: [{ config: { a: 1 }, timeMs: 1 }] });
    expect(JSON.parse(await fs.readFile(join(root, 'x.json'), 'utf8')).problem_size).toEqual(['n']);
    await expect(store.export('absent', 'json', join(root, 'z.json'))).rejects.toThrow(/no session absent/);
  });
});
