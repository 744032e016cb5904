"""Python faces of similarity (STS) evaluation: does a model's cosine agree with people's similarity
judgements (similarity_eval), and does one model agree better than another (compare_similarity)?
The numerics, and why the intervals resample items rather than pairs, are embsql.core.similarity."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.arguments import check_level
from embsql.core.labels import sort_key
from embsql.core.retrieval_comparison import adjust
from embsql.core.similarity import (
    COMPARE_COLUMNS,
    EVAL_COLUMNS,
    Pairs,
    calibrated,
    check_pairs,
    difference,
    eval_row,
    pair_cosines,
)
from embsql.errors import fail
from embsql.io.columns import first_bad_label, require_number
from embsql.io.sources import Source, TableLike, opened
from embsql.io.vectors import Vectors, read_vectors
from embsql.result_table import ResultTable
from embsql.vocabulary import Never, check_model_name, refuse

DEFAULT_MODEL = "model"      # used when the embeddings have it; a table without it is one model


@dataclass(frozen=True)
class Judgements:
    """The pairs table as read: the distinct items as text (to match the embeddings' ids), each
    pair's two items as codes into them, the gold scores, and the a, b and score values as stored
    (for per_pair).  Items are hashed once here; each model then matches only the distinct items."""

    items: pa.Array
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray
    raw: pa.Table
    source: str


def _read_pairs(con: duckdb.DuckDBPyConnection, source: Source, a: str, b: str, score: str) -> Judgements:
    """Read the pairs table (its columns checked first) and check its rows (judgements)."""
    for column, role in ((a, "a"), (b, "b"), (score, "score")):
        source.require(column, role)
    require_number(score, source.columns[score], source.name)
    query = exp.select(*(exp.column(c, quoted=True).as_(f"__emb_{i}", quoted=True) for i, c in enumerate((a, b, score)))
                       ).from_(source.table.copy())
    return judgements(con.sql(query.sql("duckdb")).to_arrow_table(), source.name, (a, b, score))


def judgements(table: pa.Table, name: str, columns: tuple[str, str, str]) -> Judgements:
    """The checked pairs from a table of three columns (a, b, score values as stored) read from the
    pairs table ``name`` whose columns are ``columns``: no NULL item, no NULL or non-finite score, no
    pair of one item (each error names the column and the row)."""
    a, b, score = columns
    where = lambda row: f" at row {row} of pairs {name!r}"
    for i, column in enumerate((a, b)):
        bad = first_bad_label(table.column(i))
        if bad is not None:
            fail("label.null", role="item", column=repr(column), word=bad[1], where=where(bad[0]))
    values = table.column(2).combine_chunks()
    if values.null_count:
        row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        fail("value.null", role="score", column=repr(score), count=values.null_count, where=f" (first{where(row)})")
    scores = values.to_numpy(zero_copy_only=False).astype(np.float64)
    if not np.isfinite(scores).all():
        bad_rows = np.flatnonzero(~np.isfinite(scores))
        word = "NaN or infinite" if len(bad_rows) > 1 else "NaN" if np.isnan(scores[bad_rows[0]]) else "infinite"
        fail("value.nonfinite", role="score", column=repr(score), count=len(bad_rows), word=word,
             where=f" (first{where(int(bad_rows[0]))}: {scores[bad_rows[0]]})")
    text_a, text_b = (table.column(i).combine_chunks().cast(pa.string()) for i in range(2))
    same = pc.equal(text_a, text_b).to_numpy(zero_copy_only=False)
    if same.any():
        row = int(np.flatnonzero(same)[0])
        fail("pair.same_item", row=row, source=repr(name), item=repr(text_a[row].as_py()), a=repr(a), b=repr(b))
    both = pa.concat_arrays([text_a, text_b]).dictionary_encode()
    codes = both.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    return Judgements(both.dictionary, codes[:len(text_a)], codes[len(text_a):], scores, table, name)


def _model_column(source: Source, model: str | None) -> str | None:
    """The model column read: ``model`` if given and present; None for model=None, or for the default
    "model" on a table without it (one model).  A model column named otherwise must exist."""
    if model is None or (model == DEFAULT_MODEL and model not in source.columns):
        return None
    source.require(model, "model")
    return model


@dataclass(frozen=True)
class Scored:
    """One model's usable pairs: which pairs of the table (``rows``), their cosines, and how many
    were left out for want of a vector (missing='skip')."""

    rows: np.ndarray
    cosine: np.ndarray
    skipped: int


def score_model(pairs: Judgements, vectors: Vectors, value: object, missing: str, columns: tuple[str, str],
                 embeddings: str) -> Scored:
    """Cosines of the pairs whose two items have a vector in this model."""
    position = pc.fill_null(pc.index_in(pairs.items, value_set=vectors.ids), -1).to_numpy(zero_copy_only=False)
    ia, ib = position[pairs.a], position[pairs.b]
    known = (ia >= 0) & (ib >= 0)
    if not known.all() and missing == "error":
        row = int(np.flatnonzero(~known)[0])
        code, column = (pairs.a[row], columns[0]) if ia[row] < 0 else (pairs.b[row], columns[1])
        fail("pair.no_vector", item=repr(pairs.items[int(code)].as_py()), column=repr(column), row=row,
             source=repr(pairs.source), model=repr(value), embeddings=repr(embeddings))
    rows = np.flatnonzero(known)
    if len(rows) < len(known):
        ia, ib = ia[rows], ib[rows]
    return Scored(rows, pair_cosines(vectors.vectors, vectors.inv_norms, ia, ib), len(known) - len(rows))


def _coded(pairs: Judgements, rows: np.ndarray) -> Pairs:
    """The kernel's view of ``rows`` of the pairs: scores and items coded 0 .. items - 1."""
    if len(rows) == len(pairs.a):                    # every pair: every item occurs, codes as read
        return Pairs(pairs.score, pairs.a, pairs.b, len(pairs.items))
    a, b = pairs.a[rows], pairs.b[rows]
    present = np.bincount(np.r_[a, b], minlength=len(pairs.items)) > 0
    recode = np.cumsum(present) - 1
    return Pairs(pairs.score[rows], recode[a], recode[b], int(present.sum()))


def _read(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *, model: str | None, a: str,
          b: str, score: str, item: str, vector: str, missing: str,
          output: tuple[str, ...], function: str) -> tuple[str | None, Judgements, dict[object, Scored]]:
    """(the model column or None, the pairs, {model value: Scored} in model order)."""
    if missing not in ("error", "skip"):
        fail("argument.missing", name="missing", rule="'error' or 'skip'", value=repr(missing))
    with opened(con, pairs) as pair_source:
        judgements = _read_pairs(con, pair_source, a, b, score)
    with opened(con, embeddings) as emb_source:
        column = _model_column(emb_source, model)
        check_model_name(column, output, function)
        models = read_vectors(con, emb_source, "embeddings", id_col=item, id_role="item", vector=vector, model=column)
        name = emb_source.name
    scored = {value: score_model(judgements, models[value], value, missing, (a, b), name)
              for value in sorted(models, key=sort_key)}
    return column, judgements, scored


def similarity_eval(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *,
                    model: str | None = "model", a: str = "item_a", b: str = "item_b", score: str = "score",
                    item: str = "item", vector: str = "vector", per_pair: bool = False, missing: str = "error",
                    level: float = 0.95, **removed: Never) -> ResultTable:
    """How well each model's cosine agrees with gold similarity judgements (STS evaluation).

    For every pair of items (a, b) with a gold score, the cosine of the two items' vectors; per model,
    Spearman's rho (average ranks for ties; MTEB's STS main score) and Pearson's r between cosine and
    score, each with an interval that accounts for items recurring across pairs.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    pairs : source
        The gold judgements: one row per pair, columns ``a``, ``b`` (item ids, matched to the
        embeddings' ``item`` as text) and ``score`` (any real scale).  A pair may appear more than once
        (each row counts); a pair of one item with itself is refused (its cosine is 1 whatever the model).
    embeddings : source
        One row per item (and model): columns ``item``, ``vector`` and optionally ``model``.
    model : str or None, default "model"
        The embeddings' model column.  The default is used when the table has such a column; a table
        without it is one model (and the result has no model column).  None: the table is one model
        whatever its columns.  Another name must be a column.
    a, b, score : str
        The pairs table's item columns and gold-score column.
    item, vector : str
        The embeddings' item and vector columns (vectors are scaled to unit length).
    per_pair : bool, default False
        One row per model and pair instead of one per model.
    missing : {"error", "skip"}, default "error"
        A pair whose item has no vector in a model: an error naming the item and the model, or left
        out of that model's figures and counted in ``skipped``.
    level : float, default 0.95
        The confidence level of the intervals.

    Returns
    -------
    ResultTable
        One row per model: the model column (under its input name; absent for one model), ``spearman``,
        ``ci_low``, ``ci_high`` (its interval), ``se``, ``pearson``, ``pearson_ci_low``,
        ``pearson_ci_high``, ``pearson_se``, ``pairs`` (used), ``items`` (distinct items in them),
        ``skipped`` (pairs left out by missing='skip'), ``level``, ``calibrated`` (at least 200 pairs
        and 20 degrees of freedom, the effective number of items less one: where the interval's
        simulated coverage held).  The interval is t on Fisher's z with the item-clustered
        (dyadic-robust) standard error, see embsql.core.similarity.
        With ``per_pair=True``: the model column, ``a``, ``b``, ``score`` (under their input names,
        values as stored) and ``cosine``, in the pairs table's order.

    Raises
    ------
    InputError
        ``value.null`` / ``value.nonfinite`` (a score NULL, NaN or infinite, naming its row),
        ``pair.same_item``, ``pair.no_vector`` (naming the item, its row and the model),
        ``argument.missing``, ``argument.level``, ``column.collision``.
    DesignError
        ``pair.too_few`` (fewer than 3 pairs), ``pair.constant`` (a constant score or cosine).
    ColumnNotFoundError, ColumnTypeError, BadLabelError, BadVectorError, ArgumentError
        A missing or mistyped column, a NULL item or an item twice in a model, a bad vector, a
        keyword similarity_eval does not take.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT 'w' || i AS item, [cos(sqrt(i + 1)), sin(sqrt(i + 1))] AS vector "
    ...                 "FROM range(8) t(i)")
    >>> _ = con.execute("CREATE TABLE judged AS SELECT 'w' || i AS item_a, 'w' || j AS item_b, "
    ...                 "10 - (j - i) AS score FROM range(8) s(i), range(8) t(j) WHERE i < j")
    >>> row = embsql.similarity_eval(con, "judged", "emb")
    >>> round(row.spearman, 4), round(row.pearson, 4), row.pairs, row.items, row.calibrated
    (0.9559, 0.9458, 28, 8, False)
    """
    refuse(similarity_eval, removed)
    check_level(level)
    output = ("model", a, b, score, "cosine") if per_pair else EVAL_COLUMNS
    column, judgements, scored = _read(con, pairs, embeddings, model=model, a=a, b=b, score=score, item=item,
                                       vector=vector, missing=missing, output=output, function="similarity_eval")
    if per_pair:
        return _per_pair(column, judgements, scored, (a, b, score))
    return ResultTable.of_models("similarity evaluation", column, EVAL_COLUMNS,
                                 evaluation_rows(judgements, scored, level, one_model=column is None))


def evaluation_rows(judgements: Judgements, scored: dict[object, Scored], level: float,
                    one_model: bool = False) -> list[tuple[object, dict]]:
    """(model value, its EVAL_COLUMNS figures) per model."""
    rows, coded_by_rows = [], {}
    for value, used in scored.items():
        # models that score the same pairs share one coding (and its sort of the gold scores)
        key = used.rows.tobytes()
        if key not in coded_by_rows:
            coded_by_rows[key] = _coded(judgements, used.rows)
        coded = coded_by_rows[key]
        check_pairs(coded.score, used.cosine, "the pairs" if one_model else f"model {value!r}")
        rows.append((value, eval_row(coded, used.cosine, level, used.skipped)))
    return rows


def _per_pair(column: str | None, judgements: Judgements, scored: dict[object, Scored],
              names: tuple[str, str, str]) -> ResultTable:
    raw = [judgements.raw.column(i).to_pylist() for i in range(3)]
    out: list[tuple] = []
    for value, used in scored.items():
        lead = () if column is None else (value,)
        out.extend(lead + (raw[0][r], raw[1][r], raw[2][r], c) for r, c in zip(used.rows.tolist(), used.cosine.tolist()))
    return ResultTable("similarity per pair", (() if column is None else (column,)) + (*names, "cosine"), tuple(out))


def compare_similarity(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *,
                       model: str = "model", a: str = "item_a", b: str = "item_b", score: str = "score",
                       item: str = "item", vector: str = "vector", missing: str = "error", level: float = 0.95,
                       **removed: Never) -> ResultTable:
    """Every pair of models on the same gold judgements: the difference of their Spearman (and of
    their Pearson) correlations, its interval and a paired p-value that accounts for recurring items.

    The two models' correlations are computed on the same pairs (with missing='skip', those both
    models can score), so what the pairs share cancels.  The standard error of the difference comes
    from the two correlations' influence values subtracted pair by pair and clustered by item (the
    dyadic-robust variance of embsql.core.similarity); the interval is difference -/+ t se and the
    p-value two-sided t (H0: equal population correlations).  A pair-level method (pairs as if
    independent) rejected a true H0 five times too often in the simulations of bench/README.md.

    Parameters
    ----------
    con, pairs, embeddings, a, b, score, item, vector, missing, level
        As for :func:`similarity_eval`.
    model : str, default "model"
        The embeddings' model column: at least two models.

    Returns
    -------
    ResultTable
        One row per pair of models (in model order) and correlation: ``model_a``, ``model_b``,
        ``correlation`` ("spearman", "pearson"), ``estimate_a``, ``estimate_b``, ``difference``
        (a - b), ``se``, ``ci_low``, ``ci_high``, ``p_value``, ``p_holm`` (Holm-adjusted across the
        pairs of models, per correlation), ``pairs``, ``items``, ``level``, ``calibrated`` (at least
        200 pairs and 20 degrees of freedom: where the test's simulated level held).

    Raises
    ------
    InputError, DesignError, ColumnNotFoundError, ColumnTypeError, BadLabelError, BadVectorError, ArgumentError
        As for :func:`similarity_eval`; ``model.too_few`` for fewer than two models.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT m AS model, 'w' || i AS item, "
    ...                 "[cos(i / 3), sin(i / 3), w * cos(7 * i)] AS vector FROM range(8) t(i), "
    ...                 "(VALUES ('exact', 0.0), ('noisy', 0.5)) m(m, w)")
    >>> _ = con.execute("CREATE TABLE judged AS SELECT 'w' || i AS item_a, 'w' || j AS item_b, "
    ...                 "10 - (j - i) AS score FROM range(8) s(i), range(8) t(j) WHERE i < j")
    >>> result = embsql.compare_similarity(con, "judged", "emb").to_dicts()
    >>> [(r["correlation"], r["model_a"], r["model_b"], r["difference"] > 0) for r in result]
    [('spearman', 'exact', 'noisy', True), ('pearson', 'exact', 'noisy', True)]
    """
    refuse(compare_similarity, removed)
    check_level(level)
    if not isinstance(model, str) or not model:
        fail("model.too_few", column=repr(model), models=1, needs="compare_similarity")
    column, judgements, scored = _read(con, pairs, embeddings, model=model, a=a, b=b, score=score, item=item,
                                       vector=vector, missing=missing, output=(), function="compare_similarity")
    if column is None or len(scored) < 2:
        fail("model.too_few", column=repr(model), models=len(scored), needs="compare_similarity")
    return ResultTable.from_dicts("paired comparison of similarity", COMPARE_COLUMNS,
                                  comparison_rows(judgements, scored, level))


def comparison_rows(judgements: Judgements, scored: dict[object, Scored], level: float) -> list[dict]:
    """COMPARE_COLUMNS rows: per pair of models (in model order), Spearman's then Pearson's."""
    rows: dict[str, list[dict]] = {"spearman": [], "pearson": []}
    for first, second in combinations(scored, 2):
        shared, at_a, at_b = np.intersect1d(scored[first].rows, scored[second].rows, return_indices=True)
        coded = _coded(judgements, shared)
        cos_a, cos_b = scored[first].cosine[at_a], scored[second].cosine[at_b]
        what = f"models {first!r} and {second!r}"
        check_pairs(coded.score, cos_a, what)
        check_pairs(coded.score, cos_b, what)
        for name, d in difference(coded, cos_a, cos_b, level).items():
            rows[name].append({"model_a": first, "model_b": second, "correlation": name, "estimate_a": d.estimate_a,
                               "estimate_b": d.estimate_b, "difference": d.difference, "se": d.se,
                               "ci_low": d.ci_low, "ci_high": d.ci_high, "p_value": d.p_value,
                               "pairs": len(shared), "items": coded.items, "level": level,
                               "calibrated": calibrated(coded)})
    for family in rows.values():
        for row, p in zip(family, adjust([r["p_value"] for r in family], "holm")):
            row["p_holm"] = p
    return [r for pair in zip(*rows.values()) for r in pair]
