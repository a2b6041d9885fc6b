"""pe_lib.decoder: the tiny causal decoder of notebook 08 with its position methods, and its RoPE copies."""

import math

import numpy as np
import pytest
import torch

import pe_lib
from pe_lib import decoder
from pe_lib import extrapolation as ex

TINY = ex.Config(train_len=8, shift=2, window=2, steps=20, batch_size=8, eval_size=16, finetune_steps=(2, 4))


@pytest.mark.parametrize("positional", ex.VARIANTS)
def test_every_variant_is_causal(positional):
    torch.manual_seed(0)
    model = decoder.TinyDecoder(positional, TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (3, 10))
    changed = tokens.clone()
    changed[:, 6:] = (changed[:, 6:] + 1) % TINY.vocab_size  # change only the future of position 5
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    assert a.shape == (3, 10, TINY.vocab_size)
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6)
    assert not torch.allclose(a[:, 6:], b[:, 6:])


@pytest.mark.parametrize("positional", ["none", "rope", "rope_1e6", "alibi", "t5", "t5_far"])
def test_relative_variants_do_not_see_where_a_sequence_starts(positional):
    torch.manual_seed(0)
    model = decoder.TinyDecoder(positional, TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 8))
    with torch.no_grad():
        assert torch.allclose(model(tokens, 0), model(tokens, 20), atol=1e-5)


@pytest.mark.parametrize("positional", ["learned", "sinusoidal"])
def test_absolute_variants_do_and_refuse_positions_past_their_table(positional):
    torch.manual_seed(0)
    model = decoder.TinyDecoder(positional, TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 8))
    with torch.no_grad():
        assert not torch.allclose(model(tokens, 0), model(tokens, 20), atol=1e-3)
        with pytest.raises(ValueError, match="do not fit"):
            model(tokens, TINY.max_position - 4)


def test_alibi_adds_the_libraries_bias_and_t5_one_learned_scalar_per_bucket():
    torch.manual_seed(0)
    alibi = decoder.TinyDecoder("alibi", TINY)
    bias = alibi._bias(6).numpy()
    assert np.allclose(bias, pe_lib.alibi_bias(6, TINY.num_heads, causal=True), atol=1e-6)
    t5 = decoder.TinyDecoder("t5", TINY)
    bias = t5._bias(40)
    buckets = pe_lib.t5_relative_bucket(
        -np.arange(40), bidirectional=False, num_buckets=TINY.t5_buckets, max_distance=TINY.t5_max_distance
    )
    table = t5.buckets.weight.detach()
    for distance in (0, 3, 9, 39):
        assert torch.allclose(bias[:, distance, 0], table[buckets[distance]])
    assert torch.isneginf(bias[:, 0, 1]).all()


def test_extended_copies_rescale_the_frequencies_and_leave_the_model_alone():
    torch.manual_seed(0)
    model = decoder.TinyDecoder("rope", TINY)
    head = TINY.d_model // TINY.num_heads
    for method in decoder.EXTENSIONS:
        extended = model.extended(method, 4)
        theta = extended.layers[0].rotary.theta
        scaling = decoder.extension_scaling(method, 4, TINY.train_len)
        assert np.array_equal(theta, pe_lib.rope_frequencies(head, base=1e4, scaling=scaling))
        expected_scale = (0.1 * math.log(4) + 1) ** 2 if method in ("yarn", "yarn_paper") else 1.0
        assert all(layer.logit_scale == pytest.approx(expected_scale) for layer in extended.layers)
        for a, b in zip(model.parameters(), extended.parameters(), strict=True):
            assert a is not b and torch.equal(a, b)
    assert np.array_equal(model.layers[0].rotary.theta, pe_lib.rope_frequencies(head, base=1e4))
    assert all(layer.logit_scale == 1.0 for layer in model.layers)
    with pytest.raises(ValueError, match="only RoPE"):
        decoder.TinyDecoder("alibi", TINY).extended("ntk", 2)
    with pytest.raises(ValueError, match="method"):
        model.extended("dynamic", 2)


