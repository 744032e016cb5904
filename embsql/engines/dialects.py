"""The engines embsql writes stage 1 for, one class each, declaring what differs between them.

A report's stage 1 (embsql.io.portable_sums) is one sqlglot AST, so it can be written for every
engine below (``embsql sql --dialect``, ``Report.sql``); sqlglot's own Dialect classes write each
one's array index base, casts and functions.  What sqlglot does not know is declared here, as
sqlglot declares its dialects: one class per engine, with flags and a few methods.

- ``reads_local``: the engine reads the user's files and frames itself (DuckDB); the others read a
  table named on them (``table=``).
- ``fence``: the aggregate guards its subqueries with OFFSET 0 (PostgreSQL, which inlines them).
- ``duckdb_functions``: a query may call DuckDB's own functions (sqlglot's Anonymous nodes).
- ``vector_types``: what ``load_table(vector_type=...)`` may store vectors as.
- ``vector_type_query`` / ``is_number_array``: how the vector column's type is read and checked.
- ``stage1_sql`` / ``stage1_result``: the aggregate it runs and how its result is read back
  (PostgreSQL with pgvector: the mean unit vector, times n_g).
- ``note`` / ``summarizer``: where ``run_on`` computes the same sums another way (Spark).
- ``connections``, ``errors``, ``fetch``, ``load``, ``connect``: the connection handling.

embsql runs stage 1 itself only where it recognises a connection (``runs``; embsql.run_on): the
others get printed SQL to run there, and their Arrow result can be finished with
``Report.run_stage1``.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import duckdb
import pyarrow as pa
import sqlglot
from sqlglot import exp

from embsql.engines import postgres, spark
from embsql.errors import EngineError, InputError
from embsql.io import portable_sums
from embsql.io.portable_sums import Dimensions, VectorForm

Summarizer = Callable[[exp.Expression, Dimensions], pa.Table]


class Engine:
    """An engine embsql writes stage 1 for (the defaults: a SQL engine embsql only writes for)."""

    name: ClassVar[str]                 # the sqlglot dialect name
    label: ClassVar[str]                # the engine, for people
    runs: ClassVar[bool] = False        # embsql runs stage 1 on a connection of this engine
    reads_local: ClassVar[bool] = False
    fence: ClassVar[bool] = False
    duckdb_functions: ClassVar[bool] = False
    vector_types: ClassVar[tuple[str, ...]] = ()
    number_types: ClassVar[tuple[str, ...]] = ()   # the element types of an array of numbers, as typeof() says
    wanted: ClassVar[str] = "an array of numbers"
    # (module, class) of the client's connections and errors, looked up only once they are imported
    connections: ClassVar[tuple[tuple[str, str], ...]] = ()
    error_classes: ClassVar[tuple[tuple[str, str], ...]] = ()

    @property
    def index_base(self) -> int:
        """The first index of an array: 1 (DuckDB, PostgreSQL, Trino) or 0 (Spark, BigQuery, Snowflake)."""
        return int(sqlglot.Dialect.get_or_raise(self.name).INDEX_OFFSET)

    # -- the SQL ---------------------------------------------------------------------------------
    def vector_type_query(self, table: exp.Expression, vector: str) -> str | None:
        """One row with the vector column's type name (and the pgvector version); None: not read."""
        return None

    def is_number_array(self, type_name: str) -> bool:
        """Is ``type_name`` (from vector_type_query) an array of numbers (or a pgvector type)?"""
        name = type_name.strip().lower()
        return name.endswith("[]") and name[:-2].split("(")[0] in self.number_types

    def stage1_sql(self, relation: exp.Expression, group: str, vector: str, dims: Dimensions,
                   model: str | None, form: VectorForm) -> exp.Expression | str:
        """The stage-1 aggregate on this engine: the portable one (sqlglot writes it)."""
        return portable_sums.group_sums_query(relation, group, vector, dims, model, fence=self.fence)

    def stage1_result(self, returned: pa.Table, dims: Dimensions, form: VectorForm) -> pa.Table:
        """stage1_sql's result in the portable aggregate's columns."""
        return returned

    def note(self, relation: exp.Expression, group: str, vector: str, model: str | None) -> str:
        """Comment lines before the printed SQL where run_on computes stage 1 another way."""
        return ""

    def summarizer(self, connection: Any, group: str, vector: str, model: str | None) -> Summarizer | None:
        """run_on's own way to the stage-1 sums on ``connection``, or None: it runs stage1_sql."""
        return None

    # -- the connection ----------------------------------------------------------------------------
    def owns(self, connection: object) -> bool:
        """Is ``connection`` a connection of this engine (of the client modules already imported)?"""
        return any(cls is not None and isinstance(connection, cls) for cls in _loaded(self.connections))

    def errors(self) -> tuple[type[BaseException], ...]:
        """The exception classes this engine's client raises (of the modules already imported)."""
        return tuple(cls for cls in _loaded(self.error_classes) if cls is not None)

    def error(self, error: BaseException) -> EngineError:
        """The engine's exception as one line naming the dialect."""
        return EngineError(f"{self.name} rejected the query: {first_line(error)}")

    def fetch(self, connection: Any, sql: str) -> pa.Table:
        raise InputError(f"embsql does not run SQL on {self.label}; run the printed SQL there")

    def load(self, connection: Any, name: str, table: pa.Table, vector_type: str | None) -> None:
        raise InputError(f"embsql does not load tables into {self.label}")

    @contextlib.contextmanager
    def connect(self, *, dsn: str | None = None, spark_master: str | None = None) -> Iterator[Any]:
        raise InputError(f"engine must be one of {', '.join(CONNECTABLE)}, not {self.name!r}")
        yield   # pragma: no cover


