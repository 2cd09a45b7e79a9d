// `tune SPEC --slurm`: a search split over the GPUs of a Slurm cluster, as scripts for the user to submit (we never
// submit anything). An sbatch array job runs one shard per task, one GPU each, every shard writing its own cache into a
// shared directory; a second job, queued with --dependency=afterok on the array, merges the shards' caches into one.
// With a cache to replay (--simulate), the tasks replay it instead and ask for no GPU: a rehearsal of the whole
// pipeline (queue, array, dependency, merge) on any partition. test/unit/cli-slurm.test.ts runs them on a real Slurm.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { shellQuote } from './format';

export interface SlurmJob {
  /** The kernel's name: it names the jobs and files. */
  kernelName: string;
  /** `tune` and its arguments as every task runs it (absolute paths), without --shard and --cache. */
  tuneArgs: readonly string[];
  /** Array tasks: one shard, and one GPU, each. */
  shards: number;
  /** Where the scripts, the shards' caches, the logs and the merged cache go: a directory every node can reach. */
  dir: string;
  /** Extra `#SBATCH` options for both jobs, e.g. --partition=gpu, --account=proj, --time=02:00:00. */
  sbatchOptions: readonly string[];
  /** The Node executable and the CLI bundle the jobs run (overridable at submit time: LKT_NODE, LKT_CLI). */
  node: string;
  cli: string;
  /** A Kernel Tuner cache (absolute path) every task replays (tune --simulate) instead of tuning on a GPU. */
  simulate?: string;
}

export interface SlurmScripts {
  tuneScript: string;
  mergeScript: string;
  submitScript: string;
  /** The shards' caches, in shard order, and the merged cache. */
  shardCaches: string[];
  mergedCache: string;
}

const safeName = (name: string) => name.replace(/[^\w.-]+/g, '_');

