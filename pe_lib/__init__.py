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

__all__ = [
    "LearnedPositionalEmbedding",
    "SinusoidalPositionalEncoding",
    "TransformerEmbedding",
    "binary_encoding",
    "dot_product_similarity",
    "frequencies",
    "integer_encoding",
    "normalized_encoding",
    "relative_rotation",
    "self_attention",
    "sinusoidal_encoding",
    "softmax",
    "wavelengths",
]
