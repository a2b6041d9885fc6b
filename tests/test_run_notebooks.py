"""scripts/run_notebooks.py writes an unchanged notebook back byte for byte: re-running it leaves no diff.

The one thing a kernel draws at random on every run and a notebook stores is a widget's model_id; the
script replaces each by an id derived from the notebook's name and the widget's rank. The end-to-end test
runs a small notebook (two widget views, one shown twice, and an inline figure) twice in a fresh kernel.
"""

import copy
import importlib.util
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
run_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_notebooks)

VIEW = run_notebooks.WIDGET_VIEW


def _view(model_id):
    return nbformat.v4.new_output(
        "display_data", data={VIEW: {"model_id": model_id, "version_major": 2, "version_minor": 0}, "text/plain": "w"}
    )


def _notebook(*ids):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell("w", outputs=[_view(i)]) for i in ids]
    return notebook


def _ids(notebook):
    """The model_id of every widget view in the notebook's outputs, in order."""
    outputs = [output.get("data", {}) for cell in notebook.cells for output in cell.get("outputs", [])]
    return [data[VIEW]["model_id"] for data in outputs if VIEW in data]


def test_widget_ids_depend_on_the_notebook_and_the_rank_only():
    first = run_notebooks.stable_widget_ids(_notebook("a1", "b2", "a1"), "01_x.ipynb")
    again = run_notebooks.stable_widget_ids(_notebook("c3", "d4", "c3"), "01_x.ipynb")
    other = run_notebooks.stable_widget_ids(_notebook("a1", "b2", "a1"), "02_y.ipynb")
    assert _ids(first) == _ids(again)  # other random ids, same stable ones
    assert _ids(first)[0] == _ids(first)[2] != _ids(first)[1]  # a view shown twice keeps one id
    assert not set(_ids(first)) & set(_ids(other))
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in _ids(first))  # shaped like the kernel's uuid4().hex


def test_clean_keeps_everything_but_the_volatile_parts():
    notebook = _notebook("a1")
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}}}
    notebook.cells[0].metadata["execution"] = {"iopub.execute_input": "2026-11-27T20:00:00"}
    notebook.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    before = copy.deepcopy(notebook)
    cleaned = run_notebooks.clean(notebook, "01_x.ipynb")
    assert "widgets" not in cleaned.metadata and "execution" not in cleaned.cells[0].metadata
    assert cleaned.metadata["language_info"] == before.metadata["language_info"]
    assert cleaned.cells[0].source == before.cells[0].source and _ids(cleaned) != _ids(before)


SMALL = [
    "%matplotlib inline\nimport ipywidgets as widgets\nimport matplotlib.pyplot as plt",
    "slider = widgets.IntSlider(value=3, description='n')\nslider",
    "display(widgets.VBox([widgets.Label('twice'), slider]))\nslider",
    "fig, ax = plt.subplots(figsize=(2, 1))\nax.plot([0, 1], [1, 0])\nplt.show()",
]


def test_an_unchanged_notebook_is_written_back_byte_for_byte(tmp_path):
    path = tmp_path / "small.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# small")] + [nbformat.v4.new_code_cell(s) for s in SMALL]
    nbformat.write(notebook, path)
    start = time.perf_counter()
    run_notebooks.run(path)
    first = path.read_bytes()
    run_notebooks.run(path)
    seconds = time.perf_counter() - start
    assert path.read_bytes() == first, "a second run of an unchanged notebook changed the file"
    ran = nbformat.reads(first.decode("utf-8"), as_version=4)
    ids = _ids(ran)
    assert len(ids) == 3 and ids[0] == ids[2] != ids[1], ids  # the slider, the box, the slider again
    assert any("image/png" in o.get("data", {}) for c in ran.cells for o in c.get("outputs", []))
    print(f"\ntwo runs in {seconds:.1f} s")
