// `auto`: the strategy chosen from the space's size and the budget. Where the budget covers the whole space (no
// budget, a max_fevals at least the space's size, or a time limit that the first evaluations show to be long enough)
// brute force evaluates every configuration and the optimum is found for sure; above that, the strategy that scored
// best on the benchmark hub for a budget of that many evaluations. A shard of a split search is brute force, the one
// strategy that splits. The choice and its reason (with the numbers behind it) go into the result.

import { bruteForce } from './brute-force';
import { budgetOptions, parseStrategyOptions } from './options';
import { defineStrategy, type SearchContext, type Strategy } from './search';
import { surrogateGa } from './surrogate-ga';

interface Band {
  /** The largest budget (in evaluations) this band covers. */
  upTo: number;
  strategy: string;
  make: () => Strategy;
  /** The band's measured figures: aggregate methodology score and mean best % of the optimum. */
  measured: string;
}

/**
 * The best-scoring strategy per budget band: the highest aggregate autotuning_methodology score over the benchmark
 * hub's 12 caches (convolution_milo and dedispersion_milo on A100, A4000, A6000, MI250X, W6600, W7800), 10 seeds
 * (1000-1009), `node dist/bench/search-quality.js --first-seed 1000` (BENCHMARKS.md, "Search quality"). At 50 / 100 /
 * 200 / 400 evaluations:
 *   surrogate_ga 0.433 / 0.538 / 0.670 / 0.769 (mean best 86.7 / 93.5 / 97.5 / 99.8 % of the optimum),
 *   genetic_algorithm 0.158 / 0.206 / 0.405 / 0.528, pso 0.141 / 0.220 / 0.412 / 0.629, diff_evo 0.230 at 50,
 *   simulated_annealing 0.267 at 100, greedy_mls 0.429 at 200;
 * and over the recorded-time budget surrogate_ga 0.656, pso 0.444, diff_evo 0.397.
 */
const BANDS: readonly Band[] = [
  { upTo: 75, strategy: 'surrogate_ga', make: () => surrogateGa(), measured: 'aggregate score 0.433 at 50 evaluations, 86.7 % of the optimum' },
  { upTo: 150, strategy: 'surrogate_ga', make: () => surrogateGa(), measured: 'aggregate score 0.538 at 100 evaluations, 93.5 % of the optimum' },
  { upTo: 300, strategy: 'surrogate_ga', make: () => surrogateGa(), measured: 'aggregate score 0.670 at 200 evaluations, 97.5 % of the optimum' },
  { upTo: Infinity, strategy: 'surrogate_ga', make: () => surrogateGa(), measured: 'aggregate score 0.769 at 400 evaluations, 99.8 % of the optimum' },
];

/** Evaluations that measure the time of one before a time limit alone decides (run as one batch over the workers). */
const PROBES = 4;

export function auto(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('auto', budgetOptions, raw);
  return defineStrategy(
    'auto',
    { parallelism: "that of the strategy it chooses (brute force: every configuration independent, each GPU takes the next)", shardable: true, options },
    async (ctx) => {
      const size = ctx.positions.length;
      const choose = (strategy: Strategy, reason: string): Promise<void | string> => {
        ctx.choose({ strategy: strategy.name, reason });
        return strategy.search(ctx);
      };
      if (ctx.sharded) return choose(bruteForce(), `a shard of a split search (${size} configurations): brute force, the one strategy that splits`);
      if (ctx.maxFevals >= size && ctx.timeLimitMs === undefined) {
        const budget = ctx.maxFevalsGiven !== undefined ? `max_fevals ${ctx.maxFevalsGiven} covers` : 'no budget limits the search to fewer than';
        return choose(bruteForce(), `${budget} all ${size} configurations: brute force evaluates every one and finds the optimum`);
      }
      let evaluations = ctx.maxFevals;
      let timeNote = '';
      if (ctx.timeLimitMs !== undefined) {
        const capacity = await measureCapacity(ctx);
        if (capacity.evaluations >= size && ctx.maxFevals >= size) {
          return choose(bruteForce(), `${capacity.note}: that covers all ${size} configurations, so brute force evaluates every one`);
        }
        if (capacity.evaluations < evaluations) {
          evaluations = capacity.evaluations;
          timeNote = ` (${capacity.note})`;
        }
      }
      const band = BANDS.find((b) => evaluations <= b.upTo)!;
      const budget = timeNote === '' ? `max_fevals ${evaluations}` : `about ${evaluations} evaluations${timeNote}`;
      return choose(band.make(), `${size} configurations, more than the budget allows (${budget}): ${band.strategy}, the best-scoring strategy at that budget on the benchmark hub (${band.measured})`);
    },
  );
}

/**
 * How many evaluations the time limit allows: the first few configurations in the space's order are evaluated and
 * timed (those brute force starts with, so a search that turns out to be brute force runs exactly as brute force
 * does; an optimiser gets them from the memo), and the rest of the limit is divided by their mean time.
 */
async function measureCapacity(ctx: SearchContext): Promise<{ evaluations: number; note: string }> {
  const count = Math.min(ctx.positions.length, Math.max(PROBES, ctx.workers));
  await ctx.evaluateAll({ length: count, at: (i) => ctx.positions.at(i) });
  const perEvaluationMs = ctx.elapsedMs / Math.max(1, ctx.evaluations);
  const evaluations = ctx.evaluations + Math.floor((ctx.timeLimitMs! - ctx.elapsedMs) / Math.max(perEvaluationMs, 1e-9));
  return { evaluations, note: `the first ${ctx.evaluations} took ${(perEvaluationMs / 1000).toFixed(2)} s each, so ${(ctx.timeLimitMs! / 1000).toFixed(0)} s allow about ${evaluations}` };
}
