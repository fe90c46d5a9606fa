"""``python -m toolkit`` runs the ``chainops`` command line."""

import sys

from .cli import main

sys.exit(main())
