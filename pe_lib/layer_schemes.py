"""Layers that differ: what each layer of a model attends to and how it turns q and k (notebooks 09, 11; the audit).

    layer_plan(config)          one LayerScheme per layer, read from a config.json (both layouts), by the
                                rules transformers' configuration and attention classes apply (tests compare them)
    layer_kind(layer)           a short label: "RoPE, window" / "RoPE, chunk" / "RoPE, full" / "NoPE" / "linear"...
    llama4_attention_scale      Llama 4's query scale in its layers without RoPE: 1 + a * log(1 + floor((p+1)/s))
    load_layer_schemes()        the cited per-layer configs of data/layer_schemes.json

Where the layer types come from (a config's own layer_types list wins where it has one):
    gemma2                alternating sliding / full, sliding first
    gemma3_text, cohere2, sliding_window_pattern P (defaults 6, 4, 4): layer i is global if (i + 1) % P == 0
    exaone4
    qwen2 and its family  use_sliding_window: layers from max_window_layers on slide, the first ones do not
    llama4_text           chunked attention (attention_chunk_size) in its RoPE layers, full attention in the others
    any other config      sliding_window set: every layer slides (Mistral's rule); else every layer is full
Which layers have no RoPE (NoPE): a rope_parameters entry that is None; no_rope_layers (Llama 4, SmolLM3, 0 = no
RoPE) or, without it, every no_rope_layer_interval-th layer; layer_rope_theta 0 (Granite SWA); the full-attention
layers of cohere2, dory and flint (RoPE only where a window is); layers that are not attention (linear attention,
Mamba, convolutions) have no positions of their own.
"""

import dataclasses

import numpy as np

from . import _validate
from .data import load_json
from .rope_config import RopeScheme, read_config, rope_from_config, rope_layer_types

SCHEMES_FILE = "layer_schemes.json"
_PATTERN_DEFAULTS = {"gemma3_text": 6, "cohere2": 4, "cohere2_moe": 4, "exaone4": 4, "exaone_moe": 4}
_ROPE_ONLY_WITH_WINDOW = ("cohere2", "cohere2_moe", "dory", "flint")
_QWEN_WINDOWS = ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen2_5_vl_text", "qwen2_vl_text", "qwen2_5_omni_text")
# Layer labels that are not softmax attention over positions (their order comes from a recurrence or a kernel).
NOT_ATTENTION = ("linear_attention", "mamba", "mamba2", "conv", "recurrent", "rwkv", "ssm", "deltanet",
                 "gated_deltanet",
                 "lightning_attention", "short_conv", "mlstm", "slstm", "hyena", "retention")  # fmt: skip
_LAYER_COUNT_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers")
ATTENTION_KINDS = ("full", "sliding", "chunked", "linear/recurrent")


@dataclasses.dataclass(frozen=True)
class LayerScheme:
    """One layer: its type (transformers' label), its RoPE (None: no positions, NoPE) and what it attends to.

    window: how far back a query sees (a sliding window), or None for the whole context; chunk: Llama 4's
    chunked attention (a query sees its own chunk of this many tokens), or None; attention: one of
    ATTENTION_KINDS; temperature: a position-dependent query scale, described (Llama 4's NoPE layers,
    Ministral 3's llama_4_scaling_beta), or None.
    """

    layer_type: str
    rope: RopeScheme | None
    window: int | None = None
    chunk: int | None = None
    attention: str = "full"
    temperature: str | None = None


def attention_kind(layer_type):
    """full / sliding / chunked / linear/recurrent for a transformers layer label."""
    label = str(layer_type).lower()
    if label in NOT_ATTENTION or any(
        word in label for word in ("linear", "mamba", "conv", "recurrent", "ssm", "delta")
    ):
        return "linear/recurrent"
    if "chunk" in label:
        return "chunked"
    if "sliding" in label or "local" in label or "swa" in label:
        return "sliding"
    return "full"


def _types(config, layers):
    """transformers' layer_types for this config (the config's own list if it has one)."""
    if config.get("layer_types") is not None:
        return list(config["layer_types"])
    kind, window = config.get("model_type"), config.get("sliding_window")
    if kind == "gemma2":
        return ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)]
    if kind in _PATTERN_DEFAULTS:
        pattern = config.get("sliding_window_pattern", _PATTERN_DEFAULTS[kind])
        pattern = _validate.positive_int("sliding_window_pattern", pattern)
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if kind == "llama4_text":
        chunked = config.get("attention_chunk_size") is not None
        return [
            "chunked_attention" if rope and chunked else "full_attention" for rope in _no_rope_layers(config, layers)
        ]
    if kind in _QWEN_WINDOWS:
        first = config.get("max_window_layers", layers)
        slides = bool(config.get("use_sliding_window")) and window is not None
        return ["sliding_attention" if slides and i >= first else "full_attention" for i in range(layers)]
    return ["sliding_attention" if window is not None else "full_attention"] * layers


def _no_rope_layers(config, layers):
    """1 where a layer turns q and k (transformers' no_rope_layers, named for what it switches off)."""
    listed = config.get("no_rope_layers")
    if listed:
        return [int(bool(x)) for x in listed]
    interval = _validate.positive_int("no_rope_layer_interval", config.get("no_rope_layer_interval", 4))
    return [int((i + 1) % interval != 0) for i in range(layers)]


