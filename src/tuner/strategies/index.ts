// The strategy registry, under Kernel Tuner's strategy names (with a few plain aliases) for the CLI and the spec files.

import { auto } from './auto';
import { basinhopping } from './basin-hopping';
import { bayesOpt } from './bayes-opt';
import { bruteForce } from './brute-force';
import { diffEvo } from './diff-evo';
import { dualAnnealing } from './dual-annealing';
import { firefly } from './firefly';
import { genetic } from './genetic';
import { greedyIls, greedyMls, mls, orderedGreedyMls } from './local-search';
import { pso } from './pso';
import { randomSample } from './random-sample';
import type { Strategy } from './search';
import { simulatedAnnealing } from './simulated-annealing';
import { surrogateGa } from './surrogate-ga';

export { auto } from './auto';
export { basinhopping } from './basin-hopping';
export { bayesOpt } from './bayes-opt';
export { bruteForce } from './brute-force';
export { diffEvo } from './diff-evo';
export { dualAnnealing } from './dual-annealing';
export { firefly } from './firefly';
export { genetic } from './genetic';
export { greedyIls, greedyMls, mls, orderedGreedyMls } from './local-search';
export { parseStrategyOptionFlag, StrategyOptionError, strategyOptionsFromFlags } from './options';
export { pso } from './pso';
export { randomSample } from './random-sample';
export { simulatedAnnealing } from './simulated-annealing';
export { surrogateGa } from './surrogate-ga';
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
  auto: auto,
  brute_force: bruteForce,
  random_sample: randomSample,
  greedy_mls: greedyMls,
  greedy_ils: greedyIls,
  mls: mls,
  ordered_greedy_mls: orderedGreedyMls,
  simulated_annealing: simulatedAnnealing,
  basinhopping: basinhopping,
  dual_annealing: dualAnnealing,
  genetic_algorithm: genetic,
  diff_evo: diffEvo,
  pso: pso,
  firefly_algorithm: firefly,
  bayes_opt: bayesOpt,
  surrogate_ga: surrogateGa,
} satisfies Record<string, StrategyFactory>;

export type StrategyName = keyof typeof strategies;

/** The strategy of a spec or a tune() that names none (and of every step of the LLM loop). */
export const DEFAULT_STRATEGY: StrategyName = 'auto';

const ALIASES: Record<string, StrategyName> = {
  ...(Object.fromEntries(Object.keys(strategies).map((name) => [name, name])) as Record<StrategyName, StrategyName>),
  bruteforce: 'brute_force',
  random: 'random_sample',
  local_search: 'greedy_mls',
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
