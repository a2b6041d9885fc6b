"""What the attention heads of a pe_lib.llama model do, read from its weights and its attention (notebook 10).

    norms = heads.pair_norms(model)                       # from the weights: q (layers, n_heads, pairs), k (..)
    norms = heads.pair_norms(model, ids)                  # from the vectors the model computes on a text
    probs = heads.attention_probabilities(model, ids, layers=[0, 16])   # (batch, 2, n_heads, n, n)
    probs, norms = heads.probabilities_and_norms(model, ids)   # every layer's, from one forward
    heads.previous_token_score(probs)                     # (batch, 2, n_heads): mean attention on key i - 1
    heads.first_token_score(probs)                        # (batch, 2, n_heads): mean attention on key 0
    heads.norm_share(norms.q)[..., :8].sum(-1)            # what the 8 fastest pairs hold of each head's norm^2
    with heads.unrotated_pairs(model, range(8)):          # the same model, pairs 0-7 turned by no angle
        logits = model(ids)

A RoPE pair is the two features of a query (or key) that turn together at one frequency theta_i:
with the "half" layout features i and i + head_dim/2, with "interleaved" features 2i and 2i + 1.
Pair 0 turns fastest (theta_0 = 1), the last pair slowest. The norm of a pair measures how much a
head can use that frequency: a pair whose query or key part is near zero adds nothing to any score.

The probabilities are recomputed from the model's own queries and keys: a forward pre-hook on each
requested layer's attention reads the input the layer sees (normalised hidden states, cos and sin),
and the layer's own projections and pe_lib.llama.rotate turn it into q and k; softmax(q k^T /
sqrt(head_dim)) under the causal mask gives the probabilities the fused kernel never materialises.
The forward stops after the last requested layer. The model is not changed.

unrotated_pairs is the causal test the norms cannot give: the chosen pairs get theta_i = 0 (cos 1, sin 0)
in every layer, so they compare content at every distance, and the loss says what their rotation did.
"""

import contextlib
import dataclasses
import math
from collections import namedtuple

import numpy as np
import torch

from . import _validate
from .llama import Llama, Positions, rotate
from .rope_scaling import rope_attention_factor

PairNorms = namedtuple("PairNorms", ["q", "k"])
PairNorms.__doc__ = "Norms per RoPE pair: q (layers, n_heads, pairs) and k (layers, n_kv_heads, pairs), NumPy."


class _Stop(Exception):
    """Raised by the hook of the last layer needed: the rest of the forward is not run."""


def _check_model(model):
    if not isinstance(model, Llama):
        raise TypeError(f"model must be a pe_lib.llama.Llama (e.g. from smollm.load()), got {type(model).__name__}")
    return model


def _check_layers(layers, n_layers):
    if layers is None:
        return list(range(n_layers))
    if isinstance(layers, (str, bytes, torch.Tensor, np.ndarray)) or not hasattr(layers, "__iter__"):
        raise TypeError(f"layers must be a list of layer indices (e.g. [0, 5]) or None for all, got {layers!r}")
    layers = [_validate.count("layers", i) for i in layers]
    if not layers:
        raise ValueError("layers must name at least one layer, got an empty list")
    outside = [i for i in layers if i >= n_layers]
    if outside:
        raise ValueError(f"layers must be indices below n_layers={n_layers}, got {outside}")
    if len(set(layers)) != len(layers):
        raise ValueError(f"layers must not repeat a layer, got {layers}")
    return layers


def _pairs(x, layout):
    """The two features of each pair of x (..., head_dim): (first, second), each (..., head_dim // 2)."""
    half = x.shape[-1] // 2
    if layout == "half":
        return x[..., :half], x[..., half:]
    return x[..., 0::2], x[..., 1::2]


def _queries_and_keys(model, ids, layers, inputs):
    """{layer: (q, k, mask)}: q (batch, n_heads, n, d), k (batch, n_kv_heads, n, d) rotated as the model rotates
    them; mask (batch, 1, n, n) True where a query may read a key, or None where the layer is plainly causal."""
    found, last = {}, max(layers)

    def hook(index):
        def read(attention, args, kwargs):
            x, cos, sin, layout, *rest = (*args, *kwargs.values())
            q, k, _ = attention.project(x).split((attention.n_heads, attention.n_kv_heads, attention.n_kv_heads), 1)
            if cos is not None:  # a layer without positions (nope_layers) rotates nothing
                q, k = rotate(q, cos, sin, layout), rotate(k, cos, sin, layout)
            found[index] = (q, k, rest[0] if rest else None)
            if index == last:
                raise _Stop

        return read

    attentions = [model.layers[i].attn for i in layers]
    handles = [a.register_forward_pre_hook(hook(i), with_kwargs=True) for i, a in zip(layers, attentions, strict=True)]
    try:
        with torch.no_grad():
            model(ids, **inputs)
    except _Stop:
        pass
    finally:
        for handle in handles:
            handle.remove()
    return found


