"""Naive encodings and why each fails (used in notebook 02).

Its figures, its explorers and the graders of its exercises.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, analysis, encodings
from .accessible import number
from .explorer import Explorer
from .figures import COLOURS, floats, new_axes, style_figsize
from .grading import Feedback, as_numbers, describe, graded, run_safely

# Notebook 02's colours (figures.COLOURS): the sinusoid in its blue; the naive encodings, each of which fails a
# requirement, in the red of what goes wrong; word vectors as the grey reference. Where several series share a
# colour, markers and line styles tell them apart.
NAIVE_COLOUR = COLOURS["problem"]
_SERIES_STYLES = tuple({"marker": m, "ls": ls} for m, ls in zip("osD^v", ("-", "--", ":", "-.", "-"), strict=True))


def encoding_colour(label):
    """The course colour of an encoding named in `label`: the sinusoid's blue, else the naive encodings' red."""
    return COLOURS["sinusoidal"] if "sinusoidal" in str(label) else NAIVE_COLOUR


def magnitude_against_words(positions, position_norms, word_norms, *, title, ax=None):
    """Norm of the position vector at each position (log-log) against the band of word-vector norms.

    positions, position_norms: (m,) with positions > 0; word_norms: (v,) norms of token vectors.
    """
    positions = floats(positions)
    fig, ax = new_axes(ax)
    low, median, high = np.percentile(floats(word_norms), [5, 50, 95])
    ax.axhspan(low, high, color=COLOURS["reference"], alpha=0.2, label="word vectors (5-95 %)")
    ax.axhline(median, color=COLOURS["reference"], linestyle="--", label=f"median word norm {median:.3g}")
    ax.plot(positions, position_norms, color=NAIVE_COLOUR, label="integer position vector")
    ax.set(xscale="log", yscale="log", title=title, xlabel="position p", ylabel="vector norm")
    ax.legend(loc="upper left")
    return fig


def value_strips(values_by_label, *, title, marker=None, xlabel="encoded value", ax=None):
    """One row of dots per label (e.g. per sequence length), at the values it uses; optional marker line.

    values_by_label: {label: 1-D values}. Rows are drawn top to bottom in the dict's order.
    """
    fig, ax = new_axes(ax, figsize=(8.0, 0.6 + 0.7 * len(values_by_label)))
    labels = list(values_by_label)
    for row, label in enumerate(labels):
        values = floats(values_by_label[label])
        ax.plot(values, np.full(values.shape, row), "o", markersize=5, color=NAIVE_COLOUR, label=None)
    ax.set(title=title, xlabel=xlabel, yticks=range(len(labels)), yticklabels=labels, ylim=(len(labels) - 0.5, -0.9))
    if marker is not None:
        ax.axvline(marker, color="black", linestyle="--")
        ax.text(marker, -0.6, f" value {marker}", ha="left", va="center")
    ax.grid(axis="y", visible=False)
    return fig


def step_sizes(tables, *, title, ax=None):
    """Distance from each position to the next, ||PE(p+1) - PE(p)||, one line per table.

    tables: {label: (n, d) table}. A flat line is a step of constant size.
    """
    fig, ax = new_axes(ax)
    for index, (label, table) in enumerate(tables.items()):
        table = floats(table)
        steps = np.linalg.norm(np.diff(table, axis=0), axis=1)
        style = _SERIES_STYLES[index % len(_SERIES_STYLES)]
        ax.plot(np.arange(len(steps)), steps, ms=4, color=encoding_colour(label), label=label, **style)
    ax.set(title=title, xlabel="position p", ylabel="||PE(p+1) - PE(p)||", ylim=(0, None))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def bit_flips(flips, *, title, highlight=(), ax=None):
    """Bar per position p: how many bits change from p to p+1 (flips[p]); highlighted bars in red, hatched."""
    flips = np.asarray(flips)
    fig, ax = new_axes(ax)
    highlight = set(highlight)
    colors = [COLOURS["problem"] if p in highlight else COLOURS["none"] for p in range(len(flips))]
    bars = ax.bar(np.arange(len(flips)), flips, color=colors)
    for p in highlight & set(range(len(flips))):
        bars[p].set(hatch="///", edgecolor="white", linewidth=0)  # colour is not the only cue
    ax.set(title=title, xlabel="position p (step p -> p+1)", ylabel="bits flipped")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return fig


def similarity_title(low, high):
    """Title of the similarity panel: the widest range over p of any offset (0: offset alone decides)."""
    high = floats(high)
    spread = float(np.max(high - floats(low)))
    spread = 0.0 if spread <= 1e-12 * max(1.0, float(np.max(np.abs(high)))) else spread  # rounding, not a range
    return f"widest range over p = {spread:.3g}"  # short: it must fit the panel in the lecture style too


def _table_title(name, n):
    return f"{name}, n={n}"


def encoding_and_similarity(table, *, name, figsize=None):
    """Two panels: the (n, d) table as a heatmap, and PE(p) . PE(p+k) / d against the offset k.

    The right panel shows the mean over p and (shaded) the range over p: a band of zero width
    means the similarity depends on the offset only. Used by widgets.NaiveEncodingExplorer.
    """
    from .analysis import offset_profile

    table = floats(table)
    figsize = figsize or style_figsize(9.0, 3.6)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, width_ratios=(1, 1.3), layout="constrained")
    n, d = table.shape
    low, high = float(table.min()), float(table.max())
    image = left.imshow(
        table, aspect="auto", interpolation="nearest", cmap="viridis", vmin=low, vmax=max(high, low + 1e-12)
    )
    fig.colorbar(image, ax=left, label="value")
    # Short titles: they must fit over the panel in the lecture style too (d_model goes with the x axis).
    left.set(title=_table_title(name, n), xlabel=f"dimension (d_model={d})", ylabel="position")
    left.grid(False)
    left.yaxis.get_major_locator().set_params(integer=True)
    right.xaxis.get_major_locator().set_params(integer=True)
    offsets, mean, low_k, high_k = offset_profile(table)
    right.fill_between(offsets, low_k, high_k, color=encoding_colour(name), alpha=0.25, label="range over p")
    right.plot(offsets, mean, color=encoding_colour(name), label="mean over p")
    right.set(title=similarity_title(low_k, high_k), xlabel="offset k", ylabel="PE(p) . PE(p+k) / d_model")
    right.legend(loc="upper right")
    return fig


class NaiveEncodingExplorer(Explorer):
    """Pick an encoding and a sequence length: its table as a heatmap, and similarity against offset.

    Controls: `encoding` (Dropdown over ENCODINGS) and `length` (IntSlider, 2..max_length).
    The figure is encoding_and_similarity. The axes and colour scale are fixed per
    encoding, at what the encoding reaches at max_length, so moving the length shows the table
    growing and its values changing against a scale that stays put; draw() swaps the image
    data, the mean line and the shaded range in place.
    """

    ENCODINGS = ("integer", "normalized", "binary", "sinusoidal")

    def __init__(self, *, encoding="integer", length=32, d_model=16, max_length=128):
        _validate.choice("encoding", encoding, self.ENCODINGS)
        # The table at max_length is built for each encoding's colour scale: bounded, so it stays quick to build.
        d_model = _validate.int_in_range("d_model", d_model, 1, 1024)
        max_length = _validate.int_in_range("max_length", max_length, 2, 4096)
        length = _validate.int_in_range("length", length, 2, max_length)
        if max_length > 2**d_model:  # the dropdown can switch to binary at any length up to max_length
            raise ValueError(
                f"d_model={d_model} bits give binary codes for {2**d_model} positions, fewer than "
                f"max_length={max_length}: use d_model >= {(max_length - 1).bit_length()} or a smaller max_length"
            )

        self._encoders = {
            "integer": encodings.integer_encoding,
            "normalized": encodings.normalized_encoding,
            "binary": encodings.binary_encoding,
            "sinusoidal": encodings.sinusoidal_encoding,
        }
        self._profile, self._title = analysis.offset_profile, similarity_title
        self.d_model, self.max_length = d_model, max_length
        self.table = self._encoders[encoding](length, d_model)
        self._scales = {}  # encoding -> (colour range, similarity range) at max_length
        figure = encoding_and_similarity(self.table, name=encoding)
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

    def layout_values(self):
        # Each encoding has its own colour bar and similarity range (tick labels from "0" to "1000"): room for all.
        return [{"encoding": encoding} for encoding in self.ENCODINGS]

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
        self._heatmap_axes.set_title(_table_title(encoding, length))
        self._curve_axes.set_title(self._title(low_k, high_k))
        self._mean.set_data(offsets, mean)
        self._band.set_data(offsets, low_k, high_k)
        for artist in (self._mean, self._band):
            artist.set_color(encoding_colour(encoding))
        self._band.set_alpha(0.25)
        self._curve_axes.set_ylim(*similarity_range)
        return encoding  # the colour bar and the similarity axis: one background per encoding

    def finding(self):
        encoding, length = self.values()["encoding"], self.values()["length"]
        spread = self._title(*self._profile(self.table)[2:]).removeprefix("widest range over p = ")
        offset_alone = "the offset alone decides the similarity" if spread == "0" else "the position matters too"
        return (
            f"The {encoding} table of {length} positions holds values from {number(self.table.min())} to "
            f"{number(self.table.max())}; the similarity of two positions k apart, PE(p) · PE(p+k) / d_model, varies "
            f"over p by up to {spread} at one offset ({offset_alone})"
        )

    def animated_artists(self):
        return self._animated


def _binary_reference(positions, d_model):
    """Bits of each position, least significant first: (len(positions), d_model) of 0/1."""
    import numpy as np

    return ((np.asarray(positions)[:, None] >> np.arange(d_model)) & 1).astype(float)


_BINARY_HINTS = (
    "Column j is bit j of p, counted from the right. How do you read bit 0 of a number (is it odd?), and "
    "bit 1? And how many positions fit in d_model bits?",
    "Shifting p right by j moves bit j to the end, and `& 1` keeps only that last bit. Broadcast a column "
    "of positions (n, 1) against a row of bit indices (1, d_model). Raise ValueError when n > 2**d_model.",
    "Bit j of every position at once, after the check:\n"
    "    if n > 2**d_model:\n"
    '        raise ValueError(f"{n} positions do not fit in {d_model} bits")\n'
    "    return ((np.arange(n)[:, None] >> np.arange(d_model)[None, :]) & 1).astype(float)",
)


def _binary_mistake(table, n, d_model):
    """(symptom, own hint tiers) for a binary table that is not the reference, or None if it is right."""
    import numpy as np

    reference = _binary_reference(np.arange(n), d_model)
    if table.shape != (n, d_model):
        if table.shape == (d_model, n):
            return f"your table has shape {table.shape}: rows are positions, columns are bits, so (n, d_model)", ()
        if table.ndim == 2 and table.shape[1] == d_model and abs(table.shape[0] - n) == 1:
            return (
                f"for n={n} your table has {table.shape[0]} rows: off by one. Positions 0..n-1 are n rows",
                ("Which positions does your code produce for n = 3? They should be 0, 1 and 2.",),
            )
        return f"for n={n}, d_model={d_model} the table must have shape {(n, d_model)}, got {table.shape}", ()
    if np.array_equal(table, reference):
        return None
    if np.array_equal(table, reference[:, ::-1]) or any(
        np.array_equal(table[:, :w], reference[:, :w][:, ::-1]) and not table[:, w:].any() for w in range(2, d_model)
    ):
        return (
            "you wrote the most significant bit first: column 0 must flip at every step (0, 1, 0, 1, ...), "
            "yours does not",
            (
                "np.binary_repr and format(p, 'b') write the highest bit first. Which bit should column 0 hold?",
                "Column j holds bit j counted from the right, (p >> j) & 1; a string would have to be read backwards.",
            ),
        )
    if n > 1 and np.array_equal(table, _binary_reference(np.arange(1, n + 1), d_model)):
        return (
            "your first row encodes position 1: positions start at 0, so the first row is all zeros",
            ("np.arange(n) gives 0 .. n-1: where does your 1 .. n come from?",),
        )
    if np.array_equal(table, 2 * reference - 1):
        return (
            "your entries are -1 and +1: a bit is 0 or 1, not -1 and +1",
            ("Where does a -1 come from in your code? A bit is (p >> j) & 1, nothing more.",),
        )
    if not np.isin(table, (0, 1)).all():
        return (
            f"every entry must be 0 or 1; yours has {table[~np.isin(table, (0, 1))][0]:g}",
            (
                "After shifting p right by j, bit j is the last bit, but the higher bits are still there. "
                "How do you keep only the last one?",
                "Take the lowest bit after shifting: (p >> j) & 1, not p >> j alone.",
            ),
        )
    if d_model > 1 and n > 2 and np.array_equal(table, np.repeat(reference[:, :1], d_model, axis=1)):
        return (
            "every column holds bit 0 (p % 2)",
            (
                "Column j should hold bit j. What brings bit j of p down to the lowest place?",
                "Shift p right by j before taking the lowest bit of column j: (p >> j) & 1.",
            ),
        )
    row = int(np.argmax(np.any(table != reference, axis=1)))
    got = table[row].astype(int).tolist()
    return f"row {row} (position {row}) should be {reference[row].astype(int).tolist()}, got {got}", ()


def check_binary_encoding(binary_encoding, *, hint=0):
    """Grade binary_encoding(n, d_model) -> (n, d_model): column j = bit j of p, least significant first.

    Also: n = 2**d_model positions still fit; n > 2**d_model must raise ValueError.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("binary_encoding", _check_binary_encoding, binary_encoding, _BINARY_HINTS, hint)


