"""Layers that differ: which layers of a model turn q and k, with which RoPE, over which window (notebook 11).

    layer_plan(config)          one LayerScheme per layer, read from a config.json (both layouts), by the
                                rules transformers' configuration classes apply (tests compare them)
    llama4_attention_scale      Llama 4's query scale in its layers without RoPE: 1 + a * log(1 + floor((p+1)/s))
    load_layer_schemes()        the cited per-layer configs of data/layer_schemes.json

The rules, by model_type (a config's own layer_types list wins where it has one):
    gemma3_text, cohere2  sliding_window_pattern P (default 6, 4): layer i is global if (i + 1) % P == 0,
                          else it attends within sliding_window; cohere2's global layers have no RoPE
    llama4_text, smollm3  no_rope_layers (1: RoPE) or, without it, a NoPE layer every no_rope_layer_interval;
                          Llama 4's RoPE layers attend within attention_chunk_size (chunks, not a sliding window)
"""

import dataclasses

import numpy as np

from . import _validate
from .data import load_json
from .rope_config import RopeScheme, rope_from_config, rope_layer_types

SCHEMES_FILE = "layer_schemes.json"
_PATTERN_DEFAULTS = {"gemma3_text": 6, "cohere2": 4}


@dataclasses.dataclass(frozen=True)
class LayerScheme:
    """One layer: its type (transformers' label), its RoPE (None: no positions, NoPE) and its window.

    window: how far back a query sees (a sliding window), or None for the whole context;
    chunk: Llama 4's chunked attention (a query sees its own chunk of this many tokens), or None.
    """

    layer_type: str
    rope: RopeScheme | None
    window: int | None = None
    chunk: int | None = None


def _types(config, layers):
    """transformers' layer_types for this config (the config's own list if it has one)."""
    if config.get("layer_types") is not None:
        return list(config["layer_types"])
    kind = config.get("model_type")
    if kind in _PATTERN_DEFAULTS:
        pattern = _validate.positive_int(
            "sliding_window_pattern", config.get("sliding_window_pattern", _PATTERN_DEFAULTS[kind])
        )
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)]
    if kind == "llama4_text":
        chunked = config.get("attention_chunk_size") is not None
        return [
            "chunked_attention" if rope and chunked else "full_attention" for rope in _no_rope_layers(config, layers)
        ]
    return ["full_attention"] * layers


def _no_rope_layers(config, layers):
    """1 where a layer turns q and k (transformers' no_rope_layers, named for what it switches off)."""
    listed = config.get("no_rope_layers")
    if listed:
        return [int(bool(x)) for x in listed]
    interval = _validate.positive_int("no_rope_layer_interval", config.get("no_rope_layer_interval", 4))
    return [int((i + 1) % interval != 0) for i in range(layers)]


def layer_plan(config):
    """A list of LayerScheme, one per layer of the model a config.json (a dict) describes."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    layers = _validate.positive_int("num_hidden_layers", config.get("num_hidden_layers"))
    types = _types(config, layers)
    if len(types) != layers:
        raise ValueError(f"layer_types has {len(types)} entries for num_hidden_layers={layers}")
    per_type = rope_layer_types(config)
    kind = config.get("model_type")
    has_rope = _no_rope_layers(config, layers) if kind in ("llama4_text", "smollm3") else [1] * layers
    if kind == "cohere2":
        has_rope = [int(t == "sliding_attention") for t in types]
    plan = []
    for layer_type, rope in zip(types, has_rope, strict=True):
        scheme = None
        if rope:
            scheme = rope_from_config(config, layer_type if layer_type in per_type else None)
        window = config.get("sliding_window") if layer_type == "sliding_attention" else None
        chunk = config.get("attention_chunk_size") if layer_type == "chunked_attention" else None
        plan.append(LayerScheme(layer_type, scheme, window, chunk))
    return plan


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
