"""The smallest correct single-head self-attention, in NumPy, to show what it ignores.

softmax(Q K^T / sqrt(d_k)) V with Q = X W_q, K = X W_k, V = X W_v. Nothing in it refers to
where a row sits, so permuting the rows of X permutes the rows of the output the same way.
"""

import numpy as np

from . import _validate


def softmax(scores, axis=-1):
    """Softmax along `axis`, shifted by the maximum so large scores do not overflow."""
    shifted = scores - np.max(scores, axis=axis, keepdims=True)
    exp = np.exp(shifted)
    return exp / np.sum(exp, axis=axis, keepdims=True)


def _weight(name, value, d_in, width=None):
    weight = _validate.real_array(name, value, ndim=2)
    if weight.shape[0] != d_in or (width is not None and weight.shape[1] != width) or weight.shape[1] == 0:
        wanted = f"({d_in}, {'d_out >= 1' if width is None else width})"
        raise ValueError(f"{name} must have shape {wanted} to match x, got {weight.shape}")
    return weight


def self_attention(x, w_q, w_k, w_v, *, mask=None):
    """Scaled dot-product self-attention of the rows of x.

    x: (n, d_in); w_q, w_k: (d_in, d_k); w_v: (d_in, d_v).
    mask: optional boolean (n, n); True where row i may attend to column j.
    Returns (output (n, d_v), weights (n, n)); each row of weights sums to 1.
    """
    x = _validate.real_array("x", x, ndim=2)
    n, d_in = x.shape
    if n == 0 or d_in == 0:  # no rows: nothing to attend to; no features: every score is 0/0
        raise ValueError(f"x must have at least one row (position) and one column (feature), got shape {x.shape}")
    w_q = _weight("w_q", w_q, d_in)
    w_k = _weight("w_k", w_k, d_in, width=w_q.shape[1])
    w_v = _weight("w_v", w_v, d_in)
    scores = (x @ w_q) @ (x @ w_k).T / np.sqrt(w_q.shape[1])
    if mask is not None:
        mask = _validate.as_numpy(mask)
        if mask.dtype != bool or mask.shape != (n, n):
            raise ValueError(f"mask must be a boolean array of shape ({n}, {n}), got {mask.dtype} {mask.shape}")
        if n and not mask.any(axis=1).all():
            row = int(np.flatnonzero(~mask.any(axis=1))[0])
            raise ValueError(f"mask row {row} allows no position: every row needs at least one True")
        scores = np.where(mask, scores, -np.inf)
    weights = softmax(scores)
    return weights @ (x @ w_v), weights
