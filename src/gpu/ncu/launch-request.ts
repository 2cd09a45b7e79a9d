// The files of one launch in a process of its own (launch-once.ts), as Nsight Compute (profile.ts) and
// compute-sanitizer (../sanitizer/sanitize.ts) run it: the cubin, the arguments' contents and the request, written to a
// directory the caller owns.

import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { checkNonNegativeInteger } from '../check';
import { checkScalarValue, isKernelScalar, isTypedArrayOf, nativeScalar, scalarBitPattern, type AnyTypedArray, type DType, type KernelScalar, type ScalarValueOf } from '../dtype';
import { argumentError } from '../errors';
import { LaunchConfig, type LaunchConfigInit } from '../launch-config';
import { checkRandomSpec, type RandomSpec } from '../random';
import type { CompiledProgram } from '../types';
import type { LaunchOnceArg, LaunchOnceConstant, LaunchOnceContents, LaunchOnceRequest } from './launch-once';

/**
 * A buffer's contents: data, one repeated value, seeded random numbers, zeros (a length alone), or never written
 * (`uninitialized`: what the kernel reads of it, compute-sanitizer's initcheck reports).
 */
export type LaunchBuffer<D extends DType = DType> =
  | { dtype: D; data: AnyTypedArray }
  | { dtype: D; length: number; fill: ScalarValueOf<D> }
  | { dtype: D; length: number; random: RandomSpec }
  | { dtype: D; length: number; uninitialized: true }
  | { dtype: D; length: number };

export type LaunchArg = LaunchBuffer | KernelScalar;

/** One launch of a compiled kernel: what the tuner has for a configuration. */
export interface LaunchTarget {
  /** The configuration's build (NVRTC or nvcc), with the kernel's lowered name. */
  compiled: CompiledProgram;
  nameExpression: string;
  launch: LaunchConfigInit;
  args: readonly LaunchArg[];
  /** `__constant__` symbols of the module and their data, copied in before the launch. */
  constants?: readonly { symbol: string; data: LaunchBuffer }[];
  /** CUDA device ordinal; default 0. */
  device?: number;
}

async function contentsOf(buffer: LaunchBuffer, at: string, file: string): Promise<{ length: number; contents: LaunchOnceContents }> {
  if (typeof buffer !== 'object' || buffer === null || !('dtype' in buffer)) throw argumentError(at, 'a buffer description or a typed scalar', buffer);
  if ('data' in buffer) {
    if (!isTypedArrayOf(buffer.dtype, buffer.data)) throw argumentError(`${at}.data`, `a typed array of ${buffer.dtype}`, buffer.data);
    await writeFile(file, new Uint8Array(buffer.data.buffer, buffer.data.byteOffset, buffer.data.byteLength));
    return { length: buffer.data.length, contents: { file } };
  }
  const length = checkNonNegativeInteger(`${at}.length`, buffer.length);
  if ('fill' in buffer) return { length, contents: { pattern: scalarBitPattern(buffer.dtype, checkScalarValue(buffer.dtype, buffer.fill, `${at}.fill`)).toString() } };
  if ('random' in buffer) return { length, contents: { random: checkRandomSpec(buffer.dtype, buffer.random) } };
  if ('uninitialized' in buffer) return { length, contents: { uninitialized: true } };
  return { length, contents: { zero: true } };
}

async function launchArg(arg: LaunchArg, index: number, dir: string): Promise<LaunchOnceArg> {
  if (isKernelScalar(arg)) {
    const s = nativeScalar(arg.dtype, checkScalarValue(arg.dtype, arg.value, `args[${index}]`));
    return { kind: 'scalar', dtype: s.dtype, value: typeof s.value === 'bigint' ? s.value.toString() : s.value };
  }
  return { kind: 'buffer', dtype: arg.dtype, ...(await contentsOf(arg, `args[${index}]`, path.join(dir, `arg${index}.bin`))) };
}

/**
 * Writes the cubin, the contents of the arguments and constants, and the request into `dir`; returns the request's
 * file and the kernel's lowered name (what a tool's kernel filter names). Bad arguments throw before anything runs.
 */
export async function writeLaunchRequest(target: LaunchTarget, dir: string): Promise<{ requestFile: string; resultFile: string; loweredName: string }> {
  const loweredName = target.compiled.loweredNames[target.nameExpression];
  if (loweredName === undefined)
    throw argumentError('nameExpression', `one of the build's name expressions (${Object.keys(target.compiled.loweredNames).join(', ')})`, target.nameExpression);
  const launch = LaunchConfig.from(target.launch);
  const cubinFile = path.join(dir, 'kernel.cubin');
  await writeFile(cubinFile, target.compiled.cubin);
  const constants = await Promise.all(
    (target.constants ?? []).map(async (c, i): Promise<LaunchOnceConstant> => ({ symbol: c.symbol, dtype: c.data.dtype, ...(await contentsOf(c.data, `constants[${i}]`, path.join(dir, `constant${i}.bin`))) })),
  );
  const request: LaunchOnceRequest = {
    device: target.device ?? 0,
    cubinFile,
    loweredName,
    grid: launch.grid,
    block: launch.block,
    sharedMemBytes: launch.sharedMemBytes,
    args: await Promise.all(target.args.map((a, i) => launchArg(a, i, dir))),
    ...(constants.length > 0 && { constants }),
    resultFile: path.join(dir, 'result.json'),
  };
  const requestFile = path.join(dir, 'request.json');
  await writeFile(requestFile, JSON.stringify(request));
  return { requestFile, resultFile: request.resultFile, loweredName };
}

/** The environment of the launched process: inside an editor built on Electron, process.execPath runs as Node only when told. */
export function launchProcessEnv(extra: Readonly<Record<string, string | undefined>> | undefined): NodeJS.ProcessEnv {
  return { ...process.env, ...(process.versions.electron && { ELECTRON_RUN_AS_NODE: '1' }), ...extra };
}
