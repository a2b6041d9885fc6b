"""Run the learned-versus-fixed sweep of notebook 05 and write its committed results file.

Usage:
    python scripts/run_experiment.py            # writes pe_lib/data/learned_vs_fixed.json
    python scripts/run_experiment.py --check    # reruns the sweep and compares with that file

The same as `python -m pe_lib.experiments`: every positional variant (none / learned /
sinusoidal) with seeds 0-4, the shift-by-3 task, accuracy in distribution and on longer
sequences. Deterministic on a given machine (fixed threads and seeds); prints each run's
accuracies and seconds, then mean +- std over the seeds.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from pe_lib.experiments import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
