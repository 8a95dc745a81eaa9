#!/usr/bin/env python3
"""r3's Bayesian optimisation side by side with Kernel Tuner's strategies, on the same tables and
the same known constraints (issue 29).

For each exhaustive table (bo_sim's CSV format: a '#' comment, a header of parameter columns and
`time`, one row per configuration, `fail` for one that did not compile, launch or verify), this
  - runs `bo_sim --verbose` (r3's BO, --r3-seeds seeds) and reads each seed's evaluations to get
    within 5% and 1% of the optimum;
  - writes the table as a Kernel Tuner cache file (the space is every combination of the columns'
    values, as bo_sim's; a combination the table lacks is a failed configuration, as in bo_sim)
    and runs each Kernel Tuner strategy on it in simulation mode, --seeds seeds each, with the
    table's constraints as Kernel Tuner restrictions (the same expressions);
  - prints both sides' medians to 5% and 1%, the best peer strategy per column, r3's ratio to it
    and a one-sided Mann-Whitney U test (is r3 faster?), with the issue's verdict on that figure
    (criterion: the ratio at most --target and p < 0.05); the report's last lines count the
    figures that meet it and name those that do not. A run that never gets there counts as
    budget + 1 evaluations (shown as '>budget' when the median is censored).

Kernel Tuner and python-constraint are not installed from a package index here: give their
source trees (`--kernel-tuner DIR --python-constraint DIR`; fetched from their public
repositories, never committed to r3). They run on the distribution's numpy, scipy, jsonschema,
xmltodict, packaging (Debian: python3-numpy python3-scipy python3-jsonschema python3-xmltodict
python3-packaging; python3-sklearn and python3-pandas for some strategies).

Usage:
  bench/peer/peer.py [--bo-sim build/bench/bo_sim] --kernel-tuner ~/src/kernel_tuner \\
      --python-constraint ~/src/python-constraint [--seeds 20] [--r3-seeds 100] [--budget 500] \\
      [--jobs N] [--strategies a,b,...] [--constraint EXPR ...] [--peer-cache FILE] \\
      [--r3-args '--trend 0 --initial 8'] [--shuffle-peer-samples] [--bootstrap N] TABLE.csv...
--peer-cache FILE keeps each Kernel Tuner run's trace (keyed by the table's and the constraints'
contents, strategy, options, seed, budget and Kernel Tuner's version) and the Python stack that
made it, so that measuring r3 again after a change does not run the peers again; the report ends
with the stacks its peers' runs were made on (python_stack: three strategies' traces depend on
scipy's and scikit-learn's versions). --r3-args passes options to bo_sim (e.g. the
settings before a change, to print both). A file TABLE.constraints beside a table (one expression per line, '#' comments) adds its
constraints for that table, as for bo_sim. --shuffle-peer-samples evaluates Kernel Tuner's
Latin hypercube samples in a random order instead of the order of its space's enumeration
(see shuffle_latin_hypercube_order: that order starts on a constraint's boundary).
--jobs N runs the Kernel Tuner runs the cache lacks on N processes first (the same traces: each
run seeds itself); without --bo-sim only the peers run, e.g. to fill --peer-cache on a machine
with more cores. --bootstrap N says how far the comparison is from chance: the best peer is the
lowest of many medians of 20 runs, picked after the fact, so it is resampled and picked again
(see best_peer_bootstrap). Each threshold's `chance:` line says what that lowest median would be if
every peer were random search over the same constrained space (random_search_chance): where the
best peer is no lower, its figure is what chance gives the lowest of that many medians.
"""

import argparse
import bisect
import collections
import contextlib
import hashlib
import io
import itertools
import json
import math
import multiprocessing
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

DEFAULT_STRATEGIES = [
    "bayes_opt", "genetic_algorithm", "random_sample", "pso", "basinhopping", "dual_annealing",
    "simulated_annealing", "diff_evo", "firefly_algorithm", "mls", "greedy_ils",
]


