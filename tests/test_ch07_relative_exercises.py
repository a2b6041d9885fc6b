"""Notebook 07's graders: right answers pass in every numeric type and in float32 as transformers computes them;
the slips learners make, answers of the wrong type, sizes hard-coded and off-by-one at every boundary do not."""

import math

import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import ch07_relative_exercises as ex07
from pe_lib.grading import Feedback

# --- the worked solutions, as the solutions notebook writes them -----------------------------


def rope_rotate_half(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    angles = np.outer(positions, theta)
    cos = np.cos(np.concatenate([angles, angles], axis=-1))
    sin = np.sin(np.concatenate([angles, angles], axis=-1))
    rotated = np.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)
    return x * cos + rotated * sin


def alibi_slopes(num_heads):
    def power_of_two(n):
        return [2.0 ** (-8 * (h + 1) / n) for h in range(n)]

    m = 2 ** int(math.log2(num_heads))
    return np.array(power_of_two(m) + power_of_two(2 * m)[0::2][: num_heads - m])


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    half = num_buckets // 2 if bidirectional else num_buckets
    upper = half if bidirectional and relative_position > 0 else 0
    n = abs(relative_position) if bidirectional else max(-relative_position, 0)
    max_exact = half // 2
    if n < max_exact:
        return upper + n
    large = max_exact + int(math.log(n / max_exact) / math.log(max_distance / max_exact) * (half - max_exact))
    return upper + min(large, half - 1)


# --- exercise 1: rotate_half RoPE -------------------------------------------------------------


def _as_torch(function, dtype=torch.float32, grad=False):
    def answer(*args):
        result = torch.as_tensor(np.asarray(function(*args)), dtype=dtype)
        return result.requires_grad_() if grad else result

    return answer


@pytest.mark.parametrize(
    "answer",
    [
        rope_rotate_half,
        _as_torch(rope_rotate_half),
        _as_torch(rope_rotate_half, torch.float64, grad=True),
        _as_torch(rope_rotate_half, torch.bfloat16),
        lambda x, positions, base: rope_rotate_half(x, positions, base).tolist(),
        lambda x, positions, base: pe_lib.apply_rope(torch.from_numpy(x), positions, base=base, layout="half"),
    ],
)
def test_check_rope_half_accepts_the_recipe_in_any_numeric_type(answer):
    feedback = ex07.check_rope_half(answer)
    assert feedback.passed, feedback
    assert str(feedback).startswith("[rotate_half RoPE] Correct")


