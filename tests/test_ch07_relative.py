"""Notebook 07 (relative positions): its figures, explorers and exercise checkers."""

import math

import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import ch07_relative as ch07
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


# --- figures -------------------------------------------------------------------------------


def test_rope_wavelengths_marks_the_pairs_that_never_turn_once():
    fig = ch07.rope_wavelengths(128, base=1e4, context=4096)
    ax = fig.axes[0]
    heights = np.array([bar.get_height() for bar in ax.patches])
    assert np.allclose(np.sort(heights), np.sort(2 * np.pi / pe_lib.rope_frequencies(128)))
    red = [bar for bar in ax.patches if bar.get_facecolor() == ax.patches[-1].get_facecolor()]
    assert len(red) == 18 and all(bar.get_height() > 4096 for bar in red)
    assert "18 of 64" in " ".join(text.get_text() for text in ax.get_legend().get_texts())
    assert ax.get_yscale() == "log" and ax.get_xlabel() and ax.get_ylabel() and ax.get_title()


def test_rope_wavelengths_follows_base_and_context():
    ax = ch07.rope_wavelengths(64, base=100.0, context=10).axes[0]
    expected = int((2 * np.pi / pe_lib.rope_frequencies(64, base=100.0) > 10).sum())
    assert f"{expected} of 32" in " ".join(text.get_text() for text in ax.get_legend().get_texts())


def test_layout_pairs_labels_each_feature_with_its_pair():
    ax = ch07.layout_pairs(8).axes[0]
    labels = [text.get_text() for text in ax.texts]
    assert labels[:8] == [f"$\\theta_{{{i}}}$" for i in (0, 0, 1, 1, 2, 2, 3, 3)]  # interleaved: neighbours
    assert labels[8:] == [f"$\\theta_{{{i}}}$" for i in (0, 1, 2, 3, 0, 1, 2, 3)]  # half: i and i + d/2
    assert [t.get_text() for t in ax.get_yticklabels()] == ["interleaved", "half"]
    assert not ch07.layout_pairs(64).axes[0].texts  # too many features to label: colours only


