// The process Nsight Compute profiles and compute-sanitizer checks: the GPU worker bundle started as
// `gpu-worker.js --profile=REQUEST.json` (no IPC channel), which loads one cubin, sets up the kernel's arguments and
// constant memory as the request describes them and launches the kernel once, then writes whether it worked to the
// request's result file. Both tools can only watch a process they start, and this one does nothing else on the GPU,
// so the launch they see is the one asked for.

import { readFileSync, writeFileSync } from 'node:fs';
import { dtypeBytes, type DType } from '../dtype';
import { argumentError, serializeError, type SerializedError } from '../errors';
import type { NativeAddon, NativeArg, NativeDType } from '../native-types';
import { checkRandomSpec, generateRandom, type NormalizedRandomSpec } from '../random';
import type { Dim3 } from '../types';

export const PROFILE_FLAG = '--profile=';

/** A buffer's contents: a file's bytes, a repeated bit pattern, seeded random numbers, zeros, or never written. */
export type LaunchOnceContents = { file: string } | { pattern: string } | { random: NormalizedRandomSpec } | { zero: true } | { uninitialized: true };

/** A `__constant__` symbol's data, copied into the module before the launch. */
export interface LaunchOnceConstant {
  symbol: string;
  dtype: DType;
  length: number;
  contents: LaunchOnceContents;
}

export type LaunchOnceArg =
  | { kind: 'buffer'; dtype: DType; length: number; contents: LaunchOnceContents }
  /** 64-bit integers travel as decimal strings (JSON has no bigint). */
  | { kind: 'scalar'; dtype: NativeDType; value: number | string };

export interface LaunchOnceRequest {
  device: number;
  cubinFile: string;
  loweredName: string;
  grid: Dim3;
  block: Dim3;
  sharedMemBytes: number;
  args: LaunchOnceArg[];
  constants?: LaunchOnceConstant[];
  /** Where the outcome is written: { ok: true } or { ok: false, error }. */
  resultFile: string;
}

export type LaunchOnceResult = { ok: true } | { ok: false; error: SerializedError };

/** Default per-block limit of dynamic shared memory; above it the function must opt in. */
const DEFAULT_DYNAMIC_SHARED = 48 * 1024;
const RANDOM_CHUNK_ELEMENTS = 1 << 22;

function fill(addon: NativeAddon, ptr: bigint, arg: { dtype: DType; length: number; contents: LaunchOnceContents }): void {
  const elementBytes = dtypeBytes(arg.dtype);
  const c = arg.contents;
  if ('file' in c) {
    const data = readFileSync(c.file);
    if (data.byteLength !== arg.length * elementBytes)
      throw argumentError(`contents of ${c.file}`, `${arg.length * elementBytes} bytes (${arg.length} × ${arg.dtype})`, data);
    addon.memUpload(ptr, data, 0);
  } else if ('pattern' in c) {
    addon.memFill(ptr, elementBytes, BigInt(c.pattern), arg.length);
  } else if ('random' in c) {
    const spec = checkRandomSpec(arg.dtype, c.random);
    generateRandom(arg.dtype, arg.length, spec, (chunk, offset) => addon.memUpload(ptr, chunk, offset * elementBytes), RANDOM_CHUNK_ELEMENTS);
  } else if ('zero' in c) {
    addon.memFill(ptr, 1, 0n, arg.length * elementBytes);
  }
  // { uninitialized }: left as the allocation came, so that compute-sanitizer's initcheck sees a read of it.
}

function allocated(addon: NativeAddon, buffer: { dtype: DType; length: number; contents: LaunchOnceContents }): bigint {
  const ptr = addon.memAlloc(Math.max(1, buffer.length * dtypeBytes(buffer.dtype)));
  fill(addon, ptr, buffer);
  return ptr;
}

/** Runs the request's one launch with `addon`; throws what the addon throws. */
export function launchOnce(addon: NativeAddon, request: LaunchOnceRequest): void {
  addon.contextCreate(request.device);
  try {
    const module = addon.moduleLoad(readFileSync(request.cubinFile));
    const fn = addon.moduleGetFunction(module, request.loweredName);
    if (request.sharedMemBytes > DEFAULT_DYNAMIC_SHARED) addon.functionSetMaxDynamicShared(fn, request.sharedMemBytes);
    const args = request.args.map((arg): NativeArg => {
      if (arg.kind === 'scalar') return { kind: 'scalar', dtype: arg.dtype, value: typeof arg.value === 'string' ? BigInt(arg.value) : arg.value };
      return { kind: 'buffer', ptr: allocated(addon, arg) };
    });
    for (const c of request.constants ?? []) addon.moduleCopyToGlobal(module, c.symbol, allocated(addon, c), c.length * dtypeBytes(c.dtype));
    addon.launch({ fn, grid: request.grid, block: request.block, sharedMemBytes: request.sharedMemBytes, args });
  } finally {
    addon.contextDestroy();
  }
}

/** The `--profile=FILE` mode of the worker bundle: one launch, its outcome in the result file, exit code 0 or 1. */
export function runLaunchOnceRequest(addon: NativeAddon | Error, requestFile: string): never {
  let request: LaunchOnceRequest;
  try {
    request = JSON.parse(readFileSync(requestFile, 'utf8')) as LaunchOnceRequest;
  } catch (e) {
    console.error(`gpu-worker: cannot read the profile request ${requestFile}: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(2);
  }
  let result: LaunchOnceResult;
  try {
    if (addon instanceof Error) throw addon;
    launchOnce(addon, request);
    result = { ok: true };
  } catch (e) {
    result = { ok: false, error: serializeError(e) };
  }
  writeFileSync(request.resultFile, JSON.stringify(result));
  process.exit(result.ok ? 0 : 1);
}
