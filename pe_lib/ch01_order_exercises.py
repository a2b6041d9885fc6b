"""The graders of notebook 01's exercises: a permutation matrix, and a test of equivariance."""

import numpy as np

from . import attention, encodings
from .grading import Feedback, as_numbers, describe, graded, run_safely

_PERMUTATION_HINTS = (
    "Row i of P @ x is the sum over j of P[i, j] * x[j]. Which single row of x should row i of the "
    "result be, and what must row i of P look like to pick exactly that row?",
    "Row i of P holds one 1 and zeros elsewhere, and the 1 sits in column order[i]. Rows like that are "
    "rows of the identity matrix, taken in a new order.",
    "P[i, order[i]] = 1 for every i and 0 elsewhere: the identity's rows in the given order.\n"
    "    return np.eye(len(order))[order]",
)


def check_permutation_matrix(permutation_matrix, *, hint=0):
    """Grade `permutation_matrix(order) -> P`, the (n, n) matrix with P @ x == x[order].

    Row i of P picks row order[i] of x: P[i, order[i]] = 1, every other entry 0. Orders with
    3-cycles are used, so the transpose (which undoes the permutation) is caught.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("permutation matrix", _check_permutation_matrix, permutation_matrix, _PERMUTATION_HINTS, hint)


def _check_permutation_matrix(permutation_matrix):
    exercise = "permutation matrix"
    orders = [[2, 0, 1], [1, 3, 0, 2], [0, 1, 2, 3], [3, 0, 4, 1, 2], [0]]
    x = np.random.default_rng(101).normal(size=(5, 3))
    for order in orders:
        n = len(order)
        value, failure = run_safely(exercise, permutation_matrix, list(order))
        if failure is not None:
            return failure
        matrix = as_numbers(value)
        if matrix is None or matrix.ndim == 0:
            return Feedback(
                exercise,
                False,
                f"return the matrix P as a NumPy array of numbers, got {describe(value)} for order={order}",
            )
        expected = np.eye(n)[order]
        if matrix.shape != (n, n):
            symptom = f"for order={order}, P must have shape ({n}, {n}), got {matrix.shape}"
            if matrix.ndim == 1:
                symptom += " (a 1-D answer is an order, not a matrix)"
            return Feedback(exercise, False, symptom)
        if np.allclose(matrix, expected):
            continue
        if np.allclose(matrix, expected.T):
            return Feedback(
                exercise,
                False,
                f"for order={order} your P is transposed: it sends row i to place order[i], the inverse "
                "permutation, so P @ x is not x[order]",
                (
                    "Row i of P @ x is the row of x that row i of P points at. Should row i of P point at the "
                    "row that goes to place i, or at the place where row i goes?",
                ),
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
    """(x, cases) for check_equivariance_test; each case: (name, function, x, order, expected answer, why).

    Fixed inputs: x of shape (5, 4), and a second of shape (7, 3) for a test written for 5 rows.
    Besides clear cases, near misses a partial test lets through, each wrong in a way one summary of
    the rows hides: off by 0.01, or by 5e-6 to 4e-5 on values of size 1 to 1.3 (a tolerance of 3e-5
    or more, absolute or relative, or a rounding to 1-4 decimals), right in row 0 only, wrong in one
    entry of two rows (a test of one row, one column, a few entries or every other row), wrong in
    row 0 or in the last row only (a loop or slice off by one), wrong only in rows 5 and 6 (a test
    written for 5 rows); each row turned or its entries
    rolled by its place (norms, row sums), rows at odd places negated (squares, absolute values),
    each row scaled by its place (unit rows, cosines), every row turned by one angle or moved by one
    vector set by the row at place 0 (dot products, Gram matrices, pairwise distances).
    """
    rng = np.random.default_rng(2024)
    n, d = 5, 4
    w_q, w_k, w_v = (rng.normal(scale=0.8, size=(d, d)) for _ in range(3))
    positions = encodings.sinusoidal_encoding(n, d)
    x = rng.normal(size=(n, d))
    w7 = [rng.normal(scale=0.8, size=(3, 3)) for _ in range(3)]
    x7 = rng.normal(size=(7, 3))

    def attend(x):
        return attention.self_attention(x, w_q, w_k, w_v)[0]

    def attend7(x):
        return attention.self_attention(x, *w7)[0]

    def attend_with_positions(x):
        return attention.self_attention(x + positions, w_q, w_k, w_v)[0]

    def mean_everywhere(x):
        return np.repeat(x.mean(axis=0, keepdims=True), len(x), axis=0)

    def place(x):  # each row's place, as a column
        return np.arange(len(x), dtype=np.float64)[:, None]

    def ramp(scale):  # adds scale x the row's place
        return lambda x: x + scale * place(x)

    def ones_and_ramp(x):  # values +-1, 1.1, 1.2 or 1.3 (far from every boundary of a rounding to 1-4 decimals)
        # plus 2e-5 x the distance from the middle place (at most 4e-5: no rounding to 4 decimals moves them),
        # unevenly across the columns. Shuffled by a 3-cycle, every row is off by 5e-6 to 4e-5, and so are its
        # length, direction, dot products and distances: only a loose tolerance or a coarse rounding hides it
        size = 1.0 + np.clip(np.floor(4.0 * np.abs(x)), 0.0, 3.0) / 10.0
        return np.sign(x) * size + 2e-5 * (place(x) - place(x).mean()) * np.linspace(1.0, 0.25, x.shape[1])

    def nudge(row, column):  # changes one entry of the row at one place
        def nudged(x):
            y = x.copy()
            y[row, column] += 1.0
            return y

        return nudged

    def turn_by_place(x):  # each row keeps its length (norm) but turns by an angle set by its place, like RoPE
        return np.stack([row @ encodings.relative_rotation(p, x.shape[1]) for p, row in enumerate(x)])

    def roll_by_place(x):  # each row keeps its entries (and their sum) in another order, set by its place
        return np.stack([np.roll(row, p) for p, row in enumerate(x)])

    def negate_odd_places(x):  # every entry keeps its size (square, absolute value); odd places flip sign
        return x * (-1.0) ** place(x)

    def scale_by_place(x):  # each row keeps its direction (unit row, cosines) but grows with its place
        return x * (1.0 + place(x))

    def turn_by_first_row(x):  # one rotation for all rows, set by what sits at place 0: dot products all kept
        return x @ encodings.relative_rotation(3.0 * x[0, 0], x.shape[1])

    def move_by_first_row(x):  # one shift for all rows, by what sits at place 0: pairwise distances kept
        return x + x[0]

    def special_word(place, sentence):  # the row at `place` is pulled away from the sentence's own word there:
        # unchanged for the sentence as given, so a shuffle makes the output wrong at that one place only (every
        # other near miss is wrong in two rows or more); a test that skips that row says True
        def pulled(y):
            z = y.copy()
            z[place] += 0.5 * (y[place] - sentence[place])
            return z

        return pulled

    cycle, swap, keeps_first = [2, 0, 1, 4, 3], [1, 0, 2, 3, 4], [0, 2, 1, 4, 3]
    odd_places = [0, 3, 2, 1, 4]  # swaps places 1 and 3: a change at place 1 shows in rows 1 and 3 only
    cycle7, last_two = [3, 0, 6, 1, 5, 2, 4], [0, 1, 2, 3, 4, 6, 5]
    # fmt: off
    return x, [
        ("self-attention", attend, x, cycle, True, "shuffling the words shuffles its output rows the same way"),
        ("self-attention (a swap)", attend, x, swap, True, "shuffling the words shuffles its output rows"),
        ("np.tanh", np.tanh, x, cycle, True, "it acts on each row alone"),
        ("mean of the rows, copied to every row", mean_everywhere, x, cycle, True, "its rows are all equal"),
        ("self-attention on 7 words", attend7, x7, cycle7, True, "shuffling the words shuffles its output rows"),
        ("self-attention after adding positions", attend_with_positions, x, cycle, False, "positions stay put"),
        ("a running sum (like an RNN)", lambda x: np.cumsum(x, axis=0), x, cycle, False, "each row sums its prefix"),
        ("row reversal", lambda x: x[::-1], x, cycle, False, "it moves rows by where they are, not what they hold"),
        ("adding 0.01 x the row's place", ramp(0.01), x, cycle, False, "the added 0.01 x place stays with the places"),
        ("signs plus 2e-5 x the row's place", ones_and_ramp, x, cycle, False, "the added 2e-5 x place stays put"),
        ("adding the row's place, order keeping row 0", ramp(1.0), x, keeps_first, False, "only row 0 stays put"),
        ("changing one entry of the first row", nudge(0, 0), x, cycle, False, "the change stays at place 0"),
        ("changing one entry of the fourth row", nudge(3, 2), x, cycle, False, "the change stays at place 3"),
        ("changing one entry of the third row", nudge(2, 1), x, cycle, False, "the change stays at place 2"),
        ("changing one entry of the second row", nudge(1, 3), x, cycle, False, "the change stays at place 1"),
        ("turning each row by its place", turn_by_place, x, cycle, False, "the angle goes with the place, not the row"),
        ("rolling each row by its place", roll_by_place, x, cycle, False, "the roll goes with the place, not the row"),
        ("negating the rows at odd places", negate_odd_places, x, cycle, False, "the sign goes with the place"),
        ("scaling each row by 1 + its place", scale_by_place, x, cycle, False, "the scale goes with the place"),
        ("turning every row by an angle set by row 0", turn_by_first_row, x, cycle, False,
         "the angle comes from whichever row sits at place 0"),
        ("adding row 0 to every row", move_by_first_row, x, cycle, False, "the shift is whichever row sits at place 0"),
        ("changing the row at place 5 of 7", nudge(5, 1), x7, last_two, False, "the change stays at place 5"),
        ("changing one entry of the second row, places 1 and 3 swapped", nudge(1, 0), x, odd_places, False,
         "the change stays at place 1"),
        ("changing row 0 unless it holds the first word", special_word(0, x), x, cycle, False,
         "whatever comes to place 0 is changed"),
        ("changing the last row unless it holds the last word", special_word(4, x), x, cycle, False,
         "whatever comes to the last place is changed"),
    ]
    # fmt: on


# The near misses a test that looks right on the clear cases lets through: (symptom, own hint tiers), in the
# order they are named (a loose tolerance also passes the nudges; name it first; norms before squares, dot
# products before distances: the first one a test passes names what it compares).
_COMPARE_ENTRIES = "Compare the rows themselves, every entry: np.allclose on the two whole arrays."
_NEAR_MISSES = {
    "adding 0.01 x the row's place": (
        "your test passed a function that is off by 0.01 to 0.02: its tolerance is too loose",
        (
            "Rounding makes differences of about 1e-16; a real difference here is 0.01. Which tolerance "
            "tells those apart?",
            "np.allclose with its default tolerances forgives rounding and still catches 0.01.",
        ),
    ),
    "signs plus 2e-5 x the row's place": (
        "your test passed a function that is off by 5e-6 to 4e-5 in every row, on values of size 1 to 1.3: its "
        "tolerance is too loose (absolute or relative, or a rounding to 4 decimals or fewer)",
        (
            "Rounding makes differences of about 1e-16; a real difference here is 2e-5 in every row. Which tolerance "
            "tells those apart?",
            "np.allclose with its default tolerances (rtol=1e-5, atol=1e-8) forgives rounding and still catches "
            "4e-5 on values of size 1.3; atol=1e-4 (or rounding to 4 decimals) does not.",
        ),
    ),
    "adding the row's place, order keeping row 0": (
        "your test passed a function whose output is right in row 0 only",
        (
            "Does your test stop after the first row, with a `return` inside the loop?",
            "Compare every row: np.allclose on the two whole arrays, no loop needed.",
        ),
    ),
    "turning each row by its place": (
        "your test passed a function that keeps each row's length but turns its direction: comparing norms "
        "(lengths) is not enough",
        (
            "Two vectors of the same length can point different ways. What must you compare to tell them apart?",
            _COMPARE_ENTRIES,
        ),
    ),
    "rolling each row by its place": (
        "your test passed a function that keeps each row's entries but puts them in another order: comparing "
        "sums (or norms, or sorted entries) is not enough",
        (
            "Two rows with the same sum can still differ. What must you compare to tell them apart?",
            _COMPARE_ENTRIES,
        ),
    ),
    "negating the rows at odd places": (
        "your test passed a function that flips the sign of the rows at odd places: comparing squares or "
        "absolute values is not enough",
        ("Does squaring (or abs) keep the sign of a number?", _COMPARE_ENTRIES),
    ),
    "scaling each row by 1 + its place": (
        "your test passed a function that scales each row by its place: comparing unit rows (directions, "
        "cosines) is not enough",
        ("Two rows that point the same way can have different lengths. What must you compare?", _COMPARE_ENTRIES),
    ),
    "turning every row by an angle set by row 0": (
        "your test passed a function that turns every row by one angle set by the row at place 0: it keeps "
        "every length, angle, dot product and distance between rows, so comparing those (a Gram matrix, "
        "cosines, pairwise distances) is not enough",
        (
            "Turn a whole picture: do the distances inside it change? Do the points stay where they were?",
            _COMPARE_ENTRIES,
        ),
    ),
    "adding row 0 to every row": (
        "your test passed a function that moves every row by the row at place 0: it keeps the distances "
        "between rows, so comparing pairwise distances is not enough",
        (
            "Move a whole picture: do the distances inside it change? Do the points stay where they were?",
            _COMPARE_ENTRIES,
        ),
    ),
    "changing one entry of the first row": (
        "your test passed a function that is wrong in one entry of two rows: does it compare every row and "
        "every column?",
        ("Which rows and columns does your comparison look at?", "Compare every entry: the two whole arrays."),
    ),
    "changing one entry of the third row": (
        "your test passed a function that is wrong in one entry of two rows: does it compare every row and "
        "every column?",
        ("Which rows and columns does your comparison look at?", "Compare every entry: the two whole arrays."),
    ),
    "changing one entry of the second row": (
        "your test passed a function that is wrong in one entry of two rows: does it compare every row and "
        "every column?",
        ("Which rows and columns does your comparison look at?", "Compare every entry: the two whole arrays."),
    ),
    "changing one entry of the fourth row": (
        "your test passed a function that is wrong in one entry of two rows: does it compare every row and "
        "every column?",
        ("Which rows and columns does your comparison look at?", "Compare every entry: the two whole arrays."),
    ),
    "changing one entry of the second row, places 1 and 3 swapped": (
        "your test passed a function that is wrong in rows 1 and 3 only: does it compare every row?",
        ("Which rows does your comparison look at?", "Compare every entry: the two whole arrays."),
    ),
    "changing row 0 unless it holds the first word": (
        "your test passed a function that is wrong in row 0 only: does it skip the first row (range(1, n), "
        "or a slice from 1)?",
        ("Which index does your loop or slice start from?", "Compare the two whole arrays: no loop, no slice."),
    ),
    "changing the last row unless it holds the last word": (
        "your test passed a function that is wrong in the last row only: does it stop one row early "
        "(range(n - 1), or a slice to -1)?",
        ("Which index does your loop or slice stop at?", "Compare the two whole arrays: no loop, no slice."),
    ),
    "changing the row at place 5 of 7": (
        "your test passed a function that is wrong only in rows 5 and 6 of a 7-row input: does it look at "
        "5 rows whatever the input?",
        ("Where does your test get the number of rows from?", "Compare the two whole arrays, whatever their size."),
    ),
}


_EQUIVARIANCE_HINTS = (
    "Shuffle the words and self-attention's output rows do not stay where they were: they move. "
    "So what should f(x[order]) be compared with?",
    "Equivariance means the output rows move with the input rows: shuffle the output f(x) by the same "
    "`order` before comparing, and compare the floats up to rounding.",
    "Compare f(x[order]) with f(x)[order], up to rounding:\n    return bool(np.allclose(f(x[order]), f(x)[order]))",
)


def check_equivariance_test(is_permutation_equivariant, *, hint=0):
    """Grade `is_permutation_equivariant(f, x, order) -> bool`: does f(x[order]) equal f(x)[order]?

    The learner's test is run on equivariant functions (self-attention, tanh, a mean copied
    to every row) and on ones that are not (attention with positions, a running sum, row
    reversal). The pattern of answers identifies the usual mistakes: testing invariance
    instead, permuting the other way, and comparing floats with ==.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("equivariance test", _check_equivariance_test, is_permutation_equivariant, _EQUIVARIANCE_HINTS, hint)


