"""Every grader of the course against the wrong answers learners really write, and right ones in other forms.

For each of the 23 graders: at least 20 wrong answers - the slips around the maths that every exercise
invites (a forgotten `return`, `print`, an exception, exit(), an input changed in place, an answer that
changes between calls or is hard-coded for the first case, None, strings, dicts, generators, NaN and inf,
ragged lists, meta, sparse and complex tensors, wrong shapes, transposed, off by one, the wrong dtype) and
the exercise's own mistakes - and the right answer in the other forms the exercise allows. Three promises
are checked on each: no wrong answer gets "Correct", no right answer is refused, and no grader ends in a
traceback or in its own safety net (`grading.graded`'s "could not read"): every answer gets a Feedback
with the grader's three tiers of hints.
"""

import decimal
import fractions
import math
import warnings

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import pe_lib
from pe_lib import ch01_order_exercises as ex01
from pe_lib import ch02_naive as ch02
from pe_lib import ch03_sinusoidal_exercises as ex03
from pe_lib import ch04_pendulum as ch04
from pe_lib import ch05_learned_exercises as ex05
from pe_lib import ch06_pipeline_exercises as ex06
from pe_lib import ch07_relative_exercises as ex07
from pe_lib import ch08_extension_exercises as ex08
from pe_lib import ch09_wild_exercises as ex09
from pe_lib import ch10_real_exercises as ex10
from pe_lib import ch11_beyond_exercises as ex11
from pe_lib import experiments
from pe_lib.grading import Feedback

# --- the worked solutions -------------------------------------------------------------------------


def permutation_matrix(order):
    return np.eye(len(order))[order]


def is_permutation_equivariant(f, x, order):
    return bool(np.allclose(f(x[order]), f(x)[order]))


def binary_encoding(n, d_model):
    if n > 2**d_model:
        raise ValueError(f"{n} positions do not fit in {d_model} bits")
    return ((np.arange(n)[:, None] >> np.arange(d_model)[None, :]) & 1).astype(float)


def bit_flips(p):
    return bin(p ^ (p + 1)).count("1")


def chapter_fix(position, d_model):
    rates = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / d_model)
    angles = position * rates
    row = np.zeros(d_model)
    row[0::2], row[1::2] = np.sin(angles[0::2]), np.cos(angles[1::2])
    return row


def concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def timing_signal(n, d_model, max_timescale=1e4):
    pairs = d_model // 2
    angles = np.arange(n)[:, None] * max_timescale ** (-np.arange(pairs) / max(pairs - 1, 1))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def offset_similarity(k, d_model, base=10000.0):
    return float(np.sum(np.cos(pe_lib.frequencies(d_model, base=base) * k)))


def look_back(k, d_model):
    return pe_lib.relative_rotation(-k, d_model)


def similarity_by_offset(table):
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    cosines = unit @ unit.T
    return np.array([np.diagonal(cosines, k).mean() for k in range(len(table))])


def shift_targets(tokens, k):
    targets = torch.full_like(tokens, experiments.IGNORE)
    targets[:, k:] = tokens[:, :-k]
    return targets


def embed(token_ids, token_table):
    d_model = token_table.shape[1]
    pe = torch.from_numpy(pe_lib.sinusoidal_encoding(token_ids.shape[1], d_model)).to(token_table.dtype)
    return token_table[token_ids] * math.sqrt(d_model) + pe


def rope_half(x, positions, base):
    d = x.shape[-1]
    angles = np.outer(positions, base ** (-np.arange(0, d, 2) / d))
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))
    return x * cos + np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1) * sin


def alibi_slopes(num_heads):
    def power_of_two(n):
        return [2.0 ** (-8 * (h + 1) / n) for h in range(n)]

    m = 2 ** int(math.log2(num_heads))
    return np.array(power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m])


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    half = num_buckets // 2 if bidirectional else num_buckets
    upper = half if bidirectional and relative_position > 0 else 0
    n = abs(relative_position) if bidirectional else max(-relative_position, 0)
    max_exact = half // 2
    if n < max_exact:
        return upper + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact))
    return upper + min(large, half - 1)


def ntk_base(base, factor, head_dim):
    return base * factor ** (head_dim / (head_dim - 2))


