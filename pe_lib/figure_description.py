"""What a figure draws, in one paragraph: the alt text of the course's figures (pe_lib.accessible).

`describe(figure)` reads the figure's own artists, so it cannot go stale: the suptitle, then each
panel as `figure_panel.describe_panel` says it (its title, axes, every series, guides, spans, texts),
then the figure's own notes and legends. Colour bars, also those made with `cax=`, are said with what
they colour, never as a panel. TeX is said in words and a cut list says so ("first 12 of 64").
"""

from matplotlib.figure import Figure

from .figure_artists import scale_label
from .figure_panel import describe_panel
from .figure_words import listed, span, words


def describe(figure, *, numbers=True):
    """What a figure plots, as one paragraph, read from its artists (titles, axes, series, images, bars, texts).

    numbers=False leaves out the values read from the data (ranges, peaks, bar tops): for a figure of a
    live training run, whose last digits differ from one CPU to the next (nbval compares the alt text).
    """
    if not isinstance(figure, Figure):
        raise TypeError(f"figure must be a matplotlib Figure, got {type(figure).__name__}")
    scales = _colour_bars(figure)
    said = set()  # the series' names: a figure legend lists only the others
    panels = [describe_panel(ax, numbers, said) for ax in figure.axes if ax.get_visible() and ax not in scales]
    panels = [panel for panel in panels if panel]
    drawn = {id(m) for ax in figure.axes for m in (*ax.get_images(), *ax.collections)}
    extra = [_bare_scale(bar, numbers) for bar in scales.values() if id(bar.mappable) not in drawn]
    extra += _figure_texts(figure, said)
    title = words(figure.get_suptitle())
    head = f"Figure '{title}'" if title else "Figure"
    if len(panels) == 1:
        text = f"{head}: {panels[0]}."
    else:
        text = f"{head} with {len(panels)} panels. " + " ".join(f"({i}) {p}." for i, p in enumerate(panels, start=1))
    if extra:
        text += " " + " ".join(f"{part[0].upper()}{part[1:]}." for part in extra)
    return " ".join(text.split())


def _colour_bars(figure):
    """axes -> Colorbar, for every colour bar of the figure (made with `ax=` or `cax=`)."""
    found = {}
    for ax in figure.axes:
        for mappable in (*ax.get_images(), *ax.collections):
            bar = getattr(mappable, "colorbar", None)
            if bar is not None:
                found[bar.ax] = bar
        bar = getattr(ax, "_colorbar", None)  # also a colour bar of a bare ScalarMappable
        if bar is not None:
            found[ax] = bar
    return found


def _bare_scale(bar, numbers):
    norm = bar.mappable.norm
    text = f"a colour scale: {scale_label(bar)}"
    return text + (f" from {span([norm.vmin, norm.vmax])}" if numbers and norm.vmin is not None else "")


def _figure_texts(figure, said):
    parts = []
    # The suptitle and the shared axis labels are texts of the figure too: said as the head and as axes.
    shared = {id(getattr(figure, name, None)) for name in ("_suptitle", "_supxlabel", "_supylabel")}
    for name, which in (("_supxlabel", "x"), ("_supylabel", "y")):
        label = getattr(figure, name, None)
        if label is not None and label.get_visible() and label.get_text().strip():
            parts.append(f"{which} of every panel: {words(label.get_text())}")
    texts = [
        words(t.get_text(), ", ")
        for t in figure.texts
        if t.get_visible() and t.get_text().strip() and id(t) not in shared
    ]
    if texts:
        parts.append("notes: " + listed(texts, separator="; "))
    for legend in figure.legends:
        entries = [words(t.get_text(), " ") for t in legend.get_texts()] if legend.get_visible() else []
        entries = [entry for entry in entries if entry and entry not in said]
        if entries:
            parts.append("legend: " + listed(entries))
    return parts
