// `tune --slurm` on a real Slurm: a single-node cluster of Debian's slurmctld, slurmd and munge, started by the test
// (test/support/local-slurm.ts; skipped with the reason where the packages cannot be installed). The scripts are
// submitted as a user would submit them (bash KERNEL.submit.sh, from another directory), the array's tasks replay a
// GPU cache (tune --shard I/N --simulate CACHE: no GPU here), and the merge Slurm runs after them gives the cache of a
// single run. The GPU form of the scripts runs too: each task is given one of the node's GPUs.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localSlurmSkipReason, startLocalSlurm, type LocalSlurm, type SlurmJobRecord } from '../support/local-slurm';

const root = join(__dirname, '..', '..');
const cli = join(root, 'dist', 'cli.js');
const scratch = mkdtempSync(join(tmpdir(), 'lkt-slurm-jobs-'));
const spec = join(root, 'examples', 'matmul_tiled', 'tune.yaml');
const replayed = join(root, 'examples', 'matmul_tiled', 'cache.json');

let slurm: LocalSlurm | undefined;
let skipReason: string | false = 'the cluster did not start';

beforeAll(async () => {
  skipReason = await localSlurmSkipReason();
  // Said on stderr as well: vitest's default reporter does not print a skipped test's note.
  if (skipReason !== false) console.warn(`tune --slurm on a real Slurm cluster: skipped: ${skipReason}`);
  else slurm = await startLocalSlurm({ gpus: 2 });
}, 600_000);

afterAll(async () => {
  await slurm?.stop();
  rmSync(scratch, { recursive: true, force: true });
}, 60_000);

function run(...args: string[]) {
  const r = spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const json = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as { cache: Record<string, unknown> };

/** `bash KERNEL.submit.sh` from the scratch directory (not the scripts' own), as a user submits; the job ids it queued. */
function submit(cluster: LocalSlurm, script: string, env: Record<string, string> = {}) {
  const r = spawnSync('bash', [script], { cwd: scratch, encoding: 'utf8', env: { ...cluster.env, ...env } });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
  const m = /^queued the tuning array (\d+) \((\d+) tasks\) and the merge (\d+);/.exec(r.stdout);
  expect(m, r.stdout).not.toBeNull();
  return { tuneJob: Number(m![1]), mergeJob: Number(m![3]) };
}

/** The array's tasks in task order, and the merge. */
function split(records: SlurmJobRecord[], tuneJob: number, mergeJob: number) {
  const tasks = records.filter((r) => r.array_job_id === tuneJob).sort((a, b) => a.array_task_id! - b.array_task_id!);
  return { tasks, merge: records.find((r) => r.job_id === mergeJob)! };
}

describe('tune --slurm on a real Slurm cluster', () => {
  it('rehearses on an array of shards replaying a cache, and the merge, run after them, equals a single run', async (ctx) => {
    if (!slurm) return ctx.skip(String(skipReason));
    // A space in the directory: the #SBATCH paths must reach Slurm whole.
    const dir = join(scratch, 'matmul rehearsal');
    const written = run('tune', spec, '--slurm', '--shards', '3', '--simulate', replayed, '--slurm-dir', dir);
    expect(written.stderr).toBe('');
    expect(written.stdout).toContain(`(an array of 3 tasks, each replaying its shard from ${replayed}, no GPU)`);
    expect(readFileSync(join(dir, 'matmul_tiled.tune.sbatch'), 'utf8')).not.toContain('--gres');

    const { tuneJob, mergeJob } = submit(slurm, join(dir, 'matmul_tiled.submit.sh'));
    const { tasks, merge } = split(await slurm.waitForJobs([tuneJob, mergeJob], 4, 90_000), tuneJob, mergeJob);
    expect(tasks.map((t) => [t.array_task_id, t.job_state, t.exit_code])).toEqual([
      [0, 'COMPLETED', 0],
      [1, 'COMPLETED', 0],
      [2, 'COMPLETED', 0],
    ]);
    expect([merge.name, merge.job_state, merge.exit_code]).toEqual(['lkt-matmul_tiled-merge', 'COMPLETED', 0]);
    // The merge became eligible, and started, only once the last shard had ended.
    const lastShardEnd = Math.max(...tasks.map((t) => t.end_time));
    expect(merge.eligible_time).toBeGreaterThanOrEqual(lastShardEnd);
    expect(merge.start_time).toBeGreaterThanOrEqual(lastShardEnd);
    // Every job ran in the scripts' directory, not where sbatch was called.
    for (const job of [...tasks, merge]) expect(job.current_working_directory).toBe(dir);

    tasks.forEach((_, i) => {
      const log = readFileSync(join(dir, 'logs', `matmul_tiled.tune-${tuneJob}_${i}.out`), 'utf8');
      expect(log).toContain(`shard ${i}/3 of the space with brute_force`);
    });
    const single = join(scratch, 'single.json');
    expect(run('tune', spec, '--simulate', replayed, '--cache', single, '--no-report').code).toBe(0);
    const merged = join(dir, 'matmul_tiled.cache.json');
    expect(readFileSync(join(dir, 'logs', `matmul_tiled.merge-${mergeJob}.out`), 'utf8')).toBe(
      `merged shards 0/3, 1/3, 2/3 into ${merged}: ${Object.keys(json(single).cache).length} configurations\n`,
    );
    expect(json(merged)).toEqual(json(single));
  }, 120_000);

  it('gives each task of the GPU scripts one GPU; a task that cannot start says why, and the merge is cancelled, not left queued', async (ctx) => {
    if (!slurm) return ctx.skip(String(skipReason));
    const dir = join(scratch, 'matmul-gpus');
    expect(run('tune', spec, '--slurm', '--shards', '3', '--slurm-dir', dir).code).toBe(0);
    // The CLI is not where the compute nodes look for it (as when it is not on a filesystem they share).
    const missingCli = join(scratch, 'not-shared', 'dist', 'cli.js');
    const { tuneJob, mergeJob } = submit(slurm, join(dir, 'matmul_tiled.submit.sh'), { LKT_CLI: missingCli });
    const { tasks, merge } = split(await slurm.waitForJobs([tuneJob, mergeJob], 4, 90_000), tuneJob, mergeJob);
    for (const task of tasks) {
      // Asked for one GPU, and run: on this node only its GPUs could answer that.
      expect(task.tres_per_node).toBe('gres:gpu:1');
      expect([task.job_state, task.exit_code]).toEqual(['FAILED', 1 << 8]);
      expect(readFileSync(join(dir, 'logs', `matmul_tiled.tune-${tuneJob}_${task.array_task_id}.out`), 'utf8')).toBe(
        `llm-kernel-tuner: no ${missingCli} on ${hostname()}: submit with LKT_CLI set to its dist/cli.js on a filesystem the compute nodes see\n`,
      );
    }
    expect(tasks.map((t) => t.array_task_id)).toEqual([0, 1, 2]);
    expect([merge.job_state, merge.state_reason]).toEqual(['CANCELLED', 'DependencyNeverSatisfied']);
    expect(existsSync(join(dir, 'logs', `matmul_tiled.merge-${mergeJob}.out`))).toBe(false);
  }, 120_000);
});
