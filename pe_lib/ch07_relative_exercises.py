"""The graders of notebook 07's three exercises: RoPE the rotate_half way, ALiBi slopes, a T5 bucket.

Each check_* runs the learner's function on cases the notebook does not show (odd sizes, both sides
of every boundary, several settings), compares with pe_lib.relative's reference and names the
usual slips; hints come in three tiers, the code last. A right answer may differ from the float64
reference by what its arithmetic rounds: RoPE angles in float32 (as transformers computes them),
and float16 / bfloat16 results relative to the size of each value, never a fixed absolute margin.
"""

import math

import numpy as np

from . import relative, rope_frequencies
from .grading import Feedback, as_numbers, describe, graded, run_safely
from .text import measured

# --- what the three graders share ------------------------------------------------------------


def _precision(result):
    """The name of a half-precision result's dtype ("bfloat16" or "float16"), else None (float32, float64, lists)."""
    dtype = str(getattr(result, "dtype", ""))
    if "bfloat16" in dtype:
        return "bfloat16"
    return "float16" if "float16" in dtype else None


def _within(value, expected, tolerance):
    return value.shape == expected.shape and bool(np.all(np.abs(value - expected) <= tolerance))


def _first_match(value, variants, tolerance_of):
    """(symptom, own hint tiers) of the first variant `value` equals within tolerance_of(variant), or None."""
    for symptom, candidate, hints in variants:
        candidate = np.asarray(candidate, dtype=np.float64)
        if _within(value, candidate, tolerance_of(candidate)):
            return symptom, hints
    return None


def _result_array(exercise, result, shape):
    """(float64 array, None) for a numeric result of `shape`, else (None, Feedback saying what to return)."""
    value = as_numbers(result)
    if value is None:  # strings, complex numbers, objects: as_numbers refuses them
        return None, Feedback(
            exercise, False, f"return an array of real numbers of shape {shape}, got {describe(result)}"
        )
    if value.shape != shape:
        return None, Feedback(exercise, False, f"return an array of shape {shape}, got shape {value.shape}")
    if "int" in str(getattr(result, "dtype", "")):
        return None, Feedback(exercise, False, f"your result has an integer dtype ({result.dtype}): keep the floats")
    if not np.isfinite(value).all():
        return None, Feedback(exercise, False, "your result contains NaN or infinity")
    return value, None


# --- exercise 1: RoPE in the half (rotate_half) layout ---------------------------------------

_ROPE_HINTS = (
    "Pair i of the half layout is (feature i, feature i + d/2); it turns by the angle p·θ_i, "
    "(a, b) -> (a cos - b sin, a sin + b cos). For all features at once that is x·cos + rotate_half(x)·sin: "
    "what must rotate_half(x) hold in its first half, and in its second, to give those two lines?",
    "cos and sin need one column per FEATURE: the d/2 pair angles p·θ_i written twice, once per half "
    "(feature i and feature i + d/2 share θ_i). rotate_half(x) is minus the second half of x, then the first half.",
    "The usual recipe (Hugging Face Llama), for x (n, d):\n"
    "    d = x.shape[-1]\n"
    "    theta = base ** (-np.arange(0, d, 2) / d)\n"
    "    angles = np.outer(positions, theta)\n"
    "    cos = np.cos(np.concatenate([angles, angles], axis=-1))\n"
    "    sin = np.sin(np.concatenate([angles, angles], axis=-1))\n"
    "    rotated = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)\n"
    "    return x * cos + rotated * sin",
)


# How far a right answer may sit from the float64 reference, relative to the length of the pair a value belongs
# to (a rotation keeps it). Angles: 8x the worst measured for transformers' recipe (inv_freq and position * inv_freq
# in float32: 0.81 * 2^-24 per unit of position on these cases); results in half precision: about twice the worst
# measured for that recipe run in the result's dtype (bfloat16 0.0081, float16 0.00094 of the length).
_ANGLE_ERROR = 2.0**-21
_HALF_ERROR = {"bfloat16": 2.0**-6, "float16": 2.0**-9}


def _rope_tolerance(x, positions, result):
    """Per element of x's shape: the error a right answer may have (float32 angles, half-precision rounding)."""
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    length = np.hypot(x[:, :half], x[:, half:])
    error = _ANGLE_ERROR * (1.0 + np.abs(positions))[:, None] + _HALF_ERROR.get(_precision(result), 0.0)
    return np.concatenate([length, length], axis=-1) * error


