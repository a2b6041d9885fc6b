"""What a figure draws, in one paragraph: the alt text of the course's figures (pe_lib.accessible).

`describe(figure)` reads the figure's own artists, so it cannot go stale. Per panel: its title; each
axis's label with the range of the data drawn on it (clipped to the view, never the padded view
limits) or its categories; then every visible series by its label, or counted when it has none:
lines, points (markers without a line), bars by their tops, error bars, scatters, bands, step
outlines (histograms), images and grids with their colour scale; guide lines, shaded spans, texts,
and the legend entries no series is named by. Hidden artists are left out (a hidden bar is not a
zero). Colour bars, also those made with `cax=`, are said with what they colour. TeX is said in
words and a cut list says so ("first 12 of 64").
"""

import re

import numpy as np
from matplotlib.category import StrCategoryFormatter
from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
from matplotlib.colors import LogNorm
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FuncFormatter

from .figure_words import MAX_ITEMS, NOISE, listed, number, span, words

MAX_SERIES = 12  # series described one by one per panel; the names of the rest are listed


def describe(figure, *, numbers=True):
    """What a figure plots, as one paragraph, read from its artists (titles, axes, series, images, bars, texts).

    numbers=False leaves out the values read from the data (ranges, peaks, bar tops): for a figure of a
    live training run, whose last digits differ from one CPU to the next (nbval compares the alt text).
    """
    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    scales = _colour_bars(figure)
    panels = [_panel(ax, numbers) for ax in figure.axes if ax.get_visible() and ax not in scales]
    panels = [panel for panel in panels if panel]
    drawn = {id(m) for ax in figure.axes for m in (*ax.get_images(), *ax.collections)}
    extra = [_bare_scale(bar, numbers) for bar in scales.values() if id(bar.mappable) not in drawn]
    extra += _figure_texts(figure)
    title = words(figure.get_suptitle())
    head = f"Figure '{title}'" if title else "Figure"
    if len(panels) == 1:
        text = f"{head}: {panels[0]}."
    else:
        text = f"{head} with {len(panels)} panels. " + " ".join(f"({i}) {p}." for i, p in enumerate(panels, start=1))
    if extra:
        text += " " + " ".join(f"{part[0].upper()}{part[1:]}." for part in extra)
    return " ".join(text.split())


def _colour_bars(figure):
    """axes -> Colorbar, for every colour bar of the figure (made with `ax=` or `cax=`)."""
    found = {}
    for ax in figure.axes:
        for mappable in (*ax.get_images(), *ax.collections):
            bar = getattr(mappable, "colorbar", None)
            if bar is not None:
                found[bar.ax] = bar
        bar = getattr(ax, "_colorbar", None)  # also a colour bar of a bare ScalarMappable
        if bar is not None:
            found[ax] = bar
    return found


def _scale_label(bar):
    return words(bar.ax.get_ylabel() or bar.ax.get_xlabel() or bar.ax.get_title()) or "unlabelled"


def _colour_words(mappable, values, numbers):
    """', colour: <label>' for a mappable with a colour bar, with its scale where it is not the data's range."""
    bar = getattr(mappable, "colorbar", None)
    if bar is None:
        return ""
    text = f", colour: {_scale_label(bar)}"
    norm = mappable.norm
    if numbers and norm.vmin is not None and norm.vmax is not None:
        scale = span([norm.vmin, norm.vmax])
        if scale != span(values) or isinstance(norm, LogNorm):
            text += f" (colour scale {scale}{', log' if isinstance(norm, LogNorm) else ''})"
    return text


def _bare_scale(bar, numbers):
    norm = bar.mappable.norm
    text = f"a colour scale: {_scale_label(bar)}"
    return text + (f" from {span([norm.vmin, norm.vmax])}" if numbers and norm.vmin is not None else "")


