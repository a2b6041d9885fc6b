"""pe_lib.llama: the forward against transformers' LlamaForCausalLM (tiny random models and SmolLM2's real
weights), the rotation against pe_lib.apply_rope, every swappable position choice, memory at 2,048 tokens."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import pe_lib
from pe_lib import llama, smollm, smollm_transformers

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_llama  # noqa: E402

TINY = llama.LlamaConfig(vocab_size=97, dim=64, n_layers=3, n_heads=4, n_kv_heads=2, hidden_dim=96, rope_base=1e4)


def _tiny(seed=0, config=TINY):
    torch.manual_seed(seed)
    model = llama.Llama(config)
    for p in model.parameters():
        torch.nn.init.normal_(p, std=0.3 if p.dim() == 2 else 1.0)  # large enough that positions matter
        if p.dim() == 1:
            p.data = 1 + 0.1 * p.data
    return model.eval().requires_grad_(False)


def _hf_twin(model, rope_parameters=None, max_position_embeddings=2048):
    """transformers' LlamaForCausalLM holding the same weights (q/k in the "half" layout it runs)."""
    c = model.config
    config = transformers.LlamaConfig(
        vocab_size=c.vocab_size,
        hidden_size=c.dim,
        intermediate_size=c.hidden_dim,
        num_hidden_layers=c.n_layers,
        num_attention_heads=c.n_heads,
        num_key_value_heads=c.n_kv_heads,
        rms_norm_eps=c.norm_eps,
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": c.rope_base, **(rope_parameters or {})},
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )
    hf = transformers.LlamaForCausalLM(config).eval()
    names = {"embed": "model.embed_tokens", "norm": "model.norm", "attn_norm": "input_layernorm"}
    names |= {"mlp_norm": "post_attention_layernorm", "attn.q": "self_attn.q_proj", "attn.k": "self_attn.k_proj"}
    names |= {"attn.v": "self_attn.v_proj", "attn.o": "self_attn.o_proj", "mlp.gate": "mlp.gate_proj"}
    names |= {"mlp.up": "mlp.up_proj", "mlp.down": "mlp.down_proj"}
    state = {}
    for name, value in _unfused(model).items():
        if name.startswith("layers."):
            _, i, *rest = name.split(".")
            module = ".".join(rest[:-1])
            state[f"model.layers.{i}.{names[module]}.weight"] = value
        else:
            state[f"{names[name.split('.')[0]]}.weight"] = value
    state["lm_head.weight"] = model.embed.weight
    hf.load_state_dict(state, strict=True)
    return hf


def _unfused(model):
    """model's state dict with q, k, v and gate, up as separate matrices, as transformers (and GGUF) keep them."""
    state = {}
    for name, value in model.state_dict().items():
        if name.endswith("attn.qkv.weight"):
            layer = model.layers[int(name.split(".")[1])].attn
            for part, rows in zip("qkv", (layer.q_weight, layer.k_weight, layer.v_weight), strict=True):
                state[name.replace("qkv", part)] = rows
        elif name.endswith("mlp.gate_up.weight"):
            gate, up = value.chunk(2)
            state[name.replace("gate_up", "gate")], state[name.replace("gate_up", "up")] = gate, up
        else:
            state[name] = value
    return state


def _ids(n, batch=1, seed=1):
    return torch.randint(0, TINY.vocab_size, (batch, n), generator=torch.Generator().manual_seed(seed))


# The rotation is apply_rope's


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize(
    "scaling",
    [
        None,
        {"rope_type": "linear", "factor": 4.0},
        {"rope_type": "dynamic", "factor": 2.0, "max_position_embeddings": 64},
    ],
)
def test_the_rotation_equals_apply_rope(layout, scaling):
    x = torch.randn(2, 3, 100, 16, generator=torch.Generator().manual_seed(0))
    positions = torch.arange(100) * 1.5 + 700  # fractional, offset: nothing special about 0..n-1
    chosen = llama.Positions(base=1e4, scaling=scaling, layout=layout)
    cos, sin = chosen.cos_sin(positions[None], 16)
    ours = llama.rotate(x, cos, sin, layout)
    assert torch.allclose(ours, pe_lib.apply_rope(x, positions, base=1e4, layout=layout, scaling=scaling), atol=1e-6)


