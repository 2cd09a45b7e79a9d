// Replaying a recorded session: the real graph runs with a ReplayChatModel that serves the recorded answers (no model,
// no HTTP), reaches the same result, and stops with a message naming the call and the difference where the run
// departs from the recording.
import { afterEach, describe, expect, it } from 'vitest';
import type { TuningEvent } from '../../src/engine/progress/events';
import type { LlmExchange } from '../../src/engine/llm/exchange';
import { ReplayChatModel, ReplayDivergenceError } from '../../src/engine/llm/replay';
import { exchangesOf } from '../../src/engine/session/session-log';
import { AutonomousTuningStrategy } from '../../src/engine/strategies/autonomous';
import { LLMKernelTransformer, type LLMKernelTransformerOptions } from '../../src/engine/session/transformer';
import { collect, saxpySessionOptions, type Collected, ollamaModel, openaiModel, SAXPY, scriptedServers, serve } from '../support/engine-harness';
import { FakeBackend, largestBuffer, type FakeVariant } from '../support/fake-backend';
import { withoutGraphEvents } from '../support/graph-events';
import { loadScript, type ScriptTurn } from '../support/scripted-llm-server';

const servers = scriptedServers();
afterEach(() => servers.closeAll());
const server = (script: string | ScriptTurn[]) => servers.start(script);

const options = saxpySessionOptions;

/** A session recorded against the scripted server, which is closed afterwards: a replay that asked it would fail. */
async function recorded(script: Parameters<typeof serve>[0], extra: Partial<LLMKernelTransformerOptions> = {}, order?: 'first-match'): Promise<{ run: Collected; exchanges: LlmExchange[] }> {
  const s = await serve(script, order ? { order } : {});
  const run = await collect(new LLMKernelTransformer(SAXPY, options(openaiModel(s), extra))).finally(() => s.close());
  expect(run.end).toEqual({ status: 'finished' });
  return { run, exchanges: exchangesOf(run.events) };
}

const outcomes = (events: readonly TuningEvent[]) =>
  events.flatMap((e) => (e.type === 'step.accepted' || e.type === 'step.rejected' ? [`${e.type} ${e.stepId}`] : []));

