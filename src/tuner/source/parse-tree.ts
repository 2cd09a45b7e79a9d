// The tree-sitter-cuda parse of a CUDA file (web-tree-sitter, WASM) and the text pre-pass it needs: comments and
// literals blanked, the CUDA attributes the grammar cannot read masked, positions unchanged.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as TreeSitter from 'web-tree-sitter';

export type Node = TreeSitter.Node;

// ---------------------------------------------------------------------------------------------------------------------
// Runtime: one Parser, created on first use.

const WASM_FILES = {
  runtime: { file: 'web-tree-sitter.wasm', pkg: 'web-tree-sitter' },
  cuda: { file: 'tree-sitter-cuda.wasm', pkg: 'tree-sitter-cuda' },
} as const;

/**
 * Beside the bundle or in its parent folder (scripts/build.mjs copies both files into dist/, and the GPU tests and
 * benchmarks are bundled one level below it), else from the installed package.
 */
function locateWasm({ file, pkg }: { file: string; pkg: string }): string {
  const beside = path.join(__dirname, file);
  for (const candidate of [beside, path.join(__dirname, '..', file)]) if (fs.existsSync(candidate)) return candidate;
  try {
    return require.resolve(`${pkg}/${file}`);
  } catch {
    throw new Error(`${file} not found: looked beside the bundle (${beside}) and in the ${pkg} package`);
  }
}

let parserPromise: Promise<TreeSitter.Parser> | undefined;

function getParser(): Promise<TreeSitter.Parser> {
  parserPromise ??= (async () => {
    // `require`, not `import`: esbuild resolves an import with the package's "import" condition, whose ES build needs
    // import.meta.url (empty in our CommonJS bundle); require selects web-tree-sitter.cjs, under vitest too.
    const { Parser, Language } = require('web-tree-sitter') as typeof TreeSitter;
    const runtimeWasm = locateWasm(WASM_FILES.runtime);
    await Parser.init({ locateFile: () => runtimeWasm });
    const cuda = await Language.load(locateWasm(WASM_FILES.cuda));
    return new Parser().setLanguage(cuda);
  })();
  // A failed start is not cached, so that a later call reports the cause again instead of a stale rejection.
  parserPromise.catch(() => {
    parserPromise = undefined;
  });
  return parserPromise;
}

// ---------------------------------------------------------------------------------------------------------------------
// Pre-pass: blank comments and literals, then mask the CUDA attributes the grammar cannot read.

/**
 * The source with comments and string/char literals replaced by spaces (newlines kept), so that positions still match;
 * with `literals: false` the literals are kept (a macro's body, an #include's spelling).
 */
export function blankCommentsAndLiterals(code: string, options: { literals?: boolean } = {}): string {
  const blankLiterals = options.literals ?? true;
  const parts: string[] = [];
  let last = 0;
  const blank = (from: number, to: number) => {
    parts.push(code.slice(last, from), code.slice(from, to).replace(/[^\r\n]/g, ' '));
    last = to;
  };
  const n = code.length;
  let i = 0;
  while (i < n) {
    const c = code[i];
    if (c === '/' && code[i + 1] === '/') {
      const end = code.indexOf('\n', i);
      const to = end < 0 ? n : end;
      blank(i, to);
      i = to;
    } else if (c === '/' && code[i + 1] === '*') {
      const end = code.indexOf('*/', i + 2);
      const to = end < 0 ? n : end + 2;
      blank(i, to);
      i = to;
    } else if (c === '"' || (c === "'" && !isDigitSeparator(code, i))) {
      let j = i + 1;
      while (j < n && code[j] !== c && code[j] !== '\n') j += code[j] === '\\' ? 2 : 1;
      const to = j < n && code[j] === c ? j + 1 : Math.min(j, n);
      if (blankLiterals) blank(i, to);
      i = to;
    } else {
      i++;
    }
  }
  parts.push(code.slice(last));
  return parts.join('');
}

