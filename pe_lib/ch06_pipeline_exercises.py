"""The graders of notebook 06's exercises (the embedding pipeline).

Notebook 06 calls them as `ch06_pipeline.check_...` (that module imports them); its figures and
explorers live in pe_lib/ch06_pipeline.py.
"""

import numpy as np
import torch

from . import encodings, modules
from .grading import Feedback, hint_level, run_safely, with_hints


def _pe_rows(seq_len, d_model, **kwargs):
    """Rows 0..seq_len-1 of the sinusoidal table as a float32 tensor (seq_len, d_model)."""
    return torch.from_numpy(encodings.sinusoidal_encoding(seq_len, d_model, dtype=np.float32, **kwargs))


def _same(a, b):
    """True if b, broadcast to the shape of a, equals a to float32 rounding (entries here are of size ~1-5)."""
    try:
        b = b.expand_as(a)
    except RuntimeError:
        return False
    return torch.allclose(a, b.to(a.dtype), atol=1e-4, rtol=1e-4)


def _tensor_problem(out, wanted_shape, what):
    """Why `out` cannot be compared with a float32 reference of `wanted_shape`, or None if it can.

    Names the type or dtype it got, so that strings, complex numbers, integers and half precision
    (which rounds entries of size ~4 to about 0.01) are told apart from a wrong formula.
    """
    if not isinstance(out, torch.Tensor):
        return f"{what} must return a torch tensor, got {type(out).__name__}"
    if out.is_complex() or not out.is_floating_point():
        return f"{what} returned a tensor of dtype {out.dtype}; the model input is real: float32, as its input"
    if out.dtype not in (torch.float32, torch.float64):
        return f"{what} returned {out.dtype} for float32 input: half precision rounds the sum; keep float32"
    if out.shape != wanted_shape:
        return None  # each grader says what the shape tells
    if not bool(torch.isfinite(out).all()):
        return f"{what} returned a tensor holding inf or nan"
    return None


_BATCH_FIRST_HINTS = (
    "In a batch-first input of shape (batch, seq, emb_size), which dimension runs over the positions? "
    "Which length does the snippet slice its table by?",
    "Slice the table by the sequence length, token_embedding.size(1). The snippet's table has shape "
    "(maxlen, 1, d), laid out for (seq, batch, d) input; for (batch, seq, d) input its rows must broadcast "
    "as (1, seq, d).",
    "Rows 0 .. seq-1 as (seq, d), then a leading batch axis (1, seq, d):\n"
    "    return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(1), 0].unsqueeze(0))",
)


def check_batch_first_positional(module_class, *, hint=0):
    """Grade a fixed version of the PyTorch snippet's PositionalEncoding for batch-first input.

    module_class(emb_size, dropout) must build a module whose forward(x), for x of shape
    (batch, seq, emb_size), returns dropout(x + PE[:seq]) (the interleaved sinusoidal table, one
    row per position along dim 1), with the shape of x: in eval mode exactly x + PE[:seq], in
    train mode each entry 0 or (x + PE) / (1 - dropout).
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the fixed line).
    """
    shown = hint_level(hint, _BATCH_FIRST_HINTS)
    with torch.random.fork_rng(devices=[]):  # leave the caller's random numbers alone
        torch.manual_seed(0)  # and run the same way on every call
        feedback = _check_batch_first_positional(module_class)
    return with_hints(feedback, _BATCH_FIRST_HINTS, shown)


# (d_model, [(batch, seq), ...]): two widths (a width written into forward fails one), batch != seq,
# a batch of one, and one position only.
_BATCH_FIRST_CASES = ((12, ((3, 5), (4, 2), (1, 7))), (6, ((2, 1), (5, 3))))
_DROPOUT = 0.5  # the train-mode case: about half of the entries dropped, the rest doubled


def _check_batch_first_positional(module_class):
    exercise = "batch-first positional encoding"
    generator = torch.Generator().manual_seed(6)
    layout = (
        "Which axis of the table must its positions lie on to line up with the seq axis of (batch, seq, d)?",
        "Take the rows as (seq, d), slicing by x.size(1), and add a leading batch axis: (1, seq, d).",
    )
    for d_model, sizes in _BATCH_FIRST_CASES:
        module, failure = run_safely(exercise, module_class, d_model, 0.0)
        if failure is not None:
            return failure
        if hasattr(module, "eval"):
            module.eval()
        for batch, seq in sizes:
            x = torch.randn(batch, seq, d_model, generator=generator)
            feedback = _judge_eval_output(exercise, module, x, layout)
            if feedback is not None:
                return feedback
    feedback = _judge_dropout(exercise, module_class, generator)
    if feedback is not None:
        return feedback
    return Feedback(
        exercise,
        True,
        "positions run along dim 1 of a (batch, seq, d) input, for every batch size, length and width, "
        "and dropout still acts in train mode",
    )


