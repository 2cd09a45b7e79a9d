import { describe, expect, it } from 'vitest';
import {
  compileExpression,
  ExpressionEvalError,
  ExpressionSyntaxError,
  MAX_EXPRESSION_LENGTH,
  names,
  parseExpression,
  UnknownNameError,
  type Env,
} from '../../src/tuner/space/expressions';
import { RestrictionCheckError, compileRestriction } from '../../src/tuner/space/restrictions';

const run = (source: string, env: Env = {}) => compileExpression(source).evaluate(env);

describe('expressions: arithmetic with Python semantics', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['2 ** 3 ** 2', 512], // right-associative
    ['-2 ** 2', -4], // unary minus binds looser than **
    ['(-2) ** 2', 4],
    ['2 ** -1', 0.5],
    ['7 / 2', 3.5],
    ['7 // 2', 3],
    ['-7 // 2', -4], // floor, not truncation
    ['7 // -2', -4],
    ['-7 % 3', 2], // sign of the divisor
    ['7 % -3', -2],
    ['7.5 // 2', 3],
    ['5.5 % 2', 1.5],
    ['1e3 + .5', 1000.5],
    ['2.5e-1 * 4', 1],
    ['10 - 4 - 3', 3], // left-associative
    ['100 / 10 / 5', 2],
    ['- - 3', 3],
    ['+4', 4],
    ['True + True', 2],
    ['min(3, 1, 2)', 1],
    ['max(3, 1, 2) * 2', 6],
    ['min(max(1, 5), 4)', 4],
  ])('%s = %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });

  it('reads names from the environment', () => {
    expect(run('block_size_x * block_size_y', { block_size_x: 32, block_size_y: 8 })).toBe(256);
    expect(run('n // (bx * tx)', { n: 4096, bx: 32, tx: 4 })).toBe(32);
  });
});

describe('expressions: comparisons and logic', () => {
  it.each([
    ['1 < 2 < 3', true],
    ['1 < 3 < 2', false], // chained: 1<3 and 3<2
    ['3 > 2 == 2', true], // 3>2 and 2==2, not (3>2)==2
    ['1 == 1.0', true],
    ['1 != 2', true],
    ['2 <= 2 >= 1', true],
    ['not 1 == 2', true], // not binds looser than ==
    ['not 0', true],
    ['1 < 2 and 2 < 1', false],
    ['1 < 2 or 2 < 1', true],
    ['1 < 2 && !(2 < 1)', true],
    ['0 || 2 > 1', true],
    ['True and not False', true],
    ['1 == True', true],
  ])('%s is %s', (source, expected) => {
    expect(run(source)).toBe(expected);
  });

  it('and/or return an operand, as in Python', () => {
    expect(run('0 or 5')).toBe(5);
    expect(run('3 and 4')).toBe(4);
    expect(run('0 and 4')).toBe(0);
  });

  it('or binds looser than and', () => {
    expect(run('1 or 0 and 0')).toBe(1);
    expect(run('(1 or 0) and 0')).toBe(0);
  });

  it('evaluates each operand of a chain once and short-circuits logic', () => {
    // A short-circuited operand never evaluates, so a division by zero there is harmless.
    expect(run('0 and 1 / 0')).toBe(0);
    expect(run('1 or 1 / 0')).toBe(1);
    expect(run('1 > 2 < 1 / 0')).toBe(false);
  });

  it('compares string-valued parameters for equality only', () => {
    expect(run('precision == precision2', { precision: 'float', precision2: 'float' })).toBe(true);
    expect(run('precision != 1', { precision: 'float' })).toBe(true);
    expect(() => run('precision < 1', { precision: 'float' })).toThrow(/cannot compare a string with a number/);
    expect(() => run('precision * 2', { precision: 'float' })).toThrow(ExpressionEvalError);
  });
});

describe('expressions: evaluation errors', () => {
  it.each([
    ['1 / 0', 'division_by_zero'],
    ['1 // 0', 'division_by_zero'],
    ['1 % 0', 'division_by_zero'],
    ['0 ** -1', 'division_by_zero'],
    ['2 ** 99999', 'overflow'],
    ['10.0 ** 400', 'overflow'],
    ['3 ** 40', 'overflow'], // an integer beyond 2^53 would be silently wrong
    ['(-8) ** 0.5', 'domain'],
  ])('%s fails with %s', (source, code) => {
    try {
      run(source);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ExpressionEvalError);
      expect((e as ExpressionEvalError).code).toBe(code);
      expect((e as Error).message).toContain(source);
    }
  });

  it('min() and max() need two arguments', () => {
    expect(() => parseExpression('min(1)')).toThrow(/at least two arguments/);
    expect(() => parseExpression('max()')).toThrow(/at least two arguments/);
  });
});

describe('expressions: names', () => {
  it('lists the names an expression reads, once each, without functions or constants', () => {
    expect(names(parseExpression('min(a, b) >= 4 and a % c == 0 or True'))).toEqual(['a', 'b', 'c']);
  });

  it('rejects an unknown name at compile time, naming it and the known names', () => {
    try {
      compileExpression('block_size_z * 2 > 4', { knownNames: ['block_size_x', 'block_size_y'] });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(UnknownNameError);
      expect((e as UnknownNameError).unknownName).toBe('block_size_z');
      expect((e as Error).message).toMatch(/unknown name 'block_size_z'/);
      expect((e as Error).message).toMatch(/did you mean 'block_size_x'\?/);
      expect((e as Error).message).toContain('known names: block_size_x, block_size_y');
    }
  });

  it('reports a name missing from the environment at evaluation', () => {
    expect(() => run('a + b', { a: 1 })).toThrow(/unknown name 'b'/);
  });

  it('uses the caller-specified error class for unknown names', () => {
    class MyError extends Error {}
    expect(() => compileExpression('x > 1', { knownNames: ['y'], unknownName: (n) => new MyError(n) })).toThrow(MyError);
  });
});

