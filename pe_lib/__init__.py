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
from .modules import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, TransformerEmbedding
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
    "ROPE_TYPES",
    "RopeScheme",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "TransformerEmbedding",
    "alibi_bias",
    "alibi_slopes",
    "apply_rope",
    "binary_encoding",
    "dot_product_similarity",
    "frequencies",
    "integer_encoding",
    "normalized_encoding",
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
