// A .cu file as CUDA developers have it (host program, local headers, system headers) → the programs NVRTC and nvcc
// compile. The structure of the NVRTC device unit is checked here; that NVRTC compiles it is the GPU tests' job
// (test/gpu/real-files.test.ts); nvcc, which CI has, compiles the nvcc program for real below.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CompileError, NvccCompiler } from '../../src/gpu';
import type { CudaToolkit } from '../../src/gpu/toolkit';
import { buildWithFallback, candidatePrograms, compileSources } from '../../src/tuner/compile/compile-sources';
import { isDeviceUsableToolkitHeader, NVCC_IMPLICIT_PRELUDE, systemHeaderStandIn } from '../../src/tuner/compile/system-headers';
import { blankRanges, isHostOnly, outlineSource } from '../../src/tuner/source/translation-unit';

const nvccAvailable = await NvccCompiler.available();
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-sources-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function write(file: string, text: string): string {
  const full = path.join(scratch, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, text);
  return full;
}

/** A toolkit's include directory in miniature: a device-usable header, and a host API that includes one. */
const toolkitDir = path.join(scratch, 'toolkit', 'include');
write('toolkit/include/cuda_runtime.h', '// runtime\n');
write('toolkit/include/cuda_fp16.h', '// half\n');
write('toolkit/include/cublas_api.h', '#include "driver_types.h"\n#include <cuda_fp16.h>\n#include <stdint.h>\n');
write('toolkit/include/driver_types.h', '// types\n');
write('toolkit/include/cublas_v2.h', '#include "cublas_api.h"\n');
const toolkit: CudaToolkit = { root: path.join(scratch, 'toolkit'), includeDirs: [toolkitDir], nvcc: null, foundBy: 'test' };

const DECLARATIONS = `#define HD __host__ __device__
struct A { int x; __device__ int f() const { return x; } };
typedef struct { float a; } B;
enum E { E1, E2 };
HD inline float g(float x) { return x; }
static __device__ __forceinline__ float h(float x) { return x; }
__constant__ float cst[16];
extern __shared__ float smem[];
const int N = 1024;
constexpr float PI = 3.14f;
const char* label = "host";
int hostvar = 3;
void proto(int);
__device__ void dproto(int);
namespace ns { __global__ void k(float* x) { x[0] = 1; } void hf() {} }
extern "C" { __global__ void kc(float* x) {} void hc(); }
template <typename T> struct S { T v; };
template <typename T> __device__ T tf(T x) { return x; }
auto lam = [](int a) { return a; };
int main() { ns::k<<<1, 32>>>(nullptr); return 0; }
__host__ void onlyhost() {}
void A2::method() {}
class HostOnly { public: HostOnly(); void run(); };
struct Mixed { __device__ float d() const { return 1.f; } void host_side(); Mixed() = default; };
`;

describe('the outline of a CUDA file', () => {
  it('tells host code from device code, declaration by declaration', async () => {
    const outline = await outlineSource(DECLARATIONS);
    const host = outline.items.filter(isHostOnly).flatMap((i) => i.names);
    expect(host.sort()).toEqual(['HostOnly', 'hc', 'hf', 'hostvar', 'label', 'lam', 'main', 'method', 'onlyhost', 'proto'].sort());
    const kept = outline.items.filter((i) => !isHostOnly(i)).flatMap((i) => i.names);
    for (const name of ['HD', 'A', 'B', 'g', 'h', 'cst', 'smem', 'N', 'PI', 'dproto', 'k', 'kc', 'S', 'tf', 'Mixed']) expect(kept).toContain(name);
    const mixed = outline.items.find((i) => i.names.includes('Mixed'))!;
    expect(mixed.hostMembers?.map((m) => DECLARATIONS.slice(m.start, m.end))).toEqual(['void host_side();']);
    expect(outline.items.find((i) => i.names.includes('g'))!.space).toBe('host-device');
  });

  it('blanks ranges without moving a line or a column', () => {
    const code = 'int a;\r\nvoid f() {\n  g();\n}\nint b;\n';
    const blanked = blankRanges(code, [{ start: 8, end: 26 }]);
    expect(blanked.length).toBe(code.length);
    expect(blanked.split('\n').length).toBe(code.split('\n').length);
    expect(blanked.startsWith('int a;\r\n')).toBe(true);
    expect(blanked.endsWith('int b;\n')).toBe(true);
    expect(blanked.slice(8, 26).trim()).toBe('');
  });
});

