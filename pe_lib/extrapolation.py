"""Length generalisation, measured: which position methods carry a relative rule past the trained length.

Two causal tasks whose rule is relative (it reads the same at every position):
    shift:     at position i >= k, output the token k places earlier, x[i - k];
    local_max: at position i >= w - 1, output the largest of the last w tokens, max(x[i-w+1..i]).

The model: pe_lib.decoder.TinyDecoder, a tiny causal decoder with one of seven ways to know
positions (none, learned, sinusoidal, RoPE at base 1e4 and 1e6, ALiBi, T5 buckets with two
maximum distances: VARIANTS).

Every model trains on sequences of train_len tokens from position 0, then is tested on sequences of
train_len (in distribution), 2 * train_len and 4 * train_len, scored on the positions past
train_len, and on a window of train_len tokens placed at unseen positions.

Context extension: a trained RoPE model is run at a longer length with its frequencies rescaled
(pe_lib.rope_frequencies' scaling: position interpolation, NTK-aware, YaRN, Llama 3.1), zero-shot
and after a few fine-tuning steps at that length.

    python -m pe_lib.extrapolation [--jobs 2]   # the sweep -> pe_lib/data/length_generalisation.json
    python -m pe_lib.extrapolation --check      # rerun it and compare with the committed file
"""

import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from . import _validate, sweeps
from .data import load_json
from .decoder import EXTENSIONS, ROPE_BASES, VARIANTS, TinyDecoder
from .experiments import IGNORE, masked_accuracy
from .rope_scaling import rope_frequencies

TASKS = ("shift", "local_max")
METRICS = ("in_distribution", "at_2x", "at_4x", "unseen_window")
FACTORS = (2, 4)  # context extension: run at 2x and 4x the trained length (the tests at_2x, at_4x)
EVAL_SEED = 2_147_483_647
SWEEP_SEEDS = (0, 1, 2, 3, 4)
RESULTS_FILE = "length_generalisation.json"
RESULTS_PATH = Path(__file__).resolve().parent / "data" / RESULTS_FILE


