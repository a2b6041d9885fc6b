"""The graders of notebook 05's exercises: similarity by offset, and the targets of the shift task.

Notebook 05 calls them as `ch05_learned.check_...` (that module imports them); its figures and
explorer live in pe_lib/ch05_learned.py.
"""

import numpy as np
import torch

from . import analysis, encodings, experiments
from .grading import Feedback, as_numbers, describe, graded, run_safely


def _cosine_matrix(table, axis=1):
    """Cosines of the rows (axis=1) or, a typical mistake, of the table normalised along columns (axis=0)."""
    unit = table / np.linalg.norm(table, axis=axis, keepdims=True)
    return unit @ unit.T


def _offset_means(matrix, reduce=np.mean):
    return np.array([reduce(np.diagonal(matrix, k)) for k in range(matrix.shape[0])])


def _similarity_mistakes(table):
    """(result, symptom, own hint tiers) for the usual ways a similarity-by-offset curve goes wrong."""
    n = table.shape[0]
    cosine = _cosine_matrix(table)
    cyclic = np.array([np.mean([cosine[p, (p + k) % n] for p in range(n)]) for k in range(n)])
    return [
        (
            _offset_means(table @ table.T),
            "these are mean dot products, not cosines: long rows count more, and offset 0 is not 1",
            (
                "A cosine is a dot product divided by both lengths. Where does your code divide?",
                "Divide each row by its length first (row / np.linalg.norm(row)); then dot products are cosines.",
            ),
        ),
        (
            _offset_means(_cosine_matrix(table, axis=0)),
            "you normalised the columns (axis=0); each ROW is a position vector",
            (
                "Which axis of the table runs over positions, and which over the dimensions of one vector?",
                "Take the norm of each row: np.linalg.norm(table, axis=1, keepdims=True).",
            ),
        ),
        (
            cosine[0],
            "this is the similarity of position 0 to position k only",
            (
                "Offset k has many pairs: (0, k), (1, k + 1), ... Where do they all sit in the matrix of cosines?",
                "Average over every pair (p, p + k): the mean of the k-th diagonal, np.diagonal(similarity, k).mean().",
            ),
        ),
        (
            cyclic,
            "you wrapped around the end (np.roll pairs the last rows with the first ones)",
            (
                "Which pairs (p, p + k) exist in a table of n rows?",
                "Only pairs with p + k < n count: they are np.diagonal(similarity, k), with no roll.",
            ),
        ),
        (
            _offset_means(cosine, np.sum),
            "you summed the cosines of each offset: offset k has n - k pairs, so the sum favours small k",
            (
                "Is entry k a total or an average?",
                "Take the mean of the k-th diagonal, not its sum.",
            ),
        ),
    ]


def _allowed_error(value):
    """How far a right answer of `value`'s type may sit from the float64 reference, for cosines (size <= 1).

    Measured on the grader's tables with the exercise's recipe computed in each precision: at most
    1.6e-7 in float32, 3.6e-4 in float16 and 4.4e-3 in bfloat16; every recognised mistake differs
    by more than 0.1 (tests/test_ch05_learned.py checks both).
    """
    dtype = str(getattr(value, "dtype", ""))
    if "bfloat16" in dtype:
        return 1.5e-2
    return 2e-3 if "float16" in dtype else 1e-5


_SIMILARITY_HINTS = (
    "The cosine of two rows is their dot product divided by both lengths. If every row had length 1, what "
    "would one matrix product give you?",
    "Divide each row by its norm (axis=1); then unit @ unit.T holds the cosine of rows p and q at [p, q], "
    "and the pairs at offset k lie on the k-th diagonal above the main one.",
    "Unit rows, all cosines, the mean of each diagonal:\n"
    "    unit = table / np.linalg.norm(table, axis=1, keepdims=True)\n"
    "    cosines = unit @ unit.T\n"
    "    return np.array([np.diagonal(cosines, k).mean() for k in range(len(table))])",
)


