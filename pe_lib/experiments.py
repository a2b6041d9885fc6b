"""Learned versus fixed positions, measured: a synthetic order-sensitive task and a tiny trainer.

The task (shift-by-k): read a random token sequence x of length n and output, at every
position i >= k, the token that stood k places earlier, x[i - k]. A model that cannot tell
positions apart sees only *which* tokens occur, so it can do no better than guessing a
common one; a model with positions can solve it exactly. ("reverse", output x[n - 1 - i],
is also available.)

The model: pe_lib.TransformerEmbedding(positional="none" | "learned" | "sinusoidal") ->
torch.nn.TransformerEncoder (2 pre-norm layers, d_model=64, 4 heads, no causal mask) -> a linear
read-out per position. Adam with a linear warm-up (10% of the steps) and linear decay, gradients
clipped at norm 1. Trained on sequences of `train_len`, evaluated on fresh sequences of the same
length and on sequences of `test_len` > train_len. The learned table gets `test_len` rows so
that the longer sequences run at all: rows past train_len are never trained (they keep their
random initialisation), which is exactly the situation "longer than trained" means.

Everything is deterministic for a given seed on a given machine: training runs with a fixed
number of threads, deterministic algorithms, its own RNG streams, and restores the caller's
torch RNG state and settings afterwards.

    python -m pe_lib.experiments            # the full sweep -> pe_lib/data/learned_vs_fixed.json
    python -m pe_lib.experiments --check    # rerun it and compare with the committed file
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
from torch import nn

from . import _validate
from .data import load_json
from .modules import TransformerEmbedding

VARIANTS = ("none", "learned", "sinusoidal")
TASKS = ("shift", "reverse")
IGNORE = -100  # target value for positions without a target (skipped by the loss and the accuracy)
EVAL_SEED = 2_147_483_647  # one fixed test set for every model, independent of the training seed
RESULTS_FILE = "learned_vs_fixed.json"
RESULTS_PATH = Path(__file__).resolve().parent / "data" / RESULTS_FILE
SWEEP_SEEDS = (0, 1, 2, 3, 4)


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines one experiment except the positional variant and the seed."""

    task: str = "shift"
    shift: int = 3  # k of the shift task
    vocab_size: int = 16
    train_len: int = 16
    test_len: int = 32
    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    dim_feedforward: int = 128
    steps: int = 1000
    batch_size: int = 64
    lr: float = 1e-3
    eval_size: int = 512  # sequences per evaluation set
    threads: int = 1  # torch threads while training: fixed, so results do not depend on the machine's load

    def __post_init__(self):
        _validate.choice("task", self.task, TASKS)
        for name in ("shift", "vocab_size", "train_len", "test_len", "d_model", "num_heads", "num_layers"):
            _validate.positive_int(name, getattr(self, name))
        for name in ("dim_feedforward", "steps", "batch_size", "eval_size", "threads"):
            _validate.positive_int(name, getattr(self, name))
        if self.test_len <= self.train_len:
            raise ValueError(f"test_len must be longer than train_len={self.train_len}, got {self.test_len}")
        if self.task == "shift" and self.shift >= self.train_len:
            raise ValueError(f"shift must be smaller than train_len={self.train_len}, got {self.shift}")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model={self.d_model} must be divisible by num_heads={self.num_heads}")
        if not _validate.finite_real("lr", self.lr) > 0:
            raise ValueError(f"lr must be positive, got {self.lr}")


def _config(config):
    """The default Config for None; a clear error for anything that is not a Config."""
    if config is None:
        return Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a pe_lib.experiments.Config (or None), got {type(config).__name__}")
    return config


# --- the task -------------------------------------------------------------------------------


