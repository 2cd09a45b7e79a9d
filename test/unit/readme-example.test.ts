// The README's TypeScript example runs as it is written: its code block is taken from README.md, only its import path
// made absolute, and run with the fake GPU backend (TEST DOUBLE, test/support/fake-backend.ts) standing in for the GPU
// that GpuBackend.open() would give it. Everything above the backend (parsing, the spec, the search, the oracle) is real.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { FakeBackend } from '../support/fake-backend';

const root = join(__dirname, '..', '..');

/** Milliseconds per launch of each block size on the pretend GPU: 256 is the fastest. */
const TIMES: Record<string, number> = { '64': 0.41, '128': 0.3, '256': 0.24, '512': 0.26, '1024': 0.33 };
const backends: FakeBackend[] = [];

vi.mock('../../src/tuner/run/gpu-backend', () => {
  const open = async () => {
    const backend = new FakeBackend({ model: { timeMs: (v) => TIMES[v.defines.block_size_x!]! } });
    backends.push(backend);
    return backend;
  };
  // One pretend GPU, whatever the selection: tune() opens the GPUs of a run with backendsOf.
  return { GpuBackend: { open }, backendsOf: async () => ({ backends: [await open()], opened: true }) };
});

const scratch = mkdtempSync(join(tmpdir(), 'lkt-readme-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
afterEach(() => vi.restoreAllMocks());

/** The code block under a README heading. */
function codeBlockUnder(heading: string): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf(`## ${heading}\n`));
  const match = /```ts\n([\s\S]*?)```/.exec(section);
  if (!match) throw new Error(`README.md has no ts code block under "## ${heading}"`);
  return match[1]!;
}

describe('README: Using the tuner from TypeScript', () => {
  it('runs as written: tunes, prints the best configuration, and checks one configuration against another', async () => {
    const code = codeBlockUnder('Using the tuner from TypeScript');
    expect(code).toContain("from './src/tuner/tunable-kernel'");
    const file = join(scratch, 'example.ts');
    writeFileSync(file, code.replaceAll("from './src/", `from '${join(root, 'src')}/`));
    const printed: unknown[][] = [];
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void printed.push(args));
    await import(file);

    // The search found the fastest configuration the restriction allows, and test() passed for block size 128.
    expect(printed).toEqual([
      [{ block_size_x: 256 }, 0.24],
      ['ok', 0.3],
    ]);
    // Both calls opened a backend of their own and closed it.
    expect(backends).toHaveLength(2);
    expect(backends.every((b) => b.disposed)).toBe(true);
    // test() checked 128 against the kernel at 256: the oracle was built with block_size_x 256.
    const builds = backends[1]!.log.filter((e) => e.kind === 'compile').map((e) => e.defines.block_size_x);
    expect(builds).toEqual(['256', '128']);
  });
});
