// The strategy registry, under Kernel Tuner's strategy names (with a few plain aliases) for the CLI and the spec files.

import { bruteForce } from './brute-force';
import { genetic } from './genetic';
import { localSearch } from './local-search';
import { randomSample } from './random-sample';
import type { Strategy } from './search';

export { bruteForce } from './brute-force';
export { genetic, type GeneticOptions } from './genetic';
export { localSearch, type LocalSearchOptions } from './local-search';
export { randomSample, type RandomSampleOptions } from './random-sample';
export {
  defineStrategy,
  runStrategy,
  SearchContext,
  wallClock,
  type Clock,
  type Evaluate,
  type Positions,
  type SearchProgress,
  type Shard,
  type Strategy,
  type StrategyOptions,
} from './search';

/** Builds a strategy from its options (each factory checks its own options and rejects unknown ones). */
export type StrategyFactory = (options?: Record<string, unknown>) => Strategy;

export const strategies = {
  brute_force: bruteForce as StrategyFactory,
  random_sample: randomSample as StrategyFactory,
  greedy_mls: localSearch as StrategyFactory,
  genetic_algorithm: genetic as StrategyFactory,
} as const;

export type StrategyName = keyof typeof strategies;

const ALIASES: Record<string, StrategyName> = {
  brute_force: 'brute_force',
  bruteforce: 'brute_force',
  random_sample: 'random_sample',
  random: 'random_sample',
  greedy_mls: 'greedy_mls',
  local_search: 'greedy_mls',
  genetic_algorithm: 'genetic_algorithm',
  genetic: 'genetic_algorithm',
};

/** The factory for a strategy name ("brute_force", "random-sample", "local_search", "genetic", ...). */
export function resolveStrategy(name: string): StrategyFactory {
  const canonical = ALIASES[String(name).toLowerCase().replace(/-/g, '_')];
  if (canonical === undefined) {
    const aliases = Object.keys(ALIASES).filter((a) => !(a in strategies));
    throw new RangeError(`Unknown strategy '${name}'; choose one of ${Object.keys(strategies).join(', ')} (aliases: ${aliases.join(', ')})`);
  }
  return strategies[canonical];
}
