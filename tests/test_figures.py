"""pe_lib.figures: the course's style and the figures several chapters draw."""

import matplotlib
import matplotlib.font_manager
import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from pe_lib import figures

WORDS_A = "the dog bit the man".split()


def test_order_shift_bars_group_one_bar_per_word_and_model():
    shifts = {"attention": np.zeros(5), "GRU": np.arange(5.0), "attention + PE": np.ones(5)}
    fig = figures.order_shift_bars(WORDS_A, shifts, title="moves")
    ax = fig.axes[0]
    assert ax.get_title() == "moves" and ax.get_xlabel() == "word" and ax.get_ylabel()
    assert len(ax.patches) == 5 * 3
    assert [t.get_text() for t in ax.get_xticklabels()] == WORDS_A
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1] == "GRU (largest 4)"  # the legend reports each model's largest shift


def test_order_shift_bars_report_rounding_as_a_bound_and_take_tensors():
    noise = torch.full((5,), 3.3e-16, dtype=torch.float64, requires_grad=True)  # what another CPU may give
    fig = figures.order_shift_bars(WORDS_A, {"attention": noise}, title="moves")
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["attention (largest < 1e-06)"]


@pytest.mark.parametrize("shifts", [{}, {"GRU": np.ones(4)}])
def test_order_shift_bars_reject_bad_input(shifts):
    with pytest.raises(ValueError, match="shifts"):
        figures.order_shift_bars(WORDS_A, shifts, title="x")


def _labelled(ax):
    return bool(ax.get_title() and ax.get_xlabel() and ax.get_ylabel())


def test_shift_bars_with_values_on_bars():
    shifts = {"with positions": [1.5, 0.2], "without positions": [0.0, 0.0]}
    fig = figures.order_shift_bars(["lion", "kills"], shifts, title="shift", values_on_bars=True)
    ax = fig.axes[0]
    assert _labelled(ax)
    assert [round(bar.get_height(), 6) for bar in ax.patches] == [1.5, 0.2, 0.0, 0.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["lion", "kills"]
    assert "0.000" in [text.get_text() for text in ax.texts]  # values written on the bars


def test_similarity_by_offset_draws_one_line_per_curve():
    offsets = np.arange(-5, 6)
    fig = figures.offset_curves(offsets, {"a": offsets**2, "b": -offsets}, title="t")
    ax = fig.axes[0]
    labelled = [line for line in ax.lines if not line.get_label().startswith("_")]
    assert [line.get_label() for line in labelled] == ["a", "b"]
    assert np.allclose(labelled[0].get_ydata(), offsets**2)
    assert ax.get_title() == "t" and ax.get_xlabel().startswith("offset") and ax.get_ylabel()
    assert ax.get_legend() is not None
    assert ax.get_xscale() == "linear"


def test_similarity_by_offset_log_axis_and_given_axes():
    fig, ax = plt.subplots()
    returned = figures.offset_curves([1, 10, 100], {"f": [3, 2, 1]}, title="t", ylabel="y", ax=ax, logx=True)
    assert returned is fig
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "y"
    assert ax.get_legend() is None  # one curve: no legend needed


# --- layout: texts that overlap or leave the figure (also used by test_explorer and the chapters' tests) ----

OVERLAP = 2  # pixels two texts may share (antialiasing, a glyph's side bearings) without overlapping


def drawn_texts(figure):
    """Every text artist a full draw of the figure draws (visible, not blank), with the renderer's extents."""
    drawn = {}
    draw = matplotlib.text.Text.draw

    def recording(text, renderer):
        draw(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn[id(text)] = text

    matplotlib.text.Text.draw = recording  # also reached through Annotation, legends and tick labels
    try:
        figure.draw_without_rendering()
    finally:
        matplotlib.text.Text.draw = draw
    return list(drawn.values())


def text_outline(text, renderer):
    """The four corners of a text's box as drawn, turned by its rotation (a box around 45° labels would overlap)."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    if angle % 90 == 0:
        return np.array([[box.x0, box.y0], [box.x1, box.y0], [box.x1, box.y1], [box.x0, box.y1]])
    text.set_rotation(0)
    try:
        flat = text.get_window_extent(renderer)
    finally:
        text.set_rotation(angle)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [flat.width / 2, flat.height / 2]
    turn = np.deg2rad(angle)
    rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    return half @ rotation.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]  # the same centre as the box


def overlap(a, b):
    """How deep two convex outlines overlap, in pixels (<= 0: apart): the least overlap along any edge's normal."""
    depth = np.inf
    for outline in (a, b):
        for edge in np.roll(outline, -1, axis=0) - outline:
            normal = np.array([-edge[1], edge[0]]) / np.hypot(*edge)
            ours, theirs = a @ normal, b @ normal
            depth = min(depth, min(ours.max(), theirs.max()) - max(ours.min(), theirs.min()))
    return depth


def text_problems(figure, slack=OVERLAP, *, inside=True):
    """Texts that overlap another or leave the figure by more than `slack` pixels, or are under the style's 'small'.

    Every text a draw of the figure draws (titles, axis and tick labels, colour-bar labels, legends,
    annotations), measured with the renderer's extents; rotated texts as turned boxes. inside=False
    lets texts leave the figure (a notebook's inline figures are cropped to what is drawn).
    """
    if not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    texts = drawn_texts(figure)
    renderer = figure.canvas.get_renderer()
    outlines = [text_outline(text, renderer) for text in texts]
    small = matplotlib.font_manager.FontProperties(size="small").get_size_in_points()
    problems = []
    for text, outline in zip(texts, outlines, strict=True):
        low, high = outline.min(axis=0), outline.max(axis=0)
        outside = (low < -slack).any() or high[0] > figure.bbox.width + slack or high[1] > figure.bbox.height + slack
        if inside and outside:
            problems.append(f"{text.get_text()!r} leaves the figure")
        if text.get_fontsize() < small - 1e-9:
            problems.append(f"{text.get_text()!r} at {text.get_fontsize():.1f} pt, under the style's small {small:.1f}")
    if not texts:
        return problems
    low, high = np.array([o.min(axis=0) for o in outlines]), np.array([o.max(axis=0) for o in outlines])
    shared = np.minimum(high[:, None], high[None]) - np.maximum(low[:, None], low[None])  # boxes around the outlines
    for i, j in zip(*np.nonzero(np.triu((shared > slack).all(axis=2), k=1)), strict=True):
        if overlap(outlines[i], outlines[j]) > slack:  # the boxes overlap: do the (turned) outlines?
            problems.append(f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}")
    return problems
