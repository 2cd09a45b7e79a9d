/**
 * Settings (contributes.configuration, `kernelTuner.*`) → the engine's run configuration. Pure: it reads through a
 * getter, so the same function runs on `workspace.getConfiguration()` and on a plain object under vitest. Every bad value
 * is reported with the setting it came from, for an "Open settings" button that goes straight to it. The API key is
 * passed in (from SecretStorage), never read from settings.
 */
import { defaultTuningSteps } from '../engine/strategies/explicit/steps';
import type { ProviderConfig } from '../engine/llm/providers';
import type { StructuredOutputType } from '../engine/llm/structured';
import { DEFAULT_EVOLUTIONARY_SETTINGS, STRUCTURED_OUTPUT_TYPES, type SessionSettings } from '../engine/session/session-settings';
import type { Prices, SessionBudget } from '../engine/resources/model-calls';
import { parseGpuSelection, singleGpu, type GpuSelection } from '../tuner/run/gpu-selection';
import { DEFAULT_LAUNCHES, launchCountOf, launchCountProblems, type LaunchCount, type LaunchCountSettings } from '../tuner/run/launch-count';
import { ALLOWED_NAMES, refusedCompilerOptions } from './compiler-options';

export const SECTION = 'kernelTuner';

/** The explicit strategy's default steps in their order: the engine's own list (steps.ts holds data only, no LangChain). */
export const EXPLICIT_STEP_IDS: readonly string[] = defaultTuningSteps().map((s) => s.id);
export type ExplicitStepId = string;

export type StrategyConfig =
  | { kind: 'autonomous'; breakdownSteps: boolean; maxBreakdowns: number; withReplanning: boolean; maxReplanning: number }
  | { kind: 'explicit'; steps: ExplicitStepId[] }
  | Extract<SessionSettings['strategy'], { kind: 'evolutionary' }>;

export interface EngineConfig {
  llm: ProviderConfig;
  structuredOutputType: StructuredOutputType;
  stripThinkingOutput: boolean;
  strategy: StrategyConfig;
  /** Requests to the model at once (kernelTuner.llm.concurrency). */
  llmConcurrency: number;
  /** What a session may spend (kernelTuner.budget.*); empty: no limit. */
  budget: SessionBudget;
  /** The model's prices, USD per million tokens (kernelTuner.llm.*PricePerMillionTokens): the cost of every call. */
  prices?: Prices;
  performanceThreshold: number;
  /** What every step must improve (kernelTuner.objective): time, energy or edp, all lower-is-better. */
  objective: 'time' | 'energy' | 'edp';
  /** Measure energy and power with NVML, read only (kernelTuner.energy). */
  energy: boolean;
  /** Run what would be accepted under compute-sanitizer first (kernelTuner.sanitize). */
  sanitize: boolean;
  candidatesPerStep: number;
  approvePlan: boolean;
  /** Corrections the model may make to a failing answer before it is given up. */
  retries: number;
  device: number;
  /** The GPUs every candidate is tuned on (kernelTuner.gpus; empty: `device` alone). */
  gpus: GpuSelection;
  /** Timed launches per configuration: a fixed count, or an adaptive series (launch-count.ts). */
  iterations: LaunchCount;
  /** Seconds for one configuration. */
  timePerTestS: number;
  /** Seconds one launch may take; 0: scaled to the original kernel's time (at least 1 s). */
  launchTimeoutS: number;
  compilerOptions: string[];
  /** Directories searched for #include (kernelTuner.includePaths), as written: relative ones are the workspace's. */
  includePaths: string[];
}

export interface SettingProblem {
  /** Full setting id, e.g. "kernelTuner.llm.model". */
  setting: string;
  message: string;
}

export type ConfigResult =
  | { ok: true; config: EngineConfig; endpoint: string }
  /** `needsApiKey`: the endpoint is a hosted one that requires a key and SecretStorage has none. */
  | { ok: false; problems: SettingProblem[]; needsApiKey: boolean };

