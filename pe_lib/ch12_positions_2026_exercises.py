"""The graders of notebook 12's exercises: a port of Gemma 4's proportional RoPE, and Ministral 3's query scale.

Each grader calls the learner's function on several cases through grading.run_safely, compares with pe_lib's
answer (itself tested against transformers 5.24), and names the mistake it recognises: the NeoX pairing or
ladder where proportional is meant (the 2026 porting bugs), the whole head turned, the slow pairs turned
instead of the fast, rounding up, Llama 4's rule in place of Ministral's... Hints come in tiers, the code last.
"""

import math

import numpy as np

from . import position_scales
from .grading import Feedback, as_numbers, hint_level, run_safely, with_hints
from .partial_rope import apply_partial_rope


def _array_problem(exercise, result, shape):
    """(a Feedback if `result` is not a finite real array of this shape, else None; the array)."""
    array = as_numbers(result)
    if array is None:
        what = type(result).__name__ + (f" of dtype {result.dtype}" if hasattr(result, "dtype") else "")
        return Feedback(exercise, False, f"your function returned {what}, not an array of real numbers"), None
    if array.shape != shape:
        return Feedback(exercise, False, f"your array has shape {array.shape}, the answer has shape {shape}"), None
    if not np.all(np.isfinite(array)):
        return Feedback(exercise, False, "your array holds inf or nan"), None
    return None, array


# --- exercise 1: Gemma 4's proportional RoPE --------------------------------------------------------------------

_PROPORTIONAL = "exercise 1 (proportional RoPE)"
_PROPORTIONAL_HINTS = (
    "Gemma 4 pairs its whole head as full RoPE does and lets only some pairs turn. Which pairs does rotate_half "
    "form over a head of d features, and which of them turn fastest?",
    "Pair i is (feature i, feature i + d/2) for every i < d/2. The first k = int(fraction * d // 2) pairs turn at "
    "theta_i = base^(-2i/d) (the full head's exponents, not 2i/(2k)); the other pairs have frequency 0.",
    "    half, k = x.shape[1] // 2, int(fraction * x.shape[1] // 2)\n"
    "    theta = np.where(np.arange(half) < k, base ** (-2 * np.arange(half) / x.shape[1]), 0.0)\n"
    "    angle = np.asarray(positions, float)[:, None] * theta\n"
    "    a, b = x[:, :half], x[:, half:]\n"
    "    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], axis=1)",
)
# (n, head_dim, fraction, base, positions): Gemma 4's 0.25 first; 0.3 of 24 where rounding up and down differ
_PROPORTIONAL_CASES = (
    (5, 32, 0.25, 1e6, np.arange(5) * 97.0),
    (6, 16, 0.5, 1e4, np.arange(6) * 3.0 + 1),
    (4, 24, 0.3, 1e4, np.array([0.0, 7.0, 150.0, 2000.0])),
    (3, 8, 1.0, 100.0, np.array([2.0, 5.0, 11.0])),
    (4, 64, 0.75, 1e6, np.array([1.0, 10.0, 1000.0, 50_000.0])),
)


def _rotate_half(x, positions, theta):
    half = x.shape[1] // 2
    angle = positions[:, None] * theta
    a, b = x[:, :half], x[:, half:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], axis=1)


def _neox_like(x, positions, rotated, theta):
    """rotate_half on the first `rotated` features only (pairs (i, i + rotated/2)), the rest passed through."""
    return np.concatenate([_rotate_half(x[:, :rotated], positions, theta), x[:, rotated:]], axis=1)


