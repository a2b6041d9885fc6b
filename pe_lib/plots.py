"""Every figure the notebooks draw: one function per kind of figure, each returning its Figure.

Figures share one look (titles, labelled axes, colour bars) and a lecture style with large
fonts and thick lines for a projector: `use_style(lecture=True)`.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import _checks, encodings
from .text import measured

_BASE_STYLE = {
    "figure.figsize": (8.0, 4.0),
    "figure.dpi": 80,
    "savefig.dpi": 80,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "RdBu_r",
    "font.size": 11,
    "axes.titlesize": 12,
    "lines.linewidth": 1.6,
}
_LECTURE_STYLE = {
    "figure.figsize": (11.0, 5.5),
    "font.size": 16,
    "axes.titlesize": 19,
    "axes.labelsize": 17,
    "xtick.labelsize": 14,
    "ytick.labelsize": 14,
    "legend.fontsize": 14,
    "lines.linewidth": 3.0,
    "lines.markersize": 9,
}


def _floats(values):
    """Plot data as a float array: NumPy, lists, and torch tensors (also requiring grad, or bfloat16)."""
    return _checks.as_numpy(values).astype(float, copy=False)


def use_style(lecture=False):
    """Apply the course's figure style; lecture=True for large fonts and thick lines."""
    mpl.rcParams.update(_BASE_STYLE)
    if lecture:
        mpl.rcParams.update(_LECTURE_STYLE)


def style_figsize(width, height):
    """A figure size given in inches for the base style, scaled to the current style.

    The lecture style's figures are 11/8 as large, to hold its larger fonts.
    """
    scale = mpl.rcParams["figure.figsize"][0] / _BASE_STYLE["figure.figsize"][0]
    return (width * scale, height * scale)


