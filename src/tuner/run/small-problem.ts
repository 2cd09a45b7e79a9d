// A test's problem made small for one configuration, for compute-sanitizer, which slows a launch down many times: a
// problem-size dimension that is a scalar argument given as a number (`problemSize: [n, n]`, `n: { value: 4096 }`)
// shrinks to at most two blocks' worth plus the same remainder, so every block keeps its shape: the full blocks stay
// full and the partial block at the edge covers as much as in the test (a kernel whose bounds checks are wrong there
// is still caught). Buffer lengths and scalars written as expressions over it follow, as the spec says. Dimensions given
// otherwise (numbers, expressions, tunable parameters) stay as they are.

import type { ResolvedTest, TestSpecInput } from '../spec/input-spec';
import type { Geometry } from '../space/geometry';
import type { Config } from '../types';

/** Whole blocks kept along a reduced dimension (besides a partial one): two, so that neighbouring blocks meet. */
export const BLOCKS_KEPT = 2;

export interface SmallerProblem {
  /** The test's spec with the reduced scalars' values. */
  spec: TestSpecInput;
  /** Each reduced scalar: its value in the test and here. */
  reduced: Record<string, { from: number; to: number }>;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/** The smaller problem for `config`, or undefined when no dimension can shrink. `spec` is the test's spec, `resolved` it resolved. */
export function smallerProblem(spec: TestSpecInput, resolved: ResolvedTest, geometry: Geometry, config: Config): SmallerProblem | undefined {
  const sizes = Array.isArray(resolved.problemSize) ? resolved.problemSize : [resolved.problemSize];
  const work = geometry.workPerBlock(config, resolved.scalars);
  // A scalar may size several dimensions (a square matrix): it keeps every one's blocks.
  const perScalar = new Map<string, number>();
  sizes.forEach((size, d) => {
    const name = typeof size === 'string' ? /^\s*([A-Za-z_]\w*)\s*$/.exec(size)?.[1] : undefined;
    const given = name === undefined ? undefined : spec.arguments[name];
    if (name === undefined || !given || !('value' in given) || typeof given.value !== 'number' || !Number.isInteger(work[d])) return;
    const unit = perScalar.get(name) ?? 1;
    perScalar.set(name, (unit / gcd(unit, work[d]!)) * work[d]!);
  });
  const reduced: SmallerProblem['reduced'] = {};
  for (const [name, unit] of perScalar) {
    const from = resolved.scalars[name]!;
    const to = (from % unit) + unit * Math.min(BLOCKS_KEPT, Math.floor(from / unit));
    if (to > 0 && to < from) reduced[name] = { from, to };
  }
  if (Object.keys(reduced).length === 0) return undefined;
  const args = Object.fromEntries(Object.entries(spec.arguments).map(([name, arg]) => [name, reduced[name] ? { ...arg, value: reduced[name].to } : arg]));
  return { spec: { ...spec, arguments: args }, reduced };
}
