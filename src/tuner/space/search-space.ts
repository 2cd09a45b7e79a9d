// The search space: every configuration of the tunable parameters that satisfies the restrictions, in Kernel Tuner's
// order (the cartesian product with the last parameter varying fastest, values in the order given). Enumeration is a
// backtracking odometer: each restriction is checked as soon as the last parameter it reads is set, so a restriction on
// the first parameters prunes whole sub-trees instead of testing every raw combination. Configurations are stored as
// value indices; a configuration object is built only when asked for.
// Configurations whose block exceeds the device's limits are kept apart with the reason, so they are reported as
// 'exceeds_device_limits' without compiling, never searched.

import { blockDims, exceedsDeviceLimits, resolveBlockSizeNames, type DeviceLimits } from './geometry';
import type { Random } from './random';
import { compileRestrictions, type CompiledRestriction, type RestrictionPredicate } from './restrictions';
import { configKey, pythonStr, type Config, type ParamValue, type TuneParams } from '../types';

export class SearchSpaceError extends Error {
  override name = 'SearchSpaceError';
}

/**
 * Neighbourhoods for local search, named and defined as in Kernel Tuner (Searchspace.get_neighbors):
 *  - 'Hamming': exactly one parameter takes another of its values;
 *  - 'strictly-adjacent': every parameter moves at most one position in its value list (at least one moves);
 *  - 'adjacent': every parameter moves at most to the next value above or below that any valid configuration has
 *    (the same as strictly-adjacent unless a value of the list occurs in no valid configuration, which is skipped).
 */
export type NeighbourMethod = 'Hamming' | 'adjacent' | 'strictly-adjacent';
export const NEIGHBOUR_METHODS: readonly NeighbourMethod[] = ['Hamming', 'adjacent', 'strictly-adjacent'];

export interface SearchSpaceOptions {
  /** When given, configurations whose block does not fit are set apart in `excluded`. */
  deviceLimits?: Pick<DeviceLimits, 'maxThreadsPerBlock' | 'maxBlockDim'>;
  blockSizeNames?: readonly string[];
}

export interface ExcludedConfig {
  config: Config;
  key: string;
  reason: string;
}

// Names that would collide with Kernel Tuner's own defines or cache fields, or with our cache fields (lkt_*), or that
// restrictions could not refer to (keywords). Names starting with "__" are reserved in C++ and would also be unsafe keys.
const RESERVED_NAMES = new Set([
  'grid_size_x', 'grid_size_y', 'grid_size_z', 'kernel_tuner',
  'time', 'times', 'compile_time', 'verification_time', 'benchmark_time', 'strategy_time', 'framework_time', 'timestamp',
  'and', 'or', 'not', 'True', 'False',
]);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function valueTag(v: ParamValue): string {
  return `${typeof v}:${pythonStr(v)}`;
}

function validateTuneParams(tuneParams: TuneParams, blockSizeNames: readonly string[]): void {
  if (tuneParams === null || typeof tuneParams !== 'object' || Array.isArray(tuneParams)) {
    throw new SearchSpaceError(`Expected an object of tunable parameters (name → list of values) but received ${JSON.stringify(tuneParams)}`);
  }
  const entries = Object.entries(tuneParams);
  for (const [name, values] of entries) {
    if (!IDENTIFIER.test(name)) throw new SearchSpaceError(`Tunable parameter name '${name}' is not a C identifier; it is injected as a #define`);
    if (RESERVED_NAMES.has(name) || name.startsWith('__') || name.startsWith('lkt_')) {
      throw new SearchSpaceError(`Tunable parameter name '${name}' is reserved (Kernel Tuner's defines and cache fields, lkt_*, __*, and/or/not/True/False)`);
    }
    if (!Array.isArray(values) || values.length === 0) {
      throw new SearchSpaceError(`Expected a non-empty list of values for tunable parameter '${name}' but received ${JSON.stringify(values)}`);
    }
    const seen = new Set<string>();
    for (const v of values) {
      const ok = typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
      if (!ok) throw new SearchSpaceError(`Expected numbers, strings or booleans for tunable parameter '${name}' but received ${JSON.stringify(v)}`);
      if (seen.has(valueTag(v))) throw new SearchSpaceError(`Tunable parameter '${name}' lists the value ${JSON.stringify(v)} twice`);
      seen.add(valueTag(v));
      if (blockSizeNames.includes(name) && !(typeof v === 'number' && Number.isInteger(v) && v >= 1)) {
        throw new SearchSpaceError(`Block size parameter '${name}' must have positive integer values, but lists ${JSON.stringify(v)}`);
      }
    }
  }
}

