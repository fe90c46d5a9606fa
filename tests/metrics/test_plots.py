"""One figure per metric, drawn from a small warehouse and from an empty one; matplotlib only when plotting."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from tests.support.builders import SEPOLIA, build, ladder, query_event, refresh, watcher_event, watcher_status
from toolkit.presentation import figures as plots

FULL = ("accepted", "sending", "sent", "broadcasting", "confirmed_latest", "confirmed_safe", "confirmed")


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    events = []
    for i in range(6):
        events += ladder(
            f"a{i}",
            FULL,
            (i * 3600, i * 3600 + 1, i * 3600 + 2, i * 3600 + 3, i * 3600 + 15, i * 3600 + 400, i * 3600 + 800),
        )
        events += ladder(
            f"t{i}", FULL[:5], (i * 3600, i * 3600 + 1, i * 3600 + 2, i * 3600 + 3, i * 3600 + 12), chain=SEPOLIA
        )
    events += ladder("f", ("accepted", "sending", "failed"), (0, 1, 5), reason="execution reverted: nope")
    events += ladder("s", ("accepted", "sending", "sent"), (0, 1, 2))
    events += [query_event("q", s, t) for s, t in (("accepted", 0), ("sending", 1), ("sent", 2), ("completed", 9))]
    events += [watcher_status("w", "active", 0), watcher_event("w", 60), watcher_event("w", 4000)]
    return refresh(build(tmp_path_factory.mktemp("plots") / "w.duckdb", events=events))


def rendered(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=50)
    return buffer.getvalue()


@pytest.mark.parametrize("name", plots.FIGURES)
def test_every_metric_has_a_titled_figure(warehouse, name) -> None:
    fig = plots.figure_for(name, warehouse, **({"thresholds": {"sent": 1}} if name == "stuck-operations" else {}))
    ax = fig.axes[0]
    assert ax.get_title()
    assert ax.get_ylabel() and ax.has_data(), name
    assert rendered(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("name", plots.FIGURES)
def test_figures_of_an_empty_warehouse_say_so(tmp_path, name) -> None:
    fig = plots.figure_for(name, build(tmp_path / "w.duckdb", networks=[]))
    assert fig.axes[0].get_title() and fig.axes[0].texts
    assert rendered(fig)


def test_ecdf_of_latencies(warehouse) -> None:
    from toolkit import metrics

    fig = plots.latency_ecdf(metrics.status_durations(warehouse))
    assert "seconds" in fig.axes[0].get_xlabel() and len(fig.axes[0].lines) >= 4


def test_unknown_figure_name() -> None:
    with pytest.raises(ValueError, match="no figure"):
        plots.figure_for("nope", None)


def test_metrics_never_load_matplotlib() -> None:
    code = (
        "import sys, toolkit, toolkit.metrics, toolkit.warehouse.model_tables; "
        "print('matplotlib' in sys.modules, 'toolkit.presentation.figures' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_proof_coverage_of_one_with_a_bound_rounded_below_it_draws() -> None:
    import pandas as pd

    coverage = pd.DataFrame(
        {
            "type": ["watcher.event"],
            "must_have_proof": [10],
            "with_proof": [10],
            "coverage": [1.0],
            "coverage_low": [0.72],
            "coverage_high": [1.0 - 1e-12],
            "too_few_signatures": [0],
            "min_signatures": [4],
        }
    )
    assert rendered(plots.proof_coverage_bars(coverage))
