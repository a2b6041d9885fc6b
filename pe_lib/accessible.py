"""Figures with alt text: what a screen reader says instead of `../_images/54fb27….png`.

`show(figure, finding=...)` ends a plot cell instead of `plt.show()`. It displays the figure as
an `<img>` with an `alt` attribute, as text/html, the one output type that carries alt text both
in JupyterLab (its image renderer sets no alt) and in the book (MyST-NB writes the HTML as it is).
The alt text is read from the figure itself (`describe`): each panel's title and axes, every
labelled series with its range and where it peaks, images with their value range, bar values,
texts in the axes. So it says what is plotted and cannot go stale. What the figure is *for* is the
notebook's to say, with its computed numbers: the `finding`, put first.

nbval compares text/html: numbers are rounded to two significant digits (`text.measured`), and
tests/nbval_sanitize.cfg replaces the PNG's base64 (which differs by CPU) before comparing.
The explorers (pe_lib.explorer) use `describe` and `img_html` for their frames too.
"""

import base64
import html
import io
import struct
import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from .colours import figure_problems
from .text import measured

MAX_SERIES = 8  # series described one by one per panel; the rest are counted


def number(value):
    """A value as alt text: two significant digits, the same on every CPU (a rounding residue reads '< 1e-06')."""
    value = float(value)
    return "0" if value == 0 else measured(value)


def _span(values):
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return "no finite values"
    low, high = number(values.min()), number(values.max())
    return low if low == high else f"{low} to {high}"


def _categories(axis):
    """The tick labels of an axis that names categories (words, models), else None."""
    labels = [tick.get_text().strip() for tick in axis.get_ticklabels()]
    labels = [label for label in labels if label]
    numeric = all(label.replace("\u2212", "-").replace(".", "", 1).lstrip("-").isdigit() for label in labels)
    return None if not labels or numeric or axis.get_scale() != "linear" else labels


def _axis(ax, which, numbers=True):
    label = (ax.get_xlabel() if which == "x" else ax.get_ylabel()).strip()
    categories = _categories(ax.xaxis if which == "x" else ax.yaxis)
    if categories:
        shown = ", ".join(categories[:12]) + (", ..." if len(categories) > 12 else "")
        return f"{which}: {label or 'unlabelled'} ({shown})"
    low, high = ax.get_xlim() if which == "x" else ax.get_ylim()
    scale = (ax.get_xscale() if which == "x" else ax.get_yscale()).replace("linear", "")
    text = f"{which}: {label or 'unlabelled'}"
    if numbers:
        text += f" from {number(min(low, high))} to {number(max(low, high))}"
    return text + (f" ({scale} scale)" if scale else "")


def _line(line):
    """A labelled line in words, or None when it draws nothing (a legend entry)."""
    x = np.asarray(line.get_xdata(), dtype=float)
    y = np.asarray(line.get_ydata(), dtype=float)
    finite = np.isfinite(x) & np.isfinite(y)
    if not finite.any():
        return None  # a legend entry with nothing drawn
    x, y = x[finite], y[finite]
    if y.size == 1:
        return f"{line.get_label()}: one point at ({number(x[0])}, {number(y[0])})"
    top, bottom = int(np.argmax(y)), int(np.argmin(y))
    return (
        f"{line.get_label()}: {y.size} points, y from {number(y[bottom])} (at x = {number(x[bottom])}) "
        f"to {number(y[top])} (at x = {number(x[top])})"
    )


def _is_reference_line(line):
    """A horizontal or vertical guide (axhline, axvline): part of the axes, not a series."""
    x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
    return x.size == 2 and (x[0] == x[1] or y[0] == y[1])


