// The GPU worker process (bundled to dist/gpu-worker.js). It is the only process that loads the addon: a kernel that
// faults poisons its CUDA context and one that loops forever blocks its main thread, and in both cases the parent
// kills this process and starts a fresh one instead of going down with it. Started with --profile=REQUEST.json
// instead (by Nsight Compute, see ncu/launch-once.ts), it launches one kernel and exits.
//
// Requests arrive in order from the parent. Compiles run on the libuv pool (the addon's AsyncWorker), so several can
// be in flight; everything else is a synchronous CUDA call on this thread (the parent sends those one at a time, so
// its watchdog always knows which request is running). The CUDA context is created on the first request that needs
// it, for the device given by --device=N. Started with --compile-only it is a compile process of a CompilePool: it
// answers compiles only.

import * as path from 'node:path';
import { readFileSync } from 'node:fs';
import { CudaUnavailableError, KernelFaultError, argumentError, fromNativeError, poisonsContext, serializeError, type GpuError } from './errors';
import { dtypeBytes } from './dtype';
import { ENERGY_POLL_MS, SAMPLE_EVERY_POLLS, energyRunOptions, summarizeEnergyRun, type EnergyResult } from './energy';
import { loadNativeAddon } from './native';
import type { NativeAddon, NativeArg, NativeDeviceInfo, NativeLaunch, NativeReset, NativeStatus } from './native-types';
import {
  COMPILE_ONLY_FLAG,
  isParentMessage,
  type HandleId,
  type LogLevel,
  type MethodName,
  type ParamsOf,
  type ReadyMessage,
  type RequestMessage,
  type ResultOf,
  type WireCheck,
  type WireLaunch,
  type WorkerMessage,
} from './protocol';
import { PROFILE_FLAG, runLaunchOnceRequest } from './ncu/launch-once';
import { occupancyOf, theoreticalOccupancy } from './occupancy';
import { checkRandomSpec, generateRandom } from './random';
import { median } from './stats';
import type { KernelAttributes, NvmlReadings } from './types';

/** Test-only: path of a JS module exporting a NativeAddon-shaped test double that replaces the real addon. */
const ADDON_TEST_DOUBLE_ENV = 'LKT_GPU_ADDON_MODULE';
/** Random fills are generated and uploaded in chunks of this many elements (bounded host memory). */
const RANDOM_CHUNK_ELEMENTS = 1 << 22;

interface BufferEntry {
  ptr: bigint;
  bytes: number;
}
interface ModuleEntry {
  handle: bigint;
  kernels: Set<HandleId>;
}
interface KernelEntry {
  fn: bigint;
  module: HandleId;
  attributes: KernelAttributes;
  /** The function's current dynamic shared memory limit (raised on demand, never lowered). */
  dynamicSharedLimit: number;
}

function send(message: WorkerMessage): void {
  // The parent is gone when the channel is closed; there is nobody left to answer.
  if (!process.connected || !process.send) process.exit(0);
  process.send(message);
}

function log(level: LogLevel, message: string): void {
  send({ type: 'log', level, message });
}

function loadAddon(): { addon: NativeAddon } | { error: GpuError } {
  const testDouble = process.env[ADDON_TEST_DOUBLE_ENV];
  try {
    if (testDouble) {
      const mod = require(path.resolve(testDouble)) as NativeAddon | { default: NativeAddon };
      return { addon: 'default' in mod ? mod.default : mod };
    }
    return { addon: loadNativeAddon() };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    const source = testDouble ? `the addon test double ${testDouble}` : 'the native addon (kernel_tuner_native.node)';
    return {
      error: new CudaUnavailableError(`GPU support is not available: ${source} could not be loaded: ${message}`, {
        code: 'ADDON_NOT_LOADED',
        explanation: testDouble
          ? `Fix or unset ${ADDON_TEST_DOUBLE_ENV}.`
          : 'Build it with `npm run build:native` (or reinstall the extension); it must sit in dist/native/.',
      }),
    };
  }
}

class WorkerState {
  private contextReady = false;
  private poisoned: GpuError | null = null;
  private device: NativeDeviceInfo | null = null;
  private nextId = 1;
  private readonly buffers = new Map<HandleId, BufferEntry>();
  private readonly modules = new Map<HandleId, ModuleEntry>();
  private readonly kernels = new Map<HandleId, KernelEntry>();
  /** Scratch buffer larger than L2, written before each timed launch when flushL2 is asked; kept for this worker's life. */
  private flush: BufferEntry | null = null;
  /** The enforced power limit read with the first energy measurement (null: the device does not report it). */
  private powerLimitW: number | null | undefined;

