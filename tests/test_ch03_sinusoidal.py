"""pe_lib.ch03_sinusoidal (notebook 03): its figures, the collision explorer and the exercise graders."""

import math

import ipywidgets
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from test_figures import text_problems

import pe_lib
from pe_lib import ch03_sinusoidal as ch03
from pe_lib import figures
from pe_lib.explorer import Explorer

# ---------------------------------------------------------------- plots


def test_dimension_waves_one_lane_per_column():
    table = pe_lib.sinusoidal_encoding(50, 16)
    fig = ch03.dimension_waves(table, [0, 2, 5], title="waves")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_title() == "waves" and ax.get_xlabel() == "position"
    assert [t.get_text() for t in ax.get_yticklabels()] == ["dim 0", "dim 2", "dim 5"]
    curves = [line for line in ax.get_lines() if len(line.get_xdata()) == 50]
    assert len(curves) == 3
    # lanes do not overlap: the first column's lane is on top
    assert min(curves[0].get_ydata()) > max(curves[1].get_ydata())


def test_dimension_waves_draws_the_fine_curve_and_the_integer_samples_as_dots():
    fine = np.linspace(0, 15, 301)
    fig = ch03.dimension_waves(
        pe_lib.sinusoidal_encoding(16, 8), [0, 2], curve=(fine, pe_lib.sinusoidal_encoding(fine, 8)), title="w"
    )
    lines = fig.axes[0].get_lines()
    curves = [line for line in lines if len(line.get_xdata()) == 301]
    dots = [line for line in lines if line.get_marker() == "o"]
    assert len(curves) == 2 and len(dots) == 2 and all(len(d.get_xdata()) == 16 for d in dots)
    assert [c.get_color() for c in curves] == [d.get_color() for d in dots]


def test_dimension_waves_step_and_existing_axes():
    fig, ax = plt.subplots()
    bits = pe_lib.binary_encoding(16, 4)
    assert ch03.dimension_waves(bits, [0, 1], step=True, title="bits", ax=ax) is fig
    assert ax.get_lines()[0].get_drawstyle().startswith("steps")


def test_wavelength_ladder_log_axis_and_reference_lines():
    lam = pe_lib.wavelengths(64)
    fig = ch03.wavelength_ladder(lam, title="ladder")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_title() == "ladder"
    assert "wavelength" in ax.get_ylabel() and "pair" in ax.get_xlabel()
    levels = sorted(line.get_ydata()[0] for line in ax.get_lines()[1:])
    assert np.allclose(levels, [2 * np.pi, 10000 * 2 * np.pi])
    assert np.allclose(ax.get_lines()[0].get_ydata(), lam)


def test_dimension_profile_bars():
    values = np.array([3.0, 2.0, 1.0, 0.5])
    fig = ch03.dimension_profile(values, title="profile", ylabel="change", log=True)
    ax = fig.axes[0]
    assert len(ax.patches) == 4 and ax.get_yscale() == "log"
    assert ax.get_ylabel() == "change" and ax.get_xlabel() == "dimension"


def test_pair_circle_points_on_unit_circle_with_colorbar():
    table = pe_lib.sinusoidal_encoding(20, 8)
    fig = ch03.pair_circle(table, 1, annotate=[0, 3], title="circle")
    ax = fig.axes[0]
    points = ax.collections[0].get_offsets()
    assert points.shape == (20, 2)
    assert np.allclose(np.hypot(points[:, 0], points[:, 1]), 1.0)
    assert len(fig.axes) == 2  # the colour bar
    assert fig.axes[1].get_ylabel() == "position"
    assert [t.get_text() for t in ax.texts] == ["p=0", "p=3"]
    assert ax.get_xlabel() == "column 2 (sin)" and ax.get_ylabel() == "column 3 (cos)"


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
def test_pair_circle_labels_are_readable(lecture):
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        fig = ch03.pair_circle(pe_lib.sinusoidal_encoding(12, 8), 0, annotate=range(7), title="pair 0")
        assert text_problems(fig, inside=False) == []  # the position labels too: no 9-point text


def test_offset_fit_residuals_one_curve_per_fit():
    fig = ch03.offset_fit_residuals([1, 2, 3], {"a": [0.3, 0.4, 0.5], "b": [0.0, 1e-14, 1e-13]}, title="fit")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2 and ax.get_yscale() == "log"
    assert np.all(ax.get_lines()[1].get_ydata() > 0)  # exact zeros are drawable on the log axis
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]


