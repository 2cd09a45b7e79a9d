import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SessionSettingsSchema } from '../../src/engine/session/session-settings';
import { readEngineConfig, readGpuSettings, readSanitizeSetting, redactConfig, requiresApiKey, sessionSettings } from '../../src/extension/config';

const settings = (values: Record<string, unknown>) => (key: string) => values[key];

describe('settings → engine config', () => {
  it('fills the defaults of the manifest for an empty configuration (Ollama on localhost)', () => {
    const result = readEngineConfig(settings({ 'llm.model': 'qwen2.5-coder:14b' }), undefined);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config).toEqual({
      llm: { provider: 'ollama', model: 'qwen2.5-coder:14b', baseUrl: 'http://127.0.0.1:11434', temperature: 0.2, timeoutMs: 600_000 },
      structuredOutputType: 'default',
      stripThinkingOutput: true,
      strategy: { kind: 'autonomous', breakdownSteps: false, maxBreakdowns: 1, withReplanning: true, maxReplanning: 3 },
      llmConcurrency: 4,
      budget: {},
      performanceThreshold: 1,
      objective: 'time',
      energy: false,
      sanitize: true,
      candidatesPerStep: 1,
      approvePlan: false,
      retries: 3,
      device: 0,
      gpus: { kind: 'list', ordinals: [0] },
      iterations: { min: 7, max: 32, precision: 0.01 },
      timePerTestS: 15,
      compilerOptions: [],
      includePaths: [],
      launchTimeoutS: 0,
    });
    expect(result.endpoint).toBe('Ollama at http://127.0.0.1:11434');
  });

  it('passes the API key from secret storage to an OpenAI config, and redactConfig removes it again', () => {
    const result = readEngineConfig(settings({ 'llm.provider': 'openai', 'llm.model': 'gpt-4.1', 'llm.baseUrl': 'https://api.openai.com/v1/' }), 'sk-secret');
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.llm).toMatchObject({ provider: 'openai', baseUrl: 'https://api.openai.com/v1', apiKey: 'sk-secret' });
    expect(JSON.stringify(redactConfig(result.config))).not.toContain('sk-secret');
  });

  it('asks for an API key for hosted OpenAI only, not for a local OpenAI-compatible server', () => {
    const hosted = readEngineConfig(settings({ 'llm.provider': 'openai', 'llm.model': 'gpt-4.1' }), undefined);
    expect(hosted).toEqual({ ok: false, problems: [], needsApiKey: true });
    const local = readEngineConfig(settings({ 'llm.provider': 'openai', 'llm.model': 'm', 'llm.baseUrl': 'http://127.0.0.1:8000/v1' }), undefined);
    expect(local.ok).toBe(true);
    expect(requiresApiKey('ollama', 'https://api.openai.com/v1')).toBe(false);
    expect(requiresApiKey('openai', 'https://eu.api.openai.com/v1')).toBe(true);
  });

  it('names every bad setting by its full id', () => {
    const result = readEngineConfig(
      settings({ 'llm.provider': 'claude', 'llm.model': ' ', 'llm.baseUrl': 'ftp://x', performanceThreshold: -1, candidatesPerStep: 1.5, device: '0', timePerTest: 0 }),
      undefined,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problems.map((p) => p.setting)).toEqual([
      'kernelTuner.llm.provider',
      'kernelTuner.llm.model',
      'kernelTuner.llm.baseUrl',
      'kernelTuner.performanceThreshold',
      'kernelTuner.candidatesPerStep',
      'kernelTuner.device',
      'kernelTuner.timePerTest',
    ]);
    expect(result.problems[0]!.message).toContain('ollama, openai');
  });

  it('reads the objective and energy, names a bad objective, and stores them in the session settings', () => {
    const bad = readEngineConfig(settings({ 'llm.model': 'm', objective: 'speed' }), undefined);
    expect(!bad.ok && bad.problems.map((p) => p.setting)).toEqual(['kernelTuner.objective']);
    const result = readEngineConfig(settings({ 'llm.model': 'm', objective: 'energy', energy: true }), undefined);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config).toMatchObject({ objective: 'energy', energy: true });
    const file = { kernelName: 'k', fileName: 'k.cu', includePaths: [], buildOptions: [] };
    expect(sessionSettings(result.config, file)).toMatchObject({ objective: { name: 'energy', higherIsBetter: false }, energy: true });
    const byTime = readEngineConfig(settings({ 'llm.model': 'm' }), undefined);
    expect(byTime.ok && sessionSettings(byTime.config, file)).not.toHaveProperty('objective');
  });

  it('reads the number of timed launches: a fixed count, or an adaptive one, and refuses a precision out of range by name', () => {
    const file = { kernelName: 'k', fileName: 'k.cu', includePaths: [], buildOptions: [] };
    const fixed = readEngineConfig(settings({ 'llm.model': 'm', iterations: 50, precision: 0.5 }), undefined);
    // A fixed count takes no adaptive setting, so the precision beside it is not read.
    expect(fixed.ok && sessionSettings(fixed.config, file).iterations).toBe(50);
    const adaptive = readEngineConfig(settings({ 'llm.model': 'm', minIterations: 10, maxIterations: 64, precision: 0.005 }), undefined);
    expect(adaptive.ok && sessionSettings(adaptive.config, file).iterations).toEqual({ min: 10, max: 64, precision: 0.005 });
    const bad = readEngineConfig(settings({ 'llm.model': 'm', precision: 1, minIterations: 40, maxIterations: 20 }), undefined);
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.problems.map((p) => p.setting)).toEqual(['kernelTuner.maxIterations', 'kernelTuner.precision']);
    expect(bad.problems[0]!.message).toBe('must be at least kernelTuner.minIterations, 40 (is 20)');
    expect(bad.problems[1]!.message).toMatch(/^must be a fraction of the median from 0\.001 \(0\.1 %\) to 0\.1 \(10 %\), is 1 \(a fraction of the median: 1 % is 0\.01\)/);
    const negative = readEngineConfig(settings({ 'llm.model': 'm', iterations: -3 }), undefined);
    expect(!negative.ok && negative.problems).toEqual([{ setting: 'kernelTuner.iterations', message: 'must be an integer from 1 to 1000 (is -3), or 0 to adapt the count to the kernel' }]);
  });

  it('reads the GPUs to tune on: kernelTuner.gpus, else kernelTuner.device alone', () => {
    const gpus = (values: Record<string, unknown>) => {
      const r = readEngineConfig(settings({ 'llm.model': 'm', ...values }), undefined);
      return r.ok ? r.config.gpus : r.problems;
    };
    expect(gpus({ device: 3 })).toEqual({ kind: 'list', ordinals: [3] });
    expect(gpus({ device: 3, gpus: '  ' })).toEqual({ kind: 'list', ordinals: [3] });
    expect(gpus({ gpus: 'all' })).toEqual({ kind: 'all' });
    expect(gpus({ gpus: '0,2' })).toEqual({ kind: 'list', ordinals: [0, 2] });
    expect(gpus({ gpus: '4' })).toEqual({ kind: 'count', count: 4 });
    expect(gpus({ gpus: 'both' })).toEqual([
      { setting: 'kernelTuner.gpus', message: "takes all, a list of GPU ordinals such as 0,2, or a number N of GPUs (the first N); received 'both'" },
    ]);
    expect(gpus({ gpus: 2 })).toEqual([{ setting: 'kernelTuner.gpus', message: 'must be a string such as all, 0,2 or 2 (is 2)' }]);
  });

  it('reads the explicit strategy with its steps, deduplicated, and rejects unknown step ids', () => {
    const ok = readEngineConfig(settings({ 'llm.model': 'm', strategy: 'explicit', 'explicit.steps': ['block_size_x', 'loop_unrolling', 'block_size_x'] }), undefined);
    expect(ok.ok && ok.config.strategy).toEqual({ kind: 'explicit', steps: ['block_size_x', 'loop_unrolling'] });
    const bad = readEngineConfig(settings({ 'llm.model': 'm', strategy: 'explicit', 'explicit.steps': ['warp_magic'] }), undefined);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.problems[0]).toMatchObject({ setting: 'kernelTuner.explicit.steps', message: expect.stringContaining('warp_magic') });
  });
});

