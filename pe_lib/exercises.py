"""Checkers that grade a learner's answer and say what to look at when it is wrong.

Each `check_*` function runs the learner's code on inputs it has not seen, compares with the
library's reference, recognises typical mistakes, and returns a `Feedback` that prints as one
line: "Correct: ..." or "Not yet: <hint>". `bool(feedback)` tells right from wrong.
"""

from dataclasses import dataclass

import numpy as np
import torch

from . import attention, encodings, experiments, modules


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
    """Call the learner's function; return (value, None) or (None, Feedback) if it raised.

    Test the failure with `is not None`: a failed Feedback is falsy.
    """
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # the learner's code may raise anything; report it as a hint
        return None, Feedback(exercise, False, f"your function raised {type(error).__name__}: {error}")


# --- Notebook 03: the sinusoidal encoding ---

_TABLE_TOLERANCE = 1e-3  # lets a float32 (torch) answer pass; every typical mistake is off by far more


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
            "columns 0 and 1 never change (always 0 and 1), and the other pairs turn too fast (pair i by a factor "
            "π·i). Look at line 1: what multiplies the rate 1 / 10000**(2i/d_model)? The rate should be nothing "
            "more than that.",
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
    if np.allclose(table, reference, atol=_TABLE_TOLERANCE, rtol=0):
        return None
    if not np.any(table):
        return Feedback(
            exercise,
            False,
            f"{what} returned zeros: fill columns 0::2 with sin(pos * div_term) and "
            "columns 1::2 with cos(pos * div_term)",
        )
    for mistake, hint in _typical_mistakes(positions, d_model):
        if np.allclose(table, mistake, atol=_TABLE_TOLERANCE, rtol=0):
            return Feedback(exercise, False, hint)
    wrong = np.abs(table - reference) > _TABLE_TOLERANCE
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
        if failed is not None and n == 2**d_model:
            return Feedback(
                name,
                False,
                f"n={n} positions (0..{n - 1}) still fit in d_model={d_model} bits; "
                f"raise only when n > 2**d_model ({failed.message})",
            )
        if failed is not None:
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
        if failed is not None:
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


# --- Notebook 04: the pendulum intuition ---


