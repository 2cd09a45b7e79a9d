// The command line on several GPUs and past one host. --gpus runs on the fake addon's two devices (real worker
// processes, no CUDA). A search split over hosts runs here as several local processes of the bundled CLI on the
// simulated backend (tune --simulate replays the examples' real GPU caches): the shards' caches merge into the cache a
// single run writes. Here the Slurm scripts' text; cli-slurm.test.ts submits them to a real Slurm.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CacheMergeError, mergeCaches } from '../../src/tuner/cache/merge';
import { shellQuote } from '../../src/cli/format';
import { slurmScripts } from '../../src/cli/slurm';

const root = join(__dirname, '..', '..');
const cli = join(root, 'dist', 'cli.js');
const scratch = mkdtempSync(join(tmpdir(), 'lkt-shards-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const example = (name: string, file: string) => join(root, 'examples', name, file);

function run(...args: string[]) {
  return runWith({}, ...args);
}

function runWith(env: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The same, as a separate process running alongside others. */
function start(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

const json = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as { cache: Record<string, unknown> } & Record<string, unknown>;

describe('tune --gpus', () => {
  // Two fake devices; the helper kernels' disk cache goes to the scratch directory, away from a real GPU's.
  const twoGpus = { LKT_GPU_ADDON_MODULE: join(root, 'test', 'support', 'fake-addon.cjs'), LKT_FAKE_DEVICE_COUNT: '2', TMPDIR: scratch };
  // The vector add example over 4096 elements (the fake devices keep their memory in JavaScript).
  const spec = join(scratch, 'vector_add.yaml');
  writeFileSync(spec, readFileSync(example('vector_add', 'tune.yaml'), 'utf8').replace('file: vector_add.cu', `file: ${example('vector_add', 'vector_add.cu')}`).replace('value: 67108864', 'value: 4096'));

  it('tunes on every GPU and says so, with how the strategy uses them', () => {
    const r = runWith(twoGpus, 'tune', spec, '--gpus', 'all', '--iterations', '3', '--json');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.mode).toBe('measured on 2 GPUs (0, 1; every configuration is independent: each GPU takes the next one in order)');
    expect(out.gpus.map((g: { ordinal: number; pciBusId: string }) => [g.ordinal, g.pciBusId])).toEqual([
      [0, '0000:10:00.0'],
      [1, '0000:11:00.0'],
    ]);
    expect(new Set(out.results.map((x: { gpu: { ordinal: number } }) => x.gpu.ordinal))).toEqual(new Set([0, 1]));
  });

  it('refuses a bad selection, GPUs of two models, and --gpus with --device', () => {
    expect(runWith(twoGpus, 'tune', spec, '--gpus', '3').stderr).toBe('error: 3 GPUs were asked for, but this host has 2 GPUs (ordinals 0, 1)\n');
    expect(runWith({ ...twoGpus, LKT_FAKE_DEVICE_NAMES: 'Fake H100,Fake A100' }, 'tune', spec, '--gpus', '0,1').stderr).toBe(
      'error: GPU 0 is Fake H100; GPU 1 is Fake A100: one search runs on GPUs of one model, because timings compare only on the same model. ' +
        'Choose GPUs of one model: 0 (Fake H100) or 1 (Fake A100).\n',
    );
    expect(run('tune', spec, '--gpus', 'two').stderr).toContain("error: --gpus takes all, a list of GPU ordinals such as 0,2, or a number N of GPUs (the first N); received 'two'");
    expect(run('tune', spec, '--gpus', '2', '--device', '1').stderr).toContain('error: give --device N (one GPU) or --gpus, not both');
  });
});

describe('tune --shard and merge-caches', () => {
  it.each([
    ['matmul_tiled', 4],
    ['stencil_2d', 3],
  ])('%s: %i shards run as separate processes merge into the cache of a single run', async (name, count) => {
    const dir = join(scratch, `${name}-${count}`);
    mkdirSync(dir);
    const spec = example(name, 'tune.yaml');
    const replayed = example(name, 'cache.json');
    const shards = Array.from({ length: count }, (_, i) => join(dir, `shard-${i}.json`));
    const runs = await Promise.all(shards.map((file, i) => start('tune', spec, '--simulate', replayed, '--shard', `${i}/${count}`, '--cache', file)));
    expect(runs.map((r) => r.code)).toEqual(shards.map(() => 0));
    const single = join(dir, 'single.json');
    expect(run('tune', spec, '--simulate', replayed, '--cache', single).code).toBe(0);

    // Disjoint shares that cover the space, each cache marked with its shard.
    const keys = shards.map((f) => Object.keys(json(f).cache));
    expect(new Set(keys.flat()).size).toBe(keys.flat().length);
    expect(new Set(keys.flat())).toEqual(new Set(Object.keys(json(single).cache)));
    shards.forEach((f, i) => expect(json(f)['lkt_shard']).toEqual({ index: i, count }));

    const merged = join(dir, 'merged.json');
    const m = run('merge-caches', '-o', merged, ...[...shards].reverse());
    expect(m.code).toBe(0);
    expect(m.stdout).toBe(`merged shards ${shards.map((_, i) => `${i}/${count}`).join(', ')} into ${merged}: ${keys.flat().length} configurations\n`);
    expect(json(merged)).toEqual(json(single));
    // In the order of the search space, whatever order the shards were given in.
    const replayedAgain = run('tune', spec, '--simulate', merged, '--json');
    expect(JSON.parse(replayedAgain.stdout).best).toEqual(JSON.parse(run('tune', spec, '--simulate', single, '--json').stdout).best);
  });

  it('resumes a shard from its cache and refuses a cache of another shard', () => {
    const dir = join(scratch, 'resume');
    mkdirSync(dir);
    const spec = example('matmul_tiled', 'tune.yaml');
    const file = join(dir, 'shard-1.json');
    expect(run('tune', spec, '--simulate', example('matmul_tiled', 'cache.json'), '--shard', '1/4', '--cache', file).code).toBe(0);
    const before = readFileSync(file, 'utf8');
    expect(run('tune', spec, '--simulate', example('matmul_tiled', 'cache.json'), '--shard', '1/4', '--cache', file).code).toBe(0);
    expect(readFileSync(file, 'utf8')).toBe(before);
    const other = run('tune', spec, '--simulate', example('matmul_tiled', 'cache.json'), '--shard', '2/4', '--cache', file);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain(`error: Cache ${file} holds results for another share of the search (lkt_shard): the cache has "1/4", this run has "2/4"`);
  });

  it('refuses shards of an optimiser, a malformed shard, and a shard without a cache', () => {
    const spec = example('matmul_tiled', 'tune.yaml');
    const cache = example('matmul_tiled', 'cache.json');
    const greedy = run('tune', spec, '--simulate', cache, '--strategy', 'greedy_mls', '--shard', '0/2', '--cache', join(scratch, 'greedy.json'));
    expect(greedy.code).toBe(1);
    expect(greedy.stderr).toMatch(/^error: greedy_mls cannot be split into shards: it chooses each configuration from the results before it/);
    const bad = run('tune', spec, '--simulate', cache, '--shard', '4/4', '--cache', join(scratch, 'bad.json'));
    expect(bad.stderr).toContain("error: --shard takes I/N with 0 <= I < N (as Slurm numbers the tasks of an array: --array=0-(N-1)), received '4/4'");
    expect(run('tune', spec, '--simulate', cache, '--shard', '0/4').stderr).toContain('error: --shard needs --cache FILE');
  });
});

describe('merge-caches refuses what is not one search', () => {
  const dir = join(scratch, 'refusals');
  mkdirSync(dir, { recursive: true });
  const shards = [0, 1, 2].map((i) => join(dir, `shard-${i}.json`));
  beforeAll(() => {
    for (const [i, file] of shards.entries()) expect(run('tune', example('stencil_2d', 'tune.yaml'), '--simulate', example('stencil_2d', 'cache.json'), '--shard', `${i}/3`, '--cache', file).code).toBe(0);
  });

  /** A copy of shard 2 with its header edited. */
  function edited(name: string, edit: (text: string) => string): string {
    const file = join(dir, name);
    writeFileSync(file, edit(readFileSync(shards[2]!, 'utf8')));
    return file;
  }
  const out = join(dir, 'out.json');
  const refusal = (inputs: string[], options = {}) => {
    try {
      mergeCaches(inputs, out, options);
    } catch (e) {
      expect(e).toBeInstanceOf(CacheMergeError);
      expect(existsSync(out)).toBe(false);
      return (e as Error).message;
    }
    throw new Error('merged');
  };

  it('of another device, kernel, problem size or parameters, with the reason', () => {
    const [a, b] = shards;
    const device = edited('device.json', (t) => t.replace('"device_name": "NVIDIA H200"', '"device_name": "NVIDIA A100-SXM4-80GB"'));
    expect(refusal([a!, b!, device])).toBe(
      `${device} holds results for another device than ${a} (device_name: "NVIDIA A100-SXM4-80GB" against "NVIDIA H200"): only caches of one search merge`,
    );
    const kernel = edited('kernel.json', (t) => t.replace('"kernel_name": "stencil_2d"', '"kernel_name": "stencil_3d"'));
    expect(refusal([a!, b!, kernel])).toMatch(/holds results for another kernel than .* \(kernel_name: "stencil_3d" against "stencil_2d"\)/);
    const size = edited('size.json', (t) => t.replace('"problem_size": [\n"nx",\n"ny"\n]', '"problem_size": [\n"nx",\n"nx"\n]'));
    expect(refusal([a!, b!, size])).toMatch(/another problem size than .* \(problem_size: \["nx","nx"\] against \["nx","ny"\]\)/);
    const keys = edited('keys.json', (t) => t.replace('"tune_params_keys": [\n"block_size_x",\n"block_size_y"', '"tune_params_keys": [\n"block_size_y",\n"block_size_x"'));
    expect(refusal([a!, b!, keys])).toMatch(/other tunable parameters than .* \(tune_params_keys: \["block_size_y","block_size_x","tile_size_y","use_shared"\]/);
    const values = edited('values.json', (t) => t.replace('"tile_size_y": [\n1,\n2,\n4\n]', '"tile_size_y": [\n1,\n2,\n8\n]'));
    expect(refusal([a!, b!, values])).toMatch(/other values of the tunable parameters than .* \(tune_params: .*"tile_size_y":\[1,2,8\]/);
  });

  it('with a shard missing (unless --partial), given twice, or of another split', () => {
    const [a, b, c] = shards;
    expect(refusal([a!, c!])).toBe('shard 1/3 is missing (given: 0/3, 2/3): run it, or merge what is there with --partial');
    expect(refusal([a!, b!, b!])).toBe(`${b} and ${b} are both shard 1/3`);
    const ofFour = edited('of-four.json', (t) => t.replace('"lkt_shard": {\n"index": 2,\n"count": 3\n}', '"lkt_shard": {\n"index": 2,\n"count": 4\n}'));
    expect(refusal([a!, b!, ofFour])).toBe(`${ofFour} is shard 2/4 but ${a} is shard 0/3: the shards of one search have one count`);
    const partial = mergeCaches([a!, c!], join(dir, 'partial.json'), { partial: true });
    expect(partial.shards).toEqual(['0/3', '2/3']);
  });

  it('and never overwrites a file that is not one of its inputs', () => {
    const taken = join(dir, 'taken.json');
    writeFileSync(taken, 'precious');
    const r = run('merge-caches', '-o', taken, ...shards);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: ${taken} exists and is not one of the caches merged: choose another output file, or delete it first\n`);
    expect(readFileSync(taken, 'utf8')).toBe('precious');
    // Into one of its inputs is fine: the merge is a superset of it.
    const into = join(dir, 'into.json');
    copyFileSync(shards[0]!, into);
    expect(run('merge-caches', '-o', into, into, shards[1]!, shards[2]!).code).toBe(0);
    expect(Object.keys(json(into).cache)).toHaveLength(shards.reduce((n, f) => n + Object.keys(json(f).cache).length, 0));
    expect(json(into)['lkt_shard']).toBeUndefined();
  });
});

describe('tune --slurm', () => {
  it('writes an array job of one GPU per shard, a merge that runs after it, and a script that queues both', () => {
    const dir = join(scratch, 'slurm');
    const spec = example('matmul_tiled', 'tune.yaml');
    const r = run('tune', spec, '--slurm', '--shards', '4', '--slurm-dir', dir, '--sbatch', 'partition=gpu', '--sbatch=--time=01:00:00', '--iterations', '16');
    expect(r.code).toBe(0);
    const submit = join(dir, 'matmul_tiled.submit.sh');
    expect(r.stdout).toContain(`submit both with: bash ${submit}`);
    const tune = readFileSync(join(dir, 'matmul_tiled.tune.sbatch'), 'utf8');
    const merge = readFileSync(join(dir, 'matmul_tiled.merge.sbatch'), 'utf8');
    expect(tune).toContain('#SBATCH --array=0-3\n#SBATCH --ntasks=1\n#SBATCH --gres=gpu:1\n');
    expect(tune).toContain(`#SBATCH --output=${join(dir, 'logs', 'matmul_tiled.tune-%A_%a.out')}\n#SBATCH --chdir=${dir}\n#SBATCH --partition=gpu\n#SBATCH --time=01:00:00\n`);
    expect(tune).toContain(`exec "$NODE" "$CLI" tune ${spec} --iterations 16 --shard "\${SLURM_ARRAY_TASK_ID}/4" --cache ${join(dir, 'caches', 'matmul_tiled.shard-')}"\${SLURM_ARRAY_TASK_ID}"-of-4.json`);
    expect(merge).toContain(`exec "$NODE" "$CLI" merge-caches -o ${join(dir, 'matmul_tiled.cache.json')} ${[0, 1, 2, 3].map((i) => join(dir, 'caches', `matmul_tiled.shard-${i}-of-4.json`)).join(' ')}`);
    expect(merge).toContain(`#SBATCH --kill-on-invalid-dep=yes\n#SBATCH --chdir=${dir}\n#SBATCH --partition=gpu\n`);
    expect(readFileSync(submit, 'utf8')).toContain('merge_job=$(sbatch --parsable --dependency=afterok:"$tune_job"');
    for (const file of [submit, join(dir, 'matmul_tiled.tune.sbatch'), join(dir, 'matmul_tiled.merge.sbatch')]) expect(spawnSync('bash', ['-n', file]).status).toBe(0);
    expect(existsSync(join(dir, 'logs'))).toBe(true);
  });

  it('refuses what cannot run as an array of shards', () => {
    const spec = example('matmul_tiled', 'tune.yaml');
    expect(run('tune', spec, '--slurm').stderr).toContain('error: --slurm needs --shards N');
    expect(run('tune', spec, '--slurm', '--shards', '2', '--strategy', 'genetic_algorithm').stderr).toMatch(/error: --slurm splits a brute-force search into shards; genetic_algorithm cannot be split/);
    expect(run('tune', spec, '--slurm', '--shards', '2', '--gpus', 'all').stderr).toContain('error: --gpus does not go with --slurm');
    expect(run('tune', spec, '--shards', '2').stderr).toContain('error: --shards, --slurm-dir and --sbatch go with --slurm');
    // A cache to rehearse with is checked before the cluster would fail every task on it.
    const otherKernel = example('vector_add', 'cache.json');
    expect(run('tune', spec, '--slurm', '--shards', '2', '--simulate', otherKernel).stderr).toBe(`error: ${resolve(otherKernel)} holds results for kernel 'vector_add', not 'matmul_tiled'\n`);
    expect(run('tune', spec, '--slurm', '--shards', '2', '--slurm-dir', join(scratch, 'say "hi"')).stderr).toBe(
      `error: An #SBATCH option cannot hold a path with a double quote or a line break: ${JSON.stringify(join(scratch, 'say "hi"'))}\n`,
    );
  });

  it('quotes what bash would otherwise split or expand', () => {
    expect(shellQuote('/plain/path-1.yaml')).toBe('/plain/path-1.yaml');
    expect(shellQuote("it's here")).toBe(`'it'\\''s here'`);
    expect(shellQuote('$HOME')).toBe(`'$HOME'`);
    const { texts } = slurmScripts({ kernelName: 'k', tuneArgs: ['tune', '/a b/spec.yaml', '--restriction', 'x*y<=1024'], shards: 2, dir: '/shared/k', sbatchOptions: [], node: '/usr/bin/node', cli: '/opt/lkt/cli.js' });
    expect(texts['/shared/k/k.tune.sbatch']).toContain(`tune '/a b/spec.yaml' --restriction 'x*y<=1024' --shard`);
    // sbatch splits an option's value at spaces unless it is in double quotes, and reads % in --output as a pattern.
    const odd = slurmScripts({ kernelName: 'k', tuneArgs: ['tune', '/s.yaml'], shards: 2, dir: '/my jobs/100%', sbatchOptions: [], node: '/opt/node 20/node', cli: '/opt/lkt/cli.js' }).texts['/my jobs/100%/k.tune.sbatch']!;
    expect(odd).toContain('#SBATCH --output="/my jobs/100%%/logs/k.tune-%A_%a.out"\n#SBATCH --chdir="/my jobs/100%"\n');
    expect(odd).toContain(`NODE=\${LKT_NODE:-'/opt/node 20/node'}\n`);
  });
});