def _rope_cases():
    """(x, positions, base): odd pair counts (d = 6, 2), far positions, another base, a float32 input."""
    rng = np.random.default_rng(7)
    cases = [
        ((5, 8), [0, 1, 2, 7, 30], 1e4),
        ((4, 6), [3, 100, 1000, 5], 100.0),
        ((3, 2), [1, 2, 50], 1e4),
        ((6, 64), [0, 513, 1026, 4095, 11, 2], 5e5),
        ((4, 16), [4095, 2047, 1, 0], 1e4),
    ]
    for index, (shape, positions, base) in enumerate(cases):
        x = rng.normal(size=shape)
        yield (x.astype(np.float32) if index == len(cases) - 1 else x), np.array(positions), base


def _rope_mistakes(x, positions, base):
    """(symptom, candidate, own tiers) for the usual slips of x·cos + rotate_half(x)·sin."""
    x = np.asarray(x, dtype=np.float64)
    d, half = x.shape[-1], x.shape[-1] // 2
    angles = np.outer(positions, rope_frequencies(d, base=base))
    both = np.concatenate([angles, angles], axis=-1)
    first, second = x[:, :half], x[:, half:]
    rotate_half = np.concatenate([-second, first], axis=-1)

    def recipe(feature_angles, rotated=rotate_half):
        return x * np.cos(feature_angles) + rotated * np.sin(feature_angles)

    def rope(positions=positions, base=base, layout="half"):
        return relative.apply_rope(x, positions, base=base, layout=layout)

    per_feature = "Where do your frequencies come from: one per pair (d/2 of them), or one per feature?"
    # fmt: off
    return [
        ("your output is the input unchanged: no pair was turned", x, ()),
        ("your pairs turn the wrong way (by -p·θ_i)", recipe(-both),
         ("Which half of rotate_half(x) carries the minus sign in (a cos - b sin, a sin + b cos)?",)),
        ("your rotate_half(x) gives x back: the halves are neither swapped nor negated", recipe(both, x),
         ("In a cos - b sin, which feature multiplies sin in the FIRST half of the output?",)),
        ("your rotate_half(x) swaps the halves but drops the minus sign: that is no rotation (lengths change)",
         recipe(both, np.concatenate([second, first], axis=-1)),
         ("A rotation keeps each pair's length. Which term of (a cos - b sin, a sin + b cos) is negative?",)),
        ("your frequencies are per feature (d of them): RoPE has one frequency per PAIR",
         recipe(np.outer(positions, base ** (-np.arange(d) / d))), (per_feature,)),
        ("your frequencies are per feature (d of them): RoPE has one frequency per PAIR",
         recipe(np.outer(positions, base ** (-2 * np.arange(d) / d))), (per_feature,)),
        ("your cos and sin repeat each angle side by side (θ0, θ0, θ1, θ1, ...): the interleaved layout's order",
         recipe(np.repeat(angles, 2, axis=-1)), ("Which two features share θ_0 in the half layout?",)),
        ("you turned neighbouring features (0, 1), (2, 3), ...: that is the interleaved layout, not the half one",
         rope(layout="interleaved"), ("In the half layout, which feature is the partner of feature 0?",)),
        ("you ignored `positions`: your rows turn as if they sat at 0, 1, 2, ...", rope(positions=None),
         ("Which argument says how far each row turns?",)),
        ("you ignored `base`: your answer is the one for base 10000", rope(base=1e4),
         ("Does your function pass `base` on to the frequencies?",)),
    ]
    # fmt: on


