// The population's first variant: the original kernel as the baseline measured it. A branch of the session that put
// another kernel in place (the user's edit, or a variant to evolve from) adds that kernel as a variant of its own.
import { basename } from 'node:path';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { unifiedDiff } from '../../../candidate/diff';
import { emit } from '../../../progress/events';
import type { TuningStateUpdate, TuningStateValue } from '../../../state';
import { admit, bestVariant, classify, type ArchiveOptions, type Variant } from '../population';
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

export function seedNode(seed: number, archive: Omit<ArchiveOptions, 'higherIsBetter'>) {
  return async (state: TuningStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
    const population = state.population;
    if (!population) {
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
    }
    const higherIsBetter = engineContext(config).settings.objective.higherIsBetter;
    const best = bestVariant(population.variants.filter((v) => v.elite), higherIsBetter);
    if (state.code === best.code) return {};
    // A branch put another kernel in place: it enters, and the children decided for the old one are dropped.
    const edit = currentAsVariant(state, `v${population.variants.length}`, 'edit', best);
    const elites = new Set(population.variants.filter((v) => v.elite).map((v) => v.id));
    const variants = admit(population.variants, edit, { ...archive, higherIsBetter });
    emit(config, { type: 'population.variant', variant: viewOf(edit), best: true, retired: [...elites].filter((id) => !variants.find((v) => v.id === id)!.elite) });
    return { population: { ...population, variants, plans: [], drafts: {}, stopped: null } };
  };
}