describe('the programs of a file with its host program and local headers', () => {
  const main = write(
    'project/src/scale.cu',
    `#include <stdio.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "common.h"
#include <unknown_vendor.h>

#define BLOCK_SIZE 256

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
  if (i < n) x[i] = twice(a) * x[i] + INFINITY * 0;
}

int main() {
  float* x;
  cudaMalloc(&x, 4096);
  scale<<<16, BLOCK_SIZE>>>(x, 2.0f, 4096);
  printf("done\\n");
  return 0;
}
`,
  );
  write(
    'project/src/common.h',
    `#pragma once
#include "detail/inner.h"
void check(cudaError_t e) { if (e) exit(1); }
__device__ inline float twice(float v) { return INNER * v; }
`,
  );
  write('project/src/detail/inner.h', '#define INNER 2.0f\n');

  it('gives NVRTC the device unit: host code blanked, every line where it was, headers in memory', async () => {
    const sources = await compileSources(readFileSync(main, 'utf8'), { filePath: main, toolkit, tunableNames: ['BLOCK_SIZE'] });
    if ('unavailable' in sources.nvrtc) throw new Error(sources.nvrtc.unavailable);
    const { source, headers, includePaths } = sources.nvrtc;
    // nvcc's implicit cuda_runtime.h brings math.h: the prelude gives NVRTC the same names, before the file's first line.
    expect(source.startsWith(NVCC_IMPLICIT_PRELUDE)).toBe(true);
    const unit = source.slice(NVCC_IMPLICIT_PRELUDE.length);
    expect(unit.split('\n')[0]).toBe(`#line 1 ${JSON.stringify(main)}`);
    const original = readFileSync(main, 'utf8').split('\n');
    const lines = unit.split('\n').slice(1);
    expect(lines.length).toBe(original.length);
    lines.forEach((line, i) => {
      if (line.trim() !== '') expect(line).toBe(original[i]); // nothing moved or changed, only blanked
    });
    expect(unit).not.toMatch(/int main|cudaMalloc|printf/);
    expect(unit).not.toMatch(/#define BLOCK_SIZE/); // the tuner's -DBLOCK_SIZE wins
    expect(unit).toMatch(/__global__ void scale/);
    expect(sources.fileValues).toEqual({ BLOCK_SIZE: '256' });
    expect(sources.blankedHost).toEqual(['main (scale.cu:14)', `check (common.h:3)`]);

    expect(Object.keys(headers).sort()).toEqual(['common.h', 'cublas_v2.h', 'detail/inner.h', 'stdio.h'].sort());
    expect(headers['common.h']).toMatch(new RegExp(`^#line 1 ${JSON.stringify(path.join(path.dirname(main), 'common.h')).replace(/[/\\.]/g, '\\$&')}`));
    expect(headers['common.h']).toMatch(/__device__ inline float twice/);
    expect(headers['common.h']).not.toMatch(/void check/);
    expect(headers['detail/inner.h']).toMatch(/#define INNER 2.0f/);
    expect(headers['stdio.h']).toMatch(/host header/);
    // A host-API toolkit header is reduced to the device headers it includes; cuda_runtime.h is NVRTC's to read.
    expect(headers['cublas_v2.h']).toMatch(/#include <driver_types.h>\n#include <cuda_fp16.h>/);
    expect(headers['cuda_runtime.h']).toBeUndefined();
    // A header nobody knows is left for the compiler to report (nvcc then takes the file).
    expect(headers['unknown_vendor.h']).toBeUndefined();
    expect(includePaths).toEqual([toolkitDir, path.dirname(main)]);
    expect(sources.localHeaders.sort()).toEqual([path.join(path.dirname(main), 'common.h'), path.join(path.dirname(main), 'detail', 'inner.h')].sort());
  });

  it('gives nvcc the file as it is, without the #define of a tunable parameter', async () => {
    const text = readFileSync(main, 'utf8');
    const sources = await compileSources(text, { filePath: main, toolkit, tunableNames: ['BLOCK_SIZE'] });
    expect(sources.nvcc.source).toBe(`#line 1 ${JSON.stringify(main)}\n${text.replace('#define BLOCK_SIZE 256', ' '.repeat('#define BLOCK_SIZE 256'.length))}`);
    expect(sources.nvcc.includePaths).toEqual([path.dirname(main)]);
    expect(sources.nvcc.headers).toEqual({});
  });

  it('overrides a tunable #define in a header for both compilers, and names the file whose value is the reference', async () => {
    const file = write('header-define/k.cu', '#include "../shared/params.h"\n__global__ void k(float* x) { x[threadIdx.x] = TILE; }\n');
    write('shared/params.h', '#ifndef TILE\n#define TILE (16)\n#endif\n');
    const sources = await compileSources(readFileSync(file, 'utf8'), { filePath: file, toolkit, tunableNames: ['TILE'] });
    expect(sources.fileValues).toEqual({ TILE: '(16)' });
    expect(Object.keys(sources.nvcc.headers)).toEqual(['../shared/params.h']);
    expect(sources.nvcc.headers['../shared/params.h']).not.toMatch(/#define TILE/);
  });

  it('refuses NVRTC (not nvcc) when one include spelling names two different files', async () => {
    write('twins/a/util.h', '#define FROM_A 1\n');
    write('twins/b/util.h', '#define FROM_B 1\n');
    write('twins/a/first.h', '#include "util.h"\n');
    write('twins/b/second.h', '#include "util.h"\n');
    const text = '#include "a/first.h"\n#include "b/second.h"\n__global__ void k(int* x) { x[0] = FROM_A + FROM_B; }\n';
    const sources = await compileSources(text, { filePath: write('twins/main.cu', text), toolkit });
    expect(sources.nvrtc).toEqual({ unavailable: expect.stringMatching(/"util.h" names two different files/) });
    expect(candidatePrograms(sources, 'main.cu', ['nvrtc', 'nvcc'])).toMatchObject({ programs: [{ compiler: 'nvcc' }], skipped: expect.any(String) });
  });

  it.skipIf(!nvccAvailable)('compiles with nvcc as it is, and a compile error names the user file and line', async () => {
    const nvcc = new NvccCompiler({ defaultArch: 'sm_90', tempDir: scratch });
    const file = write('nvcc/prog.cu', '#include <cstdio>\n#include "helpers.h"\n__global__ void k(float* x) { x[threadIdx.x] = helper(x[0]) * TILE; }\nint main() { k<<<1, 32>>>(nullptr); std::printf("ok\\n"); }\n');
    write('nvcc/helpers.h', '#define TILE 4\n__device__ float helper(float v) { return v + 1; }\n');
    const text = readFileSync(file, 'utf8');
    const sources = await compileSources(text, { filePath: file, tunableNames: ['TILE'] });
    const compiled = await nvcc.compile({ source: sources.nvcc.source, fileName: 'prog.cu', nameExpressions: ['k'], defines: { TILE: 8 }, includePaths: sources.nvcc.includePaths, headers: sources.nvcc.headers });
    expect(compiled.loweredNames.k).toBe('_Z1kPf');

    write('nvcc/broken.h', '__device__ float broken(float v) {\n  return v +;\n}\n');
    const bad = '#include "broken.h"\n__global__ void k(float* x) {\n  x[0] = broken(x[1]);\n}\n';
    const badFile = write('nvcc/bad.cu', bad);
    const badSources = await compileSources(bad, { filePath: badFile });
    const error = await nvcc.compile({ source: badSources.nvcc.source, fileName: 'bad.cu', nameExpressions: ['k'], includePaths: badSources.nvcc.includePaths }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompileError);
    expect((error as CompileError).diagnostics[0]).toMatchObject({ file: path.join(path.dirname(badFile), 'broken.h'), line: 2, severity: 'error' });
  });
});

describe('the compiler choice', () => {
  const programs = {
    programs: [
      { compiler: 'nvrtc' as const, source: 'unit', fileName: 'k.cu' },
      { compiler: 'nvcc' as const, source: 'file', fileName: 'k.cu' },
    ],
  };
  const refuse = (compiler: string, log: string) => new CompileError(`${compiler} failed`, { code: 'X', explanation: '', log });

  it('takes NVRTC when it compiles, else nvcc with the reason, else reports nvcc first and NVRTC after', async () => {
    await expect(buildWithFallback(programs, async (p) => p.compiler)).resolves.toEqual({ built: 'nvrtc', program: programs.programs[0] });
    const fallback = await buildWithFallback(programs, async (p) => {
      if (p.compiler === 'nvrtc') throw refuse('nvrtc', 'k.cu(3): error: identifier "std" is undefined\n');
      return p.compiler;
    });
    expect(fallback).toMatchObject({ built: 'nvcc', note: 'compiled with nvcc: NVRTC could not compile the device unit: k.cu:3: identifier "std" is undefined' });
    const both = await buildWithFallback(programs, async (p) => {
      throw refuse(p.compiler, p.compiler === 'nvcc' ? 'k.cu(7): error: expected a ";"\n' : 'k.cu(7): error: expected a ";"\n');
    }).then(
      () => undefined,
      (e: unknown) => e as CompileError,
    );
    if (!both) throw new Error('expected a CompileError');
    expect(both).toBeInstanceOf(CompileError);
    expect(both.message).toMatch(/^nvcc failed \(nvrtc failed too: k.cu:7: expected a ";"\)/);
    expect(both.log.indexOf('--- nvcc ---')).toBeLessThan(both.log.indexOf('--- nvrtc ---'));
  });
});

describe('system headers for NVRTC', () => {
  it('stands in for the C and C++ headers device code uses, and for host-only ones, and knows no others', () => {
    expect(systemHeaderStandIn('math.h')).toMatch(/#define M_PI +3\.14159265358979323846/);
    expect(systemHeaderStandIn('cmath')).toMatch(/#ifndef INFINITY\n#define INFINITY/);
    expect(systemHeaderStandIn('cfloat')).toMatch(/FLT_MAX 3\.40282346638528859811704183484516925e\+38F/);
    expect(systemHeaderStandIn('cstdint')).toMatch(/typedef long long int64_t;[\s\S]*using ::int64_t;/);
    expect(systemHeaderStandIn('iostream')).toMatch(/host header/);
    expect(systemHeaderStandIn('sys/time.h')).toMatch(/host header/);
    expect(systemHeaderStandIn('Eigen/Dense')).toBeUndefined();
    expect(isDeviceUsableToolkitHeader('cuda_bf16.h')).toBe(true);
    expect(isDeviceUsableToolkitHeader('cooperative_groups/reduce.h')).toBe(true);
    expect(isDeviceUsableToolkitHeader('cub/block/block_reduce.cuh')).toBe(true);
    expect(isDeviceUsableToolkitHeader('cublas_v2.h')).toBe(false);
    expect(isDeviceUsableToolkitHeader('nvtx3/nvToolsExt.h')).toBe(false);
  });
});
