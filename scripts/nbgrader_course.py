"""Build an nbgrader course directory from the course's notebooks: one assignment per notebook with exercises.

Usage: python scripts/nbgrader_course.py [OUT_DIR] [--points N] [--notebooks 01 10 ...]
       (default OUT_DIR: build/nbgrader-course; every notebook with an exercise)

The course notebooks stay the one source of truth. An assignment is its notebook, whole (prose,
figures, explorers), with each exercise turned into the two cells nbgrader grades:
- the learner's stub becomes a *solution* cell: the worked solution of notebooks/solutions/, its
  body between `### BEGIN SOLUTION` and `### END SOLUTION` (nbgrader's release version keeps the
  signature and docstring and puts `raise NotImplementedError()` in place of the body);
- the cell that calls the course's grader (`ex01.check_permutation_matrix(permutation_matrix)`)
  becomes an autograded *test* cell: the learner still sees the grader's feedback when running it,
  and a hidden test (removed from the release version, restored when grading) asserts that the
  grader said "Correct", which gives the cell's points.

An exercise is found, not declared: a code cell whose statement is `<module>.check_<name>(<answer>)`
without `hint=`, and the nearest cell above it (or itself) that defines `<answer>`. The solution is
the definition of the same name in the worked-solutions notebook. `tests/test_classroom.py` checks
that every exercise of every notebook is found and that nbgrader grades right, wrong and blank
submissions correctly.
"""

import argparse
import ast
import copy
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
COURSE_ID = "positional-encoding-interactively"
CONFIG = '''\
"""nbgrader's settings for the course (written by scripts/nbgrader_course.py; edit and keep)."""

c = get_config()  # noqa: F821 - nbgrader provides get_config
c.CourseDirectory.course_id = "{course_id}"
c.CourseDirectory.root = "."
# Each assignment runs a whole notebook of the course (notebook 10 loads a 135 M-parameter model):
# give each cell time, and let a learner's error in one exercise leave the others graded.
c.ExecutePreprocessor.timeout = 600
c.Execute.timeout = 600
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
'''


@dataclass(frozen=True)
class Exercise:
    notebook: str  # e.g. "01_order_problem"
    answer: str  # the name the learner defines (function or class)
    grader: str  # the grader's call, e.g. "ex01.check_permutation_matrix"
    stub_cell: int  # index of the cell defining `answer` in the course notebook
    check_cell: int  # index of the cell calling the grader (may equal stub_cell)


