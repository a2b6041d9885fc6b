"""Positions two ways each, side by side, in one run: speed and accuracy.

    python benchmarks/bench_encoding.py [--positions 65536] [--d-model 512] [--repeats 9]
        [--rope-batch 8] [--rope-heads 8] [--rope-seq 2048] [--rope-head-dim 64] [--rope-last 100000]

The sinusoidal table:
- usual recipe: the float32 torch code of the PyTorch snippet and the lecture handout
  (div_term = exp(arange(0, d, 2) * -ln(10000)/d)).
- pe_lib: sinusoidal_encoding(..., dtype=float32): float64 angle addition, rounded once to float32.
- floor: allocating and filling a float32 array of the same size (no maths at all).
Errors are max |table - reference| against the paper's formula in float64.

RoPE on a float32 torch tensor (batch, heads, seq, head_dim), the sequence's positions ending at
--rope-last (10^5: far out, where float32 angles are off):
- usual recipe: Hugging Face Llama's code, float32 throughout: inv_freq, the cos/sin cache of
  cat(freqs, freqs) and x * cos + rotate_half(x) * sin; timed with the cache built in the call (as
  each forward pass does) and with it built beforehand.
- pe_lib: apply_rope(x, positions, layout="half"): float64 angles, cos/sin rounded once to float32.
- floor: x * a + x * b with two tensors of x's shape: the elementwise work any rotation needs.
Errors are max |result - reference| against the same rotation in float64 (NumPy, float64 angles).
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


def median_seconds(function, *args, repeats):
    function(*args)  # warm-up: imports, thread pools, first-touch allocations
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(n=65536, d_model=512, repeats=9):
    """Measure every method; return rows of (name, seconds, ratio to the usual recipe, max error or None)."""
    reference = pe_lib.sinusoidal_encoding(n, d_model, dtype=np.float64)  # the paper's formula, float64
    seconds = {name: median_seconds(function, n, d_model, repeats=repeats) for name, function in METHODS.items()}
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


# --- RoPE: pe_lib.apply_rope against the usual recipe ----------------------------------------


def rope_cache(positions, head_dim, base=10000.0):
    """The usual recipe's cos/sin (Hugging Face Llama): float32 angles, each pair angle written for both halves."""
    inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    freqs = torch.outer(positions.float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def usual_rope(x, positions):
    cos, sin = rope_cache(positions, x.shape[-1])
    return x * cos + rotate_half(x) * sin


def usual_rope_cached(cache):
    cos, sin = cache

    def apply(x, positions):
        return x * cos + rotate_half(x) * sin

    return apply


def pe_lib_rope(x, positions):
    return pe_lib.apply_rope(x, positions, layout="half")


def rope_floor(scale):
    a, b = scale

    def apply(x, positions):
        return x * a + x * b

    return apply


def rope_reference(x, positions, base=10000.0):
    """The rotation in float64 with float64 angles (NumPy): pair (i, i + d/2) turned by position * theta_i."""
    x = x.double().numpy()
    half = x.shape[-1] // 2
    angles = positions.double().numpy()[:, None] * base ** (-np.arange(0, 2 * half, 2) / (2 * half))
    cos, sin = np.cos(angles), np.sin(angles)
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def run_rope(batch=8, heads=8, seq=2048, head_dim=64, last=100_000, repeats=9):
    """RoPE on float32 torch: rows of (name, seconds, ratio to the usual recipe, max error or None), and max |x|."""
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(batch, heads, seq, head_dim, generator=generator)
    positions = torch.arange(last - seq + 1, last + 1)
    methods = {
        "usual recipe (torch float32)": usual_rope,
        "usual recipe, cache prebuilt": usual_rope_cached(rope_cache(positions, head_dim)),
        "pe_lib apply_rope": pe_lib_rope,
        "floor (x * a + x * b)": rope_floor((torch.rand_like(x), torch.rand_like(x))),
    }
    # Interleave the methods' repeats, so that a busy moment of the machine hits all of them alike.
    times = {name: [] for name in methods}
    for function in methods.values():
        function(x, positions)  # warm-up
    for _ in range(repeats):
        for name, function in methods.items():
            start = time.perf_counter()
            function(x, positions)
            times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(values) for name, values in times.items()}
    reference = rope_reference(x, positions)
    rows = []
    for name, function in methods.items():
        error = None if name.startswith("floor") else float(np.max(np.abs(function(x, positions).numpy() - reference)))
        rows.append((name, seconds[name], seconds[name] / seconds["usual recipe (torch float32)"], error))
    return rows, float(x.abs().max())


def rope_report(rows, batch, heads, seq, head_dim, last):
    lines = [
        f"RoPE on float32 ({batch}, {heads}, {seq}, {head_dim}), positions {last - seq + 1}..{last}, "
        f"torch threads={torch.get_num_threads()}",
        f"{'method':<30} {'median ms':>10} {'vs usual':>8} {'max abs error':>14}",
    ]
    for name, seconds, ratio, error in rows:
        shown = "-" if error is None else f"{error:.1e}"
        lines.append(f"{name:<30} {seconds * 1e3:>10.1f} {ratio:>8.2f} {shown:>14}")
    return "\n".join(lines)


# Float32 rounding of a rotated value: the rounding of cos and sin (relative 2**-24 each) and of the
# multiply-add, a few units of 2**-24 times the size of the inputs.
ROPE_ERROR_TARGET = 4 * 2.0**-24


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--positions", type=int, default=65536)
    parser.add_argument("--d-model", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--rope-batch", type=int, default=8)
    parser.add_argument("--rope-heads", type=int, default=8)
    parser.add_argument("--rope-seq", type=int, default=2048)
    parser.add_argument("--rope-head-dim", type=int, default=64)
    parser.add_argument("--rope-last", type=int, default=100_000)
    args = parser.parse_args(argv)
    rows = run(args.positions, args.d_model, args.repeats)
    print(report(rows, args.positions, args.d_model))
    _, pe_time, pe_ratio, pe_error = rows[1]
    target = pe_ratio <= 1.0 and pe_error <= 1.2e-7
    print(f"target (pe_lib no slower than the usual recipe, error <= 1.2e-7): {'met' if target else 'MISSED'}")
    print()
    shape = (args.rope_batch, args.rope_heads, args.rope_seq, args.rope_head_dim)
    rope_rows, largest = run_rope(*shape, last=args.rope_last, repeats=args.repeats)
    print(rope_report(rope_rows, *shape, args.rope_last))
    by_name = {name: (ratio, error) for name, _, ratio, error in rope_rows}
    ratio, error = by_name["pe_lib apply_rope"]
    target = ratio <= 1.0 and error <= ROPE_ERROR_TARGET * largest
    print(
        f"target (apply_rope no slower than the usual recipe, error <= 4 * 2**-24 * max|x| = "
        f"{ROPE_ERROR_TARGET * largest:.1e}): {'met' if target else 'MISSED'}"
    )
    return {"sinusoidal": rows, "rope": rope_rows}


if __name__ == "__main__":
    main()