def _judge_eval_output(exercise, module, x, layout):
    """None if module(x) == x + PE[:seq] (eval mode), else the Feedback that names what it holds."""
    batch, seq, d_model = x.shape
    out, failure = run_safely(exercise, module, x.clone())
    if failure is not None:
        if "must match the size" in failure.message:
            return Feedback(
                exercise,
                False,
                f"{failure.message}. The table from unsqueeze(-2) has shape (maxlen, 1, d): that layout is "
                "for (seq, batch, d) input",
                layout,
            )
        return failure
    problem = _tensor_problem(out, x.shape, "forward")
    if problem is not None:
        return Feedback(exercise, False, problem)
    if out.shape != x.shape:
        return Feedback(
            exercise,
            False,
            f"for input shape {tuple(x.shape)} your output has shape {tuple(out.shape)}: the table broadcast "
            "against the input",
            layout,
        )
    out = out.detach().to(torch.float32)
    pe = _pe_rows(seq, d_model)
    if _same(out, x + pe):
        return None
    delta = out - x
    if _same(out, x):
        return Feedback(exercise, False, "your output equals the input: no positions were added")
    by_batch = _pe_rows(batch, d_model)[:, None, :].expand(batch, seq, d_model)
    if _same(delta, by_batch):
        # The stub's mistake: say what the learner's output holds, not which size to slice by.
        return Feedback(
            exercise,
            False,
            "every token of sentence b got the row PE[b]: positions are assigned by batch index, and all "
            "tokens of one sentence share one position",
        )
    if _same(delta, _pe_rows(seq + 1, d_model)[1:]):
        return Feedback(exercise, False, "your positions start at 1; the first token has position 0")
    swapped = torch.stack([pe[:, 1::2], pe[:, 0::2]], dim=-1).reshape(seq, d_model)
    if _same(delta, swapped):
        return Feedback(
            exercise,
            False,
            "your sin and cos columns are swapped",
            ("Keep the snippet's table as it is: column 2i is sin, 2i+1 is cos.",),
        )
    if _same(delta, _pe_rows(seq, d_model, layout="concatenated")):
        return Feedback(
            exercise,
            False,
            "you used the concatenated layout [sin... | cos...]",
            ("Keep the snippet's table as it is: here sin and cos interleave (2i sin, 2i+1 cos).",),
        )
    ratio = float((delta * pe).sum() / (pe * pe).sum() / batch)  # least-squares scale of PE in delta
    if abs(ratio - 1.0) > 1e-3 and _same(delta, ratio * pe):
        return Feedback(
            exercise,
            False,
            f"you add {ratio:.3g} x PE instead of PE itself",
            ("Where does the factor come from? The table is added as it is, unscaled.",),
        )
    error = float((out - (x + pe)).abs().max())
    return Feedback(
        exercise,
        False,
        f"for input shape {tuple(x.shape)} the output differs from x + PE[:seq] by up to {error:.3g}",
    )


def _judge_dropout(exercise, module_class, generator):
    """None if a module built with dropout 0.5, in train mode, drops about half of x + PE and doubles the rest."""
    d_model, batch, seq = 12, 4, 16
    module, failure = run_safely(exercise, module_class, d_model, _DROPOUT)
    if failure is not None:
        return failure
    if hasattr(module, "train"):
        module.train()
    x = torch.randn(batch, seq, d_model, generator=generator)

    def forward_with_one_mask(tokens):  # the same mask on every call, so that two calls agree
        torch.manual_seed(606)
        return module(tokens)

    out, failure = run_safely(exercise, forward_with_one_mask, x.clone())
    if failure is not None:
        return failure
    problem = _tensor_problem(out, x.shape, "forward")
    if problem is None and out.shape != x.shape:
        problem = f"in train mode, for input shape {tuple(x.shape)} your output has shape {tuple(out.shape)}"
    if problem is not None:
        return Feedback(exercise, False, problem)
    out, full = out.detach().to(torch.float32), x + _pe_rows(seq, d_model)
    where = f"built with dropout={_DROPOUT} and in train mode,"
    dropped = out == 0
    if _same(out, full):
        return Feedback(exercise, False, f"{where} your module dropped nothing: its forward skips the dropout")
    kept_right = torch.allclose(out[~dropped], full[~dropped] / (1 - _DROPOUT), atol=1e-4, rtol=1e-4)
    share = float(dropped.float().mean())
    if not kept_right or not 0.3 < share < 0.7:
        return Feedback(
            exercise,
            False,
            f"{where} the output is not dropout of x + PE[:seq]: {100 * share:.0f}% of the entries are 0, and "
            "the others are not all (x + PE) / (1 - p)",
            ("Which tensor does the snippet pass through self.dropout, and is anything added after it?",),
        )
    return None


