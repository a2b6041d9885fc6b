"""pe_lib against what real models run: Hugging Face transformers (pinned in requirements.txt).

Every rope_type in transformers.modeling_rope_utils.ROPE_INIT_FUNCTIONS and the default one, on
settings drawn by hypothesis; apply_rope against Llama's apply_rotary_pos_emb (half layout) and
GPT-J's (interleaved); T5's buckets; BLOOM's ALiBi; rope_from_config against each model's own
rotary embedding for the course's table of models and for configs in both layouts.
transformers computes inv_freq in float32: frequencies agree to float32 rounding (rtol 2e-6).
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from transformers import AutoConfig, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.bloom.modeling_bloom import build_alibi_tensor
from transformers.models.gptj.modeling_gptj import apply_rotary_pos_emb as gptj_apply_rotary_pos_emb
from transformers.models.gptj.modeling_gptj import create_sinusoidal_positions
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as llama_apply_rotary_pos_emb
from transformers.models.t5.modeling_t5 import T5Attention

import pe_lib
from pe_lib.data import load_json
from pe_lib.rope_scaling import COURSE_TYPES, TRANSFORMERS_TYPES

RTOL = 2e-6  # transformers' float32 inv_freq against pe_lib's float64
DRAWN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

head_dims = st.sampled_from([8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 256])
bases = st.sampled_from([1e4, 5e4, 1e5, 5e5, 1e6, 1e7, 5e6, 10000.0 * 1.7])
factors = st.sampled_from([1.0, 1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 40.0])
lengths = st.sampled_from([512, 2048, 4096, 8192, 32768])


def hf_frequencies(rope_parameters, *, head_dim, max_position_embeddings=4096, seq_len=None, **extra):
    """inv_freq and attention factor as transformers computes them for a Llama config with these rope_parameters."""
    config = LlamaConfig(
        hidden_size=head_dim * 4,
        num_attention_heads=4,
        head_dim=head_dim,
        max_position_embeddings=max_position_embeddings,
        rope_parameters=dict(rope_parameters),
        **extra,
    )
    kind = config.rope_parameters["rope_type"]
    if kind == "default":
        inv_freq, factor = LlamaRotaryEmbedding.compute_default_rope_parameters(config)
    else:
        inv_freq, factor = ROPE_INIT_FUNCTIONS[kind](config, None, seq_len=seq_len)
    return inv_freq.double().numpy(), float(factor)


def ours(rope_parameters, *, head_dim, max_position_embeddings=4096, seq_len=None):
    """pe_lib's frequencies and attention factor, read from the same config as a dict."""
    config = {"head_dim": head_dim, "hidden_size": head_dim * 4, "num_attention_heads": 4}
    config["max_position_embeddings"] = max_position_embeddings
    config["rope_parameters"] = dict(rope_parameters)
    scheme = pe_lib.rope_from_config(config)
    return scheme.frequencies(seq_len), scheme.attention_factor


def assert_same(rope_parameters, rtol=RTOL, **kwargs):
    theirs, their_factor = hf_frequencies(rope_parameters, **kwargs)
    mine, my_factor = ours(rope_parameters, **kwargs)
    assert mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=0)
    assert my_factor == pytest.approx(their_factor, rel=1e-12)
    return mine


def test_every_rope_type_transformers_defines_is_covered():
    assert set(ROPE_INIT_FUNCTIONS) | {"default"} == set(TRANSFORMERS_TYPES)
    assert set(COURSE_TYPES).isdisjoint(ROPE_INIT_FUNCTIONS)  # the course's own forms are named apart


@DRAWN
@given(head_dim=head_dims, base=bases)
def test_default(head_dim, base):
    mine = assert_same({"rope_type": "default", "rope_theta": base}, head_dim=head_dim)
    np.testing.assert_array_equal(mine, pe_lib.rope_frequencies(head_dim, base=base))


@DRAWN
@given(head_dim=head_dims, base=bases, factor=factors)
def test_linear(head_dim, base, factor):
    parameters = {"rope_type": "linear", "rope_theta": base, "factor": factor}
    assert_same(parameters, head_dim=head_dim)


