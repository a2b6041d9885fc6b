"""The auditor's reader against transformers' own rotary modules, on every config class of transformers 5.24 with a
RoPE over token positions and on every config the course cites (data/position_schemes.json, layer_schemes.json,
the spot checks of the atlas), per layer type and per layer. Only rotary modules are built, never a model.

Vision encoders' 2-D RoPE over patch coordinates (rope_type "axial", and three classes that use "default" for it)
is out of the reader's scope: it refuses them by name, and a test checks it refuses exactly those.
"""

import numpy as np
import pytest

from pe_lib import layer_schemes, rope_config
from pe_lib import transformers_rotary as tr
from pe_lib.audit import language_config
from pe_lib.data import load_json

RTOL = 2e-6  # transformers computes inv_freq in float32, the reader in float64
RULES = load_json(rope_config.RULES_FILE)["models"]
VISION_2D = sorted(model_type for model_type, rules in RULES.items() if rules.get("vision_2d"))
TEXT = sorted(model_type for model_type in RULES if model_type not in VISION_2D)
# Where transformers 5.24 departs from its own config (the reader follows transformers; the audit warns).
DEPARTS = {"minimax_m3_vl_text": "rotary_dim"}


def schemes(config):
    """{label: RopeScheme} the reader gives for each rope label of a config (a dict)."""
    labels = rope_config.rope_layer_types(config) or (None,)
    return {label: rope_config.rope_from_config(config, label) for label in labels}


def assert_agrees(config_object, config_dict):
    reference = tr.reference_frequencies(config_object)
    if not reference and hasattr(config_object, "text_config"):  # a composite: its language model's rotary module
        config_object = config_object.text_config
        reference = tr.reference_frequencies(config_object)
        config_dict = language_config(config_dict)[0]  # what the auditor reads of a composite
    assert reference, "transformers built no rotary module for this config"
    mine = schemes(config_dict)
    for label, (inv_freq, factor) in reference.items():
        scheme = mine[label] if label in mine else mine[None]
        ours = scheme.frequencies()
        assert ours.shape == inv_freq.shape, f"{label}: {ours.shape} frequencies, transformers {inv_freq.shape}"
        np.testing.assert_allclose(ours, inv_freq, rtol=RTOL, atol=0, err_msg=f"label {label}")
        assert scheme.attention_factor == pytest.approx(factor, rel=1e-9)
    plan = layer_schemes.layer_plan(config_dict) if config_dict.get("num_hidden_layers") else []
    for index, layer in enumerate(plan):
        if layer.rope is not None:
            inv_freq = reference[layer.rope.label if layer.rope.label in reference else None][0]
            np.testing.assert_allclose(layer.rope.frequencies(), inv_freq, rtol=RTOL, err_msg=f"layer {index}")


@pytest.fixture(scope="module")
def defaults():
    with tr.quiet():
        return {model_type: tr.config_defaults(model_type) for model_type in RULES}


def test_rules_cover_every_transformers_config_class_with_rope(defaults):
    from transformers import CONFIG_MAPPING

    with tr.quiet():
        with_rope = set()
        for model_type in CONFIG_MAPPING:
            try:
                parameters = tr.config_defaults(model_type).to_dict().get("rope_parameters")
            except Exception:  # noqa: BLE001, S112 - classes whose defaults do not build (nougat, gemma4_assistant)
                continue
            values = [v for v in (parameters or {}).values() if isinstance(v, dict)] or [parameters or {}]
            if parameters and not any(v.get("rope_type") == "axial" for v in values):
                with_rope.add(model_type)
    assert with_rope == set(RULES)
    assert len(TEXT) > 200


@pytest.mark.parametrize("model_type", TEXT)
def test_every_config_class_agrees_with_its_rotary_module(model_type, defaults):
    config = defaults[model_type]
    if not tr.reference_frequencies(config):
        pytest.skip(f"{model_type}'s outer config builds no rotary module; its sub-configs are tested")
    assert_agrees(config, config.to_dict())


@pytest.mark.parametrize("model_type", VISION_2D)
def test_image_rope_is_refused_by_name(model_type, defaults):
    with pytest.raises(ValueError, match="2-D"):
        schemes(defaults[model_type].to_dict())


def test_transformers_departs_where_recorded(defaults):
    config = defaults["minimax_m3_vl_text"]
    assert config.rotary_dim == 64 and config.head_dim == 128
    ((inv_freq, _),) = tr.reference_frequencies(config).values()
    assert len(inv_freq) == 64  # transformers 5.24 turns all 128 features, whatever rotary_dim says
    assert set(DEPARTS) == {"minimax_m3_vl_text"}


PUBLISHED = [entry for entry in load_json("position_schemes.json")["models"] if entry["method"] == "rope"]
LAYERED = layer_schemes.load_layer_schemes()
SPOT = [fact for fact in load_json("atlas_spot_checks.json")["checks"] if fact.get("config")]


@pytest.mark.parametrize("entry", LAYERED, ids=[entry["name"] for entry in LAYERED])
@pytest.mark.parametrize("layout", ["4.x", "5.x"])
def test_cited_per_layer_configs_agree(entry, layout):
    config = dict(entry["config"])
    config.pop("vision_config", None)
    built = tr.from_dict(config)
    assert_agrees(built, config if layout == "4.x" else built.to_dict())


@pytest.mark.parametrize("fact", SPOT, ids=[fact["name"] for fact in SPOT])
def test_spot_checked_published_configs_agree(fact):
    config = dict(fact["config"])
    built = tr.from_dict(config)
    if not tr.reference_frequencies(built):
        pytest.skip("no rotary module for this model type")
    assert_agrees(built, config)
    assert_agrees(built, built.to_dict())


DEEPSEEK_V4_LEGACY = {  # DeepSeek-V4's keys in the flat layout its config class still reads (compress_rope_theta)
    "model_type": "deepseek_v4", "num_hidden_layers": 4, "head_dim": 512, "qk_rope_head_dim": 64,
    "hidden_size": 4096, "num_attention_heads": 64, "rope_theta": 10000.0, "compress_rope_theta": 160000.0,
    "max_position_embeddings": 1048576,
    "rope_scaling": {"type": "yarn", "factor": 16, "original_max_position_embeddings": 65536},
    "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention",
                    "compressed_sparse_attention"],
}  # fmt: skip


def test_deepseek_v4_legacy_keys_nest_as_its_config_class_nests_them():
    assert_agrees(tr.from_dict(DEEPSEEK_V4_LEGACY), DEEPSEEK_V4_LEGACY)
    compress = rope_config.rope_from_config(DEEPSEEK_V4_LEGACY, "compress")
    assert (compress.rope_type, compress.base, compress.attention_factor) == ("yarn", 1.6e5, 1.0)
    plan = layer_schemes.layer_plan(DEEPSEEK_V4_LEGACY)
    assert [layer.rope.label for layer in plan] == ["main", "compress", "compress", "compress"]
