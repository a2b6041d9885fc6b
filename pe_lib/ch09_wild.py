"""Positions in the wild: real models' schemes, a layout bug measured, half precision (used in notebook 09).

Its figures and the model explorer, what a wrong RoPE base does to a score's angles, and what casting a
transformers Llama does to its RoPE frequencies; the graders of its exercises are in ch09_wild_exercises. The table
of models is pe_lib.models_table's, the rounding recipes pe_lib.precision's; this module draws them.
"""

import json
from pathlib import Path

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np

from . import _validate, models_table, precision, relative, rope_scaling
from .explorer import Explorer
from .figures import COLOURS, style_figsize

METHOD_COLOURS = {name: COLOURS[name] for name in ("learned", "t5", "rope", "alibi")}
METHOD_MARKERS = {"learned": "s", "t5": "v", "rope": "o", "alibi": "^"}  # not colour alone

# --- measurements and figures ----------------------------------------------------------------


def _axes(ax, size):
    """The given axes' figure, or a new constrained-layout figure of `size` (inches, base style)."""
    if ax is not None:
        return ax.figure, ax
    return plt.subplots(figsize=style_figsize(*size), layout="constrained")


def scheme_overview(ax=None):
    """Every model of the table on one log axis: the length scales of its scheme (dots) against its lengths.

    Dots: RoPE wavelengths, ALiBi reaches, T5 bucket starts, learned rows (models_table.length_scales), drawn
    over the bars. Bar: the trained context; open diamond: max_position_embeddings where it differs from
    it; cross: the sliding window. The legend sits below the axes, clear of every row.
    """
    entries = models_table.load_position_schemes()
    fig, ax = _axes(ax, (8.0, 6.0))
    for row, entry in enumerate(entries):
        _, lengths = models_table.length_scales(entry)
        ax.plot([entry["trained_context"]] * 2, [row - 0.42, row + 0.42], color="0.55", lw=5, zorder=2,
                solid_capstyle="butt")  # fmt: skip
        ax.scatter(lengths, np.full(len(lengths), row), s=14, color=METHOD_COLOURS[entry["method"]], zorder=4,
                   marker=METHOD_MARKERS[entry["method"]], edgecolors="white", linewidths=0.4)  # fmt: skip
        ceiling = entry["max_position_embeddings"]
        if ceiling is not None and ceiling != entry["trained_context"]:
            ax.scatter([ceiling], [row], s=42, marker="D", facecolors="none", edgecolors="0.1", zorder=5)
        if entry["sliding_window"] is not None:
            ax.scatter([entry["sliding_window"]], [row], s=60, marker="x", color="C3", zorder=5)
    for method, colour in METHOD_COLOURS.items():
        ax.scatter([], [], s=18, color=colour, marker=METHOD_MARKERS[method], label=method)
    ax.plot([], [], color="0.55", lw=5, label="trained context")
    ax.scatter([], [], s=42, marker="D", facecolors="none", edgecolors="0.1", label="max_position_embeddings")
    ax.scatter([], [], s=60, marker="x", color="C3", label="sliding window")
    ax.set_xscale("log")
    ax.set_yticks(range(len(entries)), labels=[entry["name"] for entry in entries])
    ax.set_ylim(len(entries) - 0.5, -0.5)
    ax.set(title="Position schemes against trained and configured lengths",
           xlabel="tokens (log scale)")  # fmt: skip
    fig.legend(loc="outside lower center", ncols=4, fontsize="small")
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


