// Kernel Tuner's simulation mode: a cache replayed as an evaluator, so any strategy runs with no GPU.
import type { SearchSpace } from '../space/search-space';
import type { Clock } from '../strategies/search';
import { configKey, type Config, type ConfigResult } from '../types';
import type { CacheFile } from './cache-file';
import { CacheMismatchError } from './format';

export class SimulationMissError extends Error {
  override name = 'SimulationMissError';
  constructor(
    readonly path: string,
    readonly key: string,
    readonly config: Config,
  ) {
    super(
      `Configuration "${key}" (${Object.entries(config).map(([k, v]) => `${k}=${String(v)}`).join(', ')}) was never measured in ${path}; ` +
        'simulation replays measured configurations only. Tune it on a GPU with this cache file to add it.',
    );
  }
}

// ---------------------------------------------------------------- simulation

export interface Replay {
  /**
   * Returns the cached result of a configuration (on any worker); SimulationMissError when it satisfies the
   * restrictions but was never measured (Kernel Tuner's simulation mode raises a ValueError there too).
   */
  evaluate: (config: Config) => Promise<ConfigResult>;
  /**
   * Simulated time, as Kernel Tuner's simulation mode charges it (runners/simulation.py): each configuration's first
   * evaluation adds its recorded compile, verification and benchmark time (and our load time, 0 in Kernel Tuner's
   * caches), failed configurations included; a repeat (served from the search's memo) and a configuration the
   * restrictions exclude add nothing. The cache's framework_time and strategy_time are not charged: Kernel Tuner
   * replaces them by its own wall time, which would make a replay depend on the machine; this clock stays deterministic.
   */
  clock: Clock;
}

/**
 * Replays a cache as an evaluator, so any strategy runs with no GPU (Kernel Tuner's simulation mode). With a search
 * space, a configuration outside it comes back as 'restricted' with the reason, as Kernel Tuner reports InvalidConfig.
 */
export function replay(cache: CacheFile, options: { space?: SearchSpace } = {}): Replay {
  const { space } = options;
  const keys = cache.header.tune_params_keys;
  if (space && space.paramNames.join('\u0000') !== keys.join('\u0000')) {
    throw new CacheMismatchError(cache.path, 'tune_params_keys', keys, space.paramNames);
  }
  let simulatedMs = 0;
  return {
    clock: { now: () => simulatedMs },
    evaluate: async (config) => {
      const key = configKey(config, keys);
      const result = cache.get(key);
      if (result) {
        const t = result.timings;
        if (t) simulatedMs += t.compileMs + t.loadMs + t.verifyMs + t.benchmarkMs;
        return result;
      }
      const reason = space?.explain(config);
      if (reason !== undefined) return { config, key, status: 'restricted', error: { message: `not in the search space: ${reason}` } };
      throw new SimulationMissError(cache.path, key, config);
    },
  };
}

