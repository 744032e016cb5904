"""Real SQL engines for the tests, started by the tests themselves: PostgreSQL and Spark (local).

The pytest fixtures built on them (``postgres``, ``spark``, ``engine``) are in tests/conftest.py:
a test asks for them by name and imports nothing.

A missing engine (binaries, Java, or the Python package) skips the tests with the reason, except
under CI (the environment variable CI set, as CI services do), where it fails them: CI installs
every engine (.ci/setup-engines.sh and the ``test`` extra), so a skip there would hide a break.

``postgres_server()`` and ``spark_session()`` are plain context managers for benchmarks.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def engine_missing(reason: str):
    """Skip locally; fail under CI, where every engine must be installed."""
    if in_ci():
        pytest.fail(f"{reason} (CI is set, so a missing engine is a failure; run .ci/setup-engines.sh)")
    pytest.skip(reason)


class EngineUnavailable(RuntimeError):
    """An engine cannot be started here; the message says what is missing."""


# ---------------------------------------------------------------- PostgreSQL


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL server's bin directory (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@contextlib.contextmanager
def postgres_server():
    """A throw-away PostgreSQL server on a unix socket in a temporary directory, trust auth.

    Yields the connection keywords (host = the socket directory, port, user). Root cannot run
    PostgreSQL, so as root the server runs as the ``postgres`` OS user."""
    bindir = postgres_bin()
    if bindir is None:
        raise EngineUnavailable("PostgreSQL server binaries not found (install postgresql)")
    as_root = os.geteuid() == 0
    if as_root and shutil.which("runuser") is None:
        raise EngineUnavailable("running as root needs runuser to start PostgreSQL as the postgres user")
    prefix = ["runuser", "-u", "postgres", "--"] if as_root else []
    home = Path(tempfile.mkdtemp(prefix="embsql-pg-"))
    data, log = home / "data", home / "server.log"
    try:
        if as_root:
            try:
                shutil.chown(home, "postgres", "postgres")
            except LookupError:
                raise EngineUnavailable("no postgres OS user to run PostgreSQL as (install postgresql)") from None

        def run(*args):
            result = subprocess.run(prefix + [str(a) for a in args], check=False, capture_output=True, text=True)
            if result.returncode:
                detail = (result.stderr or result.stdout).strip()
                if log.exists():
                    detail += "\n" + log.read_text()[-2000:]
                raise EngineUnavailable(f"{Path(str(args[0])).name} failed: {detail}")

        run(bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "--no-sync")
        # unix socket only (no TCP port to collide with other test runs); durability off: a scratch server
        options = (f"-c listen_addresses='' -k {home} -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off -c max_wal_size=4GB -c wal_level=minimal -c max_wal_senders=0")
        run(bindir / "pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start")
        try:
            yield {"host": str(home), "port": 5432, "user": "postgres"}
        finally:
            subprocess.run(prefix + [str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           check=False, capture_output=True)
    finally:
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------- Spark


def _java_major(java: str) -> int | None:
    try:
        result = subprocess.run([java, "-version"], check=False, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)', result.stderr + result.stdout)
    return int(match.group(1)) if match else None


def java_home() -> str | None:
    """A Java that Spark 4 runs on: JAVA_HOME, the java on PATH, or one in /usr/lib/jvm (17 or 21 first)."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    if shutil.which("java"):
        candidates.append(Path(shutil.which("java")).resolve())
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/jvm/*/bin/java"))]
    usable = [(java, _java_major(str(java))) for java in candidates if java.exists()]
    usable = [(java, major) for java, major in usable if major and major >= 17]
    usable.sort(key=lambda item: item[1] not in (17, 21))  # stable: keeps the order above otherwise
    return str(usable[0][0].parent.parent) if usable else None


_LOG4J = """rootLogger.level = fatal
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


@contextlib.contextmanager
def spark_session(cores: int = 2, quick_start: bool = True, memory: str = "2g", java_options: str = ""):
    """A local SparkSession: ``cores`` threads, few shuffle partitions, no UI, quiet logging.

    ``quick_start`` runs the JVM with only its fast (C1) compiler and the serial collector: start-up
    and short queries take about half the time; pass False for long benchmark runs. ``memory`` is
    the JVM heap (local mode runs the tasks in the driver); ``java_options`` are added to the JVM's."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineUnavailable("pyspark is not installed (pip install 'embsql[spark]')") from None
    with warnings.catch_warnings():
        # imported lazily by pyspark, it warns once that pandas 3 is not fully supported; the
        # engines module never goes through pandas (Arrow and Parquet only)
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas", FutureWarning)
        import pyspark.testing.utils  # noqa: F401
    home = java_home()
    if home is None:
        raise EngineUnavailable("no Java 17+ runtime for Spark (install openjdk-17-jre-headless)")
    os.environ["JAVA_HOME"] = home
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no 'hostname resolves to loopback' warning
    # the Python workers (stage 1's mapInArrow) run this interpreter, which has numpy, pyarrow and embsql
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    scratch = Path(tempfile.mkdtemp(prefix="embsql-sparktest-"))
    (scratch / "log4j2.properties").write_text(_LOG4J)
    java_options = f"-Dlog4j2.configurationFile=file:{scratch / 'log4j2.properties'} {java_options}".strip()
    if quick_start:
        java_options += " -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    try:
        session = (SparkSession.builder.master(f"local[{cores}]").appName("embsql-tests")
                   .config("spark.driver.memory", memory)  # local mode: the driver is the executor
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.shuffle.partitions", str(cores))
                   .config("spark.default.parallelism", str(cores))
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.local.dir", str(scratch))
                   .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
                   .config("spark.driver.extraJavaOptions", java_options)
                   .getOrCreate())
        # errors reach Python as exceptions (EngineError); Spark's own ERROR log of them is noise
        session.sparkContext.setLogLevel("FATAL")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    try:
        yield session
    finally:
        session.stop()
        shutil.rmtree(scratch, ignore_errors=True)
