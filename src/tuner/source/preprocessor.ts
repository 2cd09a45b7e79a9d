/**
 * The C preprocessor as far as reading kernels needs it: a file, and the local headers it includes, seen as the
 * compiler sees them. Conditionals (#if, #ifdef, #ifndef, #elif, #elifdef, #elifndef, #else, #endif) are evaluated with
 * the macros defined so far (#define, #undef, -D), `defined`, and integer arithmetic over macros, function-like ones
 * included; the branches not compiled and the directive lines of the conditionals decided are blanked character by
 * character (every line keeps its number, every offset its meaning), and so are the uses of macros that expand to
 * nothing (`#define __global`), so that tree-sitter reads `const __global float *x` as the compiler does.
 *
 * Two worlds:
 * - closed (the tuner, one configuration): the macros are the file's and the defines given (the tunable parameters,
 *   kernel_tuner, -D options): a name defined nowhere is undefined, as the compiler sees it. A tunable parameter's own
 *   #define in the file does not count (the tuner's value overrides it, compile-sources.ts blanks it);
 * - open (the editor, the LLM: no configuration): a name the file does not define may come from the command line, so a
 *   condition on it is undetermined.
 * Names that only the compiler or the toolkit's headers define (`__CUDA_ARCH__`, `_WIN32`, `CUDART_VERSION`) are
 * undetermined in both. An undetermined conditional between declarations is left as it is (tree-sitter reads it, and
 * the kernels of every branch are found); one in the middle of a declaration (Kernel Tuner's idiom `__global__ void`
 * `#if blocks_per_sm > 0` `__launch_bounds__(...)` `#endif` `name(...)`) keeps its first branch that may hold.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { findLocalHeader } from './local-headers';
import { blankCommentsAndLiterals } from './parse-tree';

export interface PreprocessOptions {
  world: 'open' | 'closed';
  /** Macros defined before the file (the tuner's defines, -D options): name → value ('' for `-DNAME`). */
  defines?: Readonly<Record<string, string>>;
  /** Defined, with values not known here (grid_size_x: the grid of each configuration). */
  definedWithUnknownValue?: readonly string[];
  /** The tunable parameters: their #define and #undef in the file are overridden, and conditions on them are recorded. */
  tunables?: ReadonlySet<string>;
  /** Follow `#include "..."` of local headers (searched as compile-sources.ts does); left out: includes are skipped. */
  includes?: { filePath?: string; includePaths?: readonly string[]; readFile?: (absolutePath: string) => string | undefined };
}

export interface PreprocessedFile {
  /** Absolute path, when known. */
  path?: string;
  /** For messages: the main file's name, or a header's path. */
  fileName: string;
  code: string;
  /** `code` with what the compiler does not see blanked (same length, same line breaks). */
  view: string;
}

/** How a conditional was settled: its condition known, a branch chosen inside a declaration, or left as written. */
export type Resolution = 'decided' | 'chosen' | 'kept';

export interface ConditionalGroup {
  /** Index into Preprocessed.files. */
  file: number;
  /** 1-based line of its #if. */
  line: number;
  /** The #if line as written, for messages ("#if blocks_per_sm > 0"). */
  directive: string;
  /** The tunable parameters its conditions read (directly or through macros). */
  tunables: string[];
  /** Outside every function body: it can change declarations, kernels and their signatures. */
  topLevel: boolean;
  resolution: Resolution;
}

export interface Preprocessed {
  /** The main file first, then each local header in the order it is first included. */
  files: PreprocessedFile[];
  groups: ConditionalGroup[];
  /**
   * Object-like macros that expand to a CUDA execution-space keyword (cl_to_cuda.h's `#define inline __device__
   * inline`, then `#define INLINE_FUNC inline`), with their expansion: `INLINE_FUNC int f()` is device code.
   */
  spaceMacros: ReadonlyMap<string, string>;
  /** An integer expression (an array extent, `33*33`, `MAX_N * 2`) with the macros defined at the end: undefined when unknown. */
  evaluate(expression: string): number | undefined;
}

/** Preprocesses `code` (named `fileName` in messages). Synchronous: headers are read as they are included. */
export function preprocess(code: string, fileName: string, options: PreprocessOptions): Preprocessed {
  return new Preprocessor(options).run(code, fileName);
}

