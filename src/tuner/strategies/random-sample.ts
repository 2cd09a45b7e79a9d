// A uniform random sample without replacement (Kernel Tuner's random_sample): max_fevals configurations, or a
// `fraction` of the space (default 0.1, as Kernel Tuner's) when no max_fevals is given. The sample is drawn before
// anything is evaluated, so it is spread over all workers (GPUs) like brute force.

import { z } from 'zod';
import { budgetOptions, parseStrategyOptions } from './options';
import { defineStrategy, type Strategy } from './search';

const OPTIONS = {
  ...budgetOptions,
  /** Fraction of the space to sample when max_fevals is not given, in (0, 1]. */
  fraction: z.number().gt(0).max(1).default(0.1),
};

export function randomSample(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('random_sample', OPTIONS, raw);
  return defineStrategy(
    'random_sample',
    {
      parallelism: 'the sample is drawn first: each GPU takes the next configuration of it',
      options,
      defaultMaxFevals: (size) => Math.ceil(options.fraction * size),
    },
    async (ctx) => {
      // The whole space in random order: the budget (max_fevals, or the fraction) ends the sample.
      await ctx.evaluateAll(ctx.space.sample(ctx.space.size, ctx.rng));
    },
  );
}