def check_rope_half(learner_function, *, hint=0):
    """Grade `learner_function(x, positions, base)` -> x (n, d) turned by RoPE in the half (rotate_half) layout.

    The reference is pe_lib.apply_rope(x, positions, base=base, layout="half").
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("rotate_half RoPE", _check_rope_half, learner_function, _ROPE_HINTS, hint)


def _check_rope_half(learner_function):
    exercise = "rotate_half RoPE"
    for x, positions, base in _rope_cases():
        result, failure = run_safely(exercise, learner_function, x, positions, base)
        if failure is not None:
            if "broadcast" in failure.message or "must match the size" in failure.message:
                failure = Feedback(
                    exercise,
                    False,
                    f"{failure.message} (x has shape {x.shape})",
                    (
                        "Compare the shapes of x and of your cos and sin: how many columns must cos have?",
                        "Write each pair's angle for both of its features: the d/2 angles once for the first half "
                        "of x and once more for the second.",
                    ),
                )
            return failure
        value, failure = _result_array(exercise, result, x.shape)
        if failure is not None:
            return failure
        expected = relative.apply_rope(x.astype(np.float64), positions, base=base, layout="half")
        tolerance = _rope_tolerance(x, positions, result)
        if _within(value, expected, tolerance):
            continue
        case = f"x of shape {x.shape}, positions {positions.tolist()}, base {base:g}"
        known = _first_match(
            value, _rope_mistakes(x, positions, base), lambda candidate, tolerance=tolerance: tolerance
        )
        if known is None:
            worst = float(np.abs(value - expected).max())
            return Feedback(exercise, False, f"your rotation differs from RoPE's by up to {worst:.3g} ({case})")
        symptom, hints = known
        return Feedback(exercise, False, f"{symptom} ({case})", hints)
    return Feedback(
        exercise,
        True,
        "x·cos + rotate_half(x)·sin, with each pair angle written for both halves, turns pair (i, i + d/2) "
        "by p·θ_i: it equals pe_lib.apply_rope(..., layout='half')",
    )


# --- exercise 2: ALiBi slopes for a head count that is not a power of two -----------------

_ALIBI_HINTS = (
    "Press et al. give the slopes for a power of two n: the geometric sequence that starts at 2^(-8/n) and has "
    "2^(-8/n) as its ratio. Is 12 a power of two? Which powers of two lie on either side of it?",
    "Take all the slopes of the closest power of two below (8 heads), then, from the sequence for twice as many "
    "heads (16), every other slope starting with its first, until there are as many slopes as heads.",
    "The authors' code (and BLOOM's):\n"
    "    def power_of_two(n):\n"
    "        return [2.0 ** (-8 * (h + 1) / n) for h in range(n)]\n"
    "    m = 2 ** int(math.log2(num_heads))\n"
    "    return np.array(power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m])",
)


def _alibi_mistakes(n, reference):
    """(symptom, candidate, own tiers) for the usual slips, for n heads."""

    def power_of_two(k, start=1):
        return [2.0 ** (-8 * (h + start) / k) for h in range(k)]

    m = 1 << (n.bit_length() - 1)  # the closest power of two at or below n
    heads = np.arange(1, n + 1)
    off_by_one = ("What is the first head's slope for 8 heads in Press et al.: 1, or 1/2?",)
    # fmt: off
    mistakes = [
        (f"these are the power-of-two formula 2^(-8h/n) applied to n = {n} heads", 2.0 ** (-8 * heads / n),
         ("For a count that is not a power of two, does the authors' code use the paper's sequence?",)),
        ("your exponents are off by one: your first head gets slope 2^0 = 1", 2.0 ** (-8 * (heads - 1) / n),
         off_by_one),
        ("your exponents are off by one: your first head gets slope 2^0 = 1",
         power_of_two(m, 0) + power_of_two(2 * m, 0)[0::2][: n - m], off_by_one),
        ("your slopes are negative: the bias is -m·distance with a positive slope m", -reference, ()),
        ("these look like the exponents log2(m), not the slopes m", np.log2(reference), ()),
    ]
    if n != m:
        mistakes += [
            (f"these are the first {n} slopes of the {2 * m}-head sequence", power_of_two(2 * m)[:n],
             (f"Do your first {m} heads get the {m}-head slopes?",)),
            (f"your extra heads take the odd-numbered slopes of the {2 * m}-head sequence, which the first {m} "
             "heads already have", power_of_two(m) + power_of_two(2 * m)[1::2][: n - m],
             (f"Which slopes of the {2 * m}-head sequence are NOT among the {m}-head ones?",)),
        ]
    # fmt: on
    return mistakes


def check_alibi_slopes(learner_function, *, hint=0):
    """Grade `learner_function(num_heads)` -> ALiBi's slopes, shape (num_heads,), 12 heads first.

    The reference is pe_lib.alibi_slopes (the authors' code, also BLOOM's).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("ALiBi slopes", _check_alibi_slopes, learner_function, _ALIBI_HINTS, hint)


# Head counts: 12 first (the notebook's), powers of two (1, 2, 8, 16) and counts between them whose closest power
# of two below is the nearer one (5, 20) or not (3, 6, 12, 24).
_ALIBI_HEADS = (12, 8, 16, 6, 24, 1, 2, 3, 5, 20)
# A right slope may differ from the float64 reference by a relative error of twice its dtype's rounding (the
# exponents -8h/n are exact in every dtype for these counts); float32 and float64 both get 1e-6.
_SLOPE_ERROR = {"bfloat16": 2.0**-7, "float16": 2.0**-10}


