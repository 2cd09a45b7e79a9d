// Issue 24's benchmark: the evolutionary strategy against the autonomous one on examples/matmul_naive, on this GPU,
// with the model stand-in (bench/standin: a test double answering from a pool of real rewrites, never by their
// speed) in place of a model. Two parts:
//
//   quality   both strategies, the same budget of model calls, seeds S (the stand-in's and the evolution's), the
//             stand-in's latency --quality-latency (default none): the final kernel's time as a share of cuBLAS fp32
//             (torch.matmul, TF32 off, same size, measured in the same run), the calls and the wall time each took to
//             reach 80 % of cuBLAS, and how often each ended below the expert's final kernel
//             (examples/matmul_naive/expert/step4, tuned here at the same size).
//   overlap   one evolutionary session with the stand-in's latency on, the model and the GPU working at once (requests
//             in flight, a window of children), and the same session one child at a time, one request at a time: each
//             session's wall time beside its model time (the answers' latency) and GPU time (GPU-seconds its
//             children's evaluations held the GPU), for the strategy's phase and for the whole session.
//
//   node dist/bench/evolution.js [--part quality|overlap|both] [--seeds 1-5] [--calls 20] [--size 2048] [--window 4]
//                                [--strategies evolutionary,autonomous] [--quality-latency 0] [--latency 4-12] [--overlap-calls 14]
//                                [--overlap-modes at-once,one-after-the-other]
//   node dist/bench/evolution.js --part table --from a.json,b.json [--cublas-ms T]   the quality table of runs saved
//                                  by several calls (no GPU: the first file's cuBLAS time unless given, its expert's)
// JSON to $OUT/bench-evolution-<part>.json when OUT is set, written after every session (a cut-off run keeps them).
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { MemorySaver } from '@langchain/langgraph';
import { createChatModel } from '../src/engine/llm/providers';
import type { EventOf, TuningEvent } from '../src/engine/progress/events';
import { transformerOptionsFrom } from '../src/engine/session/session-options';
import { DEFAULT_AUTONOMOUS, type SessionSettings } from '../src/engine/session/session-settings';
import { LLMKernelTransformer } from '../src/engine/session/transformer';
import { windowFor } from '../src/engine/strategies/evolutionary/population';
import type { TuningBackend } from '../src/tuner/run/backend';
import { GpuBackend } from '../src/tuner/run/gpu-backend';
import { DEFAULT_LAUNCHES } from '../src/tuner/run/launch-count';
import { KernelTest, TunableKernel } from '../src/tuner/tunable-kernel';
import type { TestSpecInput } from '../src/tuner/spec/input-spec';
import { gpuSkipReason } from '../test/support/gpu-available';
import { loadPool } from './standin/pool';
import { parseLatency, startStandin, type LatencyRange, type StandinLogEntry } from './standin/server';
import { writeBenchJson } from './support/output';

// The bundle runs from dist/bench/ (or dist-gpu/bench/); the source from bench/.
const root = path.basename(path.dirname(__dirname)).startsWith('dist') ? path.resolve(__dirname, '..', '..') : path.resolve(__dirname, '..');
const POOLS = path.join(root, 'bench', 'standin', 'pools');
const KERNEL = path.join(root, 'examples', 'matmul_naive', 'matmul_naive.cu');
const EXPERT = path.join(root, 'examples', 'matmul_naive', 'expert');
const PYTHON = process.env.LKT_TORCH_PYTHON ?? '/opt/torch/.venv/bin/python';
/** The share of cuBLAS fp32 the issue's table counts calls and time to. */
const GOAL = 0.8;
/** Prices of a mid-range paid model (USD per million tokens), so that the table shows what a session would cost. */
const PRICES = { inputPerMTok: 3, outputPerMTok: 15 };

type StrategyName = 'autonomous' | 'evolutionary';

interface Progress {
  calls: number;
  wallS: number;
  timeMs: number;
}

