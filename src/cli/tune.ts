// llm-kernel-tuner tune: Kernel Tuner's job without an LLM. A tuning spec (YAML/JSON: inputs, tunable parameters,
// restrictions, geometry) drives a search on the GPU, or replays a cache file (--simulate) on any machine.
import { extname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CudaUnavailableError } from '../gpu/errors';
import { CacheFile, replay } from '../tuner/cache';
import { SearchSpace } from '../tuner/search-space';
import { resolveStrategy } from '../tuner/strategies';
import type { TuneOptions } from '../tuner/tunable-kernel';
import { loadTuningSpec, tuningJob, TuningSpecError, type TuningSpec } from '../tuner/tuning-spec';
import type { SearchProgress } from '../tuner/strategies';
import type { ConfigResult, ConfigStatus, ParamValue, StopReason, TuneResult } from '../tuner/types';
import { describeError } from './errors';
import { ms, table } from './format';
import { TuningProgress } from './progress';

const HELP = `usage: llm-kernel-tuner tune SPEC.yaml [options]
       llm-kernel-tuner tune FILE.cu --spec SPEC.yaml [options]

Tunes a CUDA kernel as Kernel Tuner does: every configuration of the tunable parameters that satisfies the restrictions
is compiled, verified against the reference on two input sets and timed with CUDA events. The .cu file may hold its
host program and include local headers: NVRTC compiles its device code (nvcc the whole file where NVRTC cannot).

options:
  --spec FILE              the tuning spec (inputs, tune params, restrictions, geometry), when FILE.cu is given first
  --kernel NAME            the __global__ function (default: the spec's, or the only one in the file)
  --param NAME=V1,V2,...   a tunable parameter and its values (replaces the spec's parameter of that name)
  --restriction EXPR       an extra restriction, e.g. "block_size_x*block_size_y<=1024" (repeatable)
  --strategy NAME          brute_force (default), random_sample, greedy_mls, genetic_algorithm
  --max-fevals N           evaluate at most N configurations
  --time-limit SECONDS     start no new evaluation after this long
  --seed N                 seed of the strategy's random choices
  --iterations N           timed launches per configuration (default 32)
  -I, --include DIR        a directory searched for #include (repeatable; compile_commands.json is read as well)
  --launch-timeout SECONDS time limit of one launch (default: 100x the reference kernel's time, at least 1 s)
  --cache FILE             Kernel Tuner cache: results are appended as they come; a rerun resumes from it
  --simulate FILE          replay FILE (a Kernel Tuner cache) instead of running: no GPU needed
  --simulate-if-no-gpu FILE  tune on the GPU when there is one, else replay FILE
  --device N               GPU ordinal (default 0)
  --json                   print the result as JSON on stdout (progress still goes to stderr)
  -q, --quiet              no progress on stderr
`;

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      spec: { type: 'string' },
      kernel: { type: 'string' },
      param: { type: 'string', multiple: true },
      restriction: { type: 'string', multiple: true },
      strategy: { type: 'string' },
      'max-fevals': { type: 'string' },
      'time-limit': { type: 'string' },
      seed: { type: 'string' },
      iterations: { type: 'string' },
      include: { type: 'string', short: 'I', multiple: true },
      'launch-timeout': { type: 'string' },
      cache: { type: 'string' },
      simulate: { type: 'string' },
      'simulate-if-no-gpu': { type: 'string' },
      device: { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const [first, ...extra] = positionals;
  if (!first || extra.length > 0) throw new TuningSpecError(`expected one spec file or one .cu file with --spec\n\n${HELP}`);
  const isSource = ['.cu', '.cuh'].includes(extname(first).toLowerCase());
  const specPath = isSource ? values.spec : first;
  if (!specPath) throw new TuningSpecError(`${first} needs a tuning spec for its inputs: --spec SPEC.yaml`);
  const spec = applyFlags(loadTuningSpec(specPath), values);
  const job = await tuningJob(spec, isSource ? { file: first } : {});
  const { kernel } = job;

  const progress = values.quiet ? undefined : new TuningProgress();
  const onResult = (r: ConfigResult, p: SearchProgress) => progress?.add(r, p);

  let result: TuneResult;
  let mode: string;
  let replayFile = values.simulate;
  if (replayFile === undefined && values['simulate-if-no-gpu'] !== undefined) {
    const missing = await missingGpu();
    if (missing) {
      replayFile = values['simulate-if-no-gpu'];
      // Said first, so that nobody takes the replay for a run on this machine.
      process.stderr.write(`No GPU to tune on: ${missing}
Replaying ${replayFile} instead: the recorded results of a real GPU run, searched as the spec says.
\n`);
    }
  }
  try {
    if (replayFile !== undefined) {
      const replayed = await simulate(spec, kernel.name, replayFile, values.seed === undefined ? undefined : integer('--seed', values.seed), onResult);
      mode = `replayed from ${replayFile} (measured on ${replayed.deviceName}; simulation: no GPU used)`;
      result = replayed.result;
    } else {
      mode = 'measured on the GPU';
      const options: TuneOptions = {
        ...job.options,
        ...(values.seed !== undefined && { seed: integer('--seed', values.seed) }),
        ...(values.device !== undefined && { device: integer('--device', values.device) }),
        ...(values.cache !== undefined && { cache: values.cache }),
        onResult,
      };
      result = await kernel.tune(job.test, job.tuneParams, job.restrictions, options);
    }
  } finally {
    progress?.finish();
  }

  if (values.json) {
    process.stdout.write(`${JSON.stringify({ kernel: kernel.name, mode, ...result }, null, 2)}\n`);
  } else {
    process.stdout.write(report(result, Object.keys(spec.tuneParams), kernel.name, mode, replayFile !== undefined));
  }
  return result.best ? 0 : 1;
}

