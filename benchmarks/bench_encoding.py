"""Build the sinusoidal table three ways, side by side, in one run: speed and accuracy.

    python benchmarks/bench_encoding.py [--positions 65536] [--d-model 512] [--repeats 9]

- usual recipe: the float32 torch code of the PyTorch snippet and the lecture handout
  (div_term = exp(arange(0, d, 2) * -ln(10000)/d)).
- pe_lib: sinusoidal_encoding(..., dtype=float32): float64 angle addition, rounded once to float32.
- floor: allocating and filling a float32 array of the same size (no maths at all).
Errors are max |table - reference| against the paper's formula in float64.
"""

import argparse
import math
import statistics
import time

import numpy as np
import torch

import pe_lib


def usual_recipe(n, d_model):
    """The sources' PositionalEncoding table, verbatim in substance: float32 throughout."""
    position = torch.arange(0, n).unsqueeze(1).float()
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
    pe = torch.zeros(n, d_model)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.numpy()


def pe_lib_table(n, d_model):
    return pe_lib.sinusoidal_encoding(n, d_model, dtype=np.float32)


def floor(n, d_model):
    """The least any method must spend: a fresh float32 array of the same size, written once."""
    table = np.empty((n, d_model), dtype=np.float32)
    table.fill(0.5)
    return table


METHODS = {
    "usual recipe (torch float32)": usual_recipe,
    "pe_lib float32": pe_lib_table,
    "floor (allocate + fill)": floor,
}


def median_seconds(function, n, d_model, repeats):
    function(n, d_model)  # warm-up: imports, thread pools, first-touch allocations
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(n, d_model)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(n=65536, d_model=512, repeats=9):
    """Measure every method; return rows of (name, seconds, ratio to the usual recipe, max error or None)."""
    reference = pe_lib.sinusoidal_encoding(n, d_model, dtype=np.float64)  # the paper's formula, float64
    seconds = {name: median_seconds(function, n, d_model, repeats) for name, function in METHODS.items()}
    usual_time = seconds["usual recipe (torch float32)"]
    rows = []
    for name, function in METHODS.items():
        error = None if function is floor else float(np.max(np.abs(function(n, d_model) - reference)))
        rows.append((name, seconds[name], seconds[name] / usual_time, error))
    return rows


def report(rows, n, d_model):
    lines = [
        f"sinusoidal table {n} x {d_model} float32, torch threads={torch.get_num_threads()}",
        f"{'method':<30} {'median ms':>10} {'vs usual':>8} {'max abs error':>14}",
    ]
    for name, seconds, ratio, error in rows:
        shown = "-" if error is None else f"{error:.1e}"
        lines.append(f"{name:<30} {seconds * 1e3:>10.1f} {ratio:>8.2f} {shown:>14}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=65536)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    rows = run(args.positions, args.d_model, args.repeats)
    print(report(rows, args.positions, args.d_model))
    _, pe_time, pe_ratio, pe_error = rows[1]
    target = pe_ratio <= 1.0 and pe_error <= 1.2e-7
    print(f"target (pe_lib no slower than the usual recipe, error <= 1.2e-7): {'met' if target else 'MISSED'}")
    return rows


if __name__ == "__main__":
    main()