def _rope_label(config, layer_type, per_type):
    """Which rope_parameters entry a layer of `layer_type` uses (None: the one for all layers)."""
    if not per_type:
        return None
    if layer_type in per_type:
        return layer_type
    if config.get("model_type") == "deepseek_v4" and {"main", "compress"} <= set(per_type):
        return "main" if layer_type == "sliding_attention" else "compress"  # transformers' DeepseekV4Attention
    raise ValueError(
        f"rope_parameters has entries for {', '.join(map(repr, per_type))} but none for the layer type {layer_type!r}"
    )


def _temperature(config, has_rope, attention):
    """A position-dependent query scale that transformers applies in this layer, described; or None."""
    parameters = config.get("rope_parameters") if isinstance(config.get("rope_parameters"), dict) else {}
    beta = parameters.get("llama_4_scaling_beta")
    if beta is not None and attention != "linear/recurrent":
        length = parameters.get("original_max_position_embeddings")
        return f"q x (1 + {beta:g} ln(1 + floor(p / {length})))"  # Ministral 3, Mistral 4: every layer
    if config.get("attn_temperature_tuning") and not has_rope and config.get("model_type") == "llama4_text":
        scale, floor = config.get("attn_scale", 0.1), config.get("floor_scale", 8192)
        return f"q x (1 + {scale:g} ln(1 + floor((p + 1) / {floor})))"
    return None


def layer_plan(config):
    """A list of LayerScheme, one per layer of the model a config.json (a dict) describes."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    config = dict(read_config(config))
    count = next((config[key] for key in _LAYER_COUNT_KEYS if config.get(key) is not None), None)
    layers = _validate.positive_int("num_hidden_layers", count)
    types = _types(config, layers)
    if len(types) != layers:
        raise ValueError(f"layer_types has {len(types)} entries for num_hidden_layers={layers}")
    per_type = rope_layer_types(config)
    kind = config.get("model_type")
    has_rope = [1] * layers
    if config.get("no_rope_layers") or kind in ("llama4_text", "smollm3"):
        has_rope = _no_rope_layers(config, layers)
        if len(has_rope) != layers:
            raise ValueError(f"no_rope_layers has {len(has_rope)} entries for num_hidden_layers={layers}")
    if kind in _ROPE_ONLY_WITH_WINDOW:
        has_rope = [int(attention_kind(t) == "sliding") for t in types]
    thetas = config.get("layer_rope_theta")
    if thetas is not None:
        if len(thetas) != layers:
            raise ValueError(f"layer_rope_theta has {len(thetas)} entries for num_hidden_layers={layers}")
        has_rope = [int(bool(theta)) for theta in thetas]
    plan = []
    for index, (layer_type, rope) in enumerate(zip(types, has_rope, strict=True)):
        attention = attention_kind(layer_type)
        scheme = None
        if rope and attention != "linear/recurrent":
            source = config if thetas is None else _with_base(config, thetas[index])
            scheme = rope_from_config(source, _rope_label(source, layer_type, per_type))
        window = config.get("sliding_window") if attention == "sliding" else None
        chunk = config.get("attention_chunk_size") if attention == "chunked" else None
        temperature = _temperature(config, scheme is not None, attention)
        plan.append(LayerScheme(layer_type, scheme, window, chunk, attention, temperature))
    return plan


def _with_base(config, theta):
    """Granite SWA's per-layer base: the same rope dict at this layer's rope_theta."""
    parameters = dict(config.get("rope_parameters") or {})
    return {**config, "rope_parameters": {**parameters, "rope_theta": theta}, "rope_theta": theta}


def layer_kind(layer):
    """'RoPE, window' / 'RoPE, chunk' / 'RoPE, full' / 'NoPE, window' / 'NoPE' / 'linear/recurrent' of a layer."""
    if layer.attention == "linear/recurrent":
        return "linear/recurrent"
    where = {"sliding": ", window", "chunked": ", chunk"}.get(layer.attention, "")
    return ("RoPE" + (where or ", full")) if layer.rope is not None else "NoPE" + where


def llama4_attention_scale(positions, *, floor_scale=8192, attn_scale=0.1):
    """Llama 4's query scale at each position in its NoPE layers (transformers' Llama4TextAttention).

    1 + attn_scale * log(1 + floor((p + 1) / floor_scale)): exactly 1 for the first floor_scale - 1
    positions, then growing like attn_scale * log(p / floor_scale): the logits grow with log n, so the
    softmax over n keys does not flatten out as n grows (Nakanishi 2025, Scalable-Softmax).
    """
    positions = _validate.real_array("positions", np.atleast_1d(positions), 1)
    if np.any(positions < 0):
        raise ValueError(f"positions must be >= 0, got {positions.min()}")
    floor_scale = _validate.finite_real("floor_scale", floor_scale)
    if floor_scale <= 0:
        raise ValueError(f"floor_scale must be positive, got {floor_scale}")
    attn_scale = _validate.finite_real("attn_scale", attn_scale)
    return 1.0 + attn_scale * np.log1p(np.floor((positions + 1.0) / floor_scale))


def load_layer_schemes():
    """The models of data/layer_schemes.json: dicts with name, hub, layout, config (a config.json excerpt), sources."""
    return load_json(SCHEMES_FILE)["models"]