def _figure_texts(figure):
    parts = []
    # The suptitle and the shared axis labels are texts of the figure too: said as the head and as axes.
    shared = {id(getattr(figure, name, None)) for name in ("_suptitle", "_supxlabel", "_supylabel")}
    for name, which in (("_supxlabel", "x"), ("_supylabel", "y")):
        label = getattr(figure, name, None)
        if label is not None and label.get_visible() and label.get_text().strip():
            parts.append(f"{which} of every panel: {words(label.get_text())}")
    texts = [
        words(t.get_text(), ", ")
        for t in figure.texts
        if t.get_visible() and t.get_text().strip() and id(t) not in shared
    ]
    if texts:
        parts.append("notes: " + listed(texts, separator="; "))
    for legend in figure.legends:
        if legend.get_visible():
            parts.append("legend: " + listed([words(t.get_text()) for t in legend.get_texts()]))
    return parts


class _Panel:
    """One axes in words: what each kind of artist draws is collected, then joined by `_panel`."""

    def __init__(self, ax, numbers):
        self.ax, self.numbers = ax, numbers
        self.view = {"x": sorted(ax.get_xlim()), "y": sorted(ax.get_ylim())}
        self.log = {"x": ax.get_xscale() in ("log", "logit"), "y": ax.get_yscale() in ("log", "logit")}
        self.extent = {"x": [], "y": []}  # data drawn inside the view, per axis
        self.series, self.guides, self.spans, self.names = [], [], [], set()
        self.unnamed_guides = {}  # direction -> positions
        self.ticks = {"x": _categories(ax.xaxis, self.view["x"]), "y": _categories(ax.yaxis, self.view["y"])}
        self.categories = {which: [label for _, label in ticks or ()] or None for which, ticks in self.ticks.items()}

    # --- reading data ------------------------------------------------------------------------------
    def data_axes(self, transform):
        """(x is data, y is data) for an artist's transform."""
        x, y = transform.contains_branch_seperately(self.ax.transData)
        return bool(x), bool(y)

    def inside(self, x, y):
        """The mask of points drawn inside the view (finite, positive on a log axis)."""
        keep = np.isfinite(x) & np.isfinite(y)
        for which, values in (("x", x), ("y", y)):
            low, high = self.view[which]
            keep &= (values >= low - 1e-9 * abs(low)) & (values <= high + 1e-9 * abs(high))
            if self.log[which]:
                keep &= values > 0
        return keep

    def note(self, which, values):
        values = np.asarray(values, dtype=float).ravel()
        low, high = self.view[which]
        values = np.clip(values[np.isfinite(values)], low, high)
        self.extent[which].append(values[values > 0] if self.log[which] else values)

    def at(self, which, value):
        """A position said by its category (a tick label at that position) or its number."""
        for tick, label in self.ticks[which] or ():
            if abs(tick - value) < 1e-9:
                return label
        return number(value)

    def extremes(self, x, y):
        """'y from a (at x = ...) to b (at x = ...)', or 'all at y = a' for a constant."""
        low, high = int(np.argmin(y)), int(np.argmax(y))
        if number(y[low]) == number(y[high]):
            return f"all at y = {number(y[low])}"
        return (
            f"y from {number(y[low])} (at x = {self.at('x', x[low])}) "
            f"to {number(y[high])} (at x = {self.at('x', x[high])})"
        )

    def name(self, artist, default=None):
        label = artist.get_label() if artist is not None else ""
        if label and not label.startswith("_"):
            named = words(label)
            self.names.add(named)
            return named
        return default

    # --- the artists ---------------------------------------------------------------------------------
    def lines(self, skip):
        unnamed = {}
        for line in self.ax.get_lines():
            if not line.get_visible() or id(line) in skip:
                continue
            x = np.asarray(line.get_xdata(), dtype=float).ravel()
            y = np.asarray(line.get_ydata(), dtype=float).ravel()
            data_x, data_y = self.data_axes(line.get_transform())
            if not (data_x and data_y):  # axhline, axvline: a guide across the axes
                self.guide(line, "horizontal" if data_y else "vertical", y[0] if data_y else x[0])
                continue
            if x.size == 2 and (x[0] == x[1] or y[0] == y[1]) and np.isfinite(x).all() and np.isfinite(y).all():
                vertical = x[0] == x[1]
                # a mark on one category row (a model's trained length) is named by its row
                row = self.row_name(np.array([np.nan]), y) if vertical else self.row_name(x, np.array([np.nan]))
                self.guide(line, "vertical" if vertical else "horizontal", x[0] if vertical else y[0], row)
                continue
            keep = self.inside(x, y)
            if not keep.any():
                continue  # a legend entry with nothing drawn, or all outside the view
            x, y = x[keep], y[keep]
            self.note("x", x)
            self.note("y", y)
            kind = _line_kind(line)
            name = self.name(line)
            row = None if name else self.row_name(x, y)
            if row:
                self.series.append(f"{row}: {self.line_words(kind, x, y, along_row=True)}")
            elif name is None:
                unnamed.setdefault(kind, []).append((x, y))
            else:
                self.series.append(f"{name}: {self.line_words(kind, x, y)}")
        for kind, drawn in unnamed.items():
            if len(drawn) == 1:
                self.series.append(f"unlabelled: {self.line_words(kind, *drawn[0])}")
                continue
            plural = {"points": "sets of points", "line": "lines", "step line": "step lines"}.get(kind, f"{kind}s")
            text = f"{len(drawn)} unlabelled {plural}"
            if self.numbers:
                xs, ys = np.concatenate([d[0] for d in drawn]), np.concatenate([d[1] for d in drawn])
                text += f" (together x {_from(xs)}, y {_from(ys)})"
            self.series.append(text)

    def row_name(self, x, y):
        """An unlabelled series drawn along one category of the other axis (a row of points, a wave drawn
        about its row) takes that category's name: the one category tick within its range."""
        for which, values in (("y", y), ("x", x)):
            ticks = self.ticks[which] or ()
            if not ticks or not np.isfinite(values).any():
                continue
            low, high = np.nanmin(values), np.nanmax(values)
            inside = [label for tick, label in ticks if low - 1e-9 <= tick <= high + 1e-9]
            if len(inside) == 1:
                return inside[0]
        return None

    def line_words(self, kind, x, y, along_row=False):
        """A line or points in words. along_row: drawn about a category row, whose y values are offsets from
        the row (03's waves, one per dimension): only where along the row is said."""
        n = x.size
        if kind == "points":
            if not self.numbers:
                return "one point" if n == 1 else f"{n} points"
            if along_row:
                return f"{n} points, x {_from(x)}"
            if n == 1:
                return f"one point at ({number(x[0])}, {number(y[0])})"
            if n <= MAX_ITEMS and len({number(v) for v in y}) == 1:  # marks along a line: where each one is
                return f"{n} points at x = {', '.join(self.at('x', v) for v in x)}, all at y = {number(y[0])}"
            return f"{n} points, {self.extremes(x, y)}"
        shape = {"line with markers": f"a line through {n} points", "step line": "a step line"}.get(kind, "a line")
        if not self.numbers:
            return shape
        over = "" if kind == "line with markers" else f" over x = {span(x)}"
        return f"{shape}{over}" if along_row else f"{shape}{over}, {self.extremes(x, y)}"

    def guide(self, line, direction, value, row=None):
        name = self.name(line)
        if row:
            name = f"{row}, {name}" if name else row
        if name:
            axis = "y" if direction == "horizontal" else "x"
            self.guides.append(
                f"{name}: a {direction} line" + (f" at {axis} = {number(value)}" if self.numbers else "")
            )
        else:
            self.unnamed_guides.setdefault(direction, []).append(value)

    def guide_words(self):
        """The named guides, then the unnamed ones by direction: 'horizontal lines at y = 0, 1.4'."""
        said = list(self.guides)
        for direction, values in self.unnamed_guides.items():
            axis = "y" if direction == "horizontal" else "x"
            values = list(dict.fromkeys(number(value) for value in sorted(values)))
            if len(values) == 1:
                said.append(f"a {direction} line" + (f" at {axis} = {values[0]}" if self.numbers else ""))
            else:
                where = f" at {axis} = {listed(values)}" if self.numbers else ""
                said.append(f"{len(values)} {direction} lines{where}")
        return said

    def bars(self, container, index, unnamed_count):
        patches = [patch for patch in container.patches if patch.get_visible()]
        if not patches:
            return False
        horizontal = getattr(container, "orientation", "vertical") == "horizontal"
        value_axis, place_axis = ("x", "y") if horizontal else ("y", "x")
        starts = np.array([p.get_x() if horizontal else p.get_y() for p in patches], dtype=float)
        lengths = np.array([p.get_width() if horizontal else p.get_height() for p in patches], dtype=float)
        places = np.array(
            [p.get_y() + p.get_height() / 2 if horizontal else p.get_x() + p.get_width() / 2 for p in patches]
        )
        tops = starts + lengths  # what a reader reads off the value axis: also for bars drawn from a `bottom`
        self.note(place_axis, places)
        self.note(value_axis, np.concatenate([starts, tops]))
        default = f"bars {index}" if unnamed_count > 1 else "bars"
        name = self.name(container, default)
        low = self.view[value_axis][0]
        base = ""
        if (
            self.numbers
            and np.all(starts == starts[0])
            and abs(starts[0]) >= NOISE
            and starts[0] >= low
            and not self.log[value_axis]  # on a log axis a bar starts at the foot of the view
        ):
            base = f" (bars from {value_axis} = {number(starts[0])})"
        if not self.numbers:
            self.series.append(f"{name}: {len(patches)} bars")
        elif len(patches) <= MAX_ITEMS:
            self.series.append(f"{name}{base}: " + ", ".join(number(top) for top in tops))
        else:
            low_i, high_i = int(np.argmin(tops)), int(np.argmax(tops))
            self.series.append(
                f"{name}{base}: {len(patches)} bars at {place_axis} = {span(places)}, from {number(tops[low_i])} "
                f"(at {place_axis} = {self.at(place_axis, places[low_i])}) to {number(tops[high_i])} "
                f"(at {place_axis} = {self.at(place_axis, places[high_i])})"
            )
        return True

    def error_bars(self, container, of_bars=False):
        """Error bars by their count and half-lengths; of_bars: drawn by bar(yerr=...), said after its bars."""
        halves = []
        for collection in container.lines[2]:
            if collection.get_visible():
                for segment in collection.get_segments():
                    segment = np.asarray(segment, dtype=float)
                    if segment.shape[0] == 2:
                        halves.append(np.abs(segment[1] - segment[0]).max() / 2)
                        self.note("x", segment[:, 0])
                        self.note("y", segment[:, 1])
        if not halves:
            return
        if of_bars:
            if self.numbers:
                self.series[-1] += f" (error bars ± {span(halves)})"
            return
        name = self.name(container, "error bars")
        text = f"{name}: {len(halves)}"
        self.series.append(text + (f", ± {span(halves)}" if self.numbers else ""))

    def collection(self, collection, unnamed_points):
        if isinstance(collection, PathCollection):
            offsets = np.ma.filled(np.ma.asarray(collection.get_offsets(), dtype=float), np.nan).reshape(-1, 2)
            if not all(self.data_axes(collection.get_offset_transform())):
                return
            keep = self.inside(offsets[:, 0], offsets[:, 1])
            if not keep.any():
                return  # an empty scatter: a legend entry
            x, y = offsets[keep, 0], offsets[keep, 1]
            self.note("x", x)
            self.note("y", y)
            name = self.name(collection)
            colour = _colour_words(collection, collection.get_array(), self.numbers) if name else ""
            if name is None:
                unnamed_points.append((x, y))
                return
            where = f", x {_from(x)}, y {_from(y)}" if self.numbers else ""
            self.series.append(f"{name}: {x.size} points{where}{colour}")
        elif isinstance(collection, QuadMesh):
            values = np.ma.filled(np.ma.asarray(collection.get_array(), dtype=float), np.nan)
            shape = "x".join(str(n) for n in values.shape[:2]) if values.ndim > 1 else f"{values.size}"
            text = f"a grid of {shape} values" + (f" {_values(values)}" if self.numbers else "")
            self.series.append(text + _colour_words(collection, values, self.numbers))
        elif isinstance(collection, LineCollection):
            segments = [np.asarray(s, dtype=float) for s in collection.get_segments() if len(s)]
            if not segments:
                return
            points = np.concatenate(segments)
            name = self.name(collection, "unlabelled")
            where = f", x {_from(points[:, 0])}, y {_from(points[:, 1])}" if self.numbers else ""
            self.series.append(f"{name}: {len(segments)} line segments{where}")
        elif isinstance(collection, PolyCollection):
            shapes = [_vertices(path) for path in collection.get_paths()]
            self.area(collection, [s for s in shapes if s.size], collection.get_transform())

    def area(self, artist, shapes, transform):
        """A filled or outlined shape: a span across the view, a band, or a step outline (a histogram)."""
        if not shapes:
            return
        data_x, data_y = self.data_axes(transform)
        across_y = not data_y or all(self.covers("y", s[:, 1]) for s in shapes)
        across_x = not data_x or all(self.covers("x", s[:, 0]) for s in shapes)
        name = self.name(artist)
        if across_y and data_x:
            where = listed([f"x = {span(s[:, 0])}" for s in shapes], separator="; ")
            self.spans.append((name, f"shaded over {where}" if self.numbers else "shaded"))
            return
        if across_x and data_y:
            where = listed([f"y = {span(s[:, 1])}" for s in shapes], separator="; ")
            self.spans.append((name, f"shaded over {where}" if self.numbers else "shaded"))
            return
        points = np.concatenate(shapes)
        keep = self.inside(points[:, 0], points[:, 1])
        if not keep.any():
            return
        x, y = points[keep, 0], points[keep, 1]
        self.note("x", x)
        self.note("y", y)
        filled = getattr(artist, "get_fill", lambda: True)()
        if not filled and len(shapes) == 1 and _is_steps(shapes[0]):
            base = y.min()
            above = x[y > base]
            text = "a step outline"
            if self.numbers and above.size:
                top = int(np.argmax(y))
                text += f", above {number(base)} over x = {span(above)}, highest {number(y[top])}"
                text += f" (at x = {number(x[top])})"
        else:
            text = ("a band" if filled else "an outline") + (
                f" over x = {span(x)}, y {_from(y)}" if self.numbers else ""
            )
        self.series.append(f"{name}: {text}" if name else f"unlabelled: {text}")

    def covers(self, which, values):
        low, high = self.view[which]
        values = values[np.isfinite(values)]
        return values.size > 0 and values.min() <= low and values.max() >= high

    def patches(self, skip):
        for patch in self.ax.patches:
            if not patch.get_visible() or id(patch) in skip:
                continue
            vertices = patch.get_patch_transform().transform(patch.get_path().vertices)
            self.area(patch, [vertices], patch.get_data_transform())

    def images(self):
        parts = []
        for image in self.ax.get_images():
            if not image.get_visible():
                continue
            table = np.ma.filled(np.ma.asarray(image.get_array(), dtype=float), np.nan)
            if table.ndim == 3:
                parts.append(f"a picture of {table.shape[0]}x{table.shape[1]} pixels")
                continue
            shape = "x".join(str(n) for n in table.shape[:2])
            text = f"an image of {shape} values"
            blank = int(np.sum(~np.isfinite(table)))
            if self.numbers:
                text += f" {_values(table)}"
            if blank:
                text += f" ({blank} of {table.size} cells blank)"
            parts.append(text + _colour_words(image, table, self.numbers))
        return parts

    # --- the panel in words ----------------------------------------------------------------------------
    def axis(self, which, numbers):
        ax = self.ax
        label = words(ax.get_xlabel() if which == "x" else ax.get_ylabel(), " ") or "unlabelled"
        categories = self.categories[which]
        if categories:
            return f"{which}: {label} ({listed(categories)})"
        text = f"{which}: {label}"
        values = np.concatenate(self.extent[which]) if self.extent[which] else np.array([])
        if numbers and self.numbers and values.size:
            text += f" {_from(values)}"
        scale = ax.get_xscale() if which == "x" else ax.get_yscale()
        if scale != "linear" and "log" not in label.lower():
            text += f" ({scale} scale)"
        return text