interface SessionRun {
  strategy: StrategyName;
  /** The session's events (not in the JSON report: the first evolutionary session's go to their own file). */
  events?: TuningEvent[];
  seed: number;
  status: string;
  error?: string;
  baselineMs: number | null;
  finalMs: number | null;
  /** Every improvement of the best kernel: the model calls and wall time it had taken. */
  progress: Progress[];
  calls: number;
  tokens: number;
  costUsd: number | null;
  wallS: number;
  /** The strategy's phase: from its first request to its end. */
  strategyWallS: number | null;
  /** Seconds the stand-in's answers waited (its latency), over the whole session and over the strategy's phase. */
  modelS: number;
  strategyModelS: number;
  /** GPU-seconds the children's evaluations held the GPU (evolutionary sessions). */
  gpuS: number | null;
  /** What the stand-in answered with, by the pool's labels (never read by the stand-in to choose). */
  answered: Record<string, number>;
  stopped?: string;
}

function settingsFor(strategy: StrategyName, seed: number, calls: number, llmConcurrency: number, window: number): SessionSettings {
  return {
    kernelName: 'matmul_naive',
    fileName: 'matmul_naive.cu',
    filePath: KERNEL,
    includePaths: [],
    compilerOptions: [],
    strategy: strategy === 'evolutionary' ? { kind: 'evolutionary', seed, window } : DEFAULT_AUTONOMOUS,
    retries: 2,
    performanceThreshold: 1,
    iterations: DEFAULT_LAUNCHES,
    timePerTestS: 15,
    structuredOutputType: 'default',
    stripThinking: true,
    approvePlan: false,
    llmConcurrency,
    budget: { modelCalls: calls },
    prices: PRICES,
    model: { provider: 'openai', model: 'standin-matmul_naive' },
  };
}

async function session(backend: TuningBackend, options: { strategy: StrategyName; seed: number; calls: number; size: number; latency: LatencyRange; llmConcurrency: number; window: number }): Promise<SessionRun> {
  const standin = await startStandin({ pool: loadPool(POOLS, 'matmul_naive'), seed: options.seed, latency: options.latency, thinkRate: 0.25, testSize: options.size });
  const settings = settingsFor(options.strategy, options.seed, options.calls, options.llmConcurrency, options.window);
  const llm = createChatModel({ provider: 'openai', model: 'standin-matmul_naive', baseUrl: standin.baseUrl, apiKey: 'standin' });
  const { options: transformerOptions } = transformerOptionsFrom(settings, { llm, backend, checkpointer: new MemorySaver(), threadId: `${options.strategy}-${options.seed}` });
  const events: TuningEvent[] = [];
  const started = performance.now();
  const seconds = () => (performance.now() - started) / 1000;
  const progress: Progress[] = [];
  let calls = 0;
  let strategyStart: { at: number; call: number } | undefined;
  let end;
  try {
    const stream = new LLMKernelTransformer(readFileSync(KERNEL, 'utf8'), transformerOptions).stream();
    let next = await stream.next();
    for (; !next.done; next = await stream.next()) {
      const e = next.value;
      events.push(e);
      if (e.type === 'llm.usage') calls++;
      if (!strategyStart && (e.type === 'population.child' || e.type === 'plan')) strategyStart = { at: seconds(), call: calls };
      if (e.type === 'step.accepted') progress.push({ calls, wallS: seconds(), timeMs: e.newTimeMs });
      if (e.type === 'step.accepted' || e.type === 'population.stopped' || e.type === 'tuning.stopped' || e.type === 'baseline') console.log(`  ${seconds().toFixed(1).padStart(6)} s  call ${String(calls).padStart(2)}  ${describe(e)}`);
    }
    end = next.value;
  } finally {
    await standin.close();
  }
  const usage = events.filter((e): e is EventOf<'llm.usage'> => e.type === 'llm.usage');
  const finished = events.find((e): e is EventOf<'session.finished'> => e.type === 'session.finished');
  const stopped = events.find((e): e is EventOf<'population.stopped'> => e.type === 'population.stopped');
  const tuningStopped = events.find((e): e is EventOf<'tuning.stopped'> => e.type === 'tuning.stopped');
  const answered: Record<string, number> = {};
  for (const entry of standin.log) if (entry.label) answered[entry.label] = (answered[entry.label] ?? 0) + 1;
  const latencyS = (entries: readonly StandinLogEntry[]) => entries.reduce((s, x) => s + x.latencyMs, 0) / 1000;
  return {
    strategy: options.strategy,
    events,
    seed: options.seed,
    status: end.status,
    ...(end.status === 'failed' && { error: end.error.message }),
    baselineMs: events.find((e): e is EventOf<'baseline'> => e.type === 'baseline')?.timeMs ?? null,
    finalMs: finished?.tracker.finalTimeMs ?? null,
    progress,
    calls,
    tokens: usage.reduce((s, u) => s + u.promptTokens + u.completionTokens, 0),
    costUsd: usage.reduce((s, u) => s + (u.costUsd ?? 0), 0),
    wallS: seconds(),
    strategyWallS: strategyStart ? seconds() - strategyStart.at : null,
    modelS: latencyS(standin.log),
    strategyModelS: latencyS(standin.log.slice(strategyStart?.call ?? 0)),
    gpuS: stopped?.gpuS ?? null,
    answered,
    ...((stopped || tuningStopped) && { stopped: stopped?.reason.message ?? tuningStopped!.reason }),
  };
}