export const DEFAULT_BASE_URL = { ollama: 'http://127.0.0.1:11434', openai: 'https://api.openai.com/v1' } as const;

/** Reads one setting, `undefined` when unset (the getter applies the manifest's defaults, as VS Code's does). */
export type SettingGetter = (key: string) => unknown;

/** Hosted OpenAI needs a key; a local OpenAI-compatible server (vLLM, llama.cpp, LM Studio) usually does not. */
export function requiresApiKey(provider: 'ollama' | 'openai', baseUrl: string): boolean {
  if (provider !== 'openai') return false;
  try {
    return /(^|\.)openai\.com$/.test(new URL(baseUrl).hostname);
  } catch {
    return false;
  }
}

/**
 * kernelTuner.device and kernelTuner.gpus: the GPUs a session tunes on. With kernelTuner.sanitize, all that a session
 * of the tuner alone ("Tune parameters") reads of the settings: its spec says the rest, and it asks no model.
 */
export function readGpuSettings(get: SettingGetter): { device: number; gpus: GpuSelection; problems: SettingProblem[] } {
  const problems: SettingProblem[] = [];
  const key = (name: string) => `${SECTION}.${name}`;
  const deviceSetting = get('device') ?? 0;
  let device = 0;
  if (typeof deviceSetting === 'number' && Number.isInteger(deviceSetting) && deviceSetting >= 0 && deviceSetting <= 64) device = deviceSetting;
  else problems.push({ setting: key('device'), message: `must be an integer from 0 to 64 (is ${JSON.stringify(deviceSetting)})` });
  const v = get('gpus') ?? '';
  if (typeof v !== 'string') {
    problems.push({ setting: key('gpus'), message: `must be a string such as all, 0,2 or 2 (is ${JSON.stringify(v)})` });
    return { device, gpus: singleGpu(device), problems };
  }
  if (v.trim() === '') return { device, gpus: singleGpu(device), problems };
  try {
    return { device, gpus: parseGpuSelection(v, key('gpus')), problems };
  } catch (e) {
    problems.push({ setting: key('gpus'), message: (e as Error).message.replace(`${key('gpus')} `, '') });
    return { device, gpus: singleGpu(device), problems };
  }
}

/**
 * kernelTuner.sanitize: run the configuration about to be accepted once under compute-sanitizer first (an LLM
 * session's candidates, the best of "Tune parameters"); read by both kinds of session.
 */
export function readSanitizeSetting(get: SettingGetter): { sanitize: boolean; problems: SettingProblem[] } {
  const value = get('sanitize') ?? true;
  if (typeof value === 'boolean') return { sanitize: value, problems: [] };
  return { sanitize: true, problems: [{ setting: `${SECTION}.sanitize`, message: `must be true or false (is ${JSON.stringify(value)})` }] };
}

