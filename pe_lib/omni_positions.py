"""Time-aligned M-RoPE: the position ids of Qwen2.5-Omni and Qwen3-Omni, where time counts in seconds (notebook 12).

Qwen2-VL's M-RoPE (pe_lib.multidim) gives each token three ids (time, height, width) and counts a
video's time in frames. The Omni models hear as well as see, so their time id counts in seconds:
`position_id_per_seconds` ids per second. A video frame group at t seconds gets time id
start + t * position_id_per_seconds; an audio token gets one id per token, which is the same clock
when the audio encoder emits position_id_per_seconds tokens a second:

    Qwen2.5-Omni  audio 25 tokens per second (100 mel frames, two stride-2 stages), 25 ids per second;
                  ids are integers (the time id truncated); a video with its own audio is cut into
                  seconds_per_chunk (2 s) chunks: each chunk's video tokens, then its audio tokens.
    Qwen3-Omni    audio 13 tokens per second (13 per 100-frame window); its checkpoints set
                  position_id_per_seconds = 13 (transformers' config class still defaults to 25, the
                  2.5 value); ids are float32, not truncated; a video with audio is merged token by
                  token in time order (a video token first on a tie).

    omni_position_ids(segments, model=, position_id_per_seconds=, seconds_per_chunk=, spatial_merge_size=)
        (3, n) ids of a prompt, as transformers' get_rope_index computes them (tests compare the two)
    omni_rope_delta(position_ids)   where generated tokens continue (largest id + 1 - n)

Segments: an int (that many text tokens), ("image", t, h, w), ("video", t, h, w, seconds_per_grid),
("audio", tokens) or ("video+audio", t, h, w, seconds_per_grid, audio_tokens). (t, h, w) is the vision
encoder's patch grid; the language model sees t * (h/m) * (w/m) tokens, m = spatial_merge_size.
seconds_per_grid: the seconds one temporal patch spans (temporal_patch_size / fps). Every segment but
text comes with its start and end tokens (<|vision_start|>, <|audio_start|>, ...), which get ids too:
one of each, two of each for a video with its audio.
"""

import numbers

import numpy as np

from . import _validate

OMNI_MODELS = ("qwen2_5_omni", "qwen3_omni")
KINDS = ("image", "video", "audio", "video+audio")
_SIZES = {"image": 4, "video": 5, "audio": 2, "video+audio": 6}


def _parse(item, m):
    """A segment checked: ("text", n) or (kind, *numbers)."""
    if isinstance(item, numbers.Integral) and not isinstance(item, bool):
        return ("text", _validate.positive_int("a text segment's length", item))
    if not isinstance(item, tuple | list) or not item or item[0] not in KINDS or len(item) != _SIZES[item[0]]:
        raise ValueError(
            "segments must hold ints (text), ('image', t, h, w), ('video', t, h, w, seconds_per_grid), "
            f"('audio', tokens) or ('video+audio', t, h, w, seconds_per_grid, audio_tokens); got {item!r}"
        )
    kind = item[0]
    if kind == "audio":
        return (kind, _validate.positive_int("audio tokens", item[1]))
    t, h, w = (_validate.positive_int(f"{kind} grid", v) for v in item[1:4])
    if h % m or w % m:
        raise ValueError(f"{kind} grid (t, h, w)={(t, h, w)}: h and w must be multiples of spatial_merge_size={m}")
    rest = []
    if kind != "image":
        seconds = _validate.finite_real("seconds_per_grid", item[4])
        if seconds <= 0:
            raise ValueError(f"seconds_per_grid must be > 0, got {seconds}")
        rest.append(seconds)
    if kind == "video+audio":
        rest.append(_validate.positive_int("audio tokens", item[5]))
    return (kind, t, h, w, *rest)


def _vision(start, t, h, w, times):
    """(3, t*h*w) ids of a merged grid: time start + times[frame], height start + row, width start + column."""
    frame, row, col = np.meshgrid(np.arange(t), np.arange(h), np.arange(w), indexing="ij")
    return start + np.stack([times[frame.ravel()], row.ravel(), col.ravel()]).astype(np.float64)


def _times(t, seconds, per_second, model):
    """Each temporal patch's time id offset, as transformers forms it in float32 (truncated to int for 2.5)."""
    times = np.arange(t, dtype=np.float32) * np.float32(seconds) * np.float32(per_second)
    return np.trunc(times).astype(np.float64) if model == "qwen2_5_omni" else times.astype(np.float64)


def _line(start, n):
    return np.broadcast_to(start + np.arange(n, dtype=np.float64), (3, n))


def _chunk_bounds(times, per_chunk, start):
    """transformers' get_chunked_index: (begin, end) runs of a time-ordered id row; a run closes at the first
    token whose id - start reaches the next multiple of per_chunk (one check per token, as there)."""
    bounds, begin, current = [], 0, 1
    for i, value in enumerate(times):
        if value - start >= current * per_chunk:
            bounds.append((begin, i))
            begin, current = i, current + 1
    return bounds + [(begin, len(times))]


