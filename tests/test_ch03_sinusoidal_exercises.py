"""pe_lib.ch03_sinusoidal_exercises (notebook 03's graders): right answers in every type pass, mistakes are named."""

import math

import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import ch03_sinusoidal_exercises as ch03

# ---------------------------------------------------------------- checkers: the vectorised table


def _table(n, d_model, *, rates=None, swap=False, start=0):
    i = np.arange(d_model // 2)
    rates = 10000.0 ** (-2 * i / d_model) if rates is None else rates(i, d_model)
    angles = (np.arange(n) + start)[:, None] * rates
    table = np.zeros((n, d_model))
    table[:, 0::2] = np.cos(angles) if swap else np.sin(angles)
    table[:, 1::2] = np.sin(angles) if swap else np.cos(angles)
    return table


def _torch_table(n, d_model):
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
    angles = torch.arange(n).unsqueeze(1) * div_term
    table = torch.zeros(n, d_model)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def _rows(table_function):
    """A (position, d_model) -> row function from a (n, d_model) -> table one: the shape of exercise 3's answer."""
    return lambda position, d_model: table_function(position + 1, d_model)[position]


@pytest.mark.parametrize(
    ("wrong", "symptom"),
    [
        (lambda n, d: np.zeros((n, d)), "returned only zeros"),
        (lambda n, d: _table(n, d, swap=True), "swapped"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-i / d)), "uses i where the formula has 2i"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (-4 * i / d)), "doubled"),
        (lambda n, d: _table(n, d, rates=lambda i, d: 10000.0 ** (2 * i / d)), "minus sign"),
        (lambda n, d: _table(n, d, rates=lambda i, d: np.exp(-2 * i * np.log10(10000) / d)), "natural log"),
        (lambda n, d: _table(n, d, start=1), "start at 1"),
        (lambda n, d: pe_lib.sinusoidal_encoding(n, d, layout="concatenated"), "concatenated"),
        (lambda n, d: _table(n, d) + 0.05, "first wrong value at position 0, column 0"),
        (lambda n, d: np.full((n, d), np.nan), "NaN"),
    ],
)
def test_the_table_diagnosis_names_typical_mistakes(wrong, symptom):
    feedback = ch03.check_chapter_fix(_rows(wrong))
    assert not feedback.passed and symptom in feedback.message
    assert str(feedback).startswith("[spot the bug] Not yet: ")
    assert len(ch03.check_chapter_fix(_rows(wrong), hint=3).hints) == 3


def test_the_table_diagnosis_names_an_angle_per_column():
    def own_index(n, d_model):
        j = np.arange(d_model)
        angles = np.arange(n)[:, None] / 10000.0 ** (j / d_model)
        return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))

    assert "its own index j" in ch03.check_chapter_fix(_rows(own_index)).message
    assert ch03.check_chapter_fix(_rows(_table)).passed
    assert ch03.check_chapter_fix(_rows(lambda n, d: _torch_table(n, d).to(torch.bfloat16))).passed


# ---------------------------------------------------------------- checkers: the book chapter's bug


def _chapter_encoding(position, d_model):
    angle_rads = np.arange(d_model) // 2 * np.pi / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))
    angle_rads = position * angle_rads
    pos_encoding = np.zeros(d_model)
    pos_encoding[0::2] = np.sin(angle_rads[0::2])
    pos_encoding[1::2] = np.cos(angle_rads[1::2])
    return pos_encoding


