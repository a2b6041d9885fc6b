"""Does a position signal meet the requirements? One numerical test per requirement.

A candidate is any function `encode(n, d_model)` that returns the (n, d_model) table of
positions 0..n-1, like `pe_lib.integer_encoding` or `pe_lib.sinusoidal_encoding`. Each test
runs the candidate at a few lengths, measures one thing and returns a `Feedback` (pe_lib.grading): passed or
not, with the number it measured as evidence. `requirements_table` runs every test on every
candidate, so the course's table of requirements is computed, never typed by hand.

A finite test cannot prove a property for every length; it can catch a candidate failing it.
The lengths are small on purpose (defaults: d_model=8, a "training length" of 64, and 1024 for
"beyond"), so a full table takes milliseconds.

Used in notebook 02.
"""

import inspect

import numpy as np

from .grading import Feedback


def _verdict(passed, evidence):
    """A requirement test's outcome: a Feedback without an exercise name."""
    return Feedback(None, passed, evidence)


# Relative tolerance for "the same number": far above float64 rounding, far below any real difference.
_RTOL = 1e-9


class _Raised(Exception):
    """A candidate raised; carries a short description for the evidence text."""


def _table(encode, n, d_model):
    """encode(n, d_model) as a float array of shape (n, d_model); _Raised if it raised or has another shape."""
    try:
        table = np.asarray(encode(n, d_model), dtype=float)
    except Exception as error:  # a candidate may raise anything; the verdict reports it
        raise _Raised(f"n={n} raises {type(error).__name__}: {error}") from None
    if table.shape != (n, d_model):
        raise _Raised(f"n={n} gives shape {table.shape}, expected {(n, d_model)}")
    return table


def _same(a, b):
    """True when two numbers (or arrays) agree to _RTOL relative to their size (at least 1)."""
    scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    return bool(np.max(np.abs(np.asarray(a) - np.asarray(b))) <= _RTOL * scale)


def _g(x):
    """A number for evidence text: 4 significant digits, thousands separated.

    Sizes below the tolerance of these tests are rounding, which differs from one CPU to the next:
    they print as 0, so the evidence reads the same on every machine.
    """
    x = float(x)
    if abs(x) < _RTOL:
        return "0"
    if x == int(x) and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.4g}" if abs(x) >= 1e-3 else f"{x:.3g}"


def _distinct_rows(table):
    """Number of distinct rows, rows closer than _RTOL (relative) counting as one."""
    scale = max(1.0, float(np.max(np.abs(table)))) if table.size else 1.0
    return len(np.unique(np.round(table / (_RTOL * scale)), axis=0))


def _pairs(table, offset):
    """Rows p and p + offset for every p that has a partner: two (n - offset, d) arrays."""
    return table[: len(table) - offset], table[offset:]


def unique(encode, *, d_model=8, n=64):
    """Every position gets its own vector: the closest two of n rows are still apart."""
    try:
        table = _table(encode, n, d_model)
    except _Raised as error:
        return _verdict(False, str(error))
    squared = np.sum((table[:, None, :] - table[None, :, :]) ** 2, axis=-1)
    squared[np.diag_indices(n)] = np.inf
    closest = float(np.sqrt(squared.min())) if n > 1 else np.inf
    scale = max(1.0, float(np.max(np.abs(table))))
    return _verdict(closest > _RTOL * scale, f"closest two of {n} rows are {_g(closest)} apart")


def bounded(encode, *, d_model=8, train_len=64, test_len=1024):
    """Values do not grow with the sequence: max |value| at the longest length <= at train_len.

    Lengths train_len, 2*train_len, 4*train_len, ... up to test_len; a candidate that cannot
    produce a length is measured up to the longest one it can.
    """
    doublings = [train_len * 2**k for k in range(64) if train_len * 2**k < test_len]
    lengths, largest = [], []
    for n in [*doublings, test_len]:
        try:
            table = _table(encode, n, d_model)
        except _Raised as error:
            if not lengths:
                return _verdict(False, str(error))
            break
        lengths.append(n)
        largest.append(float(np.max(np.abs(table))))
    if len(lengths) < 2:
        return _verdict(False, f"cannot produce a table longer than n={train_len}")
    passed = all(np.isfinite(largest)) and largest[-1] <= largest[0] * (1 + _RTOL) + _RTOL
    note = "" if lengths[-1] == test_len else " (the longest it allows)"
    evidence = f"max |value| {_g(largest[0])} at n={lengths[0]}, {_g(largest[-1])} at n={lengths[-1]}{note}"
    return _verdict(passed, evidence)


