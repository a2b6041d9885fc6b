"""The bugs practitioners meet, measured on a real model (used in notebook 10, section 6).

Three bugs that run without an error and with the right shapes, each measured on a pe_lib.llama model
(SmolLM2-135M in the notebook) as a loss and as the largest logit difference from the right run:
- a left-padded batch without the attention mask, or without position ids counted from each row's first
  token (padding_bug, and bfloat16_shift: what the position ids still do when the angles are bfloat16);
- documents packed into one row: what keeps them apart, in pe_lib (document_ids) and in transformers, which
  has no document ids and infers the documents from position resets only without a mask and a cache
  (packing_bug; transformers_packing measures transformers itself, recorded_packing reads that measurement);
- a YaRN port that forgets the attention factor, or uses the paper's ramp where the config names
  transformers' (yarn_port_bug).
bugs_figure draws the three. The grader of the section's exercise is in ch10_real_exercises.
"""

import dataclasses
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.patches import Patch

from . import _validate, llama
from .figures import COLOURS, style_figsize

SAME = 1e-3  # a logit difference below this is float32 rounding: the run equals its reference


@dataclasses.dataclass(frozen=True)
class Run:
    """One way of running the model on the measured tokens, against the right run (the reference).

    loss: mean next-token cross-entropy (nats) over the measured tokens; off: the largest |logit difference|
    from the reference there; changed: the share of next-token predictions (argmax) that differ from it.
    """

    loss: float
    off: float
    changed: float

    @property
    def same(self):
        """True when the run computes the reference's logits, up to float32 rounding."""
        return self.off < SAME


def table(runs):
    """{run: Run} as a text table: loss, largest logit difference from the reference, predictions changed.

    A difference below SAME prints as "< 0.001" (float32 rounding, whose digits differ by CPU).
    """
    width = max(len(name) for name in runs)
    lines = [f"{'':<{width}}  loss  largest logit difference  predictions changed"]
    for name, run in runs.items():
        off = f"< {SAME:g}" if run.same else f"{run.off:.1f}"
        lines.append(f"{name:<{width}}  {run.loss:.2f}  {off:>24}  {run.changed:>19.0%}")
    return "\n".join(lines)


def _token_losses(logits, ids):
    return F.cross_entropy(logits[:-1], ids[1:], reduction="none")


def _rows(rows):
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__len__") or not len(rows):
        raise TypeError(f"rows must be a non-empty list of 1-D tensors of token ids, got {rows!r:.60}")
    tensors = []
    for row in rows:
        row = torch.as_tensor(row)
        if row.dim() != 1 or row.numel() < 2 or row.dtype != torch.int64:
            raise ValueError(
                f"rows must hold 1-D int64 tensors of at least 2 token ids, got shape {tuple(row.shape)} ({row.dtype})"
            )
        tensors.append(row)
    return tensors


def _compare(pieces, references):
    """A Run from (logits, ids) pieces against the reference logits of each piece."""
    losses = torch.cat([_token_losses(logits, ids) for logits, ids in pieces])
    off = max((logits - ref).abs().max().item() for (logits, _), ref in zip(pieces, references, strict=True))
    changed = torch.cat(
        [logits.argmax(-1) != ref.argmax(-1) for (logits, _), ref in zip(pieces, references, strict=True)]
    )
    return Run(losses.mean().item(), off, changed.float().mean().item())


def left_padded(rows, pad_id):
    """(ids, attention_mask), each (len(rows), longest): the rows padded on the left with pad_id."""
    rows = _rows(rows)
    pad_id = _validate.count("pad_id", pad_id)
    n = max(len(row) for row in rows)
    ids = torch.stack([torch.cat([torch.full((n - len(row),), pad_id), row]) for row in rows])
    mask = torch.stack([torch.cat([torch.zeros(n - len(row)), torch.ones(len(row))]) for row in rows]).long()
    return ids, mask


def padding_bug(model, rows, pad_id):
    """{run: Run} for a left-padded batch of rows, on every real token, against each row run alone.

    Runs: "each row alone" (the reference), "no attention_mask" (positions 0..n-1: real tokens read the
    padding), "attention_mask, positions 0..n-1" (each row's positions start at its number of pads) and
    "attention_mask + position_ids" (llama.padded_position_ids, as transformers' generate).
    """
    rows = _rows(rows)
    ids, mask = left_padded(rows, pad_id)
    real = mask.bool()
    alone = [model(row[None])[0] for row in rows]

    def run(**inputs):
        logits = model(ids, **inputs)
        return _compare([(logits[i, real[i]], row) for i, row in enumerate(rows)], alone)

    return {
        "each row alone": _compare([(a, row) for a, row in zip(alone, rows, strict=True)], alone),
        "no attention_mask": run(),
        "attention_mask, positions 0..n-1": run(attention_mask=mask),
        "attention_mask + position_ids": run(attention_mask=mask, position_ids=llama.padded_position_ids(mask)),
    }


