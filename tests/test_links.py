"""No dead ends: every link in the notebooks and docs opens from JupyterLab as the README starts it.

Resolved on disk here (fast); tests/test_browser.py asks a JupyterLab started with the README's own arguments
for every target, and follows one in the page; tests/test_book.py follows every link of the built book.
"""

import pytest
from course_links import (
    ROOT,
    github_anchor,
    headings,
    jupyterlab_anchor,
    learner_files,
    readme_lab_command,
    relative_links,
    resolve,
    server_root,
)


def test_the_readme_serves_the_whole_clone():
    """The README's command serves the clone's folder, with the first notebook open: the notebooks' links to
    ../docs/ and the README's own links are inside what JupyterLab serves."""
    arguments = readme_lab_command()
    assert server_root(arguments) == ROOT, arguments
    assert "notebooks/01_order_problem.ipynb" in arguments, arguments


@pytest.mark.parametrize(
    ("arguments", "root"),
    [
        (["notebooks/01_order_problem.ipynb"], "notebooks"),  # the old command: notebooks/ alone
        (["notebooks"], "notebooks"),
        ([], "."),
        (["--ServerApp.root_dir=.", "notebooks/01_order_problem.ipynb"], "."),
        (["--notebook-dir", "docs"], "docs"),
    ],
)
def test_server_root_follows_jupyter_servers_rules(arguments, root):
    assert server_root(arguments) == (ROOT / root).resolve()


def _anchor_problem(target_file, anchor):
    """Why #anchor does not open a heading of target_file, or None. A notebook is read in JupyterLab and in the
    book, whose ids differ (JupyterLab keeps case and punctuation): the anchor must be both; a .md file is read
    on GitHub and in the book."""
    titles = headings(target_file)
    if target_file.suffix == ".ipynb":
        if anchor not in {jupyterlab_anchor(t) for t in titles} or anchor not in {github_anchor(t) for t in titles}:
            return "no heading with that anchor in both JupyterLab and the book"
    elif target_file.suffix == ".md" and anchor not in {github_anchor(t) for t in titles}:
        return "no heading with that anchor"
    return None


def test_every_link_opens_inside_the_served_folder():
    root = server_root(readme_lab_command())
    problems, followed = [], 0
    for path in learner_files():
        for target in relative_links(path):
            followed += 1
            where = f"{path.relative_to(ROOT)}: {target}"
            file, anchor = resolve(path, target)
            if file is None or not file.exists():
                problems.append(f"{where} (no such file)")
            elif not file.is_relative_to(root):
                problems.append(f"{where} (outside {root.relative_to(ROOT)}, the folder JupyterLab serves)")
            elif anchor and (why := _anchor_problem(file, anchor)):
                problems.append(f"{where} ({why})")
    assert followed >= 60, followed
    assert not problems, "links that lead nowhere:\n" + "\n".join(problems)


def test_the_check_finds_a_dead_end(tmp_path, monkeypatch):
    """The old README command, and a link to a missing heading, are both found."""
    old_root = server_root(["notebooks/01_order_problem.ipynb"])
    sources_link = [t for t in relative_links(ROOT / "notebooks" / "01_order_problem.ipynb") if "sources" in t]
    assert sources_link, "notebook 01 links the table of sources"
    file, _ = resolve(ROOT / "notebooks" / "01_order_problem.ipynb", sources_link[0])
    assert file.exists() and not file.is_relative_to(old_root)
    assert _anchor_problem(ROOT / "notebooks" / "02_naive_encodings.ipynb", "no-such-heading")