def _axes(ax, figsize=None):
    """Return (figure, axes): the given axes' figure, or a new figure."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def heatmap(table, *, title, xlabel="dimension", ylabel="position", colorbar_label="value", ax=None, symmetric=True):
    """A table (rows x columns) as an image with a colour bar; symmetric colours around 0 by default."""
    table = _floats(table)
    fig, ax = _axes(ax)
    limit = float(np.max(np.abs(table))) if table.size else 1.0
    kwargs = {"vmin": -limit, "vmax": limit} if symmetric else {"cmap": "viridis"}
    image = ax.imshow(table, aspect="auto", interpolation="nearest", **kwargs)
    fig.colorbar(image, ax=ax, label=colorbar_label)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(False)
    return fig


# --- Notebook 03: the sinusoidal encoding ---


def dimension_waves(table, columns, *, title, positions=None, step=False, xlabel="position", ax=None):
    """Chosen columns of a (n, d) table as curves against position, stacked one above the other.

    Each column gets its own lane, labelled "dim j" on the y axis; step=True draws staircases
    (for binary bits), otherwise smooth lines (for sinusoids).
    """
    table = _floats(table)
    columns = [int(c) for c in columns]
    x = np.arange(table.shape[0]) if positions is None else _floats(positions)
    fig, ax = _axes(ax)
    values = table[:, columns]
    low, high = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
    span = max(high - low, 1e-9)
    lane = 1.35 * span
    for lane_index, column in enumerate(columns):
        offset = lane * (len(columns) - 1 - lane_index)
        y = (table[:, column] - low) + offset
        if step:
            ax.step(x, y, where="post")
        else:
            ax.plot(x, y)
        ax.axhline(offset + (0.0 - low if low < 0 < high else 0.0), color="0.8", lw=0.6, zorder=0)
    ax.set_yticks([lane * (len(columns) - 1 - k) + span / 2 for k in range(len(columns))])
    ax.set_yticklabels([f"dim {c}" for c in columns])
    ax.set(title=title, xlabel=xlabel)
    ax.grid(False, axis="y")
    return fig


def wavelength_ladder(wavelengths, *, title, base=10000.0, ax=None):
    """Wavelength (positions per turn) of each sin/cos pair on a log scale, with 2*pi and base*2*pi marked."""
    wavelengths = _floats(wavelengths)
    fig, ax = _axes(ax)
    ax.semilogy(np.arange(wavelengths.size), wavelengths, "o", ms=3, label="pair i")
    ax.minorticks_off()
    ax.axhline(2 * np.pi, color="tab:green", ls="--", label="2π (pair 0)")
    ax.axhline(base * 2 * np.pi, color="tab:red", ls="--", label=f"{base:g}·2π")
    ax.set(title=title, xlabel="pair index i (columns 2i, 2i+1)", ylabel="wavelength (positions, log scale)")
    ax.legend(loc="lower right")
    return fig


def dimension_profile(values, *, title, ylabel, xlabel="dimension", log=False, ax=None):
    """One number per dimension (column) as bars, e.g. how much each column changes per step."""
    values = _floats(values)
    fig, ax = _axes(ax)
    ax.bar(np.arange(values.size), values, width=0.85, color="tab:blue")
    if log:
        ax.set_yscale("log")
        ax.minorticks_off()  # minor log ticks cost more to draw than the bars
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return fig


def pair_circle(table, pair, *, title, positions=None, annotate=(), ax=None):
    """The (sin, cos) columns 2i, 2i+1 of a table as points on the unit circle, coloured by position.

    Each position is a point; moving k positions on turns every point by the same angle.
    annotate: positions to label on the figure.
    """
    table = _floats(table)
    x = np.arange(table.shape[0]) if positions is None else _floats(positions)
    fig, ax = _axes(ax)
    turn = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.sin(turn), np.cos(turn), color="0.8", lw=1, zorder=0)
    points = ax.scatter(table[:, 2 * pair], table[:, 2 * pair + 1], c=x, cmap="viridis", s=18, zorder=2)
    fig.colorbar(points, ax=ax, label="position")
    for position in annotate:
        row = int(np.argmin(np.abs(x - position)))
        ax.annotate(
            f"p={position:g}",
            (table[row, 2 * pair], table[row, 2 * pair + 1]),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=9,
        )
    ax.set_aspect("equal")
    ax.set(
        title=title,
        xlabel=f"column {2 * pair} (sin)",
        ylabel=f"column {2 * pair + 1} (cos)",
        xlim=(-1.25, 1.25),
        ylim=(-1.25, 1.25),
    )
    return fig


def offset_fit_residuals(offsets, residuals, *, title, ax=None):
    """Relative residual of a least-squares fit PE(p+k) ≈ PE(p) A against the offset k, one curve per fit.

    residuals: dict label -> array like offsets. Log y axis, so 1e-14 and 0.5 fit on one figure.
    """
    offsets = _floats(offsets)
    fig, ax = _axes(ax)
    for label, values in residuals.items():
        ax.semilogy(offsets, np.maximum(_floats(values), 1e-17), "o-", label=label)
    ax.minorticks_off()
    ax.set(title=title, xlabel="offset k (positions)", ylabel="relative residual (log scale)")
    ax.legend()
    return fig


def distance_by_offset(offsets, distances, *, title, neighbour=None, ax=None):
    """||PE(p) - PE(p+k)|| against the offset k, one curve per label (e.g. per base).

    distances: dict label -> array like offsets. neighbour: dict label -> distance at k = 1,
    drawn as dashed lines; points of a curve under its dashed line (k >= 2) are collisions, marked with dots.
    """
    offsets = _floats(offsets)
    fig, ax = _axes(ax)
    for label, values in distances.items():
        values = _floats(values)
        (line,) = ax.plot(offsets, values, lw=1, label=label)
        if neighbour is not None and label in neighbour:
            ax.axhline(neighbour[label], color=line.get_color(), ls="--", lw=1)
            hits = (values < neighbour[label]) & (offsets >= 2)
            if np.any(hits):
                ax.plot(offsets[hits], values[hits], "o", color="crimson", ms=6, label=f"collision ({label})")
    ax.set(title=title, xlabel="offset k (positions)", ylabel="distance between rows p and p+k")
    ax.legend(loc="lower center", ncol=3, fontsize="small")
    return fig


def layout_comparison(interleaved, concatenated, *, title):
    """The same encoding in the two layouts side by side, on one colour scale."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), sharey=True)
    fig.subplots_adjust(left=0.08, right=0.87, bottom=0.14, top=0.82, wspace=0.08)
    names = ("interleaved (the paper)", "concatenated [sin | cos]")
    for ax, table, name in zip(axes, (interleaved, concatenated), names, strict=True):
        image = ax.imshow(_floats(table), aspect="auto", interpolation="nearest", vmin=-1, vmax=1)
        ax.set(title=name, xlabel="dimension")
        ax.grid(False)
    axes[0].set_ylabel("position")
    fig.colorbar(image, cax=fig.add_axes((0.89, 0.14, 0.02, 0.68)), label="value")
    fig.suptitle(title)
    return fig


# --- Notebook 02: naive encodings ---


