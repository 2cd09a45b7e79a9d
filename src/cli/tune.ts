// llm-kernel-tuner tune: Kernel Tuner's job without an LLM. A tuning spec (YAML/JSON: inputs, tunable parameters,
// restrictions, geometry) drives a search on the GPU, or replays a cache file (--simulate) on any machine.
import { readFileSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { CudaUnavailableError } from '../gpu/errors';
import { loadReplayCache, simulate } from '../tuner/cache/simulate';
import { parseGpuSelection, singleGpu } from '../tuner/run/gpu-selection';
import { resolveStrategy, strategies, strategyOptionsFromFlags, type Shard } from '../tuner/strategies';
import type { TuneOptions } from '../tuner/tunable-kernel';
import { checkStrategy, loadTuningSpec, tuningJob, TuningSpecError, type LoadedTuningSpec } from '../tuner/spec/tuning-spec';
import { describeLaunchCount, launchCountOf, type LaunchCountField } from '../tuner/run/launch-count';
import { LAUNCH_COUNT_FLAGS, LAUNCH_COUNT_HELP, LAUNCH_COUNT_OPTIONS, launchCountFromFlags } from './launch-count-flags';
import type { SearchProgress } from '../tuner/strategies';
import { formatMeasured, formatMedianInterval, objectiveOf, objectiveValue, TIME_OBJECTIVE, type ConfigResult, type ConfigStatus, type ParamValue, type StopReason, type TuneResult } from '../tuner/types';
import { describeError } from './errors';
import { ms, table } from './format';
import { TuningProgress } from './progress';
import { writeSlurmScripts } from './slurm';
import { commandLine, reportPath, writeReport } from './report';
import { reportFromTune, type TuneReportInput } from '../report/model';
import type { DeviceSpeedLimits } from '../tuner/run/speed-of-light';
import { GpuBackend } from '../tuner/run/gpu-backend';
import { markPhase } from '../phases';
import { t4Results, writeT4, type T4Environment } from '../tuner/cache/t4';
import { describeVerification, KERNEL_TUNER_TIMING_UNCHECKED, TIMING_MODES, type TimingMode } from '../tuner/run/measurement';
import { findingLines, shownFindings, verdictSummary } from '../tuner/run/sanitizer';

const HELP = `usage: llm-kernel-tuner tune SPEC.yaml [options]
       llm-kernel-tuner tune PROBLEM.json [options]     a T1 tuning-problem description (the benchmark hub's kernels/*.json)
       llm-kernel-tuner tune FILE.cu --spec SPEC.yaml [options]

Tunes a CUDA kernel as Kernel Tuner does: every configuration of the tunable parameters that satisfies the restrictions
is compiled, verified against the reference on two input sets and timed with CUDA events. The .cu file may hold its
host program and include local headers: NVRTC compiles its device code (nvcc the whole file where NVRTC cannot).

options:
  --spec FILE              the tuning spec (inputs, tune params, restrictions, geometry), when FILE.cu is given first
  --kernel NAME            the __global__ function (default: the spec's, or the only one in the file)
  --param NAME=V1,V2,...   a tunable parameter and its values (replaces the spec's parameter of that name)
  --restriction EXPR       an extra restriction, e.g. "block_size_x*block_size_y<=1024" (repeatable)
  --strategy NAME          auto (default: brute force where the space fits the budget, else the best-scoring
                           strategy), or one of Kernel Tuner's: ${Object.keys(strategies).join(', ')}
  --strategy-option K=V    an option of the strategy under Kernel Tuner's name, e.g. neighbor=adjacent, T=0.5,
                           popsize=20, x0=[32,4] (repeatable; numbers, true/false, [lists] and strings)
  --max-fevals N           evaluate at most N configurations (Kernel Tuner's max_fevals)
  --time-limit SECONDS     start no new evaluation after this long (time_limit; in a replay, of recorded time)
  --seed N                 seed of the strategy's random choices
${LAUNCH_COUNT_HELP}  --timing verified|kernel_tuner
                           verified (default): every timed launch starts from reset outputs, the outputs are compared
                           along the series; kernel_tuner: timed as Kernel Tuner times (each launch from an idle GPU,
                           outputs checked after the series only), for comparisons with its figures
  --energy                 also measure energy and power with NVML (read only) after each configuration's timed
                           launches: the kernel runs back to back for a second while NVML is read
  --sanitize               run the best configuration once under compute-sanitizer (racecheck, memcheck, synccheck,
                           initcheck) on a small problem, compiled with line information; a finding rejects it
                           (exit status 1) and is named at the file's lines
  --objective NAME         what to optimise: time (default), energy, edp (energy x time), or a metric of the spec
  --higher-is-better       the objective is better when larger (a metric such as GFLOP/s)
  -I, --include DIR        a directory searched for #include (repeatable; compile_commands.json is read as well)
  --launch-timeout SECONDS time limit of one launch (default: 100x the reference kernel's time, at least 1 s)
  --cache FILE             Kernel Tuner cache: results are appended as they come; a rerun resumes from it (with
                           --simulate: the results replayed)
  --simulate FILE          replay FILE (a Kernel Tuner cache) instead of running: no GPU needed
  --simulate-if-no-gpu FILE  tune on the GPU when there is one, else replay FILE
  --t4 FILE                also write the results in the T4 format (FILE, e.g. out.json) and their metadata beside it
                           (out-metadata.json), as Kernel Tuner's store_output_file and store_metadata_file do
  --device N               GPU ordinal (default 0)
  --gpus all|0,2|N         tune on several GPUs of one model at once, one worker each: all of them, these ordinals,
                           or the first N (default: one GPU, --device)
  --json                   print the result as JSON on stdout (progress still goes to stderr)
  -q, --quiet              no progress on stderr

past one host (brute force):
  --shard I/N              evaluate share I of N of the space (0 <= I < N, as Slurm numbers array tasks) into the
                           cache given by --cache; merge the N shards' caches with merge-caches
  --slurm                  write sbatch scripts instead of tuning: an array job of --shards tasks (one GPU and one
                           shard each, caches in a shared directory) and a merge that runs after them; submits nothing.
                           With --simulate FILE the tasks replay FILE and ask for no GPU: a rehearsal on any partition
  --shards N               with --slurm: how many GPUs (array tasks)
  --slurm-dir DIR          with --slurm: where scripts, shard caches, logs and the merged cache go (default ./KERNEL-slurm)
  --sbatch OPTION          with --slurm: an extra #SBATCH option of both jobs, e.g. partition=gpu for
                           --partition=gpu (repeatable)
  --report FILE            the HTML report (one file: chart, configurations, speed of light, how to reproduce);
                           default SPEC.report.html beside the spec (beside the cache with --cache)
  --no-report              write no HTML report
`;

/** The CLI exits once the results are written, not after the GPU workers' shutdown. */
export const exitWhenDone = true;

export async function run(args: string[]): Promise<number> {
  markPhase('command loaded');
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      spec: { type: 'string' },
      kernel: { type: 'string' },
      param: { type: 'string', multiple: true },
      restriction: { type: 'string', multiple: true },
      strategy: { type: 'string' },
      'strategy-option': { type: 'string', multiple: true },
      'max-fevals': { type: 'string' },
      'time-limit': { type: 'string' },
      seed: { type: 'string' },
      ...LAUNCH_COUNT_OPTIONS,
      timing: { type: 'string' },
      energy: { type: 'boolean' },
      sanitize: { type: 'boolean' },
      objective: { type: 'string' },
      'higher-is-better': { type: 'boolean' },
      include: { type: 'string', short: 'I', multiple: true },
      'launch-timeout': { type: 'string' },
      cache: { type: 'string' },
      simulate: { type: 'string' },
      'simulate-if-no-gpu': { type: 'string' },
      t4: { type: 'string' },
      device: { type: 'string' },
      gpus: { type: 'string' },
      shard: { type: 'string' },
      slurm: { type: 'boolean' },
      shards: { type: 'string' },
      'slurm-dir': { type: 'string' },
      sbatch: { type: 'string', multiple: true },
      json: { type: 'boolean' },
      report: { type: 'string' },
      'no-report': { type: 'boolean' },
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
  if (values.gpus !== undefined && values.device !== undefined) throw new TuningSpecError('give --device N (one GPU) or --gpus, not both');
  if (!values.slurm && (values.shards !== undefined || values['slurm-dir'] !== undefined || values.sbatch !== undefined)) throw new TuningSpecError('--shards, --slurm-dir and --sbatch go with --slurm');
  const shard = values.shard === undefined || values.slurm ? undefined : parseShard(values.shard);
  if (shard && values.cache === undefined) throw new TuningSpecError('--shard needs --cache FILE: the shards are merged from their caches (merge-caches)');
  if (values.sanitize && (values.shard !== undefined || values.slurm)) throw new TuningSpecError("--sanitize checks the best configuration of a whole search, not a shard's: run it without --shard and --slurm");
  const selection = values.gpus !== undefined ? parseGpuSelection(values.gpus) : singleGpu(values.device !== undefined ? integer('--device', values.device) : 0);
  // A run on the GPU starts its GPUs (workers, CUDA contexts, NVRTC) while the spec and the kernel's file are read and
  // parsed; their failure is reported where the run needs them, after the spec's own errors.
  const measuring = !values.slurm && values.simulate === undefined && values['simulate-if-no-gpu'] === undefined;
  const opening = measuring ? GpuBackend.openAll(selection) : undefined;
  opening?.catch(() => undefined);
  const { spec, job, htmlReport } = await (async () => {
    const spec = applyFlags(loadTuningSpec(specPath), values);
    checkStrategy(spec, 'the command line');
    markPhase('spec read');
    const job = await tuningJob(spec, isSource ? { file: first } : {});
    markPhase('kernel file read and parsed');
    const htmlReport = reportPath(values, values.cache !== undefined ? `${values.cache.replace(/\.json$/, '')}.report.html` : `${specPath.replace(/\.(ya?ml|json)$/, '')}.report.html`);
    return { spec, job, htmlReport };
  })().catch(async (e: unknown) => {
    await opening?.then((backends) => Promise.all(backends.map((b) => b.dispose())), () => undefined);
    throw e;
  });
  const { kernel } = job;
  if (values.slurm) return slurm(values, kernel.name, spec.strategy, ['tune', resolve(first), ...(isSource ? ['--spec', resolve(specPath)] : []), ...taskFlags(values)]);

  const progress = values.quiet ? undefined : new TuningProgress(undefined, { name: spec.objective, higherIsBetter: spec.objectiveHigherIsBetter });
  const onResult = (r: ConfigResult, p: SearchProgress) => progress?.add(r, p);

  let result: TuneResult;
  let mode: string;
  let device: TuneReportInput['device'] = null;
  let t4Environment: T4Environment = { requirements: [] };
  let limits: DeviceSpeedLimits | null = null;
  let limitsNote: string | undefined;
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
      const replayed = await simulate(spec, kernel.name, loadReplayCache(replayFile, kernel.name), { seed: values.seed === undefined ? undefined : integer('--seed', values.seed), cache: values.cache, shard, metrics: job.options }, onResult);
      mode = `replayed from ${replayFile} (measured on ${replayed.deviceName}; simulation: no GPU used)`;
      result = replayed.result;
      device = { name: replayed.deviceName };
      t4Environment = { device: { name: replayed.deviceName, replayed_from: resolve(replayFile) }, requirements: [] };
      if (values.sanitize) {
        result.sanitizer = { status: 'unavailable', config: result.best?.config ?? {}, reason: 'no-backend', message: `the results were replayed from ${replayFile} without a GPU: nothing ran under compute-sanitizer`, elapsedMs: 0 };
      }
      limitsNote = `not measured: the times were replayed from ${replayFile} without a GPU (run on the device for the speed-of-light percentages)`;
    } else {
      mode = 'measured on the GPU';
      const backends = await (opening ?? GpuBackend.openAll(selection));
      markPhase('GPUs ready');
      try {
        const options: TuneOptions = {
          ...job.options,
          ...(values.seed !== undefined && { seed: integer('--seed', values.seed) }),
          ...(values.cache !== undefined && { cache: values.cache }),
          ...(shard && { shard }),
          ...(values.sanitize && { sanitize: {} }),
          backend: backends,
          onResult,
        };
        result = await kernel.tune(job.test, job.tuneParams, job.restrictions, options);
        markPhase('search done');
        const used = result.gpus ?? [];
        // The strategy that ran (auto's choice, where it chose) says how it used the GPUs.
        const ran = resolveStrategy(result.strategy)(result.strategyChoice ? {} : spec.strategyOptions);
        if (used.length > 1) mode = `measured on ${used.length} GPUs (${used.map((g) => g.ordinal).join(', ')}; ${ran.parallelism})`;
        if (values.t4 !== undefined) {
          const described = await backends[0]!.describe();
          t4Environment = {
            device: { ...described },
            requirements: [`cuda-driver==${described.driverVersion}`, ...(described.nvrtcVersion ? [`nvrtc==${described.nvrtcVersion}`] : []), ...(result.compiler ? [`compiler==${result.compiler.backend}`] : [])],
          };
        }
        if (htmlReport) {
          // The GPUs of one search are of one model: the first one's limits are every one's.
          device = await backends[0]!.describe();
          // After the search, so that the probe's second of copies competes with nothing.
          limits = await backends[0]!.speedLimits();
          markPhase('speed limits measured');
        }
      } finally {
        // Not awaited: the workers shut down (or, when the CLI exits first, exit as its channel closes) while the
        // results are written; a cold tune's last 100 ms were this wait (BENCHMARKS.md, start-up).
        void Promise.all(backends.map((b) => b.dispose())).catch(() => undefined);
      }
    }
  } finally {
    progress?.finish();
  }
  if (shard) mode += `, shard ${shard.index}/${shard.count} of the space`;

  if (htmlReport) {
    const timing =
      replayFile !== undefined
        ? `those of ${replayFile}, recorded on ${device?.name ?? 'its device'}; the search was replayed over them with seed ${result.seed}`
        : `each ${describeLaunchCount(launchCountOf(spec))} between CUDA events after ${spec.warmup} warm-up launch(es)${spec.flushL2 ? ', L2 flushed before each' : ''}${spec.timing === 'kernel_tuner' ? `, ${KERNEL_TUNER_TIMING_UNCHECKED}` : ''}, every configuration checked against the reference on two input sets first`;
    writeReport(
      htmlReport,
      reportFromTune({
        kernel: kernel.name,
        result,
        paramNames: Object.keys(spec.tuneParams),
        tuneParams: Object.fromEntries(Object.entries(job.tuneParams).map(([k, v]) => [k, [...v]])),
        restrictions: job.restrictions,
        mode,
        device,
        limits,
        ...(limitsNote && { limitsNote }),
        compilerOptions: [...(job.options.compilerOptions ?? [])],
        work: job.work,
        timing,
        reproduce: {
          command: commandLine('tune', args),
          spec: { path: resolve(specPath), text: readFileSync(specPath, 'utf8') },
          file: job.file,
          ...((values.cache ?? replayFile) !== undefined && { cache: resolve((values.cache ?? replayFile)!) }),
          seed: result.seed,
          notes: [],
        },
      }),
    );
    markPhase('HTML report written');
  }

  const t4 = values.t4 === undefined ? undefined : writeT4(values.t4, t4Results(result.results, { work: job.work }), t4Environment);
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ kernel: kernel.name, mode, ...result, ...(htmlReport && { report: htmlReport }), ...(t4 && { t4 }) }, null, 2)}\n`);
  } else {
    process.stdout.write(report(result, Object.keys(spec.tuneParams), kernel.name, mode, replayFile !== undefined));
    if (htmlReport) process.stdout.write(`\nHTML report: ${htmlReport}\n`);
    if (t4) process.stdout.write(`T4 results: ${t4.results} (metadata: ${t4.metadata})\n`);
  }
  return result.best && result.sanitizer?.status !== 'hazards' ? 0 : 1;
}

/** --shard I/N: share I of N, 0 <= I < N. */
function parseShard(text: string): Shard {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const shard = m && { index: Number(m[1]), count: Number(m[2]) };
  if (!shard || shard.count < 1 || shard.index >= shard.count) {
    throw new TuningSpecError(`--shard takes I/N with 0 <= I < N (as Slurm numbers the tasks of an array: --array=0-(N-1)), received '${text}'`);
  }
  return shard;
}

/** The flags of this command line that every Slurm task repeats (paths made absolute; not the GPU, cache or output flags). */
function taskFlags(v: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const flag of ['kernel', 'strategy', 'max-fevals', 'time-limit', 'seed', ...Object.values(LAUNCH_COUNT_FLAGS), 'timing', 'launch-timeout', 'objective']) {
    if (typeof v[flag] === 'string') out.push(`--${flag}`, v[flag] as string);
  }
  for (const flag of ['energy', 'higher-is-better'] as const) if (v[flag] === true) out.push(`--${flag}`);
  for (const o of (v['strategy-option'] as string[] | undefined) ?? []) out.push('--strategy-option', o);
  for (const p of (v.param as string[] | undefined) ?? []) out.push('--param', p);
  for (const r of (v.restriction as string[] | undefined) ?? []) out.push('--restriction', r);
  for (const d of (v.include as string[] | undefined) ?? []) out.push('-I', resolve(d));
  return out;
}

/** --slurm: writes the scripts and says how to submit them. */
function slurm(v: Record<string, unknown>, kernelName: string, strategyName: string, tuneArgs: string[]): number {
  if (typeof v.shards !== 'string') throw new TuningSpecError('--slurm needs --shards N: how many GPUs (array tasks, one shard each)');
  const shards = integer('--shards', v.shards);
  if (shards < 1) throw new TuningSpecError('--shards expects at least 1');
  for (const flag of ['shard', 'cache', 'simulate-if-no-gpu', 'gpus', 'device'] as const) {
    if (v[flag] !== undefined) throw new TuningSpecError(`--${flag} does not go with --slurm: every task tunes its shard on the one GPU Slurm gives it, into its own cache`);
  }
  // Checked here, not on the cluster: a cache the tasks cannot replay would fail every one of them.
  const simulate = typeof v.simulate === 'string' ? resolve(v.simulate) : undefined;
  if (simulate !== undefined) loadReplayCache(simulate, kernelName);
  const strategy = resolveStrategy(strategyName)();
  if (!strategy.shardable) throw new TuningSpecError(`--slurm splits a brute-force search into shards; ${strategy.name} cannot be split (${strategy.parallelism}): run it on one host with --gpus`);
  const dir = resolve(typeof v['slurm-dir'] === 'string' ? v['slurm-dir'] : `${kernelName}-slurm`);
  const scripts = writeSlurmScripts({ kernelName, tuneArgs, shards, dir, sbatchOptions: ((v.sbatch as string[] | undefined) ?? []).map((o) => (o.startsWith('-') ? o : `--${o}`)), node: process.execPath, cli: resolve(process.argv[1]!), ...(simulate !== undefined && { simulate }) });
  const tasks = simulate === undefined ? 'one GPU and one shard each' : `each replaying its shard from ${simulate}, no GPU`;
  process.stdout.write(
    `wrote ${scripts.tuneScript} (an array of ${shards} tasks, ${tasks}) and ${scripts.mergeScript} (merges the shards' caches)\n` +
      `submit both with: bash ${scripts.submitScript}\nthe merged cache will be ${scripts.mergedCache}\n`,
  );
  return 0;
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
  inconsistent_timing: 'had timed launches that disagree (not eligible as best)',
};

