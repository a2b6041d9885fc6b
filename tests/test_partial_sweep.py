"""pe_lib.partial_sweep: each case computes the rotation it names, the sweep and its --check on a tiny model,
the committed results' form.

The sweep runs every port on the "half" layout by permuting W_q and W_k and choosing frequencies; here the
same model is run with llama.rotate replaced by the port's rotation applied directly (pe_lib.partial_rope),
which must give the same logits.
"""

import copy

import numpy as np
import pytest
import torch

from pe_lib import llama, long_context, smollm
from pe_lib import partial_rope as pr
from pe_lib import partial_sweep as ps

TINY = ps.Setup(length=256, bug_length=128, windows=(128, 256), bucket=64)


@pytest.fixture(scope="module")
def tokenizer():
    return smollm.load()[1]


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    config = llama.LlamaConfig(vocab_size=49152, dim=32, n_layers=2, n_heads=2, n_kv_heads=1, hidden_dim=32,
                               rope_base=1e5, context_length=64)  # fmt: skip
    return llama.Llama(config, llama.Positions(base=1e5)).eval().requires_grad_(False)


def direct_logits(model, ids, case, fraction, monkeypatch):
    """The case run by rotating q and k with its PairPlan directly, on its checkpoint's rows."""
    head_dim = model.config.head_dim
    sigma, plan = ps.case_plan(case, fraction, head_dim)
    positions = np.arange(ids.shape[1], dtype=np.float64)
    monkeypatch.setattr(llama, "rotate", lambda x, cos, sin, layout: pr.apply_pairs(x, plan, positions))
    if sigma is None:
        return model(ids)
    with ps.permuted_qk(model, sigma):
        return model(ids)


@pytest.mark.parametrize("case", ps.CASES)
@pytest.mark.parametrize("fraction", [0.75, 0.5, 0.25])
def test_each_case_computes_the_rotation_it_names(tiny, case, fraction, monkeypatch):
    ids = torch.randint(0, 49152, (1, 40), generator=torch.Generator().manual_seed(2))
    with ps.run_case(tiny, case, fraction):
        swept = tiny(ids)
    with monkeypatch.context() as patch:
        direct = direct_logits(tiny, ids, case, fraction, patch)
    torch.testing.assert_close(swept, direct, rtol=0, atol=1e-4)


def test_the_neox_checkpoint_is_the_same_model_and_the_bugs_are_not(tiny):
    ids = torch.randint(0, 49152, (1, 60), generator=torch.Generator().manual_seed(3))
    logits = {}
    for case in ps.CASES:
        with ps.run_case(tiny, case, 0.5):
            logits[case] = tiny(ids)
    torch.testing.assert_close(logits["neox"], logits["proportional"], rtol=0, atol=1e-4)
    for bug in ("neox_for_proportional", "proportional_for_neox", "whole_head_for_neox"):
        assert (logits[bug] - logits["proportional"]).abs().max() > 1e-3


def test_weights_and_positions_come_back_even_after_an_error(tiny):
    before = copy.deepcopy(tiny.state_dict())
    positions = tiny.positions
    with pytest.raises(RuntimeError, match="inside"), ps.run_case(tiny, "proportional_for_neox", 0.25):
        raise RuntimeError("inside")
    assert tiny.positions is positions
    for key, value in tiny.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_ladder_reads_back_every_ports_frequencies():
    for case in ps.CASES:
        for fraction in (0.75, 0.5, 0.25):
            order, theta = pr.half_layout_order(ps.case_plan(case, fraction, 64)[1])
            base, scaling = ps.ladder(theta, 64)
            assert sorted(order.tolist()) == list(range(64)) and base > 1
    with pytest.raises(ValueError, match="ladder"):
        ps.ladder(np.array([1.0, 0.5, 0.1, 0.0]), 8)
    with pytest.raises(ValueError, match="ladder"):
        ps.ladder(np.array([0.0, 0.0, 0.0, 0.0]), 8)


def test_permuted_qk_refuses_a_non_permutation(tiny):
    with pytest.raises(ValueError, match="permutation"):
        with ps.permuted_qk(tiny, [0] * tiny.config.head_dim):
            pass


@pytest.fixture(scope="module")
def tiny_results(tiny, tokenizer):
    return ps.run_sweep(tiny, tokenizer, long_context.load_prose(), TINY)


def test_the_sweep_on_a_tiny_model_has_every_run_and_cost(tiny_results):
    runs = tiny_results["runs"]
    assert len(runs) == len(ps.plan(TINY)) == 3 + 3 * 4 + 1
    assert all(len(r["bucket_loss"]) == (2 if r["kind"] == "bug" else 4) for r in runs.values())
    for p in TINY.fractions:
        costs = tiny_results["bug_cost"][str(p)]
        assert abs(costs["neox"]) < 1e-3  # the control: the same model, written the other way
        reference = tiny_results["windows"][f"prope-{p}"]["128"]["mean"]
        assert costs["whole_head_for_neox"] == pytest.approx(
            tiny_results["windows"][f"bug-whole_head_for_neox-{p}"]["128"]["mean"] - reference, abs=2e-4
        )


def test_check_agrees_with_its_own_sweep_and_fails_on_a_changed_number(tiny, tokenizer, tiny_results):
    text = long_context.load_prose()
    none = ps.one_run(tiny, torch.tensor([tokenizer.encode(text)[:64]]), "none", (), TINY)
    context = {"bucket_loss": {"none": none["bucket_loss"]}}
    assert ps.check(tiny, tokenizer, tiny_results, text, length=64, context=context, progress=lambda _: None) == []
    changed = copy.deepcopy(tiny_results)
    changed["runs"]["bug-proportional_for_neox-0.5"]["bucket_loss"][0] += 0.1
    problems = ps.check(tiny, tokenizer, changed, text, length=64, context=context, progress=lambda _: None)
    assert len(problems) == 1 and "proportional_for_neox" in problems[0]


def test_the_committed_sweep_is_well_formed_and_beside_notebook_10s():
    results = ps.load_results()
    context = long_context.load_results()
    assert results["text"]["sha256"] == context["text"]["sha256"] == long_context.text_sha256(long_context.load_prose())
    setup = ps.Setup(**{k: tuple(v) if isinstance(v, list) else v for k, v in results["setup"].items()})
    assert setup == ps.Setup() and len(results["runs"]) == len(ps.plan(setup))
    assert context["setup"]["bucket"] == setup.bucket and context["setup"]["length"] == setup.length
    for key, run in results["runs"].items():
        length = setup.bug_length if run["kind"] == "bug" else setup.length
        assert len(run["bucket_loss"]) == length // setup.bucket and all(np.isfinite(run["bucket_loss"])), key
    for p in setup.fractions:
        assert abs(results["bug_cost"][str(p)]["neox"]) < 0.01  # the control on the real model
    rows = ps.window_table(results, context)
    assert rows[0][1][16384] == (context["windows"]["none"]["16384"]["mean"],
                                 context["windows"]["none"]["16384"]["last_quarter"])  # fmt: skip
