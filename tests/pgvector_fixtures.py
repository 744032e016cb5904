"""PostgreSQL with pgvector for the tests: the PyPI package ``pgserver`` (PostgreSQL 16.2 with
pgvector 0.6.2 in a wheel; Debian's package list here has no pgvector), one server per test session.

``pgvector`` is a psycopg connection (autocommit) to a database where ``CREATE EXTENSION vector``
has run.  Loaded from tests/conftest.py.  Without pgserver or psycopg the tests skip, except under
CI (the variable CI set), where they fail: the ``test`` extra installs pgserver.

``pgvector_server()`` is a plain context manager (a connection URI) for benchmarks.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import warnings

import pytest


class PgvectorUnavailable(RuntimeError):
    """pgserver (or psycopg) is missing, or its server did not start."""


@contextlib.contextmanager
def pgvector_server():
    """A scratch PostgreSQL 16 server from pgserver (unix socket, trust auth); yields its URI."""
    try:
        with warnings.catch_warnings():   # platformdirs: no XDG_RUNTIME_DIR in containers
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError:
        raise PgvectorUnavailable("pgserver is not installed (pip install pgserver: PostgreSQL with pgvector)") from None
    home = tempfile.mkdtemp(prefix="embsql-pgvector-")
    os.chmod(home, 0o755)     # as root, pgserver runs the server as its own OS user
    try:
        try:
            server = pgserver.get_server(home, cleanup_mode="stop")
        except Exception as error:  # pgserver raises plain exceptions with the server log
            raise PgvectorUnavailable(f"pgserver could not start PostgreSQL: {str(error).splitlines()[0]}") from None
        try:
            yield server.get_uri()
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _unavailable(reason: str):
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason} (CI is set, so a missing engine is a failure)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pgvector():
    """A psycopg connection (autocommit) with pgvector's ``vector`` type available."""
    try:
        import psycopg
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'embsql[postgres]')")
    try:
        manager = pgvector_server()
        uri = manager.__enter__()
    except PgvectorUnavailable as error:
        _unavailable(str(error))
    try:
        with psycopg.connect(uri, autocommit=True) as admin:
            admin.execute("CREATE DATABASE embsql_pgvector")
        connection = psycopg.connect(uri.replace("/postgres?", "/embsql_pgvector?"), autocommit=True)
        connection.execute("CREATE EXTENSION vector")
        try:
            yield connection
        finally:
            connection.close()
    finally:
        manager.__exit__(None, None, None)