def check_similarity_by_offset(learner_function, *, hint=0):
    """Grade `learner_function(table) -> (n,)`: entry k = mean cosine similarity of rows p and p + k of table (n, d).

    The reference is pe_lib.analysis.similarity_by_offset.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("similarity by offset", _check_similarity_by_offset, learner_function, _SIMILARITY_HINTS, hint)


def _check_similarity_by_offset(learner_function):
    exercise = "similarity by offset"
    rng = np.random.default_rng(20240605)
    scaled = rng.normal(size=(12, 6)) * rng.uniform(0.2, 3.0, size=(12, 1)) + 0.7  # rows of unequal length
    tables = (scaled, encodings.sinusoidal_encoding(40, 16) * 3.0, rng.normal(size=(9, 20)), rng.normal(size=(2, 5)))
    for table in tables:  # the last: two rows, the fewest that have an offset 1
        value, failure = run_safely(exercise, learner_function, table.copy())
        if failure is not None:
            return failure
        result, tolerance = as_numbers(value), _allowed_error(value)
        reference = analysis.similarity_by_offset(table)
        n = table.shape[0]
        if result is None:
            return Feedback(
                exercise,
                False,
                f"return real numbers, one mean cosine per offset k = 0 .. n - 1; got {describe(value)}",
            )
        if result.ndim == 0:
            return Feedback(
                exercise, False, f"got one number; for a table of {n} rows return {n} values, one per offset"
            )
        # n numbers as a row or a column, (1, n) or (n, 1), are still one value per offset
        result = result.reshape(-1) if result.size == max(result.shape) else result
        if result.shape == reference.shape and not np.isfinite(result).all():
            return Feedback(exercise, False, f"for a ({n}, {table.shape[1]}) table your values hold inf or nan")
        if result.shape != reference.shape:
            if result.shape == (n - 1,) and np.allclose(result, reference[1:], atol=tolerance):
                return Feedback(
                    exercise,
                    False,
                    f"your values start at offset 1; the exercise starts at offset k = 0 (where the similarity "
                    f"is 1): expected {n} values",
                )
            if result.shape == (table.shape[1],):
                return Feedback(
                    exercise,
                    False,
                    f"got {table.shape[1]} values, one per column: rows are positions, "
                    f"so there are {n} offsets 0..{n - 1}",
                )
            return Feedback(
                exercise,
                False,
                f"for a table of {n} rows return {n} values (offsets 0..{n - 1}), got shape {result.shape}",
            )
        if np.allclose(result, reference, atol=tolerance):
            continue
        for mistake, symptom, hints in _similarity_mistakes(table):
            if np.allclose(result, mistake, atol=tolerance):
                return Feedback(exercise, False, symptom, hints)
        k = int(np.argmax(np.abs(result - reference)))
        return Feedback(
            exercise,
            False,
            f"for a ({n}, {table.shape[1]}) table, offset k={k}: expected {reference[k]:.4f}, got {result[k]:.4f}",
        )
    return Feedback(
        exercise,
        True,
        "normalise the rows, take all cosines, average each diagonal: 1 at offset 0, then how fast similarity decays",
    )


_SHIFT_HINTS = (
    "Position i's target is the token k places earlier. What is the target of positions 0 .. k-1, which have "
    "no such token, and how does the loss know to skip them?",
    "Start from a tensor full of experiments.IGNORE (-100, the value the loss skips), then copy into "
    "positions k onwards the tokens from k places earlier.",
    "IGNORE everywhere, then the tokens from k places earlier:\n"
    "    targets = torch.full_like(tokens, experiments.IGNORE)\n"
    "    targets[:, k:] = tokens[:, :-k]\n"
    "    return targets",
)


def check_shift_targets(learner_function, *, hint=0):
    """Grade `learner_function(tokens, k) -> targets`: tokens (batch, seq) int64; targets[:, i] = tokens[:, i - k].

    Positions i < k have no target and must hold pe_lib.experiments.IGNORE (-100), which the
    loss skips. The reference is pe_lib.experiments.task_targets(tokens, "shift", shift=k).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    return graded("shift targets", _check_shift_targets, learner_function, _SHIFT_HINTS, hint)


