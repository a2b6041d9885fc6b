"""The notebooks' check cells are folded (scripts/fold_checks.py): collapsed in JupyterLab, a toggle in the book."""

import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import fold_checks  # noqa: E402


def _cell(source, outputs=()):
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("stream", text=text) for text in outputs]
    return cell


@pytest.mark.parametrize(
    "source",
    [
        "assert x == 1",
        "result = table['a']\nassert result > 0  # the claim above",
        "%matplotlib inline\nassert True",
        "explorer.update(layer=3)\nassert 'layer 3' in explorer.finding()",
    ],
)
def test_check_cells_are_recognised(source):
    assert fold_checks.is_check(_cell(source))


@pytest.mark.parametrize(
    ("source", "outputs"),
    [
        ("x = 1", ()),  # no assert: code to read
        ("assert x == 1", ("printed\n",)),  # an output to read
        ("def f():\n    return 1\n\n\nassert f() == 1", ()),  # a definition to read
        ("import numpy as np\nassert np.pi > 3", ()),
        ("if x:\n    assert x", ()),  # an assert only inside a block: the block is the code
        ("this is not python", ()),
    ],
)
def test_other_cells_are_not_checks(source, outputs):
    assert not fold_checks.is_check(_cell(source, outputs))


def test_folding_is_idempotent_and_leaves_other_hidden_cells_alone():
    check = _cell("assert True")
    assert fold_checks.fold(check, True) and not fold_checks.fold(check, True)
    assert check.metadata["jupyter"] == {"source_hidden": True} and check.metadata["tags"] == ["hide-input"]
    hidden_on_purpose = _cell("long = 'table code'", ("a table\n",))
    hidden_on_purpose.metadata["jupyter"] = {"source_hidden": True}
    assert not fold_checks.fold(hidden_on_purpose, False)
    assert hidden_on_purpose.metadata["jupyter"] == {"source_hidden": True}
    no_longer = _cell("x = 1")  # folded once, now code to read: unfolded, its other tags kept
    no_longer.metadata.update(jupyter={"source_hidden": True}, tags=["hide-input", "keep"])
    assert fold_checks.fold(no_longer, False)
    assert "jupyter" not in no_longer.metadata and no_longer.metadata["tags"] == ["keep"]


def test_committed_notebooks_are_folded():
    assert fold_checks.main(["--check"]) == 0, "run: python scripts/fold_checks.py"