class DuckDB(Engine):
    name, label, runs = "duckdb", "DuckDB", True
    reads_local = True
    duckdb_functions = True

    def owns(self, connection: object) -> bool:
        return isinstance(connection, duckdb.DuckDBPyConnection)

    def errors(self) -> tuple[type[BaseException], ...]:
        return (duckdb.Error,)

    def fetch(self, connection: Any, sql: str) -> pa.Table:
        relation = connection.sql(sql)
        if relation is None:
            raise InputError("fetch_arrow needs a query that returns rows (a SELECT)")
        return relation.to_arrow_table()

    def load(self, connection: Any, name: str, table: pa.Table, vector_type: str | None) -> None:
        view = f"embsql_load_{uuid.uuid4().hex}"      # the Arrow table's types as they are
        connection.register(view, table)
        try:
            target, rows = (exp.to_identifier(n, quoted=True).sql(self.name) for n in (name, view))
            connection.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM {rows}")
        finally:
            connection.unregister(view)


class Spark(Engine):
    """Spark: stage 1 in Python workers (embsql.engines.spark.group_sums), for the printed
    aggregate's ~4 d buffers are over Spark's whole-stage codegen limit."""

    name, label, runs = "spark", "Apache Spark", True
    number_types = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
    connections = (("pyspark.sql.session", "SparkSession"), ("pyspark.sql.connect.session", "SparkSession"))
    error_classes = (("pyspark.errors", "PySparkException"), ("py4j.protocol", "Py4JError"))

    def vector_type_query(self, table: exp.Expression, vector: str) -> str | None:
        column = exp.column(vector, quoted=True).sql(self.name)
        return (f"SELECT typeof({column}) AS `{portable_sums.TYPE}`, NULL AS `{portable_sums.VERSION}` "
                f"FROM {table.sql(self.name)} LIMIT 1")

    def is_number_array(self, type_name: str) -> bool:
        name = type_name.strip().lower()
        return name.startswith("array<") and name[6:-1].split("(")[0] in self.number_types

    def note(self, relation: exp.Expression, group: str, vector: str, model: str | None) -> str:
        return spark.note(relation, group, vector, model) + "\n"

    def summarizer(self, connection: Any, group: str, vector: str, model: str | None) -> Summarizer | None:
        def summarize(relation: exp.Expression, dims: Dimensions) -> pa.Table:
            try:
                return spark.group_sums(connection, relation, group, vector, dims, model)
            except self.errors() as error:
                raise self.error(error) from error
        return summarize

    def fetch(self, connection: Any, sql: str) -> pa.Table:
        return spark.fetch(connection, sql)

    def load(self, connection: Any, name: str, table: pa.Table, vector_type: str | None) -> None:
        spark.load(connection, name, table)

    @contextlib.contextmanager
    def connect(self, *, dsn: str | None = None, spark_master: str | None = None) -> Iterator[Any]:
        """A SparkSession on ``spark_master`` (default local[*]), stopped on exit unless it was running."""
        try:
            from pyspark.sql import SparkSession
        except ImportError:
            raise EngineError("spark: pyspark is not installed (pip install 'embsql[spark]')") from None
        running = SparkSession.getActiveSession()     # this process's own session: use it, leave it running
        builder = SparkSession.builder.master(spark_master or "local[*]").appName("embsql")
        if (spark_master or "local").startswith("local") and "PYSPARK_PYTHON" not in os.environ:
            # local workers run this Python, which has what stage 1's workers need (numpy, pyarrow, embsql)
            builder = builder.config("spark.pyspark.python", sys.executable)
        try:
            session = running or builder.getOrCreate()
        except Exception as error:  # py4j / JVM start-up: no Java, a master that does not answer
            raise EngineError(f"spark: cannot start a session on {spark_master or 'local[*]'}: "
                              f"{first_line(error)}") from None
        try:
            yield session
        finally:
            if running is None:
                session.stop()