def test_t5_buckets_draws_the_library_buckets_both_ways():
    ax = ch07.t5_buckets(100, num_buckets=16, max_distance=64).axes[0]
    offsets = np.arange(-100, 101)
    both, causal = ax.lines[:2]
    assert np.array_equal(both.get_ydata(), pe_lib.t5_relative_bucket(offsets, num_buckets=16, max_distance=64))
    expected = pe_lib.t5_relative_bucket(offsets, bidirectional=False, num_buckets=16, max_distance=64)
    assert np.array_equal(causal.get_ydata(), expected)
    assert "16 buckets" in ax.get_title() and "|offset| < 4" in ax.get_legend().get_texts()[-1].get_text()


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [
        (lambda: ch07.layout_pairs(7), ValueError, ["head_dim", "even", "7"]),
        (lambda: ch07.layout_pairs(8.0), TypeError, ["head_dim", "8.0"]),
        (lambda: ch07.rope_wavelengths(128, context=0), ValueError, ["context", "0"]),
        (lambda: ch07.rope_wavelengths(127), ValueError, ["head_dim", "even"]),
        (lambda: ch07.t5_buckets(-5), ValueError, ["max_offset", "-5"]),
        (lambda: ch07.MethodsExplorer(base=3.0), ValueError, ["base", "3.0", "10000.0"]),
        (lambda: ch07.MethodsExplorer(buckets=12), ValueError, ["buckets", "12"]),
        (lambda: ch07.MethodsExplorer(causal="yes"), TypeError, ["causal", "'yes'", "True or False"]),
        (lambda: ch07.ALiBiExplorer(num_heads=5), ValueError, ["num_heads", "5", "12"]),
        (lambda: ch07.ALiBiExplorer(distance=3), ValueError, ["distance", "3", "1024"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, said):
    with pytest.raises(error) as raised:
        call()
    assert all(word in str(raised.value) for word in said), str(raised.value)


# --- explorers -----------------------------------------------------------------------------


def test_methods_explorer_curves_are_the_three_methods():
    explorer = ch07.MethodsExplorer()
    explorer.update(base=1e4, head_dim=64, slope=2.0**-4, buckets=32, max_distance=128, causal=False)
    offsets = explorer.offsets
    theta = pe_lib.rope_frequencies(64)
    assert np.allclose(explorer.rope, np.cos(np.multiply.outer(offsets, theta)).mean(axis=1))
    assert explorer.half_width == 28  # notebook 04's half-width for d_model 64, base 1e4
    assert np.allclose(explorer.alibi, -np.abs(offsets) / 16)
    assert np.array_equal(explorer.buckets, pe_lib.t5_relative_bucket(offsets))
    assert explorer.last_from == 91
    titles = [title.get_text() for title in explorer._titles]
    assert "from |Δ| = 28" in titles[0] and "|Δ| = 160" in titles[1] and "|Δ| < 8, last bucket from 91" in titles[2]


def test_methods_explorer_causal_masks_the_future_and_gives_t5_all_buckets():
    explorer = ch07.MethodsExplorer()
    explorer.update(causal=True, buckets=32)
    future = explorer.offsets > 0
    for values in (explorer.rope, explorer.alibi, explorer.buckets):
        assert np.all(np.isnan(values[future])) and not np.any(np.isnan(values[~future]))
    past = pe_lib.t5_relative_bucket(explorer.offsets[~future], bidirectional=False)
    assert np.array_equal(explorer.buckets[~future], past) and explorer.last_from == 113
    assert explorer.half_width == 28  # read on the past side, which the mask keeps
    assert all(span.get_visible() for span in explorer._future)


def test_methods_explorer_reacts_to_each_control():
    explorer = ch07.MethodsExplorer()
    frames = {explorer.update()}
    explorer.update(base=5e5)
    assert explorer.half_width > 28
    frames.add(explorer.image.value)
    for values in ({"head_dim": 256}, {"slope": 0.5}, {"buckets": 8}, {"max_distance": 1024}, {"causal": True}):
        frames.add(explorer.update(**values))
    assert len(frames) == 7
    assert explorer.buckets[~np.isnan(explorer.buckets)].max() == 7  # causal, 8 buckets
    assert explorer._axes[2].get_ylim() == (-1, 8)


def test_alibi_explorer_shares_are_the_softmax_of_the_bias():
    explorer = ch07.ALiBiExplorer(num_heads=12, distance=64)
    assert np.allclose(explorer.slopes, pe_lib.alibi_slopes(12))
    last_row = pe_lib.alibi_bias(explorer.LENGTH, 12)[:, -1, :]  # the last query: keys at distances 2047 .. 0
    weights = pe_lib.softmax(last_row)[:, ::-1]  # by distance 0 .. 2047
    assert np.allclose(explorer.share_beyond, weights[:, 65:].sum(axis=1))
    kept = int((explorer.share_beyond > 0.01).sum())
    assert explorer._title.get_text() == f"beyond 64: {kept} of 12 heads keep > 1%"


def test_alibi_explorer_hides_the_heads_it_does_not_have():
    explorer = ch07.ALiBiExplorer()
    for num_heads in (2, 32, 6):
        explorer.update(num_heads=num_heads)
        assert sum(line.get_visible() for line in explorer._lines) == num_heads
        assert sum(bar.get_visible() for bar in explorer._bars) == num_heads
        assert explorer._right.get_xlim() == (0.4, num_heads + 0.6)
    line = explorer._lines[5]
    assert np.allclose(line.get_ydata(), -pe_lib.alibi_slopes(6)[5] * np.arange(1, explorer.LENGTH))


def test_alibi_explorer_far_distances_leave_only_the_flat_heads():
    explorer = ch07.ALiBiExplorer(num_heads=8, distance=1)
    near = explorer.share_beyond.copy()
    explorer.update(distance=1024)
    assert np.all(explorer.share_beyond < near)
    assert explorer.share_beyond[0] == 0 or explorer.share_beyond[0] < 1e-100
    assert 0.01 < explorer.share_beyond[-1] < 0.05  # slope 1/256: e^-4 of it is left at 1024
    assert explorer._title.get_text() == "beyond 1024: 1 of 8 heads keep > 1%"


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
    feedback = ch07.check_rope_half(answer)
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
        (lambda x, p, b: "rotated", "got str"),
        (lambda x, p, b: rope_rotate_half(x, p, b) * 1.5, "differs from RoPE's"),
    ],
)  # fmt: skip
def test_check_rope_half_names_the_mistake(answer, symptom):
    feedback = ch07.check_rope_half(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ch07.check_rope_half(answer, hint=3).hints) == 3


