// Stripping thinking: on finished text, incrementally on a stream (never emitting text it must take back), and through
// the ThinkingStrippedChatModel wrapper over the real clients, with usage metadata and tool binding kept.
import { HumanMessage, type AIMessageChunk, type BaseMessage } from '@langchain/core/messages';
import type { RunnableConfig } from '@langchain/core/runnables';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createChatModel, type ProviderConfig } from '../../src/engine/llm/providers';
import { compileThinkingPattern, stripThinking, ThinkingStreamFilter, withThinkingStripped } from '../../src/engine/llm/thinking';
import { loadScript, startScriptedLlmServer, type ScriptedLlmServer } from '../support/scripted-llm-server';

describe('stripThinking', () => {
  it('removes every block and the whitespace after it', () => {
    expect(stripThinking('<think>a\nb</think>\n\nAnswer')).toBe('Answer');
    expect(stripThinking('<think>x</think>A <think>y</think>B')).toBe('A B');
    expect(stripThinking('No thinking here.')).toBe('No thinking here.');
  });

  it('an unclosed block at the start (cut off while thinking) leaves no answer', () => {
    expect(stripThinking('<think>The kernel reads')).toBe('');
    expect(stripThinking('  \n<think>still thinking')).toBe('');
    expect(stripThinking('<think>done</think>\n<think>and again')).toBe('');
  });

  it('an opening tag inside the answer is just text', () => {
    expect(stripThinking('Write <think> in your prompt.')).toBe('Write <think> in your prompt.');
  });

  it("accepts the seed's pattern string (Python syntax, dot spanning lines) and other tags", () => {
    const seed = compileThinkingPattern('<think>.*?</think>\\s*');
    expect(stripThinking('<think>line 1\nline 2</think>\nAnswer', seed)).toBe('Answer');
    const reasoning = compileThinkingPattern('<reasoning>.*?</reasoning>\\s*');
    expect(stripThinking('<reasoning>hm</reasoning> ok', reasoning)).toBe('ok');
    expect(stripThinking('<reasoning>cut off', reasoning)).toBe('');
    // A regex without the g flag still removes every block.
    expect(stripThinking('<t>a</t>x<t>b</t>y', /<t>.*?<\/t>/)).toBe('xy');
    expect(() => compileThinkingPattern('<think>(')).toThrow(/thinking pattern "<think>\(" is not a valid regular expression/);
  });
});

describe('ThinkingStreamFilter', () => {
  const feed = (pieces: string[], pattern?: RegExp) => {
    const filter = new ThinkingStreamFilter(pattern);
    const emitted = pieces.map((p) => filter.push(p));
    emitted.push(filter.finish());
    return emitted;
  };

  it('holds back the thinking and a half-received opening tag, emits the answer as it comes', () => {
    const emitted = feed(['<thi', 'nk>reasoning', ' more</th', 'ink>', '\n\n', 'Use shared', ' memory <', 'b>tiles</b>.']);
    expect(emitted).toEqual(['', '', '', '', '', 'Use shared', ' memory ', '<b>tiles</b>.', '']);
  });

  it('emits text before a block at once and nothing of the block', () => {
    expect(feed(['Answer: ', '<think>hm', '</think>', 'done'])).toEqual(['Answer: ', '', '', 'done', '']);
  });

  it('an unclosed block at the start: nothing at all', () => {
    expect(feed(['<think>', 'never closed']).join('')).toBe('');
  });

  it('a pattern without literal tags is applied once at the end', () => {
    expect(feed(['(a)', 'x', '(b)y'], /\(\w\)/g)).toEqual(['', '', '', 'xy']);
  });

  it('whatever the split, the emitted text is stripThinking of the whole', () => {
    const texts = [
      '<think>plan {a}</think>\n\n{"steps": []}',
      'Intro <think>x</think> outro <thin',
      '<think>a</think><think>b</think>Answer <think>unclosed',
      'plain < text <t <th <thi',
    ];
    let seed = 7;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (const text of texts) {
      for (let round = 0; round < 50; round++) {
        const pieces: string[] = [];
        for (let i = 0; i < text.length; ) {
          const n = 1 + Math.floor(random() * 5);
          pieces.push(text.slice(i, i + n));
          i += n;
        }
        expect(feed(pieces).join('')).toBe(stripThinking(text));
      }
    }
  });
});

let server: ScriptedLlmServer | undefined;
afterEach(async () => {
  if (server) expect(server.mismatches).toEqual([]);
  await server?.close();
  server = undefined;
});

