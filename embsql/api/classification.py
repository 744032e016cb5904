"""Python face of classification by labels: k-NN and nearest-centroid accuracy per model, and the
paired comparison of two models' accuracy on the same items (the numerics, tie rules and
intervals are embsql.core.classification's)."""

from __future__ import annotations

from contextlib import ExitStack

import duckdb
from sqlglot import exp

from embsql.core.arguments import check_level
from embsql.core.classification import CLASSIFY_COLUMNS, COMPARE_COLUMNS, ITEM_COLUMNS, align, paired_rows
from embsql.core.ranking import check_k
from embsql.io.labelled_rows import classify_models, read_labelled
from embsql.io.retrieval_tables import arrow_of, check_model
from embsql.io.sources import TableLike, local_source, opened, resolve
from embsql.io.table_stream import Skipped
from embsql.result_table import ResultTable


def _run(con: duckdb.DuckDBPyConnection, source: TableLike, *, classifier: str, label: str, vector: str,
         model: str | None, k: int | None, split: str | None, item: str | None, group: str | None, per_item: bool,
         level: float, bad_rows: str = "error") -> ResultTable:
    level = check_level(level)
    function = "knn_classify" if classifier == "knn" else "centroid_classify"
    with opened(con, source) as table:
        used = table.model_column(model)
        check_model(used, CLASSIFY_COLUMNS if not per_item else (*ITEM_COLUMNS, "group"), function)
        models = read_labelled(con, table, vector, {"model": used, "item": item, "label": label, "split": split,
                                                    "group": group}, skip=(skipped := Skipped.asked(bad_rows)))
    summary, items = classify_models(models, classifier=classifier, label=label, k=k, level=level, item=item,
                                     split=split, group=group, named=used is not None)
    if per_item:
        shown = tuple(c for c in ITEM_COLUMNS if c != "item" or item) + (("group",) if group else ())
        return Skipped.attached(skipped, ResultTable.of_models(f"{function} per item", used, shown, items), used)
    return Skipped.attached(skipped, ResultTable.of_models(function, used, CLASSIFY_COLUMNS, summary), used)


def knn_classify(con: duckdb.DuckDBPyConnection, source: TableLike, *, vector: str, label: str = "label",
                 model: str | None = None, k: int = 10, split: str | None = None, item: str | None = None,
                 group: str | None = None, per_item: bool = False, level: float = 0.95,
                 bad_rows: str = "error") -> ResultTable:
    """Classify each item by the labels of its k nearest neighbours by cosine, one row per model.

    Leave-one-out (each item against all the others, itself excluded), or train -> test when
    ``split`` names a column of 'train' and 'test': each test item against the training items.
    Majority vote.  Ties: among equal cosines (to 2^-40) the item first in the item order wins
    (the items' text order when ``item`` is given, else the rows' order); a tied vote goes to the
    smallest label (numbers as numbers, text in byte order).  Wherever these rules do not decide
    the answer, the predictions equal scikit-learn's ``KNeighborsClassifier(n_neighbors=k,
    metric="cosine", algorithm="brute")`` (``predict(None)`` for leave-one-out).  The search is the
    exact blocked top-k of :func:`embsql.retrieve`: no n x n matrix is held.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        A table, view, file or DataFrame with one row per item (and model).
    vector : str
        The vector column; vectors are scaled to unit length.
    label : str, default "label"
        The class-label column (a NULL or NaN label is an error naming its row).
    model : str, optional
        The model column: one row per value, under its own name.  None (the default): the whole
        source is one model.
    k : int, default 10
        Neighbours per item: fewer than the items (leave-one-out) or the training items.
    split : str, optional
        A column whose values are 'train' or 'test' (anything else is an error naming its row).
    item : str, optional
        The item id column: sets the tie order, names rows in messages and is given per item.
    group : str, optional
        Clusters of items that are not independent (paraphrases of one source): the intervals
        resample clusters instead of items.
    per_item : bool, default False
        One row per classified item instead of one per model.
    level : float, default 0.95
        The confidence level of the intervals.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model: ``<model>``, ``accuracy``; ``ci_low``, ``ci_high`` (its interval:
        Wilson's over items; with ``group``, Wilson's on the effective sample size p(1 - p)/se² of
        the cluster-robust se, with the t(G - 1) quantile);
        ``macro_f1`` (scikit-learn's f1_score(average="macro"): the mean F1 over the classes that
        are a label or a prediction), ``macro_f1_ci_low``, ``macro_f1_ci_high`` (jackknife over
        items or clusters, t(U - 1)); ``items`` (classified: all, or the test items);
        ``classes``; ``groups`` (clusters, NULL without ``group``); ``k``; ``classifier``
        ("knn"); ``split`` ("leave-one-out" or "train-test"); ``level``; ``calibrated`` (30 or
        more items or clusters, from where {{figure classification.accuracy_coverage}};
        the macro-F1 interval covered 91.8% at 50 items and 94.4% at 200).  The intervals treat
        the predictions as given.  With ``per_item=True``: ``<model>``, ``item`` (with ``item``),
        ``label``, ``predicted``, ``correct`` and ``group`` (with ``group``), in row order.

    Raises
    ------
    BadLabelError
        A NULL or NaN label, model or group (label.null).
    DesignError
        Only one label (design.one_group); k not below the number of (training) items
        (design.k_items); a split with no train or no test items (design.empty_split).
    InputError
        A split value other than 'train' or 'test' (value.split); k not a whole number of 1 or more
        (argument.k); a bad level; a model column named like an output column (column.collision).
    ColumnNotFoundError, BadVectorError
        A missing column; a NULL, zero or non-finite vector or vectors of different lengths.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT 'doc' || i AS item, CASE WHEN i < 6 THEN 'cat' ELSE 'dog' END "
    ...                 "AS label, [cos(i / 4), sin(i / 4)] AS vector FROM range(12) t(i)")
    >>> row = embsql.knn_classify(con, "emb", k=3, model=None, vector="vector")
    >>> row.accuracy, row.items, row.split
    (0.9166666666666666, 12, 'leave-one-out')
    """
    return _run(con, source, classifier="knn", label=label, vector=vector, model=model, k=check_k(k), split=split,
                item=item, group=group, per_item=per_item, level=level, bad_rows=bad_rows)