export class SearchSpace {
  readonly paramNames: readonly string[];
  readonly tuneParams: TuneParams;
  readonly restrictions: RestrictionPredicate;
  readonly blockSizeNames: readonly [string, string, string];
  /** Number of raw combinations (the cartesian product before restrictions). */
  readonly rawSize: number;
  /** Configurations that satisfy the restrictions but not the device limits, in space order. */
  readonly excluded: readonly ExcludedConfig[];
  /** Their raw indices (the place of each in the cartesian product). */
  private readonly excludedRaw: readonly number[];

  private readonly values: readonly (readonly ParamValue[])[];
  /** Mixed-radix place values of the raw index: the last parameter varies fastest. */
  private readonly strides: number[];
  private readonly valueIndex: Map<string, number>[];
  /** Value indices of the valid configurations, row-major (size × parameters). */
  private readonly valueIndices: Int32Array;
  private readonly rawIndex: Float64Array;
  private readonly positionOfRaw = new Map<number, number>();
  /** Per parameter, the value indices some valid configuration has, ascending (for 'adjacent' neighbours). */
  private presentValues: Int32Array[] | undefined;

  constructor(tuneParams: TuneParams, restrictions?: readonly string[], options: SearchSpaceOptions = {}) {
    this.blockSizeNames = resolveBlockSizeNames(options.blockSizeNames);
    validateTuneParams(tuneParams, this.blockSizeNames);
    this.paramNames = Object.freeze(Object.keys(tuneParams));
    this.values = this.paramNames.map((n) => Object.freeze([...tuneParams[n]!]));
    this.tuneParams = Object.freeze(Object.fromEntries(this.paramNames.map((n, p) => [n, this.values[p]!])));
    this.valueIndex = this.values.map((vs) => new Map(vs.map((v, i) => [valueTag(v), i])));
    this.restrictions = compileRestrictions(restrictions, this.paramNames);

    const P = this.paramNames.length;
    this.strides = new Array<number>(P);
    let raw = 1;
    for (let p = P - 1; p >= 0; p--) {
      this.strides[p] = raw;
      raw *= this.values[p]!.length;
    }
    if (raw > Number.MAX_SAFE_INTEGER) throw new SearchSpaceError(`The search space has ${raw} raw combinations; at most 2^53 can be indexed`);
    this.rawSize = raw;

    const { indices, raws, excluded, excludedRaw } = this.enumerate(this.restrictions.restrictions, options.deviceLimits);
    this.valueIndices = Int32Array.from(indices);
    this.rawIndex = Float64Array.from(raws);
    raws.forEach((r, i) => this.positionOfRaw.set(r, i));
    this.excluded = Object.freeze(excluded);
    this.excludedRaw = excludedRaw;
  }

  private enumerate(restrictions: readonly CompiledRestriction[], limits: SearchSpaceOptions['deviceLimits']) {
    const P = this.paramNames.length;
    const indices: number[] = [];
    const raws: number[] = [];
    const excluded: ExcludedConfig[] = [];
    const excludedRaw: number[] = [];
    // Each restriction is checked at the level of the last parameter it reads; one that reads none is a constant.
    const buckets: CompiledRestriction[][] = Array.from({ length: P }, () => []);
    for (const r of restrictions) {
      const level = Math.max(...r.names.map((n) => this.paramNames.indexOf(n)));
      if (level < 0) {
        if (!r.test({})) return { indices, raws, excluded, excludedRaw };
      } else buckets[level]!.push(r);
    }
    const blockPositions = this.blockSizeNames.map((n) => this.paramNames.indexOf(n));
    // No tunable parameters: the one configuration {} (testing or timing a kernel as it is).
    if (P === 0) {
      const reason = limits && this.deviceLimitReason(new Int32Array(0), blockPositions, limits);
      if (reason) {
        excluded.push({ config: {}, key: '', reason });
        excludedRaw.push(0);
      } else raws.push(0);
      return { indices, raws, excluded, excludedRaw };
    }
    const idx = new Int32Array(P);
    const env: Config = {};
    let level = 0;
    for (;;) {
      env[this.paramNames[level]!] = this.values[level]![idx[level]!]!;
      const ok = buckets[level]!.every((r) => r.test(env));
      if (ok && level < P - 1) {
        idx[++level] = 0;
        continue;
      }
      if (ok) {
        let raw = 0;
        for (let p = 0; p < P; p++) raw += idx[p]! * this.strides[p]!;
        const reason = limits && this.deviceLimitReason(idx, blockPositions, limits);
        if (reason) {
          const config = this.configFromIndices(idx);
          excluded.push({ config, key: this.key(config), reason });
          excludedRaw.push(raw);
        } else {
          raws.push(raw);
          for (let p = 0; p < P; p++) indices.push(idx[p]!);
        }
      }
      while (++idx[level]! === this.values[level]!.length) {
        if (level === 0) return { indices, raws, excluded, excludedRaw };
        level--;
      }
    }
  }

