"""Context extension on a real model, read from the committed sweeps (notebook 10, section 7).

    prices = ch10_context.extension_prices(sweep)           # {method: {what: loss}}: the section's numbers
    print(ch10_context.prices_table(prices))
    rows = ch10_context.toy_vs_model(sweep, toy)            # notebook 08's toy beside SmolLM2, claim by claim
    print(ch10_context.comparison_text(rows))
    drift = ch10_context.dynamic_cache_drift(16383, [100, 4000], sweep)   # dynamic NTK: cached keys vs one forward

sweep is pe_lib.long_context.load_results() (SmolLM2-135M, 16,384 tokens of the course's prose, factor 2,
trained context L = 8,192); toy is pe_lib.extrapolation.load_results() (notebook 08: a 2-layer decoder trained
on L = 16 tokens, five seeds, tested at 2L and 4L with RoPE rescaled by factor 2 and 4). Each comparison row
names the stretch of both sides (where past L each is measured, and the factor): the toy's unchanged RoPE is
still exact at 2L, so whether a method *helps* can only be read at 4L there, against 1.5L-2L on the model.
"""

import dataclasses

import numpy as np

from . import _validate, long_context
from .rope_scaling import rope_frequencies

TOY_TASKS = ("shift", "local_max")
FAR = (12288, 16384)  # the model's far window: the last quarter of the 16,384-token forward, 1.5L to 2L


