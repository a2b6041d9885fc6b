"""Learned versus fixed positions (used in notebook 05).

Its figures and its explorer; the graders of its exercises are in pe_lib/ch05_learned_exercises.py
and importable from here, as notebook 05 calls them (ch05.check_...).
"""

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, analysis, encodings
from .accessible import number
from .ch05_learned_exercises import check_shift_targets, check_similarity_by_offset  # noqa: F401 (ch05.check_...)
from .data import load_minilm_embeddings
from .explorer import Explorer, TrainingProgress  # noqa: F401 (notebook 05 calls ch05.TrainingProgress)
from .figures import COLOURS, floats, heatmap, new_axes, style_figsize

_VARIANT_COLOURS = {name: COLOURS[name] for name in ("none", "learned", "sinusoidal", "rope")}
# Colour is not the only cue: each variant also has its marker, line style and bar hatch.
_VARIANT_MARKERS = {"none": "s", "learned": "o", "sinusoidal": "^", "rope": "D"}
_VARIANT_LINES = {"none": ":", "learned": "-", "sinusoidal": "--", "rope": "-."}
_VARIANT_HATCHES = {"none": "..", "learned": "", "sinusoidal": "//", "rope": "xx"}


_METRIC_LABELS = {
    "in_distribution": "in distribution:\npositions 0-15",
    "longer_first": "longer sequence:\npositions 0-15",
    "longer_rest": "longer sequence:\npositions 16-31",
    "unseen_window": "unseen window:\npositions 48-63",
}
REGIME_LABELS = {"from_zero": "trained from position 0", "random_offset": "trained on windows at random offsets"}


def position_projection(coordinates, *, title, explained=None, first_position=0, join=False, ax=None):
    """Positions projected to 2-D (e.g. pe_lib.analysis.pca_2d): one point per position, coloured by position.

    coordinates: (n, 2), row j is position first_position + j. explained: the variance share of
    the two axes (2,), shown in the axis labels. join=True also draws a thin line through the
    positions in order.
    """
    coordinates = floats(coordinates)
    fig, ax = new_axes(ax)
    positions = first_position + np.arange(coordinates.shape[0])
    if join:
        ax.plot(coordinates[:, 0], coordinates[:, 1], color="0.75", lw=0.6, zorder=1)
    points = ax.scatter(coordinates[:, 0], coordinates[:, 1], c=positions, cmap="viridis", s=8, zorder=2)
    fig.colorbar(points, ax=ax, label="position")
    labels = ("direction 1", "direction 2")
    if explained is not None:
        labels = tuple(
            f"{label} ({100 * share:.0f}% of variance)" for label, share in zip(labels, explained, strict=True)
        )
    ax.set(title=title, xlabel=labels[0], ylabel=labels[1])
    return fig


def _ordered_variants(names):
    known = [v for v in _VARIANT_COLOURS if v in names]
    return known + [v for v in names if v not in known]


def accuracy_comparison(results, *, regime, title, ax=None, legend=True):
    """Accuracy of each positional variant in one training regime (bars: mean over seeds, error bars:
    std, dots: single seeds).

    results: a dict like pe_lib.experiments.run_sweep / load_results returns ("summary", "runs",
    "baselines"); regime: one of its regimes. Dashed: chance (1 / vocabulary); dotted: the
    order-blind guess for the sequence length of each group of bars.
    """
    if regime not in results["summary"]:
        raise ValueError(f"regime must be one of {', '.join(map(repr, results['summary']))}, got {regime!r}")
    fig, ax = new_axes(ax)
    summary = results["summary"][regime]
    runs = [run for run in results["runs"] if run["regime"] == regime]
    metrics = list(_METRIC_LABELS)
    variants = _ordered_variants(list(summary))
    width = 0.8 / len(variants)
    for j, variant in enumerate(variants):
        x = np.arange(len(metrics)) + (j - (len(variants) - 1) / 2) * width
        means = [summary[variant][m]["mean"] for m in metrics]
        stds = [summary[variant][m]["std"] for m in metrics]
        colour = _VARIANT_COLOURS.get(variant)
        ax.bar(x, means, width * 0.9, yerr=stds, capsize=4, color=colour, alpha=0.8, label=variant,
               hatch=_VARIANT_HATCHES.get(variant), edgecolor="white")  # fmt: skip
        for k, metric in enumerate(metrics):
            values = [run[metric] for run in runs if run["positional"] == variant]
            ax.plot(np.full(len(values), x[k]), values, "o", ms=3, color="k", zorder=3)
    chance = results["baselines"]["chance"]
    blind = results["baselines"]["order_blind"]
    ax.axhline(chance, color=COLOURS["reference"], ls="--", lw=1, label=f"chance 1/vocab = {chance:.4f}")
    levels = [blind["longer"] if m.startswith("longer") else blind["in_distribution"] for m in metrics]
    ax.hlines(levels, np.arange(len(metrics)) - 0.45, np.arange(len(metrics)) + 0.45, color="0.2", ls=":", lw=1.5)
    ax.plot([], [], color="0.2", ls=":", lw=1.5, label="order-blind guess")
    ax.set_xticks(np.arange(len(metrics)))
    ax.set_xticklabels([_METRIC_LABELS[m] for m in metrics], fontsize="small")
    ax.set_yticks(np.linspace(0, 1, 6))
    seeds = len(results.get("seeds", [])) or 1
    ax.set(title=title, ylabel=f"token accuracy (mean ± std, {seeds} seeds)", ylim=(0, 1.32))
    ax.grid(False, axis="x")
    if legend:
        ax.legend(loc="upper center", fontsize="small", ncols=3)
    return fig


