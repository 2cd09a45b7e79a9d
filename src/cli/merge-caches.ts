// llm-kernel-tuner merge-caches: the shards of a search (tune --shard I/N, e.g. the tasks of a Slurm array job) into
// one Kernel Tuner cache, refusing caches that are not of one search.
import { parseArgs } from 'node:util';
import { CacheMergeError, mergeCaches } from '../tuner/cache/merge';

const HELP = `usage: llm-kernel-tuner merge-caches -o MERGED.json CACHE.json...

Combines the caches of one search into one Kernel Tuner cache, in search-space order: the shards of
\`tune SPEC --shard I/N\` (all N of them), or any caches of the same kernel, device, problem size and tunable parameters.
Caches of another device, kernel, problem size or parameters are refused with the reason; a configuration found in
several caches keeps the first one's result. MERGED.json may be one of the inputs; no other existing file is replaced.

options:
  -o, --out FILE   the merged cache (required)
  --partial        merge the shards that are there, even if some are missing
`;

export async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      out: { type: 'string', short: 'o' },
      partial: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (!values.out) throw new CacheMergeError(`the merged cache needs a file: -o MERGED.json\n\n${HELP}`);
  if (positionals.length === 0) throw new CacheMergeError(`no caches to merge\n\n${HELP}`);
  const summary = mergeCaches(positionals, values.out, { partial: values.partial });
  const from = summary.shards.length > 0 ? `shards ${summary.shards.join(', ')}` : `${positionals.length} caches`;
  const duplicates = summary.duplicates > 0 ? `; ${summary.duplicates} configurations were in more than one cache (the first kept)` : '';
  process.stdout.write(`merged ${from} into ${values.out}: ${summary.entries} configurations${duplicates}\n`);
  return 0;
}
