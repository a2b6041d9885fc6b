"""Notebook 01 (the order problem): its plots and its explorer (the graders: test_ch01_order_exercises.py)."""

import time

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

import pe_lib
from pe_lib import ch01_order as ch01
from pe_lib import colours, figures, findings
from pe_lib.explorer import Explorer

D_MODEL = 8
WORDS_A = "the dog bit the man".split()
ORDER = [0, 4, 2, 3, 1]  # "the man bit the dog"
WORDS_B = [WORDS_A[i] for i in ORDER]


@pytest.fixture
def toy():
    """A tiny vocabulary, its embeddings and attention weights, as in the notebook."""
    rng = np.random.default_rng(0)
    vocab = ["the", "dog", "bit", "man", "lion", "kills", "tiger"]
    embeddings = dict(zip(vocab, rng.normal(size=(len(vocab), D_MODEL)), strict=True))
    w_q, w_k, w_v = (rng.normal(scale=0.5, size=(D_MODEL, D_MODEL)) for _ in range(3))
    return embeddings, w_q, w_k, w_v


def _attention(toy, words):
    embeddings, w_q, w_k, w_v = toy
    return pe_lib.self_attention(np.stack([embeddings[w] for w in words]), w_q, w_k, w_v)


# --- plots -----------------------------------------------------------------------------------


def test_attention_heatmap_labels_rows_and_columns_with_words(toy):
    _, weights = _attention(toy, WORDS_A)
    fig = ch01.attention_heatmap(weights, WORDS_A, title="A")
    assert isinstance(fig, Figure)
    ax, colorbar = fig.axes
    assert ax.get_title() == "A"
    assert "query" in ax.get_ylabel() and "key" in ax.get_xlabel()
    assert colorbar.get_ylabel() == "attention weight"
    assert [t.get_text() for t in ax.get_yticklabels()] == WORDS_A
    assert [t.get_text() for t in ax.get_xticklabels()] == WORDS_A
    assert len(ax.texts) == len(WORDS_A) ** 2  # one value per cell
    assert np.allclose(ax.images[0].get_array(), weights)


def test_attention_heatmap_draws_into_given_axes_and_can_skip_values(toy):
    _, weights = _attention(toy, WORDS_A)
    fig, axes = plt.subplots(1, 2)
    returned = ch01.attention_heatmap(weights, WORDS_A, keys=WORDS_A, title="B", ax=axes[1], annotate=False)
    assert returned is fig
    assert axes[1].get_title() == "B" and not axes[1].texts and axes[0].get_title() == ""


def test_attention_heatmap_rejects_a_shape_that_does_not_match_the_words():
    with pytest.raises(ValueError, match="weights must have shape"):
        ch01.attention_heatmap(np.ones((3, 3)) / 3, WORDS_A, title="x")


def test_permutation_panels_show_four_labelled_tables_and_two_colour_bars(toy):
    embeddings, *_ = toy
    x = np.stack([embeddings[w] for w in WORDS_A])
    out, _ = _attention(toy, WORDS_A)
    out_b, _ = _attention(toy, WORDS_B)
    fig = ch01.permutation_panels(x, out, x[ORDER], out_b, WORDS_A, WORDS_B, name="attention")
    assert isinstance(fig, Figure)
    panels = [ax for ax in fig.axes if ax.images]
    colorbars = [ax for ax in fig.axes if not ax.images]
    assert len(panels) == 4 and len(colorbars) == 2
    titles = [ax.get_title() for ax in panels]
    assert titles[0] == "input X" and titles[1] == "attention(X)"
    assert "P attention(X)" in titles[3]
    assert {ax.get_ylabel() for ax in colorbars} == {"embedding value", "output value"}
    assert [t.get_text() for t in panels[2].get_yticklabels()] == WORDS_B
    assert panels[3].get_xlabel() == "dimension"
    assert fig.get_suptitle()


def test_permutation_panels_reject_rows_that_do_not_match_the_words(toy):
    out, _ = _attention(toy, WORDS_A)
    with pytest.raises(ValueError, match="one row per word"):
        ch01.permutation_panels(out, out, out[:3], out, WORDS_A, WORDS_B)


# --- explorer --------------------------------------------------------------------------------


@pytest.fixture
def explorer(toy):
    return ch01.OrderExplorer(*toy, sentences=["the dog bit the man", "Lion kills Tiger"])


def test_order_explorer_is_an_explorer_with_sliders(explorer):
    assert isinstance(explorer, Explorer)
    sliders = [c for c in explorer.controls.values() if type(c).__name__ in ("IntSlider", "FloatSlider")]
    assert len(sliders) == 2
    assert "pe-explorer" in explorer.widget._dom_classes
    assert explorer.image.value  # rendered once at construction


