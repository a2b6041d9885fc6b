"""Shared by every test: off-screen figures, closed after each test; one Chromium for the browser tests."""

import os
import shutil
import sys

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no window, the renderer the notebooks' inline backend uses
# Nothing comes from a model hub: transformers (the reference) and the notebooks' kernels, which inherit this
# environment, fail at once instead of trying the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# pytest-xdist runs one worker per core: torch's default of a thread per core in each worker puts twice as many
# threads as cores to work, and OpenMP's threads then wait for each other (measured on 2 cores: two workers running
# the SmolLM2 tests took about 3 times as long with 2 threads each as with 1). One thread per worker, for its child
# processes too; a run without xdist keeps torch's default.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if "torch" in sys.modules:  # already imported: the variable is read when torch loads
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import scheduling  # noqa: E402

_RECORDER = scheduling.recorder()


def pytest_collection_modifyitems(items):
    """The longest groups of tests first (tests/scheduling.py): both xdist workers finish together."""
    scheduling.longest_first(items, scheduling.recorded())


def pytest_runtest_logreport(report):
    if _RECORDER is not None:
        _RECORDER.add(report)


def pytest_sessionfinish(session):
    if _RECORDER is not None:
        _RECORDER.write()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def caller_threads():
    """The caller's torch thread count set to 2 for the test (given back after): not the 1 thread every training
    uses, so that a test can see a training give the caller's count back (an xdist worker's own count is 1)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _no_browser(reason):
    """Skip on a developer machine without a browser; fail in CI, where the browser is required."""
    if _ci():
        pytest.fail(f"CI is set and the browser test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium per test process (Debian's package, never a playwright download).

    Used by the browser tests (test_browser.py, test_book.py): without Chromium they skip on a
    laptop and fail in CI (the environment variable CI set).
    """
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        _no_browser("chromium is not on PATH (bash .ci/install_chromium.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        _no_browser(f"playwright is not installed: {error}")
    manager = sync_playwright().start()
    try:
        try:
            chromium = manager.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as error:  # noqa: BLE001 - any launch failure means "no browser"
            _no_browser(f"chromium at {executable} did not start: {error}")
        yield chromium
        chromium.close()
    finally:
        manager.stop()
