// compute-sanitizer in an LLM session, over the real OpenAI client (scripted server) and the fake backend with
// compute-sanitizer's test double (the real sanitizer code, the fake tool and addon): a candidate that would be accepted
// is run under the tools first; a race rejects it and goes back to the model with the findings at the file's lines and
// their text, like a wrong result; a candidate that gains too little is never checked; spent retries reject the step
// with the findings, in the event stream, the panel's view and the report.
import { afterEach, describe, expect, it } from 'vitest';
import { defaultRetryPolicy } from '../../src/engine/candidate/feedback';
import { reduceAll } from '../../src/engine/session/session-view';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { reportFromSession } from '../../src/report/model';
import { collect, openaiModel, requestText, SAXPY, saxpyTime, serve } from '../support/engine-harness';
import { FakeBackend } from '../support/fake-backend';
import { loadScript, type ScriptedLlmServer } from '../support/scripted-llm-server';

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const session = (retries: number, sanitize = true) =>
  new LLMKernelTransformer(SAXPY, {
    llm: openaiModel(server!),
    backend: new FakeBackend({ model: { timeMs: saxpyTime }, sanitize: true }),
    tuningStrategy: new AutonomousTuningStrategy({ retryPolicy: defaultRetryPolicy(retries), withReplanning: true }),
    sanitize,
  });

describe('compute-sanitizer in a session', () => {
  it('rejects a racing rewrite that passes the tests, tells the model the findings, and accepts the fix', async () => {
    server = await serve('sanitizer-session');
    const run = await collect(session(1));
    expect(server.mismatches).toEqual([]);
    expect(server.remaining()).toBe(0);
    expect(run.end).toEqual({ status: 'finished' });

    // Step 1's first answer races (hazards), its second is clean; step 2 gains too little and is never checked.
    const sanitized = run.of('sanitized');
    expect(sanitized.map((e) => [e.stepId, e.verdict.status])).toEqual([
      ['1', 'hazards'],
      ['1', 'clean'],
    ]);
    const first = sanitized[0]!.verdict;
    if (first.status !== 'hazards') throw new Error('expected hazards');
    expect(first.config).toEqual({ block_size_x: 512 });
    expect(first.findings.map((f) => [f.tool, f.kind, f.severity, f.accessesAt?.map((a) => a?.line)])).toEqual([['racecheck', 'race', 'warning', [5, 7]]]);
    // Checked on a reduced problem, which the original kernel vouches for.
    expect(first.launch).toEqual({ grid: [2, 1, 1], block: [512, 1, 1], reduced: { n: { from: 1048576, to: 1024 } } });
    expect(first.note).toMatch(/on which the reference kernel runs clean$/);
    expect(run.of('llm.retry').map((e) => `${e.purpose}: ${e.error}`)).toEqual(['step 1: SanitizerHazardError']);

    // The model is told what compute-sanitizer found, where, in the code it wrote.
    const retry = server.requests.find((r) => r.turn === 8)!;
    const told = requestText(retry.body);
    expect(told).toContain('The kernel passed the tests, but compute-sanitizer found hazards in it at configuration {"block_size_x":512}');
    expect(told).toContain(
      '- racecheck: a race between a write at saxpy.cu:5 (`staged[threadIdx.x] = i < n ? x[i] : 0.0f;  // fake-sanitizer: warp-race-write`) and a read at saxpy.cu:7 (`if (j < n) y[j] = a * staged[threadIdx.x ^ 31] + y[j];  // fake-sanitizer: warp-race-read`) (992 hazards), with no barrier between them (reported as a warning: still a data race)',
    );
    expect(told).toContain('__syncwarp() within a warp');

    expect(run.of('step.accepted').map((e) => e.stepId)).toEqual(['1']);
    expect(run.of('step.rejected').map((e) => [e.stepId, e.reason.kind])).toEqual([['2', 'insufficient_gain']]);
    expect(run.of('session.finished')[0]!.finalCode).toContain('__syncwarp();');
    // The panel shows the accepted candidate's clean verdict.
    const view = reduceAll({ sessionId: 's', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: '', model: 'scripted', strategy: 'autonomous' }, run.events);
    expect(view.steps['1']!.candidates[0]!.sanitizer).toMatchObject({ status: 'clean', tools: ['memcheck', 'racecheck', 'synccheck', 'initcheck'] });
  });

  it('rejects the step with the findings once the retries are spent: in the events, the panel and the report', async () => {
    // Step 1's first answer and no retry; step 2 then starts from the original kernel (nothing tunable: no restrictions).
    const script = loadScript('sanitizer-session');
    server = await serve([...script.slice(0, 8), script.find((t) => t.comment?.startsWith('step 2'))!, script.at(-1)!]);
    const run = await collect(session(0));
    expect(server.mismatches).toEqual([]);
    expect(run.end).toEqual({ status: 'finished' });
    const [rejected] = run.of('step.rejected');
    expect(rejected).toMatchObject({ stepId: '1', reason: { kind: 'hazard', attempts: 1, findings: [expect.stringMatching(/^racecheck: a race between a write at saxpy\.cu:5 /)] } });
    const header = { sessionId: 's', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: '', model: 'scripted', strategy: 'autonomous' as const };
    expect(reduceAll(header, run.events).steps['1']!.reason).toMatch(/^hazards found by compute-sanitizer after 1 attempt\(s\): racecheck: a race between/);
    const report = reportFromSession({ header, events: run.events, reproduce: { command: 'test', notes: [] } });
    expect(report.steps[0]!.sanitizer).toMatchObject({ status: 'hazards', config: { block_size_x: 512 }, summary: expect.stringMatching(/^compute-sanitizer 2025\.3\.1: 1 finding \(/), findings: [expect.stringMatching(/^racecheck: a race between a write at saxpy\.cu:5/)] });
  });

  it('accepts without checking where the session says not to', async () => {
    // Step 1's first answer is accepted as it is; then step 2 (with its restrictions) and the replan.
    server = await serve([...loadScript('sanitizer-session').slice(0, 8), ...loadScript('sanitizer-session').slice(-3)]);
    const run = await collect(session(0, false));
    expect(server.mismatches).toEqual([]);
    expect(run.of('sanitized')).toEqual([]);
    expect(run.of('step.accepted').map((e) => e.stepId)).toEqual(['1']);
  });
});
