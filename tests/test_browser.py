"""Every notebook in a real browser: JupyterLab + Debian's Chromium, driven by Python playwright.

For each notebook in notebooks/ (a copy: the committed files are never touched) the test opens
it in JupyterLab and checks that it opens unmodified (JupyterLab does not mark it changed once
the kernel is ready), runs all cells from the Run menu, waits for the kernel to go idle, and
asserts that every cell ran without an error, that every widget rendered, and that moving a
slider of each explorer (`.pe-explorer`) changes its figure (`img.pe-explorer-figure`). Then,
on the same page and the same kernel (nothing runs twice), it presents the notebook as a
lecturer does: at 1280 x 720, the deck started from the notebook toolbar (jupyterlab-slideshow),
every slide visited with the Space key. Each slide must fit the screen, show no MathJax error,
keep its text at WCAG's contrast (4.5:1, 3:1 for large text; measured in the page, as axe-core's
own color-contrast rule finds nothing to check inside the deck), and show every explorer on it
as a live widget whose slider moves its figure on the slide.

    .venv/bin/pytest -m browser tests/test_browser.py -p no:cacheprovider -s    # -s prints timings

Chromium: `bash .ci/install_chromium.sh` (Debian's package; never `playwright install`).
Without Chromium the tests skip, except when the environment variable CI is set: then a
browser that cannot start is a failure.
"""

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import text_contrast
from course_links import learner_files, readme_lab_command, relative_links, resolve, server_root

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
# PE_NOTEBOOK_DIR points the test at another folder of notebooks (used to develop the test itself).
NOTEBOOK_DIR = Path(os.environ.get("PE_NOTEBOOK_DIR", ROOT / "notebooks")).resolve()
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
# PE_SLIDE_SCREENSHOTS=DIR saves every slide as DIR/NN_name/slide-NN.png, to look at (the test measures them).
SCREENSHOTS = os.environ.get("PE_SLIDE_SCREENSHOTS")
# The test server's own user settings: every cell attached to the DOM (no windowing, so the page
# can be inspected as a whole). Everything else is the course's settings as a learner gets them
# (lab-settings/, installed into this environment by requirements.txt): no news toast, the slides' styles.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
VIEWPORT = {"width": 1400, "height": 1000}  # the notebook view: wide enough for every figure
SERVER_START_S = 90
OPEN_S = 120  # first load of JupyterLab in a cold browser + kernel start (torch import) on 2 cores
RUN_ALL_S = 300  # notebook 05 trains small models (< 30 s alone); generous for a busy CI machine
WIDGET_S = 30
SLIDER_S = 15
# The lecture screen: a 720p projector. A slide may be this tall (the deck's own padding included).
SLIDE_VIEWPORT = {"width": 1280, "height": 720}
SLIDE_TOLERANCE_PX = 2  # sub-pixel rounding of the layout
FILL_TOLERANCE_PX = 12  # a slide with a figure reaches this close to the bottom of its room
# The least computed font size on a slide, in CSS pixels, by kind of text: readable from the back of a room.
MIN_FONT_PX = {"body": 24, "heading": 28, "math": 24, "code": 20, "control": 20}
KEY_S = 10  # a key press in the deck shows the next cell within this time

# JavaScript run in the page. `window.jupyterapp` exists because the server runs with
# --LabApp.expose_app_in_browser=True.
JS_APP_READY = """() => Boolean(window.jupyterapp && window.jupyterapp.commands.hasCommand("docmanager:open")
  && window.jupyterapp.commands.hasCommand("notebook:run-all-cells"))"""