def task_targets(tokens, task="shift", *, shift=3):
    """Targets for `tokens` (batch, seq) int64: same shape, IGNORE where a position has no target.

    shift:   target[:, i] = tokens[:, i - shift] for i >= shift (the first `shift` positions: IGNORE)
    reverse: target[:, i] = tokens[:, seq - 1 - i]
    """
    _validate.choice("task", task, TASKS)
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2:
        raise ValueError(f"tokens must be a 2-D torch tensor (batch, seq), got {getattr(tokens, 'shape', tokens)!r}")
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer token ids, got dtype {tokens.dtype}")
    if task == "reverse":
        return tokens.flip(1)
    shift = _validate.positive_int("shift", shift)
    if shift >= tokens.shape[1]:
        raise ValueError(
            f"shift must be smaller than the sequence length {tokens.shape[1]} (else no position has a target), "
            f"got shift={shift}"
        )
    targets = torch.full_like(tokens, IGNORE)
    targets[:, shift:] = tokens[:, : tokens.shape[1] - shift]
    return targets


def make_batch(config, batch_size, seq_len, generator):
    """Uniform random tokens (batch_size, seq_len) int64 in [0, vocab_size) and their targets (same shape)."""
    tokens = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=generator)
    return tokens, task_targets(tokens, config.task, shift=config.shift)


def order_blind_guess(tokens):
    """What a reader that sees *which* tokens occur but not *where* would guess at each position.

    tokens: (batch, seq) int64 -> (batch, seq) int64. At position i it guesses the most frequent
    token among the other positions (it knows its own token, so that one copy is removed; ties
    go to the smallest id). On the shift task this is about as good as any order-blind model can do.
    """
    vocab = int(tokens.max()) + 1 if tokens.numel() else 1
    counts = torch.zeros(tokens.shape[0], vocab, dtype=torch.long).scatter_add_(1, tokens, torch.ones_like(tokens))
    others = counts.unsqueeze(1) - nn.functional.one_hot(tokens, vocab)  # (batch, seq, vocab)
    return others.argmax(-1)


# --- the model ------------------------------------------------------------------------------


class TinyEncoder(nn.Module):
    """TransformerEmbedding -> nn.TransformerEncoder -> Linear: token ids (batch, seq) -> logits (batch, seq, vocab)."""

    def __init__(self, vocab_size, positional, *, max_len, d_model=64, num_heads=4, num_layers=2, dim_feedforward=128):
        super().__init__()
        self.positional = _validate.choice("positional", positional, VARIANTS)
        self.embedding = TransformerEmbedding(vocab_size, d_model, positional=positional, max_len=max_len, dropout=0.0)
        layer = nn.TransformerEncoderLayer(
            d_model, num_heads, dim_feedforward, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, num_layers, norm=nn.LayerNorm(d_model), enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        return self.head(self.encoder(self.embedding(tokens)))


def build_model(positional, config):
    """A fresh TinyEncoder for `config`; a learned table gets config.test_len rows (see the module docstring)."""
    return TinyEncoder(
        config.vocab_size,
        positional,
        max_len=config.test_len,
        d_model=config.d_model,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        dim_feedforward=config.dim_feedforward,
    )


def position_table(model):
    """The positions a TinyEncoder adds, as a NumPy array (rows, d_model); None for positional="none"."""
    position = model.embedding.position
    if model.positional == "learned":
        return position.embedding.weight.detach().numpy().copy()
    if model.positional == "sinusoidal":
        return position.pe.detach().numpy().copy()
    return None


@contextlib.contextmanager
def _reproducible(threads):
    """Fixed thread count, deterministic algorithms and a private torch RNG; the caller's state comes back."""
    old_threads = torch.get_num_threads()
    old_deterministic = torch.are_deterministic_algorithms_enabled()
    old_warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_deterministic, warn_only=old_warn_only)


@dataclasses.dataclass
class Trained:
    """A trained model with what it took: losses (steps,) float array, wall-clock seconds."""

    model: TinyEncoder
    positional: str
    seed: int
    config: Config
    losses: np.ndarray
    seconds: float


