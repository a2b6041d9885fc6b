"""Positions in the wild: real models' schemes, a layout bug measured, half precision (used in notebook 09).

Its figures, the model explorer and the graders of its two exercises. The table of models is
pe_lib.models_table's, the rounding recipes pe_lib.precision's; this module measures and draws them.
"""

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, models_table, precision, relative
from .explorer import Explorer
from .figures import style_figsize
from .grading import Feedback, as_numbers, hint_level, run_safely, tolerance_for, with_hints

METHOD_COLOURS = {"learned": "C2", "t5": "C4", "rope": "C0", "alibi": "C1"}

# --- measurements and figures ----------------------------------------------------------------


def _axes(ax, size):
    """The given axes' figure, or a new constrained-layout figure of `size` (inches, base style)."""
    if ax is not None:
        return ax.figure, ax
    return plt.subplots(figsize=style_figsize(*size), layout="constrained")


def scheme_overview(ax=None):
    """Every model of the table on one log axis: the length scales of its scheme (dots) and its context (bar).

    Dots: RoPE wavelengths, ALiBi reaches, T5 bucket starts, learned rows (models_table.length_scales).
    """
    entries = models_table.load_position_schemes()
    fig, ax = _axes(ax, (8.0, 5.6))
    for row, entry in enumerate(entries):
        _, lengths = models_table.length_scales(entry)
        ax.scatter(lengths, np.full(len(lengths), row), s=9, color=METHOD_COLOURS[entry["method"]], zorder=3)
        ax.plot([entry["context"]] * 2, [row - 0.4, row + 0.4], color="0.1", lw=2.4, zorder=4)
    for method, colour in METHOD_COLOURS.items():
        ax.scatter([], [], s=16, color=colour, label=method)
    ax.plot([], [], color="0.1", lw=2.4, label="context")
    ax.set_xscale("log")
    ax.set_yticks(range(len(entries)), labels=[entry["name"] for entry in entries])
    ax.invert_yaxis()
    ax.set(title="Each model's position scheme against its context", xlabel="tokens (log scale)")
    ax.legend(loc="lower right", fontsize="small")
    return fig


def layout_forensics(distances, *, head_dim=128, num_heads=2, d_model=256, samples=2000, base=10000.0, seed=0):
    """A random 'checkpoint' trained with interleaved RoPE, scored by half-layout code, with and without the fix.

    W_q, W_k (num_heads * head_dim, d_model) ~ N(0, 1/d_model); `samples` token vectors, each the query at
    position 5000 and the key at 5000 - distance. Returns a dict of arrays over `distances`: "as_is"
    and "permuted" hold the correlation of that run's scores with the interleaved (trained) ones,
    "error_as_is" the mean |score difference| over the mean |trained score|, "worst_permuted" the
    largest |difference| after permute_for_half_layout.
    """
    distances = _validate.real_array("distances", distances, ndim=1)
    rng = np.random.default_rng(seed)
    w_q, w_k = rng.normal(size=(2, num_heads * head_dim, d_model)) / np.sqrt(d_model)
    x = rng.normal(size=(samples, d_model))
    fixed_q, fixed_k = (models_table.permute_for_half_layout(w, num_heads) for w in (w_q, w_k))

    def scores(wq, wk, layout, distance):
        q, k = ((x @ w.T).reshape(samples, num_heads, head_dim).transpose(1, 0, 2) for w in (wq, wk))
        q = relative.apply_rope(q, np.full(samples, 5000.0), base=base, layout=layout)
        k = relative.apply_rope(k, np.full(samples, 5000.0 - distance), base=base, layout=layout)
        return ((q * k).sum(axis=-1) / np.sqrt(head_dim)).ravel()

    result = {"distances": distances, "as_is": [], "permuted": [], "error_as_is": [], "worst_permuted": []}
    for distance in distances:
        trained = scores(w_q, w_k, "interleaved", distance)
        as_is, permuted = scores(w_q, w_k, "half", distance), scores(fixed_q, fixed_k, "half", distance)
        result["as_is"].append(np.corrcoef(trained, as_is)[0, 1])
        result["permuted"].append(np.corrcoef(trained, permuted)[0, 1])
        result["error_as_is"].append(np.abs(as_is - trained).mean() / np.abs(trained).mean())
        result["worst_permuted"].append(np.abs(permuted - trained).max())
    return {key: np.asarray(value) for key, value in result.items()}