/** The value of one #if condition with the macros of `options` defined; undefined when it cannot be decided. */
export function evaluateCondition(condition: string, options: PreprocessOptions): number | undefined {
  const value = new Preprocessor(options).table.evaluate(condition).value;
  return value === undefined ? undefined : Number(value);
}

// ---------------------------------------------------------------------------------------------------------------------
// Macros and condition values.

type Macro =
  | { kind: 'object'; body: string }
  | { kind: 'function'; params: string[]; variadic: boolean; body: string }
  /** Defined, value unknown here (grid_size_x), or defined with a value that does not matter. */
  | { kind: 'opaque' }
  /** Defined or not depending on what is not known (a #define under an undetermined conditional). */
  | { kind: 'uncertain' }
  /** Known to be undefined (#undef). */
  | { kind: 'absent' };

/** A #if value: a 64-bit integer, or undefined where it depends on what is not known. */
type Value = bigint | undefined;

interface Token {
  kind: 'name' | 'number' | 'op' | 'unknown';
  text: string;
}

const TOKEN = /\s*(?:([A-Za-z_]\w*)|(\.?\d(?:[eEpP][+-]|[\w.])*)|('(?:\\.|[^'\\])*')|(\|\||&&|==|!=|<=|>=|<<|>>|##|[-+*/%<>!~&|^?:(),#]))/y;

function tokenize(text: string): Token[] | undefined {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (!m) return undefined; // a character the preprocessor's expressions have no use for
    at = TOKEN.lastIndex;
    if (m[1]) tokens.push({ kind: 'name', text: m[1] });
    else if (m[2]) tokens.push({ kind: 'number', text: m[2] });
    else if (m[3]) tokens.push({ kind: 'number', text: m[3] });
    else tokens.push({ kind: 'op', text: m[4]! });
  }
  return tokens;
}

