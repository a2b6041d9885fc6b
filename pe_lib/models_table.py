"""Published models' position schemes (the shipped table) and what a checkpoint conversion does to them.

The table, pe_lib/data/position_schemes.json, lists for each model its method (learned, t5, rope,
alibi) and the numbers its published configuration gives, each with its source. This module loads
it, derives the length scales a model's positions work at (RoPE wavelengths, ALiBi reach, T5
bucket starts, learned rows), and holds two facts about real checkpoints: the row permutation
the Llama conversion applies to W_q and W_k, and the position ids RoBERTa gives its tokens.
NumPy only; the figures that draw these live in ch09_wild.
"""

import copy

import numpy as np

from . import _validate, data, relative, rope_scaling

SCHEMES_FILE = "position_schemes.json"
METHODS = ("learned", "t5", "rope", "alibi")
ALIBI_REACH = 10.0  # a head's reach: the distance at which its bias -m * distance reaches -10 (weight e^-10)
_TABLE = None


def load_position_schemes():
    """Every model of the shipped table, a list of dicts (fresh copies: changing one changes nothing else).

    Keys: name, hub, method; three lengths kept apart: trained_context (the longest sequences of the last
    (pre-)training stage), max_position_embeddings (the config's ceiling, None where the scheme has none) and
    sliding_window (None unless each layer sees only a window); sources (value name -> citation); per method:
    learned rows, first_row, token_types; t5 num_heads, num_buckets, max_distance; rope num_heads, head_dim,
    rotary_dim, base, layout, scaling; alibi num_heads.
    """
    global _TABLE
    if _TABLE is None:
        _TABLE = data.load_json(SCHEMES_FILE)["models"]
    return copy.deepcopy(_TABLE)


def model_names():
    """The names of the table's models, in table order."""
    return [entry["name"] for entry in load_position_schemes()]


def scheme(name):
    """The table entry of model `name` (a fresh dict)."""
    names = model_names()
    _validate.one_of("name", name, names)
    return load_position_schemes()[names.index(name)]


def score_reach(entry):
    """The longest query-key distance a score of `entry` met in training: its trained context, or its window if shorter.

    A sliding window caps every score's distance: Mistral 7B v0.1 trained at 8,192 tokens but each layer
    looks back at most 4,096, so no score ever saw a distance past 4,096.
    """
    if not isinstance(entry, dict) or not {"trained_context", "sliding_window"} <= set(entry):
        raise ValueError(
            f"entry must be a table entry (models_table.scheme(name)) with 'trained_context' and 'sliding_window', "
            f"got {entry!r}"
        )
    window = entry["sliding_window"]
    return entry["trained_context"] if window is None else min(entry["trained_context"], window)


def length_scales(entry):
    """(component labels, lengths in tokens) that say at which distances each part of `entry`'s scheme works.

    rope: each turned pair's wavelength 2*pi/theta_i (with the config's scaling); alibi: each head's
    reach ALIBI_REACH / slope; t5: the first distance of each bucket of one direction (bidirectional,
    so num_buckets // 2 of them); learned: the rows of the table and the positions a sequence can use.
    """
    method = entry["method"]
    if method == "rope":
        theta = rope_scaling.rope_frequencies(entry["rotary_dim"], base=entry["base"], scaling=entry["scaling"])
        return [f"pair {i}" for i in range(len(theta))], 2 * np.pi / theta
    if method == "alibi":
        slopes = relative.alibi_slopes(entry["num_heads"])
        return [f"head {h + 1}" for h in range(len(slopes))], ALIBI_REACH / slopes
    if method == "t5":
        distances = np.arange(entry["max_distance"] + 1)
        buckets = relative.t5_relative_bucket(
            -distances, num_buckets=entry["num_buckets"], max_distance=entry["max_distance"]
        )
        starts = np.array([distances[buckets == b].min() for b in range(entry["num_buckets"] // 2)], dtype=float)
        return [f"bucket {b}" for b in range(len(starts))], np.maximum(starts, 1.0)  # bucket 0 (distance 0) drawn at 1
    if method == "learned":
        return ["table rows", "usable positions"], np.array([entry["rows"], entry["rows"] - entry["first_row"]], float)
    raise ValueError(f"entry['method'] must be one of {', '.join(map(repr, METHODS))}, got {method!r}")


def summary(entry):
    """One line about `entry`'s scheme against the distances its training scored (for the rendered table)."""
    method, reach = entry["method"], score_reach(entry)
    _, lengths = length_scales(entry)
    if method == "rope":
        never = int((lengths > reach).sum())
        return f"{never} of {len(lengths)} turned pairs never complete a turn within the {reach:,} trained distances"
    if method == "alibi":
        heads = int((lengths >= reach).sum())
        return f"{heads} of {len(lengths)} heads reach all {reach:,} trained tokens (bias above -{ALIBI_REACH:g})"
    if method == "t5":
        return f"every distance from {int(lengths[-1])} on shares the last bucket (encoder, bidirectional)"
    return f"{entry['rows']:,} rows; a sequence may hold {entry['rows'] - entry['first_row']:,} tokens"


def llama_permutation(head_dim):
    """The order in which the Llama conversion takes one head's rows: (0, 2, 4, ..., 1, 3, 5, ...), shape (head_dim,).

    Row 2i (the first feature of interleaved pair i) becomes row i, row 2i + 1 becomes row i + head_dim/2:
    the interleaved pairs become the half layout's pairs (i, i + head_dim/2), with the same frequency.
    """
    head_dim = _validate.even_int("head_dim", head_dim, "RoPE turns pairs of features")
    return np.concatenate([np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)])


def permute_for_half_layout(weight, num_heads):
    """W_q or W_k (num_heads * head_dim, d_in), rows reordered head by head with llama_permutation.

    This is what Hugging Face's convert_llama_weights_to_hf.py does to Meta's interleaved checkpoints so
    that rotate_half code computes the same scores. Returns a new array; `weight` is not changed.
    """
    weight = np.asarray(weight)
    num_heads = _validate.positive_int("num_heads", num_heads)
    if weight.ndim != 2 or weight.shape[0] % num_heads or (weight.shape[0] // num_heads) % 2:
        raise ValueError(
            f"weight must have shape (num_heads * head_dim, d_in) with an even head_dim, "
            f"num_heads={num_heads}, got {weight.shape}"
        )
    head_dim = weight.shape[0] // num_heads
    order = np.concatenate([h * head_dim + llama_permutation(head_dim) for h in range(num_heads)])
    return weight[order]


def roberta_position_ids(token_ids, padding_idx=1):
    """The position ids RoBERTa gives a sequence (n,) of token ids: padding_idx + 1, + 2, ... for real tokens.

    Padding tokens (== padding_idx) get padding_idx itself, a row that is never trained. So a
    sequence of n real tokens needs rows up to padding_idx + n: RoBERTa's 514 rows hold 512 tokens.
    """
    ids = _validate.as_numpy(token_ids)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"token_ids must be a 1-D array of ints, got shape {ids.shape} and dtype {ids.dtype}")
    padding_idx = _validate.count("padding_idx", padding_idx)
    real = ids != padding_idx
    return np.where(real, np.cumsum(real) + padding_idx, padding_idx)