@DRAWN
@given(
    head_dim=head_dims,
    base=bases,
    factor=factors,
    length=lengths,
    ratio=st.sampled_from([0.01, 0.5, 1, 1.001, 2, 3.7, 16]),
)
def test_dynamic_at_several_sequence_lengths(head_dim, base, factor, length, ratio):
    parameters = {"rope_type": "dynamic", "rope_theta": base, "factor": factor}
    seq_len = max(1, round(ratio * length))
    mine = assert_same(parameters, head_dim=head_dim, max_position_embeddings=length, seq_len=seq_len)
    if seq_len <= length:  # up to the trained length dynamic NTK changes nothing
        np.testing.assert_allclose(mine, pe_lib.rope_frequencies(head_dim, base=base), rtol=1e-14)
    assert_same(parameters, head_dim=head_dim, max_position_embeddings=length)  # no seq_len: the config's length


@DRAWN
@given(
    head_dim=head_dims,
    base=bases,
    factor=factors.filter(lambda f: f > 1),
    length=lengths,
    fast_slow=st.sampled_from([(32, 1), (64, 2), (16, 1), (8, 0.5)]),
    truncate=st.sampled_from([None, True, False]),
)
def test_yarn_with_and_without_truncate(head_dim, base, factor, length, fast_slow, truncate):
    beta_fast, beta_slow = fast_slow
    parameters = {"rope_type": "yarn", "rope_theta": base, "factor": factor, "beta_fast": beta_fast}
    parameters.update(beta_slow=beta_slow, original_max_position_embeddings=length)
    if truncate is not None:
        parameters["truncate"] = truncate
    assert_same(parameters, head_dim=head_dim, max_position_embeddings=int(length * factor))


@DRAWN
@given(
    head_dim=head_dims,
    factor=factors.filter(lambda f: f > 1),
    mscales=st.sampled_from([(None, None), (1.0, 1.0), (0.707, 1.0), (1.0, 0.0)]),
    attention_factor=st.sampled_from([None, 1.0, 0.5, 1.2]),
)
def test_yarn_attention_factor(head_dim, factor, mscales, attention_factor):
    parameters = {"rope_type": "yarn", "rope_theta": 1e4, "factor": factor, "original_max_position_embeddings": 4096}
    mscale, mscale_all_dim = mscales
    for key, value in (("mscale", mscale), ("mscale_all_dim", mscale_all_dim), ("attention_factor", attention_factor)):
        if value is not None:
            parameters[key] = value
    assume(mscale_all_dim != 0.0)  # pe_lib refuses a zero mscale_all_dim (transformers ignores it)
    assert_same(parameters, head_dim=head_dim)


def test_yarn_factor_from_the_lengths_when_the_config_gives_none():
    # DeepSeek-style: no factor, transformers takes max_position_embeddings / original_max_position_embeddings.
    config = {"hidden_size": 512, "num_attention_heads": 4, "max_position_embeddings": 16384}
    config["rope_scaling"] = {"type": "yarn", "original_max_position_embeddings": 4096}
    scheme = pe_lib.rope_from_config(config)
    assert scheme.scaling["factor"] == 4.0


