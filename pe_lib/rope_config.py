"""Read a model's RoPE from its config.json, in both layouts transformers has used.

    up to 4.x   "rope_theta": 1e4, "rope_scaling": {"type" or "rope_type": ..., "factor": ...}
                (Gemma 3 adds "rope_local_base_freq" for its sliding-window layers)
    5.x         "rope_parameters": {"rope_type": ..., "rope_theta": ..., ...}, or one such dict per
                layer type: {"full_attention": {...}, "sliding_attention": {...}}

The head size is `head_dim` where the config gives one (Gemma's 256 is not hidden_size / heads),
`qk_rope_head_dim` for DeepSeek's decoupled RoPE sub-head, else hidden_size // num_attention_heads.
The rotated part is `partial_rotary_factor` (Phi, StableLM), `rotary_pct` (GPT-NeoX, Pythia) or
`rotary_dim` (GPT-J, CodeGen). The result equals transformers' own inv_freq for the same config
(tests/test_transformers_reference.py checks it for every RoPE model in the course's table).
"""

import dataclasses
from collections.abc import Mapping

from . import _validate
from .rope_scaling import check_scaling, rope_attention_factor, scaled_frequencies

# Keys of a rope-scaling dict that describe something other than frequencies (kept apart).
_NOT_FREQUENCY_KEYS = ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved")
# Keys that say a config uses RoPE at all.
_ROPE_KEYS = (
    "rope_theta",
    "rope_scaling",
    "rope_parameters",
    "rotary_dim",
    "rotary_pct",
    "rotary_emb_base",
    "partial_rotary_factor",
    "qk_rope_head_dim",
)


@dataclasses.dataclass(frozen=True)
class RopeScheme:
    """One layer type's RoPE as a config describes it.

    head_dim: the attention head size; rotary_dim: how many of its features turn (even);
    base: rope_theta; scaling: the checked rope-scaling dict (pe_lib.rope_frequencies' form) or None;
    max_position_embeddings: the config's, if it has one; mrope_section: Qwen2-VL's split of the
    pairs between (time, height, width), or None.
    """

    head_dim: int
    rotary_dim: int
    base: float
    scaling: dict | None = None
    max_position_embeddings: int | None = None
    mrope_section: tuple | None = None

    @property
    def rope_type(self):
        return "default" if self.scaling is None else self.scaling["rope_type"]

    def frequencies(self, seq_len=None):
        """inv_freq, float64: rotary_dim // 2 pairs (proportional: head_dim // 2, the unrotated ones 0)."""
        if seq_len is not None:
            seq_len = _validate.positive_int("seq_len", seq_len)
        dim = self.head_dim if self.rope_type == "proportional" else self.rotary_dim
        return scaled_frequencies(dim, self.base, self.scaling, seq_len)

    @property
    def attention_factor(self):
        """What transformers multiplies cos and sin by (1.0 except for yarn and longrope)."""
        return rope_attention_factor(self.scaling)


