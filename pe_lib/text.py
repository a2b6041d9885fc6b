"""Numbers as text that reads the same on every machine.

A difference that is only rounding (1e-16 on one CPU, 3e-16 or 0 on the next) is printed as a
bound, "< 1e-06", never as its value: the notebooks' committed outputs, legends and titles are
compared exactly by nbval, and a learner should not read noise as a result.
"""

import math


def measured(value, *, noise=1e-6, digits=2):
    """`value` with `digits` significant digits, or "< noise" when its size is below `noise`."""
    value = float(value)
    if not math.isfinite(value):
        return str(value)
    if abs(value) < noise:
        return f"< {noise:.0e}"
    return f"{value:.{digits}g}"
