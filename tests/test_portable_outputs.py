"""The committed notebook outputs hold on other CPUs: nbval runs every notebook in another machine's kernels.

The root conftest.py starts nbval's kernels in `other_machine_environment()` (torch's portable kernels,
MKL's reproducible path, NumPy without its SIMD targets, one thread), so a printed float32 residue in a
committed output fails in the suite's one nbval pass. Here: that environment really changes the kernels,
and tests/notebooks/nbval_kernel_probe.ipynb, run by nbval with the other notebooks, prints what such a
kernel reports (its committed output), so nbval fails there if its kernels ever run natively again.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
PROBE = ROOT / "tests" / "notebooks" / "nbval_kernel_probe.ipynb"


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_other_machine_environment_really_changes_the_kernels():
    probe = (
        "import torch, numpy._core._multiarray_umath as m;"
        "print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads(),"
        " sorted(f for f in m.__cpu_dispatch__ if m.__cpu_features__.get(f)))"
    )
    env = _root_conftest().other_machine_environment()
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    capability, threads, simd = out.stdout.split(maxsplit=2)
    assert capability == "DEFAULT" and threads == "1" and simd.strip() == "[]"


def test_the_probe_notebook_expects_the_other_machines_kernels():
    (cell,) = [c for c in nbformat.read(PROBE, as_version=4).cells if c.cell_type == "code"]
    assert [o.text for o in cell.outputs] == ["DEFAULT 1 [] COMPATIBLE\n"]
