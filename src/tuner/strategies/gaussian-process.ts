// The surrogate model of the model-based strategies: a Gaussian process over the configurations of a space (as points
// of any coordinates: Kernel Tuner's scaled space for bayes_opt), with fixed covariance hyperparameters, as Kernel Tuner
// fits it (scikit-learn's GaussianProcessRegressor with a fixed length scale, alpha = 1e-10, normalize_y), and the
// acquisition functions that rank candidates by its prediction.
//
// Observations arrive one at a time, so the Cholesky factor L of the observations' covariance grows by one row per
// observation, and so does a candidate's solve v = L⁻¹ k(X, x), which the prediction at x needs. Solves are kept per
// candidate and brought up to date when the candidate is next predicted: a candidate predicted after every observation
// costs O(n) per observation, one predicted for the first time O(n²) once, and candidates never predicted cost nothing,
// so the model works on spaces of any size. Factoring anew and solving for every candidate (what a general matrix
// library offers) would cost O(n²) per candidate and prediction: seconds per step at 400 observations of an
// 11,000-configuration space.

export const COVARIANCE_KERNELS = ['constantrbf', 'rbf', 'matern32', 'matern52'] as const;
export type CovarianceKernel = (typeof COVARIANCE_KERNELS)[number];

/** The covariance of two points at Euclidean distance r (1 at r = 0). */
export function covarianceFunction(kernel: CovarianceKernel, lengthscale: number): (r: number) => number {
  switch (kernel) {
    case 'rbf':
    case 'constantrbf': // scikit-learn's ConstantKernel(1.0) × RBF: the same function
      return (r) => Math.exp((-0.5 * r * r) / (lengthscale * lengthscale));
    case 'matern32':
      return (r) => {
        const s = (Math.sqrt(3) * r) / lengthscale;
        return (1 + s) * Math.exp(-s);
      };
    case 'matern52':
      return (r) => {
        const s = (Math.sqrt(5) * r) / lengthscale;
        return (1 + s + (s * s) / 3) * Math.exp(-s);
      };
  }
}

export interface Prediction {
  /** Posterior mean per candidate, in the observations' units. */
  mean: Float64Array;
  /** Posterior standard deviation per candidate, in the observations' units. */
  std: Float64Array;
}

/** A candidate's solve L⁻¹ k(X, x) for the first `length` observations, and its squared norm. */
interface Solve {
  point: ArrayLike<number>;
  v: Float64Array;
  length: number;
  explained: number;
}

export class GaussianProcess {
  private readonly solves = new Map<number, Solve>();
  /** Row j of L below the diagonal (j entries) and its diagonal. */
  private readonly factor: Float64Array[] = [];
  private readonly diagonal: number[] = [];
  /** L⁻¹ y and L⁻¹ 1: with them the mean of any normalisation of y is one dot product per candidate. */
  private readonly solvedY: number[] = [];
  private readonly solvedOnes: number[] = [];
  private readonly observedPoints: ArrayLike<number>[] = [];
  private readonly observed: number[] = [];
  private readonly isObserved = new Set<number>();
  private readonly values: number[] = [];

  /**
   * @param point a candidate's coordinates
   * @param covariance the covariance of two points at a Euclidean distance
   * @param noise added to the observations' variance (scikit-learn's alpha): keeps the factor positive definite
   */
  constructor(
    private readonly point: (candidate: number) => ArrayLike<number>,
    private readonly covariance: (r: number) => number,
    private readonly noise = 1e-10,
  ) {}

  /** Number of observations. */
  get size(): number {
    return this.observed.length;
  }

  /** The observed candidates, in order. */
  get observations(): readonly number[] {
    return this.observed;
  }

  /** The candidate's solve, brought up to date with every observation. */
  private solve(candidate: number): Solve {
    let s = this.solves.get(candidate);
    if (!s) {
      s = { point: this.point(candidate), v: new Float64Array(16), length: 0, explained: 0 };
      this.solves.set(candidate, s);
    }
    const n = this.size;
    if (s.v.length < n) {
      const grown = new Float64Array(Math.max(n, 2 * s.v.length));
      grown.set(s.v.subarray(0, s.length));
      s.v = grown;
    }
    const v = s.v;
    for (let j = s.length; j < n; j++) {
      const row = this.factor[j]!;
      let dot = 0;
      for (let m = 0; m < j; m++) dot += row[m]! * v[m]!;
      const vj = (this.covariance(distance(s.point, this.observedPoints[j]!)) - dot) / this.diagonal[j]!;
      v[j] = vj;
      s.explained += vj * vj;
    }
    s.length = n;
    return s;
  }