def _proportional_mistakes(x, positions, fraction, base):
    d = x.shape[1]
    half, k = d // 2, int(fraction * d // 2)
    i = np.arange(half)
    ladder = base ** (-2 * i / d)
    mistakes = []
    if 2 * k < d:
        # fmt: off
        mistakes += [
            ("you turned the first r = p·d features with pairs (i, i + r/2) at base^(-2i/r): that is NeoX-style "
             "partial RoPE (Qwen3-Next, GLM-4.5), the pairing and the ladder of the 2026 porting bugs. Gemma 4 pairs "
             "the whole head, (i, i + d/2), and keeps the full head's exponents",
             _neox_like(x, positions, 2 * k, base ** (-2 * np.arange(k) / (2 * k))),
             ("Which feature does feature 0 pair with in Gemma4TextAttention, which applies rotate_half to the "
              "whole head?",)),
            ("your frequencies are right, but your pairs are NeoX's (i, i + r/2) inside the first r = p·d "
             "features; Gemma 4 pairs (i, i + d/2) across the whole head",
             _neox_like(x, positions, 2 * k, ladder[:k]), ("Which feature does feature 0 pair with?",)),
            ("your pairs are right, but your turning pairs use NeoX's ladder base^(-2i/r) (r = 2k): proportional "
             "RoPE keeps the whole head's exponents 2i/d, so its k pairs are the full head's k fastest",
             _rotate_half(x, positions, np.where(i < k, base ** (-2 * i / (2 * k)), 0.0)),
             ("What is the exponent's denominator in _compute_proportional_rope_parameters?",)),
            ("you turned every pair: the fraction was ignored (MiniMax-M2's rotary_dim ignored, transformers #48241)",
             _rotate_half(x, positions, ladder), ("What does partial_rotary_factor change?",)),
            ("you froze the fastest pairs and turned the slowest: p-RoPE keeps the fast pairs turning and freezes "
             "the slow ones", _rotate_half(x, positions, np.where(i >= half - k, ladder, 0.0)),
             ("Which pairs does Barbero et al.'s p-RoPE remove?",)),
        ]
        # fmt: on
    up = math.ceil(fraction * d / 2)
    if up != k:
        message = "you rounded the number of turning pairs up; transformers rounds down: int(fraction * d // 2)"
        mistakes.append((message, _rotate_half(x, positions, np.where(i < up, ladder, 0.0)), ()))
    interleaved = apply_partial_rope(
        x, positions, fraction=fraction, base=base, kind="proportional", layout="interleaved"
    )
    mistakes.append(("your pairs are interleaved, (2i, 2i + 1); Gemma 4 uses rotate_half: pairs (i, i + d/2)",
                     interleaved, ("How does rotate_half split a head?",)))  # fmt: skip
    mistakes.append(("your angles are the negative of RoPE's: pair (a, b) becomes (a cos + b sin, -a sin + b cos)",
                     _rotate_half(x, -positions, np.where(i < k, ladder, 0.0)), ()))  # fmt: skip
    return mistakes


