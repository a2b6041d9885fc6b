#!/usr/bin/env bash
# The classroom kit for its tests (tests/test_hub.py, tests/test_classroom.py): JupyterHub, nbgitpuller and nbgrader
# (requirements-classroom.txt) in the course's .venv, and JupyterHub's proxy from npm (classroom/package-lock.json).
# nbgrader's and Notebook 7's JupyterLab extensions add menus, a sidebar and toolbar buttons that a learner's
# JupyterLab (requirements.txt alone) does not have: they are turned off in this environment, so that the browser
# and slide tests still check the learner's JupyterLab. A hub for a class keeps them on (docs/teaching.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# the proxy from npm needs nothing from Python: it installs beside the rest (`wait` fails the script if it failed)
npm ci --prefix classroom --no-audit --no-fund --loglevel=error &
proxy=$!
.venv/bin/pip install -q -r requirements-classroom.txt
# one call for all the server extensions (each `jupyter` command takes seconds to start); the two calls write
# different files (labconfig/page_config.json, jupyter_server_config.d/), so they run side by side
.venv/bin/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader @jupyter-notebook/lab-extension >/dev/null 2>&1 &
labextensions=$!
.venv/bin/jupyter server extension disable --sys-prefix notebook nbgrader.server_extensions.{formgrader,validate_assignment,assignment_list,course_list} >/dev/null 2>&1
wait "$labextensions"
wait "$proxy"