def _window(sweep, method, start, stop):
    """Mean loss of `method` over positions start..stop (bucket means weighted by their predictions)."""
    bucket = sweep["setup"]["bucket"]
    means = np.asarray(sweep["bucket_loss"][method][start // bucket : stop // bucket])
    counts = np.full(len(means), float(bucket))
    if start == 0:
        counts[0] -= 1  # token 0 is never predicted
    return float(np.average(means, weights=counts))


def extension_prices(sweep):
    """{method: {"inside": the first 4,096 tokens, "inside_cost": that minus none's, "far": 12,288-16,383,
    "first_half": an 8,192-token forward, "first_half_long": the first 8,192 positions of the 16,384-token
    forward}}: mean losses in nats per token (the two differ only for dynamic NTK, whose frequencies depend on
    the length of the whole sequence)."""
    prices = {}
    for method in long_context.METHODS:
        windows = sweep["windows"][method]
        prices[method] = {
            "inside": windows["4096"]["mean"],
            "inside_cost": windows["4096"]["mean"] - sweep["windows"]["none"]["4096"]["mean"],
            "far": windows["16384"]["last_quarter"],
            "first_half": windows["8192"]["mean"],
            "first_half_long": _window(sweep, method, 0, 8192),
        }
    return prices


def prices_table(prices):
    """extension_prices as a text table, one column per method."""
    labels = [long_context.METHOD_LABELS[m] for m in prices]
    rows = (
        ("first 4,096 tokens: cost against none", "inside_cost", "{:+.3f}"),
        ("positions 12,288-16,383 (1.5L-2L)", "far", "{:.2f}"),
        ("first 8,192 positions: 8,192-token forward", "first_half", "{:.3f}"),
        ("first 8,192 positions: 16,384-token forward", "first_half_long", "{:.3f}"),
    )
    width = max(len(row[0]) for row in rows)
    lines = [" " * width + "".join(f"{label:>13}" for label in labels)]
    for title, key, form in rows:
        lines.append(f"{title:<{width}}" + "".join(f"{form.format(prices[m][key]):>13}" for m in prices))
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Row:
    """One claim asked of the toy and of the model: the answer of each, from the numbers in its evidence."""

    claim: str
    toy_says: bool
    model_says: bool
    toy_evidence: str  # the stretch (where past L, which factor) and the accuracies
    model_evidence: str

    @property
    def same(self):
        return self.toy_says == self.model_says


def _toy_means(toy, method, factor):
    """Mean zero-shot accuracy past L over the seeds, per task (shift, local_max)."""
    summary = toy["summary"]
    return [summary[task]["extension"][method][str(factor)]["zero_shot"]["mean"] for task in TOY_TASKS]


def toy_seed_differences(toy, first, second, factor):
    """{task: [accuracy of `first` - accuracy of `second`, per seed]}: the toy's paired differences at factor x L."""
    out = {}
    for task in TOY_TASKS:
        runs = sorted(
            (r for r in toy["runs"] if r["task"] == task and r["positional"] == "rope" and "extension" in r),
            key=lambda r: r["seed"],
        )
        out[task] = [r["extension"][first][str(factor)]["zero_shot"] - r["extension"][second][str(factor)]["zero_shot"]
                     for r in runs]  # fmt: skip
    return out


def model_block_differences(sweep, first, second, start=FAR[0], stop=FAR[1]):
    """Loss of `second` - loss of `first` per block of the sweep over positions start..stop (> 0: `first` lower)."""
    bucket = sweep["setup"]["bucket"]
    blocks = slice(start // bucket, stop // bucket)
    return (np.asarray(sweep["bucket_loss"][second][blocks]) - np.asarray(sweep["bucket_loss"][first][blocks])).tolist()


def _pair(values):
    return " / ".join(f"{v:.2f}" for v in values)


def _signed(values):
    return " ".join(f"{v:+.2f}" for v in values)


def toy_vs_model(sweep, toy):
    """[Row]: notebook 08's toy and SmolLM2-135M asked the same questions, each answer with its stretch."""
    far = {m: sweep["windows"][m]["16384"]["last_quarter"] for m in long_context.METHODS}
    near = {m: sweep["windows"][m]["4096"]["mean"] for m in long_context.METHODS}
    before = sweep["windows"]["none"]["8192"]["last_quarter"]  # 0.75L-L
    far_at = "at 1.5L-2L (12,288-16,383), factor 2"
    none_2, none_4 = _toy_means(toy, "none", 2), _toy_means(toy, "none", 4)
    rows = [
        Row(
            "RoPE unchanged carries to 2L",
            min(none_2) > 0.99,
            far["none"] < before + 0.5,
            f"at 2L (positions 16-31): accuracy {_pair(none_2)}",
            f"at 1.5L-2L: loss {far['none']:.2f}, against {before:.2f} at 0.75L-L",
        )
    ]
    for method in ("linear", "ntk", "yarn"):
        accuracy = _toy_means(toy, method, 4)
        rows.append(
            Row(
                f"{long_context.METHOD_LABELS[method]} helps past L, zero-shot",
                np.mean(accuracy) > np.mean(none_4),
                far[method] < far["none"],
                f"at 4L (positions 16-63), factor 4: accuracy {_pair(accuracy)} (unchanged {_pair(none_4)})",
                f"{far_at}: loss {far[method]:.2f} (unchanged {far['none']:.2f})",
            )
        )
    linear_2 = _toy_means(toy, "linear", 2)
    rows.append(
        Row(
            "PI costs where nothing needed it",
            np.mean(linear_2) < np.mean(none_2) - 0.1,
            near["linear"] > near["none"] + 0.1,
            f"at 2L, factor 2, where unchanged RoPE is exact: accuracy {_pair(linear_2)} (unchanged {_pair(none_2)})",
            f"on the first 4,096 tokens (0-0.5L), factor 2: loss {near['linear']:.2f} (unchanged {near['none']:.2f})",
        )
    )
    toy_gap = {factor: toy_seed_differences(toy, "ntk", "yarn", factor) for factor in (2, 4)}
    model_gap = model_block_differences(sweep, "ntk", "yarn")
    rows.append(
        Row(
            "NTK-aware ahead of YaRN",
            all(d > 0 for d in toy_gap[2]["local_max"] + toy_gap[4]["local_max"]),
            sum(d > 0 for d in model_gap) > len(model_gap) / 2,
            "per seed, NTK-aware minus YaRN accuracy (> 0: NTK-aware ahead)\n"
            + "\n".join(
                f"  at {factor}L, factor {factor}: shift {_signed(gap['shift'])}; local_max {_signed(gap['local_max'])}"
                for factor, gap in toy_gap.items()
            ),
            f"{far_at}, per 512-token block,\n  YaRN minus NTK-aware loss (> 0: NTK-aware ahead): {_signed(model_gap)}",
        )
    )
    return rows


def comparison_text(rows):
    """The rows as text: the claim, each side's answer and whether they agree, then each side's evidence."""
    lines = []
    for row in rows:
        verdict = "same answer" if row.same else "DIFFERENT answer"
        lines.append(
            f"{row.claim:38s} toy: {'yes' if row.toy_says else 'no':3s}  model: {'yes' if row.model_says else 'no':3s}"
            f"  -> {verdict}"
        )
        lines.append("    toy (shift / local_max), " + row.toy_evidence.replace("\n", "\n    "))
        lines.append("    SmolLM2-135M, " + row.model_evidence.replace("\n", "\n    "))
    return "\n".join(lines)


def _wrapped(angle):
    """|angle| taken modulo 2 pi into [0, pi]."""
    return np.abs((np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi)


def dynamic_cache_drift(query, keys, sweep, *, prompt=None, head_dim=64, base=1e5):
    """How far cached generation with dynamic NTK turns a query-key pair from what one forward computes.

    One forward over query + 1 tokens rotates every key with the frequencies of that length. Generation with a
    cache (transformers: the rotary frequencies recomputed at each step for max position + 1) keeps each key
    as its step rotated it: the prompt's keys (positions < prompt, default the trained length) with the
    frequencies of the prompt's length, each later key with those of its own position + 1.
    head_dim and base: the model's (SmolLM2-135M's by default). Returns {key: (the largest query-key angle
    difference over the pairs, in radians modulo 2 pi; that pair)}.
    """
    setup = sweep["setup"]
    original = setup["original"]
    prompt = original if prompt is None else _validate.positive_int("prompt", prompt)
    query = _validate.positive_int("query", query)
    scaling = long_context.scaling("dynamic", setup["factor"], original)

    def theta(length):
        return rope_frequencies(head_dim, base=base, scaling=scaling, seq_len=length)

    out = {}
    for key in keys:
        key = _validate.count("keys", key)
        if key >= query:
            raise ValueError(f"keys must be positions before the query {query}, got {key}")
        cached_at = prompt if key < prompt else key + 1
        one_forward = (query - key) * theta(query + 1)
        cached = query * theta(query + 1) - key * theta(cached_at)
        error = _wrapped(cached - one_forward)
        out[key] = (float(error.max()), int(error.argmax()))
    return out