def layout_drift(result, ax=None):
    """The correlation of a converted head's scores with the trained ones, against the distance (log axis)."""
    fig, ax = _axes(ax, (8.0, 4.0))
    shown = np.maximum(result["distances"], 0.5)  # distance 0 drawn at 1/2 on the log axis
    ax.plot(shown, result["permuted"], "o-", color="C2", lw=3, label="half-layout code, W_q, W_k permuted")
    ax.plot(shown, result["as_is"], "o-", color="C3", label="half-layout code, weights as trained")
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set(title="An interleaved checkpoint run by rotate_half code", xlabel="distance query − key (0 drawn at ½)",
           ylabel="correlation with trained scores", ylim=(-0.15, 1.08))  # fmt: skip
    ax.legend(loc="lower left", fontsize="small")
    return fig


def precision_curves(positions, head_dim=128, *, base=10000.0, ax=None):
    """RoPE angle error (largest over pairs) against the position for the half-precision recipes, log-log, pi marked."""
    positions = _validate.real_array("positions", positions, ndim=1)
    curves = {
        "angle in bfloat16": precision.rope_angle_error(positions, head_dim, base=base, recipe="angle"),
        "inv_freq in bfloat16": precision.rope_angle_error(positions, head_dim, base=base, recipe="inv_freq"),
        # float16 overflows past 65,504: its curve ends there
        "angle in float16": precision.rope_angle_error(positions, head_dim, base=base, dtype="float16"),
        "float32 recipe": precision.rope_angle_error(positions, head_dim, base=base, recipe="float32"),
        "cos/sin cached in bfloat16": precision.cached_table_error(positions, head_dim, base=base),
    }
    fig, ax = _axes(ax, (8.0, 4.4))
    for label, errors in curves.items():
        ax.plot(positions, np.maximum(errors, 1e-9), label=label, lw=1.2)
    ax.axhline(np.pi, color="0.1", ls="--", lw=1.2, label="π: the pair points the opposite way")
    ax.set(xscale="log", yscale="log", ylim=(1e-5, 2e3), title=f"RoPE angle error, head_dim {head_dim}, base {base:g}",
           xlabel="position", ylabel="largest angle error (radians)")  # fmt: skip
    ax.legend(loc="upper left", fontsize="x-small", ncols=2)
    return fig


def learned_ends(table, ax=None):
    """A learned table's row norms and each row's cosine with the next one, against the position."""
    table = np.asarray(table, dtype=np.float64)
    norms = np.linalg.norm(table, axis=1)
    unit = table / norms[:, None]
    neighbours = (unit[:-1] * unit[1:]).sum(axis=1)
    fig, ax = _axes(ax, (8.0, 4.0))
    ax.plot(norms, color="C0", label="row norm")
    ax.plot(np.arange(len(neighbours)) + 0.5, neighbours, color="C1", label="cosine with the next row")
    ax.set(title=f"A learned table of {len(table)} rows: the first and last rows stand out", xlabel="position",
           ylabel="norm / cosine")  # fmt: skip
    ax.legend(loc="upper center", fontsize="small")
    return fig


# --- the explorer ------------------------------------------------------------------------------

_LABELS = {
    "rope": "wavelength 2π/θ_i (tokens)",
    "alibi": f"reach: bias −{models_table.ALIBI_REACH:g} at (tokens)",
    "t5": "first distance of the bucket",
    "learned": "positions",
}