def magnitude_against_words(positions, position_norms, word_norms, *, title, ax=None):
    """Norm of the position vector at each position (log-log) against the band of word-vector norms.

    positions, position_norms: (m,) with positions > 0; word_norms: (v,) norms of token vectors.
    """
    positions = _floats(positions)
    fig, ax = _axes(ax)
    low, median, high = np.percentile(_floats(word_norms), [5, 50, 95])
    ax.axhspan(low, high, color="tab:green", alpha=0.2, label="word vectors (5-95 %)")
    ax.axhline(median, color="tab:green", linestyle="--", label=f"median word norm {median:.3g}")
    ax.plot(positions, position_norms, color="tab:red", label="integer position vector")
    ax.set(xscale="log", yscale="log", title=title, xlabel="position p", ylabel="vector norm")
    ax.legend(loc="upper left")
    return fig


def value_strips(values_by_label, *, title, marker=None, xlabel="encoded value", ax=None):
    """One row of dots per label (e.g. per sequence length), at the values it uses; optional marker line.

    values_by_label: {label: 1-D values}. Rows are drawn top to bottom in the dict's order.
    """
    fig, ax = _axes(ax, figsize=(8.0, 0.6 + 0.7 * len(values_by_label)))
    labels = list(values_by_label)
    for row, label in enumerate(labels):
        values = _floats(values_by_label[label])
        ax.plot(values, np.full(values.shape, row), "o", markersize=5, label=None)
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
    fig, ax = _axes(ax)
    for label, table in tables.items():
        table = _floats(table)
        steps = np.linalg.norm(np.diff(table, axis=0), axis=1)
        ax.plot(np.arange(len(steps)), steps, marker=".", label=label)
    ax.set(title=title, xlabel="position p", ylabel="||PE(p+1) - PE(p)||", ylim=(0, None))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def bit_flips(flips, *, title, highlight=(), ax=None):
    """Bar per position p: how many bits change from p to p+1 (flips[p]); highlighted bars in red."""
    flips = np.asarray(flips)
    fig, ax = _axes(ax)
    highlight = set(highlight)
    colors = ["tab:red" if p in highlight else "tab:blue" for p in range(len(flips))]
    ax.bar(np.arange(len(flips)), flips, color=colors)
    ax.set(title=title, xlabel="position p (step p -> p+1)", ylabel="bits flipped")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return fig


def similarity_title(low, high):
    """Title of the similarity panel: the widest range over p of any offset (0: offset alone decides)."""
    high = _floats(high)
    spread = float(np.max(high - _floats(low)))
    spread = 0.0 if spread <= 1e-12 * max(1.0, float(np.max(np.abs(high)))) else spread  # rounding, not a range
    return f"widest range over p = {spread:.3g}"  # short: it must fit the panel in the lecture style too


def encoding_and_similarity(table, *, name, figsize=None):
    """Two panels: the (n, d) table as a heatmap, and PE(p) . PE(p+k) / d against the offset k.

    The right panel shows the mean over p and (shaded) the range over p: a band of zero width
    means the similarity depends on the offset only. Used by widgets.NaiveEncodingExplorer.
    """
    from .checklist import offset_profile

    table = _floats(table)
    figsize = figsize or style_figsize(9.0, 3.6)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, width_ratios=(1, 1.3), layout="constrained")
    n, d = table.shape
    low, high = float(table.min()), float(table.max())
    image = left.imshow(
        table, aspect="auto", interpolation="nearest", cmap="viridis", vmin=low, vmax=max(high, low + 1e-12)
    )
    fig.colorbar(image, ax=left, label="value")
    left.set(title=f"{name}: n={n}, d_model={d}", xlabel="dimension", ylabel="position")
    left.grid(False)
    left.yaxis.get_major_locator().set_params(integer=True)
    right.xaxis.get_major_locator().set_params(integer=True)
    offsets, mean, low_k, high_k = offset_profile(table)
    right.fill_between(offsets, low_k, high_k, color="tab:blue", alpha=0.25, label="range over p")
    right.plot(offsets, mean, color="tab:blue", label="mean over p")
    right.set(title=similarity_title(low_k, high_k), xlabel="offset k", ylabel="PE(p) . PE(p+k) / d_model")
    right.legend(loc="upper right")
    return fig


# --- Notebook 04: the pendulum intuition ---


def _freeze_layout(figure):
    """Lay out a figure made with layout="constrained" once, then keep that layout: redraws skip the layout pass."""
    figure.draw_without_rendering()
    figure.set_layout_engine("none")
    return figure


