"""Runtime and memory budget of every notebook, and the latency of every explorer, in one run.

    python benchmarks/bench_notebooks.py [NOTEBOOK ...] [--updates 20] [--floor-repeats 1] [--lecture]
        [--pixel-ratio R] [--check]

Notebooks (default: notebooks/NN_*.ipynb) are executed top to bottom in a fresh kernel with
nbclient, as `scripts/run_notebooks.py` does, but nothing is written back. Per notebook:

- wall time: kernel start + every cell + kernel shutdown (what a learner's "Restart & Run All" costs);
- floor: the same for a fresh kernel that runs only the imports (and line magics) of the
  notebook's first code cell: the least any notebook of the course can cost. Measured right
  before each notebook (best of --floor-repeats runs), so both see the same machine load;
- ratio: wall time / floor; cpu ratio: the same for the kernels' CPU time (steadier when other
  jobs share the machine);
- peak memory: the kernel process's peak resident set size (see `_peak_rss_bytes`).

Targets: explainer notebooks (all but 05, 08, 10, 11) <= 3x the floor, notebooks 05, 08 and 11 (live
training) <= 30 s, notebook 10 (a real model) <= 45 s and 1.5 GiB, every other kernel under 1 GiB peak
(Binder kills a session at 2 GB, and the notebook server and the browser tab need their share).

Explorers: every explorer of the chapter modules (`pe_lib.explorer.explorer_classes()`), built
with its defaults (those of its notebook), then each slider is moved
one step at a time, `--updates` times; the median time of `explorer.update(...)` (draw + PNG
render: the callback a slider triggers in the kernel) must be under 100 ms. Frames are rendered
at Explorer.PIXEL_RATIO (2: sharp on HiDPI screens); --pixel-ratio 1 measures what 1x frames cost.

--check: exit with status 1 when a target is missed (by default the table is only printed).
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "python3"

EXPLAINER_RATIO = 3.0
TRAINING_NOTEBOOKS = ("05_", "08_", "11_")  # file-name prefixes of the notebooks that train models live
TRAINING_SECONDS = 30.0
PEAK_MIB = 1024.0
# Notebook 10 runs a real 135M-parameter model: its own budget (issue 22), under Binder's 2 GB.
REAL_MODEL_NOTEBOOK, REAL_MODEL_SECONDS, REAL_MODEL_PEAK_MIB = "10_", 45.0, 1536.0
EXPLORER_MS = 100.0


# --- notebooks ---------------------------------------------------------------------------


def first_cell_imports(notebook):
    """The import statements and line magics of a notebook's first code cell, as one cell's source."""
    code = next((cell.source for cell in notebook.cells if cell.cell_type == "code"), "")
    kept, depth, continued = [], 0, False
    for line in code.splitlines():
        stripped = line.strip()
        starts = line.startswith(("import ", "from ")) or line.startswith("%")
        if starts or depth > 0 or continued:
            kept.append(line)
            depth += stripped.count("(") - stripped.count(")")
            continued = stripped.endswith("\\")
    return "\n".join(kept)


def _peak_rss_bytes(pid):
    """Peak resident memory of process `pid`: VmHWM ("high water mark") from /proc/<pid>/status.

    The kernel is a separate process, so the benchmark's own getrusage() cannot see it; Linux
    keeps the high-water mark of each process's resident set, which includes everything torch
    and NumPy allocate. It only grows, so reading it after the last cell (while the kernel is
    still alive) gives the peak of the whole run. Returns None where /proc does not exist.
    """
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    match = re.search(r"^VmHWM:\s+(\d+)\s+kB", status, re.MULTILINE)
    return int(match[1]) * 1024 if match else None


def _cpu_seconds(pid):
    """User + system CPU seconds used so far by process `pid` (/proc/<pid>/stat), or None.

    On a busy machine wall time stretches while CPU time does not: printed next to the wall
    time, it tells a slow notebook from a crowded machine.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # fields from the 3rd on: utime is the 14th, stime the 15th
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def execute(notebook, cwd):
    """Run a notebook (a NotebookNode, changed in memory only) in a fresh kernel.

    Returns (wall seconds, peak resident bytes of the kernel or None, kernel CPU seconds or None).
    """
    client = NotebookClient(notebook, timeout=600, kernel_name=KERNEL, resources={"metadata": {"path": str(cwd)}})
    peak = {"bytes": None, "cpu": None}

    def record_peak(**_):
        # after every code cell, while the kernel is alive (nbclient shuts it down at the end)
        provisioner = getattr(client.km, "provisioner", None)
        pid = getattr(provisioner, "pid", None)
        if pid is not None:
            value = _peak_rss_bytes(pid)
            if value is not None:
                peak["bytes"] = max(value, peak["bytes"] or 0)
            peak["cpu"] = _cpu_seconds(pid)

    client.on_cell_executed = record_peak
    # The kernel's own stderr (ipykernel's start-up warnings) goes to a file, shown only on failure.
    with tempfile.TemporaryFile(mode="w+") as kernel_log:
        start = time.perf_counter()
        try:
            client.execute(stderr=kernel_log)
        except Exception:
            kernel_log.seek(0)
            print(f"kernel stderr:\n{kernel_log.read()[-3000:]}", file=sys.stderr)
            raise
        seconds = time.perf_counter() - start
    return seconds, peak["bytes"], peak["cpu"]


