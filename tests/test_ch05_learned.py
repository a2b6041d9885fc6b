"""Notebook 05 (learned versus fixed): the experiment code, the shipped MiniLM data, figures, explorer, checkers."""

import ipywidgets
import matplotlib
import numpy as np
import pytest
from test_experiments import TINY  # the smallest config that trains
from test_figures import text_problems

import pe_lib
from pe_lib import analysis, data, experiments, figures, findings
from pe_lib import ch05_learned as ch05
from pe_lib.explorer import Explorer

# --- the task ------------------------------------------------------------------------------


# --- the model and the trainer --------------------------------------------------------------


# --- the committed sweep results ------------------------------------------------------------


# --- looking at position tables -------------------------------------------------------------


# --- the shipped MiniLM tables --------------------------------------------------------------


# --- figures ---------------------------------------------------------------------------------


def _tiny_results():
    return experiments.run_sweep(TINY, seeds=(0, 1))


def test_accuracy_comparison_draws_bars_with_error_bars_and_baselines():
    results = _tiny_results()
    fig = ch05.accuracy_comparison(results, regime="random_offset", title="sweep")
    ax = fig.axes[0]
    bars = list(ax.patches)
    assert len(bars) == len(experiments.VARIANTS) * len(experiments.METRICS)
    heights = sorted(round(p.get_height(), 6) for p in bars)
    summary = results["summary"]["random_offset"]
    means = sorted(round(summary[v][m]["mean"], 6) for v in experiments.VARIANTS for m in experiments.METRICS)
    assert heights == means
    with pytest.raises(ValueError, match="regime must be one of 'from_zero', 'random_offset'"):
        ch05.accuracy_comparison(results, regime="shuffled", title="sweep")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("chance" in label for label in labels) and any("order-blind" in label for label in labels)
    assert ax.get_title() == "sweep" and "2 seeds" in ax.get_ylabel()


def test_accuracy_by_position_marks_the_untrained_positions():
    per_position = {"learned": [None, 0.2, 1.0, 0.1], "sinusoidal": [None, 0.3, 0.9, 0.0]}
    fig = ch05.accuracy_by_position(per_position, train_len=3, chance=0.1, title="t")
    ax = fig.axes[0]
    assert len([line for line in ax.lines if line.get_label() in per_position]) == 2
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title() == "t"


def test_position_projection_and_loss_curves_and_trained_table():
    coordinates, explained = analysis.pca_2d(pe_lib.sinusoidal_encoding(30, 8))
    fig = ch05.position_projection(coordinates, explained=explained, title="p")
    assert "% of variance" in fig.axes[0].get_xlabel() and len(fig.axes) == 2  # + colour bar
    fig = ch05.loss_curves({"learned": np.linspace(2, 0.1, 20)}, chance_loss=np.log(16), title="loss")
    assert fig.axes[0].get_yscale() == "log"
    table = np.random.default_rng(0).normal(size=(12, 6))
    fig = ch05.learned_table_after_training(table, train_len=8, title="table")
    bars = list(fig.axes[1].patches)
    assert len(bars) == 12 and np.allclose([b.get_width() for b in bars], np.linalg.norm(table, axis=1))