def _check_alibi_slopes(learner_function):
    exercise = "ALiBi slopes"
    for n in _ALIBI_HEADS:
        result, failure = run_safely(exercise, learner_function, n)
        if failure is not None:
            return failure
        value, failure = _result_array(exercise, result, (n,))
        if failure is not None:
            return failure
        expected = relative.alibi_slopes(n)
        error = _SLOPE_ERROR.get(_precision(result), 1e-6)

        def tolerance_of(slopes, error=error):  # relative to each slope: 1/256 is smaller than a fixed 5e-3
            return error * np.abs(slopes)

        if _within(value, expected, tolerance_of(expected)):
            continue
        if n > 1 and np.ptp(value) == 0:
            return Feedback(
                exercise, False, f"all {n} heads get the same slope, {measured(value[0])}: each needs its own"
            )
        if _within(np.sort(value), np.sort(expected), tolerance_of(np.sort(expected))):
            return Feedback(
                exercise,
                False,
                f"for {n} heads you have the right slopes in another order: a checkpoint pairs head h with one slope",
                ("Which heads come first in the authors' code: the power-of-two ones or the extra ones?",),
            )
        known = _first_match(value, _alibi_mistakes(n, expected), tolerance_of)
        if known is None:
            wrong = int(np.flatnonzero(np.abs(value - expected) > tolerance_of(expected))[0])
            return Feedback(
                exercise,
                False,
                f"your slopes for {n} heads are not ALiBi's from head {wrong + 1} on "
                f"(yours: {measured(value[wrong], digits=4)})",
            )
        symptom, hints = known
        return Feedback(exercise, False, f"{symptom} (num_heads = {n})", hints)
    return Feedback(
        exercise,
        True,
        "12 heads: the 8-head slopes 1/2 ... 1/256, then every other slope of the 16-head sequence, "
        "2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 (the authors' and BLOOM's)",
    )


# --- exercise 3: a T5 bucket by hand ---------------------------------------------------------

_T5_HINTS = (
    "A bucket comes in three steps: the half (bidirectional only: keys AFTER the query use the upper half), the "
    "distance n (bidirectional: |relative_position|; causal: how far back, 0 for the future), and the bucket of n "
    "inside its half: exact for small n, logarithmic for large n. Which step goes wrong in the case above?",
    "With B buckets per direction (num_buckets // 2 when bidirectional) and max_exact = B // 2: n < max_exact "
    "gives bucket n; otherwise max_exact + floor(log(n / max_exact) / log(max_distance / max_exact) * "
    "(B - max_exact)), at most B - 1. Bidirectional: add B for a key after the query.",
    "T5's _relative_position_bucket for one number:\n"
    "    half = num_buckets // 2 if bidirectional else num_buckets\n"
    "    upper = half if bidirectional and relative_position > 0 else 0\n"
    "    n = abs(relative_position) if bidirectional else max(-relative_position, 0)\n"
    "    max_exact = half // 2\n"
    "    if n < max_exact:\n"
    "        return upper + n\n"
    "    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact))\n"
    "    return upper + min(large, half - 1)",
)

# Both directions, several settings, and both sides of every boundary of each setting: the last exact distance and
# max_exact, the first distance of the last bucket and the one before it, max_distance and one past it.
_T5_CASES = [
    (0, True, 32, 128), (-3, True, 32, 128), (5, True, 32, 128), (-20, True, 32, 128), (20, True, 32, 128),
    (-8, True, 32, 128), (-100, True, 32, 128), (127, True, 32, 128), (-128, True, 32, 128), (-5000, True, 32, 128),
    (-3, False, 32, 128), (3, False, 32, 128), (-20, False, 32, 128), (-15, False, 32, 128), (-16, False, 32, 128),
    (-90, False, 32, 128), (-300, False, 32, 128), (-40, True, 16, 64), (9, True, 64, 256), (-70, False, 8, 32),
    (-7, True, 32, 128), (8, True, 32, 128), (-90, True, 32, 128), (-91, True, 32, 128), (128, True, 32, 128),
    (-129, True, 32, 128), (-112, False, 32, 128), (-113, False, 32, 128), (-127, False, 32, 128),
    (-128, False, 32, 128),
    (-3, True, 16, 64), (-4, True, 16, 64), (4, True, 16, 64), (-63, True, 16, 64), (64, True, 16, 64),
    (-15, True, 64, 256), (16, True, 64, 256), (-255, True, 64, 256), (-256, True, 64, 256),
    (-3, False, 8, 32), (-4, False, 8, 32), (-31, False, 8, 32), (-32, False, 8, 32), (2, False, 8, 32),
]  # fmt: skip


