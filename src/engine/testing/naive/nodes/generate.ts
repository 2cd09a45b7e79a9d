// Asks the model for a test's input spec, turns the answer into our declarative spec (dtypes and outputs come from the
// signature and the analysis, not from the model), validates it, and measures the original kernel on it. Every problem
// goes back to the model: spec problems line by line, a test too short or too long with its measured time.
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { LangGraphRunnableConfig } from '@langchain/langgraph';
import { z } from 'zod';
import { dtypeOfCType, InvalidTestSpecError, type BufferSpec, type ScalarSpec, type TestSpecInput } from '../../../../tuner/spec/input-spec';
import type { KernelSignature } from '../../../../tuner/source/kernel-signature';
import { engineContext } from '../../../context';
import { conversation, withAnswer, withRetries } from '../../../candidate/feedback';
import { askStructured } from '../../../llm/llm-call';
import { SYSTEM_PROMPT } from '../../../prompts';
import { originalKernel } from '../../../candidate/run-tests';
import type { KernelAnalysis, TuningStateUpdate } from '../../../state';
import { maxTestMs, MIN_TEST_MS, type BaseTestingStrategy } from '../../base';
import { testSpecPrompt } from '../prompts';
import type { NaiveTesterStateValue } from '../state';
import { kernelView } from '../../../candidate/kernel-view';

const numberOrExpression = z.union([z.number(), z.string()]);
const nullableNumber = z.number().nullable();

const TestSpecAnswer = z.object({
  arguments: z.array(
    z.object({
      name: z.string(),
      value: numberOrExpression.nullable().describe('scalars: a number or an expression over other scalars; null for pointers'),
      length: numberOrExpression.nullable().describe('pointers: number of elements, a number or an expression over scalars; null for scalars'),
      init: z.enum(['uniform', 'normal', 'integers', 'fill', 'none']).describe('how a pointer argument starts; "none" for scalars'),
      min: nullableNumber,
      max: nullableNumber,
      mean: nullableNumber,
      std: nullableNumber,
      fill: nullableNumber,
    }),
  ),
});
type TestSpecAnswer = z.infer<typeof TestSpecAnswer>;

/** The model's answer as a test spec; argument names and value/length mix-ups are problems for the model to fix. */
function specFromAnswer(answer: TestSpecAnswer, kernel: KernelSignature, analysis: KernelAnalysis): TestSpecInput {
  const problems: string[] = [];
  const templateTypes = new Set(kernel.templateParameters.filter((t) => t.kind === 'type').map((t) => t.name));
  const specs: Record<string, ScalarSpec | BufferSpec> = {};
  for (const a of answer.arguments) {
    if (!kernel.parameters.some((p) => p.name === a.name)) problems.push(`${a.name}: ${kernel.name} has no parameter of that name`);
  }
  for (const p of kernel.parameters) {
    const a = answer.arguments.find((x) => x.name === p.name);
    if (!a) {
      problems.push(`${p.name}: missing (every argument needs an entry)`);
      continue;
    }
    const ctype = dtypeOfCType(p, templateTypes);
    // A template type parameter takes any dtype; float32 is what a generic numeric kernel is most often used with. A
    // typedef the preprocessor leaves undecided here takes its first alternative (the branch the file lists first).
    const dtype = typeof ctype === 'string' ? undefined : (ctype.dtype ?? ctype.dtypes?.[0] ?? 'float32');
    if (dtype === undefined) {
      problems.push(`${p.name}: ${ctype as string}`);
      continue;
    }
    if (!p.isPointer) {
      if (a.value === null) problems.push(`${p.name}: is a scalar (${p.type}): give its "value"`);
      else specs[p.name] = { dtype, value: a.value };
      continue;
    }
    if (a.length === null) {
      problems.push(`${p.name}: is a pointer (${p.type}): give its "length"`);
      continue;
    }
    const output = analysis.outputs.includes(p.name);
    const buffer: BufferSpec = { dtype, length: a.length, output };
    if (a.init === 'uniform') buffer.random = { kind: 'uniform', min: a.min ?? -1, max: a.max ?? 1 };
    else if (a.init === 'normal') buffer.random = { kind: 'normal', mean: a.mean ?? 0, std: a.std ?? 1 };
    else if (a.init === 'integers') buffer.random = { kind: 'integers', min: Math.round(a.min ?? 0), max: Math.round(a.max ?? 100) };
    else if (a.init === 'fill') buffer.fill = a.fill ?? 0;
    specs[p.name] = buffer;
  }
  if (problems.length > 0) throw new InvalidTestSpecError(`the test spec does not fit kernel ${kernel.name}: ${problems.join('; ')}`, problems);
  return { arguments: specs, problemSize: analysis.problemSize, seed: 1 };
}

export function generateNode(strategy: BaseTestingStrategy, llm: BaseChatModel) {
  return async (state: NaiveTesterStateValue, config: LangGraphRunnableConfig): Promise<TuningStateUpdate> => {
    const analysis = state.analysis;
    if (!analysis) throw new Error('the test generator needs the kernel analysis');
    const kernel = (await originalKernel(state)).signature;
    const bounds = { minMs: MIN_TEST_MS, maxMs: maxTestMs(engineContext(config).settings.timePerTestS) };
    const id = `generated-${state.tests.filter((t) => t.origin === 'generated').length + 1}`;
    const test = await withRetries(strategy.retryPolicy, config, 'test spec', async ({ feedback }) => {
      const prompt = testSpecPrompt(await kernelView(state, state.originalCode), kernel, analysis, bounds);
      const answer = await askStructured(llm, conversation(SYSTEM_PROMPT, prompt, feedback), TestSpecAnswer, config, 'test spec');
      try {
        return await strategy.testFromSpec(specFromAnswer(answer, kernel, analysis), state, config, id);
      } catch (error) {
        throw withAnswer(error, JSON.stringify(answer));
      }
    });
    return { tests: [...state.tests, test] };
  };
}
