/**
 * What a kernel parameter's type name stands for when the file defines it (`typedef __nv_bfloat16 floatX;`), so that a
 * test spec's dtype can be checked against it. Real files choose such types with the preprocessor (llm.c:
 * `#define ENABLE_BF16` before `#include "common.h"`, whose `#if defined(ENABLE_BF16)` picks the typedef; CLBlast:
 * `#if VWM == 2` `typedef real2 realM;`), so the file and its local headers are read as preprocessor.ts sees them.
 * A typedef under a conditional left open (on what only the compiler knows, `__CUDA_ARCH__`, or on a parameter tuned
 * over several values) is one candidate among the others.
 */
import { preprocess, type Preprocessed, type PreprocessOptions } from './preprocessor';
import { blankCommentsAndLiterals } from './parse-tree';
import { outlineSource } from './translation-unit';

/** Alias name → the types it may stand for (one when the preprocessor conditions decide it). */
export type TypeAliases = ReadonlyMap<string, readonly string[]>;

/**
 * The aliases of `code` and of the local headers it includes, resolved through chains (`typedef floatX floatN;`).
 * Default: the tuner's closed world without parameters (preprocessor.ts), local headers followed.
 */
export function typeAliases(code: string, options: PreprocessOptions = { world: 'closed', includes: {} }): Promise<TypeAliases> {
  return typeAliasesOf([preprocess(code, 'kernel.cu', options)]);
}

/**
 * The aliases in several views of a file (the space's, then those where the varying parameters take values): a name
 * stands for what the views decide it stands for, or, where none decides it, for every candidate of a conditional left
 * open.
 */
export async function typeAliasesOf(views: readonly Preprocessed[]): Promise<TypeAliases> {
  const decided = new Map<string, Set<string>>();
  const open = new Map<string, Set<string>>();
  const outlines = new Map<string, Promise<{ name: string; target: string; certain: boolean }[]>>();
  for (const view of views) {
    for (const file of view.files) {
      let aliases = outlines.get(file.view);
      if (!aliases) outlines.set(file.view, (aliases = aliasesOfText(file.view)));
      for (const a of await aliases) {
        const into = a.certain ? decided : open;
        into.set(a.name, (into.get(a.name) ?? new Set()).add(a.target));
      }
    }
  }
  const direct = new Map([...open, ...decided]);
  const resolve = (type: string, depth: number): string[] => {
    const base = type.replace(/^(const|volatile)\s+/g, '').trim();
    const next = direct.get(base);
    if (!next || depth > 16) return [base];
    return [...new Set([...next].flatMap((t) => resolve(t, depth + 1)))];
  };
  return new Map([...direct.keys()].map((name) => [name, resolve(name, 0)]));
}

/** The typedefs and aliases of one view; certain when no conditional left open guards them. */
async function aliasesOfText(view: string): Promise<{ name: string; target: string; certain: boolean }[]> {
  // Most files of a kernel have none; only those are parsed.
  if (!/\b(typedef|using)\b/.test(blankCommentsAndLiterals(view))) return [];
  // A conditional the preprocessor decided is blanked: only those left open guard an item of the view.
  return (await outlineSource(view)).items.flatMap((item) => (item.alias ? [{ ...item.alias, certain: item.guards.length === 0 }] : []));
}
