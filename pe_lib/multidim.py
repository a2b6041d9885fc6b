"""Positions beyond one line of text: image grids and mixed text / image / video sequences (notebook 11).

Two dimensions (a ViT's patch grid, rows r and columns c, in raster order):
    resize_position_table   a learned 2-D table resampled to a new grid, as timm's
                            resample_abs_pos_embed does it (DeiT fine-tunes at 384 px the same way)
    axial_rope_frequencies  RoPE-Axial (Heo et al. 2024, naver-ai/rope-vit): the first half of the
                            head's pairs turns with the column x, the other half with the row y (rope-vit's
                            order; Qwen2-VL's vision tower puts the row's pairs first)
    mixed_rope_frequencies  RoPE-Mixed's initialisation: each pair turns with fx * x + fy * y, in a
                            random direction per head; the model then learns fx, fy per head and per layer
    rope_2d_angles          the angles of every pair at every grid position; apply_angles turns x by them
M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL): every token has three positions (time, height, width); each
frequency pair reads one of them:
    mrope_position_ids      the (3, n) ids of a sequence of text, images and videos, as the released code
                            computes them (and, by name, as transformers 5.3+ does: text_after)
    mrope_rope_delta        where the tokens generated after a prompt continue (get_rope_index's delta)
    mrope_pair_axes         which of the three a pair reads: Qwen2-VL's consecutive mrope_section
                            chunks, or Qwen3-VL's interleaved allocation (T, H, W, T, H, W, ...)
    mrope_angles            the (n, pairs) angles those choices give; apply_angles turns x by them
"""

import numbers

import numpy as np
import torch

from . import _validate

MODALITIES = ("image", "video")
MROPE_MODELS = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
TEXT_AFTER = ("max_plus_one", "grid_side")
QWEN2_5_VL_TOKENS_PER_SECOND = 2  # vision_config.tokens_per_second of the published Qwen2.5-VL configs
LAYOUTS = ("interleaved", "half")


# --- two dimensions -------------------------------------------------------------------------


def grid_positions(height, width):
    """(rows, cols): two int arrays of height * width, raster order (row by row), as a ViT flattens patches."""
    height, width = _validate.positive_int("height", height), _validate.positive_int("width", width)
    index = np.arange(height * width)
    return index // width, index % width


def _head_dim_by_4(head_dim):
    head_dim = _validate.positive_int("head_dim", head_dim)
    if head_dim % 4:
        raise ValueError(f"head_dim must be divisible by 4 (pairs for x and pairs for y), got {head_dim}")
    return head_dim


