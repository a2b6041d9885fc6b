"""scripts/nb_hygiene.py: every committed notebook looks freshly run and leaks nothing; the checker finds each fault.

The same check as a command: `.venv/bin/python scripts/nb_hygiene.py`.
"""

import importlib.util
import json
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("nb_hygiene", ROOT / "scripts" / "nb_hygiene.py")
nb_hygiene = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(nb_hygiene)

NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def test_every_committed_notebook_is_clean():
    assert len(NOTEBOOKS) >= 12
    found = {path.relative_to(ROOT).as_posix(): nb_hygiene.check(path) for path in NOTEBOOKS}
    dirty = {name: problems for name, problems in found.items() if problems}
    assert not dirty, "notebooks that are not clean (scripts/nb_hygiene.py):\n" + "\n".join(
        f"{name}:\n  " + "\n  ".join(problems) for name, problems in dirty.items()
    )


def _code(source, count, outputs=()):
    return {"cell_type": "code", "execution_count": count, "metadata": {}, "source": source, "outputs": list(outputs)}


def _stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


ERROR = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": []}


def _notebook(tmp_path, cells, kernel="python3"):
    path = tmp_path / "nb.ipynb"
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": kernel, "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")
    return path


def test_a_freshly_run_notebook_is_clean(tmp_path):
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
        _code("x = 1", 1),
        _code("", None),  # an empty cell is never run
        _code("print(x)", 2, [_stream("1\n"), _stream("done\n", "stderr")]),
        _code("print('< 1e-06: True')", 3, [_stream("< 1e-06: True\n")]),
    ]
    assert nb_hygiene.check(_notebook(tmp_path, cells)) == []


@pytest.mark.parametrize(
    ("cells", "kernel", "expected"),
    [
        ([_code("a = 1", 2), _code("b = 2", 3)], "python3", "not run top to bottom"),
        ([_code("a = 1", 1), _code("b = 2", 1)], "python3", "not run top to bottom"),
        ([_code("a = 1", 1)], "pe-dev", "kernelspec name is 'pe-dev'"),
        ([_code("1 / 0", 1, [ERROR])], "python3", "stored error output"),
        ([_code("warn()", 1, [_stream("UserWarning: careful\n", "stderr")])], "python3", "stderr shows"),
        ([_code("print(err)", 1, [_stream("2.4e-07\n")])], "python3", "prints a tiny number '2.4e-07'"),
        ([_code("fig", 1, [_stream("<Figure at 0x7f3a2b1c9d00>\n")])], "python3", "memory address"),
        ([_code(f"open('{tempfile.gettempdir()}/x')", 1)], "python3", "source mentions a machine path"),
        ([_code("print(path)", 1, [_stream(f"{ROOT}/data.json\n")])], "python3", "output leaks a machine path"),
    ],
    ids=["starts-at-2", "count-repeats", "kernel", "error", "stderr-warning", "noise", "address", "path", "leak"],
)
def test_each_fault_is_found(tmp_path, cells, kernel, expected):
    problems = nb_hygiene.check(_notebook(tmp_path, cells, kernel))
    assert any(expected in problem for problem in problems), problems


def test_the_command_exits_1_on_a_dirty_folder(tmp_path, capsys):
    _notebook(tmp_path, [_code("a = 1", 5)])
    assert nb_hygiene.main([str(tmp_path)]) == 1
    assert "0/1 notebooks clean" in capsys.readouterr().out
