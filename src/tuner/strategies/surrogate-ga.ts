// surrogate_ga, our own strategy: a steady-state genetic algorithm whose children are chosen by a Gaussian process.
// After a small random sample, every step breeds a pool of children from all configurations evaluated so far (parents
// drawn by rank, the best most often; uniform crossover; each parameter mutated to a random value with a small chance;
// a child the restrictions rule out repaired to a random valid neighbour, as Kernel Tuner's genetic algorithm does),
// joined by the unvisited Hamming neighbours of the best configuration (so the search also climbs where breeding
// would leave it stuck), and evaluates the unvisited candidate with the highest expected improvement, measured from
// 10 % below the best (exploration), under a Gaussian process fitted to the log of the times, those above the
// 75th percentile of them fitted as that percentile (clip_quantile): the slowest quarter of a space (often 100 times
// slower than the best) would otherwise set the model's scale and smoothness, and the model would then rank the
// children near the best configurations by what it learnt from the worst ones. Breeding keeps the search among
// recombinations of good configurations, which suits these spaces, whose parameters act largely independently; the
// model spends each evaluation on the child most likely to improve.
// The process uses a Hamming-distance kernel (each parameter a category: exp(-differing parameters / (2 ℓ²))), so no
// parameter's value order or spacing is assumed. Failed configurations are not fitted (a time
// standing for them would pull down the model around the valid configurations near them) and are never parents; a
// parameter value that failed every time it was tried (three times or more) is not tried again. Past `max_model` observations the model stops learning (its cost grows with the square
// of the observations) and keeps ranking children with what it knows; the breeding still uses every result.
// With several workers each keeps one evaluation running: a worker that finishes chooses the next child at once,
// among those not already running elsewhere.

import { z } from 'zod';
import { covarianceFunction, expectedImprovement, GaussianProcess } from './gaussian-process';
import { commonOptions, parseStrategyOptions, type ParsedOptions } from './options';
import { randomRepair } from './population';
import { defineStrategy, type SearchContext, type Strategy } from './search';

const OPTIONS = {
  ...commonOptions,
  /** Configurations sampled at random before the model chooses. */
  popsize: z.number().int().positive().default(5),
  /** Children bred per step, among which the model chooses. */
  candidates: z.number().int().positive().default(200),
  /** Selection pressure b of the parents' rank draw Beta(1, b) (Kernel Tuner's genetic algorithm: 2.5); larger favours the best more. */
  selection: z.number().min(1).default(5),
  /** Chance that each parameter of a child takes a random value. */
  mutation_rate: z.number().min(0).max(1).default(0.1),
  /** The kernel's length scale, in differing parameters; 'fit': the most likely of a range, chosen again as observations grow. */
  covariancelengthscale: z.union([z.number().positive(), z.literal('fit')]).default('fit'),
  /** The improvement (in log-time: 0.05 is about 5 %) the expected improvement is measured from: larger explores more. */
  exploration: z.number().min(0).default(0.1),
  /** How many of the best configurations have their unvisited Hamming neighbours (one parameter changed) join the bred children, so that the search also climbs where breeding would leave it stuck. */
  neighbours_of: z.number().int().min(0).default(1),
  /** Log-times above this quantile of those fitted are fitted as that quantile (1: as they are), so that the model spends itself on the good configurations. */
  clip_quantile: z.number().min(0).max(1).default(0.75),
  /** Observations the model learns from; after them it ranks children with what it knows. */
  max_model: z.number().int().positive().default(256),
};

/** The length scales 'fit' chooses among (in differing parameters). */
const LENGTH_SCALES = [0.5, 1, 1.5, 2, 3, 4, 6, 8];
/** The model is fitted again (length scale, clip ceiling) when the observations have grown by this factor since the last time. */
const REFIT_GROWTH = 1.5;

/** A parameter value whose configurations failed this many times and never succeeded is not tried again. */
const FAILED_VALUE = 3;

/** The observation noise on the normalised log-times: a little, so that near-identical results do not make the fit ill-conditioned. */
const NOISE = 1e-6;

