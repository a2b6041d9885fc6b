"""One panel (matplotlib axes) of a figure in words: the part of `figure_description.describe` per axes.

`describe_panel(ax)` reads what the axes draw: its title; each axis's label with the range of the data
drawn on it (clipped to the view, never the padded view limits) or its categories; then every visible
series by its label, by the legend entry it looks like (colour, hatch, line style, marker), by the
category row it is drawn on, or counted: lines, points (markers without a line), bars by their tops,
error bars, scatters, bands and shapes, step outlines (histograms), images and grids with their colour
scale; guide lines, shaded spans, texts, and the legend entries no series is named by. Hidden artists
are left out (a hidden bar is not a zero).
"""

from collections import Counter

import numpy as np
from matplotlib.collections import LineCollection, PathCollection, PolyCollection, QuadMesh
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.patches import Rectangle

from .figure_artists import (
    categories,
    colour_words,
    error_segments,
    is_steps,
    legend_names,
    line_kind,
    look,
    merged,
    path_vertices,
    points_words,
    range_words,
    table_words,
)
from .figure_words import MAX_ITEMS, NOISE, listed, number, span, words

MAX_SERIES = 12  # series described one by one per panel; the names of the rest are listed


class _Panel:
    """One axes in words: what each kind of artist draws is collected, then joined by `_panel`."""

    def __init__(self, ax, numbers):
        self.ax, self.numbers = ax, numbers
        self.view = {"x": sorted(ax.get_xlim()), "y": sorted(ax.get_ylim())}
        self.log = {"x": ax.get_xscale() in ("log", "logit"), "y": ax.get_yscale() in ("log", "logit")}
        self.extent = {"x": [], "y": []}  # data drawn inside the view, per axis
        self.series, self.names = [], set()
        self.guide_parts = []  # (name, category row, direction, position) of each guide line
        self.span_parts = {}  # (name, axis) -> [(low, high)]: shading across the view
        self.areas = {}  # name (None: unlabelled) -> [(filled, x, y)]: shapes said together
        self.legend_names = legend_names(ax)  # the look of a legend entry's handle -> its text
        self.ticks = {"x": categories(ax.xaxis, self.view["x"]), "y": categories(ax.yaxis, self.view["y"])}
        self.categories = {which: [label for _, label in ticks or ()] or None for which, ticks in self.ticks.items()}

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

    def match(self, artist):
        """The legend entry an unlabelled artist looks like (colour, hatch, line style, marker), or None."""
        name = self.legend_names.get(look(artist))
        if name:
            self.names.add(name)
        return name

    def name(self, artist, default=None):
        label = artist.get_label() if artist is not None else ""
        if label and not label.startswith("_"):
            named = words(label)
            self.names.add(named)
            return named
        return default

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
                direction = "vertical" if vertical else "horizontal"
                self.guide(line, direction, x[0] if vertical else y[0], row and row[0])
                continue
            keep = self.inside(x, y)
            if not keep.any():
                continue  # a legend entry with nothing drawn, or all outside the view
            x, y = x[keep], y[keep]
            self.note("x", x)
            self.note("y", y)
            kind = line_kind(line)
            name = self.name(line) or self.match(line)
            row = None if name else self.row_name(x, y)
            if row:
                self.series.append(f"{row[0]}: {self.line_words(kind, x, y, along=row[1])}")
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
                text += f" (together x {range_words(xs)}, y {range_words(ys)})"
            self.series.append(text)

    def row_name(self, x, y):
        """(category, axis) of the one category tick within an unlabelled series' range (a row of points, a wave
        about its row, a column of seeds' dots): its name; else None."""
        for which, values in (("y", y), ("x", x)):
            ticks = self.ticks[which] or ()
            if not ticks or not np.isfinite(values).any():
                continue
            low, high = np.nanmin(values), np.nanmax(values)
            slack = 1e-6 * (self.view[which][1] - self.view[which][0])  # a wave that starts on its row's tick
            inside = [label for tick, label in ticks if low - slack <= tick <= high + slack]
            if len(inside) == 1:
                return inside[0], which
        return None

    def line_words(self, kind, x, y, along=None):
        """A line or points in words. along="y": about a category row, y offsets from it (03's waves): where
        along the row only; along="x": a column of points at one category (seeds' results): their values."""
        n = x.size
        if kind == "points":
            if not self.numbers:
                return "one point" if n == 1 else f"{n} points"
            if along:
                return f"{n} points, x {range_words(x)}" if along == "y" else f"{n} points, y {range_words(y)}"
            if n == 1:
                return f"one point at ({number(x[0])}, {number(y[0])})"
            if n <= MAX_ITEMS and len({number(v) for v in y}) == 1:  # marks along a line: where each one is
                return f"{n} points at x = {', '.join(self.at('x', v) for v in x)}, all at y = {number(y[0])}"
            return f"{n} points, {self.extremes(x, y)}"
        shape = {"line with markers": f"a line through {n} points", "step line": "a step line"}.get(kind, "a line")
        if not self.numbers:
            return shape
        over = "" if kind == "line with markers" else f" over x = {span(x)}"
        return f"{shape}{over}" if along == "y" else f"{shape}{over}, {self.extremes(x, y)}"

    def guide(self, line, direction, value, row=None):
        axis = "y" if direction == "horizontal" else "x"
        if not self.view[axis][0] <= value <= self.view[axis][1] or (self.log[axis] and value <= 0):
            return  # outside the view: not drawn (0 on a log axis)
        name = self.name(line) or self.match(line)
        self.guide_parts.append((name, row, direction, value))

    def guide_words(self):
        """Guides by name and direction: 'trained context: vertical lines: GPT-2 at x = 1,024, ...', '2 horizontal
        lines at y = 0, 0.5'."""
        groups = {}
        for name, row, direction, value in self.guide_parts:
            groups.setdefault((name, direction, bool(row)), []).append((row, value))
        said = []
        for (name, direction, _), items in groups.items():
            axis = "y" if direction == "horizontal" else "x"
            if all(row for row, _ in items):  # marks on category rows: each by its row
                where = [f"{row} at {axis} = {number(value)}" if self.numbers else row for row, value in items]
                text = f"{direction} lines: {listed(where)}" if len(items) > 1 else f"a {direction} line: {where[0]}"
            else:
                values = list(dict.fromkeys(number(value) for _, value in sorted(items, key=lambda item: item[1])))
                if len(values) == 1:
                    text = f"a {direction} line" + (f" at {axis} = {values[0]}" if self.numbers else "")
                else:
                    text = f"{len(values)} {direction} lines" + (
                        f" at {axis} = {listed(values)}" if self.numbers else ""
                    )
            said.append(f"{name}: {text}" if name else text)
        return said

    def bars(self, container, patches, index, unnamed_count, name=None):
        """Bars by their tops; `patches`: the visible ones to say (all of the container's, or those of one look)."""
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
        name = name or self.name(container)
        if name is None:
            matched = self.match(patches[0])  # bars drawn one container each, named by a legend of proxies
            row = self.at(place_axis, places[0]) if len(patches) == 1 else None
            if row is not None and row != number(places[0]):  # one bar on its category row: named by the row
                name = f"{row} ({matched})" if matched else row
            else:
                name = matched or (f"bars {index}" if unnamed_count > 1 else "bars")
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
        halves, ends = error_segments(container)
        if not halves:
            return
        self.note("x", ends[:, 0])
        self.note("y", ends[:, 1])
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
            colour = colour_words(collection, collection.get_array(), self.numbers) if name else ""
            if name is None:
                unnamed_points.setdefault(self.match(collection), []).append((x, y))
                return
            where = f", x {range_words(x)}, y {range_words(y)}" if self.numbers else ""
            self.series.append(f"{name}: {points_words(x.size)}{where}{colour}")
        elif isinstance(collection, QuadMesh):
            values = np.ma.filled(np.ma.asarray(collection.get_array(), dtype=float), np.nan)
            shape = "x".join(str(n) for n in values.shape[:2]) if values.ndim > 1 else f"{values.size}"
            text = f"a grid of {shape} values" + (f" {table_words(values)}" if self.numbers else "")
            self.series.append(text + colour_words(collection, values, self.numbers))
        elif isinstance(collection, LineCollection):
            segments = [np.asarray(s, dtype=float) for s in collection.get_segments() if len(s)]
            if not segments:
                return
            points = np.concatenate(segments)
            name = self.name(collection, "unlabelled")
            where = f", x {range_words(points[:, 0])}, y {range_words(points[:, 1])}" if self.numbers else ""
            self.series.append(f"{name}: {len(segments)} line segments{where}")
        elif isinstance(collection, PolyCollection):
            shapes = [path_vertices(path) for path in collection.get_paths()]
            self.area(collection, [s for s in shapes if s.size], collection.get_transform())

    def area(self, artist, shapes, transform):
        """A filled or outlined shape: a span across the view, a band, or a step outline (a histogram)."""
        if not shapes:
            return
        data_x, data_y = self.data_axes(transform)
        across_y = not data_y or all(self.covers("y", s[:, 1]) for s in shapes)
        across_x = not data_x or all(self.covers("x", s[:, 0]) for s in shapes)
        name = self.name(artist) or self.match(artist)
        for axis, across, is_data, column in (("x", across_y, data_x, 0), ("y", across_x, data_y, 1)):
            if across and is_data:
                parts = self.span_parts.setdefault((name, axis), [])
                parts += [(float(np.nanmin(s[:, column])), float(np.nanmax(s[:, column]))) for s in shapes]
                return
        points = np.concatenate(shapes)
        keep = self.inside(points[:, 0], points[:, 1])
        if not keep.any():
            return
        x, y = points[keep, 0], points[keep, 1]
        self.note("x", x)
        self.note("y", y)
        filled = getattr(artist, "get_fill", lambda: True)()
        if not filled and len(shapes) == 1 and is_steps(shapes[0]):
            base = y.min()
            above = x[y > base]
            text = "a step outline"
            if self.numbers and above.size:
                top = int(np.argmax(y))
                text += f", above {number(base)} over x = {span(above)}, highest {number(y[top])}"
                text += f" (at x = {number(x[top])})"
            self.series.append(f"{name}: {text}" if name else f"unlabelled: {text}")
        else:
            box = isinstance(artist, Rectangle) and not filled  # a box drawn around a cell or a region
            self.areas.setdefault(name, []).append(("box" if box else filled, x, y))

    def area_words(self):
        """The bands and shapes, by name: one by its ranges; many by their count, per category row if on rows."""
        for name, shapes in self.areas.items():
            if all(kind == "box" for kind, _, _ in shapes):
                centres = [
                    f"({number((x.min() + x.max()) / 2)}, {number((y.min() + y.max()) / 2)})" for _, x, y in shapes
                ]
                text = "a box" if len(shapes) == 1 else f"{len(shapes)} boxes"
                text += f" around (x, y) = {listed(centres)}" if self.numbers else ""
            elif len(shapes) == 1:
                filled, x, y = shapes[0]
                text = ("a band" if filled else "an outline") + (
                    f" over x = {span(x)}, y {range_words(y)}" if self.numbers else ""
                )
            else:
                rows = [self.row_name(x, y) for _, x, y in shapes]
                text = f"{len(shapes)} shapes"
                if all(rows):
                    text += " (" + listed(f"{row} {n}" for row, n in Counter(r[0] for r in rows).items()) + ")"
                elif self.numbers:
                    xs, ys = np.concatenate([s[1] for s in shapes]), np.concatenate([s[2] for s in shapes])
                    text += f" over x = {span(xs)}, y {range_words(ys)}"
            self.series.append(f"{name}: {text}" if name else f"unlabelled: {text}")

    def span_words(self):
        """Shading across the view, by name, its touching intervals merged: 'shaded over x = 3.5 to 16; 18 to 30'."""
        said = []
        for (name, axis), intervals in self.span_parts.items():
            where = listed([span(interval) for interval in merged(intervals)], separator="; ")
            text = f"shaded over {axis} = {where}" if self.numbers else "shaded"
            said.append(f"{name}: {text}" if name else text)
        return said

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
                text += f" {table_words(table)}"
            if blank:
                text += f" ({blank} of {table.size} cells blank)"
            parts.append(text + colour_words(image, table, self.numbers))
        return parts

    def axis(self, which, numbers):
        ax = self.ax
        label = words(ax.get_xlabel() if which == "x" else ax.get_ylabel(), " ") or "unlabelled"
        categories = self.categories[which]
        if categories:
            return f"{which}: {label} ({listed(categories)})"
        text = f"{which}: {label}"
        values = np.concatenate(self.extent[which]) if self.extent[which] else np.array([])
        if numbers and self.numbers and values.size:
            text += f" {range_words(values)}"
        scale = ax.get_xscale() if which == "x" else ax.get_yscale()
        if scale != "linear" and "log" not in label.lower():
            text += f" ({scale} scale)"
        return text


