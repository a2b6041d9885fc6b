"""pe_lib.requirements: notebook 02's requirement tests, one measured verdict per requirement."""

import numpy as np
import pytest

import pe_lib
from pe_lib import grading, requirements

CANDIDATES = {
    "integer": pe_lib.integer_encoding,
    "normalized": pe_lib.normalized_encoding,
    "binary": pe_lib.binary_encoding,
    "sinusoidal": pe_lib.sinusoidal_encoding,
}


FAILURES = {
    "integer": {"bounded", "dot product depends on offset only"},
    "normalized": {"independent of length", "defined beyond training length", "dot product depends on offset only"},
    "binary": {"consistent distance", "defined beyond training length", "dot product depends on offset only"},
    "sinusoidal": set(),
}


def _random_table(n, d_model):
    return np.random.default_rng().normal(size=(n, d_model))


def test_requirements_table_computes_the_expected_verdicts():
    table = requirements.requirements_table(CANDIDATES)
    assert table.candidates == list(CANDIDATES)
    assert table.requirements == [name for name, _ in requirements.REQUIREMENTS]
    for name in CANDIDATES:
        failed = {r for r in table.requirements if not table.passed(name, r)}
        assert failed == FAILURES[name], name


def test_requirements_table_prints_a_grid_and_evidence():
    table = requirements.requirements_table(CANDIDATES)
    text = str(table)
    lines = text.splitlines()
    assert lines[0].split() == list(CANDIDATES)
    assert lines[2].split()[-4:] == ["FAIL", "pass", "pass", "pass"]  # bounded
    assert "d_model=8" in lines[-1] and repr(table) == text
    evidence = table.evidence("integer")
    assert evidence.startswith("integer:") and "1,023 at n=1024" in evidence
    assert "ValueError" in table.evidence("binary")


@pytest.mark.parametrize(
    ("test", "encode", "passed", "fragment"),
    [
        (requirements.unique, pe_lib.integer_encoding, True, "closest two of 64 rows are 2.828 apart"),
        (requirements.unique, lambda n, d: np.zeros((n, d)), False, "0 apart"),
        (requirements.bounded, pe_lib.integer_encoding, False, "63 at n=64, 1,023 at n=1024"),
        (requirements.bounded, pe_lib.binary_encoding, True, "n=256 (the longest it allows)"),
        (requirements.length_independent, pe_lib.normalized_encoding, False, "largest change 0.5039"),
        (requirements.length_independent, pe_lib.binary_encoding, True, "largest change 0"),
        (
            requirements.consistent_distance,
            pe_lib.binary_encoding,
            False,
            "positions 1 apart: distance from 1 to 2.646",
        ),
        (requirements.consistent_distance, pe_lib.integer_encoding, True, "offset 1: 2.828"),
        # Each length on its own: the normalized step is 1/(n - 1) within a text, so this passes and the
        # length dependence is counted once, by the length-independence test.
        (requirements.consistent_distance, pe_lib.normalized_encoding, True, "at n=64 and at n=128"),
        (requirements.consistent_distance, lambda n, d: pe_lib.integer_encoding(n, d) ** 2, False, "n=128, positions"),
        (requirements.defined_beyond, pe_lib.binary_encoding, False, "raises ValueError"),
        (requirements.defined_beyond, pe_lib.normalized_encoding, False, "first 64 positions move"),
        (requirements.defined_beyond, pe_lib.sinusoidal_encoding, True, "1024 distinct finite rows"),
        (requirements.deterministic, _random_table, False, "two calls differ"),
        (requirements.deterministic, pe_lib.sinusoidal_encoding, True, "identical"),
        (requirements.offset_only_similarity, pe_lib.integer_encoding, False, "dot product from 0 to"),
        (requirements.offset_only_similarity, pe_lib.sinusoidal_encoding, True, "one dot product per offset"),
    ],
)
def test_each_requirement_test_measures_and_explains(test, encode, passed, fragment):
    verdict = test(encode)
    assert isinstance(verdict, grading.Feedback)
    assert bool(verdict) is passed and verdict.passed is passed
    assert fragment in verdict.message
    assert str(verdict).startswith("pass: " if passed else "FAIL: ")


def test_binary_is_defined_beyond_with_enough_bits():
    assert requirements.defined_beyond(pe_lib.binary_encoding, d_model=16).passed


def test_defined_beyond_catches_collisions_and_non_finite_rows():
    def wraps_around(n, d):  # position 256 reuses the code of position 0
        return pe_lib.binary_encoding(256, d)[np.arange(n) % 256]

    assert "distinct rows" in requirements.defined_beyond(wraps_around).message

    def overflows(n, d):  # positions past 500 become inf
        table = pe_lib.integer_encoding(n, d)
        return np.where(table > 500, np.inf, table)

    assert "non-finite" in requirements.defined_beyond(overflows).message


def test_tests_report_a_raising_or_misshaped_candidate():
    def broken(n, d):
        raise RuntimeError("boom")

    for _, test in requirements.REQUIREMENTS:
        verdict = test(broken)
        assert not verdict.passed and "RuntimeError: boom" in verdict.message
    assert "expected (64, 8)" in requirements.unique(lambda n, d: np.zeros((d, n))).message
    assert (
        "cannot produce a table longer"
        in requirements.bounded(lambda n, d: pe_lib.binary_encoding(n, 6) @ np.eye(6, d)).message
    )


def test_requirements_table_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least one"):
        requirements.requirements_table({})
    with pytest.raises(TypeError, match="'x' must be a function"):
        requirements.requirements_table({"x": 3})
    with pytest.raises(ValueError, match="train_len=64, test_len=64"):
        requirements.requirements_table(CANDIDATES, train_len=64, test_len=64)
    with pytest.raises(ValueError, match="max_offset"):
        requirements.requirements_table(CANDIDATES, max_offset=64)
