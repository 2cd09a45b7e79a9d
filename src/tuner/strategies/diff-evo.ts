// Kernel Tuner's diff_evo: differential evolution on the parameters' value indices. The first population is a Latin
// hypercube sample; each generation makes one trial per member (a donor such as best + F (b - c), rounded and clipped to
// the value lists, crossed with the member: binomial or exponential with rate CR, then repaired to the nearest valid
// configuration), evaluates the trials as one batch, and a trial replaces its member when it is not worse and not
// already in the population. Once three generations have passed without a change, every later trial population is a
// fresh Latin hypercube sample (Kernel Tuner's restart; its counter is never reset). A generation's trials depend only
// on the previous generation, so they are evaluated spread over all workers.

import { z } from 'zod';
import type { Random } from '../space/random';
import { commonOptions, parseStrategyOptions } from './options';
import { latinHypercubeSample } from './population';
import { defineStrategy, type Strategy } from './search';

export const DIFF_EVO_METHODS = [
  'best1bin', 'rand1bin', 'best2bin', 'rand2bin', 'best1exp', 'rand1exp', 'best2exp', 'rand2exp',
  'currenttobest1bin', 'currenttobest1exp', 'randtobest1bin', 'randtobest1exp',
] as const;
export type DiffEvoMethod = (typeof DIFF_EVO_METHODS)[number];

const OPTIONS = {
  ...commonOptions,
  /** Population size, times the number of parameters with more than one value when popsize_times_dimensions. */
  popsize: z.number().int().positive().default(16),
  popsize_times_dimensions: z.boolean().default(true),
  /** Generations (at most the size of the space); by default the budget ends the search. */
  maxiter: z.number().int().positive().default(Number.MAX_SAFE_INTEGER),
  /** Differential weight. */
  F: z.number().min(0).default(0.7),
  /** Crossover rate. */
  CR: z.number().min(0).max(1).default(0.6),
  /** The donor (best, rand, currenttobest, randtobest; one or two differences) and the crossover (bin, exp). */
  method: z.enum(DIFF_EVO_METHODS).default('best1bin'),
  /** Trials that fail the restrictions are repaired to the nearest valid configuration; with false they cost nothing and lose. */
  constraint_aware: z.boolean().default(true),
};

type Genes = Int32Array;

interface Method {
  /** The base of the donor: the best member, or the first random one. */
  base: 'best' | 'rand' | 'currenttobest' | 'randtobest';
  /** Number of difference vectors (1 or 2). */
  differences: 1 | 2;
  crossover: 'bin' | 'exp';
}

function parseMethod(method: DiffEvoMethod): Method {
  const match = /^(best|rand|currenttobest|randtobest)([12])(bin|exp)$/.exec(method)!;
  return { base: match[1] as Method['base'], differences: Number(match[2]) as 1 | 2, crossover: match[3] as Method['crossover'] };
}

/** How many random members a donor needs (Kernel Tuner's random_draw: the best-based methods take the best as their base). */
function membersDrawn(method: Method): number {
  return 2 * method.differences + 1 - (method.base === 'best' ? 1 : 0);
}

/** `count` members other than `self`, distinct unless there are too few (numpy's choice, with replacement then). */
function drawMembers(rng: Random, popsize: number, self: number, count: number): number[] {
  const others = Array.from({ length: popsize }, (_, k) => k).filter((k) => k !== self);
  if (count >= others.length) return Array.from({ length: count }, () => rng.pick(others));
  return rng.shuffle(others).slice(0, count);
}

function donor(method: Method, best: Genes, current: Genes, drawn: Genes[], F: number, counts: number[]): Genes {
  const out = new Int32Array(counts.length);
  for (let p = 0; p < counts.length; p++) {
    const g = (k: number) => drawn[k]![p]!;
    let v: number;
    switch (method.base) {
      case 'currenttobest':
        v = current[p]! + F * (best[p]! - current[p]! + g(1) - g(2));
        break;
      case 'randtobest':
        v = g(0) + F * (best[p]! - g(0) + g(1) - g(2));
        break;
      default: {
        const [base, rest] = method.base === 'best' ? [best[p]!, 0] : [g(0), 1];
        v = method.differences === 1 ? base + F * (g(rest) - g(rest + 1)) : base + F * (g(rest) + g(rest + 1) - g(rest + 2) - g(rest + 3));
      }
    }
    out[p] = Math.min(counts[p]! - 1, Math.max(0, Math.round(v)));
  }
  return out;
}

