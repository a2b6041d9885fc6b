"""Notebook 05's exercises: the graders in pe_lib/ch05_learned_exercises.py, fed right answers and
the mistakes learners make (also: wrong dtypes, strings, complex numbers, inf, a scalar, a reversed
result, the boundary sizes, half precision).
"""

import contextlib

import numpy as np
import pytest
import torch

from pe_lib import analysis, ch05_learned_exercises, encodings, experiments
from pe_lib import ch05_learned as ch05


def test_the_graders_are_importable_from_the_chapter_module():
    assert ch05.check_similarity_by_offset is ch05_learned_exercises.check_similarity_by_offset
    assert ch05.check_shift_targets is ch05_learned_exercises.check_shift_targets


# --- exercise checkers ----------------------------------------------------------------------


def test_similarity_checker_accepts_the_reference_and_a_torch_answer():
    assert ch05.check_similarity_by_offset(analysis.similarity_by_offset)

    def with_torch(table):
        t = torch.as_tensor(table)
        unit = t / t.norm(dim=1, keepdim=True)
        s = unit @ unit.T
        return torch.stack([torch.diagonal(s, k).mean() for k in range(len(t))])

    assert ch05.check_similarity_by_offset(with_torch)


def _dot_products(table):
    s = table @ table.T
    return np.array([np.diagonal(s, k).mean() for k in range(len(table))])


def _columns_normalised(table):
    unit = table / np.linalg.norm(table, axis=0, keepdims=True)
    s = unit @ unit.T
    return np.array([np.diagonal(s, k).mean() for k in range(len(table))])


def _row_zero(table):
    return analysis.cosine_similarity(table)[0]


def _cyclic(table):
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return np.array([np.mean(np.sum(unit * np.roll(unit, -k, axis=0), axis=1)) for k in range(len(table))])


def _summed(table):
    s = analysis.cosine_similarity(table)
    return np.array([np.diagonal(s, k).sum() for k in range(len(table))])


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_dot_products, "not cosines"),
        (_columns_normalised, "axis=0"),
        (_row_zero, "position 0"),
        (_cyclic, "wrapped around"),
        (_summed, "summed"),
        (lambda table: analysis.similarity_by_offset(table)[1:], "offset k = 0"),
        (lambda table: np.zeros(table.shape[1]), "one per column"),
        (lambda table: np.zeros(len(table)), "offset k=0"),
        (lambda table: 1 / 0, "ZeroDivisionError"),
        (lambda table: "no", "return real numbers"),
    ],
)
def test_similarity_checker_names_the_mistake(answer, hint):
    feedback = ch05.check_similarity_by_offset(answer)
    assert not feedback and hint in feedback.message, feedback.message
    assert str(feedback).startswith("[similarity by offset] Not yet:")
    assert len(ch05.check_similarity_by_offset(answer, hint=3).hints) == 3


def _shift_reference(tokens, k):
    return experiments.task_targets(tokens, "shift", shift=k)


def _shift_rolled(tokens, k):
    return torch.roll(tokens, k, dims=1)


def _shift_zero_filled(tokens, k):
    targets = torch.zeros_like(tokens)
    targets[:, k:] = tokens[:, :-k]
    return targets


def _shift_ahead(tokens, k):
    targets = torch.full_like(tokens, -100)
    targets[:, :-k] = tokens[:, k:]
    return targets


def _shift_off_by_one(tokens, k):
    targets = torch.full_like(tokens, -100)
    targets[:, k + 1 :] = tokens[:, : -(k + 1)]
    return targets


def _shift_in_place(tokens, k):
    tokens[:, k:] = tokens[:, :-k].clone()
    tokens[:, :k] = -100
    return tokens


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (_shift_rolled, "torch.roll"),
        (_shift_zero_filled, "hold 0"),
        (_shift_ahead, "wrong way"),
        (_shift_off_by_one, "off by one"),
        (_shift_in_place, "in place"),
        (lambda tokens, k: tokens[:, k:], "same shape"),
        (lambda tokens, k: torch.full_like(tokens, -100), "expected targets"),
    ],
)
def test_shift_checker_names_the_mistake(answer, hint):
    feedback = ch05.check_shift_targets(answer)
    assert not feedback and hint in feedback.message, feedback.message
    assert len(ch05.check_shift_targets(answer, hint=3).hints) == 3