def test_distance_by_offset_with_neighbour_lines():
    offsets = np.arange(1, 11)
    fig = ch03.distance_by_offset(
        offsets, {"x": np.linspace(1, 2, 10), "y": np.linspace(2, 3, 10)}, neighbour={"x": 1.0}, title="d"
    )
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 3  # two curves and one dashed neighbour line
    assert ax.get_title() == "d" and "offset" in ax.get_xlabel()


def test_distance_by_offset_marks_collisions():
    distances = np.array([1.0, 2.0, 0.5, 3.0, 0.9])  # offsets 1..5: k = 3 and k = 5 are nearer than k = 1
    fig = ch03.distance_by_offset(np.arange(1, 6), {"b": distances}, neighbour={"b": 1.0}, title="d")
    dots = [line for line in fig.axes[0].get_lines() if line.get_label() == "collision (b)"]
    assert len(dots) == 1 and dots[0].get_xdata().tolist() == [3.0, 5.0]


def test_layout_comparison_two_panels_one_colorbar():
    a = pe_lib.sinusoidal_encoding(10, 8)
    b = pe_lib.sinusoidal_encoding(10, 8, layout="concatenated")
    fig = ch03.layout_comparison(a, b, title="layouts")
    assert len(fig.axes) == 3
    assert fig.axes[0].get_title().startswith("interleaved") and fig.axes[1].get_title().startswith("concatenated")
    assert np.array_equal(fig.axes[1].images[0].get_array(), b)
    assert fig.get_suptitle() == "layouts"


# ---------------------------------------------------------------- explorer


def test_base_explorer_is_an_explorer_with_sliders():
    explorer = ch03.CollisionExplorer(n=256, base=10000, d_model=16)
    assert isinstance(explorer, Explorer)
    sliders = (ipywidgets.IntSlider, ipywidgets.FloatSlider, ipywidgets.SelectionSlider)
    assert set(explorer.controls) == {"base", "d_model", "position"}
    assert all(isinstance(c, sliders) for c in explorer.controls.values())
    assert bytes(explorer.image.value).startswith(b"\x89PNG")


def test_base_explorer_updates_in_place_and_finds_collisions():
    explorer = ch03.CollisionExplorer(n=2048, base=10000, d_model=16)
    artists = len(explorer.figure.axes[1].get_lines())
    before = explorer.update()
    assert explorer.collisions.size == 0
    after = explorer.update(base=2)
    assert after != before
    assert explorer.collisions.tolist() == [1891]  # the row of 1891 is nearer to row 0 than row 1 is
    assert len(explorer.figure.axes[1].get_lines()) == artists  # artists changed, not added
    explorer.update(d_model=8, position=100)
    assert explorer.collisions.size > 0
    assert np.all(np.abs(explorer.collisions - 100) >= 2)
    assert math.isclose(explorer.longest_wavelength, float(pe_lib.wavelengths(8, base=2)[-1]))
    image = explorer.figure.axes[0].images[0]
    assert image.get_array().shape == (2048, 8)


def test_base_explorer_rejects_bad_arguments():
    with pytest.raises(ValueError, match="n"):
        ch03.CollisionExplorer(n=0)
    with pytest.raises(ValueError, match="n must be at least gap"):
        ch03.CollisionExplorer(n=3, gap=2)
    with pytest.raises(ValueError, match="base must be one of"):
        ch03.CollisionExplorer(base=7)
    with pytest.raises(ValueError, match="d_model must be one of"):
        ch03.CollisionExplorer(d_model=10)


# ---------------------------------------------------------------- checkers: the vectorised table


def _table(n, d_model, *, rates=None, swap=False, start=0):
    i = np.arange(d_model // 2)
    rates = 10000.0 ** (-2 * i / d_model) if rates is None else rates(i, d_model)
    angles = (np.arange(n) + start)[:, None] * rates
    table = np.zeros((n, d_model))
    table[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    table[:, 1::2] = np.sin(angles) if swap else np.cos(angles)
    return table


def _torch_table(n, d_model):
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    angles = torch.arange(n).unsqueeze(1) * div_term
    table = torch.zeros(n, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def _rows(table_function):
    """A (position, d_model) -> row function from a (n, d_model) -> table one: the shape of exercise 3's answer."""
    return lambda position, d_model: table_function(position + 1, d_model)[position]


@pytest.mark.parametrize(
    ("wrong", "symptom"),
    [
        (lambda n, d: np.zeros((n, d)), "returned only zeros"),
        (lambda n, d: _table(n, d, swap=True), "swapped"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-i / d)), "uses i where the formula has 2i"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-4 * i / d)), "doubled"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (2 * i / d)), "minus sign"),
        (lambda n, d: _table(n, d, rates=lambda i, d: np.exp(-2 * i * np.log10(10000) / d)), "natural log"),
        (lambda n, d: _table(n, d, start=1), "start at 1"),
        (lambda n, d: pe_lib.sinusoidal_encoding(n, d, layout="concatenated"), "concatenated"),
        (lambda n, d: _table(n, d) + 0.05, "first wrong value at position 0, column 0"),
        (lambda n, d: np.full((n, d), np.nan), "NaN"),
    ],
)
def test_the_table_diagnosis_names_typical_mistakes(wrong, symptom):
    feedback = ch03.check_chapter_fix(_rows(wrong))
    assert not feedback.passed and symptom in feedback.message
    assert str(feedback).startswith("[spot the bug] Not yet: ")
    assert len(ch03.check_chapter_fix(_rows(wrong), hint=3).hints) == 3


