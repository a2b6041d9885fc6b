"""Notebook 11 (positions beyond one line): ch11's measurements, figures and explorers; the two experiments."""

import dataclasses

import matplotlib
import numpy as np
import pytest
import torch

from pe_lib import ch11_beyond as ch11
from pe_lib import extrapolation, grid_task, layered, multidim

matplotlib.use("Agg")


def test_interaction_is_zero_for_axial_and_for_mixed_at_right_angles_only():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=16), rng.normal(size=16)
    axial = ch11.offset_scores(q, k, ch11.head_frequencies("axial"), 4)
    assert np.abs(ch11.interaction(axial)).max() < 1e-12
    for direction, zero in ((0, True), (90, True), (30, False), (135, False)):
        mixed = ch11.offset_scores(q, k, ch11.head_frequencies("mixed", direction=direction), 4)
        assert (np.abs(ch11.interaction(mixed)).max() < 1e-12) == zero


def test_axial_scores_pair_diagonals_and_factor_their_attention():
    rng = np.random.default_rng(2)
    q, k = rng.normal(size=16), rng.normal(size=16)
    axial = ch11.offset_scores(q, k, ch11.head_frequencies("axial"), 5)
    assert np.abs(ch11.diagonal_difference(axial)).max() < 1e-12
    weights = ch11.offset_attention(axial)
    assert weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(weights, np.outer(weights.sum(1), weights.sum(0)), rtol=1e-12, atol=0)
    mixed = ch11.offset_scores(q, k, ch11.head_frequencies("mixed", direction=30), 5)
    assert np.abs(ch11.diagonal_difference(mixed)).max() > 0.5
    # S(1, 1) + S(-1, -1) - S(1, -1) - S(-1, 1), read at offset (1, 1)
    expected = mixed[6, 6] + mixed[4, 4] - mixed[6, 4] - mixed[4, 6]
    assert ch11.diagonal_difference(mixed)[6, 6] == pytest.approx(expected)


def test_scaling_labels():
    from pe_lib import layer_schemes

    plans = {e["name"]: layer_schemes.layer_plan(e["config"]) for e in layer_schemes.load_layer_schemes()}
    labels = {name: {ch11.scaling_label(layer) for layer in plan} for name, plan in plans.items()}
    assert labels["gpt-oss-120b"] == {"yarn x32"} and labels["DeepSeek-V3"] == {"yarn x40"}
    assert labels["Gemma 3 4B"] == {"", "linear x8"} and labels["Llama 4 Scout"] == {""}


def test_offset_scores_are_the_grid_scores():
    rng = np.random.default_rng(1)
    q, k = rng.normal(size=8), rng.normal(size=8)
    f = ch11.head_frequencies("mixed", 8, direction=20)
    s = ch11.offset_scores(q, k, f, 2)
    rows, cols = multidim.grid_positions(5, 5)
    angles = multidim.rope_2d_angles(rows, cols, f)
    qs, ks = multidim.apply_angles(np.tile(q, (25, 1)), angles), multidim.apply_angles(np.tile(k, (25, 1)), angles)
    full = qs @ ks.T
    assert np.allclose(s, full[12].reshape(5, 5))  # query at the centre (2, 2)


def test_timm_and_deit_differ_when_upsampling():
    table, timm, deit = ch11.resize_comparison()
    assert timm.shape == deit.shape == (144, 16) and table.shape == (49, 16)
    assert np.abs(timm - deit).max() > 0.01


def test_pair_wavelengths():
    qwen2 = ch11.pair_wavelengths([16, 24, 24])
    assert [v.size for v in qwen2.values()] == [16, 24, 24]
    assert qwen2["width"].min() > 3e4 and qwen2["time"].max() < 200
    qwen3 = ch11.pair_wavelengths([24, 20, 20], base=5e6, interleaved=True)
    assert all(v.min() < 20 for v in qwen3.values())


def test_figures_draw():
    rng = np.random.default_rng(0)
    ch11.score_maps(rng.normal(size=16), rng.normal(size=16))
    ch11.resize_figure()
    ch11.position_ids_figure([2, ("image", 1, 4, 4), 2, ("video", 2, 2, 2), 1])
    ch11.pair_allocation_figure()
    ch11.layer_plans_figure()
    ch11.grid_task_figure(grid_task.load_results())
    matplotlib.pyplot.close("all")


