// Every valid configuration, in the search space's order (Kernel Tuner's brute_force). Every configuration is
// independent of the others, so they are spread over all workers (GPUs), and a search splits into shards.

import { budgetOptions, parseStrategyOptions } from './options';
import { defineStrategy, type Strategy } from './search';

export function bruteForce(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('brute_force', budgetOptions, raw);
  return defineStrategy(
    'brute_force',
    { parallelism: 'every configuration is independent: each GPU takes the next one in order', shardable: true, options },
    (ctx) => ctx.evaluateAll(ctx.positions),
  );
}
