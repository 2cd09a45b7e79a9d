// llm-kernel-tuner auto: the whole LLM session from a terminal. Checks the file and its kernel first, then opens the GPU
// (no GPU: one clear error, no model call), checks the model endpoint, streams progress to stderr as the session runs,
// and writes the tuned kernel, the reports (Markdown, JSON and HTML) and the diff into --out. Every session is stored
// (see sessions.ts), with every model exchange, so that it can be resumed (--resume), started again from one of its
// steps (--resume --from-step, a branch), or replayed without a model (--replay).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { unifiedDiff } from '../engine/candidate/diff';
import { describeEvent, describeRejection, type EventOf, type PlanStepView, type TuningEvent } from '../engine/progress/events';
import { newSessionId, type HistoryEntry } from '../engine/store/history-store';
import { lockSession } from '../engine/store/session-lock';
import { ReplayChatModel } from '../engine/llm/replay';
import { checkReachable, createChatModel, parseProviderConfig, transportRetryPolicyFor, type ProviderConfig } from '../engine/llm/providers';
import type { SessionEnd } from '../engine/session/session';
import { transformerOptionsFrom, type SessionRunParts } from '../engine/session/session-options';
import { approvalsOf, branchOptionsOf, eventsBeforeStep, inheritedEvents, stoppedEarly, type StoredSessionHeader } from '../engine/session/session-log';
import { DEFAULT_AUTONOMOUS, DEFAULT_EVOLUTIONARY_SETTINGS, replaySettings, type BranchOptions, type SessionSettings } from '../engine/session/session-settings';
import type { PlanApproval } from '../engine/strategies/approval';
import { defaultTuningSteps } from '../engine/strategies/explicit';
import { LLMKernelTransformer } from '../engine/session/transformer';
import type { TuningBackend } from '../tuner/run/backend';
import { buildFlagsFor } from '../tuner/compile/compile-commands';
import { GpuBackend } from '../tuner/run/gpu-backend';
import { parseGpuSelection, singleGpu, type GpuSelection } from '../tuner/run/gpu-selection';
import { TunableKernel } from '../tuner/tunable-kernel';
import { readUserFile } from '../tuner/spec/user-files';
import { reportFromSession, type ReportData } from '../report/model';
import { usageOf, usageText, warningsOf } from '../engine/session/session-view';
import { commandLine, reportPath, writeReport } from './report';
import { findSession, openSessionStore, SessionRecorder, sessionsDir, storedEvents, type SessionStore } from './sessions';
import { LAUNCH_COUNT_FLAGS, LAUNCH_COUNT_HELP, LAUNCH_COUNT_OPTIONS, launchCountFromFlags } from './launch-count-flags';
import { launchCountOf } from '../tuner/run/launch-count';

const USAGE = `usage: llm-kernel-tuner auto FILE.cu --kernel NAME --provider ollama|openai --model MODEL [options]
       llm-kernel-tuner auto --resume SESSION [--from-step STEP [--kernel FILE]] [model options]
       llm-kernel-tuner auto --replay SESSION

Lets a model rewrite the kernel with tunable parameters, step by step; every candidate is compiled, checked against the
original kernel and tuned on the GPU. FILE.cu may hold its host program and include local headers: the model sees the
kernel and the device code it uses, and the tuned file differs from FILE.cu only there and where main() launches it.
Every session is stored with every request to the model and its answer (never an API key); its id is printed first.

options:
  --kernel NAME            the __global__ function to tune (required when the file has several)
  --provider P             ollama or openai (any OpenAI-compatible server: vLLM, LM Studio, llama.cpp)
  --model M                the model name
  --base-url URL           the endpoint (default: Ollama http://127.0.0.1:11434, OpenAI https://api.openai.com/v1)
  --api-key-env VAR        read the API key from this environment variable
  --strategy S             autonomous (default), explicit, or evolutionary (a population of variants evolved by
                           mutation, crossover and a judge that reads the profile; the model and the GPU work at once)
  --seed N                 evolutionary: seeds the choice of operators and parents (default 0)
  --window N               evolutionary: children the model writes at once (default 4; at most a tenth of --max-calls)
  --max-children N         evolutionary: children asked for at most (default: the budget decides; 16 without one)
  --approve-plan           show the plan and ask which steps to carry out before tuning
  --threshold PCT          improvement (percent, in the objective) a step needs to be accepted (default 1.0)
  --objective NAME         what every step must improve: time (default), energy (J per launch, NVML) or edp
  --energy                 also measure energy and power with NVML (read only) for every configuration
${LAUNCH_COUNT_HELP}  -I, --include DIR        a directory searched for #include (repeatable; compile_commands.json is read as well)
  --launch-timeout SECONDS time limit of one launch (default: 100x the original kernel's time, at least 1 s)
  --retries N              times a failed answer is explained to the model and asked again (default 3)
  --llm-concurrency N      requests to the model at once, where the provider allows several (default 4)
  --max-calls N            budget: model calls (the session stops asking for more and says so)
  --max-tokens N           budget: input and output tokens
  --max-cost USD           budget: money, from --price-in and --price-out
  --max-time SECONDS       budget: the session's wall time
  --price-in USD           the model's price per million input tokens (the cost of each call and of the session)
  --price-out USD          the model's price per million output tokens
  --no-sanitize            accept candidates without running them under compute-sanitizer first (by default the best
                           configuration of a candidate that would be accepted runs once under racecheck, memcheck,
                           synccheck and initcheck; a hazard rejects it and is told to the model)
  --device N               CUDA device (default 0)
  --gpus all|0,2|N         tune every candidate on several GPUs of one model at once, one worker each: all of them,
                           these ordinals, or the first N (default: one GPU, --device)
  --out DIR                where results go (default FILE.tuned/)
  --report FILE            the HTML report (one file: chart, each step's diff, configurations, speed of light, how
                           to reproduce); default OUT/report.html
  --no-report              write no HTML report
  --sessions DIR           where sessions are stored (default $LKT_SESSIONS_DIR, else ~/.local/state/llm-kernel-tuner;
                           the extension's storage directory works too)
  --json                   also write every event as a JSON line to stdout
  -v, --verbose            show every configuration and model call

stored sessions (SESSION: a session id, or the path of a session file):
  --resume SESSION         continue a session that was interrupted, cancelled or failed, or whose tuning stopped
                           early because the model failed (it finished with the best kernel so far), with its own
                           settings; the model is the recorded one unless --provider/--model/--base-url say otherwise;
                           a finished evolutionary session goes on evolving within the budget given now (--max-calls ...)
  --from-step STEP         with --resume: a new session, a branch, that starts again where step STEP (its id as the
                           output shows it: "step 3: ...") started, from the kernel as it was then; both keep their
                           results
  --kernel FILE            with --from-step: the whole .cu file as the step should start from it (your edit of the
                           kernel); it is checked and timed first
  --replay SESSION         run the session's whole graph again on this GPU with the recorded answers and no model;
                           stops with the call and the difference where this run departs from the recording
`;