function describe(e: TuningEvent): string {
  switch (e.type) {
    case 'baseline':
      return `baseline ${e.timeMs.toFixed(3)} ms`;
    case 'step.accepted':
      return `${e.stepId} accepted: ${e.newTimeMs.toFixed(3)} ms`;
    case 'population.stopped':
      return `stopped: ${e.reason.message} (GPU ${e.gpuS.toFixed(1)} s)`;
    case 'tuning.stopped':
      return `stopped: ${e.reason}`;
    default:
      return e.type;
  }
}

interface ExpertTurn {
  comment: string;
  respond?: { content?: string };
  json?: { tunableParameters?: Record<string, (number | string)[]>; gridDivisors?: { x?: string[]; y?: string[] } };
}

/** The expert session's final search space (examples/matmul_naive/expert/answers.json): every step's parameters, the last grid divisors, step 4's restrictions. */
export function expertSpace(): { tuneParams: Record<string, (number | string)[]>; gridDivisors: { x?: string[]; y?: string[] }; restrictions: string[] } {
  const { turns } = JSON.parse(readFileSync(path.join(EXPERT, 'answers.json'), 'utf8')) as { turns: ExpertTurn[] };
  const tuneParams: Record<string, (number | string)[]> = {};
  let gridDivisors = {};
  for (const turn of turns.filter((t) => /^step \d$/.test(t.comment))) {
    // As the session merges them: the values a step names are added to those tried before.
    for (const [name, values] of Object.entries(turn.json?.tunableParameters ?? {})) tuneParams[name] = [...new Set([...(tuneParams[name] ?? []), ...values])];
    if (turn.json?.gridDivisors) gridDivisors = { ...gridDivisors, ...turn.json.gridDivisors };
  }
  const restrictionsTurn = turns.find((t) => t.comment.startsWith('restrictions for step 4'));
  const { restrictions } = JSON.parse(restrictionsTurn!.respond!.content!) as { restrictions: string[] };
  return { tuneParams, gridDivisors, restrictions };
}

