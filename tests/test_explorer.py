"""pe_lib.explorer: blitted frames show what a full render shows, backgrounds are reused, PNG frames, a static
fallback (frame and text) in the display bundle; and every explorer of every chapter is found and built with its
notebook's defaults. Layout: no text overlaps another or leaves the figure in any state the controls reach, in
both styles and whatever the first look; HiDPI frames shown at the figure's CSS size."""

import base64
import html
import inspect
import io
import itertools
import re

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest
from PIL import Image
from test_figures import OVERLAP, text_problems

from pe_lib import _png, accessible, figures, findings
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
        "MethodsExplorer",
        "ALiBiExplorer",
        "ScalingExplorer",
        "ModelExplorer",
    } <= names
    for cls in EXPLORERS:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
        assert all(p.default is not p.empty for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))


def pixels(png):
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGBA")).astype(int)


def full_render(explorer):
    """The pixels savefig renders at the frames' dpi (PIXEL_RATIO x the style's), as raw RGBA: no PNG round trip."""
    buffer = io.BytesIO()
    explorer.figure.savefig(buffer, format="rgba", dpi=explorer.figure.dpi)
    width, height = explorer.figure.canvas.get_width_height(physical=True)
    return np.frombuffer(buffer.getvalue(), np.uint8).reshape(height, width, 4).astype(int)


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


IMG = re.compile(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)" width="(\d+)" height="(\d+)"')
CAPTION = re.compile(r"<figcaption[^>]*>(.*?)</figcaption></figure>")  # an explorer may add text after its figure


def bundle_img(bundle):
    """(PNG bytes, alt text, width, height) of the bundle's <img>."""
    data, alt, width, height = IMG.search(bundle["text/html"]).groups()
    return base64.b64decode(data, validate=True), html.unescape(alt), int(width), int(height)


def bundle_caption(bundle):
    """The caption under the bundle's frame ("" without one)."""
    found = CAPTION.search(bundle["text/html"])
    return html.unescape(found.group(1)) if found else ""


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_the_display_bundle_has_the_widget_its_frame_with_alt_text_and_a_line_of_text(cls):
    explorer = build(cls)
    bundle = explorer._repr_mimebundle_()
    # text/html: the only image output with alt text in JupyterLab and the book (explorer cells are NBVAL_IGNORE_OUTPUT)
    assert set(bundle) == {WIDGET_VIEW, "text/html", "text/plain"}
    assert bundle[WIDGET_VIEW]["model_id"] == explorer.widget.model_id
    png, alt, css_width, css_height = bundle_img(bundle)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and png == explorer.image.value
    width, height = explorer.figure.canvas.get_width_height(physical=True)
    assert pixels(png).shape == (height, width, 4)
    # A static page shows the HiDPI frame at its CSS size, as the live widget does.
    ratio = explorer.PIXEL_RATIO
    assert (css_width, css_height) == (round(width / ratio), round(height / ratio))
    # Two texts, each said once: the alt (the live image's title too) says what is drawn, the caption (under the
    # live image too) the finding; alt_text() holds both, for where only text can be shown.
    assert alt == explorer.description() == explorer.image.tooltip
    assert alt.startswith(f"Explorer ({cls.__name__}), controls: ") and "\n" not in alt
    caption = accessible.caption_text(explorer.finding())
    assert bundle_caption(bundle) == caption and (not caption or caption not in alt)
    assert html.unescape(re.sub("<[^>]+>", "", explorer.caption.value)) == caption  # under the live image
    assert explorer.alt_text() == " ".join(
        filter(None, (alt.split(". Figure")[0] + ".", caption, accessible.describe(explorer.figure)))
    )
    controls = ", ".join(explorer.controls)
    assert bundle["text/plain"] == (
        f"<{cls.__name__}: a live figure (controls: {controls}); run the notebook to move this>"
    )
    assert "\n" not in bundle["text/plain"] and "0x" not in bundle["text/plain"]

    name = slider_names(explorer)[0]
    value, _ = next_slider_value(explorer.controls[name], 1)
    frame = explorer.update(**{name: value})
    moved = explorer._repr_mimebundle_()
    moved_png, moved_alt, *_ = bundle_img(moved)
    assert frame != png and moved_png == frame  # the frame shown now, not the first one
    assert moved_alt != alt and moved_alt == explorer.image.tooltip  # the alt text follows the controls
    assert bundle_caption(moved) == accessible.caption_text(explorer.finding())  # and so does the caption
    assert moved["text/plain"] == bundle["text/plain"]  # the text line does not


