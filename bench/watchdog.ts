// What a hanging configuration costs: a kernel whose hang_mode=1 configurations never end, tuned by brute force over
// rep x hang_mode, so that each hang follows a normal configuration (hang_mode 0) and precedes one that runs on the
// new worker (hang_mode 2). The watchdog's limit scales with the reference kernel (100x its time, at least 1 s); after a timeout the
// worker is killed and the next configuration starts a new one (CUDA context, helper kernels, test data).
//   node dist/bench/watchdog.js        (JSON also to $OUT/bench-watchdog.json when OUT is set)
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import { GpuBackend } from '../src/tuner/run/gpu-backend';
import { KernelTest, TunableKernel } from '../src/tuner/tunable-kernel';

const SOURCE = `__global__ void doubled(float *y, const float *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (hang_mode == 1) while (*(volatile float *)&y[0] != 12345.0f) {}  // y holds NaN before every checked run
  if (i < n) y[i] = 2.0f * x[i];
}
`;

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const backend = await GpuBackend.open();
  const device = (await backend.describe()).name;
  const kernel = await TunableKernel.create(SOURCE, { fileName: 'hang.cu' });
  const test = KernelTest.fromSpec({
    problemSize: 'n',
    arguments: { y: { dtype: 'float32', length: 'n', output: true }, x: { dtype: 'float32', length: 'n', random: { kind: 'uniform' } }, n: { dtype: 'int32', value: 1 << 24 } },
  });
  const rows: { config: string; status: string; wallMs: number }[] = [];
  let last = performance.now();
  const started = last;
  const result = await kernel.tune(test, { block_size_x: [256], rep: [1, 2, 3, 4], hang_mode: [0, 1, 2] }, [], {
    backend,
    iterations: 32,
    earlyStop: false,
    referenceConfig: { block_size_x: 256, rep: 1, hang_mode: 0 },
    onResult: (r) => {
      const now = performance.now();
      rows.push({ config: r.key, status: r.status, wallMs: now - last });
      last = now;
    },
  });
  const totalMs = performance.now() - started;
  await backend.dispose();
  const hung = rows.filter((r) => r.status === 'timeout');
  const afterHang = rows.filter((_, i) => i > 0 && rows[i - 1]!.status === 'timeout');
  // The first configuration also pays for timing the reference kernel: the others are the normal case.
  const normal = rows.filter((r, i) => r.status === 'ok' && i > 0 && rows[i - 1]!.status !== 'timeout');
  const mean = (xs: { wallMs: number }[]) => xs.reduce((a, r) => a + r.wallMs, 0) / Math.max(1, xs.length);
  const summary = {
    device,
    referenceMs: result.reference?.timeMs,
    launchLimitMs: Math.max(1000, Math.ceil(100 * (result.reference?.timeMs ?? 0))),
    hangingMs: mean(hung),
    afterHangMs: mean(afterHang),
    normalMs: mean(normal),
    totalMs,
    rows,
  };
  console.log(`${device}: reference kernel ${summary.referenceMs?.toFixed(4)} ms, launch limit ${summary.launchLimitMs} ms`);
  for (const r of rows) console.log(`  ${r.config.padEnd(10)} ${r.status.padEnd(8)} ${r.wallMs.toFixed(0).padStart(6)} ms`);
  console.log(`a hanging configuration: ${summary.hangingMs.toFixed(0)} ms; the one after it (new worker): ${summary.afterHangMs.toFixed(0)} ms; a normal one: ${summary.normalMs.toFixed(0)} ms`);
  writeBenchJson('watchdog', summary);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
