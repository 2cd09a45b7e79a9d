// llm-kernel-tuner auto: the command line over a scripted model and the fake backend (results written, progress on
// stderr, events as JSON lines, plan approval at the prompt), its usage errors, and the GPU check that comes before
// any model call.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/auto';
import { loadNativeAddon } from '../../src/gpu/native';
import { SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { sink } from '../support/streams';
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
    const backend = new FakeBackend({ model: { timeMs: saxpyTime } });
    const code = await run(['saxpy.cu', '--kernel', 'saxpy', '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${server.url}/v1`, '--json', '--threshold', '1', '--retries', '1'].map((a) => (a === 'saxpy.cu' ? file : a)), {
      openBackend: async () => backend,
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
    expect(log).not.toContain('configurations'); // per-configuration lines only with --verbose

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
  });

  it('asks which steps to carry out with --approve-plan', async () => {
    server = await serve('cli-approval');
    const file = kernelFile('approval');
    const stdin = new PassThrough();
    const [stdout, stderr] = [sink(), sink()];
    const running = run([file, '--provider', 'ollama', '--model', 'scripted-model', '--base-url', server.url, '--approve-plan', '--out', join(scratch, 'approval-out')], {
      openBackend: async () => new FakeBackend({ model: { timeMs: saxpyTime } }),
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

  it('reports usage errors with exit code 2', async () => {
    const stderr = sink();
    expect(await run(['k.cu', '--provider', 'ollama'], { stderr })).toBe(2);
    expect(stderr.text()).toMatch(/^llm-kernel-tuner auto: --model is required\n\nusage: llm-kernel-tuner auto FILE\.cu/);
    const again = sink();
    expect(await run(['k.cu', '--provider', 'claude', '--model', 'm'], { stderr: again })).toBe(2);
    expect(again.text()).toContain('--provider must be ollama or openai, got claude');
  });

  it.skipIf(hasGpu)('without a GPU fails with the CUDA error before asking the model anything', async () => {
    server = await serve([]);
    const file = kernelFile('nogpu');
    const attempt = run([file, '--provider', 'openai', '--model', 'm', '--base-url', `${server.url}/v1`], { stderr: sink() });
    await expect(attempt).rejects.toMatchObject({ name: 'CudaUnavailableError', message: expect.stringMatching(/^CUDA is not available: /) });
    expect(server.requests).toEqual([]);
  });
});