@DRAWN
@given(
    head_dim=head_dims,
    base=bases,
    length=lengths,
    scale=st.sampled_from([1.0, 4.0, 32.0]),
    factor=st.sampled_from([None, 2.0, 8.0]),
    ratio=st.sampled_from([None, 0.5, 1, 1.01, 4]),
    seed=st.integers(0, 2**31 - 1),
)
def test_longrope_short_and_long(head_dim, base, length, scale, factor, ratio, seed):
    rng = np.random.default_rng(seed)
    short = (1 + rng.random(head_dim // 2)).tolist()
    long = (1 + scale * rng.random(head_dim // 2)).tolist()
    parameters = {"rope_type": "longrope", "rope_theta": base, "short_factor": short, "long_factor": long}
    parameters["original_max_position_embeddings"] = length
    if factor is not None:
        parameters["factor"] = factor
    seq_len = None if ratio is None else round(ratio * length)
    assert_same(parameters, head_dim=head_dim, max_position_embeddings=length * 8, seq_len=seq_len)


@DRAWN
@given(
    head_dim=head_dims,
    base=bases,
    factor=factors,
    length=lengths,
    bands=st.sampled_from([(1, 4), (0.5, 2), (2, 32), (1, 1)]),
)
def test_llama3(head_dim, base, factor, length, bands):
    low, high = bands
    parameters = {"rope_type": "llama3", "rope_theta": base, "factor": factor, "low_freq_factor": low}
    parameters.update(high_freq_factor=high, original_max_position_embeddings=length)
    # In the band between the two wavelengths transformers blends theta/factor and theta with a float32 weight;
    # where the weight is small the result is near theta/factor, so the weight's rounding counts up to `factor`
    # times (seen: 2.7e-6 at factor 32).
    rtol = max(RTOL, 4e-7 * factor)
    assert_same(parameters, rtol=rtol, head_dim=head_dim, max_position_embeddings=int(length * factor))


@DRAWN
@given(head_dim=head_dims, base=bases, fraction=st.sampled_from([0.125, 0.25, 0.5, 0.75, 1.0]), factor=factors)
def test_proportional(head_dim, base, fraction, factor):
    parameters = {"rope_type": "proportional", "rope_theta": base, "partial_rotary_factor": fraction, "factor": factor}
    mine = assert_same(parameters, head_dim=head_dim)
    rotated = int(fraction * head_dim // 2)
    assert np.all(mine[rotated:] == 0) and np.all(mine[:rotated] > 0)  # the rest of the pairs stand still


@DRAWN
@given(head_dim=st.sampled_from([64, 80, 96, 128, 256]), fraction=st.sampled_from([0.25, 0.4, 0.5, 1.0]), base=bases)
def test_partial_rotary_in_gpt_neox_configs(head_dim, fraction, base):
    assume(int(head_dim * fraction) % 2 == 0)
    config = {"model_type": "gpt_neox", "hidden_size": head_dim * 4, "num_attention_heads": 4}
    config.update(rotary_pct=fraction, rotary_emb_base=base, max_position_embeddings=2048)
    module = rotary_module(AutoConfig.for_model(**config))
    scheme = pe_lib.rope_from_config(config)
    assert scheme.rotary_dim == int(head_dim * fraction)
    np.testing.assert_allclose(scheme.frequencies(), module.inv_freq.double().numpy(), rtol=RTOL)
    saved = AutoConfig.for_model(**config).to_dict()  # the 5.x layout: partial_rotary_factor in rope_parameters
    np.testing.assert_allclose(pe_lib.rope_from_config(saved).frequencies(), scheme.frequencies(), rtol=1e-15)


# --- the rotation itself --------------------------------------------------------------------------


@DRAWN
@given(
    head_dim=st.sampled_from([8, 32, 64, 128]),
    n=st.integers(1, 40),
    offset=st.sampled_from([0, 7, 1000, 40000]),
    scaling=st.sampled_from(
        [
            None,
            {"rope_type": "linear", "factor": 4.0},
            {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        ]
    ),
    seed=st.integers(0, 2**31 - 1),
)
def test_apply_rope_half_equals_llamas_apply_rotary_pos_emb(head_dim, n, offset, scaling, seed):
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, 3, n, head_dim, generator=generator, dtype=torch.float64) for _ in range(2))
    positions = torch.arange(offset, offset + n)
    inv_freq = torch.from_numpy(pe_lib.rope_frequencies(head_dim, scaling=scaling))
    theirs_inv = hf_frequencies({"rope_type": "default", "rope_theta": 1e4, **(scaling or {})}, head_dim=head_dim)[0]
    np.testing.assert_allclose(inv_freq.numpy(), theirs_inv, rtol=RTOL)
    # Llama's recipe with float64 angles, so the comparison is of the rotation, not of float32 rounding.
    freqs = positions[:, None].double() * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    q_ref, k_ref = llama_apply_rotary_pos_emb(q, k, emb.cos()[None], emb.sin()[None])
    for x, ref in ((q, q_ref), (k, k_ref)):
        got = pe_lib.apply_rope(x, positions, layout="half", scaling=scaling)
        torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    module = pe_lib.RotaryEmbedding(head_dim, layout="half", scaling=scaling)
    got_q, got_k = module(q, k, positions)
    torch.testing.assert_close(got_q, q_ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(got_k, k_ref, rtol=1e-12, atol=1e-12)


@DRAWN
@given(
    head_dim=st.sampled_from([16, 64, 256]),
    rotary_dim=st.sampled_from([8, 16, 64]),
    n=st.integers(1, 30),
    offset=st.sampled_from([0, 3, 500, 1900]),
    seed=st.integers(0, 2**31 - 1),
)
def test_apply_rope_interleaved_equals_gptjs(head_dim, rotary_dim, n, offset, seed):
    assume(rotary_dim <= head_dim)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, 4, head_dim, generator=generator)  # GPT-J's layout: (batch, seq, heads, head_dim)
    table = create_sinusoidal_positions(2048, rotary_dim)  # float32, as GPT-J runs it
    positions = torch.arange(offset, offset + n)
    sin, cos = torch.split(table[positions][None], rotary_dim // 2, dim=-1)
    rotated = gptj_apply_rotary_pos_emb(x[..., :rotary_dim], sin, cos)
    theirs = torch.cat((rotated, x[..., rotary_dim:]), dim=-1)
    ours_ = pe_lib.apply_rope(x.transpose(1, 2), positions, layout="interleaved", rotary_dim=rotary_dim)
    # GPT-J forms its float32 angles in float32: at position 1,900 they are off by up to ~1e-4 rad.
    torch.testing.assert_close(ours_.transpose(1, 2), theirs, rtol=0, atol=1e-3 if offset else 2e-5)
    angles = positions[:, None].double() * torch.from_numpy(pe_lib.rope_frequencies(rotary_dim))[None]
    np.testing.assert_allclose(
        table[positions].double().numpy(), torch.cat((angles.sin(), angles.cos()), -1).numpy(), atol=2e-4
    )


def test_dynamic_rope_in_apply_rope_sees_the_largest_position_plus_one():
    scaling = {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 16}
    x = np.random.default_rng(0).normal(size=(40, 8))
    inv_freq = hf_frequencies(
        {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}, head_dim=8, max_position_embeddings=16, seq_len=40
    )[0]
    angles = np.arange(40)[:, None] * inv_freq[None, :]
    cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
    rotate_half = np.concatenate((-x[:, 4:], x[:, :4]), -1)
    np.testing.assert_allclose(
        pe_lib.apply_rope(x, layout="half", scaling=scaling), x * cos + rotate_half * sin, atol=1e-5
    )


# --- T5 and ALiBi ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (16, 16), (16, 32), (8, 20), (64, 256), (32, 1000)])
def test_t5_buckets_equal_t5s_in_both_directions(bidirectional, num_buckets, max_distance):
    relative = np.arange(-3 * max_distance, 3 * max_distance + 1)
    theirs = T5Attention._relative_position_bucket(
        torch.from_numpy(relative), bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    ).numpy()
    mine = pe_lib.t5_relative_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    mismatch = np.flatnonzero(mine != theirs)
    assert mismatch.size == 0, f"differs at relative positions {relative[mismatch][:10]}"


@pytest.mark.parametrize("num_heads", [1, 2, 3, 5, 6, 8, 12, 16, 20, 24, 32, 40, 64, 71, 112])
def test_alibi_equals_blooms_build_alibi_tensor(num_heads):
    n = 24
    mask = torch.ones(1, n, dtype=torch.long)
    bloom = build_alibi_tensor(mask, num_heads, torch.float64).reshape(num_heads, n).numpy()  # slope_h * j
    slopes = pe_lib.alibi_slopes(num_heads)
    np.testing.assert_allclose(bloom[:, 1], slopes, rtol=1e-6)  # BLOOM's slopes are float32
    bias = pe_lib.alibi_bias(n, num_heads)
    # BLOOM adds slope * j (the key's position); pe_lib -slope * (i - j): a constant per query row i.
    i, j = np.tril_indices(n)
    np.testing.assert_allclose(bias[:, i, j] - bloom[:, j], -slopes[:, None] * i[None, :], rtol=1e-6, atol=1e-6)


# --- real configs ---------------------------------------------------------------------------------

ROTARY_CLASSES = {
    "llama": "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding",
    "mistral": "transformers.models.mistral.modeling_mistral.MistralRotaryEmbedding",
    "qwen2": "transformers.models.qwen2.modeling_qwen2.Qwen2RotaryEmbedding",
    "gpt_neox": "transformers.models.gpt_neox.modeling_gpt_neox.GPTNeoXRotaryEmbedding",
    "gemma3_text": "transformers.models.gemma3.modeling_gemma3.Gemma3RotaryEmbedding",
    "deepseek_v3": "transformers.models.deepseek_v3.modeling_deepseek_v3.DeepseekV3RotaryEmbedding",
    "phi3": "transformers.models.phi3.modeling_phi3.Phi3RotaryEmbedding",
}


def rotary_module(config):
    import importlib

    path, name = ROTARY_CLASSES[config.model_type].rsplit(".", 1)
    return getattr(importlib.import_module(path), name)(config)


def config_for(entry):
    """A config.json (transformers 4.x keys) for a RoPE model of the course's table, from its cited fields."""
    heads, head_dim, rotary_dim = entry["num_heads"], entry["head_dim"], entry["rotary_dim"]
    config = {"num_attention_heads": heads, "max_position_embeddings": entry["max_position_embeddings"]}
    if entry["layout"] == "interleaved":  # GPT-J: n_embd, n_head, rotary_dim in features
        return {
            "model_type": "gptj",
            "n_embd": heads * head_dim,
            "n_head": heads,
            "rotary_dim": rotary_dim,
            "n_positions": entry["max_position_embeddings"],
        }
    if rotary_dim < head_dim:  # GPT-NeoX, Pythia: rotary_pct and rotary_emb_base
        config.update(model_type="gpt_neox", hidden_size=heads * head_dim, rotary_pct=rotary_dim / head_dim)
        config["rotary_emb_base"] = entry["base"]
        return config
    config.update(
        model_type="llama", hidden_size=heads * head_dim, rope_theta=entry["base"], rope_scaling=entry["scaling"]
    )
    return config


RoPE_MODELS = [entry for entry in load_json("position_schemes.json")["models"] if entry["method"] == "rope"]


@pytest.mark.parametrize("entry", RoPE_MODELS, ids=[entry["name"] for entry in RoPE_MODELS])
def test_rope_from_config_equals_transformers_for_every_rope_model_in_the_table(entry):
    config = config_for(entry)
    scheme = pe_lib.rope_from_config(config)
    assert (scheme.head_dim, scheme.rotary_dim, scheme.base) == (entry["head_dim"], entry["rotary_dim"], entry["base"])
    if config["model_type"] == "gptj":
        table = create_sinusoidal_positions(64, entry["rotary_dim"]).double().numpy()
        angles = np.arange(64)[:, None] * scheme.frequencies()[None, :]
        np.testing.assert_allclose(table, np.concatenate((np.sin(angles), np.cos(angles)), -1), atol=1e-5)
        return
    hf_config = AutoConfig.for_model(**config)
    module = rotary_module(hf_config)
    np.testing.assert_allclose(scheme.frequencies(), module.inv_freq.double().numpy(), rtol=RTOL)
    assert scheme.attention_factor == pytest.approx(module.attention_scaling)
    # The same config written by transformers 5.x (rope_parameters) reads the same.
    saved = hf_config.to_dict()
    assert "rope_parameters" in saved
    again = pe_lib.rope_from_config(saved)
    np.testing.assert_allclose(again.frequencies(), scheme.frequencies(), rtol=1e-15)


# Real configs beyond the table, as their config.json files on the Hugging Face Hub write them.
GEMMA3_4B = {  # google/gemma-3-4b-it, text_config
    "model_type": "gemma3_text",
    "hidden_size": 2560,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
    "sliding_window": 1024,
    "num_hidden_layers": 34,
    "max_position_embeddings": 131072,
}
DEEPSEEK_V3 = {  # deepseek-ai/DeepSeek-V3: MLA with a 64-feature RoPE sub-head and YaRN
    "model_type": "deepseek_v3",
    "hidden_size": 7168,
    "num_attention_heads": 128,
    "qk_rope_head_dim": 64,
    "qk_nope_head_dim": 128,
    "v_head_dim": 128,
    "kv_lora_rank": 512,
    "q_lora_rank": 1536,
    "rope_theta": 10000,
    "max_position_embeddings": 163840,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
}
QWEN25_YARN = {  # Qwen/Qwen2.5-7B-Instruct with the YaRN block its model card gives for 128k
    "model_type": "qwen2",
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "rope_theta": 1000000.0,
    "max_position_embeddings": 32768,
    "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
}
PHI3_LONGROPE = {  # microsoft/Phi-3-mini-128k-instruct's shape; factors drawn here (48 per list)
    "model_type": "phi3",
    "hidden_size": 3072,
    "num_attention_heads": 32,
    "rope_theta": 10000.0,
    "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096,
    "rope_scaling": {
        "type": "longrope",
        "short_factor": list(np.linspace(1.0, 1.2, 48)),
        "long_factor": list(np.linspace(1.0, 60.0, 48)),
    },
}


@pytest.mark.parametrize("config", [DEEPSEEK_V3, QWEN25_YARN, PHI3_LONGROPE], ids=["DeepSeek-V3", "Qwen2.5", "Phi-3"])
@pytest.mark.parametrize("layout", ["4.x", "5.x"])
def test_scaled_real_configs_read_as_transformers_reads_them(config, layout):
    hf_config = AutoConfig.for_model(**config)
    module = rotary_module(hf_config)
    source = config if layout == "4.x" else hf_config.to_dict()
    scheme = pe_lib.rope_from_config(source)
    np.testing.assert_allclose(scheme.frequencies(), module.inv_freq.double().numpy(), rtol=RTOL)
    assert scheme.attention_factor == pytest.approx(module.attention_scaling, rel=1e-12)
    if scheme.rope_type == "longrope":  # past the original length, the long factors
        long_freq, _ = ROPE_INIT_FUNCTIONS["longrope"](hf_config, None, seq_len=4097)
        np.testing.assert_allclose(scheme.frequencies(seq_len=4097), long_freq.double().numpy(), rtol=RTOL)


@pytest.mark.parametrize("layout", ["4.x", "5.x"])
def test_gemma3_has_two_bases_one_per_layer_type(layout):
    hf_config = AutoConfig.for_model(**GEMMA3_4B)
    module = rotary_module(hf_config)
    source = GEMMA3_4B if layout == "4.x" else hf_config.to_dict()
    assert set(pe_lib.rope_layer_types(source)) == {"full_attention", "sliding_attention"}
    for layer_type in ("full_attention", "sliding_attention"):
        scheme = pe_lib.rope_from_config(source, layer_type=layer_type)
        assert scheme.head_dim == 256  # Gemma's head_dim, not hidden_size / heads = 320
        theirs = getattr(module, f"{layer_type}_inv_freq").double().numpy()
        np.testing.assert_allclose(scheme.frequencies(), theirs, rtol=RTOL)
    full = pe_lib.rope_from_config(source, layer_type="full_attention")
    local = pe_lib.rope_from_config(source, layer_type="sliding_attention")
    assert (full.base, full.scaling["factor"], local.base, local.scaling) == (1e6, 8.0, 1e4, None)
    with pytest.raises(ValueError, match="per layer type"):
        pe_lib.rope_from_config(source)


def test_a_config_without_rope_is_refused():
    with pytest.raises(ValueError, match="names no RoPE"):
        pe_lib.rope_from_config({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12})


def test_transformers_float32_frequencies_and_pe_libs_differ_by_rounding_only():
    theirs, _ = hf_frequencies({"rope_type": "default", "rope_theta": 5e5}, head_dim=128)
    mine = pe_lib.rope_frequencies(128, base=5e5)
    worst = float(np.max(np.abs(theirs / mine - 1)))
    assert 0 < worst < 1e-6 and math.isfinite(worst)
