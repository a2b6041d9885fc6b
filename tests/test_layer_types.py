"""pe_lib.layer_types against transformers 5.24: every config class that derives layer_types, built without a list.

For each model type in CONFIG_MAPPING whose class defaults hold a layer_types list, the list is dropped and the
class builds it again from the other keys; pe_lib.layer_types must derive the same list from the same dict.
"""

import pytest
from transformers import CONFIG_MAPPING

from pe_lib import layer_types as lt
from pe_lib import transformers_rotary as tr

# Not language models: vision encoders' layer lists (windows over patches) and document-layout detectors.
NOT_TEXT = ("lfm3_vl_vision", "muse_glimmer_vision", "muse_spark_vision", "pp_doclayout_v2", "pp_doclayout_v3")


def _without_list(model_type):
    try:
        with tr.quiet():
            values = tr.config_defaults(model_type).to_dict()
    except Exception:  # noqa: BLE001 - a class that cannot build its own defaults
        return None
    if values.get("layer_types") is None:
        return None
    values.pop("layer_types")
    for key in ("transformers_version", "architectures"):
        values.pop(key, None)
    return {**values, "model_type": model_type}


# The model types whose config class derives layer_types, in transformers 5.24. Listed, not found when the module is
# collected: finding them builds the defaults of every config class (800 of them, 6-9 s), in each xdist worker.
# test_the_listed_classes_are_all_that_derive_layer_types finds them once and compares.
# fmt: off
DERIVING = (
    "afmoe", "axk2", "bailing_hybrid", "beam", "cohere2", "cohere2_moe", "cohere_compass_text", "cwm",
    "deepseek_ocr2_encoder", "deepseek_v32", "deepseek_v4", "diffusion_gemma_text", "dory", "dots1",
    "dots3_note_text", "embedding_gemma2_text", "exaone4", "exaone_moe", "flint", "gemma2", "gemma3_text",
    "gemma3n_text", "gemma4_text", "gemma4_unified_text", "glm5_next_text", "glm_moe_dsa", "gpt_oss", "granite_swa",
    "granitemoe_swa", "granitemoehybrid", "hy_v4", "hy_v4_vl_text", "inkling2_loop_text", "inkling2_text",
    "inkling_text", "kimi_linear", "kolibri1", "laguna", "lara_mini", "lfm2", "lfm3", "lfm3_vl_vision",
    "llama4_text", "mellum", "mimo_v2_flash", "minimax", "minimax_m3_vl_text", "ministral", "mistral_large4_text",
    "modernbert", "modernbert-decoder", "muse_glimmer_assistant", "muse_glimmer_text", "muse_glimmer_vision",
    "muse_spark_text", "muse_spark_vision", "neomme", "olmo3", "olmo_hybrid", "pp_doclayout_v2", "pp_doclayout_v3",
    "qwen2", "qwen2_5_omni_talker", "qwen2_5_omni_text", "qwen2_5_vl_text", "qwen2_moe", "qwen2_vl_text", "qwen3",
    "qwen3_5_moe_text", "qwen3_5_text", "qwen3_next", "qwen3_omni_moe_talker_code_predictor", "qwen4_exp_text",
    "smollm3", "step3p5", "t5_gemma_module", "t5gemma2_decoder", "t5gemma2_text", "ultrabert", "unlimited_ocr_text",
    "vaultgemma", "zaya",
)
# fmt: on


def test_the_listed_classes_are_all_that_derive_layer_types():
    found = [kind for kind in sorted(CONFIG_MAPPING.keys()) if _without_list(kind) is not None]
    assert list(DERIVING) == found, (
        f"transformers changed: list {sorted(set(found) - set(DERIVING))}, drop {sorted(set(DERIVING) - set(found))}"
    )
    assert len(DERIVING) >= 80 and set(NOT_TEXT) <= set(DERIVING)


@pytest.mark.parametrize("model_type", [kind for kind in DERIVING if kind not in NOT_TEXT])
def test_the_rule_derives_what_the_config_class_derives(model_type):
    config = _without_list(model_type)
    try:
        with tr.quiet():
            theirs = list(tr.from_dict(config).layer_types)
    except Exception:  # noqa: BLE001 - the class refuses its own defaults without the list
        pytest.skip("transformers' class refuses its defaults without layer_types")
    assert lt.layer_types(config) == theirs


def test_a_listed_layer_types_wins_and_gemma4_ends_full():
    config = {"model_type": "gemma4_text", "num_hidden_layers": 3, "layer_types": ["sliding_attention"] * 3}
    assert lt.layer_types(config) == ["sliding_attention", "sliding_attention", "full_attention"]
    assert (
        lt.layer_types({"model_type": "llama", "num_hidden_layers": 2, "sliding_window": 8})
        == ["sliding_attention"] * 2
    )


def test_kimi_linear_layers_count_from_one():
    config = {"model_type": "kimi_linear", "num_hidden_layers": 4,
              "linear_attn_config": {"full_attn_layers": [4], "kda_layers": [1, 2, 3]}}  # fmt: skip
    assert lt.layer_types(config) == ["linear_attention"] * 3 + ["full_attention"]


BAD = {
    "exaone4 pattern a string": ({"model_type": "exaone4", "num_hidden_layers": 4, "sliding_window": 8,
                                  "sliding_window_pattern": "LLLG"}, ["sliding_window_pattern='LLLG'", "layer_types"]),
    "kimi layer 0": ({"model_type": "kimi_linear", "num_hidden_layers": 2,
                      "linear_attn_config": {"full_attn_layers": [0], "kda_layers": [1]}}, ["holds 0", "1..2"]),
    "kimi layer missing": ({"model_type": "kimi_linear", "num_hidden_layers": 3,
                            "linear_attn_config": {"full_attn_layers": [3], "kda_layers": [1]}}, ["layer 2"]),
    "deepseek_v4 ratio": ({"model_type": "deepseek_v4", "num_hidden_layers": 2, "compress_ratios": [0, 8]},
                          ["compress_ratios", "[8]"]),
    "list of the wrong length": ({"model_type": "llama", "num_hidden_layers": 3, "layer_types": ["full_attention"]},
                                 ["1 entries", "num_hidden_layers=3"]),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_configs_name_the_key(case):
    config, fragments = BAD[case]
    with pytest.raises(ValueError) as raised:
        lt.layer_types(config)
    for fragment in fragments:
        assert fragment in str(raised.value), f"{fragment!r} missing from {raised.value}"
