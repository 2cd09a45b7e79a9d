// The command registry: name → a summary for the usage text and a lazy loader of its module.

export interface CliCommand {
  run(args: string[]): Promise<number>;
  /**
   * The command has nothing left to do once run() resolved and its output is written: the CLI exits then instead of
   * waiting for its GPU workers to shut down (they exit on their own when the parent's channel closes).
   */
  exitWhenDone?: boolean;
}

interface Entry {
  summary: string;
  load(): Promise<CliCommand>;
}

export const commands: Record<string, Entry> = {
  devices: { summary: 'list the GPUs with their limits, driver and NVRTC versions', load: () => import('./devices') },
  tune: { summary: 'tune a kernel from a spec file (Kernel Tuner semantics, no LLM), or replay a cache with --simulate', load: () => import('./tune') },
  auto: { summary: 'let a model make a kernel tunable and faster, step by step, tuning every candidate on the GPU', load: () => import('./auto') },
  probe: { summary: 'compile, check and time a vector add over a few block sizes (a health check of the GPU path)', load: () => import('./probe') },
  'merge-caches': { summary: "combine the caches of a search's shards (tune --shard I/N) into one Kernel Tuner cache", load: () => import('./merge-caches') },
};

export function usage(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: llm-kernel-tuner <command> [options]   (llm-kernel-tuner <command> --help for its options)\n\ncommands:\n${lines.join('\n')}\n\n--debug prints stack traces of errors.\n`;
}
