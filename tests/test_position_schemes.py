"""The shipped table of models' position schemes, and an independent check of notebook 09's numbers.

The table's values are compared with the published configurations as transcribed here from their
citations; the layout forensics and the half-precision numbers are recomputed from first principles
(bit arithmetic for the rounding, a literal RoPE for the scores), not with pe_lib's helpers.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from pe_lib import models_table

ROOT = Path(__file__).resolve().parent.parent
RAW = json.loads((ROOT / "pe_lib" / "data" / "position_schemes.json").read_text())

# Transcribed from each entry's citation (config.json on the hub, model card, paper): name -> {field: value}
PUBLISHED = {
    "GPT-2": {"trained_context": 1024, "max_position_embeddings": 1024, "rows": 1024, "first_row": 0},
    "BERT base": {"trained_context": 512, "max_position_embeddings": 512, "rows": 512, "token_types": 2},
    "all-MiniLM-L6-v2": {"trained_context": 128, "max_position_embeddings": 512, "rows": 512, "token_types": 2},
    "RoBERTa base": {"trained_context": 512, "max_position_embeddings": 514, "rows": 514, "first_row": 2,
                     "token_types": 1},
    "OPT-125m": {"trained_context": 2048, "max_position_embeddings": 2048, "rows": 2050, "first_row": 2},
    "T5 base": {"trained_context": 512, "max_position_embeddings": None, "num_buckets": 32, "max_distance": 128,
                "num_heads": 12},
    "GPT-J 6B": {"trained_context": 2048, "max_position_embeddings": 2048, "head_dim": 256, "rotary_dim": 64,
                 "layout": "interleaved", "base": 1e4},
    "GPT-NeoX-20B": {"trained_context": 2048, "max_position_embeddings": 2048, "head_dim": 96, "rotary_dim": 24,
                     "layout": "half", "base": 1e4},
    "Pythia-160m": {"trained_context": 2048, "max_position_embeddings": 2048, "head_dim": 64, "rotary_dim": 16,
                    "layout": "half", "base": 1e4},
    "Llama 2 7B": {"trained_context": 4096, "max_position_embeddings": 4096, "head_dim": 128, "base": 1e4,
                   "scaling": None},
    "Code Llama 7B": {"trained_context": 16384, "max_position_embeddings": 16384, "base": 1e6},
    "Llama 3 8B": {"trained_context": 8192, "max_position_embeddings": 8192, "base": 5e5, "scaling": None},
    "Llama 3.1 8B": {"trained_context": 131072, "max_position_embeddings": 131072, "base": 5e5,
                     "scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
    "Mistral 7B v0.1": {"trained_context": 8192, "max_position_embeddings": 32768, "sliding_window": 4096,
                        "base": 1e4},
    "Qwen2 7B": {"trained_context": 32768, "max_position_embeddings": 131072, "sliding_window": None, "base": 1e6,
                 "num_heads": 28, "head_dim": 128},
    "BLOOM 176B": {"trained_context": 2048, "max_position_embeddings": None, "num_heads": 112},
    "MPT-7B": {"trained_context": 2048, "max_position_embeddings": 2048, "num_heads": 32},
}  # fmt: skip
LENGTHS = {"trained_context", "max_position_embeddings", "sliding_window"}
REQUIRED = {
    "learned": {"rows", "first_row", "token_types"},
    "t5": {"num_heads", "num_buckets", "max_distance"},
    "rope": {"num_heads", "head_dim", "rotary_dim", "base", "layout", "scaling"},
    "alibi": {"num_heads"},
}


def test_every_model_is_in_the_table_once_with_its_published_values():
    table = {entry["name"]: entry for entry in RAW["models"]}
    assert len(table) == len(RAW["models"]) == len(PUBLISHED)
    for name, values in PUBLISHED.items():
        for field, value in values.items():
            assert table[name][field] == value, (name, field)


@pytest.mark.parametrize("entry", RAW["models"], ids=lambda entry: entry["name"])
def test_every_value_has_a_citation(entry):
    fields = LENGTHS | REQUIRED[entry["method"]]
    assert set(entry) == {"name", "hub", "method", "sources"} | fields
    assert set(entry["sources"]) == fields
    for field, source in entry["sources"].items():
        assert isinstance(source, str) and len(source) > 20, (field, source)
    if entry["method"] == "rope":
        assert entry["layout"] in ("interleaved", "half") and entry["rotary_dim"] % 2 == 0
        assert entry["rotary_dim"] <= entry["head_dim"]


def test_the_config_numbers_are_cited_with_the_value_itself():
    for entry in RAW["models"]:
        for field in ("max_position_embeddings", "sliding_window", "rows", "rotary_dim", "num_heads"):
            if entry.get(field) is not None and "config.json" in entry["sources"][field]:
                assert str(entry[field]).rstrip("0").rstrip(".") in entry["sources"][field].replace(",", ""), (
                    entry["name"],
                    field,
                )


def test_the_loader_returns_fresh_copies_of_the_file():
    loaded = models_table.load_position_schemes()
    assert loaded == RAW["models"]
    loaded[0]["trained_context"] = 0
    assert models_table.load_position_schemes()[0]["trained_context"] == 1024


def test_trained_context_is_cited_to_a_paper_or_model_card_and_llama_2s_base_to_metas_code():
    for entry in RAW["models"]:
        source = entry["sources"]["trained_context"]
        assert "arXiv" in source or "model card" in source or "Radford" in source, (entry["name"], source)
        assert entry["trained_context"] <= (entry["max_position_embeddings"] or math.inf)
    llama2 = {entry["name"]: entry for entry in RAW["models"]}["Llama 2 7B"]["sources"]["base"]
    assert "theta=10000.0" in llama2 and "LlamaConfig" in llama2


def test_the_provenance_note_describes_the_table():
    note = (ROOT / "pe_lib" / "data" / "PROVENANCE.md").read_text()
    assert "position_schemes.json" in note and "convert_llama_weights_to_hf" in note


# --- independent: rounding to a float with p significant bits, by integer arithmetic ----------------


def rounded(n, bits):
    """The integer n >= 0 rounded to `bits` significant bits, ties to even (IEEE 754 round-to-nearest)."""
    if n < 2**bits:
        return n
    shift = n.bit_length() - bits
    q, r = n >> shift, n & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return q << shift


def rounded_real(x, bits):
    """A positive real x rounded to `bits` significant bits (ties to even), via its exponent."""
    exponent = math.floor(math.log2(x))
    scale = 2.0 ** (exponent - bits + 1)
    q = x / scale
    low = math.floor(q)
    if q - low > 0.5 or (q - low == 0.5 and low % 2):
        low += 1
    return low * scale


@pytest.mark.parametrize(("bits", "limit"), [(8, 256), (11, 2048)])
def test_integers_are_exact_up_to_two_to_the_bits(bits, limit):
    assert all(rounded(n, bits) == n for n in range(limit + 1)) and rounded(limit + 1, bits) != limit + 1


def test_which_positions_collide_in_bfloat16():
    stored = [rounded(p, 8) for p in range(4096)]
    assert len(set(stored)) == 769
    assert [p for p in range(2990, 3030) if rounded(p, 8) == rounded(3000, 8)] == list(range(3000, 3017))
    assert rounded(257, 8) == 256 and rounded(259, 8) == 260 and rounded(1001, 8) == 1000


def literal_theta(d=128, base=1e4):
    return [base ** (-2 * i / d) for i in range(d // 2)]


def wrapped(angle):
    """An angle error taken modulo 2 pi into [0, pi]."""
    return abs((angle + math.pi) % (2 * math.pi) - math.pi)


def test_a_score_depends_on_the_query_key_angle_and_bfloat16_angles_miss_it_by_4_rad_at_518_and_514():
    # pair 0 (theta = 1): the query at 518 and the key at 514 should differ by 4 rad
    assert rounded(518, 8) == 520 and rounded(514, 8) == 512  # both ties, to even
    assert (rounded(518, 8) - rounded(514, 8)) - (518 - 514) == 4  # 4 rad off, more than pi
    assert wrapped(4.0) == pytest.approx(2 * math.pi - 4)
    theta = literal_theta()
    worst = max(wrapped((rounded_real(518 * t, 8) - rounded_real(514 * t, 8)) - 4 * t) for t in theta)
    assert worst == pytest.approx(2 * math.pi - 4)


def test_a_bfloat16_frequency_error_grows_with_the_distance_not_the_position():
    theta = literal_theta()
    stored = [rounded_real(t, 8) for t in theta]

    def error(m, n):  # exact products of the rounded frequency (float32 adds far less at these positions)
        return max(wrapped((m * s - n * s) - (m - n) * t) for s, t in zip(stored, theta, strict=True))

    assert error(1000, 990) == pytest.approx(error(50_000, 49_990), abs=1e-9)  # the same distance, the same error
    assert error(1000, 900) == pytest.approx(10 * error(1000, 990), rel=1e-9)  # ten times the distance
    shift = max(abs(s - t) for s, t in zip(stored, theta, strict=True))  # a steady frequency shift
    assert error(1000, 182) == pytest.approx(818 * shift, rel=1e-9) and 1.0 <= 818 * shift < 1.0 + shift


def test_float16_angles_are_exact_to_2048():
    assert all(rounded(n, 11) == n for n in range(2049)) and rounded(2049, 11) == 2048


# --- independent: the layout forensics, with a literal RoPE and a literal permutation ----------------


def rope_literal(v, p, layout, theta):
    out = list(v)
    d = len(v)
    for i, t in enumerate(theta):
        a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
        c, s = math.cos(p * t), math.sin(p * t)
        out[a], out[b] = v[a] * c - v[b] * s, v[a] * s + v[b] * c
    return out


def test_a_wrong_layout_is_right_at_distance_zero_and_drifts_and_the_permutation_fixes_it():
    rng = np.random.default_rng(5)
    d = 16
    theta = literal_theta(d)
    w_q, w_k = rng.normal(size=(2, d, d))
    perm = [2 * i for i in range(d // 2)] + [2 * i + 1 for i in range(d // 2)]
    tokens = rng.normal(size=(300, d))

    def scores(wq, wk, layout, distance):
        out = []
        for x in tokens:
            q, k = list(wq @ x), list(wk @ x)
            out.append(np.dot(rope_literal(q, 500, layout, theta), rope_literal(k, 500 - distance, layout, theta)))
        return np.array(out)

    correlation = []
    for distance in (0, 1, 64, 1024):
        trained = scores(w_q, w_k, "interleaved", distance)
        as_is = scores(w_q, w_k, "half", distance)
        fixed = scores(w_q[perm], w_k[perm], "half", distance)
        assert np.abs(fixed - trained).max() < 1e-9
        correlation.append(np.corrcoef(trained, as_is)[0, 1])
    assert correlation[0] > 1 - 1e-12 and correlation[1] > 0.8 and abs(correlation[3]) < 0.3
    assert correlation[0] > correlation[1] > correlation[2]
    w = np.arange(2 * d * 3).reshape(2 * d, 3)  # two heads: the library's permutation is the same, per head
    assert np.array_equal(models_table.permute_for_half_layout(w, 2), w[perm + [d + j for j in perm]])