function cross(kind: Method['crossover'], donorGenes: Genes, target: Genes, CR: number, rng: Random): Genes {
  const trial = target.slice();
  const n = target.length;
  if (kind === 'bin') {
    const take = Array.from({ length: n }, () => rng.next() < CR);
    if (!take.some(Boolean)) take[rng.int(n)] = true; // at least one gene from the donor
    take.forEach((t, p) => t && (trial[p] = donorGenes[p]!));
  } else {
    // A contiguous (wrapping) block from the donor, as long as successive draws stay below CR.
    const start = rng.int(n);
    for (let l = 0; l < n && rng.next() < CR; l++) trial[(start + l) % n] = donorGenes[(start + l) % n]!;
  }
  return trial;
}

export function diffEvo(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('diff_evo', OPTIONS, raw);
  const { F, CR, constraint_aware: constraintAware } = options;
  const method = parseMethod(options.method);
  return defineStrategy('diff_evo', { parallelism: "each generation's trials are one batch, evaluated in parallel", options }, async (ctx) => {
    const { space, rng } = ctx;
    if (space.size === 0) return 'the space is empty';
    const counts = space.valueCounts;
    const tunable = counts.filter((n) => n > 1).length;
    const popsize = Math.max(2, options.popsize_times_dimensions ? options.popsize * Math.min(tunable, space.size) : options.popsize);
    const maxiter = Math.min(options.maxiter, space.size);
    const positionOf = (genes: Genes) => space.indexOfIndices(genes);
    const costOf = (genes: Genes) => {
      const position = positionOf(genes);
      return position === undefined ? Infinity : (ctx.known(position) ?? Infinity);
    };
    const evaluateAll = (genes: Genes[]) => ctx.evaluateAll(genes.map(positionOf).filter((i): i is number => i !== undefined));
    const freshPopulation = (): Genes[] =>
      constraintAware
        ? latinHypercubeSample(space, popsize, rng).map((i) => space.indicesAt(i).slice())
        : Array.from({ length: popsize }, () => Int32Array.from(counts, (n) => rng.int(n)));

    const population = freshPopulation();
    population[0] = space.indicesAt(ctx.start()!).slice(); // x0 when given, as Kernel Tuner's get_start_pos
    await evaluateAll(population);
    const populationCost = population.map(costOf);
    const first = populationCost.indexOf(Math.min(...populationCost));
    let best = population[first]!;
    let bestCost = populationCost[first]!;
    let stalls = 0;

    for (let generation = 0; generation < maxiter && !ctx.exhausted; generation++) {
      const trials: Genes[] = stalls > 2 ? freshPopulation() : [];
      const inTrials = new Set(trials.map((g) => g.join(',')));
      let member = 0;
      let stuck = 0;
      while (trials.length < population.length) {
        const drawn = drawMembers(rng, population.length, member, membersDrawn(method)).map((k) => population[k]!);
        if (method.base === 'currenttobest') drawn[0] = population[member]!;
        let trial = cross(method.crossover, donor(method, best, population[member]!, drawn, F, counts), population[member]!, CR, rng);
        if (constraintAware) trial = space.indicesAt(space.closest(trial, rng)).slice();
        if (inTrials.has(trial.join(','))) {
          if (++stuck < 20) continue;
          trial = space.indicesAt(rng.int(space.size)).slice(); // stuck on duplicates: a random configuration instead
        }
        inTrials.add(trial.join(','));
        trials.push(trial);
        member++;
        stuck = 0;
      }
      await evaluateAll(trials);

      let changed = false;
      trials.forEach((trial, k) => {
        const trialCost = costOf(trial);
        if (trialCost > populationCost[k]!) return;
        const key = trial.join(',');
        if (!population.some((genes) => genes.join(',') === key)) {
          population[k] = trial;
          populationCost[k] = trialCost;
          changed = true;
        }
        if (trialCost < bestCost) {
          best = trial;
          bestCost = trialCost;
        }
      });
      if (!changed) stalls++;
    }
    if (!ctx.exhausted) return `${maxiter} generations (maxiter) ended`;
  });
}
