/**
 * TEST ONLY: the module the extension loads through its test hook (KERNEL_TUNER_TEST_BACKEND, see
 * src/extension/extension.ts). Sessions then run on the fake backend (test/support/fake-backend.ts) instead of the GPU:
 * compiles accepted as they are, correctness from the scripted WRONG_MARKER, times from the model below. Bundled to
 * dist/extension-tests/test-backend.js.
 */
import { existsSync } from 'node:fs';
import type { TuningBackend } from '../../src/tuner/run/backend';
import { FakeBackend, largestBuffer, type FakeVariant } from '../support/fake-backend';

/** 1 ns per element; the scripted "slightly faster" rewrite gains 0.5 %, the block-aware one 40 % at 512 threads. */
function saxpyTime(v: FakeVariant): number {
  const base = largestBuffer(v.test) * 1e-6;
  if (v.source.includes('FAKE_SLIGHTLY_FASTER')) return base * 0.995;
  if (v.source.includes('FAKE_BLOCK_AWARE')) {
    const block = Number(v.defines.block_size_x ?? 256);
    return base * (block === 512 ? 0.6 : 0.7 + Math.abs(Math.log2(block / 512)) * 0.05);
  }
  return base;
}

/** Every backend made here, newest last, kept on globalThis: the extension tests (same host) read what sessions asked for. */
export const testBackends: FakeBackend[] = ((globalThis as { kernelTunerTestBackends?: FakeBackend[] }).kernelTunerTestBackends ??= []);

/**
 * While the file that KERNEL_TUNER_TEST_NO_GPU names exists, the machine stands for one without a usable GPU: opening
 * fails as the GPU layer's does where the NVIDIA driver is missing, worded as the engine words it (plain data: this
 * module's classes are not the engine's).
 */
export const NO_GPU_ENV = 'KERNEL_TUNER_TEST_NO_GPU';

export async function createTuningBackend(): Promise<TuningBackend> {
  const noGpu = process.env[NO_GPU_ENV];
  if (noGpu && existsSync(noGpu)) {
    throw { kind: 'gpu-unavailable', message: 'CUDA is not available: libcuda.so.1 (the NVIDIA driver library) could not be loaded (the test backend stands for a machine without a GPU)' };
  }
  // Each timing takes a moment, so that a person watching the UI test sees the configurations arrive.
  const backend = new FakeBackend({ model: { timeMs: saxpyTime }, compile: 'none', timeDelayMs: Number(process.env.KERNEL_TUNER_TEST_DELAY_MS ?? 0) });
  testBackends.push(backend);
  return backend;
}