/** The expert's final kernel (step 4) tuned at the benchmark's size: the share of cuBLAS a capable model's session reaches. */
async function expertAt(backend: TuningBackend, n: number): Promise<number> {
  const { tuneParams, gridDivisors, restrictions } = expertSpace();
  const kernel = await TunableKernel.create(readFileSync(path.join(EXPERT, 'step4_double_buffered.cu'), 'utf8'), { fileName: 'step4_double_buffered.cu', kernelName: 'matmul_naive' });
  const test = KernelTest.fromSpec({
    arguments: {
      C: { dtype: 'float32', length: 'n*n', output: true },
      A: { dtype: 'float32', length: 'n*n', random: { kind: 'uniform', min: -1, max: 1 } },
      B: { dtype: 'float32', length: 'n*n', random: { kind: 'uniform', min: -1, max: 1 } },
      n: { dtype: 'int32', value: n },
    },
    problemSize: ['n', 'n'],
  } satisfies TestSpecInput);
  const oracle = { code: readFileSync(KERNEL, 'utf8'), filePath: KERNEL, kernelName: 'matmul_naive', config: { block_size_x: 32, block_size_y: 8 } };
  const result = await kernel.tune(test, tuneParams, restrictions, {
    backend,
    oracle,
    ...(gridDivisors.x && { gridDivX: gridDivisors.x }),
    ...(gridDivisors.y && { gridDivY: gridDivisors.y }),
  });
  if (!result.best?.timeMs) throw new Error(`the expert kernel had no correct configuration at n = ${n}: ${result.results.find((r) => r.error)?.error?.message ?? 'no result'}`);
  return result.best.timeMs;
}

const CUBLAS_SCRIPT = `
import json, statistics, sys, torch
n = int(sys.argv[1])
torch.backends.cuda.matmul.allow_tf32 = False
torch.set_float32_matmul_precision("highest")
a = torch.rand(n, n, device="cuda") * 2 - 1
b = torch.rand(n, n, device="cuda") * 2 - 1
c = torch.empty(n, n, device="cuda")
for _ in range(10):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()
times = []
for _ in range(100):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); torch.matmul(a, b, out=c); e.record(); e.synchronize()
    times.append(s.elapsed_time(e))
print(json.dumps({"medianMs": statistics.median(times), "device": torch.cuda.get_device_name(), "torch": torch.__version__}))
`;