def read_table(path):
    """(parameter names, rows of (values, time or None))."""
    names, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cells = [c.strip() for c in line.split(",")]
            if names is None:
                if cells[-1] != "time":
                    sys.exit(f"{path}: the last column must be 'time'")
                names = cells[:-1]
                continue
            values = tuple(number(c) for c in cells[:-1])
            time = None if cells[-1] == "fail" else float(cells[-1])
            rows.append((values, time))
    return names, rows


def number(text):
    try:
        return int(text)
    except ValueError:
        return float(text)


def read_constraints(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.split("#", 1)[0].strip()
                if line:
                    out.append(line)
    return out


def allowed(constraints, names, values):
    scope = dict(zip(names, values))
    return all(eval(c, {"__builtins__": {}, "min": min, "max": max}, scope) for c in constraints)


def evaluations_to(trace, target):
    """1-based index of the first evaluation at or below target, else None."""
    for i, time in enumerate(trace):
        if time is not None and time <= target:
            return i + 1
    return None


def median_text(values, budget):
    return evaluations_text(statistics.median(values), budget)


def evaluations_text(m, budget):
    """A median of evaluations, '>budget' where runs that never got there made it."""
    return f">{budget}" if m > budget else f"{m:g}"


# ---- r3 --------------------------------------------------------------------------------------

def run_r3(bo_sim, table, constraints, seeds, budget, extra=()):
    command = [bo_sim, "--seeds", str(seeds), "--budget", str(budget), "--random-seeds", "1",
               "--no-timing", "--verbose", *extra]
    for c in constraints:
        command += ["--constraint", c]
    out = subprocess.run(command + [table], check=True, capture_output=True, text=True).stdout
    line = next((l for l in out.splitlines() if "BO seeds (5%/1%):" in l), None)
    if line is None:
        sys.exit(f"bo_sim printed no seeds for {table}:\n{out}")
    pairs = [p.split("/") for p in line.split(":", 1)[1].split()]
    return [int(a) for a, _ in pairs], [int(b) for _, b in pairs]


# ---- Kernel Tuner ----------------------------------------------------------------------------

def write_cache(path, names, rows, constraints, kernel_name):
    """The table as a Kernel Tuner cache; returns (tune_params, optimum, the time of every
    configuration of the constrained space, None where it fails)."""
    values = [sorted({r[0][i] for r in rows}) for i in range(len(names))]
    times = {v: t for v, t in rows}
    cache = {}
    optimum = math.inf
    for combination in itertools.product(*values):
        if constraints and not allowed(constraints, names, combination):
            continue
        time = times.get(combination)
        entry = dict(zip(names, combination))
        entry["time"] = time if time is not None else "RuntimeFailedConfig"
        entry["compile_time"] = 0
        entry["verification_time"] = 0
        entry["benchmark_time"] = 0
        cache[",".join(str(v) for v in combination)] = entry
        if time is not None:
            optimum = min(optimum, time)
    tune_params = {n: v for n, v in zip(names, values)}
    with open(path, "w") as f:
        json.dump({"device_name": "table", "kernel_name": kernel_name, "problem_size": [1],
                   "tune_params_keys": names, "tune_params": tune_params, "objective": "time",
                   "cache": cache}, f)
    times = [e["time"] if e["time"] != "RuntimeFailedConfig" else None for e in cache.values()]
    return tune_params, optimum, times


# Options that let a strategy spend the budget: these stop after a fixed number of generations
# or iterations by default, long before 500 distinct evaluations (the best peer on the
# A100 table was the genetic algorithm with maxiter 1000).
STRATEGY_OPTIONS = {
    "genetic_algorithm": {"maxiter": 1000},
    "pso": {"maxiter": 1000},
    "firefly_algorithm": {"maxiter": 1000},
    "random_sample": {"fraction": 1.0},
}
# Changes when the traces a run makes change for the same seeds (2: Latin hypercubes seeded,
# seed_latin_hypercubes), so that a cache kept from before is not taken for them.
TRACE_FORMAT = 2
RESTARTS = 20  # a strategy that stops early is run again (a new seed) until the budget is spent


def seed_latin_hypercubes():
    """Kernel Tuner draws its Latin hypercube samples (the initial population of diff_evo and of
    the constraint-aware strategies) with scipy's LatinHypercube and no seed, which takes fresh OS
    entropy whatever numpy.random is seeded with: such a strategy's seeds were neither
    reproducible nor the seeds they were named for. Each hypercube now takes its seed from
    numpy.random, which run_kernel_tuner seeds."""
    import numpy as np
    from scipy.stats import qmc
    if getattr(qmc.LatinHypercube, "r3_seeded", False):
        return
    original = qmc.LatinHypercube.__init__

    def init(self, *args, **kwargs):
        if kwargs.get("seed") is None and kwargs.get("rng") is None:
            kwargs["seed"] = int(np.random.randint(0, 2**31 - 1))
        original(self, *args, **kwargs)

    qmc.LatinHypercube.__init__ = init
    qmc.LatinHypercube.r3_seeded = True


def shuffle_latin_hypercube_order():
    """Kernel Tuner returns a Latin hypercube sample as list(set(indices)), and a set of small
    integers iterates by index modulo its table size: a population is evaluated nearly in the
    order python-constraint enumerated the space, which is each parameter's largest values
    first. Under a limit such as BX*BY<=1024 the first configurations of each block of that
    order lie on the limit, so a strategy that evaluates its population in this order starts on
    the boundary, whatever the hypercube drew (diff_evo on gpu_gemm_h100, whose optimum is on
    it: within 5% in 3 evaluations; with the same samples shuffled, 15.5). This shuffles each
    sample (numpy.random, seeded by run_kernel_tuner): same points, an order that carries no
    knowledge of the space. For measuring that effect (--shuffle-peer-samples); off by default,
    Kernel Tuner as it is shipped."""
    import numpy as np
    from kernel_tuner.searchspace import Searchspace
    if getattr(Searchspace, "r3_shuffled", False):
        return
    original = Searchspace.get_LHS_sample_indices

    def shuffled(self, num_samples):
        indices = list(original(self, num_samples))
        np.random.shuffle(indices)
        return indices

    Searchspace.get_LHS_sample_indices = shuffled
    Searchspace.r3_shuffled = True


def run_kernel_tuner(cache, kernel_name, tune_params, constraints, strategy, seed, budget):
    """The times of the distinct configurations the strategy evaluated, in order (None: failed),
    at most `budget`. A strategy that ends before the budget is restarted with another seed,
    as a user would, and what it evaluated again is not counted again."""
    import numpy as np
    from kernel_tuner import tune_kernel
    seed_latin_hypercubes()
    trace, seen = [], set()
    for restart in range(RESTARTS):
        random.seed(seed + 1000 * restart)
        np.random.seed(seed + 1000 * restart)
        options = dict(STRATEGY_OPTIONS.get(strategy, {}), max_fevals=budget)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            results, _ = tune_kernel(
                kernel_name, "__global__ void " + kernel_name + "() {}", [1], [], tune_params,
                strategy=strategy, strategy_options=options,
                restrictions=constraints or None, cache=cache, simulation_mode=True, quiet=True,
                verbose=False)
        before = len(trace)
        for r in results:
            key = tuple(r[n] for n in tune_params)
            if key in seen:
                continue
            seen.add(key)
            time = r.get("time")
            trace.append(time if isinstance(time, (int, float)) and "__error__" not in r else None)
        if len(trace) >= budget or len(trace) == before:
            break
    return trace[:budget]


def install_metadata(directory, kernel_tuner):
    """Kernel Tuner asks importlib.metadata for its own version: a source tree has none, so a
    dist-info with its pyproject's version is made in `directory` (a temporary one). Returns the
    version."""
    version = "0"
    try:
        with open(os.path.join(kernel_tuner, "pyproject.toml")) as f:
            m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
            version = m.group(1) if m else version
    except OSError:
        pass
    info = os.path.join(directory, f"kernel_tuner-{version}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: kernel_tuner\nVersion: {version}\n")
    return version


def python_stack():
    """The versions of the libraries Kernel Tuner's strategies draw on. Eight of the eleven
    strategies made the same traces on Debian 12's numpy 1.24 / scipy 1.10 / scikit-learn 1.2
    as on numpy 2.5 / scipy 1.18 / scikit-learn 1.9; basinhopping and dual_annealing (scipy's
    optimisers) and bayes_opt (scikit-learn's GP) did not."""
    versions = []
    for module in ("numpy", "scipy", "sklearn"):
        try:
            versions.append(f"{module} {__import__(module).__version__}")
        except ImportError:
            versions.append(f"{module} -")
    return f"Python {sys.version.split()[0]}, " + ", ".join(versions)


class PeerCache:
    """Kernel Tuner traces kept in a JSON file between runs (see --peer-cache), each with the
    Python stack that made it (python_stack; "" for traces kept before that was recorded)."""

    def __init__(self, path, kernel_tuner_version, variant=""):
        self.path, self.version, self.variant, self.traces = path, kernel_tuner_version, variant, {}
        self.digests = {}  # per table path: its contents' hash (key)
        if path and os.path.exists(path):
            with open(path) as f:
                self.traces = json.load(f)

    def key(self, table, constraints, strategy, seed, budget):
        if table not in self.digests:  # a table's file is read once, not once per run
            with open(table, "rb") as f:
                self.digests[table] = hashlib.sha256(f.read()).hexdigest()
        what = [self.digests[table], sorted(constraints), strategy, STRATEGY_OPTIONS.get(strategy, {}), seed,
                budget, RESTARTS, self.version, TRACE_FORMAT]
        if self.variant:  # keys made before variants existed stay as they were
            what.append(self.variant)
        return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()

    def get(self, key):
        """(trace, the stack that made it), or None."""
        kept = self.traces.get(key)
        if kept is None or isinstance(kept, list):
            return None if kept is None else (kept, "")
        return kept["trace"], kept["stack"]

    def put(self, key, trace, stack, write=True):
        """Keeps a trace; `write`: in the file too, now (else at the next write())."""
        self.traces[key] = {"trace": trace, "stack": stack}
        if write:
            self.write()

    def write(self):
        if not self.path:
            return
        temporary = self.path + ".tmp"
        with open(temporary, "w") as f:
            json.dump(self.traces, f)
        os.replace(temporary, self.path)  # a run stopped half-way loses nothing kept before


# ---- statistics ------------------------------------------------------------------------------

def r3_faster_p(r3, peer):
    """One-sided Mann-Whitney U: p that r3 needs no fewer evaluations than the peer."""
    try:
        from scipy.stats import mannwhitneyu
        return mannwhitneyu(r3, peer, alternative="less").pvalue
    except Exception:  # noqa: BLE001 (no scipy: no test)
        return float("nan")


# The one-sided significance a figure's p must be below for the criterion (criterion(), and
# the summary line that names it).
SIGNIFICANCE = 0.05


def criterion(ratio, p, target, alpha=SIGNIFICANCE):
    """The issue's test of one figure (a table's evaluations to 5% or to 1%): r3's median at most
    `target` times the best peer's, and r3 faster than that peer at one-sided significance
    `alpha`. Returns "met", "missed: ..." saying which part failed, or "not judged" (no p: scipy
    is missing)."""
    if math.isnan(p):
        return "not judged (no significance test: scipy is missing)"
    missed = []
    if ratio > target:
        missed.append(f"r3 / best {ratio:.2f} > {target:g}")
    if p >= alpha:
        missed.append(f"p {p:.2g} >= {alpha:g}")
    return "met" if not missed else "missed: " + ", ".join(missed)


def criterion_summary(verdicts, target, alpha=SIGNIFICANCE):
    """One line over every figure: how many met the criterion, and which did not.
    `verdicts`: (table, "5%" or "1%", criterion()'s text) per figure."""
    met = sum(1 for _, _, v in verdicts if v == "met")
    line = (f"criterion (r3 / best peer <= {target:g}, one-sided p < {alpha:g}): met on {met} of "
            f"{len(verdicts)} figures")
    others = [f"{table} {label} ({v})" for table, label, v in verdicts if v != "met"]
    return line + ("; not met: " + "; ".join(others) if others else "")


def best_peer_bootstrap(mine, peers, resamples, target, seed=29):
    """The figure the criterion compares with is the best of several peers' medians, picked after
    the runs: a minimum over noisy medians, which falls below every strategy's own median the more
    strategies there are. Resampling each side's seeds (with replacement) and picking the best
    peer again in every resample gives that figure's spread, and how often r3 / best stays at or
    below `target`. Returns (r3's median interval, the best peer's, the ratio's, that share)."""
    rng = random.Random(seed)

    def resampled_median(values):
        return statistics.median(rng.choices(values, k=len(values)))

    r3_medians, best_medians, ratios = [], [], []
    for _ in range(resamples):
        r3_median = resampled_median(mine)
        best = min(resampled_median(values) for values in peers.values())
        r3_medians.append(r3_median)
        best_medians.append(best)
        ratios.append(r3_median / best)

    def interval(values):  # the central 90%
        ordered = sorted(values)
        return ordered[int(0.05 * len(ordered))], ordered[int(0.95 * len(ordered)) - 1]

    share = sum(1 for r in ratios if r <= target) / len(ratios)
    return interval(r3_medians), interval(best_medians), interval(ratios), share


def random_search_chance(points, good, strategies, seeds, budget, resamples=2000, seed=29):
    """What the best peer's figure would be by chance alone: were every one of `strategies`
    peers random search without replacement over the constrained space (`points`
    configurations, `good` of them within the threshold), the lowest of their medians of `seeds`
    runs each (a run that gets there after `budget` counting as budget + 1, as for the peers).
    Returns (random search's own median, exact; the median of that lowest median and its central
    90%, simulated).
    Where the best peer's figure is no lower than this, the criterion asks r3 to beat chance,
    not the peer."""
    if good == 0:
        return None
    # survival[k] = P(no good one among the first k draws) = C(points - good, k) / C(points, k)
    survival = [1.0]
    for k in range(1, points - good + 1):
        survival.append(survival[-1] * (points - good - k + 1) / (points - k + 1))
    survival.append(0.0)
    falling = [-v for v in survival]  # ascending, for bisect

    def draws_to_hit(u):  # the first k with survival[k] <= u
        return min(bisect.bisect_left(falling, -u), budget + 1)

    rng = random.Random(seed)
    own = draws_to_hit(0.5)  # exact, as bo_sim's `exact` column
    lowest = sorted(
        min(statistics.median(draws_to_hit(rng.random()) for _ in range(seeds))
            for _ in range(strategies))
        for _ in range(resamples))
    return own, statistics.median(lowest), (lowest[int(0.05 * resamples)],
                                            lowest[int(0.95 * resamples) - 1])


Problem = collections.namedtuple(
    "Problem", "constraints rows kernel_name cache tune_params optimum space_times")


def table_constraints(table, extra_constraints):
    """`extra_constraints` and those of the .constraints file beside the table."""
    return extra_constraints + read_constraints(os.path.splitext(table)[0] + ".constraints")


def table_problem(table, extra_constraints, directory):
    """A table as both sides see it: its constraints (table_constraints), its rows, its Kernel
    Tuner cache file (written in `directory`), Kernel Tuner's tune_params, the optimum and the
    times of the constrained space."""
    constraints = table_constraints(table, extra_constraints)
    names, rows = read_table(table)
    kernel_name = re.sub(r"\W", "_", os.path.splitext(os.path.basename(table))[0])
    cache = os.path.join(directory, kernel_name + ".json")
    tune_params, optimum, space_times = write_cache(cache, names, rows, constraints, kernel_name)
    return Problem(constraints, rows, kernel_name, cache, tune_params, optimum, space_times)


# ---- peers in parallel (--jobs) ---------------------------------------------------------------

_worker = {}  # in each worker process: a directory for the tables' cache files, their
# problems, and the process's python_stack()


def start_worker(paths, shuffle):
    sys.path[:0] = paths
    if shuffle:
        shuffle_latin_hypercube_order()
    _worker["directory"] = tempfile.mkdtemp(prefix="r3-peer-worker-")
    _worker["problems"] = {}
    _worker["stack"] = python_stack()


def peer_trace(job):
    """(key, trace, python_stack()) of one Kernel Tuner run; trace None where it raised (the
    runs in order that follow run it again and report why)."""
    table, extra_constraints, strategy, seed, budget, key = job
    problems = _worker["problems"]
    if table not in problems:
        problems[table] = table_problem(table, extra_constraints, _worker["directory"])
    p = problems[table]
    try:
        return key, run_kernel_tuner(p.cache, p.kernel_name, p.tune_params, p.constraints,
                                     strategy, seed, budget), _worker["stack"]
    except Exception:  # noqa: BLE001
        return key, None, None


def kernel_tuner_does_not_import(kernel_tuner, error):
    """The run's one error where Kernel Tuner (the tree `kernel_tuner`) or what it needs does
    not import under this Python: every strategy would fail the same way."""
    return (f"peer.py: Kernel Tuner ({kernel_tuner}) does not import under {sys.executable}: "
            f"{type(error).__name__}: {error}; run peer.py with a Python that has numpy, scipy, "
            "jsonschema and xmltodict (Debian: /usr/bin/python3 with python3-numpy "
            "python3-scipy python3-jsonschema python3-xmltodict)")


def run_peers_in_parallel(args, strategies, cache_of_peers, paths):
    """Every Kernel Tuner run the tables need that the cache lacks, on `args.jobs` processes,
    kept in the cache (written every 30 s and at the end): the runs in order then find them all.
    The traces are the same as in order: each run seeds itself (run_kernel_tuner)."""
    jobs = []
    for table in args.tables:
        constraints = table_constraints(table, args.constraint)
        for strategy in strategies:
            for seed in range(1, args.seeds + 1):
                key = cache_of_peers.key(table, constraints, strategy, seed, args.budget)
                if cache_of_peers.get(key) is None:
                    jobs.append((table, args.constraint, strategy, seed, args.budget, key))
    if not jobs:
        return
    # Checked here, once: a worker's run that raises is only left to the runs in order, so
    # without this every job would fail its import before they stop on the first.
    try:
        import numpy  # noqa: F401 (run_kernel_tuner's first import)
        import kernel_tuner  # noqa: F401
    except ImportError as e:
        sys.exit(kernel_tuner_does_not_import(args.kernel_tuner, e))
    print(f"peer.py: {len(jobs)} Kernel Tuner runs on {args.jobs} processes", file=sys.stderr)
    written = time.monotonic()
    with multiprocessing.Pool(args.jobs, start_worker, (paths, args.shuffle_peer_samples)) as pool:
        for done, (key, trace, stack) in enumerate(pool.imap_unordered(peer_trace, jobs), 1):
            if trace is not None:
                cache_of_peers.put(key, trace, stack, write=False)
            if time.monotonic() - written > 30 or done == len(jobs):
                cache_of_peers.write()
                written = time.monotonic()
                print(f"peer.py: {done} of {len(jobs)} runs done", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tables", nargs="+")
    parser.add_argument("--bo-sim", help="bo_sim's path; without it only the peers run (e.g. "
                                          "to fill --peer-cache on a machine with more cores)")
    parser.add_argument("--kernel-tuner", required=True, help="Kernel Tuner's source tree")
    parser.add_argument("--python-constraint", required=True,
                        help="python-constraint's source tree")
    parser.add_argument("--seeds", type=int, default=20, help="runs per peer strategy")
    parser.add_argument("--r3-seeds", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1,
                        help="processes for the Kernel Tuner runs the cache lacks (default 1)")
    parser.add_argument("--budget", type=int, default=500)
    parser.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES))
    parser.add_argument("--constraint", action="append", default=[])
    parser.add_argument("--peer-cache", help="JSON file keeping Kernel Tuner's traces between runs")
    parser.add_argument("--r3-args", default="", help="more options for bo_sim, e.g. '--trend 0'")
    parser.add_argument("--bootstrap", type=int, default=0, metavar="N",
                        help="N resamples of every side's seeds, the best peer picked again in "
                             "each: the 90%% intervals of r3's median, the best peer's and their "
                             "ratio, and the share of resamples at or below --target")
    parser.add_argument("--target", type=float, default=0.75,
                        help="the ratio r3 / best peer the criterion asks for (default 0.75)")
    parser.add_argument("--shuffle-peer-samples", action="store_true",
                        help="evaluate Kernel Tuner's Latin hypercube samples in a random order "
                             "rather than its space's enumeration order (a diagnostic: "
                             "shuffle_latin_hypercube_order)")
    args = parser.parse_args()
    metadata = tempfile.mkdtemp(prefix="r3-peer-")
    cache_of_peers = PeerCache(args.peer_cache, install_metadata(metadata, args.kernel_tuner),
                               "shuffled samples" if args.shuffle_peer_samples else "")
    paths = [metadata, args.kernel_tuner, args.python_constraint]
    sys.path[:0] = paths
    if args.shuffle_peer_samples:
        shuffle_latin_hypercube_order()

    strategies = [s for s in args.strategies.split(",") if s]
    here = python_stack()
    stacks = collections.Counter()  # the stacks that made the peers' traces, and how many each
    verdicts = []  # per figure: (table, "5%" / "1%", criterion())
    if args.jobs > 1:
        run_peers_in_parallel(args, strategies, cache_of_peers, paths)
    print("evaluations to within 5% / 1% of each table's optimum: median over " +
          (f"{args.r3_seeds} r3 seeds and " if args.bo_sim else "") +
          f"{args.seeds} seeds per Kernel Tuner strategy, budget {args.budget}" +
          ("; p: one-sided Mann-Whitney U that r3 is faster than the best peer" if args.bo_sim
           else "") +
          ("; Kernel Tuner's Latin hypercube samples shuffled" if args.shuffle_peer_samples
           else ""))
    for table in args.tables:
        with tempfile.TemporaryDirectory() as tmp:
            constraints, rows, kernel_name, cache, tune_params, optimum, space_times = \
                table_problem(table, args.constraint, tmp)
            r3_5, r3_1 = (run_r3(args.bo_sim, table, constraints, args.r3_seeds, args.budget,
                                 args.r3_args.split()) if args.bo_sim else (None, None))
            peers = {}
            for strategy in strategies:
                five, one, failed = [], [], ""
                for seed in range(1, args.seeds + 1):
                    key = cache_of_peers.key(table, constraints, strategy, seed, args.budget)
                    kept = cache_of_peers.get(key)
                    try:
                        if kept is None:
                            kept = (run_kernel_tuner(cache, kernel_name, tune_params, constraints,
                                                     strategy, seed, args.budget), here)
                            cache_of_peers.put(key, *kept)
                        trace = kept[0]
                        stacks[kept[1] or "not recorded"] += 1
                    except ImportError as e:  # every strategy would fail the same way
                        sys.exit(kernel_tuner_does_not_import(args.kernel_tuner, e))
                    except Exception as e:  # noqa: BLE001 (a strategy that breaks is reported)
                        failed = f"{type(e).__name__}: {e}"[:100]
                        break
                    five.append(evaluations_to(trace, 1.05 * optimum) or args.budget + 1)
                    one.append(evaluations_to(trace, 1.01 * optimum) or args.budget + 1)
                peers[strategy] = (five, one, failed)
        print(f"\n{os.path.basename(table)}: {len(rows)} rows, optimum {optimum:g}, constraints: "
              f"{'; '.join(constraints) if constraints else 'none'}")
        print(f"  {'strategy':<22} {'to 5%':>8} {'to 1%':>8}")
        if args.bo_sim:
            label = "r3 (bo_sim" + (" " + args.r3_args if args.r3_args else "") + ")"
            print(f"  {label:<22} {median_text(r3_5, args.budget):>8} "
                  f"{median_text(r3_1, args.budget):>8}")
        for strategy, (five, one, failed) in peers.items():
            if failed:
                print(f"  {strategy:<22} failed: {failed}")
            else:
                print(f"  {strategy:<22} {median_text(five, args.budget):>8} "
                      f"{median_text(one, args.budget):>8}")
        for label, index, threshold, mine in (("5%", 0, 1.05, r3_5), ("1%", 1, 1.01, r3_1)):
            ran = {s: p[index] for s, p in peers.items() if not p[2]}
            if not ran:
                continue
            best = min(ran, key=lambda s: statistics.median(ran[s]))
            if mine:
                ratio = statistics.median(mine) / statistics.median(ran[best])
                p = r3_faster_p(mine, ran[best])
                verdict = criterion(ratio, p, args.target)
                verdicts.append((os.path.basename(table), label, verdict))
            print(f"  to {label}: best peer {best} ({median_text(ran[best], args.budget)})" +
                  (f"; r3 / best = {ratio:.2f}; p = {p:.3g}; {verdict}" if mine else ""))
            if args.bootstrap > 0 and mine:
                (r3_lo, r3_hi), (best_lo, best_hi), (ratio_lo, ratio_hi), share = \
                    best_peer_bootstrap(mine, ran, args.bootstrap, args.target)
                print(f"    bootstrap ({args.bootstrap}, best peer picked again each time), 90%: "
                      f"r3 {r3_lo:g}-{r3_hi:g}, best peer {best_lo:g}-{best_hi:g}, "
                      f"r3 / best {ratio_lo:.2f}-{ratio_hi:.2f}; "
                      f"r3 / best <= {args.target:g} in {100 * share:.0f}%")
            good = sum(1 for t in space_times if t is not None and t <= threshold * optimum)
            chance = random_search_chance(len(space_times), good, len(ran), args.seeds,
                                          args.budget)
            if chance:
                own, lowest, (lowest_lo, lowest_hi) = chance

                def text(m):
                    return evaluations_text(m, args.budget)
                print(f"    chance: random search ({good} of {len(space_times)} within {label}) "
                      f"needs {text(own)}; the best of {len(ran)} random searches' medians of "
                      f"{args.seeds} runs is {text(lowest)} (90%: {text(lowest_lo)} to "
                      f"{text(lowest_hi)})" + ("" if lowest > args.budget else
                                              f", {args.target:g}x that: "
                                              f"{args.target * lowest:.3g}"))
    if verdicts:
        print("\n" + criterion_summary(verdicts, args.target))
    if stacks:
        print("\nKernel Tuner's runs were made on " +
              "; ".join(f"{stack} ({runs} runs)" for stack, runs in stacks.items()) +
              f"; this machine: {here}")


if __name__ == "__main__":
    main()