def pair_norms(model, ids=None, **inputs):
    """The norm of each RoPE pair, per layer and head: PairNorms(q (layers, n_heads, P), k (layers, n_kv_heads, P)).

    Without ids: read from the weights. Pair i of a query head owns two rows of W_Q (which two, the
    model's layout says); its norm is the Frobenius norm of those two rows, sqrt(|row a|^2 + |row b|^2).
    The same for W_K and the key heads.
    With ids (batch, n): from the queries and keys the model computes on that text, the root mean
    square over the tokens of sqrt(q_a^2 + q_b^2) (the norm a pair keeps under any rotation), as
    Barbero et al. (2024) measure them; inputs (position_ids, ...) go to the model's forward (every token
    counts, padding too).
    Float64 NumPy arrays; P = head_dim // 2, pair 0 the fastest.
    """
    model = _check_model(model)
    config, layout = model.config, model.positions.layout
    if ids is None:
        q_norms, k_norms = [], []
        for layer in model.layers:
            for weight, heads, out in (
                (layer.attn.q_weight, config.n_heads, q_norms),
                (layer.attn.k_weight, config.n_kv_heads, k_norms),
            ):
                rows = weight.detach().double().view(heads, config.head_dim, -1).pow(2).sum(-1)  # (heads, head_dim)
                a, b = _pairs(rows, layout)
                out.append((a + b).sqrt())
        return PairNorms(torch.stack(q_norms).numpy(), torch.stack(k_norms).numpy())
    return _activation_norms(_queries_and_keys(model, ids, list(range(config.n_layers)), inputs), layout)


def _activation_norms(found, layout):
    """PairNorms of the queries and keys found[layer] = (q, k, mask), every layer in order."""
    norms = {"q": [], "k": []}
    for index in range(len(found)):
        for name, x in zip("qk", found[index][:2], strict=True):
            a, b = _pairs(x.double(), layout)
            norms[name].append((a.pow(2) + b.pow(2)).mean(dim=(0, 2)).sqrt())  # mean over batch and tokens
    return PairNorms(torch.stack(norms["q"]).numpy(), torch.stack(norms["k"]).numpy())


def attention_probabilities(model, ids, layers=None, **inputs):
    """Attention probabilities (batch, len(layers), n_heads, n, n) float32 of the model on ids (batch, n).

    Entry [b, l, h, i, j]: how much query token i of head h in layers[l] attends to key token j
    (0 where j > i: causal). Each row sums to 1. Query head h reads key head h // (n_heads // n_kv_heads),
    as grouped-query attention shares them. layers: indices (default: every layer); only those are
    computed, and the forward stops after the last of them. inputs go to the model's forward as they are
    (position_ids; a padding or document mask where the forward takes one, which the probabilities then obey).
    """
    model = _check_model(model)
    layers = _check_layers(layers, model.config.n_layers)
    return _probabilities(_queries_and_keys(model, ids, layers, inputs), layers)


def probabilities_and_norms(model, ids, **inputs):
    """(attention_probabilities(model, ids, **inputs), pair_norms(model, ids, **inputs)) from one forward."""
    model = _check_model(model)
    layers = list(range(model.config.n_layers))
    found = _queries_and_keys(model, ids, layers, inputs)
    return _probabilities(found, layers), _activation_norms(found, model.positions.layout)


def _probabilities(found, layers):
    """softmax(q k^T / sqrt(d)) under each layer's mask, (batch, len(layers), n_heads, n, n), from found[layer]."""
    out = []
    for index in layers:
        q, k, allowed = found[index]
        batch, n_heads, n, d = q.shape
        group = n_heads // k.shape[1]
        scores = q.view(batch, k.shape[1], group, n, d) @ k[:, :, None].transpose(-1, -2) / math.sqrt(d)
        hidden = torch.ones(n, n, dtype=torch.bool).triu(1) if allowed is None else ~allowed
        out.append(scores.view(batch, n_heads, n, n).masked_fill(hidden, float("-inf")).softmax(-1))
    return torch.stack(out, dim=1)


def _check_probs(probs, needed=1):
    """probs (..., n, n) as a float NumPy array (float32 tensors without a copy), checked to be probabilities."""
    if isinstance(probs, torch.Tensor) and probs.dtype in (torch.float32, torch.float64):
        values = probs.detach().cpu().numpy()
    elif isinstance(probs, (torch.Tensor, np.ndarray)):
        values = _validate.as_numpy(probs)
    else:
        raise TypeError(
            f"probs must be a tensor or array of attention probabilities (..., n, n), got {type(probs).__name__}"
        )
    if values.dtype == bool or values.dtype.kind not in "fiu":
        raise TypeError(f"probs must hold real numbers, got dtype {values.dtype}")
    if values.ndim < 2 or values.shape[-1] != values.shape[-2]:
        raise ValueError(f"probs must have shape (..., n, n): a row per query, a column per key; got {values.shape}")
    if values.shape[-1] < needed:
        raise ValueError(f"probs must cover at least {needed} tokens here, got n = {values.shape[-1]}")
    if not np.isfinite(values).all():
        raise ValueError("probs must be finite attention probabilities, got inf or nan")
    worst = float(np.abs(values.sum(-1, dtype=np.float64) - 1).max()) if values.size else 0.0
    if values.min(initial=0) < 0 or worst > 1e-3:
        raise ValueError(
            f"probs must be attention probabilities (rows of entries >= 0 that sum to 1); got a row {worst:.3g} "
            f"away from 1 or a negative entry: pass softmax outputs, not scores"
        )
    return values


