// What the population strategies share: repairing the combinations of value indices their operators produce into
// configurations of the space, and their first populations (Latin hypercube samples of valid configurations).

import type { Random } from '../space/random';
import type { SearchSpace } from '../space/search-space';

/**
 * A random valid configuration around a combination of value indices that fails the restrictions, as Kernel Tuner's
 * genetic algorithm repairs a child (Searchspace.get_random_neighbor): a random strictly-adjacent neighbour (every
 * parameter at most one step along its value list), else a random adjacent one, else a random Hamming neighbour, else
 * the nearest configuration (SearchSpace.closest).
 */
export function randomRepair(space: SearchSpace, indices: ArrayLike<number>, rng: Random): number {
  // Uniform cells of the box around the combination until one is valid: a uniform draw among its valid strictly-
  // adjacent neighbours, as picking from their list would be, without listing 3^parameters cells (the list only when
  // these draws all miss).
  const counts = space.valueCounts;
  const cell = new Array<number>(counts.length);
  for (let attempt = 0; attempt < 32; attempt++) {
    let moved = false;
    counts.forEach((n, p) => {
      const lo = Math.max(0, indices[p]! - 1);
      cell[p] = lo + rng.int(Math.min(n - 1, indices[p]! + 1) - lo + 1);
      moved ||= cell[p] !== indices[p];
    });
    const position = moved ? space.indexOfIndices(cell) : undefined;
    if (position !== undefined) return position;
  }
  for (const method of ['strictly-adjacent', 'adjacent', 'Hamming'] as const) {
    const neighbours = space.neighboursOf(indices, method);
    if (neighbours.length > 0) return rng.pick(neighbours);
  }
  return space.closest(indices, rng);
}

/**
 * `count` value-index combinations spread as a Latin hypercube: each parameter's value indices cut into `count` strata,
 * one combination per stratum of every parameter (scipy's LatinHypercube(d).integers over the value lists). The
 * combinations may fail the restrictions.
 */
export function latinHypercube(counts: readonly number[], count: number, rng: Random): Int32Array[] {
  const strata = counts.map(() => rng.shuffle(Int32Array.from({ length: count }, (_, k) => k)));
  return Array.from({ length: count }, (_, k) => Int32Array.from(counts, (values, p) => Math.floor(((strata[p]![k]! + rng.next()) / count) * values)));
}

/**
 * `count` distinct valid configurations from a Latin hypercube, each moved to its nearest valid configuration
 * (closest-param-indices); configurations that coincide are replaced by uniformly drawn ones (Kernel Tuner's
 * Searchspace.get_LHS_sample).
 */
export function latinHypercubeSample(space: SearchSpace, count: number, rng: Random): number[] {
  const n = Math.min(count, space.size);
  const chosen = new Set(latinHypercube(space.valueCounts, n, rng).map((indices) => space.closest(indices, rng)));
  if (chosen.size < n) {
    for (const position of space.sample(space.size, rng)) {
      if (chosen.size >= n) break;
      chosen.add(position);
    }
  }
  return [...chosen];
}

/**
 * The configuration a point of the scaled space stands for (Kernel Tuner's CostFunc with scaling): each coordinate
 * snapped to the nearest value; a combination the restrictions rule out is repaired to the nearest valid neighbour
 * when `constraintAware`, else undefined (not evaluated: it scores as a failure and costs nothing).
 */
export function swarmPosition(space: SearchSpace, x: ArrayLike<number>, constraintAware: boolean): number | undefined {
  return constraintAware ? space.snapScaledToValid(x) : space.indexOfIndices(space.snapScaled(x));
}
