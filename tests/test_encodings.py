"""pe_lib.encodings against the paper's formula and the properties the course teaches."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from paper_formula import paper_table

import pe_lib

FLOAT32_ROUNDING = 1.2e-7
d_models = st.integers(min_value=1, max_value=4096)
positions_up_to_2_20 = st.lists(st.integers(0, 2**20), min_size=1, max_size=16)


@pytest.mark.parametrize("d_model", [1, 2, 3, 4, 7, 16, 65, 512])
@pytest.mark.parametrize("base", [10000.0, 100.0, 2.5])
def test_float64_table_is_the_paper_formula(d_model, base):
    expected = paper_table(np.arange(300), d_model, base)
    assert np.max(np.abs(pe_lib.sinusoidal_encoding(300, d_model, base=base) - expected)) <= 1e-12


@settings(max_examples=60, deadline=None)
@given(positions=st.lists(st.floats(-1e4, 1e4), min_size=1, max_size=20), d_model=st.integers(1, 300))
def test_float64_table_at_arbitrary_positions(positions, d_model):
    table = pe_lib.sinusoidal_encoding(np.array(positions), d_model)
    assert table.shape == (len(positions), d_model) and table.dtype == np.float64
    assert np.max(np.abs(table - paper_table(positions, d_model))) <= 1e-12


@settings(max_examples=60, deadline=None)
@given(positions=positions_up_to_2_20, d_model=d_models)
def test_float32_is_correct_to_rounding_at_any_position(positions, d_model):
    table = pe_lib.sinusoidal_encoding(np.array(positions), d_model, dtype=np.float32)
    assert table.dtype == np.float32
    assert np.max(np.abs(table - paper_table(positions, d_model))) <= FLOAT32_ROUNDING


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3000), d_model=d_models, layout=st.sampled_from(["interleaved", "concatenated"]))
def test_float32_count_table_is_correct_to_rounding(n, d_model, layout):
    # A count takes the angle-addition path: check every entry of the table.
    table = pe_lib.sinusoidal_encoding(n, d_model, layout=layout, dtype=np.float32)
    expected = pe_lib.sinusoidal_encoding(n, d_model, layout=layout)
    assert table.shape == (n, d_model) and table.flags.c_contiguous
    assert np.max(np.abs(table - expected)) <= FLOAT32_ROUNDING


@pytest.mark.parametrize("d_model", [1, 2, 5])
def test_float32_every_position_up_to_2_20(d_model):
    n = 2**20 + 1
    table = pe_lib.sinusoidal_encoding(n, d_model, dtype=np.float32)
    assert np.max(np.abs(table - paper_table(np.arange(n), d_model))) <= FLOAT32_ROUNDING


def test_float32_wide_table_far_out():
    # d_model 512 spans the same frequencies as any wider table (1 down to 1/10000); the table is 2 GB,
    # the threaded path, and its last rows are built from the farthest blocks (4096 columns took 17 GB).
    positions = np.arange(2**20 - 300, 2**20 + 1)
    table = pe_lib.sinusoidal_encoding(2**20 + 1, 512, dtype=np.float32)[positions]
    assert np.max(np.abs(table - paper_table(positions, 512))) <= FLOAT32_ROUNDING


def test_float16_is_rounded_from_float64_angles():
    table = pe_lib.sinusoidal_encoding(np.array([10_000, 65_000]), 64, dtype=np.float16)
    assert table.dtype == np.float16
    assert np.max(np.abs(table - paper_table([10_000, 65_000], 64))) <= 2**-11


def test_empty_table():
    assert pe_lib.sinusoidal_encoding(0, 8).shape == (0, 8)
    assert pe_lib.sinusoidal_encoding(0, 8, dtype=np.float32).shape == (0, 8)


@settings(max_examples=40, deadline=None)
@given(d_model=st.integers(1, 200), n=st.integers(1, 50))
def test_concatenated_is_interleaved_with_columns_permuted(d_model, n):
    interleaved = pe_lib.sinusoidal_encoding(n, d_model)
    concatenated = pe_lib.sinusoidal_encoding(n, d_model, layout="concatenated")
    order = np.r_[np.arange(0, d_model, 2), np.arange(1, d_model, 2)]  # sins first, then cosines
    np.testing.assert_array_equal(concatenated, interleaved[:, order])


def test_odd_d_model_ends_with_a_sin():
    table = pe_lib.sinusoidal_encoding(5, 7)
    w_last = pe_lib.frequencies(7)[-1]
    np.testing.assert_allclose(table[:, -1], np.sin(np.arange(5) * w_last), atol=1e-15)
    assert pe_lib.sinusoidal_encoding(5, 7, layout="concatenated")[:, :4].shape == (5, 4)


def test_frequencies_and_wavelengths():
    w = pe_lib.frequencies(512)
    assert w.shape == (256,) and w[0] == 1.0
    np.testing.assert_allclose(w[1:] / w[:-1], 10000 ** (-2 / 512), rtol=1e-12)  # geometric
    lam = pe_lib.wavelengths(512)
    np.testing.assert_allclose(lam, 2 * np.pi / w, rtol=1e-15)
    assert lam[0] == pytest.approx(2 * np.pi) and lam[-1] < 10000 * 2 * np.pi
    assert pe_lib.frequencies(7).shape == (4,)


@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(-5000, 5000),
    k=st.integers(-5000, 5000),
    half=st.integers(1, 64),
    base=st.floats(1.5, 1e5),
)
def test_relative_rotation_maps_p_to_p_plus_k(p, k, half, base):
    d_model = 2 * half
    rotation = pe_lib.relative_rotation(k, d_model, base=base)
    pe_p, pe_pk = pe_lib.sinusoidal_encoding(np.array([p, p + k]), d_model, base=base)
    np.testing.assert_allclose(rotation @ pe_p, pe_pk, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(a=st.floats(-1e3, 1e3), b=st.floats(-1e3, 1e3), half=st.integers(1, 32))
def test_relative_rotation_is_orthogonal_and_composes(a, b, half):
    d_model = 2 * half
    m_a, m_b = pe_lib.relative_rotation(a, d_model), pe_lib.relative_rotation(b, d_model)
    np.testing.assert_allclose(m_a @ m_a.T, np.eye(d_model), atol=1e-12)
    np.testing.assert_allclose(m_a @ m_b, pe_lib.relative_rotation(a + b, d_model), atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(half=st.integers(1, 256), positions=st.lists(st.integers(0, 10**6), min_size=1, max_size=10))
def test_norm_is_d_model_over_two(half, positions):
    table = pe_lib.sinusoidal_encoding(np.array(positions), 2 * half)
    np.testing.assert_allclose(np.sum(table**2, axis=1), half, rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(half=st.integers(1, 128), p=st.integers(0, 10**4), q=st.integers(0, 10**4), shift=st.integers(-(10**4), 10**4))
def test_dot_product_depends_only_on_offset(half, p, q, shift):
    d_model = 2 * half
    a = pe_lib.sinusoidal_encoding(np.array([p, q]), d_model)
    b = pe_lib.sinusoidal_encoding(np.array([p + shift, q + shift]), d_model)
    closed_form = np.sum(np.cos(pe_lib.frequencies(d_model) * (q - p)))
    assert a[0] @ a[1] == pytest.approx(b[0] @ b[1], abs=1e-8)
    assert a[0] @ a[1] == pytest.approx(closed_form, abs=1e-8)


def test_naive_encodings():
    np.testing.assert_array_equal(pe_lib.integer_encoding(4, 3), np.repeat(np.arange(4.0)[:, None], 3, axis=1))
    np.testing.assert_allclose(pe_lib.normalized_encoding(4, 2)[:, 0], [0, 1 / 3, 2 / 3, 1])
    np.testing.assert_array_equal(pe_lib.normalized_encoding(1, 2), [[0.0, 0.0]])
    assert pe_lib.normalized_encoding(0, 2).shape == (0, 2)
    binary = pe_lib.binary_encoding(8, 3)
    np.testing.assert_array_equal(binary[6], [0, 1, 1])  # 6 = 0b110, least significant bit first
    assert len({tuple(row) for row in binary}) == 8
    assert pe_lib.binary_encoding(3, 70).shape == (3, 70)
    assert pe_lib.binary_encoding(2**3, 3).shape == (8, 3)


def test_dot_product_similarity():
    table = pe_lib.sinusoidal_encoding(20, 16)
    similarity = pe_lib.dot_product_similarity(table)
    np.testing.assert_allclose(similarity, table @ table.T)
    np.testing.assert_allclose(np.diag(similarity), 8.0)


def test_torch_tensors_are_accepted_also_when_they_require_grad_or_are_bfloat16():
    positions = torch.arange(6, dtype=torch.float32).requires_grad_()
    np.testing.assert_array_equal(pe_lib.sinusoidal_encoding(positions, 8), pe_lib.sinusoidal_encoding(6, 8))
    table = torch.from_numpy(pe_lib.sinusoidal_encoding(5, 4)).to(torch.bfloat16).requires_grad_()
    expected = table.detach().double().numpy()
    np.testing.assert_array_equal(pe_lib.dot_product_similarity(table), expected @ expected.T)
    assert table.grad is None  # read, never differentiated through
