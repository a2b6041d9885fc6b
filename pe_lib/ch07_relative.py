"""Relative positions: RoPE, ALiBi, T5 buckets, and no positions at all (used in notebook 07).

Its figures, its two explorers and the graders of its three exercises. The methods themselves are
pe_lib.relative's; this module draws and grades them.
"""

import math

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, relative
from .explorer import Explorer
from .figures import freeze_layout, new_axes, style_figsize
from .grading import Feedback, as_numbers, hint_level, run_safely, tolerance_for, with_hints
from .text import measured

# --- figures -------------------------------------------------------------------------------


def rope_wavelengths(head_dim=128, *, base=10000.0, context=4096, ax=None):
    """Each RoPE pair's wavelength 2*pi/theta_i against the pair index (log scale), with the context length.

    Pairs whose wavelength is longer than the context never complete one turn inside it (red).
    """
    context = _validate.positive_int("context", context)
    lengths = 2 * np.pi / relative.rope_frequencies(head_dim, base=base)
    fig, ax = new_axes(ax)
    pairs, slow = np.arange(len(lengths)), lengths > context
    ax.bar(pairs[~slow], lengths[~slow], color="C0", label="at least one full turn within the context")
    ax.bar(pairs[slow], lengths[slow], color="C3", label=f"never a full turn: {slow.sum()} of {len(lengths)} pairs")
    ax.axhline(context, color="0.2", ls="--", lw=1.2, label=f"context length {context}")
    ax.set_yscale("log")
    ax.set(
        title=f"RoPE wavelengths, head_dim {head_dim}, base {base:g}",
        xlabel="pair i (0 = fastest)",
        ylabel="wavelength 2π/θ_i (positions)",
    )
    ax.legend(loc="upper left", fontsize="small")
    return fig


