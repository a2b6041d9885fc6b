"""Notebook 10's grader (pe_lib.ch10_real_exercises): right answers pass, the mistakes learners make do not.

The right answers include transformers' own code (generate's position ids) and the 4.x fill of 1; every named slip
gets its own symptom; hints come question first, code last, and no answer is printed before the learner asks.
"""

import numpy as np
import pytest
import torch
import transformers

from pe_lib import ch10_real_exercises as ex10
from pe_lib import llama


def padded_positions(attention_mask):
    position_ids = attention_mask.long().cumsum(-1) - 1
    return position_ids.masked_fill(attention_mask == 0, 0)


def transformers_generate(attention_mask):
    """What transformers' generate computes (GenerationMixin._prepare_position_ids_for_generation)."""
    return transformers.GenerationMixin._prepare_position_ids_for_generation(
        None, attention_mask, {"attention_mask": attention_mask}
    )


@pytest.mark.parametrize(
    "answer",
    [
        padded_positions,
        transformers_generate,
        llama.padded_position_ids,
        lambda m: (m.cumsum(-1) - 1).masked_fill(m == 0, 1),  # transformers 4.x
        lambda m: (m.cumsum(-1) - 1).clamp(min=0),
        lambda m: (torch.arange(m.shape[1]) - (m == 0).sum(-1, keepdim=True)).clamp(min=0),
        lambda m: torch.from_numpy(np.maximum(np.cumsum(m.numpy(), axis=-1) - 1, 0)),  # NumPy, then back
        lambda m: padded_positions(m).int().long(),
    ],
)
def test_right_answers_are_correct(answer):
    feedback = ex10.check_padded_positions(answer)
    assert feedback.passed, feedback
    assert str(feedback).startswith("[position ids for a left-padded batch] Correct")


def _in_place(m):
    m -= 1  # the mask itself becomes the answer's scratch space
    return padded_positions(m + 1)


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda m: torch.arange(m.shape[1]).expand(m.shape), "ignore the padding"),  # the notebook's stub
        (lambda m: m.cumsum(-1), "gets position 1"),  # cumsum without - 1
        (lambda m: m.cumsum(-1).masked_fill(m == 0, 1), "gets position 1"),
        (lambda m: m.cumsum(-1) - 1, "negative positions"),  # padding left at -1
        (lambda m: torch.arange(m.shape[1]) - (m == 0).sum(-1, keepdim=True), "negative positions"),
        (lambda m: padded_positions(m).masked_fill(m == 0, 2), "on the padding you return [2]"),
        (lambda m: (m.flip(-1).cumsum(-1).flip(-1) - 1).masked_fill(m == 0, 0), "count from the right"),
        # what the exercise asks for is a torch.long tensor (issue 28: NumPy, lists and int32 passed)
        (lambda m: padded_positions(m).float(), "torch.long tensor (int64, as transformers passes them and as the "
         "mask comes); you returned a Tensor of dtype torch.float32"),
        (lambda m: padded_positions(m).double().numpy(), "you returned a NumPy array of dtype float64"),
        (lambda m: padded_positions(m).bool(), "you returned a Tensor of dtype torch.bool"),
        (lambda m: padded_positions(m).int(), "you returned a Tensor of dtype torch.int32"),
        (lambda m: padded_positions(m).short(), "you returned a Tensor of dtype torch.int16"),
        (lambda m: padded_positions(m).numpy(), "you returned a NumPy array of dtype int64"),
        (lambda m: padded_positions(m).tolist(), "you returned a list of int"),
        (lambda m: np.maximum(np.cumsum(m.numpy(), axis=-1) - 1, 0), "you returned a NumPy array of dtype int64"),
        (lambda m: padded_positions(m).to_sparse(), "you returned a sparse Tensor (layout torch.sparse_coo)"),
        (lambda m: padded_positions(m).to("meta"), "got a Tensor on the meta device"),
        (lambda m: padded_positions(m)[0], "shape"),  # wrong shape
        (lambda m: padded_positions(m).T, "shape"),
        (lambda m: padded_positions(m)[None], "shape"),
        (lambda m: None, "forget the `return`"),
        (lambda m: print(padded_positions(m)), "use `return`, not `print`"),
        (lambda m: m.masked_fill_(m == 0, 0).cumsum_(-1).sub_(1), "changed its input in place"),
        (_in_place, "changed its input in place"),
        (lambda m: "0 1 2", "got a str"),
        (lambda m: padded_positions(m) * 2, "expected, got"),
        (lambda m: padded_positions(m) + torch.randint(0, 2, m.shape), "different answers"),
        (lambda m: m.cumsum(), "raised TypeError"),
        (lambda m: torch.tensor([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4], [0, 0, 0, 0, 0]]), "shape"),  # hard-coded
    ],
)  # fmt: skip
def test_mistakes_are_never_correct(answer, symptom):
    feedback = ex10.check_padded_positions(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ex10.check_padded_positions(answer, hint=3).hints) == 3


def test_an_answer_right_only_on_some_batches_fails():
    def without_the_long_batch(m):
        return padded_positions(m) if m.shape[1] < 100 else torch.zeros_like(m)

    def only_one_padding_pattern(m):  # positions from the first row's padding, for every row
        return (torch.arange(m.shape[1]) - (m[0] == 0).sum()).clamp(min=0).expand(m.shape)

    for answer in (without_the_long_batch, only_one_padding_pattern):
        assert not ex10.check_padded_positions(answer).passed


def test_the_cases_cover_no_padding_rows_padded_differently_and_single_tokens():
    masks = ex10.cases()
    assert any(bool(m.all()) for m in masks)  # no padding at all
    assert any(len({int(p) for p in (m == 0).sum(-1)}) == m.shape[0] > 3 for m in masks)  # all padded differently
    assert any(bool((m.sum(-1) == 1).any()) and m.shape[1] > 1 for m in masks)  # a row of one token
    assert any(m.shape == (1, 1) for m in masks)
    assert all(m.dtype == torch.int64 for m in masks)
    for mask in masks:  # the reference is transformers'
        assert torch.equal(llama.padded_position_ids(mask), transformers_generate(mask))


def test_hints_come_question_first_code_last_and_only_when_asked():
    stub = ex10.check_padded_positions(lambda m: torch.arange(m.shape[1]).expand(m.shape))
    text = str(stub)
    assert "Hint" not in text and "cumsum" not in text and "hint=1" in text
    hints = ex10.check_padded_positions(lambda m: torch.arange(m.shape[1]).expand(m.shape), hint=3).hints
    assert hints[0].endswith("?") and "cumsum" not in hints[0]
    assert "cumsum(-1) - 1" in hints[-1] and "masked_fill" in hints[-1]
    assert "Hint 1/3" in str(ex10.check_padded_positions(lambda m: m.cumsum(-1), hint=1))


def test_the_hint_argument_is_checked():
    with pytest.raises(ValueError, match="hint"):
        ex10.check_padded_positions(padded_positions, hint=4)
    with pytest.raises(TypeError, match="hint"):
        ex10.check_padded_positions(padded_positions, hint=True)
