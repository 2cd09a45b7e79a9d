import { CholeskyDecomposition, Matrix } from 'ml-matrix';
import { describe, expect, it } from 'vitest';
import { Random } from '../../src/tuner/space/random';
import {
  covarianceFunction,
  expectedImprovement,
  GaussianProcess,
  lowerConfidenceBound,
  normalCdf,
  normalPdf,
  probabilityOfImprovement,
} from '../../src/tuner/strategies/gaussian-process';

/** The posterior as scikit-learn's GaussianProcessRegressor(normalize_y=True, alpha) computes it: one dense solve, with ml-matrix. */
function directPosterior(points: number[][], observed: number[], values: number[], at: number[], cov: (r: number) => number, alpha: number) {
  const dist = (a: number[], b: number[]) => Math.sqrt(a.reduce((s, x, q) => s + (x - b[q]!) ** 2, 0));
  const n = observed.length;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / n) || 1;
  const K = new Matrix(n, n);
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) K.set(i, j, cov(dist(points[observed[i]!]!, points[observed[j]!]!)) + (i === j ? alpha : 0));
  const chol = new CholeskyDecomposition(K);
  const weights = chol.solve(Matrix.columnVector(values.map((y) => (y - mean) / std)));
  return at.map((c) => {
    const k = Matrix.columnVector(observed.map((o) => cov(dist(points[c]!, points[o]!))));
    const v = chol.solve(k);
    const mu = k.transpose().mmul(weights).get(0, 0) * std + mean;
    const variance = Math.max(cov(0) - k.transpose().mmul(v).get(0, 0), 0) * std * std;
    return { mean: mu, std: Math.sqrt(variance) };
  });
}

describe('the Gaussian process', () => {
  it('has the posterior of a dense solve, for candidates predicted before, between and after the observations', () => {
    const rng = new Random(7);
    const points = Array.from({ length: 60 }, () => [rng.next(), rng.next(), rng.next()]);
    const f = (p: number[]) => Math.sin(3 * p[0]!) + p[1]! * p[2]! + 2;
    const cov = covarianceFunction('matern52', 0.7);
    const gp = new GaussianProcess((i) => points[i]!, cov, 1e-6);
    const observed = [3, 17, 25, 40, 41, 8, 55, 12, 30, 2, 47, 19];
    const early = [0, 1, 5, 9];
    observed.slice(0, 5).forEach((i) => gp.observe(i, f(points[i]!)));
    gp.predict(early); // these candidates' solves stop at 5 observations and catch up later
    observed.slice(5).forEach((i) => gp.observe(i, f(points[i]!)));
    const at = [...early, 4, 6, 33, 58];
    const got = gp.predict(at);
    const want = directPosterior(points, observed, observed.map((i) => f(points[i]!)), at, cov, 1e-6);
    at.forEach((_, k) => {
      expect(got.mean[k]).toBeCloseTo(want[k]!.mean, 6);
      expect(got.std[k]).toBeCloseTo(want[k]!.std, 6);
    });
  });

  it('has the log marginal likelihood of a dense computation, highest near the length scale that made the data', () => {
    const rng = new Random(11);
    const points = Array.from({ length: 40 }, () => [rng.next() * 4]);
    const f = (p: number[]) => Math.sin(2 * p[0]!) + 3;
    const observed = Array.from({ length: 40 }, (_, i) => i);
    const values = observed.map((i) => f(points[i]!));
    const likelihood = (lengthscale: number) => {
      const gp = new GaussianProcess((i) => points[i]!, covarianceFunction('rbf', lengthscale), 1e-6);
      observed.forEach((i, k) => gp.observe(i, values[k]!));
      return gp.logMarginalLikelihood();
    };
    // log p(y) = -½ yᵀK⁻¹y - ½ log|K| - n/2 log 2π of the normalised values, with ml-matrix.
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const std = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
    const y = Matrix.columnVector(values.map((v) => (v - mean) / std));
    const cov = covarianceFunction('rbf', 0.5);
    const K = new Matrix(40, 40);
    for (let i = 0; i < 40; i++) for (let j = 0; j < 40; j++) K.set(i, j, cov(Math.abs(points[i]![0]! - points[j]![0]!)) + (i === j ? 1e-6 : 0));
    const chol = new CholeskyDecomposition(K);
    let logDeterminant = 0;
    for (let i = 0; i < 40; i++) logDeterminant += 2 * Math.log(chol.lowerTriangularMatrix.get(i, i));
    const want = -0.5 * y.transpose().mmul(chol.solve(y)).get(0, 0) - 0.5 * logDeterminant - 20 * Math.log(2 * Math.PI);
    expect(likelihood(0.5)).toBeCloseTo(want, 4);
    // sin(2x) varies over about half a unit: far shorter or longer length scales explain it worse.
    expect(likelihood(0.5)).toBeGreaterThan(likelihood(0.05));
    expect(likelihood(0.5)).toBeGreaterThan(likelihood(5));
  });

  it('interpolates its observations and is least certain far from them', () => {
    const points = Array.from({ length: 21 }, (_, i) => [i / 20]);
    const gp = new GaussianProcess((i) => points[i]!, covarianceFunction('rbf', 0.2), 1e-10);
    for (const i of [0, 5, 10]) gp.observe(i, Math.cos(points[i]![0]! * 4));
    const { mean, std } = gp.predict([0, 5, 10, 7, 20]);
    [0, 5, 10].forEach((i, k) => expect(mean[k]).toBeCloseTo(Math.cos(points[i]![0]! * 4), 4));
    expect(Math.max(std[0]!, std[1]!, std[2]!)).toBeLessThan(1e-3);
    expect(std[3]).toBeGreaterThan(1e-3); // between observations
    expect(std[4]).toBeGreaterThan(std[3]!); // twice as far from the nearest as the span between them
    expect(gp.observations).toEqual([0, 5, 10]);
  });

  it('predicts the prior before any observation and refuses a candidate twice or a non-finite value', () => {
    const gp = new GaussianProcess((i) => [i], covarianceFunction('matern32', 1), 1e-10);
    expect(gp.predict([0, 1])).toEqual({ mean: new Float64Array([0, 0]), std: new Float64Array([1, 1]) });
    gp.observe(0, 1);
    expect(() => gp.observe(0, 2)).toThrow(/candidate 0 is observed already/);
    expect(() => gp.observe(1, Infinity)).toThrow(/finite observation/);
  });

  it("has scikit-learn's covariance functions", () => {
    // At r = length scale: RBF exp(-1/2); Matérn 3/2 (1 + √3) e^-√3; Matérn 5/2 (1 + √5 + 5/3) e^-√5.
    expect(covarianceFunction('rbf', 2)(2)).toBeCloseTo(Math.exp(-0.5), 12);
    expect(covarianceFunction('constantrbf', 2)(2)).toBeCloseTo(Math.exp(-0.5), 12);
    expect(covarianceFunction('matern32', 1.5)(1.5)).toBeCloseTo(0.4833577245965077, 12);
    expect(covarianceFunction('matern52', 1.5)(1.5)).toBeCloseTo(0.5239941088318203, 12);
    for (const k of ['rbf', 'matern32', 'matern52'] as const) expect(covarianceFunction(k, 1)(0)).toBe(1);
  });
});

