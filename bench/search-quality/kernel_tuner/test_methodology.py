"""Checks methodology.py against the libraries the autotuning_methodology package calls and against hand-computed
values. Run: /usr/bin/python3 -m unittest discover -s bench/search-quality/kernel_tuner -p 'test_*.py'"""

import unittest

import numpy as np
from scipy.interpolate import PchipInterpolator
from sklearn.isotonic import IsotonicRegression

import methodology as m


class IsotonicAndPchip(unittest.TestCase):
    def test_isotonic_matches_sklearn_on_pooled_runs_with_ties(self):
        rng = np.random.default_rng(3)
        x = np.round(rng.uniform(0, 100, 400), 1)  # rounded: many equal times, as pooled runs produce
        y = np.maximum(0, 300 - 2.5 * x + rng.normal(0, 40, x.size)).round()
        x_new = np.linspace(-5, 110, 257)
        expected = IsotonicRegression(increasing=False, y_min=y.min(), y_max=y.max(), out_of_bounds="clip")
        expected = expected.fit(x, y).predict(x_new)
        np.testing.assert_allclose(m.isotonic_decreasing(x, y, x_new), expected, rtol=1e-12, atol=1e-9)

    def test_pava_pools_violators_by_weight(self):
        np.testing.assert_allclose(m.pava_increasing(np.array([1.0, 3.0, 2.0, 4.0]), np.array([1.0, 1.0, 3.0, 1.0])),
                                   [1.0, 2.25, 2.25, 4.0])

    def test_pchip_matches_scipy(self):
        rng = np.random.default_rng(5)
        for size in (2, 3, 7, 40):
            x = np.cumsum(rng.uniform(0.5, 3, size))
            y = np.sort(rng.uniform(0, 10, size))[::-1] + rng.normal(0, 0.5, size) * (size > 3)
            x_new = np.linspace(x[0], x[-1], 101)
            np.testing.assert_allclose(m.pchip(x, y, x_new), PchipInterpolator(x, y)(x_new), rtol=1e-12, atol=1e-12)


class SpaceAndBaseline(unittest.TestCase):
    def setUp(self):
        # ten configurations, two failed; the valid objectives 1..8, times 1 s (valid) and 3 s (failed)
        objectives = [5.0, None, 1.0, 8.0, 3.0, None, 2.0, 7.0, 4.0, 6.0]
        times = [1.0, 3.0, 1.0, 1.0, 1.0, 3.0, 1.0, 1.0, 1.0, 1.0]
        self.stats = m.SpaceStatistics(objectives, times)

    def test_statistics(self):
        self.assertEqual(self.stats.optimum, 1.0)
        self.assertEqual(self.stats.median, 4.5)
        self.assertAlmostEqual(self.stats.time_per_feval, 1.0 + 0.2 * 3.0)
        self.assertEqual(self.stats.time_median, 1.0)

    def test_cutoff_point(self):
        # target 1 + 3.5 * 0.5 = 2.75: the first value <= 2.75 worst-first is 2.0 at i = 6, ceil(6 / 3) = 2 fevals
        target, fevals, time = self.stats.cutoff_point(0.5)
        self.assertEqual((target, fevals, time), (2.75, 2, 2.0))

    def test_random_search_expected_best(self):
        # worst first [8..1], N = 8: M = 1 -> round(9/2) = 4 (half to even) -> 4.0; M = 3 -> round(27/4) = 7 -> 1.0
        np.testing.assert_allclose(m.random_search_over_fevals(self.stats, [1, 3]), [4.0, 1.0])

    def test_standardise(self):
        np.testing.assert_allclose(m.standardise(self.stats, [4.0, 1.0, 7.0], np.array([4.0, 4.0, 4.0])),
                                   [0.0, 1.0, -1.0])

    def test_strategy_over_fevals_takes_the_median_position(self):
        runs = [[None, 5.0, 2.0], [3.0, 3.0, 3.0], [8.0, 1.0, 1.0]]
        np.testing.assert_allclose(m.strategy_over_fevals(self.stats, runs, [1, 2, 3, 4]), [5.0, 3.0, 2.0, 2.0])

    def test_strategy_over_fevals_holds_after_the_median_run_length(self):
        # lengths 1, 2, 4 (median 2): the two runs that got to 2 evaluations give median positions 6 (7.0) and
        # 3.5 -> 4 (5.0), then 5.0 is held; the long run's later 3.0 and 1.0 are not used
        runs = [[7.0], [6.0, 4.0], [8.0, 5.0, 3.0, 1.0]]
        np.testing.assert_allclose(m.strategy_over_fevals(self.stats, runs, [1, 2, 3, 4]), [7.0, 5.0, 5.0, 5.0])

    def test_strategy_over_time_holds_after_the_median_stop(self):
        runs = [[(1.0, 6.0), (2.0, 3.0), (3.0, 2.0)], [(1.0, 6.0), (2.0, 3.0), (3.0, 2.0)]]
        curve = m.strategy_over_time(self.stats, runs, np.array([1.0, 2.0, 2.5, 3.0, 4.0, 5.0]))
        np.testing.assert_allclose(curve, [6.0, 3.0, 3.0, 2.0, 2.0, 2.0])  # 2.5 interpolates to index 1.5 -> 2 (3.0)


if __name__ == "__main__":
    unittest.main()
