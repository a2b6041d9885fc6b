"""Checkers that grade a learner's answer and say what to look at when it is wrong.

Each `check_*` function runs the learner's code on inputs it has not seen, compares with the
library's reference, recognises typical mistakes, and returns a `Feedback` that prints as one
line: "Correct: ..." or "Not yet: <hint>". `bool(feedback)` tells right from wrong.
"""

from dataclasses import dataclass

import numpy as np

from . import encodings


@dataclass(frozen=True)
class Feedback:
    """The verdict on one exercise: passed or not, and the message for the learner."""

    exercise: str
    passed: bool
    message: str

    def __bool__(self):
        return self.passed

    def __str__(self):
        verdict = "Correct" if self.passed else "Not yet"
        return f"[{self.exercise}] {verdict}: {self.message}"

    def __repr__(self):
        return str(self)


def _run(exercise, function, *args, **kwargs):
    """Call the learner's function; return (value, None) or (None, Feedback) if it raised."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # the learner's code may raise anything; report it as a hint
        return None, Feedback(exercise, False, f"your function raised {type(error).__name__}: {error}")


# --- Notebook 03: the sinusoidal encoding ---

_TOLERANCE = 1e-3  # lets a float32 (torch) answer pass; every typical mistake is off by far more


def _as_array(value):
    """A learner's result (NumPy array, torch tensor, list) as a float64 array, or None."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return array


def _sinusoid_table(positions, rates, *, swap=False, layout="interleaved"):
    """A table with angle p * rates[j] in column j; sin in even columns and cos in odd ones (swapped if swap)."""
    angles = np.asarray(positions, dtype=np.float64)[:, None] * rates
    even = np.arange(rates.size) % 2 == 0
    table = np.where(even != swap, np.sin(angles), np.cos(angles))
    if layout == "concatenated":
        table = np.concatenate([table[:, 0::2], table[:, 1::2]], axis=1)
    return table


def _typical_mistakes(positions, d_model, base=10000.0):
    """(table, hint) for the usual ways a sinusoidal table goes wrong, most specific first."""
    column = np.arange(d_model)
    i = column // 2  # the pair index of each column
    right = base ** (-2 * i / d_model)
    positions = np.asarray(positions, dtype=np.float64)
    return [
        (
            _sinusoid_table(positions, np.pi * i * right),
            "your angles are still multiplied by π·(i//2), the seed's `np.arange(d_model) // 2 * np.pi` factor: "
            "columns 0 and 1 never change (always 0 and 1) and every other pair turns π·i times too fast. "
            "The angle of pair i is just pos / 10000**(2i/d_model).",
        ),
        (
            _sinusoid_table(positions, i * right),
            "you removed π but kept the factor i//2: the first pair is still frozen at (0, 1). "
            "Drop `np.arange(d_model) // 2 *` as well.",
        ),
        (
            _sinusoid_table(positions, right, swap=True),
            "your sin and cos columns are swapped: column 2i must hold the sine, column 2i+1 the cosine "
            "(row 0 should start 0, 1, 0, 1, ...).",
        ),
        (
            _sinusoid_table(positions, right, layout="concatenated"),
            "you built the concatenated layout [all sines | all cosines] (tensor2tensor, the TensorFlow tutorial); "
            "the paper interleaves them: column 2i = sin, column 2i+1 = cos of the same angle.",
        ),
        (
            _sinusoid_table(positions, base ** (-column / d_model)),
            "each column uses its own index j in the exponent (10000**(j/d_model)); a sin/cos pair must share "
            "one angle: use the pair's even index 2i, i.e. 10000**(2*(j//2)/d_model).",
        ),
        (
            _sinusoid_table(positions, base ** (-i / d_model)),
            "the exponent uses i where the formula has 2i: 10000**(i/d_model) turns every pair too fast. "
            "torch.arange(0, d_model, 2) already gives 2i; with arange(d_model // 2) multiply by 2.",
        ),
        (
            _sinusoid_table(positions, base ** (-4 * i / d_model)),
            "the exponent is doubled (4i/d_model): arange(0, d_model, 2) already gives 2i, do not multiply it "
            "by 2 again.",
        ),
        (
            _sinusoid_table(positions, base ** (2 * i / d_model)),
            "the minus sign is missing: div_term = exp(-2i·ln(10000)/d_model); without it the frequencies grow "
            "to almost 10000 instead of shrinking to almost 1/10000.",
        ),
        (
            _sinusoid_table(positions, np.exp(-2 * i * np.log10(base) / d_model)),
            "you used log10(10000) = 4 where the formula needs the natural log ln(10000) ≈ 9.21 (math.log, np.log).",
        ),
        (
            _sinusoid_table(positions + 1, right),
            "your positions start at 1; the formula counts from position 0 (row 0 is sin 0 = 0, cos 0 = 1, ...).",
        ),
    ]