def _pendulum_figure(d_model, base):
    """An empty pendulum figure for an even d_model; returns (figure, artists) for `_set_pendulums`.

    Top: one dial per sin/cos pair i, drawn above its two columns (pair 0, the fastest, on the
    left), labelled with its wavelength. Bottom: the d_model values of PE(p) as bars.
    """
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 2 or d_model % 2:
        raise ValueError(f"the pendulum figure needs an even d_model >= 2 (one dial per sin/cos pair), got {d_model!r}")
    weights = encodings.frequencies(d_model, base=base)
    pairs = d_model // 2
    width = mpl.rcParams["figure.figsize"][0]  # 8 inches, 11 in the lecture style
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(width, 0.6 * width), sharex=True, height_ratios=[1.0, 1.2], layout="constrained"
    )
    centres = 2.0 * np.arange(pairs) + 0.5  # dial i sits above columns 2i and 2i+1
    turn = np.linspace(0.0, 2 * np.pi, 61)
    gap = np.full((pairs, 1), np.nan)
    circles_x = np.hstack([centres[:, None] + 0.9 * np.sin(turn), gap]).ravel()
    circles_y = np.hstack([np.tile(0.9 * np.cos(turn), (pairs, 1)), gap]).ravel()
    top.plot(circles_x, circles_y, color="0.75", lw=1.0)
    top.plot(centres, np.full(pairs, 0.9), ls="none", marker="|", color="0.5", ms=6)  # 12 o'clock: angle 0
    (hands,) = top.plot([], [], color="0.2", lw=1.8)
    (bobs,) = top.plot([], [], ls="none", marker="o", color="C3", ms=6)
    for i, (x, w) in enumerate(zip(centres, weights, strict=True)):
        top.text(x, -1.05, f"i={i}\nλ={2 * np.pi / w:.3g}", ha="center", va="top", fontsize="x-small")
    top.set_aspect("equal", adjustable="datalim")  # round dials; the shared x range stays that of the bars
    top.axis("off")
    title = top.set_title("position\nturns")  # two lines, as `_set_pendulums` writes (room kept by the layout)
    columns = np.arange(d_model)
    bars = bottom.bar(columns, np.zeros(d_model), color=["C0" if j % 2 == 0 else "C1" for j in columns])
    zero = bottom.axhline(0.0, color="0.3", lw=0.8)
    bottom.set_axisbelow(True)  # grid behind the bars, which the explorer redraws over a cached background
    bottom.set(xlim=(-1, d_model), ylim=(-1.15, 1.6), yticks=[-1, 0, 1], xlabel="column of PE(p)", ylabel="value")
    bottom.set_xticks(columns if d_model <= 32 else columns[::4])
    legend = [
        mpl.patches.Patch(color="C0", label="sin column 2i: bob's sideways offset"),
        mpl.patches.Patch(color="C1", label="cos column 2i+1: bob's height"),
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
    return _freeze_layout(fig), artists


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


def similarity_by_offset(
    offsets, curves, *, title, xlabel="offset k = q - p", ylabel="PE(p) · PE(p+k)", ax=None, logx=False
):
    """One line per entry of `curves` (label -> values, one per offset) against the offset k."""
    fig, ax = _axes(ax)
    offsets = _floats(offsets)
    for label, values in curves.items():
        ax.plot(offsets, _floats(values), label=label)
    ax.axhline(0.0, color="0.3", lw=0.8)
    if logx:
        ax.set_xscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if len(curves) > 1:
        ax.legend()
    return fig


def pair_contributions(offsets, d_model, *, base=10000.0, ax=None):
    """What each pair i adds to PE(p)·PE(p+k), cos(w_i k), against i: one line per offset k."""
    fig, ax = _axes(ax)
    if d_model % 2:
        raise ValueError(f"pair_contributions needs an even d_model (sin/cos pairs), got d_model={d_model}")
    weights = encodings.frequencies(d_model, base=base)
    pairs = np.arange(len(weights))
    for k in offsets:
        terms = np.cos(k * weights)
        ax.plot(pairs, terms, marker="o", ms=3, label=f"k = {k:g}: sum = {terms.sum():.1f}")
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
    width = 1.125 * mpl.rcParams["figure.figsize"][0]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(width, 0.42 * width), width_ratios=[1.25, 1.0], layout="constrained"
    )
    reference = np.cos(np.multiply.outer(offsets, encodings.frequencies(64))).sum(axis=-1) / 32
    left.plot(offsets, reference, color="0.7", lw=1.2, label="reference: d_model = 64, base = 10^4")
    (line,) = left.plot(offsets, np.zeros_like(offsets, dtype=float), color="C0", label="chosen")
    marker = left.axvline(0.0, color="C3", ls="--", lw=1.0)
    left.axhline(0.0, color="0.3", lw=0.8)
    left.axhline(0.5, color="C3", lw=0.6, alpha=0.5)
    left.set(
        xlim=(offsets[0], offsets[-1]),
        ylim=(-0.6, 1.05),
        yticks=[-0.5, 0.0, 0.5, 1.0],  # few tick labels: text is most of the cost of a redraw
        xlabel="offset k = q - p",
        ylabel="PE(p)·PE(p+k) / (d_model/2)",
    )
    left.legend(loc="lower left", fontsize="small")
    title = left.set_title("d_model 512, base 100000: half-width > 64")  # the longest title draw() writes
    image = right.imshow(
        np.zeros((n_positions, n_positions)), vmin=0.0, vmax=1.0, cmap="viridis", interpolation="nearest"
    )
    # A weight's whole range, 0..1, for every setting: how sharp the diagonal is compares across d_model.
    fig.colorbar(image, ax=right, label="attention weight", ticks=[0.0, 0.5, 1.0], format="%.1f")
    right.set(xlabel="key position q", ylabel="query position p", title="softmax(PE PE^T / sqrt(d))")
    right.grid(False)
    return _freeze_layout(fig), {"line": line, "marker": marker, "title": title, "image": image}


