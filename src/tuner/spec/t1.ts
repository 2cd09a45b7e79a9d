/**
 * The community's tuning-problem description, T1 (the JSON of the benchmark hub's kernels/*.json; schema
 * kernel_tuner/schema/T1/1.0.0/input-schema.json), read as a tuning spec, the way Kernel Tuner's tune_kernel_T1 reads it:
 *  - ConfigurationSpace: each parameter's Values (a Python list: `[16, 32]`, `[2**i for i in range(6)]`,
 *    `[1, 2] + list(range(32, 1025, 32))`) and the Conditions' expressions as restrictions; a Default that makes a valid
 *    configuration is the oracle's configuration;
 *  - KernelSpecification: the kernel file (beside the T1 file or in its parent folder), its name, compiler options,
 *    ProblemSize and GridDivX/Y/Z (the grid is the problem size over the divisors, as Kernel Tuner computes it; the
 *    GlobalSize is not read, as Kernel Tuner does not), LocalSize naming the block size parameters, SharedMemory;
 *  - Arguments, in the kernel's parameter order: Scalar (FillValue), or Vector of Size elements (a number, or an
 *    expression over ProblemSize[i] and max/min of a parameter's values) filled with FillValue (Constant) or drawn from
 *    a standard normal distribution (Random, numpy.random.randn in Kernel Tuner); `Output: 1`, else an AccessType that
 *    writes, marks the outputs; `MemType: "Constant"` also copies the data into the `__constant__` symbol of that name
 *    (Kernel Tuner's cmem_args);
 *  - Search (strategy and its Attributes as options) and Budget (ConfigurationCount, TuningDuration).
 * Fields Kernel Tuner ignores are ignored (General, BenchmarkName, Device, Misc, ...); a value the tuner cannot honour
 * is a TuningSpecError naming the field.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { z } from 'zod';
import type { DType } from '../../gpu/dtype';
import { compileExpression, evaluateNumber, type Value } from '../space/expressions';
import { compileRestrictions } from '../space/restrictions';
import type { Config, ParamValue, TuneParams } from '../types';
import type { ArgumentSpec, ConstantSpec } from './input-spec';
import type { TuningSpec } from './tuning-spec';

export class T1Error extends Error {
  override readonly name = 'TuningSpecError';
}

/** Whether parsed JSON is a T1 problem rather than a tuning spec. */
export function isT1(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && 'KernelSpecification' in raw && 'ConfigurationSpace' in raw;
}

const t1Schema = z.looseObject({
  General: z.looseObject({ OutputFormat: z.string().optional() }).optional(),
  ConfigurationSpace: z.looseObject({
    TuningParameters: z.array(z.looseObject({ Name: z.string().min(1), Type: z.string(), Values: z.string(), Default: z.unknown().optional() })).min(1),
    Conditions: z.array(z.looseObject({ Expression: z.string(), Parameters: z.array(z.string()).optional() })).default([]),
  }),
  KernelSpecification: z.looseObject({
    Language: z.string(),
    KernelName: z.string().min(1),
    KernelFile: z.string().min(1),
    CompilerOptions: z.array(z.string()).default([]),
    LocalSize: z.looseObject({ X: z.string(), Y: z.string().optional(), Z: z.string().optional() }).optional(),
    GridDivX: z.array(z.string()).optional(),
    GridDivY: z.array(z.string()).optional(),
    GridDivZ: z.array(z.string()).optional(),
    ProblemSize: z.array(z.union([z.number(), z.string()])).min(1).max(3),
    SharedMemory: z.number().int().nonnegative().optional(),
    Stream: z.null().optional(),
    SimulationInput: z.string().optional(),
    Arguments: z.array(z.looseObject({ Name: z.string().optional(), Type: z.string(), MemoryType: z.string() })).min(1),
    ReferenceArguments: z.array(z.unknown()).optional(),
  }),
  Search: z.looseObject({ Name: z.string(), Attributes: z.array(z.looseObject({ Name: z.string(), Value: z.unknown() })).default([]) }).optional(),
  Budget: z.array(z.looseObject({ Type: z.string(), BudgetValue: z.number().positive() })).optional(),
});

/** A T1 problem as a spec, with the T1's argument names in parameter order (named after the kernel's once it is parsed). */
export type T1Spec = TuningSpec & { dir: string; t1: { path: string; argumentNames: string[] } };