def layout_pairs(head_dim=8, ax=None):
    """Which features RoPE turns together, in both layouts: each feature is labelled with its pair's frequency."""
    head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
    half = head_dim // 2
    rows = np.vstack([np.arange(head_dim) // 2, np.arange(head_dim) % half])  # the pair index of each feature
    fig, ax = new_axes(ax, figsize=(8.0, 2.4))
    ax.imshow(rows, cmap="tab10" if half <= 10 else "viridis", vmin=0, vmax=max(half - 1, 1), aspect="auto")
    if head_dim <= 16:
        for (row, feature), pair in np.ndenumerate(rows):
            ax.text(feature, row, f"$\\theta_{{{pair}}}$", ha="center", va="center", color="white", fontweight="bold")
    ax.set_yticks([0, 1], labels=["interleaved", "half"])
    ax.set_xticks(np.arange(head_dim))
    ax.set(title="RoPE layouts: features of one colour turn together", xlabel="feature of q or k")
    ax.grid(False)
    return fig


def t5_buckets(max_offset=160, *, num_buckets=32, max_distance=128, ax=None):
    """T5's bucket of every relative position key - query in [-max_offset, max_offset], bidirectional and causal."""
    max_offset = _validate.positive_int("max_offset", max_offset)
    offsets = np.arange(-max_offset, max_offset + 1)
    fig, ax = new_axes(ax)
    for bidirectional, label in ((True, "bidirectional (encoder)"), (False, "causal (decoder)")):
        buckets = relative.t5_relative_bucket(
            offsets, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
        )
        ax.step(offsets, buckets, where="mid", label=label)
    exact = num_buckets // 4  # per direction, bidirectional
    ax.axvspan(-exact + 0.5, exact - 0.5, color="C2", alpha=0.2, label=f"exact: |offset| < {exact} (bidirectional)")
    for x in (-max_distance, max_distance):
        ax.axvline(x, color="0.4", ls=":", lw=1.0)
    ax.set(
        title=f"T5 buckets: {num_buckets} buckets, max_distance {max_distance} (dotted)",
        xlabel="relative position = key − query",
        ylabel="bucket",
    )
    ax.legend(loc="upper left", fontsize="small")
    return fig


# --- explorers -----------------------------------------------------------------------------


def _wrap_controls(explorer):
    explorer.widget.children[0].layout.flex_flow = "row wrap"  # many controls: let them wrap


class MethodsExplorer(Explorer):
    """RoPE, ALiBi and T5 side by side: what each puts into an attention score, against key - query.

    x: the relative position (negative: the key is in the past), linear within ±8 and logarithmic
    beyond; every integer offset up to ±256, then offsets at most 1% apart out to ±WINDOW.
    Top: RoPE's expected score for similar q and k, mean_i cos(Δ θ_i) (1 at Δ = 0; for independent
    q, k it is 0 at every Δ). Middle: ALiBi's bias -m |Δ| for one head's slope m. Bottom: T5's
    bucket (each bucket holds one learned scalar per head). causal masks the future (Δ > 0) and
    makes T5 use all its buckets for the past. After each update: `self.offsets`, `self.rope`,
    `self.alibi`, `self.buckets` (NaN where masked), `self.half_width` and `self.last_from` (the
    distance where T5's last bucket begins).
    """

    WINDOW = 2048
    BASES = (("100", 100.0), ("1e3", 1e3), ("1e4", 1e4), ("5e5", 5e5), ("1e6", 1e6))
    HEAD_DIMS = (16, 32, 64, 128, 256)
    SLOPES = tuple((f"1/{2**k}", 2.0**-k) for k in range(1, 9))
    BUCKETS = (8, 16, 32, 64)
    MAX_DISTANCES = (64, 128, 256, 512, 1024)  # above the exact range of every bucket count (causal 64: 32)

    def __init__(self, *, base=1e4, head_dim=64, slope=2.0**-4, buckets=32, max_distance=128, causal=False):
        def pick(name, options, value):
            return _validate.one_of(name, value, [o[1] if isinstance(o, tuple) else o for o in options])

        values = {
            "base": pick("base", self.BASES, base),
            "head_dim": pick("head_dim", self.HEAD_DIMS, head_dim),
            "slope": pick("slope", self.SLOPES, slope),
            "buckets": pick("buckets", self.BUCKETS, buckets),
            "max_distance": pick("max_distance", self.MAX_DISTANCES, max_distance),
        }
        far = np.unique(np.geomspace(257, self.WINDOW, 400).round().astype(int))  # beyond ±256: 1% apart at most
        self.offsets = np.concatenate([-far[::-1], np.arange(-256, 257), far])
        fig, axes = plt.subplots(3, 1, figsize=style_figsize(8.0, 6.6), sharex=True, layout="constrained")
        self._axes, self._lines, self._titles, self._future = axes, [], [], []
        for ax, ylabel, ylim in zip(
            axes, ("score / |q|²", "bias", "bucket"), ((-0.45, 1.08), (-12.5, 0.8), None), strict=True
        ):
            steps = "steps-mid" if ylabel == "bucket" else "default"
            (line,) = ax.plot(self.offsets, np.zeros(len(self.offsets)), color="C0", drawstyle=steps, zorder=3)
            self._lines.append(line)
            self._titles.append(ax.set_title(" ", loc="left", fontsize="medium"))
            self._future.append(ax.axvspan(0.5, self.WINDOW, color="0.6", alpha=0.25, lw=0))
            ax.axhline(0.0, color="0.3", lw=0.8)
            ax.set(ylabel=ylabel, ylim=ylim)
        axes[0].axhline(0.0, color="C1", lw=2.0, ls="--")
        axes[0].text(0.99, 0.04, "dashed: independent q, k", transform=axes[0].transAxes, ha="right", color="C1",
                     fontsize="small", zorder=1)  # fmt: skip
        axes[-1].set_xscale("symlog", linthresh=8, linscale=1.0)
        ticks = [-1024, -128, -16, 0, 16, 128, 1024]
        axes[-1].set_xticks(ticks, labels=[f"{t:g}" for t in ticks])
        axes[-1].set(xlim=(-self.WINDOW, self.WINDOW), xlabel="relative position Δ = key − query (past ← → future)")
        controls = {
            "base": widgets.SelectionSlider(options=self.BASES, value=values["base"], description="RoPE base"),
            "head_dim": widgets.SelectionSlider(
                options=self.HEAD_DIMS, value=values["head_dim"], description="head_dim"
            ),
            "slope": widgets.SelectionSlider(options=self.SLOPES, value=values["slope"], description="ALiBi slope"),
            "buckets": widgets.SelectionSlider(options=self.BUCKETS, value=values["buckets"], description="T5 buckets"),
            "max_distance": widgets.SelectionSlider(
                options=self.MAX_DISTANCES, value=values["max_distance"], description="max_distance"
            ),
            "causal": widgets.Checkbox(value=_validate.flag("causal", causal), description="causal"),
        }
        super().__init__(freeze_layout(fig), controls)
        _wrap_controls(self)

    def draw(self, base, head_dim, slope, buckets, max_distance, causal):
        past = np.where(self.offsets > 0, np.nan, 1.0) if causal else np.ones(len(self.offsets))
        theta = relative.rope_frequencies(head_dim, base=base)
        similar = np.cos(np.multiply.outer(self.offsets, theta)).mean(axis=1)  # even in the offset
        below = np.flatnonzero(similar[self.offsets >= 0] < 0.5)
        self.rope = similar * past
        self.half_width = int(below[0]) if below.size else None
        self.alibi = -slope * np.abs(self.offsets) * past
        self.buckets = (
            relative.t5_relative_bucket(
                self.offsets, bidirectional=not causal, num_buckets=buckets, max_distance=max_distance
            )
            * past
        )
        for line, values in zip(self._lines, (self.rope, self.alibi, self.buckets), strict=True):
            line.set_ydata(values)
        width = "> 2048" if self.half_width is None else f"{self.half_width}"
        per_direction = buckets if causal else buckets // 2
        self._titles[0].set_text(f"RoPE, similar q, k: below 1/2 from |Δ| = {width}")
        self._titles[1].set_text(f"ALiBi: bias −10 at |Δ| = {10 / slope:g}")
        behind = self.offsets <= 0  # the past side, kept by the mask; its first entry is the farthest key
        last = self.buckets[behind] == self.buckets[behind][0]
        self.last_from = int(-self.offsets[behind][last].max())  # the nearest distance in the last bucket
        self._titles[2].set_text(f"T5: exact for |Δ| < {per_direction // 2}, last bucket from {self.last_from}")
        for span in self._future:
            span.set_visible(causal)
        self._axes[2].set_ylim(-1, buckets)
        return causal, buckets

    def animated_artists(self):
        return (*self._lines, *self._titles)


class ALiBiExplorer(Explorer):
    """ALiBi's heads and distances: each head's bias against the distance, and its attention past a distance.

    Left: -m_h * distance for every head (log distance axis), the chosen distance dashed. Right: for the
    last query of LENGTH tokens whose contents score alike, each head's share of attention on keys
    further back than the distance (log scale). Colours follow the slope, so the extra heads of a
    count that is not a power of two fall between the others. After each update: `self.slopes`,
    `self.share_beyond` (num_heads,).
    """

    LENGTH = 2048
    HEADS = (1, 2, 4, 6, 8, 12, 16, 24, 32)
    DISTANCES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

    def __init__(self, *, num_heads=8, distance=64):
        num_heads = _validate.one_of("num_heads", num_heads, self.HEADS)
        distance = _validate.one_of("distance", distance, self.DISTANCES)
        self.distances = np.arange(self.LENGTH)
        fig, (left, right) = plt.subplots(
            1, 2, figsize=style_figsize(9.0, 3.9), width_ratios=[1.2, 1.0], layout="constrained"
        )
        self._left, self._right = left, right
        self._lines = [left.plot(self.distances[1:], np.zeros(self.LENGTH - 1))[0] for _ in range(max(self.HEADS))]
        self._marker = left.axvline(distance, color="0.2", ls="--", lw=1.2)
        left.set_xscale("log")
        left.set(xlim=(1, self.LENGTH), ylim=(-16, 0.5), xlabel="distance i − j (log scale)", ylabel="bias −m·distance")
        left.set_title("every head's bias", fontsize="medium")
        self._bars = right.bar(np.arange(1, max(self.HEADS) + 1), np.ones(max(self.HEADS)), bottom=1e-12, zorder=3)
        right.set_yscale("log")
        right.set(ylim=(1e-12, 2.0), xlabel="head", ylabel="attention share beyond")
        right.axhline(0.01, color="0.4", ls=":", lw=1.0)
        self._title = right.set_title("beyond 1024: 32 of 32 heads keep > 1%", fontsize="medium")
        self._cmap = mpl.colormaps["viridis"]
        controls = {
            "num_heads": widgets.SelectionSlider(options=self.HEADS, value=num_heads, description="heads"),
            "distance": widgets.SelectionSlider(options=self.DISTANCES, value=distance, description="distance"),
        }
        super().__init__(freeze_layout(fig), controls)

    def draw(self, num_heads, distance):
        self.slopes = relative.alibi_slopes(num_heads)
        weights = np.exp(-np.multiply.outer(self.slopes, self.distances))  # softmax of the bias alone, unnormalised
        self.share_beyond = weights[:, distance + 1 :].sum(axis=1) / weights.sum(axis=1)
        colours = self._cmap((np.log2(self.slopes) + 8) / 8)  # slope 2**-8 dark, 1 bright
        for h, (line, bar) in enumerate(zip(self._lines, self._bars, strict=True)):
            line.set_visible(h < num_heads)
            bar.set_visible(h < num_heads)
            if h < num_heads:
                line.set_ydata(-self.slopes[h] * self.distances[1:])
                line.set_color(colours[h])
                bar.set_height(max(self.share_beyond[h], 1e-12))
                bar.set_color(colours[h])
        self._marker.set_xdata([distance, distance])
        kept = int((self.share_beyond > 0.01).sum())
        self._title.set_text(f"beyond {distance}: {kept} of {num_heads} heads keep > 1%")
        self._right.set_xlim(0.4, num_heads + 0.6)
        self._right.set_xticks(np.arange(1, num_heads + 1, 1 if num_heads <= 12 else 4))
        return num_heads

    def animated_artists(self):
        return (*self._lines, self._marker, *self._bars, self._title)


# --- grading helpers -----------------------------------------------------------------------


def _close(value, expected, tolerance):
    return value.shape == expected.shape and bool(np.allclose(value, expected, rtol=tolerance, atol=tolerance))


def _first_match(value, variants, tolerance):
    """(symptom, own hint tiers) of the first variant `value` equals, or None."""
    for symptom, candidate, hints in variants:
        if _close(value, np.asarray(candidate, dtype=np.float64), tolerance):
            return symptom, hints
    return None


def _result_array(exercise, result, shape):
    """(float64 array, None) for a numeric result of `shape`, else (None, Feedback saying what to return)."""
    value = as_numbers(result)
    if value is None:
        return None, Feedback(exercise, False, f"return an array of shape {shape}, got {type(result).__name__}")
    if value.shape != shape:
        return None, Feedback(exercise, False, f"return an array of shape {shape}, got shape {value.shape}")
    if "int" in str(getattr(result, "dtype", "")):
        return None, Feedback(exercise, False, f"your result has an integer dtype ({result.dtype}): keep the floats")
    if not np.isfinite(value).all():
        return None, Feedback(exercise, False, "your result contains NaN or infinity")
    return value, None


# --- exercise 1: RoPE in the half (rotate_half) layout ---------------------------------------

_ROPE_HINTS = (
    "Pair i of the half layout is (feature i, feature i + d/2); it turns by the angle p·θ_i, "
    "(a, b) -> (a cos - b sin, a sin + b cos). For all features at once that is x·cos + rotate_half(x)·sin: "
    "what must rotate_half(x) hold in its first half, and in its second, to give those two lines?",
    "cos and sin need one column per FEATURE: the d/2 pair angles p·θ_i written twice, once per half "
    "(feature i and feature i + d/2 share θ_i). rotate_half(x) is minus the second half of x, then the first half.",
    "The usual recipe (Hugging Face Llama), for x (n, d):\n"
    "    d = x.shape[-1]\n"
    "    theta = base ** (-np.arange(0, d, 2) / d)\n"
    "    angles = np.outer(positions, theta)\n"
    "    cos = np.cos(np.concatenate([angles, angles], axis=-1))\n"
    "    sin = np.sin(np.concatenate([angles, angles], axis=-1))\n"
    "    rotated = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)\n"
    "    return x * cos + rotated * sin",
)


def _rope_cases():
    """(x, positions, base): odd pair counts (d = 6, 2), far positions, another base, a float32 input."""
    rng = np.random.default_rng(7)
    cases = [
        ((5, 8), [0, 1, 2, 7, 30], 1e4),
        ((4, 6), [3, 100, 1000, 5], 100.0),
        ((3, 2), [1, 2, 50], 1e4),
        ((6, 64), [0, 513, 1026, 4095, 11, 2], 5e5),
        ((4, 16), [4095, 2047, 1, 0], 1e4),
    ]
    for index, (shape, positions, base) in enumerate(cases):
        x = rng.normal(size=shape)
        yield (x.astype(np.float32) if index == len(cases) - 1 else x), np.array(positions), base


def _rope_mistakes(x, positions, base):
    """(symptom, candidate, own tiers) for the usual slips of x·cos + rotate_half(x)·sin."""
    x = np.asarray(x, dtype=np.float64)
    d, half = x.shape[-1], x.shape[-1] // 2
    angles = np.outer(positions, relative.rope_frequencies(d, base=base))
    both = np.concatenate([angles, angles], axis=-1)
    first, second = x[:, :half], x[:, half:]
    rotate_half = np.concatenate([-second, first], axis=-1)

    def recipe(feature_angles, rotated=rotate_half):
        return x * np.cos(feature_angles) + rotated * np.sin(feature_angles)

    def rope(positions=positions, base=base, layout="half"):
        return relative.apply_rope(x, positions, base=base, layout=layout)

    per_feature = "Where do your frequencies come from: one per pair (d/2 of them), or one per feature?"
    # fmt: off
    return [
        ("your output is the input unchanged: no pair was turned", x, ()),
        ("your pairs turn the wrong way (by -p·θ_i)", recipe(-both),
         ("Which half of rotate_half(x) carries the minus sign in (a cos - b sin, a sin + b cos)?",)),
        ("your rotate_half(x) gives x back: the halves are neither swapped nor negated", recipe(both, x),
         ("In a cos - b sin, which feature multiplies sin in the FIRST half of the output?",)),
        ("your rotate_half(x) swaps the halves but drops the minus sign: that is no rotation (lengths change)",
         recipe(both, np.concatenate([second, first], axis=-1)),
         ("A rotation keeps each pair's length. Which term of (a cos - b sin, a sin + b cos) is negative?",)),
        ("your frequencies are per feature (d of them): RoPE has one frequency per PAIR",
         recipe(np.outer(positions, base ** (-np.arange(d) / d))), (per_feature,)),
        ("your frequencies are per feature (d of them): RoPE has one frequency per PAIR",
         recipe(np.outer(positions, base ** (-2 * np.arange(d) / d))), (per_feature,)),
        ("your cos and sin repeat each angle side by side (θ0, θ0, θ1, θ1, ...): the interleaved layout's order",
         recipe(np.repeat(angles, 2, axis=-1)), ("Which two features share θ_0 in the half layout?",)),
        ("you turned neighbouring features (0, 1), (2, 3), ...: that is the interleaved layout, not the half one",
         rope(layout="interleaved"), ("In the half layout, which feature is the partner of feature 0?",)),
        ("you ignored `positions`: your rows turn as if they sat at 0, 1, 2, ...", rope(positions=None),
         ("Which argument says how far each row turns?",)),
        ("you ignored `base`: your answer is the one for base 10000", rope(base=1e4),
         ("Does your function pass `base` on to the frequencies?",)),
    ]
    # fmt: on


def check_rope_half(learner_function, *, hint=0):
    """Grade `learner_function(x, positions, base)` -> x (n, d) turned by RoPE in the half (rotate_half) layout.

    The reference is pe_lib.apply_rope(x, positions, base=base, layout="half").
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _ROPE_HINTS)
    return with_hints(_check_rope_half(learner_function), _ROPE_HINTS, shown)


def _check_rope_half(learner_function):
    exercise = "rotate_half RoPE"
    for x, positions, base in _rope_cases():
        result, failure = run_safely(exercise, learner_function, x, positions, base)
        if failure is not None:
            if "broadcast" in failure.message or "must match the size" in failure.message:
                failure = Feedback(
                    exercise,
                    False,
                    f"{failure.message} (x has shape {x.shape})",
                    (
                        "Compare the shapes of x and of your cos and sin: how many columns must cos have?",
                        "Write each pair's angle for both of its features: the d/2 angles once for the first half "
                        "of x and once more for the second.",
                    ),
                )
            return failure
        value, failure = _result_array(exercise, result, x.shape)
        if failure is not None:
            return failure
        expected = relative.apply_rope(x.astype(np.float64), positions, base=base, layout="half")
        tolerance = max(tolerance_for(result, 1e-6), 1e-5 if x.dtype == np.float32 else 0.0)
        if _close(value, expected, tolerance):
            continue
        case = f"x of shape {x.shape}, positions {positions.tolist()}, base {base:g}"
        known = _first_match(value, _rope_mistakes(x, positions, base), tolerance)
        if known is None:
            worst = float(np.abs(value - expected).max())
            return Feedback(exercise, False, f"your rotation differs from RoPE's by up to {worst:.3g} ({case})")
        symptom, hints = known
        return Feedback(exercise, False, f"{symptom} ({case})", hints)
    return Feedback(
        exercise,
        True,
        "x·cos + rotate_half(x)·sin, with each pair angle written for both halves, turns pair (i, i + d/2) "
        "by p·θ_i: it equals pe_lib.apply_rope(..., layout='half')",
    )


# --- exercise 2: ALiBi slopes for a head count that is not a power of two -----------------

_ALIBI_HINTS = (
    "Press et al. give the slopes for a power of two n: the geometric sequence that starts at 2^(-8/n) and has "
    "2^(-8/n) as its ratio. Is 12 a power of two? Which powers of two lie on either side of it?",
    "Take all the slopes of the closest power of two below (8 heads), then, from the sequence for twice as many "
    "heads (16), every other slope starting with its first, until there are as many slopes as heads.",
    "The authors' code (and BLOOM's):\n"
    "    def power_of_two(n):\n"
    "        return [2.0 ** (-8 * (h + 1) / n) for h in range(n)]\n"
    "    m = 2 ** int(math.log2(num_heads))\n"
    "    return np.array(power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m])",
)


def _alibi_mistakes(n, reference):
    """(symptom, candidate, own tiers) for the usual slips, for n heads."""

    def power_of_two(k, start=1):
        return [2.0 ** (-8 * (h + start) / k) for h in range(k)]

    m = 1 << (n.bit_length() - 1)  # the closest power of two at or below n
    heads = np.arange(1, n + 1)
    off_by_one = ("What is the first head's slope for 8 heads in Press et al.: 1, or 1/2?",)
    # fmt: off
    mistakes = [
        (f"these are the power-of-two formula 2^(-8h/n) applied to n = {n} heads", 2.0 ** (-8 * heads / n),
         ("For a count that is not a power of two, does the authors' code use the paper's sequence?",)),
        ("your exponents are off by one: your first head gets slope 2^0 = 1", 2.0 ** (-8 * (heads - 1) / n),
         off_by_one),
        ("your exponents are off by one: your first head gets slope 2^0 = 1",
         power_of_two(m, 0) + power_of_two(2 * m, 0)[0::2][: n - m], off_by_one),
        ("your slopes are negative: the bias is -m·distance with a positive slope m", -reference, ()),
        ("these look like the exponents log2(m), not the slopes m", np.log2(reference), ()),
    ]
    if n != m:
        mistakes += [
            (f"these are the first {n} slopes of the {2 * m}-head sequence", power_of_two(2 * m)[:n],
             (f"Do your first {m} heads get the {m}-head slopes?",)),
            (f"your extra heads take the odd-numbered slopes of the {2 * m}-head sequence, which the first {m} "
             "heads already have", power_of_two(m) + power_of_two(2 * m)[1::2][: n - m],
             (f"Which slopes of the {2 * m}-head sequence are NOT among the {m}-head ones?",)),
        ]
    # fmt: on
    return mistakes


def check_alibi_slopes(learner_function, *, hint=0):
    """Grade `learner_function(num_heads)` -> ALiBi's slopes, shape (num_heads,), 12 heads first.

    The reference is pe_lib.alibi_slopes (the authors' code, also BLOOM's).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _ALIBI_HINTS)
    return with_hints(_check_alibi_slopes(learner_function), _ALIBI_HINTS, shown)


def _check_alibi_slopes(learner_function):
    exercise = "ALiBi slopes"
    for n in (12, 8, 16, 6, 24, 1, 3):
        result, failure = run_safely(exercise, learner_function, n)
        if failure is not None:
            return failure
        value, failure = _result_array(exercise, result, (n,))
        if failure is not None:
            return failure
        expected = relative.alibi_slopes(n)
        tolerance = tolerance_for(result, 1e-6)  # float32 slopes are right to ~6e-8
        if _close(value, expected, tolerance):
            continue
        if n > 1 and np.ptp(value) == 0:
            return Feedback(
                exercise, False, f"all {n} heads get the same slope, {measured(value[0])}: each needs its own"
            )
        if _close(np.sort(value), np.sort(expected), tolerance):
            return Feedback(
                exercise,
                False,
                f"for {n} heads you have the right slopes in another order: a checkpoint pairs head h with one slope",
                ("Which heads come first in the authors' code: the power-of-two ones or the extra ones?",),
            )
        known = _first_match(value, _alibi_mistakes(n, expected), tolerance)
        if known is None:
            return Feedback(exercise, False, f"your slopes for {n} heads are not ALiBi's (first: {measured(value[0])})")
        symptom, hints = known
        return Feedback(exercise, False, f"{symptom} (num_heads = {n})", hints)
    return Feedback(
        exercise,
        True,
        "12 heads: the 8-head slopes 1/2 ... 1/256, then every other slope of the 16-head sequence, "
        "2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (the authors' and BLOOM's)",
    )


# --- exercise 3: a T5 bucket by hand ---------------------------------------------------------

_T5_HINTS = (
    "A bucket comes in three steps: the half (bidirectional only: keys AFTER the query use the upper half), the "
    "distance n (bidirectional: |relative_position|; causal: how far back, 0 for the future), and the bucket of n "
    "inside its half: exact for small n, logarithmic for large n. Which step goes wrong in the case above?",
    "With B buckets per direction (num_buckets // 2 when bidirectional) and max_exact = B // 2: n < max_exact "
    "gives bucket n; otherwise max_exact + floor(log(n / max_exact) / log(max_distance / max_exact) * "
    "(B - max_exact)), at most B - 1. Bidirectional: add B for a key after the query.",
    "T5's _relative_position_bucket for one number:\n"
    "    half = num_buckets // 2 if bidirectional else num_buckets\n"
    "    upper = half if bidirectional and relative_position > 0 else 0\n"
    "    n = abs(relative_position) if bidirectional else max(-relative_position, 0)\n"
    "    max_exact = half // 2\n"
    "    if n < max_exact:\n"
    "        return upper + n\n"
    "    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact))\n"
    "    return upper + min(large, half - 1)",
)

_T5_CASES = [
    (0, True, 32, 128), (-3, True, 32, 128), (5, True, 32, 128), (-20, True, 32, 128), (20, True, 32, 128),
    (-8, True, 32, 128), (-100, True, 32, 128), (127, True, 32, 128), (-128, True, 32, 128), (-5000, True, 32, 128),
    (-3, False, 32, 128), (3, False, 32, 128), (-20, False, 32, 128), (-15, False, 32, 128), (-16, False, 32, 128),
    (-90, False, 32, 128), (-300, False, 32, 128), (-40, True, 16, 64), (9, True, 64, 256), (-70, False, 8, 32),
]  # fmt: skip


def _t5_variant(rel, bidirectional, num_buckets, max_distance, *, slip=None):
    """One bucket by the formula, or with one learner's `slip` (None: the right bucket)."""
    half = num_buckets // 2 if bidirectional and slip != "no halving" else num_buckets
    if bidirectional:
        upper = num_buckets // 2 if (rel < 0 if slip == "swapped" else rel > 0) else 0
        n = abs(rel)
    else:
        upper = 0
        n = {"abs": abs(rel), "future": max(rel, 0)}.get(slip, max(-rel, 0))
    max_exact = num_buckets // 2 if slip == "exact range" else half // 2  # the slip: both directions' buckets
    if n < max_exact:
        return upper + n
    share = math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact)
    large = max_exact + (round(share) if slip == "round" else int(share))
    return upper + (large if slip == "no cap" else min(large, half - 1))


