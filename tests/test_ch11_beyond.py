"""Notebook 11 (positions beyond one line): ch11's measurements, figures and explorers; the two experiments."""

import dataclasses
import json
import math

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
    assert labels["Gemma 3 4B"] == {"", "linear x8"} and labels["Llama 4 Scout"] == {"", "llama3 x16"}


def test_llama4_scout_frequencies_are_transformers():
    from transformers import Llama4TextConfig
    from transformers.models.llama4.modeling_llama4 import Llama4TextRotaryEmbedding

    from pe_lib import layer_schemes

    entry = next(e for e in layer_schemes.load_layer_schemes() if e["name"] == "Llama 4 Scout")
    config = entry["config"]
    plan = layer_schemes.layer_plan(config)
    hf = Llama4TextConfig(hidden_size=config["hidden_size"], num_attention_heads=config["num_attention_heads"],
                          head_dim=config["head_dim"],
                          rope_parameters={"rope_theta": config["rope_theta"], **config["rope_scaling"]})  # fmt: skip
    expected = Llama4TextRotaryEmbedding(hf).inv_freq.double().numpy()
    np.testing.assert_allclose(plan[0].rope.frequencies(), expected, rtol=1e-6)
    slowed = plan[0].rope.frequencies() < 0.99 * unscaled_frequencies(config)
    assert slowed.sum() == 29 and slowed[-29:].all()  # the 29 slowest pairs, divided by 16, no ramp


def unscaled_frequencies(config):
    import pe_lib

    return pe_lib.rope_frequencies(config["head_dim"], base=config["rope_theta"])


def test_an_axial_head_can_aim_at_one_diagonal_offset_but_not_prefer_a_diagonal_line():
    f = ch11.head_frequencies("axial")
    k = np.tile([1.0, 0.0], 8) * 24 / np.sqrt(8)
    q = ch11.aimed_query(k, f, (1, 1))
    scores = ch11.offset_scores(q, k, f, 6)
    weights = ch11.offset_attention(scores, scale=0.25)
    assert np.unravel_index(scores.argmax(), scores.shape) == (7, 7)  # offset (1, 1)
    assert weights[7, 7] > 0.999 and weights[7, 5] < 1e-9
    assert abs(scores[7, 7] + scores[5, 5] - scores[7, 5] - scores[5, 7]) < 1e-9
    mixed = ch11.head_frequencies("mixed", direction=30)
    assert np.unravel_index(ch11.offset_scores(ch11.aimed_query(k, mixed, (2, -1)), k, mixed, 6).argmax(),
                            (13, 13)) == (8, 5)  # fmt: skip


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
    ch11.video_time_figure([2, ("video", 4, 4, 6), 2], model="qwen2_5_vl", second_per_grid_ts=[1.0])
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
    assert len(results["runs"]) == 25 and set(results["summary"]) == set(grid_task.VARIANTS)


def test_grid_task_variants_differ_in_one_setting_each():
    config = grid_task.Config()
    models = {}
    for variant in grid_task.VARIANTS[1:]:
        torch.manual_seed(0)
        models[variant] = grid_task.GridEncoder(variant, config)
    rotary = {v: m.layers[0].rotary for v, m in models.items()}
    # the base alone: the same axes, frequencies 100**(-4t/16) against 10**(-4t/16)
    axial, base10 = rotary["axial"].frequencies, rotary["axial_base_10"].frequencies
    assert torch.equal(axial == 0, base10 == 0)
    t = torch.arange(4, dtype=torch.float32)
    torch.testing.assert_close(axial[:4, 0], 100.0 ** (-4 * t / 16))
    torch.testing.assert_close(base10[:4, 0], 10.0 ** (-4 * t / 16))
    # the directions alone: the same length per pair at base 10, turned away from the axes
    frozen = rotary["mixed_frozen"].frequencies
    torch.testing.assert_close(frozen.norm(dim=-1), base10.norm(dim=-1)[None].expand_as(frozen.norm(dim=-1)))
    assert (frozen != 0).all()
    # learning alone: the same start, a parameter instead of a buffer
    torch.testing.assert_close(rotary["mixed"].frequencies.detach(), frozen)
    assert isinstance(rotary["mixed"].frequencies, torch.nn.Parameter)
    assert not any(p is rotary["mixed_frozen"].frequencies for p in models["mixed_frozen"].parameters())
    # everything else starts the same
    others = [dict(m.named_parameters()) for m in models.values()]
    for name, value in others[0].items():
        for other in others[1:]:
            torch.testing.assert_close(other[name], value)


