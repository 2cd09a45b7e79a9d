"""The aggregate score of AutoTuningAssociation/autotuning_methodology, restated so that another language can compute
the same numbers from the same traces (NOTES.md, "The methodology's score", gives the formulas and the source lines).

Units: objective values as recorded (ms of kernel time), times in seconds. Rounding is round-half-to-even throughout,
as numpy's and Python's round() do. The two places where this module departs from the package are named where they
happen: the curve of a strategy over time is one isotonic fit, not the mean of a bootstrap bag of them (the package's
BaggingRegressor is unseeded), and a strategy whose runs all stop before the time range starts keeps its final value
instead of raising.
"""

import math

import numpy as np

# The settings of the methodology paper's experiments and of the hub's experiment files (experiment_files/*.json).
CUTOFF_PERCENTILE = 0.96
CUTOFF_PERCENTILE_START = 0.5
RESOLUTION = 1000
TIME_RANGE_MARGIN = 0.1


class SpaceStatistics:
    """searchspace_statistics.SearchspaceStatistics of one brute-forced space.

    objectives: per configuration the objective (minimised), None where the configuration failed.
    times: per configuration its recorded time in seconds (the sum of the chosen time keys).
    """

    def __init__(self, objectives, times):
        if len(objectives) != len(times):
            raise ValueError("objectives and times must have one entry per configuration")
        invalid = np.array([value is None for value in objectives])
        self.dist = np.sort(np.array([value for value in objectives if value is not None], dtype=float))
        if self.dist.size == 0:
            raise ValueError("the space has no valid configuration")
        self.size = len(objectives)
        self.optimum = float(self.dist[0])
        self.median = float(np.median(self.dist))
        times = np.array(times, dtype=float)
        self.time_median = float(np.median(times))
        if invalid.any():
            # total_time_mean_per_feval: the expected time of a random draw, failed configurations included
            self.time_per_feval = float(np.mean(times[~invalid]) + invalid.mean() * np.mean(times[invalid]))
        else:
            self.time_per_feval = float(np.mean(times))

    def cutoff_point(self, percentile):
        """(objective at the cutoff, fevals, time): random search's expected effort to get `percentile` of the way
        from the median to the optimum (cutoff_point and cutoff_point_fevals_time)."""
        target = self.optimum + (self.median - self.optimum) * (1 - percentile)
        descending = self.dist[::-1]
        i = int(np.argmax(descending <= target))
        fevals = math.ceil(i / (self.dist.size + 1 - i))
        return target, fevals, fevals * self.time_median

    def time_range(self, start=CUTOFF_PERCENTILE_START, end=CUTOFF_PERCENTILE, resolution=RESOLUTION):
        return np.linspace(self.cutoff_point(start)[2], self.cutoff_point(end)[2], resolution)

    def index_of(self, values):
        """Position of each value in the ascending distribution (get_indices_in_distribution), NaN stays NaN."""
        values = np.asarray(values, dtype=float)
        indices = np.searchsorted(self.dist, values, side="left").astype(float)
        indices[np.isnan(values)] = np.nan
        return indices


def random_search_over_fevals(stats, fevals):
    """RandomSearchCalculatedBaseline._get_random_curve: the expected best of M draws without replacement is the
    value at index round(M (N + 1) / (M + 1)) of the distribution sorted worst first, smoothed by PCHIP."""
    fevals = np.asarray(fevals, dtype=int)
    worst_first = stats.dist[::-1]
    n = worst_first.size
    draws = np.array([worst_first[min(n - 1, round(m * (n + 1) / (m + 1)))] for m in fevals])
    if fevals.size <= 2:
        return draws
    first = np.concatenate([[True], np.diff(fevals) > 0])
    smooth_x = np.linspace(fevals[0], fevals[-1], fevals.size)
    return pchip(fevals[first].astype(float), draws[first], smooth_x)


def random_search_over_time(stats, time_range):
    fevals = np.round(np.maximum(np.asarray(time_range) / stats.time_per_feval, 1)).astype(int)
    return random_search_over_fevals(stats, fevals)


def standardise(stats, curve, baseline):
    """Baseline.get_standardised_curves: 0 is random search, 1 the optimum."""
    return (np.asarray(curve) - baseline) / (stats.optimum - baseline)


def strategy_over_time(stats, runs, time_range):
    """StochasticOptimizationAlgorithm.get_curve_over_time for the runs of one strategy on one space.

    runs: per run, per evaluation (cumulative time in s, best objective so far or None before the first valid one).
    """
    points_t, points_y, last_valid_times = [], [], []
    low, high = time_range[0] * (1 - TIME_RANGE_MARGIN), time_range[-1] * (1 + TIME_RANGE_MARGIN)
    for run in runs:
        valid = [(t, best) for t, best in run if best is not None]
        if valid:
            last_valid_times.append(valid[-1][0])
        for t, best in valid:
            if low <= t <= high:
                points_t.append(t)
                points_y.append(best)
    if not last_valid_times:
        raise ValueError("no run found a valid configuration")
    stopping_time = float(np.median(last_valid_times))
    if points_t:
        indices = stats.index_of(points_y)
        # The package fits a BaggingRegressor of these isotonic fits; one fit on all points is its expectation.
        fitted = isotonic_decreasing(np.array(points_t), indices, np.asarray(time_range, dtype=float))
        curve_indices = np.clip(np.round(fitted).astype(int), 0, stats.dist.size - 1)
    else:
        # Every run stopped before the time range: the package raises; here each keeps its final best.
        finals = stats.index_of([next(best for _, best in reversed(run) if best is not None) for run in runs
                                 if any(best is not None for _, best in run)])
        curve_indices = np.full(len(time_range), int(round(float(np.median(finals)))))
    curve = stats.dist[curve_indices]
    if stopping_time < time_range[-1]:
        # past the median run's last valid evaluation the curve is held at its value there
        stop_index = int(np.argmax(np.asarray(time_range) > stopping_time))
        curve[stop_index:] = curve[stop_index]
    return curve


