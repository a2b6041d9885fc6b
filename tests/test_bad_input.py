"""Bad input gets a clear error naming the argument, its value and what is allowed: one case per test."""

import re

import numpy as np
import pytest
import torch

import pe_lib
import pe_lib.experiments
from pe_lib import (
    accessible,
    audit,
    ch10_context,
    decoder,
    extrapolation,
    figures,
    heads,
    hybrid_layers,
    layer_schemes,
    layer_types,
    layered,
    llama,
    long_context,
    mla,
    models_table,
    multidim,
    omni_positions,
    partial_rope,
    partial_sweep,
    position_scales,
    precision,
    rope_config,
    smollm,
    smollm_transformers,
)
from pe_lib import ch01_order as ch01
from pe_lib import ch02_naive as ch02
from pe_lib import ch03_sinusoidal as ch03
from pe_lib import ch04_pendulum as ch04
from pe_lib import ch05_learned as ch05
from pe_lib import ch06_pipeline as ch06
from pe_lib import ch08_extension as ch08
from pe_lib import ch09_wild as ch09
from pe_lib import ch10_real as ch10
from pe_lib import ch11_beyond as ch11
from pe_lib import ch12_positions_2026_exercises as ch12x

CASES = {
    # sinusoidal_encoding and friends
    "d_model zero": (lambda: pe_lib.sinusoidal_encoding(4, 0), ValueError, ["d_model", "0", "positive int"]),
    "d_model negative": (lambda: pe_lib.sinusoidal_encoding(4, -2), ValueError, ["d_model", "-2"]),
    "d_model float": (lambda: pe_lib.sinusoidal_encoding(4, 8.0), TypeError, ["d_model", "8.0", "positive int"]),
    "d_model bool": (lambda: pe_lib.sinusoidal_encoding(4, True), TypeError, ["d_model", "True"]),
    "d_model string": (lambda: pe_lib.sinusoidal_encoding(4, "8"), TypeError, ["d_model", "'8'"]),
    "base one": (lambda: pe_lib.sinusoidal_encoding(4, 8, base=1), ValueError, ["base", "1.0", "greater than 1"]),
    "base below one": (lambda: pe_lib.sinusoidal_encoding(4, 8, base=0.5), ValueError, ["base", "0.5"]),
    "base infinite": (lambda: pe_lib.sinusoidal_encoding(4, 8, base=float("inf")), ValueError, ["base", "inf"]),
    "base nan": (lambda: pe_lib.sinusoidal_encoding(4, 8, base=float("nan")), ValueError, ["base", "nan"]),
    "base string": (lambda: pe_lib.sinusoidal_encoding(4, 8, base="1e4"), TypeError, ["base", "'1e4'"]),
    "unknown layout": (
        lambda: pe_lib.sinusoidal_encoding(4, 8, layout="sin-cos"),
        ValueError,
        ["layout", "'sin-cos'", "'interleaved'", "'concatenated'"],
    ),
    "integer dtype": (lambda: pe_lib.sinusoidal_encoding(4, 8, dtype=np.int32), TypeError, ["dtype", "int32"]),
    "negative count": (lambda: pe_lib.sinusoidal_encoding(-3, 8), ValueError, ["positions", "-3"]),
    "float count": (lambda: pe_lib.sinusoidal_encoding(4.0, 8), TypeError, ["positions", "4.0"]),
    "nan position": (lambda: pe_lib.sinusoidal_encoding([0.0, np.nan], 8), ValueError, ["positions", "nan"]),
    "infinite position": (lambda: pe_lib.sinusoidal_encoding([np.inf], 8), ValueError, ["positions", "inf"]),
    "2-D positions": (lambda: pe_lib.sinusoidal_encoding(np.zeros((2, 2)), 8), ValueError, ["positions", "(2, 2)"]),
    "string positions": (lambda: pe_lib.sinusoidal_encoding(["a"], 8), TypeError, ["positions", "dtype"]),
    "bool positions": (lambda: pe_lib.sinusoidal_encoding([True, False], 8), TypeError, ["positions", "bool"]),
    "frequencies d_model": (lambda: pe_lib.frequencies(0), ValueError, ["d_model", "0"]),
    "frequencies base": (lambda: pe_lib.frequencies(8, base=-5), ValueError, ["base", "-5.0"]),
    "wavelengths d_model": (lambda: pe_lib.wavelengths(2.5), TypeError, ["d_model", "2.5"]),
    "rotation odd d_model": (lambda: pe_lib.relative_rotation(1, 7), ValueError, ["d_model", "7", "even"]),
    "rotation nan offset": (lambda: pe_lib.relative_rotation(np.nan, 8), ValueError, ["k", "nan"]),
    "rotation string offset": (lambda: pe_lib.relative_rotation("1", 8), TypeError, ["k", "'1'"]),
    "integer negative n": (lambda: pe_lib.integer_encoding(-1, 4), ValueError, ["n", "-1"]),
    "normalized float n": (lambda: pe_lib.normalized_encoding(3.5, 4), TypeError, ["n", "3.5"]),
    "normalized d_model": (lambda: pe_lib.normalized_encoding(3, 0), ValueError, ["d_model", "0"]),
    "binary too many positions": (lambda: pe_lib.binary_encoding(9, 3), ValueError, ["n=9", "2**d_model = 8"]),
    "similarity 1-D": (lambda: pe_lib.dot_product_similarity(np.ones(3)), ValueError, ["encoding", "2-D", "(3,)"]),
    "similarity nan": (lambda: pe_lib.dot_product_similarity([[np.nan]]), ValueError, ["encoding", "nan"]),
    # self_attention
    "attention 1-D x": (lambda: pe_lib.self_attention(np.ones(3), *_w(3)), ValueError, ["x", "2-D", "(3,)"]),
    "attention w_q rows": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), np.ones((4, 2)), *_w(3)[1:]),
        ValueError,
        ["w_q", "(3, d_out >= 1)", "(4, 2)"],
    ),
    "attention w_k width": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), np.ones((3, 2)), np.ones((3, 5)), np.ones((3, 2))),
        ValueError,
        ["w_k", "(3, 2)", "(3, 5)"],
    ),
    "attention w_v rows": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), *_w(3)[:2], np.ones((2, 2))),
        ValueError,
        ["w_v", "(2, 2)"],
    ),
    "attention nan x": (lambda: pe_lib.self_attention([[np.nan, 0, 0]], *_w(3)), ValueError, ["x", "nan"]),
    "attention mask shape": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), *_w(3), mask=np.ones((3, 3), bool)),
        ValueError,
        ["mask", "(2, 2)", "(3, 3)"],
    ),
    "attention mask dtype": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), *_w(3), mask=np.ones((2, 2))),
        ValueError,
        ["mask", "boolean", "float64"],
    ),
    "attention empty mask row": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), *_w(3), mask=np.array([[True, False], [False, False]])),
        ValueError,
        ["mask row 1"],
    ),
    "attention no rows": (
        lambda: pe_lib.self_attention(np.ones((0, 3)), *_w(3)),
        ValueError,
        ["x", "(0, 3)", "one row"],
    ),
    "attention no features": (
        lambda: pe_lib.self_attention(np.ones((2, 0)), *_w(0)),
        ValueError,
        ["x", "(2, 0)", "one column"],
    ),
    "attention empty projection": (
        lambda: pe_lib.self_attention(np.ones((2, 3)), np.ones((3, 0)), np.ones((3, 0)), np.ones((3, 2))),
        ValueError,
        ["w_q", "(3, d_out >= 1)", "(3, 0)"],
    ),
    # the toy experiment of notebook 05
    "targets shift longer than the sequence": (
        lambda: pe_lib.experiments.task_targets(torch.zeros(2, 4, dtype=torch.long), shift=6),
        ValueError,
        ["shift", "sequence length 4", "shift=6"],
    ),
    "targets shift equal to the sequence": (
        lambda: pe_lib.experiments.task_targets(torch.zeros(2, 4, dtype=torch.long), shift=4),
        ValueError,
        ["shift", "sequence length 4", "shift=4"],
    ),
    "targets float tokens": (
        lambda: pe_lib.experiments.task_targets(torch.zeros(2, 4)),
        TypeError,
        ["tokens", "integer", "torch.float32"],
    ),
    "train with a dict config": (
        lambda: pe_lib.experiments.train("learned", {"steps": 5}),
        TypeError,
        ["config", "Config", "dict"],
    ),
    "train with a non-callable progress": (
        lambda: pe_lib.experiments.train("learned", pe_lib.experiments.Config(steps=1), progress=True),
        TypeError,
        ["progress", "True"],
    ),
    # explorers: every option checked when the explorer is built, not later in a slider's callback
    "explorer unknown encoding": (
        lambda: ch02.NaiveEncodingExplorer(encoding="rope"),
        ValueError,
        ["encoding", "'rope'", "'binary'"],
    ),
    "explorer binary too narrow for max_length": (
        lambda: ch02.NaiveEncodingExplorer(d_model=4, max_length=128),
        ValueError,
        ["d_model=4", "16 positions", "max_length=128", "d_model >= 7"],
    ),
    "explorer length past max_length": (
        lambda: ch02.NaiveEncodingExplorer(length=200, max_length=128),
        ValueError,
        ["length", "2 to 128", "200"],
    ),
    "model shift bars unknown model": (
        lambda: ch01.model_shift_bars(["a"], {"RNN + PE": np.zeros(1)}, title="x"),
        ValueError,
        ["shifts", "'RNN + PE'", "'GRU'", "+ PE"],
    ),
    "explorer empty sentence": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=[""]),
        ValueError,
        ["sentence", "at least one word", "''"],
    ),
    "explorer no sentences": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=[]),
        ValueError,
        ["sentences", "at least one sentence", "[]"],
    ),
    "explorer one string for sentences": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences="the dog"),
        ValueError,
        ["sentences", "a list", "'the dog'"],
    ),
    "explorer weights that do not fit": (
        lambda: ch01.OrderExplorer(
            ch01.notebook_setup()[0], np.ones((5, 5)), np.ones((5, 5)), np.ones((5, 5)), sentences=["the dog"]
        ),
        ValueError,
        ["w_q", "(8, d_out >= 1)", "(5, 5)"],
    ),
    "explorer rotate out of range": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=["the dog"], rotate=9),
        ValueError,
        ["rotate", "0 to 7", "9"],
    ),
    "explorer pe_strength above one": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=["the dog"], pe_strength=2),
        ValueError,
        ["pe_strength", "[0, 1]", "2.0"],
    ),
    "explorer position past the table": (
        lambda: ch03.CollisionExplorer(n=256, position=300),
        ValueError,
        ["position", "0 to 255", "300"],
    ),
    "explorer base not on the slider": (
        lambda: ch03.CollisionExplorer(base=50),
        ValueError,
        ["base", "slider", "50"],
    ),
    "explorer odd pendulum d_model": (
        lambda: ch04.PendulumExplorer(7),
        ValueError,
        ["d_model", "even", "7"],
    ),
    "explorer pendulum base": (lambda: ch04.PendulumExplorer(base=1), ValueError, ["base", "greater than 1"]),
    "explorer decay offsets": (lambda: ch04.DecayExplorer(max_offset=0), ValueError, ["max_offset", "1 to 4096", "0"]),
    "explorer no tables": (lambda: ch05.PositionSimilarityExplorer({}), ValueError, ["tables", "at least one table"]),
    "explorer one-row table": (
        lambda: ch05.PositionSimilarityExplorer({"one": np.ones((1, 4))}),
        ValueError,
        ["at least 2 rows", "got 1"],
    ),
    "explorer window not on the slider": (
        lambda: ch05.PositionSimilarityExplorer({"sin": pe_lib.sinusoidal_encoding(50, 8)}, position=3, window=10),
        ValueError,
        ["window", "10", "64"],
    ),
    "explorer nan table": (
        lambda: ch05.PositionSimilarityExplorer({"bad": np.full((4, 4), np.nan)}),
        ValueError,
        ["table", "nan"],
    ),
    "explorer d_model not in d_models": (
        lambda: ch06.NormShareExplorer(d_models=(8, 16), d_model=512),
        ValueError,
        ["d_model", "(8, 16)", "512"],
    ),
    "explorer dropout rate": (lambda: ch06.DropoutExplorer(p=0.95), ValueError, ["p", "0.9", "0.95"]),
    "explorer dropout batch": (
        lambda: ch06.DropoutExplorer(np.ones((2, 3, 4))),
        ValueError,
        ["x", "(seq, d_model)", "(2, 3, 4)"],
    ),
    "explorer training steps": (lambda: ch05.TrainingProgress(0), ValueError, ["total_steps", "0"]),
    "explorer training description": (
        lambda: ch05.TrainingProgress(10, description=3),
        TypeError,
        ["description", "string", "3"],
    ),
    "explorer d_model too wide for the tables": (
        lambda: ch02.NaiveEncodingExplorer(d_model=20000, length=4, max_length=16),
        ValueError,
        ["d_model", "1 to 1024", "20000"],
    ),
    "explorer collision table too long": (
        lambda: ch03.CollisionExplorer(n=10**6),
        ValueError,
        ["n", "1 to 8192", "1000000"],
    ),
    "explorer too many pendulums": (
        lambda: ch04.PendulumExplorer(4096),
        ValueError,
        ["d_model", "2 to 128", "4096"],
    ),
    "explorer float pendulum d_model": (
        lambda: ch04.PendulumExplorer(16.0),
        TypeError,
        ["d_model", "16.0", "float"],
    ),
    "explorer order weights missing": (
        lambda: ch01.OrderExplorer(ch01.notebook_setup()[0], None, np.ones((8, 8)), np.ones((8, 8)), sentences=["a"]),
        TypeError,
        ["w_q missing", "together"],
    ),
    "explorer order sentence not a string": (
        lambda: ch01.OrderExplorer(*ch01.notebook_setup()[:4], sentences=[3]),
        ValueError,
        ["sentence", "at least one word", "3"],
    ),
    "explorer order embeddings of two lengths": (
        lambda: ch01.OrderExplorer({"a": np.ones(8), "b": np.ones(4)}, *ch01.notebook_setup()[1:4], sentences=["a b"]),
        ValueError,
        ["embeddings", "one length", "(4,)", "(8,)"],
    ),
    "explorer similarity table of text": (
        lambda: ch05.PositionSimilarityExplorer({"a": "abc"}),
        TypeError,
        ["table", "real numbers", "<U3"],
    ),
    "explorer similarity table without columns": (
        lambda: ch05.PositionSimilarityExplorer({"a": np.ones((5, 0))}, position=0),
        ValueError,
        ["table", "one column", "(5, 0)"],
    ),
    "explorer d_models from a generator": (
        lambda: ch06.NormShareExplorer(d_models=(d for d in (8, 16)), d_model=32),
        ValueError,
        ["d_model", "(8, 16)", "32"],
    ),
    "explorer d_models out of order": (
        lambda: ch06.NormShareExplorer(d_models=(16, 8), d_model=8),
        ValueError,
        ["d_models", "increasing", "(16, 8)"],
    ),
    "explorer d_models too wide": (
        lambda: ch06.NormShareExplorer(d_models=(8, 10**7), d_model=8),
        ValueError,
        ["d_models[1]", "1 to 8192", "10000000"],
    ),
    "explorer norm positions": (
        lambda: ch06.NormShareExplorer(positions=10**7),
        ValueError,
        ["positions", "1 to 4096", "10000000"],
    ),
    "explorer negative dropout rate": (lambda: ch06.DropoutExplorer(p=-0.1), ValueError, ["p", "[0, 0.9]", "-0.1"]),
    "explorer dropout nan": (
        lambda: ch06.DropoutExplorer(np.full((2, 2), np.nan)),
        ValueError,
        ["x", "finite", "nan"],
    ),
    # torch modules: construction
    "module d_model": (lambda: pe_lib.SinusoidalPositionalEncoding(0), ValueError, ["d_model", "0"]),
    "module max_len": (lambda: pe_lib.SinusoidalPositionalEncoding(8, max_len=0), ValueError, ["max_len", "0"]),
    "module base": (lambda: pe_lib.SinusoidalPositionalEncoding(8, base=1.0), ValueError, ["base", "1.0"]),
    "module layout": (lambda: pe_lib.SinusoidalPositionalEncoding(8, layout="x"), ValueError, ["layout", "'x'"]),
    "module dropout": (lambda: pe_lib.SinusoidalPositionalEncoding(8, dropout=1.5), ValueError, ["dropout", "1.5"]),
    "learned max_len": (lambda: pe_lib.LearnedPositionalEmbedding(-1, 8), ValueError, ["max_len", "-1"]),
    "learned d_model": (lambda: pe_lib.LearnedPositionalEmbedding(8, 2.0), TypeError, ["d_model", "2.0"]),
    "embedding vocab": (lambda: pe_lib.TransformerEmbedding(0, 8), ValueError, ["vocab_size", "0"]),
    "embedding positional": (
        lambda: pe_lib.TransformerEmbedding(10, 8, positional="rope"),
        ValueError,
        ["positional", "'rope'", "'sinusoidal'", "'learned'", "'none'"],
    ),
    "embedding padding_idx": (
        lambda: pe_lib.TransformerEmbedding(10, 8, padding_idx=10),
        ValueError,
        ["padding_idx", "10", "vocab_size=10"],
    ),
    "embedding segments": (lambda: pe_lib.TransformerEmbedding(10, 8, num_segments=-1), ValueError, ["num_segments"]),
    # torch modules: forward
    "wrong last dimension": (
        lambda: pe_lib.SinusoidalPositionalEncoding(8)(torch.zeros(2, 3, 10)),
        ValueError,
        ["x", "d_model=8", "(2, 3, 10)"],
    ),
    "rank 1 input": (lambda: pe_lib.SinusoidalPositionalEncoding(8)(torch.zeros(8)), ValueError, ["x", "(8,)"]),
    "rank 4 input": (
        lambda: pe_lib.SinusoidalPositionalEncoding(8, batch_first=False)(torch.zeros(1, 2, 3, 8)),
        ValueError,
        ["(seq, batch, d_model)", "(1, 2, 3, 8)"],
    ),
    "integer input": (
        lambda: pe_lib.SinusoidalPositionalEncoding(8)(torch.zeros(2, 8, dtype=torch.long)),
        TypeError,
        ["x", "floating-point", "torch.int64"],
    ),
    "numpy input": (lambda: pe_lib.SinusoidalPositionalEncoding(8)(np.zeros((2, 8))), TypeError, ["x", "ndarray"]),
    "learned wrong last dimension": (
        lambda: pe_lib.LearnedPositionalEmbedding(8, 4)(torch.zeros(2, 3)),
        ValueError,
        ["x", "d_model=4", "(2, 3)"],
    ),
    "learned too long": (
        lambda: pe_lib.LearnedPositionalEmbedding(8, 4)(torch.zeros(1, 9, 4)),
        ValueError,
        ["sequence length 9", "max_len=8"],
    ),
    "learned too long sequence-first": (
        lambda: pe_lib.LearnedPositionalEmbedding(8, 4, batch_first=False)(torch.zeros(12, 2, 4)),
        ValueError,
        ["sequence length 12", "max_len=8"],
    ),
    "token id out of vocabulary": (
        lambda: pe_lib.TransformerEmbedding(10, 8)(torch.tensor([[1, 10]])),
        ValueError,
        ["token_ids", "vocab_size=10", "got 10"],
    ),
    "negative token id": (
        lambda: pe_lib.TransformerEmbedding(10, 8)(torch.tensor([[-1, 2]])),
        ValueError,
        ["token_ids", "got -1"],
    ),
    "float token ids": (
        lambda: pe_lib.TransformerEmbedding(10, 8)(torch.tensor([[1.0, 2.0]])),
        TypeError,
        ["token_ids", "torch.float32"],
    ),
    "list token ids": (lambda: pe_lib.TransformerEmbedding(10, 8)([[1, 2]]), TypeError, ["token_ids", "list"]),
    "3-D token ids": (
        lambda: pe_lib.TransformerEmbedding(10, 8)(torch.zeros(1, 2, 3, dtype=torch.long)),
        ValueError,
        ["token_ids", "(1, 2, 3)"],
    ),
    "too long for learned positions": (
        lambda: pe_lib.TransformerEmbedding(10, 8, positional="learned", max_len=4)(
            torch.zeros(1, 5, dtype=torch.long)
        ),
        ValueError,
        ["sequence length 5", "max_len=4"],
    ),
    "segment ids wrong shape": (
        lambda: pe_lib.TransformerEmbedding(10, 8, num_segments=2)(
            torch.ones(1, 3, dtype=torch.long), torch.ones(3, 1, dtype=torch.long)
        ),
        ValueError,
        ["segment_ids", "(1, 3)", "(3, 1)"],
    ),
    "segment id out of range": (
        lambda: pe_lib.TransformerEmbedding(10, 8, num_segments=2)(
            torch.ones(1, 3, dtype=torch.long), torch.full((1, 3), 2)
        ),
        ValueError,
        ["segment_ids", "num_segments=2", "got 2"],
    ),
    "segment ids without segments": (
        lambda: pe_lib.TransformerEmbedding(10, 8)(
            torch.ones(1, 3, dtype=torch.long), torch.zeros(1, 3, dtype=torch.long)
        ),
        ValueError,
        ["segment_ids", "num_segments=0"],
    ),
    # notebook 08: the length-generalisation experiment and its chapter
    "extrapolation unknown task": (
        lambda: extrapolation.task_targets(torch.zeros(2, 4, dtype=torch.long), "copy"),
        ValueError,
        ["task", "'copy'", "'shift'", "'local_max'"],
    ),
    "extrapolation config as a dict": (
        lambda: extrapolation.train("rope", "shift", {"steps": 3}),
        TypeError,
        ["config", "Config", "dict"],
    ),
    "extrapolation shift too long": (
        lambda: extrapolation.Config(shift=16),
        ValueError,
        ["shift", "train_len=16", "16"],
    ),
    "extrapolation unknown test": (
        lambda: extrapolation.evaluate(
            decoder.TinyDecoder("rope", extrapolation.Config()), "shift", extrapolation.Config(), tests=["at_8x"]
        ),
        ValueError,
        ["tests", "'at_8x'", "'at_4x'"],
    ),
    "pair-0 look-alikes config as a dict": (
        lambda: extrapolation.pair0_lookalikes({"shift": 3}),
        TypeError,
        ["config", "Config", "dict"],
    ),
    "decoder unknown positional": (
        lambda: decoder.TinyDecoder("absolute", extrapolation.Config()),
        ValueError,
        ["positional", "'absolute'", "'rope'"],
    ),
    "decoder unknown extension": (
        lambda: decoder.TinyDecoder("rope", extrapolation.Config()).extended("dynamic", 2),
        ValueError,
        ["method", "'dynamic'", "'ntk'"],
    ),
    "decoder theta of the wrong size": (
        lambda: decoder.TinyDecoder("rope", extrapolation.Config()).retuned(np.ones(3)),
        ValueError,
        ["theta", "4", "(3,)"],
    ),
    "angle ranges zero length": (lambda: ch08.angle_ranges([1.0], 0, 4), ValueError, ["train_len", "0"]),
    "base criterion zero limit": (lambda: ch08.first_negative_distance(128, 1e4, limit=0), ValueError, ["limit", "0"]),
    "scaling explorer factor": (lambda: ch08.ScalingExplorer(factor=3), ValueError, ["factor", "3", "(1, 2, 4"]),
    "ntk grader hint": (lambda: ch08.check_ntk_base(lambda b, s, d: b, hint=5), ValueError, ["hint", "5", "3"]),
    # notebook 09: the query-key angle error, its figure, the lengths of the model table
    "score error lengths": (
        lambda: precision.score_angle_error([1.0, 2.0], [0.0, 1.0, 2.0], [1.0]),
        ValueError,
        ["query_positions", "key_positions", "2", "3"],
    ),
    "score error nan key": (lambda: precision.score_angle_error([1.0], [np.nan], [1.0]), ValueError, ["key_positions"]),
    "score error theta 2-D": (
        lambda: precision.score_angle_error([1.0], [0.0], np.ones((2, 2))),
        ValueError,
        ["theta"],
    ),
    "score error dtype": (lambda: precision.score_angle_error([1.0], [0.0], [1.0], dtype="fp8"), ValueError, ["dtype"]),
    "worst score distances": (
        lambda: precision.worst_score_error([5.0], np.ones((2, 2)), [1.0]),
        ValueError,
        ["distances", "(2, 2)"],
    ),
    "precision curves distances": (
        lambda: ch09.precision_curves([1.0], distances=[np.inf], query_positions=[1.0]),
        ValueError,
        ["distances", "inf"],
    ),
    "wrong base distances": (lambda: ch09.wrong_base_angles(np.ones((2, 2))), ValueError, ["distances", "(2, 2)"]),
    "wrong base used": (lambda: ch09.wrong_base_angles([1.0], used=0.5), ValueError, ["used", "0.5"]),
    "wrong base head_dim": (lambda: ch09.wrong_base_angles([1.0], head_dim=7), ValueError, ["head_dim", "7"]),
    "score reach not an entry": (
        lambda: models_table.score_reach({"name": "x"}),
        ValueError,
        ["entry", "sliding_window", "{'name': 'x'}"],
    ),
    # multidim (notebook 11)
    "grid height zero": (lambda: multidim.grid_positions(0, 3), ValueError, ["height", "0"]),
    "axial head_dim not by 4": (
        lambda: multidim.axial_rope_frequencies(6),
        ValueError,
        ["head_dim", "6", "divisible by 4"],
    ),
    "axial base one": (lambda: multidim.axial_rope_frequencies(8, base=1), ValueError, ["base", "1.0"]),
    "mixed num_heads zero": (lambda: multidim.mixed_rope_frequencies(8, 0), ValueError, ["num_heads", "0"]),
    "mixed seed negative": (lambda: multidim.mixed_rope_frequencies(8, 2, seed=-1), ValueError, ["seed", "-1"]),
    "2-D rows and cols lengths": (
        lambda: multidim.rope_2d_angles([0, 1], [0], np.ones((4, 2))),
        ValueError,
        ["rows and cols", "2", "1"],
    ),
    "2-D frequencies shape": (
        lambda: multidim.rope_2d_angles([0], [0], np.ones(4)),
        ValueError,
        ["frequencies", "(4,)"],
    ),
    "apply_angles layout": (
        lambda: multidim.apply_angles(np.ones((2, 4)), np.ones((2, 2)), layout="neox"),
        ValueError,
        ["layout", "'neox'"],
    ),
    "apply_angles odd head": (
        lambda: multidim.apply_angles(np.ones((2, 3)), np.ones((2, 1))),
        ValueError,
        ["x", "(2, 3)"],
    ),
    "resize mode": (
        lambda: multidim.resize_position_table(np.ones((5, 2)), 3, mode="cubic"),
        ValueError,
        ["mode", "'cubic'"],
    ),
    "resize antialias": (
        lambda: multidim.resize_position_table(np.ones((5, 2)), 3, antialias=1),
        TypeError,
        ["antialias", "1"],
    ),
    "resize prefix negative": (
        lambda: multidim.resize_position_table(np.ones((5, 2)), 3, num_prefix_tokens=-1),
        ValueError,
        ["num_prefix_tokens", "-1"],
    ),
    "resize new_grid": (lambda: multidim.resize_position_table(np.ones((5, 2)), (3, 0)), ValueError, ["new_grid", "0"]),
    "resize old_grid": (
        lambda: multidim.resize_position_table(np.ones((5, 2)), 3, old_grid=(2, 3)),
        ValueError,
        ["old_grid", "(2, 3)", "4"],
    ),
    "mrope segments string": (lambda: multidim.mrope_position_ids("text"), TypeError, ["segments", "'text'"]),
    "mrope model": (lambda: multidim.mrope_position_ids([3], model="qwen25"), ValueError, ["model", "'qwen25'"]),
    "mrope merge zero": (
        lambda: multidim.mrope_position_ids([3], spatial_merge_size=0),
        ValueError,
        ["spatial_merge_size", "0"],
    ),
    "mrope text_after": (
        lambda: multidim.mrope_position_ids([3], text_after="next"),
        ValueError,
        ["text_after", "'next'"],
    ),
    "mrope pairs zero": (lambda: multidim.mrope_pair_axes(0, [0, 0, 0]), ValueError, ["pairs", "0"]),
    "mrope interleaved": (
        lambda: multidim.mrope_pair_axes(4, [2, 1, 1], interleaved="yes"),
        TypeError,
        ["interleaved"],
    ),
    "mrope position_ids rows": (
        lambda: multidim.mrope_angles(np.ones((2, 3)), [1.0, 1.0], [1, 1, 0]),
        ValueError,
        ["position_ids", "(2, 3)"],
    ),
    "mrope inv_freq": (lambda: multidim.mrope_angles([0, 1], [[1.0]], [1, 0, 0]), ValueError, ["inv_freq", "1-D"]),
    "mrope rope_delta rows": (
        lambda: multidim.mrope_rope_delta(np.ones((2, 3))),
        ValueError,
        ["position_ids", "(2, 3)", "(3, n)"],
    ),
    "mrope rope_delta dtype": (
        lambda: multidim.mrope_rope_delta(np.array([["a"]] * 3)),
        TypeError,
        ["position_ids", "dtype"],
    ),
    "mrope tokens_per_second for qwen2_vl": (
        lambda: multidim.mrope_position_ids([3], tokens_per_second=2),
        ValueError,
        ["tokens_per_second", "qwen2_5_vl", "'qwen2_vl'"],
    ),
    "mrope tokens_per_second zero": (
        lambda: multidim.mrope_position_ids([3, ("video", 2, 4, 4)], model="qwen2_5_vl", tokens_per_second=0),
        ValueError,
        ["tokens_per_second", "positive", "0"],
    ),
    "mrope second_per_grid_ts length": (
        lambda: multidim.mrope_position_ids([3, ("video", 2, 4, 4)], model="qwen2_5_vl", second_per_grid_ts=[1, 2]),
        ValueError,
        ["second_per_grid_ts", "one number per video (1 here)", "[1, 2]"],
    ),
    "mrope second_per_grid_ts negative": (
        lambda: multidim.mrope_position_ids([3, ("video", 2, 4, 4)], model="qwen2_5_vl", second_per_grid_ts=[-1.0]),
        ValueError,
        ["second_per_grid_ts", "positive", "-1.0"],
    ),
    "mrope second_per_grid_ts text": (
        lambda: multidim.mrope_position_ids([3, ("video", 2, 4, 4)], model="qwen2_5_vl", second_per_grid_ts="1"),
        ValueError,
        ["second_per_grid_ts", "'1'"],
    ),
    "logn_scale train_len one": (lambda: layered.logn_scale([3], 1), ValueError, ["train_len", "at least 2", "1"]),
    "logn_scale negative position": (lambda: layered.logn_scale([-1], 16), ValueError, ["positions", "-1"]),
    "offset_attention scale nan": (
        lambda: ch11.offset_attention(np.zeros((3, 3)), scale=float("nan")),
        ValueError,
        ["scale", "nan"],
    ),
    "aimed_query offset text": (
        lambda: ch11.aimed_query(np.ones(8), ch11.head_frequencies("axial", 8), ("1", 1)),
        TypeError,
        ["offset", "'1'"],
    ),
    "layer_plan config list": (lambda: layer_schemes.layer_plan([1]), TypeError, ["config", "list"]),
    "layer_plan no layers": (
        lambda: layer_schemes.layer_plan({"rope_theta": 1e4}),
        TypeError,
        ["num_hidden_layers", "None"],
    ),
    "llama4 scale negative position": (
        lambda: layer_schemes.llama4_attention_scale([-1]),
        ValueError,
        ["positions", "-1"],
    ),
    "llama4 floor_scale zero": (
        lambda: layer_schemes.llama4_attention_scale([1], floor_scale=0),
        ValueError,
        ["floor_scale", "0"],
    ),
    # alt text (pe_lib.accessible)
    "describe not a figure": (lambda: accessible.describe([1, 2]), TypeError, ["figure", "matplotlib Figure", "list"]),
    "alt_text finding not text": (
        lambda: accessible.alt_text(figures.heatmap(np.ones((2, 2)), title="t"), 3),
        TypeError,
        ["finding", "string", "int"],
    ),
    "img_html empty alt": (lambda: accessible.img_html(b"", "", 1, 1), ValueError, ["alt", "non-empty string", "''"]),
    "figure_html caption not text": (
        lambda: accessible.figure_html(b"", "alt", 1, 1, caption=3),
        TypeError,
        ["caption", "string", "int"],
    ),
    "show quotes not numbers": (
        lambda: accessible.show(figures.heatmap(np.ones((2, 2)), title="t"), finding="1", quotes=["one"]),
        TypeError,
        ["quotes", "numbers", "'one'"],
    ),
    "show quotes not finite": (
        lambda: accessible.show(figures.heatmap(np.ones((2, 2)), title="t"), finding="1", quotes={"x": np.nan}),
        ValueError,
        ["quotes", "finite", "nan", "'x'"],
    ),
    "show a quote the finding does not print": (
        lambda: accessible.show(figures.heatmap(np.ones((2, 2)), title="t"), finding="by 0.27 or more", quotes=[0.26]),
        ValueError,
        ["finding", "0.26", "0.27"],
    ),
    "finding_problems not text": (lambda: accessible.finding_problems(None), TypeError, ["text", "string", "NoneType"]),
    "drawn_values unknown label": (
        lambda: accessible.drawn_values(figures.offset_curves(np.arange(3), {"a": np.ones(3)}, title="t"), "b"),
        ValueError,
        ["label", "'b'", "'a'"],
    ),
    "drawn_values panel out of range": (
        lambda: accessible.drawn_values(figures.heatmap(np.ones((2, 2)), title="t"), "a", panel=5),
        ValueError,
        ["panel", "figure.axes", "5"],
    ),
    # a real model (pe_lib.llama, pe_lib.smollm)
    "llama layout": (lambda: llama.Positions(layout="neox"), ValueError, ["layout", "'neox'", "'half'"]),
    "llama angle_dtype": (lambda: llama.Positions(angle_dtype=torch.int64), ValueError, ["angle_dtype", "int64"]),
    "llama nope_layers": (lambda: llama.Positions(nope_layers=2), TypeError, ["nope_layers", "2"]),
    "llama heads": (lambda: llama.LlamaConfig(10, 64, 1, 5, 1, 8), ValueError, ["dim=64", "n_heads=5"]),
    "llama ids outside the vocabulary": (
        lambda: _tiny_llama()(torch.tensor([[3, 10]])),
        ValueError,
        ["ids", "[0, 10)", "tokenizer"],
    ),
    "llama position_ids shape": (
        lambda: _tiny_llama()(torch.tensor([[3, 4]]), position_ids=torch.zeros(1, 3)),
        ValueError,
        ["position_ids", "(1, 2)", "(1, 3)"],
    ),
    "llama attention_mask shape": (
        lambda: _tiny_llama()(torch.tensor([[3, 4]]), attention_mask=torch.ones(2, 2)),
        ValueError,
        ["attention_mask", "(1, 2)", "(2, 2)"],
    ),
    "llama attention_mask values": (
        lambda: _tiny_llama()(torch.tensor([[3, 4]]), attention_mask=[[1, 3]]),
        ValueError,
        ["attention_mask", "1 (a token) and 0 (padding)", "[3]"],
    ),
    "llama document_ids float": (
        lambda: _tiny_llama()(torch.tensor([[3, 4]]), document_ids=[[0.0, 1.5]]),
        TypeError,
        ["document_ids", "integer", "float32"],
    ),
    "llama padded_position_ids 1-D": (
        lambda: llama.padded_position_ids([0, 1, 1]),
        ValueError,
        ["attention_mask", "(batch, n)", "(3,)"],
    ),
    "llama document_position_ids strings": (
        lambda: llama.document_position_ids("a b"),
        TypeError,
        ["document_ids", "'a b'"],
    ),
    # notebook 10's bugs (pe_lib.ch10_real)
    "ch10 rows not a list": (lambda: ch10.left_padded("abc", pad_id=0), TypeError, ["rows", "'abc'"]),
    "ch10 row too short": (
        lambda: ch10.left_padded([torch.tensor([1])], pad_id=0),
        ValueError,
        ["rows", "at least 2", "(1,)"],
    ),
    "ch10 pad_id negative": (lambda: ch10.left_padded([torch.tensor([1, 2])], pad_id=-1), ValueError, ["pad_id", "-1"]),
    "ch10 yarn scaling": (
        lambda: ch10.yarn_port_bug(_tiny_llama(), torch.tensor([[1, 2]]), {"rope_type": "linear", "factor": 2.0}),
        ValueError,
        ["scaling", "'yarn'", "'linear'"],
    ),
    "ch10 panels": (lambda: ch10.bugs_figure([]), TypeError, ["panels", "list"]),
    "smollm qk_layout": (lambda: smollm.load(qk_layout="neox"), ValueError, ["qk_layout", "'neox'", "'interleaved'"]),
    "smollm_transformers attn_implementation": (
        lambda: smollm_transformers.load(attn_implementation="flash_attention_2"),
        ValueError,
        ["attn_implementation", "'flash_attention_2'", "'eager'"],
    ),
    # what the heads of a real model do (pe_lib.heads)
    "heads model": (lambda: heads.pair_norms("model"), TypeError, ["model", "pe_lib.llama.Llama", "str"]),
    "heads layers int": (
        lambda: heads.attention_probabilities(_tiny_llama(), torch.tensor([[3, 4]]), layers=0),
        TypeError,
        ["layers", "0", "list of layer indices"],
    ),
    "heads layers outside": (
        lambda: heads.attention_probabilities(_tiny_llama(), torch.tensor([[3, 4]]), layers=[1]),
        ValueError,
        ["layers", "n_layers=1", "[1]"],
    ),
    "heads probs not square": (
        lambda: heads.previous_token_score(np.ones((2, 3))),
        ValueError,
        ["probs", "(2, 3)", "(..., n, n)"],
    ),
    "heads probs are scores": (
        lambda: heads.first_token_score(np.ones((3, 3))),
        ValueError,
        ["probs", "sum to 1", "not scores"],
    ),
    "heads skip too large": (lambda: heads.first_token_score(np.eye(4), skip=4), ValueError, ["skip", "4", "n = 4"]),
    "heads norms negative": (lambda: heads.norm_share(np.array([1.0, -1.0])), ValueError, ["norms", ">= 0"]),
    # context extension on the real model (pe_lib.long_context)
    "long_context method": (lambda: long_context.scaling("pi"), ValueError, ["method", "'pi'", "'linear'"]),
    "long_context depth": (lambda: long_context.passkey_prompt(None, 1000, 1.5, 12345), ValueError, ["depth", "1.5"]),
    "long_context key": (
        lambda: long_context.passkey_prompt(None, 1000, 0.5, 123),
        ValueError,
        ["key", "10000 to 99999", "123"],
    ),
    "long_context ids": (
        lambda: long_context.token_losses(_tiny_llama(), torch.tensor([1, 2])),
        ValueError,
        ["ids", "(1, n)", "(2,)"],
    ),
    "long_context chunk": (
        lambda: long_context.token_losses(_tiny_llama(), torch.tensor([[1, 2]]), chunk=0),
        ValueError,
        ["chunk", "0"],
    ),
    "long_context model": (
        lambda: long_context.token_losses("model", torch.tensor([[1, 2]])),
        TypeError,
        ["model", "pe_lib.llama.Llama", "str"],
    ),
    "long_context bucket": (lambda: long_context.Setup(bucket=500), ValueError, ["bucket 500", "multiples"]),
    # the one reader of layer types (pe_lib.layer_types): tests/test_layer_types.py holds the rest of its rows
    "layer_types config not a dict": (
        lambda: layer_types.layer_types(["full_attention"]),
        TypeError,
        ["config", "list"],
    ),
    "layer_types pattern a string": (
        lambda: layer_types.layer_types(
            {"model_type": "exaone4", "num_hidden_layers": 4, "sliding_window": 8, "sliding_window_pattern": "LLLG"}
        ),
        ValueError,
        ["sliding_window_pattern='LLLG'", "give layer_types"],
    ),
    "rope_config ignored_keys config not a dict": (lambda: rope_config.ignored_keys(3), TypeError, ["config", "int"]),
    # notebook 10: packed documents as transformers reads them, pairs switched off, dynamic NTK under a cache
    "llama inferred_document_ids bool": (
        lambda: llama.inferred_document_ids([[True, False]]),
        TypeError,
        ["position_ids", "torch.bool"],
    ),
    "llama inferred_document_ids 1-D": (
        lambda: llama.inferred_document_ids([0, 1, 0]),
        ValueError,
        ["position_ids", "(batch, n)", "(3,)"],
    ),
    "heads unrotated_pairs outside": (
        lambda: heads.unrotated_pairs(_tiny_llama(), [99]).__enter__(),
        ValueError,
        ["pairs", "head_dim // 2", "[99]"],
    ),
    "heads unrotated_pairs int": (
        lambda: heads.unrotated_pairs(_tiny_llama(), 3).__enter__(),
        TypeError,
        ["pairs", "3"],
    ),
    "ch10_context key after the query": (
        lambda: ch10_context.dynamic_cache_drift(10, [12], long_context.load_results()),
        ValueError,
        ["keys", "before the query 10", "12"],
    ),
    # the auditor (pe_lib.audit): tests/test_audit.py holds the rest of its rows
    "audit config not a str": (lambda: audit.load_config(None), TypeError, ["CONFIG", "None"]),
    "audit unreadable JSON": (lambda: audit.parse_config("{'a': 1}", "x.json"), ValueError, ["x.json", "line 1"]),
    "audit config not a dict": (lambda: audit.audit([1]), TypeError, ["config", "list"]),
    "audit rope_type unknown": (
        lambda: audit.audit({"num_hidden_layers": 1, "head_dim": 8, "rope_parameters": {"rope_type": "ntk_v2"}}),
        ValueError,
        ["rope_parameters['rope_type']", "'ntk_v2'"],
    ),
    # notebook 12: partial RoPE, query scales, MLA, Omni ids, per-layer schemes, the SmolLM2 sweep
    "partial fraction zero": (
        lambda: partial_rope.partial_frequencies(64, 0.0),
        ValueError,
        ["fraction", "0.0", "(0, 1]"],
    ),
    "partial kind": (lambda: partial_rope.partial_frequencies(64, 0.5, kind="gptj"), ValueError, ["kind", "'gptj'"]),
    "partial odd neox part": (
        lambda: partial_rope.rotated_size(100, 0.33),
        ValueError,
        ["fraction=0.33", "odd number"],
    ),
    "partial head_dim odd": (lambda: partial_rope.partial_frequencies(7, 0.5), ValueError, ["head_dim", "7", "even"]),
    "partial layout": (lambda: partial_rope.pair_plan(8, layout="rotate"), ValueError, ["layout", "'rotate'"]),
    "partial x ints": (
        lambda: partial_rope.apply_partial_rope(np.ones((2, 8), dtype=int)),
        TypeError,
        ["x", "floating-point", "int64"],
    ),
    "partial plan": (lambda: partial_rope.apply_pairs(np.ones((2, 8)), "half"), TypeError, ["plan", "PairPlan", "str"]),
    "partial positions count": (
        lambda: partial_rope.apply_partial_rope(np.ones((3, 8)), [0, 1]),
        ValueError,
        ["positions", "n=3", "2"],
    ),
    "partial plan repeats a feature": (
        lambda: partial_rope.PairPlan(4, [[0, 1], [1, 2]], [1.0, 0.5]),
        ValueError,
        ["pairs", "distinct"],
    ),
    "beta scale negative position": (
        lambda: position_scales.beta_log_scale([-1], 0.1, 16),
        ValueError,
        ["positions", "-1"],
    ),
    "beta scale length float": (
        lambda: position_scales.beta_log_scale([1], 0.1, 16.5),
        TypeError,
        ["original_max_position_embeddings", "16.5"],
    ),
    "learned scale heads": (
        lambda: position_scales.learned_log_scale([1], [1.0, 2.0], [0.0]),
        ValueError,
        ["scale and bias", "(2,)", "(1,)"],
    ),
    "learned frequencies pairs": (
        lambda: position_scales.learned_frequencies([1.0, 0.1], [0.0]),
        ValueError,
        ["alpha", "one number per pair", "2"],
    ),
    "mla rope odd": (
        lambda: mla.MLAConfig(dim=8, n_heads=1, kv_lora_rank=4, qk_nope_head_dim=4, qk_rope_head_dim=3, v_head_dim=4),
        ValueError,
        ["qk_rope_head_dim", "3", "even"],
    ),
    "mla layout": (
        lambda: mla.MLAConfig(8, 1, 4, 4, 2, 4, layout="neox"),
        ValueError,
        ["layout", "'neox'", "'half'"],
    ),
    "mla x shape": (
        lambda: mla.MLA(mla.MLAConfig(8, 1, 4, 4, 2, 4))(torch.zeros(1, 3, 7)),
        ValueError,
        ["x", "dim=8", "(1, 3, 7)"],
    ),
    "mla x type": (
        lambda: mla.MLA(mla.MLAConfig(8, 1, 4, 4, 2, 4))([[1.0]]),
        TypeError,
        ["x", "floating-point", "list"],
    ),
    "mla config": (lambda: mla.MLA({"dim": 8}), TypeError, ["config", "MLAConfig", "dict"]),
    "mla cache heads": (lambda: mla.cache_size(0, 128, 64, 128, 512), ValueError, ["n_heads", "0"]),
    "omni segment": (
        lambda: omni_positions.omni_position_ids([("picture", 1, 2, 2)]),
        ValueError,
        ["segments", "'picture'"],
    ),
    "omni grid": (
        lambda: omni_positions.omni_position_ids([("image", 1, 3, 2)]),
        ValueError,
        ["image grid", "(1, 3, 2)", "spatial_merge_size=2"],
    ),
    "omni seconds": (
        lambda: omni_positions.omni_position_ids([("video", 1, 2, 2, 0.0)]),
        ValueError,
        ["seconds_per_grid", "0.0"],
    ),
    "omni model": (
        lambda: omni_positions.omni_position_ids([3], model="qwen2_vl"),
        ValueError,
        ["model", "'qwen2_vl'"],
    ),
    "omni per second": (
        lambda: omni_positions.omni_position_ids([3], position_id_per_seconds=0),
        ValueError,
        ["position_id_per_seconds", "0"],
    ),
    "omni video with and without audio": (
        lambda: omni_positions.omni_position_ids([("video", 1, 2, 2, 1.0), ("video+audio", 1, 2, 2, 1.0, 5)]),
        ValueError,
        ["video", "use_audio_in_video"],
    ),
    "omni rope delta rows": (
        lambda: omni_positions.omni_rope_delta(np.ones((2, 3))),
        ValueError,
        ["position_ids", "(2, 3)"],
    ),
    "hybrid config list": (lambda: hybrid_layers.layer_positions([1]), TypeError, ["config", "list"]),
    "hybrid model_type": (
        lambda: hybrid_layers.layer_positions({"model_type": "llama", "num_hidden_layers": 2}),
        ValueError,
        ["model_type", "'llama'", "gemma4_text"],
    ),
    "hybrid exaone pattern string": (
        lambda: hybrid_layers.layer_positions(
            {
                "model_type": "exaone4",
                "num_hidden_layers": 4,
                "sliding_window": 8,
                "sliding_window_pattern": "LLLG",
                "hidden_size": 64,
                "num_attention_heads": 4,
            }  # fmt: skip
        ),
        ValueError,
        ["sliding_window_pattern", "'LLLG'", "layer_types"],
    ),
    "partial_sweep case": (lambda: partial_sweep.case_plan("neox_bug", 0.5), ValueError, ["case", "'neox_bug'"]),
    "partial_sweep ladder": (
        lambda: partial_sweep.ladder(np.array([1.0, 0.3, 0.2, 0.0]), 8),
        ValueError,
        ["theta", "ladder"],
    ),
    "partial_sweep model": (
        lambda: partial_sweep.permuted_qk("model", range(4)).__enter__(),
        TypeError,
        ["model", "pe_lib.llama.Llama", "str"],
    ),
    "partial_sweep order": (
        lambda: partial_sweep.permuted_qk(_tiny_llama(), [0, 0, 1, 2]).__enter__(),
        ValueError,
        ["order", "permutation of range(4)"],
    ),
    "partial_sweep setup": (lambda: partial_sweep.Setup(bucket=500), ValueError, ["bucket=500", "multiples"]),
    "partial_sweep kind": (
        lambda: partial_sweep.one_run(_tiny_llama(), torch.tensor([[1, 2]]), "nope", (), partial_sweep.Setup()),
        ValueError,
        ["kind", "'nope'"],
    ),
    "ch12 hint": (lambda: ch12x.check_beta_scale(lambda *a: None, hint=4), ValueError, ["hint", "4", "0 (no hint)"]),
}


def _tiny_llama():
    return llama.Llama(llama.LlamaConfig(vocab_size=10, dim=8, n_layers=1, n_heads=2, n_kv_heads=1, hidden_dim=8))


def _w(d_in, d_k=2):
    return np.ones((d_in, d_k)), np.ones((d_in, d_k)), np.ones((d_in, d_k))


@pytest.mark.parametrize("case", CASES)
def test_bad_input_gets_a_clear_error(case):
    call, error, fragments = CASES[case]
    with pytest.raises(error) as raised:
        call()
    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} missing from {message!r}"
    assert not re.search(r"index out of range|IndexError", message)