def test_every_slider_changes_the_figure(explorer):
    before = explorer.update(pe_strength=0.0, rotate=2)
    assert explorer.update(pe_strength=0.8) != before
    assert explorer.update(rotate=3) != before


def test_without_positions_reordering_moves_no_output(explorer):
    for rotate in range(5):
        explorer.update(pe_strength=0.0, rotate=rotate)
        assert explorer.state["shift"].max() < 1e-12
        order = explorer.state["order"]
        assert np.allclose(explorer.state["weights_plain"], explorer.state["weights_pe"])
        assert explorer.state["shown"] == [WORDS_A[i] for i in order]


def test_with_positions_every_word_moves_and_the_state_matches_pe_lib(explorer, toy):
    embeddings, w_q, w_k, w_v = toy
    explorer.update(rotate=2, pe_strength=1.0)
    state = explorer.state
    assert state["shown"] == ["bit", "the", "man", "the", "dog"]
    assert state["shift"].min() > 0.05
    x = np.stack([embeddings[w] for w in state["shown"]])
    _, expected = pe_lib.self_attention(x + pe_lib.sinusoidal_encoding(5, D_MODEL), w_q, w_k, w_v)
    assert np.allclose(state["weights_pe"], expected)
    assert explorer.images[1].get_array().shape == (5, 5)


def test_rotating_by_zero_moves_nothing_even_with_positions(explorer):
    explorer.update(rotate=0, pe_strength=1.0)
    assert explorer.state["shift"].max() < 1e-12


def test_typed_sentences_resize_the_figure_and_unknown_words_are_stable(explorer, toy):
    explorer.update(sentence="The cat sat, quietly.", rotate=1)
    assert explorer.state["words"] == ["the", "cat", "sat", "quietly"]
    assert explorer.images[0].get_array().shape == (4, 4)
    assert [t.get_text() for t in explorer.axes[0].get_yticklabels()] == ["cat", "sat", "quietly", "the"]
    cat = explorer.vector("cat").copy()
    assert np.array_equal(cat, explorer.vector("cat"))
    again = ch01.OrderExplorer(*toy, sentences=["cat"])
    assert np.array_equal(again.vector("cat"), cat)  # seeded by the word: the same in every session
    assert not np.allclose(cat, explorer.vector("sat"))
    visible = [bar.get_visible() for bar in explorer.bars]
    assert visible == [True] * 4 + [False] * (explorer.max_words - 4)


def test_long_and_empty_sentences_are_handled(explorer):
    explorer.update(sentence=" ".join(["dog"] * 12))
    assert len(explorer.state["words"]) == explorer.max_words
    assert "first 8 words" in explorer.note.get_text()
    explorer.update(sentence="   ")
    assert explorer.state["words"] == ["dog"] * 8  # keeps the last sentence
    assert "at least one word" in explorer.note.get_text()


def test_the_rotate_slider_offers_one_rotation_per_word(explorer):
    """0 .. n-1 for n words: a 5-word sentence offered rotations 5-7 before, and 5 read 'rotating by 0'."""
    rotate = explorer.controls["rotate"]
    assert (rotate.min, rotate.max) == (0, 4)
    explorer.update(rotate=4)
    explorer.update(sentence="Lion kills Tiger")
    assert rotate.max == 2 and rotate.value == 2  # the last rotation of the shorter sentence
    assert explorer.axes[2].get_title() == "output change, rotated by 2"
    explorer.update(sentence="the tiger kills the man and dog", rotate=6)  # rotate is checked after the sentence
    assert explorer.state["shown"] == ["dog", "the", "tiger", "kills", "the", "man", "and"]
    with pytest.raises(ValueError, match="rotate must be a number from 0 to 6, got 7"):
        explorer.update(rotate=7)
    with pytest.raises(ValueError, match="rotate must be a number from 0 to 1, got 5"):
        explorer.update(sentence="the dog", rotate=5)
    assert explorer.values()["sentence"] == "the tiger kills the man and dog" and rotate.max == 6  # as before
    explorer.update(sentence="   ")  # no words: the last sentence stays, with its rotations
    assert rotate.max == 6 and explorer.state["words"][0] == "the"
    assert ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=["a b"], rotate=3).values()["rotate"] == 1