export function readEngineConfig(get: SettingGetter, apiKey: string | undefined): ConfigResult {
  const problems: SettingProblem[] = [];
  const key = (name: string) => `${SECTION}.${name}`;
  const problem = (name: string, message: string) => problems.push({ setting: key(name), message });

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const v = get(name) ?? fallback;
    if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
    problem(name, `must be one of ${allowed.join(', ')} (is ${JSON.stringify(v)})`);
    return fallback;
  };
  const number = (name: string, fallback: number, min: number, max: number, integer: boolean): number => {
    const v = get(name) ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max || (integer && !Number.isInteger(v))) {
      problem(name, `must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max} (is ${JSON.stringify(v)})`);
      return fallback;
    }
    return v;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const v = get(name) ?? fallback;
    if (typeof v !== 'boolean') {
      problem(name, `must be true or false (is ${JSON.stringify(v)})`);
      return fallback;
    }
    return v;
  };
  const strings = (name: string, fallback: readonly string[]): string[] => {
    const v = get(name) ?? fallback;
    if (!Array.isArray(v) || v.some((s) => typeof s !== 'string')) {
      problem(name, 'must be a list of strings');
      return [...fallback];
    }
    return v as string[];
  };

  const compilerOptions = (): string[] => {
    const options = strings('compilerOptions', []);
    const refused = refusedCompilerOptions(options);
    if (refused.length === 0) return options;
    problem('compilerOptions', `has options the tuner does not pass to the compiler: ${refused.map((r) => `${r.option} (${r.why})`).join(', ')}. It takes ${ALLOWED_NAMES.join(', ')} and their long forms`);
    return [];
  };

  const provider = oneOf('llm.provider', ['ollama', 'openai'] as const, 'ollama');
  const modelSetting = get('llm.model');
  const model = typeof modelSetting === 'string' ? modelSetting.trim() : '';
  if (model === '') problem('llm.model', 'names no model: set the model the server should use (e.g. qwen2.5-coder:14b for Ollama)');
  const urlSetting = get('llm.baseUrl');
  let baseUrl: string = DEFAULT_BASE_URL[provider];
  if (typeof urlSetting === 'string' && urlSetting.trim() !== '') {
    const candidate = urlSetting.trim().replace(/\/+$/, '');
    if (URL.canParse(candidate) && /^https?:$/.test(new URL(candidate).protocol)) baseUrl = candidate;
    else problem('llm.baseUrl', `must be an http(s) URL such as ${DEFAULT_BASE_URL[provider]} (is ${JSON.stringify(urlSetting)})`);
  } else if (urlSetting !== undefined && typeof urlSetting !== 'string') problem('llm.baseUrl', 'must be a URL string');
  const temperature = number('llm.temperature', 0.2, 0, 2, false);
  const timeoutMs = Math.round(number('llm.timeoutSeconds', 600, 1, 24 * 3600, false) * 1000);
  const structuredOutputType = oneOf('llm.structuredOutput', STRUCTURED_OUTPUT_TYPES, 'default');
  const stripThinkingOutput = bool('llm.stripThinking', true);

  const kind = oneOf('strategy', ['autonomous', 'explicit', 'evolutionary'] as const, 'autonomous');
  let strategy: StrategyConfig;
  if (kind === 'autonomous') {
    strategy = {
      kind,
      breakdownSteps: bool('autonomous.breakdownSteps', false),
      maxBreakdowns: number('autonomous.maxBreakdowns', 1, 1, 5, true),
      withReplanning: bool('autonomous.withReplanning', true),
      maxReplanning: number('autonomous.maxReplanning', 3, 1, 10, true),
    };
  } else if (kind === 'evolutionary') {
    const maxChildren = number('evolutionary.maxChildren', 0, 0, 10_000, true);
    strategy = {
      kind,
      seed: number('evolutionary.seed', DEFAULT_EVOLUTIONARY_SETTINGS.seed, 0, 2 ** 31 - 1, true),
      window: number('evolutionary.window', DEFAULT_EVOLUTIONARY_SETTINGS.window, 1, 32, true),
      ...(maxChildren > 0 && { maxChildren }),
    };
  } else {
    const steps = strings('explicit.steps', EXPLICIT_STEP_IDS);
    const unknown = steps.filter((s) => !EXPLICIT_STEP_IDS.includes(s));
    if (unknown.length > 0) problem('explicit.steps', `has unknown step ids: ${unknown.join(', ')} (known: ${EXPLICIT_STEP_IDS.join(', ')})`);
    const known = [...new Set(steps.filter((s): s is ExplicitStepId => EXPLICIT_STEP_IDS.includes(s)))];
    if (known.length === 0 && unknown.length === 0) problem('explicit.steps', 'is empty: the explicit strategy needs at least one step');
    strategy = { kind, steps: known };
  }

  /**
   * kernelTuner.iterations (0: adapt), .minIterations, .maxIterations and .precision: the number of timed launches,
   * each problem under its setting.
   */
  const launchCount = (): LaunchCount => {
    const fixed = get('iterations') ?? 0;
    const settings = fixed === 0 ? { minIterations: get('minIterations') ?? DEFAULT_LAUNCHES.min, maxIterations: get('maxIterations') ?? DEFAULT_LAUNCHES.max, precision: get('precision') ?? DEFAULT_LAUNCHES.precision } : { iterations: fixed };
    const found = launchCountProblems(settings);
    for (const p of found) problem(p.field, p.field === 'iterations' ? `${p.message}, or 0 to adapt the count to the kernel` : p.message.replace(/\b(minIterations)\b/g, `${SECTION}.$1`));
    return found.length > 0 ? DEFAULT_LAUNCHES : launchCountOf(settings as LaunchCountSettings);
  };

  let gpus: GpuSelection = singleGpu(0);
  /** kernelTuner.device and .gpus, read in their place among the settings (so are their problems). */
  const device = (): number => {
    const read = readGpuSettings(get);
    problems.push(...read.problems);
    gpus = read.gpus;
    return read.device;
  };
  /** A price, USD per million tokens; null: not given. */
  const price = (name: string): number | null => {
    const v = get(name) ?? null;
    if (v === null) return null;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) {
      problem(name, `must be a number of USD per million tokens, 0 or more, or null when unknown (is ${JSON.stringify(v)})`);
      return null;
    }
    return v;
  };
  const spending = (): Pick<EngineConfig, 'llmConcurrency' | 'budget' | 'prices'> => {
    const llmConcurrency = number('llm.concurrency', 4, 1, 64, true);
    const limits: Required<SessionBudget> = {
      modelCalls: number('budget.modelCalls', 0, 0, 1_000_000, true),
      tokens: number('budget.tokens', 0, 0, 1e12, true),
      costUsd: number('budget.costUsd', 0, 0, 1e6, false),
      wallTimeS: number('budget.wallTimeMinutes', 0, 0, 7 * 24 * 60, false) * 60,
    };
    // 0: no limit.
    const budget = Object.fromEntries(Object.entries(limits).filter(([, value]) => value > 0)) as SessionBudget;
    const [input, output] = [price('llm.inputPricePerMillionTokens'), price('llm.outputPricePerMillionTokens')];
    if ((input === null) !== (output === null)) {
      const [given, missing] = input === null ? ['llm.outputPricePerMillionTokens', 'llm.inputPricePerMillionTokens'] : ['llm.inputPricePerMillionTokens', 'llm.outputPricePerMillionTokens'];
      problem(missing, `is not set, but ${key(given)} is: set both prices (USD per million input and output tokens, as your provider lists them) or neither`);
    }
    const prices = input !== null && output !== null ? { inputPerMTok: input, outputPerMTok: output } : undefined;
    if (budget.costUsd !== undefined && !prices) {
      problem('budget.costUsd', `needs the model's prices to count the cost: set ${key('llm.inputPricePerMillionTokens')} and ${key('llm.outputPricePerMillionTokens')} (USD per million tokens), or set the budget to 0`);
    }
    return { llmConcurrency, budget, ...(prices && { prices }) };
  };
  /** kernelTuner.sanitize, read in its place among the settings. */
  const sanitize = (): boolean => {
    const read = readSanitizeSetting(get);
    problems.push(...read.problems);
    return read.sanitize;
  };
  const settings: Omit<EngineConfig, 'gpus'> = {
    llm:
      provider === 'openai'
        ? { provider, model, baseUrl, temperature, timeoutMs, ...(apiKey ? { apiKey } : {}) }
        : { provider, model, baseUrl, temperature, timeoutMs },
    structuredOutputType,
    stripThinkingOutput,
    strategy,
    ...spending(),
    performanceThreshold: number('performanceThreshold', 1.0, 0, 100, false),
    objective: oneOf('objective', ['time', 'energy', 'edp'] as const, 'time'),
    energy: bool('energy', false),
    sanitize: sanitize(),
    candidatesPerStep: number('candidatesPerStep', 1, 1, 8, true),
    approvePlan: bool('approvePlan', false),
    retries: number('retries', 3, 0, 10, true),
    device: device(),
    iterations: launchCount(),
    timePerTestS: number('timePerTest', 15, 1, 3600, false),
    launchTimeoutS: number('launchTimeout', 0, 0, 3600, false),
    compilerOptions: compilerOptions(),
    includePaths: strings('includePaths', []),
  };
  const config: EngineConfig = { ...settings, gpus };
  const needsApiKey = requiresApiKey(provider, baseUrl) && !apiKey;
  if (problems.length > 0 || needsApiKey) return { ok: false, problems, needsApiKey };
  return { ok: true, config, endpoint: `${provider === 'ollama' ? 'Ollama' : 'OpenAI-compatible server'} at ${baseUrl}` };
}

