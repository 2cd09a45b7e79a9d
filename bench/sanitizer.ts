// Issue 25's benchmark: what running a candidate's best configuration under compute-sanitizer costs before it is
// accepted (memcheck, racecheck, synccheck, initcheck, each a process of its own around one launch, on the smallest
// test made small without changing a block's shape; TunableKernel.sanitize).
//  1. The examples: each spec's best of a small random sample, then that configuration sanitized REPEATS times: the
//     check's wall time (median), each tool's, the launch it ran (the reduced problem), against the sample's search.
//  2. The expert session of matmul_naive replayed twice through the whole graph, with and without the check: each
//     step's verdict and check time, and the graph's wall time either way (the check's share of a session).
//   node dist/bench/sanitizer.js        (JSON also to $OUT/bench-sanitizer.json when OUT is set)
import * as path from 'node:path';
import { EXAMPLE_NAMES, loadExample } from '../examples/load';
import type { EventOf } from '../src/engine/progress/events';
import { median } from '../src/gpu/stats';
import { findComputeSanitizer, sanitizerVersion } from '../src/gpu/sanitizer/find';
import { SANITIZER_TOOLS, type SanitizerTool } from '../src/gpu/sanitizer/report';
import { GpuBackend } from '../src/tuner/run/gpu-backend';
import { describeReduction, describeVerdict, type SanitizerVerdict } from '../src/tuner/run/sanitizer';
import type { Config } from '../src/tuner/types';
import { gpuSkipReason } from '../test/support/gpu-available';
import { writeBenchJson } from './support/output';
import { replayExpertSession } from '../test/support/expert-session';

// The bundle runs from dist/bench/ (or dist-gpu/bench/); the source from bench/.
const root = path.basename(path.dirname(__dirname)).startsWith('dist') ? path.resolve(__dirname, '..', '..') : path.resolve(__dirname, '..');
const REPEATS = 3;

interface ExampleCost {
  name: string;
  config: Config;
  launch: string;
  status: SanitizerVerdict['status'];
  /** The sample's search (4 configurations, 7 timed launches each), for scale. */
  searchMs: number;
  checkMs: number[];
  medianCheckMs: number;
  medianToolMs: Partial<Record<SanitizerTool, number>>;
}

interface ReplayCost {
  sanitize: boolean;
  graphMs: number;
  steps: { stepId: string; status: SanitizerVerdict['status']; checkMs: number; toolMs: Partial<Record<SanitizerTool, number>> }[];
  accepted: string[];
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function exampleCost(backend: GpuBackend, name: string): Promise<ExampleCost> {
  const loaded = await loadExample(path.join(root, 'examples'), name);
  const searchStarted = performance.now();
  const result = await loaded.kernel.tune(loaded.test, loaded.tuneParams, loaded.restrictions, { ...loaded.options, backend, strategy: 'random_sample', maxFevals: 4, seed: 1, iterations: 7 });
  const searchMs = performance.now() - searchStarted;
  if (!result.best) throw new Error(`${name}: no configuration of the sample ran`);
  const verdicts: SanitizerVerdict[] = [];
  for (let i = 0; i < REPEATS; i++) verdicts.push(await loaded.kernel.sanitize(loaded.test, result.best.config, { ...loaded.options, backend }));
  const last = verdicts.at(-1)!;
  if (last.status === 'unavailable') throw new Error(`${name}: ${describeVerdict(last)}`);
  const toolMs = Object.fromEntries(SANITIZER_TOOLS.map((tool) => [tool, median(verdicts.map((v) => (v.status === 'unavailable' ? 0 : (v.toolMs[tool] ?? 0))))]));
  return {
    name,
    config: result.best.config,
    launch: describeReduction(last.launch),
    status: last.status,
    searchMs,
    checkMs: verdicts.map((v) => v.elapsedMs),
    medianCheckMs: median(verdicts.map((v) => v.elapsedMs)),
    medianToolMs: toolMs,
  };
}

async function replayCost(backend: GpuBackend, sanitize: boolean): Promise<ReplayCost> {
  const started = performance.now();
  const { events, end } = await replayExpertSession(root, backend, `sanitizer-${sanitize}`, { sanitize });
  const graphMs = performance.now() - started;
  if (end.status !== 'finished') throw new Error(`the replay did not finish: ${end.status === 'failed' ? end.error.message : end.status}`);
  const sanitized = events.filter((e): e is EventOf<'sanitized'> => e.type === 'sanitized');
  return {
    sanitize,
    graphMs,
    steps: sanitized.map((e) => ({ stepId: e.stepId, status: e.verdict.status, checkMs: e.verdict.elapsedMs, toolMs: e.verdict.status === 'unavailable' ? {} : e.verdict.toolMs })),
    accepted: events.filter((e): e is EventOf<'step.accepted'> => e.type === 'step.accepted').map((e) => e.stepId),
  };
}

async function main(): Promise<void> {
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`sanitizer benchmark skipped: ${skip}`);
    return;
  }
  const sanitizer = findComputeSanitizer();
  if (!sanitizer) throw new Error('compute-sanitizer is not installed (it comes with the CUDA toolkit): nothing to measure');
  const version = await sanitizerVersion(sanitizer);
  const backend = await GpuBackend.open();
  try {
    const device = await backend.describe();
    console.log(`compute-sanitizer ${version ?? '(version unknown)'} at ${sanitizer.path}; ${device.name}, driver ${device.driverVersion}`);
    const examples: ExampleCost[] = [];
    for (const name of EXAMPLE_NAMES) {
      const cost = await exampleCost(backend, name);
      examples.push(cost);
      console.log(`${name}: ${JSON.stringify(cost.config)} ${cost.status}, check ${seconds(cost.medianCheckMs)} (${cost.checkMs.map(seconds).join(', ')}) against a 4-configuration search of ${seconds(cost.searchMs)}`);
    }
    console.log('\n| example | configuration | launch checked | check (median of 3) | memcheck | racecheck | synccheck | initcheck | the sample\'s search |');
    console.log('|---|---|---|---:|---:|---:|---:|---:|---:|');
    for (const c of examples) {
      const tools = SANITIZER_TOOLS.map((t) => seconds(c.medianToolMs[t] ?? 0)).join(' | ');
      console.log(`| ${c.name} | ${Object.entries(c.config).map(([k, v]) => `${k}=${v}`).join(' ')} | ${c.launch} | ${seconds(c.medianCheckMs)} | ${tools} | ${seconds(c.searchMs)} |`);
    }
    const replays = [await replayCost(backend, false), await replayCost(backend, true)];
    const [without, withCheck] = replays as [ReplayCost, ReplayCost];
    console.log('\nexpert session of matmul_naive, replayed:');
    console.log(`  without the check: ${seconds(without.graphMs)}, accepted ${without.accepted.join(', ')}`);
    console.log(`  with it:           ${seconds(withCheck.graphMs)}, accepted ${withCheck.accepted.join(', ')}`);
    for (const s of withCheck.steps) console.log(`  step ${s.stepId}: ${s.status} in ${seconds(s.checkMs)} (${SANITIZER_TOOLS.map((t) => `${t} ${seconds(s.toolMs[t] ?? 0)}`).join(', ')})`);
    const file = writeBenchJson('sanitizer', { sanitizer: { path: sanitizer.path, version }, device: device.name, examples, replays });
    if (file) console.log(`\nJSON: ${file}`);
  } finally {
    await backend.dispose();
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exit(1);
});