def describe_panel(ax, numbers=True, said=None):
    """One axes in words (a clause of `describe`), or None for an empty panel without axes (a spacer); the names
    of the series it describes are added to the set `said` (a figure's legend then lists only the others)."""
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
        patches = [patch for patch in container.patches if patch.get_visible()]
        looks = {}  # bars of one container that look different (04: sin filled, cos hatched), by legend entry
        for patch in patches:
            looks.setdefault(look(patch), []).append(patch)
        named = {seen: panel.legend_names.get(seen) for seen in looks}
        if len(looks) > 1 and all(named.values()) and panel.name(container) is None:
            for seen, group in looks.items():
                panel.names.add(named[seen])
                panel.bars(container, group, index, unnamed_bars, name=named[seen])
            continue
        drawn = panel.bars(container, patches, index, unnamed_bars)
        if drawn and id(getattr(container, "errorbar", None)) in own:  # bar(yerr=...): said with its bars
            panel.error_bars(container.errorbar, of_bars=True)
    for container in error_bars:
        if id(container) not in own:
            panel.error_bars(container)
    unnamed_points = {}  # the legend entry they look like (None: none) -> [(x, y)]
    for collection in ax.collections:
        if collection.get_visible() and id(collection) not in skip:
            panel.collection(collection, unnamed_points)
    for name, drawn in unnamed_points.items():
        x = np.concatenate([p[0] for p in drawn])
        y = np.concatenate([p[1] for p in drawn])
        where = f", x {range_words(x)}, y {range_words(y)}" if numbers else ""
        panel.series.append(f"{name}: {points_words(x.size)}{where}" if name else f"{x.size} unlabelled points{where}")
    panel.patches(skip)
    panel.area_words()

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
    parts += panel.span_words()
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        entries = [words(t.get_text()) for t in legend.get_texts()]
        missing = [entry for entry in entries if entry and entry not in panel.names]
        if missing:
            parts.append("legend: " + listed(missing))
    texts = [words(t.get_text(), ", ") for t in ax.texts if t.get_visible() and t.get_text().strip()]
    if texts:
        parts.append("labels: " + listed(texts, separator="; "))
    if said is not None:
        said |= panel.names
    if len(parts) == 1 and not ax.axison:
        return None  # an empty panel without axes: a spacer
    return ", ".join(parts)
