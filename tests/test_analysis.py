"""pe_lib.analysis: the measures of a position table."""

import math

import numpy as np
import pytest
import torch
from torch import nn

import pe_lib
from pe_lib import analysis


def test_offset_profile_shapes_and_values():
    offsets, mean, low, high = analysis.offset_profile(pe_lib.integer_encoding(5, 3))
    assert np.array_equal(offsets, np.arange(5))
    # integer: PE(p) . PE(p+k) / d = p (p + k); offset 1 pairs (0,1) (1,2) (2,3) (3,4)
    assert (low[1], high[1], mean[1]) == (0.0, 12.0, 5.0)
    assert low[4] == high[4] == 0.0
    _, _, low, high = analysis.offset_profile(pe_lib.sinusoidal_encoding(50, 16))
    assert np.max(high - low) < 1e-12
    with pytest.raises(ValueError, match=r"2-D array"):
        analysis.offset_profile(np.zeros(4))


def test_cosine_similarity_of_rows():
    table = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [0.0, 0.0]])
    similarity = analysis.cosine_similarity(table)
    assert similarity.shape == (4, 4)
    assert np.allclose(np.diag(similarity), 1.0)
    assert similarity[0, 1] == pytest.approx(0.0) and similarity[0, 2] == pytest.approx(np.sqrt(0.5))
    assert similarity[3, 0] == 0.0  # a zero row has no direction


def test_similarity_by_offset_averages_each_diagonal():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(7, 4))
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    expected = [np.mean([unit[p] @ unit[p + k] for p in range(7 - k)]) for k in range(7)]
    assert np.allclose(analysis.similarity_by_offset(table), expected)
    assert np.allclose(analysis.similarity_by_offset(table, 3), expected[:4])
    with pytest.raises(ValueError, match="max_offset"):
        analysis.similarity_by_offset(table, 7)


def test_similarity_by_offset_of_the_sinusoid_is_the_closed_form():
    d_model = 32
    curve = analysis.similarity_by_offset(pe_lib.sinusoidal_encoding(60, d_model), 10)
    closed = np.cos(np.outer(np.arange(11), pe_lib.frequencies(d_model))).mean(axis=1)  # norm**2 = d/2
    assert np.allclose(curve, closed)


def test_pca_2d_finds_a_line_and_a_circle():
    t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
    circle = np.stack([np.cos(t), np.sin(t), np.zeros_like(t)], axis=1) @ np.linalg.qr(np.ones((3, 3)) + np.eye(3))[0]
    coordinates, explained = analysis.pca_2d(circle + 5.0)
    assert coordinates.shape == (40, 2) and np.allclose(explained, [0.5, 0.5])
    assert np.allclose(np.linalg.norm(coordinates, axis=1), 1.0)  # the circle, centred
    assert np.all(coordinates[0] <= 0)
    line = np.outer(np.arange(5.0), [1.0, 2.0, 2.0])
    _, explained = analysis.pca_2d(line)
    assert explained[0] == pytest.approx(1.0) and explained[1] == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("table", [np.ones(5), np.ones((1, 3)), np.ones((3, 1)), [[1.0, np.nan], [0.0, 1.0]]])
def test_pca_2d_rejects_tables_without_two_rows_and_columns(table):
    with pytest.raises(ValueError):
        analysis.pca_2d(table)


@pytest.mark.parametrize("d_model", [16, 256])
def test_token_vector_norms_match_each_initialisation(d_model):
    pe_lib_init, default_init, xavier_init = analysis.TOKEN_INITS
    assert analysis.token_vector_norms(pe_lib_init, d_model).mean() == pytest.approx(1.0, rel=0.1)
    assert analysis.token_vector_norms(default_init, d_model).mean() == pytest.approx(math.sqrt(d_model), rel=0.1)
    xavier = analysis.token_vector_norms(xavier_init, d_model, vocab=1000)
    assert xavier.mean() == pytest.approx(math.sqrt(2 * d_model / (1000 + d_model)), rel=0.1)
    assert analysis.token_vector_norms(pe_lib_init, d_model, rows=7).shape == (7,)


