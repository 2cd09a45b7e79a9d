#!/usr/bin/env python3
"""The Kernel Tuner side of BENCHMARKS.md: the work of bench/gpu-runtime.ts and bench/tuner.ts, done by Kernel Tuner.

Each case runs in a fresh Python process (as `node dist/bench/*.js` does), on the repository's own kernels:
  probe       a bare driver + NVRTC start: import cupy, create the CUDA context, compile and launch an empty kernel
  vector_add  examples/vector_add: 2^26 floats, block sizes 64..1024, 32 timed launches each, outputs verified
  matmul      examples/matmul_tiled: 4096 x 4096 floats, the 44 configurations of block_size_x, block_size_y,
              tile_size_x, tile_size_y under block_size_x == block_size_y * tile_size_y (4 exceed 1024 threads per
              block and are skipped), 32 timed launches each, outputs verified against numpy's product
The tuning cases call kernel_tuner.tune_kernel twice in their process, "first" (cold: CUDA context, first NVRTC
compiles; the matmul's with cupy's compile cache in a fresh directory) and "second" (warm: the kernels in cupy's
cache), and report the wall time of each call and the best configuration.
  same_configs  one configuration of each kernel bench/support/timing-cases.ts names (vector add over 2^16 and 2^26
              floats, the tiled matmul, the stencil, the reduction), tuned SAME_CONFIG_ROUNDS times with 32 timed launches:
              the median of its times in each round (Kernel Tuner's "time" is their mean), and the median of those
  convolution the benchmark hub's convolution kernel over the configurations listed in --configs (written by
              bench/compile-throughput.ts: the kernel file, the hub's tune_params, the configurations ours evaluated),
              outputs verified against convolution_naive's; one call, cold, with cupy's compile cache in a fresh
              directory so that every configuration is compiled: the mean compile time is Kernel Tuner's own

Needs an NVIDIA GPU, kernel_tuner (1.4.0 for the figures in BENCHMARKS.md), cupy built for the installed CUDA
(cupy-cuda12x or cupy-cuda13x) and numpy; none of them come with this repository, whose machines install from the npm
registry only.

    python3 bench/kernel_tuner/measure.py [--cases probe,vector_add,matmul,same_configs] [--out results.json] [--vendor DIR]
    python3 bench/kernel_tuner/measure.py --cases convolution --configs CONFIGS.json [--out results.json] [--vendor DIR]

--vendor DIR takes kernel_tuner and python-constraint from their sources in DIR (bench/search-quality/prepare.sh lays
them out in bench/search-quality/kernel_tuner/.vendor), with stand-ins for the two modules Kernel Tuner imports but
does not use here (xmltodict, for its T4 XML output, and jsonschema, for its T1/T4 validation) where they are missing.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ITERATIONS = 32


def read(relative):
    with open(os.path.join(ROOT, relative)) as f:
        return f.read()


def case_probe():
    started = time.perf_counter()
    import cupy as cp

    kernel = cp.RawKernel(r'extern "C" __global__ void empty() {}', "empty", backend="nvrtc")
    kernel((1,), (1,), ())
    cp.cuda.Device().synchronize()
    return {"wall_s": time.perf_counter() - started, "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}


def tune_twice(**kwargs):
    """Two calls of tune_kernel in this process: cold, then warm. The best is the fastest verified configuration."""
    import kernel_tuner

    runs = []
    for _ in range(2):
        started = time.perf_counter()
        results, env = kernel_tuner.tune_kernel(lang="cupy", iterations=ITERATIONS, quiet=True, **kwargs)
        wall = time.perf_counter() - started
        timed = [r for r in results if isinstance(r.get("time"), (int, float))]
        best = min(timed, key=lambda r: r["time"])
        names = list(kwargs["tune_params"])
        runs.append({
            "wall_s": wall,
            "configurations": len(results),
            "timed": len(timed),
            "best": {name: best[name] for name in names},
            "best_ms": best["time"],
        })
    return {
        "kernel_tuner": kernel_tuner.__version__,
        "device": env.get("device_name"),
        "first": runs[0],
        "second": runs[1],
    }


def case_vector_add():
    import numpy as np

    n = 1 << 26
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, n).astype(np.float32)
    b = rng.uniform(-1, 1, n).astype(np.float32)
    c = np.zeros_like(a)
    return tune_twice(
        kernel_name="vector_add",
        kernel_source=read("examples/vector_add/vector_add.cu"),
        problem_size=n,
        arguments=[c, a, b, np.int32(n)],
        tune_params={"block_size_x": [64, 128, 256, 512, 1024]},
        answer=[a + b, None, None, None],
    )


def case_matmul():
    import numpy as np

    n = 4096
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    c = np.zeros_like(a)
    expected = a @ b  # computed before the timed calls
    out = tune_twice(
        kernel_name="matmul_tiled",
        kernel_source=read("examples/matmul_tiled/matmul_tiled.cu"),
        problem_size=(n, n),
        arguments=[c, a, b, np.int32(n)],
        tune_params={
            "block_size_x": [16, 32, 64],
            "block_size_y": [1, 2, 4, 8, 16, 32],
            "tile_size_x": [1, 2, 4, 8],
            "tile_size_y": [1, 2, 4, 8],
        },
        restrictions=["block_size_x==block_size_y*tile_size_y"],
        grid_div_x=["block_size_x", "tile_size_x"],
        grid_div_y=["block_size_y", "tile_size_y"],
        # Sums of 4096 products of values in [-1, 1] in float32: differences of ~1e-4 are rounding, not errors.
        answer=[expected, None, None, None],
        atol=1e-2,
    )
    for run in (out["first"], out["second"]):
        run["best_tflops"] = 2 * n**3 / (run["best_ms"] * 1e-3) / 1e12
    return out


SAME_CONFIG_ROUNDS = 3


def same_config_medians(rounds=SAME_CONFIG_ROUNDS, **kwargs):
    """One configuration tuned `rounds` times: the median of its 32 timed launches in each round, and their median."""
    import numpy as np
    import kernel_tuner

    medians = []
    for _ in range(rounds):
        results, _env = kernel_tuner.tune_kernel(lang="cupy", iterations=ITERATIONS, quiet=True, **kwargs)
        medians.append(float(np.median(results[0]["times"])))
    return {"median_ms": float(np.median(medians)), "rounds": medians}


def case_same_configs():
    import numpy as np

    rng = np.random.default_rng(1)
    uniform = lambda size: rng.uniform(-1, 1, size).astype(np.float32)  # noqa: E731
    out = {}
    for name, n in (("vector_add 2^26", 1 << 26), ("vector_add 2^16", 1 << 16)):
        out[name] = same_config_medians(
            kernel_name="vector_add",
            kernel_source=read("examples/vector_add/vector_add.cu"),
            problem_size=n,
            arguments=[np.zeros(n, np.float32), uniform(n), uniform(n), np.int32(n)],
            tune_params={"block_size_x": [256]},
        )
    n = 4096
    out["matmul_tiled 4096²"] = same_config_medians(
        kernel_name="matmul_tiled",
        kernel_source=read("examples/matmul_tiled/matmul_tiled.cu"),
        problem_size=(n, n),
        arguments=[np.zeros(n * n, np.float32), uniform(n * n), uniform(n * n), np.int32(n)],
        tune_params={"block_size_x": [32], "block_size_y": [4], "tile_size_x": [4], "tile_size_y": [8]},
        grid_div_x=["block_size_x", "tile_size_x"],
        grid_div_y=["block_size_y", "tile_size_y"],
    )
    out["stencil_2d 4096²"] = same_config_medians(
        kernel_name="stencil_2d",
        kernel_source=read("examples/stencil_2d/stencil_2d.cu"),
        problem_size=(n, n),
        arguments=[np.zeros(n * n, np.float32), uniform(n * n), np.int32(n), np.int32(n), np.float32(0.2)],
        tune_params={"block_size_x": [128], "block_size_y": [2], "tile_size_y": [2], "use_shared": [0]},
        grid_div_y=["block_size_y", "tile_size_y"],
    )
    n = 1 << 26
    out["reduction 2^26"] = same_config_medians(
        kernel_name="reduce_sum",
        kernel_source=read("examples/reduction/reduction.cu"),
        # The grid is exactly num_blocks blocks, as the example's spec says (problem size num_blocks, no grid divisor).
        problem_size="num_blocks",
        arguments=[np.zeros(1, np.float32), rng.uniform(0, 1, n).astype(np.float32), np.int32(n)],
        tune_params={"block_size_x": [256], "num_blocks": [1024], "use_shuffle": [1], "vector": [4]},
        grid_div_x=[],
    )
    return out


def case_convolution():
    """The configurations of --configs, tuned once from cold; every one compiled (cupy's cache dir is fresh)."""
    import cupy as cp
    import numpy as np
    import kernel_tuner
    from constraint import FunctionConstraint

    with open(os.environ["LKT_CONVOLUTION_CONFIGS"]) as f:
        case = json.load(f)
    with open(case["kernel_file"]) as f:
        source = f.read()
    tune_params = case["tune_params"]
    names = list(tune_params)
    chosen = {tuple(c[name] for name in names) for c in case["configurations"]}
    image, filt = 4096, 15
    rng = np.random.default_rng(1)
    output = np.zeros(image * image, dtype=np.float32)
    image_in = rng.standard_normal((image + filt - 1) ** 2).astype(np.float32)
    weights = rng.standard_normal(filt * filt).astype(np.float32)
    # The expected output: the file's convolution_naive, 16 x 16 threads, one output element each.
    naive = cp.RawModule(code=source, options=(f"-Dfilter_height={filt}", f"-Dfilter_width={filt}", "-Dblock_size_x=16", "-Dblock_size_y=16"), name_expressions=("convolution_naive",)).get_function("convolution_naive")
    expected = cp.zeros(image * image, dtype=cp.float32)
    naive((image // 16, image // 16), (16, 16), (expected, cp.asarray(image_in), cp.asarray(weights)))
    expected = cp.asnumpy(expected)

    started = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        "convolution_kernel",
        source,
        (image, image),
        [output, image_in, weights],
        tune_params,
        # A python-constraint FunctionConstraint over every parameter in order: Kernel Tuner passes it on as it is
        # (a lambda over the dict it rewrites from its source text, which fails for this closure on Python 3.12).
        restrictions=[FunctionConstraint(lambda *values: tuple(values) in chosen)],
        grid_div_x=["block_size_x", "tile_size_x"],
        grid_div_y=["block_size_y", "tile_size_y"],
        answer=[expected, None, None],
        # Sums of 225 products of normal values in float32, summed in another order than the naive kernel's.
        atol=1e-3,
        lang="cupy",
        iterations=ITERATIONS,
        quiet=True,
    )
    wall = time.perf_counter() - started
    timed = [r for r in results if isinstance(r.get("time"), (int, float))]
    compiled = [r["compile_time"] for r in results if isinstance(r.get("compile_time"), (int, float)) and r["compile_time"] > 0]
    best = min(timed, key=lambda r: r["time"]) if timed else None
    return {
        "kernel_tuner": kernel_tuner.__version__,
        "device": env.get("device_name"),
        "wall_s": wall,
        "configurations": len(results),
        "timed": len(timed),
        "mean_compile_ms": sum(compiled) / len(compiled) if compiled else None,
        "best": {name: best[name] for name in names} if best else None,
        "best_ms": best["time"] if best else None,
    }


CASES = {"probe": case_probe, "vector_add": case_vector_add, "matmul": case_matmul, "same_configs": case_same_configs, "convolution": case_convolution}


def use_vendored(directory):
    """Kernel Tuner from its sources in `directory`; stand-ins for the optional modules it imports but these cases never call."""
    import types

    sys.path.insert(0, os.path.abspath(directory))
    for name in ("xmltodict", "jsonschema"):
        if importlib.util.find_spec(name) is None:
            stand_in = types.ModuleType(name)

            def unavailable(attribute, name=name):
                if attribute.startswith("__"):  # what inspect and importlib ask of any module
                    raise AttributeError(attribute)

                def call(*_args, **_kwargs):
                    raise ImportError(f"{name} is a stand-in here: {name}.{attribute} is not available")

                return call

            stand_in.__getattr__ = unavailable
            sys.modules[name] = stand_in


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="probe,vector_add,matmul,same_configs", help="comma-separated: " + ", ".join(CASES) + " (default: all but convolution, which bench/compile-throughput.ts runs)")
    parser.add_argument("--out", help="also write the figures as JSON to this file")
    parser.add_argument("--vendor", help="take kernel_tuner and python-constraint from their sources in this directory")
    parser.add_argument("--configs", help="the convolution case's kernel file, tune_params and configurations (JSON)")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in the child process
    args = parser.parse_args()
    if args.vendor:
        use_vendored(args.vendor)
    if args.case:
        print(json.dumps(CASES[args.case]()))
        return
    missing = [m for m in ("numpy", "cupy", "kernel_tuner") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"missing Python packages: {', '.join(missing)} (pip install kernel_tuner==1.4.0 numpy and the cupy wheel for your CUDA, e.g. cupy-cuda13x)")
    figures = {"python": sys.version.split()[0]}
    for name in args.cases.split(","):
        if name not in CASES:
            parser.error(f"unknown case {name!r}; the cases are {', '.join(CASES)}")
        env = dict(os.environ)
        if name == "convolution":
            if not args.configs:
                parser.error("the convolution case needs --configs FILE (bench/compile-throughput.ts writes it)")
            env["LKT_CONVOLUTION_CONFIGS"] = os.path.abspath(args.configs)
        if name in ("convolution", "matmul"):
            # Every configuration compiled in the first call (cold): cupy's compile cache starts empty.
            env["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="kt-cupy-cache-")
        started = time.perf_counter()
        vendor = ["--vendor", args.vendor] if args.vendor else []
        child = subprocess.run([sys.executable, __file__, "--case", name, *vendor], capture_output=True, text=True, env=env)
        if "CUPY_CACHE_DIR" in env and env["CUPY_CACHE_DIR"] != os.environ.get("CUPY_CACHE_DIR"):
            shutil.rmtree(env["CUPY_CACHE_DIR"], ignore_errors=True)
        if child.returncode != 0:
            sys.exit(f"{name} failed:\n{child.stderr}")
        figures[name] = {**json.loads(child.stdout.strip().splitlines()[-1]), "process_wall_s": time.perf_counter() - started}
        print(f"{name}: {json.dumps(figures[name])}", flush=True)
        if args.out:  # after every case: a later case that fails leaves the earlier ones' figures
            with open(args.out, "w") as f:
                json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
