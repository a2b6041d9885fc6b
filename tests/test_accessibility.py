"""Every explorer by keyboard and screen reader, in JupyterLab in Chromium (issue 24).

A throwaway notebook builds each explorer (`explorer_classes()`, with its defaults) in a cell of its
own; JupyterLab runs it. For each explorer the test checks, in the page as a reader meets it:

- axe-core (bundled with axe-playwright-python) finds no violation inside the explorer: every
  control has an accessible name, the figure has one (its title: the explorer's alt text);
- every control is reached with the Tab key alone, one after the other, from the first;
- each control is operated from the keyboard (arrow keys on sliders and selects, Space on a checkbox,
  Enter on a toggle button but the one already selected) and each such key press changes the figure and its
  alt text.

    .venv/bin/python -m pytest -o addopts="" -p no:cacheprovider -s tests/test_accessibility.py

Chromium: `bash .ci/install_chromium.sh` (Debian's package; never `playwright install`).
"""

import json
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_browser import (
    SERVER_START_S,
    LabPage,
    _api,
    _free_port,
    _run_all_cells,
    _wait_for_widgets,
    lab_environment,
)

from pe_lib.explorer import explorer_classes

pytestmark = [pytest.mark.browser, pytest.mark.slow]

EXPLORERS = explorer_classes()
# What axe-core finds that the course cannot fix from Python, each with its reason (docs/accessibility.md):
# ipywidgets 8.1.9 creates its sliders with noUiSlider and passes no `handleAttributes`, so a slider's handle
# (role "slider") has no accessible name; its visible label sits beside it but is not tied to it.
UPSTREAM = {"aria-input-field-name": "noUi-handle"}
KEY_S = 15  # a key press gives a new frame within this time

# The focusable controls of one explorer, in document order, and what identifies each for the test.
JS_CONTROLS = """(explorer) => Array.from(explorer.querySelectorAll(
    'input, select, textarea, button, [role="slider"], [contenteditable="true"]'))
  .filter(el => !el.disabled && el.offsetParent !== null && el.tabIndex >= 0)
  .map((el, index) => { el.dataset.peControl = String(index);
    const widget = el.closest('.widget-inline-hbox, .widget-slider, .widget-dropdown, .widget-toggle-buttons');
    const label = widget && widget.querySelector('.widget-label');
    return {
      index, tag: el.tagName.toLowerCase(), role: el.getAttribute("role"), type: el.type || "",
      readout: el.classList.contains("widget-readout"),
      name: el.getAttribute("aria-label") || (el.labels && el.labels[0] ? el.labels[0].innerText : "")
        || (el.tagName === "BUTTON" ? el.innerText || el.title : "") || "",
      label: label ? label.innerText : "" }; })"""
JS_FOCUSED = (
    """() => { const el = document.activeElement; return el && el.dataset ? el.dataset.peControl ?? null : null; }"""
)
# Where a control stands now: a slider at the top of its range, a <select> at its last option, the selected
# button of a toggle-buttons group. A key press that cannot move it would only wait out KEY_S.
JS_STANDING = """(el) => ({
  atMax: el.hasAttribute("aria-valuenow") && el.getAttribute("aria-valuenow") === el.getAttribute("aria-valuemax"),
  atLast: el.tagName === "SELECT" && el.selectedIndex === el.options.length - 1,
  selected: el.tagName === "BUTTON" && el.classList.contains("mod-active")
    && el.closest(".widget-toggle-buttons") !== null })"""
JS_TITLE = """(explorer) => { const img = explorer.querySelector("img.pe-explorer-figure");
  return {title: img.getAttribute("title") || "", src: img.getAttribute("src") || ""}; }"""


def _notebook(path):
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "id": f"c{i}", "source": source}
        for i, source in enumerate(
            ["import pe_lib.explorer as pe_explorer\nexplorers = pe_explorer.explorer_classes()"]
            + [f"explorers[{i}]()" for i in range(len(EXPLORERS))]
        )
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook), encoding="utf-8")