describe('the evolutionary strategy, budgets and prices', () => {
  const file = { kernelName: 'k', fileName: 'k.cu', includePaths: [], buildOptions: [] };

  it('reads the evolutionary strategy, the budgets (0: no limit), the prices and the model calls in flight into the session settings', () => {
    const result = readEngineConfig(
      settings({
        'llm.model': 'm',
        strategy: 'evolutionary',
        'evolutionary.seed': 7,
        'evolutionary.window': 2,
        'evolutionary.maxChildren': 24,
        'llm.concurrency': 3,
        'budget.modelCalls': 40,
        'budget.tokens': 0,
        'budget.costUsd': 1.5,
        'budget.wallTimeMinutes': 90,
        'llm.inputPricePerMillionTokens': 3,
        'llm.outputPricePerMillionTokens': 15,
      }),
      undefined,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config).toMatchObject({
      strategy: { kind: 'evolutionary', seed: 7, window: 2, maxChildren: 24 },
      llmConcurrency: 3,
      budget: { modelCalls: 40, costUsd: 1.5, wallTimeS: 5400 },
      prices: { inputPerMTok: 3, outputPerMTok: 15 },
    });
    expect(result.config.budget).not.toHaveProperty('tokens');
    const stored = sessionSettings(result.config, file);
    expect(stored).toMatchObject({
      strategy: { kind: 'evolutionary', seed: 7, window: 2, maxChildren: 24 },
      llmConcurrency: 3,
      budget: { modelCalls: 40, costUsd: 1.5, wallTimeS: 5400 },
      prices: { inputPerMTok: 3, outputPerMTok: 15 },
    });
    expect(SessionSettingsSchema.parse(stored)).toEqual(stored);
  });

  it('leaves out what is not set: no children limit (the budget decides), no budget, no prices', () => {
    const result = readEngineConfig(settings({ 'llm.model': 'm', strategy: 'evolutionary' }), undefined);
    expect(result.ok && result.config.strategy).toEqual({ kind: 'evolutionary', seed: 0, window: 4 });
    const stored = result.ok ? sessionSettings(result.config, file) : undefined;
    expect(stored).not.toHaveProperty('budget');
    expect(stored).not.toHaveProperty('prices');
    expect(stored?.strategy).toEqual({ kind: 'evolutionary', seed: 0, window: 4 });
  });

  it('names what is wrong: one price without the other, a cost budget without prices, out-of-range values', () => {
    const problems = (values: Record<string, unknown>) => {
      const r = readEngineConfig(settings({ 'llm.model': 'm', ...values }), undefined);
      return r.ok ? [] : r.problems;
    };
    expect(problems({ 'llm.inputPricePerMillionTokens': 3 })).toEqual([
      {
        setting: 'kernelTuner.llm.outputPricePerMillionTokens',
        message: 'is not set, but kernelTuner.llm.inputPricePerMillionTokens is: set both prices (USD per million input and output tokens, as your provider lists them) or neither',
      },
    ]);
    expect(problems({ 'budget.costUsd': 2 })).toEqual([
      {
        setting: 'kernelTuner.budget.costUsd',
        message:
          "needs the model's prices to count the cost: set kernelTuner.llm.inputPricePerMillionTokens and kernelTuner.llm.outputPricePerMillionTokens (USD per million tokens), or set the budget to 0",
      },
    ]);
    expect(problems({ strategy: 'evolutionary', 'evolutionary.window': 0, 'evolutionary.seed': 1.5, 'llm.concurrency': 0, 'budget.modelCalls': -1, 'llm.inputPricePerMillionTokens': -3, 'llm.outputPricePerMillionTokens': '15' })).toEqual([
      { setting: 'kernelTuner.evolutionary.seed', message: 'must be an integer from 0 to 2147483647 (is 1.5)' },
      { setting: 'kernelTuner.evolutionary.window', message: 'must be an integer from 1 to 32 (is 0)' },
      { setting: 'kernelTuner.llm.concurrency', message: 'must be an integer from 1 to 64 (is 0)' },
      { setting: 'kernelTuner.budget.modelCalls', message: 'must be an integer from 0 to 1000000 (is -1)' },
      { setting: 'kernelTuner.llm.inputPricePerMillionTokens', message: 'must be a number of USD per million tokens, 0 or more, or null when unknown (is -3)' },
      { setting: 'kernelTuner.llm.outputPricePerMillionTokens', message: 'must be a number of USD per million tokens, 0 or more, or null when unknown (is "15")' },
    ]);
  });

  it('takes a price of 0 (a local model) as known: every call then costs $0', () => {
    const result = readEngineConfig(settings({ 'llm.model': 'm', 'llm.inputPricePerMillionTokens': 0, 'llm.outputPricePerMillionTokens': 0 }), undefined);
    expect(result.ok && result.config.prices).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
  });

  it('declares every setting it reads in the manifest, with the defaults it assumes', () => {
    // The settings come in groups (the model's under "LLM"), each with its properties.
    const groups = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')).contributes.configuration as { properties: Record<string, { default: unknown; enum?: string[] }> }[];
    const manifest = Object.assign({}, ...groups.map((g) => g.properties)) as Record<string, { default: unknown; enum?: string[] }>;
    expect(manifest['kernelTuner.strategy']!.enum).toEqual(['autonomous', 'explicit', 'evolutionary']);
    const read: string[] = [];
    const result = readEngineConfig((key) => (read.push(key), key === 'strategy' ? 'evolutionary' : manifest[`kernelTuner.${key}`]?.default), undefined);
    expect(result.ok).toBe(true);
    for (const key of read) expect(manifest, key).toHaveProperty([`kernelTuner.${key}`]);
    for (const key of ['evolutionary.seed', 'evolutionary.window', 'evolutionary.maxChildren', 'llm.concurrency', 'budget.modelCalls', 'budget.tokens', 'budget.costUsd', 'budget.wallTimeMinutes', 'llm.inputPricePerMillionTokens', 'llm.outputPricePerMillionTokens']) {
      expect(read).toContain(key);
    }
  });
});

