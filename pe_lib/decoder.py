"""A tiny causal decoder with seven ways to know positions (used by pe_lib.extrapolation, notebook 08).

TinyDecoder(positional, config): token embeddings -> pre-norm causal layers -> a linear read-out per
position. positional is one of VARIANTS:
    none          no positions at all (a causal mask still lets a model count: NoPE)
    learned       a trained table of rows, added to the token embeddings
    sinusoidal    the fixed sinusoidal table, added
    rope          rotary positions in every layer, base 10^4
    rope_1e6      the same with base 10^6
    alibi         a fixed per-head linear penalty -slope * distance on the logits (Press et al. 2022)
    t5            a learned scalar per head and distance bucket (Raffel et al. 2020), shared by the layers,
                  all buckets for the past (the decoder is causal, as T5's decoder, whose 32 buckets all serve
                  the past; T5's bidirectional encoder splits its 32 into 16 per direction);
                  max_distance = the training length, so training reaches every bucket (as in T5's encoder:
                  max_distance 128, inputs of 512 tokens)
    t5_far        the same with max_distance twice the training length: the last buckets hold distances
                  that training never shows, so their values stay at initialisation
config is a pe_lib.extrapolation.Config (vocab_size, d_model, num_heads, num_layers,
dim_feedforward, max_position, train_len, t5_buckets, t5_max_distance, t5_far_max_distance). A RoPE model can be
copied with other frequencies: extended(method, factor) (context extension) or retuned(theta).
"""

import copy
import math

import numpy as np
import torch
from torch import nn

from . import _validate
from .encodings import sinusoidal_encoding
from .modules import PreNormLayer
from .relative import RotaryEmbedding, alibi_slopes, apply_rope, t5_relative_bucket
from .rope_scaling import rope_attention_factor, rope_frequencies

VARIANTS = ("none", "learned", "sinusoidal", "rope", "rope_1e6", "alibi", "t5", "t5_far")
T5_VARIANTS = ("t5", "t5_far")
ROPE_BASES = {"rope": 1e4, "rope_1e6": 1e6}
# "none": the trained frequencies, unchanged; "yarn" as its reference code (and transformers) computes
# it, "yarn_paper" with the paper's continuous ramp (pe_lib.rope_scaling)
EXTENSIONS = ("none", "linear", "ntk", "yarn", "yarn_paper", "llama3")


def extension_scaling(method, factor, original):
    """The rope-scaling dict a model config would carry for `method` at `factor` (None for "none").

    original: the trained context length (YaRN's and Llama 3.1's original_max_position_embeddings);
    YaRN's beta_fast / beta_slow are left at their defaults, 32 and 1;
    Llama 3.1's bands are its published low_freq_factor 1 and high_freq_factor 4.
    """
    method = _validate.choice("method", method, EXTENSIONS)
    if method == "none":
        return None
    scaling = {"rope_type": method, "factor": float(factor)}
    if method in ("yarn", "yarn_paper", "llama3"):
        scaling["original_max_position_embeddings"] = original
    if method == "llama3":
        scaling.update(low_freq_factor=1.0, high_freq_factor=4.0)
    return scaling


class TokenByTokenRotary(nn.Module):
    """Dynamic NTK as a decoder with a key cache runs it: each position rotated with the frequencies of its own time.

    Generating token by token, position p is computed when the sequence is p + 1 long, so dynamic NTK
    rotates its query and key with theta(p + 1) and the cache keeps that key; a later query at m uses
    theta(m + 1). forward(q, k, positions=None) applies exactly that, position by position.
    """

    def __init__(self, base, scaling):
        super().__init__()
        self.base, self.scaling = base, scaling

    def forward(self, q, k, positions=None):
        n = q.shape[-2]
        positions = list(range(n)) if positions is None else [int(p) for p in positions]

        def rotate(x):  # apply_rope's dynamic NTK sees one position p, so the length p + 1
            rows = [apply_rope(x[..., j : j + 1, :], [p], base=self.base, layout="half", scaling=self.scaling)
                    for j, p in enumerate(positions)]  # fmt: skip
            return torch.cat(rows, dim=-2)

        return rotate(q), rotate(k)


def _causal_bias(seq, num_heads):
    """(heads, seq, seq): 0 on and below the diagonal, -inf above (the causal mask as a bias)."""
    future = torch.ones(seq, seq, dtype=torch.bool).triu(1)
    return torch.zeros(num_heads, seq, seq).masked_fill(future, float("-inf"))


