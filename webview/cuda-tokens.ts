/**
 * A small CUDA C++ tokenizer for highlighting diffs in the panel: line by line (a diff shows lines out of context),
 * carrying only "inside a block comment" from one line to the next. Good enough for colouring; it never decides anything.
 */
export type TokenKind = 'keyword' | 'type' | 'cuda' | 'preprocessor' | 'comment' | 'string' | 'number' | 'identifier' | 'operator' | 'space';

export interface Token {
  kind: TokenKind;
  text: string;
}

const KEYWORDS = new Set(
  'if else for while do switch case default break continue return goto sizeof typedef struct class union enum template typename namespace using static const constexpr volatile extern inline auto register public private protected virtual operator new delete this true false nullptr static_cast reinterpret_cast const_cast dynamic_cast static_assert decltype noexcept'.split(' '),
);
const TYPES = new Set(
  'void bool char short int long float double unsigned signed size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t half __half __nv_bfloat16 dim3 float2 float3 float4 double2 double4 int2 int3 int4 uint2 uint3 uint4'.split(' '),
);
const CUDA = new Set(
  '__global__ __device__ __host__ __shared__ __constant__ __restrict__ __launch_bounds__ __forceinline__ __noinline__ __syncthreads __syncwarp __ldg threadIdx blockIdx blockDim gridDim warpSize atomicAdd atomicMax atomicMin atomicCAS __shfl_sync __shfl_down_sync __shfl_xor_sync'.split(
    ' ',
  ),
);

export interface LineTokens {
  tokens: Token[];
  /** Whether the line ends inside a block comment. */
  inComment: boolean;
}

export function tokenizeLine(line: string, inComment = false): LineTokens {
  const tokens: Token[] = [];
  const push = (kind: TokenKind, text: string) => {
    const last = tokens.at(-1);
    if (last && last.kind === kind && (kind === 'space' || kind === 'comment' || kind === 'operator')) last.text += text;
    else tokens.push({ kind, text });
  };
  let i = 0;
  if (inComment) {
    const end = line.indexOf('*/');
    if (end === -1) return { tokens: line ? [{ kind: 'comment', text: line }] : [], inComment: true };
    push('comment', line.slice(0, end + 2));
    i = end + 2;
  }
  if (/^\s*#/.test(line.slice(i)) && tokens.length === 0) {
    // A directive: the whole line, except a trailing comment.
    const comment = line.indexOf('//', i);
    const body = comment === -1 ? line.slice(i) : line.slice(i, comment);
    push('preprocessor', body);
    if (comment !== -1) push('comment', line.slice(comment));
    return { tokens, inComment: false };
  }
  while (i < line.length) {
    const rest = line.slice(i);
    const c = line[i]!;
    if (rest.startsWith('//')) {
      push('comment', rest);
      break;
    }
    if (rest.startsWith('/*')) {
      const end = line.indexOf('*/', i + 2);
      if (end === -1) {
        push('comment', rest);
        return { tokens, inComment: true };
      }
      push('comment', line.slice(i, end + 2));
      i = end + 2;
      continue;
    }
    let m: RegExpMatchArray | null;
    if ((m = rest.match(/^\s+/))) push('space', m[0]);
    else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < line.length && line[j] !== c) j += line[j] === '\\' ? 2 : 1;
      push('string', line.slice(i, Math.min(j + 1, line.length)));
      m = [line.slice(i, Math.min(j + 1, line.length))];
    } else if ((m = rest.match(/^(0[xX][0-9a-fA-F']+|(\d[\d']*\.?\d*|\.\d+)([eE][+-]?\d+)?)[uUlLfF]*/))) push('number', m[0]);
    else if ((m = rest.match(/^[A-Za-z_]\w*/))) {
      const word = m[0];
      push(CUDA.has(word) ? 'cuda' : KEYWORDS.has(word) ? 'keyword' : TYPES.has(word) ? 'type' : 'identifier', word);
    } else {
      m = [c];
      push('operator', c);
    }
    i += m[0].length;
  }
  return { tokens, inComment: false };
}

/** Tokenizes consecutive lines of one text, carrying block comments across lines. */
export function tokenizeLines(lines: readonly string[]): Token[][] {
  let inComment = false;
  return lines.map((line) => {
    const result = tokenizeLine(line, inComment);
    inComment = result.inComment;
    return result.tokens;
  });
}
