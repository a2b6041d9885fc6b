"""Notebook 10, section 5 (which RoPE pairs and which heads): ch10_heads' figures, rank correlation and explorer,
on small hand-made measurements (the explorer's defaults, SmolLM2 on a short text, are built by test_explorer)."""

import matplotlib
import numpy as np
import pytest
from test_figures import text_problems

from pe_lib import ch10_heads as ch10
from pe_lib import figures, heads


def _made_up(layers=4, n_heads=6, n_kv=2, n=20, pairs=32, seed=0):
    """Attention of layers x heads (a previous-token head at layer 2, head 1; the rest on token 0) and pair norms."""
    rng = np.random.default_rng(seed)
    probs = np.zeros((layers, n_heads, n, n))
    probs[..., :, 0] = 1.0
    probs[2, 1] = np.eye(n, k=-1)
    probs[2, 1, 0, 0] = 1.0
    q = rng.uniform(0.5, 1.0, (layers, n_heads, pairs))
    q[2, 1, :2] = 5.0  # the previous-token head's query weights in the fastest pairs
    k = rng.uniform(0.5, 1.0, (layers, n_kv, pairs))
    return probs, heads.PairNorms(q, k)


def test_rank_correlation_is_spearmans():
    assert ch10.rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert ch10.rank_correlation([1, 2, 3, 4], [4, 1, 0, -3]) == pytest.approx(-1.0)
    assert ch10.rank_correlation(np.array([1.0, 2, 3]), np.array([1.0, 8, 27])) == pytest.approx(1.0)  # monotone
    with pytest.raises(ValueError, match="same number"):
        ch10.rank_correlation([1, 2, 3], [1, 2])


@pytest.mark.parametrize("lecture", [False, True])
def test_the_figures_draw_every_head_and_keep_their_texts_apart(lecture):
    figures.use_style(lecture=lecture)
    try:
        probs, norms = _made_up()
        previous, first = heads.previous_token_score(probs), heads.first_token_score(probs, skip=2)
        fig = ch10.head_scores(previous, first, strongest=[(2, 1)])
        assert [im.get_array().shape for ax in fig.axes[:2] for im in ax.get_images()] == [(4, 6), (4, 6)]
        assert not text_problems(fig)
        share = heads.norm_share(norms.q)
        fast = share[..., :2].sum(-1)
        fig = ch10.pair_profiles(share, share, previous, fast, strongest=[(2, 1), (0, 0)])
        left, right = fig.axes
        assert np.allclose(left.lines[0].get_ydata(), share.mean((0, 1)))
        assert [t.get_text() for t in right.texts] == ["L2 H1", "L0 H0"]
        assert not text_problems(fig)
    finally:
        matplotlib.pyplot.close("all")
        figures.use_style()


def test_the_explorer_shows_the_chosen_heads_map_and_profile_and_says_so():
    probs, norms = _made_up()
    explorer = ch10.HeadsExplorer(probs, norms, window=10)
    assert explorer.values() == {"layer": 2, "head": 1}  # the strongest previous-token head first
    assert explorer.maps.shape == (4, 6, 10, 10) and np.isnan(explorer.maps[0, 0, 0, 1])  # the future blank
    assert "each query puts 1.00 of its attention on the token just before it and 0.00 on token 0" in explorer.finding()
    assert "in the 8 fastest pairs (an even spread: 25%)" in explorer.alt_text()
    explorer.update(layer=3, head=5)
    assert np.array_equal(explorer._image.get_array().filled(np.nan)[:, 0], np.ones(10))
    assert np.allclose(explorer._k_line.get_ydata(), heads.norm_share(norms.k)[3, 5 // 3])  # the key head it reads
    assert "layer 3, head 5: previous token" in explorer._title.get_text()
    explorer.close()


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda p, n: ch10.HeadsExplorer(p, (n.q, n.k)), TypeError, ["norms", "PairNorms", "tuple"]),
        (lambda p, n: ch10.HeadsExplorer(p[None], n), ValueError, ["probs", "(layers, heads, n, n)", "(1, 4, 6"]),
        (lambda p, n: ch10.HeadsExplorer(p, n, window=1), ValueError, ["window", "1", "from 2"]),
        (lambda p, n: ch10.HeadsExplorer(p, n, layer=4), ValueError, ["layer", "4", "from 0 to 3"]),
        (lambda p, n: ch10.HeadsExplorer(p * 2, n), ValueError, ["probs", "sum to 1"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    probs, norms = _made_up()
    with pytest.raises(error) as info:
        call(probs, norms)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
