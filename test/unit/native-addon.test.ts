// The Node-API addon on a machine without libcuda/NVRTC (CI, this build machine): it builds, loads, reports what is
// missing, fails every entry point with LIBRARY_NOT_FOUND, checks its arguments first, and never crashes the process.
// On a machine with a driver the "without" groups skip; the GPU behaviour is tested by test/gpu/.

import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NATIVE_ADDON_ENV, loadNativeAddon, nativeAddonPath } from '../../src/gpu/native';
import type { NativeAddon, NativeCompileRequest, NativeLaunch, NativeReset } from '../../src/gpu/native-types';

const root = path.resolve(__dirname, '..', '..');
const addonFile = path.join(root, 'dist', 'native', 'kernel_tuner_native.node');

// npm test builds first; a lone run of this file builds the addon itself. Loaded at collection time, so that the
// groups below can be skipped on a machine that has the libraries.
if (!fs.existsSync(addonFile)) {
  execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs'), '--native-only'], { cwd: root, stdio: 'pipe' });
}
const addon: NativeAddon = loadNativeAddon();
const hasCuda = addon.status().cuda.loaded;
const hasNvrtc = addon.status().nvrtc.loaded;
const hasNvml = addon.status().nvml.loaded;

/** Runs `fn` (sync or async) and returns what it threw or rejected with; fails if it succeeded. */
async function failure(fn: () => unknown): Promise<Error & Record<string, unknown>> {
  try {
    await fn();
  } catch (e) {
    expect(e).toBeInstanceOf(Error);
    return e as Error & Record<string, unknown>;
  }
  throw new Error('expected a failure, but the call succeeded');
}

/** A 64-byte ELF64 little-endian header with no sections: passes moduleLoad's own checks. */
function minimalElf(): Buffer {
  const b = Buffer.alloc(64);
  b.set([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1], 0);
  return b;
}

const request: NativeCompileRequest = {
  source: 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }',
  fileName: 'k.cu',
  nameExpressions: ['k'],
  options: ['--gpu-architecture=sm_90'],
  wantPtx: false,
};
const launch: NativeLaunch = {
  fn: 1n,
  grid: [1, 1, 1],
  block: [32, 1, 1],
  sharedMemBytes: 0,
  args: [
    { kind: 'buffer', ptr: 1n },
    { kind: 'scalar', dtype: 'int32', value: 7 },
    { kind: 'scalar', dtype: 'float64', value: 0.5 },
    { kind: 'scalar', dtype: 'uint64', value: 2n ** 64n - 1n },
  ],
};

