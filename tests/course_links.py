"""The links a learner can click in the notebooks and docs, and the folder JupyterLab serves when started as the
README says (tests/test_links.py resolves them on disk, tests/test_browser.py through a running JupyterLab).

JupyterLab resolves a relative link against the notebook's own folder and opens it only when the target is
inside the server's root: `jupyter lab notebooks/01_order_problem.ipynb` serves notebooks/ alone, and a link to
../docs/sources.md from there is a dead end.
"""

import json
import re
import shlex
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
# [text](target) in Markdown (not an image's ![alt](src)), and href="..." in inline HTML
MARKDOWN_LINK = re.compile(r'(?<!!)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HTML_LINK = re.compile(r'<a\s[^>]*href="([^"]+)"')
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # https:, mailto:


def readme_lab_command():
    """The `jupyter lab ...` command of the README's quick start, as a list of arguments."""
    for block in re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL):
        for part in block.replace("\\\n", " ").split("&&"):
            words = shlex.split(part)
            for i, word in enumerate(words):
                if word.endswith("jupyter") and words[i + 1 : i + 2] == ["lab"]:
                    return words[i + 2 :]
    raise AssertionError("README.md's quick start has no `jupyter lab` command")


def server_root(arguments, cwd=ROOT):
    """The folder jupyter_server serves for these `jupyter lab` arguments, started in cwd (the clone).

    As jupyter_server decides it: --ServerApp.root_dir (or --notebook-dir) when given; else a file argument
    makes its folder the root and a folder argument itself; else the working folder.
    """
    positional, root = [], None
    words = list(arguments)
    while words:
        word = words.pop(0)
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            if name in ("ServerApp.root_dir", "notebook-dir", "ServerApp.notebook_dir", "NotebookApp.notebook_dir"):
                root = value or words.pop(0)
        else:
            positional.append(word)
    if root is not None:
        return (cwd / root).resolve()
    if positional:
        first = (cwd / positional[0]).resolve()
        return first if first.is_dir() else first.parent
    return cwd.resolve()


def markdown_of(path):
    """The Markdown a learner reads in a notebook (its Markdown cells) or a .md file."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return path.read_text(encoding="utf-8")


def relative_links(path):
    """Every relative link target of a notebook or Markdown file (no external or same-page-only links)."""
    text = markdown_of(path)
    targets = MARKDOWN_LINK.findall(text) + HTML_LINK.findall(text)
    return [t for t in targets if not EXTERNAL.match(t) and not t.startswith("#")]


def resolve(path, target):
    """(file the link opens, its #anchor or ""), resolved from the linking file's folder."""
    file, _, anchor = target.partition("#")
    resolved = PurePosixPath(*path.parent.relative_to(ROOT).parts, file)
    parts = []
    for part in resolved.parts:
        if part == "..":
            if not parts:
                return None, anchor  # above the clone
            parts.pop()
        elif part != ".":
            parts.append(part)
    return ROOT.joinpath(*parts), anchor


def learner_files():
    """The notebooks (with their solutions) and the docs a learner reaches from them."""
    notebooks = sorted(p for p in (ROOT / "notebooks").rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return notebooks + sorted((ROOT / "docs").glob("*.md")) + [README]


def jupyterlab_anchor(heading):
    """The id JupyterLab gives a rendered Markdown heading: its text with spaces as dashes."""
    return heading.strip().replace(" ", "-")


def github_anchor(heading):
    """The id GitHub, MyST (myst_heading_anchors) and the book give a heading: lower case, punctuation dropped."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(path):
    """The text of every Markdown heading of a notebook or .md file (without its #s and inline marks)."""
    found = []
    for line in markdown_of(path).splitlines():
        match = re.match(r"^#{1,6}\s+(.*)$", line)
        if match:
            found.append(re.sub(r"[`*_]", "", match.group(1)))
    return found
