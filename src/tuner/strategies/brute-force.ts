// Every valid configuration, in the search space's order (Kernel Tuner's brute_force).

import { checkOptionNames, defineStrategy, range, type Strategy } from './search';

export function bruteForce(options: Record<string, never> = {}): Strategy {
  checkOptionNames('brute_force', options, []);
  return defineStrategy('brute_force', async (ctx) => {
    for (let i = 0; i < ctx.space.size; i++) {
      ctx.announce(range(i + 1, ctx.space.size));
      await ctx.evaluate(i);
    }
  });
}
