"""Notebook 11's graders (pe_lib.ch11_beyond_exercises): right answers pass, the mistakes learners make do not."""

import numpy as np
import pytest
import torch

from pe_lib import ch11_beyond_exercises as ex11

# --- the worked solutions, as the solutions notebook writes them -----------------------------


def axial_angles(rows, cols, head_dim, base):
    t = np.arange(head_dim // 4)
    freq = base ** (-4 * t / head_dim)
    return np.concatenate([np.outer(cols, freq), np.outer(rows, freq)], axis=1)


def position_ids(text_before, height, width, text_after):
    s = text_before
    rows, cols = np.divmod(np.arange(height * width), width)
    image = np.stack([np.full(rows.size, s), s + rows, s + cols])
    after = s + max(height, width) + np.arange(text_after)
    return np.concatenate([np.tile(np.arange(s), (3, 1)), image, np.tile(after, (3, 1))], axis=1)


def torch_axial(rows, cols, head_dim, base):
    freq = base ** (-4 * torch.arange(head_dim // 4, dtype=torch.float32) / head_dim)
    return torch.cat(
        [torch.outer(torch.as_tensor(cols).float(), freq), torch.outer(torch.as_tensor(rows).float(), freq)], 1
    )


def wrapped(angles):  # into (-pi, pi], as np.angle returns them
    return np.angle(np.exp(1j * angles))


@pytest.mark.parametrize(
    "answer",
    [
        axial_angles,
        torch_axial,
        lambda r, c, d, b: axial_angles(r, c, d, b).astype(np.float32),
        # the same rotations, the angles wrapped (issue 28: these were refused)
        lambda r, c, d, b: wrapped(axial_angles(r, c, d, b)),
        lambda r, c, d, b: np.mod(axial_angles(r, c, d, b), 2 * np.pi),
        lambda r, c, d, b: np.remainder(axial_angles(r, c, d, b) + np.pi, 2 * np.pi) - np.pi,
        lambda r, c, d, b: axial_angles(r, c, d, b) + 2 * np.pi,
        lambda r, c, d, b: axial_angles(r, c, d, b) - 4 * np.pi,
        lambda r, c, d, b: torch.remainder(torch_axial(r, c, d, b), 2 * torch.pi),
        lambda r, c, d, b: torch.atan2(torch_axial(r, c, d, b).sin(), torch_axial(r, c, d, b).cos()),
    ],
)
def test_axial_right_answers_pass(answer):
    feedback = ex11.check_axial_angles(answer)
    assert feedback.passed, str(feedback)
    assert "Correct" in str(feedback)


def hard_coded(rows, cols, head_dim, base):
    return axial_angles(rows, cols, 16, 100.0)


def mutate(rows, cols, head_dim, base):
    rows += 1
    return axial_angles(rows - 1, cols, head_dim, base)


def float_base_ignored(rows, cols, head_dim, base):
    return axial_angles(rows, cols, head_dim, 100.0)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda r, c, d, b: None, "None"),
        (lambda r, c, d, b: axial_angles(r, c, d, b).T, "swapped"),
        (lambda r, c, d, b: axial_angles(c, r, d, b), "first half of the pairs with the column"),
        (lambda r, c, d, b: axial_angles(r, c, d, b)[:-1], "shape"),
        (lambda r, c, d, b: np.full((len(r), d // 2), np.inf), "inf"),
        (lambda r, c, d, b: 0.5, "shape"),
        (lambda r, c, d, b: "angles", "str"),
        (lambda r, c, d, b: axial_angles(r, c, d, b).astype(complex), "complex"),
        (hard_coded, ""),
        (mutate, "in place"),
        (float_base_ignored, ""),
        (
            lambda r, c, d, b: np.concatenate(
                [np.outer(c, b ** (-2 * np.arange(d // 4) / d)), np.outer(r, b ** (-2 * np.arange(d // 4) / d))], 1
            ),
            "-2t/head_dim",
        ),  # fmt: skip
        (lambda r, c, d, b: axial_angles(np.arange(len(r)), np.arange(len(r)), d, b), "index"),
        (lambda r, c, d, b: axial_angles(c, c, d, b), "column"),
        (lambda r, c, d, b: np.stack(np.split(axial_angles(r, c, d, b), 2, 1), -1).reshape(len(r), -1), "alternate"),
        # equal modulo 2 pi is the same rotation; these are not (issue 28: no hole from accepting wrapped angles)
        (lambda r, c, d, b: -axial_angles(r, c, d, b), "expected"),  # same cosines, turned the wrong way
        (lambda r, c, d, b: 2 * np.pi - axial_angles(r, c, d, b), "expected"),
        (lambda r, c, d, b: np.mod(axial_angles(r, c, d, b), np.pi), "expected"),
        (lambda r, c, d, b: np.abs(wrapped(axial_angles(r, c, d, b))), "expected"),
        (lambda r, c, d, b: axial_angles(r, c, d, b) + np.pi, "expected"),
        (lambda r, c, d, b: np.degrees(axial_angles(r, c, d, b)), "expected"),
        (lambda r, c, d, b: wrapped(axial_angles(c, r, d, b)), "first half of the pairs with the column"),
        (lambda r, c, d, b: np.mod(axial_angles(np.arange(len(r)), np.arange(len(r)), d, b), 2 * np.pi), "index"),
    ],
)
def test_axial_mistakes_fail(answer, says):
    feedback = ex11.check_axial_angles(answer)
    assert not feedback.passed
    assert "Correct" not in str(feedback)
    assert says in str(feedback), str(feedback)


@pytest.mark.parametrize(
    "answer",
    [
        position_ids,
        lambda *a: torch.as_tensor(position_ids(*a)),
        lambda *a: position_ids(*a).tolist(),
        lambda *a: position_ids(*a).astype(np.int32),
        lambda *a: torch.as_tensor(position_ids(*a)).int(),
        lambda *a: torch.as_tensor(position_ids(*a)).to_sparse(),
    ],
)
def test_mrope_right_answers_pass(answer):
    feedback = ex11.check_mrope_ids(answer)
    assert feedback.passed, str(feedback)


def tokens_counted(text_before, height, width, text_after):
    ids = position_ids(text_before, height, width, text_after)
    ids[:, -text_after:] += height * width - max(height, width)
    return ids


def off_by_one(text_before, height, width, text_after):
    ids = position_ids(text_before, height, width, text_after)
    ids[:, -text_after:] -= 1
    return ids


def swapped(text_before, height, width, text_after):
    ids = position_ids(text_before, height, width, text_after)
    return ids[[0, 2, 1]]


def unshifted(text_before, height, width, text_after):
    ids = position_ids(text_before, height, width, text_after)
    ids[:, text_before : text_before + height * width] -= text_before
    return ids


def square_only(text_before, height, width, text_after):
    return position_ids(text_before, height, height, text_after)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda *a: None, "None"),
        (tokens_counted, "height × width"),
        (off_by_one, "largest id, s + max(height, width) − 1"),
        (swapped, "swapped"),
        (unshifted, "start from 0"),
        (lambda tb, h, w, ta: np.tile(np.arange(tb + h * w + ta), (3, 1)), "1-D RoPE"),
        (lambda *a: position_ids(*a).T, "swapped"),
        (lambda *a: position_ids(*a)[:, :-1], "shape"),
        (lambda *a: position_ids(*a) + 0.5, "integers"),
        # ids are integers (issue 28: floats holding the right numbers passed)
        (lambda *a: position_ids(*a).astype(float), "you returned a NumPy array of dtype float64"),
        (lambda *a: torch.as_tensor(position_ids(*a)).float(), "you returned a Tensor of dtype torch.float32"),
        (lambda *a: position_ids(*a).astype(float).tolist(), "you returned a list of float"),
        (lambda *a: position_ids(*a).astype(bool), "you returned a NumPy array of dtype bool"),
        (lambda *a: torch.as_tensor(position_ids(*a)).to("meta"), "meta device"),
        (lambda *a: str(position_ids(*a)), "str"),
        (square_only, "shape"),
        (lambda *a: 3, "shape"),
    ],
)
def test_mrope_mistakes_fail(answer, says):
    feedback = ex11.check_mrope_ids(answer)
    assert not feedback.passed
    assert "Correct" not in str(feedback)
    assert says in str(feedback), str(feedback)


@pytest.mark.parametrize(("checker", "wrong"), [(ex11.check_axial_angles, lambda r, c, d, b: axial_angles(c, r, d, b)),
                                                (ex11.check_mrope_ids, off_by_one)])  # fmt: skip
def test_hints_question_first_formula_last(checker, wrong):
    assert checker(wrong).shown == 0 and "Hint" not in str(checker(wrong))
    hints = checker(wrong, hint=3).hints
    assert len(hints) == 3 and hints[0].endswith("?")
    assert "return" in hints[-1]
    with pytest.raises(TypeError, match="hint"):
        checker(wrong, hint=True)
    with pytest.raises(ValueError, match="hint"):
        checker(wrong, hint=4)


def test_mrope_grader_tries_an_image_at_the_start_and_at_the_end():
    def starts_after_the_text(text_before, height, width, text_after):
        ids = position_ids(text_before, height, width, text_after)
        if text_before == 0:
            raise IndexError("index -1 is out of bounds for axis 1 with size 0")  # before[0, -1] + 1 on no text
        return ids

    feedback = ex11.check_mrope_ids(starts_after_the_text)
    assert not feedback.passed and "IndexError" in feedback.message
