"""pe_lib.llama's forward against transformers' LlamaForCausalLM on SmolLM2-135M-Instruct, in one run.

    python benchmarks/bench_llama.py [--lengths 512 2048] [--repeats 5] [--threads N] [--profile-length 512]
        [--no-memory]

Both models hold the same float32 weights, read from the same GGUF file (pe_lib.smollm.load and
transformers' from_pretrained(..., gguf_file=...)). Three forwards are timed on the first n tokens of
the course's own text, under torch.no_grad(), each returning the logits of every position:
- pe_lib: q, k, v in one matrix product, gate and up in one (pe_lib.llama as it is);
- pe_lib, separate products: the same model and weights with q, k, v and gate, up as five products, as
  pe_lib ran before issue 33 and as transformers does (separate_products below): the "before";
- transformers.
They alternate (each round in another order) and the table gives the best wall time of each (the least
disturbed run: other processes only ever add time), the ratios against transformers (below 1 is faster)
and the largest logit difference from transformers. The load average is printed before and after: on a
shared machine one run's ratios can swing either way. Then torch.profiler says where the time of one
forward went in each (matrix products, attention, the rest), and a fresh process per variant measures
the peak memory of a load and a forward at the longest length (VmHWM).
"""

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from pe_lib import llama, smollm

ROOT = Path(__file__).resolve().parent.parent
VARIANTS = ("pe_lib", "pe_lib, separate products", "transformers")


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


def _separate_attention(attn, x, cos, sin, layout, mask=None):
    """pe_lib.llama's Attention.forward before issue 33: three products, q and k rotated apart."""
    batch, n, _ = x.shape
    q, k, v = (
        F.linear(x, w).view(batch, n, -1, attn.head_dim).transpose(1, 2)
        for w in (attn.q_weight, attn.k_weight, attn.v_weight)
    )
    if cos is not None:
        q, k = llama.rotate(q, cos, sin, layout), llama.rotate(k, cos, sin, layout)
    if mask is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    else:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
    return attn.o(out.transpose(1, 2).reshape(batch, n, -1))


def _separate_mlp(mlp, x):
    """pe_lib.llama's MLP.forward before issue 33: gate and up as two products."""
    gate, up = mlp.gate_up.weight.chunk(2)
    return mlp.down(F.silu(F.linear(x, gate)) * F.linear(x, up))


@contextlib.contextmanager
def separate_products(model):
    """Run pe_lib's model as it ran before issue 33: q, k, v and gate, up as separate matrix products (of views of
    its fused weights), q and k rotated apart. Everything else is the model's own code."""
    for layer in model.layers:
        layer.attn.forward = _separate_attention.__get__(layer.attn)
        layer.mlp.forward = _separate_mlp.__get__(layer.mlp)
    try:
        yield model
    finally:
        for layer in model.layers:
            del layer.attn.forward, layer.mlp.forward


def _forwards(ours, theirs):
    def separate(ids):
        with separate_products(ours):
            return ours(ids)

    return {"pe_lib": ours, "pe_lib, separate products": separate, "transformers": lambda ids: theirs(ids).logits}


def _timed(forward, ids):
    start = time.perf_counter()
    with torch.no_grad():
        logits = forward(ids)
    return time.perf_counter() - start, logits


def compare(ours, theirs, ids, repeats):
    """({variant: best s}, {variant: max |logit difference| from transformers}) over `repeats` rotating rounds."""
    forwards = _forwards(ours, theirs)
    times = {name: [] for name in VARIANTS}
    differences = {name: 0.0 for name in VARIANTS}
    for repeat in range(repeats):
        order = VARIANTS[repeat % 3 :] + VARIANTS[: repeat % 3]
        logits = {}
        for name in order:
            seconds, logits[name] = _timed(forwards[name], ids)
            times[name].append(seconds)
        for name in VARIANTS:
            differences[name] = max(differences[name], (logits[name] - logits["transformers"]).abs().max().item())
        del logits
    return {name: min(values) for name, values in times.items()}, differences


def _kind(op_name):
    if op_name in ("aten::mm", "aten::addmm", "aten::bmm"):
        return "matrix products"
    if "scaled_dot_product" in op_name:
        return "attention"
    return "everything else"


def _counted(op_name):
    """Whether a call of this op counts as one product or one attention (not the wrapper around the kernel)."""
    return op_name in ("aten::mm", "aten::addmm", "aten::bmm") or op_name.startswith("aten::_scaled_dot_product")


def _profiled(forward, ids):
    """{kind: [self CPU seconds, calls]} of one profiled forward."""
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        forward(ids)
    kinds = {"matrix products": [0.0, 0], "attention": [0.0, 0], "everything else": [0.0, 0]}
    for event in prof.key_averages():
        if event.key.startswith("aten::") and event.self_cpu_time_total > 0:
            kinds[_kind(event.key)][0] += event.self_cpu_time_total / 1e6
            kinds[_kind(event.key)][1] += event.count if _counted(event.key) else 0
    return kinds


def where_the_time_went(ours, theirs, ids, repeats=3):
    """{variant: {kind: (self CPU seconds, calls)}} from torch.profiler: of `repeats` profiled forwards of each
    (after a warm-up), the one with the least time in all, as the timings keep the least disturbed run."""
    out = {}
    for name, forward in _forwards(ours, theirs).items():
        with torch.no_grad():
            forward(ids)
        runs = [_profiled(forward, ids) for _ in range(repeats)]
        best = min(runs, key=lambda kinds: sum(seconds for seconds, _ in kinds.values()))
        out[name] = {kind: tuple(values) for kind, values in best.items()}
    return out


