"""Checks on a figure's finding: it names series rather than colours, says no code, and quotes true numbers.

A finding is the sentence under a figure (`pe_lib.accessible.show`): what the figure shows, for every
reader, also one who hears it read aloud or cannot tell red from green. So it names a series by what it
is ("the integer position vector"), never by how it is drawn ("red dots", "the dashed line", "a bright
diagonal"), and says in words what code would say (`S[p+1, q+1] = S[p, q]: True`).

- `finding_problems(text)`: the words of a finding that lean on sight or on code, as messages.
- `quoted_numbers(text)`: the numbers a finding quotes, each with the precision it is printed at.
- `drawn_values(figure, label)`: a series' values read back from the figure, for the cell to recompute
  what its finding quotes from what is drawn.
- `check_quotes(text, values)`: each value, recomputed by the notebook cell, must be one of the finding's
  numbers as printed (0.2634 is "0.26" or "26%", not "0.27"); returns the problems. Give a mapping
  {what: value} to have each problem say what the value is.
"""

import math
import re
from collections.abc import Mapping

import numpy as np
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from .figure_words import words

_COLOURS = (
    "red|green|blue|orange|yellow|purple|violet|magenta|pink|brown|gr[ae]y|black|white|cyan|teal|turquoise|"
    "vermill?ion|maroon|navy|olive|lime|gold|beige|crimson|scarlet|bright|brighter|brightest|dark|darker|darkest"
)
_STYLES = "dotted|dashed|hatched|hatching|shaded|shading|dots|triangles|diamonds"  # not "crosses" (zero), "squares"
_CODE = (
    (r"\b[A-Za-z_]\w*\[[^\]]*\]", "indexing"),
    (r"\b(?:True|False|None)\b", "a Python literal"),
    (r"==|!=|:=|\+=|&&|\|\|", "an operator"),
    (r"\b(?:np|torch|pe_lib|plt|math|F|nn)\.\w+", "a library call"),
    (r"\b[a-z][a-z0-9]+(?:_[a-z0-9]+)+\b", "an identifier"),
    (r"`[^`]+`", "code in backticks"),
)

_NAMES = {"pe_lib"}  # the course's library: a name, not an expression


