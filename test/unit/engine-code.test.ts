// Turning a model's answer into a candidate: code extraction, removal of parameter #defines, the interface check and
// the merge of tunable parameters.
import { describe, expect, it } from 'vitest';
import { checkInterface, extractAnswerJson, extractKernelCode, mergeTuneParams, removeParameterDefines } from '../../src/engine/candidate/code';
import { InvalidTuneParamsError, NoCodeError, SignatureChangedError, TruncatedAnswerError } from '../../src/engine/errors';
import { parseKernels } from '../../src/tuner/source/kernel-parser';
import { findKernel } from '../../src/tuner/source/kernel-signature';

const KERNEL = `__global__ void scale(float *x, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}`;

describe('extractKernelCode', () => {
  it('takes the fenced block that defines the kernel, not an example before it', () => {
    const answer = `For example a helper:\n\`\`\`cuda\n__device__ float twice(float v) { return 2 * v; }\n\`\`\`\nThe kernel:\n\`\`\`cuda\n${KERNEL}\n\`\`\`\nDone.`;
    expect(extractKernelCode(answer, { kernelName: 'scale' })).toBe(`${KERNEL}\n`);
  });

  it('prefers the block defining the named kernel over a longer one defining another', () => {
    const other = `__global__ void other(float *x) {\n  // a much longer comment to make this block the longest one of the answer\n  x[0] = 1;\n}`;
    expect(extractKernelCode(`\`\`\`cuda\n${other}\n\`\`\`\n\`\`\`cpp\n${KERNEL}\n\`\`\``, { kernelName: 'scale' })).toBe(`${KERNEL}\n`);
  });

  it('ignores fences of other languages', () => {
    expect(() => extractKernelCode('```json\n{"tunableParameters": {}}\n```\n```python\nprint(1)\n```')).toThrow(new NoCodeError('the answer contains no kernel code', { empty: false }));
  });

  it('finds bare code between prose', () => {
    expect(extractKernelCode(`Sure! Here it is:\n${KERNEL}\nThis uses block_size_x.`)).toBe(`${KERNEL}\n`);
  });

  it('throws NoCodeError when there is no code, saying whether the answer was empty', () => {
    const noCode = (answer: string) => {
      try {
        extractKernelCode(answer);
      } catch (error) {
        return error instanceof NoCodeError ? { message: error.message, empty: error.answer.empty } : error;
      }
      return 'no error';
    };
    expect(noCode('I would tile the loop and unroll it.')).toEqual({ message: 'the answer contains no kernel code', empty: false });
    expect(noCode('```cuda\n\n```')).toEqual({ message: 'the answer contains no kernel code', empty: false });
    expect(noCode(' \n')).toEqual({ message: 'the answer is empty', empty: true });
  });

  it('says when the answer was cut off in its code or its thoughts', () => {
    expect(() => extractKernelCode(`Here:\n\`\`\`cuda\n${KERNEL.slice(0, 60)}`)).toThrow(new TruncatedAnswerError('the answer ends inside its ```cuda block, which is never closed'));
    expect(() => extractKernelCode(`Here:\n${KERNEL.slice(0, 60)}`)).toThrow(new TruncatedAnswerError('the code ends before the braces it opened are closed'));
    expect(() => extractKernelCode('<think>\nFirst a draft:\n```cuda\n__global__ void scale(')).toThrow(new TruncatedAnswerError('the answer ends inside its <think> block, before any code'));
  });

  it('takes the last block defining the kernel, never one in the thoughts', () => {
    const draft = KERNEL.replace('2.0f', '3.0f');
    expect(extractKernelCode(`The original:\n\`\`\`cuda\n${draft}\n\`\`\`\nOptimized:\n\`\`\`cuda\n${KERNEL}\n\`\`\``, { kernelName: 'scale' })).toBe(`${KERNEL}\n`);
    expect(extractKernelCode(`<think>\n\`\`\`cuda\n${KERNEL}\n\`\`\`\n</think>\n\`\`\`cuda\n${draft}\n\`\`\``, { kernelName: 'scale' })).toBe(`${draft}\n`);
  });

  it('removes #defines of tunable parameters, with their guards and continuation lines', () => {
    const code = ['#ifndef block_size_x', '#define block_size_x 256', '#endif', '#define TILE \\', '  4', '#define HELPER 3', '#  define  tile_x 2', '#undef tile_x', KERNEL].join('\n');
    const cleaned = removeParameterDefines(code, ['block_size_x', 'TILE', 'tile_x']);
    expect(cleaned).toBe(['#define HELPER 3', KERNEL].join('\n'));
    expect(extractKernelCode(`\`\`\`cuda\n${code}\n\`\`\``, { tunableNames: ['block_size_x', 'TILE', 'tile_x'] })).toBe(`#define HELPER 3\n${KERNEL}\n`);
  });

  it('keeps a guard that still holds other code', () => {
    const code = '#ifndef block_size_x\n#define block_size_x 256\n#define OTHER 1\n#endif\n';
    expect(removeParameterDefines(code, ['block_size_x'])).toBe('#ifndef block_size_x\n#define OTHER 1\n#endif\n');
  });
});