def test_position_projection_numbers_positions_from_first_position():
    coordinates = np.arange(10.0).reshape(5, 2)
    fig = ch05.position_projection(coordinates, first_position=1, join=True, title="t")
    ax = fig.axes[0]
    assert list(ax.collections[0].get_array()) == [1, 2, 3, 4, 5]
    assert len(ax.lines) == 1  # the joining line
    assert not ch05.position_projection(coordinates, title="t").axes[0].lines


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
def test_figures_of_the_experiment_read_well(lecture):
    """Legends and notes at the style's small size at least (no 8-point text); no text over another."""
    results = experiments.load_results()
    regime = experiments.REGIMES[0]
    per_position = {v: results["summary"][regime][v]["per_position_mean"] for v in experiments.VARIANTS}
    losses = {v: np.geomspace(3.0, 0.05, 300) for v in experiments.VARIANTS}
    rng = np.random.default_rng(0)
    learned, sinusoid = rng.normal(0, 0.05, size=(64, 384)), pe_lib.sinusoidal_encoding(64, 384)
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        made = {
            "accuracy": ch05.accuracy_comparison(results, regime=regime, title=ch05.REGIME_LABELS[regime]),
            "by position": ch05.accuracy_by_position(per_position, train_len=16, chance=0.06, title="t"),
            "loss": ch05.loss_curves(losses, chance_loss=np.log(16), title="Live run: training loss"),
            "trained table": ch05.learned_table_after_training(rng.normal(size=(32, 64)), train_len=8, title="t"),
            "tables": ch05.tables_side_by_side({"MiniLM: learned": learned, "sinusoidal": sinusoid}, title="t"),
        }
        problems = {name: text_problems(fig, inside=False) for name, fig in made.items()}
    assert problems == {name: [] for name in made}


def test_tables_side_by_side_clips_outliers_or_uses_a_fixed_range():
    table = np.zeros((10, 4))
    table[0, 0] = 100.0  # one outlier
    table[1:, :] = np.linspace(-1, 1, 36).reshape(9, 4)
    fig = ch05.tables_side_by_side({"a": table, "b": -table}, first_row=5, title="t")
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2
    low, high = images[0].get_clim()
    assert low == -high and high < 100.0  # 99th percentile, not the outlier
    assert images[0].get_extent()[2:] == [14.5, 4.5]  # rows labelled 5..14
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["a", "b"] and fig.get_suptitle() == "t"
    fixed = ch05.tables_side_by_side({"c": table}, limit=1.0, colorbar_label="cosine", title="t")
    assert fixed.axes[0].images[0].get_clim() == (-1.0, 1.0)
    assert fixed.axes[1].get_ylabel() == "cosine"


# --- explorer and progress bar --------------------------------------------------------------


def test_position_similarity_explorer_moves_and_measures_neighbours():
    tables = {"learned": data.load_minilm_embeddings()["position"], "sinusoidal": pe_lib.sinusoidal_encoding(512, 384)}
    explorer = ch05.PositionSimilarityExplorer(tables, position=100, window=32)
    assert isinstance(explorer, Explorer)
    before = explorer.update()
    similarity = analysis.cosine_similarity(tables["learned"])
    assert explorer.neighbour_similarity["learned"] == pytest.approx((similarity[100, 99] + similarity[100, 101]) / 2)
    after = explorer.update(position=300)
    assert after != before and explorer.values()["position"] == 300
    assert explorer.update(window=8) != after
    explorer.update(position=0)
    assert explorer.neighbour_similarity["sinusoidal"] == pytest.approx(
        analysis.cosine_similarity(tables["sinusoidal"][:2])[0, 1]
    )
    assert any(isinstance(c, ipywidgets.IntSlider) for c in explorer.controls.values())
    explorer.update(position=100, window=32)
    row = similarity[100, 68:133]  # the learned line as drawn, offsets -32 .. 32
    quotes = {"neighbours": (similarity[100, 99] + similarity[100, 101]) / 2, "least": row.min()}
    assert not findings.check_quotes(explorer.finding(), quotes | {"at offset": int(row.argmin()) - 32})
    assert "positions 68 to 132" in explorer.finding() and not findings.finding_problems(explorer.finding())


def test_position_similarity_explorer_needs_a_table():
    with pytest.raises(ValueError, match="at least one"):
        ch05.PositionSimilarityExplorer({})


def test_training_progress_bar_follows_the_runs():
    bar = ch05.TrainingProgress(20)
    first = bar.track("learned")
    first(10, 10, 0.5)
    second = bar.track("sinusoidal")
    second(5, 10, 0.25)
    assert bar.bar.value == 15 and "sinusoidal" in bar.label.value and "0.250" in bar.label.value
    second(10, 10, 0.1)
    assert bar.bar.value == bar.bar.max == 20
    bundle = bar._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "<training progress bar, 20 steps in all; live when the notebook runs>"
