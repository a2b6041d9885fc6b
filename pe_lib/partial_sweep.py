"""Partial RoPE on a real model: SmolLM2-135M-Instruct, slow pairs frozen, ported wrong, read wrong (notebook 12).

SmolLM2 was trained turning all 32 pairs of its 64-feature heads (RoPE base 1e5, "half" layout,
8,192 tokens). The sweep runs it on the text of notebook 10's context-extension sweep (the course's
prose, the same 16,384 tokens) and measures the loss of each next token:

    p-RoPE      the slowest quarter, half or three quarters of the pairs left unturned (Gemma 4's
                rope_type "proportional" with partial_rotary_factor 0.75, 0.5, 0.25 on SmolLM2's weights),
                over 16,384 tokens: inside the trained context and past it, beside notebook 10's
                unchanged RoPE (pe_lib.long_context's committed sweep, the same text and tokens)
    port bugs   for each fraction p, the model "SmolLM2-p" (p-RoPE above) written as two checkpoints:
                its own weights with rope_type proportional (theta 1e5), and the same model as a NeoX
                checkpoint (q/k rows permuted per head, partial_rotary_factor p, theta 1e5**p), which
                computes exactly the same (the "neox" case, a control). Each ported wrong:
                  neox_for_proportional   NeoX pairing and ladder where proportional was meant
                  proportional_for_neox   the reverse
                  whole_head_for_neox     every pair turned where only p of the head was meant
                                          (MiniMax-M2's rotary_dim ignored)
                over the first 4,096 tokens, against SmolLM2-p's own forward (the same positions)
    schema      the config read with the wrong schema: a transformers 4.x reader of a 5.x config (its
                rope_theta inside rope_parameters) falls back to base 10,000; SmolLM2's is 100,000

Every variant is the pe_lib.llama forward with RoPE in its "half" layout: a port's pairing is moved onto
that layout by permuting the rows of W_q and W_k per head (a common permutation of q and k keeps every
q.k; partial_rope.half_layout_order), and its frequencies, which are always a ladder base**(-2i/64) over
its first k pairs and 0 after, are given as Positions(base, proportional scaling). tests/test_partial_sweep.py
checks this against the rotation applied directly.

    python -m pe_lib.partial_sweep [--cache DIR]   # the sweep -> pe_lib/data/partial_rope_sweep.json
    python -m pe_lib.partial_sweep --check         # recompute the first 1,024 tokens of every kind, compare
"""

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

from . import _validate, long_context, sweeps
from .data import load_json
from .llama import Llama
from .partial_rope import half_layout_order, pair_plan, proportional_as_neox_order
from .rope_scaling import rope_frequencies

RESULTS_FILE = "partial_rope_sweep.json"
DATA_DIR = Path(__file__).resolve().parent / "data"
CASES = ("proportional", "neox_for_proportional", "neox", "proportional_for_neox", "whole_head_for_neox")
CASE_LABELS = {
    "proportional": "proportional, as meant (SmolLM2-p)",
    "neox_for_proportional": "NeoX where proportional was meant",
    "neox": "NeoX checkpoint, NeoX port (control)",
    "proportional_for_neox": "proportional where NeoX was meant",
    "whole_head_for_neox": "whole head where part was meant",
}
CHECK_TOLERANCE = long_context.CHECK_TOLERANCE


@dataclasses.dataclass(frozen=True)
class Setup:
    """What defines the sweep."""

    fractions: tuple = (0.75, 0.5, 0.25)  # the part of the pairs that keeps turning
    base: float = 100000.0  # SmolLM2's rope_theta (its GGUF's llama.rope.freq_base)
    wrong_base: float = 10000.0  # what a 4.x reader of a 5.x config falls back to
    length: int = 16384
    bug_length: int = 4096
    windows: tuple = (4096, 8192, 16384)
    bucket: int = 512

    def __post_init__(self):
        for name in ("length", "bug_length", "bucket"):
            _validate.positive_int(name, getattr(self, name))
        if any(w % self.bucket or w > self.length for w in (*self.windows, self.bug_length, self.length)):
            raise ValueError(f"windows, bug_length and length must be multiples of bucket={self.bucket}, <= length")


