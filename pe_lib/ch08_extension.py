"""Length generalisation and context extension (used in notebook 08).

Its figures (the sweep's results, the angles each RoPE pair meets past the trained length, the
base criterion), its explorer (PI, NTK-aware, YaRN and Llama 3.1 rescaling side by side) and the
graders of its two exercises (pe_lib/ch08_extension_exercises.py, importable from here as the notebook
calls them). The experiment is pe_lib.extrapolation; the rescaling is pe_lib.rope_frequencies(..., scaling=...).
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from . import _validate, rope_scaling
from .ch08_extension_exercises import check_ntk_base, check_untouched_pairs  # noqa: F401 (ch08.check_...)
from .decoder import EXTENSIONS, VARIANTS, extension_scaling
from .explorer import Explorer
from .extrapolation import METRICS, checkpoints
from .figures import COLOURS, freeze_layout, new_axes, style_figsize
from .text import measured

METHOD_LABELS = {"none": "unchanged", "linear": "PI", "ntk": "NTK-aware", "yarn": "YaRN", "yarn_paper": "YaRN (paper)",
                 "llama3": "Llama 3.1"}  # fmt: skip
METRIC_LABELS = {
    "in_distribution": "trained length",
    "at_2x": "2× length",
    "at_4x": "4× length",
    "unseen_window": "unseen positions",
}
# One colour, one meaning (figures.COLOURS): a variant keeps its method's colour; the two RoPE bases and the
# two T5 settings share it and differ by line style and marker, as every variant does.
VARIANT_STYLES = {"none": (COLOURS["none"], ":", "s"), "learned": (COLOURS["learned"], "-", "o"),
                  "sinusoidal": (COLOURS["sinusoidal"], "--", "^"), "rope": (COLOURS["rope"], "-.", "D"),
                  "rope_1e6": (COLOURS["rope"], "-", "v"), "alibi": (COLOURS["alibi"], "--", "P"),
                  "t5": (COLOURS["t5"], "-", "X"), "t5_far": (COLOURS["t5"], ":", "x")}  # fmt: skip
# The tests of a sweep, told apart by hatch: the bars keep the colour of their variant.
METRIC_HATCHES = {"in_distribution": "", "at_2x": "//", "at_4x": "xx", "unseen_window": ".."}

# --- measures -------------------------------------------------------------------------------


def angle_ranges(theta, train_len, test_len):
    """The angles each RoPE pair meets: (trained, tested) largest angles (len(theta),) in radians.

    A pair with frequency theta turns by (n - 1) * theta across n positions, so any two tokens in
    a sequence of n differ by an angle in [0, (n - 1) theta]. Where that stays below 2 pi in
    training, the pair never saw the angles between trained and tested.
    """
    theta = np.asarray(theta, dtype=np.float64)
    train_len = _validate.positive_int("train_len", train_len)
    test_len = _validate.positive_int("test_len", test_len)
    return (train_len - 1) * theta, (test_len - 1) * theta


def unseen_pairs(theta, train_len, test_len, *, scaled=None):
    """The pairs that meet angles at test_len they never met within train_len (a bool mask).

    scaled: the frequencies the model runs with at test_len (a context extension); theta by default.
    New means past train_len * theta, one step beyond the last trained angle: position
    interpolation's (s L - 1) theta / s stays just below it, and counts as seen.
    """
    theta = np.asarray(theta, dtype=np.float64)
    trained, _ = angle_ranges(theta, train_len, test_len)
    _, tested = angle_ranges(theta if scaled is None else scaled, train_len, test_len)
    return (trained < 2 * np.pi) & (tested > train_len * theta)


def first_negative_distance(head_dim, base, limit=100_000):
    """Men et al. 2024's criterion: the first distance m with sum_i cos(m theta_i) < 0, or None up to limit.

    Below it, a query and a key that are equal still score above zero at every distance.
    """
    limit = _validate.positive_int("limit", limit)
    theta = rope_scaling.rope_frequencies(head_dim, base=base)
    for start in range(0, limit + 1, 4096):  # in blocks: the answer is usually in the first few
        distances = np.arange(start, min(start + 4096, limit + 1), dtype=np.float64)
        negative = np.flatnonzero(np.cos(np.multiply.outer(distances, theta)).sum(axis=1) < 0)
        if negative.size:
            return start + int(negative[0])
    return None


def cos_sums(head_dim, base, distances):
    """sum_i cos(m theta_i) for each distance m: shape (len(distances),)."""
    theta = rope_scaling.rope_frequencies(head_dim, base=base)
    return np.cos(np.multiply.outer(np.asarray(distances, dtype=np.float64), theta)).sum(axis=1)


# --- figures -------------------------------------------------------------------------------


def sweep_bars(results, task="shift", *, baseline=None, ax=None):
    """Each variant's mean accuracy on the four tests, with the seeds' standard deviation.

    A variant's bars have its method's colour (VARIANT_STYLES); the tests differ by hatch (METRIC_HATCHES).
    baseline: a floor to draw (e.g. extrapolation.majority_baseline), else chance, 1 / vocab_size.
    """
    cells = results["summary"][_validate.choice("task", task, tuple(results["summary"]))]
    variants = [v for v in VARIANTS if v in cells]
    fig, ax = new_axes(ax, figsize=style_figsize(9.0, 3.6))
    width = 0.8 / len(METRICS)
    x = np.arange(len(variants))
    colours = [VARIANT_STYLES[v][0] for v in variants]
    for j, metric in enumerate(METRICS):
        means = [cells[v][metric]["mean"] for v in variants]
        stds = [cells[v][metric]["std"] for v in variants]
        ax.bar(x + (j - 1.5) * width, means, width, yerr=_clipped_errors(means, stds), capsize=2, color=colours,
               hatch=METRIC_HATCHES[metric], edgecolor="white", lw=0.5, label=METRIC_LABELS[metric],
               zorder=3)  # fmt: skip
    if baseline is None:
        ax.axhline(results["chance"], color=COLOURS["reference"], ls=":", lw=1.2, label="chance")
    else:
        ax.axhline(baseline, color=COLOURS["reference"], ls=":", lw=1.2, label="most common answer")
    ax.set_xticks(x, variants)
    ax.set(ylim=(0, 1.05), ylabel="accuracy")
    ax.set_title(f"{task}: {len(results['seeds'])} seeds, mean ± std; bars in the order of the legend", loc="left",
                 fontsize="medium")  # fmt: skip
    handles = [Patch(facecolor=COLOURS["none"], edgecolor="white", hatch=METRIC_HATCHES[m], label=METRIC_LABELS[m])
               for m in METRICS]  # fmt: skip
    handles += [line for line in ax.get_lines() if line.get_label() in ("chance", "most common answer")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return fig


def accuracy_by_position(results, task="shift", variants=VARIANTS, ax=None):
    """Mean accuracy at each position of sequences 4× the trained length; the trained positions shaded."""
    cells = results["summary"][task]
    train_len = results["config"]["train_len"]
    fig, ax = new_axes(ax, figsize=style_figsize(9.0, 3.4))
    ax.axvspan(-0.5, train_len - 0.5, color="0.85", zorder=0)
    ax.text(train_len / 2, 1.02, "trained", ha="center", va="bottom", fontsize="small")
    for variant in variants:
        curve = np.array([np.nan if a is None else a for a in cells[variant]["per_position_mean"]])
        colour, style, marker = VARIANT_STYLES[variant]
        ax.plot(np.arange(len(curve)), curve, label=variant, color=colour, ls=style, marker=marker, ms=4,
                markevery=(variants.index(variant) % 4, 4), lw=1.6)  # fmt: skip
    ax.set(xlim=(-0.5, len(curve) - 0.5), ylim=(0, 1.1), xlabel="position", ylabel="accuracy")
    ax.set_title(f"{task}: accuracy at each position of {len(curve)}-token sequences, mean of "
                 f"{len(results['seeds'])} seeds", loc="left", fontsize="medium")  # fmt: skip
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return fig


def pair_angles(theta, train_len, test_len):
    """One dial per RoPE pair: the arc of angles met in training (RoPE's green) and what test_len adds (red)."""
    trained, tested = angle_ranges(theta, train_len, test_len)
    fig, axes = plt.subplots(
        1, len(theta), figsize=style_figsize(2.3 * len(theta), 2.9), subplot_kw={"projection": "polar"},
        layout="constrained",
    )  # fmt: skip
    for i, (ax, a, b) in enumerate(zip(np.atleast_1d(axes), trained, tested, strict=True)):
        if a < 2 * np.pi:  # a pair that went all the way round in training meets nothing new
            ax.plot(np.linspace(a, min(b, 2 * np.pi), 200), np.full(200, 0.8), color=COLOURS["problem"], lw=5,
                    label="only at test")  # fmt: skip
        ax.plot(np.linspace(0, min(a, 2 * np.pi), 200), np.full(200, 1.0), color=COLOURS["rope"], lw=5,
                label="trained")  # fmt: skip
        ax.set(ylim=(0, 1.1), yticks=[], xticks=np.arange(4) * np.pi / 2, xticklabels=["0", "", "", ""])
        turns = "all" if a >= 2 * np.pi else f"{a / (2 * np.pi):.2g} turn"
        ax.set_title(f"pair {i}: θ = {theta[i]:.3g}\ntrained: {turns}", fontsize="small")
    handles = {h.get_label(): h for ax in np.atleast_1d(axes) for h in ax.lines}
    np.atleast_1d(axes)[-1].legend(handles.values(), handles.keys(), loc="upper left", bbox_to_anchor=(1.05, 1.0),
                                   fontsize="small")  # fmt: skip
    return fig


def turns_per_pair(theta, train_len, test_len, ax=None):
    """Turns each pair makes over train_len and test_len (log scale); pairs that meet new angles marked."""
    trained, tested = angle_ranges(theta, train_len, test_len)
    new = unseen_pairs(theta, train_len, test_len)
    fig, ax = new_axes(ax, figsize=style_figsize(8.0, 3.4))
    pairs = np.arange(len(theta))
    ax.semilogy(pairs, tested / (2 * np.pi), color=COLOURS["rope"], ls="--", lw=1.6, label=f"over {test_len} positions")
    ax.semilogy(pairs, trained / (2 * np.pi), color=COLOURS["rope"], lw=1.6, label=f"over {train_len} (training)")
    ax.axhline(1.0, color=COLOURS["reference"], ls=":", lw=1.0)
    ax.fill_between(pairs, 1e-9, 1e9, where=new, color=COLOURS["problem"], alpha=0.15, lw=0, label="meets new angles")
    ax.set(ylim=(tested.min() / (2 * np.pi) / 3, tested.max() / (2 * np.pi) * 3), xlabel="pair i", ylabel="turns")
    ax.set_title(f"{int(new.sum())} of {len(theta)} pairs meet angles never seen in training", loc="left",
                 fontsize="medium")  # fmt: skip
    ax.legend(loc="lower left", fontsize="small")  # the shaded band of new angles is on the right
    return fig


def _clipped_errors(means, stds):
    """Error bars of mean ± std that stop at the accuracy's own limits, 0 and 1."""
    means, stds = np.asarray(means, dtype=float), np.asarray(stds, dtype=float)
    return np.vstack([np.minimum(stds, means), np.minimum(stds, 1.0 - means)])


_CHECKPOINT_HATCHES, _CHECKPOINT_ALPHAS = ("..", "//", ""), (0.45, 0.7, 1.0)  # zero-shot, then fine-tuned


def extension_bars(results, task="shift", factor=4, ax=None):
    """RoPE at factor × its trained length, rescaled by each method: zero-shot and after fine-tuning steps.

    Every bar is a RoPE model (RoPE's colour); zero-shot and the fine-tuning checkpoints differ by hatch and shade.
    """
    extension = results["summary"][task]["extension"]
    methods = [m for m in EXTENSIONS if m in extension]
    whens = checkpoints(extension[methods[0]][str(factor)])
    fig, ax = new_axes(ax, figsize=style_figsize(8.0, 3.4))
    width = 0.8 / len(whens)
    x = np.arange(len(methods))
    for j, when in enumerate(whens):
        cells = [extension[m][str(factor)][when] for m in methods]
        label = "zero-shot" if when == "zero_shot" else f"after {when.split('_')[1]} steps"
        means, stds = [c["mean"] for c in cells], [c["std"] for c in cells]
        ax.bar(x + (j - (len(whens) - 1) / 2) * width, means, width, yerr=_clipped_errors(means, stds), capsize=2,
               color=COLOURS["rope"], alpha=_CHECKPOINT_ALPHAS[j % 3], hatch=_CHECKPOINT_HATCHES[j % 3],
               edgecolor="white", lw=0.5, label=label, zorder=3)  # fmt: skip
    ax.axhline(results["chance"], color=COLOURS["reference"], ls=":", lw=1.2, label="chance")
    ax.set_xticks(x, [METHOD_LABELS[m] for m in methods])
    ax.set(ylim=(0, 1.05), ylabel=f"accuracy past L at {factor}L")
    ax.set_title(f"{task}: RoPE run at {factor}L, frequencies rescaled (mean ± std of {len(results['seeds'])} seeds)",
                 loc="left", fontsize="medium")  # fmt: skip
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return fig


def base_criterion(head_dim=128, bases=(1e4, 5e5), limit=25_000, ax=None):
    """sum_i cos(m theta_i) against the distance m for each base; where it first turns negative, marked.

    All RoPE (RoPE's colour): the bases differ by line style; the first negative sums are red triangles on zero,
    with their distance written beside them.
    """
    fig, ax = new_axes(ax, figsize=style_figsize(8.0, 3.4))
    distances = np.arange(limit + 1)
    firsts = [first_negative_distance(head_dim, base, limit) for base in bases]
    for k, (base, first) in enumerate(zip(bases, firsts, strict=True)):
        ax.plot(distances, cos_sums(head_dim, base, distances), color=COLOURS["rope"], ls=("-", "--", ":", "-.")[k % 4],
                lw=1.2, label=f"base {base:g}: first < 0 at {first}")  # fmt: skip
    firsts = [first for first in firsts if first is not None]
    ax.axhline(0.0, color=COLOURS["reference"], lw=0.8)
    if firsts:
        ax.plot(firsts, np.zeros(len(firsts)), "v", color=COLOURS["problem"], ms=7, ls="none", zorder=4,
                label="first distance with a sum < 0")  # fmt: skip
    for i, first in enumerate(firsts):  # the distance written at its marker, below and above in turn
        ax.annotate(f"{first:,}", (first, 0), xytext=(0, 9 - 22 * (i % 2 == 0)), textcoords="offset points",
                    ha="center", fontsize="small", zorder=5, bbox={"fc": "w", "ec": "none", "pad": 1})  # fmt: skip
    ax.set_xscale("symlog", linthresh=100)
    ax.set(xlim=(0, limit), xlabel="distance m", ylabel="Σ cos(m θ_i)")
    ax.set_title(f"head size {head_dim}: a similar key out-scores a random one while the sum is ≥ 0",
                 loc="left", fontsize="medium")  # fmt: skip
    ax.legend(loc="lower left", fontsize="small")  # the corner the curves leave empty
    return fig


# --- the explorer ----------------------------------------------------------------------------

METHOD_NAMES = (("PI", "linear"), ("NTK-aware", "ntk"), ("YaRN", "yarn"), ("YaRN (paper)", "yarn_paper"),
                ("Llama 3.1", "llama3"))  # fmt: skip


class ScalingExplorer(Explorer):
    """PI, NTK-aware, YaRN and Llama 3.1 for one model and a stretch factor s.

    Left: each pair's new frequency over its old, θ'_i / θ_i (1: untouched; 1/s: interpolated).
    Right: the turns each pair makes over the stretched context s·L, beside the turns it made over
    L in training; pairs that meet angles they never met in training are marked red and counted in the title.
    After each update: `self.theta`, `self.scaled`, `self.new_angles` (bool per pair); `finding()` says it in words.
    """

    MODELS = (("Llama 2: base 1e4, L 4096", (1e4, 4096)), ("Llama 3: base 5e5, L 8192", (5e5, 8192)))
    FACTORS = (1, 2, 4, 8, 16, 32)
    HEAD_DIM = 128

    def __init__(self, *, method="yarn", factor=8, model=(1e4, 4096)):
        method = _validate.one_of("method", method, [m for _, m in METHOD_NAMES])
        factor = _validate.one_of("factor", factor, self.FACTORS)
        model = _validate.one_of("model", model, [m for _, m in self.MODELS])
        self.pairs = np.arange(self.HEAD_DIM // 2)
        fig, (left, right) = plt.subplots(1, 2, figsize=style_figsize(9.5, 3.9), layout="constrained")
        self._left, self._right = left, right
        (self._ratio,) = left.semilogy(self.pairs, np.ones(len(self.pairs)), color=COLOURS["rope"], lw=2.0, zorder=3)
        self._interpolated = left.axhline(
            1.0, color=COLOURS["reference"], ls="--", lw=1.0, zorder=3
        )  # over the spines, as when blitted
        left.axhline(1.0, color=COLOURS["reference"], lw=0.8)
        left.set(ylim=(1 / 48, 1.6), xlabel="pair i", ylabel="θ′ / θ")
        self._left_title = left.set_title(" ", loc="left", fontsize="medium")
        (self._trained,) = right.semilogy(
            self.pairs, np.ones(len(self.pairs)), color=COLOURS["rope"], lw=1.6, label="over L", zorder=3
        )
        (self._stretched,) = right.semilogy(self.pairs, np.ones(len(self.pairs)), color=COLOURS["rope"], ls="--",
                                            lw=1.6, label="over s·L, rescaled", zorder=3)  # fmt: skip
        (self._new,) = right.semilogy(self.pairs, np.full(len(self.pairs), np.nan), "o", color=COLOURS["problem"],
                                      ms=3.5, label="new angles", zorder=4)  # fmt: skip
        right.axhline(1.0, color=COLOURS["reference"], ls=":", lw=1.0)
        right.set(ylim=(1e-5, 1e5), xlabel="pair i", ylabel="turns")
        right.legend(loc="upper right", fontsize="small")
        self._right_title = right.set_title(" ", loc="left", fontsize="medium")
        controls = {
            "method": widgets.ToggleButtons(options=METHOD_NAMES, value=method, description="method"),
            "factor": widgets.SelectionSlider(options=self.FACTORS, value=factor, description="factor s"),
            "model": widgets.ToggleButtons(options=self.MODELS, value=model, description="model"),
        }
        super().__init__(freeze_layout(fig), controls)
        self.widget.children[0].layout.flex_flow = "row wrap"

    def draw(self, method, factor, model):
        base, original = model
        self.theta = rope_scaling.rope_frequencies(self.HEAD_DIM, base=base)
        if factor == 1:
            self.scaled = self.theta.copy()
        else:
            scaling = extension_scaling(method, factor, original)
            self.scaled = rope_scaling.rope_frequencies(self.HEAD_DIM, base=base, scaling=scaling)
        trained = (original - 1) * self.theta
        stretched = (factor * original - 1) * self.scaled
        self.new_angles = unseen_pairs(self.theta, original, factor * original, scaled=self.scaled)
        self._ratio.set_ydata(self.scaled / self.theta)
        self._interpolated.set_ydata([1 / factor, 1 / factor])
        self._trained.set_ydata(trained / (2 * np.pi))
        self._stretched.set_ydata(stretched / (2 * np.pi))
        self._new.set_ydata(np.where(self.new_angles, stretched / (2 * np.pi), np.nan))
        untouched = int(np.sum(self.scaled == self.theta))
        self._left_title.set_text(f"untouched: {untouched} of {len(self.pairs)} pairs")
        self._right_title.set_text(f"new angles in {int(self.new_angles.sum())} of {len(self.pairs)} pairs")
        return None

    def animated_artists(self):
        return (self._ratio, self._interpolated, self._trained, self._stretched, self._new, self._left_title,
                self._right_title)  # fmt: skip

    def finding(self):
        new, ratio, n = np.flatnonzero(self.new_angles), self.scaled / self.theta, len(self.pairs)
        met = f"{new.size} of {n} pairs ({new.min()}-{new.max()}) meet" if new.size else "no pair meets"
        return (
            f"{int(np.sum(self.scaled == self.theta))} of {n} pairs keep their frequency; θ′/θ is {measured(ratio[0])} "
            f"for the fastest pair, {measured(ratio[-1])} for the slowest; {met} angles never met over L"
        )
