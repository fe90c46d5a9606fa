"""The old name of :mod:`toolkit.presentation.dashboard_widgets`, kept so code written against it keeps working.

Importing it gives that module itself (the same object), so names, private helpers and monkeypatching all work.
"""

import sys

from .presentation import dashboard_widgets

sys.modules[__name__] = dashboard_widgets
