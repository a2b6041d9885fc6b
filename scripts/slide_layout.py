"""Lay the notebooks out as slides: set each cell's slide type by rules.

Usage: python scripts/slide_layout.py [--check] [NOTEBOOK ...]
       (default: every notebooks/NN_*.ipynb; --check changes nothing and exits 1 if a file would change)

The deck is jupyterlab-slideshow (docs/teaching.md), which reads the same slideshow metadata as
nbconvert and RISE; its styles are the course's (lab-settings/positional-encoding-course.json5). The
script writes one cell metadata key and nothing else, never a cell's source or outputs:
metadata.slideshow.slide_type. It also removes metadata.jupyter.source_hidden (JupyterLab's
"collapsed input"), which its earlier versions set on cells too tall for a slide: the deck now
hides a figure's code by itself, and a learner's notebook view keeps every input open. It prints
every change, and running it again changes nothing.

The rules, in this order (rules 1-6 each decide a cell once; rule 7 may then cut a slide at it):
1. the first cell opens the deck: "slide";
2. a test cell is never on a slide: "skip". A test cell is a code cell that re-runs an explorer
   with other values (`set_by_code = ...`), or one that shows nothing (no output) and asserts;
3. asides the notebook marks as speaker notes, or as skipped, stay so ("notes", "skip");
4. a markdown cell with a heading starts a slide or sub-slide (the notebook's choice is kept;
   a heading with neither becomes a "subslide");
5. an explorer (a cell whose output is a live widget) gets a sub-slide of its own, with the
   markdown cell just before it that introduces it when both fit (estimated, the explorer's figure
   at MIN_FIGURE): that markdown starts the sub-slide (or keeps "slide"), the explorer follows on
   it, and the next cell shown starts a new one; an introduction too long for that stays on the
   slide before;
6. a figure (a code cell with an image output) or a long code cell (more than LONG_CODE lines)
   starts a sub-slide, unless it is the first cell after a heading; when the cell before it is
   a markdown introduction that fits on the slide with it, the introduction starts the sub-slide
   instead and the figure follows on it;
7. a slide whose cells together would not fit is cut: each cell gets an estimated height (text
   lines, code lines, printed lines; a figure MIN_FIGURE, the room it needs at least: on the
   slide it grows into all the room the other cells leave) and a cell that would take its slide
   past SLIDE_BUDGET starts a new sub-slide. A single cell taller than the slide (a long text, a
   long printed table) cannot be cut: its slide scrolls;
8. everything else keeps the notebook's choice between "-" and "fragment". "-" is written as no
   slideshow key at all: jupyterlab-slideshow reads an absent slide type as "-", but hides a cell
   whose slide type is the string "-" and breaks the navigation around it.

tests/test_browser.py presents every notebook at 1280 x 720 and measures what this only estimates.
"""

import argparse
import ast
import base64
import json
import math
import re
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"
LONG_CODE = 15  # source lines: a longer code cell starts a sub-slide of its own
# The deck's styles (lab-settings/positional-encoding-course.json5) at 1280 x 720: body text 24 px, code and
# printed output 20 px, the slide 664 px tall (40 px kept clear above, 16 px below); a figure's code is not
# shown on its slide, and the figure (an explorer's too) grows to fill the room the rest of its slide leaves.
SLIDE_BUDGET = 650  # estimated pixels per slide (a little under the 664 px the deck gives)
MIN_FIGURE = 360  # the least room a figure may get on its slide; the rest of the slide has to fit around it
# Estimated heights, in CSS pixels, fitted to the heights measured on the slides of notebooks 01, 03, 06 and
# 09 (most estimates 0-40% over, none more than 12% under).
CELL_PAD = 16
MARKDOWN_PAD = 16
CODE_LINE = 26
OUTPUT_LINE = 26
OUTPUT_CHARS = 72  # characters per printed line before it wraps
OUTPUT_PAD = 8
MARKDOWN_LINE = 34
MARKDOWN_GAP = 12  # a blank line between blocks
MARKDOWN_CHARS = 64  # source characters per rendered markdown line (math and code spans render wider)
MARKDOWN_BLOCK = re.compile(r"^\s*([-*+]\s|\d+\.\s|#|\$\$|\||>|```)")  # a line that starts a new block
HEADING = {1: 80, 2: 76, 3: 52, 4: 44}
WIDGET_CONTROLS = 60  # an explorer's row of sliders above its figure


