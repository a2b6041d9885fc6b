"""Check classroom/zero-to-jupyterhub/config.yaml against the Zero to JupyterHub chart's own values schema.

    python classroom/validate_z2jh.py CHART_DIR
    (CHART_DIR: the chart unpacked, `helm pull jupyterhub/jupyterhub --version 4.4.0 --untar`, or the
    jupyterhub/ folder of github.com/jupyterhub/zero-to-jupyterhub-k8s at tag 4.4.0)

Helm validates the chart's default values with the course's values merged over them (maps merged key by
key, anything else replaced) against values.schema.json (or the repository's values.schema.yaml, the
same schema with descriptions); this script does the same with jsonschema, offline, and prints every error.
The schema is not part of this repository: tests/test_classroom.py runs this script where Z2JH_CHART_DIR
names a chart folder.
"""

import copy
import json
import sys
from pathlib import Path

import jsonschema
import yaml

CONFIG = Path(__file__).resolve().parent / "zero-to-jupyterhub" / "config.yaml"


def merged(defaults, values):
    """Helm's merge of values over the chart's defaults: maps key by key, everything else replaced."""
    out = copy.deepcopy(defaults)
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def errors(chart_dir, config=CONFIG):
    chart_dir = Path(chart_dir)
    schema_file = next(
        (chart_dir / n for n in ("values.schema.json", "values.schema.yaml") if (chart_dir / n).exists()), None
    )
    if schema_file is None or not (chart_dir / "values.yaml").exists():
        raise SystemExit(f"{chart_dir} is not the jupyterhub chart: it needs values.yaml and values.schema.json/.yaml")
    schema = (
        json.loads(schema_file.read_text())
        if schema_file.suffix == ".json"
        else yaml.safe_load(schema_file.read_text())
    )
    values = merged(yaml.safe_load((chart_dir / "values.yaml").read_text()), yaml.safe_load(Path(config).read_text()))
    return [
        f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}"
        for e in jsonschema.Draft7Validator(schema).iter_errors(values)
    ]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        raise SystemExit(__doc__)
    found = errors(argv[0])
    for line in found:
        print(line)
    print(f"{len(found)} error(s): {CONFIG.name} against {argv[0]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
