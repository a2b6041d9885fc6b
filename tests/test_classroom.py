"""The classroom kit: nbgrader assignments made from the course's exercises, the sizing table, the Z2JH config.

- scripts/nbgrader_course.py finds every exercise of every notebook and turns it into nbgrader's
  solution and autograded cells; the solutions are the worked solutions of notebooks/solutions/.
- nbgrader end to end on notebook 01: generate the release version (solutions and hidden tests
  stripped), submit three students' versions (right, wrong, blank), autograde, read the scores from
  the gradebook database, generate feedback. Right gets full points, wrong and blank zero.
- docs/teaching.md's sizing table is the one benchmarks/results/classroom_sizing.json renders, and
  classroom/zero-to-jupyterhub/config.yaml gives each student at least what the heaviest notebook needs.
"""

import ast
import importlib.util
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import yaml

from conftest import _no_browser

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import classroom_sizing  # noqa: E402
import nbgrader_course  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
Z2JH = ROOT / "classroom" / "zero-to-jupyterhub" / "config.yaml"


def _grader_calls(path):
    """Every `<module>.check_<x>(<name>)` call without hint= in a notebook, counted from its code cells."""
    calls = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.walk(nbgrader_course._parse(cell.source)):
                if isinstance(node, ast.Expr) and nbgrader_course._grader_call(node):
                    calls.append(nbgrader_course._grader_call(node))
    return calls


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name[:2])
def test_every_exercise_becomes_a_graded_pair(path):
    calls = _grader_calls(path)
    notebook, exercises = nbgrader_course.assignment_notebook(path)
    assert [(e.grader, e.answer) for e in exercises] == calls
    graded = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")]
    solutions = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert len(graded) == len(solutions) == len(exercises)
    for exercise, solution, test in zip(exercises, solutions, graded, strict=True):
        assert "### BEGIN SOLUTION" in solution.source and "### END SOLUTION" in solution.source
        assert (
            f"{exercise.grader}({exercise.answer}, hint=1)" in test.source and "### BEGIN HIDDEN TESTS" in test.source
        )
        # the solution is the worked one, and the graded cell comes after it
        worked = nbgrader_course.solution_source(path, exercise.answer)
        unmarked = "\n".join(line for line in solution.source.splitlines() if "### " not in line)
        assert all(line in unmarked for line in worked.splitlines() if line.strip())
        assert notebook.cells.index(solution) < notebook.cells.index(test)
    assert all(not c.get("outputs") for c in notebook.cells if c.cell_type == "code")


def test_the_stub_is_kept_as_a_commented_starting_point():
    path = ROOT / "notebooks" / "09_positions_in_the_wild.ipynb"
    notebook, _ = nbgrader_course.assignment_notebook(path)
    (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "fixed_rope_solution"]
    before_solution = cell.source.split("### BEGIN SOLUTION")[0]
    assert "# return ported_rope(x, positions, config)" in before_solution
    assert "rope_theta" not in before_solution, "a hint of the answer must sit inside the solution region"


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(ValueError, match="no course notebook numbered"):
        nbgrader_course.build(tmp_path, selection=["99"])
    with pytest.raises(SystemExit):
        nbgrader_course.main([str(tmp_path), "--points", "0"])


def _nbgrader():
    if importlib.util.find_spec("nbgrader") is None:
        _no_browser("nbgrader is not installed (pip install -r requirements-classroom.txt)")  # skip here, fail in CI
    return [str(Path(sys.executable).with_name("nbgrader"))]


def _strip_markers(source):
    return "\n".join(
        line for line in source.splitlines() if "### BEGIN SOLUTION" not in line and "### END SOLUTION" not in line
    )


WRONG_01 = {  # the mistakes learners make: the transposed permutation, the invariance test
    "permutation_matrix_solution": "def permutation_matrix(order):\n    n = len(order)\n    P = np.zeros((n, n))\n"
    "    P[order, np.arange(n)] = 1\n    return P\n",
    "is_permutation_equivariant_solution": "def is_permutation_equivariant(f, x, order):\n"
    "    return np.allclose(f(x[order]), f(x))\n",
}