def test_the_text_line_of_an_explorer():
    assert ch01.OrderExplorer()._repr_mimebundle_()["text/plain"] == (
        "<OrderExplorer: a live figure (controls: sentence, rotate, pe_strength); run the notebook to move this>"
    )


def test_ipython_displays_the_whole_bundle():
    """What a kernel sends for `explorer` as the last line of a cell: all three types, from the bundle."""
    from IPython.core.formatters import DisplayFormatter

    explorer = ch04.PendulumExplorer()
    data, _ = DisplayFormatter().format(explorer)
    assert set(data) == {WIDGET_VIEW, "text/html", "text/plain"}
    png, alt, width, height = bundle_img(data)
    assert png == explorer.image.value and alt == explorer.description()
    assert bundle_caption(data) == accessible.caption_text(explorer.finding()) != ""
    css = explorer.figure.get_size_inches() * explorer.figure.dpi / explorer.PIXEL_RATIO
    assert (width, height) == (round(css[0]), round(css[1]))
    assert data["text/plain"] == "<PendulumExplorer: a live figure (controls: position); run the notebook to move this>"


@pytest.fixture(scope="module")
def default_explorers():
    """Every explorer built once with its notebook's defaults, for the tests that only read it."""
    built = {cls: build(cls) for cls in EXPLORERS}
    yield built
    for explorer in built.values():
        explorer.close()


def test_every_control_is_labelled_and_named_in_the_alt_text(default_explorers):
    for cls, explorer in default_explorers.items():
        for name, control in explorer.controls.items():
            assert control.description.strip(), f"{cls.__name__}.{name} has no label"
            assert f"{control.description} = " in explorer.alt_text(), (cls.__name__, name)


def test_every_explorer_frame_has_a_finding_in_words(default_explorers):
    """The caption under each frame says what it shows, by series not colour, in words not code (pe_lib.findings)."""
    missing, flagged = set(), {}
    for cls, explorer in default_explorers.items():
        finding = explorer.finding()
        if not finding.strip():
            missing.add(cls.__name__)
        problems = findings.finding_problems(finding)
        if problems:
            flagged[cls.__name__] = problems
    assert not flagged, flagged
    assert not missing, f"explorers without a finding (issue 34: every frame has one): {sorted(missing)}"


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
            difference = np.abs(pixels(frame) - full_render(explorer)).max(axis=2)
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


# What a learner may type into a sentence box: 7 words, more words than the explorer takes, long words.
TYPED = (
    "the tiger kills the man and dog",
    "a lion and a tiger and a dog bit the man at dawn",
    "extraordinarily unpredictable transformations happen",
)
STATES = 24  # all combinations of the controls' choices up to this many; else each choice with the others at both ends


def control_choices(control):
    """The values to try for a control, read now (a slider's range may follow another control)."""
    if isinstance(control, widgets.Checkbox):
        return [False, True]
    if isinstance(control, widgets.Combobox):  # its options, and what a learner may type
        return list(dict.fromkeys([*control.options, *TYPED]))
    if isinstance(control, widgets.Text | widgets.Textarea):  # empty, and what a learner may type or paste
        return ["", *TYPED]
    if hasattr(control, "options"):  # Dropdown, SelectionSlider, ToggleButtons: every option
        return slider_values(control)
    if isinstance(control, widgets.IntSlider | widgets.FloatSlider):  # both ends and three steps between
        steps = round((control.max - control.min) / control.step)
        picks = sorted({round(steps * fraction) for fraction in (0, 0.25, 0.5, 0.75, 1)})
        values = [control.min + pick * control.step for pick in picks]
        return [int(v) for v in values] if isinstance(control, widgets.IntSlider) else [round(v, 10) for v in values]
    raise TypeError(f"no values to try for a {type(control).__name__}")


