"""Re-execute course notebooks top to bottom in a fresh kernel and save them with clean metadata.

Usage: python scripts/run_notebooks.py [NOTEBOOK ...]   (default: every notebook under notebooks/)

Volatile metadata (execution timestamps, widget state) is stripped so that a diff shows only
real changes. The notebook's language_info is kept exactly as the kernel reported it: JupyterLab
copies the kernel's language_info into a notebook as soon as its kernel is ready, so a notebook
that holds anything else (a trimmed copy, or none) opens as modified. Its "version" is the patch
release of the Python that ran the notebooks: run them with the course's Python (CI's), or they
open as modified wherever that Python runs (nbval and the hygiene check ignore metadata).
Prints each notebook's wall time.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def clean(notebook):
    """Drop metadata that changes on every run; keep the kernel's language_info as it reported it."""
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
    nbformat.write(clean(notebook), path)
    return seconds


def main(paths):
    paths = [Path(p).resolve() for p in paths] or sorted(NOTEBOOKS.rglob("[0-9][0-9]_*.ipynb"))
    paths = [p for p in paths if ".ipynb_checkpoints" not in p.parts]
    for path in paths:
        seconds = run(path)
        print(f"{seconds:6.1f} s  {path.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
