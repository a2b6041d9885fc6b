"""What half precision does to positions: exact integers, and the query-key angle a RoPE score depends on.

A float with p significant bits holds every integer up to 2**p exactly and then only every
second, fourth, ... one: bfloat16 (p = 8) stops at 256, float16 (p = 11) at 2,048, float32 (p = 24)
at 16,777,216. A RoPE score q_m . k_n depends on the angle *difference* phi_i(m) - phi_i(n), which
exact arithmetic makes (m - n) * theta_i. The recipes below measure how far that difference lands
from (m - n) * theta_i, wrapped to [0, pi], when the frequencies, the positions, the angles or the
cos/sin table are kept in half precision (or the angles in float32). Rounding is torch's (round to
nearest, ties to even). pe_lib itself forms every angle in float64 (relative.apply_rope).
"""

import math

import numpy as np
import torch

from . import _validate

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
RECIPES = ("angle", "inv_freq", "autocast", "float32", "cache")


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


def _stored_angles(positions, theta, recipe, dtype):
    """phi_i(p) as `recipe` stores it, as float64 (n, pairs); for "cache", where its rounded cos/sin point."""
    exact = np.outer(positions, theta)
    if recipe == "angle":
        return round_to(exact, dtype)
    if recipe == "cache":
        return np.angle(round_to(np.cos(exact), dtype) + 1j * round_to(np.sin(exact), dtype))
    if recipe == "float32":
        stored, position = torch.from_numpy(theta).float(), torch.from_numpy(positions).float()
        return torch.outer(position, stored).double().numpy()
    stored = torch.from_numpy(theta).to(_dtype(dtype))
    if recipe == "inv_freq":  # the buffer rounded, positions and product in float32
        return torch.outer(torch.from_numpy(positions).float(), stored.float()).double().numpy()
    position = torch.from_numpy(positions).to(_dtype(dtype))  # "autocast": both rounded, product rounded too
    return torch.outer(position.float(), stored.float()).to(_dtype(dtype)).double().numpy()


def score_angle_error(query_positions, key_positions, theta, *, recipe="angle", dtype="bfloat16"):
    """The error of the query-key angle a RoPE score depends on, largest over the pairs, wrapped to [0, pi]: shape (n,).

    For each (m, n) of `query_positions`, `key_positions` (1-D, the same length, or one of them a single
    position) and each frequency theta_i of `theta` (1-D, e.g. relative.rope_frequencies(rotary_dim, base=...,
    scaling=...)): |(phi_i(m) - phi_i(n)) - (m - n) theta_i| taken modulo 2 pi into [0, pi], where phi is
    recipe "angle": the exact angle rounded once to `dtype` (the best any half-precision angle can be);
    "inv_freq": theta_i stored in `dtype` (a half-precision inv_freq buffer), positions and product in float32;
    "autocast": positions and theta_i rounded to `dtype` and the product too (a matmul under bfloat16 autocast);
    "float32": theta_i, positions and product in float32 (`dtype` ignored);
    "cache": exact angles, cos and sin stored in `dtype` (the angle the stored pair points at).
    The reference is float64. An error of pi turns the pair's contribution to the opposite direction. nan
    where `dtype` overflows (float16 angles past 65,504).
    """
    queries = _validate.real_array("query_positions", np.atleast_1d(query_positions), ndim=1)
    keys = _validate.real_array("key_positions", np.atleast_1d(key_positions), ndim=1)
    theta = _validate.real_array("theta", theta, ndim=1)
    recipe = _validate.choice("recipe", recipe, RECIPES)
    _dtype(dtype)
    if queries.size != keys.size and 1 not in (queries.size, keys.size):
        raise ValueError(
            f"query_positions and key_positions must have the same length (or one of them one position), "
            f"got {queries.size} and {keys.size}"
        )
    queries, keys = np.broadcast_arrays(queries, keys)
    with np.errstate(invalid="ignore"):  # float16 overflows past 65,504: inf - inf, reported as nan
        got = _stored_angles(queries, theta, recipe, dtype) - _stored_angles(keys, theta, recipe, dtype)
        error = np.abs(np.remainder(got - np.outer(queries - keys, theta) + np.pi, 2 * np.pi) - np.pi)
    return error.max(axis=1)


def worst_score_error(query_positions, distances, theta, *, recipe="angle", dtype="bfloat16"):
    """For each query position m: the largest score_angle_error over its keys m - d, d in `distances` (keys >= 0)."""
    queries = _validate.real_array("query_positions", np.atleast_1d(query_positions), ndim=1)
    distances = _validate.real_array("distances", np.atleast_1d(distances), ndim=1)
    worst = np.zeros(queries.size)
    for distance in distances:
        keys = np.maximum(queries - distance, 0.0)
        worst = np.maximum(worst, score_angle_error(queries, keys, theta, recipe=recipe, dtype=dtype))
    return worst


def first_position_reaching(positions, errors, threshold):
    """The first of `positions` whose error is >= threshold, or None if none is."""
    errors = np.asarray(errors)
    hits = np.flatnonzero(errors >= threshold)
    return None if hits.size == 0 else int(np.asarray(positions)[hits[0]])
