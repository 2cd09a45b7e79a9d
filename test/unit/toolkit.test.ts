// Finding the CUDA toolkit as a developer's tools do, and a project's own build flags in compile_commands.json.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findCudaToolkit } from '../../src/gpu/toolkit';
import { buildFlagsFor, flagsOf, splitCommand } from '../../src/tuner/compile/compile-commands';

const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-toolkit-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function file(relative: string, text = ''): string {
  const full = path.join(scratch, relative);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, text);
  return full;
}

/** A toolkit's layout: include/ with the runtime header, optionally include/cccl and bin/nvcc. */
function toolkitAt(root: string, { cccl = false, nvcc = false } = {}): string {
  file(`${root}/include/cuda_runtime.h`);
  if (cccl) file(`${root}/include/cccl/cuda/std/cstdint`);
  if (nvcc) chmodSync(file(`${root}/bin/nvcc`, '#!/bin/sh\n'), 0o755);
  return path.join(scratch, root);
}

describe('findCudaToolkit', () => {
  const home = toolkitAt('cuda-home', { cccl: true, nvcc: true });
  const onPath = toolkitAt('cuda-on-path', { nvcc: true });
  const usual = toolkitAt('opt-cuda');

  it('takes $CUDA_HOME first, with its libcu++ directory and nvcc', () => {
    expect(findCudaToolkit({ env: { CUDA_HOME: home, PATH: path.join(onPath, 'bin') }, locations: [usual] })).toEqual({
      root: home,
      includeDirs: [path.join(home, 'include'), path.join(home, 'include', 'cccl')],
      nvcc: path.join(home, 'bin', 'nvcc'),
      foundBy: '$CUDA_HOME',
    });
  });

  it('then the nvcc on PATH, then the toolkit beside the loaded NVRTC, then the usual locations', () => {
    expect(findCudaToolkit({ env: { CUDA_HOME: path.join(scratch, 'nowhere'), PATH: path.join(onPath, 'bin') }, locations: [usual] })?.foundBy).toBe('the nvcc on PATH');
    const lib = file('cuda-libs/lib64/libnvrtc.so.13');
    toolkitAt('cuda-libs');
    expect(findCudaToolkit({ env: {}, nvrtcLibrary: lib, locations: [usual] })).toMatchObject({ root: path.join(scratch, 'cuda-libs'), foundBy: `beside ${lib}` });
    expect(findCudaToolkit({ env: {}, locations: [usual] })).toMatchObject({ root: usual, nvcc: null });
  });

  it("finds the headers of NVRTC's pip wheel (nvidia/cuda_nvrtc/lib beside nvidia/cuda_runtime/include)", () => {
    const lib = file('site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12');
    file('site-packages/nvidia/cuda_runtime/include/cuda_fp16.h');
    expect(findCudaToolkit({ env: {}, nvrtcLibrary: lib, locations: [] })).toEqual({
      root: null,
      includeDirs: [path.join(scratch, 'site-packages/nvidia/cuda_runtime/include')],
      nvcc: null,
      foundBy: `beside ${lib}`,
    });
  });

  it('is null where there is no toolkit', () => {
    expect(findCudaToolkit({ env: { PATH: '' }, locations: [path.join(scratch, 'nowhere')] })).toBeNull();
  });
});

describe('compile_commands.json', () => {
  it('splits a command line as a shell does', () => {
    expect(splitCommand(`nvcc -I"dir with space" -DNAME='"quoted"' -DX=1\\ 2 a.cu`)).toEqual(['nvcc', '-Idir with space', '-DNAME="quoted"', '-DX=1 2', 'a.cu']);
  });

  it('keeps include directories, defines and the language options that change device code', () => {
    const flags = flagsOf(['-I', 'inc', '-isystem/opt/x', '--include-path=rel', '-DENABLE_BF16', '-D', 'N=4', '-UOLD', '-std=c++17', '--expt-relaxed-constexpr', '-O3', '-arch=sm_90', '-o', 'a.o', '-c', 'a.cu'], '/proj/build');
    expect(flags).toEqual({ includePaths: ['/proj/build/inc', '/opt/x', '/proj/build/rel'], options: ['-DENABLE_BF16', '-DN=4', '-UOLD', '-std=c++17', '--expt-relaxed-constexpr'] });
  });

  it("reads the nearest database that lists the file, in the file's directory or an ancestor's build/", () => {
    const source = file('proj/src/kernels/k.cu');
    file(
      'proj/build/compile_commands.json',
      JSON.stringify([
        { directory: path.join(scratch, 'proj/build'), file: '../src/other.cu', command: 'nvcc -Iwrong -c ../src/other.cu' },
        { directory: path.join(scratch, 'proj/build'), file: path.join(scratch, 'proj/src/kernels/k.cu'), arguments: ['/usr/local/cuda/bin/nvcc', '-I../include', '-DUSE_FAST=1', '-c', 'k.cu'] },
      ]),
    );
    expect(buildFlagsFor(source, path.join(scratch, 'proj'))).toEqual({
      source: path.join(scratch, 'proj/build/compile_commands.json'),
      includePaths: [path.join(scratch, 'proj/include')],
      options: ['-DUSE_FAST=1'],
    });
    expect(buildFlagsFor(file('elsewhere/k.cu'), scratch)).toBeUndefined();
  });
});