export interface AutoDeps {
  /** Opens the GPUs, one backend each; tests pass fakes. */
  openBackends?: (gpus: GpuSelection) => Promise<readonly TuningBackend[]>;
  stdout?: Writable;
  stderr?: Writable;
  stdin?: Readable;
}

interface Common {
  gpus: GpuSelection;
  sessions: string | undefined;
  out: string | undefined;
  /** The HTML report's path; null: none; undefined: report.html in the results' directory. */
  report: string | null | undefined;
  /** The command line as given (what the report says reproduces the session). */
  args: string[];
  json: boolean;
  verbose: boolean;
}

type AutoOptions =
  | (Common & { mode: 'new'; file: string; provider: ProviderConfig; settings: SessionSettings })
  | (Common & { mode: 'resume'; session: string; fromStep: string | undefined; kernelFile: string | undefined; provider: Partial<ProviderConfig>; spending: Spending })
  | (Common & { mode: 'replay'; session: string });

/** What a session can optimise from the command line: each is lower-is-better. */
const SESSION_OBJECTIVES = ['time', 'energy', 'edp'];

/** Flags that only a new session takes (a stored session brings its own settings). */
const NEW_SESSION_ONLY = ['strategy', 'approve-plan', 'threshold', 'objective', 'energy', ...Object.values(LAUNCH_COUNT_FLAGS), 'include', 'launch-timeout', 'retries', 'no-sanitize', 'seed', 'window', 'max-children'];
/** What a session may spend, and at what speed it asks: given anew when a session is resumed. */
const SPENDING_FLAGS = ['llm-concurrency', 'max-calls', 'max-tokens', 'max-cost', 'max-time', 'price-in', 'price-out'] as const;
const MODEL_FLAGS = ['provider', 'model', 'base-url', 'api-key-env'] as const;

function number(flag: string, value: string | undefined, fallback: number, check: (n: number) => boolean, expected: string): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!check(n)) throw new Error(`--${flag} must be ${expected}, got ${value}`);
  return n;
}

type Spending = Pick<SessionSettings, 'llmConcurrency' | 'budget' | 'prices'>;

/** The spending flags given (SPENDING_FLAGS), as settings; a cost budget without both prices is refused here. */
function spendingFrom(values: Partial<Record<(typeof SPENDING_FLAGS)[number], string>>): Spending {
  const optional = (flag: (typeof SPENDING_FLAGS)[number], check: (n: number) => boolean, expected: string) =>
    values[flag] === undefined ? undefined : number(flag, values[flag], 0, check, expected);
  const positiveInteger = (n: number) => Number.isSafeInteger(n) && n > 0;
  const positive = (n: number) => Number.isFinite(n) && n > 0;
  const price = (n: number) => Number.isFinite(n) && n >= 0;
  const llmConcurrency = optional('llm-concurrency', positiveInteger, 'an integer >= 1');
  const budget = {
    ...(values['max-calls'] !== undefined && { modelCalls: optional('max-calls', positiveInteger, 'an integer >= 1')! }),
    ...(values['max-tokens'] !== undefined && { tokens: optional('max-tokens', positiveInteger, 'an integer >= 1')! }),
    ...(values['max-cost'] !== undefined && { costUsd: optional('max-cost', positive, 'a positive amount of USD')! }),
    ...(values['max-time'] !== undefined && { wallTimeS: optional('max-time', positive, 'a positive number of seconds')! }),
  };
  const priceIn = optional('price-in', price, 'a number >= 0 (USD per million input tokens)');
  const priceOut = optional('price-out', price, 'a number >= 0 (USD per million output tokens)');
  if ((priceIn === undefined) !== (priceOut === undefined)) throw new Error('give both --price-in and --price-out (USD per million input and output tokens)');
  if (budget.costUsd !== undefined && priceIn === undefined) throw new Error('--max-cost needs the model\'s prices: --price-in and --price-out (USD per million tokens)');
  return {
    ...(llmConcurrency !== undefined && { llmConcurrency }),
    ...(Object.keys(budget).length > 0 && { budget }),
    ...(priceIn !== undefined && { prices: { inputPerMTok: priceIn, outputPerMTok: priceOut! } }),
  };
}

