"""pe_lib.figures: the course's style and the figures several chapters draw."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

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