describe('extractAnswerJson', () => {
  it('reads the last json block, or an unlabelled block holding an object', () => {
    expect(extractAnswerJson('```cuda\nint x;\n```\n```json\n{"a": 1}\n```\n```json\n{"tunableParameters": {"t": [1, 2],}}\n```')).toEqual({ tunableParameters: { t: [1, 2] } });
    expect(extractAnswerJson('```cuda\nint x;\n```\n```\n{"tunableParameters": {"t": [4]}}\n```')).toEqual({ tunableParameters: { t: [4] } });
    expect(extractAnswerJson('no json')).toBeUndefined();
  });

  it('says why a json block is not usable instead of dropping the parameters it names', () => {
    const problem = (answer: string) => {
      try {
        extractAnswerJson(answer);
      } catch (error) {
        return error instanceof InvalidTuneParamsError ? error.problems : error;
      }
      return 'no error';
    };
    expect(problem("```json\n{'tunableParameters': {'t': [1, 2]}}\n```")).toEqual(['the ```json block is not usable: the JSON is malformed: names and strings take double quotes in JSON ("name"), not single quotes']);
    expect(problem('```cuda\nint x;\n```\n```json\n{"tunableParameters": {"t": [1,')).toEqual([
      'the ```json block is not usable: it is never closed: the answer was cut off, probably at the output token limit: answer again, shorter',
    ]);
  });
});

describe('checkInterface', () => {
  it('accepts qualifier changes and rejects a changed name or parameter list, saying what changed', async () => {
    const original = findKernel(await parseKernels(KERNEL), 'scale')!;
    await expect(checkInterface(KERNEL.replace('float *x', 'float *__restrict__ x'), original, 'k.cu')).resolves.toMatchObject({ name: 'scale' });
    const renamed = checkInterface(KERNEL.replace('scale', 'scale2'), original, 'k.cu');
    await expect(renamed).rejects.toBeInstanceOf(SignatureChangedError);
    await expect(renamed).rejects.toThrow('the answer defines no kernel named scale (kernels found: scale2)');
    const retyped = checkInterface(KERNEL.replace('int n', 'long n'), original, 'k.cu');
    await expect(retyped).rejects.toMatchObject({ differences: ["parameter 2 'n': type changed: 'int' -> 'long'"], expected: '__global__ void scale(float *x, int n)' });
    const twice = checkInterface(`${KERNEL}\n${KERNEL.replace('int n', 'long n')}`, original, 'k.cu');
    await expect(twice).rejects.toMatchObject({ name: 'SignatureChangedError', differences: [expect.stringMatching(/^kernel name 'scale' is ambiguous: .*: define the kernel once$/)] });
  });
});

describe('mergeTuneParams', () => {
  const code = 'x[i * tile_x + unroll] = block_size_y;';

  it('adds new parameters, adds values to existing ones, and drops parameters the code no longer uses', () => {
    const merged = mergeTuneParams({ block_size_x: [256], old_param: [1, 2], tile_x: [1] }, { tile_x: [1, 2, 4], unroll: [2], block_size_x: [128, 256] }, code);
    expect(merged).toEqual({ block_size_x: [256, 128], tile_x: [1, 2, 4], unroll: [2] });
  });

  it('lists every problem: block sizes under other names, bad values, unused parameters', () => {
    let error: InvalidTuneParamsError | undefined;
    try {
      mergeTuneParams({}, { BLOCK_SIZE: [128], threads_per_block: [64], block_size_x: [0], tile_x: [], 'bad-name': [1], unused: [1, 2] }, code);
    } catch (e) {
      error = e as InvalidTuneParamsError;
    }
    expect(error).toBeInstanceOf(InvalidTuneParamsError);
    expect(error!.problems).toEqual([
      "'BLOCK_SIZE' looks like a thread block size: block sizes must be named block_size_x, block_size_y or block_size_z (the launch takes the block from them)",
      "'threads_per_block' looks like a thread block size: block sizes must be named block_size_x, block_size_y or block_size_z (the launch takes the block from them)",
      "'block_size_x' is a block size: its values must be positive integers, got [0]",
      "'tile_x' needs a non-empty list of numbers (or strings/booleans), got []",
      "'bad-name' is not a C identifier; tunable parameters are injected as #define NAME VALUE",
      "'unused' is not used in the kernel code: use it there (as a preprocessor name) or leave it out",
    ]);
  });
});
