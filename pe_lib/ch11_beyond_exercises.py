"""The graders of notebook 11's exercises: RoPE-Axial's angles on a grid, and M-RoPE's position ids.

Each grader calls the learner's function on several cases through grading.run_safely, compares with
pe_lib.multidim's answer, and names the mistake it recognises (the wrong axis first, 1-D frequencies,
counting an image's tokens instead of its side...). Hints come in tiers, the formula last.
"""

import numpy as np

from . import multidim
from .grading import Feedback, as_numbers, describe, graded, holds_integers, run_safely


def _shape_problem(exercise, result, shape):
    """A Feedback if `result` is not an array of real numbers of this shape, else None; and the array."""
    array = as_numbers(result)
    if array is None:
        return Feedback(exercise, False, f"your function returned {describe(result)}, not an array of real "
                                         "numbers"), None  # fmt: skip
    if array.shape != shape:
        if array.shape == shape[::-1]:
            return Feedback(exercise, False, f"your array has shape {array.shape}: the axes are swapped, "
                                             f"the answer is {shape}"), None  # fmt: skip
        return Feedback(exercise, False, f"your array has shape {array.shape}, the answer has shape {shape}"), None
    if not np.all(np.isfinite(array)):
        return Feedback(exercise, False, "your array holds inf or nan"), None
    return None, array


# --- exercise 1: RoPE-Axial's angles ---------------------------------------------------------------------

_AXIAL = "exercise 1 (axial angles)"
_AXIAL_HINTS = (
    "Which of the head's pairs should turn when you move one column to the right, and which when you move one "
    "row down? How many pairs does each axis get?",
    "The first head_dim/4 pairs read the column x, the next head_dim/4 read the row y, with the same "
    "frequencies on both axes: pair t turns at base^(-4t/head_dim) (each axis is a RoPE of head_dim/2 features).",
    "    t = np.arange(head_dim // 4)\n"
    "    freq = base ** (-4 * t / head_dim)\n"
    "    return np.concatenate([np.outer(cols, freq), np.outer(rows, freq)], axis=1)",
)


def _axial_cases():
    cases = []
    for height, width, head_dim, base in ((3, 4, 16, 100.0), (5, 2, 8, 100.0), (4, 4, 32, 10.0), (2, 6, 12, 100.0)):
        rows, cols = multidim.grid_positions(height, width)
        cases.append((rows, cols, head_dim, base))
    return cases


