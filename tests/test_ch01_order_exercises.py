"""pe_lib.ch01_order_exercises (notebook 01's graders) and the helpers the graders of 01-04 share."""

import numpy as np
import pytest

from pe_lib import ch01_order_exercises as ch01

# --- exercise: the permutation matrix --------------------------------------------------------


def reference_permutation_matrix(order):
    return np.eye(len(order))[order]


def test_permutation_matrix_checker_accepts_the_reference():
    feedback = ch01.check_permutation_matrix(reference_permutation_matrix)
    assert feedback.passed and str(feedback).startswith("[permutation matrix] Correct")


def test_permutation_matrix_checker_accepts_other_correct_forms():
    def with_loop(order):
        matrix = np.zeros((len(order), len(order)), dtype=int)
        for row, column in enumerate(order):
            matrix[row, column] = 1
        return matrix

    assert ch01.check_permutation_matrix(with_loop)
    assert ch01.check_permutation_matrix(lambda order: reference_permutation_matrix(order).tolist())


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda order: reference_permutation_matrix(order).T, "transposed"),
        (lambda order: np.eye(len(order)), "identity"),
        (lambda order: np.argsort(order), "1-D"),
        (lambda order: np.ones((len(order), len(order))), "exactly one 1"),
        (lambda order: 2 * reference_permutation_matrix(order), "exactly one 1"),
        (lambda order: np.eye(len(order) + 1), "must have shape"),
        (lambda order: None, "forget the `return`"),
        (lambda order: np.eye(len(order))[order[::-1]] if len(order) > 1 else np.eye(1), "wrong order"),
        (lambda order: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_permutation_matrix_checker_names_typical_mistakes(answer, hint):
    feedback = ch01.check_permutation_matrix(answer)
    assert not feedback.passed
    assert hint in feedback.message
    assert str(feedback).startswith("[permutation matrix] Not yet")
    assert len(ch01.check_permutation_matrix(answer, hint=3).hints) == 3


# --- exercise: the equivariance test ---------------------------------------------------------


def reference_test(f, x, order):
    return bool(np.allclose(f(x[order]), f(x)[order]))


def test_equivariance_checker_accepts_the_reference():
    feedback = ch01.check_equivariance_test(reference_test)
    assert feedback.passed and "Correct" in str(feedback)
    assert ch01.check_equivariance_test(lambda f, x, order: np.allclose(f(x[order]), f(x)[order]))  # np.bool_


def test_equivariance_checker_inputs_are_what_its_hints_claim():
    x, cases = ch01._equivariance_cases()
    for name, function, inputs, order, expected, _ in cases:
        assert reference_test(function, inputs, order) == expected, name
    attention = cases[0][1]
    for order in (cases[0][3], cases[1][3]):  # attention differs from its shuffle by rounding only
        assert not np.array_equal(attention(x[order]), attention(x)[order])
    near = {name: (function, inputs, order) for name, function, inputs, order, _, _ in cases}
    function, inputs, order = near["signs plus 2e-5 x the row's place"]
    moved, expected = function(inputs[order]), function(inputs)[order]
    gap = np.abs(moved - expected)
    assert 5e-6 - 1e-12 < gap.min() and gap.max() < 4e-5 + 1e-12  # as its symptom says
    assert np.all(gap.max(axis=1) >= 2e-5 - 1e-12)  # in every row: a test of one row sees it too
    assert np.all((1.0 - 4e-5 <= np.abs(expected)) & (np.abs(expected) <= 1.3 + 4e-5))  # values of size 1 to 1.3
    for decimals in (1, 2, 3, 4):  # no rounding to 1-4 decimals tells them apart; np.allclose's defaults do
        assert np.array_equal(moved.round(decimals), expected.round(decimals)), decimals
    assert not np.allclose(moved, expected) and np.allclose(moved, expected, atol=1e-4)
    for name in (
        "changing one entry of the first row",
        "changing one entry of the second row",
        "changing one entry of the third row",
        "changing one entry of the fourth row",
    ):
        function, inputs, order = near[name]
        wrong = np.argwhere(np.abs(function(inputs[order]) - function(inputs)[order]) > 0.5)
        assert len(wrong) == 2 and len(set(wrong[:, 1])) == 1, name  # two rows, one column
    function, inputs, order = near["rolling each row by its place"]
    assert np.allclose(function(inputs[order]).sum(axis=1), function(inputs)[order].sum(axis=1))
    # each summary one near miss keeps, as its symptom says
    function, inputs, order = near["negating the rows at odd places"]
    assert np.allclose(function(inputs[order]) ** 2, function(inputs)[order] ** 2)
    function, inputs, order = near["scaling each row by 1 + its place"]
    assert np.allclose(unit_rows(function(inputs[order])), unit_rows(function(inputs)[order]))
    for name in ("turning every row by an angle set by row 0", "adding row 0 to every row"):
        function, inputs, order = near[name]
        assert np.allclose(distances(function(inputs[order])), distances(function(inputs)[order])), name
    function, inputs, order = near["turning every row by an angle set by row 0"]
    assert np.allclose(gram(function(inputs[order])), gram(function(inputs)[order]))
    # wrong in one row only: the first, the last; and in rows 1 and 3 only
    for name, rows in (
        ("changing row 0 unless it holds the first word", [0]),
        ("changing the last row unless it holds the last word", [4]),
        ("changing one entry of the second row, places 1 and 3 swapped", [1, 3]),
    ):
        function, inputs, order = near[name]
        wrong = np.flatnonzero(np.abs(function(inputs[order]) - function(inputs)[order]).max(axis=1) > 1e-3)
        assert wrong.tolist() == rows, (name, wrong)


def unit_rows(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def gram(a):
    return a @ a.T


def distances(a):
    return np.linalg.norm(a[:, None, :] - a[None, :, :], axis=-1)


def compares(summary, **tolerances):
    """A learner's test that compares one summary of the two outputs (or the outputs, with other tolerances)."""
    return lambda f, x, order: bool(np.allclose(summary(f(x[order])), summary(f(x)[order]), **tolerances))


# The classes of partial tests a hidden suite found passing (issue 28), and the symptom each now gets.
@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (compares(np.square), "comparing squares or absolute values"),
        (compares(np.abs), "comparing squares or absolute values"),
        (compares(unit_rows), "comparing unit rows"),
        (compares(lambda a: unit_rows(a) @ unit_rows(a).T), "comparing unit rows (directions, cosines)"),
        (compares(gram), "Gram matrix"),
        (compares(distances), "pairwise distances"),
        (compares(lambda a: a, atol=1e-4), "tolerance"),
        (compares(lambda a: a, atol=5e-5), "tolerance"),
        (compares(lambda a: a, rtol=1e-4), "tolerance"),
        (lambda f, x, order: bool(np.abs(f(x[order]) - f(x)[order]).max() < 1e-4), "tolerance"),
        (lambda f, x, order: np.array_equal(f(x[order]).round(4), f(x)[order].round(4)), "a rounding to 4"),
        (lambda f, x, order: np.array_equal(f(x[order]).round(3), f(x)[order].round(3)), "a rounding to 4"),
        (
            lambda f, x, order: (
                bool(np.allclose(f(x[order])[:, 0], f(x)[order][:, 0]))
                and bool(np.allclose(f(x[order])[-1], f(x)[order][-1]))
            ),
            "every row and every column",
        ),
        # off by one in a loop or a slice, and every other row
        (compares(lambda a: a[1:]), "wrong in row 0 only: does it skip the first row"),
        (
            lambda f, x, order: all(np.allclose(f(x[order])[i], f(x)[order][i]) for i in range(1, len(x))),
            "skip the first row",
        ),
        (compares(lambda a: a[:-1]), "wrong in the last row only: does it stop one row early"),
        (
            lambda f, x, order: all(np.allclose(f(x[order])[i], f(x)[order][i]) for i in range(len(x) - 1)),
            "stop one row early",
        ),
        (compares(lambda a: a[::2]), "wrong in rows 1 and 3 only"),
    ],
)
def test_equivariance_checker_rejects_tests_that_compare_a_summary_or_too_loosely(answer, symptom):
    feedback = ch01.check_equivariance_test(answer)
    assert not feedback.passed and symptom in feedback.message, feedback
    assert len(ch01.check_equivariance_test(answer, hint=3).hints) == 3


