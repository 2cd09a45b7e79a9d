// One small, safe expression language for everything the user or the LLM writes as a formula: restrictions, grid divisors,
// problem sizes, input lengths. Python's syntax and semantics for the subset Kernel Tuner users write (floor `//` and `%`,
// true `/`, right-associative `**` binding tighter than unary minus, chained comparisons, `and`/`or` returning an operand),
// plus `&&`, `||`, `!` as aliases of `and`, `or`, `not` with Python's precedence. Expressions are parsed to an AST and
// compiled to closures over a name → value environment; nothing is ever handed to eval or Function, and every construct
// outside the language (attribute access, other calls, strings, brackets, assignment) is a syntax error.

export type Value = number | boolean | string;
/** Names an expression may read. Only own properties count, so `constructor` or `__proto__` never resolve to built-ins. */
export type Env = Readonly<Record<string, Value>>;

export const MAX_EXPRESSION_LENGTH = 10_000;
export const MAX_NESTING_DEPTH = 64;
/** Largest |exponent| accepted by `**` (2**1024 already overflows a double): refuses `2**99999` before computing it. */
export const MAX_EXPONENT = 1024;
const ALLOWED_FUNCTIONS = ['min', 'max'] as const;
type FunctionName = (typeof ALLOWED_FUNCTIONS)[number];

export type CompareOp = '<' | '<=' | '>' | '>=' | '==' | '!=';
export type ArithOp = '+' | '-' | '*' | '/' | '//' | '%' | '**';

export type Expr =
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'bool'; value: boolean; pos: number }
  | { kind: 'name'; name: string; pos: number }
  | { kind: 'unary'; op: '-' | '+' | 'not'; operand: Expr; pos: number }
  | { kind: 'binary'; op: ArithOp; left: Expr; right: Expr; pos: number }
  | { kind: 'logical'; op: 'and' | 'or'; left: Expr; right: Expr; pos: number }
  | { kind: 'compare'; ops: CompareOp[]; operands: Expr[]; pos: number }
  | { kind: 'call'; fn: FunctionName; args: Expr[]; pos: number };

/** Shows where in the source a problem is: the source (a window of it, when long) with a caret under the position. */
function caretLine(source: string, pos: number): string {
  const start = Math.max(0, pos - 40);
  const end = Math.min(source.length, pos + 40);
  const prefix = start > 0 ? '...' : '';
  const line = prefix + source.slice(start, end).replace(/\s/g, ' ') + (end < source.length ? '...' : '');
  return `  ${line}\n  ${' '.repeat(prefix.length + pos - start)}^`;
}

export class ExpressionSyntaxError extends Error {
  override name = 'ExpressionSyntaxError';
  constructor(
    readonly reason: string,
    readonly source: string,
    readonly position: number,
  ) {
    super(`${reason} (at position ${position})\n${caretLine(source, position)}`);
  }
}

export type EvalErrorCode = 'division_by_zero' | 'type' | 'overflow' | 'domain';

export class ExpressionEvalError extends Error {
  override name = 'ExpressionEvalError';
  constructor(
    readonly code: EvalErrorCode,
    readonly reason: string,
    readonly source: string,
    readonly position: number,
  ) {
    super(`${reason} in "${source.length > 200 ? `${source.slice(0, 200)}...` : source}"\n${caretLine(source, position)}`);
  }
}

/** The default error for a name that is neither in the environment nor among the known names. */
export class UnknownNameError extends Error {
  override name = 'UnknownNameError';
  constructor(
    readonly unknownName: string,
    readonly knownNames: readonly string[],
    readonly source: string,
  ) {
    super(unknownNameMessage(unknownName, knownNames, source));
  }
}

/** "unknown name 'bx' in "bx > 4"; did you mean 'block_size_x'? known names: a, b". Shared by every caller-specific error. */
export function unknownNameMessage(name: string, known: readonly string[], source: string): string {
  const suggestion = closestName(name, known);
  const knownText = known.length > 0 ? `known names: ${known.join(', ')}` : 'no names are defined here';
  return `unknown name '${name}' in "${source}"${suggestion ? `; did you mean '${suggestion}'?` : ''}; ${knownText}`;
}

function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  // Short names differ by one edit at most (cols is not a typo of rows); longer ones by a quarter of their length.
  let bestDistance = Math.max(1, Math.floor(name.length / 4)) + 1;
  for (const candidate of known) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

