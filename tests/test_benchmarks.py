"""Smoke runs of the benchmarks at small sizes, so they never rot."""

import sys
from pathlib import Path

import numpy as np
import torch

import pe_lib

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_encoding  # noqa: E402

SMALL = ["--positions", "2048", "--d-model", "64", "--repeats", "2"]
SMALL_ROPE = ["--rope-batch", "2", "--rope-heads", "2", "--rope-seq", "256", "--rope-head-dim", "32"]


def test_bench_encoding_small(capsys):
    tables = bench_encoding.main([*SMALL, *SMALL_ROPE])
    out = capsys.readouterr().out
    assert "pe_lib float32" in out and "floor" in out and "target" in out
    by_name = {name: (seconds, ratio, error) for name, seconds, ratio, error in tables["sinusoidal"]}
    assert by_name["usual recipe (torch float32)"][1] == 1.0
    assert by_name["pe_lib float32"][2] <= 1.2e-7
    assert by_name["usual recipe (torch float32)"][2] > by_name["pe_lib float32"][2]


def test_bench_encoding_rope_side_by_side(capsys):
    tables = bench_encoding.main([*SMALL, *SMALL_ROPE, "--rope-last", "100000"])
    out = capsys.readouterr().out
    assert "RoPE on float32 (2, 2, 256, 32), positions 99745..100000" in out
    assert "apply_rope no slower than the usual recipe" in out
    by_name = {name: (seconds, ratio, error) for name, seconds, ratio, error in tables["rope"]}
    assert set(by_name) == {
        "usual recipe (torch float32)",
        "usual recipe, cache prebuilt",
        "pe_lib apply_rope",
        "floor (x * a + x * b)",
    }
    assert by_name["usual recipe (torch float32)"][1] == 1.0 and by_name["floor (x * a + x * b)"][2] is None
    usual, ours = by_name["usual recipe (torch float32)"][2], by_name["pe_lib apply_rope"][2]
    assert ours < 4 * 2.0**-24 * 6  # float32 rounding of values up to |x| ~ 6 (randn), at position 10^5 ...
    assert usual > 1e-3 > 100 * ours  # ... where float32 angles are off by ~4e-3 radians


def test_the_rope_reference_is_the_library_in_float64():
    x = torch.randn(2, 3, 10, 16, dtype=torch.float64)
    positions = torch.arange(10) * 997
    expected = pe_lib.apply_rope(x.numpy(), positions.numpy(), layout="half")
    assert np.allclose(bench_encoding.rope_reference(x, positions), expected, atol=1e-12)
    cached = bench_encoding.usual_rope(x.float(), torch.arange(10))
    assert np.allclose(cached.numpy(), pe_lib.apply_rope(x.float(), None, layout="half").numpy(), atol=1e-5)
