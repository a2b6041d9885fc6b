"""Notebook 06 (the embedding pipeline): plots and explorers (its graders: test_ch06_pipeline_exercises.py)."""

import math

import ipywidgets
import matplotlib
import numpy as np
import pytest
import torch
from test_figures import text_problems

from pe_lib import analysis, figures, findings
from pe_lib import ch06_pipeline as ch06
from pe_lib.explorer import Explorer


def _labelled(ax):
    return ax.get_title() and ax.get_xlabel() and ax.get_ylabel()


# --- plots -------------------------------------------------------------------------------


def test_heatmap_row_shares_one_symmetric_colour_scale():
    panels = {"a": np.array([[1.0, -2.0], [0.5, 0.0]]), "b": np.array([[3.0, 0.0], [0.0, 0.0]])}
    fig = ch06.heatmap_row(panels, title="stages", row_labels=["x", "y"])
    image_axes = [ax for ax in fig.axes if ax.images]
    assert len(image_axes) == 2 and len(fig.axes) == 3  # two panels and one colour bar
    for ax in image_axes:
        assert ax.images[0].get_clim() == (-3.0, 3.0)
    assert [ax.get_title() for ax in image_axes] == ["a", "b"]
    assert [t.get_text() for t in image_axes[0].get_yticklabels()] == ["x", "y"]
    assert fig._suptitle.get_text() == "stages"


def test_heatmap_row_needs_a_panel():
    with pytest.raises(ValueError, match="panels"):
        ch06.heatmap_row({}, title="nothing")


def test_norms_versus_d_model_draws_one_labelled_line_per_kind():
    fig = ch06.norms_versus_d_model([16, 64], {"token": [1.0, 1.0], "PE": [2.83, 5.66]})
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and _labelled(ax)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert [line.get_label() for line in ax.lines] == ["token", "PE"]


def test_near_orthogonality_has_histograms_and_angles():
    cosines = {16: np.random.default_rng(0).normal(0, 0.25, 100), 64: np.zeros(10)}
    angles = {16: np.array([30.0, 10.0]), 64: np.array([80.0])}
    fig = ch06.near_orthogonality(cosines, angles)
    left, right = fig.axes
    assert _labelled(left) and _labelled(right)
    assert len(left.patches) == 2  # one step histogram per d_model
    assert list(right.lines[0].get_ydata()) == [10.0, 30.0]  # sorted, smallest first


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
def test_near_orthogonality_titles_fit_side_by_side(lecture):
    rng = np.random.default_rng(0)
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        cosines = {d: rng.normal(0, d**-0.5, 200) for d in (16, 64, 512)}
        angles = {d: rng.uniform(60, 90, 8) for d in (16, 64, 512)}
        assert text_problems(ch06.near_orthogonality(cosines, angles), inside=False) == []


def test_readback_accuracy_plots_both_curves():
    fig = ch06.readback_accuracy([8, 64], [0.2, 1.0], [0.3, 1.0])
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and _labelled(ax)
    assert list(ax.lines[0].get_ydata()) == [0.2, 1.0]


def test_segment_embeddings_shows_rows_and_norms():
    segment = np.array([[3.0, 4.0], [3.0, 5.0]])
    position = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 4.0]])
    fig = ch06.segment_embeddings(segment, position)
    left, right = fig.axes
    assert _labelled(left) and right.get_title() and right.get_ylabel()
    assert len(left.lines) == 3
    heights = [bar.get_height() for bar in right.patches]
    assert heights == pytest.approx([5.0, math.sqrt(34), 1.0, 7 / 3, 1.5])


# --- widgets -------------------------------------------------------------------------------


def test_norm_share_explorer_updates_its_figure():
    explorer = ch06.NormShareExplorer(d_models=(16, 64, 512), d_model=512)
    assert isinstance(explorer, Explorer)
    assert isinstance(explorer.controls["d_model"], ipywidgets.SelectionSlider)
    before = explorer.update(d_model=512)
    after = explorer.update(d_model=16)
    assert before != after and bytes(after).startswith(b"\x89PNG")
    token, position = explorer.norms(16, analysis.TOKEN_INITS[0], True)
    assert [bar.get_height() for bar in explorer.bars] == pytest.approx([token, position])
    assert position == pytest.approx(math.sqrt(8))
    assert "d_model=16" in explorer.title.get_text()
    assert explorer.update(scale=False) != after


def test_norm_share_explorer_shares():
    explorer = ch06.NormShareExplorer(d_models=(64, 512))
    pe_lib_init, default_init, xavier_init = analysis.TOKEN_INITS
    assert explorer.share(512, pe_lib_init, True) == pytest.approx(1 / 3, abs=0.03)
    assert explorer.share(512, pe_lib_init, False) > 0.99
    assert explorer.share(512, default_init, True) < 0.01
    assert explorer.share(512, default_init, False) == pytest.approx(1 / 3, abs=0.03)
    assert explorer.share(64, xavier_init, True) > 0.9
    explorer.update(init=default_init)
    assert list(explorer.curve.get_ydata()) == pytest.approx([explorer.share(d, default_init, True) for d in (64, 512)])


