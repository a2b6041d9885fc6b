"""Notebook 09 (positions in the wild): pe_lib.models_table, pe_lib.precision, and ch09's figures, explorer, graders."""

import math

import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import ch09_wild as ch09
from pe_lib import models_table, precision
from pe_lib.grading import Feedback

# --- the worked solutions, as the solutions notebook writes them -----------------------------


def fixed_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = 1.0 / base ** (2 * np.arange(d // 2) / d)
    angles = np.outer(positions, inv_freq)
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2] = even * cos - odd * sin
    out[:, 1::2] = even * sin + odd * cos
    return out


def buggy_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    angles = np.outer(positions, 1.0 / base ** (np.arange(d // 2) / d))
    return ch09._interleaved(x, angles).astype(x.dtype)


def bf16_position(p):
    if p < 256:
        return p
    spacing = 2 ** (p.bit_length() - 8)
    q, r = divmod(p, spacing)
    if 2 * r > spacing or (2 * r == spacing and q % 2 == 1):
        q += 1
    return q * spacing


# --- models_table ----------------------------------------------------------------------------------


def test_length_scales_of_each_method():
    labels, lengths = models_table.length_scales(models_table.scheme("Llama 2 7B"))
    assert len(labels) == 64 and np.allclose(lengths, 2 * np.pi / pe_lib.rope_frequencies(128))
    _, reach = models_table.length_scales(models_table.scheme("MPT-7B"))
    assert np.allclose(reach, 10 / pe_lib.alibi_slopes(32))
    _, starts = models_table.length_scales(models_table.scheme("T5 base"))
    assert len(starts) == 16 and starts[-1] == 91 and starts[8] == 8
    _, rows = models_table.length_scales(models_table.scheme("RoBERTa base"))
    assert rows.tolist() == [514, 512]
    _, gpt_j = models_table.length_scales(models_table.scheme("GPT-J 6B"))
    assert np.allclose(gpt_j, 2 * np.pi / pe_lib.rope_frequencies(64))  # rotary_dim, not head_dim


def test_summaries_are_computed_from_the_table():
    assert models_table.summary(models_table.scheme("Llama 2 7B")).startswith("18 of 64")
    assert models_table.summary(models_table.scheme("BLOOM 176B")).startswith("3 of 112")
    assert "91" in models_table.summary(models_table.scheme("T5 base"))
    assert "512 tokens" in models_table.summary(models_table.scheme("RoBERTa base"))


def test_the_permutation_turns_interleaved_weights_into_half_layout_ones():
    rng = np.random.default_rng(1)
    w, x = rng.normal(size=(2 * 16, 8)), rng.normal(size=(5, 8))
    positions = np.arange(5) * 313
    turned = pe_lib.apply_rope((x @ w.T).reshape(5, 2, 16).transpose(1, 0, 2), positions, layout="interleaved")
    converted = models_table.permute_for_half_layout(w, 2)
    half = pe_lib.apply_rope((x @ converted.T).reshape(5, 2, 16).transpose(1, 0, 2), positions, layout="half")
    assert np.allclose(half, turned[..., models_table.llama_permutation(16)])
    assert not np.shares_memory(converted, w)


def test_roberta_position_ids_start_after_the_padding_row():
    ids = models_table.roberta_position_ids(np.array([0, 7, 7, 2, 1, 1]))
    assert ids.tolist() == [2, 3, 4, 5, 1, 1]
    assert models_table.roberta_position_ids(torch.tensor([5, 5]), padding_idx=0).tolist() == [1, 2]


# --- precision ------------------------------------------------------------------------------------


def test_exact_integers_and_collisions():
    assert [precision.significant_bits(d) for d in ("bfloat16", "float16", "float32")] == [8, 11, 24]
    assert precision.largest_exact_integer("bfloat16") == 256 and precision.largest_exact_integer("float16") == 2048
    assert precision.colliding_positions(257, "bfloat16").tolist() == [256, 257]
    assert precision.colliding_positions(100, "bfloat16").tolist() == [100]


def test_angle_errors_of_each_recipe():
    positions = np.arange(0, 5000, dtype=float)
    angle = precision.rope_angle_error(positions, recipe="angle")
    assert precision.first_position_reaching(positions, angle, math.pi) == 1028
    inv = precision.rope_angle_error(positions, recipe="inv_freq")
    assert precision.first_position_reaching(positions, inv, math.pi) == 2569
    assert precision.rope_angle_error(positions, recipe="float32").max() < 1e-3
    assert precision.cached_table_error(positions).max() < 0.004
    assert precision.first_position_reaching(positions, inv, 1e9) is None


# --- figures ----------------------------------------------------------------------------------------


def test_figures_draw_what_they_say():
    ax = ch09.scheme_overview().axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == models_table.model_names()
    result = ch09.layout_forensics([0, 4, 256], samples=300)
    assert result["as_is"][0] > 1 - 1e-12 and result["as_is"][2] < result["as_is"][1] < 1
    assert np.all(result["worst_permuted"] < 1e-9)
    ax = ch09.layout_drift(result).axes[0]
    assert np.allclose(ax.lines[1].get_ydata(), result["as_is"]) and ax.get_xscale() == "log"
    ax = ch09.precision_curves(np.array([1.0, 10.0, 100.0, 1000.0])).axes[0]
    assert len(ax.lines) == 6 and ax.lines[-1].get_ydata()[0] == pytest.approx(np.pi)
    ax = ch09.learned_ends(np.eye(4) + 1).axes[0]
    assert len(ax.lines[0].get_ydata()) == 4 and len(ax.lines[1].get_ydata()) == 3


# --- the explorer -----------------------------------------------------------------------------------


def test_model_explorer_shows_each_models_scheme():
    explorer = ch09.ModelExplorer()
    assert explorer.entry["name"] == "Llama 2 7B" and explorer.beyond == 18
    assert "18 of 64 pairs" in explorer.readout
    frames = {explorer.image.value}
    explorer.update(run_at=8)
    assert explorer.run_length == 8 * 4096 and "angles never trained" in explorer.readout
    frames.add(explorer.image.value)
    for name in ("BLOOM 176B", "T5 base", "GPT-2", "Llama 3.1 8B"):
        explorer.update(model=name, run_at=1)
        visible = sum(bar.get_visible() for bar in explorer._bars)
        assert visible == len(explorer.lengths)
        frames.add(explorer.image.value)
    assert len(frames) == 6
    explorer.update(model="GPT-2", run_at=2)
    assert "positions 1,024..2,047 have no row" in explorer.readout


@pytest.mark.parametrize(
    ("call", "error", "said"),
    [
        (lambda: ch09.ModelExplorer(model="GPT-5"), ValueError, ["model", "GPT-5"]),
        (lambda: ch09.ModelExplorer(run_at=3), ValueError, ["run_at", "3"]),
        (lambda: models_table.scheme("llama"), ValueError, ["name", "llama"]),
        (lambda: models_table.length_scales({"method": "nope"}), ValueError, ["method", "nope"]),
        (lambda: models_table.llama_permutation(7), ValueError, ["head_dim", "7"]),
        (lambda: models_table.permute_for_half_layout(np.ones((6, 4)), 4), ValueError, ["num_heads=4", "(6, 4)"]),
        (lambda: models_table.roberta_position_ids(np.ones((2, 2), int)), ValueError, ["token_ids", "(2, 2)"]),
        (lambda: precision.round_to([1.0], "float8"), ValueError, ["dtype", "float8"]),
        (lambda: precision.rope_angle_error([1.0], recipe="fast"), ValueError, ["recipe", "fast"]),
        (lambda: precision.colliding_positions(-1, "bfloat16"), ValueError, ["position", "-1"]),
        (lambda: ch09.check_rope_fix(fixed_rope, hint=4), ValueError, ["hint", "4"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, said):
    with pytest.raises(error) as raised:
        call()
    assert all(word in str(raised.value) for word in said), str(raised.value)


# --- exercise 2: the RoPE port ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        fixed_rope,
        lambda x, p, b: pe_lib.apply_rope(x, p, base=b, layout="interleaved"),
        lambda x, p, b: torch.from_numpy(fixed_rope(x, p, b)),
        lambda x, p, b: fixed_rope(x, p, b).tolist(),
    ],
)
def test_check_rope_fix_accepts_the_fix(answer):
    feedback = ch09.check_rope_fix(answer)
    assert feedback.passed, feedback


def _float32_angles(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = (1.0 / base ** (2 * np.arange(d // 2) / d)).astype(np.float32)
    angles = np.outer(np.asarray(positions, np.float32), inv_freq).astype(np.float32)
    return ch09._interleaved(x, angles.astype(np.float64))


def _angles(x, p, b, f):
    return ch09._interleaved(x, np.outer(p, f(np.arange(x.shape[-1] // 2), x.shape[-1], b)))


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (buggy_rope, "bug is still there"),
        (lambda x, p, b: _angles(x, p + 1, b, lambda i, d, b: b ** (-2 * i / d)), "one position further"),
        (lambda x, p, b: ch09._interleaved(x, np.outer(p, b ** (-2 * np.arange(x.shape[-1] // 2) / x.shape[-1])), -1),
         "wrong way"),
        (lambda x, p, b: _angles(x, p, b, lambda i, d, b: b ** (2 * i / d)), "grow with the pair index"),
        (lambda x, p, b: fixed_rope(x, p), "ignored `base`"),
        (lambda x, p, b: pe_lib.apply_rope(x, p, base=b, layout="half"), "half layout"),
        (lambda x, p, b: x.copy(), "unchanged"),
        (_float32_angles, "float32"),
        (lambda x, p, b: fixed_rope(x, p, b) * 1.5, "differs from RoPE's"),
        (lambda x, p, b: fixed_rope(x, p, b)[:, :-1], "shape"),
        (lambda x, p, b: "rotated", "got str"),
        (lambda x, p, b: _angles(x, p, b, lambda i, d, b: b ** (-2 * i / (d - 2))), "differs from RoPE's"),
    ],
)  # fmt: skip
def test_check_rope_fix_never_says_correct_to_a_mistake(answer, symptom):
    feedback = ch09.check_rope_fix(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ch09.check_rope_fix(answer, hint=3).hints) == 3


def test_check_rope_fix_names_an_input_changed_in_place_and_a_forgotten_return():
    def in_place(x, positions, base=10000.0):
        x[:] = fixed_rope(x, positions, base)
        return x

    assert "in place" in ch09.check_rope_fix(in_place).message
    assert "forget the `return`" in ch09.check_rope_fix(lambda x, p, b: None).message


def test_the_rope_formula_tier_is_a_right_answer_and_hints_come_in_order():
    stub = buggy_rope
    for level in (1, 2, 3):
        feedback = ch09.check_rope_fix(stub, hint=level)
        assert feedback.shown == level and str(feedback).count("Hint ") == level
    tier = ch09.check_rope_fix(stub, hint=3).hints[-1]
    code = [line for line in tier.splitlines() if line.startswith("    ")]
    namespace = {"np": np}
    exec("\n".join(["def written(x, positions, base=10000.0):", *code]), namespace)
    assert ch09.check_rope_fix(namespace["written"]).passed
    text = str(ch09.check_rope_fix(stub))
    assert "2 * np.arange" not in text and "-2i/d" not in text  # the verdict does not give the fix away


# --- exercise 1: bfloat16 positions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [bf16_position, lambda p: float(bf16_position(p)), lambda p: torch.tensor(float(p)).bfloat16(), np.int64],
)
def test_check_bf16_position_accepts_the_rounding(answer):
    if answer is np.int64:
        answer = lambda p: np.int64(bf16_position(p))  # noqa: E731
    feedback = ch09.check_bf16_position(answer)
    assert feedback.passed, feedback


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda p: p, "unchanged"),
        (lambda p: ch09._rounded(p, 8, "down"), "rounding down"),
        (lambda p: ch09._rounded(p, 8, "up"), "round half up"),
        (lambda p: ch09._rounded(p, 11, "even"), "float16"),
        (lambda p: ch09._rounded(p, 7, "even"), "7 significant bits"),
        (lambda p: ch09._rounded(p, 9, "even"), "9 significant bits"),
        (lambda p: 0, "position 1:"),
        (lambda p: [p, p], "one number"),
        (lambda p: bf16_position(p) + (p == 100000), "position 100,000"),
    ],
)
def test_check_bf16_position_never_says_correct_to_a_mistake(answer, symptom):
    feedback = ch09.check_bf16_position(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ch09.check_bf16_position(answer, hint=2).hints) == 3


def test_the_bf16_formula_tier_is_a_right_answer():
    tier = ch09.check_bf16_position(lambda p: p, hint=3).hints[-1]
    code = [line for line in tier.splitlines() if line.startswith("    ")]
    namespace = {}
    exec("\n".join(["def written(p):", *code]), namespace)
    assert ch09.check_bf16_position(namespace["written"]).passed
    assert all(namespace["written"](p) == precision.round_to([p], "bfloat16")[0] for p in range(0, 70_000, 13))


@pytest.mark.parametrize("checker", [ch09.check_rope_fix, ch09.check_bf16_position])
def test_a_bad_hint_is_refused(checker):
    with pytest.raises(TypeError):
        checker(lambda *args: None, hint=True)
    assert isinstance(checker(lambda *args: None), Feedback)