/** Runs the spec's strategy over the spec's space with every evaluation answered from the cache. */
async function simulate(
  spec: TuningSpec,
  kernelName: string,
  cachePath: string,
  seed: number | undefined,
  onResult: (r: ConfigResult, p: SearchProgress) => void,
): Promise<{ result: TuneResult; deviceName: string }> {
  const cache = CacheFile.load(cachePath);
  if (cache.header.kernel_name !== kernelName) {
    throw new TuningSpecError(`${cachePath} holds results for kernel '${cache.header.kernel_name}', not '${kernelName}'`);
  }
  const space = new SearchSpace(spec.tuneParams, spec.restrictions, spec.blockSizeNames ? { blockSizeNames: spec.blockSizeNames } : {});
  const { evaluate, clock } = replay(cache, { space });
  const strategy = resolveStrategy(spec.strategy)(spec.strategyOptions);
  const result = await strategy.run(space, evaluate, {
    clock,
    ...(seed !== undefined && { seed }),
    ...(spec.maxFevals !== undefined && { maxFevals: spec.maxFevals }),
    ...(spec.timeLimitS !== undefined && { timeLimitMs: spec.timeLimitS * 1000 }),
    onResult,
  });
  return { result, deviceName: cache.header.device_name };
}

/** A status in the words of the summary line ("4 did not compile"); the table and --json keep the status names. */
const STATUS_WORDS: Record<ConfigStatus, string> = {
  ok: 'ok',
  stopped_early: 'stopped early',
  compile_error: 'did not compile',
  launch_error: 'failed to launch',
  fault: 'faulted',
  timeout: 'timed out',
  wrong_result: 'gave wrong results',
  restricted: 'excluded by a restriction',
  exceeds_device_limits: "over the device's limits (not compiled)",
};

const STOP_WORDS: Record<StopReason, string> = {
  completed: 'the search completed',
  max_fevals: 'the search stopped at its evaluation limit (--max-fevals)',
  time_limit: 'the search stopped at its time limit (--time-limit)',
  aborted: 'the search was cancelled',
};

