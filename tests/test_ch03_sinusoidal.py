"""pe_lib.ch03_sinusoidal (notebook 03): its figures, the collision explorer and the exercise graders."""

import math

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

import pe_lib
from pe_lib import ch03_sinusoidal as ch03
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


@pytest.mark.parametrize("solution", [_table, _torch_table, lambda n, d: pe_lib.sinusoidal_encoding(n, d)])
def test_check_sinusoidal_table_accepts_right_answers(solution):
    feedback = ch03.check_sinusoidal_table(solution)
    assert feedback.passed and bool(feedback)
    assert str(feedback).startswith("[sinusoidal table] Correct")


@pytest.mark.parametrize(
    ("wrong", "hint"),
    [
        (lambda n, d: np.zeros((n, d)), "returned only zeros"),
        (lambda n, d: _table(n, d, swap=True), "swapped"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-i / d)), "uses i where the formula has 2i"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-4 * i / d)), "doubled"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (2 * i / d)), "minus sign"),
        (lambda n, d: _table(n, d, rates=lambda i, d: np.exp(-2 * i * np.log10(10000) / d)), "natural log"),
        (lambda n, d: _table(n, d, start=1), "start at 1"),
        (lambda n, d: pe_lib.sinusoidal_encoding(n, d, layout="concatenated"), "concatenated"),
        (lambda n, d: _table(n, d).T, "transpose"),
        (lambda n, d: _table(n + 1, d), "shape"),
        (lambda n, d: _table(n, d) + 0.05, "first wrong value at position 0, column 0"),
        (lambda n, d: np.full((n, d), np.nan), "NaN"),
        (lambda n, d: "not a table", "must return numbers"),
        (lambda n, d: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_check_sinusoidal_table_rejects_typical_mistakes(wrong, hint):
    feedback = ch03.check_sinusoidal_table(wrong)
    assert not feedback.passed
    assert hint in feedback.message
    assert str(feedback).startswith("[sinusoidal table] Not yet: ")
    assert len(ch03.check_sinusoidal_table(wrong, hint=3).hints) == 3


def test_check_sinusoidal_table_column_own_index():
    def own_index(n, d_model):
        j = np.arange(d_model)
        angles = np.arange(n)[:, None] / 10000.0 ** (j / d_model)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))

    assert "its own index j" in ch03.check_sinusoidal_table(own_index).message


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


@pytest.mark.parametrize(
    ("wrong", "level", "fix"),
    [
        (lambda n, d: np.zeros((n, d)), 2, "div_term"),
        (lambda n, d: np.zeros((n, d)), 3, "table[:, 0::2] = np.sin(pos * div_term)"),
        (lambda n, d: _table(n, d, swap=True), 2, "Column 2i holds the sine"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (2 * i / d)), 2, "exp(-2i"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-i / d)), 2, "multiply by 2"),
        (lambda n, d: _table(n, d, rates=lambda i, d: np.exp(-2 * i * np.log10(10000) / d)), 2, "np.log (natural)"),
    ],
)
def test_check_sinusoidal_table_keeps_the_fix_for_its_hint_tier(wrong, level, fix):
    for below in range(level):
        assert fix not in str(ch03.check_sinusoidal_table(wrong, hint=below))
    assert fix in str(ch03.check_sinusoidal_table(wrong, hint=level))


# ---------------------------------------------------------------- checkers: the layout permutation


def test_check_layout_permutation():
    assert ch03.check_layout_permutation(lambda d: np.r_[0:d:2, 1:d:2]).passed
    assert ch03.check_layout_permutation(lambda d: torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)]))
    inverse = ch03.check_layout_permutation(lambda d: np.argsort(np.r_[0:d:2, 1:d:2]))
    assert not inverse.passed and "other way" in inverse.message
    identity = ch03.check_layout_permutation(lambda d: np.arange(d))
    assert not identity.passed and "the sin of pair 1" in identity.message and "0, 2, 4" not in str(identity)
    assert "sine columns 0, 2, 4" in str(ch03.check_layout_permutation(lambda d: np.arange(d), hint=2))
    assert "np.r_[0:d_model:2" in str(ch03.check_layout_permutation(lambda d: np.arange(d), hint=3))
    assert "np.argsort(perm)" in str(ch03.check_layout_permutation(lambda d: np.argsort(np.r_[0:d:2, 1:d:2]), hint=2))
    duplicate = ch03.check_layout_permutation(lambda d: np.zeros(d, dtype=int))
    assert not duplicate.passed and "not a permutation" in duplicate.message
    short = ch03.check_layout_permutation(lambda d: np.arange(d - 1))
    assert not short.passed and "shape" in short.message
    assert not ch03.check_layout_permutation(lambda d: None).passed
