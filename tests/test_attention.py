"""pe_lib.self_attention: correct numbers, and blind to the order of its rows."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pe_lib


def _weights(rng, d_in, d_k, d_v):
    return rng.normal(size=(d_in, d_k)), rng.normal(size=(d_in, d_k)), rng.normal(size=(d_in, d_v))


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(1, 12),
    d_in=st.integers(1, 16),
    d_k=st.integers(1, 8),
    d_v=st.integers(1, 8),
    seed=st.integers(0, 10**6),
)
def test_permuting_rows_permutes_outputs(n, d_in, d_k, d_v, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d_in))
    w_q, w_k, w_v = _weights(rng, d_in, d_k, d_v)
    order = rng.permutation(n)
    out, weights = pe_lib.self_attention(x, w_q, w_k, w_v)
    out_p, weights_p = pe_lib.self_attention(x[order], w_q, w_k, w_v)
    np.testing.assert_allclose(out_p, out[order], atol=1e-10)
    np.testing.assert_allclose(weights_p, weights[np.ix_(order, order)], atol=1e-12)


def test_matches_torch_scaled_dot_product_attention():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 5))
    w_q, w_k, w_v = _weights(rng, 5, 4, 3)
    out, weights = pe_lib.self_attention(x, w_q, w_k, w_v)
    q, k, v = (torch.from_numpy(x @ w) for w in (w_q, w_k, w_v))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    np.testing.assert_allclose(out, expected.numpy(), atol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)


def test_causal_mask():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 3))
    w_q, w_k, w_v = _weights(rng, 3, 2, 2)
    out, weights = pe_lib.self_attention(x, w_q, w_k, w_v, mask=np.tril(np.ones((4, 4), dtype=bool)))
    assert np.all(np.triu(weights, k=1) == 0)
    np.testing.assert_allclose(out[0], x[0] @ w_v)  # the first row can only see itself


def test_large_scores_do_not_overflow():
    x = np.array([[1000.0], [-1000.0]])
    out, weights = pe_lib.self_attention(x, np.eye(1) * 10, np.eye(1) * 10, np.eye(1))
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(weights))


def test_torch_inputs_that_require_grad_give_the_numpy_answer():
    rng = np.random.default_rng(5)
    x, w_q, w_k, w_v = rng.normal(size=(4, 3)), *_weights(rng, 3, 2, 2)
    expected, weights = pe_lib.self_attention(x, w_q, w_k, w_v)
    tensors = [torch.tensor(a, requires_grad=True) for a in (x, w_q, w_k, w_v)]
    out, out_weights = pe_lib.self_attention(*tensors, mask=torch.ones(4, 4, dtype=torch.bool))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(out_weights, weights)
