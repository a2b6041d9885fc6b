"""What every grader shares: the verdict (`Feedback`), a safe call of the learner's code, and
the conversion of any numeric answer to NumPy.

A grader runs the learner's function on inputs it has not seen, compares with the library's
reference, recognises typical mistakes and returns a `Feedback` that prints
"[exercise] Correct: ..." or "[exercise] Not yet: <symptom>"; `bool(feedback)` tells right from
wrong. The symptom says what is wrong, measured (which input, expected and got), never how to
fix it: the fix is in tiered hints the learner asks for, `check_...(answer, hint=1)` for a
question that points at the idea, up to `hint=N` (3 everywhere) for the formula. Every grader
takes them the same way, through `graded`: `hint_level` checks the argument, `with_hints` attaches the
tiers, and whatever the learner returned, the answer is a Feedback, never a traceback.
The requirement tests of notebook 02 return the same type without an exercise name, printed
"pass: ..." or "FAIL: ...". The graders themselves live in their chapter's module.
"""

import contextlib
import copy
import io
import numbers
from dataclasses import dataclass, replace

import numpy as np
import torch


@dataclass(frozen=True)
class Feedback:
    """The verdict on one exercise (or, with exercise None, one requirement test): passed or not, and why.

    message: the symptom (or what a right answer achieved). hints: the tiers, most gentle first,
    the formula last; shown: how many of them print (a passed Feedback prints none).
    """

    exercise: str | None
    passed: bool
    message: str
    hints: tuple[str, ...] = ()
    shown: int = 0

    def __post_init__(self):
        if not 0 <= self.shown <= len(self.hints):
            raise ValueError(f"shown must be from 0 to len(hints) = {len(self.hints)}, got {self.shown}")

    def __bool__(self):
        return self.passed

    def __str__(self):
        if self.exercise is None:  # a requirement test of notebook 02
            return f"{'pass' if self.passed else 'FAIL'}: {self.message}"
        verdict = "Correct" if self.passed else "Not yet"
        lines = [f"[{self.exercise}] {verdict}: {self.message}"]
        if self.passed or not self.hints:
            return lines[0]
        total = len(self.hints)
        lines += [f"Hint {k}/{total}: {hint}" for k, hint in enumerate(self.hints[: self.shown], start=1)]
        if self.shown < total:
            lines.append(f"Stuck? Run the check again with hint={self.shown + 1} (of {total}).")
        return "\n".join(lines)

    def __repr__(self):
        return str(self)


def hint_level(value, hints):
    """The `hint` argument of a check, validated: an int from 0 (no hint) to len(hints) (the formula)."""
    allowed = f"an int from 0 (no hint) to {len(hints)} (the formula)"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"hint must be {allowed}, got {value!r} ({type(value).__name__})")
    if not 0 <= value <= len(hints):
        raise ValueError(f"hint must be {allowed}, got {value}")
    return int(value)


def with_hints(feedback, hints, shown):
    """`feedback` with its tiers and `shown` of them printed; a passed Feedback is returned unchanged.

    A recognised mistake brings its own first tiers (about that mistake); the grader's general
    tiers fill the rest, so every failure of one grader has the same number of tiers and
    `hint=len(hints)` always gives that grader's formula.
    """
    if feedback.passed:
        return feedback
    own = feedback.hints
    if len(own) > len(hints):
        raise ValueError(f"a mistake may bring at most {len(hints)} tiers, got {len(own)}: {own}")
    return replace(feedback, hints=tuple(own) + tuple(hints[len(own) :]), shown=shown)


def graded(exercise, check, answer, hints, hint):
    """What every check_* returns: `check(answer)`'s Feedback with its tiers, `hint` of them shown.

    The hint level is validated first (a bad `hint` raises before the learner's code runs). The check
    itself never ends in a traceback: an error it did not foresee, on whatever the learner returned,
    becomes a Not yet that says so (and asks for a report, since a right answer should never get there).
    """
    shown = hint_level(hint, hints)
    try:
        feedback = check(answer)
    except Exception as error:  # a grader's own slip on an answer nobody foresaw: Feedback, never a traceback
        feedback = Feedback(
            exercise,
            False,
            f"the checker could not read your answer ({type(error).__name__}: {error}). Return what the exercise "
            "asks for; if you did, this is a bug in the checker: please report it",
        )
    return with_hints(feedback, hints, shown)


