"""The old name of :mod:`toolkit.presentation.report`, kept so code written against it keeps working.

Importing it gives that module itself (the same object), so names, private helpers and monkeypatching all work.
"""

import sys

from .presentation import report

sys.modules[__name__] = report
