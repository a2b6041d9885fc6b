"""The graders of notebook 03's exercises: the book chapter's bug, M(k) for the concatenated
layout, and tensor2tensor's timing signal.
"""

import numpy as np

from . import encodings
from .grading import Feedback, allowed_error, as_numbers, describe, graded, run_safely

# How far a faithful float32 answer may sit from the reference: its angles (at most about 120 here) are off by
# about 1e-5; every typical mistake is off by far more. Half precision adds its own rounding (allowed_error).
_FLOAT32_ERROR = 1e-4


def _sinusoid_table(positions, rates, *, swap=False, layout="interleaved"):
    """A table with angle p * rates[j] in column j; sin in even columns and cos in odd ones (swapped if swap)."""
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rates
    even = np.arange(rates.size) % 2 == 0
    table = np.where(even != swap, np.sin(angles), np.cos(angles))
    if layout == "concatenated":
        table = np.concatenate([table[:, 0::2], table[:, 1::2]], axis=1)
    return table


def _typical_mistakes(positions, d_model, base=10000.0):
    """(table, symptom, own hint tiers) for the usual ways a sinusoidal table goes wrong, most specific first."""
    column = np.arange(d_model)
    i = column // 2  # the pair index of each column
    right = base ** (-2 * i / d_model)
    positions = np.asarray(positions, dtype=np.float64)
    interleave = "Column 2i holds the sine, column 2i+1 the cosine of the same angle p * w_i."
    return [
        (
            # The book chapter's bug: its own tiers are the general ones of check_chapter_fix.
            _sinusoid_table(positions, np.pi * i * right),
            "columns 0 and 1 never change (always 0 and 1), and every other pair turns too fast "
            "(pair 1 about 3.1 times, pair 2 about 6.3 times, pair 3 about 9.4 times).",
            (),
        ),
        (
            _sinusoid_table(positions, i * right),
            "you removed π but kept the factor i//2: the first pair is still frozen at (0, 1).",
            (
                "What does the factor i//2 make of the rate of pair 0?",
                "Drop `np.arange(d_model) // 2 *` as well: the rate alone is 1 / 10000**(2i/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, right, swap=True),
            "your sin and cos columns are swapped: row 0 should start 0, 1, 0, 1, ... and yours starts 1, 0, 1, 0.",
            ("sin 0 = 0 and cos 0 = 1: which of the two belongs in column 0?", interleave),
        ),
        (
            _sinusoid_table(positions, right, layout="concatenated"),
            "you built the concatenated layout [all sines | all cosines] (tensor2tensor, the TensorFlow tutorial); "
            "the paper interleaves them.",
            ("Which columns do your sines fill, and which ones should they fill?", interleave),
        ),
        (
            _sinusoid_table(positions, base ** (-column / d_model)),
            "each column uses its own index j in the exponent (10000**(j/d_model)), so a sin/cos pair does not "
            "share one angle.",
            (
                "Columns 2i and 2i+1 are the two coordinates of one pendulum: should their angles differ?",
                "Use the pair's even index 2i in the exponent, 10000**(2*(j//2)/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (-i / d_model)),
            "the exponent uses i where the formula has 2i: 10000**(i/d_model) turns every pair too fast.",
            (
                "Print your exponents next to 2i/d_model for i = 0, 1, 2: where do they part?",
                "torch.arange(0, d_model, 2) already gives 2i; with arange(d_model // 2) multiply by 2.",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (-4 * i / d_model)),
            "the exponent is doubled (4i/d_model): every pair after the first turns too slowly.",
            (
                "Print your exponents next to 2i/d_model for i = 0, 1, 2: where do they part?",
                "arange(0, d_model, 2) already gives 2i: do not multiply it by 2 again.",
            ),
        ),
        (
            _sinusoid_table(positions, base ** (2 * i / d_model)),
            "the minus sign is missing: your frequencies grow to almost 10000 instead of shrinking to almost 1/10000.",
            (
                "Should the slow pairs be at the start or at the end of the row?",
                "div_term = exp(-2i·ln(10000)/d_model): the minus makes it 1/10000**(2i/d_model).",
            ),
        ),
        (
            _sinusoid_table(positions, np.exp(-2 * i * np.log10(base) / d_model)),
            "you used log10(10000) = 4 where the formula needs the natural log ln(10000) ≈ 9.21.",
            (
                "exp undoes the natural log, not log10: which log belongs inside exp(...)?",
                "Use math.log or np.log (natural), not math.log10 or np.log10.",
            ),
        ),
        (
            _sinusoid_table(positions + 1, right),
            "your positions start at 1; the formula counts from position 0 (row 0 is sin 0 = 0, cos 0 = 1, ...).",
            ("np.arange(n) gives 0 .. n-1: where does your 1 .. n come from?",),
        ),
    ]


def _near(value, table, target):
    """True when the table holds `target`, to float32 and `value`'s own rounding (allowed_error)."""
    return bool(np.all(np.abs(table - target) <= allowed_error(value, target, _FLOAT32_ERROR)))


def _diagnose(exercise, table, positions, d_model, what, value):
    """Compare a learner's table (rows = positions, right shape) with the reference; None if right, else a Feedback.

    value: what the learner returned (its dtype sets the rounding a right answer may carry).
    """
    reference = encodings.sinusoidal_encoding(np.asarray(positions, dtype=np.float64), d_model)
    if not np.all(np.isfinite(table)):
        return Feedback(exercise, False, f"{what} returned NaN or infinite values")
    if _near(value, table, reference):
        return None
    if not np.any(table):
        row = min(1, len(positions) - 1)  # position 1 shows every kind of column moving
        start = ", ".join(f"{value:.4f}" for value in reference[row, :4])
        return Feedback(
            exercise, False, f"{what} returned only zeros; at position {positions[row]:g} the row should start {start}"
        )
    for mistake, symptom, hints in _typical_mistakes(positions, d_model):
        if _near(value, table, mistake):
            return Feedback(exercise, False, symptom, hints)
    wrong = np.abs(table - reference) > allowed_error(value, reference, _FLOAT32_ERROR)
    row, column = np.argwhere(wrong)[0]
    kind = "sin" if column % 2 == 0 else "cos"
    return Feedback(
        exercise,
        False,
        f"first wrong value at position {positions[row]:g}, column {column} (a {kind} column, pair i={column // 2}) "
        f"with d_model={d_model}: expected {reference[row, column]:.4f}, got {table[row, column]:.4f}",
    )


_CHAPTER_HINTS = (
    "Look at line 1. It should compute each column's rate, 1 / 10000**(2i/d_model) with i = j // 2, and "
    "nothing more. What else multiplies the rate there?",
    "Line 1 multiplies the rate by np.arange(d_model) // 2 * np.pi: that is 0 for the first pair, which "
    "therefore never moves, and π·i for pair i. Remove both factors.",
    "Line 1, fixed (the rate and nothing more):\n"
    "    angle_rads = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))",
)


def check_chapter_fix(function, *, hint=0):
    """Grade `function(position, d_model) -> (d_model,)`, the book chapter's snippet, corrected (one row).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the corrected line).
    """
    return graded("spot the bug", _check_chapter_fix, function, _CHAPTER_HINTS, hint)


def _check_chapter_fix(function):
    exercise = "spot the bug"
    positions = np.array([0, 1, 2, 5, 13, 40, 99])
    for d_model in (8, 6, 20):
        rows, widest = [], None  # widest: the answer in the lowest precision
        for position in positions:
            value, failure = run_safely(exercise, function, int(position), d_model)
            if failure is not None:
                return failure
            row = as_numbers(value)
            if row is None or row.shape != (d_model,):
                got = describe(value) if row is None else f"shape {row.shape}"
                return Feedback(
                    exercise,
                    False,
                    f"your function must return one vector of shape ({d_model},) for d_model={d_model}, got {got}",
                )
            rows.append(row)
            if widest is None or np.all(allowed_error(value, 1.0, 0.0) > allowed_error(widest, 1.0, 0.0)):
                widest = value
        failure = _diagnose(exercise, np.stack(rows), positions, d_model, "your function", widest)
        if failure is not None:
            return failure
    return Feedback(
        exercise,
        True,
        "bug fixed: every pair now turns at its own frequency 10000**(-2i/d_model), and the first pair moves",
    )


# --- exercise 1: M(k) for the concatenated layout ----------------------------------------------

_ROTATION_HINTS = (
    "The concatenated row is the interleaved row with its entries in another order. If y = x[perm] and "
    "x' = M x, how do you write y' in terms of y?",
    "Reorder both the rows and the columns of pe_lib.relative_rotation(k, d_model) by the permutation that "
    "turns the interleaved layout into the concatenated one (the section on the two layouts).",
    "Rows and columns, by the same permutation:\n"
    "    perm = np.r_[0:d_model:2, 1:d_model:2]\n"
    "    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]",
)


def _concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return encodings.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def check_concatenated_rotation(function, *, hint=0):
    """Grade `function(k, d_model) -> (d_model, d_model)` with PE_c(p + k) = M @ PE_c(p), concatenated layout.

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("concatenated rotation", _check_concatenated_rotation, function, _ROTATION_HINTS, hint)


def _check_concatenated_rotation(function):
    exercise = "concatenated rotation"
    positions = np.arange(40)
    for k, d_model in ((3, 8), (1, 2), (-5, 16), (2.5, 10), (40, 64)):
        value, failure = run_safely(exercise, function, k, d_model)
        if failure is not None:
            return failure
        matrix = as_numbers(value)
        if matrix is None or matrix.shape != (d_model, d_model):
            got = describe(value) if matrix is None else f"shape {matrix.shape}"
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) matrix for d_model={d_model}, got {got}")
        if not np.isfinite(matrix).all():
            return Feedback(exercise, False, f"your matrix for k={k:g}, d_model={d_model} holds NaN or infinity")
        now = encodings.sinusoidal_encoding(positions, d_model, layout="concatenated")
        later = encodings.sinusoidal_encoding(positions + k, d_model, layout="concatenated")
        # A half-precision M rounds each entry; M @ PE(p) then carries up to that rounding of |M| @ |PE(p)|.
        reach = np.abs(now) @ np.abs(_concatenated_rotation(k, d_model)).T
        allowed = allowed_error(value, reach, _FLOAT32_ERROR)
        if np.all(np.abs(now @ matrix.T - later) <= allowed):
            continue
        where = f"(k={k:g}, d_model={d_model})"
        mistakes = (
            (
                encodings.relative_rotation(k, d_model),
                f"your matrix is the interleaved M(k) {where}: it turns the pairs (0, 1), (2, 3), ..., but in the "
                "concatenated layout column 0 pairs with column d_model/2",
                ("Which column holds the cosine partner of column 0 in the concatenated layout?",),
            ),
            (
                _concatenated_rotation(-k, d_model),
                f"your matrix moves {where} the other way: it maps PE(p) to PE(p - k)",
                ("A rotation's transpose is the rotation the other way: did you transpose somewhere?",),
            ),
        )
        for mistake, symptom, hints in mistakes:
            if _near(value, matrix, mistake):
                return Feedback(exercise, False, symptom, hints)
        error = float(np.abs(now @ matrix.T - later).max())
        return Feedback(
            exercise,
            False,
            f"M @ PE(p) is not PE(p + k) {where}: off by up to {error:.3f} over positions 0..39",
        )
    return Feedback(exercise, True, "PE(p + k) = M @ PE(p) in the concatenated layout, for every k and d_model tried")


# --- exercise 2: tensor2tensor's timing signal -------------------------------------------------


def _timing_signal(positions, d_model, max_timescale, *, steps=None, layout="concatenated", swap=False):
    """tensor2tensor's get_timing_signal_1d (min_timescale 1): rates 1 .. 1/max_timescale, [sin | cos]."""
    pairs = d_model // 2
    steps = max(pairs - 1, 1) if steps is None else steps
    rates = np.exp(-np.arange(pairs) * np.log(max_timescale) / steps)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rates
    first, second = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
    if layout == "interleaved":
        return np.stack([first, second], axis=-1).reshape(len(angles), d_model)
    return np.concatenate([first, second], axis=1)


_TIMING_HINTS = (
    "The d_model/2 rates form a geometric sequence: what are its first and its last term, and how many "
    "equal steps (on a log scale) lie between them?",
    "From 1 for the first pair down to exactly 1/max_timescale for the last: d_model/2 - 1 steps, so "
    "rate_i = max_timescale ** (-i / max(d_model/2 - 1, 1)) (one pair, d_model = 2, has no step: its rate is 1). "
    "The paper divides by d_model/2 instead, and its last rate misses 1/max_timescale. Sines of every pair "
    "first, then the cosines.",
    "In NumPy:\n"
    "    pairs = d_model // 2\n"
    "    rates = max_timescale ** (-np.arange(pairs) / max(pairs - 1, 1))\n"
    "    angles = np.arange(n)[:, None] * rates\n"
    "    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)",
)


_ONE_PAIR = ("With d_model = 2 there is one pair. Which rate does it get, and what does your formula divide by there?",)


def check_timing_signal(function, *, hint=0):
    """Grade `function(n, d_model, max_timescale=1e4) -> (n, d_model)`, tensor2tensor's variant (even d_model).

    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded("timing signal", _check_timing_signal, function, _TIMING_HINTS, hint)


def _check_timing_signal(function):
    exercise = "timing signal"
    # d_model = 2 last: one pair, no step between rates (d_model/2 - 1 = 0; tensor2tensor divides by max(., 1))
    for n, d_model, max_timescale in ((50, 16, 1e4), (9, 6, 1e4), (1, 4, 1e4), (120, 8, 100.0), (97, 64, 1e4),
                                      (7, 2, 1e4)):  # fmt: skip
        value, failure = run_safely(exercise, function, n, d_model, max_timescale)
        if failure is not None and d_model == 2 and "ZeroDivisionError" in failure.message:
            return Feedback(exercise, False, f"for d_model = 2 (one pair, so d_model/2 - 1 = 0) {failure.message}",
                            _ONE_PAIR)  # fmt: skip
        if failure is not None:
            return failure
        table, positions = as_numbers(value), np.arange(n)
        where = f"timing_signal({n}, {d_model}, {max_timescale:g})"
        if table is None or table.shape != (n, d_model):
            got = describe(value) if table is None else f"shape {table.shape}"
            return Feedback(exercise, False, f"{where} must return shape ({n}, {d_model}), got {got}")
        if not np.isfinite(table).all():
            if d_model == 2:
                return Feedback(
                    exercise,
                    False,
                    f"{where} returned NaN or infinite values: with one pair there is no step between a first and "
                    "a last rate (d_model/2 - 1 = 0), and 0 / 0 is NaN",
                    _ONE_PAIR,
                )
            return Feedback(exercise, False, f"{where} returned NaN or infinite values")
        reference = _timing_signal(positions, d_model, max_timescale)
        if _near(value, table, reference):
            continue
        pairs = d_model // 2
        last = f"exactly 1/max_timescale = {1 / max_timescale:.3g}"
        mistakes = (
            (
                _timing_signal(positions, d_model, max_timescale, steps=pairs),
                f"{where}: your rates follow the paper, max_timescale**(-2i/d_model); the last pair should turn at "
                f"{last} rad per position, yours at {max_timescale ** (-(pairs - 1) / pairs):.3g}",
                ("How many steps lie between the first rate and the last, for d_model/2 rates?",),
            ),
            (
                _timing_signal(positions, d_model, 1e4) if max_timescale != 1e4 else None,
                f"{where}: your rates ignore max_timescale (you used 10000)",
                ("Which argument sets the slowest rate?",),
            ),
            (
                _timing_signal(positions, d_model, max_timescale, layout="interleaved"),
                f"{where}: you interleaved sin and cos (the paper's layout); tensor2tensor puts every sine first",
                ("Look at row 0: where should its zeros (the sines of angle 0) be?",),
            ),
            (
                _timing_signal(positions, d_model, max_timescale, swap=True),
                f"{where}: the halves are swapped: row 0 should start with zeros (the sines) and end with ones",
                ("sin 0 = 0 and cos 0 = 1: which half does row 0 start with?",),
            ),
        )
        for mistake, symptom, hints in mistakes:
            if mistake is not None and _near(value, table, mistake):
                return Feedback(exercise, False, symptom, hints)
        if not np.any(table):
            return Feedback(exercise, False, f"{where} returned only zeros")
        row, column = np.argwhere(np.abs(table - reference) > allowed_error(value, reference, _FLOAT32_ERROR))[0]
        return Feedback(
            exercise,
            False,
            f"{where}: first wrong value at position {row}, column {column}: expected "
            f"{reference[row, column]:.4f}, got {table[row, column]:.4f}",
        )
    return Feedback(
        exercise,
        True,
        "your table matches tensor2tensor's timing signal: the last pair turns at exactly 1/max_timescale",
    )
