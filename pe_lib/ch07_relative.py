"""Relative positions: RoPE, ALiBi, T5 buckets, and no positions at all (used in notebook 07).

Its figures and its two explorers. The methods themselves are pe_lib.relative's; the graders of the
notebook's three exercises are in ch07_relative_exercises.
"""

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, relative, rope_frequencies
from .accessible import number
from .colours import contrast_ratio
from .explorer import Explorer
from .figures import freeze_layout, new_axes, style_figsize

# --- figures -------------------------------------------------------------------------------


def rope_wavelengths(head_dim=128, *, base=10000.0, context=4096, ax=None):
    """Each RoPE pair's wavelength 2*pi/theta_i against the pair index (log scale), with the context length.

    Pairs whose wavelength is longer than the context never complete one turn inside it (red).
    """
    context = _validate.positive_int("context", context)
    lengths = 2 * np.pi / rope_frequencies(head_dim, base=base)
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
    image = ax.imshow(rows, cmap="tab10" if half <= 10 else "viridis", vmin=0, vmax=max(half - 1, 1), aspect="auto")
    if head_dim <= 16:
        for (row, feature), pair in np.ndenumerate(rows):
            cell = image.to_rgba(pair)  # black or white, whichever reads better on this cell (>= 4.5:1 here)
            ink = max(("white", "black"), key=lambda colour: contrast_ratio(colour, cell))
            ax.text(feature, row, f"$\\theta_{{{pair}}}$", ha="center", va="center", color=ink, fontweight="bold")
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
        axes[0].text(0.99, 0.04, "dashed: independent q, k", transform=axes[0].transAxes, ha="right", color="0.2",
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
        theta = rope_frequencies(head_dim, base=base)
        similar = np.cos(np.multiply.outer(self.offsets, theta)).mean(axis=1)  # even in the offset
        # At every integer distance, not only the drawn ones (1% apart past 256: a dip between them is missed).
        below = np.flatnonzero(np.cos(np.multiply.outer(np.arange(self.WINDOW + 1), theta)).mean(axis=1) < 0.5)
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
        self._shown = (base, head_dim, slope, buckets, max_distance, causal)
        return causal, buckets

    def finding(self):
        base, head_dim, slope, buckets, max_distance, causal = self._shown
        side = "the past only (causal)" if causal else "past and future"
        width = "beyond 2,048" if self.half_width is None else f"{self.half_width:,}"
        far = self.offsets == -self.WINDOW
        return (
            f"Against the relative position, {side}, out to 2,048: RoPE with base {number(base)} and head size "
            f"{head_dim} gives similar query and key a mean score that first drops below one half at distance "
            f"{width}; ALiBi with slope 1/{round(1 / slope)} adds a bias falling in a straight line, to "
            f"{number(self.alibi[far][0])} at distance 2,048; T5 with {buckets} buckets and maximum distance "
            f"{max_distance} puts every distance from {self.last_from} on into one last bucket"
        )

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
        self._shown = (num_heads, distance, kept)
        return num_heads

    def finding(self):
        num_heads, distance, kept = self._shown
        steep, gentle = self.slopes.argmax(), self.slopes.argmin()  # not the first and last head at 6, 12, 24
        return (
            f"ALiBi with {num_heads} heads, the last query of {self.LENGTH:,} tokens whose contents score alike: "
            f"the bias alone leaves {kept} of the {num_heads} heads more than 1% of their attention on keys more than "
            f"{distance} back; the steepest head (slope {number(self.slopes[steep])}) keeps "
            f"{number(self.share_beyond[steep])}, the gentlest (slope {number(self.slopes[gentle])}) "
            f"{number(self.share_beyond[gentle])}"
        )

    def animated_artists(self):
        return (*self._lines, self._marker, *self._bars, self._title)
