"""Interactive explorers (ipywidgets) built on pe_lib.plots.

An explorer owns one matplotlib figure and its artists. Moving a control calls `update`,
which changes the artists' data in place and re-renders the figure into an Image widget:
no figure is rebuilt. An explorer that lists the artists it changes (`animated_artists`) is
blitted: the rest of the figure (axes, ticks, colour bars) is rendered once and cached, and
an update redraws only those artists over the cached background. Text is most of the cost
of a render, so the explorers keep their axes fixed while a slider moves; where a control
must change the axes (a new window, a new word order), `draw` returns a key for that look
and each look's background is rendered once, then reused.
Display an explorer by leaving it as the last expression of a cell.
"""

import collections
import io

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import _checks, _png, attention, encodings, experiments, plots


class Explorer:
    """Base class: subclasses build a figure and its controls and implement `draw(**values)`.

    controls: dict name -> ipywidgets control; each value is passed to `draw` by its name.
    extras: more widgets for the controls row that are not passed to `draw` (e.g. a Play button
    linked to a slider).
    """

    BACKGROUNDS = 16  # rendered backgrounds kept per explorer (1-2 MB each)

    def __init__(self, figure, controls, *, extras=()):
        self.figure = figure
        self.controls = dict(controls)
        self.image = widgets.Image(format="png")
        self.image.add_class("pe-explorer-figure")
        plt.close(figure)  # shown through the Image widget only, not again by the inline backend
        self._holding = False
        self._laid_out = False
        # rendered figures without their animated artists (blitting), by (static key, artists, size)
        self._backgrounds = collections.OrderedDict()
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox([*extras, *self.controls.values()]), self.image])
        self.widget.add_class("pe-explorer")
        self.update()

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

    def update(self, **values):
        """Set any controls given, then redraw and re-render once; returns the PNG bytes."""
        unknown = set(values) - set(self.controls)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this explorer has {sorted(self.controls)}")
        self._holding = True  # one render for all the values, not one per control
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._holding = False
        self._render()
        return self.image.value

    def _on_change(self, _change):
        if not self._holding:
            self._render()

    def _render(self):
        static_key = self.draw(**self.values())
        if not self._laid_out:
            # Lay the figure out once (if it has a layout engine), for its first values in the current
            # style (the lecture fonts are larger), then keep that layout: a layout pass costs more than a frame.
            self._laid_out = True
            if self.figure.get_layout_engine() is not None:
                plots._freeze_layout(self.figure)
        artists = list(self.animated_artists())
        # The axes' spines sit above their data (images, lines at the edge): draw them again on top.
        for ax in dict.fromkeys(artist.axes for artist in artists if artist.axes is not None and artist.axes.axison):
            artists += [spine for spine in ax.spines.values() if spine.get_visible()]
        artists.sort(key=lambda artist: artist.get_zorder())
        if not artists or not self._can_blit():
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png")
            self.image.value = buffer.getvalue()
            return
        canvas = self.figure.canvas
        if not isinstance(canvas, FigureCanvasAgg):  # e.g. a bare FigureCanvasBase: blitting needs Agg's buffer
            canvas = FigureCanvasAgg(self.figure)
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
            while len(self._backgrounds) > self.BACKGROUNDS:
                self._backgrounds.popitem(last=False)  # the least recently used
        else:
            self._backgrounds.move_to_end(key)
            canvas.restore_region(background)  # the whole figure: no stale pixels from the last frame
        for artist in artists:
            self.figure.draw_artist(artist)
        self.image.value = _png.encode_rgba(canvas.buffer_rgba())

    def _can_blit(self):
        """Blitting renders the canvas as it is: only when savefig would not change dpi or crop."""
        dpi = mpl.rcParams["savefig.dpi"]
        return dpi in ("figure", self.figure.dpi) and mpl.rcParams["savefig.bbox"] != "tight"

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


# --- Notebook 03: the sinusoidal encoding ---