def _check_binary_encoding(binary_encoding):
    name = "binary_encoding"
    too_many = ("How many positions fit in d_model bits?", "Check n against 2**d_model before building the table.")
    # Odd and even widths, a table that fills its bits exactly, and one past 256 positions (a uint8 overflows).
    for n, d_model in ((6, 3), (13, 5), (16, 4), (1, 2), (40, 7), (256, 8), (300, 10)):
        value, failed = run_safely(name, binary_encoding, n, d_model)
        if failed is not None and n == 2**d_model:
            return Feedback(
                name,
                False,
                f"n={n} positions (0..{n - 1}) still fit in d_model={d_model} bits, yet your function "
                f"failed ({failed.message})",
                ("Which is the largest n that fits in d_model bits: 2**d_model - 1 or 2**d_model?", *too_many[1:]),
            )
        if failed is not None:
            return Feedback(name, False, f"for n={n}, d_model={d_model} {failed.message}")
        table = as_numbers(value)
        if table is None:
            return Feedback(name, False, f"return a NumPy array of 0s and 1s, got {describe(value)}")
        mistake = _binary_mistake(table, n, d_model)
        if mistake:
            return Feedback(name, False, *mistake)
    # One position too many, at several widths: a check hard-coded for one size, or off by one, fails.
    for n, d_model in ((9, 3), (5, 2), (3, 1), (33, 5), (257, 8)):
        try:
            binary_encoding(n, d_model)
        except ValueError:
            continue
        except Exception as error:  # the learner's code may raise anything; name it in the hint
            raised = type(error).__name__
            return Feedback(
                name,
                False,
                f"for n={n}, d_model={d_model} (too many positions) the exercise asks for ValueError, not {raised}",
                ("Which line raises? Raise the error yourself, before anything else can fail.",),
            )
        return Feedback(
            name,
            False,
            f"for n={n}, d_model={d_model} your function returned without raising ValueError, but position {n - 1} "
            f"= 0b{n - 1:b} needs {(n - 1).bit_length()} bits: its row would repeat position 0",
            too_many,
        )
    return Feedback(name, True, "bits least significant first, n rows, and a clear error when n > 2**d_model")


