"""pe_lib.hybrid_layers and data/layer_schemes_2026.json against transformers 5.24's configuration and model classes.

For every model of the table: the number of layers, each layer's type, which layers attend, the head sizes, how
many features turn, the window, the query scale, and the frequencies of every RoPE layer, each compared with what
transformers' own config class and rotary module compute from the same config excerpt. Layers without positions
are checked on transformers' attention code (EXAONE 4's global layers, Kimi Linear's MLA, GLM-5.3-Flash's DSA).
"""

import copy
import inspect

import numpy as np
import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError
from transformers import AutoConfig

from pe_lib import hybrid_layers
from pe_lib.data import load_json

MODELS = hybrid_layers.load_models()
RTOL = 2e-6  # transformers' float32 inv_freq against pe_lib's float64 (tests/test_transformers_reference.py)


def hf_config(config):
    """transformers' config object for an excerpt (a deep copy: transformers fills the nested dicts in place)."""
    config = copy.deepcopy(config)
    return AutoConfig.for_model(config.pop("model_type"), **config)


def rotary_module(kind, config):
    """transformers' rotary embedding for the model type, built from the config (no weights)."""
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4RotaryEmbedding
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32RotaryEmbedding
    from transformers.models.exaone4.modeling_exaone4 import Exaone4RotaryEmbedding
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextRotaryEmbedding
    from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding
    from transformers.models.minimax_m2.modeling_minimax_m2 import MiniMaxM2RotaryEmbedding
    from transformers.models.ministral3.modeling_ministral3 import Ministral3RotaryEmbedding
    from transformers.models.mistral4.modeling_mistral4 import Mistral4RotaryEmbedding
    from transformers.models.qwen3_5_moe.modeling_qwen3_5_moe import Qwen3_5MoeTextRotaryEmbedding
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRotaryEmbedding
    from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import Qwen3OmniMoeThinkerTextRotaryEmbedding

    classes = {
        "gemma4_text": Gemma4TextRotaryEmbedding,
        "qwen3_next": Qwen3NextRotaryEmbedding,
        "qwen3_5_moe_text": Qwen3_5MoeTextRotaryEmbedding,
        "glm4_moe": Glm4MoeRotaryEmbedding,
        "minimax_m2": MiniMaxM2RotaryEmbedding,
        "deepseek_v32": DeepseekV32RotaryEmbedding,
        "deepseek_v4": DeepseekV4RotaryEmbedding,
        "exaone4": Exaone4RotaryEmbedding,
        "ministral3": Ministral3RotaryEmbedding,
        "mistral4": Mistral4RotaryEmbedding,
        "qwen3_omni_moe_text": Qwen3OmniMoeThinkerTextRotaryEmbedding,
    }
    return classes[kind](config)


def their_inv_freq(module, kind, layer_type):
    if kind == "gemma4_text":
        return getattr(module, f"{layer_type}_inv_freq")
    if kind == "deepseek_v4":
        return getattr(module, f"{'main' if layer_type == 'sliding_attention' else 'compress'}_inv_freq")
    return module.inv_freq


def test_the_table_has_at_least_twelve_models_each_cited():
    assert len(MODELS) >= 12 and len({m["name"] for m in MODELS}) == len(MODELS)
    for model in MODELS:
        assert model["sources"]["config"].startswith(f"https://huggingface.co/{model['hub']}/blob/main/config.json")
        assert model["sources"]["code"] and model["layout"] in ("4.x", "5.x")
    assert load_json(hybrid_layers.SCHEMES_FILE)["about"]


@pytest.mark.parametrize("model", MODELS, ids=[m["name"] for m in MODELS])
def test_every_layer_matches_transformers_config_class(model):
    config = model["config"]
    kind = config["model_type"]
    theirs = hf_config(config)
    plan = hybrid_layers.layer_positions(config)
    assert len(plan) == theirs.num_hidden_layers
    types = getattr(theirs, "layer_types", None) or ["full_attention"] * theirs.num_hidden_layers
    assert [layer.layer_type for layer in plan] == list(types)
    linear = {"linear_attention"}
    assert [layer.mixer == "linear" for layer in plan] == [t in linear for t in types]

    module = rotary_module(kind, theirs) if any(layer.rotated for layer in plan) else None
    for index, layer in enumerate(plan):
        if layer.mixer == "linear":
            continue
        if kind in ("deepseek_v32", "mistral4", "kimi_linear", "glm5_next_text"):
            assert layer.head_dim == theirs.qk_head_dim
        elif kind == "deepseek_v4":
            assert layer.head_dim == theirs.head_dim and layer.rotated == theirs.qk_rope_head_dim
        elif kind == "gemma4_text":  # a head size per layer (global_head_dim on the full layers)
            assert layer.head_dim == theirs.per_layer_config[index].head_dim
        else:
            assert layer.head_dim == (
                getattr(theirs, "head_dim", None) or theirs.hidden_size // theirs.num_attention_heads
            )
        if not layer.rotated:
            continue
        inv_freq = their_inv_freq(module, kind, layer.layer_type).double().numpy()
        np.testing.assert_allclose(layer.frequencies(), inv_freq, rtol=RTOL, atol=0)
        turning = 2 * int(np.count_nonzero(inv_freq))
        assert layer.rotated == turning  # every pair of transformers' inv_freq but the frozen ones
        if layer.convention == "proportional":
            assert inv_freq.size * 2 == layer.head_dim
        elif layer.convention == "decoupled":
            assert layer.rotated == theirs.qk_rope_head_dim
        if layer.window is not None:
            assert layer.window == theirs.sliding_window


