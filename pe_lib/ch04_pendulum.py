"""The pendulum intuition: similarity sees only the gap (used in notebook 04).

Its figures, its explorers and the graders of its exercises.
"""

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, analysis, attention, encodings
from .accessible import number
from .explorer import Explorer
from .figures import COLOURS, freeze_layout, new_axes, style_figsize
from .grading import Feedback, allowed_error, as_numbers, describe, graded, run_safely


def _short(number):
    """A wavelength in at most 5 characters, to fit under its dial: 6.28, 628, 1.99k, 19.9k, 199k, 1.99M."""
    number = float(f"{number:.3g}")  # 999.7 is 1k, not 1e+03
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if number >= scale:
            return f"{number / scale:.3g}{suffix}"
    return f"{number:.3g}"


def _pendulum_figure(d_model, base):
    """An empty pendulum figure for an even d_model; returns (figure, artists) for `_set_pendulums`.

    Top: one dial per sin/cos pair i, drawn above its two columns (pair 0, the fastest, on the
    left), labelled with its wavelength. Bottom: the d_model values of PE(p) as bars.
    """
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"the pendulum figure needs an even d_model >= 2 (one dial per sin/cos pair), got {d_model!r}")
    weights = encodings.frequencies(d_model, base=base)
    pairs = d_model // 2
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=style_figsize(8.0, 4.8), sharex=True, height_ratios=[1.0, 1.2], layout="constrained"
    )
    centres = 2.0 * np.arange(pairs) + 0.5  # dial i sits above columns 2i and 2i+1
    turn = np.linspace(0.0, 2 * np.pi, 61)
    gap = np.full((pairs, 1), np.nan)
    circles_x = np.hstack([centres[:, None] + 0.9 * np.sin(turn), gap]).ravel()
    circles_y = np.hstack([np.tile(0.9 * np.cos(turn), (pairs, 1)), gap]).ravel()
    top.plot(circles_x, circles_y, color="0.75", lw=1.0)
    top.plot(centres, np.full(pairs, 0.9), ls="none", marker="|", color="0.5", ms=6)  # 12 o'clock: angle 0
    (hands,) = top.plot([], [], color="0.2", lw=1.8)
    (bobs,) = top.plot([], [], ls="none", marker="o", color="C0", ms=6)  # the sinusoid's colour
    for i, (x, w) in enumerate(zip(centres, weights, strict=True)):
        top.text(x, -1.05, f"i={i}\nλ={_short(2 * np.pi / w)}", ha="center", va="top", fontsize="small")
    top.set_aspect("equal", adjustable="datalim")  # round dials; the shared x range stays that of the bars
    top.axis("off")
    title = top.set_title("position\nturns")  # two lines, as `_set_pendulums` writes (room kept by the layout)
    columns = np.arange(d_model)
    # sin columns filled, cos columns hatched: colour is not the only cue that tells them apart
    bars = bottom.bar(columns, np.zeros(d_model), color=["C0" if j % 2 == 0 else "C1" for j in columns])
    for bar in bars[1::2]:
        bar.set(hatch="///", edgecolor="white", linewidth=0)
    zero = bottom.axhline(0.0, color="0.3", lw=0.8)
    bottom.set_axisbelow(True)  # grid behind the bars, which the explorer redraws over a cached background
    bottom.set(xlim=(-1, d_model), ylim=(-1.15, 1.6), yticks=[-1, 0, 1], xlabel="column of PE(p)", ylabel="value")
    bottom.set_xticks(columns if d_model <= 32 else columns[::4])
    legend = [
        mpl.patches.Patch(color="C0", label="sin column 2i: bob's sideways offset"),
        mpl.patches.Patch(facecolor="C1", hatch="///", edgecolor="white", label="cos column 2i+1: bob's height"),
    ]
    bottom.legend(handles=legend, loc="upper right", ncols=2, fontsize="small")
    artists = {
        "weights": weights,
        "centres": centres,
        "hands": hands,
        "bobs": bobs,
        "bars": bars,
        "zero": zero,
        "title": title,
    }
    return freeze_layout(fig), artists


