"""Data shipped with pe_lib, loaded with importlib.resources (works from a checkout, a wheel or a zip).

Provenance and licences: PROVENANCE.md in this folder.
"""

import io
import json
from importlib import resources

import numpy as np

MINILM_FILE = "minilm_embeddings.npz"


def _read_bytes(name):
    return resources.files(__name__).joinpath(name).read_bytes()


def load_minilm_embeddings():
    """The learned position and segment tables of all-MiniLM-L6-v2 (a BERT-family model, Apache-2.0).

    Returns a dict of float32 arrays (stored as float16; rounding error at most 7.5e-5):
        "position": (512, 384)  row p is the vector BERT adds for position p (max_position_embeddings=512)
        "segment":  (2, 384)    row s is the vector added for segment (token type) s
    Each call returns fresh arrays, so changing them in place does not affect later calls.
    """
    with np.load(io.BytesIO(_read_bytes(MINILM_FILE)), allow_pickle=False) as archive:
        return {name: archive[name].astype(np.float32) for name in ("position", "segment")}


def load_json(name):
    """A JSON file shipped in pe_lib/data (e.g. the committed experiment results), as Python objects."""
    return json.loads(_read_bytes(name).decode("utf-8"))
