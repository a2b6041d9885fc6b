"""Relative positions: rotary embeddings (RoPE) and their context extensions, ALiBi, T5 buckets.

RoPE turns each pair of query/key features by an angle proportional to the position, so a
query-key dot product depends only on how far apart the two tokens are. The math is NumPy;
apply_rope also takes torch tensors and RotaryEmbedding is the torch module. Angles are always
formed in float64 (position times frequency) and only their cos/sin are rounded, because a
float32 angle at position 1e5 is already off by ~4e-3 radians.
"""

import math

import numpy as np
import torch
from torch import nn

from . import _validate
from .rope_scaling import LENGTH_DEPENDENT, check_scaling, scaled_frequencies

ROPE_LAYOUTS = ("interleaved", "half")


def _rotary_dim(rotary_dim, head_dim):
    if rotary_dim is None:
        return head_dim
    rotary_dim = _validate.int_in_range("rotary_dim", rotary_dim, 2, head_dim)
    if rotary_dim % 2:
        raise ValueError(f"rotary_dim must be even (RoPE turns pairs of features), got {rotary_dim}")
    return rotary_dim


def _cos_sin(positions, theta):
    """cos and sin of the float64 angles positions * theta, each (n, len(theta)) float64."""
    angles = positions[:, None] * theta[None, :]
    return np.cos(angles), np.sin(angles)


def _rotate(x, cos, sin, layout, rotary_dim):
    """Turn the pairs in the first rotary_dim features of x (..., n, head_dim); cos, sin (n, rotary_dim // 2).

    x is NumPy or torch; cos and sin may be either and are cast to the dtype of the multiply-add
    (float32 for half precision, else x's own), so the only rounding of an angle is its cos/sin.
    """
    if isinstance(x, torch.Tensor):
        work = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        cos, sin = (torch.as_tensor(c).to(dtype=work, device=x.device) for c in (cos, sin))
        y = x.to(work)
        out = torch.empty_like(y)
    else:
        work = np.float32 if x.dtype == np.float16 else x.dtype
        cos, sin = (np.asarray(c, dtype=work) for c in (cos, sin))
        y = x.astype(work, copy=False)
        out = np.empty_like(y)
    half = rotary_dim // 2
    if layout == "interleaved":  # pairs (0, 1), (2, 3), ...
        first, second = slice(0, rotary_dim, 2), slice(1, rotary_dim, 2)
    else:  # "half": pairs (i, i + rotary_dim/2), the rotate_half layout
        first, second = slice(0, half), slice(half, rotary_dim)
    a, b = y[..., first], y[..., second]
    # Written into one preallocated output: no concatenation copies the tensor again.
    out[..., first] = a * cos - b * sin
    out[..., second] = a * sin + b * cos
    out[..., rotary_dim:] = y[..., rotary_dim:]  # the features past rotary_dim pass through
    return out.to(x.dtype) if isinstance(x, torch.Tensor) else out.astype(x.dtype, copy=False)


def _check_x(x):
    """x as an array or tensor of floats with shape (..., n, head_dim), head_dim even."""
    if isinstance(x, torch.Tensor):
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    else:
        x = np.asarray(x)
        if x.dtype.type not in (np.float16, np.float32, np.float64):
            raise TypeError(f"x must be a floating-point array (float16, float32 or float64), got dtype {x.dtype}")
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., n, head_dim) with at least 2 dimensions, got {tuple(x.shape)}")
    if x.shape[-1] % 2 or x.shape[-1] == 0:
        raise ValueError(f"x's last dimension head_dim must be even and > 0 (pairs), got shape {tuple(x.shape)}")
    return x


def _positions(positions, n):
    """Positions 0..n-1, or the given ones checked: 1-D, n of them, finite; float64 (n,)."""
    if positions is None:
        return np.arange(n, dtype=np.float64)
    positions = _validate.real_array("positions", positions, ndim=1)
    if positions.shape[0] != n:
        raise ValueError(
            f"positions must hold one position per row (dim -2) of the input, n={n}, got {positions.shape[0]}"
        )
    return positions