def centroid_classify(con: duckdb.DuckDBPyConnection, source: TableLike, *, vector: str,
                      label: str = "label", model: str | None = None, split: str | None = None,
                      item: str | None = None, group: str | None = None, per_item: bool = False,
                      level: float = 0.95, bad_rows: str = "error") -> ResultTable:
    """Classify each item by the nearest class mean of unit vectors, one row per model.

    The centroid of a class is the mean of its unit vectors, S_g / n_g: the group sums R² is built
    on.  An item z goes to the class whose centroid is nearest in Euclidean distance
    (scikit-learn's ``NearestCentroid`` on the unit vectors, the distance of SS_W).  Under
    leave-one-out its own class's centroid leaves it out, (S_g - z)/(n_g - 1), so an item alone in
    its class is never assigned to it; with ``split`` the centroids are those of the training
    items.  A tie goes to the smallest label.  Output and intervals as :func:`knn_classify`
    (``classifier`` "centroid", ``k`` NULL).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (one row per item and model).
    vector : str
        As for :func:`knn_classify`.
    label : str, default "label"
        As for :func:`knn_classify`.
    model : str, optional
        As for :func:`knn_classify`.
    split : str, optional
        As for :func:`knn_classify`.
    item : str, optional
        As for :func:`knn_classify`.
    group : str, optional
        As for :func:`knn_classify`.
    per_item : bool, default False
        As for :func:`knn_classify`.
    level : float, default 0.95
        As for :func:`knn_classify`.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        The columns of :func:`knn_classify`.

    Raises
    ------
    BadLabelError, DesignError, InputError, ColumnNotFoundError, BadVectorError
        As for :func:`knn_classify` (no k).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE emb AS SELECT CASE WHEN i < 6 THEN 'cat' ELSE 'dog' END AS label, "
    ...                 "[cos(i / 4), sin(i / 4)] AS vector FROM range(12) t(i)")
    >>> row = embsql.centroid_classify(con, "emb", vector="vector", model="model")
    >>> row.accuracy, row.classifier
    (1.0, 'centroid')
    """
    return _run(con, source, classifier="centroid", label=label, vector=vector, model=model, k=None, split=split,
                item=item, group=group, per_item=per_item, level=level, bad_rows=bad_rows)


