"""The graders of notebook 08's exercises: the NTK-aware base, and the pairs YaRN leaves untouched.

Notebook 08 calls them as `ch08_extension.check_...` (that module imports them); its figures, explorer
and measures live in pe_lib/ch08_extension.py.
"""

import numpy as np

from . import rope_scaling
from .grading import Feedback, as_numbers, describe, graded, holds_integers, run_safely
from .text import measured

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
    return graded("NTK base", _check_ntk_base, learner_function, _NTK_HINTS, hint)


def _check_ntk_base(learner_function):
    exercise = "NTK base"
    for base, s, d in _NTK_CASES:
        result, failure = run_safely(exercise, learner_function, base, s, d)
        if failure is not None:
            return failure
        number = as_numbers(result)
        if number is None or number.size != 1:
            got = describe(result) if number is None else f"{describe(result)} of shape {number.shape}"
            return Feedback(exercise, False, f"return one number (the new base), got {got}")
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
        if abs(slower / s - 1) >= 0.01:
            return Feedback(exercise, False, f"with your base the last pair turns {measured(slower)} times slower, "
                            f"not {s:g} {case}")  # fmt: skip
        # A near miss: as many digits as it takes to tell the two apart, and how far off the base is.
        shown = next(f"{slower:.{k}g}" for k in range(4, 18) if f"{slower:.{k}g}" != f"{s:.{k}g}")
        return Feedback(exercise, False, f"close, but with your base the last pair turns {shown} times slower, "
                        f"not {s:g}: your base is {abs(value / expected - 1):.1e} of its size off, more than "
                        f"rounding (1e-6) {case}")  # fmt: skip
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
    return graded("YaRN's untouched pairs", _check_untouched_pairs, learner_function, _YARN_HINTS, hint)


def _as_indices(result):
    """The learner's answer as a 1-D int64 array, or a Feedback message saying what it is instead.

    Indices are integers (a NumPy or torch integer array, a list of ints): 0.0, 1.0, ... hold the right
    numbers but index no array. A mask of True/False per pair is named as such; an empty answer is no pairs.
    """
    value = as_numbers(result)
    if value is None:
        return None, f"return a 1-D array of pair indices (integers), got {describe(result)}"
    if value.ndim != 1:
        got = f"a single value ({describe(result)})" if value.ndim == 0 else f"shape {value.shape}"
        return None, f"return a 1-D array of pair indices, got {got}"
    if value.size == 0:
        return value.astype(np.int64), None
    if str(getattr(result, "dtype", "")) in ("bool", "torch.bool") or all(
        isinstance(item, (bool, np.bool_)) for item in result
    ):
        return None, "you returned True/False for every pair: return the indices of the pairs"
    if not holds_integers(result):
        return None, f"pair indices are integers (they index the pairs), got {describe(result)}"
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