@pytest.mark.parametrize(
    ("check", "answer", "level", "fix"),
    [
        (ch05.check_similarity_by_offset, lambda table: np.zeros(len(table)), 2, "unit @ unit.T"),
        (ch05.check_similarity_by_offset, lambda table: np.zeros(len(table)), 3, "np.diagonal(cosines, k).mean()"),
        (ch05.check_similarity_by_offset, _dot_products, 2, "np.linalg.norm(row)"),
        (ch05.check_similarity_by_offset, _columns_normalised, 2, "axis=1, keepdims=True"),
        (ch05.check_similarity_by_offset, _row_zero, 2, "np.diagonal(similarity, k).mean()"),
        (ch05.check_similarity_by_offset, _summed, 2, "not its sum"),
        (ch05.check_shift_targets, _shift_rolled, 2, "experiments.IGNORE = -100"),
        (ch05.check_shift_targets, _shift_rolled, 3, "torch.full_like(tokens, experiments.IGNORE)"),
        (ch05.check_shift_targets, _shift_ahead, 2, "tokens[:, :-k]"),
    ],
)
def test_the_fix_of_a_mistake_waits_for_its_hint_tier(check, answer, level, fix):
    for below in range(level):
        assert fix not in str(check(answer, hint=below))
    assert fix in str(check(answer, hint=level))


def test_shift_checker_accepts_the_reference():
    assert ch05.check_shift_targets(_shift_reference)


# --- the classes of wrong answers that once got "Correct" or crashed the grader (issue 21) ------


def _shift_as(dtype):
    def answer(tokens, k):
        return _shift_reference(tokens, k).to(dtype)

    return answer


def _shift_as_numpy(tokens, k):
    return _shift_reference(tokens, k).numpy()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_shift_as(torch.float32), "torch.float32"),
        (_shift_as(torch.int32), "torch.int32"),
        (_shift_as(torch.int16), "torch.int16"),
        (_shift_as_numpy, "NumPy array of dtype int64"),
        (lambda tokens, k: _shift_reference(tokens, k).tolist(), "list"),
    ],
)
def test_shift_targets_of_a_dtype_the_loss_rejects_fail(answer, said):
    feedback = ch05.check_shift_targets(answer)
    assert not feedback and said in feedback.message and "int64" in feedback.message, feedback.message
    targets = answer(torch.randint(0, 16, (2, 6)), 2)
    logits = torch.zeros(2 * 6, 16)
    with pytest.raises((RuntimeError, TypeError)):  # the reason: the course's loss refuses them
        torch.nn.functional.cross_entropy(logits, targets.reshape(-1) if torch.is_tensor(targets) else targets)


def _shift_for_k_below_seq_minus_one(tokens, k):
    targets = torch.full_like(tokens, experiments.IGNORE)
    if k < tokens.shape[1] - 1:  # forgets the boundary: one target per sequence
        targets[:, k:] = tokens[:, :-k]
    return targets


def _shift_for_k_up_to_two(tokens, k):
    targets = torch.full_like(tokens, experiments.IGNORE)
    targets[:, min(k, 2) :] = tokens[:, : tokens.shape[1] - min(k, 2)]  # a k written in, almost
    return targets


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (_shift_for_k_below_seq_minus_one, "expected targets"),
        (_shift_for_k_up_to_two, "expected targets"),
        (lambda tokens, k: 3, "shape ()"),
        (lambda tokens, k: torch.full(tokens.shape, float("inf")), "got inf"),
        (lambda tokens, k: _shift_reference(tokens, k).numpy().astype(str), "strings"),
        (lambda tokens, k: _shift_reference(tokens, k).to(torch.complex64), "complex"),
        (lambda tokens, k: _shift_reference(tokens, k).T, "shape (9, 3)"),
        (lambda tokens, k: _shift_reference(tokens, k).flip(1), "expected targets"),
    ],
)
def test_shift_checker_fails_boundaries_and_odd_returns_without_raising(answer, said):
    feedback = ch05.check_shift_targets(answer)
    assert not feedback and said in feedback.message, feedback.message
    assert "tokens[:, :-k]" not in feedback.message and "full_like" not in feedback.message