def test_the_qk_row_permutations_are_inverses_on_torch_and_numpy():
    w = torch.randn(4 * 16, 8)
    assert torch.equal(llama.half_to_interleaved(llama.interleaved_to_half(w, 4), 4), w)
    assert np.array_equal(llama.interleaved_to_half(w.numpy(), 4), llama.interleaved_to_half(w, 4).numpy())
    # within a head, row 2i moves to i and row 2i + 1 to i + 8
    rows = llama.interleaved_to_half(torch.arange(64.0)[:, None], 4)[:16, 0]
    assert rows.tolist() == [*range(0, 16, 2), *range(1, 16, 2)]


# The forward is transformers' (tiny random models: every block, every position choice)


@pytest.mark.parametrize(
    "rope_parameters",
    [
        None,
        {"rope_type": "linear", "factor": 4.0},
        {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64},
        {"rope_type": "dynamic", "factor": 2.0},
    ],
)
def test_a_tiny_model_equals_transformers(rope_parameters):
    model = _tiny()
    hf = _hf_twin(model, rope_parameters, max_position_embeddings=64)
    scaling = None if rope_parameters is None else dict(rope_parameters)
    if scaling and scaling["rope_type"] == "dynamic":
        scaling["max_position_embeddings"] = 64
    model.positions = llama.Positions(base=TINY.rope_base, scaling=scaling)
    ids = _ids(100, batch=2)
    position_ids = torch.stack([torch.arange(100), torch.arange(100) + 37])  # each row its own positions
    with torch.no_grad():
        theirs = hf(ids, position_ids=position_ids).logits
    ours = model(ids, position_ids=position_ids)
    assert ours.dtype == torch.float32 and ours.shape == (2, 100, TINY.vocab_size)
    assert (ours - theirs).abs().max() < 1e-4


def test_default_positions_are_0_to_n_minus_1_and_a_1d_tensor_is_shared_by_the_batch():
    model, ids = _tiny(), _ids(20, batch=2)
    assert torch.equal(model(ids), model(ids, position_ids=torch.arange(20)))
    assert torch.equal(model(ids), model(ids, position_ids=torch.arange(20).expand(2, 20)))
    assert not torch.allclose(model(ids), model(ids, position_ids=torch.arange(20).flip(0)), atol=1e-3)


def test_positions_enter_only_through_differences():
    """RoPE's relative property on a whole model: shifting every position by the same offset changes nothing."""
    model, ids = _tiny(), _ids(50)
    base = model(ids)
    for offset in (1, 500, 7000):
        assert (model(ids, position_ids=torch.arange(50) + offset) - base).abs().max() < 1e-3


def test_layout_choice_with_permuted_weights_gives_the_same_model():
    model, ids = _tiny(), _ids(30)
    expected = model(ids)
    for layer in model.layers:  # rows into llama.cpp's order: now the weights want the interleaved rotation
        layer.attn.q_weight[:] = llama.half_to_interleaved(layer.attn.q_weight, TINY.n_heads)
        layer.attn.k_weight[:] = llama.half_to_interleaved(layer.attn.k_weight, TINY.n_kv_heads)
    with model.use_positions(layout="interleaved"):
        assert (model(ids) - expected).abs().max() < 1e-4
    assert (model(ids) - expected).abs().max() > 0.1, "the wrong layout for these rows is a different model"


