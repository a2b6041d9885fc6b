"""pe_lib.smollm_transformers: transformers' reading of the GGUF, saved once per machine, never stale, never half.

The real copy is built and checked by the first test that loads it (tests/test_llama.py, tests/test_heads.py,
tests/test_ch10_real.py); here the cache's rules run on a stand-in file and a tiny model, in a temporary cache.
"""

import threading
import time

import pytest
import torch
import transformers

from pe_lib import smollm_transformers as st


@pytest.fixture
def gguf(tmp_path, monkeypatch):
    """A stand-in GGUF file in an empty cache directory ($PE_LIB_CACHE)."""
    monkeypatch.setenv("PE_LIB_CACHE", str(tmp_path))
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF stand-in")
    return path


def _writer(calls, pause=None):
    def build(gguf, folder):
        calls.append(folder)
        if pause is not None:
            pause.wait(5)
        (folder / "config.json").write_text("{}")

    return build


def _leftovers(directory):
    return [p.name for p in directory.iterdir() if p.name.startswith(".")]


def test_the_copy_is_built_once_and_then_read(gguf):
    calls = []
    folder = st.ensure(gguf, build=_writer(calls))
    assert folder.is_dir() and (folder / "config.json").exists() and len(calls) == 1
    assert calls[0] != folder and not calls[0].exists()  # written elsewhere, renamed into place
    assert st.ensure(gguf, build=_writer(calls)) == folder and len(calls) == 1
    assert (folder / "config.json").stat().st_mode & 0o044 == 0o044 and _leftovers(gguf.parent) == []


def test_the_folder_is_keyed_by_the_file_and_every_version(gguf, monkeypatch):
    name = st.cache_folder(gguf).name
    assert "transformers-" + transformers.__version__ in name and "torch-" + torch.__version__ in name
    assert all(f".{package}-" in name for package in st.PACKAGES)
    gguf.write_bytes(b"another GGUF")
    assert st.cache_folder(gguf).name != name  # other content, another folder
    monkeypatch.setattr(st, "_version", lambda package: "0.0" if package == "gguf" else "1")
    assert ".gguf-0.0." in st.cache_folder(gguf).name


def test_two_builders_at_once_build_one_copy(gguf):
    calls, pause, folders = [], threading.Event(), []
    threads = [threading.Thread(target=lambda: folders.append(st.ensure(gguf, _writer(calls, pause)))) for _ in "ab"]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # the first builds and waits; the second waits for the lock
    pause.set()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1 and len(folders) == 2 and folders[0] == folders[1] and _leftovers(gguf.parent) == []


def test_a_copy_renamed_into_place_by_another_process_is_kept(gguf):
    """Without the lock (a file system without flock), the second rename fails; the finished copy stands."""
    folder = st.cache_folder(gguf)

    def beaten(gguf, temporary):
        (temporary / "config.json").write_text('{"mine": true}')
        folder.mkdir()
        (folder / "config.json").write_text('{"theirs": true}')

    assert st.ensure(gguf, build=beaten) == folder
    assert (folder / "config.json").read_text() == '{"theirs": true}' and _leftovers(gguf.parent) == []


def test_a_failed_build_leaves_nothing(gguf):
    def failing(gguf, folder):
        (folder / "model.safetensors").write_text("half")
        raise RuntimeError("the saved copy is not the model it built")

    with pytest.raises(RuntimeError, match="not the model"):
        st.ensure(gguf, build=failing)
    assert not st.cache_folder(gguf).exists() and _leftovers(gguf.parent) == []


def test_differences_name_what_a_saved_copy_changed(tmp_path):
    config = transformers.LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    torch.manual_seed(0)
    built = transformers.LlamaForCausalLM(config).eval()
    built.save_pretrained(tmp_path)
    saved = st._read(tmp_path)
    assert st.differences(built, saved) == []
    with torch.no_grad():
        saved.model.layers[0].mlp.up_proj.weight[0, 0] += 1e-7
    assert st.differences(built, saved) == ["weight model.layers.0.mlp.up_proj.weight"]
    saved = st._read(tmp_path, rms_norm_eps=1e-3)
    assert st.differences(built, saved) == [f"config rms_norm_eps: {config.rms_norm_eps!r} != 0.001"]


def test_tokenizer_differences_name_what_a_saved_copy_changed(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    backend = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "positions": 2, "matter": 3}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    built = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", bos_token="<s>")
    built.save_pretrained(tmp_path)
    saved = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert st.tokenizer_differences(built, saved) == []
    saved.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True)])
    assert st.tokenizer_differences(built, saved) == [
        "tokenizer vocabulary, merges, pre-tokenizer and decoder",
        "tokenizer ids of a text",
    ]
