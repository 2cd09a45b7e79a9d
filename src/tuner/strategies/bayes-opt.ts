// Kernel Tuner's bayes_opt: Bayesian optimisation with a Gaussian process (gaussian-process.ts) over every configuration
// of the space in Kernel Tuner's scaled coordinates. An initial sample (popsize valid results: a Latin hypercube, or
// random) fits the model; then acquisition functions pick which unvisited configuration to evaluate next from the
// posterior: expected improvement (ei), probability of improvement (poi), the lower confidence bound (lcb, and
// lcb-srinivas with its growing exploration), or Kernel Tuner's portfolios of ei, poi and lcb:
//  - multi: each round every function proposes its best candidate; a function that proposed the same as another five
//    rounds running is dropped unless its discounted results are the best of those in that situation;
//  - multi-advanced: each round every function proposes a distinct candidate; one whose discounted results are worse
//    than the mean by the required improvement factor five times is dropped, one better five times is kept alone;
//  - multi-fast: each round every function proposes a distinct candidate; the model is refitted after the round;
//  - multi-ultrafast (the default): multi-fast that refits only when fitting and predicting took at most a fifth of
//    the round's evaluation time (on the search's clock: in a replay, predictions take no time, so it refits every
//    round), or five rounds ago.
// The exploration factor is Kernel Tuner's contextual variance ("CV"): the mean posterior deviation relative to the
// improvement over the initial sample, normalised by the deviation after the initial sample; or a fixed number.
// Failed configurations are not fitted (Kernel Tuner fits compile and runtime failures as 1.8e308); in the portfolios'
// bookkeeping they count as the initial sample's mean (multi) or the results' median (multi-advanced), as there.
// As Kernel Tuner's, it evaluates 100 configurations when neither the run nor its options set max_fevals.
// A round's candidates come from one prediction, so the portfolios evaluate them as one batch, spread over the workers.

import { z } from 'zod';
import {
  COVARIANCE_KERNELS,
  covarianceFunction,
  expectedImprovement,
  GaussianProcess,
  lowerConfidenceBound,
  probabilityOfImprovement,
  type Acquisition,
  type Prediction,
} from './gaussian-process';
import { budgetOptions, parseStrategyOptions } from './options';
import { latinHypercube } from './population';
import { defineStrategy, type SearchContext, type Strategy } from './search';

export const BAYES_OPT_METHODS = ['poi', 'ei', 'lcb', 'lcb-srinivas', 'multi', 'multi-advanced', 'multi-fast', 'multi-ultrafast'] as const;
export type BayesOptMethod = (typeof BAYES_OPT_METHODS)[number];
const PORTFOLIO_FUNCTIONS = ['ei', 'poi', 'lcb'] as const;
type PortfolioFunction = (typeof PORTFOLIO_FUNCTIONS)[number];

/** Kernel Tuner's max_fevals default for bayes_opt, used when neither the run nor the options set one. */
const DEFAULT_MAX_FEVALS = 100;
/** multi-ultrafast refits when predicting took at most 1/PREDICT_EVAL_RATIO of the evaluations, or every this many rounds. */
const PREDICT_EVAL_RATIO = 5;

const OPTIONS = {
  ...budgetOptions,
  covariancekernel: z.enum(COVARIANCE_KERNELS).default('matern32'),
  /** The kernel's length scale in the scaled space (fixed, not fitted). */
  covariancelengthscale: z.number().positive().default(1.5),
  /** The acquisition function or portfolio. */
  method: z.enum(BAYES_OPT_METHODS).default('multi-ultrafast'),
  /** The initial sample: a Latin hypercube (combinations that fail the restrictions are replaced by random configurations) or random. */
  samplingmethod: z.enum(['lhs', 'random']).default('lhs'),
  /** Valid results in the initial sample. */
  popsize: z.number().int().positive().default(20),
  methodparams: z
    .object({
      /** 'CV' (contextual variance) or a fixed number. */
      explorationfactor: z.union([z.literal('CV'), z.number()]).default('CV'),
      /** lcb-srinivas's zeta. */
      zeta: z.number().min(0).default(1),
      /** multi: rounds of duplicate proposals before a function may be dropped; multi-advanced: the count of worse or better rounds that decides. */
      skip_duplicate_after: z.number().int().positive().default(5),
    })
    .strict()
    .default({ explorationfactor: 'CV', zeta: 1, skip_duplicate_after: 5 }),
  /** The functions of the portfolios. */
  multi_af_names: z.array(z.enum(PORTFOLIO_FUNCTIONS)).min(1).default([...PORTFOLIO_FUNCTIONS]),
  /** Weight of older results in the portfolios' discounted sums; Kernel Tuner's default is 0.65 for multi, else 0.95. */
  multi_af_discount_factor: z.number().min(0).max(1).optional(),
  /** multi-advanced: how much worse (or better) than the mean a function's discounted results must be to count. */
  multi_afs_required_improvement_factor: z.number().min(0).default(0.1),
};

