"""Words for what a matplotlib figure draws: numbers, data ranges and TeX, read the same on every CPU.

The pieces `figure_description.describe` builds its sentences from: `number` (two significant
digits, whole numbers in full), `span` ("2.8" for a constant, "0 to 63" otherwise), `words` (a
label's TeX said in words, its lines joined with a separator) and `listed` (a list cut after a
number of items says how many there were: "first 12 of 64: ...").
"""

import math
import re

import numpy as np

from .text import measured

MAX_ITEMS = 12  # values, categories or labels listed one by one; a longer list says "first 12 of 64"
NOISE = 1e-6  # below this a value is a rounding residue: "< 1e-06", the same on every CPU


def number(value):
    """A value in words that read the same on every CPU: whole numbers and halves in full (16,384, 12.5), else
    two significant digits in plain notation (0.0089, 380, 47,000; 1.6e+07 and 5e-05 outside 0.001 to 10
    million), and a rounding residue as a bound ("< 1e-06")."""
    value = float(value)
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "not a number" if math.isnan(value) else ("infinity" if value > 0 else "minus infinity")
    if abs(value) < NOISE:
        return measured(value, noise=NOISE)
    whole = round(value)
    # A whole number, up to the last bits that differ by CPU: positions, counts, lengths.
    if abs(value - whole) <= 1e-9 * abs(value) and abs(value) < 1e7:
        return f"{whole:,}"
    # Half a step: where bars, cells and spans begin and end (-0.5, 12.5): exact too.
    if abs(2 * value - round(2 * value)) <= 2e-9 * abs(value) and abs(value) < 1e7:
        return f"{value:,.1f}"
    rounded = float(f"{value:.2g}")
    if not 1e-3 <= abs(rounded) < 1e7:
        return f"{value:.2g}"
    if abs(rounded) >= 10:
        return f"{rounded:,.0f}"
    decimals = 1 - math.floor(math.log10(abs(rounded)))
    return f"{rounded:.{decimals}f}".rstrip("0").rstrip(".")


def span(values):
    """The range of `values` in words: "0 to 63", or one number when they are all the same ("2.8")."""
    values = np.asarray(values, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if values.size == 0:
        return "no finite values"
    low, high = number(values.min()), number(values.max())
    return low if low == high else f"{low} to {high}"


def listed(items, *, limit=MAX_ITEMS, separator=", "):
    """Items joined by `separator`; a list longer than `limit` is cut and says so: "first 12 of 25: a, b, ..."."""
    items = [str(item) for item in items]
    if len(items) <= limit:
        return separator.join(items)
    return f"first {limit} of {len(items)}: " + separator.join(items[:limit])


_GREEK = (
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi omicron pi "
    "varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma "
    "Upsilon Phi Psi Omega"
).split()
_SYMBOLS = {
    **{name: name.removeprefix("var") for name in _GREEK},
    "cdot": "·",
    "times": "×",
    "pm": "±",
    "mp": "∓",
    "le": "≤",
    "leq": "≤",
    "ge": "≥",
    "geq": "≥",
    "neq": "≠",
    "ne": "≠",
    "approx": "≈",
    "sim": "~",
    "propto": "proportional to",
    "infty": "infinity",
    "sum": "sum",
    "prod": "product",
    "to": "→",
    "rightarrow": "→",
    "leftarrow": "←",
    "Rightarrow": "⇒",
    "mapsto": "↦",
    "ldots": "...",
    "dots": "...",
    "cdots": "...",
    "prime": "′",
    "circ": "°",
    "degree": "°",
    "partial": "partial",
    "nabla": "nabla",
    "in": "in",
    "langle": "⟨",
    "rangle": "⟩",
    "lfloor": "floor(",
    "rfloor": ")",
    "lceil": "ceil(",
    "rceil": ")",
    "vert": "|",
    "mid": "|",
    "ell": "l",
}
_SPACING = {",", ";", ":", "!", " ", "quad", "qquad", "left", "right", "big", "Big", "bigg", "Bigg", "displaystyle"}
_FONTS = r"\\(?:mathrm|mathbf|mathit|mathsf|mathtt|mathcal|mathdefault|text|textrm|textbf|operatorname|boldsymbol)"
_GROUP = r"\{([^{}]*)\}"


def _math_words(tex):
    """One $...$ segment of matplotlib's mathtext in words: \\theta_{0} -> "theta 0", \\frac{a}{b} -> "a/b"."""
    text = tex
    for _ in range(8):  # innermost groups first: fonts, fractions and roots may nest
        before = text
        text = re.sub(_FONTS + _GROUP, r"\1", text)
        text = re.sub(r"\\[dt]?frac" + _GROUP + _GROUP, lambda m: f"{_operand(m[1])}/{_operand(m[2])}", text)
        text = re.sub(r"\\sqrt" + _GROUP, r"sqrt(\1)", text)
        text = re.sub(r"\^" + _GROUP, lambda m: "^" + _operand(m[1]), text)
        text = re.sub(r"_" + _GROUP, r" \1", text)
        if text == before:
            break
    text = re.sub(r"_(\\?\w)", r" \1", text)  # a one-character subscript: \theta_i -> theta i

    def command(match):
        name = match[1]
        if name in _SPACING:
            return " "
        if name in _SYMBOLS:
            return f" {_SYMBOLS[name]} "
        return f" {name} "  # \sin, \cos, \log, \exp, \max, ...: the name is the word

    text = re.sub(r"\\([A-Za-z]+|[,;:! ])", command, text)
    text = text.replace("{", "").replace("}", "")
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([()/^·,])\s*", lambda m: m[1] if m[1] != "·" else " · ", text).replace("( ", "(")


def _operand(text):
    """A fraction's or power's part: bare when it is one token, else in parentheses."""
    text = text.strip()
    return text if re.fullmatch(r"\\?\w+|\w+\([^()]*\)", text) else f"({text})"


def words(text, separator="; "):
    """A figure's text (a title, label, tick or legend entry) as a screen reader should hear it.

    Its TeX (matplotlib's mathtext between $ signs) in words, e.g. $\\theta_{0}$ -> "theta 0"; its
    lines joined with `separator` (a title's lines say two things: "; "; an axis label wrapped to fit
    is one phrase: " "), a line that ends in punctuation with a space; runs of spaces collapsed.
    """
    text = str(text)
    # mathtext: the text between unescaped $ signs, when there is an even number of them
    parts = re.split(r"(?<!\\)\$", text)
    if len(parts) % 2 == 1 and len(parts) > 1:
        text = "".join(_math_words(part) if i % 2 else part for i, part in enumerate(parts))
    text = text.replace(r"\$", "$")
    lines = [" ".join(line.split()) for line in text.splitlines()]
    joined = ""
    for line in filter(None, lines):
        if joined:
            joined += " " if joined[-1] in ".,:;!?" else separator
        joined += line
    return joined
