"""The old name of :mod:`toolkit.metrics.known_values` (filter values checked against the warehouse), kept so code
written against it keeps working: importing it gives that module itself (the same object)."""

import sys

from .metrics import known_values

sys.modules[__name__] = known_values
