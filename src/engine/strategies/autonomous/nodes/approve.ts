// Plan approval (only with approvePlan): the steps about to be carried out go to the user (see ../../approval.ts); the
// approved list replaces them, steps the user added included (they count as validated: the user asked for them).
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { engineContext } from '../../../context';
import { emit } from '../../../progress/events';
import { requestApproval } from '../../approval';
import { viewOf, type AutonomousStateUpdate, type AutonomousStateValue, type PlanStep } from '../state';

export function approveNode() {
  return async (state: AutonomousStateValue, config: LangGraphRunnableConfig): Promise<AutonomousStateUpdate> => {
    const waiting = state.plan.filter((s) => s.status === 'pending' && !s.approved);
    if (waiting.length === 0) return {};
    if (!engineContext(config).settings.approvePlan) return { plan: state.plan.map((s) => (waiting.includes(s) ? { ...s, approved: true } : s)) };
    const approval = requestApproval(waiting.map(viewOf));
    let counter = state.stepCounter;
    const approved = approval.steps.map((a): PlanStep => {
      const known = waiting.find((s) => s.id === a.id);
      const base: PlanStep = known ?? { id: String(++counter), title: '', details: '', depth: 0, status: 'pending', validated: true, brokenDown: true, approved: true };
      return { ...base, title: a.title, details: a.details, validated: true, brokenDown: true, approved: true };
    });
    for (const removed of waiting.filter((s) => !approved.some((a) => a.id === s.id))) {
      emit(config, { type: 'step.skipped', stepId: removed.id, reason: 'removed when the plan was approved' });
    }
    const plan = [...state.plan.filter((s) => !waiting.includes(s)), ...approved];
    emit(config, { type: 'plan', reason: 'approved', steps: plan.map(viewOf) });
    return { plan, stepCounter: counter };
  };
}
