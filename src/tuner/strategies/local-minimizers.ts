// The local minimisers that basinhopping and dual_annealing run (Kernel Tuner hands them to scipy.optimize.minimize as
// `method`), over Kernel Tuner's scaled space where a point snaps to the configuration nearest it. Evaluations are
// asynchronous (compile, verify and time on a GPU), so these are written here as async loops rather than taken from a
// synchronous optimiser library.
//  - Nelder-Mead: scipy's (_minimize_neldermead: reflection 1, expansion 2, contraction 0.5, shrink 0.5, a first
//    simplex 5 % off x0 per coordinate, points clipped into the bounds, xatol = fatol = 1e-4);
//  - L-BFGS-B: limited-memory BFGS (10 pairs) on forward-difference gradients of step eps, its direction projected onto
//    the bounds and a backtracking Armijo line search along the projected path; stops when the projected gradient
//    vanishes, the decrease falls below scipy's ftol or a gradient is not finite (a restricted neighbour). scipy's
//    Fortran code finds its steps by a generalised Cauchy point and subspace minimisation instead: same iterates where
//    no bound is active.
//  - COBYLA without constraints (as dual_annealing calls it): a simplex of n + 1 points defines a linear model, the
//    step goes rho along its steepest descent, rho halves from rhobeg to 1e-4 when a step does not improve.
// maxfun counts calls, repeats of a configuration included, as scipy's counters do.

export type Objective = (x: Float64Array) => Promise<number>;

export const LOCAL_METHODS = ['L-BFGS-B', 'Nelder-Mead', 'COBYLA'] as const;
export type LocalMethod = (typeof LOCAL_METHODS)[number];

export interface MinimizeOptions {
  /** Lower and upper bound of each coordinate; points are clipped into them (COBYLA takes none, as scipy's). */
  bounds?: { lower: ArrayLike<number>; upper: ArrayLike<number> };
  /** Iterations, and calls of the objective: at most this many. */
  maxiter: number;
  /** The finite-difference step (L-BFGS-B). */
  eps?: number;
  /** COBYLA's first trust radius; default 1 (scipy's). */
  rhobeg?: number;
}

export interface MinimizeResult {
  x: Float64Array;
  fun: number;
  nfev: number;
}

/** Counts calls and ends the minimisation when maxfun is reached (the last value is kept). */
class Budgeted {
  nfev = 0;
  constructor(
    private readonly f: Objective,
    private readonly maxfun: number,
  ) {}
  get spent(): boolean {
    return this.nfev >= this.maxfun;
  }
  call(x: Float64Array): Promise<number> {
    this.nfev++;
    return this.f(x);
  }
}

export function minimize(method: LocalMethod, f: Objective, x0: ArrayLike<number>, options: MinimizeOptions): Promise<MinimizeResult> {
  switch (method) {
    case 'Nelder-Mead':
      return nelderMead(f, x0, options);
    case 'L-BFGS-B':
      return lbfgsb(f, x0, options);
    case 'COBYLA':
      return cobyla(f, x0, options);
  }
}

function clipper(bounds: MinimizeOptions['bounds']): (x: Float64Array) => Float64Array {
  if (!bounds) return (x) => x;
  return (x) => {
    for (let i = 0; i < x.length; i++) x[i] = Math.min(Math.max(x[i]!, bounds.lower[i]!), bounds.upper[i]!);
    return x;
  };
}