class BaseExplorer(Explorer):
    """Why 10000? The encoding table and the distances from one row to every other, per base and d_model.

    Left: the table of positions 0..n-1. Right: ||PE(position) - PE(q)|| for every q, with the
    distance between neighbouring rows dashed. Red dots are collisions: rows at least `gap`
    positions away that are closer than a neighbour. After each update, `collisions` holds
    their positions and `longest_wavelength` the slowest pair's wavelength.
    """

    BASES = (2, 5, 10, 30, 100, 1000, 10000, 100000)
    D_MODELS = (4, 8, 16, 32, 64, 128)

    def __init__(self, *, n=2048, base=10000, d_model=16, position=0, gap=2):
        self.n = _checks.positive_int("n", n)
        self.gap = _checks.positive_int("gap", gap)
        if self.n < self.gap + 2:
            raise ValueError(
                f"n must be at least gap + 2 = {self.gap + 2} (a row, its neighbour, a far row), got n={n}"
            )
        for name, value, options in (("base", base, self.BASES), ("d_model", d_model, self.D_MODELS)):
            if value not in options:
                raise ValueError(f"{name} must be one of the slider's values {options}, got {value!r}")
        self.collisions = np.array([], dtype=int)
        self.longest_wavelength = float("nan")
        figure, (self._left, right) = plt.subplots(
            1, 2, figsize=plots.style_figsize(10.0, 3.8), width_ratios=[1.0, 1.7], layout="constrained"
        )
        self._image = self._left.imshow(
            np.zeros((self.n, 2)), aspect="auto", interpolation="nearest", vmin=-1, vmax=1, cmap="RdBu_r"
        )
        figure.colorbar(self._image, ax=self._left, label="value", ticks=[-1, 0, 1])
        self._row = self._left.axhline(position, color="gold", lw=2)
        self._left.set(title="the table", xlabel="dimension", ylabel="position", yticks=np.arange(0, self.n, 512))
        self._left.locator_params(axis="x", nbins=4, integer=True)
        self._left.grid(False)
        (self._curve,) = right.plot(np.arange(self.n), np.zeros(self.n), lw=0.8)
        self._neighbour = right.axhline(1.0, color="0.4", ls="--", lw=1)  # the distance between neighbours
        (self._hits,) = right.plot([], [], "o", color="crimson", ms=4)  # collisions
        self._here = right.axvline(position, color="k", lw=1)
        right.set(xlim=(0, self.n - 1), xlabel="other position q", ylabel="‖PE(position) − PE(q)‖")
        right.locator_params(axis="y", nbins=4)
        # Few tick labels and no legend: text is most of the cost of a PNG render.
        self._right = right
        controls = {
            "base": widgets.SelectionSlider(options=self.BASES, value=base, description="base"),
            "d_model": widgets.SelectionSlider(options=self.D_MODELS, value=d_model, description="d_model"),
            "position": widgets.IntSlider(value=position, min=0, max=self.n - 1, description="position"),
        }
        super().__init__(figure, controls)

    def draw(self, base, d_model, position):
        table = encodings.sinusoidal_encoding(self.n, d_model, base=base)
        self._image.set_data(table)
        self._image.set_extent((-0.5, d_model - 0.5, self.n - 0.5, -0.5))
        self._row.set_ydata([position, position])
        distance = np.linalg.norm(table - table[position], axis=1)
        neighbour = float(np.linalg.norm(table[1] - table[0]))
        far = np.abs(np.arange(self.n) - position) >= self.gap
        self.collisions = np.flatnonzero(far & (distance < neighbour))
        self.longest_wavelength = float(encodings.wavelengths(d_model, base=base)[-1])
        self._curve.set_ydata(distance)
        self._neighbour.set_ydata([neighbour, neighbour])
        self._hits.set_data(self.collisions, distance[self.collisions])
        self._here.set_xdata([position, position])
        # The largest possible distance, sqrt(2 d_model), as the top: fixed while base and position move.
        self._right.set_ylim(0, 1.05 * np.sqrt(2 * d_model))
        nearest = np.flatnonzero(far)[np.argmin(distance[far])]
        self._right.set_title(
            f"base {base:g}, d_model {d_model}: slowest wavelength {self.longest_wavelength:,.0f}\n"
            f"collisions (red): {self.collisions.size}; nearest far row: q={nearest} at {distance[nearest]:.2f}",
            fontsize="small",
        )
        return d_model  # sets the table's columns and the distance axis: one background per d_model

    def animated_artists(self):
        return (self._image, self._row, self._curve, self._neighbour, self._hits, self._here, self._right.title)


# --- Notebook 02: naive encodings ---