def _check_shift_targets(learner_function):
    exercise = "shift targets"
    ignore = experiments.IGNORE
    generator = torch.Generator().manual_seed(605)
    # The last case is the boundary k = seq - 1: one target per sequence.
    for k, shape in ((2, (3, 9)), (4, (2, 11)), (1, (1, 5)), (3, (2, 4))):
        original = torch.randint(0, 20, shape, generator=generator)
        value, failure = run_safely(exercise, learner_function, original.clone(), k)  # also: changed in place?
        if failure is not None:
            return failure
        result = as_numbers(value)
        reference = experiments.task_targets(original, "shift", shift=k).numpy()
        if result is None or result.shape != reference.shape:
            got = f"got {describe(value)}" if result is None else f"got shape {result.shape}"
            return Feedback(exercise, False, f"return targets of the same shape as the tokens {tuple(shape)}, {got}")
        dense_int64 = isinstance(value, torch.Tensor) and value.dtype == torch.int64 and value.layout == torch.strided
        if np.array_equal(result, reference) and not dense_int64:
            return Feedback(
                exercise,
                False,
                f"your targets hold the right values, but as {describe(value)}: the loss (cross_entropy) takes "
                "class targets only as a dense torch tensor of dtype int64 and rejects these",
                ("Which dtype do the tokens have, and which function makes a tensor of the same dtype and shape?",),
            )
        if np.array_equal(result, reference):
            continue
        tokens_np = original.numpy()
        body = result[:, k:]
        ahead = np.full_like(reference, ignore)
        ahead[:, : shape[1] - k] = tokens_np[:, k:]
        if np.array_equal(body, reference[:, k:]):
            if np.array_equal(result[:, :k], np.roll(tokens_np, k, axis=1)[:, :k]):
                symptom = "the first k positions got tokens from the END of the sequence (torch.roll wraps around)"
            else:
                symptom = f"the first k positions hold {result[0, 0]:g}"
            return Feedback(
                exercise,
                False,
                f"{symptom}, but they have no token k places earlier",
                (
                    "A position with no target still needs a value in the tensor. Which value does the loss skip?",
                    f"Fill the first k positions with experiments.IGNORE = {ignore}.",
                ),
            )
        if np.array_equal(result, ahead) or np.array_equal(result[:, : shape[1] - k], tokens_np[:, k:]):
            return Feedback(
                exercise,
                False,
                "you shifted the wrong way: your position i holds the token k places LATER, tokens[:, i + k]; "
                "it must predict the token k places EARLIER",
                (
                    "Slicing tokens[:, k:] starts k places later. Which slice starts at the beginning?",
                    "targets[:, k:] must come from tokens[:, :-k].",
                ),
            )
        for wrong in (k - 1, k + 1):
            if 0 < wrong < shape[1] and np.array_equal(result[:, wrong:], tokens_np[:, : shape[1] - wrong]):
                return Feedback(exercise, False, f"off by one: your targets copy from {wrong} places back, not k={k}")
        # The first wrong target from position k on (the tokens), else one of the first k (no target there).
        wrong = np.argwhere(result[:, k:] != reference[:, k:]) + [0, k]
        batch, place = wrong[0] if len(wrong) else np.argwhere(result != reference)[0]
        return Feedback(
            exercise,
            False,
            f"for k={k}: expected targets[{batch}, {place}] = {reference[batch, place]:g}, "
            f"got {result[batch, place]:g}",
        )
    return Feedback(exercise, True, "targets[:, k:] = tokens[:, :-k], and the first k positions are IGNORE")
