"""The course as a book: docs/book/ builds warning-free into a static website of the committed notebooks.

The build is the README's command (Sphinx + MyST-NB + sphinx-book-theme, nothing executed, offline),
run once into a temporary folder with warnings as errors. The tests then check the built site:
a page per notebook and per solutions notebook, the landing page's course map linking every
notebook, every committed figure and explorer snapshot on its page, the search index, and the
launch buttons (Binder with the very links README.md gives, JupyterHub via nbgitpuller). The last
test opens a notebook page and the search page in Chromium (Python playwright), served from
127.0.0.1, with every request off the machine refused.

    .venv/bin/python -m pytest -o addopts="" -p no:cacheprovider -q tests/test_book.py

Chromium: `bash .ci/install_chromium.sh` (Debian's package; never `playwright install`).
Without Chromium the browser test skips, except when the environment variable CI is set: then a
browser that cannot start is a failure.
"""

import base64
import functools
import hashlib
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
import text_contrast

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "docs" / "book"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SOLUTIONS = sorted((ROOT / "notebooks" / "solutions").glob("[0-9][0-9]_*.ipynb"))
BUILD_S = 300
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# Outputs MyST-NB would show instead of an image/png of the same bundle (conf.py leaves the widget view out).
RICHER_THAN_PNG = ("text/html", "image/svg+xml", "application/javascript")


class _Page(HTMLParser):
    """The links and images of a built page; `table_links` are the links inside a <table>."""

    def __init__(self, text):
        super().__init__()
        self.links, self.table_links, self.images, self.alts, self.title = [], [], [], [], ""
        self._tables = 0
        self._in_title = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._tables += 1
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
            if self._tables:
                self.table_links.append(attrs["href"])
        elif tag == "img" and attrs.get("src"):
            self.images.append(attrs["src"])
            if attrs["src"].startswith("data:") or "_images/" in attrs["src"]:  # figures, not the theme's icons
                self.alts.append(attrs.get("alt") or "")
        elif tag == "title":
            self._in_title = True

    def handle_endtag(self, tag):
        if tag == "table":
            self._tables -= 1
        elif tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def _page_path(html, notebook):
    return html / notebook.relative_to(ROOT).with_suffix(".html")


def _parse(path):
    return _Page(path.read_text(encoding="utf-8"))


def _repo_path(notebook):
    return notebook.relative_to(ROOT).as_posix()


def _title(notebook):
    """The notebook's title: the text of the first Markdown heading of level 1."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise AssertionError(f"{notebook.name} has no '# title' line")


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    """The book, built once for this module by the README's command (quiet, into a temporary folder)."""
    out = tmp_path_factory.mktemp("book")
    command = [sys.executable, "-m", "sphinx", "-b", "html", "-W", "--keep-going", "-q"]
    command += ["-d", str(out / "doctrees"), str(BOOK), str(out / "html")]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_S)
    seconds = time.perf_counter() - start
    assert result.returncode == 0, f"the book does not build warning-free:\n{result.stdout}\n{result.stderr}"
    print(f"\nbook built in {seconds:.1f} s")
    return out / "html"


def test_the_notebooks_are_the_repository_notebooks():
    link = BOOK / "notebooks"
    assert link.is_symlink() and link.resolve() == ROOT / "notebooks", "docs/book/notebooks -> ../../notebooks"
    assert len(NOTEBOOKS) >= 6 and [p.name[:2] for p in NOTEBOOKS[:6]] == ["01", "02", "03", "04", "05", "06"]


def test_every_notebook_and_solutions_notebook_has_a_page(html):
    missing = [_repo_path(nb) for nb in NOTEBOOKS + SOLUTIONS if not _page_path(html, nb).is_file()]
    assert not missing, f"no page for {missing}"
    for notebook in NOTEBOOKS:
        page = _parse(_page_path(html, notebook))
        assert page.title.startswith(_title(notebook)), (notebook.name, page.title)