# fmt: off
_T5_SLIPS = {  # slip (see _t5_variant) -> (symptom, own first tier)
    "swapped": ("your upper half holds the keys BEFORE the query; T5 puts the keys after it there",
                ("For relative_position = key - query > 0, is the key before or after the query?",)),
    "no halving": ("bidirectional: you gave each direction all num_buckets; the two directions share them",
                   ("With 32 buckets and two directions, how many buckets does each direction get?",)),
    "round": ("you round the logarithmic part to the nearest bucket; T5 rounds down", ("int() or round()?",)),
    "no cap": ("far distances get buckets past the last one of their half",
               ("What happens to every distance from max_distance on?",)),
    "abs": ("causal: keys after the query get buckets of their own; in a decoder only the past counts",
            ("Causal: what distance does a key in the future get?",)),
    "future": ("causal: you count how far AHEAD the key is; a decoder counts how far back",
               ("relative_position = key - query: is it negative or positive for a key in the past?",)),
    "exact range": ("your exact range is too long: max_exact is half of the buckets of ONE direction",
                    ("How many buckets does one direction have, and how many of them are exact?",)),
}
# fmt: on


def check_t5_bucket(learner_function, *, hint=0):
    """Grade `learner_function(relative_position, bidirectional, num_buckets, max_distance)` -> one int bucket.

    relative_position = key position - query position. The reference is pe_lib.t5_relative_bucket.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _T5_HINTS)
    return with_hints(_check_t5_bucket(learner_function), _T5_HINTS, shown)


def _check_t5_bucket(learner_function):
    exercise = "T5 bucket"
    answers = []
    for case in _T5_CASES:
        result, failure = run_safely(exercise, learner_function, *case)
        if failure is not None:
            return failure
        value = as_numbers(result)
        if value is None or value.size != 1:
            got = type(result).__name__ if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return one bucket (an int), got {got}")
        value = float(value.reshape(()))
        if not value.is_integer():
            return Feedback(exercise, False, f"a bucket is a whole number, got {value:g} for the case {case}")
        answers.append(int(value))
    expected = [
        relative.t5_relative_bucket(rel, bidirectional=b, num_buckets=nb, max_distance=md)
        for rel, b, nb, md in _T5_CASES
    ]
    if answers == expected:
        return Feedback(
            exercise,
            True,
            "exact buckets up to max_exact, then log-spaced up to max_distance, one per direction when bidirectional",
        )
    if len(set(answers)) == 1:
        return Feedback(exercise, False, f"your function gives bucket {answers[0]} for every relative position")
    for slip, (symptom, hints) in _T5_SLIPS.items():
        if answers == [_t5_variant(*case, slip=slip) for case in _T5_CASES]:
            return Feedback(exercise, False, symptom, hints)
    index = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    rel, b, nb, md = _T5_CASES[index]
    return Feedback(
        exercise,
        False,
        f"relative_position={rel}, bidirectional={b}, num_buckets={nb}, max_distance={md}: "
        f"expected bucket {expected[index]}, got {answers[index]}",
    )