def _diagnose(exercise, table, positions, d_model, what):
    """Compare a learner's table (rows = positions) with the reference; Feedback with a specific hint."""
    reference = encodings.sinusoidal_encoding(np.asarray(positions, dtype=np.float64), d_model)
    if table is None:
        return Feedback(exercise, False, f"{what} must return numbers (a NumPy array or a torch tensor)")
    if table.shape != reference.shape:
        if table.shape == reference.shape[::-1]:
            return Feedback(
                exercise,
                False,
                f"{what} returned shape {table.shape}: rows must be positions and "
                f"columns dimensions, expected {reference.shape} (transpose it)",
            )
        return Feedback(exercise, False, f"{what} returned shape {table.shape}, expected {reference.shape}")
    if not np.all(np.isfinite(table)):
        return Feedback(exercise, False, f"{what} returned NaN or infinite values")
    if np.allclose(table, reference, atol=_TOLERANCE, rtol=0):
        return None
    if not np.any(table):
        return Feedback(
            exercise,
            False,
            f"{what} returned zeros: fill columns 0::2 with sin(pos * div_term) and "
            "columns 1::2 with cos(pos * div_term)",
        )
    for mistake, hint in _typical_mistakes(positions, d_model):
        if np.allclose(table, mistake, atol=_TOLERANCE, rtol=0):
            return Feedback(exercise, False, hint)
    wrong = np.abs(table - reference) > _TOLERANCE
    row, column = np.argwhere(wrong)[0]
    kind = "sin" if column % 2 == 0 else "cos"
    return Feedback(
        exercise,
        False,
        f"first wrong value at position {positions[row]:g}, column {column} (a {kind} column, pair i={column // 2}) "
        f"with d_model={d_model}: expected {reference[row, column]:.4f}, got {table[row, column]:.4f}",
    )


def check_sinusoidal_table(function):
    """Grade `function(n, d_model) -> (n, d_model)`, the paper's encoding of positions 0..n-1 (even d_model)."""
    exercise = "sinusoidal table"
    for n, d_model in ((50, 16), (9, 6), (97, 64)):
        value, failure = _run(exercise, function, n, d_model)
        if failure is not None:
            return failure
        failure = _diagnose(exercise, _as_array(value), np.arange(n), d_model, f"sinusoidal_table({n}, {d_model})")
        if failure is not None:
            return failure
    return Feedback(exercise, True, "your table matches pe_lib.sinusoidal_encoding for several n and d_model")


def check_seed002_fix(function):
    """Grade `function(position, d_model) -> (d_model,)`, the corrected seed-002 snippet (one row)."""
    exercise = "spot the bug"
    positions = np.array([0, 1, 2, 5, 13, 40, 99])
    for d_model in (8, 20):
        rows = []
        for position in positions:
            value, failure = _run(exercise, function, int(position), d_model)
            if failure is not None:
                return failure
            row = _as_array(value)
            if row is None or row.shape != (d_model,):
                got = "no numbers" if row is None else f"shape {row.shape}"
                return Feedback(
                    exercise,
                    False,
                    f"your function must return one vector of shape ({d_model},) for d_model={d_model}, got {got}",
                )
            rows.append(row)
        failure = _diagnose(exercise, np.stack(rows), positions, d_model, "your function")
        if failure is not None:
            return failure
    return Feedback(
        exercise,
        True,
        "bug fixed: every pair now turns at its own frequency 10000**(-2i/d_model), and the first pair moves",
    )


