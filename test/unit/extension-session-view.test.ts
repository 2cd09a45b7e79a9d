import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENTS_VERSION, type TuningEvent, type TuningEventBody } from '../../src/engine/progress/events';
import type { HistoryEntry } from '../../src/engine/store/history-store';
import { DEFAULT_AUTONOMOUS, type SessionSettings } from '../../src/engine/session/session-settings';
import { buildReport, isSessionReport, sessionReportData } from '../../src/extension/report';
import { reportFromSession } from '../../src/report/model';
import { acceptedTimeline, focusStep, historyFields, reduceAll, speedup, stepCode, type SessionHeader } from '../../src/engine/session/session-view';
import { progressMessage } from '../../src/extension/progress';

const header: SessionHeader = { sessionId: 's1', kernelName: 'saxpy', fileName: 'saxpy.cu', startedAt: '2026-01-01T10:00:00.000Z', model: 'openai: m', strategy: 'autonomous' };

let clock = 0;
const ev = (body: TuningEventBody): TuningEvent => ({ ...body, v: EVENTS_VERSION, at: new Date(Date.UTC(2026, 0, 1, 10, 0, clock++)).toISOString() }) as TuningEvent;

function session(): TuningEvent[] {
  clock = 0;
  const steps = [
    { id: '1', title: 'Several elements per thread', details: 'd1', depth: 0, status: 'pending' as const },
    { id: '2', title: 'Tune the block size', details: 'd2', depth: 0, status: 'pending' as const },
  ];
  return [
    ev({ type: 'session.started', threadId: 's1', resumed: false, kernel: { name: 'saxpy', signature: '__global__ void saxpy(float *y)' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } }),
    ev({ type: 'analysis.done', description: 'y = a*x + y', problemSize: ['n'], outputs: ['y'] }),
    ev({ type: 'tests.ready', tests: [{ id: 't1', origin: 'generated', problemSize: [1048576], outputs: ['y'], bytes: 8, timeMs: 1 }] }),
    ev({ type: 'baseline', timeMs: 2, params: { block_size_x: 256 }, testId: 't1' }),
    ev({ type: 'plan', reason: 'initial', steps }),
    ev({ type: 'step.started', stepId: '1', title: 'Several elements per thread' }),
    ev({ type: 'candidate', stepId: '1', candidate: 1, attempt: 1, code: 'wrong', diff: '', tuneParams: { e: [1, 2] }, restrictions: [] }),
    ev({ type: 'step.rejected', stepId: '1', reason: { kind: 'wrong_result', summary: 'y differs at 3 elements' } }),
    ev({ type: 'llm.usage', purpose: 'step 1', model: 'm', promptTokens: 100, completionTokens: 20 }),
    ev({ type: 'step.started', stepId: '2', title: 'Tune the block size' }),
    ev({ type: 'candidate', stepId: '2', candidate: 1, attempt: 1, code: 'tuned code', diff: '@@ -1 +1 @@\n-a\n+b\n', tuneParams: { block_size_x: [128, 512] }, restrictions: ['block_size_x <= 512'] }),
    ev({
      type: 'configs.evaluated',
      stepId: '2',
      candidate: 1,
      done: 1,
      total: 2,
      failures: 0,
      bestTimeMs: 1.5,
      result: { key: '128', config: { block_size_x: 128 }, status: 'ok', timeMs: 1.5, driver: { num_regs: 16, local_mem_bytes: 0, static_shared_mem_bytes: 0, occupancy: 1 }, energy: { nvml_energy: 0.0004, nvml_power: 260 } },
    }),
    ev({ type: 'configs.evaluated', stepId: '2', candidate: 1, done: 2, total: 2, failures: 1, bestTimeMs: 1.5, result: { key: '512', config: { block_size_x: 512 }, status: 'compile_error', error: 'boom' } }),
    ev({ type: 'step.accepted', stepId: '2', candidate: 1, oldTimeMs: 2, newTimeMs: 1.5, improvementPct: 25, bestParams: { block_size_x: 128 } }),
    ev({ type: 'llm.usage', purpose: 'step 2', model: 'm', promptTokens: 50, completionTokens: 5 }),
  ];
}

