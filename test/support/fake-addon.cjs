// TEST DOUBLE of the native addon (NativeAddon in src/gpu/native-types.ts), loaded by the GPU worker only when
// LKT_GPU_ADDON_MODULE points at this file. It runs no CUDA: device memory is kept in JS Maps, "kernels" are JS
// behaviours chosen by their lowered name, so the worker protocol can be tested with real child processes in CI.
//
// Scripted kernels (launch):
//   vector_add(a, b, c, n)  c[i] = a[i] + b[i] (float32) for every i < n covered by grid.x * block.x
//   spin_forever            busy-loops forever (the watchdog must kill the worker)
//   fault                   throws CUDA_ERROR_ILLEGAL_ADDRESS and poisons the fake context: every later call throws it
//   exit                    process.exit(3) (a worker that dies mid-request)
//   sleep(ms)               blocks the worker's thread for ms milliseconds, then returns
//   read_constant(out)      copies the bytes of its module's first __constant__ symbol into out
//   anything else           does nothing, unless its program was compiled with -Dfake_behaviour=N: 1 faults and 2
//                           hangs as the kernels above, 3 sleeps 3 s per launch, 0 does nothing (a tunable parameter
//                           named fake_behaviour scripts what each configuration does)
// benchmark applies its resets (fills and copies) before every timed launch, as the addon does; its timed launches
// take 1, 1.01, 1.02, 1.03 ms in turn, and FAKE_IDLE_LAUNCH_MS more each with idleBeforeEach (the launch's way from the
// host, which a start event recorded on an idle GPU times too).
// __constant__ symbols: a module has the `__constant__ T name[N]` of its source: N elements of T (1 to 8 bytes) where N
// is a product of integers, else as many as are copied into it. Stricter than CUDA, so that tests see every run get its
// copy: a launch or benchmark of a kernel whose module has such symbols fails with FAKE_CONSTANT_NOT_COPIED unless each
// was written (moduleCopyToGlobal) since that module's previous launch or benchmark.
// Compile: "// fake-delay-ms: N" in the source delays the answer by N ms; a line containing "#error" fails with an
// NVRTC-style log pointing at that line; "// fake-crash" in the source exits the process with code 4. The fake cubin
// (JSON) names the process that compiled it (pid) and how many other compiles that process was running (alongside).
// Occupancy: every fake kernel uses 32 registers and no static shared memory, so the fake driver's answer is the CUDA
// occupancy calculator's for an H100 (the warp and shared memory limits), unless LKT_FAKE_OCCUPANCY_BLOCKS=N scripts N.
// NVML (read only, scripted): the fake GPU draws FAKE_POWER_W while kernels run, its energy counter moves every
// FAKE_COUNTER_PERIOD_MS (LKT_FAKE_COUNTER_PERIOD_MS=N: every N ms), and each fake launch takes 1 ms of the energy
// window, which runs in whole batches as the addon's does.
// Env: LKT_FAKE_NO_NVRTC=1 reports NVRTC as not loaded; LKT_FAKE_DEVICE_COUNT=N sets the device count (default 1);
// LKT_FAKE_DEVICE_NAMES="A,A,B" names the devices by ordinal (default every device is a "Fake H100 (test double)");
// LKT_FAKE_NO_NVML=1 reports NVML as not loaded; LKT_FAKE_NO_ENERGY_COUNTER=1 makes the device lack the energy counter
// (power readings only).
'use strict';

const TOTAL_MEMORY = 80 * 2 ** 30;
const DEFAULT_DYNAMIC_SHARED = 48 * 1024;
const FAKE_POWER_W = 200;
const FAKE_POWER_LIMIT_W = 700;
const FAKE_COUNTER_PERIOD_MS = 20;
const FAKE_IDLE_LAUNCH_MS = 0.005;
let energyCounterMj = 5e6; // the fake driver's energy counter, mJ since it "loaded"

function nativeError(code, call, explanation, extra) {
  const e = new Error(`${call} failed: ${code} (${explanation})`);
  return Object.assign(e, { code, call, explanation }, extra);
}

let sticky = null; // the fault that poisoned the fake context
let compilesInFlight = 0; // in this process
let contextCreated = false;
let nextHandle = 1n;
const memory = new Map(); // ptr → Uint8Array
const modules = new Map(); // module → { kernels: string[], behaviour, symbols: Map<name, { data: Uint8Array, written }> }
const functions = new Map(); // fn → { name, module, dynamicSharedLimit }
const ELEMENT_BYTES = { char: 1, short: 2, half: 2, __half: 2, int: 4, unsigned: 4, float: 4, long: 8, double: 8 };

