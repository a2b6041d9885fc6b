"""The course's figure style and the figures more than one chapter draws.

Figures share one look (titles, labelled axes, colour bars) and a lecture style with large
fonts and thick lines for a projector: `use_style(lecture=True)`. Each chapter module draws
its own figures with these helpers. Sizes are given for the base style and scaled to the
current one with `style_figsize`, so every figure grows in the lecture style.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from matplotlib.transforms import Bbox

from . import _validate
from .text import measured

# The course's series colours, C0-C5 in every figure. Chosen so that any two stay at least 10 apart
# (CAM02-UCS) under normal vision and simulated deuteranopia, protanopia and tritanopia (smallest:
# 11.7, blue and green for tritanopia), and every one has 3:1 contrast on white (WCAG's non-text
# contrast): Okabe and Ito's blue and green, their orange and vermillion darkened, a magenta, black.
# tests/test_colours.py checks both. matplotlib's default (tab10) puts green and red 5.2 apart for
# deuteranopia and orange and green 1.6 apart for protanopia.
PALETTE = ("#0072B2", "#BA7E00", "#009E73", "#8F2D00", "#DF40FF", "#000000")
# One colour, one meaning, across the course (CONTRIBUTING.md): a method keeps its colour in every
# chapter, red marks what goes wrong, grey is a reference (chance, a guide line, an untrained part).
COLOURS = {
    "sinusoidal": "C0",
    "learned": "C1",
    "rope": "C2",
    "alibi": "C4",
    "t5": "C5",
    "none": "0.45",
    "problem": "C3",
    "reference": "0.3",
}

_BASE_STYLE = {
    "axes.prop_cycle": cycler(color=PALETTE),
    "figure.figsize": (8.0, 4.0),
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "RdBu_r",
    "font.size": 11,
    "axes.titlesize": 12,
    "lines.linewidth": 1.6,
}


_LECTURE_STYLE = {
    "figure.figsize": (11.0, 5.5),
    "font.size": 16,
    "axes.titlesize": 19,
    "axes.labelsize": 17,
    "xtick.labelsize": 14,
    "ytick.labelsize": 14,
    "legend.fontsize": 14,
    "lines.linewidth": 3.0,
    "lines.markersize": 9,
}


def floats(values):
    """Plot data as a float array: NumPy, lists, and torch tensors (also requiring grad, or bfloat16)."""
    return _validate.as_numpy(values).astype(float, copy=False)


def use_style(lecture=False):
    """Apply the course's figure style; lecture=True for large fonts and thick lines."""
    mpl.rcParams.update(_BASE_STYLE)
    if lecture:
        mpl.rcParams.update(_LECTURE_STYLE)


def style_figsize(width, height):
    """A figure size given in inches for the base style, scaled to the current style.

    The lecture style's figures are 11/8 as large, to hold its larger fonts.
    """
    scale = mpl.rcParams["figure.figsize"][0] / _BASE_STYLE["figure.figsize"][0]
    return (width * scale, height * scale)


def new_axes(ax, figsize=None):
    """Return (figure, axes): the given axes' figure, or a new figure.

    figsize: inches in the base style (scaled to the current style); None for the style's default.
    """
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=None if figsize is None else style_figsize(*figsize))
    return fig, ax


def freeze_layout(figure, room=None):
    """Lay out a figure made with layout="constrained" once, then keep that layout: redraws skip the layout pass.

    room: axes -> (left, bottom, right, top), pixels the layout keeps around each axes' box for
    its decorations at the least (`decoration_margins`, `widest_margins`): e.g. for tick labels
    wider than the ones shown now, which a later look of the figure will show.
    """
    patched = list(room or {})
    for ax in patched:
        ax.get_tightbbox = _holding_room(ax, ax.get_tightbbox, room[ax])  # what the layout engine measures
    try:
        figure.draw_without_rendering()
    finally:
        for ax in patched:
            del ax.get_tightbbox
    figure.set_layout_engine("none")
    return figure