def apply_rope(x, positions=None, *, base=10000.0, layout="interleaved", rotary_dim=None, scaling=None):
    """Rotate x (..., n, head_dim) by RoPE: NumPy array in, NumPy array out; torch tensor in, same dtype/device out.

    positions: one per row (..., n, :), default 0..n-1; ints or floats, list, array or tensor.
    Pair (a, b) at position p turns by phi = p * theta_i: a' = a cos phi - b sin phi, b' = a sin phi + b cos phi.
    layout "interleaved" pairs features (0, 1), (2, 3), ... (RoFormer, GPT-J, Meta checkpoints);
    "half" pairs (i, i + d/2) (GPT-NeoX, Hugging Face Llama's rotate_half).
    rotary_dim: turn only the first rotary_dim features (even); frequencies then use rotary_dim as
    the dimension, theta_i = base**(-2i/rotary_dim), as GPT-NeoX does. The rest pass through.
    scaling: any rope-scaling dict rope_frequencies takes; "dynamic" and "longrope" see the largest
    position + 1 as the sequence length, as transformers does. The attention factor of "yarn" and
    "longrope" (rope_attention_factor) is left out: this stays a pure rotation.
    Angles are formed in float64; float16/bfloat16 inputs are multiplied in float32. x is never modified.
    """
    x = _check_x(x)
    head_dim = x.shape[-1]
    rotary_dim = _rotary_dim(rotary_dim, head_dim)
    layout = _validate.choice("layout", layout, ROPE_LAYOUTS)
    positions = _positions(positions, x.shape[-2])
    scaling = check_scaling(scaling)
    theta = scaled_frequencies(rotary_dim, _validate.base(base), scaling, _seq_len(scaling, positions))
    cos, sin = _cos_sin(positions, theta)
    return _rotate(x, cos, sin, layout, rotary_dim)


def _seq_len(scaling, positions):
    """The length a dynamic or longrope scaling sees, as transformers: the largest position + 1 (else None)."""
    if scaling is None or scaling["rope_type"] not in LENGTH_DEPENDENT or positions.size == 0:
        return None
    return max(int(math.floor(positions.max())) + 1, 1)


class RotaryEmbedding(nn.Module):
    """RoPE as a torch module: forward(q, k, positions=None) -> (q, k) rotated, each (batch, heads, seq, head_dim).

    Equals apply_rope bit for bit. For "dynamic" and "longrope" scaling the frequencies follow each
    call's length (see apply_rope). For the default positions 0..seq-1 the cos/sin come from a
    float32 cache (built from float64 angles, grown when a longer sequence arrives, rebuilt in
    float32 after .half() or .to()); float64 inputs and explicit positions use fresh float64 values.
    """

    def __init__(self, head_dim, *, base=10000.0, layout="half", rotary_dim=None, scaling=None):
        super().__init__()
        self.head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
        self.rotary_dim = _rotary_dim(rotary_dim, self.head_dim)
        self.base = _validate.base(base)
        self.layout = _validate.choice("layout", layout, ROPE_LAYOUTS)
        self.scaling = check_scaling(scaling)
        self.theta = scaled_frequencies(self.rotary_dim, self.base, self.scaling)
        self._build(0, None)

    def _build(self, rows, device):
        cos, sin = _cos_sin(np.arange(rows, dtype=np.float64), self.theta)
        self.register_buffer("cos_cached", torch.from_numpy(cos).to(torch.float32).to(device), persistent=False)
        self.register_buffer("sin_cached", torch.from_numpy(sin).to(torch.float32).to(device), persistent=False)

    def _apply(self, fn, *args, **kwargs):
        # .half() would round the cache to float16: rebuild it in float32 on the new device.
        super()._apply(fn, *args, **kwargs)
        self._build(self.cos_cached.shape[0], self.cos_cached.device)
        return self

    def _check(self, name, t):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            got = f"dtype {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise TypeError(f"{name} must be a floating-point torch tensor, got {got}")
        if t.dim() != 4 or t.shape[-1] != self.head_dim:
            raise ValueError(
                f"{name} must have shape (batch, heads, seq, head_dim) with head_dim={self.head_dim}, "
                f"got {tuple(t.shape)}"
            )

    def forward(self, q, k, positions=None):
        self._check("q", q)
        self._check("k", k)
        n = q.shape[-2]
        if k.shape[-2] != n:
            raise ValueError(
                f"q and k must have the same seq length (dim 2), got {q.shape[-2]} and {k.shape[-2]}; "
                "to rotate a query against a longer key cache, call apply_rope on each with its own positions"
            )
        if self.scaling is not None and self.scaling["rope_type"] in LENGTH_DEPENDENT:
            # Frequencies that depend on the length: computed for this call (transformers keeps the
            # largest length seen so far instead; the two agree while sequences only grow).
            positions = _positions(positions, n)
            theta = scaled_frequencies(self.rotary_dim, self.base, self.scaling, _seq_len(self.scaling, positions))
            cos, sin = _cos_sin(positions, theta)
        elif positions is not None or torch.float64 in (q.dtype, k.dtype):
            cos, sin = _cos_sin(_positions(positions, n), self.theta)
        else:
            if n > self.cos_cached.shape[0]:
                self._build(max(n, 2 * self.cos_cached.shape[0]), self.cos_cached.device)
            cos, sin = self.cos_cached[:n], self.sin_cached[:n]
        return (_rotate(q, cos, sin, self.layout, self.rotary_dim), _rotate(k, cos, sin, self.layout, self.rotary_dim))

    def extra_repr(self):
        return (
            f"head_dim={self.head_dim}, rotary_dim={self.rotary_dim}, base={self.base}, layout={self.layout!r}, "
            f"scaling={self.scaling}, rows={self.cos_cached.shape[0]}"
        )


