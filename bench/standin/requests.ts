/**
 * What a chat request to the model stand-in asks: its kind, read from the opening of its first user message (the
 * request as the engine's prompt builders write it), and the conversation around it: the model's earlier answers and
 * the corrections after them when it is a retry. A request of no known kind is an error that says what it began with.
 */
import { OPERATOR_LINE } from '../../src/engine/strategies/evolutionary/prompts';
import { messageText } from '../../test/support/chat-http';

const REQUEST_KINDS = [
  'describe',
  'problem-size',
  'outputs',
  'test',
  'plan',
  'validate',
  'breakdown',
  'replan',
  'step',
  'restrictions',
  'mutate',
  'crossover',
  'judge',
  'jsonify',
] as const;
export type RequestKind = (typeof REQUEST_KINDS)[number];

/** How each kind's request begins (problem size and outputs share their opening: the question tells them apart). */
const OPENINGS: readonly { kind: RequestKind; starts: string; asks?: string }[] = [
  { kind: 'describe', starts: 'Describe what the CUDA kernel `' },
  { kind: 'problem-size', starts: 'The kernel `', asks: 'Give its problem size' },
  { kind: 'outputs', starts: 'The kernel `', asks: 'Which of its arguments does it write' },
  { kind: 'test', starts: 'Design the inputs of a test for the CUDA kernel `' },
  { kind: 'plan', starts: 'Plan how to make this CUDA kernel faster' },
  { kind: 'validate', starts: 'These optimization steps are proposed for the CUDA kernel below.' },
  { kind: 'breakdown', starts: 'An optimization step is planned for the CUDA kernel below:' },
  { kind: 'replan', starts: 'The CUDA kernel below is the best version found so far:' },
  { kind: 'step', starts: 'Apply this optimization step to the CUDA kernel: ' },
  { kind: 'restrictions', starts: 'The tunable CUDA kernel below is tuned over every combination of these parameter values:' },
  { kind: 'mutate', starts: OPERATOR_LINE.mutate },
  { kind: 'crossover', starts: OPERATOR_LINE.crossover },
  { kind: 'judge', starts: OPERATOR_LINE.judge },
  { kind: 'jsonify', starts: 'Convert the answer below into one JSON object that matches the JSON schema.' },
];

export interface ChatMessage {
  role: string;
  text: string;
}

export interface StandinRequest {
  kind: RequestKind;
  /** The first user message: the request as the strategy wrote it. */
  prompt: string;
  /** The model's earlier answers in this conversation (a retry), oldest first. */
  previousAnswers: string[];
  /** What the model was told after each of them. */
  corrections: string[];
  messages: ChatMessage[];
}

export class UnclassifiedRequestError extends Error {
  override name = 'UnclassifiedRequestError';
}

export function chatMessages(body: unknown): ChatMessage[] {
  const messages = (body as { messages?: unknown })?.messages;
  if (!Array.isArray(messages)) throw new UnclassifiedRequestError('the request has no messages');
  return messages.map((m: { role?: unknown }) => ({ role: String(m?.role), text: messageText(m) }));
}

export function classifyRequest(messages: ChatMessage[]): StandinRequest {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  if (firstUser < 0) throw new UnclassifiedRequestError(`the request has no user message (roles: ${messages.map((m) => m.role).join(', ') || 'none'})`);
  const prompt = messages[firstUser]!.text;
  const opening = OPENINGS.find((o) => prompt.startsWith(o.starts) && (o.asks === undefined || prompt.includes(o.asks)));
  if (!opening) {
    const known = OPENINGS.map((o) => `${o.kind}: "${o.starts}${o.asks ? ` ... ${o.asks}` : ''}"`).join('; ');
    throw new UnclassifiedRequestError(`the model stand-in cannot tell what this request asks: it begins "${prompt.slice(0, 120)}"; it answers requests that begin as ${known}`);
  }
  const later = messages.slice(firstUser + 1);
  return {
    kind: opening.kind,
    prompt,
    previousAnswers: later.filter((m) => m.role === 'assistant').map((m) => m.text),
    corrections: later.filter((m) => m.role === 'user').map((m) => m.text),
    messages,
  };
}

/** The ```cuda blocks of a text, in order. */
function cudaBlocks(text: string): string[] {
  return [...text.matchAll(/```cuda\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
}

/** The first ```cuda block after the line that starts with `label` (the whole text when no label is given). */
export function kernelAfter(text: string, label?: string): string {
  const from = label === undefined ? 0 : text.indexOf(`\n${label}`);
  const block = from < 0 ? undefined : cudaBlocks(text.slice(from))[0];
  if (block === undefined) throw new UnclassifiedRequestError(`the request shows no kernel${label ? ` after "${label}"` : ''} in a \`\`\`cuda block`);
  return block;
}

/** The code of an answer: its first fenced code block (```cuda or ```cpp), or null. */
export function answerCode(answer: string): string | null {
  return /```(?:cuda|cpp)\n([\s\S]*?)\n```/.exec(answer)?.[1] ?? null;
}

/** The text after `marker` up to the end of its line, or undefined. */
export function lineAfter(text: string, marker: string): string | undefined {
  const at = text.indexOf(marker);
  return at < 0 ? undefined : text.slice(at + marker.length).split('\n', 1)[0];
}