@pytest.mark.parametrize(
    "answer",
    [
        compares(lambda a: a),
        compares(lambda a: a, atol=1e-6),
        compares(lambda a: a, atol=1e-5),  # 1e-5 + 1e-5 |b|: still below every real difference here
        compares(lambda a: a, rtol=0.0, atol=1e-12),
        lambda f, x, order: bool(np.isclose(f(x[order]), f(x)[order]).all()),
        lambda f, x, order: bool(np.abs(f(x[order]) - f(x)[order]).max() < 1e-9),
        lambda f, x, order: np.array_equal(f(x[order]).round(6), f(x)[order].round(6)),
        lambda f, x, order: bool(np.allclose(f(x)[order], f(x[order]))),
    ],
)
def test_equivariance_checker_accepts_tests_that_compare_every_entry_up_to_rounding(answer):
    feedback = ch01.check_equivariance_test(answer)
    assert feedback.passed, feedback


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda f, x, order: np.allclose(f(x[order]), f(x)), "that is invariance"),
        (lambda f, x, order: np.allclose(f(x[order]), f(x)[np.argsort(order)]), "other way"),
        (lambda f, x, order: np.allclose(f(x[order])[order], f(x)), "other way"),
        (lambda f, x, order: np.array_equal(f(x[order]), f(x)[order]), "only by rounding"),
        (lambda f, x, order: bool((f(x[order]) == f(x)[order]).all()), "only by rounding"),
        (lambda f, x, order: True, "should say False"),
        (lambda f, x, order: False, "should say True"),
        (lambda f, x, order: f(x[order]) == f(x)[order], "single True or False"),
        (lambda f, x, order: None, "forget the `return`"),
        (lambda f, x, order: np.allclose(f(x[:, order]), f(x)[:, order]), "reorders the columns"),
        (lambda f, x, order: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_equivariance_checker_names_typical_mistakes(answer, hint):
    feedback = ch01.check_equivariance_test(answer)
    assert not feedback.passed
    assert hint in feedback.message
    assert str(feedback).startswith("[equivariance test] Not yet")
    assert len(ch01.check_equivariance_test(answer, hint=3).hints) == 3


# --- the fix of a recognised mistake is a hint, at the tier named here, never in the symptom ----


@pytest.mark.parametrize(
    ("check", "answer", "level", "fix"),
    [
        (ch01.check_permutation_matrix, lambda order: np.eye(len(order)), 2, "column order[i]"),
        (ch01.check_permutation_matrix, lambda order: np.eye(len(order)), 3, "np.eye(len(order))[order]"),
        (ch01.check_permutation_matrix, lambda order: reference_permutation_matrix(order).T, 3, "P[i, order[i]] = 1"),
        (ch01.check_permutation_matrix, lambda order: np.argsort(order), 2, "column order[i]"),
        (ch01.check_equivariance_test, lambda f, x, order: np.allclose(f(x[order]), f(x)), 2, "same `order`"),
        (ch01.check_equivariance_test, lambda f, x, order: np.allclose(f(x[order]), f(x)), 3, "f(x)[order]"),
        (
            ch01.check_equivariance_test,
            lambda f, x, order: np.allclose(f(x[order]), f(x)[np.argsort(order)]),
            2,
            "same index array on both sides",
        ),
        (
            ch01.check_equivariance_test,
            lambda f, x, order: np.array_equal(f(x[order]), f(x)[order]),
            2,
            "np.allclose, not ==",
        ),
        (
            ch01.check_equivariance_test,
            lambda f, x, order: np.allclose(f(x[:, order]), f(x)[:, order]),
            2,
            "x[order] reorders the rows",
        ),
        (ch01.check_equivariance_test, lambda f, x, order: f(x[order]) == f(x)[order], 2, "np.allclose(a, b)"),
    ],
)
def test_the_fix_of_a_mistake_waits_for_its_hint_tier(check, answer, level, fix):
    for below in range(level):
        assert fix not in str(check(answer, hint=below))
    assert fix in str(check(answer, hint=level))


def test_equivariance_checker_does_not_let_the_learner_change_its_inputs():
    def sloppy(f, x, order):
        x[:] = 0.0  # modifies the array it was given
        return reference_test(f, x, order)

    ch01.check_equivariance_test(sloppy)
    x, _ = ch01._equivariance_cases()
    assert np.abs(x).max() > 0  # fresh inputs each call
