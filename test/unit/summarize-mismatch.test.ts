// How a wrong 16-bit float output is described (real numbers, unwritten elements, NaN/Inf), and whether the default
// tolerances pass a reordered float32 computation rounded to the format while failing a wrong one.
import { describe, expect, it } from 'vitest';
import { BFloat16Array, HalfArray } from '../../src/gpu/dtype';
import { Random } from '../../src/tuner/space/random';
import { DEFAULT_TOLERANCE, summarizeMismatch } from '../../src/tuner/run/test-data';

describe('summarizeMismatch on 16-bit floats', () => {
  it('reports float16 elements as numbers and tells the poison from a NaN the kernel wrote', () => {
    const got = HalfArray.fromNumbers([1, Number.NaN, 2.002, 3, Infinity, 0]);
    got[5] = 0x7fff; // a NaN that is not the poison
    const want = HalfArray.fromNumbers([1, 1.5, 2, 2, 1, 1]);
    const m = summarizeMismatch('out', 'float16', got, want, { rtol: 2e-3, atol: 0 }, 4);
    expect(m).toMatchObject({ name: 'out', elements: 6, mismatches: 4, unwritten: 1, nonFinite: 2, maxAbsError: 1, maxRelError: 0.5 });
    expect(m.firstBad).toEqual([
      { index: 1, got: Number.NaN, expected: 1.5 },
      { index: 3, got: 3, expected: 2 },
      { index: 4, got: Infinity, expected: 1 },
      { index: 5, got: Number.NaN, expected: 1 },
    ]);
  });

  it('counts the bfloat16 poison as unwritten and passes a difference of one unit in the last place', () => {
    const want = BFloat16Array.fromNumbers([1, 2, 3, 4]);
    const got = BFloat16Array.from([want[0]! + 1, want[1]!, 0x7fc0, 0x7fc0]);
    const m = summarizeMismatch('y', 'bfloat16', got, want, { rtol: DEFAULT_TOLERANCE.bfloat16.rtol, atol: 0 });
    expect(m).toMatchObject({ mismatches: 2, unwritten: 2, nonFinite: 0 });
    expect(m.firstBad.map((b) => [b.index, b.expected])).toEqual([
      [2, 3],
      [3, 4],
    ]);
  });
});

describe('default tolerances of the 16-bit floats', () => {
  const f32 = Math.fround;
  const FORMATS = [
    { dtype: 'float16', round: (xs: number[]) => HalfArray.fromNumbers(xs) },
    { dtype: 'bfloat16', round: (xs: number[]) => BFloat16Array.fromNumbers(xs) },
  ] as const;

  // Dot products of K random pairs in the format (whose products float32 holds exactly), accumulated in float32.
  const [N, K] = [4096, 1024];
  function products(round: (xs: number[]) => HalfArray | BFloat16Array): number[][] {
    const rng = new Random(5);
    const draw = () => round(Array.from({ length: K }, () => 2 * rng.next() - 1)).toNumbers();
    return Array.from({ length: N }, () => {
      const [a, b] = [draw(), draw()];
      return Array.from(a, (x, i) => x * b[i]!);
    });
  }
  const sequential = (terms: number[]) => terms.reduce((acc, t) => f32(acc + t), 0);
  // A tiled kernel: 32 partial sums (one per lane), then a tree over the lanes.
  const tiled = (terms: number[]) => {
    const lanes = new Array<number>(32).fill(0);
    terms.forEach((t, i) => (lanes[i % 32] = f32(lanes[i % 32]! + t)));
    for (let w = 16; w >= 1; w /= 2) for (let l = 0; l < w; l++) lanes[l] = f32(lanes[l]! + lanes[l + w]!);
    return lanes[0]!;
  };

  for (const { dtype, round } of FORMATS) {
    it(`${dtype}: a reordered float32 sum rounded to the format passes, a sum missing a term fails`, () => {
      const inputs = products(round);
      const reference = round(inputs.map(sequential));
      const maxAbs = Math.max(...reference.toNumbers().map(Math.abs));
      const { rtol, atolScale } = DEFAULT_TOLERANCE[dtype];
      const tolerance = { rtol, atol: atolScale * maxAbs };
      const reordered = round(inputs.map(tiled));
      expect(reordered.some((bits, i) => bits !== reference[i])).toBe(true); // the rounding boundaries do get crossed
      expect(summarizeMismatch('out', dtype, reordered, reference, tolerance).mismatches).toBe(0);
      const missingTerm = round(inputs.map((terms) => tiled(terms.slice(0, -1))));
      expect(summarizeMismatch('out', dtype, missingTerm, reference, tolerance).mismatches).toBeGreaterThan(N / 2);
    });
  }
});
