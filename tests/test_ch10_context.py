"""Notebook 10, section 7 (pe_lib.ch10_context): the sweep's prices, the toy beside the model with each side's
stretch and paired differences, and dynamic NTK under a cache — checked against transformers' own cached
generation on a tiny random model."""

import numpy as np
import pytest
import torch
import transformers

from pe_lib import ch10_context, extrapolation, long_context


@pytest.fixture(scope="module")
def sweep():
    return long_context.load_results()


@pytest.fixture(scope="module")
def toy():
    return extrapolation.load_results()


def test_prices_are_the_sweeps_windows(sweep):
    prices = ch10_context.extension_prices(sweep)
    assert list(prices) == list(long_context.METHODS)
    for method, values in prices.items():
        assert values["far"] == sweep["windows"][method]["16384"]["last_quarter"]
        assert values["inside"] == sweep["windows"][method]["4096"]["mean"]
        # the first 8,192 positions of the long forward, recomputed from its bucket means
        long = long_context.window_summary(sweep["bucket_loss"][method], 8192, sweep["setup"]["bucket"])["mean"]
        assert abs(values["first_half_long"] - long) < 1e-12
    assert prices["none"]["inside_cost"] == 0 and prices["linear"]["inside_cost"] > 1
    text = ch10_context.prices_table(prices)
    assert "dynamic NTK" in text.splitlines()[0] and "+1.158" in text and "6.18" in text


def test_each_row_names_both_stretches_and_its_answer_follows_its_numbers(sweep, toy):
    rows = ch10_context.toy_vs_model(sweep, toy)
    assert [row.claim for row in rows][0] == "RoPE unchanged carries to 2L" and len(rows) == 6
    for row in rows:
        assert ("2L" in row.toy_evidence or "4L" in row.toy_evidence) and "L" in row.model_evidence
    helps = [row for row in rows if "helps past L" in row.claim]
    assert all("at 4L" in row.toy_evidence and "1.5L-2L" in row.model_evidence for row in helps)
    text = ch10_context.comparison_text(rows)
    assert text.count("DIFFERENT answer") == 3 and text.count("same answer") == 3


def test_paired_differences_are_per_seed_and_per_block(sweep, toy):
    gap = ch10_context.toy_seed_differences(toy, "ntk", "yarn", 4)
    assert set(gap) == {"shift", "local_max"} and all(len(v) == 5 for v in gap.values())
    seed0 = next(r for r in toy["runs"] if r["task"] == "local_max" and r["positional"] == "rope" and r["seed"] == 0)
    ext = seed0["extension"]
    assert gap["local_max"][0] == ext["ntk"]["4"]["zero_shot"] - ext["yarn"]["4"]["zero_shot"]
    blocks = ch10_context.model_block_differences(sweep, "ntk", "yarn")
    assert len(blocks) == 8
    assert blocks[-1] == sweep["bucket_loss"]["yarn"][-1] - sweep["bucket_loss"]["ntk"][-1]


def test_dynamic_cache_drift_is_zero_inside_the_trained_length_and_large_past_it(sweep):
    inside = ch10_context.dynamic_cache_drift(8000, [10, 4000], sweep)
    assert all(error < 1e-9 for error, _ in inside.values())  # RoPE unchanged throughout: cached = one forward
    past = ch10_context.dynamic_cache_drift(16383, [100, 12000], sweep)
    assert all(1.0 < error <= np.pi for error, _ in past.values())
    assert ch10_context.dynamic_cache_drift(16383, [16382], sweep)[16382][0] < 0.1  # a key rotated one step earlier
    with pytest.raises(ValueError, match="keys must be positions before the query 100"):
        ch10_context.dynamic_cache_drift(100, [100], sweep)


def test_transformers_cached_generation_with_dynamic_ntk_differs_from_one_forward():
    """What the notebook says, run in transformers: past max_position_embeddings a cached forward keeps earlier keys
    at their old rotation (dynamic NTK), so it differs from one forward; with RoPE unchanged it does not."""

    def run(rope_parameters):
        torch.manual_seed(0)
        config = transformers.LlamaConfig(
            vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=2, max_position_embeddings=16, attn_implementation="eager",
            rope_parameters={"rope_theta": 100.0, **rope_parameters},
        )  # fmt: skip
        model = transformers.LlamaForCausalLM(config).eval()
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.5)
        ids = torch.randint(0, 50, (1, 40), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            whole = model(ids, use_cache=False).logits[0, -1]
            out = model(ids[:, :8], use_cache=True)  # a prompt inside max_position_embeddings, then token by token
            cache = out.past_key_values  # the output keeps its name
            for i in range(8, 40):
                out = model(ids[:, i : i + 1], cache=cache, use_cache=True)
                cache = out.past_key_values  # the output keeps its name
        return (out.logits[0, -1] - whole).abs().max().item()

    assert run({"rope_type": "default"}) < 1e-4
    assert run({"rope_type": "dynamic", "factor": 2.0}) > 1e-2
