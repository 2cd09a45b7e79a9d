// Speed-of-light arithmetic (achieved bandwidth and FLOP/s, the FP32 formula), the work model of a launch, and the
// spec's flops/bytes fields.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeBufferBytes } from '../../src/gpu/bandwidth';
import { achieved, compulsoryBytes, fp32LanesPerSm, fp32PeakFlops, type DeviceSpeedLimits } from '../../src/tuner/run/speed-of-light';
import { loadTuningSpec, tuningJob, TuningSpecError } from '../../src/tuner/spec/tuning-spec';

const limits: DeviceSpeedLimits = { bandwidthGBps: 4000, bandwidthMethod: 'copy kernel', memcpyGBps: 4100, fp32GFlops: 66_900, fp32Formula: '' };

describe('speed of light', () => {
  it('states the FP32 peak of an H100 SXM by the formula (132 SMs x 128 lanes x 2 x 1.98 GHz)', () => {
    const peak = fp32PeakFlops({ multiprocessors: 132, clockRateKHz: 1_980_000, computeCapability: [9, 0] })!;
    expect(peak.flops).toBe(132 * 128 * 2 * 1_980_000 * 1e3);
    expect(peak.formula).toBe('132 SMs x 128 FP32 lanes x 2 (FMA) x 1.98 GHz = 66.9 TFLOP/s');
    // An A100 has 64 FP32 lanes per SM: 108 x 64 x 2 x 1.41 GHz = 19.5 TFLOP/s, as NVIDIA states it.
    expect(fp32PeakFlops({ multiprocessors: 108, clockRateKHz: 1_410_000, computeCapability: [8, 0] })!.flops / 1e12).toBeCloseTo(19.49, 2);
    expect([[6, 0], [7, 5], [8, 6], [8, 9], [5, 2], [12, 0]].map((cc) => fp32LanesPerSm(cc as [number, number]))).toEqual([64, 64, 128, 128, 128, 128]);
    expect(fp32PeakFlops({ multiprocessors: 132, clockRateKHz: 0, computeCapability: [9, 0] })).toBeNull();
    expect(fp32PeakFlops({ multiprocessors: 16, clockRateKHz: 1e6, computeCapability: [3, 5] })).toBeNull();
  });

  it('divides the work by the time, and by the limits for the percentages', () => {
    // 2 GB moved and 10 GFLOP in 1 ms: 2000 GB/s (50 % of 4000) and 10 TFLOP/s (14.9 % of 66.9).
    const a = achieved(1, { bytes: 2e9, flops: 1e10, source: '' }, limits);
    expect(a.GBps).toBeCloseTo(2000, 9);
    expect(a.bandwidthPct).toBeCloseTo(50, 9);
    expect(a.GFlops).toBeCloseTo(10_000, 9);
    expect(a.flopsPct).toBeCloseTo((100 * 10_000) / 66_900, 9);
    expect(achieved(2, { bytes: 1e9, source: '' })).toEqual({ GBps: 500 });
    expect(achieved(2, { bytes: 1e9, source: '' }, { ...limits, fp32GFlops: null })).toEqual({ GBps: 500, bandwidthPct: 12.5 });
  });

  it('counts an input once, an output once and an in/out buffer twice', () => {
    expect(compulsoryBytes([{ bytes: 100, output: false, inOut: false }, { bytes: 10, output: true, inOut: false }, { bytes: 1, output: true, inOut: true }])).toBe(112);
  });

  it('sizes the probe far above L2 within a quarter of free memory', () => {
    expect(probeBufferBytes(50 << 20, 100 * 2 ** 30)).toBe(512 << 20);
    expect(probeBufferBytes(128 << 20, 100 * 2 ** 30)).toBe(1024 << 20);
    expect(probeBufferBytes(50 << 20, 1 * 2 ** 30)).toBe(256 << 20);
  });
});

describe('spec flops and bytes', () => {
  it('evaluates the spec\'s flops over its scalars, and bytes from the buffers when not given', async () => {
    const job = await tuningJob(loadTuningSpec(join(__dirname, '../../examples/matmul_tiled/tune.yaml')));
    const n = 4096;
    expect(job.work).toEqual({ flops: 2 * n ** 3, bytes: 3 * n * n * 4, source: `bytes: the buffers' sizes (each input read once, each output written once); flops: "2*n*n*n" (the spec)` });
  });

  const specWith = (extra: string) => {
    const dir = mkdtempSync(join(tmpdir(), 'lkt-sol-'));
    writeFileSync(join(dir, 'k.cu'), '__global__ void k(float *y, const float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n');
    writeFileSync(
      join(dir, 'tune.yaml'),
      `file: k.cu\nproblemSize: n\narguments:\n  y: { dtype: float32, length: n, output: true }\n  x: { dtype: float32, length: n }\n  n: { dtype: int32, value: 1024 }\ntuneParams: { block_size_x: [128] }\n${extra}\n`,
    );
    return join(dir, 'tune.yaml');
  };

  it('takes bytes as given, numbers or expressions', async () => {
    expect((await tuningJob(loadTuningSpec(specWith('bytes: 8*n\nflops: n')))).work).toMatchObject({ bytes: 8192, flops: 1024 });
    expect((await tuningJob(loadTuningSpec(specWith('bytes: 5000')))).work).toMatchObject({ bytes: 5000 });
    expect((await tuningJob(loadTuningSpec(specWith('')))).work).toEqual({ bytes: 8192, source: expect.stringContaining('flops: not given') });
  });

  it('names a bad expression or a negative number', async () => {
    await expect(tuningJob(loadTuningSpec(specWith('flops: 2*m')))).rejects.toThrow(TuningSpecError);
    await expect(tuningJob(loadTuningSpec(specWith('flops: 2*m')))).rejects.toThrow(/flops "2\*m"/);
    expect(() => loadTuningSpec(specWith('bytes: -1'))).toThrow(/bytes/);
  });
});
