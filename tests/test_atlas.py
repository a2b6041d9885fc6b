"""The atlas (pe_lib.atlas): regenerated from transformers and compared with the committed files, its counts,
and the spot checks of published configs against the config class defaults."""

import pytest

from pe_lib import atlas, rope_config
from pe_lib.data import load_json

ATLAS = atlas.load_atlas()


def test_every_model_type_of_transformers_is_in_the_atlas():
    from transformers import CONFIG_MAPPING, __version__

    assert ATLAS["transformers_version"] == __version__ == rope_config.rules_version()
    assert [entry["model_type"] for entry in ATLAS["models"]] == sorted(CONFIG_MAPPING.keys())
    assert all(entry["scheme"] in atlas.SCHEMES and entry["evidence"] for entry in ATLAS["models"])


@pytest.mark.slow
def test_regenerated_atlas_and_rules_equal_the_committed_files():
    from importlib import resources

    fresh, rules = atlas.build()
    folder = resources.files("pe_lib.data")
    assert folder.joinpath(atlas.ATLAS_FILE).read_text(encoding="utf-8") == atlas.dump(fresh)
    assert folder.joinpath(rope_config.RULES_FILE).read_text(encoding="utf-8") == atlas.dump(rules)


def test_counts_add_up():
    schemes = atlas.counts(ATLAS)
    assert sum(schemes.values()) == len(ATLAS["models"]) > 800
    assert schemes["rope"] > schemes["learned"] > schemes["relative_bias"] > schemes["alibi"] >= 2
    variants = atlas.counts(ATLAS, key="variant")
    assert set(variants) == set(atlas.ROPE_VARIANTS) and sum(variants.values()) == schemes["rope"]
    assert schemes["unknown"] < 0.1 * len(ATLAS["models"])  # the script leaves few unclassified, and says so


def test_known_schemes_are_classified_as_published():
    by_type = {entry["model_type"]: entry for entry in ATLAS["models"]}
    expected = {"gpt2": "learned", "bert": "learned", "t5": "relative_bias", "bloom": "alibi", "mpt": "alibi",
                "llama": "rope", "gptj": "rope", "marian": "sinusoidal", "wav2vec2": "conv", "mamba": "none",
                "qwen2_vl": "rope", "opt": "learned"}  # fmt: skip
    assert {k: by_type[k]["scheme"] for k in expected} == expected
    assert by_type["gemma4_text"]["variant"] == "proportional" and by_type["gpt_neox"]["variant"] == "partial"
    assert by_type["qwen2_vl"]["variant"] == "mrope" and by_type["pixtral"]["variant"] == "axial"
    assert by_type["gemma3_text"]["per_layer_mix"] and not by_type["llama"]["per_layer_mix"]


def test_spot_checks_are_sourced_and_marked():
    checks = load_json(atlas.SPOT_CHECKS_FILE)["checks"]
    assert len(checks) >= 25 and len({c["name"] for c in checks}) == len(checks)
    for check in checks:
        assert any(s.startswith("https://huggingface.co/") or "#" in s for s in check["sources"].values()), check
    marked = {entry["model_type"] for entry in ATLAS["models"] if entry["checked"]}
    assert marked == {check["model_type"] for check in checks}


def test_how_far_defaults_can_be_trusted():
    rows, summary = atlas.spot_check(ATLAS)
    same, total = summary["scheme"]
    assert same == total >= 25  # the kind of positions: every default agrees with its checkpoint
    base_same, base_total = summary["base"]
    assert base_total >= 15 and base_same < base_total  # the numbers: often not (Llama 3's 500,000 vs 10,000)
    llama3 = next(r for r in rows if r["name"] == "Llama 3 8B" and r["field"] == "base")
    assert (llama3["published"], llama3["default"], llama3["same"]) == ([500000.0], [10000.0], False)
