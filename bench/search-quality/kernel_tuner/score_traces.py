#!/usr/bin/env python3
"""Scores traces with methodology.py, for the cross-check with the TypeScript port (bench/search-quality/methodology.ts):
test/unit/search-quality-methodology.test.ts writes the traces, runs this, and compares the numbers.

Input (JSON file, argv[1]): {"objectives": [ms or null per configuration], "times": [s per configuration],
  "budget": B, "fevals_runs": [[best so far or null per evaluation]], "time_runs": [[[t_s, best or null], ...]]}
Output (stdout, JSON): {"time_range": [first, last], "score_fevals", "curve_fevals", "score_time", "curve_time",
  "aggregate": [score, error] of the two curves' first B points}
"""

import json
import sys

import numpy as np

import methodology


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    stats = methodology.SpaceStatistics(data["objectives"], data["times"])
    time_range = stats.time_range()
    score_fevals, curve_fevals = methodology.score_over_fevals(stats, data["fevals_runs"], data["budget"])
    time_runs = [[(t, best) for t, best in run] for run in data["time_runs"]]
    score_time, curve_time = methodology.score_over_time(stats, time_runs, time_range)
    b = data["budget"]
    json.dump({
        "time_range": [float(time_range[0]), float(time_range[-1])],
        "cutoff": [list(map(float, stats.cutoff_point(p))) for p in (0.5, 0.96)],
        "score_fevals": score_fevals, "curve_fevals": [float(v) for v in curve_fevals],
        "score_time": score_time, "curve_time": [float(v) for v in curve_time],
        "aggregate": list(methodology.aggregate([np.asarray(curve_fevals), np.asarray(curve_time[:b])])),
    }, sys.stdout)


if __name__ == "__main__":
    main()
