"""pe_lib.relative against literal transcriptions of the papers' formulas and the properties RoPE, ALiBi, T5 rely on."""

import math
import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pe_lib

FAST = settings(max_examples=50, deadline=None)
seeds = st.integers(0, 2**32 - 1)
halves = st.integers(1, 32)  # head_dim = 2 * half
LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}
LLAMA3["original_max_position_embeddings"] = 8192
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1}
YARN_PAPER = {**YARN, "rope_type": "yarn_paper"}


# --- the formulas, transcribed literally in float64 ----------------------------------------------


def roformer_matrix(m, d, base=10000.0):
    """RoFormer's R^d_{Theta,m}: block diagonal, block i = [[cos m theta_i, -sin m theta_i], [sin, cos]].

    theta_i = base**(-2(i-1)/d) for i = 1..d/2, as the paper indexes them.
    """
    rotation = np.zeros((d, d))
    for i in range(1, d // 2 + 1):
        theta = base ** (-2 * (i - 1) / d)
        c, s = math.cos(m * theta), math.sin(m * theta)
        rotation[2 * i - 2 : 2 * i, 2 * i - 2 : 2 * i] = [[c, -s], [s, c]]
    return rotation


def rotate_half(x):
    """Hugging Face's rotate_half."""
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return np.concatenate((-x2, x1), axis=-1)


def hf_rope(x, positions, base=10000.0):
    """Hugging Face Llama's recipe: inv_freq, emb = cat(freqs, freqs), x * cos + rotate_half(x) * sin."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim))
    freqs = np.outer(np.asarray(positions, dtype=np.float64), inv_freq)
    emb = np.concatenate((freqs, freqs), axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)
    return x * cos + rotate_half(x) * sin


def usual_float32_rope(x, positions, base=10000.0):
    """The same recipe as most torch code runs it: positions and inv_freq in float32, angles in float32."""
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
    freqs = torch.outer(torch.as_tensor(positions, dtype=torch.float32), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    x1, x2 = x[..., : dim // 2], x[..., dim // 2 :]
    return x * emb.cos() + torch.cat((-x2, x1), dim=-1) * emb.sin()


def loop_frequencies(d, base, scaling):
    """theta_i per pair, one pair at a time, as each method's paper or reference code writes it."""
    out = []
    kind = None if scaling is None else scaling["rope_type"]
    for i in range(d // 2):
        theta = base ** (-2 * i / d)
        if kind == "linear":
            theta = theta / scaling["factor"]
        elif kind == "ntk":
            s = scaling["factor"]
            theta = (base * s ** (d / (d - 2))) ** (-2 * i / d)
        elif kind == "yarn_paper":  # the paper's eq. 18-20: gamma linear in r = L / lambda
            s, length = scaling["factor"], scaling["original_max_position_embeddings"]
            beta_fast, beta_slow = scaling.get("beta_fast", 32), scaling.get("beta_slow", 1)
            r = length / (2 * math.pi / theta)
            gamma = min(max((r - beta_slow) / (beta_fast - beta_slow), 0.0), 1.0)
            theta = (1 - gamma) * theta / s + gamma * theta
        elif kind == "llama3":
            s, length = scaling["factor"], scaling["original_max_position_embeddings"]
            low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
            wavelen = 2 * math.pi / theta
            if wavelen < length / high:
                pass
            elif wavelen > length / low:
                theta = theta / s
            else:
                smooth = (length / wavelen - low) / (high - low)
                theta = (1 - smooth) * theta / s + smooth * theta
        out.append(theta)
    if kind == "yarn":  # the reference code's ramp over the pair index
        beta_fast, beta_slow = scaling.get("beta_fast", 32), scaling.get("beta_slow", 1)
        length = scaling["original_max_position_embeddings"]
        return hf_yarn_frequencies(d, base, scaling["factor"], length, beta_fast, beta_slow)
    return np.array(out)


def hf_yarn_frequencies(dim, base, factor, length, beta_fast=32, beta_slow=1):
    """Hugging Face's _compute_yarn_parameters: the ramp is linear in the pair index, between floor/ceil."""

    def find_correction_dim(num_rotations):
        return (dim * math.log(length / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    out = []
    for i in range(dim // 2):
        pos_freq = base ** (2 * i / dim)
        extrapolation_factor = 1 - min(max((i - low) / (high - low), 0.0), 1.0)
        out.append(1 / (factor * pos_freq) * (1 - extrapolation_factor) + 1 / pos_freq * extrapolation_factor)
    return np.array(out)


def official_alibi_slopes(n):
    """get_slopes from the ALiBi repository (also BLOOM's)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + official_alibi_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


def t5_bucket_reference(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Mesh TensorFlow's _relative_position_bucket for one int, in plain Python."""
    ret = 0
    n = -relative_position
    if bidirectional:
        num_buckets //= 2
        ret += (n < 0) * num_buckets
        n = abs(n)
    else:
        n = max(n, 0)
    max_exact = num_buckets // 2
    if n < max_exact:
        return ret + n
    val_if_large = max_exact + int(
        math.log(n / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    )
    return ret + min(val_if_large, num_buckets - 1)


def hf_t5_bucket_float32(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Hugging Face T5's _relative_position_bucket as it runs: a float32 log."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact)
        / math.log(max_distance / max_exact)
        * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(
        relative_position_if_large, torch.full_like(relative_position_if_large, num_buckets - 1)
    )
    return relative_buckets + torch.where(is_small, relative_position, relative_position_if_large)


# --- RoPE against the formulas -------------------------------------------------------------------


@pytest.mark.parametrize("d", [2, 4, 10, 64])
@pytest.mark.parametrize("base", [10000.0, 500000.0, 3.0])
def test_interleaved_is_the_roformer_matrix(d, base):
    rng = np.random.default_rng(d)
    positions = np.array([0, 1, 7, -3, 2.5, 4096, 65_000])
    x = rng.normal(size=(3, len(positions), d))
    out = pe_lib.apply_rope(x, positions, base=base)
    for row, m in enumerate(positions):
        np.testing.assert_allclose(out[:, row], x[:, row] @ roformer_matrix(m, d, base).T, atol=1e-10)


@pytest.mark.parametrize("d", [2, 8, 128])
def test_half_is_hugging_face_rotate_half(d):
    x = np.random.default_rng(d).normal(size=(2, 4, 50, d))
    positions = np.arange(1000, 1050)
    expected = hf_rope(x, positions)
    np.testing.assert_allclose(pe_lib.apply_rope(x, positions, layout="half"), expected, atol=1e-10)
    np.testing.assert_allclose(pe_lib.apply_rope(x[..., :4, :], layout="half"), hf_rope(x[..., :4, :], range(4)))


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rotary_dim_uses_its_own_frequencies(layout):
    # GPT-NeoX's rotary_pct: only the first r features turn, with theta_i = base**(-2i/r).
    x = np.random.default_rng(0).normal(size=(6, 12))
    positions = np.arange(6) * 100
    out = pe_lib.apply_rope(x, positions, layout=layout, rotary_dim=4)
    if layout == "half":
        expected = hf_rope(x[:, :4], positions)
    else:
        expected = np.stack([roformer_matrix(m, 4) @ row[:4] for m, row in zip(positions, x, strict=True)])
    np.testing.assert_allclose(out[:, :4], expected, atol=1e-10)
    np.testing.assert_array_equal(out[:, 4:], x[:, 4:])


def test_rotation_convention():
    # Pair (a, b) = (1, 0) at position 1 with theta_0 = 1: a' = cos 1, b' = sin 1 (counter-clockwise).
    for layout in ("interleaved", "half"):
        out = pe_lib.apply_rope(np.array([[0.0, 0.0], [1.0, 0.0]]), layout=layout)
        np.testing.assert_allclose(out, [[0.0, 0.0], [math.cos(1), math.sin(1)]], rtol=1e-15, atol=0)


@pytest.mark.parametrize(
    "d, base, scaling",
    [
        (128, 10000.0, None),
        (64, 500000.0, None),
        (128, 10000.0, {"rope_type": "linear", "factor": 4.0}),
        (128, 10000.0, {"rope_type": "ntk", "factor": 8.0}),
        (4, 10000.0, {"rope_type": "ntk", "factor": 2.0}),
        (128, 10000.0, YARN),
        (128, 1e6, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}),
        (64, 10000.0, {"rope_type": "yarn", "factor": 16, "original_max_position_embeddings": 2048, "beta_fast": 8}),
        (128, 10000.0, YARN_PAPER),
        (128, 1e6, {"rope_type": "yarn_paper", "factor": 4.0, "original_max_position_embeddings": 32768}),
        (64, 10000.0, {**YARN_PAPER, "factor": 16, "original_max_position_embeddings": 2048, "beta_fast": 8}),
        (128, 500000.0, LLAMA3),
        (64, 10000.0, {**LLAMA3, "factor": 2.5, "low_freq_factor": 0.5, "high_freq_factor": 2}),
    ],
)
def test_frequencies_are_the_per_pair_formula(d, base, scaling):
    theta = pe_lib.rope_frequencies(d, base=base, scaling=scaling)
    assert theta.shape == (d // 2,) and theta.dtype == np.float64
    np.testing.assert_allclose(theta, loop_frequencies(d, base, scaling), rtol=1e-13)


@pytest.mark.parametrize(
    "dim, base, factor, length",
    [(128, 10000.0, 4.0, 4096), (128, 1e6, 4.0, 32768), (64, 10000.0, 16.0, 2048), (128, 500000.0, 8.0, 8192)],
)
def test_the_yarn_papers_ramp_agrees_with_the_reference_code_outside_the_ramp(dim, base, factor, length):
    scaling = {"rope_type": "yarn_paper", "factor": factor, "original_max_position_embeddings": length}
    ours = pe_lib.rope_frequencies(dim, base=base, scaling=scaling)
    theirs = hf_yarn_frequencies(dim, base, factor, length)
    theta = pe_lib.rope_frequencies(dim, base=base)
    turns = length * theta / (2 * np.pi)
    outside = (turns >= 32) | (turns <= 1)
    assert outside.sum() >= dim // 4
    np.testing.assert_allclose(
        pe_lib.rope_frequencies(dim, base=base, scaling={**scaling, "rope_type": "yarn"}), theirs
    )
    np.testing.assert_allclose(ours[outside], theirs[outside], rtol=1e-13)
    np.testing.assert_array_equal(ours[turns >= 32], theta[turns >= 32])  # fast pairs untouched
    inside = ~outside  # the ramps differ in shape, but both blend theta/s and theta
    for blend in (ours[inside], theirs[inside]):
        assert np.all((blend >= theta[inside] / factor * (1 - 1e-12)) & (blend <= theta[inside] * (1 + 1e-12)))


def test_yarn_attention_scale():
    assert pe_lib.yarn_attention_scale(1) == 1.0 and pe_lib.yarn_attention_scale(0.5) == 1.0
    assert pe_lib.yarn_attention_scale(4) == pytest.approx(0.1 * math.log(4) + 1)
    assert pe_lib.yarn_attention_scale(32) == pytest.approx(1.34657359, abs=1e-8)


def test_llama2_has_18_pairs_that_never_turn_once_in_its_context():
    # Llama 2: head_dim 128, base 1e4, 4096 tokens. Pairs 46..63 have wavelengths > 4096.
    wavelengths = 2 * np.pi / pe_lib.rope_frequencies(128, base=1e4)
    assert np.sum(wavelengths > 4096) == 18
    assert np.flatnonzero(wavelengths > 4096)[0] == 46


def test_linear_scaling_is_position_interpolation():
    x = np.random.default_rng(1).normal(size=(40, 16))
    positions = np.arange(40) * 37.0
    scaled = pe_lib.apply_rope(x, positions, scaling={"type": "linear", "factor": 4})  # older configs say "type"
    np.testing.assert_allclose(scaled, pe_lib.apply_rope(x, positions / 4), atol=1e-12)


# --- RoPE properties -----------------------------------------------------------------------------


@FAST
@given(seed=seeds, half=halves, n=st.integers(1, 8), layout=st.sampled_from(["interleaved", "half"]))
def test_norm_is_preserved(seed, half, n, layout):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2 * half))
    positions = rng.uniform(-1e5, 1e5, size=n)
    out = pe_lib.apply_rope(x, positions, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-12)


@FAST
@given(
    seed=seeds,
    half=halves,
    m=st.integers(-(10**4), 10**4),
    n=st.integers(-(10**4), 10**4),
    layout=st.sampled_from(["interleaved", "half"]),
    base=st.sampled_from([10000.0, 500000.0, 100.0]),
)
def test_score_depends_only_on_the_offset(seed, half, m, n, layout, base):
    # (R(m) q) . (R(n) k) == (R(0) q) . (R(n - m) k): attention sees only n - m.
    q, k = np.random.default_rng(seed).normal(size=(2, 1, 2 * half))
    rope = dict(layout=layout, base=base)
    score = pe_lib.apply_rope(q, [m], **rope)[0] @ pe_lib.apply_rope(k, [n], **rope)[0]
    shifted = pe_lib.apply_rope(q, [0], **rope)[0] @ pe_lib.apply_rope(k, [n - m], **rope)[0]
    assert score == pytest.approx(shifted, abs=1e-9)


@FAST
@given(seed=seeds, half=halves, n=st.integers(1, 6), data=st.data())
def test_interleaved_is_half_on_permuted_features(seed, half, n, data):
    d = 2 * half
    r = 2 * data.draw(st.integers(1, half), label="rotary_dim // 2")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, n, d))
    positions = rng.integers(-5000, 5000, size=n)
    # Within the first r features: the evens (first of each interleaved pair), then the odds.
    perm = np.r_[np.arange(0, r, 2), np.arange(1, r, 2), np.arange(r, d)]
    inverse = np.argsort(perm)
    half_out = pe_lib.apply_rope(x[..., perm], positions, layout="half", rotary_dim=r)
    np.testing.assert_array_equal(pe_lib.apply_rope(x, positions, rotary_dim=r), half_out[..., inverse])


@FAST
@given(seed=seeds, half=halves, data=st.data(), layout=st.sampled_from(["interleaved", "half"]))
def test_rotary_dim_leaves_the_rest_untouched(seed, half, data, layout):
    d = 2 * half
    r = 2 * data.draw(st.integers(1, half), label="rotary_dim // 2")
    x = np.random.default_rng(seed).normal(size=(3, 5, d))
    out = pe_lib.apply_rope(x, np.arange(5) * 11, layout=layout, rotary_dim=r)
    np.testing.assert_array_equal(out[..., r:], x[..., r:])
    np.testing.assert_array_equal(out[..., :r], pe_lib.apply_rope(x[..., :r], np.arange(5) * 11, layout=layout))


@FAST
@given(half=st.integers(2, 128), base=st.floats(2.0, 1e6), factor=st.floats(1.0, 1000.0))
def test_ntk_keeps_the_fastest_pair_and_divides_the_slowest(half, base, factor):
    d = 2 * half
    plain = pe_lib.rope_frequencies(d, base=base)
    ntk = pe_lib.rope_frequencies(d, base=base, scaling={"rope_type": "ntk", "factor": factor})
    assert ntk[0] == plain[0] == 1.0
    assert ntk[-1] == pytest.approx(plain[-1] / factor, rel=1e-12)
    assert np.all(ntk <= plain * (1 + 1e-12)) and np.all(ntk >= plain / factor * (1 - 1e-12))


@FAST
@given(
    half=st.integers(1, 128),
    base=st.floats(2.0, 1e6),
    factor=st.floats(1.0, 64.0),
    length=st.integers(16, 10**6),
    low=st.floats(0.25, 4.0),
    gap=st.floats(0.25, 8.0),
)
def test_llama3_bands(half, base, factor, length, low, gap):
    scaling = {"rope_type": "llama3", "factor": factor, "low_freq_factor": low, "high_freq_factor": low + gap}
    scaling["original_max_position_embeddings"] = length
    plain = pe_lib.rope_frequencies(2 * half, base=base)
    scaled = pe_lib.rope_frequencies(2 * half, base=base, scaling=scaling)
    wavelengths = 2 * np.pi / plain
    short, long = wavelengths < length / (low + gap), wavelengths > length / low
    np.testing.assert_allclose(scaled[short], plain[short], rtol=1e-12)  # high frequencies kept
    np.testing.assert_allclose(scaled[long], plain[long] / factor, rtol=1e-12)  # low ones interpolated
    assert np.all(scaled <= plain * (1 + 1e-12)) and np.all(scaled >= plain / factor * (1 - 1e-12))
    np.testing.assert_allclose(scaled, loop_frequencies(2 * half, base, scaling), rtol=1e-12)


# --- torch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_torch_in_torch_out(dtype, layout):
    x = torch.randn(2, 3, 40, 16, generator=torch.Generator().manual_seed(0)).to(dtype)
    before = x.clone()
    positions = torch.arange(40) * 300  # up to 11700: half-precision angles would be far off
    out = pe_lib.apply_rope(x, positions, layout=layout)
    assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.shape == x.shape and out.device == x.device
    assert torch.equal(x, before)
    expected = pe_lib.apply_rope(x.double().numpy(), positions.numpy(), layout=layout)
    rtol = {torch.float64: 1e-15, torch.float32: 1e-6, torch.float16: 2**-10, torch.bfloat16: 2**-7}[dtype]
    np.testing.assert_allclose(out.double().numpy(), expected, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_numpy_in_numpy_out(dtype):
    x = np.random.default_rng(2).normal(size=(30, 8)).astype(dtype)
    before = x.copy()
    out = pe_lib.apply_rope(x, np.arange(30) * 1000)
    assert isinstance(out, np.ndarray) and out.dtype == dtype and out.shape == x.shape
    np.testing.assert_array_equal(x, before)
    expected = pe_lib.apply_rope(x.astype(np.float64), np.arange(30) * 1000)
    rtol = {np.float64: 1e-15, np.float32: 1e-6, np.float16: 2**-10}[dtype]
    np.testing.assert_allclose(out.astype(np.float64), expected, rtol=rtol, atol=rtol)


def test_gradients_flow_through_the_rotation():
    x = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    pe_lib.apply_rope(x, torch.arange(4.0)).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())  # a rotation keeps |x|^2, so its gradient is 2x


def test_float32_is_exact_far_out_where_float32_angles_are_not():
    x64 = np.random.default_rng(3).normal(size=(64, 128))
    positions = 100_000 + np.arange(64)
    reference = hf_rope(x64, positions)
    x = torch.from_numpy(x64).float()
    ours = pe_lib.apply_rope(x, positions, layout="half").double().numpy()
    usual = usual_float32_rope(x, positions).double().numpy()
    assert np.max(np.abs(ours - reference)) < 1e-5
    assert np.max(np.abs(usual - reference)) > 1e-3


ROTARY_CASES = [
    dict(layout="half"),
    dict(layout="interleaved"),
    dict(layout="half", rotary_dim=4),
    dict(layout="interleaved", rotary_dim=6, base=500000.0),
    dict(layout="half", scaling=YARN),
    dict(layout="half", scaling={**LLAMA3, "original_max_position_embeddings": 64}),
]


@pytest.mark.parametrize("options", ROTARY_CASES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_rotary_embedding_equals_apply_rope(options, dtype):
    generator = torch.Generator().manual_seed(4)
    q = torch.randn(2, 4, 33, 8, generator=generator).to(dtype)
    k = torch.randn(2, 1, 33, 8, generator=generator).to(dtype)  # fewer key heads, as in grouped-query attention
    rope = pe_lib.RotaryEmbedding(8, **options)
    q_rot, k_rot = rope(q, k)
    assert q_rot.dtype == dtype and q_rot.shape == q.shape and k_rot.shape == k.shape
    assert torch.equal(q_rot, pe_lib.apply_rope(q, **options))
    assert torch.equal(k_rot, pe_lib.apply_rope(k, **options))
    positions = torch.arange(33) * 7 + 20_000
    q_rot, k_rot = rope(q, k, positions)
    assert torch.equal(q_rot, pe_lib.apply_rope(q, positions, **options))
    assert torch.equal(k_rot, pe_lib.apply_rope(k, positions, **options))


def test_rotary_embedding_cache_grows_and_stays_float32():
    rope = pe_lib.RotaryEmbedding(16)
    assert rope.state_dict() == {}  # the cache is recomputed, never saved
    for seq, rows in [(5, 5), (7, 10), (3, 10), (10, 10), (50, 50)]:
        q = torch.randn(1, 2, seq, 16)
        q_rot, _ = rope(q, q)
        assert rope.cos_cached.shape == rope.sin_cached.shape == (rows, 8)
        assert torch.equal(q_rot, pe_lib.apply_rope(q, layout="half"))
    rope.half()
    assert rope.cos_cached.dtype == torch.float32 and rope.cos_cached.shape == (50, 8)
    q = torch.randn(1, 2, 60, 16).half()
    assert torch.equal(rope(q, q)[0], pe_lib.apply_rope(q, layout="half"))
    assert rope.cos_cached.shape == (100, 8) and "rows=100" in repr(rope)


# --- ALiBi ---------------------------------------------------------------------------------------


def test_alibi_slopes_are_the_official_code():
    for num_heads in range(1, 80):
        slopes = pe_lib.alibi_slopes(num_heads)
        assert slopes.shape == (num_heads,) and slopes.dtype == np.float64
        # The official start * ratio**i is a few ulps off the exact power of two that pe_lib returns.
        np.testing.assert_allclose(slopes, official_alibi_slopes(num_heads), rtol=1e-14)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32, 64])
def test_alibi_slopes_for_a_power_of_two(n):
    np.testing.assert_allclose(pe_lib.alibi_slopes(n), [2 ** (-8 * (h + 1) / n) for h in range(n)], rtol=1e-15)


def test_alibi_slopes_for_12_heads():
    expected = [2.0**-e for e in (1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5)]
    np.testing.assert_allclose(pe_lib.alibi_slopes(12), expected, rtol=1e-15)


@FAST
@given(n=st.integers(0, 20), num_heads=st.integers(1, 20), causal=st.booleans())
def test_alibi_bias(n, num_heads, causal):
    bias = pe_lib.alibi_bias(n, num_heads, causal=causal)
    slopes = pe_lib.alibi_slopes(num_heads)
    assert bias.shape == (num_heads, n, n) and bias.dtype == np.float64
    for h in range(num_heads):
        for i in range(n):
            for j in range(n):
                if causal and j > i:
                    assert bias[h, i, j] == -np.inf
                else:
                    assert bias[h, i, j] == -slopes[h] * abs(i - j)
    assert np.all(bias[:, np.arange(n), np.arange(n)] == 0)
    assert np.all(bias[:, ~np.eye(n, dtype=bool)] < 0)  # every other entry is a penalty (or -inf)
    if not causal:
        np.testing.assert_array_equal(bias, bias.transpose(0, 2, 1))


# --- T5 buckets ----------------------------------------------------------------------------------


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (64, 256), (8, 20), (4, 3), (6, 100)])
def test_t5_buckets_are_the_mesh_tensorflow_formula(bidirectional, num_buckets, max_distance):
    relative = np.arange(-1000, 1001)
    buckets = pe_lib.t5_relative_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    expected = [t5_bucket_reference(int(r), bidirectional, num_buckets, max_distance) for r in relative]
    assert buckets.dtype == np.int64
    np.testing.assert_array_equal(buckets, expected)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_t5_float32_buckets_of_hugging_face_agree_up_to_a_million(bidirectional):
    relative = np.arange(-(10**6), 10**6 + 1)
    expected = hf_t5_bucket_float32(torch.from_numpy(relative), bidirectional).numpy()
    np.testing.assert_array_equal(pe_lib.t5_relative_bucket(relative, bidirectional=bidirectional), expected)