  private deviceLimitReason(idx: Int32Array, blockPositions: number[], limits: NonNullable<SearchSpaceOptions['deviceLimits']>) {
    const partial: Config = {};
    blockPositions.forEach((p, d) => {
      if (p >= 0) partial[this.blockSizeNames[d]!] = this.values[p]![idx[p]!]!;
    });
    return exceedsDeviceLimits(limits, { block: blockDims(partial, this.blockSizeNames) });
  }

  private configFromIndices(idx: ArrayLike<number>): Config {
    const config: Config = {};
    this.paramNames.forEach((name, p) => (config[name] = this.values[p]![idx[p]!]!));
    return config;
  }

  /**
   * A deterministic share of the space: the k-th configuration that satisfies the restrictions (in Kernel Tuner's
   * order, whether or not it fits the device) belongs to shard k mod count. Shards do not depend on the device's limits,
   * so a shard is the same share on any GPU and in a replay. Returns the shard's valid positions and exclusions.
   */
  shard(index: number, count: number): { positions: Int32Array; excluded: ExcludedConfig[] } {
    const positions: number[] = [];
    const excluded: ExcludedConfig[] = [];
    let i = 0;
    let j = 0;
    for (let k = 0; i < this.size || j < this.excludedRaw.length; k++) {
      const takeValid = j >= this.excludedRaw.length || (i < this.size && this.rawIndex[i]! < this.excludedRaw[j]!);
      const mine = k % count === index;
      if (takeValid) {
        if (mine) positions.push(i);
        i++;
      } else {
        if (mine) excluded.push(this.excluded[j]!);
        j++;
      }
    }
    return { positions: Int32Array.from(positions), excluded };
  }

  /** Number of valid configurations. */
  get size(): number {
    return this.rawIndex.length;
  }

  /** The configuration at a position (0 ≤ index < size), parameters in tune_params order. */
  config(index: number): Config {
    return this.configFromIndices(this.indicesAt(index));
  }

  /** The value index of each parameter of the configuration at a position (a view; do not modify). */
  indicesAt(index: number): Int32Array {
    if (!Number.isInteger(index) || index < 0 || index >= this.size) throw new RangeError(`configuration index ${index} is outside [0, ${this.size})`);
    const P = this.paramNames.length;
    return this.valueIndices.subarray(index * P, index * P + P);
  }

  /** The position of a configuration given as value indices, or undefined when it is not in the space. */
  indexOfIndices(valueIndices: ArrayLike<number>): number | undefined {
    let raw = 0;
    for (let p = 0; p < this.paramNames.length; p++) {
      const i = valueIndices[p]!;
      if (!(i >= 0 && i < this.values[p]!.length)) return undefined;
      raw += i * this.strides[p]!;
    }
    return this.positionOfRaw.get(raw);
  }

  private valueIndicesOf(config: Config): number[] | undefined {
    const out: number[] = [];
    for (let p = 0; p < this.paramNames.length; p++) {
      const v = config[this.paramNames[p]!];
      const i = v === undefined ? undefined : this.valueIndex[p]!.get(valueTag(v));
      if (i === undefined) return undefined;
      out.push(i);
    }
    return out;
  }

  /** The position of a configuration, or undefined when it is not a valid configuration of this space. */
  indexOf(config: Config): number | undefined {
    const vi = this.valueIndicesOf(config);
    return vi && this.indexOfIndices(vi);
  }

  /** Why a configuration is not in the space (unknown value, restriction, device limit), or undefined when it is. */
  explain(config: Config): string | undefined {
    for (let p = 0; p < this.paramNames.length; p++) {
      const name = this.paramNames[p]!;
      const v = config[name];
      if (v === undefined) return `it has no value for tunable parameter '${name}'`;
      if (!this.valueIndex[p]!.has(valueTag(v))) return `${name}=${pythonStr(v)} is not one of its values [${this.values[p]!.map(pythonStr).join(', ')}]`;
    }
    const restriction = this.restrictions.violated(config);
    if (restriction !== undefined) return `it violates the restriction "${restriction}"`;
    return this.excluded.find((e) => e.key === this.key(config))?.reason;
  }

