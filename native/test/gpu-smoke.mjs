#!/usr/bin/env node
// Exercises every entry point of the addon on a real GPU, with no dependency but Node itself (the GPU machines have
// no node_modules). Run from the project root after `npm run build:native`:
//   node native/test/gpu-smoke.mjs            (on the GPU machine: source .gpu/env.sh first)
// Prints one line per check and exits non-zero if any failed. Without a driver it says so and exits 2.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const mod = { exports: {} };
process.dlopen(mod, process.env.LKT_NATIVE_ADDON || join(root, 'dist', 'native', 'kernel_tuner_native.node'));
const a = mod.exports;

let failed = 0;
let passed = 0;
const ok = (name, detail = '') => {
  passed++;
  console.log(`ok   ${name}${detail ? `: ${detail}` : ''}`);
};
const bad = (name, why) => {
  failed++;
  console.log(`FAIL ${name}: ${why}`);
};
async function check(name, fn) {
  try {
    const detail = await fn();
    ok(name, detail ?? '');
  } catch (e) {
    bad(name, e && e.stack ? `${e.stack}\n  fields: ${JSON.stringify({ ...e })}` : String(e));
  }
}
function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}
/** Runs fn and returns the error it throws or rejects with; fails when it succeeds. */
async function error(fn) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, got success');
}

const status = a.status();
console.log(JSON.stringify(status));
if (!status.cuda.loaded || !status.nvrtc.loaded) {
  console.log('no libcuda or NVRTC here: nothing to test on a GPU');
  process.exit(2);
}

let dev;
let arch;
await check('versions and inventory', () => {
  const drv = a.driverVersion();
  const [maj, min] = a.nvrtcVersion();
  const n = a.deviceCount();
  assert(n >= 1, 'deviceCount >= 1');
  dev = a.deviceInfo(0);
  arch = `sm_${dev.computeCapability[0]}${dev.computeCapability[1]}`;
  for (const [k, v] of Object.entries(dev)) {
    if (typeof v === 'number') assert(Number.isFinite(v) && v >= 0, `${k} is a non-negative number`);
  }
  assert(dev.multiprocessors > 0 && dev.l2CacheBytes > 0 && dev.globalMemoryBytes > 2 ** 30, 'plausible device');
  assert(dev.maxSharedMemoryPerBlockOptin > dev.maxSharedMemoryPerBlock, 'opt-in shared memory above default');
  assert(/^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9]$/.test(dev.pciBusId), 'pci bus id format');
  return `driver ${drv}, NVRTC ${maj}.${min}, ${n} device(s), ${JSON.stringify(dev)}`;
});
await check('deviceInfo of a missing ordinal', async () => {
  const e = await error(() => a.deviceInfo(999));
  assert(e.code === 'CUDA_ERROR_INVALID_DEVICE' && e.call === 'cuDeviceGet' && e.status === 101, JSON.stringify({ ...e }));
});
await check('calls before contextCreate', async () => {
  const e = await error(() => a.memAlloc(16));
  assert(e.code === 'CUDA_ERROR_INVALID_CONTEXT', e.code);
});
await check('contextCreate (twice: idempotent)', () => {
  a.contextCreate(0);
  a.contextCreate(0);
  const [free, total] = a.memInfo();
  assert(free > 0 && total >= free, 'memInfo');
  return `memInfo ${free}/${total}`;
});