export function bayesOpt(raw: Record<string, unknown> = {}): Strategy {
  const options = parseStrategyOptions('bayes_opt', OPTIONS, raw);
  const { method, methodparams: params, multi_af_names: functions } = options;
  const discount = options.multi_af_discount_factor ?? (method === 'multi' ? 0.65 : 0.95);
  const covariance = covarianceFunction(options.covariancekernel, options.covariancelengthscale);
  const parallelism = method.startsWith('multi')
    ? "the initial sample is one batch, and so is each round's proposals (one per acquisition function)"
    : 'the initial sample is one batch; after it each configuration is chosen from the results of all before it';
  return defineStrategy('bayes_opt', { parallelism, options, defaultMaxFevals: () => DEFAULT_MAX_FEVALS }, async (ctx) => {
    if (ctx.space.size === 0) return 'the space is empty';
    const bo = new BayesianOptimisation(ctx, covariance, params.explorationfactor, params.zeta);
    await bo.initialSample(options.popsize, options.samplingmethod);
    switch (method) {
      case 'multi':
        await bo.multi(functions, params.skip_duplicate_after, discount);
        break;
      case 'multi-advanced':
        await bo.multiAdvanced(functions, params.skip_duplicate_after, discount, options.multi_afs_required_improvement_factor);
        break;
      case 'multi-fast':
      case 'multi-ultrafast':
        await bo.multiFast(functions, method === 'multi-ultrafast');
        break;
      default:
        await bo.single(method);
    }
  });
}

/** The discounted sum of a function's results, the latest weighing most. */
/** A prediction of the unvisited configurations: `mean[k]` and `std[k]` are those of `candidates[k]`. */
interface Posterior extends Prediction {
  candidates: number[];
}

function discounted(results: readonly number[], factor: number): number {
  return results.reduce((sum, r, i) => sum + r * factor ** (results.length - 1 - i), 0);
}

class BayesianOptimisation {
  private readonly gp: GaussianProcess;
  /** Evaluated configurations whose results the model has not been fitted with yet. */
  private unfitted: number[] = [];
  private readonly valid: number[] = [];
  private best = Infinity;
  private initialMean = NaN;
  private initialStd = 0;

  constructor(
    private readonly ctx: SearchContext,
    covariance: (r: number) => number,
    private readonly exploration: 'CV' | number,
    private readonly zeta: number,
  ) {
    this.gp = new GaussianProcess((i) => ctx.space.scale(ctx.space.indicesAt(i)), covariance);
  }

  private get done(): boolean {
    return this.ctx.exhausted;
  }

  private unvisited(i: number): boolean {
    return this.ctx.known(i) === undefined;
  }

  /** Evaluates a batch and records its valid results for the next fit. */
  private async evaluate(batch: number[]): Promise<void> {
    await this.ctx.evaluateAll(batch);
    for (const i of batch) {
      const value = this.ctx.known(i)!;
      if (!Number.isFinite(value)) continue;
      this.valid.push(value);
      this.best = Math.min(this.best, value);
      this.unfitted.push(i);
    }
  }

  private fit(): void {
    for (const i of this.unfitted) this.gp.observe(i, this.ctx.known(i)!);
    this.unfitted = [];
  }

  /** The posterior at every unvisited configuration (Kernel Tuner predicts those only). */
  private predict(): Posterior {
    const candidates: number[] = [];
    for (let i = 0; i < this.ctx.space.size; i++) if (this.unvisited(i)) candidates.push(i);
    return { candidates, ...this.gp.predict(candidates) };
  }

  /** The mean posterior deviation over the configurations still unvisited. */
  private meanStd(prediction: Posterior): number {
    let sum = 0;
    let n = 0;
    prediction.candidates.forEach((i, k) => {
      if (!this.unvisited(i)) return;
      sum += prediction.std[k]!;
      n++;
    });
    return n > 0 ? sum / n : 0;
  }