  constructor(
    private readonly addon: NativeAddon,
    private readonly ordinal: number,
  ) {}

  /** After a fault every CUDA call would fail with it again; say so plainly until the parent replaces this worker. */
  notePossibleFault(error: GpuError): void {
    if (poisonsContext(error) && !this.poisoned) this.poisoned = error;
  }

  private context(): NativeAddon {
    if (this.poisoned)
      throw new KernelFaultError(
        `The CUDA context of this worker was poisoned by an earlier fault (${this.poisoned.code}); the worker is being replaced.`,
        { code: this.poisoned.code, explanation: this.poisoned.explanation },
      );
    if (!this.contextReady) {
      this.addon.contextCreate(this.ordinal);
      this.contextReady = true;
      log('debug', `CUDA context created on device ${this.ordinal}`);
    }
    return this.addon;
  }

  private deviceInfo(): NativeDeviceInfo {
    this.device ??= this.addon.deviceInfo(this.ordinal);
    return this.device;
  }

  private buffer(id: HandleId, name = 'buffer'): BufferEntry {
    const b = this.buffers.get(id);
    if (!b) throw argumentError(name, 'a live buffer handle of this worker (not freed)', id);
    return b;
  }

  private kernel(id: HandleId): KernelEntry {
    const k = this.kernels.get(id);
    if (!k) throw argumentError('kernel', 'a kernel handle of a loaded module of this worker', id);
    return k;
  }

  private checkRange(b: BufferEntry, byteOffset: number, bytes: number, name: string): void {
    if (!Number.isSafeInteger(byteOffset) || byteOffset < 0 || !Number.isSafeInteger(bytes) || bytes < 0 || byteOffset + bytes > b.bytes)
      throw argumentError(name, `a byte range within the buffer's ${b.bytes} bytes`, `[${byteOffset}, ${byteOffset + bytes})`);
  }

  /** The buffers of a device → device copy, each checked to hold `bytes`. */
  private copyRanges(p: { dst: HandleId; src: HandleId; bytes: number }): { dst: BufferEntry; src: BufferEntry } {
    const dst = this.buffer(p.dst, 'dst');
    const src = this.buffer(p.src, 'src');
    this.checkRange(dst, 0, p.bytes, 'bytes');
    this.checkRange(src, 0, p.bytes, 'bytes');
    return { dst, src };
  }

  /** Above the default limit of dynamic shared memory a function must opt in first (the client has already checked
   * the device's maximum). */
  private allowDynamicShared(id: HandleId, k: KernelEntry, bytes: number): void {
    if (bytes <= k.dynamicSharedLimit) return;
    this.context().functionSetMaxDynamicShared(k.fn, bytes);
    k.dynamicSharedLimit = bytes;
    log('debug', `raised the dynamic shared memory limit of kernel ${id} to ${bytes} bytes`);
  }

  private nativeLaunch(p: WireLaunch): NativeLaunch {
    const k = this.kernel(p.kernel);
    this.allowDynamicShared(p.kernel, k, p.sharedMemBytes);
    const args = p.args.map((a, i): NativeArg => {
      if (a.kind === 'buffer') return { kind: 'buffer', ptr: this.buffer(a.buffer, `args[${i}]`).ptr };
      return { kind: 'scalar', dtype: a.dtype, value: a.value };
    });
    return { fn: k.fn, grid: p.grid, block: p.block, sharedMemBytes: p.sharedMemBytes, args };
  }

