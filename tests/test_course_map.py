"""The course map has one source, docs/course_map.toml: README.md, the book and teaching.md show the same times.

`python scripts/course_map.py` rewrites the three tables from the data file; this test fails when one differs,
when a notebook has no row, or when a notebook's own "Time: about N minutes" disagrees with its row.
"""

import copy
import importlib.util
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("course_map", ROOT / "scripts" / "course_map.py")
course_map = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(course_map)

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_every_table_agrees_with_the_data_file():
    stale = [path.relative_to(ROOT).as_posix() for path, _ in course_map.out_of_date()]
    assert not stale, f"out of date: {stale}: run `python scripts/course_map.py`"


def test_a_changed_time_makes_every_table_out_of_date():
    data = copy.deepcopy(course_map.load())
    data["notebook"][9]["study"] = "25 min"
    assert {path.name for path, _ in course_map.out_of_date(data)} == {"README.md", "index.md", "teaching.md"}


def test_every_notebook_has_one_row_in_order():
    rows = [row["file"] for row in course_map.load()["notebook"]]
    assert rows == [path.name for path in NOTEBOOKS]


def test_each_notebook_states_the_study_time_of_its_row():
    for row in course_map.load()["notebook"]:
        cells = json.loads((ROOT / "notebooks" / row["file"]).read_text(encoding="utf-8"))["cells"]
        intro = "".join(next(c for c in cells if c["cell_type"] == "markdown")["source"])
        stated = re.search(r"\*\*Time\*?\*?:?\*?\*?:? about (\d+) minutes", intro)
        assert stated, f"{row['file']}: no '**Time:** about N minutes' in its first cell"
        assert int(stated.group(1)) == int(re.match(r"\d+", row["study"]).group()), (row["file"], row["study"])


def test_minutes_add_up_the_times_not_the_notes():
    assert course_map.minutes("35 min + 15 min exercises") == 50
    assert course_map.minutes("20 min (sections 2, 4 and 7; 5 min of questions)") == 20
    data = {"notebook": [{"file": "01_a.ipynb", "title": "A", "study": "50 min", "lecture": "20 min (all)"}] * 3}
    assert "| total | about 2 h 30 min | 60 min without breaks" in course_map.teaching_table(data)
