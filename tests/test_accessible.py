"""pe_lib.accessible: figures shown with their finding as a caption and a description, read from the figure, as alt.

The description's numbers are asserted against the data each figure was drawn from (issue 34): bar tops,
visible artists only, data ranges clipped to the view, colour bars made with `cax=`, points and lines,
every series, TeX in words, cut lists, one "(log scale)", title lines, constants.
"""

import base64
import html
import re
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pytest

from pe_lib import accessible, figures, findings
from pe_lib.accessible import number

IMG = re.compile(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)" width="(\d+)" height="(\d+)"')
FIGURE = re.compile(r'^<figure class="pe-figure" [^>]*>(<img [^>]+>)<figcaption[^>]*>(.*)</figcaption></figure>$')


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_describe_reads_titles_axes_series_and_peaks():
    offsets = np.arange(-4, 5)
    learned, fixed = np.cos(offsets), 1.0 / (1 + offsets**2)
    fig = figures.offset_curves(offsets, {"learned": learned, "fixed": fixed}, title="decay")
    text = accessible.describe(fig)
    # The axis says the data's range (-4 to 4), not the padded view limits (-4.4 to 4.4).
    assert text.startswith("Figure: 'decay', x: offset k = q - p from -4 to 4, y: ")
    assert f"fixed: a line over x = -4 to 4, y from {number(fixed.min())} (at x = -4) to 1 (at x = 0)" in text
    low = int(np.argmin(learned))
    assert f"learned: a line over x = -4 to 4, y from {number(learned[low])} (at x = {offsets[low]})" in text
    assert "a horizontal line at y = 0" in text  # the guide offset_curves draws
    assert "unlabelled" not in text


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
    assert text.startswith("Figure 'two; lines' with 2 panels. (1) 'table', an image of 3x4 values from 0 to 11")
    assert "colour: value" in text and "(2) 'bars', x: unlabelled (the, cat), y: distance from 0 to 0.5" in text
    assert "shift: 0.5, < 1e-06" in text  # a rounding residue reads as a bound, the same on every CPU
    assert "labels: largest 0.5" in text and "\n" not in text
    assert "Notes" not in text  # the suptitle is the head, not a note


def test_bars_are_read_by_their_tops_also_from_a_bottom():
    """09's wavelength bars: drawn from 4 up to 2π, 7.26 and 8.38 are 6.3, 7.3, 8.4, not their heights."""
    tops = np.array([2 * np.pi, 7.26, 8.38])
    fig, ax = plt.subplots()
    ax.bar(np.arange(3), tops - 4, bottom=4, label="wavelength")
    text = accessible.describe(fig)
    assert "wavelength (bars from y = 4): " + ", ".join(number(t) for t in tops) in text
    assert "6.3, 7.3, 8.4" in text and number(tops[0] - 4) not in text
    assert "y: unlabelled from 4 to 8.4" in text  # the data drawn, not the padded view limits
    fig, ax = plt.subplots()  # stacked: the second row's tops are the sums
    ax.bar([0, 1], [1.0, 2.0], label="first")
    ax.bar([0, 1], [0.5, 0.25], bottom=[1.0, 2.0], label="second")
    assert "first: 1, 2, second: 1.5, 2.2" in accessible.describe(fig)
    fig, ax = plt.subplots()
    ax.barh(["a", "b"], [3.0, 1.0], left=1.0, label="sideways")
    assert "sideways (bars from x = 1): 4, 2" in accessible.describe(fig)


def test_hidden_bars_are_not_zeros():
    """01's explorer keeps bars for the longest sentence and hides the rest: a 5-word sentence has 5 bars."""
    fig, ax = plt.subplots()
    bars = ax.bar(np.arange(8), [0.5, 1.5, 2.5, 3.5, 4.5, 0.0, 0.0, 0.0], label="change")
    for bar in bars.patches[5:]:
        bar.set_visible(False)
    text = accessible.describe(fig)
    assert text.endswith("x: unlabelled from 0 to 4, y: unlabelled from 0 to 4.5, change: 0.5, 1.5, 2.5, 3.5, 4.5.")
    assert accessible.describe(fig, numbers=False).endswith("change: 5 bars.")
    line = ax.plot([0, 7], [1, 2], label="hidden")[0]
    line.set_visible(False)
    assert "hidden" not in accessible.describe(fig)


