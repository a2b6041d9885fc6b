"""Multi-head latent attention (MLA) with its decoupled RoPE, in its two forms (notebook 12).

DeepSeek-V2/V3 (and Kimi-K2, Mistral Small 4, GLM-5) cache one small latent per token instead of
every head's key and value. For token j:

    c_j = RMSNorm(W_DKV x_j)                  (kv_lora_rank,)  the latent the cache holds
    k_j^h = [W_UK^h c_j, RoPE_j(W_KR x_j)]    per head: a "nope" part from the latent, a rope part
                                              (qk_rope_head_dim) shared by every head
    v_j^h = W_UV^h c_j
    q_i^h = [q_nope, RoPE_i(q_rope)]          from x_i (directly, or through a low-rank q_a, q_b)

Absorbed form (what makes the latent cache pay): q_nope . W_UK c_j = (W_UK^T q_nope) . c_j, so the
query is moved into the latent space once and the keys never need to be expanded; likewise W_UV
moves after the attention. This works only because no rotation sits between W_UK and the dot
product: RoPE_j on W_UK c_j would make the product q^T R_i^T R_j W_UK c_j = q^T R_{j-i} W_UK c_j,
a different matrix for every distance, which no single query projection can absorb. Hence the
decoupled design: positions live only in the small shared rope part (absorption_errors shows the three
cases in numbers).

    MLAConfig, MLA        forward (keys and values expanded per head, as transformers' DeepseekV3Attention)
                          forward_absorbed (attention over the latent cache); the two agree to rounding
    absorption_errors     the largest score error of the absorbed form with no positions, with RoPE on
                          the whole key, and with the decoupled RoPE
    cache_size            values cached per token and layer: MLA's latent + rope part against full keys/values
"""

import copy
import dataclasses
import math

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate
from .llama import RMSNorm
from .relative import ROPE_LAYOUTS, apply_rope
from .rope_scaling import check_scaling, rope_attention_factor


@dataclasses.dataclass(frozen=True)
class MLAConfig:
    """The sizes of an MLA layer (names as in transformers' DeepseekV3Config).

    layout: "interleaved" (DeepSeek's checkpoints, rope_interleave=True) or "half" for the rope part.
    rope_scaling: a rope-scaling dict (DeepSeek-V3: yarn with mscale and mscale_all_dim) or None.
    """

    dim: int
    n_heads: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None
    rope_base: float = 10000.0
    rope_scaling: dict | None = None
    layout: str = "interleaved"
    norm_eps: float = 1e-6

    def __post_init__(self):
        for name in ("dim", "n_heads", "kv_lora_rank", "qk_nope_head_dim", "v_head_dim"):
            _validate.positive_int(name, getattr(self, name))
        _validate.count("qk_rope_head_dim", self.qk_rope_head_dim)
        if self.qk_rope_head_dim % 2:
            raise ValueError(f"qk_rope_head_dim must be even (RoPE turns pairs), got {self.qk_rope_head_dim}")
        if self.q_lora_rank is not None:
            _validate.positive_int("q_lora_rank", self.q_lora_rank)
        object.__setattr__(self, "rope_base", _validate.base(self.rope_base))
        object.__setattr__(self, "rope_scaling", check_scaling(self.rope_scaling))
        _validate.choice("layout", self.layout, ROPE_LAYOUTS)

    @property
    def qk_head_dim(self):
        return self.qk_nope_head_dim + self.qk_rope_head_dim

    @property
    def softmax_scale(self):
        """1 / sqrt(qk_head_dim), times YaRN's mscale squared when the scaling sets mscale_all_dim (DeepSeek-V3)."""
        scale = self.qk_head_dim**-0.5
        scaling = self.rope_scaling
        if scaling is not None and scaling.get("mscale_all_dim") and scaling["factor"] > 1:
            scale *= (0.1 * scaling["mscale_all_dim"] * math.log(scaling["factor"]) + 1.0) ** 2
        return scale