def _video_with_audio(video, audio, start, model, per_chunk):
    """The pieces of a video with its audio: Qwen2.5-Omni's chunks (each chunk's video, then its audio) or
    Qwen3-Omni's merge in time order (a video token first on a tie), one piece per run as transformers builds them."""
    if model == "qwen2_5_omni":
        video_runs, audio_runs = _chunk_bounds(video[0], per_chunk, start), _chunk_bounds(audio[0], per_chunk, start)
        pieces = []
        for j in range(max(len(video_runs), len(audio_runs))):
            for ids, runs in ((video, video_runs), (audio, audio_runs)):
                if j < len(runs):
                    pieces.append((ids[:, runs[j][0] : runs[j][1]], "video" if ids is video else "audio"))
        return pieces
    pieces, v, a = [], 0, 0
    while v < video.shape[1] and a < audio.shape[1]:
        if video[0, v] <= audio[0, a]:
            pieces.append((video[:, v : v + 1], "video"))
            v += 1
        else:
            pieces.append((audio[:, a : a + 1], "audio"))
            a += 1
    rest = ((video, v, "video"), (audio, a, "audio"))
    return pieces + [(ids[:, k:], kind) for ids, k, kind in rest if k < ids.shape[1]]


def omni_position_ids(segments, *, model="qwen2_5_omni", position_id_per_seconds=25, seconds_per_chunk=2,
                      spatial_merge_size=2, with_kinds=False):  # fmt: skip
    """(3, n) float64 ids (time, height, width) of a prompt, as `model`'s get_rope_index computes them.

    position_id_per_seconds: the config's (Qwen2.5-Omni 25; Qwen3-Omni's checkpoints 13).
    seconds_per_chunk: Qwen2.5-Omni's chunk length for a video with its audio (2). Text, start and end tokens
    get one id in all three rows, one past the largest id of the piece before them (transformers reads the
    last piece only, not the whole prompt); Qwen2.5-Omni gives a video-with-audio's two start tokens one id,
    and its two end tokens one id, Qwen3-Omni counts each. Audio tokens: one id each, counting on. A prompt
    with no image and no video is plain 1-D: 0 .. n-1.
    with_kinds: also return what each token is, (n,) strings: "text", "start", "end", "image", "video", "audio".
    """
    model = _validate.choice("model", model, OMNI_MODELS)
    per_second = _validate.finite_real("position_id_per_seconds", position_id_per_seconds)
    if per_second <= 0:
        raise ValueError(f"position_id_per_seconds must be > 0, got {per_second}")
    chunk_seconds = _validate.finite_real("seconds_per_chunk", seconds_per_chunk)
    if chunk_seconds <= 0:
        raise ValueError(f"seconds_per_chunk must be > 0, got {chunk_seconds}")
    m = _validate.positive_int("spatial_merge_size", spatial_merge_size)
    if isinstance(segments, str) or not isinstance(segments, list | tuple) or not segments:
        raise TypeError(f"segments must be a non-empty list of segments, got {segments!r}")
    parsed = [_parse(item, m) for item in segments]
    kinds = {p[0] for p in parsed}
    if {"video", "video+audio"} <= kinds:
        raise ValueError(
            "segments mix a video without audio and a video with audio: get_rope_index takes one "
            "use_audio_in_video for the whole prompt"
        )
    two_ids = model == "qwen2_5_omni"
    pieces = []  # (ids (3, k), what the k tokens are)

    def after_last():
        return pieces[-1][0].max() + 1 if pieces else 0.0

    for kind, *args in parsed:
        if kind == "text":
            pieces.append((_line(after_last(), args[0]), "text"))
            continue
        ends = 2 if kind == "video+audio" else 1
        s = after_last()
        pieces += [(_line(s, 1), "start")] * ends if two_ids else [(_line(s, ends), "start")]
        s = s + (1 if two_ids else ends)
        if kind == "audio":
            pieces.append((_line(s, args[0]), "audio"))
        else:
            t, h, w = args[0], args[1] // m, args[2] // m
            video = _vision(s, t, h, w, _times(t, 1.0 if kind == "image" else args[3], per_second, model))
            if kind == "video+audio":
                per_chunk = int(per_second * chunk_seconds)
                pieces += _video_with_audio(video, _line(s, args[4]).copy(), s, model, per_chunk)
            else:
                pieces.append((video, kind))
        e = after_last()
        pieces += [(_line(e, 1), "end")] * ends if two_ids else [(_line(e, ends), "end")]
    ids = np.concatenate([piece for piece, _ in pieces], axis=1)
    if not kinds & {"image", "video", "video+audio"}:
        ids = _line(0, ids.shape[1]).copy()
    if not with_kinds:
        return ids
    return ids, np.concatenate([np.full(piece.shape[1], what) for piece, what in pieces])


def omni_rope_delta(position_ids):
    """get_rope_index's mrope_position_deltas for one prompt: its largest id + 1 - its length."""
    positions = _validate.real_array("position_ids", position_ids, 2)
    if positions.shape[0] != 3 or positions.shape[1] == 0:
        raise ValueError(f"position_ids must be a prompt's (3, n) ids with n >= 1, got shape {positions.shape}")
    return float(positions.max()) + 1 - positions.shape[1]