  readonly handlers: { [M in MethodName]: (p: ParamsOf<M>) => ResultOf<M> | Promise<ResultOf<M>> } = {
    runtime: () => ({
      driverVersion: this.addon.driverVersion(),
      nvrtcVersion: this.addon.status().nvrtc.loaded ? this.addon.nvrtcVersion() : null,
      device: this.deviceInfo(),
    }),
    devices: () => Array.from({ length: this.addon.deviceCount() }, (_, i) => this.addon.deviceInfo(i)),
    deviceInfo: (p) => {
      const count = this.addon.deviceCount();
      if (p.ordinal >= count)
        throw new CudaUnavailableError(
          count === 0
            ? 'No CUDA device was found: the NVIDIA driver is loaded but reports no GPU. Check `nvidia-smi` and CUDA_VISIBLE_DEVICES.'
            : `There is no CUDA device ${p.ordinal}: the driver reports ${count} (ordinals 0 to ${count - 1}).`,
          { code: 'CUDA_ERROR_NO_DEVICE', library: 'libcuda', call: 'deviceInfo', explanation: 'Pick an existing device, or make the GPU visible to this process.' },
        );
      return p.ordinal === this.ordinal ? this.deviceInfo() : this.addon.deviceInfo(p.ordinal);
    },
    memInfo: () => {
      const [freeBytes, totalBytes] = this.context().memInfo();
      return { freeBytes, totalBytes };
    },
    compile: async (p) => {
      const start = performance.now();
      const result = await this.addon.compile(p);
      return { ...result, durationMs: performance.now() - start };
    },
    moduleLoad: (p) => {
      const handle = this.context().moduleLoad(Buffer.from(p.cubin.buffer, p.cubin.byteOffset, p.cubin.byteLength));
      const id = this.nextId++;
      this.modules.set(id, { handle, kernels: new Set() });
      return { module: id };
    },
    moduleUnload: (p) => {
      const m = this.modules.get(p.module);
      if (!m) throw argumentError('module', 'a loaded module handle of this worker', p.module);
      this.context().moduleUnload(m.handle);
      for (const k of m.kernels) this.kernels.delete(k);
      this.modules.delete(p.module);
    },
    getKernel: (p) => {
      const m = this.modules.get(p.module);
      if (!m) throw argumentError('module', 'a loaded module handle of this worker', p.module);
      const addon = this.context();
      const fn = addon.moduleGetFunction(m.handle, p.loweredName);
      const a = addon.functionAttributes(fn);
      const attributes: KernelAttributes = {
        registers: a.numRegs,
        staticSharedBytes: a.sharedSizeBytes,
        constBytes: a.constSizeBytes,
        localBytes: a.localSizeBytes,
        maxThreadsPerBlock: a.maxThreadsPerBlock,
        maxDynamicSharedBytes: a.maxDynamicSharedSizeBytes,
        ptxVersion: a.ptxVersion,
        binaryVersion: a.binaryVersion,
      };
      const id = this.nextId++;
      this.kernels.set(id, { fn, module: p.module, attributes, dynamicSharedLimit: a.maxDynamicSharedSizeBytes });
      m.kernels.add(id);
      return { kernel: id, attributes };
    },
    memAlloc: (p) => {
      const ptr = this.context().memAlloc(p.bytes);
      const id = this.nextId++;
      this.buffers.set(id, { ptr, bytes: p.bytes });
      return { buffer: id };
    },
    memFree: (p) => {
      const b = this.buffer(p.buffer);
      this.context().memFree(b.ptr);
      this.buffers.delete(p.buffer);
    },
    memUpload: (p) => {
      const b = this.buffer(p.buffer);
      this.checkRange(b, p.byteOffset, p.data.byteLength, 'data');
      this.context().memUpload(b.ptr, p.data, p.byteOffset);
    },
    memDownload: (p) => {
      const b = this.buffer(p.buffer);
      this.checkRange(b, p.byteOffset, p.bytes, 'bytes');
      return this.context().memDownload(b.ptr, p.bytes, p.byteOffset);
    },
    memFill: (p) => {
      const b = this.buffer(p.buffer);
      this.checkRange(b, 0, p.elementBytes * p.count, 'count');
      this.context().memFill(b.ptr, p.elementBytes, p.pattern, p.count);
    },
    fillRandom: (p) => {
      const b = this.buffer(p.buffer);
      const elementBytes = dtypeBytes(p.dtype);
      this.checkRange(b, 0, elementBytes * p.count, 'count');
      const spec = checkRandomSpec(p.dtype, p.spec);
      const addon = this.context();
      generateRandom(p.dtype, p.count, spec, (chunk, offset) => addon.memUpload(b.ptr, chunk, offset * elementBytes), RANDOM_CHUNK_ELEMENTS);
    },
    memCopy: (p) => {
      const { dst, src } = this.copyRanges(p);
      this.context().memCopy(dst.ptr, src.ptr, p.bytes);
    },
    copyToSymbol: (p) => {
      const m = this.modules.get(p.module);
      if (!m) throw argumentError('module', 'a loaded module handle of this worker', p.module);
      const src = this.buffer(p.src, 'src');
      this.checkRange(src, 0, p.bytes, 'bytes');
      return { symbolBytes: this.context().moduleCopyToGlobal(m.handle, p.symbol, src.ptr, p.bytes) };
    },
    memCopyBenchmark: (p) => {
      const { dst, src } = this.copyRanges(p);
      return { samplesMs: this.context().memCopyBenchmark(dst.ptr, src.ptr, p.bytes, { warmup: p.warmup, iterations: p.iterations }) };
    },
    launch: (p) => {
      const launch = this.nativeLaunch(p);
      this.addon.launch(launch);
    },
    checks: (p) => ({ results: this.runChecks(p.checks) }),
    benchmark: (p) => {
      const launch = this.nativeLaunch(p);
      let flushPtr = 0n;
      let flushBytes = 0;
      if (p.flushL2) {
        if (!this.flush) {
          const bytes = Math.max(2 * this.deviceInfo().l2CacheBytes, 1 << 20);
          this.flush = { ptr: this.addon.memAlloc(bytes), bytes };
        }
        flushPtr = this.flush.ptr;
        flushBytes = this.flush.bytes;
      }
      const resets = (p.resets ?? []).map((r, i): NativeReset => {
        if (r.kind === 'copy') {
          const { dst, src } = this.copyRanges(r);
          return { kind: 'copy', dst: dst.ptr, src: src.ptr, bytes: r.bytes };
        }
        const b = this.buffer(r.buffer, `resets[${i}].buffer`);
        this.checkRange(b, 0, r.elementBytes * r.count, `resets[${i}].count`);
        return { kind: 'fill', ptr: b.ptr, elementBytes: r.elementBytes, pattern: r.pattern, count: r.count };
      });
      const samplesMs = this.addon.benchmark(launch, { warmup: p.warmup, iterations: p.iterations, flushPtr, flushBytes, resets, ...(p.idleBeforeEach && { idleBeforeEach: true }) });
      const energy = p.energy && this.measureEnergy(launch, median(samplesMs), p.energy.windowMs);
      return { samplesMs, ...(energy && { energy }), ...(p.checks && { checks: this.runChecks(p.checks) }) };
    },
    occupancy: (p) => {
      const k = this.kernel(p.kernel);
      this.allowDynamicShared(p.kernel, k, p.dynamicSharedBytes);
      const blocks = this.context().functionOccupancy(k.fn, p.threadsPerBlock, p.dynamicSharedBytes);
      const device = this.deviceInfo();
      const driver = occupancyOf(device, p.threadsPerBlock, blocks, 'driver');
      // The calculator names the limits reached; where it agrees with the driver, so does its explanation.
      const calculated = theoreticalOccupancy(
        device,
        { registers: k.attributes.registers, staticSharedBytes: k.attributes.staticSharedBytes },
        { threadsPerBlock: p.threadsPerBlock, dynamicSharedBytes: p.dynamicSharedBytes },
      );
      return calculated.activeBlocksPerMultiprocessor === blocks ? { ...driver, limitedBy: calculated.limitedBy! } : driver;
    },
    nvml: () => this.nvmlReadings(),
  };

