"""pe_lib.audit: what it reports per layer, its warnings, the keys it lists, the command, and the configs it refuses."""

import io
import json
import math

import numpy as np
import pytest

from pe_lib import audit, audit_costs, audit_warnings, layer_schemes, rope_config
from pe_lib.data import load_json

MODELS = {entry["name"]: entry["config"] for entry in layer_schemes.load_layer_schemes()}
LLAMA31 = {  # meta-llama/Llama-3.1-8B config.json, the keys about positions (notebook 09's table cites it)
    "model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
    "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
}  # fmt: skip
GEMMA4_PUBLISHED = {  # a Gemma 4 text config as its config.json writes it (global_head_dim, not per_layer_config)
    "model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "num_hidden_layers": 12,
    "head_dim": 256, "global_head_dim": 512, "sliding_window": 512,
    "layer_types": (["sliding_attention"] * 5 + ["full_attention"]) * 2,
    "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                           "rope_theta": 1000000.0}},
}  # fmt: skip


def ids(report):
    return {warning["id"] for warning in report["warnings"]}


def test_a_plain_config_per_layer():
    report = audit.audit(LLAMA31)
    assert report["num_layers"] == 32 and len(report["groups"]) == 1
    layer = report["layers"][0]["rope"]
    assert (layer["base"], layer["head_dim"], layer["rotary_dim"], layer["pairing"]) == (500000.0, 128, 128, "half")
    assert layer["rope_type"] == "llama3" and layer["scaling"]["factor"] == 8.0
    assert report["context"]["trained_context"] == 8192 and report["context"]["max_position_embeddings"] == 131072
    assert {"base_key_moved", "left_padding", "ceiling"} <= ids(report)
    assert "yarn_factor" not in ids(report) and report["attention_factors"] == []


def test_gemma3_two_bases_windows_and_its_trap():
    report = audit.audit(MODELS["Gemma 3 4B"])
    kinds = {(row["attention"], row["rope"]["base"], row["rope"]["rope_type"]) for row in report["layers"]}
    assert kinds == {("sliding (window 1,024)", 1e4, "default"), ("full", 1e6, "linear")}
    assert len(report["groups"]) == 2 and "scaled_local_layers" in ids(report)


def test_gemma4_global_layers_have_their_own_head_size():
    plan = layer_schemes.layer_plan(GEMMA4_PUBLISHED)
    local, full = plan[0].rope, plan[5].rope
    assert (local.head_dim, full.head_dim) == (256, 512)
    assert full.proportional and full.turning_pairs == 64 and len(full.frequencies()) == 256
    assert np.all(full.frequencies()[64:] == 0) and full.frequencies()[1] == pytest.approx(1e6 ** (-2 / 512))
    report = audit.audit(GEMMA4_PUBLISHED)
    assert "proportional" in ids(report) and "transformers_differs" not in ids(report)


def test_ministral3_keys_inside_rope_parameters():
    config = next(f["config"] for f in load_json("atlas_spot_checks.json")["checks"] if f["name"] == "Ministral 3")
    report = audit.audit(config)
    assert report["context"]["trained_context"] == 16384
    assert report["attention_factors"] == [("yarn", 1.0)]  # mscale = mscale_all_dim: 1.0, as transformers
    assert "temperature" in ids(report) and "mla_softmax_scale" not in ids(report)
    assert "ln(1 + floor(p / 16384))" in report["layers"][0]["temperature"]
    assert report["not_read"]["rope"] == {}  # llama_4_scaling_beta and max_position_embeddings are read


def test_deepseek_v4_labels_map_to_layers():
    config = {"model_type": "deepseek_v4", "num_hidden_layers": 3, "head_dim": 512, "qk_rope_head_dim": 64,
              "hidden_size": 4096, "num_attention_heads": 64,
              "layer_types": ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"],
              "rope_parameters": {"main": {"rope_theta": 10000.0, "partial_rotary_factor": 0.125},
                                  "compress": {"rope_theta": 160000.0, "partial_rotary_factor": 0.125}}}  # fmt: skip
    plan = layer_schemes.layer_plan(config)
    assert [layer.rope.label for layer in plan] == ["main", "compress", "compress"]
    assert [layer.rope.base for layer in plan] == [1e4, 1.6e5, 1.6e5]
    assert all(layer.rope.rotary_dim == 64 and layer.rope.pairing == "interleaved" for layer in plan)


def test_glm45_defaults_odd_rotary_size_as_transformers():
    report = audit.audit(audit.load_config("glm4_moe")[0])
    rope = report["layers"][0]["rope"]
    assert (rope["head_dim"], rope["rotary_dim"], len(rope["frequencies"])) == (42, 21, 11)
    assert math.isclose(rope["frequencies"][1], 1e4 ** (-2 / 21), rel_tol=1e-12)
    assert "odd_rotary" in ids(report)


