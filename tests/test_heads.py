"""pe_lib.heads: attention probabilities equal transformers' (eager attention, output_attentions) on a tiny random
model and on SmolLM2's real weights; rows sum to 1 and the future gets 0; pair norms read the right rows in both
layouts; the previous-token and first-token scores on hand-made attention."""

import numpy as np
import pytest
import torch
from test_llama import _hf_twin, _ids, _tiny

from pe_lib import heads, smollm, smollm_transformers


def _eager_attentions(hf, ids, position_ids=None):
    hf.set_attn_implementation("eager")
    with torch.no_grad():
        out = hf(ids, position_ids=position_ids, output_attentions=True)
    return torch.stack(out.attentions, dim=1)  # (batch, layers, heads, n, n)


def test_probabilities_equal_transformers_eager_attention_on_a_tiny_model():
    model = _tiny()
    ids = _ids(40, batch=2)
    position_ids = torch.stack([torch.arange(40), torch.arange(40) + 300])
    theirs = _eager_attentions(_hf_twin(model), ids, position_ids)
    ours = heads.attention_probabilities(model, ids, position_ids=position_ids)
    assert ours.shape == theirs.shape == (2, 3, 4, 40, 40) and ours.dtype == torch.float32
    # layer 0 reads the same input in both; later layers' inputs differ by the float32 rounding of fused
    # (pe_lib) and eager (transformers) attention, which these large random weights amplify a little
    assert (ours[:, 0] - theirs[:, 0]).abs().max() < 1e-5 and (ours - theirs).abs().max() < 1e-4
    some = heads.attention_probabilities(model, ids, [2, 0], position_ids=position_ids)  # in the order asked
    assert torch.equal(some[:, 0], ours[:, 2]) and torch.equal(some[:, 1], ours[:, 0])


def test_rows_sum_to_one_and_the_future_gets_nothing():
    probs = heads.attention_probabilities(_tiny(), _ids(30), [1])
    assert torch.allclose(probs.sum(-1), torch.ones(1, 1, 4, 30), atol=1e-5)
    assert torch.all(probs.triu(1) == 0) and torch.all(probs[..., 0, 0] == 1)


def test_the_forward_stops_after_the_last_layer_asked_for_and_leaves_the_model_as_it_was():
    model, ids = _tiny(), _ids(20)
    before = model(ids)
    calls = []
    hook = model.layers[2].register_forward_pre_hook(lambda *args: calls.append(2))
    heads.attention_probabilities(model, ids, [0, 1])
    assert calls == []  # layer 2 never ran
    heads.attention_probabilities(model, ids, [2])
    assert calls == [2]
    hook.remove()
    assert not model.layers[0].attn._forward_pre_hooks and torch.equal(model(ids), before)


def test_a_layer_without_positions_attends_the_same_whatever_the_positions():
    model, ids = _tiny(), _ids(16)
    shuffled = torch.randperm(16, generator=torch.Generator().manual_seed(0))
    with model.use_positions(nope_layers={0}):
        assert torch.equal(
            heads.attention_probabilities(model, ids, [0]),
            heads.attention_probabilities(model, ids, [0], position_ids=shuffled),
        )
    rotated = heads.attention_probabilities(model, ids, [0])  # layer 0 turns q and k again
    assert (rotated - heads.attention_probabilities(model, ids, [0], position_ids=shuffled)).abs().max() > 1e-3


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_weight_pair_norms_read_the_rows_of_each_pair(layout):
    model = _tiny()
    config = model.config
    d, half = config.head_dim, config.head_dim // 2
    weight = torch.zeros(config.n_heads * d, config.dim)
    first, second = (5, 5 + half) if layout == "half" else (10, 11)  # the two rows of pair 5 in this layout
    weight[2 * d + first, 0], weight[2 * d + second, 1] = 3.0, 4.0  # head 2, pair 5: norm 5
    model.layers[1].attn.q_weight[:] = weight  # W_Q's rows of the fused qkv matrix
    with model.use_positions(layout=layout):
        norms = heads.pair_norms(model)
    assert norms.q.shape == (3, 4, half) and norms.k.shape == (3, 2, half)
    assert norms.q[1, 2, 5] == 5.0 and np.count_nonzero(norms.q[1]) == 1
    total = (model.layers[0].attn.k_weight.double() ** 2).view(2, d, -1).sum((1, 2)).sqrt().numpy()
    assert np.allclose(np.sqrt((norms.k[0] ** 2).sum(-1)), total)  # every row counted once


