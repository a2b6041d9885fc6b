"""Smoke runs of the benchmarks at small sizes, so they never rot."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_encoding  # noqa: E402


def test_bench_encoding_small(capsys):
    rows = bench_encoding.main(["--positions", "2048", "--d-model", "64", "--repeats", "2"])
    out = capsys.readouterr().out
    assert "pe_lib float32" in out and "floor" in out and "target" in out
    by_name = {name: (seconds, ratio, error) for name, seconds, ratio, error in rows}
    assert by_name["usual recipe (torch float32)"][1] == 1.0
    assert by_name["pe_lib float32"][2] <= 1.2e-7
    assert by_name["usual recipe (torch float32)"][2] > by_name["pe_lib float32"][2]
