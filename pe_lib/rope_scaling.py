"""RoPE's frequencies for every rope_type a model config can name, as the code that models run computes them.

The reference is Hugging Face transformers (`modeling_rope_utils.ROPE_INIT_FUNCTIONS` and each
model's default rotary embedding); tests/test_transformers_reference.py compares every type with it.
The scaling dict is the one configs carry (`rope_scaling` up to transformers 4.x, `rope_parameters`
in 5.x, without `rope_theta`, which is the `base` argument here):

    None or {"rope_type": "default"}   theta_i = base**(-2i/d)
    linear        {"factor": s}                        position interpolation: theta_i / s
    dynamic       {"factor": s, "max_position_embeddings": L}
                  dynamic NTK: for a sequence of n > L tokens the base becomes
                  base * (s n / L - (s - 1))**(d/(d-2)); at n <= L nothing changes
    yarn          {"factor": s, "original_max_position_embeddings": L, "beta_fast": 32, "beta_slow": 1,
                   "truncate": True, "mscale", "mscale_all_dim", "attention_factor"}
                  YaRN as its authors' code and transformers compute it: a ramp over the pair index
                  between floor/ceil of the indices where a pair turns beta_fast and beta_slow times
    longrope      {"short_factor": [...], "long_factor": [...], "original_max_position_embeddings": L,
                   "factor", "attention_factor"}   one searched divisor per pair (Phi-3)
    llama3        {"factor": s, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": L}
                  (equal factors, as Llama 4 Scout's 1 and 1, leave no ramp: pairs turning fewer than
                  low_freq_factor times in L are divided by s, the others kept; transformers warns, then
                  computes the same)
    proportional  {"partial_rotary_factor": p, "factor": 1}   rotated pairs keep the full head's
                  exponents 2i/d, the other pairs get frequency 0 (transformers' Gemma 4)

Two forms the course keeps although transformers has no rope_type for them, each tested against
its paper's formula:
    ntk           {"factor": s}   static NTK-aware scaling (bloc97's post; Code Llama's idea of a larger
                  base): base * s**(d/(d-2)) at every length
    yarn_paper    the YaRN paper's ramp, continuous in r_i = L theta_i / (2 pi) (eq. 18-20), which
                  differs from the reference code inside the ramp and at its edges
"""

import math
from collections.abc import Mapping

import numpy as np

from . import _validate
from .encodings import frequencies

TRANSFORMERS_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
COURSE_TYPES = ("ntk", "yarn_paper")  # forms no rope_type of transformers computes
ROPE_TYPES = TRANSFORMERS_TYPES + COURSE_TYPES
LENGTH_DEPENDENT = ("dynamic", "longrope")  # their frequencies depend on the sequence length

# Keys each rope_type needs, and the optional ones with their defaults (None: absent unless given).
_REQUIRED = {
    "default": (),
    "linear": ("factor",),
    "dynamic": ("factor", "max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings"),
    "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"),
    "proportional": (),
    "ntk": ("factor",),
    "yarn_paper": ("factor", "original_max_position_embeddings"),
}
_OPTIONAL = {
    "yarn": {
        "beta_fast": 32.0,
        "beta_slow": 1.0,
        "truncate": True,
        "mscale": None,
        "mscale_all_dim": None,
        "attention_factor": None,
    },
    "yarn_paper": {"beta_fast": 32.0, "beta_slow": 1.0},
    "longrope": {"factor": None, "attention_factor": None},
    "proportional": {"partial_rotary_factor": 1.0, "factor": 1.0},
}


def allowed_keys(kind):
    """The keys a scaling dict of rope_type `kind` may hold (required, then optional), rope_type first."""
    kind = _validate.choice("rope_type", kind, ROPE_TYPES)
    return ("rope_type", *_REQUIRED[kind], *_OPTIONAL.get(kind, {}))