def case_plan(case, fraction, head_dim=64, base=100000.0):
    """(checkpoint order sigma or None, the port's PairPlan) of one case; see the module docstring."""
    case = _validate.choice("case", case, CASES)
    neox_base = base**fraction  # the NeoX checkpoint's rope_theta: its ladder over r = p d equals the proportional one
    checkpoint = None if case in ("proportional", "neox_for_proportional") else "neox"
    kind, port_fraction, port_base = {
        "proportional": ("proportional", fraction, base),
        "neox_for_proportional": ("neox", fraction, base),
        "neox": ("neox", fraction, neox_base),
        "proportional_for_neox": ("proportional", fraction, neox_base),
        "whole_head_for_neox": ("neox", 1.0, neox_base),
    }[case]
    sigma = None if checkpoint is None else proportional_as_neox_order(head_dim, fraction)
    return sigma, pair_plan(head_dim, port_fraction, base=port_base, kind=kind, layout="half")


def ladder(theta, head_dim):
    """(base, scaling) with rope_frequencies(head_dim, base=base, scaling=scaling) == theta (relative 1e-9).

    theta: (head_dim // 2,) base**(-2i/head_dim) over its first k pairs, 0 after (every port of this sweep).
    scaling is None when all pairs turn, else proportional with k of the head_dim // 2 pairs.
    """
    theta = np.asarray(theta, dtype=np.float64)
    half = head_dim // 2
    turning = int(np.count_nonzero(theta))
    if theta.shape != (half,) or turning == 0 or np.any(theta[turning:]) or theta[0] != 1.0:
        raise ValueError(f"theta must be a ladder from 1 over its first pairs, then zeros; got {theta}")
    base = float(theta[1] ** (-half)) if turning > 1 else 10.0
    scaling = None
    if turning < half:
        fraction = turning / half
        if int(fraction * head_dim // 2) != turning:
            fraction = (turning + 0.5) / half
        scaling = {"rope_type": "proportional", "partial_rotary_factor": fraction}
    if not np.allclose(rope_frequencies(head_dim, base=base, scaling=scaling), theta, rtol=1e-9, atol=0):
        raise ValueError(f"theta is not one ladder base**(-2i/{head_dim}): {theta}")
    return base, scaling


@contextlib.contextmanager
def permuted_qk(model, order):
    """Rows of every layer's W_q and W_k permuted per head by `order` (head_dim,), restored afterwards."""
    if not isinstance(model, Llama):
        raise TypeError(f"model must be a pe_lib.llama.Llama, got {type(model).__name__}")
    head_dim = model.config.head_dim
    order = torch.as_tensor(np.asarray(order, dtype=np.int64))
    if sorted(order.tolist()) != list(range(head_dim)):
        raise ValueError(f"order must be a permutation of range({head_dim}), got {order.tolist()}")
    saved = []
    with torch.no_grad():
        for layer in model.layers:
            for weight in (layer.attn.q_weight, layer.attn.k_weight):  # views of the layer's fused qkv rows
                saved.append((weight, weight.clone()))
                rows = weight.view(-1, head_dim, weight.shape[-1])
                rows.copy_(rows[:, order].clone())
    try:
        yield model
    finally:
        with torch.no_grad():
            for weight, original in saved:
                weight.copy_(original)


@contextlib.contextmanager
def run_case(model, case, fraction, base=100000.0):
    """The model as `case` computes it at `fraction` (a context manager; the model's weights come back unchanged)."""
    head_dim = model.config.head_dim
    sigma, plan = case_plan(case, fraction, head_dim, base)
    order, theta = half_layout_order(plan)
    order = order if sigma is None else sigma[order]  # the checkpoint's rows, then the port's pairing
    ladder_base, scaling = ladder(theta, head_dim)
    with permuted_qk(model, order), model.use_positions(base=ladder_base, scaling=scaling, layout="half"):
        yield model


def plan(setup):
    """The runs, in order: [(kind, arguments)]; "prope" and "schema" over setup.length, "bug" over setup.bug_length."""
    runs = [("prope", (p,)) for p in setup.fractions]
    runs += [("bug", (case, p)) for p in setup.fractions for case in CASES if case != "proportional"]
    runs += [("schema", (setup.wrong_base,))]
    return runs


def _key(kind, args):
    return f"{kind}-" + "-".join(str(a) for a in args)


def one_run(model, ids, kind, args, setup):
    """{"kind", "args", "bucket_loss"} of one run over ids (the whole ids: the caller cuts them)."""
    if kind == "prope":
        context = run_case(model, "proportional", args[0], setup.base)
    elif kind == "bug":
        context = run_case(model, args[0], args[1], setup.base)
    elif kind == "schema":
        context = model.use_positions(base=args[0])
    elif kind == "none":
        context = contextlib.nullcontext()
    else:
        raise ValueError(f"kind must be one of 'prope', 'bug', 'schema', 'none', got {kind!r}")
    with context:
        losses = long_context.token_losses(model, ids)
    return {"kind": kind, "args": list(args), "bucket_loss": long_context.bucket_means(losses, setup.bucket).tolist()}


def run_sweep(model, tokenizer, text, setup=None, *, progress=None, cache=None):
    """The results dict. cache: a folder where each run is kept as it ends and read back on a rerun."""
    setup = setup or Setup()
    tokens = tokenizer.encode(text)
    if len(tokens) < setup.length:
        raise ValueError(f"text must have at least {setup.length} tokens, got {len(tokens)}")
    runs = {}
    steps = plan(setup)
    for index, (kind, args) in enumerate(steps, 1):
        path = None if cache is None else Path(cache) / f"{_key(kind, args)}.json"
        start = time.perf_counter()
        if path is not None and path.exists():
            run = json.loads(path.read_text())
        else:
            length = setup.bug_length if kind == "bug" else setup.length
            run = sweeps.rounded(one_run(model, torch.tensor([tokens[:length]]), kind, args, setup), 4)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(run))
        runs[_key(kind, args)] = run
        if progress is not None:
            progress(index, len(steps), kind, args, run, time.perf_counter() - start)
    return summarize(runs, setup, text)