def test_many_bars_are_said_by_their_range_and_where_it_peaks():
    flips = np.array([bin(p ^ (p + 1)).count("1") for p in range(64)], dtype=float)
    fig, ax = plt.subplots()
    ax.bar(np.arange(64), flips)
    ax.set(xlabel="position p", ylabel="bits flipped")
    text = accessible.describe(fig)
    assert "x: position p from 0 to 63, y: bits flipped from 0 to 7" in text  # not -3.6 to 67
    assert (
        f"bars: 64 bars at x = 0 to 63, from 1 (at x = 0) to {int(flips.max())} (at x = {int(np.argmax(flips))})"
        in text
    )


def test_data_ranges_are_clipped_to_the_view():
    x = np.arange(400)
    fig, ax = plt.subplots()
    ax.plot(x, np.sin(x / 20), label="wave")
    ax.set(xlabel="dimension")
    assert "x: dimension from 0 to 399," in accessible.describe(fig)  # the view pads to -20 and 419
    ax.set_xlim(100, 200)  # a zoom: what is drawn is 100 to 200
    text = accessible.describe(fig)
    assert "x: dimension from 100 to 200," in text and "wave: a line over x = 100 to 200" in text
    assert "399" not in text
    fig, ax = plt.subplots()
    ax.semilogy(np.arange(1, 11), 10.0 ** np.arange(10), "o", label="growth")
    ax.set_ylabel("size (log scale)")
    text = accessible.describe(fig)
    assert "y: size (log scale) from 1 to 1e+09," in text and "(log scale) (log scale)" not in text
    ax.set_ylabel("size")
    ax.axhline(0)  # not drawn on a log axis
    ax.axhline(1e12)  # outside the view
    ax.set_ylim(0.5, 2e9)
    assert accessible.describe(fig).endswith(
        "y: size from 1 to 1e+09 (log scale), growth: 10 points, y from 1 (at x = 1) to 1e+09 (at x = 10)."
    )


def test_a_colour_bar_made_with_cax_is_a_colour_scale_not_a_panel():
    table = np.linspace(-1, 1, 64 * 32).reshape(64, 32)
    fig = plt.figure()
    ax = fig.add_axes((0.1, 0.1, 0.7, 0.8))
    image = ax.imshow(table, vmin=-2, vmax=2)
    fig.colorbar(image, cax=fig.add_axes((0.85, 0.1, 0.03, 0.8)), label="value")
    ax.set(title="table", xlabel="dimension", ylabel="position")
    text = accessible.describe(fig)
    assert text == (
        "Figure: 'table', an image of 64x32 values from -1 to 1, colour: value (colour scale -2 to 2), "
        "x: dimension, y: position."
    )
    assert "untitled panel" not in text and "panels" not in text


def test_points_and_lines_are_told_apart():
    fig, ax = plt.subplots()
    x = np.arange(6.0)
    ax.plot(x, x**2, "o", label="squares")
    ax.plot(x, x, label="identity")
    ax.plot(x, 2 * x, marker="s", label="double")
    ax.plot([3.0], [4.0], "v", label="one")
    ax.step(x, x, label="steps")
    text = accessible.describe(fig)
    assert "squares: 6 points, y from 0 (at x = 0) to 25 (at x = 5)" in text
    assert "identity: a line over x = 0 to 5, y from 0 (at x = 0) to 5 (at x = 5)" in text
    assert "double: a line through 6 points, y from 0 (at x = 0) to 10 (at x = 5)" in text
    assert "one: one point at (3, 4)" in text and "steps: a step line over x = 0 to 5" in text


