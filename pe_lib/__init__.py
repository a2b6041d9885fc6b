"""pe_lib: the tested library behind the course "Positional Encoding, interactively"."""

from .attention import self_attention, softmax
from .encodings import (
    binary_encoding,
    dot_product_similarity,
    frequencies,
    integer_encoding,
    normalized_encoding,
    relative_rotation,
    sinusoidal_encoding,
    wavelengths,
)
from .mla import MLA, MLAConfig
from .modules import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, TransformerEmbedding
from .omni_positions import omni_position_ids
from .partial_rope import apply_partial_rope, partial_frequencies
from .position_scales import beta_log_scale, learned_frequencies
from .relative import (
    RotaryEmbedding,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    t5_relative_bucket,
)
from .rope_config import RopeScheme, rope_from_config, rope_layer_types
from .rope_scaling import ROPE_TYPES, rope_attention_factor, rope_frequencies, yarn_attention_scale

__all__ = [
    "LearnedPositionalEmbedding",
    "MLA",
    "MLAConfig",
    "ROPE_TYPES",
    "RopeScheme",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "TransformerEmbedding",
    "alibi_bias",
    "alibi_slopes",
    "apply_partial_rope",
    "apply_rope",
    "beta_log_scale",
    "binary_encoding",
    "dot_product_similarity",
    "frequencies",
    "integer_encoding",
    "learned_frequencies",
    "normalized_encoding",
    "omni_position_ids",
    "partial_frequencies",
    "relative_rotation",
    "rope_attention_factor",
    "rope_frequencies",
    "rope_from_config",
    "rope_layer_types",
    "self_attention",
    "sinusoidal_encoding",
    "softmax",
    "t5_relative_bucket",
    "wavelengths",
    "yarn_attention_scale",
]