def _cos_sum(k, d_model, base, *, terms=None, exponent=2.0, wave=np.cos):
    """sum over i < terms of wave(k * base**(-exponent * i / d_model)); terms defaults to the d_model/2 pairs."""
    i = np.arange(d_model // 2 if terms is None else terms)
    return float(wave(k * base ** (-exponent * i / d_model)).sum())


def _one_number(exercise, value):
    """(float, None) when value is a single real number, else (None, Feedback that says what to return)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None, Feedback(exercise, False, f"return a number (a float), got {type(value).__name__}")
    if array.size != 1:
        return None, Feedback(
            exercise,
            False,
            f"return one number, got an array of shape {array.shape}: add up the pairs' shares with np.sum",
        )
    return float(array.reshape(())), None


def _offset_similarity_hint(value, k, d_model, base):
    """Name the typical mistake that produces `value` for PE(p)·PE(p+k)."""

    def matches(candidate):
        return bool(np.isclose(value, candidate, rtol=1e-6, atol=1e-6))

    if matches(2 * _cos_sum(k, d_model, base)):
        return (
            "twice the right answer: each sin/cos pair adds ONE term, sin·sin + cos·cos = cos(w_i k),"
            " so there are d_model/2 terms, not d_model"
        )
    if matches(_cos_sum(k, d_model, base, terms=d_model)) or matches(
        _cos_sum(k, d_model, base, terms=d_model, exponent=1)
    ):
        return "you summed over d_model frequencies; there are only d_model/2 pairs, i = 0 .. d_model/2 - 1"
    if matches(_cos_sum(k, d_model, base, exponent=1)):
        return "check the frequencies: w_i = base**(-2i/d_model), with the factor 2 (pe_lib.frequencies gives them)"
    if matches(_cos_sum(k, d_model, base, wave=np.sin)):
        return (
            "use cos, not sin: sin(a)sin(b) + cos(a)cos(b) = cos(b - a), so pair i adds cos(w_i k);"
            " at k = 0 the answer must be d_model/2"
        )
    if base != 10000.0 and matches(_cos_sum(k, d_model, 10000.0)):
        return "you ignored the base argument: the frequencies are base**(-2i/d_model)"
    if matches(d_model / 2):
        return "your answer does not change with k: pair i adds cos(w_i k), which is 1 only at k = 0"
    return (
        "pair i adds sin(w_i p)sin(w_i (p+k)) + cos(w_i p)cos(w_i (p+k)) = cos(w_i k);"
        " sum that over the d_model/2 pairs, with w_i = base**(-2i/d_model)"
    )


def check_offset_similarity(learner_function):
    """Grade `learner_function(k, d_model, base)`: PE(p)·PE(p+k) in closed form, one number (even d_model).

    The reference is the dot product of two rows of pe_lib.sinusoidal_encoding.
    """
    exercise = "offset similarity"
    cases = [(3, 16, 1e4), (0, 64, 1e4), (1, 64, 1e4), (-7, 64, 1e4), (250, 100, 1e4), (5, 32, 100.0), (12.5, 8, 1e3)]
    for k, d_model, base in cases:
        rows = encodings.sinusoidal_encoding(
            np.array([11, 11 + k]), d_model, base=base
        )  # any p: the answer does not depend on it
        expected = float(rows[0] @ rows[1])
        value, failure = _run(exercise, learner_function, k, d_model, base)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        value, failure = _one_number(exercise, value)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        if not np.isclose(value, expected, rtol=1e-6, atol=1e-6):
            hint = _offset_similarity_hint(value, k, d_model, base)
            case = f"k={k:g}, d_model={d_model}, base={base:g}: expected {expected:.4f}, got {value:.4f}"
            return Feedback(exercise, False, f"{hint} ({case})")
    return Feedback(
        exercise,
        True,
        "PE(p)·PE(p+k) = sum over the d_model/2 pairs of cos(w_i k): it depends only on k and is d_model/2 at k = 0",
    )


def check_look_back(learner_function):
    """Grade `learner_function(k, d_model)` -> W_k of shape (d_model, d_model).

    With W_q = identity, the score of query p for key q is PE(p)·(PE(q) W_k) (row vectors);
    it must be largest at q = p - k: a head that looks k positions back.
    """
    exercise = "look back"
    n = 48
    for d_model, k in [(16, 1), (64, 3), (32, 5), (64, 10)]:
        weights, failure = _run(exercise, learner_function, k, d_model)
        if failure is not None:  # a Feedback that did not pass is falsy
            return failure
        try:
            weights = np.asarray(weights, dtype=float)
        except (TypeError, ValueError):
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) array, got {type(weights).__name__}")
        if weights.shape != (d_model, d_model):
            return Feedback(exercise, False, f"return a ({d_model}, {d_model}) matrix, got shape {weights.shape}")
        if not np.isfinite(weights).all():
            return Feedback(exercise, False, "your matrix contains NaN or infinity")
        encoding = encodings.sinusoidal_encoding(n, d_model)
        scores = encoding @ (encoding @ weights).T  # row p: the query at p; column q: the key at q
        rows = np.arange(k, n - k)
        peaks = scores[rows].argmax(axis=1) - rows
        if np.all(peaks == -k):
            continue
        offsets, counts = np.unique(peaks, return_counts=True)
        typical = int(offsets[counts.argmax()])
        where = "q = p" if typical == 0 else f"q = p {'+' if typical > 0 else '-'} {abs(typical)}"
        case = f"(k={k}, d_model={d_model}: the scores peak at {where}, wanted q = p - {k})"
        if typical == k:
            hint = (
                "your head looks k positions AHEAD: the key is rotated the wrong way."
                " Rotate by -k: relative_rotation(-k), which equals relative_rotation(k).T"
            )
        elif typical == 0:
            hint = (
                "your head attends to its own position: without a rotation the dot product cannot tell"
                " before from after. Rotate the keys so that PE(q) W_k lines up with PE(q + k)"
            )
        else:
            hint = (
                "the score is PE(p)·(W_k^T PE(q)) in column-vector form; choose W_k so that W_k^T PE(q) = PE(q + k),"
                " i.e. W_k^T = relative_rotation(k)"
            )
        return Feedback(exercise, False, f"{hint} {case}")
    return Feedback(
        exercise,
        True,
        "W_k = relative_rotation(-k) turns each key k positions forward, so query p meets its best match at q = p - k",
    )


# --- Notebook 05: learned versus fixed ---


def _cosine_matrix(table, axis=1):
    """Cosines of the rows (axis=1) or, a typical mistake, of the table normalised along columns (axis=0)."""
    unit = table / np.linalg.norm(table, axis=axis, keepdims=True)
    return unit @ unit.T


def _offset_means(matrix, reduce=np.mean):
    return np.array([reduce(np.diagonal(matrix, k)) for k in range(matrix.shape[0])])


def _similarity_mistakes(table):
    """(result, hint) for the usual ways a similarity-by-offset curve goes wrong."""
    n = table.shape[0]
    cosine = _cosine_matrix(table)
    cyclic = np.array([np.mean([cosine[p, (p + k) % n] for p in range(n)]) for k in range(n)])
    return [
        (
            _offset_means(table @ table.T),
            "these are mean dot products, not cosines: divide each row by its length first "
            "(row / np.linalg.norm(row)), so that long rows do not count more and offset 0 gives 1",
        ),
        (
            _offset_means(_cosine_matrix(table, axis=0)),
            "you normalised the columns (axis=0); each ROW is a position vector: use "
            "np.linalg.norm(table, axis=1, keepdims=True)",
        ),
        (
            cosine[0],
            "this is the similarity of position 0 to position k only; average over every pair (p, p + k), "
            "i.e. the mean of the k-th diagonal: np.diagonal(similarity, k).mean()",
        ),
        (
            cyclic,
            "you wrapped around the end (np.roll pairs the last rows with the first ones); "
            "only pairs (p, p + k) with p + k < n exist: np.diagonal(similarity, k)",
        ),
        (
            _offset_means(cosine, np.sum),
            "you summed the k-th diagonal; take its mean, since offset k has n - k pairs and a sum favours small k",
        ),
    ]


def check_similarity_by_offset(learner_function):
    """Grade `learner_function(table) -> (n,)`: entry k = mean cosine similarity of rows p and p + k of table (n, d).

    The reference is pe_lib.experiments.similarity_by_offset.
    """
    exercise = "similarity by offset"
    rng = np.random.default_rng(20240605)
    scaled = rng.normal(size=(12, 6)) * rng.uniform(0.2, 3.0, size=(12, 1)) + 0.7  # rows of unequal length
    for table in (scaled, encodings.sinusoidal_encoding(40, 16) * 3.0, rng.normal(size=(9, 20))):
        value, failure = _run(exercise, learner_function, table.copy())
        if failure is not None:
            return failure
        result = _as_array(value)
        reference = experiments.similarity_by_offset(table)
        n = table.shape[0]
        if result is None:
            return Feedback(exercise, False, "return numbers: one mean cosine per offset k = 0 .. n - 1")
        result = result.reshape(-1) if result.size == result.shape[0] else result
        if result.shape != reference.shape:
            if result.shape == (n - 1,) and np.allclose(result, reference[1:], atol=1e-6):
                return Feedback(
                    exercise, False, f"start at offset k = 0 (where the similarity is 1): expected {n} values"
                )
            if result.shape == (table.shape[1],):
                return Feedback(
                    exercise,
                    False,
                    f"got {table.shape[1]} values, one per column: rows are positions, "
                    f"so there are {n} offsets 0..{n - 1}",
                )
            return Feedback(
                exercise,
                False,
                f"for a table of {n} rows return {n} values (offsets 0..{n - 1}), got shape {result.shape}",
            )
        if np.allclose(result, reference, atol=1e-6):
            continue
        for mistake, hint in _similarity_mistakes(table):
            if np.allclose(result, mistake, atol=1e-6):
                return Feedback(exercise, False, hint)
        k = int(np.argmax(np.abs(result - reference)))
        return Feedback(
            exercise,
            False,
            f"for a ({n}, {table.shape[1]}) table, offset k={k}: expected {reference[k]:.4f}, got {result[k]:.4f}; "
            "the recipe: normalise the rows, similarity = unit @ unit.T, then the mean of each diagonal k",
        )
    return Feedback(
        exercise,
        True,
        "normalise the rows, take all cosines, average each diagonal: 1 at offset 0, then how fast similarity decays",
    )


def check_shift_targets(learner_function):
    """Grade `learner_function(tokens, k) -> targets`: tokens (batch, seq) int64; targets[:, i] = tokens[:, i - k].

    Positions i < k have no target and must hold pe_lib.experiments.IGNORE (-100), which the
    loss skips. The reference is pe_lib.experiments.task_targets(tokens, "shift", shift=k).
    """
    exercise = "shift targets"
    ignore = experiments.IGNORE
    generator = torch.Generator().manual_seed(605)
    for k, shape in ((2, (3, 9)), (4, (2, 11)), (1, (1, 5))):
        tokens = torch.randint(0, 20, shape, generator=generator)
        original = tokens.clone()
        value, failure = _run(exercise, learner_function, tokens, k)
        if failure is not None:
            return failure
        if not torch.equal(tokens, original):
            return Feedback(
                exercise, False, "your function changed the tokens in place: build a new tensor for the targets"
            )
        result = _as_array(value)
        reference = experiments.task_targets(original, "shift", shift=k).numpy()
        if result is None or result.shape != reference.shape:
            got = "no numbers" if result is None else f"shape {result.shape}"
            return Feedback(
                exercise, False, f"return targets of the same shape as the tokens {tuple(shape)}, got {got}"
            )
        if np.array_equal(result, reference):
            continue
        tokens_np = original.numpy()
        body = result[:, k:]
        ahead = np.full_like(reference, ignore)
        ahead[:, : shape[1] - k] = tokens_np[:, k:]
        if np.array_equal(body, reference[:, k:]):
            filled = result[0, 0]
            if np.array_equal(result[:, :k], np.roll(tokens_np, k, axis=1)[:, :k]):
                hint = "the first k positions got tokens from the END of the sequence (torch.roll wraps around)"
            else:
                hint = f"the first k positions hold {filled:g}"
            return Feedback(
                exercise,
                False,
                f"{hint}; they have no token k places earlier, so they must be IGNORE = {ignore} "
                "(the loss skips those)",
            )
        if np.array_equal(result, ahead) or np.array_equal(result[:, : shape[1] - k], tokens_np[:, k:]):
            return Feedback(
                exercise,
                False,
                "you shifted the wrong way: position i must predict the token k places EARLIER, tokens[:, i - k], "
                "not tokens[:, i + k]",
            )
        for wrong in (k - 1, k + 1):
            if 0 < wrong < shape[1] and np.array_equal(result[:, wrong:], tokens_np[:, : shape[1] - wrong]):
                return Feedback(exercise, False, f"off by one: your targets copy from {wrong} places back, not k={k}")
        return Feedback(
            exercise,
            False,
            f"for k={k}: expected targets[:, {k}:] = tokens[:, :-{k}] and targets[:, :{k}] = {ignore}",
        )
    return Feedback(exercise, True, "targets[:, k:] = tokens[:, :-k], and the first k positions are IGNORE")


# --- Notebook 01: the order problem ---


def _as_matrix(value):
    """The learner's answer as a float array, or None if it is not numeric."""
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return None


def check_permutation_matrix(permutation_matrix):
    """Grade `permutation_matrix(order) -> P`, the (n, n) matrix with P @ x == x[order].

    Row i of P picks row order[i] of x: P[i, order[i]] = 1, every other entry 0. Orders with
    3-cycles are used, so the transpose (which undoes the permutation) is caught.
    """
    exercise = "permutation matrix"
    orders = [[2, 0, 1], [1, 3, 0, 2], [0, 1, 2, 3], [3, 0, 4, 1, 2], [0]]
    x = np.random.default_rng(101).normal(size=(5, 3))
    for order in orders:
        n = len(order)
        value, failure = _run(exercise, permutation_matrix, list(order))
        if failure is not None:
            return failure
        matrix = _as_matrix(value)
        if matrix is None or matrix.ndim == 0:
            return Feedback(exercise, False, f"return the matrix P as a NumPy array, got {value!r} for order={order}")
        expected = np.eye(n)[order]
        if matrix.shape != (n, n):
            hint = f"for order={order}, P must have shape ({n}, {n}), got {matrix.shape}"
            if matrix.ndim == 1:
                hint += " (a 1-D answer is an order, not a matrix: put a 1 in row i, column order[i])"
            return Feedback(exercise, False, hint)
        if np.allclose(matrix, expected):
            continue
        if np.allclose(matrix, expected.T):
            return Feedback(
                exercise,
                False,
                f"for order={order} your P is transposed: it sends row i to place order[i], the inverse "
                f"permutation. P @ x must equal x[order], so row i of P picks row order[i]: P[i, order[i]] = 1",
            )
        if np.allclose(matrix, np.eye(n)):
            return Feedback(exercise, False, f"for order={order} you returned the identity: P @ x would be x unchanged")
        binary = np.isin(matrix, (0.0, 1.0)).all()
        if not (binary and (matrix.sum(axis=1) == 1).all() and (matrix.sum(axis=0) == 1).all()):
            return Feedback(
                exercise,
                False,
                f"for order={order} P is not a permutation matrix: every row and every column needs exactly one 1, "
                f"zeros elsewhere",
            )
        moved = (matrix @ x[:n]).round(3)
        return Feedback(
            exercise,
            False,
            f"for order={order} P @ x puts the rows in the wrong order (row 0 of P @ x should be row {order[0]} of "
            f"x; yours has row {int(np.argmax(matrix[0]))} there, {moved[0].tolist()})",
        )
    return Feedback(exercise, True, "P @ x == x[order] for every order tried, including 3-cycles and the identity")


def _equivariance_cases():
    """(name, function, order, expected answer, why) for check_equivariance_test, on fixed inputs."""
    rng = np.random.default_rng(2024)
    n, d = 5, 4
    w_q, w_k, w_v = (rng.normal(scale=0.8, size=(d, d)) for _ in range(3))
    positions = encodings.sinusoidal_encoding(n, d)

    def attend(x):
        return attention.self_attention(x, w_q, w_k, w_v)[0]

    def attend_with_positions(x):
        return attention.self_attention(x + positions, w_q, w_k, w_v)[0]

    def mean_everywhere(x):
        return np.repeat(x.mean(axis=0, keepdims=True), len(x), axis=0)

    cycle, swap = [2, 0, 1, 4, 3], [1, 0, 2, 3, 4]
    return rng.normal(size=(n, d)), [
        ("self-attention", attend, cycle, True, "shuffling the words shuffles its output rows the same way"),
        ("self-attention (a swap)", attend, swap, True, "shuffling the words shuffles its output rows"),
        ("np.tanh", np.tanh, cycle, True, "it acts on each row alone"),
        ("mean of the rows, copied to every row", mean_everywhere, cycle, True, "its rows are all equal and unchanged"),
        ("self-attention after adding positions", attend_with_positions, cycle, False, "positions stay put"),
        ("a running sum (like an RNN)", lambda x: np.cumsum(x, axis=0), cycle, False, "each row sums its prefix"),
        ("row reversal", lambda x: x[::-1], cycle, False, "it moves rows by where they are, not what they hold"),
    ]


def check_equivariance_test(is_permutation_equivariant):
    """Grade `is_permutation_equivariant(f, x, order) -> bool`: does f(x[order]) equal f(x)[order]?

    The learner's test is run on equivariant functions (self-attention, tanh, a mean copied
    to every row) and on ones that are not (attention with positions, a running sum, row
    reversal). The pattern of answers identifies the usual mistakes: testing invariance
    instead, permuting the other way, and comparing floats with ==.
    """
    exercise = "equivariance test"
    x, cases = _equivariance_cases()
    answers = []
    for name, function, order, _, _ in cases:
        value, failure = _run(exercise, is_permutation_equivariant, function, x.copy(), list(order))
        if failure is not None:
            if "IndexError" in failure.message:
                return Feedback(exercise, False, f"{failure.message} - permute the rows, x[order], not the columns")
            return failure
        if not isinstance(value, (bool, np.bool_)):
            return Feedback(
                exercise,
                False,
                f"return a single True or False (np.allclose gives one), got {type(value).__name__} for {name}",
            )
        answers.append(bool(value))
    right = [answer == expected for answer, (_, _, _, expected, _) in zip(answers, cases, strict=True)]
    if all(right):
        return Feedback(
            exercise,
            True,
            "your test says True for self-attention, tanh and a copied mean, False for attention with positions, "
            "a running sum and row reversal",
        )
    said = dict(zip((case[0] for case in cases), answers, strict=True))
    invariance = not said["self-attention"] and not said["self-attention (a swap)"] and not said["np.tanh"]
    if invariance and said["mean of the rows, copied to every row"]:
        return Feedback(
            exercise,
            False,
            "you tested invariance, f(x[order]) == f(x). Equivariance compares with the permuted output: "
            "f(x[order]) == f(x)[order] (the output rows move with the input rows)",
        )
    if not said["self-attention"] and said["self-attention (a swap)"] and not said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "you permute the rows the other way (or twice): that agrees for a swap but not for a 3-cycle. "
            "Compare f(x[order]) with f(x)[order], the same index array on both sides",
        )
    if not said["self-attention"] and said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "self-attention fails your test only by rounding (~1e-16: its sums run in another order). Compare "
            "floats with np.allclose, not == or np.array_equal",
        )
    name, _, order, expected, why = next(case for case, ok in zip(cases, right, strict=True) if not ok)
    return Feedback(
        exercise,
        False,
        f"for {name} with order={order} your test says {not expected}, but it should say {expected}: {why}",
    )