def untouched_pairs(head_dim, base, original_length, beta_fast):
    low = head_dim * math.log(original_length / (2 * math.pi * beta_fast)) / (2 * math.log(base))
    return np.arange(min(max(math.floor(low), 0), head_dim // 2 - 1) + 1)


def fixed_rope(x, positions, config):
    d = config["hidden_size"] // config["num_attention_heads"]
    inv_freq = 1.0 / config["rope_theta"] ** (np.arange(0, d, 2) / d)
    angles = np.outer(positions, inv_freq)
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1).astype(x.dtype)


def bf16_position(p):
    if p < 256:
        return p
    spacing = 2 ** (p.bit_length() - 8)
    q, r = divmod(p, spacing)
    if 2 * r > spacing or (2 * r == spacing and q % 2 == 1):
        q += 1
    return q * spacing


def padded_positions(attention_mask):
    position_ids = attention_mask.long().cumsum(-1) - 1
    return position_ids.masked_fill(attention_mask == 0, 0)


def axial_angles(rows, cols, head_dim, base):
    freq = base ** (-4 * np.arange(head_dim // 4) / head_dim)
    return np.concatenate([np.outer(cols, freq), np.outer(rows, freq)], axis=1)


def mrope_ids(text_before, height, width, text_after):
    s = text_before
    rows, cols = np.divmod(np.arange(height * width), width)
    image = np.stack([np.full(rows.size, s), s + rows, s + cols])
    after = s + max(height, width) + np.arange(text_after)
    return np.concatenate([np.tile(np.arange(s), (3, 1)), image, np.tile(after, (3, 1))], axis=1)


class BatchFirst(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("table", torch.from_numpy(pe_lib.sinusoidal_encoding(maxlen, emb_size)).float())

    def forward(self, x):
        return self.dropout(x + self.table[: x.size(1)].unsqueeze(0))


# --- how a wrong answer is made from a right one ---------------------------------------------------
# Each maker takes the solution and returns the learner's function.


def returning(transform):
    """The solution's result, transformed: the slip sits in the last line."""
    return lambda solution: lambda *args: transform(solution(*args), *args)


def forgot_return(solution):
    def answer(*args):
        solution(*args)  # computed, never returned

    return answer


def printed(solution):
    return lambda *args: print(solution(*args))


def raising(error):
    def make(solution):
        def answer(*args):
            raise error

        return answer

    return make


def changes_between_calls(solution):
    calls = []

    def answer(*args):
        calls.append(1)
        value = solution(*args)
        if len(calls) % 2:
            return value
        return (not value) if isinstance(value, bool) else _values(value) + 1

    return answer


def first_answer_always(solution):
    """Hard-coded: the answer to the first case (the notebook's), whatever the arguments."""
    seen = []

    def answer(*args):
        if not seen:
            seen.append(solution(*args))
        return seen[0]

    return answer


def mutating_first_argument(solution):
    def answer(first, *rest):
        value = solution(_copy(first), *rest)
        first[(0,) * first.ndim] += 1  # the caller's array (or tensor) changes
        return value

    return answer


def _copy(value):
    return value.clone() if torch.is_tensor(value) else value.copy()


def _values(value):
    """A result as a float64 NumPy array (tensors detached), for the transforms below."""
    if torch.is_tensor(value):
        value = value.detach().double().numpy()
    return np.asarray(value, dtype=np.float64)


def _nan_at_one(value):
    out = _values(value).copy()
    out.reshape(-1)[0] = np.nan
    return out


def _inf_at_last(value):
    out = _values(value).copy()
    out.reshape(-1)[-1] = np.inf
    return out


def _ragged(value):
    rows = _values(value).reshape(len(_values(value)), -1).tolist() if _values(value).ndim else [[1.0]]
    return [rows[0], rows[0][:-1] or [1.0, 2.0], *rows[2:]]


def _one_entry_off(value, by=1e-2):
    out = _values(value).copy()
    out.reshape(-1)[out.size // 2] += by
    return out


def quietly(make):
    """A maker whose answer is built without the beta and deprecation warnings of some forms (sparse CSR, np.matrix)."""

    def quiet(solution):
        answer = make(solution)

        def learner(*args):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return answer(*args)

        return learner

    return quiet


def answer(function):
    """A maker for a learner's function written out in full (it ignores the solution)."""
    return lambda solution: function


def wrong_kinds(*groups, **own):
    """The wrong answers of one grader: the shared groups, then its own (name_with_underscores -> maker)."""
    kinds = {}
    for group in groups:
        kinds.update(group)
    kinds.update({name.replace("_", " "): maker for name, maker in own.items()})
    return kinds


def without(group, *names):
    return {name: maker for name, maker in group.items() if name not in names}


# fmt: off
# Wrong answers every grader meets, whatever its answer's kind.
COMMON = {
    "a forgotten return": forgot_return,
    "print instead of return": printed,
    "an exception": raising(NotImplementedError("TODO")),
    "exit() in the middle": raising(SystemExit(1)),
    "a number instead of a function": lambda solution: 42,
    "a string": returning(lambda v, *a: str(v)),
    "a dict": returning(lambda v, *a: {"answer": v}),
    "a generator": returning(lambda v, *a: (item for item in np.ravel(_values(v)))),
    "an object": returning(lambda v, *a: object()),
    "a set": returning(lambda v, *a: {1, 2}),
    "an answer that changes between calls": changes_between_calls,
    "a meta tensor": returning(lambda v, *a: torch.empty(np.shape(_values(v)), device="meta")),
    "a complex tensor": returning(lambda v, *a: torch.as_tensor(_values(v)).to(torch.complex64)),
    "NaN everywhere": returning(lambda v, *a: np.full(np.shape(_values(v)), np.nan)),
}

# Wrong answers for the graders whose answer is an array.
ARRAY = {
    "a ragged list": returning(lambda v, *a: _ragged(v)),
    "one NaN": returning(lambda v, *a: _nan_at_one(v)),
    "one inf": returning(lambda v, *a: _inf_at_last(v)),
    "one row short": returning(lambda v, *a: _values(v)[:-1]),
    "one row more": returning(lambda v, *a: np.concatenate([_values(v), _values(v)[-1:]])),
    "flattened": returning(lambda v, *a: _values(v).reshape(-1) if _values(v).ndim > 1 else _values(v)[None]),
    "an extra axis in front": returning(lambda v, *a: _values(v)[None]),
    "an extra axis behind": returning(lambda v, *a: _values(v)[..., None]),
    "negated": returning(lambda v, *a: -_values(v) - (not _values(v).any())),
    "off by 0.01 in one entry": returning(lambda v, *a: _one_entry_off(v)),
    "scaled by 1.01": returning(lambda v, *a: 1.01 * _values(v) + 0.01 * (not _values(v).any())),
    "a sparse tensor of a wrong answer": returning(lambda v, *a: torch.as_tensor(_values(v) + 1.0).to_sparse()),
    "a scalar": returning(lambda v, *a: 0.5),
    "an empty array": returning(lambda v, *a: np.zeros((0,))),
    "a complex array": returning(lambda v, *a: _values(v) + 1e-3j),
    "hard-coded for the first case": first_answer_always,
}

# Wrong answers for the graders whose answer is one number.
SCALAR = {
    "one more": returning(lambda v, *a: _values(v) + 1),
    "one less": returning(lambda v, *a: _values(v) - 1),
    "doubled": returning(lambda v, *a: 2 * _values(v) + 1),
    "negated": returning(lambda v, *a: -_values(v) - 1),
    "two numbers": returning(lambda v, *a: np.array([_values(v), _values(v)])),
    "an empty list": returning(lambda v, *a: []),
    "NaN": returning(lambda v, *a: math.nan),
    "inf": returning(lambda v, *a: math.inf),
    "a bool": returning(lambda v, *a: True),
    "a complex number": returning(lambda v, *a: complex(_values(v)) + 1j),
    "the number as a string": returning(lambda v, *a: str(int(_values(v))) if _values(v) % 1 == 0 else str(v)),
    "hard-coded for the first case": first_answer_always,
}

# Right answers in the other forms a numeric answer may take.
FORMS = {
    "a list": returning(lambda v, *a: _values(v).tolist()),
    "a float32 tensor": returning(lambda v, *a: torch.as_tensor(_values(v), dtype=torch.float32)),
    "a float64 tensor that requires grad": returning(lambda v, *a: torch.tensor(_values(v), requires_grad=True)),
    "a float32 NumPy array": returning(lambda v, *a: _values(v).astype(np.float32)),
}
FORMS_2D = {
    "a sparse tensor": returning(lambda v, *a: torch.as_tensor(_values(v)).to_sparse()),
    "Fortran order": returning(lambda v, *a: np.asfortranarray(_values(v))),
    "a transposed copy, transposed back": returning(lambda v, *a: _values(v).T.copy().T),
}
SCALAR_FORMS = {
    "a NumPy scalar": returning(lambda v, *a: np.float64(v)),
    "a 0-d array": returning(lambda v, *a: np.asarray(v)),
    "a 0-d tensor": returning(lambda v, *a: torch.tensor(float(v), dtype=torch.float64)),
    "a one-element list": returning(lambda v, *a: [v]),
}


# --- notebook 01 -----------------------------------------------------------------------------------

PERMUTATION_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_identity=answer(lambda order: np.eye(len(order))),
    transposed=returning(lambda v, *a: v.T.copy()),
    the_inverse_by_argsort=answer(lambda order: np.eye(len(order))[np.argsort(order)]),
    the_order_itself=answer(lambda order: np.asarray(order)),
    columns_picked=answer(lambda order: np.eye(len(order))[:, order]),
    ones_everywhere=answer(lambda order: np.ones((len(order), len(order)))),
    the_order_sorted_in_place=answer(lambda order: (order.sort(), np.eye(len(order))[order])[1]),
    an_int_list_one_column_short=answer(lambda order: np.eye(len(order), dtype=int)[order][:, :-1].tolist()),
)
PERMUTATION_RIGHT = {
    **FORMS, **FORMS_2D,
    "an int matrix": returning(lambda v, *a: v.astype(int)),
    "a sparse CSR tensor": quietly(returning(lambda v, *a: torch.as_tensor(v).to_sparse_csr())),
    "a NumPy matrix": quietly(returning(lambda v, *a: np.asmatrix(v))),
}


def partial_test(compare):
    """A learner's equivariance test that compares f(x[order]) and f(x)[order] through `compare`."""
    return answer(lambda f, x, order: bool(compare(f(x[order]), f(x)[order])))


def _unit(a):
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def _distances(a):
    return np.linalg.norm(a[:, None] - a[None], axis=-1)


EQUIVARIANCE_WRONG = wrong_kinds(
    without(COMMON, "a meta tensor", "NaN everywhere"),
    invariance=answer(lambda f, x, order: bool(np.allclose(f(x[order]), f(x)))),
    the_other_way=answer(lambda f, x, order: bool(np.allclose(f(x[order]), f(x)[np.argsort(order)]))),
    exact_equality=answer(lambda f, x, order: bool(np.array_equal(f(x[order]), f(x)[order]))),
    an_array_of_bools=answer(lambda f, x, order: np.isclose(f(x[order]), f(x)[order])),
    a_bool_tensor=answer(lambda f, x, order: torch.tensor(bool(np.allclose(f(x[order]), f(x)[order])))),
    the_string_True=answer(lambda f, x, order: "True"),
    one_for_true=answer(lambda f, x, order: int(np.allclose(f(x[order]), f(x)[order]))),
    always_true=answer(lambda f, x, order: True),
    always_false=answer(lambda f, x, order: False),
    the_columns_reordered=answer(lambda f, x, order: bool(np.allclose(f(x[:, order]), f(x)[:, order]))),
    x_shuffled_in_place=answer(lambda f, x, order: (x.__setitem__(slice(None), x[order]), np.allclose(f(x), f(x)))[1]),
    squares=partial_test(lambda a, b: np.allclose(a**2, b**2)),
    absolute_values=partial_test(lambda a, b: np.allclose(np.abs(a), np.abs(b))),
    unit_rows=partial_test(lambda a, b: np.allclose(_unit(a), _unit(b))),
    gram_matrices=partial_test(lambda a, b: np.allclose(a @ a.T, b @ b.T)),
    pairwise_distances=partial_test(lambda a, b: np.allclose(_distances(a), _distances(b))),
    row_norms=partial_test(lambda a, b: np.allclose(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))),
    row_sums=partial_test(lambda a, b: np.allclose(a.sum(axis=1), b.sum(axis=1))),
    sorted_rows=partial_test(lambda a, b: np.allclose(np.sort(a, axis=1), np.sort(b, axis=1))),
    atol_1e_4=partial_test(lambda a, b: np.allclose(a, b, atol=1e-4)),
    rtol_1e_4=partial_test(lambda a, b: np.allclose(a, b, rtol=1e-4)),
    rounded_to_3_decimals=partial_test(lambda a, b: np.array_equal(a.round(3), b.round(3))),
    the_first_row=partial_test(lambda a, b: np.allclose(a[0], b[0])),
    the_first_column=partial_test(lambda a, b: np.allclose(a[:, 0], b[:, 0])),
    five_rows=partial_test(lambda a, b: np.allclose(a[:5], b[:5])),
    the_diagonal=partial_test(lambda a, b: np.allclose(np.diagonal(a), np.diagonal(b))),
    all_rows_but_the_first=partial_test(lambda a, b: np.allclose(a[1:], b[1:])),
    all_rows_but_the_last=partial_test(lambda a, b: np.allclose(a[:-1], b[:-1])),
    every_other_row=partial_test(lambda a, b: np.allclose(a[::2], b[::2])),
)
EQUIVARIANCE_RIGHT = {
    "np.allclose the other way round": answer(lambda f, x, order: bool(np.allclose(f(x)[order], f(x[order])))),
    "np.isclose(...).all()": answer(lambda f, x, order: bool(np.isclose(f(x[order]), f(x)[order]).all())),
    "a NumPy bool": answer(lambda f, x, order: np.allclose(f(x[order]), f(x)[order]) & np.True_),
    "torch.allclose": partial_test(lambda a, b: torch.allclose(torch.tensor(a.copy()), torch.tensor(b.copy()))),
    "a tight absolute tolerance": partial_test(lambda a, b: np.abs(a - b).max() < 1e-9),
    "rounded to 6 decimals": partial_test(lambda a, b: np.array_equal(a.round(6), b.round(6))),
}


# --- notebook 02 -----------------------------------------------------------------------------------


def _bits(n, d_model, positions=None):
    positions = np.arange(n) if positions is None else positions
    return ((positions[:, None] >> np.arange(d_model, dtype=positions.dtype)[None, :]) & 1).astype(float)


def _checked(table, *, too_many=lambda n, d: n > 2**d, error=ValueError):
    """A binary_encoding that builds `table(n, d)` after raising `error` when `too_many(n, d)`."""
    def written(n, d_model):
        if too_many(n, d_model):
            raise error("too many positions")
        return table(n, d_model)

    return answer(written)


def _msb_first(n, d_model):
    return np.array([[int(c) for c in np.binary_repr(p, width=d_model)] for p in range(n)], dtype=float)


BINARY_WRONG = wrong_kinds(
    COMMON, ARRAY,
    transposed=returning(lambda v, *a: v.T.copy()),
    most_significant_bit_first=_checked(_msb_first),
    positions_from_1=_checked(lambda n, d: _bits(n, d, np.arange(1, n + 1))),
    minus_one_and_one=returning(lambda v, *a: 2 * v - 1),
    without_the_mask=_checked(lambda n, d: (np.arange(n)[:, None] >> np.arange(d)[None, :]).astype(float)),
    every_column_bit_0=_checked(lambda n, d: np.repeat(np.arange(n)[:, None] % 2, d, axis=1).astype(float)),
    no_error_when_too_many=_checked(_bits, too_many=lambda n, d: False),
    a_TypeError_when_too_many=_checked(_bits, error=TypeError),
    the_check_one_too_early=_checked(_bits, too_many=lambda n, d: n >= 2**d),
    the_check_one_too_late=_checked(_bits, too_many=lambda n, d: n > 2**d + 1),
    uint8_positions=_checked(lambda n, d: _bits(n, d, np.arange(n, dtype=np.uint8))),
)
BINARY_RIGHT = {
    **FORMS, **FORMS_2D,
    "an int table": returning(lambda v, *a: v.astype(np.int64)),
    "a uint8 table": returning(lambda v, *a: v.astype(np.uint8)),
}


def _ones(x):
    return bin(x).count("1")


BIT_FLIPS_WRONG = wrong_kinds(
    COMMON, SCALAR,
    one_step_one_bit=answer(lambda p: 1),
    ones_compared=answer(lambda p: _ones(p + 1) - _ones(p)),
    ones_compared_in_size=answer(lambda p: abs(_ones(p + 1) - _ones(p))),
    the_step_before=answer(lambda p: _ones((p - 1) ^ p) if p else 0),
    one_short=answer(lambda p: _ones(p ^ (p + 1)) - 1),
    sixteen_bits=answer(lambda p: _ones((p ^ (p + 1)) & 0xFFFF)),
    int32=answer(lambda p: _ones((p ^ int(np.int64(p + 1).astype(np.int32))) & 0xFFFFFFFF)),
    the_trailing_zeros_of_p_plus_1=answer(lambda p: ((p + 1) & -(p + 1)).bit_length() - 1),
)
BIT_FLIPS_RIGHT = {
    **SCALAR_FORMS,
    "a NumPy int": returning(lambda v, *a: np.int64(v)),
    "int.bit_count": answer(lambda p: (p ^ (p + 1)).bit_count()),
    "an int tensor": returning(lambda v, *a: torch.tensor(v)),
}


# --- notebook 03 -----------------------------------------------------------------------------------


def _row(position, d_model, rates, swap=False):
    angles = position * rates
    row = np.zeros(d_model)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    row[0::2], row[1::2] = first(angles[0::2]), second(angles[1::2])
    return row


def _rates(d_model, exponent=2.0):
    return 1 / np.power(10000, exponent * (np.arange(d_model) // 2) / d_model)


CHAPTER_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_chapter_code=answer(lambda p, d: _row(p, d, np.arange(d) // 2 * np.pi * _rates(d))),
    pi_removed_i_kept=answer(lambda p, d: _row(p, d, np.arange(d) // 2 * _rates(d))),
    sin_and_cos_swapped=answer(lambda p, d: _row(p, d, _rates(d), swap=True)),
    each_column_its_own_exponent=answer(lambda p, d: _row(p, d, 1 / np.power(10000, np.arange(d) / d))),
    exponent_i_not_2i=answer(lambda p, d: _row(p, d, _rates(d, exponent=1.0))),
    positions_from_1=answer(lambda p, d: chapter_fix(p + 1, d)),
    a_table_not_a_row=answer(lambda p, d: np.stack([chapter_fix(q, d) for q in range(p + 1)])),
    in_float16_and_off=returning(lambda v, *a: v.astype(np.float16) + np.float16(0.01)),
)
CHAPTER_RIGHT = {
    **FORMS,
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
    "pe_lib's row": answer(lambda p, d: pe_lib.sinusoidal_encoding(np.array([p]), d)[0]),
}

ROTATION_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_interleaved_matrix=answer(lambda k, d: pe_lib.relative_rotation(k, d)),
    the_other_way=answer(lambda k, d: concatenated_rotation(-k, d)),
    transposed=returning(lambda v, *a: v.T.copy()),
    the_identity=answer(lambda k, d: np.eye(d)),
    k_written_in=answer(lambda k, d: concatenated_rotation(3, d)),
    rows_reordered_only=answer(lambda k, d: pe_lib.relative_rotation(k, d)[np.r_[0:d:2, 1:d:2]]),
    columns_reordered_only=answer(lambda k, d: pe_lib.relative_rotation(k, d)[:, np.r_[0:d:2, 1:d:2]]),
    k_rounded=answer(lambda k, d: concatenated_rotation(round(k), d)),
)
ROTATION_RIGHT = {**FORMS, **FORMS_2D}


def _t2t(n, d, m, **variant):
    return ex03._timing_signal(np.arange(n), d, m, **variant)


def _hint_two_as_written(n, d, m=1e4):  # max_timescale ** (-i / (d_model/2 - 1)): 0 / 0 at d_model = 2
    with np.errstate(divide="ignore", invalid="ignore"):
        angles = np.arange(n)[:, None] * m ** (-np.arange(d // 2) / (d / 2 - 1))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def _float32_timing(n, d, m=1e4):
    rates = torch.exp(-torch.arange(d // 2, dtype=torch.float32) * math.log(m) / max(d // 2 - 1, 1))
    angles = torch.arange(n, dtype=torch.float32)[:, None] * rates
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


TIMING_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_papers_rates=answer(lambda n, d, m=1e4: _t2t(n, d, m, steps=d // 2)),
    max_timescale_ignored=answer(lambda n, d, m=1e4: _t2t(n, d, 1e4)),
    interleaved=answer(lambda n, d, m=1e4: _t2t(n, d, m, layout="interleaved")),
    halves_swapped=answer(lambda n, d, m=1e4: _t2t(n, d, m, swap=True)),
    zero_over_zero_at_one_pair=answer(_hint_two_as_written),
    a_ZeroDivisionError_at_one_pair=answer(lambda n, d, m=1e4: _t2t(n, d, m, steps=(d // 2 - 1) or 1 // 0)),
    written_for_100_positions=answer(lambda n, d, m=1e4: np.resize(timing_signal(100, d, m), (n, d))),
    the_slowest_sines_lost_in_bfloat16=returning(
        lambda v, *a: torch.tensor(np.where(np.arange(v.shape[1]) == v.shape[1] // 2 - 1, 0.0, v)).bfloat16()),
)
TIMING_RIGHT = {
    **FORMS, **FORMS_2D,
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
    "float32 throughout": answer(_float32_timing),
}


# --- notebook 04 -----------------------------------------------------------------------------------


def _cos_sum(k, d, base=1e4, terms=None, exponent=2.0, wave=np.cos):
    i = np.arange(d // 2 if terms is None else terms)
    return float(wave(k * base ** (-exponent * i / d)).sum())


def _two_rows(k, d, base=1e4):
    rows = pe_lib.sinusoidal_encoding(np.array([5.0, 5.0 + k]), d, base=base)
    return float(rows[0] @ rows[1])


OFFSET_WRONG = wrong_kinds(
    COMMON, SCALAR,
    twice=answer(lambda k, d, base=1e4: 2 * _cos_sum(k, d, base)),
    d_model_terms=answer(lambda k, d, base=1e4: _cos_sum(k, d, base, terms=d)),
    exponent_without_the_2=answer(lambda k, d, base=1e4: _cos_sum(k, d, base, exponent=1.0)),
    sines_summed=answer(lambda k, d, base=1e4: _cos_sum(k, d, base, wave=np.sin)),
    base_ignored=answer(lambda k, d, base=1e4: _cos_sum(k, d)),
    always_d_over_2=answer(lambda k, d, base=1e4: d / 2),
    one_share_per_pair=answer(lambda k, d, base=1e4: np.cos(pe_lib.frequencies(d, base=base) * k)),
    k_as_an_int=answer(lambda k, d, base=1e4: _cos_sum(int(k), d, base)),
    in_float16_and_off=answer(lambda k, d, base=1e4: torch.tensor(_cos_sum(k, d, base) + 0.01).half()),
)
OFFSET_RIGHT = {
    **SCALAR_FORMS,
    "a float32 tensor": returning(lambda v, *a: torch.tensor(v, dtype=torch.float32)),
    "a float16 tensor": returning(lambda v, *a: torch.tensor(v).half()),
    "the dot product of two rows": answer(_two_rows),
}

LOOK_BACK_WRONG = wrong_kinds(
    COMMON,
    # a small change keeps every query's largest score where it was: still a head that looks k back (below)
    without(ARRAY, "off by 0.01 in one entry", "scaled by 1.01"),
    looks_ahead=answer(lambda k, d: pe_lib.relative_rotation(k, d)),
    the_identity=answer(lambda k, d: np.eye(d)),
    zeros=answer(lambda k, d: np.zeros((d, d))),
    transposed=returning(lambda v, *a: v.T.copy()),
    a_negative_scale=returning(lambda v, *a: -2.0 * v),
    k_written_in=answer(lambda k, d: pe_lib.relative_rotation(-3, d)),
    one_too_far=answer(lambda k, d: pe_lib.relative_rotation(-k - 1, d)),
    the_concatenated_layout=answer(lambda k, d: concatenated_rotation(-k, d)),
)
LOOK_BACK_RIGHT = {
    **FORMS, **FORMS_2D,
    "a positive multiple": returning(lambda v, *a: 3.0 * v),
    "scaled by 1.01": ARRAY["scaled by 1.01"],
    "off by 0.01 in one entry": ARRAY["off by 0.01 in one entry"],
    "relative_rotation(k).T": answer(lambda k, d: pe_lib.relative_rotation(k, d).T),
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
}


# --- notebook 05 -----------------------------------------------------------------------------------


def _offsets(matrix, reduce=np.mean):
    return np.array([reduce(np.diagonal(matrix, k)) for k in range(len(matrix))])


def _cosines(table, axis=1):
    unit = table / np.linalg.norm(table, axis=axis, keepdims=True)
    return unit @ unit.T


def _torch_diagonals(table):  # one 0-d tensor per offset, in a list
    unit = torch.nn.functional.normalize(torch.as_tensor(table), dim=1)
    return [torch.diagonal(unit @ unit.T, k).mean() for k in range(len(table))]


SIMILARITY_WRONG = wrong_kinds(
    COMMON, without(ARRAY, "flattened", "an extra axis in front", "an extra axis behind"),  # a row, a column: below
    an_input_changed_in_place=mutating_first_argument,
    mean_dot_products=answer(lambda t: _offsets(t @ t.T)),
    columns_normalised=answer(lambda t: _offsets(_cosines(t, axis=0))),
    position_0_only=answer(lambda t: _cosines(t)[0]),
    wrapped_around=answer(lambda t: np.array([np.diagonal(np.roll(_cosines(t), -k, 1)).mean() for k in range(len(t))])),
    sums_not_means=answer(lambda t: _offsets(_cosines(t), np.sum)),
    from_offset_1=answer(lambda t: similarity_by_offset(t)[1:]),
    one_per_column=answer(lambda t: similarity_by_offset(t.T)),
    normalised_in_place=answer(lambda t: similarity_by_offset(np.divide(t, np.linalg.norm(t, axis=1)[:, None], out=t))),
    the_lower_diagonals=answer(lambda t: _offsets(_cosines(t)[::-1])),
)
SIMILARITY_RIGHT = {
    **FORMS,
    "pe_lib's": answer(pe_lib.analysis.similarity_by_offset),
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
    "a list of 0-d tensors": answer(_torch_diagonals),
    "a column of n numbers": returning(lambda v, *a: v[:, None]),
    "a row of n numbers": returning(lambda v, *a: v[None]),
}


def _ignored(like):
    return torch.full_like(like, experiments.IGNORE)


def _shift_in_place(tokens, k):
    tokens[:, k:] = tokens[:, :-k].clone()
    tokens[:, :k] = experiments.IGNORE
    return tokens


SHIFT_WRONG = wrong_kinds(
    COMMON, without(ARRAY, "a complex array"),
    an_input_changed_in_place=mutating_first_argument,
    rolled=answer(lambda tokens, k: torch.roll(tokens, k, dims=1)),
    the_wrong_way=answer(lambda tokens, k: torch.cat([tokens[:, k:], _ignored(tokens[:, :k])], 1)),
    the_first_k_zero=answer(lambda tokens, k: torch.cat([torch.zeros_like(tokens[:, :k]), tokens[:, :-k]], 1)),
    off_by_one=answer(lambda tokens, k: torch.cat([_ignored(tokens[:, : k + 1]), tokens[:, : -k - 1]], 1)),
    the_tokens_unchanged=answer(lambda tokens, k: tokens.clone()),
    shifted_in_place=answer(_shift_in_place),
    float_targets=returning(lambda v, *a: v.float()),
    int32_targets=returning(lambda v, *a: v.int()),
    a_NumPy_array=returning(lambda v, *a: v.numpy()),
    a_list=returning(lambda v, *a: v.tolist()),
    a_sparse_tensor=returning(lambda v, *a: v.to_sparse()),
)
SHIFT_RIGHT = {
    "torch.roll, then IGNORE": answer(
        lambda tokens, k: torch.roll(tokens, k, dims=1).index_fill(1, torch.arange(k), experiments.IGNORE)),
    "pe_lib's task_targets": answer(lambda tokens, k: experiments.task_targets(tokens, "shift", shift=k)),
    "a non-contiguous tensor": returning(lambda v, *a: v.T.contiguous().T),
}


# --- notebook 06 -----------------------------------------------------------------------------------


def module_with(forward):
    """A batch-first module class with this forward (self, x)."""
    return answer(type("Module", (BatchFirst,), {"forward": forward}))


def module_returning(transform):
    """A batch-first module class whose right output goes through `transform` last."""
    return module_with(lambda self, x: transform(BatchFirst.forward(self, x)))


def _rate(rate_of):
    """A module class that builds its dropout with rate_of(dropout), not the rate it is given."""

    class Module(BatchFirst):
        def __init__(self, emb_size, dropout, maxlen=5000):
            super().__init__(emb_size, rate_of(dropout), maxlen)

    return answer(Module)


def _rows(module, x):
    return module.table[: x.size(1)][None]


def _constructor_raises(emb_size, dropout):
    raise NotImplementedError("write me")


BATCH_FIRST_WRONG = {
    "the snippet as it is": module_with(lambda self, x: self.dropout(x + self.table[: x.size(0)].unsqueeze(1))),
    "a number instead of a class": lambda solution: 42,
    "a constructor that raises": answer(_constructor_raises),
    "a constructor that returns None": answer(lambda emb_size, dropout: None),
    "a forward that returns None": module_with(lambda self, x: None),
    "a forward that prints": module_with(lambda self, x: print(x)),
    "a forward that raises": module_with(lambda self, x: 1 / 0),
    "a NumPy array": module_returning(lambda out: out.numpy()),
    "a list": module_returning(lambda out: out.tolist()),
    "float16": module_returning(lambda out: out.half()),
    "a complex tensor": module_returning(lambda out: out.to(torch.complex64)),
    "a meta tensor": module_returning(lambda out: out.to("meta")),
    "a sparse tensor": module_returning(lambda out: out.to_sparse()),
    "NaN": module_returning(lambda out: out * math.nan),
    "transposed": module_returning(lambda out: out.transpose(0, 1)),
    "a scalar": module_returning(lambda out: out.sum()),
    "the input unchanged": module_with(lambda self, x: x),
    "positions from 1": module_with(lambda self, x: self.dropout(x + self.table[1 : x.size(1) + 1][None])),
    "positions by batch index": module_with(lambda self, x: self.dropout(x + self.table[: x.size(0), None])),
    "twice the table": module_with(lambda self, x: self.dropout(x + 2 * _rows(self, x))),
    "no dropout at all": module_with(lambda self, x: x + _rows(self, x)),
    "dropout of the tokens only": module_with(lambda self, x: self.dropout(x) + _rows(self, x)),
    "F.dropout in eval mode too": module_with(lambda self, x: F.dropout(x + _rows(self, x), self.dropout.p)),
    "PyTorch's default rate": _rate(lambda p: 0.5),
    "the tutorials' rate written in": _rate(lambda p: 0.1),
    "half the rate": _rate(lambda p: p / 2),
    "no rescaling": module_with(
        lambda self, x: (x + _rows(self, x)) * (self.dropout(torch.ones_like(x)) != 0 if self.training else 1.0)),
    "an input changed in place": module_with(lambda self, x: self.dropout(x.add_(_rows(self, x)))),
    "an answer that changes between calls": module_with(
        lambda self, x: self.dropout(x + _rows(self, x)) + torch.rand(())),
    "a width written in": module_with(lambda self, x: self.dropout(x + self.table[: x.size(1)].reshape(1, -1, 12))),
}
BATCH_FIRST_RIGHT = {
    "pe_lib's module": answer(lambda emb_size, dropout: pe_lib.SinusoidalPositionalEncoding(emb_size, dropout=dropout)),
    "float64 out": module_returning(lambda out: out.double()),
    "F.dropout with the module's mode": module_with(
        lambda self, x: F.dropout(x + _rows(self, x), self.dropout.p, training=self.training)),
    "the rows picked by position ids": module_with(
        lambda self, x: self.dropout(x + self.table[torch.arange(x.size(1))].expand_as(x))),
}


def _pe(seq, d_model):
    return torch.from_numpy(pe_lib.sinusoidal_encoding(seq, d_model)).float()


def _tokens(scale, positions=lambda ids, d: _pe(ids.shape[1], d)):
    """token_table[ids] * scale(d) + positions(ids, d): the embedding with one part changed."""
    return answer(lambda ids, table: table[ids] * scale(table.shape[1]) + positions(ids, table.shape[1]))


EMBEDDING_WRONG = wrong_kinds(
    COMMON, without(ARRAY, "an empty array"),
    an_input_changed_in_place=mutating_first_argument,
    not_scaled=_tokens(lambda d: 1.0),
    the_sum_scaled=answer(lambda ids, table: (table[ids] + _pe(ids.shape[1], table.shape[1])) * table.shape[1] ** 0.5),
    times_d_model=_tokens(lambda d: d),
    divided=_tokens(lambda d: d**-0.5),
    the_tokens_alone=answer(lambda ids, table: table[ids]),
    no_positions=_tokens(lambda d: d**0.5, lambda ids, d: 0.0),
    positions_by_batch=_tokens(lambda d: d**0.5, lambda ids, d: _pe(ids.shape[0], d)[:, None]),
    positions_from_1=_tokens(lambda d: d**0.5, lambda ids, d: _pe(ids.shape[1] + 1, d)[1:]),
    a_list=returning(lambda v, *a: v.tolist()),
    a_NumPy_array=returning(lambda v, *a: v.numpy()),
    float16=returning(lambda v, *a: v.half()),
    a_sparse_tensor=returning(lambda v, *a: v.to_sparse()),
    the_table_scaled_in_place=answer(lambda ids, t: t.mul_(t.shape[1] ** 0.5)[ids] + _pe(ids.shape[1], t.shape[1])),
)
EMBEDDING_RIGHT = {
    "float64": returning(lambda v, *a: v.double()),
    "requires grad": returning(lambda v, *a: v.detach().requires_grad_()),
    "nn.functional.embedding": answer(
        lambda ids, table: F.embedding(ids, table) * math.sqrt(table.shape[1]) + _pe(ids.shape[1], table.shape[1])),
}


# --- notebook 07 -----------------------------------------------------------------------------------


def _rotate_half_without_the_minus(x, positions, base):
    d = x.shape[-1]
    angles = np.outer(positions, base ** (-np.arange(0, d, 2) / d))
    cos, sin = np.cos(np.concatenate([angles] * 2, -1)), np.sin(np.concatenate([angles] * 2, -1))
    return x * cos + np.concatenate([x[..., d // 2 :], x[..., : d // 2]], -1) * sin


ROPE_HALF_WRONG = wrong_kinds(
    COMMON, ARRAY,
    an_input_changed_in_place=mutating_first_argument,
    no_rotation=answer(lambda x, positions, base: np.asarray(x, dtype=np.float64).copy()),
    the_wrong_way=answer(lambda x, positions, base: rope_half(x, -np.asarray(positions), base)),
    interleaved_pairs=answer(lambda x, positions, base: pe_lib.apply_rope(x, positions, base=base)),
    positions_ignored=answer(lambda x, positions, base: rope_half(x, np.arange(len(x)), base)),
    base_ignored=answer(lambda x, positions, base: rope_half(x, positions, 1e4)),
    no_minus_sign=answer(_rotate_half_without_the_minus),
    positions_plus_one=answer(lambda x, positions, base: rope_half(x, np.asarray(positions) + 1, base)),
    rounded_to_ints=returning(lambda v, *a: np.rint(v).astype(int)),
    in_bfloat16_and_off=returning(lambda v, *a: torch.tensor(v + 0.05).bfloat16()),
    x_turned_in_place=answer(lambda x, positions, base: (x.__setitem__(Ellipsis, rope_half(x, positions, base)), x)[1]),
)
ROPE_HALF_RIGHT = {
    **FORMS,
    "pe_lib's apply_rope": answer(lambda x, positions, base: pe_lib.apply_rope(x, positions, base=base, layout="half")),
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
    "a float16 tensor": returning(lambda v, *a: torch.as_tensor(v).half()),
}


def _odd_slopes(n):  # the extra heads take the odd-numbered slopes of twice as many heads
    m = 2 ** int(math.log2(n))
    extra = [2.0 ** (-8 * (h + 1) / (2 * m)) for h in range(2 * m)][1::2][: n - m]
    return np.array([2.0 ** (-8 * (h + 1) / m) for h in range(m)] + extra) * (1.0 if n > m else 1.5)


ALIBI_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_power_of_two_formula=answer(lambda n: 2.0 ** (-8 * np.arange(1, n + 1) / n)),
    off_by_one=answer(lambda n: 2.0 ** (-8 * np.arange(n) / n)),
    the_first_n_of_twice_as_many=answer(lambda n: alibi_slopes(2 * n)[:n] if n > 1 else np.array([2.0**-8])),
    negative=returning(lambda v, *a: -v),
    the_exponents=returning(lambda v, *a: np.log2(v)),
    sorted=returning(lambda v, *a: np.sort(v) if np.any(np.diff(v) < 0) else v * 0),
    all_the_same=answer(lambda n: np.full(n, 0.5)),
    written_for_12=answer(lambda n: alibi_slopes(12)),
    the_odd_slopes=answer(_odd_slopes),
    rounded=returning(lambda v, *a: np.round(v, 2)),
)
ALIBI_RIGHT = {
    **FORMS,
    "pe_lib's": answer(pe_lib.alibi_slopes),
    "a bfloat16 tensor": returning(lambda v, *a: torch.as_tensor(v).bfloat16()),
}


def _slip(slip):
    return answer(lambda r, b=True, nb=32, md=128: ex07._t5_variant(r, b, nb, md, slip=slip))


T5_WRONG = wrong_kinds(
    COMMON, SCALAR,
    always_0=answer(lambda r, b=True, nb=32, md=128: 0),
    the_halves_swapped=_slip("swapped"),
    no_halving=_slip("no halving"),
    rounded=_slip("round"),
    no_cap=_slip("no cap"),
    causal_absolute=_slip("abs"),
    causal_future=_slip("future"),
    the_exact_range_too_long=_slip("exact range"),
    the_defaults_written_in=answer(lambda r, b=True, nb=32, md=128: t5_bucket(r, b)),
    half_a_bucket_more_when_far=answer(lambda r, b=True, nb=32, md=128: t5_bucket(r, b, nb, md) + 0.5 * (abs(r) > 8)),
)
T5_RIGHT = {
    **SCALAR_FORMS,
    "pe_lib's": answer(lambda r, b, n, m: pe_lib.t5_relative_bucket(r, bidirectional=b, num_buckets=n, max_distance=m)),
    "a NumPy int32": returning(lambda v, *a: np.int32(v)),
    "an int tensor": returning(lambda v, *a: torch.tensor(v)),
}


# --- notebook 08 -----------------------------------------------------------------------------------

NTK_WRONG = wrong_kinds(
    COMMON, SCALAR,
    the_base_times_s=answer(lambda b, s, d: b * s),
    the_exponent_upside_down=answer(lambda b, s, d: b * s ** ((d - 2) / d)),
    divided=answer(lambda b, s, d: b / s ** (d / (d - 2))),
    exponent_d_over_2=answer(lambda b, s, d: b * s ** (d / 2)),
    the_base_unchanged=answer(lambda b, s, d: b),
    rounded_to_an_int=answer(lambda b, s, d: round(ntk_base(b, s, d))),
    a_first_order_exponent=answer(lambda b, s, d: b * s ** (1 + 2 / d)),
    a_near_miss=returning(lambda v, *a: v * (1 + 3e-6)),
    integer_division_in_the_exponent=answer(lambda b, s, d: b * s ** (d // (d - 2))),
    head_dim_written_in=answer(lambda b, s, d: ntk_base(b, s, 128)),
    the_new_frequencies=answer(lambda b, s, d: pe_lib.rope_frequencies(d, base=ntk_base(b, s, d))),
)
NTK_RIGHT = {
    **SCALAR_FORMS,
    "a float32": returning(lambda v, *a: np.float32(v)),
    "a float64 tensor": returning(lambda v, *a: torch.tensor(v, dtype=torch.float64)),
    "through logarithms": answer(lambda b, s, d: math.exp(math.log(b) + d / (d - 2) * math.log(s))),
}


def _turns(d, b, L):
    return L * b ** (-np.arange(0, d, 2) / d) / (2 * np.pi)


UNTOUCHED_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_papers_rule=answer(lambda d, b, L, f: np.flatnonzero(_turns(d, b, L) >= f)),
    radians=answer(lambda d, b, L, f: np.flatnonzero(2 * np.pi * _turns(d, b, L) >= f)),
    the_wrong_way_round=answer(lambda d, b, L, f: np.flatnonzero(_turns(d, b, L) < f)),
    from_1=returning(lambda v, *a: v + 1),
    descending=returning(lambda v, *a: v[::-1].copy() if len(v) > 1 else v + 1),
    one_too_many=returning(lambda v, *a: np.arange(len(v) + 1)),
    a_mask=answer(lambda d, b, L, f: _turns(d, b, L) >= f),
    floats=returning(lambda v, *a: v.astype(float)),
    a_list_of_floats=returning(lambda v, *a: [float(i) for i in v]),
    a_float_tensor=returning(lambda v, *a: torch.from_numpy(v).float()),
    every_pair=answer(lambda d, b, L, f: np.arange(d // 2)),
    numbers_and_a_row=returning(lambda v, *a: [*v.tolist(), [1]]),
    past_the_end=answer(lambda d, b, L, f: np.arange(d // 2 + 1)),
)
UNTOUCHED_RIGHT = {
    "a list": returning(lambda v, *a: v.tolist()),
    "a tuple": returning(lambda v, *a: tuple(v.tolist())),
    "an int32 array": returning(lambda v, *a: v.astype(np.int32)),
    "a long tensor": returning(lambda v, *a: torch.from_numpy(v)),
    "an int tensor": returning(lambda v, *a: torch.from_numpy(v).int()),
    "a sparse long tensor": returning(lambda v, *a: torch.from_numpy(v).to_sparse()),
    "range, as a list": returning(lambda v, *a: list(range(len(v)))),
    "a range": returning(lambda v, *a: range(len(v))),
}


# --- notebook 09 -----------------------------------------------------------------------------------


def _ported(x, positions, config):
    """The notebook's port: the base read under GPT-NeoX's key, so 10,000 for a Llama config."""
    d = config["hidden_size"] // config["num_attention_heads"]
    base = config.get("rotary_emb_base", 10000.0)
    return fixed_rope(x, positions, {**config, "rope_theta": base, "hidden_size": d, "num_attention_heads": 1})


def _writes_the_base_into_the_config(x, positions, config):
    config["rotary_emb_base"] = config["rope_theta"]  # the port now reads the right base; the caller's config changed
    return _ported(x, positions, config)


def _bfloat16_angles(x, positions, config):
    theta = torch.tensor(config["rope_theta"] ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1])).bfloat16()
    angles = torch.tensor(positions).bfloat16()[:, None] * theta
    return ex09._half(x, angles.double().numpy()).astype(x.dtype)


def _float32_angles(x, positions, config):
    theta = np.float32(config["rope_theta"] ** (-np.arange(0, x.shape[-1], 2) / x.shape[-1]))
    return ex09._half(x, np.outer(np.float32(positions), theta)).astype(x.dtype)


ROPE_FIX_WRONG = wrong_kinds(
    COMMON, ARRAY,
    an_input_changed_in_place=mutating_first_argument,
    the_port_unchanged=answer(_ported),
    a_base_written_in=answer(lambda x, p, c: fixed_rope(x, p, {**c, "rope_theta": 500000.0})),
    float32_for_float64=returning(lambda v, *a: v.astype(np.float32)),
    float64_for_float32=returning(lambda v, *a: v.astype(np.float64)),
    a_list_of_float64_numbers=returning(lambda v, *a: v.tolist() if v.dtype == np.float32 else v.astype(np.float32)),
    bfloat16=returning(lambda v, *a: torch.from_numpy(v).bfloat16()),
    float16=returning(lambda v, *a: v.astype(np.float16)),
    the_config_changed_in_place=answer(_writes_the_base_into_the_config),
    a_key_popped=answer(lambda x, p, c: fixed_rope(x, p, {**c, "rope_theta": c.pop("rope_theta")})),
    interleaved_pairs=answer(lambda x, p, c: pe_lib.apply_rope(x, p, base=c["rope_theta"]).astype(x.dtype)),
    positions_ignored=answer(lambda x, p, c: fixed_rope(x, np.arange(len(p)), c)),
    bfloat16_angles=answer(_bfloat16_angles),
)
ROPE_FIX_RIGHT = {
    "pe_lib's apply_rope in x's dtype": answer(
        lambda x, p, c: pe_lib.apply_rope(x, p, base=c["rope_theta"], layout="half").astype(x.dtype)),
    "a tensor of x's dtype": returning(lambda v, *a: torch.from_numpy(v)),
    "float32 angles, x's dtype": answer(_float32_angles),
    "the config copied, then changed": answer(lambda x, p, c: _ported(x, p, {**c, "rotary_emb_base": c["rope_theta"]})),
    "a sparse tensor of x's dtype": returning(lambda v, *a: torch.from_numpy(v).to_sparse()),
}


def _rounded(bits, mode):
    return answer(lambda p: float(ex09._rounded(p, bits, mode)))


BF16_WRONG = wrong_kinds(
    COMMON, SCALAR,
    unchanged=answer(lambda p: p),
    rounded_down=_rounded(8, "down"),
    ties_up=_rounded(8, "up"),
    float16s=_rounded(11, "even"),
    seven_bits=_rounded(7, "even"),
    nine_bits=_rounded(9, "even"),
    through_float16=answer(lambda p: float(torch.tensor(float(p)).half().float()) if p < 65504 else float(p)),
    spacing_off_by_one=answer(lambda p: p if p < 256 else round(p / 2 ** (p.bit_length() - 7)) << (p.bit_length() - 7)),
)
BF16_RIGHT = {
    **SCALAR_FORMS,
    "torch's rounding": answer(lambda p: float(torch.tensor(float(p)).bfloat16().float())),
    "a bfloat16 tensor": answer(lambda p: torch.tensor(float(p)).bfloat16()),
    "an int": returning(lambda v, *a: int(v)),
}


# --- notebook 10 -----------------------------------------------------------------------------------

PADDED_WRONG = wrong_kinds(
    COMMON, ARRAY,
    an_input_changed_in_place=mutating_first_argument,
    the_stub=answer(lambda m: torch.arange(m.shape[1]).expand(m.shape)),
    the_running_sum=answer(lambda m: m.cumsum(-1)),
    minus_one_on_the_padding=answer(lambda m: m.cumsum(-1) - 1),
    counted_from_the_right=answer(lambda m: (m.flip(-1).cumsum(-1).flip(-1) - 1).masked_fill(m == 0, 0)),
    a_NumPy_array=returning(lambda v, *a: v.numpy()),
    a_list=returning(lambda v, *a: v.tolist()),
    int32=returning(lambda v, *a: v.int()),
    float32=returning(lambda v, *a: v.float()),
    a_sparse_tensor=returning(lambda v, *a: v.to_sparse()),
    bools=returning(lambda v, *a: v.bool()),
    two_on_the_padding=returning(lambda v, m: v.masked_fill(m == 0, 2)),
    the_mask_doubled_in_place=answer(lambda m: (m.mul_(2), padded_positions(m // 2))[1]),
)
PADDED_RIGHT = {
    "transformers 4.x's fill of 1": answer(lambda m: (m.cumsum(-1) - 1).masked_fill(m == 0, 1)),
    "clamped at 0": answer(lambda m: (m.cumsum(-1) - 1).clamp(min=0)),
    "NumPy, then back to torch.long": answer(lambda m: torch.from_numpy(np.maximum(np.cumsum(m.numpy(), -1) - 1, 0))),
    "a non-contiguous long tensor": returning(lambda v, *a: v.T.contiguous().T),
}


# --- notebook 11 -----------------------------------------------------------------------------------


def _one_dimensional_frequencies(rows, cols, head_dim, base):
    freq = base ** (-2 * np.arange(head_dim // 4) / head_dim)
    return np.concatenate([np.outer(cols, freq), np.outer(rows, freq)], 1)


AXIAL_WRONG = wrong_kinds(
    COMMON, ARRAY,
    an_input_changed_in_place=mutating_first_argument,
    rows_first=answer(lambda r, c, d, b: axial_angles(c, r, d, b)),
    one_dimensional_frequencies=answer(_one_dimensional_frequencies),
    the_token_index=answer(lambda r, c, d, b: axial_angles(np.arange(len(r)), np.arange(len(r)), d, b)),
    columns_only=answer(lambda r, c, d, b: axial_angles(c, c, d, b)),
    alternating=returning(lambda v, *a: np.stack(np.split(v, 2, 1), -1).reshape(len(v), -1)),
    turned_the_wrong_way=returning(lambda v, *a: -v),
    wrapped_to_half_a_turn=returning(lambda v, *a: np.mod(v, np.pi)),
    in_degrees=returning(lambda v, *a: np.degrees(v)),
    the_cosines=returning(lambda v, *a: np.cos(v)),
    half_a_turn_more=returning(lambda v, *a: v + np.pi),
    head_dim_written_in=answer(lambda r, c, d, b: axial_angles(r, c, 16, b)[:, : d // 2]),
)
AXIAL_RIGHT = {
    **FORMS, **FORMS_2D,
    "wrapped to (-pi, pi]": returning(lambda v, *a: np.angle(np.exp(1j * v))),
    "wrapped to [0, 2 pi)": returning(lambda v, *a: np.mod(v, 2 * np.pi)),
    "a whole turn more": returning(lambda v, *a: v + 2 * np.pi),
    "wrapped, in float32": returning(lambda v, *a: torch.remainder(torch.tensor(v, dtype=torch.float32), 2 * math.pi)),
}


def _after_shifted(by):
    """M-RoPE ids whose text after the image is moved by by(height, width)."""
    return answer(lambda tb, h, w, ta: mrope_ids(tb, h, w, ta) + np.r_[np.zeros(tb + h * w, int), [by(h, w)] * ta])


MROPE_WRONG = wrong_kinds(
    COMMON, ARRAY,
    the_image_as_a_line=_after_shifted(lambda h, w: h * w - max(h, w)),
    the_text_after_at_the_largest_id=_after_shifted(lambda h, w: -1),
    height_and_width_swapped=returning(lambda v, *a: v[[0, 2, 1]]),
    the_image_from_0=answer(lambda tb, h, w, ta: mrope_ids(0, h, w, 0) if tb == ta == 0 else mrope_ids(tb, h, w, ta)
                            - np.r_[np.zeros(tb, int), np.full(h * w, tb), np.zeros(ta, int)]),
    one_dimensional=answer(lambda tb, h, w, ta: np.tile(np.arange(tb + h * w + ta), (3, 1))),
    floats=returning(lambda v, *a: v.astype(float)),
    a_float_tensor=returning(lambda v, *a: torch.from_numpy(v).float()),
    a_list_of_floats=returning(lambda v, *a: v.astype(float).tolist()),
    bools=returning(lambda v, *a: v.astype(bool)),
    transposed=returning(lambda v, *a: v.T.copy()),
    square_images_only=answer(lambda tb, h, w, ta: mrope_ids(tb, h, h, ta)),
)
MROPE_RIGHT = {
    "a list": returning(lambda v, *a: v.tolist()),
    "int32": returning(lambda v, *a: v.astype(np.int32)),
    "a long tensor": returning(lambda v, *a: torch.from_numpy(v)),
    "an int tensor": returning(lambda v, *a: torch.from_numpy(v).int()),
    "a sparse long tensor": returning(lambda v, *a: torch.from_numpy(v).to_sparse()),
    "Fortran order": returning(lambda v, *a: np.asfortranarray(v)),
}


# --- every grader: its worked solution, its wrong answers, its right ones in other forms ------------

GRADERS = {
    "check_permutation_matrix": (ex01.check_permutation_matrix, permutation_matrix, PERMUTATION_WRONG,
                                 PERMUTATION_RIGHT),
    "check_equivariance_test": (ex01.check_equivariance_test, is_permutation_equivariant, EQUIVARIANCE_WRONG,
                                EQUIVARIANCE_RIGHT),
    "check_binary_encoding": (ch02.check_binary_encoding, binary_encoding, BINARY_WRONG, BINARY_RIGHT),
    "check_bit_flips": (ch02.check_bit_flips, bit_flips, BIT_FLIPS_WRONG, BIT_FLIPS_RIGHT),
    "check_chapter_fix": (ex03.check_chapter_fix, chapter_fix, CHAPTER_WRONG, CHAPTER_RIGHT),
    "check_concatenated_rotation": (ex03.check_concatenated_rotation, concatenated_rotation, ROTATION_WRONG,
                                    ROTATION_RIGHT),
    "check_timing_signal": (ex03.check_timing_signal, timing_signal, TIMING_WRONG, TIMING_RIGHT),
    "check_offset_similarity": (ch04.check_offset_similarity, offset_similarity, OFFSET_WRONG, OFFSET_RIGHT),
    "check_look_back": (ch04.check_look_back, look_back, LOOK_BACK_WRONG, LOOK_BACK_RIGHT),
    "check_similarity_by_offset": (ex05.check_similarity_by_offset, similarity_by_offset, SIMILARITY_WRONG,
                                   SIMILARITY_RIGHT),
    "check_shift_targets": (ex05.check_shift_targets, shift_targets, SHIFT_WRONG, SHIFT_RIGHT),
    "check_batch_first_positional": (ex06.check_batch_first_positional, BatchFirst, BATCH_FIRST_WRONG,
                                     BATCH_FIRST_RIGHT),
    "check_embedding_forward": (ex06.check_embedding_forward, embed, EMBEDDING_WRONG, EMBEDDING_RIGHT),
    "check_rope_half": (ex07.check_rope_half, rope_half, ROPE_HALF_WRONG, ROPE_HALF_RIGHT),
    "check_alibi_slopes": (ex07.check_alibi_slopes, alibi_slopes, ALIBI_WRONG, ALIBI_RIGHT),
    "check_t5_bucket": (ex07.check_t5_bucket, t5_bucket, T5_WRONG, T5_RIGHT),
    "check_ntk_base": (ex08.check_ntk_base, ntk_base, NTK_WRONG, NTK_RIGHT),
    "check_untouched_pairs": (ex08.check_untouched_pairs, untouched_pairs, UNTOUCHED_WRONG, UNTOUCHED_RIGHT),
    "check_rope_fix": (ex09.check_rope_fix, fixed_rope, ROPE_FIX_WRONG, ROPE_FIX_RIGHT),
    "check_bf16_position": (ex09.check_bf16_position, bf16_position, BF16_WRONG, BF16_RIGHT),
    "check_padded_positions": (ex10.check_padded_positions, padded_positions, PADDED_WRONG, PADDED_RIGHT),
    "check_axial_angles": (ex11.check_axial_angles, axial_angles, AXIAL_WRONG, AXIAL_RIGHT),
    "check_mrope_ids": (ex11.check_mrope_ids, mrope_ids, MROPE_WRONG, MROPE_RIGHT),
}
# fmt: on
WRONG = [(grader, mistake) for grader, spec in GRADERS.items() for mistake in spec[2]]
RIGHT = [(grader, form) for grader, spec in GRADERS.items() for form in ("the worked solution", *spec[3])]


def _learner(grader, kind, name):
    _, solution, wrong, right = GRADERS[grader]
    if name == "the worked solution":
        return solution
    return (wrong if kind == "wrong" else right)[name](solution)


@pytest.mark.parametrize(("grader", "mistake"), WRONG, ids=[f"{g}: {m}" for g, m in WRONG])
def test_no_wrong_answer_is_correct_and_every_one_gets_feedback_with_its_tiers(grader, mistake):
    check = GRADERS[grader][0]
    feedback = check(_learner(grader, "wrong", mistake), hint=3)  # a traceback here fails the test
    assert isinstance(feedback, Feedback), type(feedback)
    assert not feedback.passed, f"{grader} says Correct to {mistake!r}: {feedback}"
    assert str(feedback).startswith(f"[{feedback.exercise}] Not yet: ") and feedback.message.strip()
    assert "could not read your answer" not in feedback.message, f"only the safety net caught it: {feedback.message}"
    assert len(feedback.hints) == 3 and feedback.shown == 3  # the grader's tiers, the formula last


@pytest.mark.parametrize(("grader", "form"), RIGHT, ids=[f"{g}: {f}" for g, f in RIGHT])
def test_a_right_answer_passes_in_every_form_the_exercise_allows(grader, form):
    check = GRADERS[grader][0]
    feedback = check(_learner(grader, "right", form))
    assert feedback.passed, f"{grader} refuses {form!r}: {feedback}"
    assert str(feedback).startswith(f"[{feedback.exercise}] Correct: ") and "Hint" not in str(feedback)


def test_every_grader_of_the_course_is_here_and_meets_at_least_20_wrong_answers():
    modules = (ex01, ch02, ex03, ch04, ex05, ex06, ex07, ex08, ex09, ex10, ex11)
    graders = {name for module in modules for name in dir(module) if name.startswith("check_")}
    assert graders == set(GRADERS), graders ^ set(GRADERS)
    few = {name: len(spec[2]) for name, spec in GRADERS.items() if len(spec[2]) < 20}
    assert not few, few
    assert len(WRONG) >= 20 * len(GRADERS) and all(len(spec[3]) >= 3 for spec in GRADERS.values())


class _Raises:
    """An object whose every conversion fails: NumPy's __array__ and len() raise."""

    def __array__(self, *args, **kwargs):
        raise ZeroDivisionError("no array here")

    def __len__(self):
        raise ZeroDivisionError("no length either")


def _nested_tensor():
    with warnings.catch_warnings():  # nested tensors are a prototype: their constructor warns
        warnings.simplefilter("ignore")
        return torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])


# Odd things a function can return (a slip, a paste, a cell run out of order), for every grader at once.
ODD_RETURNS = {
    "a datetime64": np.datetime64("2020-01-01"), "a Decimal": decimal.Decimal("1.5"),
    "a Fraction": fractions.Fraction(1, 3), "bytes": b"\x00\x01", "a bytearray": bytearray(b"ab"),
    "a memoryview": memoryview(b"ab"), "a range": range(3), "a slice": slice(1, 2), "Ellipsis": ..., "a type": int,
    "a function": len, "a module": np, "a torch.Size": torch.Size([2, 3]), "a torch dtype": torch.float32,
    "a NumPy dtype": np.dtype("f8"), "a list holding None": [1.0, None], "a list of dicts": [{"a": 1}],
    "a list of lists of strings": [["a"], ["b"]], "an object array": np.array([1.0, 2.0], dtype=object),
    "a masked array": np.ma.masked_array([1.0, 2.0], mask=[0, 1]), "an int too big for int64": 10**400,
    "a tuple of tensors of different lengths": (torch.ones(2), torch.ones(3)),
    "a list holding a tensor that requires grad": [torch.ones(2, requires_grad=True)],
    "the largest uint64": np.uint64(2**64 - 1), "a long double": np.longdouble(1.5),
    "a bool tensor": torch.ones(3, dtype=torch.bool), "a structured array": np.zeros(2, dtype=[("a", "f8")]),
    "an empty tensor": torch.empty(0), "an empty table": np.zeros((0, 5)), "a 4-d array": np.zeros((2, 3, 4, 5)),
    "an infinite tensor": torch.tensor(math.inf), "a NaN in bfloat16": torch.tensor(math.nan).bfloat16(),
    "a parameter": nn.Parameter(torch.ones(2)), "a complex number": 1 + 2j, "an exception object": ValueError("x"),
    "an object whose conversions raise": _Raises(), "a nested tensor": _nested_tensor(),
}  # fmt: skip


@pytest.mark.parametrize("grader", list(GRADERS))
def test_odd_returns_get_a_not_yet_never_a_traceback(grader):
    check = GRADERS[grader][0]
    for name, value in ODD_RETURNS.items():
        if grader == "check_batch_first_positional":  # the module's forward returns it
            learner = type("Module", (BatchFirst,), {"forward": lambda self, x, value=value: value})
        else:
            learner = lambda *args, value=value: value  # noqa: E731
        feedback = check(learner)
        assert not feedback.passed and "could not read your answer" not in feedback.message, (name, feedback)