describe('replaying a recorded session', () => {
  it('runs the whole graph again with the recorded answers and no model, to the same result', async () => {
    const { run, exchanges } = await recorded('autonomous-session');
    const replay = new ReplayChatModel(exchanges);
    const again = await collect(new LLMKernelTransformer(SAXPY, options(replay)));
    expect(again.end).toEqual({ status: 'finished' });
    expect(replay.callCount).toBe(exchanges.length);
    expect(replay.unused()).toEqual([]);
    expect(outcomes(again.events)).toEqual(outcomes(run.events));
    expect(outcomes(again.events)).toEqual(['step.rejected 1', 'step.rejected 2', 'step.accepted 3']);
    expect(again.of('session.finished')[0]!.finalCode).toBe(run.of('session.finished')[0]!.finalCode);
    // The replay records its own exchanges: the same requests and answers, so a replay can be replayed.
    const strip = (xs: LlmExchange[]) => xs.map((x) => ({ purpose: x.purpose, messages: x.messages, content: x.response?.content }));
    expect(strip(exchangesOf(again.events))).toEqual(strip(exchanges));
    // Token usage is reported as it was recorded.
    expect(again.of('llm.usage').map((u) => [u.model, u.promptTokens])).toEqual(run.of('llm.usage').map((u) => [u.model, u.promptTokens]));
  });

  it('serves candidates asked side by side in whatever order they arrive, and a recorded failure before its retry', async () => {
    const { run, exchanges } = await recorded('candidates-session', { tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false, candidatesPerStep: 2 }) }, 'first-match');
    // Reversed in the record: the candidates' requests meet the replay in the other order.
    const [a, b] = [exchanges.findIndex((x) => x.purpose === 'step 1'), exchanges.findLastIndex((x) => x.purpose === 'step 1')];
    const swapped = [...exchanges];
    [swapped[a], swapped[b]] = [swapped[b]!, swapped[a]!];
    const replay = new ReplayChatModel(swapped);
    const again = await collect(new LLMKernelTransformer(SAXPY, options(replay, { tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false, candidatesPerStep: 2 }) })));
    expect(again.end).toEqual({ status: 'finished' });
    expect(again.of('step.accepted')).toEqual([expect.objectContaining({ candidate: 1, bestParams: run.of('step.accepted')[0]!.bestParams })]);

    const flaky = await server([{ comment: 'overloaded', respond: { status: 503, error: 'model is loading' } }, ...loadScript('autonomous-session')]);
    const first = await collect(new LLMKernelTransformer(SAXPY, options(ollamaModel(flaky))));
    const withFailure = exchangesOf(first.events);
    expect(withFailure[0]!.error?.status).toBe(503);
    const retried = new ReplayChatModel(withFailure);
    const replayed = await collect(new LLMKernelTransformer(SAXPY, options(retried)));
    expect(replayed.end).toEqual({ status: 'finished' });
    // The recorded 503 was served again, so the node retried, as it had.
    expect(replayed.of('llm.exchange')[0]!.exchange.error).toMatchObject({ status: 503 });
    expect(retried.unused()).toEqual([]);
  });

  it('replays a thinking model: the raw answers are recorded and stripped again on replay', async () => {
    const thinking = () => ({ stripThinkingOutput: true, tuningStrategy: new AutonomousTuningStrategy({ withReplanning: false }) });
    const { run, exchanges } = await recorded('thinking-session', thinking());
    expect(exchanges[0]!.response?.content).toMatch(/^<think>/);
    const again = await collect(new LLMKernelTransformer(SAXPY, options(new ReplayChatModel(exchanges), thinking())));
    expect(again.end).toEqual({ status: 'finished' });
    expect(again.of('analysis.done')).toEqual(run.of('analysis.done').map((e) => ({ ...e, at: expect.any(String) })));
  });

  it('stops at the first request the recording does not hold, naming the call, the recorded purpose and the line', async () => {
    const { exchanges } = await recorded('autonomous-session');
    const edited = SAXPY.replace('a * x[i] + y[i]', 'fmaf(a, x[i], y[i])');
    const diverged = await collect(new LLMKernelTransformer(edited, options(new ReplayChatModel(exchanges))));
    expect(diverged.end.status).toBe('failed');
    const error = (diverged.end as { error: Error }).error;
    expect(error).toBeInstanceOf(ReplayDivergenceError);
    expect((error as ReplayDivergenceError).call).toBe(1);
    expect(error.message).toContain('replay diverged at model call 1');
    expect(error.message).toContain(`the recording's call 1 of ${exchanges.length} (for "describe kernel")`);
    expect(error.message).toMatch(/message 2 \(user\) differs at line \d+: the recording has ".*a \* x\[i\] \+ y\[i\].*", this run ".*fmaf\(a, x\[i\], y\[i\]\).*"/);
    // A divergence is not retried: the failed request, recorded as such, is the last thing the run did.
    expect(diverged.of('llm.exchange').map((e) => e.exchange.error?.name)).toEqual(['ReplayDivergenceError']);
    expect(withoutGraphEvents(diverged.types).slice(-2)).toEqual(['llm.exchange', 'session.failed']);
  });

  it('stops where a different measurement changes what the graph asks next', async () => {
    const { exchanges } = await recorded('autonomous-session');
    // On this "GPU" the block size does not matter: step 3 is rejected, so the replan is told something else.
    const flat = (v: FakeVariant) => largestBuffer(v.test) * 1e-6;
    const run = await collect(new LLMKernelTransformer(SAXPY, options(new ReplayChatModel(exchanges), { backend: new FakeBackend({ model: { timeMs: flat } }) })));
    expect(outcomes(run.events)).toEqual(['step.rejected 1', 'step.rejected 2', 'step.rejected 3']);
    const error = (run.end as { error: Error }).error;
    expect(error.message).toContain(`replay diverged at model call ${exchanges.length}`);
    // The replan shows the kernel first: the recorded one had step 3's block size, this one has the original.
    expect(error.message).toContain('(for "replan"): message 2 (user) differs at line 3: the recording has "// FAKE_BLOCK_AWARE", this run "__global__ void saxpy(');
  });

  it('says so when the run asks more than the recording holds, and lists recorded answers a run never asked for', async () => {
    const { exchanges } = await recorded('autonomous-session');
    const short = await collect(new LLMKernelTransformer(SAXPY, options(new ReplayChatModel(exchanges.slice(0, 5)))));
    expect((short.end as { error: Error }).error.message).toMatch(/^replay diverged at model call 6: the recording's 5 exchange\(s\) are all used, and this run asks the model again/);

    const extra = { ...exchanges[0]!, purpose: 'never asked', messages: [{ role: 'user' as const, content: 'something else' }] };
    const replay = new ReplayChatModel([...exchanges, extra]);
    expect((await collect(new LLMKernelTransformer(SAXPY, options(replay)))).end).toEqual({ status: 'finished' });
    expect(replay.unused()).toEqual([{ index: exchanges.length, exchange: extra }]);
  });
});