const ELEMENT_TYPES: Record<string, DType> = {
  int8: 'int8',
  uint8: 'uint8',
  int16: 'int16',
  uint16: 'uint16',
  int32: 'int32',
  uint32: 'uint32',
  int64: 'int64',
  uint64: 'uint64',
  half: 'float16',
  float: 'float32',
  double: 'float64',
};

/** Reads a parsed T1 problem (`raw`, from the file `path`) as a tuning spec; the kernel file must exist. */
export function t1ToSpec(raw: unknown, path: string): T1Spec {
  const parsed = t1Schema.safeParse(raw);
  const fail = (field: string, reason: string): never => {
    throw new T1Error(`the T1 problem ${path}: ${field}: ${reason}`);
  };
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return fail(issue.path.join('.') || '(top level)', issue.message);
  }
  const t1 = parsed.data;
  const ks = t1.KernelSpecification;
  if (t1.General?.OutputFormat !== undefined && t1.General.OutputFormat !== 'JSON') fail('General.OutputFormat', `"${t1.General.OutputFormat}" is not supported: results are written as T4 JSON (--t4 FILE)`);
  if (ks.Language !== 'CUDA') fail('KernelSpecification.Language', `"${ks.Language}" is not supported: the tuner compiles CUDA (NVRTC or nvcc)`);
  if (ks.SimulationInput !== undefined) fail('KernelSpecification.SimulationInput', 'is not read from the problem: replay a cache with --simulate FILE');
  if (ks.ReferenceArguments !== undefined) fail('KernelSpecification.ReferenceArguments', 'are not supported: every configuration is checked against the oracle (the reference configuration, or a tuning spec\'s reference kernel)');

  // The parameters, in order: their order is the space's (and the cache's keys').
  const tuneParams: Record<string, ParamValue[]> = {};
  t1.ConfigurationSpace.TuningParameters.forEach((p, i) => {
    const field = `ConfigurationSpace.TuningParameters[${i}] (${p.Name})`;
    if (p.Name in tuneParams) fail(field, `the parameter ${p.Name} is listed twice`);
    tuneParams[p.Name] = parameterValues(p.Type, p.Values, (reason) => fail(`${field}.Values`, reason), (reason) => fail(`${field}.Type`, reason));
  });
  const restrictions = t1.ConfigurationSpace.Conditions.map((c) => c.Expression);

  const file = [resolve(dirname(path), ks.KernelFile), resolve(dirname(path), '..', ks.KernelFile)].find((f) => existsSync(f));
  if (!file) fail('KernelSpecification.KernelFile', `${ks.KernelFile} is neither beside the problem (${dirname(path)}) nor in its parent folder`);

  const problemSize = ks.ProblemSize;
  const argumentNames: string[] = [];
  const args: Record<string, ArgumentSpec> = {};
  const constantMemory: Record<string, ConstantSpec> = {};
  const argEntries = ks.Arguments.map((a) => a as Record<string, unknown> & { Name?: string; Type: string; MemoryType: string });
  const markedOutputs = argEntries.some((a) => a['Output'] === 1 || a['Output'] === true);
  argEntries.forEach((a, i) => {
    const name = a.Name ?? `arg${i}`;
    const field = `KernelSpecification.Arguments[${i}] (${name})`;
    if (argumentNames.includes(name)) fail(field, `the name ${name} is used twice`);
    argumentNames.push(name);
    for (const unsupported of ['DataSource', 'RandomSeed'] as const) {
      if (a[unsupported] !== undefined) fail(`${field}.${unsupported}`, unsupported === 'RandomSeed' ? 'is not supported: the inputs are drawn from the seed of the run (--seed)' : 'is not supported: the inputs are generated on the GPU (FillType Constant or Random)');
    }
    const dtype = ELEMENT_TYPES[a.Type];
    if (!dtype) fail(`${field}.Type`, `"${a.Type}" is not supported (supported: ${Object.keys(ELEMENT_TYPES).join(', ')})`);
    const fillValue = a['FillValue'];
    if (a.MemoryType === 'Scalar') {
      if (typeof fillValue !== 'number') fail(`${field}.FillValue`, 'a Scalar argument needs its value as a number');
      args[name] = { dtype: dtype!, value: fillValue as number };
      return;
    }
    if (a.MemoryType !== 'Vector') fail(`${field}.MemoryType`, `"${a.MemoryType}" is not supported (supported: Scalar, Vector)`);
    const length = vectorSize(a['Size'], problemSize, tuneParams, (reason) => fail(`${field}.Size`, reason));
    const output = markedOutputs ? a['Output'] === 1 || a['Output'] === true : a['AccessType'] === 'WriteOnly' || a['AccessType'] === 'ReadWrite';
    const fillType = a['FillType'];
    let contents: { fill: number } | { random: { kind: 'normal'; mean: number; std: number } } | Record<string, never>;
    if (fillType === 'Constant') {
      if (typeof fillValue !== 'number') fail(`${field}.FillValue`, 'FillType Constant needs a number');
      // A pure output is poisoned before every run instead (an element the kernel never writes then fails); one the
      // kernel also reads (ReadWrite) starts from its fill value.
      contents = output && a['AccessType'] !== 'ReadWrite' ? {} : { fill: fillValue as number };
    } else if (fillType === 'Random') {
      if (!dtype!.startsWith('float')) fail(`${field}.FillType`, `Random fills floats (a standard normal distribution, as Kernel Tuner's numpy.random.randn), not ${a.Type}`);
      contents = { random: { kind: 'normal', mean: 0, std: 1 } };
    } else {
      return fail(`${field}.FillType`, `"${String(fillType)}" is not supported (supported: Constant, Random)`);
    }
    args[name] = { dtype: dtype!, length, output, ...contents };
    if (a['MemType'] === 'Constant') constantMemory[name] = { sameAs: name };
  });

  const spec: T1Spec = {
    kernel: ks.KernelName,
    file: file!,
    includePaths: [],
    arguments: args,
    ...(Object.keys(constantMemory).length > 0 && { constantMemory }),
    problemSize,
    seed: 1,
    tuneParams,
    restrictions,
    ...gridDivisors(ks),
    ...blockSizeNames(ks.LocalSize, tuneParams, fail),
    ...(ks.SharedMemory !== undefined && ks.SharedMemory > 0 && { sharedMemBytes: ks.SharedMemory }),
    compilerOptions: ks.CompilerOptions,
    strategy: t1.Search?.Name ?? 'brute_force',
    ...(t1.Search && t1.Search.Attributes.length > 0 && { strategyOptions: Object.fromEntries(t1.Search.Attributes.map((a) => [a.Name, a.Value])) }),
    ...budgets(t1.Budget ?? [], fail),
    timing: 'verified',
    warmup: 1,
    flushL2: false,
    earlyStop: 1.5,
    energy: false,
    objective: 'time',
    objectiveHigherIsBetter: false,
    dir: dirname(resolve(path)),
    t1: { path, argumentNames },
  };
  const reference = defaultConfiguration(t1.ConfigurationSpace.TuningParameters, tuneParams, restrictions);
  if (reference) spec.referenceConfig = reference;
  return spec;
}

