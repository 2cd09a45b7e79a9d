/**
 * Plan approval, shared by the strategies: with approvePlan on, a strategy interrupts with the steps it is about to
 * carry out (`requestApproval`) and the session resumes with the user's list (`new Command({ resume: approval })`),
 * edited or not. The session turns the interrupt into a `plan.awaiting_approval` event; a node that asks must emit
 * nothing before the interrupt, since it runs again from its start when resumed.
 */
import { interrupt } from '@langchain/langgraph';
import { z } from 'zod';
import type { PlanStepView } from '../progress/events';

export const PlanApproval = z.object({
  steps: z.array(
    z.object({
      /** The id of a proposed step; left out for a step the user added (where the strategy allows that). */
      id: z.string().optional(),
      title: z.string().min(1),
      details: z.string().default(''),
    }),
  ),
});
export type PlanApproval = z.input<typeof PlanApproval>;

/** The value a plan interrupt carries. */
export interface PlanInterrupt {
  kind: 'plan_approval';
  steps: PlanStepView[];
}

export function isPlanInterrupt(value: unknown): value is PlanInterrupt {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'plan_approval';
}

/** Interrupts with the proposed steps; returns the approved list once the session is resumed. */
export function requestApproval(steps: PlanStepView[]): z.output<typeof PlanApproval> {
  const request: PlanInterrupt = { kind: 'plan_approval', steps };
  return PlanApproval.parse(interrupt(request));
}
