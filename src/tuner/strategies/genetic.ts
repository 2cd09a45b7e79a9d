// A small genetic algorithm over the parameters' value indices: tournament selection, uniform crossover, mutation to
// another value of the same parameter, and repair of every child to the closest valid configuration. The best
// individual survives each generation (elitism). When a generation brings no new evaluation (the population has
// converged onto known configurations), the worse half is replaced by random unvisited configurations, so the search
// always progresses and ends once every configuration is known. A generation is a batch: its children are chosen from
// the previous generation's results only, so they are evaluated in parallel, spread over all workers (GPUs).

import { z } from 'zod';
import { commonOptions, parseStrategyOptions } from './options';
import { defineStrategy, type SearchContext, type Strategy } from './search';

export interface GeneticOptions {
  /** Default 10: small populations spend a tuning budget of tens of evaluations on more generations. */
  populationSize?: number;
  /** Individuals drawn per tournament; default 3. */
  tournamentSize?: number;
  /** Probability that a child is a crossover of two parents rather than a copy of one; default 0.9. */
  crossoverRate?: number;
  /** Probability that each parameter of a child mutates; default 1 / number of parameters. */
  mutationRate?: number;
}

function checkProbability(name: string, v: number | undefined): void {
  if (v !== undefined && !(v >= 0 && v <= 1)) throw new RangeError(`Expected a probability in [0, 1] for ${name} but received ${v}`);
}

const OPTIONS = {
  ...commonOptions,
  populationSize: z.number().optional(),
  tournamentSize: z.number().optional(),
  crossoverRate: z.number().optional(),
  mutationRate: z.number().optional(),
};

export function genetic(raw: GeneticOptions & Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('genetic_algorithm', OPTIONS, raw);
  const populationSize = options.populationSize ?? 10;
  const tournamentSize = options.tournamentSize ?? 3;
  const crossoverRate = options.crossoverRate ?? 0.9;
  if (!(Number.isInteger(populationSize) && populationSize >= 2)) {
    throw new RangeError(`Expected an integer ≥ 2 for populationSize but received ${populationSize}`);
  }
  if (!(Number.isInteger(tournamentSize) && tournamentSize >= 1)) {
    throw new RangeError(`Expected a positive integer for tournamentSize but received ${tournamentSize}`);
  }
  checkProbability('crossoverRate', crossoverRate);
  checkProbability('mutationRate', options.mutationRate);

  return defineStrategy('genetic_algorithm', { parallelism: 'each generation is one batch: its children are evaluated in parallel', options }, async (ctx) => {
    const { space, rng } = ctx;
    const counts = space.valueCounts;
    const mutationRate = options.mutationRate ?? 1 / counts.length;
    const fitness = (i: number) => ctx.known(i) ?? Infinity;

    const tournament = (population: number[]): number => {
      let winner = rng.pick(population);
      for (let k = 1; k < tournamentSize; k++) {
        const rival = rng.pick(population);
        if (fitness(rival) < fitness(winner)) winner = rival;
      }
      return winner;
    };

    const mutate = (genes: Int32Array): void => {
      genes.forEach((g, p) => {
        if (counts[p]! > 1 && rng.next() < mutationRate) genes[p] = (g + 1 + rng.int(counts[p]! - 1)) % counts[p]!;
      });
    };

    const child = (population: number[]): number => {
      const a = space.indicesAt(tournament(population));
      const genes = Int32Array.from(a);
      if (rng.next() < crossoverRate) {
        const b = space.indicesAt(tournament(population));
        for (let p = 0; p < genes.length; p++) if (rng.next() < 0.5) genes[p] = b[p]!;
      }
      mutate(genes);
      let index = space.closest(genes, rng);
      // A child that is already known teaches nothing; mutate it a few more times to look for something new.
      for (let attempt = 0; attempt < 3 && ctx.known(index) !== undefined; attempt++) {
        mutate(genes);
        index = space.closest(genes, rng);
      }
      return index;
    };

    let population = space.sample(populationSize, rng);
    if (options.x0 !== undefined) {
      const first = ctx.start()!;
      population = [first, ...population.filter((i) => i !== first)].slice(0, populationSize);
    }
    await ctx.evaluateAll(population);
    while (!ctx.exhausted) {
      const before = ctx.evaluations;
      const elite = population.reduce((best, i) => (fitness(i) < fitness(best) ? i : best));
      const next = [elite];
      while (next.length < populationSize) next.push(child(population));
      await ctx.evaluateAll(next);
      if (ctx.evaluations === before) {
        immigrate(ctx, next, fitness);
        await ctx.evaluateAll(next); // at least one immigrant is new, so every generation makes progress
      }
      population = next;
    }
  });
}

/** Replaces the worse half of a population by random unvisited configurations, in place. */
function immigrate(ctx: SearchContext, population: number[], fitness: (i: number) => number): void {
  population.sort((x, y) => (fitness(x) < fitness(y) ? -1 : fitness(x) > fitness(y) ? 1 : 0)); // failures are +Infinity
  for (let k = Math.ceil(population.length / 2); k < population.length; k++) {
    const fresh = ctx.randomUnvisited();
    if (fresh === undefined) return;
    population[k] = fresh;
  }
}