def _panel(ax, numbers):
    panel = _Panel(ax, numbers)
    skip = set()  # artists described with their container
    error_bars = []
    bar_containers = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            data_line, caps, columns = container.lines
            skip |= {id(a) for a in (data_line, *caps, *columns) if a is not None}
            error_bars.append(container)
        elif isinstance(container, BarContainer):
            skip |= {id(patch) for patch in container.patches}
            bar_containers.append(container)
    images = panel.images()
    panel.lines(skip)
    unnamed_bars = sum(1 for c in bar_containers if not c.get_label() or c.get_label().startswith("_"))
    own = {id(c.errorbar): c for c in bar_containers if getattr(c, "errorbar", None) is not None}
    for index, container in enumerate(bar_containers, start=1):
        said = panel.bars(container, index, unnamed_bars)
        if said and id(getattr(container, "errorbar", None)) in own:  # bar(yerr=...): said with its bars
            panel.error_bars(container.errorbar, of_bars=True)
    for container in error_bars:
        if id(container) not in own:
            panel.error_bars(container)
    unnamed_points = []
    for collection in ax.collections:
        if collection.get_visible() and id(collection) not in skip:
            panel.collection(collection, unnamed_points)
    if unnamed_points:
        x = np.concatenate([p[0] for p in unnamed_points])
        y = np.concatenate([p[1] for p in unnamed_points])
        where = f", x {_from(x)}, y {_from(y)}" if numbers else ""
        panel.series.append(f"{x.size} unlabelled points{where}")
    panel.patches(skip)

    titles = [words(ax.get_title(loc=loc)) for loc in ("left", "center", "right")]
    titles = [title for title in titles if title]
    parts = ["'" + "; ".join(titles) + "'" if titles else "untitled panel"]
    parts += images
    if ax.axison:
        parts += [panel.axis("x", not images), panel.axis("y", not images)]
    series = panel.series
    if len(series) > MAX_SERIES:
        rest = [item.split(":")[0] for item in series[MAX_SERIES:]]
        series = [*series[:MAX_SERIES], f"and {len(rest)} more series: {listed(rest)}"]
    parts += series
    parts += panel.guide_words()
    spans = [f"{name}: {where}" if name else where for name, where in panel.spans]
    parts += spans
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        entries = [words(t.get_text()) for t in legend.get_texts()]
        missing = [entry for entry in entries if entry and entry not in panel.names]
        if missing:
            parts.append("legend: " + listed(missing))
    texts = [words(t.get_text(), ", ") for t in ax.texts if t.get_visible() and t.get_text().strip()]
    if texts:
        parts.append("labels: " + listed(texts, separator="; "))
    if len(parts) == 1 and not ax.axison:
        return None  # an empty panel without axes: a spacer
    return ", ".join(parts)