# --- Notebook 05: learned versus fixed ---

_VARIANT_COLOURS = {"none": "tab:gray", "learned": "tab:orange", "sinusoidal": "tab:blue"}
_METRIC_LABELS = {
    "in_distribution": "in distribution\n(train length)",
    "longer_seen": "longer sequences:\ntrained positions",
    "longer_unseen": "longer sequences:\nnew positions",
}


def position_projection(coordinates, *, title, explained=None, first_position=0, join=False, ax=None):
    """Positions projected to 2-D (e.g. pe_lib.experiments.pca_2d): one point per position, coloured by position.

    coordinates: (n, 2), row j is position first_position + j. explained: the variance share of
    the two axes (2,), shown in the axis labels. join=True also draws a thin line through the
    positions in order.
    """
    coordinates = _floats(coordinates)
    fig, ax = _axes(ax)
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


def accuracy_comparison(results, *, title, ax=None):
    """Accuracy of each positional variant (bars: mean over seeds, error bars: std, dots: single seeds).

    results: a dict like pe_lib.experiments.run_sweep / load_results returns ("summary", "runs",
    "baselines"). Dashed: chance (1 / vocabulary); dotted: the order-blind guess for the
    sequence length of each group of bars.
    """
    fig, ax = _axes(ax)
    summary, runs = results["summary"], results["runs"]
    metrics = list(_METRIC_LABELS)
    variants = _ordered_variants(list(summary))
    width = 0.8 / len(variants)
    for j, variant in enumerate(variants):
        x = np.arange(len(metrics)) + (j - (len(variants) - 1) / 2) * width
        means = [summary[variant][m]["mean"] for m in metrics]
        stds = [summary[variant][m]["std"] for m in metrics]
        colour = _VARIANT_COLOURS.get(variant)
        ax.bar(x, means, width * 0.9, yerr=stds, capsize=4, color=colour, alpha=0.8, label=variant)
        for k, metric in enumerate(metrics):
            values = [run[metric] for run in runs if run["positional"] == variant]
            ax.plot(np.full(len(values), x[k]), values, "o", ms=3, color="k", zorder=3)
    chance = results["baselines"]["chance"]
    blind = results["baselines"]["order_blind"]
    ax.axhline(chance, color="crimson", ls="--", lw=1, label=f"chance 1/vocab = {chance:.4f}")
    levels = [blind["in_distribution"] if m == "in_distribution" else blind["longer"] for m in metrics]
    ax.hlines(levels, np.arange(len(metrics)) - 0.45, np.arange(len(metrics)) + 0.45, color="0.2", ls=":", lw=1.5)
    ax.plot([], [], color="0.2", ls=":", lw=1.5, label="order-blind guess")
    ax.set_xticks(np.arange(len(metrics)))
    ax.set_xticklabels([_METRIC_LABELS[m] for m in metrics])
    ax.set_yticks(np.linspace(0, 1, 6))
    seeds = len(results.get("seeds", [])) or 1
    ax.set(title=title, ylabel=f"token accuracy (mean ± std, {seeds} seeds)", ylim=(0, 1.32))
    ax.grid(False, axis="x")
    ax.legend(loc="upper center", fontsize=8, ncols=3)
    return fig


def accuracy_by_position(per_position, *, train_len, chance, title, ax=None):
    """Accuracy at each position of the longer test sequences, one line per variant; shaded: never trained.

    per_position: dict variant -> list of accuracies (None where the position has no target).
    The learned line is drawn wide underneath, so that it stays visible where it coincides with another.
    """
    fig, ax = _axes(ax)
    for variant in _ordered_variants(list(per_position)):
        values = np.array([np.nan if v is None else v for v in per_position[variant]], dtype=float)
        ax.plot(
            np.arange(values.size),
            values,
            "o-",
            ms=6 if variant == "learned" else 3,
            lw=3.5 if variant == "learned" else 1.4,
            alpha=0.7 if variant == "learned" else 1.0,
            color=_VARIANT_COLOURS.get(variant),
            label=variant,
        )
        length = values.size
    ax.axvspan(train_len - 0.5, length - 0.5, color="0.92", zorder=0, label="positions never seen in training")
    ax.axhline(chance, color="crimson", ls="--", lw=1, label="chance")
    ax.set(title=title, xlabel="position in the test sequence", ylabel="token accuracy", ylim=(0, 1.05))
    ax.legend(loc="center left", fontsize=8)
    return fig


