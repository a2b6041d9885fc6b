"""The longest groups of tests first, so that the two pytest-xdist workers finish together.

pytest-xdist's loadscope (pyproject.toml) hands out whole modules (or classes) in the order they are
collected, and gives a worker its next group while it still has two tests to go. Its default order (the
groups with the most tests first) left a SmolLM2 test module or a notebook, each a minute or two, for the
end: one worker ran it while the other sat idle. tests/durations.json holds how long each group took in
a full run (summed over its tests); the groups are collected longest first, the unknown ones last in
their usual order. The times only order the work: a stale or missing entry makes a run slower, never
wrong.

Record them again after a change that moves minutes (a new notebook, a new browser test):

    PE_RECORD_DURATIONS=tests/durations.json .venv/bin/python -m pytest
"""

import json
import os
from collections import defaultdict
from pathlib import Path

DURATIONS = Path(__file__).resolve().parent / "durations.json"
RECORD = "PE_RECORD_DURATIONS"
KEPT_S = 2.0  # shorter groups are left out of the file: their order hardly matters


def scope(nodeid):
    """The group pytest-xdist's loadscope sends to one worker: the module, or the class, of a test."""
    return nodeid.rsplit("::", 1)[0]


def recorded(path=DURATIONS):
    """{group: seconds} from the file; empty if there is none."""
    return json.loads(path.read_text()) if path.exists() else {}


def longest_first(items, seconds):
    """`items` sorted by their group's recorded seconds, longest first; stable, so that each group stays
    together and in its own order, and groups without a time keep theirs, after the timed ones."""
    items.sort(key=lambda item: -seconds.get(scope(item.nodeid), 0.0))


class Recorder:
    """Sums each group's time from the test reports (the controller gets every worker's) and writes the file."""

    def __init__(self, path):
        self.path, self.seconds = Path(path), defaultdict(float)

    def add(self, report):
        self.seconds[scope(report.nodeid)] += report.duration  # setup, call and teardown

    def write(self):
        kept = {group: round(s, 1) for group, s in sorted(self.seconds.items(), key=lambda kv: -kv[1]) if s >= KEPT_S}
        self.path.write_text(json.dumps(kept, indent=1) + "\n")


def recorder():
    """A Recorder when PE_RECORD_DURATIONS names a file and this is not an xdist worker; else None."""
    path = os.environ.get(RECORD, "").strip()
    return Recorder(path) if path and not os.environ.get("PYTEST_XDIST_WORKER") else None
