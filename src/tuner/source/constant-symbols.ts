/**
 * The `__constant__` variables a file (and its local headers) declares, as the preprocessor leaves them: what a spec's
 * constant memory (Kernel Tuner's cmem_args) may fill, with the element type and the number of elements of each.
 */
import { blankCommentsAndLiterals } from './parse-tree';
import type { Preprocessed } from './preprocessor';

export interface ConstantSymbol {
  name: string;
  /** The element type as written, qualifiers dropped ("float", "unsigned int"). */
  type: string;
  /** Elements: 1 for a scalar, the product of the extents for an array; undefined where an extent is not known here. */
  elements: number | undefined;
  /** Where it is declared, for messages ("convolution.cu:46"). */
  at: string;
}

const DECLARATION = /\b__constant__\b([^;{}()]*?)\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)(?:=[^;]*)?;/g;
const QUALIFIERS = /\b(__device__|__constant__|static|extern|const|volatile|inline)\b/g;

/** Every `__constant__` variable of the preprocessed files, by name. */
export function constantSymbols(unit: Preprocessed): Map<string, ConstantSymbol> {
  const out = new Map<string, ConstantSymbol>();
  for (const file of unit.files) {
    const text = blankCommentsAndLiterals(file.view);
    for (const m of text.matchAll(DECLARATION)) {
      const type = m[1]!.replace(QUALIFIERS, ' ').replace(/\s+/g, ' ').trim();
      if (type === '') continue;
      const extents = [...m[3]!.matchAll(/\[([^\]]*)\]/g)].map((e) => unit.evaluate(e[1]!));
      const elements = extents.some((e) => e === undefined) ? undefined : extents.reduce<number>((n, e) => n * e!, 1);
      const line = text.slice(0, m.index).split('\n').length;
      out.set(m[2]!, { name: m[2]!, type, elements, at: `${file.fileName}:${line}` });
    }
  }
  return out;
}
