"""Notebook 09 (positions in the wild): pe_lib.models_table, pe_lib.precision, and ch09's figures and explorer."""

import matplotlib
import numpy as np
import pytest
import torch
import transformers

import pe_lib
from pe_lib import ch09_wild as ch09
from pe_lib import models_table, precision

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


def test_the_three_lengths_are_kept_apart_and_a_window_caps_the_distances():
    mistral, qwen = models_table.scheme("Mistral 7B v0.1"), models_table.scheme("Qwen2 7B")
    assert (mistral["trained_context"], mistral["max_position_embeddings"], mistral["sliding_window"]) == (
        8192,
        32768,
        4096,
    )
    assert models_table.score_reach(mistral) == 4096 and models_table.score_reach(qwen) == 32768
    assert models_table.summary(mistral).startswith("18 of 64")  # the same as Llama 2: the window is 4,096
    assert models_table.summary(qwen).startswith("24 of 64")


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


def test_the_query_key_angle_error_of_each_recipe():
    theta = pe_lib.rope_frequencies(128)
    # bfloat16 stores 518 as 520 and 514 as 512: pair 0 turns 8 rad instead of 4, 4 rad off, 2.28 once wrapped
    assert precision.score_angle_error(518.0, 514.0, theta)[0] == pytest.approx(2 * np.pi - 4)
    # a bfloat16 theta: the error depends on the distance, not on the position (a steady frequency shift)
    near = precision.score_angle_error(1000.0, 1000.0 - np.array([10.0, 100.0]), theta, recipe="inv_freq")
    far = precision.score_angle_error(100_000.0, 100_000.0 - np.array([10.0, 100.0]), theta, recipe="inv_freq")
    assert np.allclose(near, far, atol=1e-3) and near[1] == pytest.approx(10 * near[0], rel=0.01)
    assert precision.score_angle_error(5000.0, 5000.0, theta, recipe="inv_freq")[0] < 1e-3  # distance 0
    assert precision.score_angle_error(1e6, 1e6 - 10, theta, recipe="float32")[0] < 0.1
    cache = precision.score_angle_error(np.arange(0, 1e6, 997.0), 3.0, theta, recipe="cache")
    assert cache.max() < 0.01  # the two tables' rounding, whatever the position
    errors = precision.score_angle_error(np.arange(0.0, 3000.0), 0.0, theta, recipe="autocast")
    assert np.all((errors >= 0) & (errors <= np.pi))  # wrapped
    worst = precision.worst_score_error([40.0, 600.0], [1.0, 2.0], theta)
    assert worst.shape == (2,) and worst[1] > worst[0]
    assert np.isnan(precision.score_angle_error(70_000.0, 1.0, theta, dtype="float16")[0])  # float16 overflows
    assert precision.first_position_reaching([1, 2, 3], [0.0, 0.5, 2.0], 1.0) == 3
    assert precision.first_position_reaching([1, 2], [0.0, 0.5], 1e9) is None


# --- figures ----------------------------------------------------------------------------------------


def test_figures_draw_what_they_say():
    fig = ch09.scheme_overview()
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == models_table.model_names()
    assert fig.legends and not ax.get_legend()  # the legend sits outside the axes, over no row
    dots = [c for c in ax.collections if len(c.get_offsets()) and c.get_zorder() == 4]
    bars = [line for line in ax.lines if len(line.get_xdata())]
    assert dots and bars and all(d.get_zorder() > b.get_zorder() for d in dots for b in bars)  # dots over bars
    result = ch09.layout_forensics([0, 4, 256], samples=300)
    assert result["as_is"][0] > 1 - 1e-12 and result["as_is"][2] < result["as_is"][1] < 1
    assert np.all(result["worst_permuted"] < 1e-9)
    ax = ch09.layout_drift(result).axes[0]
    assert np.allclose(ax.lines[1].get_ydata(), result["as_is"]) and ax.get_xscale() == "log"
    theta = pe_lib.rope_frequencies(16)
    fig = ch09.precision_curves(theta, distances=np.array([1.0, 10.0, 100.0]), query_positions=np.array([1.0, 1e3]))
    left, right = fig.axes
    for axis in (left, right):
        curves = [line.get_ydata() for line in axis.lines]
        assert curves and all(np.nanmax(y) <= np.pi for y in curves)  # wrapped to [0, pi]
    assert len(left.lines) == 4 and len(right.lines) == 6  # the curves and the pi line
    ax = ch09.learned_ends(np.eye(4) + 1).axes[0]
    assert len(ax.lines[0].get_ydata()) == 4 and len(ax.lines[1].get_ydata()) == 3


# --- the explorer -----------------------------------------------------------------------------------


