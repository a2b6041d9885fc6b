"""Context extension on a real model: SmolLM2-135M-Instruct past its trained 8,192 tokens (notebook 10, section 7).

The model was trained on sequences of up to 8,192 tokens (RoPE base 1e5). The sweep runs it on
one long text, the course's own prose, with RoPE as it was trained ("none") and with four context
extensions configured for twice the context (factor 2, original length 8,192), each computed as
transformers computes it (pe_lib.rope_frequencies):

    linear   position interpolation: every frequency divided by 2
    ntk      NTK-aware: the base raised to 1e5 * 2**(64/62); the fastest pair kept, the slowest halved
    yarn     YaRN as its code and transformers compute it, with its temperature (0.1 ln 2 + 1)**2
    dynamic  dynamic NTK: unchanged up to 8,192 tokens; for n tokens, NTK-aware at 2 n / 8192 - 1

What it measures:
- perplexity: the loss of each next token of the first 16,384 tokens of the text, one forward per
  method; stored as the mean of each block of BUCKET positions. The model is causal, so the loss at a
  position does not depend on the tokens after it: the first 4,096 (8,192) positions of that forward
  ARE the run at 4,096 (8,192) tokens, for every method whose frequencies do not depend on the
  length. Dynamic NTK's do: at 4,096 and 8,192 tokens it is RoPE unchanged (checked, not run), at
  16,384 it is NTK-aware at factor 3 for every position, the first ones included.
- passkey retrieval (Mohtashami and Jaggi 2023): a five-digit number hidden in filler text at a given
  depth, asked for at the end; greedy decoding must return it exactly. No chat template (the model is
  the instruct version; the plain prompt is enough at 4,096 tokens).

    python -m pe_lib.long_context [--cache DIR]   # the sweep -> pe_lib/data/context_extension.json
    python -m pe_lib.long_context --check         # recompute a cheap subset (4,096 tokens) and compare

The text: the markdown cells of notebooks 01-04, in that order (`assemble_prose`), snapshotted in
pe_lib/data/course_prose.txt when the sweep was run, so that later edits of the notebooks leave the
committed sweep valid (its sha256 is stored with the results).
"""

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import _validate, sweeps
from .data import load_json
from .llama import Llama
from .rope_scaling import rope_frequencies

PROSE_NOTEBOOKS = (
    "01_order_problem.ipynb",
    "02_naive_encodings.ipynb",
    "03_sinusoidal_derivation.ipynb",
    "04_pendulum_intuition.ipynb",
)
NOTEBOOKS_DIR = Path(__file__).resolve().parent.parent / "notebooks"
PROSE_FILE = "course_prose.txt"
RESULTS_FILE = "context_extension.json"
DATA_DIR = Path(__file__).resolve().parent / "data"
METHODS = ("none", "linear", "ntk", "yarn", "dynamic")
METHOD_LABELS = {"none": "none", "linear": "PI (linear)", "ntk": "NTK-aware", "yarn": "YaRN", "dynamic": "dynamic NTK"}
CHECK_TOLERANCE = 0.01  # nats: a bucket mean recomputed on another CPU or thread count moves by ~1e-4


@dataclasses.dataclass(frozen=True)
class Setup:
    """What defines the sweep: lengths, the extension factor, the buckets, the passkey trials."""

    original: int = 8192  # the model's trained context (its GGUF metadata)
    factor: float = 2.0  # every extension is configured for factor * original tokens
    length: int = 16384  # the perplexity forward; shorter windows are its prefixes
    windows: tuple = (4096, 8192, 16384)
    bucket: int = 512
    passkey_lengths: tuple = (4096, 2048)  # RoPE unchanged, passkey_trials each
    passkey_trials: int = 10
    passkey_long: tuple = ()  # (length, (depths)) trials at one length for every method, see run_sweep
    seed: int = 0

    def __post_init__(self):
        for name in ("original", "length", "bucket", "passkey_trials"):
            _validate.positive_int(name, getattr(self, name))
        if self.length % self.bucket or any(w % self.bucket or w > self.length for w in self.windows):
            raise ValueError(
                f"windows {self.windows} and length {self.length} must be multiples of bucket {self.bucket}, "
                f"windows at most length"
            )