def source(cell):
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def slide_type(cell):
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type") or "-"


def is_heading(cell):
    lines = source(cell).strip().splitlines()
    return cell["cell_type"] == "markdown" and bool(lines) and lines[0].startswith("#")


def has_widget(cell):
    return any(WIDGET in output.get("data", {}) for output in cell.get("outputs", []))


def has_image(cell):
    return any(_image_size(output.get("data", {})) for output in cell.get("outputs", []))


def is_test(cell):
    """A code cell that tests rather than shows: an explorer's set_by_code check, or silent asserts."""
    if cell["cell_type"] != "code":
        return False
    text = source(cell)
    if "set_by_code" in text:
        return True
    if cell.get("outputs"):
        return False
    try:
        statements = ast.parse(text).body
    except SyntaxError:  # IPython magics: not a test
        return False
    defines = any(isinstance(s, ast.FunctionDef | ast.ClassDef) for s in statements)
    return not defines and any(isinstance(s, ast.Assert) for s in statements)


def _png_size(data):
    raw = base64.b64decode("".join(data) if isinstance(data, list) else data)
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


# A figure shown with its alt text (pe_lib.accessible, the explorers' frames): an <img> in text/html.
INLINE_IMAGE = re.compile(r'<img src="data:image/png;base64,[^"]*" alt="[^"]*" width="(\d+)" height="(\d+)"')


def _image_size(data):
    """(width, height) an output's figure is shown at, or None: an image/png, or an inline <img> with alt text."""
    if "image/png" in data:
        return _png_size(data["image/png"])
    found = INLINE_IMAGE.search("".join(data.get("text/html", "")))
    return (int(found.group(1)), int(found.group(2))) if found else None


def _rendered_lines(text):
    """Markdown source lines joined the way they render: a paragraph's lines make one long line."""
    lines, paragraph = [], None
    for line in text.splitlines():
        if not line.strip():
            if paragraph is not None:
                lines.append(paragraph)
            lines.append("")
            paragraph = None
        elif paragraph is not None and not MARKDOWN_BLOCK.match(line):
            paragraph += " " + line.strip()
        else:
            if paragraph is not None:
                lines.append(paragraph)
            paragraph = line
    if paragraph is not None:
        lines.append(paragraph)
    return lines


def _printed_lines(text):
    """Lines a printed text takes on a slide: long lines wrap."""
    return sum(max(1, math.ceil(len(line) / OUTPUT_CHARS)) for line in text.splitlines())


def estimate_height(cell):
    """Rough rendered height of a cell on a slide, in CSS pixels.

    A cell with a figure counts its figure at MIN_FIGURE (on the slide it grows into whatever room is
    left) and no input (the deck does not show a figure's code).
    """
    text = source(cell)
    if cell["cell_type"] == "markdown":
        height = MARKDOWN_PAD
        for line in _rendered_lines(text):
            if line.startswith("#"):
                height += HEADING.get(len(line) - len(line.lstrip("#")), HEADING[4])
            elif line.strip():
                height += MARKDOWN_LINE * math.ceil(len(line) / MARKDOWN_CHARS)
            else:
                height += MARKDOWN_GAP
        return height
    figure = has_image(cell)
    height = CELL_PAD
    if not figure:
        height += CODE_LINE * len(text.splitlines())
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if _image_size(data):
            continue
        if "text" in output:
            height += OUTPUT_PAD + OUTPUT_LINE * _printed_lines("".join(output["text"]))
        elif "text/plain" in data:
            height += OUTPUT_PAD + OUTPUT_LINE * _printed_lines("".join(data["text/plain"]))
    if figure:
        height += MIN_FIGURE + (WIDGET_CONTROLS if has_widget(cell) else 0)
    return height


