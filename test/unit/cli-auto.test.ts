// llm-kernel-tuner auto: the command line over a scripted model and the fake backend (results written, progress on
// stderr, events as JSON lines, plan approval at the prompt), its usage errors, and the GPU check that comes before
// any model call.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/auto';
import { reportDataOf } from '../../src/report/html';
import { loadNativeAddon } from '../../src/gpu/native';
import { SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { sink } from '../support/streams';
import { DEFAULT_LAUNCHES } from '../../src/tuner/run/launch-count';
import { MAX_CHECKPOINT_GAP } from '../../src/tuner/run/measurement';
import { FakeBackend } from '../support/fake-backend';
import type { ScriptedLlmServer } from '../support/scripted-llm-server';

const scratch = mkdtempSync(join(tmpdir(), 'lkt-cli-auto-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
// Sessions are stored here, not in the home directory.
process.env.LKT_SESSIONS_DIR = join(scratch, 'sessions');
let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function kernelFile(name: string): string {
  const file = join(scratch, name, 'saxpy.cu');
  rmSync(join(scratch, name), { recursive: true, force: true });
  mkdirSync(join(scratch, name), { recursive: true });
  writeFileSync(file, SAXPY);
  return file;
}

const hasGpu = (() => {
  try {
    const addon = loadNativeAddon();
    return addon.status().cuda.loaded && addon.deviceCount() > 0;
  } catch {
    return false;
  }
})();

describe('llm-kernel-tuner auto', () => {
  it('tunes, streams progress to stderr and events to stdout, and writes the kernel, the reports and the diff', async () => {
    server = await serve('autonomous-session');
    const file = kernelFile('full');
    const [stdout, stderr] = [sink(), sink()];
    const limits = { bandwidthGBps: 4000, bandwidthMethod: 'stated by the test double', memcpyGBps: 4100, fp32GFlops: 60_000, fp32Formula: 'stated by the test double' };
    const backend = new FakeBackend({ model: { timeMs: saxpyTime }, limits });
    const code = await run(['saxpy.cu', '--kernel', 'saxpy', '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${server.url}/v1`, '--json', '--threshold', '1', '--retries', '1'].map((a) => (a === 'saxpy.cu' ? file : a)), {
      openBackends: async () => [backend],
      stdout,
      stderr,
    });
    expect(stderr.text()).not.toMatch(/^error/m);
    expect(code).toBe(0);
    expect(server.mismatches).toEqual([]);
    const log = stderr.text();
    expect(log).toContain('tuning saxpy on Fake GPU (test double) (sm_90)');
    expect(log).toContain('step 1 rejected: wrong result');
    expect(log).toContain('step 2 rejected: 1.049 ms -> 1.043 ms is 0.5%, below the threshold of 1.0%');
    expect(log).toContain('step 3 accepted: 1.049 ms -> 0.6291 ms (40.0%)');
    // Before it was accepted, its best configuration was to run under compute-sanitizer: this fake GPU cannot, and says so.
    expect(log).toContain('step 3 candidate 0 with {"block_size_x":512}: not checked with compute-sanitizer: this backend runs no kernel under compute-sanitizer');
    expect(log).not.toMatch(/\d+\/\d+ configurations/); // per-configuration lines only with --verbose
    // Each candidate's search says which strategy ran and why (auto, brute force: the step's time budget covers it).
    expect(log).toMatch(/step 3 candidate 0 searched with brute_force, chosen by auto: the first 3 took [\d.]+ s each, so \d+ s allow about \d+: that covers all 3 configurations, so brute force evaluates every one\. Stopped after 3 evaluations \(completed: every one of the 3 configurations was evaluated\)\./);

    const events = stdout.text().trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    expect(events[0]!.type).toBe('session.started');
    expect(events.at(-1)!.type).toBe('session.finished');

    const out = `${file}.tuned`;
    const tuned = readFileSync(join(out, 'saxpy.cu'), 'utf8');
    expect(tuned).toContain('#define block_size_x 512');
    expect(tuned).toContain('//   dim3 grid((n + 511) / 512, 1, 1);');
    const diff = readFileSync(join(out, 'saxpy.diff'), 'utf8');
    expect(diff.startsWith('--- a/saxpy.cu\n+++ b/saxpy.cu\n')).toBe(true);
    expect(diff).toContain('+#define block_size_x 512');
    const markdown = readFileSync(join(out, 'report.md'), 'utf8');
    expect(markdown).toContain('1.049 ms → 0.6291 ms: 1.67x');
    expect(markdown).toContain('dim3 block(512, 1, 1);');
    expect(markdown).toContain('- **Several elements per thread**: rejected, wrong result:');
    expect(markdown).toContain('- **Tune the block size**: accepted, 1.049 ms → 0.6291 ms (40.0 %)');
    const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ version: 1, model: { provider: 'openai', model: 'scripted-model' }, result: { bestParams: { block_size_x: 512 } } });
    expect(report.events.length).toBe(events.length);
    expect(backend.disposed).toBe(true);

    // The HTML report: each step with its diff and configurations, each configuration's speed of light over the
    // measured limits and the test's work (x read, y read and written; 2n flops as the analysis said).
    const html = reportDataOf(readFileSync(join(out, 'report.html'), 'utf8'));
    expect(html).toMatchObject({ kind: 'session', kernel: 'saxpy', limits, device: { name: 'Fake GPU (test double)', arch: 'sm_90' } });
    expect(html.work).toMatchObject({ bytes: 3 * 1048576 * 4, flops: 2 * 1048576 });
    expect(html.steps.map((s) => [s.title, s.status])).toEqual([
      ['Several elements per thread', 'rejected'],
      ['Fused multiply-add', 'rejected'],
      ['Tune the block size', 'accepted'],
    ]);
    const accepted = html.steps[2]!;
    expect(accepted.diff).toContain('+');
    const best = accepted.configs.find((c) => c.key === accepted.best!.key)!;
    expect(best).toMatchObject({ config: { block_size_x: 512 }, timeMs: 0.6291456 });
    // Which launches had their outputs verified: both input sets, the last timed launch and others at random. The
    // candidate's tuning ran the adaptive series: the fake GPU's steady times stop it at the first checkpoint from 7 on.
    const [, last] = /^input sets 1–2, timed launch(?:es)? [\d, –]+ and the last of (\d+)$/.exec(best.verified ?? '') ?? [];
    expect(Number(last)).toBeGreaterThanOrEqual(DEFAULT_LAUNCHES.min);
    expect(Number(last)).toBeLessThanOrEqual(DEFAULT_LAUNCHES.min + MAX_CHECKPOINT_GAP - 1);
    expect(best.GBps).toBeCloseTo((3 * 1048576 * 4) / 0.6291456e-3 / 1e9, 9);
    expect(best.bandwidthPct).toBeCloseTo((100 * best.GBps!) / 4000, 9);
    expect(best.flopsPct).toBeCloseTo((100 * best.GFlops!) / 60_000, 9);
    expect(html.summary).toMatchObject({ baselineTimeMs: 1.048576, bestTimeMs: 0.6291456, bestConfig: { block_size_x: 512 } });
    expect(html.reproduce).toMatchObject({ file, command: expect.stringMatching(/^llm-kernel-tuner auto .*saxpy\.cu --kernel saxpy --provider openai/) });
    expect(stderr.text()).toContain(join(out, 'report.html'));
  });

  it('asks which steps to carry out with --approve-plan', async () => {
    server = await serve('cli-approval');
    const file = kernelFile('approval');
    const stdin = new PassThrough();
    const [stdout, stderr] = [sink(), sink()];
    const running = run([file, '--provider', 'ollama', '--model', 'scripted-model', '--base-url', server.url, '--approve-plan', '--out', join(scratch, 'approval-out')], {
      openBackends: async () => [new FakeBackend({ model: { timeMs: saxpyTime } })],
      stdin,
      stdout,
      stderr,
    });
    // Answer once the question was asked.
    for (let i = 0; i < 200 && !stderr.text().includes('steps to carry out'); i++) await new Promise((r) => setTimeout(r, 10));
    expect(stderr.text()).toContain('proposed plan:\n  1. Use shared memory: stage x\n  2. Block size: tunable block');
    stdin.write('7\n2\n');
    expect(await running).toBe(0);
    expect(stderr.text()).toContain('answer with step numbers between 1 and 2');
    expect(stderr.text()).toContain('step 1 skipped: removed when the plan was approved');
    expect(server.mismatches).toEqual([]);
    expect(readFileSync(join(scratch, 'approval-out', 'saxpy.cu'), 'utf8')).toContain('#define block_size_x 512');
  });

  it('tunes every candidate on several GPUs with --gpus', async () => {
    server = await serve('autonomous-session');
    const file = kernelFile('gpus');
    const stderr = sink();
    const gpus = [0, 1].map((ordinal) => new FakeBackend({ model: { timeMs: saxpyTime }, timeDelayMs: 2, device: { ordinal } }));
    const asked: unknown[] = [];
    const code = await run([file, '--kernel', 'saxpy', '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${server.url}/v1`, '--retries', '1', '--gpus', '0,1'], {
      openBackends: async (selection) => (asked.push(selection), gpus),
      stdout: sink(),
      stderr,
    });
    expect(code).toBe(0);
    expect(asked).toEqual([{ kind: 'list', ordinals: [0, 1] }]);
    expect(stderr.text()).toContain('tuning saxpy on 2 x Fake GPU (test double) (sm_90)');
    expect(stderr.text()).toContain('step 3 accepted: 1.049 ms -> 0.6291 ms (40.0%)');
    // Both GPUs timed configurations, and both were closed at the end.
    for (const g of gpus) {
      expect(g.log.filter((e) => e.kind === 'time').length).toBeGreaterThan(0);
      expect(g.disposed).toBe(true);
    }
  });

  it('reports usage errors with exit code 2', async () => {
    const stderr = sink();
    expect(await run(['k.cu', '--provider', 'ollama'], { stderr })).toBe(2);
    expect(stderr.text()).toMatch(/^llm-kernel-tuner auto: --model is required\n\nusage: llm-kernel-tuner auto FILE\.cu/);
    const again = sink();
    expect(await run(['k.cu', '--provider', 'claude', '--model', 'm'], { stderr: again })).toBe(2);
    expect(again.text()).toContain('--provider must be ollama or openai, got claude');
    const both = sink();
    expect(await run(['k.cu', '--provider', 'ollama', '--model', 'm', '--gpus', 'all', '--device', '1'], { stderr: both })).toBe(2);
    expect(both.text()).toContain('give --device N (one GPU) or --gpus, not both');
    const precision = sink();
    expect(await run(['k.cu', '--provider', 'ollama', '--model', 'm', '--precision', '5'], { stderr: precision })).toBe(2);
    expect(precision.text()).toContain('--precision must be a fraction of the median from 0.001 (0.1 %) to 0.1 (10 %), is 5 (a fraction of the median: 5 % is 0.05)');
    const mixed = sink();
    expect(await run(['k.cu', '--provider', 'ollama', '--model', 'm', '--iterations', '32', '--max-iterations', '64'], { stderr: mixed })).toBe(2);
    expect(mixed.text()).toContain('--iterations fixes the number of timed launches, while a minimum, a maximum or a precision makes it adapt');
    const bad = sink();
    expect(await run(['k.cu', '--provider', 'ollama', '--model', 'm', '--gpus', '0,0'], { stderr: bad })).toBe(2);
    expect(bad.text()).toContain('--gpus lists GPU 0 twice: one worker per GPU');
  });

  it('checks the file before the GPU: a missing file, a file without a kernel, a kernel name it lacks', async () => {
    // The GPU would be opened after the file checks: a backend that records being asked shows they came first.
    let opened = false;
    const openBackends = async () => {
      opened = true;
      return [new FakeBackend({ model: { timeMs: saxpyTime } })];
    };
    const args = (file: string, ...more: string[]) => [file, '--provider', 'ollama', '--model', 'm', '--base-url', 'http://127.0.0.1:9', ...more];
    const missing = join(scratch, 'nowhere', 'gone.cu');
    await expect(run(args(missing), { openBackends, stderr: sink() })).rejects.toThrow(`cannot read the kernel file ${missing}: there is no such file`);
    await expect(run(args(scratch), { openBackends, stderr: sink() })).rejects.toThrow(`cannot read the kernel file ${scratch}: it is a folder, not a file`);
    const host = join(scratch, 'host-only.cu');
    writeFileSync(host, 'int main() { return 0; }\n');
    await expect(run(args(host), { openBackends, stderr: sink() })).rejects.toThrow(
      'host-only.cu has no __global__ kernel, so there is nothing to tune: a kernel is a function declared `__global__ void name(...)`',
    );
    const file = kernelFile('misnamed');
    await expect(run(args(file, '--kernel', 'sgemm'), { openBackends, stderr: sink() })).rejects.toThrow("no __global__ kernel named 'sgemm' in saxpy.cu; found: saxpy");
    expect(opened).toBe(false);
  });

  it.skipIf(hasGpu)('without a GPU fails with the CUDA error before asking the model anything', async () => {
    server = await serve([]);
    const file = kernelFile('nogpu');
    const attempt = run([file, '--provider', 'openai', '--model', 'm', '--base-url', `${server.url}/v1`], { stderr: sink() });
    await expect(attempt).rejects.toMatchObject({ name: 'CudaUnavailableError', message: expect.stringMatching(/^CUDA is not available: /) });
    expect(server.requests).toEqual([]);
  });
});