def test_nope_layers_rotate_nothing():
    model, ids = _tiny(), _ids(30)
    shuffled = torch.randperm(30, generator=torch.Generator().manual_seed(0))
    with model.use_positions(nope_layers={0, 1, 2}):  # no position anywhere: position_ids are ignored
        assert torch.equal(model(ids), model(ids, position_ids=shuffled))
        none = model(ids)
    with model.use_positions(nope_layers=[1]):
        one = model(ids)
        assert not torch.equal(one, model(ids, position_ids=shuffled))
    assert (one - model(ids)).abs().max() > 1e-3 and (one - none).abs().max() > 1e-3


def test_half_precision_angles_are_a_choice_that_hurts_far_from_zero():
    model, ids = _tiny(), _ids(40)
    far = torch.arange(40) + 5000

    def error(**changes):
        with model.use_positions(**changes):
            return (model(ids, position_ids=far) - model(ids)).abs().max().item()

    assert error() < 1e-3  # float64 angles: the relative property holds
    assert error(angle_dtype=torch.bfloat16) > 0.1  # angles near 5000 rad rounded to steps of 32 rad
    assert error(freq_dtype=torch.bfloat16) < 1e-3  # a rounded theta is a new, exact ladder: still relative
    assert error(angle_dtype=torch.float32) < error(angle_dtype=torch.bfloat16)


# Padding and packed documents: attention_mask and document_ids


def _left_padded(batch_lengths, n, seed=3):
    """ids (batch, n) left-padded with token 0, its attention_mask, and the real tokens of each row."""
    generator = torch.Generator().manual_seed(seed)
    rows = [torch.randint(1, TINY.vocab_size, (length,), generator=generator) for length in batch_lengths]
    ids = torch.stack([torch.cat([torch.zeros(n - len(row), dtype=torch.int64), row]) for row in rows])
    mask = torch.stack([torch.cat([torch.zeros(n - len(row)), torch.ones(len(row))]) for row in rows]).long()
    return ids, mask, rows


def test_padded_position_ids_are_what_transformers_generate_passes():
    ids, mask, _ = _left_padded([7, 3, 1, 9], 9)
    hf = _hf_twin(_tiny())
    theirs = hf._prepare_position_ids_for_generation(ids, {"attention_mask": mask})
    assert torch.equal(llama.padded_position_ids(mask), theirs)
    assert llama.padded_position_ids(mask)[2].tolist() == [0] * 8 + [0]  # one token: position 0; padding: 0
    assert llama.padded_position_ids(mask.bool()).dtype == torch.int64


def test_a_left_padded_batch_equals_transformers_and_each_row_alone():
    model = _tiny()
    hf = _hf_twin(model)
    ids, mask, rows = _left_padded([20, 13, 1], 20)
    position_ids = llama.padded_position_ids(mask)
    with torch.no_grad():
        theirs = hf(ids, attention_mask=mask, position_ids=position_ids).logits
    ours = model(ids, position_ids=position_ids, attention_mask=mask)
    real = mask.bool()
    assert torch.isfinite(ours).all()  # padding reads itself: no empty row, no nan to spread
    assert (ours - theirs)[real].abs().max() < 1e-4
    for i, row in enumerate(rows):
        assert (ours[i, real[i]] - model(row[None])[0]).abs().max() < 1e-4
    unmasked = model(ids, position_ids=position_ids)  # the bug: real tokens read the padding
    assert (unmasked[1, real[1]] - model(rows[1][None])[0]).abs().max() > 0.1


def test_a_mask_that_hides_nothing_keeps_the_fused_path_and_its_logits():
    model, ids = _tiny(), _ids(12, batch=2)
    plain = model(ids)
    assert torch.equal(model(ids, attention_mask=torch.ones(2, 12)), plain)
    assert torch.equal(model(ids, document_ids=torch.full((2, 12), 5)), plain)
    assert model._mask(ids, torch.ones(2, 12, dtype=torch.bool), torch.zeros(2, 12, dtype=torch.int64)) is None


