"""Every figure the notebooks draw: one function per kind of figure, each returning its Figure.

Figures share one look (titles, labelled axes, colour bars) and a lecture style with large
fonts and thick lines for a projector: `use_style(lecture=True)`.
"""

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

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


def use_style(lecture=False):
    """Apply the course's figure style; lecture=True for large fonts and thick lines."""
    mpl.rcParams.update(_BASE_STYLE)
    if lecture:
        mpl.rcParams.update(_LECTURE_STYLE)


def _axes(ax, figsize=None):
    """Return (figure, axes): the given axes' figure, or a new figure."""
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize)
    return fig, ax


def heatmap(table, *, title, xlabel="dimension", ylabel="position", colorbar_label="value", ax=None, symmetric=True):
    """A table (rows x columns) as an image with a colour bar; symmetric colours around 0 by default."""
    table = np.asarray(table, dtype=float)
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
    table = np.asarray(table, dtype=float)
    columns = [int(c) for c in columns]
    x = np.arange(table.shape[0]) if positions is None else np.asarray(positions, dtype=float)
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
    wavelengths = np.asarray(wavelengths, dtype=float)
    fig, ax = _axes(ax)
    ax.semilogy(np.arange(wavelengths.size), wavelengths, "o", ms=3, label="pair i")
    ax.axhline(2 * np.pi, color="tab:green", ls="--", label="2π (fastest possible here)")
    ax.axhline(base * 2 * np.pi, color="tab:red", ls="--", label=f"{base:g}·2π")
    ax.set(title=title, xlabel="pair index i (columns 2i, 2i+1)", ylabel="wavelength (positions, log scale)")
    ax.legend(loc="upper left")
    return fig


def dimension_profile(values, *, title, ylabel, xlabel="dimension", log=False, ax=None):
    """One number per dimension (column) as bars, e.g. how much each column changes per step."""
    values = np.asarray(values, dtype=float)
    fig, ax = _axes(ax)
    ax.bar(np.arange(values.size), values, width=0.85, color="tab:blue")
    if log:
        ax.set_yscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    return fig


def pair_circle(table, pair, *, title, positions=None, annotate=(), ax=None):
    """The (sin, cos) columns 2i, 2i+1 of a table as points on the unit circle, coloured by position.

    Each position is a point; moving k positions on turns every point by the same angle.
    annotate: positions to label on the figure.
    """
    table = np.asarray(table, dtype=float)
    x = np.arange(table.shape[0]) if positions is None else np.asarray(positions, dtype=float)
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
    offsets = np.asarray(offsets, dtype=float)
    fig, ax = _axes(ax)
    for label, values in residuals.items():
        ax.semilogy(offsets, np.maximum(np.asarray(values, dtype=float), 1e-17), "o-", label=label)
    ax.set(title=title, xlabel="offset k (positions)", ylabel="relative residual (log scale)")
    ax.legend()
    return fig


def distance_by_offset(offsets, distances, *, title, neighbour=None, ax=None):
    """||PE(p) - PE(p+k)|| against the offset k, one curve per label (e.g. per base).

    distances: dict label -> array like offsets. neighbour: dict label -> distance at k = 1,
    drawn as dashed lines; a curve dipping under its dashed line is a collision.
    """
    offsets = np.asarray(offsets, dtype=float)
    fig, ax = _axes(ax)
    for label, values in distances.items():
        (line,) = ax.plot(offsets, np.asarray(values, dtype=float), lw=1, label=label)
        if neighbour is not None and label in neighbour:
            ax.axhline(neighbour[label], color=line.get_color(), ls="--", lw=1)
    ax.set(title=title, xlabel="offset k (positions)", ylabel="distance between rows p and p+k")
    ax.legend(loc="lower right")
    return fig


def layout_comparison(interleaved, concatenated, *, title):
    """The same encoding in the two layouts side by side, on one colour scale."""
    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.6), sharey=True)
    names = ("interleaved (the paper)", "concatenated [sin | cos]")
    for ax, table, name in zip(axes, (interleaved, concatenated), names, strict=True):
        image = ax.imshow(np.asarray(table, dtype=float), aspect="auto", interpolation="nearest", vmin=-1, vmax=1)
        ax.set(title=name, xlabel="dimension")
        ax.grid(False)
    axes[0].set_ylabel("position")
    fig.colorbar(image, ax=axes, label="value")
    fig.suptitle(title)
    return fig


