"""The runtime dependencies' lower bounds (pyproject.toml) are tested, at the bounds themselves.

.ci/run installs the lowest version each bound allows (uv's ``--resolution lowest-direct``) in a
venv of its own and runs the fast suite there with ``EMBSQL_LOWEST_BOUNDS=1``: the golden SQL
(tests/report/test_report.py::test_golden_sql) and every other fast test then run at both ends.  There,
:func:`test_the_lowest_allowed_versions_are_installed` checks that the venv holds exactly the
bounds, so the step cannot quietly test newer versions.

The report's SQL reads coordinate k of a vector with each engine's own array convention (element_at
and PostgreSQL, DuckDB and BigQuery's ORDINAL count from 1, Snowflake from 0).  sqlglot 25.0.0,
which the old bound ``sqlglot>=25`` allowed, wrote ``TRY_ELEMENT_AT(v, 0)`` for x1 on Spark: every
coordinate off by one, silently.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import version

import pytest
from helpers import ROOT

from embsql import Report

# dialect -> (how its SQL reads element i of the vector column, the index of coordinate 1)
ACCESS = {
    "duckdb": (r'"emb"\[(\d+)\]', 1),
    "postgres": (r'"__emb_v"\[(\d+)\]', 1),
    "snowflake": (r'"emb"\[(\d+)\]', 0),
    "bigquery": (r"\[SAFE_ORDINAL\((\d+)\)\]", 1),
    "spark": (r"TRY_ELEMENT_AT\(`emb`, (\d+)\)", 1),
    "trino": (r'ELEMENT_AT\("emb", (\d+)\)', 1),
}


@pytest.mark.parametrize("dialect", sorted(ACCESS))
def test_the_sql_reads_coordinate_k_as_the_engines_element_k(dialect):
    pattern, first = ACCESS[dialect]
    sql = Report.from_file(ROOT / "tests" / "golden" / "report.toml").sql(dialect, dims={"a": 2, "b": 3})
    assert sorted({int(i) for i in re.findall(pattern, sql)}) == [first, first + 1, first + 2], dialect


def lower_bounds() -> dict[str, str]:
    """Each runtime dependency -> its lower bound (``name>=X``, perhaps with an upper bound after it)."""
    bounds = {}
    for requirement in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)(,<[0-9.]+)?", requirement.replace(" ", ""))
        assert match, f"{requirement!r}: a plain lower bound, no marker (every dependency applies to every Python)"
        bounds[match[1]] = match[2]
    return bounds


def release(text: str) -> tuple[int, ...]:
    numbers = tuple(int(n) for n in text.split("."))
    return numbers + (0,) * (4 - len(numbers))


def test_every_runtime_dependency_has_a_lower_bound():
    assert {"duckdb", "pyarrow", "numpy", "sqlglot", "rich", "matplotlib", "threadpoolctl"} <= set(lower_bounds())


@pytest.mark.skipif(not os.environ.get("EMBSQL_LOWEST_BOUNDS"), reason="only in .ci/run's lowest-bounds venv")
def test_the_lowest_allowed_versions_are_installed():
    installed = {name: version(name) for name in lower_bounds()}
    assert {name: release(v) for name, v in installed.items()} == \
        {name: release(bound) for name, bound in lower_bounds().items()}, installed