class ModelExplorer(Explorer):
    """One model of the table at a time: its scheme's length scales (bars, log scale) against its context.

    Bars: RoPE wavelengths per turned pair, ALiBi reach per head, T5 bucket starts (one direction),
    learned rows. Orange bars are longer than the length the model is run at (`run_at` times its
    context, dashed): RoPE pairs that never complete a turn there, ALiBi heads that still see every
    token, T5 buckets that never come up, a table that is long enough. After each update:
    `self.entry`, `self.lengths`, `self.run_length`, `self.beyond` (how many bars pass it), `self.readout`.
    """

    RUN_AT = (1, 2, 4, 8)
    BARS = 112  # the most components of any model (BLOOM's heads)

    def __init__(self, *, model="Llama 2 7B", run_at=1):
        names = models_table.model_names()
        model, run_at = _validate.one_of("model", model, names), _validate.one_of("run_at", run_at, self.RUN_AT)
        fig, ax = plt.subplots(figsize=style_figsize(8.0, 4.0), layout="constrained")
        self._ax = ax
        self._bars = ax.bar(np.arange(self.BARS), np.ones(self.BARS), bottom=0.5, zorder=3)
        self._context = ax.axhline(1.0, color="0.1", lw=1.6)
        self._run = ax.axhline(1.0, color="C3", lw=1.6, ls="--")
        self._readout = ax.text(0.01, 0.97, " ", transform=ax.transAxes, va="top", fontsize="small",
                                bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9}, zorder=5)  # fmt: skip
        ax.set_yscale("log")
        controls = {
            "model": widgets.Dropdown(options=names, value=model, description="model"),
            "run_at": widgets.SelectionSlider(
                options=[(f"{r}× context", r) for r in self.RUN_AT], value=run_at, description="run at"
            ),
        }
        super().__init__(fig, controls)

    def draw(self, model, run_at):
        self.entry = entry = models_table.scheme(model)
        labels, self.lengths = models_table.length_scales(entry)
        context, count = entry["context"], len(self.lengths)
        self.run_length = run_at * context
        passes = self.lengths > self.run_length
        self.beyond = int(passes.sum())
        for index, bar in enumerate(self._bars):
            bar.set_visible(index < count)
            if index < count:
                bar.set_height(self.lengths[index] - 0.5)
                bar.set_color("C1" if passes[index] else "C0")
        self._run.set_ydata([self.run_length] * 2)
        self._readout.set_text(self._describe(entry, run_at))
        self.readout = self._readout.get_text()
        ax = self._ax
        self._context.set_ydata([context] * 2)
        top = max(self.lengths.max(), 8 * context) * 60  # room above the bars for the read-out
        ax.set_ylim(0.5, top)
        ax.set_xlim(-0.7, count - 0.3)
        ax.set_xticks(np.arange(count)[:: max(1, count // 8)])
        xlabel = labels[0].split()[0] + " (solid line: context, dashed: run length)"
        ax.set(xlabel=xlabel, ylabel=_LABELS[entry["method"]])
        ax.set_title(f"{model}: {entry['method']}, context {context:,}", fontsize="medium")
        return model

    def _describe(self, entry, run_at):
        method, run, lengths = entry["method"], self.run_length, self.lengths
        if method == "rope":
            never = int((lengths > entry["context"]).sum())
            text = f"{never} of {len(lengths)} pairs never turn once within the context"
            if run_at > 1:
                text += f";\nat {run:,} tokens those {never} meet angles never trained"
            return text
        if method == "alibi":
            return f"{self.beyond} of {len(lengths)} heads reach all {run:,} tokens;\nthe rest see only nearer ones"
        if method == "t5":
            return f"from distance {int(lengths[-1])} on, one bucket for all;\nat {run:,} tokens most pairs share it"
        usable = entry["rows"] - entry["first_row"]
        if run > usable:
            return f"{usable:,} usable rows: positions {usable:,}..{run - 1:,} have no row\n(an error, or garbage)"
        return f"{entry['rows']:,} rows, from row {entry['first_row']}: {usable:,} positions fit"

    def animated_artists(self):
        return (*self._bars, self._run, self._readout)


# --- exercise 2: find the bug in a RoPE port ------------------------------------------------------

_ROPE_HINTS = (
    "A RoPE bug need not break the relative property: with this one, scores still depend only on the gap. So "
    "compare numbers, not properties: what is the slowest pair's wavelength 2π/θ_i in buggy_rope for a head of "
    "128 and base 10^4, and what should it be (the paper: θ_i = base^(-2i/d))?",
    "Read the exponent. i runs over the d/2 pairs; the paper's exponent is -2i/d. The pairing (2i, 2i + 1), the "
    "signs and the positions in buggy_rope are right.",
    "The fixed line, the rest as in buggy_rope:\n"
    "    d = x.shape[-1]\n"
    "    inv_freq = 1.0 / base ** (2 * np.arange(d // 2) / d)\n"
    "    angles = np.outer(positions, inv_freq)\n"
    "    cos, sin = np.cos(angles), np.sin(angles)\n"
    "    even, odd = x[:, 0::2], x[:, 1::2]\n"
    "    out = np.empty_like(x)\n"
    "    out[:, 0::2] = even * cos - odd * sin\n"
    "    out[:, 1::2] = even * sin + odd * cos\n"
    "    return out",
)


def _interleaved(x, angles, sign=1.0):
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    even, odd = x[:, 0::2], x[:, 1::2]
    cos, sin = np.cos(angles), sign * np.sin(angles)
    out[:, 0::2], out[:, 1::2] = even * cos - odd * sin, even * sin + odd * cos
    return out


def _rope_cases():
    rng = np.random.default_rng(9)
    return [
        (rng.normal(size=(5, 8)), np.array([0, 1, 2, 7, 30]), 10000.0),
        (rng.normal(size=(6, 128)), np.array([0, 3, 100, 999, 4095, 60000]), 10000.0),
        (rng.normal(size=(4, 6)), np.array([5, 0, 12, 2]), 500000.0),
        (rng.normal(size=(3, 64)).astype(np.float32), np.array([1, 64, 2048]), 10000.0),
    ]


def _rope_mistakes(x, positions, base):
    d = x.shape[-1]
    pairs = np.arange(d // 2)
    theta = base ** (-2 * pairs / d)
    p = positions.astype(np.float64)
    # fmt: off
    return [
        ("your output equals buggy_rope's: the bug is still there", _interleaved(x, np.outer(p, base ** (-pairs / d))),
         ()),
        ("your rows turn as if they sat one position further on: positions are counted from 0",
         _interleaved(x, np.outer(p + 1, theta)), ("Which position does the first token of a sequence have?",)),
        ("your pairs turn the wrong way (by −p·θ_i)", _interleaved(x, np.outer(p, theta), sign=-1.0),
         ("In a cos − b sin, a sin + b cos, which way does the pair turn for a positive angle?",)),
        ("your frequencies grow with the pair index: θ_i must fall from 1 towards 1/base",
         _interleaved(x, np.outer(p, base ** (2 * pairs / d))), ("Is base^(+2i/d) a frequency that falls?",)),
        ("you ignored `base`: your answer is the one for base 10000",
         _interleaved(x, np.outer(p, 10000.0 ** (-2 * pairs / d))), ("Does your function pass `base` on?",)),
        ("you turned pairs (i, i + d/2), the half layout: this checkpoint, like buggy_rope, pairs (2i, 2i + 1)",
         relative.apply_rope(x.astype(np.float64), p, base=base, layout="half"),
         ("Which features does buggy_rope treat as one pair?",)),
        ("your output is the input unchanged: no pair was turned", x, ()),
    ]
    # fmt: on


def check_rope_fix(learner_function, *, hint=0):
    """Grade `learner_function(x, positions, base)` -> x (n, d) turned by interleaved RoPE, buggy_rope fixed.

    The reference is pe_lib.apply_rope(x, positions, base=base, layout="interleaved").
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _ROPE_HINTS)
    return with_hints(_check_rope_fix(learner_function), _ROPE_HINTS, shown)


def _check_rope_fix(learner_function):
    exercise = "RoPE port fixed"
    for x, positions, base in _rope_cases():
        result, failure = run_safely(exercise, learner_function, x, positions, base)
        if failure is not None:
            return failure
        value = as_numbers(result)
        if value is None or value.shape != x.shape:
            got = type(result).__name__ if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return an array of shape {x.shape} (x turned), got {got}")
        expected = relative.apply_rope(x.astype(np.float64), positions, base=base, layout="interleaved")
        tolerance = max(tolerance_for(result, 1e-6), 1e-5 if x.dtype == np.float32 else 0.0)
        if np.allclose(value, expected, rtol=tolerance, atol=tolerance):
            continue
        case = f"x of shape {x.shape}, positions {positions.tolist()}, base {base:g}"
        for symptom, candidate, hints in _rope_mistakes(x, positions, base):
            if np.allclose(value, candidate, rtol=tolerance, atol=tolerance):
                return Feedback(exercise, False, f"{symptom} ({case})", hints)
        rows = np.abs(value - expected).max(axis=1)
        worst = float(rows.max())
        if worst < 0.05 and rows[0] < tolerance:  # right at the first positions, off at the far ones
            far = int(positions[int(rows.argmax())])
            return Feedback(
                exercise,
                False,
                f"right at small positions, off by up to {worst:.1g} at position {far:,} ({case}): "
                "are your angles formed in float32 or half precision?",
                ("How many significant digits does a float32 angle of about 60,000 radians keep?",),
            )
        return Feedback(exercise, False, f"your rotation differs from RoPE's by up to {worst:.3g} ({case})")
    return Feedback(
        exercise,
        True,
        "θ_i = base^(−2i/d) for the pairs (2i, 2i + 1): equal to pe_lib.apply_rope(..., layout='interleaved'), "
        "also at position 60,000 and base 5·10^5",
    )


# --- exercise 1: where positions collide in bfloat16 ---------------------------------------------

_BF16_HINTS = (
    "bfloat16 keeps 8 significant bits (7 stored, one implicit). Between 256 and 512, how far apart are two "
    "neighbouring numbers it can store? Between 512 and 1024?",
    "For p >= 256 the spacing is 2^(bit_length(p) − 8). Round p to the nearest multiple of it; a tie (p exactly "
    "halfway) goes to the multiple whose quotient is even (round half to even, as the hardware does).",
    "In integers:\n"
    "    if p < 256:\n"
    "        return p\n"
    "    spacing = 2 ** (p.bit_length() - 8)\n"
    "    q, r = divmod(p, spacing)\n"
    "    if 2 * r > spacing or (2 * r == spacing and q % 2 == 1):\n"
    "        q += 1\n"
    "    return q * spacing",
)

BF16_CASES = (0, 1, 100, 255, 256, 257, 258, 259, 260, 383, 385, 511, 513, 514, 515, 518, 1001, 1002, 1003, 1004,
              1005, 1028, 1029, 1036, 2047, 2049, 4095, 4100, 65535, 100000, 123457)  # fmt: skip


def _rounded(p, bits, mode):
    """p rounded to `bits` significant bits: "even" (ties to even), "up" (ties away from zero) or "down" (floor)."""
    if p < 2**bits:
        return p
    spacing = 2 ** (p.bit_length() - bits)
    q, r = divmod(p, spacing)
    if mode == "up":
        q += 2 * r >= spacing
    elif mode == "even":
        q += 2 * r > spacing or (2 * r == spacing and q % 2 == 1)
    return q * spacing


# fmt: off
_BF16_SLIPS = (  # (symptom, bits, mode, own first tier)
    ("you cut the low bits off (rounding down): bfloat16 rounds to the NEAREST number it can store", 8, "down",
     ("Where does 1,003 go in bfloat16: 1,000 or 1,004?",)),
    ("your ties go up (round half up): the hardware sends a tie to the even neighbour", 8, "up",
     ("257 is exactly halfway between 256 and 258: which of the two has an even last bit?",)),
    ("your numbers are float16's (11 significant bits, exact up to 2,048), not bfloat16's", 11, "even",
     ("How many significant bits has bfloat16, and how many float16?",)),
    ("your spacing is twice bfloat16's: you kept 7 significant bits (exact up to 128), not 8", 7, "even",
     ("Is 200 exact in bfloat16? Count the implicit leading bit.",)),
    ("your spacing is half bfloat16's: you kept 9 significant bits (exact up to 512)", 9, "even",
     ("Is 257 exact in bfloat16?",)),
)
# fmt: on


def check_bf16_position(learner_function, *, hint=0):
    """Grade `learner_function(p)` -> the number bfloat16 stores for the integer position p (>= 0).

    The reference is torch's rounding (pe_lib.precision.round_to(p, "bfloat16")).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _BF16_HINTS)
    return with_hints(_check_bf16_position(learner_function), _BF16_HINTS, shown)


def _check_bf16_position(learner_function):
    exercise = "bfloat16 positions"
    answers = []
    for p in BF16_CASES:
        result, failure = run_safely(exercise, learner_function, p)
        if failure is not None:
            return failure
        value = as_numbers(result)
        if value is None or value.size != 1:
            got = type(result).__name__ if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return one number for one position, got {got}")
        answers.append(float(value.reshape(())))
    expected = precision.round_to(BF16_CASES, "bfloat16").tolist()
    if answers == expected:
        done = "8 significant bits: exact up to 256, then steps of 2, 4, 8, ... (ties to even)"
        return Feedback(exercise, True, done)
    if answers == [float(p) for p in BF16_CASES]:
        return Feedback(exercise, False, "you return every position unchanged: bfloat16 cannot store 257")
    for symptom, bits, mode, hints in _BF16_SLIPS:
        if answers == [float(_rounded(p, bits, mode)) for p in BF16_CASES]:
            return Feedback(exercise, False, symptom, hints)
    index = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    return Feedback(exercise, False, f"position {BF16_CASES[index]:,}: bfloat16 stores {expected[index]:,.0f}, "
                                     f"you return {answers[index]:,.6g}")  # fmt: skip
