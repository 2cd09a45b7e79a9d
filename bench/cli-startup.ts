// How long the command line takes from a cold process to its answer, and how big the bundles it loads are: each command
// in a fresh `node` (as a user or a script starts it), several times, the median reported. With a GPU `probe` is timed
// too (worker start, CUDA context, NVRTC compiles, verification and timing of five block sizes, all from cold).
//   node dist/bench/cli-startup.js [RUNS]        (JSON also to $OUT/bench-cli-startup.json when OUT is set)
// It runs the cli.js one folder up from itself: dist/cli.js here, dist-gpu/cli.js on the GPU machine.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';

const bundleDir = path.join(__dirname, '..');
const cli = path.join(bundleDir, 'cli.js');

/** The median wall time of `node cli.js ...args` over `runs` fresh processes, and the exit status of the last one. */
function time(args: string[], runs: number): { medianMs: number; minMs: number; exitCode: number | null } {
  const samples: number[] = [];
  let exitCode: number | null = null;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const r = spawnSync(process.execPath, [cli, ...args], { stdio: 'ignore' });
    samples.push(performance.now() - started);
    exitCode = r.status;
  }
  samples.sort((a, b) => a - b);
  return { medianMs: samples[Math.floor(samples.length / 2)]!, minMs: samples[0]!, exitCode };
}

function main(): void {
  const runs = Number(process.argv[2] ?? 7);
  const bundles = Object.fromEntries(
    readdirSync(bundleDir)
      .filter((f) => /^cli(-[\w-]+)?\.js$/.test(f))
      .map((f) => [f, statSync(path.join(bundleDir, f)).size]),
  );
  const noGpu = gpuSkipReason();
  const commands: string[][] = [['--help'], ['devices'], ['tune', '--help'], ['auto', '--help'], ...(noGpu ? [] : [['probe']])];
  const timings = commands.map((args) => ({ command: args.join(' '), ...time(args, runs) }));
  console.log(`cli bundles in ${bundleDir}:`);
  for (const [file, bytes] of Object.entries(bundles)) console.log(`  ${file.padEnd(16)} ${(bytes / 1024).toFixed(0).padStart(6)} KiB`);
  console.log(`\nwall time of a fresh process, median of ${runs} (${noGpu ? `no GPU: ${noGpu}; probe not timed` : 'with a GPU'}):`);
  for (const t of timings) console.log(`  ${t.command.padEnd(12)} ${t.medianMs.toFixed(0).padStart(6)} ms  (min ${t.minMs.toFixed(0)} ms, exit ${t.exitCode})`);
  writeBenchJson('cli-startup', { node: process.version, runs, noGpu: noGpu || null, bundles, timings });
}

main();
