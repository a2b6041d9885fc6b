"""pe_lib.grading and every grader: wrong, odd and hostile answers never pass and never crash.

Each grader gets the worked solution (it must pass, also as torch, bfloat16, requiring grad or a
list) and the mistakes learners make around the maths: a forgotten `return`, a `print` instead of
one, an exception, an input changed in place, an answer that changes between calls, and sizes
that only some almost-right answers get wrong (odd widths, more than 256 positions, rows far out).
Tiered hints: a stub's feedback names the symptom and never the answer; hint=1..3 add the tiers,
the last one a formula that passes; a bad `hint` is refused before the learner's code runs.
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

import pe_lib
from pe_lib import ch01_order_exercises as ch01
from pe_lib import ch02_naive as ch02
from pe_lib import ch03_sinusoidal_exercises as ch03
from pe_lib import ch04_pendulum as ch04
from pe_lib import ch05_learned as ch05
from pe_lib import ch06_pipeline as ch06
from pe_lib import experiments, grading
from pe_lib.grading import Feedback, as_numbers, hint_level, run_safely, with_hints

# --- the worked solutions, as the solutions notebooks write them -----------------------------


def permutation_matrix(order):
    return np.eye(len(order))[order]


def is_permutation_equivariant(f, x, order):
    return bool(np.allclose(f(x[order]), f(x)[order]))


def binary_encoding(n, d_model):
    if n > 2**d_model:
        raise ValueError(f"{d_model} bits hold at most {2**d_model} positions, got n={n}")
    return ((np.arange(n)[:, None] >> np.arange(d_model)[None, :]) & 1).astype(float)


def bit_flips(p):
    return bin(p ^ (p + 1)).count("1")


def timing_signal(n, d_model, max_timescale=1e4):
    pairs = d_model // 2
    angles = np.arange(n)[:, None] * max_timescale ** (-np.arange(pairs) / max(pairs - 1, 1))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def chapter_fixed(position, d_model):
    rates = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / d_model)
    angles = position * rates
    row = np.zeros(d_model)
    row[0::2], row[1::2] = np.sin(angles[0::2]), np.cos(angles[1::2])
    return row


def concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def offset_similarity(k, d_model, base=10000.0):
    return float(np.sum(np.cos(pe_lib.frequencies(d_model, base=base) * k)))


def look_back(k, d_model):
    return pe_lib.relative_rotation(-k, d_model)


def similarity_by_offset(table):
    table = np.asarray(table, dtype=float)
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


class BatchFirstPositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        table = torch.zeros((maxlen, emb_size))
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * den), torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("table", table)

    def forward(self, x):
        return self.dropout(x + self.table[: x.size(1)].unsqueeze(0))


# checker, the solution, and whether the solution returns numbers that may come as other types
GRADERS = {
    "permutation matrix": (ch01.check_permutation_matrix, permutation_matrix, True),
    "equivariance test": (ch01.check_equivariance_test, is_permutation_equivariant, False),
    "binary encoding": (ch02.check_binary_encoding, binary_encoding, True),
    "bit flips": (ch02.check_bit_flips, bit_flips, False),
    "timing signal": (ch03.check_timing_signal, timing_signal, True),
    "spot the bug": (ch03.check_chapter_fix, chapter_fixed, True),
    "concatenated rotation": (ch03.check_concatenated_rotation, concatenated_rotation, True),
    "offset similarity": (ch04.check_offset_similarity, offset_similarity, True),
    "look back": (ch04.check_look_back, look_back, True),
    "similarity by offset": (ch05.check_similarity_by_offset, similarity_by_offset, True),
    "shift targets": (ch05.check_shift_targets, shift_targets, True),
    "embedding forward": (ch06.check_embedding_forward, embed, True),
}
FUNCTION_GRADERS = list(GRADERS)


def verdict(checker, answer):
    feedback = checker(answer)
    assert isinstance(feedback, Feedback), f"{checker.__name__} returned {type(feedback).__name__}"
    return feedback


@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_every_grader_accepts_its_worked_solution(name):
    checker, solution, _ = GRADERS[name]
    feedback = verdict(checker, solution)
    assert feedback.passed, feedback


def test_the_batch_first_grader_accepts_its_worked_solution():
    assert ch06.check_batch_first_positional(BatchFirstPositionalEncoding).passed


# --- the same right answer in other numeric types --------------------------------------------


def _as_torch(value, dtype=None, grad=False):
    tensor = torch.as_tensor(np.asarray(value, dtype=np.float64) if not torch.is_tensor(value) else value)
    tensor = tensor.to(dtype) if dtype is not None else tensor
    return tensor.requires_grad_() if grad and tensor.is_floating_point() else tensor


CONVERSIONS = {
    "a torch tensor": lambda value: _as_torch(value, torch.float32),
    "a tensor that requires grad": lambda value: _as_torch(value, torch.float64, grad=True),
    "a list": lambda value: np.asarray(value.detach() if torch.is_tensor(value) else value).tolist(),
}


# Every numeric grader and every type, but a list for the exercise that asks for a torch tensor (below).
TYPED = [
    (name, conversion)
    for name in FUNCTION_GRADERS
    if GRADERS[name][2] and name != "shift targets"  # token ids: integer targets, tested as tensors already
    for conversion in CONVERSIONS
    if not (name == "embedding forward" and conversion == "a list")
]


@pytest.mark.parametrize("name, conversion", TYPED)
def test_a_right_answer_passes_in_any_numeric_type(name, conversion):
    checker, solution, _ = GRADERS[name]
    convert = CONVERSIONS[conversion]
    feedback = verdict(checker, lambda *args: convert(solution(*args)))
    assert feedback.passed, feedback


def test_a_list_where_a_tensor_is_asked_for_gets_a_hint():
    feedback = verdict(ch06.check_embedding_forward, lambda ids, table: embed(ids, table).tolist())
    assert not feedback.passed and "return a torch tensor" in feedback.message


@pytest.mark.parametrize(
    "name", ["timing signal", "spot the bug", "offset similarity", "similarity by offset", "look back"]
)
def test_a_right_answer_in_bfloat16_passes(name):
    checker, solution, _ = GRADERS[name]
    feedback = verdict(checker, lambda *args: _as_torch(solution(*args), torch.bfloat16))
    assert feedback.passed, feedback


def test_a_bfloat16_table_still_fails_when_it_is_wrong():
    def swapped_in_bfloat16(n, d_model, max_timescale=1e4):
        table = timing_signal(n, d_model, max_timescale)[:, np.r_[d_model // 2 : d_model, 0 : d_model // 2]]
        return torch.tensor(table, dtype=torch.bfloat16)  # cos where sin belongs

    feedback = ch03.check_timing_signal(swapped_in_bfloat16)
    assert not feedback.passed and "swapped" in feedback.message


# --- mistakes around the maths, for every grader ---------------------------------------------


@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_a_forgotten_return_is_named(name):
    checker, solution, _ = GRADERS[name]

    def forgot_return(*args):
        result = solution(*args)  # computed, then dropped: the function ends without `return result`
        del result

    feedback = verdict(checker, forgot_return)
    assert not feedback.passed and "forget the `return`" in feedback.message, feedback


@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_print_instead_of_return_is_named(name):
    checker, solution, _ = GRADERS[name]

    def prints_it(*args):
        print(solution(*args))

    feedback = verdict(checker, prints_it)
    assert not feedback.passed and "use `return`, not `print`" in feedback.message, feedback


@pytest.mark.parametrize("error", [IndexError("index 5 is out of bounds"), ZeroDivisionError("division by zero")])
@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_an_exception_becomes_a_hint_not_a_traceback(name, error):
    checker, _, _ = GRADERS[name]

    def raises(*args):
        raise error

    feedback = verdict(checker, raises)
    assert not feedback.passed and type(error).__name__ in feedback.message, feedback


@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_an_answer_that_changes_between_calls_is_named(name):
    checker, solution, _ = GRADERS[name]
    calls = []

    def remembers(*args):  # a global that grows: the second call on the same input answers differently
        calls.append(1)
        result = solution(*args)
        if len(calls) % 2 == 0:
            return not result if isinstance(result, bool) else as_numbers(result) + 1
        return result

    feedback = verdict(checker, remembers)
    assert not feedback.passed, feedback


def test_a_function_that_is_not_a_function_is_a_hint():
    feedback = ch03.check_timing_signal("timing_signal")
    assert not feedback.passed and "TypeError" in feedback.message


# --- an input changed in place, as learners write it ------------------------------------------


def normalises_in_place(table):
    table /= np.linalg.norm(table, axis=1, keepdims=True)  # the caller's table is now changed
    cosines = table @ table.T
    return np.array([np.diagonal(cosines, k).mean() for k in range(len(table))])


def shifts_in_place(tokens, k):
    tokens[:, k:] = tokens[:, :-k].clone()
    tokens[:, :k] = experiments.IGNORE
    return tokens


def scales_the_table_in_place(token_ids, token_table):
    token_table *= math.sqrt(token_table.shape[1])
    pe = torch.from_numpy(pe_lib.sinusoidal_encoding(token_ids.shape[1], token_table.shape[1])).float()
    return token_table[token_ids] + pe


def sorts_the_order(order):
    order.sort()  # "sorted is easier to read" - and the caller's list is sorted too
    return np.eye(len(order))


def shuffles_x_in_place(f, x, order):
    x[:] = x[order]
    return bool(np.allclose(f(x), f(x)))


class AddsInPlace(BatchFirstPositionalEncoding):
    def forward(self, x):
        x += self.table[: x.size(1)].unsqueeze(0)
        return self.dropout(x)


@pytest.mark.parametrize(
    "checker, answer",
    [
        (ch05.check_similarity_by_offset, normalises_in_place),
        (ch05.check_shift_targets, shifts_in_place),
        (ch06.check_embedding_forward, scales_the_table_in_place),
        (ch01.check_permutation_matrix, sorts_the_order),
        (ch01.check_equivariance_test, shuffles_x_in_place),
        (ch06.check_batch_first_positional, AddsInPlace),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_an_input_changed_in_place_is_named(checker, answer):
    feedback = verdict(checker, answer)
    assert not feedback.passed and "changed its input in place" in feedback.message, feedback


# --- sizes that separate right from almost right ----------------------------------------------


def binary_with_uint8_positions(n, d_model):
    if n > 2**d_model:
        raise ValueError("too many positions")
    positions = np.arange(n, dtype=np.uint8)  # 256 wraps to 0: fine until n > 256
    return ((positions[:, None] >> np.arange(d_model, dtype=np.uint8)) & 1).astype(float)


def binary_for_at_most_eight_bits(n, d_model):
    if n > 2**d_model:
        raise ValueError("too many positions")
    bits = np.unpackbits(np.arange(n, dtype=np.uint8)[:, None], axis=1, bitorder="little")  # always 8 columns
    return np.pad(bits, ((0, 0), (0, max(0, d_model - 8))))[:, :d_model].astype(float)


def timing_for_100_positions(n, d_model, max_timescale=1e4):
    table = timing_signal(100, d_model, max_timescale)
    return table[:n] if n <= 100 else np.vstack([table] * 3)[:n]


def timing_for_even_pair_counts(n, d_model, max_timescale=1e4):
    pairs = d_model // 2  # right when d_model/2 is even, the paper's rates otherwise
    steps = pairs - 1 if pairs % 2 == 0 else pairs
    angles = np.arange(n)[:, None] * max_timescale ** (-np.arange(pairs) / max(steps, 1))
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def rotation_for_one_offset(k, d_model):
    return concatenated_rotation(3, d_model)  # k = 3 hard-wired


@pytest.mark.parametrize(
    "checker, answer",
    [
        (ch02.check_binary_encoding, binary_with_uint8_positions),
        (ch02.check_binary_encoding, binary_for_at_most_eight_bits),
        (ch03.check_timing_signal, timing_for_100_positions),
        (ch03.check_timing_signal, timing_for_even_pair_counts),
        (ch03.check_concatenated_rotation, rotation_for_one_offset),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_almost_right_answers_fail_on_the_sizes_that_separate_them(checker, answer):
    feedback = verdict(checker, answer)
    assert not feedback.passed, feedback


# --- check_equivariance_test: tests that look right on easy cases -----------------------------


def returns_after_the_first_row(f, x, order):
    for i in range(len(x)):
        return bool(np.allclose(f(x[order])[i], f(x)[order][i]))  # the loop never reaches row 1


def compares_row_norms(f, x, order):
    return bool(np.allclose(np.linalg.norm(f(x[order]), axis=1), np.linalg.norm(f(x)[order], axis=1)))


def tolerance_of_one(f, x, order):
    return bool(np.allclose(f(x[order]), f(x)[order], atol=1))


def tolerance_of_1e_3(f, x, order):  # 10**5 times np.allclose's default atol of 1e-8
    return bool(np.allclose(f(x[order]), f(x)[order], atol=1e-3))


def relative_tolerance_of_1e_2(f, x, order):
    return bool(np.allclose(f(x[order]), f(x)[order], rtol=1e-2))


def compares_one_row(f, x, order):
    return bool(np.allclose(f(x[order])[2], f(x)[order][2]))


def compares_the_last_row(f, x, order):
    return bool(np.allclose(f(x[order])[-1], f(x)[order][-1]))


def compares_one_column(f, x, order):
    return bool(np.allclose(f(x[order])[:, 0], f(x)[order][:, 0]))


def compares_row_sums(f, x, order):
    return bool(np.allclose(f(x[order]).sum(axis=1), f(x)[order].sum(axis=1)))


def compares_column_sums(f, x, order):
    return bool(np.allclose(f(x[order]).sum(axis=0), f(x)[order].sum(axis=0)))


def compares_five_rows(f, x, order):  # written for the 5-word sentence
    return all(np.allclose(f(x[order])[i], f(x)[order][i]) for i in range(5))


@pytest.mark.parametrize(
    "answer, hint",
    [
        (returns_after_the_first_row, "right in row 0 only"),
        (compares_row_norms, "comparing norms"),
        (tolerance_of_one, "tolerance is too loose"),
        (tolerance_of_1e_3, "off by 5e-6 to 4e-5 in every row, on values of size 1 to 1.3: its tolerance"),
        (relative_tolerance_of_1e_2, "tolerance is too loose"),
        (compares_one_row, "every row and every column"),
        (compares_the_last_row, "every row and every column"),
        (compares_one_column, "every row and every column"),
        (compares_row_sums, "comparing sums"),
        (compares_column_sums, "should say False"),
        (compares_five_rows, "rows 5 and 6"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_equivariance_tests_that_look_right_on_easy_cases_are_rejected(answer, hint):
    feedback = verdict(ch01.check_equivariance_test, answer)
    assert not feedback.passed and hint in feedback.message, feedback


# --- notebooks 01-04: answers that are not numbers, or not finite, never crash a grader ---------

OWN = ["permutation matrix", "binary encoding", "timing signal", "spot the bug", "concatenated rotation"]
OWN += ["offset similarity", "look back", "bit flips"]
NOT_NUMBERS = {
    "strings": (lambda value: np.asarray(value).astype(str), "str"),
    "a list of strings": (lambda value: np.asarray(value).astype(str).tolist(), "str"),
    "complex numbers": (lambda value: np.asarray(value).astype(complex), "complex"),
    "a complex tensor": (lambda value: torch.as_tensor(np.asarray(value)).to(torch.complex64), "complex"),
}


@pytest.mark.parametrize("kind", list(NOT_NUMBERS))
@pytest.mark.parametrize("name", OWN)
def test_a_table_of_strings_or_complex_numbers_is_refused_and_its_type_named(name, kind):
    checker, solution, _ = GRADERS[name]
    convert, said = NOT_NUMBERS[kind]
    feedback = verdict(checker, lambda *args: convert(solution(*args)))
    assert not feedback.passed and said in feedback.message, feedback


@pytest.mark.parametrize(
    "returned", [math.inf, -math.inf, math.nan, 1.0, 7, "inf"], ids=["inf", "-inf", "nan", "1.0", "7", "'inf'"]
)
@pytest.mark.parametrize("name", [*OWN, "equivariance test"])
def test_an_infinite_or_a_scalar_return_gets_a_not_yet_never_an_error(name, returned):
    checker, _, _ = GRADERS[name]
    feedback = verdict(checker, lambda *args: returned)
    assert not feedback.passed, feedback


@pytest.mark.parametrize("name", ["permutation matrix", "binary encoding", "timing signal", "concatenated rotation"])
def test_an_array_of_infinities_gets_a_not_yet(name):
    checker, solution, _ = GRADERS[name]
    feedback = verdict(checker, lambda *args: np.full(np.shape(solution(*args)), np.inf))
    assert not feedback.passed, feedback


@pytest.mark.parametrize("name", ["permutation matrix", "binary encoding", "timing signal", "spot the bug"])
def test_an_array_in_the_wrong_order_fails(name):
    checker, solution, _ = GRADERS[name]
    feedback = verdict(checker, lambda *args: np.asarray(solution(*args))[::-1].copy())
    assert not feedback.passed, feedback


# --- notebooks 01-04: tolerances follow the answer's precision -----------------------------------


def similarity_from_float32_rows(k, d_model, base=10000.0):  # the PyTorch snippet's table, at positions 1000, 1000+k
    positions = torch.tensor([1000.0, 1000.0 + k])[:, None]
    rates = torch.exp(torch.arange(0, d_model, 2) * (-math.log(base) / d_model))
    table = torch.zeros(2, d_model)
    table[:, 0::2], table[:, 1::2] = torch.sin(positions * rates), torch.cos(positions * rates)
    return table[0] @ table[1]  # off by up to 3e-6 of its size: float32, faithfully


def timing_in_float32(n, d_model, max_timescale=1e4):
    pairs = d_model // 2
    rates = torch.tensor(max_timescale) ** (-torch.arange(pairs, dtype=torch.float32) / max(pairs - 1, 1))
    angles = torch.arange(n, dtype=torch.float32)[:, None] * rates
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


def chapter_fix_in_float32(position, d_model):
    rates = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    row = torch.zeros(d_model)
    row[0::2], row[1::2] = torch.sin(position * rates), torch.cos(position * rates)
    return row


@pytest.mark.parametrize(
    "checker, answer",
    [
        (ch04.check_offset_similarity, similarity_from_float32_rows),
        (ch03.check_timing_signal, timing_in_float32),
        (ch03.check_chapter_fix, chapter_fix_in_float32),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_faithful_float32_answer_passes(checker, answer):
    feedback = verdict(checker, answer)
    assert feedback.passed, feedback


def test_a_float16_answer_is_held_to_float16s_own_rounding():
    # float16 keeps 11 bits: 18.91 is stored to within 0.008, so 0.01 off is a wrong answer, not rounding.
    off = verdict(ch04.check_offset_similarity, lambda *args: torch.tensor(offset_similarity(*args) + 0.01).half())
    assert not off.passed, off
    assert verdict(ch04.check_offset_similarity, lambda *args: torch.tensor(offset_similarity(*args)).half()).passed


def timing_without_its_slowest_sines(n, d_model, max_timescale=1e4):
    table = timing_signal(n, d_model, max_timescale)
    table[:, d_model // 2 - 1] = 0.0  # the slowest pair's sine: values below 0.005 up to position 49
    return torch.tensor(table, dtype=torch.bfloat16)


def test_a_half_precision_answer_does_not_hide_a_mistake_in_values_smaller_than_its_rounding():
    feedback = verdict(ch03.check_timing_signal, timing_without_its_slowest_sines)
    assert not feedback.passed and "timing_signal(50, 16, 10000)" in feedback.message, feedback


# --- notebooks 01-04: hard-coded sizes and boundaries --------------------------------------------


def bit_flips_in_17_bits(p):  # enough for every p up to 65,535 and no further
    return bin((p ^ (p + 1)) & 0x1FFFF).count("1")


def bit_flips_in_int32(p):
    q = int(np.int64(p + 1).astype(np.int32))  # wraps past 2**31 - 1
    return bin((p ^ q) & 0xFFFFFFFF).count("1")


def binary_checked_for_three_bits_only(n, d_model):
    if n > 8 and d_model == 3:
        raise ValueError("too many positions")
    return binary_encoding(min(n, 2**d_model), d_model) if n <= 2**d_model else np.zeros((n, d_model))


def binary_checked_one_too_late(n, d_model):
    if n > 2**d_model + 1:
        raise ValueError("too many positions")
    return ((np.arange(n)[:, None] >> np.arange(d_model)[None, :]) & 1).astype(float)


@pytest.mark.parametrize(
    "checker, answer",
    [
        (ch02.check_bit_flips, bit_flips_in_17_bits),
        (ch02.check_bit_flips, bit_flips_in_int32),
        (ch02.check_binary_encoding, binary_checked_for_three_bits_only),
        (ch02.check_binary_encoding, binary_checked_one_too_late),
        (ch01.check_equivariance_test, compares_five_rows),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_an_answer_written_for_one_size_or_off_by_one_at_a_boundary_fails(checker, answer):
    feedback = verdict(checker, answer)
    assert not feedback.passed, feedback


# --- the shared helpers -------------------------------------------------------------------------


def test_as_numbers_reads_every_numeric_type_and_refuses_the_rest():
    expected = np.array([[0.5, 1.0]])
    for value in (
        expected,
        [[0.5, 1.0]],
        torch.tensor([[0.5, 1.0]], dtype=torch.bfloat16),
        torch.tensor([[0.5, 1.0]], requires_grad=True),
    ):
        np.testing.assert_array_equal(as_numbers(value), expected)
    for value in (None, "0.5", {"a": 1}, [[1, 2], [3]]):
        assert as_numbers(value) is None


def test_run_safely_returns_the_value_and_calls_with_copies():
    x = np.arange(6.0).reshape(2, 3)
    value, failure = run_safely("demo", lambda a: a.sum(axis=0), x)
    assert failure is None and value.tolist() == [3.0, 5.0, 7.0]
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# issue 28: sparse and meta tensors crashed as_numbers, and with it every grader
def test_as_numbers_reads_sparse_tensors_and_lists_of_tensors_and_refuses_tensors_without_values():
    expected = np.eye(3)
    for value in (
        torch.eye(3).to_sparse(),
        torch.eye(3, dtype=torch.float64).to_sparse().coalesce(),
        [[torch.tensor(1.0), torch.tensor(0.0), torch.tensor(0.0)], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
        [torch.eye(3)[i].requires_grad_() for i in range(3)],
        torch.eye(3)._neg_view().neg(),
        nn.Parameter(torch.eye(3)),
    ):
        np.testing.assert_array_equal(as_numbers(value), expected)
    for value in (
        torch.eye(3, device="meta"),
        [torch.ones(2, device="meta")],
        torch.ones(2, dtype=torch.complex64).to_sparse(),
        (torch.ones(2), torch.ones(3)),
    ):
        assert as_numbers(value) is None, value


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (torch.eye(2).to_sparse(), "a sparse Tensor (layout torch.sparse_coo) of dtype torch.float32"),
        (torch.eye(2, device="meta"), "a Tensor on the meta device (a shape without values)"),
        ([1, [2]], "a list of rows of different lengths"),
    ],
)
def test_describe_names_sparse_and_meta_tensors_and_a_list_mixing_numbers_and_rows(value, said):
    assert grading.describe(value) == said


@pytest.mark.parametrize(
    ("value", "integers"),
    [
        (3, True), (np.int32(3), True), (np.arange(3), True), ([1, 2], True), ([[1], [2]], True),
        (torch.arange(3), True), (torch.arange(3).int(), True), (torch.arange(3).to_sparse(), True),
        (3.0, False), (True, False), (np.bool_(True), False), (np.ones(2), False), ([1, 2.0], False), ([], False),
        (torch.ones(2), False), (torch.ones(2, dtype=torch.bool), False), ("3", False), ([[1, 2], [3.0]], False),
    ],
)  # fmt: skip
def test_holds_integers_tells_ints_from_floats_and_bools(value, integers):
    assert grading.holds_integers(value) is integers


def test_run_safely_names_a_dict_changed_in_place_key_by_key():
    config = {"rope_theta": 5e5, "model_type": "llama", "rotary_pct": 1.0}

    def changes(c):
        c["rotary_emb_base"] = c.pop("rope_theta")
        c["model_type"] = "gpt_neox"
        return 1.0

    _, failure = run_safely("demo", changes, config)
    assert "changed its input in place (argument 1, a dict: " in failure.message
    for change in ("key 'rotary_emb_base' added", "key 'rope_theta' removed", "'llama' to 'gpt_neox'"):
        assert change in failure.message, failure.message
    value, failure = run_safely("demo", lambda c: dict(c, rope_theta=1.0)["rope_theta"], {"rope_theta": 5e5})
    assert failure is None and value == 1.0  # a copy changed: fine


@pytest.mark.parametrize(
    "changes",
    [
        lambda items: items.append(1),
        lambda items: items[1].append(0),  # a ragged list: compared entry by entry
        lambda items: items.__setitem__(0, "b"),
    ],
)
def test_run_safely_sees_lists_changed_in_place_even_when_they_hold_no_numbers(changes):
    _, failure = run_safely("demo", lambda items: (changes(items), 1.0)[1], ["a", [1, 2], [3]])
    assert failure is not None and "changed its input in place" in failure.message


def test_run_safely_reports_exit_and_compares_answers_that_are_not_numbers():
    _, failure = run_safely("demo", lambda: exit(3))
    assert "your function raised SystemExit: 3" in failure.message
    calls = []
    _, failure = run_safely("demo", lambda: calls.append(1) or f"call {len(calls)}")
    assert "two calls with the same input gave different answers" in failure.message
    value, failure = run_safely("demo", lambda: {"a": [1, "x"]})
    assert failure is None and value == {"a": [1, "x"]}


def test_graded_turns_an_unforeseen_error_into_a_not_yet_and_still_checks_the_hint_first():
    def broken_check(answer):
        raise KeyError("a case nobody wrote")

    feedback = grading.graded("demo", broken_check, None, ("a", "b", "c"), 2)
    assert not feedback.passed and feedback.shown == 2 and len(feedback.hints) == 3
    assert "the checker could not read your answer (KeyError: 'a case nobody wrote')" in feedback.message
    assert "please report it" in feedback.message
    with pytest.raises(ValueError, match="hint must be"):
        grading.graded("demo", broken_check, None, ("a", "b", "c"), 4)
    right = grading.graded("demo", lambda answer: Feedback("demo", True, "ok"), None, ("a", "b", "c"), 3)
    assert right.passed and right.shown == 0


# --- the same classes, written out as learners write them --------------------------------------


def table_without_return(n, d_model, max_timescale=1e4):
    pairs = d_model // 2
    angles = np.arange(n)[:, None] * max_timescale ** (-np.arange(pairs) / (pairs - 1))
    table = np.concatenate([np.sin(angles), np.cos(angles)], axis=1)  # noqa: F841 (... and the cell ends here)


def table_printed(n, d_model, max_timescale=1e4):
    pairs = d_model // 2
    angles = np.arange(n)[:, None] * max_timescale ** (-np.arange(pairs) / (pairs - 1))
    print(np.concatenate([np.sin(angles), np.cos(angles)], axis=1))


def bit_flips_returning_only_sometimes(p):
    if p % 2 == 0:
        return 1  # an even p flips only bit 0
    flips = bin(p ^ (p + 1)).count("1")  # noqa: F841 (the odd case: computed, never returned)


def similarity_with_a_typo(table):
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    cosines = unit @ unit.T
    return np.array([np.diagonal(cosines, k).mean() for k in range(len(tabel))])  # noqa: F821 (the typo)


@pytest.mark.parametrize(
    "checker, answer, hint",
    [
        (ch03.check_timing_signal, table_without_return, "forget the `return`"),
        (ch03.check_timing_signal, table_printed, "use `return`, not `print`"),
        (ch02.check_bit_flips, bit_flips_returning_only_sometimes, "forget the `return`"),
        (ch05.check_similarity_by_offset, similarity_with_a_typo, "NameError: name 'tabel' is not defined"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_learner_written_mistakes_get_the_hint_for_their_class(checker, answer, hint):
    feedback = verdict(checker, answer)
    assert not feedback.passed and hint in feedback.message, feedback


# --- tiered hints: the shared layer -------------------------------------------------------------

TIERS = ("a question", "a pointer", "the formula")


def test_a_failure_prints_its_symptom_then_the_hints_asked_for_then_how_to_get_more():
    feedback = Feedback("demo", False, "row 1 is wrong", TIERS, 1)
    assert str(feedback).splitlines() == [
        "[demo] Not yet: row 1 is wrong",
        "Hint 1/3: a question",
        "Stuck? Run the check again with hint=2 (of 3).",
    ]
    assert str(Feedback("demo", False, "row 1 is wrong", TIERS)).splitlines()[1:] == [
        "Stuck? Run the check again with hint=1 (of 3).",
    ]
    assert str(Feedback("demo", False, "row 1 is wrong", TIERS, 3)).splitlines()[1:] == [
        "Hint 1/3: a question",
        "Hint 2/3: a pointer",
        "Hint 3/3: the formula",
    ]
    assert feedback.message == "row 1 is wrong" and not feedback and repr(feedback) == str(feedback)


def test_a_pass_and_a_requirement_test_print_one_line_whatever_the_hints():
    assert str(Feedback("demo", True, "well done", TIERS, 2)) == "[demo] Correct: well done"
    assert str(Feedback("demo", False, "no hints here")) == "[demo] Not yet: no hints here"
    assert str(Feedback(None, False, "bad", TIERS)) == "FAIL: bad"


def test_feedback_refuses_more_shown_hints_than_it_has():
    with pytest.raises(ValueError, match=r"shown must be from 0 to len\(hints\) = 3, got 4"):
        Feedback("demo", False, "x", TIERS, 4)


@pytest.mark.parametrize("value", [0, 1, 3, np.int64(2)])
def test_hint_level_accepts_ints_from_0_to_the_number_of_tiers(value):
    assert hint_level(value, TIERS) == int(value)


@pytest.mark.parametrize(
    ("value", "error", "said"),
    [
        (-1, ValueError, "got -1"),
        (4, ValueError, "got 4"),
        (True, TypeError, "got True (bool)"),
        ("1", TypeError, "got '1' (str)"),
        (1.0, TypeError, "got 1.0 (float)"),
        (None, TypeError, "got None (NoneType)"),
    ],
)
def test_hint_level_names_the_argument_its_value_and_what_is_allowed(value, error, said):
    with pytest.raises(error) as raised:
        hint_level(value, TIERS)
    assert str(raised.value).startswith("hint must be an int from 0 (no hint) to 3 (the formula)")
    assert said in str(raised.value)


def test_with_hints_fills_a_mistakes_own_tiers_with_the_graders_last_ones():
    own = Feedback("demo", False, "swapped", ("is row 0 right?",))
    feedback = with_hints(own, TIERS, 2)
    assert feedback.hints == ("is row 0 right?", "a pointer", "the formula") and feedback.shown == 2
    assert with_hints(Feedback("demo", False, "x"), TIERS, 0).hints == TIERS
    passed = Feedback("demo", True, "ok")
    assert with_hints(passed, TIERS, 3) is passed
    with pytest.raises(ValueError, match="at most 3 tiers"):
        with_hints(Feedback("demo", False, "x", ("a", "b", "c", "d")), TIERS, 0)


# --- tiered hints: every grader ---------------------------------------------------------------


class SnippetPositionalEncoding(nn.Module):
    """The PyTorch snippet's module as notebook 06 prints it: a (maxlen, 1, d) table sliced by size(0)."""

    def __init__(self, emb_size, dropout, maxlen=5000):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        table = torch.zeros((maxlen, emb_size))
        table[:, 0::2], table[:, 1::2] = torch.sin(pos * den), torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", table.unsqueeze(-2))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class ReturnsItsInput(SnippetPositionalEncoding):
    def forward(self, token_embedding):
        return token_embedding


