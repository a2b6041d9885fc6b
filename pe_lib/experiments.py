"""Learned versus fixed positions, measured: a synthetic order-sensitive task and a tiny trainer.

The task (shift-by-k): read a random token sequence x of length n and output, at every
position i >= k, the token that stood k places earlier, x[i - k]. A model that cannot tell
positions apart sees only *which* tokens occur, so it can do no better than guessing a
common one; a model with positions can solve it exactly. ("reverse", output x[n - 1 - i],
is also available.)

The model: token embedding * sqrt(d) (pe_lib.TransformerEmbedding without positions), plus the
rows of a position table ("learned" or "sinusoidal"), or no table ("none"), or rotary positions
("rope": queries and keys rotated in every layer, pe_lib.RotaryEmbedding, the positive control:
its scores depend on offsets only) -> 2 pre-norm encoder layers (d_model=64, 4 heads, no causal
mask) -> a linear read-out per position. Adam with a linear warm-up (10% of the steps) and linear
decay, gradients clipped at norm 1.

Two training regimes. "from_zero": every training sequence holds positions 0..train_len-1, so
absolute positions alone can solve the task. "random_offset": each batch is a window of
train_len positions starting anywhere in 0..offset_range, so only a rule that holds at every
position solves it. Three tests, on fixed test sets: in distribution (train_len from 0); a longer
sequence (test_len from 0: its first train_len positions and the rest); and a window of
train_len positions starting at unseen_start, positions no training batch ever held. Tables have
max_position rows; rows never reached in training keep their random initialisation.

Everything is deterministic for a given seed on a given machine: training runs with a fixed
number of threads, deterministic algorithms, its own RNG streams, and restores the caller's
torch RNG state and settings afterwards.

    python -m pe_lib.experiments [--jobs 2]   # the full sweep -> pe_lib/data/learned_vs_fixed.json
    python -m pe_lib.experiments --check      # rerun it and compare with the committed file
"""

import dataclasses
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import _validate, sweeps
from .data import load_json
from .encodings import sinusoidal_encoding
from .modules import PreNormLayer, TransformerEmbedding
from .relative import RotaryEmbedding

