// The request a profiled or sanitized launch is described by travels as JSON (src/gpu/ncu/launch-once.ts): the integer
// bounds of a random spec are bigints (int32, int64, uint32 inputs), which JSON cannot hold, so they are tagged and
// read back as bigints, and nothing else changes.
import { describe, expect, it } from 'vitest';
import { reviveBigInts, stringifyWithBigInts } from '../../src/gpu/ncu/launch-once';
import { checkRandomSpec } from '../../src/gpu/random';

describe('a launch request as JSON', () => {
  it('keeps the bigint bounds of an integer random spec, and every other value as it was', () => {
    const spec = checkRandomSpec('int64', { distribution: 'integers', min: -5, max: 2 ** 40, seed: 7 });
    const request = { args: [{ kind: 'buffer', dtype: 'int64', length: 3, contents: { random: spec } }, { kind: 'scalar', dtype: 'int32', value: 42 }], note: { $bigint: 1 } };
    const text = stringifyWithBigInts(request);
    expect(() => JSON.stringify(request)).toThrow(/BigInt/);
    const back = JSON.parse(text, reviveBigInts) as typeof request;
    expect(back).toEqual(request);
    expect(typeof (back.args[0] as { contents: { random: { min: unknown } } }).contents.random.min).toBe('bigint');
  });
});