describe('loading', () => {
  afterEach(() => {
    delete process.env[NATIVE_ADDON_ENV];
  });

  it('finds the built addon in dist/native from the sources and exports every NativeAddon function', () => {
    expect(nativeAddonPath()).toBe(addonFile);
    expect(typeof addon.status).toBe('function');
    expect(typeof addon.benchmark).toBe('function');
    expect(loadNativeAddon()).toBe(addon); // cached: one instance per process
  });

  it('throws one clear error for a missing file', () => {
    process.env[NATIVE_ADDON_ENV] = path.join(os.tmpdir(), 'no-such-dir', 'kernel_tuner_native.node');
    expect(() => loadNativeAddon()).toThrow(
      /^could not load the native addon at .*no-such-dir\/kernel_tuner_native\.node: the file does not exist\. Run `npm run build` to build it\.$/,
    );
  });

  it('throws one clear error for a file that is not a loadable library', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lkt-native-'));
    const bogus = path.join(dir, 'kernel_tuner_native.node');
    fs.writeFileSync(bogus, 'not a shared library\n'.repeat(100));
    process.env[NATIVE_ADDON_ENV] = bogus;
    try {
      expect(() => loadNativeAddon()).toThrow(/^could not load the native addon at .*kernel_tuner_native\.node: .*invalid ELF header.*Run `npm run build`/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loads from native/ beside a CommonJS bundle (the dist/ layout)', async () => {
    const esbuild = await import('esbuild');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lkt-bundle-'));
    try {
      const entry = path.join(dir, 'entry.ts');
      fs.writeFileSync(
        entry,
        `import { loadNativeAddon, nativeAddonPath } from ${JSON.stringify(path.join(root, 'src', 'gpu', 'native'))};\n` +
          'console.log(JSON.stringify({ path: nativeAddonPath(), status: loadNativeAddon().status() }));\n',
      );
      const result = await esbuild.build({
        entryPoints: [entry],
        outfile: path.join(dir, 'out', 'main.js'),
        bundle: true,
        platform: 'node',
        target: 'node20',
        format: 'cjs',
        logLevel: 'silent',
      });
      expect(result.warnings).toEqual([]);
      fs.mkdirSync(path.join(dir, 'out', 'native'));
      fs.copyFileSync(addonFile, path.join(dir, 'out', 'native', 'kernel_tuner_native.node'));
      const env = { ...process.env };
      delete env[NATIVE_ADDON_ENV];
      const out = execFileSync(process.execPath, [path.join(dir, 'out', 'main.js')], { env, encoding: 'utf8' });
      const parsed = JSON.parse(out) as { path: string; status: { cuda: { loaded: boolean } } };
      expect(parsed.path).toBe(path.join(dir, 'out', 'native', 'kernel_tuner_native.node'));
      expect(typeof parsed.status.cuda.loaded).toBe('boolean');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('status', () => {
  it('reports the three libraries and never throws', () => {
    const s = addon.status();
    expect(typeof s.cuda.loaded).toBe('boolean');
    expect(typeof s.nvrtc.loaded).toBe('boolean');
    expect(typeof s.nvml.loaded).toBe('boolean');
    expect(addon.status()).toEqual(s); // cached
  });
});

describe.skipIf(hasCuda)('without libcuda', () => {
  it('status() carries dlopen\'s message', () => {
    const { cuda } = addon.status();
    expect(cuda.loaded).toBe(false);
    expect(cuda.error).toMatch(/libcuda\.so\.1: cannot open shared object file/);
  });

  const cudaCalls: [string, (a: NativeAddon) => unknown][] = [
    ['driverVersion', (a) => a.driverVersion()],
    ['deviceCount', (a) => a.deviceCount()],
    ['deviceInfo', (a) => a.deviceInfo(0)],
    ['contextCreate', (a) => a.contextCreate(0)],
    ['contextDestroy', (a) => a.contextDestroy()],
    ['synchronize', (a) => a.synchronize()],
    ['memInfo', (a) => a.memInfo()],
    ['moduleLoad', (a) => a.moduleLoad(minimalElf())],
    ['moduleUnload', (a) => a.moduleUnload(1n)],
    ['moduleGetFunction', (a) => a.moduleGetFunction(1n, 'k')],
    ['functionAttributes', (a) => a.functionAttributes(1n)],
    ['functionOccupancy', (a) => a.functionOccupancy(1n, 256, 0)],
    ['functionSetMaxDynamicShared', (a) => a.functionSetMaxDynamicShared(1n, 65536)],
    ['memAlloc', (a) => a.memAlloc(1024)],
    ['memFree', (a) => a.memFree(1n)],
    ['memUpload', (a) => a.memUpload(1n, new Float32Array(4), 0)],
    ['memDownload', (a) => a.memDownload(1n, 16, 0)],
    ['memFill', (a) => a.memFill(0x1000n, 8, 0xdeadbeefcafen, 4)],
    ['memCopy', (a) => a.memCopy(1n, 2n, 16)],
    ['memCopyBenchmark', (a) => a.memCopyBenchmark(1n, 2n, 16, { warmup: 1, iterations: 3 })],
    ['launch', (a) => a.launch(launch)],
    ['benchmark', (a) => a.benchmark(launch, { warmup: 1, iterations: 3, flushPtr: 0n, flushBytes: 0 })],
    ['energyBenchmark', (a) => a.energyBenchmark(launch, { batch: 10, windowMs: 100, maxWindowMs: 1100, minUpdates: 3, pciBusId: '0000:01:00.0', pollMs: 1, sampleEvery: 10 })],
  ];
  it.each(cudaCalls)('%s fails with LIBRARY_NOT_FOUND for libcuda', async (_name, call) => {
    const e = await failure(() => call(addon));
    expect(e.code).toBe('LIBRARY_NOT_FOUND');
    expect(e.library).toBe('libcuda');
    expect(e.message).toMatch(/libcuda/);
    expect(e.explanation).toMatch(/libcuda\.so\.1/);
    expect(e.explanation).toMatch(/install the NVIDIA driver/);
  });
});

describe.skipIf(hasNvml)('without NVML', () => {
  it('status() carries dlopen\'s message', () => {
    const { nvml } = addon.status();
    expect(nvml.loaded).toBe(false);
    expect(nvml.error).toMatch(/libnvidia-ml\.so\.1: cannot open shared object file/);
  });

  it('nvmlSnapshot fails with LIBRARY_NOT_FOUND for libnvidia-ml, saying that it comes with the driver', async () => {
    const e = await failure(() => addon.nvmlSnapshot('0000:01:00.0'));
    expect(e.code).toBe('LIBRARY_NOT_FOUND');
    expect(e.library).toBe('libnvidia-ml');
    expect(e.message).toMatch(/NVML is not available/);
    expect(e.explanation).toMatch(/installed with the NVIDIA driver/);
  });
});

describe.skipIf(hasNvrtc)('without NVRTC', () => {
  it('status() names every file tried with dlopen\'s message', () => {
    const { nvrtc } = addon.status();
    expect(nvrtc.loaded).toBe(false);
    for (const f of ['libnvrtc.so.13', 'libnvrtc.so.12', 'libnvrtc.so']) expect(nvrtc.error).toContain(`${f}: cannot open shared object file`);
  });

  const nvrtcCalls: [string, (a: NativeAddon) => unknown][] = [
    ['nvrtcVersion', (a) => a.nvrtcVersion()],
    ['compile', (a) => a.compile(request)],
  ];
  it.each(nvrtcCalls)('%s fails with LIBRARY_NOT_FOUND for libnvrtc', async (_name, call) => {
    const e = await failure(() => call(addon));
    expect(e.code).toBe('LIBRARY_NOT_FOUND');
    expect(e.library).toBe('libnvrtc');
    expect(e.message).toMatch(/libnvrtc/);
    expect(e.explanation).toMatch(/libnvrtc\.so\.13, libnvrtc\.so\.12, libnvrtc\.so/);
    expect(e.explanation).toMatch(/cuda-nvrtc-13-0/);
    expect(e.explanation).toMatch(/nvidia-cuda-nvrtc/);
    expect(e.explanation).toMatch(/LD_LIBRARY_PATH/);
  });

  it('compile returns a promise that rejects (never throws synchronously)', async () => {
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = addon.compile(request);
    }).not.toThrow();
    await expect(promise).rejects.toMatchObject({ code: 'LIBRARY_NOT_FOUND' });
  });

  it('runs several compiles at once, each rejecting on its own', async () => {
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => addon.compile(request)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('rejected'));
  });
});

describe('argument checks (before any CUDA call)', () => {
  /** Expects a TypeError/RangeError with code INVALID_ARGUMENT whose message matches. */
  async function invalid(fn: () => unknown, message: string | RegExp, kind: 'TypeError' | 'RangeError' = 'TypeError') {
    const e = await failure(fn);
    expect(e.name).toBe(kind);
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(typeof e.explanation).toBe('string');
    if (typeof message === 'string') expect(e.message).toBe(message);
    else expect(e.message).toMatch(message);
  }

  it('names the function, the argument and the value received', async () => {
    await invalid(() => addon.memAlloc(-1), 'memAlloc: expected bytes to be a non-negative integer, received -1');
    await invalid(() => addon.memAlloc(1.5), 'memAlloc: expected bytes to be a non-negative integer, received 1.5');
    await invalid(() => (addon.memAlloc as (x: unknown) => unknown)('8'), 'memAlloc: expected bytes to be a non-negative integer, received "8"');
    await invalid(() => (addon.memAlloc as (x?: unknown) => unknown)(), 'memAlloc: expected bytes to be a non-negative integer, received undefined');
    await invalid(() => addon.memAlloc(0), /^memAlloc: bytes must be at least 1/, 'RangeError');
    await invalid(() => addon.deviceInfo(-1), 'deviceInfo: expected ordinal to be an integer from 0 to 2147483647, received -1');
    await invalid(() => addon.contextCreate(NaN), 'contextCreate: expected ordinal to be an integer from 0 to 2147483647, received NaN');
    await invalid(() => (addon.memFree as (x: unknown) => unknown)(5), 'memFree: expected ptr to be a bigint handle from the addon, received 5');
    await invalid(() => addon.memFree(-1n), 'memFree: expected ptr to be a bigint handle from the addon, received -1n');
    await invalid(() => addon.memFree(2n ** 64n), /^memFree: expected ptr to be a bigint handle from the addon, received 18446744073709551616n$/);
    await invalid(() => (addon.memUpload as (...x: unknown[]) => unknown)(1n, [1, 2], 0), 'memUpload: expected data to be an ArrayBufferView, received an array');
    await invalid(() => addon.memDownload(1n, 16, -4), 'memDownload: expected byteOffset to be a non-negative integer, received -4');
    await invalid(() => addon.memUpload(2n ** 64n - 1n, new Uint8Array(1), 2), /^memUpload: ptr 0xffffffffffffffff \+ byteOffset 2 overflows$/, 'RangeError');
    await invalid(() => addon.memFill(1n, 3 as 4, 0n, 1), 'memFill: expected elementBytes to be 1, 2, 4 or 8, received 3');
    await invalid(() => addon.memFill(1n, 2, 0x10000n, 1), 'memFill: expected pattern to be a bigint that fits 2 byte(s), received 65536n');
    await invalid(() => (addon.memFill as (...x: unknown[]) => unknown)(1n, 4, 0, 1), /^memFill: expected pattern to be a bigint/);
    await invalid(() => addon.memFill(2n, 4, -1n, 1), /^memFill: ptr 0x2 is not aligned to 4 bytes/);
    await invalid(() => addon.moduleGetFunction(1n, ''), /^moduleGetFunction: expected loweredName to be a non-empty kernel name/);
    await invalid(() => addon.functionSetMaxDynamicShared(1n, -1), /^functionSetMaxDynamicShared: expected bytes to be an integer from 0 to 2147483647/);
  });

  it('checks a launch field by field', async () => {
    const l = (patch: Partial<NativeLaunch> | Record<string, unknown>) => ({ ...launch, ...patch }) as NativeLaunch;
    await invalid(() => addon.launch(l({ block: [0, 1, 1] })), 'launch: expected launch.block[0] to be an integer from 1 to 4294967295, received 0');
    await invalid(() => addon.launch(l({ grid: [1, 1] })), 'launch: expected launch.grid to be an array of 3 positive integers, received an array');
    await invalid(() => addon.launch(l({ fn: 3 })), 'launch: expected launch.fn to be a bigint handle from the addon, received 3');
    await invalid(() => addon.launch(l({ sharedMemBytes: -1 })), /^launch: expected launch.sharedMemBytes to be an integer from 0 to 4294967295/);
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'int8', value: 300 }] })),
      'launch: expected launch.args[0].value to be an integer that fits int8, received 300');
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'uint32', value: -1 }] })),
      'launch: expected launch.args[0].value to be an integer that fits uint32, received -1');
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'int64', value: 2n ** 63n }] })),
      'launch: expected launch.args[0].value to be an integer that fits int64, received 9223372036854775808n');
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'float32', value: 1e39 }] })),
      'launch: expected launch.args[0].value to be a number within float32 range, received 1e+39');
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'float64', value: 1n }] })),
      'launch: expected launch.args[0].value to be a number, received 1n');
    await invalid(() => addon.launch(l({ args: [{ kind: 'scalar', dtype: 'half', value: 1 }] })),
      /^launch: expected launch.args\[0\].dtype to be a DType/);
    await invalid(() => addon.launch(l({ args: [{ kind: 'pointer', ptr: 1n }] })),
      'launch: expected launch.args[0].kind to be "buffer" or "scalar", received "pointer"');
    await invalid(() => addon.launch(l({ args: [{ kind: 'buffer', ptr: 1 }] })),
      'launch: expected launch.args[0].ptr to be a bigint handle from the addon, received 1');
    await invalid(() => addon.launch(l({ args: [null] })), 'launch: expected launch.args[0] to be an object, received null');
    await invalid(() => addon.benchmark(launch, { warmup: 0, iterations: 0, flushPtr: 0n, flushBytes: 0 }),
      'benchmark: expected options.iterations to be an integer from 1 to 1000000, received 0');
    await invalid(() => addon.benchmark(launch, { warmup: 0, iterations: 1, flushPtr: 1n, flushBytes: 0 }),
      'benchmark: expected options.flushBytes to be a positive integer when flushPtr is set, received 0');
    const resets = (r: unknown) => addon.benchmark(launch, { warmup: 0, iterations: 1, flushPtr: 0n, flushBytes: 0, resets: r as NativeReset[] });
    await invalid(() => resets({ kind: 'fill' }), 'benchmark: expected options.resets to be an array of fills and copies, received an object');
    await invalid(() => resets([{ kind: 'zero', ptr: 1n }]), 'benchmark: expected options.resets[0].kind to be "fill" or "copy", received "zero"');
    await invalid(() => resets([{ kind: 'fill', ptr: 4n, elementBytes: 3, pattern: 0n, count: 1 }]),
      'benchmark: expected options.resets[0].elementBytes to be 1, 2, 4 or 8, received 3');
    await invalid(() => resets([{ kind: 'fill', ptr: 4n, elementBytes: 1, pattern: 0x100n, count: 1 }]),
      'benchmark: expected options.resets[0].pattern to be a bigint that fits 1 byte(s), received 256n');
    await invalid(() => resets([{ kind: 'fill', ptr: 4n, elementBytes: 4, pattern: 0n, count: 0 }]),
      'benchmark: expected options.resets[0].count to be an integer of at least 1, received 0');
    await invalid(() => resets([{ kind: 'fill', ptr: 2n, elementBytes: 4, pattern: 0n, count: 1 }]), /^benchmark: options.resets\[0\].ptr 0x2 is not aligned to 4 bytes/);
    await invalid(() => resets([{ kind: 'copy', dst: 16n, src: 8n, bytes: 16 }]), 'benchmark: options.resets[0]: the source and destination ranges overlap', 'RangeError');
    await invalid(() => addon.benchmark(launch, { warmup: 0, iterations: 1, flushPtr: 0n, flushBytes: 0, idleBeforeEach: 1 as never }),
      'benchmark: expected options.idleBeforeEach to be a boolean, received 1');
    await invalid(() => addon.memCopyBenchmark(1n, 2n, 16, { warmup: 0, iterations: 1001 }),
      'memCopyBenchmark: expected options.iterations to be an integer from 1 to 1000, received 1001');
    await invalid(() => addon.memCopyBenchmark(1n, 2n, 16, { warmup: -1, iterations: 1 }),
      /^memCopyBenchmark: expected options.warmup to be an integer from 0 to 100000/);
  });

  it('checks a cubin before handing it to the driver', async () => {
    await invalid(() => addon.moduleLoad(Buffer.from('garbage')), /^moduleLoad: expected cubin to hold an ELF cubin \(or PTX text\)/);
    await invalid(() => (addon.moduleLoad as (x: unknown) => unknown)('x'), 'moduleLoad: expected cubin to be a Buffer, received "x"');
    const truncated = minimalElf();
    truncated.writeBigUInt64LE(4096n, 40); // section headers at 4096, beyond the 64 bytes
    truncated.writeUInt16LE(64, 58);
    truncated.writeUInt16LE(3, 60);
    await invalid(() => addon.moduleLoad(truncated), 'moduleLoad: the cubin is not loadable: its section headers lie past its end');
  });

  it('rejects (not throws) a malformed compile request', async () => {
    const bad = (r: unknown) => addon.compile(r as NativeCompileRequest);
    await invalid(() => bad(undefined), 'compile: expected request to be an object, received undefined');
    await invalid(() => bad({ ...request, source: 1 }), 'compile: expected request.source to be a string, received 1');
    await invalid(() => bad({ ...request, options: ['-O3', 4] }), 'compile: expected request.options[1] to be a string, received 4');
    await invalid(() => bad({ ...request, wantPtx: 'yes' }), 'compile: expected request.wantPtx to be a boolean, received "yes"');
    await invalid(() => bad({ ...request, options: ['-DX=1\0-G'] }), 'compile: request.options[0] contains a NUL character');
  });

  const nvcc = ['/usr/local/cuda/bin/nvcc', ...(process.env.PATH ?? '').split(path.delimiter).map((d) => path.join(d, 'nvcc'))].find((p) =>
    fs.existsSync(p),
  );
  it.runIf(nvcc)('accepts a real cubin from nvcc and refuses a truncated one', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lkt-cubin-'));
    try {
      fs.writeFileSync(path.join(dir, 'k.cu'), request.source);
      execFileSync(nvcc!, ['-cubin', '-arch=sm_90', '-o', path.join(dir, 'k.cubin'), path.join(dir, 'k.cu')], { stdio: 'pipe' });
      const cubin = fs.readFileSync(path.join(dir, 'k.cubin'));
      const e = await failure(() => addon.moduleLoad(cubin));
      // It passed the image checks; what stops it here is the missing driver (or, with one, nothing: no context).
      expect(['LIBRARY_NOT_FOUND', 'CUDA_ERROR_INVALID_CONTEXT']).toContain(e.code);
      await invalid(() => addon.moduleLoad(cubin.subarray(0, cubin.length - 64)), /^moduleLoad: the cubin is not loadable: .* past its end/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('robustness', () => {
  it('survives every entry point called with every kind of wrong value (in a child process)', () => {
    // A crash in native code would take vitest down with it; a child process turns it into an exit status.
    const probe = `
      const m = { exports: {} };
      process.dlopen(m, ${JSON.stringify(addonFile)});
      const a = m.exports;
      const values = [undefined, null, -1, 0, 1.5, NaN, Infinity, 2 ** 53, 'x', '', true, {}, [], [1, 2, 3], -1n, 0n, 1n,
        2n ** 64n, Symbol('s'), () => 1, new Uint8Array(3), Buffer.from('\\x7fELF'), new DataView(new ArrayBuffer(8)),
        { kind: 'buffer', ptr: 1n }, { fn: 1n, grid: [1, 1, 1], block: [1, 1, 1], sharedMemBytes: 0, args: [] }];
      let calls = 0, bad = [];
      const check = (name, e) => { if (!(e instanceof Error) || typeof e.code !== 'string') bad.push(name + ': ' + String(e)); };
      const pending = [];
      for (const name of Object.keys(a)) {
        if (name === 'status') continue;
        for (const v of values) {
          for (const argc of [0, 1, 2, 3, 4]) {
            const args = Array.from({ length: argc }, (_, i) => (i === argc - 1 ? v : 1n));
            calls++;
            try {
              const r = a[name](...args);
              if (r && typeof r.then === 'function') pending.push(r.then(() => bad.push(name + ' resolved'), (e) => check(name, e)));
            } catch (e) { check(name, e); }
          }
        }
      }
      Promise.all(pending).then(() => { a.status(); console.log(JSON.stringify({ calls, bad })); });
    `;
    const r = spawnSync(process.execPath, ['-e', probe], { encoding: 'utf8', timeout: 60_000 });
    expect(r.signal).toBeNull();
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { calls: number; bad: string[] };
    expect(out.calls).toBeGreaterThan(1000);
    // Without libcuda every call fails; with it, some may legitimately succeed (e.g. deviceCount()).
    if (!hasCuda) expect(out.bad).toEqual([]);
  }, 90_000);
});
