// The model stand-in for benchmarks (bench/standin/server.ts, a test double), over real HTTP with the real LangChain
// clients: it tells apart every request the engine's prompt builders write, finds a rewrite's parents by their code as
// the tuner shows it, draws among their recorded children (the idea a step names, the instruction a judge gave, the
// children of both crossover parents), reproducibly by seed and not by what was measured, answers a retry with the
// fix, answers as a model writes, honours its latency with requests side by side, says what it cannot answer, and
// carries a whole autonomous session on the fake GPU.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { AIMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describePrompt, outputsPrompt, problemSizePrompt } from '../../src/engine/analysis/prompts';
import { extractKernelCode } from '../../src/engine/candidate/code';
import { kernelView, spliceAnswer, type FileState } from '../../src/engine/candidate/kernel-view';
import { createChatModel } from '../../src/engine/llm/providers';
import { extractJson } from '../../src/engine/llm/json';
import { invokeStructured } from '../../src/engine/llm/structured';
import { SYSTEM_PROMPT, type KernelView, type Measured } from '../../src/engine/prompts';
import { transformerOptionsFrom } from '../../src/engine/session/session-options';
import type { SessionSettings } from '../../src/engine/session/session-settings';
import { LLMKernelTransformer } from '../../src/engine/session/transformer';
import type { KernelAnalysis } from '../../src/engine/state';
import { applyStepPrompt, breakdownPrompt, planPrompt, replanPrompt, validatePrompt } from '../../src/engine/strategies/autonomous/prompts';
import type { PlanStep } from '../../src/engine/strategies/autonomous/state';
import type { Variant as PopulationVariant } from '../../src/engine/strategies/evolutionary/population';
import { crossoverPrompt, judgePrompt, mutatePrompt, type ParentView } from '../../src/engine/strategies/evolutionary/prompts';
import { restrictionsPrompt, stepRequestTail } from '../../src/engine/strategies/prompts';
import { testSpecPrompt } from '../../src/engine/testing/naive/prompts';
import { NVCC_IMPLICIT_PRELUDE } from '../../src/tuner/compile/system-headers';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { childrenOf, loadPool, matchVariant, type Variant } from '../../bench/standin/pool';
import { startStandin, type StandinOptions, type StandinServer } from '../../bench/standin/server';
import { collect, H100_LIMITS } from '../support/engine-harness';
import { FAKE_DEVICE, FakeBackend, type FakeVariant } from '../support/fake-backend';

const ROOT = join(__dirname, '..', '..');
const pool = loadPool(join(ROOT, 'bench', 'standin', 'pools'), 'matmul_naive');
const ORIGINAL = readFileSync(join(ROOT, 'examples', 'matmul_naive', 'matmul_naive.cu'), 'utf8');
const [SIGNATURE] = await parseKernels(ORIGINAL, 'matmul_naive.cu');
const FILE: FileState = { kernelName: 'matmul_naive', fileName: 'matmul_naive.cu', filePath: null, includePaths: [] };

const started: StandinServer[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.close()));
});

async function standin(options: Partial<StandinOptions> = {}): Promise<StandinServer> {
  const server = await startStandin({ pool, seed: 1, latency: { minS: 0, maxS: 0 }, thinkRate: 0, ...options });
  started.push(server);
  return server;
}

const modelOf = (server: StandinServer) => createChatModel({ provider: 'openai', model: 'standin', baseUrl: server.baseUrl, apiKey: 'sk-test' });
const conversationOf = (prompt: string): BaseMessage[] => [new SystemMessage(SYSTEM_PROMPT), new HumanMessage(prompt)];
const ask = (server: StandinServer, prompt: string | BaseMessage[]) => modelOf(server).invoke(typeof prompt === 'string' ? conversationOf(prompt) : prompt);
const lastEntry = (server: StandinServer) => server.log.at(-1)!;