def transformers_inv_freq(casts=("float32", "bfloat16", "float16")):
    """What casting a model does to transformers' RoPE frequency buffer: a tiny random LlamaModel, nothing downloaded.

    A LlamaModel of hidden size 64 (2 heads of 32, base 10^4, random weights) is built, cast (`.to(dtype)`),
    and saved to a temporary folder and loaded back with `from_pretrained(..., dtype=dtype)`. Returns a dict:
    "to" and "loaded" map each of `casts` to (the dtype of the rotary `inv_freq` buffer, that of q_proj's
    weight); "theta" is the buffer as built (float64), "rounded" maps each cast to the buffer's values
    after `.to(dtype)` (float64), and "angles" the angles the cast model's rotary forward turns positions 0, 1000,
    5000 and 20000 by (read back from its float32 cos and sin, wrapped to (-pi, pi], shape (4, pairs) per cast).
    """
    import tempfile

    import torch
    from transformers import LlamaConfig, LlamaModel
    from transformers.utils import logging

    config = LlamaConfig(vocab_size=16, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)  # fmt: skip
    torch.manual_seed(0)
    model = LlamaModel(config)
    result = {"theta": model.rotary_emb.inv_freq.double().numpy(), "to": {}, "loaded": {}, "rounded": {}, "angles": {}}
    bars = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()  # the save and load would print progress bars
    try:
        with tempfile.TemporaryDirectory() as folder:
            model.save_pretrained(folder)
            for name in casts:
                dtype = getattr(torch, name)
                cast = LlamaModel(config).to(dtype)
                loaded = LlamaModel.from_pretrained(folder, dtype=dtype)
                result["to"][name] = (cast.rotary_emb.inv_freq.dtype, cast.layers[0].self_attn.q_proj.weight.dtype)
                result["loaded"][name] = (loaded.rotary_emb.inv_freq.dtype,
                                          loaded.layers[0].self_attn.q_proj.weight.dtype)  # fmt: skip
                result["rounded"][name] = cast.rotary_emb.inv_freq.double().numpy()
                positions = torch.tensor([[0, 1000, 5000, 20000]])
                cos, sin = cast.rotary_emb(torch.zeros(1, dtype=torch.float32), positions)  # float32 x: float32 out
                half = cos.shape[-1] // 2
                result["angles"][name] = torch.atan2(sin[0, :, :half], cos[0, :, :half]).double().numpy()
    finally:
        if bars:
            logging.enable_progress_bar()
    return result


# Notebook 09 reads the measurement from this file: importing transformers' model code (for LlamaModel) costs a
# kernel about as much as the rest of the notebook. tests/test_ch09_wild.py measures again and compares.
INV_FREQ_RECORD = Path(__file__).resolve().parent / "data" / "transformers_inv_freq.json"


def write_inv_freq_record():
    """Measure `transformers_inv_freq()` and write it to INV_FREQ_RECORD, with the transformers and torch versions."""
    import torch
    import transformers

    result = transformers_inv_freq()
    record = {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
              "theta": result["theta"].tolist()}  # fmt: skip
    for how in ("to", "loaded"):
        record[how] = {
            name: [str(dtype).removeprefix("torch.") for dtype in pair] for name, pair in result[how].items()
        }
    for what in ("rounded", "angles"):
        record[what] = {name: values.tolist() for name, values in result[what].items()}
    INV_FREQ_RECORD.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


def recorded_inv_freq():
    """`transformers_inv_freq()` as measured and recorded (INV_FREQ_RECORD): the same dict, plus "versions"."""
    import torch

    record = json.loads(INV_FREQ_RECORD.read_text(encoding="utf-8"))
    result = {
        "versions": {name: record[name] for name in ("transformers", "torch")},
        "theta": np.array(record["theta"]),
    }
    for how in ("to", "loaded"):
        result[how] = {name: tuple(getattr(torch, dtype) for dtype in pair) for name, pair in record[how].items()}
    for what in ("rounded", "angles"):
        result[what] = {name: np.array(values) for name, values in record[what].items()}
    return result


def wrong_base_angles(distances, *, head_dim=128, base=500000.0, used=10000.0):
    """What a RoPE port reading base `used` instead of `base` does to the query-key angles a score sees.

    For each distance: the worst pair's angle error |distance (theta'_i - theta_i)| wrapped to [0, pi], and
    how many of the head_dim / 2 pairs are off by more than 1 rad. Returns (worst, pairs_over_1_rad), arrays.
    """
    distances = _validate.real_array("distances", distances, ndim=1)
    for name, value in (("base", base), ("used", used)):
        if _validate.finite_real(name, value) <= 1:
            raise ValueError(f"{name} must be a RoPE base, a finite number greater than 1, got {value!r}")
    _validate.even_int("head_dim", head_dim)
    delta = rope_scaling.rope_frequencies(head_dim, base=used) - rope_scaling.rope_frequencies(head_dim, base=base)
    error = np.abs(np.outer(distances, delta))
    wrapped = np.abs((error + np.pi) % (2 * np.pi) - np.pi)
    return wrapped.max(axis=1), (wrapped > 1.0).sum(axis=1)