def run_safely(exercise, function, *args):
    """Call the learner's function twice on copies of `args`; return (value, None) or (None, Feedback).

    The Feedback names what a learner typically got wrong around the maths: the function raised,
    returned None (a forgotten `return`, or a `print` instead of one), changed its input in place
    (an array, a tensor, a list or a dict such as a config), or gave two different answers for the
    same input. Test the failure with `is not None`: a failed Feedback is falsy.
    """
    originals = [_snapshot(arg) for arg in args]
    value, failure = _call(exercise, function, args)
    if failure is not None:
        return None, failure
    for position, (arg, original) in enumerate(zip(args, originals, strict=True), start=1):
        if not _same(arg, original):
            return None, Feedback(
                exercise,
                False,
                f"your function changed its input in place (argument {position}, {_describe(original)}"
                f"{_what_changed(original, arg)}): work on a copy (x.copy() for NumPy, x.clone() for torch, "
                "dict(config) for a dict) and return the result",
            )
    again, failure = _call(exercise, function, [_snapshot(original) for original in originals])
    if failure is None and not _same(again, value):
        failure = Feedback(
            exercise,
            False,
            "two calls with the same input gave different answers: does your function keep something between "
            "calls (a global, a default argument it changes)?",
        )
    return (None, failure) if failure is not None else (value, None)


def _call(exercise, function, args):
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            value = function(*args)
    except (Exception, SystemExit) as error:  # the learner's code may raise anything (even exit()); report it
        return None, Feedback(exercise, False, f"your function raised {type(error).__name__}: {error}")
    if value is None:
        shown = printed.getvalue().strip()
        if shown:
            first = shown.splitlines()[0][:60]
            return None, Feedback(
                exercise,
                False,
                f"your function printed its answer ({first!r}...) but returned None: use `return`, not `print`",
            )
        return None, Feedback(exercise, False, "your function returned None: did you forget the `return` line?")
    return value, None


def _snapshot(value):
    """A copy of an argument to compare with after the call (arrays, tensors, lists, dicts; others as they are)."""
    if hasattr(value, "detach") and hasattr(value, "clone"):
        return value.detach().clone()
    if isinstance(value, (np.ndarray, list, dict, tuple)):
        return copy.deepcopy(value)
    return value


def _same(a, b):
    """True if two arguments or two answers hold the same values (exactly: the same code on the same input).

    Numbers are compared as numbers; dicts, lists and tuples entry by entry (a config dict, a ragged
    list); plain values (strings, complex numbers) with ==. Other objects (a module, a function) cannot
    be told apart by value and count as the same.
    """
    if a is b:
        return True
    x, y = as_numbers(a), as_numbers(b)
    if x is not None or y is not None:
        return x is not None and y is not None and x.shape == y.shape and bool(np.array_equal(x, y, equal_nan=True))
    if isinstance(a, dict) or isinstance(b, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, (str, bytes, complex)) or isinstance(b, (str, bytes, complex)):
        return type(a) is type(b) and (a == b or (a != a and b != b))  # complex NaN: the same answer twice
    return True


def _describe(value):
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"shape {tuple(shape)}"
    if isinstance(value, dict):
        return "a dict"
    return type(value).__name__


def _what_changed(original, now):
    """For a dict argument, which keys the call added, removed or changed (': key 'x' added'); else ''."""
    if not (isinstance(original, dict) and isinstance(now, dict)):
        return ""
    added = [key for key in now if key not in original]
    removed = [key for key in original if key not in now]
    changed = [key for key in original if key in now and not _same(original[key], now[key])]
    parts = [f"key {key!r} added" for key in added] + [f"key {key!r} removed" for key in removed]
    parts += [f"key {key!r} changed from {original[key]!r} to {now[key]!r}" for key in changed]
    return f": {', '.join(parts[:3])}" if parts else ""


def as_numbers(value):
    """A learner's result (NumPy array, torch tensor incl. bfloat16, sparse or requiring grad, list) as float64.

    None for what only looks numeric: strings ("0.5" would convert), complex numbers (float64
    would silently drop the imaginary part), tensors without values (on the meta device, nested) and
    objects; a grader then reports what it got (`describe`). Never raises: a learner may return anything.
    """
    if value is None or isinstance(value, (str, bytes, dict)):
        return None
    try:
        if _is_tensor(value):
            value = _tensor_values(value)
        elif isinstance(value, (list, tuple)) and any(_is_tensor(leaf) for leaf in _leaves(value)):
            value = _nested(value)  # a list of tensors, e.g. one 0-d tensor per offset
        if value is None:
            return None
        raw = np.asarray(value)
    except Exception:  # ragged lists, objects whose conversion fails: whatever the learner built
        return None
    if raw.dtype.kind not in "biuf":  # strings (U, S), objects (O), complex (c), dates
        return None
    return raw.astype(np.float64)