async function nelderMead(f: Objective, x0: ArrayLike<number>, options: MinimizeOptions): Promise<MinimizeResult> {
  const fun = new Budgeted(f, options.maxiter);
  const clip = clipper(options.bounds);
  const n = x0.length;
  const tol = 1e-4;
  const start = clip(Float64Array.from(x0));
  const sim: Float64Array[] = [start];
  for (let k = 0; k < n; k++) {
    const y = Float64Array.from(start);
    y[k] = y[k] !== 0 ? 1.05 * y[k]! : 0.00025;
    if (options.bounds && y[k]! > options.bounds.upper[k]!) y[k] = 2 * options.bounds.upper[k]! - y[k]!; // reflected back, as scipy does
    sim.push(clip(y));
  }
  const fsim: number[] = [];
  for (const x of sim) fsim.push(await fun.call(x));
  const sort = () => {
    const order = fsim.map((_, i) => i).sort((a, b) => fsim[a]! - fsim[b]! || a - b);
    const [s, v] = [order.map((i) => sim[i]!), order.map((i) => fsim[i]!)];
    sim.splice(0, sim.length, ...s);
    fsim.splice(0, fsim.length, ...v);
  };
  sort();
  const combine = (a: number, xa: Float64Array, b: number, xb: Float64Array) => clip(Float64Array.from(xa, (v, i) => a * v + b * xb[i]!));
  for (let iteration = 1; iteration < options.maxiter && !fun.spent; iteration++) {
    let spread = 0;
    let fspread = 0;
    for (let j = 1; j <= n; j++) {
      for (let i = 0; i < n; i++) spread = Math.max(spread, Math.abs(sim[j]![i]! - sim[0]![i]!));
      fspread = Math.max(fspread, Math.abs(fsim[0]! - fsim[j]!));
    }
    if (spread <= tol && fspread <= tol) break;
    const xbar = new Float64Array(n);
    for (let j = 0; j < n; j++) for (let i = 0; i < n; i++) xbar[i]! += sim[j]![i]! / n;
    const worst = sim[n]!;
    const xr = combine(2, xbar, -1, worst);
    const fxr = await fun.call(xr);
    let shrink = false;
    if (fxr < fsim[0]!) {
      const xe = combine(3, xbar, -2, worst);
      const fxe = await fun.call(xe);
      [sim[n], fsim[n]] = fxe < fxr ? [xe, fxe] : [xr, fxr];
    } else if (fxr < fsim[n - 1]!) {
      [sim[n], fsim[n]] = [xr, fxr];
    } else if (fxr < fsim[n]!) {
      const xc = combine(1.5, xbar, -0.5, worst);
      const fxc = await fun.call(xc);
      if (fxc <= fxr) [sim[n], fsim[n]] = [xc, fxc];
      else shrink = true;
    } else {
      const xcc = combine(0.5, xbar, 0.5, worst);
      const fxcc = await fun.call(xcc);
      if (fxcc < fsim[n]!) [sim[n], fsim[n]] = [xcc, fxcc];
      else shrink = true;
    }
    if (shrink) {
      for (let j = 1; j <= n && !fun.spent; j++) {
        sim[j] = combine(0.5, sim[0]!, 0.5, sim[j]!);
        fsim[j] = await fun.call(sim[j]!);
      }
    }
    sort();
  }
  return { x: sim[0]!, fun: fsim[0]!, nfev: fun.nfev };
}

async function lbfgsb(f: Objective, x0: ArrayLike<number>, options: MinimizeOptions): Promise<MinimizeResult> {
  const fun = new Budgeted(f, options.maxiter);
  const clip = clipper(options.bounds);
  const eps = options.eps ?? 1e-8;
  const n = x0.length;
  const memory = 10;
  const ftol = 2.220446049250313e-9; // scipy's factr 1e7 x machine epsilon
  const upper = options.bounds?.upper;
  let x = clip(Float64Array.from(x0));
  let fx = await fun.call(x);
  const gradient = async (at: Float64Array, fat: number): Promise<Float64Array | undefined> => {
    const g = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (fun.spent) return undefined;
      // A forward step, backward where it would leave the bounds (as scipy's approx_derivative does).
      const h = upper && at[i]! + eps > upper[i]! ? -eps : eps;
      const y = Float64Array.from(at);
      y[i]! += h;
      g[i] = ((await fun.call(y)) - fat) / h;
    }
    return g.every(Number.isFinite) ? g : undefined;
  };
  let g = await gradient(x, fx);
  const pairs: { s: Float64Array; y: Float64Array; rho: number }[] = [];
  const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
    let t = 0;
    for (let i = 0; i < n; i++) t += a[i]! * b[i]!;
    return t;
  };
  for (let iteration = 0; g && iteration < options.maxiter && !fun.spent; iteration++) {
    const projected = Float64Array.from(g, (gi, i) => {
      if (options.bounds && x[i]! <= options.bounds.lower[i]! && gi > 0) return 0;
      if (options.bounds && x[i]! >= options.bounds.upper[i]! && gi < 0) return 0;
      return gi;
    });
    if (Math.max(...projected.map(Math.abs)) <= 1e-5) break;
    // Two-loop recursion: d = -H g.
    const q = Float64Array.from(projected);
    const alphas: number[] = [];
    for (let k = pairs.length - 1; k >= 0; k--) {
      const { s, y, rho } = pairs[k]!;
      const a = rho * dot(s, q);
      alphas[k] = a;
      for (let i = 0; i < n; i++) q[i]! -= a * y[i]!;
    }
    const last = pairs.at(-1);
    const gamma = last ? dot(last.s, last.y) / dot(last.y, last.y) : 1;
    for (let i = 0; i < n; i++) q[i]! *= gamma;
    for (let k = 0; k < pairs.length; k++) {
      const { s, y, rho } = pairs[k]!;
      const b = rho * dot(y, q);
      for (let i = 0; i < n; i++) q[i]! += s[i]! * (alphas[k]! - b);
    }
    let d = q.map((v) => -v);
    if (dot(d, projected) >= 0) d = projected.map((v) => -v);
    // The first step is scaled to length 1 at most, as L-BFGS-B's first iteration is.
    let t = pairs.length === 0 ? Math.min(1, 1 / Math.sqrt(dot(d, d))) : 1;
    let accepted: { x: Float64Array; f: number } | undefined;
    for (let tries = 0; tries < 20 && !fun.spent; tries++, t /= 2) {
      const candidate = clip(Float64Array.from(x, (v, i) => v + t * d[i]!));
      const fc = await fun.call(candidate);
      const decrease = dot(projected, Float64Array.from(candidate, (v, i) => v - x[i]!));
      if (fc <= fx + 1e-4 * decrease) {
        accepted = { x: candidate, f: fc };
        break;
      }
    }
    if (!accepted) break;
    const previous = { x, f: fx, g };
    x = accepted.x;
    fx = accepted.f;
    if ((previous.f - fx) / Math.max(Math.abs(previous.f), Math.abs(fx), 1) <= ftol) break;
    g = await gradient(x, fx);
    if (!g) break;
    const s = Float64Array.from(x, (v, i) => v - previous.x[i]!);
    const y = Float64Array.from(g, (v, i) => v - previous.g[i]!);
    const sy = dot(s, y);
    if (sy > 2.2e-16 * dot(y, y)) {
      pairs.push({ s, y, rho: 1 / sy });
      if (pairs.length > memory) pairs.shift();
    }
  }
  return { x, fun: fx, nfev: fun.nfev };
}