def _floor_notebook(imports):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(imports)]
    return notebook


def is_training(path):
    return Path(path).name.startswith(TRAINING_NOTEBOOKS)


def run_notebooks(paths, floor_repeats=1):
    """Measure every notebook; return one dict per notebook (see `format_notebooks` for the fields).

    Each notebook's floor is measured right before the notebook itself, so that both see the
    same machine (on a shared machine the load changes from minute to minute).
    """
    rows = []
    for path in map(Path, paths):
        notebook = nbformat.read(path, as_version=4)
        floor_runs = [
            execute(_floor_notebook(first_cell_imports(notebook)), path.parent) for _ in range(max(1, floor_repeats))
        ]
        floor_seconds, floor_peak, floor_cpu = min(floor_runs, key=lambda run: run[0])
        try:
            seconds, peak, cpu = execute(notebook, path.parent)
        except Exception as error:  # noqa: BLE001 - one broken notebook must not hide the others' numbers
            text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()  # no terminal colours
            first_line = (text.splitlines() or [""])[-1][:150]
            rows.append({"notebook": path.name, "error": f"{type(error).__name__}: {first_line}", "ok": False})
            continue
        ratio = seconds / floor_seconds
        peak_mib = None if peak is None else peak / 2**20
        peak_limit = PEAK_MIB
        if path.name.startswith(REAL_MODEL_NOTEBOOK):
            target, time_ok = f"<= {REAL_MODEL_SECONDS:.0f} s", seconds <= REAL_MODEL_SECONDS
            peak_limit = REAL_MODEL_PEAK_MIB
        elif is_training(path):
            target, time_ok = f"<= {TRAINING_SECONDS:.0f} s", seconds <= TRAINING_SECONDS
        else:
            target, time_ok = f"<= {EXPLAINER_RATIO:.0f}x floor", ratio <= EXPLAINER_RATIO
        memory_ok = peak_mib is None or peak_mib < peak_limit
        rows.append(
            {
                "notebook": path.name,
                "seconds": seconds,
                "cpu_seconds": cpu,
                "floor_seconds": floor_seconds,
                "ratio": ratio,
                "cpu_ratio": None if not (cpu and floor_cpu) else cpu / floor_cpu,
                "peak_mib": peak_mib,
                "floor_peak_mib": None if floor_peak is None else floor_peak / 2**20,
                "target": target,
                "ok": time_ok and memory_ok,
            }
        )
    return rows