# --- Notebook 06: the embedding pipeline ---


def _pipeline_pe_rows(seq_len, d_model, **kwargs):
    """Rows 0..seq_len-1 of the sinusoidal table as a float32 tensor (seq_len, d_model)."""
    return torch.from_numpy(encodings.sinusoidal_encoding(seq_len, d_model, dtype=np.float32, **kwargs))


def _pipeline_same(a, b):
    """True if b, broadcast to the shape of a, equals a to float32 rounding."""
    try:
        b = b.expand_as(a)
    except RuntimeError:
        return False
    return torch.allclose(a, b.to(a.dtype), atol=1e-4, rtol=1e-4)


def check_batch_first_positional(module_class):
    """Grade a fixed version of seed 001's PositionalEncoding for batch-first input.

    module_class(emb_size, dropout) must build a module whose forward(x), for x of shape
    (batch, seq, emb_size), returns x + PE[:seq] (the interleaved sinusoidal table, one row per
    position along dim 1), with the shape of x.
    """
    with torch.random.fork_rng(devices=[]):  # leave the caller's random numbers alone
        torch.manual_seed(0)  # and run the same way on every call
        return _check_batch_first_positional(module_class)


def _check_batch_first_positional(module_class):
    exercise = "batch-first positional encoding"
    d_model = 12
    module, failure = _run(exercise, module_class, d_model, 0.0)
    if failure is not None:
        return failure
    if hasattr(module, "eval"):
        module.eval()
    generator = torch.Generator().manual_seed(6)
    for batch, seq in ((3, 5), (4, 2), (1, 7)):
        x = torch.randn(batch, seq, d_model, generator=generator)
        out, failure = _run(exercise, module, x.clone())
        if failure is not None:
            if "must match the size" in failure.message:
                return Feedback(
                    exercise,
                    False,
                    f"{failure.message}. The table from unsqueeze(-2) has shape (maxlen, 1, d): that layout is "
                    "for (seq, batch, d) input. For (batch, seq, d) input, slice rows by x.size(1) and give the "
                    "table the shape (1, seq, d).",
                )
            return failure
        if not isinstance(out, torch.Tensor):
            return Feedback(exercise, False, f"forward must return a torch tensor, got {type(out).__name__}")
        if out.shape != x.shape:
            return Feedback(
                exercise,
                False,
                f"for input shape {tuple(x.shape)} your output has shape {tuple(out.shape)}: the table broadcast "
                "against the input. Slice it by the sequence length x.size(1) and lay it out as (1, seq, d) so "
                "it lines up with (batch, seq, d).",
            )
        out = out.detach().to(torch.float32)
        pe = _pipeline_pe_rows(seq, d_model)
        if _pipeline_same(out, x + pe):
            continue
        delta = out - x
        if _pipeline_same(out, x):
            return Feedback(exercise, False, "your output equals the input: no positions were added")
        by_batch = _pipeline_pe_rows(batch, d_model)[:, None, :].expand(batch, seq, d_model)
        if _pipeline_same(delta, by_batch):
            return Feedback(
                exercise,
                False,
                "every token of sentence b got the row PE[b]: positions are assigned by batch index. "
                "x.size(0) is the batch size for batch-first input; the positions run along dim 1, so use x.size(1).",
            )
        if _pipeline_same(delta, _pipeline_pe_rows(seq + 1, d_model)[1:]):
            return Feedback(exercise, False, "your positions start at 1; the first token has position 0")
        swapped = torch.stack([pe[:, 1::2], pe[:, 0::2]], dim=-1).reshape(seq, d_model)
        if _pipeline_same(delta, swapped):
            return Feedback(exercise, False, "your sin and cos columns are swapped: column 2i is sin, 2i+1 is cos")
        if _pipeline_same(delta, _pipeline_pe_rows(seq, d_model, layout="concatenated")):
            return Feedback(
                exercise,
                False,
                "you used the concatenated layout [sin... | cos...]; here sin and cos interleave (2i sin, 2i+1 cos)",
            )
        ratio = float((delta * pe).sum() / (pe * pe).sum() / batch)  # least-squares scale of PE in delta
        if abs(ratio - 1.0) > 1e-3 and _pipeline_same(delta, ratio * pe):
            return Feedback(exercise, False, f"you add {ratio:.3g} x PE instead of PE itself; do not scale the table")
        error = float((out - (x + pe)).abs().max())
        return Feedback(
            exercise,
            False,
            f"for input shape {tuple(x.shape)} the output differs from x + PE[:seq] by up to {error:.3g}",
        )
    return Feedback(
        exercise, True, "positions run along dim 1 of a (batch, seq, d) input, for every batch size and length"
    )


