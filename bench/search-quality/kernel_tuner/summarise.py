#!/usr/bin/env python3
"""Tables and scores from the run files of run_kt.py (results/kt-1.4.0/<kernel>/<GPU>.json.gz).

Per cache, strategy and budget: the mean (over seeds) of the best found as % of the optimum (optimum / best * 100,
0 for a run that found nothing valid), and the autotuning_methodology score (methodology.py): over evaluations 1..B
for the max_fevals budgets, over the methodology's time range for the time budget. Across caches (all of them, and
each kernel's): the mean of the per-cache means, and the methodology's aggregate (mean over the caches at each point
of the range, then over the range).
Writes summary.json beside the run files and prints markdown (or writes it to --markdown).

    /usr/bin/python3 bench/search-quality/kernel_tuner/summarise.py [--markdown FILE]
"""

import argparse
import glob
import gzip
import json
import os

import numpy as np

import hub
import methodology
from run_kt import BUDGETS, HERE, STRATEGIES, space_statistics


def run_points(problem, run):
    """Per evaluation (cumulative charged time in s, best objective so far or None)."""
    points, best, charged_ms = [], None, 0.0
    for index in run["evals"]:
        charged_ms += problem.charged_ms(index)
        value = problem.objective(index)
        if value is not None and (best is None or value < best):
            best = value
        points.append((charged_ms / 1000, best))
    return points


def summarise_cache(problem, document):
    stats = space_statistics(problem)
    time_range = stats.time_range()
    summary = {"space_size": len(problem.keys), "valid": document["valid"], "optimum": document["optimum"],
               "time_budget_s": document["time_budget_s"],
               "time_range_s": [float(time_range[0]), float(time_range[-1])], "strategies": {}}
    curves = {}
    for strategy, budgets in document["runs"].items():
        if strategy == "brute_force":
            continue
        for budget, runs in budgets.items():
            percents = [document["optimum"] / r["best"][-1][1] * 100 if r["best"] else 0.0 for r in runs]
            points = [run_points(problem, run) for run in runs]
            if budget == "time":
                score, curve = methodology.score_over_time(stats, points, time_range)
            else:
                score, curve = methodology.score_over_fevals(stats, [[b for _, b in p] for p in points], int(budget))
            curves[(strategy, budget)] = curve
            stops = {}
            for r in runs:
                stops[r["stop"]] = stops.get(r["stop"], 0) + 1
            summary["strategies"].setdefault(strategy, {})[budget] = {
                "runs": len(runs),
                "mean_best_percent": round(float(np.mean(percents)), 2),
                "std_best_percent": round(float(np.std(percents)), 2),
                "mean_fevals": round(float(np.mean([r["fevals"] for r in runs])), 1),
                "mean_charged_s": round(float(np.mean([r["charged_ms"] for r in runs])) / 1000, 1),
                "mean_wall_s": round(float(np.mean([r["wall_s"] for r in runs])), 3),
                "stops": stops,
                "score": round(score, 4),
            }
    return summary, curves


def aggregate(summaries, curves_per_cache, names):
    strategies = sorted({s for name in names for s in summaries[name]["strategies"]}, key=STRATEGIES.index)
    result = {}
    for strategy in strategies:
        for budget in BUDGETS:
            cells = [summaries[name]["strategies"].get(strategy, {}).get(budget) for name in names]
            if any(cell is None for cell in cells):
                continue  # only strategies and budgets run on every cache of the group are aggregated
            score, error = methodology.aggregate([curves_per_cache[name][(strategy, budget)] for name in names])
            result.setdefault(strategy, {})[budget] = {
                "mean_best_percent": round(float(np.mean([c["mean_best_percent"] for c in cells])), 2),
                "score": round(score, 4),
                "score_error": round(error, 4),
            }
    return result


def budget_label(budget, time_budget=None):
    return f"{budget} evals" if budget != "time" else "time" + (f" ({time_budget:.0f} s)" if time_budget else "")