JS_OPEN = """async (path) => { await window.jupyterapp.commands.execute("docmanager:open", {path}); }"""
JS_NOTEBOOK_READY = """(path) => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return Boolean(panel && panel.context && panel.context.path === path && panel.content
    && panel.content.widgets.length > 0 && panel.sessionContext.isReady && kernel && kernel.status === "idle");
}"""
JS_CLOSE_ALL = """async () => {
  const app = window.jupyterapp;
  for (const widget of Array.from(app.shell.widgets("main"))) {
    if (widget.context) { widget.context.model.dirty = false; }  // no "save changes?" dialog
  }
  await app.commands.execute("application:close-all");
}"""
JS_RUN_FINISHED = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session.kernel;
  const prompts = Array.from(panel.node.querySelectorAll(".jp-CodeCell .jp-InputPrompt"));
  const code = panel.content.widgets.filter(c => c.model.type === "code" && c.model.sharedModel.getSource().trim());
  const allRan = code.every(c => c.model.executionCount !== null);
  const failed = code.some(c => c.model.outputs.toJSON().some(o => o.output_type === "error"));
  return kernel.status === "idle" && !prompts.some(p => p.textContent.includes("*")) && (allRan || failed);
}"""
# Outputs are cleared before running, so that the committed outputs (and their execution
# counts) can never be mistaken for the new run's.
JS_CLEAR_OUTPUTS = """async () => {
  const app = window.jupyterapp;
  await app.commands.execute("notebook:clear-all-cell-outputs");
  const panel = app.shell.currentWidget;
  return panel.content.widgets.filter(c => c.model.type === "code")
    .every(c => c.model.executionCount === null && c.model.outputs.length === 0);
}"""
JS_CELL_REPORT = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.widgets.map((cell, index) => {
    const model = cell.model;
    const report = {index, type: model.type, source: model.sharedModel.getSource().slice(0, 80)};
    if (model.type === "code") {
      report.executionCount = model.executionCount;
      report.errors = model.outputs.toJSON().filter(o => o.output_type === "error").map(o => o.ename + ": " + o.evalue);
    }
    return report;
  });
}"""
JS_WIDGET_STATE = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const mime = "application/vnd.jupyter.widget-view+json";
  const expected = panel.content.widgets.filter(c => c.model.type === "code")
    .reduce((n, c) => n + c.model.outputs.toJSON().filter(o => o.data && o.data[mime]).length, 0);
  const nodes = Array.from(panel.node.querySelectorAll(".jp-Cell-outputArea .jp-OutputArea-output"));
  const failed = nodes.filter(n => /Error displaying widget|model not found/i.test(n.innerText));
  const rendered = nodes.filter(n => n.querySelector(":scope > .jupyter-widgets") && !failed.includes(n));
  const figures = Array.from(panel.node.querySelectorAll("img.pe-explorer-figure"));
  return {
    expected,
    rendered: rendered.length,
    failed: failed.map(n => n.innerText.slice(0, 200)),
    loading: /Loading widget/.test(panel.node.innerText),
    figuresPending: figures.filter(img => !img.getAttribute("src") || !img.complete).length,
  };
}"""
JS_STDERR_TRACEBACKS = """() => Array.from(window.jupyterapp.shell.currentWidget.node.querySelectorAll(
    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'))
  .map(e => e.innerText).filter(t => /Traceback/.test(t)).map(t => t.slice(0, 500))"""
# Once the kernel is ready JupyterLab copies the kernel's language_info into the notebook (on the
# tick after kernel_info arrives): the notebook is "modified" unless the file holds the same.
JS_OPENED = """async () => {
  const panel = window.jupyterapp.shell.currentWidget;
  await panel.sessionContext.session.kernel.info;
  await new Promise(resolve => setTimeout(resolve, 500));
  return {dirty: panel.context.model.dirty, metadata: panel.context.model.toJSON().metadata};
}"""
JS_SELECT_FIRST_CELL = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  notebook.mode = "command";
  notebook.activeCellIndex = 0;
  notebook.deselectAll();
  notebook.activeCell.node.focus();
}"""
JS_PRESENTING = """() => document.body.dataset.jpDeckMode === "presenting"
  && window.jupyterapp.shell.currentWidget.hasClass("jp-Deck")"""
# The cells off the slide, and how many of them the browser still lays out (lab-settings takes them out of the
# layout: at each key press the deck otherwise restyles the whole notebook).
JS_OFF_SLIDE_LAID_OUT = """() => {
  const off = [...window.jupyterapp.shell.currentWidget.node.querySelectorAll(".jp-Cell:not(.jp-deck-mod-onscreen)")];
  return {off: off.length, laidOut: off.filter(cell => getComputedStyle(cell).display !== "none").length};
}"""
JS_ACTIVE_CELL_MOVED = """(before) => window.jupyterapp.shell.currentWidget.content.activeCellIndex !== before"""
JS_FOCUS_ACTIVE_CELL = """() => window.jupyterapp.shell.currentWidget.content.activeCell.node.focus()"""
JS_STOP_DECK = """async () => {
  if (document.body.dataset.jpDeckMode === "presenting") { await window.jupyterapp.commands.execute("deck:stop"); }
}"""
# What the deck shows now. jupyterlab-slideshow marks the cells of the current slide with
# jp-deck-mod-onscreen (the rest collapse to height 0) and scrolls the notebook's outer box when a
# slide is taller than its room: that box's scrollHeight is the slide's height as laid out, its
# clientHeight the room the course's deck styles give a slide (the screen less the strips kept clear
# of the deck's controls).
JS_EXPLORER_CELLS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .map((cell, index) => cell.node.querySelector(".pe-explorer") ? index : -1).filter(index => index >= 0)"""
JS_DECK_STATE = """async (explorerCells) => {
  await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const panel = window.jupyterapp.shell.currentWidget;
  const notebook = panel.content;
  const box = panel.node.querySelector(".jp-WindowedPanel-outer") || notebook.node;
  const room = box.getBoundingClientRect();
  const onScreen = notebook.widgets.map((cell, index) => ({cell, index}))
    .filter(({cell}) => cell.hasClass("jp-deck-mod-onscreen"));
  const rects = onScreen.map(({cell}) => cell.node.getBoundingClientRect());
  const rect = r => ({left: Math.round(r.left), top: Math.round(r.top), right: Math.round(r.right),
                      bottom: Math.round(r.bottom)});
  // What a click on the slide could hit instead of the slide: the deck's arrows, the notebook toolbar (it
  // shows on hover but takes clicks while invisible), the design tools' button.
  const controls = Array.from(document.querySelectorAll(
      ".jp-Deck-Remote button, .jp-Deck .jp-NotebookPanel-toolbar, .jp-Deck-DesignTools button"))
    .map(node => ({name: node.className.toString().slice(0, 60) || node.tagName, box: node.getBoundingClientRect()}))
    .filter(({box}) => box.width > 0 && box.height > 0)
    .map(({name, box}) => ({name, ...rect(box)}));
  const content = rects.map((r, i) => ({index: onScreen[i].index, left: r.left, right: r.right,
    top: Math.max(r.top, room.top), bottom: Math.min(r.bottom, room.bottom)}))
    .filter(r => r.bottom > r.top);
  const covered = [];
  for (const control of controls) {
    for (const cell of content) {
      if (control.left < cell.right && control.right > cell.left
          && control.top < cell.bottom && control.bottom > cell.top) {
        covered.push(`${control.name} at (${control.left}, ${control.top}) over cell ${cell.index}`);
      }
    }
  }
  const figures = onScreen.flatMap(({cell}) => Array.from(cell.node.querySelectorAll(".jp-OutputArea-output img")));
  const explorers = onScreen.filter(({index}) => explorerCells.includes(index)).map(({cell, index}) => {
    const img = cell.node.querySelector(".pe-explorer img.pe-explorer-figure");
    const shown = img ? img.getBoundingClientRect() : null;
    // every slider handle on screen and the topmost element where a pointer would grab it
    const handles = Array.from(cell.node.querySelectorAll(".pe-explorer .widget-slider .noUi-handle")).map(handle => {
      const r = handle.getBoundingClientRect();
      const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
      const hit = document.elementFromPoint(x, y);
      return {inView: r.height > 0 && r.top >= room.top - 1 && r.bottom <= room.bottom + 1 && r.right <= room.right + 1,
              reachable: Boolean(hit && (hit === handle || handle.contains(hit) || hit.contains(handle)))};
    });
    return {
      index,
      widget: Boolean(cell.node.querySelector(".jp-OutputArea-output .jupyter-widgets")
        && cell.node.querySelector(".pe-explorer")),
      naturalWidth: img ? img.naturalWidth : 0,
      inView: Boolean(shown && shown.height > 0 && shown.top >= room.top - 1 && shown.bottom <= room.bottom + 1),
      figure: shown ? [Math.round(shown.width), Math.round(shown.height)] : null,
      handles: handles.length,
      handlesOff: handles.filter(h => !h.inView || !h.reachable).length,
      error: /Error displaying widget|model not found|Loading widget/i.test(cell.node.innerText),
    };
  });
  return {
    presenting: document.body.dataset.jpDeckMode === "presenting",
    active: notebook.activeCellIndex,
    cells: onScreen.map(({index}) => index),
    height: Math.round(box.scrollHeight),
    room: Math.round(box.clientHeight),
    roomTop: Math.round(room.top),
    roomBottom: Math.round(room.bottom),
    top: Math.round(Math.min(...rects.map(r => r.top))),
    bottom: Math.round(Math.max(...rects.map(r => r.bottom))),
    viewport: window.innerHeight,
    figures: figures.length,
    covered,
    math: onScreen.reduce((n, {cell}) => n + cell.node.querySelectorAll("mjx-container").length, 0),
    mathErrors: onScreen.reduce((n, {cell}) => n + cell.node.querySelectorAll("mjx-merror").length, 0),
    text: onScreen.map(({cell}) => cell.node.innerText).join(" / ").slice(0, 300),
    explorers,
  };
}"""


CUSTOM_CSS = ROOT / "binder" / "custom.css"


def lab_environment(tmp):
    """A JupyterLab server's environment of its own under tmp: the course's lab settings and code colours."""
    settings = tmp / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values))
    install_custom_css(tmp / "config")
    return dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(tmp / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
        PYTHONUNBUFFERED="1",
    )


def install_custom_css(config_dir):
    """Put the course's JupyterLab CSS where --LabApp.custom_css=True loads it from, as binder/postBuild does."""
    (config_dir / "custom").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CUSTOM_CSS, config_dir / "custom" / "custom.css")


def _link_targets():
    """Every existing file the notebooks' and docs' relative links open (tests/course_links.py)."""
    targets = set()
    for path in learner_files():
        for target in relative_links(path):
            file, _ = resolve(path, target)
            if file is not None and file.is_file():
                targets.add(file)
    return targets


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _api(server, method, path):
    request = urllib.request.Request(
        f"{server['url']}{path}", method=method, headers={"Authorization": f"token {server['token']}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


@pytest.fixture(scope="session")
def lab_server():
    """JupyterLab on 127.0.0.1 (random free port, random token), started as the README starts it.

    In a temporary copy of the clone's learner files (notebooks/ and every file their links reach), with
    the README's own `jupyter lab` arguments (so it serves the folder a learner's JupyterLab serves) and the
    test's (no browser, a port, a token, the app exposed to the page's scripts).
    """
    with tempfile.TemporaryDirectory(prefix="pe-browser-") as tmp:
        tmp = Path(tmp)
        clone = tmp / "clone"
        shutil.copytree(NOTEBOOK_DIR, clone / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for path in _link_targets() | {ROOT / "README.md"}:  # what the learner files link to, and the README
            if not path.is_relative_to(ROOT / "notebooks"):
                (clone / path.relative_to(ROOT)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, clone / path.relative_to(ROOT))
        readme = readme_lab_command()
        root = server_root(readme, cwd=clone)
        env = lab_environment(tmp)
        port, token = _free_port(), secrets.token_hex(24)
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            *readme,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            "--ServerApp.allow_root=True",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.custom_css=True",  # the course's code colours (binder/custom.css), as Binder has them
        ]
        log_path = tmp / "server.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, cwd=clone, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = {"url": f"http://127.0.0.1:{port}", "token": token, "root": root, "clone": clone, "process": process}
        # where the notebooks are, as JupyterLab names paths: relative to the folder it serves
        server["notebooks"] = (clone / "notebooks").relative_to(root).as_posix().removeprefix(".")
        try:
            deadline = time.monotonic() + SERVER_START_S
            while True:
                if process.poll() is not None:
                    pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
                try:
                    _api(server, "GET", "/api/status")
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        pytest.fail(f"JupyterLab did not answer in {SERVER_START_S} s:\n{log_path.read_text()[-3000:]}")
                    time.sleep(0.25)
            yield server
        finally:
            process.terminate()  # the server shuts its kernels down on SIGTERM
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="session")
def context(browser, lab_server):
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    yield context
    context.close()


def _shutdown_kernels(server):
    """Stop every session's kernel, so that the next notebook starts in a quiet machine."""
    for session in _api(server, "GET", "/api/sessions"):
        _api(server, "DELETE", f"/api/sessions/{session['id']}")


class LabPage:
    """One JupyterLab page for all the notebooks: loading JupyterLab costs ~10 s, opening a notebook in it < 1 s."""

    def __init__(self, context, server):
        self.context, self.server = context, server
        self.page, self.errors = None, []

    def _load(self):
        self.page, self.errors = self.context.new_page(), []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(f"{self.server['url']}/lab?token={self.server['token']}")  # workspaces dir: empty, temporary
        self.page.wait_for_function(JS_APP_READY, timeout=OPEN_S * 1000, polling=250)
        self.page.evaluate("async () => { await window.jupyterapp.restored; }")  # layout restored: safe to open

    def load(self):
        """The page with JupyterLab loaded (loaded now if it is not yet)."""
        if self.page is None or self.page.is_closed():
            self._load()
        return self.page

    def open(self, relative_path):
        """Open a notebook (in a fresh kernel) as the only document; return the page."""
        self.load()
        self.errors.clear()
        self.page.evaluate(JS_OPEN, relative_path)
        self.page.wait_for_function(JS_NOTEBOOK_READY, arg=relative_path, timeout=OPEN_S * 1000, polling=250)
        return self.page

    def close_documents(self):
        """Close every document without saving (the copies are throwaway) and stop every kernel."""
        if self.page is not None and not self.page.is_closed():
            try:
                self.page.evaluate(JS_CLOSE_ALL)
            except Exception:  # noqa: BLE001 - a broken page is replaced on the next open
                self.page.close()
        _shutdown_kernels(self.server)

    def close(self):
        if self.page is not None and not self.page.is_closed():
            self.page.close()


@pytest.fixture(scope="session")
def lab(context, lab_server):
    lab = LabPage(context, lab_server)
    yield lab
    lab.close()


def _run_all_cells(page):
    """Clear the outputs, then Run > Run All Cells, as a learner would; wait for every cell to finish."""
    assert page.evaluate(JS_CLEAR_OUTPUTS), "could not clear the committed outputs before running"
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(JS_RUN_FINISHED, timeout=RUN_ALL_S * 1000, polling=250)


def _wait_for_widgets(page):
    """Poll until every widget view of the notebook has rendered or failed; return the last state."""
    deadline = time.monotonic() + WIDGET_S
    while True:
        state = page.evaluate(JS_WIDGET_STATE)
        settled = not state["loading"] and state["rendered"] + len(state["failed"]) >= state["expected"]
        if (settled and not state["figuresPending"]) or time.monotonic() > deadline:
            return state
        time.sleep(0.25)


def _move_a_slider(page, explorer):
    """Press an arrow key on each slider handle of one explorer until its figure changes.

    Returns (slider label, seconds from key press to new image) or (None, reason).
    """
    figure = explorer.locator("img.pe-explorer-figure")
    handles = explorer.locator(".widget-slider .noUi-handle")
    if handles.count() == 0:
        return None, "no slider"
    for i in range(handles.count()):
        handle = handles.nth(i)
        handle.scroll_into_view_if_needed()
        before = figure.get_attribute("src")
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        handle.focus()
        start = time.perf_counter()
        handle.press("ArrowLeft" if at_max else "ArrowRight")
        try:
            page.wait_for_function(
                "([img, before]) => img.getAttribute('src') !== before && img.complete",
                arg=[figure.element_handle(), before],
                timeout=SLIDER_S * 1000,
                polling=50,
            )
        except Exception:  # noqa: BLE001 - a timeout: this slider did not change the figure, try the next
            continue
        label = explorer.locator(".widget-slider").nth(i).locator(".widget-label").inner_text()
        return label or f"slider {i}", time.perf_counter() - start
    return None, f"none of its {handles.count()} sliders changed the figure within {SLIDER_S} s"


def _opened_modified(page, notebook):
    """What JupyterLab changed in the notebook once its kernel was ready: None if it shows it unmodified.

    Otherwise {metadata key: (committed value, value in JupyterLab)}, empty when only cells changed.
    """
    state = page.evaluate(JS_OPENED)
    if not state["dirty"]:
        return None
    committed = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
    opened = state["metadata"]
    keys = sorted(set(committed) | set(opened))
    return {key: (committed.get(key), opened.get(key)) for key in keys if committed.get(key) != opened.get(key)}


def _only_the_python_differs(changed):
    """True when the one change is language_info.version: this machine's Python, not the file."""
    if set(changed) != {"language_info"}:
        return False
    committed, opened = (value or {} for value in changed["language_info"])
    return {key for key in set(committed) | set(opened) if committed.get(key) != opened.get(key)} == {"version"}


def _cells(notebook):
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def _title(notebook):
    """The text of the notebook's first heading (its title)."""
    for cell in _cells(notebook):
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    return re.sub(r"[`*_$\\]", "", line.lstrip("#")).strip()  # as rendered: no markdown marks
    return ""


def _deck_plan(notebook):
    """(cells the deck steps through, cells that start a slide or sub-slide), from the slide metadata.

    As jupyterlab-slideshow reads it: "skip" and "notes" cells are never shown, the first shown
    cell starts the deck, every "slide" or "subslide" cell starts a new screen.
    """
    kinds = [cell.get("metadata", {}).get("slideshow", {}).get("slide_type") for cell in _cells(notebook)]
    shown = [i for i, kind in enumerate(kinds) if kind not in ("skip", "notes")]
    starts = [i for i in shown if i == shown[0] or kinds[i] in ("slide", "subslide")]
    return shown, starts


def _scrolls(state):
    """True for a slide the deck has to scroll: content taller than the room it gives a slide."""
    return state["height"] > state["room"] + SLIDE_TOLERANCE_PX


def _slide_problems(number, state):
    """What is wrong with one slide as shown: too tall, not filling the screen with its figure, covered by the
    deck's controls, broken math, a dead or unreachable explorer."""
    where = f"slide {number} (cells {state['cells'][0]}-{state['cells'][-1]})"
    problems = []
    # A slide may scroll only when nothing could be cut: a single cell (a long text, a long printed table)
    # without a figure. A slide with a figure or an explorer always fits: the figure takes the room left.
    if _scrolls(state) and (len(state["cells"]) > 1 or state["figures"]):
        problems.append(
            f"{where}: {state['height']} px tall in a slide's {state['room']} px (a {state['viewport']} px "
            f"screen): {state['text'][:80]!r}"
        )
    if state["figures"] and not _scrolls(state) and state["bottom"] < state["roomBottom"] - FILL_TOLERANCE_PX:
        problems.append(
            f"{where}: its figure leaves the screen unused below y={state['bottom']} (the slide ends at "
            f"y={state['roomBottom']}): the deck's styles did not let the figure grow"
        )
    problems += [f"{where}: the deck's controls cover the slide: {covered}" for covered in state["covered"]]
    if state["mathErrors"]:
        problems.append(f"{where}: {state['mathErrors']} MathJax error(s)")
    for explorer in state["explorers"]:
        live = explorer["widget"] and explorer["naturalWidth"] and not explorer["error"]
        if not live or not explorer["inView"] or not explorer["handles"] or explorer["handlesOff"]:
            problems.append(
                f"{where}: the explorer of cell {explorer['index']} is not live and usable on the slide "
                f"(figure in view, every slider on screen and not covered): {explorer}"
            )
    return problems


def _text_problems(page, number, checked, smallest):
    """Text on the slide shown now below WCAG 2.1's contrast (tests/text_contrast.py) or below its least
    size (MIN_FONT_PX), as problems.

    checked: a list that gets the number of texts measured on this slide; smallest: {kind: (size, text)},
    updated with the smallest text of each kind seen so far.
    """
    texts = text_contrast.texts(page, ".jp-deck-mod-onscreen")
    checked.append(sum(text["count"] for text in texts))
    problems = text_contrast.problems(texts, f"slide {number}")
    for text in texts:
        kind, size = text["kind"], text["size"]
        if size < MIN_FONT_PX[kind]:
            least = MIN_FONT_PX[kind]
            problems.append(f"slide {number}: {kind} text {text['text']!r} at {size:g} px, under {least} px")
        if kind not in smallest or size < smallest[kind][0]:
            smallest[kind] = (size, text["text"])
    return problems


def _present(page, notebook):
    """Present the open (already run) notebook as a lecturer does and check every slide; return a summary.

    At 1280 x 720: select the title cell, press the notebook toolbar's deck button, then Space until
    the last cell; on every explorer slide move a slider; Escape leaves the deck.
    """
    shown, starts = _deck_plan(notebook)
    explorer_cells = page.evaluate(JS_EXPLORER_CELLS)  # as rendered in the notebook view
    page.set_viewport_size(SLIDE_VIEWPORT)
    page.evaluate(JS_STOP_DECK)  # the toolbar button toggles: start from the notebook view
    page.evaluate(JS_SELECT_FIRST_CELL)
    page.locator('.jp-NotebookPanel-toolbar [data-command="deck:toggle"]:visible').first.click()
    page.wait_for_function(JS_PRESENTING, timeout=KEY_S * 1000, polling=100)
    hidden = page.evaluate(JS_OFF_SLIDE_LAID_OUT)
    assert hidden["off"] > 0 and hidden["laidOut"] == 0, f"cells off the first slide still laid out: {hidden}"
    slides, problems, moved, seen, contrast_checked, smallest = [], [], [], set(), [], {}
    while True:
        state = page.evaluate(JS_DECK_STATE, explorer_cells)
        assert state["presenting"], f"the deck stopped by itself at cell {state['active']}"
        seen.update(state["cells"])
        if state["cells"] and (not slides or state["cells"] != slides[-1]["cells"]):
            slides.append(state)
            if SCREENSHOTS:
                folder = Path(SCREENSHOTS) / notebook.stem
                folder.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(folder / f"slide-{len(slides):02d}.png"))
            problems += _slide_problems(len(slides), state)
            problems += _text_problems(page, len(slides), contrast_checked, smallest)
            explorers = page.locator(".jp-deck-mod-onscreen .pe-explorer")
            for i in range(explorers.count()):
                slider, result = _move_a_slider(page, explorers.nth(i))
                if slider is None:
                    problems.append(f"slide {len(slides)}: moving the explorer's slider on the slide: {result}")
                else:
                    moved.append((slider, result))
            if explorers.count():
                page.evaluate(JS_FOCUS_ACTIVE_CELL)  # as a click on the slide: the keys drive the deck again
        if state["active"] == shown[-1]:
            break
        page.keyboard.press("Space")
        try:
            page.wait_for_function(JS_ACTIVE_CELL_MOVED, arg=state["active"], timeout=KEY_S * 1000, polling=50)
        except Exception:  # noqa: BLE001 - a timeout: report where the deck got stuck
            pytest.fail(f"{notebook.name}: Space did not move the deck on from cell {state['active']}", pytrace=False)
    page.keyboard.press("Escape")
    page.wait_for_function(f"() => !({JS_PRESENTING})()", timeout=KEY_S * 1000, polling=100)

    title = _title(notebook)
    assert slides and title in slides[0]["text"], f"the first slide does not show the title {title!r}: {slides[:1]}"
    if any(cell["cell_type"] == "markdown" and "$" in "".join(cell["source"]) for cell in _cells(notebook)):
        # LaTeX is typeset by the MathJax that JupyterLab bundles: offline, and on the slides too.
        assert sum(slide["math"] for slide in slides) > 0, "no math typeset on any slide (MathJax did not run)"
    never = [i for i in shown if i not in seen]
    hidden_explorers = [i for i in explorer_cells if i not in seen]
    if hidden_explorers:
        problems.insert(0, f"explorers that are on no slide: cells {hidden_explorers}")
    if never:
        problems.insert(
            0,
            f"cells the deck never shows: {never} (jupyterlab-slideshow hides a cell whose "
            "slide_type is the string '-': run scripts/slide_layout.py)",
        )
    if [slide["cells"][0] for slide in slides] != starts:
        problems.insert(
            0,
            "the slides do not start where the slide metadata says: "
            f"{[slide['cells'][0] for slide in slides]} != {starts}",
        )
    assert sum(contrast_checked) > 0, "no text measured for contrast on any slide"
    assert not problems, f"{notebook.name} as slides at 1280 x 720:\n" + "\n".join(problems)
    assert set(smallest) >= {"body", "heading"}, f"no body text or heading measured on any slide: {smallest}"
    return {
        "slides": len(slides),
        "scrolling": [f"{i + 1} (cell {slide['cells'][0]})" for i, slide in enumerate(slides) if _scrolls(slide)],
        "moved": moved,
        "contrast": sum(contrast_checked),
        "smallest": smallest,
    }


JS_NEWS_SETTING = """async () => {
  const settings = await window.jupyterapp.serviceManager.settings.fetch("@jupyterlab/apputils-extension:notification");
  return settings.schema.properties.fetchNews.default;
}"""
JS_CURRENT_DOCUMENT = """() => {
  const widget = window.jupyterapp.shell.currentWidget;
  return widget && widget.context ? {path: widget.context.path, markdown: Boolean(widget.node.querySelector(
    ".jp-MarkdownViewer .jp-RenderedMarkdown h1")), text: widget.node.innerText.slice(0, 80)} : null;
}"""


def test_no_news_toast(lab):
    """JupyterLab as the course installs it asks nothing about Jupyter news: the toast covered the deck's arrows."""
    page = lab.load()
    assert page.evaluate(JS_NEWS_SETTING) == "false", "lab-settings/ is not installed in this environment"
    page.wait_for_timeout(2000)  # the question comes a moment after start-up when it comes
    assert not page.locator(".jp-Notification-Toast, .Toastify__toast").count(), page.locator("body").inner_text()[:300]


def test_every_link_target_is_served(lab_server):
    """JupyterLab, started as the README says, serves every file the notebooks and docs link to."""
    missing, asked = [], 0
    for path in learner_files():
        for target in relative_links(path):
            file, _ = resolve(path, target)
            in_clone = lab_server["clone"] / file.relative_to(ROOT) if file is not None else None
            asked += 1
            if in_clone is None or not in_clone.is_relative_to(lab_server["root"]):
                missing.append(f"{path.relative_to(ROOT)}: {target} (outside the folder JupyterLab serves)")
                continue
            served = in_clone.relative_to(lab_server["root"]).as_posix()
            try:
                _api(lab_server, "GET", f"/api/contents/{urllib.parse.quote(served)}?content=0")
            except urllib.error.HTTPError as error:
                missing.append(f"{path.relative_to(ROOT)}: {target} (JupyterLab answers {error.code})")
    assert asked >= 60, asked
    assert not missing, "links JupyterLab cannot open:\n" + "\n".join(missing)


@pytest.mark.skipif(not (NOTEBOOK_DIR / "01_order_problem.ipynb").exists(), reason="no notebook 01 here")
def test_a_link_opens_its_document(lab):
    """A click on notebook 01's "table of corrected claims" opens docs/sources.md, rendered (the default viewer)."""
    page = lab.open("/".join(filter(None, [lab.server["notebooks"], "01_order_problem.ipynb"])))
    try:
        link = page.locator(".jp-NotebookPanel .jp-RenderedMarkdown a", has_text="table of corrected claims").first
        link.scroll_into_view_if_needed()
        link.click()
        expected = (lab.server["clone"] / "docs" / "sources.md").relative_to(lab.server["root"]).as_posix()
        # the path is set when the widget opens; its rendered heading comes a moment later
        page.wait_for_function(
            f"() => {{ const d = ({JS_CURRENT_DOCUMENT})(); return d?.path === {json.dumps(expected)}"
            " && d.markdown && d.text.length > 0; }",
            timeout=30_000,
        )
        opened = page.evaluate(JS_CURRENT_DOCUMENT)
        assert opened["markdown"] and "claims this course corrects" in opened["text"].lower(), opened
    finally:
        lab.close_documents()


JS_DECK_ACTIVE = """async () => {
  const settings = await window.jupyterapp.serviceManager.settings.fetch("jupyterlab-slideshow:plugin");
  // raw is JSON5 (comments): read the parsed values the server sends beside it
  const parsed = (settings.data && settings.data.composite) || settings.settings || settings.composite || {};
  return parsed.active === undefined ? `no 'active' in ${Object.keys(settings)}` : parsed.active;
}"""


@pytest.mark.skipif(not (NOTEBOOK_DIR / "01_order_problem.ipynb").exists(), reason="no notebook 01 here")
def test_a_deck_left_open_reopens_and_its_exit_button_leaves_it(lab):
    """As docs/teaching.md says: a page reloaded mid-show comes back presenting (whatever it shows: here the
    Launcher, as the test's workspace is not kept); the Exit Deck button leaves it, and it stays left."""
    page = lab.open("/".join(filter(None, [lab.server["notebooks"], "01_order_problem.ipynb"])))
    try:
        page.evaluate("async () => { await window.jupyterapp.commands.execute('deck:start'); }")
        page.wait_for_function(JS_PRESENTING, timeout=KEY_S * 1000, polling=100)
        page.reload()
        page.wait_for_function(JS_APP_READY, timeout=OPEN_S * 1000, polling=250)
        page.wait_for_function("() => document.body.dataset.jpDeckMode === 'presenting'", timeout=OPEN_S * 1000)
        page.locator(".jp-Deck-Remote button.jp-deck-mod-stop").click()
        page.wait_for_function("() => document.body.dataset.jpDeckMode !== 'presenting'", timeout=KEY_S * 1000)
        # what a next start reads: the deck's "active" setting, off again
        deadline = time.monotonic() + KEY_S
        while page.evaluate(JS_DECK_ACTIVE) is not False and time.monotonic() < deadline:
            time.sleep(0.25)
        assert page.evaluate(JS_DECK_ACTIVE) is False, "the deck would come back at the next start"
    finally:
        if not page.is_closed():
            page.evaluate(JS_STOP_DECK)
        lab.close_documents()


# The notebooks' runs take a third of the suite's time. Two classes are two scopes for pytest-xdist's loadscope
# (pyproject.toml): each half runs on a worker of its own (with its own JupyterLab), not all on one.
FIRST_HALF, SECOND_HALF = NOTEBOOKS[0::2], NOTEBOOKS[1::2]  # 01, 03, ... and 02, 04, ...: alike in time


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/NN_*.ipynb yet")
class TestNotebooksFirstHalf:
    @pytest.mark.parametrize("notebook", FIRST_HALF, ids=[path.stem for path in FIRST_HALF])
    def test_notebook_runs_in_jupyterlab(self, notebook, lab, record_property):
        """Opens unmodified, runs, every widget renders and moves; then the same page presents it as slides."""
        _runs_in_jupyterlab(notebook, lab, record_property)


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/NN_*.ipynb yet")
class TestNotebooksSecondHalf:
    @pytest.mark.parametrize("notebook", SECOND_HALF, ids=[path.stem for path in SECOND_HALF])
    def test_notebook_runs_in_jupyterlab(self, notebook, lab, record_property):
        """Opens unmodified, runs, every widget renders and moves; then the same page presents it as slides."""
        _runs_in_jupyterlab(notebook, lab, record_property)


def _runs_in_jupyterlab(notebook, lab, record_property):
    relative = "/".join(filter(None, [lab.server["notebooks"], notebook.relative_to(NOTEBOOK_DIR).as_posix()]))
    start = time.perf_counter()
    page = lab.open(relative)
    python_note = ""
    try:
        changed = _opened_modified(page, notebook)
        if changed is not None and _only_the_python_differs(changed):
            committed, here = (value.get("version") for value in changed["language_info"])
            python_note = f"  opens modified here only because this kernel runs Python {here} (run with {committed})"
        else:
            assert changed is None, (
                f"JupyterLab marks {notebook.name} modified as soon as its kernel is ready; it changed "
                f"{changed or 'cells, not metadata'} (committed, in JupyterLab). Re-run the notebook with "
                "scripts/run_notebooks.py, which keeps the kernel's language_info"
            )
        opened = time.perf_counter()
        _run_all_cells(page)
        ran = time.perf_counter()
        cells = page.evaluate(JS_CELL_REPORT)
        errors = [f"cell {c['index']}: {e}  [{c['source']!r}]" for c in cells for e in c.get("errors", [])]
        errors += page.evaluate(JS_STDERR_TRACEBACKS)
        assert not errors, "cells with an error:\n" + "\n".join(errors)
        not_run = [
            f"cell {c['index']} [{c['source']!r}]"
            for c in cells
            if c["type"] == "code" and c["source"].strip() and c["executionCount"] is None
        ]
        assert not not_run, "code cells that did not run:\n" + "\n".join(not_run)

        state = _wait_for_widgets(page)
        assert not state["failed"], "widgets that did not render:\n" + "\n".join(state["failed"])
        assert not state["loading"] and state["rendered"] >= state["expected"] and not state["figuresPending"], (
            f"widgets still not rendered after {WIDGET_S} s: {state}"
        )
        panel = page.locator(".jp-NotebookPanel:visible")
        text = panel.inner_text().lower()
        for message in ("Error displaying widget", "model not found"):
            assert message.lower() not in text, f"a widget did not render: {message!r} on the page"

        explorers = panel.locator(".pe-explorer")
        moved = []
        for i in range(explorers.count()):
            slider, result = _move_a_slider(page, explorers.nth(i))
            assert slider is not None, f"explorer {i + 1} of {explorers.count()}: {result}"
            moved.append((slider, result))
        done = time.perf_counter()
        deck = _present(page, notebook)
        presented = time.perf_counter()
    finally:
        page_errors = list(lab.errors)
        if not page.is_closed():
            try:
                page.evaluate(JS_STOP_DECK)
                page.set_viewport_size(VIEWPORT)
            except Exception:  # noqa: BLE001 - a broken page is replaced on the next open
                pass
        lab.close_documents()

    latencies = ", ".join(f"{slider!r} {seconds * 1000:.0f} ms" for slider, seconds in moved) or "no explorer"
    record_property("seconds_open", round(opened - start, 1))
    record_property("seconds_run_all", round(ran - opened, 1))
    record_property("explorers", len(moved))
    record_property("slides", deck["slides"])
    record_property("scrolling_slides", len(deck["scrolling"]))
    record_property("seconds_slides", round(presented - done, 1))
    print(
        f"\n{notebook.name}: open {opened - start:.1f} s, run all {ran - opened:.1f} s, "
        f"{len(moved)} explorer(s) moved in {done - ran:.1f} s (key press -> new figure: {latencies}), "
        f"{deck['slides']} slides at 1280 x 720 in {presented - done:.1f} s ({len(deck['moved'])} explorer(s) moved "
        f"on their slides, {deck['contrast']} texts checked for contrast and size), total {presented - start:.1f} s"
    )
    smallest = ", ".join(f"{kind} {size:g} px" for kind, (size, _) in sorted(deck["smallest"].items()))
    print(f"  smallest text on the slides: {smallest}")
    if deck["scrolling"]:
        print(f"  slides that scroll (one cell taller than the screen): {', '.join(deck['scrolling'])}")
    if python_note:
        print(python_note)
    if page_errors:
        print(f"  uncaught page errors (not failing the test): {page_errors[:3]}")
