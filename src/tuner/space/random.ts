// A small seeded PRNG (xoshiro128**, state seeded through splitmix32) so that every random choice of a search strategy
// can be repeated exactly from its seed. Math.random cannot be seeded; this is not for anything security-related.

/** A seed from the clock and Math.random, for runs that were given none (the seed used is reported so it can be reused). */
export function freshSeed(): number {
  return (Math.floor(Math.random() * 0x1_0000_0000) ^ Date.now()) >>> 0;
}

export class Random {
  private readonly s = new Uint32Array(4);

  constructor(readonly seed: number) {
    if (!Number.isInteger(seed)) throw new RangeError(`Expected an integer seed but received ${seed}`);
    let x = seed >>> 0;
    for (let i = 0; i < 4; i++) {
      // splitmix32: spreads any seed (0 included) over a state that is never all zero.
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      this.s[i] = (z ^ (z >>> 16)) >>> 0;
    }
  }

  /** A uniformly distributed 32-bit unsigned integer. */
  nextUint32(): number {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1]!, 5), 7), 9) >>> 0;
    const t = s[1]! << 9;
    s[2]! ^= s[0]!;
    s[3]! ^= s[1]!;
    s[1]! ^= s[2]!;
    s[0]! ^= s[3]!;
    s[2]! ^= t;
    s[3] = rotl(s[3]!, 11);
    return result;
  }

  /** A float in [0, 1). */
  next(): number {
    return this.nextUint32() / 0x1_0000_0000;
  }

  /** An integer in [0, n), without modulo bias. */
  int(n: number): number {
    if (!Number.isInteger(n) || n <= 0 || n > 0x1_0000_0000) throw new RangeError(`Random.int needs an integer in [1, 2^32], received ${n}`);
    const limit = 0x1_0000_0000 - (0x1_0000_0000 % n);
    let x: number;
    do x = this.nextUint32();
    while (x >= limit);
    return x % n;
  }

  /** Shuffles in place (Fisher–Yates) and returns the same array; typed arrays too. */
  shuffle<A extends ArrayLike<unknown>>(items: A): A {
    const a = items as unknown as { [i: number]: unknown };
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      const tmp = a[i];
      a[i] = a[j];
      a[j] = tmp;
    }
    return items;
  }

  /** A float in [lo, hi). */
  uniform(lo: number, hi: number): number {
    return lo + (hi - lo) * this.next();
  }

  /** A standard normal deviate (Box–Muller; one uniform pair per deviate, so the sequence depends only on the seed). */
  normal(): number {
    const u = 1 - this.next(); // (0, 1]: log(0) is never taken
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Random.pick needs a non-empty list');
    return items[this.int(items.length)]!;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
