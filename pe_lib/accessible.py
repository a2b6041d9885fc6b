"""Figures every reader can use: the finding as a visible caption, what is drawn as the alt text.

`show(figure, finding=...)` ends a plot cell instead of `plt.show()`. It displays, as text/html,

    <figure class="pe-figure">
      <img src="data:image/png;base64,..." alt="Figure: 'title', x: ..., y: ..., series ...">
      <figcaption>The finding, with the numbers the notebook computed for it.</figcaption>
    </figure>

Two texts, each said once. The finding (what the figure is for, said by the notebook) is the caption
under the figure, for every reader: a sighted learner reads it, a screen reader reads it as the
figure's caption. The alt text is what the figure draws, read from the figure itself (`describe`:
titles, axes with their data ranges, every series, bar tops, images and their colour scales, texts),
so it cannot go stale; a screen reader says it in place of the image. The alt text does not repeat
the caption (a screen reader would read it twice). A figure without a finding is a bare <img alt>.

text/html is the one output type that carries both in JupyterLab (its image renderer sets no alt) and
in the book (MyST-NB writes the HTML as it is); nbconvert and nbviewer show it as it is too. text/plain
(a terminal) is the finding, then the description. nbval compares text/html: the caption is the
notebook's own text, the description's numbers have two significant digits (`number`), and
tests/nbval_sanitize.cfg replaces the PNG's base64 (which differs by CPU) before comparing.

The finding is checked before it is shown (`pe_lib.findings`): a colour, a drawing style or code in it
is a warning (nbval and the notebooks' hygiene check catch it as stderr); `quotes=` takes the numbers it
claims, recomputed by the cell (e.g. read back from the figure with `drawn_values`), and a number the
finding does not print as given is an error. The explorers (pe_lib.explorer) use `describe` and
`figure_html` for their frames too.
"""

import base64
import html
import io
import struct
import warnings

import matplotlib.pyplot as plt

from .colours import figure_problems
from .figure_description import describe
from .figure_words import number, span, words
from .findings import check_quotes, drawn_values, finding_problems, quoted_numbers

__all__ = [
    "Described",
    "alt_text",
    "caption_text",
    "check_quotes",
    "describe",
    "drawn_values",
    "figure_html",
    "finding_problems",
    "img_html",
    "number",
    "quoted_numbers",
    "show",
    "span",
    "words",
]


def caption_text(finding):
    """The finding as a caption: stripped, ending with a full stop ("" stays "")."""
    if not isinstance(finding, str):
        raise TypeError(f"finding must be a string, got {type(finding).__name__}")
    finding = " ".join(finding.split())
    return finding if not finding or finding[-1] in ".!?" else finding + "."


def alt_text(figure, finding="", *, numbers=True):
    """The whole figure in text (for a terminal, or a page without the caption): the finding, then `describe`."""
    return f"{caption_text(finding)} {describe(figure, numbers=numbers)}".strip()


def img_html(png, alt, width, height):
    """An <img> of PNG bytes (inline, base64) shown at width x height CSS pixels, with its alt text."""
    if not alt or not isinstance(alt, str):
        raise ValueError(f"alt must be a non-empty string, got {alt!r}")
    data = base64.b64encode(png).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt, quote=True)}" '
        f'width="{round(width)}" height="{round(height)}" style="max-width: 100%; height: auto">'
    )


# The output's own text colour (`inherit`): the book's theme greys captions, which in its dark mode sits on the
# light background MyST-NB gives HTML outputs (1.7:1); inherited, it is the output's text colour (10:1).
_CAPTION_STYLE = "margin-top: 0.3em; text-align: left; color: inherit"


def figure_html(png, alt, width, height, caption=""):
    """The <img> (`img_html`) with `caption` shown under it, as <figure> and <figcaption>; a bare <img> without one.

    The figure is at most as wide as the image, so the caption wraps under it; both shrink with a narrow page.
    Colours and fonts are the page's own (JupyterLab's and the book's themes, light or dark).
    """
    image = img_html(png, alt, width, height)
    if not isinstance(caption, str):
        raise TypeError(f"caption must be a string, got {type(caption).__name__}")
    if not caption.strip():
        return image
    return (
        f'<figure class="pe-figure" style="margin: 0 0 0.5em; max-width: {round(width)}px">{image}'
        f'<figcaption style="{_CAPTION_STYLE}">{html.escape(caption)}</figcaption></figure>'
    )


class Described:
    """A rendered figure, its alt text and its caption; shown as <figure> with <img alt> and <figcaption>."""

    def __init__(self, figure, alt, caption=""):
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=figure.dpi, bbox_inches="tight")  # as the inline backend does
        self.png = buffer.getvalue()
        self.alt, self.caption = alt, caption
        self.width, self.height = struct.unpack(">II", self.png[16:24])  # the PNG's header: shown at 1 px per px

    def _repr_mimebundle_(self, **kwargs):
        text = f"{self.caption} {self.alt}".strip()
        return {"text/html": figure_html(self.png, self.alt, self.width, self.height, self.caption), "text/plain": text}


def show(figure=None, *, finding="", numbers=True, quotes=()):
    """Display `figure` (default: the current one) with the finding as its caption, then close it; ends a plot cell.

    finding: what the figure shows, with the numbers the notebook computed for it, named by what they are
    (not by colour), e.g. f"learned rows past the training length stay at their initial values ({number(change)})".
    numbers=False: the alt text leaves out the values read from the data (see `describe`).
    quotes: numbers the finding claims, recomputed by the cell (a sequence, or a mapping {what: value}); each
    must be printed in the finding (`check_quotes`), else ValueError. Read a series back from the figure
    with `drawn_values(figure, label)` to check the finding against what is drawn.
    Warnings (caught by nbval and the hygiene check as stderr): the figure's colours (`colours.figure_problems`),
    and a finding that names a colour or a drawing style or quotes code (`finding_problems`).
    """
    if figure is None:
        figure = plt.gcf()
    caption = caption_text(finding)
    try:
        problems = check_quotes(caption, quotes)
    except (TypeError, ValueError):
        plt.close(figure)  # not shown again, without its alt text, by the inline backend
        raise
    if problems:
        plt.close(figure)
        raise ValueError("finding: " + "; ".join(problems) + f". The finding: {caption!r}")
    for problem in figure_problems(figure):
        warnings.warn(f"figure colours: {problem}", stacklevel=2)
    for problem in finding_problems(caption):
        warnings.warn(f"finding {problem}", stacklevel=2)
    described = Described(figure, describe(figure, numbers=numbers), caption)
    plt.close(figure)  # shown once, through the <img>, not again by the inline backend
    from IPython.display import display

    display(described)
    return None