def _positive(name, value):
    value = _validate.finite_real(name, value)
    if value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_scaling(scaling):
    """A rope-scaling dict checked, with "type" read as "rope_type" and defaults filled in; None for no scaling."""
    if scaling is None:
        return None
    if not isinstance(scaling, Mapping):
        raise TypeError(
            f"scaling must be None or a dict such as {{'rope_type': 'linear', 'factor': 2.0}}, got {scaling!r}"
        )
    scaling = dict(scaling)
    if "type" in scaling and "rope_type" not in scaling:  # configs of the Llama 2 era write "type"
        scaling["rope_type"] = scaling.pop("type")
    if "rope_type" not in scaling:
        raise ValueError(f"scaling needs a 'rope_type' key, one of {', '.join(map(repr, ROPE_TYPES))}; got {scaling!r}")
    kind = _validate.choice("scaling['rope_type']", scaling.pop("rope_type"), ROPE_TYPES)
    if kind == "default" and not scaling:
        return None
    required, optional = _REQUIRED[kind], _OPTIONAL.get(kind, {})
    allowed = ", ".join(repr(key) for key in ("rope_type", *required, *optional))
    for key in scaling:
        if key not in required and key not in optional:
            raise ValueError(f"scaling has an unknown key {key!r} for rope_type {kind!r}: allowed keys are {allowed}")
    for key in required:
        if key not in scaling:
            raise ValueError(f"scaling with rope_type {kind!r} needs the key {key!r} (allowed keys: {allowed})")
    checked = {"rope_type": kind, **optional, **scaling}
    if checked.get("factor") is not None:
        factor = _validate.finite_real("scaling['factor']", checked["factor"])
        if factor < 1:
            raise ValueError(f"scaling['factor'] must be a finite number >= 1 (the context is stretched), got {factor}")
        checked["factor"] = factor
    for key in ("original_max_position_embeddings", "max_position_embeddings"):
        if key in checked:
            checked[key] = _validate.positive_int(f"scaling[{key!r}]", checked[key])
    for key in ("mscale", "mscale_all_dim", "attention_factor"):
        if checked.get(key) is not None:
            checked[key] = _positive(f"scaling[{key!r}]", checked[key])
    if "truncate" in checked:
        checked["truncate"] = _validate.flag("scaling['truncate']", checked["truncate"])
    if "partial_rotary_factor" in checked:
        p = _positive("scaling['partial_rotary_factor']", checked["partial_rotary_factor"])
        if p > 1:
            raise ValueError(f"scaling['partial_rotary_factor'] must be in (0, 1], got {p}")
        checked["partial_rotary_factor"] = p
    for key in ("short_factor", "long_factor"):
        if key in checked:
            values = _validate.real_array(f"scaling[{key!r}]", checked[key], ndim=1)
            if np.any(values <= 0):
                raise ValueError(f"scaling[{key!r}] must hold divisors > 0, one per pair, got {checked[key]!r}")
            checked[key] = values
    for low, high in (("beta_slow", "beta_fast"), ("low_freq_factor", "high_freq_factor")):
        if low in checked:
            checked[low] = _positive(f"scaling[{low!r}]", checked[low])
            checked[high] = _positive(f"scaling[{high!r}]", checked[high])
            if low == "low_freq_factor" and checked[low] > checked[high]:
                raise ValueError(
                    f"scaling[{low!r}] must not exceed scaling[{high!r}], got {checked[low]} > {checked[high]}"
                )
            if low == "beta_slow" and checked[low] >= checked[high]:
                raise ValueError(
                    f"scaling[{low!r}] must be below scaling[{high!r}], got {checked[low]} >= {checked[high]}"
                )
    return checked


