"""Python face of the multi-term PERMANOVA (adonis2's semantics): embsql.permanova_terms.

Reads the term columns, the vector column (and strata, model) once, puts the rows of each model in
canonical order (strata, the term values, the vector bytes: a seed gives the same p-value whatever
order the database returned the rows in), and runs embsql.core.permanova_terms.  The SQL function
emb_permanova_terms calls the same kernel through udfs/permanova_terms.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

import duckdb
import numpy as np
import pyarrow as pa
from sqlglot import exp

from embsql.core.labels import bad_label, clean_label, sort_key
from embsql.core.permanova_terms import Plan, check_permute, plan
from embsql.core.permanova_terms import permanova_terms as run_terms
from embsql.core.permutation import canonical_order
from embsql.core.terms import columns_of, parse_terms, variable
from embsql.errors import DesignError, InputError, fail
from embsql.io.sources import Source, TableLike, opened
from embsql.io.table_stream import Skipped, unit_vectors
from embsql.progress import progress_bar
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name

TERMS_COLUMNS = ("term", "df", "ss", "r2", "f", "p_value", "permutations", "permute")


def ordered_design(term_specs: Sequence[str], columns: Mapping[str, Sequence[object]], unit: np.ndarray,
                   strata: Sequence[object] | None = None, sums: str = "sequential",
                   ids: Sequence[object] | None = None) -> tuple[Plan, np.ndarray, np.ndarray | None]:
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
    return (plan(terms, ordered, sums), unit[order],
            None if strata_values is None else strata_values[order])


def record_columns(records: list[str], names: Sequence[str], table: str) -> dict[str, list[object]]:
    """{column: values} of the term columns from one JSON object per item (the SQL route's form)."""
    rows = json.loads("[" + ",".join(records) + "]")     # one parse, not one per item: 4x faster at n = 20,000
    present = set(rows[0]) if rows else set()
    for name in names:
        if name not in present:
            fail("column.missing", role="term", column=repr(name), source=table, hint="")
    return {name: [row[name] for row in rows] for name in names}


def _query(source: Source, names: Sequence[str], vector: str, strata: str | None, model: str | None) -> str:
    for name in names:
        source.require(name, "term")
    for optional, role in ((strata, "strata"), (model, "model")):
        if optional is not None:
            source.require(optional, role)
    source.vector_dimension(vector)
    wanted = list(dict.fromkeys([*names, *(c for c in (strata, model) if c is not None)]))
    return exp.select(*[exp.column(c, quoted=True) for c in wanted], exp.column(vector, quoted=True)).from_(
        source.table.copy()).sql("duckdb")


def _model_values(values: list[object], model: str) -> list[object]:
    """The distinct model values in display order; a NULL or NaN one is refused naming its row."""
    for row, value in enumerate(values):
        if bad_label(value):
            clean_label(value, model, f"row {row + 1}", role="model")
    return sorted(set(values), key=sort_key)


def _row_namer(rows: np.ndarray, model: str | None, value: object) -> Callable[[int], str]:
    """Names row i of a model's rows: its row in the table as read (``rows``: counted from 0; shown
    from 1), and its model when there is a model column."""
    named = "" if model is None else f" (model {value!r})"
    return lambda i: f"row {int(rows[i]) + 1}{named}"


def permanova_terms(con: duckdb.DuckDBPyConnection, source: TableLike, *, terms: Sequence[str], vector: str,
                    sums: str = "sequential", permute: str = "residuals", permutations: int = 999,
                    seed: int = 42, strata: str | None = None, model: str | None = None,
                    progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """Multi-term PERMANOVA with the semantics of vegan's adonis2: one row per term, per model.

    Text columns are factors and numeric columns continuous covariates (1 df).  SS, R² and F match
    adonis2 on vegan's dune data to 1e-9.  Each term is tested against its reduced model (the terms
    before it, or with ``sums='margin'`` all the others); by default its p-value permutes the reduced
    model's residuals (Freedman-Lane), which keeps the level of a term after a strong factor, where
    adonis2's free permutation of rows almost never rejects (validation/README.md, terms_validity.py:
    at 5%, {{figure terms.freedman_lane}} of n = 120, and
    {{figure terms.freedman_lane_sets_384}};
    {{figure terms.rows_strong_isotropic}}).  An interaction's residuals are permuted within the levels
    of its first factor (``a`` of ``a:b``): on unit vectors a strong factor's levels differ in spread,
    and free Freedman-Lane then rejected up to {{figure terms.interaction_free high}} of true nulls at 5% for
    a:b after R² 0.54-0.8 of a, and {{figure terms.interaction_free_spreads high}} where a's levels differ much
    in spread and size; {{figure terms.interaction_within}} and {{figure terms.interaction_within_spreads high}}
    there (validation/terms_validity_interaction.txt).
    ``permute='residuals_free'`` permutes freely for every term.
    After many small sets (paraphrases) at high dimension both schemes are conservative; ``strata``
    set to the sets column held the level ({{figure terms.strata_sets range}}).
    ``permute='rows'`` gives adonis2's p-values.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table to read (as for :func:`embsql.anova`).
    terms : sequence of str
        The terms, in order: column names, interactions ``"a:b"``, and ``"a*b"`` (= a + b + a:b).
    vector : str
        The vector column; vectors are scaled to unit length.
    sums : str
        ``'sequential'`` (adonis2's ``by = "terms"``: each term after the ones before it) or
        ``'margin'`` (each term after all the others; terms inside an interaction are not tested,
        as in vegan).
    permute : str
        What a permutation permutes: ``'residuals'`` (the default; Freedman and Lane 1983, the default
        of Anderson's PERMANOVA: for each term the residuals of its reduced model are permuted and
        added back to that model's fit; an interaction's within the levels of its first factor),
        ``'residuals_free'`` (the same, with every term's residuals permuted freely) or ``'rows'``
        (adonis2: the rows are permuted and every model refitted).  The first term of a sequential
        test, and a one-term model, have the intercept as reduced model, so there all give the same
        permuted F, the same p-value.
    permutations : int, default 999
        The number of permutations.
    seed : int, default 42
        The random seed (0 or more).
    strata : str, optional
        The strata column: rows (or residuals) are permuted only within its values.
    model : str, optional
        The model column: one set of rows per value, under this column's name.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model and row (counted from 1); ``"skip"`` leaves its row out and
        counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        Per model (the model column first when ``model`` is given), one row per tested term, then
        ``Residual`` and ``Total``:

        - ``term``: the term (``a:b`` for an interaction);
        - ``df``: its degrees of freedom; ``ss``: its sum of squares; ``r2``: ss / SS_T;
        - ``f``: its pseudo-F and ``p_value``, its permutation p-value (None on Residual and Total);
        - ``permutations``: the permutations run; ``permute``: what they permuted (``'residuals'``,
          ``'residuals_free'`` or ``'rows'``, as asked).

    Raises
    ------
    InputError
        ``argument.sums`` (an unknown ``sums``), ``argument.permute`` (``permute`` not
        ``'residuals'``, ``'rows'`` or ``'residuals_free'``), ``argument.permutations``, ``argument.seed``,
        ``column.missing`` (a term column), ``column.collision``, ``label.null`` (a NULL model),
        ``vector.*``, ``design.*``; a NULL term value or stratum.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'topic' || (i % 3) AS topic, 'lang' || (i % 2) AS language, "
    ...                 "[cos(i % 3 + 0.2 * (i % 2) + 0.1 * sin(i)), sin(i % 3 + 0.2 * (i % 2) + 0.1 * sin(i))] "
    ...                 "AS embedding FROM range(24) t(i)")
    >>> result = embsql.permanova_terms(con, "ex", terms=["topic", "language"], vector="embedding", permutations=99)
    >>> result.column("term"), result.column("df")
    (['topic', 'language', 'Residual', 'Total'], [2, 1, 20, 23])
    >>> adonis2 = embsql.permanova_terms(con, "ex", terms=["topic", "language"], vector="embedding",
    ...                                  permute="rows", permutations=99)
    >>> adonis2.column("p_value")[0] == result.column("p_value")[0], adonis2.column("permute")[0]
    (True, 'rows')
    """
    check_permute(permute)
    parsed = parse_terms(terms)
    names = columns_of(parsed)
    check_model_name(model, TERMS_COLUMNS, "permanova_terms")
    skipped = Skipped.asked(bad_rows)
    with opened(con, source) as resolved:
        table = con.sql(_query(resolved, names, vector, strata, model)).to_arrow_table()
        shown = repr(resolved.name)
    models = [None] if model is None else _model_values(table.column(model).to_pylist(), model)
    read = np.arange(table.num_rows)              # each kept row's row in the table as read
    if skipped is not None:
        table, kept = skipped.drop(table, vector, model)
        read = read if kept is None else kept
        if table.num_rows == 0 and skipped.total():
            skipped.nothing_left(shown)
        models = [None] if model is None else sorted(set(table.column(model).to_pylist()), key=sort_key)
    rows = []
    for value in models:
        positions = (np.arange(table.num_rows) if model is None else
                     np.flatnonzero([v == value for v in table.column(model).to_pylist()]))
        part = table if model is None else table.take(pa.array(positions))
        unit = unit_vectors(part.column(vector).combine_chunks(), _row_namer(read[positions], model, value), vector, None)
        columns = {name: part.column(name).to_pylist() for name in names}
        plan_, ordered_unit, ordered_strata = ordered_design(
            terms, columns, unit, None if strata is None else part.column(strata).to_pylist(), sums)
        label = "permutations" if value is None else f"permutations ({value})"
        with progress_bar(label, permutations, progress) as tick:
            result = run_terms(plan_, ordered_strata, unit=ordered_unit, permutations=permutations, seed=seed,
                               progress=tick, permute=permute)
        rows += [(value, {**row, "permutations": permutations, "permute": permute}) for row in result.rows()]
    return Skipped.attached(skipped, ResultTable.of_models("permanova terms", model, TERMS_COLUMNS, rows), model)

