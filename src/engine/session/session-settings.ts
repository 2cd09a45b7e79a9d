/**
 * The settings a stored session's graph was built with, so that it can be run again (resumed, branched, replayed) by
 * the CLI, the extension or a benchmark; never a secret. Plain data and zod only (the history store uses it in the
 * extension's light bundle); session-options.ts builds a transformer from them, session-log.ts reads the event log.
 */
import { z } from 'zod';
import { windowFor } from '../strategies/evolutionary/population';
import type { ChildPlan } from '../strategies/evolutionary/state';
import { PricesSchema, SessionBudgetSchema } from '../resources/model-calls';
import type { TuningEvent } from '../progress/events';

/** The structured-output modes (llm/structured.ts), as settings name them. */
export const STRUCTURED_OUTPUT_TYPES = ['default', 'jsonSchema', 'functionCalling', 'jsonMode', 'jsonify'] as const;

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
    /** A population evolved by mutation, crossover and a profile-reading judge (strategies/evolutionary). */
    z.object({
      kind: z.literal('evolutionary'),
      seed: z.number().int(),
      window: z.number().int().min(1),
      /** Children asked for at most; absent: the budget decides (16 without one). */
      maxChildren: z.number().int().min(1).optional(),
      /** A replay's: the recorded session's decisions, followed instead of deciding (replaySettings). */
      decisions: z
        .array(
          z.object({
            child: z.number().int().min(0),
            operator: z.enum(['mutate', 'crossover', 'judge']),
            parents: z.array(z.string()),
            known: z.object({ variants: z.number().int().min(0), rejected: z.number().int().min(0) }),
            rank: z.number().int().min(2).optional(),
          }),
        )
        .optional(),
    }),
  ]),
  /** Requests to the model at once (absent: 4). */
  llmConcurrency: z.number().int().min(1).optional(),
  /** What the session may spend; each limit stops it, and says which. */
  budget: SessionBudgetSchema.optional(),
  /** The model's prices, USD per million tokens: the cost of each call and of the session. */
  prices: PricesSchema.optional(),
  retries: z.number().int().min(0),
  performanceThreshold: z.number().min(0),
  /** What the session optimises (Kernel Tuner's objective); absent: time. */
  objective: z.object({ name: z.string().min(1), higherIsBetter: z.boolean() }).optional(),
  /** Kernel Tuner's metrics of every configuration, in order. */
  metrics: z.record(z.string().min(1), z.string().min(1)).optional(),
  /** Energy and power measured with NVML (read only) in every tuning run. */
  energy: z.boolean().optional(),
  /** Candidates that would be accepted run under compute-sanitizer first (LLMKernelTransformerOptions.sanitize); absent: on. */
  sanitize: z.boolean().optional(),
  /** Timed launches per configuration: a fixed count, or an adaptive series (launch-count.ts). */
  iterations: z.union([z.number().int().min(1), z.object({ min: z.number().int().min(1), max: z.number().int().min(1), precision: z.number().positive() })]),
  timePerTestS: z.number().positive(),
  launchTimeoutS: z.number().positive().optional(),
  structuredOutputType: z.enum(STRUCTURED_OUTPUT_TYPES),
  stripThinking: z.boolean(),
  approvePlan: z.boolean(),
  /** Which model answered (for the record; a replay needs none). */
  model: z.object({ provider: z.enum(['openai', 'ollama']), model: z.string(), baseUrl: z.string().optional(), temperature: z.number().optional() }),
});
export type SessionSettings = z.infer<typeof SessionSettingsSchema>;

/** The autonomous strategy's defaults: AutonomousTuningStrategy's own, and the settings of callers that expose no strategy options (the CLI). */
export const DEFAULT_AUTONOMOUS: Extract<SessionSettings['strategy'], { kind: 'autonomous' }> = {
  kind: 'autonomous',
  breakdownSteps: false,
  maxBreakdowns: 1,
  withReplanning: true,
  maxReplanning: 3,
  candidatesPerStep: 1,
};

/** The evolutionary strategy's defaults, as settings store them. */
export const DEFAULT_EVOLUTIONARY_SETTINGS: Extract<SessionSettings['strategy'], { kind: 'evolutionary' }> = { kind: 'evolutionary', seed: 0, window: 4 };

/** Where a branch starts (session/branch.ts): the parent session's thread, the step, and the user's edit of the whole file if any. */
export interface BranchOptions {
  parentThreadId: string;
  fromStepId: string;
  code?: string;
}

/**
 * The settings a recorded session replays with: the recording's answers bound it, not its budgets (a replay takes no
 * time of the model and may run on another GPU at another speed); an evolutionary session follows the decisions it
 * recorded (which children, from which parents, after which results), and asks for exactly as many.
 */
export function replaySettings(settings: SessionSettings, events: readonly TuningEvent[]): SessionSettings {
  const { budget, ...rest } = settings;
  if (settings.strategy.kind !== 'evolutionary') return rest;
  const { children, decisions } = recordedDecisions(events);
  return {
    ...rest,
    strategy: {
      ...settings.strategy,
      window: windowFor(settings.strategy.window, budget?.modelCalls),
      maxChildren: Math.max(1, children),
      ...(decisions && { decisions }),
    },
  };
}

/**
 * The children an evolutionary session decided (`children`: how many), and its decisions to follow, where the recording
 * holds the results each one saw (one made before they were recorded is decided again, and may diverge).
 */
export function recordedDecisions(events: readonly TuningEvent[]): { children: number; decisions?: ChildPlan[] } {
  // By number, the last one: a run that stopped before its checkpoint decided its children again in the next one.
  const decided = new Map(events.flatMap((e) => (e.type === 'population.child' ? [[e.child, e] as const] : [])));
  const decisions = [...decided.values()].flatMap(({ child, operator, parents, known, rank }) => (known ? [{ child, operator, parents, known, ...(rank !== undefined && { rank }) }] : []));
  return { children: decided.size, ...(decisions.length === decided.size && decisions.length > 0 && { decisions }) };
}