def _similarity_in(dtype):
    def answer(table):
        t = torch.as_tensor(table, dtype=dtype)
        unit = t / t.norm(dim=1, keepdim=True)
        cosines = unit @ unit.T
        return torch.stack([torch.diagonal(cosines, k).mean() for k in range(len(t))])

    return answer


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_a_faithful_answer_in_any_precision_passes(dtype):
    feedback = ch05.check_similarity_by_offset(_similarity_in(dtype))
    assert feedback, feedback


def _grader_tables():
    tables = []
    ch05_learned_exercises.check_similarity_by_offset(
        lambda table: tables.append(table) or analysis.similarity_by_offset(table)
    )
    return tables[::2]  # each table is passed twice (the second call checks the answer does not change)


def test_every_recognised_mistake_is_far_outside_the_half_precision_tolerance():
    allowed = ch05_learned_exercises._allowed_error(torch.zeros(1, dtype=torch.bfloat16))
    tables = _grader_tables()
    assert tables[-1].shape[0] == 2  # the boundary: two rows, offsets 0 and 1
    distances = np.zeros((len(tables), len(ch05_learned_exercises._similarity_mistakes(tables[0]))))
    for i, table in enumerate(tables):
        reference = analysis.similarity_by_offset(table)
        for j, (mistake, _, _) in enumerate(ch05_learned_exercises._similarity_mistakes(table)):
            distances[i, j] = np.abs(mistake - reference).max() if mistake.shape == reference.shape else np.inf
    assert distances.max(axis=0).min() > 0.1 > 5 * allowed  # each mistake, on some table


def _off_by_one_offset(table):
    result = analysis.similarity_by_offset(table)
    return np.r_[result[:1], result[2:], result[-1]]  # offset k holds offset k + 1's value


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda table: 1.0, "got one number"),
        (lambda table: np.float64(0.5), "got one number"),
        (lambda table: np.full(len(table), np.inf), "inf or nan"),
        (lambda table: analysis.similarity_by_offset(table).astype(str), "strings"),
        (lambda table: analysis.similarity_by_offset(table).astype(complex), "complex"),
        (lambda table: [str(v) for v in analysis.similarity_by_offset(table)], "list of str"),
        (lambda table: analysis.similarity_by_offset(table)[::-1].copy(), "offset k=0"),
        (lambda table: torch.tensor(_off_by_one_offset(table), dtype=torch.bfloat16), "expected"),
        (lambda table: np.r_[1.0, np.zeros(len(table) - 1)].astype(np.float16), "expected"),
        (lambda table: analysis.similarity_by_offset(table[:12])[: min(len(table), 12)], "got shape (12,)"),
    ],
)
def test_similarity_checker_fails_odd_returns_without_raising(answer, said):
    with contextlib.suppress(Exception):
        answer(np.ones((3, 2)))  # the answer itself runs
    feedback = ch05.check_similarity_by_offset(answer)
    assert not feedback and said in feedback.message, feedback.message
    assert "np.diagonal" not in feedback.message and "unit @ unit.T" not in feedback.message


def test_a_float32_answer_on_a_long_table_is_within_its_tolerance():
    table = encodings.sinusoidal_encoding(300, 64)
    result = _similarity_in(torch.float32)(table).double().numpy()
    allowed = ch05_learned_exercises._allowed_error(torch.zeros(1))
    assert np.abs(result - analysis.similarity_by_offset(table)).max() < allowed / 10
