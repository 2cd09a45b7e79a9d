// Launch geometry with Kernel Tuner's semantics:
//  - the thread block comes from the parameters named by blockSizeNames (default block_size_x/y/z); a missing x is 256,
//    a missing y or z is 1 (Kernel Tuner's get_thread_block_dimensions);
//  - grid[d] = ceil(problemSize[d] / divisor[d]); a divisor is a number, an expression over parameters and scalars, or a
//    list of those (their product; an empty list means 1, i.e. the problem size is the grid). A divisor left out is the
//    block size parameter of that dimension, or 1 when that parameter is not tunable (Kernel Tuner's grid_div default);
//  - problem size entries are numbers or expressions over scalar kernel arguments and tunable parameters, truncated to
//    integers as Kernel Tuner's int(eval(...)) does;
//  - the dynamic shared memory of a launch (`extern __shared__`) is a number or such an expression too
//    ("block_size_x * 4"), Kernel Tuner's smem_args.

import { compileExpression, evaluateNumber, ExpressionEvalError, unknownNameMessage, type CompiledExpression, type Env } from './expressions';
import { pythonStr, type Config, type Dim3, type ParamValue, type ProblemSizeSpec } from '../types';

export const DEFAULT_BLOCK_SIZE_NAMES: readonly [string, string, string] = ['block_size_x', 'block_size_y', 'block_size_z'];
/** Kernel Tuner's block x when no parameter sets it. */
export const DEFAULT_BLOCK_X = 256;
const AXES = ['x', 'y', 'z'] as const;

export class GeometryError extends Error {
  override name = 'GeometryError';
}

export type GridDivisor = number | string | readonly (number | string)[];

export interface GeometrySpec {
  problemSize: ProblemSizeSpec;
  gridDivX?: GridDivisor;
  gridDivY?: GridDivisor;
  gridDivZ?: GridDivisor;
  /** Up to three names; missing trailing ones default to block_size_y, block_size_z (as Kernel Tuner appends them). */
  blockSizeNames?: readonly string[];
  /** Dynamic shared memory per block in bytes: a number or an expression over parameters and scalars; default 0. */
  sharedMemBytes?: number | string;
}

export interface LaunchGeometry {
  problemSize: Dim3;
  grid: Dim3;
  block: Dim3;
  /** Dynamic shared memory per block (bytes). */
  sharedMemBytes: number;
}

/** The device limits a launch is checked against; NativeDeviceInfo satisfies this shape. */
export interface DeviceLimits {
  maxThreadsPerBlock: number;
  maxBlockDim: readonly [number, number, number];
  maxGridDim?: readonly [number, number, number];
  maxSharedMemoryPerBlock?: number;
  /** The opt-in maximum (cuFuncSetAttribute); when present it is the shared memory limit. */
  maxSharedMemoryPerBlockOptin?: number;
}

/** Completes a user's block size names to three, as Kernel Tuner does. */
export function resolveBlockSizeNames(names: readonly string[] = DEFAULT_BLOCK_SIZE_NAMES): [string, string, string] {
  if (!Array.isArray(names) || names.length > 3 || !names.every((n) => typeof n === 'string' && n.length > 0)) {
    throw new GeometryError(`blockSizeNames must be a list of at most 3 names, received ${JSON.stringify(names)}`);
  }
  return [0, 1, 2].map((i) => names[i] ?? DEFAULT_BLOCK_SIZE_NAMES[i]!) as [string, string, string];
}

function positiveInteger(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new GeometryError(`${what} must be a positive integer, but is ${JSON.stringify(value)}`);
  }
  return value;
}

/** The thread block of a configuration. */
export function blockDims(config: Config, blockSizeNames?: readonly string[]): Dim3 {
  const names = resolveBlockSizeNames(blockSizeNames);
  const defaults = [DEFAULT_BLOCK_X, 1, 1];
  return names.map((name, i) => positiveInteger(config[name] ?? defaults[i], `block size '${name}'`)) as Dim3;
}

