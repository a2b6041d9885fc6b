"""What a class costs: each notebook's kernel for one student, and N students running one notebook at once.

    python benchmarks/bench_classroom.py [--notebooks 01 10 ...] [--classes 1 4 8] [--at-once 01 05 10]
        [--out benchmarks/results/classroom_sizing.json] [--write-teaching | --render]

Per notebook (default: all), one student: the notebook run top to bottom in a fresh kernel, as
bench_notebooks.py does: wall time, the kernel's CPU seconds and its peak resident memory (VmHWM).
Then, for the notebooks of --at-once, --classes students at once: N kernels started together, each
running the whole notebook; the time until the last one finishes, and the peak of their summed
resident memory (sampled every 0.2 s: the kernels' peaks need not coincide). A student's JupyterLab
server is measured once too (a `jupyter lab` process, idle, after its first page load), since every
student has one besides their kernel.

The results go to a JSON file with the machine, the load average before and after, and the date;
--write-teaching renders the sizing table of docs/teaching.md from it (between its
`<!-- sizing -->` markers), keeping what was measured apart from what is extrapolated.
tests/test_classroom.py checks that the table in teaching.md is the one the JSON file gives.
Run it on a quiet machine: N kernels on 2 cores measure the machine, not the course, if anything
else runs. --kernel-threads (default 1) sets OMP_NUM_THREADS and MKL_NUM_THREADS for every kernel,
as classroom/ sets them for each student: torch otherwise starts one thread per core of the whole
machine in every kernel, and N students' threads fight over the cores (measured 2026-11-28, notebook
10, 4 students on 2 cores: 426 s and 827 CPU s with torch's default threads, 3.3 times the CPU of
one student alone).
"""

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import bench_notebooks  # noqa: E402
import classroom_sizing  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
DEFAULT_OUT = HERE / "results" / "classroom_sizing.json"
SAMPLE_S = 0.2


def _notebook_path(number):
    found = sorted(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    if not found:
        raise SystemExit(f"no notebook numbered {number!r} in {NOTEBOOKS}")
    return found[0]


def _rss_bytes(pid):
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"^VmRSS:\s+(\d+)\s+kB", status, re.MULTILINE)
    return int(match[1]) * 1024 if match else 0


def _children(pids):
    """The processes whose parent is one of `pids` (the kernels the workers started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        if parent in pids:
            found.append(int(entry.name))
    return found


def _one_student(path, results):
    notebook = nbformat.read(path, as_version=4)
    seconds, peak, cpu = bench_notebooks.execute(notebook, path.parent)
    results.put({"seconds": seconds, "peak_mib": (peak or 0) / 2**20, "cpu_seconds": cpu})


def at_once(path, students):
    """`students` kernels running notebook `path` together: wall time to the last, peak summed RSS, per-kernel rows."""
    results = multiprocessing.Queue()
    workers = [multiprocessing.Process(target=_one_student, args=(path, results)) for _ in range(students)]
    peak_total = 0
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    worker_pids = {worker.pid for worker in workers}
    while any(worker.is_alive() for worker in workers):
        kernels = _children(worker_pids)
        peak_total = max(peak_total, sum(_rss_bytes(pid) for pid in kernels))
        time.sleep(SAMPLE_S)
    seconds = time.perf_counter() - start
    rows = [results.get(timeout=10) for _ in workers]
    for worker in workers:
        worker.join()
    if any(worker.exitcode for worker in workers):
        raise RuntimeError(f"a kernel running {path.name} failed with {students} at once")
    return {
        "notebook": path.name,
        "students": students,
        "seconds_to_last": seconds,
        "peak_total_mib": peak_total / 2**20,
        "cpu_seconds_total": sum(row["cpu_seconds"] or 0 for row in rows),
        "slowest_kernel_seconds": max(row["seconds"] for row in rows),
    }


def lab_server_mib():
    """Peak resident memory of one idle JupyterLab server (what each student has besides kernels)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    token = secrets.token_hex(8)
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True", f"--ServerApp.root_dir={ROOT}",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/lab?token={token}", timeout=10).read()
                break
            except OSError:
                time.sleep(0.5)
        time.sleep(1)
        return bench_notebooks._peak_rss_bytes(process.pid) / 2**20
    finally:
        process.terminate()
        process.wait(30)


def machine():
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")),
        platform.processor(),
    )  # fmt: skip
    memory_kb = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text())[1])
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kb / 2**20, 1),
        "python": sys.version.split()[0],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--notebooks", nargs="*", help="numbers of the notebooks measured for one student (default all)"
    )
    parser.add_argument("--at-once", nargs="*", default=["01", "05", "10"], help="notebooks run by N students at once")
    parser.add_argument("--classes", nargs="*", type=int, default=[1, 4, 8], help="how many students at once")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--kernel-threads", type=int, default=1, help="OMP/MKL threads of each kernel (0: torch's)")
    parser.add_argument("--write-teaching", action="store_true", help="then render docs/teaching.md's table")
    parser.add_argument("--render", action="store_true", help="only render docs/teaching.md's table from --out")
    args = parser.parse_args(argv)
    if args.render:
        classroom_sizing.write_teaching(json.loads(args.out.read_text()))
        print("docs/teaching.md: sizing table rendered from", args.out)
        return
    if args.kernel_threads < 0:
        parser.error(f"--kernel-threads must be 0 (torch's default) or more, got {args.kernel_threads}")
    if args.kernel_threads:  # inherited by every kernel nbclient starts from here
        os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.kernel_threads)
    load_before = os.getloadavg()
    paths = (
        [_notebook_path(n) for n in args.notebooks] if args.notebooks else sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    )
    single = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        seconds, peak, cpu = bench_notebooks.execute(notebook, path.parent)
        row = {"notebook": path.name, "seconds": seconds, "cpu_seconds": cpu, "peak_mib": (peak or 0) / 2**20}
        single.append(row)
        print(f"{path.name:<34} {seconds:6.1f} s  cpu {cpu:6.1f} s  peak {row['peak_mib']:6.0f} MiB", flush=True)
    together = []
    for number in args.at_once:
        for students in args.classes:
            row = at_once(_notebook_path(number), students)
            together.append(row)
            print(
                f"{row['notebook']:<34} x{students:<2} last done {row['seconds_to_last']:6.1f} s  "
                f"peak {row['peak_total_mib']:6.0f} MiB  cpu {row['cpu_seconds_total']:6.1f} s",
                flush=True,
            )
    server = lab_server_mib()
    print(f"an idle JupyterLab server: {server:.0f} MiB")
    result = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "kernel_threads": args.kernel_threads or None,
        "one_student": single,
        "at_once": together,
        "lab_server_mib": server,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    if args.write_teaching:
        classroom_sizing.write_teaching(result)
        print("docs/teaching.md: sizing table rendered")


if __name__ == "__main__":
    main()
