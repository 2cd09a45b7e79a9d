/**
 * The pool of the model stand-in (TEST DOUBLE data for benchmarks): real rewrites of one kernel in a tree rooted at the
 * original, as bench/standin/pools/NAME/pool.json describes them (one .cu file per variant). Loading checks what the
 * server relies on, and reports every problem at once: the tree's references, a kernel per variant that no other
 * variant shares (so that a kernel in a request names one variant), and children and judge answers for every variant
 * that can become a parent.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { removeParameterDefines } from '../../src/engine/candidate/code';
import { formatZodIssues } from '../../src/engine/llm/json';

const ParamValues = z.array(z.union([z.number(), z.string(), z.boolean()])).min(1);
const Divisor = z.array(z.union([z.string().min(1), z.number().positive()])).min(1);

const JudgeRecord = z
  .object({
    diagnosis: z.string().min(1),
    instruction: z.string().min(1),
    /** The variant's children that implement the instruction (a mutate asked for it draws among them). */
    children: z.array(z.string()).min(1),
  })
  .strict();

export const LABELS = ['original', 'good', 'slower', 'wrong', 'no-compile', 'racy'] as const;

const VariantRecord = z
  .object({
    id: z.string().regex(/^[a-z][a-z0-9_]*$/, 'lower-case letters, digits and _'),
    /** The kernel file, relative to the pool's folder. */
    file: z.string().min(1),
    /** The variants it is a rewrite of: a mutate child of each, a crossover child of any two. */
    parents: z.array(z.string()),
    /** For people and the benchmark's table only: the server never chooses by it. */
    label: z.enum(LABELS),
    idea: z.string().nullable(),
    /** What the answer says before its code. */
    prose: z.string().min(1),
    tunableParameters: z.record(z.string(), ParamValues),
    gridDivisors: z.object({ x: Divisor, y: Divisor, z: Divisor.optional() }).strict(),
    restrictions: z.array(z.string()),
    note: z.string().min(1),
    /** What the model answers when told that this variant failed. */
    fix: z.string().optional(),
    judge: z.array(JudgeRecord).default([]),
  })
  .strict();

const PoolFile = z
  .object({
    comment: z.string().optional(),
    kernel: z.string().min(1),
    analysis: z
      .object({
        description: z.string().min(1),
        problemSize: z.array(z.string()).min(1),
        flops: z.string().optional(),
        bytes: z.string().optional(),
        outputs: z.array(z.string()).min(1),
      })
      .strict(),
    test: z
      .object({
        comment: z.string().optional(),
        /** The scalar argument that sets the problem's size: its value is the server's test size. */
        sizeArgument: z.string().min(1),
        defaultSize: z.number().int().positive(),
        arguments: z.array(z.object({ name: z.string(), value: z.unknown() }).passthrough()).min(1),
      })
      .strict(),
    ideas: z.record(z.string(), z.object({ title: z.string().min(1), details: z.string().min(1) }).strict()),
    variants: z.array(VariantRecord).min(1),
  })
  .strict();

export type Label = (typeof LABELS)[number];
type PoolFile = z.infer<typeof PoolFile>;

export interface Variant extends z.infer<typeof VariantRecord> {
  /** The kernel file's text. */
  code: string;
  /** The kernel as compared with a request's (normalizeKernel). */
  normalized: string;
}

export interface Pool {
  name: string;
  kernel: string;
  analysis: PoolFile['analysis'];
  test: PoolFile['test'];
  ideas: PoolFile['ideas'];
  /** The original first, then the file's order. */
  variants: Variant[];
  byId: ReadonlyMap<string, Variant>;
  /** Names whose `#define`s a shown kernel may carry: every tunable parameter of the pool, and the block sizes. */
  parameterNames: readonly string[];
}

export class PoolError extends Error {
  override name = 'PoolError';
}

/** The pools under `poolsDir`: its folders that hold a pool.json. */
export function poolNames(poolsDir: string): string[] {
  if (!existsSync(poolsDir)) return [];
  return readdirSync(poolsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(poolsDir, d.name, 'pool.json')))
    .map((d) => d.name)
    .sort();
}

export function loadPool(poolsDir: string, name: string): Pool {
  const names = poolNames(poolsDir);
  if (!names.includes(name)) throw new PoolError(`no pool named "${name}" in ${poolsDir}; the pools are: ${names.join(', ') || 'none'}`);
  const dir = path.join(poolsDir, name);
  const parsed = PoolFile.safeParse(JSON.parse(readFileSync(path.join(dir, 'pool.json'), 'utf8')));
  if (!parsed.success) throw new PoolError(`pool ${name}: pool.json is invalid: ${formatZodIssues(parsed.error.issues).join('; ')}`);
  const file = parsed.data;
  const parameterNames = [...new Set(['block_size_x', 'block_size_y', 'block_size_z', ...file.variants.flatMap((v) => Object.keys(v.tunableParameters))])];
  const problems: string[] = [];
  const variants: Variant[] = file.variants.map((record) => {
    const kernelFile = path.resolve(dir, record.file);
    if (!existsSync(kernelFile)) {
      problems.push(`${record.id}: its file ${record.file} does not exist`);
      return { ...record, code: '', normalized: '' };
    }
    const code = readFileSync(kernelFile, 'utf8');
    return { ...record, code, normalized: normalizeKernel(code, parameterNames) };
  });
  const byId = new Map(variants.map((v) => [v.id, v]));
  problems.push(...structuralProblems(variants, byId, file.ideas));
  if (problems.length > 0) throw new PoolError(`pool ${name} is inconsistent:\n${problems.map((p) => `- ${p}`).join('\n')}`);
  const roots = variants.filter((v) => v.parents.length === 0);
  return { name, kernel: file.kernel, analysis: file.analysis, test: file.test, ideas: file.ideas, variants: [...roots, ...variants.filter((v) => v.parents.length > 0)], byId, parameterNames };
}

