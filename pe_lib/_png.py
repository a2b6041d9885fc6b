"""A fast PNG encoder for the explorers' frames: filter "none", zlib level 3.

Pillow picks a filter per row (adaptive filtering), which costs more than the compression
itself for a figure of flat colours and text: 10-19 ms per explorer frame here, against 3-6 ms
without filtering, and the files come out within 5% of the same size. Every PNG reader decodes it.
"""

import struct
import zlib

import numpy as np

_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_rgba(pixels):
    """PNG bytes of an (height, width, 4) uint8 RGBA array (e.g. a canvas's buffer_rgba())."""
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 4 or 0 in pixels.shape:
        raise ValueError(
            f"pixels must be a non-empty (height, width, 4) uint8 array, got {pixels.dtype} {pixels.shape}"
        )
    height, width, _ = pixels.shape
    rows = np.zeros((height, 1 + 4 * width), dtype=np.uint8)  # each row starts with its filter type, 0: none
    rows[:, 1:] = pixels.reshape(height, 4 * width)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)  # 8 bits per channel, RGBA, no interlace
    return (
        _SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 3)) + _chunk(b"IEND", b"")
    )
