"""Notebook 09's graders (pe_lib.ch09_wild_exercises): right answers pass, the mistakes learners make do not.

Each class of grader failure the course's review found has a test here: tolerances (a faithful float32 port
passes, a half-precision answer does not slip through), an infinite or scalar return, a hard-coded size or
base, off-by-one at the boundaries, wrong order, strings and complex numbers, and hints that come question
first, formula last, with no answer before them.
"""

import numpy as np
import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

import pe_lib
from pe_lib import ch09_wild_exercises as ex09
from pe_lib import precision
from pe_lib.grading import Feedback

# --- the worked solutions, as the solutions notebook writes them -----------------------------


def ported_rope(x, positions, config):
    d = config["hidden_size"] // config["num_attention_heads"]
    base = config.get("rotary_emb_base", 10000.0)
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    angles = np.outer(positions, inv_freq)
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def fixed_rope(x, positions, config):
    d = config["hidden_size"] // config["num_attention_heads"]
    base = config["rope_theta"]
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    angles = np.outer(positions, inv_freq)
    cos, sin = np.cos(angles), np.sin(angles)
    first, second = x[:, : d // 2], x[:, d // 2 :]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1).astype(x.dtype)


def transformers_port(x, positions, config):
    """transformers' own LlamaRotaryEmbedding and apply_rotary_pos_emb, in float32: what a faithful port computes."""
    llama = LlamaConfig(
        hidden_size=config["hidden_size"],
        num_attention_heads=config["num_attention_heads"],
        max_position_embeddings=config["max_position_embeddings"],
        rope_parameters={"rope_type": "default", "rope_theta": config["rope_theta"]},
    )
    rotary = LlamaRotaryEmbedding(llama)
    q = torch.as_tensor(np.asarray(x, dtype=np.float32))[None, None]
    cos, sin = rotary(q, torch.as_tensor(positions)[None])
    turned, _ = apply_rotary_pos_emb(q, q, cos, sin)
    return turned[0, 0].numpy()


def bf16_position(p):
    if p < 256:
        return p
    spacing = 2 ** (p.bit_length() - 8)
    q, r = divmod(p, spacing)
    if 2 * r > spacing or (2 * r == spacing and q % 2 == 1):
        q += 1
    return q * spacing


# --- exercise 2: the RoPE port ------------------------------------------------------------------------


def _theta(config, d):
    return config["rope_theta"] ** (-np.arange(0, d, 2) / d)


def _half(x, angles):
    return ex09._half(x, angles)


def _float32_angles(x, positions, config):
    d = x.shape[-1]
    inv_freq = (1.0 / config["rope_theta"] ** (np.arange(0, d, 2) / d)).astype(np.float32)
    angles = np.outer(np.asarray(positions, np.float32), inv_freq).astype(np.float32).astype(np.float64)
    return _half(x, angles).astype(x.dtype)


def _bfloat16_angles(x, positions, config):
    theta = torch.tensor(_theta(config, x.shape[-1])).bfloat16()
    angles = (torch.tensor(positions).bfloat16()[:, None] * theta).double().numpy()
    return _half(x, angles)


@pytest.mark.parametrize(
    "answer",
    [
        fixed_rope,
        # float32 throughout, given back in x's dtype: off by up to ~1e-3 at position 16,383, and right
        lambda x, p, c: transformers_port(x, p, c).astype(x.dtype),
        _float32_angles,
        lambda x, p, c: pe_lib.apply_rope(x, p, base=c["rope_theta"], layout="half"),
        lambda x, p, c: torch.from_numpy(fixed_rope(x, p, c)),
        lambda x, p, c: torch.from_numpy(fixed_rope(x, p, c)).to_sparse(),  # the same numbers, stored sparsely
    ],
)
def test_check_rope_fix_accepts_right_answers(answer):
    feedback = ex09.check_rope_fix(answer)
    assert feedback.passed, feedback


def test_the_float32_port_is_off_by_more_than_a_float64_tolerance_and_still_passes():
    x, positions, config = ex09._rope_cases()[1]
    reference = pe_lib.apply_rope(x, positions, base=config["rope_theta"], layout="half")
    off = np.abs(transformers_port(x, positions, config) - reference).max()
    assert 1e-5 < off <= ex09.rope_tolerance(x, positions, config["rope_theta"])


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (ported_rope, "equals ported_rope's"),
        (lambda x, p, c: ported_rope(x, p, {**c, "rotary_emb_base": 500000.0}), "rope_theta 1e+06"),  # hard-coded
        (lambda x, p, c: _half(x, np.outer(p + 1, _theta(c, x.shape[-1]))), "one position further"),
        (lambda x, p, c: _half(x, np.outer(-p, _theta(c, x.shape[-1]))), "wrong way"),
        (lambda x, p, c: pe_lib.apply_rope(x, p, base=c["rope_theta"], layout="interleaved"), "(2i, 2i + 1)"),
        (lambda x, p, c: fixed_rope(x, np.arange(len(p)), c), "ignores the positions"),
        (lambda x, p, c: x.copy(), "unchanged"),
        (_bfloat16_angles, "right at positions"),
        (lambda x, p, c: fixed_rope(x, p, c) * 1.5, "differs from the model's"),
        (lambda x, p, c: fixed_rope(x, p, c).astype(np.float64), "float32, you return a NumPy array of dtype float64"),
        # x's dtype both ways (issue 28): float32 for a float64 x, and a list (of float64 numbers) for a float32 x
        (transformers_port, "x is float64, you return a NumPy array of dtype float32"),
        (lambda x, p, c: fixed_rope(x, p, c).astype(np.float32), "float64, you return a NumPy array of dtype float32"),
        (lambda x, p, c: torch.from_numpy(fixed_rope(x, p, c)).float(), "you return a Tensor of dtype torch.float32"),
        (lambda x, p, c: fixed_rope(x, p, c).tolist(), "x is float32, you return a list of float"),
        (lambda x, p, c: torch.from_numpy(fixed_rope(x, p, c).astype(np.float64)), "dtype torch.float64"),
        (lambda x, p, c: fixed_rope(x, p, c)[:, :-1], "shape"),
        (lambda x, p, c: "rotated", "got a str"),
        (lambda x, p, c: fixed_rope(x, p, c).astype(np.complex128), "complex numbers (dtype complex128)"),
        (lambda x, p, c: torch.from_numpy(fixed_rope(x, p, c)).bfloat16(), "torch.bfloat16"),
        (lambda x, p, c: np.full(x.shape, np.inf), "inf or nan"),
        (lambda x, p, c: 1.0, "got shape ()"),
        (lambda x, p, c: fixed_rope(x[:, :128], p, {**c, "hidden_size": 128 * c["num_attention_heads"]}), "shape"),
    ],
)  # fmt: skip
def test_check_rope_fix_never_says_correct_to_a_mistake(answer, symptom):
    feedback = ex09.check_rope_fix(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ex09.check_rope_fix(answer, hint=3).hints) == 3