def test_query_scales_are_those_of_the_config():
    by_name = {m["name"]: m for m in MODELS}
    for name in ("Ministral 3 8B", "Mistral Small 4"):
        config = hf_config(by_name[name]["config"])
        beta, length = (
            config.rope_parameters["llama_4_scaling_beta"],
            config.rope_parameters["original_max_position_embeddings"],
        )
        plan = hybrid_layers.layer_positions(by_name[name]["config"])
        assert {layer.query_scale for layer in plan} == {f"1 + {beta:g} ln(1 + floor(p / {length:,}))"}
    assert all(layer.query_scale is None for layer in hybrid_layers.layer_positions(by_name["GLM-4.5"]["config"]))


def test_exaone4_global_layers_ignore_positions_in_transformers():
    from transformers.models.exaone4.modeling_exaone4 import Exaone4Attention, Exaone4RotaryEmbedding

    config = AutoConfig.for_model("exaone4", hidden_size=64, num_attention_heads=4, num_key_value_heads=2,
                                  num_hidden_layers=4, sliding_window=8, sliding_window_pattern=4)  # fmt: skip
    config._attn_implementation = "eager"
    plan = hybrid_layers.layer_positions({"model_type": "exaone4", **config.to_dict()})
    rotary = Exaone4RotaryEmbedding(config)
    torch.manual_seed(0)
    x = torch.randn(1, 6, 64)
    mask = torch.full((6, 6), float("-inf")).triu(1)[None, None]
    for index, layer in enumerate(plan):
        attention = Exaone4Attention(config, index).eval()
        with torch.no_grad():
            near = attention(x, rotary(x, torch.arange(6)[None]), mask)[0]
            far = attention(x, rotary(x, torch.arange(6)[None] * 37), mask)[
                0
            ]  # other distances (a shift alone is invisible to RoPE)
        moved = not torch.allclose(near, far, atol=1e-5)
        assert moved == bool(layer.rotated), (index, layer)
    assert [layer.rotated == 0 for layer in plan] == [False, False, False, True]


def test_kimi_linear_mla_takes_no_positions_and_its_layer_numbers_count_from_one():
    from transformers.models.kimi_linear.modeling_kimi_linear import KimiLinearAttention

    assert "position_embeddings" not in inspect.signature(KimiLinearAttention.forward).parameters
    entry = next(m for m in MODELS if m["config"]["model_type"] == "kimi_linear")
    plan = hybrid_layers.layer_positions(entry["config"])
    assert [i for i, layer in enumerate(plan) if layer.mixer == "attention"] == [3, 7, 11, 15, 19, 23, 26]
    # the config class's own default (no linear_attn_config) puts them one layer later: a trap for a port
    assert [i for i, t in enumerate(AutoConfig.for_model("kimi_linear", num_hidden_layers=27).layer_types)
            if t == "full_attention"] == [4, 8, 12, 16, 20, 24]  # fmt: skip


def test_glm5_next_refuses_rope_in_its_dsa_layers():
    entry = next(m for m in MODELS if m["config"]["model_type"] == "glm5_next_text")
    with pytest.raises(StrictDataclassClassValidationError, match="Expecting NoPE"):
        hf_config({**entry["config"], "qk_rope_head_dim": 64})
    assert all(layer.rotated == 0 for layer in hybrid_layers.layer_positions(entry["config"]))


def test_exaone4_pattern_string_without_layer_types_is_refused_as_transformers_does():
    config = {"model_type": "exaone4", "num_hidden_layers": 8, "hidden_size": 64, "num_attention_heads": 4,
              "sliding_window": 8, "sliding_window_pattern": "LLLG"}  # fmt: skip
    with pytest.raises(TypeError):
        hf_config(config)
    with pytest.raises(ValueError, match="layer_types"):
        hybrid_layers.layer_positions(config)


def test_bad_configs_are_refused():
    with pytest.raises(TypeError, match="config must be a dict"):
        hybrid_layers.layer_positions([])
    with pytest.raises(ValueError, match="model_type must be one of"):
        hybrid_layers.layer_positions({"model_type": "llama", "num_hidden_layers": 2})
