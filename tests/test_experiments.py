"""pe_lib.experiments: training leaves the caller's torch settings as they were, whatever they were."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from pe_lib import experiments, sweeps


@pytest.mark.parametrize("context", [torch.no_grad, torch.inference_mode])
def test_train_works_inside_no_grad_and_inference_mode(context):
    with context():
        trained = experiments.train("sinusoidal", TINY)
    reference = experiments.train("sinusoidal", TINY)
    assert trained.losses.tolist() == reference.losses.tolist()  # the same training, gradients and all
    assert torch.is_grad_enabled()


@pytest.mark.parametrize("deterministic, warn_only", [(False, False), (True, True), (True, False)])
def test_train_restores_the_deterministic_mode_and_its_warn_only_flag(deterministic, warn_only, caller_threads):
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    threads = torch.get_num_threads()
    try:
        torch.use_deterministic_algorithms(deterministic, warn_only=warn_only)
        experiments.train("learned", TINY)
        assert torch.are_deterministic_algorithms_enabled() == deterministic
        assert torch.is_deterministic_algorithms_warn_only_enabled() == warn_only
        assert torch.get_num_threads() == threads
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_train_leaves_the_callers_random_numbers_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    experiments.train("none", TINY)
    assert torch.equal(torch.rand(3), expected)


def test_shift_targets_point_back_by_the_shift_and_ignore_the_first_positions():
    tokens = torch.arange(10).reshape(2, 5)
    targets = experiments.task_targets(tokens, shift=4)
    assert targets[:, :4].eq(experiments.IGNORE).all()
    assert targets[:, 4].tolist() == [0, 5]


ROOT = Path(__file__).resolve().parent.parent


TINY = experiments.Config(
    shift=2,
    vocab_size=6,
    train_len=5,
    test_len=8,
    d_model=8,
    num_heads=2,
    num_layers=1,
    dim_feedforward=16,
    steps=6,
    batch_size=4,
    eval_size=6,
    offset_range=3,
    unseen_start=8,
    max_position=13,
)


def test_shift_targets_copy_the_token_k_places_earlier():
    tokens = torch.tensor([[5, 1, 4, 2, 3], [0, 0, 1, 1, 2]])
    targets = experiments.task_targets(tokens, "shift", shift=2)
    ignore = experiments.IGNORE
    assert targets.tolist() == [[ignore, ignore, 5, 1, 4], [ignore, ignore, 0, 0, 1]]
    assert tokens.tolist() == [[5, 1, 4, 2, 3], [0, 0, 1, 1, 2]]  # unchanged


def test_reverse_targets_read_the_sequence_backwards():
    tokens = torch.tensor([[1, 2, 3, 4]])
    assert experiments.task_targets(tokens, "reverse").tolist() == [[4, 3, 2, 1]]


@pytest.mark.parametrize(
    ("tokens", "task", "error"),
    [
        (torch.zeros(3, dtype=torch.long), "shift", ValueError),
        ([[1, 2]], "shift", ValueError),
        (torch.zeros(2, 3, dtype=torch.long), "rotate", ValueError),
    ],
)
def test_task_targets_reject_bad_input(tokens, task, error):
    with pytest.raises(error):
        experiments.task_targets(tokens, task)


def test_make_batch_is_reproducible_and_in_range():
    first = experiments.make_batch(TINY, 3, 7, torch.Generator().manual_seed(1))
    second = experiments.make_batch(TINY, 3, 7, torch.Generator().manual_seed(1))
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    tokens, targets = first
    assert tokens.shape == targets.shape == (3, 7) and tokens.dtype == torch.int64
    assert int(tokens.min()) >= 0 and int(tokens.max()) < TINY.vocab_size
    assert torch.equal(targets, experiments.task_targets(tokens, "shift", shift=TINY.shift))


def test_order_blind_guess_is_the_most_common_other_token():
    tokens = torch.tensor([[3, 3, 1, 3, 1, 2]])
    guess = experiments.order_blind_guess(tokens)
    assert guess.shape == tokens.shape
    # at a 3 the others hold two 3s and two 1s (tie -> smaller id 1); elsewhere 3 is the most common
    assert guess.tolist() == [[1, 1, 3, 1, 3, 3]]
    # it cannot see order: permuting the sequence permutes the guesses
    order = torch.tensor([5, 2, 0, 4, 1, 3])
    assert torch.equal(experiments.order_blind_guess(tokens[:, order]), guess[:, order])


@pytest.mark.parametrize(
    "changes",
    [
        {"test_len": 5},
        {"shift": 16},
        {"d_model": 10, "num_heads": 4},
        {"task": "sort"},
        {"d_model": 12, "num_heads": 4},  # head size 3: rotary positions need pairs
        {"unseen_start": 20},  # overlaps the random-offset training windows (positions < 32)
        {"max_position": 60},  # the unseen window 48..63 would not fit
        {"offset_range": -1},
        {"steps": 0},
        {"lr": 0.0},
        {"batch_size": True},
    ],
)
def test_config_rejects_bad_settings(changes):
    fields = {**experiments.Config().__dict__, **changes}
    with pytest.raises((ValueError, TypeError)):
        experiments.Config(**fields)


@pytest.mark.parametrize("positional", experiments.VARIANTS)
def test_tiny_encoder_maps_tokens_to_logits(positional):
    torch.manual_seed(0)
    model = experiments.build_model(positional, TINY)
    tokens = torch.randint(0, TINY.vocab_size, (3, TINY.test_len))
    assert model(tokens).shape == (3, TINY.test_len, TINY.vocab_size)
    window = tokens[:, : TINY.train_len]
    assert model(window, TINY.unseen_start).shape == (3, TINY.train_len, TINY.vocab_size)
    table = experiments.position_table(model)
    if positional in ("none", "rope"):
        assert table is None
    else:
        assert table.shape == (TINY.max_position, TINY.d_model)


def test_rope_model_is_shift_invariant_and_table_models_are_not():
    """The positive control: with rotary positions only offsets reach attention, so moving the window is invisible."""
    tokens = torch.randint(0, TINY.vocab_size, (2, TINY.train_len), generator=torch.Generator().manual_seed(0))
    for positional in experiments.VARIANTS:
        torch.manual_seed(0)
        model = experiments.build_model(positional, TINY).eval()
        with torch.no_grad():
            same = torch.allclose(model(tokens, 0), model(tokens, TINY.unseen_start), atol=1e-5)
        assert same == (positional in ("none", "rope")), positional


def test_models_refuse_positions_past_their_table():
    for positional in experiments.VARIANTS:
        model = experiments.build_model(positional, TINY)
        with pytest.raises(ValueError, match="max_len=13"):
            model(torch.zeros(1, TINY.train_len, dtype=torch.long), TINY.max_position - TINY.train_len + 1)


@pytest.mark.parametrize("regime", experiments.REGIMES)
def test_regimes_decide_which_rows_of_a_learned_table_are_trained(regime):
    trained = experiments.train("learned", TINY, regime=regime, seed=0)
    torch.manual_seed(0)
    start = experiments.position_table(experiments.build_model("learned", TINY))
    moved = np.flatnonzero(np.any(experiments.position_table(trained.model) != start, axis=1))
    reach = TINY.train_len if regime == "from_zero" else TINY.train_len + TINY.offset_range
    assert moved.max() < reach  # no training batch went past its positions
    assert moved.max() >= TINY.train_len - 1 and trained.regime == regime


def test_without_positions_the_encoder_is_permutation_equivariant():
    torch.manual_seed(0)
    model = experiments.build_model("none", TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 7))
    order = torch.randperm(7)
    with torch.no_grad():
        assert torch.allclose(model(tokens[:, order]), model(tokens)[:, order], atol=1e-5)


def test_training_is_deterministic_and_leaves_the_caller_state_alone(caller_threads):
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    calls = []
    first = experiments.train("learned", TINY, seed=3, progress=lambda *args: calls.append(args))
    assert torch.equal(torch.rand(3), expected_next)  # the caller's RNG stream is untouched
    assert torch.get_num_threads() == threads and torch.are_deterministic_algorithms_enabled() == deterministic
    second = experiments.train("learned", TINY, seed=3)
    assert np.array_equal(first.losses, second.losses) and first.losses.shape == (TINY.steps,)
    for (name, a), (_, b) in zip(first.model.state_dict().items(), second.model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert [c[0] for c in calls] == [TINY.steps]  # every 10 steps and at the end; here only the end
    assert calls[-1][1] == TINY.steps and np.isclose(calls[-1][2], first.losses[-1])
    other = experiments.train("learned", TINY, seed=4)
    assert not np.array_equal(first.losses, other.losses)
    assert not first.model.training and first.seconds > 0


def test_train_rejects_an_unknown_variant():
    with pytest.raises(ValueError, match="positional"):
        experiments.train("rotary", TINY)
    with pytest.raises(ValueError, match="regime"):
        experiments.train("rope", TINY, regime="shuffled")


def test_evaluate_reports_accuracies_on_fixed_test_sets():
    trained = experiments.train("sinusoidal", TINY, seed=0)
    result = experiments.evaluate(trained)
    assert result == experiments.evaluate(trained)
    for metric in experiments.METRICS:
        assert 0.0 <= result[metric] <= 1.0
    per_position = result["per_position"]
    assert len(per_position) == TINY.test_len
    assert per_position[: TINY.shift] == [None] * TINY.shift  # no target there
    assert all(0.0 <= a <= 1.0 for a in per_position[TINY.shift :])
    first = np.mean(per_position[TINY.shift : TINY.train_len])
    assert np.isclose(first, result["longer_first"])  # same number of sequences per position
    assert np.isclose(np.mean(per_position[TINY.train_len :]), result["longer_rest"])


def test_baselines_are_chance_and_the_order_blind_guess():
    levels = experiments.baselines(TINY)
    assert levels["chance"] == pytest.approx(1 / TINY.vocab_size)
    for value in levels["order_blind"].values():
        assert levels["chance"] < value < 1.0


def test_sweep_summarises_every_variant_and_seed_and_is_reproducible():
    seen = []
    results = experiments.run_sweep(
        TINY, seeds=(0, 1), regimes=("random_offset",), progress=lambda done, total, run: seen.append((done, total))
    )
    total = 2 * len(experiments.VARIANTS)
    assert seen == [(i, total) for i in range(1, total + 1)]
    assert [(r["positional"], r["seed"]) for r in results["runs"]] == [
        (v, s) for v in experiments.VARIANTS for s in (0, 1)
    ]
    assert set(results["summary"]) == {"random_offset"}
    assert set(results["summary"]["random_offset"]) == set(experiments.VARIANTS)
    for variant, metrics in results["summary"]["random_offset"].items():
        values = [r["in_distribution"] for r in results["runs"] if r["positional"] == variant]
        stats = metrics["in_distribution"]
        assert stats["mean"] == pytest.approx(np.mean(values), abs=1e-6)
        assert stats["std"] == pytest.approx(np.std(values, ddof=1), abs=1e-6)
        assert stats["min"] <= stats["mean"] <= stats["max"]
        assert len(metrics["per_position_mean"]) == TINY.test_len
    assert results["config"]["steps"] == TINY.steps and results["seeds"] == [0, 1]
    text = sweeps.results_json(results)
    assert json.loads(text) == results
    again = experiments.run_sweep(TINY, seeds=(0, 1), regimes=("random_offset",), jobs=2)  # in two processes
    assert sweeps.results_json(again) == text


def test_summary_of_one_seed_has_zero_spread():
    run = {
        "positional": "none",
        "regime": "from_zero",
        "per_position": [None, 0.5],
        **dict.fromkeys(experiments.METRICS, 0.25),
    }
    summary = experiments.summarize([run])["from_zero"]
    assert summary["none"]["unseen_window"] == {"mean": 0.25, "std": 0.0, "min": 0.25, "max": 0.25}
    assert summary["none"]["per_position_mean"] == [None, 0.5]


def test_main_writes_the_results_file_and_checks_it(tmp_path, monkeypatch, capsys):
    real = experiments.run_sweep
    monkeypatch.setattr(experiments, "run_sweep", lambda **kw: real(TINY, variants=("none", "rope"), **kw))
    out = tmp_path / "results.json"
    assert experiments.main(["--seeds", "0", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["seeds"] == [0]
    assert experiments.main(["--seeds", "0", "--out", str(out), "--check"]) == 0
    out.write_text("{}\n")
    assert experiments.main(["--seeds", "0", "--out", str(out), "--check"]) == 1
    printed = capsys.readouterr().out
    assert "identical to" in printed and "DIFFERS from" in printed and "in_distribution" in printed


def test_the_sweep_has_one_entry_point_python_dash_m():
    run = subprocess.run([sys.executable, "-m", "pe_lib.experiments", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "--check" in run.stdout
    assert not (ROOT / "scripts" / "run_experiment.py").exists()


def test_committed_results_cover_every_variant_regime_and_five_seeds():
    results = experiments.load_results()
    assert results == json.loads((ROOT / "pe_lib" / "data" / "learned_vs_fixed.json").read_text())
    assert len(results["seeds"]) >= 5
    assert results["config"] == experiments.Config().__dict__
    assert {(r["positional"], r["regime"], r["seed"]) for r in results["runs"]} == {
        (v, g, s) for v in experiments.VARIANTS for g in experiments.REGIMES for s in results["seeds"]
    }
    summary, chance = results["summary"], results["baselines"]["chance"]
    from_zero, shifted = summary["from_zero"], summary["random_offset"]
    for variant in ("sinusoidal", "rope"):
        assert from_zero[variant]["in_distribution"]["min"] > 0.98  # every position scheme solves it from 0 ...
    assert from_zero["learned"]["in_distribution"]["min"] > 0.9  # ... the learned table nearly, in 1,000 steps
    for variant in ("learned", "sinusoidal"):
        assert from_zero[variant]["longer_rest"]["mean"] < chance + 0.05  # absolute codes: no rule past 16
    assert shifted["rope"]["unseen_window"]["min"] > 0.98  # the positive control carries the rule anywhere
    blind = results["baselines"]["order_blind"]["in_distribution"]
    assert from_zero["none"]["in_distribution"]["max"] < blind + 0.03
