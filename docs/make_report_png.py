"""Regenerate docs/report.png: the report's failure-rate figure (one panel per network) of the demo's history.
`make docs` runs it after `chainops demo` whenever the toolkit changed, so the picture cannot go stale:

    .venv/bin/chainops demo && .venv/bin/python docs/make_report_png.py data/demo.duckdb

The figure is the one `chainops demo` embeds in data/reports/demo.html (same period: the whole history).
"""

from __future__ import annotations

import sys
from pathlib import Path

from toolkit.presentation import report


def main(warehouse: str, out: Path = Path(__file__).parent / "report.png") -> None:
    """Draw the report's failure-rate figure from ``warehouse`` into ``out``."""
    since = report._first_time(warehouse)
    built = report.build_report(warehouse, since=since, until=report._last_time(warehouse))
    fig, _ = report._figures(built)["failure_rates"]
    fig.savefig(out, format="png", dpi=80, metadata={"Software": None})
    print(f"{out} ({out.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/demo.duckdb")
