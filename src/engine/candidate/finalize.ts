/**
 * The file a session hands back: the tuned file with the chosen parameter values defined, so that it compiles as it is,
 * and the host code's launches of the kernel rewritten for the chosen configuration. A value goes where the file
 * already #defines that name (`#define BLOCK_SIZE 256` becomes 128); else an `#ifndef NAME / #define NAME v / #endif`
 * goes right above the first declaration that uses it (a build that sets its own value still wins); a name nothing
 * uses is not defined. Each `k<<<grid, block, smem, stream>>>(...)` gets the grid of the problem size over the grid
 * divisors, in the host's own expressions for the kernel's arguments, the block, and the dynamic shared memory (the
 * stream stays). Where a launch cannot be rewritten safely, or none is found, the result says exactly what to change,
 * and a comment above the kernel states the launch geometry. Depends on the file only, so the extension can render
 * the same result from a saved session.
 */
import type { LaunchGeometryView, LaunchSiteChange } from '../progress/events';
import { parseExpression, type Expr } from '../../tuner/space/expressions';
import { blockDims, resolveBlockSizeNames, type GridDivisor } from '../../tuner/space/geometry';
import { parseKernels } from '../../tuner/source/kernel-parser';
import { findKernel } from '../../tuner/source/kernel-signature';
import { findLaunchSites, type LaunchSite } from '../../tuner/source/launch-sites';
import { isHostOnly, outlineSource, type TopLevelItem } from '../../tuner/source/translation-unit';
import { pythonStr, type Config, type Dim3 } from '../../tuner/types';

export interface GridDivisors {
  x?: GridDivisor;
  y?: GridDivisor;
  z?: GridDivisor;
}

export interface FinalizeInput {
  /** The tuned file: parameters used as preprocessor names. */
  code: string;
  /** The tuned kernel's plain name: its launches in the file are rewritten. */
  kernelName: string;
  /** A value for every tunable parameter. */
  params: Config;
  /** Problem size per dimension: numbers or expressions over the kernel's scalar arguments. */
  problemSize: readonly (string | number)[];
  gridDivisors?: GridDivisors;
  blockSizeNames?: readonly string[];
  /** Dynamic shared memory per block: bytes, or an expression over the parameters and scalar arguments. */
  sharedMemBytes?: number | string | null;
}

export interface FinalKernel {
  code: string;
  launch: LaunchGeometryView;
  /** What was defined, in order. */
  defines: Record<string, string>;
  /** Things the host code must know that the proposal does not settle. */
  warnings: string[];
  launchSites: LaunchSiteChange[];
}

const AXES = ['x', 'y', 'z'] as const;
/** Kernel Tuner's defines whose values depend on the problem size at run time: no static value is right. */
const RUNTIME_DEFINES = ['grid_size_x', 'grid_size_y', 'grid_size_z'];

interface Edit {
  start: number;
  end: number;
  text: string;
}

