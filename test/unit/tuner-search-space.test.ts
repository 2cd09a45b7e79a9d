import { describe, expect, it } from 'vitest';
import { Random } from '../../src/tuner/space/random';
import { RestrictionCheckError, compileRestrictions } from '../../src/tuner/space/restrictions';
import { SearchSpace, SearchSpaceError } from '../../src/tuner/space/search-space';
import { configKey, pythonFloatRepr, pythonStr, type Config, type TuneParams } from '../../src/tuner/types';

/** The obvious enumeration: every combination in cartesian order (last parameter fastest), filtered. */
function reference(tuneParams: TuneParams, restrictions: string[] = []): Config[] {
  const names = Object.keys(tuneParams);
  const ok = compileRestrictions(restrictions, names);
  let configs: Config[] = [{}];
  for (const name of names) configs = configs.flatMap((c) => tuneParams[name]!.map((v) => ({ ...c, [name]: v })));
  return configs.filter(ok);
}

const keysOf = (space: SearchSpace) => [...space.configs()].map((c) => space.key(c));
const H200 = { maxThreadsPerBlock: 1024, maxBlockDim: [1024, 1024, 64] as const };

const TILED_MATMUL: TuneParams = {
  block_size_x: [16, 32, 64],
  block_size_y: [1, 2, 4, 8, 16, 32],
  tile_size_x: [1, 2, 4, 8],
  tile_size_y: [1, 2, 4, 8],
};

