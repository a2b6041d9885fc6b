"""pe_lib.sweeps: what both experiments share (their sweeps themselves are tested in test_experiments.py and
test_extrapolation.py, in one and in two processes)."""

import json

import numpy as np
import pytest
import torch

from pe_lib import sweeps


def test_stats_are_mean_sample_std_min_max():
    assert sweeps.stats([1.0, 2.0, 4.0]) == {
        "mean": pytest.approx(7 / 3),
        "std": pytest.approx(np.std([1.0, 2.0, 4.0], ddof=1)),
        "min": 1.0,
        "max": 4.0,
    }
    assert sweeps.stats([0.5]) == {"mean": 0.5, "std": 0.0, "min": 0.5, "max": 0.5}


def test_mean_per_position_keeps_the_positions_without_a_target_empty():
    rows = [{"per_position": [None, 0.5, 1.0]}, {"per_position": [None, 0.25, 0.0]}]
    assert sweeps.mean_per_position(rows) == [None, 0.375, 0.5]


def test_rounded_reaches_every_float_and_leaves_the_rest():
    value = {"a": 0.1234567891, "b": [1, 2.0000004, (3.3333333333, "x")], "c": None}
    assert sweeps.rounded(value) == {"a": 0.123457, "b": [1, 2.0, [3.333333, "x"]], "c": None}


def test_results_json_is_sorted_and_ends_with_a_newline():
    text = sweeps.results_json({"b": 1, "a": [0.5]})
    assert text.endswith("}\n") and text.index('"a"') < text.index('"b"') and json.loads(text) == {"a": [0.5], "b": 1}


def _square(x):
    return {"seed": x, "value": x * x}, 0.5


def test_run_plan_keeps_plan_order_and_reports_progress():
    seen = []
    runs = sweeps.run_plan(
        _square, [(3,), (1,), (2,)], progress=lambda done, total, run: seen.append((done, total, run))
    )
    assert runs == [{"seed": 3, "value": 9}, {"seed": 1, "value": 1}, {"seed": 2, "value": 4}]
    assert [(d, t) for d, t, _ in seen] == [(1, 3), (2, 3), (3, 3)] and seen[0][2]["seconds"] == 0.5
    assert "seconds" not in runs[0]  # kept out of the results file
    with pytest.raises(ValueError, match="jobs"):
        sweeps.run_plan(_square, [(1,)], jobs=0)


def test_reproducible_gives_back_the_callers_torch_state(caller_threads):
    torch.manual_seed(5)
    before, threads = torch.get_rng_state(), torch.get_num_threads()
    with sweeps.reproducible(1):
        assert torch.get_num_threads() == 1 and torch.are_deterministic_algorithms_enabled()
        torch.rand(3)
    assert torch.equal(torch.get_rng_state(), before) and torch.get_num_threads() == threads


def test_banded_differences_allow_the_band_and_nothing_else():
    committed = {"seeds": [0], "runs": [{"name": "a", "seed": 0, "accuracy": 0.9, "loss": 0.1}], "summary": {}}

    def check(run, **changes):
        fresh = {**committed, **changes, "runs": [run]}
        return sweeps.banded_differences(fresh, committed, key=lambda r: (r["name"], r["seed"]),
                                         widths=lambda r: {"accuracy": 0.01})  # fmt: skip

    base = committed["runs"][0]
    assert check(base) == [] and check({**base, "accuracy": 0.909}) == []
    assert check({**base, "accuracy": 0.92}) == [
        "run ('a', 0): accuracy 0.92 here, 0.9 in the file (allowed: 0.01 apart)"
    ]
    assert check({**base, "loss": 0.1 + 1e-9}) == ["run ('a', 0): loss 0.100000001 here, 0.1 in the file"]
    assert check({**base, "seed": 1}) == ["runs: [('a', 1)] here, [('a', 0)] in the file"]
    assert check(base, seeds=[1]) == ["seeds: [1] here, [0] in the file"]
