"""Length generalisation and context extension (used in notebook 08).

Its figures (the sweep's results, the angles each RoPE pair meets past the trained length, the
base criterion), its explorer (PI, NTK-aware, YaRN and Llama 3.1 rescaling side by side) and the
graders of its two exercises. The experiment is pe_lib.extrapolation; the rescaling is
pe_lib.rope_frequencies(..., scaling=...).
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from . import _validate, rope_scaling
from .decoder import EXTENSIONS, VARIANTS, extension_scaling
from .explorer import Explorer
from .extrapolation import METRICS, checkpoints
from .figures import COLOURS, freeze_layout, new_axes, style_figsize
from .grading import Feedback, as_numbers, hint_level, run_safely, with_hints
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


# --- exercise 1: the NTK-aware base ----------------------------------------------------------

_NTK_HINTS = (
    "NTK-aware scaling keeps the formula θ_i = base'^(-2i/d) and only changes the base. Which pair must stay "
    "as it is, and which must turn s times slower? Write both conditions for the new base.",
    "Pair 0 has θ_0 = base'^0 = 1 whatever the base. The last pair, i = d/2 - 1, has θ = base^(-(d-2)/d); "
    "ask base'^(-(d-2)/d) = base^(-(d-2)/d) / s and solve for base'.",
    "base' = base * s ** (d / (d - 2)):\n    return base * factor ** (head_dim / (head_dim - 2))",
)

_NTK_CASES = ((1e4, 2.0, 128), (1e4, 8.0, 128), (5e5, 4.0, 64), (1e4, 4.0, 8), (1e6, 16.0, 256), (500.0, 3.0, 16))


def _ntk_mistakes(base, s, d):
    """(symptom, value, own hint tiers) for the usual slips."""
    return [
        (f"you multiplied the base by s = {s:g}: then the last pair turns slower by s^((d-2)/d), not by s",
         base * s, ("Which pair does multiplying the base by s slow down by exactly s? Check the last one.",)),
        ("your exponent is upside down: your last pair turns slower by less than s", base * s ** ((d - 2) / d), ()),
        ("you divided the base by the factor: a smaller base turns every pair faster", base / s ** (d / (d - 2)), ()),
        ("your exponent is d/2, the number of pairs", base * s ** (d / 2), ()),
    ]  # fmt: skip


def check_ntk_base(learner_function, *, hint=0):
    """Grade `learner_function(base, factor, head_dim)` -> the NTK-aware base (a number).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _NTK_HINTS)
    return with_hints(_check_ntk_base(learner_function), _NTK_HINTS, shown)


def _check_ntk_base(learner_function):
    exercise = "NTK base"
    for base, s, d in _NTK_CASES:
        result, failure = run_safely(exercise, learner_function, base, s, d)
        if failure is not None:
            return failure
        number = as_numbers(result)
        if number is None or number.size != 1:
            return Feedback(exercise, False, f"return one number (the new base), got {type(result).__name__}")
        value = float(number.reshape(()))
        expected = base * s ** (d / (d - 2))
        if np.isclose(value, expected, rtol=1e-6):  # float32 answers are right to ~6e-8
            continue
        case = f"(base = {base:g}, s = {s:g}, head_dim = {d})"
        for symptom, candidate, hints in _ntk_mistakes(base, s, d):
            if np.isclose(value, candidate, rtol=1e-6):
                return Feedback(exercise, False, f"{symptom} {case}", hints)
        theta = rope_scaling.rope_frequencies(d, base=value) if np.isfinite(value) and value > 1 else None
        if theta is None:
            return Feedback(exercise, False, f"your base {measured(value)} is not a base above 1 {case}")
        slower = rope_scaling.rope_frequencies(d, base=base)[-1] / theta[-1]
        if np.isclose(slower, 1.0):
            return Feedback(exercise, False, f"with your base the last pair turns as fast as before, not {s:g} times "
                            f"slower {case}")  # fmt: skip
        shown = f"{slower:.6g}" if abs(slower / s - 1) < 0.01 else measured(slower)  # near misses: more digits
        return Feedback(exercise, False, f"with your base the last pair turns {shown} times slower, "
                        f"not {s:g} {case}")  # fmt: skip
    return Feedback(
        exercise, True, "base · s^(d/(d−2)): pair 0 keeps θ = 1 and the last pair turns s times slower (Llama 2, "
        "s = 8: base 1e4 becomes about 8.3e4)",
    )  # fmt: skip


# --- exercise 2: the pairs YaRN leaves untouched --------------------------------------------

_YARN_HINTS = (
    "YaRN's code decides by pair INDEX: it finds the (fractional) index where a pair turns exactly β_fast times "
    "over the original context L, rounds it, and ramps from there. Which pairs sit at or below that index, and "
    "what happens when the index comes out negative?",
    "The correction dimension is d · ln(L / (2π · β_fast)) / (2 ln base). The code takes low = max(floor(it), 0); "
    "the ramp (i − low) / (high − low) is clipped to [0, 1] and a pair with ramp 0 keeps θ_i: every i ≤ low.",
    "    low = head_dim * math.log(original_length / (2 * math.pi * beta_fast)) / (2 * math.log(base))\n"
    "    low = max(math.floor(low), 0)\n"
    "    return np.arange(min(low, head_dim // 2 - 1) + 1)",
)