class MLA(nn.Module):
    """Causal multi-head latent attention: forward(x, positions=None) -> (batch, n, dim); x (batch, n, dim)."""

    def __init__(self, config):
        super().__init__()
        if not isinstance(config, MLAConfig):
            raise TypeError(f"config must be an MLAConfig, got {type(config).__name__}")
        self.config = c = config
        if c.q_lora_rank is None:
            self.q = nn.Linear(c.dim, c.n_heads * c.qk_head_dim, bias=False)
        else:
            self.q_a = nn.Linear(c.dim, c.q_lora_rank, bias=False)
            self.q_norm = RMSNorm(c.q_lora_rank, c.norm_eps)
            self.q_b = nn.Linear(c.q_lora_rank, c.n_heads * c.qk_head_dim, bias=False)
        self.kv_a = nn.Linear(c.dim, c.kv_lora_rank + c.qk_rope_head_dim, bias=False)  # W_DKV and W_KR together
        self.kv_norm = RMSNorm(c.kv_lora_rank, c.norm_eps)
        self.kv_b = nn.Linear(c.kv_lora_rank, c.n_heads * (c.qk_nope_head_dim + c.v_head_dim), bias=False)
        self.o = nn.Linear(c.n_heads * c.v_head_dim, c.dim, bias=False)

    def _rope(self, x, positions):
        c = self.config
        if c.qk_rope_head_dim == 0:
            return x
        rotated = apply_rope(x, positions, base=c.rope_base, layout=c.layout, scaling=c.rope_scaling)
        return rotated * rope_attention_factor(c.rope_scaling)  # transformers scales cos and sin by it

    def _check(self, x, positions):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor (batch, n, dim), got {type(x).__name__}")
        if x.dim() != 3 or x.shape[-1] != self.config.dim:
            raise ValueError(f"x must have shape (batch, n, dim={self.config.dim}), got {tuple(x.shape)}")
        return torch.arange(x.shape[1], dtype=torch.float64) if positions is None else positions

    def queries(self, x, positions=None):
        """(q_nope (batch, heads, n, nope), q_rope (batch, heads, n, rope)), q_rope already rotated."""
        positions = self._check(x, positions)
        c = self.config
        q = self.q(x) if c.q_lora_rank is None else self.q_b(self.q_norm(self.q_a(x)))
        q = q.view(*x.shape[:2], c.n_heads, c.qk_head_dim).transpose(1, 2)
        q_nope, q_rope = q.split([c.qk_nope_head_dim, c.qk_rope_head_dim], dim=-1)
        return q_nope, self._rope(q_rope, positions)

    def latent_cache(self, x, positions=None):
        """What a cache holds per token: (c (batch, n, kv_lora_rank), k_rope (batch, n, rope), rotated)."""
        positions = self._check(x, positions)
        c = self.config
        latent, k_rope = self.kv_a(x).split([c.kv_lora_rank, c.qk_rope_head_dim], dim=-1)
        return self.kv_norm(latent), self._rope(k_rope, positions)

    def up_projections(self):
        """(W_UK (heads, nope, kv_lora_rank), W_UV (heads, v, kv_lora_rank)): kv_b's rows per head."""
        c = self.config
        weight = self.kv_b.weight.view(c.n_heads, c.qk_nope_head_dim + c.v_head_dim, c.kv_lora_rank)
        return weight[:, : c.qk_nope_head_dim], weight[:, c.qk_nope_head_dim :]

    def _attend(self, scores, values):
        n = scores.shape[-1]
        causal = torch.ones(n, n, dtype=torch.bool, device=scores.device).tril()
        weights = F.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1, dtype=torch.float32)
        return weights.to(values.dtype) @ values

    def forward(self, x, positions=None):
        """The expanded form: every head's key [W_UK c_j, k_rope_j] and value W_UV c_j, then attention."""
        c = self.config
        q_nope, q_rope = self.queries(x, positions)
        latent, k_rope = self.latent_cache(x, positions)
        w_uk, w_uv = self.up_projections()
        k_nope = torch.einsum("bnr,hdr->bhnd", latent, w_uk)
        values = torch.einsum("bnr,hdr->bhnd", latent, w_uv)
        keys = torch.cat([k_nope, k_rope[:, None].expand(-1, c.n_heads, -1, -1)], dim=-1)
        query = torch.cat([q_nope, q_rope], dim=-1)
        out = self._attend(query @ keys.transpose(-1, -2) * c.softmax_scale, values)
        return self.o(out.transpose(1, 2).reshape(*x.shape[:2], -1))

    def forward_absorbed(self, x, positions=None):
        """The absorbed form: W_UK^T moves into the query, the scores read the latent cache, W_UV comes after."""
        c = self.config
        q_nope, q_rope = self.queries(x, positions)
        latent, k_rope = self.latent_cache(x, positions)
        w_uk, w_uv = self.up_projections()
        q_latent = torch.einsum("bhnd,hdr->bhnr", q_nope, w_uk)  # (W_UK^h)^T q_nope, per head
        scores = q_latent @ latent[:, None].transpose(-1, -2) + q_rope @ k_rope[:, None].transpose(-1, -2)
        context = self._attend(scores * c.softmax_scale, latent[:, None])  # (batch, heads, n, kv_lora_rank)
        out = torch.einsum("bhnr,hdr->bhnd", context, w_uv)
        return self.o(out.transpose(1, 2).reshape(*x.shape[:2], -1))