def _yarn_ramp(dim, base, scaling):
    """The reference code's ramp per pair (0 = untouched, 1 = divided by s), shape (dim // 2,)."""
    length, truncate = scaling["original_max_position_embeddings"], scaling["truncate"]

    def correction_dim(turns):  # the (fractional) pair index that turns `turns` times over the context
        return dim * math.log(length / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(scaling["beta_fast"]), correction_dim(scaling["beta_slow"])
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as the reference code: no division by zero
    return np.clip((np.arange(dim // 2) - low) / (high - low), 0.0, 1.0)


def scaled_frequencies(dim, base, scaling, seq_len=None):
    """theta_i for the dim // 2 pairs with a checked scaling dict applied, float64 (dim // 2,).

    The building block of rope_frequencies and apply_rope: arguments are already validated.
    seq_len: the sequence length (largest position + 1) for the types in LENGTH_DEPENDENT.
    """
    theta = frequencies(dim, base=base)  # the sinusoidal encoding's w_i: RoPE uses the same ladder
    if scaling is None:
        return theta
    kind = scaling["rope_type"]
    if kind == "linear":
        return theta / scaling["factor"]
    if kind in ("ntk", "dynamic"):
        if dim < 4:
            name = "NTK" if kind == "ntk" else "dynamic NTK"
            raise ValueError(f"{name} scaling needs at least two pairs (a rotary dimension >= 4), got {dim}")
        s = scaling["factor"]
        if kind == "dynamic":  # a new base for the current length; at or below L, s_eff = 1
            length = scaling["max_position_embeddings"]
            s = s * max(seq_len or length, length) / length - (s - 1)
        # The new base keeps theta_0 = 1 and divides the last theta_{d/2-1} = base**(-(d-2)/d) by s.
        return frequencies(dim, base=base * s ** (dim / (dim - 2)))
    if kind == "longrope":
        long = seq_len is not None and seq_len > scaling["original_max_position_embeddings"]
        divisors = scaling["long_factor" if long else "short_factor"]
        if divisors.shape != theta.shape:
            raise ValueError(
                f"scaling['{'long_factor' if long else 'short_factor'}'] must hold one divisor per pair, "
                f"{theta.shape[0]} for a rotary dimension of {dim}, got {divisors.shape[0]}"
            )
        return theta / divisors
    if kind == "proportional":  # rotated pairs keep exponents 2i/dim of the whole head; the rest stand still
        rotated = int(scaling["partial_rotary_factor"] * dim // 2)
        return np.where(np.arange(dim // 2) < rotated, theta, 0.0) / scaling["factor"]
    s = scaling["factor"]
    if kind == "yarn":
        ramp = _yarn_ramp(dim, base, scaling)
        return ramp * theta / s + (1 - ramp) * theta
    # yarn_paper and llama3: one ramp in r_i, the turns each pair makes over the original context:
    # gamma = 1 (untouched) where r >= high, 0 (theta / s) where r <= low. Llama 3.1 writes r as L / wavelength.
    rotations = scaling["original_max_position_embeddings"] * theta / (2 * np.pi)
    if kind == "yarn_paper":
        low, high = scaling["beta_slow"], scaling["beta_fast"]
    else:
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    if high == low:  # llama3 with equal factors (Llama 4 Scout: 1 and 1): no ramp, a cut at r = low
        gamma = (rotations >= high).astype(float)
    else:
        gamma = np.clip((rotations - low) / (high - low), 0.0, 1.0)
    return (1 - gamma) * theta / s + gamma * theta


def rope_frequencies(head_dim, *, base=10000.0, scaling=None, seq_len=None):
    """RoPE's angle per position of each feature pair, theta_i = base**(-2i/head_dim), shape (head_dim // 2,).

    scaling: None or a dict as model configs write it, for any rope_type in ROPE_TYPES (the module
    docstring lists their keys). The result equals transformers' inv_freq for the same config, in
    float64 (transformers computes it in float32). seq_len: the current sequence length, needed by
    "dynamic" (default: max_position_embeddings, where it changes nothing) and "longrope" (long
    factors above original_max_position_embeddings; default: the short ones).
    For the attention temperature that yarn and longrope add, see rope_attention_factor.
    """
    head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
    if seq_len is not None:
        seq_len = _validate.positive_int("seq_len", seq_len)
    return scaled_frequencies(head_dim, _validate.base(base), check_scaling(scaling), seq_len)


def yarn_attention_scale(factor):
    """YaRN's temperature sqrt(1/t) = 0.1 * ln(s) + 1 for s > 1, else 1.

    Multiply both q and k (or cos and sin, as Hugging Face does) by it, so the logits grow by its
    square; apply_rope leaves it out and stays a pure rotation.
    """
    factor = _positive("factor", factor)
    return 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0


def rope_attention_factor(scaling):
    """The factor transformers multiplies cos and sin by (so the logits by its square); 1.0 for most types.

    yarn: scaling["attention_factor"] if given; else, with mscale and mscale_all_dim (DeepSeek),
    (0.1 mscale ln s + 1) / (0.1 mscale_all_dim ln s + 1); else 0.1 ln s + 1 (yarn_paper too).
    longrope: scaling["attention_factor"] if given, else sqrt(1 + ln s / ln L) for s > 1.
    """
    scaling = check_scaling(scaling)
    kind = None if scaling is None else scaling["rope_type"]
    if kind not in ("yarn", "yarn_paper", "longrope"):
        return 1.0
    if scaling.get("attention_factor") is not None:
        return float(scaling["attention_factor"])
    factor = scaling["factor"]
    if kind == "longrope":
        if factor is None:
            raise ValueError(
                "scaling with rope_type 'longrope' needs 'factor' or 'attention_factor' for its temperature"
            )
        length = scaling["original_max_position_embeddings"]
        return math.sqrt(1 + math.log(factor) / math.log(length)) if factor > 1 else 1.0

    def mscale(weight):
        return 0.1 * weight * math.log(factor) + 1.0 if factor > 1 else 1.0

    if scaling.get("mscale") and scaling.get("mscale_all_dim"):
        return mscale(scaling["mscale"]) / mscale(scaling["mscale_all_dim"])
    return mscale(1.0)
