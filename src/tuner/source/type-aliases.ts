/**
 * What a kernel parameter's type name stands for when the file defines it (`typedef __nv_bfloat16 floatX;`), so that a
 * test spec's dtype can be checked against it. Real files choose such types with the preprocessor (llm.c:
 * `#define ENABLE_BF16` before `#include "common.h"`, whose `#if defined(ENABLE_BF16)` picks the typedef), so the
 * file and its local headers are read in include order with the macros defined so far, and each typedef's guards are
 * evaluated as far as they can be: `defined(X)`, `!`, `&&`, `||`, comparisons and integer macros. A condition on what
 * only the compiler knows (`__CUDA_ARCH__`, a macro of a system header) is unknown, and every typedef it guards stays a
 * candidate.
 */
import * as path from 'node:path';
import { findLocalHeader } from '../compile/compile-sources';
import { outlineSource, type TopLevelItem } from './translation-unit';

export interface TypeAliasOptions {
  filePath?: string;
  includePaths?: readonly string[];
  readFile?: (absolutePath: string) => string | undefined;
  /** Macros defined on the command line (-DNAME or -DNAME=VALUE). */
  defines?: Readonly<Record<string, string>>;
}

/** Alias name → the types it may stand for (one when the preprocessor conditions decide it). */
export type TypeAliases = ReadonlyMap<string, readonly string[]>;

/** The aliases of `code` and of the local headers it includes, resolved through chains (`typedef floatX floatN;`). */
export async function typeAliases(code: string, options: TypeAliasOptions = {}): Promise<TypeAliases> {
  const defines = new Map(Object.entries(options.defines ?? {}));
  const found = new Map<string, { target: string; certain: boolean }[]>();
  const visited = new Set<string>();
  const visit = async (text: string, dir: string | undefined): Promise<void> => {
    for (const item of (await outlineSource(text)).items) {
      const holds = guardsHold(item, defines);
      if (holds === false) continue;
      if (item.kind === 'define' && item.macro && !item.macro.functionLike) defines.set(item.macro.name, item.macro.value);
      else if (item.kind === 'directive') {
        const undef = /^\s*#\s*undef\s+(\w+)/.exec(text.slice(item.start, item.end));
        if (undef && holds) defines.delete(undef[1]!);
      } else if (item.alias) {
        found.set(item.alias.name, [...(found.get(item.alias.name) ?? []), { target: item.alias.target, certain: holds === true }]);
      } else if (item.kind === 'include' && item.include && options.readFile) {
        const file = findLocalHeader(item.include, dir, options.includePaths ?? []);
        if (!file || visited.has(file)) continue;
        visited.add(file);
        const header = options.readFile(file);
        if (header !== undefined) await visit(header, path.dirname(file));
      }
    }
  };
  await visit(code, options.filePath ? path.dirname(options.filePath) : undefined);
  const direct = new Map([...found].map(([name, candidates]) => {
    const certain = candidates.find((c) => c.certain);
    return [name, certain ? [certain.target] : [...new Set(candidates.map((c) => c.target))]];
  }));
  const resolve = (type: string, depth: number): string[] => {
    const base = type.replace(/^(const|volatile)\s+/g, '').trim();
    const next = direct.get(base);
    if (!next || depth > 16) return [base];
    return [...new Set(next.flatMap((t) => resolve(t, depth + 1)))];
  };
  return new Map([...direct.keys()].map((name) => [name, resolve(name, 0)]));
}

/** Whether every guard of an item holds: true, false, or undefined when one cannot be decided. */
function guardsHold(item: TopLevelItem, defines: ReadonlyMap<string, string>): boolean | undefined {
  let known = true;
  for (const guard of item.guards) {
    const v = evaluateCondition(guard, defines);
    if (v === 0) return false;
    if (v === undefined) known = false;
  }
  return known ? true : undefined;
}

type Value = number | undefined;

/** A preprocessor condition's value (0 false, non-zero true), or undefined where it depends on what is not known here. */
export function evaluateCondition(text: string, defines: ReadonlyMap<string, string>): Value {
  const tokens = text.match(/defined|\|\||&&|==|!=|<=|>=|<<|>>|[()!<>+\-*/%]|0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const take = () => tokens[i++];
  const name = (word: string): Value => {
    // Names the compiler defines (__CUDA_ARCH__, __CUDACC_VER_MAJOR__, ...) are unknown here; a macro of this file is
    // its value; an undefined name is 0, as in the preprocessor.
    if (word.startsWith('__')) return defines.has(word) ? literal(defines.get(word)!) : undefined;
    if (!defines.has(word)) return 0;
    return literal(defines.get(word)!);
  };
  const literal = (v: string): Value => {
    const t = v.trim().replace(/[uUlL]+$/, '');
    if (t === '') return 1;
    if (/^0[xX][0-9a-fA-F]+$|^\d+$/.test(t)) return Number(t);
    return undefined;
  };
  const lift = (a: Value, b: Value, f: (x: number, y: number) => number): Value => (a === undefined || b === undefined ? undefined : f(a, b));
  const primary = (): Value => {
    const t = take();
    if (t === undefined) return undefined;
    if (t === '(') {
      const v = or();
      take();
      return v;
    }
    if (t === '!') {
      const v = primary();
      return v === undefined ? undefined : Number(v === 0);
    }
    if (t === '-') {
      const v = primary();
      return v === undefined ? undefined : -v;
    }
    if (t === 'defined') {
      const paren = peek() === '(';
      if (paren) take();
      const macro = take() ?? '';
      if (paren) take();
      return macro.startsWith('__') && !defines.has(macro) ? undefined : Number(defines.has(macro));
    }
    if (/^\d|^0[xX]/.test(t)) return Number(t);
    return name(t);
  };
  const binary = (next: () => Value, ops: Record<string, (x: number, y: number) => number>): (() => Value) => () => {
    let v = next();
    while (peek() !== undefined && ops[peek()!]) {
      const op = ops[take()!]!;
      v = lift(v, next(), op);
    }
    return v;
  };
  const mul = binary(primary, { '*': (x, y) => x * y, '/': (x, y) => (y === 0 ? 0 : Math.trunc(x / y)), '%': (x, y) => (y === 0 ? 0 : x % y) });
  const add = binary(mul, { '+': (x, y) => x + y, '-': (x, y) => x - y });
  const cmp = binary(add, { '<': (x, y) => Number(x < y), '>': (x, y) => Number(x > y), '<=': (x, y) => Number(x <= y), '>=': (x, y) => Number(x >= y) });
  const eq = binary(cmp, { '==': (x, y) => Number(x === y), '!=': (x, y) => Number(x !== y) });
  // && and || short-circuit on a known operand, so `defined(A) && __CUDA_ARCH__ > 800` is false without A.
  const and = (): Value => {
    let v = eq();
    while (peek() === '&&') {
      take();
      const r = eq();
      v = v === 0 || r === 0 ? 0 : v === undefined || r === undefined ? undefined : 1;
    }
    return v;
  };
  const or = (): Value => {
    let v = and();
    while (peek() === '||') {
      take();
      const r = and();
      v = (v !== undefined && v !== 0) || (r !== undefined && r !== 0) ? 1 : v === undefined || r === undefined ? undefined : 0;
    }
    return v;
  };
  return or();
}
