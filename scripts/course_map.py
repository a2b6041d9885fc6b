"""Write the course map's tables from docs/course_map.toml, its one source: README.md, the book, teaching.md.

Usage: python scripts/course_map.py [--check]
       (--check changes nothing and exits 1 when a table differs from what the data file gives)

Each table sits between two markers in its file, `<!-- course-map:NAME -->` and `<!-- /course-map:NAME -->`
(HTML comments: invisible on GitHub, in JupyterLab and in the book); everything between them is replaced.
tests/test_course_map.py runs the check.
"""

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "course_map.toml"
BINDER = "https://mybinder.org/v2/gh/OWNER/positional-encoding-interactively/main?urlpath=lab/tree/notebooks/"
BADGE = "https://mybinder.org/badge_logo.svg"


def load():
    return tomllib.loads(DATA.read_text(encoding="utf-8"))


def number(row):
    return row["file"][:2]


def minutes(text):
    """The minutes a time adds up to: "35 min + 15 min exercises" is 50; "10 min (show ...)" is 10."""
    return sum(int(m) for m in re.findall(r"(\d+) min", text.split("(")[0]))


def _seconds(value):
    return f"{value:.1f} s" if value is not None else "not measured yet"


def readme_table(data):
    lines = [
        "| # | notebook | what it shows | time to study | runs in | in JupyterLab, busy machine | run it |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in data["notebook"]:
        link = f"[{row['title']}](notebooks/{row['file']})"
        binder = f"[![Binder]({BADGE})]({BINDER}{row['file']})"
        busy = row.get("busy_text") or _seconds(row.get("busy_s"))
        cells = [number(row), link, row["shows"], row["study"], _seconds(row.get("quiet_s")), busy, binder]
        lines.append("| " + " | ".join(cells) + " |")
    runs = data["runs_in"]
    lines += [
        "",
        f'"Runs in" is the wall time of Restart & Run All, kernel start included: {runs["quiet"]}. '
        f'"In JupyterLab, busy machine": {runs["busy"]}; expect that much on a laptop busy with other work. '
        "Notebook 10's first run also fetches its model once (93 MB from PyPI, a progress bar shows it).",
    ]
    return "\n".join(lines)


def book_table(data):
    lines = ["| # | notebook | what you learn | time to study |", "| --- | --- | --- | --- |"]
    for row in data["notebook"]:
        link = f"[{row['title']}](notebooks/{row['file']})"
        lines.append(f"| {number(row)} | {link} | {row['shows']} | {row['study']} |")
    return "\n".join(lines)


def teaching_table(data):
    lines = [
        "| notebook | self-paced | in a lecture (demo + discussion, exercises left as homework) |",
        "| --- | --- | --- |",
    ]
    for row in data["notebook"]:
        lines.append(f"| {number(row)} {row['title']} | {row['study']} | {row['lecture']} |")
    study = sum(minutes(row["study"]) for row in data["notebook"])
    lecture = sum(minutes(row["lecture"]) for row in data["notebook"])
    lines.append(
        f"| total | about {study // 60} h {study % 60} min | {lecture} min without breaks: the 90-minute path below "
        "covers 01-06; 07-11 make a second lecture |"
    )
    return "\n".join(lines)


TABLES = {
    "readme": (ROOT / "README.md", readme_table),
    "book": (ROOT / "docs" / "book" / "index.md", book_table),
    "teaching": (ROOT / "docs" / "teaching.md", teaching_table),
}


def render(path, name, table):
    """The text of `path` with the table `name` replaced; raises ValueError when its markers are missing."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(rf"(<!-- course-map:{name} -->\n)(?:.*?\n)?(<!-- /course-map:{name} -->)", re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{path.relative_to(ROOT)} has no <!-- course-map:{name} --> ... <!-- /course-map:{name} -->")
    return pattern.sub(lambda m: m.group(1) + table + "\n" + m.group(2), text)


def out_of_date(data=None):
    """(path, new text) of every file whose table differs from the data file."""
    data = data or load()
    stale = []
    for name, (path, make) in TABLES.items():
        new = render(path, name, make(data))
        if new != path.read_text(encoding="utf-8"):
            stale.append((path, new))
    return stale


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a table is out of date")
    args = parser.parse_args(argv)
    stale = out_of_date()
    for path, new in stale:
        print(f"{path.relative_to(ROOT)}: {'out of date' if args.check else 'written'}")
        if not args.check:
            path.write_text(new, encoding="utf-8")
    if not stale:
        print("the course map's tables agree with docs/course_map.toml")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