def summarize(runs, setup, text):
    """The results file's dict: every run's bucket losses, the window means, the bug costs against SmolLM2-p."""
    windows = {}
    for key, run in runs.items():
        length = setup.bug_length if run["kind"] == "bug" else setup.length
        windows[key] = {
            str(w): long_context.window_summary(run["bucket_loss"], w, setup.bucket)
            for w in (*setup.windows, setup.bug_length)
            if w <= length
        }
    costs = {}
    for p in setup.fractions:
        reference = windows[_key("prope", (p,))][str(setup.bug_length)]["mean"]
        costs[str(p)] = {
            case: windows[_key("bug", (case, p))][str(setup.bug_length)]["mean"] - reference
            for case in CASES
            if case != "proportional"
        }
    return sweeps.rounded(
        {
            "model": "SmolLM2-135M-Instruct",
            "setup": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(setup).items()},
            "text": {
                "sha256": long_context.text_sha256(text),
                "tokens": setup.length,
                "same_as": "context_extension.json",
            },
            "runs": runs,
            "windows": windows,
            "bug_cost": costs,
        },
        4,
    )


def load_results():
    """The committed sweep (pe_lib/data/partial_rope_sweep.json); see the module docstring."""
    return load_json(RESULTS_FILE)


def window_table(results, context=None):
    """Rows (label, {window: (mean, last_quarter)}): RoPE unchanged (notebook 10), each p-RoPE, the wrong base."""
    context = context or long_context.load_results()
    setup = results["setup"]
    rows = [("all 32 pairs turn (notebook 10)", context["windows"]["none"])]
    for p in setup["fractions"]:
        turning = int(p * 32)
        rows.append((f"{turning} of 32 pairs turn (p = {p})", results["windows"][_key("prope", (p,))]))
    rows.append(
        (f"base {setup['wrong_base']:,.0f} (4.x reader)", results["windows"][_key("schema", (setup["wrong_base"],))])
    )
    return [(label, {int(w): (c["mean"], c["last_quarter"]) for w, c in cells.items()}) for label, cells in rows]


