"""Notebook 04 (the pendulum intuition): its figures, explorers and exercise checkers."""

import matplotlib
import numpy as np
import pytest
from test_figures import text_problems

import pe_lib
from pe_lib import ch04_pendulum as ch04
from pe_lib import figures, findings


def offset_similarity(k, d_model, base=10000.0):
    return float(np.sum(np.cos(pe_lib.frequencies(d_model, base=base) * k)))


# --- plots ---------------------------------------------------------------------------------


def test_pendulum_snapshot_draws_one_dial_per_pair_above_the_vector():
    fig = ch04.pendulum_snapshot(12, d_model=16)
    top, bottom = fig.axes
    heights = [bar.get_height() for bar in bottom.patches if bar.get_width() > 0]
    assert np.allclose(heights, pe_lib.sinusoidal_encoding([12], 16)[0])
    bobs = [line for line in top.lines if line.get_marker() == "o"][0]
    x, y = bobs.get_data()
    angles = 12 * pe_lib.frequencies(16)
    assert len(x) == 8
    assert np.allclose(x - (2 * np.arange(8) + 0.5), 0.9 * np.sin(angles))  # sideways offset = sin column
    assert np.allclose(y, 0.9 * np.cos(angles))  # height = cos column
    assert "p = 12" in top.get_title() and "fastest, left" in top.get_title()
    assert bottom.get_xlabel() and bottom.get_ylabel()
    assert [t.get_text() for t in top.texts][0].startswith("i=0")


def test_pendulum_snapshot_follows_the_base():
    fig = ch04.pendulum_snapshot(5, d_model=8, base=100.0)
    heights = [bar.get_height() for bar in fig.axes[1].patches if bar.get_width() > 0]
    assert np.allclose(heights, pe_lib.sinusoidal_encoding([5], 8, base=100.0)[0])


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
def test_pendulum_captions_are_readable_and_apart(lecture):
    """Each dial's caption (its wavelength) at the style's small size at least, none over its neighbour's."""
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        fig = ch04.pendulum_snapshot(12, d_model=16, base=1e5)  # long wavelengths: 6.28 to 149k
        assert [t.get_text() for t in fig.axes[0].texts][-1] == "i=7\nλ=149k"  # not 1.49e+05
        assert text_problems(fig, inside=False) == []


@pytest.mark.parametrize("d_model", [7, 0, True, 16.0])
def test_pendulum_figure_needs_an_even_int_d_model(d_model):
    with pytest.raises(ValueError, match="even d_model"):
        ch04.pendulum_snapshot(3, d_model=d_model)


def test_pair_contributions_shows_cos_of_each_pair():
    fig = ch04.pair_contributions([1, 100], 64)
    ax = fig.axes[0]
    lines = [line for line in ax.lines if not line.get_label().startswith("_")]
    w = pe_lib.frequencies(64)
    assert len(lines) == 2
    assert np.allclose(lines[1].get_ydata(), np.cos(100 * w))
    assert lines[1].get_label() == f"k = 100: sum = {np.cos(100 * w).sum():.1f}"
    assert ax.get_title() and "fastest" in ax.get_xlabel() and ax.get_ylabel()


def test_pair_contributions_rejects_odd_d_model():
    with pytest.raises(ValueError, match="even d_model"):
        ch04.pair_contributions([1], 7)


# --- widgets -------------------------------------------------------------------------------


def test_pendulum_explorer_redraws_and_shows_the_encoding():
    explorer = ch04.PendulumExplorer(d_model=16, max_position=50)
    first = explorer.update()
    assert np.allclose(explorer.vector, pe_lib.sinusoidal_encoding([0], 16)[0])
    moved = explorer.update(position=37)
    assert moved != first and bytes(moved[:4]) == b"\x89PNG"
    assert np.allclose(explorer.vector, pe_lib.sinusoidal_encoding([37], 16)[0])
    assert explorer.controls["position"].max == 50


