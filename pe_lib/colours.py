"""Colour checks for the course's figures: colour-vision deficiency and text contrast.

Series that a reader must tell apart must stay apart for everyone: `cvd_distances` simulates the
three dichromacies (deuteranopia, protanopia, tritanopia: colorspacious' "sRGB1+CVD" model at
severity 100, Machado et al. 2009) and measures every pair of colours in CAM02-UCS, where a
distance of 1 is about one just-noticeable difference. Two series are distinguishable here when
their distance is at least MIN_DELTA_E under normal vision and under each simulation.
Text must be readable: `contrast_ratio` is WCAG 2.1's (relative luminance), and text needs 4.5:1.
`figure_problems` runs both checks on a matplotlib figure: series that differ by colour alone (the
same marker, line style and hatch), and every text against the colour drawn behind it.
"""

import itertools

import numpy as np
from colorspacious import cspace_convert, deltaE
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.container import BarContainer
from matplotlib.text import Text

MIN_DELTA_E = 10.0  # CAM02-UCS distance two series keep under every simulation
MIN_TEXT_CONTRAST = 4.5  # WCAG 2.1 AA, normal-size text
VISIONS = ("normal", "deuteranopia", "protanopia", "tritanopia")
_CVD_TYPE = {"deuteranopia": "deuteranomaly", "protanopia": "protanomaly", "tritanopia": "tritanomaly"}


def simulate(colours, vision):
    """sRGB colours (n, 3) in 0..1 as a reader with `vision` sees them (normal: unchanged)."""
    rgb = np.array([to_rgb(c) for c in colours], dtype=float).reshape(-1, 3)
    if vision == "normal":
        return rgb
    if vision not in _CVD_TYPE:
        raise ValueError(f"vision must be one of {VISIONS}, got {vision!r}")
    space = {"name": "sRGB1+CVD", "cvd_type": _CVD_TYPE[vision], "severity": 100}
    return np.clip(cspace_convert(rgb, space, "sRGB1"), 0.0, 1.0)


def cvd_distances(colours):
    """vision -> (smallest CAM02-UCS distance between two of `colours`, (i, j) of that pair)."""
    colours = list(colours)
    if len(colours) < 2:
        raise ValueError(f"colours must hold at least two colours, got {len(colours)}")
    found = {}
    for vision in VISIONS:
        seen = simulate(colours, vision)
        found[vision] = min(
            (float(deltaE(seen[i], seen[j], input_space="sRGB1")), (i, j))
            for i, j in itertools.combinations(range(len(colours)), 2)
        )
    return found


def relative_luminance(colour):
    """WCAG 2.1's relative luminance of an sRGB colour."""
    channels = np.array(to_rgb(colour))
    linear = np.where(channels <= 0.04045, channels / 12.92, ((channels + 0.055) / 1.055) ** 2.4)
    return float(linear @ [0.2126, 0.7152, 0.0722])


def contrast_ratio(foreground, background):
    """WCAG 2.1's contrast ratio (1 to 21) of two colours; an alpha < 1 foreground is blended first."""
    back = np.array(to_rgb(background))
    *rgb, alpha = to_rgba(foreground)
    front = alpha * np.array(rgb) + (1 - alpha) * back
    lighter, darker = sorted((relative_luminance(front), relative_luminance(back)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def series_styles(ax):
    """label -> (colour, cue) of the series a legend tells apart (labelled lines, bars, scatters).

    cue: what besides colour tells the series apart (marker, line style, hatch); two series with the
    same cue are told apart by colour alone.
    """
    found = {}
    for line in ax.get_lines():
        if line.get_visible() and not line.get_label().startswith("_"):
            found[line.get_label()] = (line.get_color(), ("line", line.get_marker(), line.get_linestyle()))
    for container in ax.containers:
        label = container.get_label()
        if isinstance(container, BarContainer) and container.patches and label and not label.startswith("_"):
            patch = container.patches[0]
            found[label] = (patch.get_facecolor(), ("bar", patch.get_hatch()))
    for collection in ax.collections:
        label = collection.get_label()
        if isinstance(collection, PathCollection) and label and not label.startswith("_"):
            faces, edges = collection.get_facecolor(), collection.get_edgecolor()
            colour = faces[0] if len(faces) else edges[0] if len(edges) else "white"
            paths = collection.get_paths()
            shape = tuple(map(tuple, np.round(paths[0].vertices, 2))) if paths else ()
            found[label] = (colour, ("scatter", shape, len(faces) == 0))
    return found


def _pixels(figure):
    """The figure drawn, each pixel's RGB as one integer (0xRRGGBB): counting colours is then a 1-D count."""
    figure.canvas.draw()
    rgb = np.asarray(figure.canvas.buffer_rgba())[..., :3].astype(np.uint32)
    return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


def _background(text, pixels, renderer):
    """The colour behind a text as drawn: the most common colour of its box (a text covers few of its pixels)."""
    box = text.get_window_extent(renderer)
    height = pixels.shape[0]
    rows = slice(max(0, int(height - box.y1)), max(0, int(np.ceil(height - box.y0))))
    cols = slice(max(0, int(box.x0)), max(0, int(np.ceil(box.x1))))
    patch = pixels[rows, cols].ravel()
    if patch.size == 0:
        return None
    codes, counts = np.unique(patch, return_counts=True)  # sorted: a tie goes to the lowest (r, g, b)
    code = int(codes[np.argmax(counts)])
    return tuple(np.round(np.array([code >> 16, (code >> 8) & 0xFF, code & 0xFF]) / 255.0, 3))


def figure_problems(figure, *, min_delta_e=MIN_DELTA_E, min_contrast=MIN_TEXT_CONTRAST):
    """What fails in a figure: series told apart by colour alone that come too close under a simulated
    vision, and text below the contrast ratio against what is drawn behind it.
    """
    problems = []
    for ax in figure.axes:
        by_cue = {}
        for label, (colour, cue) in series_styles(ax).items():
            by_cue.setdefault(cue, {})[label] = colour
        for series in by_cue.values():
            if len(series) < 2:
                continue
            labels = list(series)
            for vision, (distance, (i, j)) in cvd_distances(series.values()).items():
                if distance < min_delta_e:
                    problems.append(
                        f"'{ax.get_title()}': {labels[i]!r} and {labels[j]!r} differ by colour alone and are "
                        f"{distance:.1f} apart for {vision} (CAM02-UCS), below {min_delta_e}"
                    )
    pixels = _pixels(figure)
    renderer = figure.canvas.get_renderer()
    for text in figure.findobj(Text):
        if not text.get_visible() or not text.get_text().strip():
            continue
        colour = to_rgba(text.get_color(), text.get_alpha())
        background = _background(text, pixels, renderer)
        if background is None:
            continue
        ratio = contrast_ratio(colour, background)
        if ratio < min_contrast:
            problems.append(f"text {text.get_text()[:40]!r}: contrast {ratio:.2f}:1, below {min_contrast}:1")
    return problems
