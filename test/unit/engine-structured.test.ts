// invokeStructured over the real clients: every structured-output mode for both providers, with the request body the
// client sent; the two-step jsonify; thinking before JSON; and errors that name the bad field.
import { HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { LlmResponseError, LlmServerError, StructuredOutputError } from '../../src/engine/llm/errors';
import { extractJson, formatZodIssues } from '../../src/engine/llm/json';
import { createChatModel, type ProviderConfig } from '../../src/engine/llm/providers';
import { invokeStructured, StructuredOutputType, type InvokeStructuredOptions } from '../../src/engine/llm/structured';
import { withThinkingStripped } from '../../src/engine/llm/thinking';
import { loadScript, startScriptedLlmServer, type ScriptedLlmServer, type ScriptTurn } from '../support/scripted-llm-server';

const Plan = z.object({
  steps: z.array(z.object({ title: z.string().describe('what the step does'), gain: z.number().int() })).min(1),
});
const expected = { steps: [{ title: 'Tile the loop', gain: 2 }, { title: 'Unroll', gain: 1 }] };
const ask = (): BaseMessage[] => [new SystemMessage('You optimize CUDA kernels.'), new HumanMessage('Plan the optimization of this kernel.')];

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  // Every scripted turn must have been used, and each as scripted.
  if (server) {
    expect(server.mismatches).toEqual([]);
    await server.close();
  }
  server = undefined;
});

async function serve(script: string | ScriptTurn[]): Promise<ScriptedLlmServer> {
  server = await startScriptedLlmServer(typeof script === 'string' ? loadScript(script) : script);
  return server;
}

const configFor = (provider: 'openai' | 'ollama', s: ScriptedLlmServer): ProviderConfig =>
  provider === 'openai' ? { provider, model: 'scripted-model', baseUrl: `${s.url}/v1` } : { provider, model: 'scripted-model', baseUrl: s.url };

async function run(provider: 'openai' | 'ollama', script: string | ScriptTurn[], options: InvokeStructuredOptions) {
  const s = await serve(script);
  const value = await invokeStructured(createChatModel(configFor(provider, s)), ask(), Plan, { name: 'plan', ...options });
  return { value, bodies: s.requests.map((r) => r.body), s };
}

const planSchemaShape = {
  type: 'object',
  properties: { steps: { type: 'array', items: { type: 'object', properties: { title: { type: 'string', description: 'what the step does' } } } } },
  required: ['steps'],
};

describe('OpenAI-compatible structured output', () => {
  it("default: strict json_schema response_format (the client's native default), streamed", async () => {
    const { value, bodies } = await run('openai', 'structured-plan-content', { type: StructuredOutputType.DEFAULT });
    expect(value).toEqual(expected);
    expect(bodies[0].response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'plan', strict: true, schema: planSchemaShape } });
    expect(bodies[0]).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(bodies[0].tools).toBeUndefined();
  });

  it('default for models older than structured outputs: function calling, as LangChain does', async () => {
    const s = await serve('structured-plan-tool');
    const model = createChatModel({ provider: 'openai', model: 'gpt-4-0613', baseUrl: `${s.url}/v1` });
    await expect(invokeStructured(model, ask(), Plan, { name: 'plan' })).resolves.toEqual(expected);
    expect(s.requests[0]!.body.tool_choice).toEqual({ type: 'function', function: { name: 'plan' } });
  });

  it('jsonSchema: the same response_format, asked for explicitly', async () => {
    const { value, bodies } = await run('openai', 'structured-plan-content', { type: 'jsonSchema' });
    expect(value).toEqual(expected);
    expect(bodies[0].response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'plan', strict: true } });
  });

  it('functionCalling: one tool and a tool_choice forcing it; the arguments are the object', async () => {
    const { value, bodies } = await run('openai', 'structured-plan-tool', { type: StructuredOutputType.TOOL_CALLING });
    expect(value).toEqual(expected);
    expect(bodies[0].tools).toHaveLength(1);
    expect(bodies[0].tools).toMatchObject([{ type: 'function', function: { name: 'plan', parameters: planSchemaShape } }]);
    expect(bodies[0].tool_choice).toEqual({ type: 'function', function: { name: 'plan' } });
    expect(bodies[0].response_format).toBeUndefined();
  });

  it('jsonMode: json_object, and the schema described in the last user message', async () => {
    const { value, bodies } = await run('openai', 'structured-plan-content', { type: 'jsonMode' });
    expect(value).toEqual(expected);
    expect(bodies[0].response_format).toEqual({ type: 'json_object' });
    const messages = bodies[0].messages as Array<{ role: string; content: string }>;
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[1]!.content).toMatch(/^Plan the optimization of this kernel\.\n\nAnswer with one JSON object that matches this JSON schema/);
    expect(messages[1]!.content).toContain('"what the step does"');
  });

  it('jsonify: a free answer, then a second plain request converting it (fences and a trailing comma tolerated)', async () => {
    const { value, bodies } = await run('openai', 'structured-plan-jsonify', { type: StructuredOutputType.SEPARATE_REQUEST });
    expect(value).toEqual(expected);
    expect(bodies).toHaveLength(2);
    for (const body of bodies) {
      expect(body.response_format).toBeUndefined();
      expect(body.tools).toBeUndefined();
    }
    expect(bodies[1].messages).toHaveLength(1);
    expect(bodies[1].messages[0].content).toContain('"what the step does"');
  });
});

