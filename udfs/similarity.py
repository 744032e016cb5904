"""UDF kernels of emb_similarity_eval and emb_compare_similarity (sql/python/88_similarity.sql).

Each call gets the pairs table (a, b as text, score as DOUBLE) and the embeddings (model, item as
text, vector as DOUBLE[]) as lists, with both tables' column names and types, so that a missing or
mistyped column gets the Python API's message.  The checks and numerics are embsql.io.similarity_pairs'
(judgements, score_model, evaluation_rows, comparison_rows) and embsql.core.similarity's.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embsql.core.arguments import check_level
from embsql.core.model_ranking import RANK_SQL_TYPE
from embsql.core.similarity import COMPARE_COLUMNS
from embsql.errors import BadLabelError, fail
from embsql.io.columns import require_number
from embsql.io.similarity_pairs import (
    DEFAULT_MODEL,
    comparison_rows,
    evaluation_rows,
    judgements,
    ranking_rows,
    score_model,
)
from embsql.io.sources import Source
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors
from embsql.io.vectors import Vectors

EVAL = ("STRUCT(__emb_m VARCHAR, spearman DOUBLE, ci_low DOUBLE, ci_high DOUBLE, se DOUBLE, pearson DOUBLE, "
        "pearson_ci_low DOUBLE, pearson_ci_high DOUBLE, pearson_se DOUBLE, pairs BIGINT, items BIGINT, "
        "skipped BIGINT, level DOUBLE, calibrated BOOLEAN)[]")
COMPARE = ("STRUCT(model_a VARCHAR, model_b VARCHAR, correlation VARCHAR, estimate_a DOUBLE, estimate_b DOUBLE, "
           "difference DOUBLE, se DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, p_adjusted DOUBLE, "
           "pairs BIGINT, items BIGINT, level DOUBLE, calibrated BOOLEAN, interval VARCHAR)[]")
# pairs: table, column names, types, a, b, score columns, a, b, score values; embeddings: table, names,
# types, item, model, vector columns, models, items, vectors, rows (in the table, from 1); missing; level
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]", "DOUBLE[]",
          "VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]",
          "DOUBLE[][]", "BIGINT[]", "VARCHAR", "DOUBLE"]


def _pairs(row: int, tbl, names, types, a_col, b_col, score_col, a, b, score):
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    columns = (scalar(a_col), scalar(b_col), scalar(score_col))
    for column, role in zip(columns, ("a", "b", "score")):
        source.require(column, role)
    require_number(columns[2], source.columns[columns[2]], source.name)
    table = pa.table([a[row].values, b[row].values, score[row].values], names=["a", "b", "score"])
    return judgements(table, source.name, columns), columns


def _models(row: int, tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows) -> tuple:
    """(the model column or None, {model value: Vectors of unit vectors}) of one call row; a bad vector
    is named by its row in the table (``rows``, from 1; bad_rows := 'skip' leaves gaps), model and item."""
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    source.require(scalar(item_col), "item")
    source.vector_dimension(scalar(vector_col))
    column = scalar(model_col)
    if column is not None and not (column == DEFAULT_MODEL and column not in source.columns):
        source.require(column, "model")
    else:
        column = None
    model_of = models[row].values if column else pa.nulls(len(items[row].values), pa.string())
    item_of = items[row].values
    if len(item_of) == 0:
        fail("source.empty", source=repr(source.name))
    if item_of.null_count:
        first = int(np.flatnonzero(item_of.is_null().to_numpy(zero_copy_only=False))[0])
        raise BadLabelError(f"embeddings {source.name!r}: item column {scalar(item_col)!r} is NULL at row "
                            f"{rows[row].values[first].as_py()}")
    out = {}
    for value in sorted(set(model_of.to_pylist()), key=lambda m: (m is not None, str(m))):
        mask = pc.is_null(model_of) if value is None else pc.equal(model_of, value)
        ids, at = item_of.filter(mask), rows[row].values.filter(mask)
        whose = "" if value is None else f" of model {value!r}"
        named = "" if value is None else f"model {value!r}, "
        where = lambda i, ids=ids, at=at, named=named: f"row {at[i].as_py()} ({named}item {ids[i].as_py()!r})"
        unit = unit_vectors(vectors[row].values.filter(mask), where, scalar(vector_col), None)
        if len(pc.unique(ids)) != len(ids):
            repeated = next(x for x, n in zip(*np.unique(ids.to_numpy(zero_copy_only=False), return_counts=True)) if n > 1)
            raise BadLabelError(f"embeddings {source.name!r}{whose}: item column {scalar(item_col)!r} has "
                                f"{repeated!r} more than once; each item must identify one row")
        out[value] = Vectors(ids, None, unit, np.ones(len(unit)))
    return column, source.name, out


def _scored(row: int, inputs: tuple):
    pairs, columns = _pairs(row, *inputs[:9])
    column, name, models = _models(row, *inputs[9:19])
    missing, level = inputs[19][row].as_py(), check_level(inputs[20][row].as_py())
    if missing not in ("error", "skip"):
        fail("argument.missing", name="missing", rule="'error' or 'skip'", value=repr(missing))
    scored = {value: score_model(pairs, vectors, value, missing, columns[:2], name) for value, vectors in models.items()}
    return column, pairs, scored, level


def _each(inputs: tuple, rows_of) -> pa.Array:
    """``rows_of(row, model column, pairs, scored, level)`` for every row of the chunk."""
    return pa.array([rows_of(row, *_scored(row, inputs)) for row in range(len(inputs[0]))])


def _evaluation(row, column, pairs, scored, level) -> list[dict]:
    rows = evaluation_rows(pairs, scored, level, one_model=column is None)
    return [{"__emb_m": None if value is None else str(value), **figures} for value, figures in rows]


def _comparison(model_col, intervals, replicates, seed):
    def rows_of(row, column, pairs, scored, level) -> list[dict]:
        if column is None or len(scored) < 2:
            fail("model.too_few", column=repr(model_col[row].as_py()), models=len(scored),
                 needs="emb_compare_similarity")
        return [{k: str(r[k]) if k in ("model_a", "model_b") else r[k] for k in (*COMPARE_COLUMNS, "interval")}
                for r in comparison_rows(pairs, scored, level, intervals=intervals[row].as_py(),
                                         replicates=replicates[row].as_py(), seed=seed[row].as_py())]
    return rows_of


@sql_errors
def emb__similarity_eval(ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                         model_col, vector_col, models, items, vectors, rows, missing, level):
    return _each((ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                  model_col, vector_col, models, items, vectors, rows, missing, level), _evaluation)


@sql_errors
def emb__compare_similarity(ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                            model_col, vector_col, models, items, vectors, rows, missing, level, intervals, replicates,
                            seed):
    """emb_compare_similarity: embsql.compare_similarity's rows, with ``interval`` always."""
    return _each((ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                  model_col, vector_col, models, items, vectors, rows, missing, level),
                 _comparison(model_col, intervals, replicates, seed))