def check_layout_permutation(function):
    """Grade `function(d_model) -> perm` with interleaved[:, perm] == concatenated for every position."""
    exercise = "layout permutation"
    for d_model in (8, 10, 64):
        value, failure = _run(exercise, function, d_model)
        if failure is not None:
            return failure
        perm = _as_array(value)
        if perm is None or perm.shape != (d_model,):
            got = "no numbers" if perm is None else f"shape {perm.shape}"
            return Feedback(exercise, False, f"return one column index per dimension, shape ({d_model},), got {got}")
        if not np.array_equal(np.sort(perm), np.arange(d_model)):
            return Feedback(
                exercise,
                False,
                f"for d_model={d_model} your indices are not a permutation of "
                f"0..{d_model - 1}: each column must appear exactly once",
            )
        perm = perm.astype(int)
        interleaved = encodings.sinusoidal_encoding(12, d_model)
        concatenated = encodings.sinusoidal_encoding(12, d_model, layout="concatenated")
        if np.allclose(interleaved[:, perm], concatenated):
            continue
        if np.allclose(concatenated[:, perm], interleaved):
            return Feedback(
                exercise,
                False,
                "that permutation goes the other way: concatenated[:, perm] gives the "
                "interleaved table. You need interleaved[:, perm] == concatenated "
                "(hint: first all even columns, then all odd ones).",
            )
        return Feedback(
            exercise,
            False,
            f"for d_model={d_model}, interleaved[:, perm] is not the concatenated "
            "table: its first half must be the sin columns 0, 2, 4, ..., its second half the cos "
            "columns 1, 3, 5, ...",
        )
    return Feedback(
        exercise,
        True,
        "interleaved[:, perm] == concatenated: the two layouts are one fixed permutation of columns apart",
    )


# --- Notebook 02: naive encodings ---


def _binary_reference(positions, d_model):
    """Bits of each position, least significant first: (len(positions), d_model) of 0/1."""
    import numpy as np

    return ((np.asarray(positions)[:, None] >> np.arange(d_model)) & 1).astype(float)


def _binary_mistake(table, n, d_model):
    """A hint for a binary table that is not the reference, or None if it is right."""
    import numpy as np

    reference = _binary_reference(np.arange(n), d_model)
    if table.shape != (n, d_model):
        if table.shape == (d_model, n):
            return f"your table has shape {table.shape}: rows are positions, columns are bits, so (n, d_model)"
        if table.ndim == 2 and table.shape[1] == d_model and abs(table.shape[0] - n) == 1:
            return (
                f"for n={n} your table has {table.shape[0]} rows: off by one. Positions are 0..n-1, "
                "that is n rows (np.arange(n))"
            )
        return f"for n={n}, d_model={d_model} the table must have shape {(n, d_model)}, got {table.shape}"
    if np.array_equal(table, reference):
        return None
    if np.array_equal(table, reference[:, ::-1]) or any(
        np.array_equal(table[:, :w], reference[:, :w][:, ::-1]) and not table[:, w:].any() for w in range(2, d_model)
    ):
        return (
            "you wrote the most significant bit first. Column j must hold bit j counted from the right, "
            "(p >> j) & 1, so column 0 flips at every step (np.binary_repr and format(p, 'b') read the other way)"
        )
    if n > 1 and np.array_equal(table, _binary_reference(np.arange(1, n + 1), d_model)):
        return "your first row encodes position 1: positions start at 0, so the first row is all zeros"
    if np.array_equal(table, 2 * reference - 1):
        return "use bits 0 and 1, not -1 and +1"
    if not np.isin(table, (0, 1)).all():
        return "every entry must be 0 or 1: take the lowest bit after shifting, (p >> j) & 1, not p >> j alone"
    if d_model > 1 and n > 2 and np.array_equal(table, np.repeat(reference[:, :1], d_model, axis=1)):
        return "every column holds bit 0 (p % 2): shift p right by j before taking the lowest bit of column j"
    row = int(np.argmax(np.any(table != reference, axis=1)))
    got = table[row].astype(int).tolist()
    return f"row {row} (position {row}) should be {reference[row].astype(int).tolist()}, got {got}"