describe('session view reducer', () => {
  it('follows a session from start to the accepted step', () => {
    const view = reduceAll(header, session());
    expect(view.status).toBe('running');
    expect(view.device?.name).toBe('GPU');
    expect(view.baseline?.timeMs).toBe(2);
    expect(view.order).toEqual(['1', '2']);
    expect(view.steps['1']).toMatchObject({ status: 'rejected', reason: 'wrong result: y differs at 3 elements' });
    expect(view.steps['2']!.status).toBe('accepted');
    expect(view.steps['2']!.candidates[0]!.configs.map((c) => c.key)).toEqual(['128', '512']);
    expect(view.steps['2']!.candidates[0]).toMatchObject({ total: 2, failures: 1, bestTimeMs: 1.5 });
    expect(view.usage).toEqual({ promptTokens: 150, completionTokens: 25, calls: 2, costUsd: null });
    expect(view.eventCount).toBe(15);
    expect(view.firstEventAt).toBe('2026-01-01T10:00:00.000Z');
    expect(view.lastEventAt).toBe('2026-01-01T10:00:14.000Z');
    expect(acceptedTimeline(view)).toEqual([
      { label: 'baseline', timeMs: 2 },
      { label: 'Tune the block size', timeMs: 1.5, step: 2 },
    ]);
    expect(speedup(view)).toBeCloseTo(2 / 1.5);
    expect(stepCode(view, '2')).toBe(
      ['// After the step "Tune the block size" of llm-kernel-tuner; the tuning report states the launch geometry.', '#ifndef block_size_x', '#define block_size_x 128', '#endif', '', 'tuned code'].join('\n'),
    );
    expect(stepCode(view, '1')).toBeUndefined();
    expect(focusStep(view)?.id).toBe('2');
    expect(progressMessage(view)).toBe('step 2/2: Tune the block size, 2/2 configurations');
  });

  it('a new attempt of a candidate starts its configurations afresh; a replan keeps finished steps before the new ones', () => {
    const events = session();
    events.push(
      ev({ type: 'replanning', round: 1, maxRounds: 3 }),
      ev({ type: 'plan', reason: 'replanned', steps: [{ id: '3', title: 'Unroll', details: '', depth: 0, status: 'pending' }] }),
      ev({ type: 'step.started', stepId: '3', title: 'Unroll' }),
      ev({ type: 'candidate', stepId: '3', candidate: 1, attempt: 1, code: 'c1', diff: '', tuneParams: {}, restrictions: [] }),
      ev({ type: 'configs.evaluated', stepId: '3', candidate: 1, done: 1, total: 1, failures: 0, bestTimeMs: 1, result: { key: 'a', config: {}, status: 'ok', timeMs: 1 } }),
      ev({ type: 'candidate', stepId: '3', candidate: 1, attempt: 2, code: 'c2', diff: '', tuneParams: {}, restrictions: [] }),
    );
    const view = reduceAll(header, events);
    expect(view.order).toEqual(['1', '2', '3']);
    expect(view.steps['3']!.candidates).toHaveLength(1);
    expect(view.steps['3']!.candidates[0]).toMatchObject({ attempt: 2, code: 'c2', configs: [] });
    expect(view.replanning).toEqual({ round: 1, maxRounds: 3 });
    expect(view.currentStepId).toBe('3');
  });

  it('plan approval, failure, cancel and the host override of an unfinished session', () => {
    const awaiting = reduceAll(header, [ev({ type: 'plan.awaiting_approval', steps: [{ id: '1', title: 'x', details: '', depth: 0, status: 'pending' }] })]);
    expect(awaiting).toMatchObject({ status: 'awaiting_approval', planAwaitingApproval: true });
    expect(progressMessage(awaiting)).toBe('waiting for plan approval');
    const approved = reduceAll(header, [
      ev({ type: 'plan.awaiting_approval', steps: [{ id: '1', title: 'x', details: '', depth: 0, status: 'pending' }] }),
      ev({ type: 'plan', reason: 'approved', steps: [{ id: '1', title: 'x edited', details: '', depth: 0, status: 'pending' }] }),
    ]);
    expect(approved).toMatchObject({ status: 'running', planAwaitingApproval: false });
    expect(approved.steps['1']!.title).toBe('x edited');
    expect(reduceAll(header, [ev({ type: 'session.failed', error: { name: 'E', message: 'no' } })])).toMatchObject({ status: 'failed', error: 'no' });
    expect(reduceAll(header, [ev({ type: 'session.cancelled' })]).status).toBe('cancelled');
    expect(reduceAll({ ...header, statusOverride: 'interrupted' }, session()).status).toBe('interrupted');
    expect(reduceAll({ ...header, statusOverride: 'interrupted' }, [ev({ type: 'session.cancelled' })]).status).toBe('cancelled');
  });

  it('a session whose tuning stopped early: completed with the best kernel so far, the stop in its notices and reports, until a resumed run goes on', () => {
    const finished = (speedupAt: number) =>
      ev({
        type: 'session.finished',
        finalCode: 'final',
        tunableCode: 'tuned code',
        bestParams: { block_size_x: 128 },
        tuneParams: { block_size_x: [128, 512] },
        restrictions: [],
        tracker: { baselineTimeMs: 2, finalTimeMs: 2 / speedupAt, speedup: speedupAt, improvementPct: 25, steps: [] },
        launch: { block: [128, 1, 1], grid: ['(n + 127) / 128', '1', '1'], problemSize: ['n'] },
        launchSites: [],
      });
    const stop = 'tuning stopped early at "replan": gave up after 4 attempts (the last: InvalidAnswerError: "9" is not the id of a step to judge); the session ends with the best kernel so far (1 accepted step)';
    const events = [
      ...session(),
      ev({ type: 'replanning', round: 1, maxRounds: 3 }),
      ev({ type: 'tuning.stopped', during: 'replan', reason: 'gave up after 4 attempts (the last: InvalidAnswerError: "9" is not the id of a step to judge)', error: { name: 'RetriesExhaustedError', message: 'gave up after 4 attempts' }, acceptedSteps: 1 }),
      ev({ type: 'warning', message: 'no launch of saxpy was found in this file' }),
      finished(4 / 3),
    ];
    const view = reduceAll(header, events);
    expect(view).toMatchObject({ status: 'completed', stoppedEarly: stop, final: { finalCode: 'final' } });
    expect(view.notices.map((n) => n.text)).toEqual([stop, 'no launch of saxpy was found in this file']);
    expect(historyFields(view)).toMatchObject({ status: 'completed', finalCode: 'final' });
    expect(reportFromSession({ header, events, reproduce: { command: 'c', notes: [] } }).warnings).toEqual([stop, 'no launch of saxpy was found in this file']);

    // Resumed: the new run goes on, and its own end is the session's.
    const resumed = [...events, ev({ type: 'session.started', threadId: 's1', resumed: true, kernel: { name: 'saxpy', signature: '__global__ void saxpy(float *y)' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } }), finished(2)];
    expect(reduceAll(header, resumed).stoppedEarly).toBeUndefined();
    expect(reportFromSession({ header, events: resumed, reproduce: { command: 'c', notes: [] } }).warnings).toEqual([]);
  });

  it('puts the user\'s edit of a branch before the step it starts, so the steps and the chart read in order', () => {
    const inherited = session().slice(0, 8);
    const branch = [
      ...inherited,
      ev({ type: 'session.branched', parentThreadId: 's0', stepId: '2', edited: true }),
      ev({ type: 'step.started', stepId: 'edit:2', title: 'Kernel edited by the user before step 2' }),
      ev({ type: 'step.accepted', stepId: 'edit:2', candidate: 0, oldTimeMs: 2, newTimeMs: 1.8, improvementPct: 10, bestParams: {} }),
      ev({ type: 'step.started', stepId: '2', title: 'Tune the block size' }),
      ev({ type: 'step.accepted', stepId: '2', candidate: 1, oldTimeMs: 1.8, newTimeMs: 1.2, improvementPct: 33, bestParams: { block_size_x: 128 } }),
    ];
    const view = reduceAll(header, branch);
    expect(view.order).toEqual(['1', 'edit:2', '2']);
    expect(acceptedTimeline(view).map((p) => [p.label, p.timeMs])).toEqual([
      ['baseline', 2],
      ['Kernel edited by the user before step 2', 1.8],
      ['Tune the block size', 1.2],
    ]);
    expect(historyFields(view).steps.map((s) => `${s.stepId} ${s.status}`)).toEqual(['1 rejected', 'edit:2 accepted', '2 accepted']);
    // A branch as it was has no such step.
    expect(reduceAll(header, [...inherited, ev({ type: 'session.branched', parentThreadId: 's0', stepId: '2', edited: false })]).order).toEqual(['1', '2']);
  });

  it('builds the history fields and the report, with the configurations of the accepted step for the cache export', () => {
    const events = session();
    const view = reduceAll(header, events);
    const fields = historyFields(view);
    expect(fields).toMatchObject({ status: 'running', baselineTimeMs: 2, bestTimeMs: 1.5, device: { name: 'GPU' } });
    expect(fields.speedup).toBeCloseTo(4 / 3);
    expect(fields.steps).toEqual([
      { stepId: '1', title: 'Several elements per thread', status: 'rejected', reason: 'wrong result: y differs at 3 elements' },
      { stepId: '2', title: 'Tune the block size', status: 'accepted', timeMs: 1.5, improvementPct: 25 },
    ]);
    const report = buildReport(header, events, view);
    expect(isSessionReport(report)).toBe(true);
    expect(report.problemSize).toEqual([1048576]);
    expect(report.configurations).toEqual([
      // With what else was measured, under Kernel Tuner's names, for the cache export's top-level fields.
      { config: { block_size_x: 128 }, timeMs: 1.5, observed: { num_regs: 16, local_mem_bytes: 0, static_shared_mem_bytes: 0, occupancy: 1, nvml_energy: 0.0004, nvml_power: 260 } },
      { config: { block_size_x: 512 }, failure: 'compile_error' },
    ]);
  });

  it("makes the HTML report of a stored branch: the steps it inherited and its own, its own limits, its settings' compiler options, how it replays", () => {
    const limits = (bandwidthGBps: number) => ev({ type: 'device.limits', limits: { bandwidthGBps, bandwidthMethod: 'copy', memcpyGBps: bandwidthGBps, fp32GFlops: 50_000, fp32Formula: 'formula' } });
    const parent = session();
    const inherited = [...parent.slice(0, 1), limits(3000), ...parent.slice(1, 8)];
    const own = [
      ev({ type: 'session.started', threadId: 's2', resumed: false, kernel: { name: 'saxpy', signature: '__global__ void saxpy(float *y)' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } }),
      ev({ type: 'graph.described', graphs: [] }),
      limits(4000),
      ev({ type: 'session.branched', parentThreadId: 's1', stepId: '2', edited: false }),
      ...parent.slice(9, 14),
    ];
    const run: SessionSettings = { fileName: 'saxpy.cu', includePaths: [], compilerOptions: ['-DN=4096'], strategy: DEFAULT_AUTONOMOUS, retries: 1, performanceThreshold: 1, iterations: 32, timePerTestS: 15, structuredOutputType: 'default', stripThinking: false, approvePlan: false, model: { provider: 'openai', model: 'm' } };
    const exchange = { purpose: 'step 2', model: 'm', params: {}, messages: [], response: { content: 'x' }, startedAt: '2026-01-01T00:00:00.000Z', durationMs: 1 };
    const branchHeader = { ...header, sessionId: 's2' };
    const entry = {
      id: 's2',
      kernelName: 'saxpy',
      filePath: 'saxpy.cu',
      createdAt: header.startedAt,
      updatedAt: header.startedAt,
      device: { name: 'GPU' },
      status: 'completed',
      steps: [],
      originalCode: 'code',
      threadId: 's2',
      report: buildReport(branchHeader, [...inherited, ...own], reduceAll(branchHeader, [...inherited, ...own])),
      run,
      llmExchanges: [exchange],
    } satisfies HistoryEntry;
    const data = sessionReportData(entry)!;
    expect(data.steps.map((st) => [st.title, st.status])).toEqual([
      ['Several elements per thread', 'rejected'],
      ['Tune the block size', 'accepted'],
    ]);
    expect(data.summary).toMatchObject({ baselineTimeMs: 2, bestTimeMs: 1.5 });
    expect(data.limits?.bandwidthGBps).toBe(4000);
    expect(data.compiler.options).toEqual(['-DN=4096']);
    expect(data.reproduce).toMatchObject({ session: 's2', file: 'saxpy.cu' });
    expect(data.reproduce.notes.at(-1)).toContain('"Replay with the recorded model answers"');
    expect(data.timing).toBe('each the median of 32 timed launches after a warm-up launch, every configuration checked against the original kernel first');
    // A session stored before exchanges were recorded replays nothing; one stored without events has no report.
    const { llmExchanges: _none, ...older } = entry;
    expect(sessionReportData(older)!.reproduce.notes.join(' ')).not.toContain('Replay');
    expect(sessionReportData({ ...entry, report: undefined })).toBeUndefined();
  });

  it("charts the step the panel's chart shows, the accepted one, numbered as the plan numbers it (the recorded H100 session)", () => {
    const events = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'sessions', 'h100-matmul-naive.events.json'), 'utf8')) as TuningEvent[];
    const h100: SessionHeader = { ...header, sessionId: 'h100', kernelName: 'matmul_naive', fileName: 'matmul_naive.cu' };
    const view = reduceAll(h100, events);
    // Two configurations each: the rejected first step's failed ones, the accepted second step's timed ones.
    expect(view.order.map((id) => [id, view.steps[id]!.status, view.steps[id]!.candidates.at(-1)!.configs.length])).toEqual([
      ['1', 'rejected', 2],
      ['2', 'accepted', 2],
    ]);
    expect(focusStep(view)?.id).toBe('2');
    const data = reportFromSession({ header: h100, events, reproduce: { command: 'x', notes: [] } });
    expect(data.chartStepId).toBe('2');
    expect(data.timeline.map((p) => p.step)).toEqual([undefined, 2]);
  });

  it('charts the last accepted step of a finished session, not a rejected one after it; a running step while it runs', () => {
    clock = 100;
    const events = [
      ...session(),
      ev({ type: 'step.started', stepId: '3', title: 'Unroll' }),
      ev({ type: 'candidate', stepId: '3', candidate: 1, attempt: 1, code: 'c', diff: '', tuneParams: {}, restrictions: [] }),
      ev({ type: 'configs.evaluated', stepId: '3', candidate: 1, done: 1, total: 1, failures: 0, bestTimeMs: 1.49, result: { key: 'a', config: {}, status: 'ok', timeMs: 1.49 } }),
    ];
    expect(focusStep(reduceAll(header, events))?.id).toBe('3');
    const finished = [...events, ev({ type: 'step.rejected', stepId: '3', reason: { kind: 'insufficient_gain', oldTimeMs: 1.5, newTimeMs: 1.49, improvementPct: 0.7, thresholdPct: 1 } })];
    const view = reduceAll(header, [...finished, ev({ type: 'session.cancelled' })]);
    expect(focusStep(view)?.id).toBe('2');
  });
});

