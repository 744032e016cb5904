"""Fixtures shared by the test modules (pytest finds them here; no test module imports a fixture).

- ``con``: a connection with everything embsql registers.  Fresh for each test, unless the test
  (or its module, ``pytestmark = pytest.mark.shared_connection``) only registers Arrow tables and
  reads: then one connection serves the whole module, since embsql.connect() costs ~0.1 s.
- ``postgres`` and ``spark`` start once per test session, ``engine`` runs a test once on each of
  DuckDB, PostgreSQL and Spark; tests/engine_fixtures.py has the servers.  Every test that uses
  one (or ``pgvector``) is marked ``engines``.  Under pytest-xdist each worker is a session, so a worker that runs
  engine tests starts its own servers: PostgreSQL listens on a socket in its own temporary
  directory (no TCP port) and Spark runs without its UI on random local ports, so two never clash.
  CI runs ``--dist loadscope``: a module's tests stay on one worker and share its module fixtures.
"""

import pytest
from engine_fixtures import EngineUnavailable, engine_missing, postgres_server, spark_session

import embsql

pytest_plugins = ["pgvector_fixtures"]  # the pgvector fixture (PostgreSQL with pgvector, from pgserver)
ENGINE_FIXTURES = {"postgres", "spark", "engine", "pgvector"}  # pgvector: PostgreSQL from pgserver


@pytest.fixture(scope="module")
def module_con():
    """One registered connection for a module whose tests only register tables and read."""
    connection = embsql.connect()
    yield connection
    connection.close()


@pytest.fixture
def con(request):
    if request.node.get_closest_marker("shared_connection"):
        yield request.getfixturevalue("module_con")
        return
    connection = embsql.connect()
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def postgres():
    """A psycopg connection (autocommit) to a fresh database on a scratch server of this session."""
    try:
        import psycopg
    except ImportError:
        engine_missing("psycopg is not installed (pip install 'embsql[postgres]')")
    try:
        server = postgres_server()
        params = server.__enter__()
    except EngineUnavailable as error:
        engine_missing(str(error))
    try:
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
            admin.execute("CREATE DATABASE embsql_test")
        connection = psycopg.connect(dbname="embsql_test", autocommit=True, **params)
        try:
            yield connection
        finally:
            connection.close()
    finally:
        server.__exit__(None, None, None)


@pytest.fixture(scope="session")
def spark():
    """A local SparkSession (its start-up takes seconds, so one for the session; tables are temp views
    that load_table replaces)."""
    try:
        manager = spark_session()
        session = manager.__enter__()
    except EngineUnavailable as error:
        engine_missing(str(error))
    try:
        yield session
    finally:
        manager.__exit__(None, None, None)


@pytest.fixture(scope="module", params=["duckdb", "postgres", "spark"])
def engine(request):
    """A connection to each engine in turn (DuckDB in memory, then PostgreSQL, then Spark)."""
    if request.param == "duckdb":
        import duckdb

        connection = duckdb.connect()
        yield connection
        connection.close()
    else:
        yield request.getfixturevalue(request.param)


@pytest.hookimpl(tryfirst=True)   # before -m deselects
def pytest_collection_modifyitems(items):
    for item in items:
        if ENGINE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.engines)
