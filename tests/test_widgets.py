"""The Explorer base class: blitted frames show what a full render shows, backgrounds are reused, PNG frames."""

import io
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from PIL import Image

from pe_lib import _png, plots, widgets

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_notebooks  # noqa: E402  (EXPLORER_FACTORIES: each explorer built as its notebook builds it)

matplotlib.use("Agg")


def build(cls):
    factory = bench_notebooks.EXPLORER_FACTORIES.get(cls.__name__)
    return factory(widgets) if factory else cls()


def pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def full_render(explorer):
    buffer = io.BytesIO()
    explorer.figure.savefig(buffer, format="png")
    return buffer.getvalue()


def count_background_renders(explorer, monkeypatch):
    """Log every full render of the figure (Figure.draw: a new background, or a layout pass); returns the log."""
    calls = []
    figure = explorer.figure
    draw = figure.draw
    monkeypatch.setattr(figure, "draw", lambda *args, **kwargs: (calls.append(1), draw(*args, **kwargs))[1])
    return calls


# --- PNG frames ------------------------------------------------------------------------------


def test_png_frames_decode_to_the_same_pixels():
    rng = np.random.default_rng(0)
    for shape in [(1, 1, 4), (3, 5, 4), (40, 33, 4)]:
        frame = rng.integers(0, 256, size=shape, dtype=np.uint8)
        assert np.array_equal(pixels(_png.encode_rgba(frame)), frame)


def test_png_frame_of_a_real_canvas():
    explorer = widgets.DecayExplorer()
    canvas = explorer.figure.canvas
    width, height = canvas.get_width_height(physical=True)
    assert pixels(explorer.image.value).shape == (height, width, 4)
    assert np.array_equal(pixels(_png.encode_rgba(canvas.buffer_rgba())), np.asarray(canvas.buffer_rgba()))


@pytest.mark.parametrize(
    "frame", [np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4, 4), np.float32), np.zeros((0, 4, 4), np.uint8)]
)
def test_png_encoder_rejects_what_is_not_an_rgba_frame(frame):
    with pytest.raises(ValueError, match=r"pixels must be a non-empty \(height, width, 4\) uint8 array, got"):
        _png.encode_rgba(frame)


# --- blitting --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", bench_notebooks.explorer_classes(widgets), ids=lambda cls: cls.__name__)
def test_blitted_frames_match_a_full_render(cls):
    """Every slider, moved away (new looks) and back (a cached background): the frame equals savefig's.

    Antialiased edges drawn twice (a spine over a blitted line) change a pixel by at most a quarter
    of its range; a stale background (old tick labels, an old colour bar) changes text pixels fully.
    """
    plots.use_style()
    explorer = build(cls)
    for name in bench_notebooks._sliders(explorer):
        control, direction = explorer.controls[name], 1
        start = control.value
        for _ in range(3):
            value, direction = bench_notebooks._next_value(control, direction)
            explorer.update(**{name: value})
        for shown in (value, start):
            frame = explorer.update(**{name: shown})
            difference = np.abs(pixels(frame) - pixels(full_render(explorer))).max(axis=2)
            assert (difference > 100).sum() == 0, (name, shown, int((difference > 100).sum()))


@pytest.mark.parametrize("cls", bench_notebooks.explorer_classes(widgets), ids=lambda cls: cls.__name__)
def test_an_update_that_keeps_the_look_renders_nothing_in_full(cls, monkeypatch):
    plots.use_style()
    explorer = build(cls)
    renders = count_background_renders(explorer, monkeypatch)
    assert explorer.update() == explorer.image.value
    assert renders == [], "the same values again: blitting over the cached background, no full render"


def test_backgrounds_are_rendered_once_per_look(monkeypatch):
    plots.use_style()
    explorer = build(widgets.PositionSimilarityExplorer)
    renders = count_background_renders(explorer, monkeypatch)
    for position in (101, 150, 400):
        explorer.update(position=position)  # the axes stay: blitted over the cached background
    assert renders == []
    explorer.update(window=128)
    explorer.update(position=10)
    assert len(renders) == 1  # a new x range: one full render, then blitting again
    explorer.update(window=64)
    assert len(renders) == 1  # the first window's background is still cached
    assert explorer._ax.get_xlim() == (-64.5, 64.5)