export async function finalizeKernel(input: FinalizeInput): Promise<FinalKernel> {
  const names = resolveBlockSizeNames(input.blockSizeNames);
  const block = blockDims(input.params, names);
  const defines: Record<string, string> = {};
  names.forEach((name, i) => (defines[name] = String(block[i])));
  for (const [name, value] of Object.entries(input.params)) defines[name] = typeof value === 'boolean' ? (value ? '1' : '0') : pythonStr(value);
  const noNames = new Map<string, string>();
  const grid = gridExpressions(input, names, noNames);
  const sharedMem = input.sharedMemBytes === undefined || input.sharedMemBytes === null ? undefined : toC(input.sharedMemBytes, input.params, noNames);

  const outline = await outlineSource(input.code);
  const edits: Edit[] = [...defineEdits(input.code, outline.items, defines)];
  const warnings = RUNTIME_DEFINES.filter((name) => new RegExp(`\\b${name}\\b`).test(input.code)).map(
    (name) => `the kernel reads ${name}, which depends on the problem size at run time: define it in the host build (-D${name}=...)`,
  );

  const kernel = findKernel(await parseKernels(input.code), input.kernelName);
  const parameters = kernel?.parameters.map((p) => p.name) ?? [];
  const launchSites: LaunchSiteChange[] = [];
  for (const site of await findLaunchSites(input.code, input.kernelName)) {
    const change = rewriteLaunch(site, parameters, input, names, block);
    launchSites.push(change.change);
    if (change.edit) edits.push(change.edit);
    else warnings.push(`the launch at line ${change.change.line} was left as it is (${change.change.reason}): launch with block (${block.join(', ')}), grid (${grid.join(', ')})${sharedMem ? ` and ${sharedMem} bytes of dynamic shared memory` : ''}`);
  }
  if (launchSites.length === 0) warnings.push(`no launch of ${input.kernelName} was found in this file: launch it with block (${block.join(', ')}), grid (${grid.join(', ')})${sharedMem ? ` and ${sharedMem} bytes of dynamic shared memory` : ''}`);
  if (kernel && !launchSites.some((s) => s.after)) {
    const comment = [
      '// Tuned by llm-kernel-tuner. Launch this kernel with:',
      `//   dim3 block(${block.join(', ')});`,
      `//   dim3 grid(${grid.join(', ')});`,
      ...(sharedMem ? [`//   ${sharedMem} bytes of dynamic shared memory per block`] : []),
      `// (the grid covers the problem size [${input.problemSize.map(String).join(', ')}]).`,
      ...warnings.filter((w) => w.startsWith('the kernel reads')).map((w) => `// Note: ${w}.`),
    ];
    edits.push({ start: kernel.range.startIndex, end: kernel.range.startIndex, text: `${comment.join('\n')}\n` });
  }
  return {
    code: applyEdits(input.code, edits),
    launch: { block: block as Dim3, grid, problemSize: input.problemSize.map(String), ...(sharedMem && { sharedMemBytes: sharedMem }) },
    defines,
    warnings,
    launchSites,
  };
}