def assemble_prose(notebooks_dir=NOTEBOOKS_DIR, names=PROSE_NOTEBOOKS):
    """The markdown cells of the notebooks `names` (in that order) in `notebooks_dir`, joined by blank lines."""
    texts = []
    for name in names:
        path = Path(notebooks_dir) / _validate.text("names", name)
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts += ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
    return "\n\n".join(texts)


def load_prose():
    """The committed snapshot of assemble_prose(): the text the committed sweep measured."""
    return resources.files("pe_lib.data").joinpath(PROSE_FILE).read_text(encoding="utf-8")


def load_results():
    """The committed sweep (pe_lib/data/context_extension.json) as a dict; see the module docstring."""
    return load_json(RESULTS_FILE)


def text_sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def scaling(method, factor=2.0, original=8192):
    """The rope-scaling dict of a method (None for "none"), as a model's config would state it."""
    method = _validate.choice("method", method, METHODS)
    if method == "none":
        return None
    if method == "dynamic":
        return {"rope_type": "dynamic", "factor": factor, "max_position_embeddings": original}
    if method == "yarn":
        return {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": original}
    return {"rope_type": method, "factor": factor}


def same_as_unscaled(method, n, head_dim=64, base=1e5, factor=2.0, original=8192):
    """Whether `method` runs RoPE's own frequencies, at temperature 1, on a sequence of n tokens."""
    config = scaling(method, factor, original)
    if config is None:
        return True
    unscaled = rope_frequencies(head_dim, base=base)
    same = np.array_equal(rope_frequencies(head_dim, base=base, scaling=config, seq_len=n), unscaled)
    return bool(same and config["rope_type"] != "yarn")  # YaRN's temperature applies at every length


def final_hidden_states(model, ids):
    """The output of the model's final RMSNorm, (batch, n, dim): its forward without the logits.

    At 16,384 tokens the logits would take 16,384 x 49,152 x 4 bytes = 3.2 GB; these take 38 MB.
    """
    if not isinstance(model, Llama):
        raise TypeError(f"model must be a pe_lib.llama.Llama, got {type(model).__name__}")
    with torch.no_grad():
        return model.hidden_states(ids)


def token_losses(model, ids, *, chunk=256):
    """Cross-entropy (nats) of each next token, (n - 1,) float32, for ids (1, n); logits `chunk` rows at a time
    (256 rows of SmolLM2's logits and their log-softmax: 100 MB, where 16,384 rows at once would be 6.4 GB)."""
    chunk = _validate.positive_int("chunk", chunk)
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] < 2:
        shape = tuple(ids.shape) if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise ValueError(f"ids must be a tensor of shape (1, n) with n >= 2, got {shape}")
    hidden = final_hidden_states(model, ids)[0, :-1]
    targets = ids[0, 1:]
    out = torch.empty(len(targets), dtype=torch.float32)
    for start in range(0, len(targets), chunk):
        rows = slice(start, start + chunk)
        with torch.no_grad():
            out[rows] = F.cross_entropy(model.logits(hidden[rows]), targets[rows], reduction="none")
    return out.numpy()


def bucket_means(losses, bucket):
    """Mean loss per block of `bucket` positions. losses[p] predicts token p + 1; block k holds the predictions
    of tokens k*bucket + 1 .. (k+1)*bucket (the last block one fewer: token 0 is never predicted)."""
    losses = np.asarray(losses, dtype=np.float64)
    padded = np.concatenate([[np.nan], losses])  # index p = the loss of predicting token p
    padded = np.concatenate([padded, np.full(-len(padded) % bucket, np.nan)])
    return np.nanmean(padded.reshape(-1, bucket), axis=1)