/** C++14 digit separators (`1'000'000`, `0xFF'FF`): the token before the quote starts with a digit. */
function isDigitSeparator(code: string, quote: number): boolean {
  let j = quote;
  while (j > 0 && /[0-9A-Za-z_'.]/.test(code[j - 1] ?? '')) j--;
  return j < quote && /[0-9]/.test(code[j] ?? '');
}

export interface CudaAttribute {
  keyword: string;
  args: string[];
  /** Normalised text, e.g. "__launch_bounds__(256, 2)". */
  text: string;
  start: number;
  end: number;
}

/**
 * tree-sitter-cuda 0.21 reads `__launch_bounds__` with at most two arguments, and does not know `__cluster_dims__`,
 * `__maxnreg__` or `__align__` at all: it then splits a signature into an unrelated declaration and a function without
 * `__global__` (with no ERROR node), and reports `__shared__ __align__(16) float t[32];` as a syntax error. So these
 * attributes are read here and replaced by spaces before parsing (positions unchanged).
 */
const ATTRIBUTE_START = /\b(__launch_bounds__|__cluster_dims__|__maxnreg__|__align__)\s*\(/g;

function maskCudaAttributes(code: string, blanked: string): { masked: string; attributes: CudaAttribute[] } {
  const attributes: CudaAttribute[] = [];
  for (const m of blanked.matchAll(ATTRIBUTE_START)) {
    const start = m.index;
    const open = start + m[0].length - 1;
    const close = matchingParen(blanked, open);
    if (close < 0) continue; // left for the grammar, which then reports the error
    const args = splitTopLevel(blanked.slice(open + 1, close));
    const keyword = m[1] ?? '';
    attributes.push({ keyword, args, text: `${keyword}(${args.join(', ')})`, start, end: close + 1 });
  }
  let masked = '';
  let last = 0;
  for (const a of attributes) {
    masked += code.slice(last, a.start) + code.slice(a.start, a.end).replace(/[^\r\n]/g, ' ');
    last = a.end;
  }
  return { masked: masked + code.slice(last), attributes };
}

/** Index of the `)` closing the `(` at `open`, or -1 when a `;`, brace or the end comes first. */
function matchingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') {
      if (--depth === 0) return i;
    } else if (c === ';' || c === '{' || c === '}') return -1;
  }
  return -1;
}

/** Comma-separated arguments at bracket depth 0, whitespace collapsed; "" gives []. */
function splitTopLevel(text: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = text[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if ((c === ',' && depth === 0) || i === text.length) {
      args.push(collapseSpace(text.slice(from, i)));
      from = i + 1;
    }
  }
  return args.length === 1 && args[0] === '' ? [] : args;
}

export function collapseSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Whitespace-insensitive type text: "thrust::complex< float >" → "thrust::complex<float>", "long  long" → "long long". */
export function normalizeType(text: string): string {
  return collapseSpace(text)
    .replace(/\s*([()<>[\]:*&,])\s*/g, '$1')
    .replace(/,/g, ', ');
}

/**
 * Parses `code` as parseKernels (kernel-parser.ts) does (the CUDA attributes the grammar cannot read masked, positions
 * unchanged) and hands the tree to `use`, with the source whose comments and literals are blanked; the tree is freed
 * afterwards.
 */
export async function withParseTree<T>(code: string, use: (root: Node, blanked: string, attributes: readonly { start: number; end: number }[]) => T): Promise<T> {
  const parser = await getParser();
  const blanked = blankCommentsAndLiterals(code);
  const { masked, attributes } = maskCudaAttributes(code, blanked);
  const tree = parser.parse(masked);
  if (!tree) throw new Error('tree-sitter returned no tree');
  try {
    return use(tree.rootNode, blanked, attributes);
  } finally {
    tree.delete(); // WASM memory is not garbage-collected
  }
}
