"""A Llama forward pass in one readable file, with every position choice in one swappable place (notebook 10).

    model = Llama(LlamaConfig(...))                    # or: model, tokenizer = pe_lib.smollm.load()
    logits = model(ids, position_ids=None)             # ids (batch, n) int64 -> (batch, n, vocab) float32
    last = model.logits(model.hidden_states(ids)[:, -1:])   # only the logits a prediction needs
    logits = model(ids, position_ids=padded_position_ids(mask), attention_mask=mask)  # a left-padded batch
    logits = model(ids, position_ids=document_position_ids(docs), document_ids=docs)  # packed documents
    with model.use_positions(layout="interleaved", angle_dtype=torch.bfloat16):
        ...                                            # the same weights under another position choice

The blocks are the ones Llama-family models run, as Hugging Face's LlamaForCausalLM computes them:
RMSNorm before attention and before the MLP, grouped-query attention (several query heads share
one key/value head), a SwiGLU MLP, a final RMSNorm and logits from the (tied) token embedding.
Each block does four matrix products where transformers does seven: q, k and v in one (nanoGPT's
c_attn), gate and up in one; the same numbers, in fewer and longer passes.
Attention is causal. `attention_mask` (batch, n) of 1 (a token) and 0 (padding) hides the padding
from every token, as Hugging Face's attention_mask does; `document_ids` (batch, n) lets a token read
only the earlier tokens of its own document (packed sequences). Either one changes only which keys
a query reads, never the positions: pass position_ids too (padded_position_ids, document_position_ids).
Without them, or when they hide nothing, the fused causal kernel runs.
transformers has no document_ids: it infers the documents from position ids that restart
(inferred_document_ids), and only when it gets no 2-D attention_mask and no cache ("padding-free"
training; a forward with use_cache=True, the config default, or with a mask of ones lets the documents
read each other). pe_lib never infers: it hides what document_ids says, and nothing else.

RoPE is the only place positions enter. Everything about it lives in `Positions`, which the
model's code reads but never hard-codes:
- `position_ids` per token (batch, n), any finite numbers (default 0..n-1);
- `base` and `scaling` (any rope-scaling dict pe_lib.rope_frequencies takes: linear, NTK, YaRN, ...);
- `layout`: "half" pairs feature i with i + head_dim/2 (rotate_half), "interleaved" pairs (2i, 2i+1);
- `freq_dtype` and `angle_dtype`: the dtype theta_i and the angle p * theta_i are rounded to before
  cos/sin. The default float64 rounds neither; bfloat16 reproduces a precision bug on purpose;
- `nope_layers`: layers that rotate nothing (no position information at all).
The angle is formed in float64 and rounded only where a dtype says so; cos/sin are float32. The
rotation is pe_lib.apply_rope's (tests/test_llama.py checks they agree); it is written out here
because a batch may carry its own positions per row and the angle dtype is a choice here.
"""

import contextlib
import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate
from .relative import ROPE_LAYOUTS
from .rope_scaling import LENGTH_DEPENDENT, check_scaling, rope_attention_factor, rope_frequencies

ROUNDING_DTYPES = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


