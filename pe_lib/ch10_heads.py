"""Which RoPE pairs and which heads a real model uses: figures and an explorer (used in notebook 10, section 5).

The measurements are pe_lib.heads' (pair norms, attention probabilities, previous-token and
first-token scores); this module draws them: where the previous-token heads and the first-token
sink sit (head_scores), which pairs carry the heads' norm (pair_profiles), and one explorer that
shows any head's attention map next to its pair profile (HeadsExplorer).
"""

import functools

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.colors import PowerNorm

from . import _validate, heads
from .explorer import Explorer
from .figures import COLOURS, freeze_layout, style_figsize

FASTEST = 8  # the pairs the notebook calls fast: a turn every 6.3 to 78 tokens at base 1e5, head_dim 64
# A short text for the explorer built without arguments (tests, benchmarks); notebook 10 passes its own.
DEFAULT_TEXT = (
    "A transformer reads every token at once, so it needs another way to know the order of the words. "
    "Rotary embeddings turn each query and key by an angle that grows with the position: fast pairs "
    "turn a lot from one token to the next, slow pairs barely move over a whole page of text."
)


def rank_correlation(a, b):
    """Spearman's rank correlation of two equally long sets of numbers (ties broken by order; no ties here)."""
    a, b = (_validate.as_numpy(v).astype(np.float64).ravel() for v in (a, b))
    if a.shape != b.shape or a.size < 3:
        raise ValueError(f"a and b must hold the same number (>= 3) of values, got {a.size} and {b.size}")
    ranks = [np.argsort(np.argsort(v)).astype(np.float64) for v in (a, b)]
    return float(np.corrcoef(*ranks)[0, 1])


def head_scores(previous, first, *, strongest=(), ax=None):
    """Two maps, layers (rows) by heads (columns): the previous-token score and the share on token 0.

    previous, first (layers, heads), as heads.previous_token_score and first_token_score give them for one
    text; strongest: (layer, head) pairs outlined on the left map.
    """
    previous, first = (_validate.real_array(name, v, 2) for name, v in (("previous", previous), ("first", first)))
    fig, axes = plt.subplots(1, 2, figsize=style_figsize(8.0, 4.6), layout="constrained", sharey=True)
    titles = ("attention on the previous token", "attention on token 0 (the sink)")
    for ax, values, title in zip(axes, (previous, first), titles, strict=True):
        image = ax.imshow(values, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="upper")
        ax.set(title=title, xlabel="query head")
        ax.set_xticks(range(values.shape[1]))
        ax.grid(False)
    axes[0].set_ylabel("layer")
    for layer, head in strongest:
        axes[0].add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, lw=2, ec="white"))
    fig.colorbar(image, ax=axes, label="mean attention", shrink=0.9)
    return fig


