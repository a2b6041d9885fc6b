"""Sphinx configuration of the course as a book (a static website of the committed notebooks).

Build it from the repository root (offline, nothing is executed, a few seconds):

    .venv/bin/python -m sphinx -b html -W --keep-going docs/book docs/book/_build/html

The book's source tree mirrors the repository, so that every relative link in the notebooks and
docs works unchanged and the launch buttons name each notebook by its path in the repository:

    docs/book/index.md               the landing page and course map (written for the book)
    docs/book/notebooks -> ../../notebooks   a symlink: the committed notebooks are the only source
    docs/book/docs/sources.md, docs/book/docs/teaching.md   include docs/sources.md, docs/teaching.md

Notebooks are rendered with their committed outputs (MyST-NB, `nb_execution_mode = "off"`).
Links to repository files that are not part of the book (README.md, pe_lib/..., docs/maintainers.md)
become links to the file on GitHub (see `RepositoryLinks` below) instead of broken links.
"""

import importlib.util
import posixpath
import shutil
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ConfigError
from sphinx.transforms.post_transforms import SphinxPostTransform

BOOK = Path(__file__).resolve().parent
ROOT = BOOK.parent.parent
# The GitHub address of the course, as in README.md's Binder links: OWNER is replaced once the
# repository is public (docs/maintainers.md, "Publishing the book").
REPOSITORY_URL = "https://github.com/OWNER/positional-encoding-interactively"
BRANCH = "main"

if not (BOOK / "notebooks").is_dir() or not (BOOK / "notebooks").resolve() == ROOT / "notebooks":
    raise ConfigError(
        "docs/book/notebooks must be a symlink to ../../notebooks (git checks symlinks out as plain files "
        "when core.symlinks is false, e.g. on Windows): `ln -s ../../notebooks docs/book/notebooks`"
    )

project = "Positional Encoding, interactively"
author = "the course authors"
copyright = "the course authors, MIT licence"

# MyST-NB brings MyST-Parser (Markdown); githubpages writes .nojekyll, so that GitHub Pages serves _static/.
extensions = ["myst_nb", "sphinx.ext.githubpages"]
root_doc = "index"
exclude_patterns = ["_build", "jupyter_execute", "**/.ipynb_checkpoints", ".DS_Store", "Thumbs.db"]

# MyST: $...$ and $$...$$ math, as in JupyterLab's Markdown cells; `#a-heading` anchors as on GitHub.
myst_enable_extensions = ["dollarmath"]

# MathJax is served by the book itself, so formulas render without network access (a reader offline, a
# school's network that blocks CDNs). Its files come from the PyPI package sphinx-mathjax-offline (MathJax
# 3.2.2, Apache-2.0, pinned in requirements.txt); `copy_mathjax` copies what the pages use into _static/.
_MATHJAX_PACKAGE = importlib.util.find_spec("sphinx-mathjax-offline")
if _MATHJAX_PACKAGE is None:
    raise ConfigError("sphinx-mathjax-offline is not installed: pip install -r requirements.txt")
MATHJAX = Path(_MATHJAX_PACKAGE.origin).parent / "static" / "mathjax"
mathjax_path = "mathjax/tex-chtml.js"
# TeX input, HTML-CSS output and what they load on demand (TeX extensions, fonts, the accessibility menu and
# its speech rules); the other combined builds (SVG output, MathML input) are left out: 8 MB, not 24.
MATHJAX_PARTS = ["tex-chtml.js", "input/tex", "output/chtml", "ui", "a11y", "sre", "adaptors"]
myst_heading_anchors = 3

# MyST-NB: never execute, show the outputs committed in the notebooks.
nb_execution_mode = "off"
# The explorers are ipywidgets. The notebooks save no widget state (only a live kernel can drive
# them), so a widget view cannot render on a static page: leave it out, and let the display
# bundle's other entries speak instead (an image/png snapshot of the explorer where the bundle has
# one, else its text/plain summary). Excluding the view also keeps the ipywidgets JavaScript
# (loaded from a CDN) off the pages.
nb_mime_priority_overrides = [("*", "application/vnd.jupyter.widget-view+json", None)]