describe('search space: enumeration', () => {
  it.each<[string, TuneParams, string[]]>([
    ['no restrictions', { a: [1, 2, 3], b: [4, 5], c: [6] }, []],
    ['block_size_x*block_size_y<=1024', { block_size_x: [32, 64, 128, 256, 512, 1024], block_size_y: [1, 2, 4, 8, 16] }, ['block_size_x*block_size_y<=1024']],
    ['block_size_x==block_size_y*tile_size_y', TILED_MATMUL, ['block_size_x==block_size_y*tile_size_y']],
    ['block_size_x%32==0', { block_size_x: [16, 24, 32, 48, 64, 96, 128], unroll: [1, 2, 4] }, ['block_size_x%32==0']],
    ['min(a,b)>=4', { a: [1, 2, 4, 8], c: [0, 1], b: [2, 4, 6] }, ['min(a,b)>=4']],
    ['restrictions on late and mixed parameters', { x: [1, 2, 3, 4], y: [1, 2, 3], z: [1, 2, 3, 4, 5] }, ['z > x', 'x + y != 4', 'z % 2 == 1 or y == 3']],
  ])('matches the brute-force reference: %s', (_, tuneParams, restrictions) => {
    const space = new SearchSpace(tuneParams, restrictions);
    const expected = reference(tuneParams, restrictions).map((c) => configKey(c, Object.keys(tuneParams)));
    expect(keysOf(space)).toEqual(expected);
    expect(space.size).toBe(expected.length);
  });

  it('counts hand-checked spaces', () => {
    // Pairs with 64 ≤ x·y ≤ 1024: (16, 4..32) = 4, (32, 2..32) = 5, (64, 1..16) = 5, (128, 1..8) = 4.
    const blocks = new SearchSpace(
      { block_size_x: [16, 32, 64, 128], block_size_y: [1, 2, 4, 8, 16, 32] },
      ['block_size_x*block_size_y>=64', 'block_size_x*block_size_y<=1024'],
    );
    expect(blocks.size).toBe(18);
    expect(new SearchSpace({ a: [1, 2, 4, 8], b: [2, 4, 6] }, ['min(a,b)>=4']).size).toBe(4); // a∈{4,8} × b∈{4,6}
    expect(new SearchSpace({ block_size_x: [16, 24, 32, 48, 64] }, ['block_size_x%32==0']).size).toBe(2);
  });

  it('gives exactly 40 configurations for the benchmark\'s tiled matmul on a 1024-thread device', () => {
    // 44 satisfy block_size_x == block_size_y * tile_size_y; 64×32 = 2048 threads does not fit, for 4 values of tile_size_x.
    const space = new SearchSpace(TILED_MATMUL, ['block_size_x==block_size_y*tile_size_y'], { deviceLimits: H200 });
    expect(space.size).toBe(40);
    expect(space.excluded).toHaveLength(4);
    expect(space.excluded.map((e) => e.key)).toEqual(['64,32,1,2', '64,32,2,2', '64,32,4,2', '64,32,8,2']);
    expect(space.excluded[0]!.reason).toMatch(/block 64x32x1 has 2048 threads; the device allows at most 1024/);
    expect(new SearchSpace(TILED_MATMUL, ['block_size_x==block_size_y*tile_size_y']).size).toBe(44);
  });

  it('applies device limits with custom block size names and the 256 default', () => {
    const space = new SearchSpace({ threads: [4, 8, 2048], z: [1, 128] }, [], {
      deviceLimits: H200,
      blockSizeNames: ['threads', 'block_size_y', 'z'],
    });
    expect(keysOf(space)).toEqual(['4,1', '8,1']);
    expect(space.excluded.map((e) => e.reason)).toEqual([
      "block z dimension 128 exceeds the device's maximum of 64",
      "block z dimension 128 exceeds the device's maximum of 64",
      'block 2048x1x1 has 2048 threads; the device allows at most 1024 per block',
      'block 2048x1x128 has 262144 threads; the device allows at most 1024 per block',
    ]);
    // Without a block_size_x parameter the block is 256 wide: 256·8 > 1024.
    const implicit = new SearchSpace({ block_size_y: [2, 4, 8] }, [], { deviceLimits: H200 });
    expect(keysOf(implicit)).toEqual(['2', '4']);
  });

  it('enumerates ~10^5 raw combinations quickly and matches the reference count', () => {
    const tuneParams: TuneParams = {
      block_size_x: [16, 32, 64, 128, 256, 512, 1024],
      block_size_y: [1, 2, 4, 8, 16, 32],
      tile_size_x: [1, 2, 4, 8],
      tile_size_y: [1, 2, 4, 8],
      unroll: [0, 1, 2, 4, 8],
      use_shared: [0, 1],
      vector: [1, 2, 4],
    }; // 7·6·4·4·5·2·3 = 20 160
    const big = { ...tuneParams, prefetch: [0, 1, 2, 3, 4, 5] }; // 120 960 raw
    const restrictions = ['block_size_x*block_size_y<=1024', 'block_size_x*block_size_y>=64', 'tile_size_x*tile_size_y<=32', 'vector<=tile_size_x'];
    const start = performance.now();
    const space = new SearchSpace(big, restrictions);
    const elapsed = performance.now() - start;
    expect(space.rawSize).toBe(120960);
    expect(space.size).toBe(reference(big, restrictions).length);
    expect(elapsed).toBeLessThan(2000);
  });

  it('prunes on early parameters instead of visiting every raw combination', () => {
    // 10^7 raw combinations, but the first restriction leaves one value of a; the rest is 10^6 / 10 per level checked late.
    const values = Array.from({ length: 10 }, (_, i) => i);
    const tuneParams: TuneParams = Object.fromEntries(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((n) => [n, values]));
    const start = performance.now();
    const space = new SearchSpace(tuneParams, ['a == 3', 'b < 2', 'c == b']);
    expect(performance.now() - start).toBeLessThan(2000);
    expect(space.rawSize).toBe(1e7);
    expect(space.size).toBe(2 * 10 ** 4);
  });

  it('is empty when a constant restriction is false, and drops configurations that divide by zero', () => {
    expect(new SearchSpace({ a: [1, 2] }, ['1 > 2']).size).toBe(0);
    const space = new SearchSpace({ a: [0, 1, 2], n: [4] }, ['n % a == 0']);
    expect(keysOf(space)).toEqual(['1,4', '2,4']);
  });
});

