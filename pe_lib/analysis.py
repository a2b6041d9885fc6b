"""Measures of a position table: how similar positions are, by offset and in a 2-D picture.

Every chapter that looks at a table (02's requirements, 04's pendulums, 05's learned tables,
06's norms) measures it here, so one measure has one definition. NumPy only; shapes in the
docstrings: a table is (n, d), one row per position.
"""

import numpy as np

from . import _validate, encodings


def _table(table):
    table = _validate.real_array("table", table, 2)
    if table.shape[0] < 1 or table.shape[1] < 1:
        raise ValueError(f"table must have at least one row and one column, got shape {table.shape}")
    return table


def cosine_similarity(table):
    """Cosine similarity of every pair of rows: table (n, d) -> (n, n), entry [p, q] = cos(angle(row p, row q)).

    A zero row has no direction: its similarities are 0 (and 1 with itself).
    """
    table = _table(table)
    norms = np.linalg.norm(table, axis=1, keepdims=True)
    unit = np.divide(table, norms, out=np.zeros_like(table), where=norms > 0)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, 1.0)
    return similarity


def similarity_by_offset(table, max_offset=None):
    """Mean cosine similarity of rows k apart: table (n, d) -> (max_offset + 1,), entry k = mean_p cos(row p, row p+k).

    Entry 0 is 1. max_offset defaults to n - 1 (each offset k averages n - k pairs).
    """
    similarity = cosine_similarity(table)
    n = similarity.shape[0]
    max_offset = n - 1 if max_offset is None else _validate.count("max_offset", max_offset)
    if max_offset >= n:
        raise ValueError(f"max_offset must be smaller than the number of rows {n}, got {max_offset}")
    return np.array([np.diagonal(similarity, k).mean() for k in range(max_offset + 1)])


def pca_2d(table):
    """The rows of table (n, d) projected on their two main directions: (n, 2), and the variance share (2,).

    Centres the rows, takes the SVD, returns (coordinates, explained), where explained[j] is the
    fraction of the total variance along direction j. The sign of each axis is arbitrary (fixed
    here so that the first row has non-positive coordinates).
    """
    table = _table(table)
    if table.shape[0] < 2 or table.shape[1] < 2:
        raise ValueError(f"table must have at least 2 rows and 2 columns for a 2-D projection, got {table.shape}")
    centred = table - table.mean(axis=0)
    u, s, _ = np.linalg.svd(centred, full_matrices=False)
    coordinates = u[:, :2] * s[:2]
    coordinates *= np.where(coordinates[0] > 0, -1.0, 1.0)
    total = float(np.sum(s**2))
    explained = s[:2] ** 2 / total if total > 0 else np.zeros(2)
    return coordinates, explained


def position_probe(table, trained, *, ridge=1e-3):
    """A linear read-out of the position from each row: fit on the rows `trained`, predict every row.

    table: (n, d); trained: indices of the rows to fit on (row p has position p). Least squares
    with a bias and a small ridge penalty (the fit is under-determined when d >= len(trained)).
    Returns the predicted positions, shape (n,). A probe that recovers held-out positions inside
    the trained range but not past it interpolates without extrapolating.
    """
    table = _table(table)
    trained = _validate.real_array("trained", np.atleast_1d(trained), ndim=1).astype(np.int64)
    if trained.size < 2 or trained.min() < 0 or trained.max() >= table.shape[0]:
        raise ValueError(f"trained must hold at least 2 row indices in [0, {table.shape[0]}), got {trained.size} rows")
    ridge = _validate.finite_real("ridge", ridge)
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0 (it keeps the fit well-posed when d >= len(trained)), got {ridge}")
    features = np.hstack([table, np.ones((table.shape[0], 1))])
    fit = features[trained]
    # The normal equations of ridge regression: (d+1)^2 numbers, a few ms even for 512 x 384 tables.
    weights = np.linalg.solve(fit.T @ fit + ridge * np.eye(fit.shape[1]), fit.T @ trained.astype(np.float64))
    return features @ weights


def correlated_columns_probe(table, trained, columns):
    """Plain least squares on the `columns` columns that follow the position most closely on the rows `trained`.

    The columns are chosen from the data: those whose values correlate most (|Pearson r|) with the
    position over the trained rows, so the probe reads what the table offers rather than what a formula
    says to read. Returns (predicted positions (n,), the chosen column indices, most correlated first).
    """
    table = _table(table)
    trained = _validate.real_array("trained", np.atleast_1d(trained), ndim=1).astype(np.int64)
    if trained.size < 2 or trained.min() < 0 or trained.max() >= table.shape[0]:
        raise ValueError(f"trained must hold at least 2 row indices in [0, {table.shape[0]}), got {trained.size} rows")
    columns = _validate.int_in_range("columns", columns, 1, min(table.shape[1], trained.size - 1))
    rows = table[trained] - table[trained].mean(axis=0)
    position = trained - trained.mean()
    norms = np.linalg.norm(rows, axis=0) * np.linalg.norm(position)
    correlation = np.abs(rows.T @ position) / np.where(norms > 0, norms, np.inf)  # a constant column: 0
    chosen = np.argsort(-correlation, kind="stable")[:columns]
    design = np.hstack([table[:, chosen], np.ones((table.shape[0], 1))])
    weights, *_ = np.linalg.lstsq(design[trained], trained.astype(np.float64), rcond=None)
    return design @ weights, chosen