/** A path as the value of an #SBATCH option: sbatch splits at whitespace unless the value is in double quotes. */
function sbatchPath(path: string): string {
  if (/["\n]/.test(path)) throw new RangeError(`An #SBATCH option cannot hold a path with a double quote or a line break: ${JSON.stringify(path)}`);
  return /\s/.test(path) ? `"${path}"` : path;
}

/** An --output file name pattern: % starts a replacement symbol (%A, %a, %j), so a % of the path itself is %%. */
const outputPattern = (dir: string, file: string) => sbatchPath(join(dir.replace(/%/g, '%%'), file));

/** The three scripts' paths and texts (nothing is written). */
export function slurmScripts(job: SlurmJob): SlurmScripts & { texts: Record<string, string> } {
  if (!(Number.isInteger(job.shards) && job.shards >= 1)) throw new RangeError(`Expected a positive number of shards but received ${job.shards}`);
  const name = safeName(job.kernelName);
  const dir = job.dir;
  const caches = join(dir, 'caches');
  const logs = join(dir, 'logs');
  const n = job.shards;
  const shardCaches = Array.from({ length: n }, (_, i) => join(caches, `${name}.shard-${i}-of-${n}.json`));
  const mergedCache = join(dir, `${name}.cache.json`);
  const tuneScript = join(dir, `${name}.tune.sbatch`);
  const mergeScript = join(dir, `${name}.merge.sbatch`);
  const submitScript = join(dir, `${name}.submit.sh`);
  // Both jobs run in the shared directory: where sbatch was called may not exist on the compute nodes.
  const common = [`#SBATCH --chdir=${sbatchPath(dir)}`, ...job.sbatchOptions.map((o) => `#SBATCH ${o}`)];
  // The jobs run on other nodes than the one that wrote the scripts: say so plainly when Node or the CLI is not there.
  const runtime = [
    // Unquoted: an assignment is not split at spaces, and the default's own quotes are removed.
    `NODE=\${LKT_NODE:-${shellQuote(job.node)}}`,
    `CLI=\${LKT_CLI:-${shellQuote(job.cli)}}`,
    'command -v "$NODE" >/dev/null || { echo "llm-kernel-tuner: no Node executable $NODE on $(hostname): submit with LKT_NODE set to Node (20 or newer) as the compute nodes see it" >&2; exit 1; }',
    '[ -r "$CLI" ] || { echo "llm-kernel-tuner: no $CLI on $(hostname): submit with LKT_CLI set to its dist/cli.js on a filesystem the compute nodes see" >&2; exit 1; }',
  ];
  const q = (words: readonly string[]) => words.map(shellQuote).join(' ');
  const taskArgs = job.simulate === undefined ? job.tuneArgs : [...job.tuneArgs, '--simulate', job.simulate];

  const tune = [
    '#!/bin/bash',
    job.simulate === undefined
      ? `# llm-kernel-tuner: shard $SLURM_ARRAY_TASK_ID of ${n} of the search of ${job.kernelName}, one GPU per task.`
      : `# llm-kernel-tuner: shard $SLURM_ARRAY_TASK_ID of ${n} of the search of ${job.kernelName}, replayed from ${job.simulate} (no GPU).`,
    `# Submit ${submitScript} (it queues the merge as well). Each task writes its own cache into ${caches}.`,
    `#SBATCH --job-name=lkt-${name}`,
    `#SBATCH --array=0-${n - 1}`,
    '#SBATCH --ntasks=1',
    ...(job.simulate === undefined ? ['#SBATCH --gres=gpu:1'] : []),
    `#SBATCH --output=${outputPattern(logs, `${name}.tune-%A_%a.out`)}`,
    ...common,
    'set -euo pipefail',
    ...runtime,
    // Slurm shows each task its own GPU (CUDA_VISIBLE_DEVICES), so the task's GPU is device 0.
    `exec "$NODE" "$CLI" ${q(taskArgs)} --shard "\${SLURM_ARRAY_TASK_ID}/${n}" --cache ${shellQuote(join(caches, `${name}.shard-`))}"\${SLURM_ARRAY_TASK_ID}"${shellQuote(`-of-${n}.json`)}`,
    '',
  ].join('\n');

  const merge = [
    '#!/bin/bash',
    `# llm-kernel-tuner: merges the ${n} shards' caches of ${job.kernelName} into ${mergedCache} (queued by ${submitScript} to run after every shard succeeded).`,
    `#SBATCH --job-name=lkt-${name}-merge`,
    '#SBATCH --ntasks=1',
    `#SBATCH --output=${outputPattern(logs, `${name}.merge-%j.out`)}`,
    // A shard that failed leaves the merge nothing to wait for: cancelled at once rather than queued forever.
    '#SBATCH --kill-on-invalid-dep=yes',
    ...common,
    'set -euo pipefail',
    ...runtime,
    `exec "$NODE" "$CLI" merge-caches -o ${q([mergedCache, ...shardCaches])}`,
    '',
  ].join('\n');

  const submit = [
    '#!/bin/bash',
    `# llm-kernel-tuner: queues the search of ${job.kernelName} on ${job.simulate === undefined ? `${n} GPUs` : `${n} tasks replaying a cache`} (a Slurm array job, one shard per task) and the merge`,
    '# of their caches, which starts only once every task has succeeded (--dependency=afterok; if one fails, Slurm cancels it).',
    'set -euo pipefail',
    `tune_job=$(sbatch --parsable ${shellQuote(tuneScript)})`,
    'tune_job=${tune_job%%;*}',
    `merge_job=$(sbatch --parsable --dependency=afterok:"$tune_job" ${shellQuote(mergeScript)})`,
    `echo "queued the tuning array $tune_job (${n} tasks) and the merge \${merge_job%%;*}; the merged cache will be ${mergedCache}"`,
    '',
  ].join('\n');

  return {
    tuneScript,
    mergeScript,
    submitScript,
    shardCaches,
    mergedCache,
    texts: { [tuneScript]: tune, [mergeScript]: merge, [submitScript]: submit },
  };
}

/** Writes the scripts (and the directories Slurm writes the logs and caches into: it does not create them). */
export function writeSlurmScripts(job: SlurmJob): SlurmScripts {
  const scripts = slurmScripts(job);
  for (const d of [job.dir, join(job.dir, 'caches'), join(job.dir, 'logs')]) mkdirSync(d, { recursive: true });
  for (const [path, text] of Object.entries(scripts.texts)) writeFileSync(path, text, { mode: 0o755 });
  const { texts: _texts, ...written } = scripts;
  return written;
}