def test_retuned_copies_turn_at_the_given_frequencies_and_check_them():
    torch.manual_seed(0)
    model = decoder.TinyDecoder("rope", TINY).eval()
    theta = pe_lib.rope_frequencies(8, base=1e4)
    same = model.retuned(theta)
    tokens = torch.randint(0, TINY.vocab_size, (2, 12))
    with torch.no_grad():
        assert torch.equal(same(tokens), model(tokens))
        slower = theta.copy()
        slower[1] /= 4
        assert not torch.allclose(model.retuned(slower)(tokens), model(tokens))
    with pytest.raises(ValueError, match="4 finite frequencies"):
        model.retuned(theta[:3])
    with pytest.raises(ValueError, match="only RoPE"):
        decoder.TinyDecoder("t5", TINY).retuned(theta)


def test_t5_reaches_every_bucket_in_training_and_t5_far_does_not():
    config = ex.Config()  # the sweep's settings: train_len 16, 16 buckets
    seen = np.arange(config.train_len)  # every distance a training sequence holds
    for max_distance, reached in ((config.t5_max_distance, 16), (config.t5_far_max_distance, 12)):
        buckets = pe_lib.t5_relative_bucket(-seen, bidirectional=False, num_buckets=16, max_distance=max_distance)
        assert len(set(buckets.tolist())) == reached
    far = decoder.TinyDecoder("t5_far", config)._bias(64)
    near = decoder.TinyDecoder("t5", config)._bias(64)
    assert near.shape == far.shape == (config.num_heads, 64, 64)


def test_dynamic_ntk_recomputed_equals_ntk_and_cached_keeps_each_positions_own_frequencies():
    torch.manual_seed(0)
    model = decoder.TinyDecoder("rope", TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 4 * TINY.train_len))
    with torch.no_grad():
        recomputed = model.dynamic_ntk(1.0, cached=False)(tokens)
        assert torch.allclose(recomputed, model.extended("ntk", 4)(tokens), atol=1e-5)  # factor 1 at 4L: NTK at 4
        short = tokens[:, : TINY.train_len]  # up to L nothing is rescaled, cached or not
        assert torch.allclose(model.dynamic_ntk(2.0, cached=True)(short), model(short), atol=1e-5)
        cached = model.dynamic_ntk(2.0, cached=True)(tokens)
        again = model.dynamic_ntk(2.0, cached=False)(tokens)
        first = slice(0, TINY.train_len)  # cached: these were computed when the sequence was at most L long
        assert torch.allclose(cached[:, first], model(tokens)[:, first], atol=1e-5)
        assert not torch.allclose(again[:, first], model(tokens)[:, first], atol=1e-3)  # recomputed: rescaled
        assert not torch.allclose(cached[:, -4:], again[:, -4:], atol=1e-3)  # older keys, other frequencies
        # cached: position p's output does not depend on the sequence's length, as with a real cache
        assert torch.allclose(cached[:, :20], model.dynamic_ntk(2.0, cached=True)(tokens[:, :20]), atol=1e-5)
    with pytest.raises(ValueError, match="only RoPE"):
        decoder.TinyDecoder("alibi", TINY).dynamic_ntk(2.0, cached=False)
    with pytest.raises(TypeError, match="cached"):
        model.dynamic_ntk(2.0, cached="yes")


@pytest.mark.parametrize("positional", ["rope", "t5", "alibi"])
def test_hiding_masks_exactly_the_keys_at_those_distances(positional):
    torch.manual_seed(0)
    model = decoder.TinyDecoder(positional, TINY).eval()
    tokens = torch.randint(0, TINY.vocab_size, (2, 12))
    hidden = model.hiding([3])
    changed = tokens.clone()
    changed[:, 4] = (changed[:, 4] + 1) % TINY.vocab_size  # position 4 is 3 back from position 7
    with torch.no_grad():
        first = hidden.layers[0]  # one layer: position 7 attends to 4 only if distance 3 is visible
        x, y = (hidden.embedding(t) * math.sqrt(TINY.d_model) for t in (tokens, changed))
        bias = hidden._bias(12)
        assert torch.isneginf(bias[:, 7, 4]).all() and not torch.isneginf(bias[:, 7, 5]).any()
        a, b = first(x, None, bias), first(y, None, bias)
        assert torch.allclose(a[:, 7], b[:, 7], atol=1e-6)  # the key 3 back is invisible to position 7
        assert not torch.allclose(model.layers[0](x, None, model._bias(12))[:, 7],
                                  model.layers[0](y, None, model._bias(12))[:, 7], atol=1e-6)  # fmt: skip
    assert model.hidden_distances == () and hidden.hidden_distances == (3,)
    with pytest.raises(ValueError, match="distance"):
        model.hiding([0])