class Postgres(Engine):
    """PostgreSQL: vectors as arrays of numbers or pgvector's vector/halfvec, whose own mean is
    stage 1 there (portable_sums.pgvector_sums_query)."""

    name, label, runs = "postgres", "PostgreSQL", True
    fence = True
    vector_types = postgres.VECTOR_TYPES
    number_types = ("smallint", "integer", "bigint", "real", "double precision", "numeric")
    wanted = "an array of numbers or pgvector's vector"
    connections = (("psycopg", "Connection"), ("psycopg2.extensions", "connection"))
    error_classes = (("psycopg", "Error"), ("psycopg2", "Error"))

    def vector_type_query(self, table: exp.Expression, vector: str) -> str | None:
        column = exp.column(vector, quoted=True).sql(self.name)
        return (f"SELECT pg_typeof({column})::text AS \"{portable_sums.TYPE}\", (SELECT extversion FROM "
                f"pg_extension WHERE extname = 'vector') AS \"{portable_sums.VERSION}\" "
                f"FROM {table.sql(self.name)} LIMIT 1")

    def is_number_array(self, type_name: str) -> bool:
        return type_name.strip().lower() in portable_sums.PGVECTOR_TYPES or super().is_number_array(type_name)

    def stage1_sql(self, relation: exp.Expression, group: str, vector: str, dims: Dimensions,
                   model: str | None, form: VectorForm) -> exp.Expression | str:
        if not form.pgvector:
            return super().stage1_sql(relation, group, vector, dims, model, form)
        return portable_sums.pgvector_sums_query(relation, group, vector, dims, model=model,
                                                 version=form.pgvector_version or "0.6.2",
                                                 halfvec=form.type_name == "halfvec")

    def stage1_result(self, returned: pa.Table, dims: Dimensions, form: VectorForm) -> pa.Table:
        return portable_sums.sums_from_means(returned, dims) if form.pgvector else returned

    def fetch(self, connection: Any, sql: str) -> pa.Table:
        return postgres.fetch(connection, sql)

    def load(self, connection: Any, name: str, table: pa.Table, vector_type: str | None) -> None:
        postgres.load(connection, name, table, vector_type or self.vector_types[0])

    @contextlib.contextmanager
    def connect(self, *, dsn: str | None = None, spark_master: str | None = None) -> Iterator[Any]:
        """A psycopg (3) connection from the libpq ``dsn``, in autocommit, closed on exit."""
        if not dsn:
            raise InputError("postgres: --dsn is needed (a libpq connection string, e.g. \"host=db dbname=emb\")")
        try:
            import psycopg
        except ImportError:
            raise EngineError("postgres: psycopg is not installed (pip install 'embsql[postgres]')") from None
        try:
            connection = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as error:
            raise EngineError(f"postgres: cannot connect: {first_line(error)}") from None
        with connection:
            yield connection


class Trino(Engine):
    name, label = "trino", "Trino"


class BigQuery(Engine):
    name, label = "bigquery", "BigQuery"


class Snowflake(Engine):
    name, label = "snowflake", "Snowflake"


ENGINES: dict[str, Engine] = {cls.name: cls() for cls in (DuckDB, Spark, Postgres, Trino, BigQuery, Snowflake)}
WRITABLE = tuple(ENGINES)                                        # embsql writes the report's SQL in these
RUNNABLE = tuple(name for name, e in ENGINES.items() if e.runs)  # ... and runs it on a connection of these
# the engines the command line connects to itself (--engine)
CONNECTABLE = tuple(name for name, e in ENGINES.items() if type(e).connect is not Engine.connect)


def engine(name: str) -> Engine:
    """The engine of sqlglot dialect ``name``; another name is an InputError listing them."""
    if not isinstance(name, str) or name not in ENGINES:
        raise InputError(f"dialect must be one of {', '.join(WRITABLE)}, not {name!r}")
    return ENGINES[name]


def engine_of(connection: object) -> Engine:
    """The engine of ``connection``: DuckDB, Spark or PostgreSQL."""
    for candidate in ENGINES.values():
        if candidate.runs and candidate.owns(connection):
            return candidate
    kind = f"{type(connection).__module__}.{type(connection).__qualname__}"
    raise InputError(f"cannot run SQL on a {kind}; supported connections are a duckdb.DuckDBPyConnection, "
                     "a pyspark.sql.SparkSession and a psycopg (3) or psycopg2 connection")


def _loaded(pairs: tuple[tuple[str, str], ...]) -> list[type | None]:
    return [getattr(sys.modules[module], name, None) if module in sys.modules else None for module, name in pairs]


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
