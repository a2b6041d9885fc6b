"""The graders of notebook 06's exercises (the embedding pipeline).

Notebook 06 calls them as `ch06_pipeline.check_...` (that module imports them); its figures and
explorers live in pe_lib/ch06_pipeline.py.
"""

import numpy as np
import torch

from . import encodings, modules
from .grading import Feedback, graded, run_safely


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
    if out.device.type == "meta":
        return f"{what} returned a tensor on the meta device: a shape without values"
    if out.is_nested:
        return f"{what} returned a nested tensor (rows of different lengths); the model input is one dense tensor"
    if out.layout != torch.strided:
        return f"{what} returned a sparse tensor ({out.layout}); the model input is a dense tensor, as its input"
    if out.is_complex() or not out.is_floating_point():
        return f"{what} returned a tensor of dtype {out.dtype}; the model input is real: float32, as its input"
    if out.dtype not in (torch.float32, torch.float64):
        return f"{what} returned {out.dtype} for float32 input: half precision rounds the sum; keep float32"
    if out.shape != wanted_shape:
        return None  # each grader says what the shape tells
    if not bool(torch.isfinite(out).all()):
        return f"{what} returned a tensor holding inf or nan"
    return None


def _seeded(check):
    """`check`, run with torch's random numbers seeded (the same verdict on every call) and then put back as
    they were (the caller's random numbers are left alone)."""

    def seeded(answer):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            return check(answer)

    return seeded


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
    check = _seeded(_check_batch_first_positional)
    return graded("batch-first positional encoding", check, module_class, _BATCH_FIRST_HINTS, hint)


# (d_model, [(batch, seq), ...]): two widths (a width written into forward fails one), batch != seq,
# a batch of one, and one position only.
_BATCH_FIRST_CASES = ((12, ((3, 5), (4, 2), (1, 7))), (6, ((2, 1), (5, 3))))
# Dropout: eval mode must switch it off at any rate (0.3: a dropout that ignores the mode drops ~30%); train
# mode must drop the share it was built with: 0 (nothing), and two rates that are not PyTorch's default 0.5
# (a module that ignores its argument, nn.Dropout() or a rate written in, drops the wrong share).
_EVAL_DROPOUT = 0.3
_TRAIN_DROPOUTS = (0.0, 0.2, 0.75)


def _check_batch_first_positional(module_class):
    exercise = "batch-first positional encoding"
    generator = torch.Generator().manual_seed(6)
    layout = (
        "Which axis of the table must its positions lie on to line up with the seq axis of (batch, seq, d)?",
        "Take the rows as (seq, d), slicing by x.size(1), and add a leading batch axis: (1, seq, d).",
    )
    for d_model, sizes in _BATCH_FIRST_CASES:
        module, failure = _built(exercise, module_class, d_model, 0.0, train=False)
        if failure is not None:
            return failure
        for batch, seq in sizes:
            x = torch.randn(batch, seq, d_model, generator=generator)
            feedback = _judge_eval_output(exercise, module, x, layout)
            if feedback is not None:
                return feedback
    for judge in (_judge_eval_mode, _judge_dropout):
        feedback = judge(exercise, module_class, generator)
        if feedback is not None:
            return feedback
    return Feedback(
        exercise,
        True,
        "positions run along dim 1 of a (batch, seq, d) input, for every batch size, length and width; dropout "
        "acts in train mode at the rate the module was built with (0, 0.2, 0.75) and is off in eval mode",
    )


def _built(exercise, module_class, d_model, dropout, *, train):
    """(module, None) built by the learner's class and put in train or eval mode, or (None, Feedback)."""
    module, failure = run_safely(exercise, module_class, d_model, dropout)
    if failure is not None:
        return None, failure
    switch = getattr(module, "train" if train else "eval", None)
    if callable(switch):
        try:
            switch()
        except (Exception, SystemExit) as error:  # a class of the learner's own that is no nn.Module
            return None, Feedback(exercise, False, f"module.{'train' if train else 'eval'}() raised "
                                                   f"{type(error).__name__}: {error}")  # fmt: skip
    return module, None


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


