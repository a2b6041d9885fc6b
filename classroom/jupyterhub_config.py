"""A JupyterHub for the course on one machine: what tests/test_hub.py starts, and a lecturer's trial run.

    jupyterhub -f classroom/jupyterhub_config.py        (from the repository root, in the course's venv,
                                                        after `npm install --prefix classroom`)

Students log in with any name in COURSE_HUB_STUDENTS and the password in COURSE_HUB_PASSWORD
(JupyterHub's DummyAuthenticator: for a trial, never for a real class; a school's hub uses its own
login). Each student's server is a JupyterLab of this environment, started by JupyterHub's
SimpleLocalProcessSpawner in a home folder of their own under COURSE_HUB_HOME: the hub and its
proxy let a student reach only their own server, but every server runs as this machine's user, so
the folders themselves are not protected from each other's code (a real hub spawns each student as
their own system user, or in a container: classroom/zero-to-jupyterhub/config.yaml).

Everything listens on 127.0.0.1. Settings, from the environment:
    COURSE_HUB_PORT       the proxy's public port (default 8000); the hub and proxy API use the next two
    COURSE_HUB_HOME       the students' home folders (default: classroom-homes/ under the current folder)
    COURSE_HUB_STUDENTS   names allowed to log in, comma-separated (default student1..student3)
    COURSE_HUB_PASSWORD   their shared password (default: refuse to start without one)
    COURSE_HUB_ADMIN_TOKEN  a token for the hub's REST API with admin rights (optional; the tests use one)
"""

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
port = int(os.environ.get("COURSE_HUB_PORT", "8000"))
home = Path(os.environ.get("COURSE_HUB_HOME", "classroom-homes")).resolve()
students = [
    s.strip() for s in os.environ.get("COURSE_HUB_STUDENTS", "student1,student2,student3").split(",") if s.strip()
]
password = os.environ.get("COURSE_HUB_PASSWORD")
if not password:
    sys.exit("classroom/jupyterhub_config.py: set COURSE_HUB_PASSWORD (the students' shared trial password)")
proxy = HERE / "node_modules" / ".bin" / "configurable-http-proxy"
if not proxy.exists():
    found = shutil.which("configurable-http-proxy")
    if found is None:
        sys.exit("configurable-http-proxy is missing: run `npm install --prefix classroom` from the repository root")
    proxy = Path(found)
singleuser = Path(sys.executable).with_name("jupyterhub-singleuser")

c = get_config()  # noqa: F821 - JupyterHub provides get_config

c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = port
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = port + 1
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{port + 2}"
c.ConfigurableHTTPProxy.command = [str(proxy)]
c.JupyterHub.cookie_secret_file = str(home / ".hub" / "cookie_secret")
c.JupyterHub.db_url = f"sqlite:///{home / '.hub' / 'jupyterhub.sqlite'}"
c.ConfigurableHTTPProxy.pid_file = str(home / ".hub" / "proxy.pid")

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = password
c.Authenticator.allowed_users = set(students)

c.JupyterHub.spawner_class = "simple"  # SimpleLocalProcessSpawner: local processes, a home folder each
c.SimpleLocalProcessSpawner.home_dir_template = str(home / "{username}")
c.Spawner.cmd = [str(singleuser)]
c.Spawner.default_url = "/lab"
# One thread per student's kernel: torch otherwise starts one per core in every kernel, and a class's threads
# fight over the cores (benchmarks/bench_classroom.py measures it; docs/teaching.md has the numbers).
c.Spawner.environment = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
c.Spawner.http_timeout = 120  # a cold server imports JupyterLab's extensions: slow on a busy 2-core machine
c.Spawner.start_timeout = 120
# The course's JupyterLab settings: no news or update checks (they need the internet; the toast
# covers the slides' controls), every cell attached to the DOM (tests read the page whole).
c.Spawner.args = [
    "--ServerApp.allow_root=True",
    "--LabApp.expose_app_in_browser=True",
]

admin_token = os.environ.get("COURSE_HUB_ADMIN_TOKEN")
if admin_token:
    c.JupyterHub.services = [{"name": "course-admin", "api_token": admin_token}]
    c.JupyterHub.load_roles = [
        {
            "name": "course-admin",
            "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"],
            "services": ["course-admin"],
        }
    ]
(home / ".hub").mkdir(parents=True, exist_ok=True)