export function surrogateGa(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('surrogate_ga', OPTIONS, raw);
  const parallelism = 'each GPU keeps one evaluation running: when one finishes, the model chooses the next child among those not running elsewhere';
  return defineStrategy('surrogate_ga', { parallelism, options }, async (ctx) => {
    if (ctx.space.size === 0) return 'the space is empty';
    const search = new SurrogateSearch(ctx, options);
    await search.initialSample();
    await Promise.all(Array.from({ length: ctx.workers }, () => search.lane()));
  });
}

type Options = ParsedOptions<typeof OPTIONS>;

class SurrogateSearch {
  private model: GaussianProcess;
  /** Fitted log-times above this are fitted as this (see clip_quantile). */
  private ceiling = Infinity;
  private readonly point: (position: number) => Float64Array;
  /** The log-times the model learns from, in order, as measured (fit clips them at the ceiling): a refit starts from these. */
  private readonly fitted: [position: number, value: number][] = [];
  private nextFit = 8;
  /** Every evaluated configuration, in order, with its objective. */
  private readonly archive: { position: number; value: number }[] = [];
  private fastest = Infinity;
  /** Per parameter and value, how many evaluated configurations had it, and how many of those failed. */
  private readonly tried: Int32Array[];
  private readonly failed: Int32Array[];
  private readonly running = new Set<number>();
  /** Predictions of a model that no longer learns do not change: they are kept. */
  private readonly frozen = new Map<number, { mean: number; std: number }>();
  private readonly counts: number[];

  constructor(
    private readonly ctx: SearchContext,
    private readonly options: Options,
  ) {
    const { space } = ctx;
    this.counts = space.valueCounts;
    this.tried = this.counts.map((n) => new Int32Array(n));
    this.failed = this.counts.map((n) => new Int32Array(n));
    const offsets = this.counts.map((_, p) => this.counts.slice(0, p).reduce((a, b) => a + b, 0));
    const width = this.counts.reduce((a, b) => a + b, 0);
    // One-hot coordinates scaled by 1/√2: the squared distance of two configurations is the number of parameters in
    // which they differ, so the RBF kernel is the Hamming-distance kernel.
    this.point = (position: number) => {
      const x = new Float64Array(width);
      space.indicesAt(position).forEach((v, p) => (x[offsets[p]! + v] = Math.SQRT1_2));
      return x;
    };
    const lengthscale = options.covariancelengthscale;
    this.model = this.fit(lengthscale === 'fit' ? 2 : lengthscale);
  }

  private fit(lengthscale: number): GaussianProcess {
    const model = new GaussianProcess(this.point, covarianceFunction('rbf', lengthscale), NOISE);
    for (const [position, value] of this.fitted) model.observe(position, Math.min(value, this.ceiling));
    return model;
  }

  /**
   * The model fitted again to every observation: the ceiling moved to the clip quantile of the log-times, and with
   * 'fit' the length scale under which the observations are most likely.
   */
  private refit(): void {
    const { clip_quantile: clipQuantile, covariancelengthscale } = this.options;
    if (clipQuantile < 1) {
      const sorted = this.fitted.map(([, y]) => y).sort((a, b) => a - b);
      this.ceiling = sorted[Math.min(sorted.length - 1, Math.floor(clipQuantile * sorted.length))]!;
    }
    this.nextFit = Math.ceil(this.fitted.length * REFIT_GROWTH);
    if (covariancelengthscale !== 'fit') {
      this.model = this.fit(covariancelengthscale);
      return;
    }
    let bestLikelihood = -Infinity;
    for (const lengthscale of LENGTH_SCALES) {
      const model = this.fit(lengthscale);
      const likelihood = model.logMarginalLikelihood();
      if (likelihood > bestLikelihood) [this.model, bestLikelihood] = [model, likelihood];
    }
  }

  private async evaluate(position: number): Promise<void> {
    this.running.add(position);
    try {
      await this.ctx.evaluate(position);
    } finally {
      this.running.delete(position);
    }
    this.record(position);
  }