def layout(cells):
    """The slide type of every cell, by the rules of the module docstring."""
    types = [slide_type(cell) for cell in cells]
    decided = [False] * len(cells)

    def previous_shown(i):
        j = i - 1
        while j >= 0 and types[j] in ("skip", "notes"):
            j -= 1
        return j

    def next_shown(i):
        j = i + 1
        while j < len(cells) and types[j] in ("skip", "notes"):
            j += 1
        return j if j < len(cells) else None

    # rules 1-3: the first cell, test cells, kept asides
    for i, cell in enumerate(cells):
        if i == 0:
            types[i], decided[i] = "slide", True
        elif is_test(cell):
            types[i], decided[i] = "skip", True
        elif types[i] in ("skip", "notes"):
            decided[i] = True
    # rule 4: headings start a slide or sub-slide
    for i, cell in enumerate(cells):
        if not decided[i] and is_heading(cell) and types[i] not in ("slide", "subslide"):
            types[i] = "subslide"
    # rule 5: explorers, with their introduction, on a sub-slide of their own
    for i, cell in enumerate(cells):
        if decided[i] or not has_widget(cell):
            continue
        intro = previous_shown(i)
        fits = estimate_height(cells[intro]) + estimate_height(cell) <= SLIDE_BUDGET
        if intro > 0 and cells[intro]["cell_type"] == "markdown" and fits:
            if types[intro] != "slide":
                types[intro] = "subslide"
            decided[intro] = True
            types[i] = "-"
        else:
            types[i] = "subslide"
        decided[i] = True
        after = next_shown(i)
        if after is not None and types[after] != "slide":
            types[after] = "subslide"
            decided[after] = True
    # rule 6: figures and long code cells start a sub-slide (with a short introduction)
    for i, cell in enumerate(cells):
        if decided[i] or cell["cell_type"] != "code":
            continue
        if not (has_image(cell) or len(source(cell).splitlines()) > LONG_CODE):
            continue
        before = previous_shown(i)
        intro = cells[before]
        if is_heading(intro):
            continue  # the first cell after the heading that starts its slide
        if intro["cell_type"] == "markdown" and estimate_height(intro) + estimate_height(cell) <= SLIDE_BUDGET:
            if types[before] != "slide":
                types[before] = "subslide"
            decided[before] = True
        else:
            types[i] = "subslide"
        decided[i] = True
    # rule 7: cut slides that would be taller than the screen (rule 8: the rest stays)
    used = 0
    for i, cell in enumerate(cells):
        if types[i] in ("skip", "notes"):
            continue
        height = estimate_height(cell)
        if types[i] in ("slide", "subslide"):
            used = height
        elif used + height > SLIDE_BUDGET:
            types[i], used = "subslide", height
        else:
            used += height
    return types


def apply(path, write=True):
    """Set the slide types of one notebook; return a list of (cell index, old, new, first line)."""
    text = path.read_text(encoding="utf-8")
    notebook = json.loads(text)
    cells = notebook["cells"]
    changes = []
    types = layout(cells)
    for i, (cell, new) in enumerate(zip(cells, types, strict=True)):
        metadata = cell.setdefault("metadata", {})
        before = json.dumps(metadata, sort_keys=True)
        old = metadata.get("slideshow", {}).get("slide_type", "(none)")
        slideshow = {k: v for k, v in metadata.pop("slideshow", {}).items() if k != "slide_type"}
        if new != "-":
            slideshow["slide_type"] = new
        if slideshow:
            metadata["slideshow"] = slideshow
        jupyter = metadata.pop("jupyter", {})
        shown_again = jupyter.pop("source_hidden", False)
        if jupyter:
            metadata["jupyter"] = jupyter
        if json.dumps(metadata, sort_keys=True) != before:
            first = source(cell).strip().splitlines()[0][:60] if source(cell).strip() else ""
            note = " (input shown again)" if shown_again else ""
            changes.append((i, old, (new if new != "-" else "(none)") + note, first))
    if changes and write:
        # nbformat's own layout (indent 1, sorted keys, no ASCII escaping, final newline)
        path.write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    return changes


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook would change")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    changed = 0
    for path in paths:
        changes = apply(path, write=not args.check)
        changed += bool(changes)
        print(f"{path.name}: {len(changes)} cell(s) {'would change' if args.check else 'changed'}")
        for index, old, new, first in changes:
            print(f"  cell {index:3d}: {old:>9} -> {new:<9} {first!r}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