/** An integer literal (suffixes u, l, ll), a character literal, or undefined for anything else (a float). */
function integerValue(text: string): Value {
  const char = /^'(\\?.)'$/.exec(text);
  if (char) return BigInt((char[1]!.length === 2 ? char[1]![1]! : char[1]!).charCodeAt(0));
  const t = text.replace(/[uUlL]+$/, '').replace(/'/g, '');
  if (/^0[xX][0-9a-fA-F]+$/.test(t) || /^0[bB][01]+$/.test(t)) return BigInt(t);
  if (/^0[0-7]*$/.test(t)) return BigInt(`0o${t.slice(1) || '0'}`);
  if (/^[1-9]\d*$/.test(t)) return BigInt(t);
  return undefined;
}

/** Names only the compiler or the toolkit's headers define: never decided from the file alone. */
function compilerName(name: string): boolean {
  return name.startsWith('_') || /^CUDART?_VERSION$/.test(name);
}

const MAX_EXPANSION_DEPTH = 64;

class MacroTable {
  private readonly macros = new Map<string, Macro>();
  /** expandsToNothing's answers since the last #define or #undef. */
  private readonly empty = new Map<string, boolean>();

  constructor(
    readonly world: 'open' | 'closed',
    readonly tunables: ReadonlySet<string>,
  ) {}

  set(name: string, macro: Macro): void {
    this.macros.set(name, macro);
    this.empty.clear();
  }

  /** Whether a name is defined: 1, 0, or undefined when it cannot be known. */
  isDefined(name: string): Value {
    const m = this.macros.get(name);
    if (!m) return this.world === 'closed' && !compilerName(name) ? 0n : undefined;
    if (m.kind === 'uncertain') return undefined;
    return m.kind === 'absent' ? 0n : 1n;
  }

  /** The value of a #if expression, and the tunable parameters it read. */
  evaluate(text: string): { value: Value; tunables: Set<string> } {
    const tunables = new Set<string>();
    const tokens = tokenize(text);
    if (!tokens) return { value: undefined, tunables };
    const expanded = this.expand(tokens, new Set(), 0, tunables);
    return { value: expanded ? new ExpressionParser(expanded, this.world).parse() : undefined, tunables };
  }

  /** The expansion of an object-like macro's body as text, as far as it can be expanded here. */
  expansionOf(body: string): string | undefined {
    const tokens = tokenize(body);
    return tokens && this.expand(tokens, new Set(), 0, new Set())?.map((t) => t.text).join(' ');
  }

  /** Whether an object-like macro expands to nothing (`#define __global`, or one defined as another such macro). */
  expandsToNothing(name: string): boolean {
    const m = this.macros.get(name);
    if (m?.kind !== 'object') return false;
    let empty = this.empty.get(name);
    if (empty === undefined) {
      const tokens = tokenize(m.body);
      const expanded = tokens && this.expand(tokens, new Set([name]), 0, new Set());
      empty = expanded !== undefined && expanded.length === 0;
      this.empty.set(name, empty);
    }
    return empty;
  }

  /** Macro expansion of #if tokens; the operands of `defined` are left alone. Undefined when it cannot be done here. */
  private expand(tokens: readonly Token[], hidden: ReadonlySet<string>, depth: number, tunables: Set<string>): Token[] | undefined {
    if (depth > MAX_EXPANSION_DEPTH) return undefined;
    const out: Token[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      if (t.kind !== 'name') {
        if (t.text === '#' || t.text === '##') return undefined; // stringizing and pasting: not evaluated here
        out.push(t);
        continue;
      }
      if (t.text === 'defined') {
        const paren = tokens[i + 1]?.text === '(';
        const operand = tokens[i + (paren ? 2 : 1)];
        if (operand?.kind !== 'name') return undefined;
        // (A tunable parameter is defined in every configuration: `defined` does not depend on its value.)
        const value = this.isDefined(operand.text);
        out.push(value === undefined ? { kind: 'unknown', text: operand.text } : { kind: 'number', text: String(value) });
        i += paren ? 3 : 1;
        continue;
      }
      if (this.tunables.has(t.text)) tunables.add(t.text);
      const m = hidden.has(t.text) ? undefined : this.macros.get(t.text);
      if (!m || m.kind === 'absent') {
        out.push(t);
      } else if (m.kind === 'opaque' || m.kind === 'uncertain') {
        out.push({ kind: 'unknown', text: t.text });
      } else if (m.kind === 'object') {
        const body = tokenize(m.body);
        const expanded = body && this.expand(body, new Set([...hidden, t.text]), depth + 1, tunables);
        if (!expanded) return undefined;
        out.push(...expanded);
      } else {
        const call = tokens[i + 1]?.text === '(' ? collectArguments(tokens, i + 1) : undefined;
        if (!call) {
          out.push(t); // a function-like macro's name without arguments is just a name
          continue;
        }
        const body = tokenize(m.body);
        if (!body || (!m.variadic && call.args.length !== Math.max(1, m.params.length) && !(m.params.length === 0 && call.args[0]!.length === 0))) return undefined;
        const substituted: Token[] = [];
        for (const b of body) {
          const p = b.kind === 'name' ? m.params.indexOf(b.text) : -1;
          if (p >= 0) {
            const arg = this.expand(call.args[p] ?? [], hidden, depth + 1, tunables);
            if (!arg) return undefined;
            substituted.push(...arg);
          } else if (b.kind === 'name' && b.text === '__VA_ARGS__' && m.variadic) {
            const rest = call.args.slice(m.params.length).flatMap((a, k) => (k > 0 ? [{ kind: 'op' as const, text: ',' }, ...a] : a));
            substituted.push(...rest);
          } else {
            substituted.push(b);
          }
        }
        const expanded = this.expand(substituted, new Set([...hidden, t.text]), depth + 1, tunables);
        if (!expanded) return undefined;
        out.push(...expanded);
        i = call.end;
      }
    }
    return out;
  }
}

/** The arguments of a call whose `(` is at `open`, split at top-level commas; `end` is the index of its `)`. */
function collectArguments(tokens: readonly Token[], open: number): { args: Token[][]; end: number } | undefined {
  const args: Token[][] = [[]];
  let depth = 0;
  for (let i = open + 1; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      if (depth === 0) return { args, end: i };
      depth--;
    } else if (t.text === ',' && depth === 0) {
      args.push([]);
      continue;
    }
    args.at(-1)!.push(t);
  }
  return undefined;
}