@pytest.mark.slow
def test_nbgrader_grades_right_wrong_and_blank_submissions(tmp_path):
    nbgrader = _nbgrader()
    course = tmp_path / "course"
    nbgrader_course.build(course, selection=["01"])
    name = "01_order_problem"

    def run(*args):
        # nbgrader calls the environment's `alembic` by name: its bin folder first on PATH
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        done = subprocess.run([*nbgrader, *args], cwd=course, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"

    run("generate_assignment", name, "--force")
    release = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
    source = nbformat.read(course / "source" / name / f"{name}.ipynb", as_version=4)
    released_text = "\n".join(c.source for c in release.cells)
    assert "np.eye(len(order))[order]" not in released_text and "HIDDEN TESTS" not in released_text
    assert "raise NotImplementedError()" in released_text

    worked = {
        c.metadata.nbgrader["grade_id"]: c.source
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    answers = {"alice": {k: _strip_markers(v) for k, v in worked.items()}, "bob": WRONG_01, "carol": {}}
    for student, answer in answers.items():
        submission = nbformat.read(course / "release" / name / f"{name}.ipynb", as_version=4)
        for cell in submission.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id in answer:
                cell.source = answer[grade_id]
        folder = course / "submitted" / student / name
        folder.mkdir(parents=True)
        nbformat.write(submission, folder / f"{name}.ipynb")

    run("autograde", name, "--create", "--force")
    with sqlite3.connect(course / "gradebook.db") as db:
        scores = dict(
            (student, (score, maximum))
            for student, score, maximum in db.execute(
                "SELECT sa.student_id, SUM(g.auto_score), SUM(gc.max_score) FROM grade g "
                "JOIN submitted_notebook sn ON g.notebook_id = sn.id "
                "JOIN submitted_assignment sa ON sn.assignment_id = sa.id "
                "JOIN grade_cells gc ON g.cell_id = gc.id GROUP BY sa.student_id"
            )
        )
    assert scores == {"alice": (2.0, 2.0), "bob": (0.0, 2.0), "carol": (0.0, 2.0)}

    run("generate_feedback", name, "--force")
    feedback = {s: (course / "feedback" / s / name / f"{name}.html").read_text() for s in answers}
    assert "Score: 2.0 / 2.0" in feedback["alice"] and "Score: 0.0 / 2.0" in feedback["bob"]
    assert "Not yet" in feedback["bob"] and "Hint 1/" in feedback["bob"], "the feedback must carry the grader's words"
    assert "NotImplementedError" in feedback["carol"]


def test_teaching_md_shows_the_measured_sizing():
    result = classroom_sizing.load()
    text = (ROOT / "docs" / "teaching.md").read_text()
    assert classroom_sizing.render(result) in text, "re-render it: python benchmarks/bench_classroom.py --render"
    measured = {row["notebook"] for row in result["one_student"]}
    assert measured == {p.name for p in NOTEBOOKS}, "the sizing must cover every notebook (re-run the benchmark)"


def _memory_gib(text):
    number, unit = re.fullmatch(r"([\d.]+)([GM])", str(text)).groups()
    return float(number) / (1024 if unit == "M" else 1)


def test_zero_to_jupyterhub_config_follows_the_sizing():
    config = yaml.safe_load(Z2JH.read_text())
    result = classroom_sizing.load()
    heaviest = max(classroom_sizing.per_student_gib(result, row) for row in result["one_student"])
    typical = sorted(classroom_sizing.per_student_gib(result, row) for row in result["one_student"])
    median = typical[len(typical) // 2]
    user = config["singleuser"]
    assert _memory_gib(user["memory"]["limit"]) >= heaviest, "every student must be able to run the heaviest notebook"
    assert _memory_gib(user["memory"]["guarantee"]) >= median
    assert 0 < user["cpu"]["guarantee"] <= user["cpu"]["limit"]
    assert config["cull"]["enabled"] and config["cull"]["timeout"] <= 3600
    assert user["defaultUrl"] == "/lab"
    assert user["extraEnv"]["PE_LIB_CACHE"].startswith("/srv/"), "the model cache must live outside the home volume"
    assert user["extraEnv"]["OMP_NUM_THREADS"] == str(result["kernel_threads"]), "threads as the sizing measured"


def test_the_z2jh_validator_merges_like_helm_and_reports_errors(tmp_path):
    """classroom/validate_z2jh.py, on a small chart: the chart's real schema is not in this repository
    (docs/teaching.md says when the config was last validated against it)."""
    sys.path.insert(0, str(ROOT / "classroom"))
    import validate_z2jh

    chart = tmp_path / "chart"
    chart.mkdir()
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "singleuser": {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "memory": {"type": "object"},
                    "cpu": {"type": "object"},
                    "defaultUrl": {"type": "string"},
                },
            },
            "cull": {"type": "object", "properties": {"timeout": {"type": "integer"}}},
        },
    }
    (chart / "values.schema.yaml").write_text(yaml.safe_dump(schema))
    (chart / "values.yaml").write_text(
        yaml.safe_dump({"singleuser": {"memory": {"guarantee": "1G"}}, "cull": {"timeout": 3600}})
    )
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"singleuser": {"memory": {"limit": "2G"}, "defaultUrl": "/lab"}}))
    assert validate_z2jh.errors(chart, good) == []
    assert validate_z2jh.merged({"a": {"b": 1, "c": 2}}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"singleuser": {"memoryy": {}}, "cull": {"timeout": "soon"}}))
    found = validate_z2jh.errors(chart, bad)
    assert len(found) == 2 and any("memoryy" in e for e in found) and any(e.startswith("cull.timeout") for e in found)