def test_pendulum_explorer_play_button_is_labelled_and_drives_the_slider():
    explorer = ch04.PendulumExplorer(max_position=20, interval=150)
    slider = explorer.controls["position"]
    assert explorer.play.max == slider.max == 20 and explorer.play.interval == 150
    assert explorer._link.source == (explorer.play, "value") and explorer._link.target == (slider, "value")
    # The labelled toggle starts and pauses the Play, which is hidden (its buttons show icons, no names).
    button = explorer.play_button
    assert explorer._play_link.source == (button, "value") and explorer._play_link.target == (explorer.play, "playing")
    assert explorer.play.layout.display == "none"
    assert (button.description, button.icon) == ("Play", "play") and "150 ms" in button.tooltip
    button.value = True
    assert (button.description, button.icon) == ("Pause", "pause")
    button.value = False
    assert button.description == "Play"
    row = explorer.widget.children[0].children
    assert row[0] is button and explorer.play in row and slider in row
    assert "pe-explorer" in explorer.widget._dom_classes
    assert list(explorer.controls) == ["position"]  # the Play drives the slider; only the slider redraws
    explorer.update(position=10)
    assert "At position 10 the fastest pendulum (pair 0) has turned 1.59 times" in explorer.alt_text()
    for position in (0, 13, 20):  # the slider of this explorer goes to 20
        explorer.update(position=position)
        turns = position * 10000.0 ** (-np.arange(8) / 8) / (2 * np.pi)  # d_model 16: w_i = 10000^(-2i/16)
        assert not findings.check_quotes(explorer.finding(), {"pair 0": turns[0], "pair 7": turns[7]})
        bars = [bar.get_height() for bar in explorer._artists["bars"]]
        assert np.allclose(bars, pe_lib.sinusoidal_encoding([position], 16)[0])  # the bars are PE(position)


def test_decay_explorer_half_width_and_attention():
    explorer = ch04.DecayExplorer(max_offset=64, n_positions=24)
    paper = explorer.update()
    assert explorer.half_width == 28  # d_model 64, base 1e4
    assert np.isclose(explorer.similarity[explorer.offsets == 0][0], 1.0)
    assert np.allclose(explorer.weights.sum(axis=1), 1.0)
    assert np.all(explorer.weights.argmax(axis=1) == np.arange(24))
    small = explorer.update(base=10.0)
    assert small != paper and explorer.half_width == 3
    explorer.update(base=1e6, d_model=512)
    assert explorer.half_width is None  # never drops below one half within 64 positions
    assert "> 64" in explorer._artists["title"].get_text()
    assert "d_model 512, base 1e+06: the similarity of positions k apart stays above half up to offset 64" in (
        explorer.alt_text()
    )
    explorer.update(base=1e4, d_model=64)
    assert "falls below half at offset 28" in explorer.finding()


@pytest.mark.parametrize(("d_model", "base"), [(64, 1e4), (8, 10.0), (512, 1e3), (16, 1e6)])
def test_decay_explorer_finding_quotes_the_frames_curve_and_map(d_model, base):
    """The caption's half-width and self-weight, recomputed from the drawn line and the drawn attention map."""
    explorer = ch04.DecayExplorer()
    explorer.update(d_model=d_model, base=base)
    curve = explorer._artists["line"].get_ydata()  # drawn over explorer.offsets, -64 .. 64
    ahead = curve[explorer.offsets > 0]
    weights = explorer._artists["image"].get_array()
    quotes = {"mean self-weight drawn": np.diag(weights).mean()}
    if np.any(ahead < 0.5):
        quotes["first offset below half, drawn"] = int(np.argmax(ahead < 0.5)) + 1
    else:
        assert "stays above half up to offset 64" in explorer.finding()
    assert not findings.check_quotes(explorer.finding(), quotes), explorer.finding()
    explorer.close()


def test_decay_explorer_similarity_is_the_closed_form():
    explorer = ch04.DecayExplorer(max_offset=10, n_positions=8)
    explorer.update(d_model=32, base=100.0)
    expected = [offset_similarity(k, 32, 100.0) / 16 for k in explorer.offsets]
    assert np.allclose(explorer.similarity, expected)
    x = pe_lib.sinusoidal_encoding(8, 32, base=100.0)
    assert np.allclose(explorer.weights, pe_lib.softmax(x @ x.T / np.sqrt(32)))


# --- exercises -----------------------------------------------------------------------------


def test_check_offset_similarity_accepts_the_closed_form():
    feedback = ch04.check_offset_similarity(offset_similarity)
    assert feedback.passed, feedback
    assert str(feedback).startswith("[offset similarity] Correct")


def test_check_offset_similarity_accepts_a_vectorised_answer_of_shape_one():
    feedback = ch04.check_offset_similarity(
        lambda k, d, base: np.cos(np.multiply.outer(np.atleast_1d(k), pe_lib.frequencies(d, base=base))).sum(-1)
    )
    assert feedback.passed, feedback


