// Metrics and objectives (Kernel Tuner's metrics, objective and objective_higher_is_better): expressions over what a
// configuration measured, checked before anything runs; one comparison (objectiveOf) that every strategy minimises;
// and, on a cache with NVML's energy recorded, an energy objective that picks another best than time.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { occupancyDeviceFor, theoreticalOccupancy } from '../../src/gpu/occupancy';
import { findNvcc } from '../../src/gpu/toolkit';
import { CacheFile, throughCache } from '../../src/tuner/cache/cache-file';
import { replay } from '../../src/tuner/cache/replay';
import { MetricsError, ResultMetrics } from '../../src/tuner/run/metrics';
import { resolveStrategy } from '../../src/tuner/strategies';
import { reportDataOf } from '../../src/report/html';
import { loadTuningSpec, tuningJob } from '../../src/tuner/spec/tuning-spec';
import { KernelTest, TunableKernel } from '../../src/tuner/tunable-kernel';
import { bestOf, objectiveOf, objectiveValue, type ConfigResult, type Objective, type TuneResult } from '../../src/tuner/types';
import { SYNTHETIC_MATMUL, syntheticMatmulSpace } from '../fixtures/caches/synthetic-matmul';
import { FakeBackend } from '../support/fake-backend';

const root = join(__dirname, '..', '..');
const FIXTURE = join(root, 'test', 'fixtures', 'caches', 'synthetic-matmul.json');
const FLOPS = 2 * 4096 ** 3;

const ran = (timeMs: number, extra: Partial<ConfigResult> = {}): ConfigResult => ({
  config: { block_size_x: 128, tile: 2 },
  key: '128,2',
  status: 'ok',
  timeMs,
  driver: { num_regs: 40, local_mem_bytes: 0, static_shared_mem_bytes: 8192, occupancy: 0.75 },
  ...extra,
});

