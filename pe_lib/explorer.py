"""The base of every interactive explorer (ipywidgets): one figure, its controls, fast frames.

An explorer owns one matplotlib figure and its artists. Moving a control calls `update`,
which changes the artists' data in place and re-renders the figure into an Image widget:
no figure is rebuilt. An explorer that lists the artists it changes (`animated_artists`) is
blitted: the rest of the figure (axes, ticks, colour bars) is rendered once and cached, and
an update redraws only those artists over the cached background. Text is most of the cost
of a render, so the explorers keep their axes fixed while a slider moves; where a control
must change the axes (a new window, a new word order), `draw` returns a key for that look
and each look's background is rendered once, then reused.
The layout (constrained layout, if the figure has one) is computed once, at the first render,
and then kept: it holds the decorations of the current look and of every look `layout_values`
lists, and a look seen later that needs more room (wider tick labels, a longer typed word)
lays the figure out again once. Frames are rendered at PIXEL_RATIO times the figure's dpi and
shown at the figure's size in CSS pixels, so they are sharp on HiDPI screens; the image keeps
its aspect ratio and shrinks with a narrow notebook, and the controls row wraps.
Display an explorer by leaving it as the last expression of a cell. Every explorer can be
built with no arguments (the notebook's defaults); `explorer_classes()` finds them all.
Its display bundle also holds its current frame as a <figure> and a line of text, so that a page without a
live kernel (GitHub, nbviewer, the book) shows the figure instead of `VBox(...)`. As for a static figure
(pe_lib.accessible.show), two texts are each said once: `finding()` (the subclass's: what the frame shows now)
is a visible caption under the image, updated with every frame; `description()` (the controls' values, what
the figure draws) is the image's title (a screen reader's name for an image without alt) and the frame's alt.
"""

import collections
import html
import numbers
import weakref

import ipywidgets as widgets
import matplotlib.pyplot as plt
import traitlets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.layout_engine import PlaceHolderLayoutEngine

from . import _png, _validate
from .accessible import caption_text, describe, figure_html
from .figures import decoration_margins, freeze_layout, widest_margins