type Term = number | CompiledExpression;

/** A compiled geometry: expressions parsed and their names checked once, evaluated per configuration. */
export class Geometry {
  readonly blockSizeNames: [string, string, string];
  private readonly problem: Term[];
  /** Per dimension: the factors of the divisor, or undefined for the block size default. */
  private readonly divisors: (Term[] | undefined)[];
  private readonly sharedMem: Term | undefined;
  private readonly knownNames: string[];

  constructor(spec: GeometrySpec, names: { paramNames: readonly string[]; scalarNames?: readonly string[] }) {
    this.blockSizeNames = resolveBlockSizeNames(spec.blockSizeNames);
    const scalarNames = names.scalarNames ?? [];
    const clash = scalarNames.find((n) => names.paramNames.includes(n));
    if (clash !== undefined) throw new GeometryError(`'${clash}' is both a scalar kernel argument and a tunable parameter; rename one`);
    this.knownNames = [...names.paramNames, ...scalarNames];

    const sizes = Array.isArray(spec.problemSize) ? spec.problemSize : [spec.problemSize];
    if (sizes.length < 1 || sizes.length > 3) {
      throw new GeometryError(`problem size must have 1 to 3 dimensions, received ${JSON.stringify(spec.problemSize)}`);
    }
    this.problem = sizes.map((s, i) => this.term(s, `problem size ${AXES[i]}`));
    this.divisors = [spec.gridDivX, spec.gridDivY, spec.gridDivZ].map((d, i) => {
      if (d === undefined) return undefined;
      const factors = Array.isArray(d) ? d : [d];
      return factors.map((f) => this.term(f, `grid divisor ${AXES[i]}`));
    });
    this.sharedMem = spec.sharedMemBytes === undefined || spec.sharedMemBytes === 0 ? undefined : this.term(spec.sharedMemBytes, 'dynamic shared memory', true);
  }

  private term(value: unknown, what: string, zeroAllowed = false): Term {
    if (typeof value === 'number') {
      if (!Number.isFinite(value) || value < 0 || (value === 0 && !zeroAllowed)) {
        throw new GeometryError(`${what} must be a ${zeroAllowed ? 'non-negative' : 'positive'} number, received ${value}`);
      }
      return value;
    }
    if (typeof value !== 'string') throw new GeometryError(`${what} must be a number or an expression string, received ${JSON.stringify(value)}`);
    try {
      return compileExpression(value, {
        knownNames: this.knownNames,
        unknownName: (name, known, src) => new GeometryError(`${what}: ${unknownNameMessage(name, known, src)}`),
      });
    } catch (e) {
      if (e instanceof GeometryError) throw e;
      throw new GeometryError(`${what}: ${(e as Error).message}`, { cause: e });
    }
  }

  private value(term: Term, env: Env, what: string): number {
    if (typeof term === 'number') return term;
    try {
      return Math.trunc(evaluateNumber(term, env));
    } catch (e) {
      if (e instanceof ExpressionEvalError) throw new GeometryError(`${what}: ${e.message}`, { cause: e });
      throw e;
    }
  }

  /** The problem size one block covers in each dimension (the grid divisors' values): grid = ceil(problem size / this). */
  workPerBlock(config: Config, scalars: Env = {}): Dim3 {
    const env: Env = { ...scalars, ...config };
    return [0, 1, 2].map((i) => {
      const factors = this.divisors[i];
      const what = `grid divisor ${AXES[i]}`;
      const divisor =
        factors === undefined ? Number(config[this.blockSizeNames[i]] ?? 1) : factors.reduce((p: number, f) => p * this.value(f, env, what), 1);
      if (!(divisor > 0)) throw new GeometryError(`${what} evaluates to ${divisor} for ${JSON.stringify(config)}; it must be positive`);
      return divisor;
    }) as Dim3;
  }