function apiKeyFrom(variable: string | undefined): string | undefined {
  if (variable === undefined) return undefined;
  const key = process.env[variable];
  if (!key) throw new Error(`--api-key-env ${variable}: the environment variable is not set`);
  return key;
}

function parse(args: string[]): AutoOptions | 'help' {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      kernel: { type: 'string' },
      provider: { type: 'string' },
      model: { type: 'string' },
      'base-url': { type: 'string' },
      'api-key-env': { type: 'string' },
      strategy: { type: 'string' },
      'approve-plan': { type: 'boolean' },
      threshold: { type: 'string' },
      objective: { type: 'string' },
      energy: { type: 'boolean' },
      'no-sanitize': { type: 'boolean' },
      ...LAUNCH_COUNT_OPTIONS,
      include: { type: 'string', short: 'I', multiple: true },
      'launch-timeout': { type: 'string' },
      retries: { type: 'string' },
      seed: { type: 'string' },
      window: { type: 'string' },
      'max-children': { type: 'string' },
      'llm-concurrency': { type: 'string' },
      'max-calls': { type: 'string' },
      'max-tokens': { type: 'string' },
      'max-cost': { type: 'string' },
      'max-time': { type: 'string' },
      'price-in': { type: 'string' },
      'price-out': { type: 'string' },
      device: { type: 'string' },
      gpus: { type: 'string' },
      out: { type: 'string' },
      report: { type: 'string' },
      'no-report': { type: 'boolean', default: false },
      sessions: { type: 'string' },
      resume: { type: 'string' },
      'from-step': { type: 'string' },
      replay: { type: 'string' },
      json: { type: 'boolean', default: false },
      verbose: { type: 'boolean', short: 'v', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  const device = number('device', values.device, 0, (n) => Number.isInteger(n) && n >= 0, 'an integer >= 0');
  if (values.gpus !== undefined && values.device !== undefined) throw new Error('give --device N (one GPU) or --gpus, not both');
  const gpus = values.gpus === undefined ? singleGpu(device) : parseGpuSelection(values.gpus);
  // The default report goes beside the other results, whose directory a stored session only knows once it is read.
  const report = values['no-report'] || values.report !== undefined ? reportPath(values, '') : undefined;
  const common: Common = { gpus, sessions: values.sessions, out: values.out === undefined ? undefined : resolve(values.out), report, args, json: values.json, verbose: values.verbose };
  const stored = values.resume ?? values.replay;
  if (stored !== undefined) {
    if (values.resume !== undefined && values.replay !== undefined) throw new Error('--resume and --replay exclude each other');
    if (positionals.length > 0) throw new Error(`a stored session brings its own file: leave out ${positionals.join(' ')}`);
    const given = NEW_SESSION_ONLY.filter((f) => (values as Record<string, unknown>)[f] !== undefined);
    if (given.length > 0) throw new Error(`a stored session runs with its recorded settings: leave out --${given.join(', --')}`);
    if (values.replay !== undefined) {
      const model = [...MODEL_FLAGS, ...SPENDING_FLAGS].filter((f) => values[f] !== undefined);
      if (model.length > 0) throw new Error(`a replay asks no model: leave out --${model.join(', --')}`);
      if (values['from-step'] !== undefined || values.kernel !== undefined) throw new Error('--from-step and --kernel go with --resume');
      return { ...common, mode: 'replay', session: values.replay };
    }
    if (values.kernel !== undefined && values['from-step'] === undefined) throw new Error('--kernel FILE goes with --from-step: it is the kernel that step starts from');
    if (values.provider !== undefined && values.provider !== 'ollama' && values.provider !== 'openai') throw new Error(`--provider must be ollama or openai, got ${values.provider}`);
    const apiKey = apiKeyFrom(values['api-key-env']);
    const provider: Partial<ProviderConfig> = {
      ...(values.provider !== undefined && { provider: values.provider }),
      ...(values.model !== undefined && { model: values.model }),
      ...(values['base-url'] !== undefined && { baseUrl: values['base-url'] }),
      ...(apiKey !== undefined && { apiKey }),
    } as Partial<ProviderConfig>;
    return { ...common, mode: 'resume', session: stored, fromStep: values['from-step'], kernelFile: values.kernel === undefined ? undefined : resolve(values.kernel), provider, spending: spendingFrom(values) };
  }
  if (values['from-step'] !== undefined) throw new Error('--from-step goes with --resume SESSION');
  if (positionals.length !== 1) throw new Error(`expected one FILE.cu, got ${positionals.length === 0 ? 'none' : positionals.join(' ')}`);
  const file = resolve(positionals[0]!);
  if (values.provider !== 'ollama' && values.provider !== 'openai') throw new Error(`--provider must be ollama or openai, got ${values.provider ?? 'nothing'}`);
  if (!values.model) throw new Error('--model is required');
  const strategy = values.strategy ?? 'autonomous';
  if (strategy !== 'autonomous' && strategy !== 'explicit' && strategy !== 'evolutionary') throw new Error(`--strategy must be autonomous, explicit or evolutionary, got ${strategy}`);
  const evolutionFlags = (['seed', 'window', 'max-children'] as const).filter((f) => values[f] !== undefined);
  if (strategy !== 'evolutionary' && evolutionFlags.length > 0) throw new Error(`--${evolutionFlags.join(', --')} go with --strategy evolutionary`);
  const evolution = {
    kind: 'evolutionary' as const,
    seed: number('seed', values.seed, DEFAULT_EVOLUTIONARY_SETTINGS.seed, (n) => Number.isSafeInteger(n), 'an integer'),
    window: number('window', values.window, DEFAULT_EVOLUTIONARY_SETTINGS.window, (n) => Number.isSafeInteger(n) && n >= 1, 'an integer >= 1'),
    ...(values['max-children'] !== undefined && { maxChildren: number('max-children', values['max-children'], 0, (n) => Number.isSafeInteger(n) && n >= 1, 'an integer >= 1') }),
  };
  const threshold = number('threshold', values.threshold, 1.0, (n) => Number.isFinite(n) && n >= 0, 'a number >= 0 (percent)');
  const objective = values.objective ?? 'time';
  if (!SESSION_OBJECTIVES.includes(objective)) throw new Error(`--objective must be ${SESSION_OBJECTIVES.join(', ')}, got ${objective}`);
  const launches = launchCountFromFlags(values);
  if (launches && launches.problems.length > 0) throw new Error(launches.problems.join('; '));
  const iterations = launchCountOf(launches?.settings ?? {});
  const retries = number('retries', values.retries, 3, (n) => Number.isInteger(n) && n >= 0, 'an integer >= 0');
  const launchTimeout = values['launch-timeout'] === undefined ? undefined : number('launch-timeout', values['launch-timeout'], 0, (n) => n > 0, 'a positive number of seconds');
  const apiKey = apiKeyFrom(values['api-key-env']);
  const provider = parseProviderConfig({
    provider: values.provider,
    model: values.model,
    ...(values['base-url'] !== undefined && { baseUrl: values['base-url'] }),
    ...(apiKey !== undefined && values.provider === 'openai' && { apiKey }),
  });
  // The project's own build flags for this file, where its workspace has a compile_commands.json.
  const build = buildFlagsFor(file);
  const settings: SessionSettings = {
    ...(values.kernel !== undefined && { kernelName: values.kernel }),
    fileName: basename(file),
    filePath: file,
    includePaths: [...(values.include ?? []).map((d) => resolve(d)), ...(build?.includePaths ?? [])],
    compilerOptions: build?.options ?? [],
    strategy: strategy === 'explicit' ? { kind: 'explicit', steps: defaultTuningSteps().map((s) => s.id) } : strategy === 'evolutionary' ? evolution : DEFAULT_AUTONOMOUS,
    ...spendingFrom(values),
    retries,
    performanceThreshold: threshold,
    ...(objective !== 'time' && { objective: { name: objective, higherIsBetter: false } }),
    ...(values.energy && { energy: true }),
    ...(values['no-sanitize'] && { sanitize: false }),
    iterations,
    timePerTestS: 15,
    ...(launchTimeout !== undefined && { launchTimeoutS: launchTimeout }),
    structuredOutputType: 'default',
    stripThinking: false,
    approvePlan: values['approve-plan'] ?? false,
    model: { provider: provider.provider, model: provider.model, baseUrl: provider.baseUrl },
  };
  return { ...common, mode: 'new', file, provider, settings };
}

interface Io {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
}

export async function run(args: string[], deps: AutoDeps = {}): Promise<number> {
  const io: Io = { stdout: deps.stdout ?? process.stdout, stderr: deps.stderr ?? process.stderr, stdin: deps.stdin ?? process.stdin };
  let options: AutoOptions | 'help';
  try {
    options = parse(args);
  } catch (e) {
    // parse() only reads and checks the command line (parseArgs, the provider config): every failure is a usage error.
    io.stderr.write(`llm-kernel-tuner auto: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  const store = openSessionStore(sessionsDir(options.sessions));
  // A stored session is found before the GPU is opened: a wrong id is the user's first problem.
  const entry = options.mode === 'new' ? undefined : await findSession(store, options.session);
  // A session continued in its own thread is run by one process at a time: a second one is told who runs it.
  const lock = options.mode === 'resume' && options.fromStep === undefined ? lockSession(store.dir, entry!.id, commandLine('auto', args)) : undefined;
  try {
    return await runWithSession(options, entry, store, io, deps);
  } finally {
    lock?.release();
  }
}

async function runWithSession(options: AutoOptions, entry: HistoryEntry | undefined, store: SessionStore, io: Io, deps: AutoDeps): Promise<number> {
  // Then the files: a missing file, or one without the kernel to tune, is reported before a missing GPU or model.
  const source = options.mode === 'new' ? await kernelSource(options.file, options.file, options.settings, 'the kernel file') : entry!.originalCode;
  const editedCode =
    options.mode === 'resume' && options.kernelFile !== undefined ? await kernelSource(options.kernelFile, entry!.filePath, recordedSettings(entry!, 'branched'), 'the edited kernel file') : undefined;
  // Then the GPU: without one nothing can be tuned, and no model should be asked anything.
  const backends = await (deps.openBackends ?? ((gpus) => GpuBackend.openAll(gpus)))(options.gpus);
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    const parts = { backend: backends, checkpointer: store.checkpointer, signal: controller.signal };
    if (options.mode === 'new') return await runNew(options, source, store, parts, io);
    if (options.mode === 'resume') return await runStored(options, entry!, editedCode, store, parts, io);
    return await runReplay(options, entry!, store, parts, io);
  } finally {
    process.removeListener('SIGINT', onSigint);
    await Promise.all(backends.map((b) => b.dispose().catch(() => undefined)));
  }
}

/**
 * The text of a kernel file the user named, once it is known to hold the kernel to tune. `filePath` is where the
 * session's file is (an edited kernel takes the place of the session's file, whose directory its includes are in).
 */
async function kernelSource(path: string, filePath: string, settings: SessionSettings, what: string): Promise<string> {
  const source = readUserFile(path, what);
  await TunableKernel.create(source, { fileName: basename(path), filePath, includePaths: settings.includePaths, ...(settings.kernelName !== undefined && { kernelName: settings.kernelName }) });
  return source;
}

type Parts = Pick<SessionRunParts, 'backend' | 'checkpointer' | 'signal'>;

const TIMING_NOTE = 'Each time is the median of the timed launches between CUDA events; every configuration was checked against the original kernel on two input sets first.';

/** What the HTML report of a stored session says reproduces it: a new run asks the model anew, a replay does not. */
function storedReproduce(id: string, store: SessionStore): Reproduce {
  return {
    session: id,
    notes: [
      `A model's answers differ from run to run, so the command starts a new session; \`${commandLine('auto', ['--replay', id, '--sessions', store.dir])}\` runs this session's graph again with its recorded answers and no model.`,
      TIMING_NOTE,
    ],
  };
}

async function runNew(options: Extract<AutoOptions, { mode: 'new' }>, source: string, store: SessionStore, parts: Parts, io: Io): Promise<number> {
  await checkReachable(options.provider, parts.signal);
  const id = newSessionId();
  const header = { sessionId: id, fileName: basename(options.file), startedAt: new Date().toISOString(), model: `${options.provider.provider}: ${options.provider.model}`, strategy: options.settings.strategy.kind };
  const recorder = new SessionRecorder(store.history, { id, threadId: id, originalCode: source, filePath: options.file, run: options.settings, header, events: [], exchanges: [] });
  io.stderr.write(`session ${id} (stored in ${store.dir})\n`);
  const llm = createChatModel(options.provider);
  const run = { ...parts, llm, threadId: id, transportRetryPolicy: transportRetryPolicyFor(options.provider) };
  return session(options, source, options.file, options.settings, run, io, { recorder, model: options.provider, header, inherited: [], reproduce: storedReproduce(id, store) });
}

/** A stored session continued in its own thread, or (with --from-step) a branch of it in a new one. */
async function runStored(options: Extract<AutoOptions, { mode: 'resume' }>, entry: HistoryEntry, editedCode: string | undefined, store: SessionStore, parts: Parts, io: Io): Promise<number> {
  const recorded = recordedSettings(entry, 'resumed');
  // What it may spend is given anew; a budget given now replaces the recorded one (what was spent still counts).
  const settings: SessionSettings = { ...recorded, ...options.spending, ...(options.spending.budget && { budget: options.spending.budget }) };
  const provider = parseProviderConfig({ ...settings.model, ...options.provider });
  await checkReachable(provider, parts.signal);
  const llm = createChatModel(provider);
  const events = storedEvents(entry);
  const run = { ...parts, llm, transportRetryPolicy: transportRetryPolicyFor(provider) };
  const common = { fileName: settings.fileName, model: `${provider.provider}: ${provider.model}`, strategy: settings.strategy.kind };
  if (options.fromStep === undefined) {
    const evolveFurther = entry.status === 'completed' && settings.strategy.kind === 'evolutionary' && !stoppedEarly(events);
    if (entry.status === 'completed' && !stoppedEarly(events) && !evolveFurther) throw new Error(`session ${entry.id} is completed: start a branch of it with --from-step STEP`);
    const header = { ...common, sessionId: entry.id, startedAt: entry.createdAt };
    const recorder = new SessionRecorder(store.history, {
      id: entry.id,
      threadId: entry.threadId,
      originalCode: entry.originalCode,
      filePath: entry.filePath,
      run: settings,
      ...(entry.parent && { parent: entry.parent }),
      header,
      events,
      exchanges: entry.llmExchanges ?? [],
      createdAt: entry.createdAt,
    });
    io.stderr.write(evolveFurther ? `evolving session ${entry.id} further\n` : `resuming session ${entry.id}\n`);
    const how = { recorder, model: provider, header, inherited: events, reproduce: storedReproduce(entry.id, store) };
    return session(options, entry.originalCode, entry.filePath, settings, { ...run, threadId: entry.threadId, ...(evolveFurther && { evolveFurther }) }, io, how);
  }
  const stepId = options.fromStep;
  const started = events.find((e): e is EventOf<'step.started'> => e.type === 'step.started' && e.stepId === stepId);
  const id = newSessionId();
  const header = { ...common, sessionId: id, startedAt: new Date().toISOString() };
  const inherited = eventsBeforeStep(events, stepId);
  const recorder = new SessionRecorder(store.history, {
    id,
    threadId: id,
    originalCode: entry.originalCode,
    filePath: entry.filePath,
    run: settings,
    parent: { id: entry.id, threadId: entry.threadId, stepId, ...(started && { stepTitle: started.title }), ...(editedCode !== undefined && { editedCode }) },
    header,
    events: inherited,
    exchanges: [],
  });
  io.stderr.write(`session ${id}: a branch of ${entry.id} from step ${stepId}${editedCode === undefined ? '' : ` with the kernel of ${options.kernelFile}`} (stored in ${store.dir})\n`);
  const branch: BranchOptions = { parentThreadId: entry.threadId, fromStepId: stepId, ...(editedCode !== undefined && { code: editedCode }) };
  return session(options, entry.originalCode, entry.filePath, settings, { ...run, threadId: id, branch }, io, { recorder, model: provider, header, inherited, reproduce: storedReproduce(id, store) });
}

/** The session's graph again with the recorded answers (a branch: from where it branched off, over its parent's checkpoints). */
async function runReplay(options: Extract<AutoOptions, { mode: 'replay' }>, entry: HistoryEntry, store: SessionStore, parts: Parts, io: Io): Promise<number> {
  const events = storedEvents(entry);
  const settings = replaySettings(recordedSettings(entry, 'replayed'), events);
  const exchanges = entry.llmExchanges ?? [];
  if (exchanges.length === 0) throw new Error(`session ${entry.id} holds no model exchanges: it was recorded before exchanges were, or asked no model, and cannot be replayed`);
  const llm = new ReplayChatModel(exchanges);
  const threadId = `replay-${newSessionId()}`;
  const branch = branchOptionsOf(entry);
  io.stderr.write(`replaying session ${entry.id} (${exchanges.length} recorded model exchange(s))${branch ? ` from step ${branch.fromStepId} of ${entry.parent!.id}` : ''}\n`);
  const how = {
    approvals: approvalsOf(events),
    model: settings.model,
    header: { sessionId: entry.id, fileName: settings.fileName, startedAt: new Date().toISOString(), model: `replay of ${entry.id} (${settings.model.provider}: ${settings.model.model})`, strategy: settings.strategy.kind },
    // A replayed branch starts where the branch did: before that, the log is what the branch inherited.
    inherited: inheritedEvents(events),
    reproduce: {
      session: entry.id,
      notes: [`The model's answers are the ones recorded in session ${entry.id}: the command runs its graph again with them and no model, and stops where this run departs from the recording.`, TIMING_NOTE],
    },
  };
  const started = performance.now();
  try {
    const code = await session(options, entry.originalCode, entry.filePath, settings, { ...parts, llm, threadId, ...(branch && { branch }) }, io, how);
    const unused = llm.unused();
    io.stderr.write(`replay: ${llm.callCount} model call(s) served from the recording in ${((performance.now() - started) / 1000).toFixed(2)} s (graph and GPU; no model latency)${unused.length > 0 ? `; ${unused.length} recorded exchange(s) were not asked for (first: call ${unused[0]!.index + 1}, "${unused[0]!.exchange.purpose}")` : ''}\n`);
    return code;
  } finally {
    await store.checkpointer.deleteThread(threadId).catch(() => undefined);
  }
}

function recordedSettings(entry: HistoryEntry, what: string): SessionSettings {
  if (!entry.run) throw new Error(`session ${entry.id} was stored without its settings (by an older version) and cannot be ${what}`);
  return entry.run;
}

type Reproduce = Pick<ReportData['reproduce'], 'session' | 'notes'>;

interface HowRun {
  /** Stores the session as it runs (a replay stores nothing). */
  recorder?: SessionRecorder;
  /** A replay answers the plan approvals as recorded; without them the user is asked at the prompt. */
  approvals?: PlanApproval[];
  model: Pick<ProviderConfig, 'provider' | 'model'>;
  header: Omit<StoredSessionHeader, 'kernelName'>;
  /** The log this run goes on from (a resumed session's, what a branch inherited of its parent's): part of the results. */
  inherited: readonly TuningEvent[];
  reproduce: Reproduce;
}

/**
 * Runs one session to its end: progress on stderr (events on stdout with --json), the plan approval at the prompt (a
 * replay answers it as recorded), the session stored as it goes, and the results written when it finished.
 */
async function session(options: Common, source: string, file: string, settings: SessionSettings, run: SessionRunParts, io: Io, how: HowRun): Promise<number> {
  const { options: transformerOptions, warnings } = transformerOptionsFrom(settings, run);
  for (const w of warnings) io.stderr.write(`warning: ${w}\n`);
  const transformer = new LLMKernelTransformer(source, transformerOptions);
  const events: TuningEvent[] = [];
  const show = async (event: TuningEvent) => {
    events.push(event);
    await how.recorder?.record(event);
    if (options.json) io.stdout.write(`${JSON.stringify(event)}\n`);
    const { level, text } = describeEvent(event);
    if (level !== 'debug' || options.verbose) io.stderr.write(`${level === 'info' || level === 'debug' ? '' : `${level}: `}${text}\n`);
  };
  const approvals = [...(how.approvals ?? [])];
  let end = await drain(transformer.stream(), show);
  while (end.status === 'awaiting_approval') {
    const approval = how.approvals ? approvals.shift() : await askApproval(end.steps, io.stdin, io.stderr);
    if (!approval) {
      io.stderr.write(how.approvals ? 'the recording holds no further plan approval: stopping\n' : 'not approved: stopping (nothing was tuned)\n');
      await how.recorder?.finish(end);
      return 1;
    }
    end = await drain(transformer.stream({ approval }), show);
  }
  await how.recorder?.finish(end);
  if (end.status === 'cancelled') return 130;
  if (end.status === 'failed') return 1;
  const log = [...how.inherited, ...events];
  const finished = events.find((e): e is EventOf<'session.finished'> => e.type === 'session.finished')!;
  const out = options.out ?? (existsSync(dirname(file)) ? `${file}.tuned` : resolve(`${basename(file)}.tuned`));
  const written = writeResults({ file, out, provider: how.model }, source, log, finished);
  const report = options.report === undefined ? join(out, 'report.html') : options.report;
  if (report) {
    const kernelName = log.findLast((e): e is EventOf<'session.started'> => e.type === 'session.started')?.kernel.name ?? settings.kernelName ?? basename(file);
    writeReport(
      report,
      reportFromSession({
        header: { ...how.header, kernelName },
        events: log,
        compilerOptions: settings.compilerOptions,
        reproduce: { command: commandLine('auto', options.args), file, ...how.reproduce },
      }),
    );
    written.push(report);
  }
  const usage = usageOf(log);
  if (usage.calls > 0) io.stderr.write(`model: ${usageText(usage)}\n`);
  io.stderr.write(`results: ${written.join(', ')}\n`);
  if (stoppedEarly(events) && how.recorder) {
    const resume = commandLine('auto', ['--resume', how.recorder.id, ...(options.sessions ? ['--sessions', options.sessions] : [])]);
    io.stderr.write(`tuning stopped early (see the warning above): \`${resume}\` asks the model again from there\n`);
  }
  return 0;
}

async function drain(stream: AsyncGenerator<TuningEvent, SessionEnd>, show: (e: TuningEvent) => Promise<void>): Promise<SessionEnd> {
  let next = await stream.next();
  for (; !next.done; next = await stream.next()) await show(next.value);
  return next.value;
}

/** Asks which of the proposed steps to carry out; undefined when the user declines. */
async function askApproval(steps: PlanStepView[], input: Readable, output: Writable): Promise<PlanApproval | undefined> {
  if (steps.length === 0) return { steps: [] };
  output.write(`\nproposed plan:\n${steps.map((s, i) => `  ${i + 1}. ${s.title}${s.details ? `: ${s.details}` : ''}`).join('\n')}\n`);
  const rl = createInterface({ input, terminal: false });
  // The line iterator buffers: answers typed (or piped) ahead of the question are not lost.
  const lines = rl[Symbol.asyncIterator]();
  try {
    for (;;) {
      output.write('steps to carry out (e.g. 1,3; Enter: all; q: stop): ');
      const line = await lines.next();
      if (line.done) return undefined;
      const answer = line.value.trim().toLowerCase();
      if (answer === 'q') return undefined;
      if (answer === '') return { steps: steps.map((s) => ({ id: s.id, title: s.title, details: s.details })) };
      const picked = answer.split(/[\s,]+/).map(Number);
      if (picked.every((n) => Number.isInteger(n) && n >= 1 && n <= steps.length)) {
        return { steps: picked.map((n) => steps[n - 1]!).map((s) => ({ id: s.id, title: s.title, details: s.details })) };
      }
      output.write(`answer with step numbers between 1 and ${steps.length}\n`);
    }
  } finally {
    rl.close();
  }
}

interface ResultTarget {
  file: string;
  out: string;
  provider: Pick<ProviderConfig, 'provider' | 'model'>;
}

function writeResults(options: ResultTarget, source: string, events: TuningEvent[], finished: EventOf<'session.finished'>): string[] {
  mkdirSync(options.out, { recursive: true });
  const name = basename(options.file).replace(/\.cu$/, '');
  const files = {
    kernel: join(options.out, basename(options.file)),
    diff: join(options.out, `${name}.diff`),
    markdown: join(options.out, 'report.md'),
    json: join(options.out, 'report.json'),
  };
  writeFileSync(files.kernel, finished.finalCode);
  writeFileSync(files.diff, unifiedDiff(source, finished.finalCode, { fileName: basename(options.file) }));
  writeFileSync(files.markdown, markdownReport(options, events, finished));
  // The last start: a branch's log begins with its parent's.
  const started = events.findLast((e): e is EventOf<'session.started'> => e.type === 'session.started');
  const report = { version: 1, file: options.file, kernel: started?.kernel, device: started?.device, model: { provider: options.provider.provider, model: options.provider.model }, result: finished, events };
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  return Object.values(files);
}

/** What the proposal did with each launch of the kernel in the file. */
function launchSitesReport(finished: EventOf<'session.finished'>): string[] {
  const sites = finished.launchSites ?? [];
  if (sites.length === 0) return ['No launch of the kernel was found in the file: launch it as above.', ''];
  return [
    'Launches in the file:',
    '',
    ...sites.map((s) => `- line ${s.line}${s.inFunction ? ` (in ${s.inFunction})` : ''}: ${s.after ? `\`${s.before}\` → \`${s.after}\`` : `left as \`${s.before}\` (${s.reason}); change it as above`}`),
    '',
  ];
}

const ms = (v: number | null) => (v === null ? 'n/a' : `${Number(v.toPrecision(4))} ms`);

export function markdownReport(options: Pick<ResultTarget, 'file' | 'provider'>, events: readonly TuningEvent[], finished: EventOf<'session.finished'>): string {
  const of = <T extends TuningEvent['type']>(type: T) => events.filter((e): e is Extract<TuningEvent, { type: T }> => e.type === type);
  const started = of('session.started').at(-1);
  const analysis = of('analysis.done')[0];
  const t = finished.tracker;
  const lines = [
    `# ${started?.kernel.name ?? 'kernel'}: tuning report`,
    '',
    `- File: ${options.file}`,
    `- Device: ${started ? `${started.device.name} (${started.device.arch})` : 'n/a'}`,
    `- Model: ${options.provider.provider} ${options.provider.model}`,
    `- Session: ${started?.threadId ?? 'n/a'}`,
    '',
    '## Result',
    '',
    `${ms(t.baselineTimeMs)} → ${ms(t.finalTimeMs)}: ${t.speedup.toFixed(2)}x (${t.improvementPct.toFixed(1)} % less time).`,
    '',
    `Best parameters: ${Object.entries(finished.bestParams).map(([k, v]) => `\`${k}=${v}\``).join(', ') || 'none'}`,
    '',
    'Launch geometry the host code must use:',
    '',
    '```c',
    `dim3 block(${finished.launch.block.join(', ')});`,
    `dim3 grid(${finished.launch.grid.join(', ')});`,
    ...(finished.launch.sharedMemBytes ? [`size_t dynamicSharedMemory = ${finished.launch.sharedMemBytes};`] : []),
    '```',
    '',
    ...launchSitesReport(finished),
  ];
  if (analysis) {
    lines.push('## Kernel analysis', '', analysis.description, '', `- Problem size: [${analysis.problemSize.join(', ')}]`, `- Outputs: ${analysis.outputs.join(', ')}`, '');
  }
  const tests = of('tests.ready')[0]?.tests ?? [];
  if (tests.length > 0) {
    lines.push('## Tests', '', ...tests.map((x) => `- ${x.id} (${x.origin}): problem size [${x.problemSize.join(', ')}], outputs ${x.outputs.join(', ')}${x.timeMs === null ? '' : `, original kernel ${ms(x.timeMs)}`}`), '');
  }
  const titles = new Map(of('step.started').map((e) => [e.stepId, e.title]));
  const outcomes = events.flatMap((e) => {
    const title = (id: string) => titles.get(id) ?? id;
    if (e.type === 'step.accepted') return [`- **${title(e.stepId)}**: accepted, ${ms(e.oldTimeMs)} → ${ms(e.newTimeMs)} (${e.improvementPct.toFixed(1)} %)`];
    if (e.type === 'step.rejected') return [`- **${title(e.stepId)}**: rejected, ${describeRejection(e.reason)}`];
    if (e.type === 'step.skipped') return [`- **${title(e.stepId)}**: skipped, ${e.reason}`];
    return [];
  });
  if (outcomes.length > 0) lines.push('## Steps', '', ...outcomes, '');
  const warnings = warningsOf(events);
  if (warnings.length > 0) lines.push('## Warnings', '', ...warnings.map((w) => `- ${w}`), '');
  lines.push('## Tunable parameters', '', ...Object.entries(finished.tuneParams).map(([k, v]) => `- \`${k}\`: ${v.join(', ')}`), '');
  if (finished.restrictions.length > 0) lines.push('Restrictions:', '', ...finished.restrictions.map((r) => `- \`${r}\``), '');
  return `${lines.join('\n')}\n`;
}
