"""The sinusoidal encoding, derived (used in notebook 03).

Its figures and its explorer; the graders of its exercises are in ch03_sinusoidal_exercises.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, encodings
from .accessible import number
from .explorer import Explorer
from .figures import COLOURS, floats, new_axes, style_figsize

# Series that share a colour, or may, get a marker and a line style each (CONTRIBUTING.md, "One colour, one meaning").
_SERIES_STYLES = tuple({"marker": m, "ls": ls} for m, ls in zip("os^D", ("-", "--", "-.", ":"), strict=True))
_CURVE_COLOURS = ("C0", "C1", "C2", "C4", "C5")  # C3, red, marks what goes wrong


def dimension_waves(table, columns, *, title, positions=None, step=False, curve=None, xlabel="position", ax=None):
    """Chosen columns of a (n, d) table as curves against position, stacked one above the other.

    Each column gets its own lane, labelled "dim j" on the y axis; step=True draws staircases
    (for binary bits), otherwise lines. curve=(fine_positions, fine_table) draws the columns of
    fine_table as the lines and the table's own rows as dots on them: a position signal exists
    only at whole positions, and a line through 64 samples of a fast wave looks jagged.
    Lanes, not colours, tell the columns apart: all in the sinusoid's colour, a staircase (a binary
    counter) in the grey of a reference.
    """
    table = floats(table)
    columns = [int(c) for c in columns]
    x = np.arange(table.shape[0]) if positions is None else floats(positions)
    fig, ax = new_axes(ax)
    values = table[:, columns]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    if curve is not None:
        fine_x, fine_table = floats(curve[0]), floats(curve[1])
        low, high = min(low, float(fine_table[:, columns].min())), max(high, float(fine_table[:, columns].max()))
    span = max(high - low, 1e-9)
    lane = 1.35 * span
    colour = COLOURS["reference"] if step else COLOURS["sinusoidal"]
    for lane_index, column in enumerate(columns):
        offset = lane * (len(columns) - 1 - lane_index)
        y = (table[:, column] - low) + offset
        if step:
            ax.step(x, y, where="post", color=colour)
        elif curve is not None:
            ax.plot(fine_x, (fine_table[:, column] - low) + offset, lw=1, color=colour)
            ax.plot(x, y, "o", ms=2.5, color=colour)
        else:
            ax.plot(x, y, color=colour)
        ax.axhline(offset + (0.0 - low if low < 0 < high else 0.0), color="0.8", lw=0.6, zorder=0)
    ax.set_yticks([lane * (len(columns) - 1 - k) + span / 2 for k in range(len(columns))])
    ax.set_yticklabels([f"dim {c}" for c in columns])
    ax.set(title=title, xlabel=xlabel)
    ax.grid(False, axis="y")
    return fig


def wavelength_ladder(wavelengths, *, title, base=10000.0, ax=None):
    """Wavelength (positions per turn) of each sin/cos pair on a log scale, with 2*pi and base*2*pi marked."""
    wavelengths = floats(wavelengths)
    fig, ax = new_axes(ax)
    ax.semilogy(np.arange(wavelengths.size), wavelengths, "o", ms=3, color=COLOURS["sinusoidal"], label="pair i")
    ax.minorticks_off()
    # Two guides: the grey of a reference, told apart by their line styles.
    ax.axhline(2 * np.pi, color=COLOURS["reference"], ls="--", label="2π (pair 0)")
    ax.axhline(base * 2 * np.pi, color=COLOURS["reference"], ls=":", label=f"{base:g}·2π")
    ax.set(title=title, xlabel="pair index i (columns 2i, 2i+1)", ylabel="wavelength (positions, log scale)")
    ax.legend(loc="lower right")
    return fig


def dimension_profile(values, *, title, ylabel, xlabel="dimension", log=False, ax=None):
    """One number per dimension (column) as bars, e.g. how much each column changes per step."""
    values = floats(values)
    fig, ax = new_axes(ax)
    ax.bar(np.arange(values.size), values, width=0.85, color=COLOURS["sinusoidal"])
    if log:
        ax.set_yscale("log")
        ax.minorticks_off()  # minor log ticks cost more to draw than the bars
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return fig


def pair_circle(table, pair, *, title, positions=None, annotate=(), ax=None):
    """The (sin, cos) columns 2i, 2i+1 of a table as points on the unit circle, coloured by position.

    Each position is a point; moving k positions on turns every point by the same angle.
    annotate: positions to label on the figure.
    """
    table = floats(table)
    x = np.arange(table.shape[0]) if positions is None else floats(positions)
    fig, ax = new_axes(ax)
    turn = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.sin(turn), np.cos(turn), color="0.8", lw=1, zorder=0)
    points = ax.scatter(table[:, 2 * pair], table[:, 2 * pair + 1], c=x, cmap="viridis", s=18, zorder=2)
    fig.colorbar(points, ax=ax, label="position")
    for position in annotate:
        row = int(np.argmin(np.abs(x - position)))
        ax.annotate(
            f"p={position:g}",
            (table[row, 2 * pair], table[row, 2 * pair + 1]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize="small",
        )
    ax.set_aspect("equal")
    ax.set(
        title=title,
        xlabel=f"column {2 * pair} (sin)",
        ylabel=f"column {2 * pair + 1} (cos)",
        xlim=(-1.25, 1.25),
        ylim=(-1.25, 1.25),
    )
    return fig


def offset_fit_residuals(offsets, residuals, *, title, ax=None):
    """Relative residual of a least-squares fit PE(p+k) ≈ PE(p) A against the offset k, one curve per fit.

    residuals: dict label -> array like offsets. Log y axis, so 1e-14 and 0.5 fit on one figure.
    A fit that is exact (every residual below 1e-10) is drawn in the sinusoid's colour, one that is
    not in the red of what goes wrong; each curve has its own marker and line style.
    """
    offsets = floats(offsets)
    fig, ax = new_axes(ax)
    for index, (label, values) in enumerate(residuals.items()):
        values = floats(values)
        colour = COLOURS["sinusoidal"] if np.all(values < 1e-10) else COLOURS["problem"]
        style = _SERIES_STYLES[index % len(_SERIES_STYLES)]
        ax.semilogy(offsets, np.maximum(values, 1e-17), color=colour, label=label, **style)
    ax.minorticks_off()
    ax.set(title=title, xlabel="offset k (positions)", ylabel="relative residual (log scale)")
    ax.legend()
    return fig


def distance_by_offset(offsets, distances, *, title, neighbour=None, ax=None):
    """||PE(p) - PE(p+k)|| against the offset k, one curve per label (e.g. per base).

    distances: dict label -> array like offsets. neighbour: dict label -> distance at k = 1,
    drawn as dashed lines; points of a curve under its dashed line (k >= 2) are collisions, marked with dots
    in the red of what goes wrong. Each curve has its colour (the palette's, in order, red left out) and a
    line style; each curve's collisions a marker of their own.
    """
    offsets = floats(offsets)
    fig, ax = new_axes(ax)
    for index, (label, values) in enumerate(distances.items()):
        values = floats(values)
        colour = _CURVE_COLOURS[index % len(_CURVE_COLOURS)]
        ls = ("-", "-.", ":")[index % 3]
        ax.plot(offsets, values, lw=1, color=colour, ls=ls, label=label)
        if neighbour is not None and label in neighbour:
            ax.axhline(neighbour[label], color=colour, ls="--", lw=1)
            hits = (values < neighbour[label]) & (offsets >= 2)
            if np.any(hits):
                marker = _SERIES_STYLES[index % len(_SERIES_STYLES)]["marker"]
                ax.plot(offsets[hits], values[hits], marker, color=COLOURS["problem"], ms=6,
                        label=f"collision ({label})")  # fmt: skip
    ax.set(title=title, xlabel="offset k (positions)", ylabel="distance between rows p and p+k")
    ax.legend(loc="lower center", ncol=3, fontsize="small")
    return fig


def layout_comparison(interleaved, concatenated, *, title):
    """The same encoding in the two layouts side by side, on one colour scale."""
    fig, axes = plt.subplots(1, 2, figsize=style_figsize(9.0, 3.6), sharey=True)
    fig.subplots_adjust(left=0.08, right=0.87, bottom=0.14, top=0.82, wspace=0.08)
    names = ("interleaved (the paper)", "concatenated [sin | cos]")
    for ax, table, name in zip(axes, (interleaved, concatenated), names, strict=True):
        image = ax.imshow(floats(table), aspect="auto", interpolation="nearest", vmin=-1, vmax=1)
        ax.set(title=name, xlabel="dimension")
        ax.grid(False)
    axes[0].set_ylabel("position")
    fig.colorbar(image, cax=fig.add_axes((0.89, 0.14, 0.02, 0.68)), label="value")
    fig.suptitle(title)
    return fig


class CollisionExplorer(Explorer):
    """Why 10000? The encoding table and the distances from one row to every other, per base and d_model.

    Left: the table of positions 0..n-1. Right: ||PE(position) - PE(q)|| for every q, with the
    distance between neighbouring rows dashed. Dots (in the problem colour) are collisions: rows at
    least `gap` positions away that are closer than a neighbour. After each update, `collisions` holds
    their positions and `longest_wavelength` the slowest pair's wavelength.
    """

    BASES = (2, 5, 10, 30, 100, 1000, 10000, 100000)
    D_MODELS = (4, 8, 16, 32, 64, 128)
    MAX_N = 8192  # each frame recomputes an (n, d_model) table: 74 ms at n 8192 and d_model 128

    def __init__(self, *, n=2048, base=10000, d_model=16, position=0, gap=2):
        self.n = _validate.int_in_range("n", n, 1, self.MAX_N)
        self.gap = _validate.positive_int("gap", gap)
        if self.n < self.gap + 2:
            raise ValueError(
                f"n must be at least gap + 2 = {self.gap + 2} (a row, its neighbour, a far row), got n={n}"
            )
        for name, value, options in (("base", base, self.BASES), ("d_model", d_model, self.D_MODELS)):
            if value not in options:
                raise ValueError(f"{name} must be one of the slider's values {options}, got {value!r}")
        position = _validate.int_in_range("position", position, 0, self.n - 1)
        self.collisions = np.array([], dtype=int)
        self.longest_wavelength = float("nan")
        figure, (self._left, right) = plt.subplots(
            1, 2, figsize=style_figsize(10.0, 3.8), width_ratios=[1.0, 1.7], layout="constrained"
        )
        self._image = self._left.imshow(
            np.zeros((self.n, 2)), aspect="auto", interpolation="nearest", vmin=-1, vmax=1, cmap="RdBu_r"
        )
        figure.colorbar(self._image, ax=self._left, label="value", ticks=[-1, 0, 1])
        self._row = self._left.axhline(position, color="0.1", lw=2)  # near black: seen on red, white and blue
        self._left.set(title="the table", xlabel="dimension", ylabel="position", yticks=np.arange(0, self.n, 512))
        self._left.locator_params(axis="x", nbins=4, integer=True)
        self._left.grid(False)
        # Labelled for the figure's description (the alt text); no legend: text is most of the cost of a render.
        (self._curve,) = right.plot(
            np.arange(self.n), np.zeros(self.n), lw=0.8, color=COLOURS["sinusoidal"], label="distance to each row"
        )
        self._neighbour = right.axhline(  # the neighbours' distance
            1.0, color=COLOURS["reference"], ls="--", lw=1, label="distance between neighbouring rows"
        )
        (self._hits,) = right.plot([], [], "o", color=COLOURS["problem"], ms=4, label="collisions")
        self._here = right.axvline(position, color=COLOURS["reference"], lw=1)
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

    def layout_values(self):
        # d_model sets the distance axis (0-3 up to 0-17) and the table's columns: room for every one.
        return [{"d_model": d_model} for d_model in self.D_MODELS]

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
            f"collisions (dots): {self.collisions.size}; nearest far row: q={nearest} at {distance[nearest]:.2f}",
            fontsize="medium",  # the read-out of this explorer: as large as its other text
        )
        self._shown = (base, d_model, position, nearest, float(distance[nearest]), neighbour)
        return d_model  # sets the table's columns and the distance axis: one background per d_model

    def finding(self):
        base, d_model, position, nearest, distance, neighbour = self._shown
        count = self.collisions.size
        rows = f"{count} row is" if count == 1 else f"{count} rows are"
        return (
            f"Base {base:g}, d_model {d_model}: {rows} at least {self.gap} positions from {position} and yet closer to "
            f"it than neighbouring rows are to each other ({number(neighbour)}); the nearest far row is {nearest}, at "
            f"{number(distance)}; the slowest pair's wavelength is {self.longest_wavelength:,.0f} positions"
        )

    def animated_artists(self):
        return (self._image, self._row, self._curve, self._neighbour, self._hits, self._here, self._right.title)