def test_the_landing_page_maps_every_notebook(html):
    page = _parse(html / "index.html")
    assert "Positional Encoding, interactively" in page.title
    # the course map is a table on the landing page (the sidebar links every page anyway)
    expected = {nb.relative_to(ROOT).with_suffix(".html").as_posix() for nb in NOTEBOOKS}
    missing = sorted(expected - {link.split("#")[0] for link in page.table_links})
    assert not missing, f"the course map on the landing page does not link {missing}"
    expected = {nb.relative_to(ROOT).with_suffix(".html").as_posix() for nb in SOLUTIONS}
    missing = sorted(expected - {link.split("#")[0] for link in page.links})
    assert not missing, f"the landing page does not link {missing}"


# A figure shown with alt text (pe_lib.accessible, the explorers' snapshots): an <img> inline in text/html.
INLINE_FIGURE = re.compile(r'<img src="data:image/png;base64,[^"]+" alt="([^"]+)"')
# Notebooks whose committed figures are still bare image/png outputs (alt text: the file's path), until they
# are re-run with pe_lib.accessible.show (docs/accessibility.md). The list may only shrink.
WITHOUT_ALT_TEXT = set()  # notebook numbers


def _figures(notebook):
    """(cell index, kind, key) of each figure output: ("png", sha256 file name) or ("inline", its HTML)."""
    found = []
    for index, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html_text = "".join(data.get("text/html", ""))
            if INLINE_FIGURE.search(html_text):
                found.append((index, "inline", html_text))
            elif "image/png" in data and not any(mime in data for mime in RICHER_THAN_PNG):
                png = base64.b64decode("".join(data["image/png"]))
                found.append((index, "png", hashlib.sha256(png).hexdigest() + ".png"))
    return found


def test_every_committed_figure_and_explorer_snapshot_is_on_its_page(html):
    """Each figure of a notebook is on the notebook's page: an image/png output as an <img> of that very PNG,
    a figure with alt text (text/html) as that very <img>, alt text included."""
    inline = 0
    for notebook in NOTEBOOKS:
        page = _page_path(html, notebook)
        text = page.read_text(encoding="utf-8")
        shown = {src.rsplit("/", 1)[-1] for src in _parse(page).images}
        expected = _figures(notebook)
        assert expected, f"{notebook.name} has no figure"
        missing = [
            f"cell {index}" for index, kind, key in expected if (key not in shown if kind == "png" else key not in text)
        ]
        assert not missing, f"{page.name}: the figures of {missing} are not on the page"
        for _, kind, name in expected:
            if kind == "png":
                image = html / "_images" / name
                assert image.is_file() and image.read_bytes()[:8] == PNG_MAGIC, image
        inline += sum(kind == "inline" for _, kind, _ in expected)
        assert "application/vnd.jupyter.widget-view+json" not in text, f"{page.name}: a widget view without state"
    print(f"\n{inline} figure(s) with alt text")


def test_figures_have_alt_text_that_says_what_they_show(html):
    """No figure's alt text is its file's path (what Sphinx writes for an image/png output), outside the list."""
    path_alt = {}
    for notebook in NOTEBOOKS + SOLUTIONS:
        parser = _Page(_page_path(html, notebook).read_text(encoding="utf-8"))
        bad = [alt for alt in parser.alts if alt.endswith(".png") or not alt.strip()]
        if bad:
            path_alt[notebook.stem] = len(bad)
    outside = {name: count for name, count in path_alt.items() if name[:2] not in WITHOUT_ALT_TEXT}
    assert not outside, f"figures whose alt text is a file path (show them with pe_lib.accessible.show): {outside}"
    numbers = {name[:2] for name in path_alt}
    done = sorted(n for n in WITHOUT_ALT_TEXT if n not in numbers and any(nb.stem[:2] == n for nb in NOTEBOOKS))
    assert not done, f"{done} no longer show a bare PNG: take them off WITHOUT_ALT_TEXT"


ELEMENT_ID = re.compile(r'\bid="([^"]+)"')


