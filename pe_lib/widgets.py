"""Interactive explorers (ipywidgets) built on pe_lib.plots.

An explorer owns one matplotlib figure and its artists. Moving a control calls `update`,
which changes the artists' data in place and re-renders the figure into an Image widget:
no figure is rebuilt, so an update costs one PNG render (tens of milliseconds).
Display an explorer by leaving it as the last expression of a cell.
"""

import io

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _checks, encodings


class Explorer:
    """Base class: subclasses build `self.figure`, `self.controls` and implement `draw(**values)`."""

    def __init__(self, figure, controls):
        self.figure = figure
        self.controls = dict(controls)
        self.image = widgets.Image(format="png")
        self.image.add_class("pe-explorer-figure")
        plt.close(figure)  # shown through the Image widget only, not again by the inline backend
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox([widgets.HBox(list(self.controls.values())), self.image])
        self.widget.add_class("pe-explorer")
        self.update()

    def values(self):
        return {name: control.value for name, control in self.controls.items()}

    def draw(self, **values):
        """Change the figure's artists for these control values."""
        raise NotImplementedError

    def update(self, **values):
        """Set controls (if given), redraw the artists and re-render the image; returns the PNG bytes."""
        for name, value in values.items():
            self.controls[name].value = value  # triggers _on_change, which renders
        if not values:
            self._render()
        return self.image.value

    def _on_change(self, _change):
        self._render()

    def _render(self):
        self.draw(**self.values())
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        self.image.value = buffer.getvalue()

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
        self.collisions = np.array([], dtype=int)
        self.longest_wavelength = float("nan")
        figure, (self._left, right) = plt.subplots(1, 2, figsize=(10.0, 3.8), gridspec_kw={"width_ratios": [1.0, 1.7]})
        figure.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.9, wspace=0.25)  # fixed: no layout engine
        self._image = self._left.imshow(
            np.zeros((self.n, 2)), aspect="auto", interpolation="nearest", vmin=-1, vmax=1, cmap="RdBu_r"
        )
        figure.colorbar(self._image, ax=self._left, label="value")
        self._row = self._left.axhline(position, color="k", lw=1)
        self._left.set(title="the table", xlabel="dimension", ylabel="position")
        self._left.grid(False)
        (self._curve,) = right.plot(np.arange(self.n), np.zeros(self.n), lw=0.8, label="distance to the marked row")
        self._neighbour = right.axhline(1.0, color="0.4", ls="--", lw=1, label="neighbour distance")
        (self._hits,) = right.plot([], [], "o", color="crimson", ms=4, label="collision")
        self._here = right.axvline(position, color="k", lw=1)
        self._text = right.text(
            0.02,
            0.03,
            "",
            transform=right.transAxes,
            fontsize=9,
            va="bottom",
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "0.7"},
        )
        right.set(xlim=(0, self.n - 1), xlabel="other position q", ylabel="‖PE(position) − PE(q)‖")
        right.legend(loc="upper right", fontsize=8)
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
        self._right.set_ylim(0, 1.05 * max(float(distance.max()), neighbour))
        self._right.set_title(f"base {base:g}, d_model {d_model}: distances from position {position}")
        nearest = np.flatnonzero(far)[np.argmin(distance[far])]
        self._text.set_text(
            f"slowest pair turns every {self.longest_wavelength:,.0f} positions\n"
            f"nearest row ≥{self.gap} away: q={nearest} at {distance[nearest]:.2f} (neighbour {neighbour:.2f})\n"
            f"collisions: {self.collisions.size}"
        )


# --- Notebook 02: naive encodings ---


class NaiveEncodingExplorer(Explorer):
    """Pick an encoding and a sequence length: its table as a heatmap, and similarity against offset.

    Controls: `encoding` (Dropdown over ENCODINGS) and `length` (IntSlider, 2..max_length).
    The figure is plots.encoding_and_similarity; draw() swaps the image data, the mean line
    and the shaded range in place.
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
        self.d_model = d_model
        self.table = self._encoders[encoding](length, d_model)
        figure = plots.encoding_and_similarity(self.table, name=encoding)
        self._heatmap_axes, self._curve_axes = figure.axes[0], figure.axes[1]
        self._image = self._heatmap_axes.images[0]
        self._band = self._curve_axes.collections[0]
        self._mean = self._curve_axes.lines[0]
        controls = {
            "encoding": widgets.Dropdown(options=self.ENCODINGS, value=encoding, description="encoding"),
            "length": widgets.IntSlider(
                value=length, min=2, max=max_length, description="length", continuous_update=False
            ),
        }
        super().__init__(figure, controls)

    def draw(self, encoding, length):
        self.table = self._encoders[encoding](length, self.d_model)
        low, high = float(self.table.min()), float(self.table.max())
        offsets, mean, low_k, high_k = self._profile(self.table)
        self._image.set_data(self.table)
        self._image.set_extent((-0.5, self.d_model - 0.5, length - 0.5, -0.5))
        self._image.set_clim(low, max(high, low + 1e-12))
        self._heatmap_axes.set_title(f"{encoding}: n={length}, d_model={self.d_model}")
        self._curve_axes.set_title(self._title(low_k, high_k))
        self._mean.set_data(offsets, mean)
        self._band.set_data(offsets, low_k, high_k)
        bottom, top = float(low_k.min()), float(high_k.max())
        pad = 0.05 * (top - bottom) if top > bottom else 0.5
        self._curve_axes.set_xlim(-0.5, length - 0.5)
        self._curve_axes.set_ylim(bottom - pad, top + pad)
