"""Partial RoPE: which features of a head turn, paired how, at which frequencies (notebook 12).

Many 2025-26 models turn only a fraction p of each head's d features. Two conventions share the
fraction and differ in everything else:

    neox          GPT-NeoX's rotary_pct, and transformers' partial_rotary_factor with the default rope_type
                  (Qwen3-Next and Qwen3.5 0.25, GLM-4.5 0.5, MiniMax-M2's rotary_dim 64 of 128): the first
                  r = int(d * p) features turn, paired inside those r ((i, i + r/2) "half", (2i, 2i+1)
                  "interleaved"), at theta_i = base**(-2i/r): the whole ladder of frequencies, squeezed into r.
    proportional  Gemma 4's global layers (rope_type "proportional"): the head is paired as for full RoPE
                  ((i, i + d/2) or (2i, 2i+1)); the first k = int(p * d // 2) pairs turn at
                  theta_i = base**(-2i/d), the full head's k fastest frequencies; the other d/2 - k pairs
                  have frequency 0 and never turn. This is Barbero et al.'s p-RoPE (2025): drop the slowest pairs.

    partial_frequencies(head_dim, fraction, base=, kind=)   transformers' inv_freq for either convention
    pair_plan(head_dim, fraction, base=, kind=, layout=)    every pair as (feature a, feature b, theta)
    apply_pairs(x, plan, positions)                         turn x (..., n, d) by a plan (NumPy or torch)
    apply_partial_rope(x, positions, fraction=, ...)        the two together
    half_layout_order(plan)                                 the same plan as full RoPE in the "half" layout
                                                            on permuted features (how notebook 12 runs it on
                                                            a real model: a common permutation of q and k
                                                            leaves every dot product q.k unchanged)

The two conventions are one family: proportional at base b equals neox at base b**p after a fixed
permutation of the head's features (proportional_as_neox_order), which is why a port that reads the
config right and pairs the features wrong computes something else entirely.
"""

import dataclasses

import numpy as np
import torch

from . import _validate
from .relative import ROPE_LAYOUTS
from .relative import _check_x as _check_floats

KINDS = ("neox", "proportional")


def _fraction(fraction):
    fraction = _validate.finite_real("fraction", fraction)
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1] (the part of the head that turns), got {fraction}")
    return fraction