const source = `
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
template <typename T, int F> __global__ void scale(T* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * F;
}
extern "C" __global__ void scalars(signed char i8, unsigned char u8, short i16, unsigned short u16, int i32,
                                   unsigned u32, long long i64, unsigned long long u64, float f32, double f64,
                                   double* out, long long* raw) {
  out[0] = i8; out[1] = u8; out[2] = i16; out[3] = u16; out[4] = i32; out[5] = u32; out[6] = (double)i64;
  out[7] = (double)u64; out[8] = f32; out[9] = f64; raw[0] = i64; raw[1] = (long long)u64;
}
extern "C" __global__ void dyn_shared(float* out) {
  extern __shared__ float s[];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void oob(float* x) { x[(size_t)1 << 40] = 1.0f; }
`;
let compiled;
await check('compile (cubin + PTX, name expressions)', async () => {
  const t0 = performance.now();
  compiled = await a.compile({
    source,
    fileName: 'smoke.cu',
    nameExpressions: ['vadd', 'scale<float, 2>', 'scalars', 'dyn_shared', 'oob'],
    options: [`--gpu-architecture=${arch}`, '-DUNUSED=1', '--std=c++17'],
    wantPtx: true,
  });
  const ms = performance.now() - t0;
  assert(Buffer.isBuffer(compiled.cubin) && compiled.cubin.length > 1000, 'cubin');
  assert(compiled.cubin.subarray(0, 4).toString('latin1') === '\x7fELF', 'cubin is ELF');
  assert(typeof compiled.ptx === 'string' && compiled.ptx.includes('.entry'), 'ptx');
  assert(compiled.loweredNames.vadd === 'vadd', 'extern C lowered name');
  assert(compiled.loweredNames['scale<float, 2>'].startsWith('_Z'), 'mangled template name');
  return `${ms.toFixed(1)} ms, cubin ${compiled.cubin.length} B, ptx ${compiled.ptx.length} chars, log ${JSON.stringify(compiled.log)}, ${JSON.stringify(compiled.loweredNames)}`;
});
await check('compile without PTX omits it', async () => {
  const r = await a.compile({ source, fileName: 'smoke.cu', nameExpressions: [], options: [`--gpu-architecture=${arch}`], wantPtx: false });
  assert(!('ptx' in r) && r.cubin.length > 0, 'no ptx key');
});
await check('compile error carries the log', async () => {
  const e = await error(() =>
    a.compile({ source: 'extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', fileName: 'bad.cu', nameExpressions: ['k'], options: [`--gpu-architecture=${arch}`], wantPtx: false }),
  );
  assert(e.code === 'NVRTC_ERROR_COMPILATION' && e.status === 6 && e.call === 'nvrtcCompileProgram', JSON.stringify({ ...e }));
  assert(e.log.includes('undefined_name') && e.message.startsWith('bad.cu(1)'), `message: ${e.message}`);
  return JSON.stringify(e.message);
});
await check('invalid option', async () => {
  const e = await error(() => a.compile({ source, fileName: 'o.cu', nameExpressions: [], options: ['--no-such-option'], wantPtx: false }));
  assert(e.code === 'NVRTC_ERROR_INVALID_OPTION', e.code);
  return JSON.stringify(e.message);
});
await check('invalid name expression', async () => {
  const e = await error(() => a.compile({ source, fileName: 'n.cu', nameExpressions: ['nope<int>'], options: [`--gpu-architecture=${arch}`], wantPtx: false }));
  return `${e.code}: ${JSON.stringify(e.message)}`;
});
await check('virtual architecture gives no cubin', async () => {
  const e = await error(() =>
    a.compile({ source, fileName: 'v.cu', nameExpressions: [], options: [`--gpu-architecture=compute_${dev.computeCapability.join('')}`], wantPtx: true }),
  );
  assert(e.call === 'nvrtcGetCUBINSize', JSON.stringify({ ...e }));
});
await check('8 concurrent compiles', async () => {
  const t0 = performance.now();
  const rs = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      a.compile({ source, fileName: `c${i}.cu`, nameExpressions: ['vadd'], options: [`--gpu-architecture=${arch}`, `-DVARIANT=${i}`], wantPtx: false }),
    ),
  );
  assert(rs.every((r) => r.cubin.length > 0), 'all cubins');
  return `${(performance.now() - t0).toFixed(1)} ms for 8`;
});

let module;
const fns = {};
await check('moduleLoad + functions + attributes', async () => {
  const t0 = performance.now();
  module = a.moduleLoad(compiled.cubin);
  const loadMs = performance.now() - t0;
  for (const [expr, lowered] of Object.entries(compiled.loweredNames)) fns[expr] = a.moduleGetFunction(module, lowered);
  const attrs = a.functionAttributes(fns.vadd);
  assert(attrs.numRegs > 0 && attrs.maxThreadsPerBlock > 0 && attrs.binaryVersion > 0, JSON.stringify(attrs));
  const e = await error(() => a.moduleGetFunction(module, 'no_such_kernel'));
  assert(e.code === 'CUDA_ERROR_NOT_FOUND', e.code);
  return `load ${loadMs.toFixed(2)} ms, vadd ${JSON.stringify(attrs)}`;
});
await check('moduleLoad of PTX text', () => {
  const m = a.moduleLoad(Buffer.from(compiled.ptx));
  a.moduleGetFunction(m, 'vadd');
  a.moduleUnload(m);
});

