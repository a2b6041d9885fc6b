"""What the auditor's traps cost, measured on SmolLM2-135M with notebook 10's machinery (the audit's evidence).

    python -m pe_lib.audit_costs            measure and write pe_lib/data/audit_costs.json (about 15 forwards of
                                            2,048 tokens: a few minutes on two idle cores)
    python -m pe_lib.audit_costs --check    measure again and compare with the committed file (exit 1 if not)

Each trap is one change to the positions of the same model on the same tokens (the first 2,048 tokens of the
course's own prose, pe_lib.long_context.load_prose()), so a difference of mean next-token loss, in nats per
token, is the cost of that change alone. The model is pe_lib.smollm's (SmolLM2-135M-Instruct, llama.cpp's
Q4_1 GGUF dequantised to float32; RoPE base 100,000, trained context 8,192, every layer full RoPE, half
pairing), run by pe_lib.llama with float64 angles unless a trap says otherwise. Each trap gets three numbers: the
change of mean loss (nats/token; it can be negative: YaRN without its temperature predicts this text slightly
better and is still not the model), the mean KL divergence from the right run's next-token distribution
(nats/token, never negative: how far the port is from the model) and the share of changed top predictions. The
left-padding runs take the same tokens as a batch of two rows (the second 512 tokens shorter, padded on the left)
and score the short row's real tokens against that row run alone. load_costs() reads the committed file;
pe_lib.audit_warnings cites it.
"""

import argparse
import json
import time
from importlib import resources

import torch

from .data import load_json

COSTS_FILE = "audit_costs.json"
LENGTH = 2048
PAD = 512
TOLERANCE = 0.01  # nats: the same runs on another CPU or thread count move by ~1e-4
# trap id -> (what changes, the Positions fields it sets); the reference is the model's own Positions.
TRAPS = {
    "base_fallback": ("rope_theta read as 10,000 (the default) instead of the config's 100,000", {"base": 1e4}),
    "pairing_swapped": ("pairs (2i, 2i+1) turned where the checkpoint pairs (i, i + d/2)", {"layout": "interleaved"}),
    "angles_bfloat16": ("angles p * theta rounded to bfloat16 before cos/sin", {"angle_dtype": torch.bfloat16}),
    "inv_freq_bfloat16": ("theta_i stored in bfloat16 (model.to(torch.bfloat16) casts the buffer)",
                          {"freq_dtype": torch.bfloat16}),
    "half_the_pairs": ("only the first half of the pairs turned (a fraction 0.5 read where the whole head turns)",
                       {"scaling": {"rope_type": "proportional", "partial_rotary_factor": 0.5}}),
    "scaled_unscaled_layers": ("linear x8 scaling on layers trained without it (Gemma 3's sliding layers scaled "
                               "like its global ones)", {"scaling": {"rope_type": "linear", "factor": 8.0}}),
    "yarn_factor_dropped": ("YaRN x4 without its attention factor (cos, sin times 1 instead of 1.139)",
                            {"scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192,
                                         "attention_factor": 1.0}}),
    "yarn_factor_twice": ("YaRN x4 with its attention factor applied twice (1.139 squared = 1.297)",
                          {"scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192,
                                       "attention_factor": (0.1 * 1.3862943611198906 + 1) ** 2}}),
    "nope_everywhere": ("no RoPE in any layer (a NoPE label read for every layer)", {"nope_layers": range(30)}),
}  # fmt: skip
YARN_REFERENCE = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}


class _Stop(Exception):
    """Raised by the hook on the final norm: the forward stops before it forms the (large) logits."""


def _hidden(model, ids, **inputs):
    """The final RMSNorm's output (batch, n, dim): the model's own forward, stopped before the logits."""
    captured = []

    def stop(module, args, output):
        captured.append(output)
        raise _Stop

    handle = model.norm.register_forward_hook(stop)
    try:
        with torch.no_grad():
            model(ids, **inputs)
    except _Stop:
        pass
    finally:
        handle.remove()
    return captured[0]


def _compare(model, hidden, reference, targets, chunk=256):
    """(mean loss, mean KL(reference || run) in nats per token, share of argmax predictions that differ)."""
    loss = kl = differ = 0.0
    weight = model.embed.weight
    for start in range(0, len(targets), chunk):
        rows = slice(start, start + chunk)
        with torch.no_grad():
            mine = torch.log_softmax(hidden[rows] @ weight.T, dim=-1)
            theirs = torch.log_softmax(reference[rows] @ weight.T, dim=-1)
            loss += float(torch.nn.functional.nll_loss(mine, targets[rows], reduction="sum"))
            kl += float((theirs.exp() * (theirs - mine)).sum())
            differ += float((mine.argmax(-1) != theirs.argmax(-1)).sum())
    n = len(targets)
    return loss / n, kl / n, differ / n