def accuracy_by_position(per_position, *, train_len, chance, title, ax=None, legend=True):
    """Accuracy at each position of the longer test sequences, one line per variant; shaded: never trained.

    per_position: dict variant -> list of accuracies (None where the position has no target);
    positions from train_len on are shaded (none if train_len covers them all). The learned line is
    drawn wide underneath, so that it stays visible where it coincides with another.
    """
    fig, ax = new_axes(ax)
    for variant in _ordered_variants(list(per_position)):
        values = np.array([np.nan if v is None else v for v in per_position[variant]], dtype=float)
        ax.plot(
            np.arange(values.size),
            values,
            marker=_VARIANT_MARKERS.get(variant, "o"),
            ls=_VARIANT_LINES.get(variant, "-"),
            ms=6 if variant == "learned" else 3,
            lw=3.5 if variant == "learned" else 1.4,
            alpha=0.7 if variant == "learned" else 1.0,
            color=_VARIANT_COLOURS.get(variant),
            label=variant,
        )
        length = values.size
    if train_len < length:
        ax.axvspan(train_len - 0.5, length - 0.5, color="0.92", zorder=0, label="positions never seen in training")
    ax.axhline(chance, color=COLOURS["reference"], ls="--", lw=1, label="chance")
    ax.set(title=title, xlabel="position in the test sequence", ylabel="token accuracy", ylim=(0, 1.05))
    if legend:
        ax.legend(loc="center left", fontsize="small")
    return fig


def loss_curves(losses, *, title, chance_loss=None, ax=None):
    """Training loss (log scale) against the step, one line per label: losses is dict label -> (steps,)."""
    fig, ax = new_axes(ax)
    for label, values in losses.items():
        ax.semilogy(
            np.arange(1, len(values) + 1),
            floats(values),
            color=_VARIANT_COLOURS.get(label),
            ls=_VARIANT_LINES.get(label, "-"),
            lw=1,
            label=label,
        )
    if chance_loss is not None:
        ax.axhline(
            chance_loss,
            color=COLOURS["reference"],
            ls="--",
            lw=1,
            label=f"guessing uniformly: ln(vocab) = {chance_loss:.2f}",
        )
    ax.set(title=title, xlabel="training step", ylabel="cross-entropy loss (log scale)")
    ax.legend(fontsize="small")
    return fig


def learned_table_after_training(table, *, train_len, title):
    """A trained position table: heatmap (rows = positions) and the norm of each row; rows past train_len untrained."""
    table = floats(table)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=style_figsize(9.0, 3.6), width_ratios=[1.6, 1.0], layout="constrained"
    )
    heatmap(table, title="the table (rows = positions)", colorbar_label="value", ax=left)
    left.axhline(train_len - 0.5, color="k", lw=1.2)
    left.text(table.shape[1] - 1, train_len + 0.5, "never trained ↓", ha="right", va="top", fontsize="small")
    norms = np.linalg.norm(table, axis=1)
    colours = np.where(np.arange(table.shape[0]) < train_len, COLOURS["learned"], "0.6")
    right.barh(np.arange(table.shape[0]), norms, color=colours)
    right.invert_yaxis()
    right.yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    right.set(title="length of each row", xlabel="‖row‖", ylabel="position")
    fig.suptitle(title)
    return fig