  /** Each check's result buffer set to its initial words, its launch waited for, the buffer read back: one request for all. */
  private runChecks(checks: readonly WireCheck[]): bigint[][] {
    const addon = this.context();
    return checks.map((c, i) => {
      const result = this.buffer(c.result, `checks[${i}].result`);
      const bytes = 8 * c.init.length;
      this.checkRange(result, 0, bytes, `checks[${i}].init`);
      addon.memUpload(result.ptr, BigUint64Array.from(c.init), 0);
      addon.launch(this.nativeLaunch(c.launch));
      const read = addon.memDownload(result.ptr, bytes, 0);
      // A copy: the download may sit at an offset of a pooled buffer that is no multiple of 8.
      return [...new BigUint64Array(Uint8Array.from(read).buffer)];
    });
  }

  private nvmlReadings(): NvmlReadings {
    const status = this.addon.status().nvml;
    if (!status.loaded)
      throw new CudaUnavailableError(`NVML (libnvidia-ml.so.1) is not available: ${status.error ?? 'not loaded'}`, {
        code: 'LIBRARY_NOT_FOUND',
        library: 'libnvidia-ml',
        call: 'nvml',
        explanation: 'NVML comes with the NVIDIA driver; without it energy, power, clocks and temperature are not measured.',
      });
    const s = this.addon.nvmlSnapshot(this.deviceInfo().pciBusId);
    const out: NvmlReadings = { unsupported: s.unsupported };
    if (s.name !== undefined) out.name = s.name;
    if (s.energyMj !== undefined) out.energyJ = s.energyMj / 1000;
    if (s.powerMw !== undefined) out.powerW = s.powerMw / 1000;
    if (s.powerLimitMw !== undefined) out.powerLimitW = s.powerLimitMw / 1000;
    if (s.smClockMhz !== undefined) out.smClockMhz = s.smClockMhz;
    if (s.memClockMhz !== undefined) out.memClockMhz = s.memClockMhz;
    if (s.temperatureC !== undefined) out.temperatureC = s.temperatureC;
    return out;
  }

