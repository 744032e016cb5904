"""Find the files that ship beside the Python code: the SQL macros and the UDF kernels.

In a wheel they are carried inside the package (``embsql/sql``, ``embsql/udfs``); in a source
checkout they sit at the top level beside ``embsql/``.  Look in the package first.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def resource_dir(name: str) -> Path:
    """Return the directory ``name`` (``"sql"`` or ``"udfs"``), packaged or in the checkout."""
    packaged = Path(str(resources.files("embsql"))) / name
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / name   # embsql/io/ -> the checkout
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"embsql: cannot find its {name}/ directory (looked in {packaged} and {checkout})")


def sql_entry_file() -> Path:
    """The one SQL file that defines every macro (the file the CLI ``.read``s)."""
    return resource_dir("sql") / "embsql.sql"
