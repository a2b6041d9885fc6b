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
    "GPT-2": {"context": 1024, "rows": 1024, "first_row": 0},
    "BERT base": {"context": 512, "rows": 512, "token_types": 2},
    "all-MiniLM-L6-v2": {"context": 512, "rows": 512, "token_types": 2},
    "RoBERTa base": {"context": 512, "rows": 514, "first_row": 2, "token_types": 1},
    "OPT-125m": {"context": 2048, "rows": 2050, "first_row": 2},
    "T5 base": {"num_buckets": 32, "max_distance": 128, "num_heads": 12},
    "GPT-J 6B": {"context": 2048, "head_dim": 256, "rotary_dim": 64, "layout": "interleaved", "base": 1e4},
    "GPT-NeoX-20B": {"context": 2048, "head_dim": 96, "rotary_dim": 24, "layout": "half", "base": 1e4},
    "Pythia-160m": {"context": 2048, "head_dim": 64, "rotary_dim": 16, "layout": "half", "base": 1e4},
    "Llama 2 7B": {"context": 4096, "head_dim": 128, "base": 1e4, "scaling": None},
    "Code Llama 7B": {"context": 16384, "base": 1e6},
    "Llama 3 8B": {"context": 8192, "base": 5e5, "scaling": None},
    "Llama 3.1 8B": {"context": 131072, "base": 5e5, "scaling": {"rope_type": "llama3", "factor": 8.0,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
    "Mistral 7B v0.1": {"context": 32768, "base": 1e4},
    "Qwen2 7B": {"context": 131072, "base": 1e6, "num_heads": 28, "head_dim": 128},
    "BLOOM 176B": {"context": 2048, "num_heads": 112},
    "MPT-7B": {"context": 2048, "num_heads": 32},
}  # fmt: skip
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
    fields = {"context"} | REQUIRED[entry["method"]]
    assert set(entry) == {"name", "hub", "method", "sources"} | fields
    assert set(entry["sources"]) == fields
    for field, source in entry["sources"].items():
        assert isinstance(source, str) and len(source) > 20, (field, source)
    if entry["method"] == "rope":
        assert entry["layout"] in ("interleaved", "half") and entry["rotary_dim"] % 2 == 0
        assert entry["rotary_dim"] <= entry["head_dim"]


def test_the_config_numbers_are_cited_with_the_value_itself():
    for entry in RAW["models"]:
        for field in ("context", "rows", "rotary_dim", "num_heads"):
            if field in entry and "config.json" in entry["sources"][field]:
                assert str(entry[field]).rstrip("0").rstrip(".") in entry["sources"][field].replace(",", ""), (
                    entry["name"],
                    field,
                )


def test_the_loader_returns_fresh_copies_of_the_file():
    loaded = models_table.load_position_schemes()
    assert loaded == RAW["models"]
    loaded[0]["context"] = 0
    assert models_table.load_position_schemes()[0]["context"] == 1024


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


def first_reaching(error_at, threshold, stop=10_000):
    return next((p for p in range(stop) if error_at(p) >= threshold), None)


def test_bfloat16_angle_and_inverse_frequency_errors_reach_pi_between_256_and_4096():
    theta = literal_theta()

    def angle_error(p):  # the exact angle rounded to bfloat16
        return max(abs(rounded_real(p * t, 8) - p * t) for t in theta) if p else 0.0

    stored = [rounded_real(t, 8) for t in theta]

    def inv_freq_error(p):  # bfloat16 inverse frequency, then an exact (float32 is exact enough here) product
        return max(abs(p * s - p * t) for s, t in zip(stored, theta, strict=True))

    assert [first_reaching(angle_error, t) for t in (0.1, 1.0, math.pi)] == [40, 257, 1028]
    assert [first_reaching(inv_freq_error, t) for t in (0.1, 1.0, math.pi)] == [82, 818, 2569]


def test_float16_angles_reach_pi_at_8196():
    theta = literal_theta()

    def error(p):
        return max(abs(rounded_real(p * t, 11) - p * t) for t in theta) if p else 0.0

    assert first_reaching(error, math.pi, stop=9000) == 8196


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
