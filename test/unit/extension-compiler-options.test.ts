import { describe, expect, it } from 'vitest';
import { refusedCompilerOptions } from '../../src/extension/compiler-options';
import { readEngineConfig, setByWorkspace } from '../../src/extension/config';

describe('kernelTuner.compilerOptions: the options the tuner passes to the compiler', () => {
  it('takes defines, includes, the language and the device code options, in their short, long, attached and separate forms', () => {
    const allowed = [
      ['-DN=4096', '-D', 'USE_BF16', '--define-macro=TILE=16', '-UNDEBUG', '--undefine-macro', 'LEGACY'],
      ['-I/opt/include', '-I', 'include', '--include-path=third_party', '-isystem', '/usr/local/cuda/include', '--system-include=/opt/x'],
      ['-std=c++17', '--std=c++20', '--expt-relaxed-constexpr', '--extended-lambda', '-rdc=true', '--relocatable-device-code', 'false'],
      ['--use_fast_math', '-use_fast_math', '-ftz=true', '--prec-div=false', '-prec-sqrt', 'false', '--fmad=true'],
      ['-arch=sm_90a', '--gpu-architecture', 'compute_80', '-maxrregcount=64', '--maxrregcount', '32'],
      ['-lineinfo', '--generate-line-info', '-G', '--device-debug', '--restrict', '-w'],
    ];
    for (const options of allowed) expect(refusedCompilerOptions(options), options.join(' ')).toEqual([]);
  });

  it('refuses what names a program to run, passes options on, writes files or reads more options, saying why', () => {
    expect(refusedCompilerOptions(['-DN=1', '-ccbin', '/tmp/evil', '--compiler-bindir=/tmp/evil', '-Xcompiler', '-fplugin=x.so', '-o', '/etc/passwd', '@opts.txt', '--options-file', 'o.txt', '--run', '-O3'])).toEqual([
      { option: '-ccbin /tmp/evil', why: 'it names the host compiler nvcc runs' },
      { option: '--compiler-bindir=/tmp/evil', why: 'it names the host compiler nvcc runs' },
      { option: '-Xcompiler -fplugin=x.so', why: 'it passes options on to another program' },
      { option: '-o /etc/passwd', why: 'it writes files where it says' },
      { option: '@opts.txt', why: 'it reads more options from a file' },
      { option: '--options-file o.txt', why: 'it reads more options from a file' },
      { option: '--run', why: 'it runs a program' },
      { option: '-O3', why: 'it is not an option the tuner needs' },
    ]);
  });

  it('refuses an allowed flag with a value it does not take, or none', () => {
    expect(refusedCompilerOptions(['-std=gnu++17', '-arch=native', '-I', '-ccbin', '-maxrregcount'])).toEqual([
      { option: '-std=gnu++17', why: 'its value is not one the tuner takes' },
      { option: '-arch=native', why: 'its value is not one the tuner takes' },
      { option: '-I -ccbin', why: 'its value is not one the tuner takes' },
      { option: '-maxrregcount', why: 'it is not an option the tuner needs' },
    ]);
  });

  it('makes a refused option a problem of the setting, with what it takes instead', () => {
    const result = readEngineConfig((key) => ({ 'llm.model': 'm', compilerOptions: ['-DN=1', '-ccbin', 'sh'] })[key], undefined);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems).toEqual([
      {
        setting: 'kernelTuner.compilerOptions',
        message:
          'has options the tuner does not pass to the compiler: -ccbin sh (it names the host compiler nvcc runs). It takes -D, -U, -I, -isystem, -std, -rdc, -ftz, -prec-div, -prec-sqrt, -fmad, -arch, -maxrregcount, --expt-relaxed-constexpr, --expt-extended-lambda, --use_fast_math, -lineinfo, -G, --restrict, -w and their long forms',
      },
    ]);
  });
});

describe('where a setting comes from', () => {
  it("is the workspace's when a folder's or the workspace's settings give it a value, else the user's", () => {
    expect(setByWorkspace({ workspaceValue: 'http://evil.example/v1' })).toBe(true);
    expect(setByWorkspace({ workspaceFolderValue: 'http://evil.example/v1' })).toBe(true);
    expect(setByWorkspace({ workspaceValue: '  ' })).toBe(false);
    expect(setByWorkspace({})).toBe(false);
    expect(setByWorkspace(undefined)).toBe(false);
  });
});
