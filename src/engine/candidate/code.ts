/**
 * Turning a model's answer into a candidate kernel: the code (from a fenced block, or from prose around bare code),
 * without `#define`s of tunable parameters (the tuner injects those), with the interface the host code depends on,
 * and the tunable parameters it names, merged into the current ones (with the restrictions that still apply to them).
 */
import { compileRestriction } from '../../tuner/space/restrictions';
import { parseKernels } from '../../tuner/source/kernel-parser';
import { findKernel, sameSignature, type KernelSignature } from '../../tuner/source/kernel-signature';
import type { ParamValue } from '../../tuner/types';
import { InvalidTuneParamsError, NoCodeError, SignatureChangedError, TruncatedAnswerError } from '../errors';
import { CUT_OFF_ADVICE, extractJson } from '../llm/json';
import { answerOutsideThinking } from '../llm/thinking';

export type TuneParamLists = Record<string, ParamValue[]>;

const BLOCK_SIZE_NAMES = ['block_size_x', 'block_size_y', 'block_size_z'] as const;

const FENCE = /```[ \t]*([\w+#.-]*)[^\n]*\n([\s\S]*?)```/g;
/** A line that opens or closes a fenced block, and the language it names. */
const FENCE_LINE = /^[ \t]*```[ \t]*([\w+#.-]*)/;
const CODE_LANGUAGES = new Set(['', 'cuda', 'cu', 'cuh', 'cpp', 'c++', 'cxx', 'cc', 'c', 'h', 'hpp']);
/** A line that starts CUDA source rather than prose. */
const CODE_START = /^\s*(#\s*\w+|template\s*<|extern\b|__global__|__device__|__host__|static\b|typedef\b|struct\b|namespace\b|using\b|const\b|constexpr\b|\/\/|\/\*)/;

interface Fence {
  language: string;
  body: string;
}

/** The fenced blocks of a text, in order. */
function fencesOf(text: string): Fence[] {
  return [...text.matchAll(FENCE)].map((m) => ({ language: (m[1] ?? '').toLowerCase(), body: m[2] ?? '' }));
}

/** Whether a block holds a JSON object (an unlabelled ```json block) rather than code. */
const holdsObject = (fence: Fence) => fence.body.trimStart().startsWith('{');

/** The language of the block the text ends inside of (an opening fence never closed), or undefined. */
function unclosedFence(text: string): string | undefined {
  const fences = text.split('\n').flatMap((line) => {
    const m = FENCE_LINE.exec(line);
    return m ? [(m[1] ?? '').toLowerCase()] : [];
  });
  return fences.length % 2 === 1 ? fences.at(-1) : undefined;
}

const count = (text: string, ch: string) => text.split(ch).length - 1;

/**
 * The kernel source in an answer, its `<think>` blocks aside: among fenced code blocks the last that defines the kernel
 * (an answer that quotes the original or a draft first ends with its final version; a host example after it defines no
 * kernel), else the longest that defines any kernel, else the longest code block; without fences, the code between
 * the prose around it. `#define`s of tunable parameters are removed. Throws NoCodeError when there is no code,
 * TruncatedAnswerError when the answer was cut off before its code ended.
 */