describe('expressions: anything outside the language is rejected', () => {
  const syntaxCases: [string, RegExp][] = [
    ['process.exit()', /attribute access is not allowed/],
    ['a.constructor', /attribute access is not allowed/],
    ['exit()', /calling 'exit' is not allowed; the only functions are min\(\) and max\(\)/],
    ['eval(1)', /calling 'eval' is not allowed/],
    ['constructor.constructor("return process")()', /attribute access is not allowed/],
    ['require(fs)', /calling 'require' is not allowed/],
    ['require("fs")', /string literals are not allowed/],
    ['"abc" == "abc"', /string literals are not allowed/],
    ["'a'", /string literals are not allowed/],
    ['`${process.exit()}`', /string literals are not allowed/],
    ['a[0]', /brackets '\[' are not allowed/],
    ['{}', /brackets '\{' are not allowed/],
    ['a = 1', /assignment is not allowed; use '==' to compare/],
    ['x => x', /functions are not allowed/],
    ['a; b', /statements are not allowed/],
    ['a & b', /bitwise operator '&' is not supported/],
    ['a | b', /bitwise operator '\|' is not supported/],
    ['1 +', /expected a number, a name or '\(', found the end of the expression/],
    ['(1 + 2', /expected '\)' to close the '\(' at position 0/],
    ['1 2', /unexpected number 2/],
    ['a if b else c', /unexpected 'if'/],
    ['1abc', /malformed number '1a'/],
    ['1.2.3', /malformed number/],
    ['and 1', /'and' needs an operand before it/],
    ['', /empty expression/],
    ['   ', /empty expression/],
    ['a @ b', /unexpected character '@'/],
  ];
  it.each(syntaxCases)('%s', (source, message) => {
    try {
      parseExpression(source);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(ExpressionSyntaxError);
      expect((e as Error).message).toMatch(message);
    }
  });

  it('shows the position with a caret under the offending character', () => {
    try {
      parseExpression('block_size_x.constructor');
      expect.unreachable();
    } catch (e) {
      const err = e as ExpressionSyntaxError;
      expect(err.position).toBe(12);
      const [, line, caret] = err.message.split('\n');
      expect(line).toBe('  block_size_x.constructor');
      expect(caret!.indexOf('^')).toBe(2 + 12);
    }
  });

  it.each(['constructor', '__proto__', 'this', 'globalThis', 'process', 'toString', 'hasOwnProperty', 'valueOf'])(
    '%s is just an unknown name: built-ins never resolve',
    (name) => {
      expect(() => run(`${name} == 1`, { a: 1 })).toThrow(UnknownNameError);
      expect(() => run(`${name} == 1`, { a: 1 })).toThrow(new RegExp(`unknown name '${name}'`));
      // A plain object environment has these on its prototype; they must not leak through.
      expect(() => run(name, {})).toThrow(UnknownNameError);
    },
  );

  it('names the unknown name in a restriction error', () => {
    try {
      compileRestriction('globalThis.process', ['a']);
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(RestrictionCheckError);
      expect((e as Error).message).toMatch(/attribute access is not allowed/);
    }
    try {
      compileRestriction('constructor > 1', ['block_size_x']);
      expect.unreachable();
    } catch (e) {
      expect((e as RestrictionCheckError).unknownNames).toEqual(['constructor']);
      expect((e as Error).message).toMatch(/'constructor', which is not a tunable parameter/);
    }
  });

  it('rejects deep nesting of parentheses without exhausting the stack', () => {
    const deep = `${'('.repeat(4000)}1${')'.repeat(4000)}`;
    expect(() => parseExpression(deep)).toThrow(/nested deeper than 64 levels/);
    expect(() => parseExpression(`${'-'.repeat(5000)}1`)).toThrow(/nested deeper than/);
    expect(() => parseExpression(`${'not '.repeat(2000)}1`)).toThrow(/nested deeper than/);
    expect(() => parseExpression(`${'2**'.repeat(2000)}2`)).toThrow(/nested deeper than/);
  });

  it('rejects long operator chains that would nest the evaluator deeply', () => {
    expect(() => parseExpression(Array(3000).fill('a').join('+'))).toThrow(/nested deeper than/);
    expect(parseExpression(Array(20).fill('a').join('+'))).toBeDefined();
  });

  it('accepts nesting within the limit', () => {
    expect(run(`${'('.repeat(30)}1${')'.repeat(30)}`)).toBe(1);
  });

  it('rejects input longer than the limit before tokenizing it', () => {
    const long = '1+'.repeat(MAX_EXPRESSION_LENGTH) + '1';
    expect(() => parseExpression(long)).toThrow(/characters long; the limit is 10000/);
  });

  it('never evaluates through eval or Function', () => {
    const originalEval = globalThis.eval;
    const originalFunction = globalThis.Function;
    const trap = () => {
      throw new Error('eval/Function was used');
    };
    globalThis.eval = trap;
    (globalThis as { Function: unknown }).Function = trap;
    try {
      expect(run('min(a, 3) * 2 ** 2 > 1 and not b', { a: 1, b: false })).toBe(true);
    } finally {
      globalThis.eval = originalEval;
      (globalThis as { Function: unknown }).Function = originalFunction;
    }
  });
});