def length_independent(encode, *, d_model=8, train_len=64):
    """The vector of position p is the same in a sequence of train_len and of 2*train_len."""
    try:
        short = _table(encode, train_len, d_model)
        long = _table(encode, 2 * train_len, d_model)
    except _Raised as error:
        return _verdict(False, str(error))
    change = float(np.max(np.abs(long[:train_len] - short)))
    where = f"positions 0..{train_len - 1} at n={train_len} vs n={2 * train_len}"
    return _verdict(_same(long[:train_len], short), f"{where}: largest change {_g(change)}")


def _per_offset(encode, d_model, train_len, max_offset, measure):
    """Per length n in (train_len, 2*train_len): [(k, smallest, largest) of measure(PE(p), PE(p+k)) over every p].

    The lengths are kept apart: a value that changes with the length is the length-independence
    test's finding, and counting it here again would fail a candidate twice for one flaw.
    """
    by_length = {}
    for n in (train_len, 2 * train_len):
        table = _table(encode, n, d_model)
        by_length[n] = []
        for offset in range(1, max_offset + 1):
            values = measure(*_pairs(table, offset))
            by_length[n].append((offset, float(values.min()), float(values.max())))
    return by_length


def _offset_verdict(by_length, what):
    """Pass if, at each length, every offset has one value; otherwise name the length and offset that spread most."""
    failing = [
        (high - low, n, offset, low, high)
        for n, ranges in by_length.items()
        for offset, low, high in ranges
        if not _same(low, high)
    ]
    if failing:
        _, n, offset, low, high = max(failing)
        return _verdict(False, f"n={n}, positions {offset} apart: {what} from {_g(low)} to {_g(high)}")
    lengths = list(by_length)
    offsets = len(by_length[lengths[0]])
    first = " and ".join(_g(by_length[n][0][1]) for n in lengths)
    where = " and at ".join(f"n={n}" for n in lengths)
    return _verdict(True, f"one {what} per offset 1..{offsets} at {where} (offset 1: {first})")


def consistent_distance(encode, *, d_model=8, train_len=64, max_offset=8):
    """Positions k apart are the same distance apart everywhere: ||PE(p+k) - PE(p)|| depends on k only.

    Checked for k = 1..max_offset and every p, separately in sequences of train_len and 2*train_len.
    """
    try:
        ranges = _per_offset(encode, d_model, train_len, max_offset, lambda a, b: np.linalg.norm(b - a, axis=1))
    except _Raised as error:
        return _verdict(False, str(error))
    return _offset_verdict(ranges, "distance")


def defined_beyond(encode, *, d_model=8, train_len=64, test_len=1024):
    """Positions past the training length get new, finite vectors, and the trained ones stay put.

    Builds the table for test_len positions: it must exist, be finite, have test_len distinct
    rows, and agree with the train_len table on positions 0..train_len-1.
    """
    try:
        short = _table(encode, train_len, d_model)
        long = _table(encode, test_len, d_model)
    except _Raised as error:
        return _verdict(False, str(error))
    if not np.all(np.isfinite(long)):
        return _verdict(False, f"n={test_len} gives non-finite values")
    if not _same(long[:train_len], short):
        change = float(np.max(np.abs(long[:train_len] - short)))
        return _verdict(False, f"at n={test_len} the first {train_len} positions move by up to {_g(change)}")
    distinct = _distinct_rows(long)
    if distinct < test_len:
        return _verdict(False, f"n={test_len} gives only {distinct} distinct rows")
    return _verdict(True, f"n={test_len}: {test_len} distinct finite rows, the first {train_len} unchanged")