def _forward_with_one_mask(exercise, module, x):
    """run_safely on module(x), with the same random numbers on every call (so that two calls agree)."""

    def forward(tokens):
        torch.manual_seed(606)
        return module(tokens)

    return run_safely(exercise, forward, x)


def _judge_eval_mode(exercise, module_class, generator):
    """None if a module built with dropout 0.3 returns exactly x + PE in eval mode (dropout switched off)."""
    d_model, batch, seq = 12, 4, 16
    module, failure = _built(exercise, module_class, d_model, _EVAL_DROPOUT, train=False)
    if failure is not None:
        return failure
    x = torch.randn(batch, seq, d_model, generator=generator)
    out, failure = _forward_with_one_mask(exercise, module, x.clone())
    if failure is not None:
        return failure
    problem = _tensor_problem(out, x.shape, "forward")
    if problem is None and out.shape != x.shape:
        problem = f"in eval mode, for input shape {tuple(x.shape)} your output has shape {tuple(out.shape)}"
    if problem is not None:
        return Feedback(exercise, False, problem)
    out, full = out.detach().to(torch.float32), x + _pe_rows(seq, d_model)
    if _same(out, full):
        return None
    share = float((out == 0).float().mean())
    return Feedback(
        exercise,
        False,
        f"built with dropout={_EVAL_DROPOUT} and in eval mode (module.eval()), your output is not x + PE[:seq]: "
        f"{100 * share:.0f}% of its entries are 0. Dropout acts only in training",
        (
            "How does your dropout know whether the module is training? nn.Dropout reads self.training; "
            "what does F.dropout read?",
            "Use the module's nn.Dropout, or pass training=self.training to F.dropout.",
        ),
    )


def _judge_dropout(exercise, module_class, generator):
    """None if modules built with dropout p, in train mode, drop a share p of x + PE and scale the rest by 1/(1-p).

    8 x 32 x 12 = 3,072 entries: the share dropped is within 0.05 of p (more than 6 standard deviations of a
    fair draw); the rates tried tell p from another rate (0.1, 0.5) and from none.
    """
    d_model, batch, seq = 12, 8, 32
    for p in _TRAIN_DROPOUTS:
        module, failure = _built(exercise, module_class, d_model, p, train=True)
        if failure is not None:
            return failure
        x = torch.randn(batch, seq, d_model, generator=generator)
        out, failure = _forward_with_one_mask(exercise, module, x.clone())
        if failure is not None:
            return failure
        problem = _tensor_problem(out, x.shape, "forward")
        if problem is None and out.shape != x.shape:
            problem = f"in train mode, for input shape {tuple(x.shape)} your output has shape {tuple(out.shape)}"
        if problem is not None:
            return Feedback(exercise, False, problem)
        out, full = out.detach().to(torch.float32), x + _pe_rows(seq, d_model)
        where = f"built with dropout={p:g} and in train mode,"
        dropped = out == 0
        share = float(dropped.float().mean())
        if p > 0 and _same(out, full):
            return Feedback(exercise, False, f"{where} your module dropped nothing: its forward skips the dropout")
        kept_right = torch.allclose(out[~dropped], full[~dropped] / (1 - p), atol=1e-4, rtol=1e-4)
        rate_right = abs(share - p) <= 0.05
        if kept_right and rate_right:
            continue
        wrong = [f"{100 * share:.0f}% of the entries are 0, not about {100 * p:.0f}%"] if not rate_right else []
        wrong += (
            [] if kept_right else [f"the entries not dropped are not all (x + PE) / (1 - p) = (x + PE) / {1 - p:g}"]
        )
        return Feedback(
            exercise,
            False,
            f"{where} the output is not dropout of x + PE[:seq] at that rate: {' and '.join(wrong)}",
            (
                "Which rate does your dropout use: the `dropout` argument the module was built with, or one of its "
                "own (nn.Dropout() drops half)? Which tensor does it act on, and is anything added after it?",
            ),
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
    return graded("embedding forward", _seeded(_check_embedding_forward), function, _EMBEDDING_HINTS, hint)


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