/**
 * Whether a session may keep a variant, and so make it a parent: anything that compiles and can pass the checks (a racy
 * kernel too, on a lucky run). A wrong one or one that does not compile never gets that far.
 */
const canParent = (v: Variant) => v.label !== 'wrong' && v.label !== 'no-compile';

function structuralProblems(variants: readonly Variant[], byId: ReadonlyMap<string, Variant>, ideas: PoolFile['ideas']): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const v of variants) {
    if (seen.has(v.id)) problems.push(`${v.id}: the id is used twice`);
    seen.add(v.id);
  }
  const roots = variants.filter((v) => v.parents.length === 0);
  if (roots.length !== 1 || roots[0]!.label !== 'original') problems.push(`the tree needs one root labelled original; variants without parents: ${roots.map((v) => v.id).join(', ') || 'none'}`);
  const byCode = new Map<string, string>();
  for (const v of variants) {
    for (const p of v.parents) if (!byId.has(p) || p === v.id) problems.push(`${v.id}: parent ${p} is not another variant of the pool`);
    if (v.parents.length > 0 && (v.idea === null || !(v.idea in ideas))) problems.push(`${v.id}: idea ${v.idea} is not one of the pool's ideas`);
    const kids = childrenOf(variants, v.id).map((c) => c.id);
    for (const j of v.judge) {
      const strangers = j.children.filter((c) => !kids.includes(c));
      if (strangers.length > 0) problems.push(`${v.id}: a judge answer names ${strangers.join(', ')}, which are not its children`);
    }
    if (canParent(v) && kids.length === 0) problems.push(`${v.id}: labelled ${v.label}, it can become a parent, but has no children`);
    if (canParent(v) && v.judge.length === 0) problems.push(`${v.id}: labelled ${v.label}, it can be judged, but has no judge answers`);
    if (!canParent(v) && v.fix === undefined) problems.push(`${v.id}: labelled ${v.label}, it fails, but has no fix to answer a retry with`);
    if (v.fix !== undefined) {
      const fixable = new Set([...v.parents, ...v.parents.flatMap((p) => childrenOf(variants, p).map((c) => c.id))]);
      if (v.fix === v.id || !fixable.has(v.fix)) problems.push(`${v.id}: its fix ${v.fix} is neither a parent nor a sibling`);
    }
    const twin = byCode.get(v.normalized);
    if (twin !== undefined && v.normalized !== '') problems.push(`${v.id}: its kernel is ${twin}'s (a request's kernel must name one variant)`);
    byCode.set(v.normalized, v.id);
  }
  return problems;
}

/** The variants recorded as rewrites of `id`. */
export function childrenOf(variants: readonly Variant[], id: string): Variant[] {
  return variants.filter((v) => v.parents.includes(id));
}

/**
 * A kernel as compared with the pool's: without comments, without the `#define`s of parameters (the tuner injects
 * them; a request's code may carry the file's own guards or the chosen values), and without whitespace.
 */
export function normalizeKernel(code: string, parameterNames: readonly string[]): string {
  return withoutParameterDefines(code, parameterNames).replace(/\s+/g, '');
}

/** The code without comments and without the `#define`s of parameters: what a request's kernel is compared by. */
function withoutParameterDefines(code: string, parameterNames: readonly string[]): string {
  return removeParameterDefines(code.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, ''), parameterNames);
}

export class UnknownKernelError extends Error {
  override name = 'UnknownKernelError';
}

/** A kernel's lines as compared with a variant's: without comments, parameter defines and blank lines, spaces squeezed. */
function linesOf(code: string, parameterNames: readonly string[]): string[] {
  return withoutParameterDefines(code, parameterNames)
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '');
}

/** Whether every line of `part` is among `whole`'s, as many times. */
function containsLines(whole: readonly string[], part: readonly string[]): boolean {
  const counts = new Map<string, number>();
  for (const line of whole) counts.set(line, (counts.get(line) ?? 0) + 1);
  return part.every((line) => {
    const left = counts.get(line) ?? 0;
    counts.set(line, left - 1);
    return left > 0;
  });
}

/**
 * The variant whose kernel `code` is; an UnknownKernelError names the closest one and where they part. A file the
 * engine spliced a variant's answer into holds that variant's declarations, maybe in another order and beside the
 * parent's that the answer left out: it is the largest variant whose every line it holds.
 */
export function matchVariant(pool: Pool, code: string): Variant {
  const normalized = normalizeKernel(code, pool.parameterNames);
  const found = pool.variants.find((v) => v.normalized === normalized);
  if (found) return found;
  const lines = linesOf(code, pool.parameterNames);
  const spliced = pool.variants
    .map((v) => ({ v, own: linesOf(v.code, pool.parameterNames) }))
    .filter(({ v, own }) => v.normalized !== '' && containsLines(lines, own))
    .sort((a, b) => b.own.length - a.own.length)[0];
  if (spliced) return spliced.v;
  const common = (v: Variant) => {
    let i = 0;
    while (i < v.normalized.length && v.normalized[i] === normalized[i]) i++;
    return i;
  };
  const closest = pool.variants.reduce((a, b) => (common(b) > common(a) ? b : a));
  const at = common(closest);
  throw new UnknownKernelError(
    `the kernel in the request is none of pool ${pool.name}'s ${pool.variants.length} variants; the closest is ${closest.id}, which differs (whitespace and comments removed) at ` +
      `"${normalized.slice(Math.max(0, at - 30), at + 30)}" where it has "${closest.normalized.slice(Math.max(0, at - 30), at + 30)}"`,
  );
}
