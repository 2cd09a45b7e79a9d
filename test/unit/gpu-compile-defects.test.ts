// Issue 17's compile defects at the GPU layer, with the real nvcc where it is installed: the hint that a tunable
// parameter clashes with a header only where renaming it makes the error go away, and static shared memory over the
// device's limit as a DeviceLimitError with the numbers (a limit of the device, not a mistake in the code).
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CompileError, DeviceLimitError, NvccCompiler, deserializeError, fromNativeError, serializeError, type ProgramInit } from '../../src/gpu';
import { confirmedDefineClashes, withDefineClashHint } from '../../src/gpu/define-clash';
import { sharedMemoryOverLimit } from '../../src/gpu/errors';
import { findNvcc } from '../../src/gpu/toolkit';

const nvcc = new NvccCompiler({ defaultArch: 'sm_90' });
const temps: string[] = [];
afterEach(() => {
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A directory holding `files`, as an include path on disk (a header the rename must leave alone). */
function includeDir(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lkt-clash-'));
  temps.push(dir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

async function compileError(program: ProgramInit): Promise<CompileError> {
  const e = await nvcc.compile(program).then(() => undefined, (x: unknown) => x);
  expect(e).toBeInstanceOf(CompileError);
  return e as CompileError;
}

/** The compiler again, counting how often the check asked for it. */
function counted(): { compileAgain: (p: ProgramInit) => Promise<unknown>; calls: ProgramInit[] } {
  const calls: ProgramInit[] = [];
  return { calls, compileAgain: (p) => (calls.push(p), nvcc.compile(p)) };
}

describe.skipIf(!findNvcc())('the define-clash hint appears only where the clash is the cause', () => {
  it('a parameter that is a word of a CUDA header (`mode`): confirmed by compiling with it renamed, and hinted', async () => {
    const program: ProgramInit = {
      source: 'extern "C" __global__ void k(int* out) { out[0] = mode; }\n',
      fileName: 'kernel.cu',
      nameExpressions: ['k'],
      defines: { mode: 1, block_size_x: 64 },
    };
    const error = await compileError(program);
    const { compileAgain, calls } = counted();
    const clashes = await confirmedDefineClashes(error, program, compileAgain);
    expect(clashes).toEqual([{ name: 'mode', at: expect.stringMatching(/^cuda_runtime_api\.h:\d+: .*\bmode\)/) }]);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.defines).toEqual({ mode__lkt_renamed: 1, block_size_x: 64 });
    const hinted = await withDefineClashHint(error, program, compileAgain);
    expect(hinted.message).toMatch(/The tunable parameter 'mode' is also a name in a header \(cuda_runtime_api\.h:\d+: .*\): parameters are #defines, so rename it to something no header uses \(e\.g\. 'mode_value'\)\.$/);
    expect(hinted.log).toBe(error.log);
  });

  it('a missing ";" before a header that uses the parameter: the error stays when it is renamed, so no hint', async () => {
    const dir = includeDir({ 'tile.h': 'static const int tile_width = block_size_x;\n' });
    const program: ProgramInit = {
      source: 'int missing_semicolon = 3\n#include "tile.h"\nextern "C" __global__ void k(int* out) { out[0] = tile_width * block_size_x; }\n',
      fileName: 'kernel.cu',
      nameExpressions: ['k'],
      defines: { block_size_x: 64 },
      includePaths: [dir],
    };
    const error = await compileError(program);
    expect(error.diagnostics.some((d) => d.file.endsWith('tile.h') && d.line === 1)).toBe(true); // the suspect line
    const { compileAgain, calls } = counted();
    const hinted = await withDefineClashHint(error, program, compileAgain);
    expect(calls).toHaveLength(1);
    expect(hinted).toBe(error);
    expect(hinted.message).not.toMatch(/also a name in a header/);
  });

  it('a syntax error in the kernel itself, on a line naming the parameter: not a suspect, nothing compiled again', async () => {
    const program: ProgramInit = {
      source: 'extern "C" __global__ void k(float* out) {\n  int i = blockIdx.x * block_size_x + threadIdx.x\n  out[i] = block_size_x;\n}\n',
      fileName: 'kernel.cu',
      nameExpressions: ['k'],
      defines: { block_size_x: 64 },
    };
    const error = await compileError(program);
    const { compileAgain, calls } = counted();
    expect(await withDefineClashHint(error, program, compileAgain)).toBe(error);
    expect(calls).toEqual([]);
  });
});

describe('static shared memory over the device\'s limit', () => {
  it('is read from ptxas\'s report, old and new spelling', () => {
    expect(sharedMemoryOverLimit("ptxas error   : Entry function '_Z4tilePf' uses too much shared data (0xcb20 bytes, 0xc000 max)")).toEqual({
      resource: 'static shared memory',
      kernel: '_Z4tilePf',
      usedBytes: 52000,
      limitBytes: 49152,
    });
    expect(sharedMemoryOverLimit("ptxas error   : Entry function 'scan' uses too much shared data (0x4010 bytes + 0x10 bytes system, 0x4000 max)")).toMatchObject({ usedBytes: 0x4020, limitBytes: 0x4000 });
    expect(sharedMemoryOverLimit('kernel.cu(3): error: expected a ";"')).toBeUndefined();
  });

  it.skipIf(!findNvcc())('nvcc: a DeviceLimitError (still a CompileError) with the numbers', async () => {
    const source = 'extern "C" __global__ void big(float* out) {\n  __shared__ float s[13000];\n  s[threadIdx.x] = 1.f;\n  __syncthreads();\n  out[threadIdx.x] = s[(threadIdx.x * 7) % 13000];\n}\n';
    const e = await nvcc.compile({ source, nameExpressions: ['big'] }).then(() => undefined, (x: unknown) => x);
    expect(e).toBeInstanceOf(DeviceLimitError);
    expect(e).toBeInstanceOf(CompileError);
    const limit = (e as DeviceLimitError).limit;
    expect(limit).toEqual({ resource: 'static shared memory', kernel: 'big', usedBytes: 52000, limitBytes: 49152 });
    expect((e as DeviceLimitError).message).toBe("Kernel big uses 52000 bytes of static shared memory, more than the device's limit of 49152 bytes per block (ptxas: \"uses too much shared data\")");
    expect((e as DeviceLimitError).log).toMatch(/uses too much shared data/);
  });

  it('NVRTC: the same from the worker, and it crosses the worker boundary with its class and numbers', () => {
    const log = "ptxas error   : Entry function '_Z3bigPf' uses too much shared data (0xcb20 bytes, 0xc000 max)\n";
    const native = Object.assign(new Error('nvrtcCompileProgram failed'), { code: 'NVRTC_ERROR_COMPILATION', call: 'nvrtcCompileProgram', explanation: 'x', log });
    const e = fromNativeError(native);
    expect(e).toBeInstanceOf(DeviceLimitError);
    const back = deserializeError(serializeError(e));
    expect(back).toBeInstanceOf(DeviceLimitError);
    expect((back as DeviceLimitError).limit).toEqual({ resource: 'static shared memory', kernel: '_Z3bigPf', usedBytes: 52000, limitBytes: 49152 });
    expect((back as DeviceLimitError).log).toBe(log);
    expect(back.details).toMatchObject({ backend: 'nvrtc' });
  });
});
