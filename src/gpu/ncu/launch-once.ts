// The process Nsight Compute profiles: the GPU worker bundle started as `gpu-worker.js --profile=REQUEST.json` (no IPC
// channel), which loads one cubin, sets up the kernel's arguments as the request describes them and launches the
// kernel once, then writes whether it worked to the request's result file. ncu can only profile a process it starts,
// and this one does nothing else on the GPU, so the launch that ncu's kernel filter catches is the one asked for.

import { readFileSync, writeFileSync } from 'node:fs';
import { dtypeBytes, type DType } from '../dtype';
import { argumentError, serializeError, type SerializedError } from '../errors';
import type { NativeAddon, NativeArg, NativeDType } from '../native-types';
import { checkRandomSpec, generateRandom, type NormalizedRandomSpec } from '../random';
import type { Dim3 } from '../types';

export const PROFILE_FLAG = '--profile=';

export type LaunchOnceContents = { file: string } | { pattern: string } | { random: NormalizedRandomSpec } | { zero: true };

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
  /** Where the outcome is written: { ok: true } or { ok: false, error }. */
  resultFile: string;
}

export type LaunchOnceResult = { ok: true } | { ok: false; error: SerializedError };

/** Default per-block limit of dynamic shared memory; above it the function must opt in. */
const DEFAULT_DYNAMIC_SHARED = 48 * 1024;
const RANDOM_CHUNK_ELEMENTS = 1 << 22;

function fill(addon: NativeAddon, ptr: bigint, arg: Extract<LaunchOnceArg, { kind: 'buffer' }>): void {
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
  } else {
    addon.memFill(ptr, 1, 0n, arg.length * elementBytes);
  }
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
      const ptr = addon.memAlloc(Math.max(1, arg.length * dtypeBytes(arg.dtype)));
      fill(addon, ptr, arg);
      return { kind: 'buffer', ptr };
    });
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