def test_every_series_is_said_named_or_counted():
    rng = np.random.default_rng(0)
    fig, (left, right) = plt.subplots(1, 2)
    for d in (16, 64):
        left.hist(rng.normal(0, 1 / np.sqrt(d), 500), bins=21, range=(-1, 1), histtype="step", label=f"d_model={d}")
    for offset in range(4):
        right.plot(np.arange(10), offset + np.sin(np.arange(10)))  # unlabelled
    right.fill_between(np.arange(10), -1, 4.5, alpha=0.2, label="range")
    right.axvspan(2, 4, color="0.9", label="trained")
    text = accessible.describe(fig)
    counts, edges = np.histogram(rng.normal(size=1), bins=21, range=(-1, 1))  # only the edges are used
    assert "d_model=16: a step outline, above 0 over x = " in text and "d_model=64: a step outline" in text
    assert "4 unlabelled lines (together x from 0 to 9, y from " in text
    assert "range: a band over x = 0 to 9, y from -1 to 4.5" in text and "trained: shaded over x = 2 to 4" in text
    # beyond MAX_SERIES the names are still said
    fig, ax = plt.subplots()
    for i in range(15):
        ax.plot([0, 1], [i, i + 1], label=f"series {i}")
    text = accessible.describe(fig)
    assert "series 11: a line" in text and "and 3 more series: series 12, series 13, series 14" in text


def test_the_step_histogram_says_where_it_peaks():
    values = np.concatenate([np.full(30, 0.25), np.full(10, -0.5)])
    fig, ax = plt.subplots()
    ax.hist(values, bins=4, range=(-1, 1), histtype="step", label="cosines")
    # bins [-1, -0.5), [-0.5, 0), [0, 0.5), [0.5, 1]: 0, 10, 30, 0
    assert "cosines: a step outline, above 0 over x = -0.5 to 0.5, highest 30 (at x = 0)" in accessible.describe(fig)


def test_tex_is_said_in_words():
    fig, ax = plt.subplots()
    ax.imshow(np.arange(8.0).reshape(1, 8))
    for i in range(8):
        ax.text(i, 0, rf"$\theta_{{{i // 2}}}$")
    ax.set(xlabel=r"wavelength $2\pi/\theta_i$", title=r"$\mathrm{softmax}(QK^T/\sqrt{d})$")
    text = accessible.describe(fig)
    assert "labels: theta 0; theta 0; theta 1; theta 1; theta 2; theta 2; theta 3; theta 3" in text
    assert "x: wavelength 2 pi/theta i" in text and "'softmax(QK^T/sqrt(d))'" in text and "$" not in text
    assert accessible.words(r"$\frac{1}{\sqrt{d}}$ costs \$5") == "1/sqrt(d) costs $5"


def test_cut_lists_say_how_long_they_were():
    names = [f"model {i}" for i in range(25)]
    fig, ax = plt.subplots()
    ax.scatter(np.arange(25), np.arange(25))
    ax.set_yticks(np.arange(25), names)
    for i in range(20):
        ax.text(i, i, f"n{i}")
    text = accessible.describe(fig)
    assert "y: unlabelled (first 12 of 25: model 0, model 1," in text and "model 12" not in text
    assert "labels: first 12 of 20: n0; n1;" in text
    assert "25 unlabelled points, x from 0 to 24" in text


def test_title_lines_are_joined_with_a_separator_and_a_constant_is_said_once():
    fig, ax = plt.subplots()
    ax.plot(np.arange(5), np.full(5, 2 * np.sqrt(2)), label="integer")
    ax.plot(np.arange(5), np.full(5, 1.0), "o", label="ones")
    ax.set_title("Pendulums at position 12\npair 0: 1.91 turns")
    text = accessible.describe(fig)
    assert "'Pendulums at position 12; pair 0: 1.91 turns'" in text
    assert "integer: a line over x = 0 to 4, all at y = 2.8" in text
    assert "ones: 5 points at x = 0, 1, 2, 3, 4, all at y = 1" in text
    assert "2.8 to 2.8" not in text and "from 2.8 (at" not in text
    assert accessible.span([2.828, 2.828]) == "2.8" and accessible.span([0, 63]) == "0 to 63"


