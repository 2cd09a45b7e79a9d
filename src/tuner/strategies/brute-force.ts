// Every valid configuration, in the search space's order (Kernel Tuner's brute_force). Every configuration is
// independent of the others, so they are spread over all workers (GPUs), and a search splits into shards.

import { checkOptionNames, defineStrategy, type Strategy } from './search';

export function bruteForce(options: Record<string, never> = {}): Strategy {
  checkOptionNames('brute_force', options, []);
  return defineStrategy(
    'brute_force',
    { parallelism: 'every configuration is independent: each GPU takes the next one in order', shardable: true },
    (ctx) => ctx.evaluateAll(ctx.positions),
  );
}
