"""pe_lib.long_context: the chunked loss, the passkey prompt, the committed context-extension sweep and its --check.

The sweep itself runs on a tiny random Llama with the real tokenizer (seconds); the committed file is
checked for its form and its internal consistency, and the check is shown to fail on a changed number.
"""

import copy
import subprocess
import sys

import numpy as np
import pytest
import torch

from pe_lib import llama, smollm, sweeps
from pe_lib import long_context as lc

TINY = lc.Setup(
    original=64, length=256, windows=(64, 256), bucket=64, passkey_lengths=(128,), passkey_trials=2, passkey_long=()
)


@pytest.fixture(scope="module")
def tokenizer():
    return smollm.load()[1]


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    config = llama.LlamaConfig(
        vocab_size=49152, dim=16, n_layers=2, n_heads=2, n_kv_heads=1, hidden_dim=16, rope_base=1e5, context_length=64
    )
    model = llama.Llama(config, llama.Positions(base=1e5))
    return model.eval().requires_grad_(False)


@pytest.fixture(scope="module")
def tiny_results(tiny, tokenizer):
    return lc.run_sweep(tiny, tokenizer, lc.load_prose(), TINY)


def test_token_losses_equal_the_mean_loss_of_the_full_logits_for_any_chunk(tiny):
    ids = torch.randint(0, 49152, (1, 100), generator=torch.Generator().manual_seed(1))
    full = llama.next_token_loss(tiny(ids), ids)
    for chunk in (7, 99, 1024):
        losses = lc.token_losses(tiny, ids, chunk=chunk)
        assert losses.shape == (99,) and losses.mean() == pytest.approx(full, abs=1e-5)


def test_bucket_means_and_window_summary_count_every_predicted_token_once():
    losses = np.arange(1.0, 8.0)  # predictions of tokens 1..7
    assert lc.bucket_means(losses, 4).tolist() == [2.0, 5.5]  # tokens 1-3, tokens 4-7
    summary = lc.window_summary([2.0, 5.5], 8, 4)
    assert summary["mean"] == pytest.approx(losses.mean()) and summary["last_quarter"] == 5.5


def test_only_dynamic_ntk_within_the_trained_context_runs_the_unscaled_frequencies():
    assert lc.same_as_unscaled("none", 16384) and lc.same_as_unscaled("dynamic", 8192)
    assert not lc.same_as_unscaled("dynamic", 8193)
    assert not any(lc.same_as_unscaled(m, 4096) for m in ("linear", "ntk", "yarn"))  # yarn: its temperature


def test_the_passkey_prompt_fits_its_length_and_hides_the_key_at_its_depth(tokenizer):
    positions = []
    for depth in (0.0, 0.5, 1.0):
        prompt, answer = lc.passkey_prompt(tokenizer, 1000, depth, 12345)
        text = tokenizer.decode(prompt)
        assert len(prompt) + len(answer) <= 1000 and text.endswith("The pass key is")
        assert tokenizer.decode(answer) == " 12345" and text.count("12345") == 2
        positions.append(text.index("12345") / len(text))
    assert positions[0] < 0.1 < positions[1] < 0.9 < positions[2]


def test_greedy_answer_reads_greedy_decoding_from_one_forward(tiny):
    prompt, answer = [5, 6, 7], [8, 9, 10]
    correct, predicted = lc.greedy_answer(tiny, prompt, answer)
    ids, generated = list(prompt), []
    for _ in answer:  # greedy decoding, one token at a time, fed its own tokens
        generated.append(int(tiny(torch.tensor([ids]))[0, -1].argmax()))
        ids.append(answer[len(generated) - 1])  # teacher forcing: the next step sees the answer's token
    assert predicted == generated and correct == (generated == answer)


def test_the_sweep_on_a_tiny_model_covers_every_method_and_window(tiny_results):
    results = tiny_results
    assert set(results["bucket_loss"]) == set(lc.METHODS) and all(len(b) == 4 for b in results["bucket_loss"].values())
    assert results["windows"]["dynamic"]["64"]["from"] == "none"  # within the original context: RoPE unchanged
    assert (
        results["windows"]["dynamic"]["256"]["from"] == "dynamic" and results["windows"]["yarn"]["64"]["from"] == "yarn"
    )
    assert len(results["passkey"]) == 2 and {t["length"] for t in results["passkey"]} == {128}
    assert sweeps.results_json(results) == sweeps.results_json(copy.deepcopy(results))


def test_check_agrees_with_its_own_sweep_and_fails_on_a_changed_number(tiny, tokenizer, tiny_results):
    text = lc.load_prose()
    assert lc.check(tiny, tokenizer, tiny_results, text, length=64, passkeys=1, progress=lambda _: None) == []
    changed = copy.deepcopy(tiny_results)
    changed["bucket_loss"]["yarn"][0] += 0.05
    problems = lc.check(tiny, tokenizer, changed, text, length=64, passkeys=1, progress=lambda _: None)
    assert problems and "yarn" in problems[0]
    flipped = copy.deepcopy(tiny_results)
    flipped["passkey"][0]["answer"] += "0"
    assert lc.differences(flipped, {"passkey": tiny_results["passkey"][:1]})
    assert lc.check(tiny, tokenizer, tiny_results, text + " ", length=64, passkeys=0, progress=lambda _: None)


def test_the_committed_sweep_is_well_formed_and_consistent(tokenizer):
    results = lc.load_results()
    setup = lc.Setup()
    assert results["setup"]["windows"] == list(setup.windows) and results["setup"]["bucket"] == setup.bucket
    text = lc.load_prose()
    assert results["text"]["sha256"] == lc.text_sha256(text) and len(tokenizer.encode(text)) >= setup.length
    assert set(results["bucket_loss"]) == set(lc.METHODS)
    for values in results["bucket_loss"].values():
        assert len(values) == setup.length // setup.bucket and np.all(np.isfinite(values))
    for method in lc.METHODS:
        assert set(results["windows"][method]) == {str(w) for w in setup.windows}
        for window, cell in results["windows"][method].items():
            again = lc.window_summary(results["bucket_loss"][cell["from"]], int(window), setup.bucket)
            assert cell["mean"] == pytest.approx(again["mean"], abs=1e-4)
    assert results["scaling"] == {m: lc.scaling(m) for m in lc.METHODS}
    lengths = {t["length"] for t in results["passkey"] if t["method"] == "none"}
    assert lengths >= {2048, 4096} and all(isinstance(t["correct"], bool) for t in results["passkey"])


def test_the_sweep_has_one_entry_point_python_dash_m():
    run = subprocess.run([sys.executable, "-m", "pe_lib.long_context", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "--check" in run.stdout
