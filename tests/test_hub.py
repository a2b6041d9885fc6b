"""The course on a real JupyterHub: three students log in, pull the course with nbgitpuller, run notebook 01.

The hub is classroom/jupyterhub_config.py (JupyterHub from requirements-classroom.txt, its proxy,
configurable-http-proxy, from npm: `npm install --prefix classroom`), on 127.0.0.1, with
JupyterHub's DummyAuthenticator and SimpleLocalProcessSpawner. The course is pulled from a local git
clone of this repository (its committed HEAD), through the nbgitpuller link docs/teaching.md
builds, so the link's `urlpath` is the one a class gets. Every request goes through the hub's
public port, the proxy, as a student's browser's does:
- alice and bob log in and follow the link with HTTP (nbgitpuller's page, then its API, as the page's
  script does), and run every code cell of notebook 01 and one explorer in a kernel of their server;
- carol does the same in Chromium: JupyterLab opens the notebook from the link, Run All, a slider;
- neither alice nor bob can reach the other's server or files.

    .venv/bin/pytest -m hub tests/test_hub.py -p no:xdist -s     (-s prints the timings)

Without the classroom packages (pip install -r requirements-classroom.txt) or the proxy the test skips
on a laptop and fails in CI, like the browser tests.
"""

import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from hub_client import Student

from conftest import _no_browser