def _axial_mistakes(rows, cols, head_dim, base):
    t = np.arange(head_dim // 4)
    freq = base ** (-4 * t / head_dim)
    index = np.arange(rows.size)
    # fmt: off
    return [
        ("your first pairs turn with the row and the next with the column; RoPE-Axial (rope-vit) turns the first "
         "half of the pairs with the column x", np.concatenate([np.outer(rows, freq), np.outer(cols, freq)], axis=1),
         ("In rope-vit's raster order, which coordinate is t % width?",)),
        ("your frequencies are 1-D RoPE's base^(-2t/head_dim): each axis is a RoPE of head_dim/2 features, so its "
         "exponent is -2t/(head_dim/2)", np.concatenate([np.outer(cols, base ** (-2 * t / head_dim)),
                                                          np.outer(rows, base ** (-2 * t / head_dim))], axis=1),
         ("How many features does one axis have, and what is RoPE's frequency for a head of that size?",)),
        ("your angles follow the token's index in the sequence (1-D RoPE), not its row and column",
         np.concatenate([np.outer(index, freq)] * 2, axis=1), ("Which inputs does your function use?",)),
        ("all your pairs turn with the column; half of them should turn with the row",
         np.concatenate([np.outer(cols, freq)] * 2, axis=1), ()),
        ("you alternate x and y pairs (x, y, x, y, ...); RoPE-Axial puts every x pair first, then every y pair",
         np.stack([np.outer(cols, freq), np.outer(rows, freq)], axis=-1).reshape(rows.size, -1), ()),
    ]
    # fmt: on


def _wrapped(angles):
    """Angles brought into [-pi, pi): two angles turn a pair the same way when their difference wraps to 0."""
    return np.remainder(angles + np.pi, 2 * np.pi) - np.pi


def _same_rotation(angles, reference):
    """True if `angles` turn every pair as `reference` does: equal modulo 2 pi (an answer wrapped to (-pi, pi] or
    [0, 2 pi) is the same rotation), to float32 rounding of the unwrapped angle. The difference is wrapped, not
    each side (an angle just below 2 pi and one just above 0 are neighbours), and it is the angle that is
    compared, not its cosine alone (cos(-a) = cos(a): the pair turned the wrong way would pass)."""
    return bool(np.all(np.abs(_wrapped(angles - reference)) <= 1e-6 + 1e-5 * np.abs(reference)))


def check_axial_angles(learner_function, *, hint=0):
    """Grade `learner_function(rows, cols, head_dim, base)` -> (n, head_dim // 2) angles of RoPE-Axial.

    The reference: multidim.rope_2d_angles(rows, cols, multidim.axial_rope_frequencies(head_dim, base=base)).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded(_AXIAL, _check_axial, learner_function, _AXIAL_HINTS, hint)


def _check_axial(learner_function):
    for rows, cols, head_dim, base in _axial_cases():
        result, failure = run_safely(_AXIAL, learner_function, rows.copy(), cols.copy(), head_dim, base)
        if failure is not None:
            return failure
        expected = multidim.rope_2d_angles(rows, cols, multidim.axial_rope_frequencies(head_dim, base=base))
        failure, array = _shape_problem(_AXIAL, result, expected.shape)
        if failure is not None:
            return failure
        if _same_rotation(array, expected):
            continue
        for message, wrong, hints in _axial_mistakes(rows, cols, head_dim, base):
            if wrong.shape == array.shape and _same_rotation(array, wrong):
                return Feedback(_AXIAL, False, message, hints)
        worst = np.unravel_index(np.argmax(np.abs(_wrapped(array - expected))), expected.shape)
        token, pair = worst
        where = f"token {token} (row {rows[token]}, column {cols[token]}), pair {pair}"
        grid = f"{rows.max() + 1} x {cols.max() + 1} grid with head_dim={head_dim}"
        return Feedback(_AXIAL, False, f"on a {grid}, {where}: yours {array[worst]:.4g}, "
                                       f"expected {expected[worst]:.4g}")  # fmt: skip
    return Feedback(_AXIAL, True, "your angles are RoPE-Axial's on every grid: x pairs first, then y pairs, "
                                  "base^(-4t/head_dim) on each axis")  # fmt: skip


# --- exercise 2: M-RoPE's position ids --------------------------------------------------------------------

_MROPE = "exercise 2 (M-RoPE ids)"
_MROPE_HINTS = (
    "Write out the ids of a small case by hand: 2 text tokens, a 2 x 3 image, 2 text tokens. Which ids does the "
    "image's first token get, and which id does the text after the image start from?",
    "Text: the same id in all three rows, counting on. The image starting at s: time s, height s + row, width "
    "s + column (raster order). The text after it starts at s + max(height, width), not s + height * width.",
    "    s = text_before\n"
    "    rows, cols = np.divmod(np.arange(height * width), width)\n"
    "    image = np.stack([np.full(rows.size, s), s + rows, s + cols])\n"
    "    after = s + max(height, width) + np.arange(text_after)\n"
    "    return np.concatenate([np.tile(np.arange(s), (3, 1)), image, np.tile(after, (3, 1))], axis=1)",
)
# A wide image first (width - height >= 2: each named mistake differs from the others there), then an image
# at the very start and one at the very end of the sequence (no text before / after).
_MROPE_CASES = ((4, 1, 6, 2), (2, 2, 3, 2), (3, 4, 2, 3), (1, 5, 5, 1), (2, 3, 1, 4), (0, 2, 3, 2), (2, 3, 2, 0))


def _mrope_mistakes(text_before, height, width, text_after):
    s = text_before
    rows, cols = np.divmod(np.arange(height * width), width)

    def build(image, after_start):
        after = after_start + np.arange(text_after)
        return np.concatenate([np.tile(np.arange(s), (3, 1)), image, np.tile(after, (3, 1))], axis=1)

    image = np.stack([np.full(rows.size, s), s + rows, s + cols])
    # fmt: off
    return [
        ("the text after the image continues at s + height × width, as if the image were a line of tokens; M-RoPE "
         "continues one past the image's largest id, s + max(height, width)", build(image, s + height * width),
         ("How far do the image's ids reach in each of the three rows?",)),
        ("the text after the image starts at the image's largest id, s + max(height, width) − 1: its first token "
         "shares an id with the image's last row or column", build(image, s + max(height, width) - 1),
         ("Is the first id after the image one past the largest, or equal to it?",)),
        ("your height and width rows are swapped: the height row counts the image's rows (index // width)",
         build(np.stack([image[0], image[2], image[1]]), s + max(height, width)), ()),
        ("your image's ids start from 0: they are shifted by the position where the image starts, s = text_before",
         build(image - s, s + max(height, width)), ("Where does the image start?",)),
        ("your three rows are equal: that is 1-D RoPE, one id per token",
         np.tile(np.arange(s + height * width + text_after), (3, 1)), ()),
    ]
    # fmt: on


def check_mrope_ids(learner_function, *, hint=0):
    """Grade `learner_function(text_before, height, width, text_after)` -> (3, n) ids of Qwen2-VL's M-RoPE.

    The sequence: text_before text tokens, one image whose merged grid is height x width, text_after text
    tokens. The reference: multidim.mrope_position_ids([text_before, ("image", 1, 2 height, 2 width), text_after]).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the code).
    """
    return graded(_MROPE, _check_mrope, learner_function, _MROPE_HINTS, hint)


def _check_mrope(learner_function):
    for text_before, height, width, text_after in _MROPE_CASES:
        result, failure = run_safely(_MROPE, learner_function, text_before, height, width, text_after)
        if failure is not None:
            return failure
        segments = [text_before, ("image", 1, 2 * height, 2 * width), text_after]
        expected = multidim.mrope_position_ids([segment for segment in segments if segment != 0])
        failure, array = _shape_problem(_MROPE, result, expected.shape)
        if failure is not None:
            return failure
        if not holds_integers(result):
            return Feedback(_MROPE, False, f"position ids are integers (each one picks a rotation angle, like a "
                                           f"token's position); you returned {describe(result)}")  # fmt: skip
        if np.array_equal(array, expected):
            continue
        for message, wrong, hints in _mrope_mistakes(text_before, height, width, text_after):
            if np.array_equal(array, wrong):
                return Feedback(_MROPE, False, message, hints)
        row, column = np.argwhere(array != expected)[0]
        where = f"token {column}, {('time', 'height', 'width')[row]} row"
        return Feedback(_MROPE, False, f"with text_before={text_before}, a {height} x {width} image and "
                                       f"text_after={text_after}: {where}: yours {array[row, column]:g}, "
                                       f"expected {expected[row, column]}")  # fmt: skip
    return Feedback(_MROPE, True, "your ids are Qwen2-VL's on every case: text counts on, the image spreads over "
                                  "rows and columns from where it starts, the text after it resumes one past its "
                                  "largest id")  # fmt: skip