describe('kernelTuner.sanitize', () => {
  it('is on unless turned off, for both kinds of session; a session stored without it runs with the default', () => {
    expect(readSanitizeSetting(settings({}))).toEqual({ sanitize: true, problems: [] });
    expect(readSanitizeSetting(settings({ sanitize: false }))).toEqual({ sanitize: false, problems: [] });
    expect(readSanitizeSetting(settings({ sanitize: 'yes' })).problems).toEqual([{ setting: 'kernelTuner.sanitize', message: 'must be true or false (is "yes")' }]);
    const file = { kernelName: 'k', fileName: 'k.cu', includePaths: [], buildOptions: [] };
    const off = readEngineConfig(settings({ 'llm.model': 'm', sanitize: false }), undefined);
    expect(off.ok && sessionSettings(off.config, file)).toMatchObject({ sanitize: false });
    const on = readEngineConfig(settings({ 'llm.model': 'm' }), undefined);
    expect(on.ok && sessionSettings(on.config, file)).not.toHaveProperty('sanitize');
  });
});

describe('settings of a session of the tuner alone ("Tune parameters")', () => {
  it('are the GPUs only: no model needs to be set', () => {
    expect(readGpuSettings(settings({}))).toEqual({ device: 0, gpus: { kind: 'list', ordinals: [0] }, problems: [] });
    expect(readGpuSettings(settings({ device: 1, gpus: '0,2' }))).toEqual({ device: 1, gpus: { kind: 'list', ordinals: [0, 2] }, problems: [] });
    expect(readGpuSettings(settings({ device: -1, gpus: 3 })).problems.map((p) => p.setting)).toEqual(['kernelTuner.device', 'kernelTuner.gpus']);
  });
});
