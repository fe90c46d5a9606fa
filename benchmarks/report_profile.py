"""Where a report's and a dashboard's time and memory go: per step (each metric call, each figure, each PNG, the
HTML), seconds and the step's peak RSS.

Run ``python -m benchmarks.report_profile WAREHOUSE [--since 7d] [--what report|csv|page|widget]`` (one process
per ``--what``: the peak RSS of a step is measured from a reset of the process's high-water mark, /proc's
``clear_refs``, so each step shows its own peak, not an earlier step's). Not a test: it reports, it does not assert.
Works on any checkout of the toolkit (it wraps the public functions of ``toolkit.metrics`` and
``toolkit.presentation.figures``
by name), so the same command measures the code before and after a change.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROWS: list[tuple[str, float, float, str]] = []
_DEPTH = [0]
_PEAKS: list[float] = []


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    with contextlib.suppress(OSError):  # not Linux: the peaks are the process's so far
        Path("/proc/self/clear_refs").write_text("5")


def _size(result: Any) -> str:
    try:
        import pandas as pd

        if isinstance(result, pd.DataFrame):
            return f"{len(result):,} rows"
        if isinstance(result, tuple) and result and isinstance(result[0], dict):
            return ""
    except ImportError:
        pass
    if isinstance(result, (str, bytes)):
        return f"{len(result):,} chars"
    return ""


def timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` recording its seconds and peak RSS under ``name`` (nested calls are recorded inside the outer one
    only)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if _DEPTH[0] >= 3:  # deeper calls (a metric called by a metric) are inside their caller
            return func(*args, **kwargs)
        _DEPTH[0] += 1
        _PEAKS.append(0.0)
        _reset_peak()
        slot = len(ROWS)
        ROWS.append(("", 0.0, 0.0, ""))
        t = time.perf_counter()
        try:
            result = func(*args, **kwargs)
        finally:
            _DEPTH[0] -= 1
        # the step's peak: its own high-water mark since the last reset, or a nested step's, the higher
        peak = max(_PEAKS.pop(), _rss_mb("VmHWM"))
        if _PEAKS:
            _PEAKS[-1] = max(_PEAKS[-1], peak)
        detail = kwargs.get("by")
        label = name if detail is None else f"{name}(by={list(detail)}{', bucket' if kwargs.get('bucket') else ''})"
        ROWS[slot] = ("  " * _DEPTH[0] + label, time.perf_counter() - t, peak, _size(result))
        return result

    return wrapper


def instrument() -> None:
    """Wrap every public metric, figure, the PNG writer and the HTML rendering."""
    import toolkit.metrics as metrics
    import toolkit.metrics.proofs as proofs
    from toolkit.presentation import figures as plots
    from toolkit.presentation import report

    for name in list(metrics.METRICS.values()):
        setattr(metrics, name.__name__, timed(name.__name__, getattr(metrics, name.__name__)))
    for name in ("status_durations", "finality_times"):
        setattr(metrics, name, timed(name, getattr(metrics, name)))
    proofs.invalid_proofs = timed("invalid_proofs", proofs.invalid_proofs)
    try:
        import toolkit.metrics.distributions as dist
    except ImportError:  # the code before the counts
        dist = None
    if dist is not None:
        import toolkit.presentation.dashboard_widgets as app

        for name in ("status_duration_counts", "finality_time_counts"):
            original = getattr(dist, name)
            wrapped = timed(name, original)
            for module in (dist, report, app, plots):
                if getattr(module, name, None) is original:
                    setattr(module, name, wrapped)
    for name in dir(plots):
        obj = getattr(plots, name)
        public = (
            callable(obj)
            and not name.startswith("_")
            and getattr(obj, "__module__", "") == "toolkit.presentation.figures"
        )
        if public and name not in ("partial_buckets", "figure_for"):
            setattr(plots, name, timed(f"figure {name}", obj))
    report.figure_png = timed("figure_png", report.figure_png)
    report._render_html = timed("render html (figures included above)", report._render_html)


def run(warehouse: str, since: str, what: str) -> None:
    """Run one surface with every step timed, then print the table."""
    instrument()
    from toolkit.presentation import report

    t0 = time.perf_counter()
    out = Path(tempfile.mkdtemp())
    if what in ("report", "csv", "parquet"):
        built = timed("build_report (all metrics)", report.build_report)(warehouse, since=since)
        fmt = "html" if what == "report" else what
        target = out / ("r.html" if fmt == "html" else "r")
        timed(f"Report.write({fmt})", built.write)(target, fmt)
    elif what == "page":
        from toolkit.presentation import dashboard_page as page

        options = timed("Options", page.Options)(warehouse)
        _, tables = timed("page_and_tables", page.page_and_tables)(warehouse, options, {})
        timed("render_figures (4 PNG)", page.render_figures)(warehouse, {}, tables)
    elif what == "widget":
        from toolkit.presentation.dashboard_widgets import compute_views

        timed("compute_views(draw=True)", compute_views)(
            warehouse, {"channel": None, "network": None, "since": None, "until": None}, None, "1d"
        )
    total = time.perf_counter() - t0
    print(f"{'step':<62} {'s':>8} {'peak RSS MB':>12}  result")
    for label, seconds, peak, size in ROWS:
        print(f"{label:<62} {seconds:8.2f} {peak:12.0f}  {size}")
    print(f"{'total':<62} {total:8.2f} {_rss_mb('VmHWM'):12.0f}")


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments and run."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("warehouse")
    p.add_argument("--since", default="7d")
    p.add_argument("--what", default="report", choices=("report", "csv", "parquet", "page", "widget"))
    args = p.parse_args(argv)
    run(args.warehouse, args.since, args.what)


if __name__ == "__main__":
    main(sys.argv[1:])