def deterministic(encode, *, d_model=8, train_len=64):
    """Two calls give the same table (a random table would change every time it is built)."""
    try:
        first = _table(encode, train_len, d_model)
        second = _table(encode, train_len, d_model)
    except _Raised as error:
        return _verdict(False, str(error))
    if np.array_equal(first, second):
        return _verdict(True, "two calls give identical tables")
    change = float(np.max(np.abs(first - second)))
    return _verdict(False, f"two calls differ by up to {_g(change)}")


def offset_only_similarity(encode, *, d_model=8, train_len=64, max_offset=8):
    """What attention sees, PE(p) . PE(p+k), depends on the offset k only, not on where p is.

    Checked for k = 1..max_offset and every p, separately in sequences of train_len and 2*train_len.
    """
    try:
        ranges = _per_offset(encode, d_model, train_len, max_offset, lambda a, b: np.sum(a * b, axis=1))
    except _Raised as error:
        return _verdict(False, str(error))
    return _offset_verdict(ranges, "dot product")


# (name, test) in the order the table shows them.
REQUIREMENTS = (
    ("unique", unique),
    ("bounded", bounded),
    ("independent of length", length_independent),
    ("consistent distance", consistent_distance),
    ("defined beyond training length", defined_beyond),
    ("deterministic", deterministic),
    ("dot product depends on offset only", offset_only_similarity),
)


class RequirementsTable:
    """Verdicts of every requirement for every candidate; prints as a grid of pass/FAIL."""

    def __init__(self, verdicts, settings):
        self.verdicts = verdicts  # {candidate: {requirement: _verdict}}
        self.settings = settings

    @property
    def candidates(self):
        return list(self.verdicts)

    @property
    def requirements(self):
        return list(next(iter(self.verdicts.values()))) if self.verdicts else []

    def passed(self, candidate, requirement):
        """True if `candidate` passed `requirement` (names as in the table)."""
        return self.verdicts[candidate][requirement].passed

    def evidence(self, candidate):
        """What was measured for one candidate, one line per requirement."""
        width = max(len(name) for name in self.requirements)
        lines = [f"{candidate}:"]
        for name, verdict in self.verdicts[candidate].items():
            lines.append(f"  {name:<{width}}  {verdict}")
        return "\n".join(lines)

    def __str__(self):
        width = max(len(name) for name in self.requirements)
        columns = [max(len(c), 4) for c in self.candidates]
        header = " " * width + "  " + "  ".join(f"{c:>{w}}" for c, w in zip(self.candidates, columns, strict=True))
        lines = [header]
        for name in self.requirements:
            cells = ("pass" if self.passed(c, name) else "FAIL" for c in self.candidates)
            lines.append(f"{name:<{width}}  " + "  ".join(f"{x:>{w}}" for x, w in zip(cells, columns, strict=True)))
        settings = ", ".join(f"{key}={value}" for key, value in self.settings.items())
        lines.append(f"({settings})")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def requirements_table(candidates, *, d_model=8, train_len=64, test_len=1024, max_offset=8):
    """Run every requirement's test on every candidate.

    candidates: {name: encode} with encode(n, d_model) -> (n, d_model) table.
    Returns a RequirementsTable: print it for the grid, `.evidence(name)` for the numbers,
    `.passed(name, requirement)` for asserts.
    """
    if not candidates:
        raise ValueError("candidates must name at least one encoding, e.g. {'integer': pe_lib.integer_encoding}")
    for name, encode in candidates.items():
        if not callable(encode):
            raise TypeError(f"candidate {name!r} must be a function encode(n, d_model), got {type(encode).__name__}")
    if not (isinstance(train_len, int) and isinstance(test_len, int) and 2 <= train_len < test_len):
        raise ValueError(f"need integers 2 <= train_len < test_len, got train_len={train_len}, test_len={test_len}")
    if not (isinstance(max_offset, int) and 1 <= max_offset < train_len):
        raise ValueError(f"max_offset must be an int in [1, train_len={train_len}), got {max_offset}")
    options = {"d_model": d_model, "train_len": train_len, "test_len": test_len, "max_offset": max_offset}
    verdicts = {}
    for name, encode in candidates.items():
        row = {}
        for requirement, test in REQUIREMENTS:
            accepted = inspect.signature(test).parameters
            row[requirement] = test(encode, **{k: v for k, v in options.items() if k in accepted})
        verdicts[name] = row
    return RequirementsTable(verdicts, options)