class NaiveEncodingExplorer(Explorer):
    """Pick an encoding and a sequence length: its table as a heatmap, and similarity against offset.

    Controls: `encoding` (Dropdown over ENCODINGS) and `length` (IntSlider, 2..max_length).
    The figure is plots.encoding_and_similarity. The axes and colour scale are fixed per
    encoding, at what the encoding reaches at max_length, so moving the length shows the table
    growing and its values changing against a scale that stays put; draw() swaps the image
    data, the mean line and the shaded range in place.
    """

    ENCODINGS = ("integer", "normalized", "binary", "sinusoidal")

    def __init__(self, *, encoding="integer", length=32, d_model=16, max_length=128):
        from . import checklist, encodings, plots

        self._encoders = {
            "integer": encodings.integer_encoding,
            "normalized": encodings.normalized_encoding,
            "binary": encodings.binary_encoding,
            "sinusoidal": encodings.sinusoidal_encoding,
        }
        self._profile, self._title = checklist.offset_profile, plots.similarity_title
        self.d_model, self.max_length = d_model, max_length
        self.table = self._encoders[encoding](length, d_model)
        self._scales = {}  # encoding -> (colour range, similarity range) at max_length
        figure = plots.encoding_and_similarity(self.table, name=encoding)
        self._heatmap_axes, self._curve_axes = figure.axes[0], figure.axes[1]
        self._heatmap_axes.set_facecolor("0.93")  # rows past the length: no positions there
        self._heatmap_axes.set_ylim(max_length - 0.5, -0.5)
        self._heatmap_axes.set_xlim(-0.5, d_model - 0.5)
        self._curve_axes.set_xlim(-0.5, max_length - 0.5)
        self._image = self._heatmap_axes.images[0]
        self._band = self._curve_axes.collections[0]
        self._mean = self._curve_axes.lines[0]
        # The legend is drawn again over the band and the line, which pass under it.
        self._animated = (
            self._image,
            self._heatmap_axes.title,
            self._curve_axes.title,
            self._band,
            self._mean,
            self._curve_axes.get_legend(),
        )
        controls = {
            "encoding": widgets.Dropdown(options=self.ENCODINGS, value=encoding, description="encoding"),
            "length": widgets.IntSlider(
                value=length, min=2, max=max_length, description="length", continuous_update=False
            ),
        }
        super().__init__(figure, controls)

    def scales(self, encoding):
        """(colour range, similarity range) of an encoding at max_length, which holds every shorter length's.

        The integer, binary and sinusoidal tables at a shorter length are the first rows of the
        longest one; the normalized table's values and products stay in [0, 1], which the
        longest table spans.
        """
        if encoding not in self._scales:
            table = self._encoders[encoding](self.max_length, self.d_model)
            _, _, low_k, high_k = self._profile(table)
            low, high = float(table.min()), float(table.max())
            bottom, top = float(low_k.min()), float(high_k.max())
            pad = 0.05 * (top - bottom) if top > bottom else 0.5
            self._scales[encoding] = ((low, max(high, low + 1e-12)), (bottom - pad, top + pad))
        return self._scales[encoding]

    def draw(self, encoding, length):
        self.table = self._encoders[encoding](length, self.d_model)
        colours, similarity_range = self.scales(encoding)
        offsets, mean, low_k, high_k = self._profile(self.table)
        self._image.set_data(self.table)
        self._image.set_extent((-0.5, self.d_model - 0.5, length - 0.5, -0.5))
        self._image.set_clim(*colours)
        self._heatmap_axes.set_title(f"{encoding}: n={length}, d_model={self.d_model}")
        self._curve_axes.set_title(self._title(low_k, high_k))
        self._mean.set_data(offsets, mean)
        self._band.set_data(offsets, low_k, high_k)
        self._curve_axes.set_ylim(*similarity_range)
        return encoding  # the colour bar and the similarity axis: one background per encoding

    def animated_artists(self):
        return self._animated


# --- Notebook 04: the pendulum intuition ---


class PendulumExplorer(Explorer):
    """A row of pendulums (one per sin/cos pair) at time t = position, above the vector PE(position).

    A Play button swings them: it is linked in the browser (jslink) to the position slider,
    so each tick moves the slider and the slider redraws the figure. `self.vector` is PE(position).
    """

    def __init__(self, d_model=16, *, base=10000.0, max_position=100, interval=200):
        figure, self._artists = plots._pendulum_figure(d_model, base)
        slider = widgets.IntSlider(value=0, min=0, max=max_position, description="position p")
        self.play = widgets.Play(value=0, min=0, max=max_position, interval=interval, description="swing")
        self._link = widgets.jslink((self.play, "value"), (slider, "value"))
        super().__init__(figure, {"position": slider}, extras=[self.play])

    def draw(self, position):
        self.vector = plots._set_pendulums(self._artists, position)

    def animated_artists(self):
        artists = self._artists
        return (artists["hands"], artists["bobs"], *artists["bars"], artists["zero"], artists["title"])


