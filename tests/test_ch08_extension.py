"""Notebook 08's chapter module: the angle measures, the base criterion, the figures, the explorer, the graders."""

import math
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.colors import to_hex
from matplotlib.container import BarContainer

import pe_lib
from pe_lib import ch08_extension as ch08
from pe_lib import extrapolation, figures
from pe_lib.colours import figure_problems
from pe_lib.figures import COLOURS

# --- measures, checked against formulas written out here ----------------------------------


def test_angle_ranges_are_the_largest_gap_times_each_frequency():
    theta = pe_lib.rope_frequencies(8, base=1e4)
    trained, tested = ch08.angle_ranges(theta, 16, 64)
    assert np.allclose(trained, [15, 1.5, 0.15, 0.015]) and np.allclose(tested, [63, 6.3, 0.63, 0.063])
    assert ch08.unseen_pairs(theta, 16, 64).tolist() == [False, True, True, True]


def test_position_interpolation_meets_no_new_angle_and_doing_nothing_meets_many():
    theta = pe_lib.rope_frequencies(128, base=1e4)
    assert ch08.unseen_pairs(theta / 4, 4 * 4096, 4 * 4096).sum() == ch08.unseen_pairs(theta, 4096, 4096).sum() == 0
    # PI, in the explorer's terms: the stretched context with theta / s against the trained one with theta
    stretched = (4 * 4096 - 1) * theta / 4
    assert not np.any((4095 * theta < 2 * np.pi) & (stretched > 4096 * theta))
    assert ch08.unseen_pairs(theta, 4096, 16384).sum() == 18