def check_proportional_rope(learner_function, *, hint=0):
    """Grade `learner_function(x, positions, fraction, base)` -> x (n, head_dim) turned by Gemma 4's proportional RoPE.

    The reference: partial_rope.apply_partial_rope(x, positions, fraction=, base=, kind="proportional",
    layout="half"), which tests/test_partial_rope.py compares with transformers' Gemma 4 code.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _PROPORTIONAL_HINTS)
    return with_hints(_check_proportional(learner_function), _PROPORTIONAL_HINTS, shown)


def _check_proportional(learner_function):
    rng = np.random.default_rng(12)
    for n, head_dim, fraction, base, positions in _PROPORTIONAL_CASES:
        x = rng.normal(size=(n, head_dim))
        result, failure = run_safely(_PROPORTIONAL, learner_function, x.copy(), positions.copy(), fraction, base)
        if failure is not None:
            return failure
        expected = apply_partial_rope(x, positions, fraction=fraction, base=base, kind="proportional")
        failure, array = _array_problem(_PROPORTIONAL, result, expected.shape)
        if failure is not None:
            return failure
        if np.allclose(array, expected, rtol=1e-6, atol=1e-8):
            continue
        for message, wrong, hints in _proportional_mistakes(x, positions, fraction, base):
            if np.allclose(array, wrong, rtol=1e-6, atol=1e-8):
                return Feedback(_PROPORTIONAL, False, message, hints)
        row, column = np.unravel_index(np.argmax(np.abs(array - expected)), expected.shape)
        setting = f"head_dim={head_dim}, fraction={fraction}, base={base:g}"
        return Feedback(_PROPORTIONAL, False, f"with {setting}: token {row} (position {positions[row]:g}), feature "
                                              f"{column}: yours {array[row, column]:.4g}, expected "
                                              f"{expected[row, column]:.4g}")  # fmt: skip
    praise = "your port is Gemma 4's: the whole head paired (i, i + d/2), its k fastest pairs turning at the full "
    return Feedback(_PROPORTIONAL, True, praise + "head's exponents, the slow pairs still")


# --- exercise 2: Ministral 3's query scale ----------------------------------------------------------------------

_SCALE = "exercise 2 (beta-log query scale)"
_SCALE_HINTS = (
    "How many whole blocks of original_max_position_embeddings tokens come before position p? The scale should be "
    "exactly 1 in the first block.",
    "scale(p) = 1 + beta * ln(1 + floor(p / L)), L = original_max_position_embeddings: 1 for p < L, 1 + beta ln 2 "
    "for L <= p < 2L, ...",
    "    p = np.asarray(positions, dtype=float)\n"
    "    return 1 + beta * np.log1p(np.floor(p / original_max_position_embeddings))",
)
_SCALE_CASES = (
    (np.array([0, 1, 16383, 16384, 32767, 32768, 10**6]), 0.1, 16384),
    (np.array([0, 8191, 8192, 8193, 100_000]), 0.1, 8192),
    (np.array([5, 9, 10, 99, 101]), 0.5, 10),
)


def _scale_mistakes(p, beta, length):
    p = p.astype(float)
    blocks = np.floor(p / length)
    # fmt: off
    return [
        ("you used Llama 4's rule, floor((p + 1) / L): Ministral 3 and Mistral Small 4 read floor(p / L), so their "
         "scale changes one position later", 1 + beta * np.log1p(np.floor((p + 1) / length)),
         ("Which position is the first one whose scale is above 1?",)),
        ("your scale grows smoothly: the model takes the floor, so it steps once per block of L positions",
         1 + beta * np.log1p(p / length), ("Where does the floor go?",)),
        ("you left out the 1 +: the scale multiplies the query, and must be 1 inside the first block",
         beta * np.log1p(blocks), ()),
        ("you took the log of the blocks without adding 1 first: log(1 + floor(p / L)) is 0 in the first block",
         1 + beta * np.log(np.maximum(blocks, 1)), ()),
        ("your scale is squared: the model multiplies the query (not both q and k) by it once",
         (1 + beta * np.log1p(blocks)) ** 2, ()),
    ]
    # fmt: on


def check_beta_scale(learner_function, *, hint=0):
    """Grade `learner_function(positions, beta, original_max_position_embeddings)` -> the query scale per position.

    The reference: position_scales.beta_log_scale (transformers' get_llama_4_attn_scale, tests/test_position_scales.py).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    shown = hint_level(hint, _SCALE_HINTS)
    return with_hints(_check_scale(learner_function), _SCALE_HINTS, shown)


def _check_scale(learner_function):
    for positions, beta, length in _SCALE_CASES:
        result, failure = run_safely(_SCALE, learner_function, positions.copy(), beta, length)
        if failure is not None:
            return failure
        expected = position_scales.beta_log_scale(positions, beta, length)
        failure, array = _array_problem(_SCALE, result, expected.shape)
        if failure is not None:
            return failure
        if np.allclose(array, expected, rtol=1e-9, atol=1e-12):
            continue
        for message, wrong, hints in _scale_mistakes(positions, beta, length):
            if np.allclose(array, wrong, rtol=1e-9, atol=1e-12):
                return Feedback(_SCALE, False, message, hints)
        index = int(np.argmax(np.abs(array - expected)))
        return Feedback(_SCALE, False, f"with beta={beta}, L={length}: at position {positions[index]}, yours "
                                       f"{array[index]:.6g}, expected {expected[index]:.6g}")  # fmt: skip
    return Feedback(_SCALE, True, "your scale is Ministral 3's: 1 inside the first block of L positions, then "
                                  "1 + beta ln(1 + floor(p / L))")  # fmt: skip
