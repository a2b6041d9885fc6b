#!/usr/bin/env bash
# The classroom kit for its tests (tests/test_hub.py, tests/test_classroom.py): JupyterHub, nbgitpuller and nbgrader
# (requirements-classroom.txt) in the course's .venv, and JupyterHub's proxy from npm (classroom/package-lock.json).
# nbgrader's and Notebook 7's JupyterLab extensions add menus, a sidebar and toolbar buttons that a learner's
# JupyterLab (requirements.txt alone) does not have: they are turned off in this environment, so that the browser
# and slide tests still check the learner's JupyterLab. A hub for a class keeps them on (docs/teaching.md).
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q -r requirements-classroom.txt
.venv/bin/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader @jupyter-notebook/lab-extension >/dev/null 2>&1
# one call for all of them: each `jupyter` command takes 3 s to start
.venv/bin/jupyter server extension disable --sys-prefix notebook nbgrader.server_extensions.{formgrader,validate_assignment,assignment_list,course_list} >/dev/null 2>&1
npm ci --prefix classroom --no-audit --no-fund --loglevel=error