_BIT_FLIPS_HINTS = (
    "Write p and p + 1 in binary, one under the other, for p = 3, 7 and 8. Which bits change, and why can "
    "adding 1 change more than one bit?",
    "Adding 1 turns the trailing 1s of p into 0s and the 0 above them into a 1. XOR (p ^ q) has a 1 exactly "
    "where p and q differ: count those 1s.",
    'Count the 1s of p XOR (p + 1):\n    return bin(p ^ (p + 1)).count("1")',
)


def check_bit_flips(bit_flips, *, hint=0):
    """Grade bit_flips(p) -> int: how many bits differ between the binary codes of p and p + 1.

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("bit_flips", _check_bit_flips, bit_flips, _BIT_FLIPS_HINTS, hint)


def _check_bit_flips(bit_flips):
    name = "bit_flips"
    # Past 16 and 32 bits too: a mask or a fixed width (np.int32, binary_repr(width=...)) is caught.
    positions = [*range(0, 70), 127, 255, 1000, 1023, 4095, 65_535, 2**20 - 1, 2**31 - 1, 2**32 - 1, 2**40 + 7]
    answers = {}
    for p in positions:
        value, failed = run_safely(name, bit_flips, p)
        if failed is not None:
            return Feedback(name, False, f"bit_flips({p}): {failed.message}")
        number = as_numbers(value)
        if number is None or number.size != 1:
            got = describe(value) if number is None else f"{describe(value)}, shape {number.shape}"
            return Feedback(name, False, f"bit_flips({p}) must return one whole number (an int), got {got}")
        number = float(number.reshape(()))
        if not number.is_integer():  # also NaN and infinity
            return Feedback(name, False, f"bit_flips({p}) must return a whole number, got {value!r}")
        answers[p] = int(number)

    def ones(x):
        return bin(x).count("1")

    right = {p: ones(p ^ (p + 1)) for p in positions}
    if answers == right:
        return Feedback(name, True, "7 -> 8 flips 4 bits, 8 -> 9 flips 1: counted with XOR")
    if all(answers[p] == ones(p + 1) - ones(p) for p in positions) or all(
        answers[p] == abs(ones(p + 1) - ones(p)) for p in positions
    ):
        return Feedback(
            name,
            False,
            "you compared how many 1s p and p+1 have. 7 = 0b111 and 8 = 0b1000 differ by two 1s, yet all 4 bits flip",
            (
                "Counting the 1s forgets where they are. How can you compare p and p + 1 bit by bit?",
                "XOR marks every bit that differs with a 1: count the 1s of p ^ (p + 1).",
            ),
        )
    if all(answers[p] == (ones((p - 1) ^ p) if p else 0) for p in positions):
        return Feedback(name, False, "you counted the flips from p - 1 to p; the step asked for is p -> p + 1")
    if all(answers[p] == right[p] - 1 for p in positions):
        return Feedback(
            name,
            False,
            f"one short every time: bit_flips(7) should be {right[7]}, got {answers[7]}",
            ("Adding 1 turns the trailing 1s of p into 0s. Which other bit changes as well?",),
        )
    wrong = next(p for p in positions if answers[p] != right[p])
    return Feedback(
        name, False, f"bit_flips({wrong}) should be {right[wrong]} ({wrong:b} -> {wrong + 1:b}), got {answers[wrong]}"
    )