class DecayExplorer(Explorer):
    """How base and d_model shape the similarity PE(p)·PE(p+k), and the attention of positions alone.

    Left: PE(p)·PE(p+k) / (d_model/2) against k, with d_model 64, base 1e4 in grey for reference,
    and the half-width (first k where it drops below 1/2) marked. Right: softmax(PE PE^T / sqrt(d_model)),
    the attention weights when queries and keys are the positional encodings themselves.
    After each update: `self.similarity`, `self.half_width`, `self.weights`.
    """

    D_MODELS = (8, 16, 32, 64, 128, 256, 512)
    BASES = (("10", 10.0), ("100", 100.0), ("1e3", 1e3), ("1e4", 1e4), ("1e5", 1e5), ("1e6", 1e6))

    def __init__(self, *, max_offset=64, n_positions=24):
        self.offsets = np.arange(-max_offset, max_offset + 1)
        self.n_positions = n_positions
        figure, self._artists = plots._decay_figure(self.offsets, n_positions)
        controls = {
            "d_model": widgets.SelectionSlider(options=self.D_MODELS, value=64, description="d_model"),
            "base": widgets.SelectionSlider(options=self.BASES, value=1e4, description="base"),
        }
        super().__init__(figure, controls)

    def draw(self, d_model, base):
        angles = np.multiply.outer(self.offsets, encodings.frequencies(d_model, base=base))
        self.similarity = np.cos(angles).sum(axis=-1) / (d_model / 2)
        ahead = self.similarity[self.offsets > 0]
        below = np.flatnonzero(ahead < 0.5)
        self.half_width = int(below[0]) + 1 if below.size else None
        encoding = encodings.sinusoidal_encoding(self.n_positions, d_model, base=base)
        self.weights = attention.softmax(encoding @ encoding.T / np.sqrt(d_model))  # self_attention with W = I
        artists = self._artists
        artists["line"].set_ydata(self.similarity)
        artists["marker"].set_xdata([self.half_width or self.offsets[-1]] * 2)
        width = f"{self.half_width}" if self.half_width else f"> {self.offsets[-1]}"
        artists["title"].set_text(f"d_model {d_model}, base {base:g}: half-width {width}")
        artists["image"].set_data(self.weights)  # on the colour bar's fixed range 0..1

    def animated_artists(self):
        artists = self._artists
        legend = artists["line"].axes.get_legend()  # drawn again over the line and the marker, which pass under it
        return (artists["line"], artists["marker"], artists["title"], artists["image"], legend)


# --- Notebook 05: learned versus fixed ---


class PositionSimilarityExplorer(Explorer):
    """Cosine similarity of one position to its neighbourhood, in several position tables side by side.

    tables: dict name -> (n, d) table (e.g. MiniLM's learned positions and the sinusoidal
    encoding of the same size). Sliders: the position p and the half-width of the window shown.
    The x axis is the offset q - p, so moving p keeps the axes still (p itself sits at 0).
    After each update, `neighbour_similarity[name]` is the mean cosine of row p with rows p ± 1.
    """

    WINDOWS = (8, 16, 32, 64, 128, 256, 512)

    def __init__(self, tables, *, position=100, window=64):
        if not tables:
            raise ValueError("tables must name at least one table")
        self.similarity = {name: experiments.cosine_similarity(table) for name, table in tables.items()}
        self.n = min(s.shape[0] for s in self.similarity.values())
        self.neighbour_similarity = {}
        figure, ax = plt.subplots(figsize=plots.style_figsize(8.5, 3.6), layout="constrained")
        self._lines = {name: ax.plot([], [], "o-", ms=2.5, lw=1.2, label=name)[0] for name in self.similarity}
        self._here = ax.axvline(0, color="k", lw=1)  # p itself; drawn over the lines: animated with them
        self._zero = ax.axhline(0.0, color="0.3", lw=0.8)
        self._text = ax.text(1.03, 0.0, "", transform=ax.transAxes, fontsize="small", va="bottom")
        ax.set(ylim=(-0.6, 1.05), xlabel="offset q − p (p at 0)", ylabel="cosine similarity to position p")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")  # right of the lines, as the read-out
        self._ax = ax
        controls = {
            "position": widgets.IntSlider(value=position, min=0, max=self.n - 1, description="position p"),
            "window": widgets.SelectionSlider(options=self.WINDOWS, value=window, description="± window"),
        }
        super().__init__(figure, controls)

    def draw(self, position, window):
        low, high = max(0, position - window), min(self.n - 1, position + window)
        others = np.arange(low, high + 1)
        for name, similarity in self.similarity.items():
            self._lines[name].set_data(others - position, similarity[position, others])
            neighbours = [q for q in (position - 1, position + 1) if 0 <= q < self.n]
            self.neighbour_similarity[name] = float(np.mean(similarity[position, neighbours]))
        self._ax.set_xlim(-window - 0.5, window + 0.5)
        self._ax.set_title(f"similarity of position {position} to positions {low}..{high}")
        self._text.set_text(
            "cosine to p ± 1:\n"
            + "\n".join(f"{name}: {value:.2f}" for name, value in self.neighbour_similarity.items())
        )
        return window  # the x axis: one background per window

    def animated_artists(self):
        return (*self._lines.values(), self._here, self._zero, self._ax.title, self._text)


