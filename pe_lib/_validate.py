"""Argument checks shared by the public functions: one clear message per kind of bad input.

Every message names the argument, the value it got and what is allowed, so a learner who
passes the wrong thing reads what to change instead of a traceback from deep inside NumPy.
"""

import math
import numbers

import numpy as np

_FLOAT_DTYPES = (np.float16, np.float32, np.float64)


def positive_int(name, value):
    """Return `value` as an int if it is a positive integer (bools are rejected)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive int, got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value}")
    return int(value)


def count(name, value):
    """Return `value` as an int if it is a non-negative integer (bools are rejected)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative int, got {value!r} ({type(value).__name__})")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value}")
    return int(value)


def base(value):
    """Return the encoding base as a float: finite and greater than 1."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"base must be a real number greater than 1, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value) or value <= 1.0:
        raise ValueError(f"base must be a finite number greater than 1, got {value}")
    return value


def finite_real(name, value):
    """Return `value` as a float if it is a finite real number (bools are rejected)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a finite real number, got {value!r} ({type(value).__name__})")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number, got {value}")
    return value


def float_dtype(value):
    """Return a NumPy float dtype (float16, float32 or float64)."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"dtype must be float16, float32 or float64, got {value!r}") from None
    if dtype.type not in _FLOAT_DTYPES:
        raise TypeError(f"dtype must be float16, float32 or float64, got {dtype}")
    return dtype


def choice(name, value, allowed):
    """Return `value` if it is one of `allowed`."""
    if not isinstance(value, str) or value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def as_numpy(value):
    """`value` as a NumPy array; a torch tensor is detached (requires_grad) and widened (bfloat16) first.

    Duck-typed on `.detach()`, so the NumPy core needs no torch import.
    """
    if hasattr(value, "detach") and hasattr(value, "is_floating_point"):
        value = value.detach().cpu()
        if value.is_floating_point():
            value = value.double()  # bfloat16 has no NumPy dtype; float64 holds every float exactly
        return value.numpy()
    return np.asarray(value)


def real_array(name, value, ndim):
    """Return `value` (array, list, or torch tensor) as a float64 array of rank `ndim` with only finite entries."""
    array = as_numpy(value)
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"{name} must hold real numbers, got an array of dtype {array.dtype}")
    if array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D array, got shape {array.shape}")
    array = array.astype(np.float64, copy=False)
    if not np.all(np.isfinite(array)):
        bad = array[~np.isfinite(array)][0]
        raise ValueError(f"{name} must be finite, got a value {bad}")
    return array


def one_of(name, value, allowed):
    """Return `value` if it is one of `allowed` (any values, e.g. a slider's options)."""
    if isinstance(value, bool) or value not in tuple(allowed):
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def int_in_range(name, value, low, high):
    """Return `value` as an int if it is an integer with low <= value <= high (bools are rejected)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int from {low} to {high}, got {value!r} ({type(value).__name__})")
    if not low <= value <= high:
        raise ValueError(f"{name} must be an int from {low} to {high}, got {value}")
    return int(value)


def even_int(name, value, why="pairs of features"):
    """Return `value` as an int if it is a positive even integer (bools are rejected)."""
    value = positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even ({why}), got {value}")
    return value


def flag(name, value):
    """Return `value` as a bool if it is True or False (not 0, 1 or a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def fraction(name, value, *, below_one=False):
    """Return `value` as a float in [0, 1] ([0, 1) with below_one)."""
    value = finite_real(name, value)
    if not 0.0 <= value <= 1.0 or (below_one and value == 1.0):
        raise ValueError(f"{name} must be in [0, {'1)' if below_one else '1]'}, got {value}")
    return value


def text(name, value):
    """Return `value` if it is a string (a label, a description)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {value!r} ({type(value).__name__})")
    return value