# --- Notebook 02: naive encodings ---


def magnitude_against_words(positions, position_norms, word_norms, *, title, ax=None):
    """Norm of the position vector at each position (log-log) against the band of word-vector norms.

    positions, position_norms: (m,) with positions > 0; word_norms: (v,) norms of token vectors.
    """
    positions = np.asarray(positions, dtype=float)
    fig, ax = _axes(ax)
    low, median, high = np.percentile(np.asarray(word_norms, dtype=float), [5, 50, 95])
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
        values = np.asarray(values_by_label[label], dtype=float)
        ax.plot(values, np.full(values.shape, row), "o", markersize=5, label=None)
    if marker is not None:
        ax.axvline(marker, color="black", linestyle="--", label=f"value {marker}")
        ax.legend(loc="upper right", bbox_to_anchor=(1.0, 1.25))
    ax.set(title=title, xlabel=xlabel, yticks=range(len(labels)), yticklabels=labels, ylim=(len(labels) - 0.5, -0.5))
    ax.grid(axis="y", visible=False)
    return fig


def step_sizes(tables, *, title, ax=None):
    """Distance from each position to the next, ||PE(p+1) - PE(p)||, one line per table.

    tables: {label: (n, d) table}. A flat line is a step of constant size.
    """
    fig, ax = _axes(ax)
    for label, table in tables.items():
        table = np.asarray(table, dtype=float)
        steps = np.linalg.norm(np.diff(table, axis=0), axis=1)
        ax.plot(np.arange(len(steps)), steps, marker=".", label=label)
    ax.set(title=title, xlabel="position p", ylabel="||PE(p+1) - PE(p)||", ylim=(0, None))
    ax.legend(loc="best")
    return fig


def bit_flips(flips, *, title, highlight=(), ax=None):
    """Bar per position p: how many bits change from p to p+1 (flips[p]); highlighted bars in red."""
    flips = np.asarray(flips)
    fig, ax = _axes(ax)
    colors = ["tab:red" if p in set(highlight) else "tab:blue" for p in range(len(flips))]
    ax.bar(np.arange(len(flips)), flips, color=colors)
    ax.set(title=title, xlabel="position p (step p -> p+1)", ylabel="bits flipped")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return fig


def similarity_title(low, high):
    """Title of the similarity panel: the widest range over p of any offset (0: offset alone decides)."""
    high = np.asarray(high, dtype=float)
    spread = float(np.max(high - np.asarray(low, dtype=float)))
    spread = 0.0 if spread <= 1e-12 * max(1.0, float(np.max(np.abs(high)))) else spread  # rounding, not a range
    return f"similarity vs offset k (widest range over p: {spread:.3g})"


def encoding_and_similarity(table, *, name, figsize=(9.0, 3.6)):
    """Two panels: the (n, d) table as a heatmap, and PE(p) . PE(p+k) / d against the offset k.

    The right panel shows the mean over p and (shaded) the range over p: a band of zero width
    means the similarity depends on the offset only. Used by widgets.NaiveEncodingExplorer.
    """
    from .checklist import offset_profile

    table = np.asarray(table, dtype=float)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, width_ratios=(1, 1.3))
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.14, top=0.9, wspace=0.45)  # fixed: no layout pass per frame
    n, d = table.shape
    low, high = float(table.min()), float(table.max())
    image = left.imshow(
        table, aspect="auto", interpolation="nearest", cmap="viridis", vmin=low, vmax=max(high, low + 1e-12)
    )
    fig.colorbar(image, ax=left, label="value")
    left.set(title=f"{name}: n={n}, d_model={d}", xlabel="dimension", ylabel="position")
    left.grid(False)
    offsets, mean, low_k, high_k = offset_profile(table)
    right.fill_between(offsets, low_k, high_k, color="tab:blue", alpha=0.25, label="range over p")
    right.plot(offsets, mean, color="tab:blue", label="mean over p")
    right.set(title=similarity_title(low_k, high_k), xlabel="offset k", ylabel="PE(p) . PE(p+k) / d_model")
    right.legend(loc="upper right")
    return fig