def layout_drift(result, ax=None):
    """The correlation of a converted head's scores with the trained ones, against the distance (log axis)."""
    fig, ax = _axes(ax, (8.0, 4.0))
    shown = np.maximum(result["distances"], 0.5)  # distance 0 drawn at 1/2 on the log axis
    ax.plot(shown, result["permuted"], "o-", color="C2", lw=3, label="half-layout code, W_q, W_k permuted")
    ax.plot(shown, result["as_is"], "s--", color="C3", label="half-layout code, weights as trained")
    ax.axhline(0.0, color="0.3", lw=0.8)
    ax.set_xscale("log")
    ax.set(title="An interleaved checkpoint run by rotate_half code", xlabel="distance query − key (0 drawn at ½)",
           ylabel="correlation with trained scores", ylim=(-0.15, 1.08))  # fmt: skip
    ax.legend(loc="lower left", fontsize="small")
    return fig


def precision_curves(theta, *, distances, query_positions, far_query=100_000.0, ax=None):
    """The error of the query-key angle a RoPE score depends on (wrapped to [0, pi], largest over pairs), two panels.

    Left, against the distance m - n: theta in bfloat16 ("inv_freq") for queries at 2 * max(distances) and
    at `far_query` (the same curve: the error is a steady frequency shift), and the float32 recipe at `far_query`.
    Right, against the query position, keys 1..16 back: angles rounded to bfloat16 / float16, bfloat16 autocast,
    float32, cos/sin cached in bfloat16. theta: the model's frequencies (relative.rope_frequencies).
    """
    distances = _validate.real_array("distances", distances, ndim=1)
    query_positions = _validate.real_array("query_positions", query_positions, ndim=1)
    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=style_figsize(9.6, 4.2), layout="constrained", sharey=True)
    else:
        fig, axes = ax[0].figure, ax
    near = 2 * float(distances.max())
    by_distance = {
        f"θ in bfloat16, query at {near:,.0f}": (precision.score_angle_error(near, near - distances, theta,
                                                                             recipe="inv_freq"), "C0", "-"),
        f"θ in bfloat16, query at {far_query:,.0f}": (precision.score_angle_error(
            far_query, far_query - distances, theta, recipe="inv_freq"), "C5", ":"),
        f"float32, query at {far_query:,.0f}": (precision.score_angle_error(
            far_query, far_query - distances, theta, recipe="float32"), "C2", "-"),
    }  # fmt: skip
    for label, (errors, colour, style) in by_distance.items():
        axes[0].plot(np.maximum(distances, 1.0), np.maximum(errors, 1e-6), color=colour, ls=style, lw=1.4, label=label)
    keys = np.arange(1, 17)
    by_position = {
        "angle rounded to bfloat16": ("angle", "bfloat16", "C3", "-"),
        "bfloat16 autocast (θ, p, product)": ("autocast", "bfloat16", "C1", "--"),
        "angle rounded to float16": ("angle", "float16", "C4", "-."),
        "float32 (θ, p, product)": ("float32", "float32", "C2", "-"),
        "cos/sin cached in bfloat16": ("cache", "bfloat16", "C5", ":"),
    }
    for label, (recipe, dtype, colour, style) in by_position.items():
        errors = precision.worst_score_error(query_positions, keys, theta, recipe=recipe, dtype=dtype)
        axes[1].plot(query_positions, np.maximum(errors, 1e-6), color=colour, ls=style, lw=1.2, label=label)
    for axis, xlabel in zip(axes, ("distance m − n (tokens)", "query position m (keys 1–16 tokens back)"), strict=True):
        axis.axhline(np.pi, color="0.1", ls="--", lw=1.0)
        axis.set(xscale="log", yscale="log", ylim=(1e-6, 6.0), xlabel=xlabel)
        axis.legend(loc="lower right", fontsize="x-small")
    axes[0].text(1.2, np.pi * 1.15, "π: opposite direction", fontsize="x-small")
    axes[0].set(ylabel="query–key angle error, wrapped to [0, π] (rad)", title="A rounded θ: grows with the distance")
    axes[1].set(title="Rounded angles: grow with the position")
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
    """One model of the table at a time: its scheme's length scales (bars, log scale) against its lengths.

    Bars: RoPE wavelengths per turned pair, ALiBi reach per head, T5 bucket starts (encoder, one
    direction), learned rows. The model runs at `run_at` times its trained context; the dashed line is
    the longest distance a score then meets (capped by a sliding window), the solid one the trained
    context. One colour, one meaning, whatever the method: dark bars are longer than the dashed line,
    light ones shorter; the read-out says what that means for this method. After each update:
    `self.entry`, `self.lengths`, `self.run_length`, `self.longest` (the dashed line), `self.beyond`
    (how many bars pass it), `self.readout`.
    """

    RUN_AT = (1, 2, 4, 8)
    BARS = 112  # the most components of any model (BLOOM's heads)
    LONGER, SHORTER = "0.15", "0.72"  # bar colours: longer / shorter than the dashed line

    def __init__(self, *, model="Llama 2 7B", run_at=1):
        names = models_table.model_names()
        model, run_at = _validate.one_of("model", model, names), _validate.one_of("run_at", run_at, self.RUN_AT)
        fig, ax = plt.subplots(figsize=style_figsize(8.0, 4.0), layout="constrained")
        self._ax = ax
        self._bars = ax.bar(np.arange(self.BARS), np.ones(self.BARS), bottom=0.5, zorder=3)
        self._context = ax.axhline(1.0, color="C0", lw=1.6)
        self._run = ax.axhline(1.0, color="C3", lw=1.6, ls="--")
        self._readout = ax.text(0.01, 0.97, " ", transform=ax.transAxes, va="top", fontsize="small",
                                bbox={"facecolor": "white", "edgecolor": "0.7", "alpha": 0.9}, zorder=5)  # fmt: skip
        ax.set_yscale("log")
        controls = {
            "model": widgets.Dropdown(options=names, value=model, description="model"),
            "run_at": widgets.SelectionSlider(
                options=[(f"{r}× trained context", r) for r in self.RUN_AT], value=run_at, description="run at"
            ),
        }
        super().__init__(fig, controls)

    def draw(self, model, run_at):
        self.entry = entry = models_table.scheme(model)
        labels, self.lengths = models_table.length_scales(entry)
        trained, window, count = entry["trained_context"], entry["sliding_window"], len(self.lengths)
        self.run_length = run_at * trained
        self.longest = self.run_length if window is None else min(self.run_length, window)
        passes = self.lengths > self.longest
        self.beyond = int(passes.sum())
        for index, bar in enumerate(self._bars):
            bar.set_visible(index < count)
            if index < count:
                bar.set_height(self.lengths[index] - 0.5)
                bar.set_color(self.LONGER if passes[index] else self.SHORTER)
        self._run.set_ydata([self.longest] * 2)
        self._readout.set_text(self._describe(entry, run_at))
        self.readout = self._readout.get_text()
        ax = self._ax
        self._context.set_ydata([trained] * 2)
        top = max(self.lengths.max(), 8 * trained) * 60  # room above the bars for the read-out
        ax.set_ylim(0.5, top)
        ax.set_xlim(-0.7, count - 0.3)
        ax.set_xticks(np.arange(count)[:: max(1, count // 8)])
        xlabel = labels[0].split()[0] + " (solid: trained context; dashed: longest distance at this run length)"
        ax.set(xlabel=xlabel, ylabel=_LABELS[entry["method"]])
        ax.set_title(f"{model}: {entry['method']}, trained context {trained:,}; dark bars pass the dashed line",
                     fontsize="medium")  # fmt: skip
        return model

    def _describe(self, entry, run_at):
        method, run, longest, lengths = entry["method"], self.run_length, self.longest, self.lengths
        if method == "rope":
            reach = models_table.score_reach(entry)
            never = int((lengths > reach).sum())
            text = f"{self.beyond} of {len(lengths)} pairs never complete a turn within {longest:,} tokens"
            if longest > reach:
                text += f";\nat {run:,} tokens the {never} slower than {reach:,} meet angles never trained"
            elif run > longest:
                text += f";\nthe {entry['sliding_window']:,}-token window keeps every distance trained"
            return text
        if method == "alibi":
            return f"{self.beyond} of {len(lengths)} heads reach all {run:,} tokens;\nthe rest see only nearer ones"
        if method == "t5":
            return f"from distance {int(lengths[-1])} on, one bucket for all;\nat {run:,} tokens most pairs share it"
        usable = entry["rows"] - entry["first_row"]
        if run > usable:
            return f"{usable:,} usable rows: positions {usable:,}..{run - 1:,} have no row\n(an error, or garbage)"
        return f"{entry['rows']:,} rows, from row {entry['first_row']}: {usable:,} positions fit"

    def finding(self):
        """The frame in words: the run length, the longest distance a score meets (window), then the read-out."""
        entry, run = self.entry, self.run_length
        window = f" (its {entry['sliding_window']:,}-token window)" if self.longest < run else ""
        return (
            f"{entry['name']} run at {run:,} tokens, {run // entry['trained_context']}× its trained context of "
            f"{entry['trained_context']:,}: the longest distance a score meets is {self.longest:,}{window}. "
            + self.readout.replace("\n", " ")
        )

    def animated_artists(self):
        return (*self._bars, self._run, self._readout)
