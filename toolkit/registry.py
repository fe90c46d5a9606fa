"""The old name of :mod:`toolkit.metrics.declarations` (every metric declared once), kept so code written against it
keeps working: importing it gives that module itself (the same object). ``python -m toolkit.registry`` still writes
``docs/metric-columns.md``.
"""

import sys

from .metrics import declarations

if __name__ == "__main__":  # pragma: no cover
    print(f"wrote {declarations.write_docs()}")
else:
    sys.modules[__name__] = declarations
