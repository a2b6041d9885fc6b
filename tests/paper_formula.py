"""The paper's formula, written out literally in float64: the reference the tests compare against."""

import numpy as np


def paper_table(positions, d_model, base=10000.0):
    """PE(pos, 2i) = sin(pos / base**(2i/d)), PE(pos, 2i+1) = cos(pos / base**(2i/d)), column by column."""
    positions = np.asarray(positions, dtype=np.float64)
    table = np.empty((positions.size, d_model))
    for column in range(d_model):
        i = column // 2
        angle = positions / base ** (2 * i / d_model)
        table[:, column] = np.sin(angle) if column % 2 == 0 else np.cos(angle)
    return table