def test_document_position_ids_restart_at_each_new_run():
    docs = torch.tensor([[0, 0, 0, 1, 1, 2], [4, 4, 4, 4, 4, 4], [0, 1, 0, 0, 9, 9]])
    assert llama.document_position_ids(docs).tolist() == [
        [0, 1, 2, 0, 1, 0],
        [0, 1, 2, 3, 4, 5],
        [0, 0, 0, 1, 0, 1],
    ]


def test_packed_documents_with_their_mask_equal_each_document_alone():
    model, ids = _tiny(), _ids(30)
    docs = torch.tensor([[0] * 11 + [1] * 15 + [2] * 4])
    resets = llama.document_position_ids(docs)
    packed = model(ids, position_ids=resets, document_ids=docs)
    mask_only = model(ids, document_ids=docs)  # positions run on: RoPE sees the same distances
    for d in range(3):
        part = docs[0] == d
        alone = model(ids[:, part])[0]
        assert (packed[0, part] - alone).abs().max() < 1e-4
        assert (mask_only[0, part] - alone).abs().max() < 1e-3
    second = docs[0] == 1
    leak = model(ids, position_ids=resets)[0, second]  # resets without the mask: document 1 reads document 0
    assert (leak - model(ids[:, second])[0]).abs().max() > 0.1


def test_inferred_document_ids_are_transformers_find_packed_sequence_indices():
    from transformers.masking_utils import find_packed_sequence_indices

    for positions in (
        [[0, 1, 2, 0, 1, 0, 1, 2, 3]],
        [[5, 6, 7, 8], [0, 1, 0, 1]],
        [[0, 0, 0, 1, 2]],  # left padding's positions without a mask: each pad is a document of its own
        [[3, 2, 1, 0]],
    ):
        positions = torch.tensor(positions)
        theirs = find_packed_sequence_indices(positions)
        ours = llama.inferred_document_ids(positions)
        assert torch.equal(ours, torch.zeros_like(ours) if theirs is None else theirs), positions
    assert llama.inferred_document_ids(torch.tensor([[0, 1, 2, 0, 1]])).tolist() == [[0, 0, 0, 1, 1]]


def test_packed_rows_in_transformers_are_kept_apart_only_without_a_mask_and_a_cache():
    """transformers has no document_ids: it infers them from position resets, and only without a 2-D mask and cache."""
    model, ids = _tiny(), _ids(30)
    hf = _hf_twin(model)
    docs = torch.tensor([[0] * 12 + [1] * 18])
    resets = llama.document_position_ids(docs)
    inferred = model(ids, position_ids=resets, document_ids=llama.inferred_document_ids(resets))
    leaking = model(ids, position_ids=resets)  # pe_lib hides nothing it is not told to
    assert (inferred - model(ids, position_ids=resets, document_ids=docs)).abs().max() < 1e-5
    with torch.no_grad():
        padding_free = hf(ids, position_ids=resets, use_cache=False).logits
        with_cache = hf(ids, position_ids=resets, use_cache=True).logits
        mask_of_ones = hf(ids, position_ids=resets, attention_mask=torch.ones_like(ids), use_cache=False).logits
    assert hf.config.use_cache  # the config's default: a plain forward builds a cache
    assert (padding_free - inferred).abs().max() < 1e-4
    assert (with_cache - leaking).abs().max() < 1e-4 and (mask_of_ones - leaking).abs().max() < 1e-4
    assert (inferred - leaking)[0, 12:].abs().max() > 0.1


def test_generate_cannot_infer_the_mask_when_the_pad_id_is_the_eos_id():
    """SmolLM2's GGUF pads with its end-of-sequence id (2): generate then reads every token (notebook 10)."""
    hf = _hf_twin(_tiny())
    ids = torch.tensor([[2, 2, 5, 6, 7], [8, 9, 10, 11, 12]])
    for pad, eos, inferred in ((2, 2, False), (2, 3, True)):
        hf.generation_config.pad_token_id, hf.generation_config.eos_token_id = pad, eos
        config, kwargs = hf._prepare_generation_config(None, **{})
        hf._prepare_special_tokens(config, kwargs_has_attention_mask=False)
        mask = hf._prepare_attention_mask_for_generation(ids, config, {})
        expected = ids.ne(2).long() if inferred else torch.ones_like(ids)
        assert torch.equal(mask, expected), (pad, eos)


