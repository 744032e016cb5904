"""Open what the user calls a source for the length of one call, and resolve its columns.

A source is a table or view on the connection, a Parquet/CSV/JSON file, a directory of Parquet
files (hive-partitioned, e.g. ``emb/model=a/part-0.parquet``: the partition keys become columns),
``FILE.duckdb:TABLE`` (the DuckDB file attached read-only under a private name, and detached
again), a Lance dataset (``lance://PATH``, or a ``*.lance`` directory) or LanceDB table
(``lance://DIR?table=T``), a Hugging Face dataset saved with ``save_to_disk`` (its directory), or an
in-memory object: a pandas or polars DataFrame or LazyFrame, an Arrow table, record batch or
dataset, a Lance dataset, a LanceDB table or a Hugging Face ``datasets.Dataset``.  An object is
registered on the connection under a private name and unregistered afterwards.  A public function
opens each of its sources in its body with :func:`opened` (which yields the resolved
:class:`Source`) or :func:`local_source` (which yields a name to select from), so that nothing it
attached or registered outlives the call, also when the call fails.  Everything goes to DuckDB
through Arrow: a Lance dataset is scanned in place, a Hugging Face dataset's memory-mapped Arrow
table is registered without a copy; only a LazyFrame is collected (once).

Names are never spliced into SQL text: they become sqlglot identifiers (quoted) or string
literals (file paths), and every column named in a call is checked before anything runs.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import duckdb
from sqlglot import exp

from embsql.errors import ColumnNotFoundError, ColumnTypeError, SourceNotFoundError
from embsql.io.columns import cast_hint, check_reserved

_FILE_SUFFIX = re.compile(r"\.(parquet|csv|tsv|json|jsonl|ndjson)(\.gz|\.zst)?$", re.IGNORECASE)
_DUCKDB_FILE = re.compile(r"^(?P<path>.+\.(duckdb|ddb|db)):(?P<table>[^:/\\]+)$", re.IGNORECASE)
_FRAME_MODULES = ("pandas", "polars", "pyarrow", "lance", "lancedb", "datasets")   # objects registered through Arrow
_LANCE_URI = re.compile(r"^lance://(?P<path>[^?]+)(\?table=(?P<table>[^&]+))?$")
_registered: dict[str, str] = {}                   # private name -> what the user passed, for messages
_counter = itertools.count(1)
_ATTACHED = "__embsql_file_"                     # + a number: the alias of an attached DuckDB file

# What a public function takes as a source: a name (table, view, file, directory, FILE.duckdb:TABLE,
# lance://...) or an in-memory table of one of the libraries above.  The libraries are optional, so
# their types are not spelled out here; a wrong object is refused when the function opens it.
TableLike: TypeAlias = Any
_VECTOR_TYPE = re.compile(r"^(FLOAT|DOUBLE|REAL|DECIMAL\(\d+,\s*\d+\)|TINYINT|SMALLINT|INTEGER|BIGINT)(\[(\d*)\])$")


@dataclass(frozen=True)
class Source:
    """A resolved source: the sqlglot expression to select from, and its column types."""

    name: str
    table: exp.Expression
    columns: dict[str, str]

    def require(self, column: str, role: str) -> str:
        """Return the type of ``column`` or raise naming it and the columns that exist (a model
        column named with the reserved prefix is refused first: embsql.io.columns.check_reserved)."""
        if role == "model":
            check_reserved(column)
        if column not in self.columns:
            available = ", ".join(self.columns) or "(none)"
            # names match exactly, case included, on every route (the SQL macros: emb__model_case)
            other = [c for c in self.columns if c.lower() == str(column).lower()]
            case = f"; its column {other[0]!r} differs only in case (column names match exactly, case included)" \
                if other else ""
            raise ColumnNotFoundError(f"{role} column {column!r} not found in {self.name!r}; its columns are: "
                                      f"{available}{case}")
        return self.columns[column]

    def model_column(self, model: str | None, default: str = "model") -> str | None:
        """The model column to read: ``model`` if given and present; None for model=None, or for the
        ``default`` name on a table without it (one model), unless a column differs from it only in
        case, which is refused as the SQL macros refuse it (emb__model_case).  Any other name must exist."""
        if model is None:
            return None
        if model == default and model not in self.columns and \
                not any(c.lower() == model.lower() for c in self.columns):
            return None
        self.require(model, "model")
        return model

    def vector_dimension(self, column: str) -> int | None:
        """Check that ``column`` holds numeric vectors; return d for a fixed-size array type."""
        type_ = self.require(column, "vector")
        match = _VECTOR_TYPE.match(type_)
        if not match:
            raise ColumnTypeError(f"vector column {column!r} in {self.name!r} has type {type_}; expected FLOAT[], "
                                  f"DOUBLE[], FLOAT[d] or DOUBLE[d]{cast_hint(column, type_)}")
        return int(match.group(3)) if match.group(3) else None


def is_file(name: str) -> bool:
    return bool(_FILE_SUFFIX.search(name)) or ("/" in name and Path(name).exists())


def parquet_directory(name: str) -> bool:
    """A directory holding Parquet files (at any depth: hive partitions are subdirectories)."""
    path = Path(name)
    return path.is_dir() and not is_lance(name) and not is_saved_dataset(name) and any(path.rglob("*.parquet"))


def is_lance(name: str) -> bool:
    return bool(_LANCE_URI.match(name)) or (name.rstrip("/").endswith(".lance") and Path(name).is_dir())


def is_saved_dataset(name: str) -> bool:
    """A directory written by Hugging Face ``Dataset.save_to_disk``."""
    path = Path(name)
    return path.is_dir() and (path / "state.json").is_file() and (path / "dataset_info.json").is_file()


def source_expression(name: str) -> exp.Expression:
    """A file path becomes a string literal (DuckDB reads it), a Parquet directory a hive-partitioned
    read_parquet over its files; anything else a quoted table name."""
    if parquet_directory(name):
        files = exp.Literal.string(str(Path(name) / "**" / "*.parquet"))
        hive = exp.EQ(this=exp.column("hive_partitioning"), expression=exp.true())
        return exp.Table(this=exp.func("read_parquet", files, hive))
    if is_file(name):
        return exp.Table(this=exp.Literal.string(name))
    parts = name.split(".")
    return exp.table_(parts[-1], db=parts[-2] if len(parts) > 1 else None,
                      catalog=parts[-3] if len(parts) > 2 else None, quoted=True)


def resolve(con: duckdb.DuckDBPyConnection, name: str) -> Source:
    """Look ``name`` up on ``con`` and read its column names and types."""
    if not isinstance(name, str) or not name:
        raise SourceNotFoundError(_unsupported(name))
    if duckdb_table(name) is not None:            # a programming error: it must be opened first
        raise SourceNotFoundError(f"source {name!r} must be opened first (embsql.io.sources.opened)")
    table = source_expression(name)
    query = exp.select("*").from_(table).sql("duckdb")
    shown = _registered.get(name, name)
    try:
        described = con.sql(f"DESCRIBE {query}").fetchall()
    except duckdb.Error as error:
        raise SourceNotFoundError(f"source {shown!r} cannot be read: {str(error).splitlines()[0]}") from None
    return Source(name=shown, table=table, columns={row[0]: row[1] for row in described})


def shown_name(name: TableLike) -> str:
    """The name a message or a report uses for ``name``: what the user passed, not a private name."""
    return _registered.get(name, name) if isinstance(name, str) else describe(name)


def is_frame(source: object) -> bool:
    """A pandas or polars DataFrame, or an Arrow table, record batch or dataset."""
    return type(source).__module__.split(".")[0] in _FRAME_MODULES and not isinstance(source, str)


def describe(source: TableLike) -> str:
    """How a source is named in a report: its name, or e.g. "pandas DataFrame (600 rows)"."""
    if isinstance(source, str):
        return source
    rows = getattr(source, "num_rows", None)
    if rows is None and callable(getattr(source, "count_rows", None)):
        rows = source.count_rows()      # a Lance dataset or LanceDB table
    if rows is None and hasattr(source, "shape"):
        rows = source.shape[0]
    kind = f"{type(source).__module__.split('.')[0]} {type(source).__name__}"
    return f"{kind} ({rows} rows)" if isinstance(rows, int) else kind


def duckdb_table(name: str) -> tuple[Path, str] | None:
    """(the file, the table) of ``FILE.duckdb:TABLE`` (also .ddb and .db); None for any other name."""
    match = _DUCKDB_FILE.match(name)
    return None if match is None else (Path(match["path"]), match["table"])


@contextmanager
def attached(con: duckdb.DuckDBPyConnection, name: str) -> Iterator[str]:
    """Yield ``FILE.duckdb:TABLE`` as a name to select from: the file attached read-only under a
    private alias that no user database has, and detached on exit (also when the call fails), so
    that another process can open it read-write afterwards.  A file this database instance has
    attached already (the user's own ATTACH, or the file ``con`` itself opened) is read where it is
    and left as it is: DuckDB will not attach one file twice."""
    found = duckdb_table(name)
    if found is None:
        raise SourceNotFoundError(f"{name!r} is not FILE.duckdb:TABLE")
    path, table = found
    if not path.exists():
        raise SourceNotFoundError(f"DuckDB file {str(path)!r} does not exist (in source {name!r})")
    databases = con.sql("SELECT database_name, path FROM duckdb_databases()").fetchall()
    already = [alias for alias, where in databases if where is not None and Path(where).resolve() == path.resolve()]
    taken = {alias for alias, _ in databases}
    alias = already[0] if already else next(a for a in (f"{_ATTACHED}{next(_counter)}" for _ in itertools.count())
                                            if a not in taken)
    quoted = exp.to_identifier(alias, quoted=True).sql("duckdb")
    if not already:
        try:
            con.execute(f"ATTACH {exp.Literal.string(str(path)).sql('duckdb')} AS {quoted} (READ_ONLY)")
        except duckdb.Error as error:
            raise SourceNotFoundError(f"DuckDB file {str(path)!r} cannot be opened (in source {name!r}): "
                                      f"{str(error).splitlines()[0]}") from None
    selected = f"{alias}.{table}"
    _registered[selected] = name
    try:
        yield selected
    finally:
        _registered.pop(selected, None)
        if not already:
            con.execute(f"DETACH {quoted}")


@contextmanager
def local_source(con: duckdb.DuckDBPyConnection, source: TableLike) -> Iterator[Any]:
    """Yield a name for ``source`` on ``con`` for the length of a ``with`` block: an in-memory
    object or a Lance or saved Hugging Face dataset registered under a private name,
    ``FILE.duckdb:TABLE`` attached (see :func:`attached`); any other name as it is, and None as
    None (an optional source not given).  Whatever was registered or attached is gone on exit."""
    if isinstance(source, str) and duckdb_table(source) is not None:
        with attached(con, source) as name:
            yield name
        return
    if isinstance(source, str) and (is_lance(source) or is_saved_dataset(source)):
        shown, source = source, open_path(source)
    elif isinstance(source, str) or source is None:
        yield source
        return
    else:
        shown = describe(source)
    if not is_frame(source):
        raise SourceNotFoundError(_unsupported(source))
    name = f"__embsql_source_{next(_counter)}"
    frame = arrow_view(source)
    try:
        con.register(name, frame)
    except (duckdb.Error, TypeError, ValueError) as error:
        raise SourceNotFoundError(f"the {shown} cannot be read as a table: "
                                  f"{str(error).splitlines()[0]}") from None
    _registered[name] = shown
    try:
        yield name
    finally:
        _registered.pop(name, None)
        con.unregister(name)


@contextmanager
def local_sources(con: duckdb.DuckDBPyConnection, *sources: TableLike) -> Iterator[tuple[Any, ...]]:
    """:func:`local_source` of several sources at once: yields their names, in order."""
    with ExitStack() as stack:
        yield tuple(stack.enter_context(local_source(con, source)) for source in sources)


@contextmanager
def opened(con: duckdb.DuckDBPyConnection, source: TableLike) -> Iterator[Source]:
    """Yield ``source`` resolved on ``con`` (its columns and types) for the length of a ``with``
    block, opened as :func:`local_source` opens it::

        with opened(con, source) as table:
            sums = group_sums(con, table, group, vector)
    """
    with local_source(con, source) as name:
        yield resolve(con, name)


def arrow_view(source: TableLike) -> Any:
    """What DuckDB registers for an in-memory source: the object itself where DuckDB scans it
    (pandas, polars and Arrow objects, a Lance dataset), else its Arrow form, copied only where the
    source is a stream or a lazy query."""
    module, kind = type(source).__module__.split(".")[0], type(source).__name__
    if kind == "LazyFrame":
        return source.collect().to_arrow()      # a face reads its source more than once: run the query once
    if module == "polars":
        return source.to_arrow()
    if kind == "RecordBatchReader":
        return source.read_all()      # a stream reads once; a face reads its source more than once
    if module == "lancedb":
        return source.to_lance()      # a LanceDB table is a Lance dataset underneath
    if module == "datasets":
        if not hasattr(getattr(source, "data", None), "schema"):    # a DatasetDict: a dict of splits
            splits = ", ".join(map(repr, getattr(source, "keys", lambda: [])()))
            raise SourceNotFoundError(f"a Hugging Face {kind} holds several splits ({splits}); pass one, e.g. ds['train']")
        if getattr(source, "_indices", None) is not None:
            return source.flatten_indices().data.table   # a selected or shuffled view: its rows, in order
        return source.data.table          # the memory-mapped Arrow table itself: no copy
    return source


def open_path(name: str) -> Any:
    """Open a Lance dataset (``lance://PATH`` or a ``*.lance`` directory), a LanceDB table
    (``lance://DIR?table=T``) or a saved Hugging Face dataset (its directory)."""
    try:
        if is_saved_dataset(name):
            import datasets

            return datasets.load_from_disk(name)
        match = _LANCE_URI.match(name)
        path = match["path"] if match else name
        if match and match["table"]:
            import lancedb

            return lancedb.connect(path).open_table(match["table"])
        import lance

        return lance.dataset(path)
    except ImportError as error:
        raise SourceNotFoundError(f"source {name!r} needs the {error.name} package (pip install "
                                  f"{'datasets' if is_saved_dataset(name) else 'pylance lancedb'})") from None
    except (OSError, ValueError, FileNotFoundError, RuntimeError) as error:
        reason = str(error).splitlines()[0].split(", /")[0]     # Lance appends its own source paths
        raise SourceNotFoundError(f"source {name!r} cannot be opened: {reason}") from None


def _unsupported(source: object) -> str:
    module = type(source).__module__
    kind = type(source).__qualname__ if module == "builtins" else f"{module}.{type(source).__qualname__}"
    kind = "an empty name" if isinstance(source, str) else f"a {kind}"
    return ("a source must be a table, view, file or directory name, a DataFrame, an Arrow table or dataset, "
            f"a Lance or Hugging Face dataset (see the README's table of sources), not {kind}")