def _first_negative_by_loop(head_dim, base, start, stop):
    theta = [base ** (-2 * i / head_dim) for i in range(head_dim // 2)]
    for m in range(start, stop):
        if sum(math.cos(m * t) for t in theta) < 0:
            return m
    return None


@pytest.mark.parametrize("base, expected", [(1e4, 1707), (5e5, 18438)])
def test_the_base_criterion_reproduces_men_et_al(base, expected):
    assert ch08.first_negative_distance(128, base) == expected
    assert _first_negative_by_loop(128, base, expected - 300, expected + 1) == expected  # nothing earlier nearby
    assert ch08.first_negative_distance(128, base, limit=expected - 1) is None


def test_cos_sums_start_at_the_number_of_pairs():
    assert ch08.cos_sums(64, 1e4, [0])[0] == 32
    with pytest.raises(ValueError, match="limit"):
        ch08.first_negative_distance(128, 1e4, limit=0)


# --- figures -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results():
    return extrapolation.load_results()


def test_sweep_figures_draw_every_variant_with_error_bars(results):
    fig = ch08.sweep_bars(results, "local_max")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(extrapolation.VARIANTS)
    assert len(ax.patches) == len(extrapolation.VARIANTS) * len(extrapolation.METRICS)
    plt.close(fig)
    fig = ch08.accuracy_by_position(results, "shift", variants=("rope", "t5"))
    assert [line.get_label() for line in fig.axes[0].lines] == ["rope", "t5"]
    plt.close(fig)
    fig = ch08.extension_bars(results, "shift", factor=4)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == ["unchanged", "PI", "NTK-aware", "YaRN", "YaRN (paper)", "Llama 3.1"]
    for container in fig.axes[0].containers:  # error bars stop at the accuracy's limits
        if hasattr(container, "errorbar") and container.errorbar is not None:
            for segments in container.errorbar.lines[2]:
                ends = np.concatenate([seg[:, 1] for seg in segments.get_segments()])
                assert ends.min() >= -1e-9 and ends.max() <= 1 + 1e-9
    plt.close(fig)
    with pytest.raises(ValueError, match="task"):
        ch08.sweep_bars(results, "reverse")


def test_angle_figures_have_one_dial_per_pair_and_count_the_new_pairs():
    fig = ch08.pair_angles(pe_lib.rope_frequencies(8), 16, 64)
    red = [[line for line in ax.lines if line.get_label() == "only at test"] for ax in fig.axes]
    assert [len(lines) for lines in red] == [0, 1, 1, 1]  # pair 0 went all the way round in training
    assert len(fig.axes) == 4 and fig.axes[1].get_title().startswith("pair 1")
    plt.close(fig)
    fig = ch08.turns_per_pair(pe_lib.rope_frequencies(128), 4096, 16384)
    assert fig.axes[0].get_title(loc="left").startswith("18 of 64 pairs")
    plt.close(fig)
    fig = ch08.base_criterion(128, bases=(1e4,), limit=3000)
    assert "1707" in fig.axes[0].lines[0].get_label()
    plt.close(fig)


@pytest.mark.parametrize("lecture", [False, True])
def test_figures_keep_the_course_colours_and_pass_the_colour_checks(results, lecture):
    """One colour, one meaning: a variant has its method's colour, every RoPE-only figure RoPE's, new angles red."""
    with plt.rc_context():
        figures.use_style(lecture=lecture)
        rope, problem = to_hex(COLOURS["rope"]), to_hex(COLOURS["problem"])
        drawn = [
            ch08.sweep_bars(results, "shift"),
            ch08.accuracy_by_position(results, "shift"),
            ch08.extension_bars(results, "shift", factor=4),
            ch08.pair_angles(pe_lib.rope_frequencies(8), 16, 64),
            ch08.turns_per_pair(pe_lib.rope_frequencies(128), 4096, 16384),
            ch08.base_criterion(128, bases=(1e4, 5e5, 1e6), limit=30_000),
        ]
        first = next(c for c in drawn[0].axes[0].containers if isinstance(c, BarContainer))  # trained length
        for variant, bar in zip(extrapolation.VARIANTS, first.patches, strict=True):
            assert to_hex(bar.get_facecolor()) == to_hex(ch08.VARIANT_STYLES[variant][0]), variant
        assert to_hex(first.patches[1].get_facecolor()) == to_hex(COLOURS["learned"])
        lines = {line.get_label(): line for line in drawn[1].axes[0].lines}
        assert to_hex(lines["sinusoidal"].get_color()) == to_hex(COLOURS["sinusoidal"])
        assert to_hex(lines["t5"].get_color()) == to_hex(COLOURS["t5"])
        assert {to_hex(bar.get_facecolor()[:3]) for bar in drawn[2].axes[0].patches} == {rope}
        assert {to_hex(line.get_color()) for ax in drawn[3].axes for line in ax.lines} == {rope, problem}
        curves = [line for line in drawn[5].axes[0].lines if line.get_label().startswith("base")]
        assert {to_hex(line.get_color()) for line in curves} == {rope}
        assert len({line.get_linestyle() for line in curves}) == 3
        for fig in drawn:
            assert figure_problems(fig) == []
            plt.close(fig)


# --- the explorer ---------------------------------------------------------------------------


def test_scaling_explorer_counts_untouched_pairs_and_new_angles():
    explorer = ch08.ScalingExplorer()
    try:
        for (method, factor, model), (untouched, new) in {
            ("linear", 8, (1e4, 4096)): (0, 0),
            ("ntk", 8, (1e4, 4096)): (1, 17),
            ("yarn", 8, (1e4, 4096)): (21, 0),
            ("yarn_paper", 8, (1e4, 4096)): (21, 0),
            ("llama3", 8, (5e5, 8192)): (29, 0),
            ("yarn", 1, (1e4, 4096)): (64, 18),  # factor 1: nothing rescaled, the context is L: nothing new
        }.items():
            explorer.update(method=method, factor=factor, model=model)
            assert int(np.sum(explorer.scaled == explorer.theta)) == untouched
            assert explorer.finding().startswith(f"{untouched} of 64 pairs keep their frequency")
            if factor > 1:
                assert int(explorer.new_angles.sum()) == new
            else:
                assert explorer.new_angles.sum() == 0
            new_angles = "no pair meets" if not explorer.new_angles.any() else f"{new} of 64 pairs"
            assert new_angles in explorer.finding() and explorer.finding() in explorer.alt_text()
        explorer.update(method="ntk", factor=8, model=(1e4, 4096))
        assert "θ′/θ is 1 for the fastest pair, 0.12 for the slowest; 17 of 64 pairs (46-62) meet" in explorer.finding()
        marked = explorer._new.get_ydata()  # the red points: the pairs that meet new angles, nothing else
        assert np.array_equal(np.isfinite(marked), explorer.new_angles)
    finally:
        explorer.close()


# --- graders --------------------------------------------------------------------------------


def ntk_base(base, factor, head_dim):
    return base * factor ** (head_dim / (head_dim - 2))


def untouched_pairs(head_dim, base, original_length, beta_fast=32.0):
    """Written from transformers' find_correction_range: every pair up to max(floor(low), 0)."""
    low = head_dim * math.log(original_length / (beta_fast * 2 * math.pi)) / (2 * math.log(base))
    return np.arange(min(max(math.floor(low), 0), head_dim // 2 - 1) + 1)


def papers_untouched_pairs(head_dim, base, original_length, beta_fast=32.0):
    """The paper's rule, r_i >= beta_fast: the same pairs except pair 0 where it turns fewer times."""
    theta = base ** (-np.arange(0, head_dim, 2) / head_dim)
    return np.flatnonzero(original_length * theta / (2 * np.pi) >= beta_fast)


def _verdict(checker, answer, hint=0):
    feedback = checker(answer, hint=hint)
    return feedback, str(feedback)


def test_right_answers_are_correct_in_any_numeric_type():
    assert ch08.check_ntk_base(ntk_base).passed
    assert ch08.check_ntk_base(lambda b, s, d: np.float32(ntk_base(b, s, d))).passed
    assert ch08.check_ntk_base(lambda b, s, d: torch.tensor(ntk_base(b, s, d), dtype=torch.float64)).passed
    assert ch08.check_untouched_pairs(untouched_pairs).passed
    assert ch08.check_untouched_pairs(lambda *args: untouched_pairs(*args).tolist()).passed
    assert ch08.check_untouched_pairs(lambda *args: torch.from_numpy(untouched_pairs(*args))).passed
    assert ch08.check_untouched_pairs(lambda *args: torch.from_numpy(untouched_pairs(*args)).int()).passed
    assert ch08.check_untouched_pairs(lambda *args: untouched_pairs(*args).astype(np.uint8)).passed
    assert ch08.check_untouched_pairs(lambda *args: torch.from_numpy(untouched_pairs(*args)).to_sparse()).passed
    assert ch08.check_ntk_base(lambda b, s, d: torch.tensor([ntk_base(b, s, d)]).to_sparse()).passed


@pytest.mark.parametrize("off", [2e-6, -3e-6, 1e-5, 1.7e-4, -4e-3])
def test_a_near_miss_of_the_ntk_base_is_told_apart_from_the_factor(off):
    # issue 28: "turns 2 times slower, not 2" - the digits shown must differ, and the miss is measured
    feedback = ch08.check_ntk_base(lambda b, s, d: ntk_base(b, s, d) * (1 + off))
    slower = re.search(r"turns (\S+) times slower, not (\S+):", feedback.message)
    assert not feedback.passed and slower and slower[1] != slower[2], feedback.message
    digits = len(slower[1].replace(".", "").lstrip("0"))  # the shown value is the true one to its own digits
    assert float(slower[1]) == pytest.approx(2 * (1 + off) ** (126 / 128), rel=10.0 ** (1 - digits))
    assert f"{abs(off):.1e} of its size off" in feedback.message


NTK_MISTAKES = {
    "times s": (lambda b, s, d: b * s, "multiplied the base by s"),
    "inverted exponent": (lambda b, s, d: b * s ** ((d - 2) / d), "upside down"),
    "divided": (lambda b, s, d: b / s ** (d / (d - 2)), "divided the base"),
    "exponent d/2": (lambda b, s, d: b * s ** (d / 2), "d/2"),
    "squared": (lambda b, s, d: b * s**2, "turns"),
    "stub": (lambda b, s, d: b, "times slower"),
    "returns a string": (lambda b, s, d: "82684", "one number"),
    "returns an array": (lambda b, s, d: np.array([1.0, 2.0]), "one number"),
    "base 0": (lambda b, s, d: 0.0, "not a base"),
    "rounded to an integer": (lambda b, s, d: float(round(ntk_base(b, s, d))), "times slower"),
    "exponent d/(d-1)": (lambda b, s, d: b * s ** (d / (d - 1)), "times slower"),
}


@pytest.mark.parametrize("name", list(NTK_MISTAKES))
def test_ntk_mistakes_are_never_correct_and_get_their_symptom(name):
    answer, symptom = NTK_MISTAKES[name]
    feedback, text = _verdict(ch08.check_ntk_base, answer)
    assert not feedback.passed and symptom in text, text
    assert "d / (d - 2)" not in text and "d/(d - 2)" not in text and "d/(d-2)" not in text


def _forgot_return(base, factor, head_dim):
    base * factor ** (head_dim / (head_dim - 2))


def _printed(base, factor, head_dim):
    print(base * factor ** (head_dim / (head_dim - 2)))


@pytest.mark.parametrize("answer, symptom", [(_forgot_return, "forget the `return`"), (_printed, "printed")])
def test_forgotten_return_and_print(answer, symptom):
    assert symptom in str(ch08.check_ntk_base(answer))
    assert symptom in str(ch08.check_untouched_pairs(lambda *a: print(a) if symptom == "printed" else None))


YARN_MISTAKES = {
    "radians": (lambda d, b, L, f: np.flatnonzero(L * b ** (-np.arange(0, d, 2) / d) >= f), "radians"),
    "interpolated ones": (
        lambda d, b, L, f: np.flatnonzero(L * b ** (-np.arange(0, d, 2) / d) / (2 * np.pi) <= 1),
        "interpolates fully",
    ),
    "wrong way round": (
        lambda d, b, L, f: np.flatnonzero(L * b ** (-np.arange(0, d, 2) / d) / (2 * np.pi) < f),
        "wrong way round",
    ),
    "from 1": (lambda d, b, L, f: untouched_pairs(d, b, L, f) + 1, "start at 1"),
    "the paper's rule": (papers_untouched_pairs, "leaves out pair 0"),
    "descending": (lambda d, b, L, f: untouched_pairs(d, b, L, f)[::-1].copy(), "wrong order"),
    "one too many": (
        lambda d, b, L, f: np.arange(min(untouched_pairs(d, b, L, f)[-1] + 2, d // 2)),
        "one pair too many",
    ),
    "a scalar": (lambda d, b, L, f: 3, "single value"),
    "strings": (lambda d, b, L, f: [str(i) for i in untouched_pairs(d, b, L, f)], "integers"),
    "infinite": (lambda d, b, L, f: np.array([0.0, np.inf]), "pair indices are integers"),
    "a complex array": (lambda d, b, L, f: untouched_pairs(d, b, L, f) + 0j, "integers"),
    "L - 1": (lambda d, b, L, f: untouched_pairs(d, b, L - 1, f), "YaRN"),
    "the stub": (lambda d, b, L, f: np.arange(d // 2), "not the ones"),
    "a mask": (
        lambda d, b, L, f: L * b ** (-np.arange(0, d, 2) / d) / (2 * np.pi) >= f,
        "True/False",
    ),
    "past the end": (lambda d, b, L, f: np.arange(d // 2 + 1), "run from 0"),
    "floats": (lambda d, b, L, f: untouched_pairs(d, b, L, f) + 0.5, "pair indices"),
    "nested": (lambda d, b, L, f: [untouched_pairs(d, b, L, f)], "1-D array"),
    # issue 28: a ragged list crashed the grader; whole numbers as floats passed
    "ragged": (lambda d, b, L, f: [[0, 1], [2]], "rows of different lengths"),
    "numbers and a row": (lambda d, b, L, f: [*untouched_pairs(d, b, L, f).tolist(), [1]], "rows of different"),
    "whole floats": (lambda d, b, L, f: untouched_pairs(d, b, L, f).astype(float), "dtype float64"),
    "a list of floats": (lambda d, b, L, f: [float(i) for i in untouched_pairs(d, b, L, f)], "a list of float"),
    "float tensor": (lambda d, b, L, f: torch.from_numpy(untouched_pairs(d, b, L, f)).float(), "torch.float32"),
    "meta": (lambda d, b, L, f: torch.from_numpy(untouched_pairs(d, b, L, f)).to("meta"), "meta device"),
}


@pytest.mark.parametrize("name", list(YARN_MISTAKES))
def test_yarn_mistakes_are_never_correct_and_get_their_symptom(name):
    answer, symptom = YARN_MISTAKES[name]
    feedback, text = _verdict(ch08.check_untouched_pairs, answer)
    assert not feedback.passed and symptom in text, text
    assert "flatnonzero" not in text and ">= beta_fast" not in text


@pytest.mark.parametrize("checker", [ch08.check_ntk_base, ch08.check_untouched_pairs])
def test_hints_come_in_three_tiers_and_the_last_is_a_right_answer(checker):
    stub = (lambda b, s, d: b) if checker is ch08.check_ntk_base else (lambda d, b, L, f=32.0: np.arange(d // 2))
    texts = [str(checker(stub, hint=k)) for k in range(4)]
    assert "Hint 1/3" not in texts[0] and "Stuck? Run the check again with hint=1" in texts[0]
    for k in range(1, 4):
        assert f"Hint {k}/3" in texts[k] and f"Hint {k + 1}/3" not in texts[k]
    code = [line for line in checker(stub, hint=3).hints[-1].splitlines() if line.startswith("    ")]
    signature = (
        "base, factor, head_dim" if checker is ch08.check_ntk_base else "head_dim, base, original_length, beta_fast"
    )
    namespace = {"np": np, "math": math}
    exec("\n".join([f"def written({signature}):", *code]), namespace)
    assert checker(namespace["written"]).passed
    with pytest.raises(ValueError, match="hint"):
        checker(stub, hint=4)
    with pytest.raises(TypeError, match="hint"):
        checker(stub, hint=True)


def test_unseen_pairs_of_a_rescaled_model_compare_with_the_trained_angles():
    theta = pe_lib.rope_frequencies(128, base=1e4)
    assert ch08.unseen_pairs(theta, 4096, 4 * 4096, scaled=theta / 4).sum() == 0  # position interpolation
    assert ch08.unseen_pairs(theta, 4096, 4 * 4096, scaled=theta).sum() == 18  # unchanged: as without scaled