/** A parameter's values: Kernel Tuner evaluates the Python list; here its literal, range, list() and comprehension forms. */
function parameterValues(type: string, text: string, failValues: (reason: string) => never, failType: (reason: string) => never): ParamValue[] {
  let values: Value[];
  try {
    values = new PythonList(text).parse();
  } catch (e) {
    return failValues(`"${text}" is not a Python list this reader evaluates (list literals, +, range(), list(), [expr for x in ... if ...]): ${(e as Error).message}`);
  }
  if (values.length === 0) failValues(`"${text}" has no values`);
  const check = (ok: (v: Value) => boolean, what: string) => {
    const bad = values.find((v) => !ok(v));
    if (bad !== undefined) failValues(`${JSON.stringify(bad)} is not ${what}`);
  };
  switch (type) {
    case 'int':
      check((v) => typeof v === 'number' && Number.isInteger(v), 'an integer');
      break;
    case 'uint':
      check((v) => typeof v === 'number' && Number.isInteger(v) && v >= 0, 'a non-negative integer');
      break;
    case 'float':
      check((v) => typeof v === 'number', 'a number');
      break;
    case 'bool':
      check((v) => typeof v === 'boolean', 'True or False');
      break;
    case 'string':
      check((v) => typeof v === 'string', 'a string');
      break;
    default:
      failType(`"${type}" is not a T1 parameter type (int, uint, float, bool, string)`);
  }
  return values;
}

