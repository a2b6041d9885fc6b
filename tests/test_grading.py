"""pe_lib.grading and every grader: wrong, odd and hostile answers never pass and never crash.

Each grader gets the worked solution (it must pass, also as torch, bfloat16, requiring grad or a
list) and the mistakes learners make around the maths: a forgotten `return`, a `print` instead of
one, an exception, an input changed in place, an answer that changes between calls, and sizes
that only some almost-right answers get wrong (odd widths, more than 256 positions, rows far out).
"""

import math

import numpy as np
import pytest
import torch
from torch import nn

import pe_lib
from pe_lib import ch01_order as ch01
from pe_lib import ch02_naive as ch02
from pe_lib import ch03_sinusoidal as ch03
from pe_lib import ch04_pendulum as ch04
from pe_lib import ch05_learned as ch05
from pe_lib import ch06_pipeline as ch06
from pe_lib import experiments
from pe_lib.grading import Feedback, as_numbers, run_safely

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


def sinusoidal_table(n, d_model):
    two_i = np.arange(0, d_model, 2)
    angles = np.arange(n)[:, None] * np.exp(-two_i * np.log(10000.0) / d_model)
    table = np.zeros((n, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def chapter_fixed(position, d_model):
    rates = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / d_model)
    angles = position * rates
    row = np.zeros(d_model)
    row[0::2], row[1::2] = np.sin(angles[0::2]), np.cos(angles[1::2])
    return row


def layout_permutation(d_model):
    return np.r_[0:d_model:2, 1:d_model:2]


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
    "sinusoidal table": (ch03.check_sinusoidal_table, sinusoidal_table, True),
    "spot the bug": (ch03.check_chapter_fix, chapter_fixed, True),
    "layout permutation": (ch03.check_layout_permutation, layout_permutation, True),
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
    "name", ["sinusoidal table", "spot the bug", "offset similarity", "similarity by offset", "look back"]
)
def test_a_right_answer_in_bfloat16_passes(name):
    checker, solution, _ = GRADERS[name]
    feedback = verdict(checker, lambda *args: _as_torch(solution(*args), torch.bfloat16))
    assert feedback.passed, feedback


def test_a_bfloat16_table_still_fails_when_it_is_wrong():
    def swapped_in_bfloat16(n, d_model):
        table = sinusoidal_table(n, d_model)[:, np.arange(d_model) ^ 1]  # cos where sin belongs
        return torch.tensor(table, dtype=torch.bfloat16)

    feedback = ch03.check_sinusoidal_table(swapped_in_bfloat16)
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
    feedback = ch03.check_sinusoidal_table("sinusoidal_table")
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


def table_for_100_positions(n, d_model):
    return sinusoidal_table(100, d_model)[:n] if n <= 100 else np.vstack([sinusoidal_table(100, d_model)] * 3)[:n]


def table_with_one_angle_per_column(n, d_model):
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(d_model) / d_model)  # j, not 2i: pairs do not share
    table = np.sin(angles)
    table[:, 1::2] = np.cos(angles[:, 1::2])
    return table


def permutation_for_even_pair_counts(d_model):
    half = d_model // 2
    return np.r_[0:d_model:2, 1:d_model:2] if half % 2 == 0 else np.arange(d_model)


@pytest.mark.parametrize(
    "checker, answer",
    [
        (ch02.check_binary_encoding, binary_with_uint8_positions),
        (ch02.check_binary_encoding, binary_for_at_most_eight_bits),
        (ch03.check_sinusoidal_table, table_for_100_positions),
        (ch03.check_sinusoidal_table, table_with_one_angle_per_column),
        (ch03.check_layout_permutation, permutation_for_even_pair_counts),
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


@pytest.mark.parametrize(
    "answer, hint",
    [
        (returns_after_the_first_row, "right in row 0 only"),
        (compares_row_norms, "comparing norms"),
        (tolerance_of_one, "tolerance is too loose"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_equivariance_tests_that_look_right_on_easy_cases_are_rejected(answer, hint):
    feedback = verdict(ch01.check_equivariance_test, answer)
    assert not feedback.passed and hint in feedback.message, feedback


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


# --- the same classes, written out as learners write them --------------------------------------


def table_without_return(n, d_model):
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    table = np.zeros((n, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)  # ... and the cell ends here


def table_printed(n, d_model):
    angles = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    table = np.zeros((n, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    print(table)


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
        (ch03.check_sinusoidal_table, table_without_return, "forget the `return`"),
        (ch03.check_sinusoidal_table, table_printed, "use `return`, not `print`"),
        (ch02.check_bit_flips, bit_flips_returning_only_sometimes, "forget the `return`"),
        (ch05.check_similarity_by_offset, similarity_with_a_typo, "NameError: name 'tabel' is not defined"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_learner_written_mistakes_get_the_hint_for_their_class(checker, answer, hint):
    feedback = verdict(checker, answer)
    assert not feedback.passed and hint in feedback.message, feedback
