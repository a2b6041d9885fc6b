"""torch modules that put positions into a model: sinusoidal, learned, and the full input path;
and the pre-norm attention layer the experiments' tiny models stack (notebooks 05 and 08).

Shapes follow torch's convention: batch_first=True means (batch, seq, d_model), False means
(seq, batch, d_model); a 2-D input is one unbatched sequence (seq, d_model). The table is
indexed by the sequence axis explicitly, so an input of any accepted shape comes back with
exactly that shape (never broadcast into a bigger one, as in the sources' `pe[:x.size(0)]`).
"""

import math

import numpy as np
import torch
from torch import nn

from . import _validate
from .encodings import LAYOUTS, sinusoidal_encoding


def _dropout_rate(value):
    rate = _validate.finite_real("dropout", value)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {rate}")
    return rate


def _layout_hint(batch_first):
    return "(batch, seq, d_model)" if batch_first else "(seq, batch, d_model)"


class _AddPositions(nn.Module):
    """Shared forward for the positional modules: check x, add the rows for its positions."""

    def __init__(self, d_model, dropout, batch_first):
        super().__init__()
        self.d_model = _validate.positive_int("d_model", d_model)
        self.batch_first = bool(batch_first)
        self.dropout = nn.Dropout(_dropout_rate(dropout))

    def _table(self, seq_len, dtype):
        """Rows for positions 0..seq_len-1, shape (seq_len, d_model), to be added to an input of `dtype`."""
        raise NotImplementedError

    def forward(self, x):
        """x: (batch, seq, d) if batch_first else (seq, batch, d), or unbatched (seq, d)."""
        if not isinstance(x, torch.Tensor) or not torch.is_floating_point(x):
            got = f"dtype {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"x must be a floating-point torch tensor, got {got}")
        if x.dim() not in (2, 3) or x.shape[-1] != self.d_model:
            raise ValueError(
                f"x must have shape {_layout_hint(self.batch_first)} or (seq, d_model) with "
                f"d_model={self.d_model}, got shape {tuple(x.shape)}"
            )
        seq_axis = 1 if (x.dim() == 3 and self.batch_first) else 0
        table = self._table(x.shape[seq_axis], x.dtype).to(dtype=x.dtype, device=x.device)
        if x.dim() == 3:
            table = table.unsqueeze(0 if self.batch_first else 1)
        return self.dropout(x + table)

    def extra_repr(self):
        return f"d_model={self.d_model}, batch_first={self.batch_first}"


class SinusoidalPositionalEncoding(_AddPositions):
    """Adds the fixed sinusoidal encoding (pe_lib.sinusoidal_encoding) to its input.

    The table is a non-trainable buffer of max_len rows; a longer input grows it, because
    the formula is defined at every position. Its values are always computed from float64
    angles, also after .half() or .to(torch.bfloat16).

    The output has the input's dtype, and the rows added are correct to that dtype's rounding:
    a float64 input to a float32 module gets rows built in float64 (error ~1e-16), not the
    float32 buffer widened (error up to 6e-8). Call .double() to keep a float64 buffer instead.
    """

    def __init__(self, d_model, *, max_len=5000, base=10000.0, layout="interleaved", dropout=0.0, batch_first=True):
        super().__init__(d_model, dropout, batch_first)
        self.base = _validate.base(base)
        self.layout = _validate.choice("layout", layout, LAYOUTS)
        max_len = _validate.positive_int("max_len", max_len)
        self.register_buffer("pe", self._build(max_len, torch.float32, None), persistent=False)

    def _build(self, rows, dtype, device):
        np_dtype = np.float64 if dtype == torch.float64 else np.float32
        table = sinusoidal_encoding(rows, self.d_model, base=self.base, layout=self.layout, dtype=np_dtype)
        return torch.from_numpy(table).to(dtype=dtype, device=device)

    def _apply(self, fn, *args, **kwargs):
        # A dtype change would round the float32 table again; recompute it from the formula.
        super()._apply(fn, *args, **kwargs)
        self.pe = self._build(self.pe.shape[0], self.pe.dtype, self.pe.device)
        return self

    def _table(self, seq_len, dtype):
        if torch.finfo(dtype).eps < torch.finfo(self.pe.dtype).eps:  # the input is more precise than the buffer
            return self._build(seq_len, dtype, self.pe.device)
        if seq_len > self.pe.shape[0]:
            self.pe = self._build(max(seq_len, 2 * self.pe.shape[0]), self.pe.dtype, self.pe.device)
        return self.pe[:seq_len]

    def extra_repr(self):
        return f"{super().extra_repr()}, base={self.base}, layout={self.layout!r}, rows={self.pe.shape[0]}"


class LearnedPositionalEmbedding(_AddPositions):
    """Adds a trainable vector per position (BERT/GPT style): an nn.Embedding(max_len, d_model).

    Positions past max_len have no trained row, so a longer input is an error. The output has
    the input's dtype (the rows are cast to it; widening float32 to float64 is exact).
    """

    def __init__(self, max_len, d_model, *, dropout=0.0, batch_first=True):
        super().__init__(d_model, dropout, batch_first)
        self.max_len = _validate.positive_int("max_len", max_len)
        self.embedding = nn.Embedding(self.max_len, self.d_model)
        nn.init.normal_(self.embedding.weight, std=0.02)  # BERT's initialisation

    def _table(self, seq_len, dtype):
        if seq_len > self.max_len:
            raise ValueError(
                f"sequence length {seq_len} is longer than max_len={self.max_len} of this learned table "
                f"(positions {self.max_len}..{seq_len - 1} have no trained row): shorten the input "
                f"or build the module with max_len >= {seq_len}"
            )
        return self.embedding.weight[:seq_len]

    def extra_repr(self):
        return f"max_len={self.max_len}, {super().extra_repr()}"


