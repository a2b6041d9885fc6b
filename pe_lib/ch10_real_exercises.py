"""The grader of notebook 10's exercise: position ids for a left-padded batch, from its attention mask.

The learner writes `padded_positions(attention_mask)` for an attention mask (batch, n) of 1 (a token) and
0 (left padding), int64 as a tokenizer returns it, and returns the position ids (batch, n) that transformers'
generate passes with it, as a torch.long tensor (NumPy, a list or int32 hold the numbers but are not what
the model is given): each token counts the tokens of its row before it (its row's first token is at 0), and
a padding token gets 0 (transformers 4.x wrote 1 there, which passes too: no token reads a padding token, so
either will do, but a -1 is no row of a position table). The reference is pe_lib.llama.padded_position_ids.
"""

import numpy as np
import torch

from . import llama
from .grading import Feedback, as_numbers, describe, graded, run_safely

EXERCISE = "position ids for a left-padded batch"

_HINTS = (
    "Take the row [0, 0, 1, 1, 1]: which position should its first token (the first 1) get, and its last? How "
    "many tokens of the row stand before each one, and which running total of the mask counts them?",
    "A running sum of the mask along each row (cumsum over the last dimension) counts a token itself too, so "
    "the row's first token gets 1: shift it by one. Then the padding: what does your running sum minus one give "
    "there, and which position does transformers' generate write instead (a table has no row -1)?",
    "As transformers' generate computes it:\n"
    "    position_ids = attention_mask.long().cumsum(-1) - 1\n"
    "    return position_ids.masked_fill(attention_mask == 0, 0)",
)

PAD_FILLS = (0, 1)  # what transformers' generate writes on padding: 0 (5.x), 1 (4.x)


def _mask(pads, n):
    """An int64 attention mask (len(pads), n): row r has pads[r] zeros, then ones."""
    return torch.tensor([[0] * p + [1] * (n - p) for p in pads], dtype=torch.int64)


def cases():
    """The masks the grader tries, in order: padding first (a batch where rows differ), then no padding at all,
    every row padded differently, a row of one token, a batch of one token, and a long batch."""
    return [
        _mask([2, 0, 4], 5),  # one row unpadded, one of a single token
        _mask([0, 0], 6),  # no padding at all
        _mask([1, 3, 2, 6, 0], 7),  # every row padded differently, one row of one token
        _mask([0], 1),  # a batch of one token
        _mask([257, 0, 40], 300),  # a long one
    ]


def _shown(mask):
    rows = mask.tolist()
    if mask.shape[1] <= 8:
        return f"attention_mask {rows}"
    pads = (mask == 0).sum(-1).tolist()
    return f"attention_mask of shape {tuple(mask.shape)} with {pads} padding tokens per row"


def _long_tensor(result):
    """True if result is what transformers passes as position ids: a dense torch tensor of dtype int64 (torch.long)."""
    return isinstance(result, torch.Tensor) and result.dtype == torch.int64 and result.layout == torch.strided


def _mistakes(mask):
    """(symptom, own first hints, candidate) of the slips learners make, for this mask."""
    keep = mask.bool()
    n = mask.shape[1]
    counted = mask.cumsum(-1)
    pads = (~keep).sum(-1, keepdim=True)
    arange = torch.arange(n).expand(mask.shape)
    # fmt: off
    return [
        ("your positions ignore the padding: each row counts from its first column, so a row's first token sits "
         "at its number of padding tokens, not at 0",
         ("Row [0, 0, 1, 1, 1]: at which position does its first token sit in your answer, and in the same text "
          "run alone?",), arange),
        ("each row's first token gets position 1: a running sum of the mask counts the token itself",
         ("Which position does a row's first token have when the text runs alone?",),
         counted),  # on left padding the running sum is 0 already
        ("each row's first token gets position 1: a running sum of the mask counts the token itself",
         ("Which position does a row's first token have when the text runs alone?",), counted.masked_fill(~keep, 1)),
        ("your padding tokens get negative positions (the running sum minus one): transformers' generate writes 0 "
         "there, because a position table (learned positions, a cached cos/sin table) has no row -1",
         ("What does your answer hold on the padding of row [0, 0, 1, 1, 1], and could a table be indexed by it?",),
         counted - 1),
        ("your padding tokens get negative positions: transformers' generate writes 0 there, because a position "
         "table has no row -1", ("What does your answer hold on the padding of row [0, 0, 1, 1, 1]?",),
         arange - pads),
        ("your positions count from the right: the last token of each row is at 0",
         ("Which token of a row has position 0 when the text runs alone?",),
         (keep.long().flip(-1).cumsum(-1).flip(-1) - 1).masked_fill(~keep, 0)),
    ]
    # fmt: on


def check_padded_positions(learner_function, *, hint=0):
    """Grade `learner_function(attention_mask)` -> position ids (batch, n) as transformers' generate: torch.long.

    attention_mask: (batch, n) int64, 1 for a token, 0 for (left) padding. Right: each token's count of the
    tokens of its row before it; on padding 0 (or 1, as transformers 4.x). Tried on masks the notebook does not
    show (no padding, every row padded differently, rows of one token, a long batch).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded(EXERCISE, _check, learner_function, _HINTS, hint)


def _check(learner_function):
    for mask in cases():
        result, failure = run_safely(EXERCISE, learner_function, mask.clone())
        if failure is not None:
            return failure
        value = as_numbers(result)
        case = _shown(mask)
        if value is None:
            return Feedback(
                EXERCISE, False, f"return a torch.long tensor of positions, got {describe(result)} ({case})"
            )
        if value.shape != tuple(mask.shape):
            return Feedback(
                EXERCISE, False, f"return one position per token, shape {tuple(mask.shape)}, got shape {value.shape} "
                f"({case})"
            )  # fmt: skip
        if not _long_tensor(result):
            return Feedback(
                EXERCISE, False, f"return the position ids as a torch.long tensor (int64, as transformers passes "
                f"them and as the mask comes); you returned {describe(result)} ({case})",
                ("Which type and dtype do the attention mask and position ids have in transformers, and does your "
                 "last operation keep them?",),
            )  # fmt: skip
        keep = mask.bool().numpy()
        expected = llama.padded_position_ids(mask).numpy().astype(np.float64)
        real_right = np.array_equal(value[keep], expected[keep])
        pads_right = bool(np.isin(value[~keep], PAD_FILLS).all())
        if real_right and pads_right:
            continue
        for symptom, hints, candidate in _mistakes(mask):
            if np.array_equal(value, candidate.numpy()):
                return Feedback(EXERCISE, False, f"{symptom} ({case})", hints)
        if real_right:
            found = sorted({int(v) if float(v).is_integer() else float(v) for v in value[~keep]})
            return Feedback(
                EXERCISE, False, f"every token's position is right; on the padding you return {found[:6]}: "
                f"transformers' generate writes 0 there ({case})",
                ("Is a padding token's position ever read, and which value does generate write there?",),
            )  # fmt: skip
        row, column = (int(i) for i in np.argwhere(keep & (value != expected))[0])
        return Feedback(
            EXERCISE, False, f"row {row}, column {column} (a token): position {expected[row, column]:.0f} expected, "
            f"got {value[row, column]:g} ({case})"
        )  # fmt: skip
    return Feedback(
        EXERCISE,
        True,
        "every token counts the tokens of its row before it, the padding gets a position a table has: the "
        "position ids transformers' generate passes with a left-padded batch",
    )
