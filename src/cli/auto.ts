// llm-kernel-tuner auto: the whole LLM session from a terminal. Checks the file and its kernel first, then opens the GPU
// (no GPU: one clear error, no model call), checks the model endpoint, streams progress to stderr as the session runs,
// and writes the tuned kernel, a report (Markdown and JSON) and the diff into --out.
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { unifiedDiff } from '../engine/diff';
import { defaultRetryPolicy } from '../engine/feedback';
import { describeEvent, describeRejection, type EventOf, type PlanStepView, type TuningEvent } from '../engine/events';
import { checkReachable, createChatModel, parseProviderConfig, transportRetryPolicyFor, type ProviderConfig } from '../engine/llm/providers';
import type { SessionEnd } from '../engine/session';
import { AutonomousTuningStrategy } from '../engine/strategies/autonomous';
import type { PlanApproval } from '../engine/strategies/approval';
import { ExplicitTuningStrategy } from '../engine/strategies/explicit';
import { NaiveLLMTester } from '../engine/testing/naive';
import { LLMKernelTransformer } from '../engine/transformer';
import type { TuningBackend } from '../tuner/backend';
import { buildFlagsFor } from '../tuner/compile-commands';
import { GpuBackend } from '../tuner/gpu-backend';
import { parseGpuSelection, singleGpu, type GpuSelection } from '../tuner/gpu-selection';
import { reportFromSession } from '../report/model';
import { commandLine, reportPath, writeReport } from './report';
import { TunableKernel } from '../tuner/tunable-kernel';
import { readUserFile } from '../tuner/user-files';

const USAGE = `usage: llm-kernel-tuner auto FILE.cu --kernel NAME --provider ollama|openai --model MODEL [options]

Lets a model rewrite the kernel with tunable parameters, step by step; every candidate is compiled, checked against the
original kernel and tuned on the GPU. FILE.cu may hold its host program and include local headers: the model sees the
kernel and the device code it uses, and the tuned file differs from FILE.cu only there and where main() launches it.

options:
  --kernel NAME            the __global__ function to tune (required when the file has several)
  --provider P             ollama or openai (any OpenAI-compatible server: vLLM, LM Studio, llama.cpp)
  --model M                the model name
  --base-url URL           the endpoint (default: Ollama http://127.0.0.1:11434, OpenAI https://api.openai.com/v1)
  --api-key-env VAR        read the API key from this environment variable
  --strategy S             autonomous (default) or explicit
  --approve-plan           show the plan and ask which steps to carry out before tuning
  --threshold PCT          improvement (percent) a step needs to be accepted (default 1.0)
  --iterations N           timed launches per configuration; the median is compared (default 32)
  -I, --include DIR        a directory searched for #include (repeatable; compile_commands.json is read as well)
  --launch-timeout SECONDS time limit of one launch (default: 100x the original kernel's time, at least 1 s)
  --retries N              times a failed answer is explained to the model and asked again (default 3)
  --device N               CUDA device (default 0)
  --gpus all|0,2|N         tune every candidate on several GPUs of one model at once, one worker each: all of them,
                           these ordinals, or the first N (default: one GPU, --device)
  --out DIR                where results go (default FILE.tuned/)
  --report FILE            the HTML report (one file: chart, each step's diff, configurations, speed of light, how
                           to reproduce); default OUT/report.html
  --no-report              write no HTML report
  --json                   also write every event as a JSON line to stdout
  -v, --verbose            show every configuration and model call
`;

export interface AutoDeps {
  /** Opens the GPUs, one backend each; tests pass fakes. */
  openBackends?: (gpus: GpuSelection) => Promise<readonly TuningBackend[]>;
  stdout?: Writable;
  stderr?: Writable;
  stdin?: Readable;
}