describe('search space: configurations, keys, lookups', () => {
  const space = new SearchSpace(TILED_MATMUL, ['block_size_x==block_size_y*tile_size_y'], { deviceLimits: H200 });

  it('maps positions to configurations and back', () => {
    for (let i = 0; i < space.size; i++) expect(space.indexOf(space.config(i))).toBe(i);
    expect(space.config(0)).toEqual({ block_size_x: 16, block_size_y: 2, tile_size_x: 1, tile_size_y: 8 });
    expect(Object.keys(space.config(5))).toEqual(['block_size_x', 'block_size_y', 'tile_size_x', 'tile_size_y']);
    expect(() => space.config(40)).toThrow(RangeError);
  });

  it('finds no position for configurations outside the space, and says why', () => {
    const restricted = { block_size_x: 16, block_size_y: 1, tile_size_x: 1, tile_size_y: 1 };
    expect(space.indexOf(restricted)).toBeUndefined();
    expect(space.explain(restricted)).toBe('it violates the restriction "block_size_x==block_size_y*tile_size_y"');
    const tooBig = { block_size_x: 64, block_size_y: 32, tile_size_x: 1, tile_size_y: 2 };
    expect(space.explain(tooBig)).toMatch(/2048 threads/);
    expect(space.explain({ ...restricted, block_size_x: 48 })).toBe('block_size_x=48 is not one of its values [16, 32, 64]');
    expect(space.explain({ block_size_x: 16 })).toBe("it has no value for tunable parameter 'block_size_y'");
    expect(space.explain(space.config(3))).toBeUndefined();
  });

  it('writes keys as Kernel Tuner does (Python str of each value, joined by commas)', () => {
    expect(space.key(space.config(0))).toBe('16,2,1,8');
    const mixed = new SearchSpace({ f: [0.5, 1e-5, 2.25], s: ['float', 'double'], b: [true, false], n: [128] });
    expect(keysOf(mixed).slice(0, 3)).toEqual(['0.5,float,True,128', '0.5,float,False,128', '0.5,double,True,128']);
    expect(mixed.key({ f: 1e-5, s: 'x', b: false, n: 128 })).toBe('1e-05,x,False,128');
  });

  it('formats floats like Python repr', () => {
    expect([0.1, 1.5, 100, 1e-5, 1.5e-7, 1e16, 1.2345e20, 123456.789, -0.25, 0].map(pythonFloatRepr)).toEqual([
      '0.1', '1.5', '100.0', '1e-05', '1.5e-07', '1e+16', '1.2345e+20', '123456.789', '-0.25', '0.0',
    ]);
    expect([1, 0.5, true, 'abc'].map(pythonStr)).toEqual(['1', '0.5', 'True', 'abc']);
  });
});

describe('search space: neighbours', () => {
  const tuneParams: TuneParams = { x: [1, 2, 4, 8, 16], y: [1, 2, 3, 4], z: [0, 1, 2] };
  const restrictions = ['x * y <= 32', 'z != 1 or y != 2'];
  const space = new SearchSpace(tuneParams, restrictions);
  const indices = (c: Config) => Object.keys(tuneParams).map((n) => tuneParams[n]!.indexOf(c[n]!));

  it('Hamming: exactly one parameter differs', () => {
    for (let i = 0; i < space.size; i++) {
      const me = indices(space.config(i));
      const expected = [...Array(space.size).keys()].filter((j) => indices(space.config(j)).filter((v, p) => v !== me[p]).length === 1);
      expect(space.neighbours(i, 'Hamming').sort((a, b) => a - b)).toEqual(expected);
    }
  });

  it('strictly-adjacent: every parameter moves at most one step in its value list', () => {
    for (let i = 0; i < space.size; i++) {
      const me = indices(space.config(i));
      const expected = [...Array(space.size).keys()].filter((j) => {
        const other = indices(space.config(j));
        return j !== i && other.every((v, p) => Math.abs(v - me[p]!) <= 1);
      });
      expect(space.neighbours(i, 'strictly-adjacent').sort((a, b) => a - b)).toEqual(expected);
    }
  });
});