html_theme = "sphinx_book_theme"
# The theme's primary sidebar, with the course title and the search button each inside a landmark
# (axe-core's "region" rule: every piece of content in a landmark; tests/test_accessibility.py).
templates_path = ["_templates"]
html_sidebars = {"**": ["course-home.html", "icon-links.html", "course-search.html", "sbt-sidebar-nav.html"]}
html_title = "Positional Encoding, interactively"
html_theme_options = {
    "repository_url": REPOSITORY_URL,
    "repository_branch": BRANCH,
    # The book's pages sit at the same paths as the files in the repository (notebooks/NN_*.ipynb),
    # so the path from the repository root to a page's source is the page name itself: the launch
    # buttons open notebooks/NN_*.ipynb, exactly like README.md's Binder links. (The theme's
    # "edit this page" and "show source" buttons, which would need docs/book/ for index.md, are off.)
    "path_to_docs": "",
    "launch_buttons": {
        "binderhub_url": "https://mybinder.org",
        # A placeholder: replace with your school's hub (nbgitpuller installed), see docs/maintainers.md.
        "jupyterhub_url": "https://hub.example.edu",
        "notebook_interface": "jupyterlab",
    },
    "use_download_button": True,
    "use_fullscreen_button": True,
    "home_page_in_toc": True,
    "show_toc_level": 2,
}


class RepositoryLinks(SphinxPostTransform):
    """Resolve the Markdown links of the notebooks and docs as they resolve in the repository.

    The book mirrors the repository's layout, so a relative link names the same file from the book's
    tree as from the repository's. Two things need help, both before MyST resolves the links:

    - Sphinx resolves symlinks in link targets, so a link into (or out of) docs/book/notebooks
      arrives as a document outside the book, e.g. `/.../notebooks/01_order_problem`; it is mapped
      back to the book's page `notebooks/01_order_problem`.
    - A link to a repository file that is not a page of the book (`../README.md`, `maintainers.md`,
      `../pe_lib/...`) becomes a link to that file on GitHub, instead of a missing reference (MyST)
      or a download of a copy.

    Anything else is left alone: a link to a file that exists nowhere still fails the `-W` build.
    """

    default_priority = 5  # before MyST's reference resolver (9)

    def run(self, **kwargs):
        links = (addnodes.pending_xref, addnodes.download_reference)
        for node in list(self.document.findall(lambda node: isinstance(node, links))):
            if node.get("reftype") != "myst":
                continue
            if node.get("refdomain") == "doc":
                self._doc_link(node)
            else:
                self._file_link(node)

    def _doc_link(self, node):
        target = Path(node["reftarget"])
        if not target.is_absolute() or not target.is_relative_to(ROOT):
            return
        docname = target.relative_to(ROOT).as_posix()
        if docname in self.env.all_docs:
            node["reftarget"] = docname
            return
        for suffix in self.config.source_suffix:
            if (ROOT / (docname + suffix)).is_file():
                self._to_github(node, docname + suffix, node.get("reftargetid"))
                return

    def _file_link(self, node):
        target, _, anchor = node["reftarget"].partition("#")
        if not target or "://" in target or ":" in target.split("/")[0]:
            return
        refdoc_dir = posixpath.dirname(node.get("refdoc", self.env.docname))
        path = posixpath.normpath(posixpath.join(refdoc_dir, target))
        if not path.startswith("../") and (ROOT / path).exists():
            self._to_github(node, path, anchor)

    @staticmethod
    def _to_github(node, path, anchor):
        kind = "tree" if (ROOT / path).is_dir() else "blob"
        uri = f"{REPOSITORY_URL}/{kind}/{BRANCH}/{path}" + (f"#{anchor}" if anchor else "")
        reference = nodes.reference("", "", internal=False, refuri=uri)
        reference += node.children or [nodes.literal(path, path)]
        node.replace_self(reference)


class NamedHeaderCells(SphinxPostTransform):
    """Give an empty table header cell a name a screen reader can announce (axe-core's "empty-table-header").

    A Markdown table whose first column holds row names often leaves that column's header empty; the
    cell then reads as "row names" to a screen reader and stays blank on the page.
    """

    default_priority = 800

    def run(self, **kwargs):
        for head in self.document.findall(nodes.thead):
            for entry in head.findall(nodes.entry):
                if not entry.astext().strip():
                    entry.children = []
                    entry += nodes.paragraph("", "", nodes.inline("", "row names", classes=["visually-hidden"]))


def copy_mathjax(app, exception):
    """After a successful build, put MathJax's files where mathjax_path points: _static/mathjax/."""
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        source = MATHJAX / part
        if source.is_dir():
            shutil.copytree(source, target / part, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / part)


def setup(app):
    app.connect("build-finished", copy_mathjax)
    app.add_post_transform(RepositoryLinks)
    app.add_post_transform(NamedHeaderCells)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
