"""SmolLM2-135M-Instruct as transformers reads it from the same GGUF file, read once per machine and cached.

    reference = smollm_transformers.load()             # transformers' LlamaForCausalLM, float32, eval mode
    tokenizer = smollm_transformers.load_tokenizer()   # transformers' tokenizer read from the same GGUF

transformers' from_pretrained(..., gguf_file=...) parses the GGUF's metadata and dequantizes its tensors in
Python: 14-45 s on two cores, every time (its tokenizer alone: 6-8 s). What it builds is deterministic, so the
first call saves the model and the tokenizer (save_pretrained: safetensors, config.json, tokenizer.json) in the
cache directory (smollm.cache_dir(), $PE_LIB_CACHE) and later calls load the saved copies in about a second. The
tests, and ch10_real's record of what transformers does with packed documents, compare pe_lib with these.

A stale copy is never read: the folder's name holds the GGUF's sha256 and the versions of every package
transformers' GGUF reading runs (transformers, torch, gguf, numpy, kernels), so a change of any makes a new
folder. Before a copy is kept it is loaded back and compared with the model transformers just built: every
weight bit for bit, the config, the logits of a few tokens; the tokenizer's vocabulary, merges, pre-tokenizer,
special tokens and chat template, and the ids it gives a text. It is written into a temporary folder and renamed
into place, under a file lock, so that two processes (pytest-xdist's workers) build it once and never read
half of it. benchmarks/bench_llama.py times transformers' own GGUF load and does not use this copy.
"""

import contextlib
import importlib.metadata
import os
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

from . import _validate, smollm

_FORMAT = "1"  # bump when what the folder holds changes
# The packages transformers' GGUF path runs: the reader, the dequantization, the weights' conversion, and
# `kernels`, which (when installed) makes transformers keep the weights packed instead of dequantizing them.
PACKAGES = ("transformers", "torch", "gguf", "numpy", "kernels")
# What a saved copy's config may differ in: where it was read from, and the GGUF marks a saved copy has no use
# for (save_pretrained adds the class name; the quantization config only says the weights came from a GGUF).
_CONFIG_NOTES = ("_name_or_path", "architectures", "quantization_config")
ATTENTION = ("sdpa", "eager")


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "none"


@lru_cache
def _sha256(path, size, mtime_ns):  # size and mtime in the key: a replaced file is hashed again
    return smollm._sha256(path)


def cache_folder(gguf=None):
    """The folder of the saved copy for this GGUF file and these package versions (it may not exist yet)."""
    gguf = Path(gguf or smollm.gguf_path())
    stat = gguf.stat()
    versions = ".".join(f"{p}-{_version(p)}" for p in PACKAGES)
    name = f"{gguf.stem}.transformers-v{_FORMAT}.{_sha256(str(gguf), stat.st_size, stat.st_mtime_ns)[:16]}.{versions}"
    return smollm.cache_dir() / name


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock on the file at path while the block runs (none where fcntl is missing: Windows)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read(folder, **kwargs):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **kwargs).eval()


def differences(built, saved, config=None):
    """What the saved copy does not share with the model transformers built (config: its config as a dict, if the
    model's own was changed since): [] when it is the same model."""
    ours, theirs = built.state_dict(), saved.state_dict()
    found = [f"weights {sorted(set(ours) ^ set(theirs))[:5]}"] if set(ours) != set(theirs) else []
    found += [f"weight {k}" for k in ours if k in theirs and not torch.equal(ours[k], theirs[k])][:5]
    mine, kept = config or built.config.to_dict(), saved.config.to_dict()
    for key in sorted((set(mine) | set(kept)) - set(_CONFIG_NOTES)):
        if mine.get(key) != kept.get(key):
            found.append(f"config {key}: {mine.get(key)!r} != {kept.get(key)!r}")
    if not found:
        ids = torch.arange(1, 17)[None]
        with torch.no_grad():
            if not torch.equal(built(ids).logits, saved(ids).logits):
                found.append("the logits of 16 tokens")
    return found


def tokenizer_differences(built, saved):
    """What the saved tokenizer does not share with the one transformers built: [] when it is the same tokenizer."""
    text = "<|im_start|>user\nPositions matter: 12 + 7 =  19.\n\n1. ok<|im_end|>"
    checks = {
        "class": lambda t: type(t).__name__,
        "vocabulary, merges, pre-tokenizer and decoder": lambda t: t.backend_tokenizer.to_str(),
        "special tokens": lambda t: (t.special_tokens_map, t.all_special_ids),
        "chat template": lambda t: t.chat_template,
        "ids of a text": lambda t: (t.encode(text), t.encode(text, add_special_tokens=False)),
    }
    return [f"tokenizer {name}" for name, read in checks.items() if read(built) != read(saved)]


def _build(gguf, folder):
    """transformers' reading of the GGUF, saved in folder (a temporary one) and checked against what it built."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    smollm._say("transformers reads the GGUF (once; later loads read its saved copy)")
    built = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32).eval()
    config = built.config.to_dict()
    # The weights are plain float32 (dequantized), but the GGUF quantizer marks the model unsaveable: unmark it.
    built.hf_quantizer = None
    vars(built.config).pop("quantization_config", None)
    built.save_pretrained(folder)
    found = differences(built, _read(folder), config)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tokenizer.save_pretrained(folder / "tokenizer")  # a folder of its own: config.json must not choose its class
    found += tokenizer_differences(tokenizer, AutoTokenizer.from_pretrained(str(folder / "tokenizer")))
    if found:
        raise RuntimeError(f"transformers' saved copy of {gguf.name} is not the model it built: {'; '.join(found)}")


def ensure(gguf=None, build=_build):
    """The folder of the saved copy; if missing, built once (under a lock, in a temporary folder renamed into place)."""
    gguf = Path(gguf or smollm.gguf_path())
    folder = cache_folder(gguf)
    if folder.is_dir():
        return folder
    with _locked(folder.with_name(folder.name + ".lock")):
        if folder.is_dir():  # another process built it while this one waited
            return folder
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
        try:
            build(gguf, temporary)
            for path in (temporary, *temporary.rglob("*")):  # mkdtemp makes it private; a cache is readable by all
                path.chmod(0o755 if path.is_dir() else 0o644)
            try:
                os.rename(temporary, folder)
            except OSError:
                if not folder.is_dir():  # only a finished copy, renamed by someone else, is fine
                    raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    return folder


def load(attn_implementation="sdpa"):
    """transformers' LlamaForCausalLM as it reads SmolLM2-135M-Instruct's GGUF, in float32, eval mode.

    attn_implementation: "sdpa" (transformers' default) or "eager" (needed for output_attentions=True).
    The first call on a machine reads the GGUF with transformers (tens of seconds) and saves that model;
    later calls load the saved copy.
    """
    attn_implementation = _validate.choice("attn_implementation", attn_implementation, ATTENTION)
    return _read(ensure(), attn_implementation=attn_implementation)


def load_tokenizer():
    """transformers' tokenizer as it reads SmolLM2-135M-Instruct's GGUF (AutoTokenizer, gguf_file=...), saved once."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(ensure() / "tokenizer"))