const N = 1 << 20;
await check('vector add: upload, launch, download, verify', async () => {
  const x = new Float32Array(N).map((_, i) => i * 0.5);
  const y = new Float32Array(N).map((_, i) => 1000 - i);
  const [px, py, pz] = [a.memAlloc(N * 4), a.memAlloc(N * 4), a.memAlloc(N * 4)];
  a.memUpload(px, x, 0);
  a.memUpload(py, Buffer.from(y.buffer), 0);
  a.memFill(pz, 4, 0x7fc00000n, N);
  a.launch({ fn: fns.vadd, grid: [N / 256, 1, 1], block: [256, 1, 1], sharedMemBytes: 0, args: [
    { kind: 'buffer', ptr: px }, { kind: 'buffer', ptr: py }, { kind: 'buffer', ptr: pz }, { kind: 'scalar', dtype: 'int32', value: N },
  ] });
  const z = new Float32Array(a.memDownload(pz, N * 4, 0).buffer.slice(0));
  for (let i = 0; i < N; i++) if (z[i] !== x[i] + y[i]) throw new Error(`z[${i}] = ${z[i]}, expected ${x[i] + y[i]}`);
  const part = a.memDownload(pz, 8, 4 * 10);
  assert(part.readFloatLE(0) === x[10] + y[10], 'download at an offset');
  a.memUpload(pz, new Float32Array([42]), 4 * 5);
  assert(a.memDownload(pz, 4, 20).readFloatLE(0) === 42, 'upload at an offset');
  // argument checks against the kernel's parameters (cuFuncGetParamInfo)
  const few = await error(() => a.launch({ fn: fns.vadd, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [{ kind: 'buffer', ptr: px }] }));
  const wide = await error(() => a.launch({ fn: fns.vadd, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [
    { kind: 'buffer', ptr: px }, { kind: 'buffer', ptr: py }, { kind: 'buffer', ptr: pz }, { kind: 'scalar', dtype: 'int64', value: N },
  ] }));
  const stray = await error(() => a.launch({ fn: fns.vadd, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [
    { kind: 'buffer', ptr: 12345n }, { kind: 'buffer', ptr: py }, { kind: 'buffer', ptr: pz }, { kind: 'scalar', dtype: 'int32', value: N },
  ] }));
  for (const p of [px, py, pz]) a.memFree(p);
  return `param checks: ${few.code} ${JSON.stringify(few.message)} | ${wide.code} ${JSON.stringify(wide.message)} | ${stray.code} ${JSON.stringify(stray.message)}`;
});
await check('templated kernel via name expression', () => {
  const p = a.memAlloc(1024 * 4);
  a.memUpload(p, new Float32Array(1024).fill(1.5), 0);
  a.launch({ fn: fns['scale<float, 2>'], grid: [4, 1, 1], block: [256, 1, 1], sharedMemBytes: 0, args: [{ kind: 'buffer', ptr: p }, { kind: 'scalar', dtype: 'int32', value: 1024 }] });
  const out = new Float32Array(a.memDownload(p, 4096, 0).buffer.slice(0));
  assert(out.every((v) => v === 3), 'scaled by 2');
  a.memFree(p);
});
await check('every scalar dtype reaches the kernel intact', () => {
  const out = a.memAlloc(10 * 8);
  const raw = a.memAlloc(2 * 8);
  a.launch({ fn: fns.scalars, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [
    { kind: 'scalar', dtype: 'int8', value: -100 },
    { kind: 'scalar', dtype: 'uint8', value: 200 },
    { kind: 'scalar', dtype: 'int16', value: -30000 },
    { kind: 'scalar', dtype: 'uint16', value: 60000 },
    { kind: 'scalar', dtype: 'int32', value: -2000000000 },
    { kind: 'scalar', dtype: 'uint32', value: 4000000000 },
    { kind: 'scalar', dtype: 'int64', value: -(2n ** 62n) },
    { kind: 'scalar', dtype: 'uint64', value: 2n ** 64n - 2n },
    { kind: 'scalar', dtype: 'float32', value: 0.25 },
    { kind: 'scalar', dtype: 'float64', value: Math.PI },
    { kind: 'buffer', ptr: out },
    { kind: 'buffer', ptr: raw },
  ] });
  const d = a.memDownload(out, 80, 0);
  const got = Array.from({ length: 10 }, (_, i) => d.readDoubleLE(i * 8));
  const want = [-100, 200, -30000, 60000, -2000000000, 4000000000, -(2 ** 62), 2 ** 64 - 2, 0.25, Math.PI];
  assert(JSON.stringify(got) === JSON.stringify(want), `got ${JSON.stringify(got)}`);
  const r = a.memDownload(raw, 16, 0);
  assert(r.readBigInt64LE(0) === -(2n ** 62n) && r.readBigUInt64LE(8) === 2n ** 64n - 2n, 'raw 64-bit');
  a.memFree(out);
  a.memFree(raw);
});
await check('memFill 1/2/4/8 bytes and memCopy', () => {
  const p = a.memAlloc(4096);
  const q = a.memAlloc(4096);
  a.memFill(p, 1, 0xabn, 4096);
  assert(a.memDownload(p, 4096, 0).every((b) => b === 0xab), 'D8');
  a.memFill(p, 2, -2n, 2048);
  assert(a.memDownload(p, 8, 0).readUInt16LE(6) === 0xfffe, 'D16');
  a.memFill(p, 4, 0x01020304n, 1024);
  assert(a.memDownload(p, 4, 4092).readUInt32LE(0) === 0x01020304, 'D32');
  a.memFill(p, 8, 0x1122334455667788n, 511); // leaves the last 8 bytes as they were
  const d = a.memDownload(p, 4096, 0);
  for (let i = 0; i < 511; i++) assert(d.readBigUInt64LE(i * 8) === 0x1122334455667788n, `D2D32 element ${i}`);
  assert(d.readUInt32LE(4088) === 0x01020304, 'the element after the fill untouched');
  a.memFill(p, 8, -1n, 1);
  assert(a.memDownload(p, 8, 0).readBigInt64LE(0) === -1n, '8-byte equal halves');
  a.memCopy(q, p, 4096);
  assert(a.memDownload(q, 4096, 0).equals(a.memDownload(p, 4096, 0)), 'memCopy');
  a.memFree(p);
  a.memFree(q);
});
await check('range checks against allocations', async () => {
  const p = a.memAlloc(100);
  const e1 = await error(() => a.memUpload(p, new Uint8Array(101), 0));
  const e2 = await error(() => a.memDownload(p, 10, 95));
  a.memFree(p);
  const e3 = await error(() => a.memFree(p));
  return [e1, e2, e3].map((e) => `${e.name} ${e.code}: ${e.message}`).join(' | ');
});
await check('launch errors: block too large, shared memory above the default limit, opt-in', async () => {
  const out = a.memAlloc(1024 * 4);
  const big = await error(() => a.launch({ fn: fns.dyn_shared, grid: [1, 1, 1], block: [2048, 1, 1], sharedMemBytes: 0, args: [{ kind: 'buffer', ptr: out }] }));
  assert(big.code === 'CUDA_ERROR_INVALID_VALUE' && big.call === 'cuLaunchKernel', JSON.stringify({ ...big }));
  const shared = 100 * 1024;
  const smem = await error(() => a.launch({ fn: fns.dyn_shared, grid: [1, 1, 1], block: [1024, 1, 1], sharedMemBytes: shared, args: [{ kind: 'buffer', ptr: out }] }));
  a.functionSetMaxDynamicShared(fns.dyn_shared, shared);
  assert(a.functionAttributes(fns.dyn_shared).maxDynamicSharedSizeBytes === shared, 'attribute raised');
  a.launch({ fn: fns.dyn_shared, grid: [1, 1, 1], block: [1024, 1, 1], sharedMemBytes: shared, args: [{ kind: 'buffer', ptr: out }] });
  const v = new Float32Array(a.memDownload(out, 4096, 0).buffer.slice(0));
  assert(v[0] === 1023 && v[1023] === 0, 'reversed');
  const over = await error(() => a.functionSetMaxDynamicShared(fns.dyn_shared, dev.maxSharedMemoryPerBlockOptin + 1024));
  a.memFree(out);
  return `${big.message} | ${smem.code}: ${smem.message} | ${over.code}: ${over.message}`;
});
await check('benchmark: samples, L2 flush, more than one chunk', () => {
  const n = 1 << 24;
  const [px, py, pz] = [a.memAlloc(n * 4), a.memAlloc(n * 4), a.memAlloc(n * 4)];
  const flushBytes = dev.l2CacheBytes * 2;
  const flush = a.memAlloc(flushBytes);
  const launch = { fn: fns.vadd, grid: [n / 256, 1, 1], block: [256, 1, 1], sharedMemBytes: 0, args: [
    { kind: 'buffer', ptr: px }, { kind: 'buffer', ptr: py }, { kind: 'buffer', ptr: pz }, { kind: 'scalar', dtype: 'int32', value: n },
  ] };
  const stats = (s) => {
    const sorted = [...s].sort((x, y) => x - y);
    return { n: s.length, min: sorted[0], median: sorted[sorted.length >> 1], max: sorted[sorted.length - 1] };
  };
  const t0 = performance.now();
  const warm = a.benchmark(launch, { warmup: 3, iterations: 32, flushPtr: 0n, flushBytes: 0 });
  const t1 = performance.now();
  const cold = a.benchmark(launch, { warmup: 3, iterations: 32, flushPtr: flush, flushBytes });
  const many = a.benchmark(launch, { warmup: 0, iterations: 1100, flushPtr: 0n, flushBytes: 0 });
  assert(warm.length === 32 && cold.length === 32 && many.length === 1100, 'sample counts');
  assert([...warm, ...cold, ...many].every((x) => x > 0 && x < 1000), 'sane samples');
  const sw = stats(warm);
  const gbps = (3 * n * 4) / (sw.median * 1e-3) / 1e9;
  for (const p of [px, py, pz, flush]) a.memFree(p);
  return `warm ${JSON.stringify(sw)} (${gbps.toFixed(0)} GB/s, call ${(t1 - t0).toFixed(1)} ms) cold ${JSON.stringify(stats(cold))} many ${JSON.stringify(stats(many))}`;
});
await check('no leak over 300 load/alloc/launch/free cycles', () => {
  a.synchronize();
  const before = a.memInfo()[0];
  for (let i = 0; i < 300; i++) {
    const m = a.moduleLoad(compiled.cubin);
    const f = a.moduleGetFunction(m, 'vadd');
    const p = a.memAlloc(1 << 20);
    a.launch({ fn: f, grid: [1024, 1, 1], block: [256, 1, 1], sharedMemBytes: 0, args: [
      { kind: 'buffer', ptr: p }, { kind: 'buffer', ptr: p }, { kind: 'buffer', ptr: p }, { kind: 'scalar', dtype: 'int32', value: 1 << 18 },
    ] });
    a.memFree(p);
    a.moduleUnload(m);
  }
  const after = a.memInfo()[0];
  assert(after === before, `free memory ${before} -> ${after}`);
  return `free ${before} -> ${after}`;
});
await check('contextDestroy frees everything; calls then fail; contextCreate again works', async () => {
  a.memAlloc(1 << 20); // left allocated on purpose: contextDestroy must free it
  a.contextDestroy();
  const e = await error(() => a.memInfo());
  assert(e.code === 'CUDA_ERROR_INVALID_CONTEXT', e.code);
  a.contextDestroy(); // no-op
  a.contextCreate(0);
  const stale = await error(() => a.moduleGetFunction(module, 'vadd'));
  assert(stale.code === 'INVALID_ARGUMENT', stale.code);
  module = a.moduleLoad(compiled.cubin);
  fns.oob = a.moduleGetFunction(module, 'oob');
});
await check('illegal address: reported from the launch, then sticky; destroy does not crash', async () => {
  const p = a.memAlloc(16);
  const e = await error(() => a.launch({ fn: fns.oob, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [{ kind: 'buffer', ptr: p }] }));
  assert(e.code === 'CUDA_ERROR_ILLEGAL_ADDRESS' && e.call === 'cuStreamSynchronize', JSON.stringify({ ...e }));
  const after = await error(() => a.memAlloc(16));
  a.contextDestroy();
  return `${e.message} | next call: ${after.code}`;
});

console.log(`\n${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
