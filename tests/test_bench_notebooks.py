"""Smoke run of benchmarks/bench_notebooks.py on a tiny notebook and one explorer, so it never rots."""

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

import bench_notebooks  # noqa: E402


def _tiny_notebook(path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# tiny"),
        nbformat.v4.new_code_cell("import json\nimport math as m\nfrom os import (\n    path,\n)\nanswer = 6 * 7"),
        nbformat.v4.new_code_cell("assert answer == 42"),
    ]
    nbformat.write(notebook, path)
    return path


def test_first_cell_imports_keeps_imports_and_magics_only():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("import nothing from markdown"),
        nbformat.v4.new_code_cell("%matplotlib inline\nimport numpy as np\nfrom os import (\n    path,\n)\nx = 1"),
        nbformat.v4.new_code_cell("import torch"),
    ]
    imports = bench_notebooks.first_cell_imports(notebook)
    assert imports == "%matplotlib inline\nimport numpy as np\nfrom os import (\n    path,\n)"


def test_run_notebooks_measures_time_floor_and_memory(tmp_path):
    path = _tiny_notebook(tmp_path / "01_tiny.ipynb")
    broken = _tiny_notebook(tmp_path / "02_broken.ipynb")
    notebook = nbformat.read(broken, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("1 / 0"))
    nbformat.write(notebook, broken)
    before = path.read_bytes()
    rows = bench_notebooks.run_notebooks([path, broken], floor_repeats=1)
    assert path.read_bytes() == before, "the benchmark must not write notebooks back"
    row, failed = rows
    assert failed["notebook"] == "02_broken.ipynb" and not failed["ok"]
    assert "ZeroDivisionError" in failed["error"], failed
    assert row["notebook"] == "01_tiny.ipynb"
    assert row["seconds"] > 0 and row["floor_seconds"] > 0
    assert row["ratio"] == row["seconds"] / row["floor_seconds"]
    assert row["target"] == "<= 3x floor"
    if sys.platform.startswith("linux"):
        assert 5 < row["peak_mib"] < 1024, row  # a bare kernel: tens of MiB
        assert row["cpu_seconds"] is not None
    table = bench_notebooks.format_notebooks(rows)
    assert "01_tiny.ipynb" in table and "targets:" in table and "02_broken.ipynb FAILED" in " ".join(table.split())


def test_explorer_latency_of_one_explorer():
    from pe_lib.explorer import explorer_classes

    name = explorer_classes()[0].__name__
    rows = bench_notebooks.explorer_latencies(updates=2, names={name}, every_slider=False)
    reference, row = rows
    assert reference["reference_cpu_ms"] > 0
    assert row["explorer"] == name and "error" not in row, row
    assert row["median_ms"] > 0 and row["max_ms"] >= row["median_ms"] and row["cpu_ms"] > 0
    table = bench_notebooks.format_explorers(rows, 2)
    assert "target:" in table and "reference" in table and name in table