def _set_pendulums(artists, position):
    """Turn every dial to its angle w_i * position and set the bars to PE(position); returns PE(position)."""
    centres = artists["centres"]
    angles = position * artists["weights"]
    sin, cos = np.sin(angles), np.cos(angles)
    gap = np.full_like(centres, np.nan)
    hands_x = np.column_stack([centres, centres + 0.9 * sin, gap]).ravel()
    hands_y = np.column_stack([np.zeros_like(centres), 0.9 * cos, gap]).ravel()
    artists["hands"].set_data(hands_x, hands_y)
    artists["bobs"].set_data(centres + 0.9 * sin, 0.9 * cos)
    vector = np.column_stack([sin, cos]).ravel()  # interleaved: sin, cos, sin, cos, ...
    for bar, value in zip(artists["bars"], vector, strict=True):
        bar.set_height(value)
    turns, last = angles / (2 * np.pi), len(centres) - 1
    artists["title"].set_text(
        f"Pendulums at time t = position p = {position:g}\n"
        f"pair 0 (fastest, left): {turns[0]:.2f} turns · pair {last} (slowest, right): {turns[-1]:.4f} turns"
    )
    return vector


def pendulum_snapshot(position, d_model=16, *, base=10000.0):
    """The row of pendulums at time t = position, above the encoding vector PE(position) they spell."""
    fig, artists = _pendulum_figure(d_model, base)
    _set_pendulums(artists, position)
    return fig


_OFFSET_STYLES = tuple({"marker": m, "ls": ls} for m, ls in zip("os^D", ("-", "--", ":", "-."), strict=True))


def pair_contributions(offsets, d_model, *, base=10000.0, ax=None):
    """What each pair i adds to PE(p)·PE(p+k), cos(w_i k), against i: one line per offset k."""
    fig, ax = new_axes(ax)
    if d_model % 2:
        raise ValueError(f"pair_contributions needs an even d_model (sin/cos pairs), got d_model={d_model}")
    weights = encodings.frequencies(d_model, base=base)
    pairs = np.arange(len(weights))
    for index, k in enumerate(offsets):
        terms = np.cos(k * weights)
        style = _OFFSET_STYLES[index % len(_OFFSET_STYLES)]  # a marker and line style each, besides the colour
        ax.plot(pairs, terms, ms=3, **style, label=f"k = {k:g}: sum = {terms.sum():.1f}")
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set(
        title=f"Each pendulum's share cos(w_i k) of the dot product (d_model = {d_model})",
        xlabel="pair i (0 = fastest, left; last = slowest, right)",
        ylabel="cos(w_i k)",
        ylim=(-1.1, 1.1),
    )
    ax.legend(loc="lower right")
    return fig


def _decay_figure(offsets, n_positions):
    """Empty two-panel figure for the decay explorer; returns (figure, artists)."""
    fig, (left, right) = plt.subplots(
        1, 2, figsize=style_figsize(9.0, 3.78), width_ratios=[1.25, 1.0], layout="constrained"
    )
    reference = analysis.cos_sum(offsets, 64) / 32
    left.plot(offsets, reference, color="0.7", lw=1.2, label="reference: d_model = 64, base = 10^4")
    (line,) = left.plot(offsets, np.zeros_like(offsets, dtype=float), color="C0", label="chosen")
    marker = left.axvline(0.0, color=COLOURS["reference"], ls="--", lw=1.0)  # the half-width
    left.axhline(0.0, color="0.3", lw=0.8)
    left.axhline(0.5, color=COLOURS["reference"], ls=":", lw=0.8)
    left.set(
        xlim=(offsets[0], offsets[-1]),
        ylim=(-0.6, 1.05),
        yticks=[-0.5, 0.0, 0.5, 1.0],  # few tick labels: text is most of the cost of a redraw
        xlabel="offset k = q - p",
        ylabel="PE(p)·PE(p+k) / (d_model/2)",
    )
    left.legend(loc="lower left", fontsize="small")
    title = left.set_title("d_model 512, base 100000: half-width > 64")  # the longest title draw() writes
    # One fixed scale for every setting, so that sharpness compares across d_model; logarithmic, because
    # on a linear 0..1 scale the spread-out weights of small d_model (all about 1/n) look uniform.
    image = right.imshow(
        np.full((n_positions, n_positions), 1.0 / n_positions),
        norm=mpl.colors.LogNorm(vmin=1e-3, vmax=1.0, clip=True),
        cmap="viridis",
        interpolation="nearest",
    )
    fig.colorbar(image, ax=right, label="attention weight (log scale)", ticks=[1e-3, 1e-2, 1e-1, 1.0])
    right.set(xlabel="key position q", ylabel="query position p", title="softmax(PE PE^T / sqrt(d))")
    right.grid(False)
    return freeze_layout(fig), {"line": line, "marker": marker, "title": title, "image": image}