def _is_tensor(value):
    return hasattr(value, "detach") and hasattr(value, "is_floating_point")


def _tensor_values(tensor):
    """A tensor's values as NumPy (float64 for floating point), or None when it holds none we can read as reals."""
    if tensor.device.type == "meta" or tensor.is_nested or tensor.is_complex():
        return None
    tensor = tensor.detach().cpu()
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()  # sparse COO, CSR, ...: the same numbers, stored another way
    tensor = tensor.resolve_conj().resolve_neg()  # lazy views: .numpy() refuses them
    return (tensor.double() if tensor.is_floating_point() else tensor).numpy()


def _leaves(value):
    for item in value:
        if isinstance(item, (list, tuple)):
            yield from _leaves(item)
        else:
            yield item


def _nested(value):
    """A list (of lists) holding tensors, each tensor as NumPy; None if one of them holds no readable values."""
    items = []
    for item in value:
        converted = (
            _nested(item) if isinstance(item, (list, tuple)) else (_tensor_values(item) if _is_tensor(item) else item)
        )
        if converted is None:
            return None
        items.append(converted)
    return items


def describe(value):
    """What a learner returned, in words for a Not yet about types: 'a NumPy array of strings (dtype <U3)',
    'a Tensor of complex numbers (dtype torch.complex64)', 'a list of str', 'a list of rows of different
    lengths', 'an int'. as_numbers refuses strings, complex numbers and objects; the grader says what it got."""
    name = type(value).__name__
    if isinstance(value, (list, tuple)):
        rows = [item for item in value if isinstance(item, (list, tuple))]
        if rows and (len(rows) < len(value) or len({len(row) for row in rows}) > 1):
            return f"{_article(name)} of rows of different lengths"  # numbers NumPy cannot make a table of
        items = [leaf for item in value for leaf in (item if isinstance(item, (list, tuple)) else [item])]
        kinds = sorted({type(item).__name__ for item in items})
        return f"{_article(name)} of {' and '.join(kinds)}" if kinds else f"an empty {name}"
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        return _article(name)
    container = "a NumPy array" if isinstance(value, np.ndarray) else _article(name)
    if _is_tensor(value):
        if value.device.type == "meta":
            return f"{container} on the meta device (a shape without values)"
        if value.is_nested:
            return f"a nested {name} (rows of different lengths)"
        if value.layout != torch.strided:
            container = f"a sparse {name} (layout {value.layout})"
    text = str(dtype)
    if getattr(dtype, "kind", "") in ("U", "S") or text.startswith(("<U", "|S")):
        return f"{container} of strings (dtype {text})"
    if "complex" in text:
        return f"{container} of complex numbers (dtype {text})"
    return f"{container} of dtype {text}"


def holds_integers(value):
    """True if `value` is of an integer type: an int (not a bool), a NumPy or torch integer array, a list of ints.

    For the exercises whose answer is a count, an index or an id: 4.0 holds the right number but is a
    float, which no table can be indexed by; a grader says so (with `describe`).
    """
    if isinstance(value, (bool, np.bool_)):
        return False
    if _is_tensor(value):
        return not (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool)
    if isinstance(value, (list, tuple)):
        leaves = list(_leaves(value))
        return bool(leaves) and all(holds_integers(leaf) for leaf in leaves)
    try:
        return np.asarray(value).dtype.kind in "iu"
    except Exception:  # a ragged list, an object: not integers
        return False


def _article(name):
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


# Half an ulp, relative to the value: bfloat16 keeps 8 significant bits, float16 11 (bfloat16 first: its
# name contains "float16").
_HALF_ROUNDING = (("bfloat16", 2.0**-8), ("float16", 2.0**-11))


def allowed_error(value, reference, floor):
    """How far each entry of a right answer `value` may sit from the float64 `reference`.

    floor: what a faithful float32 computation of the exercise can be off, set per grader far below
    every typical mistake. A float16 or bfloat16 answer adds its own rounding, half an ulp of each
    value (2**-11 or 2**-8 of |reference|): a value smaller than the tolerance of a half-precision
    number keeps a small tolerance, and a float16 answer is held to float16's precision.
    """
    dtype = str(getattr(value, "dtype", ""))
    rounding = next((share for name, share in _HALF_ROUNDING if name in dtype), 0.0)
    return floor + rounding * np.abs(np.asarray(reference, dtype=np.float64))