// ---------------------------------------------------------------- tokenizer

type Token =
  | { type: 'number'; value: number; pos: number }
  | { type: 'name'; value: string; pos: number }
  | { type: 'op'; value: string; pos: number }
  | { type: 'end'; pos: number };

// Longest first, so "**" wins over "*" and "<=" over "<".
const OPERATORS = ['**', '//', '<=', '>=', '==', '!=', '&&', '||', '+', '-', '*', '/', '%', '<', '>', '!', '(', ')', ','];
const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;
const NUMBER = /^(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?/;

/** Characters outside the language, with the reason a user should read. */
function rejectCharacter(source: string, pos: number): never {
  const c = source[pos]!;
  let reason: string;
  if (c === '"' || c === "'" || c === '`') reason = 'string literals are not allowed';
  else if (c === '[' || c === ']' || c === '{' || c === '}') reason = `brackets '${c}' are not allowed (no lists, subscripts or blocks)`;
  else if (c === '.') reason = 'attribute access is not allowed';
  else if (c === '=' && source[pos + 1] === '>') reason = 'functions are not allowed';
  else if (c === '=') reason = "assignment is not allowed; use '==' to compare";
  else if (c === '&' || c === '|' || c === '^' || c === '~') reason = `bitwise operator '${c}' is not supported; use 'and', 'or', 'not'`;
  else if (c === ';') reason = 'statements are not allowed';
  else reason = `unexpected character '${c}'`;
  throw new ExpressionSyntaxError(reason, source, pos);
}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let pos = 0;
  while (pos < source.length) {
    const c = source[pos]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      pos++;
      continue;
    }
    if (DIGIT.test(c) || (c === '.' && DIGIT.test(source[pos + 1] ?? ''))) {
      const m = NUMBER.exec(source.slice(pos))!;
      const end = pos + m[0].length;
      if (end < source.length && (NAME_PART.test(source[end]!) || source[end] === '.')) {
        throw new ExpressionSyntaxError(`malformed number '${source.slice(pos, end + 1)}'`, source, pos);
      }
      tokens.push({ type: 'number', value: Number(m[0]), pos });
      pos = end;
      continue;
    }
    if (NAME_START.test(c)) {
      let end = pos + 1;
      while (end < source.length && NAME_PART.test(source[end]!)) end++;
      tokens.push({ type: 'name', value: source.slice(pos, end), pos });
      pos = end;
      continue;
    }
    const op = OPERATORS.find((o) => source.startsWith(o, pos));
    if (op === undefined) rejectCharacter(source, pos);
    tokens.push({ type: 'op', value: op, pos });
    pos += op.length;
  }
  tokens.push({ type: 'end', pos: source.length });
  return tokens;
}

// ---------------------------------------------------------------- parser

const KEYWORDS = new Set(['and', 'or', 'not', 'True', 'False']);

class Parser {
  private index = 0;
  private depth = 0;
  private readonly heights = new WeakMap<Expr, number>();
  constructor(
    private readonly source: string,
    private readonly tokens: Token[],
  ) {}

  parse(): Expr {
    const expr = this.orExpr();
    const t = this.peek();
    if (t.type !== 'end') this.fail(`unexpected ${describe(t)}`, t.pos);
    return expr;
  }

