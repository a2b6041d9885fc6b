"""pe_lib's torch modules agree with the NumPy function, in every input layout and precision."""

import numpy as np
import pytest
import torch

import pe_lib


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _table(n, d, dtype=np.float32, layout="interleaved"):
    return torch.from_numpy(pe_lib.sinusoidal_encoding(n, d, layout=layout, dtype=dtype))


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_sinusoidal_module_equals_numpy_in_every_layout(layout):
    x = torch.randn(2, 7, 6)
    batch_first = pe_lib.SinusoidalPositionalEncoding(6, layout=layout)
    seq_first = pe_lib.SinusoidalPositionalEncoding(6, layout=layout, batch_first=False)
    table = _table(7, 6, layout=layout)
    torch.testing.assert_close(batch_first(x), x + table[None], rtol=0, atol=0)
    torch.testing.assert_close(seq_first(x.transpose(0, 1)), (x + table[None]).transpose(0, 1), rtol=0, atol=0)
    torch.testing.assert_close(batch_first(x[0]), x[0] + table, rtol=0, atol=0)
    torch.testing.assert_close(seq_first(x[0]), x[0] + table, rtol=0, atol=0)


def test_batch_first_input_to_a_sequence_first_module_keeps_its_shape():
    # The PyTorch snippet's (max_len, 1, d) buffer turned a (3, 10) input into (3, 3, 10).
    module = pe_lib.SinusoidalPositionalEncoding(10, batch_first=False)
    assert module(torch.zeros(3, 10)).shape == (3, 10)
    assert module(torch.zeros(4, 3, 10)).shape == (4, 3, 10)


def test_sinusoidal_module_works_past_max_len():
    module = pe_lib.SinusoidalPositionalEncoding(8, max_len=4)
    out = module(torch.zeros(1, 11, 8))
    torch.testing.assert_close(out[0], _table(11, 8), rtol=0, atol=0)
    assert module(torch.zeros(2, 3, 8)).shape == (2, 3, 8)


def test_sinusoidal_module_has_no_trainable_parameters_and_no_state():
    module = pe_lib.SinusoidalPositionalEncoding(16)
    assert list(module.parameters()) == [] and module.state_dict() == {}


def test_float64_module_equals_the_float64_function():
    module = pe_lib.SinusoidalPositionalEncoding(32).double()
    out = module(torch.zeros(50, 32, dtype=torch.float64))
    torch.testing.assert_close(out, _table(50, 32, dtype=np.float64), rtol=0, atol=0)


@pytest.mark.parametrize("batch_first", [True, False])
def test_float64_input_to_a_float32_module_gets_float64_accurate_rows(batch_first):
    module = pe_lib.SinusoidalPositionalEncoding(64, max_len=16, batch_first=batch_first)  # float32 buffer
    x = torch.zeros(2, 20_000, 64, dtype=torch.float64)  # longer than max_len, far positions
    out = module(x if batch_first else x.transpose(0, 1))
    out = out if batch_first else out.transpose(0, 1)
    assert out.dtype == torch.float64 and module.pe.dtype == torch.float32
    torch.testing.assert_close(out[1], _table(20_000, 64, dtype=np.float64), rtol=0, atol=1e-12)
    widened = _table(20_000, 64, dtype=np.float32).double()  # what casting the float32 buffer would give
    assert (widened - _table(20_000, 64, dtype=np.float64)).abs().max() > 1e-9  # so the test can tell the two


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_module_rounds_float64_angles(dtype):
    module = pe_lib.SinusoidalPositionalEncoding(64, max_len=10_001).to(dtype)
    out = module(torch.zeros(10_001, 64, dtype=dtype))
    assert out.dtype == dtype
    error = (out[-1].double() - _table(10_001, 64, dtype=np.float64)[-1]).abs().max().item()
    assert error <= (2e-3 if dtype == torch.float16 else 4e-3)


def test_dropout_is_applied_in_training_only():
    module = pe_lib.SinusoidalPositionalEncoding(8, dropout=0.5)
    x = torch.ones(1, 100, 8)
    assert (module.train()(x) == 0).any()
    torch.testing.assert_close(module.eval()(x), x + _table(100, 8)[None])


def test_learned_module_adds_its_rows():
    module = pe_lib.LearnedPositionalEmbedding(10, 4)
    x = torch.randn(3, 6, 4)
    torch.testing.assert_close(module(x), x + module.embedding.weight[:6][None])
    seq_first = pe_lib.LearnedPositionalEmbedding(10, 4, batch_first=False)
    torch.testing.assert_close(seq_first(x), x + seq_first.embedding.weight[:3][:, None])
    assert sum(p.numel() for p in module.parameters()) == 40


def test_learned_module_is_trainable():
    module = pe_lib.LearnedPositionalEmbedding(5, 2)
    module(torch.zeros(1, 5, 2)).sum().backward()
    assert module.embedding.weight.grad is not None


def _outputs_per_position(embedding, token):
    ids = torch.full((1, 6), token)
    return embedding.eval()(ids)[0]


@pytest.mark.parametrize("positional", ["sinusoidal", "learned"])
def test_positions_make_the_same_token_differ(positional):
    embedding = pe_lib.TransformerEmbedding(20, 16, positional=positional)
    out = _outputs_per_position(embedding, 3)
    assert all(not torch.allclose(out[0], out[p]) for p in range(1, 6))


def test_no_positions_gives_a_token_the_same_vector_everywhere():
    embedding = pe_lib.TransformerEmbedding(20, 16, positional="none")
    out = _outputs_per_position(embedding, 3)
    torch.testing.assert_close(out, out[0].expand_as(out), rtol=0, atol=0)


def test_transformer_embedding_is_the_documented_sum():
    embedding = pe_lib.TransformerEmbedding(30, 8, num_segments=2, dropout=0.0).eval()
    ids = torch.tensor([[1, 2, 3, 4]])
    segments = torch.tensor([[0, 0, 1, 1]])
    expected = embedding.token(ids) * 8**0.5 + _table(4, 8)[None] + embedding.segment(segments)
    torch.testing.assert_close(embedding(ids, segments), expected)
    torch.testing.assert_close(embedding(ids), expected - embedding.segment(segments) + embedding.segment.weight[0])


def test_transformer_embedding_layouts_and_unscaled():
    embedding = pe_lib.TransformerEmbedding(30, 8, scale_embeddings=False, dropout=0.0, batch_first=False).eval()
    ids = torch.tensor([[1, 2], [3, 4], [5, 6]])  # (seq=3, batch=2)
    out = embedding(ids)
    assert out.shape == (3, 2, 8)
    torch.testing.assert_close(out[:, 0], embedding.token(ids[:, 0]) + _table(3, 8))
    assert embedding(torch.tensor([1, 2, 3])).shape == (3, 8)


def test_padding_row_is_zero():
    embedding = pe_lib.TransformerEmbedding(10, 4, padding_idx=0, positional="none", dropout=0.0)
    assert torch.all(embedding(torch.tensor([[0]])) == 0)
