"""pe_lib.partial_rope against the transformers 5.24 code it mirrors, on drawn settings.

Frequencies: NeoX partial RoPE against the default rope init with partial_rotary_factor (Qwen3-Next's,
GLM-4.5's, MiniMax-M2's rotary embeddings), proportional against _compute_proportional_rope_parameters
(Gemma 4). Cos/sin: transformers' rotary modules' (float32 angles) within float32 rounding. The rotation:
Qwen3-Next's apply_rotary_pos_emb (NeoX, half), Gemma 4's (proportional, half: rotate_half over the
whole head) and DeepSeek's apply_rotary_pos_emb_interleave (interleaved pairs), given float64 cos/sin so
that the comparison is of the pairing, not of float32 rounding (tolerance policy of
tests/test_transformers_reference.py).
"""

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from transformers import AutoConfig, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.deepseek_v3.modeling_deepseek_v3 import apply_rotary_pos_emb_interleave
from transformers.models.gemma4.modeling_gemma4 import apply_rotary_pos_emb as gemma4_apply
from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextRotaryEmbedding
from transformers.models.qwen3_next.modeling_qwen3_next import apply_rotary_pos_emb as qwen3_next_apply

import pe_lib
from pe_lib import partial_rope as pr

RTOL = 2e-6  # transformers' float32 inv_freq against pe_lib's float64
DRAWN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
head_dims = st.sampled_from([16, 32, 64, 128, 256, 512])
fractions = st.sampled_from([0.125, 0.25, 0.375, 0.5, 0.75, 1.0])
bases = st.sampled_from([1e4, 1e5, 1e6, 5e6, 1e7])


def neox_config(head_dim, fraction, base):
    return AutoConfig.for_model(
        "qwen3_next", head_dim=head_dim, hidden_size=head_dim * 2, num_attention_heads=2, num_key_value_heads=1,
        partial_rotary_factor=fraction, rope_theta=base, num_hidden_layers=4,
    )  # fmt: skip


def proportional_inv_freq(head_dim, fraction, base):
    config = LlamaConfig(
        hidden_size=head_dim * 2, num_attention_heads=2, head_dim=head_dim,
        rope_parameters={"rope_type": "proportional", "partial_rotary_factor": fraction, "rope_theta": base},
    )  # fmt: skip
    return ROPE_INIT_FUNCTIONS["proportional"](config, None)[0].double().numpy()


@DRAWN
@given(head_dim=head_dims, fraction=fractions, base=bases)
def test_neox_frequencies_equal_the_default_rope_init_with_partial_rotary_factor(head_dim, fraction, base):
    assume(int(head_dim * fraction) % 2 == 0)
    module = Qwen3NextRotaryEmbedding(neox_config(head_dim, fraction, base))
    mine = pr.partial_frequencies(head_dim, fraction, base=base, kind="neox")
    np.testing.assert_allclose(mine, module.inv_freq.double().numpy(), rtol=RTOL, atol=0)
    np.testing.assert_allclose(mine, pe_lib.rope_frequencies(int(head_dim * fraction), base=base), rtol=1e-15)