def test_every_link_between_the_books_pages_resolves(html):
    """Every relative link on every page (notebooks, solutions, the docs, the landing page) names a page of the
    book that exists, and its #anchor an element on that page: no dead end inside the book."""
    pages = _book_pages(html)
    ids = {}
    broken, followed = [], 0
    for name in pages:
        for href in _parse(html / name).links:
            if re.match(r"^[a-z][a-z0-9+.-]*:", href):  # https:, mailto:, javascript:
                continue
            target, _, anchor = href.partition("#")
            path = (html / name).parent / target if target else html / name
            if path.is_dir():
                path = path / "index.html"
            path = path.resolve()
            followed += 1
            if not path.is_file() or not path.is_relative_to(html.resolve()):
                broken.append(f"{name}: {href} (no such file)")
            elif anchor and path.suffix == ".html":
                if path not in ids:
                    ids[path] = set(ELEMENT_ID.findall(path.read_text(encoding="utf-8")))
                if anchor not in ids[path]:
                    broken.append(f"{name}: {href} (no element with id {anchor!r})")
    assert followed > 100, followed
    assert not broken, f"{len(broken)} broken links:\n" + "\n".join(broken[:30])


def test_search_index(html):
    index = html / "searchindex.js"
    assert index.is_file() and (html / "search.html").is_file()
    text = index.read_text(encoding="utf-8")
    missing = [nb.stem for nb in NOTEBOOKS if f'"notebooks/{nb.stem}"' not in text]
    assert not missing, f"not in the search index: {missing}"
    assert "pendulum" in text


def test_launch_buttons_open_the_notebook_in_the_repository(html):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for notebook in NOTEBOOKS + SOLUTIONS:
        path = _repo_path(notebook)
        links = _parse(_page_path(html, notebook)).links
        binder = [link for link in links if link.startswith("https://mybinder.org/v2/gh/")]
        assert len(binder) == 1, (path, binder)
        assert binder[0].endswith(f"/main?urlpath=lab/tree/{path}"), (path, binder[0])
        if notebook in NOTEBOOKS:  # the same link as README.md's Binder badge for this notebook
            assert f"({binder[0]})" in readme, f"{binder[0]} is not README.md's Binder link for {path}"
        hub = [link for link in links if "/hub/user-redirect/git-pull?" in link]
        assert len(hub) == 1, (path, hub)
        assert f"urlpath=lab/tree/positional-encoding-interactively/{path}&branch=main" in hub[0], hub[0]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def served(html):
    """The built book over HTTP on 127.0.0.1 (a random free port), as a web host would serve it."""
    handler = functools.partial(_QuietHandler, directory=str(html))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


JS_FIGURES = """() => Array.from(document.querySelectorAll("article .cell_output img")).map(img => {
  const box = img.getBoundingClientRect();
  return {src: img.getAttribute("src"), complete: img.complete, naturalWidth: img.naturalWidth,
          width: box.width, height: box.height};
})"""


# MathJax's typeset formulas on the page, once it has finished (it typesets after the page has loaded).
JS_MATH = """async () => {
  if (!window.MathJax || !window.MathJax.startup) return {loaded: false};
  await window.MathJax.startup.promise;
  const containers = Array.from(document.querySelectorAll("article mjx-container"));
  return {loaded: true, version: window.MathJax.version, formulas: containers.length,
          errors: document.querySelectorAll("article mjx-merror").length,
          shown: containers.filter(c => c.getBoundingClientRect().width > 0).length};
}"""


@pytest.mark.browser
def test_a_page_and_search_in_chromium(html, served, browser):
    notebook = NOTEBOOKS[0]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    offline = []  # every request off this machine is refused: the book must work offline
    context.route(
        re.compile(r"^(?!http://127\.0\.0\.1:).*"), lambda route: (offline.append(route.request.url), route.abort())
    )
    try:
        page = context.new_page()
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{served}/{notebook.relative_to(ROOT).with_suffix('.html').as_posix()}", wait_until="load")
        assert page.title().startswith(_title(notebook)), page.title()
        heading = page.locator("article h1").first
        assert heading.is_visible() and _title(notebook) in heading.inner_text()
        figure = page.locator("article .cell_output img").first
        figure.scroll_into_view_if_needed()
        assert figure.is_visible()
        figures = page.evaluate(JS_FIGURES)
        broken = [f["src"] for f in figures if not (f["complete"] and f["naturalWidth"] > 0)]
        assert figures and not broken, f"figures that did not load: {broken}"
        assert figures[0]["width"] > 100 and figures[0]["height"] > 50, figures[0]
        # formulas are typeset by the MathJax the book serves itself (docs/book/conf.py), with the network off
        math = page.evaluate(JS_MATH)
        assert math["loaded"] and math["formulas"] > 0 and math["shown"] > 0 and not math["errors"], math
        assert not any("mathjax" in url.lower() for url in offline), f"MathJax fetched from the network: {offline}"
        binder = page.locator("a[href^='https://mybinder.org/v2/gh/']")
        assert binder.count() == 1 and binder.get_attribute("href").endswith(_repo_path(notebook))

        page.goto(f"{served}/search.html?q=pendulum", wait_until="load")
        results = page.locator("#search-results ul.search li")
        results.first.wait_for(state="visible")
        hits = results.all_inner_texts()
        assert any("pendulum" in hit.lower() for hit in hits), hits
        assert not errors, f"JavaScript errors: {errors}"
    finally:
        context.close()
    print(f"\nMathJax {math['version']}: {math['formulas']} formulas typeset offline")
    print(f"requests refused (off this machine): {sorted(set(offline))}")


