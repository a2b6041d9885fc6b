"""pe_lib.llama's forward against transformers' LlamaForCausalLM on SmolLM2-135M-Instruct, in one run.

    python benchmarks/bench_llama.py [--lengths 512 2048] [--repeats 5] [--threads N]

Both models hold the same float32 weights, read from the same GGUF file (pe_lib.smollm.load and
transformers' from_pretrained(..., gguf_file=...)). For each length, the first n tokens of the
course's own text go through both forwards, alternating which runs first, under torch.no_grad();
the table gives the best wall time of each (the least disturbed run: other processes only ever add
time), their ratio (pe_lib / transformers: below 1 is faster) and the largest logit difference.
The load average is printed before and after: on a shared machine the ratio of one run can swing
either way (the matrix products, 85% of either forward, are the same calls in both).
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch

from pe_lib import smollm

ROOT = Path(__file__).resolve().parent.parent


def course_text():
    """The markdown of every notebook, joined: more than 16k tokens of the course's own prose."""
    texts = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts += ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
    return "\n\n".join(texts)


def load_models():
    """(ours, theirs, tokenizer, load seconds {name: s})."""
    start = time.perf_counter()
    ours, tokenizer = smollm.load()
    seconds = {"pe_lib (cached)": time.perf_counter() - start}
    from transformers import AutoModelForCausalLM

    path = smollm.gguf_path()
    start = time.perf_counter()
    theirs = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    seconds["transformers"] = time.perf_counter() - start
    return ours, theirs.eval(), tokenizer, seconds


def _timed(forward, ids):
    start = time.perf_counter()
    with torch.no_grad():
        logits = forward(ids)
    return time.perf_counter() - start, logits


def compare(ours, theirs, ids, repeats):
    """(best s of ours, best s of theirs, max |logit difference|) over `repeats` alternating runs."""
    times = {"ours": [], "theirs": []}
    forwards = {"ours": ours, "theirs": lambda x: theirs(x).logits}
    for repeat in range(repeats):
        order = ("ours", "theirs") if repeat % 2 == 0 else ("theirs", "ours")
        logits = {}
        for name in order:
            seconds, logits[name] = _timed(forwards[name], ids)
            times[name].append(seconds)
        difference = (logits["ours"] - logits["theirs"]).abs().max().item()
        del logits
    return min(times["ours"]), min(times["theirs"]), difference


def main(argv=None, models=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print("load average (1, 5, 15 min): {:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg()))
    if models is None:
        ours, theirs, tokenizer, loads = load_models()
        print("load: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in loads.items()))
    else:
        ours, theirs, tokenizer = models
    tokens = tokenizer.encode(course_text())
    print(f"SmolLM2-135M-Instruct, float32, {torch.get_num_threads()} threads, best of {args.repeats}")
    print(f"{'tokens':>7} {'pe_lib s':>9} {'transformers s':>15} {'ratio':>6}  max |logit difference|")
    rows = []
    for n in args.lengths:
        ids = torch.tensor([tokens[:n]])
        mine, reference, difference = compare(ours, theirs, ids, args.repeats)
        rows.append((n, mine, reference, mine / reference, difference))
        print(f"{n:>7} {mine:>9.2f} {reference:>15.2f} {mine / reference:>6.2f}  {difference:.1e}")
    print("load average (1, 5, 15 min): {:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg()))
    return rows


if __name__ == "__main__":
    main()