def test_error_bars_and_legend_only_entries():
    fig, ax = plt.subplots()
    ax.bar([0, 1, 2], [0.5, 0.75, 1.0], yerr=[0.05, 0.1, 0.2], capsize=3, label="accuracy")
    ax.scatter([], [], marker="D", label="max_position_embeddings")  # a legend entry, drawn nowhere
    ax.legend()
    text = accessible.describe(fig)
    assert "y: unlabelled from 0 to 1.2, accuracy: 0.5, 0.75, 1 (error bars ± 0.05 to 0.2)" in text
    ax.errorbar([0.5, 1.5], [0.6, 0.8], yerr=0.1, fmt="none", label="spread")
    assert "spread: 2, ± 0.1" in accessible.describe(fig)
    assert "unlabelled line" not in text  # the caps and bars of the error bars are part of them
    assert "legend: max_position_embeddings" in text


def test_unlabelled_points_on_a_category_row_take_its_name():
    fig, ax = plt.subplots()
    for row, n in enumerate((4, 10)):
        ax.plot(np.arange(n) / (n - 1), np.full(n, row), "o")
    ax.set_yticks([0, 1], ["length 4", "length 10"])
    text = accessible.describe(fig)
    assert "length 4: 4 points, x from 0 to 1, length 10: 10 points, x from 0 to 1" in text
    assert "unlabelled" not in text.split("),", 1)[1]
    fig, ax = plt.subplots()  # waves drawn about their rows, as in notebook 03
    for row in range(3):
        ax.plot(np.arange(64), 1.5 * row + 0.5 * np.sin(np.arange(64) / (row + 1)))
    ax.set_yticks([0, 1.5, 3], ["dim 0", "dim 2", "dim 4"])
    assert "dim 0: a line over x = 0 to 63, dim 2: a line over x = 0 to 63, dim 4: a line" in accessible.describe(fig)
    fig, ax = plt.subplots()  # notebook 09: each model's trained length, a mark on its row
    ax.scatter([512, 1024], [0, 1])
    for row, length in enumerate((1024, 2048)):
        ax.plot([length, length], [row - 0.3, row + 0.3], color="k")
    ax.axvline(4096)
    ax.set_yticks([0, 1], ["GPT-2", "Llama 2"])
    text = accessible.describe(fig)
    assert "vertical lines: GPT-2 at x = 1,024, Llama 2 at x = 2,048" in text
    assert "a vertical line at x = 4,096" in text


def test_numbers_read_the_same_on_every_cpu():
    assert [number(v) for v in (0, 1e-9, 383, 383.2, 47117.2, 0.00891, 16384, 2.9999999999996, -0.51)] == [
        "0",
        "< 1e-06",
        "383",
        "380",
        "47,000",
        "0.0089",
        "16,384",
        "3",
        "-0.51",
    ]
    assert number(1.6e7) == "1.6e+07" and number(5.1e-5) == "5.1e-05" and number(float("inf")) == "infinity"


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


def test_figure_html_puts_the_caption_under_the_image():
    out = accessible.figure_html(b"\x89PNG", "what is drawn", 640, 480, caption="a <finding> & more.")
    image, caption = FIGURE.match(out).groups()
    assert image == accessible.img_html(b"\x89PNG", "what is drawn", 640, 480)
    assert html.unescape(caption) == "a <finding> & more." and "max-width: 640px" in out
    assert accessible.figure_html(b"\x89PNG", "what is drawn", 640, 480) == image  # no caption: a bare <img>