def test_grid_task_check_allows_cpu_noise_and_nothing_more(tmp_path, monkeypatch, capsys):
    committed = grid_task.load_results()
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(committed))

    def check_against(change):
        fresh = {**committed, "runs": [change(dict(run)) for run in committed["runs"]]}
        monkeypatch.setattr(grid_task, "run_sweep", lambda **_: fresh)
        return grid_task.main(["--check", "--out", str(path)])

    def nudge(variant, metric, by):
        return lambda run: {**run, metric: run[metric] + by} if run["variant"] == variant else run

    assert check_against(lambda run: run) == 0
    assert check_against(nudge("axial", "larger_grid", 8e-5)) == 0  # one cell of 12,544: another CPU
    assert check_against(nudge("learned", "in_distribution", -0.046)) == 0  # seen between two CPUs
    assert check_against(nudge("axial", "larger_grid", 0.01)) == 1  # a change to the method
    assert check_against(nudge("learned", "larger_grid", 0.03)) == 1
    assert "allowed: 0.02 apart" in capsys.readouterr().out
    base_10 = {r["seed"]: r for r in committed["runs"] if r["variant"] == "axial_base_10"}
    assert check_against(lambda run: {**run, "larger_grid": base_10[run["seed"]]["larger_grid"]}
                         if run["variant"] == "axial" else run) == 1  # axial at base 10  # fmt: skip
    assert grid_task.differences({**committed, "config": {"steps": 400}}, committed)[0].startswith("config:")


def test_layered_check_allows_cpu_noise_and_catches_a_rule_that_stops_acting():
    committed = layered.load_results()
    assert layered.differences(committed, committed) == []
    noisy = {**committed, "runs": [{**r, "at_4x": r["at_4x"] + 0.0104} for r in committed["runs"]]}
    assert all("gains" in problem for problem in layered.differences(noisy, committed))  # only the gains moved
    accuracies = {m for r in committed["runs"] for m in r} - {"task", "variant", "seed", "final_loss"}
    both = {**committed, "runs": [{**r, **{m: r[m] + 0.0104 for m in accuracies if m in r}}
                                  for r in committed["runs"]]}  # fmt: skip
    assert layered.differences(both, committed) == []
    silent = {**committed, "runs": [{**r, **{m: r[m.split("_", 2)[-1]] for m in r if m.startswith("log_n")}}
                                    for r in committed["runs"]]}  # fmt: skip
    assert any("log_n_at_4x gains +0.0000" in problem for problem in layered.differences(silent, committed))


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
    assert layered.LayeredDecoder("window", config).kinds == [(True, "window")] * 4
    # Qwen's logn_attn: each query by its own key count, 1 inside the trained length
    hot = model.with_temperature("log_n")
    q = torch.ones(1, 1, 64, 8)
    scaled, _ = hot.layers[3].rotary(q, q)
    assert scaled[0, 0, :16, 0].tolist() == [1.0] * 16
    assert scaled[0, 0, 63, 0] == pytest.approx(np.log(64) / np.log(16)) and scaled[0, 0, 31, 0] == pytest.approx(1.25)
    offset, _ = hot.layers[3].rotary(q[:, :, :2], q[:, :, :2], torch.tensor([31, 63]))  # placed at 31 and 63
    assert offset[0, 0, :, 0].tolist() == pytest.approx([1.25, 1.5])
    assert model.layers[3].rotary is None  # a copy
    llama = model.with_temperature("llama4")
    scaled, _ = llama.layers[3].rotary(q, q)
    assert scaled[0, 0, 14, 0] == 1.0 and scaled[0, 0, 15, 0] > 1.0  # floor((p + 1) / 16) turns 1 at p = 15
    run, _ = layered.one_run(config, "shift", "local_rope_global_nope", 0)
    assert {"llama4_at_4x", "log_n_at_2x"} <= set(run)
    run, _ = layered.one_run(config, "shift", "window_sink", 0)
    assert "llama4_at_4x" not in run and 0 <= run["at_4x"] <= 1
    assert layered.LayeredDecoder("nope", config).kinds == [(False, "full")] * 4
    assert isinstance(extrapolation.Config(), extrapolation.Config)


def test_logn_scale_is_qwens_logn_list():
    # Qwen-7B's modeling_qwen.py: logn_list = [math.log(i, seq_length) if i > seq_length else 1 for i in 1..]
    expected = [math.log(i, 16) if i > 16 else 1 for i in range(1, 200)]
    np.testing.assert_allclose(layered.logn_scale(np.arange(199), 16), expected, rtol=1e-15)


def test_the_committed_layered_sweep_reads():
    results = layered.load_results()
    assert len(results["runs"]) == 50 and set(results["summary"]) == set(layered.TASKS)
    assert set(results["summary"]["shift"]) == set(layered.VARIANTS)
    ch11.layered_figure(results)
    matplotlib.pyplot.close("all")
