"""Notebook 12's figures and explorers: what 2025-26 models do with positions (used in notebook 12).

Figures: the two frequency ladders of partial RoPE, which features pair in each convention, the per-layer
table of 13 models, the query scales that grow with position, Omni's time ids, and the SmolLM2 sweep
(p-RoPE beside notebook 10's context-extension sweep, the cost of each porting bug). Explorers: partial RoPE's
score over distance (PartialRopeExplorer), Omni's time ids against seconds (OmniTimeExplorer). The graders
are in ch12_positions_2026_exercises.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import hybrid_layers, layer_schemes, long_context, omni_positions, partial_sweep, position_scales
from .accessible import number
from .explorer import Explorer
from .figures import COLOURS, style_figsize
from .partial_rope import pair_plan, partial_frequencies

RopeGreen, Grey, Problem = COLOURS["rope"], COLOURS["none"], COLOURS["problem"]
CONVENTION_STYLES = {  # both are RoPE (green); the line style and marker tell them apart
    "neox": {"color": RopeGreen, "ls": "--", "marker": "x", "label": "NeoX partial: first r = p·d features"},
    "proportional": {"color": RopeGreen, "ls": "-", "marker": "o", "label": "proportional (Gemma 4): whole head"},
}


# --- partial RoPE -------------------------------------------------------------------------------------------


def wavelengths(head_dim, fraction, base, kind):
    """Tokens per full turn of each pair, 2 pi / theta_i (inf for a pair that never turns)."""
    theta = partial_frequencies(head_dim, fraction, base=base, kind=kind)
    with np.errstate(divide="ignore"):
        return np.where(theta > 0, 2 * np.pi / np.where(theta > 0, theta, 1.0), np.inf)


def ladder_figure(head_dim=512, fraction=0.25, base=1e6, context=262_144):
    """Wavelength of each pair: full RoPE, NeoX partial and proportional at one fraction (Gemma 4's global head)."""
    fig, ax = plt.subplots(figsize=style_figsize(9.0, 4.2), layout="constrained")
    full = wavelengths(head_dim, 1.0, base, "neox")
    ax.plot(np.arange(full.size), full, color=Grey, lw=1.2, label=f"full RoPE, {full.size} pairs (reference)")
    for kind, style in CONVENTION_STYLES.items():
        waves = wavelengths(head_dim, fraction, base, kind)
        turning = np.isfinite(waves)
        ax.plot(np.flatnonzero(turning), waves[turning], ms=3, markevery=4, **style)
        if not turning.all():
            frozen = np.flatnonzero(~turning)
            ax.plot(frozen, np.full(frozen.size, 3 * full.max()), color=style["color"], ls="none", marker="|",
                    ms=6, label=f"proportional: {frozen.size} pairs that never turn (drawn at the top)")  # fmt: skip
    ax.axhline(context, color=COLOURS["reference"], lw=1, ls=":", label=f"context, {context:,} tokens")
    ax.set(yscale="log", xlabel="pair index i (fastest first)", ylabel="wavelength 2π/θ_i (tokens)",
           title=f"head of {head_dim} features, fraction {fraction}, base {base:g}")  # fmt: skip
    ax.legend(fontsize="small", loc="upper left")
    return fig


def pairing_figure(head_dim=16, fraction=0.5, base=100.0):
    """Which features pair, in each convention and layout: one panel each, one horizontal segment per pair."""
    fig, axes = plt.subplots(2, 2, figsize=style_figsize(10.0, 5.6), layout="constrained", sharex=True)
    for row, kind in enumerate(("neox", "proportional")):
        for col, layout in enumerate(("half", "interleaved")):
            ax = axes[row, col]
            plan = pair_plan(head_dim, fraction, base=base, kind=kind, layout=layout)
            for j, ((a, b), theta) in enumerate(zip(plan.pairs, plan.theta, strict=True)):
                still = theta == 0
                style = {"color": Grey, "ls": ":"} if still else {"color": RopeGreen, "ls": "-"}
                ax.plot([a, b], [j, j], marker="o", ms=4, lw=1.4, **style)
            free = sorted(set(range(head_dim)) - set(plan.pairs.ravel().tolist()))
            if free:
                ax.plot(free, [-1] * len(free), ls="none", marker="x", color=Grey, ms=5)
            ax.set(title=f"{kind}, {layout}", ylim=(len(plan.pairs) - 0.5, -1.7), xticks=range(0, head_dim, 2))
            ax.set_ylabel("pair (fastest first)" if col == 0 else "")
    for ax in axes[1]:
        ax.set_xlabel("feature index")
    handles = [
        plt.Line2D([], [], color=RopeGreen, marker="o", ms=4, label="a pair that turns"),
        plt.Line2D([], [], color=Grey, ls=":", marker="o", ms=4, label="a pair that never turns (θ = 0)"),
        plt.Line2D([], [], color=Grey, ls="none", marker="x", label="a feature in no pair (passed through)"),
    ]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize="small")
    return fig