def test_activation_pair_norms_are_the_rms_of_each_pair_of_q_and_k():
    model, ids = _tiny(), _ids(12, batch=2)
    norms = heads.pair_norms(model, ids)
    x = model.layers[0].attn_norm(model.embed(ids))  # the input of layer 0's attention
    q = torch.nn.functional.linear(x, model.layers[0].attn.q_weight).view(2, 12, 4, 16).double()
    expected = (q[..., :8] ** 2 + q[..., 8:] ** 2).mean(dim=(0, 1)).sqrt().numpy()
    assert norms.q.shape == (3, 4, 8) and norms.k.shape == (3, 2, 8)
    assert np.allclose(norms.q[0], expected, rtol=1e-5)


def test_scores_on_hand_made_attention():
    n = 10
    previous = np.eye(n, k=-1)
    previous[0, 0] = 1  # query 0 can only look at itself
    first = np.zeros((n, n))
    first[:, 0] = 1
    both = np.stack([previous, first])  # (2, n, n)
    assert heads.previous_token_score(both).tolist() == [1.0, 1 / 9]  # query 1's key 0 is also its previous key
    assert heads.first_token_score(both, skip=2).tolist() == [0.0, 1.0]
    assert heads.first_token_score(torch.tensor(first, dtype=torch.float32)) == 1.0
    even = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    assert np.isclose(heads.first_token_score(even, skip=3), heads.uniform_first_token_score(n, skip=3))
    assert abs(heads.uniform_first_token_score(256) - 0.014) < 5e-4


