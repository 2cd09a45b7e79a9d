/**
 * TEST DOUBLE: answers an evolutionary session on the saxpy kernel by the contents of each request (the scripted server's
 * `responder`), so that answers do not depend on the order in which requests made side by side arrive.
 *
 * - analysis and the test: saxpy's (one test of 2^20 floats);
 * - the judge: a fixed diagnosis and instruction (", N of them" added when asked for its N-th choice);
 * - a rewrite (mutate or crossover): the parents' marker lines (`// FAKE_SPEED <label>`, taken from the request's
 *   code blocks) plus one new one, so a child is 10 % faster than its parents per marker (saxpyEvolutionTime); the new
 *   one numbers the idea as a model would pick another: past the children of the parent the results list, and past
 *   the place the request asks for among answers written at once (unless `sameIdea`: then always the first);
 *   a mutation of v1 is always wrong (FAKE_WRONG_RESULT: rejected after the retry), a crossover's first attempt has no
 *   code (asked again, then right);
 * - restrictions: none. Every answer reports fixed token counts (TOKENS), for exact cost accounting.
 */
import { OPERATOR_LINE } from '../../src/engine/strategies/evolutionary/prompts';
import { largestBuffer, type FakeVariant } from './fake-backend';
import type { ScriptTurn } from './scripted-llm-server';

export const TOKENS = { promptTokens: 1000, completionTokens: 200 };

const ANALYSIS: [string, string][] = [
  ['Describe what the CUDA kernel `saxpy`', 'It computes y = a * x + y element-wise over n floats; thread i handles element i.'],
  ['Give its problem size', '{"problemSize": ["n"], "flops": "2*n"}'],
  ['Which of its arguments does it write', '{"outputs": ["y"]}'],
  [
    'Design the inputs of a test',
    JSON.stringify({
      arguments: [
        { name: 'x', value: null, length: 'n', init: 'uniform', min: -1, max: 1, mean: null, std: null, fill: null },
        { name: 'y', value: null, length: 'n', init: 'uniform', min: -1, max: 1, mean: null, std: null, fill: null },
        { name: 'a', value: 2.5, length: null, init: 'none', min: null, max: null, mean: null, std: null, fill: null },
        { name: 'n', value: 1048576, length: null, init: 'none', min: null, max: null, mean: null, std: null, fill: null },
      ],
    }),
  ],
];

export const JUDGE_INSTRUCTION = 'process two elements per thread so that each load instruction moves more bytes';

const SAXPY_BODY = `__global__ void saxpy(const float *x, float *y, float a, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}`;

function text(message: any): string {
  return typeof message?.content === 'string' ? message.content : JSON.stringify(message?.content ?? '');
}

/** Marker lines of the code blocks of a text. */
function markers(request: string): string[] {
  const blocks = [...request.matchAll(/```cuda\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return [...new Set(blocks.flatMap((b) => b.split('\n').filter((l) => l.startsWith('// FAKE_SPEED'))))];
}

function rewrite(lines: string[], json: object): string {
  return `Here is the kernel.\n\n\`\`\`cuda\n${[...lines, SAXPY_BODY].join('\n')}\n\`\`\`\n\n\`\`\`json\n${JSON.stringify(json)}\n\`\`\`\n`;
}

const turn = (content: string): ScriptTurn => ({ respond: { content }, usage: TOKENS });

/** The how-manieth idea a rewrite of `parents` applies: one past their children in the results, then the rank asked for. */
function ideaNumber(request: string, operator: string, parents: readonly string[]): number {
  const made = request.split('\n').filter((l) => l.startsWith('- v') && l.includes(`, ${operator} of ${parents.join(' and ')}:`)).length;
  return made + rankAsked(request);
}

const rankAsked = (request: string) => Number(/ you rank number (\d+) among/.exec(request)?.[1] ?? 1);

export function evolutionResponder(options: { delayMs?: (body: any) => number; sameIdea?: boolean } = {}) {
  return (body: any): ScriptTurn | undefined => {
    const messages: any[] = body?.messages ?? [];
    const users = messages.filter((m) => m.role === 'user').map(text);
    const first = users[0] ?? '';
    const last = users.at(-1) ?? '';
    const attempt = messages.filter((m) => m.role === 'assistant').length + 1;
    const delayed = (t: ScriptTurn): ScriptTurn => ({ ...t, respond: { ...t.respond, delayMs: options.delayMs?.(body) ?? 0 } });
    for (const [key, answer] of ANALYSIS) if (first.includes(key)) return delayed(turn(answer));
    if (last.includes('List the restrictions')) return delayed(turn('{"restrictions": []}'));
    if (first.startsWith(OPERATOR_LINE.judge)) {
      const rank = rankAsked(first);
      const instruction = rank > 1 ? `${JUDGE_INSTRUCTION}, ${rank} of them` : JUDGE_INSTRUCTION;
      return delayed(turn(JSON.stringify({ diagnosis: 'DRAM throughput 92% of peak: memory-bound', instruction })));
    }
    const parents = [...first.matchAll(/^The (?:current kernel|first parent|second parent): variant (v\d+)/gm)].map((m) => m[1]!);
    if (parents.length === 0) return undefined;
    const isMutate = first.startsWith(OPERATOR_LINE.mutate);
    // A judge-led mutation's results line says "judge of", its own-idea one "mutate of".
    const operator = !isMutate ? 'crossover' : first.includes('applying this change: ') ? 'judge' : 'mutate';
    const judged = operator === 'judge' ? / (\d+) of them$/m.exec(first)?.[1] : undefined;
    const idea = options.sameIdea ? '' : ` #${ideaNumber(first, operator, parents)}${judged ? `.${judged}` : ''}`;
    const label = `${operator === 'crossover' ? 'crossover' : 'mutate'}${operator === 'judge' ? ' (judged)' : ''} ${parents.join('+')}${idea}`;
    if (first.startsWith(OPERATOR_LINE.crossover) && attempt === 1) return delayed(turn('I would combine the two approaches; the details depend on the data.'));
    const lines = [...markers(first), `// FAKE_SPEED ${label}`];
    if (isMutate && parents[0] === 'v1') lines.push('// FAKE_WRONG_RESULT');
    return delayed(turn(rewrite(lines, { idea: `idea for ${label}`, tunableParameters: { block_size_x: [128, 256] } })));
  };
}

/** 1 ns per element, 10 % less per marker line. */
export function saxpyEvolutionTime(v: FakeVariant): number {
  const speedups = v.source.split('\n').filter((l) => l.startsWith('// FAKE_SPEED')).length;
  return largestBuffer(v.test) * 1e-6 * 0.9 ** speedups;
}