def _book_pages(html):
    """Every page of the built book (notebooks, solutions, docs, index, search, genindex)."""
    names = (path.relative_to(html).as_posix() for path in html.rglob("*.html"))
    return sorted(name for name in names if not name.startswith(("_static/", "_sources/", "_images/")))


SCHEMES = ("light", "dark")
# The theme's colours as they settle: no transition or animation may be caught midway (a contrast read
# mid-fade, the search button's text, failed a fresh run once).
NO_TRANSITIONS = "* { transition: none !important; animation: none !important; }"
JS_SETTLED = (
    """(scheme) => document.documentElement.dataset.theme === scheme && document.getAnimations().length === 0"""
)


# Syntax-highlighted code holds an element per token: on a notebook's page, nine tenths of the text axe-core's
# colour-contrast rule measures, and three quarters of its time (nb 05: 8.4 s a scheme, 2.1 s without the code).
# That rule is pointed away from the code, and tests/text_contrast.py measures every token in the page instead:
# the same colours and backgrounds to 0.01 (test_the_code_contrast_check_measures_what_axe_core_measures),
# punctuation included, which axe-core leaves out.
CODE = ".highlight"
AXE_CONTRAST_OUTSIDE_CODE = {"rules": [{"id": "color-contrast", "selector": f"*:not({CODE} *)"}]}
JS_AXE = """async ([configuration, options]) => {
  if (configuration) axe.configure(configuration);
  return (await axe.run(document, options)).violations.map(v => ({id: v.id, impact: v.impact,
    nodes: v.nodes.map(node => node.target)}));
}"""
# axe-core's colour-contrast measures in the code: the ratio on each element it checked, as text_contrast.MARK.
JS_MARK_AXE_CONTRAST = """async ([code, mark]) => {
  axe.reset();
  const results = await axe.run(document, {runOnly: {type: "rule", values: ["color-contrast"]}, elementRef: true,
                                          resultTypes: ["passes", "violations", "incomplete"]});
  let marked = 0;
  for (const kind of ["passes", "violations", "incomplete"]) {
    for (const rule of results[kind]) {
      for (const node of rule.nodes) {
        if (!node.element.closest(code)) continue;
        const data = (node.any[0] || {}).data || {};
        node.element.setAttribute(mark, `${kind} ${data.contrastRatio}`);
        marked += 1;
      }
    }
  }
  return marked;
}"""


def _check_shown_page(page, name, scheme, found):
    """Every axe-core rule (colour contrast outside the code) and the code's contrast, on the page as shown: the
    problems go into `found`; returns how many texts of code were measured."""
    for violation in page.evaluate(JS_AXE, [AXE_CONTRAST_OUTSIDE_CODE, {"resultTypes": ["violations"]}]):
        rule = f"{violation['id']} ({violation['impact']}, {scheme} mode)"
        found.setdefault(rule, []).append(f"{name}: {violation['nodes'][:3]}")
    code = text_contrast.texts(page, CODE)
    for problem in text_contrast.problems(code, name):
        found.setdefault(f"code contrast ({scheme} mode)", []).append(problem)
    return sum(text["count"] for text in code)


