// A budget on any strategy: the autonomous one asks the model until the budget refuses the next request, then the
// session ends as finished with what it won, and says which budget stopped it (as a late failure of the model does).
import { afterEach, describe, expect, it } from 'vitest';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import { collect, openaiModel, SAXPY, saxpySessionOptions, scriptedServers } from '../support/engine-harness';

const servers = scriptedServers();
afterEach(() => servers.closeAll());

describe('a session budget', () => {
  it('stops the autonomous strategy at its budget of model calls and keeps the kernel it had', async () => {
    const server = await servers.start('autonomous-session');
    // Analysis (3), the test (1), the plan (1) and its validation (1): the first step's request is the seventh.
    const run = await collect(new LLMKernelTransformer(SAXPY, saxpySessionOptions(openaiModel(server), { budget: { modelCalls: 6 } })));
    expect(run.end).toEqual({ status: 'finished' });
    expect(run.of('llm.usage')).toHaveLength(6);
    expect(server.requests.filter((r) => r.path.endsWith('/chat/completions'))).toHaveLength(6);
    const stopped = run.of('tuning.stopped')[0]!;
    expect(stopped.reason).toBe('BudgetExhaustedError: the model-call budget (6 calls) is spent: 6 calls made');
    const finished = run.of('session.finished')[0]!;
    expect(finished.tracker.steps).toEqual([]);
    expect(finished.tunableCode).toContain('y[i] = a * x[i] + y[i]');
  }, 60_000);
});