def _holding_room(ax, get_tightbbox, sides):
    left, bottom, right, top = sides

    def held(renderer=None, *args, **kwargs):
        box = get_tightbbox(renderer, *args, **kwargs)  # also places the axes' box (its aspect ratio)
        inside = ax.get_position().transformed(ax.figure.transSubfigure)
        room = Bbox.from_extents(inside.x0 - left, inside.y0 - bottom, inside.x1 + right, inside.y1 + top)
        return room if box is None else Bbox.union([box, room])

    return held


def decoration_margins(figure):
    """axes -> (left, bottom, right, top): how far, in pixels, each axes' decorations reach out of its box.

    Decorations as a layout engine measures them (tick labels, axis labels, colour-bar labels,
    texts placed beside the axes); the title's and the x label's widths are left out.
    """
    renderer = figure.canvas.get_renderer()
    margins = {}
    for ax in figure.axes:
        if not ax.get_visible() or not ax.get_in_layout():
            continue
        box = ax.get_tightbbox(renderer, for_layout_only=True)
        if box is None:
            continue
        inside = ax.get_position().transformed(figure.transSubfigure)  # after get_tightbbox applied the aspect
        margins[ax] = (inside.x0 - box.x0, inside.y0 - box.y0, box.x1 - inside.x1, box.y1 - inside.y1)
    return margins


def widest_margins(*margins):
    """The widest of several `decoration_margins`, side by side and axes by axes."""
    widest = {}
    for found in margins:
        for ax, sides in found.items():
            widest[ax] = tuple(map(max, widest.get(ax, sides), sides))
    return widest


def heatmap(table, *, title, xlabel="dimension", ylabel="position", colorbar_label="value", ax=None, symmetric=True):
    """A table (rows x columns) as an image with a colour bar; symmetric colours around 0 by default."""
    table = floats(table)
    fig, ax = new_axes(ax)
    limit = float(np.max(np.abs(table))) if table.size else 1.0
    kwargs = {"vmin": -limit, "vmax": limit} if symmetric else {"cmap": "viridis"}
    image = ax.imshow(table, aspect="auto", interpolation="nearest", **kwargs)
    fig.colorbar(image, ax=ax, label=colorbar_label)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(False)
    return fig


def offset_curves(offsets, curves, *, title, xlabel="offset k = q - p", ylabel="PE(p) · PE(p+k)", ax=None, logx=False):
    """One line per entry of `curves` (label -> values, one per offset) against the offset k."""
    fig, ax = new_axes(ax)
    offsets = floats(offsets)
    for label, values in curves.items():
        ax.plot(offsets, floats(values), label=label)
    ax.axhline(0.0, color="0.3", lw=0.8)
    if logx:
        ax.set_xscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if len(curves) > 1:
        ax.legend()
    return fig


def order_shift_bars(words, shifts, *, title, ylabel="distance between outputs", values_on_bars=False, ax=None):
    """Grouped bars: for each word (x axis) and each model (colour), how far its output moved.

    shifts: dict label -> array (len(words),). The legend gives each model's largest shift,
    so bars too small to see are still reported as a number; values_on_bars writes every value.
    """
    words = list(words)
    if not shifts:
        raise ValueError("shifts must name at least one model")
    fig, ax = new_axes(ax)
    width = 0.8 / len(shifts)
    centres = np.arange(len(words))
    for index, (label, values) in enumerate(shifts.items()):
        values = floats(values)
        if values.shape != (len(words),):
            raise ValueError(f"shifts[{label!r}] must have one value per word ({len(words)}), got shape {values.shape}")
        offset = (index - (len(shifts) - 1) / 2) * width
        bars = ax.bar(centres + offset, values, width=width, label=f"{label} (largest {measured(values.max())})")
        if values_on_bars:
            ax.bar_label(bars, fmt="%.3f", fontsize="small")
    ax.set_xticks(centres, labels=words)
    ax.set(title=title, xlabel="word", ylabel=ylabel)
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize="small")
    return fig
