"""pe_lib.ch02_naive (notebook 02): its figures, its explorer and its exercise graders."""

import numpy as np
import pytest
from matplotlib.figure import Figure

import pe_lib
from pe_lib import ch02_naive as ch02
from pe_lib import findings
from pe_lib.explorer import Explorer

# --- plots -----------------------------------------------------------------------------------


def test_magnitude_against_words():
    fig = ch02.magnitude_against_words([1, 10, 100], [8.0, 80.0, 800.0], np.full(50, 8.0), title="t")
    (ax,) = fig.axes
    assert isinstance(fig, Figure) and ax.get_title() == "t"
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "position p" and ax.get_ylabel() == "vector norm"
    assert len(ax.get_legend().get_texts()) == 3


def test_value_strips():
    fig = ch02.value_strips(
        {"length 4": np.linspace(0, 1, 4), "length 80": np.linspace(0, 1, 80)}, marker=0.4, title="t"
    )
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["length 4", "length 80"]
    assert [len(line.get_xdata()) for line in ax.lines[:2]] == [4, 80]
    assert ax.lines[2].get_xdata()[0] == 0.4 and ax.get_xlabel() == "encoded value"


def test_step_sizes():
    fig = ch02.step_sizes(
        {"integer": pe_lib.integer_encoding(10, 4), "binary": pe_lib.binary_encoding(10, 4)}, title="t"
    )
    (ax,) = fig.axes
    assert ax.get_title() == "t" and ax.get_xlabel() == "position p" and "PE(p+1)" in ax.get_ylabel()
    assert np.allclose(ax.lines[0].get_ydata(), 2.0)  # sqrt(4)
    assert np.allclose(ax.lines[1].get_ydata() ** 2, [1, 2, 1, 3, 1, 2, 1, 4, 1])  # Hamming distances
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["integer", "binary"]


def test_bit_flips():
    fig = ch02.bit_flips([1, 2, 1, 3], highlight=(3,), title="t")
    (ax,) = fig.axes
    assert len(ax.patches) == 4 and ax.get_ylabel() == "bits flipped" and ax.get_title() == "t"
    assert ax.patches[3].get_facecolor() != ax.patches[0].get_facecolor()


def test_encoding_and_similarity():
    fig = ch02.encoding_and_similarity(pe_lib.binary_encoding(20, 6), name="binary")
    heat, curve, colorbar = fig.axes
    assert heat.get_title() == "binary, n=20" and heat.get_ylabel() == "position"
    assert heat.get_xlabel() == "dimension (d_model=6)"
    assert heat.images[0].get_array().shape == (20, 6) and colorbar.get_ylabel() == "value"
    assert curve.get_xlabel() == "offset k" and "PE(p+k)" in curve.get_ylabel()
    assert len(curve.lines) == 1 and len(curve.collections) == 1


def test_similarity_title_rounds_away_float_noise():
    assert ch02.similarity_title([1.0, 2.0], [1.0 + 1e-15, 2.0]).endswith("= 0")
    assert ch02.similarity_title([0.0, 1.0], [3.0, 1.0]).endswith("= 3")


# --- widgets ---------------------------------------------------------------------------------


def test_explorer_controls_and_in_place_updates():
    explorer = ch02.NaiveEncodingExplorer(encoding="integer", length=16)
    assert isinstance(explorer, Explorer)
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
    assert explorer.figure.axes[0].get_title() == "sinusoidal, n=40"


