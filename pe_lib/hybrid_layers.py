"""What every layer of a 2025-26 model does with positions, read from its config.json (notebook 12).

Notebook 11's pe_lib.layer_schemes reads configs whose layers all attend (RoPE or NoPE, a window or
not). The models of notebook 12 add what that reader does not cover: layers that do not attend at all
(Gated DeltaNet, KDA), heads that turn only part of their features (NeoX-style or Gemma 4's
proportional pairing), MLA's decoupled rope sub-head, two RoPEs chosen by layer type (DeepSeek-V4),
and a query scale that grows with position. `layer_positions(config)` returns one LayerPositions
per layer, by the rules of transformers 5.24's configuration and attention classes for these
model types (tests/test_hybrid_layers.py compares each with transformers, field by field):

    gemma4_text                  sliding: full RoPE on head_dim; full: proportional RoPE on global_head_dim
    qwen3_next, qwen3_5(_moe)_text   every full_attention_interval-th layer attends (NeoX partial RoPE), the
                                 rest are Gated DeltaNet
    glm4_moe, minimax_m2         NeoX partial RoPE in every layer (partial_rotary_factor, or rotary_dim)
    deepseek_v32, mistral4       MLA: RoPE on the qk_rope_head_dim features after the nope ones, interleaved
                                 (mistral4: rope_interleave); mistral4 and ministral3 scale the query
    deepseek_v4                  RoPE on the last qk_rope_head_dim of head_dim; compressed layers at
                                 compress_rope_theta with YaRN, sliding ones at rope_theta
    kimi_linear, glm5_next_text  KDA layers and MLA layers without any rotation (NoPE)
    exaone4                      sliding layers RoPE within the window, global layers NoPE
    ministral3, qwen3_omni_moe_text  every layer full RoPE (Omni: time-aligned M-RoPE ids)

This module is notebook 12's own reader for those types; pe_lib.audit is the project's general one.
"""

import dataclasses

import numpy as np

from . import _validate
from .rope_config import rope_from_config
from .rope_scaling import check_scaling, rope_frequencies

MIXERS = ("attention", "linear")
CONVENTIONS = ("full", "neox", "proportional", "decoupled")
SCHEMES_FILE = "layer_schemes_2026.json"
# Keys of a rope-parameters dict that are not about frequencies (pe_lib.rope_config does not take them).
_NOT_FREQUENCY = ("llama_4_scaling_beta", "interleaved", "max_position_embeddings")


@dataclasses.dataclass(frozen=True)
class LayerPositions:
    """One layer: its mixer, and for an attention layer what its q . k sees of positions.

    head_dim: the width of q . k; rotated: how many of those features RoPE turns (0: NoPE);
    convention: "full", "neox" (the first `rotated` features), "proportional" (the whole head paired, only the
    fastest rotated / 2 pairs turning) or "decoupled" (MLA's rope sub-head after the nope features);
    layout: "half" or "interleaved" pairing; base, scaling: the frequencies (a rope-scaling dict or None);
    window: a sliding window, or None; query_scale: a position-dependent query scale in words, or None.
    """

    mixer: str
    layer_type: str
    head_dim: int | None = None
    rotated: int = 0
    convention: str | None = None
    layout: str | None = None
    base: float | None = None
    scaling: dict | None = None
    window: int | None = None
    query_scale: str | None = None

    @property
    def positions(self):
        """'none' (a linear layer: no scores), 'NoPE' (scores without positions) or 'RoPE'."""
        if self.mixer == "linear":
            return "none"
        return "RoPE" if self.rotated else "NoPE"

    def frequencies(self):
        """transformers' inv_freq for this layer (float64): rotated // 2 pairs, or head_dim // 2 for proportional."""
        if not self.rotated:
            return np.zeros(0)
        dim = self.head_dim if self.convention == "proportional" else self.rotated
        return rope_frequencies(dim, base=self.base, scaling=self.scaling)


def _frequency_part(config):
    """The config with the rope keys pe_lib.rope_config does not read moved out of its rope dict."""
    config = dict(config)
    for key in ("rope_parameters", "rope_scaling"):
        block = config.get(key)
        if isinstance(block, dict) and not any(isinstance(v, dict) for v in block.values()):
            config[key] = {k: v for k, v in block.items() if k not in _NOT_FREQUENCY}
    return config