def axial_rope_frequencies(head_dim, *, base=100.0):
    """(head_dim // 2, 2): the (fx, fy) of each pair for RoPE-Axial.

    Pairs 0 .. head_dim/4 - 1 turn with x at base**(-4t/head_dim); the next head_dim/4 pairs turn with
    y at the same frequencies (rope-vit's compute_axial_cis; its default base is 100).
    """
    head_dim, base = _head_dim_by_4(head_dim), _validate.base(base)
    magnitude = base ** (-np.arange(0, head_dim, 4)[: head_dim // 4] / head_dim)
    zero = np.zeros_like(magnitude)
    return np.stack([np.concatenate([magnitude, zero]), np.concatenate([zero, magnitude])], axis=-1)


def mixed_rope_frequencies(head_dim, num_heads, *, base=10.0, seed=0):
    """(num_heads, head_dim // 2, 2): RoPE-Mixed's initial (fx, fy), as rope-vit's init_random_2d_freqs.

    Per head an angle a is drawn uniformly in [0, 2 pi); pair t < head_dim/4 points along a, pair
    head_dim/4 + t along a + pi/2, both with length base**(-4t/head_dim) (default base 10). Training then
    moves fx and fy freely: a pair may turn with a diagonal mix of x and y.
    """
    head_dim, base = _head_dim_by_4(head_dim), _validate.base(base)
    num_heads = _validate.positive_int("num_heads", num_heads)
    angles = np.random.default_rng(_validate.count("seed", seed)).uniform(0.0, 2 * np.pi, size=(num_heads, 1))
    magnitude = base ** (-np.arange(0, head_dim, 4)[: head_dim // 4] / head_dim)
    direction = np.concatenate([np.broadcast_to(angles, (num_heads, magnitude.size))] * 2, axis=1)
    direction[:, magnitude.size :] += np.pi / 2
    length = np.concatenate([magnitude, magnitude])
    return np.stack([length * np.cos(direction), length * np.sin(direction)], axis=-1)


def rope_2d_angles(rows, cols, frequencies):
    """Angles (..., n, pairs): rows * fy + cols * fx for every position and pair.

    rows, cols: 1-D, the same length n (grid_positions gives a grid's); frequencies (..., pairs, 2)
    holds (fx, fy) per pair (axial_rope_frequencies, mixed_rope_frequencies, or learned ones).
    """
    rows, cols = _validate.real_array("rows", rows, 1), _validate.real_array("cols", cols, 1)
    if rows.shape != cols.shape:
        raise ValueError(f"rows and cols must have the same length, got {rows.size} and {cols.size}")
    frequencies = _validate.as_numpy(frequencies).astype(np.float64)
    if frequencies.ndim < 2 or frequencies.shape[-1] != 2 or not np.all(np.isfinite(frequencies)):
        raise ValueError(f"frequencies must be finite, shape (..., pairs, 2) of (fx, fy), got {frequencies.shape}")
    fx, fy = frequencies[..., None, :, 0], frequencies[..., None, :, 1]
    return cols[:, None] * fx + rows[:, None] * fy


def apply_angles(x, angles, *, layout="interleaved"):
    """x (..., n, head_dim) turned pair by pair by angles (..., n, head_dim // 2); NumPy or torch, like x.

    layout "interleaved" pairs features (0, 1), (2, 3), ... (rope-vit's complex numbers); "half" pairs
    (i, i + head_dim/2) (transformers' rotate_half, as Qwen2-VL runs it). Angles in float64.
    """
    layout = _validate.choice("layout", layout, LAYOUTS)
    is_torch = isinstance(x, torch.Tensor)
    array = _validate.as_numpy(x)
    if array.ndim < 2 or array.shape[-1] % 2:
        raise ValueError(f"x must be (..., n, head_dim) with an even head_dim, got shape {array.shape}")
    angles = _validate.as_numpy(angles).astype(np.float64)
    if angles.shape[-2:] != (array.shape[-2], array.shape[-1] // 2):
        raise ValueError(f"angles must end in (n, head_dim // 2) = {(array.shape[-2], array.shape[-1] // 2)}, "
                         f"got shape {angles.shape}")  # fmt: skip
    dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.float64
    array = array.astype(np.float64)
    a, b = (array[..., 0::2], array[..., 1::2]) if layout == "interleaved" else np.split(array, 2, axis=-1)
    cos, sin = np.cos(angles), np.sin(angles)
    turned = (a * cos - b * sin, a * sin + b * cos)
    if layout == "interleaved":
        out = np.stack(turned, axis=-1).reshape(*turned[0].shape[:-1], -1)
    else:
        out = np.concatenate(turned, axis=-1)
    if is_torch:
        return torch.from_numpy(out).to(x.dtype if x.is_floating_point() else torch.float64)
    return out.astype(dtype)


def resize_position_table(table, new_grid, *, old_grid=None, num_prefix_tokens=1, mode="bicubic", antialias=True):
    """A ViT's learned position table resampled to a new patch grid, as timm's resample_abs_pos_embed does it.

    table: (num_prefix_tokens + H * W, C) or (1, ..., C) (NumPy or torch; the result is the same kind).
    The prefix rows (the class token) are kept; the H x W grid of rows is resampled with
    torch.nn.functional.interpolate(mode, antialias, align_corners=False) in float32 (timm's defaults:
    bicubic, antialias=True; DeiT's fine-tuning script calls bicubic without antialias). antialias changes
    the result when enlarging too: with it, torch uses PIL's bicubic kernel (a = -0.5, taps past the edge
    dropped and the rest renormalised), without it Keys' kernel (a = -0.75, the edge rows repeated); when
    shrinking it also widens the kernel. old_grid defaults to the square grid the table holds.
    """
    mode = _validate.choice("mode", mode, ("bicubic", "bilinear", "nearest"))
    antialias = _validate.flag("antialias", antialias)
    num_prefix_tokens = _validate.count("num_prefix_tokens", num_prefix_tokens)
    is_torch = isinstance(table, torch.Tensor)
    array = _validate.as_numpy(table)
    batched = array.ndim == 3
    if batched and array.shape[0] != 1:
        raise ValueError(f"table must be (tokens, C) or (1, tokens, C), got shape {array.shape}")
    rows = array[0] if batched else array
    if rows.ndim != 2:
        raise ValueError(f"table must be (tokens, C) or (1, tokens, C), got shape {array.shape}")
    new_grid = _grid("new_grid", new_grid)
    cells = rows.shape[0] - num_prefix_tokens
    if old_grid is None:
        side = int(round(max(cells, 0) ** 0.5))
        if side * side != cells or cells == 0:
            raise ValueError(f"table holds {cells} grid rows after {num_prefix_tokens} prefix rows, not a square: "
                             "pass old_grid=(H, W)")  # fmt: skip
        old_grid = (side, side)
    old_grid = _grid("old_grid", old_grid)
    if old_grid[0] * old_grid[1] != cells:
        raise ValueError(f"old_grid={old_grid} holds {old_grid[0] * old_grid[1]} rows, the table has {cells} "
                         f"after {num_prefix_tokens} prefix rows")  # fmt: skip
    grid = torch.from_numpy(rows[num_prefix_tokens:].astype(np.float32)).reshape(1, *old_grid, -1).permute(0, 3, 1, 2)
    align = None if mode == "nearest" else False
    resized = torch.nn.functional.interpolate(
        grid, size=new_grid, mode=mode, antialias=antialias and mode != "nearest", align_corners=align
    )
    resized = resized.permute(0, 2, 3, 1).reshape(new_grid[0] * new_grid[1], -1).numpy()
    out = np.concatenate([rows[:num_prefix_tokens].astype(np.float32), resized]).astype(rows.dtype)
    out = out[None] if batched else out
    return torch.from_numpy(out).to(table.dtype) if is_torch else out


def _grid(name, value):
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (value, value)
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{name} must be an int or a pair (H, W) of positive ints, got {value!r}")
    return tuple(_validate.positive_int(name, side) for side in value)


# --- M-RoPE -----------------------------------------------------------------------------------


def _segment(item, model, spatial_merge_size):
    """A segment as ("text", n) or (modality, t, h, w) with its merged grid checked."""
    if isinstance(item, numbers.Integral) and not isinstance(item, bool):
        return ("text", _validate.positive_int("a text segment's length", item))
    if not isinstance(item, tuple | list) or len(item) != 4 or item[0] not in MODALITIES:
        raise ValueError(f"segments must hold ints (text lengths) or ('image' | 'video', t, h, w), got {item!r}")
    kind, t, h, w = item[0], *(_validate.positive_int(f"{item[0]} grid", v) for v in item[1:])
    if h % spatial_merge_size or w % spatial_merge_size:
        raise ValueError(f"{kind} grid (t, h, w)={(t, h, w)}: h and w must be multiples of "
                         f"spatial_merge_size={spatial_merge_size}")  # fmt: skip
    if kind == "image" and t != 1:
        raise ValueError(f"an image's grid has t=1, got {(t, h, w)}")
    if model == "qwen3_vl" and t != 1:
        raise ValueError(f"Qwen3-VL gives each temporal patch of a video (2 frames) its own segment, a timestamp's "
                         f"text between them: got t={t}; write it as ('video', 1, {h}, {w}) segments separated by "
                         "text")  # fmt: skip
    return (kind, t, h, w)


def mrope_position_ids(segments, *, spatial_merge_size=2, model="qwen2_vl", text_after="max_plus_one",
                       tokens_per_second=None, second_per_grid_ts=None):  # fmt: skip
    """(3, n) int64 position ids (time, height, width) for a sequence, as Qwen's released code computes them.

    segments: a list of ints (that many text tokens) and (modality, t, h, w) tuples, modality "image" or
    "video", (t, h, w) the vision encoder's patch grid (image_grid_thw / video_grid_thw: t temporal patches of
    temporal_patch_size = 2 frames each, h x w patches); the language model sees (h / m) * (w / m) tokens per
    temporal patch, m = spatial_merge_size (2 in Qwen2-VL, Qwen2.5-VL and Qwen3-VL).
    Text tokens get the same id in all three rows, counting on; a grid starting at position s gets height
    s + row, width s + column and time s + its temporal patch k (Qwen2-VL, Qwen3-VL), or for a Qwen2.5-VL video
    s + floor(k * tokens_per_second * second_per_grid_t), absolute time: second_per_grid_t seconds per temporal
    patch (temporal_patch_size / fps, as its processor computes it), tokens_per_second ids per second (default
    2, the published configs'). That product is taken in float32, as transformers takes it.
    text_after: where the text after a grid starts.
        "max_plus_one" (default): one past the largest id so far. The rule of the Qwen2-VL paper (section 2.1),
            of the code released with each model (transformers' get_rope_index up to 5.2), the rule the models
            were trained with.
        "grid_side": s + max(h, w) / m, whatever the time ids reached: transformers' get_rope_index from 5.3
            (its refactor into get_vision_position_ids), 5.24 included.
    They differ when a video's time ids pass its merged side: for Qwen2-VL when t > max(h, w) / m, for
    Qwen2.5-VL when floor((t - 1) * tokens_per_second * second_per_grid_t) >= max(h, w) / m (a 16-second clip
    at 2 ids a second reaches 30). With t = 1 (every image, every Qwen3-VL temporal patch) they agree. Tokens
    generated after the prompt continue one past its largest id under both (mrope_rope_delta).
    model "qwen3_vl" takes a video's temporal patches one by one (t = 1, text between: their timestamps).
    """
    m = _validate.positive_int("spatial_merge_size", spatial_merge_size)
    model = _validate.choice("model", model, MROPE_MODELS)
    text_after = _validate.choice("text_after", text_after, TEXT_AFTER)
    if isinstance(segments, str) or not isinstance(segments, list | tuple) or not segments:
        raise TypeError(f"segments must be a non-empty list of ints and (modality, t, h, w) tuples, got {segments!r}")
    grids = [_segment(item, model, m) for item in segments]
    intervals = iter(_time_intervals(grids, model, tokens_per_second, second_per_grid_ts))
    pieces, start = [], 0
    for kind, *grid in grids:
        if kind == "text":
            pieces.append(np.broadcast_to(np.arange(start, start + grid[0]), (3, grid[0])))
            start += grid[0]
            continue
        t, h, w = grid[0], grid[1] // m, grid[2] // m
        steps = (np.arange(t, dtype=np.float32) * next(intervals)).astype(np.int64)  # truncation, as .long()
        time, row, col = np.meshgrid(steps, np.arange(h), np.arange(w), indexing="ij")
        ids = start + np.stack([time.ravel(), row.ravel(), col.ravel()])
        pieces.append(ids)
        start = int(ids.max()) + 1 if text_after == "max_plus_one" else start + max(h, w)
    return np.concatenate(pieces, axis=1).astype(np.int64)


def _time_intervals(grids, model, tokens_per_second, second_per_grid_ts):
    """Per image or video of `grids` (text left out): the float32 step between the time ids of its temporal patches."""
    videos = sum(kind == "video" for kind, *_ in grids)
    if model != "qwen2_5_vl":
        for name, value in (("tokens_per_second", tokens_per_second), ("second_per_grid_ts", second_per_grid_ts)):
            if value is not None:
                raise ValueError(f"{name} is Qwen2.5-VL's (absolute time ids): pass model='qwen2_5_vl', got "
                                 f"model={model!r} and {name}={value!r}")  # fmt: skip
        return [np.float32(1.0)] * sum(kind != "text" for kind, *_ in grids)
    rate = QWEN2_5_VL_TOKENS_PER_SECOND if tokens_per_second is None else tokens_per_second
    if not _validate.finite_real("tokens_per_second", rate) > 0:
        raise ValueError(f"tokens_per_second must be positive, got {rate}")
    seconds = [1.0] * videos if second_per_grid_ts is None else second_per_grid_ts
    if isinstance(seconds, str) or not isinstance(seconds, list | tuple | np.ndarray) or len(seconds) != videos:
        raise ValueError(f"second_per_grid_ts must hold one number per video ({videos} here), got {seconds!r}")
    for value in seconds:
        if not _validate.finite_real("second_per_grid_ts", value) > 0:
            raise ValueError(f"second_per_grid_ts must hold positive seconds, got {value}")
    per_video = iter(np.float32(rate) * np.float32(value) for value in seconds)
    return [next(per_video) if kind == "video" else np.float32(1.0) for kind, *_ in grids if kind != "text"]


def mrope_rope_delta(position_ids):
    """transformers' mrope_position_deltas for one prompt: its largest id + 1 - its length n.

    position_ids: a prompt's (3, n) ids (mrope_position_ids). get_rope_index returns this delta, and
    generation gives the token at sequence index n + k the three ids n + k + delta = largest id + 1 + k:
    what follows the prompt continues one past its largest id, in every transformers release.
    """
    positions = _validate.real_array("position_ids", position_ids, 2)
    if positions.shape[0] != 3 or positions.shape[1] == 0:
        raise ValueError(f"position_ids must be a prompt's (3, n) ids with n >= 1, got shape {positions.shape}")
    return int(positions.max()) + 1 - positions.shape[1]


def mrope_pair_axes(pairs, mrope_section, *, interleaved=False):
    """(pairs,) ints in {0, 1, 2}: whether each frequency pair reads the time, height or width position.

    mrope_section (t, h, w) counts pairs and sums to `pairs` (Qwen2-VL: [16, 24, 24] of 64).
    interleaved=False (Qwen2-VL, Qwen2.5-VL): the first t pairs read time, the next h height, the last w width.
    interleaved=True (Qwen3-VL, [24, 20, 20]): pair j reads height if j % 3 == 1 and j < 3h, width if
    j % 3 == 2 and j < 3w, else time, so every axis gets fast and slow pairs.
    """
    pairs = _validate.positive_int("pairs", pairs)
    interleaved = _validate.flag("interleaved", interleaved)
    section = (
        [_validate.count("mrope_section", s) for s in mrope_section]
        if isinstance(mrope_section, list | tuple)
        else None
    )
    if section is None or len(section) != 3 or sum(section) != pairs:
        raise ValueError(
            f"mrope_section must be three counts (t, h, w) summing to pairs={pairs}, got {mrope_section!r}"
        )
    if not interleaved:
        return np.repeat(np.arange(3), section)
    axes = np.zeros(pairs, dtype=np.int64)
    for axis in (1, 2):
        axes[axis : 3 * section[axis] : 3] = axis
    return axes


def mrope_angles(position_ids, inv_freq, mrope_section, *, interleaved=False):
    """(n, pairs) angles: pair j turns by position_ids[axis_j] * inv_freq[j] (axis_j from mrope_pair_axes).

    position_ids: (3, n) (mrope_position_ids) or (n,) for text alone (all three rows equal: plain RoPE).
    inv_freq: (pairs,), e.g. pe_lib.rope_frequencies(head_dim, base=...).
    """
    positions = _validate.as_numpy(position_ids)
    positions = np.broadcast_to(positions, (3, positions.shape[-1])) if positions.ndim == 1 else positions
    positions = _validate.real_array("position_ids", positions, 2)
    if positions.shape[0] != 3:
        raise ValueError(f"position_ids must be (3, n) or (n,), got shape {positions.shape}")
    inv_freq = _validate.real_array("inv_freq", inv_freq, 1)
    axes = mrope_pair_axes(inv_freq.size, mrope_section, interleaved=interleaved)
    return positions[axes].T * inv_freq
