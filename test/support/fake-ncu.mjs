#!/usr/bin/env node
// TEST DOUBLE of Nsight Compute's command line (ncu), for profileKernel's tests in CI (no GPU, no ncu). It accepts the
// options profile.ts passes, runs the profiled command as ncu does (so the worker's --profile entry really runs, on
// the fake addon), and prints the captured raw-page CSV of test/fixtures/ncu/matmul_naive-raw.csv, cut to the metrics
// asked for and named after --kernel-name. Like a careful ncu user it refuses to run without --clock-control none.
// Env: FAKE_NCU_NO_PERMISSION=1 answers as a driver that refuses the performance counters (ERR_NVGPUCTRPERM);
// FAKE_NCU_UNKNOWN_METRIC=NAME fails as ncu does for a metric this GPU lacks; FAKE_NCU_SLEEP_MS=N hangs N ms first.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'ncu');
const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);

if (option('--clock-control') !== 'none') {
  console.log('==ERROR== fake ncu: refusing to profile with locked clocks (pass --clock-control none)');
  process.exit(3);
}
if (process.env.FAKE_NCU_SLEEP_MS) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Number(process.env.FAKE_NCU_SLEEP_MS));
const metrics = option('--metrics').split(',');
if (process.env.FAKE_NCU_UNKNOWN_METRIC && metrics.includes(process.env.FAKE_NCU_UNKNOWN_METRIC)) {
  console.log(`==ERROR== Failed to find metric ${process.env.FAKE_NCU_UNKNOWN_METRIC}`);
  process.exit(1);
}
const command = args.slice(args.indexOf('--metrics') + 2);
const app = spawnSync(command[0], command.slice(1), { stdio: 'inherit' });
if (process.env.FAKE_NCU_NO_PERMISSION) {
  process.stdout.write(readFileSync(join(fixtures, 'counters-not-permitted.txt'), 'utf8'));
  process.exit(1);
}
if (app.status !== 0) {
  console.log(`==PROF== Disconnected from process ${app.pid}\n==WARNING== No kernels were profiled.`);
  process.exit(app.status ?? 1);
}
const lines = readFileSync(join(fixtures, 'matmul_naive-raw.csv'), 'utf8').trimEnd().split('\n');
const table = lines.filter((l) => l.startsWith('"')).map((l) => l.slice(1, -1).split('","'));
const keep = table[0].map((name, i) => i < 11 || metrics.includes(name));
const kernelName = option('--kernel-name');
for (const line of lines.filter((l) => !l.startsWith('"'))) console.log(line);
table.forEach((cells, row) => {
  const out = cells.map((c, i) => (row === 2 && i === 4 ? kernelName : c)).filter((_, i) => keep[i]);
  console.log(`"${out.join('","')}"`);
});