VARIANTS = ("none", "learned", "sinusoidal", "rope")
REGIMES = ("from_zero", "random_offset")
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
    offset_range: int = 16  # random_offset regime: windows start at 0..offset_range (positions < 32 by default)
    unseen_start: int = 48  # the third test: a window at positions no training batch held
    max_position: int = 64  # rows of the position tables; every test stays below it

    def __post_init__(self):
        _validate.choice("task", self.task, TASKS)
        for name in ("shift", "vocab_size", "train_len", "test_len", "d_model", "num_heads", "num_layers"):
            _validate.positive_int(name, getattr(self, name))
        for name in ("dim_feedforward", "steps", "batch_size", "eval_size", "threads", "max_position"):
            _validate.positive_int(name, getattr(self, name))
        for name in ("offset_range", "unseen_start"):
            _validate.count(name, getattr(self, name))
        if self.test_len <= self.train_len:
            raise ValueError(f"test_len must be longer than train_len={self.train_len}, got {self.test_len}")
        if self.task == "shift" and self.shift >= self.train_len:
            raise ValueError(f"shift must be smaller than train_len={self.train_len}, got {self.shift}")
        if self.d_model % self.num_heads or (self.d_model // self.num_heads) % 2:
            raise ValueError(
                f"d_model={self.d_model} must be divisible by num_heads={self.num_heads} into an even head size "
                "(rotary positions turn pairs of features)"
            )
        trained_until = self.train_len + self.offset_range  # positions < this occur in random_offset training
        if self.unseen_start < trained_until:
            raise ValueError(
                f"unseen_start must be >= train_len + offset_range = {trained_until} (positions used in training), "
                f"got {self.unseen_start}"
            )
        if self.max_position < max(self.test_len, self.unseen_start + self.train_len):
            raise ValueError(
                f"max_position must cover the tests: >= max(test_len, unseen_start + train_len) = "
                f"{max(self.test_len, self.unseen_start + self.train_len)}, got {self.max_position}"
            )
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
    """Tokens (+ positions) -> encoder layers -> Linear: token ids (batch, seq) -> logits (batch, seq, vocab).

    forward(tokens, start=0): the tokens stand at positions start..start+seq-1.
    """

    def __init__(self, vocab_size, positional, *, max_len, d_model=64, num_heads=4, num_layers=2, dim_feedforward=128):
        super().__init__()
        self.positional = _validate.choice("positional", positional, VARIANTS)
        self.max_len = _validate.positive_int("max_len", max_len)
        self.embedding = TransformerEmbedding(vocab_size, d_model, positional="none", dropout=0.0)
        if positional == "learned":
            self.position = nn.Embedding(max_len, d_model)
            nn.init.normal_(self.position.weight, std=0.02)  # BERT's initialisation
        elif positional == "sinusoidal":
            table = torch.from_numpy(sinusoidal_encoding(max_len, d_model, dtype=np.float32))
            self.register_buffer("position_rows", table, persistent=False)
        head_dim = d_model // num_heads
        self.layers = nn.ModuleList(
            PreNormLayer(
                d_model,
                num_heads,
                dim_feedforward,
                rotary=RotaryEmbedding(head_dim, layout="half") if positional == "rope" else None,
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens, start=0):
        start = _validate.count("start", start)
        if start + tokens.shape[1] > self.max_len:
            raise ValueError(
                f"positions {start}..{start + tokens.shape[1] - 1} do not fit max_len={self.max_len} of this model"
            )
        positions = torch.arange(start, start + tokens.shape[1])
        x = self.embedding(tokens)
        if self.positional == "learned":
            x = x + self.position(positions)
        elif self.positional == "sinusoidal":
            x = x + self.position_rows[positions]
        for layer in self.layers:
            x = layer(x, positions)
        return self.head(self.norm(x))


def build_model(positional, config):
    """A fresh TinyEncoder for `config`, with position tables of config.max_position rows."""
    return TinyEncoder(
        config.vocab_size,
        positional,
        max_len=config.max_position,
        d_model=config.d_model,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        dim_feedforward=config.dim_feedforward,
    )


def position_table(model):
    """The rows a TinyEncoder adds at each position, as a NumPy array (max_len, d_model); None for none/rope."""
    if model.positional == "learned":
        return model.position.weight.detach().numpy().copy()
    if model.positional == "sinusoidal":
        return model.position_rows.numpy().copy()
    return None


@dataclasses.dataclass
class Trained:
    """A trained model with what it took: losses (steps,) float array, wall-clock seconds."""

    model: TinyEncoder
    positional: str
    regime: str
    seed: int
    config: Config
    losses: np.ndarray
    seconds: float


def train(positional, config=None, *, regime="from_zero", seed=0, progress=None):
    """Train a TinyEncoder with `positional` positions on config.task; return a Trained.

    regime "from_zero": every batch holds positions 0..train_len-1; "random_offset": each batch is
    a window starting at a random position in 0..config.offset_range. seed fixes the initial
    weights and the training batches. progress, if given, is called as progress(step, steps, loss)
    every 10 steps and at the end (e.g. to move a progress bar).
    """
    config = _config(config)
    positional = _validate.choice("positional", positional, VARIANTS)
    regime = _validate.choice("regime", regime, REGIMES)
    seed = _validate.count("seed", seed)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function progress(step, steps, loss) or None, got {progress!r}")
    # Training needs gradients even when the caller is inside torch.no_grad() or inference_mode().
    with sweeps.reproducible(config.threads), torch.inference_mode(False), torch.enable_grad():
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
            offset = 0 if regime == "from_zero" else int(torch.randint(0, config.offset_range + 1, (), generator=data))
            logits = model(tokens, offset)
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
    return Trained(model, positional, regime, seed, config, losses, seconds)


def masked_accuracy(hits, mask):
    return float(hits[mask].float().mean()) if bool(mask.any()) else float("nan")


def evaluate(trained):
    """Accuracies of a Trained model on fixed test sets (the same for every model).

    Returns a dict of floats in [0, 1]:
        in_distribution: sequences of train_len at positions 0.. (as in from_zero training)
        longer_first:    sequences of test_len from position 0: their first train_len positions
        longer_rest:     the same sequences, positions train_len..test_len-1
        unseen_window:   sequences of train_len at positions unseen_start.. (never in any training batch)
    and per_position: a list of test_len accuracies on the long sequences (None where no target).
    """
    config = trained.config
    with sweeps.reproducible(config.threads), torch.no_grad():
        data = torch.Generator().manual_seed(EVAL_SEED)
        short, short_targets = make_batch(config, config.eval_size, config.train_len, data)
        long, long_targets = make_batch(config, config.eval_size, config.test_len, data)
        far, far_targets = make_batch(config, config.eval_size, config.train_len, data)
        short_hits = trained.model(short).argmax(-1) == short_targets
        long_hits = trained.model(long).argmax(-1) == long_targets
        far_hits = trained.model(far, config.unseen_start).argmax(-1) == far_targets
    has_target = long_targets != IGNORE
    first = torch.zeros_like(has_target)
    first[:, : config.train_len] = True
    per_position = [masked_accuracy(long_hits[:, i], has_target[:, i]) for i in range(config.test_len)]
    return {
        "in_distribution": masked_accuracy(short_hits, short_targets != IGNORE),
        "longer_first": masked_accuracy(long_hits, has_target & first),
        "longer_rest": masked_accuracy(long_hits, has_target & ~first),
        "unseen_window": masked_accuracy(far_hits, far_targets != IGNORE),
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
        levels[name] = masked_accuracy(order_blind_guess(tokens) == targets, targets != IGNORE)
    return {"chance": 1.0 / config.vocab_size, "order_blind": levels}


# --- the sweep ------------------------------------------------------------------------------

METRICS = ("in_distribution", "longer_first", "longer_rest", "unseen_window")


def summarize(runs):
    """Per regime, variant and metric: mean, std (sample, ddof=1; 0 for one run), min, max over the seeds.

    Returns summary[regime][variant][metric] and summary[regime][variant]["per_position_mean"].
    """
    summary = {}
    for regime, variant in dict.fromkeys((run["regime"], run["positional"]) for run in runs):
        rows = [run for run in runs if run["positional"] == variant and run["regime"] == regime]
        cell = summary.setdefault(regime, {}).setdefault(variant, {})
        for metric in METRICS:
            cell[metric] = sweeps.stats([run[metric] for run in rows])
        cell["per_position_mean"] = sweeps.mean_per_position(rows)
    return summary


def _one_run(config, regime, variant, seed):
    """Train and evaluate one model; its result dict (rounded) and its training seconds."""
    trained = train(variant, config, regime=regime, seed=seed)
    run = {"positional": variant, "regime": regime, "seed": seed, **evaluate(trained)}
    run["early_loss"] = float(trained.losses[: len(trained.losses) // 3].mean())  # how long it sat on the plateau
    run["final_loss"] = float(trained.losses[-20:].mean())
    return sweeps.rounded(run), trained.seconds


def run_sweep(config=None, *, seeds=SWEEP_SEEDS, variants=VARIANTS, regimes=REGIMES, progress=None, jobs=1):
    """Train and evaluate every variant in every regime with every seed; return a JSON-ready dict
    (floats rounded to 6 digits). jobs > 1 trains that many models at once in separate processes;
    every model trains on one thread with its own seeds, so the result is the same for any jobs.

    progress, if given, is called as progress(done, total, run) after each model, where run is
    that model's result dict with its training "seconds" (seconds are not stored in the result:
    they would make the file differ from run to run).
    """
    config = _config(config)
    seeds = [_validate.count("seed", s) for s in seeds]
    variants = [_validate.choice("variant", v, VARIANTS) for v in variants]
    regimes = [_validate.choice("regime", r, REGIMES) for r in regimes]
    plan = [(config, regime, variant, seed) for regime in regimes for variant in variants for seed in seeds]
    runs = sweeps.run_plan(_one_run, plan, jobs=jobs, progress=progress)
    return {
        "description": "Shift-by-k task, tiny Transformer encoder: accuracy with no / learned / sinusoidal / "
        "rotary positions, trained from position 0 or on windows at random offsets",
        "command": "python -m pe_lib.experiments",
        "torch_version": torch.__version__.split("+")[0],
        "config": dataclasses.asdict(config),
        "seeds": seeds,
        "regimes": regimes,
        "baselines": sweeps.rounded(baselines(config)),
        "summary": sweeps.rounded(summarize(runs)),
        "runs": runs,
    }


def load_results():
    """The committed sweep results (pe_lib/data/learned_vs_fixed.json) as a dict; see run_sweep."""
    return load_json(RESULTS_FILE)


def _print_table(results):
    print(f"{'regime':<14}{'variant':<11} " + " ".join(f"{m:>18}" for m in METRICS))
    for regime, variants in results["summary"].items():
        for variant, metrics in variants.items():
            cells = [f"{metrics[m]['mean']:.3f} +- {metrics[m]['std']:.3f}" for m in METRICS]
            print(f"{regime:<14}{variant:<11} " + " ".join(f"{c:>18}" for c in cells))
    base = results["baselines"]
    print(
        f"chance {base['chance']:.3f}; order-blind guess {base['order_blind']['in_distribution']:.3f} "
        f"(train length), {base['order_blind']['longer']:.3f} (test length)"
    )


def main(argv=None):
    return sweeps.command_line(
        argv,
        description="Run the learned-versus-fixed sweep and write its results file.",
        run_sweep=run_sweep,
        seeds=SWEEP_SEEDS,
        results_path=RESULTS_PATH,
        label=lambda run: f"{run['regime']:<13} {run['positional']:<10}",
        metrics=METRICS,
        print_results=_print_table,
    )


if __name__ == "__main__":
    sys.exit(main())
