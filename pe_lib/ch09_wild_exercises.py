"""The graders of notebook 09's exercises: where positions collide in bfloat16, and a RoPE port that is wrong.

Exercise 2's port reads its RoPE base under GPT-NeoX's key (`rotary_emb_base`) from a Llama config,
which names it `rope_theta`, and so falls back to 10,000 whatever the model was trained with: the
class of bug where a port ignores rope_theta (NVIDIA TransformerEngine issue #849: "inv_freq of
RotaryPositionEmbedding is hard-coded to 10k").
"""

import numpy as np
import torch

from . import precision, relative
from .grading import Feedback, as_numbers, describe, graded, run_safely

# --- exercise 2: a RoPE port that ignores the config's base ------------------------------------------------

_ROPE_HINTS = (
    "Compare ported_rope with the reference at position 0, at position 1 and at position 1,000, pair by pair. "
    "Which pairs agree, and does the disagreement grow with the position? What does an angle error that grows "
    "in proportion to the position say about that pair's frequency?",
    "Print the frequencies ported_rope uses next to θ_i = base^(−2i/d) for this model. Which value of the config "
    "should set the base, and under which key does the port look for it?",
    "The port, with the base read from the config's own key and x's dtype kept (the rest unchanged):\n"
    "    d = config['hidden_size'] // config['num_attention_heads']\n"
    "    base = config['rope_theta']\n"
    "    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)\n"
    "    angles = np.outer(positions, inv_freq)\n"
    "    cos, sin = np.cos(angles), np.sin(angles)\n"
    "    first, second = x[:, : d // 2], x[:, d // 2 :]\n"
    "    turned = np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)\n"
    "    return turned.astype(x.dtype)",
)


def _config(hidden_size, num_heads, rope_theta, max_positions):
    return {"hidden_size": hidden_size, "num_attention_heads": num_heads, "rope_theta": rope_theta,
            "max_position_embeddings": max_positions, "model_type": "llama"}  # fmt: skip


def _rope_cases():
    """(x, positions, config): Llama 3 8B's head and base, Code Llama's base with a smaller head, a float32 x,
    positions out of order; the last case is Llama 2's base 10,000, where the port happens to be right."""
    rng = np.random.default_rng(9)
    return [
        (rng.normal(size=(6, 128)), np.array([0, 1, 2, 100, 4095, 8191]), _config(4096, 32, 500000.0, 8192)),
        (rng.normal(size=(5, 64)), np.array([7, 0, 16383, 3, 900]), _config(1024, 16, 1000000.0, 16384)),
        (rng.normal(size=(4, 8)), np.array([5, 0, 12, 2]), _config(32, 4, 500000.0, 8192)),
        (rng.normal(size=(4, 96)).astype(np.float32), np.array([1, 64, 2048, 8000]), _config(768, 8, 500000.0, 8192)),
        (rng.normal(size=(3, 128)), np.array([0, 30, 4000]), _config(4096, 32, 10000.0, 4096)),
    ]


