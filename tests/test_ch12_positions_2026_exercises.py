"""Notebook 12's graders (pe_lib.ch12_positions_2026_exercises): right answers pass, learners' mistakes do not."""

import math

import numpy as np
import pytest
import torch

from pe_lib import ch12_positions_2026_exercises as ex12
from pe_lib.partial_rope import apply_partial_rope

# --- the worked solutions, as the solutions notebook writes them -----------------------------


def proportional_rope(x, positions, fraction, base):
    half, k = x.shape[1] // 2, int(fraction * x.shape[1] // 2)
    theta = np.where(np.arange(half) < k, base ** (-2 * np.arange(half) / x.shape[1]), 0.0)
    angle = np.asarray(positions, float)[:, None] * theta
    a, b = x[:, :half], x[:, half:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], axis=1)


def torch_proportional(x, positions, fraction, base):
    x = torch.as_tensor(x)
    d = x.shape[1]
    half, k = d // 2, int(fraction * d // 2)
    theta = torch.where(torch.arange(half) < k, base ** (-2 * torch.arange(half, dtype=torch.float64) / d), 0.0)
    angle = torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta
    rotated = torch.cat([-x[:, half:], x[:, :half]], dim=1)  # rotate_half
    return x * torch.cat([angle.cos()] * 2, 1) + rotated * torch.cat([angle.sin()] * 2, 1)


def beta_scale(positions, beta, original_max_position_embeddings):
    return 1 + beta * np.log1p(np.floor(np.asarray(positions, dtype=float) / original_max_position_embeddings))


@pytest.mark.parametrize("answer", [proportional_rope, torch_proportional])
def test_proportional_right_answers_pass(answer):
    feedback = ex12.check_proportional_rope(answer)
    assert feedback.passed and "Correct" in str(feedback), str(feedback)


def with_theta(theta_of):
    """A rotate_half port whose frequencies (half,) come from theta_of(d, fraction, base)."""

    def port(x, positions, fraction, base):
        d = x.shape[1]
        angle = np.asarray(positions, float)[:, None] * theta_of(d, fraction, base)
        a, b = x[:, : d // 2], x[:, d // 2 :]
        return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], 1)

    return port


def neox_pairs_right_frequencies(x, positions, fraction, base):  # Megatron-Bridge #4195
    d = x.shape[1]
    k = int(fraction * d // 2)
    r = 2 * k
    angle = np.asarray(positions, float)[:, None] * base ** (-2 * np.arange(k) / d)
    a, b = x[:, :k], x[:, k:r]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle), x[:, r:]], 1)


def in_place(x, positions, fraction, base):
    x[:] = proportional_rope(x, positions, fraction, base)
    return x


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda x, p, f, b: None, "None"),
        (lambda x, p, f, b: apply_partial_rope(x, p, fraction=f, base=b, kind="neox"), "NeoX-style partial RoPE"),
        (neox_pairs_right_frequencies, "your frequencies are right, but your pairs are NeoX's"),
        (
            with_theta(
                lambda d, f, b: np.where(
                    np.arange(d // 2) < int(f * d // 2), b ** (-2 * np.arange(d // 2) / (2 * int(f * d // 2))), 0.0
                )
            ),
            "NeoX's ladder",
        ),  # fmt: skip
        (with_theta(lambda d, f, b: b ** (-2 * np.arange(d // 2) / d)), "you turned every pair"),
        (
            with_theta(
                lambda d, f, b: np.where(
                    np.arange(d // 2) >= d // 2 - int(f * d // 2), b ** (-2 * np.arange(d // 2) / d), 0.0
                )
            ),
            "froze the fastest pairs",
        ),  # fmt: skip
        (
            with_theta(
                lambda d, f, b: np.where(
                    np.arange(d // 2) < math.ceil(f * d / 2), b ** (-2 * np.arange(d // 2) / d), 0.0
                )
            ),
            "rounded the number",
        ),  # fmt: skip
        (
            lambda x, p, f, b: apply_partial_rope(x, p, fraction=f, base=b, kind="proportional", layout="interleaved"),
            "interleaved",
        ),  # fmt: skip
        (lambda x, p, f, b: proportional_rope(x, -np.asarray(p), f, b), "negative of RoPE's"),
        (in_place, "changed its input in place"),
        (lambda x, p, f, b: proportional_rope(x, p, f, b)[:, :-1], "shape"),
        (
            with_theta(
                lambda d, f, b: np.where(np.arange(d // 2) < int(f * d // 2), b ** (-np.arange(d // 2) / d), 0.0)
            ),
            "expected",
        ),  # fmt: skip
    ],
)
def test_proportional_mistakes_are_named(answer, says):
    feedback = ex12.check_proportional_rope(answer)
    assert not feedback.passed and says in str(feedback), str(feedback)


def test_proportional_hints_come_in_tiers_and_the_last_is_code():
    wrong = ex12.check_proportional_rope(lambda x, p, f, b: x.copy(), hint=3)
    text = str(wrong)
    assert "Hint 3/3" in text and "np.concatenate" in text
    namespace = {"np": np}
    code = ex12._PROPORTIONAL_HINTS[-1]
    exec("def solution(x, positions, fraction, base):\n" + code, namespace)  # the printed code is a right answer
    assert ex12.check_proportional_rope(namespace["solution"]).passed
    with pytest.raises(ValueError, match="hint must be"):
        ex12.check_proportional_rope(proportional_rope, hint=4)


def test_beta_scale_right_answer_passes_and_its_code_hint_is_right():
    assert ex12.check_beta_scale(beta_scale).passed
    namespace = {"np": np}
    exec("def solution(positions, beta, original_max_position_embeddings):\n" + ex12._SCALE_HINTS[-1], namespace)
    assert ex12.check_beta_scale(namespace["solution"]).passed


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda p, b, L: 1 + b * np.log1p(np.floor((np.asarray(p, float) + 1) / L)), "Llama 4's rule"),
        (lambda p, b, L: 1 + b * np.log1p(np.asarray(p, float) / L), "grows smoothly"),
        (lambda p, b, L: b * np.log1p(np.floor(np.asarray(p, float) / L)), "left out the 1 +"),
        (lambda p, b, L: 1 + b * np.log(np.maximum(np.floor(np.asarray(p, float) / L), 1)), "without adding 1"),
        (lambda p, b, L: beta_scale(p, b, L) ** 2, "squared"),
        (lambda p, b, L: 1 + b * np.log1p(np.floor(np.asarray(p, float) / 8192)), "expected"),
        (lambda p, b, L: None, "None"),
    ],
)
def test_beta_scale_mistakes_are_named(answer, says):
    feedback = ex12.check_beta_scale(answer)
    assert not feedback.passed and says in str(feedback), str(feedback)