def test_explorers_report_what_they_show():
    explorer = ch11.Rope2DExplorer()
    explorer.update(direction=90)
    assert explorer.axial_interaction < 1e-12 and explorer.mixed_interaction < 1e-12
    assert "none (it is axial)" in explorer.finding()
    explorer.update(direction=45)
    assert explorer.mixed_interaction > 0.1 and "45 degrees" in explorer.finding()
    mrope = ch11.MropeExplorer()
    mrope.update(text_before=2, height=3, width=7)
    assert mrope.next_text == 2 + 7 and mrope.ids.shape == (3, 2 + 21 + 4)
    assert "resumes at 9 = 2 + max(3, 7)" in mrope.finding()
    explorer.close()
    mrope.close()


# --- the experiments ---------------------------------------------------------------------------------


def test_grid_task_targets_are_the_diagonal_neighbour():
    tokens, targets = grid_task.make_batch(grid_task.Config(), 2, 4, torch.Generator().manual_seed(0))
    grid, answer = tokens.reshape(2, 4, 4), targets.reshape(2, 4, 4)
    assert torch.equal(answer[:, :3, :3], grid[:, 1:, 1:])
    assert (answer[:, 3] == -100).all() and (answer[:, :, 3] == -100).all()


def test_grid_task_runs_and_the_committed_sweep_reads():
    config = dataclasses.replace(grid_task.Config(), steps=20, eval_size=16)
    for variant in grid_task.VARIANTS:
        run, _ = grid_task.one_run(config, variant, 0)
        assert 0 <= run["larger_grid"] <= 1
    results = grid_task.load_results()
    assert len(results["runs"]) == 15 and set(results["summary"]) == set(grid_task.VARIANTS)


def test_rotary2d_is_multidims_rotation():
    f = multidim.mixed_rope_frequencies(8, 2, seed=3)
    rotary = grid_task.Rotary2D(f, learnable=True)
    rows, cols = multidim.grid_positions(2, 3)
    q = torch.randn(1, 2, 6, 8, dtype=torch.float64)
    turned, _ = rotary(q.float(), q.float(), (torch.from_numpy(rows).float(), torch.from_numpy(cols).float()))
    expected = multidim.apply_angles(q, multidim.rope_2d_angles(rows, cols, f)[None])
    torch.testing.assert_close(turned.double(), expected, atol=1e-5, rtol=0)


def test_span_masks():
    window = layered.span_mask(6, "window", 2)
    assert window[5].tolist() == [False, False, False, False, True, True]
    sink = layered.span_mask(6, "window_sink", 2)
    assert sink[5].tolist() == [True, False, False, False, True, True]
    assert layered.span_mask(4, "full", 2).tolist() == np.tril(np.ones((4, 4), bool)).tolist()


def test_layered_variants_and_temperature():
    config = dataclasses.replace(layered.CONFIG, steps=10, eval_size=8)
    model = layered.LayeredDecoder("local_rope_global_nope", config)
    assert [rope for rope, _ in model.kinds] == [True, True, True, False]
    assert model.layers[3].rotary is None
    hot = model.with_temperature("log_n", test_len=64)
    assert hot.layers[3].logit_scale == pytest.approx(np.log(64) / np.log(16))
    assert model.layers[3].logit_scale == 1.0  # a copy
    llama = model.with_temperature("llama4")
    q = torch.ones(1, 1, 64, 8)
    scaled, _ = llama.layers[3].rotary(q, q)
    assert scaled[0, 0, 14, 0] == 1.0 and scaled[0, 0, 15, 0] > 1.0  # floor((p + 1) / 16) turns 1 at p = 15
    run, _ = layered.one_run(config, "shift", "local_rope_global_nope", 0)
    assert {"llama4_at_4x", "log_n_at_2x"} <= set(run)
    run, _ = layered.one_run(config, "shift", "window_sink", 0)
    assert "llama4_at_4x" not in run and 0 <= run["at_4x"] <= 1
    assert layered.LayeredDecoder("nope", config).kinds == [(False, "full")] * 4
    assert isinstance(extrapolation.Config(), extrapolation.Config)


def test_the_committed_layered_sweep_reads():
    results = layered.load_results()
    assert len(results["runs"]) == 40 and set(results["summary"]) == set(layered.TASKS)
    assert set(results["summary"]["shift"]) == set(layered.VARIANTS)
    ch11.layered_figure(results)
    matplotlib.pyplot.close("all")