def score_terms(content, positions, w_q, w_k):
    """The attention score of x = content + positions, split into its four parts.

    content, positions: (n, d); w_q, w_k: (d, d_k). The score (x W_q)(x W_k)^T, (n, n), is the sum of
    the four (n, n) matrices returned in a dict: "content·content", "content·position",
    "position·content" and "position·position" (query part first).
    """
    content, positions = _table(content), _table(positions)
    w_q, w_k = _validate.real_array("w_q", w_q, 2), _validate.real_array("w_k", w_k, 2)
    if content.shape != positions.shape or w_q.shape != w_k.shape or w_q.shape[0] != content.shape[1]:
        raise ValueError(
            f"content and positions must both be (n, d) and w_q, w_k both (d, d_k); got {content.shape}, "
            f"{positions.shape}, {w_q.shape}, {w_k.shape}"
        )
    parts = {"content": content, "position": positions}
    return {f"{a}·{b}": (parts[a] @ w_q) @ (parts[b] @ w_k).T for a in parts for b in parts}


def diagonal_spread(matrix):
    """For each offset k = 0..n-1: max - min of matrix[p, p + k] over p, shape (n,).

    All zeros means a Toeplitz matrix: every entry depends on the offset q - p only.
    """
    matrix = _validate.real_array("matrix", matrix, 2)
    return np.array([np.ptp(np.diagonal(matrix, k)) for k in range(matrix.shape[1])])


def offset_profile(table):
    """How similar positions k apart are, for every offset k: the dot product per dimension.

    table: (n, d). Returns (offsets, mean, low, high), each of shape (n,): for offset k the
    mean, smallest and largest of PE(p) . PE(p+k) / d over all p. A narrow band (low == high)
    means the similarity depends on the offset only, not on where the pair sits.
    """
    table = _table(table)
    n, d = table.shape
    similarity = table @ table.T / d
    offsets = np.arange(n)
    mean, low, high = np.empty(n), np.empty(n), np.empty(n)
    for k in offsets:
        diagonal = np.diagonal(similarity, k)
        mean[k], low[k], high[k] = diagonal.mean(), diagonal.min(), diagonal.max()
    return offsets, mean, low, high


def cos_sum(offsets, d_model, *, base=10000.0):
    """PE(p)·PE(p+k) of the sinusoidal encoding in closed form, for each offset k: (len(offsets),).

    Each sin/cos pair adds sin(pw)sin((p+k)w) + cos(pw)cos((p+k)w) = cos(kw), whatever p is, so
    the dot product is the sum over pairs of cos(k w_i): it depends on the gap k alone.
    """
    offsets = _validate.real_array("offsets", np.atleast_1d(offsets), ndim=1)
    return np.cos(np.multiply.outer(offsets, encodings.frequencies(d_model, base=base))).sum(axis=-1)


TOKEN_INITS = ("pe_lib: N(0, 1/d)", "nn.Embedding default: N(0, 1)", "xavier_uniform, vocab 37000")


def token_vector_norms(init, d_model, *, rows=256, vocab=37000, seed=0):
    """Norms of `rows` freshly initialised token vectors of size d_model, before any scaling.

    init: one of "pe_lib: N(0, 1/d)" (pe_lib.TransformerEmbedding), "nn.Embedding default:
    N(0, 1)" (torch's default, kept by The Annotated Transformer's Embeddings class) or
    "xavier_uniform, vocab 37000" (what nn.init.xavier_uniform_ draws for a (vocab, d_model)
    table, as The Annotated Transformer's make_model does). Returns an array (rows,).
    """

    rng = np.random.default_rng(seed)
    if init == TOKEN_INITS[0]:
        table = rng.normal(0.0, d_model**-0.5, size=(rows, d_model))
    elif init == TOKEN_INITS[1]:
        table = rng.normal(0.0, 1.0, size=(rows, d_model))
    elif init == TOKEN_INITS[2]:
        bound = (6.0 / (vocab + d_model)) ** 0.5
        table = rng.uniform(-bound, bound, size=(rows, d_model))
    else:
        options = ", ".join(repr(name) for name in TOKEN_INITS)
        raise ValueError(f"init must be one of {options}, got {init!r}")
    return np.linalg.norm(table, axis=1)