def window_summary(bucket_loss, window, bucket):
    """Mean loss over the first `window` tokens and over their last quarter, from the bucket means."""
    means = np.asarray(bucket_loss[: window // bucket])
    counts = np.full(len(means), float(bucket))
    counts[0] -= 1  # token 0 has no prediction
    quarter = len(means) * 3 // 4
    return {
        "mean": float(np.average(means, weights=counts)),
        "last_quarter": float(np.average(means[quarter:], weights=counts[quarter:])),
    }


PASSKEY_INTRO = (
    "There is an important info hidden inside a lot of irrelevant text. Find it and memorize them. "
    "I will quiz you about the important information there."
)
PASSKEY_FILLER = " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
PASSKEY_QUESTION = " What is the pass key? The pass key is"


def passkey_prompt(tokenizer, n_tokens, depth, key):
    """(prompt ids, answer ids): the passkey test of Mohtashami and Jaggi (2023), at most n_tokens in all.

    The filler sentences repeat; the line "The pass key is KEY. Remember it. KEY is the pass key." comes
    after a fraction `depth` (0..1) of the repeats; the prompt ends with the question, the answer is " KEY".
    """
    n_tokens = _validate.positive_int("n_tokens", n_tokens)
    depth = _validate.fraction("depth", depth)
    key = _validate.int_in_range("key", key, 10_000, 99_999)
    needle = f" The pass key is {key}. Remember it. {key} is the pass key."
    fixed = len(tokenizer.encode(PASSKEY_INTRO + needle + PASSKEY_QUESTION + f" {key}"))
    per_filler = len(tokenizer.encode(PASSKEY_FILLER * 10)) / 10
    repeats = int((n_tokens - fixed) // per_filler)
    if repeats < 1:
        raise ValueError(
            f"n_tokens must leave room for the filler text: more than {fixed + per_filler:.0f}, got {n_tokens}"
        )
    before = round(repeats * depth)
    text = PASSKEY_INTRO + PASSKEY_FILLER * before + needle + PASSKEY_FILLER * (repeats - before) + PASSKEY_QUESTION
    return tokenizer.encode(text), tokenizer.encode(f" {key}")


def greedy_answer(model, prompt, answer):
    """(whether greedy decoding after `prompt` produces `answer`, the tokens it predicts), in one forward.

    The forward runs over prompt + answer[:-1]. Greedy decoding produces `answer` exactly when each of its
    tokens is the most likely one after the prompt and the answer's earlier tokens, which is what is read.
    """
    ids = torch.tensor([list(prompt) + list(answer[:-1])])
    hidden = final_hidden_states(model, ids)[0, len(prompt) - 1 :]
    with torch.no_grad():
        predicted = model.logits(hidden).argmax(-1).tolist()
    return predicted == list(answer), predicted


def passkey_trials(setup):
    """[(depth, key)] of the passkey test: depths 0.05 .. 0.95 evenly, keys drawn from setup.seed."""
    rng = np.random.default_rng(setup.seed)
    keys = rng.integers(10_000, 100_000, size=setup.passkey_trials).tolist()
    depths = [(i + 0.5) / setup.passkey_trials for i in range(setup.passkey_trials)]
    return list(zip(depths, keys, strict=True))


def _timed(function, *args):
    start = time.perf_counter()
    return function(*args), time.perf_counter() - start


def perplexity_run(model, ids, method, setup):
    """{"method", "bucket_loss"}: the bucket means of one forward over ids with `method`'s frequencies."""
    with model.use_positions(scaling=scaling(method, setup.factor, setup.original)):
        losses = token_losses(model, ids)
    return {"method": method, "bucket_loss": bucket_means(losses, setup.bucket).tolist()}


def passkey_run(model, tokenizer, method, length, depth, key, setup):
    prompt, answer = passkey_prompt(tokenizer, length, depth, key)
    with model.use_positions(scaling=scaling(method, setup.factor, setup.original)):
        correct, predicted = greedy_answer(model, prompt, answer)
    return {
        "method": method,
        "length": length,
        "depth": depth,
        "key": key,
        "prompt_tokens": len(prompt),
        "correct": correct,
        "answer": tokenizer.decode(predicted),
    }


def plan(setup):
    """The runs of the sweep, in order: [(kind, arguments)]."""
    runs = [("perplexity", (method,)) for method in METHODS if method != "dynamic" or setup.length > setup.original]
    trials = passkey_trials(setup)
    runs += [("passkey", ("none", length, d, k)) for length in setup.passkey_lengths for d, k in trials]
    if setup.passkey_long:
        length, depths = setup.passkey_long
        keys = dict(trials)
        runs += [
            ("passkey", (m, length, d, keys.get(d, trials[0][1])))
            for m in METHODS
            if not (m == "dynamic" and length <= setup.original)
            for d in depths
        ]
    return runs


def _run_key(kind, args):
    return f"{kind}-" + "-".join(str(a) for a in args)


def run_sweep(model, tokenizer, text, setup=None, *, progress=None, cache=None):
    """The sweep's results dict. cache: a folder where each run is kept as it ends and read back on a rerun."""
    setup = setup or Setup()
    ids = torch.tensor([tokenizer.encode(text)[: setup.length]])
    if ids.shape[1] < setup.length:
        raise ValueError(f"text must have at least {setup.length} tokens, got {ids.shape[1]}")
    done = {}
    for index, (kind, args) in enumerate(plan(setup), 1):
        path = None if cache is None else Path(cache) / f"{_run_key(kind, args)}.json"
        if path is not None and path.exists():
            run, seconds = json.loads(path.read_text()), 0.0
        elif kind == "perplexity":
            run, seconds = _timed(perplexity_run, model, ids, *args, setup)
        else:
            run, seconds = _timed(passkey_run, model, tokenizer, *args, setup)
        run = sweeps.rounded(run, 4)
        if path is not None and not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(run))
        done[kind, args] = run
        if progress is not None:
            progress(index, len(plan(setup)), kind, args, run, seconds)
    return summarize(done, setup, text)


def summarize(done, setup, text):
    """The results file's dict from the runs: bucket losses, window summaries per method, passkey trials."""
    bucket_loss = {args[0]: run["bucket_loss"] for (kind, args), run in done.items() if kind == "perplexity"}
    windows = {}
    for method in METHODS:
        windows[method] = {}
        for window in setup.windows:
            if method in bucket_loss and (window == setup.length or method != "dynamic"):
                source = method  # a prefix of the forward over setup.length tokens (causal)
            elif same_as_unscaled(method, window, factor=setup.factor, original=setup.original):
                source = "none"  # the same frequencies as RoPE unchanged at this length
            else:
                continue
            windows[method][str(window)] = {"from": source, **window_summary(bucket_loss[source], window, setup.bucket)}
    passkey = [run for (kind, _), run in done.items() if kind == "passkey"]
    return sweeps.rounded(
        {
            "model": "SmolLM2-135M-Instruct",
            "setup": {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(setup).items()},
            "scaling": {m: scaling(m, setup.factor, setup.original) for m in METHODS},
            "text": {"notebooks": list(PROSE_NOTEBOOKS), "sha256": text_sha256(text), "tokens": setup.length},
            "bucket_loss": bucket_loss,
            "windows": windows,
            "passkey": passkey,
        },
        4,
    )


def print_results(results):
    """The window table (mean loss over the window / over its last quarter) and the passkey accuracies."""
    windows = results["setup"]["windows"]
    print(f"{'method':<14}" + "".join(f"{w:>8,} tokens: mean, last 1/4" for w in windows))
    for method in METHODS:
        cells = results["windows"][method]
        row = "".join(
            f"{cells[str(w)]['mean']:>23.3f}, {cells[str(w)]['last_quarter']:.3f}" if str(w) in cells else f"{'-':>30}"
            for w in windows
        )
        print(f"{METHOD_LABELS[method]:<14}{row}")
    for (method, length), trials in passkey_groups(results).items():
        right = sum(t["correct"] for t in trials)
        print(f"passkey, {METHOD_LABELS[method]}, {length:,} tokens: {right}/{len(trials)} retrieved")


def passkey_groups(results):
    """{(method, length): [trials]} of the passkey runs, in the sweep's order."""
    groups = {}
    for trial in results["passkey"]:
        groups.setdefault((trial["method"], trial["length"]), []).append(trial)
    return groups


def differences(committed, recomputed, tolerance=CHECK_TOLERANCE):
    """What a recomputed subset says that the committed results do not: a list of messages (empty: agrees).

    recomputed: {"bucket_loss": {method: [bucket means of a shorter forward]}, "passkey": [trials]}.
    """
    problems = []
    for method, values in recomputed.get("bucket_loss", {}).items():
        window = len(values) * committed["setup"]["bucket"]
        cell = committed["windows"].get(method, {}).get(str(window))
        if cell is None:
            problems.append(f"{method}: the committed results have no window of {window} tokens")
            continue
        source = cell["from"]
        expected = committed["bucket_loss"][source][: len(values)]
        gap = np.max(np.abs(np.subtract(values, expected)))
        if not gap <= tolerance:
            problems.append(f"{method}: bucket losses differ by up to {gap:.4f} nats (tolerance {tolerance})")
    keyed = {(t["method"], t["length"], t["depth"], t["key"]): t for t in committed["passkey"]}
    for trial in recomputed.get("passkey", []):
        old = keyed.get((trial["method"], trial["length"], trial["depth"], trial["key"]))
        if old is None or (old["correct"], old["answer"]) != (trial["correct"], trial["answer"]):
            problems.append(f"passkey {trial}: committed {old}")
    return problems


def check(model, tokenizer, committed, text, *, length=4096, passkeys=2, progress=print):
    """Recompute the first `length` tokens for every method and `passkeys` passkey trials; return differences."""
    problems = []
    if text_sha256(text) != committed["text"]["sha256"]:
        problems.append("the text is not the one the committed sweep measured (sha256 differs)")
    setup = Setup(**{k: tuple(v) if isinstance(v, list) else v for k, v in committed["setup"].items()})
    ids = torch.tensor([tokenizer.encode(text)[:length]])
    recomputed = {"bucket_loss": {}, "passkey": []}
    for method in METHODS:
        run, seconds = _timed(perplexity_run, model, ids, method, setup)
        recomputed["bucket_loss"][method] = run["bucket_loss"]
        progress(
            f"{METHOD_LABELS[method]} at {length:,} tokens: mean {np.mean(run['bucket_loss']):.3f} ({seconds:.0f} s)"
        )
    for trial in committed["passkey"][:passkeys]:
        args = (trial["method"], trial["length"], trial["depth"], trial["key"])
        recomputed["passkey"].append(sweeps.rounded(passkey_run(model, tokenizer, *args, setup), 4))
    return problems + differences(committed, recomputed)


def main(argv=None):
    from . import smollm

    parser = argparse.ArgumentParser(description="Context extension on SmolLM2-135M: perplexity and passkey.")
    parser.add_argument("--out", type=Path, default=DATA_DIR / RESULTS_FILE, help="results file (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="recompute 4,096 tokens and 2 passkeys, compare")
    parser.add_argument("--cache", type=Path, help="keep each run here as it ends; a rerun reads them back")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default: %(default)s)")
    args = parser.parse_args(argv)
    torch.set_num_threads(_validate.positive_int("threads", args.threads))
    model, tokenizer = smollm.load()
    start = time.perf_counter()
    if args.check:
        committed = json.loads(args.out.read_text(encoding="utf-8"))
        problems = check(model, tokenizer, committed, load_prose())
        for problem in problems:
            print("DIFFERS:", problem)
        print(f"check took {time.perf_counter() - start:.0f} s: " + ("agrees" if not problems else "DIFFERS"))
        return 1 if problems else 0
    text = assemble_prose()
    (args.out.parent / PROSE_FILE).write_text(text, encoding="utf-8")

    def report(index, total, kind, run_args, run, seconds):
        what = (
            f"mean {np.nanmean(run['bucket_loss']):.3f}"
            if kind == "perplexity"
            else f"{run['answer']!r} {run['correct']}"
        )
        print(f"[{index:2d}/{total}] {kind} {run_args}: {what}   ({seconds:.0f} s)", flush=True)

    results = run_sweep(model, tokenizer, text, progress=report, cache=args.cache)
    print(f"sweep took {time.perf_counter() - start:.0f} s")
    print_results(results)
    args.out.write_text(sweeps.results_json(results), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
