/**
 * TEST DATA: the corpus of what chat models return (test/fixtures/llm-corpus/, described in its README.md): one JSON
 * file per case, each a raw answer to one kind of request the tuner makes, and what must come of it: the candidate or
 * the parsed value, or the correction the model is told before it is asked again. The answers are modelled on what
 * real models write (fences of every label, a host example, <think> blocks, Python dicts, answers cut off at the
 * token limit, refusals); no model produced them here.
 *
 * test/unit/llm-corpus.test.ts runs every case through the engine's own parsing and feedback, and a whole session over
 * the scripted server on answers drawn from it. A stand-in model for benchmarks can draw on it too: this loader lives
 * in test/support because benchmarks bundle it from there like the other test support (bench/*.ts import it), and
 * the data lives with the other fixtures; a bundle under dist/bench/ passes the directory:
 * `loadLlmCorpus(path.join(root, 'test', 'fixtures', 'llm-corpus'))`.
 *
 *   const { kernel, cases } = loadLlmCorpus();
 *   const cutOff = cases.find((c) => c.id === 'rewrite-truncated')!;
 *   answerOf(cutOff, myRewrite);          // the raw answer, with `myRewrite` where the case has the kernel
 *   cutOff.expect;                        // { outcome: 'retry', error: 'TruncatedAnswerError', correction: [...] }
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

export const LLM_CORPUS_DIR = join(__dirname, '..', 'fixtures', 'llm-corpus');

/** Where a case's answer (or expected code) has the rewritten kernel: the corpus's own, or the one answerOf is given. */
export const REWRITE_SLOT = '{{rewrite}}';

/** The requests the corpus answers; README.md says what each one asks and what its value is. */
export const CORPUS_KINDS = ['rewrite', 'plan', 'validate', 'breakdown', 'replan', 'restrictions', 'outputs'] as const;
export type CorpusRequestKind = (typeof CORPUS_KINDS)[number];

/** Text as one string, or as lines (joined with "\n") where that reads better in the file. */
const Text = z.union([z.string(), z.array(z.string())]).transform((t) => (typeof t === 'string' ? t : t.join('\n')));

const Expectation = z.discriminatedUnion('outcome', [
  /** A rewrite the tuner takes: its tunable parameters, and the file it makes (default: the rewrite, as the whole file). */
  z.object({ outcome: z.literal('candidate'), tuneParams: z.record(z.string(), z.array(z.union([z.number(), z.string(), z.boolean()]))), code: Text.optional() }).strict(),
  /** A structured answer the tuner takes, as its request's value (README.md). */
  z.object({ outcome: z.literal('value'), value: z.unknown() }).strict(),
  /** An answer the tuner refuses: the error, and fragments of the correction the model must receive, each verbatim. */
  z.object({ outcome: z.literal('retry'), error: z.string().min(1), correction: z.array(z.string().min(1)).min(1) }).strict(),
]);

const CaseFile = z
  .object({
    kind: z.enum(CORPUS_KINDS),
    /** What the model did, in words, and which models are known to do it. */
    what: z.string().min(1),
    answer: Text,
    expect: Expectation,
  })
  .strict();

const KernelFile = z.object({ name: z.string().min(1), original: Text, rewrite: Text }).strict();

export type CorpusExpectation = z.output<typeof Expectation>;

export interface CorpusCase extends z.output<typeof CaseFile> {
  /** The file's name without .json. */
  id: string;
}

/** The kernel every case is about: the original the requests show, and the reference rewrite of REWRITE_SLOT. */
export type CorpusKernel = z.output<typeof KernelFile>;

export interface LlmCorpus {
  kernel: CorpusKernel;
  /** Ordered by id. */
  cases: CorpusCase[];
}

function readJson<S extends z.ZodType>(file: string, schema: S): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`${file}: not a corpus file: ${(error as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`${file}: not a corpus file: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

/** Every case of the corpus in `dir` (kernel.json and one <id>.json per case); a malformed file is an error naming it. */
export function loadLlmCorpus(dir: string = LLM_CORPUS_DIR): LlmCorpus {
  const kernel = readJson(join(dir, 'kernel.json'), KernelFile);
  const cases = readdirSync(dir)
    .filter((f) => f.endsWith('.json') && f !== 'kernel.json')
    .sort()
    .map((f) => ({ id: f.slice(0, -'.json'.length), ...readJson(join(dir, f), CaseFile) }));
  return { kernel, cases };
}

/** The raw answer of a case, with `rewrite` where it has the kernel (the corpus's own is `kernel.rewrite`). */
export function answerOf(c: CorpusCase, rewrite: string): string {
  return c.answer.replaceAll(REWRITE_SLOT, rewrite);
}
