"""pe_lib.omni_positions against transformers 5.24's get_rope_index of Qwen2.5-Omni and Qwen3-Omni, on drawn prompts.

transformers' method is called on a stand-in object that carries what it reads (the special token ids, the
config's position_id_per_seconds and seconds_per_chunk, spatial_merge_size, the audio encoder's window): the
prompt's tokens are laid out as each processor lays them out, and audio lengths are fed in as mel frames that
the model's own formula turns into the drawn number of audio tokens.
"""

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import (
    Qwen2_5OmniPreTrainedModelForConditionalGeneration as Qwen25,
)
from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import (
    Qwen3OmniMoePreTrainedModelForConditionalGeneration as Qwen3,
)
from transformers.models.qwen3_omni_moe.modeling_qwen3_omni_moe import _get_feat_extract_output_lengths

from pe_lib import omni_positions as op

DRAWN = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
IDS = SimpleNamespace(vision_start=151652, vision_end=151653, audio_start=151647, audio_end=151648,
                      image=151655, video=151656, audio=151646, text=100)  # fmt: skip


def audio_frames(tokens, model):
    """Mel frames that the model's audio encoder turns into `tokens` tokens (the smallest such count)."""
    for frames in range(1, 200 * tokens + 200):
        if model == "qwen2_5_omni":
            got = ((frames - 1) // 2 + 1 - 2) // 2 + 1
        else:
            got = int(_get_feat_extract_output_lengths(torch.tensor(frames), 50))
        if got == tokens:
            return frames
    raise ValueError(tokens)


def theirs(segments, model, per_second, chunk_seconds=2, m=2):
    config = SimpleNamespace(
        vision_start_token_id=IDS.vision_start, vision_end_token_id=IDS.vision_end,
        audio_start_token_id=IDS.audio_start, audio_end_token_id=IDS.audio_end, image_token_id=IDS.image,
        video_token_id=IDS.video, audio_token_id=IDS.audio, position_id_per_seconds=per_second,
        seconds_per_chunk=chunk_seconds, audio_config=SimpleNamespace(n_window=50),
    )  # fmt: skip
    cls = Qwen25 if model == "qwen2_5_omni" else Qwen3
    names = ("get_rope_index", "get_llm_pos_ids_for_vision", "get_chunked_index")
    stub = type("Stub", (), {n: getattr(cls, n) for n in names if hasattr(cls, n)})()
    stub.config, stub.spatial_merge_size = config, m
    ids, images, videos, seconds, audios = [], [], [], [], []
    for item in segments:
        if isinstance(item, int):
            ids += [IDS.text] * item
            continue
        kind = item[0]
        if kind == "audio":
            audios.append(audio_frames(item[1], model))
            ids += [IDS.audio_start] + [IDS.audio] * item[1] + [IDS.audio_end]
            continue
        grid, tokens = list(item[1:4]), item[1] * item[2] * item[3] // m**2
        if kind == "image":
            images.append(grid)
            ids += [IDS.vision_start] + [IDS.image] * tokens + [IDS.vision_end]
        elif kind == "video":
            videos.append(grid)
            seconds.append(item[4])
            ids += [IDS.vision_start] + [IDS.video] * tokens + [IDS.vision_end]
        else:
            videos.append(grid)
            seconds.append(item[4])
            audios.append(audio_frames(item[5], model))
            ids += [IDS.vision_start, IDS.audio_start] + [IDS.video] * tokens + [IDS.audio] * item[5]
            ids += [IDS.audio_end, IDS.vision_end]
    input_ids = torch.tensor([ids])
    position_ids, delta = stub.get_rope_index(
        input_ids,
        torch.tensor(images) if images else None,
        torch.tensor(videos) if videos else None,
        torch.ones_like(input_ids),
        any(not isinstance(s, int) and s[0] == "video+audio" for s in segments),
        torch.tensor(audios) if audios else None,
        torch.tensor(seconds) if seconds else None,
    )
    return position_ids[:, 0].double().numpy(), float(delta.reshape(-1)[0])


grids = st.tuples(st.integers(1, 4), st.sampled_from([2, 4, 6]), st.sampled_from([2, 4]))
seconds = st.sampled_from([0.5, 1.0, 2.0, 2 / 3, 0.8, 4.0])
segment = st.one_of(
    st.integers(1, 5),
    st.builds(lambda g: ("image", 1, g[1], g[2]), grids),
    st.builds(lambda g, s: ("video", *g, s), grids, seconds),
    st.builds(lambda n: ("audio", n), st.integers(1, 60)),
    st.builds(lambda g, s, n: ("video+audio", *g, s, n), grids, seconds, st.integers(1, 90)),
)


@DRAWN
@given(
    segments=st.lists(segment, min_size=1, max_size=5),
    model=st.sampled_from(op.OMNI_MODELS),
    per_second=st.sampled_from([25, 13, 50]),
)
def test_position_ids_equal_transformers_get_rope_index(segments, model, per_second):
    kinds = {s[0] for s in segments if not isinstance(s, int)}
    if {"video", "video+audio"} <= kinds:
        with pytest.raises(ValueError, match="use_audio_in_video"):
            op.omni_position_ids(segments, model=model, position_id_per_seconds=per_second)
        return
    if not kinds & {"image", "video", "video+audio"}:  # transformers' get_rope_index takes its plain branch
        ids = op.omni_position_ids(segments, model=model, position_id_per_seconds=per_second)
        assert (ids == np.arange(ids.shape[1])).all()
        return
    mine = op.omni_position_ids(segments, model=model, position_id_per_seconds=per_second)
    expected, delta = theirs(segments, model, per_second)
    assert mine.shape == expected.shape
    np.testing.assert_array_equal(mine, expected)
    assert op.omni_rope_delta(mine) == pytest.approx(delta)


def test_time_ids_count_seconds_not_frames():
    # a video of 4 temporal patches of 2 s (one merged token each) with 200 audio tokens (8 s at 25 a second):
    # both start tokens get id 0, then 2-second chunks: the chunk's video token, then its 50 audio tokens
    ids = op.omni_position_ids([("video+audio", 4, 2, 2, 2.0, 200)], model="qwen2_5_omni")[0]
    assert ids[:3].tolist() == [0, 0, 1] and ids[3:53].tolist() == list(range(1, 51))
    assert ids[53] == 51 and ids[54:104].tolist() == list(range(51, 101))  # the frame at 2 s sits beside audio at 2 s
    assert ids[-2:].tolist() == [201, 201]  # two end tokens, one id
    frames = op.omni_position_ids([("video", 4, 2, 2, 2.0)], model="qwen2_5_omni")[0, 1:5]
    assert np.diff(frames).tolist() == [50, 50, 50]  # 2 s per patch x 25 ids per second
    # Qwen3-Omni keeps fractions: 2/3 s per patch at 13 ids a second
    frames3 = op.omni_position_ids([("video", 3, 2, 2, 2 / 3)], model="qwen3_omni", position_id_per_seconds=13)[0, 1:4]
    np.testing.assert_allclose(np.diff(frames3), np.float32(2 / 3) * np.float32(13), rtol=1e-6)


def test_bad_segments_are_refused():
    with pytest.raises(ValueError, match="segments must hold"):
        op.omni_position_ids([("picture", 1, 2, 2)])
    with pytest.raises(ValueError, match="multiples of spatial_merge_size"):
        op.omni_position_ids([("image", 1, 3, 2)])
    with pytest.raises(ValueError, match="seconds_per_grid must be > 0"):
        op.omni_position_ids([("video", 1, 2, 2, 0.0)])
    with pytest.raises(TypeError, match="segments must be a non-empty list"):
        op.omni_position_ids("text")
    with pytest.raises(ValueError, match="model must be one of"):
        op.omni_position_ids([3], model="qwen2_vl")
