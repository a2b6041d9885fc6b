"""pe_lib.explorer: blitted frames show what a full render shows, backgrounds are reused, PNG frames, a static
fallback (frame and text) in the display bundle; and every explorer of every chapter is found and built with its
notebook's defaults."""

import base64
import inspect
import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from pe_lib import _png, figures
from pe_lib import ch01_order as ch01
from pe_lib import ch02_naive as ch02
from pe_lib import ch03_sinusoidal as ch03
from pe_lib import ch04_pendulum as ch04
from pe_lib import ch05_learned as ch05
from pe_lib import ch06_pipeline as ch06
from pe_lib.explorer import explorer_classes, next_slider_value, slider_names, slider_values

EXPLORERS = explorer_classes()


def build(cls):
    return cls()  # every explorer has its notebook's defaults


def test_every_chapter_explorer_is_found_and_needs_no_arguments():
    names = {cls.__name__ for cls in EXPLORERS}
    assert {
        "OrderExplorer",
        "NaiveEncodingExplorer",
        "CollisionExplorer",
        "PendulumExplorer",
        "DecayExplorer",
        "PositionSimilarityExplorer",
        "NormShareExplorer",
        "DropoutExplorer",
    } <= names
    for cls in EXPLORERS:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert all(p.default is not p.empty for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


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
    explorer = ch04.DecayExplorer()
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


# --- display bundle: the live widget, and a frame and a line of text for pages without a kernel ----


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def bundle_png(bundle):
    return base64.b64decode(bundle["image/png"], validate=True)


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_the_display_bundle_has_the_widget_its_frame_and_a_line_of_text(cls):
    explorer = build(cls)
    bundle = explorer._repr_mimebundle_()
    assert set(bundle) == {WIDGET_VIEW, "image/png", "text/plain"}  # no text/html: nbval would compare it
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id
    png = bundle_png(bundle)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png == explorer.image.value
    width, height = explorer.figure.canvas.get_width_height(physical=True)
    assert pixels(png).shape == (height, width, 4)
    controls = ", ".join(explorer.controls)
    assert bundle["text/plain"] == (
        f"<{cls.__name__}: a live figure (controls: {controls}); run the notebook to move this>"
    )
    assert "\n" not in bundle["text/plain"] and "0x" not in bundle["text/plain"]

    name = slider_names(explorer)[0]
    value, _ = next_slider_value(explorer.controls[name], 1)
    frame = explorer.update(**{name: value})
    moved = explorer._repr_mimebundle_()
    assert frame != png and bundle_png(moved) == frame  # the frame shown now, not the first one
    assert moved["text/plain"] == bundle["text/plain"]  # the text does not follow the controls: nbval compares it


def test_the_text_line_of_an_explorer():
    assert ch01.OrderExplorer()._repr_mimebundle_()["text/plain"] == (
        "<OrderExplorer: a live figure (controls: sentence, rotate, pe_strength); run the notebook to move this>"
    )


def test_ipython_displays_the_whole_bundle():
    """What a kernel sends for `explorer` as the last line of a cell: all three types, from the bundle."""
    from IPython.core.formatters import DisplayFormatter

    explorer = ch04.PendulumExplorer()
    data, _ = DisplayFormatter().format(explorer)
    assert set(data) == {WIDGET_VIEW, "image/png", "text/plain"}
    assert bundle_png(data) == explorer.image.value
    assert data["text/plain"] == "<PendulumExplorer: a live figure (controls: position); run the notebook to move this>"


def test_a_closed_explorer_displays_as_text_only():
    explorer = ch04.DecayExplorer()
    explorer.close()
    assert explorer._repr_mimebundle_() == {"text/plain": "<DecayExplorer (closed): run its cell again for a live one>"}


# --- blitting --------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_blitted_frames_match_a_full_render(cls):
    """Every slider, moved away (new looks) and back (a cached background): the frame equals savefig's.

    Antialiased edges drawn twice (a spine over a blitted line) change a pixel by at most a quarter
    of its range; a stale background (old tick labels, an old colour bar) changes text pixels fully.
    """
    figures.use_style()
    explorer = build(cls)
    for name in slider_names(explorer):
        control, direction = explorer.controls[name], 1
        start = control.value
        for _ in range(3):
            value, direction = next_slider_value(control, direction)
            explorer.update(**{name: value})
        for shown in (value, start):
            frame = explorer.update(**{name: shown})
            difference = np.abs(pixels(frame) - pixels(full_render(explorer))).max(axis=2)
            assert (difference > 100).sum() == 0, (name, shown, int((difference > 100).sum()))


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_an_update_that_keeps_the_look_renders_nothing_in_full(cls, monkeypatch):
    figures.use_style()
    explorer = build(cls)
    renders = count_background_renders(explorer, monkeypatch)
    assert explorer.update() == explorer.image.value
    assert renders == [], "the same values again: blitting over the cached background, no full render"


def test_backgrounds_are_rendered_once_per_look(monkeypatch):
    figures.use_style()
    explorer = build(ch05.PositionSimilarityExplorer)
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
    figures.use_style()
    explorer = build(ch01.OrderExplorer)
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
    figures.use_style()
    explorer = ch02.NaiveEncodingExplorer()
    monkeypatch.setattr(explorer, "BACKGROUNDS", 2)
    for encoding in ch02.NaiveEncodingExplorer.ENCODINGS:
        explorer.update(encoding=encoding)
    assert len(explorer._backgrounds) == 2
    renders = count_background_renders(explorer, monkeypatch)
    explorer.update(encoding=ch02.NaiveEncodingExplorer.ENCODINGS[-1])  # the most recent: kept
    assert renders == []
    explorer.update(encoding=ch02.NaiveEncodingExplorer.ENCODINGS[0])  # the oldest: dropped, rendered again
    assert len(renders) == 1


def test_fixed_axes_hold_while_the_length_slider_moves():
    explorer = ch02.NaiveEncodingExplorer(encoding="integer", length=8, max_length=64)
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
@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_explorers_fit_in_their_figure_in_both_styles(cls, lecture):
    """Nothing drawn (labels, titles, legends, read-outs) falls off the figure, also with the lecture fonts."""
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        explorer = build(cls)
        figure = explorer.figure
        for end in (0, -1):  # every slider at its lowest, then at its highest value (the longest titles)
            for name in slider_names(explorer):
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
        return slider_values(control)[end]
    return (control.min, control.max)[end]


# --- memory: an explorer that is dropped, closed or re-run is freed ----------------------------


def _open_widgets():
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_an_explorer_nobody_references_is_freed_with_its_widgets_and_figure(cls):
    import gc
    import weakref

    import matplotlib.pyplot as plt

    build(cls)  # the first build warms caches (fonts, data) that are kept on purpose
    gc.collect()
    widgets_before, figures_before = _open_widgets(), len(plt.get_fignums())
    explorer = build(cls)
    explorer.update()  # a frame rendered, a background cached
    ref = weakref.ref(explorer)
    del explorer
    gc.collect()
    assert ref() is None, f"{cls.__name__} is still referenced after del: {gc.get_referrers(ref())[:3]}"
    assert _open_widgets() == widgets_before
    assert len(plt.get_fignums()) == figures_before


def test_close_frees_the_figure_and_widgets_and_is_final():
    import gc
    import weakref

    explorer = ch02.NaiveEncodingExplorer()
    figure = weakref.ref(explorer.figure)
    widgets_before = _open_widgets()
    explorer.close()
    explorer.close()  # a second close does nothing
    gc.collect()  # a figure and its artists refer to each other: a cycle
    assert explorer.closed and figure() is None
    assert _open_widgets() < widgets_before
    with pytest.raises(RuntimeError, match="was closed"):
        explorer.update()


def test_rerunning_a_cell_closes_what_its_previous_run_built(monkeypatch):
    from pe_lib import explorer as explorer_module

    runs = iter([("cell-a", 1), ("cell-a", 1), ("cell-b", 2), ("cell-a", 3)])
    monkeypatch.setattr(explorer_module, "_current_cell", lambda: next(runs))
    monkeypatch.setattr(explorer_module, "_BY_CELL", {})
    first, second = ch04.PendulumExplorer(), ch04.DecayExplorer()  # one run of cell a builds two
    other = ch04.DecayExplorer()  # cell b
    assert not (first.closed or second.closed or other.closed)
    again = ch04.PendulumExplorer()  # cell a runs again
    assert first.closed and second.closed and not other.closed and not again.closed


def test_twelve_reruns_of_an_explorer_cell_keep_one_figure_alive(monkeypatch):
    """As in a kernel: IPython's output history keeps every explorer a cell displayed, and the cell is re-run.

    Measured before close() existed: 12 re-runs of this cell kept 83 MiB (12 figures with their cached
    frames); now the closed explorers are empty shells and one figure lives.
    """
    import gc

    from matplotlib.figure import Figure

    from pe_lib import explorer as explorer_module

    runs = iter(("cell", run) for run in range(100))
    monkeypatch.setattr(explorer_module, "_current_cell", lambda: next(runs))
    monkeypatch.setattr(explorer_module, "_BY_CELL", {})
    gc.collect()
    figures_before = sum(type(o) is Figure for o in gc.get_objects())
    history = []  # IPython's Out[]
    for _ in range(12):
        history.append(ch03.CollisionExplorer())
        history[-1].update(d_model=64)  # a second look: a second cached background
    gc.collect()
    assert all(old.closed for old in history[:-1]) and not history[-1].closed
    assert sum(type(o) is Figure for o in gc.get_objects()) == figures_before + 1


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("d_model", 48, "must be one of"),
        ("position", 5000, "from 0 to 2047"),
        ("position", -1, "from 0 to 2047"),
        ("position", 2.5, "from 0 to 2047"),
        ("base", "10000", "must be one of"),
    ],
)
def test_update_refuses_a_value_its_control_cannot_take(name, value, message):
    explorer = ch03.CollisionExplorer()
    with pytest.raises(ValueError, match=message) as raised:
        explorer.update(**{name: value})
    assert name in str(raised.value) and repr(value) in str(raised.value)


def test_a_control_the_learner_keeps_does_not_keep_its_explorer_alive():
    """The control's callback holds the explorer weakly: dropping the explorer frees it and closes the control."""
    import gc
    import weakref

    explorer = ch04.PendulumExplorer()
    slider = explorer.controls["position"]  # e.g. `slider = explorer.controls["position"]` in a cell
    ref = weakref.ref(explorer)
    del explorer
    gc.collect()
    assert ref() is None
    assert slider.comm is None  # closed by the finalizer
    slider.value = 5  # a callback after the explorer is gone does nothing


def test_update_refuses_a_bool_for_a_slider_option_one():
    """True == 1: without a check, True would pass for the option 1 of a SelectionSlider."""
    explorer = ch06.NormShareExplorer(d_models=(1, 8), d_model=8)
    with pytest.raises(ValueError, match=r"d_model must be one of \[1, 8\], got True"):
        explorer.update(d_model=True)
    explorer.update(d_model=1)
    assert explorer.values()["d_model"] == 1