function cublasMs(n: number): { medianMs: number; device: string; torch: string } {
  return JSON.parse(execFileSync(PYTHON, ['-c', CUBLAS_SCRIPT, String(n)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').at(-1)!) as { medianMs: number; device: string; torch: string };
}

function listOf<T extends string>(text: string, allowed: readonly T[], flag: string): T[] {
  const items = text.split(',').map((item) => item.trim());
  const wrong = items.find((item) => !(allowed as readonly string[]).includes(item));
  if (wrong !== undefined || items.length === 0) throw new RangeError(`${flag}: expected a comma-separated list of ${allowed.join(', ')}, got ${text}`);
  return items as T[];
}

/** The quality table of the runs several calls saved (bench-evolution-quality.json files), against the first file's cuBLAS and expert times. */
function tableFrom(files: readonly string[], cublasMs: number | undefined): string {
  if (files.length === 0) throw new RangeError('--part table needs --from FILE[,FILE...]: bench-evolution-quality.json files');
  const reports = files.map((f) => JSON.parse(readFileSync(f, 'utf8')) as { calls: number; size: number; expertMs: number; cublas?: { medianMs: number }; runs: SessionRun[] });
  const [first] = reports;
  const cublas = cublasMs ?? reports.find((r) => r.cublas)?.cublas?.medianMs;
  if (cublas === undefined) throw new Error(`none of ${files.join(', ')} holds a cuBLAS time: a call that finished writes it`);
  const mixed = reports.find((r) => r.calls !== first!.calls || r.size !== first!.size);
  if (mixed) throw new Error(`the files mix budgets or sizes (${first!.calls} calls at n = ${first!.size} and ${mixed.calls} at n = ${mixed.size})`);
  const runs = reports.flatMap((r) => r.runs).sort((a, b) => a.seed - b.seed || b.strategy.localeCompare(a.strategy));
  return `${first!.calls} model calls, n = ${first!.size}, cuBLAS ${cublas.toFixed(3)} ms, expert ${first!.expertMs.toFixed(3)} ms\n\n${qualityTable(runs, cublas, first!.expertMs)}`;
}

function seedsOf(text: string): number[] {
  const m = /^(\d+)(?:-(\d+))?$/.exec(text);
  if (!m) throw new RangeError(`--seeds: expected N or FIRST-LAST, got ${text}`);
  const first = Number(m[1]);
  const last = m[2] === undefined ? first : Number(m[2]);
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

const pct = (v: number) => `${(100 * v).toFixed(1)} %`;

function qualityTable(runs: readonly SessionRun[], cublas: number, expert: number): string {
  const lines = [
    `| strategy | seed | final | % of cuBLAS | calls to 80 % | wall to 80 % | calls | tokens | cost | wall | answers (good / slower / wrong / no-compile / racy) |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of runs) {
    const reached = r.progress.find((p) => cublas / p.timeMs >= GOAL);
    const a = (k: string) => r.answered[k] ?? 0;
    lines.push(
      `| ${r.strategy} | ${r.seed} | ${r.finalMs === null ? r.status : `${r.finalMs.toFixed(3)} ms`} | ${r.finalMs === null ? '' : pct(cublas / r.finalMs)} | ${reached ? reached.calls : 'not reached'} | ${reached ? `${reached.wallS.toFixed(0)} s` : ''} | ${r.calls} | ${r.tokens.toLocaleString('en')} | $${(r.costUsd ?? 0).toFixed(3)} | ${r.wallS.toFixed(0)} s | ${a('good')} / ${a('slower')} / ${a('wrong')} / ${a('no-compile')} / ${a('racy')} |`,
    );
  }
  const summary: string[] = [];
  for (const strategy of ['autonomous', 'evolutionary'] as const) {
    const mine = runs.filter((r) => r.strategy === strategy && r.finalMs !== null);
    if (mine.length === 0) continue;
    const shares = mine.map((r) => cublas / r.finalMs!);
    const below = shares.filter((s) => s < cublas / expert).length;
    const reached = mine.map((r) => r.progress.find((p) => cublas / p.timeMs >= GOAL)).filter((p): p is Progress => p !== undefined);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    summary.push(
      `${strategy}: mean ${pct(mean(shares))} of cuBLAS (worst ${pct(Math.min(...shares))}); reached 80 % in ${reached.length} of ${mine.length}` +
        (reached.length > 0 ? ` (mean ${mean(reached.map((p) => p.calls)).toFixed(1)} calls, ${mean(reached.map((p) => p.wallS)).toFixed(0)} s)` : '') +
        `; ended below the expert's ${pct(cublas / expert)} in ${below} of ${mine.length}`,
    );
  }
  return [...lines, '', ...summary].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      part: { type: 'string', default: 'both' },
      seeds: { type: 'string', default: '1-5' },
      calls: { type: 'string', default: '20' },
      size: { type: 'string', default: '2048' },
      latency: { type: 'string', default: '4-12' },
      /** The stand-in's latency in the quality part (default none: the strategies' search alone). */
      'quality-latency': { type: 'string', default: '0' },
      'overlap-calls': { type: 'string', default: '14' },
      /** The evolutionary strategy's window in the quality part (children written at once). */
      window: { type: 'string', default: '4' },
      strategies: { type: 'string', default: 'evolutionary,autonomous' },
      /** at-once: 4 requests in flight, a window of 4 children (at most a tenth of the calls); one-after-the-other: 1 and 1. */
      'overlap-modes': { type: 'string', default: 'at-once,one-after-the-other' },
      from: { type: 'string' },
      /** The table part: the cuBLAS time to count shares of (ms), in place of the first file's. */
      'cublas-ms': { type: 'string' },
    },
  });
  if (values.part === 'table') {
    const cublasMs = values['cublas-ms'] === undefined ? undefined : Number(values['cublas-ms']);
    if (cublasMs !== undefined && !(cublasMs > 0)) throw new RangeError(`--cublas-ms: expected a positive time in ms, got ${values['cublas-ms']}`);
    console.log(tableFrom((values.from ?? '').split(',').filter(Boolean), cublasMs));
    return;
  }
  const strategies = listOf(values.strategies!, ['evolutionary', 'autonomous'] as const, '--strategies');
  const overlapModes = listOf(values['overlap-modes']!, ['at-once', 'one-after-the-other'] as const, '--overlap-modes');
  const skip = gpuSkipReason();
  if (skip) {
    console.log(`no GPU: skipped (${skip})`);
    return;
  }
  const size = Number(values.size);
  const calls = Number(values.calls);
  const backend = await GpuBackend.open();
  const device = await backend.describe();
  try {
    if (values.part === 'quality' || values.part === 'both') {
      const runs: SessionRun[] = [];
      const expert = await expertAt(backend, size);
      console.log(`expert step 4 at n = ${size}: ${expert.toFixed(3)} ms`);
      for (const seed of seedsOf(values.seeds!)) {
        for (const strategy of strategies) {
          console.log(`\n${strategy}, seed ${seed}, ${calls} model calls, n = ${size}`);
          const { events, ...run } = await session(backend, { strategy, seed, calls, size, latency: parseLatency(values['quality-latency']!), llmConcurrency: 4, window: Number(values.window) });
          runs.push(run);
          writeBenchJson('evolution-quality', { device: device.name, size, calls, expertMs: expert, runs });
          // The first evolutionary session as a recording the panel can show (its lineage tree, for the README).
          if (strategy === 'evolutionary' && runs.length === 1 && process.env.OUT) {
            writeFileSync(path.join(process.env.OUT, 'evolution-session.events.json'), `${JSON.stringify(events!.filter((e) => e.type !== 'graph.node'))}\n`);
          }
        }
      }
      await backend.dispose();
      const cublas = cublasMs(size);
      console.log(`\ncuBLAS fp32 at n = ${size}: ${cublas.medianMs.toFixed(3)} ms (${cublas.device}, torch ${cublas.torch})\n`);
      const table = qualityTable(runs, cublas.medianMs, expert);
      console.log(table);
      writeBenchJson('evolution-quality', { device: device.name, size, calls, expertMs: expert, cublas, runs, table });
    }
    if (values.part === 'overlap' || values.part === 'both') {
      const latency = parseLatency(values.latency!);
      const overlapCalls = Number(values['overlap-calls']);
      const open = values.part === 'both' ? await GpuBackend.open() : backend;
      const runs = [];
      const modes = [
        ['at-once', `at once (4 requests in flight, a window of ${windowFor(4, overlapCalls)} children)`, 4, 4],
        ['one-after-the-other', 'one after the other (1 request, 1 child)', 1, 1],
      ] as const;
      for (const [, label, llmConcurrency, window] of modes.filter(([mode]) => overlapModes.includes(mode))) {
        console.log(`\noverlap: ${label}, latency ${values.latency} s, ${overlapCalls} calls`);
        const { events: _events, ...r } = await session(open, { strategy: 'evolutionary', seed: 1, calls: overlapCalls, size, latency, llmConcurrency, window });
        runs.push({ label, llmConcurrency, window, ...r });
        writeBenchJson('evolution-overlap', { device: device.name, size, latency: values.latency, runs });
      }
      for (const r of runs) {
        const bound = Math.max(r.strategyModelS / r.llmConcurrency, r.gpuS ?? 0);
        console.log(
          `${r.label}: strategy phase ${r.strategyWallS?.toFixed(1)} s = ${((r.strategyWallS ?? 0) / bound).toFixed(2)} x max(model ${r.strategyModelS.toFixed(1)} s / ${r.llmConcurrency}, GPU ${r.gpuS?.toFixed(1)} s); sum ${(r.strategyModelS + (r.gpuS ?? 0)).toFixed(1)} s; whole session ${r.wallS.toFixed(1)} s (model ${r.modelS.toFixed(1)} s)`,
        );
      }
      await open.dispose();
    }
  } finally {
    await backend.dispose().catch(() => undefined);
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
