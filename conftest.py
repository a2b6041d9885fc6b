"""nbval's options for the notebooks, and the kernels they run in.

`python -m pytest` runs every notebook under nbval as before (as `--nbval --nbval-current-env
--nbval-sanitize-with tests/nbval_sanitize.cfg` would). Set here, they leave `-p no:nbval` free to
turn nbval off: in addopts they were always on the command line, and pytest stopped at an option
no plugin knew. Options given on the command line win (`--nbval-lax`, another sanitize file).

The kernels run as another machine's would (`other_machine_environment`): torch's portable kernels
instead of AVX2/AVX-512 ones (ATEN_CPU_CAPABILITY), MKL's reproducible code path (MKL_CBWR), NumPy
without its SIMD dispatch targets (NPY_DISABLE_CPU_FEATURES), one thread. nbval compares printed text
exactly: a float32 residue (2.4e-07 here, 1.2e-07 there) passes on the machine that ran the notebook
and fails on the next one. Each notebook runs once, in these kernels, so a residue in a committed
output fails here, before it lands (until 2026-11 a second, native nbval pass ran too: it caught
nothing this one misses, and cost a fifth of the suite). PE_NBVAL_NATIVE=1 runs the notebooks in this
machine's own kernels instead.
"""

import os
from pathlib import Path

SANITIZE = Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"


def _numpy_dispatch_targets_here():
    """NumPy's optional SIMD targets that this CPU has (e.g. X86_V3, AVX512_SKX): the ones to switch off."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return [feature for feature in __cpu_dispatch__ if __cpu_features__.get(feature)]


def other_machine_environment(base=None):
    """`base` (default os.environ) with the kernels another machine would pick, and one thread."""
    env = dict(os.environ if base is None else base)
    env.update(
        ATEN_CPU_CAPABILITY="default",
        MKL_CBWR="COMPATIBLE",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        NPY_DISABLE_CPU_FEATURES=" ".join(_numpy_dispatch_targets_here()),
    )
    return env


def _portable_kernels():
    """Start nbval's kernels in `other_machine_environment()` (nbval has no option for a kernel's environment)."""
    from nbval import kernel

    start = kernel.start_new_kernel
    if getattr(start, "portable", False):
        return

    def start_portable(startup_timeout=60, kernel_name="python", **kwargs):
        kwargs.setdefault("env", other_machine_environment())
        return start(startup_timeout, kernel_name, **kwargs)

    start_portable.portable = True
    kernel.start_new_kernel = start_portable


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return  # -p no:nbval: the notebooks are not collected
    option = config.option
    if not option.nbval_lax:
        option.nbval = True
    if not option.nbval_kernel_name:
        option.nbval_current_env = True  # the kernel runs in this environment (its pe_lib, its pins)
    if option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE)
    if os.environ.get("PE_NBVAL_NATIVE", "").strip().lower() in ("", "0", "false", "no"):
        _portable_kernels()