def loss_curves(losses, *, title, chance_loss=None, ax=None):
    """Training loss (log scale) against the step, one line per label: losses is dict label -> (steps,)."""
    fig, ax = _axes(ax)
    for label, values in losses.items():
        ax.semilogy(
            np.arange(1, len(values) + 1),
            _floats(values),
            color=_VARIANT_COLOURS.get(label),
            lw=1,
            label=label,
        )
    if chance_loss is not None:
        ax.axhline(
            chance_loss, color="crimson", ls="--", lw=1, label=f"guessing uniformly: ln(vocab) = {chance_loss:.2f}"
        )
    ax.set(title=title, xlabel="training step", ylabel="cross-entropy loss (log scale)")
    ax.legend(fontsize=8)
    return fig


def learned_table_after_training(table, *, train_len, title):
    """A trained position table: heatmap (rows = positions) and the norm of each row; rows past train_len untrained."""
    table = _floats(table)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.0, 3.6), width_ratios=[1.6, 1.0], layout="constrained")
    heatmap(table, title="the table (rows = positions)", colorbar_label="value", ax=left)
    left.axhline(train_len - 0.5, color="k", lw=1.2)
    left.text(table.shape[1] - 1, train_len + 0.5, "never trained ↓", ha="right", va="top", fontsize=9)
    norms = np.linalg.norm(table, axis=1)
    colours = np.where(np.arange(table.shape[0]) < train_len, "tab:orange", "0.6")
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
    fig, axes = plt.subplots(1, len(tables), figsize=(4.6 * len(tables), 3.8), layout="constrained", squeeze=False)
    for ax, (name, table) in zip(axes[0], tables.items(), strict=True):
        table = _floats(table)
        high = limit if limit is not None else float(np.quantile(np.abs(table), 0.99)) or 1.0
        extent = (-0.5, table.shape[1] - 0.5, first_row + table.shape[0] - 0.5, first_row - 0.5)
        image = ax.imshow(table, aspect="auto", interpolation="nearest", vmin=-high, vmax=high, extent=extent)
        label = colorbar_label if limit is not None else f"{colorbar_label} (colours clipped at 99th pct)"
        fig.colorbar(image, ax=ax, label=label)
        ax.set(title=name, xlabel=xlabel, ylabel=ylabel)
        ax.grid(False)
    fig.suptitle(title)
    return fig


# --- Notebook 01: the order problem ---


def _word_ticks(ax, rows, cols=None):
    """Label the rows (and columns) of an image with words, one tick per cell."""
    ax.set_yticks(range(len(rows)), labels=list(rows))
    if cols is not None:
        ax.set_xticks(range(len(cols)), labels=list(cols), rotation=45, ha="right", rotation_mode="anchor")


def attention_heatmap(weights, tokens, *, title, keys=None, ax=None, annotate=True, vmax=1.0):
    """Attention weights, shape (queries, keys), with the words as tick labels; each row sums to 1.

    Row i is where query word i looks; colour is the weight (0..vmax) of each key word.
    """
    weights = _floats(weights)
    keys = list(tokens if keys is None else keys)
    if weights.ndim != 2 or weights.shape != (len(tokens), len(keys)):
        raise ValueError(
            f"weights must have shape (len(tokens), len(keys)) = ({len(tokens)}, {len(keys)}), got {weights.shape}"
        )
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 4.5))
        fig.subplots_adjust(left=0.22, right=0.95, bottom=0.2, top=0.92)  # fixed: no layout engine (faster)
    fig = ax.figure
    image = ax.imshow(weights, vmin=0.0, vmax=vmax, cmap="viridis", interpolation="nearest")
    fig.colorbar(image, ax=ax, label="attention weight")
    _word_ticks(ax, tokens, keys)
    ax.set(title=title, xlabel="key (word attended to)", ylabel="query (word attending)")
    ax.grid(False)
    if annotate:
        for (row, col), value in np.ndenumerate(weights):
            colour = "black" if value > 0.6 * vmax else "white"
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", fontsize="small", color=colour)
    return fig


