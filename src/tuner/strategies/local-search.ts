// Greedy hill climbing with random restarts (Kernel Tuner's greedy_mls): from a random unvisited configuration, move to
// a better neighbour until none is better, then restart elsewhere. Neighbours are tried in a seeded random order;
// revisits are served from the memo, so they cost no evaluation.
// With several workers (GPUs) as many climbs run at once, each from its own random start. Within a climb, 'best'
// improvement evaluates a whole neighbourhood as one batch (in parallel); 'first' improvement cannot: it stops at the
// first better neighbour, so it tries them one after another.

import type { NeighbourMethod } from '../space/search-space';
import { checkOptionNames, defineStrategy, following, type Strategy } from './search';

export interface LocalSearchOptions {
  /**
   * Default 'strictly-adjacent' (every parameter may step to the next or previous value in its list): on the synthetic
   * matmul landscape it finds better configurations per evaluation than 'Hamming', whose long jumps rarely pay off.
   */
  neighbourhood?: NeighbourMethod;
  /** 'first' (default) moves to the first better neighbour found; 'best' evaluates all neighbours and takes the best. */
  improvement?: 'first' | 'best';
}

export function localSearch(options: LocalSearchOptions = {}): Strategy {
  checkOptionNames('greedy_mls', options, ['neighbourhood', 'improvement']);
  const neighbourhood = options.neighbourhood ?? 'strictly-adjacent';
  const improvement = options.improvement ?? 'first';
  if (neighbourhood !== 'Hamming' && neighbourhood !== 'strictly-adjacent') {
    throw new RangeError(`Expected 'Hamming' or 'strictly-adjacent' for neighbourhood but received ${String(neighbourhood)}`);
  }
  if (improvement !== 'first' && improvement !== 'best') {
    throw new RangeError(`Expected 'first' or 'best' for improvement but received ${String(improvement)}`);
  }
  const parallelism =
    improvement === 'best'
      ? 'one climb per GPU from independent random starts, and each neighbourhood evaluated as one batch'
      : 'one climb per GPU from independent random starts; within a climb neighbours are tried one at a time (first improvement stops at the first better one)';
  return defineStrategy('greedy_mls', { parallelism }, async (ctx) => {
    const climbs = async (): Promise<void> => {
      for (let current = ctx.randomUnvisited(); current !== undefined; current = ctx.randomUnvisited()) {
        let value = await ctx.evaluate(current);
        for (;;) {
          let next: number | undefined;
          let nextValue = value;
          const neighbours = ctx.rng.shuffle(ctx.space.neighbours(current, neighbourhood));
          if (improvement === 'best') await ctx.evaluateAll(neighbours);
          for (let k = 0; k < neighbours.length; k++) {
            const n = neighbours[k]!;
            const v = await ctx.evaluate(n, following(neighbours, k + 1));
            if (v < nextValue) {
              next = n;
              nextValue = v;
              if (improvement === 'first') break;
            }
          }
          if (next === undefined) break; // a local optimum: restart
          current = next;
          value = nextValue;
        }
      }
    };
    await Promise.all(Array.from({ length: ctx.workers }, climbs));
  });
}