def _per_pair_cos_only(x, positions, base=10000.0):  # cos and sin of shape (n, d/2): they do not broadcast
    angles = _pair_angles(positions, x.shape[-1], base)
    d = x.shape[-1]
    return x * np.cos(angles) + np.concatenate([-x[:, d // 2 :], x[:, : d // 2]], -1) * np.sin(angles)


def test_check_rope_half_explains_cos_and_sin_that_do_not_broadcast():
    feedback = ch07.check_rope_half(_per_pair_cos_only, hint=2)
    assert not feedback.passed and "broadcast" in feedback.message and "(5, 8)" in feedback.message
    assert "columns" in feedback.hints[0] and "once for the first half" in feedback.hints[1]


def test_check_rope_half_names_an_input_changed_in_place():
    def turns_in_place(x, positions, base=10000.0):
        x[:] = rope_rotate_half(x, positions, base)
        return x

    feedback = ch07.check_rope_half(turns_in_place)
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
    feedback = ch07.check_alibi_slopes(answer)
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
    feedback = ch07.check_alibi_slopes(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ch07.check_alibi_slopes(answer, hint=3).hints) == 3


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
    feedback = ch07.check_t5_bucket(answer)
    assert feedback.passed, feedback


@pytest.mark.parametrize("slip", list(ch07._T5_SLIPS))
def test_check_t5_bucket_names_each_slip(slip):
    def answer(*case):
        return ch07._t5_variant(*case, slip=slip)

    feedback = ch07.check_t5_bucket(answer)
    symptom, hints = ch07._T5_SLIPS[slip]
    assert not feedback.passed and feedback.message == symptom
    assert feedback.shown == 0 and feedback.hints[0] == hints[0]  # its own tier first, then the grader's


def test_every_t5_slip_is_wrong_somewhere_and_unlike_the_others():
    answers = {slip: [ch07._t5_variant(*case, slip=slip) for case in ch07._T5_CASES] for slip in ch07._T5_SLIPS}
    right = [t5_bucket(*case) for case in ch07._T5_CASES]
    assert [ch07._t5_variant(*case) for case in ch07._T5_CASES] == right
    assert all(answer != right for answer in answers.values())
    assert len({tuple(answer) for answer in answers.values()}) == len(answers)


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda *args: 0, "bucket 0 for every relative position"),
        (lambda *args: 3, "bucket 3 for every"),
        (lambda rel, b, nb, md: t5_bucket(rel, b, nb, md) + 0.5, "whole number"),
        (lambda rel, b, nb, md: [t5_bucket(rel, b, nb, md)] * 2, "one bucket"),
        (lambda rel, b, nb, md: "bucket", "got str"),
        (lambda rel, b, nb, md: t5_bucket(rel, b, 32, 128), "num_buckets=16"),
        (lambda rel, b, nb, md: t5_bucket(abs(rel), b, nb, md), "expected bucket 3, got 19"),
    ],
)
def test_check_t5_bucket_says_what_is_wrong(answer, symptom):
    feedback = ch07.check_t5_bucket(answer)
    assert not feedback.passed and symptom in feedback.message, feedback.message


# --- every grader: mistakes around the maths, and the hint tiers ------------------------------

GRADERS = {
    "rope": (ch07.check_rope_half, rope_rotate_half, "x, positions, base=10000.0"),
    "alibi": (ch07.check_alibi_slopes, alibi_slopes, "num_heads"),
    "t5": (ch07.check_t5_bucket, t5_bucket, "relative_position, bidirectional=True, num_buckets=32, max_distance=128"),
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
