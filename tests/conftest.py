"""Shared fixtures: a clean environment, and a seeded sandbox served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolkit.config import ENV_API_KEY, ENV_BASE_URL, ENV_WAREHOUSE

#: A recognisable key: tests scan output for it to prove it never leaks.
TEST_KEY = "ck_test_SECRET-7f3a9e1b2c4d"


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's real service settings."""
    for name in (ENV_API_KEY, ENV_BASE_URL, ENV_WAREHOUSE):
        monkeypatch.delenv(name, raising=False)


def seeded_sandbox(days: float = 2):
    """A seeded sandbox (frozen clock) with one organisation holding ``TEST_KEY``; ``days`` of history."""
    from toolkit.sandbox import Sandbox

    return Sandbox(
        orgs=(TEST_KEY, "other-org-key"),
        not_onboarded=("not-onboarded-key",),
        seed=11,
        days=days,
        operations_per_day=300,
    )


def small_sandbox():
    """``seeded_sandbox`` over half a day (about 150 operations, 2,700 events): for the modules whose claims hold at
    any size (a setting applied, a pool restored, parts equal to one piece), which override their ``sandbox``
    fixture with it."""
    return seeded_sandbox(days=0.5)


@pytest.fixture(scope="module")
def sandbox():
    """A seeded sandbox (frozen clock) with one organisation holding ``TEST_KEY``."""
    return seeded_sandbox()


@pytest.fixture(scope="session")
def synced_template(tmp_path_factory):
    """A warehouse synced over HTTP from a sandbox built like ``sandbox``, once per worker; never written: modules
    that only read a synced warehouse take their own copy (``synced_copy``) instead of syncing one."""
    from toolkit.config import Settings
    from toolkit.loader import sync

    path = tmp_path_factory.mktemp("synced-template") / "w.duckdb"
    with seeded_sandbox().serve(host="127.0.0.1", port=0) as running:
        settings = Settings.load(base_url=running.base_url, api_key=TEST_KEY, warehouse=path, environ={})
        assert sync(settings, quiet=True).outcome == "ok"
    return path


@pytest.fixture(scope="module")
def synced_copy(synced_template, tmp_path_factory):
    """The module's own copy of ``synced_template`` (a file the module may write)."""
    import shutil

    path = tmp_path_factory.mktemp("synced") / "w.duckdb"
    shutil.copyfile(synced_template, path)
    return path


@pytest.fixture(scope="module")
def server(sandbox) -> Iterator[object]:
    """The module's sandbox served on 127.0.0.1 (a free port)."""
    with sandbox.serve(host="127.0.0.1", port=0) as running:
        yield running


@pytest.fixture(scope="module")
def service(sandbox):
    """The module's sandbox answering in this process, no socket (``tests/support/service.py``): ``.client()``,
    ``.sync(path, ...)``. Where the network matters (faults, kills, latency, a process), use ``server``."""
    from tests.support.service import InProcess

    return InProcess(sandbox)


#: The kinds `make test-fast` leaves out, the costliest first: under pytest-xdist their modules start first, so the
#: two workers finish together instead of one waiting on a Spark module collected last.
SLOW_KINDS = ("spark", "notebooks", "browser", "kill", "slow")


def scope_of(nodeid: str) -> str:
    """The unit a worker runs whole: the test's module, and every Spark module together (one JVM)."""
    path = nodeid.split("::", 1)[0]
    return "tests/spark" if path.startswith("tests/spark/") else path


def unique_node_ids(items: list[pytest.Item]) -> None:
    """Schemathesis parametrizes one test per API operation under a single node id (the operation is only in the
    item's name, ``test_x[GET /networks]``). pytest-xdist schedules by node id, so it would run one of them and
    count the rest as done: each such item takes its name as its id."""
    counts = Counter(item.nodeid for item in items)
    for item in items:
        if counts[item.nodeid] > 1:
            own = f"{item.nodeid.rpartition('::')[0]}::{item.name}"
            try:  # pytest 9 keeps the id structured; earlier releases as text
                from _pytest.nodes import coerce_node_id

                item._id = coerce_node_id(own)
            except ImportError:
                item._nodeid = own
    still = [nodeid for nodeid, n in Counter(item.nodeid for item in items).items() if n > 1]
    if still:  # a test xdist would silently not run: refuse to start
        raise pytest.UsageError(f"tests share a node id, so pytest-xdist would run one of them: {still}")


#: A module marked whole: ``pytestmark = pytest.mark.slow`` (or a list of marks) at the start of a line.
_MODULE_MARKS = re.compile(r"^pytestmark\s*=\s*(.+)$", re.MULTILINE)


def module_marks(path: Path) -> set[str]:
    """The marks a test module gives every test in it, read from its text (the module is not imported)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return {mark for line in _MODULE_MARKS.findall(text) for mark in re.findall(r"pytest\.mark\.(\w+)", line)}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``-m`` (as ``make test-fast`` runs), a module marked whole with a kind the expression leaves out is not
    even imported: its tests would all be deselected, and importing it costs every worker (schemathesis builds its
    coverage cases, Playwright and pyspark load). The module is skipped only when the expression is false for it
    whatever marks its tests add (tried with every other mark absent and with every other mark present)."""
    markexpr = config.getoption("markexpr", default="")
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    marks = module_marks(collection_path)
    if not marks:
        return None
    try:
        from _pytest.mark.expression import Expression  # pytest's own evaluator of -m

        expression = Expression.compile(markexpr)
        kept = any(
            expression.evaluate(lambda name, /, _others=others, **_: name in marks or _others)
            for others in (False, True)
        )
    except Exception:  # an expression or a pytest this does not know: collect as usual
        return None
    return None if kept else True


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test its own node id; mark every test that uses the Spark session ``spark``; under xdist, start
    the modules holding a slow kind first (each module keeps its own order)."""
    unique_node_ids(items)
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
    if not hasattr(config, "workerinput"):  # not an xdist worker: the order stays as collected
        return
    cost: dict[str, int] = {}
    for item in items:
        kinds = [i for i, kind in enumerate(SLOW_KINDS) if item.get_closest_marker(kind)]
        cost[scope_of(item.nodeid)] = min([cost.get(scope_of(item.nodeid), len(SLOW_KINDS)), *kinds])
    items.sort(key=lambda item: cost[scope_of(item.nodeid)])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With ``--dist loadfile`` (as ``make test`` runs): each module whole on one worker, so its module-scoped
    sandbox, server and warehouses are built once, and the Spark modules together on one worker (one JVM)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModuleScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ModuleScheduling(config, log)