def permutation_panels(x, y, x_perm, y_perm, tokens, tokens_perm, *, name="attention", figsize=(9.0, 5.0)):
    """Equivariance at a glance: X and f(X) on top, PX and f(PX) below, rows labelled by word.

    Shared colour scales per column, so a row that keeps its colours has kept its values.
    """
    arrays = [_floats(a) for a in (x, y, x_perm, y_perm)]
    rows = (tokens, tokens, tokens_perm, tokens_perm)
    for label, array, words in zip(("x", "y", "x_perm", "y_perm"), arrays, rows, strict=True):
        if array.ndim != 2 or array.shape[0] != len(words):
            raise ValueError(f"{label} must have one row per word ({len(words)}), got shape {array.shape}")
    fig, axes = plt.subplots(2, 2, figsize=figsize, sharex="col")
    fig.subplots_adjust(left=0.08, right=0.9, bottom=0.1, top=0.88, wspace=0.3, hspace=0.3)
    titles = [
        ("input X", f"{name}(X)"),
        ("P X (rows reordered)", f"{name}(P X)  =  P {name}(X)"),
    ]
    for col, label in enumerate(("embedding value", "output value")):
        pair = (arrays[col], arrays[col + 2])
        limit = max(float(np.max(np.abs(a))) for a in pair) or 1.0
        for row, (array, words) in enumerate(zip(pair, (tokens, tokens_perm), strict=True)):
            ax = axes[row, col]
            image = ax.imshow(array, vmin=-limit, vmax=limit, cmap="RdBu_r", aspect="auto", interpolation="nearest")
            _word_ticks(ax, words)
            ax.set(title=titles[row][col], xlabel="dimension" if row == 1 else "")
            ax.grid(False)
        fig.colorbar(image, ax=axes[:, col], label=label)
    fig.suptitle("Permute the input rows and the output rows move with them")
    return fig


def order_shift_bars(words, shifts, *, title, ylabel="distance between outputs", values_on_bars=False, ax=None):
    """Grouped bars: for each word (x axis) and each model (colour), how far its output moved.

    shifts: dict label -> array (len(words),). The legend gives each model's largest shift,
    so bars too small to see are still reported as a number; values_on_bars writes every value.
    """
    words = list(words)
    if not shifts:
        raise ValueError("shifts must name at least one model")
    fig, ax = _axes(ax)
    width = 0.8 / len(shifts)
    centres = np.arange(len(words))
    for index, (label, values) in enumerate(shifts.items()):
        values = _floats(values)
        if values.shape != (len(words),):
            raise ValueError(f"shifts[{label!r}] must have one value per word ({len(words)}), got shape {values.shape}")
        offset = (index - (len(shifts) - 1) / 2) * width
        bars = ax.bar(centres + offset, values, width=width, label=f"{label} (largest {measured(values.max())})")
        if values_on_bars:
            ax.bar_label(bars, fmt="%.3f", fontsize="small")
    ax.set_xticks(centres, labels=words)
    ax.set(title=title, xlabel="word", ylabel=ylabel)
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize="small")
    return fig


# --- Notebook 06: the embedding pipeline ---


def heatmap_row(panels, *, title, xlabel="dimension", ylabel="position", colorbar_label="value", row_labels=None):
    """Several tables side by side on one shared, symmetric colour scale with one colour bar.

    panels: dict panel title -> table (rows, columns). row_labels (optional): tick labels for
    the rows of every panel (e.g. the words of a sentence).
    """
    tables = {name: _floats(table) for name, table in panels.items()}
    if not tables:
        raise ValueError("panels must hold at least one table")
    limit = max(float(np.max(np.abs(t))) if t.size else 0.0 for t in tables.values()) or 1.0
    width = min(3.0 * len(tables) + 1.5, 14.0)
    fig, axes = plt.subplots(1, len(tables), figsize=(width, 3.2), squeeze=False, sharey=True)
    image = None
    for ax, (name, table) in zip(axes[0], tables.items(), strict=True):
        image = ax.imshow(table, aspect="auto", interpolation="nearest", vmin=-limit, vmax=limit)
        ax.set(title=name, xlabel=xlabel)
        ax.xaxis.set_major_locator(mpl.ticker.MaxNLocator(nbins=4, integer=True))
        ax.grid(False)
    axes[0, 0].set_ylabel(ylabel)
    if row_labels is not None:
        axes[0, 0].set_yticks(range(len(row_labels)), row_labels)
    else:
        axes[0, 0].yaxis.set_major_locator(mpl.ticker.MaxNLocator(integer=True))
    fig.suptitle(title)
    fig.subplots_adjust(top=0.8, bottom=0.17, wspace=0.25)
    fig.colorbar(image, ax=list(axes[0]), label=colorbar_label)
    return fig


