#!/usr/bin/env python3
"""Kernel Tuner 1.4.0's strategies replayed in its own simulation mode on the benchmark hub's brute-forced caches.

For every cache, strategy, budget and seed this calls kernel_tuner.tune_kernel(..., simulation_mode=True,
strategy=..., strategy_options={"max_fevals": B} or {"time_limit": T}) on the hub's space and restrictions and records
the run: the configurations it evaluated (in order, first evaluations only, as indices into the cache's entries), its
best-so-far trace, the recorded time it spent as Kernel Tuner charges it, and why it stopped. One JSON file per cache
goes to --out (results/kt-1.4.0/<kernel>/<GPU>.json.gz); summarise.py turns them into tables and scores.

Budgets: max_fevals 50, 100, 200, 400, and "time": time_limit = the end of the autotuning_methodology's time range
for the space (methodology.py: the recorded time random search needs, in expectation, to get 96 % of the way from
the median to the optimum), so that the time runs cover the range the methodology's score is computed over. Time is
what Kernel Tuner's simulation charges: compile_time + verification_time + benchmark_time of each first evaluation.
Seeds: before each tune_kernel call, random.seed(seed) and numpy.random.seed(seed): Kernel Tuner 1.4.0 draws from
these two global generators (its `seed` argument reaches only the pymoo strategies). Two sources stay unseeded in
Kernel Tuner itself: scipy.stats.qmc.LatinHypercube (diff_evo's first population, bayes_opt's initial sample) and
bayes_opt's default "multi-ultrafast" refit schedule, which depends on measured wall time; those runs vary.

Needs /usr/bin/python3 with Debian's python3-numpy, python3-scipy, python3-sklearn (bayes_opt), python3-jsonschema,
python3-packaging, python3-xmltodict and python3-pandas, and kernel_tuner + python-constraint in kernel_tuner/.vendor
(bench/search-quality/prepare.sh puts them there). No GPU.

    nice -n 10 /usr/bin/python3 bench/search-quality/kernel_tuner/run_kt.py [--caches convolution_milo/A100,...]
        [--strategies genetic_algorithm,...] [--budgets 50,100,200,400,time] [--seeds 10]
"""

import argparse
import gzip
import json
import os
import random
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".vendor"))

import numpy  # noqa: E402

import hub  # noqa: E402
import methodology  # noqa: E402
import kernel_tuner  # noqa: E402

KT_COMMIT = "96a6abc1019179397753c4afede9149a80aec369"
CONSTRAINT_VERSION = "2.6.0"
# Every single-objective strategy of Kernel Tuner 1.4.0 that runs on Debian's packages. Left out: skopt (needs
# scikit-optimize), pyatf_strategies (pyATF), nsga2 and nsga3 (pymoo); none of them is packaged by Debian.
STRATEGIES = [
    "random_sample", "genetic_algorithm", "greedy_mls", "greedy_ils", "mls", "ordered_greedy_mls",
    "simulated_annealing", "dual_annealing", "diff_evo", "pso", "firefly_algorithm", "basinhopping", "minimize",
    "bayes_opt", "hybrid_vndx", "adaptive_tabu_greywolf",
]
BUDGETS = ["50", "100", "200", "400", "time"]


def stripped_cache_file(problem, directory):
    """The cache as Kernel Tuner reads it (uncompressed .json), without the per-iteration "times" lists, which
    simulation mode never reads: loading the 30+ MB dedispersion files on every call would dominate the run."""
    cache = dict(problem.cache)
    cache["cache"] = {key: {k: v for k, v in entry.items() if k != "times"} for key, entry in cache["cache"].items()}
    path = os.path.join(directory, problem.name.replace("/", "_") + ".json")
    with open(path, "w") as f:
        json.dump(cache, f)
    return path


def time_budget_s(problem):
    return round(space_statistics(problem).cutoff_point(methodology.CUTOFF_PERCENTILE)[2], 3)


def space_statistics(problem):
    """The methodology's statistics of the space, with each configuration's time as Kernel Tuner charges it (s)."""
    indices = range(len(problem.keys))
    return methodology.SpaceStatistics([problem.objective(i) for i in indices],
                                       [problem.charged_ms(i) / 1000 for i in indices])


def run_once(problem, cache_path, strategy, options, seed):
    random.seed(seed)
    numpy.random.seed(seed)
    started = time.perf_counter()
    with warnings.catch_warnings():
        # the placeholder arguments do not match the kernel's signature, which simulation mode never calls
        warnings.simplefilter("ignore")
        results, _ = kernel_tuner.tune_kernel(
            problem.kernel_name,
            problem.kernel_file,
            problem.problem_size,
            [numpy.zeros(1, dtype=numpy.float32) for _ in range(3)],
            problem.tune_params,
            grid_div_x=problem.grid_div["x"],
            grid_div_y=problem.grid_div["y"],
            grid_div_z=problem.grid_div["z"],
            restrictions=problem.restrictions,
            lang="CUDA",
            cache=cache_path,
            simulation_mode=True,
            strategy=strategy,
            strategy_options=dict(options),
            iterations=32,
            quiet=True,
            verbose=False,
        )
    wall_s = time.perf_counter() - started
    return trace(problem, results, options, wall_s) | {"seed": seed}