class TrainingProgress:
    """A progress bar for pe_lib.experiments.train: display it, then pass `progress=bar.track(name)` to each run."""

    def __init__(self, total_steps, description="training"):
        self.bar = widgets.IntProgress(value=0, min=0, max=_checks.positive_int("total_steps", total_steps))
        self.bar.description = description
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
        return self.widget._repr_mimebundle_(**kwargs)


# --- Notebook 01: the order problem ---


def _sentence_words(text, max_words):
    """Lower-case words of a typed sentence (punctuation dropped), at most max_words of them."""
    words = [word.strip(".,;:!?\"'()").lower() for word in str(text).split()]
    return [word for word in words if word][:max_words]


class OrderExplorer(Explorer):
    """Type or pick a sentence, reorder it, fade positional encoding in: what does attention see?

    Left: attention weights of the reordered sentence from word embeddings alone; middle: the
    same with `pe_strength * sinusoidal_encoding` added to the embeddings; right: for each word,
    how far its output vector moved compared with the sentence before reordering (with the
    current positional-encoding strength). Without positions every bar is zero: attention
    gives each word the same output whatever the order.

    embeddings: dict word -> vector (d_model,); words not in it get a fixed pseudo-random
    vector of the same scale (so any typed sentence works). w_q, w_k: (d_model, d_k);
    w_v: (d_model, d_v). `state` holds the numbers behind the current figure.
    """

    def __init__(self, embeddings, w_q, w_k, w_v, *, sentences, max_words=8, rotate=2, pe_strength=0.0):
        if not sentences:
            raise ValueError("sentences must list at least one sentence to start from")
        self.embeddings = {str(word).lower(): np.asarray(vector, dtype=float) for word, vector in embeddings.items()}
        shapes = {vector.shape for vector in self.embeddings.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:
            raise ValueError(f"embeddings must map words to 1-D vectors of one length, got shapes {sorted(shapes)}")
        self.d_model = next(iter(shapes))[0]
        self.scale = float(np.std(np.stack(list(self.embeddings.values()))))
        self.weights = (np.asarray(w_q, dtype=float), np.asarray(w_k, dtype=float), np.asarray(w_v, dtype=float))
        self.max_words = int(max_words)
        self.state = {}
        self._words, self._shown = None, None  # the words on the bars' and on the heatmaps' axes
        figure = plt.figure(figsize=plots.style_figsize(11.0, 3.6), layout="constrained")
        grid = figure.add_gridspec(1, 3, width_ratios=[1, 1.2, 1.4])
        self.axes = [figure.add_subplot(grid[0, i]) for i in range(3)]
        self.images = []
        for ax in self.axes[:2]:
            image = ax.imshow(np.zeros((2, 2)), vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest")
            ax.set(xlabel="key (word attended to)")
            ax.grid(False)
            self.images.append(image)
        self.axes[0].set_title("attention: words only")
        colorbar = figure.colorbar(self.images[1], ax=self.axes[1], label="attention weight")
        colorbar.locator = plt.MaxNLocator(4)
        self.axes[0].set_ylabel("query (word attending)")
        self.bars = self.axes[2].bar(range(self.max_words), np.zeros(self.max_words), color="tab:orange")
        self.axes[2].set(ylabel="|output - output before|", xlabel="word (original order)")
        self.note = self.axes[2].text(
            0.98, 0.97, "", transform=self.axes[2].transAxes, ha="right", va="top", fontsize="small"
        )
        controls = {
            "sentence": widgets.Combobox(
                value=sentences[0],
                options=list(sentences),
                ensure_option=False,
                continuous_update=False,
                description="sentence",
                placeholder="type words, e.g. the dog bit the man",
            ),
            "rotate": widgets.IntSlider(
                value=rotate, min=0, max=self.max_words - 1, description="rotate by", continuous_update=True
            ),
            "pe_strength": widgets.FloatSlider(
                value=pe_strength, min=0.0, max=1.0, step=0.05, description="PE strength", readout_format=".2f"
            ),
        }
        self._last_words = _sentence_words(sentences[0], self.max_words)
        super().__init__(figure, controls)

    def vector(self, word):
        """The embedding of a word; unknown words get a fixed vector seeded by the word itself."""
        if word not in self.embeddings:
            rng = np.random.default_rng(list(word.encode("utf-8")))  # the word's bytes seed its vector
            self.embeddings[word] = rng.normal(scale=self.scale, size=self.d_model)
        return self.embeddings[word]

    def compute(self, words, rotate, pe_strength):
        """Attention weights and per-word output shifts for `words` moved left by `rotate` places."""
        n = len(words)
        order = np.roll(np.arange(n), -(rotate % n))  # new position j holds the word from order[j]
        x = np.stack([self.vector(word) for word in words])
        positions = pe_strength * encodings.sinusoidal_encoding(n, self.d_model)
        before, _ = attention.self_attention(x + positions, *self.weights)
        _, weights_plain = attention.self_attention(x[order], *self.weights)
        after, weights_pe = attention.self_attention(x[order] + positions, *self.weights)
        shift = np.zeros(n)
        shift[order] = np.linalg.norm(after - before[order], axis=1)  # back to the original word order
        return {
            "words": list(words),
            "order": order,
            "shown": [words[i] for i in order],
            "weights_plain": weights_plain,
            "weights_pe": weights_pe,
            "shift": shift,
        }

    def largest_shift(self, words):
        """The largest output change over every rotation and every PE strength the slider offers.

        The bar panel's y axis is fixed to it for the whole sentence, so the bars visibly grow
        as positions fade in (an axis that followed the bars would hide that).
        """
        strengths = np.linspace(0.0, 1.0, 21)  # the slider's steps of 0.05
        return max(
            float(self.compute(words, rotate, strength)["shift"].max())
            for rotate in range(len(words))
            for strength in strengths
        )

    def draw(self, sentence, rotate, pe_strength):
        words = _sentence_words(sentence, self.max_words)
        message = ""
        if not words:
            words, message = self._last_words, "type at least one word; showing the last sentence"
        elif len(str(sentence).split()) > self.max_words:
            message = f"only the first {self.max_words} words are used"
        self._last_words = words
        state = self.compute(words, rotate, pe_strength)
        self.state = state
        n, shown = len(words), state["shown"]
        if words != self._words:  # a new sentence: the bars' words and their y range, fixed from now on
            self._words = words
            ax = self.axes[2]
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_xticks(range(n), labels=words, rotation=45, ha="right", rotation_mode="anchor")
            ax.set_ylim(0.0, max(1.0, 1.15 * self.largest_shift(words)))
        if shown != self._shown:  # the words moved: new tick labels on the heatmaps
            self._shown = shown
            for ax in self.axes[:2]:
                ax.set_xlim(-0.5, n - 0.5)
                ax.set_ylim(n - 0.5, -0.5)
                plots._word_ticks(ax, shown, shown)
            self.axes[1].tick_params(labelleft=False)  # same rows as the left panel
            self.axes[2].set_title(f"output change after rotating by {rotate % n}")
        for image, key in zip(self.images, ("weights_plain", "weights_pe"), strict=True):
            image.set_data(state[key])  # on the fixed scale 0..1 of a weight
            image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        self.axes[1].set_title(f"attention: words + {pe_strength:.2f} x PE")
        for index, bar in enumerate(self.bars):
            bar.set_visible(index < n)
            bar.set_height(state["shift"][index] if index < n else 0.0)
        largest = f"largest change {float(state['shift'].max()):.2g}"
        self.note.set_text(f"{largest}\n{message}" if message else largest)
        return tuple(words), tuple(shown)  # the axes' words and ranges: one background per word order

    def animated_artists(self):
        # pe_strength changes only the weights, the middle title, the bars and the note.
        return (*self.images, self.axes[1].title, *self.bars, self.note)


# --- Notebook 06: the embedding pipeline ---

TOKEN_INITS = ("pe_lib: N(0, 1/d)", "nn.Embedding default: N(0, 1)", "xavier_uniform, vocab 37000")


def token_vector_norms(init, d_model, *, rows=256, vocab=37000, seed=0):
    """Norms of `rows` freshly initialised token vectors of size d_model, before any scaling.

    init: one of "pe_lib: N(0, 1/d)" (pe_lib.TransformerEmbedding), "nn.Embedding default:
    N(0, 1)" (torch's default, kept by The Annotated Transformer's Embeddings class) or
    "xavier_uniform, vocab 37000" (what nn.init.xavier_uniform_ draws for a (vocab, d_model)
    table, as The Annotated Transformer's make_model does). Returns an array (rows,).
    """

    rng = np.random.default_rng(seed)
    if init == TOKEN_INITS[0]:
        table = rng.normal(0.0, d_model**-0.5, size=(rows, d_model))
    elif init == TOKEN_INITS[1]:
        table = rng.normal(0.0, 1.0, size=(rows, d_model))
    elif init == TOKEN_INITS[2]:
        bound = (6.0 / (vocab + d_model)) ** 0.5
        table = rng.uniform(-bound, bound, size=(rows, d_model))
    else:
        options = ", ".join(repr(name) for name in TOKEN_INITS)
        raise ValueError(f"init must be one of {options}, got {init!r}")
    return np.linalg.norm(table, axis=1)


class NormShareExplorer(Explorer):
    """How big the token part and the position part of x = token * scale + PE are.

    Controls: d_model (slider), the token table's initialisation, and whether token vectors
    are multiplied by sqrt(d_model). Left: mean norms of both parts. Right: the position's
    share of ||x||^2 across d_model, with the current d_model marked.
    """

    def __init__(self, d_models=(8, 16, 32, 64, 128, 256, 512, 1024), *, d_model=512, positions=64):
        self.d_models = tuple(int(d) for d in d_models)
        self.token_norm = {
            init: {d: float(token_vector_norms(init, d).mean()) for d in self.d_models} for init in TOKEN_INITS
        }
        self.pe_norm = {
            d: float(np.linalg.norm(encodings.sinusoidal_encoding(positions, d), axis=1).mean()) for d in self.d_models
        }
        figure, (left, right) = plt.subplots(1, 2, figsize=plots.style_figsize(9.0, 3.6), layout="constrained")
        self.bars = left.bar([0, 1], [1.0, 1.0], color=["tab:blue", "tab:orange"])
        left.set_xticks([0, 1], ["token part", "position part"])
        left.set(yscale="log", ylim=(0.01, 3000), ylabel="mean norm", title="norms")
        left.set_yticks([0.01, 1, 100], ["0.01", "1", "100"])  # few plain labels: text is most of the render time
        left.minorticks_off()
        left.set_axisbelow(True)  # grid behind the bars, which are redrawn over a cached background
        self.bar_labels = [left.text(i, 1.0, "", ha="center", va="bottom") for i in (0, 1)]
        self.curve = right.plot(self.d_models, np.full(len(self.d_models), 0.5), marker="o")[0]
        self.marker = right.plot([d_model], [0.5], "o", markersize=12, color="tab:red")[0]
        right.axhline(0.5, color="grey", linestyle=":", linewidth=1)
        right.set(
            xscale="log",
            ylim=(-0.02, 1.02),
            xlabel="d_model",
            ylabel="position share of ||x||^2",
            title="share across d_model",
        )
        right.set_xticks(self.d_models[::2], [str(d) for d in self.d_models[::2]])
        right.set_yticks([0, 0.5, 1])
        right.minorticks_off()
        self.title = figure.suptitle("")
        controls = {
            "d_model": widgets.SelectionSlider(options=self.d_models, value=d_model, description="d_model"),
            "init": widgets.Dropdown(options=TOKEN_INITS, value=TOKEN_INITS[0], description="token init"),
            "scale": widgets.Checkbox(value=True, description="x sqrt(d_model)"),
        }
        super().__init__(figure, controls)

    def norms(self, d_model, init, scale):
        """(mean token-part norm, mean position-part norm) for these settings."""
        token = self.token_norm[init][d_model] * (d_model**0.5 if scale else 1.0)
        return token, self.pe_norm[d_model]

    def share(self, d_model, init, scale):
        """The position's share of ||x||^2, pe^2 / (token^2 + pe^2) (the parts are nearly orthogonal)."""
        token, position = self.norms(d_model, init, scale)
        return position**2 / (token**2 + position**2)

    def draw(self, d_model, init, scale):
        token, position = self.norms(d_model, init, scale)
        for bar, label, value in zip(self.bars, self.bar_labels, (token, position), strict=True):
            bar.set_height(value)
            label.set_position((label.get_position()[0], value))
            label.set_text(f"{value:.3g}")
        self.curve.set_ydata([self.share(d, init, scale) for d in self.d_models])
        share = self.share(d_model, init, scale)
        self.marker.set_data([d_model], [share])
        self.title.set_text(f"d_model={d_model}: the position is {100 * share:.0f}% of ||x||^2")

    def animated_artists(self):
        return (*self.bars, *self.bar_labels, self.curve, self.marker, self.title)


class DropoutExplorer(Explorer):
    """nn.Dropout in train mode on one embedded sentence, for a dropout rate p (slider).

    Left: the output; dropped entries are exactly 0. Right: output against input; kept
    entries lie on the line y = x / (1 - p). The mask for each p is drawn from a fixed seed
    (torch's global random state is left untouched).
    """

    def __init__(self, x, *, p=0.1, seed=0):
        self.x = torch.as_tensor(np.asarray(x, dtype=np.float32))
        if self.x.dim() != 2:
            raise ValueError(f"x must have shape (seq, d_model), got {tuple(self.x.shape)}")
        self.seed = int(seed)
        flat = self.x.flatten().numpy()
        limit = float(np.abs(flat).max()) or 1.0
        figure, (left, right) = plt.subplots(1, 2, figsize=plots.style_figsize(9.0, 3.6), layout="constrained")
        self.heat = left.imshow(
            self.x.numpy(), aspect="auto", interpolation="nearest", cmap="RdBu_r", vmin=-2 * limit, vmax=2 * limit
        )
        figure.colorbar(self.heat, ax=left, label="value", ticks=[-2 * limit, 0, 2 * limit], format="%.1f")
        left.set_yticks([0, self.x.shape[0] - 1])
        left.set(title="train-mode output", xlabel="dimension", ylabel="position")
        left.grid(False)
        self.points = right.scatter(flat, flat, s=8)
        span = np.array([-limit, limit])
        self.span = span
        self.right = right
        self.kept_line = right.plot(span, span, color="tab:orange", label="y = x / (1 - p)")[0]
        right.plot(span, span, color="grey", linestyle=":", linewidth=1, label="y = x (eval mode)")
        right.set(
            xlabel="input entry",
            ylabel="output entry",
            title="output against input",
        )
        right.legend(fontsize="small", loc="upper left")
        right.locator_params(nbins=4)  # few tick labels: text is most of the render time
        left.locator_params(axis="x", nbins=4)
        self.title = figure.suptitle("")
        controls = {"p": widgets.FloatSlider(value=p, min=0.0, max=0.9, step=0.05, description="dropout p")}
        super().__init__(figure, controls)

    def output(self, p):
        """nn.functional.dropout(x, p, training=True) with this explorer's fixed seed."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return torch.nn.functional.dropout(self.x, p=p, training=True)

    def draw(self, p):
        y = self.output(p)
        self.heat.set_data(y.numpy())
        self.points.set_offsets(list(zip(self.x.flatten().tolist(), y.flatten().tolist(), strict=True)))
        self.kept_line.set_ydata(self.span / (1 - p))
        self.right.set_ylim(1.1 * self.span / (1 - p))
        dropped = float((y == 0).float().mean())
        self.title.set_text(f"p = {p:.2f}: {100 * dropped:.0f}% of entries zeroed, the rest x {1 / (1 - p):.2f}")

    def animated_artists(self):
        # p moves the right panel's y range: its y axis and the y = x line move with it.
        right = self.right
        return (self.heat, self.points, self.kept_line, right.lines[1], right.yaxis, right.get_legend(), self.title)
