"""What a matplotlib artist is, for `figure_panel`: its look, its kind, its outline, an axis's categories.

`look` is what tells an artist apart to the eye (colour, hatch, line style, marker), so that an
unlabelled series can take the name of the legend entry it looks like (`legend_names`). `categories`
reads the tick labels of an axis that names categories (words, models), `line_kind` tells points
(markers only) from lines, `colour_words` says a mappable's colour bar.
"""

import re

import numpy as np
from matplotlib.category import StrCategoryFormatter
from matplotlib.collections import PathCollection
from matplotlib.colors import LogNorm, to_hex
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedFormatter, FuncFormatter

from .figure_words import span, words


def scale_label(bar):
    return words(bar.ax.get_ylabel() or bar.ax.get_xlabel() or bar.ax.get_title()) or "unlabelled"


def colour_words(mappable, values, numbers):
    """', colour: <label>' for a mappable with a colour bar, with its scale where it is not the data's range."""
    bar = getattr(mappable, "colorbar", None)
    if bar is None:
        return ""
    text = f", colour: {scale_label(bar)}"
    norm = mappable.norm
    if numbers and norm.vmin is not None and norm.vmax is not None:
        scale = span([norm.vmin, norm.vmax])
        if scale != span(values) or isinstance(norm, LogNorm):
            text += f" (colour scale {scale}{', log' if isinstance(norm, LogNorm) else ''})"
    return text


def look(artist):
    """How an artist looks (colour, hatch, line style, marker), to match it with a legend entry's handle."""
    try:
        if isinstance(artist, Line2D):
            return ("line", to_hex(artist.get_color()), artist.get_linestyle(), str(artist.get_marker()))
        if isinstance(artist, Patch):
            return ("area", to_hex(artist.get_facecolor()), artist.get_hatch() or "")
        colours = artist.get_facecolor()
        if len(colours) == 0:
            colours = [(0.0, 0.0, 0.0, 0.0)]  # no fill: an open marker, said by its edge
        if isinstance(artist, PathCollection):  # by its fill, or its edge when it has none (an open marker)
            edges = artist.get_edgecolor()
            fill = to_hex(colours[0]) if colours[0][3] > 0 else "none"
            return ("points", fill, to_hex(edges[0]) if fill == "none" and len(edges) else "")
        return ("area", to_hex(colours[0]), artist.get_hatch() or "")
    except (AttributeError, TypeError, ValueError):
        return None


def legend_names(ax):
    """The look of each legend entry's handle -> its text, for the looks that name one entry only."""
    found = {}
    for legend in (ax.get_legend(), *ax.figure.legends):
        if legend is None or not legend.get_visible():
            continue
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=False):
            seen = look(handle) if handle is not None else None
            if seen is not None and text.get_text().strip():
                found.setdefault(seen, []).append(words(text.get_text(), " "))
    return {seen: names[0] for seen, names in found.items() if len(set(names)) == 1}


def range_words(values):
    """A range in words: "from 0 to 63", or "at 0.9" when it is one value."""
    said = span(values)
    return f"at {said}" if " to " not in said else f"from {said}"


def table_words(values):
    """A table's values in words: "from -1 to 1", or "all 0" when they are one value."""
    said = span(values)
    return f"all {said}" if " to " not in said and said != "no finite values" else f"from {said}"


def line_kind(line):
    style = line.get_linestyle()
    has_line = style not in ("None", "none", "", " ") and line.get_linewidth() > 0
    has_marker = line.get_marker() not in (None, "None", "none", "", " ")
    if not has_line:
        return "points" if has_marker else "line"
    if line.get_drawstyle().startswith("steps"):
        return "step line"
    return "line with markers" if has_marker else "line"


def path_vertices(path):
    """A path's finite vertices (n, 2)."""
    vertices = np.asarray(path.vertices, dtype=float)
    return vertices[np.isfinite(vertices).all(axis=1)] if vertices.size else vertices.reshape(0, 2)


def is_steps(vertices):
    """True when each edge of an outline is horizontal or vertical (a step histogram), and it is no rectangle."""
    steps = np.diff(vertices, axis=0)
    return len(vertices) > 5 and bool(np.all((steps[:, 0] == 0) | (steps[:, 1] == 0)))


_NUMBER_LABEL = r"[−-]?(\d{1,3}(,\d{3})+|\d*)(\.\d+)?([eE][+−-]?\d+)?%?"


def categories(axis, view):
    """(position, label) of the ticks of an axis that names categories (words, models), else None."""
    formatter = axis.get_major_formatter()
    # Words come from fixed labels (set_xticks(..., labels)), categorical units or a function; a number
    # formatter says numbers: not formatting its ticks saves most of the time of a description.
    if axis.get_scale() != "linear" or not isinstance(formatter, FixedFormatter | StrCategoryFormatter | FuncFormatter):
        return None
    locs = np.asarray(axis.get_majorticklocs(), dtype=float)
    ticks = axis.get_major_ticks(len(locs))
    if not len(locs) or not ticks[0].label1.get_visible():
        return None
    low, high = view
    pairs = [
        (float(loc), words(label, " "))
        for loc, label in zip(locs, formatter.format_ticks(locs), strict=True)
        if low - 1e-9 * abs(low) <= loc <= high + 1e-9 * abs(high)
    ]
    pairs = [(loc, label) for loc, label in pairs if label]
    if not pairs or all(re.fullmatch(_NUMBER_LABEL, label) for _, label in pairs):
        return None
    return pairs


def merged(intervals):
    """(low, high) intervals with the ones that touch or overlap joined, in order."""
    joined = []
    for low, high in sorted(intervals):
        if joined and low <= joined[-1][1] + 1e-9 * max(1.0, abs(joined[-1][1])):
            joined[-1][1] = max(joined[-1][1], high)
        else:
            joined.append([low, high])
    return joined


def points_words(n):
    return "one point" if n == 1 else f"{n} points"


def error_segments(container):
    """The half-lengths of an ErrorbarContainer's visible bars, and their end points (n, 2)."""
    halves, ends = [], []
    for collection in container.lines[2]:
        if collection.get_visible():
            for segment in collection.get_segments():
                segment = np.asarray(segment, dtype=float)
                if segment.shape[0] == 2:
                    halves.append(np.abs(segment[1] - segment[0]).max() / 2)
                    ends.append(segment)
    return halves, np.concatenate(ends) if ends else np.empty((0, 2))