def format_notebooks(rows):
    lines = [
        f"{'notebook':<34} {'wall s':>7} {'floor s':>8} {'ratio':>6} {'cpu s':>6} {'cpu ratio':>9} {'target':>14} "
        f"{'peak MiB':>9}  ok",
    ]
    for row in rows:
        if "error" in row:
            lines.append(f"{row['notebook']:<34} FAILED to run: {row['error']}")
            continue
        peak = "n/a" if row["peak_mib"] is None else f"{row['peak_mib']:.0f}"
        cpu = "n/a" if row["cpu_seconds"] is None else f"{row['cpu_seconds']:.1f}"
        cpu_ratio = "n/a" if row["cpu_ratio"] is None else f"{row['cpu_ratio']:.2f}"
        lines.append(
            f"{row['notebook']:<34} {row['seconds']:>7.1f} {row['floor_seconds']:>8.1f} {row['ratio']:>6.2f} "
            f"{cpu:>6} {cpu_ratio:>9} {row['target']:>14} {peak:>9}  {'yes' if row['ok'] else 'NO'}"
        )
    floor_peaks = sorted({round(row["floor_peak_mib"]) for row in rows if row.get("floor_peak_mib") is not None})
    lines.append(
        "ratio = wall / floor (a fresh kernel running only the first cell's imports, measured just before); "
        "cpu ratio = the same for the kernels' CPU time, steadier on a busy machine\n"
        f"targets: explainers <= {EXPLAINER_RATIO:.0f}x the floor (wall ratio), "
        f"notebooks {', '.join(p + '*' for p in TRAINING_NOTEBOOKS)} <= {TRAINING_SECONDS:.0f} s, "
        f"notebook {REAL_MODEL_NOTEBOOK}* <= {REAL_MODEL_SECONDS:.0f} s; every kernel < {PEAK_MIB:.0f} MiB peak RSS "
        f"({REAL_MODEL_PEAK_MIB:.0f} MiB for {REAL_MODEL_NOTEBOOK}*)"
        + (f" (the floor kernel alone: {', '.join(map(str, floor_peaks))} MiB)" if floor_peaks else "")
    )
    return "\n".join(lines)


# --- explorers ---------------------------------------------------------------------------


def time_updates(explorer, name, updates):
    """(median, max, median CPU) seconds of `explorer.update(name=next value)` over `updates` one-step moves."""
    from pe_lib.explorer import next_slider_value

    control, direction = explorer.controls[name], 1
    value, direction = next_slider_value(control, direction)
    explorer.update(**{name: value})  # warm-up: font cache, first render of the new state
    times, cpu_times = [], []
    for _ in range(updates):
        value, direction = next_slider_value(control, direction)
        start, cpu_start = time.perf_counter(), time.process_time()
        explorer.update(**{name: value})
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    return statistics.median(times), max(times), statistics.median(cpu_times)


def reference_update_ms(updates=20):
    """Median CPU ms to redraw and PNG-render the simplest figure (one line, the course's style).

    The explorers' floor on this machine: what any slider-driven figure costs before the
    explorer's own artists (text, images, several axes) are drawn.
    """
    import io

    import matplotlib.pyplot as plt
    import numpy as np

    figure, ax = plt.subplots()
    (line,) = ax.plot(np.arange(100), np.zeros(100))
    ax.set(title="reference", xlabel="x", ylabel="y", ylim=(-1, 1))
    times = []
    for step in range(updates + 1):
        start = time.process_time()
        line.set_ydata(np.sin(np.arange(100) / 10 + step))
        figure.savefig(io.BytesIO(), format="png")
        times.append(time.process_time() - start)
    plt.close(figure)
    return statistics.median(times[1:]) * 1e3  # the first render (font cache) is not counted


def explorer_latencies(updates=20, names=None, every_slider=True, lecture=False, pixel_ratio=None):
    """One dict per (explorer, slider): median and max update time, or why it could not be measured.

    lecture=True measures in the lecture style (larger figures and fonts), as on a projector.
    pixel_ratio: frame pixels per CSS pixel for every explorer (None: each explorer's PIXEL_RATIO).
    """
    import matplotlib

    matplotlib.use("Agg")  # what the inline backend renders with; no window
    import matplotlib.pyplot as plt

    from pe_lib import figures
    from pe_lib.explorer import Explorer, explorer_classes, slider_names

    if pixel_ratio is not None:
        saved = Explorer.PIXEL_RATIO
        Explorer.PIXEL_RATIO = pixel_ratio
        try:
            return explorer_latencies(updates, names, every_slider, lecture)
        finally:
            Explorer.PIXEL_RATIO = saved

    figures.use_style(lecture=lecture)  # the notebooks' first cell does this before building any explorer
    rows = [{"explorer": "(reference: one-line plot)", "slider": "-", "reference_cpu_ms": reference_update_ms(updates)}]
    for cls in explorer_classes():
        if names is not None and cls.__name__ not in names:
            continue
        try:
            explorer = cls()  # every explorer has the defaults its notebook uses
        except Exception as error:  # noqa: BLE001 - reported in the table, not fatal
            rows.append({"explorer": cls.__name__, "slider": "-", "error": f"{type(error).__name__}: {error}"})
            continue
        sliders = slider_names(explorer)
        if not sliders:
            rows.append({"explorer": cls.__name__, "slider": "-", "error": "no slider"})
        for name in sliders if every_slider else sliders[:1]:
            median, worst, cpu = time_updates(explorer, name, updates)
            rows.append(
                {
                    "explorer": cls.__name__,
                    "slider": name,
                    "median_ms": median * 1e3,
                    "max_ms": worst * 1e3,
                    "cpu_ms": cpu * 1e3,
                    "pixel_ratio": getattr(explorer, "PIXEL_RATIO", 1),
                }
            )
        plt.close(explorer.figure)
    return rows