def absorption_errors(mla, x, positions=None):
    """How far the absorbed form is from the expanded one, in three cases (float64 copies of the weights).

    {"no positions": largest |score difference| with neither part turned (the nope scores alone);
     "rope on the whole key": the same when the nope part turns too (RoPE_i q_nope against RoPE_j W_UK c_j),
        while the absorbed query can carry only the query's turn and the cached c_j none;
     "decoupled rope": largest |output difference| of MLA.forward and MLA.forward_absorbed (MLA as built);
     "score scale", "output scale": the largest |score| and |output| of the expanded form, for comparison}.
    """
    if not isinstance(mla, MLA):
        raise TypeError(f"mla must be an MLA, got {type(mla).__name__}")
    model, c = copy.deepcopy(mla).double(), mla.config
    with torch.no_grad():
        x = x.double()
        q_nope = model.queries(x, positions)[0]
        latent = model.latent_cache(x, positions)[0]
        positions = model._check(x, positions)
        w_uk = model.up_projections()[0]
        k_nope = torch.einsum("bnr,hdr->bhnd", latent, w_uk)

        def absorbed(query):  # (W_UK^T query) . c_j: all a latent cache can offer
            return torch.einsum("bhnd,hdr->bhnr", query, w_uk) @ latent[:, None].transpose(-1, -2)

        def turn(t):
            return apply_rope(t, positions, base=c.rope_base, layout=c.layout)

        plain = q_nope @ k_nope.transpose(-1, -2)
        whole = turn(q_nope) @ turn(k_nope).transpose(-1, -2)
        expanded, folded = model(x, positions), model.forward_absorbed(x, positions)
        return {
            "no positions": float((plain - absorbed(q_nope)).abs().max()),
            "rope on the whole key": float((whole - absorbed(turn(q_nope))).abs().max()),
            "decoupled rope": float((expanded - folded).abs().max()),
            "score scale": float(plain.abs().max()),
            "output scale": float(expanded.abs().max()),
        }


def cache_size(n_heads, qk_nope_head_dim, qk_rope_head_dim, v_head_dim, kv_lora_rank):
    """(values MLA caches per token and layer, values full multi-head attention would cache for the same heads)."""
    for name, value in (("n_heads", n_heads), ("qk_nope_head_dim", qk_nope_head_dim), ("v_head_dim", v_head_dim),
                        ("kv_lora_rank", kv_lora_rank)):  # fmt: skip
        _validate.positive_int(name, value)
    _validate.count("qk_rope_head_dim", qk_rope_head_dim)
    return kv_lora_rank + qk_rope_head_dim, n_heads * (qk_nope_head_dim + qk_rope_head_dim + v_head_dim)
