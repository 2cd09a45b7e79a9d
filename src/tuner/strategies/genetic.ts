// Kernel Tuner's genetic_algorithm: a population of configurations (a random sample to start) is evaluated as one batch
// per generation, ranked, and replaced by children: two distinct parents drawn by rank (a Beta(1, 2.5) draw, which
// favours the best), crossed over (single_point, two_point, uniform or disruptive_uniform), repaired to a random valid
// neighbour when the restrictions rule the child out, and mutated to a random Hamming neighbour with a chance of 1 in mutation_chance. There is no elitism:
// each generation is made of new children only (duplicates within a generation are skipped; configurations seen in
// earlier generations are served from the memo, so they cost no evaluation). It ends after maxiter generations.
// A generation's children depend only on the previous generation's results, so it is evaluated spread over all workers.

import { z } from 'zod';
import type { Random } from '../space/random';
import { commonOptions, parseStrategyOptions } from './options';
import { randomRepair } from './population';
import { defineStrategy, type Strategy } from './search';

export const CROSSOVER_METHODS = ['single_point', 'two_point', 'uniform', 'disruptive_uniform'] as const;
export type CrossoverMethod = (typeof CROSSOVER_METHODS)[number];

const OPTIONS = {
  ...commonOptions,
  /** Configurations per generation (made smaller on spaces of fewer than 2 × popsize configurations). */
  popsize: z.number().int().min(2).default(26),
  /** Generations. */
  maxiter: z.number().int().positive().default(90),
  method: z.enum(CROSSOVER_METHODS).default('single_point'),
  /** A child mutates with a chance of 1 in mutation_chance. */
  mutation_chance: z.number().min(1).default(55),
  /**
   * Children that fail the restrictions are repaired to a random valid neighbour; with false they stay as they are,
   * cost nothing, and rank last (Kernel Tuner's constraint-unaware mode).
   */
  constraint_aware: z.boolean().default(true),
};

type Genes = Int32Array;

/** Two children of two parents' value indices (exported for their tests). */
export const crossovers: Record<CrossoverMethod, (a: Genes, b: Genes, rng: Random) => [Genes, Genes]> = {
  single_point: (a, b, rng) => {
    const cut = Math.floor(rng.next() * a.length);
    return [splice(a, b, cut, a.length), splice(b, a, cut, a.length)];
  },
  two_point: (a, b, rng) => {
    // The outer genes stay with their parent when there are enough of them, as Kernel Tuner does.
    const [start, end] = a.length < 5 ? [0, a.length] : [1, a.length - 1];
    if (end - start < 2) return [a.slice(), b.slice()];
    const first = start + rng.int(end - start);
    let second = start + rng.int(end - start - 1);
    if (second >= first) second++;
    const [from, to] = first < second ? [first, second] : [second, first];
    return [splice(a, b, from, to), splice(b, a, from, to)];
  },
  uniform: (a, b, rng) => {
    const c1 = a.slice();
    const c2 = b.slice();
    for (let p = 0; p < a.length; p++) {
      if (rng.next() > 0.5) continue;
      c1[p] = b[p]!;
      c2[p] = a[p]!;
    }
    return [c1, c2];
  },
  disruptive_uniform: (a, b, rng) => {
    // Swaps half of the differing genes (rounded up), so each child differs from both parents when they differ in two or more.
    const c1 = a.slice();
    const c2 = b.slice();
    let differences = 0;
    for (let p = 0; p < a.length; p++) if (a[p] !== b[p]) differences++;
    const wanted = (differences + 1) >> 1;
    let swaps = 0;
    while (swaps < wanted) {
      for (let p = 0; p < a.length && swaps < wanted; p++) {
        if (a[p] !== b[p] && c1[p] !== b[p] && rng.next() < 0.5) {
          c1[p] = b[p]!;
          c2[p] = a[p]!;
          swaps++;
        }
      }
    }
    return [c1, c2];
  },
};

/** `a` with the genes in [from, to) taken from `b`. */
function splice(a: Genes, b: Genes, from: number, to: number): Genes {
  const child = a.slice();
  child.set(b.subarray(from, to), from);
  return child;
}