def test_a_hard_coded_head_size_fails():
    def head_128(x, positions, config):
        return fixed_rope(x, positions, {**config, "hidden_size": 128, "num_attention_heads": 1})

    feedback = ex09.check_rope_fix(head_128)
    assert not feedback.passed and "Correct" not in str(feedback)


def test_check_rope_fix_names_an_input_changed_in_place_and_a_forgotten_return():
    def in_place(x, positions, config):
        x[:] = fixed_rope(x, positions, config)
        return x

    def config_changed(x, positions, config):
        config["rope_theta"] = 1.0
        return fixed_rope(x, positions, {**config, "rope_theta": 500000.0})

    assert "in place" in ex09.check_rope_fix(in_place).message
    assert "forget the `return`" in ex09.check_rope_fix(lambda x, p, c: None).message
    assert not ex09.check_rope_fix(config_changed).passed


def _port_reading(key):
    def port(x, positions, config):  # fixes the port by writing the base where it looks: the caller's config changes
        config[key] = config["rope_theta"]
        return ported_rope(x, positions, config).astype(x.dtype)

    return port


def _pops_the_base(x, positions, config):
    base = config.pop("rope_theta")
    return fixed_rope(x, positions, {**config, "rope_theta": base})


def _renames_the_type(x, positions, config):
    config["model_type"] = "gpt_neox"
    return fixed_rope(x, positions, config)


@pytest.mark.parametrize(
    ("answer", "change"),
    [
        (_port_reading("rotary_emb_base"), "key 'rotary_emb_base' added"),
        (_pops_the_base, "key 'rope_theta' removed"),
        (_renames_the_type, "key 'model_type' changed from 'llama' to 'gpt_neox'"),
    ],
)
def test_check_rope_fix_names_a_config_dict_changed_in_place(answer, change):
    # right rotations, but the caller's config is no longer the model's (issue 28: the grader never saw it)
    feedback = ex09.check_rope_fix(answer)
    assert not feedback.passed and "changed its input in place (argument 3, a dict" in feedback.message
    assert change in feedback.message and "dict(config)" in feedback.message, feedback.message
    assert ex09.check_rope_fix(lambda x, p, c: _port_reading("rotary_emb_base")(x, p, dict(c))).passed


