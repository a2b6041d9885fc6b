"""Fold the notebooks' check cells: their source collapsed in JupyterLab, hidden behind a toggle in the book.

    python scripts/fold_checks.py [--check] [NOTEBOOK ...]     (default: every notebook, solutions included)

A check cell is the `assert` cell that follows a claim: a code cell with no output, at least one
top-level `assert`, and nothing a reader would come to read (no def, class or import). nbval still
runs every one of them; only the reading changes. The cell gets
- `metadata.jupyter.source_hidden = true`: JupyterLab shows it collapsed (one click opens it);
- the tag `hide-input`: the book (MyST-NB) shows a "Show code cell source" toggle instead of the code.
A cell this script folded that is no longer a check is unfolded; other cells are left alone.
--check changes nothing and exits 1 if a notebook is not folded so
(tests/test_fold_checks.py runs it on the committed notebooks).
"""

import argparse
import ast
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
TAG = "hide-input"


def _statements(source):
    """The cell's top-level statements (IPython magics and shell lines read as `pass`), or None if not Python."""
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines)).body
    except SyntaxError:
        return None


def is_check(cell):
    if cell.cell_type != "code" or cell.get("outputs"):
        return False
    statements = _statements(cell.source)
    if not statements or not any(isinstance(s, ast.Assert) for s in statements):
        return False
    reads = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return not any(isinstance(s, reads) for s in statements)


def _folded(cell):
    return cell.metadata.get("jupyter", {}).get("source_hidden") is True and TAG in cell.metadata.get("tags", [])


def fold(cell, check):
    """Fold a check cell in place; unfold a cell this script folded that is no longer one. True if it changed.

    Other cells are left as they are (a cell whose long code is hidden on purpose, under its output, stays so).
    """
    if not check and TAG not in cell.metadata.get("tags", []):
        return False
    before = nbformat.from_dict(dict(cell.metadata))
    jupyter = dict(cell.metadata.get("jupyter", {}))
    tags = [t for t in cell.metadata.get("tags", []) if t != TAG]
    if check:
        jupyter["source_hidden"] = True
        tags.append(TAG)
    else:
        jupyter.pop("source_hidden", None)
    for key, value in (("jupyter", jupyter), ("tags", tags)):
        if value:
            cell.metadata[key] = value
        else:
            cell.metadata.pop(key, None)
    return cell.metadata != before


def notebooks(paths):
    if paths:
        return [Path(p) for p in paths]
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + sorted(
        (ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb")
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook is not folded")
    args = parser.parse_args(argv)
    unfolded = []
    for path in notebooks(args.notebooks):
        notebook = nbformat.read(path, as_version=4)
        changed = [i for i, cell in enumerate(notebook.cells) if fold(cell, is_check(cell))]
        checks = sum(is_check(cell) for cell in notebook.cells)
        if changed:
            unfolded.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: cells {changed}")
            if not args.check:
                nbformat.write(notebook, path)
        print(f"{path.name}: {checks} check cell(s) folded{'' if not changed else f', {len(changed)} changed'}")
    if args.check and unfolded:
        print("not folded as scripts/fold_checks.py folds them:\n  " + "\n  ".join(unfolded), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