  /** Kernel Tuner's exploration factor: a fixed number, or the contextual variance of the prediction. */
  private explorationFactor(prediction: Posterior): number {
    if (this.exploration !== 'CV') return this.exploration;
    if (this.best === Infinity) return 0.01;
    const spread = this.meanStd(prediction);
    if (this.best <= 0) return Math.abs(spread / this.best);
    const variance = spread / (this.initialMean / this.best);
    return this.initialStd ? variance / this.initialStd : variance;
  }

  private acquisition(name: BayesOptMethod): Acquisition {
    switch (name) {
      case 'ei':
        return expectedImprovement(this.best);
      case 'poi':
        return probabilityOfImprovement(this.best);
      case 'lcb':
        return lowerConfidenceBound;
      case 'lcb-srinivas': {
        // Srinivas et al.'s schedule: beta grows with the evaluations t in d dimensions; delta is the exploration factor.
        const t = this.ctx.evaluations;
        const d = this.ctx.space.paramNames.length;
        return (mean, std, delta) => {
          const beta = Math.sqrt(Math.max(0, this.zeta * 2 * Math.log((t ** (d / 2 + 2) * Math.PI ** 2) / (3 * delta))));
          return mean - beta * std;
        };
      }
      default:
        throw new RangeError(`${name} is a portfolio, not an acquisition function`);
    }
  }

  /** The unvisited configuration (not in `taken`) with the lowest acquisition value; the first in space order on ties. */
  private propose(name: BayesOptMethod, prediction: Posterior, factor: number, taken: ReadonlySet<number> = new Set()): number | undefined {
    const score = this.acquisition(name);
    let best: number | undefined;
    let bestScore = Infinity;
    for (let k = 0; k < prediction.candidates.length; k++) {
      const i = prediction.candidates[k]!;
      if (!this.unvisited(i) || taken.has(i)) continue;
      const s = score(prediction.mean[k]!, prediction.std[k]!, factor);
      if (best === undefined || s < bestScore) {
        best = i;
        bestScore = s;
      }
    }
    return best;
  }

  async initialSample(popsize: number, sampling: 'lhs' | 'random'): Promise<void> {
    const { space, rng } = this.ctx;
    if (sampling === 'lhs') {
      // Combinations that fail the restrictions are skipped here; random configurations make up the sample below.
      const sample = new Set<number>();
      for (const indices of latinHypercube(space.valueCounts, Math.min(popsize, space.size), rng)) {
        const position = space.indexOfIndices(indices);
        if (position !== undefined) sample.add(position);
      }
      await this.evaluate([...sample]);
    }
    while (this.valid.length < popsize && !this.done) {
      const draws: number[] = [];
      for (let k = this.valid.length; k < popsize; k++) {
        const i = this.ctx.randomUnvisited();
        if (i !== undefined) draws.push(i);
      }
      await this.evaluate(draws);
    }
    this.fit();
    this.initialMean = this.valid.reduce((a, b) => a + b, 0) / this.valid.length;
    this.initialStd = this.meanStd(this.predict());
  }

  /** One acquisition function: predict, evaluate its best candidate, refit. */
  async single(name: BayesOptMethod): Promise<void> {
    while (!this.done) {
      const prediction = this.predict();
      const next = this.propose(name, prediction, this.explorationFactor(prediction));
      if (next === undefined) return;
      await this.evaluate([next]);
      this.fit();
    }
  }

  /** multi-fast (and multi-ultrafast, which refits only when that is cheap next to the evaluations). */
  async multiFast(functions: readonly PortfolioFunction[], ultrafast: boolean): Promise<void> {
    let prediction = this.predict();
    let predictionMs = 0;
    let roundsSinceFit = 0;
    while (!this.done) {
      const factor = this.explorationFactor(prediction);
      const round = new Set<number>();
      for (const name of functions) {
        const next = this.propose(name, prediction, factor, round);
        if (next !== undefined) round.add(next);
      }
      if (round.size === 0) return;
      const started = this.ctx.elapsedMs;
      await this.evaluate([...round]);
      const evaluationMs = this.ctx.elapsedMs - started;
      if (!ultrafast || predictionMs * PREDICT_EVAL_RATIO <= evaluationMs || ++roundsSinceFit >= PREDICT_EVAL_RATIO) {
        const fitting = this.ctx.elapsedMs;
        this.fit();
        prediction = this.predict();
        predictionMs = this.ctx.elapsedMs - fitting;
        roundsSinceFit = 0;
      }
    }
  }