def _d_terms(k, d, base):
    return float(np.sum(np.cos(k * base ** (-2 * np.arange(d) / d))))


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda k, d, base: 2 * offset_similarity(k, d, base), "twice"),
        (_d_terms, "d_model frequencies"),
        (lambda k, d, base: float(np.sum(np.cos(k * base ** (-np.arange(d) / d)))), "d_model frequencies"),
        (lambda k, d, base: float(np.sum(np.cos(k * base ** (-np.arange(d // 2) / d)))), "factor 2"),
        (lambda k, d, base: float(np.sum(np.sin(k * pe_lib.frequencies(d, base=base)))), "summed sines"),
        (lambda k, d, base: offset_similarity(k, d), "ignored the base"),
        (lambda k, d, base: d / 2, "does not change with k"),
        (lambda k, d, base: np.cos(k * pe_lib.frequencies(d, base=base)), "return one number"),
        (lambda k, d, base: {"k": k}, "return a number"),
        (lambda k, d, base: 0.0, "does not give PE(p)·PE(p+k)"),
    ],
)
def test_check_offset_similarity_names_the_mistake(answer, hint):
    feedback = ch04.check_offset_similarity(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert "expected" in feedback.message or "return" in feedback.message
    assert len(ch04.check_offset_similarity(answer, hint=3).hints) == 3


def test_check_offset_similarity_reports_an_exception_instead_of_raising():
    def broken(k, d_model, base):
        raise NotImplementedError("todo")

    feedback = ch04.check_offset_similarity(broken)
    assert not feedback.passed and "NotImplementedError" in feedback.message


def test_check_look_back_accepts_the_backward_rotation():
    assert ch04.check_look_back(lambda k, d: pe_lib.relative_rotation(-k, d)).passed
    assert ch04.check_look_back(lambda k, d: pe_lib.relative_rotation(k, d).T).passed
    assert ch04.check_look_back(lambda k, d: 2.0 * pe_lib.relative_rotation(-k, d)).passed  # any positive scale


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda k, d: pe_lib.relative_rotation(k, d), "AHEAD"),
        (lambda k, d: np.eye(d), "its own position"),
        (lambda k, d: pe_lib.relative_rotation(-2 * k, d), "wrong offset"),
        (lambda k, d: np.zeros((d, d)), "all zeros"),
        (lambda k, d: np.eye(d + 1), "matrix, got shape"),
        (lambda k, d: np.full((d, d), np.nan), "NaN"),
        (lambda k, d: "rotate", "array"),
    ],
)
def test_check_look_back_says_where_the_head_looks(answer, hint):
    feedback = ch04.check_look_back(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert len(ch04.check_look_back(answer, hint=3).hints) == 3


@pytest.mark.parametrize(
    ("check", "answer", "level", "fix"),
    [
        (ch04.check_offset_similarity, lambda k, d, base: 0.0, 2, "cosine of the difference"),
        (ch04.check_offset_similarity, lambda k, d, base: 0.0, 3, "np.sum(np.cos(w * k))"),
        (ch04.check_offset_similarity, lambda k, d, base: 2 * offset_similarity(k, d, base), 2, "not d_model."),
        (ch04.check_offset_similarity, lambda k, d, base: d / 2, 1, "as a function of its angle"),
        (
            ch04.check_offset_similarity,
            lambda k, d, base: float(np.sum(np.sin(k * pe_lib.frequencies(d, base=base)))),
            2,
            "cos(b - a)",
        ),
        (ch04.check_look_back, lambda k, d: np.eye(d), 2, "relative_rotation(a)"),
        (ch04.check_look_back, lambda k, d: np.eye(d), 3, "pe_lib.relative_rotation(-k, d_model)"),
        (ch04.check_look_back, lambda k, d: pe_lib.relative_rotation(k, d), 2, "relative_rotation(-k)"),
        (ch04.check_look_back, lambda k, d: pe_lib.relative_rotation(-2 * k, d), 1, "W_k^T"),
    ],
)
def test_the_fix_of_a_mistake_waits_for_its_hint_tier(check, answer, level, fix):
    for below in range(level):
        assert fix not in str(check(answer, hint=below))
    assert fix in str(check(answer, hint=level))


def test_check_look_back_reports_where_the_scores_peak():
    feedback = ch04.check_look_back(lambda k, d: pe_lib.relative_rotation(k, d))
    assert "q = p + 1, wanted q = p - 1" in feedback.message
    feedback = ch04.check_look_back(lambda k, d: np.eye(d))
    assert "peak at q = p," in feedback.message


def test_check_look_back_reports_an_exception_instead_of_raising():
    feedback = ch04.check_look_back(lambda k, d: 1 / 0)
    assert not feedback.passed and "ZeroDivisionError" in feedback.message
