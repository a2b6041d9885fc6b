"""Read a model's RoPE from its config.json, in every layout transformers has used, as transformers reads it.

    up to 4.x   "rope_theta": 1e4, "rope_scaling": {"type" or "rope_type": ..., "factor": ...}, legacy keys
                (rotary_emb_base, rotary_pct, rotary_dim, rope_local_base_freq for Gemma 3's sliding layers)
    5.x         "rope_parameters": {"rope_type": ..., "rope_theta": ..., ...}, or one such dict per label:
                a layer type ({"full_attention": {...}, "sliding_attention": {...}}, None for a layer type
                without RoPE) or a model's own labels (DeepSeek-V4's "main" / "compress")

rope_parameters(config) returns the normalised dicts per label, refusing what no reader can trust (both layouts
with different values, a rope_type that does not exist, a fraction outside (0, 1], labels that are not the
config's layer types) with a message naming the key. rope_from_config(config, layer_type) gives one RopeScheme,
whose frequencies equal what transformers' rotary module holds for that layer type (tests/test_audit_agreement.py
checks every config class of transformers 5.24 that has RoPE). The head size is `head_dim` (Gemma's 256 is not
hidden_size / heads), a per-layer override (Gemma 4's global layers: `global_head_dim`, 512), or
`qk_rope_head_dim` for the decoupled RoPE sub-head of multi-head latent attention (DeepSeek-V2/V3).

What transformers does differently per model type (which features pair up, whether the default RoPE honours
partial_rotary_factor, the config class's default values) is data probed from transformers itself:
pe_lib/data/rope_rules.json, written by `python -m pe_lib.atlas` and compared by a test.
"""

import dataclasses
from collections.abc import Mapping

import numpy as np

from . import _validate
from .data import load_json
from .rope_scaling import ROPE_TYPES, allowed_keys, check_scaling, rope_attention_factor, scaled_frequencies

RULES_FILE = "rope_rules.json"
DEFAULT_BASE = 10000.0  # transformers' RotaryEmbeddingConfigMixin.default_theta, for a model type it does not know
# Keys of a rope dict that are not frequency scaling (kept apart from RopeScheme.scaling).
NOT_SCALING = ("rope_theta", "partial_rotary_factor", "mrope_section", "mrope_interleaved", "type",
               "llama_4_scaling_beta", "max_position_embeddings")  # fmt: skip
FLAT_KEYS = ("rope_type", "factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
             "short_factor", "long_factor", "low_freq_factor", "high_freq_factor", "mscale", "mscale_all_dim",
             "truncate", *NOT_SCALING)  # fmt: skip
# transformers' RoPE kinds beyond the frequency types: "axial" is a vision encoder's 2-D RoPE.
KNOWN_TYPES = (*ROPE_TYPES, "axial", "mrope")
LEGACY_BASE_KEYS = ("rope_theta", "rotary_emb_base")
# Keys that say a config uses RoPE at all.
ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "rotary_dim", "rotary_pct", "rotary_emb_base",
             "partial_rotary_factor", "qk_rope_head_dim")  # fmt: skip
_RULES = None


def model_rules(model_type):
    """What transformers 5.24 does for `model_type` (pe_lib/data/rope_rules.json), or {} for a type it lacks.

    Keys: pairing ("half", "interleaved" or "rope_interleave": interleaved if the config's rope_interleave is
    true), honours_partial (whether its default RoPE turns only partial_rotary_factor of the head), labels (a
    model's own rope labels and the layer types that use them), defaults (its config class's values of the
    keys about positions, which transformers uses where a config.json leaves them out).
    """
    global _RULES
    if _RULES is None:
        _RULES = load_json(RULES_FILE)
    return _RULES["models"].get(model_type, {})


def rules_version():
    """The transformers version the rules were probed from."""
    model_rules(None)
    return _RULES["transformers_version"]


def use_rules(rules):
    """Replace the rules in memory with `rules` (the atlas script does, before it writes them)."""
    global _RULES
    _RULES = rules