def print_results(results, context=None):
    setup = results["setup"]
    windows = setup["windows"]
    print(f"{'':<34}" + "".join(f"{w:>9,} tokens: mean, last 1/4" for w in windows))
    for label, cells in window_table(results, context):
        print(f"{label:<34}" + "".join(f"{cells[w][0]:>24.3f}, {cells[w][1]:.3f}" for w in windows))
    print(f"\ncost of a port bug (nats, mean over the first {setup['bug_length']:,} tokens, against SmolLM2-p):")
    print(f"{'':<40}" + "".join(f"p = {p:<8}" for p in setup["fractions"]))
    for case in CASES[1:]:
        print(
            f"{CASE_LABELS[case]:<40}"
            + "".join(f"{results['bug_cost'][str(p)][case]:<+12.3f}" for p in setup["fractions"])
        )


def check(model, tokenizer, committed, text, *, length=1024, context=None, progress=print):
    """Recompute the first `length` tokens: RoPE unchanged, p = 0.5 as meant and ported wrong, the wrong base.

    Returns a list of differences from the committed results (empty: they agree). context: notebook 10's
    committed sweep, whose unchanged-RoPE losses are compared too (default: long_context.load_results()).
    """
    problems = []
    if long_context.text_sha256(text) != committed["text"]["sha256"]:
        problems.append("the text is not the one the committed sweep measured (sha256 differs)")
    setup = Setup(**{k: tuple(v) if isinstance(v, list) else v for k, v in committed["setup"].items()})
    ids = torch.tensor([tokenizer.encode(text)[:length]])
    p = setup.fractions[len(setup.fractions) // 2]
    todo = [("none", ()), ("prope", (p,)), *[("bug", (c, p)) for c in CASES[1:]], ("schema", (setup.wrong_base,))]
    context = context or long_context.load_results()
    for kind, args in todo:
        start = time.perf_counter()
        values = one_run(model, ids, kind, args, setup)["bucket_loss"]
        expected = (
            context["bucket_loss"]["none"] if kind == "none" else committed["runs"][_key(kind, args)]["bucket_loss"]
        )
        gap = float(np.max(np.abs(np.subtract(values, expected[: len(values)]))))
        progress(
            f"{_key(kind, args)}: first {length:,} tokens {np.mean(values):.3f}, gap {gap:.4f} "
            f"({time.perf_counter() - start:.0f} s)"
        )
        if not gap <= CHECK_TOLERANCE:
            problems.append(
                f"{_key(kind, args)}: bucket losses differ by up to {gap:.4f} nats (tolerance {CHECK_TOLERANCE})"
            )
    return problems


def main(argv=None):
    from . import smollm

    parser = argparse.ArgumentParser(description="Partial RoPE on SmolLM2-135M: p-RoPE, port bugs, a wrong schema.")
    parser.add_argument("--out", type=Path, default=DATA_DIR / RESULTS_FILE, help="results file (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="recompute the first 1,024 tokens of each kind, compare")
    parser.add_argument("--cache", type=Path, help="keep each run here as it ends; a rerun reads them back")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    args = parser.parse_args(argv)
    torch.set_num_threads(_validate.positive_int("threads", args.threads))
    model, tokenizer = smollm.load()
    text = long_context.load_prose()  # notebook 10's snapshot: the same tokens as its sweep
    start = time.perf_counter()
    if args.check:
        problems = check(model, tokenizer, json.loads(args.out.read_text(encoding="utf-8")), text)
        for problem in problems:
            print("DIFFERS:", problem)
        print(f"check took {time.perf_counter() - start:.0f} s: " + ("agrees" if not problems else "DIFFERS"))
        return 1 if problems else 0

    def report(index, total, kind, run_args, run, seconds):
        print(
            f"[{index:2d}/{total}] {kind} {run_args}: mean {np.nanmean(run['bucket_loss']):.3f}   ({seconds:.0f} s)",
            flush=True,
        )

    results = run_sweep(model, tokenizer, text, progress=report, cache=args.cache)
    print(f"sweep took {time.perf_counter() - start:.0f} s")
    print_results(results)
    args.out.write_text(sweeps.results_json(results), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
