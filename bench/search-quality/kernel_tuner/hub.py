"""The benchmark hub's search spaces as the search-quality benchmark reads them.

A problem is one brute-forced cache, cachefiles/<kernel>/<GPU>.json.gz, with the space and restrictions of its T1 file
kernels/<kernel>.json (the same lists and restriction strings as kernels/<kernel>.py). A cache is used only where its
tune_params equal the T1 file's: the hub's convolution_milo/A6000_original cache holds an earlier, smaller space that
no file of the hub describes, so it is listed as skipped.
"""

import gzip
import json
import os
from dataclasses import dataclass, field

# What Kernel Tuner's simulation mode charges against time_limit for a configuration's first evaluation
# (kernel_tuner/runners/simulation.py): compile, verification and benchmark time, in milliseconds.
CHARGED_TIME_KEYS = ("compile_time", "verification_time", "benchmark_time")


@dataclass
class Problem:
    name: str  # "<kernel>/<GPU>"
    kernel: str
    gpu: str
    kernel_name: str
    kernel_file: str
    problem_size: list
    tune_params: dict
    restrictions: list
    grid_div: dict
    cache: dict  # the cache file's JSON, its "cache" entries in file order
    keys: list = field(init=False)  # the cache entries' keys in file order: a run's evaluations are indices into it

    def __post_init__(self):
        self.keys = list(self.cache["cache"])

    def objective(self, index):
        """The recorded time of entry `index`, or None where the configuration failed (a string such as
        "CompilationFailedConfig", "RuntimeFailedConfig" or "InvalidConfig" in the cache)."""
        value = self.cache["cache"][self.keys[index]]["time"]
        return value if isinstance(value, (int, float)) else None

    def charged_ms(self, index):
        """What Kernel Tuner's simulation mode adds to the spent time when entry `index` is first evaluated."""
        entry = self.cache["cache"][self.keys[index]]
        return sum(entry[key] for key in CHARGED_TIME_KEYS)


def t1_space(t1):
    """tune_params and restrictions of a T1 file, converted as kernel_tuner.interface.tune_kernel_T1 converts them."""
    tune_params = {}
    for param in t1["ConfigurationSpace"]["TuningParameters"]:
        if param["Type"] not in ("int", "float"):
            raise ValueError(f"unsupported T1 parameter type {param['Type']!r} of {param['Name']}")
        tune_params[param["Name"]] = eval(param["Values"])  # a Python list literal, as Kernel Tuner evaluates it
    restrictions = [condition["Expression"] for condition in t1["ConfigurationSpace"]["Conditions"]]
    return tune_params, restrictions


def list_caches(hub_dir):
    """(usable, skipped) cache names "<kernel>/<GPU>"; skipped ones come with the reason."""
    usable, skipped = [], []
    root = os.path.join(hub_dir, "cachefiles")
    for kernel in sorted(os.listdir(root)):
        t1_path = os.path.join(hub_dir, "kernels", kernel + ".json")
        for filename in sorted(os.listdir(os.path.join(root, kernel))):
            if not filename.endswith(".json.gz") or filename.endswith("_T4.json.gz"):
                continue
            name = f"{kernel}/{filename[: -len('.json.gz')]}"
            if not os.path.isfile(t1_path):
                skipped.append((name, f"no T1 file kernels/{kernel}.json"))
                continue
            with open(t1_path) as f:
                tune_params, _ = t1_space(json.load(f))
            with gzip.open(os.path.join(root, kernel, filename), "rt") as f:
                cached = json.load(f)["tune_params"]
            if cached != tune_params:
                skipped.append((name, f"its tune_params differ from kernels/{kernel}.json (another space)"))
            else:
                usable.append(name)
    return usable, skipped


def load(hub_dir, name):
    kernel, gpu = name.split("/")
    with open(os.path.join(hub_dir, "kernels", kernel + ".json")) as f:
        t1 = json.load(f)
    with gzip.open(os.path.join(hub_dir, "cachefiles", kernel, gpu + ".json.gz"), "rt") as f:
        cache = json.load(f)
    tune_params, restrictions = t1_space(t1)
    if cache["tune_params"] != tune_params or cache["tune_params_keys"] != list(tune_params):
        raise ValueError(f"{name}: the cache's tune_params differ from kernels/{kernel}.json")
    spec = t1["KernelSpecification"]
    return Problem(
        name=name,
        kernel=kernel,
        gpu=gpu,
        kernel_name=spec["KernelName"],
        kernel_file=os.path.join(hub_dir, "kernels", spec["KernelFile"]),
        problem_size=spec["ProblemSize"],
        tune_params=tune_params,
        restrictions=restrictions,
        grid_div={axis: spec.get("GridDiv" + axis.upper()) or None for axis in ("x", "y", "z")},
        cache=cache,
    )