const config = (provider: 'openai' | 'ollama', s: ScriptedLlmServer): ProviderConfig =>
  provider === 'openai' ? { provider, model: 'scripted-model', baseUrl: `${s.url}/v1` } : { provider, model: 'scripted-model', baseUrl: s.url };

describe.each(['openai', 'ollama'] as const)('ThinkingStrippedChatModel over %s', (provider) => {
  it('invoke: the answer without thinking, usage kept', async () => {
    server = await startScriptedLlmServer(loadScript('thinking-answer'));
    const model = withThinkingStripped(createChatModel(config(provider, server)));
    const answer = await model.invoke([new HumanMessage('Explain the kernel')]);
    expect(answer.content).toBe('Use shared memory <b>tiles</b>.');
    expect(answer.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 8, total_tokens: 28 });
  });

  it('stream: no piece of thinking is ever emitted, usage arrives', async () => {
    server = await startScriptedLlmServer(loadScript('thinking-answer'));
    const model = withThinkingStripped(createChatModel(config(provider, server)));
    const pieces: string[] = [];
    let whole: AIMessageChunk | undefined;
    for await (const chunk of await model.stream([new HumanMessage('Explain the kernel')])) {
      if (typeof chunk.content === 'string' && chunk.content !== '') pieces.push(chunk.content);
      whole = whole ? whole.concat(chunk) : chunk;
    }
    expect(pieces.join('')).toBe('Use shared memory <b>tiles</b>.');
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(piece).not.toMatch(/think|reads A/);
    expect(whole!.usage_metadata).toMatchObject({ input_tokens: 20, output_tokens: 8 });
  });

  it("LangGraph's messages stream shows the stripped tokens only", async () => {
    server = await startScriptedLlmServer(loadScript('thinking-answer'));
    const model = withThinkingStripped(createChatModel(config(provider, server)));
    const graph = new StateGraph(MessagesAnnotation)
      .addNode('explain', async (state: { messages: BaseMessage[] }, runConfig: RunnableConfig) => ({
        messages: [await model.invoke(state.messages, runConfig)],
      }))
      .addEdge(START, 'explain')
      .addEdge('explain', END)
      .compile();
    const tokens: string[] = [];
    for await (const [chunk] of await graph.stream({ messages: [new HumanMessage('Explain the kernel')] }, { streamMode: 'messages' })) {
      if (typeof chunk.content === 'string') tokens.push(chunk.content);
    }
    expect(tokens.join('')).toBe('Use shared memory <b>tiles</b>.');
    expect(tokens.filter((t) => t !== '').length).toBeGreaterThan(1);
  });

  it('bindTools forwards the tools to the wrapped model', async () => {
    server = await startScriptedLlmServer([
      { respond: { toolCall: { name: 'compile', arguments: { flags: ['-O3'] } }, content: '<think>which flags?</think>' } },
    ]);
    const model = withThinkingStripped(createChatModel(config(provider, server)));
    const tool = { type: 'function', function: { name: 'compile', description: 'compile the kernel', parameters: { type: 'object', properties: { flags: { type: 'array', items: { type: 'string' } } } } } };
    const answer = await model.bindTools([tool]).invoke([new HumanMessage('Compile it')]);
    expect(answer.tool_calls).toMatchObject([{ name: 'compile', args: { flags: ['-O3'] } }]);
    expect(server.requests[0]!.body.tools).toMatchObject([{ type: 'function', function: { name: 'compile' } }]);
  });

  it("withStructuredOutput: the wrapped model's request, parsed after stripping", async () => {
    server = await startScriptedLlmServer(loadScript('structured-plan-thinking'));
    const model = withThinkingStripped(createChatModel(config(provider, server)));
    const Plan = z.object({ steps: z.array(z.object({ title: z.string(), gain: z.number() })) });
    // The JSON-mode request is the same for both providers' clients here: json_object / format "json".
    const structured = model.withStructuredOutput(Plan, { method: 'jsonMode', includeRaw: true });
    const { raw, parsed } = await structured.invoke([new HumanMessage('Plan the optimization')]);
    expect(parsed).toEqual({ steps: [{ title: 'Tile the loop', gain: 2 }] });
    expect(raw.content).toBe('{"steps": [{"title": "Tile the loop", "gain": 2}]}');
    const body = server.requests[0]!.body;
    if (provider === 'openai') expect(body.response_format).toEqual({ type: 'json_object' });
    else expect(body.format).toBe('json');
  });
});
