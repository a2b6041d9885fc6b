"""Positions beyond one line of text: grids, M-RoPE, layers that differ (used in notebook 11).

Its measurements, figures and explorers; the graders are in ch11_beyond_exercises. The maths is
pe_lib.multidim's and pe_lib.layer_schemes'; the experiments are pe_lib.grid_task and pe_lib.layered.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, grid_task, layer_schemes, layered, multidim
from .accessible import number
from .encodings import sinusoidal_encoding
from .explorer import Explorer
from .figures import style_figsize
from .rope_scaling import rope_frequencies

AXIS_NAMES = ("time", "height", "width")
AXIS_COLOURS = ("C2", "C0", "C1")  # the three ids of M-RoPE; markers and hatches tell them apart too
AXIS_MARKERS = ("o", "s", "^")
AXIS_HATCHES = ("", "////", "....")


# --- two dimensions -----------------------------------------------------------------------------------


def offset_scores(q, k, frequencies, reach):
    """S[a + reach, b + reach]: the score of q (at the origin) with k at offset (a, b), |a|, |b| <= reach.

    frequencies: (pairs, 2) (fx, fy) of one head. A probe: the same q and the same k at every cell, so the
    score can only depend on where they are (in a model, q and k also depend on each cell's token).
    """
    reach = _validate.positive_int("reach", reach)
    side = np.arange(-reach, reach + 1)
    rows, cols = (a.ravel() for a in np.meshgrid(side, side, indexing="ij"))
    q_turned = multidim.apply_angles(np.asarray(q, dtype=float)[None], multidim.rope_2d_angles([0], [0], frequencies))
    k_turned = multidim.apply_angles(np.broadcast_to(np.asarray(k, dtype=float), (rows.size, len(k))),
                                     multidim.rope_2d_angles(rows, cols, frequencies))  # fmt: skip
    return (k_turned @ q_turned[0]).reshape(side.size, side.size)


def interaction(scores):
    """S(a, b) - S(a, 0) - S(0, b) + S(0, 0) for every offset: 0 wherever the score is a row part plus a column part."""
    scores = np.asarray(scores, dtype=float)
    centre = scores.shape[0] // 2
    return scores - scores[:, centre : centre + 1] - scores[centre : centre + 1, :] + scores[centre, centre]


def diagonal_difference(scores):
    """S(a, b) + S(-a, -b) - S(a, -b) - S(-a, b) for every offset (a, b): the two neighbours on the line
    through (a, b) and the origin against the two on the mirrored line. 0 wherever S is a row part plus a column part.
    """
    scores = np.asarray(scores, dtype=float)
    return scores + scores[::-1, ::-1] - scores[:, ::-1] - scores[::-1, :]


def offset_attention(scores, *, scale=1.0):
    """The softmax of one query's scores times `scale` over every key of the (2 reach + 1)^2 offsets
    (scores from offset_scores; scale 1 / sqrt(head_dim) is what attention applies)."""
    scores = np.asarray(scores, dtype=float) * _validate.finite_real("scale", scale)
    weights = np.exp(scores - scores.max())
    return weights / weights.sum()


def aimed_query(k, frequencies, offset):
    """The q whose score with k is largest at `offset` (row, column): k turned by that offset's angles.

    Then S(a, b) = sum over pairs of |k_pair|^2 cos(angle(a, b) - angle(offset)), largest at the offset.
    """
    row, col = (_validate.finite_real("offset", v) for v in offset)
    k = np.asarray(k, dtype=float)
    return multidim.apply_angles(k[None], multidim.rope_2d_angles([row], [col], frequencies))[0]


AXIAL_BASE, MIXED_BASE = grid_task.AXIAL_BASE, grid_task.MIXED_BASE


def head_frequencies(kind, head_dim=16, *, direction=30.0):
    """(pairs, 2) frequencies of one head: RoPE-Axial's (base 100), or RoPE-Mixed's initialisation (base 10)
    turned to `direction` degrees (rope-vit's defaults for each)."""
    kind = _validate.choice("kind", kind, ("axial", "mixed"))
    if kind == "axial":
        return multidim.axial_rope_frequencies(head_dim, base=AXIAL_BASE)
    f = multidim.mixed_rope_frequencies(head_dim, 1, base=MIXED_BASE, seed=0)[0]
    length = np.hypot(f[:, 0], f[:, 1])
    quarter = head_dim // 4
    angle = (
        np.radians(_validate.finite_real("direction", direction))
        + np.r_[np.zeros(quarter), np.full(quarter, np.pi / 2)]
    )
    return np.stack([length * np.cos(angle), length * np.sin(angle)], axis=-1)


def score_maps(q, k, *, reach=6, direction=30.0, axes=None):
    """Four panels: axial RoPE's scores over (row, column) offsets and their interaction; the same for mixed RoPE."""
    if axes is None:
        fig, axes = plt.subplots(1, 4, figsize=style_figsize(10.0, 3.0), layout="constrained")
    fig = axes[0].figure
    extent = (-reach - 0.5, reach + 0.5, reach + 0.5, -reach - 0.5)
    images = []
    for column, kind in enumerate(("axial", "mixed")):
        scores = offset_scores(q, k, head_frequencies(kind, len(q), direction=direction), reach)
        for ax, values, title in (
            (axes[2 * column], scores, "score"),
            (axes[2 * column + 1], interaction(scores), "interaction"),
        ):
            limit = (
                max(float(np.abs(values).max()), 1e-9) if title == "score" else max(1.0, float(np.abs(scores).max()))
            )
            images.append(
                ax.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit, extent=extent, interpolation="nearest")
            )
            base = AXIAL_BASE if kind == "axial" else MIXED_BASE
            ax.set(title=f"{kind}, base {base:g}\n{title}", xlabel="column offset",
                   ylabel="row offset" if ax is axes[0] else None)  # fmt: skip
            ticks = np.arange(-reach, reach + 1, max(1, reach // 2))
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
    return fig, images


def resize_comparison(old=7, new=12):
    """A smooth 2-D table (rows: sinusoids of the row, then of the column) resampled from old x old to new x new.

    Returns (table (old*old, C), timm's resampling, DeiT's), C = 16, no class token. timm's default
    antialias=True and DeiT's plain bicubic differ even though both upsample.
    """
    rows, cols = multidim.grid_positions(old, old)
    table = np.concatenate([sinusoidal_encoding(rows, 8, base=20.0), sinusoidal_encoding(cols, 8, base=20.0)], axis=1)
    timm = multidim.resize_position_table(table, new, num_prefix_tokens=0)
    deit = multidim.resize_position_table(table, new, num_prefix_tokens=0, antialias=False)
    return table, timm, deit


def resize_figure(old=7, new=12, channel=3):
    table, timm, deit = resize_comparison(old, new)
    fig, axes = plt.subplots(1, 3, figsize=style_figsize(10.0, 3.4), layout="constrained")
    for ax, values, side, title in ((axes[0], table, old, f"a table, {old} x {old}"),
                                    (axes[1], timm, new, f"timm's, {new} x {new}"),
                                    (axes[2], timm - deit, new, "timm's minus DeiT's")):  # fmt: skip
        image = ax.imshow(values[:, channel].reshape(side, side), cmap="RdBu_r")
        fig.colorbar(image, ax=ax, shrink=0.8, label="difference" if ax is axes[2] else "value")
        ax.set(title=title, xlabel="column", ylabel="row" if ax is axes[0] else None)
    return fig


# --- M-RoPE -------------------------------------------------------------------------------------------


def modalities(segments, spatial_merge_size=2):
    """The modality of each token of mrope_position_ids(segments): 'text', 'image' or 'video'."""
    out = []
    for item in segments:
        if isinstance(item, int):
            out += ["text"] * item
        else:
            out += [item[0]] * (item[1] * item[2] * item[3] // spatial_merge_size**2)
    return out


def position_ids_figure(segments, *, model="qwen2_vl", ax=None):
    ids = multidim.mrope_position_ids(segments, model=model)
    kinds = modalities(segments)
    if ax is None:
        fig, ax = plt.subplots(figsize=style_figsize(10.0, 3.6), layout="constrained")
    for row, (name, colour, marker) in enumerate(zip(AXIS_NAMES, AXIS_COLOURS, AXIS_MARKERS, strict=True)):
        ax.plot(ids[row] + 0.12 * (row - 1), marker, ms=4, color=colour, label=name, ls="none")
    kinds = np.array(kinds)
    for kind, style in (("image", {"color": "0.5", "alpha": 0.15}),
                        ("video", {"facecolor": "none", "edgecolor": "0.6", "hatch": "//"})):  # fmt: skip
        for index in np.flatnonzero(kinds == kind):
            ax.axvspan(index - 0.5, index + 0.5, lw=0, **style)
    ax.set(xlabel="token index in the sequence (shaded: image tokens; hatched: video tokens)", ylabel="position id",
           title=f"{model}: three position ids per token")  # fmt: skip
    ax.legend(loc="upper left")
    return ax.figure


def video_time_figure(segments, **kwargs):
    """The time id of every token of a prompt with one video, and where the text after the video starts by the
    trained rule and by transformers 5.3-5.24's (kwargs: mrope_position_ids' model, second_per_grid_ts, ...)."""
    trained = multidim.mrope_position_ids(segments, **kwargs)
    current = multidim.mrope_position_ids(segments, text_after="grid_side", **kwargs)
    kinds = np.array(modalities(segments, kwargs.get("spatial_merge_size", 2)))
    index = np.arange(kinds.size)
    video = kinds == "video"
    before, after = ~video & (index < index[video].min()), ~video & (index > index[video].max())
    fig, ax = plt.subplots(figsize=style_figsize(10.0, 3.6), layout="constrained")
    low, high = trained[0, video].min(), trained[0, video].max()
    ax.axhspan(low, high, color="0.88", lw=0, zorder=0, label=f"the video's time ids ({low} to {high})")
    ax.plot(index[video], trained[0, video], color="C2", lw=2, label="video tokens (one step per temporal patch)")
    ax.plot(index[before], trained[0, before], "o", color="0.45", ms=5, label="text before")
    ax.plot(index[after], trained[0, after], "o", color="0.2", ms=6, mfc="none", label="text after: trained rule")
    ax.plot(index[after], current[0, after], "X", color="C3", ms=7, label="text after: transformers 5.3 to 5.24")
    ax.set(xlabel="token index in the sequence", ylabel="time id", ylim=(0, high + 8),
           title="time ids of a prompt with a video, and where the text after it starts")  # fmt: skip
    ax.legend(loc="upper left", fontsize="small")
    return fig


def pair_wavelengths(mrope_section, *, head_dim=128, base=1e6, interleaved=False):
    """{axis name: wavelengths 2 pi / theta_j of the pairs that read that axis}."""
    theta = rope_frequencies(head_dim, base=base)
    axes = multidim.mrope_pair_axes(head_dim // 2, mrope_section, interleaved=interleaved)
    return {name: 2 * np.pi / theta[axes == axis] for axis, name in enumerate(AXIS_NAMES)}


def pair_allocation_figure():
    """Qwen2-VL's consecutive sections against Qwen3-VL's interleaved ones: each pair's wavelength, by axis."""
    fig, axes = plt.subplots(1, 2, figsize=style_figsize(11.0, 3.6), layout="constrained", sharey=True)
    settings = (("Qwen2-VL: [16, 24, 24], consecutive", [16, 24, 24], False, 1e6),
                ("Qwen3-VL: [24, 20, 20], interleaved", [24, 20, 20], True, 5e6))  # fmt: skip
    for ax, (title, section, interleaved, base) in zip(axes, settings, strict=True):
        theta = rope_frequencies(128, base=base)
        pair_axes = multidim.mrope_pair_axes(64, section, interleaved=interleaved)
        for axis, (name, colour, hatch) in enumerate(zip(AXIS_NAMES, AXIS_COLOURS, AXIS_HATCHES, strict=True)):
            chosen = np.flatnonzero(pair_axes == axis)
            ax.bar(chosen, 2 * np.pi / theta[chosen], color=colour, label=name, width=0.9, hatch=hatch,
                   edgecolor="white", linewidth=0)  # fmt: skip
        ax.set(yscale="log", title=title, xlabel="pair j")
    axes[0].set_ylabel("wavelength 2π/θ_j (tokens)")
    axes[0].legend(loc="upper left")
    return fig


# --- layers that differ -------------------------------------------------------------------------------


def layer_kind(layer):
    """'RoPE, window' / 'RoPE, chunk' / 'RoPE, full' / 'NoPE' for a layer_schemes.LayerScheme."""
    if layer.rope is None:
        return "NoPE"
    return "RoPE, window" if layer.window else "RoPE, chunk" if layer.chunk else "RoPE, full"


def scaling_label(layer):
    """A layer's RoPE scaling in words: 'linear x8', 'yarn x32', or '' (none, or no RoPE)."""
    if layer.rope is None or layer.rope.scaling is None:
        return ""
    return f"{layer.rope.rope_type} x{layer.rope.scaling['factor']:g}"


# RoPE is green (figures.COLOURS), no positions grey; the hatch tells the attention span apart
KIND_STYLES = {
    "RoPE, full": {"facecolor": "C2", "edgecolor": "C2"},
    "RoPE, window": {"facecolor": "white", "edgecolor": "C2", "hatch": "////"},
    "RoPE, chunk": {"facecolor": "white", "edgecolor": "C2", "hatch": "xxx"},
    "NoPE": {"facecolor": "0.45", "edgecolor": "0.45"},
}


def layer_plans_figure(names=None):
    """One row per model of the data file, one cell per layer, coloured by what the layer does with positions."""
    models = {entry["name"]: entry for entry in layer_schemes.load_layer_schemes()}
    names = list(models) if names is None else list(names)
    fig, ax = plt.subplots(figsize=style_figsize(11.0, 0.45 * len(names) + 1.4), layout="constrained")
    for row, name in enumerate(names):
        for index, layer in enumerate(layer_schemes.layer_plan(models[name]["config"])):
            ax.add_patch(plt.Rectangle((index, row - 0.4), 0.9, 0.8, lw=0.8, **KIND_STYLES[layer_kind(layer)]))
    ax.set(xlim=(0, 64), ylim=(len(names) - 0.5, -0.5), xlabel="layer", yticks=range(len(names)), yticklabels=names)
    handles = [plt.Rectangle((0, 0), 1, 1, lw=0.8, **style) for style in KIND_STYLES.values()]
    fig.legend(handles, KIND_STYLES, loc="outside upper center", ncols=4, fontsize="small")
    return fig


# --- the experiments' results -------------------------------------------------------------------------


METRIC_HATCHES = ("", "////", "xxx")  # in distribution, then further out: solid, hatched, cross-hatched
SEED_DOTS = {"color": "0.15", "marker": ".", "ls": "none", "ms": 5}


def _metric_handles(labels):
    """Legend entries for bars told apart by their hatch (their colour is the method's)."""
    return [
        plt.Rectangle((0, 0), 1, 1, facecolor="0.6", edgecolor="white", hatch=h) for h in METRIC_HATCHES[: len(labels)]
    ]


GRID_LABELS = {
    "learned": "learned table\n(resampled)",
    "axial": "axial\nbase 100",
    "axial_base_10": "axial\nbase 10",
    "mixed_frozen": "mixed, base 10\nfrozen",
    "mixed": "mixed, base 10\nlearned",
}


def grid_task_figure(results):
    """Accuracy per method (learned orange, RoPE green): the training grid (solid), the larger one (hatched)."""
    variants = [v for v in grid_task.VARIANTS if v in results["summary"]]
    fig, ax = plt.subplots(figsize=style_figsize(9.0, 3.8), layout="constrained")
    colours = ["C1" if variant == "learned" else "C2" for variant in variants]
    train, test = results["config"]["train_grid"], results["config"]["test_grid"]
    for offset, metric, hatch in zip((-0.2, 0.2), grid_task.METRICS, METRIC_HATCHES, strict=False):
        runs = [[r[metric] for r in results["runs"] if r["variant"] == variant] for variant in variants]
        x = np.arange(len(runs)) + offset
        ax.bar(x, [np.mean(r) for r in runs], width=0.38, color=colours, hatch=hatch, edgecolor="white", linewidth=0)
        for position, seeds in zip(x, runs, strict=True):
            ax.plot(np.full(len(seeds), position), seeds, **SEED_DOTS)
    ax.axhline(results["chance"], color="0.3", ls=":", lw=1.5)
    ax.set(xticks=range(len(variants)), xticklabels=[GRID_LABELS[v] for v in variants], ylabel="accuracy",
           ylim=(0, 1.05), title=f"grid task: trained on {train} x {train}, tested on {test} x {test}")  # fmt: skip
    labels = [f"{train} x {train} (solid)", f"{test} x {test} (hatched)"]
    handles = [*_metric_handles(labels), plt.Line2D([], [], color="0.3", ls=":", lw=1.5)]
    ax.legend(handles, [*labels, "chance"], loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3,
              fontsize="small")  # fmt: skip
    return fig


LAYERED_LABELS = {
    "rope": "all RoPE",
    "window": "RoPE\nwindows",
    "local_rope_global_nope": "RoPE windows\n+ global NoPE",
    "window_sink": "RoPE windows\n+ sink",
    "nope": "no positions",
}


def layered_figure(results, tasks=("shift", "local_max")):
    """One panel per task: accuracy of each variant at L, 2L and 4L (bars: means; dots: the seeds)."""
    columns = ("in_distribution", "at_2x", "at_4x")
    variants = [v for v in layered.VARIANTS if v in results["summary"][tasks[0]]]
    colours = [{"nope": "0.45"}.get(variant, "C2") for variant in variants]  # RoPE green, none grey
    fig, axes = plt.subplots(1, len(tasks), figsize=style_figsize(12.0, 3.6), layout="constrained", sharey=True)
    for ax, task in zip(np.atleast_1d(axes), tasks, strict=True):
        for offset, metric, hatch in zip((-0.27, 0, 0.27), columns, METRIC_HATCHES, strict=True):
            runs = [[r[metric] for r in results["runs"] if r["variant"] == v and r["task"] == task] for v in variants]
            x = np.arange(len(runs)) + offset
            ax.bar(x, [np.mean(r) for r in runs], width=0.25, color=colours, hatch=hatch, edgecolor="white",
                   linewidth=0)  # fmt: skip
            for position, seeds in zip(x, runs, strict=True):
                ax.plot(np.full(len(seeds), position), seeds, **SEED_DOTS)
        ax.set(xticks=range(len(variants)), xticklabels=[LAYERED_LABELS[v] for v in variants], ylim=(0, 1.05),
               title=f"{task}: trained at L = {results['config']['train_len']}")  # fmt: skip
        ax.tick_params(axis="x", labelsize="small")
    np.atleast_1d(axes)[0].set_ylabel("accuracy")
    train = results["config"]["train_len"]
    labels = [f"at L = {train} (solid)", f"at 2L = {2 * train} (hatched)", f"at 4L = {4 * train} (cross-hatched)"]
    fig.legend(_metric_handles(labels), labels, loc="outside lower center", ncols=3, fontsize="small")
    return fig


# --- explorers ------------------------------------------------------------------------------------------


class Rope2DExplorer(Explorer):
    """Scores over (row, column) offsets for one q and k: axial RoPE against mixed RoPE at a chosen direction.

    The direction slider turns RoPE-Mixed's pairs (the first half of the pairs points along it, the other half
    at a right angle); the interaction panels show S(a, b) - S(a, 0) - S(0, b) + S(0, 0), zero for axial at any setting.
    After each update: `self.axial_interaction`, `self.mixed_interaction` (largest |interaction|).
    """

    def __init__(self, *, direction=30, seed=0):
        rng = np.random.default_rng(_validate.count("seed", seed))
        self._q, self._k = rng.normal(size=16), rng.normal(size=16)
        fig, axes = plt.subplots(1, 4, figsize=style_figsize(10.0, 3.0), layout="constrained")
        _, self._images = score_maps(self._q, self._k, axes=axes, direction=direction)
        controls = {"direction": widgets.IntSlider(value=direction, min=0, max=180, step=5, description="mixed °")}
        super().__init__(fig, controls)

    def draw(self, direction):
        axial = offset_scores(self._q, self._k, head_frequencies("axial", 16), 6)
        self.axial_interaction = float(np.abs(interaction(axial)).max())  # the axial panels never change
        scores = offset_scores(self._q, self._k, head_frequencies("mixed", 16, direction=direction), 6)
        self.mixed_interaction = float(np.abs(interaction(scores)).max())
        self.direction = direction
        self._images[2].set_data(scores)
        self._images[3].set_data(interaction(scores))

    def animated_artists(self):
        return self._images[2:]

    def finding(self):
        mixed = "none (it is axial)" if self.mixed_interaction < 1e-9 else number(self.mixed_interaction)
        axial = "none" if self.axial_interaction < 1e-9 else number(self.axial_interaction)
        return f"RoPE-Mixed turned to {self.direction} degrees: largest |interaction| {mixed}; axial RoPE: {axial}"


class MropeExplorer(Explorer):
    """Text, one image and text again: the three position ids of every token as the image's grid changes.

    height and width count merged patches (what the language model sees); the sequence is
    [text_before tokens, the image, 4 text tokens]. After each update: `self.ids` (3, n), `self.next_text`.
    """

    MAX = 8

    def __init__(self, *, text_before=3, height=3, width=5):
        fig, ax = plt.subplots(figsize=style_figsize(10.0, 3.6), layout="constrained")
        self._ax = ax
        self._lines = [
            ax.plot([], [], m, ms=4, color=c, label=n, ls="none")[0]
            for n, c, m in zip(AXIS_NAMES, AXIS_COLOURS, AXIS_MARKERS, strict=True)
        ]
        ax.set(xlim=(-1, 8 + self.MAX**2 + 4), ylim=(-1, 8 + self.MAX + 5), xlabel="token index",
               ylabel="position id", title="text, an image (merged grid height x width), text")  # fmt: skip
        ax.legend(loc="upper left")
        slider = dict(min=1, max=self.MAX, step=1)
        controls = {
            "text_before": widgets.IntSlider(value=text_before, min=1, max=8, step=1, description="text before"),
            "height": widgets.IntSlider(value=height, description="height", **slider),
            "width": widgets.IntSlider(value=width, description="width", **slider),
        }
        super().__init__(fig, controls)

    def draw(self, text_before, height, width):
        self.ids = multidim.mrope_position_ids([text_before, ("image", 1, 2 * height, 2 * width), 4])
        self.next_text = int(self.ids[0, -4])
        self._shown = (text_before, height, width)
        for row, line in enumerate(self._lines):
            line.set_data(np.arange(self.ids.shape[1]), self.ids[row] + 0.12 * (row - 1))

    def animated_artists(self):
        return self._lines

    def finding(self):
        text_before, height, width = self._shown
        return (
            f"{text_before} text tokens, a {height} x {width} image ({height * width} tokens) from position "
            f"{text_before}; the text after it resumes at {self.next_text} = {text_before} + max({height}, {width})"
        )