  /** The kernel back to back for `windowMs` while NVML is read; NVML's absence or refusal is a reason, not an error. */
  private measureEnergy(launch: NativeLaunch, timeMs: number, windowMs: number): EnergyResult {
    const status = this.addon.status().nvml;
    if (!status.loaded) return { available: false, reason: `NVML (libnvidia-ml.so.1) is not available: ${status.error ?? 'not loaded'}` };
    try {
      this.powerLimitW ??= this.nvmlReadings().powerLimitW ?? null;
      const run = this.addon.energyBenchmark(launch, {
        ...energyRunOptions(timeMs, windowMs),
        pciBusId: this.deviceInfo().pciBusId,
        pollMs: ENERGY_POLL_MS,
        sampleEvery: SAMPLE_EVERY_POLLS,
      });
      return summarizeEnergyRun(run, timeMs, this.powerLimitW ?? undefined);
    } catch (e) {
      if ((e as { library?: unknown }).library !== 'libnvidia-ml') throw e;
      return { available: false, reason: fromNativeError(e).message };
    }
  }

  status(): NativeStatus {
    const status = this.addon.status();
    const file = status.nvrtc.loaded ? mappedLibrary('libnvrtc.so') : undefined;
    return file ? { ...status, nvrtc: { ...status.nvrtc, file } } : status;
  }

  shutdown(): void {
    if (this.contextReady && !this.poisoned) this.addon.contextDestroy();
  }
}

/** The absolute path of a shared library loaded into this process (Linux: /proc/self/maps), or undefined. */
function mappedLibrary(name: string): string | undefined {
  try {
    const maps = readFileSync('/proc/self/maps', 'utf8');
    return maps.split('\n').map((l) => l.slice(l.indexOf('/'))).find((p) => p.startsWith('/') && p.slice(p.lastIndexOf('/') + 1).startsWith(name));
  } catch {
    return undefined;
  }
}

function parseDevice(argv: readonly string[]): number {
  const arg = argv.find((a) => a.startsWith('--device='));
  const n = arg ? Number(arg.slice('--device='.length)) : 0;
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

function main(): void {
  const profile = process.argv.find((a) => a.startsWith(PROFILE_FLAG));
  if (profile) {
    const loaded = loadAddon();
    runLaunchOnceRequest('addon' in loaded ? loaded.addon : loaded.error, profile.slice(PROFILE_FLAG.length));
  }
  if (!process.send) {
    console.error('gpu-worker: must be started by the GPU client (child_process.fork with an IPC channel)');
    process.exit(2);
  }
  const loaded = loadAddon();
  const state = 'addon' in loaded ? new WorkerState(loaded.addon, parseDevice(process.argv)) : null;
  const addonError = 'error' in loaded ? loaded.error : null;
  const compileOnly = process.argv.includes(COMPILE_ONLY_FLAG);

  const handle = async (msg: RequestMessage): Promise<void> => {
    try {
      if (!state) throw addonError;
      // A compile process must never create a CUDA context: dozens of them run beside the GPU workers.
      if (compileOnly && msg.method !== 'compile') throw argumentError('method', `compile (this is a compile process, started with ${COMPILE_ONLY_FLAG})`, msg.method);
      const handler = state.handlers[msg.method] as (p: unknown) => unknown;
      const result = await handler(msg.params);
      send({ type: 'response', id: msg.id, ok: true, result });
    } catch (e) {
      const error = fromNativeError(e);
      state?.notePossibleFault(error);
      send({ type: 'response', id: msg.id, ok: false, error: serializeError(error) });
    }
  };

  process.on('message', (raw: unknown) => {
    if (!isParentMessage(raw)) {
      log('warn', 'gpu-worker: ignored a message that is not part of the protocol');
      return;
    }
    if (raw.type === 'shutdown') {
      try {
        state?.shutdown();
      } finally {
        process.exit(0);
      }
    }
    void handle(raw);
  });
  // The parent closed the channel or died: nobody can use this context any more.
  process.on('disconnect', () => process.exit(0));

  const unloaded = { loaded: false, error: addonError?.message ?? '' };
  const status: NativeStatus = state ? state.status() : { cuda: unloaded, nvrtc: unloaded, nvml: unloaded };
  const ready: ReadyMessage = { type: 'ready', pid: process.pid, status };
  if (addonError) ready.addonError = serializeError(addonError);
  send(ready);
}

main();