def _from(values):
    """A range in words: "from 0 to 63", or "at 0.9" when it is one value."""
    said = span(values)
    return f"at {said}" if " to " not in said else f"from {said}"


def _values(values):
    """A table's values in words: "from -1 to 1", or "all 0" when they are one value."""
    said = span(values)
    return f"all {said}" if " to " not in said and said != "no finite values" else f"from {said}"


def _line_kind(line):
    style = line.get_linestyle()
    has_line = style not in ("None", "none", "", " ") and line.get_linewidth() > 0
    has_marker = line.get_marker() not in (None, "None", "none", "", " ")
    if not has_line:
        return "points" if has_marker else "line"
    if line.get_drawstyle().startswith("steps"):
        return "step line"
    return "line with markers" if has_marker else "line"


def _vertices(path):
    vertices = np.asarray(path.vertices, dtype=float)
    return vertices[np.isfinite(vertices).all(axis=1)] if vertices.size else vertices.reshape(0, 2)


def _is_steps(vertices):
    """True when each edge of an outline is horizontal or vertical (a step histogram)."""
    steps = np.diff(vertices, axis=0)
    return len(vertices) > 3 and bool(np.all((steps[:, 0] == 0) | (steps[:, 1] == 0)))


_NUMBER_LABEL = r"[−-]?(\d{1,3}(,\d{3})+|\d*)(\.\d+)?([eE][+−-]?\d+)?%?"


def _categories(axis, view):
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
        (float(loc), words(label))
        for loc, label in zip(locs, formatter.format_ticks(locs), strict=True)
        if low - 1e-9 * abs(low) <= loc <= high + 1e-9 * abs(high)
    ]
    pairs = [(loc, label) for loc, label in pairs if label]
    if not pairs or all(re.fullmatch(_NUMBER_LABEL, label) for _, label in pairs):
        return None
    return pairs
