// "Tune parameters" without the editor: the tuner alone over a spec, as the typed events of a session of one step (the
// fake GPU, TEST DOUBLE, times the configurations); and how the editor finds a kernel's spec beside its file.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EventOf, TuningEvent } from '../../src/engine/progress/events';
import { tunerSession, type TunerSessionOptions } from '../../src/engine/session/tuner-session';
import { reduceAll } from '../../src/engine/session/session-view';
import { buildReport, sessionReportData } from '../../src/extension/report';
import { cachesBeside, specsBeside, specsForKernel } from '../../src/tuner/spec/spec-files';
import { H100_LIMITS } from '../support/engine-harness';
import { FakeBackend, type FakeVariant } from '../support/fake-backend';

const dir = mkdtempSync(join(tmpdir(), 'lkt-tuner-session-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KERNEL = `// y = a * x + y, block size tunable
#ifndef block_size_x
#define block_size_x 256
#endif

__global__ void saxpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

void run(const float *x, float *y, float a, int n) {
    saxpy<<<(n + 255) / 256, 256>>>(x, y, a, n);
}
`;

const SPEC = `kernel: saxpy
file: saxpy.cu
arguments:
  x: { dtype: float32, length: n, random: { kind: uniform, min: -1, max: 1 } }
  y: { dtype: float32, length: n, output: true, fill: 1 }
  a: { dtype: float32, value: 2 }
  n: { dtype: int32, value: 1048576 }
problemSize: n
tuneParams:
  block_size_x: [128, 256, 512]
iterations: 7
`;

writeFileSync(join(dir, 'saxpy.cu'), KERNEL);
writeFileSync(join(dir, 'saxpy.tune.yaml'), SPEC);

/** 1 ms at the file's 256 threads, 0.6 ms at 512, 0.8 ms at 128 (`fastest`: the block size that wins). */
const timeMs = (fastest: string) => (v: FakeVariant) => (v.defines.block_size_x === fastest ? 0.6 : v.defines.block_size_x === '128' ? 0.8 : 1);

async function run(options: Partial<TunerSessionOptions> & ({ backend: FakeBackend } | { replay: string })): Promise<{ events: TuningEvent[]; of: <T extends TuningEvent['type']>(t: T) => EventOf<T>[] }> {
  const events: TuningEvent[] = [];
  const measure = 'backend' in options ? { backend: options.backend } : { replay: options.replay };
  for await (const e of tunerSession({ threadId: 't1', code: KERNEL, filePath: join(dir, 'saxpy.cu'), specPath: join(dir, 'saxpy.tune.yaml'), measure, sanitize: false, ...options })) events.push(e);
  return { events, of: (t) => events.filter((e): e is EventOf<typeof t> => e.type === t) };
}

describe('a session of the tuner alone', () => {
  it('is one step: every configuration, the profile of the best, the baseline at the file\'s values, and the file with the best values', async () => {
    const backend = new FakeBackend({ model: { timeMs: timeMs('512') }, limits: H100_LIMITS });
    const { events, of } = await run({ backend });
    expect(events.map((e) => e.type).filter((t) => t !== 'configs.evaluated')).toEqual([
      'session.started',
      'device.limits',
      'tests.ready',
      'plan',
      'step.started',
      'candidate',
      'profile',
      'baseline',
      'step.accepted',
      'session.finished',
    ]);
    expect(of('configs.evaluated').map((e) => [e.result.config.block_size_x, e.result.timeMs])).toEqual([
      [128, 0.8],
      [256, 1],
      [512, 0.6],
    ]);
    expect(of('tests.ready')[0]!.tests[0]).toMatchObject({ id: 'saxpy.tune.yaml', origin: 'user', problemSize: ['n'], outputs: ['y'], work: { bytes: 3 * 1048576 * 4 } });
    expect(of('baseline')[0]).toMatchObject({ timeMs: 1, params: { block_size_x: 256 } });
    expect(of('step.accepted')[0]).toMatchObject({ stepId: '1', oldTimeMs: 1, newTimeMs: 0.6, bestParams: { block_size_x: 512 } });
    expect(of('profile')[0]).toMatchObject({ stepId: '1', candidate: 0, profile: { config: { block_size_x: 512 }, source: 'driver', unavailable: { reason: 'ncu-not-found' } } });
    const finished = of('session.finished')[0]!;
    expect(finished.finalCode).toContain('#ifndef block_size_x\n#define block_size_x 512\n#endif');
    expect(finished.finalCode).toContain('saxpy<<<(n + 511) / 512, 512>>>(x, y, a, n);');
    expect(finished.tracker).toMatchObject({ baselineTimeMs: 1, finalTimeMs: 0.6 });
    // The panel sees a session of one step, accepted, with its profile.
    const view = reduceAll({ sessionId: 't1', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: events[0]!.at, model: 'the tuner alone', strategy: 'tuner' }, events);
    expect(view.status).toBe('completed');
    expect(view.order).toEqual(['1']);
    expect(view.steps['1']).toMatchObject({ title: 'Tune parameters', status: 'accepted' });
    expect(view.steps['1']!.candidates[0]!.profile?.config).toEqual({ block_size_x: 512 });
    expect(backend.log.filter((e) => e.kind === 'profile')).toHaveLength(1);
    // Its HTML report: one step with its profile, and how to run it again.
    const header = { sessionId: 't1', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: events[0]!.at, model: 'the tuner alone over saxpy.tune.yaml, no model', strategy: 'tuner' as const };
    const data = sessionReportData({ id: 't1', kernelName: 'saxpy', filePath: 'saxpy.cu', createdAt: header.startedAt, updatedAt: header.startedAt, device: { name: 'GPU' }, status: 'completed', steps: [], originalCode: KERNEL, threadId: 't1', report: buildReport(header, events, view) })!;
    expect(data.mode).toMatch(/^the tuner alone over saxpy\.tune\.yaml, no model, completed/);
    expect(data.steps.map((s) => [s.title, s.status, s.profile?.config])).toEqual([['Tune parameters', 'accepted', { block_size_x: 512 }]]);
    expect(data.summary).toMatchObject({ baselineTimeMs: 1, bestTimeMs: 0.6, bestConfig: { block_size_x: 512 } });
    expect(data.reproduce.command).toBe('VS Code: open saxpy.cu, put the cursor in saxpy and run "Kernel Tuner: Tune parameters" (the tuner alone over saxpy.tune.yaml, no model)');
  });

  it('proposes nothing when the file\'s values are already the fastest', async () => {
    const { of } = await run({ backend: new FakeBackend({ model: { timeMs: timeMs('256') } }) });
    expect(of('step.rejected')[0]!.reason).toMatchObject({ kind: 'insufficient_gain', oldTimeMs: 0.6, newTimeMs: 0.6, thresholdPct: 0 });
    expect(of('session.finished')[0]).toMatchObject({ finalCode: KERNEL, bestParams: { block_size_x: 256 }, launchSites: [] });
    expect(of('warning')).toEqual([]);
  });

  it('times the file\'s values on their own when the spec does not search them', async () => {
    writeFileSync(join(dir, 'other.tune.yaml'), SPEC.replace('[128, 256, 512]', '[128, 512]'));
    const backend = new FakeBackend({ model: { timeMs: timeMs('512') } });
    const { of } = await run({ backend, specPath: join(dir, 'other.tune.yaml') });
    expect(of('configs.evaluated')).toHaveLength(2);
    expect(of('baseline')[0]).toMatchObject({ timeMs: 1, params: { block_size_x: 256 } });
    expect(of('step.accepted')[0]).toMatchObject({ oldTimeMs: 1, newTimeMs: 0.6 });
  });

  it('runs the best configuration under compute-sanitizer where the setting asks: clean, it is proposed; a finding (a read past the end), it is not', async () => {
    const clean = await run({ backend: new FakeBackend({ model: { timeMs: timeMs('512') }, sanitize: true }), sanitize: true });
    expect(clean.of('sanitized')[0]).toMatchObject({ stepId: '1', candidate: 0, verdict: { status: 'clean', config: { block_size_x: 512 } } });
    expect(clean.of('step.accepted')).toHaveLength(1);

    const overreading = KERNEL.replace('    if (i < n) y[i] = a * x[i] + y[i];', '    if (i < n) y[i] = a * x[i] + y[i];  // fake-sanitizer: oob-read');
    writeFileSync(join(dir, 'overreading.cu'), overreading);
    const { events, of } = await run({ backend: new FakeBackend({ model: { timeMs: timeMs('512') }, sanitize: true }), sanitize: true, code: overreading, filePath: join(dir, 'overreading.cu') });
    expect(of('sanitized')[0]!.verdict).toMatchObject({ status: 'hazards', findings: [{ tool: 'memcheck', kind: 'out_of_bounds', at: { file: join(dir, 'overreading.cu'), line: 8 } }] });
    expect(of('step.rejected')[0]!.reason).toMatchObject({ kind: 'hazard', attempts: 1, findings: [expect.stringMatching(/^memcheck: Invalid __global__ read of size 4 bytes at overreading\.cu:8 \(`if \(i < n\)/)] });
    expect(of('step.accepted')).toEqual([]);
    // Nothing is proposed: the file stays as it is.
    expect(of('session.finished')[0]).toMatchObject({ finalCode: overreading, bestParams: { block_size_x: 256 }, launchSites: [] });
    expect(events.at(-1)!.type).toBe('session.finished');
  });

  it('fails with what is wrong in the spec, and stops when cancelled', async () => {
    writeFileSync(join(dir, 'bad.tune.yaml'), SPEC.replace('problemSize: n', 'problemSiz: n'));
    const bad = await run({ backend: new FakeBackend({ model: { timeMs: timeMs('512') } }), specPath: join(dir, 'bad.tune.yaml') });
    expect(bad.events.map((e) => e.type)).toEqual(['session.failed']);
    expect(bad.of('session.failed')[0]!.error.message).toMatch(/bad\.tune\.yaml is not valid[\s\S]*problemSiz/);
    const abort = new AbortController();
    const backend = new FakeBackend({ model: { timeMs: timeMs('512') }, timeDelayMs: 2000 });
    const cancelled = run({ backend, signal: abort.signal });
    setTimeout(() => abort.abort(), 300);
    expect((await cancelled).events.at(-1)!.type).toBe('session.cancelled');
  });

  it('replays a cache of the same spec where no GPU is present: the recorded device and times, the file\'s values as the baseline', async () => {
    const example = join(__dirname, '..', '..', 'examples', 'matmul_naive');
    const code = readFileSync(join(example, 'matmul_naive.cu'), 'utf8');
    const { events, of } = await run({ replay: join(example, 'cache.json'), code, filePath: join(example, 'matmul_naive.cu'), specPath: join(example, 'tune.yaml') });
    expect(events.map((e) => e.type).filter((t) => t !== 'configs.evaluated')).toEqual(['session.started', 'tests.ready', 'plan', 'step.started', 'candidate', 'baseline', 'step.accepted', 'warning', 'session.finished']);
    // The example's file holds the kernel alone: where to launch it with the chosen block is said, not written.
    expect(of('warning')[0]!.message).toMatch(/no launch of matmul_naive was found in this file: launch it with block \(64, 2, 1\)/);
    expect(of('session.started')[0]!.device).toEqual({ name: 'NVIDIA H200', arch: '', computeCapability: [0, 0], replayedFrom: 'cache.json' });
    expect(of('plan')[0]!.steps[0]!.details).toContain('the results recorded in cache.json on NVIDIA H200 replayed, no GPU');
    expect(of('configs.evaluated')).toHaveLength(18);
    // The file's own values (32 x 8), as the H200 timed them, and the fastest the cache holds (64 x 2).
    expect(of('baseline')[0]).toMatchObject({ timeMs: 2.5696319341659546, params: { block_size_x: 32, block_size_y: 8 } });
    expect(of('step.accepted')[0]).toMatchObject({ newTimeMs: 2.4916640520095825, bestParams: { block_size_x: 64, block_size_y: 2 } });
    const final = of('session.finished')[0]!;
    expect(final.finalCode).toContain('#define block_size_x 64');
    expect(final.finalCode).toContain('#define block_size_y 2');
  });

  it('refuses a cache of another kernel', async () => {
    const { of } = await run({ replay: join(__dirname, '..', '..', 'examples', 'matmul_naive', 'cache.json') });
    expect(of('session.failed')[0]!.error.message).toMatch(/cache\.json holds results for kernel 'matmul_naive', not 'saxpy'/);
  });
});