/** The __constant__ arrays of a source: name → bytes. */
function constantSymbols(source) {
  const symbols = new Map();
  for (const m of source.matchAll(/__constant__\s+(?:const\s+)?(\w+)\s+(\w+)\s*\[([^\]]+)\]/g)) {
    const count = /^[\d\s*]+$/.test(m[3]) ? m[3].split('*').reduce((n, f) => n * Number(f.trim()), 1) : undefined;
    symbols.set(m[2], { data: new Uint8Array(count === undefined ? 0 : count * (ELEMENT_BYTES[m[1]] ?? 4)), sized: count !== undefined, written: false });
  }
  return symbols;
}

/** The strict rule above: every symbol of the kernel's module written since its last launch; then they count as read. */
function consumeConstants(fn) {
  const symbols = modules.get(functions.get(fn)?.module)?.symbols ?? new Map();
  const missing = [...symbols].filter(([, s]) => !s.written).map(([name]) => name);
  if (missing.length > 0) throw nativeError('FAKE_CONSTANT_NOT_COPIED', 'cuLaunchKernel', `__constant__ ${missing.join(', ')} not copied before this launch`);
  for (const s of symbols.values()) s.written = false;
}

function live(call) {
  if (sticky) throw nativeError(sticky, call, 'an illegal memory access was encountered');
}
function needContext(call) {
  live(call);
  if (!contextCreated) throw nativeError('CUDA_ERROR_INVALID_CONTEXT', call, 'no context is current');
}
function mem(ptr, call) {
  const m = memory.get(ptr);
  if (!m) throw nativeError('INVALID_ARGUMENT', call, `${ptr} is not a live allocation`);
  return m;
}
function fill(ptr, elementBytes, pattern, count) {
  const m = mem(ptr, 'cuMemsetD32');
  const view = new DataView(m.buffer, m.byteOffset, m.byteLength);
  for (let i = 0; i < count; i++) {
    const at = i * elementBytes;
    if (elementBytes === 1) view.setUint8(at, Number(pattern));
    else if (elementBytes === 2) view.setUint16(at, Number(pattern), true);
    else if (elementBytes === 4) view.setUint32(at, Number(pattern), true);
    else view.setBigUint64(at, pattern, true);
  }
}
function copy(dst, src, bytes) {
  mem(dst, 'cuMemcpyDtoD').set(mem(src, 'cuMemcpyDtoD').subarray(0, bytes));
}
function deviceCount() {
  return Number(process.env.LKT_FAKE_DEVICE_COUNT ?? 1);
}

function deviceName(ordinal) {
  const names = (process.env.LKT_FAKE_DEVICE_NAMES ?? '').split(',').filter(Boolean);
  return names[ordinal] ?? 'Fake H100 (test double)';
}

const deviceInfo = (ordinal) => {
  if (ordinal >= deviceCount()) throw nativeError('CUDA_ERROR_INVALID_DEVICE', 'cuDeviceGet', 'invalid device ordinal');
  return {
    ordinal,
    name: deviceName(ordinal),
    computeCapability: [9, 0],
    multiprocessors: 132,
    globalMemoryBytes: TOTAL_MEMORY,
    l2CacheBytes: 50 * 2 ** 20,
    maxThreadsPerBlock: 1024,
    maxBlockDim: [1024, 1024, 64],
    maxGridDim: [2147483647, 65535, 65535],
    maxSharedMemoryPerBlock: DEFAULT_DYNAMIC_SHARED,
    maxSharedMemoryPerBlockOptin: 227 * 1024,
    maxRegistersPerBlock: 65536,
    maxThreadsPerMultiprocessor: 2048,
    maxBlocksPerMultiprocessor: 32,
    maxRegistersPerMultiprocessor: 65536,
    maxSharedMemoryPerMultiprocessor: 228 * 1024,
    reservedSharedMemoryPerBlock: 1024,
    warpSize: 32,
    clockRateKHz: 1980000,
    memoryClockRateKHz: 2619000,
    memoryBusWidthBits: 5120,
    pciBusId: `0000:${(0x10 + ordinal).toString(16)}:00.0`,
  };
};