interface AutoOptions {
  file: string;
  kernel: string | undefined;
  provider: ProviderConfig;
  strategy: 'autonomous' | 'explicit';
  approvePlan: boolean;
  threshold: number;
  iterations: number;
  retries: number;
  gpus: GpuSelection;
  includePaths: string[];
  launchTimeout: number | undefined;
  out: string;
  /** The HTML report's path; null: none. */
  report: string | null;
  /** The command line as given (what the report says reproduces the session). */
  args: string[];
  compilerOptions: string[];
  json: boolean;
  verbose: boolean;
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
      strategy: { type: 'string', default: 'autonomous' },
      'approve-plan': { type: 'boolean', default: false },
      threshold: { type: 'string', default: '1.0' },
      iterations: { type: 'string', default: '32' },
      include: { type: 'string', short: 'I', multiple: true, default: [] },
      'launch-timeout': { type: 'string' },
      retries: { type: 'string', default: '3' },
      device: { type: 'string' },
      gpus: { type: 'string' },
      out: { type: 'string' },
      json: { type: 'boolean', default: false },
      report: { type: 'string' },
      'no-report': { type: 'boolean', default: false },
      verbose: { type: 'boolean', short: 'v', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  if (positionals.length !== 1) throw new Error(`expected one FILE.cu, got ${positionals.length === 0 ? 'none' : positionals.join(' ')}`);
  const file = resolve(positionals[0]!);
  if (values.provider !== 'ollama' && values.provider !== 'openai') throw new Error(`--provider must be ollama or openai, got ${values.provider ?? 'nothing'}`);
  if (!values.model) throw new Error('--model is required');
  if (values.strategy !== 'autonomous' && values.strategy !== 'explicit') throw new Error(`--strategy must be autonomous or explicit, got ${values.strategy}`);
  const threshold = Number(values.threshold);
  if (!Number.isFinite(threshold) || threshold < 0) throw new Error(`--threshold must be a number >= 0 (percent), got ${values.threshold}`);
  const iterations = Number(values.iterations);
  if (!Number.isSafeInteger(iterations) || iterations < 1) throw new Error(`--iterations must be an integer >= 1, got ${values.iterations}`);
  const retries = Number(values.retries);
  if (!Number.isInteger(retries) || retries < 0) throw new Error(`--retries must be an integer >= 0, got ${values.retries}`);
  const launchTimeout = values['launch-timeout'] === undefined ? undefined : Number(values['launch-timeout']);
  if (launchTimeout !== undefined && !(launchTimeout > 0)) throw new Error(`--launch-timeout must be a positive number of seconds, got ${values['launch-timeout']}`);
  const device = Number(values.device ?? '0');
  if (!Number.isInteger(device) || device < 0) throw new Error(`--device must be an integer >= 0, got ${values.device}`);
  if (values.gpus !== undefined && values.device !== undefined) throw new Error('give --device N (one GPU) or --gpus, not both');
  const gpus = values.gpus === undefined ? singleGpu(device) : parseGpuSelection(values.gpus);
  let apiKey: string | undefined;
  const keyVar = values['api-key-env'];
  if (keyVar !== undefined) {
    apiKey = process.env[keyVar];
    if (!apiKey) throw new Error(`--api-key-env ${keyVar}: the environment variable is not set`);
  }
  const provider = parseProviderConfig({
    provider: values.provider,
    model: values.model,
    ...(values['base-url'] !== undefined && { baseUrl: values['base-url'] }),
    ...(apiKey !== undefined && values.provider === 'openai' && { apiKey }),
  });
  return {
    file,
    kernel: values.kernel,
    provider,
    strategy: values.strategy,
    approvePlan: values['approve-plan'],
    threshold,
    iterations,
    retries,
    gpus,
    includePaths: values.include.map((d) => resolve(d)),
    launchTimeout,
    out: resolve(values.out ?? `${file}.tuned`),
    report: reportPath(values, join(resolve(values.out ?? `${file}.tuned`), 'report.html')),
    args,
    compilerOptions: [],
    json: values.json,
    verbose: values.verbose,
  };
}

export async function run(args: string[], deps: AutoDeps = {}): Promise<number> {
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  let options: AutoOptions | 'help';
  try {
    options = parse(args);
  } catch (e) {
    // parse() only reads and checks the command line (parseArgs, the provider config): every failure is a usage error.
    stderr.write(`llm-kernel-tuner auto: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (options === 'help') {
    stdout.write(USAGE);
    return 0;
  }
  // The file first: a missing file, or one without the kernel to tune, is reported before a missing GPU or model.
  const source = readUserFile(options.file, 'the kernel file');
  // The project's own build flags for this file, where its workspace has a compile_commands.json.
  const build = buildFlagsFor(options.file);
  const includePaths = [...options.includePaths, ...(build?.includePaths ?? [])];
  options.compilerOptions = build?.options ?? [];
  await TunableKernel.create(source, { fileName: basename(options.file), filePath: options.file, includePaths, ...(options.kernel !== undefined && { kernelName: options.kernel }) });
  // Then the GPU: without one nothing can be tuned, and no model should be asked anything.
  const backends = await (deps.openBackends ?? ((gpus) => GpuBackend.openAll(gpus)))(options.gpus);
  const controller = new AbortController();
  const onSigint = () => controller.abort();
  process.once('SIGINT', onSigint);
  try {
    await checkReachable(options.provider, controller.signal);
    const retryPolicy = defaultRetryPolicy(options.retries);
    const transformer = new LLMKernelTransformer(source, {
      llm: createChatModel(options.provider),
      retryPolicy,
      backend: backends,
      filePath: options.file,
      includePaths,
      ...(build && build.options.length > 0 && { compilerOptions: build.options }),
      ...(options.kernel !== undefined && { kernelName: options.kernel }),
      tuningStrategy: options.strategy === 'explicit' ? new ExplicitTuningStrategy(undefined, { retryPolicy }) : new AutonomousTuningStrategy({ retryPolicy }),
      testingStrategies: [new NaiveLLMTester({ retryPolicy })],
      transportRetryPolicy: transportRetryPolicyFor(options.provider),
      performanceThreshold: options.threshold,
      iterations: options.iterations,
      ...(options.launchTimeout !== undefined && { launchTimeout: options.launchTimeout }),
      approvePlan: options.approvePlan,
      signal: controller.signal,
    });
    const events: TuningEvent[] = [];
    const show = (event: TuningEvent) => {
      events.push(event);
      if (options.json) stdout.write(`${JSON.stringify(event)}\n`);
      const { level, text } = describeEvent(event);
      if (level !== 'debug' || options.verbose) stderr.write(`${level === 'info' || level === 'debug' ? '' : `${level}: `}${text}\n`);
    };
    let end = await drain(transformer.stream(), show);
    while (end.status === 'awaiting_approval') {
      const approval = await askApproval(end.steps, deps.stdin ?? process.stdin, stderr);
      if (!approval) {
        stderr.write('not approved: stopping (nothing was tuned)\n');
        return 1;
      }
      end = await drain(transformer.stream({ approval }), show);
    }
    if (end.status === 'cancelled') return 130;
    if (end.status === 'failed') return 1;
    const finished = events.find((e): e is EventOf<'session.finished'> => e.type === 'session.finished')!;
    const written = writeResults(options, source, events, finished);
    stderr.write(`results: ${written.join(', ')}\n`);
    return 0;
  } finally {
    process.removeListener('SIGINT', onSigint);
    await Promise.all(backends.map((b) => b.dispose().catch(() => undefined)));
  }
}

async function drain(stream: AsyncGenerator<TuningEvent, SessionEnd>, show: (e: TuningEvent) => void): Promise<SessionEnd> {
  let next = await stream.next();
  for (; !next.done; next = await stream.next()) show(next.value);
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

function writeResults(options: AutoOptions, source: string, events: TuningEvent[], finished: EventOf<'session.finished'>): string[] {
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
  const started = events.find((e): e is EventOf<'session.started'> => e.type === 'session.started');
  const report = { version: 1, file: options.file, kernel: started?.kernel, device: started?.device, model: { provider: options.provider.provider, model: options.provider.model }, result: finished, events };
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  if (!options.report) return Object.values(files);
  writeReport(
    options.report,
    reportFromSession({
      header: {
        sessionId: started?.threadId ?? 'session',
        kernelName: started?.kernel.name ?? name,
        fileName: basename(options.file),
        startedAt: events[0]?.at ?? new Date().toISOString(),
        model: `${options.provider.provider} ${options.provider.model}`,
        strategy: options.strategy,
      },
      events,
      compilerOptions: options.compilerOptions,
      reproduce: {
        command: commandLine('auto', options.args),
        file: options.file,
        ...(started && { session: started.threadId }),
        notes: [
          "A model's answers differ from run to run, so the command starts a new session; this report's numbers are this session's, whose every event is in report.json beside it.",
          'Each time is the median of the timed launches between CUDA events; every configuration was checked against the original kernel on two input sets first.',
        ],
      },
    }),
  );
  return [...Object.values(files), options.report];
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

export function markdownReport(options: Pick<AutoOptions, 'file' | 'provider'>, events: readonly TuningEvent[], finished: EventOf<'session.finished'>): string {
  const of = <T extends TuningEvent['type']>(type: T) => events.filter((e): e is Extract<TuningEvent, { type: T }> => e.type === type);
  const started = of('session.started')[0];
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
  lines.push('## Tunable parameters', '', ...Object.entries(finished.tuneParams).map(([k, v]) => `- \`${k}\`: ${v.join(', ')}`), '');
  if (finished.restrictions.length > 0) lines.push('Restrictions:', '', ...finished.restrictions.map((r) => `- \`${r}\``), '');
  return `${lines.join('\n')}\n`;
}
