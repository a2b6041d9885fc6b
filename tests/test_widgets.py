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
    """Wrap the canvas's draw (a full render, used only for a new background); returns the call log."""
    calls = []
    canvas = explorer.figure.canvas
    draw = canvas.draw
    monkeypatch.setattr(canvas, "draw", lambda *args, **kwargs: (calls.append(1), draw(*args, **kwargs))[1])
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