export function extractKernelCode(answer: string, options: { kernelName?: string; tunableNames?: Iterable<string> } = {}): string {
  const visible = answerOutsideThinking(answer);
  if (visible.cutOffWhileThinking) throw new TruncatedAnswerError('the answer ends inside its <think> block, before any code');
  const text = visible.text;
  if (text.trim() === '') throw new NoCodeError('the answer is empty', { empty: true });
  const open = unclosedFence(text);
  if (open !== undefined && CODE_LANGUAGES.has(open)) throw new TruncatedAnswerError(`the answer ends inside its \`\`\`${open} block, which is never closed`);
  const fences = fencesOf(text).filter((f) => CODE_LANGUAGES.has(f.language) && !holdsObject(f)).map((f) => f.body);
  const defining = (name: string) => new RegExp(`__global__[\\s\\S]*?\\b${name}\\s*[(<]`);
  const longest = (blocks: string[]) => blocks.reduce<string | undefined>((a, b) => (a === undefined || b.length > a.length ? b : a), undefined);
  let code: string | undefined;
  if (fences.length > 0) {
    const kernels = fences.filter((f) => f.includes('__global__'));
    code = (options.kernelName ? kernels.findLast((f) => defining(options.kernelName!).test(f)) : undefined) ?? longest(kernels) ?? longest(fences);
  } else if (text.includes('__global__')) {
    const lines = text.split('\n');
    const first = lines.findIndex((l) => CODE_START.test(l));
    const rest = first >= 0 ? lines.slice(first).join('\n') : '';
    if (count(rest, '{') > count(rest, '}')) throw new TruncatedAnswerError('the code ends before the braces it opened are closed');
    const last = lines.findLastIndex((l) => l.includes('}'));
    if (first >= 0 && last >= first) code = lines.slice(first, last + 1).join('\n');
  }
  const cleaned = code === undefined ? '' : removeParameterDefines(code, options.tunableNames ?? []).trim();
  if (cleaned === '') throw new NoCodeError('the answer contains no kernel code', { empty: false });
  return `${cleaned}\n`;
}

/**
 * Drops `#define NAME ...` (with continuation lines) and `#undef NAME` of the given names, then `#ifndef NAME` guards
 * left empty by that: the tuner injects every tunable parameter as a define, and a second definition would either
 * clash or silently pin the value.
 */
export function removeParameterDefines(code: string, names: Iterable<string>): string {
  const set = new Set(names);
  if (set.size === 0) return code;
  const out: string[] = [];
  const lines = code.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const m = /^\s*#\s*(define|undef)\s+([A-Za-z_]\w*)\b/.exec(lines[i]!);
    if (m && set.has(m[2]!)) {
      while (lines[i]!.trimEnd().endsWith('\\') && i + 1 < lines.length) i++;
      continue;
    }
    out.push(lines[i]!);
  }
  let text = out.join('\n');
  const guard = /^[ \t]*#[ \t]*(?:ifndef[ \t]+([A-Za-z_]\w*)|if[ \t]+!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?)[ \t]*\r?\n(?:[ \t]*\r?\n)*[ \t]*#[ \t]*endif\b[^\n]*(?:\n|$)/gm;
  for (let previous = ''; previous !== text; ) {
    previous = text;
    text = text.replace(guard, (whole, a?: string, b?: string) => (set.has(a ?? b ?? '') ? '' : whole));
  }
  return text;
}

/** The kernel in `code` with the same interface as `original`; throws SignatureChangedError (or the parser's ParseError). */
export async function checkInterface(code: string, original: KernelSignature, fileName: string): Promise<KernelSignature> {
  const kernels = await parseKernels(code, fileName);
  const expected = original.signatureText.replace(/\s+/g, ' ');
  let found: KernelSignature | null;
  try {
    found = findKernel(kernels, original.qualifiedName) ?? findKernel(kernels, original.name);
  } catch (e) {
    // Several kernels of that name (overloads, #if branches): the host code could not tell which one it calls.
    throw new SignatureChangedError((e as Error).message, [`${(e as Error).message}: define the kernel once`], expected);
  }
  if (!found) {
    const names = kernels.map((k) => k.qualifiedName).join(', ') || 'none';
    throw new SignatureChangedError(`the answer defines no kernel named ${original.qualifiedName} (kernels found: ${names})`, [`kernel ${original.qualifiedName} is missing; the code defines: ${names}`], expected);
  }
  const same = sameSignature(original, found, { ignoreQualifiers: true });
  if (!same.same) throw new SignatureChangedError(`the kernel's interface changed: ${same.differences.join('; ')}`, same.differences, expected);
  return found;
}

/**
 * The JSON object an answer carries next to its code: its last ```json block, or unlabelled block that holds an object
 * (`<think>` blocks aside); undefined when it has none. InvalidTuneParamsError when that block is no usable JSON: the
 * parameters it names would otherwise be lost without a word.
 */