def _check_equivariance_test(is_permutation_equivariant):
    exercise = "equivariance test"
    _, cases = _equivariance_cases()
    answers = []
    for name, function, x, order, _, _ in cases:
        value, failure = run_safely(exercise, is_permutation_equivariant, function, x.copy(), list(order))
        if failure is not None:
            if "IndexError" in failure.message:
                return Feedback(
                    exercise,
                    False,
                    f"{failure.message} - your test reorders the columns of x; order has one entry per row",
                    (
                        "x has shape (n, d) and order has n entries. Which axis does order number, and which "
                        "axis does your indexing reorder?",
                        "x[order] reorders the rows; x[:, order] would reorder the columns.",
                    ),
                )
            return failure
        if not isinstance(value, (bool, np.bool_)):
            return Feedback(
                exercise,
                False,
                f"return a single True or False, got {describe(value)} for {name}",
                (
                    "Comparing two arrays with == gives one True or False per entry. How do you turn that "
                    "into one answer for the whole array?",
                    "np.allclose(a, b) compares two whole arrays and answers with one bool.",
                ),
            )
        answers.append(bool(value))
    right = [answer == case[4] for answer, case in zip(answers, cases, strict=True)]
    if all(right):
        return Feedback(
            exercise,
            True,
            "your test says True for self-attention (5 and 7 words), tanh and a copied mean, and False for "
            "attention with positions, a running sum, row reversal and seventeen near misses (off by 0.01 or by "
            "4e-5, right in row 0 only, wrong in one entry, in the first or last row only, in rows 5-6 of 7 "
            "only, right in length, sum, "
            "sign-free size, direction, dot products or distances only)",
        )
    said = dict(zip((case[0] for case in cases), answers, strict=True))
    invariance = not said["self-attention"] and not said["self-attention (a swap)"] and not said["np.tanh"]
    if invariance and said["mean of the rows, copied to every row"]:
        # The stub's mistake: name it (invariance) and what it gets wrong, not the comparison that fixes it.
        return Feedback(
            exercise,
            False,
            "your test compares f(x[order]) with f(x) unshuffled: that is invariance, 'the output does not "
            "change at all'. It says False for self-attention and tanh, yet both are equivariant",
        )
    if not said["self-attention"] and said["self-attention (a swap)"] and not said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "you permute the rows the other way (or twice): that agrees for a swap but not for a 3-cycle",
            (
                "A swap is its own inverse; a 3-cycle is not. Which side of your comparison uses the inverse "
                "order (np.argsort(order), or indexing twice)?",
                "Use the same index array on both sides: the input rows by x[order], the output rows by [order].",
            ),
        )
    if not said["self-attention"] and said["np.tanh"]:
        return Feedback(
            exercise,
            False,
            "self-attention fails your test only by rounding (~1e-16: its sums run in another order)",
            (
                "Two float computations of the same maths can differ in the last digit. Which comparison "
                "forgives that and nothing more?",
                "Compare floats with np.allclose, not == or np.array_equal.",
            ),
        )
    # Near misses: the test tells the clear cases apart but lets one of these through.
    clear = all(ok for ok, case in zip(right, cases, strict=True) if case[0] not in _NEAR_MISSES)
    if clear:
        passed = next(name for name in _NEAR_MISSES if said[name])
        return Feedback(exercise, False, *_NEAR_MISSES[passed])
    name, _, _, order, expected, why = next(case for case, ok in zip(cases, right, strict=True) if not ok)
    return Feedback(
        exercise,
        False,
        f"for {name} with order={order} your test says {not expected}, but it should say {expected}: {why}",
    )
