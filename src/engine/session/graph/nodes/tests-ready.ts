// After the testing strategies: a session needs at least one test; the tests are announced.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { InvalidTest } from '../../../errors';
import { emit } from '../../../progress/events';
import type { TuningStateValue } from '../../../state';

export async function testsReadyNode(state: TuningStateValue, config: LangGraphRunnableConfig): Promise<Partial<TuningStateValue>> {
  if (state.tests.length === 0) throw new InvalidTest('the session has no tests: give tests (addTest) or at least one testing strategy');
  emit(config, {
    type: 'tests.ready',
    tests: state.tests.map((t) => ({
      id: t.id,
      origin: t.origin,
      problemSize: Array.isArray(t.problemSize) ? [...t.problemSize] : [t.problemSize as string | number],
      outputs: t.outputs,
      bytes: t.bytes,
      timeMs: t.timeMs,
      ...(t.work && { work: t.work }),
    })),
  });
  return {};
}
