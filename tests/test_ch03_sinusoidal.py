"""pe_lib.ch03_sinusoidal (notebook 03): its figures and the collision explorer; graders: *_exercises."""

import math

import ipywidgets
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure
from test_figures import text_problems

import pe_lib
from pe_lib import ch03_sinusoidal as ch03
from pe_lib import figures, findings
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


def test_collision_explorer_finding_counts_the_collisions():
    explorer = ch03.CollisionExplorer(base=2, d_model=16, position=0)
    assert explorer.finding().startswith(f"Base 2, d_model 16: {explorer.collisions.size} row")
    explorer.update(base=10000)
    assert explorer.collisions.size == 0 and "0 rows are at least 2 positions from 0" in explorer.alt_text()
    assert "wavelength is 19,869 positions" in explorer.finding()
    explorer.update(base=2, d_model=16, position=0)
    assert "1 row is at least 2 positions from 0 and yet closer" in explorer.finding()


@pytest.mark.parametrize(("base", "d_model", "position"), [(2, 16, 0), (2, 8, 700), (10, 4, 100), (10000, 64, 2047)])
def test_collision_explorer_finding_quotes_the_frames_distances(base, d_model, position):
    """The caption's count, neighbour distance, nearest far row and wavelength, recomputed from the drawn curve."""
    explorer = ch03.CollisionExplorer(base=base, d_model=d_model, position=position)
    distance = explorer._curve.get_ydata()  # the curve drawn: distance from the chosen row to every row q
    table = pe_lib.sinusoidal_encoding(explorer.n, d_model, base=base)
    assert np.allclose(distance, np.linalg.norm(table - table[position], axis=1))
    neighbour = np.sqrt(2 * np.sum(1 - np.cos(pe_lib.frequencies(d_model, base=base))))  # any two rows 1 apart
    far = np.abs(np.arange(explorer.n) - position) >= 2
    nearest = np.flatnonzero(far)[np.argmin(distance[far])]
    finding = explorer.finding()
    assert not findings.check_quotes(
        finding,
        {
            "collisions": np.sum(far & (distance < neighbour)),
            "neighbour distance": neighbour,
            "nearest far row": nearest,
            "its distance": distance[nearest],
            "slowest wavelength": 2 * np.pi * base ** ((d_model - 2) / d_model),
        },
    ), finding
    assert len(explorer._hits.get_xdata()) == explorer.collisions.size  # the dots drawn are the count said
    explorer.close()
