// Plan approval (only with approvePlan): the user chooses which of the steps to carry out (see ../../approval.ts). The
// steps and their prompts are fixed, so an approved entry must name one of them; the rest are skipped.
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { engineContext } from '../../../context';
import { emit } from '../../../progress/events';
import { requestApproval } from '../../approval';
import { viewOfStep, type TuningStep } from '../steps';
import type { ExplicitStateUpdate, ExplicitStateValue } from '../state';

export function approveNode(steps: readonly TuningStep[]) {
  return async (state: ExplicitStateValue, config: LangGraphRunnableConfig): Promise<ExplicitStateUpdate> => {
    if (!engineContext(config).settings.approvePlan) return {};
    const approval = requestApproval(steps.map(viewOfStep));
    const kept = new Set(approval.steps.map((a) => a.id));
    const unknown = [...kept].filter((id) => !steps.some((s) => s.id === id));
    if (unknown.length > 0) throw new RangeError(`the explicit strategy's steps are fixed; not among them: ${unknown.map(String).join(', ')}`);
    for (const step of steps.filter((s) => !kept.has(s.id))) emit(config, { type: 'step.skipped', stepId: step.id, reason: 'removed when the plan was approved' });
    emit(config, { type: 'plan', reason: 'approved', steps: steps.filter((s) => kept.has(s.id)).map(viewOfStep) });
    return { steps: state.steps.map((s) => (kept.has(s.id) ? s : { ...s, status: 'skipped' })) };
  };
}