@pytest.mark.parametrize("encoding", ch02.NaiveEncodingExplorer.ENCODINGS)
def test_explorer_every_encoding_and_extreme_lengths(encoding):
    explorer = ch02.NaiveEncodingExplorer(encoding=encoding, length=2, max_length=64)
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
    assert ch02.check_binary_encoding(pe_lib.binary_encoding).passed
    feedback = ch02.check_binary_encoding(_good_binary)
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
        (lambda n, d: _bits(np.arange(n), d), "without raising ValueError"),
        (_raises_at_capacity, "still fit"),
        (lambda n, d: _bits(np.arange(n), d) if n <= 2**d else [][0], "not IndexError"),
        (lambda n, d: None, "forget the `return`"),
        (lambda n, d: "0101", "array of 0s and 1s"),
        (lambda n, d: [[object()]], "return a NumPy array"),
        (lambda n, d: 1 / 0, "ZeroDivisionError"),
    ],
)
def test_check_binary_encoding_names_typical_mistakes(answer, hint):
    feedback = ch02.check_binary_encoding(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert str(feedback).startswith("[binary_encoding] Not yet: ")
    assert len(ch02.check_binary_encoding(answer, hint=3).hints) == 3


def _ones(x):
    return bin(x).count("1")


def test_check_bit_flips_accepts_correct_answers():
    assert ch02.check_bit_flips(lambda p: _ones(p ^ (p + 1))).passed
    assert ch02.check_bit_flips(lambda p: np.int64((p ^ (p + 1)).bit_count())).passed
    assert ch02.check_bit_flips(lambda p: float(_ones(p ^ (p + 1)))).passed  # 4.0 is a whole number


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (lambda p: _ones(p + 1) - _ones(p), "how many 1s"),
        (lambda p: abs(_ones(p + 1) - _ones(p)), "how many 1s"),
        (lambda p: _ones((p - 1) ^ p) if p else 0, "from p - 1 to p"),
        (lambda p: _ones(p ^ (p + 1)) - 1, "one short"),
        (lambda p: 1, "bit_flips(1) should be 2"),
        (lambda p: 1.5, "whole number"),
        (lambda p: None, "forget the `return`"),
        (lambda p: [][0], "IndexError"),
    ],
)
def test_check_bit_flips_names_typical_mistakes(answer, hint):
    feedback = ch02.check_bit_flips(answer)
    assert not feedback.passed
    assert hint in feedback.message, feedback.message
    assert len(ch02.check_bit_flips(answer, hint=3).hints) == 3


@pytest.mark.parametrize(
    ("check", "answer", "level", "fix"),
    [
        (ch02.check_binary_encoding, lambda n, d: np.zeros((n, d)), 2, "`& 1`"),
        (ch02.check_binary_encoding, lambda n, d: np.zeros((n, d)), 3, ">> np.arange(d_model)"),
        (ch02.check_binary_encoding, _msb_first, 2, "(p >> j) & 1"),
        (ch02.check_binary_encoding, lambda n, d: _bits(np.arange(n), d), 2, "Check n against 2**d_model"),
        (ch02.check_binary_encoding, lambda n, d: np.arange(n)[:, None] >> np.arange(d), 2, "not p >> j alone"),
        (ch02.check_bit_flips, lambda p: 1, 2, "XOR"),
        (ch02.check_bit_flips, lambda p: 1, 3, "p ^ (p + 1)"),
        (ch02.check_bit_flips, lambda p: _ones(p + 1) - _ones(p), 2, "p ^ (p + 1)"),
        (ch02.check_bit_flips, lambda p: _ones(p ^ (p + 1)) - 1, 1, "trailing 1s"),
    ],
)
def test_the_fix_of_a_mistake_waits_for_its_hint_tier(check, answer, level, fix):
    for below in range(level):
        assert fix not in str(check(answer, hint=below))
    assert fix in str(check(answer, hint=level))


def test_naive_explorer_finding_and_colours_follow_the_encoding():
    explorer = ch02.NaiveEncodingExplorer(encoding="integer", length=32)
    assert "The integer table of 32 positions holds values from 0 to 31" in explorer.finding()
    assert "(the position matters too)" in explorer.alt_text()
    assert explorer._mean.get_color() == ch02.NAIVE_COLOUR
    explorer.update(encoding="sinusoidal")
    assert "varies over p by up to 0 at one offset (the offset alone decides the similarity)" in explorer.finding()
    assert explorer._mean.get_color() == "C0"


@pytest.mark.parametrize("encoding", ch02.NaiveEncodingExplorer.ENCODINGS)
@pytest.mark.parametrize("length", [2, 40, 128])
def test_naive_explorer_finding_quotes_the_frames_table_and_band(encoding, length):
    """The caption's value range is the drawn image's; its widest spread over p, recomputed from the table."""
    explorer = ch02.NaiveEncodingExplorer(encoding=encoding, length=length)
    table = explorer._image.get_array()  # the table drawn
    d = table.shape[1]
    widest = max(np.ptp(np.sum(table[: length - k] * table[k:], axis=1)) / d for k in range(length))
    quotes = {"smallest value drawn": table.min(), "largest value drawn": table.max()}
    finding = explorer.finding()
    if widest > 1e-9:
        quotes["widest spread over p"] = widest
        assert finding.endswith("(the position matters too)")
    else:
        assert "by up to 0 at one offset (the offset alone decides the similarity)" in finding
    assert not findings.check_quotes(finding, quotes), finding
    explorer.close()
