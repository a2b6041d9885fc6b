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