describe('the specs beside a kernel file', () => {
  it('are the YAML or JSON specs of its folder that name it, for the kernel they name or the file\'s only one', () => {
    const folder = join(dir, 'specs');
    mkdirSync(folder);
    writeFileSync(join(folder, 'k.cu'), '__global__ void a() {}\n__global__ void b() {}\n');
    writeFileSync(join(folder, 'a.yaml'), 'kernel: a\nfile: k.cu\ntuneParams: { block_size_x: [32, 64] }\n');
    writeFileSync(join(folder, 'b.json'), JSON.stringify({ kernel: 'b', file: './k.cu', tuneParams: { tile: [1, 2] } }));
    writeFileSync(join(folder, 'any.yml'), 'file: k.cu\ntuneParams: { unroll: [1, 4] }\n');
    writeFileSync(join(folder, 'other-file.yaml'), 'kernel: a\nfile: other.cu\ntuneParams: { x: [1] }\n');
    writeFileSync(join(folder, 'cache.json'), JSON.stringify({ kernel_name: 'a', cache: {} }));
    writeFileSync(join(folder, 'broken.yaml'), 'file: k.cu\n  : [\n');
    const specs = specsBeside(join(folder, 'k.cu'));
    expect(specs.map((s) => [s.path.slice(folder.length + 1), s.kernel, s.parameters])).toEqual([
      ['a.yaml', 'a', ['block_size_x']],
      ['any.yml', undefined, ['unroll']],
      ['b.json', 'b', ['tile']],
    ]);
    expect(specsForKernel(specs, { name: 'a', qualifiedName: 'a' }, 2).map((s) => s.kernel)).toEqual(['a']);
    expect(specsForKernel(specs, { name: 'b', qualifiedName: 'b' }, 1).map((s) => s.kernel)).toEqual([undefined, 'b']);
    expect(specsBeside(join(dir, 'saxpy.cu')).map((s) => s.path.slice(dir.length + 1))).toEqual(['bad.tune.yaml', 'other.tune.yaml', 'saxpy.tune.yaml']);
    // Asked about another file of the folder first, a spec is still found for its own.
    writeFileSync(join(folder, 'second.cu'), '__global__ void c() {}\n');
    writeFileSync(join(folder, 'c.yaml'), 'file: second.cu\ntuneParams: { t: [1] }\n');
    expect(specsBeside(join(folder, 'k.cu')).map((s) => s.path.slice(folder.length + 1))).toEqual(['a.yaml', 'any.yml', 'b.json']);
    expect(specsBeside(join(folder, 'second.cu')).map((s) => s.path.slice(folder.length + 1))).toEqual(['c.yaml']);
  });

  it('finds the caches a replay of a spec\'s search can use: the same kernel and parameters, in order', () => {
    const folder = join(dir, 'caches');
    mkdirSync(folder, { recursive: true });
    const cache = (kernel: string, keys: string[]) => JSON.stringify({ kernel_name: kernel, tune_params_keys: keys, cache: {} });
    writeFileSync(join(folder, 'tune.yaml'), 'file: k.cu\ntuneParams: { x: [1], y: [2] }\n');
    writeFileSync(join(folder, 'cache.json'), cache('k', ['x', 'y']));
    writeFileSync(join(folder, 'swapped.json'), cache('k', ['y', 'x']));
    writeFileSync(join(folder, 'other.json'), cache('other', ['x', 'y']));
    writeFileSync(join(folder, 'spec.json'), '{ "file": "k.cu", "tuneParams": { "x": [1] } }');
    writeFileSync(join(folder, 'broken.json'), '{ "kernel_name": ');
    expect(cachesBeside(join(folder, 'tune.yaml'), 'k', ['x', 'y'])).toEqual([join(folder, 'cache.json')]);
    expect(cachesBeside(join(dir, 'missing', 'tune.yaml'), 'k', ['x'])).toEqual([]);
  });
});