export function extractAnswerJson(answer: string): unknown {
  const text = answerOutsideThinking(answer).text;
  const unusable = (detail: string): never => {
    const problem = `the \`\`\`json block is not usable: ${detail}`;
    throw new InvalidTuneParamsError(problem, [problem]);
  };
  if (unclosedFence(text) === 'json') unusable(`it is never closed: ${CUT_OFF_ADVICE}`);
  const block = fencesOf(text).findLast((f) => f.language === 'json' || (f.language === '' && holdsObject(f)));
  if (!block) return undefined;
  const found = extractJson(block.body);
  return found.ok ? found.value : unusable(found.detail);
}

const IDENTIFIER = /^[A-Za-z_]\w*$/;
/** Names that mean a thread block size, under any spelling other than Kernel Tuner's. */
const BLOCK_LIKE = /^(block_?(size|dim)(_?[xyz])?|blocksize[xyz]?|threads_?per_?block|block_?threads|num_?threads|tpb|bs_?[xyz]?|block_[xyz])$/i;

/**
 * The tunable parameters of a candidate: the current ones the new code still uses (block sizes always stay: the launch
 * uses them), with the proposed ones merged in (values of a parameter already tunable are added to its list).
 * Throws InvalidTuneParamsError listing every problem with the proposal.
 */
export function mergeTuneParams(current: TuneParamLists, proposed: Record<string, unknown>, code: string): TuneParamLists {
  const problems: string[] = [];
  const uses = (name: string) => new RegExp(`\\b${name}\\b`).test(code);
  const merged: TuneParamLists = {};
  for (const [name, values] of Object.entries(current)) {
    if ((BLOCK_SIZE_NAMES as readonly string[]).includes(name) || uses(name)) merged[name] = [...values];
  }
  for (const [name, raw] of Object.entries(proposed)) {
    const isBlockSize = (BLOCK_SIZE_NAMES as readonly string[]).includes(name);
    if (!IDENTIFIER.test(name)) {
      problems.push(`'${name}' is not a C identifier; tunable parameters are injected as #define NAME VALUE`);
      continue;
    }
    if (!isBlockSize && BLOCK_LIKE.test(name)) {
      problems.push(`'${name}' looks like a thread block size: block sizes must be named block_size_x, block_size_y or block_size_z (the launch takes the block from them)`);
      continue;
    }
    const values = Array.isArray(raw) ? raw : [raw];
    const bad = values.filter((v) => !(typeof v === 'number' && Number.isFinite(v)) && typeof v !== 'string' && typeof v !== 'boolean');
    if (values.length === 0 || bad.length > 0) {
      problems.push(`'${name}' needs a non-empty list of numbers (or strings/booleans), got ${JSON.stringify(raw)}`);
      continue;
    }
    if (isBlockSize && values.some((v) => typeof v !== 'number' || !Number.isInteger(v) || v < 1)) {
      problems.push(`'${name}' is a block size: its values must be positive integers, got ${JSON.stringify(values)}`);
      continue;
    }
    if (!isBlockSize && !uses(name)) {
      problems.push(`'${name}' is not used in the kernel code: use it there (as a preprocessor name) or leave it out`);
      continue;
    }
    const list = merged[name] ?? [];
    for (const v of values as ParamValue[]) if (!list.includes(v)) list.push(v);
    merged[name] = list;
  }
  if (problems.length > 0) throw new InvalidTuneParamsError(`invalid tunable parameters: ${problems.join('; ')}`, problems);
  return merged;
}

/** The restrictions that still hold only names of `tuneParams` (a candidate that drops a parameter drops those on it). */
export function restrictionsStillValid(restrictions: readonly string[], tuneParams: TuneParamLists): string[] {
  const names = Object.keys(tuneParams);
  return restrictions.filter((r) => {
    try {
      compileRestriction(r, names);
      return true;
    } catch {
      return false;
    }
  });
}

/** Size of the search space before restrictions. */
export function countConfigurations(tuneParams: TuneParamLists): number {
  return Object.values(tuneParams).reduce((n, values) => n * Math.max(values.length, 1), 1);
}
