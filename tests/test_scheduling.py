"""tests/scheduling.py: the longest groups of tests are collected first; the recorded times name real groups."""

import ast
import json
from pathlib import Path
from types import SimpleNamespace

import scheduling

ROOT = Path(__file__).resolve().parent.parent


def _items(*nodeids):
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_groups_go_longest_first_each_kept_together_and_in_order():
    items = _items(
        "tests/test_a.py::test_1",
        "tests/test_a.py::test_2",
        "tests/test_b.py::TestX::test_1[p]",
        "tests/test_b.py::TestX::test_1[q]",
        "tests/test_b.py::test_3",
        "notebooks/01.ipynb::Cell 0",
        "tests/test_c.py::test_1",
    )
    seconds = {"tests/test_b.py::TestX": 90.0, "notebooks/01.ipynb": 30.0, "tests/test_a.py": 5.0}
    scheduling.longest_first(items, seconds)
    assert [item.nodeid for item in items] == [
        "tests/test_b.py::TestX::test_1[p]",
        "tests/test_b.py::TestX::test_1[q]",
        "notebooks/01.ipynb::Cell 0",
        "tests/test_a.py::test_1",
        "tests/test_a.py::test_2",
        "tests/test_b.py::test_3",  # no time recorded: after the timed groups, in collection order
        "tests/test_c.py::test_1",
    ]


def test_the_recorder_sums_each_groups_phases_and_keeps_the_long_ones(tmp_path):
    recorder = scheduling.Recorder(tmp_path / "durations.json")
    for nodeid, duration in [
        ("tests/test_a.py::test_1", 1.5),
        ("tests/test_a.py::test_1", 0.75),  # its teardown
        ("tests/test_b.py::TestX::test_1[p]", 9.0),
        ("tests/test_c.py::test_1", 0.5),
    ]:
        recorder.add(SimpleNamespace(nodeid=nodeid, duration=duration))
    recorder.write()
    written = json.loads((tmp_path / "durations.json").read_text())
    assert list(written.items()) == [("tests/test_b.py::TestX", 9.0), ("tests/test_a.py", 2.2)]


def test_every_recorded_group_is_a_module_or_class_of_the_suite():
    seconds = scheduling.recorded()
    assert len(seconds) > 20 and all(value > 0 for value in seconds.values())
    stale = []
    for group in seconds:
        path, *rest = group.split("::")
        if not (ROOT / path).is_file():
            stale.append(group)
        elif rest:
            module = ast.parse((ROOT / path).read_text())
            classes = {node.name for node in module.body if isinstance(node, ast.ClassDef)}
            stale += [group] if rest[0] not in classes else []
    assert not stale, f"tests/durations.json names groups that no longer exist (record it again): {stale}"