class PendulumExplorer(Explorer):
    """A row of pendulums (one per sin/cos pair) at time t = position, above the vector PE(position).

    A "Play" toggle button swings them. It drives an ipywidgets Play (linked in the browser, jslink,
    to its `playing`) that moves the position slider (jslink again), so each tick moves the slider and
    the slider redraws the figure; the button reads "Pause" while they swing. The Play widget itself
    is hidden: its buttons show only icons, with no accessible name (axe-core button-name), while the
    toggle is a labelled button that Tab reaches and Enter or Space presses. `self.vector` is PE(position).
    """

    def __init__(self, d_model=16, *, base=10000.0, max_position=100, interval=200):
        # One dial per pair: 64 dials (d_model 128) build in 0.8 s; d_model 512 takes 3.6 s, dials too small to read.
        d_model = _validate.int_in_range("d_model", d_model, 2, 128)  # odd ones: the figure says "even"
        base = _validate.base(base)
        max_position = _validate.positive_int("max_position", max_position)
        interval = _validate.int_in_range("interval", interval, 10, 10_000)  # milliseconds per step of Play
        figure, self._artists = _pendulum_figure(d_model, base)
        slider = widgets.IntSlider(value=0, min=0, max=max_position, description="position p")
        self.play = widgets.Play(
            value=0, min=0, max=max_position, interval=interval, layout=widgets.Layout(display="none")
        )
        self.play_button = widgets.ToggleButton(
            value=False,
            description="Play",
            icon="play",
            tooltip=f"swing the pendulums: one position every {interval} ms, up to {max_position}",
            layout=widgets.Layout(width="auto"),
        )
        self.play_button.observe(_play_label, names="value")
        self._link = widgets.jslink((self.play, "value"), (slider, "value"))
        self._play_link = widgets.jslink((self.play_button, "value"), (self.play, "playing"))
        super().__init__(figure, {"position": slider}, extras=[self.play_button, self.play])

    def draw(self, position):
        self.vector = _set_pendulums(self._artists, position)
        self._position = position

    def finding(self):
        turns = self._position * self._artists["weights"] / (2 * np.pi)
        return (
            f"At position {self._position} the fastest pendulum (pair 0) has turned {turns[0]:.2f} times and the "
            f"slowest (pair {turns.size - 1}) {turns[-1]:.4f} times; the bars are PE({self._position}): for each pair "
            "its sin column, then its cos column"
        )

    def animated_artists(self):
        artists = self._artists
        return (artists["hands"], artists["bobs"], *artists["bars"], artists["zero"], artists["title"])


def _play_label(change):
    """The toggle says what pressing it does: Play while the pendulums rest, Pause while they swing."""
    button = change["owner"]
    button.description, button.icon = ("Pause", "pause") if change["new"] else ("Play", "play")


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
        max_offset = _validate.int_in_range("max_offset", max_offset, 1, 4096)
        n_positions = _validate.int_in_range("n_positions", n_positions, 1, 512)
        self.offsets = np.arange(-max_offset, max_offset + 1)
        self.n_positions = n_positions
        figure, self._artists = _decay_figure(self.offsets, n_positions)
        controls = {
            "d_model": widgets.SelectionSlider(options=self.D_MODELS, value=64, description="d_model"),
            "base": widgets.SelectionSlider(options=self.BASES, value=1e4, description="base"),
        }
        super().__init__(figure, controls)

    def draw(self, d_model, base):
        self.similarity = analysis.cos_sum(self.offsets, d_model, base=base) / (d_model / 2)
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
        artists["image"].set_data(self.weights)  # on the colour bar's fixed range 1e-3..1
        self._setting = (d_model, base)

    def finding(self):
        d_model, base = self._setting
        width = (
            f"falls below half at offset {self.half_width}"
            if self.half_width
            else (f"stays above half up to offset {self.offsets[-1]}")
        )
        return (
            f"d_model {d_model}, base {base:g}: the similarity of positions k apart {width}; with positions alone "
            f"a query gives itself a weight of {number(np.diag(self.weights).mean())} on average"
        )

    def animated_artists(self):
        artists = self._artists
        legend = artists["line"].axes.get_legend()  # drawn again over the line and the marker, which pass under it
        return (artists["line"], artists["marker"], artists["title"], artists["image"], legend)


