"""Resolve what the user calls a source and its columns.

A source is a table or view on the connection, a Parquet/CSV/JSON file, a directory of Parquet
files (hive-partitioned, e.g. ``emb/model=a/part-0.parquet``: the partition keys become columns),
``FILE.duckdb:TABLE`` (the DuckDB file is attached read-only, under its stem), a Lance dataset
(``lance://PATH``, or a ``*.lance`` directory) or LanceDB table (``lance://DIR?table=T``), a
Hugging Face dataset saved with ``save_to_disk`` (its directory), or an in-memory object: a pandas
or polars DataFrame or LazyFrame, an Arrow table, record batch or dataset, a Lance dataset, a
LanceDB table or a Hugging Face ``datasets.Dataset``.  An object is registered on the connection
under a private name for the length of one call and unregistered afterwards (:func:`local_source`,
or the :func:`accepts_frames` decorator on a function that takes sources).  Everything goes to
DuckDB through Arrow: a Lance dataset is scanned in place, a Hugging Face dataset's memory-mapped
Arrow table is registered without a copy; only a LazyFrame is collected (once).

Names are never spliced into SQL text: they become sqlglot identifiers (quoted) or string
literals (file paths), and every column named in a call is checked before anything runs.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import re
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb
from sqlglot import exp

from embsql.errors import ColumnNotFoundError, ColumnTypeError, SourceNotFoundError

_FILE_SUFFIX = re.compile(r"\.(parquet|csv|tsv|json|jsonl|ndjson)(\.gz|\.zst)?$", re.IGNORECASE)
_DUCKDB_FILE = re.compile(r"^(?P<path>.+\.(duckdb|ddb|db)):(?P<table>[^:/\\]+)$", re.IGNORECASE)
_FRAME_MODULES = ("pandas", "polars", "pyarrow", "lance", "lancedb", "datasets")   # objects registered through Arrow
_LANCE_URI = re.compile(r"^lance://(?P<path>[^?]+)(\?table=(?P<table>[^&]+))?$")
_registered: dict[str, str] = {}                   # private name -> what the user passed, for messages
_counter = itertools.count(1)
_VECTOR_TYPE = re.compile(r"^(FLOAT|DOUBLE|REAL|DECIMAL\(\d+,\s*\d+\)|TINYINT|SMALLINT|INTEGER|BIGINT)(\[(\d*)\])$")


@dataclass(frozen=True)
class Source:
    """A resolved source: the sqlglot expression to select from, and its column types."""

    name: str
    table: exp.Expression
    columns: dict[str, str]

    def require(self, column: str, role: str) -> str:
        """Return the type of ``column`` or raise naming it and the columns that exist."""
        if column not in self.columns:
            available = ", ".join(self.columns) or "(none)"
            raise ColumnNotFoundError(f"{role} column {column!r} not found in {self.name!r}; its columns are: {available}")
        return self.columns[column]

    def vector_dimension(self, column: str) -> int | None:
        """Check that ``column`` holds numeric vectors; return d for a fixed-size array type."""
        type_ = self.require(column, "vector")
        match = _VECTOR_TYPE.match(type_)
        if not match:
            raise ColumnTypeError(
                f"vector column {column!r} in {self.name!r} has type {type_}; expected FLOAT[], DOUBLE[], FLOAT[d] or DOUBLE[d]")
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
    name = attached_name(con, name)
    table = source_expression(name)
    query = exp.select("*").from_(table).sql("duckdb")
    shown = _registered.get(name, name)
    try:
        described = con.sql(f"DESCRIBE {query}").fetchall()
    except duckdb.Error as error:
        raise SourceNotFoundError(f"source {shown!r} cannot be read: {str(error).splitlines()[0]}") from None
    return Source(name=shown, table=table, columns={row[0]: row[1] for row in described})


def shown_name(name):
    """The name a message or a report uses for ``name``: what the user passed, not a private name."""
    return _registered.get(name, name) if isinstance(name, str) else describe(name)


def is_frame(source) -> bool:
    """A pandas or polars DataFrame, or an Arrow table, record batch or dataset."""
    return type(source).__module__.split(".")[0] in _FRAME_MODULES and not isinstance(source, str)


def describe(source) -> str:
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


def attached_name(con: duckdb.DuckDBPyConnection, name: str) -> str:
    """``FILE.duckdb:TABLE`` becomes stem.TABLE, the file attached read-only under its stem (once);
    any other name is returned as it is."""
    match = _DUCKDB_FILE.match(name)
    if not match:
        return name
    path = Path(match["path"])
    if not path.exists():
        raise SourceNotFoundError(f"DuckDB file {str(path)!r} does not exist (in source {name!r})")
    alias = re.sub(r"\W", "_", path.stem) or "data"
    attached = {row[0]: row[1] for row in con.sql("SELECT database_name, path FROM duckdb_databases()").fetchall()}
    if alias not in attached:
        con.execute(f"ATTACH {exp.Literal.string(str(path)).sql('duckdb')} AS "
                    f"{exp.to_identifier(alias, quoted=True).sql('duckdb')} (READ_ONLY)")
    elif attached[alias] is None or Path(attached[alias]).resolve() != path.resolve():
        raise SourceNotFoundError(f"cannot attach {str(path)!r} as {alias!r}: another database of that name is attached")
    return f"{alias}.{match['table']}"


@contextmanager
def local_source(con: duckdb.DuckDBPyConnection, source):
    """Yield a name for ``source`` on ``con``: an in-memory object registered under a private name
    (unregistered on exit), ``FILE.duckdb:TABLE`` attached; any other name as it is."""
    if isinstance(source, str) and (is_lance(source) or is_saved_dataset(source)):
        shown, source = source, open_path(source)
    elif isinstance(source, str) or source is None:
        yield attached_name(con, source) if isinstance(source, str) else source
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


def arrow_view(source):
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


def open_path(name: str):
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


def accepts_frames(*parameters: str):
    """Decorate a function ``f(con, source, ...)`` so that each named source parameter (default
    ``source``) may also be a DataFrame, an Arrow object or ``FILE.duckdb:TABLE``."""
    parameters = parameters or ("source",)

    def decorate(function):
        signature = inspect.signature(function)

        @functools.wraps(function)
        def call(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            con = bound.arguments.get("con")
            with ExitStack() as stack:
                for parameter in parameters:
                    value = bound.arguments.get(parameter)
                    if value is not None and isinstance(con, duckdb.DuckDBPyConnection):
                        bound.arguments[parameter] = stack.enter_context(local_source(con, value))
                # a warning the function raises for its caller (stacklevel=2) would point at this
                # wrapper: catch it and raise it again one frame up, at the user's line
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = function(*bound.args, **bound.kwargs)
            for warning in caught:
                warnings.warn(warning.message, warning.category, stacklevel=2)
            return result

        return call

    return decorate


def _unsupported(source) -> str:
    module = type(source).__module__
    kind = type(source).__qualname__ if module == "builtins" else f"{module}.{type(source).__qualname__}"
    kind = "an empty name" if isinstance(source, str) else f"a {kind}"
    return ("a source must be a table, view, file or directory name, a DataFrame, an Arrow table or dataset, "
            f"a Lance or Hugging Face dataset (see the README's table of sources), not {kind}")
