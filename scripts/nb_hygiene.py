"""Check that committed notebooks look freshly run top to bottom and leak nothing.

Usage: python scripts/nb_hygiene.py [NOTEBOOK_DIR]   (default: notebooks, with solutions/)
Exit 0 when every notebook is clean, 1 otherwise. Standard library only.

A notebook is clean when its code cells ran once each, in order, from a fresh kernel (execution
counts 1, 2, 3, ...); no output is an error, a warning or traceback on stderr, a memory address or
a printed number at rounding-noise size (it differs by CPU and breaks nbval); no source or output
names a path of this machine (the checkout, its parent, the home and temporary folders); the
kernelspec is "python3"; the file stays under MAX_BYTES. tests/test_nb_hygiene.py runs it on every
committed notebook.
"""

import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _machine_paths():
    """This machine's own absolute places: the checkout, its parent, the working folder, home, the temp folder."""
    here = Path.cwd().resolve()
    places = {str(ROOT), str(ROOT.parent), str(here), str(here.parent), str(Path.home()), tempfile.gettempdir()}
    places = sorted((p for p in places if len(p) > 1), key=len, reverse=True)
    return re.compile("|".join(re.escape(p) for p in places))


MACHINE_PATH = _machine_paths()
ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}")
# A printed number at rounding-noise size (1e-6 and below) differs from one CPU to the next and
# breaks nbval's exact comparison: print a threshold ("< 1e-6: True") instead of the value.
NOISE = re.compile(r"(?<![\w.<=≤])(?<!< )(?<!<= )(?<!≤ )(?:[2-9](?:\.\d+)?|1\.\d+)e-(?:0?[6-9]|[1-9]\d)\b")
MAX_BYTES = 5_000_000


def output_text(output):
    parts = []
    if "text" in output:
        parts.append("".join(output["text"]))
    for mime, value in output.get("data", {}).items():
        if mime.startswith("text/"):
            parts.append("".join(value) if isinstance(value, list) else str(value))
    if output.get("output_type") == "error":
        parts.append(output.get("ename", "") + ": " + output.get("evalue", ""))
    return "\n".join(parts)


def check(path):
    problems = []
    size = path.stat().st_size
    if size > MAX_BYTES:
        problems.append(f"file is {size / 1e6:.1f} MB (keep figures small; limit {MAX_BYTES / 1e6:.0f} MB)")
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [f"not valid notebook JSON: {exc}"]
    kernel = nb.get("metadata", {}).get("kernelspec", {}).get("name")
    if kernel != "python3":
        problems.append(f"kernelspec name is {kernel!r}, expected 'python3'")
    expected = 1
    out_of_order = []
    for index, cell in enumerate(nb.get("cells", []), start=1):
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        count = cell.get("execution_count")
        if not source.strip():
            continue
        if count != expected:
            out_of_order.append(f"cell {index} has execution_count {count}, expected {expected}")
        expected = (count or expected) + 1
        if MACHINE_PATH.search(source):
            problems.append(f"cell {index}: source mentions a machine path")
        for output in cell.get("outputs", []):
            text = output_text(output)
            if output.get("output_type") == "error":
                problems.append(f"cell {index}: stored error output {text[:80]!r}")
            if output.get("name") == "stderr" and re.search(r"Warning|Traceback", text):
                problems.append(f"cell {index}: stderr shows {text.strip().splitlines()[0][:80]!r}")
            if MACHINE_PATH.search(text):
                problems.append(f"cell {index}: output leaks a machine path")
            noise = NOISE.search(text) if output.get("output_type") != "error" else None
            if noise and "NBVAL_IGNORE_OUTPUT" not in source and "NBVAL_SKIP" not in source:
                problems.append(
                    f"cell {index}: prints a tiny number {noise.group(0)!r}: if it is rounding noise it differs "
                    "by CPU and breaks nbval; print a threshold instead"
                )
            if ADDRESS.search(text):
                problems.append(f"cell {index}: output shows a memory address (end plot cells with plt.show())")
    if out_of_order:
        problems.insert(
            0, f"not run top to bottom from a fresh kernel: {out_of_order[0]} ({len(out_of_order)} cells out of order)"
        )
    return problems


def main(argv):
    root = Path(argv[0]) if argv else ROOT / "notebooks"
    notebooks = sorted(p for p in root.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    if not notebooks:
        print(f"nb_hygiene: no notebooks under {root}")
        return 0
    bad = 0
    for path in notebooks:
        problems = check(path)
        if problems:
            bad += 1
            print(f"{path}:")
            for problem in problems[:12]:
                print(f"  - {problem}")
            if len(problems) > 12:
                print(f"  - … and {len(problems) - 12} more")
    print(f"nb_hygiene: {len(notebooks) - bad}/{len(notebooks)} notebooks clean")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
