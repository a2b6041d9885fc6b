"""Notebook 07 (relative positions): its figures and explorers (the graders: test_ch07_relative_exercises.py)."""

import numpy as np
import pytest

import pe_lib
from pe_lib import ch07_relative as ch07
from pe_lib import findings

# --- figures -------------------------------------------------------------------------------


def test_rope_wavelengths_marks_the_pairs_that_never_turn_once():
    fig = ch07.rope_wavelengths(128, base=1e4, context=4096)
    ax = fig.axes[0]
    heights = np.array([bar.get_height() for bar in ax.patches])
    assert np.allclose(np.sort(heights), np.sort(2 * np.pi / pe_lib.rope_frequencies(128)))
    red = [bar for bar in ax.patches if bar.get_facecolor() == ax.patches[-1].get_facecolor()]
    assert len(red) == 18 and all(bar.get_height() > 4096 for bar in red)
    assert "18 of 64" in " ".join(text.get_text() for text in ax.get_legend().get_texts())
    assert ax.get_yscale() == "log" and ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


def test_rope_wavelengths_follows_base_and_context():
    ax = ch07.rope_wavelengths(64, base=100.0, context=10).axes[0]
    expected = int((2 * np.pi / pe_lib.rope_frequencies(64, base=100.0) > 10).sum())
    assert f"{expected} of 32" in " ".join(text.get_text() for text in ax.get_legend().get_texts())


def test_layout_pairs_labels_each_feature_with_its_pair():
    ax = ch07.layout_pairs(8).axes[0]
    labels = [text.get_text() for text in ax.texts]
    assert labels[:8] == [f"$\\theta_{{{i}}}$" for i in (0, 0, 1, 1, 2, 2, 3, 3)]  # interleaved: neighbours
    assert labels[8:] == [f"$\\theta_{{{i}}}$" for i in (0, 1, 2, 3, 0, 1, 2, 3)]  # half: i and i + d/2
    assert [t.get_text() for t in ax.get_yticklabels()] == ["interleaved", "half"]
    assert not ch07.layout_pairs(64).axes[0].texts  # too many features to label: colours only


