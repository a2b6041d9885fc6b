"""Shared by every test: figures render off-screen and are closed after each test."""

import matplotlib

matplotlib.use("Agg")  # before anything imports pyplot: no window, the renderer the notebooks' inline backend uses

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")
