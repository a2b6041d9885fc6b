"""Checkers that grade a learner's answer and say what to look at when it is wrong.

Each `check_*` function runs the learner's code on inputs it has not seen, compares with the
library's reference, recognises typical mistakes, and returns a `Feedback` that prints as one
line: "Correct: ..." or "Not yet: <hint>". `bool(feedback)` tells right from wrong.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Feedback:
    """The verdict on one exercise: passed or not, and the message for the learner."""

    exercise: str
    passed: bool
    message: str

    def __bool__(self):
        return self.passed

    def __str__(self):
        verdict = "Correct" if self.passed else "Not yet"
        return f"[{self.exercise}] {verdict}: {self.message}"

    def __repr__(self):
        return str(self)


def _run(exercise, function, *args, **kwargs):
    """Call the learner's function; return (value, None) or (None, Feedback) if it raised."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # the learner's code may raise anything; report it as a hint
        return None, Feedback(exercise, False, f"your function raised {type(error).__name__}: {error}")
