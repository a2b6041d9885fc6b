"""What the course's two experiments share (pe_lib.experiments, notebook 05; pe_lib.extrapolation, 08).

Training that gives the same numbers for a given seed on a given machine (`reproducible`), a sweep
run in one or several processes with the same result (`run_plan`), its summary statistics, the
results file's exact text, and the command line that writes the file or checks it
(`command_line`: python -m pe_lib.<experiment> [--seeds ...] [--jobs N] [--check] [--out FILE]).
"""

import argparse
import concurrent.futures
import contextlib
import json
import multiprocessing
import time
from pathlib import Path

import numpy as np
import torch

from . import _validate


@contextlib.contextmanager
def reproducible(threads):
    """Fixed thread count, deterministic algorithms and a private torch RNG; the caller's state comes back."""
    old_threads = torch.get_num_threads()
    old_deterministic = torch.are_deterministic_algorithms_enabled()
    old_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_deterministic, warn_only=old_warn_only)


def run_plan(one_run, plan, *, jobs=1, progress=None):
    """[one_run(*args)[0] for args in plan], in plan order; jobs > 1 runs them in that many processes.

    one_run returns (result dict, seconds). Each run seeds itself, so the list is the same for any
    jobs. progress, if given, is called as progress(done, total, run) after each run, where run
    carries its "seconds" too (they are not kept: they would make the results file differ).
    """
    jobs = _validate.positive_int("jobs", jobs)
    runs = []

    def record(run, seconds):
        runs.append(run)
        if progress is not None:
            progress(len(runs), len(plan), {**run, "seconds": seconds})

    if jobs == 1:
        for args in plan:
            record(*one_run(*args))
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch state shared with the parent
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
            for run, seconds in pool.map(one_run, *zip(*plan, strict=True)):
                record(run, seconds)
    return runs


def stats(values):
    """Mean, sample standard deviation (ddof=1; 0 for one value), min and max of `values`, as floats."""
    values = np.asarray(values, dtype=float)
    std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
    return {"mean": float(values.mean()), "std": std, "min": float(values.min()), "max": float(values.max())}


def mean_per_position(rows):
    """The mean over runs of their "per_position" lists (None where a position has no target)."""
    per_position = np.array([[np.nan if a is None else a for a in run["per_position"]] for run in rows])
    return [None if np.isnan(a) else float(a) for a in per_position.mean(axis=0)]


def rounded(value, digits=6):
    """Every float in a (nested) dict or list rounded to `digits`: a results file that reads the same everywhere."""
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {key: rounded(item, digits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(item, digits) for item in value]
    return value


def results_json(results):
    """The results dict as the exact text written to the results file (sorted keys, 1 space indent)."""
    return json.dumps(results, indent=1, sort_keys=True) + "\n"


def banded_differences(fresh, committed, *, key, widths):
    """What a sweep's --check reports when runs may differ in their last digits from one CPU to another.

    Every entry but "runs" and "summary" must be equal (config, seeds, torch version, ...); runs are matched by
    key(run); a run's fields in widths(run) (a dict: field -> largest allowed |difference|) may differ by that
    much, every other field (variant, seed, ...) must be equal. Returns a list of problems, empty if none.
    """
    problems = [
        f"{name}: {fresh.get(name)!r} here, {committed.get(name)!r} in the file"
        for name in sorted((set(fresh) | set(committed)) - {"runs", "summary"})
        if fresh.get(name) != committed.get(name)
    ]
    new, old = ({key(run): run for run in results["runs"]} for results in (fresh, committed))
    if set(new) != set(old):
        problems.append(f"runs: {sorted(new)} here, {sorted(old)} in the file")
    for name in sorted(set(new) & set(old)):
        here, there, allowed = new[name], old[name], widths(old[name])
        for field in sorted(set(here) | set(there)):
            a, b = here.get(field), there.get(field)
            close = field in allowed and a is not None and b is not None and abs(a - b) <= allowed[field]
            if a != b and not close:
                limit = f" (allowed: {allowed[field]:g} apart)" if field in allowed else ""
                problems.append(f"run {name}: {field} {a!r} here, {b!r} in the file{limit}")
    return problems


def command_line(argv, *, description, run_sweep, seeds, results_path, label, metrics, print_results, compare=None):
    """An experiment's `main`: run its sweep, print it, then write the results file or (--check) compare.

    run_sweep(seeds=, progress=, jobs=) -> results; label(run) names a run in the progress lines;
    print_results(results) prints its tables. compare(fresh, committed) -> a list of problems (strings) is what
    --check uses if given (e.g. banded_differences, for sweeps whose runs differ across CPUs); without it the
    file must be identical. Returns the exit status (1: --check found a difference).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds), help="training seeds")
    parser.add_argument("--out", type=Path, default=results_path, help="results file (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="compare with the file at --out instead of writing it")
    parser.add_argument("--jobs", type=int, default=1, help="models trained at once (same results for any value)")
    args = parser.parse_args(argv)

    def report(done, total, run):
        print(
            f"[{done:2d}/{total}] {label(run)} seed {run['seed']}: "
            + ", ".join(f"{m} {run[m]:.3f}" for m in metrics)
            + f"   ({run['seconds']:.1f} s)",
            flush=True,
        )

    start = time.perf_counter()
    results = run_sweep(seeds=args.seeds, progress=report, jobs=args.jobs)
    print(f"sweep took {time.perf_counter() - start:.0f} s")
    print_results(results)
    text = results_json(results)
    if args.check:
        if compare is None:
            same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
            print(f"{'identical to' if same else 'DIFFERS from'} {args.out}")
            return 0 if same else 1
        committed = json.loads(args.out.read_text(encoding="utf-8")) if args.out.exists() else None
        problems = [f"no file at {args.out}"] if committed is None else compare(results, committed)
        for problem in problems:
            print(" ", problem)
        print(f"{'DIFFERS from' if problems else 'agrees with'} {args.out}")
        return 1 if problems else 0
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0
