"""What half precision does to positions: exact integers, RoPE angles, cached cos/sin tables.

A float with p significant bits holds every integer up to 2**p exactly and then only every
second, fourth, ... one: bfloat16 (p = 8) stops at 256, float16 (p = 11) at 2,048, float32 (p = 24)
at 16,777,216. A RoPE angle position * theta_i inherits that: the recipes below measure how far a
half-precision inverse frequency, a half-precision angle, a float32 angle or a half-precision
cos/sin cache is from the float64 angle. Rounding is torch's (round to nearest, ties to even).
pe_lib itself forms every angle in float64 (relative.apply_rope); these are the recipes it avoids.
"""

import math

import numpy as np
import torch

from . import _validate

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
RECIPES = ("inv_freq", "angle", "float32")


def _dtype(name):
    return DTYPES[_validate.choice("dtype", name, tuple(DTYPES))]


def significant_bits(dtype):
    """Significant bits of a float format, the implicit leading one included: bfloat16 8, float16 11, float32 24."""
    return 1 - int(math.log2(torch.finfo(_dtype(dtype)).eps))


def largest_exact_integer(dtype):
    """The integer n up to which every integer 0..n is exact in `dtype` (n + 1 is not): 2 ** significant_bits."""
    return 2 ** significant_bits(dtype)


def round_to(values, dtype):
    """`values` (float64) as `dtype` stores them, returned as float64 (round to nearest, ties to even)."""
    array = np.asarray(_validate.as_numpy(values), dtype=np.float64)
    return torch.from_numpy(array).to(_dtype(dtype)).double().numpy()


def colliding_positions(position, dtype, *, window=64):
    """The integer positions within `window` of `position` that `dtype` stores as the same number as `position`."""
    position = _validate.count("position", position)
    window = _validate.positive_int("window", window)
    nearby = np.arange(max(0, position - window), position + window + 1)
    stored = round_to(nearby, dtype)
    return nearby[stored == round_to([position], dtype)[0]]


def _theta(head_dim, base):
    head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
    return _validate.base(base) ** (-np.arange(0, head_dim, 2) / head_dim)


def rope_angle_error(positions, head_dim=128, *, base=10000.0, recipe="angle", dtype="bfloat16"):
    """|angle - position * theta_i| in radians, the largest over the pairs, for each position: shape (n,).

    recipe "inv_freq": theta_i stored in `dtype`, then multiplied by the position in float32
        (a half-precision inv_freq buffer in float32 code);
    "angle": the exact angle rounded once to `dtype` (the best any half-precision angle can be);
    "float32": theta_i computed in float32 by torch, times the float32 position, in float32 (dtype ignored).
    The reference is float64. An error of pi turns a pair to the opposite of where it belongs.
    """
    positions = _validate.real_array("positions", positions, ndim=1)
    recipe = _validate.choice("recipe", recipe, RECIPES)
    theta = _theta(head_dim, base)
    exact = np.outer(positions, theta)
    if recipe == "inv_freq":
        stored = torch.from_numpy(round_to(theta, dtype)).float()
        angles = torch.outer(torch.from_numpy(positions).float(), stored).double().numpy()
    elif recipe == "angle":
        angles = round_to(exact, dtype)
    else:
        steps = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
        inv_freq = 1.0 / (float(base) ** steps)
        angles = torch.outer(torch.from_numpy(positions).float(), inv_freq).double().numpy()
    return np.abs(angles - exact).max(axis=1)


def cached_table_error(positions, head_dim=128, *, base=10000.0, dtype="bfloat16"):
    """The phase error of cos/sin tables stored in `dtype` (from exact angles), largest over pairs: shape (n,).

    The angle the stored pair (cos, sin) points at, against the exact one (radians, wrapped to [0, pi]).
    It depends on the rounding of values in [-1, 1], not on the position.
    """
    positions = _validate.real_array("positions", positions, ndim=1)
    exact = np.outer(positions, _theta(head_dim, base))
    cos, sin = round_to(np.cos(exact), dtype), round_to(np.sin(exact), dtype)
    return np.abs(np.angle((cos + 1j * sin) * np.exp(-1j * exact))).max(axis=1)


def first_position_reaching(positions, errors, threshold):
    """The first of `positions` whose error is >= threshold, or None if none is."""
    errors = np.asarray(errors)
    hits = np.flatnonzero(errors >= threshold)
    return None if hits.size == 0 else int(np.asarray(positions)[hits[0]])
