// Native error codes → error classes, compiler log parsing, and the round trip of errors across the worker boundary.
import * as v8 from 'node:v8';
import { describe, expect, it } from 'vitest';
import {
  AbortError,
  ArgumentError,
  CompileError,
  CudaUnavailableError,
  GpuError,
  KernelFaultError,
  KernelTimeoutError,
  LaunchError,
  WorkerCrashedError,
  deserializeError,
  fromNativeError,
  poisonsContext,
  serializeError,
} from '../../src/gpu/errors';
import { parseDiagnostics, summarizeLog } from '../../src/gpu/diagnostics';

/** An Error as the addon throws it: message plus NativeErrorFields. */
function native(code: string, extra: Record<string, unknown> = {}): Error {
  return Object.assign(new Error(`${String(extra.call ?? 'cuX')} failed: ${code}`), { code, explanation: `about ${code}`, ...extra });
}

describe('fromNativeError', () => {
  it.each([
    ['CUDA_ERROR_ILLEGAL_ADDRESS', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_MISALIGNED_ADDRESS', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_ILLEGAL_INSTRUCTION', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_ASSERT', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_HARDWARE_STACK_ERROR', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_LAUNCH_FAILED', 'cuStreamSynchronize', KernelFaultError],
    ['CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES', 'cuLaunchKernel', LaunchError],
    ['CUDA_ERROR_INVALID_VALUE', 'cuLaunchKernel', LaunchError],
    ['CUDA_ERROR_INVALID_VALUE', 'cuFuncSetAttribute', LaunchError],
    ['CUDA_ERROR_NO_DEVICE', 'cuInit', CudaUnavailableError],
    ['CUDA_ERROR_NOT_INITIALIZED', 'cuDeviceGet', CudaUnavailableError],
    ['NVRTC_ERROR_COMPILATION', 'nvrtcCompileProgram', CompileError],
    ['NVRTC_ERROR_INVALID_OPTION', 'nvrtcCompileProgram', CompileError],
    ['INVALID_ARGUMENT', 'memAlloc', ArgumentError],
    ['CUDA_ERROR_LAUNCH_TIMEOUT', 'cuStreamSynchronize', KernelTimeoutError],
  ])('%s from %s → %o', (code, call, cls) => {
    const e = fromNativeError(native(code, { call, status: 700 }));
    expect(e).toBeInstanceOf(cls);
    expect(e).toMatchObject({ code, call, name: cls.name });
  });

  it('keeps a generic GpuError for other codes (an invalid value outside a launch is not a LaunchError)', () => {
    const e = fromNativeError(native('CUDA_ERROR_INVALID_VALUE', { call: 'cuMemAlloc' }));
    expect(e.constructor).toBe(GpuError);
    expect(e.message).toBe('cuMemAlloc failed: CUDA_ERROR_INVALID_VALUE');
    expect(fromNativeError(native('CUDA_ERROR_OUT_OF_MEMORY', { call: 'cuMemAlloc' })).constructor).toBe(GpuError);
  });

  it('names the missing library and what to install', () => {
    const cuda = fromNativeError(native('LIBRARY_NOT_FOUND', { library: 'libcuda' }));
    expect(cuda).toBeInstanceOf(CudaUnavailableError);
    expect(cuda).toMatchObject({ library: 'libcuda' });
    expect(cuda.message).toMatch(/libcuda\.so\.1.*Install the NVIDIA driver/);
    const nvrtc = fromNativeError(native('LIBRARY_NOT_FOUND', { library: 'libnvrtc' }));
    expect(nvrtc.message).toMatch(/libnvrtc.*cuda-nvrtc/);
    expect(fromNativeError(native('CUDA_ERROR_NO_DEVICE')).message).toMatch(/No CUDA device was found.*nvidia-smi/);
  });

  it('parses the NVRTC log of a failed compile', () => {
    const log = 'vadd.cu(12): error: identifier "x" is undefined\n      c[i] = x;\n             ^\n\n1 error detected in the compilation of "vadd.cu".\n';
    const e = fromNativeError(native('NVRTC_ERROR_COMPILATION', { call: 'nvrtcCompileProgram', log })) as CompileError;
    expect(e.log).toBe(log);
    expect(e.diagnostics).toEqual([{ file: 'vadd.cu', line: 12, severity: 'error', message: 'identifier "x" is undefined' }]);
    expect(e.message).toContain('vadd.cu(12): identifier "x" is undefined');
  });

  it('marks what poisons the context', () => {
    expect(poisonsContext(fromNativeError(native('CUDA_ERROR_ILLEGAL_ADDRESS')))).toBe(true);
    expect(poisonsContext(fromNativeError(native('CUDA_ERROR_LAUNCH_TIMEOUT')))).toBe(true);
    expect(poisonsContext(fromNativeError(native('CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES', { call: 'cuLaunchKernel' })))).toBe(false);
  });

  it('wraps errors without a code as INTERNAL, keeping the message', () => {
    const e = fromNativeError(new TypeError('x is not a function'));
    expect(e).toMatchObject({ code: 'INTERNAL', message: 'x is not a function' });
    const same = new LaunchError('m', { code: 'C', explanation: 'e' });
    expect(fromNativeError(same)).toBe(same);
  });
});

describe('parseDiagnostics', () => {
  it('reads NVRTC (EDG) errors, warnings with numbers, and catastrophic errors', () => {
    const log = [
      'kernel.cu(12): error: identifier "x" is undefined',
      '      c[i] = x;',
      '             ^',
      '',
      'kernel.cu(3): warning #177-D: variable "y" was declared but never referenced',
      'kernel.cu(2): error: #error directive: BLOCK must be 128',
      'kernel.cu(1): catastrophic error: cannot open source file "nope.h"',
      'kernel.cu(9): remark: something the user did not ask about',
      '2 errors detected in the compilation of "kernel.cu".',
    ].join('\n');
    expect(parseDiagnostics(log)).toEqual([
      { file: 'kernel.cu', line: 12, severity: 'error', message: 'identifier "x" is undefined' },
      { file: 'kernel.cu', line: 3, severity: 'warning', message: 'variable "y" was declared but never referenced' },
      { file: 'kernel.cu', line: 2, severity: 'error', message: '#error directive: BLOCK must be 128' },
      { file: 'kernel.cu', line: 1, severity: 'error', message: 'cannot open source file "nope.h"' },
    ]);
  });

  it("reads nvcc's output: EDG lines and the host preprocessor's file:line:column lines", () => {
    const log = [
      'k.cu:2:2: error: #error BLOCK must be 128',
      '    2 | #error BLOCK must be 128',
      '      |  ^~~~~',
      'e.cu:1:10: fatal error: nope.h: No such file or directory',
      'compilation terminated.',
      'e2.cu(4): error: expected a ";"',
      "ptxas error   : Entry function '_Z1fPf' uses too much shared data (0x13880 bytes, 0xc000 max)",
    ].join('\n');
    expect(parseDiagnostics(log)).toEqual([
      { file: 'k.cu', line: 2, column: 2, severity: 'error', message: '#error BLOCK must be 128' },
      { file: 'e.cu', line: 1, column: 10, severity: 'error', message: 'nope.h: No such file or directory' },
      { file: 'e2.cu', line: 4, severity: 'error', message: 'expected a ";"' },
    ]);
  });

  it('summarizes a log by its first error, or its first error line when nothing is located', () => {
    const log = 'a.cu(1): warning: w\na.cu(5): error: e1\na.cu(7): error: e2\na.cu(9): error: e3';
    expect(summarizeLog(log, parseDiagnostics(log))).toBe('a.cu(5): e1 (and 2 more errors)');
    const ptxas = "ptxas info : x\nptxas error   : Entry function 'f' uses too much shared data";
    expect(summarizeLog(ptxas, [])).toBe("ptxas error   : Entry function 'f' uses too much shared data");
  });
});

describe('serialization across the worker boundary', () => {
  const samples: GpuError[] = [
    new GpuError('plain', { code: 'CUDA_ERROR_OUT_OF_MEMORY', explanation: 'e', call: 'cuMemAlloc', details: { status: 2 } }),
    new CudaUnavailableError('no driver', { code: 'LIBRARY_NOT_FOUND', explanation: 'install', library: 'libcuda' }),
    new CompileError('bad', {
      code: 'NVRTC_ERROR_COMPILATION',
      explanation: 'e',
      log: 'k.cu(3): error: oops',
      diagnostics: [{ file: 'k.cu', line: 3, severity: 'error', message: 'oops' }],
    }),
    new LaunchError('too big', { code: 'LAUNCH_BLOCK_TOO_LARGE', explanation: 'e', call: 'launch' }),
    new KernelFaultError('fault', { code: 'CUDA_ERROR_ILLEGAL_ADDRESS', explanation: 'e' }),
    new KernelTimeoutError('slow', { code: 'TIMEOUT', explanation: 'e', method: 'launch', timeoutMs: 2000 }),
    new WorkerCrashedError('died', { code: 'WORKER_CRASHED', explanation: 'e', exitCode: null, signal: 'SIGSEGV' }),
    new ArgumentError('Expected a positive integer for block[0] but received -1', { code: 'INVALID_ARGUMENT', explanation: 'e' }),
    new AbortError('aborted', { code: 'ABORTED', explanation: 'e' }),
  ];

  it.each(samples.map((e) => [e.name, e] as const))('%s comes back as the same class with the same fields', (_, e) => {
    // v8.serialize is what child_process's 'advanced' serialization does with the plain object.
    const back = deserializeError(v8.deserialize(v8.serialize(serializeError(e))));
    expect(back.constructor).toBe(e.constructor);
    expect(back).toBeInstanceOf(GpuError);
    expect({ ...back, message: back.message }).toEqual({ ...e, message: e.message });
  });

  it('turns an unknown class name into a GpuError with the same code', () => {
    const back = deserializeError({ name: 'FutureError', message: 'm', code: 'X', explanation: 'e' });
    expect(back.constructor).toBe(GpuError);
    expect(back).toMatchObject({ message: 'm', code: 'X' });
  });
});