def test_norm_share_is_each_pairs_share_of_the_squared_norm():
    share = heads.norm_share(np.array([[3.0, 4.0, 0.0], [1.0, 1.0, 1.0]]))
    assert np.allclose(share, [[9 / 25, 16 / 25, 0], [1 / 3, 1 / 3, 1 / 3]])
    assert np.allclose(heads.norm_share(heads.pair_norms(_tiny()).q).sum(-1), 1)


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: heads.pair_norms("model"), TypeError, ["model", "Llama", "str"]),
        (lambda: heads.attention_probabilities(_tiny(), _ids(4), layers=3), TypeError, ["layers", "3", "[0, 5]"]),
        (lambda: heads.attention_probabilities(_tiny(), _ids(4), layers=[3]), ValueError, ["layers", "n_layers=3"]),
        (lambda: heads.attention_probabilities(_tiny(), _ids(4), layers=[]), ValueError, ["layers", "empty"]),
        (lambda: heads.attention_probabilities(_tiny(), _ids(4), layers=[1, 1]), ValueError, ["layers", "[1, 1]"]),
        (lambda: heads.attention_probabilities(_tiny(), _ids(4), layers=[-1]), ValueError, ["layers", "-1"]),
        (lambda: heads.attention_probabilities(_tiny(), torch.tensor([[1.0]])), TypeError, ["ids", "float32"]),
        (lambda: heads.previous_token_score([[1.0]]), TypeError, ["probs", "list"]),
        (lambda: heads.previous_token_score(np.ones((2, 3))), ValueError, ["probs", "(2, 3)", "(..., n, n)"]),
        (lambda: heads.previous_token_score(np.ones((1, 1))), ValueError, ["probs", "at least 2", "n = 1"]),
        (lambda: heads.first_token_score(np.ones((3, 3))), ValueError, ["probs", "sum to 1", "scores"]),
        (lambda: heads.first_token_score(np.eye(3) * np.nan), ValueError, ["probs", "finite"]),
        (lambda: heads.first_token_score(np.eye(3, dtype=bool)), TypeError, ["probs", "bool"]),
        (lambda: heads.first_token_score(np.eye(4), skip=4), ValueError, ["skip", "4", "n = 4"]),
        (lambda: heads.first_token_score(np.eye(4), skip=1.5), TypeError, ["skip", "1.5"]),
        (lambda: heads.uniform_first_token_score(0), ValueError, ["n", "0"]),
        (lambda: heads.norm_share(np.array([[1.0, -1.0]])), ValueError, ["norms", ">= 0"]),
        (lambda: heads.norm_share(np.zeros((2, 3))), ValueError, ["norms", "all zero"]),
        (lambda: heads.norm_share(np.array(["a"])), TypeError, ["norms", "dtype"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.slow
def test_smollm2_probabilities_equal_transformers_reading_the_same_gguf():
    model, tokenizer = smollm.load()
    reference = smollm_transformers.load(attn_implementation="eager")  # transformers' reading of the same GGUF
    ids = torch.tensor([tokenizer.encode("Positions enter a Llama only through the rotation of q and k. " * 4)])
    theirs = _eager_attentions(reference, ids)
    layers = [0, 3, 16, 29]
    ours = heads.attention_probabilities(model, ids, layers)
    assert (ours - theirs[:, layers]).abs().max() < 1e-4
    assert np.allclose(heads.previous_token_score(ours), heads.previous_token_score(theirs[:, layers]), atol=1e-5)
    # the weights transformers reads give the pair norms pe_lib reads (q/k rows in the same "half" order)
    q_rows = reference.model.layers[16].self_attn.q_proj.weight.detach().double().view(9, 64, -1).pow(2).sum(-1)
    assert np.allclose(heads.pair_norms(model).q[16], (q_rows[:, :32] + q_rows[:, 32:]).sqrt().numpy())


# Switching pairs off: theta_i = 0 for the chosen pairs, the causal test behind notebook 10's norms


def test_unrotated_pairs_equal_transformers_with_those_inv_freq_set_to_zero():
    model, ids = _tiny(), _ids(40)
    hf = _hf_twin(model)
    pairs = [0, 1, 5]  # head_dim 16: pairs 0..7
    hf.model.rotary_emb.inv_freq[pairs] = 0.0
    with torch.no_grad():
        theirs = hf(ids, use_cache=False).logits
    before = model.positions
    with heads.unrotated_pairs(model, pairs):
        ours = model(ids)
        assert model.positions.pairs == frozenset(pairs)
    assert model.positions is before
    assert (ours - theirs).abs().max() < 1e-4
    assert (ours - model(ids)).abs().max() > 1e-2  # the fast pairs' rotation matters here


def test_unrotated_pairs_make_those_pairs_blind_to_position_and_keep_other_choices():
    model, ids = _tiny(), _ids(30)
    shuffled = torch.randperm(30, generator=torch.Generator().manual_seed(1))
    with heads.unrotated_pairs(model, range(8)):  # every pair: no positions at all, as nope_layers everywhere
        every = model(ids)
        assert torch.allclose(every, model(ids, position_ids=shuffled), atol=1e-5)
    with model.use_positions(nope_layers={0, 1, 2}):
        assert torch.allclose(every, model(ids), atol=1e-5)
    with model.use_positions(layout="interleaved"), heads.unrotated_pairs(model, [2]):
        assert model.positions.layout == "interleaved"
        with heads.unrotated_pairs(model, [3]):  # nested: both sets stay unrotated
            assert model.positions.pairs == frozenset({2, 3})
    with heads.unrotated_pairs(model, []):
        assert torch.equal(model(ids), model(ids))


@pytest.mark.parametrize(
    ("pairs", "error", "words"),
    [
        (3, TypeError, ["pairs", "3"]),
        ("01", TypeError, ["pairs", "'01'"]),
        ([8], ValueError, ["pairs", "head_dim // 2 = 8", "[8]"]),
        ([-1], ValueError, ["pairs", "-1"]),
    ],
)
def test_unrotated_pairs_bad_input(pairs, error, words):
    with pytest.raises(error) as info, heads.unrotated_pairs(_tiny(), pairs):
        pass
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_probabilities_and_norms_are_both_from_one_forward():
    model, ids = _tiny(), _ids(24)
    calls = []
    hook = model.layers[0].register_forward_pre_hook(lambda *args: calls.append(0))
    probs, norms = heads.probabilities_and_norms(model, ids)
    hook.remove()
    assert calls == [0]
    assert torch.equal(probs, heads.attention_probabilities(model, ids))
    alone = heads.pair_norms(model, ids)
    assert np.array_equal(norms.q, alone.q) and np.array_equal(norms.k, alone.k)