def _row(what, run, against):
    loss, kl, differ = run
    return {"what": what, "loss": round(loss, 4), "against": round(against, 4), "cost": round(loss - against, 4),
            "kl": round(kl, 4), "argmax_differs": round(differ, 4)}  # fmt: skip


def measure(progress=print):
    """{"setup", "reference", "traps"}: every trap's loss, its difference from the reference (nats/token), the mean
    KL divergence from the reference's next-token distribution (nats/token) and the share of changed predictions."""
    from . import llama, smollm
    from .ch10_real import left_padded
    from .long_context import load_prose

    model, tokenizer = smollm.load()
    ids = torch.tensor([tokenizer.encode(load_prose())[:LENGTH]])
    targets = ids[0, 1:]
    started = time.perf_counter()
    references = {False: _hidden(model, ids)[0, :-1]}
    with model.use_positions(scaling=YARN_REFERENCE):
        references[True] = _hidden(model, ids)[0, :-1]
    reference_loss = _compare(model, references[False], references[False], targets)[0]
    yarn_loss = _compare(model, references[True], references[True], targets)[0]
    traps = {}
    for name, (what, change) in TRAPS.items():
        change = {k: frozenset(v) if k == "nope_layers" else v for k, v in change.items()}
        yarn = name.startswith("yarn")
        with model.use_positions(**change):
            run = _compare(model, _hidden(model, ids)[0, :-1], references[yarn], targets)
        traps[name] = _row(what, run, yarn_loss if yarn else reference_loss)
        progress(f"{name}: {traps[name]['cost']:+.4f} nats/token, KL {traps[name]['kl']:.4f} "
                 f"({time.perf_counter() - started:.0f} s)")  # fmt: skip
    short = ids[0, :-PAD]
    batch, mask = left_padded([ids[0], short], pad_id=0)
    real = mask[1].bool()
    alone = _hidden(model, short[None])[0, :-1]
    runs = {
        "no_mask": ("left-padded batch run without its attention mask: real tokens read the padding", {}),
        "mask_positions_from_pad": ("mask given, position ids 0..n-1 counted from the first pad (float64 angles)",
                                    {"attention_mask": mask}),
        "mask_and_position_ids": ("mask and position ids from the mask (transformers' generate): the right run",
                                  {"attention_mask": mask, "position_ids": llama.padded_position_ids(mask)}),
    }  # fmt: skip
    alone_loss = _compare(model, alone, alone, short[1:])[0]
    for name, (what, inputs) in runs.items():
        hidden = _hidden(model, batch, **inputs)[1, real][:-1]
        traps[f"padding_{name}"] = _row(what, _compare(model, hidden, alone, short[1:]), alone_loss)
        progress(f"padding_{name}: {traps[f'padding_{name}']['cost']:+.4f} nats/token")
    setup = {
        "model": "SmolLM2-135M-Instruct (pe_lib.smollm: llama.cpp Q4_1 GGUF, dequantised, float32)",
        "text": f"the first {LENGTH} tokens of pe_lib.long_context.load_prose()",
        "padding": f"a batch of the same {LENGTH} tokens and their first {LENGTH - PAD}, the second padded on the left "
                   f"with id 0; scored on its real tokens against that row run alone",
        "reference": "the model's own positions: base 100,000, half pairing, float64 angles, no scaling",
        "yarn_reference": YARN_REFERENCE,
        "metrics": "cost: mean loss minus the reference's (nats/token); kl: mean KL(reference || run) of the "
                   "next-token distributions (nats/token); argmax_differs: share of top predictions that change",
        "torch": torch.__version__,
        "reproduce": "python -m pe_lib.audit_costs --check",
    }  # fmt: skip
    return {"about": __doc__.splitlines()[0], "setup": setup, "reference": round(reference_loss, 4),
            "yarn_reference": round(yarn_loss, 4), "traps": traps}  # fmt: skip


def load_costs():
    """The committed measurements (pe_lib/data/audit_costs.json)."""
    return load_json(COSTS_FILE)


def differences(committed, measured, tolerance=TOLERANCE):
    """Traps whose cost moved by more than `tolerance` nats, as lines; [] when the measurement reproduces."""
    lines = []
    for name, row in committed["traps"].items():
        again = measured["traps"].get(name)
        for key in ("cost", "kl"):
            if again is None or abs(again[key] - row[key]) > tolerance:
                lines.append(f"{name} {key}: committed {row[key]:+.4f}, measured {again and again[key]}")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pe_lib.audit_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="measure and compare with the committed file")
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    measured = measure()
    if args.check:
        lines = differences(load_costs(), measured)
        print("\n".join(lines) if lines else f"all {len(measured['traps'])} costs reproduce within {TOLERANCE} nats")
        return 1 if lines else 0
    path = resources.files("pe_lib.data").joinpath(COSTS_FILE)
    with open(str(path), "w", encoding="utf-8") as handle:
        handle.write(json.dumps(measured, indent=1) + "\n")
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
