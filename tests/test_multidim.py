"""pe_lib.multidim against what models and libraries run.

2-D RoPE against rope-vit's formulas (transcribed here); the table resampling against timm's
resample_abs_pos_embed (transcribed) and against the bicubic kernels written out; M-RoPE's position ids
and rotations against transformers' Qwen2-VL and Qwen3-VL code on sequences drawn by hypothesis.
"""

import itertools
import types

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel
from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel, Qwen2VLRotaryEmbedding
from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLModel, Qwen3VLTextRotaryEmbedding

import pe_lib
from pe_lib import multidim as md

DRAWN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def scores(q, k, angles_fn, height, width):
    """S[i, j] = rotated q at grid cell i . rotated k at cell j, the same q and k vectors everywhere."""
    rows, cols = md.grid_positions(height, width)
    angles = angles_fn(rows, cols)
    n = rows.size
    qs = md.apply_angles(np.broadcast_to(q, (n, q.size)), angles)
    ks = md.apply_angles(np.broadcast_to(k, (n, k.size)), angles)
    return qs @ ks.T, rows, cols


# --- two dimensions ---------------------------------------------------------------------------


def test_axial_frequencies_match_rope_vit():
    # rope-vit's compute_axial_cis: freqs = 1 / theta ** (arange(0, dim, 4)[: dim // 4] / dim),
    # x-angles then y-angles concatenated, t_x = index % end_x, t_y = index // end_x
    dim, end_x, end_y, theta = 32, 5, 3, 100.0
    freqs = 1.0 / theta ** (np.arange(0, dim, 4)[: dim // 4] / dim)
    t = np.arange(end_x * end_y)
    expected = np.concatenate([np.outer(t % end_x, freqs), np.outer(t // end_x, freqs)], axis=-1)
    rows, cols = md.grid_positions(end_y, end_x)
    got = md.rope_2d_angles(rows, cols, md.axial_rope_frequencies(dim, base=theta))
    np.testing.assert_allclose(got, expected, rtol=1e-15)


def test_qwen2_vl_vision_tower_is_axial_with_rows_first():
    # transformers' Qwen2VLVisionRotaryEmbedding: the same frequencies as RoPE-Axial, the row's pairs first
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding
    from transformers.vision_utils import get_vision_position_ids

    head_dim = 16
    config = Qwen2VLVisionConfig(embed_dim=2 * head_dim, num_heads=2)
    rotary = Qwen2VLVisionRotaryEmbedding(config)
    ids = get_vision_position_ids(torch.tensor([[1, 4, 6]]), 2)  # (tokens, 2): row, column
    cos, _ = rotary(torch.zeros(1), ids)
    axial = md.axial_rope_frequencies(head_dim, base=config.rope_parameters["rope_theta"])
    rows, cols = ids[:, 0].numpy(), ids[:, 1].numpy()
    rows_first = md.rope_2d_angles(rows, cols, axial[:, ::-1])
    np.testing.assert_allclose(cos[..., : head_dim // 2].numpy(), np.cos(rows_first), atol=1e-6)
    assert not np.allclose(np.cos(md.rope_2d_angles(rows, cols, axial)), cos[..., : head_dim // 2].numpy())


def test_mixed_frequencies_follow_rope_vit_init():
    dim, heads = 16, 3
    f = md.mixed_rope_frequencies(dim, heads, seed=4)
    assert f.shape == (heads, dim // 2, 2)
    mag = 1 / 10.0 ** (np.arange(0, dim, 4)[: dim // 4] / dim)
    for head in f:
        a = np.arctan2(head[0, 1], head[0, 0])
        # init_random_2d_freqs: fx = [mag cos a, mag cos(pi/2 + a)], fy = [mag sin a, mag sin(pi/2 + a)]
        fx = np.concatenate([mag * np.cos(a), mag * np.cos(np.pi / 2 + a)])
        fy = np.concatenate([mag * np.sin(a), mag * np.sin(np.pi / 2 + a)])
        np.testing.assert_allclose(head[:, 0], fx, atol=1e-15)
        np.testing.assert_allclose(head[:, 1], fy, atol=1e-15)
    assert not np.allclose(f[0], f[1])  # each head its own direction
    np.testing.assert_array_equal(f, md.mixed_rope_frequencies(dim, heads, seed=4))


@pytest.mark.parametrize("kind", ["axial", "mixed"])
def test_scores_depend_on_the_offset_only(kind):
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=16), rng.normal(size=16)
    f = md.axial_rope_frequencies(16) if kind == "axial" else md.mixed_rope_frequencies(16, 1, seed=1)[0]
    s, rows, cols = scores(q, k, lambda r, c: md.rope_2d_angles(r, c, f), 4, 5)
    offsets = {}
    for i in range(rows.size):
        for j in range(rows.size):
            offsets.setdefault((rows[j] - rows[i], cols[j] - cols[i]), []).append(s[i, j])
    assert len(offsets) == 7 * 9
    assert max(np.ptp(v) for v in offsets.values()) < 1e-12


def test_axial_scores_add_up_along_the_axes_mixed_do_not():
    rng = np.random.default_rng(1)
    worst_axial, best_mixed = 0.0, 0.0
    for _ in range(20):
        q, k = rng.normal(size=16), rng.normal(size=16)
        for kind, f in (("axial", md.axial_rope_frequencies(16)),
                        ("mixed", md.mixed_rope_frequencies(16, 1, seed=int(rng.integers(1000)))[0])):  # fmt: skip
            s, rows, cols = scores(q, k, lambda r, c, f=f: md.rope_2d_angles(r, c, f), 3, 3)
            # query at the centre (1, 1): S(a, b) - S(a, 0) - S(0, b) + S(0, 0), a, b in {-1, 1}
            centre = s[4].reshape(3, 3)
            interaction = centre[::2, ::2] - centre[::2, 1:2] - centre[1:2, ::2] + centre[1, 1]
            size = np.abs(interaction).max()
            worst_axial = max(worst_axial, size) if kind == "axial" else worst_axial
            best_mixed = max(best_mixed, size) if kind == "mixed" else best_mixed
    assert worst_axial < 1e-12
    assert best_mixed > 0.1


def test_apply_angles_layouts_and_types():
    rng = np.random.default_rng(2)
    x, angles = rng.normal(size=(5, 8)), rng.normal(size=(5, 4))
    inter = md.apply_angles(x, angles)
    np.testing.assert_allclose(np.linalg.norm(inter, axis=-1), np.linalg.norm(x, axis=-1))
    # positions along one line: apply_angles with p * theta is apply_rope
    theta = pe_lib.rope_frequencies(8)
    p = np.arange(5)
    for layout in ("interleaved", "half"):
        got = md.apply_angles(x, p[:, None] * theta, layout=layout)
        np.testing.assert_allclose(got, pe_lib.apply_rope(x, layout=layout), atol=1e-12)
    t = md.apply_angles(torch.from_numpy(x).float(), angles)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    assert md.apply_angles(x.astype(np.float32), angles).dtype == np.float32
    with pytest.raises(ValueError, match="angles"):
        md.apply_angles(x, angles[:, :3])


def bicubic_matrix(n_in, n_out, a, *, renormalise):
    """Rows of weights for align_corners=False resampling with Keys' cubic kernel (parameter a).

    renormalise=False: taps past the edge read the edge row (torch's bicubic, a = -0.75);
    True: taps past the edge are dropped and the rest rescaled to sum 1 (PIL's, torch's antialias=True, a = -0.5).
    """

    def kernel(s):
        s = abs(s)
        if s <= 1:
            return (a + 2) * s**3 - (a + 3) * s**2 + 1
        return a * s**3 - 5 * a * s**2 + 8 * a * s - 4 * a if s < 2 else 0.0

    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        x = (i + 0.5) * n_in / n_out - 0.5
        for k in range(int(np.floor(x)) - 1, int(np.floor(x)) + 3):
            if 0 <= k < n_in or not renormalise:
                weights[i, min(max(k, 0), n_in - 1)] += kernel(x - k)
        weights[i] /= weights[i].sum() if renormalise else 1.0
    return weights


def timm_resample(posemb, new_size, old_size, num_prefix_tokens=1, interpolation="bicubic", antialias=True):
    """timm.layers.resample_abs_pos_embed, transcribed (torch in, torch out)."""
    prefix, grid = posemb[:, :num_prefix_tokens], posemb[:, num_prefix_tokens:]
    grid = grid.float().reshape(1, old_size[0], old_size[1], -1).permute(0, 3, 1, 2)
    grid = torch.nn.functional.interpolate(grid, size=new_size, mode=interpolation, antialias=antialias)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, posemb.shape[-1])
    return torch.cat([prefix, grid], dim=1)


@pytest.mark.parametrize(("old", "new"), [((4, 4), (7, 7)), ((6, 6), (4, 4)), ((3, 5), (6, 8))])
@pytest.mark.parametrize("antialias", [True, False])
def test_resize_matches_timm(old, new, antialias):
    table = torch.randn(1, 1 + old[0] * old[1], 6, generator=torch.Generator().manual_seed(0))
    got = md.resize_position_table(table, new, old_grid=old, antialias=antialias)
    expected = timm_resample(table, new, old, antialias=antialias)
    assert isinstance(got, torch.Tensor) and got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=0, atol=0)


@pytest.mark.parametrize(("antialias", "a", "renormalise"), [(False, -0.75, False), (True, -0.5, True)])
def test_resize_upsampling_is_the_bicubic_formula(antialias, a, renormalise):
    grid = np.random.default_rng(3).normal(size=(5, 5))
    table = np.concatenate([np.zeros((1, 1)), grid.reshape(25, 1)])
    got = md.resize_position_table(table, 8, antialias=antialias)[1:, 0].reshape(8, 8)
    w = bicubic_matrix(5, 8, a, renormalise=renormalise)
    np.testing.assert_allclose(got, w @ grid @ w.T, atol=1e-5)  # float32 inside, as timm
    assert got.dtype == np.float64
    assert np.array_equal(md.resize_position_table(table, 8)[0], table[0])  # the class token is kept


def test_resize_rejects_what_it_cannot_read():
    with pytest.raises(ValueError, match="not a square"):
        md.resize_position_table(np.zeros((1 + 12, 4)), 6)
    with pytest.raises(ValueError, match="old_grid"):
        md.resize_position_table(np.zeros((1 + 12, 4)), 6, old_grid=(3, 5))


# --- M-RoPE ----------------------------------------------------------------------------------


def hf_position_ids(model_cls, segments, merge=2, *, with_delta=False, tokens_per_second=2, second_per_grid_ts=None):
    """transformers' get_rope_index on the sequence `segments` describes (a stub carries the config);
    with_delta: also the mrope_position_deltas it returns (where generated tokens continue).
    Qwen2.5-VL's also takes tokens_per_second (its vision config) and second_per_grid_ts (a float32 tensor, as
    its processor hands it over)."""
    vision = types.SimpleNamespace(spatial_merge_size=merge, tokens_per_second=tokens_per_second)
    stub = types.SimpleNamespace(config=types.SimpleNamespace(vision_config=vision))
    stub.get_vision_position_ids = types.MethodType(model_cls.get_vision_position_ids, stub)
    token_types, images, videos = [], [], []
    for item in segments:
        if isinstance(item, int):
            token_types += [0] * item
        else:
            kind, t, h, w = item
            token_types += [1 if kind == "image" else 2] * (t * h * w // merge**2)
            (images if kind == "image" else videos).append([t, h, w])
    types_ = torch.tensor([token_types])
    grids = (torch.tensor(images) if images else None, torch.tensor(videos) if videos else None)
    if model_cls is Qwen2_5_VLModel:
        seconds = None if second_per_grid_ts is None else torch.tensor(second_per_grid_ts, dtype=torch.float32)
        ids, deltas = model_cls.get_rope_index(stub, torch.zeros_like(types_), types_, *grids, seconds)
    else:
        ids, deltas = model_cls.get_rope_index(stub, torch.zeros_like(types_), types_, *grids)
    return (ids[:, 0].numpy(), int(deltas[0, 0])) if with_delta else ids[:, 0].numpy()


def released_position_ids(segments, merge=2, *, tokens_per_second=None, second_per_grid_ts=None):
    """The get_rope_index released with Qwen2-VL and Qwen2.5-VL (transformers 4.x up to 5.2), transcribed:
    every piece starts at st_idx = llm_pos_ids_list[-1].max() + 1; Qwen2.5-VL's time ids are
    (arange(t) * second_per_grid_t * tokens_per_second).long(). (Its later 4.x versions first cast
    second_per_grid_t to int64; the tests below use whole seconds there.)"""
    pieces, videos = [], iter(second_per_grid_ts or [])
    for item in segments:
        st_idx = int(pieces[-1].max()) + 1 if pieces else 0
        if isinstance(item, int):
            pieces.append(torch.arange(item).view(1, -1).expand(3, -1) + st_idx)
            continue
        kind, t, h, w = item
        h, w = h // merge, w // merge
        second_per_grid_t = next(videos) if kind == "video" and tokens_per_second else 0 if tokens_per_second else 1
        scale = tokens_per_second if tokens_per_second else 1
        time = (torch.arange(t).view(-1, 1).expand(-1, h * w) * second_per_grid_t * scale).long().flatten()
        h_index = torch.arange(h).view(1, -1, 1).expand(t, -1, w).flatten()
        w_index = torch.arange(w).view(1, 1, -1).expand(t, h, -1).flatten()
        pieces.append(torch.stack([time, h_index, w_index]) + st_idx)
    return torch.cat(pieces, dim=1).numpy()


@st.composite
def sequences(draw, model):
    """(merge, segments): text and grids; two grids of one kind always have text between them, as in
    real prompts (vision_start / vision_end tokens), else transformers would read them as one group."""
    merge = draw(st.sampled_from([1, 2]))
    items = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["image", "video"]))
        t = 1 if kind == "image" or model == "qwen3_vl" else draw(st.integers(1, 6))
        h, w = (merge * draw(st.integers(1, 4)) for _ in range(2))
        same_kind_before = items and not isinstance(items[-1], int) and items[-1][0] == kind
        if not items or same_kind_before or draw(st.booleans()):
            items.append(draw(st.integers(1, 6)))
        items.append((kind, t, h, w))
    if draw(st.booleans()):
        items.append(draw(st.integers(1, 6)))
    return merge, items


@DRAWN
@given(sequences("qwen2_vl"))
def test_position_ids_match_qwen2_vl(drawn):
    merge, segments = drawn
    # the default: the released code's rule (one past the largest id)
    ours = md.mrope_position_ids(segments, spatial_merge_size=merge)
    np.testing.assert_array_equal(ours, released_position_ids(segments, merge))
    # by name: transformers 5.24's
    ours = md.mrope_position_ids(segments, spatial_merge_size=merge, text_after="grid_side")
    theirs, delta = hf_position_ids(Qwen2VLModel, segments, merge, with_delta=True)
    np.testing.assert_array_equal(ours, theirs)
    assert md.mrope_rope_delta(ours) == delta


@DRAWN
@given(sequences("qwen2_vl"), st.lists(st.sampled_from([0.5, 1.0, 2.0, 3.0, 4.0, 24.0]), min_size=5, max_size=5),
       st.sampled_from([1, 2, 4]))  # fmt: skip
def test_qwen2_5_vl_absolute_time_matches_transformers(drawn, fps, tokens_per_second):
    merge, segments = drawn
    videos = sum(not isinstance(item, int) and item[0] == "video" for item in segments)
    seconds = [2 / f for f in fps[:videos]]  # temporal_patch_size / fps, as Qwen2.5-VL's processor computes it
    kwargs = {"spatial_merge_size": merge, "model": "qwen2_5_vl", "tokens_per_second": tokens_per_second,
              "second_per_grid_ts": seconds}  # fmt: skip
    ours = md.mrope_position_ids(segments, text_after="grid_side", **kwargs)
    theirs, delta = hf_position_ids(Qwen2_5_VLModel, segments, merge, with_delta=True,
                                    tokens_per_second=tokens_per_second, second_per_grid_ts=seconds)  # fmt: skip
    np.testing.assert_array_equal(ours, theirs)
    assert md.mrope_rope_delta(ours) == delta
    released = md.mrope_position_ids(segments, **kwargs)
    if all(float(s).is_integer() for s in seconds):  # where the released code's two versions agree
        expected = released_position_ids(segments, merge, tokens_per_second=tokens_per_second,
                                          second_per_grid_ts=seconds)  # fmt: skip
        np.testing.assert_array_equal(released, expected)
    # the two rules agree on every id up to the first text after a grid, and on the grids' own layout
    first = next((i for i, item in enumerate(segments) if not isinstance(item, int)), None)
    if first is not None:
        n = sum(
            item if isinstance(item, int) else item[1] * item[2] * item[3] // merge**2 for item in segments[: first + 1]
        )
        np.testing.assert_array_equal(released[:, :n], ours[:, :n])


def test_qwen2_5_vl_default_seconds_and_rate_are_transformers_defaults():
    segments = [3, ("video", 4, 4, 6), 2, ("image", 1, 4, 4), 1]
    ours = md.mrope_position_ids(segments, model="qwen2_5_vl", text_after="grid_side")
    # transformers 5.24: second_per_grid_ts None -> 1 per video; the published configs' tokens_per_second is 2
    np.testing.assert_array_equal(ours, hf_position_ids(Qwen2_5_VLModel, segments, tokens_per_second=2))
    assert ours[0, 3 : 3 + 24].tolist() == [3] * 6 + [5] * 6 + [7] * 6 + [9] * 6  # 2 ids a second, 1 s a patch
    with pytest.raises(ValueError, match="second_per_grid_ts"):
        md.mrope_position_ids(segments, model="qwen2_5_vl", second_per_grid_ts=[1.0, 2.0])
    with pytest.raises(ValueError, match="qwen2_5_vl"):
        md.mrope_position_ids(segments, tokens_per_second=2)


@DRAWN
@given(sequences("qwen3_vl"))
def test_position_ids_match_qwen3_vl(drawn):
    merge, segments = drawn
    ours = md.mrope_position_ids(segments, spatial_merge_size=merge, model="qwen3_vl")
    theirs, delta = hf_position_ids(Qwen3VLModel, segments, merge, with_delta=True)
    np.testing.assert_array_equal(ours, theirs)
    assert md.mrope_rope_delta(ours) == delta
    # every temporal patch has t = 1, so the two rules give the same ids
    np.testing.assert_array_equal(ours, md.mrope_position_ids(segments, spatial_merge_size=merge, model="qwen3_vl",
                                                              text_after="grid_side"))  # fmt: skip


def test_text_after_a_long_video():
    # 6 temporal patches of a 2 x 2 merged grid from position 3: the released code continues the prompt's
    # text at one past the largest id, 3 + 6; transformers 5.24 at 3 + 2
    segments = [3, ("video", 6, 4, 4), 2]
    ids = md.mrope_position_ids(segments, text_after="grid_side")
    assert ids[:, -2].tolist() == [5, 5, 5]
    assert md.mrope_position_ids(segments)[:, -2].tolist() == [9, 9, 9]
    np.testing.assert_array_equal(ids, hf_position_ids(Qwen2VLModel, segments))
    # what transformers 5.x generates after this prompt continues one past its largest id (8), not at 7
    theirs, delta = hf_position_ids(Qwen2VLModel, segments, with_delta=True)
    assert md.mrope_rope_delta(ids) == delta and ids.shape[1] + delta == 9
    # they differ exactly when t > max(h, w) / m
    for t, h, w in itertools.product(range(1, 6), (2, 4, 6), (2, 4, 6)):
        case = [2, ("video", t, h, w), 1]
        same = np.array_equal(md.mrope_position_ids(case), md.mrope_position_ids(case, text_after="grid_side"))
        assert same == (t <= max(h, w) // 2)


def test_text_after_a_qwen2_5_vl_video_lands_inside_its_time():
    # 32 frames of 640 x 360 at 2 fps: 16 temporal patches of 1 s, 26 x 46 patches (364 x 644 pixels)
    segments = [5, ("video", 16, 26, 46), 4]
    kwargs = {"model": "qwen2_5_vl", "second_per_grid_ts": [1.0]}
    new = md.mrope_position_ids(segments, text_after="grid_side", **kwargs)
    old = md.mrope_position_ids(segments, **kwargs)
    video_time = np.unique(new[0, 5:-4])
    assert video_time.tolist() == list(range(5, 5 + 31, 2))  # 2 ids a second for 16 seconds
    assert new[0, -4] == 5 + 23 and old[0, -4] == 5 + 31  # merged grid 13 x 23; time reached 35
    assert video_time.min() < new[0, -4] < video_time.max()
    np.testing.assert_array_equal(new, hf_position_ids(Qwen2_5_VLModel, segments, second_per_grid_ts=[1.0]))


def test_rope_delta_rejects_what_is_not_a_prompts_ids():
    with pytest.raises(ValueError, match="position_ids"):
        md.mrope_rope_delta(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="position_ids"):
        md.mrope_rope_delta(np.zeros((3, 0)))


def test_pair_axes():
    axes = md.mrope_pair_axes(64, [16, 24, 24])
    assert axes[:16].tolist() == [0] * 16 and axes[16:40].tolist() == [1] * 24 and axes[40:].tolist() == [2] * 24
    inter = md.mrope_pair_axes(64, [24, 20, 20], interleaved=True)
    assert np.bincount(inter).tolist() == [24, 20, 20]
    assert inter[:6].tolist() == [0, 1, 2, 0, 1, 2] and inter[60:].tolist() == [0, 0, 0, 0]
    with pytest.raises(ValueError, match="mrope_section"):
        md.mrope_pair_axes(64, [16, 24, 25])


@DRAWN
@given(sequences("qwen2_vl"), st.sampled_from([([4, 6, 6], 32), ([2, 3, 3], 16), ([16, 24, 24], 128)]),
       st.sampled_from([1e4, 1e6]), st.booleans())  # fmt: skip
def test_rotation_matches_transformers(drawn, section_dim, base, interleaved):
    section, head_dim = section_dim
    merge, segments = drawn
    ids = md.mrope_position_ids(segments, spatial_merge_size=merge)
    rope = {"rope_type": "default", "rope_theta": base, "mrope_section": section}
    if interleaved:
        config = Qwen3VLTextConfig(
            hidden_size=2 * head_dim, num_attention_heads=2, head_dim=head_dim, rope_parameters=rope
        )
        rotary = Qwen3VLTextRotaryEmbedding(config)
    else:
        config = Qwen2VLTextConfig(hidden_size=2 * head_dim, num_attention_heads=2, rope_parameters=rope)
        rotary = Qwen2VLRotaryEmbedding(config)
    cos, sin = rotary(torch.zeros(1), torch.from_numpy(ids)[:, None, :])
    angles = md.mrope_angles(ids, pe_lib.rope_frequencies(head_dim, base=base), section, interleaved=interleaved)
    # float32 angles in transformers: up to about 1e-7 * the largest angle
    np.testing.assert_allclose(cos[0, :, : head_dim // 2].numpy(), np.cos(angles), atol=2e-5)
    np.testing.assert_allclose(sin[0, :, head_dim // 2 :].numpy(), np.sin(angles), atol=2e-5)
    x = torch.randn(1, 1, ids.shape[1], head_dim, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    hf = (
        x * cos.double()[:, None]
        + torch.cat([-x[..., head_dim // 2 :], x[..., : head_dim // 2]], -1) * sin.double()[:, None]
    )
    torch.testing.assert_close(md.apply_angles(x, angles[None, None], layout="half"), hf, atol=1e-4, rtol=0)


def test_text_alone_is_plain_rope():
    ids = md.mrope_position_ids([7])
    theta = pe_lib.rope_frequencies(16)
    np.testing.assert_array_equal(md.mrope_angles(ids, theta, [2, 3, 3]), np.arange(7)[:, None] * theta)
    np.testing.assert_array_equal(
        md.mrope_angles(np.arange(7), theta, [2, 3, 3], interleaved=True), np.arange(7)[:, None] * theta
    )


@pytest.mark.parametrize(
    ("segments", "kwargs", "match"),
    [
        ([3, ("image", 2, 4, 4)], {}, "t=1"),
        ([3, ("video", 2, 4, 4)], {"model": "qwen3_vl"}, "temporal patch"),
        ([3, ("image", 1, 3, 4)], {}, "spatial_merge_size"),
        ([3, ("audio", 1, 2, 2)], {}, "segments"),
        ([0], {}, "text segment"),
    ],
)
def test_position_ids_reject_bad_segments(segments, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        md.mrope_position_ids(segments, **kwargs)