def test_show_displays_the_finding_as_a_caption_and_the_description_as_alt(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    fig = figures.heatmap(np.eye(3), title="identity")
    description = accessible.describe(fig)
    accessible.show(fig, finding="the diagonal is 1")
    assert not plt.fignum_exists(fig.number)
    bundle = shown[0]._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    image, caption = FIGURE.match(bundle["text/html"]).groups()
    png, alt, width, height = IMG.match(image).groups()
    assert base64.b64decode(png).startswith(b"\x89PNG") and int(width) > 100 and int(height) > 50
    # Each said once: the caption is the finding, the alt text what is drawn (not the finding again).
    assert html.unescape(caption) == "the diagonal is 1." and html.unescape(alt) == description
    assert "diagonal is 1" not in html.unescape(alt)
    assert bundle["text/plain"] == "the diagonal is 1. " + description
    fig = figures.heatmap(np.eye(3), title="identity")
    accessible.show(fig)
    assert IMG.fullmatch(shown[1]._repr_mimebundle_()["text/html"].split(' style="max-width')[0] + "")


def test_describe_without_numbers_keeps_names_and_drops_values():
    steps = np.arange(1, 11)
    fig = figures.offset_curves(steps, {"learned": 1 / steps, "rope": 2 / steps}, title="loss", logx=True)
    text = accessible.describe(fig, numbers=False)
    assert text == (
        "Figure: 'loss', x: offset k = q - p (log scale), y: PE(p) · PE(p+k), learned: a line, rope: a line, "
        "a horizontal line."
    )
    assert accessible.alt_text(fig, "both fall", numbers=False) == "both fall. " + text


# --- findings: series named, not colours; numbers quoted as computed ---------------------------------


@pytest.mark.parametrize(
    ("finding", "flagged"),
    [
        ("local maxima (red dots) at k = 6, 12", ["'red'", "'dots'"]),
        ("the word vectors (grey band) stay near 8.0", ["'grey'"]),
        ("a bright line 3 to the right of the diagonal", ["'bright'"]),
        ("each diagonal has one value (S[p+1, q+1] = S[p, q]: True)", ["'S[p+1, q+1]'", "'S[p, q]'", "'True'"]),
        ("T5 0.93 at 4x (t5_far 0.78)", ["'t5_far'"]),
        ("the slow pairs (dashed) and np.allclose(a, b)", ["'dashed'", "'np.allclose'"]),
    ],
)
def test_a_finding_that_leans_on_colour_or_code_is_flagged(finding, flagged):
    problems = findings.finding_problems(finding)
    assert len(problems) == len(flagged) and all(any(word in p for p in problems) for word in flagged), problems


@pytest.mark.parametrize(
    "finding",
    [
        "The integer position vector grows as p·√d_model: 998 word vectors long at position 1,000",
        "Qwen2-VL's [16, 24, 24] gives time the 16 fastest pairs; PE(p)·PE(q) is constant along diagonals",
        "With W_k = M_3 the peak moves to 3 after; softmax(PE PE^T / sqrt(d)) favours near positions",
        "The curve crosses zero at k = 725; a least squares fit; the dot product of pe_lib's rows",
    ],
)
def test_a_finding_in_words_is_not_flagged(finding):
    assert findings.finding_problems(finding) == []


def test_show_warns_about_a_finding_that_names_a_colour(monkeypatch):
    monkeypatch.setattr("IPython.display.display", lambda _: None)
    with pytest.warns(UserWarning, match="finding names a colour or brightness \\('red'\\)"):
        accessible.show(figures.heatmap(np.eye(2), title="t"), finding="the red cells are 1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accessible.show(figures.heatmap(np.eye(2), title="t"), finding="the diagonal cells are 1")


def test_quoted_numbers_keep_their_printed_precision():
    text = "0.27 or more, 47,000 tokens, 23%, below < 1e-06, from -3.6 to 67, positions 0-999, 1.5e+02, 4L"
    assert findings.quoted_numbers(text) == [
        (0.27, pytest.approx(0.005), False),
        (47000.0, 500.0, False),
        (0.23, pytest.approx(0.005), False),
        (1e-06, 0.0, True),
        (-3.6, pytest.approx(0.05), False),
        (67.0, 0.5, False),
        (0.0, 0.5, False),
        (999.0, 0.5, False),
        (150.0, pytest.approx(5.0), False),
        (4.0, 0.5, False),
    ]


def test_check_quotes_catches_notebook_01s_false_minimum():
    """01's bar chart: 'attention with positions moves every word (by 0.27 or more)' while one series goes to 0.26."""
    shifts = {"self-attention + PE": np.array([2.3, 0.27, 0.9]), "MultiheadAttention + PE": np.array([0.26, 0.3, 0.4])}
    finding = "the GRU moves every word but the first (by 0.21 or more), attention with positions (by 0.27 or more)"
    recomputed = min(values.min() for values in shifts.values())
    problems = findings.check_quotes(finding, {"smallest shift with positions": recomputed, "GRU": 0.2149})
    assert problems == [
        "the finding quotes no number equal to smallest shift with positions = 0.26 as printed (it quotes 0.21, 0.27)"
    ]
    assert findings.check_quotes(finding.replace("0.27", "0.26"), [recomputed, 0.2149]) == []
    assert findings.check_quotes("largest < 1e-06", [3e-17]) == []
    assert findings.check_quotes("50% of the steps", [0.5]) == [] and findings.check_quotes("6 on average", [4.85])


def test_show_checks_the_quotes_against_the_figure(monkeypatch):
    monkeypatch.setattr("IPython.display.display", lambda _: None)
    fig, ax = plt.subplots()
    ax.bar(np.arange(3), [0.26, 0.3, 0.4], label="MultiheadAttention + PE")
    ax.bar(np.arange(3) + 0.4, [2.3, 0.27, 0.9], label="self-attention + PE")
    low = min(accessible.drawn_values(fig, label).min() for label in ("MultiheadAttention + PE", "self-attention + PE"))
    with pytest.raises(ValueError, match=r"no number equal to 0\.26 as printed \(it quotes 0\.27\)"):
        accessible.show(fig, finding="attention with positions moves every word (by 0.27 or more)", quotes=[low])
    fig, ax = plt.subplots()
    ax.bar(np.arange(3), [0.26, 0.3, 0.4], label="MultiheadAttention + PE")
    accessible.show(fig, finding="every word moves (by 0.26 or more)", quotes={"smallest": 0.26})


def test_drawn_values_reads_a_series_back():
    fig, (left, right) = plt.subplots(1, 2)
    left.bar([0, 1], [1.0, 2.0], bottom=3, label="tops")
    left.plot([0, 1], [5.0, 6.0], label="line")
    right.plot([0, 1], [7.0, 8.0], label="line")
    right.scatter([1, 2], [3, 4], label=r"$\theta$")
    np.testing.assert_array_equal(accessible.drawn_values(fig, "tops"), [4.0, 5.0])
    np.testing.assert_array_equal(accessible.drawn_values(fig, "line", panel=1), [7.0, 8.0])
    np.testing.assert_array_equal(accessible.drawn_values(fig, "theta"), [[1, 3], [2, 4]])
    with pytest.raises(ValueError, match=r"names series in panels \[0, 1\]"):
        accessible.drawn_values(fig, "line")
    with pytest.raises(ValueError, match="names no visible series of the figure; its series: "):
        accessible.drawn_values(fig, "GRU")


def test_unlabelled_series_take_the_name_of_the_legend_entry_they_look_like():
    """11's layer plans: one unlabelled cell per layer, a legend of proxy patches (colour and hatch) names them."""
    styles = {"RoPE": {"facecolor": "C0"}, "NoPE": {"facecolor": "0.6", "hatch": "//"}}
    plans = {"model A": ["RoPE", "NoPE", "RoPE", "RoPE"], "model B": ["NoPE", "NoPE"]}
    fig, ax = plt.subplots()
    for row, plan in enumerate(plans.values()):
        for layer, kind in enumerate(plan):
            ax.add_patch(plt.Rectangle((layer, row - 0.4), 0.9, 0.8, **styles[kind]))
    ax.set(xlim=(0, 4), ylim=(-0.5, 1.5))
    ax.set_yticks([0, 1], list(plans))
    fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, **style) for style in styles.values()], labels=list(styles))
    text = accessible.describe(fig)
    assert "RoPE: 3 shapes (model A 3), NoPE: 3 shapes (model A 1, model B 2)" in text
    assert "Legend" not in text  # every entry names what it drew
    fig, ax = plt.subplots()  # points drawn unlabelled, named by a legend of empty proxies (09's schemes)
    ax.scatter([1, 2, 3], [1, 2, 3], color="C2", marker="o")
    ax.scatter([], [], color="C2", marker="o", label="rope")
    ax.legend()
    assert "rope: 3 points, x from 1 to 3, y from 1 to 3" in accessible.describe(fig)