const STOP_WORDS: Record<StopReason, string> = {
  completed: 'the search completed',
  max_fevals: 'the search stopped at its evaluation limit',
  time_limit: 'the search stopped at its time limit',
  aborted: 'the search was cancelled',
};

/**
 * The results table (best first by the objective, then failures by kind): times, the driver's registers and occupancy,
 * local memory where a configuration spills, energy and power where they were measured, the objective where it is a
 * metric; then the best configuration, and why there is no energy where it was asked for and could not be measured.
 */
function report(result: TuneResult, paramNames: string[], kernelName: string, mode: string, replayed: boolean): string {
  const objective = result.objective ?? TIME_OBJECTIVE;
  const ran = result.results.filter((r) => r.timeMs !== undefined).sort((a, b) => objectiveOf(a, objective) - objectiveOf(b, objective) || a.timeMs! - b.timeMs!);
  const failed = result.results.filter((r) => r.timeMs === undefined);
  const all = [...ran, ...failed];
  const columns: { header: string; cell: (r: ConfigResult) => string }[] = [
    ...paramNames.map((p) => ({ header: p, cell: (r: ConfigResult) => String(r.config[p]) })),
    { header: 'status', cell: (r) => r.status },
    { header: 'median ms', cell: (r) => ms(r.stats?.medianMs ?? r.timeMs) },
    { header: 'min ms', cell: (r) => ms(r.stats?.minMs) },
    { header: 'max ms', cell: (r) => ms(r.stats?.maxMs) },
    { header: 'launches', cell: (r) => (r.stats ? String(r.stats.samplesMs.length) : '') },
    { header: 'median ±', cell: (r) => (r.stats?.medianIntervalMs ? formatMedianInterval(r.stats.medianMs, r.stats.medianIntervalMs) : '') },
    { header: 'regs', cell: (r) => String(r.driver?.num_regs ?? '') },
    { header: 'occupancy', cell: (r) => (r.driver?.occupancy === undefined ? '' : `${Math.round(100 * r.driver.occupancy)}%`) },
  ];
  if (all.some((r) => (r.driver?.local_mem_bytes ?? 0) > 0)) columns.push({ header: 'local B', cell: (r) => String(r.driver?.local_mem_bytes ?? '') });
  if (all.some((r) => r.energy)) {
    columns.push({ header: 'energy mJ', cell: (r) => (r.energy ? (1000 * r.energy.nvml_energy).toPrecision(4) : '') });
    columns.push({ header: 'power W', cell: (r) => (r.energy ? r.energy.nvml_power.toFixed(1) : '') });
  }
  if (!['time', 'energy', 'nvml_energy'].includes(objective.name)) {
    columns.push({ header: objective.name, cell: (r) => { const v = objectiveValue(r, objective); return v === undefined ? '' : Number(v.toPrecision(4)).toString(); } });
  }
  let text = table(columns.map((c) => c.header), all.map((r) => columns.map((c) => c.cell(r))));
  const counts = new Map<ConfigStatus, number>();
  for (const r of result.results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
  if (result.compiler?.note) text += `\n${result.compiler.note}`;
  const outcomes = [...counts].map(([status, n]) => `${n} ${STATUS_WORDS[status]}`).join(', ');
  text += `\n${kernelName}: ${result.results.length} configurations ${mode} with ${result.strategy} in ${(result.elapsedMs / 1000).toFixed(2)} s${replayed ? ' of recorded GPU time' : ''}: ${outcomes}; ${STOP_WORDS[result.stopReason]}${result.stopDetail ? ` (${result.stopDetail})` : ''}\n`;
  if (result.strategyChoice) text += `strategy: ${result.strategyChoice.strategy}, chosen by auto: ${result.strategyChoice.reason}\n`;
  const noEnergy = result.results.find((r) => r.energyUnavailable !== undefined)?.energyUnavailable;
  if (noEnergy !== undefined && !result.results.some((r) => r.energy)) text += `energy: not measured: ${noEnergy}\n`;
  const best = result.best;
  if (best) {
    const value = objectiveValue(best, objective);
    const by = objective.name === 'time' || value === undefined ? '' : `, ${objective.name} ${formatMeasured(objective.name, value)} (the objective, ${objective.higherIsBetter ? 'highest' : 'lowest'})`;
    text += `best: ${paramNames.map((p) => `${p}=${String(best.config[p])}`).join(' ')}  ${ms(best.timeMs)} ms${by}`;
    if (best.geometry) text += `  (grid ${best.geometry.grid.join('x')}, block ${best.geometry.block.join('x')})`;
    text += '\n';
    if (best.verified) text += `verified: ${describeVerification(best.verified)}\n`;
    const sanitizer = result.sanitizer;
    if (sanitizer) {
      text += `${sanitizer.status === 'hazards' ? 'REJECTED by ' : ''}${verdictSummary(sanitizer)}\n`;
      for (const line of findingLines(shownFindings(sanitizer))) text += `  ${line}\n`;
    }
  } else {
    text += 'no configuration succeeded\n';
  }
  const firstErrors = failed.filter((r) => r.error).slice(0, 3);
  for (const r of firstErrors) text += `\n${paramNames.map((p) => `${p}=${String(r.config[p])}`).join(' ')} ${r.status}: ${r.error!.message.split('\n')[0]}`;
  return firstErrors.length ? `${text}\n` : text;
}

function applyFlags(spec: LoadedTuningSpec, v: Record<string, unknown>): LoadedTuningSpec {
  const out = { ...spec, tuneParams: { ...spec.tuneParams }, restrictions: [...spec.restrictions] };
  if (typeof v.kernel === 'string') out.kernel = v.kernel;
  for (const p of (v.param as string[] | undefined) ?? []) {
    const m = /^([A-Za-z_]\w*)=(.+)$/.exec(p);
    if (!m) throw new TuningSpecError(`--param expects NAME=V1,V2,... but received '${p}'`);
    out.tuneParams[m[1]!] = m[2]!.split(',').map(parseValue);
  }
  out.restrictions.push(...((v.restriction as string[] | undefined) ?? []));
  if (typeof v.strategy === 'string') {
    // Another strategy from the command line: the spec's options were for the spec's strategy.
    if (v.strategy !== spec.strategy) delete out.strategyOptions;
    out.strategy = v.strategy;
  }
  const flags = (v['strategy-option'] as string[] | undefined) ?? [];
  if (flags.length > 0) out.strategyOptions = { ...out.strategyOptions, ...strategyOptionsFromFlags(flags) };
  if (typeof v['max-fevals'] === 'string') out.maxFevals = integer('--max-fevals', v['max-fevals']);
  if (typeof v['time-limit'] === 'string') out.timeLimitS = positive('--time-limit', v['time-limit']);
  const launches = launchCountFromFlags(v, spec);
  if (launches) {
    if (launches.problems.length > 0) throw new TuningSpecError(`the command line:\n${launches.problems.join('\n')}`);
    for (const field of Object.keys(LAUNCH_COUNT_FLAGS) as LaunchCountField[]) delete out[field];
    Object.assign(out, launches.settings);
  }
  if (typeof v.timing === 'string') {
    if (!(TIMING_MODES as readonly string[]).includes(v.timing)) throw new TuningSpecError(`--timing expects one of ${TIMING_MODES.join(', ')}, received '${v.timing}'`);
    out.timing = v.timing as TimingMode;
  }
  if (v.energy === true) out.energy = out.energy === false ? true : out.energy;
  if (typeof v.objective === 'string') out.objective = v.objective;
  if (v['higher-is-better'] === true) out.objectiveHigherIsBetter = true;
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
