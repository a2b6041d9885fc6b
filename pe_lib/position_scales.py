"""What 2025-26 models multiply besides the rotation: the query by a length-dependent temperature, RoPE's
frequencies by learned per-pair scales (notebook 12). NumPy; each mirrors the transformers code named.

    beta_log_scale(positions, beta, original_max_position_embeddings)
        Ministral 3 and Mistral Small 4 (rope_parameters["llama_4_scaling_beta"]): every layer multiplies
        its rotated query by 1 + beta * ln(1 + floor(p / L)) (transformers' get_llama_4_attn_scale), so the
        logits of a query at position p grow by that factor: 1 inside the first L positions, 1 + beta ln 2
        from L to 2L - 1, and so on. Llama 4's own rule (pe_lib.layer_schemes.llama4_attention_scale) reads
        floor((p + 1) / floor_scale) and applies only in its layers without RoPE.
    learned_log_scale(positions, scale, bias)
        Mistral Large 4 (MistralLarge4TextSoftmaxScaling): a learned scale and bias per head,
        q times scale_h * ln(p + 1) + bias_h, in every attention layer and its indexer.
    learned_frequencies(inv_freq, alpha)
        Mistral Large 4's rotary embedding: theta_i * exp(alpha_i), alpha a learned parameter per pair
        (initialised at 0, so training starts from the config's frequencies).

Why a log: the softmax over n keys spreads out as n grows unless the logits grow like ln n
(Nakanishi 2025, "Scalable-Softmax Is Superior for Attention", arXiv 2501.19399).
"""

import numpy as np

from . import _validate


def _positions(positions):
    positions = _validate.real_array("positions", np.atleast_1d(positions), 1)
    if np.any(positions < 0):
        raise ValueError(f"positions must be >= 0, got {positions.min()}")
    return positions


def beta_log_scale(positions, beta=0.1, original_max_position_embeddings=16384):
    """The query scale 1 + beta * ln(1 + floor(p / L)) at each position p, float64 (positions.shape).

    L: rope_parameters["original_max_position_embeddings"] (Ministral 3's default config 16,384; Mistral
    Small 4's 8,192). beta: rope_parameters["llama_4_scaling_beta"] (0.1 in both).
    """
    positions = _positions(positions)
    beta = _validate.finite_real("beta", beta)
    length = _validate.positive_int("original_max_position_embeddings", original_max_position_embeddings)
    return 1.0 + beta * np.log1p(np.floor(positions / length))


def learned_log_scale(positions, scale, bias):
    """(heads, n): scale_h * ln(p + 1) + bias_h, what Mistral Large 4 multiplies head h's query at position p by."""
    positions = _positions(positions)
    scale = _validate.real_array("scale", np.atleast_1d(scale), 1)
    bias = _validate.real_array("bias", np.atleast_1d(bias), 1)
    if scale.shape != bias.shape:
        raise ValueError(f"scale and bias must hold one number per head each, got {scale.shape} and {bias.shape}")
    return scale[:, None] * np.log(positions + 1.0)[None, :] + bias[:, None]


def learned_frequencies(inv_freq, alpha):
    """theta_i * exp(alpha_i): Mistral Large 4's frequencies from the config's inv_freq and a learned alpha per pair."""
    inv_freq = _validate.real_array("inv_freq", inv_freq, 1)
    alpha = _validate.real_array("alpha", alpha, 1)
    if alpha.shape != inv_freq.shape:
        raise ValueError(f"alpha must hold one number per pair ({inv_freq.shape[0]}), got {alpha.shape[0]}")
    return inv_freq * np.exp(alpha)