  /** Adds the observation `value` at a candidate (each candidate at most once). */
  observe(candidate: number, value: number): void {
    if (!Number.isFinite(value)) throw new RangeError(`Expected a finite observation but received ${value}`);
    if (this.isObserved.has(candidate)) throw new RangeError(`candidate ${candidate} is observed already`);
    const s = this.solve(candidate);
    const n = this.size;
    // The new row of L is the candidate's solve; its diagonal what the earlier observations leave unexplained (at
    // least the noise, which rounding could otherwise take below zero for near-duplicate points).
    const diagonal = Math.sqrt(Math.max(this.covariance(0) + this.noise - s.explained, this.noise));
    let dotY = 0;
    let dotOnes = 0;
    for (let k = 0; k < n; k++) {
      dotY += s.v[k]! * this.solvedY[k]!;
      dotOnes += s.v[k]! * this.solvedOnes[k]!;
    }
    this.factor.push(s.v.slice(0, n));
    this.diagonal.push(diagonal);
    this.solvedY.push((value - dotY) / diagonal);
    this.solvedOnes.push((1 - dotOnes) / diagonal);
    this.observedPoints.push(s.point);
    this.observed.push(candidate);
    this.isObserved.add(candidate);
    this.values.push(value);
  }

  /**
   * The log marginal likelihood of the observations (normalised as predict normalises them) under this covariance:
   * how well it explains them, to choose among covariances (type-II maximum likelihood).
   */
  logMarginalLikelihood(): number {
    const n = this.size;
    if (n === 0) return 0;
    const yMean = this.values.reduce((a, b) => a + b, 0) / n;
    const yStd = Math.sqrt(this.values.reduce((a, b) => a + (b - yMean) ** 2, 0) / n) || 1;
    let fit = 0;
    let logDeterminant = 0;
    for (let j = 0; j < n; j++) {
      fit += ((this.solvedY[j]! - yMean * this.solvedOnes[j]!) / yStd) ** 2;
      logDeterminant += 2 * Math.log(this.diagonal[j]!);
    }
    return -0.5 * fit - 0.5 * logDeterminant - 0.5 * n * Math.log(2 * Math.PI);
  }

  /** The posterior at candidates (`mean[k]` and `std[k]` are those of `candidates[k]`), with the observations normalised to mean 0 and standard deviation 1 (normalize_y). */
  predict(candidates: ArrayLike<number>): Prediction {
    const n = this.size;
    const m = candidates.length;
    const mean = new Float64Array(m);
    const std = new Float64Array(m);
    const prior = this.covariance(0);
    if (n === 0) return { mean, std: std.fill(Math.sqrt(prior)) };
    const yMean = this.values.reduce((a, b) => a + b, 0) / n;
    const yStd = Math.sqrt(this.values.reduce((a, b) => a + (b - yMean) ** 2, 0) / n) || 1;
    for (let k = 0; k < m; k++) {
      const s = this.solve(candidates[k]!);
      let dotY = 0;
      let dotOnes = 0;
      for (let j = 0; j < n; j++) {
        dotY += s.v[j]! * this.solvedY[j]!;
        dotOnes += s.v[j]! * this.solvedOnes[j]!;
      }
      // v·L⁻¹((y - m)/s) un-normalised: s × that + m.
      mean[k] = dotY - yMean * dotOnes + yMean;
      std[k] = Math.sqrt(Math.max(prior - s.explained, 0)) * yStd;
    }
    return { mean, std };
  }
}

function distance(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let sum = 0;
  for (let q = 0; q < a.length; q++) sum += (a[q]! - b[q]!) ** 2;
  return Math.sqrt(sum);
}

// ---------------------------------------------------------------- the normal distribution

/**
 * The complementary error function with a relative error below 1.2e-7 everywhere, tails included (the Chebyshev
 * fit of Numerical Recipes' erfcc): the acquisition functions compare candidates far in the tails, where 1 - erf(x)
 * would round to 0 for all of them.
 */
export function erfc(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z - 1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? r : 2 - r;
}

export function normalCdf(z: number): number {
  return 0.5 * erfc(-z / Math.SQRT2);
}

export function normalPdf(z: number): number {
  return Math.exp(-0.5 * z * z) / Math.sqrt(2 * Math.PI);
}

// ---------------------------------------------------------------- acquisition functions (lower is better)

/** Kernel Tuner's acquisition functions by name: each scores a candidate from its posterior; the lowest score is evaluated next. */
export type Acquisition = (mean: number, std: number, exploration: number) => number;

/** Minus the expected improvement over the best observed value lowered by `exploration` (fplus). */
export function expectedImprovement(best: number): Acquisition {
  return (mean, std, exploration) => {
    const gain = best - exploration - mean;
    const z = gain / (std + 1e-9);
    return -(gain * normalCdf(z) + std * normalPdf(z));
  };
}

/** One minus the probability of improving on the best observed value lowered by `exploration`. */
export function probabilityOfImprovement(best: number): Acquisition {
  return (mean, std, exploration) => normalCdf(-(best - exploration - mean) / (std + 1e-9));
}

/** The lower confidence bound mean - exploration × std. */
export const lowerConfidenceBound: Acquisition = (mean, std, exploration) => mean - exploration * std;
