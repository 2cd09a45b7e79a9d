// The next step whose dependencies have all completed, in the given order. First every step whose dependency can no
// longer complete (it was skipped, or failed) is skipped with that reason; when no step is left to run, the strategy ends.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { emit } from '../../../progress/events';
import type { BaseTuningStrategy } from '../../base';
import type { TuningStep } from '../steps';
import type { ExplicitStateUpdate, ExplicitStateValue, ExplicitStepState } from '../state';

export function nextStepNode(strategy: BaseTuningStrategy, steps: readonly TuningStep[]) {
  return async (state: ExplicitStateValue, config: LangGraphRunnableConfig): Promise<ExplicitStateUpdate> => {
    let status = state.steps;
    const byId = (id: string) => status.find((s) => s.id === id)!;
    const pending = () => steps.filter((s) => byId(s.id).status === 'pending');
    // Skipping a step can block the steps that depend on it, hence the loop.
    for (;;) {
      const blocked = pending().filter((s) => s.dependsOn.some((d) => byId(d).status !== 'pending' && !byId(d).completed));
      if (blocked.length === 0) break;
      status = status.map((s): ExplicitStepState => {
        const step = blocked.find((b) => b.id === s.id);
        if (!step) return s;
        const missing = step.dependsOn.filter((d) => !byId(d).completed);
        emit(config, { type: 'step.skipped', stepId: s.id, reason: `depends on ${missing.join(', ')}, which did not complete` });
        return { ...s, status: 'skipped' };
      });
    }
    // Dependencies are earlier steps, so the first pending step is ready.
    const ready = pending()[0];
    if (!ready) return { steps: status, currentStepId: null };
    return { ...strategy.startStep(state, ready, config), steps: status.map((s) => (s.id === ready.id ? { ...s, status: 'running' } : s)), currentStepId: ready.id };
  };
}
