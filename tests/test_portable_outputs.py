"""The committed notebook outputs hold on other CPUs: nbval again, under other kernels and one thread.

nbval compares printed text exactly. A printed float32 residue (2.4e-07 here, 1.2e-07 there)
passes on the machine that ran the notebook and fails on the next one. This test re-runs every
notebook with the kernels a different machine would pick: torch's portable kernels instead of
AVX2/AVX-512 ones (ATEN_CPU_CAPABILITY), MKL's reproducible code path (MKL_CBWR), NumPy without
its SIMD dispatch targets (NPY_DISABLE_CPU_FEATURES) and a single thread, so that a residue in
a committed output fails here, before it lands.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _numpy_dispatch_targets_here():
    """NumPy's optional SIMD targets that this CPU has (e.g. X86_V3, AVX512_SKX): the ones to switch off."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [feature for feature in __cpu_dispatch__ if __cpu_features__.get(feature)]


def other_machine_environment():
    env = dict(os.environ)
    env.update(
        ATEN_CPU_CAPABILITY="default",
        MKL_CBWR="COMPATIBLE",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NPY_DISABLE_CPU_FEATURES=" ".join(_numpy_dispatch_targets_here()),
    )
    return env


def test_the_other_machine_environment_really_changes_the_kernels():
    probe = (
        "import torch, numpy._core._multiarray_umath as m;"
        "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(),"
        " sorted(f for f in m.__cpu_dispatch__ if m.__cpu_features__.get(f)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=other_machine_environment(), capture_output=True, text=True, check=True
    ).stdout.split(maxsplit=2)
    assert out[0] == "DEFAULT" and out[1] == "1" and out[2].strip() == "[]"


@pytest.mark.slow
def test_committed_outputs_hold_under_other_kernels_and_one_thread():
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-q",
        "-n",
        "2",
        "--dist",
        "loadscope",
        "--nbval",
        "--nbval-current-env",
        "--nbval-sanitize-with",
        "tests/nbval_sanitize.cfg",
        "notebooks",
    ]
    run = subprocess.run(
        command, cwd=ROOT, env=other_machine_environment(), capture_output=True, text=True, timeout=1200
    )
    assert run.returncode == 0, f"nbval under other kernels failed:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