@dataclasses.dataclass(frozen=True)
class Config:
    """Everything that defines one run except the task, the position method and the seed."""

    shift: int = 3  # k of the shift task
    window: int = 3  # w of the local_max task
    vocab_size: int = 16
    train_len: int = 16
    d_model: int = 32
    num_heads: int = 4  # head size 8: four RoPE pairs; ALiBi slopes 1/4 .. 1/256
    num_layers: int = 2
    dim_feedforward: int = 64
    steps: int = 1000
    batch_size: int = 32
    lr: float = 3e-3
    eval_size: int = 256
    threads: int = 1
    t5_buckets: int = 16  # all for the past (causal), half exact: the size of one direction of T5's encoder
    t5_max_distance: int = 16  # = train_len: training reaches every bucket, as T5's 128 with 512-token inputs
    t5_far_max_distance: int = 32  # t5_far: buckets for distances 16..31 that training never shows
    finetune_steps: tuple = (40, 150)  # context extension: tested after this many steps at the longer length
    finetune_lr: float = 1e-3

    def __post_init__(self):
        for name in ("shift", "window", "vocab_size", "train_len", "d_model", "num_heads", "num_layers"):
            _validate.positive_int(name, getattr(self, name))
        for name in ("dim_feedforward", "steps", "batch_size", "eval_size", "threads", "t5_buckets"):
            _validate.positive_int(name, getattr(self, name))
        _validate.positive_int("t5_max_distance", self.t5_max_distance)
        _validate.positive_int("t5_far_max_distance", self.t5_far_max_distance)
        steps = [_validate.positive_int("finetune_steps", n) for n in self.finetune_steps]
        if steps != sorted(set(steps)):
            raise ValueError(f"finetune_steps must be increasing step counts, got {self.finetune_steps}")
        if max(self.shift, self.window) >= self.train_len:
            raise ValueError(
                f"shift and window must be smaller than train_len={self.train_len}, got {self.shift} and {self.window}"
            )
        if self.d_model % self.num_heads or (self.d_model // self.num_heads) % 4:
            raise ValueError(
                f"d_model={self.d_model} must split into num_heads={self.num_heads} heads of a size divisible by 4 "
                "(rotary positions turn pairs, NTK scaling needs two pairs)"
            )
        for name in ("lr", "finetune_lr"):
            if not _validate.finite_real(name, getattr(self, name)) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")

    @property
    def max_position(self):
        """Rows of the position tables: the longest test, 4 * train_len."""
        return 4 * self.train_len

    @property
    def unseen_start(self):
        """The unseen-window test: train_len tokens at positions 3 * train_len .. 4 * train_len - 1."""
        return 3 * self.train_len


def _config(config):
    if config is None:
        return Config()
    if not isinstance(config, Config):
        raise TypeError(f"config must be a pe_lib.extrapolation.Config (or None), got {type(config).__name__}")
    return config


# --- the tasks ------------------------------------------------------------------------------


def task_targets(tokens, task, config=None):
    """Targets for tokens (batch, seq) int64: same shape, IGNORE where the rule has no answer yet."""
    config = _config(config)
    task = _validate.choice("task", task, TASKS)
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 2 or tokens.is_floating_point():
        raise ValueError(
            f"tokens must be a 2-D integer torch tensor (batch, seq), got {getattr(tokens, 'shape', tokens)!r}"
        )
    targets = torch.full_like(tokens, IGNORE)
    if task == "shift":
        k = config.shift
        targets[:, k:] = tokens[:, :-k]
    else:
        w = config.window
        targets[:, w - 1 :] = tokens.unfold(1, w, 1).amax(-1)
    return targets


def make_batch(task, config, batch_size, seq_len, generator):
    tokens = torch.randint(0, config.vocab_size, (batch_size, seq_len), generator=generator)
    return tokens, task_targets(tokens, task, config)


# --- training and tests -----------------------------------------------------------------------


@dataclasses.dataclass
class Trained:
    model: TinyDecoder
    task: str
    positional: str
    seed: int
    config: Config
    losses: np.ndarray
    seconds: float


def _fit(model, task, config, *, steps, lr, seq_len, data, progress=None, warmup=True, after_step=None):
    """Adam with gradients clipped at 1; a warm-up and linear decay when warmup, else a constant rate.

    after_step, if given, is called as after_step(step) after every step (1-based).
    """
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    ramp = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, (lambda s: min((s + 1) / ramp, (steps - s) / (steps - ramp + 1))) if warmup else (lambda s: 1.0)
    )
    losses = np.empty(steps)
    model.train()
    for step in range(steps):
        tokens, targets = make_batch(task, config, config.batch_size, seq_len, data)
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, config.vocab_size), targets.reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses[step] = loss.item()
        if progress is not None and ((step + 1) % 10 == 0 or step + 1 == steps):
            progress(step + 1, steps, losses[step])
        if after_step is not None:
            after_step(step + 1)
    model.eval()
    return losses


def train(positional, task="shift", config=None, *, seed=0, progress=None):
    """Train a TinyDecoder on `task` at config.train_len from position 0; return a Trained.

    progress, if given, is called as progress(step, steps, loss) every 10 steps and at the end.
    """
    config = _config(config)
    positional = _validate.choice("positional", positional, VARIANTS)
    task = _validate.choice("task", task, TASKS)
    seed = _validate.count("seed", seed)
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a function progress(step, steps, loss) or None, got {progress!r}")
    with sweeps.reproducible(config.threads), torch.inference_mode(False), torch.enable_grad():
        torch.manual_seed(seed)
        model = TinyDecoder(positional, config)
        data = torch.Generator().manual_seed(1_000_003 + seed)
        start = time.perf_counter()
        losses = _fit(
            model,
            task,
            config,
            steps=config.steps,
            lr=config.lr,
            seq_len=config.train_len,
            data=data,
            progress=progress,
        )
        seconds = time.perf_counter() - start
    return Trained(model, task, positional, seed, config, losses, seconds)


def _test_sets(task, config):
    """The fixed test sets, the same for every model: {name: (tokens, targets, start, scored mask)}."""
    data = torch.Generator().manual_seed(EVAL_SEED + TASKS.index(task))
    sets = {}
    for name, seq_len, start in (
        ("in_distribution", config.train_len, 0),
        ("at_2x", 2 * config.train_len, 0),
        ("at_4x", 4 * config.train_len, 0),
        ("unseen_window", config.train_len, config.unseen_start),
    ):
        tokens, targets = make_batch(task, config, config.eval_size, seq_len, data)
        scored = targets != IGNORE
        if name.startswith("at_"):
            scored[:, : config.train_len] = False  # only the positions past the trained length
        sets[name] = (tokens, targets, start, scored)
    return sets