_EMBEDDING_HINTS = (
    "The model input is the sum of a token part and a position part. Is the token part used at the table's "
    "own (small) scale, and where do the position rows come from?",
    "Multiply the looked-up token vectors, and only them, by sqrt(d_model); then add the sinusoidal rows of "
    "positions 0 .. seq-1 (pe_lib.sinusoidal_encoding(seq, d_model)), which broadcast over the batch.",
    "Scaled token vectors plus the rows of positions 0 .. seq-1:\n"
    "    d_model = token_table.shape[1]\n"
    "    pe = torch.from_numpy(pe_lib.sinusoidal_encoding(token_ids.shape[1], d_model)).to(token_table.dtype)\n"
    "    return token_table[token_ids] * math.sqrt(d_model) + pe",
)


def check_embedding_forward(function, *, hint=0):
    """Grade function(token_ids, token_table) -> token_table[token_ids] * sqrt(d_model) + PE[:seq].

    token_ids: a LongTensor (batch, seq); token_table: (vocab, d_model). The result must equal
    pe_lib.TransformerEmbedding (sinusoidal positions, no segments, no dropout) with that table.
    hint: 0 for the verdict alone, 1..3 for more and more direct hints (3: the formula).
    """
    shown = hint_level(hint, _EMBEDDING_HINTS)
    with torch.random.fork_rng(devices=[]):  # leave the caller's random numbers alone
        torch.manual_seed(0)  # and run the same way on every call
        feedback = _check_embedding_forward(function)
    return with_hints(feedback, _EMBEDDING_HINTS, shown)


# (vocab, d_model, [(batch, seq), ...]): two widths (a d_model written into the code fails one),
# batch != seq, one position only; every table's first and last ids occur (below).
_EMBEDDING_CASES = ((20, 16, ((2, 6), (3, 2))), (7, 10, ((4, 1), (1, 5))))


def _check_embedding_forward(function):
    exercise = "embedding forward"
    generator = torch.Generator().manual_seed(60)
    for vocab, d_model, sizes in _EMBEDDING_CASES:
        table = torch.randn(vocab, d_model, generator=generator) * d_model**-0.5
        reference_module = modules.TransformerEmbedding(vocab, d_model, dropout=0.0).eval()
        with torch.no_grad():
            reference_module.token.weight.copy_(table)
        for batch, seq in sizes:
            ids = torch.randint(0, vocab, (batch, seq), generator=generator)
            ids.view(-1)[:2] = torch.tensor([0, vocab - 1])[: ids.numel()]  # the ends of the table
            feedback = _judge_embedding(exercise, function, ids, table, reference_module)
            if feedback is not None:
                return feedback
    return Feedback(exercise, True, "token_table[ids] * sqrt(d_model) + PE[:seq], as pe_lib.TransformerEmbedding")


def _judge_embedding(exercise, function, ids, table, reference_module):
    """None if function(ids, table) equals the reference module's output, else the Feedback naming the mistake."""
    (batch, seq), d_model = ids.shape, table.shape[1]
    out, failure = run_safely(exercise, function, ids.clone(), table.clone())
    if failure is not None:
        return failure
    with torch.no_grad():
        reference = reference_module(ids)
    problem = _tensor_problem(out, reference.shape, "your function")
    if problem is not None:
        return Feedback(exercise, False, problem)
    if out.shape != reference.shape:
        return Feedback(
            exercise,
            False,
            f"for token_ids of shape {tuple(ids.shape)} and a table of width {d_model} your output has shape "
            f"{tuple(out.shape)}; expected {tuple(reference.shape)} = (batch, seq, d_model)",
        )
    out = out.detach().to(torch.float32)
    if _same(out, reference):
        return None
    tokens, pe, root = table[ids], _pe_rows(seq, d_model), d_model**0.5
    scale = ("Which part does the scale belong to: the token vectors, the positions, or both?",)
    positions = (
        "Which rows of the sinusoidal table does a sequence of seq tokens need, and along which axis of "
        "token_ids do the positions run?",
    )
    # (candidate, symptom, own hint tiers): a recognised mistake is named, its fix is in the tiers.
    mistakes = (
        (tokens + pe, "you forgot to multiply the token vectors by sqrt(d_model)", ()),
        ((tokens + pe) * root, "you scaled the sum: the positions were multiplied too", scale),
        (tokens * d_model + pe, "you multiplied by d_model, not by its square root", ()),
        (tokens / root + pe, "you divided by sqrt(d_model): the token part is d_model times too small", ()),
        (tokens, "you return the token vectors alone (token_table[token_ids], unchanged)", ()),
        (tokens * root, "no positions were added", positions),
        (
            tokens * root + _pe_rows(batch, d_model)[:, None, :],
            "positions were assigned by batch index: every token of sentence b got PE[b]",
            positions,
        ),
        (tokens * root + _pe_rows(seq + 1, d_model)[1:], "your positions start at 1; the first token is at 0", ()),
    )
    for candidate, symptom, hints in mistakes:
        if _same(out, candidate):
            return Feedback(exercise, False, symptom, hints)
    error = float((out - reference).abs().max())
    return Feedback(
        exercise,
        False,
        f"for token_ids of shape {tuple(ids.shape)} and d_model={d_model} your output differs from the reference "
        f"by up to {error:.3g}",
    )