def test_transformers_that_ignores_rotary_dim_is_flagged():
    report = audit.audit(audit.load_config("minimax_m3_vl_text")[0])
    assert report["layers"][0]["rope"]["rotary_dim"] == 128  # as transformers 5.24 computes it
    flagged = [w for w in report["warnings"] if w["id"] == "transformers_differs"]
    assert flagged and flagged[0]["severity"] == "error" and "rotary_dim = 64" in flagged[0]["message"]


def test_minimax_m2_reads_its_legacy_rotary_dim():
    config = next(f["config"] for f in load_json("atlas_spot_checks.json")["checks"] if f["name"] == "MiniMax-M2")
    scheme = rope_config.rope_from_config(config)
    assert (scheme.head_dim, scheme.rotary_dim) == (128, 64)


def test_nope_layers_and_llama4_temperature():
    report = audit.audit(MODELS["Llama 4 Scout"])
    nope = [row for row in report["layers"] if row["rope"] is None]
    assert len(nope) == 12 and all(row["temperature"] and "floor((p + 1) / 8192)" in row["temperature"] for row in nope)
    assert all(row["attention"] == "chunked (chunk 8,192)" for row in report["layers"] if row["rope"] is not None)
    assert "nope_layers" in ids(report)


def test_yarn_attention_factor_reported():
    report = audit.audit(MODELS["gpt-oss-120b"])
    ((kind, factor),) = report["attention_factors"]
    assert kind == "yarn" and factor == pytest.approx(0.1 * math.log(32) + 1)
    assert "yarn_factor" in ids(report)


def test_positions_without_rope():
    bert = audit.audit({"model_type": "bert", "num_hidden_layers": 2, "max_position_embeddings": 512,
                        "position_embedding_type": "absolute"})  # fmt: skip
    assert bert["layers"][0]["positions"] == "absolute learned table (max_position_embeddings 512)"
    t5 = audit.audit({"model_type": "t5", "num_layers": 2, "relative_attention_num_buckets": 32})
    assert t5["layers"][0]["positions"].startswith("relative bias: T5 buckets, 32")
    bloom = audit.audit({"model_type": "bloom", "n_layer": 2, "n_head": 4, "hidden_size": 64})
    assert bloom["layers"][0]["positions"].startswith("ALiBi")


def test_composite_configs_audit_their_language_model():
    config = {"model_type": "qwen2_vl", "vision_config": {"model_type": "qwen2_vl_vision"},
              "text_config": {"model_type": "qwen2_vl_text", "num_hidden_layers": 2, "hidden_size": 1536,
                              "num_attention_heads": 12, "rope_parameters": {"rope_type": "default",
                              "rope_theta": 1e6, "mrope_section": [16, 24, 24]}}}  # fmt: skip
    report = audit.audit(config)
    assert report["language_config"] == "text_config" and report["other_configs"] == {
        "vision_config": "qwen2_vl_vision"
    }
    assert report["layers"][0]["rope"]["mrope_section"] == (16, 24, 24)
    assert "M-RoPE sections [16, 24, 24]" in report["layers"][0]["positions"]


def test_unknown_keys_are_listed_never_dropped():
    config = {**LLAMA31, "rope_window_tweak": 3, "my_setting": 1}
    config["rope_scaling"] = {**LLAMA31["rope_scaling"], "beta_fast": 32}
    report = audit.audit(config)
    assert report["not_read"]["position_like"] == ["rope_window_tweak"] and "my_setting" in report["not_read"]["other"]
    assert report["not_read"]["rope"] == {"rope_parameters": ["beta_fast"]}
    assert sum(w["id"] == "unknown_keys" for w in report["warnings"]) == 2


def test_unused_rope_labels_are_reported():
    config = {"model_type": "laguna", **{k: v for k, v in audit.load_config("laguna")[0].items() if k != "model_type"}}
    assert rope_config.unused_labels(config) == ("sliding_attention",)
    assert "unused_labels" in ids(audit.audit(config))


def test_every_trap_is_cited_and_measured_costs_come_from_the_data():
    costs = audit_costs.load_costs()["traps"]
    cited = [k for k, t in audit_warnings.TRAPS.items() if k not in ("unknown_keys", "unused_labels")]
    assert len(cited) >= 10 and all(audit_warnings.TRAPS[k].citations for k in cited)
    measured = [k for k in cited if audit_warnings.TRAPS[k].measured]
    assert len(measured) >= 5
    for key in measured:
        for row in audit_warnings.TRAPS[key].measured:
            assert row in costs and f"KL {costs[row]['kl']:.3f}" in audit_warnings.cost_of(key)