def evaluate(model, task, config, tests=METRICS):
    """Accuracies in [0, 1] on the test sets named in `tests` (default: all four, METRICS), and, when
    "at_4x" is among them, per_position: the accuracy at each position of the 4x sequences.

    Ask only for the tests you read: each one is a forward pass over its whole test set.
    """
    config = _config(config)
    if isinstance(tests, str) or not tests:
        raise ValueError(f"tests must be a non-empty sequence of names from {METRICS}, got {tests!r}")
    tests = [_validate.choice("tests", name, METRICS) for name in tests]
    with sweeps.reproducible(config.threads), torch.no_grad():
        results, per_position = {}, None
        for name, (tokens, targets, start, scored) in _test_sets(task, config).items():
            if name not in tests:
                continue
            hits = model(tokens, start).argmax(-1) == targets
            results[name] = masked_accuracy(hits, scored)
            if name == "at_4x":
                valid = targets != IGNORE
                per_position = [masked_accuracy(hits[:, i], valid[:, i]) for i in range(tokens.shape[1])]
    if per_position is not None:
        results["per_position"] = [None if np.isnan(a) else a for a in per_position]
    return results


def majority_baseline(task, config=None):
    """Accuracy of always giving the most common answer of the in-distribution test set (a floor to beat).

    For shift that is about chance, 1 / vocab_size; local_max favours large tokens (the largest id
    is the answer for about 1 - (15/16)**3 = 18% of the positions with 16 ids).
    """
    config = _config(config)
    _, targets, _, scored = _test_sets(_validate.choice("task", task, TASKS), config)["in_distribution"]
    answers = targets[scored]
    return float((answers == answers.mode().values).float().mean())