def bfloat16_shift(model, rows, pad_id):
    """The largest logit difference on the real tokens between a masked batch run with positions 0..n-1 and
    with padded_position_ids, both with angles rounded to bfloat16 (the shift is exact only for exact angles)."""
    ids, mask = left_padded(rows, pad_id)
    real = mask.bool()
    with model.use_positions(angle_dtype=torch.bfloat16):
        shifted = model(ids, attention_mask=mask)
        counted = model(ids, attention_mask=mask, position_ids=llama.padded_position_ids(mask))
    return (shifted - counted)[real].abs().max().item()


PACKING_RUNS = (
    "the document alone",
    "resets, no mask, no cache",
    "document mask, positions run on",
    "neither",
    "resets + a cache or a mask of ones",
)


def packing_bug(model, first, second):
    """{run: Run} for two documents packed into one row, on the second document's tokens, against it run alone.

    Runs (PACKING_RUNS): "the document alone" (the reference); "resets, no mask, no cache" (positions restart
    at the second document and the documents are read off the resets, as transformers does for a forward
    without a 2-D mask and without a cache: llama.inferred_document_ids); "document mask, positions run on"
    (document_ids, positions 0..n-1: a shift); "neither" (positions run on, no mask: the second document reads
    the first); "resets + a cache or a mask of ones" (resets that nothing reads as documents: transformers with
    use_cache=True or an attention_mask of ones; the second document reads the first at positions after its own).
    """
    first, second = _rows([first, second])
    ids = torch.cat([first, second])[None]
    docs = torch.cat([torch.zeros(len(first)), torch.ones(len(second))]).long()[None]
    resets = llama.document_position_ids(docs)
    alone = model(second[None])[0]
    part = slice(len(first), None)

    def run(**inputs):  # the logits of the second document only: the first one's are not measured
        return _compare([(model.logits(model.hidden_states(ids, **inputs)[0, part]), second)], [alone])

    return {
        "the document alone": _compare([(alone, second)], [alone]),
        "resets, no mask, no cache": run(position_ids=resets, document_ids=llama.inferred_document_ids(resets)),
        "document mask, positions run on": run(document_ids=docs),
        "neither": run(),
        "resets + a cache or a mask of ones": run(position_ids=resets),
    }


# --- what transformers does with packed documents, measured ----------------------------------------

PACKING_RECORD = Path(__file__).resolve().parent / "data" / "transformers_packing.json"
# Each call of transformers' LlamaForCausalLM the record measures (ids: the two documents packed, second: the
# second alone, resets: positions restarting at it, block: the (1, 1, n, n) causal mask of each document, ones: a
# 2-D attention_mask of ones), and the pe_lib run of packing_bug that computes the same.
TRANSFORMERS_PACKING = {
    "model(second)": "the document alone",
    "model(ids, position_ids=resets, use_cache=False)": "resets, no mask, no cache",
    "model(ids, attention_mask=block, use_cache=False)": "document mask, positions run on",
    "model(ids, use_cache=False)": "neither",
    "model(ids, position_ids=resets)": "resets + a cache or a mask of ones",
    "model(ids, position_ids=resets, attention_mask=ones, use_cache=False)": "resets + a cache or a mask of ones",
}


def transformers_packing(first, second):
    """{call: Run}: what transformers' LlamaForCausalLM computes for two packed documents, measured.

    The model is SmolLM2-135M-Instruct read by transformers from the same GGUF file (smollm.gguf_path()), in
    float32; first and second are 1-D int64 token ids. Each call of TRANSFORMERS_PACKING is run on the second
    document's tokens and compared with model(second). model(ids, position_ids=resets) keeps the config's
    use_cache=True: the default forward builds a cache. transformers' reading of the GGUF takes tens of seconds the
    first time; smollm_transformers keeps it.
    """
    from . import smollm_transformers

    first, second = _rows([first, second])
    reference = smollm_transformers.load()
    n = len(first) + len(second)
    ids = torch.cat([first, second])[None]
    resets = torch.cat([torch.arange(len(first)), torch.arange(len(second))])[None]
    docs = torch.cat([torch.zeros(len(first)), torch.ones(len(second))])
    block = ((docs[:, None] == docs[None, :]) & torch.ones(n, n, dtype=torch.bool).tril())[None, None]
    inputs = {
        "model(ids, position_ids=resets, use_cache=False)": {"position_ids": resets, "use_cache": False},
        "model(ids, attention_mask=block, use_cache=False)": {"attention_mask": block, "use_cache": False},
        "model(ids, use_cache=False)": {"use_cache": False},
        "model(ids, position_ids=resets)": {"position_ids": resets},
        "model(ids, position_ids=resets, attention_mask=ones, use_cache=False)": {
            "position_ids": resets,
            "attention_mask": torch.ones_like(ids),
            "use_cache": False,
        },
    }
    part = slice(len(first), None)
    with torch.no_grad():
        alone = reference(second[None], use_cache=False).logits[0]
        runs = {"model(second)": _compare([(alone, second)], [alone])}
        for call, kwargs in inputs.items():
            runs[call] = _compare([(reference(ids, **kwargs).logits[0, part], second)], [alone])
    return runs