@pytest.fixture(scope="module")
def explorer_page(browser):
    """JupyterLab (127.0.0.1, random port and token) with the explorers' notebook run: (page, explorers)."""
    with tempfile.TemporaryDirectory(prefix="pe-a11y-") as tmp:
        tmp = Path(tmp)
        root = tmp / "notebooks"
        root.mkdir()
        _notebook(root / "explorers.ipynb")
        env = lab_environment(tmp)
        port, token = _free_port(), secrets.token_hex(24)
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}"]
        command += ["--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", "--ServerApp.allow_root=True"]
        command += [f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True", "--LabApp.custom_css=True"]
        with open(tmp / "server.log", "w") as log:
            process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        server = {"url": f"http://127.0.0.1:{port}", "token": token, "root": root, "process": process}
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(30_000)
        lab = LabPage(context, server)
        try:
            deadline = time.monotonic() + SERVER_START_S
            while True:
                try:
                    _api(server, "GET", "/api/status")
                    break
                except OSError:
                    assert process.poll() is None and time.monotonic() < deadline, (tmp / "server.log").read_text()
                    time.sleep(0.25)
            page = lab.open("explorers.ipynb")
            _run_all_cells(page)
            state = _wait_for_widgets(page)
            assert not state["failed"] and state["rendered"] >= len(EXPLORERS), state
            yield page, page.locator(".jp-NotebookPanel:visible .pe-explorer")
        finally:
            lab.close()
            context.close()
            process.terminate()
            process.wait(timeout=30)


def _wait_for_new_frame(page, explorer, before):
    page.wait_for_function(
        """([explorer, before]) => { const img = explorer.querySelector("img.pe-explorer-figure");
             return img.getAttribute("src") !== before.src && img.getAttribute("title") !== before.title; }""",
        arg=[explorer.element_handle(), before],
        timeout=KEY_S * 1000,
        polling=50,
    )


# Explorers known to fail, each with what fails (an expected, strict failure); none at present.
KNOWN = {}


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=pytest.mark.xfail(reason=KNOWN[cls.__name__], strict=True))
        if cls.__name__ in KNOWN
        else i
        for i, cls in enumerate(EXPLORERS)
    ],
    ids=[cls.__name__ for cls in EXPLORERS],
)
def test_an_explorer_by_keyboard_and_screen_reader(explorer_page, index):
    from axe_playwright_python.sync_playwright import Axe

    page, explorers = explorer_page
    assert explorers.count() == len(EXPLORERS)
    explorer = explorers.nth(index)
    explorer.scroll_into_view_if_needed()
    name = EXPLORERS[index].__name__

    # A screen reader's view: axe-core inside the explorer, and the figure's name is its alt text.
    selector = f".jp-NotebookPanel:not(.lm-mod-hidden) .pe-explorer >> nth={index}"
    explorer.evaluate("(el, i) => el.setAttribute('data-pe-explorer', String(i))", index)
    results = Axe().run(page, context={"include": [[f'[data-pe-explorer="{index}"]']]})
    violations = {
        v["id"]: [n["html"][:120] for n in v["nodes"]]
        for v in results.response["violations"]
        if not (v["id"] in UPSTREAM and all(UPSTREAM[v["id"]] in n["html"] for n in v["nodes"]))
    }
    assert not violations, f"{name}: axe-core inside the explorer: {violations} ({selector})"
    figure = page.evaluate(JS_TITLE, explorer.element_handle())
    assert figure["title"].startswith(f"Explorer ({name}), controls: "), figure["title"][:120]

    # The keyboard alone: Tab from the first control reaches every control, in order.
    controls = page.evaluate(JS_CONTROLS, explorer.element_handle())
    assert controls, f"{name}: no focusable control"
    # Every control says what it changes: its accessible name, or for a slider handle (unnamed upstream,
    # see UPSTREAM) the visible label of its slider.
    unnamed = [
        c
        for c in controls
        if not (c["name"].strip() or ((c["role"] == "slider" or c["readout"]) and c["label"].strip()))
    ]
    assert not unnamed, f"{name}: controls without a name: {unnamed}"
    explorer.locator('[data-pe-control="0"]').focus()
    expected = [str(c["index"]) for c in controls]
    reached = [page.evaluate(JS_FOCUSED)]
    for _ in range(3 * len(controls)):  # a slider's value box may take a Tab stop between two controls
        if reached[-1] == expected[-1]:
            break
        page.keyboard.press("Tab")
        reached.append(page.evaluate(JS_FOCUSED))
    in_order = [stop for stop in reached if stop in expected]
    assert in_order == expected, f"{name}: Tab reached {reached} of {controls}"

    # Operate each control from the keyboard: the figure and its alt text follow.
    operated = []
    for control in controls:
        element = explorer.locator(f'[data-pe-control="{control["index"]}"]')
        if (
            (control["tag"] == "input" and control["type"] == "text")
            or control["tag"] == "textarea"
            or control["readout"]
        ):
            continue  # a box to type in (a sentence, a config, a slider's value): typing is the keyboard
        standing = element.evaluate(JS_STANDING)
        if control["role"] == "slider":  # towards the side it can move to first
            keys = [("ArrowRight",), ("ArrowLeft",)][:: -1 if standing["atMax"] else 1]
        elif control["tag"] == "select":  # a closed <select>: its list opens with Alt+Down, Enter picks
            keys = [("Alt+ArrowDown", "ArrowDown", "Enter"), ("Alt+ArrowDown", "ArrowUp", "Enter")]
            keys = keys[:: -1 if standing["atLast"] else 1]
        elif control["type"] == "checkbox":
            keys = [("Space",)]
        elif standing["selected"]:
            continue  # the toggle button already selected: pressing it changes nothing, by design
        else:
            keys = [("Enter",)]
        changed = False
        for presses in keys:
            before = page.evaluate(JS_TITLE, explorer.element_handle())
            element.focus()
            for key in presses:
                page.keyboard.press(key)
            try:
                _wait_for_new_frame(page, explorer, before)
                changed = True
                break
            except Exception:  # noqa: BLE001 - a timeout: this key did not move it, try the other way
                continue
        assert changed, f"{name}: {control} did not change the figure and its alt text with {keys}"
        operated.append(control["name"] or control["label"])
    assert operated, f"{name}: no control could be operated from the keyboard"
    print(f"\n{name}: {len(controls)} controls by Tab, operated by keyboard: {operated}")