def pair_profiles(weight_share, text_share, previous, fast_share, *, strongest=()):
    """Left: each pair's share of the query heads' squared norm, averaged over heads, from the weights and from
    the queries on the text (pair 0 fastest). Right: each head's previous-token score against the share its
    query weights keep in the FASTEST pairs; the strongest previous-token heads labelled.

    weight_share, text_share (layers, heads, P) as heads.norm_share gives them; previous, fast_share (layers, heads).
    """
    weight_share = _validate.real_array("weight_share", weight_share, 3)
    text_share = _validate.real_array("text_share", text_share, 3)
    previous = _validate.real_array("previous", previous, 2)
    fast_share = _validate.real_array("fast_share", fast_share, 2)
    pairs = np.arange(weight_share.shape[-1])
    fig, (left, right) = plt.subplots(1, 2, figsize=style_figsize(9.0, 3.8), layout="constrained")
    rope = COLOURS["rope"]
    left.axvspan(-0.5, FASTEST - 0.5, color="0.92", zorder=0)
    left.plot(pairs, weight_share.mean((0, 1)), color=rope, marker="o", ms=4, label="q weights")
    left.plot(pairs, text_share.mean((0, 1)), color=rope, marker="s", ms=4, ls="--", label="q on the text")
    left.axhline(1 / len(pairs), color=COLOURS["reference"], ls=":", lw=1.2, label="even spread")
    left.set(
        title="each pair's share of a head's norm²",
        xlabel=f"RoPE pair i (0 = fastest; shaded: the {FASTEST} fastest)",
        ylabel="mean share over query heads",
    )
    left.legend(loc="upper left", fontsize="small")
    right.axhline(FASTEST / len(pairs), color=COLOURS["reference"], ls=":", lw=1.2, label="even spread")
    right.plot(previous.ravel(), fast_share.ravel(), ls="none", marker="o", ms=4, color=rope, alpha=0.6)
    # labels around their points in turn (below right, above left, left, below right): neighbours do not collide
    offsets = ((6, -14, "left"), (-6, 6, "right"), (-8, -3, "right"), (6, -14, "left"))
    for (layer, head), (dx, dy, ha) in zip(strongest, offsets * len(strongest), strict=False):
        if previous[layer, head] < 0.3 and ha == "right":  # near the left edge: label to the right instead
            dx, ha = -dx, "left"
        right.annotate(
            f"L{layer} H{head}",
            (previous[layer, head], fast_share[layer, head]),
            xytext=(dx, dy),
            textcoords="offset points",
            ha=ha,
            fontsize="small",
        )
    right.set(
        title="previous-token heads and their fast pairs",
        xlabel="attention on the previous token",
        ylabel=f"q weights' share in the {FASTEST} fastest pairs",
        xlim=(0, 1),
    )
    right.legend(loc="lower right", fontsize="small")
    return fig


@functools.cache
def _default_measurements():
    """SmolLM2-135M's attention on DEFAULT_TEXT and its weight pair norms, measured once per process (a few MB)."""
    from . import smollm  # the model only when nothing is passed: tests and benchmarks

    model, tokenizer = smollm.load()
    ids = torch.tensor([tokenizer.encode(DEFAULT_TEXT)])
    return heads.attention_probabilities(model, ids)[0], heads.pair_norms(model)