describe('profiles in the session view and its report', () => {
  const driver = { num_regs: 40, local_mem_bytes: 0, static_shared_mem_bytes: 0, dynamic_shared_mem_bytes: 0, active_blocks_per_sm: 8, active_warps_per_sm: 64, occupancy: 1, occupancy_source: 'driver' as const };
  const original = { config: { block_size_x: 256 }, source: 'driver' as const, summary: ['saxpy: 40 registers per thread'], driver, unavailable: { reason: 'ncu-not-found' as const, message: 'Nsight Compute (ncu) is not installed: looked on PATH' } };
  const step2 = { config: { block_size_x: 128 }, source: 'ncu' as const, summary: ['saxpy: memory-bound, DRAM throughput 91% of peak'], driver, ncu: { numbers: { topStalls: [], bound: 'memory' as const }, version: '2025.3.1' } };
  const events = () => {
    const all = session();
    const baseline = all.findIndex((e) => e.type === 'baseline');
    const accepted = all.findIndex((e) => e.type === 'step.accepted');
    return [...all.slice(0, baseline + 1), ev({ type: 'profile', profile: original }), ...all.slice(baseline + 1, accepted), ev({ type: 'profile', stepId: '2', candidate: 1, profile: step2 }), ...all.slice(accepted)];
  };

  it("keeps the original kernel's profile and each candidate's, where the panel shows them", () => {
    const view = reduceAll(header, events());
    expect(view.baselineProfile).toEqual(original);
    expect(view.steps['2']!.candidates[0]!.profile).toEqual(step2);
    expect(view.steps['2']!.candidates[0]!.configs).toHaveLength(2);
    // A new attempt of the candidate is another kernel: the profile goes with the old one.
    const again = reduceAll(header, [...events(), ev({ type: 'candidate', stepId: '2', candidate: 1, attempt: 2, code: 'c', diff: '', tuneParams: {}, restrictions: [] })]);
    expect(again.steps['2']!.candidates[0]!.profile).toBeUndefined();
  });

  it('puts them in the HTML report with where the lines come from, and why not from Nsight Compute', () => {
    const entry = { id: 's1', kernelName: 'saxpy', filePath: 'saxpy.cu', createdAt: header.startedAt, updatedAt: header.startedAt, device: { name: 'GPU' }, status: 'running', steps: [], originalCode: 'code', threadId: 's1', report: buildReport(header, events(), reduceAll(header, events())) } satisfies HistoryEntry;
    const data = sessionReportData(entry)!;
    expect(data.baselineProfile).toEqual({ config: { block_size_x: 256 }, source: "the driver's metrics: Nsight Compute is not installed. Nsight Compute (ncu) is not installed: looked on PATH", summary: ['saxpy: 40 registers per thread'] });
    expect(data.steps[1]!.profile).toEqual({ config: { block_size_x: 128 }, source: 'Nsight Compute 2025.3.1, one launch', summary: ['saxpy: memory-bound, DRAM throughput 91% of peak'] });
    expect(data.steps[0]!.profile).toBeUndefined();
  });
});

describe('an evolutionary session evolved further', () => {
  it('runs again in the view: the resumed run is running, and its population stops anew', () => {
    const recorded = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'sessions', 'evolution-saxpy.fake-gpu.json'), 'utf8')) as { report: { header: SessionHeader; events: TuningEvent[] } };
    const { header: h, events } = recorded.report;
    const finished = reduceAll(h, events);
    expect(finished.status).toBe('completed');
    expect(finished.population!.stopped).toBeDefined();
    const started = events.find((e) => e.type === 'session.started')!;
    const again = reduceAll(h, [...events, { ...started, resumed: true }]);
    expect(again.status).toBe('running');
    expect(again.population!.stopped).toBeUndefined();
    expect(again.population!.variants).toEqual(finished.population!.variants);
    // A finished session reported again (a stream of it that only reports) is completed again with its end.
    const finish = events.find((e) => e.type === 'session.finished')!;
    expect(reduceAll(h, [...events, { ...started, resumed: true }, finish]).status).toBe('completed');
  });
});
