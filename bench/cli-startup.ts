// How long the command line takes from a cold process to its answer, and how big the bundles it loads are: each command
// in a fresh `node` (as a user or a script starts it), several times, the median reported. With a GPU `probe` is timed
// too (worker start, CUDA context, NVRTC compiles, verification and timing of five block sizes, all from cold).
// Then where the time of a cold `tune examples/vector_add/tune.yaml` goes: the phases the process marks (src/phases.ts:
// spec read, kernel file parsed, GPU worker ready, CUDA context, compile process ready, oracle, setup, search, speed
// limits, report) and its exit, with and without the HTML report, the first run with empty disk caches (a fresh
// TMPDIR: helper kernels, compiles) and the others with them filled. Without a GPU the tune runs on the fake addon
// (test/support/fake-addon.cjs: real worker processes, no CUDA) over 4096 elements: the process's own costs only.
//   node dist/bench/cli-startup.js [RUNS]        (JSON also to $OUT/bench-cli-startup.json when OUT is set)
// It runs the cli.js one folder up from itself: dist/cli.js here, dist-gpu/cli.js on the GPU machine.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

const repo = path.join(bundleDir, '..');

interface PhaseMark {
  phase: string;
  ms: number;
}

/** One cold `tune` process: its wall time and the phases it marked (ms since its start), in order. */
function tuneOnce(spec: string, flags: string[], env: Record<string, string>): { wallMs: number; exitCode: number | null; marks: PhaseMark[] } {
  const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-phases-'));
  const phasesFile = path.join(scratch, 'phases.jsonl');
  try {
    const started = performance.now();
    const r = spawnSync(process.execPath, [cli, 'tune', spec, '--quiet', ...flags], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env, LKT_PHASES_FILE: phasesFile } });
    const wallMs = performance.now() - started;
    if (r.status !== 0) throw new Error(`tune ${spec} ${flags.join(' ')} failed (exit ${r.status}):\n${r.stderr.toString()}`);
    const lines = readFileSync(phasesFile, 'utf8').trim().split('\n');
    const marks = lines.map((l) => JSON.parse(l) as PhaseMark & { pid: number }).filter((m) => m.pid === r.pid);
    return { wallMs, exitCode: r.status, marks: marks.sort((a, b) => a.ms - b.ms).map(({ phase, ms }) => ({ phase, ms })) };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Where the time of cold `tune` processes goes: the first with empty disk caches, the median of the others. */
function tunePhases(spec: string, flags: string[], runs: number, env: Record<string, string>) {
  const caches = mkdtempSync(path.join(tmpdir(), 'lkt-caches-'));
  try {
    const samples = Array.from({ length: runs + 1 }, () => tuneOnce(spec, flags, { ...env, TMPDIR: caches }));
    const summary = (of: typeof samples) => {
      const phases = [...new Set(of.flatMap((s) => s.marks.map((m) => m.phase)))];
      const at = phases.map((phase) => ({ phase, ms: median(of.map((s) => s.marks.find((m) => m.phase === phase)?.ms ?? NaN).filter((x) => !Number.isNaN(x))) }));
      at.sort((a, b) => a.ms - b.ms);
      return { wallMs: median(of.map((s) => s.wallMs)), phases: at };
    };
    return { emptyCaches: summary(samples.slice(0, 1)), filledCaches: summary(samples.slice(1)) };
  } finally {
    rmSync(caches, { recursive: true, force: true });
  }
}

function printPhases(title: string, s: { wallMs: number; phases: PhaseMark[] }): void {
  console.log(`  ${title}: ${s.wallMs.toFixed(0)} ms wall`);
  let previous = 0;
  for (const { phase, ms } of s.phases) {
    console.log(`    ${ms.toFixed(0).padStart(6)} ms  +${(ms - previous).toFixed(0).padStart(5)}  ${phase}`);
    previous = ms;
  }
  console.log(`    ${s.wallMs.toFixed(0).padStart(6)} ms  +${(s.wallMs - previous).toFixed(0).padStart(5)}  process exited (node's own start before 0 ms included)`);
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

  // The cold tune: the example as it is on a GPU; on the fake addon over 4096 elements (its memory is JavaScript's).
  const example = path.join(repo, 'examples', 'vector_add', 'tune.yaml');
  const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-startup-'));
  let spec = example;
  let env: Record<string, string> = {};
  if (noGpu) {
    spec = path.join(scratch, 'vector_add.yaml');
    writeFileSync(spec, readFileSync(example, 'utf8').replace('file: vector_add.cu', `file: ${path.join(repo, 'examples', 'vector_add', 'vector_add.cu')}`).replace('value: 67108864', 'value: 4096'));
    env = { LKT_GPU_ADDON_MODULE: path.join(repo, 'test', 'support', 'fake-addon.cjs') };
  }
  const report = path.join(scratch, 'report.html');
  const tune = {
    withReport: tunePhases(spec, ['--report', report], runs, env),
    noReport: tunePhases(spec, ['--no-report'], runs, env),
  };
  rmSync(scratch, { recursive: true, force: true });
  console.log(`\ncold \`tune ${path.relative(repo, example)}\` (${noGpu ? 'fake addon, 4096 elements: no GPU here' : 'on the GPU'}), phases ended at (ms since the process started), median of ${runs}:`);
  printPhases('with the HTML report, empty disk caches (first run)', tune.withReport.emptyCaches);
  printPhases('with the HTML report, caches filled', tune.withReport.filledCaches);
  printPhases('--no-report, empty disk caches (first run)', tune.noReport.emptyCaches);
  printPhases('--no-report, caches filled', tune.noReport.filledCaches);
  writeBenchJson('cli-startup', { node: process.version, runs, noGpu: noGpu || null, bundles, timings, tune });
}

main();