def test_t5_buckets_draws_the_library_buckets_both_ways():
    ax = ch07.t5_buckets(100, num_buckets=16, max_distance=64).axes[0]
    offsets = np.arange(-100, 101)
    both, causal = ax.lines[:2]
    assert np.array_equal(both.get_ydata(), pe_lib.t5_relative_bucket(offsets, num_buckets=16, max_distance=64))
    expected = pe_lib.t5_relative_bucket(offsets, bidirectional=False, num_buckets=16, max_distance=64)
    assert np.array_equal(causal.get_ydata(), expected)
    assert "16 buckets" in ax.get_title() and "|offset| < 4" in ax.get_legend().get_texts()[-1].get_text()


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [
        (lambda: ch07.layout_pairs(7), ValueError, ["head_dim", "even", "7"]),
        (lambda: ch07.layout_pairs(8.0), TypeError, ["head_dim", "8.0"]),
        (lambda: ch07.rope_wavelengths(128, context=0), ValueError, ["context", "0"]),
        (lambda: ch07.rope_wavelengths(127), ValueError, ["head_dim", "even"]),
        (lambda: ch07.t5_buckets(-5), ValueError, ["max_offset", "-5"]),
        (lambda: ch07.MethodsExplorer(base=3.0), ValueError, ["base", "3.0", "10000.0"]),
        (lambda: ch07.MethodsExplorer(buckets=12), ValueError, ["buckets", "12"]),
        (lambda: ch07.MethodsExplorer(causal="yes"), TypeError, ["causal", "'yes'", "True or False"]),
        (lambda: ch07.ALiBiExplorer(num_heads=5), ValueError, ["num_heads", "5", "12"]),
        (lambda: ch07.ALiBiExplorer(distance=3), ValueError, ["distance", "3", "1024"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, said):
    with pytest.raises(error) as raised:
        call()
    assert all(word in str(raised.value) for word in said), str(raised.value)


# --- explorers -----------------------------------------------------------------------------


def test_methods_explorer_curves_are_the_three_methods():
    explorer = ch07.MethodsExplorer()
    explorer.update(base=1e4, head_dim=64, slope=2.0**-4, buckets=32, max_distance=128, causal=False)
    offsets = explorer.offsets
    theta = pe_lib.rope_frequencies(64)
    assert np.allclose(explorer.rope, np.cos(np.multiply.outer(offsets, theta)).mean(axis=1))
    assert explorer.half_width == 28  # notebook 04's half-width for d_model 64, base 1e4
    assert np.allclose(explorer.alibi, -np.abs(offsets) / 16)
    assert np.array_equal(explorer.buckets, pe_lib.t5_relative_bucket(offsets))
    assert explorer.last_from == 91
    titles = [title.get_text() for title in explorer._titles]
    assert "from |Δ| = 28" in titles[0] and "|Δ| = 160" in titles[1] and "|Δ| < 8, last bucket from 91" in titles[2]


def test_methods_explorer_causal_masks_the_future_and_gives_t5_all_buckets():
    explorer = ch07.MethodsExplorer()
    explorer.update(causal=True, buckets=32)
    future = explorer.offsets > 0
    for values in (explorer.rope, explorer.alibi, explorer.buckets):
        assert np.all(np.isnan(values[future])) and not np.any(np.isnan(values[~future]))
    past = pe_lib.t5_relative_bucket(explorer.offsets[~future], bidirectional=False)
    assert np.array_equal(explorer.buckets[~future], past) and explorer.last_from == 113
    assert explorer.half_width == 28  # read on the past side, which the mask keeps
    assert all(span.get_visible() for span in explorer._future)


def test_methods_explorer_reacts_to_each_control():
    explorer = ch07.MethodsExplorer()
    frames = {explorer.update()}
    explorer.update(base=5e5)
    assert explorer.half_width > 28
    frames.add(explorer.image.value)
    for values in ({"head_dim": 256}, {"slope": 0.5}, {"buckets": 8}, {"max_distance": 1024}, {"causal": True}):
        frames.add(explorer.update(**values))
    assert len(frames) == 7
    assert explorer.buckets[~np.isnan(explorer.buckets)].max() == 7  # causal, 8 buckets
    assert explorer._axes[2].get_ylim() == (-1, 8)


def test_alibi_explorer_shares_are_the_softmax_of_the_bias():
    explorer = ch07.ALiBiExplorer(num_heads=12, distance=64)
    assert np.allclose(explorer.slopes, pe_lib.alibi_slopes(12))
    last_row = pe_lib.alibi_bias(explorer.LENGTH, 12)[:, -1, :]  # the last query: keys at distances 2047 .. 0
    weights = pe_lib.softmax(last_row)[:, ::-1]  # by distance 0 .. 2047
    assert np.allclose(explorer.share_beyond, weights[:, 65:].sum(axis=1))
    kept = int((explorer.share_beyond > 0.01).sum())
    assert explorer._title.get_text() == f"beyond 64: {kept} of 12 heads keep > 1%"


def test_alibi_explorer_finding_quotes_the_steepest_and_gentlest_heads():
    """Each frame's caption, recomputed by the geometric sum: the share past d of exp(-m t), t = 0..2047."""
    explorer = ch07.ALiBiExplorer()
    for num_heads, distance in ((12, 64), (8, 1), (32, 1024), (6, 16)):
        explorer.update(num_heads=num_heads, distance=distance)
        slopes = np.array(pe_lib.alibi_slopes(num_heads))
        share = (
            np.exp(-slopes * (distance + 1)) * (1 - np.exp(-slopes * (2047 - distance))) / (1 - np.exp(-slopes * 2048))
        )
        quotes = {"heads over 1%": np.sum(share > 0.01), "heads": num_heads, "distance": distance}
        quotes |= {"steepest": slopes.max(), "gentlest": slopes.min(), "its share": share[slopes.argmin()]}
        if share[slopes.argmax()] >= 1e-6:  # else printed as a bound, "< 1e-06"
            quotes["steepest's share"] = share[slopes.argmax()]
        assert not findings.check_quotes(explorer.finding(), quotes), explorer.finding()
        assert not findings.finding_problems(explorer.finding())


def test_methods_explorer_finding_says_where_each_method_stands():
    explorer = ch07.MethodsExplorer()
    for settings in ({}, {"base": 1e6, "head_dim": 16}, {"causal": True, "buckets": 8, "max_distance": 1024}):
        explorer.update(**settings)
        finding = explorer.finding()
        assert f"below one half at distance {explorer.half_width:,}" in finding or explorer.half_width is None
        assert f"from {explorer.last_from} on" in finding and not findings.finding_problems(finding)
    explorer.update(base=1e6, head_dim=256, causal=False)  # its half width is past the ±256 of integer offsets
    theta = 1e6 ** (-np.arange(0, 256, 2) / 256)
    first = int(np.argmax([np.cos(t * theta).mean() < 0.5 for t in range(3000)]))
    assert first > 256 and explorer.half_width == first  # not the first drawn offset past it (1% apart out there)


def test_alibi_explorer_hides_the_heads_it_does_not_have():
    explorer = ch07.ALiBiExplorer()
    for num_heads in (2, 32, 6):
        explorer.update(num_heads=num_heads)
        assert sum(line.get_visible() for line in explorer._lines) == num_heads
        assert sum(bar.get_visible() for bar in explorer._bars) == num_heads
        assert explorer._right.get_xlim() == (0.4, num_heads + 0.6)
    line = explorer._lines[5]
    assert np.allclose(line.get_ydata(), -pe_lib.alibi_slopes(6)[5] * np.arange(1, explorer.LENGTH))


def test_alibi_explorer_far_distances_leave_only_the_flat_heads():
    explorer = ch07.ALiBiExplorer(num_heads=8, distance=1)
    near = explorer.share_beyond.copy()
    explorer.update(distance=1024)
    assert np.all(explorer.share_beyond < near)
    assert explorer.share_beyond[0] == 0 or explorer.share_beyond[0] < 1e-100
    assert 0.01 < explorer.share_beyond[-1] < 0.05  # slope 1/256: e^-4 of it is left at 1024
    assert explorer._title.get_text() == "beyond 1024: 1 of 8 heads keep > 1%"