describe("search space: Kernel Tuner's adjacent neighbours, scaled coordinates and snapping", () => {
  // y = 3 occurs in no valid configuration (x * y must be even), so 'adjacent' steps over it where strictly-adjacent stops.
  const tuneParams: TuneParams = { x: [1, 2, 3, 4], y: [1, 2, 3, 4], z: [0, 1] };
  const space = new SearchSpace(tuneParams, ['(x * y) % 2 == 0', 'y != 3']);
  const indices = (c: Config) => Object.keys(tuneParams).map((n) => tuneParams[n]!.indexOf(c[n]!));
  const at = (x: number, y: number, z: number) => space.indexOf({ x, y, z })!;

  it("adjacent: every parameter moves at most to the nearest value below or above that the space has (Searchspace.get_neighbors)", () => {
    const present = Object.keys(tuneParams).map((_, p) => new Set([...space.configs()].map((c) => indices(c)[p]!)));
    for (let i = 0; i < space.size; i++) {
      const me = indices(space.config(i));
      const window = me.map((v, p) => {
        const values = [...present[p]!].sort((a, b) => a - b);
        const below = values.filter((w) => w < v);
        const above = values.filter((w) => w > v);
        return [below.length > 0 ? Math.max(...below) : v, above.length > 0 ? Math.min(...above) : v];
      });
      const expected = [...Array(space.size).keys()].filter((j) => j !== i && indices(space.config(j)).every((v, p) => v >= window[p]![0]! && v <= window[p]![1]!));
      expect(space.neighbours(i, 'adjacent').sort((a, b) => a - b)).toEqual(expected);
    }
    // From y = 2 the next value up is 4, which strictly-adjacent never reaches.
    expect(space.neighbours(at(2, 2, 0), 'adjacent')).toContain(at(2, 4, 0));
    expect(space.neighbours(at(2, 2, 0), 'strictly-adjacent')).not.toContain(at(2, 4, 0));
    // Neighbours of a combination outside the space (Kernel Tuner repairs from them).
    expect(space.neighboursOf([0, 0, 0], 'Hamming').map((n) => space.key(space.config(n)))).toEqual(['1,2,0', '1,4,0', '2,1,0', '4,1,0']);
    expect(() => space.neighboursOf([0, 0, 0], 'diagonal' as never)).toThrow(/Unknown neighbour method 'diagonal'/);
  });

  it('scales value indices as scale_from_params and snaps back as unscale_and_snap_to_nearest', () => {
    const wide = new SearchSpace({ a: [1, 2, 3, 4, 5, 6, 7, 8], b: [0, 1] });
    expect(wide.eps).toBe(1 / 8);
    expect(wide.scaledBounds).toEqual([1, 0.25]);
    expect([...wide.scale([3, 1])]).toEqual([0.4375, 0.1875]);
    for (let i = 0; i < wide.size; i++) expect([...wide.snapScaled(wide.scale(wide.indicesAt(i)))]).toEqual([...wide.indicesAt(i)]);
    // Halfway between two centres goes to the lower index (numpy's argmin takes the first); outside the bounds, the ends.
    expect([...wide.snapScaled([0.125, 0.125])]).toEqual([0, 0]);
    expect([...wide.snapScaled([-3, 9])]).toEqual([0, 1]);
  });

  it('snaps values to the nearest of each list (snap_to_nearest_config), the first on a tie', () => {
    expect([...space.snapValues([2.6, 1.5, 1])]).toEqual([2, 0, 1]);
    expect(() => new SearchSpace({ s: ['a', 'b'] }).snapValues(['c'])).toThrow(/c is not a value of tunable parameter 's'/);
  });

  it('repairs a scaled point to the nearest valid neighbour, strictly-adjacent first (constraint_aware)', () => {
    // (3, 3, 0) is invalid; its strictly-adjacent valid neighbours nearest the point's centre win.
    const point = space.scale([2, 2, 0]);
    const repaired = space.snapScaledToValid(point)!;
    expect(space.neighboursOf([2, 2, 0], 'strictly-adjacent')).toContain(repaired);
    const distance = (j: number) => space.scale(space.indicesAt(j)).reduce((t, v, p) => t + (v - point[p]!) ** 2, 0);
    for (const other of space.neighboursOf([2, 2, 0], 'strictly-adjacent')) expect(distance(repaired)).toBeLessThanOrEqual(distance(other));
    expect(space.snapScaledToValid(space.scale([1, 1, 1]))).toBe(at(2, 2, 1));
  });
});

