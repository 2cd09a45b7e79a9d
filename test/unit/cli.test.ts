// The command line end to end, as a user runs it: the bundled dist/cli.js in a child process (the vitest global setup
// builds it). CI has no GPU, so the GPU commands must fail cleanly and `tune` replays the examples' real GPU caches.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { CacheFile } from '../../src/tuner/cache/cache-file';
import { gpuSkipReason } from '../support/gpu-available';

const root = join(__dirname, '..', '..');
const cli = join(root, 'dist', 'cli.js');
const scratch = mkdtempSync(join(tmpdir(), 'lkt-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function run(...args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const example = (name: string, file: string) => join('examples', name, file);

/** The fastest valid configuration of a cache, computed directly from the file. */
function bestOf(cachePath: string) {
  const results = CacheFile.load(join(root, cachePath)).results().filter((r) => r.status === 'ok');
  return results.reduce((a, b) => (b.timeMs! < a.timeMs! ? b : a));
}

describe('llm-kernel-tuner without a GPU', () => {
  const noGpu = gpuSkipReason() !== false;

  it.runIf(noGpu)('devices and probe say what is missing, exit 1, and print no stack trace', () => {
    for (const command of ['devices', 'probe']) {
      const r = run(command);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^error: CUDA is not available: libcuda\.so\.1/);
      expect(r.stderr).toMatch(/Install the NVIDIA driver/);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it.runIf(noGpu)('tune --simulate-if-no-gpu (npm start) says first why it replays, naming the missing library, then replays the shipped cache', () => {
    const r = run('tune', example('vector_add', 'tune.yaml'), '--simulate-if-no-gpu', example('vector_add', 'cache.json'));
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^No GPU to tune on: CUDA is not available: libcuda\.so\.1 .*Install the NVIDIA driver/);
    expect(r.stderr.split('\n')[1]).toBe('Replaying examples/vector_add/cache.json instead: the recorded results of a real GPU run, searched as the spec says.');
    expect(r.stdout).toContain('replayed from examples/vector_add/cache.json');
  });
});

describe('llm-kernel-tuner tune --simulate', () => {
  it('replays the tiled matmul search of a real GPU run and reports its best configuration', () => {
    const cache = example('matmul_tiled', 'cache.json');
    const r = run('tune', example('matmul_tiled', 'tune.yaml'), '--simulate', cache);
    expect(r.code).toBe(0);
    const best = bestOf(cache);
    const expected = Object.entries(best.config).map(([k, v]) => `${k}=${v}`).join(' ');
    expect(r.stdout).toContain(`best: ${expected}  ${best.timeMs!.toPrecision(4)} ms`);
    // Every configuration of the space appears once, failures included, with their kind; the counts add up to 44.
    expect(r.stdout).toMatch(/44 configurations replayed from examples\/matmul_tiled\/cache\.json \(measured on NVIDIA H200; simulation: no GPU used\)/);
    expect(r.stdout).toMatch(/: 17 ok, 19 stopped early, 4 did not compile, 4 over the device's limits \(not compiled\); the search completed \(every one of the 44 configurations was evaluated\)\nstrategy: brute_force, chosen by auto: no budget limits the search to fewer than all 44 configurations/);
    // Stderr is no terminal here: plain progress lines, stopped-early configurations not counted as failed.
    const progress = r.stderr.trimEnd().split('\n');
    expect(progress.at(-1)).toBe(`44/44 configurations: 17 ok, 19 stopped early, 4 failed, 4 skipped; best ${best.timeMs!.toPrecision(4)} ms`);
    expect(progress.slice(0, -1).every((l) => /^\d+\/44 configurations: .*; ETA \d+s$/.test(l))).toBe(true);
  });

  it('is described with the counts and words it prints in the README (npm start) and BENCHMARKS.md', () => {
    const r = run('tune', example('matmul_tiled', 'tune.yaml'), '--simulate', example('matmul_tiled', 'cache.json'));
    const [, count, outcomes] = /: (\d+) configurations replayed .*: (.*) \(not compiled\);/.exec(r.stdout)!;
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const npmStart = readme.slice(readme.indexOf('## What `npm start` does'), readme.indexOf('## The command line'));
    expect(npmStart).toContain(`${count} configurations of`);
    for (const words of outcomes!.split(', ')) expect(npmStart.replace(/\s+/g, ' ')).toContain(words);
    expect(readFileSync(join(root, 'BENCHMARKS.md'), 'utf8')).toContain(`### (2) tiled matrix multiply, 4096², ${count} configurations`);
  });

  it('--sanitize says that a replay ran nothing under compute-sanitizer (not a silent pass), and refuses a shard', () => {
    const r = run('tune', example('vector_add', 'tune.yaml'), '--simulate', example('vector_add', 'cache.json'), '--sanitize', '--no-report');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('not checked with compute-sanitizer: the results were replayed from examples/vector_add/cache.json without a GPU: nothing ran under compute-sanitizer\n');
    const json = JSON.parse(run('tune', example('vector_add', 'tune.yaml'), '--simulate', example('vector_add', 'cache.json'), '--sanitize', '--no-report', '--json').stdout);
    expect(json.sanitizer).toMatchObject({ status: 'unavailable', reason: 'no-backend' });
    const shard = run('tune', example('vector_add', 'tune.yaml'), '--sanitize', '--shard', '0/2', '--cache', join(scratch, 'shard.json'));
    expect(shard.code).toBe(1);
    expect(shard.stderr).toContain("--sanitize checks the best configuration of a whole search, not a shard's");
  });

  it('--quiet leaves the progress out and the results as they are; --json keeps stdout JSON with progress on stderr', () => {
    const args = ['tune', example('matmul_tiled', 'tune.yaml'), '--simulate', example('matmul_tiled', 'cache.json')];
    const plain = run(...args);
    const quiet = run(...args, '--quiet');
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe('');
    expect(quiet.stdout).toBe(plain.stdout);
    const json = run(...args, '--json');
    expect(JSON.parse(json.stdout).results).toHaveLength(44);
    expect(json.stderr).toMatch(/^44\/44 configurations: /m);
    expect(run(...args, '--json', '-q').stderr).toBe('');
  });

  it('--json gives every result; a seeded optimiser repeats its search exactly', () => {
    const args = ['tune', example('matmul_tiled', 'tune.yaml'), '--simulate', example('matmul_tiled', 'cache.json'), '--strategy', 'greedy_mls', '--max-fevals', '12', '--seed', '7', '--json'];
    const a = JSON.parse(run(...args).stdout);
    const b = JSON.parse(run(...args).stdout);
    expect(a.strategy).toBe('greedy_mls');
    expect(a.evaluations).toBeLessThanOrEqual(12);
    expect(a.stopReason).toBe('max_fevals');
    expect(a.results.map((x: { key: string }) => x.key)).toEqual(b.results.map((x: { key: string }) => x.key));
    expect(a.best.timeMs).toBeGreaterThanOrEqual(bestOf(example('matmul_tiled', 'cache.json')).timeMs!);
  });

  it('says which launches of the best were verified, and never takes a configuration whose timed launches disagree', () => {
    // The vector add's real cache, as this version writes it: verified launches recorded, the fastest configuration
    // flagged because its timed launches disagree.
    const data = JSON.parse(readFileSync(join(root, example('vector_add', 'cache.json')), 'utf8'));
    const entries = data.cache as Record<string, Record<string, unknown>>;
    for (const entry of Object.values(entries)) entry.lkt_verified = { input_sets: 2, timed_launches: [5, 17, 23, 32], of: 32, seed: 1234 };
    const fastest = Object.keys(entries).reduce((a, b) => ((entries[b]!.time as number) < (entries[a]!.time as number) ? b : a));
    Object.assign(entries[fastest]!, { time: 'RuntimeFailedConfig', lkt_status: 'inconsistent_timing', lkt_error: { message: 'its timed launches disagree: launch 3 took 0.002 ms, under half the median' } });
    const cache = join(scratch, 'flagged.json');
    writeFileSync(cache, JSON.stringify(data));
    const r = run('tune', example('vector_add', 'tune.yaml'), '--simulate', cache);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^ *${fastest} +inconsistent_timing `, 'm'));
    expect(r.stdout).not.toMatch(new RegExp(`^best: block_size_x=${fastest} `, 'm'));
    expect(r.stdout).toMatch(/^best: block_size_x=\d+ .*\nverified: input sets 1–2, timed launches 5, 17, 23 and the last of 32\n/m);
    expect(r.stdout).toMatch(/: 4 ok, 1 had timed launches that disagree \(not eligible as best\); the search completed/);
  });

  it("--strategy-option sets a strategy's options under Kernel Tuner's names, as a spec's strategyOptions does", () => {
    const base = ['tune', example('matmul_tiled', 'tune.yaml'), '--simulate', example('matmul_tiled', 'cache.json'), '--strategy', 'greedy_mls', '--seed', '3', '--json'];
    const start = [32, 4, 4, 8];
    const a = JSON.parse(run(...base, '--strategy-option', 'max_fevals=6', '--strategy-option', `x0=[${start.join(', ')}]`, '--strategy-option', 'neighbor=adjacent', '--strategy-option', 'restart=False').stdout);
    expect(a).toMatchObject({ strategy: 'greedy_mls', evaluations: 6, stopReason: 'max_fevals', stopDetail: '6 evaluations, its max_fevals' });
    expect(a.results[0].key).toBe(start.join(','));
    const spec = join(scratch, 'options.yaml');
    // The example's spec, its paths made absolute, with the same options in strategyOptions.
    const dir = join(root, 'examples', 'matmul_tiled');
    const parsed = parseYaml(readFileSync(join(dir, 'tune.yaml'), 'utf8')) as { file: string; reference: { file: string } };
    const withStrategy = (strategyOptions: Record<string, unknown>) =>
      stringifyYaml({ ...parsed, file: join(dir, parsed.file), reference: { ...parsed.reference, file: join(dir, parsed.reference.file) }, strategy: 'greedy_mls', strategyOptions });
    writeFileSync(spec, withStrategy({ max_fevals: 6, x0: start, neighbor: 'adjacent', restart: false }));
    const b = JSON.parse(run('tune', spec, '--simulate', example('matmul_tiled', 'cache.json'), '--seed', '3', '--json').stdout);
    expect(b.results.map((x: { key: string }) => x.key)).toEqual(a.results.map((x: { key: string }) => x.key));
    // A mistyped option or value is named before anything runs, with what the strategy takes.
    writeFileSync(spec, withStrategy({ neighbour: 'adjacent' }));
    expect(run('tune', spec, '--simulate', example('matmul_tiled', 'cache.json')).stderr).toBe(
      `error: the tuning spec ${spec}: strategy greedy_mls: unknown option of greedy_mls "neighbour": did you mean "neighbor"? (greedy_mls takes max_fevals, time_limit, x0, neighbor, restart, order, randomize)\n`,
    );
    expect(run(...base, '--strategy-option', 'T=hot').stderr).toMatch(/^error: the command line: strategy greedy_mls: unknown option of greedy_mls "T"/);
    expect(run(...base, '--strategy', 'simulated_annealing', '--strategy-option', 'alpha=2').stderr).toMatch(/^error: the command line: strategy simulated_annealing: option alpha of simulated_annealing: /);
    expect(run(...base, '--strategy-option', 'max_fevals').stderr).toMatch(/^error: --strategy-option expects KEY=VALUE/);
    expect(run(...base, '--strategy-option', 'max_fevals=5', '--max-fevals', '7').stderr).toMatch(/two budgets: max_fevals=5 as a strategy option and maxFevals=7 for the run; give it once/);
  });

  it('flags override the spec: --param narrows the space', () => {
    const r = run('tune', example('vector_add', 'tune.yaml'), '--simulate', example('vector_add', 'cache.json'), '--param', 'block_size_x=128,512', '--json');
    const out = JSON.parse(r.stdout);
    expect(out.results.map((x: { config: { block_size_x: number } }) => x.config.block_size_x)).toEqual([128, 512]);
  });

  it('refuses a cache of another kernel with a clear reason', () => {
    const r = run('tune', example('vector_add', 'tune.yaml'), '--simulate', example('reduction', 'cache.json'));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/holds results for kernel 'reduce_sum', not 'vector_add'/);
  });

  it('reports an invalid spec with the path of each bad field', () => {
    const spec = join(scratch, 'bad.yaml');
    writeFileSync(spec, 'file: ../x.cu\narguments: {}\nproblemSize: n\ntuneParams: { block_size_x: [] }\niterations: -1\n');
    const r = run('tune', spec);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/tuneParams\.block_size_x: /);
    expect(r.stderr).toMatch(/iterations: /);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('refuses a precision out of range, in the spec and on the command line, saying what it takes', () => {
    const spec = join(scratch, 'imprecise.yaml');
    const text = readFileSync(join(root, example('vector_add', 'tune.yaml')), 'utf8').replace('file: vector_add.cu', `file: ${join(root, example('vector_add', 'vector_add.cu'))}`);
    writeFileSync(spec, `${text}precision: 1\n`);
    const cache = example('vector_add', 'cache.json');
    const inSpec = run('tune', spec, '--simulate', cache);
    expect(inSpec.code).toBe(1);
    expect(inSpec.stderr).toMatch(/^ {2}precision: must be a fraction of the median from 0\.001 \(0\.1 %\) to 0\.1 \(10 %\), is 1 \(a fraction of the median: 1 % is 0\.01\)/m);
    const flag = run('tune', example('vector_add', 'tune.yaml'), '--simulate', cache, '--precision', '0.0001', '--min-iterations', '3');
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('--min-iterations must be an integer from 6 to 1000 (is 3): the 95 % interval of a median needs at least 6 launches');
    expect(flag.stderr).toContain('--precision must be a fraction of the median from 0.001 (0.1 %) to 0.1 (10 %), is 0.0001');
    // A fixed count on the command line replaces the spec's adaptive settings.
    const adaptive = join(scratch, 'adaptive.yaml');
    writeFileSync(adaptive, `${text}precision: 0.05\nmaxIterations: 64\n`);
    expect(run('tune', adaptive, '--simulate', cache, '--iterations', '32', '--no-report').code).toBe(0);
  });

  it('reports inputs that do not fit the kernel before any GPU work', () => {
    const spec = join(scratch, 'misfit.yaml');
    writeFileSync(
      spec,
      `file: ${join(root, 'examples', 'vector_add', 'vector_add.cu')}\nproblemSize: n\narguments:\n  c: { dtype: float64, length: n, output: true }\n  n: { dtype: int32, value: 16 }\ntuneParams: { block_size_x: [32] }\n`,
    );
    const r = run('tune', spec);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/c: the kernel declares .* which is float32, but the spec says float64/);
    expect(r.stderr).toMatch(/a: missing/);
  });
});

describe('llm-kernel-tuner on bad files (before any GPU or model is needed)', () => {
  it('auto and tune say in words that a file is missing, with no stack trace', () => {
    const missing = join(root, 'examples', 'nowhere.cu');
    const auto = run('auto', 'examples/nowhere.cu', '--provider', 'ollama', '--model', 'm');
    expect(auto.code).toBe(1);
    expect(auto.stderr).toBe(`error: cannot read the kernel file ${missing}: there is no such file\n`);
    const tune = run('tune', 'examples/nowhere.yaml');
    expect(tune.code).toBe(1);
    expect(tune.stderr).toBe('error: cannot read the tuning spec examples/nowhere.yaml: there is no such file\n');
  });

  it('auto on a .cu without a kernel says so, not that the GPU is missing', () => {
    const file = join(scratch, 'host.cu');
    writeFileSync(file, '#include <cstdio>\nint main() { std::puts("no kernel here"); }\n');
    const r = run('auto', file, '--provider', 'ollama', '--model', 'm');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('error: host.cu has no __global__ kernel, so there is nothing to tune: a kernel is a function declared `__global__ void name(...)`\n');
  });
});

describe('llm-kernel-tuner loads only what the command needs', () => {
  /** The bundles of dist/ that `node dist/cli.js ...args` loaded, as their file names. */
  function bundlesLoaded(...args: string[]): string[] {
    const preload = join(scratch, 'list-modules.cjs');
    writeFileSync(preload, "process.on('exit', () => process.stderr.write('\\nLOADED ' + JSON.stringify(Object.keys(require.cache)) + '\\n'));\n");
    const r = spawnSync(process.execPath, ['--require', preload, cli, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
    const loaded = JSON.parse(/^LOADED (.*)$/m.exec(r.stderr)![1]!) as string[];
    return loaded.filter((f) => f.startsWith(join(root, 'dist'))).map((f) => f.slice(join(root, 'dist').length + 1));
  }

  it('--help and devices never load the engine; auto loads it', () => {
    expect(bundlesLoaded('--help')).toEqual(['cli.js']);
    expect(bundlesLoaded('devices')).toEqual(['cli.js', 'cli-devices.js']);
    expect(bundlesLoaded('tune', '--help')).toEqual(['cli.js', 'cli-tune.js']);
    expect(bundlesLoaded('auto', '--help')).toEqual(['cli.js', 'cli-auto.js']);
  });
});
