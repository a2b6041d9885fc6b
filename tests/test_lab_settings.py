"""The course's JupyterLab settings (lab-settings/): installed where JupyterLab reads them, valid, scoped.

requirements.txt installs lab-settings/ as a package of its own (`./lab-settings`, Binder's postBuild too),
which puts positional-encoding-course.json5 into <environment>/share/jupyter/lab/settings/overrides.d/.
JupyterLab merges every file there into its settings' defaults. What the styles do on the slides is
measured in a real browser by tests/test_browser.py.
"""

import json
import re
from pathlib import Path

import json5
import jsonschema
import pytest
from jupyterlab.commands import get_app_dir
from jupyterlab_server.settings_utils import _get_overrides

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "lab-settings" / "positional-encoding-course.json5"
APP_SETTINGS = Path(get_app_dir()) / "settings"
INSTALLED = APP_SETTINGS / "overrides.d" / SOURCE.name
PRESENTING = "body[data-jp-deck-mode='presenting']"


def _settings():
    return json5.loads(SOURCE.read_text(encoding="utf-8"))


def _schema(plugin_id):
    """The JSON schema of a JupyterLab plugin's settings, from the environment's schemas or labextensions."""
    package, plugin = plugin_id.split(":")
    app = Path(get_app_dir())
    for base in (app / "schemas", app.parent / "labextensions" / package / "schemas"):
        path = base / package / f"{plugin}.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))
    raise AssertionError(f"no settings schema for {plugin_id} in this environment (is its extension installed?)")


def _selector_list(selector):
    """The selectors of a selector list: split at its commas, not at those inside :is(), :not(), :has()."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(selector):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(selector[start:i].strip())
            start = i + 1
    return [*parts, selector[start:].strip()]


def test_the_environment_holds_this_very_settings_file():
    assert INSTALLED.is_file(), (
        f"{INSTALLED} is missing: install the course's JupyterLab settings with "
        "`pip install -r requirements.txt` (or `pip install --no-deps ./lab-settings`)"
    )
    assert INSTALLED.read_bytes() == SOURCE.read_bytes(), (
        f"{INSTALLED} is an older copy of {SOURCE.relative_to(ROOT)}: run `pip install --no-deps ./lab-settings`"
    )


def test_jupyterlab_reads_them_as_its_defaults():
    overrides, error = _get_overrides(str(APP_SETTINGS))
    assert not error, error
    for plugin_id, values in _settings().items():
        assert plugin_id in overrides, plugin_id
        for key, value in values.items():
            assert overrides[plugin_id][key] == value, (plugin_id, key)


@pytest.mark.parametrize("plugin_id", list(_settings()))
def test_each_setting_is_valid_for_its_plugin(plugin_id):
    """A value its schema refuses would be dropped by JupyterLab with only a console message."""
    schema = _schema(plugin_id)
    values = _settings()[plugin_id]
    unknown = sorted(set(values) - set(schema.get("properties", {})))
    assert not unknown, f"{plugin_id} has no settings {unknown}"
    jsonschema.validate(values, schema)


def test_no_news_toast():
    notification = _settings()["@jupyterlab/apputils-extension:notification"]
    assert notification == {"fetchNews": "false", "checkForUpdates": False}


def test_the_slide_styles_apply_only_while_a_deck_is_presented():
    """Every rule starts with the deck's presenting flag: the notebook view keeps JupyterLab's own look."""
    styles = _settings()["@deathbeds/jupyterlab-fonts:fonts"]["styles"]
    assert styles
    for selector in styles:
        for part in _selector_list(selector):
            assert part.startswith(PRESENTING), f"a rule outside the deck: {part!r}"
    deck = styles[f"{PRESENTING} .jp-Deck"]
    sizes = {name: int(re.fullmatch(r"(\d+)px", value)[1]) for name, value in deck.items() if value.endswith("px")}
    assert sizes["--jp-content-font-size1"] >= 24 and sizes["--jp-code-font-size"] >= 20, sizes
