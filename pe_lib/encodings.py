"""Position signals as NumPy arrays: the naive candidates and the sinusoidal encoding.

Every function returns a table with one row per position, shape (n, d_model), so tables can
be compared, plotted and added to token embeddings the same way.
"""

import numbers
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _validate

LAYOUTS = ("interleaved", "concatenated")

# Rows per block when a float32 table is built by angle addition (see _float32_table).
_BLOCK = 256
# Tables with at least this many entries are filled by several threads.
_PARALLEL_SIZE = 1 << 20


def _denominators(d_model, base):
    """The paper's divisor base**(2i/d_model) for each sin/cos pair i, shape (ceil(d/2),)."""
    # The C library's pow (Python's float **) rounds correctly here; NumPy's vectorised
    # power can be an ulp off, which at position 10**4 is already 1e-12 in the angle.
    return np.array([base ** (2 * i / d_model) for i in range((d_model + 1) // 2)])


def frequencies(d_model, *, base=10000.0):
    """Angular frequency w_i = base**(-2i/d_model) of each sin/cos pair, shape (ceil(d/2),).

    w_0 = 1 (one radian per position); the last pair turns slowest.
    """
    return 1.0 / _denominators(_validate.positive_int("d_model", d_model), _validate.base(base))


def wavelengths(d_model, *, base=10000.0):
    """Positions per full turn of each pair, 2*pi/w_i: a geometric progression from 2*pi."""
    return 2 * np.pi * _denominators(_validate.positive_int("d_model", d_model), _validate.base(base))


def _arrange(sin, cos, layout):
    """Place sin columns (n, ceil(d/2)) and cos columns (n, floor(d/2)) in the chosen layout."""
    if layout == "concatenated":
        return np.concatenate([sin, cos], axis=1)
    table = np.empty((sin.shape[0], sin.shape[1] + cos.shape[1]), dtype=sin.dtype)
    table[:, 0::2] = sin
    table[:, 1::2] = cos
    return table


def _float32_table(n, d_model, base, layout):
    """float32 table for positions 0..n-1 by angle addition, accumulated in float64.

    Write u(a) = sin a + i cos a. Then u(a + b) = u(a) * exp(-i b), so the row of position
    q*B + r is the row of q*B times the row of r: one complex multiply per sin/cos pair
    instead of a sin and a cos. Both factors are exact float64 values, the product is
    formed in float64 and rounded once into float32, so the result is correct to float32
    rounding at any position. A complex64 view of the output holds (sin, cos) pairs side
    by side, which is exactly the interleaved layout.
    """
    pairs = (d_model + 1) // 2
    block = min(_BLOCK, n)
    blocks = -(-n // block)
    denominators = _denominators(d_model, base)
    starts = np.arange(blocks, dtype=np.float64)[:, None] * block / denominators
    coarse = np.sin(starts) + 1j * np.cos(starts)  # u(q*B*w), shape (blocks, pairs)
    fine = np.exp(-1j * (np.arange(block, dtype=np.float64)[:, None] / denominators))  # (block, pairs)
    table = np.empty((blocks * block, 2 * pairs), dtype=np.float32)
    out = table.view(np.complex64).reshape(blocks, block, pairs)

    def fill(rows):
        np.multiply(coarse[rows, None, :], fine[None, :, :], out=out[rows], casting="same_kind")

    # NumPy releases the GIL inside a ufunc, so big tables are split across the cores.
    workers = min(os.cpu_count() or 1, blocks) if table.size >= _PARALLEL_SIZE else 1
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(fill, [slice(w * blocks // workers, (w + 1) * blocks // workers) for w in range(workers)]))
    table = table[:n]
    if layout == "concatenated":
        return np.concatenate([table[:, 0::2], table[:, 1:d_model:2]], axis=1)
    if table.shape[1] != d_model:  # odd d_model: drop the cos of the last pair
        return np.ascontiguousarray(table[:, :d_model])
    return table


def sinusoidal_encoding(positions, d_model, *, base=10000.0, layout="interleaved", dtype=np.float64):
    """The sinusoidal positional encoding of "Attention Is All You Need", shape (n, d_model).

    positions: an int n (positions 0..n-1) or a 1-D array of positions (ints or floats).
    layout "interleaved" (the paper): column 2i = sin(p * w_i), column 2i+1 = cos(p * w_i),
    with w_i = base**(-2i/d_model). Layout "concatenated" (tensor2tensor, the TensorFlow
    tutorial): all sin columns, then all cos columns, same frequencies. For odd d_model
    the interleaved table ends with a sin column; the concatenated one has ceil(d/2) sins.
    Angles are always formed in float64 and the result is cast at the end, so float32 and
    float16 tables are correct to their rounding at any position.
    """
    d_model = _validate.positive_int("d_model", d_model)
    base = _validate.base(base)
    layout = _validate.choice("layout", layout, LAYOUTS)
    dtype = _validate.float_dtype(dtype)
    if isinstance(positions, (numbers.Integral, bool, np.bool_)):
        n = _validate.count("positions", positions)
        if dtype == np.float32 and n > 0:
            return _float32_table(n, d_model, base, layout)
        positions = np.arange(n, dtype=np.float64)
    elif np.ndim(positions) == 0:
        raise TypeError(f"positions must be an int count or a 1-D array of positions, got {positions!r}")
    else:
        positions = _validate.real_array("positions", positions, ndim=1)
    angles = positions[:, None] / _denominators(d_model, base)
    table = _arrange(np.sin(angles), np.cos(angles[:, : d_model // 2]), layout)
    return table.astype(dtype, copy=False)


def relative_rotation(k, d_model, *, base=10000.0):
    """The matrix M_k with PE(p + k) = M_k @ PE(p) for every p (interleaved layout), (d, d).

    Block diagonal: each sin/cos pair turns by the angle k * w_i, whatever p is. That is why
    a fixed linear map (which attention can learn) expresses "k positions further on".
    Needs an even d_model: an odd table ends with a sin that has no cos partner.
    """
    d_model = _validate.positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"relative_rotation needs an even d_model (sin/cos pairs), got d_model={d_model}")
    k = _validate.finite_real("k", k)
    angles = k / _denominators(d_model, _validate.base(base))
    cos, sin = np.cos(angles), np.sin(angles)
    rotation = np.zeros((d_model, d_model))
    even = np.arange(0, d_model, 2)
    rotation[even, even] = cos
    rotation[even, even + 1] = sin
    rotation[even + 1, even] = -sin
    rotation[even + 1, even + 1] = cos
    return rotation


def integer_encoding(n, d_model):
    """Every column holds the position p itself, shape (n, d_model): unbounded as n grows."""
    n = _validate.count("n", n)
    d_model = _validate.positive_int("d_model", d_model)
    return np.repeat(np.arange(n, dtype=np.float64)[:, None], d_model, axis=1)


def normalized_encoding(n, d_model):
    """Every column holds p / (n - 1), shape (n, d_model): bounded, but its meaning depends on n."""
    n = _validate.count("n", n)
    d_model = _validate.positive_int("d_model", d_model)
    scaled = np.arange(n, dtype=np.float64) / max(n - 1, 1)
    return np.repeat(scaled[:, None], d_model, axis=1)


def binary_encoding(n, d_model):
    """Column j holds bit j of p, least significant first, shape (n, d_model).

    Bounded and unique, but only 2**d_model positions fit.
    """
    n = _validate.count("n", n)
    d_model = _validate.positive_int("d_model", d_model)
    if d_model < n.bit_length() and n > 2**d_model:
        raise ValueError(f"binary_encoding fits at most 2**d_model = {2**d_model} positions, got n={n}")
    bits = min(d_model, max(n - 1, 0).bit_length())
    table = np.zeros((n, d_model))
    table[:, :bits] = (np.arange(n)[:, None] >> np.arange(bits)) & 1
    return table


def dot_product_similarity(encoding):
    """All pairwise dot products of the rows of an (n, d) table, shape (n, n)."""
    encoding = _validate.real_array("encoding", encoding, ndim=2)
    return encoding @ encoding.T
