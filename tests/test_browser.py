"""Every notebook in a real browser: JupyterLab + Debian's Chromium, driven by Python playwright.

For each notebook in notebooks/ (a copy: the committed files are never touched) the test opens
it in JupyterLab, runs all cells from the Run menu, waits for the kernel to go idle, and asserts
that every cell ran without an error, that every widget rendered, and that moving a slider of
each explorer (`.pe-explorer`) changes its figure (`img.pe-explorer-figure`). A second test
opens one notebook as a jupyterlab-rise slide deck.

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
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
# PE_NOTEBOOK_DIR points the test at another folder of notebooks (used to develop the test itself).
NOTEBOOK_DIR = Path(os.environ.get("PE_NOTEBOOK_DIR", ROOT / "notebooks")).resolve()
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# JupyterLab settings for the test server: every cell attached to the DOM (no windowing, so
# the page can be inspected as a whole), no news or update checks (no internet here).
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
}
SERVER_START_S = 90
OPEN_S = 120  # first load of JupyterLab in a cold browser + kernel start (torch import) on 2 cores
RUN_ALL_S = 300  # notebook 05 trains small models (< 30 s alone); generous for a busy CI machine
WIDGET_S = 30
SLIDER_S = 15

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


def _ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _no_browser(reason):
    """Skip on a developer machine without a browser; fail in CI, where the browser is required."""
    if _ci():
        pytest.fail(f"CI is set and the browser test cannot run: {reason}", pytrace=False)
    pytest.skip(reason)


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
    """JupyterLab on 127.0.0.1 (random free port, random token), serving a temporary copy of notebooks/."""
    with tempfile.TemporaryDirectory(prefix="pe-browser-") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        shutil.copytree(NOTEBOOK_DIR, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        settings = tmp / "lab-settings"
        for name, values in LAB_SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(json.dumps(values))
        port, token = _free_port(), secrets.token_hex(24)
        env = dict(
            os.environ,
            JUPYTER_CONFIG_DIR=str(tmp / "config"),
            JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
            JUPYTERLAB_SETTINGS_DIR=str(settings),
            JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"),
            PYTHONUNBUFFERED="1",
        )
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            "--ServerApp.allow_root=True",
            f"--ServerApp.root_dir={root}",
            "--LabApp.expose_app_in_browser=True",
        ]
        log_path = tmp / "server.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = {"url": f"http://127.0.0.1:{port}", "token": token, "root": root, "process": process}
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
def browser():
    """One headless Chromium for the whole session (Debian's package, not a playwright download)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        _no_browser("chromium is not on PATH (bash .ci/install_chromium.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        _no_browser(f"playwright is not installed: {error}")
    manager = sync_playwright().start()
    try:
        try:
            chromium = manager.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        except Exception as error:  # noqa: BLE001 - any launch failure means "no browser"
            _no_browser(f"chromium at {executable} did not start: {error}")
        yield chromium
        chromium.close()
    finally:
        manager.stop()


@pytest.fixture(scope="session")
def context(browser, lab_server):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
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

    def open(self, relative_path):
        """Open a notebook (in a fresh kernel) as the only document; return the page."""
        if self.page is None or self.page.is_closed():
            self._load()
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


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/NN_*.ipynb yet")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_runs_in_jupyterlab(notebook, lab, record_property):
    relative = notebook.relative_to(NOTEBOOK_DIR).as_posix()
    start = time.perf_counter()
    page = lab.open(relative)
    try:
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
    finally:
        page_errors = list(lab.errors)
        lab.close_documents()

    latencies = ", ".join(f"{slider!r} {seconds * 1000:.0f} ms" for slider, seconds in moved) or "no explorer"
    record_property("seconds_open", round(opened - start, 1))
    record_property("seconds_run_all", round(ran - opened, 1))
    record_property("explorers", len(moved))
    print(
        f"\n{notebook.name}: open {opened - start:.1f} s, run all {ran - opened:.1f} s, "
        f"{len(moved)} explorer(s) moved in {done - ran:.1f} s (key press -> new figure: {latencies}), "
        f"total {done - start:.1f} s"
    )
    if page_errors:
        print(f"  uncaught page errors (not failing the test): {page_errors[:3]}")


JS_SLIDE_INDEX = """() => Array.from(document.querySelectorAll(".reveal .slides > section"))
  .findIndex(s => s.classList.contains("present"))"""


def _title(notebook):
    """The text of the notebook's first heading (its title)."""
    for cell in json.loads(notebook.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("#"):
                    return re.sub(r"[`*_]", "", line.lstrip("#")).strip()  # as rendered: no markdown marks
    return ""


def _slide_count(notebook):
    """Top-level slides of a deck: the first shown cell, plus every later cell whose slide_type is 'slide'."""
    cells = json.loads(notebook.read_text())["cells"]
    kinds = [cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-") for cell in cells]
    kinds = [kind for kind in kinds if kind not in ("skip", "notes")]
    return (1 + sum(kind == "slide" for kind in kinds[1:])) if kinds else 0


@pytest.mark.skipif(not NOTEBOOKS, reason="no notebooks/NN_*.ipynb yet")
def test_notebook_opens_as_a_rise_slide_deck(context, lab_server):
    notebook = NOTEBOOKS[0]
    relative = notebook.relative_to(NOTEBOOK_DIR).as_posix()
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(f"{lab_server['url']}/rise/{relative}?token={lab_server['token']}")
        page.wait_for_selector(".reveal .slides > section", timeout=OPEN_S * 1000)
        page.wait_for_function("() => document.querySelector('.reveal .slides section.present')", timeout=OPEN_S * 1000)
        sections = page.locator(".reveal .slides > section")
        assert sections.count() == _slide_count(notebook), (
            f"{notebook.name}: {sections.count()} slides in the deck, "
            f"{_slide_count(notebook)} expected from the cells' slideshow metadata"
        )
        assert sections.count() >= 2, "a deck of one slide: give cells metadata.slideshow.slide_type"
        # LaTeX is typeset by the MathJax that JupyterLab bundles: it must work offline, in the deck too.
        page.wait_for_function(
            "() => document.querySelectorAll('.reveal mjx-container').length > 0", timeout=OPEN_S * 1000
        )
        assert page.locator(".reveal mjx-merror").count() == 0, "MathJax could not typeset some math in the deck"
        title = _title(notebook)
        first_slide = page.locator(".reveal .slides > section.present").inner_text()
        assert title in first_slide, f"the first slide does not show the title {title!r}: {first_slide[:300]!r}"
        # the next slide is reached with the arrow key (after the first slide's fragments, if any)
        for _ in range(40):
            page.keyboard.press("ArrowRight")
            if page.evaluate(JS_SLIDE_INDEX) >= 1:
                break
        assert page.evaluate(JS_SLIDE_INDEX) == 1, "ArrowRight did not move the deck to its second slide"
        print(f"\nRISE deck of {notebook.name}: {sections.count()} slides in {time.perf_counter() - start:.1f} s")
    finally:
        page.close()
        _shutdown_kernels(lab_server)