def _parse(source):
    """The cell's AST; IPython magics (%matplotlib, !pip) are blanked so that they keep their line numbers."""
    lines = ["pass" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    return ast.parse("\n".join(lines))


def _grader_call(statement):
    """(grader, answer) if `statement` is `<module>.check_<x>(<name>)` without hint=, else None."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr.startswith("check_")):
        return None
    if any(keyword.arg == "hint" for keyword in call.keywords) or not call.args:
        return None
    if not isinstance(call.args[0], ast.Name):
        return None
    return f"{func.value.id}.{func.attr}", call.args[0].id


def _definition(tree, name):
    """The top-level def or class called `name` in `tree`, or None."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
    return None


def find_exercises(path):
    """Every exercise of the course notebook at `path`, in order."""
    notebook = nbformat.read(path, as_version=4)
    exercises = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for statement in _parse(cell.source).body:
            found = _grader_call(statement)
            if found is None:
                continue
            grader, answer = found
            stub = next(
                (
                    k
                    for k in range(index, -1, -1)
                    if notebook.cells[k].cell_type == "code" and _definition(_parse(notebook.cells[k].source), answer)
                ),
                None,
            )
            if stub is None:
                raise ValueError(f"{path.name}, cell {index}: {grader}({answer}) but no cell above defines {answer}")
            exercises.append(Exercise(path.stem, answer, grader, stub, index))
    return exercises


def _solutions_path(path):
    return path.parent / "solutions" / f"{path.stem}_solutions.ipynb"


def solution_source(path, answer):
    """The worked solution's definition of `answer` (its source text), from the solutions notebook."""
    solutions = nbformat.read(_solutions_path(path), as_version=4)
    for cell in solutions.cells:
        if cell.cell_type != "code":
            continue
        node = _definition(_parse(cell.source), answer)
        if node is not None:
            return _segment(cell.source, node)
    raise ValueError(f"{_solutions_path(path).name} defines no {answer}: every exercise needs its worked solution")


def _segment(source, node):
    """The source lines of `node`, decorators included."""
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return "\n".join(source.splitlines()[first - 1 : node.end_lineno])


def _body(node):
    """The statements of function `node` after its docstring."""
    return node.body[1:] if ast.get_docstring(node) is not None else node.body


def _first_line(lines, function):
    """0-based index of the first line of the function's body: its first statement, or the comments just above it."""
    first = _body(function)[0].lineno - 1
    while first - 1 >= function.lineno and lines[first - 1].strip().startswith("#"):
        first -= 1
    return first


def _functions(node):
    """A function, or a class's methods, by name."""
    if isinstance(node, ast.FunctionDef):
        return {node.name: node}
    return {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}


def marked_solution(solution, stub=None):
    """The solution's definition with each function body between nbgrader's solution markers (a class: each method).

    Above the markers, the notebook's stub of the same function, commented out: the release version
    shows the learner the notebook's starting point (its TODO, or the buggy code to fix) where nbgrader
    puts `raise NotImplementedError()`.
    """
    (node,) = ast.parse(solution).body
    lines = solution.splitlines()
    stub_functions, stub_lines = {}, []
    if stub is not None:
        (stub_node,) = ast.parse(stub).body
        stub_functions, stub_lines = _functions(stub_node), stub.splitlines()
    for name, function in sorted(_functions(node).items(), key=lambda item: -item[1].lineno):  # bottom up
        body = _body(function)
        if not body:
            continue
        start, end = _first_line(lines, function), body[-1].end_lineno
        indent = " " * body[0].col_offset
        starting_point = []
        if name in stub_functions and _body(stub_functions[name]):
            stub_function = stub_functions[name]
            first = _first_line(stub_lines, stub_function)
            old = textwrap.dedent("\n".join(stub_lines[first : _body(stub_function)[-1].end_lineno]))
            starting_point = [f"{indent}# The notebook's starting point (uncomment to start from it):"]
            starting_point += [f"{indent}# {line}".rstrip() for line in old.splitlines()]
        marked = [f"{indent}### BEGIN SOLUTION", *lines[start:end], f"{indent}### END SOLUTION"]
        lines[start:end] = starting_point + marked
    return "\n".join(lines)


def _solution_cell(source, grade_id):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": False,
        "grade_id": grade_id,
        "locked": False,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    return cell


def _test_cell(exercise, points):
    source = textwrap.dedent(
        f"""\
        print({exercise.grader}({exercise.answer}))  # the course's grader: right, or what is wrong
        ### BEGIN HIDDEN TESTS
        _verdict = {exercise.grader}({exercise.answer}, hint=1)  # graded afresh: the points need "Correct"
        assert _verdict.passed, str(_verdict)
        ### END HIDDEN TESTS"""
    )
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": f"{exercise.answer}_graded",
        "locked": True,
        "points": points,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    return cell


def _without_statement(source, tree, statement):
    """`source` with the lines of one top-level statement removed (and the blank lines it leaves at the end)."""
    lines = source.splitlines()
    del lines[statement.lineno - 1 : statement.end_lineno]
    return "\n".join(lines).rstrip() + "\n" if any(line.strip() for line in lines) else ""


def assignment_notebook(path, points=1):
    """The nbgrader source version of the course notebook at `path` (a new notebook; `path` is only read)."""
    notebook = nbformat.read(path, as_version=4)
    exercises = find_exercises(path)
    cells = [copy.deepcopy(cell) for cell in notebook.cells]
    replacement = {}  # cell index -> the cells that take its place
    for exercise in exercises:
        stub = cells[exercise.stub_cell]
        tree = _parse(stub.source)
        node = _definition(tree, exercise.answer)
        lines = stub.source.splitlines()
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        stub_text = "\n".join(lines[first - 1 : node.end_lineno])
        solution = marked_solution(solution_source(path, exercise.answer), stub_text)
        lines[first - 1 : node.end_lineno] = solution.splitlines()
        solution_text = "\n".join(lines)
        if exercise.check_cell == exercise.stub_cell:  # stub and grader call in one cell: split them
            solution_tree = _parse(solution_text)
            call = next(s for s in solution_tree.body if _grader_call(s) == (exercise.grader, exercise.answer))
            solution_text = _without_statement(solution_text, solution_tree, call)
            replacement[exercise.stub_cell] = [
                _solution_cell(solution_text, f"{exercise.answer}_solution"),
                _test_cell(exercise, points),
            ]
        else:
            replacement[exercise.stub_cell] = [_solution_cell(solution_text, f"{exercise.answer}_solution")]
            replacement[exercise.check_cell] = [_test_cell(exercise, points)]
    notebook.cells = [new for index, cell in enumerate(cells) for new in replacement.get(index, [cell])]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return notebook, exercises


def course_notebooks(selection=None):
    """The course notebooks that have exercises (`selection`: their numbers, e.g. ["01", "10"])."""
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    if selection:
        unknown = set(selection) - {p.name[:2] for p in paths}
        if unknown:
            raise ValueError(f"no course notebook numbered {sorted(unknown)}; there are {[p.name[:2] for p in paths]}")
        paths = [p for p in paths if p.name[:2] in selection]
    return [p for p in paths if find_exercises(p)]


def build(out_dir, points=1, selection=None):
    """Write the course directory: nbgrader_config.py and source/<assignment>/<assignment>.ipynb per notebook."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "nbgrader_config.py").write_text(CONFIG.format(course_id=COURSE_ID))
    built = {}
    for path in course_notebooks(selection):
        notebook, exercises = assignment_notebook(path, points)
        folder = out_dir / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / path.name)
        built[path.stem] = exercises
    return built


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", default=ROOT / "build" / "nbgrader-course")
    parser.add_argument("--points", type=int, default=1, help="points per exercise (default 1)")
    parser.add_argument("--notebooks", nargs="*", help="notebook numbers, e.g. 01 10 (default: all with exercises)")
    args = parser.parse_args(argv)
    if args.points < 1:
        parser.error(f"--points must be a positive int, got {args.points}")
    built = build(args.out_dir, args.points, args.notebooks)
    for name, exercises in built.items():
        print(f"{name}: {len(exercises)} exercise(s), {', '.join(e.answer for e in exercises)}")
    print(f"course directory: {Path(args.out_dir).resolve()}  (then: cd there && nbgrader generate_assignment NAME)")


if __name__ == "__main__":
    sys.exit(main())