def _chapter_fixed(position, d_model):
    angle_rads = 1 / np.power(10000, 2 * (np.arange(d_model) // 2) / np.float32(d_model))
    angle_rads = position * angle_rads
    pos_encoding = np.zeros(d_model)
    pos_encoding[0::2] = np.sin(angle_rads[0::2])
    pos_encoding[1::2] = np.cos(angle_rads[1::2])
    return pos_encoding


def test_check_chapter_fix_accepts_the_fix():
    assert ch03.check_chapter_fix(_chapter_fixed).passed
    assert ch03.check_chapter_fix(lambda p, d: pe_lib.sinusoidal_encoding([p], d)[0]).passed


def test_check_chapter_fix_recognises_the_chapter_bug():
    feedback = ch03.check_chapter_fix(_chapter_encoding)
    assert not feedback.passed
    assert "columns 0 and 1 never change" in feedback.message and "line 1" not in str(feedback)
    assert "Look at line 1" in str(ch03.check_chapter_fix(_chapter_encoding, hint=1))
    assert "np.pi" not in str(ch03.check_chapter_fix(_chapter_encoding, hint=1))
    assert "np.arange(d_model) // 2 * np.pi" in str(ch03.check_chapter_fix(_chapter_encoding, hint=2))
    assert "angle_rads = 1 / np.power(10000" in str(ch03.check_chapter_fix(_chapter_encoding, hint=3))


def test_check_chapter_fix_recognises_half_fix_and_other_mistakes():
    def pi_removed(position, d_model):
        i = np.arange(d_model) // 2
        angles = position * i / 10000.0 ** (2 * i / d_model)
        return np.where(np.arange(d_model) % 2 == 0, np.sin(angles), np.cos(angles))

    assert "removed π but kept the factor i//2" in ch03.check_chapter_fix(pi_removed).message
    swapped = ch03.check_chapter_fix(lambda p, d: _chapter_fixed(p, d)[np.arange(d) ^ 1])
    assert "swapped" in swapped.message
    assert "shape (8,)" in ch03.check_chapter_fix(lambda p, d: np.zeros((1, d))).message
    assert "ValueError" in ch03.check_chapter_fix(lambda p, d: int("x")).message
    assert "Drop `np.arange(d_model) // 2 *`" not in str(ch03.check_chapter_fix(pi_removed, hint=1))
    assert "Drop `np.arange(d_model) // 2 *`" in str(ch03.check_chapter_fix(pi_removed, hint=2))


# ---------------------------------------------------------------- checkers: M(k), concatenated


def _concatenated_rotation(k, d_model):
    perm = np.r_[0:d_model:2, 1:d_model:2]
    return pe_lib.relative_rotation(k, d_model)[np.ix_(perm, perm)]


def _blocks(k, d_model):
    angle = k * pe_lib.frequencies(d_model)
    c, s = np.diag(np.cos(angle)), np.diag(np.sin(angle))
    return np.block([[c, s], [-s, c]])


@pytest.mark.parametrize(
    "solution", [_concatenated_rotation, _blocks, lambda k, d: torch.tensor(_blocks(k, d), dtype=torch.float32)]
)
def test_check_concatenated_rotation_accepts_right_answers(solution):
    feedback = ch03.check_concatenated_rotation(solution)
    assert feedback.passed and str(feedback).startswith("[concatenated rotation] Correct")


@pytest.mark.parametrize(
    ("wrong", "symptom", "tier_1"),
    [
        (lambda k, d: pe_lib.relative_rotation(k, d), "interleaved M(k)", "cosine partner of column 0"),
        (lambda k, d: _concatenated_rotation(k, d).T, "the other way", "transpose"),
        (lambda k, d: _concatenated_rotation(-k, d), "the other way", "transpose"),
        (lambda k, d: np.eye(d), "off by up to", "entries in another order"),
        (lambda k, d: _blocks(k, d)[:-1], "shape", "entries in another order"),
        (lambda k, d: None, "returned None", "entries in another order"),
        (lambda k, d: _concatenated_rotation(k + 1, d), "off by up to", "entries in another order"),
    ],
)
def test_check_concatenated_rotation_rejects_mistakes_without_giving_the_answer(wrong, symptom, tier_1):
    feedback = ch03.check_concatenated_rotation(wrong)
    assert not feedback.passed and symptom in str(feedback)
    assert "np.ix_" not in str(feedback) and "perm" not in str(feedback)
    assert tier_1 in str(ch03.check_concatenated_rotation(wrong, hint=1))
    assert "np.ix_(perm, perm)" in str(ch03.check_concatenated_rotation(wrong, hint=3))


# ---------------------------------------------------------------- checkers: the timing signal


def _timing(n, d_model, max_timescale=1e4, *, steps=None, interleave=False, swap=False):
    pairs = d_model // 2
    rates = max_timescale ** (-np.arange(pairs) / (max(pairs - 1, 1) if steps is None else steps))
    angles = np.arange(n)[:, None] * rates
    first, second = (np.cos(angles), np.sin(angles)) if swap else (np.sin(angles), np.cos(angles))
    if interleave:
        return np.stack([first, second], axis=-1).reshape(n, d_model)
    return np.concatenate([first, second], axis=1)


def _t2t_literal(n, d_model, max_timescale=1e4):
    """tensor2tensor's get_timing_signal_1d, transcribed (min_timescale 1, even channels)."""
    num_timescales = d_model // 2
    log_timescale_increment = math.log(float(max_timescale) / 1.0) / max(num_timescales - 1, 1)
    inv_timescales = 1.0 * np.exp(np.arange(num_timescales) * -log_timescale_increment)
    scaled_time = np.arange(n, dtype=np.float64)[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


@pytest.mark.parametrize("solution", [_timing, _t2t_literal, lambda n, d, m=1e4: torch.tensor(_timing(n, d, m))])
def test_check_timing_signal_accepts_right_answers(solution):
    feedback = ch03.check_timing_signal(solution)
    assert feedback.passed and "exactly 1/max_timescale" in feedback.message


@pytest.mark.parametrize(
    ("wrong", "symptom"),
    [
        (lambda n, d, m=1e4: _timing(n, d, m, steps=d // 2), "your rates follow the paper"),
        (lambda n, d, m=1e4: pe_lib.sinusoidal_encoding(n, d, base=m, layout="concatenated"), "follow the paper"),
        (lambda n, d, m=1e4: _timing(n, d), "ignore max_timescale"),
        (lambda n, d, m=1e4: _timing(n, d, m, interleave=True), "interleaved"),
        (lambda n, d, m=1e4: _timing(n, d, m, swap=True), "halves are swapped"),
        (lambda n, d, m=1e4: np.zeros((n, d)), "only zeros"),
        (lambda n, d, m=1e4: _timing(n, d, m) + 0.01, "first wrong value at position 0, column 0"),
        (lambda n, d, m=1e4: _timing(n, d, m).T, "must return shape"),
        (lambda n, d, m=1e4: print(_timing(n, d, m)), "use `return`, not `print`"),
        (lambda n, d: _timing(n, d), "TypeError"),  # forgot the max_timescale argument
    ],
)
def test_check_timing_signal_rejects_mistakes_without_giving_the_answer(wrong, symptom):
    feedback = ch03.check_timing_signal(wrong)
    assert not feedback.passed and symptom in str(feedback)
    for answer in ("pairs - 1", "np.concatenate", "-i / max(d_model/2 - 1, 1)"):
        assert answer not in str(feedback)
    assert "-i / max(d_model/2 - 1, 1)" in str(ch03.check_timing_signal(wrong, hint=2))
    assert "np.concatenate([np.sin(angles), np.cos(angles)], axis=1)" in str(ch03.check_timing_signal(wrong, hint=3))