const BINARY: Record<string, { precedence: number; apply: (a: bigint, b: bigint) => bigint | undefined }> = {
  '*': { precedence: 10, apply: (a, b) => a * b },
  '/': { precedence: 10, apply: (a, b) => (b === 0n ? undefined : a / b) },
  '%': { precedence: 10, apply: (a, b) => (b === 0n ? undefined : a % b) },
  '+': { precedence: 9, apply: (a, b) => a + b },
  '-': { precedence: 9, apply: (a, b) => a - b },
  '<<': { precedence: 8, apply: (a, b) => BigInt.asIntN(64, a << b) },
  '>>': { precedence: 8, apply: (a, b) => a >> b },
  '<': { precedence: 7, apply: (a, b) => BigInt(a < b) },
  '>': { precedence: 7, apply: (a, b) => BigInt(a > b) },
  '<=': { precedence: 7, apply: (a, b) => BigInt(a <= b) },
  '>=': { precedence: 7, apply: (a, b) => BigInt(a >= b) },
  '==': { precedence: 6, apply: (a, b) => BigInt(a === b) },
  '!=': { precedence: 6, apply: (a, b) => BigInt(a !== b) },
  '&': { precedence: 5, apply: (a, b) => a & b },
  '^': { precedence: 4, apply: (a, b) => a ^ b },
  '|': { precedence: 3, apply: (a, b) => a | b },
};

/** A #if expression over expanded tokens; `&&`, `||` and `?:` decide on a known operand whatever the other. */
class ExpressionParser {
  private at = 0;
  private malformed = false;

  constructor(
    private readonly tokens: readonly Token[],
    private readonly world: 'open' | 'closed',
  ) {}

  parse(): Value {
    const v = this.conditional();
    return this.malformed || this.at !== this.tokens.length ? undefined : v;
  }

  private peek(): string | undefined {
    return this.tokens[this.at]?.text;
  }

  private conditional(): Value {
    const condition = this.logical(1);
    if (this.peek() !== '?') return condition;
    this.at++;
    const yes = this.conditional();
    if (this.peek() !== ':') return this.fail();
    this.at++;
    const no = this.conditional();
    if (condition === undefined) return yes === no ? yes : undefined;
    return condition !== 0n ? yes : no;
  }

  /** || (level 1) and && (level 2). */
  private logical(level: 1 | 2): Value {
    const op = level === 1 ? '||' : '&&';
    let v = level === 1 ? this.logical(2) : this.binary(3);
    while (this.peek() === op) {
      this.at++;
      const r = level === 1 ? this.logical(2) : this.binary(3);
      const decisive = level === 1 ? (x: Value) => x !== undefined && x !== 0n : (x: Value) => x === 0n;
      if (decisive(v) || decisive(r)) v = level === 1 ? 1n : 0n;
      else v = v === undefined || r === undefined ? undefined : level === 1 ? 0n : 1n;
    }
    return v;
  }

  private binary(minPrecedence: number): Value {
    let left = this.unary();
    for (;;) {
      const op = BINARY[this.peek() ?? ''];
      if (!op || op.precedence < minPrecedence) return left;
      this.at++;
      const right = this.binary(op.precedence + 1);
      left = left === undefined || right === undefined ? undefined : op.apply(left, right);
    }
  }

  private unary(): Value {
    const t = this.tokens[this.at++];
    if (!t) return this.fail();
    if (t.kind === 'unknown') return undefined;
    if (t.kind === 'number') return integerValue(t.text);
    if (t.kind === 'name') {
      if (t.text === 'true') return 1n;
      if (t.text === 'false') return 0n;
      // A name left after expansion is not a macro: 0 to the compiler, unknown where it may be defined elsewhere.
      return this.world === 'closed' && !compilerName(t.text) ? 0n : undefined;
    }
    switch (t.text) {
      case '(': {
        const v = this.conditional();
        if (this.tokens[this.at++]?.text !== ')') return this.fail();
        return v;
      }
      case '!': {
        const v = this.unary();
        return v === undefined ? undefined : BigInt(v === 0n);
      }
      case '-': {
        const v = this.unary();
        return v === undefined ? undefined : -v;
      }
      case '+':
        return this.unary();
      case '~': {
        const v = this.unary();
        return v === undefined ? undefined : ~v;
      }
      default:
        return this.fail();
    }
  }

