// What a session's event log says about its steps: where each started, from which kernel (what a branch shows the user
// to edit), what a branch inherits of it, and the plan approvals a replay answers with.
import { describe, expect, it } from 'vitest';
import { makeEvent, type TuningEventBody } from '../../src/engine/progress/events';
import { approvalsOf, codeBeforeStep, eventsBeforeStep, exchangesOf, inheritedEvents, startedStepsOf } from '../../src/engine/session/session-log';

const ORIGINAL = '__global__ void k(float *y) { y[0] = 0; }\n';
const candidate = (stepId: string, candidate: number, code: string): TuningEventBody => ({ type: 'candidate', stepId, candidate, attempt: 1, code, diff: '', tuneParams: {}, restrictions: [] });
const accepted = (stepId: string, candidate = 0): TuningEventBody => ({ type: 'step.accepted', stepId, candidate, oldTimeMs: 2, newTimeMs: 1, improvementPct: 50, bestParams: {} });
const exchange = { purpose: 'step 1', model: 'm', params: {}, messages: [], response: { content: 'x' }, startedAt: '2026-01-01T00:00:00.000Z', durationMs: 1 };

const log = [
  { type: 'session.started', threadId: 't', resumed: false, kernel: { name: 'k', signature: '' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } },
  { type: 'plan', reason: 'approved', steps: [{ id: '1', title: 'A', details: 'a', depth: 0, status: 'pending' }, { id: '2', title: 'B', details: '', depth: 0, status: 'pending' }, { id: '0', title: 'done', details: '', depth: 0, status: 'accepted' }] },
  { type: 'step.started', stepId: '1', title: 'A' },
  { type: 'llm.exchange', exchange },
  candidate('1', 0, 'A first try'),
  candidate('1', 1, 'A other candidate'),
  candidate('1', 0, 'A accepted attempt'),
  accepted('1'),
  { type: 'step.started', stepId: 'edit:2', title: 'Kernel edited by the user before step 2' },
  candidate('edit:2', 0, 'my edit'),
  accepted('edit:2'),
  { type: 'step.started', stepId: '2', title: 'B' },
  candidate('2', 0, 'B'),
  { type: 'step.rejected', stepId: '2', reason: { kind: 'wrong_result', summary: 'no' } },
  { type: 'session.finished' } as unknown as TuningEventBody,
].map((b) => makeEvent(b as TuningEventBody));

describe('the session log', () => {
  it('knows which steps started, and the kernel each started from', () => {
    expect(startedStepsOf(log)).toEqual([{ stepId: '1', title: 'A' }, { stepId: '2', title: 'B' }]);
    expect(codeBeforeStep(log, '1', ORIGINAL)).toBe(ORIGINAL);
    // The last accepted step before 2 is the user's edit; of step 1, the accepted attempt of candidate 0.
    expect(codeBeforeStep(log, '2', ORIGINAL)).toBe('my edit');
    expect(codeBeforeStep(log.filter((e) => !(e.type === 'step.accepted' && e.stepId === 'edit:2')), '2', ORIGINAL)).toBe('A accepted attempt');
  });

  it('gives a branch what came before its step, without the exchanges and the ending', () => {
    expect(eventsBeforeStep(log, '2').map((e) => e.type)).toEqual(['session.started', 'plan', 'step.started', 'candidate', 'candidate', 'candidate', 'step.accepted', 'step.started', 'candidate', 'step.accepted']);
    expect(eventsBeforeStep(log, '1').map((e) => e.type)).toEqual(['session.started', 'plan']);
    // A run that ended before the step (cancelled, then resumed) leaves its ending out too.
    const resumed = [...log.slice(0, 8), makeEvent({ type: 'session.cancelled' }), ...log.slice(8)];
    expect(eventsBeforeStep(resumed, '2')).toEqual(eventsBeforeStep(log, '2'));
    expect(exchangesOf(log)).toEqual([exchange]);
  });

  it("cuts a branch's inheritance where the strategy's node run that started the step began: the branch starts from the checkpoint before it", () => {
    const node = (node: string, graph: string, task: string) => makeEvent({ type: 'graph.node', graph, node, task, phase: 'started' });
    const child = (n: number): TuningEventBody => ({ type: 'population.child', child: n, stepId: `c${n}`, operator: 'mutate', parents: ['v0'] });
    const evolving = [
      log[0]!,
      node('tune', 'session', 's'),
      node('evolve', 'tune', 'e1'),
      makeEvent(child(0)),
      makeEvent({ type: 'step.started', stepId: 'c0', title: 'mutation of v0' }),
      node('evolve', 'tune', 'e2'),
      makeEvent(child(1)),
      makeEvent({ type: 'step.started', stepId: 'c1', title: 'mutation of v0' }),
      makeEvent({ type: 'step.started', stepId: 'c2', title: 'mutation of v0' }),
    ];
    // The run that started c2 began at e2: c1, decided and started in it, is not in the checkpoint the branch starts from.
    expect(eventsBeforeStep(evolving, 'c2')).toEqual(evolving.slice(0, 5));
    expect(eventsBeforeStep(evolving, 'c0')).toEqual(evolving.slice(0, 2));
  });

  it("finds in a branch's log what it inherited: everything before the run that branched off", () => {
    const inherited = eventsBeforeStep(log, '2');
    const own = [
      { type: 'session.started', threadId: 'b', resumed: false, kernel: { name: 'k', signature: '' }, device: { name: 'GPU', arch: 'sm_90', computeCapability: [9, 0] } },
      { type: 'session.branched', parentThreadId: 't', stepId: '2', edited: false },
      { type: 'step.started', stepId: '2', title: 'B' },
    ].map((b) => makeEvent(b as TuningEventBody));
    expect(inheritedEvents([...inherited, ...own])).toEqual(inherited);
    // Resumed later, the branch's log starts again after it branched: the inheritance stays where it was.
    expect(inheritedEvents([...inherited, ...own, own[0]!, own[2]!])).toEqual(inherited);
    expect(inheritedEvents(log)).toEqual([]);
  });

  it('turns approved plans into the answers that reproduce them', () => {
    expect(approvalsOf(log)).toEqual([{ steps: [{ id: '1', title: 'A', details: 'a' }, { id: '2', title: 'B', details: '' }] }]);
  });
});