def test_padding_and_documents_combine():
    model = _tiny()
    ids, mask, _ = _left_padded([10, 6], 10)
    docs = torch.tensor([[0] * 5 + [1] * 5, [0] * 7 + [1] * 3])
    both = model(ids, position_ids=llama.document_position_ids(docs), attention_mask=mask, document_ids=docs)
    part = (docs[1] == 0) & mask[1].bool()  # row 1: four pads, then three tokens of document 0
    assert (both[1, part] - model(ids[1:, part])[0]).abs().max() < 1e-4
    assert torch.isfinite(both).all()


def test_use_positions_restores_after_an_error():
    model = _tiny()
    before = model.positions
    with pytest.raises(RuntimeError), model.use_positions(layout="interleaved"):
        raise RuntimeError("inside")
    assert model.positions is before


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda m: m(torch.tensor([[1.0, 2.0]])), TypeError, ["ids", "float32"]),
        (lambda m: m(torch.tensor([1, 2])), ValueError, ["ids", "(batch, n)", "(2,)"]),
        (lambda m: m(torch.tensor([[1, 97]])), ValueError, ["ids", "[0, 97)", "97"]),
        (lambda m: m(torch.tensor([[1, -1]])), ValueError, ["ids", "-1"]),
        (lambda m: m(torch.tensor([[1, 2]]), position_ids=torch.arange(3)), ValueError, ["position_ids", "(1, 2)"]),
        (lambda m: m(torch.tensor([[1, 2]]), position_ids=[0.0, float("nan")]), ValueError, ["position_ids", "finite"]),
        (lambda m: m(torch.tensor([[1, 2]]), position_ids=[True, False]), TypeError, ["position_ids", "bool"]),
        (lambda m: m(torch.tensor([[1, 2]]), attention_mask=[1, 1]), ValueError, ["attention_mask", "(1, 2)", "(2,)"]),
        (lambda m: m(torch.tensor([[1, 2]]), attention_mask=[[1, 2]]), ValueError, ["attention_mask", "0", "[2]"]),
        (lambda m: m(torch.tensor([[1, 2]]), attention_mask="1 1"), TypeError, ["attention_mask", "'1 1'"]),
        (lambda m: m(torch.tensor([[1, 2]]), document_ids=[[0.0, 1.0]]), TypeError, ["document_ids", "float32"]),
        (lambda m: m(torch.tensor([[1, 2]]), document_ids=[[0, 1, 1]]), ValueError, ["document_ids", "(1, 3)"]),
        (lambda m: llama.padded_position_ids([1, 1, 0]), ValueError, ["attention_mask", "(batch, n)", "(3,)"]),
        (lambda m: llama.padded_position_ids([[1, -1]]), ValueError, ["attention_mask", "[-1]"]),
        (lambda m: llama.document_position_ids([[True, False]]), TypeError, ["document_ids", "torch.bool"]),
        (lambda m: setattr(m, "positions", {"layout": "half"}), TypeError, ["positions", "Positions"]),
        (lambda m: m.use_positions(nope_layers={3}).__enter__(), ValueError, ["nope_layers", "n_layers=3", "[3]"]),
        (lambda m: llama.Positions(layout="neox"), ValueError, ["layout", "'neox'"]),
        (lambda m: llama.Positions(angle_dtype=torch.int32), ValueError, ["angle_dtype", "torch.int32"]),
        (lambda m: llama.Positions(freq_dtype="bfloat16"), ValueError, ["freq_dtype", "'bfloat16'"]),
        (lambda m: llama.Positions(base=1.0), ValueError, ["base", "1.0"]),
        (lambda m: llama.Positions(scaling={"rope_type": "linear"}), ValueError, ["scaling", "'factor'"]),
        (lambda m: llama.Positions(nope_layers=3), TypeError, ["nope_layers", "3"]),
        (lambda m: llama.Positions(nope_layers=[-1]), ValueError, ["nope_layers", "-1"]),
        (lambda m: llama.LlamaConfig(97, 64, 3, 5, 1, 96), ValueError, ["dim=64", "n_heads=5"]),
        (lambda m: llama.LlamaConfig(97, 64, 3, 4, 3, 96), ValueError, ["n_kv_heads=3"]),
        (lambda m: llama.LlamaConfig(97, 0, 3, 4, 2, 96), ValueError, ["dim", "0"]),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error) as info:
        call(_tiny())
    for word in words:
        assert word in str(info.value), (word, str(info.value))