def test_measured_costs_say_what_the_text_claims():
    rows = audit_costs.load_costs()["traps"]
    kl = {k: v["kl"] for k, v in rows.items()}
    assert kl["pairing_swapped"] > 1 and kl["angles_bfloat16"] > 0.1 and kl["base_fallback"] > 0.05
    assert kl["padding_mask_positions_from_pad"] < 1e-3  # a shift of every position costs nothing in float64
    assert kl["padding_mask_and_position_ids"] < 1e-3 and kl["padding_no_mask"] > 0.01
    assert rows["yarn_factor_dropped"]["cost"] < 0 < kl["yarn_factor_dropped"]  # a lower loss, and still not the model
    assert all(value >= 0 for value in kl.values())


def test_text_and_json_output():
    report = audit.audit(MODELS["Gemma 3 4B"], source="gemma")
    text = audit.format_report(report)
    assert "sliding (window 1,024)" in text and "RoPE base 1,000,000" in text and "[warning]" in text
    assert json.loads(json.dumps(report, default=str))["num_layers"] == 34


def test_command_line(tmp_path, capsys, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA31))
    assert audit.main([str(path)]) == 0 and "RoPE base 500,000" in capsys.readouterr().out
    assert audit.main([str(path), "--json"]) == 0 and json.loads(capsys.readouterr().out)["num_layers"] == 32
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(LLAMA31)))
    assert audit.main(["-"]) == 0 and "standard input" in capsys.readouterr().out
    assert audit.main(["llama"]) == 0 and "LlamaConfig defaults" in capsys.readouterr().out
    path.write_text("{not json")
    assert audit.main([str(path)]) == 2 and "not readable JSON" in capsys.readouterr().err


def _conflict():
    config = {key: value for key, value in LLAMA31.items() if key != "rope_scaling"}
    return {**config, "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0}}


BAD = {
    "unreadable JSON": (lambda: audit.parse_config("{", "config.json"), ValueError,
                        ["config.json", "not readable JSON", "line 1"]),
    "JSON not an object": (lambda: audit.parse_config("[1]", "config.json"), ValueError, ["JSON object", "list"]),
    "missing file": (lambda: audit.load_config("nowhere/config.json"), ValueError,
                     ["'nowhere/config.json'", "no file"]),
    "unknown model_type": (lambda: audit.load_config("llamaa"), ValueError, ["'llamaa'", "model_type"]),
    "config not a str": (lambda: audit.load_config(3), TypeError, ["CONFIG", "3"]),
    "4.x and 5.x disagree": (lambda: audit.audit(_conflict()), ValueError,
                             ["conflicting 4.x and 5.x keys", "rope_theta = 500000.0", "10000.0"]),
    "rope_scaling and rope_parameters disagree": (
        lambda: audit.audit({**LLAMA31, "rope_parameters": {"rope_type": "linear", "factor": 8.0}}),
        ValueError, ["conflicting 4.x and 5.x keys", "rope_scaling['rope_type'] = 'llama3'", "'linear'"]),
    "rope_type unknown": (lambda: audit.audit({**LLAMA31, "rope_scaling": {"rope_type": "yarnn", "factor": 2.0}}),
                          ValueError, ["rope_parameters['rope_type']", "'yarnn'", "'yarn'"]),
    "partial factor zero": (lambda: audit.audit({**LLAMA31, "partial_rotary_factor": 0.0}), ValueError,
                            ["partial_rotary_factor", "(0, 1]", "0.0"]),
    "partial factor above 1": (
        lambda: audit.audit({**GEMMA4_PUBLISHED, "rope_parameters": {**GEMMA4_PUBLISHED["rope_parameters"],
                             "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 1.25}}}),
        ValueError, ["rope_parameters['full_attention']['partial_rotary_factor']", "(0, 1]", "1.25"]),
    "labels not layer types": (
        lambda: audit.audit({**GEMMA4_PUBLISHED, "rope_parameters": {"local": {"rope_theta": 1e4},
                                                                     "global": {"rope_theta": 1e6}}}),
        ValueError, ["'local', 'global'", "layer_types", "'full_attention'"]),
    "a layer type without its rope entry": (
        lambda: layer_schemes.layer_plan({**GEMMA4_PUBLISHED, "layer_types": ["chunked_attention"] * 12}),
        ValueError, ["layer_types", "'chunked_attention'"]),
    "image rope": (lambda: audit.audit(audit.load_config("pixtral")[0]), ValueError, ["2-D", "patch coordinates"]),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_input_gets_a_clear_error(case):
    call, error, fragments = BAD[case]
    with pytest.raises(error) as raised:
        call()
    for fragment in fragments:
        assert fragment in str(raised.value), f"{fragment!r} missing from {raised.value}"


def test_the_readme_shows_what_the_command_prints(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("python -m pe_lib.audit pe_lib/data/configs/gemma-3-4b-it.json\n```\n\n```\n", 1)[1]
    shown = shown.split("\n```", 1)[0]
    root = Path(__file__).resolve().parent.parent
    assert audit.main([str(root / "pe_lib/data/configs/gemma-3-4b-it.json")]) == 0
    printed = capsys.readouterr().out.rstrip("\n").replace(str(root) + "/", "")
    assert printed == shown