def pair0_lookalikes(config=None):
    """The distances no training sequence holds (train_len .. 4 * train_len - 1), split by how RoPE's fastest pair,
    pair 0, sees them from the shift task's target k places back.

    Returns (lookalikes, others), two ascending lists of ints: the distances d at which pair 0 (theta_0 = 1 for
    every base) is within a quarter turn of its angle at distance k, cos((d - k) theta_0) > 0, so that to pair 0 a
    key there leans towards the target; and the rest. With the defaults: 24 and 24.
    """
    config = _config(config)
    theta_0 = rope_frequencies(config.d_model // config.num_heads, base=ROPE_BASES["rope"])[0]
    distances = np.arange(config.train_len, config.max_position)
    alike = np.cos((distances - config.shift) * theta_0) > 0
    return distances[alike].tolist(), distances[~alike].tolist()


def extend_and_finetune(trained, method, factor, *, seed=0):
    """Accuracy past train_len at factor x train_len after rescaling RoPE by `method`: zero-shot, then after
    each count of config.finetune_steps steps of fine-tuning at that length (constant learning rate).

    Returns {"zero_shot": float, "after_40": float, ...} (one "after_N" per fine-tuning checkpoint).
    """
    config = trained.config
    method = _validate.choice("method", method, EXTENSIONS)
    factor = _validate.one_of("factor", factor, FACTORS)
    model = trained.model.extended(method, factor)
    test = "at_2x" if factor == 2 else "at_4x"
    scores = {"zero_shot": evaluate(model, trained.task, config, tests=[test])[test]}

    def checkpoint(step):
        if step in config.finetune_steps:
            model.eval()
            scores[f"after_{step}"] = evaluate(model, trained.task, config, tests=[test])[test]
            model.train()

    with sweeps.reproducible(config.threads), torch.inference_mode(False), torch.enable_grad():
        torch.manual_seed(seed)
        data = torch.Generator().manual_seed(2_000_003 + seed)
        _fit(
            model,
            trained.task,
            config,
            steps=config.finetune_steps[-1],
            lr=config.finetune_lr,
            seq_len=factor * config.train_len,
            data=data,
            warmup=False,
            after_step=checkpoint,
        )
    return scores


# --- the sweep ------------------------------------------------------------------------------


def summarize(runs):
    """summary[task][variant][metric] and summary[task]["extension"][method][factor][when]: mean, std (ddof=1),
    min, max over the seeds; summary[task][variant]["per_position_mean"] at 4x the trained length."""
    summary = {}
    for task, variant in dict.fromkeys((run["task"], run["positional"]) for run in runs):
        rows = [run for run in runs if run["task"] == task and run["positional"] == variant]
        cell = summary.setdefault(task, {}).setdefault(variant, {})
        for metric in (*METRICS, "final_loss"):
            cell[metric] = sweeps.stats([run[metric] for run in rows])
        cell["per_position_mean"] = sweeps.mean_per_position(rows)
        extended = [run["extension"] for run in rows if "extension" in run]
        if extended:
            summary[task]["extension"] = {
                method: {
                    factor: {
                        when: sweeps.stats([e[method][factor][when] for e in extended])
                        for when in extended[0][method][factor]
                    }
                    for factor in extended[0][method]
                }
                for method in EXTENSIONS
            }
    return summary


def one_run(config, task, variant, seed, extend=True):
    """Train and evaluate one model (and, for RoPE at base 10^4 with extend, its context extensions):
    its result dict, floats rounded to 6 digits, and its training seconds."""
    trained = train(variant, task, config, seed=seed)
    run = {"task": task, "positional": variant, "seed": seed, **evaluate(trained.model, task, config)}
    run["final_loss"] = float(trained.losses[-20:].mean())
    if extend and variant == "rope":
        run["extension"] = {
            method: {str(f): extend_and_finetune(trained, method, f, seed=seed) for f in FACTORS}
            for method in EXTENSIONS
        }
    return sweeps.rounded(run), trained.seconds


def run_sweep(config=None, *, seeds=SWEEP_SEEDS, tasks=TASKS, variants=VARIANTS, progress=None, jobs=1):
    """Every task x variant x seed (+ RoPE's extensions); a JSON-ready dict, the same for any jobs.

    progress, if given, is called as progress(done, total, run) after each model (run has "seconds").
    """
    config = _config(config)
    seeds = [_validate.count("seed", s) for s in seeds]
    tasks = [_validate.choice("task", t, TASKS) for t in tasks]
    variants = [_validate.choice("variant", v, VARIANTS) for v in variants]
    plan = [(config, task, variant, seed) for task in tasks for variant in variants for seed in seeds]
    runs = sweeps.run_plan(one_run, plan, jobs=jobs, progress=progress)
    return {
        "description": "Causal tiny decoder trained at train_len on relative-rule tasks, tested at 2x and 4x the "
        "length and on unseen positions, for seven position methods; RoPE's context extensions at 2x and 4x",
        "command": "python -m pe_lib.extrapolation",
        "torch_version": torch.__version__.split("+")[0],
        "config": json.loads(json.dumps(dataclasses.asdict(config))),  # tuples as JSON lists
        "seeds": seeds,
        "chance": sweeps.rounded(1.0 / config.vocab_size),
        "summary": sweeps.rounded(summarize(runs)),
        "runs": runs,
    }


def load_results():
    """The committed sweep (pe_lib/data/length_generalisation.json) as a dict; see run_sweep."""
    return load_json(RESULTS_FILE)


def checkpoints(by_when):
    """The keys of one extension cell in reading order: "zero_shot", then "after_N" by N (JSON sorts them)."""
    return sorted(by_when, key=lambda when: -1 if when == "zero_shot" else int(when.split("_")[1]))


def print_table(results):
    """The sweep's means +- standard deviations, one row per task and variant."""
    print(f"{'task':<10}{'variant':<11}" + "".join(f"{m:>18}" for m in METRICS))
    for task in (t for t in TASKS if t in results["summary"]):
        cells = results["summary"][task]
        for variant in VARIANTS:
            if variant in cells:
                m = cells[variant]
                print(
                    f"{task:<10}{variant:<11}" + "".join(f"{m[k]['mean']:>11.3f} +- {m[k]['std']:.2f}" for k in METRICS)
                )


def print_extension_table(results):
    """RoPE's context extensions: mean accuracy past L at 2x and 4x, zero-shot and after fine-tuning steps."""
    for task in (t for t in TASKS if t in results["summary"]):
        extension = results["summary"][task].get("extension")
        if extension is None:
            continue
        whens = checkpoints(next(iter(extension["none"].values())))
        print(f"{task}: RoPE (base 1e4) past L, rescaled; columns: " + ", ".join(whens))
        for method in EXTENSIONS:
            row = "".join(
                f"   {f}x:" + "".join(f"{c[when]['mean']:7.3f}" for when in whens)
                for f, c in sorted(extension[method].items())
            )
            print(f"  {method:<10}{row}")


def main(argv=None):
    return sweeps.command_line(
        argv,
        description="Run the length-generalisation sweep and write its results file.",
        run_sweep=run_sweep,
        seeds=SWEEP_SEEDS,
        results_path=RESULTS_PATH,
        label=lambda run: f"{run['task']:<9} {run['positional']:<10}",
        metrics=METRICS,
        print_results=lambda results: (print_table(results), print_extension_table(results)),
    )


if __name__ == "__main__":
    sys.exit(main())