# The real model: SmolLM2-135M-Instruct from its GGUF, against transformers reading the same file


@pytest.fixture(scope="module")
def real():
    model, tokenizer = smollm.load()
    return model, tokenizer, smollm_transformers.load()  # transformers' reading of the GGUF (saved once, checked)


@pytest.mark.slow
def test_smollm2_logits_equal_transformers_within_1e_3(real):
    model, tokenizer, reference = real
    assert reference.config.rope_parameters["rope_theta"] == model.positions.base == 1e5
    text = Path(pe_lib.__file__).with_name("relative.py").read_text()  # prose and code, as the course has
    ids = torch.tensor([tokenizer.encode(text)[:256]])
    offset = torch.arange(256)[None] + 1000
    with torch.no_grad():
        for position_ids in (None, offset):
            theirs = reference(ids, position_ids=position_ids).logits
            ours = model(ids, position_ids=position_ids)
            assert ours.dtype == torch.float32 and ours.shape == (1, 256, 49152)
            assert (ours - theirs).abs().max() < 1e-3
    assert ours.argmax(-1).eq(theirs.argmax(-1)).float().mean() > 0.99


@pytest.mark.slow
def test_smollm2_weights_equal_transformers_bit_for_bit(real):
    model, _, reference = real
    theirs = reference.state_dict()
    assert torch.equal(model.embed.weight, theirs["model.embed_tokens.weight"])
    for i in (0, 29):
        layer, prefix = model.layers[i], f"model.layers.{i}."
        assert torch.equal(layer.attn.q_weight, theirs[prefix + "self_attn.q_proj.weight"])
        assert torch.equal(layer.attn.k_weight, theirs[prefix + "self_attn.k_proj.weight"])
        assert torch.equal(layer.attn.v_weight, theirs[prefix + "self_attn.v_proj.weight"])
        gate, up = layer.mlp.gate_up.weight.chunk(2)
        assert torch.equal(gate, theirs[prefix + "mlp.gate_proj.weight"])
        assert torch.equal(up, theirs[prefix + "mlp.up_proj.weight"])
        assert torch.equal(layer.mlp.down.weight, theirs[prefix + "mlp.down_proj.weight"])
        assert torch.equal(layer.attn_norm.weight, theirs[f"model.layers.{i}.input_layernorm.weight"])


