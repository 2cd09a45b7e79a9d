// Typedef'd parameter types (llm.c's floatX) resolved through the file's preprocessor choices, for test specs.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolveTestSpec } from '../../src/tuner/spec/input-spec';
import { TunableKernel } from '../../src/tuner/tunable-kernel';
import { typeAliases } from '../../src/tuner/source/type-aliases';

const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-aliases-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const COMMON = `#pragma once
#if defined(ENABLE_BF16)
typedef __nv_bfloat16 floatX;
#elif defined(ENABLE_FP16)
typedef half floatX;
#else
typedef float floatX;
#endif
typedef floatX floatN;
#if __CUDA_ARCH__ >= 800
typedef double accT;
#else
typedef float accT;
#endif
`;

describe('type aliases', () => {
  writeFileSync(path.join(scratch, 'common.h'), COMMON);
  const kernel = '__global__ void k(floatN* out, const floatX* in, accT scale, int n) {}\n';

  it("follows the file's defines into its headers and through chains, and leaves the compiler's choices open", async () => {
    const bf16 = await typeAliases(`#define ENABLE_BF16\n#include "common.h"\n${kernel}`, { world: 'closed', includes: { filePath: path.join(scratch, 'a.cu'), readFile: (f) => (f.endsWith('common.h') ? COMMON : undefined) } });
    expect(bf16.get('floatX')).toEqual(['__nv_bfloat16']);
    expect(bf16.get('floatN')).toEqual(['__nv_bfloat16']);
    expect(bf16.get('accT')).toEqual(['double', 'float']);
    const plain = await typeAliases(`#include "common.h"\n${kernel}`, { world: 'closed', includes: { filePath: path.join(scratch, 'a.cu'), readFile: (f) => (f.endsWith('common.h') ? COMMON : undefined) } });
    expect(plain.get('floatX')).toEqual(['float']);
  });

  it('checks a spec against what a typedef stands for', async () => {
    const file = path.join(scratch, 'k.cu');
    const code = `#define ENABLE_FP16\n#include "common.h"\n${kernel}`;
    writeFileSync(file, code);
    const k = await TunableKernel.create(code, { filePath: file });
    const spec = (out: string, scale: string) => ({
      problemSize: 'n',
      arguments: { out: { dtype: out, length: 'n', output: true }, in: { dtype: 'float16', length: 'n' }, scale: { dtype: scale, value: 2 }, n: { dtype: 'int32', value: 64 } },
    });
    expect(resolveTestSpec(spec('float16', 'float64'), k.signature).arguments.map((a) => a.dtype)).toEqual(['float16', 'float16', 'float64', 'int32']);
    expect(() => resolveTestSpec(spec('float32', 'float64'), k.signature)).toThrow(/out: the kernel declares floatN \*, which is float16, but the spec says float32/);
    expect(() => resolveTestSpec(spec('float16', 'int32'), k.signature)).toThrow(/scale: the kernel declares accT, which the file's preprocessor makes one of float64, float32, but the spec says int32/);
  });
});