@dataclasses.dataclass(frozen=True)
class LlamaConfig:
    """The sizes of a Llama-family model (names as in llama.cpp's GGUF metadata, in words)."""

    vocab_size: int
    dim: int  # width of the residual stream
    n_layers: int
    n_heads: int  # query heads
    n_kv_heads: int  # key/value heads, shared by n_heads // n_kv_heads query heads each
    hidden_dim: int  # the MLP's inner width
    norm_eps: float = 1e-5
    rope_base: float = 10000.0
    context_length: int = 2048  # the length the model was trained for (nothing here enforces it)

    def __post_init__(self):
        for name in ("vocab_size", "dim", "n_layers", "n_heads", "n_kv_heads", "hidden_dim", "context_length"):
            _validate.positive_int(name, getattr(self, name))
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"dim={self.dim} must split into n_heads={self.n_heads} heads, and n_heads into "
                f"n_kv_heads={self.n_kv_heads} groups"
            )
        _validate.even_int("head_dim", self.dim // self.n_heads, "RoPE turns pairs of features")

    @property
    def head_dim(self):
        return self.dim // self.n_heads


def _rounding_dtype(name, value):
    if value not in ROUNDING_DTYPES:
        allowed = ", ".join(str(d) for d in ROUNDING_DTYPES)
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


@dataclasses.dataclass(frozen=True)
class Positions:
    """Every position choice of the forward. Frozen: swap it whole (Llama.use_positions) or with dataclasses.replace."""

    base: float = 10000.0
    scaling: dict | None = None
    layout: str = "half"
    freq_dtype: torch.dtype = torch.float64
    angle_dtype: torch.dtype = torch.float64
    nope_layers: frozenset = frozenset()

    def __post_init__(self):
        object.__setattr__(self, "base", _validate.base(self.base))
        object.__setattr__(self, "scaling", check_scaling(self.scaling))
        object.__setattr__(self, "layout", _validate.choice("layout", self.layout, ROPE_LAYOUTS))
        _rounding_dtype("freq_dtype", self.freq_dtype)
        _rounding_dtype("angle_dtype", self.angle_dtype)
        layers = self.nope_layers
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise TypeError(f"nope_layers must be a collection of layer indices, got {layers!r}")
        object.__setattr__(self, "nope_layers", frozenset(_validate.count("nope_layers", i) for i in layers))

    def cos_sin(self, position_ids, head_dim):
        """cos and sin of the angles position * theta_i, each (batch, 1, n, head_dim // 2) float32."""
        positions = position_ids.to(torch.float64)
        seq_len = None
        if self.scaling is not None and self.scaling["rope_type"] in LENGTH_DEPENDENT and positions.numel():
            seq_len = max(int(math.floor(positions.max().item())) + 1, 1)  # as transformers: largest position + 1
        theta = rope_frequencies(head_dim, base=self.base, scaling=self.scaling, seq_len=seq_len)
        theta = torch.from_numpy(theta).to(self.freq_dtype).to(torch.float64)
        angles = (positions[..., None] * theta).to(self.angle_dtype).to(torch.float64)
        factor = rope_attention_factor(self.scaling)  # YaRN's and LongRoPE's temperature; 1.0 otherwise
        cos, sin = (torch.cos(angles) * factor).float(), (torch.sin(angles) * factor).float()
        return cos[:, None], sin[:, None]


def rotate(x, cos, sin, layout):
    """RoPE's turn of each feature pair of x (batch, heads, n, head_dim) by cos/sin (batch, 1, n, head_dim // 2).

    Pair (a, b) becomes (a cos - b sin, a sin + b cos). "half" pairs feature i with i + head_dim/2
    (Hugging Face's rotate_half), "interleaved" pairs 2i with 2i + 1 (Meta's and llama.cpp's order).
    Written straight into one output (mul, then addcmul): four passes over x, no concatenation.
    """
    half = x.shape[-1] // 2
    first, second = (slice(0, half), slice(half, None)) if layout == "half" else (slice(0, None, 2), slice(1, None, 2))
    a, b = x[..., first], x[..., second]
    out = torch.empty_like(x)
    out_a, out_b = out[..., first], out[..., second]
    torch.mul(a, cos, out=out_a).addcmul_(b, sin, value=-1)
    torch.mul(a, sin, out=out_b).addcmul_(b, cos)
    return out


def interleaved_to_half(weight, n_heads):
    """Reorder the rows of a q or k projection (n_heads * head_dim, dim) from the interleaved pairing to "half".

    Within each head, row 2i goes to i and row 2i+1 to i + head_dim/2: the inverse of the permutation
    llama.cpp's converter applies to Hugging Face checkpoints (and transformers undoes on loading).
    With it, a model run with layout "half" computes what the original ran with "interleaved".
    """
    rows, *rest = weight.shape
    return weight.reshape(n_heads, rows // n_heads // 2, 2, *rest).swapaxes(1, 2).reshape(weight.shape)


def half_to_interleaved(weight, n_heads):
    """The inverse of interleaved_to_half: llama.cpp's permutation of q/k rows."""
    rows, *rest = weight.shape
    return weight.reshape(n_heads, 2, rows // n_heads // 2, *rest).swapaxes(1, 2).reshape(weight.shape)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight: LayerNorm without centring or bias (torch's fused kernel)."""

    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, self.weight.shape, self.weight, self.eps)


class Attention(nn.Module):
    """Causal grouped-query self-attention, RoPE on queries and keys (unless the layer has none).

    q, k and v come out of one matrix product, as in nanoGPT: the rows of `qkv.weight` are W_Q (n_heads * head_dim
    rows), then W_K and W_V (n_kv_heads * head_dim rows each); q_weight, k_weight and v_weight are views of them.
    One larger product does the work of three on fewer, longer passes over x.
    """

    def __init__(self, config):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        kv_rows = config.n_kv_heads * self.head_dim
        self.sizes = (config.n_heads * self.head_dim, kv_rows, kv_rows)  # the rows of W_Q, W_K, W_V
        self.qkv = nn.Linear(config.dim, sum(self.sizes), bias=False)
        self.o = nn.Linear(config.n_heads * self.head_dim, config.dim, bias=False)

    @property
    def q_weight(self):
        """W_Q (n_heads * head_dim, dim): a view of qkv.weight's first rows (write into it to change the model)."""
        return self.qkv.weight[: self.sizes[0]]

    @property
    def k_weight(self):
        """W_K (n_kv_heads * head_dim, dim): a view of qkv.weight's rows after W_Q."""
        return self.qkv.weight[self.sizes[0] : self.sizes[0] + self.sizes[1]]

    @property
    def v_weight(self):
        """W_V (n_kv_heads * head_dim, dim): a view of qkv.weight's last rows."""
        return self.qkv.weight[self.sizes[0] + self.sizes[1] :]

    def project(self, x):
        """x's q, k and v heads, unrotated, (batch, n_heads + 2 * n_kv_heads, n, head_dim): q's, then k's, then v's."""
        batch, n, _ = x.shape
        return self.qkv(x).view(batch, n, -1, self.head_dim).transpose(1, 2)

    def forward(self, x, cos, sin, layout, mask=None):
        batch, n, _ = x.shape
        heads = self.project(x)
        qk, v = heads.split((self.n_heads + self.n_kv_heads, self.n_kv_heads), dim=1)
        if cos is not None:  # q's and k's heads sit side by side: one rotation turns them all
            qk = rotate(qk, cos, sin, layout)
        q, k = qk.split((self.n_heads, self.n_kv_heads), dim=1)
        # enable_gqa: each key/value head serves n_heads // n_kv_heads query heads, without copies;
        # is_causal keeps the fused kernel, which never materialises the n x n score matrix. A mask
        # (batch, 1, n, n), True where a query may read a key, already holds the causal part.
        if mask is None:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o(out.transpose(1, 2).reshape(batch, n, -1))


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x)), gate and up in one matrix product (rows of W_gate, then of W_up)."""

    def __init__(self, config):
        super().__init__()
        self.gate_up = nn.Linear(config.dim, 2 * config.hidden_dim, bias=False)
        self.down = nn.Linear(config.hidden_dim, config.dim, bias=False)

    def forward(self, x):
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attn = Attention(config)
        self.mlp_norm = RMSNorm(config.dim, config.norm_eps)
        self.mlp = MLP(config)

    def forward(self, x, cos, sin, layout, mask=None):
        x = x + self.attn(self.attn_norm(x), cos, sin, layout, mask)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """A Llama-family decoder with tied input/output embeddings.

    forward(ids, position_ids=None, attention_mask=None, document_ids=None) -> logits;
    hidden_states(...) the same up to the final norm, logits(hidden) the rest.
    """

    def __init__(self, config, positions=None):
        super().__init__()
        self.config = config
        # N(0, 1), nn.Embedding's own init, drawn by randn: on the meta device (smollm.load) that is
        # instant, while Embedding's normal_ costs a second or two there.
        self.embed = nn.Embedding(config.vocab_size, config.dim, _weight=torch.randn(config.vocab_size, config.dim))
        self.layers = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.positions = Positions(base=config.rope_base) if positions is None else positions

    @property
    def positions(self):
        return self._positions

    @positions.setter
    def positions(self, value):
        if not isinstance(value, Positions):
            raise TypeError(f"positions must be a pe_lib.llama.Positions, got {type(value).__name__}")
        outside = sorted(i for i in value.nope_layers if i >= self.config.n_layers)
        if outside:
            raise ValueError(f"nope_layers must be layer indices below n_layers={self.config.n_layers}, got {outside}")
        self._positions = value

    @contextlib.contextmanager
    def use_positions(self, **changes):
        """Run the block under other position choices (fields of Positions), then restore the previous ones."""
        previous = self.positions
        self.positions = dataclasses.replace(previous, **changes)
        try:
            yield self
        finally:
            self.positions = previous

    def _check(self, ids, position_ids):
        if not isinstance(ids, torch.Tensor) or ids.dtype not in (torch.int64, torch.int32):
            got = f"dtype {ids.dtype}" if isinstance(ids, torch.Tensor) else type(ids).__name__
            raise TypeError(f"ids must be an int64 tensor of token ids, shape (batch, n), got {got}")
        if ids.dim() != 2 or ids.shape[1] == 0:
            raise ValueError(f"ids must have shape (batch, n) with n >= 1, got {tuple(ids.shape)}")
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.config.vocab_size):
            raise ValueError(
                f"ids must be token ids in [0, {self.config.vocab_size}), got values from {int(ids.min())} to "
                f"{int(ids.max())}: encode text with the model's tokenizer"
            )
        if position_ids is None:
            return torch.arange(ids.shape[1]).expand(ids.shape)
        if not isinstance(position_ids, torch.Tensor):
            position_ids = torch.as_tensor(position_ids)
        if position_ids.dim() == 1:
            position_ids = position_ids.expand(ids.shape[0], -1)
        if position_ids.shape != ids.shape:
            raise ValueError(
                f"position_ids must have the shape of ids {tuple(ids.shape)} (or (n,), shared by the batch), "
                f"got {tuple(position_ids.shape)}"
            )
        if position_ids.is_complex() or position_ids.dtype == torch.bool:
            raise TypeError(f"position_ids must hold real numbers, got dtype {position_ids.dtype}")
        if not torch.isfinite(position_ids.to(torch.float64)).all():
            raise ValueError("position_ids must be finite numbers, got inf or nan")
        return position_ids

    def _mask(self, ids, attention_mask, document_ids):
        """(batch, 1, n, n) bool, True where a query may read a key; None when only causality hides anything."""
        batch, n = ids.shape
        allowed = None
        if attention_mask is not None:
            keep = _padding_mask(attention_mask, ids.shape)
            if not keep.all():
                allowed = keep[:, None, :].expand(batch, n, n)
        if document_ids is not None:
            docs = _documents(document_ids, ids.shape)
            same = docs[:, :, None] == docs[:, None, :]
            if not same.all():
                allowed = same if allowed is None else allowed & same
        if allowed is None:
            return None
        causal = torch.ones(n, n, dtype=torch.bool).tril()
        # a padding token with no earlier token to read reads itself: no row is empty (an empty row is nan,
        # which later layers would spread), and no real token reads a padding token either way
        return ((allowed & causal) | torch.eye(n, dtype=torch.bool))[:, None]

    def forward(self, ids, position_ids=None, attention_mask=None, document_ids=None):
        """Logits (batch, n, vocab) float32 for ids (batch, n): self.logits(self.hidden_states(ids, ...)).

        position_ids (batch, n) or (n,), default 0..n-1. attention_mask (batch, n): 1 for a token, 0 for
        padding, which no token reads (left padding: pass position_ids=padded_position_ids(attention_mask)
        to count each row's positions from its first token). document_ids (batch, n) integers: a token reads
        only earlier tokens with its own id (packed documents: position_ids=document_position_ids(document_ids)
        restarts the positions of each). Logits at padding tokens are computed but mean nothing.
        """
        return self.logits(self.hidden_states(ids, position_ids, attention_mask, document_ids))

    def hidden_states(self, ids, position_ids=None, attention_mask=None, document_ids=None):
        """The final RMSNorm's output (batch, n, dim) for ids (batch, n), arguments as forward's: all but the logits.

        A loss needs the logits of every position, a prediction only of the last: self.logits(hidden[:, -1:])
        skips the rest of the largest matrix product (the logits of 2,048 tokens alone are 403 MB).
        """
        position_ids = self._check(ids, position_ids)
        mask = self._mask(ids, attention_mask, document_ids)
        positions = self.positions
        cos, sin = positions.cos_sin(position_ids, self.config.head_dim)  # once per forward, shared by every layer
        x = self.embed(ids)
        for index, layer in enumerate(self.layers):
            if index in positions.nope_layers:
                x = layer(x, None, None, positions.layout, mask)
            else:
                x = layer(x, cos, sin, positions.layout, mask)
        return self.norm(x)

    def logits(self, hidden):
        """Logits (..., vocab) of final hidden states (..., dim): their product with the (tied) token embedding."""
        return hidden @ self.embed.weight.T


def _tensor_2d(name, value, what, shape):
    """value as a tensor of shape `shape` (ids' shape), or of any (batch, n) when shape is None."""
    if not isinstance(value, torch.Tensor):
        try:
            value = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError) as error:
            raise TypeError(f"{name} must be a tensor of {what}, shape (batch, n), got {value!r:.80}") from error
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise ValueError(f"{name} must have the shape of ids {tuple(shape)}, got {tuple(value.shape)}")
    if value.dim() != 2:
        raise ValueError(f"{name} must have shape (batch, n), got {tuple(value.shape)}")
    return value


def _padding_mask(attention_mask, shape=None):
    """attention_mask (1 or True: a token, 0 or False: padding) as bool."""
    what = "1 (a token) and 0 (padding)"
    mask = _tensor_2d("attention_mask", attention_mask, what, shape)
    if mask.is_complex():
        raise TypeError(f"attention_mask must hold {what}, got dtype {mask.dtype}")
    if mask.dtype != torch.bool:
        bad = mask[(mask != 0) & (mask != 1)]
        if bad.numel():
            raise ValueError(f"attention_mask must hold only {what}, got {sorted(set(bad.tolist()))[:5]}")
    return mask.bool()


def _documents(document_ids, shape=None):
    """document_ids as int64 (any integers; a token reads only earlier tokens with its own)."""
    docs = _tensor_2d("document_ids", document_ids, "integer document ids", shape)
    if docs.dtype == torch.bool or docs.is_floating_point() or docs.is_complex():
        raise TypeError(f"document_ids must hold integer document ids, got dtype {docs.dtype}")
    return docs.to(torch.int64)


def padded_position_ids(attention_mask):
    """Each token's position counted from its row's first token, for a (left-)padded batch: (batch, n) int64.

    What transformers' generate computes from attention_mask (1 token, 0 padding): cumsum(-1) - 1, and 0 on
    padding (transformers 4.x wrote 1 there; no token reads a padding token, so any position would do).
    """
    keep = _padding_mask(attention_mask)
    return (keep.long().cumsum(-1) - 1).masked_fill(~keep, 0)


def document_position_ids(document_ids):
    """Positions that restart at 0 where each document starts, for documents packed in a row: (batch, n) int64.

    document_ids (batch, n) integers; a document is a run of equal ids (a new run starts a new document).
    """
    docs = _documents(document_ids)
    index = torch.arange(docs.shape[1]).expand(docs.shape)
    starts = torch.ones_like(docs, dtype=torch.bool)
    starts[:, 1:] = docs[:, 1:] != docs[:, :-1]
    first = torch.where(starts, index, 0).cummax(-1).values  # the index where each token's run began
    return index - first


def inferred_document_ids(position_ids):
    """The documents transformers reads from packed position ids: (batch, n) int64, 0 for the first document.

    A new document starts wherever a position is not the previous one + 1 (transformers'
    find_packed_sequence_indices, used when a forward gets no 2-D attention_mask and no cache). Pass the
    result as document_ids to compute what transformers computes for packed rows without a mask.
    """
    positions = _tensor_2d("position_ids", position_ids, "positions", None)
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"position_ids must hold real numbers, got dtype {positions.dtype}")
    steps = torch.diff(positions, prepend=positions[:, :1] - 1, dim=-1)
    return (steps != 1).long().cumsum(-1)


def next_token_loss(logits, ids):
    """Mean cross-entropy (nats) of predicting ids[:, 1:] from logits[:, :-1]."""
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