def check_embedding_forward(function):
    """Grade function(token_ids, token_table) -> token_table[token_ids] * sqrt(d_model) + PE[:seq].

    token_ids: a LongTensor (batch, seq); token_table: (vocab, d_model). The result must equal
    pe_lib.TransformerEmbedding (sinusoidal positions, no segments, no dropout) with that table.
    """
    with torch.random.fork_rng(devices=[]):  # leave the caller's random numbers alone
        torch.manual_seed(0)  # and run the same way on every call
        return _check_embedding_forward(function)


def _check_embedding_forward(function):
    exercise = "embedding forward"
    vocab, d_model = 20, 16
    generator = torch.Generator().manual_seed(60)
    table = torch.randn(vocab, d_model, generator=generator) * d_model**-0.5
    reference_module = modules.TransformerEmbedding(vocab, d_model, dropout=0.0).eval()
    with torch.no_grad():
        reference_module.token.weight.copy_(table)
    for batch, seq in ((2, 6), (3, 2)):
        ids = torch.randint(0, vocab, (batch, seq), generator=generator)
        out, failure = _run(exercise, function, ids.clone(), table.clone())
        if failure is not None:
            return failure
        if not isinstance(out, torch.Tensor):
            return Feedback(exercise, False, f"return a torch tensor, got {type(out).__name__}")
        out = out.detach().to(torch.float32)
        with torch.no_grad():
            reference = reference_module(ids)
        if out.shape != reference.shape:
            return Feedback(
                exercise,
                False,
                f"for token_ids of shape {tuple(ids.shape)} your output has shape {tuple(out.shape)}; "
                f"expected {tuple(reference.shape)} = (batch, seq, d_model)",
            )
        if _pipeline_same(out, reference):
            continue
        tokens, pe, root = table[ids], _pipeline_pe_rows(seq, d_model), d_model**0.5
        mistakes = (
            (tokens + pe, "you forgot to multiply the token vectors by sqrt(d_model)"),
            ((tokens + pe) * root, "you scaled the sum; only the token vectors are multiplied by sqrt(d_model)"),
            (tokens * d_model + pe, "you multiplied by d_model; the scale is sqrt(d_model)"),
            (tokens / root + pe, "you divided by sqrt(d_model); multiply instead"),
            (tokens, "you return the token vectors alone: multiply them by sqrt(d_model), then add PE[:seq]"),
            (tokens * root, "no positions were added: add PE[:seq], one row per position"),
            (
                tokens * root + _pipeline_pe_rows(batch, d_model)[:, None, :],
                "positions were assigned by batch index (ids.size(0)); they run along dim 1 (ids.size(1))",
            ),
            (
                tokens * root + _pipeline_pe_rows(seq + 1, d_model)[1:],
                "your positions start at 1; the first token is at 0",
            ),
        )
        for candidate, hint in mistakes:
            if _pipeline_same(out, candidate):
                return Feedback(exercise, False, hint)
        error = float((out - reference).abs().max())
        return Feedback(exercise, False, f"your output differs from the reference by up to {error:.3g}")
    return Feedback(exercise, True, "token_table[ids] * sqrt(d_model) + PE[:seq], as pe_lib.TransformerEmbedding")