@DRAWN
@given(head_dim=head_dims, fraction=fractions, base=bases)
def test_proportional_frequencies_equal_transformers_proportional_rope(head_dim, fraction, base):
    mine = pr.partial_frequencies(head_dim, fraction, base=base, kind="proportional")
    theirs = proportional_inv_freq(head_dim, fraction, base)
    np.testing.assert_allclose(mine, theirs, rtol=RTOL, atol=0)
    turning = int(fraction * head_dim // 2)
    assert np.count_nonzero(mine) == turning and mine.size == head_dim // 2
    # the rotated pairs keep the full head's ladder: the same as full RoPE's fastest pairs
    np.testing.assert_allclose(mine[:turning], pe_lib.rope_frequencies(head_dim, base=base)[:turning], rtol=1e-15)


@DRAWN
@given(head_dim=head_dims, fraction=fractions, base=bases, offset=st.sampled_from([0, 7, 300, 2000]))
def test_cos_sin_of_the_rotary_module_agree_to_float32_rounding(head_dim, fraction, base, offset):
    assume(int(head_dim * fraction) % 2 == 0)
    config = neox_config(head_dim, fraction, base)
    positions = torch.arange(offset, offset + 20)
    cos, sin = Qwen3NextRotaryEmbedding(config)(torch.zeros(1, dtype=torch.float32), positions[None])
    angles = positions[:, None].double().numpy() * pr.partial_frequencies(head_dim, fraction, base=base)[None]
    # float32 angles: rounding of p * theta (2**-24 relative) and of theta (RTOL), both grow with p
    atol = 1e-6 + (RTOL + 2**-23) * (offset + 20)
    np.testing.assert_allclose(cos[0].double().numpy(), np.cos(np.concatenate([angles] * 2, -1)), rtol=0, atol=atol)
    np.testing.assert_allclose(sin[0].double().numpy(), np.sin(np.concatenate([angles] * 2, -1)), rtol=0, atol=atol)


def _half_cos_sin(theta, positions):
    angles = positions[:, None].double() * torch.from_numpy(theta)[None]
    emb = torch.cat((angles, angles), dim=-1)
    return emb.cos()[None], emb.sin()[None]


@DRAWN
@given(
    head_dim=head_dims, fraction=fractions, base=bases, n=st.integers(1, 12),
    offset=st.sampled_from([0, 5, 1000]), seed=st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_neox_half_equals_qwen3_nexts_apply_rotary_pos_emb(head_dim, fraction, base, n, offset, seed):
    assume(int(head_dim * fraction) % 2 == 0)
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(2, 3, n, head_dim, generator=generator, dtype=torch.float64) for _ in range(2))
    positions = torch.arange(offset, offset + n)
    cos, sin = _half_cos_sin(pr.partial_frequencies(head_dim, fraction, base=base), positions)
    q_ref, k_ref = qwen3_next_apply(q, k, cos, sin)
    for x, ref in ((q, q_ref), (k, k_ref)):
        got = pr.apply_partial_rope(x, positions, fraction=fraction, base=base, kind="neox", layout="half")
        torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(
            pe_lib.apply_rope(x, positions, base=base, layout="half", rotary_dim=int(head_dim * fraction)),
            got, rtol=1e-12, atol=1e-12,
        )  # fmt: skip


@DRAWN
@given(
    head_dim=head_dims, fraction=fractions, base=bases, n=st.integers(1, 12),
    offset=st.sampled_from([0, 5, 1000]), seed=st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_proportional_half_equals_gemma4s_apply_rotary_pos_emb(head_dim, fraction, base, n, offset, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, 3, head_dim, generator=generator, dtype=torch.float64)  # Gemma 4: (batch, seq, heads, dim)
    positions = torch.arange(offset, offset + n)
    cos, sin = _half_cos_sin(proportional_inv_freq(head_dim, fraction, base), positions)
    ref = gemma4_apply(x, cos, sin, unsqueeze_dim=2)
    got = pr.apply_partial_rope(x.transpose(1, 2), positions, fraction=fraction, base=base, kind="proportional")
    # transformers' inv_freq is float32: the comparison is to its rounding at these positions
    torch.testing.assert_close(got.transpose(1, 2), ref, rtol=0, atol=1e-12 + RTOL * (offset + n))


@DRAWN
@given(
    head_dim=head_dims, fraction=fractions, base=bases, kind=st.sampled_from(pr.KINDS), n=st.integers(1, 12),
    offset=st.sampled_from([0, 5, 1000]), seed=st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_interleaved_equals_deepseeks_apply_rotary_pos_emb_interleave(head_dim, fraction, base, kind, n, offset, seed):
    assume(kind == "proportional" or int(head_dim * fraction) % 2 == 0)
    generator = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, 2, n, head_dim, generator=generator, dtype=torch.float64) for _ in range(2))
    positions = torch.arange(offset, offset + n)
    theta = pr.partial_frequencies(head_dim, fraction, base=base, kind=kind)
    span = 2 * theta.size  # the features the pairing covers
    cos, sin = _half_cos_sin(theta, positions)
    q_ref, k_ref = apply_rotary_pos_emb_interleave(q[..., :span], k[..., :span], cos, sin)
    for x, ref in ((q, q_ref), (k, k_ref)):
        got = pr.apply_partial_rope(x, positions, fraction=fraction, base=base, kind=kind, layout="interleaved")
        # DeepSeek's function writes its output de-interleaved: [turned evens | turned odds]
        order = torch.cat([torch.arange(0, span, 2), torch.arange(1, span, 2)])
        torch.testing.assert_close(got[..., order], ref, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(got[..., span:], x[..., span:], rtol=0, atol=0)


@DRAWN
@given(
    head_dim=st.sampled_from([16, 64, 128, 512]), fraction=st.sampled_from([0.25, 0.5, 0.75, 1.0]), base=bases,
    layout=st.sampled_from(["half", "interleaved"]), seed=st.integers(0, 2**31 - 1),
)  # fmt: skip
def test_proportional_is_neox_at_base_to_the_p_after_a_permutation(head_dim, fraction, base, layout, seed):
    x = np.random.default_rng(seed).normal(size=(3, 9, head_dim))
    positions = np.arange(9) * 311.0
    sigma = pr.proportional_as_neox_order(head_dim, fraction, layout=layout)
    assert sorted(sigma.tolist()) == list(range(head_dim))
    proportional = pr.apply_partial_rope(x, positions, fraction=fraction, base=base, kind="proportional", layout=layout)
    neox = pr.apply_partial_rope(x[..., sigma], positions, fraction=fraction, base=base**fraction, layout=layout)
    np.testing.assert_allclose(neox, proportional[..., sigma], atol=1e-9)
    if fraction < 1:  # at the config's own base instead, NeoX computes something else
        wrong = pr.apply_partial_rope(x[..., sigma], positions, fraction=fraction, base=base, layout=layout)
        assert np.abs(wrong - proportional[..., sigma]).max() > 1e-3


@DRAWN
@given(head_dim=st.sampled_from([8, 32, 64]), fraction=fractions, kind=st.sampled_from(pr.KINDS),
       layout=st.sampled_from(["half", "interleaved"]), seed=st.integers(0, 2**31 - 1))  # fmt: skip
def test_half_layout_order_runs_any_plan_as_full_rope_on_permuted_features(head_dim, fraction, kind, layout, seed):
    assume(kind == "proportional" or int(head_dim * fraction) % 2 == 0)
    assume(int(fraction * head_dim // 2) >= 1)
    plan = pr.pair_plan(head_dim, fraction, base=1e4, kind=kind, layout=layout)
    order, theta = pr.half_layout_order(plan)
    x = np.random.default_rng(seed).normal(size=(2, 7, head_dim))
    positions = np.arange(7) * 13.0
    half = head_dim // 2
    y = x[..., order]
    cos, sin = np.cos(positions[:, None] * theta), np.sin(positions[:, None] * theta)
    a, b = y[..., :half], y[..., half:]
    expected = np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)
    np.testing.assert_allclose(pr.apply_pairs(x, plan, positions)[..., order], expected, atol=1e-12)


def test_torch_half_precision_is_rotated_in_float32_and_input_is_not_modified():
    x = torch.randn(2, 5, 64, dtype=torch.float64)
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        low = x.to(dtype)
        kept = low.clone()
        got = pr.apply_partial_rope(low, torch.arange(5) * 100, fraction=0.5, kind="proportional")
        assert got.dtype == dtype and torch.equal(low, kept)
        exact = pr.apply_partial_rope(low.double(), np.arange(5) * 100.0, fraction=0.5, kind="proportional")
        torch.testing.assert_close(got.double(), exact.to(dtype).double(), rtol=0, atol=0.02)


def test_sizes_follow_transformers_rounding_and_refuse_odd_or_empty_parts():
    assert pr.rotated_size(512, 0.25, "proportional") == 64 and pr.rotated_size(256, 0.25, "neox") == 64
    assert pr.rotated_size(100, 0.3, "proportional") == 15  # int(0.3 * 100 // 2)
    assert pr.rotated_size(100, 0.3, "neox") == 30
    with pytest.raises(ValueError, match="odd number"):
        pr.rotated_size(100, 0.33, "neox")  # int(33.0): transformers would make 17 frequencies for 33 features
    with pytest.raises(ValueError, match="turns no pair"):
        pr.rotated_size(8, 0.1, "proportional")
    with pytest.raises(ValueError, match="fraction must be in"):
        pr.rotated_size(8, 0.0)


def test_a_plan_with_repeated_or_outside_features_is_refused():
    with pytest.raises(ValueError, match="distinct feature indices"):
        pr.PairPlan(4, np.array([[0, 1], [1, 2]]), np.array([1.0, 0.5]))
    with pytest.raises(ValueError, match="distinct feature indices"):
        pr.PairPlan(4, np.array([[0, 4]]), np.array([1.0]))
    with pytest.raises(ValueError, match="pairs must be"):
        pr.PairPlan(4, np.array([0, 1]), np.array([1.0]))
    with pytest.raises(TypeError, match="plan must be a PairPlan"):
        pr.apply_pairs(np.zeros((2, 4)), "half")
