"""WCAG 2.1 contrast of the text in a page, measured in the page: every element that holds text under a selector.

Used where axe-core's own colour-contrast rule costs too much or finds nothing to check: the slides
(tests/test_browser.py; inside the deck axe finds nothing) and the book's syntax-highlighted code
(tests/test_book.py; a token per element, most of a notebook page's nodes).

The colour behind a text is the first opaque background colour of the element or of one of its parents
(white if none), as axe-core finds it for text over plain boxes. A text drawn translucent (CSS opacity
below 1 anywhere above it) or with a shadow is reported, not guessed at.
"""

import re

from pe_lib.colours import MIN_TEXT_CONTRAST, contrast_ratio

# Every element under `selector` with text of its own (its own text nodes, not only its children's), visible.
# The backgrounds and opacities of the parents are remembered: a token's parents are shared by thousands.
JS_TEXTS = """([selector, MARK]) => {
  const above = new Map();  // element -> {background, opacity} of the element and its parents
  const up = (element) => {
    if (!element) return {background: "rgb(255, 255, 255)", opacity: 1};
    if (above.has(element)) return above.get(element);
    const style = getComputedStyle(element), parent = up(element.parentElement);
    const colour = style.backgroundColor;
    const opaque = colour && colour !== "transparent" && !/rgba\\(.*, 0\\)$/.test(colour);
    const own = {background: opaque ? colour : parent.background, opacity: parseFloat(style.opacity) * parent.opacity};
    above.set(element, own);
    return own;
  };
  // Texts alike (the same colours, size, weight, kind and mark) are one entry with a count: a page of code has
  // a hundred thousand tokens in a handful of colours.
  const found = new Map(), seen = new Set();
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const element = walker.currentNode.parentElement;
      if (!walker.currentNode.textContent.trim() || seen.has(element)) continue;
      seen.add(element);
      const box = element.getBoundingClientRect(), style = getComputedStyle(element);
      if (!box.width || !box.height || style.visibility !== "visible") continue;
      const {background, opacity} = up(element);
      if (opacity === 0) continue;
      // what kind of text it is, for a least size; math is measured at its container
      const math = element.closest("mjx-container");
      const kind = math ? "math"
        : element.closest(".jupyter-widgets") ? "control"
        : element.closest("h1, h2, h3, h4, h5, h6") ? "heading"
        : element.closest(".cm-editor, pre, code, .jp-OutputArea-output[data-mime-type^='application/vnd.jupyter.std']")
          ? "code" : "body";
      const text = {color: style.color, background, opacity, shadow: style.textShadow, kind,
                    size: parseFloat(getComputedStyle(math || element).fontSize),
                    bold: parseInt(style.fontWeight, 10) >= 700, mark: element.getAttribute(MARK)};
      const key = JSON.stringify(text);
      if (found.has(key)) { found.get(key).count += 1; continue; }
      found.set(key, {...text, text: walker.currentNode.textContent.trim().slice(0, 50), count: 1});
    }
  }
  return Array.from(found.values());
}"""


def css_colour(text):
    """An rgb()/rgba() CSS colour as an RGBA tuple in 0..1."""
    values = [float(v) for v in re.findall(r"[\d.]+", text)]
    return (*(v / 255 for v in values[:3]), values[3] if len(values) > 3 else 1.0)


def needed(size_px, bold):
    """WCAG 2.1's least contrast: 3:1 for large text (18 pt, or 14 pt bold), else 4.5:1."""
    return 3.0 if size_px >= 24 or (bold and size_px >= 18.66) else MIN_TEXT_CONTRAST


def ratio(text):
    """The contrast of one text of JS_TEXTS against its background."""
    return contrast_ratio(css_colour(text["color"]), css_colour(text["background"])[:3])


# An attribute a test may set on elements to find them among the texts (`mark`): what another tool measured there.
MARK = "data-contrast-mark"


def texts(page, selector):
    """The visible text elements under `selector` in the page, as JS_TEXTS describes them: one entry (with the
    first one's text) for each kind of text alike (colours, size, weight, kind, mark), with its `count`."""
    return page.evaluate(JS_TEXTS, [selector, MARK])


def problems(found, where):
    """The texts of `found` (from `texts`) below WCAG's contrast, or that cannot be measured, as sentences."""
    wrong = []
    for text in found:
        if text["opacity"] != 1 or text["shadow"] != "none":
            wrong.append(f"{where}: {_which(text)} translucent or with a shadow: measure by hand ({text})")
            continue
        least, measured = needed(text["size"], text["bold"]), ratio(text)
        if measured < least:
            wrong.append(f"{where}: {_which(text)} at {measured:.2f}:1, below {least}:1 ({text})")
    return wrong


def _which(text):
    others = text["count"] - 1
    return repr(text["text"]) + (f" (and {others} more text{'s' * (others > 1)} like it)" if others else "")