def reachable_states(explorer):
    """States as one fraction per control (0: first choice, 1: last), since a range may follow another control.

    All combinations when there are at most STATES; else every choice of each control with the others
    at their first, then at their last choices (2 x the number of choices, at most).
    """
    sizes = [len(control_choices(control)) for control in explorer.controls.values()]
    grids = [np.linspace(0, 1, size) if size > 1 else np.zeros(1) for size in sizes]
    if np.prod(sizes) <= STATES:
        return list(itertools.product(*grids))
    states = []
    for end in (0.0, 1.0):
        for index, grid in enumerate(grids):
            for fraction in grid:
                state = tuple(fraction if i == index else end for i in range(len(grids)))
                states.append(state)
    return list(dict.fromkeys(states))


def show_state(explorer, state):
    """Move the controls, in order, to a state of `reachable_states`; returns the values shown."""
    for (name, control), fraction in zip(explorer.controls.items(), state, strict=True):
        choices = control_choices(control)
        value = choices[round(fraction * (len(choices) - 1))]
        if control.value != value:
            explorer.update(**{name: value})
    return explorer.values()


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_no_text_overlaps_another_or_leaves_the_figure_in_any_state(cls, lecture):
    """Titles, axis and tick labels, colour-bar labels, legends and read-outs, in every state the controls reach.

    Each control goes through all its options (both ends and three steps between for a number, typed
    sentences for a text box); measured with the renderer's extents (rotated labels as turned boxes),
    in both styles. Nothing else drawn (a legend's frame, a line) falls off the figure either.
    """
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        explorer = build(cls)
        figure = explorer.figure
        found = {}
        for state in reachable_states(explorer):
            values = show_state(explorer, state)
            for problem in text_problems(figure, OVERLAP * explorer.PIXEL_RATIO):
                found.setdefault(problem, values)
            if set(state) - {0.0, 1.0}:
                continue  # everything drawn, not only the texts: with the controls at their ends
            drawn = figure.get_tightbbox().transformed(figure.dpi_scale_trans)  # inches to pixels
            slack = OVERLAP * explorer.PIXEL_RATIO
            low, high = min(drawn.x0, drawn.y0), max(drawn.x1 - figure.bbox.width, drawn.y1 - figure.bbox.height)
            if low < -slack or high > slack:
                found.setdefault(f"something drawn leaves the figure: {drawn.extents.round()}", values)
        assert not found, "\n".join(f"{problem} at {values}" for problem, values in found.items())
        width, height = figure.canvas.get_width_height(physical=True)
        assert pixels(explorer.image.value).shape[:2] == (height, width)


def _scaled_dropout_input(scale):
    return scale * ch06.DropoutExplorer().x.numpy()  # other numbers than the default's: other tick labels


# First looks other than the defaults': the notebooks' own (02 starts at binary, 64) and the narrowest ones.
FIRST_LOOKS = {
    "NaiveEncodingExplorer(binary, 64)": lambda: ch02.NaiveEncodingExplorer(encoding="binary", length=64),
    "CollisionExplorer(base 2, d_model 4)": lambda: ch03.CollisionExplorer(base=2, d_model=4),
    "PositionSimilarityExplorer(window 8)": lambda: ch05.PositionSimilarityExplorer(window=8),
    "NormShareExplorer(d_model 8)": lambda: ch06.NormShareExplorer(d_model=8),
    "DropoutExplorer(x * 3)": lambda: ch06.DropoutExplorer(_scaled_dropout_input(3.0)),
    "DropoutExplorer(x * 0.3)": lambda: ch06.DropoutExplorer(_scaled_dropout_input(0.3), p=0.9),
}