def _cos_sum(k, d_model, base, *, terms=None, exponent=2.0, wave=np.cos):
    """sum over i < terms of wave(k * base**(-exponent * i / d_model)); terms defaults to the d_model/2 pairs."""
    i = np.arange(d_model // 2 if terms is None else terms)
    return float(wave(k * base ** (-exponent * i / d_model)).sum())


def _one_number(exercise, value):
    """(float, None) when value is a single real number, else (None, Feedback that says what to return)."""
    array = as_numbers(value)
    if array is None:
        return None, Feedback(exercise, False, f"return a number (a float), got {describe(value)}")
    if array.size != 1:
        return None, Feedback(
            exercise,
            False,
            f"return one number, got an array of shape {array.shape}",
            (
                "Your array looks like one share per pair. What is the dot product made of those shares?",
                "Add the pairs' shares up (np.sum) and return one float.",
            ),
        )
    return float(array.reshape(())), None


def _offset_similarity_mistake(value, k, d_model, base):
    """(symptom, own hint tiers) for the typical mistake that produces `value` for PE(p)·PE(p+k)."""

    def matches(candidate):
        return bool(np.isclose(value, candidate, rtol=1e-6, atol=1e-6))

    count_terms = "How many sin/cos pairs are there, and how many terms does your sum have?"
    if matches(2 * _cos_sum(k, d_model, base)):
        return (
            "twice the right answer",
            (count_terms, "Each pair adds ONE term, sin·sin + cos·cos: d_model/2 terms, not d_model."),
        )
    if matches(_cos_sum(k, d_model, base, terms=d_model)) or matches(
        _cos_sum(k, d_model, base, terms=d_model, exponent=1)
    ):
        return (
            "you summed over d_model frequencies",
            (count_terms, "There are only d_model/2 pairs, i = 0 .. d_model/2 - 1: pe_lib.frequencies gives them."),
        )
    if matches(_cos_sum(k, d_model, base, exponent=1)):
        return (
            "your frequencies are off: these are base**(-i/d_model), without the factor 2 in the exponent",
            (
                "Where do your w_i come from?",
                "Take them from pe_lib.frequencies(d_model, base=base): w_i = base**(-2i/d_model).",
            ),
        )
    if matches(_cos_sum(k, d_model, base, wave=np.sin)):
        return (
            "you summed sines: at k = 0 that gives 0, but PE(p)·PE(p) = d_model/2",
            (
                "Which trigonometric identity does sin(a)sin(b) + cos(a)cos(b) simplify with?",
                "sin(a)sin(b) + cos(a)cos(b) = cos(b - a): pair i adds a cosine, not a sine.",
            ),
        )
    if base != 10000.0 and matches(_cos_sum(k, d_model, 10000.0)):
        return (
            "you ignored the base argument: your answer is the one for base 10000",
            ("Does your function pass `base` on to the frequencies?",),
        )
    if matches(d_model / 2):
        return (
            "your answer does not change with k: it is always d_model/2, right only at k = 0",
            (
                "At k = 0 every pendulum is where it started; at k = 1 the fast ones have turned. "
                "What does one pair add as a function of its angle w_i k?",
            ),
        )
    return "your function does not give PE(p)·PE(p+k)", ()


_OFFSET_HINTS = (
    "The dot product adds up column by column, and the columns come in sin/cos pairs with one angle each. "
    "Write what pair i adds with a = w_i p and b = w_i (p + k): can you simplify it?",
    "sin(a)sin(b) + cos(a)cos(b) is a cosine identity, the cosine of the difference; and b - a = w_i k, with "
    "no p left. Add that up over the d_model/2 pairs.",
    "PE(p)·PE(p+k) = sum over the pairs of cos(w_i k):\n"
    "    w = pe_lib.frequencies(d_model, base=base)\n"
    "    return float(np.sum(np.cos(w * k)))",
)


def check_offset_similarity(learner_function, *, hint=0):
    """Grade `learner_function(k, d_model, base)`: PE(p)·PE(p+k) in closed form, one number (even d_model).

    The reference is the dot product of two rows of pe_lib.sinusoidal_encoding.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("offset similarity", _check_offset_similarity, learner_function, _OFFSET_HINTS, hint)


def _check_offset_similarity(learner_function):
    exercise = "offset similarity"
    cases = [(3, 16, 1e4), (0, 64, 1e4), (1, 64, 1e4), (-7, 64, 1e4), (250, 100, 1e4), (5, 32, 100.0), (12.5, 8, 1e3)]
    for k, d_model, base in cases:
        rows = encodings.sinusoidal_encoding(
            np.array([11, 11 + k]), d_model, base=base
        )  # any p: the answer does not depend on it
        expected = float(rows[0] @ rows[1])
        value, failure = run_safely(exercise, learner_function, k, d_model, base)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        number, failure = _one_number(exercise, value)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        # float32 rows (even at position 1,000) give the sum to about 3e-6 of its size; a half-precision
        # answer adds its own rounding. Every typical mistake is off by far more.
        if not abs(number - expected) <= allowed_error(value, expected, 1e-4 * max(1.0, abs(expected))):
            symptom, hints = _offset_similarity_mistake(number, k, d_model, base)
            case = f"k={k:g}, d_model={d_model}, base={base:g}: expected {expected:.6g}, got {number:.6g}"
            return Feedback(exercise, False, f"{symptom} ({case})", hints)
    return Feedback(
        exercise,
        True,
        "PE(p)·PE(p+k) = sum over the d_model/2 pairs of cos(w_i k): it depends only on k and is d_model/2 at k = 0",
    )


_LOOK_BACK_HINTS = (
    "With W_q = I the score of query p for key q is PE(p)·(PE(q) W_k). It is largest where the key row "
    "PE(q) W_k equals PE(p). For q = p - k, what must W_k do to PE(q)?",
    "Section 'Before or after?': with W_k = relative_rotation(a) every query looks a positions AHEAD. "
    "Which a makes it look k positions back?",
    "a = -k: each key row becomes PE(q + k), which matches the query p = q + k "
    "(relative_rotation(k, d_model).T is the same matrix):\n"
    "    return pe_lib.relative_rotation(-k, d_model)",
)


def check_look_back(learner_function, *, hint=0):
    """Grade `learner_function(k, d_model)` -> W_k of shape (d_model, d_model).

    With W_q = identity, the score of query p for key q is PE(p)·(PE(q) W_k) (row vectors);
    it must be largest at q = p - k: a head that looks k positions back.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("look back", _check_look_back, learner_function, _LOOK_BACK_HINTS, hint)


def _check_look_back(learner_function):
    exercise = "look back"
    n = 48
    for d_model, k in [(16, 1), (64, 3), (32, 5), (64, 10)]:
        weights, failure = run_safely(exercise, learner_function, k, d_model)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        value, weights = weights, as_numbers(weights)
        if weights is None:
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) array, got {describe(value)}")
        if weights.shape != (d_model, d_model):
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) matrix, got shape {weights.shape}")
        if not np.isfinite(weights).all():
            return Feedback(exercise, False, "your matrix contains NaN or infinity")
        if not weights.any():
            return Feedback(exercise, False, "your matrix is all zeros: every score is 0, so the head prefers nothing")
        encoding = encodings.sinusoidal_encoding(n, d_model)
        scores = encoding @ (encoding @ weights).T  # row p: the query at p; column q: the key at q
        rows = np.arange(k, n - k)
        peaks = scores[rows].argmax(axis=1) - rows
        if np.all(peaks == -k):
            continue
        offsets, counts = np.unique(peaks, return_counts=True)
        typical = int(offsets[counts.argmax()])
        where = "q = p" if typical == 0 else f"q = p {'+' if typical > 0 else '-'} {abs(typical)}"
        case = f"(k={k}, d_model={d_model}: the scores peak at {where}, wanted q = p - {k})"
        hints = ()
        if typical == k:
            symptom = "your head looks k positions AHEAD: the key is rotated the wrong way"
            hints = (
                "A rotation turned the wrong way looks forward instead of back. How do you undo a rotation?",
                "Rotate by -k: relative_rotation(-k), which equals relative_rotation(k).T.",
            )
        elif typical == 0:
            symptom = "your head attends to its own position"
        else:
            symptom = "your head looks at the wrong offset"
            hints = ("In column-vector form the score is PE(p)·(W_k^T PE(q)). Which W_k^T turns PE(q) into PE(q + k)?",)
        return Feedback(exercise, False, f"{symptom} {case}", hints)
    return Feedback(
        exercise,
        True,
        "W_k = relative_rotation(-k) turns each key k positions forward, so query p meets its best match at q = p - k",
    )