def write_packing_record(first, second):
    """Measure transformers_packing(first, second) and write it, with the token ids and versions, to PACKING_RECORD."""
    import transformers

    runs = transformers_packing(first, second)
    record = {
        "transformers": transformers.__version__,
        "torch": torch.__version__.split("+")[0],
        "first": torch.as_tensor(first).tolist(),
        "second": torch.as_tensor(second).tolist(),
        "runs": {call: {k: round(v, 6) for k, v in dataclasses.asdict(run).items()} for call, run in runs.items()},
    }
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in record.items() if key != "runs"]
    lines.append(' "runs": {\n' + ",\n".join(f"  {json.dumps(c)}: {json.dumps(r)}" for c, r in record["runs"].items()))
    PACKING_RECORD.write_text("{\n" + ",\n".join(lines) + "\n }\n}\n", encoding="utf-8")


def recorded_packing():
    """transformers_packing as measured and recorded: (runs {call: Run}, record) with the token ids and versions."""
    record = json.loads(PACKING_RECORD.read_text(encoding="utf-8"))
    return {call: Run(**values) for call, values in record["runs"].items()}, record


def transformers_table(runs):
    """{call: Run} of transformers_packing as text: loss, largest logit difference, predictions changed, the call."""
    lines = ["  loss  largest logit difference  predictions changed  transformers' LlamaForCausalLM"]
    for call, run in runs.items():
        off = f"< {SAME:g}" if run.same else f"{run.off:.1f}"
        lines.append(f"  {run.loss:.2f}  {off:>24}  {run.changed:>19.0%}  {call}")
    return "\n".join(lines)


def yarn_port_bug(model, ids, scaling):
    """{run: Run} for ids (1, n) under a 'yarn' scaling, against the reference (transformers' yarn).

    Runs: "transformers' yarn" (the reference), "no attention factor" (the port forgets YaRN's temperature:
    attention_factor 1) and "the paper's ramp" ('yarn_paper': the ramp in turns over the context, not in
    transformers' rounded pair indices).
    """
    if not isinstance(scaling, dict) or scaling.get("rope_type") != "yarn":
        raise ValueError(f"scaling must be a dict with rope_type 'yarn', got {scaling!r}")
    ports = {
        "no attention factor": {**scaling, "attention_factor": 1.0},
        "the paper's ramp": {**scaling, "rope_type": "yarn_paper"},
    }
    with model.use_positions(scaling=scaling):
        reference = model(ids)[0]
    runs = {"transformers' yarn": _compare([(reference, ids[0])], [reference])}
    for name, chosen in ports.items():  # one port's logits at a time: each is (n, vocab) float32
        with model.use_positions(scaling=chosen):
            runs[name] = _compare([(model(ids)[0], ids[0])], [reference])
    return runs


# --- the figure ------------------------------------------------------------------------------------

_KINDS = {  # (colour, hatch, legend): a run that is the reference, one that equals it, one that does not
    "reference": (COLOURS["reference"], None, "the reference run"),
    "same": (COLOURS["rope"], "..", "equals the reference (logits within 1e-3)"),
    "bug": (COLOURS["problem"], "//", "a bug (logits differ)"),
}


def _kind(index, run):
    return "reference" if index == 0 else ("same" if run.same else "bug")


def bugs_figure(panels):
    """One panel per bug: {title: {run: Run}} (the reference run first), each run's loss as a horizontal bar.

    Bars show losses rounded to 2 decimals (equal losses draw as equal on every CPU); colour and hatch say
    whether the run is the reference, equals it, or is a bug.
    """
    if not isinstance(panels, dict) or not panels:
        raise TypeError(f"panels must be a non-empty dict {{title: {{run: Run}}}}, got {type(panels).__name__}")
    heights = [len(runs) for runs in panels.values()]
    fig, axes = plt.subplots(
        len(panels), 1, figsize=style_figsize(7.2, 1.0 + 0.42 * sum(heights)), layout="constrained",
        sharex=True, gridspec_kw={"height_ratios": heights},
    )  # fmt: skip
    axes = np.atleast_1d(axes)
    top = max(run.loss for runs in panels.values() for run in runs.values())
    for ax, (title, runs) in zip(axes, panels.items(), strict=True):
        names = list(runs)
        losses = [round(runs[name].loss, 2) for name in names]
        for row, (name, loss) in enumerate(zip(names, losses, strict=True)):
            colour, hatch, _ = _KINDS[_kind(row, runs[name])]
            ax.barh(row, loss, color=colour, hatch=hatch, edgecolor="white", height=0.7)
            ax.text(loss + 0.05, row, f"{loss:.2f}", va="center", fontsize="small")
        ax.set_yticks(range(len(names)), labels=names)
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_title(title, loc="left", fontsize="medium")
    axes[-1].set(xlabel="loss (nats per token)", xlim=(0, top * 1.15))
    handles = [Patch(facecolor=c, hatch=h, edgecolor="white", label=label) for c, h, label in _KINDS.values()]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize="small")
    return fig