/** Applies edits back to front; insertions at one position keep the order they were made in. */
function applyEdits(code: string, edits: readonly Edit[]): string {
  const ordered = edits.map((e, i) => ({ ...e, i })).sort((a, b) => b.start - a.start || b.end - a.end || b.i - a.i);
  let out = code;
  for (const e of ordered) out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/**
 * Where each value goes: into the file's own `#define NAME value` (every one of them, e.g. in #if branches), or as
 * a guarded define above the first declaration that uses the name; names nothing uses are left out.
 */
function defineEdits(code: string, items: readonly TopLevelItem[], defines: Record<string, string>): Edit[] {
  const edits: Edit[] = [];
  const guards = new Map<number, string[]>();
  for (const [name, value] of Object.entries(defines)) {
    const own = items.filter((i) => i.kind === 'define' && i.macro?.name === name && !i.macro.functionLike);
    if (own.length > 0) {
      for (const item of own) {
        const m = new RegExp(`^([ \\t]*#[ \\t]*define[ \\t]+${name})([ \\t]+[^\\n]*?)?([ \\t]*(?://[^\\n]*)?)$`, 'm').exec(code.slice(item.start, item.end));
        if (m && !m[0].endsWith('\\')) edits.push({ start: item.start + m.index, end: item.start + m.index + m[0].length, text: `${m[1]} ${value}${m[3] ?? ''}` });
      }
      continue;
    }
    const user = items.find((i) => i.kind !== 'include' && !isHostOnly(i) && i.uses.has(name));
    if (!user) continue;
    guards.set(user.commentStart, [...(guards.get(user.commentStart) ?? []), `#ifndef ${name}\n#define ${name} ${value}\n#endif`]);
  }
  for (const [at, lines] of guards) edits.push({ start: at, end: at, text: `${lines.join('\n')}\n` });
  return edits;
}

/** The grid per dimension as C over the kernel's arguments (`argument` maps a kernel parameter to a host expression). */
function gridExpressions(input: FinalizeInput, names: readonly string[], argument: ReadonlyMap<string, string>): [string, string, string] {
  const problem = [0, 1, 2].map((i) => input.problemSize[i] ?? 1);
  return [0, 1, 2].map((i) => {
    const axis = AXES[i]!;
    const given = input.gridDivisors?.[axis];
    // Kernel Tuner's default divisor is the block size parameter of the dimension, or 1 when it is not tunable.
    const factors = given === undefined ? (input.params[names[i]!] === undefined ? [] : [names[i]!]) : Array.isArray(given) ? given : [given];
    return ceilDiv(toC(problem[i]!, input.params, argument), divisorC(factors as (string | number)[], input.params, argument));
  }) as [string, string, string];
}

/** An expression the host may evaluate twice: no increments or assignments. */
function sideEffectFree(text: string): boolean {
  return !/\+\+|--|(^|[^=!<>])=(?!=)|\b(new|delete)\b/.test(text);
}

/** `dim3(x, y, z)` with trailing 1s left out, or just `x`. */
function dim3Text(dims: readonly (string | number)[]): string {
  const d = dims.map(String);
  while (d.length > 1 && d[d.length - 1] === '1') d.pop();
  return d.length === 1 ? d[0]! : `dim3(${d.join(', ')})`;
}

/** The launch rewritten for the chosen configuration, or why it cannot be. */
function rewriteLaunch(
  site: LaunchSite,
  parameters: readonly string[],
  input: FinalizeInput,
  names: readonly string[],
  block: Dim3,
): { change: LaunchSiteChange; edit?: Edit } {
  const before = site.config?.text ?? site.args.map((a) => a.text).join(', ');
  const change: LaunchSiteChange = { line: site.line + 1, ...(site.inFunction && { inFunction: site.inFunction }), before };
  const refuse = (reason: string) => ({ change: { ...change, reason } });
  if (site.kind === 'runtime-api') return refuse(`${site.callee} takes the kernel's arguments as an array, so the grid cannot be written in the host's own variables`);
  if (site.args.length !== parameters.length) return refuse(`it passes ${site.args.length} arguments to a kernel of ${parameters.length} parameters`);
  const argument = new Map(parameters.map((p, i) => [p, atomic(site.args[i]!.text)]));
  const used = [...input.problemSize.map(String), String(input.sharedMemBytes ?? ''), ...Object.values(input.gridDivisors ?? {}).flat().map(String)].join(' ');
  const unsafe = parameters.filter((p, i) => new RegExp(`\\b${p}\\b`).test(used) && !sideEffectFree(site.args[i]!.text));
  if (unsafe.length > 0) return refuse(`the argument${unsafe.length > 1 ? 's' : ''} for ${unsafe.join(', ')} would be evaluated again in the grid`);
  const grid = gridExpressions(input, names, argument);
  const config = site.config!.args.map((a) => a.text);
  const sharedMem =
    input.sharedMemBytes !== undefined && input.sharedMemBytes !== null ? toC(input.sharedMemBytes, input.params, argument) : config[2] ?? (config[3] !== undefined ? '0' : undefined);
  const parts = [dim3Text(grid), dim3Text(block), ...(sharedMem !== undefined || config[3] !== undefined ? [sharedMem ?? '0'] : []), ...(config[3] !== undefined ? [config[3]] : [])];
  const after = `<<<${parts.join(', ')}>>>`;
  if (after === before) return { change: { ...change, after } };
  return { change: { ...change, after }, edit: { start: site.config!.start, end: site.config!.end, text: after } };
}

/** A host expression as an operand: parenthesised unless it is a name, a member, a literal or a call. */
function atomic(text: string): string {
  const t = text.trim();
  return /^[A-Za-z_][\w.]*(->\w+)*$|^\d+[uUlL]*$|^[A-Za-z_][\w:]*\([^()]*\)$/.test(t) ? t : `(${t})`;
}

/** `ceil(p / d)` in integer C arithmetic, folded where d is 1. */
function ceilDiv(p: string, d: string): string {
  if (d === '1') return p;
  if (/^\d+$/.test(d)) return `(${p} + ${Number(d) - 1}) / ${d}`;
  const divisor = /^\w+$/.test(d) ? d : `(${d})`;
  return `(${p} + ${divisor} - 1) / ${divisor}`;
}

/** The product of the divisor's factors, as a number when every name in it is a tunable parameter. */
function divisorC(factors: readonly (string | number)[], params: Config, argument: ReadonlyMap<string, string>): string {
  const parts = factors.map((f) => toC(f, params, argument));
  const numeric = parts.every((p) => /^\d+$/.test(p));
  if (numeric) return String(parts.reduce((a, p) => a * Number(p), 1));
  return parts.length === 1 ? parts[0]! : parts.map((p) => (/^[\w]+$/.test(p) ? p : `(${p})`)).join(' * ');
}

/**
 * An expression of our language as C, with tunable parameters replaced by their values, constants folded, and the
 * kernel's arguments replaced by the host's expressions for them (`argument`).
 */
function toC(value: string | number, params: Config, argument: ReadonlyMap<string, string>): string {
  if (typeof value === 'number') return String(value);
  return print(fold(parseExpression(value), params, argument));
}

type Folded = { kind: 'const'; value: number } | { kind: 'text'; text: string; atomic: boolean };

const C_OPERATOR: Record<string, string> = { '+': '+', '-': '-', '*': '*', '/': '/', '//': '/', '%': '%' };

function fold(e: Expr, params: Config, argument: ReadonlyMap<string, string>): Folded {
  switch (e.kind) {
    case 'number':
      return { kind: 'const', value: e.value };
    case 'bool':
      return { kind: 'const', value: e.value ? 1 : 0 };
    case 'name': {
      const v = params[e.name];
      if (typeof v === 'number') return { kind: 'const', value: v };
      if (typeof v === 'boolean') return { kind: 'const', value: v ? 1 : 0 };
      const host = argument.get(e.name);
      return { kind: 'text', text: host ?? e.name, atomic: true };
    }
    case 'unary': {
      const operand = fold(e.operand, params, argument);
      if (operand.kind === 'const') return { kind: 'const', value: e.op === '-' ? -operand.value : e.op === 'not' ? Number(!operand.value) : operand.value };
      return { kind: 'text', text: `${e.op === 'not' ? '!' : e.op}${print(operand, true)}`, atomic: false };
    }
    case 'binary': {
      const [l, r] = [fold(e.left, params, argument), fold(e.right, params, argument)];
      if (l.kind === 'const' && r.kind === 'const' && r.value !== 0) {
        const value = e.op === '+' ? l.value + r.value : e.op === '-' ? l.value - r.value : e.op === '*' ? l.value * r.value : e.op === '/' ? l.value / r.value : e.op === '//' ? Math.floor(l.value / r.value) : e.op === '%' ? l.value % r.value : l.value ** r.value;
        return { kind: 'const', value };
      }
      if (e.op === '**') return { kind: 'text', text: `pow(${print(l)}, ${print(r)})`, atomic: true };
      return { kind: 'text', text: `${print(l, true)} ${C_OPERATOR[e.op]} ${print(r, true)}`, atomic: false };
    }
    case 'call': {
      const args = e.args.map((a) => fold(a, params, argument));
      if (args.every((a) => a.kind === 'const')) {
        const values = args.map((a) => (a as { value: number }).value);
        return { kind: 'const', value: e.fn === 'min' ? Math.min(...values) : Math.max(...values) };
      }
      const [first, ...rest] = args.map((a) => print(a, true));
      const cmp = e.fn === 'min' ? '<' : '>';
      const text = rest.reduce((acc, next) => `(${acc} ${cmp} ${next} ? ${acc} : ${next})`, first!);
      return { kind: 'text', text, atomic: true };
    }
    case 'logical':
    case 'compare':
      throw new RangeError(`a size expression cannot use ${e.kind === 'logical' ? e.op : e.ops.join(' ')}`);
  }
}

function print(f: Folded, asOperand = false): string {
  if (f.kind === 'const') return String(f.value);
  return asOperand && !f.atomic ? `(${f.text})` : f.text;
}