def score_over_distance(head_dim, fraction, base, kind, distances, samples=64):
    """q . k / d for q = k = ones, averaged over 64 distances from D to 2D, for each D of `distances`.

    Pair i adds 2 cos(Delta theta_i) at distance Delta; averaged over D..2D that is about 1 while the pair turns
    less than once across the span and about 0 once it turns many times. A pair that never turns adds 2 at every
    distance, and so does every feature no pair holds (NeoX's features past r): the floor of the curve.
    """
    spans = np.asarray(distances, dtype=np.float64)[:, None] * np.linspace(1.0, 2.0, samples)[None, :]
    theta = partial_frequencies(head_dim, fraction, base=base, kind=kind)
    turned = 2 * np.cos(spans[..., None] * theta).sum(axis=-1).mean(axis=-1)
    passed = head_dim - 2 * theta.size  # NeoX's features past r
    return (turned + passed) / head_dim


class PartialRopeExplorer(Explorer):
    """The score of q = k = ones over distance under full RoPE, NeoX partial and proportional RoPE.

    Both partial forms keep a floor: the features that never turn add the same at every distance. What differs
    is how far the turning part reaches: proportional's slowest turning pair is the full head's k-th, NeoX
    squeezes the whole ladder into its r features. After each update: `self.longest` {kind: the longest
    finite wavelength in tokens}, `self.floor` (the part that never turns, as a fraction of the score at 0).
    """

    DISTANCES = np.logspace(0, 7, 120)

    def __init__(self, *, fraction=0.25, base=1e6, head_dim=128):
        self.head_dim = head_dim
        fig, ax = plt.subplots(figsize=style_figsize(9.0, 4.0), layout="constrained")
        full = score_over_distance(head_dim, 1.0, base, "neox", self.DISTANCES)
        (self._full,) = ax.plot(self.DISTANCES, full, color=Grey, lw=1.2, label="full RoPE (reference)")
        self._lines = {
            kind: ax.plot(self.DISTANCES, full, markevery=40, ms=4, **style)[0]
            for kind, style in CONVENTION_STYLES.items()
        }
        ax.set(xscale="log", ylim=(-0.1, 1.05), xlabel="distance D between query and key (tokens)",
               ylabel="mean q · k / d over D..2D", title=f"q = k = ones, a head of {head_dim} features")  # fmt: skip
        ax.legend(fontsize="small", loc="lower left")
        controls = {
            "fraction": widgets.SelectionSlider(
                options=[0.125, 0.25, 0.375, 0.5, 0.75, 1.0], value=fraction, description="fraction"
            ),  # fmt: skip
            "base": widgets.SelectionSlider(options=[1e4, 1e5, 1e6, 1e7], value=base, description="base"),
        }
        super().__init__(fig, controls)

    def draw(self, fraction, base):
        self._full.set_ydata(score_over_distance(self.head_dim, 1.0, base, "neox", self.DISTANCES))
        self.longest = {}
        for kind, line in self._lines.items():
            line.set_ydata(score_over_distance(self.head_dim, fraction, base, kind, self.DISTANCES))
            waves = wavelengths(self.head_dim, fraction, base, kind)
            self.longest[kind] = float(waves[np.isfinite(waves)].max())
        self.floor = 1.0 - 2 * int(fraction * self.head_dim // 2) / self.head_dim
        self._shown = (fraction, base)

    def animated_artists(self):
        return [self._full, *self._lines.values()]

    def finding(self):
        fraction, base = self._shown
        return (
            f"fraction {fraction}, base {base:g}: {self.floor:.0%} of the score never turns in either form; the "
            f"slowest turning pair repeats every {number(self.longest['proportional'])} tokens (proportional), "
            f"every {number(self.longest['neox'])} tokens (NeoX)"
        )


# --- the per-layer table ------------------------------------------------------------------------------------


def layer_kind(layer):
    """The figure's category of a hybrid_layers.LayerPositions."""
    if layer.mixer == "linear":
        return "linear attention (no scores)"
    if not layer.rotated:
        return "attention, NoPE"
    return {"full": "RoPE, whole head", "neox": "RoPE, first part (NeoX)", "proportional": "RoPE, proportional",
            "decoupled": "RoPE, MLA rope sub-head"}[layer.convention]  # fmt: skip


KIND_STYLES = {  # RoPE green, no positions grey; hatches tell the kinds of partial rotation apart
    "RoPE, whole head": {"facecolor": RopeGreen, "edgecolor": RopeGreen},
    "RoPE, first part (NeoX)": {"facecolor": "white", "edgecolor": RopeGreen, "hatch": "////"},
    "RoPE, proportional": {"facecolor": "white", "edgecolor": RopeGreen, "hatch": "\\\\\\\\"},
    "RoPE, MLA rope sub-head": {"facecolor": "white", "edgecolor": RopeGreen, "hatch": "xxx"},
    "attention, NoPE": {"facecolor": Grey, "edgecolor": Grey},
    "linear attention (no scores)": {"facecolor": "white", "edgecolor": Grey, "hatch": ".."},
}


def layer_table_figure(models=None):
    """One row per model of data/layer_schemes_2026.json, one cell per layer, by what the layer does with positions."""
    models = hybrid_layers.load_models() if models is None else models
    fig, ax = plt.subplots(figsize=style_figsize(11.0, 0.36 * len(models) + 1.6), layout="constrained")
    longest = 0
    for row, entry in enumerate(models):
        plan = hybrid_layers.layer_positions(entry["config"])
        longest = max(longest, len(plan))
        for index, layer in enumerate(plan):
            ax.add_patch(plt.Rectangle((index, row - 0.4), 0.9, 0.8, lw=0.6, **KIND_STYLES[layer_kind(layer)]))
        windowed = [index + 0.45 for index, layer in enumerate(plan) if layer.window]
        ax.plot(windowed, [row] * len(windowed), ls="none", marker="o", ms=2.5, color="C5")
    ax.set(xlim=(0, longest), ylim=(len(models) - 0.5, -0.5), xlabel="layer", yticks=range(len(models)),
           yticklabels=[entry["name"] for entry in models])  # fmt: skip
    ax.grid(False)
    handles = [plt.Rectangle((0, 0), 1, 1, lw=0.6, **style) for style in KIND_STYLES.values()]
    handles.append(plt.Line2D([], [], ls="none", marker="o", ms=2.5, color="C5"))
    labels = [*KIND_STYLES, "a dot: attends within a sliding window"]
    fig.legend(handles, labels, loc="outside upper center", ncols=4, fontsize="small")
    return fig


# --- query scales -------------------------------------------------------------------------------------------


def scale_curves(positions):
    """{name: scale at each position}: Ministral 3, Mistral Small 4 (both in every layer) and Llama 4 (NoPE layers)."""
    return {
        "Ministral 3 (β 0.1, L 16,384), every layer": position_scales.beta_log_scale(positions, 0.1, 16384),
        "Mistral Small 4 (β 0.1, L 8,192), every layer": position_scales.beta_log_scale(positions, 0.1, 8192),
        "Llama 4 (0.1, 8,192, (p + 1)), NoPE layers only": layer_schemes.llama4_attention_scale(
            positions, floor_scale=8192, attn_scale=0.1
        ),
    }


def scale_figure(positions=None):
    positions = np.unique(np.round(np.logspace(0, 7, 600))) if positions is None else positions
    fig, ax = plt.subplots(figsize=style_figsize(9.0, 3.8), layout="constrained")
    styles = [{"color": "C5", "ls": "-"}, {"color": "C5", "ls": "--"}, {"color": Grey, "ls": ":"}]
    for (name, curve), style in zip(scale_curves(positions).items(), styles, strict=True):
        ax.plot(positions, curve, label=name, lw=1.6, **style)
    ax.set(
        xscale="log",
        xlabel="query position p",
        ylabel="query scale",
        title="q multiplied by a scale that grows like ln p",
    )
    ax.legend(fontsize="small", loc="upper left")
    return fig


# --- time-aligned M-RoPE ------------------------------------------------------------------------------------


AUDIO_TOKENS_PER_SECOND = {"qwen2_5_omni": 25, "qwen3_omni": 13}  # what each audio encoder emits per second


def video_and_audio_ids(model, per_second, *, seconds=6.0, seconds_per_grid=2.0):
    """A clip with its audio: ((seconds, time ids) of its video tokens, (seconds, time ids) of its audio tokens).

    The video is one merged token per frame group (a 2 x 2 patch grid) every seconds_per_grid seconds; the
    audio has the model's own AUDIO_TOKENS_PER_SECOND. The ids are omni_positions.omni_position_ids'.
    """
    frames = int(round(seconds / seconds_per_grid))
    audio_tokens = int(round(seconds * AUDIO_TOKENS_PER_SECOND[model]))
    segment = ("video+audio", frames, 2, 2, seconds_per_grid, audio_tokens)
    ids, kinds = omni_positions.omni_position_ids([segment], model=model, position_id_per_seconds=per_second,
                                                  with_kinds=True)  # fmt: skip
    video_ids, audio_ids = ids[0, kinds == "video"], ids[0, kinds == "audio"]
    video_seconds = np.arange(frames) * seconds_per_grid
    audio_seconds = np.arange(audio_tokens) / AUDIO_TOKENS_PER_SECOND[model]
    return (video_seconds, np.sort(video_ids)), (audio_seconds, np.sort(audio_ids))


def omni_figure(seconds=6.0, seconds_per_grid=2.0):
    """Time ids of a video with its audio against the seconds they stand for: Qwen2.5-Omni, and Qwen3-Omni at
    its checkpoint's 13 ids a second and at the config class's default 25."""
    fig, axes = plt.subplots(1, 3, figsize=style_figsize(11.0, 3.6), layout="constrained", sharey=True)
    settings = (("qwen2_5_omni", 25), ("qwen3_omni", 13), ("qwen3_omni", 25))
    for ax, (model, per_second) in zip(axes, settings, strict=True):
        video, audio = video_and_audio_ids(model, per_second, seconds=seconds, seconds_per_grid=seconds_per_grid)
        ax.plot(*audio, ls="none", marker=".", ms=3, color="C0", label="audio token")
        ax.plot(*video, ls="none", marker="s", ms=6, mfc="none", color="C1", label="video frame group")
        ax.set(title=f"{model}, {per_second} ids / s", xlabel="time in the clip (s)")
    axes[0].set_ylabel("time id")
    axes[0].legend(fontsize="small", loc="upper left")
    return fig


class OmniTimeExplorer(Explorer):
    """Qwen3-Omni's time ids of a clip with its audio as position_id_per_seconds and the frame spacing change.

    The audio encoder emits 13 tokens a second, one id each; a frame group at t seconds gets t times
    position_id_per_seconds. At 13 ids a second (the checkpoint) both clocks agree; at the config class's 25 the
    video runs ahead of the audio. After each update: `self.gap` (time id of the frame group at the last frame's
    second minus that of the audio token at the same second).
    """

    def __init__(self, *, per_second=13, seconds_per_grid=2.0):
        fig, ax = plt.subplots(figsize=style_figsize(8.5, 3.8), layout="constrained")
        (self._audio,) = ax.plot([], [], ls="none", marker=".", ms=3, color="C0", label="audio token (13 a second)")
        (self._video,) = ax.plot([], [], ls="none", marker="s", ms=6, mfc="none", color="C1", label="video frame group")
        ax.set(xlim=(-0.3, 8.3), ylim=(-5, 8 * 50 + 10), xlabel="time in the clip (s)", ylabel="time id",
               title="Qwen3-Omni: an 8-second clip with its audio")  # fmt: skip
        ax.legend(fontsize="small", loc="upper left")
        controls = {
            "per_second": widgets.SelectionSlider(options=[13, 25, 50], value=per_second, description="ids / s"),
            "seconds_per_grid": widgets.SelectionSlider(
                options=[0.5, 1.0, 2.0], value=seconds_per_grid, description="s / frame"
            ),  # fmt: skip
        }
        super().__init__(fig, controls)

    def draw(self, per_second, seconds_per_grid):
        video, audio = video_and_audio_ids("qwen3_omni", per_second, seconds=8.0, seconds_per_grid=seconds_per_grid)
        self._video.set_data(*video)
        self._audio.set_data(*audio)
        last = video[0][-1]
        audio_at_last = audio[1][np.argmin(np.abs(audio[0] - last))]
        self.gap = float(video[1][-1] - audio_at_last)
        self._shown = (per_second, seconds_per_grid, last)

    def animated_artists(self):
        return [self._audio, self._video]

    def finding(self):
        per_second, spacing, last = self._shown
        agree = "the two clocks agree" if abs(self.gap) < 1 else f"the video is {number(self.gap)} ids ahead"
        return f"{per_second} ids a second, a frame group every {spacing:g} s: at {last:g} s {agree}"


# --- the SmolLM2 sweep --------------------------------------------------------------------------------------


SWEEP_STYLES = {  # unchanged RoPE and p-RoPE are RoPE (green, told apart by line style); the wrong base is a bug
    "all 32": {"color": RopeGreen, "ls": "-", "lw": 2.0},
    0.75: {"color": RopeGreen, "ls": "--", "marker": "o", "ms": 3},
    0.5: {"color": RopeGreen, "ls": "-.", "marker": "s", "ms": 3},
    0.25: {"color": RopeGreen, "ls": ":", "marker": "^", "ms": 3},
    "wrong base": {"color": Problem, "ls": "-", "marker": "x", "ms": 4},
}


def sweep_curves(results, context=None):
    """{label: (bucket end positions, bucket means)} for notebook 10's unchanged RoPE, each p-RoPE, the wrong base."""
    context = context or long_context.load_results()
    bucket = results["setup"]["bucket"]
    curves = {"all 32 pairs turn (notebook 10)": context["bucket_loss"]["none"]}
    for p in results["setup"]["fractions"]:
        curves[f"{int(p * 32)} of 32 pairs turn (p = {p})"] = results["runs"][f"prope-{p}"]["bucket_loss"]
    base = results["setup"]["wrong_base"]
    curves[f"base {base:,.0f} read by a 4.x reader"] = results["runs"][f"schema-{base}"]["bucket_loss"]
    return {label: ((np.arange(len(v)) + 1) * bucket, np.asarray(v)) for label, v in curves.items()}


def sweep_figure(results, context=None):
    fig, ax = plt.subplots(figsize=style_figsize(9.5, 4.2), layout="constrained")
    curves = sweep_curves(results, context)
    for (label, (x, y)), style in zip(curves.items(), SWEEP_STYLES.values(), strict=True):
        ax.plot(x, y, label=label, **style)
    ax.axvline(8192, color=COLOURS["reference"], lw=1, ls=":")
    ax.text(8192, ax.get_ylim()[1], " trained context", va="top", fontsize="small", color=COLOURS["reference"])
    ax.set(xlabel="position (end of each block of 512)", ylabel="mean loss (nats)",
           title="SmolLM2-135M on the course's prose, 16,384 tokens")  # fmt: skip
    ax.legend(fontsize="small", loc="upper left")
    return fig


def bug_cost_figure(results):
    """The cost of each porting bug (nats over the first bug_length tokens) at each fraction, and the control."""
    fractions = results["setup"]["fractions"]
    cases = [c for c in partial_sweep.CASES if c != "proportional"]
    fig, ax = plt.subplots(figsize=style_figsize(9.0, 3.8), layout="constrained")
    width = 0.8 / len(fractions)
    hatches = ("", "////", "xxx")
    for k, (p, hatch) in enumerate(zip(fractions, hatches, strict=True)):
        costs = [results["bug_cost"][str(p)][c] for c in cases]
        colours = [Grey if c == "neox" else Problem for c in cases]
        bars = ax.bar(np.arange(len(cases)) + (k - 1) * width, costs, width, color="white", edgecolor=colours,
                      hatch=hatch, lw=1.2, label=f"p = {p} ({int(p * 32)} of 32 pairs turn)")  # fmt: skip
        ax.bar_label(bars, fmt="%.2f", fontsize="x-small", padding=2)
    ax.set_xticks(range(len(cases)), [partial_sweep.CASE_LABELS[c].replace(" where ", "\nwhere ") for c in cases],
                  fontsize="small")  # fmt: skip
    ax.axhline(0, color=COLOURS["reference"], lw=0.8)
    ax.set(ylabel="extra loss (nats)", title=f"SmolLM2-p ported wrong: first {results['setup']['bug_length']:,} tokens")
    ax.set_ylim(0, 1.15 * max(max(results["bug_cost"][str(p)].values()) for p in fractions))
    fig.legend(loc="outside upper center", ncols=3, fontsize="small")
    return fig