def format_explorers(rows, updates):
    lines = [f"{'explorer':<28} {'slider':<14} {'median ms':>10} {'max ms':>8} {'cpu ms':>7} {'pixels':>6}  ok"]
    for row in rows:
        if "reference_cpu_ms" in row:
            cpu = row["reference_cpu_ms"]
            lines.append(f"{row['explorer']:<28} {row['slider']:<14} {'-':>10} {'-':>8} {cpu:>7.1f} {'1x':>6}")
        elif "error" in row:
            lines.append(
                f"{row['explorer']:<28} {row['slider']:<14} {'-':>10} {'-':>8} {'-':>7} {'-':>6}  NO ({row['error']})"
            )
        else:
            ok = "yes" if row["median_ms"] < EXPLORER_MS else "NO"
            lines.append(
                f"{row['explorer']:<28} {row['slider']:<14} {row['median_ms']:>10.1f} {row['max_ms']:>8.1f} "
                f"{row['cpu_ms']:>7.1f} {row['pixel_ratio']:>5g}x  {ok}"
            )
    lines.append(
        f"target: median update (draw + PNG render, wall clock) < {EXPLORER_MS:.0f} ms, over {updates} one-step "
        "moves; max is usually a move to a look not shown before (new axis ticks: one full render, then cached); "
        "cpu ms is the median CPU time of the same updates; pixels: frame pixels per CSS pixel (HiDPI); the "
        "reference row is the cost of redrawing the simplest figure on this machine"
    )
    return "\n".join(lines)


def explorers_ok(rows):
    measured = [row for row in rows if "reference_cpu_ms" not in row]
    return all("error" not in row and row["median_ms"] < EXPLORER_MS for row in measured)


# --- main --------------------------------------------------------------------------------


def _machine():
    """CPU count and load average: wall times on a crowded machine are not the notebooks' fault."""
    try:
        load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        load = "n/a"
    return f"machine: {os.cpu_count()} CPUs, load average (1, 5, 15 min): {load}"


def default_notebooks():
    return sorted(path for path in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/NN_*.ipynb")
    parser.add_argument("--updates", type=int, default=20, help="slider moves per explorer slider (default 20)")
    parser.add_argument("--floor-repeats", type=int, default=1, help="floor runs per notebook, best kept (default 1)")
    parser.add_argument("--skip-notebooks", action="store_true", help="measure the explorers only")
    parser.add_argument("--skip-explorers", action="store_true", help="measure the notebooks only")
    parser.add_argument("--lecture", action="store_true", help="measure the explorers in the lecture style")
    parser.add_argument(
        "--pixel-ratio", type=float, default=None, help="frame pixels per CSS pixel (default: each explorer's)"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    notebook_rows, explorer_rows = [], []
    print(_machine(), flush=True)
    if not args.skip_notebooks:
        paths = [path.resolve() for path in args.notebooks] or default_notebooks()
        print(f"notebooks: {len(paths)}, each in a fresh '{KERNEL}' kernel (nbclient), not written back", flush=True)
        notebook_rows = run_notebooks(paths, floor_repeats=args.floor_repeats)
        print(format_notebooks(notebook_rows), flush=True)
    if not args.skip_explorers:
        if notebook_rows:
            print()
        if args.lecture:
            print("explorers in the lecture style: figures.use_style(lecture=True)", flush=True)
        if args.pixel_ratio is not None:
            print(f"explorer frames at {args.pixel_ratio:g}x (Explorer.PIXEL_RATIO)", flush=True)
        explorer_rows = explorer_latencies(updates=args.updates, lecture=args.lecture, pixel_ratio=args.pixel_ratio)
        print(format_explorers(explorer_rows, args.updates), flush=True)
    ok = all(row["ok"] for row in notebook_rows) and explorers_ok(explorer_rows)
    print(_machine(), flush=True)
    print("all targets met" if ok else "SOME TARGETS MISSED")
    if args.check and not ok:
        raise SystemExit(1)
    return notebook_rows, explorer_rows


if __name__ == "__main__":
    main(sys.argv[1:])
