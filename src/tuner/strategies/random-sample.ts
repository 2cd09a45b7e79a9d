// A uniform random sample without replacement (Kernel Tuner's random_sample). With neither `fraction` nor `count` it
// walks the whole space in random order, so that maxFevals or timeLimitMs alone sets the sample size. The sample is
// drawn before anything is evaluated, so it is spread over all workers (GPUs) like brute force.

import { checkOptionNames, defineStrategy, type Strategy } from './search';

export interface RandomSampleOptions {
  /** Fraction of the space to sample, in (0, 1]. */
  fraction?: number;
  /** Number of configurations to sample. */
  count?: number;
}

export function randomSample(options: RandomSampleOptions = {}): Strategy {
  checkOptionNames('random_sample', options, ['fraction', 'count']);
  const { fraction, count } = options;
  if (fraction !== undefined && count !== undefined) throw new RangeError('random_sample takes fraction or count, not both');
  if (fraction !== undefined && !(fraction > 0 && fraction <= 1)) {
    throw new RangeError(`Expected a fraction in (0, 1] for random_sample but received ${fraction}`);
  }
  if (count !== undefined && !(Number.isInteger(count) && count >= 1)) {
    throw new RangeError(`Expected a positive integer count for random_sample but received ${count}`);
  }
  return defineStrategy('random_sample', { parallelism: 'the sample is drawn first: each GPU takes the next configuration of it' }, async (ctx) => {
    const n = count ?? (fraction !== undefined ? Math.ceil(fraction * ctx.space.size) : ctx.space.size);
    await ctx.evaluateAll(ctx.space.sample(n, ctx.rng));
  });
}