def test_shaded_spans_touching_each_other_are_one_span_and_halves_are_exact():
    fig, ax = plt.subplots()
    ax.plot(np.arange(36), np.arange(36), label="ids")
    for index in [*range(4, 16), *range(19, 31)]:  # one span per image or video token, as notebook 11 shades them
        ax.axvspan(index - 0.5, index + 0.5, color="0.9", lw=0)
    assert "shaded over x = 3.5 to 15.5; 18.5 to 30.5" in accessible.describe(fig)
    assert number(12.5) == "12.5" and number(-0.5) == "-0.5" and number(1023.5) == "1,023.5"


def test_a_column_of_points_on_a_category_is_said_by_its_values():
    """11's bar charts: each seed's result a dot over its category."""
    fig, ax = plt.subplots()
    ax.bar([0, 1], [0.6, 0.9], label="mean")
    ax.plot(np.zeros(3), [0.5, 0.6, 0.7], "o", color="k")
    ax.plot(np.ones(3), [0.85, 0.9, 0.95], "o", color="k")
    ax.set_xticks([0, 1], ["all RoPE", "local RoPE +\nglobal NoPE"])
    text = accessible.describe(fig)
    assert "x: unlabelled (all RoPE, local RoPE + global NoPE)" in text
    assert "all RoPE: 3 points, y from 0.5 to 0.7, local RoPE + global NoPE: 3 points, y from 0.85 to 0.95" in text