  private peek(): Token {
    return this.tokens[this.index]!;
  }
  private next(): Token {
    return this.tokens[this.index++]!;
  }
  private isOp(...ops: string[]): boolean {
    const t = this.peek();
    return t.type === 'op' && ops.includes(t.value);
  }
  private isKeyword(word: string): boolean {
    const t = this.peek();
    return t.type === 'name' && t.value === word;
  }
  private fail(reason: string, pos: number): never {
    throw new ExpressionSyntaxError(reason, this.source, pos);
  }
  /** Every composite node goes through here: the tree's height bounds the evaluator's recursion, whatever the input. */
  private node<T extends Expr>(e: T): T {
    const height = 1 + Math.max(0, ...childrenOf(e).map((c) => this.heights.get(c) ?? 1));
    if (height > MAX_NESTING_DEPTH) this.fail(`expression nested deeper than ${MAX_NESTING_DEPTH} levels`, e.pos);
    this.heights.set(e, height);
    return e;
  }
  /** Every recursive production goes through here, so no input can exhaust the parser's stack either. */
  private nested<T>(pos: number, parse: () => T): T {
    if (++this.depth > MAX_NESTING_DEPTH) this.fail(`expression nested deeper than ${MAX_NESTING_DEPTH} levels`, pos);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  private orExpr(): Expr {
    let left = this.andExpr();
    while (this.isKeyword('or') || this.isOp('||')) {
      const pos = this.next().pos;
      left = this.node({ kind: 'logical', op: 'or', left, right: this.andExpr(), pos });
    }
    return left;
  }

  private andExpr(): Expr {
    let left = this.notExpr();
    while (this.isKeyword('and') || this.isOp('&&')) {
      const pos = this.next().pos;
      left = this.node({ kind: 'logical', op: 'and', left, right: this.notExpr(), pos });
    }
    return left;
  }

  private notExpr(): Expr {
    if (this.isKeyword('not') || this.isOp('!')) {
      const pos = this.next().pos;
      return this.nested(pos, () => this.node({ kind: 'unary', op: 'not', operand: this.notExpr(), pos }));
    }
    return this.comparison();
  }

  private comparison(): Expr {
    const first = this.additive();
    const ops: CompareOp[] = [];
    const operands = [first];
    while (this.isOp('<', '<=', '>', '>=', '==', '!=')) {
      ops.push((this.next() as { value: CompareOp }).value);
      operands.push(this.additive());
    }
    return ops.length === 0 ? first : this.node({ kind: 'compare', ops, operands, pos: first.pos });
  }

  private additive(): Expr {
    let left = this.multiplicative();
    while (this.isOp('+', '-')) {
      const t = this.next() as { value: ArithOp; pos: number };
      left = this.node({ kind: 'binary', op: t.value, left, right: this.multiplicative(), pos: t.pos });
    }
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    while (this.isOp('*', '/', '//', '%')) {
      const t = this.next() as { value: ArithOp; pos: number };
      left = this.node({ kind: 'binary', op: t.value, left, right: this.unary(), pos: t.pos });
    }
    return left;
  }

  private unary(): Expr {
    if (this.isOp('-', '+')) {
      const t = this.next() as { value: '-' | '+'; pos: number };
      return this.nested(t.pos, () => this.node({ kind: 'unary', op: t.value, operand: this.unary(), pos: t.pos }));
    }
    return this.power();
  }

  private power(): Expr {
    const base = this.primary();
    if (!this.isOp('**')) return base;
    const pos = this.next().pos;
    // Python: the exponent is a unary expression, so 2**-1 parses and ** chains to the right (2**3**2 == 2**9).
    return this.nested(pos, () => this.node({ kind: 'binary', op: '**', left: base, right: this.unary(), pos }));
  }

  private primary(): Expr {
    const t = this.next();
    if (t.type === 'number') return { kind: 'number', value: t.value, pos: t.pos };
    if (t.type === 'op' && t.value === '(') {
      return this.nested(t.pos, () => {
        const inner = this.orExpr();
        if (!this.isOp(')')) this.fail(`expected ')' to close the '(' at position ${t.pos}, found ${describe(this.peek())}`, this.peek().pos);
        this.next();
        return inner;
      });
    }
    if (t.type === 'name') {
      if (t.value === 'True' || t.value === 'False') return { kind: 'bool', value: t.value === 'True', pos: t.pos };
      if (KEYWORDS.has(t.value)) this.fail(`'${t.value}' needs an operand before it`, t.pos);
      if (this.isOp('(')) return this.call(t.value, t.pos);
      return { kind: 'name', name: t.value, pos: t.pos };
    }
    return this.fail(`expected a number, a name or '(', found ${describe(t)}`, t.pos);
  }

  private call(fn: string, pos: number): Expr {
    if (!(ALLOWED_FUNCTIONS as readonly string[]).includes(fn)) {
      this.fail(`calling '${fn}' is not allowed; the only functions are ${ALLOWED_FUNCTIONS.map((f) => `${f}()`).join(' and ')}`, pos);
    }
    this.next(); // '('
    return this.nested(pos, () => {
      const args: Expr[] = [];
      if (!this.isOp(')')) {
        for (;;) {
          args.push(this.orExpr());
          if (this.isOp(')')) break;
          if (!this.isOp(',')) this.fail(`expected ',' or ')' in the arguments of ${fn}(), found ${describe(this.peek())}`, this.peek().pos);
          this.next();
        }
      }
      this.next(); // ')'
      if (args.length < 2) this.fail(`${fn}() needs at least two arguments`, pos);
      return this.node({ kind: 'call', fn: fn as FunctionName, args, pos });
    });
  }
}

function describe(t: Token): string {
  if (t.type === 'end') return 'the end of the expression';
  if (t.type === 'number') return `number ${t.value}`;
  return `'${t.value}'`;
}

/** Parses an expression, throwing ExpressionSyntaxError (with position and caret) for anything outside the language. */
export function parseExpression(source: string): Expr {
  if (typeof source !== 'string') throw new TypeError(`Expected a string expression but received ${typeof source}`);
  if (source.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionSyntaxError(`expression is ${source.length} characters long; the limit is ${MAX_EXPRESSION_LENGTH}`, source.slice(0, 80), 80);
  }
  if (source.trim() === '') throw new ExpressionSyntaxError('empty expression', source, 0);
  return new Parser(source, tokenize(source)).parse();
}

function childrenOf(e: Expr): Expr[] {
  switch (e.kind) {
    case 'unary':
      return [e.operand];
    case 'binary':
    case 'logical':
      return [e.left, e.right];
    case 'compare':
      return e.operands;
    case 'call':
      return e.args;
    default:
      return [];
  }
}

/** The distinct names an expression reads, in order of first appearance (function names and True/False excluded). */
export function names(ast: Expr): string[] {
  const seen = new Set<string>();
  const visit = (e: Expr): void => {
    if (e.kind === 'name') seen.add(e.name);
    else childrenOf(e).forEach(visit);
  };
  visit(ast);
  return [...seen];
}

// ---------------------------------------------------------------- evaluation (Python semantics)

/** Python truthiness. */
export function truthy(v: Value): boolean {
  return typeof v === 'string' ? v.length > 0 : Boolean(v);
}

type Fail = (code: EvalErrorCode, reason: string, pos: number) => never;

function numeric(v: Value, op: string, pos: number, fail: Fail): number {
  if (typeof v === 'string') fail('type', `'${op}' needs numbers but got the string "${v}"`, pos);
  return typeof v === 'boolean' ? Number(v) : v;
}

function pyMod(a: number, b: number): number {
  const r = a % b;
  return r !== 0 && r < 0 !== b < 0 ? r + b : r;
}

function arithmetic(op: ArithOp, a: number, b: number, pos: number, fail: Fail): number {
  let r: number;
  switch (op) {
    case '+':
      r = a + b;
      break;
    case '-':
      r = a - b;
      break;
    case '*':
      r = a * b;
      break;
    case '/':
      if (b === 0) fail('division_by_zero', 'division by zero', pos);
      r = a / b;
      break;
    case '//':
      if (b === 0) fail('division_by_zero', 'integer division by zero', pos);
      // (a - a mod b) / b is exact for integers, where Math.floor(a / b) can round across an integer.
      r = (a - pyMod(a, b)) / b;
      break;
    case '%':
      if (b === 0) fail('division_by_zero', 'modulo by zero', pos);
      r = pyMod(a, b);
      break;
    case '**':
      if (Math.abs(b) > MAX_EXPONENT) fail('overflow', `exponent ${b} is larger than the limit of ${MAX_EXPONENT}`, pos);
      if (a === 0 && b < 0) fail('division_by_zero', '0 cannot be raised to a negative power', pos);
      if (a < 0 && !Number.isInteger(b)) fail('domain', `negative number ${a} raised to the fractional power ${b}`, pos);
      r = a ** b;
      break;
  }
  if (!Number.isFinite(r)) fail('overflow', `result of '${op}' is too large`, pos);
  // Python integers are exact at any size; doubles are not beyond 2^53, so refuse rather than compute a wrong integer.
  if (Number.isInteger(a) && Number.isInteger(b) && op !== '/' && !(op === '**' && b < 0) && !Number.isSafeInteger(r)) {
    fail('overflow', `integer result of '${op}' exceeds 2^53 and cannot be represented exactly`, pos);
  }
  return r;
}

function compare(op: CompareOp, a: Value, b: Value, pos: number, fail: Fail): boolean {
  const aStr = typeof a === 'string';
  const bStr = typeof b === 'string';
  if (op === '==' || op === '!=') {
    // Python: 1 == True, but 1 != "1".
    const equal = aStr || bStr ? a === b : Number(a) === Number(b);
    return op === '==' ? equal : !equal;
  }
  if (aStr !== bStr) fail('type', `'${op}' cannot compare a string with a number`, pos);
  const x = aStr ? a : Number(a);
  const y = bStr ? b : Number(b);
  switch (op) {
    case '<':
      return x < y;
    case '<=':
      return x <= y;
    case '>':
      return x > y;
    default:
      return x >= y;
  }
}

export type Compiled = (env: Env) => Value;

export interface CompileOptions {
  /**
   * The names the expression may use. Checked at compile time, so a typo is reported before anything runs; at evaluation
   * a name missing from the environment is reported the same way.
   */
  knownNames?: readonly string[];
  /** Builds the error for an unknown name; restrictions use RestrictionCheckError here. Default: UnknownNameError. */
  unknownName?: (name: string, knownNames: readonly string[], source: string) => Error;
}

export interface CompiledExpression {
  source: string;
  ast: Expr;
  /** The names it reads. */
  names: string[];
  evaluate: Compiled;
}

/** Parses, validates the names, and compiles to a closure tree (no eval, no Function). */
export function compileExpression(source: string, options: CompileOptions = {}): CompiledExpression {
  const ast = parseExpression(source);
  const used = names(ast);
  const makeUnknown = options.unknownName ?? ((n, k, s) => new UnknownNameError(n, k, s));
  if (options.knownNames) {
    const known = new Set(options.knownNames);
    const missing = used.find((n) => !known.has(n));
    if (missing !== undefined) throw makeUnknown(missing, options.knownNames, source);
  }
  const fail: Fail = (code, reason, pos) => {
    throw new ExpressionEvalError(code, reason, source, pos);
  };
  const lookup = (name: string): Compiled => (env) => {
    if (!Object.hasOwn(env, name)) throw makeUnknown(name, options.knownNames ?? Object.keys(env), source);
    return env[name]!;
  };

  const build = (e: Expr): Compiled => {
    switch (e.kind) {
      case 'number':
      case 'bool': {
        const v = e.value;
        return () => v;
      }
      case 'name':
        return lookup(e.name);
      case 'unary': {
        const operand = build(e.operand);
        if (e.op === 'not') return (env) => !truthy(operand(env));
        if (e.op === '-') return (env) => -numeric(operand(env), '-', e.pos, fail);
        return (env) => numeric(operand(env), '+', e.pos, fail);
      }
      case 'binary': {
        const left = build(e.left);
        const right = build(e.right);
        return (env) => arithmetic(e.op, numeric(left(env), e.op, e.pos, fail), numeric(right(env), e.op, e.pos, fail), e.pos, fail);
      }
      case 'logical': {
        const left = build(e.left);
        const right = build(e.right);
        return e.op === 'and'
          ? (env) => {
              const l = left(env);
              return truthy(l) ? right(env) : l;
            }
          : (env) => {
              const l = left(env);
              return truthy(l) ? l : right(env);
            };
      }
      case 'compare': {
        const operands = e.operands.map(build);
        return (env) => {
          // Chained like Python: a < b < c is a < b and b < c, each operand evaluated once.
          let left = operands[0]!(env);
          for (let i = 0; i < e.ops.length; i++) {
            const right = operands[i + 1]!(env);
            if (!compare(e.ops[i]!, left, right, e.operands[i + 1]!.pos, fail)) return false;
            left = right;
          }
          return true;
        };
      }
      case 'call': {
        const args = e.args.map(build);
        const pickLeft = e.fn === 'min' ? '<' : '>';
        return (env) => {
          let best = args[0]!(env);
          for (let i = 1; i < args.length; i++) {
            const v = args[i]!(env);
            if (compare(pickLeft, v, best, e.args[i]!.pos, fail)) best = v;
          }
          return best;
        };
      }
    }
  };
  return { source, ast, names: used, evaluate: build(ast) };
}

/** Evaluates an expression to a finite number (Python's int()/float() of the result), for sizes and divisors. */
export function evaluateNumber(expr: CompiledExpression, env: Env): number {
  const v = expr.evaluate(env);
  if (typeof v === 'string') throw new ExpressionEvalError('type', `expected a number but the expression gives the string "${v}"`, expr.source, 0);
  return Number(v);
}
