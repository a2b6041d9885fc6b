"""pe_lib.layer_schemes against transformers' configuration classes, and the cited data file."""

import numpy as np
import pytest
import torch
from transformers import AutoConfig

from pe_lib import layer_schemes as ls
from pe_lib.data import load_json

MODELS = {entry["name"]: entry for entry in ls.load_layer_schemes()}


def hf_config(config):
    config = dict(config)
    config.pop("vision_config", None)
    return AutoConfig.for_model(config.pop("model_type"), **config)


@pytest.mark.parametrize("name", list(MODELS))
def test_every_model_is_cited(name):
    entry = MODELS[name]
    assert entry["sources"]["config"].startswith(f"https://huggingface.co/{entry['hub']}/")
    assert len(entry["sources"]["paper"]) > 40


@pytest.mark.parametrize("name", list(MODELS))
def test_layer_types_as_transformers_derives_them(name):
    config = MODELS[name]["config"]
    plan = ls.layer_plan(config)
    hf = hf_config(config)
    assert len(plan) == config["num_hidden_layers"]
    expected = getattr(hf, "layer_types", None) or ["full_attention"] * len(plan)
    assert [layer.layer_type for layer in plan] == list(expected)
    if getattr(hf, "no_rope_layers", None) is not None:
        assert [int(layer.rope is not None) for layer in plan] == list(hf.no_rope_layers)


def test_the_mixes_the_notebook_states():
    def counts(name):
        plan = ls.layer_plan(MODELS[name]["config"])
        return sum(layer.rope is not None for layer in plan), sum(layer.rope is None for layer in plan)

    assert counts("Llama 4 Scout") == (36, 12)  # every 4th layer without RoPE
    assert counts("SmolLM3 3B") == (27, 9)
    assert counts("Command A") == (48, 16)  # RoPE with a window 3 : 1 NoPE over everything
    gemma = ls.layer_plan(MODELS["Gemma 3 4B"]["config"])
    bases = {layer.layer_type: layer.rope.base for layer in gemma}
    assert bases == {"sliding_attention": 1e4, "full_attention": 1e6}
    assert sum(layer.window == 1024 for layer in gemma) == 29 and gemma[5].window is None
    assert gemma[5].rope.scaling["factor"] == 8.0 and gemma[0].rope.scaling is None
    oss = ls.layer_plan(MODELS["gpt-oss-120b"]["config"])
    assert [layer.window for layer in oss[:4]] == [128, None, 128, None]
    assert all(layer.rope.rope_type == "yarn" for layer in oss)
    llama4 = ls.layer_plan(MODELS["Llama 4 Scout"]["config"])
    assert llama4[0].chunk == 8192 and llama4[3].chunk is None and llama4[3].rope is None
    deepseek = ls.layer_plan(MODELS["DeepSeek-V3"]["config"])
    assert deepseek[0].rope.head_dim == 64  # the decoupled RoPE sub-head, not the 192-feature q/k head


def test_llama4_scale_matches_transformers_formula():
    positions = np.array([0, 1, 8190, 8191, 8192, 16383, 100_000, 10_000_000])
    # transformers' Llama4TextAttention, transcribed
    expected = torch.log1p(torch.floor((torch.from_numpy(positions).float() + 1.0) / 8192)) * 0.1 + 1.0
    np.testing.assert_allclose(ls.llama4_attention_scale(positions), expected.double().numpy(), rtol=1e-6)
    assert ls.llama4_attention_scale(8190)[0] == 1.0 and ls.llama4_attention_scale(8191)[0] > 1.0


def test_per_layer_5x_layout():
    # transformers 5.x writes Gemma 3's two RoPEs as rope_parameters nested by layer type
    config = dict(MODELS["Gemma 3 4B"]["config"])
    for key in ("rope_theta", "rope_local_base_freq", "rope_scaling"):
        config.pop(key)
    config["rope_parameters"] = {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
    }
    new = ls.layer_plan(config)
    old = ls.layer_plan(MODELS["Gemma 3 4B"]["config"])
    for a, b in zip(new, old, strict=True):
        np.testing.assert_allclose(a.rope.frequencies(), b.rope.frequencies(), rtol=1e-15)


def test_bad_config():
    with pytest.raises(TypeError, match="config"):
        ls.layer_plan([1])
    with pytest.raises(ValueError, match="layer_types"):
        ls.layer_plan({"num_hidden_layers": 3, "layer_types": ["full_attention"], "rope_theta": 1e4, "head_dim": 8})


def test_data_file_is_plain_json():
    assert load_json(ls.SCHEMES_FILE)["about"].startswith("Per-layer")