class Explorer:
    """Base class: subclasses build a figure and its controls and implement `draw(**values)`.

    controls: dict name -> ipywidgets control; each value is passed to `draw` by its name.
    extras: more widgets for the controls row that are not passed to `draw` (e.g. a Play button
    linked to a slider).
    """

    BACKGROUNDS = 16  # rendered backgrounds kept per explorer, at most...
    BACKGROUND_BYTES = 64 * 2**20  # ...and at most this many bytes of them (a 2x frame is 4-8 MB)
    # Frame pixels per CSS pixel: 2 is sharp on HiDPI screens (and downsampled cleanly on others). Measured
    # with benchmarks/bench_notebooks.py on 2 CPUs, a median update takes 14-35 ms at 2x in the notebook style
    # and 21-61 ms in the lecture style (8-27 and 12-26 ms at 1x): every explorer stays under 100 ms.
    PIXEL_RATIO = 2
    ROOM_TOLERANCE = 0.5  # pixels a new look's decorations may exceed the layout's room without a new layout

    def __init__(self, figure, controls, *, extras=()):
        self.figure = figure
        self.controls = dict(controls)
        # The figure's sizes and fonts were chosen at its dpi (the style's): that many CSS pixels per
        # inch. Frames are rendered with PIXEL_RATIO times as many pixels and shown at the CSS size.
        plt.close(figure)  # shown through the Image widget only, not again by the inline backend (resets the dpi)
        FigureCanvasAgg(figure)  # blitting needs Agg's buffer
        self._css_dpi = figure.dpi
        figure.set_dpi(self._css_dpi * self.PIXEL_RATIO)  # savefig(dpi="figure") keeps the style's dpi
        # height auto and max-width 100%: the image keeps its aspect ratio, also where the page is narrower.
        self.image = _TitledImage(format="png", layout=widgets.Layout(height="auto", max_width="100%"))
        self.image.add_class("pe-explorer-figure")
        # The finding, shown under the figure for every reader (not in the image's title: said once).
        self.caption = widgets.HTML(value="", layout=widgets.Layout(max_width="100%"))  # then the figure's width
        self.caption.add_class("pe-explorer-caption")
        self._holding = False
        self._laid_out = False
        self._layout_engine = None  # kept to lay the figure out again when a new look needs more room
        self._room = {}  # axes -> the room (left, bottom, right, top) in pixels the layout holds for its decorations
        self._measured = set()  # static keys whose decorations were measured against that room
        # rendered figures without their animated artists (blitting), by (static key, artists, size)
        self._backgrounds = collections.OrderedDict()
        # The controls call back through a weak reference: ipywidgets keeps every open widget in a
        # registry, and a bound method there would keep this explorer (figure, backgrounds) alive for ever.
        on_change = _redraw_through(weakref.ref(self))
        for control in self.controls.values():
            control.observe(on_change, names="value")
        controls_row = widgets.HBox([*extras, *self.controls.values()], layout=widgets.Layout(flex_flow="row wrap"))
        self.widget = widgets.VBox([controls_row, self.image, self.caption])
        self.widget.add_class("pe-explorer")
        # Every widget this explorer made (also links and buttons a subclass keeps), closed when it is freed.
        kept = [value for value in vars(self).values() if _is_widget(value)]
        owned = [self.widget, *_widget_tree(self.widget), *kept, *(w for value in kept for w in _widget_tree(value))]
        self._finalizer = weakref.finalize(self, _close_widgets, list({id(w): w for w in owned}.values()))
        _forget_the_cells_previous_explorers(self)
        self.update()

    def close(self):
        """Close the widgets, drop the figure and the cached frames; the explorer cannot be used after this.

        Re-running a notebook cell closes the explorers the cell built before, so a kernel does not
        grow with every re-run (the old object stays in IPython's output history, as an empty shell).
        """
        finalizer = self.__dict__.get("_finalizer")
        if finalizer is not None:
            finalizer()  # closes the widgets once; later calls do nothing
        self.__dict__.clear()  # the figure, its artists and the backgrounds go with it
        self._closed = True

    @property
    def closed(self):
        return self.__dict__.get("_closed", False)

    def values(self):
        return {name: control.value for name, control in self.controls.items()}

    def draw(self, **values):
        """Change the figure's artists for these control values.

        Return a key (any hashable) for how everything outside `animated_artists()` now looks
        (axis limits, tick labels, a colour bar's range): the background rendered for a key is
        reused whenever the key comes back, so the key must change whenever that look does.
        None, the default, says the rest of the figure never changes.
        """
        raise NotImplementedError

    def animated_artists(self):
        """The artists `draw` changes; empty (the default) renders the whole figure on every update."""
        return ()

    def layout_values(self):
        """Control values (dicts, the other controls as they are) whose looks the first layout makes room for.

        List the looks with the widest decorations (tick labels, a colour bar's range, a read-out
        beside the axes) that are not the first one, so that the layout need not change later. A look
        not listed that needs more room gets a new layout when it is first shown. Empty by default.
        """
        return ()

    def finding(self):
        """What the current frame shows, in words and numbers, for its alt text; "" (the default) adds nothing."""
        return ""

    def _controls_text(self):
        values = ", ".join(
            f"{_control_label(name, control)} = {_control_text(control)}" for name, control in self.controls.items()
        )
        return f"Explorer ({type(self).__name__}), controls: {values}."

    def description(self):
        """The frame's alt text (the live image's title): the controls' values and what the figure draws now."""
        return f"{self._controls_text()} {describe(self.figure)}"

    def alt_text(self):
        """The whole frame in text: the controls' values, the finding (the caption), what the figure draws."""
        return " ".join(filter(None, (self._controls_text(), caption_text(self.finding()), describe(self.figure))))

    def frame_html(self):
        """The current frame as a static page shows it: <figure>, the <img> with `description()` as its alt
        and the finding as its caption (pe_lib.accessible.figure_html). Keep it to show a state after the
        controls have moved on (`HTML(explorer.frame_html())`)."""
        caption = caption_text(self.finding())
        return figure_html(self.image.value, self.description(), *self.css_size(), caption)

    def css_size(self):
        """(width, height) at which the frame is shown, in CSS pixels: the figure's size at its style's dpi."""
        width, height = self.figure.canvas.get_width_height(physical=True)
        return width / self.PIXEL_RATIO, height / self.PIXEL_RATIO

    def update(self, **values):
        """Set any controls given, in the order given, then redraw and re-render once; returns the PNG bytes.

        A value a control cannot take (outside a slider's range, not among its options) is an
        error that names the control and what it allows (ipywidgets would clamp it silently), and
        leaves every control as it was. Each value is checked after the ones before it are set: a
        control's range may follow another control (a longer sentence, more rotations).
        """
        if self.closed:
            raise RuntimeError(f"this {type(self).__name__} was closed: build a new one")
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this explorer has {sorted(self.controls)}")
        before = self.values()
        self._holding = True  # one render for all the values, not one per control
        try:
            try:
                for name, value in values.items():
                    _check_control_value(name, self.controls[name], value)
                    self.controls[name].value = value
            except ValueError:
                for name, value in before.items():
                    self.controls[name].value = value
                raise
        finally:
            self._holding = False
        self._render()
        return self.image.value

    def _render(self):
        static_key = self.draw(**self.values())
        alt = self.description()
        if self.image.tooltip != alt:
            self.image.tooltip = alt
        caption = _caption_html(self.finding())
        if self.caption.value != caption:
            self.caption.value = caption
        canvas = self.figure.canvas
        if not isinstance(canvas, FigureCanvasAgg):  # e.g. a bare FigureCanvasBase: blitting needs Agg's buffer
            canvas = FigureCanvasAgg(self.figure)
        if self.figure.dpi != self._css_dpi * self.PIXEL_RATIO:  # e.g. reset by pyplot with a new canvas
            self.figure.set_dpi(self._css_dpi * self.PIXEL_RATIO)
        if not self._laid_out:
            self._laid_out = True
            self._lay_out(static_key)
        elif self._layout_engine is not None and static_key not in self._measured:
            self._make_room(static_key)
        width = f"{self.css_size()[0]:g}px"  # the height follows (auto): the aspect ratio is kept
        if self.image.layout.width != width:
            self.image.layout.width = width
            self.caption.layout.max_width = width  # the caption wraps under the figure, as a static one does
        artists = list(self.animated_artists())
        # The axes' spines sit above their data (images, lines at the edge): draw them again on top.
        for ax in dict.fromkeys(artist.axes for artist in artists if artist.axes is not None and artist.axes.axison):
            artists += [spine for spine in ax.spines.values() if spine.get_visible()]
        artists.sort(key=lambda artist: artist.get_zorder())
        if not artists:
            canvas.draw()  # at the figure's dpi, uncropped, whatever the savefig rcParams say
            self.image.value = _png.encode_rgba(canvas.buffer_rgba())
            return
        # A background leaves out exactly these artists, at this size.
        key = (static_key, tuple(artists), self.figure.dpi, canvas.get_width_height(physical=True))
        background = self._backgrounds.get(key)
        if background is None:
            # Render everything but the animated artists and keep that. The flag is only set for
            # this draw, so figure.savefig still shows the whole figure.
            for artist in artists:
                artist.set_animated(True)
            try:
                canvas.draw()
            finally:
                for artist in artists:
                    artist.set_animated(False)
            self._backgrounds[key] = canvas.copy_from_bbox(self.figure.bbox)
            while len(self._backgrounds) > self._backgrounds_kept(canvas):
                self._backgrounds.popitem(last=False)  # the least recently used
        else:
            self._backgrounds.move_to_end(key)
            canvas.restore_region(background)  # the whole figure: no stale pixels from the last frame
        for artist in artists:
            self.figure.draw_artist(artist)
        self.image.value = _png.encode_rgba(canvas.buffer_rgba())

    def _backgrounds_kept(self, canvas):
        width, height = canvas.get_width_height(physical=True)
        return max(1, min(self.BACKGROUNDS, self.BACKGROUND_BYTES // (4 * width * height)))

    def _lay_out(self, static_key):
        """Lay the figure out once, with room for the decorations of this look and of `layout_values`' looks.

        Only a figure with a layout engine; in the current style (the lecture fonts are larger). The
        layout is then kept: a layout pass costs more than a frame.
        """
        engine = self.figure.get_layout_engine()
        if engine is None or isinstance(engine, PlaceHolderLayoutEngine):
            return  # no engine, or laid out and frozen already (figures.freeze_layout)
        shown = self.values()
        looks = [{**shown, **look} for look in self.layout_values()]
        for look in looks:
            self._measured.add(self.draw(**look))
            self._room = widest_margins(self._room, decoration_margins(self.figure))
        if looks:
            static_key = self.draw(**shown)  # back to the look shown
        self._measured.add(static_key)
        self._room = widest_margins(self._room, decoration_margins(self.figure))
        self._layout_engine = engine
        freeze_layout(self.figure, self._room)

    def _make_room(self, static_key):
        """A look shown for the first time: if its decorations need more room than the layout holds, lay out again."""
        if len(self._measured) > 4096:  # e.g. many typed sentences: measuring one again costs little
            self._measured.clear()
        self._measured.add(static_key)
        needed = decoration_margins(self.figure)
        if all(
            new <= held + self.ROOM_TOLERANCE
            for axes, sides in needed.items()
            for new, held in zip(sides, self._room.get(axes, (float("-inf"),) * 4), strict=True)
        ):
            return
        self._room = widest_margins(self._room, needed)
        self.figure.set_layout_engine(self._layout_engine)
        freeze_layout(self.figure, self._room)
        self._backgrounds.clear()  # rendered with the old layout

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, with its current frame and a line of text for where no widget can run.

        A front end with a live kernel (JupyterLab, Notebook, VS Code) shows the widget view, the
        richest type it knows; a static page (GitHub, nbviewer, the book) shows the frame as an
        <img> with its alt text (`description()`) and the finding as its caption (text/html: the only
        image output that carries alt text in both JupyterLab and the book), at its CSS size (the frame
        has PIXEL_RATIO times as many pixels); a terminal shows the text, which is deterministic.
        Explorer cells are NBVAL_IGNORE_OUTPUT.
        """
        if self.closed:  # e.g. an old Out[] entry of a cell that ran again: nothing left to show
            return {"text/plain": f"<{type(self).__name__} (closed): run its cell again for a live one>"}
        bundle = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        if self.image.value:
            bundle["text/html"] = self.frame_html()
        bundle["text/plain"] = _static_text(self)
        return bundle


class _TitledImage(widgets.Image):
    """An Image widget whose `tooltip` becomes the <img>'s title attribute: its name for a screen reader.

    ipywidgets' views set the title from `tooltip` only when the model's `description` is empty;
    Image has no description, so this one syncs an empty one (ipywidgets 8.1).
    """

    description = traitlets.Unicode("").tag(sync=True)


def _caption_html(finding):
    """The live caption: the finding as a paragraph in the page's body text (JupyterLab's content font, also in
    the slides), not in the widgets' 28 px lines; "" without a finding. ipywidgets' HTML typesets $...$."""
    caption = caption_text(finding)
    style = "margin: 0.3em 0 0; line-height: 1.5; font-size: var(--jp-content-font-size1, 14px)"
    return f'<p style="{style}">{html.escape(caption)}</p>' if caption else ""


def _control_label(name, control):
    return getattr(control, "description", "") or name


def _control_text(control):
    if isinstance(control, widgets.SelectionSlider | widgets.Dropdown | widgets.ToggleButtons):
        return str(control.label or control.value)
    if isinstance(control, widgets.Checkbox):
        return "on" if control.value else "off"
    if isinstance(control, widgets.FloatSlider):
        return f"{control.value:.{max(0, -int(f'{control.step:e}'.split('e')[1]))}f}"
    return str(control.value)


def _static_text(explorer):
    """The text/plain of `explorer`: shown where neither the widget nor its PNG frame can be (a terminal)."""
    controls = ", ".join(explorer.controls)
    return f"<{type(explorer).__name__}: a live figure (controls: {controls}); run the notebook to move this>"


def _redraw_through(explorer_ref):
    """A control callback that redraws the explorer if it still exists (it holds no strong reference)."""

    def on_change(_change):
        explorer = explorer_ref()
        if explorer is not None and not explorer.closed and not explorer._holding:
            explorer._render()

    return on_change


def _is_widget(value):
    return isinstance(value, widgets.Widget)


def _widget_tree(widget):
    """Every widget below `widget`, with the layout and style widgets ipywidgets makes for each one."""
    found = []
    for child in (*getattr(widget, "children", ()), getattr(widget, "layout", None), getattr(widget, "style", None)):
        if _is_widget(child):
            found += [child, *_widget_tree(child)]
    return found


def _close_widgets(owned):
    for widget in owned:
        widget.close()


# Explorers built by each notebook cell, by the cell's id in the front end, with the run that built them.
_BY_CELL = {}


def _current_cell():
    """(cell id, execution count) of the notebook cell running now, or None outside a Jupyter kernel."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    cell_id = kernel.get_parent().get("metadata", {}).get("cellId")
    return None if cell_id is None else (cell_id, shell.execution_count)


def _forget_the_cells_previous_explorers(explorer):
    """When a cell runs again, close what its earlier run built: the kernel keeps one set per cell."""
    current = _current_cell()
    if current is None:
        return
    cell_id, run = current
    previous_run, built = _BY_CELL.get(cell_id, (run, []))
    if previous_run != run:
        for ref in built:
            old = ref()
            if old is not None:
                old.close()
        built = []
    _BY_CELL[cell_id] = (run, [*built, weakref.ref(explorer)])


def _check_control_value(name, control, value):
    """Raise ValueError if `control` cannot take `value` (ipywidgets would clamp or ignore it)."""
    if isinstance(control, widgets.SelectionSlider | widgets.Dropdown | widgets.ToggleButtons):
        allowed = slider_values(control)
        # True == 1 and False == 0: a bool would pass for an option 1 or 0 that is no bool.
        if value not in allowed or (isinstance(value, bool) and not any(isinstance(a, bool) for a in allowed)):
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    elif isinstance(control, widgets.IntSlider | widgets.FloatSlider):
        kind = numbers.Integral if isinstance(control, widgets.IntSlider) else numbers.Real
        if isinstance(value, bool) or not isinstance(value, kind) or not control.min <= value <= control.max:
            raise ValueError(f"{name} must be a number from {control.min} to {control.max}, got {value!r}")
    elif isinstance(control, widgets.Checkbox):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be True or False, got {value!r}")
    elif isinstance(control, widgets.Text | widgets.Combobox):
        if not isinstance(value, str):
            raise ValueError(f"{name} must be a string, got {value!r}")


class TrainingProgress:
    """A progress bar for pe_lib.experiments.train: display it, then pass `progress=bar.track(name)` to each run."""

    def __init__(self, total_steps, description="training"):
        self.bar = widgets.IntProgress(value=0, min=0, max=_validate.positive_int("total_steps", total_steps))
        self.bar.description = _validate.text("description", description)
        self.label = widgets.Label(value="")
        self.widget = widgets.HBox([self.bar, self.label])

    def track(self, name):
        """A callback progress(step, steps, loss) that moves the bar on from where it stands now."""
        offset = self.bar.value

        def progress(step, steps, loss):
            self.bar.value = min(self.bar.max, offset + step)
            self.label.value = f"{name}: step {step}/{steps}, loss {loss:.3f}"

        return progress

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.widget._repr_mimebundle_(**kwargs)
        # Static pages (GitHub, nbviewer, the book) cannot show the bar: say what it was, not "HBox(...)".
        bundle["text/plain"] = f"<training progress bar, {self.bar.max} steps in all; live when the notebook runs>"
        return bundle


def slider_names(explorer):
    """The names of an explorer's slider controls (the ones a learner drags)."""
    kinds = (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider)
    return [name for name, control in explorer.controls.items() if isinstance(control, kinds)]


def slider_values(control):
    """The values a SelectionSlider offers (options may be (label, value) pairs)."""
    return [option[1] if isinstance(option, tuple) else option for option in control.options]


def next_slider_value(control, direction):
    """One step of a slider in `direction` (+1/-1), turning back at the ends; returns (value, direction)."""
    if isinstance(control, widgets.SelectionSlider):
        options = slider_values(control)
        index = control.index
        if not 0 <= index + direction < len(options):
            direction = -direction
        return options[index + direction], direction
    value = control.value + direction * control.step
    if not control.min <= value <= control.max:
        direction = -direction
        value = control.value + direction * control.step
    return value, direction


def explorer_classes():
    """Every Explorer subclass of the chapter modules (pe_lib.chNN_*), in chapter and source order."""
    import importlib
    import pkgutil

    import pe_lib

    found = []
    for info in sorted(pkgutil.iter_modules(pe_lib.__path__), key=lambda info: info.name):
        if info.name.startswith("ch"):
            chapter = importlib.import_module(f"pe_lib.{info.name}")
            found += [
                value
                for value in vars(chapter).values()
                if isinstance(value, type) and issubclass(value, Explorer) and value.__module__ == chapter.__name__
            ]
    return found