def trace(problem, results, options, wall_s):
    """The run as the benchmark compares it: first evaluations only (a configuration served again from the runner's
    memory costs Kernel Tuner neither an evaluation nor time), each charged compile + verification + benchmark time."""
    index_of = {key: i for i, key in enumerate(problem.keys)}
    seen, evals, best, charged_ms = set(), [], [], 0.0
    for result in results:
        if result is None:
            continue
        key = ",".join(str(result[name]) for name in problem.tune_params)
        if key in seen:
            continue
        seen.add(key)
        index = index_of[key]
        evals.append(index)
        charged_ms += problem.charged_ms(index)
        value = problem.objective(index)
        if value is not None and (not best or value < best[-1][1]):
            best.append([len(evals), value, round(charged_ms, 3)])
    if "max_fevals" in options and len(evals) >= options["max_fevals"]:
        stop = "max_fevals"
    elif "time_limit" in options and charged_ms / 1000 + wall_s > options["time_limit"]:
        stop = "time_limit"
    else:
        stop = "strategy"  # the strategy ended on its own (iterations, schedule, default max_fevals, exhausted space)
    return {"fevals": len(evals), "charged_ms": round(charged_ms, 3), "wall_s": round(wall_s, 3), "stop": stop,
            "best": best, "evals": evals}


def options_for(budget, problem):
    if budget == "time":
        return {"time_limit": time_budget_s(problem)}
    return {"max_fevals": int(budget)}


def load_existing(path):
    if os.path.isfile(path):
        with gzip.open(path, "rt") as f:
            return json.load(f)
    return None


def write(path, document):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # mtime=0: the same runs give the same bytes
    with open(path + ".tmp", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as f:
        f.write(json.dumps(document, separators=(",", ":")).encode())
    os.replace(path + ".tmp", path)


def run_cache(hub_dir, name, strategies, budgets, seeds, out_dir, log):
    problem = hub.load(hub_dir, name)
    path = os.path.join(out_dir, name + ".json.gz")
    document = load_existing(path) or {
        "kernel_tuner": {"version": "1.4.0", "commit": KT_COMMIT, "python_constraint": CONSTRAINT_VERSION},
        "hub_commit": open(os.path.join(hub_dir, "COMMIT")).read().strip(),
        "cache": name,
        "space_size": len(problem.keys),
        "valid": sum(problem.objective(i) is not None for i in range(len(problem.keys))),
        "optimum": min(v for v in (problem.objective(i) for i in range(len(problem.keys))) if v is not None),
        "time_budget_s": time_budget_s(problem),
        "seeds": seeds,
        "runs": {},
    }
    if document["time_budget_s"] != time_budget_s(problem):
        # runs under another definition of the time budget: redo them under this one
        for runs_per_budget in document["runs"].values():
            runs_per_budget.pop("time", None)
        document["time_budget_s"] = time_budget_s(problem)
    with tempfile.TemporaryDirectory() as directory:
        cache_path = stripped_cache_file(problem, directory)
        if "brute_force" not in document["runs"]:
            run = run_once(problem, cache_path, "brute_force", {}, 0)
            if run["fevals"] != len(problem.keys) or run["best"][-1][1] != document["optimum"]:
                raise RuntimeError(f"{name}: brute force evaluated {run['fevals']} configurations and found "
                                   f"{run['best'][-1][1]}, expected {len(problem.keys)} and {document['optimum']}")
            document["runs"]["brute_force"] = {"all": [run]}
            write(path, document)
        for strategy in strategies:
            for budget in budgets:
                done = document["runs"].get(strategy, {}).get(budget, [])
                if len(done) >= seeds:
                    continue
                started = time.perf_counter()
                runs = done + [run_once(problem, cache_path, strategy, options_for(budget, problem), seed)
                               for seed in range(len(done), seeds)]
                document["runs"].setdefault(strategy, {})[budget] = runs
                write(path, document)
                mean = numpy.mean([document["optimum"] / r["best"][-1][1] * 100 if r["best"] else 0 for r in runs])
                log(f"{name} {strategy} {budget}: mean best {mean:.1f}% of the optimum, "
                    f"{time.perf_counter() - started:.1f} s for {seeds - len(done)} runs")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", default=os.path.join(HERE, "..", "hub"))
    parser.add_argument("--out", default=os.path.join(HERE, "..", "results", "kt-1.4.0"))
    parser.add_argument("--caches", help="comma-separated <kernel>/<GPU>; default every usable cache of the hub")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--budgets", default=",".join(BUDGETS))
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()

    usable, skipped = hub.list_caches(args.hub)
    for name, reason in skipped:
        print(f"skipping {name}: {reason}", flush=True)
    caches = args.caches.split(",") if args.caches else usable
    unknown = [name for name in caches if name not in usable]
    if unknown:
        parser.error(f"not a usable cache of the hub: {', '.join(unknown)} (usable: {', '.join(usable)})")
    strategies = args.strategies.split(",")
    bad = [s for s in strategies if s not in STRATEGIES]
    if bad:
        parser.error(f"unknown strategy {', '.join(bad)} (choose from {', '.join(STRATEGIES)})")
    budgets = args.budgets.split(",")
    bad = [b for b in budgets if b not in BUDGETS]
    if bad:
        parser.error(f"unknown budget {', '.join(bad)} (choose from {', '.join(BUDGETS)})")

    started = time.perf_counter()
    for name in caches:
        run_cache(args.hub, name, strategies, budgets, args.seeds, args.out,
                  lambda line: print(f"[{time.perf_counter() - started:7.0f} s] {line}", flush=True))


if __name__ == "__main__":
    main()