def test_boxes_around_cells_and_one_bar_per_row():
    """10's head map boxes its strongest heads; 10's bug bars are one container per row, named by a legend."""
    fig, (left, right) = plt.subplots(1, 2)
    left.imshow(np.zeros((30, 9)))
    for head, layer in ((0, 16), (1, 11)):
        left.add_patch(plt.Rectangle((head - 0.5, layer - 0.5), 1, 1, fill=False, ec="white"))
    styles = {"the reference run": "C0", "a bug": "C3"}
    for row, (value, kind) in enumerate(((4.95, "the reference run"), (5.28, "a bug"))):
        right.barh([row], [value], color=styles[kind])
    right.set_yticks([0, 1], ["each row alone", "no attention_mask"])
    right.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in styles.values()], labels=list(styles))
    text = accessible.describe(fig)
    assert "unlabelled: 2 boxes around (x, y) = (0, 16), (1, 11)" in text and "step outline" not in text
    assert "each row alone (the reference run): 5, no attention_mask (a bug): 5.3" in text  # two digits: 4.95 is 5


def test_bars_of_one_container_that_look_different_are_said_by_their_legend_entries():
    """04's PE(12) bars: one container, sin columns filled and cos columns hatched, a legend of proxies."""
    fig, ax = plt.subplots()
    bars = ax.bar(np.arange(4), [0.1, 0.9, 0.2, 0.8])
    for i, bar in enumerate(bars.patches):
        bar.set(facecolor="C0" if i % 2 == 0 else "C1", hatch="" if i % 2 == 0 else "///")
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor="C0"), plt.Rectangle((0, 0), 1, 1, facecolor="C1", hatch="///")]
    ax.legend(handles=handles, labels=["sin column", "cos column"])
    text = accessible.describe(fig)
    assert "sin column: 0.1, 0.2, cos column: 0.9, 0.8" in text and "legend" not in text
