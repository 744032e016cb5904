"""Python face of the multi-term PERMANOVA (adonis2's semantics): embsql.permanova(..., terms=[...]).

Reads the term columns, the vector column (and strata, model) once, puts the rows of each model in
canonical order (strata, the term values, the vector bytes: a seed gives the same p-value whatever
order the database returned the rows in), and runs embsql.core.permanova_terms.  The SQL function
emb_permanova_terms calls the same kernel through udfs/permanova_terms.py.
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
from sqlglot import exp

from embsql.core.labels import sort_key
from embsql.core.permanova_terms import permanova_terms as run_terms
from embsql.core.permanova_terms import plan
from embsql.core.permutation import canonical_order
from embsql.core.terms import columns_of, parse_terms, variable
from embsql.errors import DesignError, InputError, fail
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import unit_vectors
from embsql.progress import progress_bar
from embsql.result_table import ResultTable

TERMS_COLUMNS = ("term", "df", "ss", "r2", "f", "p_value", "permutations")


def ordered_design(term_specs, columns: dict, unit: np.ndarray, strata=None, by_terms: str = "sequential", ids=None):
    """(plan, unit vectors, strata) with rows in canonical order, from column values per row.

    One rule for the Python face and the UDF: rows sorted by stratum, then by every term column's text,
    then by the vector bytes (or by ``ids``, for a distance table: pass row numbers as ``unit``)."""
    terms = parse_terms(term_specs)
    names = columns_of(terms)
    values = {name: np.asarray(columns[name], dtype=object) for name in names}
    if len(unit) < 3:
        raise DesignError(f"PERMANOVA needs at least 3 items; there are {len(unit)}")
    for name in names:
        variable(name, values[name])          # NULLs refused, naming the column, before anything else
    keyed = sorted(names)                    # the same order whatever order the terms are given in
    key = values[keyed[0]].astype(str) if len(keyed) == 1 else \
        np.array(["\x1f".join(parts) for parts in zip(*(values[n].astype(str) for n in keyed))], dtype=object)
    strata_values = None if strata is None else np.asarray(strata, dtype=object)
    if strata_values is not None and any(s is None for s in strata_values):
        raise InputError("the strata column has a NULL value; every row needs a stratum")
    order = canonical_order(key, strata_values, None if ids is not None else unit, ids=ids)
    ordered = {name: variable(name, values[name][order]) for name in names}
    return (plan(terms, ordered, by_terms), unit[order],
            None if strata_values is None else strata_values[order])


def record_columns(records: list, names: list, table: str) -> dict:
    """{column: values} of the term columns from one JSON object per item (the SQL route's form)."""
    rows = json.loads("[" + ",".join(records) + "]")     # one parse, not one per item: 4x faster at n = 20,000
    present = set(rows[0]) if rows else set()
    for name in names:
        if name not in present:
            fail("column.missing", role="term", column=repr(name), source=table, hint="")
    return {name: [row[name] for row in rows] for name in names}


def _query(source, names, vector, strata, model):
    for name in names:
        source.require(name, "term")
    for name, role in ((strata, "strata"), (model, "model")):
        if name is not None:
            source.require(name, role)
    source.vector_dimension(vector)
    wanted = list(dict.fromkeys([*names, *(c for c in (strata, model) if c is not None)]))
    return exp.select(*[exp.column(c, quoted=True) for c in wanted], exp.column(vector, quoted=True)).from_(
        source.table.copy()).sql("duckdb")


@accepts_frames()
def permanova_terms(con: duckdb.DuckDBPyConnection, source: str, *, terms, vector: str,
                    by_terms: str = "sequential", permutations: int = 999, seed: int = 42,
                    strata: str | None = None, model: str | None = None,
                    progress: bool | None = None) -> ResultTable:
    """Multi-term PERMANOVA as vegan's adonis2: one row per term (``term, df, ss, r2, f, p_value``),
    then the ``Residual`` and ``Total`` rows, per model.

    ``terms``: column names, interactions ``"a:b"``, ``"a*b"`` (= a + b + a:b); text columns are
    factors, numeric columns continuous covariates (1 df).  ``by_terms='sequential'`` (adonis2's
    ``by = "terms"``: each term after the ones before it) or ``'margin'`` (each term after all the
    others; terms inside an interaction are not tested, as in vegan).  The rows of the data are
    permuted (freely or within ``strata``) and every model refitted, as adonis2 does."""
    parsed = parse_terms(terms)
    names = columns_of(parsed)
    src = resolve(con, source)
    table = con.sql(_query(src, names, vector, strata, model)).to_arrow_table()
    models = [None] if model is None else sorted(set(table.column(model).to_pylist()), key=sort_key)
    rows = []
    for value in models:
        part = table if model is None else table.filter(
            np.asarray([v == value for v in table.column(model).to_pylist()]))
        unit = unit_vectors(part.column(vector).combine_chunks(), lambda i: f"row {i}", vector, None)
        columns = {name: part.column(name).to_pylist() for name in names}
        plan_, ordered_unit, ordered_strata = ordered_design(
            terms, columns, unit, None if strata is None else part.column(strata).to_pylist(), by_terms)
        label = "permutations" if value is None else f"permutations ({value})"
        with progress_bar(label, permutations, progress) as tick:
            result = run_terms(plan_, ordered_strata, unit=ordered_unit, permutations=permutations, seed=seed,
                               progress=tick)
        rows += [{**({model: value} if model else {}), **row, "permutations": permutations} for row in result.rows()]
    return ResultTable.from_dicts("permanova terms", ((model,) if model else ()) + TERMS_COLUMNS, rows)