@pytest.mark.slow
def test_smollm2_left_padded_and_packed_batches_equal_transformers_and_each_text_alone(real):
    model, tokenizer, reference = real
    tokens = tokenizer.encode(Path(pe_lib.__file__).with_name("relative.py").read_text())
    rows = [tokens[:48], tokens[100:130], tokens[200:201]]  # a row of one token among them
    ids = torch.tensor([[tokenizer.eos_id] * (48 - len(row)) + row for row in rows])
    mask = torch.tensor([[0] * (48 - len(row)) + [1] * len(row) for row in rows])
    position_ids = llama.padded_position_ids(mask)
    with torch.no_grad():
        theirs = reference(ids, attention_mask=mask, position_ids=position_ids).logits
    ours = model(ids, position_ids=position_ids, attention_mask=mask)
    real_tokens = mask.bool()
    assert (ours - theirs)[real_tokens].abs().max() < 1e-3
    for i, row in enumerate(rows):
        assert (ours[i, real_tokens[i]] - model(torch.tensor([row]))[0]).abs().max() < 1e-3
    docs = torch.tensor([[0] * 40 + [1] * 24])
    packed = torch.tensor([tokens[:40] + tokens[300:324]])
    together = model(packed, position_ids=llama.document_position_ids(docs), document_ids=docs)[0]
    assert (together[:40] - model(packed[:, :40])[0]).abs().max() < 1e-3
    assert (together[40:] - model(packed[:, 40:])[0]).abs().max() < 1e-3


# The peak is VmHWM, the high-water mark of this process's own memory: ru_maxrss would report the
# parent's size too (Linux keeps it across fork + exec), and the parent holds two models.
@pytest.mark.slow
def test_the_benchmark_runs_and_compares_the_same_logits(real, capsys):
    model, tokenizer, reference = real
    argv = ["--lengths", "8", "16", "--repeats", "2", "--profile-length", "16"]
    rows = bench_llama.main(argv, models=(model, reference, tokenizer))
    out = capsys.readouterr().out
    assert "pe_lib s" in out and "transformers s" in out and "ratio" in out and "separate s" in out
    assert [row[0] for row in rows] == [8, 16] and all(row[4] < 1e-3 for row in rows)
    assert out.count("load average") == 2 and "where the time of one forward went" in out and "VmHWM" in out
    profile = out.split("where the time of one forward went")[1]
    assert "(121)" in profile and "(211)" in profile  # 4 products a layer + the logits, against 7 + the logits
    assert "GFLOP/s" in profile and "floor:" in profile


def test_product_flops_count_every_product_of_a_forward():
    """2 operations per weight of every linear layer and of the (tied) embedding, per token: counted from the model."""
    model = _tiny()
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    weights = linear + model.embed.weight.numel()
    assert bench_llama.product_flops(model.config, 3) == 2 * 3 * weights
    smollm2 = llama.LlamaConfig(vocab_size=49152, dim=576, n_layers=30, n_heads=9, n_kv_heads=3, hidden_dim=1536)
    # SmolLM2's 134,515,008 parameters less its 61 norms' 35,136: 2 x 512 x 134,479,872
    assert bench_llama.product_flops(smollm2, 512) == 2 * 512 * (134_515_008 - 61 * 576)


def test_separate_products_are_the_same_model():
    from bench_llama import separate_products

    model, ids = _tiny(), _ids(20)
    fused = model(ids)
    with separate_products(model):
        separate = model(ids)
    assert (fused - separate).abs().max() < 1e-5
    assert "forward" not in vars(model.layers[0].attn) and torch.equal(model(ids), fused)  # restored


MEMORY_PROBE = """
import json, torch
from pe_lib import smollm
model, tokenizer = smollm.load()
ids = torch.randint(0, 49152, (1, 2048), generator=torch.Generator().manual_seed(0))
logits = model(ids)
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"shape": list(logits.shape), "peak_mb": peak_kb / 1024}))
"""


@pytest.mark.slow
def test_smollm2_in_a_fresh_process_peaks_at_most_1_5_gb_at_2048_tokens():
    smollm.load()  # fetched and cached before the probe, so the probe only reads the cache
    out = subprocess.run([sys.executable, "-c", MEMORY_PROBE], capture_output=True, text=True, check=True)
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    assert measured["shape"] == [1, 2048, 49152]
    assert measured["peak_mb"] <= 1536, measured  # no timed assert: benchmarks/bench_llama.py prints the load times
