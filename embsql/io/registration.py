"""Make a DuckDB connection speak embsql: the SQL macros plus the Python UDF kernels.

Order: sql/embsql.sql (pure SQL, the same file the CLI reads), then the UDFs from udfs/*.py,
then sql/python/*.sql (macros built on those UDFs).

Macros are ``CREATE OR REPLACE TEMP``: they live as long as the connection, nothing is written into
the user's database, and a read-only connection can be registered too.  ``register(con)`` is
idempotent: macros are replaced and every UDF is removed before it is created again, so calling it
twice is the same as calling it once.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb
from duckdb.func import FunctionNullHandling, PythonUDFType

from embsql.io.resources import resource_dir, sql_entry_file


@dataclass(frozen=True)
class UdfSpec:
    """One Python UDF: its SQL name, kernel and signature, declared once (in udfs/*.py)."""

    name: str
    function: Callable[..., Any]
    parameters: tuple[str, ...]
    return_type: str
    null_handling: str = "default"
    side_effects: bool = False


def udf_specs() -> list[UdfSpec]:
    """Load every ``SPECS`` list from the kernel modules in udfs/."""
    specs = []
    for path in sorted(resource_dir("udfs").glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"embsql._udfs.{path.stem}", path)
        assert spec is not None and spec.loader is not None, path  # a .py file always has a loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for item in getattr(module, "SPECS", []):
            specs.append(UdfSpec(**{**item, "parameters": tuple(item["parameters"])}))
    return specs


def register(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Define every embsql macro and UDF on ``con`` and return it.

    >>> import duckdb, embsql
    >>> con = embsql.register(duckdb.connect())
    >>> con.sql("SELECT emb_unit([3.0, 4.0]) AS z").fetchall()
    [([0.6, 0.8],)]
    """
    con.execute(sql_entry_file().read_text(encoding="utf-8"))
    for spec in udf_specs():
        try:
            con.remove_function(spec.name)
        except duckdb.Error:
            pass  # not registered yet
        con.create_function(
            spec.name,
            spec.function,
            [duckdb.sqltype(t) for t in spec.parameters],
            duckdb.sqltype(spec.return_type),
            type=PythonUDFType.ARROW,
            null_handling=FunctionNullHandling.SPECIAL if spec.null_handling == "special" else FunctionNullHandling.DEFAULT,
            side_effects=spec.side_effects,
        )
    # macros that call the UDFs above, so they exist only on connections Python registered
    for path in sorted((resource_dir("sql") / "python").glob("*.sql")):
        con.execute(path.read_text(encoding="utf-8"))
    return con


def connect(database: str = ":memory:", **kwargs: Any) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB connection (in memory by default) with everything registered."""
    return register(duckdb.connect(database, **kwargs))