/** A Vector's elements: a number, or an expression over ProblemSize[i] and max/min of a parameter's values. */
function vectorSize(size: unknown, problemSize: readonly (number | string)[], tuneParams: TuneParams, fail: (reason: string) => never): number {
  if (typeof size === 'number') {
    if (!Number.isSafeInteger(size) || size <= 0) fail(`${size} is not a positive integer`);
    return size;
  }
  if (typeof size !== 'string') return fail('a Vector needs its Size: a number or an expression');
  const text = size
    .replace(/\bProblemSize\s*\[\s*(\d+)\s*\]/g, (m, i: string) => {
      const v = problemSize[Number(i)];
      return typeof v === 'number' ? String(v) : fail(`${m}: the problem size has no number at index ${i}`);
    })
    .replace(/\b(max|min)\s*\(\s*([A-Za-z_]\w*)\s*\)/g, (m, fn: string, name: string) => {
      const values = tuneParams[name]?.filter((v): v is number => typeof v === 'number');
      if (!values || values.length === 0) return fail(`${m}: ${name} is not a parameter with numeric values`);
      return String(fn === 'max' ? Math.max(...values) : Math.min(...values));
    });
  let value: number;
  try {
    value = evaluateNumber(compileExpression(text, { knownNames: [] }), {});
  } catch (e) {
    return fail(`"${size}": ${(e as Error).message.split('\n')[0]}`);
  }
  if (!Number.isSafeInteger(value) || value <= 0) fail(`"${size}" gives ${value}, not a positive integer`);
  return value;
}

function gridDivisors(ks: { GridDivX?: string[]; GridDivY?: string[]; GridDivZ?: string[] }): Partial<TuningSpec> {
  // An empty list is Kernel Tuner's default (the block size of that dimension), as a missing one.
  const of = (d: string[] | undefined) => (d && d.length > 0 ? d : undefined);
  const [x, y, z] = [of(ks.GridDivX), of(ks.GridDivY), of(ks.GridDivZ)];
  return { ...(x && { gridDivX: x }), ...(y && { gridDivY: y }), ...(z && { gridDivZ: z }) };
}

/** LocalSize names the parameter of each block dimension (Kernel Tuner's block_size_names); "1" keeps the default name. */
function blockSizeNames(local: { X: string; Y?: string | undefined; Z?: string | undefined } | undefined, tuneParams: TuneParams, fail: (field: string, reason: string) => never): Partial<TuningSpec> {
  if (!local) return {};
  const defaults = ['block_size_x', 'block_size_y', 'block_size_z'];
  const names = (['X', 'Y', 'Z'] as const).map((axis, i) => {
    const text = (local[axis] ?? '1').trim();
    if (text === '1' || text === defaults[i]) return defaults[i]!;
    if (/^[A-Za-z_]\w*$/.test(text) && text in tuneParams) return text;
    return fail(`KernelSpecification.LocalSize.${axis}`, `"${text}" is not supported: name the tunable parameter of that block dimension, or give 1`);
  });
  return names.every((n, i) => n === defaults[i]) ? {} : { blockSizeNames: names };
}

function budgets(list: readonly { Type: string; BudgetValue: number }[], fail: (field: string, reason: string) => never): Partial<TuningSpec> {
  const out: Partial<TuningSpec> = {};
  list.forEach((b, i) => {
    if (b.Type === 'ConfigurationCount') out.maxFevals = Math.floor(b.BudgetValue);
    else if (b.Type === 'TuningDuration') out.timeLimitS = b.BudgetValue;
    else fail(`Budget[${i}].Type`, `"${b.Type}" is not supported (supported: ConfigurationCount, TuningDuration)`);
  });
  return out;
}

/** The parameters' Default values, when each is one of its values and together they pass the restrictions. */
function defaultConfiguration(params: readonly { Name: string; Default?: unknown }[], tuneParams: TuneParams, restrictions: readonly string[]): Config | undefined {
  const config: Config = {};
  for (const p of params) {
    const d = p.Default;
    if (!tuneParams[p.Name]!.includes(d as ParamValue)) return undefined;
    config[p.Name] = d as ParamValue;
  }
  return compileRestrictions(restrictions, Object.keys(tuneParams))(config) ? config : undefined;
}

// ---------------------------------------------------------------------------------------------------------------------
// Python lists, as T1 files write parameter values.

/** `[1, 2] + list(range(32, 1025, 32))`, `[2**i for i in range(0, 6)]`, `["a", "b"]`, `[True, False]`. */
class PythonList {
  private at = 0;

  constructor(private readonly text: string) {}

  parse(): Value[] {
    const values = this.sum();
    this.space();
    if (this.at < this.text.length) throw new Error(`unexpected "${this.text.slice(this.at, this.at + 20)}"`);
    return values;
  }