  private record(position: number): void {
    const value = this.ctx.known(position)!;
    this.archive.push({ position, value });
    const failed = !Number.isFinite(value);
    this.ctx.space.indicesAt(position).forEach((v, p) => {
      this.tried[p]![v]!++;
      if (failed) this.failed[p]![v]!++;
    });
    if (failed) return;
    const y = Math.log(value);
    this.fastest = Math.min(this.fastest, y);
    if (this.model.size >= this.options.max_model) return;
    this.model.observe(position, Math.min(y, this.ceiling));
    this.fitted.push([position, y]);
    const refits = this.options.covariancelengthscale === 'fit' || this.options.clip_quantile < 1;
    if (refits && this.fitted.length >= this.nextFit) this.refit();
  }

  async initialSample(): Promise<void> {
    const { ctx } = this;
    const first = ctx.start()!; // x0 when given
    const sample = [first, ...ctx.space.sample(this.options.popsize, ctx.rng).filter((i) => i !== first)].slice(0, this.options.popsize);
    await ctx.evaluateAll(sample);
    for (const i of sample) this.record(i);
  }

  /** One worker's loop: choose a child, evaluate it, until every configuration is known. */
  async lane(): Promise<void> {
    for (;;) {
      const next = this.choose();
      if (next === undefined) return;
      await this.evaluate(next);
    }
  }

  /** A rank in [0, n): 1 - (1 - u)^(1/b), the inverse distribution function of Beta(1, b), times n. */
  private rankDraw(n: number): number {
    return Math.min(n - 1, Math.floor((1 - Math.pow(1 - this.ctx.rng.next(), 1 / this.options.selection)) * n));
  }

  private breed(): number[] {
    const { space, rng } = this.ctx;
    const ranked = [...this.archive].sort((a, b) => a.value - b.value);
    const pool = new Set<number>();
    const { candidates, mutation_rate: mutationRate } = this.options;
    // Children already evaluated or running are bred again but not kept: a few tries per wanted child.
    for (let tries = 0; pool.size < candidates && tries < 4 * candidates; tries++) {
      const a = space.indicesAt(ranked[this.rankDraw(ranked.length)]!.position);
      const b = space.indicesAt(ranked[this.rankDraw(ranked.length)]!.position);
      const child = Int32Array.from(a, (v, p) => (rng.next() < 0.5 ? v : b[p]!));
      this.counts.forEach((n, p) => {
        if (n > 1 && rng.next() < mutationRate) child[p] = rng.int(n);
      });
      const position = space.indexOfIndices(child) ?? randomRepair(space, child, rng);
      if (this.isCandidate(position)) pool.add(position);
    }
    for (const { position } of ranked.slice(0, this.options.neighbours_of)) {
      for (const neighbour of space.neighbours(position)) if (this.isCandidate(neighbour)) pool.add(neighbour);
    }
    return [...pool];
  }

  /** Unvisited, not running, and without a parameter value that failed every time it was tried (at least FAILED_VALUE times). */
  private isCandidate(position: number): boolean {
    if (this.ctx.known(position) !== undefined || this.running.has(position)) return false;
    const indices = this.ctx.space.indicesAt(position);
    return indices.every((v, p) => this.failed[p]![v]! < FAILED_VALUE || this.failed[p]![v]! < this.tried[p]![v]!);
  }

  /** The bred child with the highest expected improvement; a random unvisited configuration when breeding finds none. */
  private choose(): number | undefined {
    const pool = this.breed();
    if (pool.length === 0) return this.ctx.randomUnvisited();
    const { mean, std } = this.predict(pool);
    const improvement = expectedImprovement(this.fastest);
    let best = 0;
    let bestScore = Infinity;
    pool.forEach((_, k) => {
      const score = improvement(mean[k]!, std[k]!, this.options.exploration);
      if (score < bestScore) [best, bestScore] = [k, score];
    });
    return pool[best];
  }

  private predict(pool: number[]): { mean: Float64Array; std: Float64Array } {
    if (this.model.size < this.options.max_model) return this.model.predict(pool);
    const missing = pool.filter((i) => !this.frozen.has(i));
    const fresh = this.model.predict(missing);
    missing.forEach((i, k) => this.frozen.set(i, { mean: fresh.mean[k]!, std: fresh.std[k]! }));
    return { mean: Float64Array.from(pool, (i) => this.frozen.get(i)!.mean), std: Float64Array.from(pool, (i) => this.frozen.get(i)!.std) };
  }
}
