/**
 * CUDA highlighting for every code view of the panel (diffs, signatures, launch lines), from highlight.js's C++ grammar
 * with CUDA's qualifiers, built-ins and vector types added. Through lowlight, which returns a syntax tree instead of
 * HTML: the DOM is built with text nodes only, so code written by an LLM is never parsed as markup.
 *
 * Why highlight.js and not shiki (measured with esbuild --minify, see BENCHMARKS.md): highlight.js core + C++ is
 * 30 KB; shiki's C++ grammar with its JavaScript regex engine is 1 MB, and shiki's Oniguruma engine is WebAssembly,
 * which the panel's CSP (no 'wasm-unsafe-eval') refuses to compile. highlight.js uses plain RegExps: no eval.
 * Colours come from CSS classes (`hljs-keyword`, ...) that media/panel.css maps to the VS Code theme's variables.
 *
 * Pure (tokens); webview/highlight-dom.ts turns them into DOM. No webview API: the HTML report uses both as they are.
 */
import cpp from 'highlight.js/lib/languages/cpp';
import { createLowlight } from 'lowlight';

const CUDA_KEYWORDS = ['__global__', '__device__', '__host__', '__shared__', '__constant__', '__managed__', '__restrict__', '__launch_bounds__', '__forceinline__', '__noinline__', '__grid_constant__'];
const CUDA_TYPES = [
  'dim3', 'half', '__half', '__half2', '__nv_bfloat16', '__nv_bfloat162', 'cudaStream_t', 'cudaError_t',
  ...['char', 'uchar', 'short', 'ushort', 'int', 'uint', 'long', 'ulong', 'longlong', 'ulonglong', 'float', 'double'].flatMap((t) => [1, 2, 3, 4].map((n) => `${t}${n}`)),
];
const CUDA_BUILT_INS = [
  'threadIdx', 'blockIdx', 'blockDim', 'gridDim', 'warpSize',
  '__syncthreads', '__syncthreads_count', '__syncthreads_and', '__syncthreads_or', '__syncwarp', '__threadfence', '__threadfence_block',
  '__ldg', '__ldcg', '__ldcs', '__stcg', '__stcs', '__shfl_sync', '__shfl_up_sync', '__shfl_down_sync', '__shfl_xor_sync',
  '__ballot_sync', '__any_sync', '__all_sync', '__activemask', '__popc', '__clz', '__ffs', '__fmaf_rn', '__expf', '__logf', '__sinf', '__cosf',
  'atomicAdd', 'atomicSub', 'atomicExch', 'atomicMin', 'atomicMax', 'atomicInc', 'atomicDec', 'atomicCAS', 'atomicAnd', 'atomicOr', 'atomicXor',
];

type LanguageFn = typeof cpp;

/** highlight.js's C++ grammar with CUDA's words added (the grammar builds fresh keyword lists on every call). */
const cuda: LanguageFn = (hljs) => {
  const language = cpp(hljs);
  const keywords = language.keywords as Record<'keyword' | 'type' | 'built_in', string[]>;
  keywords.keyword.push(...CUDA_KEYWORDS);
  keywords.type.push(...CUDA_TYPES);
  keywords.built_in.push(...CUDA_BUILT_INS);
  return { ...language, name: 'CUDA', aliases: ['cu', 'cuh'] };
};

const lowlight = createLowlight({ cuda });

/** A run of text and the highlight.js classes around it (outermost first; empty for plain text). */
export interface CodeToken {
  text: string;
  classes: string[];
}

type Tree = ReturnType<typeof lowlight.highlight>;
type TreeNode = Tree['children'][number];

/**
 * Tokens of each line of `lines`, highlighted as one text so that block comments and strings carry from line to line.
 * Joining a line's token texts gives the line back, character for character.
 */
export function highlightTokens(lines: readonly string[]): CodeToken[][] {
  if (lines.length === 0) return [];
  const out: CodeToken[][] = [[]];
  const walk = (nodes: readonly TreeNode[], classes: string[]): void => {
    for (const node of nodes) {
      if (node.type === 'text') {
        node.value.split('\n').forEach((part, i) => {
          if (i > 0) out.push([]);
          if (part) out.at(-1)!.push({ text: part, classes });
        });
      } else if (node.type === 'element') {
        const own = Array.isArray(node.properties.className) ? node.properties.className.map(String) : [];
        walk(node.children, [...classes, ...own]);
      }
    }
  };
  walk(lowlight.highlight('cuda', lines.join('\n')).children, []);
  return out;
}