def test_the_rope_hints_come_question_first_formula_last_and_the_verdict_gives_nothing_away():
    for level in (1, 2, 3):
        feedback = ex09.check_rope_fix(ported_rope, hint=level)
        assert feedback.shown == level and str(feedback).count("Hint ") == level
    first, second, last = ex09.check_rope_fix(ported_rope, hint=3).hints
    assert first.rstrip().endswith("?") and "rope_theta" not in first and "rotary_emb_base" not in first
    assert "rope_theta" not in second  # the key is named in the formula tier only
    code = [line for line in last.splitlines() if line.startswith("    ")]
    namespace = {"np": np}
    exec("\n".join(["def written(x, positions, config):", *code]), namespace)
    assert ex09.check_rope_fix(namespace["written"]).passed
    text = str(ex09.check_rope_fix(ported_rope))
    assert "rope_theta" not in text and "rotary_emb_base" not in text and "10,000" not in text
    assert "500000" not in text and "5e+05" not in text  # the notebook's case does not name the model's base


# --- exercise 1: bfloat16 positions ---------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        bf16_position,
        lambda p: float(bf16_position(p)),
        lambda p: torch.tensor(float(p)).bfloat16(),
        lambda p: np.int64(bf16_position(p)),
        lambda p: np.array([bf16_position(p)], dtype=np.float32),
        lambda p: precision.round_to([p], "bfloat16")[0],
    ],
)
def test_check_bf16_position_accepts_the_rounding(answer):
    feedback = ex09.check_bf16_position(answer)
    assert feedback.passed, feedback


@pytest.mark.parametrize(
    ("answer", "symptom"),
    [
        (lambda p: p, "unchanged"),
        (lambda p: ex09._rounded(p, 8, "down"), "rounding down"),
        (lambda p: ex09._rounded(p, 8, "up"), "round half up"),
        (lambda p: ex09._rounded(p, 11, "even"), "float16"),
        (lambda p: ex09._rounded(p, 7, "even"), "7 significant bits"),
        (lambda p: ex09._rounded(p, 9, "even"), "9 significant bits"),
        (lambda p: 0, "position 1:"),
        (lambda p: [p, p], "one number"),
        (lambda p: bf16_position(p) + (p == 100000), "position 100,000"),
        (lambda p: float("inf"), "you return inf"),
        (lambda p: str(bf16_position(p)), "got a str"),
        (lambda p: complex(bf16_position(p)), "got a complex"),
        (lambda p: p if p < 512 else bf16_position(p), "position 257"),  # exact up to the wrong power of two
        (lambda p: bf16_position(p - 1) if p >= 256 else p, "position 256"),  # off by one
        (lambda p: bf16_position(p) if p < 1024 else bf16_position(p + 1), "position 1,028"),  # a boundary
        (lambda p: p if p < 256 else 2 * round(p / 2), "position 514"),  # one spacing hard-coded
    ],
)
def test_check_bf16_position_never_says_correct_to_a_mistake(answer, symptom):
    feedback = ex09.check_bf16_position(answer)
    assert not feedback.passed and "Correct" not in str(feedback)
    assert symptom in feedback.message, feedback.message
    assert len(ex09.check_bf16_position(answer, hint=2).hints) == 3


def test_the_bf16_hints_come_question_first_and_the_formula_tier_is_a_right_answer():
    first, _, last = ex09.check_bf16_position(lambda p: p, hint=3).hints
    assert first.rstrip().endswith("?") and "divmod" not in first
    code = [line for line in last.splitlines() if line.startswith("    ")]
    namespace = {}
    exec("\n".join(["def written(p):", *code]), namespace)
    assert ex09.check_bf16_position(namespace["written"]).passed
    assert all(namespace["written"](p) == precision.round_to([p], "bfloat16")[0] for p in range(0, 70_000, 13))
    assert "divmod" not in str(ex09.check_bf16_position(lambda p: p))


@pytest.mark.parametrize("checker", [ex09.check_rope_fix, ex09.check_bf16_position])
def test_a_bad_hint_is_refused(checker):
    with pytest.raises(TypeError):
        checker(lambda *args: None, hint=True)
    with pytest.raises(ValueError, match="hint"):
        checker(lambda *args: None, hint=4)
    assert isinstance(checker(lambda *args: None), Feedback)


def test_the_tolerance_follows_the_case_and_no_mistake_fits_inside_it():
    for x, positions, config in ex09._rope_cases():
        tolerance = ex09.rope_tolerance(x, positions, config["rope_theta"])
        assert 1e-6 < tolerance < 3e-3  # from float32 rounding at small positions to a float32 port at 16,383
        d = x.shape[-1]
        for _, candidate, _ in ex09._rope_mistakes(x, positions, config["rope_theta"], d):
            expected = pe_lib.apply_rope(x, positions, base=config["rope_theta"], layout="half")
            assert np.abs(candidate - expected).max() > 30 * tolerance
