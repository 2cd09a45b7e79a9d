// KernelTest: a test case of the seed library's API (llm_kernel_tuner.KernelTest): inputs and expected outputs given as
// typed arrays and scalars, or a declarative input spec whose data is generated on the device.
import { BFloat16Array, HalfArray, isKernelScalar, type AnyTypedArray, type DType, type KernelScalar } from '../gpu/dtype';
import type { HostArgument, TestData } from './run/backend';
import { resolveTestSpec, type ResolvedTest } from './spec/input-spec';
import type { KernelSignature } from './source/kernel-signature';
import type { ProblemSizeSpec } from './types';

const DTYPE_OF_ARRAY = new Map<Function, DType>([
  [Int8Array, 'int8'],
  [Uint8Array, 'uint8'],
  [Int16Array, 'int16'],
  [Uint16Array, 'uint16'],
  [Int32Array, 'int32'],
  [Uint32Array, 'uint32'],
  [BigInt64Array, 'int64'],
  [BigUint64Array, 'uint64'],
  [HalfArray, 'float16'],
  [BFloat16Array, 'bfloat16'],
  [Float32Array, 'float32'],
  [Float64Array, 'float64'],
]);

/**
 * A test case: inputs in argument order (typed arrays for pointer arguments, typed scalars for the others), the expected
 * outputs in the same order (null: not compared), and the problem size. float16 and bfloat16 data are a HalfArray or a
 * BFloat16Array (a plain Uint16Array is uint16 data), their scalars float16(x) and bfloat16(x). With `outputs` named and no expected arrays,
 * the oracle computes the expected outputs. Or built from a declarative spec with KernelTest.fromSpec.
 */
export class KernelTest {
  readonly data:
    | { kind: 'values'; inputs: (AnyTypedArray | KernelScalar)[]; expectedOutputs: (AnyTypedArray | null)[]; outputs: ReadonlySet<number>; inOut: ReadonlySet<number> }
    | { kind: 'spec'; spec: unknown };

  constructor(
    inputs: (AnyTypedArray | KernelScalar)[],
    expectedOutputs: (AnyTypedArray | null)[] | null,
    readonly problemSize: ProblemSizeSpec,
    /** outputs: positions compared against the oracle; inOut: outputs whose given content the kernel reads (c += a*b). */
    options: { outputs?: readonly number[]; inOut?: readonly number[] } = {},
  ) {
    if (!Array.isArray(inputs)) throw new TypeError(`Expected an array of typed arrays and scalars for inputs but received ${typeof inputs}`);
    inputs.forEach((v, i) => {
      if (!isKernelScalar(v) && !DTYPE_OF_ARRAY.has((v as object)?.constructor)) {
        throw new TypeError(
          `Expected a typed array (Float32Array, HalfArray, ...) or a typed scalar (int32(n), float32(x), float16(x), ...) for inputs[${i}] but received ${describe(v)}`,
        );
      }
    });
    const expected = expectedOutputs ?? inputs.map(() => null);
    if (expected.length !== inputs.length) throw new TypeError(`expectedOutputs has ${expected.length} entries but inputs has ${inputs.length}; use null for arguments that are not compared`);
    const outputs = new Set(options.outputs ?? []);
    expected.forEach((e, i) => {
      if (e === null) return;
      const input = inputs[i]!;
      if (isKernelScalar(input)) throw new TypeError(`expectedOutputs[${i}] is given, but inputs[${i}] is a scalar and cannot be an output`);
      if (e.constructor !== input.constructor || e.length !== input.length) {
        throw new TypeError(`expectedOutputs[${i}] must be a ${input.constructor.name} of length ${input.length}, like inputs[${i}]`);
      }
      outputs.add(i);
    });
    for (const i of options.inOut ?? []) outputs.add(i);
    if (outputs.size === 0) throw new TypeError('a KernelTest needs at least one output: give an expected output or name it in options.outputs');
    this.data = { kind: 'values', inputs, expectedOutputs: expected, outputs, inOut: new Set(options.inOut ?? []) };
  }

  /** Whether every compared output comes with its expected value (else the oracle computes them). */
  get hasExpectedOutputs(): boolean {
    if (this.data.kind === 'spec') return false;
    const { expectedOutputs, outputs } = this.data;
    return [...outputs].every((i) => expectedOutputs[i] !== null);
  }

  /** A test from a declarative input spec (see input-spec.ts): the data is generated on the device, the oracle gives the answers. */
  static fromSpec(spec: unknown): KernelTest {
    const t = Object.create(KernelTest.prototype) as { -readonly [K in keyof KernelTest]: KernelTest[K] };
    t.data = { kind: 'spec', spec };
    t.problemSize = (spec as { problemSize?: ProblemSizeSpec })?.problemSize ?? 1;
    return t as KernelTest;
  }

  /** The data for a backend, checked against the kernel's signature. */
  resolve(kernel: KernelSignature): { data: TestData; problemSize: ProblemSizeSpec } {
    if (this.data.kind === 'spec') {
      const test: ResolvedTest = resolveTestSpec(this.data.spec, kernel);
      return { data: { kind: 'spec', test }, problemSize: test.problemSize };
    }
    const { inputs, expectedOutputs, outputs, inOut } = this.data;
    if (inputs.length !== kernel.parameters.length) {
      throw new TypeError(`${kernel.name} takes ${kernel.parameters.length} arguments (${kernel.parameters.map((p) => p.name).join(', ')}) but the test gives ${inputs.length}`);
    }
    const args: HostArgument[] = inputs.map((value, i) => {
      const p = kernel.parameters[i]!;
      if (isKernelScalar(value)) {
        if (p.isPointer) throw new TypeError(`argument ${i} (${p.name}) is a pointer (${p.type}) but the test gives a scalar`);
        return { kind: 'scalar', name: p.name, dtype: value.dtype, value: value.value };
      }
      if (!p.isPointer) throw new TypeError(`argument ${i} (${p.name}) is a scalar (${p.type}) but the test gives an array`);
      return {
        kind: 'buffer',
        name: p.name,
        dtype: DTYPE_OF_ARRAY.get(value.constructor)!,
        data: value,
        output: outputs.has(i),
        inOut: inOut.has(i),
        expected: expectedOutputs[i] ?? null,
      };
    });
    return { data: { kind: 'host', arguments: args }, problemSize: this.problemSize };
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'object') return (v as object).constructor?.name ?? 'an object';
  return `${typeof v} ${String(v)}`;
}
