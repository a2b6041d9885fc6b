"""Notebook 12's figures and explorers (pe_lib.ch12_positions_2026): they draw, and report what they show."""

import matplotlib
import numpy as np
import pytest

from pe_lib import ch12_positions_2026 as ch12
from pe_lib import hybrid_layers, partial_sweep


def test_wavelengths_of_the_two_conventions():
    proportional = ch12.wavelengths(512, 0.25, 1e6, "proportional")
    neox = ch12.wavelengths(512, 0.25, 1e6, "neox")
    assert proportional.size == 256 and np.isinf(proportional[64:]).all() and np.isfinite(proportional[:64]).all()
    assert neox.size == 64 and np.isfinite(neox).all()
    full = ch12.wavelengths(512, 1.0, 1e6, "neox")
    np.testing.assert_allclose(proportional[:64], full[:64])  # the full head's 64 fastest pairs
    assert neox.max() > 1e6 > 1e3 > proportional[:64].max()  # NeoX's ladder reaches the base, proportional's stops


def test_score_over_distance_has_the_unturned_floor():
    far = np.array([1e9])
    for kind in ("neox", "proportional"):
        for fraction in (0.25, 0.5):
            assert ch12.score_over_distance(128, fraction, 1e4, kind, far)[0] == pytest.approx(1 - fraction, abs=0.02)
    assert ch12.score_over_distance(128, 1.0, 1e4, "neox", np.array([0.0]))[0] == pytest.approx(1.0)


def test_layer_kinds_cover_every_layer_of_the_table():
    kinds = {
        ch12.layer_kind(layer)
        for m in hybrid_layers.load_models()
        for layer in hybrid_layers.layer_positions(m["config"])
    }
    assert kinds == set(ch12.KIND_STYLES)


def test_omni_video_and_audio_share_a_clock_only_at_the_checkpoints_rate():
    for model, per_second in (("qwen2_5_omni", 25), ("qwen3_omni", 13)):
        (video_s, video_ids), (audio_s, audio_ids) = ch12.video_and_audio_ids(model, per_second)
        for second, identifier in zip(video_s, video_ids, strict=True):
            nearest = audio_ids[np.argmin(np.abs(audio_s - second))]
            assert abs(identifier - nearest) <= 1, (model, second)
    (video_s, video_ids), (audio_s, audio_ids) = ch12.video_and_audio_ids("qwen3_omni", 25)
    assert video_ids[-1] - audio_ids[np.argmin(np.abs(audio_s - video_s[-1]))] > 40


def test_figures_draw():
    ch12.ladder_figure()
    ch12.pairing_figure()
    ch12.layer_table_figure()
    ch12.scale_figure()
    ch12.omni_figure()
    assert set(ch12.scale_curves(np.array([1.0, 1e6]))) and len(ch12.scale_curves(np.array([1.0]))) == 3
    matplotlib.pyplot.close("all")


def test_sweep_figures_draw_from_the_committed_sweep():
    results = partial_sweep.load_results()
    curves = ch12.sweep_curves(results)
    assert len(curves) == 5 and all(len(y) == 32 for _, y in curves.values())
    ch12.sweep_figure(results)
    ch12.bug_cost_figure(results)
    matplotlib.pyplot.close("all")


def test_explorers_report_what_they_show():
    explorer = ch12.PartialRopeExplorer()
    explorer.update(fraction=0.5, base=1e4)
    assert explorer.floor == pytest.approx(0.5) and explorer.longest["neox"] > 50 * explorer.longest["proportional"]
    assert "50% of the score never turns" in explorer.finding()
    explorer.update(fraction=1.0)
    assert explorer.floor == 0 and explorer.longest["neox"] == pytest.approx(explorer.longest["proportional"])
    omni = ch12.OmniTimeExplorer()
    assert abs(omni.gap) < 1 and "agree" in omni.finding()
    omni.update(per_second=25)
    assert omni.gap > 40 and "ahead" in omni.finding()
    explorer.close()
    omni.close()