class TinyDecoder(nn.Module):
    """Token ids (batch, seq) -> logits (batch, seq, vocab); forward(tokens, start=0) places them at start.."""

    def __init__(self, positional, config):
        super().__init__()
        self.positional = _validate.choice("positional", positional, VARIANTS)
        self.config = config
        d, heads = config.d_model, config.num_heads
        self.embedding = nn.Embedding(config.vocab_size, d)
        nn.init.normal_(self.embedding.weight, std=d**-0.5)  # times sqrt(d) below: unit-size token vectors
        if positional == "learned":
            self.position = nn.Embedding(config.max_position, d)
            nn.init.normal_(self.position.weight, std=0.02)
        elif positional == "sinusoidal":
            table = torch.from_numpy(sinusoidal_encoding(config.max_position, d, dtype=np.float32))
            self.register_buffer("position_rows", table, persistent=False)
        elif positional == "alibi":
            self.register_buffer("slopes", torch.from_numpy(alibi_slopes(heads)).float(), persistent=False)
        elif positional in T5_VARIANTS:
            self.buckets = nn.Embedding(config.t5_buckets, heads)
        self.layers = nn.ModuleList(
            PreNormLayer(d, heads, config.dim_feedforward, causal=True, rotary=self._rotary())
            for _ in range(config.num_layers)
        )
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, config.vocab_size)
        self.hidden_distances = ()  # keys this far back are masked out (hiding(), an experiment's probe)

    def _rotary(self):
        if self.positional not in ROPE_BASES:
            return None
        head_dim = self.config.d_model // self.config.num_heads
        return RotaryEmbedding(head_dim, base=ROPE_BASES[self.positional], layout="half")

    def _bias(self, seq):
        """The additive logit bias (heads, seq, seq) with the causal mask in it, or None (is_causal is used)."""
        if self.positional not in ("alibi", *T5_VARIANTS) and not self.hidden_distances:
            return None
        offsets = torch.arange(seq)
        distance = (offsets[:, None] - offsets[None, :]).clamp(min=0)  # how far back the key is
        causal = _causal_bias(seq, self.config.num_heads)
        for hidden in self.hidden_distances:
            causal = causal.masked_fill((offsets[:, None] - offsets[None, :]) == hidden, float("-inf"))
        if self.positional not in ("alibi", *T5_VARIANTS):
            return causal
        if self.positional == "alibi":
            return causal - self.slopes[:, None, None] * distance
        buckets = torch.from_numpy(
            t5_relative_bucket(
                -distance.numpy(),
                bidirectional=False,
                num_buckets=self.config.t5_buckets,
                max_distance=self.config.t5_max_distance
                if self.positional == "t5"
                else self.config.t5_far_max_distance,
            )
        )
        return causal + self.buckets(buckets).permute(2, 0, 1)

    def forward(self, tokens, start=0):
        seq = tokens.shape[1]
        if start + seq > self.config.max_position and self.positional in ("learned", "sinusoidal"):
            raise ValueError(f"positions {start}..{start + seq - 1} do not fit the table of {self.config.max_position}")
        positions = torch.arange(start, start + seq)
        x = self.embedding(tokens) * math.sqrt(self.config.d_model)
        if self.positional == "learned":
            x = x + self.position(positions)
        elif self.positional == "sinusoidal":
            x = x + self.position_rows[positions]
        bias = self._bias(seq)
        rotary_positions = None if start == 0 else positions  # from 0: RotaryEmbedding's cos/sin cache
        for layer in self.layers:
            x = layer(x, rotary_positions, bias)
        return self.head(self.norm(x))

    def extended(self, method, factor):
        """A copy of this RoPE model whose frequencies are rescaled by `method` for `factor` x the trained length."""
        if self.positional not in ROPE_BASES:
            raise ValueError(f"only RoPE models can be extended, this one has positional={self.positional!r}")
        method = _validate.choice("method", method, EXTENSIONS)
        factor = _validate.finite_real("factor", factor)
        scaling = extension_scaling(method, factor, self.config.train_len)
        head_dim = self.config.d_model // self.config.num_heads
        theta = rope_frequencies(head_dim, base=ROPE_BASES[self.positional], scaling=scaling)
        # YaRN's temperature: cos and sin (so q and k) times the attention factor, the logits by its square.
        return self.retuned(theta, logit_scale=rope_attention_factor(scaling) ** 2)

    def hiding(self, distances):
        """A copy of this model in which no query sees the keys exactly `distances` positions back (ints > 0)."""
        distances = tuple(_validate.positive_int("distance", d) for d in distances)
        model = copy.deepcopy(self)
        model.hidden_distances = distances
        return model

    def dynamic_ntk(self, factor, *, cached):
        """A copy of this RoPE model with dynamic NTK scaling (transformers' "dynamic", max_position_embeddings = L).

        cached=False: every forward call rescales for its own length, as a full recomputation does.
        cached=True: each position keeps the frequencies of the moment it was generated (TokenByTokenRotary).
        """
        if self.positional not in ROPE_BASES:
            raise ValueError(f"only RoPE models can be rescaled, this one has positional={self.positional!r}")
        cached = _validate.flag("cached", cached)
        factor = _validate.finite_real("factor", factor)
        scaling = {"rope_type": "dynamic", "factor": factor, "max_position_embeddings": self.config.train_len}
        model = copy.deepcopy(self)
        head_dim = self.config.d_model // self.config.num_heads
        for layer in model.layers:
            base = ROPE_BASES[self.positional]
            layer.rotary = (
                TokenByTokenRotary(base, scaling)
                if cached
                else RotaryEmbedding(head_dim, base=base, layout="half", scaling=scaling)
            )
        return model

    def retuned(self, theta, *, logit_scale=1.0):
        """A copy of this RoPE model that turns its pairs at the frequencies `theta` (head_dim // 2,) instead."""
        if self.positional not in ROPE_BASES:
            raise ValueError(f"only RoPE models can be retuned, this one has positional={self.positional!r}")
        pairs = self.config.d_model // self.config.num_heads // 2
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (pairs,) or not np.all(np.isfinite(theta)):
            raise ValueError(f"theta must hold {pairs} finite frequencies, one per pair, got shape {theta.shape}")
        model = copy.deepcopy(self)
        for layer in model.layers:
            layer.rotary = model._rotary()
            layer.rotary.theta = theta.copy()  # RotaryEmbedding builds its cos/sin cache from theta on first use
            layer.logit_scale = logit_scale
        return model