  /** multi: every function proposes from one prediction; duplicate proposers are dropped by their discounted results. */
  async multi(functions: readonly PortfolioFunction[], skipAfter: number, discount: number): Promise<void> {
    const duplicates = functions.map(() => new Array<number>(skipAfter).fill(0));
    const results: number[][] = functions.map(() => []);
    const dropped = new Set<number>();
    while (!this.done) {
      const prediction = this.predict();
      const factor = this.explorationFactor(prediction);
      const proposals: number[] = [];
      const proposer: number[] = [];
      const copies: [af: number, original: number][] = [];
      functions.forEach((name, af) => {
        if (dropped.has(af)) return;
        const next = this.propose(name, prediction, factor);
        if (next === undefined) return;
        const earlier = proposals.indexOf(next);
        duplicates[af]!.shift();
        duplicates[af]!.push(earlier >= 0 ? 1 : 0);
        if (earlier < 0) {
          proposals.push(next);
          proposer.push(af);
        } else {
          duplicates[proposer[earlier]!]![skipAfter - 1] = 1;
          copies.push([af, proposer[earlier]!]);
        }
      });
      if (proposals.length === 0) return;
      await this.evaluate(proposals);
      proposals.forEach((i, k) => {
        const value = this.ctx.known(i)!;
        results[proposer[k]!]!.push(Number.isFinite(value) ? value : this.initialMean);
      });
      for (const [af, original] of copies) results[af]!.push(results[original]!.at(-1)!);
      this.fit();
      const candidates = functions.map((_, af) => af).filter((af) => !dropped.has(af) && duplicates[af]!.reduce((a, b) => a + b, 0) >= skipAfter);
      if (candidates.length > 1) {
        const keep = candidates.reduce((a, b) => (discounted(results[b]!, discount) < discounted(results[a]!, discount) ? b : a));
        for (const af of candidates) {
          if (af === keep) duplicates[af]!.fill(0);
          else dropped.add(af);
        }
      }
    }
  }

  /** multi-advanced: functions consistently worse than the mean are dropped; one consistently better is kept alone. */
  async multiAdvanced(functions: readonly PortfolioFunction[], required: number, discount: number, improvement: number): Promise<void> {
    const results: number[][] = functions.map(() => []);
    const worse = functions.map(() => 0);
    const better = functions.map(() => 0);
    const dropped = new Set<number>();
    const active = () => functions.map((_, af) => af).filter((af) => !dropped.has(af));
    while (!this.done) {
      if (active().length === 1) return this.single(functions[active()[0]!]!);
      const median = medianOf(this.valid);
      const prediction = this.predict();
      const factor = this.explorationFactor(prediction);
      const round = new Set<number>();
      const proposer: number[] = [];
      for (const af of active()) {
        const next = this.propose(functions[af]!, prediction, factor, round);
        if (next === undefined) continue;
        round.add(next);
        proposer.push(af);
      }
      if (round.size === 0) return;
      const proposals = [...round];
      await this.evaluate(proposals);
      proposals.forEach((i, k) => {
        const value = this.ctx.known(i);
        if (value !== undefined) results[proposer[k]!]!.push(Number.isFinite(value) ? value : median);
      });
      this.fit();
      const sums = results.map((r) => discounted(r, discount));
      const live = active();
      const mean = live.reduce((a, af) => a + sums[af]!, 0) / live.length;
      sums.forEach((sum, af) => {
        if (sum > mean * (1 + improvement)) worse[af]!++;
        else if (sum < mean * (1 - improvement)) better[af]!++;
      });
      const extreme = (counts: number[], pick: (a: number, b: number) => boolean): number | undefined => {
        const top = Math.max(...live.map((af) => counts[af]!));
        if (top < required) return undefined;
        return live.filter((af) => counts[af] === top).reduce((a, b) => (pick(sums[b]!, sums[a]!) ? b : a));
      };
      const worst = extreme(worse, (b, a) => b > a);
      if (worst !== undefined) {
        dropped.add(worst);
        worse.fill(0);
        better.fill(0);
        continue;
      }
      const bestFunction = extreme(better, (b, a) => b < a);
      if (bestFunction !== undefined) return this.single(functions[bestFunction]!);
    }
  }
}

function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
