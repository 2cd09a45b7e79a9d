/**
 * One builder from stored settings (session-settings.ts) to the transformer's options, so that every way of running a
 * session (the CLI, the extension, a replay, a benchmark) builds the same graph.
 */
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { BaseCheckpointSaver, RetryPolicy as NodeRetryPolicy } from '@langchain/langgraph';
import type { TuningBackend } from '../../tuner/run/backend';
import { defaultRetryPolicy } from '../candidate/feedback';
import type { BranchOptions, SessionSettings } from './session-settings';
import { AutonomousTuningStrategy } from '../strategies/autonomous';
import { EvolutionaryTuningStrategy } from '../strategies/evolutionary';
import { defaultTuningSteps, ExplicitTuningStrategy, type TuningStep } from '../strategies/explicit';
import { NaiveLLMTester } from '../testing/naive';
import type { LLMKernelTransformerOptions } from './transformer';

/**
 * The explicit strategy's default steps that were selected, in their dependency order. A step whose dependency was
 * left out could never run, so it is left out too, and named.
 */
function selectExplicitSteps(selected: readonly string[]): { steps: TuningStep[]; dropped: string[] } {
  const wanted = new Set(selected);
  const steps: TuningStep[] = [];
  const dropped: string[] = [];
  for (const step of defaultTuningSteps()) {
    if (!wanted.has(step.id)) continue;
    if (step.dependsOn.every((d) => steps.some((s) => s.id === d))) steps.push(step);
    else dropped.push(`${step.id} (needs ${step.dependsOn.join(', ')})`);
  }
  return { steps, dropped };
}

export interface SessionRunParts {
  llm: BaseChatModel;
  /** Where kernels run: one backend, or one per GPU (all of one model). */
  backend: TuningBackend | readonly TuningBackend[];
  checkpointer: BaseCheckpointSaver;
  threadId: string;
  signal?: AbortSignal;
  transportRetryPolicy?: NodeRetryPolicy;
  branch?: BranchOptions;
  /** A finished evolutionary session goes on evolving (see LLMKernelTransformerOptions.evolveFurther). */
  evolveFurther?: boolean;
}

/** The transformer's options for a session with these settings; `warnings` name explicit steps that had to be left out. */
export function transformerOptionsFrom(settings: SessionSettings, parts: SessionRunParts): { options: LLMKernelTransformerOptions; warnings: string[] } {
  const retryPolicy = defaultRetryPolicy(settings.retries);
  const s = settings.strategy;
  let tuningStrategy: LLMKernelTransformerOptions['tuningStrategy'];
  const warnings: string[] = [];
  if (s.kind === 'explicit') {
    const { steps, dropped } = selectExplicitSteps(s.steps);
    if (dropped.length > 0) warnings.push(`explicit steps left out because a step they depend on is not selected: ${dropped.join('; ')}`);
    tuningStrategy = new ExplicitTuningStrategy(steps, { retryPolicy });
  } else if (s.kind === 'evolutionary') {
    const { kind: _kind, ...options } = s;
    tuningStrategy = new EvolutionaryTuningStrategy({ retryPolicy, ...options });
  } else {
    const { kind: _kind, ...options } = s;
    tuningStrategy = new AutonomousTuningStrategy({ retryPolicy, ...options });
  }
  return {
    options: {
      llm: parts.llm,
      ...(settings.kernelName !== undefined && { kernelName: settings.kernelName }),
      fileName: settings.fileName,
      ...(settings.filePath !== undefined && { filePath: settings.filePath }),
      includePaths: settings.includePaths,
      retryPolicy,
      tuningStrategy,
      testingStrategies: [new NaiveLLMTester({ retryPolicy })],
      backend: parts.backend,
      compilerOptions: settings.compilerOptions,
      timePerTest: settings.timePerTestS,
      ...(settings.launchTimeoutS !== undefined && { launchTimeout: settings.launchTimeoutS }),
      iterations: settings.iterations,
      stripThinkingOutput: settings.stripThinking,
      structuredOutputType: settings.structuredOutputType,
      performanceThreshold: settings.performanceThreshold,
      ...(settings.objective && { objective: settings.objective.name, objectiveHigherIsBetter: settings.objective.higherIsBetter }),
      ...(settings.metrics && { metrics: settings.metrics }),
      ...(settings.energy !== undefined && { energy: settings.energy }),
      ...(settings.sanitize !== undefined && { sanitize: settings.sanitize }),
      approvePlan: settings.approvePlan,
      ...(settings.llmConcurrency !== undefined && { llmConcurrency: settings.llmConcurrency }),
      ...(settings.budget && { budget: settings.budget }),
      ...(settings.prices && { prices: settings.prices }),
      checkpointer: parts.checkpointer,
      threadId: parts.threadId,
      ...(parts.signal && { signal: parts.signal }),
      ...(parts.transportRetryPolicy && { transportRetryPolicy: parts.transportRetryPolicy }),
      ...(parts.branch && { branch: parts.branch }),
      ...(parts.evolveFurther && { evolveFurther: true }),
    },
    warnings,
  };
}

