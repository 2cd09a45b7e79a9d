/**
 * What a stored session keeps so that it can be run again (resumed, branched, replayed) by the CLI, the extension or a
 * benchmark: the settings its graph was built with (`SessionSettings`, never a secret), and what its event log says
 * about the model's answers (`llm.exchange`) and the user's plan approvals. Plain data and zod only (the history
 * store uses it in the extension's light bundle); session-options.ts builds a transformer from the settings.
 */
import { z } from 'zod';
import type { TuningEvent } from './events';
import type { LlmExchange } from './llm/exchange';
import type { PlanApproval } from './strategies/approval';

const STRUCTURED = ['default', 'jsonSchema', 'functionCalling', 'jsonMode', 'jsonify'] as const;

export const SessionSettingsSchema = z.object({
  /** The kernel to tune; needed when the file has several (a stored session has it filled in once it started). */
  kernelName: z.string().min(1).optional(),
  /** Shown in diffs and compiler messages. */
  fileName: z.string().min(1),
  /** The file on disk, when it was one: its directory is searched for its quoted #includes. */
  filePath: z.string().optional(),
  includePaths: z.array(z.string()),
  compilerOptions: z.array(z.string()),
  strategy: z.discriminatedUnion('kind', [
    z.object({
      kind: z.literal('autonomous'),
      breakdownSteps: z.boolean(),
      maxBreakdowns: z.number().int().min(1),
      withReplanning: z.boolean(),
      maxReplanning: z.number().int().min(1),
      candidatesPerStep: z.number().int().min(1),
    }),
    /** The default steps selected, by id. */
    z.object({ kind: z.literal('explicit'), steps: z.array(z.string()) }),
  ]),
  retries: z.number().int().min(0),
  performanceThreshold: z.number().min(0),
  iterations: z.number().int().min(1),
  timePerTestS: z.number().positive(),
  launchTimeoutS: z.number().positive().optional(),
  structuredOutputType: z.enum(STRUCTURED),
  stripThinking: z.boolean(),
  approvePlan: z.boolean(),
  /** Which model answered (for the record; a replay needs none). */
  model: z.object({ provider: z.enum(['openai', 'ollama']), model: z.string(), baseUrl: z.string().optional(), temperature: z.number().optional() }),
});
export type SessionSettings = z.infer<typeof SessionSettingsSchema>;

/** The autonomous strategy's defaults, for callers that expose no strategy options (the CLI). */
export const DEFAULT_AUTONOMOUS: Extract<SessionSettings['strategy'], { kind: 'autonomous' }> = {
  kind: 'autonomous',
  breakdownSteps: false,
  maxBreakdowns: 1,
  withReplanning: true,
  maxReplanning: 3,
  candidatesPerStep: 1,
};

/** The `report` of a history entry, as both the CLI and the extension write it: the session's event log and its title. */
export const SESSION_REPORT_FORMAT = 'llm-kernel-tuner-session/1';

export interface StoredSessionHeader {
  sessionId: string;
  kernelName: string;
  /** Workspace-relative path (or base name) of the source file. */
  fileName: string;
  startedAt: string;
  model: string;
  strategy: 'autonomous' | 'explicit';
}

export interface StoredSessionReport<H extends StoredSessionHeader = StoredSessionHeader> {
  format: typeof SESSION_REPORT_FORMAT;
  header: H;
  events: TuningEvent[];
}

export function isStoredSessionReport(value: unknown): value is StoredSessionReport {
  const r = value as StoredSessionReport | null;
  return typeof r === 'object' && r !== null && r.format === SESSION_REPORT_FORMAT && Array.isArray(r.events) && typeof r.header?.sessionId === 'string';
}

/** The model's exchanges in an event log, in order. */
export function exchangesOf(events: readonly TuningEvent[]): LlmExchange[] {
  return events.flatMap((e) => (e.type === 'llm.exchange' ? [e.exchange] : []));
}

/** The plans the user approved, in order, as the resume values that reproduce them. */
export function approvalsOf(events: readonly TuningEvent[]): PlanApproval[] {
  return events.flatMap((e) =>
    e.type === 'plan' && e.reason === 'approved' ? [{ steps: e.steps.filter((s) => s.status === 'pending').map((s) => ({ id: s.id, title: s.title, details: s.details })) }] : [],
  );
}

const ENDINGS: readonly TuningEvent['type'][] = ['session.finished', 'session.failed', 'session.cancelled', 'llm.exchange'];

/**
 * What a branch that starts again at step `stepId` inherits of its parent's log: everything before the step started
 * (analysis, tests, baseline, plan, earlier steps), without the parent's model exchanges and endings.
 */
export function eventsBeforeStep(events: readonly TuningEvent[], stepId: string): TuningEvent[] {
  const start = events.findIndex((e) => e.type === 'step.started' && e.stepId === stepId);
  return (start === -1 ? events : events.slice(0, start)).filter((e) => !ENDINGS.includes(e.type));
}