def finding_problems(text):
    """Messages for the words of a finding that name a colour or a drawing style, or quote code; [] if none."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    problems = []
    for match in re.finditer(rf"\b(?:{_COLOURS})(?:ish)?\b", text, flags=re.IGNORECASE):
        problems.append(
            f"names a colour or brightness ('{match[0]}'): name the series or the values instead, e.g. "
            "'the integer position vector', 'the largest values'"
        )
    for match in re.finditer(rf"\b(?:{_STYLES})\b", text, flags=re.IGNORECASE):
        problems.append(f"names how something is drawn ('{match[0]}'): name what it shows instead")
    for pattern, kind in _CODE:
        for match in re.finditer(pattern, text):
            if match[0] not in _NAMES:
                problems.append(f"quotes code, {kind} ('{match[0]}'): say it in words")
    return problems


# A number as printed: an optional bound ("< 1e-06"), a sign only where it is no hyphen ("0-999" is two
# numbers), digits with or without thousands separators, decimals, an exponent, a percent sign.
_NUMBER = re.compile(
    r"(?P<bound><\s*)?(?P<sign>(?<![\w)\]])[-−])?"
    r"(?<![\w.])(?P<int>\d{1,3}(?:,\d{3})+(?!\d)|\d+)?(?P<frac>\.\d+)?"
    r"(?:[eE](?P<exp>[+−-]?\d+))?(?P<pct>\s?%)?"
)


def quoted_numbers(text):
    """The numbers `text` quotes, in order: (value, half of the printed last digit's unit, is a bound).

    "0.27" -> (0.27, 0.005, False); "47,000" -> (47000, 500, False): trailing zeros of a whole number may be
    rounding; "23%" -> (0.23, 0.005, False); "< 1e-06" -> (1e-06, 0, True): any size below it.
    """
    found = []
    for match in _NUMBER.finditer(text):
        whole, frac, exponent = match["int"], match["frac"], match["exp"]
        if not whole and not frac:
            continue
        digits = (whole or "0").replace(",", "")
        value = float(digits + (frac or ""))
        if frac:
            unit = 10.0 ** -(len(frac) - 1)
        else:
            trailing = len(digits) - len(digits.rstrip("0")) if digits.strip("0") else 0
            unit = 10.0**trailing
        if exponent:
            scale = 10.0 ** int(exponent.replace("−", "-"))
            value, unit = value * scale, unit * scale
        if match["sign"]:
            value = -value
        if match["pct"]:
            value, unit = value / 100, unit / 100
        found.append((value, 0.0 if match["bound"] else unit / 2, bool(match["bound"])))
    return found


def check_quotes(text, values):
    """Problems (a list of messages, [] if none) with the numbers `text` quotes against `values`.

    values: the numbers the finding claims, recomputed by the cell (a sequence, or a mapping from what each
    is to its value). Each must equal one of the finding's numbers as printed: within half a unit of its
    last digit ("0.27" holds 0.265 to 0.275), or below a quoted bound ("< 1e-06").
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    named = values.items() if isinstance(values, Mapping) else ((None, value) for value in values)
    quoted = quoted_numbers(text)
    problems = []
    for name, value in named:
        try:
            value = float(np.asarray(value, dtype=float))
        except (TypeError, ValueError):
            raise TypeError(f"quotes must hold numbers, got {value!r}" + (f" for {name!r}" if name else "")) from None
        if not math.isfinite(value):
            raise ValueError(f"quotes must hold finite numbers, got {value!r}" + (f" for {name!r}" if name else ""))
        if any((abs(value) < q if bound else abs(value - q) <= half * (1 + 1e-9) + 1e-12) for q, half, bound in quoted):
            continue
        what = f"{name} = {value:.6g}" if name else f"{value:.6g}"
        printed = ", ".join(_printed(q, half, bound) for q, half, bound in quoted) or "none"
        problems.append(f"the finding quotes no number equal to {what} as printed (it quotes {printed})")
    return problems


def _printed(value, half, bound):
    return f"< {value:g}" if bound else f"{value:g}"


def drawn_values(figure, label, *, panel=None):
    """The values the series labelled `label` draws, read back from `figure`: to check a finding against it.

    A line's or points' y values (in data order), visible bars' tops (bars drawn from a `bottom` too), a
    scatter's (x, y) offsets (n, 2). `label` is the series' label as given or as `describe` says it (TeX in
    words). panel: the index of the axes in `figure.axes`, needed when the label is in more than one.
    """
    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    if not isinstance(label, str):
        raise TypeError(f"label must be a string, got {type(label).__name__}")
    indexes = range(len(figure.axes))
    if panel is not None and (isinstance(panel, bool) or not isinstance(panel, int) or panel not in indexes):
        raise ValueError(f"panel must be an index into figure.axes (0 to {len(figure.axes) - 1}), got {panel!r}")
    found, labels = [], set()
    for index, ax in enumerate(figure.axes):
        if panel is not None and index != panel:
            continue
        for artist, values in _series_of(ax):
            name = artist.get_label()
            if not name or name.startswith("_"):
                continue
            labels.add(name)
            if label in (name, words(name)):
                found.append((index, values))
    if not found:
        raise ValueError(f"label {label!r} names no visible series of the figure; its series: {sorted(labels)}")
    if len(found) > 1:
        raise ValueError(
            f"label {label!r} names series in panels {[i for i, _ in found]} (indexes into figure.axes): pass panel="
        )
    return found[0][1]


def _series_of(ax):
    """(artist, values) for each visible line, bar container and scatter of `ax`."""
    for line in ax.get_lines():
        if line.get_visible():
            yield line, np.asarray(line.get_ydata(), dtype=float)
    for container in ax.containers:
        if isinstance(container, BarContainer):
            patches = [p for p in container.patches if p.get_visible()]
            horizontal = getattr(container, "orientation", "vertical") == "horizontal"
            tops = [p.get_x() + p.get_width() if horizontal else p.get_y() + p.get_height() for p in patches]
            yield container, np.asarray(tops, dtype=float)
    for collection in ax.collections:
        if isinstance(collection, PathCollection) and collection.get_visible():
            offsets = np.ma.filled(np.ma.asarray(collection.get_offsets(), dtype=float), np.nan)
            yield collection, offsets.reshape(-1, 2)