/** The variant's kernel as the tuner shows it: spliced into the example's file, seen through its device unit. */
async function shown(id: string): Promise<KernelView> {
  const file = id === 'original' ? ORIGINAL : await spliceAnswer(FILE, ORIGINAL, pool.byId.get(id)!.code);
  return kernelView(FILE, file);
}

const ANALYSIS: KernelAnalysis = { description: pool.analysis.description, problemSize: ['n', 'n'], outputs: ['C'], flops: '2*n*n*n', bytes: '3*n*n*4' };
const TUNE_PARAMS = { block_size_x: [16], block_size_y: [16] };
const measured = (timeMs: number): Measured => ({
  device: FAKE_DEVICE,
  limits: H100_LIMITS,
  timeMs,
  work: { flops: 2 * 2048 ** 3, bytes: 3 * 2048 ** 2 * 4, source: "the model's analysis" },
  profile: { config: { block_size_x: 16, block_size_y: 16 }, source: 'driver', summary: ['matmul_naive: 40 registers per thread, no local memory (no spills)', 'theoretical occupancy 75%'], driver: {} as never },
});
const planStep = (id: string, title: string, outcome?: string): PlanStep => ({ id, title, details: 'as planned', depth: 0, status: outcome ? 'accepted' : 'pending', validated: true, brokenDown: false, approved: true, ...(outcome && { outcome }) });

async function stepPrompt(parent: string, title: string, candidate = 0): Promise<string> {
  const tail = stepRequestTail({ code: await shown(parent), tuneParams: TUNE_PARAMS, measured: measured(4.2), namesParameters: true, candidate, candidates: 2 });
  return `${applyStepPrompt(planStep('1', title), ANALYSIS)}\n${tail}`;
}

/** A population variant of the evolutionary strategy made of a pool variant. */
function populationVariant(id: string, number: number, parents: string[] = []): PopulationVariant {
  const v = pool.byId.get(id)!;
  return {
    id: `v${number}`,
    child: number === 0 ? null : number,
    parents,
    operator: number === 0 ? 'original' : 'mutate',
    instruction: '',
    code: v.code,
    tuneParams: v.tunableParameters as PopulationVariant['tuneParams'],
    restrictions: v.restrictions,
    gridDivisors: v.gridDivisors,
    sharedMemBytes: null,
    bestParams: {},
    timeMs: 10 / (number + 1),
    objectiveValue: 10 / (number + 1),
    profile: null,
    bound: 'unprofiled',
    occupancy: 'unknown',
    diff: '',
    elite: true,
  };
}

async function parentView(id: string, number: number, timeMs = 4.2): Promise<ParentView> {
  return { variant: populationVariant(id, number), code: await shown(id), measured: measured(timeMs) };
}

async function mutateOf(id: string, instruction?: string, timeMs?: number): Promise<string> {
  const parent = await parentView(id, 1, timeMs);
  return mutatePrompt({ parent, variants: [populationVariant('original', 0), parent.variant], rejected: [], ...(instruction && { instruction }) });
}

async function crossoverOf(first: string, second: string): Promise<string> {
  const [a, b] = [await parentView(first, 1), await parentView(second, 2)];
  return crossoverPrompt({ first: a, second: b, variants: [populationVariant('original', 0), a.variant, b.variant], rejected: [] });
}

const ids = (variants: readonly Variant[]) => variants.map((v) => v.id).sort();

