"""pe_lib.extrapolation: the tasks, the causal decoder's position methods, context extension, the sweep."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pe_lib import decoder, sweeps
from pe_lib import extrapolation as ex

ROOT = Path(__file__).resolve().parent.parent
TINY = ex.Config(train_len=8, shift=2, window=2, steps=20, batch_size=8, eval_size=16, finetune_steps=(2, 4))


# --- tasks ----------------------------------------------------------------------------------


def test_shift_targets_copy_the_token_k_places_back():
    tokens = torch.randint(0, 16, (5, 12), generator=torch.Generator().manual_seed(0))
    targets = ex.task_targets(tokens, "shift", ex.Config())
    for i in range(12):
        expected = tokens[:, i - 3] if i >= 3 else torch.full((5,), ex.IGNORE)
        assert torch.equal(targets[:, i], expected)


def test_local_max_targets_are_the_largest_of_the_last_w_tokens():
    tokens = torch.randint(0, 16, (5, 12), generator=torch.Generator().manual_seed(1))
    targets = ex.task_targets(tokens, "local_max", ex.Config())
    for b in range(5):
        for i in range(12):
            expected = max(tokens[b, i - 2 : i + 1].tolist()) if i >= 2 else ex.IGNORE
            assert targets[b, i].item() == expected


@pytest.mark.parametrize(
    "tokens, task, error",
    [
        (torch.zeros(4, dtype=torch.long), "shift", ValueError),  # 1-D
        (torch.zeros(2, 4), "shift", ValueError),  # floats
        ([[1, 2, 3]], "shift", ValueError),  # not a tensor
        (torch.zeros(2, 4, dtype=torch.long), "copy", ValueError),
    ],
)
def test_task_targets_reject_bad_input(tokens, task, error):
    with pytest.raises(error):
        ex.task_targets(tokens, task)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"shift": 16}, "smaller than train_len"),
        ({"window": 0}, "window"),
        ({"num_heads": 3}, "heads"),
        ({"d_model": 24, "num_heads": 4}, "divisible by 4"),
        ({"lr": 0.0}, "lr"),
        ({"finetune_steps": (150, 40)}, "increasing"),
        ({"finetune_steps": (0,)}, "finetune_steps"),
        ({"t5_buckets": -1}, "t5_buckets"),
    ],
)
def test_config_rejects_bad_settings(changes, message):
    with pytest.raises(ValueError, match=message):
        ex.Config(**changes)


def test_config_places_the_tests():
    config = ex.Config()
    assert (config.max_position, config.unseen_start) == (64, 48)
    with pytest.raises(TypeError, match="Config"):
        ex.train("rope", "shift", {"steps": 3})


# --- training and tests ---------------------------------------------------------------------


def test_training_is_deterministic_and_leaves_the_caller_state_alone(caller_threads):
    torch.manual_seed(123)
    before = torch.get_rng_state()
    threads = torch.get_num_threads()
    seen = []
    a = ex.train("t5", "local_max", TINY, seed=3, progress=lambda step, steps, loss: seen.append(step))
    b = ex.train("t5", "local_max", TINY, seed=3)
    assert a.losses.tolist() == b.losses.tolist()
    assert seen == [10, 20]
    assert torch.equal(torch.get_rng_state(), before) and torch.get_num_threads() == threads
    with torch.no_grad():
        assert ex.train("rope", "shift", TINY).losses.tolist() == ex.train("rope", "shift", TINY).losses.tolist()


def test_train_rejects_bad_arguments():
    with pytest.raises(ValueError, match="positional"):
        ex.train("absolute", "shift", TINY)
    with pytest.raises(ValueError, match="task"):
        ex.train("rope", "copy", TINY)
    with pytest.raises(TypeError, match="progress"):
        ex.train("rope", "shift", TINY, progress=True)


def test_evaluate_scores_only_the_positions_past_the_trained_length():
    trained = ex.train("learned", "shift", TINY)
    scores = ex.evaluate(trained.model, "shift", TINY)
    assert set(scores) == {*ex.METRICS, "per_position"}
    assert all(0 <= scores[m] <= 1 for m in ex.METRICS)
    per_position = scores["per_position"]
    assert len(per_position) == 4 * TINY.train_len and per_position[: TINY.shift] == [None] * TINY.shift
    past = np.array(per_position[TINY.train_len :])
    assert scores["at_4x"] == pytest.approx(past.mean(), abs=1e-6)  # the same count of targets at each position


def test_evaluate_runs_only_the_tests_asked_for_with_the_same_scores():
    model = ex.train("rope", "shift", TINY).model
    every = ex.evaluate(model, "shift", TINY)
    only_4x = ex.evaluate(model, "shift", TINY, tests=["at_4x"])
    assert set(only_4x) == {"at_4x", "per_position"} and only_4x["at_4x"] == every["at_4x"]
    assert only_4x["per_position"] == every["per_position"]
    two = ex.evaluate(model, "shift", TINY, tests=("unseen_window", "in_distribution"))
    assert two == {m: every[m] for m in ("in_distribution", "unseen_window")}  # no per_position without at_4x
    for bad in ("at_4x", [], ["at_8x"]):
        with pytest.raises(ValueError, match="tests"):
            ex.evaluate(model, "shift", TINY, tests=bad)


def test_pair0_lookalikes_split_the_untrained_distances_by_pair_0s_angle_from_the_target():
    lookalikes, others = ex.pair0_lookalikes()
    assert len(lookalikes) == len(others) == 24 and sorted(lookalikes + others) == list(range(16, 64))
    for distance in range(16, 64):  # pair 0 turns by 1 rad per position: within a quarter turn of distance 3?
        near = math.cos(distance - 3) > 0
        assert (distance in lookalikes) == near and (distance in others) == (not near)
    assert {34, 41, 47, 53, 60} <= set(lookalikes)  # the nearest to 3 + 2 pi k
    tiny_lookalikes, tiny_others = ex.pair0_lookalikes(TINY)
    assert sorted(tiny_lookalikes + tiny_others) == list(range(TINY.train_len, 4 * TINY.train_len))


def test_extend_and_finetune_reports_zero_shot_and_each_checkpoint():
    trained = ex.train("rope", "shift", TINY)
    scores = ex.extend_and_finetune(trained, "ntk", 2)
    assert list(scores) == ["zero_shot", "after_2", "after_4"]
    assert scores["zero_shot"] == ex.evaluate(trained.model.extended("ntk", 2), "shift", TINY)["at_2x"]
    assert ex.extend_and_finetune(trained, "ntk", 2) == scores  # reproducible
    with pytest.raises(ValueError, match="factor"):
        ex.extend_and_finetune(trained, "ntk", 3)


# --- the sweep ------------------------------------------------------------------------------


def test_sweep_summarises_every_run_and_is_the_same_in_two_processes():
    seen = []
    results = ex.run_sweep(
        TINY,
        seeds=(0, 1),
        tasks=("shift",),
        variants=("none", "rope"),
        progress=lambda done, total, run: seen.append((done, total)),
    )
    assert seen == [(i, 4) for i in range(1, 5)]
    summary = results["summary"]["shift"]
    assert set(summary) == {"none", "rope", "extension"}
    values = [r["at_2x"] for r in results["runs"] if r["positional"] == "rope"]
    assert summary["rope"]["at_2x"]["mean"] == pytest.approx(np.mean(values), abs=1e-6)
    assert summary["rope"]["at_2x"]["std"] == pytest.approx(np.std(values, ddof=1), abs=1e-6)
    assert set(summary["extension"]) == set(decoder.EXTENSIONS)
    assert list(summary["extension"]["yarn"]["4"]) == ["zero_shot", "after_2", "after_4"]
    text = sweeps.results_json(results)
    assert json.loads(text) == results
    again = ex.run_sweep(TINY, seeds=(0, 1), tasks=("shift",), variants=("none", "rope"), jobs=2)
    assert sweeps.results_json(again) == text


def test_main_writes_the_results_file_and_checks_it(tmp_path, monkeypatch, capsys):
    real = ex.run_sweep
    monkeypatch.setattr(ex, "run_sweep", lambda **kw: real(TINY, tasks=("shift",), variants=("rope",), **kw))
    out = tmp_path / "results.json"
    assert ex.main(["--seeds", "0", "--out", str(out)]) == 0
    assert ex.main(["--seeds", "0", "--out", str(out), "--check"]) == 0
    out.write_text("{}\n")
    assert ex.main(["--seeds", "0", "--out", str(out), "--check"]) == 1
    printed = capsys.readouterr().out
    assert "identical to" in printed and "DIFFERS from" in printed and "zero_shot" in printed


def test_the_sweep_has_one_entry_point_python_dash_m():
    run = subprocess.run([sys.executable, "-m", "pe_lib.extrapolation", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "--check" in run.stdout


def test_committed_results_cover_every_task_variant_and_five_seeds():
    results = ex.load_results()
    assert results == json.loads((ROOT / "pe_lib" / "data" / "length_generalisation.json").read_text())
    assert results["seeds"] == [0, 1, 2, 3, 4]
    assert results["config"] == json.loads(json.dumps(ex.Config().__dict__))
    assert {(r["task"], r["positional"], r["seed"]) for r in results["runs"]} == {
        (t, v, s) for t in ex.TASKS for v in ex.VARIANTS for s in results["seeds"]
    }
    assert sweeps.rounded(ex.summarize(results["runs"])) == results["summary"]  # the summary is of these runs


def test_the_majority_baseline_is_about_chance_for_shift_and_higher_for_local_max():
    assert abs(ex.majority_baseline("shift") - 1 / 16) < 0.03
    assert abs(ex.majority_baseline("local_max") - (1 - (15 / 16) ** 3)) < 0.03
