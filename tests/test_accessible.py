"""pe_lib.accessible: figures shown with alt text read from the figure itself."""

import base64
import html
import re

import matplotlib.pyplot as plt
import numpy as np
import pytest

from pe_lib import accessible, figures

IMG = re.compile(r'^<img src="data:image/png;base64,([^"]+)" alt="([^"]+)" width="(\d+)" height="(\d+)"')


def test_describe_reads_titles_axes_series_and_peaks():
    offsets = np.arange(-4, 5)
    fig = figures.offset_curves(offsets, {"learned": np.cos(offsets), "fixed": 1.0 / (1 + offsets**2)}, title="decay")
    text = accessible.describe(fig)
    assert text.startswith("Figure: 'decay', x: offset k = q - p from ")
    assert "fixed: 9 points, y from 0.059 (at x = -4) to 1 (at x = 0)" in text
    assert "learned: 9 points, y from -0.99 (at x = -3) to 1 (at x = 0)" in text
    assert "unlabelled line" not in text


def test_describe_images_bars_categories_and_panels():
    fig, (left, right) = plt.subplots(1, 2)
    image = left.imshow(np.arange(12.0).reshape(3, 4))
    fig.colorbar(image, ax=left, label="value")
    left.set(title="table", xlabel="dimension", ylabel="position")
    right.bar(["the", "cat"], [0.5, 2e-9], label="shift")
    right.set(title="bars", ylabel="distance")
    right.text(0, 1, "largest 0.5")
    fig.suptitle("two\nlines")
    text = accessible.describe(fig)
    assert text.startswith("Figure 'two lines' with 2 panels. (1) 'table', an image of 3x4 values from 0 to 11")
    assert "colour: value" in text and "(2) 'bars', x: unlabelled (the, cat)" in text
    assert "shift: 0.5, < 1e-06" in text  # a rounding residue reads as a bound, the same on every CPU
    assert "labels: largest 0.5" in text and "\n" not in text


def test_alt_text_puts_the_finding_first():
    fig = figures.heatmap(np.ones((2, 2)), title="ones")
    assert accessible.alt_text(fig, "every entry is 1") == "every entry is 1. " + accessible.describe(fig)
    assert accessible.alt_text(fig) == accessible.describe(fig)


@pytest.mark.parametrize("bad", [None, 3, b"x"])
def test_bad_finding(bad):
    fig = figures.heatmap(np.ones((2, 2)), title="ones")
    with pytest.raises(TypeError, match="finding must be a string"):
        accessible.alt_text(fig, bad)


def test_describe_wants_a_figure():
    with pytest.raises(TypeError, match="figure must be a matplotlib Figure, got ndarray"):
        accessible.describe(np.ones(3))


def test_img_html_escapes_the_alt_text_and_needs_one():
    out = accessible.img_html(b"\x89PNG", 'a "quoted" <b> & more', 10.4, 20)
    data, alt, width, height = IMG.match(out).groups()
    assert base64.b64decode(data) == b"\x89PNG" and html.unescape(alt) == 'a "quoted" <b> & more'
    assert (width, height) == ("10", "20")
    with pytest.raises(ValueError, match="alt must be a non-empty string"):
        accessible.img_html(b"", "", 1, 1)


def test_show_displays_an_img_with_alt_and_closes_the_figure(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig = figures.heatmap(np.eye(3), title="identity")
    accessible.show(fig, finding="the diagonal is 1")
    assert not plt.fignum_exists(fig.number)
    bundle = shown[0]._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    png, alt, width, height = IMG.match(bundle["text/html"]).groups()
    assert base64.b64decode(png).startswith(b"\x89PNG") and int(width) > 100 and int(height) > 50
    assert html.unescape(alt) == bundle["text/plain"] == "the diagonal is 1. " + accessible.describe(fig)


def test_describe_without_numbers_keeps_names_and_drops_values():
    steps = np.arange(1, 11)
    fig = figures.offset_curves(steps, {"learned": 1 / steps, "rope": 2 / steps}, title="loss", logx=True)
    text = accessible.describe(fig, numbers=False)
    assert text == "Figure: 'loss', x: offset k = q - p (log scale), y: PE(p) · PE(p+k), learned, rope."
    assert accessible.alt_text(fig, "both fall", numbers=False) == "both fall. " + text