  private space(): void {
    while (/\s/.test(this.text[this.at] ?? '')) this.at++;
  }

  private sum(): Value[] {
    let values = this.term();
    for (this.space(); this.text[this.at] === '+'; this.space()) {
      this.at++;
      values = [...values, ...this.term()];
    }
    return values;
  }

  private term(): Value[] {
    this.space();
    const rest = this.text.slice(this.at);
    const call = /^(list|range)\s*\(/.exec(rest);
    if (rest.startsWith('[') || rest.startsWith('(') || call) {
      const open = this.at + (call ? call[0].length - 1 : 0);
      const close = matching(this.text, open);
      const inner = this.text.slice(open + 1, close);
      this.at = close + 1;
      if (call?.[1] === 'range') return range(splitTopLevel(inner).map((a) => integer(a)));
      if (call || rest.startsWith('(')) return new PythonList(inner).parse();
      return listDisplay(inner);
    }
    throw new Error(`expected a list, range() or list() at "${rest.slice(0, 20)}"`);
  }
}

/** The inside of `[...]`: elements, or a comprehension `expr for name in iterable [if condition]`. */
function listDisplay(inner: string): Value[] {
  const forAt = topLevelKeyword(inner, 'for');
  if (forAt < 0) return splitTopLevel(inner).filter((e, i, all) => e !== '' || i < all.length - 1).map(element);
  const expression = inner.slice(0, forAt);
  const clause = /^\s*([A-Za-z_]\w*)\s+in\s+([\s\S]*)$/.exec(inner.slice(forAt + 3));
  if (!clause) throw new Error(`expected "for NAME in ..." in "${inner}"`);
  const ifAt = topLevelKeyword(clause[2]!, 'if');
  const iterable = new PythonList(ifAt < 0 ? clause[2]! : clause[2]!.slice(0, ifAt)).parse();
  const name = clause[1]!;
  const value = compileExpression(expression.trim(), { knownNames: [name] });
  const keep = ifAt < 0 ? undefined : compileExpression(clause[2]!.slice(ifAt + 2).trim(), { knownNames: [name] });
  return iterable.filter((v) => keep === undefined || Boolean(keep.evaluate({ [name]: v }))).map((v) => value.evaluate({ [name]: v }));
}

function element(text: string): Value {
  const t = text.trim();
  const quoted = /^(['"])(.*)\1$/s.exec(t);
  if (quoted) return quoted[2]!;
  if (t === 'True' || t === 'False') return t === 'True';
  return evaluateNumber(compileExpression(t, { knownNames: [] }), {});
}

function integer(text: string): number {
  const v = evaluateNumber(compileExpression(text.trim(), { knownNames: [] }), {});
  if (!Number.isSafeInteger(v)) throw new Error(`range() takes integers, not ${text.trim()}`);
  return v;
}

function range(args: number[]): number[] {
  const [start, stop, step] = args.length === 1 ? [0, args[0]!, 1] : [args[0]!, args[1]!, args[2] ?? 1];
  if (args.length < 1 || args.length > 3 || step === 0) throw new Error(`range() takes 1 to 3 arguments and a step other than 0`);
  const out: number[] = [];
  for (let v = start; step > 0 ? v < stop : v > stop; v += step) out.push(v);
  return out;
}

/** The index of the bracket closing the one at `open`. */
function matching(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") i = text.indexOf(c, i + 1) < 0 ? text.length : text.indexOf(c, i + 1);
    else if ('[('.includes(c)) depth++;
    else if ('])'.includes(c) && --depth === 0) return i;
  }
  throw new Error(`unbalanced brackets in "${text}"`);
}

/** Splits at the commas outside brackets and quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") i = Math.max(i, text.indexOf(c, i + 1));
    else if ('[('.includes(c)) depth++;
    else if ('])'.includes(c)) depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(from, i).trim());
      from = i + 1;
    }
  }
  parts.push(text.slice(from).trim());
  return parts;
}

/** Where a keyword (`for`, `if`) stands outside brackets, or -1. */
function topLevelKeyword(text: string, keyword: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if ('[('.includes(c)) depth++;
    else if ('])'.includes(c)) depth--;
    else if (depth === 0 && text.startsWith(keyword, i) && !/\w/.test(text[i - 1] ?? ' ') && !/\w/.test(text[i + keyword.length] ?? ' ')) return i;
  }
  return -1;
}