describe('Ollama structured output', () => {
  it('default: format is the JSON schema', async () => {
    const { value, bodies } = await run('ollama', 'structured-plan-content', { type: 'default' });
    expect(value).toEqual(expected);
    expect(bodies[0].format).toMatchObject(planSchemaShape);
    expect(bodies[0].tools).toBeUndefined();
  });

  it('jsonSchema: format is the JSON schema', async () => {
    const { value, bodies } = await run('ollama', 'structured-plan-content', { type: 'jsonSchema' });
    expect(value).toEqual(expected);
    expect(bodies[0].format).toMatchObject(planSchemaShape);
  });

  it('functionCalling: one tool in OpenAI shape; the answer is a tool call in Ollama shape', async () => {
    const { value, bodies } = await run('ollama', 'structured-plan-tool', { type: 'functionCalling' });
    expect(value).toEqual(expected);
    expect(bodies[0].tools).toHaveLength(1);
    expect(bodies[0].tools).toMatchObject([{ type: 'function', function: { name: 'plan', parameters: planSchemaShape } }]);
    expect(bodies[0].format).toBeUndefined();
  });

  it('jsonMode: format "json", and the schema described in the prompt', async () => {
    const { value, bodies } = await run('ollama', 'structured-plan-content', { type: 'jsonMode' });
    expect(value).toEqual(expected);
    expect(bodies[0].format).toBe('json');
    expect(bodies[0].messages.at(-1).content).toContain('Answer with one JSON object that matches this JSON schema');
  });

  it('jsonify: two plain requests, no format', async () => {
    const { value, bodies } = await run('ollama', 'structured-plan-jsonify', { type: 'jsonify' });
    expect(value).toEqual(expected);
    expect(bodies).toHaveLength(2);
    expect(bodies.map((b) => b.format)).toEqual([undefined, undefined]);
  });
});