async function cobyla(f: Objective, x0: ArrayLike<number>, options: MinimizeOptions): Promise<MinimizeResult> {
  const fun = new Budgeted(f, options.maxiter);
  const clip = clipper(options.bounds);
  const n = x0.length;
  const rhoEnd = 1e-4;
  let rho = options.rhobeg ?? 1;
  let best = clip(Float64Array.from(x0));
  let fbest = await fun.call(best);
  const simplex: { x: Float64Array; f: number }[] = [];
  const rebuild = async () => {
    simplex.length = 0;
    for (let i = 0; i < n && !fun.spent; i++) {
      const x = Float64Array.from(best);
      x[i]! += rho;
      simplex.push({ x: clip(x), f: await fun.call(clip(x)) });
    }
  };
  await rebuild();
  while (!fun.spent && simplex.length === n) {
    // The linear model through the best point and the simplex: (x_i - best) . g = f_i - fbest.
    const g = solve(
      simplex.map((p) => Array.from(p.x, (v, i) => v - best[i]!)),
      simplex.map((p) => p.f - fbest),
    );
    const norm = g ? Math.sqrt(g.reduce((t, v) => t + v * v, 0)) : 0;
    let improved = false;
    if (g && norm > 0 && Number.isFinite(norm)) {
      const x = clip(Float64Array.from(best, (v, i) => v - (rho * g[i]!) / norm));
      const fx = await fun.call(x);
      if (fx < fbest) {
        // The new point is the best; the old best takes the place of the worst vertex.
        let worst = 0;
        simplex.forEach((p, i) => (p.f > simplex[worst]!.f ? (worst = i) : undefined));
        simplex[worst] = { x: best, f: fbest };
        best = x;
        fbest = fx;
        improved = true;
      }
    }
    if (!improved) {
      if (rho <= rhoEnd) break;
      rho = rho / 2 <= 1.5 * rhoEnd ? rhoEnd : rho / 2;
      await rebuild();
    }
  }
  return { x: best, fun: fbest, nfev: fun.nfev };
}

/** Solves A x = b by Gaussian elimination with partial pivoting; undefined when A is singular (or not finite). */
function solve(a: number[][], b: number[]): number[] | undefined {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(m[r]![c]!) > Math.abs(m[pivot]![c]!)) pivot = r;
    if (!(Math.abs(m[pivot]![c]!) > 1e-300)) return undefined;
    [m[c], m[pivot]] = [m[pivot]!, m[c]!];
    for (let r = c + 1; r < n; r++) {
      const factor = m[r]![c]! / m[c]![c]!;
      for (let k = c; k <= n; k++) m[r]![k]! -= factor * m[c]![k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let t = m[r]![n]!;
    for (let k = r + 1; k < n; k++) t -= m[r]![k]! * x[k]!;
    x[r] = t / m[r]![r]!;
  }
  return x.every(Number.isFinite) ? x : undefined;
}