/** The results table (fastest first, then failures by kind) and the best configuration. */
function report(result: TuneResult, paramNames: string[], kernelName: string, mode: string, replayed: boolean): string {
  const ok = result.results.filter((r) => r.timeMs !== undefined).sort((a, b) => a.timeMs! - b.timeMs!);
  const failed = result.results.filter((r) => r.timeMs === undefined);
  const rows = [...ok, ...failed].map((r) => [
    ...paramNames.map((p) => String(r.config[p])),
    r.status,
    ms(r.stats?.medianMs ?? r.timeMs),
    ms(r.stats?.minMs),
    ms(r.stats?.maxMs),
    r.resources ? String(r.resources.registers) : '',
  ]);
  let text = table([...paramNames, 'status', 'median ms', 'min ms', 'max ms', 'regs'], rows);
  const counts = new Map<ConfigStatus, number>();
  for (const r of result.results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  if (result.compiler?.note) text += `\n${result.compiler.note}`;
  const outcomes = [...counts].map(([status, n]) => `${n} ${STATUS_WORDS[status]}`).join(', ');
  text += `\n${kernelName}: ${result.results.length} configurations ${mode} with ${result.strategy} in ${(result.elapsedMs / 1000).toFixed(2)} s${replayed ? ' of recorded GPU time' : ''}: ${outcomes}; ${STOP_WORDS[result.stopReason]}\n`;
  const best = result.best;
  if (best) {
    text += `best: ${paramNames.map((p) => `${p}=${String(best.config[p])}`).join(' ')}  ${ms(best.timeMs)} ms`;
    if (best.geometry) text += `  (grid ${best.geometry.grid.join('x')}, block ${best.geometry.block.join('x')})`;
    text += '\n';
  } else {
    text += 'no configuration succeeded\n';
  }
  const firstErrors = failed.filter((r) => r.error).slice(0, 3);
  for (const r of firstErrors) text += `\n${paramNames.map((p) => `${p}=${String(r.config[p])}`).join(' ')} ${r.status}: ${r.error!.message.split('\n')[0]}`;
  return firstErrors.length ? `${text}\n` : text;
}

function applyFlags(spec: TuningSpec & { dir: string }, v: Record<string, unknown>): TuningSpec & { dir: string } {
  const out = { ...spec, tuneParams: { ...spec.tuneParams }, restrictions: [...spec.restrictions] };
  if (typeof v.kernel === 'string') out.kernel = v.kernel;
  for (const p of (v.param as string[] | undefined) ?? []) {
    const m = /^([A-Za-z_]\w*)=(.+)$/.exec(p);
    if (!m) throw new TuningSpecError(`--param expects NAME=V1,V2,... but received '${p}'`);
    out.tuneParams[m[1]!] = m[2]!.split(',').map(parseValue);
  }
  out.restrictions.push(...((v.restriction as string[] | undefined) ?? []));
  if (typeof v.strategy === 'string') out.strategy = v.strategy;
  if (typeof v['max-fevals'] === 'string') out.maxFevals = integer('--max-fevals', v['max-fevals']);
  if (typeof v['time-limit'] === 'string') out.timeLimitS = positive('--time-limit', v['time-limit']);
  if (typeof v.iterations === 'string') out.iterations = integer('--iterations', v.iterations);
  out.includePaths = [...spec.includePaths, ...((v.include as string[] | undefined) ?? []).map((d) => resolve(d))];
  if (typeof v['launch-timeout'] === 'string') out.launchTimeoutS = positive('--launch-timeout', v['launch-timeout']);
  return out;
}

function parseValue(text: string): ParamValue {
  const t = text.trim();
  if (t === 'true' || t === 'True') return true;
  if (t === 'false' || t === 'False') return false;
  const n = Number(t);
  return t !== '' && Number.isFinite(n) ? n : t;
}

function integer(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new TuningSpecError(`${flag} expects a non-negative integer, received '${text}'`);
  return n;
}

function positive(flag: string, text: string): number {
  const n = Number(text);
  if (!(n > 0)) throw new TuningSpecError(`${flag} expects a positive number, received '${text}'`);
  return n;
}

/**
 * Why no CUDA device is usable here, in the words `devices` uses (the library that could not be loaded and what to
 * install), or undefined when there is one. Asked of the worker, so a broken driver cannot crash us.
 */
async function missingGpu(): Promise<string | undefined> {
  const { Gpu } = await import('../gpu/client');
  try {
    const gpu = await Gpu.open();
    await gpu.dispose();
    return undefined;
  } catch (e) {
    if (e instanceof CudaUnavailableError) return describeError(e);
    throw e;
  }
}
