// The population's first variant: the original kernel as the baseline measured it; and the kernel a branch of the
// session put in place, adopted as a variant of its own.
import { basename } from 'node:path';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { unifiedDiff } from '../../../candidate/diff';
import { emit } from '../../../progress/events';
import type { TuningStateUpdate, TuningStateValue } from '../../../state';
import { admit, bestVariant, classify, type ArchiveOptions, type Variant } from '../population';
import type { PopulationState } from '../state';
import { NO_OPERATOR_STATS } from '../population';
import { NO_USAGE } from '../../../resources/model-calls';
import { viewOf } from '../controller';
import { engineContext } from '../../../context';

/** The session's current kernel as a variant (its measurements are the session's). */
function currentAsVariant(state: TuningStateValue, id: string, operator: 'original' | 'edit', parent: Variant | undefined): Variant {
  if (state.bestTimeMs === null) throw new Error('internal: the population is seeded after the baseline');
  return {
    id,
    child: null,
    parents: parent ? [parent.id] : [],
    operator,
    instruction: '',
    code: state.code,
    tuneParams: state.tuneParams,
    restrictions: state.restrictions,
    gridDivisors: state.gridDivisors,
    sharedMemBytes: state.sharedMemBytes ?? null,
    bestParams: state.bestParams,
    timeMs: state.bestTimeMs,
    objectiveValue: state.bestObjective ?? state.bestTimeMs,
    profile: state.profile ?? null,
    ...classify(state.profile ?? null),
    diff: parent ? unifiedDiff(parent.code, state.code, { fileName: basename(state.fileName) }) : '',
    elite: true,
  };
}

export function seedNode(seed: number) {
  return async (state: TuningStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
    // A population from an earlier run (a session evolved further) goes on as it is.
    if (state.population) return {};
    const original = currentAsVariant(state, 'v0', 'original', undefined);
    emit(config, { type: 'population.variant', variant: viewOf(original), best: true, retired: [] });
    return {
      population: {
        seed,
        variants: [original],
        rejected: [],
        plans: [],
        drafts: {},
        committed: 0,
        operatorStats: NO_OPERATOR_STATS,
        spent: { usage: NO_USAGE, wallS: 0, gpuS: 0 },
        stopped: null,
      },
    };
  };
}

/**
 * The population with the session's kernel in it. A branch of the session puts another kernel in place (the user's
 * edit, or a variant to evolve from, its values defined) where the branch starts: between two runs of the evolve node,
 * so the next run adopts it. It enters as an 'edit' variant of the fastest, and the children decided for the old kernel
 * are dropped. Every other kernel of the session is a variant's own (the fastest's, or a faster one's that gained less
 * than the threshold).
 */
export function withBranchKernel(state: TuningStateValue, config: LangGraphRunnableConfig, archive: Omit<ArchiveOptions, 'higherIsBetter'>): PopulationState {
  const population = state.population!;
  if (population.variants.some((v) => v.code === state.code)) return population;
  const higherIsBetter = engineContext(config).settings.objective.higherIsBetter;
  const best = bestVariant(population.variants.filter((v) => v.elite), higherIsBetter);
  const edit = currentAsVariant(state, `v${population.variants.length}`, 'edit', best);
  const elites = new Set(population.variants.filter((v) => v.elite).map((v) => v.id));
  const variants = admit(population.variants, edit, { ...archive, higherIsBetter });
  emit(config, { type: 'population.variant', variant: viewOf(edit), best: true, retired: [...elites].filter((id) => !variants.find((v) => v.id === id)!.elite) });
  return { ...population, variants, plans: [], drafts: {}, stopped: null };
}