def rotated_size(head_dim, fraction, kind="neox"):
    """How much turns: neox, r = int(head_dim * fraction) features; proportional, int(fraction * head_dim // 2) pairs.

    Both round down as transformers does; neox's r must come out even (pairs), and both at least one pair.
    """
    head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
    fraction = _fraction(fraction)
    kind = _validate.choice("kind", kind, KINDS)
    size = int(head_dim * fraction) if kind == "neox" else int(fraction * head_dim // 2)
    if kind == "neox" and size % 2:
        raise ValueError(
            f"fraction={fraction} of head_dim={head_dim} turns int({head_dim * fraction}) = {size} features, an odd "
            f"number: RoPE turns pairs (transformers would compute {size // 2 + 1} frequencies for {size} features)"
        )
    if size < (2 if kind == "neox" else 1):
        raise ValueError(f"fraction={fraction} of head_dim={head_dim} turns no pair at all ({kind})")
    return size


def partial_frequencies(head_dim, fraction=1.0, *, base=10000.0, kind="neox"):
    """theta per pair, float64: transformers' inv_freq for partial_rotary_factor=fraction.

    neox: (r // 2,) base**(-2i/r) with r = int(head_dim * fraction) (the default rope init's `dim`).
    proportional: (head_dim // 2,) base**(-2i/head_dim) for the first k pairs, then zeros
    (_compute_proportional_rope_parameters, factor 1).
    """
    size = rotated_size(head_dim, fraction, kind)
    base = _validate.base(base)
    if kind == "neox":
        return base ** (-np.arange(0, size, 2, dtype=np.float64) / size)
    theta = np.zeros(head_dim // 2)
    theta[:size] = base ** (-np.arange(0, 2 * size, 2, dtype=np.float64) / head_dim)
    return theta


@dataclasses.dataclass(frozen=True)
class PairPlan:
    """How a head of head_dim features turns: pair j is (pairs[j, 0], pairs[j, 1]) at theta[j] radians per position.

    Features that no pair holds pass through; a pair with theta 0 never turns.
    """

    head_dim: int
    pairs: np.ndarray  # (P, 2) int64 feature indices
    theta: np.ndarray  # (P,) float64

    def __post_init__(self):
        pairs = np.asarray(self.pairs, dtype=np.int64)
        theta = np.asarray(self.theta, dtype=np.float64)
        if pairs.ndim != 2 or pairs.shape[1] != 2 or theta.shape != (pairs.shape[0],):
            raise ValueError(f"pairs must be (P, 2) and theta (P,), got {pairs.shape} and {theta.shape}")
        used = pairs.ravel()
        if used.size and (used.min() < 0 or used.max() >= self.head_dim or len(set(used.tolist())) != used.size):
            raise ValueError(f"pairs must hold distinct feature indices below head_dim={self.head_dim}")
        if not np.all(np.isfinite(theta)):
            raise ValueError("theta must be finite")
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "theta", theta)


def pair_plan(head_dim, fraction=1.0, *, base=10000.0, kind="neox", layout="half"):
    """The PairPlan of partial RoPE in either convention (module docstring) and either layout.

    neox "half": pairs (i, i + r/2) for i < r/2 (transformers' rotate_half on q[..., :r]); "interleaved":
    (2i, 2i + 1) for i < r/2 (GPT-J's rotate_every_two). proportional "half": (i, i + d/2) for every
    i < d/2 (Gemma 4: rotate_half on the whole head); "interleaved": (2i, 2i + 1) for every i < d/2.
    """
    layout = _validate.choice("layout", layout, ROPE_LAYOUTS)
    theta = partial_frequencies(head_dim, fraction, base=base, kind=kind)
    span = 2 * theta.size  # the features the pairing covers: r for neox, the whole head for proportional
    first = np.arange(theta.size)
    if layout == "half":
        pairs = np.stack([first, first + theta.size], axis=1)
    else:
        pairs = np.stack([2 * first, 2 * first + 1], axis=1)
    assert pairs.max() < span <= head_dim
    return PairPlan(head_dim, pairs, theta)


def _check_x(x, head_dim):
    """x of shape (..., n, head_dim) for this plan, its floats checked as relative.rope checks them."""
    shape = tuple(x.shape) if isinstance(x, torch.Tensor) else np.shape(x)
    if len(shape) < 2 or shape[-1] != head_dim:
        raise ValueError(f"x must have shape (..., n, head_dim={head_dim}), got {shape}")
    return _check_floats(x)


def apply_pairs(x, plan, positions=None):
    """x (..., n, head_dim) turned by plan: pair (a, b) at position p becomes (a cos - b sin, a sin + b cos).

    The angle is phi = p * theta of the pair.

    NumPy in, NumPy out; torch in, torch out (same dtype). positions: (n,), default 0..n-1. Angles in float64;
    half precision is multiplied in float32. x is not modified.
    """
    if not isinstance(plan, PairPlan):
        raise TypeError(f"plan must be a PairPlan (pair_plan(...)), got {type(plan).__name__}")
    x = _check_x(x, plan.head_dim)
    n = x.shape[-2]
    if positions is None:
        positions = np.arange(n, dtype=np.float64)
    else:
        positions = _validate.real_array("positions", positions, 1)
        if positions.shape[0] != n:
            raise ValueError(f"positions must hold one position per row (n={n}), got {positions.shape[0]}")
    angles = positions[:, None] * plan.theta[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    a_idx, b_idx = plan.pairs[:, 0], plan.pairs[:, 1]
    if isinstance(x, torch.Tensor):
        work = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
        cos, sin = (torch.from_numpy(c).to(dtype=work, device=x.device) for c in (cos, sin))
        y = x.to(work)
        out = y.clone()
        a_idx, b_idx = torch.from_numpy(a_idx), torch.from_numpy(b_idx)
    else:
        work = np.float32 if x.dtype == np.float16 else x.dtype
        cos, sin = cos.astype(work), sin.astype(work)
        y = x.astype(work, copy=False)
        out = y.copy()
    a, b = y[..., a_idx], y[..., b_idx]
    out[..., a_idx] = a * cos - b * sin
    out[..., b_idx] = a * sin + b * cos
    return out.to(x.dtype) if isinstance(x, torch.Tensor) else out.astype(x.dtype, copy=False)


def apply_partial_rope(x, positions=None, *, fraction=1.0, base=10000.0, kind="neox", layout="half"):
    """x (..., n, head_dim) with partial RoPE of either convention applied (pair_plan + apply_pairs)."""
    head_dim = x.shape[-1] if hasattr(x, "shape") else np.asarray(x).shape[-1]
    return apply_pairs(x, pair_plan(head_dim, fraction, base=base, kind=kind, layout=layout), positions)


def half_layout_order(plan):
    """(order (head_dim,), theta (head_dim // 2,)): the plan as full RoPE in the "half" layout on x[..., order].

    Slot i < P of the first half holds pair i's first feature and slot head_dim/2 + i its second; the
    features no pair holds fill the remaining slots, with theta 0 (they never turn). Then
    apply_pairs(x, plan)[..., order] == rotate_half-RoPE(x[..., order], theta), and since a common
    permutation of q and k keeps every q.k, permuting the rows of W_q and W_k per head by `order`
    runs the plan on a model that only knows the half layout.
    """
    if not isinstance(plan, PairPlan):
        raise TypeError(f"plan must be a PairPlan (pair_plan(...)), got {type(plan).__name__}")
    half = plan.head_dim // 2
    if plan.pairs.shape[0] > half:
        raise ValueError(f"a head of {plan.head_dim} features holds at most {half} pairs, got {plan.pairs.shape[0]}")
    free = [f for f in range(plan.head_dim) if f not in set(plan.pairs.ravel().tolist())]
    firsts = list(plan.pairs[:, 0]) + free[: len(free) // 2]
    seconds = list(plan.pairs[:, 1]) + free[len(free) // 2 :]
    theta = np.concatenate([plan.theta, np.zeros(half - plan.pairs.shape[0])])
    return np.array(firsts + seconds, dtype=np.int64), theta


def proportional_as_neox_order(head_dim, fraction, *, layout="half"):
    """The feature order sigma with proportional(base b)(x)[..., sigma] == neox(base b**fraction)(x[..., sigma]).

    Both conventions turn k pairs at the same frequencies once neox's base is b**p (base**(-2i/d) =
    (base**p)**(-2i/r) with r = p d), so the two differ only in which features form the pairs. A
    checkpoint whose rows are W[sigma] (per head, q and k) is a neox model exactly equal to the proportional
    model W: notebook 12 builds its "NeoX checkpoint" from SmolLM2's weights this way. Needs int(head_dim * p)
    == 2 int(p * head_dim // 2) (the two conventions turn the same number of pairs).
    """
    proportional = pair_plan(head_dim, fraction, kind="proportional", layout=layout)
    neox = pair_plan(head_dim, fraction, kind="neox", layout=layout)
    turning = int(np.count_nonzero(proportional.theta))
    if neox.pairs.shape[0] != turning:
        raise ValueError(
            f"fraction={fraction} of head_dim={head_dim}: neox turns {neox.pairs.shape[0]} pairs, "
            f"proportional {turning}"
        )
    still = proportional.pairs[turning:].ravel()
    # feature sigma[j] of the proportional head goes to slot j of the neox head
    sigma = np.empty(head_dim, dtype=np.int64)
    sigma[neox.pairs.ravel()] = proportional.pairs[:turning].ravel()
    rest = [f for f in range(head_dim) if f not in set(neox.pairs.ravel().tolist())]
    sigma[rest] = np.sort(still)
    return sigma
