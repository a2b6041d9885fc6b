"""Notebook 02 (naive encodings): pe_lib.checklist, its plots, its explorer and its exercise checkers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

import pe_lib
from pe_lib import checklist, exercises, plots, widgets

CANDIDATES = {
    "integer": pe_lib.integer_encoding,
    "normalized": pe_lib.normalized_encoding,
    "binary": pe_lib.binary_encoding,
    "sinusoidal": pe_lib.sinusoidal_encoding,
}
FAILURES = {
    "integer": {"bounded", "dot product depends on offset only"},
    "normalized": {
        "independent of length",
        "consistent distance",
        "defined beyond training length",
        "dot product depends on offset only",
    },
    "binary": {"consistent distance", "defined beyond training length", "dot product depends on offset only"},
    "sinusoidal": set(),
}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _random_table(n, d_model):
    return np.random.default_rng().normal(size=(n, d_model))


# --- checklist -------------------------------------------------------------------------------


def test_requirements_table_computes_the_expected_verdicts():
    table = checklist.requirements_table(CANDIDATES)
    assert table.candidates == list(CANDIDATES)
    assert table.requirements == [name for name, _ in checklist.REQUIREMENTS]
    for name in CANDIDATES:
        failed = {r for r in table.requirements if not table.passed(name, r)}
        assert failed == FAILURES[name], name


def test_requirements_table_prints_a_grid_and_evidence():
    table = checklist.requirements_table(CANDIDATES)
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
        (checklist.unique, pe_lib.integer_encoding, True, "closest two of 64 rows are 2.828 apart"),
        (checklist.unique, lambda n, d: np.zeros((n, d)), False, "0 apart"),
        (checklist.bounded, pe_lib.integer_encoding, False, "63 at n=64, 1,023 at n=1024"),
        (checklist.bounded, pe_lib.binary_encoding, True, "n=256 (the longest it allows)"),
        (checklist.length_independent, pe_lib.normalized_encoding, False, "largest change 0.5039"),
        (checklist.length_independent, pe_lib.binary_encoding, True, "largest change 0"),
        (checklist.consistent_distance, pe_lib.binary_encoding, False, "positions 1 apart: distance from 1 to 2.646"),
        (checklist.consistent_distance, pe_lib.integer_encoding, True, "offset 1: 2.828"),
        (checklist.defined_beyond, pe_lib.binary_encoding, False, "raises ValueError"),
        (checklist.defined_beyond, pe_lib.normalized_encoding, False, "first 64 positions move"),
        (checklist.defined_beyond, pe_lib.sinusoidal_encoding, True, "1024 distinct finite rows"),
        (checklist.deterministic, _random_table, False, "two calls differ"),
        (checklist.deterministic, pe_lib.sinusoidal_encoding, True, "identical"),
        (checklist.offset_only_similarity, pe_lib.integer_encoding, False, "dot product from 0 to"),
        (checklist.offset_only_similarity, pe_lib.sinusoidal_encoding, True, "one dot product per offset"),
    ],
)
def test_each_requirement_test_measures_and_explains(test, encode, passed, fragment):
    verdict = test(encode)
    assert isinstance(verdict, checklist.Verdict)
    assert bool(verdict) is passed and verdict.passed is passed
    assert fragment in verdict.evidence
    assert str(verdict).startswith("pass: " if passed else "FAIL: ")


def test_binary_is_defined_beyond_with_enough_bits():
    assert checklist.defined_beyond(pe_lib.binary_encoding, d_model=16).passed


def test_defined_beyond_catches_collisions_and_non_finite_rows():
    def wraps_around(n, d):  # position 256 reuses the code of position 0
        return pe_lib.binary_encoding(256, d)[np.arange(n) % 256]

    assert "distinct rows" in checklist.defined_beyond(wraps_around).evidence

    def overflows(n, d):  # positions past 500 become inf
        table = pe_lib.integer_encoding(n, d)
        return np.where(table > 500, np.inf, table)

    assert "non-finite" in checklist.defined_beyond(overflows).evidence


def test_tests_report_a_raising_or_misshaped_candidate():
    def broken(n, d):
        raise RuntimeError("boom")

    for _, test in checklist.REQUIREMENTS:
        verdict = test(broken)
        assert not verdict.passed and "RuntimeError: boom" in verdict.evidence
    assert "expected (64, 8)" in checklist.unique(lambda n, d: np.zeros((d, n))).evidence
    assert (
        "cannot produce a table longer"
        in checklist.bounded(lambda n, d: pe_lib.binary_encoding(n, 6) @ np.eye(6, d)).evidence
    )


def test_requirements_table_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least one"):
        checklist.requirements_table({})
    with pytest.raises(TypeError, match="'x' must be a function"):
        checklist.requirements_table({"x": 3})
    with pytest.raises(ValueError, match="train_len=64, test_len=64"):
        checklist.requirements_table(CANDIDATES, train_len=64, test_len=64)
    with pytest.raises(ValueError, match="max_offset"):
        checklist.requirements_table(CANDIDATES, max_offset=64)


def test_offset_profile_shapes_and_values():
    offsets, mean, low, high = checklist.offset_profile(pe_lib.integer_encoding(5, 3))
    assert np.array_equal(offsets, np.arange(5))
    # integer: PE(p) . PE(p+k) / d = p (p + k); offset 1 pairs (0,1) (1,2) (2,3) (3,4)
    assert (low[1], high[1], mean[1]) == (0.0, 12.0, 5.0)
    assert low[4] == high[4] == 0.0
    _, _, low, high = checklist.offset_profile(pe_lib.sinusoidal_encoding(50, 16))
    assert np.max(high - low) < 1e-12
    with pytest.raises(ValueError, match=r"shape \(n, d\)"):
        checklist.offset_profile(np.zeros(4))


# --- plots -----------------------------------------------------------------------------------


def test_magnitude_against_words():
    fig = plots.magnitude_against_words([1, 10, 100], [8.0, 80.0, 800.0], np.full(50, 8.0), title="t")
    (ax,) = fig.axes
    assert isinstance(fig, Figure) and ax.get_title() == "t"
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "position p" and ax.get_ylabel() == "vector norm"
    assert len(ax.get_legend().get_texts()) == 3


def test_value_strips():
    fig = plots.value_strips(
        {"length 4": np.linspace(0, 1, 4), "length 80": np.linspace(0, 1, 80)}, marker=0.4, title="t"
    )
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["length 4", "length 80"]
    assert [len(line.get_xdata()) for line in ax.lines[:2]] == [4, 80]
    assert ax.lines[2].get_xdata()[0] == 0.4 and ax.get_xlabel() == "encoded value"


def test_step_sizes():
    fig = plots.step_sizes(
        {"integer": pe_lib.integer_encoding(10, 4), "binary": pe_lib.binary_encoding(10, 4)}, title="t"
    )
    (ax,) = fig.axes
    assert ax.get_title() == "t" and ax.get_xlabel() == "position p" and "PE(p+1)" in ax.get_ylabel()
    assert np.allclose(ax.lines[0].get_ydata(), 2.0)  # sqrt(4)
    assert np.allclose(ax.lines[1].get_ydata() ** 2, [1, 2, 1, 3, 1, 2, 1, 4, 1])  # Hamming distances
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["integer", "binary"]


def test_bit_flips():
    fig = plots.bit_flips([1, 2, 1, 3], highlight=(3,), title="t")
    (ax,) = fig.axes
    assert len(ax.patches) == 4 and ax.get_ylabel() == "bits flipped" and ax.get_title() == "t"
    assert ax.patches[3].get_facecolor() != ax.patches[0].get_facecolor()


def test_encoding_and_similarity():
    fig = plots.encoding_and_similarity(pe_lib.binary_encoding(20, 6), name="binary")
    heat, curve, colorbar = fig.axes
    assert heat.get_title() == "binary: n=20, d_model=6" and heat.get_ylabel() == "position"
    assert heat.images[0].get_array().shape == (20, 6) and colorbar.get_ylabel() == "value"
    assert curve.get_xlabel() == "offset k" and "PE(p+k)" in curve.get_ylabel()
    assert len(curve.lines) == 1 and len(curve.collections) == 1


def test_similarity_title_rounds_away_float_noise():
    assert plots.similarity_title([1.0, 2.0], [1.0 + 1e-15, 2.0]).endswith("= 0")
    assert plots.similarity_title([0.0, 1.0], [3.0, 1.0]).endswith("= 3")


# --- widgets ---------------------------------------------------------------------------------


def test_explorer_controls_and_in_place_updates():
    explorer = widgets.NaiveEncodingExplorer(encoding="integer", length=16)
    assert isinstance(explorer, widgets.Explorer)
    assert type(explorer.controls["length"]).__name__ == "IntSlider"
    assert type(explorer.controls["encoding"]).__name__ == "Dropdown"
    image, line = explorer._image, explorer._mean
    first = explorer.image.value
    second = explorer.update(length=40)
    assert first != second and explorer.table.shape == (40, 16)
    assert explorer._image is image and explorer._mean is line  # changed in place, not rebuilt
    assert image.get_array().shape == (40, 16) and len(line.get_xdata()) == 40
    third = explorer.update(encoding="sinusoidal")
    assert third != second and explorer.figure.axes[1].get_title().endswith("= 0")
    assert explorer.figure.axes[0].get_title() == "sinusoidal: n=40, d_model=16"


@pytest.mark.parametrize("encoding", widgets.NaiveEncodingExplorer.ENCODINGS)
def test_explorer_every_encoding_and_extreme_lengths(encoding):
    explorer = widgets.NaiveEncodingExplorer(encoding=encoding, length=2, max_length=64)
    for length in (2, 64):
        assert explorer.update(length=length)[:4] == b"\x89PNG"
        low, high = explorer._curve_axes.get_ylim()
        assert low < high


# --- exercises -------------------------------------------------------------------------------


def _bits(positions, d_model):
    return (np.asarray(positions)[:, None] >> np.arange(d_model)) & 1


def _good_binary(n, d_model):
    if n > 2**d_model:
        raise ValueError("too many positions")
    return _bits(np.arange(n), d_model).astype(float)


def test_check_binary_encoding_accepts_the_reference_and_a_solution():
    assert exercises.check_binary_encoding(pe_lib.binary_encoding).passed
    feedback = exercises.check_binary_encoding(_good_binary)
    assert feedback.passed and str(feedback).startswith("[binary_encoding] Correct")


def _msb_first(n, d_model):
    _good_binary(n, d_model)
    return np.array([[int(c) for c in np.binary_repr(p, width=d_model)] for p in range(n)])


def _msb_first_narrow(n, d_model):
    _good_binary(n, d_model)
    width = max(n - 1, 1).bit_length()
    table = np.zeros((n, d_model))
    table[:, :width] = _bits(np.arange(n), width)[:, ::-1]
    return table


def _raises_at_capacity(n, d_model):
    if n >= 2**d_model:
        raise ValueError("too many")
    return _good_binary(n, d_model)


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_msb_first, "most significant bit first"),
        (_msb_first_narrow, "most significant bit first"),
        (lambda n, d: _bits(np.arange(n - 1), d), "off by one"),
        (lambda n, d: _bits(np.arange(n + 1), d), "off by one"),
        (lambda n, d: _bits(np.arange(1, n + 1), d), "first row encodes position 1"),
        (lambda n, d: _bits(np.arange(n), d).T, "rows are positions"),
        (lambda n, d: np.arange(n)[:, None] >> np.arange(d), "0 or 1"),
        (lambda n, d: 2 * _bits(np.arange(n), d) - 1, "not -1 and +1"),
        (lambda n, d: np.repeat(np.arange(n)[:, None] % 2, d, axis=1), "every column holds bit 0"),
        (lambda n, d: np.zeros((n, d)), "row 1 (position 1) should be"),
        (lambda n, d: _bits(np.arange(n), d), "Raise ValueError when n > 2**d_model"),
        (_raises_at_capacity, "still fit"),
        (lambda n, d: _bits(np.arange(n), d) if n <= 2**d else [][0], "not IndexError"),
        (lambda n, d: None, "must have shape"),
        (lambda n, d: "0101", "must have shape"),
        (lambda n, d: [[object()]], "return a NumPy array"),
        (lambda n, d: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_check_binary_encoding_names_typical_mistakes(answer, hint):
    feedback = exercises.check_binary_encoding(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert str(feedback).startswith("[binary_encoding] Not yet: ")


def _ones(x):
    return bin(x).count("1")


def test_check_bit_flips_accepts_correct_answers():
    assert exercises.check_bit_flips(lambda p: _ones(p ^ (p + 1))).passed
    assert exercises.check_bit_flips(lambda p: np.int64((p ^ (p + 1)).bit_count())).passed
    assert exercises.check_bit_flips(lambda p: float(_ones(p ^ (p + 1)))).passed  # 4.0 is a whole number


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda p: _ones(p + 1) - _ones(p), "how many 1s"),
        (lambda p: abs(_ones(p + 1) - _ones(p)), "how many 1s"),
        (lambda p: _ones((p - 1) ^ p) if p else 0, "from p - 1 to p"),
        (lambda p: _ones(p ^ (p + 1)) - 1, "one short"),
        (lambda p: 1, "bit_flips(1) should be 2"),
        (lambda p: 1.5, "whole number"),
        (lambda p: None, "must return an int"),
        (lambda p: [][0], "IndexError"),
    ],
)
def test_check_bit_flips_names_typical_mistakes(answer, hint):
    feedback = exercises.check_bit_flips(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