def _sentence(seq=6, d_model=16):
    return np.random.default_rng(1).normal(size=(seq, d_model)).astype(np.float32)


def test_dropout_explorer_output_is_real_dropout():
    x = _sentence()
    explorer = ch06.DropoutExplorer(x)
    y = explorer.output(0.5)
    kept = y != 0
    assert torch.allclose(y[kept], 2 * torch.from_numpy(x)[kept])
    assert 0.3 < (~kept).float().mean().item() < 0.7
    assert torch.equal(explorer.output(0.0), torch.from_numpy(x))
    assert torch.equal(explorer.output(0.3), explorer.output(0.3))  # fixed seed: the same mask every time


def test_dropout_explorer_leaves_torch_random_state_alone():
    explorer = ch06.DropoutExplorer(_sentence())
    state = torch.get_rng_state()
    explorer.output(0.4)
    explorer.update(p=0.6)
    assert torch.equal(state, torch.get_rng_state())


def test_dropout_explorer_updates_its_figure():
    explorer = ch06.DropoutExplorer(_sentence(), p=0.1)
    assert isinstance(explorer.controls["p"], ipywidgets.FloatSlider)
    before = explorer.update(p=0.1)
    after = explorer.update(p=0.7)
    assert before != after
    assert "p = 0.70" in explorer.title.get_text()
    assert np.array_equal(explorer.heat.get_array(), explorer.output(0.7).numpy())


def test_dropout_explorer_rejects_a_batch():
    with pytest.raises(ValueError, match=r"\(seq, d_model\)"):
        ch06.DropoutExplorer(np.zeros((2, 3, 4)))


def test_dropout_explorer_counts_dropped_entries_not_zeros_of_the_input():
    x = _sentence()
    x[-2:] = 0.0  # two padding rows: zero before dropout
    explorer = ch06.DropoutExplorer(x, p=0.0)
    explorer.update(p=0.0)
    assert explorer.dropped_share == 0.0 and "0% of entries dropped" in explorer.title.get_text()
    explorer.update(p=0.5)
    kept = explorer.kept(0.5)
    y = explorer.output(0.5)
    assert torch.equal(y, torch.from_numpy(x) * kept * 2)  # the mask output() used
    assert explorer.dropped_share == (~kept).sum().item() / kept.numel()
    assert explorer.dropped_share < (y == 0).float().mean().item()  # zeros of y also count the padding


@pytest.mark.parametrize("scale", [True, False])
@pytest.mark.parametrize("init", analysis.TOKEN_INITS)
@pytest.mark.parametrize("d_model", [16, 512])
def test_norm_share_explorer_finding_quotes_the_frames_bars_and_curve(d_model, init, scale):
    """The caption's norms are the bars drawn; its shares are the curve drawn, read back and recomputed."""
    explorer = ch06.NormShareExplorer(d_models=(16, 64, 512), d_model=d_model)
    explorer.update(init=init, scale=scale)
    finding = explorer.finding()
    assert not findings.finding_problems(finding), finding
    token, position = (bar.get_height() for bar in explorer.bars)
    assert position == pytest.approx(math.sqrt(d_model / 2))  # a PE row: d_model / 2 pairs, sin^2 + cos^2 = 1
    shares = explorer.curve.get_ydata()
    assert shares[[16, 64, 512].index(d_model)] == pytest.approx(position**2 / (token**2 + position**2))
    quotes = {"token part": token, "position part": position}
    for name, share in (("chosen", shares[[16, 64, 512].index(d_model)]), ("first", shares[0]), ("last", shares[-1])):
        if 0.005 <= share < 0.995:  # else said as "under 1%" or "over 99%"
            quotes[f"{name} share"] = share
        else:
            assert ("under 1%" if share < 0.005 else "over 99%") in finding
    assert not findings.check_quotes(finding, quotes), finding
    assert ("times √d_model" if scale else "not scaled") in finding
    explorer.close()


@pytest.mark.parametrize("p", [0.0, 0.1, 0.5, 0.9])
def test_dropout_explorer_finding_quotes_the_frames_entries(p):
    """The caption's counts and scale, read back from the drawn points (input, output) and the drawn image."""
    x = _sentence()
    explorer = ch06.DropoutExplorer(x, p=p)
    points = explorer.points.get_offsets()  # (input, output) of every entry, as drawn
    assert np.allclose(points[:, 1], explorer.heat.get_array().ravel())  # the same outputs as the image
    dropped = int(np.sum(points[:, 1] == 0))  # x has no zeros here: a zero output is a dropped entry
    finding = explorer.finding()
    if p == 0:
        assert finding == f"Dropout p = 0.00 in train mode drops none of the {x.size} entries: the output is the input"
    else:
        kept = points[:, 1] != 0
        quotes = {
            "dropped": dropped,
            "entries": x.size,
            "kept": x.size - dropped,
            "scale, drawn": np.median(points[kept, 1] / points[kept, 0]),
            "1 / (1 - p)": 1 / (1 - p),
        }
        assert not findings.check_quotes(finding, quotes), finding
        percent = f"{100 * dropped / x.size:.0f}%"
        assert f"({percent})" in finding and percent in explorer.title.get_text()  # caption and title agree
    explorer.close()
