"""The old name of :mod:`toolkit.presentation.safe`, kept so code written against it keeps working.

Importing it gives that module itself (the same object), so names, private helpers and monkeypatching all work.
"""

import sys

from .presentation import safe

sys.modules[__name__] = safe
