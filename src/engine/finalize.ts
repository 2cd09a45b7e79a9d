/**
 * The kernel a session hands back: the tuned source with the chosen parameter values defined, so that it compiles as it
 * is (`#ifndef block_size_x` / `#define block_size_x 128` / `#endif`: a build that sets its own value still wins), and a
 * comment stating the launch geometry the host code must use, in C. Pure, so that the extension can render the same
 * result from a saved session.
 */
import type { LaunchGeometryView } from './events';
import { parseExpression, type Expr } from '../tuner/expressions';
import { blockDims, resolveBlockSizeNames, type GridDivisor } from '../tuner/geometry';
import { pythonStr, type Config, type Dim3 } from '../tuner/types';

export interface GridDivisors {
  x?: GridDivisor;
  y?: GridDivisor;
  z?: GridDivisor;
}

export interface FinalizeInput {
  /** The tunable kernel: parameters used as preprocessor names. */
  code: string;
  /** A value for every tunable parameter. */
  params: Config;
  /** Problem size per dimension: numbers or expressions over the kernel's scalar arguments. */
  problemSize: readonly (string | number)[];
  gridDivisors?: GridDivisors;
  blockSizeNames?: readonly string[];
}

export interface FinalKernel {
  code: string;
  launch: LaunchGeometryView;
  /** What was defined, in order. */
  defines: Record<string, string>;
  /** Things the host code must know that the defines cannot settle. */
  warnings: string[];
}

const AXES = ['x', 'y', 'z'] as const;
/** Kernel Tuner's defines whose values depend on the problem size at run time: no static value is right. */
const RUNTIME_DEFINES = ['grid_size_x', 'grid_size_y', 'grid_size_z'];

export function finalizeKernel(input: FinalizeInput): FinalKernel {
  const names = resolveBlockSizeNames(input.blockSizeNames);
  const block = blockDims(input.params, names);
  const defines: Record<string, string> = {};
  names.forEach((name, i) => (defines[name] = String(block[i])));
  for (const [name, value] of Object.entries(input.params)) defines[name] = typeof value === 'boolean' ? (value ? '1' : '0') : pythonStr(value);

  const problem = [0, 1, 2].map((i) => input.problemSize[i] ?? 1);
  const grid = [0, 1, 2].map((i) => {
    const axis = AXES[i]!;
    const given = input.gridDivisors?.[axis];
    // Kernel Tuner's default divisor is the block size parameter of the dimension, or 1 when it is not tunable.
    const factors = given === undefined ? (input.params[names[i]!] === undefined ? [] : [names[i]!]) : Array.isArray(given) ? given : [given];
    return ceilDiv(toC(problem[i]!, input.params), divisorC(factors as (string | number)[], input.params));
  }) as [string, string, string];

  const warnings = RUNTIME_DEFINES.filter((name) => new RegExp(`\\b${name}\\b`).test(input.code)).map(
    (name) => `the kernel reads ${name}, which depends on the problem size at run time: define it in the host build (-D${name}=...)`,
  );
  const comment = [
    '// Tuned by llm-kernel-tuner. Launch this kernel with:',
    `//   dim3 block(${block.join(', ')});`,
    `//   dim3 grid(${grid.join(', ')});`,
    `// (the grid covers the problem size [${input.problemSize.map(String).join(', ')}]).`,
    ...warnings.map((w) => `// Note: ${w}.`),
  ];
  const guards = Object.entries(defines).flatMap(([name, value]) => [`#ifndef ${name}`, `#define ${name} ${value}`, '#endif']);
  return {
    code: `${[...comment, ...guards].join('\n')}\n\n${input.code.replace(/^\s*\n/, '')}`,
    launch: { block: block as Dim3, grid, problemSize: input.problemSize.map(String) },
    defines,
    warnings,
  };
}

/** `ceil(p / d)` in integer C arithmetic, folded where d is 1. */
function ceilDiv(p: string, d: string): string {
  if (d === '1') return p;
  if (/^\d+$/.test(d)) return `(${p} + ${Number(d) - 1}) / ${d}`;
  const divisor = /^\w+$/.test(d) ? d : `(${d})`;
  return `(${p} + ${divisor} - 1) / ${divisor}`;
}

/** The product of the divisor's factors, as a number when every name in it is a tunable parameter. */
function divisorC(factors: readonly (string | number)[], params: Config): string {
  const parts = factors.map((f) => toC(f, params));
  const numeric = parts.every((p) => /^\d+$/.test(p));
  if (numeric) return String(parts.reduce((a, p) => a * Number(p), 1));
  return parts.length === 1 ? parts[0]! : parts.map((p) => (/^[\w]+$/.test(p) ? p : `(${p})`)).join(' * ');
}

/** An expression of our language as C, with tunable parameters replaced by their values and constants folded. */
function toC(value: string | number, params: Config): string {
  if (typeof value === 'number') return String(value);
  return print(fold(parseExpression(value), params));
}

type Folded = { kind: 'const'; value: number } | { kind: 'text'; text: string; atomic: boolean };

const C_OPERATOR: Record<string, string> = { '+': '+', '-': '-', '*': '*', '/': '/', '//': '/', '%': '%' };

function fold(e: Expr, params: Config): Folded {
  switch (e.kind) {
    case 'number':
      return { kind: 'const', value: e.value };
    case 'bool':
      return { kind: 'const', value: e.value ? 1 : 0 };
    case 'name': {
      const v = params[e.name];
      if (typeof v === 'number') return { kind: 'const', value: v };
      if (typeof v === 'boolean') return { kind: 'const', value: v ? 1 : 0 };
      return { kind: 'text', text: e.name, atomic: true };
    }
    case 'unary': {
      const operand = fold(e.operand, params);
      if (operand.kind === 'const') return { kind: 'const', value: e.op === '-' ? -operand.value : e.op === 'not' ? Number(!operand.value) : operand.value };
      return { kind: 'text', text: `${e.op === 'not' ? '!' : e.op}${print(operand, true)}`, atomic: false };
    }
    case 'binary': {
      const [l, r] = [fold(e.left, params), fold(e.right, params)];
      if (l.kind === 'const' && r.kind === 'const' && r.value !== 0) {
        const value = e.op === '+' ? l.value + r.value : e.op === '-' ? l.value - r.value : e.op === '*' ? l.value * r.value : e.op === '/' ? l.value / r.value : e.op === '//' ? Math.floor(l.value / r.value) : e.op === '%' ? l.value % r.value : l.value ** r.value;
        return { kind: 'const', value };
      }
      if (e.op === '**') return { kind: 'text', text: `pow(${print(l)}, ${print(r)})`, atomic: true };
      return { kind: 'text', text: `${print(l, true)} ${C_OPERATOR[e.op]} ${print(r, true)}`, atomic: false };
    }
    case 'call': {
      const args = e.args.map((a) => fold(a, params));
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