def tables_side_by_side(
    tables, *, title, first_row=0, limit=None, xlabel="dimension", ylabel="position", colorbar_label="value"
):
    """Several tables (name -> 2-D array) as images side by side, each with its own colour bar.

    first_row: the row index of the tables' first row (for the y axis). limit: a fixed colour
    range ±limit for all (e.g. 1 for cosines); by default each image uses ±(99th percentile of |value|)
    so that one outlying entry does not wash out the rest.
    """
    fig, axes = plt.subplots(
        1, len(tables), figsize=style_figsize(4.6 * len(tables), 3.8), layout="constrained", squeeze=False
    )
    for ax, (name, table) in zip(axes[0], tables.items(), strict=True):
        table = floats(table)
        high = limit if limit is not None else float(np.quantile(np.abs(table), 0.99)) or 1.0
        extent = (-0.5, table.shape[1] - 0.5, first_row + table.shape[0] - 0.5, first_row - 0.5)
        image = ax.imshow(table, aspect="auto", interpolation="nearest", vmin=-high, vmax=high, extent=extent)
        # Short: the label runs along the colour bar, beside the next panel's y label.
        label = colorbar_label if limit is not None else f"{colorbar_label} (clipped at 99th pct)"
        fig.colorbar(image, ax=ax, label=label)
        ax.set(title=name, xlabel=xlabel, ylabel=ylabel)
        ax.grid(False)
    fig.suptitle(title)
    return fig


class PositionSimilarityExplorer(Explorer):
    """Cosine similarity of one position to its neighbourhood, in several position tables side by side.

    tables: dict name -> (n, d) table (e.g. MiniLM's learned positions and the sinusoidal
    encoding of the same size). Sliders: the position p and the half-width of the window shown.
    The x axis is the offset q - p, so moving p keeps the axes still (p itself sits at 0).
    After each update, `neighbour_similarity[name]` is the mean cosine of row p with rows p ± 1, and
    `lowest[name]` the (offset, cosine) of the least similar row in the window; `finding()` says both.
    """

    WINDOWS = (8, 16, 32, 64, 128, 256, 512)

    def __init__(self, tables=None, *, position=100, window=64):
        if tables is None:  # as notebook 05: MiniLM's learned table next to the sinusoid of its size
            learned = load_minilm_embeddings()["position"]
            tables = {"MiniLM (learned)": learned, "sinusoidal": encodings.sinusoidal_encoding(*learned.shape)}
        if not isinstance(tables, dict) or not tables:
            raise ValueError(f"tables must be a dict name -> (n, d) table with at least one table, got {tables!r}")
        self.similarity = {name: analysis.cosine_similarity(table) for name, table in tables.items()}
        self.n = min(s.shape[0] for s in self.similarity.values())
        if self.n < 2:
            raise ValueError(f"every table needs at least 2 rows (positions) to compare, got {self.n}")
        position = _validate.int_in_range("position", position, 0, self.n - 1)
        window = _validate.one_of("window", window, self.WINDOWS)
        self.neighbour_similarity, self.lowest = {}, {}
        figure, ax = plt.subplots(figsize=style_figsize(8.5, 3.6), layout="constrained")
        self._lines = {name: ax.plot([], [], "o-", ms=2.5, lw=1.2, label=name)[0] for name in self.similarity}
        self._here = ax.axvline(0, color="k", lw=1)  # p itself; drawn over the lines: animated with them
        self._zero = ax.axhline(0.0, color="0.3", lw=0.8)
        self._text = ax.text(1.03, 0.0, "", transform=ax.transAxes, fontsize="small", va="bottom")
        ax.set(ylim=(-0.6, 1.05), xlabel="offset q − p (p at 0)", ylabel="cosine similarity to position p")
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small")  # right of the lines, as the read-out
        self._ax = ax
        controls = {
            "position": widgets.IntSlider(value=position, min=0, max=self.n - 1, description="position p"),
            "window": widgets.SelectionSlider(options=self.WINDOWS, value=window, description="± window"),
        }
        super().__init__(figure, controls)

    def draw(self, position, window):
        low, high = max(0, position - window), min(self.n - 1, position + window)
        others = np.arange(low, high + 1)
        for name, similarity in self.similarity.items():
            self._lines[name].set_data(others - position, similarity[position, others])
            neighbours = [q for q in (position - 1, position + 1) if 0 <= q < self.n]
            self.neighbour_similarity[name] = float(np.mean(similarity[position, neighbours]))
            drawn = similarity[position, others]
            self.lowest[name] = (int(others[drawn.argmin()] - position), float(drawn.min()))
        self._shown = (position, low, high)
        self._ax.set_xlim(-window - 0.5, window + 0.5)
        self._ax.set_title(f"similarity of position {position} to positions {low}..{high}")
        self._text.set_text(
            "cosine to p ± 1:\n"
            + "\n".join(f"{name}: {value:.2f}" for name, value in self.neighbour_similarity.items())
        )
        return window  # the x axis: one background per window

    def finding(self):
        position, low, high = self._shown
        tables = "; ".join(
            f"{name}: {number(self.neighbour_similarity[name])} with its neighbours, least similar at offset "
            f"{self.lowest[name][0]:+d} ({number(self.lowest[name][1])})"
            for name in self.similarity
        )
        return f"Cosine similarity of position {position} to positions {low} to {high}. {tables}"

    def animated_artists(self):
        return (*self._lines.values(), self._here, self._zero, self._ax.title, self._text)