def test_t5_shapes_and_kinds():
    query, key = np.arange(5)[:, None], np.arange(7)[None, :]
    assert pe_lib.t5_relative_bucket(key - query).shape == (5, 7)
    assert pe_lib.t5_relative_bucket(-3) == 3 and type(pe_lib.t5_relative_bucket(np.int32(3))) is int
    assert pe_lib.t5_relative_bucket(3) == 19
    np.testing.assert_array_equal(pe_lib.t5_relative_bucket(torch.tensor([[-200, 200]])), [[15, 31]])
    np.testing.assert_array_equal(pe_lib.t5_relative_bucket([-(2**63), 2**63 - 1]), [15, 31])


@FAST
@given(
    half_buckets=st.integers(2, 32),
    extra=st.integers(1, 500),
    relative=st.lists(st.integers(-5000, 5000), min_size=1, max_size=40),
    bidirectional=st.booleans(),
)
def test_t5_bucket_properties(half_buckets, extra, relative, bidirectional):
    num_buckets = 2 * half_buckets
    per_direction = half_buckets if bidirectional else num_buckets
    max_exact = per_direction // 2
    max_distance = max_exact + extra
    relative = np.array(relative)
    buckets = pe_lib.t5_relative_bucket(
        relative, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert np.all((buckets >= 0) & (buckets < num_buckets))
    distance = np.abs(relative) if bidirectional else np.maximum(-relative, 0)
    own = buckets - (relative > 0) * half_buckets if bidirectional else buckets
    small = distance < max_exact
    np.testing.assert_array_equal(own[small], distance[small])  # exact below max_exact
    assert np.all(own[~small] >= max_exact)
    order = np.argsort(distance, kind="stable")
    assert np.all(np.diff(own[order]) >= 0)  # monotone in |distance|
    if bidirectional:
        assert np.all(buckets[relative > 0] >= half_buckets) and np.all(buckets[relative <= 0] < half_buckets)
    else:
        assert np.all(buckets[relative >= 0] == 0)  # only the past is told apart


# --- bad input -----------------------------------------------------------------------------------

X = np.zeros((3, 8))
Q = torch.zeros(1, 2, 3, 8)
BAD = {
    "odd head_dim": (lambda: pe_lib.rope_frequencies(7), ValueError, ["head_dim must be even", "got 7"]),
    "head_dim bool": (lambda: pe_lib.rope_frequencies(True), TypeError, ["head_dim", "True"]),
    "odd x": (lambda: pe_lib.apply_rope(np.zeros((3, 7))), ValueError, ["head_dim must be even", "(3, 7)"]),
    "odd module": (lambda: pe_lib.RotaryEmbedding(9), ValueError, ["head_dim must be even", "got 9"]),
    "rotary_dim odd": (lambda: pe_lib.apply_rope(X, rotary_dim=5), ValueError, ["rotary_dim must be even", "5"]),
    "rotary_dim too big": (lambda: pe_lib.apply_rope(X, rotary_dim=10), ValueError, ["rotary_dim", "2 to 8", "10"]),
    "rotary_dim zero": (lambda: pe_lib.RotaryEmbedding(8, rotary_dim=0), ValueError, ["rotary_dim", "2 to 8", "0"]),
    "rotary_dim float": (lambda: pe_lib.apply_rope(X, rotary_dim=4.0), TypeError, ["rotary_dim", "4.0"]),
    "unknown layout": (
        lambda: pe_lib.apply_rope(X, layout="neox"),
        ValueError,
        ["layout must be one of 'interleaved', 'half'", "'neox'"],
    ),
    "base one": (lambda: pe_lib.apply_rope(X, base=1), ValueError, ["base", "greater than 1", "1.0"]),
    "int x": (lambda: pe_lib.apply_rope(np.zeros((3, 8), dtype=int)), TypeError, ["x must be a floating", "int64"]),
    "int tensor": (lambda: pe_lib.apply_rope(torch.zeros(3, 8, dtype=torch.int32)), TypeError, ["x", "torch.int32"]),
    "1-D x": (lambda: pe_lib.apply_rope(np.zeros(8)), ValueError, ["x must have shape (..., n, head_dim)", "(8,)"]),
    "positions length": (lambda: pe_lib.apply_rope(X, [0, 1]), ValueError, ["positions", "n=3", "got 2"]),
    "positions 2-D": (lambda: pe_lib.apply_rope(X, np.zeros((3, 1))), ValueError, ["positions", "1-D", "(3, 1)"]),
    "positions nan": (lambda: pe_lib.apply_rope(X, [0, np.nan, 1]), ValueError, ["positions", "finite", "nan"]),
    "scaling unknown type": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "mrope", "factor": 2}),
        ValueError,
        ["scaling['rope_type'] must be one of 'default', 'linear', 'dynamic', 'yarn', 'longrope'", "'mrope'"],
    ),
    "scaling without type": (
        lambda: pe_lib.rope_frequencies(8, scaling={"factor": 2}),
        ValueError,
        ["scaling needs a 'rope_type' key", "'linear'"],
    ),
    "scaling missing key": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "yarn", "factor": 2}),
        ValueError,
        ["rope_type 'yarn' needs the key 'original_max_position_embeddings'", "'beta_fast'"],
    ),
    "scaling unknown key": (
        lambda: pe_lib.apply_rope(X, scaling={"rope_type": "linear", "factor": 2, "mscale": 1}),
        ValueError,
        ["unknown key 'mscale'", "allowed keys are 'rope_type', 'factor'"],
    ),
    "scaling factor below one": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "linear", "factor": 0.5}),
        ValueError,
        ["scaling['factor'] must be a finite number >= 1", "0.5"],
    ),
    "seq_len zero": (lambda: pe_lib.rope_frequencies(8, seq_len=0), ValueError, ["seq_len", "0", "positive int"]),
    "scaling truncate not a bool": (
        lambda: pe_lib.rope_frequencies(
            8, scaling={"rope_type": "yarn", "factor": 2, "original_max_position_embeddings": 64, "truncate": "no"}
        ),
        TypeError,
        ["scaling['truncate']", "'no'"],
    ),
    "longrope factors of the wrong length": (
        lambda: pe_lib.rope_frequencies(
            8,
            scaling={
                "rope_type": "longrope",
                "short_factor": [1, 1, 1],
                "long_factor": [1, 1, 1, 1],
                "original_max_position_embeddings": 64,
            },
        ),
        ValueError,
        ["scaling['short_factor']", "one divisor per pair", "4", "got 3"],
    ),
    "longrope factor zero": (
        lambda: pe_lib.rope_frequencies(
            4,
            scaling={
                "rope_type": "longrope",
                "short_factor": [1, 0],
                "long_factor": [1, 1],
                "original_max_position_embeddings": 64,
            },
        ),
        ValueError,
        ["scaling['short_factor']", "divisors > 0"],
    ),
    "proportional fraction above one": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "proportional", "partial_rotary_factor": 1.5}),
        ValueError,
        ["scaling['partial_rotary_factor']", "(0, 1]", "1.5"],
    ),
    "dynamic without its length": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "dynamic", "factor": 2}),
        ValueError,
        ["rope_type 'dynamic' needs the key 'max_position_embeddings'"],
    ),
    "config not a dict": (lambda: pe_lib.rope_from_config("config.json"), TypeError, ["config must be a dict", "str"]),
    "config without rope": (
        lambda: pe_lib.rope_from_config({"hidden_size": 768, "num_attention_heads": 12}),
        ValueError,
        ["config names no RoPE", "rope_theta"],
    ),
    "config layer type unknown": (
        lambda: pe_lib.rope_from_config({"rope_theta": 1e4, "head_dim": 8}, layer_type="sliding_attention"),
        ValueError,
        ["layer_type must be one of None", "'sliding_attention'"],
    ),
    "config partial factor above 1": (  # an odd rotated part is computed as transformers does (test_audit)
        lambda: pe_lib.rope_from_config({"rope_theta": 1e4, "head_dim": 10, "partial_rotary_factor": 1.5}),
        ValueError,
        ["rope_parameters['partial_rotary_factor'] must be in (0, 1]", "1.5"],
    ),
    "config without a head size": (
        lambda: pe_lib.rope_from_config({"rope_theta": 1e4}),
        ValueError,
        ["no head_dim", "hidden_size / num_attention_heads"],
    ),
    "scaling factor nan": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "ntk", "factor": float("nan")}),
        ValueError,
        ["scaling['factor']", "nan"],
    ),
    "scaling factor string": (
        lambda: pe_lib.rope_frequencies(8, scaling={"rope_type": "ntk", "factor": "2"}),
        TypeError,
        ["scaling['factor']", "'2'"],
    ),
    "scaling not a dict": (lambda: pe_lib.rope_frequencies(8, scaling="linear"), TypeError, ["scaling", "'linear'"]),
    "scaling length float": (
        lambda: pe_lib.rope_frequencies(8, scaling={**YARN, "original_max_position_embeddings": 4096.5}),
        TypeError,
        ["scaling['original_max_position_embeddings']", "4096.5"],
    ),
    "yarn betas reversed": (
        lambda: pe_lib.rope_frequencies(8, scaling={**YARN, "beta_fast": 1, "beta_slow": 32}),
        ValueError,
        ["scaling['beta_slow'] must be below scaling['beta_fast']", "32.0 >= 1.0"],
    ),
    "llama3 factors reversed": (
        lambda: pe_lib.rope_frequencies(8, scaling={**LLAMA3, "high_freq_factor": 0.5}),
        ValueError,
        ["scaling['low_freq_factor'] must not exceed scaling['high_freq_factor']", "1.0 > 0.5"],
    ),
    "ntk one pair": (
        lambda: pe_lib.rope_frequencies(2, scaling={"rope_type": "ntk", "factor": 2}),
        ValueError,
        ["NTK scaling needs at least two pairs", "got 2"],
    ),
    "yarn scale zero": (lambda: pe_lib.yarn_attention_scale(0), ValueError, ["factor", "> 0", "0.0"]),
    "module q last dim": (
        lambda: pe_lib.RotaryEmbedding(8)(torch.zeros(1, 2, 3, 6), torch.zeros(1, 2, 3, 6)),
        ValueError,
        ["q must have shape (batch, heads, seq, head_dim) with head_dim=8", "(1, 2, 3, 6)"],
    ),
    "module q 3-D": (lambda: pe_lib.RotaryEmbedding(8)(torch.zeros(2, 3, 8), Q), ValueError, ["q", "(2, 3, 8)"]),
    "module k seq": (
        lambda: pe_lib.RotaryEmbedding(8)(Q, torch.zeros(1, 2, 4, 8)),
        ValueError,
        ["same seq length", "3 and 4", "apply_rope"],
    ),
    "module k numpy": (lambda: pe_lib.RotaryEmbedding(8)(Q, np.zeros((1, 2, 3, 8))), TypeError, ["k", "ndarray"]),
    "module positions": (lambda: pe_lib.RotaryEmbedding(8)(Q, Q, [0, 1]), ValueError, ["positions", "n=3"]),
    "module scaling": (
        lambda: pe_lib.RotaryEmbedding(8, scaling={"rope_type": "llama3", "factor": 8}),
        ValueError,
        ["needs the key 'low_freq_factor'"],
    ),
    "num_heads zero": (lambda: pe_lib.alibi_slopes(0), ValueError, ["num_heads must be a positive int", "got 0"]),
    "num_heads negative": (lambda: pe_lib.alibi_bias(4, -2), ValueError, ["num_heads", "-2"]),
    "num_heads bool": (lambda: pe_lib.alibi_slopes(True), TypeError, ["num_heads", "True", "bool"]),
    "num_heads float": (lambda: pe_lib.alibi_slopes(8.0), TypeError, ["num_heads", "8.0"]),
    "alibi n negative": (lambda: pe_lib.alibi_bias(-1, 4), ValueError, ["n must be a non-negative int", "-1"]),
    "alibi causal string": (lambda: pe_lib.alibi_bias(4, 4, causal="no"), TypeError, ["causal", "True or False"]),
    "t5 float positions": (
        lambda: pe_lib.t5_relative_bucket([1.0, 2.0]),
        TypeError,
        ["relative_position must hold integers", "float64"],
    ),
    "t5 bool positions": (lambda: pe_lib.t5_relative_bucket(True), TypeError, ["relative_position", "bool"]),
    "t5 odd buckets": (
        lambda: pe_lib.t5_relative_bucket(3, num_buckets=31),
        ValueError,
        ["num_buckets must be an even int >= 4 when bidirectional", "31"],
    ),
    "t5 one bucket": (
        lambda: pe_lib.t5_relative_bucket(3, bidirectional=False, num_buckets=1),
        ValueError,
        ["num_buckets must be at least 2", "1"],
    ),
    "t5 max_distance": (
        lambda: pe_lib.t5_relative_bucket(3, max_distance=8),
        ValueError,
        ["max_distance must be greater than", "max_exact=8", "got 8"],
    ),
    "t5 bidirectional string": (
        lambda: pe_lib.t5_relative_bucket(3, bidirectional="yes"),
        TypeError,
        ["bidirectional", "'yes'"],
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_gets_a_clear_error(case):
    call, error, fragments = BAD[case]
    with pytest.raises(error, match=re.escape(fragments[0])) as info:
        call()
    for fragment in fragments[1:]:
        assert fragment in str(info.value), (fragment, str(info.value))