def test_token_vector_norms_xavier_bound_is_torchs():
    table = torch.empty(500, 16)
    nn.init.xavier_uniform_(table)
    expected = analysis.token_vector_norms(analysis.TOKEN_INITS[2], 16, rows=500, vocab=500).mean()
    assert table.norm(dim=1).mean().item() == pytest.approx(expected, rel=0.05)


def test_token_vector_norms_are_reproducible_and_reject_unknown_init():
    a = analysis.token_vector_norms(analysis.TOKEN_INITS[0], 32, seed=3)
    assert np.array_equal(a, analysis.token_vector_norms(analysis.TOKEN_INITS[0], 32, seed=3))
    with pytest.raises(ValueError, match="init must be one of"):
        analysis.token_vector_norms("kaiming", 32)


def test_position_probe_interpolates_but_does_not_extrapolate():
    table = pe_lib.sinusoidal_encoding(128, 64)
    predicted = analysis.position_probe(table, np.arange(0, 64, 2))  # even positions below 64
    assert np.abs(predicted[1:63:2] - np.arange(1, 63, 2)).max() < 0.5  # held-out odd positions: recovered
    assert np.abs(predicted[96:] - np.arange(96, 128)).mean() > 20  # past the fitted range: not


def test_position_probe_is_exact_for_an_integer_column_and_checks_its_input():
    table = np.c_[np.arange(10.0), np.arange(10.0) ** 2]
    assert np.allclose(analysis.position_probe(table, [0, 3, 7], ridge=1e-9), np.arange(10), atol=1e-6)
    with pytest.raises(ValueError, match="trained must hold at least 2 row indices in \\[0, 10\\)"):
        analysis.position_probe(table, [3, 10])
    with pytest.raises(ValueError, match="ridge must be > 0"):
        analysis.position_probe(table, [0, 1], ridge=0.0)


def test_score_terms_add_up_and_only_the_plain_dot_product_of_sinusoids_is_toeplitz():
    rng = np.random.default_rng(0)
    n, d = 16, 32
    content, positions = rng.normal(size=(n, d)), pe_lib.sinusoidal_encoding(n, d)
    w_q, w_k = rng.normal(size=(d, 8)), rng.normal(size=(d, 8))
    terms = analysis.score_terms(content, positions, w_q, w_k)
    assert list(terms) == ["content·content", "content·position", "position·content", "position·position"]
    full = ((content + positions) @ w_q) @ ((content + positions) @ w_k).T
    assert np.allclose(sum(terms.values()), full)
    assert analysis.diagonal_spread(positions @ positions.T).max() < 1e-12  # W_Q = W_K = I: offsets only
    assert analysis.diagonal_spread(terms["position·position"])[1:8].min() > 1.0  # a random W: not
    with pytest.raises(ValueError, match="w_q, w_k both"):
        analysis.score_terms(content, positions, w_q, w_k[:, :4])


def test_correlated_columns_probe_finds_the_sinusoids_slow_columns_and_reads_past_the_fitted_rows():
    table = pe_lib.sinusoidal_encoding(512, 384)
    fitted = np.arange(1, 256, 2)
    predicted, chosen = analysis.correlated_columns_probe(table, fitted, 3)
    assert chosen.tolist() == [382, 380, 378]  # the three slowest sine columns, found from the data
    assert np.abs(predicted[256:] - np.arange(256, 512)).max() < 1e-3
    constant = np.hstack([np.ones((20, 1)), np.arange(20.0)[:, None]])  # a constant column is never chosen
    _, chosen = analysis.correlated_columns_probe(constant, np.arange(0, 20, 2), 1)
    assert chosen.tolist() == [1]
    with pytest.raises(ValueError, match="columns"):
        analysis.correlated_columns_probe(table, fitted, 0)
    with pytest.raises(ValueError, match="trained"):
        analysis.correlated_columns_probe(table, [3], 1)