def alibi_slopes(num_heads):
    """ALiBi's per-head slopes (Press et al. 2022), shape (num_heads,) float64.

    For a power of two n: 2**(-8(h+1)/n), h = 0..n-1 (a geometric sequence from 2**(-8/n)).
    Otherwise, as the official code (and BLOOM) do: the slopes for the closest lower power of
    two m, then every other slope of the 2m-head sequence, the first num_heads - m of them.
    """
    num_heads = _validate.positive_int("num_heads", num_heads)

    def power_of_two(n):
        return [2.0 ** (-8 * (h + 1) / n) for h in range(n)]

    m = 1 << (num_heads.bit_length() - 1)
    return np.array(power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m])


def alibi_bias(n, num_heads, *, causal=True):
    """ALiBi's additive attention bias, shape (num_heads, n, n) float64: bias[h, i, j] = -slope_h * |i - j|.

    causal=True also masks the future: entries with j > i are -inf, so adding the bias to the
    logits is all a decoder needs. (fairseq and BLOOM add slope * j instead, which differs from
    -slope * (i - j) by a constant per row that softmax ignores, and mask separately.)
    causal=False gives the symmetric -slope * |i - j| everywhere.
    """
    n = _validate.count("n", n)
    causal = _validate.flag("causal", causal)
    slopes = alibi_slopes(num_heads)
    offsets = np.arange(n)
    distance = np.abs(offsets[:, None] - offsets[None, :]).astype(np.float64)
    bias = -slopes[:, None, None] * distance
    if causal:
        bias[:, offsets[:, None] < offsets[None, :]] = -np.inf
    return bias


def t5_relative_bucket(relative_position, *, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's bucket of relative_position = key_pos - query_pos: same shape, int64 (a Python int for a scalar).

    As Mesh TensorFlow and Hugging Face's _relative_position_bucket: bidirectional halves the
    buckets and puts positive offsets (keys after the query) in the upper half; otherwise only
    the past counts, n = max(-rel, 0). With B buckets per direction, distances below max_exact = B // 2
    get their own bucket; larger ones max_exact + floor(log(n / max_exact) / log(max_distance / max_exact)
    * (B - max_exact)), capped at B - 1 (so every distance from about max_distance on shares it).
    bidirectional needs an even num_buckets (an odd one would leave a bucket that is never used).

    Each distance's bucket is computed once with math.log in float64 and looked up: the result is
    the scalar formula's on every CPU (NumPy's vectorised log can be an ulp off). Hugging Face uses
    a float32 log; with the default num_buckets=32, max_distance=128 its buckets equal these for
    every |relative_position| <= 10**6, in both directions (checked exhaustively).
    """
    positions = _validate.as_numpy(relative_position)
    if positions.dtype == bool or not np.issubdtype(positions.dtype, np.integer):
        raise TypeError(f"relative_position must hold integers (key_pos - query_pos), got dtype {positions.dtype}")
    buckets = _validate.positive_int("num_buckets", num_buckets)
    bidirectional = _validate.flag("bidirectional", bidirectional)
    if bidirectional:
        if buckets % 2 or buckets < 4:
            raise ValueError(f"num_buckets must be an even int >= 4 when bidirectional (two halves), got {buckets}")
        buckets //= 2
    elif buckets < 2:
        raise ValueError(f"num_buckets must be at least 2, got {buckets}")
    max_exact = buckets // 2
    max_distance = _validate.positive_int("max_distance", max_distance)
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must be greater than the exact range max_exact={max_exact} "
            f"(half of the buckets per direction), got {max_distance}"
        )
    # Clip first: every distance from max_distance on lands in the last bucket, and int64 |x| can't overflow.
    positions = np.clip(positions.astype(np.int64), -max_distance, max_distance)
    upper = (positions > 0) * buckets if bidirectional else 0
    distance = np.abs(positions) if bidirectional else np.maximum(-positions, 0)

    def bucket(d):  # the formula for one distance, in float64
        if d < max_exact:
            return d
        log_ratio = math.log(d / max_exact) / math.log(max_distance / max_exact)
        return min(buckets - 1, max_exact + int(log_ratio * (buckets - max_exact)))

    table = np.array([bucket(d) for d in range(int(distance.max(initial=0)) + 1)], dtype=np.int64)
    result = upper + table[distance]
    return int(result) if result.ndim == 0 else result.astype(np.int64)