/** A rank in [0, n), Kernel Tuner's int(betavariate(1, 2.5) × n): the best ranks are drawn most often. */
function rankDraw(rng: Random, n: number): number {
  // Beta(1, b) has the inverse distribution function 1 - (1 - u)^(1/b).
  return Math.min(n - 1, Math.floor((1 - Math.pow(1 - rng.next(), 1 / 2.5)) * n));
}

export function genetic(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('genetic_algorithm', OPTIONS, raw);
  const { popsize, maxiter, mutation_chance: mutationChance, constraint_aware: constraintAware } = options;
  const crossover = crossovers[options.method];
  const parallelism = 'each generation is one batch: its children are evaluated in parallel';
  return defineStrategy('genetic_algorithm', { parallelism, options }, async (ctx) => {
    const { space, rng } = ctx;
    if (space.size === 0) return 'the space is empty';
    const counts = space.valueCounts;
    // Kernel Tuner's adjustment for small spaces: about three new configurations per generation over all generations.
    const size = popsize > Math.floor(space.size / 2) ? Math.min(Math.max(Math.round((space.size / maxiter) * 3), 2), popsize) : popsize;
    const cost = (genes: Genes) => {
      const position = space.indexOfIndices(genes);
      return position === undefined ? Infinity : (ctx.known(position) ?? Infinity);
    };
    const mutate = (genes: Genes): Genes => {
      if (Math.floor(rng.next() * mutationChance) !== 0) return genes;
      if (constraintAware) {
        const neighbours = space.neighboursOf(genes, 'Hamming');
        return neighbours.length > 0 ? space.indicesAt(rng.pick(neighbours)).slice() : genes;
      }
      const movable = counts.flatMap((n, p) => (n > 1 ? [p] : []));
      if (movable.length === 0) return genes;
      const p = rng.pick(movable);
      const mutant = genes.slice();
      mutant[p] = (genes[p]! + 1 + rng.int(counts[p]! - 1)) % counts[p]!;
      return mutant;
    };
    const repair = (genes: Genes): Genes =>
      !constraintAware || space.indexOfIndices(genes) !== undefined ? genes : space.indicesAt(randomRepair(space, genes, rng)).slice();

    // Member 0 is x0 when given (else a random configuration), as Kernel Tuner's get_start_pos.
    const first = ctx.start()!;
    let population: Genes[] = [first, ...space.sample(size, rng).filter((i) => i !== first)].slice(0, size).map((i) => space.indicesAt(i).slice());
    if (!constraintAware) population = population.map((genes, k) => (k === 0 ? genes : Int32Array.from(counts, (n) => rng.int(n))));

    for (let generation = 0; generation < maxiter; generation++) {
      await ctx.evaluateAll(population.map((genes) => space.indexOfIndices(genes)).filter((i): i is number => i !== undefined));
      if (ctx.exhausted) return; // the context says every configuration was evaluated
      const ranked = population
        .map((genes) => ({ genes, cost: cost(genes) }))
        .sort((x, y) => (x.cost < y.cost ? -1 : x.cost > y.cost ? 1 : 0))
        .map((m) => m.genes);

      const next: Genes[] = [];
      const inNext = new Set<string>();
      // Children that all repeat one another (a population converged on a few configurations of a small space) must
      // not loop forever: after this many tries the generation goes on with the children it has.
      for (let tries = 0; next.length < size && tries < 20 * size; tries++) {
        const a = rankDraw(rng, ranked.length);
        let b = rankDraw(rng, ranked.length);
        while (ranked.length > 1 && b === a) b = rankDraw(rng, ranked.length);
        for (const raw of crossover(ranked[a]!, ranked[b]!, rng)) {
          const child = mutate(repair(raw));
          const key = child.join(',');
          if (!inNext.has(key)) {
            inNext.add(key);
            next.push(child);
          }
          if (next.length >= size) break;
        }
      }
      population = next;
    }
    return `${maxiter} generations (maxiter) ended`;
  });
}