def train(positional, config=None, *, seed=0, progress=None):
    """Train a TinyEncoder with `positional` positions on config.task; return a Trained.

    seed fixes the initial weights and the training batches. progress, if given, is called as
    progress(step, steps, loss) every 10 steps and at the end (e.g. to move a progress bar).
    """
    config = _config(config)
    positional = _validate.choice("positional", positional, VARIANTS)
    seed = _validate.count("seed", seed)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function progress(step, steps, loss) or None, got {progress!r}")
    # Training needs gradients even when the caller is inside torch.no_grad() or inference_mode().
    with _reproducible(config.threads), torch.inference_mode(False), torch.enable_grad():
        torch.manual_seed(seed)
        model = build_model(positional, config)
        data = torch.Generator().manual_seed(1_000_003 + seed)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        warmup = max(1, config.steps // 10)  # linear warm-up, then linear decay to 0: stable and reproducible
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: min((step + 1) / warmup, (config.steps - step) / (config.steps - warmup + 1))
        )
        losses = np.empty(config.steps)
        start = time.perf_counter()
        model.train()
        for step in range(config.steps):
            tokens, targets = make_batch(config, config.batch_size, config.train_len, data)
            logits = model(tokens)
            loss = nn.functional.cross_entropy(logits.reshape(-1, config.vocab_size), targets.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            losses[step] = loss.item()
            if progress is not None and ((step + 1) % 10 == 0 or step + 1 == config.steps):
                progress(step + 1, config.steps, losses[step])
        seconds = time.perf_counter() - start
        model.eval()
    return Trained(model, positional, seed, config, losses, seconds)


def _accuracy(hits, mask):
    return float(hits[mask].float().mean()) if bool(mask.any()) else float("nan")


def evaluate(trained):
    """Accuracies of a Trained model on fixed test sets (the same for every model).

    Returns a dict of floats in [0, 1]:
        in_distribution: target positions of sequences of train_len (as in training)
        longer_seen:     sequences of test_len, positions < train_len (positions it was trained on)
        longer_unseen:   sequences of test_len, positions >= train_len (never seen in training)
    and per_position: a list of test_len accuracies on the long sequences (None where no target).
    """
    config = trained.config
    with _reproducible(config.threads), torch.no_grad():
        data = torch.Generator().manual_seed(EVAL_SEED)
        short, short_targets = make_batch(config, config.eval_size, config.train_len, data)
        long, long_targets = make_batch(config, config.eval_size, config.test_len, data)
        short_hits = trained.model(short).argmax(-1) == short_targets
        long_hits = trained.model(long).argmax(-1) == long_targets
    has_target = long_targets != IGNORE
    seen = torch.zeros_like(has_target)
    seen[:, : config.train_len] = True
    per_position = [_accuracy(long_hits[:, i], has_target[:, i]) for i in range(config.test_len)]
    return {
        "in_distribution": _accuracy(short_hits, short_targets != IGNORE),
        "longer_seen": _accuracy(long_hits, has_target & seen),
        "longer_unseen": _accuracy(long_hits, has_target & ~seen),
        "per_position": [None if np.isnan(a) else a for a in per_position],
    }


def baselines(config=None):
    """Reference levels on the same test sets: chance (1 / vocab_size) and the order-blind guess.

    Returns {"chance": float, "order_blind": {"in_distribution": float, "longer": float}}.
    """
    config = _config(config)
    data = torch.Generator().manual_seed(EVAL_SEED)
    levels = {}
    for name, seq_len in (("in_distribution", config.train_len), ("longer", config.test_len)):
        tokens, targets = make_batch(config, config.eval_size, seq_len, data)
        levels[name] = _accuracy(order_blind_guess(tokens) == targets, targets != IGNORE)
    return {"chance": 1.0 / config.vocab_size, "order_blind": levels}


# --- the sweep ------------------------------------------------------------------------------

METRICS = ("in_distribution", "longer_seen", "longer_unseen")


def _round(value, digits=6):
    if isinstance(value, float):
        return round(value, digits)
    if isinstance(value, dict):
        return {key: _round(item, digits) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_round(item, digits) for item in value]
    return value


def summarize(runs):
    """Per variant and metric: mean, std (sample, ddof=1; 0 for one run), min, max over the runs' seeds."""
    summary = {}
    for variant in dict.fromkeys(run["positional"] for run in runs):
        rows = [run for run in runs if run["positional"] == variant]
        summary[variant] = {}
        for metric in METRICS:
            values = np.array([run[metric] for run in rows])
            std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
            summary[variant][metric] = {
                "mean": float(values.mean()),
                "std": std,
                "min": float(values.min()),
                "max": float(values.max()),
            }
        per_position = np.array([[np.nan if a is None else a for a in run["per_position"]] for run in rows])
        mean = per_position.mean(axis=0)
        summary[variant]["per_position_mean"] = [None if np.isnan(a) else float(a) for a in mean]
    return summary


def run_sweep(config=None, *, seeds=SWEEP_SEEDS, variants=VARIANTS, progress=None):
    """Train and evaluate every variant with every seed; return a JSON-ready dict (floats rounded to 6 digits).

    progress, if given, is called as progress(done, total, run) after each model, where run is
    that model's result dict with its training "seconds" (seconds are not stored in the result:
    they would make the file differ from run to run).
    """
    config = _config(config)
    seeds = [_validate.count("seed", s) for s in seeds]
    variants = [_validate.choice("variant", v, VARIANTS) for v in variants]
    runs = []
    total = len(seeds) * len(variants)
    for variant in variants:
        for seed in seeds:
            trained = train(variant, config, seed=seed)
            run = {"positional": variant, "seed": seed, **evaluate(trained)}
            run["final_loss"] = float(trained.losses[-20:].mean())
            runs.append(_round(run))
            if progress is not None:
                progress(len(runs), total, {**run, "seconds": trained.seconds})
    return {
        "description": "Shift-by-k task, tiny Transformer encoder: accuracy with no / learned / sinusoidal positions",
        "command": "python -m pe_lib.experiments",
        "torch_version": torch.__version__.split("+")[0],
        "config": dataclasses.asdict(config),
        "seeds": seeds,
        "baselines": _round(baselines(config)),
        "summary": _round(summarize(runs)),
        "runs": runs,
    }


def results_json(results):
    """The results dict as the exact text written to the results file (sorted keys, 1 space indent)."""
    return json.dumps(results, indent=1, sort_keys=True) + "\n"


def load_results():
    """The committed sweep results (pe_lib/data/learned_vs_fixed.json) as a dict; see run_sweep."""
    return load_json(RESULTS_FILE)


def _print_table(results):
    print(f"{'variant':<11} " + " ".join(f"{m:>22}" for m in METRICS))
    for variant, metrics in results["summary"].items():
        cells = [f"{metrics[m]['mean']:.3f} +- {metrics[m]['std']:.3f}" for m in METRICS]
        print(f"{variant:<11} " + " ".join(f"{c:>22}" for c in cells))
    base = results["baselines"]
    print(
        f"chance {base['chance']:.3f}; order-blind guess {base['order_blind']['in_distribution']:.3f} "
        f"(train length), {base['order_blind']['longer']:.3f} (test length)"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run the learned-versus-fixed sweep and write its results file.")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SWEEP_SEEDS), help="training seeds")
    parser.add_argument("--out", type=Path, default=RESULTS_PATH, help="results file (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="compare with the file at --out instead of writing it")
    args = parser.parse_args(argv)

    def report(done, total, run):
        print(
            f"[{done:2d}/{total}] {run['positional']:<10} seed {run['seed']}: in-distribution "
            f"{run['in_distribution']:.3f}, longer (seen positions) {run['longer_seen']:.3f}, "
            f"longer (new positions) {run['longer_unseen']:.3f}   ({run['seconds']:.1f} s)",
            flush=True,
        )

    start = time.perf_counter()
    results = run_sweep(seeds=args.seeds, progress=report)
    print(f"sweep took {time.perf_counter() - start:.0f} s")
    _print_table(results)
    text = results_json(results)
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print(f"{'identical to' if same else 'DIFFERS from'} {args.out}")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