describe('the normal distribution and the acquisition functions', () => {
  // Reference values from scipy.stats.norm.
  it.each([
    [-10, 7.61985302416047e-24, 7.69459862670642e-23],
    [-3, 0.0013498980316300933, 0.0044318484119380075],
    [-1, 0.15865525393145707, 0.24197072451914337],
    [0, 0.5, 0.3989422804014327],
    [1.5, 0.9331927987311419, 0.12951759566589174],
    [5, 0.9999997133484281, 1.4867195147342979e-6],
  ])('at %d: cdf and pdf to a relative 1e-6, tails included', (z, cdf, pdf) => {
    expect(Math.abs(normalCdf(z) - cdf) / cdf).toBeLessThan(1e-6);
    expect(Math.abs(normalPdf(z) - pdf) / pdf).toBeLessThan(1e-12);
  });

  it("give Kernel Tuner's values (scipy's, lower is better)", () => {
    // bayes_opt.py: fplus = best - exploration, z = (fplus - mu) / (std + 1e-9); EI = (fplus - mu) Φ(z) + std φ(z).
    expect(expectedImprovement(1.2)(1.0, 0.5, 0)).toBeCloseTo(-0.3152194184737265, 6);
    expect(expectedImprovement(1.2)(1.0, 0.5, 0.1)).toBeCloseTo(-0.2534473179316382, 6);
    expect(probabilityOfImprovement(1.2)(1.0, 0.5, 0.1)).toBeCloseTo(0.4207402907173141, 6);
    expect(lowerConfidenceBound(1.0, 0.5, 2)).toBe(0);
    // Far in the tail the improvement is tiny but still ranks candidates (8.13e-71 from scipy).
    expect(-expectedImprovement(0.5)(3.0, 0.2, 1.0) / 8.134197574186654e-71).toBeCloseTo(1, 3);
    expect(-expectedImprovement(0.5)(3.0, 0.2, 1.0)).toBeGreaterThan(-expectedImprovement(0.5)(3.1, 0.2, 1.0));
  });
});