def _ranking(model_col, statistic, replicates, seed):
    def rows_of(row, column, pairs, scored, level) -> list[dict]:
        if column is None or len(scored) < 2:
            fail("model.too_few", column=repr(model_col[row].as_py()), models=len(scored), needs="emb_rank_similarity")
        return [{**r, "model": str(r["model"])}
                for r in ranking_rows(pairs, scored, statistic[row].as_py(), level=level,
                                      replicates=replicates[row].as_py(), seed=seed[row].as_py())]
    return rows_of


@sql_errors
def emb__rank_similarity(ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                         model_col, vector_col, models, items, vectors, rows, missing, level, statistic, replicates,
                         seed):
    """emb_rank_similarity (sql/python/97_model_ranking_families.sql): embsql.rank_models' similarity family."""
    return _each((ptbl, pnames, ptypes, a_col, b_col, score_col, a, b, score, etbl, enames, etypes, item_col,
                  model_col, vector_col, models, items, vectors, rows, missing, level),
                 _ranking(model_col, statistic, replicates, seed))


SPECS = [
    {"name": "emb__similarity_eval", "function": emb__similarity_eval, "parameters": INPUTS,
     "return_type": result_type(EVAL), "null_handling": "special"},
    {"name": "emb__compare_similarity", "function": emb__compare_similarity,
     "parameters": INPUTS + ["VARCHAR", "BIGINT", "BIGINT"],
     "return_type": result_type(COMPARE), "null_handling": "special"},
    {"name": "emb__rank_similarity", "function": emb__rank_similarity,
     "parameters": INPUTS + ["VARCHAR", "BIGINT", "BIGINT"], "return_type": result_type(RANK_SQL_TYPE),
     "null_handling": "special"},
]