class HeadsExplorer(Explorer):
    """Pick a layer and a query head: its attention on the first `window` tokens, next to its RoPE pair profile.

    Left: the head's attention probabilities, query (row) by key (column), square-root colour scale so
    that small shares show; a previous-token head is a line just below the diagonal, the sink a bright
    first column. Right: the head's share of squared norm per pair, q weights and the weights of the
    key head it reads, with the even spread dotted. The title gives the head's previous-token and
    token-0 scores over the whole text. Everything is computed once, in the constructor.

    probs (layers, heads, n, n) for one text (heads.attention_probabilities(...)[0]); norms: heads.pair_norms(model)
    of the same model. Without them the constructor runs SmolLM2-135M on DEFAULT_TEXT. layer, head: the
    first head shown (default: the strongest previous-token head).
    """

    def __init__(self, probs=None, norms=None, *, layer=None, head=None, window=48):
        if probs is None or norms is None:
            default_probs, default_norms = _default_measurements()
            probs = default_probs if probs is None else probs
            norms = default_norms if norms is None else norms
        if not isinstance(norms, heads.PairNorms):
            raise TypeError(f"norms must be heads.pair_norms(model)'s PairNorms, got {type(norms).__name__}")
        self.previous = heads.previous_token_score(probs)  # (layers, heads), over the whole text
        self.first = heads.first_token_score(probs)
        if len(probs.shape) != 4 or tuple(probs.shape[:2]) != norms.q.shape[:2]:
            raise ValueError(
                f"probs must have shape (layers, heads, n, n) with the layers and heads of norms.q "
                f"{norms.q.shape[:2]}, got {tuple(probs.shape)}"
            )
        n_layers, n_heads, n, _ = probs.shape
        self.window = min(_validate.int_in_range("window", window, 2, 4096), n)  # a shorter text: all of it
        maps = _validate.as_numpy(probs[:, :, : self.window, : self.window]).astype(np.float32)
        self.maps = np.where(np.tri(self.window, dtype=bool), maps, np.nan)  # the future left blank
        self.q_share = heads.norm_share(norms.q)
        group = n_heads // norms.k.shape[1]
        self.k_share = np.repeat(heads.norm_share(norms.k), group, axis=1)  # the key head each query head reads
        self.fast = self.q_share[..., :FASTEST].sum(-1)
        self.n = n
        if layer is None or head is None:
            best = np.unravel_index(np.argmax(self.previous), self.previous.shape)
            layer = int(best[0]) if layer is None else layer
            head = int(best[1]) if head is None else head
        layer = _validate.int_in_range("layer", layer, 0, n_layers - 1)
        head = _validate.int_in_range("head", head, 0, n_heads - 1)

        fig, (left, right) = plt.subplots(
            1, 2, figsize=style_figsize(9.0, 4.2), width_ratios=[1.0, 1.15], layout="constrained"
        )
        self._image = left.imshow(
            self.maps[layer, head], cmap="viridis", norm=PowerNorm(0.5, vmin=0, vmax=1), interpolation="nearest"
        )
        left.set(xlabel="key position", ylabel="query position")
        left.set_title(f"attention, first {self.window} tokens", fontsize="medium")
        left.grid(False)
        fig.colorbar(self._image, ax=left, label="probability (√ scale)", shrink=0.85)
        pairs = np.arange(self.q_share.shape[-1])
        rope = COLOURS["rope"]
        right.axvspan(-0.5, FASTEST - 0.5, color="0.92", zorder=0)
        right.axhline(1 / len(pairs), color=COLOURS["reference"], ls=":", lw=1.2, label="even spread")
        (self._q_line,) = right.plot(pairs, self.q_share[layer, head], color=rope, marker="o", ms=4, label="q weights")
        (self._k_line,) = right.plot(
            pairs, self.k_share[layer, head], color=rope, marker="s", ms=4, ls="--", label="k weights (its key head)"
        )
        top = float(max(self.q_share.max(), self.k_share.max()))
        right.set(
            ylim=(0, top * 1.05),
            xlabel=f"RoPE pair i (0 = fastest; shaded: {FASTEST} fastest)",
            ylabel="share of the head's norm²",
        )
        right.set_title("its RoPE pairs", fontsize="medium")
        right.legend(loc="upper right", fontsize="small")
        self._title = fig.suptitle(" ")
        controls = {
            "layer": widgets.IntSlider(value=layer, min=0, max=n_layers - 1, description="layer"),
            "head": widgets.IntSlider(value=head, min=0, max=n_heads - 1, description="head"),
        }
        self._title.set_text(self._title_text(layer, head))  # the layout makes room for a real title
        super().__init__(freeze_layout(fig), controls)

    def _title_text(self, layer, head):
        return (
            f"layer {layer}, head {head}: previous token {self.previous[layer, head]:.2f}, "
            f"token 0 {self.first[layer, head]:.2f} (over {self.n} tokens)"
        )

    def draw(self, layer, head):
        self._image.set_data(self.maps[layer, head])
        self._q_line.set_ydata(self.q_share[layer, head])
        self._k_line.set_ydata(self.k_share[layer, head])
        self._title.set_text(self._title_text(layer, head))

    def animated_artists(self):
        return (self._image, self._q_line, self._k_line, self._title)

    def finding(self):
        layer, head = self.values()["layer"], self.values()["head"]
        return (
            f"Layer {layer}, head {head}: each query puts {self.previous[layer, head]:.2f} of its attention on the "
            f"token just before it and {self.first[layer, head]:.2f} on token 0 (means over {self.n} tokens); its "
            f"query weights keep {self.fast[layer, head]:.0%} of their squared norm in the {FASTEST} fastest "
            f"pairs (an even spread: {FASTEST / self.q_share.shape[-1]:.0%})"
        )
