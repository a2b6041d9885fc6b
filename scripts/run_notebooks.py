"""Re-execute course notebooks top to bottom in a fresh kernel and save them with clean metadata.

Usage: python scripts/run_notebooks.py [NOTEBOOK ...]   (default: every notebook under notebooks/)

Volatile metadata (execution timestamps, widget state) is stripped and every widget's model_id (a
random id the kernel draws on each run) is replaced by one derived from the notebook's name and the
widget's place in it, so that a diff shows only real changes: a notebook run again unchanged is
written back byte for byte the same (tests/test_run_notebooks.py). The notebook's language_info is
kept exactly as the kernel reported it: JupyterLab copies the kernel's language_info into a notebook
as soon as its kernel is ready, so a notebook that holds anything else (a trimmed copy, or none)
opens as modified. Its "version" is the patch
release of the Python that ran the notebooks: run them with the course's Python (CI's), or they
open as modified wherever that Python runs (nbval and the hygiene check ignore metadata).
Prints each notebook's wall time.
"""

import sys
import time
import uuid
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_IDS = uuid.UUID("6d1f3a52-3c8e-4b0f-9a51-7f2a0c9e4d11")  # the namespace of the stable model ids


def stable_widget_ids(notebook, name):
    """Replace each widget view's model_id by uuid5(name, its rank among the notebook's widgets), in place.

    The ids point at no saved state (the notebooks keep none), so nothing else refers to them: a view shown
    twice keeps one id, and the same notebook gets the same ids on every run.
    """
    stable = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(WIDGET_VIEW)
            if view and "model_id" in view:
                old = view["model_id"]
                if old not in stable:
                    stable[old] = uuid.uuid5(WIDGET_IDS, f"{name}/{len(stable)}").hex
                view["model_id"] = stable[old]
    return notebook


def clean(notebook, name):
    """Drop metadata that changes on every run; stable widget ids; keep the kernel's language_info as reported."""
    stable_widget_ids(notebook, name)
    notebook.metadata.pop("widgets", None)
    notebook.metadata["kernelspec"] = KERNELSPEC
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
    return notebook


def run(path):
    """Execute one notebook in place (working directory: its folder); return seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    nbformat.write(clean(notebook, path.name), path)
    return seconds


def main(paths):
    paths = [Path(p).resolve() for p in paths] or sorted(NOTEBOOKS.rglob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if ".ipynb_checkpoints" not in p.parts]
    for path in paths:
        seconds = run(path)
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"{seconds:6.1f} s  {shown}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