def _get(config, *keys):
    """The first of keys the config holds with a value that is not None, or None."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def _per_layer(config, parameters):
    """The layer types a 5.x rope_parameters dict is nested by (the config's layer_types), or ()."""
    if not isinstance(parameters, Mapping):
        return ()
    labels = set(config.get("layer_types") or ()) | {"full_attention", "sliding_attention"}
    nested = tuple(key for key in parameters if key in labels and isinstance(parameters[key], Mapping | None))
    return nested if nested and len(nested) == len(parameters) else ()


def rope_layer_types(config):
    """The layer types whose RoPE the config sets apart (Gemma 3: full and sliding attention), or () if one for all."""
    config = _as_config(config)
    parameters = config.get("rope_parameters")
    nested = _per_layer(config, parameters)
    if nested:
        return nested
    if config.get("rope_local_base_freq") is not None:  # Gemma 3 written for transformers 4.x
        return ("full_attention", "sliding_attention")
    return ()


def _as_config(config):
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    return config


def rope_from_config(config, layer_type=None):
    """The RoPE scheme (a RopeScheme) that a model's config.json describes, or None for a layer type without RoPE.

    config: the config as a dict. layer_type: for configs whose RoPE differs per layer type
    (rope_layer_types(config) is not empty), which one, e.g. "sliding_attention"; else None.
    A config with no RoPE key at all (BERT, GPT-2) raises ValueError.
    """
    config = _as_config(config)
    types = rope_layer_types(config)
    if types and layer_type is None:
        raise ValueError(f"this config sets RoPE per layer type ({', '.join(types)}): pass layer_type= one of them")
    if layer_type is not None and layer_type not in types:
        allowed = ", ".join(map(repr, types)) if types else "None (this config has one RoPE for every layer)"
        raise ValueError(f"layer_type must be one of {allowed}, got {layer_type!r}")
    if not any(key in config for key in _ROPE_KEYS):
        raise ValueError(
            f"config names no RoPE (none of the keys {', '.join(_ROPE_KEYS)}): its positions are not rotary"
        )

    parameters = config.get("rope_parameters")
    if _per_layer(config, parameters):
        parameters = parameters[layer_type]
        if parameters is None:  # a NoPE layer type
            return None
    elif layer_type == "sliding_attention":  # Gemma 3, 4.x: plain RoPE at the local base
        parameters = {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
    else:
        parameters = parameters if parameters is not None else config.get("rope_scaling")
    parameters = dict(parameters or {})

    base = parameters.get("rope_theta", _get(config, "rope_theta", "rotary_emb_base"))
    base = _validate.base(10000.0 if base is None else base)
    head_dim = _get(config, "qk_rope_head_dim", "head_dim")
    if head_dim is None:
        hidden, heads = _get(config, "hidden_size", "n_embd", "d_model"), _get(config, "num_attention_heads", "n_head")
        if hidden is None or heads is None:
            raise ValueError("config gives no head_dim and no hidden_size / num_attention_heads to derive it from")
        head_dim = _validate.positive_int("hidden_size", hidden) // _validate.positive_int("num_attention_heads", heads)
    head_dim = _validate.positive_int("head_dim", head_dim)
    max_positions = _get(config, "max_position_embeddings", "n_positions")
    mrope = parameters.get("mrope_section")
    scaling = _scaling(config, parameters, max_positions)
    proportional = scaling is not None and scaling["rope_type"] == "proportional"  # its fraction is in scaling
    return RopeScheme(
        head_dim=head_dim,
        rotary_dim=head_dim if proportional else _rotary_dim(config, parameters, head_dim),
        base=base,
        scaling=scaling,
        max_position_embeddings=max_positions,
        mrope_section=None if mrope is None else tuple(mrope),
    )


def _rotary_dim(config, parameters, head_dim):
    if config.get("rotary_dim") is not None:  # GPT-J, CodeGen: a number of features
        rotary = _validate.positive_int("rotary_dim", config["rotary_dim"])
    else:
        fraction = parameters.get("partial_rotary_factor", _get(config, "partial_rotary_factor", "rotary_pct"))
        fraction = 1.0 if fraction is None else _validate.finite_real("partial_rotary_factor", fraction)
        if not 0 < fraction <= 1:
            raise ValueError(f"partial_rotary_factor must be in (0, 1], got {fraction}")
        rotary = int(head_dim * fraction)  # transformers rounds down the same way
    if rotary % 2 or rotary > head_dim:
        raise ValueError(f"the rotated part must be an even number of features <= head_dim={head_dim}, got {rotary}")
    return rotary


def _scaling(config, parameters, max_positions):
    """The frequency part of a rope_parameters / rope_scaling dict, completed as transformers completes it."""
    kind = parameters.get("rope_type", parameters.get("type", "default"))
    if kind == "mrope":  # Qwen2-VL's 4.x configs: default frequencies, split by mrope_section
        kind = "default"
    scaling = {key: value for key, value in parameters.items() if key not in (*_NOT_FREQUENCY_KEYS, "type")}
    scaling["rope_type"] = kind
    if kind == "proportional" and "partial_rotary_factor" in parameters:
        scaling["partial_rotary_factor"] = parameters["partial_rotary_factor"]
    if kind in ("yarn", "longrope", "llama3"):
        # Phi-3 keeps the pre-training length outside the dict; transformers gives that one priority.
        original = config.get("original_max_position_embeddings") or scaling.get("original_max_position_embeddings")
        scaling["original_max_position_embeddings"] = original if original is not None else max_positions
        if scaling.get("factor") is None and kind in ("yarn", "longrope"):
            if max_positions is None or scaling["original_max_position_embeddings"] is None:
                raise ValueError(f"a {kind} config without 'factor' needs max_position_embeddings to derive it")
            scaling["factor"] = max_positions / scaling["original_max_position_embeddings"]
    if kind == "dynamic":
        scaling["max_position_embeddings"] = max_positions
    return check_scaling(scaling)