def _offline_context(browser):
    """A browser context in which every request off this machine is refused (the book works offline)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route(re.compile(r"^(?!http://127\.0\.0\.1:).*"), lambda route: route.abort())
    return context


def _load(page, url, scheme):
    page.emulate_media(color_scheme=scheme)
    # network idle: MathJax typesets after the load event, then fetches its fonts
    page.goto(url, wait_until="networkidle")
    page.add_style_tag(content=NO_TRANSITIONS)


def _show_in(page, scheme):
    page.emulate_media(color_scheme=scheme)
    page.wait_for_function(JS_SETTLED, arg=scheme, polling=50)


@pytest.mark.browser
def test_every_page_passes_axe_core_in_both_colour_schemes(html, served, browser):
    """axe-core (the version axe-playwright-python bundles) finds no violation at all, minor ones included,
    on any page of the book, in the theme's light and dark modes (which follow the reader's system setting);
    nor does tests/text_contrast.py in the syntax-highlighted code (WCAG 2.1 AA: 4.5:1).

    Each page is loaded once, in light, and checked; then the system setting turns dark (the theme follows
    it: prefers-color-scheme) and the page is checked again. Compared once on every page (2026-11): a page
    switched to dark gives the very results (every rule, node and colour) of a page loaded in dark.
    """
    from axe_playwright_python.sync_playwright import Axe

    context = _offline_context(browser)
    found, pages, tokens = {}, _book_pages(html), 0
    try:
        page = context.new_page()
        for name in pages:
            _load(page, f"{served}/{name}", SCHEMES[0])
            page.evaluate(Axe().axe_script)
            for scheme in SCHEMES:
                _show_in(page, scheme)
                tokens += _check_shown_page(page, name, scheme, found)
    finally:
        context.close()
    print(f"\naxe-core: {len(pages)} pages in {' and '.join(SCHEMES)} mode, {len(found)} kinds of violation")
    print(f"code: {tokens} highlighted texts measured for contrast")
    assert tokens > 10_000, f"only {tokens} texts of code measured: did the book's code markup change?"
    assert not found, "axe-core violations:\n" + "\n".join(f"{rule}: {where[:5]}" for rule, where in found.items())


@pytest.mark.browser
def test_the_code_contrast_check_measures_what_axe_core_measures(html, served, browser):
    """On a page with code, in both schemes: every token axe-core's colour-contrast rule measures is measured by
    tests/text_contrast.py too, at the same ratio (axe-core rounds to 0.01). A token coloured too light fails both."""
    from axe_playwright_python.sync_playwright import Axe

    context = _offline_context(browser)
    name = "notebooks/solutions/10_real_model_solutions.html"
    try:
        page = context.new_page()
        _load(page, f"{served}/{name}", SCHEMES[0])
        page.evaluate(Axe().axe_script)
        for scheme in SCHEMES:
            _show_in(page, scheme)
            marked = page.evaluate(JS_MARK_AXE_CONTRAST, [CODE, text_contrast.MARK])
            code = text_contrast.texts(page, CODE)
            by_axe = [(text, text["mark"].split()) for text in code if text["mark"]]
            found = sum(text["count"] for text, _ in by_axe)
            assert marked > 50 and found == marked, f"{scheme}: axe-core measured {marked} tokens, the check {found}"
            assert sum(text["count"] for text in code) > marked, "the check measures punctuation too, axe-core not"
            differ = [
                (text["text"], kind, ratio, round(text_contrast.ratio(text), 2))
                for text, (kind, ratio) in by_axe
                if kind != "passes" or abs(float(ratio) - text_contrast.ratio(text)) > 0.01
            ]
            assert not differ, f"{scheme}: where axe-core and the check differ: {differ[:5]}"
            assert not text_contrast.problems(code, name)
        _show_in(page, "light")
        page.add_style_tag(content=f"{CODE} .n {{ color: #999 !important; }}")  # names: 2.8:1 on white
        too_light = text_contrast.problems(text_contrast.texts(page, CODE), name)
        assert too_light and all("below 4.5:1" in problem for problem in too_light), too_light[:3]
        violations = page.evaluate(JS_AXE, [None, {"runOnly": {"type": "rule", "values": ["color-contrast"]}}])
        assert [violation["id"] for violation in violations] == ["color-contrast"], violations
    finally:
        context.close()