  /** Kernel Tuner's cache key of a configuration of this space. */
  key(config: Config): string {
    return configKey(config, this.paramNames);
  }

  /** The valid configurations in order. */
  *configs(): IterableIterator<Config> {
    for (let i = 0; i < this.size; i++) yield this.config(i);
  }

  /** Positions of the neighbours of a configuration (see NeighbourMethod), in the space's order. */
  neighbours(index: number, method: NeighbourMethod = 'Hamming'): number[] {
    return this.neighboursOf(this.indicesAt(index), method);
  }

  /**
   * Positions of the valid neighbours of any combination of value indices (one outside the space too: Kernel Tuner
   * repairs an invalid point from its neighbours), in the space's order (as Kernel Tuner lists them); never the
   * combination itself.
   */
  neighboursOf(valueIndices: ArrayLike<number>, method: NeighbourMethod): number[] {
    const P = this.paramNames.length;
    const idx = Array.from({ length: P }, (_, p) => valueIndices[p]!);
    let raw = 0;
    for (let p = 0; p < P; p++) raw += idx[p]! * this.strides[p]!;
    const out: number[] = [];
    const add = (r: number) => {
      const pos = this.positionOfRaw.get(r);
      if (pos !== undefined) out.push(pos);
    };
    if (method === 'Hamming') {
      for (let p = 0; p < P; p++) {
        for (let v = 0; v < this.values[p]!.length; v++) if (v !== idx[p]) add(raw + (v - idx[p]!) * this.strides[p]!);
      }
      return out.sort((a, b) => a - b);
    }
    // Per parameter the offsets it may move by: -1, 0, +1 (strictly-adjacent), or to the nearest value below and above
    // that occurs in the space (adjacent); then every combination but the all-zero one, in value order.
    const steps = idx.map((i, p) => {
      if (method === 'strictly-adjacent') return [...(i > 0 ? [-1] : []), 0, ...(i < this.values[p]!.length - 1 ? [1] : [])];
      if (method !== 'adjacent') throw new RangeError(`Unknown neighbour method '${String(method)}'; choose one of ${NEIGHBOUR_METHODS.join(', ')}`);
      const present = this.valuesPresent()[p]!;
      let below: number | undefined;
      let above: number | undefined;
      for (const v of present) {
        if (v < i) below = v;
        else if (v > i) {
          above = v;
          break;
        }
      }
      return [...(below !== undefined ? [below - i] : []), 0, ...(above !== undefined ? [above - i] : [])];
    });
    const choice = new Array<number>(P).fill(0);
    for (;;) {
      let r = raw;
      let moved = false;
      for (let p = 0; p < P; p++) {
        const offset = steps[p]![choice[p]!]!;
        r += offset * this.strides[p]!;
        moved ||= offset !== 0;
      }
      if (moved) add(r);
      let p = P - 1;
      while (p >= 0 && choice[p] === steps[p]!.length - 1) choice[p--] = 0;
      if (p < 0) return out;
      choice[p]!++;
    }
  }

  private valuesPresent(): Int32Array[] {
    if (!this.presentValues) {
      const P = this.paramNames.length;
      const seen = this.values.map((vs) => new Uint8Array(vs.length));
      for (let i = 0; i < this.valueIndices.length; i++) seen[i % P]![this.valueIndices[i]!] = 1;
      this.presentValues = seen.map((flags) => Int32Array.from([...flags.keys()].filter((v) => flags[v])));
    }
    return this.presentValues;
  }

  /**
   * Kernel Tuner's scaled coordinates (strategies/common.py, for pso, firefly, basinhopping, dual_annealing): every
   * parameter p lives in [0, eps * count_p] with eps = the smallest 1 / count_p, its value i at eps * (i + 0.5).
   */
  get eps(): number {
    return Math.min(...this.values.map((v) => 1 / v.length));
  }

  /** The upper bound of each scaled coordinate (the lower is 0). */
  get scaledBounds(): number[] {
    const eps = this.eps;
    return this.values.map((v) => eps * v.length);
  }

  /** The scaled point of some value indices (Kernel Tuner's scale_from_params). */
  scale(valueIndices: ArrayLike<number>): Float64Array {
    const eps = this.eps;
    return Float64Array.from({ length: this.paramNames.length }, (_, p) => eps * (valueIndices[p]! + 0.5));
  }

