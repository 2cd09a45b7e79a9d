// The nvcc backend against the real nvcc (CI has it, without NVRTC or a GPU).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AbortError, CompileError, NvccCompiler } from '../../src/gpu';
import { canonicalName, demangledName, matchNameExpressions, parsePtxasInfo } from '../../src/gpu/nvcc';

const SOURCE = `#if BLOCK != 128
#error BLOCK must be 128
#endif
namespace ns {
template <typename T, unsigned N>
__global__ void scale(T* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= (T)N;
}
}
extern "C" __global__ void vadd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
__global__ void local_array(float* out, int n) {
  float local[256];
  for (int i = 0; i < 256; ++i) local[i] = out[(i * n) % 1000];
  float s = 0;
  for (int i = 0; i < 256; ++i) s += local[(i * 7 + n) % 256];
  __shared__ float sh[64];
  sh[threadIdx.x % 64] = s;
  __syncthreads();
  out[threadIdx.x] = sh[(threadIdx.x + 1) % 64];
}
`;

const PRESSURE = `__global__ void pressure(const float* in, float* out, int n) {
  float v[48];
  #pragma unroll
  for (int i = 0; i < 48; ++i) v[i] = in[threadIdx.x + i * n];
  float s = 0.f;
  #pragma unroll
  for (int i = 0; i < 48; ++i) s += v[i] * v[47 - i] + v[(i * 5) % 48];
  out[threadIdx.x] = s;
}
`;

const available = await NvccCompiler.available();
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-nvcc-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const nvcc = new NvccCompiler({ defaultArch: 'sm_90', tempDir: scratch });

describe.skipIf(!available)('NvccCompiler (real nvcc)', () => {
  it('compiles with defines, resolves templated and plain name expressions, and reports resources', async () => {
    const compiled = await nvcc.compile({
      source: SOURCE,
      nameExpressions: ['ns::scale<float, 16>', 'vadd', 'local_array'],
      defines: { BLOCK: 128 },
    });
    expect(compiled.backend).toBe('nvcc');
    expect(compiled.arch).toBe('sm_90');
    expect(compiled.cubin.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(compiled.loweredNames).toEqual({
      'ns::scale<float, 16>': '_ZN2ns5scaleIfLj16EEEvPT_i',
      vadd: 'vadd',
      local_array: '_Z11local_arrayPfi',
    });
    const r = compiled.resources!;
    expect(r.vadd!.registers).toBeGreaterThan(0);
    expect(r.vadd!.localBytes).toBe(0);
    expect(r.local_array).toMatchObject({ localBytes: 1024, sharedBytes: 256, barriers: 1 });
    expect(r['ns::scale<float, 16>']!.registers).toBeGreaterThan(0);
    expect(compiled.log).toContain("Compiling entry function 'vadd'");
    expect(readdirSync(scratch)).toEqual([]); // the temporary directory is gone
  });

  it('makes the define take effect: another value trips the #error guard at its line', async () => {
    const error = await nvcc.compile({ source: SOURCE, nameExpressions: ['vadd'], defines: { BLOCK: 64 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    const e = error as CompileError;
    expect(e.diagnostics[0]).toMatchObject({ file: 'kernel.cu', line: 2, severity: 'error', message: '#error BLOCK must be 128' });
    expect(e.message).toContain('kernel.cu(2:2): #error BLOCK must be 128');
    expect(e.code).toBe('NVCC_COMPILATION_FAILED');
  });

  it('reports a real compile error with its file and line, and the full log', async () => {
    const source = ['extern "C" __global__ void broken(float* a) {', '  int i = threadIdx.x;', '', '  a[i] = undefined_name;', '}', ''].join('\n');
    const error = await nvcc.compile({ source, fileName: 'broken.cu', nameExpressions: ['broken'] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    const e = error as CompileError;
    expect(e.diagnostics).toContainEqual({ file: 'broken.cu', line: 4, severity: 'error', message: 'identifier "undefined_name" is undefined' });
    expect(e.log).toContain('1 error detected in the compilation of "broken.cu"');
  });

  it('reports spills under register pressure', async () => {
    const compiled = await nvcc.compile({ source: PRESSURE, nameExpressions: ['pressure'], options: ['-maxrregcount=16'], wantPtx: true });
    const r = compiled.resources!.pressure!;
    expect(r.spillStoreBytes).toBeGreaterThan(0);
    expect(r.spillLoadBytes).toBeGreaterThan(0);
    expect(r.localBytes).toBeGreaterThan(0);
    expect(compiled.ptx).toContain('.entry _Z8pressurePKfPfi');
  });

  it('names the name expression that matches no kernel', async () => {
    const error = await nvcc.compile({ source: SOURCE, nameExpressions: ['vadd', 'nope<int>'], defines: { BLOCK: 128 } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    expect((error as CompileError).diagnostics[0]).toMatchObject({ file: '<name expressions>', line: 2, severity: 'error' });
    expect((error as CompileError).diagnostics[0]!.message).toMatch(/^name expression "nope<int>": /);
  });

  it('aborts a running compile', async () => {
    const controller = new AbortController();
    const compile = nvcc.compile({ source: SOURCE, nameExpressions: ['vadd'], defines: { BLOCK: 128 } }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(compile).rejects.toBeInstanceOf(AbortError);
    expect(readdirSync(scratch)).toEqual([]);
  });
});

describe('nvcc name and ptxas parsing', () => {
  it('reads names out of demangled signatures and normalizes their spelling', () => {
    expect(demangledName('void ns::scale<float, 16u>(float*, int)')).toBe('ns::scale<float, 16u>');
    expect(demangledName('local_array(float*, int)')).toBe('local_array');
    expect(demangledName('vadd')).toBe('vadd');
    expect(canonicalName('ns::scale<float, 16u>')).toBe(canonicalName('ns::scale< float,16 >'));
    expect(canonicalName('f<(unsigned int)16, (bool)1>')).toBe('f<16,true>');
  });

  it('matches name expressions to lowered names and refuses ambiguity', () => {
    const demangled = new Map([
      ['_Z1fILi1EEvv', 'void f<1>()'],
      ['_Z1fILi2EEvv', 'void f<2>()'],
      ['_Z4plainv', 'plain()'],
    ]);
    expect(matchNameExpressions(['f<2>', 'plain'], demangled)).toEqual({ 'f<2>': '_Z1fILi2EEvv', plain: '_Z4plainv' });
    expect(() => matchNameExpressions(['f<short>'], demangled)).toThrow(/is ambiguous/);
    expect(() => matchNameExpressions(['g'], demangled)).toThrow(/matches no kernel/);
  });

  it('parses ptxas -v resource lines per entry function', () => {
    const log = [
      "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'",
      'ptxas info    : Function properties for _Z1kPf',
      '    24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads',
      'ptxas info    : Used 40 registers, used 1 barriers, 24 bytes cumulative stack size, 4096 bytes smem, 380 bytes cmem[0]',
    ].join('\n');
    expect(parsePtxasInfo(log).get('_Z1kPf')).toEqual({
      registers: 40,
      barriers: 1,
      sharedBytes: 4096,
      constantBytes: 380,
      localBytes: 24,
      spillStoreBytes: 8,
      spillLoadBytes: 12,
    });
  });
});