describe('metrics', () => {
  it("computes Kernel Tuner's metrics in order, a later one using an earlier one, over time, work, energy and the parameters", () => {
    const metrics = ResultMetrics.create(
      {
        metrics: { 'GFLOP/s': 'flops / (time / 1e3) / 1e9', gbps: 'bytes / (time / 1e3) / 1e9', per_thread: 'gbps / block_size_x', joules_per_gb: 'energy / (bytes / 1e9)' },
        work: { flops: 2e9, bytes: 4e9 },
      },
      ['block_size_x', 'tile'],
    );
    const r = metrics.apply(ran(2, { energy: { nvml_energy: 0.5, nvml_power: 250 } }));
    expect(r.metrics).toEqual({ edp: 0.5 * 0.002, 'GFLOPS/W': 2 / 0.5, 'GFLOP/s': 1000, gbps: 2000, per_thread: 2000 / 128, joules_per_gb: 0.125 });
    expect(Object.keys(r.metrics!)).toEqual(['edp', 'GFLOPS/W', 'GFLOP/s', 'gbps', 'per_thread', 'joules_per_gb']);
    expect(metrics.usesEnergy).toBe(true);
    expect(metrics.objectiveNeedsEnergy).toBe(false);
  });

  it('leaves out what a configuration lacks the inputs for, and says why a metric could not be evaluated', () => {
    const metrics = ResultMetrics.create({ metrics: { per_joule: '1 / energy', spill_ratio: 'time / local_mem_bytes' } }, ['block_size_x', 'tile']);
    // Timed without energy: no edp, no per_joule; local memory 0: a division by zero, said in the note.
    const r = metrics.apply(ran(2));
    expect(r.metrics).toBeUndefined();
    expect(r.note).toBe("metric 'spill_ratio' not computed: division by zero in \"time / local_mem_bytes\"");
    const failed: ConfigResult = { config: {}, key: 'x', status: 'compile_error', error: { message: 'no' } };
    expect(metrics.apply(failed)).toBe(failed);
    // A cached result comes back with this run's metrics only, and its note says the problem once.
    const cached = metrics.apply({ ...r, metrics: { from_another_run: 1 } });
    expect(cached.metrics).toBeUndefined();
    expect(cached.note).toBe(r.note);
  });

  it('refuses, before anything runs, a metric over an unknown name (with the likely one), over flops the spec does not give, or named like a parameter', () => {
    const params = ['block_size_x', 'tile'];
    expect(() => ResultMetrics.create({ metrics: { m: 'tme * 2' } }, params)).toThrow(MetricsError);
    expect(() => ResultMetrics.create({ metrics: { m: 'tme * 2' } }, params)).toThrow(/metric 'm': unknown name 'tme' in "tme \* 2"; did you mean 'time'\?/);
    expect(() => ResultMetrics.create({ metrics: { 'GFLOP/s': 'flops / time' } }, params)).toThrow(/metric 'GFLOP\/s': it uses flops, which is not known: give the spec's `flops:`/);
    expect(() => ResultMetrics.create({ metrics: { tile: 'time' } }, params)).toThrow(/metric 'tile' has the name of a tunable parameter/);
    expect(() => ResultMetrics.create({ metrics: { times: 'time' } }, params)).toThrow(/metric 'times' has the name of a measured quantity/);
    expect(() => ResultMetrics.create({ metrics: { m: 'time +' } }, params)).toThrow(/metric 'm': expected a number, a name or '\(', found the end of the expression \(at position 6\)/);
    // "GFLOP/s" is not a name the language can spell, so a later metric cannot use it.
    expect(() => ResultMetrics.create({ metrics: { 'GFLOP/s': 'flops / time', twice: 'GFLOP / 2' }, work: { flops: 1 } }, params)).toThrow(/unknown name 'GFLOP'/);
  });

  it('checks the objective against everything a run measures, and knows which objectives need energy', () => {
    const params = ['block_size_x'];
    expect(() => ResultMetrics.create({ objective: 'speed' }, params)).toThrow(/objective 'speed' is not something a run measures: it is one of time, energy, edp or a metric's name; known: time, nvml_energy/);
    expect(() => ResultMetrics.create({ objective: 'GFLOPS/W' }, params)).toThrow(/GFLOPS\/W needs the flops of a launch: give the spec's `flops:`/);
    expect(ResultMetrics.create({}, params).objective).toEqual({ name: 'time', higherIsBetter: false });
    for (const name of ['energy', 'edp', 'power']) expect(ResultMetrics.create({ objective: name }, params).objectiveNeedsEnergy).toBe(true);
    const gflops = ResultMetrics.create({ metrics: { GFLOPS: 'flops / time / 1e6' }, objective: 'GFLOPS', objectiveHigherIsBetter: true, work: { flops: 1e9 } }, params);
    expect(gflops.objective).toEqual({ name: 'GFLOPS', higherIsBetter: true });
    expect(gflops.objectiveNeedsEnergy).toBe(false);
    expect(ResultMetrics.create({ metrics: { per_joule: '1 / energy' }, objective: 'per_joule' }, params).objectiveNeedsEnergy).toBe(true);
  });

  it('refuses a configuration without energy readings where the objective needs them, with the reason NVML gave', () => {
    const metrics = ResultMetrics.create({ objective: 'energy' }, ['block_size_x', 'tile']);
    expect(() => metrics.apply(ran(1, { energyUnavailable: 'NVML is not loaded: libnvidia-ml.so.1: cannot open shared object file' }))).toThrow(
      /the objective 'energy' needs NVML's energy readings, and configuration "128,2" has none: NVML is not loaded: libnvidia-ml\.so\.1/,
    );
    expect(() => metrics.apply(ran(1))).toThrow(/measured without them \(a cache recorded without energy/);
  });
});

describe('objectives: the one comparison', () => {
  const slowLean = ran(2, { key: 'a', energy: { nvml_energy: 0.4, nvml_power: 200 }, metrics: { GFLOPS: 500 } });
  const fastHungry = ran(1, { key: 'b', energy: { nvml_energy: 0.5, nvml_power: 500 }, metrics: { GFLOPS: 1000 } });
  const failed: ConfigResult = { config: {}, key: 'c', status: 'wrong_result' };

  it('minimises the value, or its negation when higher is better, and gives +Infinity to a failure or a missing value', () => {
    const gflops: Objective = { name: 'GFLOPS', higherIsBetter: true };
    expect(objectiveOf(slowLean)).toBe(2);
    expect(objectiveOf(slowLean, { name: 'energy', higherIsBetter: false })).toBe(0.4);
    expect(objectiveOf(slowLean, gflops)).toBe(-500);
    expect(objectiveOf(failed, gflops)).toBe(Infinity);
    expect(objectiveOf(ran(1), { name: 'energy', higherIsBetter: false })).toBe(Infinity);
    expect(objectiveValue(fastHungry, { name: 'power', higherIsBetter: false })).toBe(500);
    expect(objectiveValue(fastHungry, { name: 'occupancy', higherIsBetter: true })).toBe(0.75);
  });

  it('picks the best by the objective', () => {
    expect(bestOf([slowLean, fastHungry, failed])).toBe(fastHungry);
    expect(bestOf([slowLean, fastHungry, failed], { name: 'energy', higherIsBetter: false })).toBe(slowLean);
    expect(bestOf([slowLean, fastHungry, failed], { name: 'GFLOPS', higherIsBetter: true })).toBe(fastHungry);
    expect(bestOf([slowLean, fastHungry, failed], { name: 'GFLOPS', higherIsBetter: false })).toBe(slowLean);
    expect(bestOf([failed])).toBeUndefined();
  });
});

describe('objectives over a cache with energy recorded (the synthetic matmul: NVML fields, a power that varies)', () => {
  const cache = CacheFile.load(FIXTURE);
  const space = syntheticMatmulSpace();
  const ok = cache.results().filter((r) => r.status === 'ok');
  const lowest = (value: (r: ConfigResult) => number) => ok.reduce((a, b) => (value(b) < value(a) ? b : a));

  /** A search as `tune` runs it over a cache: the replayed results completed with the run's metrics, the strategy given the objective. */
  async function search(strategy: string, options: Parameters<typeof ResultMetrics.create>[0], maxFevals?: number) {
    const metrics = ResultMetrics.create({ ...options, work: { flops: FLOPS } }, space.paramNames);
    const { evaluate, clock } = replay(cache, { space });
    const evaluateWithMetrics = throughCache(undefined, evaluate, (r) => metrics.apply(r));
    return resolveStrategy(strategy)().run(space, evaluateWithMetrics, { objective: metrics.objective, clock, seed: 3, ...(maxFevals !== undefined && { maxFevals }) });
  }

  it('has energy readings for every configuration that ran, and its least-energy configuration is not its fastest', () => {
    expect(ok.length).toBeGreaterThan(400);
    expect(ok.every((r) => r.energy !== undefined && r.energy.nvml_energy > 0 && r.driver?.occupancy !== undefined)).toBe(true);
    expect(lowest((r) => r.energy!.nvml_energy).key).not.toBe(lowest((r) => r.timeMs!).key);
  });

  it('brute force finds the fastest with the time objective, the least energy with the energy objective', async () => {
    const byTime = await search('brute_force', {});
    const byEnergy = await search('brute_force', { objective: 'energy' });
    expect(byTime.best?.key).toBe(lowest((r) => r.timeMs!).key);
    expect(byEnergy.best?.key).toBe(lowest((r) => r.energy!.nvml_energy).key);
    expect(byEnergy.best?.key).not.toBe(byTime.best?.key);
    expect(byEnergy.best!.energy!.nvml_energy).toBeLessThan(byTime.best!.energy!.nvml_energy);
    expect(byEnergy.best!.timeMs!).toBeGreaterThan(byTime.best!.timeMs!);
  });

  it('maximises a metric with objectiveHigherIsBetter: GFLOPS/W is the energy objective turned around', async () => {
    const perWatt = await search('brute_force', { objective: 'GFLOPS/W', objectiveHigherIsBetter: true });
    expect(perWatt.best?.key).toBe(lowest((r) => r.energy!.nvml_energy).key);
    expect(perWatt.best!.metrics!['GFLOPS/W']).toBeCloseTo(FLOPS / 1e9 / perWatt.best!.energy!.nvml_energy, 9);
    const wrongWay = await search('brute_force', { objective: 'GFLOPS/W' });
    expect(wrongWay.best?.key).toBe(ok.reduce((a, b) => (b.energy!.nvml_energy > a.energy!.nvml_energy ? b : a)).key);
  });

  it.each(['genetic_algorithm', 'greedy_mls', 'random_sample'])('%s follows the objective through the one comparison', async (name) => {
    const result = await search(name, { objective: 'energy' }, 120);
    const seen = result.results.filter((r) => r.status === 'ok');
    expect(result.best?.key).toBe(seen.reduce((a, b) => (b.energy!.nvml_energy < a.energy!.nvml_energy ? b : a)).key);
  });
});

describe("the README's spec of metrics and an objective", () => {
  it('is a valid spec: its metrics compute, the later from the earlier, and its objective is maximised', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('### What each configuration costs'));
    const yamlBlock = /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
    const dir = mkdtempSync(join(tmpdir(), 'lkt-readme-metrics-'));
    try {
      const exampleDir = join(root, 'examples', 'vector_add');
      const base = readFileSync(join(exampleDir, 'tune.yaml'), 'utf8').replace('file: vector_add.cu', `file: ${join(exampleDir, 'vector_add.cu')}`);
      const specPath = join(dir, 'spec.yaml');
      writeFileSync(specPath, `${base}\nflops: n\n${yamlBlock}`);
      const job = await tuningJob(loadTuningSpec(specPath));
      expect(job.options).toMatchObject({ energy: true, objective: 'GFLOPs', objectiveHigherIsBetter: true, work: { flops: 67108864 } });
      const metrics = ResultMetrics.create(job.options, Object.keys(job.tuneParams));
      const r = metrics.apply({ ...ran(2, { energy: { nvml_energy: 0.5, nvml_power: 250 } }), config: { block_size_x: 256 }, key: '256' });
      expect(r.metrics!['GFLOPs']).toBeCloseTo(67108864 / 2e-3 / 1e9, 9);
      expect(r.metrics!['GFLOPs_per_register']).toBeCloseTo(r.metrics!['GFLOPs']! / 40, 9);

      // Kernel Tuner's way of asking for energy, and an observer we do not have.
      writeFileSync(specPath, `${base}\nobservers: [nvml]\n`);
      expect((await tuningJob(loadTuningSpec(specPath))).options.energy).toBe(true);
      writeFileSync(specPath, `${base}\nobservers: [register]\n`);
      expect(() => loadTuningSpec(specPath)).toThrow(/observers\.0: the only observer is nvml \(energy and power\); registers and occupancy are always recorded/);
      writeFileSync(specPath, `${base}\nmetrics: { GFLOPs: "flops / time" }\n`);
      await expect(tuningJob(loadTuningSpec(specPath))).rejects.toThrow(/the tuning spec's metric 'GFLOPs': it uses flops, which is not known: give the spec's `flops:`/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('tune --simulate with an objective, end to end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lkt-objective-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'matmul.cu'), '__global__ void matmul_kernel(float *C, const float *A, const float *B, int n) {}\n');
  const spec = join(dir, 'matmul.yaml');
  writeFileSync(
    spec,
    stringify({
      file: 'matmul.cu',
      problemSize: ['n', 'n'],
      arguments: {
        C: { dtype: 'float32', length: 'n*n', output: true },
        A: { dtype: 'float32', length: 'n*n', random: { kind: 'uniform', min: -1, max: 1 } },
        B: { dtype: 'float32', length: 'n*n', random: { kind: 'uniform', min: -1, max: 1 } },
        n: { dtype: 'int32', value: 4096 },
      },
      tuneParams: SYNTHETIC_MATMUL.tuneParams,
      restrictions: SYNTHETIC_MATMUL.restrictions,
      flops: '2*n*n*n',
      metrics: { 'GFLOP/s': 'flops / (time / 1e3) / 1e9' },
    }),
  );
  const cli = (...args: string[]) => spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'tune', spec, '--simulate', FIXTURE, '--no-report', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('--objective energy reports another best than time, with its energy, and the table shows registers, occupancy, energy and power', () => {
    const time = JSON.parse(cli('--json', '-q').stdout);
    const energy = JSON.parse(cli('--json', '-q', '--objective', 'energy').stdout);
    expect(energy.objective).toEqual({ name: 'energy', higherIsBetter: false });
    expect(energy.best.key).not.toBe(time.best.key);
    expect(energy.best.energy.nvml_energy).toBeLessThan(time.best.energy.nvml_energy);
    expect(time.best.metrics['GFLOP/s']).toBeCloseTo(FLOPS / (time.best.timeMs / 1e3) / 1e9, 6);

    const text = cli('--objective', 'energy');
    expect(text.status).toBe(0);
    const [header, , first] = text.stdout.split('\n');
    expect(header).toMatch(/status +median ms +min ms +max ms +launches +median ± +regs +occupancy +energy mJ +power W$/);
    expect(first).toMatch(new RegExp(`^ *${energy.best.key.split(',').join(' +')} +ok `));
    expect(text.stdout).toMatch(new RegExp(`best: .* ms, energy ${Number(energy.best.energy.nvml_energy.toPrecision(4))} J \\(the objective, lowest\\)`));
    expect(text.stderr.trimEnd().split('\n').at(-1)).toMatch(/; best \d\.\d+ J \(\d\.\d+ ms\)$/);
  });

  it('writes the objective, the best by it and every configuration\'s metrics into the HTML report', () => {
    const file = join(dir, 'report.html');
    const r = spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'tune', spec, '--simulate', FIXTURE, '--objective', 'energy', '--report', file, '-q'], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const data = reportDataOf(readFileSync(file, 'utf8'));
    expect(data.objective).toEqual({ name: 'energy', higherIsBetter: false });
    const step = data.steps[0]!;
    const leanest = step.configs.filter((c) => c.status === 'ok').reduce((a, b) => (b.energy!.nvml_energy < a.energy!.nvml_energy ? b : a));
    expect(step.best?.key).toBe(leanest.key);
    expect(data.summary.bestConfig).toEqual(leanest.config);
    expect(leanest).toMatchObject({ driver: { num_regs: expect.any(Number), occupancy: expect.any(Number) }, energy: { nvml_power: expect.any(Number) }, metrics: { 'GFLOP/s': expect.any(Number), 'GFLOPS/W': expect.any(Number) } });
  });

  it('--objective METRIC --higher-is-better maximises a metric of the spec and shows it as a column', () => {
    const r = cli('--objective', 'GFLOP/s', '--higher-is-better');
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(/ GFLOP\/s$/);
    expect(r.stdout).toMatch(/best: .* ms, GFLOP\/s [\d.]+ \(the objective, highest\)/);
  });

  it('refuses an unknown objective before replaying anything, and an energy objective on a cache recorded without energy', () => {
    const typo = cli('--objective', 'enrgy');
    expect(typo.status).toBe(1);
    expect(typo.stderr).toMatch(/the tuning spec's objective 'enrgy' is not something a run measures/);
    const vectorAdd = spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'tune', join(root, 'examples', 'vector_add', 'tune.yaml'), '--simulate', join(root, 'examples', 'vector_add', 'cache.json'), '--objective', 'energy', '--no-report'], { encoding: 'utf8' });
    expect(vectorAdd.status).toBe(1);
    expect(vectorAdd.stderr).toMatch(/the objective 'energy' needs NVML's energy readings, and configuration "\d+" has none: it was measured without them/);
  });
});

describe.skipIf(!findNvcc())("every configuration's driver metrics, in its result and in the cache (real nvcc, test-double GPU)", () => {
  const dir = mkdtempSync(join(tmpdir(), 'lkt-driver-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("records registers, local and shared memory and occupancy, under Kernel Tuner's names in the cache, with the spec's metrics", async () => {
    const kernel = await TunableKernel.create(readFileSync(join(root, 'test', 'fixtures', 'kernels', 'stage_shared.cu'), 'utf8'), { fileName: 'stage_shared.cu' });
    const test = KernelTest.fromSpec({ problemSize: 'n', arguments: { out: { dtype: 'float32', length: 'n', output: true }, n: { dtype: 'int32', value: 1 << 16 } } });
    const backend = new FakeBackend({ model: { timeMs: (v) => 256 / Number(v.defines.block_size_x) }, compile: 'nvcc' });
    const cache = join(dir, 'stage.json');
    const result = await kernel.tune(test, { block_size_x: [64, 256], floats_per_thread: [32] }, [], {
      backend,
      cache,
      work: { bytes: 4 << 16 },
      metrics: { GBps: 'bytes / (time / 1e3) / 1e9', per_register: 'GBps / num_regs' },
      objective: 'GBps',
      objectiveHigherIsBetter: true,
    });
    expect(result.objective).toEqual({ name: 'GBps', higherIsBetter: true });
    expect(result.best?.config).toEqual({ block_size_x: 256, floats_per_thread: 32 });
    for (const r of result.results) {
      const block = r.config.block_size_x as number;
      const staticBytes = block * 32 * 4;
      // Occupancy: the calculator's for ptxas's registers and this shared memory (the test double has no driver).
      const expected = theoreticalOccupancy(occupancyDeviceFor([9, 0]), { registers: r.driver!.num_regs, staticSharedBytes: staticBytes }, { threadsPerBlock: block, dynamicSharedBytes: 0 });
      expect(r.driver).toEqual({
        num_regs: expect.any(Number),
        local_mem_bytes: 0,
        static_shared_mem_bytes: staticBytes,
        dynamic_shared_mem_bytes: 0,
        max_threads_per_block: 1024,
        active_blocks_per_sm: expected.activeBlocksPerMultiprocessor,
        active_warps_per_sm: expected.activeWarpsPerMultiprocessor,
        occupancy: expected.occupancy,
        occupancy_source: 'calculator',
      });
      expect(r.metrics!['per_register']).toBeCloseTo(r.metrics!['GBps']! / r.driver!.num_regs, 9);
    }
    const written = JSON.parse(readFileSync(cache, 'utf8'));
    expect(written.objective).toBe('GBps'); // Kernel Tuner's header field: what the run optimised
    const entry = written.cache['256,32'];
    expect(entry).toMatchObject({ num_regs: result.best!.driver!.num_regs, static_shared_mem_bytes: 32768, occupancy: result.best!.driver!.occupancy, GBps: result.best!.metrics!['GBps'] });
    expect(entry.lkt_metrics).toEqual(['GBps', 'per_register']);
  });
});

describe('energy through the tuner (the test double reads its model\'s power as NVML would)', () => {
  const VECTOR_ADD = '__global__ void vector_add(float* c, const float* a, const float* b, int n) { int i = blockIdx.x * block_size_x + threadIdx.x; if (i < n) c[i] = a[i] + b[i]; }\n';
  const test = KernelTest.fromSpec({
    problemSize: 'n',
    arguments: {
      c: { dtype: 'float32', length: 'n', output: true },
      a: { dtype: 'float32', length: 'n', random: { kind: 'uniform' } },
      b: { dtype: 'float32', length: 'n', random: { kind: 'uniform' } },
      n: { dtype: 'int32', value: 1 << 20 },
    },
  });
  // Larger blocks are faster and draw more power: 1024 is the fastest, 256 uses the least energy (1.2 ms x 200 W).
  const timeMs = (block: number) => ({ 128: 2, 256: 1.2, 512: 1, 1024: 0.9 })[block]!;
  const powerW = (block: number) => ({ 128: 150, 256: 200, 512: 300, 1024: 400 })[block]!;
  const block = (v: { defines: Record<string, string> }) => Number(v.defines.block_size_x);
  const tuneParams = { block_size_x: [128, 256, 512, 1024] };

  it('measures every configuration timed in full after its series, with the window in its time limit, and picks the least energy', async () => {
    const backend = new FakeBackend({ model: { timeMs: (v) => timeMs(block(v)), powerW: (v) => powerW(block(v)) } });
    const kernel = await TunableKernel.create(VECTOR_ADD);
    const byTime = await kernel.tune(test, tuneParams, [], { backend, energy: { windowMs: 500 }, launchTimeoutMs: 50 });
    expect(byTime.best?.config).toEqual({ block_size_x: 1024 });
    const measured = backend.log.filter((e) => e.kind === 'energy');
    // In space order each is faster than the one before: none stops early, every one is measured, with the launch limit
    // beside the window (the GPU backend gives the request both).
    expect(measured.map((e) => [Number(e.defines.block_size_x), e.windowMs, e.timeoutMs])).toEqual([128, 256, 512, 1024].map((b) => [b, 500, 50]));
    for (const r of byTime.results) {
      expect(r.energy).toEqual({ nvml_energy: (powerW(r.config.block_size_x as number) * r.timeMs!) / 1000, nvml_power: powerW(r.config.block_size_x as number), core_freq: 1980, mem_freq: 2619, temperature: expect.any(Number) });
      expect(r.metrics!['edp']).toBeCloseTo(r.energy!.nvml_energy * (r.timeMs! / 1000), 12);
    }
    // Every energy measurement runs on a module loaded for it, not on one that was timed or checked.
    const timedModules = new Set(backend.log.filter((e) => e.kind === 'time').map((e) => e.module));
    expect(measured.every((e) => !timedModules.has(e.module))).toBe(true);

    const byEnergy = await kernel.tune(test, tuneParams, [], { backend: new FakeBackend({ model: { timeMs: (v) => timeMs(block(v)), powerW: (v) => powerW(block(v)) } }), objective: 'energy' });
    expect(byEnergy.best?.config).toEqual({ block_size_x: 256 });
    // Energy is implied by the objective; early stop is off for it (a slower configuration may use less energy).
    expect(byEnergy.results.every((r) => r.status === 'ok' && r.energy !== undefined)).toBe(true);
  });

  it('stops timing early only for the time objective, and measures no energy of a configuration it stopped', async () => {
    const backend = new FakeBackend({ model: { timeMs: (v) => timeMs(block(v)), powerW: (v) => powerW(block(v)) } });
    const kernel = await TunableKernel.create(VECTOR_ADD);
    const result = await kernel.tune(test, { block_size_x: [1024, 128] }, [], { backend, energy: true, iterations: 8 });
    const slow = result.results.find((r) => r.config.block_size_x === 128)!;
    expect(slow.status).toBe('stopped_early');
    expect(slow.energy).toBeUndefined();
    expect(backend.log.filter((e) => e.kind === 'energy').map((e) => [e.defines.block_size_x, e.windowMs])).toEqual([['1024', 1000]]);
  });

  it('says why there is no energy where the device has no NVML, and refuses an energy objective with that reason', async () => {
    const kernel = await TunableKernel.create(VECTOR_ADD);
    const noNvml = () => new FakeBackend({ model: { timeMs: (v) => timeMs(block(v)) } });
    const result = await kernel.tune(test, tuneParams, [], { backend: noNvml(), energy: true });
    expect(result.best?.config).toEqual({ block_size_x: 1024 });
    expect(result.results.every((r) => r.energy === undefined && r.energyUnavailable === 'the test double has no NVML (its model gives no power)')).toBe(true);
    await expect(kernel.tune(test, tuneParams, [], { backend: noNvml(), objective: 'edp' })).rejects.toThrow(
      /the objective 'edp' needs NVML's energy readings, and configuration "\d+" has none: the test double has no NVML/,
    );
    await expect(kernel.tune(test, tuneParams, [], { backend: noNvml(), energy: { windowMs: 50 } })).rejects.toThrow(/energy.windowMs must be an integer of at least 100 ms/);
  });
});

describe('tune --energy through the GPU backend and its worker (the native addon is the test double test/support/fake-addon.cjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lkt-energy-cli-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  // The vector add example over 4096 elements (the fake device keeps its memory in JavaScript; its GPU draws 200 W).
  const spec = join(dir, 'vector_add.yaml');
  const exampleDir = join(root, 'examples', 'vector_add');
  writeFileSync(spec, readFileSync(join(exampleDir, 'tune.yaml'), 'utf8').replace('file: vector_add.cu', `file: ${join(exampleDir, 'vector_add.cu')}`).replace('value: 67108864', 'value: 4096'));
  const fakeGpu = { ...process.env, LKT_GPU_ADDON_MODULE: join(root, 'test', 'support', 'fake-addon.cjs'), TMPDIR: dir };
  const tune = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    spawnSync(process.execPath, [join(root, 'dist', 'cli.js'), 'tune', spec, '--iterations', '3', '--no-report', ...args], { cwd: root, encoding: 'utf8', timeout: 120_000, env });

  it("records NVML's energy and power and the driver's metrics of every configuration, and shows them in the table", () => {
    const json = tune(fakeGpu, '--energy', '--json', '-q');
    expect(json.status, json.stderr).toBe(0);
    const out = JSON.parse(json.stdout) as TuneResult;
    const ran = out.results.filter((r) => r.status === 'ok');
    expect(ran.length).toBeGreaterThan(0);
    for (const r of ran) {
      expect(r.energy).toMatchObject({ nvml_power: expect.closeTo(200, 6), nvml_energy: expect.closeTo((200 * r.timeMs!) / 1000, 9) });
      expect(r.driver).toMatchObject({ num_regs: 32, local_mem_bytes: 0, occupancy_source: 'driver', occupancy: expect.any(Number) });
    }
    const text = tune(fakeGpu, '--energy');
    expect(text.stdout.split('\n')[0]).toMatch(/^block_size_x +status +median ms +min ms +max ms +launches +median ± +regs +occupancy +energy mJ +power W$/);
  });

  it('says why there is no energy where NVML is missing, and refuses an energy objective with that reason', () => {
    const noNvml = { ...fakeGpu, LKT_FAKE_NO_NVML: '1' };
    const r = tune(noNvml, '--energy', '-q');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^energy: not measured: .*NVML/m);
    const objective = tune(noNvml, '--objective', 'energy', '-q');
    expect(objective.status).toBe(1);
    expect(objective.stderr).toMatch(/the objective 'energy' needs NVML's energy readings, and configuration "\d+" has none: .*NVML/);
  });
});