describe('search space: sampling and repair', () => {
  const space = new SearchSpace({ a: [1, 2, 3, 4, 5, 6], b: [1, 2, 3, 4, 5, 6], c: [0, 1] }, ['a + b <= 8']);

  it('samples distinct positions, the same for the same seed', () => {
    const s1 = space.sample(20, new Random(7));
    expect(new Set(s1).size).toBe(20);
    expect(s1.every((i) => i >= 0 && i < space.size)).toBe(true);
    expect(space.sample(20, new Random(7))).toEqual(s1);
    expect(space.sample(20, new Random(8))).not.toEqual(s1);
    expect(space.sample(1000, new Random(1)).sort((a, b) => a - b)).toEqual([...Array(space.size).keys()]);
  });

  it('samples uniformly', () => {
    const counts = new Array(space.size).fill(0);
    const rng = new Random(3);
    for (let k = 0; k < 2000; k++) for (const i of space.sample(5, rng)) counts[i]++;
    const expected = (2000 * 5) / space.size;
    expect(Math.min(...counts)).toBeGreaterThan(expected * 0.7);
    expect(Math.max(...counts)).toBeLessThan(expected * 1.3);
  });

  it('repairs value indices to the closest valid configuration', () => {
    expect(space.closest([1, 2, 0], new Random(1))).toBe(space.indexOf({ a: 2, b: 3, c: 0 }));
    const rng = new Random(5);
    for (const target of [[5, 5, 1], [5, 4, 0], [3, 5, 1]]) {
      const found = space.indicesAt(space.closest(target, rng));
      const distance = (v: ArrayLike<number>) => Array.from(v).reduce((s, x, p) => s + Math.abs(x - target[p]!), 0);
      const best = Math.min(...[...Array(space.size).keys()].map((i) => distance(space.indicesAt(i))));
      expect(distance(found)).toBe(best);
    }
  });
});

describe('search space: no tunable parameters', () => {
  it('is the one configuration {}, so a kernel can be tested or timed as it is', () => {
    const space = new SearchSpace({});
    expect(space.size).toBe(1);
    expect(space.config(0)).toEqual({});
  });

  it('is empty when the default block does not fit the device', () => {
    const space = new SearchSpace({}, [], { deviceLimits: { maxThreadsPerBlock: 128, maxBlockDim: [128, 128, 64] } });
    expect(space.size).toBe(0);
    expect(space.excluded[0]?.reason).toMatch(/256 threads/);
  });
});

describe('search space: validation', () => {
  it.each<[string, unknown, RegExp]>([
    ['an empty value list', { a: [] }, /non-empty list of values for tunable parameter 'a'/],
    ['a duplicate value', { a: [1, 2, 1] }, /lists the value 1 twice/],
    ['a reserved name', { time: [1] }, /'time' is reserved/],
    ['a grid size name', { grid_size_x: [1] }, /'grid_size_x' is reserved/],
    ['our cache prefix', { lkt_status: [1] }, /'lkt_status' is reserved/],
    ['a C++ reserved name', { __proto__x: [1] }, /'__proto__x' is reserved/],
    ['a non-identifier', { 'block-size': [1] }, /'block-size' is not a C identifier/],
    ['a non-finite value', { a: [1, Infinity] }, /numbers, strings or booleans for tunable parameter 'a'/],
    ['a fractional block size', { block_size_x: [32, 48.5] }, /Block size parameter 'block_size_x' must have positive integer values, but lists 48.5/],
  ])('rejects %s', (_, tuneParams, message) => {
    expect(() => new SearchSpace(tuneParams as TuneParams)).toThrow(SearchSpaceError);
    expect(() => new SearchSpace(tuneParams as TuneParams)).toThrow(message);
  });

  it('rejects a restriction over an unknown name with RestrictionCheckError naming it', () => {
    try {
      new SearchSpace({ block_size_x: [32, 64], tile: [1, 2] }, ['block_size_x * tile_size <= 128']);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RestrictionCheckError);
      const err = e as RestrictionCheckError;
      expect(err.unknownNames).toEqual(['tile_size']);
      expect(err.knownNames).toEqual(['block_size_x', 'tile']);
      expect(err.message).toMatch(/uses 'tile_size', which is not a tunable parameter/);
    }
  });

  it('rejects a restriction with a syntax error as RestrictionCheckError, with the caret', () => {
    expect(() => new SearchSpace({ a: [1] }, ['a =< 2'])).toThrow(RestrictionCheckError);
    expect(() => new SearchSpace({ a: [1] }, ['a =< 2'])).toThrow(/is not a valid expression: assignment is not allowed/);
    expect(() => new SearchSpace({ a: [1] }, [42 as unknown as string])).toThrow(/Expected a string restriction but received number/);
  });

  it('reports a restriction that compares a string parameter with a number', () => {
    expect(() => new SearchSpace({ precision: ['float', 'double'] }, ['precision > 2'])).toThrow(/cannot be evaluated for .*cannot compare a string with a number/);
  });
});