@pytest.mark.parametrize("lecture", [False, True], ids=["notebook-style", "lecture-style"])
@pytest.mark.parametrize("start", FIRST_LOOKS)
def test_the_layout_holds_every_look_whatever_the_first_one(start, lecture):
    """The layout is computed for the first look shown: it must hold the later ones' wider tick labels too.

    Measured before the fix: 02 started at binary put the similarity axis' label on the colour bar's
    label as soon as the integer encoding was picked (by 9-18 pixels), and so did 03 at d_model 32
    and 06's dropout explorer with the notebook's sentence.
    """
    with matplotlib.rc_context():
        figures.use_style(lecture=lecture)
        explorer = FIRST_LOOKS[start]()
        first, found = explorer.values(), {}
        for name, control in explorer.controls.items():  # one control at a time, the others as they started
            for value in control_choices(control):
                explorer.update(**{name: value})
                for problem in text_problems(explorer.figure, OVERLAP * explorer.PIXEL_RATIO):
                    found.setdefault(problem, explorer.values())
            explorer.update(**{name: first[name]})
        assert not found, "\n".join(f"{problem} at {values}" for problem, values in found.items())


def test_a_look_that_needs_more_room_lays_the_figure_out_again_once(monkeypatch):
    """A typed sentence with long words: the panels make room for its labels, then keep that layout."""
    figures.use_style()
    explorer = build(ch01.OrderExplorer)
    before = [ax.get_position().bounds for ax in explorer.figure.axes]
    for rotate in range(5):  # the offered sentences' looks were measured when the explorer was built
        explorer.update(rotate=rotate)
    assert [ax.get_position().bounds for ax in explorer.figure.axes] == before
    explorer.update(sentence="unpredictable transformations", rotate=0)
    after = [ax.get_position().bounds for ax in explorer.figure.axes]
    assert after != before and after[0][0] > before[0][0]  # wider word labels on the left
    assert len(explorer._backgrounds) == 1  # the old layout's backgrounds are gone
    renders = count_background_renders(explorer, monkeypatch)
    explorer.update(sentence="the dog bit the man")  # fits the new layout: no layout pass, a cached look
    explorer.update(sentence="unpredictable transformations")
    assert [ax.get_position().bounds for ax in explorer.figure.axes] == after
    assert len(renders) == 1  # the first sentence's background, rendered again for the new layout


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_frames_are_sharp_on_hidpi_screens_and_keep_their_aspect_ratio(cls):
    """PIXEL_RATIO frame pixels per CSS pixel; the image is as wide as the figure in CSS pixels, never stretched."""
    explorer = build(cls)
    figure, ratio = explorer.figure, explorer.PIXEL_RATIO
    width, height = figure.canvas.get_width_height(physical=True)
    assert pixels(explorer.image.value).shape[:2] == (height, width)
    css_width, css_height = figure.get_size_inches() * figure.dpi / ratio  # inches at the style's dpi
    assert explorer.css_size() == pytest.approx((css_width, css_height), abs=1)
    layout = explorer.image.layout
    assert layout.width == f"{width / ratio:g}px" and layout.height == "auto" and layout.max_width == "100%"
    assert explorer.widget.children[0].layout.flex_flow == "row wrap"  # the controls wrap on a narrow page
    frame = explorer.update()
    assert pixels(frame).shape[:2] == (height, width)


def test_a_frame_has_twice_the_pixels_of_the_figure_at_its_style_dpi():
    with matplotlib.rc_context():
        figures.use_style()
        explorer = ch04.DecayExplorer()
        assert explorer.PIXEL_RATIO == 2 and explorer.figure.dpi == 2 * matplotlib.rcParams["figure.dpi"]
        buffer = io.BytesIO()
        explorer.figure.savefig(buffer, format="png")  # savefig keeps the style's dpi
        assert pixels(buffer.getvalue()).shape[1] * 2 == pixels(explorer.image.value).shape[1]


# --- memory: an explorer that is dropped, closed or re-run is freed ----------------------------


def _open_widgets():
    from ipywidgets.widgets.widget import _instances

    return len(_instances)


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda cls: cls.__name__)
def test_an_explorer_nobody_references_is_freed_with_its_widgets_and_figure(cls):
    import gc
    import weakref

    import matplotlib.pyplot as plt

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
