// llm-kernel-tuner auto and its stored sessions: every session is stored with its settings and model exchanges (no
// secret), --replay runs it again without a model and says where a run diverges, --resume continues one, and
// --resume --from-step [--kernel FILE] starts a branch of it. The model is the scripted server, the GPU the fake backend.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { PassThrough } from 'node:stream';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/auto';
import { HistoryStore, type HistoryEntry } from '../../src/engine/store/history-store';
import { reportDataOf } from '../../src/report/html';
import { requestText, SAXPY, saxpyTime, scriptedServers } from '../support/engine-harness';
import { sink } from '../support/streams';
import { FakeBackend, largestBuffer, type FakeVariant } from '../support/fake-backend';
import { loadScript, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const scratch = mkdtempSync(join(tmpdir(), 'lkt-cli-sessions-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const sessions = join(scratch, 'sessions');
const servers = scriptedServers();
afterEach(() => servers.closeAll());
const server = (script: ScriptTurn[]) => servers.start(script);

const FULL = loadScript('autonomous-session');
const from = (comment: string) => FULL.slice(FULL.findIndex((t) => t.comment?.startsWith(comment)));
const history = new HistoryStore(join(sessions, 'history'));

interface Ran {
  code: number;
  stderr: string;
  stdout: string;
}

async function auto(args: string[], backend: FakeBackend | FakeBackend[] = new FakeBackend({ model: { timeMs: saxpyTime } })): Promise<Ran> {
  const [stdout, stderr] = [sink(), sink()];
  const code = await run([...args, '--sessions', sessions], {
    openBackends: async () => [backend].flat(),
    stdout,
    stderr,
  });
  return { code, stderr: stderr.text(), stdout: stdout.text() };
}

function kernelFile(name: string, text = SAXPY): string {
  const dir = join(scratch, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'saxpy.cu');
  writeFileSync(file, text);
  return file;
}

const sessionIdIn = (stderr: string) => /^session ([A-Za-z0-9_-]+)/m.exec(stderr)![1]!;
const chats = (s: ScriptedLlmServer) => s.requests.filter((r) => r.path.endsWith('/chat/completions')).length;

/** A finished session of the full autonomous script, stored; its id. */
async function storedSession(name: string, extra: string[] = []): Promise<{ id: string; file: string; entry: HistoryEntry; server: ScriptedLlmServer }> {
  const s = await server(FULL);
  const file = kernelFile(name);
  const ran = await auto([file, '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${s.url}/v1`, '--retries', '1', ...extra]);
  expect(ran.stderr).not.toMatch(/^error/m);
  expect(ran.code).toBe(0);
  const id = sessionIdIn(ran.stderr);
  return { id, file, entry: (await history.get(id))!, server: s };
}

describe('stored sessions of auto', () => {
  it('stores each session with its settings, its report and every model exchange, and never the API key', async () => {
    process.env.LKT_TEST_KEY = 'sk-cli-SECRET-42';
    const { id, file, entry, server: s } = await storedSession('stored', ['--api-key-env', 'LKT_TEST_KEY']);
    expect(entry).toMatchObject({
      id,
      threadId: id,
      kernelName: 'saxpy',
      filePath: file,
      status: 'completed',
      originalCode: SAXPY,
      baselineTimeMs: 1.048576,
      run: { kernelName: 'saxpy', fileName: 'saxpy.cu', strategy: { kind: 'autonomous' }, retries: 1, performanceThreshold: 1, model: { provider: 'openai', model: 'scripted-model' } },
    });
    expect(entry.steps.map((st) => [st.title, st.status])).toEqual([
      ['Several elements per thread', 'rejected'],
      ['Fused multiply-add', 'rejected'],
      ['Tune the block size', 'accepted'],
    ]);
    expect(entry.llmExchanges).toHaveLength(chats(s));
    expect(entry.finalCode).toContain('#define block_size_x 512');
    const text = readFileSync(join(sessions, 'history', `${id}.json`), 'utf8');
    expect(s.requests[0]!.headers.authorization).toBe('Bearer sk-cli-SECRET-42');
    expect(text).not.toContain('SECRET-42');
    expect(text.toLowerCase()).not.toContain('authorization');
  });

  it('replays a session without a model, by id or from its file, and says where a run diverges', async () => {
    const { id, entry, server: s } = await storedSession('replay');
    await s.close();
    const out = join(scratch, 'replay-out');
    const replayed = await auto(['--replay', id, '--out', out]);
    expect(replayed.stderr).not.toMatch(/^error/m);
    expect(replayed.code).toBe(0);
    expect(replayed.stderr).toContain(`replaying session ${id} (14 recorded model exchange(s))`);
    expect(replayed.stderr).toMatch(/replay: 14 model call\(s\) served from the recording in \d+\.\d+ s \(graph and GPU; no model latency\)\n/);
    expect(readFileSync(join(out, 'saxpy.cu'), 'utf8')).toBe(entry.finalCode);
    // The HTML report of the replay: the replayed session's steps, and the command that replays it again.
    const report = reportDataOf(readFileSync(join(out, 'report.html'), 'utf8'));
    expect(report.steps.map((st) => [st.title, st.status])).toEqual(entry.steps.map((st) => [st.title, st.status]));
    expect(report.mode).toContain(`replay of ${id} (openai: scripted-model)`);
    expect(report.reproduce).toMatchObject({ session: id, command: `llm-kernel-tuner auto --replay ${id} --out ${out} --sessions ${sessions}` });
    // A replay is not a new session, and leaves no checkpoints behind.
    expect((await history.list()).sessions.filter((x) => x.id !== id && x.kernelName === 'saxpy' && x.createdAt > entry.updatedAt)).toEqual([]);

    // From an exported session file, on a "GPU" where the block size makes no difference: the replan is asked
    // something the recording does not hold.
    const exported = join(scratch, 'exported.json');
    await history.export(id, 'json', exported);
    const flat = new FakeBackend({ model: { timeMs: (v: FakeVariant) => largestBuffer(v.test) * 1e-6 } });
    const diverged = await auto(['--replay', exported, '--out', join(scratch, 'diverged-out')], flat);
    expect(diverged.code).toBe(1);
    expect(diverged.stderr).toMatch(/error: failed: replay diverged at model call 14: no recorded request matches it\. The nearest is the recording's call 14 of 14 \(for "replan"\)/);
  });

  it('replays the plan the user approved at the prompt, without asking again', async () => {
    const s = await server(loadScript('cli-approval'));
    const file = kernelFile('approved');
    const stdin = new PassThrough();
    stdin.end('2\n');
    const [stdout, stderr] = [sink(), sink()];
    const code = await run([file, '--provider', 'ollama', '--model', 'scripted-model', '--base-url', s.url, '--approve-plan', '--sessions', sessions], { openBackends: async () => [new FakeBackend({ model: { timeMs: saxpyTime } })], stdin, stdout, stderr });
    expect(code).toBe(0);
    const id = sessionIdIn(stderr.text());
    await s.close();
    const replayed = await auto(['--replay', id, '--out', join(scratch, 'approved-replay')]);
    expect(replayed.stderr).not.toMatch(/^error/m);
    expect(replayed.code).toBe(0);
    expect(replayed.stderr).not.toContain('steps to carry out');
    expect(replayed.stderr).toContain('step 1 skipped: removed when the plan was approved');
    expect(readFileSync(join(scratch, 'approved-replay', 'saxpy.cu'), 'utf8')).toBe((await history.get(id))!.finalCode);
  });

  it('starts a branch from a step, as it was or with an edited kernel, and replays the branch', async () => {
    const { id, entry } = await storedSession('branch');
    const s = await server(from('step 3'));
    const asItWas = await auto(['--resume', id, '--from-step', '3', '--base-url', `${s.url}/v1`]);
    expect(asItWas.stderr).not.toMatch(/^error/m);
    expect(asItWas.code).toBe(0);
    const branchId = sessionIdIn(asItWas.stderr);
    expect(asItWas.stderr).toContain(`session ${branchId}: a branch of ${id} from step 3`);
    expect(asItWas.stderr).toContain(`branch of session ${id}: from step 3, as it was`);
    expect(s.remaining()).toBe(0);
    const branch = (await history.get(branchId))!;
    expect(branch).toMatchObject({ status: 'completed', parent: { id, threadId: entry.threadId, stepId: '3', stepTitle: 'Tune the block size' }, run: entry.run });
    expect(branch.llmExchanges).toHaveLength(from('step 3').length);
    // Its log starts with what it inherited (analysis, tests, baseline, the earlier steps) and goes on with its own.
    const types = (branch.report as { events: { type: string }[] }).events.map((e) => e.type).filter((t) => !t.startsWith('llm.') && !t.startsWith('graph.'));
    expect(types.slice(0, 3)).toEqual(['session.started', 'analysis.done', 'tests.ready']);
    expect(types).toContain('session.branched');
    expect(branch.steps.map((st) => st.status)).toEqual(['rejected', 'rejected', 'accepted']);
    expect(await history.get(id)).toEqual(entry);

    const edited = kernelFile('edited', SAXPY.replace('__global__', '// FAKE_SLIGHTLY_FASTER: edited by the user\n__global__'));
    const step2 = FULL.find((t) => t.comment?.startsWith('step 2'))!;
    const e = await server([{ ...step2, match: { contains: ['Fused multiply-add', 'edited by the user'] } }, ...from('step 3')]);
    const withEdit = await auto(['--resume', id, '--from-step', '2', '--kernel', edited, '--base-url', `${e.url}/v1`]);
    expect(withEdit.stderr).not.toMatch(/^error/m);
    expect(withEdit.code).toBe(0);
    expect(withEdit.stderr).toContain('step edit:2 accepted: 1.049 ms -> 1.043 ms');
    expect(requestText(e.requests.find((r) => r.path.endsWith('/chat/completions'))!.body)).toContain('edited by the user');
    const editedBranch = (await history.get(sessionIdIn(withEdit.stderr)))!;
    expect(editedBranch.parent).toMatchObject({ stepId: '2', editedCode: readFileSync(edited, 'utf8') });
    expect(editedBranch.steps.map((st) => [st.title, st.status])).toEqual([
      ['Several elements per thread', 'rejected'],
      ['Kernel edited by the user before step 2', 'accepted'],
      ['Fused multiply-add', 'rejected'],
      ['Tune the block size', 'accepted'],
    ]);

    // The branch replays from where it branched off, over its parent's checkpoints, edit included.
    await e.close();
    const replayed = await auto(['--replay', editedBranch.id, '--out', join(scratch, 'branch-replay')]);
    expect(replayed.stderr).not.toMatch(/^error/m);
    expect(replayed.code).toBe(0);
    expect(replayed.stderr).toContain(`from step 2 of ${id}`);
    expect(readFileSync(join(scratch, 'branch-replay', 'saxpy.cu'), 'utf8')).toBe(editedBranch.finalCode);
    // Its reports hold what the branch inherited (the baseline, step 1) before what the replay ran.
    const report = reportDataOf(readFileSync(join(scratch, 'branch-replay', 'report.html'), 'utf8'));
    expect(report.steps.map((st) => [st.title, st.status])).toEqual(editedBranch.steps.map((st) => [st.title, st.status]));
    expect(report.summary.baselineTimeMs).toBe(entry.baselineTimeMs);
    expect(readFileSync(join(scratch, 'branch-replay', 'report.md'), 'utf8')).toContain('- **Several elements per thread**: rejected');
  });

  it('branches on several GPUs with --gpus, checks an edited kernel before the GPU, and writes no HTML report with --no-report', async () => {
    const { id } = await storedSession('gpus');
    let opened = false;
    const missing = join(scratch, 'gpus', 'nowhere.cu');
    await expect(run(['--resume', id, '--from-step', '3', '--kernel', missing, '--sessions', sessions], { openBackends: async () => ((opened = true), []), stderr: sink() })).rejects.toThrow(
      `cannot read the edited kernel file ${missing}: there is no such file`,
    );
    const renamed = kernelFile('gpus-renamed', SAXPY.replace('void saxpy(', 'void daxpy('));
    await expect(run(['--resume', id, '--from-step', '3', '--kernel', renamed, '--sessions', sessions], { openBackends: async () => ((opened = true), []), stderr: sink() })).rejects.toThrow(
      "no __global__ kernel named 'saxpy' in saxpy.cu; found: daxpy",
    );
    expect(opened).toBe(false);

    const s = await server(from('step 3'));
    const gpus = [0, 1].map((ordinal) => new FakeBackend({ model: { timeMs: saxpyTime }, timeDelayMs: 2, device: { ordinal } }));
    const out = join(scratch, 'gpus-out');
    const branched = await auto(['--resume', id, '--from-step', '3', '--base-url', `${s.url}/v1`, '--gpus', '0,1', '--out', out, '--no-report'], gpus);
    expect(branched.stderr).not.toMatch(/^error/m);
    expect(branched.code).toBe(0);
    expect(branched.stderr).toContain('on 2 x Fake GPU (test double)');
    for (const g of gpus) {
      expect(g.log.filter((e) => e.kind === 'time').length).toBeGreaterThan(0);
      expect(g.disposed).toBe(true);
    }
    expect(existsSync(join(out, 'saxpy.cu'))).toBe(true);
    expect(existsSync(join(out, 'report.html'))).toBe(false);
  });

  it('resumes a session that failed, in its own thread and history entry', async () => {
    // The model's problem sizes stay unusable: the session fails before its baseline, with nothing won.
    const unusable: ScriptTurn = { comment: 'unusable problem size', respond: { content: '{"problemSize": n}' } };
    const s = await server([FULL[0]!, unusable, unusable]);
    const file = kernelFile('resume');
    const failed = await auto([file, '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${s.url}/v1`, '--retries', '1']);
    expect(failed.code).toBe(1);
    expect(existsSync(`${file}.tuned`)).toBe(false);
    const id = sessionIdIn(failed.stderr);
    expect((await history.get(id))!.status).toBe('failed');

    const rest = await server(from('problem size'));
    // Another process runs it (this test process stands in for it, alive): the resume is refused and names it.
    const lockFile = join(sessions, 'locks', `${id}.lock`);
    mkdirSync(join(sessions, 'locks'), { recursive: true });
    writeFileSync(lockFile, JSON.stringify({ pid: process.pid, host: hostname(), since: '2026-11-26T10:00:00.000Z', command: 'llm-kernel-tuner auto --resume' }));
    await expect(auto(['--resume', id, '--base-url', `${rest.url}/v1`])).rejects.toThrow(
      `session ${id} is already running: process ${process.pid} on ${hostname()} (llm-kernel-tuner auto --resume) since 2026-11-26T10:00:00.000Z`,
    );
    expect(rest.remaining()).toBe(from('problem size').length);
    rmSync(lockFile);
    const resumed = await auto(['--resume', id, '--base-url', `${rest.url}/v1`]);
    expect(existsSync(lockFile)).toBe(false);
    expect(resumed.stderr).not.toMatch(/^error/m);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toContain(`resuming session ${id}`);
    expect(rest.remaining()).toBe(0);
    const entry = (await history.get(id))!;
    expect(entry.status).toBe('completed');
    expect(entry.steps.map((st) => st.status)).toEqual(['rejected', 'rejected', 'accepted']);
    // The exchanges of both runs, the failed requests included.
    expect(entry.llmExchanges!.length).toBe(chats(s) + chats(rest));
  });

  it('a model that fails late: the session finishes with what it won, writes it, says why, and --resume goes on', async () => {
    // Step 3 is accepted, then the replans stay unusable (the case of issue 25: a late failure threw the result away).
    const unusable: ScriptTurn = { comment: 'unusable replan', respond: { content: '{"done": "no idea"}' } };
    const s = await server([...FULL.slice(0, FULL.findIndex((t) => t.comment?.startsWith('replan'))), unusable, unusable]);
    const file = kernelFile('late');
    const ran = await auto([file, '--provider', 'openai', '--model', 'scripted-model', '--base-url', `${s.url}/v1`, '--retries', '1']);
    expect(s.remaining()).toBe(0);
    expect(ran.code).toBe(0);
    expect(ran.stderr).not.toMatch(/^error/m);
    const id = sessionIdIn(ran.stderr);
    const stop = 'tuning stopped early at "replan": gave up after 2 attempts (the last: StructuredOutputError: the answer does not match the expected JSON: field `done`: expected boolean, received string; field `steps`: expected array, received undefined); the session ends with the best kernel so far (1 accepted step)';
    expect(ran.stderr).toContain(`warning: ${stop}\n`);
    expect(ran.stderr).toContain(`tuning stopped early (see the warning above): \`llm-kernel-tuner auto --resume ${id} --sessions ${sessions}\` asks the model again from there`);
    // The results of a finished session: the tuned file with step 3's kernel, the diff, the reports naming the stop.
    const out = `${file}.tuned`;
    expect(readFileSync(join(out, 'saxpy.cu'), 'utf8')).toMatch(/#define block_size_x 512[\s\S]*FAKE_BLOCK_AWARE/);
    expect(readFileSync(join(out, 'saxpy.diff'), 'utf8')).toContain('+// FAKE_BLOCK_AWARE');
    // The final kernel's own warning follows (saxpy.cu has no host code to rewrite).
    const noLaunch = 'no launch of saxpy was found in this file: launch it with block (512, 1, 1), grid ((n + 511) / 512, 1, 1)';
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain(`## Warnings\n\n- ${stop}\n- ${noLaunch}\n`);
    expect(reportDataOf(readFileSync(join(out, 'report.html'), 'utf8')).warnings).toEqual([stop, noLaunch]);
    expect(await history.get(id)).toMatchObject({ status: 'completed', speedup: expect.closeTo(1 / 0.6, 5) });

    // Resumed: the replan is asked again, and this time the session ends by itself.
    const rest = await server(from('replan'));
    const resumed = await auto(['--resume', id, '--base-url', `${rest.url}/v1`]);
    expect(rest.mismatches).toEqual([]);
    expect(rest.remaining()).toBe(0);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).not.toContain('tuning stopped early');
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain(`## Warnings\n\n- ${noLaunch}\n`);
    expect(reportDataOf(readFileSync(join(out, 'report.html'), 'utf8')).warnings).toEqual([noLaunch]);
    const entry = (await history.get(id))!;
    expect(entry.status).toBe('completed');
    expect(entry.steps.map((st) => st.status)).toEqual(['rejected', 'rejected', 'accepted']);
    // Now it is done: a resume is refused, a branch is the way to go on.
    await expect(auto(['--resume', id, '--base-url', `${rest.url}/v1`])).rejects.toThrow(`session ${id} is completed: start a branch of it with --from-step STEP`);
  });

  it('explains what it cannot do', async () => {
    const usage = async (args: string[], message: string) => {
      const stderr = sink();
      expect(await run(args, { stderr })).toBe(2);
      expect(stderr.text()).toContain(`llm-kernel-tuner auto: ${message}`);
    };
    await usage(['k.cu', '--provider', 'ollama', '--model', 'm', '--from-step', '2'], '--from-step goes with --resume SESSION');
    await usage(['--resume', 'x', '--kernel', 'k.cu'], '--kernel FILE goes with --from-step: it is the kernel that step starts from');
    await usage(['--replay', 'x', '--model', 'm'], 'a replay asks no model: leave out --model');
    await usage(['--resume', 'x', '--threshold', '5'], 'a stored session runs with its recorded settings: leave out --threshold');
    await usage(['--resume', 'x', '--no-sanitize'], 'a stored session runs with its recorded settings: leave out --no-sanitize');
    await usage(['--resume', 'x', 'k.cu'], 'a stored session brings its own file: leave out k.cu');
    await usage(['--resume', 'x', '--replay', 'y'], '--resume and --replay exclude each other');
    await expect(run(['--replay', 'no-such-session', '--sessions', sessions], { stderr: sink() })).rejects.toThrow(`no session no-such-session in ${sessions} (choose the directory with --sessions)`);
    const { id } = await storedSession('completed');
    await expect(auto(['--resume', id])).rejects.toThrow(`session ${id} is completed: start a branch of it with --from-step STEP`);
  });
});
