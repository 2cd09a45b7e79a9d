// The speed limits a report needs are measured once per GPU and kept on disk: a later run on the same GPU (a new
// process, a new backend) reuses them instead of spending another second copying memory. The GPU is the fake addon
// (test/support/fake-addon.cjs) behind real worker processes.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { GpuBackend } from '../../src/tuner/run/gpu-backend';

const env = { LKT_GPU_ADDON_MODULE: path.resolve(__dirname, '../support/fake-addon.cjs') };
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-speed-limits-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function limitsOf(cacheDir: string, device = 0) {
  const backend = await GpuBackend.open({ env: { ...env, LKT_FAKE_DEVICE_COUNT: '2' }, cacheDir, device });
  try {
    let copies = 0;
    // Counts the driver's copies the bandwidth measurement times (its yardstick), and lets them run.
    const benchmarkCopy = backend.gpu.benchmarkCopy.bind(backend.gpu);
    backend.gpu.benchmarkCopy = (...args: Parameters<typeof benchmarkCopy>) => (copies++, benchmarkCopy(...args));
    return { limits: await backend.speedLimits(), copies };
  } finally {
    await backend.dispose();
  }
}

describe('speed limits kept per GPU', () => {
  it('measures once, and a later backend on the same GPU reuses the measurement and says when it was made', async () => {
    const cacheDir = path.join(scratch, 'kept');
    const first = await limitsOf(cacheDir);
    expect(first.copies).toBeGreaterThan(0);
    expect(first.limits.bandwidthMethod).toMatch(/^copy kernel \(uint4/);
    expect(readdirSync(cacheDir).filter((f) => f.startsWith('speed-limits-'))).toHaveLength(1);

    const again = await limitsOf(cacheDir);
    expect(again.copies).toBe(0);
    expect(again.limits.bandwidthGBps).toBe(first.limits.bandwidthGBps);
    expect(again.limits.bandwidthMethod).toMatch(/^copy kernel \(uint4.* \(measured on this GPU at \d{4}-\d\d-\d\dT/);

    // Another GPU of the host is measured on its own.
    const other = await limitsOf(cacheDir, 1);
    expect(other.copies).toBeGreaterThan(0);
    expect(readdirSync(cacheDir).filter((f) => f.startsWith('speed-limits-'))).toEqual([expect.stringMatching(/\.json$/), expect.stringMatching(/\.json$/)]);
  }, 60_000);
});
