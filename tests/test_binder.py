"""binder/ must build the same course as requirements.txt, following repo2docker's rules.

repo2docker (mybinder.org's builder) facts this file relies on:
- if a `binder/` folder exists, only the configuration files in it are used (the root
  requirements.txt and pyproject.toml are ignored), and `binder/` and `.binder/` may not coexist;
- a `Dockerfile` there would override every other file;
- `runtime.txt` holds `python-X.Y`;
- `requirements.txt` is installed with `pip install -r`, so pip options such as
  `--extra-index-url` are allowed in it;
- `postBuild` runs from the repository root after the environment is installed.
"""

import os
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*(?P<version>[^\s;#]+)\s*(#.*)?$")


def _lines(path):
    """Non-empty lines of a requirements file, comments stripped."""
    lines = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line and not line.startswith("#"):
            lines.append(line)
    return lines


def _pins(path):
    """(pins {normalised name: version}, other lines) of a requirements file."""
    pins, other = {}, []
    for line in _lines(path):
        match = PIN.match(line)
        if match:
            name = re.sub(r"[-_.]+", "-", match["name"]).lower()
            assert name not in pins, f"{path.name}: {name} is pinned twice"
            pins[name] = match["version"]
        else:
            other.append(line)
    return pins, other


def test_binder_folder_is_the_only_repo2docker_config():
    assert BINDER.is_dir()
    assert not (ROOT / ".binder").exists(), "repo2docker refuses both binder/ and .binder/"
    assert not (BINDER / "Dockerfile").exists(), "a Dockerfile would make repo2docker ignore every other file"
    assert not (BINDER / "environment.yml").exists(), "environment.yml would replace requirements.txt"


def test_runtime_pins_the_python_of_pyproject():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    match = re.fullmatch(r"python-(\d+)\.(\d+)", runtime)
    assert match, f"runtime.txt must be 'python-X.Y', got {runtime!r}"
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = re.search(r">=\s*(\d+)\.(\d+)", requires)
    assert minimum, requires
    assert (int(match[1]), int(match[2])) >= (int(minimum[1]), int(minimum[2])), (runtime, requires)


def test_binder_requirements_have_the_same_pins_apart_from_the_torch_build():
    root_pins, root_other = _pins(ROOT / "requirements.txt")
    binder_pins, binder_other = _pins(BINDER / "requirements.txt")
    assert "torch" in root_pins and "torch" in binder_pins
    # the CPU-only build of exactly the same torch release, from PyTorch's CPU wheel index
    assert binder_pins["torch"] == root_pins["torch"].split("+")[0] + "+cpu", (binder_pins["torch"], root_pins["torch"])
    assert f"--extra-index-url {CPU_INDEX}" in binder_other
    missing = sorted(set(root_pins) - set(binder_pins))
    extra = sorted(set(binder_pins) - set(root_pins))
    assert not missing, f"pinned in requirements.txt but not in binder/requirements.txt: {missing}"
    assert not extra, f"pinned in binder/requirements.txt but not in requirements.txt: {extra}"
    different = {
        name: (root_pins[name], binder_pins[name])
        for name in root_pins
        if name != "torch" and root_pins[name] != binder_pins[name]
    }
    assert not different, f"different pins (requirements.txt, binder/requirements.txt): {different}"
    # everything else in binder/requirements.txt is the index option; pe_lib comes from postBuild
    assert binder_other == [f"--extra-index-url {CPU_INDEX}"], binder_other
    # and the root file has nothing besides pins but the editable install of pe_lib and the course's lab settings
    assert set(root_other) == {"-e .", "./lab-settings"}, root_other


def test_post_build_installs_pe_lib_without_touching_the_pins():
    post_build = BINDER / "postBuild"
    text = post_build.read_text()
    assert text.startswith("#!/bin/bash\n"), "repo2docker runs postBuild as a script: it needs a shebang"
    assert os.access(post_build, os.X_OK), "postBuild must be executable (chmod +x, committed with the bit)"
    assert re.search(r"^set -e", text, re.MULTILINE), "without set -e a failing step does not stop the build"
    install = [line for line in text.splitlines() if "pip install" in line and not line.lstrip().startswith("#")]
    assert len(install) == 1, install
    assert "-e ." in install[0] and "--no-deps" in install[0], install[0]
    assert "./lab-settings" in install[0], "Binder needs the course's JupyterLab settings too: " + install[0]