  private fail(): undefined {
    this.malformed = true;
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Directives.

interface Directive {
  /** [start, end) of the logical line (continuations included), without its line break. */
  start: number;
  end: number;
  /** The keyword (if, ifdef, define, ...), '' for a null directive. */
  keyword: string;
  /** The rest of the line, comments blanked, continuations joined. */
  rest: string;
  /** The same, literals kept (the spelling of an #include). */
  restWithLiterals: string;
  line: number;
}

/** Every directive line of a file, in order. */
function directivesOf(code: string, blanked: string, withLiterals: string): Directive[] {
  const out: Directive[] = [];
  let line = 0;
  let from = 0;
  for (;;) {
    const eol = nextLineEnd(code, from);
    const text = blanked.slice(from, eol);
    const m = /^[ \t]*#[ \t]*([A-Za-z_]\w*)?/.exec(text);
    if (m) {
      let end = eol;
      let lines = 1;
      while (/\\\r?$/.test(code.slice(from, end)) && end < code.length) {
        end = nextLineEnd(code, end + 1);
        lines++;
      }
      const join = (s: string) => s.slice(from + m[0].length, end).replace(/\\\r?\n/g, ' ');
      out.push({ start: from, end, keyword: m[1] ?? '', rest: join(blanked), restWithLiterals: join(withLiterals), line: line + 1 });
      line += lines;
      from = end + 1;
    } else {
      line++;
      from = eol + 1;
    }
    if (from > code.length) break;
  }
  return out;
}

function nextLineEnd(code: string, from: number): number {
  const i = code.indexOf('\n', from);
  return i < 0 ? code.length : i;
}

interface Frame {
  resolution: Resolution;
  /** The region around the conditional is compiled (or may be, under a kept conditional). */
  parentLive: boolean;
  /** The current branch is compiled (or may be). */
  live: boolean;
  /** A branch has been taken: the later ones are not compiled. */
  taken: boolean;
  bodyStart: number;
  group: ConditionalGroup;
}

const CONDITIONAL_START = new Set(['if', 'ifdef', 'ifndef']);
const CONDITIONAL_NEXT = new Set(['elif', 'elifdef', 'elifndef', 'else']);
/** Words that may stand between a function's `)` and its body's `{`. */
const BEFORE_BODY = /(?:\b(?:const|volatile|noexcept|override|final|mutable|__restrict__)\s*)+$/;
const MAX_INCLUDE_DEPTH = 32;

class Preprocessor {
  readonly table: MacroTable;
  private readonly files: PreprocessedFile[] = [];
  private readonly groups: ConditionalGroup[] = [];
  private readonly onceFiles = new Set<string>();
  private readonly spaceMacros = new Map<string, string>();

  constructor(private readonly options: PreprocessOptions) {
    this.table = new MacroTable(options.world, options.tunables ?? new Set());
    for (const [name, value] of Object.entries(options.defines ?? {})) this.table.set(name, { kind: 'object', body: value });
    for (const name of options.definedWithUnknownValue ?? []) this.table.set(name, { kind: 'opaque' });
  }

  run(code: string, fileName: string): Preprocessed {
    const filePath = this.options.includes?.filePath ? path.resolve(this.options.includes.filePath) : undefined;
    this.file(code, fileName, filePath, true, 0);
    const evaluate = (expression: string) => {
      const value = this.table.evaluate(expression).value;
      return value === undefined ? undefined : Number(value);
    };
    return { files: this.files, groups: this.groups, spaceMacros: this.spaceMacros, evaluate };
  }

  /** Preprocesses one file; `certain`: not under a conditional that was left undetermined. */
  private file(code: string, fileName: string, filePath: string | undefined, certain: boolean, depth: number): void {
    const index = this.files.length;
    const entry: PreprocessedFile = { ...(filePath && { path: filePath }), fileName, code, view: code };
    this.files.push(entry);
    const blanked = blankCommentsAndLiterals(code);
    const withLiterals = blankCommentsAndLiterals(code, { literals: false });
    const blank: [number, number][] = [];
    const stack: Frame[] = [];
    /** Function bodies are braces whose `{` follows a `)`; other braces (namespaces, classes, initialisers) are not. */
    const braces: boolean[] = [];
    let last = '';
    let codeFrom = 0;
    const live = () => stack.every((f) => f.live);
    const sure = () => certain && !stack.some((f) => f.resolution === 'kept');

    /** The code between two directives: braces, the last significant character, empty macros blanked. */
    const scanCode = (from: number, to: number) => {
      if (from >= to || !live()) return;
      const text = blanked.slice(from, to);
      for (const m of text.matchAll(/[A-Za-z_]\w*|\S/g)) {
        const c = m[0];
        const at = from + m.index;
        if (c === '{') braces.push(opensFunctionBody(blanked, at));
        else if (c === '}') braces.pop();
        else if (sure() && this.table.expandsToNothing(c)) blank.push([at, at + c.length]);
        last = c;
      }
    };

    for (const d of directivesOf(code, blanked, withLiterals)) {
      scanCode(codeFrom, d.start);
      codeFrom = d.end;
      if (CONDITIONAL_START.has(d.keyword)) {
        const parentLive = live();
        const group: ConditionalGroup = {
          file: index,
          line: d.line,
          directive: `#${d.keyword} ${collapse(d.rest)}`,
          tunables: [],
          topLevel: !braces.includes(true),
          resolution: 'decided',
        };
        const frame: Frame = { resolution: 'decided', parentLive, live: false, taken: false, bodyStart: d.end, group };
        if (parentLive) {
          this.groups.push(group);
          this.enter(frame, this.condition(d, group), d, blank, last);
        }
        stack.push(frame);
        continue;
      }
      const frame = stack.at(-1);
      if (CONDITIONAL_NEXT.has(d.keyword) || d.keyword === 'endif') {
        if (!frame) continue; // unbalanced: the compiler reports it
        if (frame.parentLive && !frame.live) blank.push([frame.bodyStart, d.start]);
        frame.bodyStart = d.end;
        if (d.keyword === 'endif') {
          stack.pop();
          if (frame.parentLive && frame.resolution !== 'kept') blank.push([d.start, d.end]);
          continue;
        }
        if (!frame.parentLive) continue;
        if (frame.resolution === 'kept') {
          frame.live = true;
          if (d.keyword !== 'else') this.condition(d, frame.group);
          continue;
        }
        blank.push([d.start, d.end]);
        if (frame.taken) {
          frame.live = false;
          continue;
        }
        const value = d.keyword === 'else' ? 1n : this.condition(d, frame.group);
        if (value === undefined && !this.midDeclaration(last)) {
          // From here on the conditional depends on what is not known: the rest is left for tree-sitter as an #if.
          blank.pop();
          frame.resolution = frame.group.resolution = 'kept';
          frame.live = true;
          // The branches before it were blanked with their #if: `#elif X` becomes `#  if X`, in the same columns.
          const el = code.indexOf('el', d.start);
          blank.push([el, el + 2]);
          continue;
        }
        this.enter(frame, value, d, blank, last);
        continue;
      }
      if (!live()) continue;
      this.directive(d, index, sure(), depth);
    }
    scanCode(codeFrom, code.length);
    // Unterminated conditionals: the compiler reports them; their dead branches are still not what it compiles.
    for (const frame of stack) if (frame.parentLive && !frame.live) blank.push([frame.bodyStart, code.length]);
    entry.view = blankRanges(code, blank);
  }

  /** Settles a conditional at its first branch. */
  private enter(frame: Frame, value: Value, d: Directive, blank: [number, number][], last: string): void {
    if (value !== undefined) {
      frame.live = value !== 0n;
      frame.taken = frame.live;
      blank.push([d.start, d.end]);
    } else if (this.midDeclaration(last)) {
      frame.resolution = frame.group.resolution = 'chosen';
      frame.live = frame.taken = true;
      blank.push([d.start, d.end]);
    } else {
      frame.resolution = frame.group.resolution = 'kept';
      frame.live = true;
    }
  }

  /** Whether the code before a directive is in the middle of a declaration (not after `;`, `{`, `}` or at the start). */
  private midDeclaration(last: string): boolean {
    return last !== '' && !['{', '}', ';', ':'].includes(last);
  }

  /** The value of an #if, #ifdef, #ifndef or #elif condition; records the tunable parameters it reads. */
  private condition(d: Directive, group: ConditionalGroup): Value {
    let result: { value: Value; tunables: Set<string> };
    const name = /^\s*([A-Za-z_]\w*)/.exec(d.rest)?.[1];
    if (d.keyword.endsWith('ifdef') || d.keyword.endsWith('ifndef')) {
      const defined = name === undefined ? undefined : this.table.isDefined(name);
      const value = defined === undefined ? undefined : d.keyword.endsWith('ndef') ? BigInt(defined === 0n) : defined;
      result = { value, tunables: new Set() }; // a tunable parameter is defined in every configuration
    } else {
      result = this.table.evaluate(d.rest);
    }
    for (const t of result.tunables) if (!group.tunables.includes(t)) group.tunables.push(t);
    return result.value;
  }

  /** #define, #undef, #include and #pragma once in compiled code. */
  private directive(d: Directive, file: number, certain: boolean, depth: number): void {
    const tunables = this.table.tunables;
    if (d.keyword === 'define') {
      const m = /^\s*([A-Za-z_]\w*)(\(([^)]*)\))?(.*)$/s.exec(d.restWithLiterals);
      if (!m || (this.options.world === 'closed' && tunables.has(m[1]!))) return;
      const body = m[4]!.trim();
      let macro: Macro;
      if (m[2] !== undefined) {
        const params = m[3]!.split(',').map((p) => p.trim()).filter((p) => p !== '');
        const variadic = params.at(-1) === '...';
        macro = { kind: 'function', params: variadic ? params.slice(0, -1) : params, variadic, body };
      } else {
        macro = { kind: 'object', body };
        const expansion = this.table.expansionOf(body);
        if (expansion && /\b__(global|device|host)__\b/.test(expansion)) this.spaceMacros.set(m[1]!, expansion);
      }
      this.table.set(m[1]!, certain ? macro : { kind: 'uncertain' });
    } else if (d.keyword === 'undef') {
      const name = /^\s*([A-Za-z_]\w*)/.exec(d.rest)?.[1];
      if (!name || (this.options.world === 'closed' && tunables.has(name))) return;
      this.table.set(name, certain ? { kind: 'absent' } : { kind: 'uncertain' });
    } else if (d.keyword === 'pragma' && /^\s*once\b/.test(d.rest)) {
      const own = this.files[file]!.path;
      if (own) this.onceFiles.add(own);
    } else if (d.keyword === 'include') {
      this.include(d, file, certain, depth);
    }
  }

  private include(d: Directive, file: number, certain: boolean, depth: number): void {
    const includes = this.options.includes;
    const m = /^\s*(?:"([^"]+)"|<([^>]+)>)/.exec(d.restWithLiterals);
    if (!includes || !m || depth >= MAX_INCLUDE_DEPTH) return;
    const including = this.files[file]!.path;
    const found = findLocalHeader({ spelling: (m[1] ?? m[2])!, system: m[2] !== undefined }, including ? path.dirname(including) : undefined, includes.includePaths ?? []);
    if (!found || this.onceFiles.has(found)) return;
    const text = (includes.readFile ?? readIfExists)(found);
    if (text === undefined) return;
    this.file(text, found, found, certain, depth + 1);
  }
}

/** Whether the `{` at `at` opens a function body: it follows a `)`, perhaps with qualifiers between (`) const {`). */
function opensFunctionBody(blanked: string, at: number): boolean {
  const before = blanked.slice(Math.max(0, at - 400), at).trimEnd().replace(BEFORE_BODY, '').trimEnd();
  return before.endsWith(')');
}

/** Replaces the ranges by spaces, line breaks kept. */
function blankRanges(code: string, ranges: readonly [number, number][]): string {
  if (ranges.length === 0) return code;
  const chars = code.split('');
  for (const [from, to] of ranges) {
    for (let i = from; i < to && i < chars.length; i++) if (chars[i] !== '\n' && chars[i] !== '\r') chars[i] = ' ';
  }
  return chars.join('');
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function readIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