def product_flops(config, n):
    """Floating-point operations of one forward's matrix products over n tokens: 2 per multiply-add, every
    layer's q, k, v, o, gate, up and down, and the logits (n x dim against the vocabulary)."""
    kv = config.n_kv_heads * config.head_dim
    per_layer = config.dim * (2 * config.dim + 2 * kv) + 3 * config.dim * config.hidden_dim
    return 2 * n * (config.n_layers * per_layer + config.dim * config.vocab_size)


def machine_product_rate(repeats=5):
    """GFLOP/s of this machine's float32 matrix product on one MLP-sized product (2,048 x 576 by 576 x 3,072)."""
    x, w = torch.randn(2048, 576), torch.randn(3072, 576)
    F.linear(x, w)
    best = min(_timed(lambda _: F.linear(x, w), None)[0] for _ in range(repeats))
    return 2 * 2048 * 576 * 3072 / best / 1e9


def what_bounds_the_ratio(profiles, config, n):
    """Lines saying how close the products run to this machine's own rate, and the best ratio the same arithmetic
    allows: pe_lib's products and attention alone (everything else free) against transformers' whole forward."""
    ours, theirs = profiles["pe_lib"], profiles["transformers"]
    kernels = ours["matrix products"][0] + ours["attention"][0]
    rate = product_flops(config, n) / ours["matrix products"][0] / 1e9
    return (
        f"pe_lib's products: {rate:.0f} GFLOP/s; one large product alone on this machine: {machine_product_rate():.0f}"
        f" GFLOP/s\nfloor: pe_lib's products + attention alone (everything else free) = "
        f"{kernels / sum(v[0] for v in theirs.values()):.2f} x transformers' forward: the same arithmetic in the same "
        "kernels cannot go below it; only less arithmetic can (e.g. the logits of the last position only)"
    )


MEMORY_PROBE = """
import json, sys, torch
from pe_lib import llama, smollm
sys.path.insert(0, {benchmarks!r})
from bench_llama import separate_products
model, tokenizer = smollm.load()
ids = torch.randint(0, 49152, (1, {n}), generator=torch.Generator().manual_seed(0))
with torch.no_grad():
    if {separate}:
        with separate_products(model):
            logits = model(ids)
    else:
        logits = model(ids)
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"peak_mb": peak_kb / 1024}}))
"""


def peak_memory(n, separate):
    """The peak resident memory (MB, VmHWM) of a fresh process that loads pe_lib's model and runs n tokens."""
    code = MEMORY_PROBE.format(benchmarks=str(Path(__file__).resolve().parent), n=n, separate=separate)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_mb"]


def _load_average():
    return "load average (1, 5, 15 min): {:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg())


def main(argv=None, models=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--profile-length", type=int, default=512, help="tokens of the profiled forward (0: none)")
    parser.add_argument("--no-memory", action="store_true", help="skip the fresh-process memory probes")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    print(_load_average())
    if models is None:
        ours, theirs, tokenizer, loads = load_models()
        print("load: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in loads.items()))
    else:
        ours, theirs, tokenizer = models
    tokens = tokenizer.encode(course_text())
    print(f"SmolLM2-135M-Instruct, float32, {torch.get_num_threads()} threads, best of {args.repeats}, all logits")
    print(f"{'tokens':>7} {'pe_lib s':>9} {'separate s':>11} {'transformers s':>15} {'ratio':>6} {'before':>7}"
          "  max |logit difference|")  # fmt: skip
    rows = []
    for n in args.lengths:
        ids = torch.tensor([tokens[:n]])
        best, differences = compare(ours, theirs, ids, args.repeats)
        mine, before, reference = (best[name] for name in VARIANTS)
        rows.append((n, mine, reference, mine / reference, differences["pe_lib"], before / reference))
        ratios = f"{mine / reference:>6.2f} {before / reference:>7.2f}"
        print(f"{n:>7} {mine:>9.2f} {before:>11.2f} {reference:>15.2f} {ratios}  {differences['pe_lib']:.1e}")
    print("ratio: pe_lib / transformers; before: pe_lib with separate products (as before issue 33) / transformers")
    if args.profile_length:
        ids = torch.tensor([tokens[: args.profile_length]])
        profiles = where_the_time_went(ours, theirs, ids, repeats=min(args.repeats, 3))
        print(
            f"\nwhere the time of one forward went, {args.profile_length} tokens: torch.profiler, self CPU s "
            "(calls), the least disturbed of up to 3"
        )
        kinds = ("matrix products", "attention", "everything else")
        print(f"{'':<27}" + "".join(f"{kind:>22}" for kind in kinds) + f"{'total':>9}")
        for name, by_kind in profiles.items():
            cells = [f"{by_kind[k][0]:>13.2f} s ({by_kind[k][1]:>3})" for k in kinds[:2]]
            cells.append(f"{by_kind[kinds[2]][0]:>20.2f} s")
            print(f"{name:<27}{''.join(cells)}{sum(v[0] for v in by_kind.values()):>8.2f} s")
        print(what_bounds_the_ratio(profiles, ours.config, args.profile_length))
    if not args.no_memory:
        n = max(args.lengths)
        peaks = {name: peak_memory(n, separate) for name, separate in (("pe_lib", False), ("before", True))}
        print(f"\npeak memory of a fresh process, load + one forward of {n:,} tokens (VmHWM): "
              f"pe_lib {peaks['pe_lib']:,.0f} MB, with separate products {peaks['before']:,.0f} MB")  # fmt: skip
    print(_load_average())
    return rows


if __name__ == "__main__":
    main()