describe('answers that are not what the schema asks', () => {
  it.each(['openai', 'ollama'] as const)('%s: a wrong field type → StructuredOutputError naming the field', async (provider) => {
    const error = await run(provider, 'structured-plan-malformed', { type: 'jsonMode' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputError);
    const e = error as StructuredOutputError;
    expect(e.issues).toEqual(['field `steps[1].title`: expected string, received number']);
    expect(e.message).toBe('the answer does not match the expected JSON: field `steps[1].title`: expected string, received number');
    expect(e.rawText).toContain('"title": 7');
    expect(e.feedback).toContain('- field `steps[1].title`: expected string, received number');
  });

  it('tool-call arguments cut off → StructuredOutputError saying the answer was cut off', async () => {
    const error = await run('openai', [{ respond: { toolCall: { name: 'plan', arguments: '{"steps": [{"title": "x", "gain": 1}' } } }], {
      type: 'functionCalling',
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputError);
    expect((error as Error).message).toBe('the answer is not usable JSON: the JSON ends before its closing bracket: the answer was cut off, probably at the output token limit: answer again, shorter');
    expect((error as StructuredOutputError).rawText).toBe('{"steps": [{"title": "x", "gain": 1}');
  });

  it('prose without JSON → StructuredOutputError saying so', async () => {
    const error = await run('ollama', [{ respond: { content: 'I would tile the loop.' } }], { type: 'default' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputError);
    expect((error as Error).message).toBe('the answer is not usable JSON: the answer contains no JSON object');
  });

  it('jsonify stops after the first request when the answer is empty', async () => {
    const error = await run('openai', [{ respond: { content: '' } }], { type: 'jsonify' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StructuredOutputError);
    expect(server!.requests).toHaveLength(1);
  });

  it('a 200 that is not a chat completion → LlmResponseError', async () => {
    const error = await run('openai', [{ respond: { body: '{"weird": true}' } }], { type: 'default' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmResponseError);
    expect((error as Error).message).toMatch(/^unexpected failure of a request to the OpenAI-compatible endpoint at http:\/\/127\.0\.0\.1:\d+\/v1: /);
  });
});

describe('thinking before the JSON', () => {
  it.each(['openai', 'ollama'] as const)('%s: stripped when asked, so braces in the thoughts do not confuse extraction', async (provider) => {
    const { value } = await run(provider, 'structured-plan-thinking', { type: 'default', stripThinking: true });
    expect(value).toEqual({ steps: [{ title: 'Tile the loop', gain: 2 }] });
  });

  it('a model already wrapped by withThinkingStripped works the same', async () => {
    const s = await serve('structured-plan-thinking');
    const model = withThinkingStripped(createChatModel(configFor('openai', s)));
    const seen: BaseMessage[] = [];
    const value = await invokeStructured(model, ask(), Plan, { type: 'jsonSchema', name: 'plan', onResponse: (m) => seen.push(m) });
    expect(value).toEqual({ steps: [{ title: 'Tile the loop', gain: 2 }] });
    expect(s.requests[0]!.body.response_format).toMatchObject({ type: 'json_schema', json_schema: { name: 'plan', strict: true } });
    // The raw answer the caller sees has its thinking removed and keeps the usage.
    expect(seen).toHaveLength(1);
    expect(seen[0]!.content).toBe('{"steps": [{"title": "Tile the loop", "gain": 2}]}');
    expect((seen[0] as { usage_metadata?: unknown }).usage_metadata).toMatchObject({ input_tokens: 10 });
  });
});

describe('transport failures inside invokeStructured', () => {
  it('retries a 500 when asked to, then answers', async () => {
    const { value, bodies } = await run(
      'ollama',
      [{ respond: { status: 500, error: 'overloaded' } }, ...loadScript('structured-plan-content')],
      { type: 'default', retry: { maxAttempts: 2, baseDelayMs: 1 } },
    );
    expect(value).toEqual(expected);
    expect(bodies).toHaveLength(2);
  });

  it('without retry options one failure is final, and worded', async () => {
    const error = await run('ollama', [{ respond: { status: 500, error: 'overloaded' } }], { type: 'default' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmServerError);
    expect((error as Error).message).toMatch(/^Ollama at http:\/\/127\.0\.0\.1:\d+ failed with HTTP 500: overloaded$/);
  });
});

describe('extractJson', () => {
  it('takes plain JSON, fenced JSON (the last fence first) and JSON inside prose', () => {
    expect(extractJson(' {"a": 1} ')).toEqual({ ok: true, value: { a: 1 } });
    expect(extractJson('Example:\n```json\n{"a": 0}\n```\nAnswer:\n```json\n{"a": 2}\n```')).toEqual({ ok: true, value: { a: 2 } });
    expect(extractJson('```\n{"a": 3}\n```')).toEqual({ ok: true, value: { a: 3 } });
    expect(extractJson('Sure! The result is {"a": {"b": [1, 2]}} as requested; see {x}.')).toEqual({ ok: true, value: { a: { b: [1, 2] } } });
    expect(extractJson('{"s": "a } in a string, and a \\" quote"}')).toEqual({ ok: true, value: { s: 'a } in a string, and a " quote' } });
  });

  it('repairs trailing commas and comments, and nothing looser', () => {
    expect(extractJson('{"a": [1, 2,], "b": {"c": 1,},}')).toEqual({ ok: true, value: { a: [1, 2], b: { c: 1 } } });
    expect(extractJson('{"a": "x,]"}')).toEqual({ ok: true, value: { a: 'x,]' } });
    expect(extractJson('{\n  "a": 1, // the first\n  /* the rest */ "b": "http://x/*y*/",\n}')).toEqual({ ok: true, value: { a: 1, b: 'http://x/*y*/' } });
    expect(extractJson("{'a': 1}")).toEqual({ ok: false, reason: 'invalid-json', detail: 'the JSON is malformed: names and strings take double quotes in JSON ("name"), not single quotes' });
    expect(extractJson('{"a": True, "b": "it\'s None"}')).toEqual({ ok: false, reason: 'invalid-json', detail: "the JSON is malformed: JSON spells true, false and null in lower case (True is Python's)" });
    expect(extractJson('{"a": 1, "b": ')).toEqual({ ok: false, reason: 'invalid-json', detail: 'the JSON ends before its closing bracket: the answer was cut off, probably at the output token limit: answer again, shorter' });
  });

  it('never reads the thoughts of a <think> block as the answer', () => {
    expect(extractJson('<think>first {"steps": ["draft"]}</think>\n{"steps": []}')).toEqual({ ok: true, value: { steps: [] } });
    expect(extractJson('<think>let me plan {"steps": [')).toEqual({
      ok: false,
      reason: 'no-json',
      detail: 'the answer ends inside its <think> block, before any JSON: the answer was cut off, probably at the output token limit: answer again, shorter (think more briefly)',
    });
  });

  it('says when there is no JSON at all', () => {
    expect(extractJson('')).toEqual({ ok: false, reason: 'no-json', detail: 'the answer is empty' });
    expect(extractJson('use a[i] for indexing')).toEqual({ ok: false, reason: 'no-json', detail: 'the answer contains no JSON object' });
  });

  it('formats zod issues with paths for the model', () => {
    const result = Plan.safeParse({ steps: [{ title: 'a', gain: 1.5 }, { gain: 'x' }] });
    expect(result.success).toBe(false);
    expect(formatZodIssues(result.error!.issues)).toEqual([
      'field `steps[0].gain`: expected int, received number',
      'field `steps[1].title`: expected string, received undefined',
      'field `steps[1].gain`: expected number, received string',
    ]);
    expect(formatZodIssues(z.object({}).safeParse(3).error!.issues)).toEqual(['the answer: expected object, received number']);
  });
});