def test_long_typed_words_are_cut_on_the_axes_only(explorer):
    explorer.update(sentence="extraordinarily long words", rotate=0)
    assert explorer.state["words"] == ["extraordinarily", "long", "words"]
    assert [t.get_text() for t in explorer.axes[0].get_yticklabels()] == ["extraordi…", "long", "words"]
    assert [t.get_text() for t in explorer.axes[2].get_xticklabels()][0] == "extraordi…"


def test_explorer_needs_a_sentence_and_consistent_embeddings(toy):
    embeddings, w_q, w_k, w_v = toy
    with pytest.raises(ValueError, match="sentences"):
        ch01.OrderExplorer(*toy, sentences=[])
    for bad in ({}, {"a": np.ones(D_MODEL), "b": np.ones(3)}, {"a": np.ones((2, D_MODEL))}):
        with pytest.raises(ValueError, match="embeddings"):
            ch01.OrderExplorer(bad, w_q, w_k, w_v, sentences=["a"])


def test_explorer_update_is_quick(explorer):
    explorer.update(pe_strength=0.1)
    start = time.process_time()  # CPU time: wall time on a shared CI machine says little
    for strength in (0.2, 0.3, 0.4):
        explorer.update(pe_strength=strength)
    assert (time.process_time() - start) / 3 < 1.5  # ~0.1 s on a laptop; loose for slow CI machines


def test_order_explorer_finding_says_what_positions_change():
    explorer = ch01.OrderExplorer()
    explorer.update(sentence="the dog bit the man", rotate=2, pe_strength=0.0)
    assert "without positions" in explorer.finding() and "(largest change < 1e-06)" in explorer.finding()
    explorer.update(pe_strength=0.5)
    largest = ch01.measured(explorer.state["shift"].max())
    smallest = ch01.measured(explorer.state["shift"].min())
    assert f"with PE strength 0.50: every word's output changes (smallest change {smallest}, largest {largest})" in (
        explorer.alt_text()
    )
    explorer.update(rotate=0)
    assert "not reordered" in explorer.finding()


@pytest.mark.parametrize("strength", [0.05, 0.5, 1.0])
@pytest.mark.parametrize("rotate", [1, 2, 4])
def test_order_explorer_finding_quotes_the_frames_bars(strength, rotate):
    """The caption's smallest and largest change are the bars drawn in this frame, recomputed from the outputs."""
    explorer = ch01.OrderExplorer()
    explorer.update(sentence="the dog bit the man", rotate=rotate, pe_strength=strength)
    bars = np.array([bar.get_height() for bar in explorer.bars if bar.get_visible()])
    words = explorer.state["words"]
    x = np.stack([explorer.vector(word) for word in words])
    positions = strength * pe_lib.sinusoidal_encoding(len(words), explorer.d_model)
    order = np.roll(np.arange(len(words)), -rotate)
    before = pe_lib.self_attention(x + positions, *explorer.weights)[0]
    after = pe_lib.self_attention(x[order] + positions, *explorer.weights)[0]
    moved = np.linalg.norm(after - before[order], axis=1)  # word order[j], now at position j
    assert np.allclose(np.sort(bars), np.sort(moved))
    finding = explorer.finding()
    assert "every word's output changes" in finding
    assert not findings.check_quotes(finding, {"smallest bar": bars.min(), "largest bar": bars.max()})
    explorer.close()


def test_order_explorer_finding_counts_words_whose_output_did_not_change():
    explorer = ch01.OrderExplorer()
    explorer.update(sentence="the dog bit", rotate=1, pe_strength=0.5)
    explorer.state["shift"] = np.array([0.0, 0.5, 1e-9])  # as if two words' outputs had not moved: rounding
    assert explorer.finding().endswith("with PE strength 0.50: 1 of 3 words' outputs change (largest change 0.5)")
    explorer.state["shift"] = np.zeros(3)
    assert explorer.finding().endswith("no word's output changes (largest change < 1e-06)")
    explorer.close()


def test_model_shift_bars_colour_says_positions_and_hatch_says_model():
    shifts = {"self-attention": np.zeros(3), "GRU": np.ones(3), "self-attention + PE": np.ones(3)}
    fig = ch01.model_shift_bars(["a", "b", "c"], shifts, title="moves")
    bars = fig.axes[0].containers
    assert [b.patches[0].get_hatch() or "" for b in bars] == ["", "..", ""]
    assert np.allclose(bars[2].patches[0].get_facecolor()[:3], mpl.colors.to_rgb(figures.COLOURS["sinusoidal"]))
    assert colours.figure_problems(fig) == []
    with pytest.raises(ValueError, match="RNN"):
        ch01.model_shift_bars(["a"], {"RNN": np.zeros(1)}, title="x")