def strategy_over_fevals(stats, runs, fevals):
    """get_curve_over_fevals with a distribution, for fevals 1..B: up to the median run length, the median over the
    runs that got that far of the best-so-far's position in the distribution; after it, that value held.
    runs: per run, per evaluation the best objective so far or None (before the first valid result)."""
    lengths = [len(run) for run in runs]
    last_common = min(int(np.floor(np.median([length - 1 for length in lengths]))), len(fevals) - 1)
    kept = [run for run in runs if len(run) - 1 >= last_common]
    curve_indices = []
    for f in fevals[: last_common + 1]:
        at_f = [run[f - 1] for run in kept if run[f - 1] is not None]
        # nothing valid yet in any run: the worst value
        curve_indices.append(int(round(float(np.median(stats.index_of(at_f))))) if at_f else stats.dist.size - 1)
    curve_indices += [curve_indices[-1]] * (len(fevals) - len(curve_indices))
    return stats.dist[np.array(curve_indices)]


def score_over_time(stats, runs, time_range=None):
    """The strategy's standardised curve over the space's time range and its mean (the per-space score)."""
    time_range = stats.time_range() if time_range is None else time_range
    curve = standardise(stats, strategy_over_time(stats, runs, time_range), random_search_over_time(stats, time_range))
    return float(np.mean(curve)), curve


def score_over_fevals(stats, runs, budget):
    fevals = np.arange(1, budget + 1)
    curve = standardise(stats, strategy_over_fevals(stats, runs, fevals), random_search_over_fevals(stats, fevals))
    return float(np.mean(curve)), curve


def aggregate(curves):
    """get_strategies_aggregated_performance + get_strategy_scores: the mean over spaces at each point of the range,
    then the score is its mean and the error its standard deviation."""
    mean_curve = np.mean(np.array(curves), axis=0)
    return float(np.mean(mean_curve)), float(np.std(mean_curve))


def isotonic_decreasing(x, y, x_new):
    """sklearn IsotonicRegression(increasing=False, out_of_bounds="clip") fitted on (x, y), predicted at x_new:
    equal x are merged into their mean, pool-adjacent-violators fits a non-increasing step sequence, and the
    prediction interpolates linearly between the fitted points, clipped to the fitted x range."""
    order = np.lexsort((y, x))
    x, y = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=float)[order]
    unique_x, start = np.unique(x, return_index=True)
    counts = np.diff(np.append(start, x.size))
    sums = np.add.reduceat(y, start)
    fitted = pava_increasing((sums / counts)[::-1], counts[::-1].astype(float))[::-1]
    return np.interp(np.clip(x_new, unique_x[0], unique_x[-1]), unique_x, fitted)


def pava_increasing(y, weights):
    """Weighted pool-adjacent-violators: the non-decreasing sequence closest to y in weighted least squares."""
    block_values, block_weights, block_sizes = [], [], []
    for value, weight in zip(y, weights):
        block_values.append(value)
        block_weights.append(weight)
        block_sizes.append(1)
        while len(block_values) > 1 and block_values[-2] > block_values[-1]:
            value, weight, size = block_values.pop(), block_weights.pop(), block_sizes.pop()
            merged_weight = block_weights[-1] + weight
            block_values[-1] = (block_values[-1] * block_weights[-1] + value * weight) / merged_weight
            block_weights[-1] = merged_weight
            block_sizes[-1] += size
    return np.repeat(block_values, block_sizes)


def pchip(x, y, x_new):
    """scipy PchipInterpolator(x, y)(x_new) for x_new within [x[0], x[-1]] (Fritsch-Carlson slopes, scipy's ends)."""
    x, y, x_new = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(x_new, dtype=float)
    h = np.diff(x)
    m = np.diff(y) / h
    if x.size == 2:
        d = np.array([m[0], m[0]])
    else:
        d = np.zeros_like(y)
        for k in range(1, x.size - 1):
            if m[k - 1] * m[k] > 0:
                w1, w2 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
                d[k] = (w1 + w2) / (w1 / m[k - 1] + w2 / m[k])
        d[0] = _pchip_end_slope(h[0], h[1], m[0], m[1])
        d[-1] = _pchip_end_slope(h[-1], h[-2], m[-1], m[-2])
    k = np.clip(np.searchsorted(x, x_new, side="right") - 1, 0, x.size - 2)
    t = (x_new - x[k]) / h[k]
    h00, h10, h01, h11 = 2 * t**3 - 3 * t**2 + 1, t**3 - 2 * t**2 + t, -2 * t**3 + 3 * t**2, t**3 - t**2
    return h00 * y[k] + h10 * h[k] * d[k] + h01 * y[k + 1] + h11 * h[k] * d[k + 1]


def _pchip_end_slope(h0, h1, m0, m1):
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    if np.sign(d) != np.sign(m0):
        return 0.0
    if np.sign(m0) != np.sign(m1) and abs(d) > abs(3 * m0):
        return 3 * m0
    return d