def norms_versus_d_model(d_models, norms, *, title="Vector norms versus d_model"):
    """Mean vector norm against d_model on log-log axes, one line per kind of vector.

    norms: dict label -> sequence of mean norms, one per entry of d_models.
    """
    d_models = _floats(d_models)
    fig, ax = _axes(None, figsize=(8, 4))
    for label, values in norms.items():
        ax.plot(d_models, _floats(values), marker="o", label=label)
    ax.set(xscale="log", yscale="log", title=title, xlabel="d_model", ylabel="mean norm ||v||")
    ax.set_xticks(d_models, [f"{d:g}" for d in d_models])
    ax.yaxis.set_major_formatter(mpl.ticker.FuncFormatter(lambda value, _: f"{value:g}"))  # plain text, no mathtext
    ax.minorticks_off()
    ax.legend(fontsize="small")
    return fig


def near_orthogonality(cosines, angles, *, title="Token vectors versus positional encodings"):
    """Left: histograms of cos(token vector, PE row) per d_model; right: principal angles.

    cosines: dict d_model -> 1-D array of cosines; angles: dict d_model -> principal angles in
    degrees between the position subspace and a token subspace of the same dimension.
    """
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    for d_model, values in cosines.items():
        left.hist(
            _floats(values),
            bins=81,
            range=(-1, 1),
            density=True,
            histtype="step",
            label=f"d_model={d_model}",
            linewidth=1.6,
        )
    left.set(title="cosine between a token vector and a PE row", xlabel="cosine", ylabel="density")
    left.legend(fontsize="small")
    for d_model, values in angles.items():
        values = np.sort(_floats(values))
        right.plot(np.arange(1, values.size + 1), values, marker="o", label=f"d_model={d_model}")
    right.axhline(90, color="grey", linestyle=":", linewidth=1)
    right.set(
        title="principal angles between the subspaces",
        xlabel="index (smallest first)",
        ylabel="angle (degrees)",
        ylim=(0, 95),
    )
    right.legend(fontsize="small")
    fig.suptitle(title)
    fig.subplots_adjust(top=0.83, bottom=0.15, wspace=0.3)
    return fig


def readback_accuracy(d_models, token_accuracy, position_accuracy, *, title="Reading token and position back"):
    """Accuracy of decoding the token and the position from their sum, against d_model."""
    d_models = _floats(d_models)
    fig, ax = _axes(None, figsize=(7, 3.6))
    ax.plot(d_models, token_accuracy, marker="o", label="token (nearest token vector)")
    ax.plot(d_models, position_accuracy, marker="s", linestyle="--", label="position (after removing the token)")
    ax.set(xscale="log", title=title, xlabel="d_model", ylabel="accuracy", ylim=(-0.02, 1.05))
    ax.set_xticks(d_models, [f"{d:g}" for d in d_models])
    ax.minorticks_off()
    ax.legend(fontsize="small", loc="lower right")
    return fig


def segment_embeddings(segment_table, position_table, *, title="Segment embeddings of all-MiniLM-L6-v2"):
    """Left: the segment rows and their difference per dimension; right: norms next to position rows.

    segment_table: (num_segments >= 2, d); position_table: (max_len, d) from the same model.
    """
    segment_table = _floats(segment_table)
    position_table = _floats(position_table)
    difference = segment_table[1] - segment_table[0]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [2, 1]})
    dims = np.arange(segment_table.shape[1])
    left.plot(dims, segment_table[0], linewidth=0.8, label="segment 0")
    left.plot(dims, segment_table[1], linewidth=0.8, label="segment 1")
    left.plot(dims, difference, linewidth=1.2, color="black", label="segment 1 - segment 0")
    left.set(title="the rows, dimension by dimension", xlabel="dimension", ylabel="value")
    left.legend(fontsize="small", ncols=3, loc="upper left")
    names = ["segment 0", "segment 1", "difference", "position row", "position step"]
    values = [
        np.linalg.norm(segment_table[0]),
        np.linalg.norm(segment_table[1]),
        np.linalg.norm(difference),
        np.linalg.norm(position_table, axis=1).mean(),
        np.linalg.norm(np.diff(position_table, axis=0), axis=1).mean(),
    ]
    right.bar(range(len(names)), values, color=["tab:blue", "tab:orange", "black", "tab:green", "tab:olive"])
    right.set_xticks(range(len(names)), names, rotation=30, ha="right")
    right.set(title="norms (position: mean over rows)", ylabel="norm")
    fig.suptitle(title)
    fig.subplots_adjust(top=0.83, bottom=0.25, wspace=0.25)
    return fig
