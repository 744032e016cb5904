"""Python faces of similarity (STS) evaluation: does a model's cosine agree with people's similarity
judgements (similarity_eval), and does one model agree better than another (compare_similarity)?
The numerics, and why the intervals resample items rather than pairs, are embsql.core.similarity."""

from __future__ import annotations

import duckdb

from embsql.core.arguments import check_level
from embsql.core.similarity import COMPARE_COLUMNS, EVAL_COLUMNS
from embsql.errors import fail
from embsql.io.similarity_pairs import Judgements, Scored, comparison_rows, evaluation_rows, read_models
from embsql.io.sources import TableLike
from embsql.io.table_stream import Skipped
from embsql.result_table import ResultTable


def similarity_eval(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *,
                    vector: str, item: str, model: str | None = None, a: str = "item_a", b: str = "item_b",
                    score: str = "score", per_pair: bool = False, missing: str = "error",
                    level: float = 0.95, bad_rows: str = "error") -> ResultTable:
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
    vector : str
        The embeddings' vector column (vectors are scaled to unit length).
    item : str
        The embeddings' item column.
    model : str, optional
        The embeddings' model column.  None (the default): the table is one model, and the result has
        no model column.
    a : str, default "item_a"
        The pairs table's first item column.
    b : str, default "item_b"
        The pairs table's second item column.
    score : str, default "score"
        The pairs table's gold-score column.
    per_pair : bool, default False
        One row per model and pair instead of one per model.
    missing : {"error", "skip"}, default "error"
        A pair whose item has no vector in a model: an error naming the item and the model, or left
        out of that model's figures and counted in ``skipped``.
    level : float, default 0.95
        The confidence level of the intervals.
    bad_rows : {"error", "skip"}, default "error"
        What a NULL, zero or non-finite (NaN or infinite) vector of the embeddings does: ``"error"``
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out and
        counts it in the result's ``skipped`` table (per model: ``skipped_null``, ``skipped_zero``,
        ``skipped_nonfinite``). A skipped row leaves its item without a vector in that model, so its
        pairs need ``missing="skip"``.

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
    ColumnNotFoundError, ColumnTypeError, BadLabelError, BadVectorError
        A missing or mistyped column, a NULL item or an item twice in a model, a bad vector.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT 'w' || i AS item, [cos(sqrt(i + 1)), sin(sqrt(i + 1))] AS vector "
    ...                 "FROM range(8) t(i)")
    >>> _ = con.execute("CREATE TABLE judged AS SELECT 'w' || i AS item_a, 'w' || j AS item_b, "
    ...                 "10 - (j - i) AS score FROM range(8) s(i), range(8) t(j) WHERE i < j")
    >>> row = embsql.similarity_eval(con, "judged", "emb", vector="vector", model="model", item="item")
    >>> round(row.spearman, 4), round(row.pearson, 4), row.pairs, row.items, row.calibrated
    (0.9559, 0.9458, 28, 8, False)
    """
    check_level(level)
    output = (a, b, score, "cosine") if per_pair else EVAL_COLUMNS
    column, judgements, scored = read_models(con, pairs, embeddings, model=model, a=a, b=b, score=score, item=item,
                                       vector=vector, missing=missing, output=output, function="similarity_eval",
                                       skip=(skipped := Skipped.asked(bad_rows)))
    if per_pair:
        return Skipped.attached(skipped, _per_pair(column, judgements, scored, (a, b, score)), column)
    return Skipped.attached(skipped, ResultTable.of_models("similarity evaluation", column, EVAL_COLUMNS,
                                                           evaluation_rows(judgements, scored, level,
                                                                           one_model=column is None)), column)


def _per_pair(column: str | None, judgements: Judgements, scored: dict[object, Scored],
              names: tuple[str, str, str]) -> ResultTable:
    raw = [judgements.raw.column(i).to_pylist() for i in range(3)]
    out: list[tuple] = []
    for value, used in scored.items():
        lead = () if column is None else (value,)
        out.extend(lead + (raw[0][r], raw[1][r], raw[2][r], c) for r, c in zip(used.rows.tolist(), used.cosine.tolist()))
    return ResultTable("similarity per pair", (() if column is None else (column,)) + (*names, "cosine"), tuple(out))


def compare_similarity(con: duckdb.DuckDBPyConnection, pairs: TableLike, embeddings: TableLike, *,
                       vector: str, item: str, model: str, a: str = "item_a", b: str = "item_b",
                       score: str = "score", missing: str = "error", level: float = 0.95,
                       bad_rows: str = "error", intervals: str = "marginal", replicates: int = 2000,
                       seed: int = 42) -> ResultTable:
    """Every pair of models on the same gold judgements: the difference of their Spearman (and of
    their Pearson) correlations, its interval and a paired p-value that accounts for recurring items.

    The two models' correlations are computed on the same pairs (with missing='skip', those both
    models can score), so what the pairs share cancels.  The standard error of the difference comes
    from the two correlations' influence values subtracted pair by pair and clustered by item (the
    dyadic-robust variance of embsql.core.similarity); the interval is difference -/+ t se and the
    p-value two-sided t (H0: equal population correlations).  A pair-level method (pairs as if
    independent) rejected a true H0 five times too often in the simulations of validation/README.md.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        As for :func:`similarity_eval`.
    pairs : source
        As for :func:`similarity_eval`.
    embeddings : source
        As for :func:`similarity_eval`.
    vector : str
        As for :func:`similarity_eval`.
    item : str
        As for :func:`similarity_eval`.
    model : str
        The embeddings' model column: at least two models.
    a : str, default "item_a"
        As for :func:`similarity_eval`.
    b : str, default "item_b"
        As for :func:`similarity_eval`.
    score : str, default "score"
        As for :func:`similarity_eval`.
    missing : {"error", "skip"}, default "error"
        As for :func:`similarity_eval`.
    level : float, default 0.95
        As for :func:`similarity_eval`.
    bad_rows : {"error", "skip"}, default "error"
        As for :func:`similarity_eval`.
    intervals : {"marginal", "simultaneous"}, default "marginal"
        ``'marginal'``: each pair's interval holds ``level`` on its own.  ``'simultaneous'``: per
        correlation, the K(K-1)/2 intervals hold ``level`` together (difference -/+ c se, c the
        ``level`` quantile of the largest studentized difference over the pairs in joint normal
        draws with the correlations' item-clustered covariance, as :func:`embsql.rank_models`
        draws them; a single-step max-|t|).  One family of intervals is about one set of pairs: every
        row is then computed on the pairs every model scores (with ``missing='skip'``, a pair one
        model cannot score leaves every row; ``pairs`` says how many are left), as
        :func:`embsql.rank_models` ranks the models.  The table gains a column ``interval`` =
        ``'simultaneous'``; the p-values are the same tests (Holm), on those pairs.  In simulation
        {{figure rank_sets_families.spearman_simultaneous}}, and those by Pearson in
        {{figure rank_sets_families.pearson_simultaneous range}} (3 to 10 models, 30 or 100 items in five
        times as many pairs, validation/rank_sets_families.py).
    replicates : int, default 2000
        The joint normal draws of ``intervals='simultaneous'``.
    seed : int, default 42
        Their random seed.

    Returns
    -------
    ResultTable
        One row per pair of models (in model order) and correlation: ``model_a``, ``model_b``,
        ``correlation`` ("spearman", "pearson"), ``estimate_a``, ``estimate_b``, ``difference``
        (a - b), ``se``, ``ci_low``, ``ci_high``, ``p_value``, ``p_adjusted`` (Holm-adjusted across the
        pairs of models, per correlation), ``pairs``, ``items``, ``level``, ``calibrated`` (at least
        200 pairs and 20 degrees of freedom: where the test's simulated level held); with
        ``intervals='simultaneous'`` also ``interval``.

    Raises
    ------
    InputError, DesignError, ColumnNotFoundError, ColumnTypeError, BadLabelError, BadVectorError
        As for :func:`similarity_eval`; ``model.too_few`` for fewer than two models;
        ``argument.intervals``; ``pair.too_few`` when fewer than 3 pairs are scored by every model
        (``intervals='simultaneous'``).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT m AS model, 'w' || i AS item, "
    ...                 "[cos(i / 3), sin(i / 3), w * cos(7 * i)] AS vector FROM range(8) t(i), "
    ...                 "(VALUES ('exact', 0.0), ('noisy', 0.5)) m(m, w)")
    >>> _ = con.execute("CREATE TABLE judged AS SELECT 'w' || i AS item_a, 'w' || j AS item_b, "
    ...                 "10 - (j - i) AS score FROM range(8) s(i), range(8) t(j) WHERE i < j")
    >>> result = embsql.compare_similarity(con, "judged", "emb", vector="vector", model="model", item="item").to_dicts()
    >>> [(r["correlation"], r["model_a"], r["model_b"], r["difference"] > 0) for r in result]
    [('spearman', 'exact', 'noisy', True), ('pearson', 'exact', 'noisy', True)]
    """
    check_level(level)
    if not isinstance(model, str) or not model:
        fail("model.too_few", column=repr(model), models=1, needs="compare_similarity")
    column, judgements, scored = read_models(con, pairs, embeddings, model=model, a=a, b=b, score=score, item=item,
                                       vector=vector, missing=missing, output=(), function="compare_similarity",
                                       skip=(skipped := Skipped.asked(bad_rows)))
    if column is None or len(scored) < 2:
        fail("model.too_few", column=repr(model), models=len(scored), needs="compare_similarity")
    shown = COMPARE_COLUMNS + (("interval",) if intervals == "simultaneous" else ())
    return Skipped.attached(skipped, ResultTable.from_dicts("paired comparison of similarity", shown,
                                                            comparison_rows(judgements, scored, level, intervals=intervals,
                                                                            replicates=replicates, seed=seed)), column)