def compare_classification(con: duckdb.DuckDBPyConnection, predictions: object, *, model: str,
                           item: str, group: str | None = None, level: float = 0.95,
                           p_adjust: str | None = "holm", permutations: int = 10_000, seed: int = 42,
                           intervals: str = "marginal", replicates: int = 2000) -> ResultTable:
    """Every pair of models' accuracy on the same items: the difference, its interval and a paired test.

    Per item d = correct_a - correct_b.  Without ``group``: McNemar's test on the discordant items
    (the a_only items, where only model a is right, among the a_only + b_only discordant ones,
    against Binomial(a_only + b_only, 1/2)) and Agresti and Min's interval for the difference (Wald
    after adding 1/2 to each cell of the 2 x 2 table).  ``p_value`` is the mid-p McNemar test,
    2 P(X < min) + P(X = min) (Fagerland, Lydersen and Laake 2013), X ~ Binomial(a_only + b_only,
    1/2): the exact test's p less P(X = min).  The exact test's p, ``p_exact``, is made conservative by
    the discreteness (in simulation, from 10 expected discordant items on, the exact test rejected
    {{figure classification.mcnemar_level_exact range}} at 5% and the mid-p {{figure classification.mcnemar_level range}};
    with fewer, both are below 3%: validation/classification_validity_mcnemar.txt).
    With ``group`` (clusters of items that are not independent,
    e.g. paraphrases of one source): a sign-flip randomization test that swaps the two models'
    answers for whole clusters (exact when 2^G <= permutations) and the cluster-robust t interval
    with G - 1 degrees of freedom; McNemar on clustered items rejects too often (validation/README.md).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the table is read on.
    predictions : source or ResultTable
        Per-item predictions: ``knn_classify(..., item=..., per_item=True)`` or
        ``centroid_classify``'s, or a table with the columns ``<model>``, ``<item>`` and
        ``correct`` (a boolean).
    model : str
        The model column (at least two models).
    item : str
        The item column: models are compared on the same items, each once per model.
    group : str, optional
        The cluster column (one cluster per item).
    level : float, default 0.95
        The confidence level of the interval.
    p_adjust : {"holm", "bh", "bonferroni", None}, default "holm"
        The adjustment across the pairs of models.
    permutations : int, default 10000
        Random sign vectors of the cluster test.
    seed : int, default 42
        The random seed of the cluster test (0 or more).
    intervals : {"marginal", "simultaneous"}, default "marginal"
        ``'marginal'``: each pair's interval holds ``level`` on its own.  ``'simultaneous'``: the
        K(K-1)/2 intervals hold ``level`` together: difference -/+ c se, se the cluster-robust
        (CR1) SE of the mean per-item difference (each item its own cluster without ``group``),
        c the ``level`` quantile of the largest studentized difference over the pairs in a joint
        cluster bootstrap (the same resamples of clusters for every model; ``replicates`` of
        them), as :func:`embsql.compare_retrieval` builds them.  ``se`` is then that CR1 SE and the
        table gains a column ``interval`` = ``'simultaneous'``; the p-values are unchanged.  All
        the intervals held together in {{figure rank_sets_families.accuracy_simultaneous range}} of
        simulated data sets at 95% (3 to 10 models; validation/rank_sets_families.py).
    replicates : int, default 2000
        The joint cluster bootstrap resamples of ``intervals='simultaneous'`` (``permutations`` are
        the sign-flip test's only).

    Returns
    -------
    ResultTable
        One row per pair of models (in model order): ``model_a``, ``model_b``, ``accuracy_a``,
        ``accuracy_b``, ``difference`` (a - b), ``se``, ``ci_low``, ``ci_high``, ``p_value``
        (mid-p McNemar, or the cluster test's), ``p_exact`` (the exact McNemar p; NULL with
        ``group``), ``p_adjusted`` (of ``p_value``), ``p_adjust``, ``items``, ``groups`` (NULL without ``group``), ``a_only``
        and ``b_only`` (the discordant items), ``permutations`` (NULL for McNemar), ``method``
        ("mid-p McNemar", "cluster sign-flip" or "exact cluster sign-flip"), ``level``,
        ``calibrated`` (30 or more items or clusters).

    Raises
    ------
    InputError
        An item one model lacks (item.missing), an item twice for a model (label.duplicate), a NULL
        ``correct`` (value.null), an item in two clusters, a bad level, p_adjust, permutations or
        seed; fewer than two models (model.too_few).
    BadLabelError, ColumnNotFoundError
        A NULL model, item or group; a missing column.

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> predictions = pa.table({"model": ["a"] * 6 + ["b"] * 6, "item": list("uvwxyz") * 2,
    ...                         "correct": [True] * 6 + [True, False, False, False, True, True]})
    >>> row = embsql.compare_classification(embsql.connect(), predictions, model="model", item="item")
    >>> row.difference, row.a_only, row.b_only, row.p_value, row.p_exact
    (0.5, 3, 0, 0.125, 0.25)
    """
    level = check_level(level)
    columns = {"model": model, "item": item, "correct": "correct", **({"group": group} if group else {})}
    values, name = prediction_columns(con, predictions, columns)
    models, clusters = align(values["model"], values["item"], values["correct"], values.get("group"),
                             f"predictions {name!r}")
    rows = paired_rows(models, clusters, level=level, p_adjust=p_adjust, permutations=permutations, seed=seed,
                       intervals=intervals, replicates=replicates)
    shown = COMPARE_COLUMNS + (("interval",) if intervals == "simultaneous" else ())
    return ResultTable.from_dicts("compare_classification", shown, rows)


def prediction_columns(con: duckdb.DuckDBPyConnection, predictions: object,
                       columns: dict[str, str]) -> tuple[dict[str, list], str]:
    """({role: the values of its column}, the table's name) of a per-item predictions table, each
    column of ``columns`` (role -> column name) required."""
    with ExitStack() as stack:
        name = stack.enter_context(local_source(con, arrow_of(predictions)))
        table = resolve(con, name)
        for role, column in columns.items():
            table.require(column, role)
        query = exp.select(*(exp.column(c, quoted=True).as_(f"__emb_{r}") for r, c in columns.items())
                           ).from_(table.table.copy())
        data = con.sql(query.sql("duckdb")).to_arrow_table()
    return {role: data.column(f"__emb_{role}").to_pylist() for role in columns}, table.name