def _rope(config, layer_type=None):
    scheme = rope_from_config(_frequency_part(config), layer_type)
    return scheme.base, scheme.scaling


def _beta_scale(config):
    block = config.get("rope_parameters") or config.get("rope_scaling") or {}
    beta = block.get("llama_4_scaling_beta")
    if beta is None:
        return None
    return f"1 + {beta:g} ln(1 + floor(p / {block['original_max_position_embeddings']:,}))"


def _layers(config):
    return _validate.positive_int("num_hidden_layers", config.get("num_hidden_layers"))


def _head_dim(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def _gemma4(config):
    n = _layers(config)
    types = config.get("layer_types") or ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(n)]
    types = [*types[:-1], "full_attention"]  # transformers forces the last layer to full attention
    plan = []
    for kind in types:
        base, scaling = _rope(config, kind)
        if kind == "full_attention":
            head = config.get("global_head_dim", 512)
            fraction = (scaling or {}).get("partial_rotary_factor", 1.0)
            rotated = 2 * int(fraction * head // 2)
            plan.append(LayerPositions("attention", kind, head, rotated, "proportional", "half", base, scaling))
        else:
            head = _head_dim(config)
            plan.append(LayerPositions("attention", kind, head, head, "full", "half", base, scaling,
                                       window=config.get("sliding_window", 512)))  # fmt: skip
    return plan


def _qwen_hybrid(config):
    n = _layers(config)
    interval = config.get("full_attention_interval", 4)
    types = config.get("layer_types") or [
        "linear_attention" if (i + 1) % interval else "full_attention" for i in range(n)
    ]
    base, scaling = _rope(config)
    head = _head_dim(config)
    block = config.get("rope_parameters") or {}
    fraction = block.get("partial_rotary_factor", config.get("partial_rotary_factor", 0.25))
    rotated = int(head * fraction)
    return [
        LayerPositions("attention", t, head, rotated, "neox", "half", base, scaling)
        if t == "full_attention"
        else LayerPositions("linear", t)
        for t in types
    ]


def _neox_everywhere(config):
    head = _head_dim(config)
    if config.get("rotary_dim") is not None:  # MiniMax-M2's legacy key
        rotated = _validate.positive_int("rotary_dim", config["rotary_dim"])
    else:
        block = config.get("rope_parameters") or {}
        fraction = block.get("partial_rotary_factor", config.get("partial_rotary_factor", 1.0))
        rotated = int(head * fraction)
    base, scaling = _rope({k: v for k, v in config.items() if k not in ("rotary_dim", "partial_rotary_factor")})
    convention = "full" if rotated == head else "neox"
    return [LayerPositions("attention", "full_attention", head, rotated, convention, "half", base, scaling,
                           query_scale=_beta_scale(config)) for _ in range(_layers(config))]  # fmt: skip


def _mla(config, *, layout):
    head = config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
    base, scaling = _rope(config)
    layer_type = "indexed_attention" if config["model_type"] == "deepseek_v32" else "full_attention"
    return [LayerPositions("attention", layer_type, head, config["qk_rope_head_dim"], "decoupled", layout, base,
                           scaling, query_scale=_beta_scale(config)) for _ in range(_layers(config))]  # fmt: skip


def _deepseek_v4(config):
    n = _layers(config)
    names = {0: "sliding_attention", 4: "compressed_sparse_attention", 128: "heavily_compressed_attention"}
    types = config.get("layer_types") or [names[r] for r in config["compress_ratios"][:n]]
    head, rotated = config.get("head_dim", 512), config.get("qk_rope_head_dim", 64)
    scaling_keys = ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim")
    yarn = {k: v for k, v in (config.get("rope_scaling") or {}).items() if k in scaling_keys}
    yarn = check_scaling({"rope_type": "yarn", "attention_factor": 1.0, **yarn}) if yarn else None
    plan = []
    for kind in types:
        compressed = kind != "sliding_attention"
        base = float(config.get("compress_rope_theta", 160000.0) if compressed else config.get("rope_theta", 10000.0))
        plan.append(LayerPositions("attention", kind, head, rotated, "decoupled", "interleaved", base,
                                   yarn if compressed else None, window=config.get("sliding_window", 128)))  # fmt: skip
    return plan


def _nope_hybrid(config):
    """Kimi Linear (linear_attn_config, layers counted from 1) and GLM-5.3-Flash: KDA + MLA without rotation."""
    n = _layers(config)
    if config["model_type"] == "kimi_linear":
        full = set(
            config.get("linear_attn_config", {}).get("full_attn_layers")
            or [i + 1 for i in range(n) if i and i % 4 == 0]
        )
        types = ["full_attention" if i + 1 in full else "linear_attention" for i in range(n)]
    else:
        types = config.get("layer_types") or [
            "linear_attention" if i % 4 != 3 else "indexed_attention" for i in range(n)
        ]
    head = config["qk_nope_head_dim"] + config.get("qk_rope_head_dim", 0)
    return [
        LayerPositions("linear", t) if t == "linear_attention" else LayerPositions("attention", t, head, 0)
        for t in types
    ]


def _exaone4(config):
    n = _layers(config)
    window = config.get("sliding_window")
    types = config.get("layer_types")
    if types is None:
        pattern = config.get("sliding_window_pattern", 4)
        if not isinstance(pattern, int):
            raise ValueError(
                f"sliding_window_pattern={pattern!r} without layer_types: transformers 5.24's Exaone4Config "
                "computes (i + 1) % sliding_window_pattern and fails on a string; give layer_types"
            )
        types = ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    base, scaling = _rope(config)
    head = _head_dim(config)
    plan = []
    for kind in types:
        turns = window is None or kind == "sliding_attention"  # Exaone4Attention's rule
        plan.append(LayerPositions("attention", kind, head, head if turns else 0, "full" if turns else None,
                                   "half" if turns else None, base if turns else None, scaling if turns else None,
                                   window=window if kind == "sliding_attention" else None))  # fmt: skip
    return plan


READERS = {
    "gemma4_text": _gemma4,
    "qwen3_next": _qwen_hybrid,
    "qwen3_5_text": _qwen_hybrid,
    "qwen3_5_moe_text": _qwen_hybrid,
    "glm4_moe": _neox_everywhere,
    "minimax_m2": _neox_everywhere,
    "ministral3": _neox_everywhere,
    "qwen3_omni_moe_text": _neox_everywhere,
    "deepseek_v32": lambda c: _mla(c, layout="interleaved"),
    "mistral4": lambda c: _mla(c, layout="interleaved" if c.get("rope_interleave", True) else "half"),
    "deepseek_v4": _deepseek_v4,
    "kimi_linear": _nope_hybrid,
    "glm5_next_text": _nope_hybrid,
    "exaone4": _exaone4,
}


def layer_positions(config):
    """A list of LayerPositions, one per layer, for a config.json (dict) of a model type in READERS."""
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a model's config.json, loaded), got {type(config).__name__}")
    kind = config.get("model_type")
    if kind not in READERS:
        raise ValueError(f"model_type must be one of {', '.join(sorted(READERS))}, got {kind!r}")
    return READERS[kind](config)


def summary(plan):
    """{description: count} of a plan, e.g. {'RoPE neox 64/256 half, base 1e+07': 12, 'linear (no positions)': 36}."""
    counts = {}
    for layer in plan:
        if layer.mixer == "linear":
            label = "linear attention (no positions)"
        elif not layer.rotated:
            label = f"attention, NoPE ({layer.head_dim} features)"
        else:
            label = f"RoPE {layer.convention} {layer.rotated}/{layer.head_dim} {layer.layout}, base {layer.base:,.0f}"
            if layer.scaling and layer.scaling["rope_type"] != "proportional":  # proportional: in the convention
                label += f", {layer.scaling['rope_type']} x{layer.scaling.get('factor', 1):g}"
        if layer.window:
            label += f", window {layer.window:,}"
        counts[label] = counts.get(label, 0) + 1
    return counts


def load_models():
    """The models of data/layer_schemes_2026.json: dicts with name, hub, layout, config (an excerpt), sources."""
    from .data import load_json

    return load_json(SCHEMES_FILE)["models"]
