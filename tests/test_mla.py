"""pe_lib.mla against transformers 5.24's DeepseekV3Attention (MLA) on drawn sizes, and the absorption argument.

The attention outputs are compared with the same weights, positions and causal mask (eager attention),
with and without a low-rank query, interleaved and half-split rope pairs, with and without YaRN (DeepSeek's
mscale, which also scales the softmax), in float32: agreement to 2e-5 relative to the outputs' scale.
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

from pe_lib import mla

DRAWN = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "mscale": 1.0,
        "mscale_all_dim": 1.0, "beta_fast": 32.0, "beta_slow": 1.0}  # fmt: skip


def pair(heads, nope, rope, v, latent, q_lora, interleave, scaling, seed):
    """(transformers' DeepseekV3Attention, its rotary embedding, pe_lib's MLA with the same weights)."""
    parameters = {"rope_type": "default", "rope_theta": 1e4} if scaling is None else {**scaling, "rope_theta": 1e4}
    config = DeepseekV3Config(
        hidden_size=64, num_attention_heads=heads, num_key_value_heads=heads, kv_lora_rank=latent, q_lora_rank=q_lora,
        qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=v, rope_interleave=interleave,
        rope_parameters=parameters, max_position_embeddings=256, attn_implementation="eager",
    )  # fmt: skip
    torch.manual_seed(seed)
    theirs = DeepseekV3Attention(config, 0).eval()
    for parameter in theirs.parameters():
        torch.nn.init.normal_(parameter, std=0.2)
    ours = mla.MLA(mla.MLAConfig(
        dim=64, n_heads=heads, kv_lora_rank=latent, qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=v,
        q_lora_rank=q_lora, rope_scaling=scaling, layout="interleaved" if interleave else "half",
    ))  # fmt: skip
    state = {"kv_a.weight": theirs.kv_a_proj_with_mqa.weight, "kv_norm.weight": theirs.kv_a_layernorm.weight,
             "kv_b.weight": theirs.kv_b_proj.weight, "o.weight": theirs.o_proj.weight}  # fmt: skip
    if q_lora:
        state.update({"q_a.weight": theirs.q_a_proj.weight, "q_norm.weight": theirs.q_a_layernorm.weight,
                      "q_b.weight": theirs.q_b_proj.weight})  # fmt: skip
    else:
        state["q.weight"] = theirs.q_proj.weight
    ours.load_state_dict(state)
    return theirs, DeepseekV3RotaryEmbedding(config), ours.eval()


@DRAWN
@given(
    heads=st.sampled_from([1, 2, 4]), nope=st.sampled_from([8, 16]), rope=st.sampled_from([4, 8, 16]),
    v=st.sampled_from([8, 12]), latent=st.sampled_from([16, 32]), q_lora=st.sampled_from([None, 24]),
    interleave=st.booleans(), scaling=st.sampled_from([None, YARN]), n=st.integers(1, 10),
    offset=st.sampled_from([0, 17, 150]), seed=st.integers(0, 2**16),
)  # fmt: skip
def test_mla_equals_deepseek_v3_attention(heads, nope, rope, v, latent, q_lora, interleave, scaling, n, offset, seed):
    theirs, rotary, ours = pair(heads, nope, rope, v, latent, q_lora, interleave, scaling, seed)
    x = torch.randn(2, n, 64, generator=torch.Generator().manual_seed(seed))
    positions = torch.arange(offset, offset + n)
    mask = torch.full((n, n), float("-inf")).triu(1)[None, None]
    with torch.no_grad():
        ref = theirs(x, rotary(x, positions[None].expand(2, -1)), mask)[0]
        expanded = ours(x, positions.double())
        absorbed = ours.forward_absorbed(x, positions.double())
    scale = ref.abs().max().item() + 1e-6
    assert ours.config.softmax_scale == pytest.approx(theirs.scaling, rel=1e-12)
    # float32 angles in transformers' rotary module: about 1e-5 of an angle at position 160
    for got in (expanded, absorbed):
        torch.testing.assert_close(got, ref, rtol=0, atol=2e-5 * scale + 4e-7 * (offset + n) * scale)


def test_the_absorption_argument_in_numbers():
    torch.manual_seed(0)
    model = mla.MLA(mla.MLAConfig(dim=64, n_heads=4, kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8,
                                  v_head_dim=16, q_lora_rank=24))  # fmt: skip
    x = torch.randn(2, 12, 64)
    errors = mla.absorption_errors(model, x, torch.arange(12) * 50.0)
    assert errors["no positions"] < 1e-12 * errors["score scale"]  # W_UK folds into the query exactly
    assert errors["rope on the whole key"] > 0.1 * errors["score scale"]  # a turn between them: it does not
    assert errors["decoupled rope"] < 1e-12 * errors["output scale"]  # the decoupled form restores it
    assert model.q_b.weight.dtype == torch.float32  # the float64 copy did not change the model


def test_absorbed_and_expanded_forms_agree_in_float32_and_at_any_positions():
    torch.manual_seed(1)
    model = mla.MLA(mla.MLAConfig(dim=32, n_heads=2, kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4,
                                  v_head_dim=8, layout="half"))  # fmt: skip
    x = torch.randn(1, 9, 32)
    with torch.no_grad():
        for positions in (None, torch.arange(9) * 1000.0):
            a, b = model(x, positions), model.forward_absorbed(x, positions)
            torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


def test_the_latent_cache_is_much_smaller_than_full_keys_and_values():
    cached, full = mla.cache_size(128, 128, 64, 128, 512)  # DeepSeek-V3's sizes
    assert (cached, full) == (576, 128 * (128 + 64 + 128))
    assert full / cached > 70


def test_a_decoupled_rope_part_of_zero_features_is_nope():
    model = mla.MLA(mla.MLAConfig(dim=16, n_heads=2, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=0,
                                  v_head_dim=4))  # fmt: skip
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        torch.testing.assert_close(model(x, torch.arange(5) * 7.0), model(x), rtol=0, atol=1e-6)


def test_bad_sizes_and_inputs_are_refused():
    with pytest.raises(ValueError, match="qk_rope_head_dim must be even"):
        mla.MLAConfig(dim=8, n_heads=1, kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=3, v_head_dim=4)
    with pytest.raises(ValueError, match="layout must be one of"):
        mla.MLAConfig(dim=8, n_heads=1, kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=2, v_head_dim=4,
                      layout="neox")  # fmt: skip
    model = mla.MLA(mla.MLAConfig(dim=8, n_heads=1, kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=2,
                                  v_head_dim=4))  # fmt: skip
    with pytest.raises(ValueError, match="x must have shape"):
        model(torch.zeros(1, 3, 7))
    with pytest.raises(TypeError, match="config must be an MLAConfig"):
        mla.MLA({"dim": 8})
    assert np.isfinite(model(torch.zeros(1, 3, 8)).detach().numpy()).all()