def table(rows_by_strategy, budgets, cell, time_budget=None):
    lines = ["| strategy | " + " | ".join(budget_label(b, time_budget) for b in budgets) + " |",
             "|---|" + "---:|" * len(budgets)]
    best = {b: max((row[b]["mean_best_percent"] for row in rows_by_strategy.values() if b in row), default=None)
            for b in budgets}
    for strategy, row in rows_by_strategy.items():
        cells = []
        for b in budgets:
            text = cell(row[b]) if b in row else "–"
            cells.append(f"**{text}**" if b in row and row[b]["mean_best_percent"] == best[b] else text)
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(summaries, aggregated_groups):
    out = ["# Kernel Tuner 1.4.0 on the benchmark hub's caches (simulation mode)", "",
           "Cells: mean best found as % of the optimum over the seeds (bold: the best strategy of the column), then "
           "the autotuning_methodology score in brackets (0 = random search, 1 = the optimum from the first "
           "evaluation; over evaluations 1..B for the max_fevals budgets, over the methodology's time range for the "
           "recorded-time budget). Generated by bench/search-quality/kernel_tuner/summarise.py.", ""]
    for group, (names, aggregated) in aggregated_groups.items():
        out += [f"## {group}: {len(names)} caches ({', '.join(names)})", "",
                "Mean over the caches of the per-cache mean best %; the methodology's aggregate score (mean over the "
                "caches at each point of the range, then over the range). A strategy and budget appear only where "
                "they ran on every cache of the group.", "",
                table(aggregated, BUDGETS, lambda c: f"{c['mean_best_percent']:.1f} ({c['score']:.3f})"), ""]
    for name, summary in summaries.items():
        out += [f"## {name}: {summary['space_size']} configurations, {summary['valid']} valid, optimum "
                f"{summary['optimum']:.4f} ms", "",
                f"Time budget: the methodology's time range {summary['time_range_s'][0]:.1f}–"
                f"{summary['time_range_s'][1]:.1f} s of recorded time.", "",
                table(summary["strategies"], BUDGETS,
                      lambda c: f"{c['mean_best_percent']:.1f} ({c['score']:.3f})", summary["time_budget_s"]),
                "", "Mean evaluations per run (how the runs stopped: m = max_fevals, t = time_limit, s = the "
                "strategy itself):", "",
                table(summary["strategies"], BUDGETS, lambda c: f"{c['mean_fevals']:.0f} " + "".join(
                    f"{k[0]}{v}" for k, v in sorted(c["stops"].items()))).replace("**", ""), ""]
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", default=os.path.join(HERE, "..", "hub"))
    parser.add_argument("--results", default=os.path.join(HERE, "..", "results", "kt-1.4.0"))
    parser.add_argument("--markdown", help="write the markdown here instead of printing it")
    args = parser.parse_args()

    summaries, curves_per_cache = {}, {}
    for path in sorted(glob.glob(os.path.join(args.results, "*", "*.json.gz"))):
        with gzip.open(path, "rt") as f:
            document = json.load(f)
        problem = hub.load(args.hub, document["cache"])
        summaries[document["cache"]], curves_per_cache[document["cache"]] = summarise_cache(problem, document)
    if not summaries:
        parser.error(f"no run files under {args.results}: run run_kt.py first")
    # the convolution A100 space first: the table is about it
    order = sorted(summaries, key=lambda name: (name != "convolution_milo/A100", name))
    summaries = {name: summaries[name] for name in order}
    groups = {"All caches": list(summaries)}
    for kernel in sorted({name.split("/")[0] for name in summaries}):
        groups[kernel] = [name for name in summaries if name.startswith(kernel + "/")]
    aggregated_groups = {group: (names, aggregate(summaries, curves_per_cache, names))
                         for group, names in groups.items() if len(names) > 1}
    with open(os.path.join(args.results, "summary.json"), "w") as f:
        json.dump({"caches": summaries,
                   "aggregate": {group: {"caches": names, "strategies": aggregated}
                                 for group, (names, aggregated) in aggregated_groups.items()}}, f, indent=1)
    text = markdown(summaries, aggregated_groups)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