def _half(x, angles):
    x = np.asarray(x, dtype=np.float64)
    half = x.shape[-1] // 2
    first, second = x[:, :half], x[:, half:]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def _float32_port(x, positions, base):
    """Hugging Face's LlamaRotaryEmbedding in float32: inv_freq, positions, angles, cos/sin all float32."""
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    angles = torch.outer(torch.as_tensor(positions).float(), inv_freq)
    emb = torch.cat([angles, angles], dim=-1)
    q = torch.as_tensor(np.asarray(x, dtype=np.float32))
    rotated = torch.cat([-q[:, d // 2 :], q[:, : d // 2]], dim=-1)
    return (q * emb.cos() + rotated * emb.sin()).double().numpy()


def rope_tolerance(x, positions, base):
    """How far a right answer may sit from the float64 reference on this case (absolute, per entry).

    4x what a float32 Hugging Face-style port is off here, and at least 16 float32 roundings of the largest
    |x| (a float32 answer computed in another order): a faithful float32 port passes at every position,
    and every recognised mistake is off by far more (0.1 and up).
    """
    reference = relative.apply_rope(np.asarray(x, dtype=np.float64), positions, base=base, layout="half")
    float32_port = float(np.abs(_float32_port(x, positions, base) - reference).max())
    return max(4 * float32_port, 16 * float(np.finfo(np.float32).eps) * float(np.abs(x).max()))


def _rope_mistakes(x, positions, base, d):
    theta = base ** (-np.arange(0, d, 2) / d)
    p = positions.astype(np.float64)
    interleaved = relative.apply_rope(np.asarray(x, dtype=np.float64), p, base=base, layout="interleaved")
    # fmt: off
    return [
        ("your rows turn as if they sat one position further on", _half(x, np.outer(p + 1, theta)),
         ("Which position does the first token of a sequence have?",)),
        ("your pairs turn the wrong way (by −p·θ_i)", _half(x, np.outer(-p, theta)),
         ("In a cos − b sin, b cos + a sin, which way does the pair turn for a positive angle?",)),
        ("you turned the pairs (2i, 2i + 1); this port and Hugging Face's Llama code pair feature i with i + d/2",
         interleaved, ("Which two features of ported_rope turn together?",)),
        ("your output ignores the positions you were given: it turns row r by the angle of position r",
         _half(x, np.outer(np.arange(len(p)), theta)), ("Which positions does your function use?",)),
        ("your output is the input unchanged: no pair was turned", np.asarray(x, dtype=np.float64), ()),
    ]
    # fmt: on


def check_rope_fix(learner_function, *, hint=0):
    """Grade `learner_function(x, positions, config)` -> x (n, d) turned as the model of `config` turns it.

    The reference is pe_lib.apply_rope(x, positions, base=config["rope_theta"], layout="half").
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("RoPE port fixed", _check_rope_fix, learner_function, _ROPE_HINTS, hint)


def _check_rope_fix(learner_function):
    exercise = "RoPE port fixed"
    for index, (x, positions, config) in enumerate(_rope_cases()):
        result, failure = run_safely(exercise, learner_function, x, positions, dict(config))
        if failure is not None:
            return failure
        value = as_numbers(result)
        # the base is named only once the notebook's own case (Llama 3 8B) passed: naming it earlier gives the bug away
        case = f"x of shape {x.shape} ({x.dtype}), positions {positions.tolist()}"
        case += f", a config with rope_theta {config['rope_theta']:g}" if index else ""
        if value is None or value.shape != x.shape:
            got = describe(result) if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return an array of x's shape {x.shape} (x turned), got {got}")
        # The exercise asks for x's dtype: float64 in, float64 out; float32 in, float32 out (a list holds float64).
        listed = "float64" if isinstance(result, (list, tuple)) else ""
        dtype = str(getattr(result, "dtype", listed)).removeprefix("torch.")
        if dtype != str(x.dtype):
            why = ": a half-precision answer rounds away the digits this check compares" if "16" in dtype else ""
            return Feedback(exercise, False, f"return an array of x's dtype: x is {x.dtype}, you return "
                                             f"{describe(result)}{why} ({case})")  # fmt: skip
        if not np.all(np.isfinite(value)):
            return Feedback(exercise, False, f"your output holds inf or nan ({case})")
        base, d = config["rope_theta"], x.shape[-1]
        expected = relative.apply_rope(np.asarray(x, dtype=np.float64), positions, base=base, layout="half")
        tolerance = rope_tolerance(x, positions, base)
        if np.abs(value - expected).max() <= tolerance:
            continue
        ported = _half(x, np.outer(positions, 10000.0 ** (-np.arange(0, d, 2) / d)))
        if np.abs(value - ported).max() <= tolerance:
            rows = np.abs(value - expected).max(axis=1)
            where = f"off by up to {rows.max():.2f} at position {positions[rows.argmax()]:,}"
            return Feedback(exercise, False, f"your output equals ported_rope's: right at position 0, {where} ({case})")
        for symptom, candidate, hints in _rope_mistakes(x, positions, base, d):
            if np.abs(value - candidate).max() <= tolerance:
                return Feedback(exercise, False, f"{symptom} ({case})", hints)
        rows = np.abs(value - expected).max(axis=1)
        if rows[positions == 0].max(initial=0.0) <= tolerance and rows.max() < 2.5 * np.abs(expected).max():
            right = sorted(int(p) for p in positions[rows <= tolerance])
            return Feedback(exercise, False, f"right at positions {right}, off by up to {rows.max():.2g} at position "
                                             f"{positions[rows.argmax()]:,} ({case})",
                            ("Which of your angles grow with the position, and does each one use this model's "
                             "frequencies and at least float32 precision?",))  # fmt: skip
        return Feedback(exercise, False, f"your rotation differs from the model's by up to {rows.max():.3g} ({case})")
    done = "θ_i = base^(−2i/d) with the config's own rope_theta, pairs (i, i + d/2): the model's rotation"
    return Feedback(exercise, True, f"{done} for bases 10^4, 5·10^5 and 10^6, up to position 16,383")


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

# every boundary: 255/256/257 (first rounding), powers of two and their neighbours, ties both ways, large ones
BF16_CASES = (0, 1, 100, 255, 256, 257, 258, 259, 260, 383, 385, 511, 512, 513, 514, 515, 518, 1001, 1002, 1003,
              1004, 1005, 1023, 1024, 1025, 1028, 1029, 1036, 2047, 2048, 2049, 4095, 4100, 65535, 100000,
              123457)  # fmt: skip


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
    ("your ties go up (round half up): the hardware sends a tie to the neighbour that is an even multiple of the "
     "spacing (its last kept bit is 0)", 8, "up",
     ("257 is exactly halfway between 256 and 258, which bfloat16 stores as 128·2 and 129·2: which of the two "
      "keeps a last bit of 0?",)),
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

    The reference is torch's rounding (pe_lib.precision.round_to(p, "bfloat16")); answers must be equal
    (every stored number is an integer, so there is nothing to round).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("bfloat16 positions", _check_bf16_position, learner_function, _BF16_HINTS, hint)


def _check_bf16_position(learner_function):
    exercise = "bfloat16 positions"
    answers = []
    for p in BF16_CASES:
        result, failure = run_safely(exercise, learner_function, p)
        if failure is not None:
            return failure
        value = as_numbers(result)
        if value is None or value.size != 1:
            got = describe(result) if value is None else f"shape {value.shape}"
            return Feedback(exercise, False, f"return one number for one position (position {p:,}), got {got}")
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
