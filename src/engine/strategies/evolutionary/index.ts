// The evolutionary strategy: a population of verified, tuned variants, evolved by the model and the GPU at once.
//   seed → evolve ⟲ (one run per checkpoint: see controller.ts) → conclude
// Its state is the session's (the population channel), so a finished session can evolve on, and a branch from it too
// (the branch's kernel is adopted where evolve starts again: nodes/seed.ts).
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { END, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import type { GraphOptions } from '../../context';
import { EngineContext, engineContext } from '../../context';
import { transportRetryPolicy } from '../../llm/transport';
import { emit } from '../../progress/events';
import { TuningState, type TuningStateUpdate, type TuningStateValue } from '../../state';
import { BaseTuningStrategy, positiveInteger, type TuningGraph, type TuningStrategyOptions } from '../base';
import { EvolutionRun, type EvolutionSettings } from './controller';
import type { ChildPlan } from './state';
import { DEFAULT_EVOLUTIONARY_SETTINGS } from '../../session/session-settings';
import { seedNode, withBranchKernel } from './nodes/seed';

export interface EvolutionaryTuningStrategyOptions extends TuningStrategyOptions {
  /** Seeds every choice of operator and parents (from the results in when each child is decided: see controller.ts). Default 0. */
  seed?: number;
  /** Children written by the model at once (and at most as many waiting for or on the GPUs). Default 4. */
  window?: number;
  /** Children that enter between two checkpoints of the session. Default 4. */
  chunk?: number;
  /** Variants drawn for each parent's tournament. Default 3. */
  tournament?: number;
  /** Elites kept per niche of the archive (what bounds the kernel × occupancy band). Default 2. */
  perNiche?: number;
  /** Elites kept in all. Default 12. */
  capacity?: number;
  /** Children asked for at most. Default: 16 when the session has no budget, else unlimited (the budget stops it). */
  maxChildren?: number;
  /** A recorded session's decisions (its `population.child` events): a replay follows them instead of deciding. */
  decisions?: readonly ChildPlan[];
}

/** The defaults (seed and window are the stored settings' own: session-settings.ts). */
export const DEFAULT_EVOLUTIONARY = { seed: DEFAULT_EVOLUTIONARY_SETTINGS.seed, window: DEFAULT_EVOLUTIONARY_SETTINGS.window, chunk: 4, tournament: 3, perNiche: 2, capacity: 12, childrenWithoutBudget: 16 } as const;

export class EvolutionaryTuningStrategy extends BaseTuningStrategy {
  readonly seed: number;
  readonly settings: EvolutionSettings;

  constructor(options: EvolutionaryTuningStrategyOptions = {}) {
    super(options);
    const d = DEFAULT_EVOLUTIONARY;
    this.seed = options.seed ?? d.seed;
    if (!Number.isInteger(this.seed)) throw new RangeError(`seed must be an integer, got ${this.seed}`);
    this.settings = {
      window: positiveInteger('window', options.window ?? d.window),
      chunk: positiveInteger('chunk', options.chunk ?? d.chunk),
      tournament: positiveInteger('tournament', options.tournament ?? d.tournament),
      archive: { perNiche: positiveInteger('perNiche', options.perNiche ?? d.perNiche), capacity: positiveInteger('capacity', options.capacity ?? d.capacity) },
      ...(options.maxChildren !== undefined && { maxChildren: positiveInteger('maxChildren', options.maxChildren) }),
      ...(options.decisions && { decisions: options.decisions }),
    };
  }

  createGraph(llm: BaseChatModel, options: GraphOptions = {}): TuningGraph {
    // The run of each session (by its engine context: one per run of the graph) that goes on between two runs of the node.
    const runs = new WeakMap<EngineContext, EvolutionRun>();
    const evolve = async (state: TuningStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
      const ctx = engineContext(config);
      let run = runs.get(ctx);
      if (!run?.continues(state)) {
        run?.abandon();
        const budgeted = Object.keys(ctx.modelCalls.budget).length > 0;
        const maxChildren = this.settings.maxChildren ?? (budgeted ? undefined : DEFAULT_EVOLUTIONARY.childrenWithoutBudget);
        const population = withBranchKernel(state, config, this.settings.archive);
        run = new EvolutionRun(this, llm, { ...state, population }, config, { ...this.settings, ...(maxChildren !== undefined && { maxChildren }) });
        runs.set(ctx, run);
      }
      try {
        const update = await run.advance(config);
        if (EvolutionRun.done(update.population!)) runs.delete(ctx);
        return update;
      } catch (error) {
        runs.delete(ctx);
        throw error;
      }
    };
    const conclude = async (state: TuningStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
      const p = state.population!;
      emit(config, {
        type: 'population.stopped',
        reason: p.stopped ?? { kind: 'children', message: 'no child is left to make' },
        variants: p.variants.length,
        rejected: p.rejected.length,
        usage: p.spent.usage,
        wallS: p.spent.wallS,
        gpuS: p.spent.gpuS,
      });
      return {};
    };
    return new StateGraph(TuningState)
      .addNode('seed', seedNode(this.seed))
      .addNode('evolve', evolve, { retryPolicy: options.transportRetryPolicy ?? transportRetryPolicy })
      .addNode('conclude', conclude)
      .addEdge(START, 'seed')
      .addEdge('seed', 'evolve')
      .addConditionalEdges('evolve', (state: TuningStateValue) => (EvolutionRun.done(state.population!) ? 'conclude' : 'evolve'), ['evolve', 'conclude'])
      .addEdge('conclude', END)
      .compile({ name: 'evolutionary_tuning_strategy' });
  }
}