pytestmark = [pytest.mark.hub, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
PROXY = ROOT / "classroom" / "node_modules" / ".bin" / "configurable-http-proxy"
FOLDER = "positional-encoding-interactively"  # nbgitpuller names the clone after the repository's last path part
NOTEBOOK = "notebooks/01_order_problem.ipynb"
STUDENTS = ("alice", "bob", "carol")
HUB_START_S = 60
SPAWN_S = 180  # a server's first start imports JupyterLab's extensions: slow on a busy 2-core machine
EXPLORER_CODE = """
from pe_lib import ch01_order
from pe_lib.explorer import next_slider_value, slider_names
explorer = ch01_order.OrderExplorer()
name = slider_names(explorer)[0]
value, _ = next_slider_value(explorer.controls[name], +1)
before = explorer.image.value
after = explorer.update(**{name: value})
print(name, value, after != before and len(after) > 1000)
"""


def _free_port_block(size=3):
    """A port p with p .. p + size - 1 free on 127.0.0.1 (the proxy, the hub, the proxy's API)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + size > 65535:
            continue
        try:
            sockets = []
            for offset in range(size):
                s = socket.socket()
                sockets.append(s)
                s.bind(("127.0.0.1", port + offset))
            return port
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise RuntimeError("no block of free ports on 127.0.0.1")


def _missing():
    for module in ("jupyterhub", "nbgitpuller", "websocket", "requests"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install -r requirements-classroom.txt)"
    if not PROXY.exists() and shutil.which("configurable-http-proxy") is None:
        return "configurable-http-proxy is missing (npm install --prefix classroom)"
    return None


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    reason = _missing()
    if reason:
        _no_browser(reason)  # skip on a laptop, fail in CI
    import requests

    work = tmp_path_factory.mktemp("hub")
    source = work / "remote" / FOLDER  # what the link's repo= points at: a clone of this repository's HEAD
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(ROOT), str(source)], check=True)
    # published as `main`, the branch the link names, whatever branch this checkout is on
    subprocess.run(["git", "-C", str(source), "checkout", "-q", "-B", "main"], check=True)
    port, password, admin_token = _free_port_block(), secrets.token_hex(8), secrets.token_hex(16)
    env = dict(
        os.environ,
        COURSE_HUB_PORT=str(port),
        COURSE_HUB_HOME=str(work / "homes"),
        COURSE_HUB_STUDENTS=",".join(STUDENTS),
        COURSE_HUB_PASSWORD=password,
        COURSE_HUB_ADMIN_TOKEN=admin_token,
    )
    log = (work / "hub.log").open("w")
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("jupyterhub")), "-f", str(ROOT / "classroom" / "jupyterhub_config.py")],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    admin = {"Authorization": f"token {admin_token}"}
    deadline = time.monotonic() + HUB_START_S
    while True:
        try:
            if requests.get(f"{base_url}/hub/api/users", headers=admin, timeout=5).status_code == 200:
                break
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.terminate()
            raise AssertionError(f"the hub did not start: {(work / 'hub.log').read_text()[-3000:]}")
        time.sleep(0.25)
    link = f"{base_url}/hub/user-redirect/git-pull?" + urllib.parse.urlencode(
        {"repo": source.as_uri(), "urlpath": f"lab/tree/{FOLDER}/{NOTEBOOK}", "branch": "main"}
    )
    try:
        yield {
            "url": base_url,
            "password": password,
            "admin": admin,
            "link": link,
            "repo": source.as_uri(),
            "work": work,
        }
    finally:
        # Stop the servers before the hub, so that none outlives the test; all at once, as each stop mostly waits
        # for its server to shut its kernels down (1-4 s each, one after another).
        with ThreadPoolExecutor(len(STUDENTS)) as stopping:
            stops = [
                stopping.submit(requests.delete, f"{base_url}/hub/api/users/{name}/server", headers=admin, timeout=60)
                for name in STUDENTS
            ]
        process.terminate()
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        for stop in stops:
            stop.result()  # a request that failed is reported, once the hub is down


def _branch_of(repo_dir):
    return subprocess.run(
        ["git", "-C", str(repo_dir), "branch", "--show-current"], capture_output=True, text=True
    ).stdout


def test_the_link_is_the_one_teaching_md_gives(hub):
    """The test's link is built like docs/teaching.md's (same parameters, same urlpath shape)."""
    teaching = (ROOT / "docs" / "teaching.md").read_text()
    assert "/hub/user-redirect/git-pull?" in teaching and f"lab%2Ftree%2F{FOLDER}%2F" in teaching
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(hub["link"]).query)
    assert set(query) == {"repo", "urlpath", "branch"} and query["urlpath"] == [f"lab/tree/{FOLDER}/{NOTEBOOK}"]


@pytest.fixture(scope="module")
def students(hub):
    """alice and bob logged in, their servers started by the nbgitpuller link, the course pulled."""

    def arrive(name):  # both at once, as a class arrives: their servers start side by side
        student = Student(hub["url"], name, hub["password"])
        start = time.perf_counter()
        student.open_link(hub["link"], SPAWN_S)
        events = student.pull(hub["repo"], "main")
        print(
            f"\n{name}: server started and course pulled in {time.perf_counter() - start:.1f} s ({len(events)} events)"
        )
        return student

    with ThreadPoolExecutor(2) as arriving:
        return dict(zip(("alice", "bob"), arriving.map(arrive, ("alice", "bob")), strict=True))


@pytest.mark.parametrize("name", ["alice", "bob"])
def test_a_student_runs_notebook_01_and_an_explorer(students, name):
    student = students[name]
    listing = student.api("GET", f"contents/{FOLDER}/notebooks")
    assert listing.status_code == 200, listing.text[:300]
    assert "01_order_problem.ipynb" in {item["name"] for item in listing.json()["content"]}
    model = student.api("GET", f"contents/{FOLDER}/{NOTEBOOK}").json()
    notebook = nbformat.from_dict(model["content"])
    session = student.api(
        "POST", "sessions", json={"path": f"{FOLDER}/{NOTEBOOK}", "type": "notebook", "kernel": {"name": "python3"}}
    )
    session.raise_for_status()
    from hub_client import Kernel

    kernel = Kernel(student, session.json()["kernel"]["id"])
    start = time.perf_counter()
    try:
        code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
        for index, cell in enumerate(code_cells):
            _, error = kernel.execute(cell.source)
            assert error is None, f"{name}: code cell {index} of notebook 01 failed on the hub: {error}"
        seconds = time.perf_counter() - start
        text, error = kernel.execute(EXPLORER_CODE)
        assert error is None, f"{name}: the explorer failed on the hub: {error}"
        assert text.strip().endswith("True"), f"{name}: moving the explorer's slider did not change its figure: {text}"
        print(
            f"\n{name}: {len(code_cells)} cells of notebook 01 in {seconds:.1f} s through the proxy; explorer: {text}"
        )
    finally:
        kernel.close()
        student.api("DELETE", f"sessions/{session.json()['id']}")


def test_students_cannot_reach_each_other(students, hub):
    alice, bob = students["alice"], students["bob"]
    assert alice.api("GET", f"contents/{FOLDER}").status_code == 200
    for intruder, owner in ((bob, alice), (alice, bob)):
        with_token = intruder.api("GET", f"contents/{FOLDER}", user=owner.name)
        assert with_token.status_code in (403, 404), f"{intruder.name}'s token reached {owner.name}'s files"
        with_cookie = intruder.session.get(
            f"{hub['url']}/user/{owner.name}/api/contents/{FOLDER}", timeout=60, allow_redirects=True
        )
        assert with_cookie.status_code in (403, 404) or "/hub/" in with_cookie.url, (
            f"{intruder.name}'s login reached {owner.name}'s files: {with_cookie.status_code} {with_cookie.url}"
        )
        assert FOLDER not in with_cookie.text[:2000] or with_cookie.status_code != 200
    homes = hub["work"] / "homes"
    assert (homes / "alice" / FOLDER / NOTEBOOK).exists() and (homes / "bob" / FOLDER / NOTEBOOK).exists()
    assert _branch_of(homes / "alice" / FOLDER).strip() == "main"


JS_LAB_READY = """(path) => {
  const app = window.jupyterapp;
  if (!app || !app.shell) { return false; }
  const panel = app.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session && panel.sessionContext.session.kernel;
  return Boolean(panel && panel.context && panel.context.path === path && panel.sessionContext.isReady
    && kernel && kernel.status === "idle");
}"""
JS_RUN_ALL = """async () => {
  const app = window.jupyterapp;
  await app.commands.execute("notebook:clear-all-cell-outputs");
  await app.commands.execute("notebook:run-all-cells");
}"""
JS_FINISHED = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const code = panel.content.widgets.filter(c => c.model.type === "code" && c.model.sharedModel.getSource().trim());
  const errors = code.flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === "error")
    .map(o => o.ename + ": " + o.evalue));
  const busy = panel.sessionContext.session.kernel.status !== "idle"
    || Array.from(panel.node.querySelectorAll(".jp-InputPrompt")).some(p => p.textContent.includes("*"));
  return {done: !busy && (errors.length > 0 || code.every(c => c.model.executionCount !== null)), errors};
}"""


def test_a_student_in_a_browser(hub, browser):
    """carol: the login form, the nbgitpuller link, JupyterLab opens notebook 01; Run All; a slider moves a figure."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        start = time.perf_counter()
        page.goto(f"{hub['url']}/hub/login", timeout=60_000)
        page.fill("input[name=username]", "carol")
        page.fill("input[name=password]", hub["password"])
        page.click("input[type=submit], button[type=submit]")
        page.wait_for_load_state()
        page.goto(hub["link"], timeout=60_000)
        path = f"{FOLDER}/{NOTEBOOK}"
        page.wait_for_function(JS_LAB_READY, arg=path, timeout=(SPAWN_S + 120) * 1000, polling=250)
        assert page.url.startswith(f"{hub['url']}/user/carol/lab"), page.url
        opened = time.perf_counter() - start
        page.evaluate(JS_RUN_ALL)
        page.wait_for_function(f"({JS_FINISHED})().done", timeout=300_000, polling=250)
        errors = page.evaluate(JS_FINISHED)["errors"]
        assert not errors, f"notebook 01 failed in carol's JupyterLab: {errors}"
        explorer = page.locator(".pe-explorer").first
        explorer.scroll_into_view_if_needed()
        figure = explorer.locator("img.pe-explorer-figure")
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=figure.element_handle())
        before = figure.get_attribute("src")
        handle = explorer.locator(".widget-slider .noUi-handle").first
        handle.focus()
        at_max = handle.get_attribute("aria-valuenow") == handle.get_attribute("aria-valuemax")
        handle.press("ArrowLeft" if at_max else "ArrowRight")
        page.wait_for_function(
            "([img, before]) => img.getAttribute('src') !== before && img.complete",
            arg=[figure.element_handle(), before],
            timeout=30_000,
        )
        print(
            f"\ncarol (Chromium): link to an open notebook in {opened:.1f} s, run and slider in "
            f"{time.perf_counter() - start - opened:.1f} s"
        )
    finally:
        context.close()