def test_every_word_order_gets_its_own_background(monkeypatch):
    plots.use_style()
    explorer = build(widgets.OrderExplorer)
    renders = count_background_renders(explorer, monkeypatch)
    words = explorer.state["words"]
    for rotate in range(len(words)):
        explorer.update(rotate=rotate)
        labels = [label.get_text() for label in explorer.axes[0].get_yticklabels()]
        assert labels == explorer.state["shown"]
    assert len(renders) == len(words) - 1  # the starting order was rendered at construction
    explorer.update(pe_strength=0.5)
    explorer.update(rotate=0)
    assert len(renders) == len(words) - 1


def test_background_cache_is_bounded(monkeypatch):
    plots.use_style()
    explorer = widgets.NaiveEncodingExplorer()
    monkeypatch.setattr(explorer, "BACKGROUNDS", 2)
    for encoding in widgets.NaiveEncodingExplorer.ENCODINGS:
        explorer.update(encoding=encoding)
    assert len(explorer._backgrounds) == 2
    renders = count_background_renders(explorer, monkeypatch)
    explorer.update(encoding=widgets.NaiveEncodingExplorer.ENCODINGS[-1])  # the most recent: kept
    assert renders == []
    explorer.update(encoding=widgets.NaiveEncodingExplorer.ENCODINGS[0])  # the oldest: dropped, rendered again
    assert len(renders) == 1


def test_fixed_axes_hold_while_the_length_slider_moves():
    explorer = widgets.NaiveEncodingExplorer(encoding="integer", length=8, max_length=64)
    heatmap, curve = explorer._heatmap_axes, explorer._curve_axes
    looks = []
    for length in (8, 40, 64):
        explorer.update(length=length)
        looks.append((heatmap.get_ylim(), curve.get_xlim(), curve.get_ylim(), explorer._image.get_clim()))
        assert explorer._image.get_array().shape == (length, 16)
    assert looks[0] == looks[1] == looks[2]
    assert looks[0][3] == (0.0, 63.0)  # integer: the colour scale of the longest table
    _, _, low, high = explorer._profile(explorer.table)
    assert looks[0][2][0] <= low.min() and high.max() <= looks[0][2][1]  # the longest table's curve fits


# --- layout ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
@pytest.mark.parametrize("cls", bench_notebooks.explorer_classes(widgets), ids=lambda cls: cls.__name__)
def test_explorers_fit_in_their_figure_in_both_styles(cls, lecture):
    """Nothing drawn (labels, titles, legends, read-outs) falls off the figure, also with the lecture fonts."""
    with matplotlib.rc_context():
        plots.use_style(lecture=lecture)
        explorer = build(cls)
        figure = explorer.figure
        for end in (0, -1):  # every slider at its lowest, then at its highest value (the longest titles)
            for name in bench_notebooks._sliders(explorer):
                explorer.update(**{name: slider_end(explorer.controls[name], end)})
            drawn = figure.get_tightbbox().transformed(figure.dpi_scale_trans)  # inches to pixels
            inside = (0, 0, figure.bbox.width, figure.bbox.height)
            assert drawn.x0 >= inside[0] - 1 and drawn.y0 >= inside[1] - 1, (end, drawn.extents, inside)
            assert drawn.x1 <= inside[2] + 1 and drawn.y1 <= inside[3] + 1, (end, drawn.extents, inside)
        width, height = figure.canvas.get_width_height(physical=True)
        assert pixels(explorer.image.value).shape[:2] == (height, width)


def slider_end(control, end):
    """The first (end=0) or last (end=-1) value of a slider."""
    if hasattr(control, "options"):
        return bench_notebooks.slider_options(control)[end]
    return (control.min, control.max)[end]