def test_model_explorer_shows_each_models_scheme():
    explorer = ch09.ModelExplorer()
    assert explorer.entry["name"] == "Llama 2 7B" and explorer.beyond == 18
    assert "18 of 64 pairs" in explorer.readout
    frames = {explorer.image.value}
    explorer.update(run_at=8)
    assert explorer.run_length == explorer.longest == 8 * 4096 and "angles never trained" in explorer.readout
    frames.add(explorer.image.value)
    for name in ("BLOOM 176B", "T5 base", "GPT-2", "Llama 3.1 8B"):
        explorer.update(model=name, run_at=1)
        visible = sum(bar.get_visible() for bar in explorer._bars)
        assert visible == len(explorer.lengths)
        frames.add(explorer.image.value)
    assert len(frames) == 6
    explorer.update(model="GPT-2", run_at=2)
    assert "positions 1,024..2,047 have no row" in explorer.readout
    explorer.update(model="Mistral 7B v0.1", run_at=8)  # the window caps every distance at 4,096
    assert explorer.longest == 4096 and explorer.beyond == 18 and "window" in explorer.readout


def test_model_explorer_colours_mean_one_thing_for_every_method():
    explorer = ch09.ModelExplorer()
    for name in ("Llama 2 7B", "BLOOM 176B", "GPT-2", "T5 base"):
        explorer.update(model=name, run_at=2)
        for length, bar in zip(explorer.lengths, explorer._bars, strict=False):
            colour = explorer.LONGER if length > explorer.longest else explorer.SHORTER
            assert bar.get_facecolor() == matplotlib.colors.to_rgba(colour), (name, length)


def test_a_port_reading_base_1e4_for_5e5_scores_distances_wrong():
    worst, over = ch09.wrong_base_angles([0, 1, 10, 100, 1000])
    assert worst[0] == 0 and round(worst[1], 2) == 0.13 and round(worst[2], 2) == 1.29
    assert over.tolist() == [0, 0, 9, 21, 35]  # of 64 pairs
    same, none = ch09.wrong_base_angles([1000], base=1e4)
    assert same[0] == 0 and none[0] == 0  # the port's default is right for a model trained with base 1e4


def test_casting_a_transformers_llama_rounds_its_inv_freq_and_loading_with_dtype_does_not():
    result = ch09.transformers_inv_freq()
    assert result["to"]["bfloat16"] == (torch.bfloat16, torch.bfloat16)
    assert result["to"]["float16"] == (torch.float16, torch.float16)
    assert result["loaded"]["bfloat16"] == (torch.float32, torch.bfloat16)
    assert result["loaded"]["float16"] == (torch.float32, torch.float16)
    for dtype in ("bfloat16", "float16"):  # the values precision's "inv_freq" recipe uses
        assert np.array_equal(result["rounded"][dtype], precision.round_to(result["theta"], dtype))
    assert not np.array_equal(result["rounded"]["bfloat16"], result["theta"])
    recorded = ch09.recorded_inv_freq()  # what notebook 09 shows: the same, with these versions
    assert recorded["versions"] == {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]}
    assert recorded["to"] == result["to"] and recorded["loaded"] == result["loaded"]
    np.testing.assert_allclose(recorded["theta"], result["theta"], rtol=1e-7)
    for dtype in result["rounded"]:
        np.testing.assert_allclose(recorded["rounded"][dtype], result["rounded"][dtype], rtol=1e-7)
        np.testing.assert_allclose(recorded["angles"][dtype], result["angles"][dtype], atol=1e-5)  # float32 cos, sin


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
        (lambda: precision.score_angle_error([1.0], [0.0], [1.0], recipe="fast"), ValueError, ["recipe", "fast"]),
        (lambda: precision.colliding_positions(-1, "bfloat16"), ValueError, ["position", "-1"]),
        (lambda: precision.score_angle_error([1.0, 2.0], [1.0, 2.0, 3.0], [1.0]), ValueError, ["key_positions", "3"]),
        (lambda: precision.score_angle_error([1.0], [0.0], [1.0], dtype="int8"), ValueError, ["dtype", "int8"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, said):
    with pytest.raises(error) as raised:
        call()
    assert all(word in str(raised.value) for word in said), str(raised.value)


def test_model_explorer_finding_says_the_frame_in_numbers():
    explorer = ch09.ModelExplorer()
    explorer.update(model="Mistral 7B v0.1", run_at=8)
    finding = explorer.finding()
    assert finding.startswith("Mistral 7B v0.1 run at 65,536 tokens, 8× its trained context of 8,192")
    assert "the longest distance a score meets is 4,096 (its 4,096-token window)" in finding
    assert "18 of 64 pairs" in finding and "\n" not in finding
    explorer.update(model="RoBERTa base", run_at=2)
    assert "is 1,024." in explorer.finding() and "positions 512..1,023 have no row" in explorer.finding()