  /** Problem size, block and grid of a configuration; `scalars` are the scalar kernel arguments by name. */
  launch(config: Config, scalars: Env = {}): LaunchGeometry {
    const env: Env = { ...scalars, ...config };
    const problemSize = [0, 1, 2].map((i) => {
      const t = this.problem[i];
      return t === undefined ? 1 : positiveInteger(this.value(t, env, `problem size ${AXES[i]}`), `problem size ${AXES[i]}`);
    }) as Dim3;
    const block = blockDims(config, this.blockSizeNames);
    const work = this.workPerBlock(config, scalars);
    const grid = problemSize.map((size, i) => Math.ceil(size / work[i]!)) as Dim3;
    const sharedMemBytes = this.sharedMem === undefined ? 0 : this.value(this.sharedMem, env, 'dynamic shared memory');
    if (!Number.isSafeInteger(sharedMemBytes) || sharedMemBytes < 0) {
      throw new GeometryError(`dynamic shared memory evaluates to ${sharedMemBytes} bytes for ${JSON.stringify(config)}; it must be a non-negative integer`);
    }
    return { problemSize, grid, block, sharedMemBytes };
  }
}

/**
 * The preprocessor defines Kernel Tuner injects, in its order: grid_size_x/y/z, the three block size names with the block
 * dimensions, every tunable parameter (in the configuration's order), and kernel_tuner = 1. Values are written as Python's
 * str() writes them, except booleans, which become 1 and 0 so that `#if use_x` and `if (use_x)` work in CUDA C++.
 * (Kernel Tuner also turns a `loop_unroll_factor*` define into `constexpr int` and drops `#pragma unroll NAME` when it is 0;
 * that is a rewrite of the source, done where the source is prepared.)
 */
export function defines(config: Config, launch: { grid: Dim3; block: Dim3 }, blockSizeNames?: readonly string[]): Record<string, string> {
  const names = resolveBlockSizeNames(blockSizeNames);
  const out: Record<string, string> = {};
  AXES.forEach((axis, i) => (out[`grid_size_${axis}`] = String(launch.grid[i])));
  names.forEach((name, i) => (out[name] = String(launch.block[i])));
  for (const [name, value] of Object.entries(config)) out[name] = defineValue(value);
  out['kernel_tuner'] = '1';
  return out;
}

/** A parameter's value as its define: Python's str(), booleans as 1 and 0. */
export function defineValue(value: ParamValue): string {
  return typeof value === 'boolean' ? (value ? '1' : '0') : pythonStr(value);
}

/** Why a launch cannot run on the device (checked before compiling), or undefined when it fits. */
export function exceedsDeviceLimits(limits: DeviceLimits, launch: { block: Dim3; grid?: Dim3; sharedBytes?: number }): string | undefined {
  const { block, grid, sharedBytes } = launch;
  const threads = block[0] * block[1] * block[2];
  if (threads > limits.maxThreadsPerBlock) {
    return `block ${block.join('x')} has ${threads} threads; the device allows at most ${limits.maxThreadsPerBlock} per block`;
  }
  for (let i = 0; i < 3; i++) {
    if (block[i]! > limits.maxBlockDim[i]!) return `block ${AXES[i]} dimension ${block[i]} exceeds the device's maximum of ${limits.maxBlockDim[i]}`;
    if (grid && limits.maxGridDim && grid[i]! > limits.maxGridDim[i]!) {
      return `grid ${AXES[i]} dimension ${grid[i]} exceeds the device's maximum of ${limits.maxGridDim[i]}`;
    }
  }
  const sharedLimit = limits.maxSharedMemoryPerBlockOptin ?? limits.maxSharedMemoryPerBlock;
  if (sharedBytes !== undefined && sharedLimit !== undefined && sharedBytes > sharedLimit) {
    return `${sharedBytes} bytes of shared memory per block exceed the device's limit of ${sharedLimit}`;
  }
  return undefined;
}