class NotWrittenYet(SnippetPositionalEncoding):
    def forward(self, token_embedding):
        raise NotImplementedError("write me")


def chapter_encoding(position, d_model):  # the book chapter's code, the stub of notebook 03's exercise 3
    angle_rads = np.arange(d_model) // 2 * np.pi / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))
    angle_rads = position * angle_rads
    pos_encoding = np.zeros(d_model)
    pos_encoding[0::2] = np.sin(angle_rads[0::2])
    pos_encoding[1::2] = np.cos(angle_rads[1::2])
    return pos_encoding


def _raises(*args):
    raise NotImplementedError("TODO")


# grader -> (checker, the correct answer, the stubs and stub-like answers, tokens of the answer that no
# symptom of a stub may print, tokens the last tier must hold). The first stub is the notebook's.
TIERED = {
    "permutation matrix": (
        ch01.check_permutation_matrix,
        permutation_matrix,
        [lambda order: np.eye(len(order)), lambda order: np.zeros((len(order), len(order))), lambda order: None],
        ["order[i]", "eye(len(order))[order]", "np.eye(n)[order]", "P[i, "],
        ["np.eye(len(order))[order]"],
    ),
    "equivariance test": (
        ch01.check_equivariance_test,
        is_permutation_equivariant,
        [
            lambda f, x, order: np.allclose(f(x[order]), f(x)),
            lambda f, x, order: True,
            lambda f, x, order: False,
            lambda f, x, order: None,
        ],
        ["f(x)[order]", "permuted output", "move with", "allclose"],
        ["f(x)[order]", "np.allclose"],
    ),
    "binary encoding": (
        ch02.check_binary_encoding,
        binary_encoding,
        [lambda n, d: np.zeros((n, d)), lambda n, d: None, _raises],
        [">>", "& 1", "% 2", "binary_repr", "np.arange(d_model)"],
        [">> np.arange(d_model)", "& 1", "raise ValueError"],
    ),
    "bit flips": (
        ch02.check_bit_flips,
        bit_flips,
        [lambda p: 1, lambda p: 0, lambda p: None],
        ["^", "XOR", "count(", "trailing"],
        ["p ^ (p + 1)", 'count("1")'],
    ),
    "concatenated rotation": (
        ch03.check_concatenated_rotation,
        concatenated_rotation,
        [lambda k, d: np.eye(d), lambda k, d: np.zeros((d, d)), lambda k, d: None],
        ["np.ix_", "perm", "np.r_", "relative_rotation", "rows and the columns"],
        ["np.ix_(perm, perm)", "np.r_[0:d_model:2, 1:d_model:2]"],
    ),
    "timing signal": (
        ch03.check_timing_signal,
        timing_signal,
        [lambda n, d, m=1e4: np.zeros((n, d)), lambda n, d, m=1e4: np.ones((n, d)), lambda n, d, m=1e4: None],
        ["pairs - 1", "np.concatenate", "np.sin", "np.cos", "-i / max(d_model/2 - 1, 1)"],
        ["np.concatenate([np.sin(angles), np.cos(angles)], axis=1)", "max(pairs - 1, 1)"],
    ),
    "spot the bug": (
        ch03.check_chapter_fix,
        chapter_fixed,
        [chapter_encoding, lambda p, d: np.zeros(d), lambda p, d: None],
        ["line 1", "np.pi", "π·i", "1 / np.power", "arange(d_model) // 2", "Remove"],
        ["angle_rads = 1 / np.power(10000, 2 * (np.arange(d_model) // 2)"],
    ),
    "offset similarity": (
        ch04.check_offset_similarity,
        offset_similarity,
        [lambda k, d, base=1e4: float(np.zeros(d // 2).sum()), lambda k, d, base=1e4: None, _raises],
        ["cos(w_i k)", "cos(b - a)", "np.cos", "sin(a)", "np.sum", "d_model/2 pairs"],
        ["np.sum(np.cos(w * k))", "pe_lib.frequencies(d_model, base=base)"],
    ),
    "look back": (
        ch04.check_look_back,
        look_back,
        [lambda k, d: np.eye(d), lambda k, d: np.zeros((d, d)), lambda k, d: None],
        ["relative_rotation", ".T", "W_k^T", "PE(q + k)", "Rotate", "rotate"],
        ["pe_lib.relative_rotation(-k, d_model)"],
    ),
    "similarity by offset": (
        ch05.check_similarity_by_offset,
        similarity_by_offset,
        [lambda table: np.zeros(len(table)), lambda table: np.ones(len(table)), lambda table: None],
        ["unit.T", "@", "np.diagonal", "norm(", "normalise", "axis=1", "recipe"],
        ["unit @ unit.T", "np.diagonal(cosines, k).mean()", "np.linalg.norm(table, axis=1, keepdims=True)"],
    ),
    "shift targets": (
        ch05.check_shift_targets,
        shift_targets,
        [
            lambda tokens, k: torch.roll(tokens, k, dims=1),
            lambda tokens, k: tokens.clone(),
            lambda tokens, k: torch.zeros_like(tokens),
            lambda tokens, k: None,
        ],
        ["IGNORE", "-100", "full_like", "tokens[:, :-k]", "loss skips"],
        ["torch.full_like(tokens, experiments.IGNORE)", "targets[:, k:] = tokens[:, :-k]"],
    ),
    "batch-first positional encoding": (
        ch06.check_batch_first_positional,
        BatchFirstPositionalEncoding,
        [SnippetPositionalEncoding, ReturnsItsInput, NotWrittenYet],
        ["size(1)", "unsqueeze(0)", "(1, seq", "dim 1", "[None", "along"],
        ["token_embedding.size(1)", ".unsqueeze(0)"],
    ),
    "embedding forward": (
        ch06.check_embedding_forward,
        embed,
        [
            lambda ids, table: table[ids],
            lambda ids, table: torch.zeros(*ids.shape, table.shape[1]),
            lambda ids, table: None,
            _raises,
        ],
        ["sqrt", "PE[:seq]", "sinusoidal_encoding", "math.", "d_model**"],
        ["token_table[token_ids] * math.sqrt(d_model) + pe", "pe_lib.sinusoidal_encoding(token_ids.shape[1], d_model)"],
    ),
}
STUB_CASES = [(name, index) for name, case in TIERED.items() for index in range(len(case[2]))]


def _stub_id(value):
    return f"{value[0]}-stub{value[1]}" if isinstance(value, tuple) else None


@pytest.mark.parametrize("case", STUB_CASES, ids=_stub_id)
def test_a_stub_gets_its_symptom_without_the_answer(case):
    name, index = case
    checker, _, stubs, forbidden, _ = TIERED[name]
    feedback = verdict(checker, stubs[index])
    text = str(feedback)
    assert not feedback.passed and "Correct" not in text, text
    leaked = [token for token in forbidden if token in text]
    assert not leaked, f"{name}: the stub's feedback prints {leaked}:\n{text}"
    assert text.endswith("Stuck? Run the check again with hint=1 (of 3).")


@pytest.mark.parametrize("case", STUB_CASES, ids=_stub_id)
def test_hint_k_shows_the_first_k_tiers_and_the_last_holds_the_formula(case):
    name, index = case
    checker, _, stubs, _, formula = TIERED[name]
    previous = str(checker(stubs[index]))
    for level in (1, 2, 3):
        feedback = checker(stubs[index], hint=level)
        text = str(feedback)
        assert not feedback.passed and len(feedback.hints) == 3 and feedback.shown == level
        assert [line.split(":")[0] for line in text.splitlines() if line.startswith("Hint ")] == [
            f"Hint {k}/3" for k in range(1, level + 1)
        ]
        assert text.startswith(previous.rsplit("\nStuck?", 1)[0])  # cumulative: what hint=k-1 showed, and more
        assert ("Stuck?" in text) == (level < 3)
        previous = text
    missing = [token for token in formula if token not in feedback.hints[-1]]
    assert not missing, f"{name}: the last tier lacks {missing}: {feedback.hints[-1]}"


@pytest.mark.parametrize("name", list(TIERED))
def test_a_right_answer_never_prints_hints(name):
    checker, solution, _, _, _ = TIERED[name]
    for level in (0, 1, 3):
        feedback = checker(solution, hint=level)
        assert feedback.passed and "Hint" not in str(feedback) and "Stuck" not in str(feedback), feedback
        assert str(feedback).startswith(f"[{feedback.exercise}] Correct: ")


@pytest.mark.parametrize("name", list(TIERED))
@pytest.mark.parametrize(("hint", "error"), [(-1, ValueError), (4, ValueError), (True, TypeError), ("2", TypeError)])
def test_a_bad_hint_is_refused_before_the_learners_code_runs(name, hint, error):
    checker, _, stubs, _, _ = TIERED[name]
    calls = []

    def counts_calls(*args):
        calls.append(args)
        return stubs[0](*args)

    with pytest.raises(error, match=r"^hint must be an int from 0 \(no hint\) to 3 \(the formula\), got "):
        checker(counts_calls, hint=hint)
    assert not calls


@pytest.mark.parametrize("name", list(TIERED))
def test_the_hint_is_a_keyword_argument(name):
    checker, _, stubs, _, _ = TIERED[name]
    with pytest.raises(TypeError):
        checker(stubs[0], 1)


# The formula tier, run: its indented lines are the body of the learner's function, and it passes.
FORMULA_SIGNATURES = {
    "permutation matrix": "order",
    "equivariance test": "f, x, order",
    "binary encoding": "n, d_model",
    "bit flips": "p",
    "concatenated rotation": "k, d_model",
    "timing signal": "n, d_model, max_timescale=1e4",
    "offset similarity": "k, d_model, base=10000.0",
    "look back": "k, d_model",
    "similarity by offset": "table",
    "shift targets": "tokens, k",
    "embedding forward": "token_ids, token_table",
    "batch-first positional encoding": "self, token_embedding",
    "spot the bug": "position, d_model",
}


def _formula(name, stub):
    """The learner's function written from the last tier's code lines (indented by four spaces)."""
    checker = TIERED[name][0]
    code = [line for line in checker(stub, hint=3).hints[-1].splitlines() if line.startswith("    ")]
    if name == "spot the bug":  # the tier is the fixed line 1; the other lines are the chapter's
        code += [
            "    angle_rads = position * angle_rads",
            "    pos_encoding = np.zeros(d_model)",
            "    pos_encoding[0::2] = np.sin(angle_rads[0::2])",
            "    pos_encoding[1::2] = np.cos(angle_rads[1::2])",
            "    return pos_encoding",
        ]
    namespace = {"np": np, "torch": torch, "math": math, "pe_lib": pe_lib, "experiments": experiments}
    exec("\n".join([f"def written({FORMULA_SIGNATURES[name]}):", *code]), namespace)
    if name == "batch-first positional encoding":
        return type("Written", (SnippetPositionalEncoding,), {"forward": namespace["written"]})
    return namespace["written"]


@pytest.mark.parametrize("name", list(TIERED))
def test_the_formula_tier_is_a_right_answer(name):
    checker, _, stubs, _, _ = TIERED[name]
    feedback = checker(_formula(name, stubs[0]))
    assert feedback.passed, feedback


# Every failure of a grader, recognised mistake or not, has the grader's number of tiers.
@pytest.mark.parametrize("name", FUNCTION_GRADERS)
def test_every_kind_of_failure_offers_three_tiers(name):
    checker, solution, _ = GRADERS[name]

    def forgot_return(*args):
        solution(*args)

    for answer in (forgot_return, _raises, lambda *args: "not numbers"):
        feedback = checker(answer, hint=3)
        assert not feedback.passed and len(feedback.hints) == 3 and feedback.shown == 3, feedback


# --- what a learner returned, in words; how far a right answer may sit from the reference ---------


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("0.5", "a str"),
        (np.array(["0.5"]), "a NumPy array of strings (dtype <U3)"),
        ([["0.5", "1"]], "a list of str"),
        (np.ones(2, dtype=complex), "a NumPy array of complex numbers (dtype complex128)"),
        (torch.ones(2, dtype=torch.complex64), "a Tensor of complex numbers (dtype torch.complex64)"),
        ([[1, 2], [3]], "a list of rows of different lengths"),
        ([], "an empty list"),
        (3.5, "a float"),
        (np.arange(3), "a NumPy array of dtype int64"),
    ],
)
def test_describe_says_what_was_returned(value, said):
    assert grading.describe(value) == said


def test_allowed_error_adds_half_an_ulp_of_half_precision_to_the_float32_floor():
    reference = np.array([0.001, 1.0, 100.0])
    np.testing.assert_array_equal(grading.allowed_error(np.zeros(3), reference, 1e-4), [1e-4] * 3)
    bfloat16 = grading.allowed_error(torch.zeros(3, dtype=torch.bfloat16), reference, 1e-4)
    np.testing.assert_allclose(bfloat16, 1e-4 + reference * 2.0**-8)
    float16 = grading.allowed_error(torch.zeros(3, dtype=torch.float16), reference, 1e-4)
    np.testing.assert_allclose(float16, 1e-4 + reference * 2.0**-11)
    for dtype, share in ((torch.bfloat16, 2.0**-8), (torch.float16, 2.0**-11)):  # a faithful cast fits
        exact = np.linspace(-300, 300, 10_001)
        rounded = torch.tensor(exact).to(dtype).double().numpy()
        assert np.all(np.abs(rounded - exact) <= share * np.abs(exact))