def test_the_table_diagnosis_names_an_angle_per_column():
    def own_index(n, d_model):
        j = np.arange(d_model)
        angles = np.arange(n)[:, None] / 10000.0 ** (j / d_model)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))

    assert "its own index j" in ch03.check_chapter_fix(_rows(own_index)).message
    assert ch03.check_chapter_fix(_rows(_table)).passed
    assert ch03.check_chapter_fix(_rows(lambda n, d: _torch_table(n, d).to(torch.bfloat16))).passed


# ---------------------------------------------------------------- checkers: the book chapter's bug


def _chapter_encoding(position, d_model):
    angle_rads = np.arange(d_model) // 2 * np.pi / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))
    angle_rads = position * angle_rads
    pos_encoding = np.zeros(d_model)
    pos_encoding[0::2] = np.sin(angle_rads[0::2])
    pos_encoding[1::2] = np.cos(angle_rads[1::2])
    return pos_encoding


def _chapter_fixed(position, d_model):
    angle_rads = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))
    angle_rads = position * angle_rads
    pos_encoding = np.zeros(d_model)
    pos_encoding[0::2] = np.sin(angle_rads[0::2])
    pos_encoding[1::2] = np.cos(angle_rads[1::2])
    return pos_encoding


def test_check_chapter_fix_accepts_the_fix():
    assert ch03.check_chapter_fix(_chapter_fixed).passed
    assert ch03.check_chapter_fix(lambda p, d: pe_lib.sinusoidal_encoding([p], d)[0]).passed


def test_check_chapter_fix_recognises_the_chapter_bug():
    feedback = ch03.check_chapter_fix(_chapter_encoding)
    assert not feedback.passed
    assert "columns 0 and 1 never change" in feedback.message and "line 1" not in str(feedback)
    assert "Look at line 1" in str(ch03.check_chapter_fix(_chapter_encoding, hint=1))
    assert "np.pi" not in str(ch03.check_chapter_fix(_chapter_encoding, hint=1))
    assert "np.arange(d_model) // 2 * np.pi" in str(ch03.check_chapter_fix(_chapter_encoding, hint=2))
    assert "angle_rads = 1 / np.power(10000" in str(ch03.check_chapter_fix(_chapter_encoding, hint=3))


def test_check_chapter_fix_recognises_half_fix_and_other_mistakes():
    def pi_removed(position, d_model):
        i = np.arange(d_model) // 2
        angles = position * i / 10000.0 ** (2 * i / d_model)
        return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))

    assert "removed π but kept the factor i//2" in ch03.check_chapter_fix(pi_removed).message
    swapped = ch03.check_chapter_fix(lambda p, d: _chapter_fixed(p, d)[np.arange(d) ^ 1])
    assert "swapped" in swapped.message
    assert "shape (8,)" in ch03.check_chapter_fix(lambda p, d: np.zeros((1, d))).message
    assert "ValueError" in ch03.check_chapter_fix(lambda p, d: int("x")).message
    assert "Drop `np.arange(d_model) // 2 *`" not in str(ch03.check_chapter_fix(pi_removed, hint=1))
    assert "Drop `np.arange(d_model) // 2 *`" in str(ch03.check_chapter_fix(pi_removed, hint=2))


# ---------------------------------------------------------------- checkers: M(k), concatenated


def _concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def _blocks(k, d_model):
    angle = k * pe_lib.frequencies(d_model)
    c, s = np.diag(np.cos(angle)), np.diag(np.sin(angle))
    return np.block([[c, s], [-s, c]])


