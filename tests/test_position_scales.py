"""pe_lib.position_scales against transformers 5.24: Ministral 3's / Mistral Small 4's get_llama_4_attn_scale,
Mistral Large 4's learned softmax scaling and its learned per-pair frequency scales (its rotary embedding)."""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers import AutoConfig
from transformers.models.ministral3.modeling_ministral3 import get_llama_4_attn_scale
from transformers.models.mistral4.modeling_mistral4 import get_llama_4_attn_scale as mistral4_scale
from transformers.models.mistral_large4.modeling_mistral_large4 import (
    MistralLarge4TextRotaryEmbedding,
    MistralLarge4TextSoftmaxScaling,
)

from pe_lib import layer_schemes, position_scales

DRAWN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@DRAWN
@given(
    beta=st.sampled_from([0.05, 0.1, 0.125, 0.3]),
    length=st.sampled_from([512, 4096, 8192, 16384]),
    positions=st.lists(st.integers(0, 3_000_000), min_size=1, max_size=20),
)
def test_beta_log_scale_equals_transformers_get_llama_4_attn_scale(beta, length, positions):
    ids = torch.tensor([positions])
    mine = position_scales.beta_log_scale(positions, beta, length)
    for function in (get_llama_4_attn_scale, mistral4_scale):  # Ministral 3 and Mistral Small 4 share it
        theirs = function(ids, beta, length)[0, 0, :, 0].double().numpy()
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=0)  # transformers forms it in float32


def test_the_scale_is_one_inside_the_first_block_and_grows_like_the_log_of_the_blocks():
    scale = position_scales.beta_log_scale([0, 16383, 16384, 32767, 32768, 16384 * 1000], 0.1, 16384)
    np.testing.assert_allclose(scale, [1, 1, 1 + 0.1 * np.log(2), 1 + 0.1 * np.log(2), 1 + 0.1 * np.log(3),
                                       1 + 0.1 * np.log(1001)])  # fmt: skip
    # Llama 4's own rule reads (p + 1) / floor_scale: one position earlier, and only in its NoPE layers
    llama4 = layer_schemes.llama4_attention_scale([16382, 16383], floor_scale=16384, attn_scale=0.1)
    assert llama4[0] == 1 and llama4[1] > 1 and position_scales.beta_log_scale(16383, 0.1, 16384)[0] == 1


@DRAWN
@given(heads=st.integers(1, 6), seed=st.integers(0, 2**16), offset=st.sampled_from([0, 100, 100_000]))
def test_learned_log_scale_equals_mistral_large4s_softmax_scaling(heads, seed, offset):
    torch.manual_seed(seed)
    module = MistralLarge4TextSoftmaxScaling(heads)
    torch.nn.init.normal_(module.scale)
    torch.nn.init.normal_(module.bias)
    positions = torch.arange(offset, offset + 7)
    query = torch.ones(1, heads, 7, 3)
    with torch.no_grad():
        theirs = module(query, positions[None], head_dim_first=True)[0, :, :, 0].double().numpy()
    mine = position_scales.learned_log_scale(
        positions.numpy(), module.scale.detach().numpy(), module.bias.detach().numpy()
    )
    np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-5)


@DRAWN
@given(seed=st.integers(0, 2**16), head_dim=st.sampled_from([16, 64]))
def test_learned_frequencies_equal_mistral_large4s_rotary_embedding(seed, head_dim):
    config = AutoConfig.for_model("mistral_large4_text", num_hidden_layers=4, qk_rope_head_dim=head_dim,
                                  rope_parameters={"rope_type": "default", "rope_theta": 1e4})  # fmt: skip
    module = MistralLarge4TextRotaryEmbedding(config)
    torch.manual_seed(seed)
    torch.nn.init.normal_(module.alpha, std=0.5)
    positions = torch.arange(0, 40, 3)
    with torch.no_grad():
        cos, sin = module(torch.zeros(1), positions[None])
    theta = position_scales.learned_frequencies(
        module.inv_freq.double().numpy(), module.alpha.detach().double().numpy()
    )
    angles = positions.double().numpy()[:, None] * theta
    np.testing.assert_allclose(cos[0, :, : head_dim // 2].double().numpy(), np.cos(angles), atol=2e-5)
    np.testing.assert_allclose(sin[0, :, : head_dim // 2].double().numpy(), np.sin(angles), atol=2e-5)
    assert not np.allclose(theta, module.inv_freq.double().numpy())  # a learned alpha moves every pair


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="positions must be >= 0"):
        position_scales.beta_log_scale([-1], 0.1, 16)
    with pytest.raises(TypeError, match="original_max_position_embeddings must be a positive int"):
        position_scales.beta_log_scale([1], 0.1, 16.5)
    with pytest.raises(ValueError, match="one number per head"):
        position_scales.learned_log_scale([1, 2], [1.0, 2.0], [0.0])
    with pytest.raises(ValueError, match="one number per pair"):
        position_scales.learned_frequencies([1.0, 0.1], [0.0])