/**
 * The setting's value in effect comes from a workspace's settings (the workspace's or a folder's), which a repository
 * can ship in .vscode/settings.json, not from the user's own.
 */
export function setByWorkspace(inspected: { workspaceValue?: unknown; workspaceFolderValue?: unknown } | undefined): boolean {
  const value = inspected?.workspaceFolderValue ?? inspected?.workspaceValue;
  return typeof value === 'string' && value.trim() !== '';
}

/** The config with the secret removed, for logs and reports. */
export function redactConfig(config: EngineConfig): EngineConfig {
  if (config.llm.provider !== 'openai' || config.llm.apiKey === undefined) return config;
  const { apiKey: _secret, ...llm } = config.llm;
  return { ...config, llm };
}

/** Where a session's kernel is and how its file is built (the document, the include paths, compile_commands.json). */
export interface SessionFile {
  kernelName: string;
  fileName: string;
  filePath?: string;
  includePaths: string[];
  /** Defines and language options from the project's compile_commands.json, before kernelTuner.compilerOptions. */
  buildOptions: string[];
}

/** The settings a new session is built with, as the history stores them (without the API key). */
export function sessionSettings(config: EngineConfig, file: SessionFile): SessionSettings {
  return {
    kernelName: file.kernelName,
    fileName: file.fileName,
    ...(file.filePath !== undefined && { filePath: file.filePath }),
    includePaths: file.includePaths,
    compilerOptions: [...file.buildOptions, ...config.compilerOptions],
    strategy: config.strategy.kind === 'autonomous' ? { ...config.strategy, candidatesPerStep: config.candidatesPerStep } : config.strategy,
    llmConcurrency: config.llmConcurrency,
    ...(Object.keys(config.budget).length > 0 && { budget: config.budget }),
    ...(config.prices && { prices: config.prices }),
    retries: config.retries,
    performanceThreshold: config.performanceThreshold,
    ...(config.objective !== 'time' && { objective: { name: config.objective, higherIsBetter: false } }),
    ...(config.energy && { energy: true }),
    ...(!config.sanitize && { sanitize: false }),
    iterations: config.iterations,
    timePerTestS: config.timePerTestS,
    ...(config.launchTimeoutS > 0 && { launchTimeoutS: config.launchTimeoutS }),
    structuredOutputType: config.structuredOutputType,
    stripThinking: config.stripThinkingOutput,
    approvePlan: config.approvePlan,
    model: modelSettings(config),
  };
}

/** Which model the settings name, for the record (never the API key). */
export function modelSettings({ llm }: EngineConfig): SessionSettings['model'] {
  return { provider: llm.provider, model: llm.model, ...(llm.baseUrl !== undefined && { baseUrl: llm.baseUrl }), ...(llm.temperature !== undefined && { temperature: llm.temperature }) };
}