def _t5_variant(rel, bidirectional, num_buckets, max_distance, *, slip=None):
    """One bucket by the formula, or with one learner's `slip` (None: the right bucket)."""
    half = num_buckets // 2 if bidirectional and slip != "no halving" else num_buckets
    if bidirectional:
        upper = num_buckets // 2 if (rel < 0 if slip == "swapped" else rel > 0) else 0
        n = abs(rel)
    else:
        upper = 0
        n = {"abs": abs(rel), "future": max(rel, 0)}.get(slip, max(-rel, 0))
    max_exact = num_buckets // 2 if slip == "exact range" else half // 2  # the slip: both directions' buckets
    if n < max_exact:
        return upper + n
    share = math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact)
    large = max_exact + (round(share) if slip == "round" else int(share))
    return upper + (large if slip == "no cap" else min(large, half - 1))


# fmt: off
_T5_SLIPS = {  # slip (see _t5_variant) -> (symptom, own first tier)
    "swapped": ("your upper half holds the keys BEFORE the query; T5 puts the keys after it there",
                ("For relative_position = key - query > 0, is the key before or after the query?",)),
    "no halving": ("bidirectional: you gave each direction all num_buckets; the two directions share them",
                   ("With 32 buckets and two directions, how many buckets does each direction get?",)),
    "round": ("you round the logarithmic part to the nearest bucket; T5 rounds down", ("int() or round()?",)),
    "no cap": ("far distances get buckets past the last one of their half",
               ("What happens to every distance from max_distance on?",)),
    "abs": ("causal: keys after the query get buckets of their own; in a decoder only the past counts",
            ("Causal: what distance does a key in the future get?",)),
    "future": ("causal: you count how far AHEAD the key is; a decoder counts how far back",
               ("relative_position = key - query: is it negative or positive for a key in the past?",)),
    "exact range": ("your exact range is too long: max_exact is half of the buckets of ONE direction",
                    ("How many buckets does one direction have, and how many of them are exact?",)),
}
# fmt: on


def check_t5_bucket(learner_function, *, hint=0):
    """Grade `learner_function(relative_position, bidirectional, num_buckets, max_distance)` -> one int bucket.

    relative_position = key position - query position. The reference is pe_lib.t5_relative_bucket.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("T5 bucket", _check_t5_bucket, learner_function, _T5_HINTS, hint)


def _check_t5_bucket(learner_function):
    exercise = "T5 bucket"
    answers = []
    for case in _T5_CASES:
        result, failure = run_safely(exercise, learner_function, *case)
        if failure is not None:
            return failure
        value = as_numbers(result)
        if value is None or value.size != 1:
            got = describe(result) if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return one bucket (an int), got {got}")
        value = float(value.reshape(()))
        if not (math.isfinite(value) and value.is_integer()):
            return Feedback(exercise, False, f"a bucket is a whole number, got {value:g} for {_t5_case(case)}")
        answers.append(int(value))
    expected = [
        relative.t5_relative_bucket(rel, bidirectional=b, num_buckets=nb, max_distance=md)
        for rel, b, nb, md in _T5_CASES
    ]
    if answers == expected:
        return Feedback(
            exercise,
            True,
            "exact buckets up to max_exact, then log-spaced up to max_distance, one per direction when bidirectional",
        )
    for slip, (symptom, hints) in _T5_SLIPS.items():
        if answers == [_t5_variant(*case, slip=slip) for case in _T5_CASES]:
            return Feedback(exercise, False, symptom, hints)
    for answer, case in zip(answers, _T5_CASES, strict=True):
        if not 0 <= answer < case[2]:
            return Feedback(
                exercise, False, f"buckets are numbered 0 to num_buckets - 1, got {answer} for {_t5_case(case)}"
            )
    if len(set(answers)) == 1:
        return Feedback(exercise, False, f"your function gives bucket {answers[0]} for every relative position")
    index = next(i for i, (a, e) in enumerate(zip(answers, expected, strict=True)) if a != e)
    side = "too high" if answers[index] > expected[index] else "too low"
    return Feedback(exercise, False, f"{_t5_case(_T5_CASES[index])}: your bucket {answers[index]} is {side}")


def _t5_case(case):
    rel, bidirectional, num_buckets, max_distance = case
    return (
        f"relative_position={rel}, bidirectional={bidirectional}, num_buckets={num_buckets}, "
        f"max_distance={max_distance}"
    )
