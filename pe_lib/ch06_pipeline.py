"""The embedding pipeline: token + position (+ segment) (used in notebook 06).

Its figures and its explorers; the graders of its exercises are in pe_lib/ch06_pipeline_exercises.py and
importable from here, as notebook 06 calls them (ch06.check_...).
"""

import itertools

import ipywidgets as widgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

from . import _validate, analysis, encodings, modules
from .accessible import number
from .ch06_pipeline_exercises import check_batch_first_positional, check_embedding_forward  # noqa: F401 (ch06.check_...)
from .explorer import Explorer
from .figures import floats, new_axes, style_figsize


def heatmap_row(panels, *, title, xlabel="dimension", ylabel="position", colorbar_label="value", row_labels=None):
    """Several tables side by side on one shared, symmetric colour scale with one colour bar.

    panels: dict panel title -> table (rows, columns). row_labels (optional): tick labels for
    the rows of every panel (e.g. the words of a sentence).
    """
    tables = {name: floats(table) for name, table in panels.items()}
    if not tables:
        raise ValueError("panels must hold at least one table")
    limit = max(float(np.max(np.abs(t))) if t.size else 0.0 for t in tables.values()) or 1.0
    width = min(3.0 * len(tables) + 1.5, 14.0)
    fig, axes = plt.subplots(1, len(tables), figsize=style_figsize(width, 3.2), squeeze=False, sharey=True)
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
    d_models = floats(d_models)
    fig, ax = new_axes(None, figsize=(8, 4))
    for label, values in norms.items():
        ax.plot(d_models, floats(values), marker="o", label=label)
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
    fig, (left, right) = plt.subplots(1, 2, figsize=style_figsize(9, 3.6))
    for d_model, values in cosines.items():
        left.hist(
            floats(values),
            bins=81,
            range=(-1, 1),
            density=True,
            histtype="step",
            label=f"d_model={d_model}",
            linewidth=1.6,
        )
    # Short titles: side by side, they must fit over their panels in the lecture style too.
    left.set(title="cosine(token vector, PE row)", xlabel="cosine", ylabel="density")
    left.legend(fontsize="small")
    for d_model, values in angles.items():
        values = np.sort(floats(values))
        right.plot(np.arange(1, values.size + 1), values, marker="o", label=f"d_model={d_model}")
    right.axhline(90, color="grey", linestyle=":", linewidth=1)
    right.set(
        title="principal angles of the subspaces",
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
    d_models = floats(d_models)
    fig, ax = new_axes(None, figsize=(7, 3.6))
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
    segment_table = floats(segment_table)
    position_table = floats(position_table)
    difference = segment_table[1] - segment_table[0]
    fig, (left, right) = plt.subplots(1, 2, figsize=style_figsize(10, 3.6), gridspec_kw={"width_ratios": [2, 1]})
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
    right.bar(range(len(names)), values, color=["C0", "C1", "C5", "C2", "C4"])
    right.set_xticks(range(len(names)), names, rotation=30, ha="right")
    right.set(title="norms (position: mean over rows)", ylabel="norm")
    fig.suptitle(title)
    fig.subplots_adjust(top=0.83, bottom=0.25, wspace=0.25)
    return fig


def _percent(share):
    """A share as a whole percentage, and "under 1%" or "over 99%" where rounding would say 0% or 100%."""
    if share < 0.005:
        return "under 1%"
    if share >= 0.995:
        return "over 99%"
    return f"{share:.0%}"


class NormShareExplorer(Explorer):
    """How big the token part and the position part of x = token * scale + PE are.

    Controls: d_model (slider), the token table's initialisation, and whether token vectors
    are multiplied by sqrt(d_model). Left: mean norms of both parts. Right: the position's
    share of ||x||^2 across d_model, with the current d_model marked.
    """

    INIT_WORDS = dict(  # analysis.TOKEN_INITS in words, for the finding
        zip(
            analysis.TOKEN_INITS,
            (
                "drawn from N(0, 1/d) as pe_lib draws them",
                "drawn from N(0, 1), PyTorch's default for an embedding",
                "drawn as Xavier's uniform initialisation draws them for a vocabulary of 37,000",
            ),
            strict=True,
        )
    )

    def __init__(self, d_models=(8, 16, 32, 64, 128, 256, 512, 1024), *, d_model=512, positions=64):
        if isinstance(d_models, (str, bytes)) or not hasattr(d_models, "__iter__"):
            raise ValueError(f"d_models must list at least one d_model, got {d_models!r}")
        d_models = list(d_models)  # once: a generator can be read only once
        if not d_models:
            raise ValueError(f"d_models must list at least one d_model, got {d_models!r}")
        # Every d_model's token table and PE table are built here: bounded, so building stays about a second.
        self.d_models = tuple(_validate.int_in_range(f"d_models[{i}]", d, 1, 8192) for i, d in enumerate(d_models))
        if any(a >= b for a, b in itertools.pairwise(self.d_models)):
            raise ValueError(f"d_models must be increasing (the slider's order), got {self.d_models}")
        d_model = _validate.one_of("d_model", d_model, self.d_models)
        positions = _validate.int_in_range("positions", positions, 1, 4096)
        self.token_norm = {
            init: {d: float(analysis.token_vector_norms(init, d).mean()) for d in self.d_models}
            for init in analysis.TOKEN_INITS
        }
        self.pe_norm = {
            d: float(np.linalg.norm(encodings.sinusoidal_encoding(positions, d), axis=1).mean()) for d in self.d_models
        }
        figure, (left, right) = plt.subplots(1, 2, figsize=style_figsize(9.0, 3.6), layout="constrained")
        self.bars = left.bar([0, 1], [1.0, 1.0], color=["C0", "C1"])
        left.set_xticks([0, 1], ["token part", "position part"])
        left.set(yscale="log", ylim=(0.01, 3000), ylabel="mean norm", title="norms")
        left.set_yticks([0.01, 1, 100], ["0.01", "1", "100"])  # few plain labels: text is most of the render time
        left.minorticks_off()
        left.set_axisbelow(True)  # grid behind the bars, which are redrawn over a cached background
        self.bar_labels = [left.text(i, 1.0, "", ha="center", va="bottom") for i in (0, 1)]
        # Labelled for the figure's description (the alt text); no legend: the title says the share.
        self.curve = right.plot(self.d_models, np.full(len(self.d_models), 0.5), marker="o", label="each d_model")[0]
        self.marker = right.plot([d_model], [0.5], "o", markersize=12, color="C5", label="the chosen d_model")[0]
        right.axhline(0.5, color="grey", linestyle=":", linewidth=1)
        right.set(
            xscale="log",
            ylim=(-0.02, 1.02),
            xlabel="d_model",
            ylabel="position share of ||x||^2",
            title="share across d_model",
        )
        right.set_xticks(self.d_models[::2], [str(d) for d in self.d_models[::2]])
        right.set_yticks([0, 0.5, 1])
        right.minorticks_off()
        self.title = figure.suptitle("")
        controls = {
            "d_model": widgets.SelectionSlider(options=self.d_models, value=d_model, description="d_model"),
            "init": widgets.Dropdown(
                options=analysis.TOKEN_INITS, value=analysis.TOKEN_INITS[0], description="token init"
            ),
            "scale": widgets.Checkbox(value=True, description="x sqrt(d_model)"),
        }
        super().__init__(figure, controls)

    def norms(self, d_model, init, scale):
        """(mean token-part norm, mean position-part norm) for these settings."""
        token = self.token_norm[init][d_model] * (d_model**0.5 if scale else 1.0)
        return token, self.pe_norm[d_model]

    def share(self, d_model, init, scale):
        """The position's share of ||x||^2, pe^2 / (token^2 + pe^2) (the parts are nearly orthogonal)."""
        token, position = self.norms(d_model, init, scale)
        return position**2 / (token**2 + position**2)

    def draw(self, d_model, init, scale):
        token, position = self.norms(d_model, init, scale)
        for bar, label, value in zip(self.bars, self.bar_labels, (token, position), strict=True):
            bar.set_height(value)
            label.set_position((label.get_position()[0], value))
            label.set_text(f"{value:.3g}")
        self.curve.set_ydata([self.share(d, init, scale) for d in self.d_models])
        share = self.share(d_model, init, scale)
        self.marker.set_data([d_model], [share])
        self.title.set_text(f"d_model={d_model}: the position is {100 * share:.0f}% of ||x||^2")
        self._shown = (d_model, init, scale)

    def finding(self):
        d_model, init, scale = self._shown
        token, position = self.norms(d_model, init, scale)
        shares = [_percent(self.share(d, init, scale)) for d in self.d_models]
        scaled = "times √d_model" if scale else "not scaled"
        return (
            f"d_model {d_model}, token vectors {self.INIT_WORDS[init]}, {scaled}: the mean norm of the token part is "
            f"{number(token)}, of the position part {number(position)}, so the position is "
            f"{shares[self.d_models.index(d_model)]} of the input's squared norm (from {shares[0]} at d_model "
            f"{self.d_models[0]} to {shares[-1]} at d_model {self.d_models[-1]})"
        )

    def animated_artists(self):
        return (*self.bars, *self.bar_labels, self.curve, self.marker, self.title)


class DropoutExplorer(Explorer):
    """nn.Dropout in train mode on one embedded sentence, for a dropout rate p (slider).

    Left: the output; dropped entries are exactly 0. Right: output against input; kept
    entries lie on the line y = x / (1 - p). The mask for each p is drawn from a fixed seed
    (torch's global random state is left untouched). After each update, `dropped_share` is the
    share of entries the mask dropped (zeros that x already held are not counted as dropped).
    """

    def __init__(self, x=None, *, p=0.1, seed=0):
        if x is None:  # as notebook 06: one embedded 5-token sentence, d_model 32
            with torch.random.fork_rng(devices=[]), torch.no_grad():
                torch.manual_seed(0)
                x = modules.TransformerEmbedding(10, 32, dropout=0.0)(torch.tensor([[1, 6, 7, 8, 2]]))[0]
        if np.ndim(x) != 2:
            raise ValueError(f"x must have shape (seq, d_model), one sentence, got shape {np.shape(x)}")
        x = _validate.real_array("x", x, ndim=2)  # also a tensor that requires grad
        if x.size == 0:
            raise ValueError(f"x must hold at least one token and one feature, got shape {x.shape}")
        self.x = torch.as_tensor(x, dtype=torch.float32)
        self.seed = _validate.count("seed", seed)
        p = _validate.finite_real("p", p)
        if not 0.0 <= p <= 0.9:
            raise ValueError(f"p must be in [0, 0.9], the slider's range, got {p}")
        flat = self.x.flatten().numpy()
        limit = float(np.abs(flat).max()) or 1.0
        figure, (left, right) = plt.subplots(1, 2, figsize=style_figsize(9.0, 3.6), layout="constrained")
        self.heat = left.imshow(
            self.x.numpy(), aspect="auto", interpolation="nearest", cmap="RdBu_r", vmin=-2 * limit, vmax=2 * limit
        )
        figure.colorbar(self.heat, ax=left, label="value", ticks=[-2 * limit, 0, 2 * limit], format="%.1f")
        left.set_yticks([0, self.x.shape[0] - 1])
        left.set(title="train-mode output", xlabel="dimension", ylabel="position")
        left.grid(False)
        self.points = right.scatter(flat, flat, s=8)
        span = np.array([-limit, limit])
        self.span = span
        self.right = right
        self.kept_line = right.plot(span, span, color="C1", label="y = x / (1 - p)")[0]
        right.plot(span, span, color="grey", linestyle=":", linewidth=1, label="y = x (eval mode)")
        right.set(
            xlabel="input entry",
            ylabel="output entry",
            title="output against input",
        )
        right.legend(fontsize="small", loc="upper left")
        self.points.set_label("the entries, input against output")  # for the description; not in the legend
        right.locator_params(nbins=4)  # few tick labels: text is most of the render time
        left.locator_params(axis="x", nbins=4)
        self.title = figure.suptitle("")
        controls = {"p": widgets.FloatSlider(value=p, min=0.0, max=0.9, step=0.05, description="dropout p")}
        super().__init__(figure, controls)

    def layout_values(self):
        # p sets the right panel's y range, up to 10 times the input's: room for every set of tick labels.
        slider, locator, looks = self.controls["p"], self.right.yaxis.get_major_locator(), {}
        for step in range(round((slider.max - slider.min) / slider.step) + 1):
            p = round(slider.min + step * slider.step, 10)
            ticks = tuple(locator.tick_values(*(1.1 * self.span / (1 - p))))  # the y range draw() sets
            looks.setdefault(ticks, {"p": p})
        return list(looks.values())

    def output(self, p):
        """nn.functional.dropout(x, p, training=True) with this explorer's fixed seed."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return torch.nn.functional.dropout(self.x, p=p, training=True)

    def kept(self, p):
        """The entries that output(p) keeps (bool, the shape of x): its dropout mask, read off a tensor of ones.

        A zero of x (padding, say) stays zero whether or not it is dropped, so zeros of the output do
        not count the dropped entries; the mask does.
        """
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)  # the same draw as output(p): same seed, same shape
            return torch.nn.functional.dropout(torch.ones_like(self.x), p=p, training=True) != 0

    def draw(self, p):
        y = self.output(p)
        self.heat.set_data(y.numpy())
        self.points.set_offsets(list(zip(self.x.flatten().tolist(), y.flatten().tolist(), strict=True)))
        self.kept_line.set_ydata(self.span / (1 - p))
        self.right.set_ylim(1.1 * self.span / (1 - p))
        kept = self.kept(p)
        self.dropped_share = int((~kept).sum()) / kept.numel()
        self.title.set_text(
            f"p = {p:.2f}: {100 * self.dropped_share:.0f}% of entries dropped, the rest x {1 / (1 - p):.2f}"
        )
        self._shown = (p, y, kept)

    def finding(self):
        p, y, kept = self._shown
        total, dropped = kept.numel(), int((~kept).sum())
        if dropped == 0:
            return f"Dropout p = {p:.2f} in train mode drops none of the {total} entries: the output is the input"
        nonzero = kept & (self.x != 0)  # a kept entry's scale, output / input, where the input is not 0
        scale = float((y[nonzero] / self.x[nonzero]).median()) if nonzero.any() else 1 / (1 - p)
        return (
            f"Dropout p = {p:.2f} in train mode: {dropped} of the {total} entries "
            f"({100 * self.dropped_share:.0f}%) are set to 0, the other {total - dropped} are multiplied by "
            f"{scale:.2f}, that is 1 / (1 - p); in eval mode the output is the input"
        )

    def animated_artists(self):
        # p moves the right panel's y range: its y axis and the y = x line move with it.
        right = self.right
        return (self.heat, self.points, self.kept_line, right.lines[1], right.yaxis, right.get_legend(), self.title)
