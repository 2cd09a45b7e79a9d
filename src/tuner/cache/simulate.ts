// Kernel Tuner's simulation mode for a whole spec: its strategy searches its space with every evaluation answered from
// a cache of a real run (`tune --simulate`, and "Tune parameters" in the editor where no GPU is present).
import type { Shard, SearchProgress } from '../strategies';
import { resolveStrategy } from '../strategies';
import { ResultMetrics, type MetricOptions } from '../run/metrics';
import { SearchSpace } from '../space/search-space';
import { TuningSpecError, type TuningSpec } from '../spec/tuning-spec';
import type { ConfigResult, TuneResult } from '../types';
import { CacheFile, throughCache } from './cache-file';
import { replay } from './replay';

/**
 * Runs the spec's strategy over the spec's space (or a shard of it) with every evaluation answered from `cache`; the
 * results replayed go into `options.cache` when given, as a run on the GPU would write them.
 */
export async function simulate(
  spec: TuningSpec,
  kernelName: string,
  cache: CacheFile,
  options: { seed?: number | undefined; cache?: string | undefined; shard?: Shard | undefined; metrics: MetricOptions },
  onResult: (r: ConfigResult, p: SearchProgress) => void,
): Promise<{ result: TuneResult; deviceName: string }> {
  const space = new SearchSpace(spec.tuneParams, spec.restrictions, spec.blockSizeNames ? { blockSizeNames: spec.blockSizeNames } : {});
  const { evaluate, clock } = replay(cache, { space });
  const { device_name: deviceName, problem_size: problemSize } = cache.header;
  // The replayed measurements get the spec's metrics, and the search its objective, as on the GPU.
  const metrics = ResultMetrics.create(options.metrics, Object.keys(spec.tuneParams));
  const { objective } = metrics;
  const out = options.cache === undefined ? undefined : CacheFile.open(options.cache, { deviceName, kernelName, problemSize, tuneParams: spec.tuneParams, objective: objective.name, ...(options.shard && { shard: options.shard }) });
  const strategy = resolveStrategy(spec.strategy)(spec.strategyOptions);
  try {
    const result = await strategy.run(
      space,
      throughCache(out, (config) => evaluate(config), (r) => metrics.apply(r)),
      {
        objective,
        clock,
        ...(options.seed !== undefined && { seed: options.seed }),
        ...(options.shard && { shard: options.shard }),
        ...(spec.maxFevals !== undefined && { maxFevals: spec.maxFevals }),
        ...(spec.timeLimitS !== undefined && { timeLimitMs: spec.timeLimitS * 1000 }),
        onResult,
      },
    );
    return { result: { ...result, objective }, deviceName };
  } finally {
    out?.close();
  }
}

/** A cache to replay, refused when it holds another kernel's results. */
export function loadReplayCache(cachePath: string, kernelName: string): CacheFile {
  const cache = CacheFile.load(cachePath);
  if (cache.header.kernel_name !== kernelName) {
    throw new TuningSpecError(`${cachePath} holds results for kernel '${cache.header.kernel_name}', not '${kernelName}'`);
  }
  return cache;
}