  /**
   * The value indices nearest a scaled point, per parameter (Kernel Tuner's unscale_and_snap_to_nearest: the first
   * nearest on a tie, out-of-bounds coordinates to the first or last value). The result may violate the restrictions.
   */
  snapScaled(x: ArrayLike<number>): Int32Array {
    const eps = this.eps;
    return Int32Array.from({ length: this.paramNames.length }, (_, p) => {
      const n = this.values[p]!.length;
      // Centres at eps * (i + 0.5): the nearest is x / eps - 0.5 rounded, a tie to the lower index (argmin takes the first).
      const i = Math.ceil(x[p]! / eps - 1);
      return Math.min(Math.max(i, 0), n - 1);
    });
  }

  /**
   * The value indices of the values nearest some parameter values (Kernel Tuner's snap_to_nearest_config: a value in
   * the list is itself, a number otherwise snaps to the numerically nearest value, the first on a tie).
   */
  snapValues(values: readonly ParamValue[]): Int32Array {
    return Int32Array.from({ length: this.paramNames.length }, (_, p) => {
      const v = values[p]!;
      const exact = this.valueIndex[p]!.get(valueTag(v));
      if (exact !== undefined) return exact;
      if (typeof v !== 'number') throw new RangeError(`${pythonStr(v)} is not a value of tunable parameter '${this.paramNames[p]}'`);
      let best = -1;
      let bestDistance = Infinity;
      this.values[p]!.forEach((w, i) => {
        const d = typeof w === 'number' ? Math.abs(w - v) : Infinity;
        if (d < bestDistance) [best, bestDistance] = [i, d];
      });
      if (best < 0) throw new RangeError(`tunable parameter '${this.paramNames[p]}' has no numeric value near ${v}`);
      return best;
    });
  }

  /**
   * The valid configuration a scaled point stands for, repaired as Kernel Tuner's CostFunc does with constraint_aware
   * (unscale_and_snap_to_nearest_valid): the snapped configuration when valid, else among its neighbours (strictly-
   * adjacent, else adjacent, else Hamming: the first method that finds any) the one nearest the point (Euclidean,
   * scaled; the first in value order on a tie); undefined when it has none.
   */
  snapScaledToValid(x: ArrayLike<number>): number | undefined {
    const snapped = this.snapScaled(x);
    const exact = this.indexOfIndices(snapped);
    if (exact !== undefined) return exact;
    for (const method of ['strictly-adjacent', 'adjacent', 'Hamming'] as const) {
      const candidates = this.neighboursOf(snapped, method);
      if (candidates.length === 0) continue;
      let best = candidates[0]!;
      let bestDistance = Infinity;
      for (const c of candidates) {
        const y = this.scale(this.indicesAt(c));
        let d = 0;
        for (let p = 0; p < y.length; p++) d += (y[p]! - x[p]!) ** 2;
        if (d < bestDistance) [best, bestDistance] = [c, d];
      }
      return best;
    }
    return undefined;
  }

  /** `count` distinct positions drawn uniformly without replacement (all of them, shuffled, when count ≥ size). */
  sample(count: number, rng: Random): number[] {
    const n = Math.min(Math.max(0, Math.floor(count)), this.size);
    const pool = new Int32Array(this.size);
    for (let i = 0; i < this.size; i++) pool[i] = i;
    // Partial Fisher–Yates: only the first n slots are drawn.
    for (let i = 0; i < n; i++) {
      const j = i + rng.int(this.size - i);
      const tmp = pool[i]!;
      pool[i] = pool[j]!;
      pool[j] = tmp;
    }
    return Array.from(pool.subarray(0, n));
  }

  /**
   * The valid configuration closest to some value indices (fewest steps along the value lists, ties broken at random):
   * turns any combination a search operator produces (a crossover child, a mutant) into a configuration of the space.
   */
  closest(valueIndices: ArrayLike<number>, rng: Random): number {
    const exact = this.indexOfIndices(valueIndices);
    if (exact !== undefined) return exact;
    if (this.size === 0) throw new SearchSpaceError('The search space is empty');
    const P = this.paramNames.length;
    let best = -1;
    let bestDistance = Infinity;
    let ties = 0;
    for (let i = 0; i < this.size; i++) {
      let d = 0;
      for (let p = 0; p < P && d <= bestDistance; p++) d += Math.abs(this.valueIndices[i * P + p]! - valueIndices[p]!);
      if (d < bestDistance) {
        best = i;
        bestDistance = d;
        ties = 1;
      } else if (d === bestDistance && rng.int(++ties) === 0) best = i; // reservoir sampling over the ties
    }
    return best;
  }

  /** Number of values of each parameter. */
  get valueCounts(): number[] {
    return this.values.map((v) => v.length);
  }
}
