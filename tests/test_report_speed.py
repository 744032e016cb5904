"""The default report stays fast: the whole run on the example file, and the two costs that once
dominated it (deep copies while building the stage-1 tree; a left-deep d-term sum, on which
DuckDB's common-subexpression pass is quadratic)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from sqlglot import exp

import embsql
from embsql.io import portable_sums

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "embeddings.parquet"
# 6.7 s unloaded on 2 cores; the bound leaves room for a loaded CI machine, not for a regression
# back to the 25 s the report took under load before the stage-1 query was rebuilt
BOUND_SECONDS = 60.0
D_LOW, D_HIGH = 384, 768     # the example's two models


def _default_report(**settings):
    return embsql.report(str(EXAMPLE), vector="embedding", group="topic", model="model", **settings)


@pytest.mark.slow
def test_the_default_report_with_999_permutations_stays_under_the_bound():
    report = _default_report()
    assert report.permutations == 999
    start = time.perf_counter()
    result = report.run(progress=False)
    elapsed = time.perf_counter() - start
    ran = {section.name for section in result.sections}
    assert {"permanova", "dispersion"} <= ran            # the permutation sections did run
    assert result.meta["dimensions"] == {"mini-384": D_LOW, "base-768": D_HIGH}
    assert elapsed < BOUND_SECONDS, f"the default report took {elapsed:.1f} s (bound {BOUND_SECONDS:.0f} s)"


def _aggregate(dialect="duckdb"):
    dims = portable_sums.Dimensions({"mini-384": D_LOW, "base-768": D_HIGH})
    return _default_report(table="emb").aggregate_query(dialect, dims)


@pytest.mark.parametrize("dialect", ["duckdb", "postgres"])
def test_building_the_aggregate_copies_no_more_than_the_source(monkeypatch, dialect):
    """Each of the d coordinate expressions is built once: the only deep copy is of the source
    relation (a handful of nodes), not of the tree with 768 coordinates."""
    copies = []
    original = exp.Expression.copy

    def counting(self):
        copies.append(type(self).__name__)
        return original(self)

    monkeypatch.setattr(exp.Expression, "copy", counting)
    tree = _aggregate(dialect)
    assert copies == ["Table"]
    assert len(list(tree.find_all(exp.Sum))) == D_HIGH + 2     # the d sums, the NULL and the bad vectors


def _add_depth(node: exp.Expression) -> int:
    """The longest chain of nested + (through parentheses) below ``node``."""
    if isinstance(node, exp.Paren):
        return _add_depth(node.this)
    if isinstance(node, exp.Add):
        return 1 + max(_add_depth(node.this), _add_depth(node.expression))
    return 0


def test_every_d_term_sum_is_a_balanced_tree():
    tree = _aggregate()
    sums = [node for node in tree.find_all(exp.Add)
            if not isinstance(node.parent, exp.Add) and not isinstance(node.parent.parent, exp.Add)]
    assert len(sums) >= 3            # ||x||^2, the scaled ||x / peak||^2, the sum of the VAR_POPs
    for node in sums:
        assert _add_depth(node) == math.ceil(math.log2(D_HIGH)), node.sql()[:80]


def test_the_balanced_sum_adds_every_term_once():
    tree = portable_sums.group_sums_query(exp.to_table("src"), "g", "v", portable_sums.Dimensions({None: 11}))
    ss = next(node for node in tree.find_all(exp.Alias) if node.alias == "ss").this
    squared = sorted((node.this.name, node.expression.name) for node in ss.find_all(exp.Mul))
    assert squared == sorted((f"x{k}", f"x{k}") for k in range(1, 12))
    assert _add_depth(ss) == math.ceil(math.log2(11))
    assert duckdb_value(ss.sql("duckdb"), 11) == sum(k * k for k in range(1, 12))


def duckdb_value(expression: str, d: int) -> float:
    import duckdb

    columns = ", ".join(f"{k}::DOUBLE AS x{k}" for k in range(1, d + 1))
    return duckdb.connect().sql(f"SELECT {expression} FROM (SELECT {columns})").fetchall()[0][0]