describe('the model stand-in', () => {
  it('tells apart every request the prompt builders write, and answers each from the pool', async () => {
    const server = await standin();
    const view = await shown('original');
    const steps = [planStep('1', 'Shared-memory tiles'), planStep('2', '2D register blocking')];
    const prompts: [string, string][] = [
      ['describe', describePrompt(view, 'matmul_naive')],
      ['problem-size', problemSizePrompt(view, SIGNATURE!, ANALYSIS.description)],
      ['outputs', outputsPrompt(view, SIGNATURE!, ANALYSIS.description)],
      ['test', testSpecPrompt(view, SIGNATURE!, ANALYSIS, { minMs: 0.1, maxMs: 50 })],
      ['plan', planPrompt(view, ANALYSIS, TUNE_PARAMS, measured(4.2))],
      ['validate', validatePrompt(view, steps)],
      ['breakdown', breakdownPrompt(view, steps[0]!)],
      ['replan', replanPrompt(await shown('step1_shared_tiles'), ANALYSIS, TUNE_PARAMS, [planStep('1', 'Shared-memory tiles', 'accepted: 4.2 ms -> 1.3 ms')], measured(1.3))],
      ['step', await stepPrompt('original', 'Shared-memory tiles')],
      ['restrictions', restrictionsPrompt(await shown('step2_register_blocking'), pool.byId.get('step2_register_blocking')!.tunableParameters, ['block_size_x * block_size_y <= 1024'])],
      ['mutate', await mutateOf('step1_shared_tiles')],
      ['crossover', await crossoverOf('step1_shared_tiles', 'tiled_square')],
      ['judge', judgePrompt({ parent: await parentView('step2_register_blocking', 1), variants: [populationVariant('original', 0)], rejected: [] })],
    ];
    const answers: string[] = [];
    for (const [, prompt] of prompts) answers.push((await ask(server, prompt)).text);
    expect(server.log.map((e) => [e.kind, e.status])).toEqual(prompts.map(([kind]) => [kind, 200]));

    const json = (i: number) => {
      const found = extractJson(answers[i]!);
      if (!found.ok) throw new Error(`answer ${i} holds no JSON: ${answers[i]}`);
      return found.value as any;
    };
    expect(answers[0]).toBe(pool.analysis.description);
    expect(json(1)).toEqual({ problemSize: ['n', 'n'], flops: '2*n*n*n', bytes: '3*n*n*4' });
    expect(json(2)).toEqual({ outputs: ['C'] });
    expect(json(3).arguments.find((a: { name: string }) => a.name === 'n').value).toBe(2048);
    const titles = Object.values(pool.ideas).map((i) => i.title);
    expect(json(4).steps.length).toBeGreaterThanOrEqual(2);
    expect(json(4).steps.every((s: { title: string }) => titles.includes(s.title))).toBe(true);
    expect(json(5)).toEqual({ steps: [expect.objectContaining({ id: '1', deviceOnly: true }), expect.objectContaining({ id: '2', deviceOnly: true })] });
    expect(json(6)).toEqual({ breakDown: false, steps: [] });
    expect(json(7).steps.map((s: { title: string }) => s.title)).not.toContain('Shared-memory tiles');
    expect(json(9)).toEqual({ restrictions: pool.byId.get('step2_register_blocking')!.restrictions });
    expect(json(12)).toEqual({ diagnosis: expect.stringContaining('The profile: matmul_naive: 40 registers per thread, no local memory (no spills); theoretical occupancy 75%.'), instruction: expect.any(String) });
    expect(pool.byId.get('step2_register_blocking')!.judge.map((j) => j.instruction)).toContain(json(12).instruction);
    // The rewrites: a child of the kernel shown, as the engine reads an answer (its code and its json block).
    for (const i of [8, 10, 11]) {
      const entry = server.log[i]!;
      const child = pool.byId.get(entry.child!)!;
      expect(entry.shown.every((p) => child.parents.includes(p)), `${entry.kind}: ${entry.child} of ${entry.shown}`).toBe(true);
      expect(extractKernelCode(answers[i]!, { kernelName: 'matmul_naive' })).toBe(`${child.code.trim()}\n`);
      expect(answers[i]).toContain(`"tunableParameters":${JSON.stringify(child.tunableParameters)}`);
    }
    expect(server.log[8]!.idea).toBe('shared_tiles');
  });

  it('finds a parent by its code as the tuner shows it (defines, comments and all), and answers one of its children', async () => {
    const server = await standin({ seed: 5 });
    for (const parent of ['original', 'step1_shared_tiles', 'tiled_square', 'step2_register_blocking', 'step3_vectorized']) {
      for (let i = 0; i < 3; i++) {
        await ask(server, await mutateOf(parent));
        expect(lastEntry(server).shown).toEqual([parent]);
        expect(ids(childrenOf(pool.variants, parent))).toContain(lastEntry(server).child);
      }
    }
  });

  it('draws a step among the children that implement the idea it names, else among all', async () => {
    const server = await standin();
    for (let candidate = 0; candidate < 4; candidate++) {
      await ask(server, await stepPrompt('step1_shared_tiles', '2D register blocking', candidate));
      expect(lastEntry(server).idea).toBe('register_blocking');
    }
    const children = ids(childrenOf(pool.variants, 'tiled_square'));
    await ask(server, await stepPrompt('tiled_square', 'Vectorised loads and stores'));
    expect(children).toContain(lastEntry(server).child);
  });

  it('answers a mutate with an idea not yet applied to the kernel, and children written side by side with different ones', async () => {
    const server = await standin({ seed: 2 });
    const parent = await parentView('original', 0);
    const variants = [parent.variant];
    const ideaOf = async (prompt: string) => {
      await ask(server, prompt);
      return pool.byId.get(lastEntry(server).child!)!.idea;
    };
    // Asked for its first, second and third choice at once: the two ideas the pool has for the original, then a second take.
    const ranked = [1, 2, 3].map((rank) => mutatePrompt({ parent, rank, variants, rejected: [] }));
    const children: string[] = [];
    for (const prompt of ranked) {
      await ask(server, prompt);
      children.push(lastEntry(server).child!);
    }
    expect(new Set(children).size).toBe(3);
    expect(new Set(children.map((c) => pool.byId.get(c)!.idea))).toEqual(new Set(['shared_tiles', 'unroll_k']));
    // Once the results show an idea applied to the original, it proposes the other.
    const applied = pool.byId.get(children[0]!)!;
    const child = { ...populationVariant(applied.id, 1, ['v0']), instruction: pool.ideas[applied.idea!]!.title };
    const other = await ideaOf(mutatePrompt({ parent, variants: [parent.variant, child], rejected: [] }));
    expect(other).not.toBe(applied.idea);
  });

  it("draws a mutate among the children of the judge's instruction it applies", async () => {
    const server = await standin();
    const [, doubleBuffering] = pool.byId.get('step2_register_blocking')!.judge;
    for (let i = 0; i < 4; i++) {
      await ask(server, await mutateOf('step2_register_blocking', doubleBuffering!.instruction));
      expect(doubleBuffering!.children).toContain(lastEntry(server).child);
    }
  });

  it('draws a crossover among the children of both parents, else among the children of either', async () => {
    const server = await standin();
    for (const seed of [1, 2, 3]) {
      const other = await standin({ seed });
      await ask(other, await crossoverOf('step3_vectorized', 'step2_double_buffered'));
      expect(lastEntry(other)).toMatchObject({ kind: 'crossover', shown: ['step3_vectorized', 'step2_double_buffered'], child: 'step4_double_buffered' });
    }
    const either = ids([...childrenOf(pool.variants, 'tiled_square'), ...childrenOf(pool.variants, 'step2_register_blocking')]);
    const drawn = new Set<string>();
    for (let i = 0; i < 8; i++) {
      await ask(server, await crossoverOf('tiled_square', 'step2_register_blocking'));
      drawn.add(lastEntry(server).child!);
    }
    expect([...drawn].every((c) => either.includes(c))).toBe(true);
    expect(drawn.size).toBeGreaterThan(1);
  });

  it("answers a retry with the failed variant's fix, else with a child not answered before", async () => {
    const server = await standin();
    const prompt = await mutateOf('original');
    const wrong = pool.byId.get('tiled_wrong_b')!;
    const correction = 'The kernel compiled and ran, but its results are wrong: they differ from the original kernel on the same inputs.';
    await ask(server, [...conversationOf(prompt), new AIMessage(`Here it is.\n\n\`\`\`cuda\n${wrong.code}\`\`\``), new HumanMessage(correction)]);
    expect(lastEntry(server)).toMatchObject({ kind: 'mutate', attempt: 2, shown: ['original'], child: 'tiled_square' });
    // A variant without a fix (it failed for another reason: here its json block was refused) gets another child.
    const good = pool.byId.get('step1_shared_tiles')!;
    for (const seed of [1, 2, 3, 4]) {
      const other = await standin({ seed });
      await ask(other, [...conversationOf(prompt), new AIMessage(`\`\`\`cuda\n${good.code}\`\`\``), new HumanMessage('Your answer cannot be used: invalid tunable parameters.')]);
      expect(lastEntry(other).attempt).toBe(2);
      expect(lastEntry(other).child).not.toBe('step1_shared_tiles');
      expect(ids(childrenOf(pool.variants, 'original'))).toContain(lastEntry(other).child);
    }
  });

  it('draws by seed and by what was asked, not by what the GPU measured', async () => {
    const sequence = async (seed: number, timeMs = 4.2) => {
      const server = await standin({ seed });
      const prompt = await mutateOf('original', undefined, timeMs);
      for (let i = 0; i < 6; i++) await ask(server, prompt);
      return server.log.map((e) => e.child);
    };
    const first = await sequence(7);
    expect(await sequence(7)).toEqual(first);
    expect(await sequence(7, 3.9)).toEqual(first);
    expect(await sequence(8)).not.toEqual(first);
    // The same request asked again is another draw.
    expect(new Set(first).size).toBeGreaterThan(1);
  });

  it('answers as a model writes: thinking, code in cuda or cpp fences, JSON in prose, bare or as a tool call; with token usage', async () => {
    const server = await standin({ thinkRate: 1 });
    const described = await ask(server, describePrompt(await shown('original'), 'matmul_naive'));
    expect(described.text).toMatch(/^<think>\n[^{}[\]]+\n<\/think>\n\n/);
    const requestChars = SYSTEM_PROMPT.length + describePrompt(await shown('original'), 'matmul_naive').length;
    expect(described.usage_metadata).toMatchObject({ input_tokens: Math.ceil(requestChars / 4), output_tokens: Math.ceil(described.text.length / 4) });

    const fences = new Set<string>();
    for (let i = 0; i < 16; i++) fences.add(/```(cuda|cpp)\n/.exec((await ask(server, await mutateOf('original'))).text)![1]!);
    expect(fences).toEqual(new Set(['cuda', 'cpp']));

    const Restrictions = z.object({ restrictions: z.array(z.string()) });
    const prompt = restrictionsPrompt(await shown('tiled_square'), pool.byId.get('tiled_square')!.tunableParameters, []);
    const expected = { restrictions: ['block_size_x == block_size_y'] };
    for (const type of ['default', 'jsonSchema', 'functionCalling', 'jsonMode', 'jsonify'] as const) {
      await expect(invokeStructured(modelOf(server), conversationOf(prompt), Restrictions, { type, name: 'restrictions', stripThinking: true }), type).resolves.toEqual(expected);
    }
    expect(server.log.slice(-6).map((e) => e.kind)).toEqual(['restrictions', 'restrictions', 'restrictions', 'restrictions', 'restrictions', 'jsonify']);

    const streamed = await createChatModel({ provider: 'openai', model: 'standin', baseUrl: server.baseUrl, apiKey: 'sk-test' }).stream(conversationOf(prompt));
    let text = '';
    for await (const chunk of streamed) text += chunk.text;
    expect(extractJson(text)).toEqual({ ok: true, value: expected });

    const ollama = await createChatModel({ provider: 'ollama', model: 'standin', baseUrl: server.baseUrl.replace(/\/v1$/, '') }).invoke(conversationOf(prompt));
    expect(extractJson(ollama.text)).toEqual({ ok: true, value: expected });
  });

  it('waits its drawn latency for each answer, serving requests side by side', async () => {
    const server = await standin({ seed: 18, latency: { minS: 0.05, maxS: 0.6 } });
    const prompts = [describePrompt(await shown('original'), 'matmul_naive'), await mutateOf('original'), await mutateOf('step1_shared_tiles'), await crossoverOf('step1_shared_tiles', 'tiled_square')];
    const finished: number[] = [];
    await Promise.all(prompts.map((prompt, i) => ask(server, prompt).then(() => finished.push(i))));
    const asked = ['describe:', 'mutate:original', 'mutate:step1_shared_tiles', 'crossover:step1_shared_tiles,tiled_square'];
    const latencies = asked.map((key) => server.log.find((e) => `${e.kind}:${e.shown.join(',')}` === key)!.latencyMs);
    // Seed 18 draws these (in [50, 600] ms), each at least 100 ms from the next ...
    expect(latencies).toEqual([102, 386, 540, 220]);
    // ... and the answers came in their order, not in the order the requests were sent: each waited its own.
    expect(finished).toEqual([0, 3, 1, 2]);
  });

  it('says what it cannot answer: 400 for a request of no known kind, 422 for a kernel not in the pool', async () => {
    const server = await standin();
    const post = (content: string) =>
      fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'standin', messages: [{ role: 'user', content }] }) });
    const unknown = await post('Write a haiku about GPUs.');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as any).error.message).toMatch(/^model stand-in \(pool matmul_naive\): the model stand-in cannot tell what this request asks: it begins "Write a haiku about GPUs\."; it answers requests that begin as describe: /);
    const foreign = await post(planPrompt({ code: ORIGINAL.replace('sum += A', 'sum -= A'), context: [] }, ANALYSIS, TUNE_PARAMS, measured(4.2)));
    expect(foreign.status).toBe(422);
    expect(((await foreign.json()) as any).error.message).toContain('the kernel in the request is none of pool matmul_naive\'s 23 variants; the closest is original');
    expect(server.log.map((e) => [e.kind, e.status])).toEqual([
      [null, 400],
      ['plan', 422],
    ]);
    await expect(ask(server, 'Write a haiku about GPUs.')).rejects.toThrow(/cannot tell what this request asks/);
  });
});

describe('an autonomous session against the model stand-in (latency 0, fake GPU)', () => {
  const SETTINGS: SessionSettings = {
    kernelName: 'matmul_naive',
    fileName: 'matmul_naive.cu',
    includePaths: [],
    compilerOptions: [],
    strategy: { kind: 'autonomous', breakdownSteps: true, maxBreakdowns: 1, withReplanning: true, maxReplanning: 1, candidatesPerStep: 1 },
    retries: 2,
    performanceThreshold: 1,
    iterations: 8,
    timePerTestS: 15,
    structuredOutputType: 'default',
    stripThinking: true,
    approvePlan: false,
    model: { provider: 'openai', model: 'standin' },
  };

  /**
   * TEST DOUBLE's GPU for the pool (the test knows the labels; the server never reads them): a variant labelled good
   * is twice as fast as its fastest parent, any other a little slower than its slowest; wrong and racy ones give wrong
   * results, and NVRTC rejects what does not compile (the line that differs from its fix).
   */
  const poolTimeMs = new Map([['original', 4.3]]);
  for (let reached = [pool.byId.get('original')!]; reached.length > 0; ) {
    reached = reached.flatMap((v) => childrenOf(pool.variants, v.id).filter((c) => !poolTimeMs.has(c.id)));
    for (const v of reached) {
      const parents = v.parents.filter((p) => poolTimeMs.has(p)).map((p) => poolTimeMs.get(p)!);
      poolTimeMs.set(v.id, v.label === 'good' ? Math.min(...parents) / 2 : Math.max(...parents) * 1.05);
    }
  }
  /** The kernel an NVRTC build compiles: its source after the prelude and the #line directive. */
  const variantOf = (v: FakeVariant) => matchVariant(pool, v.source.replace(NVCC_IMPLICIT_PRELUDE, '').replace(/^#line .*\n/, ''));
  const rejects = pool.variants
    .filter((v) => v.label === 'no-compile')
    .map((v) => {
      const fixed = new Set(pool.byId.get(v.fix!)!.code.split('\n'));
      const broken = v.code.split('\n').find((line) => !fixed.has(line))!;
      return `^${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
    });

  it('runs to the end: every rewrite a child of the kernel it was asked about, every failure retried with its fix', async () => {
    const server = await standin({ seed: 11, thinkRate: 0.5 });
    const backend = new FakeBackend({
      compilers: ['nvrtc'],
      nvrtcRejects: new RegExp(rejects.join('|'), 'm'),
      limits: H100_LIMITS,
      model: {
        timeMs: (v) => poolTimeMs.get(variantOf(v).id)!,
        correct: (v) => (['wrong', 'racy'].includes(variantOf(v).label) ? `${variantOf(v).id} computes something else` : true),
      },
    });
    const { options } = transformerOptionsFrom(SETTINGS, { llm: modelOf(server), backend, checkpointer: new MemorySaver(), threadId: 'standin-session' });
    const run = await collect(new LLMKernelTransformer(ORIGINAL, options));
    expect(run.end).toEqual({ status: 'finished' });
    expect(server.log.every((e) => e.status === 200)).toBe(true);
    expect(server.log.slice(0, 6).map((e) => e.kind)).toEqual(['describe', 'problem-size', 'outputs', 'test', 'plan', 'validate']);
    const rewrites = server.log.filter((e) => e.kind === 'step');
    expect(rewrites.length).toBeGreaterThan(0);
    for (const e of rewrites.filter((x) => x.attempt === 1)) expect(pool.byId.get(e.child!)!.parents).toContain(e.shown[0]);
    // Every rewrite the session asked restrictions of was the one answered.
    for (const e of server.log.filter((x) => x.kind === 'restrictions')) expect(rewrites.map((r) => r.child)).toContain(e.shown[0]);
    // Only rewrites that fail are retried, and a retry is answered with the failed variant's fix (here, every time).
    const retries = rewrites.filter((e) => e.attempt > 1);
    expect(retries.length).toBeGreaterThan(0);
    for (const retry of retries) {
      const failed = pool.byId.get([...rewrites].reverse().find((e) => e.call < retry.call && e.attempt === retry.attempt - 1)!.child!)!;
      expect(['wrong', 'racy', 'no-compile']).toContain(failed.label);
      expect(retry.child).toBe(failed.fix);
    }
    // The session kept the faster rewrites: it ends on one of them, labelled good.
    expect(run.of('step.accepted').length).toBeGreaterThan(0);
    const final = matchVariant(pool, run.of('session.finished')[0]!.tunableCode);
    expect(rewrites.map((e) => e.child)).toContain(final.id);
    expect(final.label).toBe('good');
    expect(run.of('llm.exchange').length).toBe(server.log.length);
  });

  it('carries an evolutionary session: mutations, crossovers and judges each answered with children of the variants shown', async () => {
    const server = await standin({ seed: 5, thinkRate: 0.25 });
    const backend = new FakeBackend({
      compilers: ['nvrtc'],
      nvrtcRejects: new RegExp(rejects.join('|'), 'm'),
      limits: H100_LIMITS,
      model: {
        timeMs: (v) => poolTimeMs.get(variantOf(v).id)!,
        correct: (v) => (['wrong', 'racy'].includes(variantOf(v).label) ? `${variantOf(v).id} computes something else` : true),
      },
    });
    const settings: SessionSettings = { ...SETTINGS, strategy: { kind: 'evolutionary', seed: 5, window: 4 }, budget: { modelCalls: 40 } };
    const { options } = transformerOptionsFrom(settings, { llm: modelOf(server), backend, checkpointer: new MemorySaver(), threadId: 'standin-evolution' });
    const run = await collect(new LLMKernelTransformer(ORIGINAL, options));
    expect(run.end).toEqual({ status: 'finished' });
    expect(server.log.filter((e) => e.status !== 200)).toEqual([]);
    const kinds = new Set(server.log.map((e) => e.kind));
    for (const kind of ['mutate', 'crossover', 'judge'] as const) expect(kinds).toContain(kind);
    // The restrictions come with the code: one request per rewrite.
    expect(kinds).not.toContain('restrictions');
    // A first answer is a recorded child of the variant (a crossover: of one of the two) the request showed.
    for (const e of server.log.filter((x) => (x.kind === 'mutate' || x.kind === 'crossover') && x.attempt === 1)) {
      expect(pool.byId.get(e.child!)!.parents.some((p) => e.shown.includes(p))).toBe(true);
    }
    // Wrong, racy and uncompilable children stay out of the population; the session ends on the fastest good one.
    const entered = run.of('population.variant').map((v) => matchVariant(pool, v.variant.code));
    expect(entered.filter((v) => ['wrong', 'racy', 'no-compile'].includes(v.label))).toEqual([]);
    const final = matchVariant(pool, run.of('session.finished')[0]!.tunableCode);
    expect(final.label).toBe('good');
    expect(Math.min(...entered.map((v) => poolTimeMs.get(v.id)!))).toBe(poolTimeMs.get(final.id));
    expect(run.of('population.stopped')[0]!.reason).toMatchObject({ kind: 'budget', budget: 'model_calls' });
  });
});

describe('the stand-in as a process (dist/bench/standin.js, bundled by the test setup)', () => {
  const BUNDLE = join(ROOT, 'dist', 'bench', 'standin.js');

  it('prints its URL, answers, logs each request as a JSON line, and stops on SIGTERM', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'standin-')), 'requests.jsonl');
    const child = spawn(process.execPath, [BUNDLE, '--pool', 'matmul_naive', '--seed', '3', '--latency', '0', '--think', '0', '--test-size', '1024', '--log', log], { stdio: ['ignore', 'pipe', 'pipe'] });
    const [url] = (await once(child.stdout!, 'data')) as [Buffer];
    const baseUrl = url.toString().trim();
    expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    const model = createChatModel({ provider: 'openai', model: 'standin', baseUrl, apiKey: 'sk-test' });
    const answer = await model.invoke(conversationOf(testSpecPrompt(await shown('original'), SIGNATURE!, ANALYSIS, { minMs: 0.1, maxMs: 50 })));
    expect(extractJson(answer.text)).toMatchObject({ ok: true, value: { arguments: expect.arrayContaining([expect.objectContaining({ name: 'n', value: 1024 })]) } });
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    expect(await exited).toEqual([0, null]);
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ call: 1, kind: 'test', attempt: 1, status: 200, latencyMs: 0 })]);
  });

  it('refuses bad input with what was wrong and its usage', () => {
    for (const [args, message] of [
      [['--pool', 'matmul'], 'standin: no pool named "matmul" in '],
      [['--pool', 'matmul_naive', '--latency', '40-8'], 'standin: Expected a latency range MIN-MAX with MIN <= MAX but received "40-8"'],
      [['--pool', 'matmul_naive', '--latency', 'fast'], 'standin: Expected a latency in seconds as MIN-MAX (e.g. 8-40) or one value (e.g. 0) but received "fast"'],
      [['--pool', 'matmul_naive', '--think', '2'], 'standin: Expected a think rate from 0 to 1 but received 2'],
      [['--latency', '0'], 'standin: --pool is required'],
    ] as const) {
      const r = spawnSync(process.execPath, [BUNDLE, ...args], { encoding: 'utf8', timeout: 30_000 });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.stderr).toContain('usage: node dist/bench/standin.js --pool NAME [options]');
    }
  });
});