def _panel(ax, numbers=True):
    if ax.get_label() == "<colorbar>":  # described with its image
        return None
    title = ax.get_title().strip() or ax.get_title(loc="left").strip()
    parts = [f"'{title}'" if title else "untitled panel"]
    images = [image for image in ax.get_images() if image.get_visible()]
    for image in images:
        table = np.ma.filled(np.ma.asarray(image.get_array(), dtype=float), np.nan)
        colorbar = getattr(image, "colorbar", None)
        label = f", colour: {colorbar.ax.get_ylabel() or colorbar.ax.get_xlabel()}" if colorbar is not None else ""
        shape = "x".join(str(n) for n in table.shape[:2])
        values = f" from {_span(table)}" if numbers else ""
        parts.append(f"an image of {shape} values{values}{label}")
    if not images:
        parts += [_axis(ax, "x", numbers), _axis(ax, "y", numbers)]
    else:
        parts += [f"x: {ax.get_xlabel() or 'unlabelled'}", f"y: {ax.get_ylabel() or 'unlabelled'}"]
    series = []
    lines = [line for line in ax.get_lines() if line.get_visible() and not _is_reference_line(line)]
    named = [line for line in lines if not line.get_label().startswith("_")]
    if numbers:
        series += [text for text in map(_line, named) if text]
    else:
        series += [line.get_label() for line in named if _line(line)]
    if len(lines) > len(named):
        series.append(f"{len(lines) - len(named)} unlabelled line(s)")
    for container in ax.containers:
        if isinstance(container, BarContainer) and container.patches:
            horizontal = getattr(container, "orientation", "vertical") == "horizontal"
            heights = [patch.get_width() if horizontal else patch.get_height() for patch in container.patches]
            label = container.get_label()
            name = "bars" if not label or label.startswith("_") else label
            values = ", ".join(number(h) for h in heights[:12]) + (", ..." if len(heights) > 12 else "")
            series.append(f"{name}: {values}" if numbers else f"{name}: {len(heights)} bars")
    unnamed = 0
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and collection.get_visible():
            points = len(collection.get_offsets())
            label = collection.get_label()
            if not label or label.startswith("_"):
                unnamed += points
            elif points:
                series.append(f"{label}: {points} scattered points")
    if unnamed:
        series.append(f"{unnamed} scattered points")
    if len(series) > MAX_SERIES:
        series = series[:MAX_SERIES] + [f"and {len(series) - MAX_SERIES} more series"]
    parts += series
    texts = [t.get_text().strip() for t in ax.texts if t.get_visible() and t.get_text().strip()]
    if texts:
        parts.append("labels: " + "; ".join(texts[:MAX_SERIES]))
    return ", ".join(parts)


def describe(figure, *, numbers=True):
    """What a figure plots, as one paragraph, read from its artists (titles, axes, series, images, bars, texts).

    numbers=False leaves out the values read from the data (ranges, peaks, bar heights): for a figure of a
    live training run, whose last digits differ from one CPU to the next (nbval compares the alt text).
    """
    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    panels = [_panel(ax, numbers) for ax in figure.axes if ax.get_visible()]
    panels = [panel for panel in panels if panel]
    title = figure.get_suptitle().strip()
    head = f"Figure '{title}'" if title else "Figure"
    if len(panels) == 1:
        text = f"{head}: {panels[0]}."
    else:
        text = f"{head} with {len(panels)} panels. " + " ".join(f"({i}) {p}." for i, p in enumerate(panels, start=1))
    return " ".join(text.split())  # one line: titles and labels may hold line breaks


def alt_text(figure, finding="", *, numbers=True):
    """The alt text of a figure: the finding (what it shows, said by the notebook) first, then `describe`."""
    if not isinstance(finding, str):
        raise TypeError(f"finding must be a string, got {type(finding).__name__}")
    finding = finding.strip()
    if finding and not finding.endswith("."):
        finding += "."
    return f"{finding} {describe(figure, numbers=numbers)}".strip()


def img_html(png, alt, width, height):
    """An <img> of PNG bytes (inline, base64) shown at width x height CSS pixels, with its alt text."""
    if not alt or not isinstance(alt, str):
        raise ValueError(f"alt must be a non-empty string, got {alt!r}")
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
        f'width="{round(width)}" height="{round(height)}" style="max-width: 100%; height: auto">'
    )


class Described:
    """A rendered figure and its alt text; shown as an <img alt=...> (text/html), or the alt text alone."""

    def __init__(self, figure, alt):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=figure.dpi, bbox_inches="tight")  # as the inline backend does
        self.png = buffer.getvalue()
        self.alt = alt
        self.width, self.height = struct.unpack(">II", self.png[16:24])  # the PNG's header: shown at 1 px per px

    def _repr_mimebundle_(self, **kwargs):
        return {"text/html": img_html(self.png, self.alt, self.width, self.height), "text/plain": self.alt}


def show(figure=None, *, finding="", numbers=True):
    """Display `figure` (default: the current one) with its alt text, then close it; ends a plot cell.

    finding: what the figure shows, with the numbers the notebook computed for it, e.g.
    f"learned rows past the training length stay at their initial values ({number(change)})".
    numbers=False: the alt text leaves out the values read from the data (see `describe`).
    The figure's colours are checked first (`colours.figure_problems`): a problem is a warning,
    which nbval and the notebooks' hygiene check catch as stderr.
    """
    if figure is None:
        figure = plt.gcf()
    for problem in figure_problems(figure):
        warnings.warn(f"figure colours: {problem}", stacklevel=2)
    described = Described(figure, alt_text(figure, finding, numbers=numbers))
    plt.close(figure)  # shown once, through the <img>, not again by the inline backend
    from IPython.display import display

    display(described)
    return None