@pytest.mark.parametrize(
    "solution", [_concatenated_rotation, _blocks, lambda k, d: torch.tensor(_blocks(k, d), dtype=torch.float32)]
)
def test_check_concatenated_rotation_accepts_right_answers(solution):
    feedback = ch03.check_concatenated_rotation(solution)
    assert feedback.passed and str(feedback).startswith("[concatenated rotation] Correct")


@pytest.mark.parametrize(
    ("wrong", "symptom", "tier_1"),
    [
        (lambda k, d: pe_lib.relative_rotation(k, d), "interleaved M(k)", "cosine partner of column 0"),
        (lambda k, d: _concatenated_rotation(k, d).T, "the other way", "transpose"),
        (lambda k, d: _concatenated_rotation(-k, d), "the other way", "transpose"),
        (lambda k, d: np.eye(d), "off by up to", "entries in another order"),
        (lambda k, d: _blocks(k, d)[:-1], "shape", "entries in another order"),
        (lambda k, d: None, "returned None", "entries in another order"),
        (lambda k, d: _concatenated_rotation(k + 1, d), "off by up to", "entries in another order"),
    ],
)
def test_check_concatenated_rotation_rejects_mistakes_without_giving_the_answer(wrong, symptom, tier_1):
    feedback = ch03.check_concatenated_rotation(wrong)
    assert not feedback.passed and symptom in str(feedback)
    assert "np.ix_" not in str(feedback) and "perm" not in str(feedback)
    assert tier_1 in str(ch03.check_concatenated_rotation(wrong, hint=1))
    assert "np.ix_(perm, perm)" in str(ch03.check_concatenated_rotation(wrong, hint=3))


# ---------------------------------------------------------------- checkers: the timing signal


def _timing(n, d_model, max_timescale=1e4, *, steps=None, interleave=False, swap=False):
    pairs = d_model // 2
    rates = max_timescale ** (-np.arange(pairs) / (max(pairs - 1, 1) if steps is None else steps))
    angles = np.arange(n)[:, None] * rates
    first, second = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
    if interleave:
        return np.stack([first, second], axis=-1).reshape(n, d_model)
    return np.concatenate([first, second], axis=1)


def _t2t_literal(n, d_model, max_timescale=1e4):
    """tensor2tensor's get_timing_signal_1d, transcribed (min_timescale 1, even channels)."""
    num_timescales = d_model // 2
    log_timescale_increment = math.log(float(max_timescale) / 1.0) / max(num_timescales - 1, 1)
    inv_timescales = 1.0 * np.exp(np.arange(num_timescales) * -log_timescale_increment)
    scaled_time = np.arange(n, dtype=np.float64)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


@pytest.mark.parametrize("solution", [_timing, _t2t_literal, lambda n, d, m=1e4: torch.tensor(_timing(n, d, m))])
def test_check_timing_signal_accepts_right_answers(solution):
    feedback = ch03.check_timing_signal(solution)
    assert feedback.passed and "exactly 1/max_timescale" in feedback.message


@pytest.mark.parametrize(
    ("wrong", "symptom"),
    [
        (lambda n, d, m=1e4: _timing(n, d, m, steps=d // 2), "your rates follow the paper"),
        (lambda n, d, m=1e4: pe_lib.sinusoidal_encoding(n, d, base=m, layout="concatenated"), "follow the paper"),
        (lambda n, d, m=1e4: _timing(n, d), "ignore max_timescale"),
        (lambda n, d, m=1e4: _timing(n, d, m, interleave=True), "interleaved"),
        (lambda n, d, m=1e4: _timing(n, d, m, swap=True), "halves are swapped"),
        (lambda n, d, m=1e4: np.zeros((n, d)), "only zeros"),
        (lambda n, d, m=1e4: _timing(n, d, m) + 0.01, "first wrong value at position 0, column 0"),
        (lambda n, d, m=1e4: _timing(n, d, m).T, "must return shape"),
        (lambda n, d, m=1e4: print(_timing(n, d, m)), "use `return`, not `print`"),
        (lambda n, d: _timing(n, d), "TypeError"),  # forgot the max_timescale argument
    ],
)
def test_check_timing_signal_rejects_mistakes_without_giving_the_answer(wrong, symptom):
    feedback = ch03.check_timing_signal(wrong)
    assert not feedback.passed and symptom in str(feedback)
    for answer in ("pairs - 1", "np.concatenate", "-i / (d_model/2 - 1)"):
        assert answer not in str(feedback)
    assert "-i / (d_model/2 - 1)" in str(ch03.check_timing_signal(wrong, hint=2))
    assert "np.concatenate([np.sin(angles), np.cos(angles)], axis=1)" in str(ch03.check_timing_signal(wrong, hint=3))