def _recipe(x, positions, base, *, angles=None, rotated=None):
    d = x.shape[-1]
    pair_angles = np.outer(positions, base ** (-np.arange(0, d, 2) / d))
    angles = np.concatenate([pair_angles, pair_angles], axis=-1) if angles is None else angles(positions, d, base)
    rotated = np.concatenate([-x[:, d // 2 :], x[:, : d // 2]], axis=-1) if rotated is None else rotated(x, d)
    return x * np.cos(angles) + rotated * np.sin(angles)


def _pair_angles(positions, d, base):
    return np.outer(positions, base ** (-np.arange(0, d, 2) / d))


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda x, p, b: x.copy(), "unchanged"),
        (lambda x, p, b: _recipe(x, -p, b), "wrong way"),
        (lambda x, p, b: _recipe(x, p, b, rotated=lambda x, d: np.concatenate([x[:, d // 2 :], -x[:, : d // 2]], -1)),
         "wrong way"),
        (lambda x, p, b: _recipe(x, p, b, rotated=lambda x, d: x), "gives x back"),
        (lambda x, p, b: _recipe(x, p, b, rotated=lambda x, d: np.concatenate([x[:, d // 2 :], x[:, : d // 2]], -1)),
         "drops the minus sign"),
        (lambda x, p, b: _recipe(x, p, b, angles=lambda p, d, b: np.outer(p, b ** (-np.arange(d) / d))), "per feature"),
        (lambda x, p, b: _recipe(x, p, b, angles=lambda p, d, b: np.outer(p, b ** (-2 * np.arange(d) / d))),
         "per feature"),
        (lambda x, p, b: _recipe(x, p, b, angles=lambda p, d, b: np.repeat(_pair_angles(p, d, b), 2, axis=-1)),
         "side by side"),
        (lambda x, p, b: pe_lib.apply_rope(x, p, base=b, layout="interleaved"), "interleaved layout"),
        (lambda x, p, b: pe_lib.apply_rope(x, None, base=b, layout="half"), "ignored `positions`"),
        (lambda x, p, b: rope_rotate_half(x, p), "ignored `base`"),
        (lambda x, p, b: rope_rotate_half(x, p, b)[:, :-1], "shape"),
        (lambda x, p, b: np.round(rope_rotate_half(x, p, b)).astype(int), "integer dtype"),
        (lambda x, p, b: np.full_like(x, np.nan), "NaN"),
        (lambda x, p, b: "rotated", "got a str"),
        (lambda x, p, b: rope_rotate_half(x, p, b) * 1.5, "differs from RoPE's"),
    ],
)  # fmt: skip
def test_check_rope_half_names_the_mistake(answer, symptom):
    feedback = ex07.check_rope_half(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ex07.check_rope_half(answer, hint=3).hints) == 3


def _per_pair_cos_only(x, positions, base=10000.0):  # cos and sin of shape (n, d/2): they do not broadcast
    angles = _pair_angles(positions, x.shape[-1], base)
    d = x.shape[-1]
    return x * np.cos(angles) + np.concatenate([-x[:, d // 2 :], x[:, : d // 2]], -1) * np.sin(angles)


def test_check_rope_half_explains_cos_and_sin_that_do_not_broadcast():
    feedback = ex07.check_rope_half(_per_pair_cos_only, hint=2)
    assert not feedback.passed and "broadcast" in feedback.message and "(5, 8)" in feedback.message
    assert "columns" in feedback.hints[0] and "once for the first half" in feedback.hints[1]


def test_check_rope_half_names_an_input_changed_in_place():
    def turns_in_place(x, positions, base=10000.0):
        x[:] = rope_rotate_half(x, positions, base)
        return x

    feedback = ex07.check_rope_half(turns_in_place)
    assert not feedback.passed and "in place" in feedback.message


# --- exercise 2: ALiBi slopes ----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        alibi_slopes,
        lambda n: list(alibi_slopes(n)),
        _as_torch(alibi_slopes, torch.float64),
        lambda n: pe_lib.alibi_slopes(n),
        _as_torch(alibi_slopes, torch.float32, grad=True),
        _as_torch(alibi_slopes, torch.bfloat16),
    ],
)
def test_check_alibi_slopes_accepts_the_authors_slopes(answer):
    feedback = ex07.check_alibi_slopes(answer)
    assert feedback.passed, feedback
    assert "2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5" in str(feedback)


def _power_of_two(k, start=1):
    return [2.0 ** (-8 * (h + start) / k) for h in range(k)]


def _lower(n):
    return 2 ** int(math.log2(n))


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda n: np.full(n, 0.5), "same slope"),
        (lambda n: 2.0 ** (-8 * np.arange(1, n + 1) / n), "power-of-two formula"),
        (lambda n: 2.0 ** (-8 * np.arange(n) / n), "off by one"),
        (lambda n: _power_of_two(_lower(n), 0) + _power_of_two(2 * _lower(n), 0)[0::2][: n - _lower(n)], "off by one"),
        (lambda n: _power_of_two(2 * _lower(n))[:n], "first 12 slopes of the 16-head"),
        (lambda n: _power_of_two(_lower(n)) + _power_of_two(2 * _lower(n))[1::2][: n - _lower(n)], "odd-numbered"),
        (lambda n: sorted(alibi_slopes(n)), "another order"),
        (lambda n: -alibi_slopes(n), "negative"),
        (lambda n: np.log2(alibi_slopes(n)), "exponents"),
        (lambda n: alibi_slopes(n)[:-1], "shape (12,)"),
        (lambda n: alibi_slopes(n).reshape(n, 1), "shape (12,)"),
        (lambda n: np.arange(n), "integer dtype"),
        (lambda n: alibi_slopes(n) * 1.01, "not ALiBi's"),
        (lambda n: alibi_slopes(n) if n == 12 else np.ones(n), "8 heads"),
    ],
)
def test_check_alibi_slopes_names_the_mistake(answer, symptom):
    feedback = ex07.check_alibi_slopes(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ex07.check_alibi_slopes(answer, hint=3).hints) == 3


# --- exercise 3: a T5 bucket -----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        t5_bucket,
        lambda *args: pe_lib.t5_relative_bucket(
            args[0], bidirectional=args[1], num_buckets=args[2], max_distance=args[3]
        ),
        lambda *args: float(t5_bucket(*args)),
        lambda *args: np.int32(t5_bucket(*args)),
        lambda *args: torch.tensor(t5_bucket(*args)),
        lambda *args: [t5_bucket(*args)],
    ],
)
def test_check_t5_bucket_accepts_the_formula(answer):
    feedback = ex07.check_t5_bucket(answer)
    assert feedback.passed, feedback


@pytest.mark.parametrize("slip", list(ex07._T5_SLIPS))
def test_check_t5_bucket_names_each_slip(slip):
    def answer(*case):
        return ex07._t5_variant(*case, slip=slip)

    feedback = ex07.check_t5_bucket(answer)
    symptom, hints = ex07._T5_SLIPS[slip]
    assert not feedback.passed and feedback.message == symptom
    assert feedback.shown == 0 and feedback.hints[0] == hints[0]  # its own tier first, then the grader's


def test_every_t5_slip_is_wrong_somewhere_and_unlike_the_others():
    answers = {slip: [ex07._t5_variant(*case, slip=slip) for case in ex07._T5_CASES] for slip in ex07._T5_SLIPS}
    right = [t5_bucket(*case) for case in ex07._T5_CASES]
    assert [ex07._t5_variant(*case) for case in ex07._T5_CASES] == right
    assert all(answer != right for answer in answers.values())
    assert len({tuple(answer) for answer in answers.values()}) == len(answers)


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda *args: 0, "bucket 0 for every relative position"),
        (lambda *args: 3, "bucket 3 for every"),
        (lambda rel, b, nb, md: t5_bucket(rel, b, nb, md) + 0.5, "whole number"),
        (lambda rel, b, nb, md: [t5_bucket(rel, b, nb, md)] * 2, "one bucket"),
        (lambda rel, b, nb, md: "bucket", "got a str"),
        (lambda rel, b, nb, md: t5_bucket(rel, b, 32, 128), "0 to num_buckets - 1, got 27"),
        (lambda rel, b, nb, md: t5_bucket(abs(rel), b, nb, md), "relative_position=-3, bidirectional=True"),
    ],
)
def test_check_t5_bucket_says_what_is_wrong(answer, symptom):
    feedback = ex07.check_t5_bucket(answer)
    assert not feedback.passed and symptom in feedback.message, feedback.message
    assert "expected" not in feedback.message  # which case and which way, never the right bucket


# --- every grader: mistakes around the maths, and the hint tiers ------------------------------

GRADERS = {
    "rope": (ex07.check_rope_half, rope_rotate_half, "x, positions, base=10000.0"),
    "alibi": (ex07.check_alibi_slopes, alibi_slopes, "num_heads"),
    "t5": (ex07.check_t5_bucket, t5_bucket, "relative_position, bidirectional=True, num_buckets=32, max_distance=128"),
}

# the notebook's stub first, then stub-like answers; tokens of the answer that no stub's feedback may print
STUBS = {
    "rope": (
        [lambda x, p, base=1e4: x * np.ones_like(x) + x * np.zeros_like(x), lambda x, p, base=1e4: None],
        ["concatenate", "cat(", "-x[", "d // 2", "np.cos", "repeat", "θ_i", "rotate_half(x) is"],
    ),
    "alibi": (
        [lambda n: np.full(n, 0.5), lambda n: np.ones(n), lambda n: None],
        ["power_of_two", "[0::2]", "every other", "2^(-8", "2 ** int", "8-head", "16-head", "log2"],
    ),
    "t5": (
        [lambda *args: 0, lambda *args: None],
        ["math.log", "max_exact", "// 2", "abs(", "upper", "half", "log-spaced", "floor"],
    ),
}
CASES = [(name, index) for name, (stubs, _) in STUBS.items() for index in range(len(stubs))]


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-stub{case[1]}")
def test_a_stub_gets_its_symptom_without_the_answer(case):
    name, index = case
    checker = GRADERS[name][0]
    stubs, forbidden = STUBS[name]
    feedback = checker(stubs[index])
    text = str(feedback)
    assert isinstance(feedback, Feedback) and not feedback.passed and "Correct" not in text
    assert not [token for token in forbidden if token in text], text
    assert text.endswith("Stuck? Run the check again with hint=1 (of 3).")


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-stub{case[1]}")
def test_hint_k_shows_the_first_k_tiers(case):
    name, index = case
    checker = GRADERS[name][0]
    stub = STUBS[name][0][index]
    previous = str(checker(stub))
    for level in (1, 2, 3):
        feedback = checker(stub, hint=level)
        text = str(feedback)
        assert len(feedback.hints) == 3 and feedback.shown == level
        assert [line.split(":")[0] for line in text.splitlines() if line.startswith("Hint ")] == [
            f"Hint {k}/3" for k in range(1, level + 1)
        ]
        assert text.startswith(previous.rsplit("\nStuck?", 1)[0]) and ("Stuck?" in text) == (level < 3)
        previous = text


@pytest.mark.parametrize("name", list(GRADERS))
def test_the_formula_tier_is_a_right_answer(name):
    checker, _, signature = GRADERS[name]
    tier = checker(STUBS[name][0][0], hint=3).hints[-1]
    code = [line for line in tier.splitlines() if line.startswith("    ")]
    namespace = {"np": np, "math": math}
    exec("\n".join([f"def written({signature}):", *code]), namespace)
    assert checker(namespace["written"]).passed


@pytest.mark.parametrize("name", list(GRADERS))
def test_a_right_answer_never_prints_hints(name):
    checker, solution, _ = GRADERS[name]
    for level in (0, 1, 3):
        text = str(checker(solution, hint=level))
        assert "Correct" in text and "Hint" not in text and "Stuck" not in text


@pytest.mark.parametrize("name", list(GRADERS))
@pytest.mark.parametrize(("hint", "error"), [(-1, ValueError), (4, ValueError), (True, TypeError), ("2", TypeError)])
def test_a_bad_hint_is_refused_before_the_learners_code_runs(name, hint, error):
    checker, solution, _ = GRADERS[name]
    calls = []

    def counts_calls(*args):
        calls.append(args)
        return solution(*args)

    with pytest.raises(error, match=r"^hint must be an int from 0 \(no hint\) to 3 \(the formula\), got "):
        checker(counts_calls, hint=hint)
    assert not calls
    with pytest.raises(TypeError):
        checker(solution, 1)  # the hint is a keyword argument


@pytest.mark.parametrize("name", list(GRADERS))
def test_a_forgotten_return_and_a_print_are_named(name):
    checker, solution, _ = GRADERS[name]

    def forgot_return(*args):
        solution(*args)

    def prints_it(*args):
        print(solution(*args))

    assert "forget the `return`" in checker(forgot_return).message
    assert "use `return`, not `print`" in checker(prints_it).message
    assert len(checker(prints_it, hint=3).hints) == 3


@pytest.mark.parametrize("name", list(GRADERS))
def test_an_exception_and_a_changing_answer_are_named(name):
    checker, solution, _ = GRADERS[name]
    calls = []

    def raises(*args):
        raise IndexError("index 5 is out of bounds")

    def remembers(*args):
        calls.append(1)
        result = np.asarray(solution(*args), dtype=float)
        return result + 1 if len(calls) % 2 == 0 else result

    assert "IndexError" in checker(raises).message
    assert "different answers" in checker(remembers).message


# --- the classes of grader mistakes a review found across the course ---------------------------
# Each grader: right answers in float32 as transformers computes them and in half precision pass; a
# half-precision answer that is wrong where the values are small fails; an infinite or scalar return,
# strings and complex numbers get "Not yet" naming what came back; sizes hard-coded, off by one at a
# boundary, or in the wrong order fail.


def _hf_rotate_half(x, positions, base=10000.0, dtype=None):
    """transformers' Llama recipe: inv_freq and angles in float32, cos and sin cast to x's dtype."""
    x = torch.as_tensor(x) if dtype is None else torch.as_tensor(x).to(dtype)
    d = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    freqs = torch.as_tensor(positions).float()[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + torch.cat((-x[..., d // 2 :], x[..., : d // 2]), dim=-1) * sin


def _numpy_float32(x, positions, base=10000.0):
    d = x.shape[-1]
    theta = np.float32(base) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    angles = np.outer(np.asarray(positions, dtype=np.float32), theta)
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))
    return x * cos + np.concatenate([-x[:, d // 2 :], x[:, : d // 2]], -1) * sin


@pytest.mark.parametrize(
    "answer",
    [
        _hf_rotate_half,  # float64 x: a float64 result with float32 angles
        lambda x, p, b: _hf_rotate_half(x, p, b, torch.float32),
        lambda x, p, b: _hf_rotate_half(x, p, b, torch.bfloat16),
        lambda x, p, b: _hf_rotate_half(x, p, b, torch.float16),
        _numpy_float32,
    ],
    ids=["hf-float64", "hf-float32", "hf-bfloat16", "hf-float16", "numpy-float32"],
)
def test_check_rope_half_accepts_transformers_float32_angles_at_every_position_it_tries(answer):
    x, positions, base = max(ex07._rope_cases(), key=lambda case: case[1].max())
    error = np.abs(
        np.asarray(torch.as_tensor(answer(x, positions, base)).double()) - rope_rotate_half(x, positions, base)
    )
    assert positions.max() == 4095 and error.max() > 1e-5  # what a fixed 1e-6 (1e-5 for float32) rejected
    feedback = ex07.check_rope_half(answer)
    assert feedback.passed, feedback


def _bfloat16(function, *, change=lambda value: value):
    return lambda *args: torch.as_tensor(change(np.asarray(function(*args), dtype=np.float64))).bfloat16()


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (_bfloat16(rope_rotate_half, change=lambda v: v * 1.05), "differs from RoPE's"),
        (_bfloat16(rope_rotate_half, change=lambda v: v + 0.02), "differs from RoPE's"),
        (lambda x, p, b: _hf_rotate_half(x, torch.as_tensor(p).bfloat16(), b, torch.bfloat16), "differs"),
    ],
    ids=["5% too long", "0.02 added", "bfloat16 positions"],
)
def test_check_rope_half_refuses_half_precision_answers_that_are_wrong(answer, symptom):
    feedback = ex07.check_rope_half(answer)
    assert not feedback.passed and symptom in feedback.message, feedback.message


@pytest.mark.parametrize(
    "answer",
    [
        _bfloat16(alibi_slopes, change=lambda v: np.round(v, 2)),  # 1/256 -> 0: within a fixed 5e-3
        _bfloat16(alibi_slopes, change=lambda v: np.where(v < 0.005, 0.0, v)),
        _bfloat16(alibi_slopes, change=lambda v: v * 1.02),
        lambda n: torch.as_tensor(np.round(alibi_slopes(n), 2)).half(),
    ],
    ids=["rounded to 0.01", "smallest zeroed", "2% too steep", "float16 rounded"],
)
def test_check_alibi_slopes_refuses_half_precision_answers_wrong_at_small_slopes(answer):
    feedback = ex07.check_alibi_slopes(answer)
    assert not feedback.passed and "Correct" not in str(feedback), feedback


@pytest.mark.parametrize(
    "answer",
    [
        lambda n: torch.as_tensor(alibi_slopes(n), dtype=torch.float32).double(),  # float32 values in float64
        lambda n: (
            2.0 ** (-8.0 * torch.arange(1, 2 * _lower(n) + 1)[: _lower(n)] / _lower(n))
            if n == _lower(n)
            else torch.as_tensor(alibi_slopes(n), dtype=torch.float32)
        ),
        _as_torch(alibi_slopes, torch.float16),
    ],
    ids=["float32 in float64", "torch float32", "float16"],
)
def test_check_alibi_slopes_accepts_float32_and_float16_slopes(answer):
    feedback = ex07.check_alibi_slopes(answer)
    assert feedback.passed, feedback


NOT_NUMBERS = {  # what the learner returns -> what the feedback must name
    "inf": (lambda shape: float("inf"), "shape ()"),
    "a scalar": (lambda shape: 0.5, "shape ()"),
    "a 0-d array": (lambda shape: np.array(1.0), "shape ()"),
    "an infinite array": (lambda shape: np.full(shape, -np.inf), "NaN or infinity"),
    "strings": (lambda shape: np.full(shape, "0.5"), "NumPy array of strings (dtype <U3)"),
    "a list of strings": (lambda shape: ["0.5"] * shape[0], "list of str"),
    "ragged rows": (lambda shape: [[0.5] * (row + 1) for row in range(shape[0])], "rows of different lengths"),
    "complex": (lambda shape: np.ones(shape, dtype=complex), "NumPy array of complex numbers (dtype complex128)"),
    "complex torch": (
        lambda shape: torch.ones(shape, dtype=torch.complex64),
        "complex numbers (dtype torch.complex64)",
    ),
}


@pytest.mark.parametrize("kind", list(NOT_NUMBERS))
def test_rope_and_alibi_graders_say_not_yet_and_name_what_came_back(kind):
    make, said = NOT_NUMBERS[kind]
    for checker, answer in (
        (ex07.check_rope_half, lambda x, p, b: make(x.shape)),
        (ex07.check_alibi_slopes, lambda n: make((n,))),
    ):
        feedback = checker(answer)
        assert isinstance(feedback, Feedback) and not feedback.passed and said in feedback.message, feedback.message


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (lambda *case: float("inf"), "whole number, got inf"),
        (lambda *case: float("nan"), "whole number, got nan"),
        (lambda *case: 1e300, "0 to num_buckets - 1, got 1000000"),
        (lambda *case: -1, "0 to num_buckets - 1, got -1"),
        (lambda *case: complex(t5_bucket(*case)), "got a complex"),
        (lambda *case: np.complex128(t5_bucket(*case)), "got a complex128"),
        (lambda *case: str(t5_bucket(*case)), "got a str"),
        (lambda *case: [str(t5_bucket(*case))], "got a list of str"),
        (lambda *case: np.array([t5_bucket(*case)] * 2), "shape (2,)"),
    ],
)
def test_check_t5_bucket_says_not_yet_and_names_what_came_back(answer, said):
    feedback = ex07.check_t5_bucket(answer)
    assert isinstance(feedback, Feedback) and not feedback.passed and said in feedback.message, feedback.message


def _t5_off_by_one(rel, bidirectional, num_buckets, max_distance, *, exact=0, far=0, cap=-1, ratio=None):
    """t5_bucket with one boundary moved: max_exact by `exact`, max_distance by `far`, the cap by `cap + 1`."""
    half = num_buckets // 2 if bidirectional else num_buckets
    upper = half if bidirectional and rel > 0 else 0
    n = abs(rel) if bidirectional else max(-rel, 0)
    max_exact = half // 2 + exact
    if n < max_exact:
        return upper + n
    share = n // max_exact if ratio == "floor" else n / max_exact
    large = max_exact + int(math.log(share) / math.log((max_distance + far) / max_exact) * (half - max_exact))
    return upper + min(large, half + cap)


@pytest.mark.parametrize(
    "moved",
    [{"exact": -1}, {"exact": 1}, {"far": -1}, {"far": 1}, {"cap": 0}, {"cap": -2}, {"ratio": "floor"}],
    ids=[
        "max_exact-1",
        "max_exact+1",
        "max_distance-1",
        "max_distance+1",
        "no -1 in the cap",
        "cap -2",
        "n // max_exact",
    ],
)
def test_check_t5_bucket_refuses_answers_off_by_one_at_a_boundary(moved):
    feedback = ex07.check_t5_bucket(lambda *case: _t5_off_by_one(*case, **moved))
    assert not feedback.passed and "Correct" not in str(feedback), feedback


def test_check_t5_bucket_tries_both_sides_of_every_boundary():
    distances = {}  # (bidirectional, num_buckets, max_distance) -> the distances tried, either direction
    for rel, *setting in ex07._T5_CASES:
        distances.setdefault(tuple(setting), set()).add(abs(rel) if setting[0] else -rel)
    assert len(distances) == 5 and len(set(ex07._T5_CASES)) == len(ex07._T5_CASES)
    for (bidirectional, num_buckets, max_distance), tried in distances.items():
        max_exact = (num_buckets // 2 if bidirectional else num_buckets) // 2
        assert {max_exact - 1, max_exact, max_distance} <= tried  # the last exact distance, the first log one
        assert {max_distance - 1, max_distance + 1} & tried  # and a neighbour of max_distance


@pytest.mark.parametrize(
    "answer",
    [
        lambda *case: t5_bucket(*case[:3], 128),  # max_distance hard-coded
        lambda rel, b, nb, md: t5_bucket(rel, b, 32 if b else nb, md),  # num_buckets hard-coded, bidirectional
        lambda rel, b, nb, md: t5_bucket(rel, True, nb, md),  # bidirectional hard-coded
        lambda rel, b, nb, md: t5_bucket(rel, b, md, nb) if md < 2**31 else 0,  # settings read in the wrong order
    ],
    ids=["max_distance 128", "num_buckets 32", "bidirectional", "wrong order"],
)
def test_check_t5_bucket_refuses_settings_hard_coded_or_swapped(answer):
    feedback = ex07.check_t5_bucket(answer)
    assert not feedback.passed and "Correct" not in str(feedback), feedback


@pytest.mark.parametrize(
    "answer",
    [
        lambda n: alibi_slopes(n) if n in (12, 8) else np.ones(n),  # right only for the notebook's sizes
        lambda n: alibi_slopes(n) if n != _lower(n) else alibi_slopes(max(n // 2, 1)).repeat(2)[:n],
        lambda n: np.array(
            _power_of_two(2 ** math.ceil(math.log2(n)) // 2 or 1) + _power_of_two(2 ** math.ceil(math.log2(n)))[0::2]
        )[:n],
        lambda n: alibi_slopes(n)[::-1].copy(),  # the right slopes, last head first
    ],
    ids=["hard-coded 12 and 8", "wrong at powers of two", "power of two below via ceil", "reversed"],
)
def test_check_alibi_slopes_refuses_sizes_hard_coded_off_by_one_or_reversed(answer):
    feedback = ex07.check_alibi_slopes(answer)
    assert not feedback.passed and "Correct" not in str(feedback), feedback


@pytest.mark.parametrize(
    "answer",
    [
        lambda x, p, b: rope_rotate_half(x, p, b) if x.shape == (5, 8) else x.copy(),  # right for the first case only
        lambda x, p, b: rope_rotate_half(x, p, b)[::-1].copy(),  # rows in the wrong order
        lambda x, p, b: np.roll(rope_rotate_half(x, p, b), x.shape[1] // 2, axis=1),  # the halves swapped
        lambda x, p, b: rope_rotate_half(x, p[::-1], b),  # positions read backwards
    ],
    ids=["hard-coded first case", "rows reversed", "halves swapped", "positions reversed"],
)
def test_check_rope_half_refuses_sizes_hard_coded_or_the_wrong_order(answer):
    feedback = ex07.check_rope_half(answer)
    assert not feedback.passed and "Correct" not in str(feedback), feedback