const SCRIPTED_BEHAVIOUR = { 1: 'fault', 2: 'spin_forever', 3: 'slow' };

function sleepFor(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function runKernel(launch) {
  const f = functions.get(launch.fn);
  if (!f) throw nativeError('INVALID_ARGUMENT', 'cuLaunchKernel', 'unknown function');
  const threads = launch.block[0] * launch.block[1] * launch.block[2];
  if (threads > 1024 || launch.sharedMemBytes > f.dynamicSharedLimit)
    throw nativeError('CUDA_ERROR_INVALID_VALUE', 'cuLaunchKernel', 'invalid argument');
  switch (SCRIPTED_BEHAVIOUR[f.behaviour] ?? f.name) {
    case 'spin_forever':
      for (;;);
    case 'fault':
      sticky = 'CUDA_ERROR_ILLEGAL_ADDRESS';
      throw nativeError(sticky, 'cuStreamSynchronize', 'an illegal memory access was encountered');
    case 'exit':
      process.exit(3);
    case 'sleep':
      sleepFor(Number(launch.args[0].value));
      return;
    case 'slow':
      sleepFor(3000);
      return;
    case 'read_constant': {
      const first = [...(modules.get(f.module)?.symbols.values() ?? [])][0];
      if (first) mem(launch.args[0].ptr, 'cuLaunchKernel').set(first.data.subarray(0, mem(launch.args[0].ptr, 'cuLaunchKernel').byteLength));
      return;
    }
    case 'vector_add': {
      const [a, b, c] = launch.args.slice(0, 3).map((arg) => {
        const m = mem(arg.ptr, 'cuLaunchKernel');
        return new Float32Array(m.buffer, m.byteOffset, m.byteLength / 4);
      });
      const n = Math.min(Number(launch.args[3].value), launch.grid[0] * launch.block[0]);
      for (let i = 0; i < n; i++) c[i] = a[i] + b[i];
      return;
    }
    default:
      return;
  }
}

/** @type {import('../../src/gpu/native-types').NativeAddon} */
module.exports = {
  status: () => ({
    cuda: { loaded: true, path: 'fake-libcuda.so.1' },
    nvrtc: process.env.LKT_FAKE_NO_NVRTC ? { loaded: false, error: 'fake: no libnvrtc' } : { loaded: true, path: 'fake-libnvrtc.so.13' },
    nvml: process.env.LKT_FAKE_NO_NVML
      ? { loaded: false, error: 'libnvidia-ml.so.1: cannot open shared object file (fake)' }
      : { loaded: true, path: 'fake-libnvidia-ml.so.1' },
  }),
  driverVersion: () => 13000,
  nvrtcVersion: () => [13, 0],
  deviceCount,
  deviceInfo,

  compile: (request) =>
    new Promise((resolve, reject) => {
      if (request.source.includes('// fake-crash')) process.exit(4);
      const delay = Number(/\/\/ fake-delay-ms: (\d+)/.exec(request.source)?.[1] ?? 0);
      const alongside = compilesInFlight++;
      setTimeout(() => {
        compilesInFlight--;
        const lines = request.source.split('\n');
        const bad = lines.findIndex((l) => l.includes('#error'));
        if (bad >= 0) {
          const log = `${request.fileName}(${bad + 1}): error: #error directive: ${lines[bad].replace(/.*#error\s*/, '')}\n\n1 error detected in the compilation of "${request.fileName}".\n`;
          reject(nativeError('NVRTC_ERROR_COMPILATION', 'nvrtcCompileProgram', 'the program did not compile', { log }));
          return;
        }
        const loweredNames = Object.fromEntries(request.nameExpressions.map((e) => [e, e]));
        const behaviour = request.options.map((o) => /^-Dfake_behaviour=(\d+)$/.exec(o)?.[1]).find(Boolean);
        const cubin = Buffer.from(JSON.stringify({ kernels: request.nameExpressions, options: request.options, source: request.source, behaviour, pid: process.pid, alongside }));
        resolve({ cubin, log: '', loweredNames, ...(request.wantPtx ? { ptx: '// fake ptx' } : {}) });
      }, delay);
    }),

  contextCreate: () => {
    live('cuCtxCreate');
    contextCreated = true;
  },
  contextDestroy: () => {
    contextCreated = false;
    memory.clear();
    modules.clear();
    functions.clear();
  },
  synchronize: () => needContext('cuCtxSynchronize'),
  memInfo: () => {
    needContext('cuMemGetInfo');
    let used = 0;
    for (const m of memory.values()) used += m.byteLength;
    return [TOTAL_MEMORY - used, TOTAL_MEMORY];
  },

  moduleLoad: (cubin) => {
    needContext('cuModuleLoadData');
    const { kernels, behaviour, source } = JSON.parse(Buffer.from(cubin).toString('utf8'));
    const handle = nextHandle++;
    modules.set(handle, { kernels, behaviour, symbols: constantSymbols(source ?? "") });
    return handle;
  },
  moduleUnload: (module) => {
    needContext('cuModuleUnload');
    if (!modules.delete(module)) throw nativeError('INVALID_ARGUMENT', 'cuModuleUnload', 'unknown module');
  },
  moduleGetFunction: (module, name) => {
    needContext('cuModuleGetFunction');
    const m = modules.get(module);
    if (!m || !m.kernels.includes(name)) throw nativeError('CUDA_ERROR_NOT_FOUND', 'cuModuleGetFunction', 'named symbol not found');
    const fn = nextHandle++;
    functions.set(fn, { name, module, behaviour: m.behaviour, dynamicSharedLimit: DEFAULT_DYNAMIC_SHARED });
    return fn;
  },
  functionAttributes: (fn) => {
    needContext('cuFuncGetAttribute');
    const f = functions.get(fn);
    return {
      numRegs: 32,
      sharedSizeBytes: 0,
      constSizeBytes: 0,
      localSizeBytes: 0,
      maxThreadsPerBlock: 1024,
      maxDynamicSharedSizeBytes: f.dynamicSharedLimit,
      ptxVersion: 90,
      binaryVersion: 90,
    };
  },
  functionOccupancy: (fn, blockSize, dynamicSharedBytes) => {
    needContext('cuOccupancyMaxActiveBlocksPerMultiprocessor');
    if (!functions.has(fn)) throw nativeError('INVALID_ARGUMENT', 'cuOccupancyMaxActiveBlocksPerMultiprocessor', 'unknown function');
    if (process.env.LKT_FAKE_OCCUPANCY_BLOCKS) return Number(process.env.LKT_FAKE_OCCUPANCY_BLOCKS);
    const warps = Math.ceil(blockSize / 32);
    const sharedPerBlock = Math.ceil((dynamicSharedBytes + 1024) / 128) * 128;
    return blockSize > 1024 ? 0 : Math.min(32, Math.floor(64 / warps), Math.floor((228 * 1024) / sharedPerBlock));
  },
  functionSetMaxDynamicShared: (fn, bytes) => {
    needContext('cuFuncSetAttribute');
    if (bytes > 227 * 1024) throw nativeError('CUDA_ERROR_INVALID_VALUE', 'cuFuncSetAttribute', 'invalid argument');
    functions.get(fn).dynamicSharedLimit = bytes;
  },

  memAlloc: (bytes) => {
    needContext('cuMemAlloc');
    const ptr = nextHandle++ << 20n;
    memory.set(ptr, new Uint8Array(bytes));
    return ptr;
  },
  memFree: (ptr) => {
    needContext('cuMemFree');
    mem(ptr, 'cuMemFree');
    memory.delete(ptr);
  },
  memUpload: (ptr, data, byteOffset) => {
    needContext('cuMemcpyHtoD');
    mem(ptr, 'cuMemcpyHtoD').set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), byteOffset);
  },
  memDownload: (ptr, bytes, byteOffset) => {
    needContext('cuMemcpyDtoH');
    return Buffer.from(mem(ptr, 'cuMemcpyDtoH').subarray(byteOffset, byteOffset + bytes));
  },
  memFill: (ptr, elementBytes, pattern, count) => {
    needContext('cuMemsetD32');
    fill(ptr, elementBytes, pattern, count);
  },
  memCopy: (dst, src, bytes) => {
    needContext('cuMemcpyDtoD');
    copy(dst, src, bytes);
  },

  moduleCopyToGlobal: (module, name, src, bytes) => {
    needContext('cuModuleGetGlobal');
    const m = modules.get(module);
    if (!m) throw nativeError('INVALID_ARGUMENT', 'moduleCopyToGlobal', 'unknown module');
    const symbol = m.symbols.get(name);
    if (!symbol) throw nativeError('CUDA_ERROR_NOT_FOUND', 'cuModuleGetGlobal', 'named symbol not found');
    if (!symbol.sized && bytes > symbol.data.byteLength) symbol.data = new Uint8Array(bytes);
    if (bytes > symbol.data.byteLength) throw nativeError('INVALID_ARGUMENT', 'moduleCopyToGlobal', `${bytes} bytes do not fit the symbol ${name} of ${symbol.data.byteLength} bytes`);
    symbol.data.set(mem(src, 'cuMemcpyDtoD').subarray(0, bytes));
    symbol.written = true;
    return symbol.data.byteLength;
  },

  memCopyBenchmark: (dst, src, bytes, options) => {
    needContext('cuMemcpyDtoD');
    for (let i = 0; i < options.warmup + options.iterations; i++) mem(dst, 'cuMemcpyDtoD').set(mem(src, 'cuMemcpyDtoD').subarray(0, bytes));
    return Array.from({ length: options.iterations }, () => 1);
  },

  launch: (launch) => {
    needContext('cuLaunchKernel');
    consumeConstants(launch.fn);
    runKernel(launch);
  },
  energyBenchmark: (launch, options) => {
    needContext('cuLaunchKernel');
    if (process.env.LKT_FAKE_NO_NVML) throw nativeError('LIBRARY_NOT_FOUND', 'nvmlInit_v2', 'no NVML (fake)', { library: 'libnvidia-ml' });
    runKernel(launch);
    const period = Number(process.env.LKT_FAKE_COUNTER_PERIOD_MS ?? FAKE_COUNTER_PERIOD_MS);
    const counter = !process.env.LKT_FAKE_NO_ENERGY_COUNTER;
    let launches = 0;
    for (;;) {
      launches += options.batch; // 1 ms per fake launch
      const counted = !counter || Math.floor(launches / period) >= options.minUpdates;
      if (launches >= options.maxWindowMs || (launches >= options.windowMs && counted)) break;
    }
    const elapsedMs = launches;
    const samples = [];
    for (let t = 0; t <= elapsedMs; t += options.pollMs * options.sampleEvery)
      samples.push({ tMs: t, powerMw: FAKE_POWER_W * 1000, smClockMhz: 1980, memClockMhz: 2619, temperatureC: 41 });
    if (!counter) return { launches, elapsedMs, energyError: 'nvmlDeviceGetTotalEnergyConsumption failed: NVML_ERROR_NOT_SUPPORTED (fake)', updates: [], samples };
    const start = energyCounterMj;
    const updates = [];
    for (let t = period; t <= elapsedMs; t += period) updates.push({ tMs: t + 0.5, energyMj: start + FAKE_POWER_W * t });
    energyCounterMj = start + FAKE_POWER_W * elapsedMs;
    return { launches, elapsedMs, updates, samples };
  },
  nvmlSnapshot: () => {
    if (process.env.LKT_FAKE_NO_NVML) throw nativeError('LIBRARY_NOT_FOUND', 'nvmlInit_v2', 'no NVML (fake)', { library: 'libnvidia-ml' });
    return {
      name: deviceName(0),
      energyMj: energyCounterMj,
      powerMw: 65000,
      powerLimitMw: FAKE_POWER_LIMIT_W * 1000,
      smClockMhz: 1980,
      memClockMhz: 2619,
      temperatureC: 38,
      unsupported: {},
    };
  },
  benchmark: (launch, options) => {
    if (options.idleBeforeEach !== undefined && typeof options.idleBeforeEach !== 'boolean')
      throw nativeError('INVALID_ARGUMENT', 'benchmark', `expected options.idleBeforeEach to be a boolean, received ${typeof options.idleBeforeEach}`);
    needContext('cuLaunchKernel');
    consumeConstants(launch.fn);
    if (options.flushBytes > 0) mem(options.flushPtr, 'cuMemsetD8Async');
    for (let i = 0; i < options.warmup; i++) runKernel(launch);
    return Array.from({ length: options.iterations }, (_, i) => {
      for (const r of options.resets ?? []) {
        if (r.kind === 'fill') fill(r.ptr, r.elementBytes, r.pattern, r.count);
        else copy(r.dst, r.src, r.bytes);
      }
      runKernel(launch);
      return 1 + (i % 4) * 0.01 + (options.idleBeforeEach ? FAKE_IDLE_LAUNCH_MS : 0);
    });
  },
};
