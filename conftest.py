"""nbval's options for the notebooks, set here rather than in pyproject.toml's addopts.

`python -m pytest` runs every notebook under nbval as before (as `--nbval --nbval-current-env
--nbval-sanitize-with tests/nbval_sanitize.cfg` would). Set here, they leave `-p no:nbval` free to
turn nbval off: in addopts they were always on the command line, and pytest stopped at an option
no plugin knew. Options given on the command line win (`--nbval-lax`, another sanitize file).
"""

from pathlib import Path

SANITIZE = Path(__file__).resolve().parent / "tests" / "nbval_sanitize.cfg"


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("nbval"):
        return  # -p no:nbval: the notebooks are not collected
    option = config.option
    if not option.nbval_lax:
        option.nbval = True
    if not option.nbval_kernel_name:
        option.nbval_current_env = True  # the kernel runs in this environment (its pe_lib, its pins)
    if option.nbval_sanitize_with is None:
        option.nbval_sanitize_with = str(SANITIZE)