@dataclasses.dataclass(frozen=True)
class RopeScheme:
    """One layer type's RoPE as a config describes it.

    head_dim: the attention head size (for MLA, the RoPE sub-head); rotary_dim: how many of its features
    turn, from the first one (proportional: the whole head, whose later pairs have frequency 0); base:
    rope_theta; scaling: the checked rope-scaling dict (pe_lib.rope_frequencies' form) or None;
    max_position_embeddings: the config's; mrope_section: Qwen2-VL's split of the pairs between (time,
    height, width), or None; label: the rope_parameters key it came from (None: one RoPE for all layers);
    pairing: "half" (pairs (i, i + r/2), rotate_half) or "interleaved" (pairs (2i, 2i + 1)), or None if
    transformers' code could not be probed; mrope_interleaved: Qwen3-VL's interleaved split of the axes.
    """

    head_dim: int
    rotary_dim: int
    base: float
    scaling: dict | None = None
    max_position_embeddings: int | None = None
    mrope_section: tuple | None = None
    label: str | None = None
    pairing: str | None = "half"
    mrope_interleaved: bool = False
    frequency_order: str | None = None

    @property
    def rope_type(self):
        return "default" if self.scaling is None else self.scaling["rope_type"]

    @property
    def proportional(self):
        return self.rope_type == "proportional"

    @property
    def turning_pairs(self):
        """How many pairs turn (proportional: rotated pairs only; an odd rotary_dim: transformers' ceil)."""
        if self.proportional:
            return int(self.scaling["partial_rotary_factor"] * self.head_dim // 2)
        return (self.rotary_dim + 1) // 2

    @property
    def fraction(self):
        """The share of the head's features that turn."""
        return 2 * self.turning_pairs / self.head_dim

    def frequencies(self, seq_len=None):
        """inv_freq as transformers holds it, float64: ceil(rotary_dim / 2) frequencies base**(-2i/rotary_dim)
        (proportional: head_dim // 2, exponents 2i/head_dim, the pairs past the fraction 0)."""
        if seq_len is not None:
            seq_len = _validate.positive_int("seq_len", seq_len)
        dim = self.head_dim if self.proportional else self.rotary_dim
        theta = scaled_frequencies(dim, self.base, self.scaling, seq_len)
        if self.frequency_order == "ernie_3d":  # ERNIE 4.5 VL: the height/width pairs de-interleaved, time last
            time = (self.mrope_section or (22, 22, 20))[2]
            theta = np.concatenate([theta[:-time][0::2], theta[:-time][1::2], theta[-time:]])
        return theta

    @property
    def attention_factor(self):
        """What transformers multiplies cos and sin by (1.0 except for yarn and longrope)."""
        return rope_attention_factor(self.scaling)


def read_config(config):
    """The config as a dict, with the keys its transformers config class aliases (attribute_map) read through."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    rules = model_rules(config.get("model_type"))
    aliases = rules.get("attribute_map", {})
    if any(config.get(own) is not None and config.get(name) is None for name, own in aliases.items()):
        config = {**config, **{name: config[own] for name, own in aliases.items() if config.get(own) is not None}}
    defaults = rules.get("defaults", {}).get("rope_parameters")
    if defaults and not any(config.get(key) is not None for key in ROPE_KEYS):  # the class's whole RoPE dict
        config = {**config, "rope_parameters": defaults}
    return config


def _get(config, *keys):
    """The first of keys the config holds with a value that is not None, or None."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def _nested_labels(config, parameters):
    """The labels a 5.x rope_parameters dict is nested by, or () for a flat one; ValueError for labels no layer has."""
    if not isinstance(parameters, Mapping) or not parameters:
        return ()
    if not all(isinstance(value, Mapping) or value is None for value in parameters.values()):
        return ()
    labels = tuple(parameters)
    if any(label in FLAT_KEYS for label in labels):
        return ()  # a flat dict whose values happen to be None
    layer_types = config.get("layer_types")
    known = set(layer_types or ()) | set(model_rules(config.get("model_type")).get("labels", {}))
    if layer_types and not known & set(labels):
        raise ValueError(
            f"rope_parameters is nested by {', '.join(map(repr, labels))}, but none of them is one of the config's "
            f"layer_types ({', '.join(map(repr, sorted(set(layer_types))))}): no layer would get a RoPE"
        )
    return tuple(label for label in labels if not layer_types or label in known)


def unused_labels(config):
    """rope_parameters labels that no layer type of the config uses (transformers ignores them)."""
    parameters = config.get("rope_parameters")
    if not isinstance(parameters, Mapping):
        return ()
    nested = _nested_labels(config, parameters)
    return tuple(label for label in parameters if nested and label not in nested)


def rope_layer_types(config):
    """The labels whose RoPE the config sets apart (Gemma 3: full and sliding attention; DeepSeek-V4: main and
    compress), or () if one RoPE serves every layer."""
    if model_rules(read_config(config).get("model_type")).get("vision_2d"):
        return ()  # an image RoPE: rope_from_config says so
    return tuple(label for label in rope_parameters(config) if label is not None)


def _same(a, b):
    try:
        return a == b or float(a) == float(b)
    except (TypeError, ValueError):
        return False


def _check_layouts(config):
    """Refuse a config whose 4.x and 5.x keys say different things (each reader would run another model)."""
    parameters, legacy = config.get("rope_parameters"), config.get("rope_scaling")
    if isinstance(parameters, Mapping) and not _nested_labels(config, parameters):
        if isinstance(legacy, Mapping):
            for key, value in legacy.items():
                name = "rope_type" if key == "type" else key
                if name in parameters and not _same(parameters[name], value):
                    raise ValueError(
                        f"conflicting 4.x and 5.x keys: rope_scaling[{key!r}] = {value!r} but "
                        f"rope_parameters[{name!r}] = {parameters[name]!r} (transformers 4.x reads the first, 5.x the "
                        f"second); keep one of them"
                    )
        for key in ("rope_theta", "partial_rotary_factor"):
            if key in parameters and config.get(key) is not None and not _same(parameters[key], config[key]):
                raise ValueError(
                    f"conflicting 4.x and 5.x keys: {key} = {config[key]!r} but rope_parameters[{key!r}] = "
                    f"{parameters[key]!r} (a 4.x reader uses the first, 5.x the second); keep one of them"
                )


def rope_parameters(config):
    """{label: rope dict or None} as transformers 5.24 completes them (label None: one dict for every layer).

    Fills what the config leaves out from transformers' config class for its model_type (rope_theta,
    partial_rotary_factor, the whole dict), else 10,000 and the whole head; reads the 4.x keys; checks each
    dict's rope_type and partial_rotary_factor.
    """
    config = read_config(config)
    _check_layouts(config)
    defaults = model_rules(config.get("model_type")).get("defaults", {})
    parameters = config.get("rope_parameters")
    if parameters is None:
        parameters = config.get("rope_scaling")
    if parameters is None and not any(config.get(key) is not None for key in ROPE_KEYS):
        parameters = defaults.get("rope_parameters")
    parameters = dict(parameters or {})
    if config.get("model_type") == "deepseek_v4" and not _nested_labels(config, parameters):
        parameters = _deepseek_v4(config, parameters, defaults)
    nested = _nested_labels(config, parameters)
    base = _get(config, *LEGACY_BASE_KEYS)
    fraction = _get(config, "partial_rotary_factor", "rotary_pct")
    if nested:
        result = {label: None if parameters[label] is None else dict(parameters[label]) for label in nested}
    elif config.get("rope_local_base_freq") is not None and config.get("rope_parameters") is None:
        local = {"rope_type": "default", "rope_theta": config["rope_local_base_freq"]}
        result = {"full_attention": parameters, "sliding_attention": local}
    else:
        result = {None: parameters}
    default_flat = defaults.get("rope_parameters") or {}
    for label, values in result.items():
        if values is None:
            continue
        class_values = default_flat.get(label) if label is not None and label in default_flat else default_flat
        class_values = class_values if isinstance(class_values, Mapping) else {}
        if "type" in values and "rope_type" not in values:
            values["rope_type"] = values["type"]
        values.setdefault("rope_type", "default")
        for key, value in (("rope_theta", base), ("partial_rotary_factor", fraction)):
            if value is not None:
                values.setdefault(key, value)
            elif key in class_values:
                values.setdefault(key, class_values[key])
        values.setdefault("rope_theta", DEFAULT_BASE)
        _check_rope_dict(label, values)
    return result


def _deepseek_v4(config, flat, defaults):
    """DeepSeek-V4's legacy keys nested as its config class nests them: "main" (sliding layers: plain RoPE at
    rope_theta) and "compress" (compressed layers: the config's scaling at compress_rope_theta; YaRN there with
    attention_factor 1.0, as the reference code)."""
    nested = defaults.get("rope_parameters") or {}
    head = config.get("head_dim") or defaults.get("head_dim") or 512
    fraction = config.get("partial_rotary_factor")
    if fraction is None and config.get("qk_rope_head_dim") is not None:
        fraction = _validate.positive_int("qk_rope_head_dim", config["qk_rope_head_dim"]) / head
    if fraction is None:
        fraction = (nested.get("main") or {}).get("partial_rotary_factor", 1.0)
    flat = {("rope_type" if k == "type" else k): v for k, v in flat.items() if k not in ("main", "compress")}
    main_base = config.get("rope_theta", (nested.get("main") or {}).get("rope_theta", DEFAULT_BASE))
    compress_base = config.get("compress_rope_theta", (nested.get("compress") or {}).get("rope_theta", DEFAULT_BASE))
    main = {"rope_type": "default", "rope_theta": main_base, "partial_rotary_factor": fraction}
    compress = {**flat, "rope_theta": compress_base, "partial_rotary_factor": fraction}
    compress.setdefault("rope_type", "default")
    if compress["rope_type"] == "yarn":
        compress.setdefault("attention_factor", 1.0)
    return {"main": main, "compress": compress}


def _check_rope_dict(label, values):
    where = "rope_parameters" if label is None else f"rope_parameters[{label!r}]"
    kind = values["rope_type"]
    if kind not in KNOWN_TYPES:
        raise ValueError(
            f"{where}['rope_type'] must be one of {', '.join(map(repr, KNOWN_TYPES))}, got {kind!r} "
            f"(transformers has no RoPE of that name)"
        )
    if values.get("partial_rotary_factor") is not None:
        fraction = _validate.finite_real(f"{where}['partial_rotary_factor']", values["partial_rotary_factor"])
        if not 0 < fraction <= 1:
            raise ValueError(f"{where}['partial_rotary_factor'] must be in (0, 1], got {fraction}")


def unknown_keys(config):
    """{where: [keys]} of rope dicts that transformers' RoPE for their rope_type does not read (it ignores them)."""
    found = {}
    for label, values in rope_parameters(config).items():
        if values is None:
            continue
        kind = "default" if values["rope_type"] in ("mrope", "axial") else values["rope_type"]
        known = set(allowed_keys(kind)) | set(NOT_SCALING)
        extra = sorted(key for key in values if key not in known)
        if extra:
            found["rope_parameters" if label is None else f"rope_parameters[{label!r}]"] = extra
    return found


def head_dim_for(config):
    """The head size transformers' RoPE uses: its config class's rule (DeepSeek-V3: qk_rope_head_dim, Mistral 4:
    qk_nope_head_dim + qk_rope_head_dim), else head_dim (the class default where the config has none), else
    qk_rope_head_dim for a model type transformers lacks, else hidden_size // num_attention_heads."""
    config = read_config(config)
    rules = model_rules(config.get("model_type"))
    defaults = rules.get("defaults", {})

    def value(key):
        return config.get(key) if config.get(key) is not None else defaults.get(key)

    rule = rules.get("head_dim_rule")
    if rule and "//" not in rule:
        parts = [value(key) for key in rule.split("+")]
        if all(part is not None for part in parts):
            return _validate.positive_int(
                rule, sum(_validate.positive_int(k, p) for k, p in zip(rule.split("+"), parts, strict=True))
            )
    if not rule:
        found = value("head_dim") if not rules or config.get("head_dim") is not None else defaults.get("head_dim")
        found = found if found is not None else (None if rules else config.get("qk_rope_head_dim"))
        if found is not None:
            return _validate.positive_int("head_dim", found)
    hidden = _get(config, "hidden_size", "n_embd", "d_model")
    hidden = hidden if hidden is not None else defaults.get("hidden_size")
    heads = _get(config, "num_attention_heads", "n_head", "n_heads")
    heads = heads if heads is not None else defaults.get("num_attention_heads")
    if hidden is None or heads is None:
        raise ValueError("config gives no head_dim and no hidden_size / num_attention_heads to derive it from")
    return _validate.positive_int("hidden_size", hidden) // _validate.positive_int("num_attention_heads", heads)


def rope_from_config(config, layer_type=None):
    """The RoPE scheme (a RopeScheme) that a model's config.json describes, or None for a label without RoPE.

    config: the config as a dict. layer_type: for configs whose RoPE differs per label (rope_layer_types(config)
    is not empty), which one, e.g. "sliding_attention"; else None. A config with no RoPE key at all (BERT,
    GPT-2), and no RoPE in transformers' defaults for its model_type, raises ValueError.
    """
    config = read_config(config)
    types = rope_layer_types(config)
    if types and layer_type is None:
        raise ValueError(f"this config sets RoPE per layer type ({', '.join(types)}): pass layer_type= one of them")
    if layer_type is not None and layer_type not in types:
        allowed = ", ".join(map(repr, types)) if types else "None (this config has one RoPE for every layer)"
        raise ValueError(f"layer_type must be one of {allowed}, got {layer_type!r}")
    rules = model_rules(config.get("model_type"))
    if not any(key in config for key in ROPE_KEYS) and not rules.get("defaults", {}).get("rope_parameters"):
        raise ValueError(
            f"config names no RoPE (none of the keys {', '.join(ROPE_KEYS)}): its positions are not rotary"
        )
    if rules.get("vision_2d"):
        parameters = {"rope_type": "axial"}
    else:
        parameters = rope_parameters(config)[layer_type]
    if parameters is None:  # a layer type without RoPE (NoPE)
        return None
    if parameters["rope_type"] == "axial":
        raise ValueError(
            f"{config.get('model_type')!r} turns patch coordinates with a 2-D (axial) RoPE, a vision encoder's: this "
            f"reader audits RoPE over token positions (pe_lib.multidim has axial RoPE)"
        )
    config = _with_layer_overrides(config, layer_type)
    head_dim = head_dim_for(config)
    mrope = parameters.get("mrope_section") or rules.get("mrope_section")  # Qwen2-VL's code supplies a default
    scaling = _scaling(config, parameters)
    proportional = scaling is not None and scaling["rope_type"] == "proportional"
    return RopeScheme(
        head_dim=head_dim,
        rotary_dim=head_dim if proportional else _rotary_dim(config, parameters, head_dim, rules),
        base=_validate.base(parameters["rope_theta"]),
        scaling=scaling,
        max_position_embeddings=_get(config, "max_position_embeddings", "n_positions"),
        mrope_section=None if mrope is None else tuple(mrope),
        label=layer_type,
        pairing=pairing_for(config),
        mrope_interleaved=bool(parameters.get("mrope_interleaved", False)),
        frequency_order=rules.get("frequency_order"),
    )


def _with_layer_overrides(config, layer_type):
    """The config with the per_layer_config overrides of the first layer of `layer_type` (Gemma 4's global layers)."""
    overrides, layer_types = config.get("per_layer_config"), config.get("layer_types")
    if layer_type is None:
        return config
    if not overrides and config.get("global_head_dim") is not None and layer_type == "full_attention":
        return {**config, "head_dim": config["global_head_dim"]}  # Gemma 4's config.json, as its config class reads it
    if not overrides or not layer_types or layer_type not in layer_types:
        return config
    index = list(layer_types).index(layer_type)
    layer = {int(key): value for key, value in overrides.items()}.get(index, {})
    return {**config, **layer}


def pairing_for(config):
    """Which features turn together: the model type's rule in transformers 5.24, "half" for a type it lacks."""
    rule = model_rules(config.get("model_type")).get("pairing", "half")
    if rule == "rope_interleave":
        return "interleaved" if config.get("rope_interleave", True) else "half"
    if config.get("model_type") in ("gptj", "codegen"):
        return "interleaved"
    return rule


def _rotary_dim(config, parameters, head_dim, rules):
    """Features that turn: int(head_dim * fraction) where the model's default RoPE honours it (transformers' rule)."""
    if config.get("rotary_dim") is not None and config.get("model_type") in ("gptj", "codegen"):
        rotary = _validate.positive_int("rotary_dim", config["rotary_dim"])  # GPT-J, CodeGen: a number of features
        if rotary > head_dim:
            raise ValueError(f"rotary_dim must be <= head_dim={head_dim}, got {rotary}")
        return rotary
    fraction = parameters.get("partial_rotary_factor")
    legacy = config.get("rotary_dim")
    if fraction is None and legacy is not None and reads_rotary_dim(config.get("model_type")):
        fraction = _validate.positive_int("rotary_dim", legacy) / head_dim  # MiniMax-M2's key, as its config class
        if fraction > 1:
            raise ValueError(f"rotary_dim must be <= head_dim={head_dim}, got {legacy}")
    honoured = rules.get("honours_partial", True) or parameters["rope_type"] != "default"
    if fraction is None or not honoured:
        fraction = 1.0
    rotary = int(head_dim * float(fraction))  # transformers rounds down the same way (an odd size is kept)
    if rotary < 1:
        raise ValueError(f"partial_rotary_factor={fraction} turns no feature of a head of {head_dim}")
    return rotary


def reads_rotary_dim(model_type):
    """Whether a config's `rotary_dim` (a number of features) sets the rotated part: MiniMax-M2's config class reads
    it (transformers #48486), as does any reader of a type transformers lacks; GPT-J and CodeGen read it directly."""
    return model_type == "minimax_m2" or not model_rules(model_type)


def _scaling(config, parameters):
    """The frequency part of a rope dict, completed as transformers completes it, checked; None for plain RoPE."""
    kind = parameters["rope_type"]
    if kind in ("mrope", "axial"):  # Qwen2-VL's 4.x configs; a vision encoder's axial RoPE: plain frequencies
        kind = "default"
    allowed = allowed_keys(kind)
    scaling = {key: value for key, value in parameters.items() if key in allowed}  # unknown_keys() lists the rest
    scaling["rope_type"] = kind
    if kind == "proportional" and "partial_rotary_factor" in parameters:
        scaling["partial_rotary_factor"] = parameters["partial_rotary_factor"]
    max_positions = _get(config, "max_position_embeddings", "n_positions")
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