def check_binary_encoding(binary_encoding):
    """Grade binary_encoding(n, d_model) -> (n, d_model): column j = bit j of p, least significant first.

    Also: n = 2**d_model positions still fit; n > 2**d_model must raise ValueError.
    """
    import numpy as np

    name = "binary_encoding"
    for n, d_model in ((6, 3), (13, 5), (16, 4), (1, 2), (40, 7)):
        value, failed = _run(name, binary_encoding, n, d_model)
        if failed:
            return Feedback(name, False, f"for n={n}, d_model={d_model} {failed.message}")
        try:
            table = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return Feedback(name, False, f"return a NumPy array of 0s and 1s, got {type(value).__name__}")
        hint = _binary_mistake(table, n, d_model)
        if hint:
            return Feedback(name, False, hint)
    try:
        binary_encoding(9, 3)
    except ValueError:
        return Feedback(name, True, "bits least significant first, n rows, and a clear error when n > 2**d_model")
    except Exception as error:  # the learner's code may raise anything; name it in the hint
        raised = type(error).__name__
        return Feedback(name, False, f"for n=9, d_model=3 raise ValueError (too many positions), not {raised}")
    return Feedback(
        name,
        False,
        "for n=9, d_model=3 you returned a table, but position 8 = 0b1000 needs 4 bits, so its row "
        "repeats position 0. Raise ValueError when n > 2**d_model",
    )


def check_bit_flips(bit_flips):
    """Grade bit_flips(p) -> int: how many bits differ between the binary codes of p and p + 1."""
    name = "bit_flips"
    positions = [*range(0, 70), 127, 255, 1000, 1023, 4095, 65_535]
    answers = {}
    for p in positions:
        value, failed = _run(name, bit_flips, p)
        if failed:
            return Feedback(name, False, f"bit_flips({p}): {failed.message}")
        try:
            answers[p] = int(value)
        except (TypeError, ValueError):
            return Feedback(name, False, f"bit_flips({p}) must return an int, got {value!r}")
        if answers[p] != value:
            return Feedback(name, False, f"bit_flips({p}) must return a whole number, got {value!r}")

    def ones(x):
        return bin(x).count("1")

    right = {p: ones(p ^ (p + 1)) for p in positions}
    if answers == right:
        return Feedback(name, True, "7 -> 8 flips 4 bits, 8 -> 9 flips 1: counted with XOR")
    if all(answers[p] == ones(p + 1) - ones(p) for p in positions) or all(
        answers[p] == abs(ones(p + 1) - ones(p)) for p in positions
    ):
        return Feedback(
            name,
            False,
            "you compared how many 1s p and p+1 have. 7 = 0b111 and 8 = 0b1000 differ by two 1s, yet all 4 bits "
            "flip: compare bit by bit, e.g. count the 1s of p ^ (p + 1)",
        )
    if all(answers[p] == (ones((p - 1) ^ p) if p else 0) for p in positions):
        return Feedback(name, False, "you counted the flips from p - 1 to p; the step asked for is p -> p + 1")
    if all(answers[p] == right[p] - 1 for p in positions):
        return Feedback(
            name, False, "one short every time: the trailing 1s of p turn to 0, and the 0 above them turns to 1 too"
        )
    wrong = next(p for p in positions if answers[p] != right[p])
    return Feedback(
        name, False, f"bit_flips({wrong}) should be {right[wrong]} ({wrong:b} -> {wrong + 1:b}), got {answers[wrong]}"
    )