# Llama 2, Llama 3, a small head, the toy (where the clamp keeps pair 0), a smaller beta_fast, a head
# of 96, a context so long that every pair turns beta_fast times (all untouched), and a boundary: at
# L = 2011 pair 1's index is 1.00008 (kept), at 2010 it would be 0.99987 (an answer with L - 1 fails).
_YARN_CASES = ((128, 1e4, 4096, 32.0), (128, 5e5, 8192, 32.0), (64, 1e4, 2048, 32.0), (8, 1e4, 16, 32.0),
               (128, 1e4, 4096, 8.0), (96, 1e6, 16384, 32.0), (8, 1e4, 10**7, 32.0), (8, 1e4, 2011, 32.0))  # fmt: skip


def _untouched(head_dim, base, length, beta_fast):
    """The reference: the pairs whose frequency YaRN (as transformers computes it) leaves exactly equal."""
    scaling = {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": length,
               "beta_fast": beta_fast, "beta_slow": min(1.0, beta_fast / 2)}  # fmt: skip
    theta = rope_scaling.rope_frequencies(head_dim, base=base)
    return np.flatnonzero(rope_scaling.rope_frequencies(head_dim, base=base, scaling=scaling) == theta)


def _yarn_mistakes(head_dim, base, length, beta_fast):
    theta = rope_scaling.rope_frequencies(head_dim, base=base)
    turns = length * theta / (2 * np.pi)
    at_least = np.flatnonzero(turns >= beta_fast)
    return [
        ("your answer leaves out pair 0, which YaRN's code keeps as it is here", at_least,
         ("The paper's rule (r_i ≥ β_fast) and the code agree for every pair but one. What does the code do when "
          "its correction index comes out below 0?",)),
        ("you counted radians, not turns: r_i is L·θ_i / (2π)", np.flatnonzero(length * theta >= beta_fast),
         ("Is β_fast = 32 a number of radians or of full turns?",)),
        ("these are the pairs that turn LESS than β_fast times: the comparison is the wrong way round",
         np.flatnonzero(turns < beta_fast), ()),
        ("these are the pairs YaRN interpolates fully, not the untouched ones", np.flatnonzero(turns <= 1.0),
         ("Which pairs turn so often that stretching the context changes nothing?",)),
        ("your pair numbers start at 1: NumPy indices, like the pairs, start at 0",
         _untouched(head_dim, base, length, beta_fast) + 1, ()),
        ("you kept one pair too many: the one just past the rounded index is already on the ramp",
         np.arange(min(_untouched(head_dim, base, length, beta_fast)[-1] + 2, len(theta))), ()),
    ]  # fmt: skip


def check_untouched_pairs(learner_function, *, hint=0):
    """Grade `learner_function(head_dim, base, original_length, beta_fast)` -> indices of the pairs YaRN keeps.

    The reference: the pairs whose frequency pe_lib.rope_frequencies(scaling yarn) leaves exactly equal
    (YaRN as its code and transformers compute it). The indices must be ascending.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _YARN_HINTS)
    return with_hints(_check_untouched_pairs(learner_function), _YARN_HINTS, shown)


def _as_indices(result):
    """The learner's answer as a 1-D int64 array, or a Feedback message saying what it is instead."""
    if isinstance(result, (bool, np.bool_)) or np.ndim(result) == 0:
        return None, f"return a 1-D array of pair indices, got a single value ({type(result).__name__})"
    value = as_numbers(result)
    if value is None:
        return None, f"return a 1-D array of pair indices (integers), got {type(result).__name__}"
    if np.asarray(result).dtype == bool:
        return None, "you returned True/False for every pair: return the indices of the pairs"
    if value.ndim != 1 or not np.all(np.isfinite(value)) or not np.all(value == np.round(value)):
        return None, f"return a 1-D array of whole pair indices, got shape {value.shape}"
    return value.astype(np.int64), None


def _check_untouched_pairs(learner_function):
    exercise = "YaRN's untouched pairs"
    for head_dim, base, length, beta_fast in _YARN_CASES:
        result, failure = run_safely(exercise, learner_function, head_dim, base, length, beta_fast)
        if failure is not None:
            return failure
        value, problem = _as_indices(result)
        if problem is not None:
            return Feedback(exercise, False, problem)
        expected = _untouched(head_dim, base, length, beta_fast)
        case = f"(head_dim = {head_dim}, base = {base:g}, L = {length}, β_fast = {beta_fast:g})"
        if np.array_equal(value, expected):
            continue
        if np.array_equal(np.sort(value), expected):
            return Feedback(exercise, False, f"the right pairs, in the wrong order: return them ascending {case}")
        if value.size and (value.max() >= head_dim // 2 or value.min() < 0):
            return Feedback(exercise, False, f"pair indices run from 0 to {head_dim // 2 - 1}, you returned "
                            f"{value.min()}..{value.max()} {case}")  # fmt: skip
        for symptom, candidate, hints in _yarn_mistakes(head_dim, base, length, beta_fast):
            if np.array_equal(np.sort(value), candidate):
                return Feedback(exercise, False, f"{symptom} {case}", hints)
        return Feedback(exercise, False, f"your pairs are not the ones YaRN leaves as they are {case}")
    return Feedback(
        exercise, True, "every pair up to the rounded index where a pair turns β_fast times, and pair 0 always: "
        "Llama 2 (L = 4096) keeps pairs 0–20 as they are; the toy of this notebook (L = 16) keeps pair 0",
    )  # fmt: skip
