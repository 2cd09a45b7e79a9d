// The tuner's on-device helpers (fills, compare, scale, fingerprint) compiled by the real nvcc, for every dtype:
// they include no header, so this is the proof that they build wherever the tuner compiles kernels.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DTYPES } from '../../src/gpu/dtype';
import { NvccCompiler } from '../../src/gpu/nvcc';
import { HELPER_KERNELS_SOURCE, compareKernelName, fillKernelName, helperNameExpressions, scaleKernelName } from '../../src/tuner/run/helper-kernels';

const available = await NvccCompiler.available();
const scratch = mkdtempSync(path.join(tmpdir(), 'lkt-helpers-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('helper kernel name expressions', () => {
  it('are distinct for every dtype (uint16, float16 and bfloat16 are all 16-bit storage)', () => {
    const names = helperNameExpressions(DTYPES);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toHaveLength(2 + 5 * DTYPES.length); // the fingerprint and the pattern counter serve every dtype
    expect(compareKernelName('float16')).toBe('lkt_compare<lkt_half>');
    expect(scaleKernelName('bfloat16')).toBe('lkt_scale<lkt_bfloat16>');
    expect(fillKernelName('integers', 'uint16')).toBe('lkt_fill_integers<unsigned short>');
  });
});

describe.skipIf(!available)('helper kernels (real nvcc)', () => {
  // Architectures from the oldest nvcc still targets to Hopper: bfloat16 by bit operations needs no sm_80.
  for (const arch of ['sm_75', 'sm_90']) {
    it(`compile without any header for every dtype on ${arch}`, async () => {
      const names = helperNameExpressions(DTYPES);
      const nvcc = new NvccCompiler({ defaultArch: arch, tempDir: scratch });
      const compiled = await nvcc.compile({ source: HELPER_KERNELS_SOURCE, fileName: 'lkt_helpers.cu', nameExpressions: names, options: ['-std=c++17'] });
      expect(HELPER_KERNELS_SOURCE).not.toContain('#include');
      expect(Object.keys(compiled.loweredNames).sort()).toEqual([...names].sort());
      expect(new Set(Object.values(compiled.loweredNames)).size).toBe(names.length);
      expect(compiled.log).not.toMatch(/warning/i);
    }, 120_000);
  }
});