def previous_token_score(probs):
    """Mean attention of each query i >= 1 on key i - 1: probs (..., n, n) -> (...,); 1: a pure previous-token head."""
    values = _check_probs(probs, needed=2)
    return np.diagonal(values, offset=-1, axis1=-2, axis2=-1).mean(-1, dtype=np.float64)


def first_token_score(probs, *, skip=8):
    """Mean attention on key 0 of the queries skip .. n-1: probs (..., n, n) -> (...,).

    The first `skip` queries are left out: they see only a few keys, so even an even spread puts a
    large share on key 0 (query 0 sees key 0 alone). An even spread over the keys each query sees
    scores uniform_first_token_score(n, skip): about 0.014 for n = 256, skip = 8.
    """
    values = _check_probs(probs)
    n = values.shape[-1]
    skip = _validate.count("skip", skip)
    if skip >= n:
        raise ValueError(f"skip must be below the number of tokens n = {n}, got {skip}")
    return values[..., skip:, 0].mean(-1, dtype=np.float64)


def uniform_first_token_score(n, *, skip=8):
    """first_token_score of a head that spreads each query evenly over the keys it sees: mean of 1/(i+1), i >= skip."""
    n, skip = _validate.positive_int("n", n), _validate.count("skip", skip)
    if skip >= n:
        raise ValueError(f"skip must be below the number of tokens n = {n}, got {skip}")
    return float(np.mean(1.0 / np.arange(skip + 1, n + 1)))


def norm_share(norms):
    """Each pair's share of a head's squared norm: norms (..., P) -> (..., P), each row summing to 1.

    A head that spreads its norm evenly gives every pair 1/P; share[..., :8].sum(-1) is what the
    8 fastest pairs hold.
    """
    values = _validate.as_numpy(norms)
    if values.dtype == bool or values.dtype.kind not in "fiu":
        raise TypeError(f"norms must hold real numbers (pair_norms' q or k), got dtype {values.dtype}")
    if values.ndim < 1 or values.shape[-1] < 1:
        raise ValueError(f"norms must have shape (..., pairs) with at least one pair, got {values.shape}")
    values = values.astype(np.float64)
    if not np.isfinite(values).all() or (values < 0).any():
        raise ValueError("norms must be finite and >= 0 (norms of pairs), got a negative, inf or nan entry")
    squared = values**2
    total = squared.sum(-1, keepdims=True)
    if (total == 0).any():
        raise ValueError("norms must not be all zero for a head: a head without any norm has no shares")
    return squared / total


@dataclasses.dataclass(frozen=True)
class _UnrotatedPairs(Positions):
    """Positions whose pairs `pairs` turn by no angle (theta_i = 0); every other choice as in Positions."""

    pairs: frozenset = frozenset()

    def cos_sin(self, position_ids, head_dim):
        cos, sin = super().cos_sin(position_ids, head_dim)
        chosen = sorted(self.pairs)
        cos[..., chosen] = rope_attention_factor(self.scaling)  # cos 0 = 1, times YaRN's factor where it has one
        sin[..., chosen] = 0.0
        return cos, sin


@contextlib.contextmanager
def unrotated_pairs(model, pairs):
    """Run the block with RoPE pairs `pairs` (indices, 0 = fastest) turned by no angle in every layer.

    Each chosen pair keeps its features and its weights but is rotated by 0 at every position (theta_i = 0):
    it then adds the same score for a key at any distance. The model's other position choices stay; they are
    restored on exit.
    """
    model = _check_model(model)
    n_pairs = model.config.head_dim // 2
    if isinstance(pairs, (str, bytes, torch.Tensor, np.ndarray)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"pairs must be a collection of pair indices (e.g. range(8)), got {pairs!r}")
    chosen = frozenset(_validate.count("pairs", i) for i in pairs)
    outside = sorted(i for i in chosen if i >= n_pairs)
    if outside:
        raise ValueError(f"pairs must be indices below head_dim // 2 = {n_pairs}, got {outside}")
    previous = model.positions
    fields = {f.name: getattr(previous, f.name) for f in dataclasses.fields(Positions)}
    model.positions = _UnrotatedPairs(**fields, pairs=chosen | getattr(previous, "pairs", frozenset()))
    try:
        yield model
    finally:
        model.positions = previous