POSITIONAL = ("sinusoidal", "learned", "none")


def _check_ids(name, ids, limit, what):
    if not isinstance(ids, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch tensor of ints (e.g. torch.tensor([[1, 2, 3]])), got {type(ids).__name__}"
        )
    if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"{name} must hold integers, got dtype {ids.dtype}")
    if ids.dim() not in (1, 2):
        raise ValueError(f"{name} must have shape (batch, seq), (seq, batch) or (seq,), got {tuple(ids.shape)}")
    if ids.numel() and (ids.min() < 0 or ids.max() >= limit):
        bad = ids[(ids < 0) | (ids >= limit)][0].item()
        raise ValueError(f"{name} must be in [0, {what}={limit}), got {bad}")


class TransformerEmbedding(nn.Module):
    """The input path of an encoder: token embedding * sqrt(d_model) + position (+ segment) -> dropout.

    forward(token_ids (batch, seq) or (seq, batch) or (seq,), segment_ids of the same shape)
    returns (..., d_model). Token vectors start with std d_model**-0.5, so after the sqrt(d_model)
    scale their entries are about unit size, like the +-1 entries of the sinusoidal encoding.
    """

    def __init__(
        self,
        vocab_size,
        d_model,
        *,
        positional="sinusoidal",
        max_len=512,
        num_segments=0,
        scale_embeddings=True,
        dropout=0.1,
        padding_idx=None,
        batch_first=True,
    ):
        super().__init__()
        self.vocab_size = _validate.positive_int("vocab_size", vocab_size)
        self.d_model = _validate.positive_int("d_model", d_model)
        self.positional = _validate.choice("positional", positional, POSITIONAL)
        max_len = _validate.positive_int("max_len", max_len)
        self.num_segments = _validate.count("num_segments", num_segments)
        if padding_idx is not None:
            padding_idx = _validate.count("padding_idx", padding_idx)
            if padding_idx >= self.vocab_size:
                raise ValueError(f"padding_idx must be in [0, vocab_size={self.vocab_size}), got {padding_idx}")
        self.scale = math.sqrt(self.d_model) if scale_embeddings else 1.0
        self.token = nn.Embedding(self.vocab_size, self.d_model, padding_idx=padding_idx)
        nn.init.normal_(self.token.weight, std=self.d_model**-0.5)
        if padding_idx is not None:
            with torch.no_grad():
                self.token.weight[padding_idx].zero_()
        if positional == "sinusoidal":
            self.position = SinusoidalPositionalEncoding(self.d_model, max_len=max_len, batch_first=batch_first)
        elif positional == "learned":
            self.position = LearnedPositionalEmbedding(max_len, self.d_model, batch_first=batch_first)
        else:
            self.position = nn.Identity()
        self.segment = nn.Embedding(self.num_segments, self.d_model) if self.num_segments else None
        if self.segment is not None:
            nn.init.normal_(self.segment.weight, std=0.02)
        self.dropout = nn.Dropout(_dropout_rate(dropout))

    def forward(self, token_ids, segment_ids=None):
        _check_ids("token_ids", token_ids, self.vocab_size, "vocab_size")
        x = self.position(self.token(token_ids.long()) * self.scale)
        if segment_ids is not None:
            if self.segment is None:
                raise ValueError(
                    "segment_ids were given but this embedding has num_segments=0: build it with num_segments >= 1"
                )
            _check_ids("segment_ids", segment_ids, self.num_segments, "num_segments")
            if segment_ids.shape != token_ids.shape:
                raise ValueError(
                    f"segment_ids must have the shape of token_ids {tuple(token_ids.shape)}, "
                    f"got {tuple(segment_ids.shape)}"
                )
            x = x + self.segment(segment_ids.long())
        elif self.segment is not None:
            x = x + self.segment.weight[0]  # like BERT: no segment ids means every token is in segment 0
        return self.dropout(x)


class PreNormLayer(nn.Module):
    """A pre-norm Transformer layer: self-attention, then a feed-forward block, each with a residual.

    forward(x (batch, seq, d_model), positions=None, bias=None) -> (batch, seq, d_model).
    rotary (a RotaryEmbedding or None) turns q and k at `positions` (None: 0..seq-1, from its cache);
    causal lets each position attend to itself and the past only; bias (heads, seq, seq), if given,
    is added to the logits (ALiBi, T5) and must hold the causal mask itself; logit_scale multiplies
    the logits (YaRN's temperature). Not causal and without rotary, it computes what
    nn.TransformerEncoderLayer(norm_first=True, dropout=0) computes.
    """

    def __init__(self, d_model, num_heads, dim_feedforward, *, causal=False, rotary=None):
        super().__init__()
        self.num_heads = num_heads
        self.causal = causal
        self.norm_attention = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm_feedforward = nn.LayerNorm(d_model)
        self.feedforward = nn.Sequential(
            nn.Linear(d_model, dim_feedforward), nn.ReLU(), nn.Linear(dim_feedforward, d_model)
        )
        self.rotary = rotary
        self.logit_scale = 1.0

    def forward(self, x, positions=None, bias=None):
        batch, seq, d_model = x.shape
        heads = self.qkv(self.norm_attention(x)).view(batch, seq, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = heads[0], heads[1], heads[2]  # each (batch, heads, seq, head_dim)
        if self.rotary is not None:
            q, k = self.rotary(q, k, positions)
        attended = nn.functional.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=bias,
            is_causal=self.causal and bias is None,
            scale=self.logit_scale / math.sqrt(q.shape[-1]),
        )
        x = x + self.out(attended.transpose(1, 2).reshape(batch, seq, d_model))
        return x + self.feedforward(self.norm_feedforward(x))
