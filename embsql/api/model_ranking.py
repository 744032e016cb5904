"""Python face of the ranking of K models: simultaneous rank confidence sets (embsql.core.model_ranking).

emb_rank_models (sql/python/72_model_ranking.sql) calls the same kernel through udfs/model_ranking.py.
"""

from __future__ import annotations

from contextlib import ExitStack

import duckdb

from embsql.api.classification import prediction_columns
from embsql.api.compare_retrieval import evaluation_columns
from embsql.api.driver import model_rows
from embsql.core.classification import RANK_STATISTICS as CLASSIFICATION_STATISTICS
from embsql.core.classification import rank_predictions
from embsql.core.geometry import rank_cka_rows
from embsql.core.model_comparison import canonical, check_same_groups
from embsql.core.model_ranking import RANK_COLUMNS, structure_rows
from embsql.core.resampling import STATISTICS
from embsql.core.retrieval_comparison import rank_metric
from embsql.errors import InputError, fail
from embsql.io.retrieval_tables import Queries, check_model
from embsql.io.similarity_pairs import ranking_rows, read_models
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import Skipped, group_sums
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name


def rank_models(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str | None = None,
                vector: str | None = None, model: str | None = None, statistic: str | None = None,
                queries: Queries | object | None = None, level: float = 0.95, replicates: int = 2000, seed: int = 42,
                sizes: str = "auto", pairs: TableLike | None = None, reference: object = None,
                bad_rows: str = "error") -> ResultTable:
    """Rank K models by a statistic, with simultaneous confidence sets for their ranks.

    Two kinds of source.  **Structure** (with ``vector=``): one row per model and item, ranked by
    a structure statistic (R² by default) of the groups.  **Retrieval** (without ``vector=``): a
    per-query evaluation, as ``evaluate(..., per_query=True)`` returns it, ranked by one of its
    metrics (``statistic='ndcg@10'`` by default; any metric of the evaluation), the queries
    clustered by paraphrase group (``queries=`` or ``group=``, as for
    :func:`embsql.compare_retrieval`).  A ranking is per statistic: nothing averages metrics.

    Three more families, each with the same output.  **Similarity** (``pairs=``, or
    ``statistic='spearman'`` or ``'pearson'``): the source holds the embeddings (one row per model
    and item, items in column ``item``), ``pairs`` the gold judgements (``item_a``, ``item_b``,
    ``score``), and the models rank by the correlation of their cosines with the score on the pairs
    every model scores.  **Classification** (``statistic='accuracy'`` or ``'macro_f1'``, no
    ``vector=``): the source holds per-item predictions as ``knn_classify(..., per_item=True)``
    gives them (``model``, ``item``, ``correct``; ``label`` and ``predicted`` for macro-F1), the
    items clustered by ``group=`` when given.  **Agreement with a reference model**
    (``statistic='cka'``, ``reference=``, with ``vector=``): the debiased CKA of each other model
    with the reference on the items (column ``item``), clustered by ``group=`` when given, as
    :func:`embsql.compare_cka` computes it.

    Each model gets a set of ranks ``[rank_low, rank_high]``; all K true ranks lie in their sets
    together with probability ``level`` (rank 1 is the largest statistic; the set of a model tied
    with others in truth holds every rank of the tie: no pair is ordered falsely).  ``top`` marks
    the confidence set for the best: the models that could be first.  The sets come from simultaneous intervals for every pairwise
    difference (Mogstad, Romano, Shaikh and Wilhelm, "Inference for Ranks", 2024, with their
    step-down), and those from the paired cluster bootstrap of :func:`embsql.compare_structure` run jointly
    for all models: the same resamples of groups for every model, each difference studentised by
    its own jackknife SE.  A model is ranked above another only when the family of comparisons
    shows it better.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (a name, a file or a frame, as for :func:`embsql.anova`):
        one row per model and item (structure), or a per-query evaluation with the columns
        ``<model>``, ``qid``, ``metric`` and ``value`` (retrieval).
    group : str
        Structure: the group column; models are paired by group label (every model needs every
        group).  Retrieval (optional): the evaluation's paraphrase-group column.
    vector : str, optional
        Structure: the vector column; vectors are scaled to unit length (models may differ in
        dimension).  Leave it out to rank a retrieval evaluation.
    model : str
        The model column (two or more models); for an evaluation ``'model'`` by default.
    statistic : str
        Structure: ``'r2'`` (default), ``'r2_adj'``, ``'f'``, ``'v'``, ``'w_bar'`` or ``'icc'``.
        Retrieval: a metric of the evaluation, ``'ndcg@10'`` by default.
    queries : Queries or source, optional
        Retrieval: a queries table whose group column gives each qid's paraphrase group (instead
        of ``group=``; neither: each query is its own cluster).
    level : float
        The simultaneous confidence level, strictly between 0 and 1 (default 0.95).
    replicates : int
        The number of joint bootstrap replicates (default 2000).
    seed : int
        The random seed (0 or more).
    sizes : str
        Structure: ``'fixed'``, ``'random'`` or ``'auto'``, as for :func:`embsql.jackknife`.
    pairs : str or table object, optional
        Similarity: the gold pairs (columns ``item_a``, ``item_b``, ``score``).
    reference : object, optional
        CKA: the reference model (a value of the model column), which is not ranked.
    bad_rows : {"error", "skip"}, default "error"
        A structure statistic: what a NULL, zero or non-finite vector does.  ``"error"`` refuses it,
        naming its model, group and row (counted from 1); ``"skip"`` leaves its row out and counts it
        in the result's ``skipped`` table (per model: ``skipped_null``, ``skipped_zero``,
        ``skipped_nonfinite``), as :func:`embsql.jackknife` does.

    Returns
    -------
    ResultTable
        One row per model (in model order), the model column first under its own name, then
        ``statistic``, ``estimate``, ``ci_low`` and ``ci_high`` (the model's own interval, as
        :func:`embsql.bootstrap` gives it; for retrieval the mean of the metric over the queries
        with its cluster-robust t interval), ``rank`` (by the estimate, 1 = largest; ties share the
        smaller rank), ``rank_low``, ``rank_high``, ``top``, ``level`` and ``calibrated`` (true
        for R² from 30 groups on and for retrieval metrics from 30 query clusters on, where
        validation/rank_sets.py measured the family-wise coverage, {{figure rank_sets.coverage range}} at 95%
        with K = 3, 5 and 10 models; for accuracy from 30 item clusters on, where
        validation/rank_sets_families.py measured {{figure rank_sets_families.accuracy_sets range}}; for
        macro-F1 from 100 on ({{figure rank_sets_families.macro_f1_sets_G100 range}}; at 30 it fell to
        {{figure rank_sets_families.macro_f1_sets low}}); for Spearman and Pearson from 30 distinct items
        on ({{figure rank_sets_families.spearman_sets range}} and
        {{figure rank_sets_families.pearson_sets range}}, five pairs per item); for CKA from 30 groups,
        or items, on ({{figure rank_sets_families.cka_sets range}}); false otherwise).  For retrieval the
        resampling is the cluster bootstrap of the queries' paraphrase groups, the same resamples
        for every model, each difference studentized by its own cluster-robust (CR1) SE; so for
        accuracy (each item's 0 or 1), where ci_low/ci_high are the mean's CR1 t interval.  For
        similarity the joint draws are normal, with the correlations' item-clustered covariance
        (each pair studentized by :func:`embsql.compare_similarity`'s SE; ci_low/ci_high the
        Fisher interval of :func:`embsql.similarity_eval`); for macro-F1 and CKA they are normal
        with the delete-one jackknife's covariance over the items or groups (ci_low/ci_high: the
        figure -/+ t times its jackknife SE).

    Raises
    ------
    ArgumentError
        ``argument.unknown``.
    InputError
        ``model.too_few`` (one model), ``column.collision`` (a model column named like an output
        column), ``argument.*``, ``column.missing``, ``label.null``, ``vector.*``, ``design.*``, a group
        that some model lacks; for an evaluation ``metric.absent``, a model without a value for a
        qid another model has, a qid in two groups, both ``queries=`` and ``group=``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'g' || (i % 8) AS topic, "
    ...                 "[cos(i % 8 + s * sin(i)), sin(i % 8 + s * sin(i))] AS embedding "
    ...                 "FROM range(64) t(i), (VALUES ('tight', 0.1), ('mid', 0.6), ('loose', 1.5)) m(m, s)")
    >>> result = embsql.rank_models(con, "ex", group="topic", vector="embedding", model="model", replicates=500)
    >>> [(r["model"], r["rank"], r["rank_low"], r["rank_high"], r["top"]) for r in result.to_dicts()]
    [('loose', 3, 3, 3, False), ('mid', 2, 2, 2, False), ('tight', 1, 1, 1, True)]

    A retrieval evaluation (per query; here a random score per query and model):

    >>> import pyarrow as pa
    >>> evaluation = pa.table({"model": ["a"] * 40 + ["b"] * 40 + ["c"] * 40, "qid": list(range(40)) * 3,
    ...                        "metric": ["ndcg@10"] * 120,
    ...                        "value": [0.9 - (i % 5) / 10 for i in range(40)] + [0.5 + (i % 3) / 10 for i in range(80)]})
    >>> ranked = embsql.rank_models(con, evaluation, statistic="ndcg@10", replicates=500)
    >>> [(r["model"], r["rank_low"], r["rank_high"], r["top"]) for r in ranked.to_dicts()]
    [('a', 1, 1, True), ('b', 2, 3, False), ('c', 2, 3, False)]
    """
    if bad_rows != "error" and (vector is None or pairs is not None or reference is not None
                                or statistic in (*SIMILARITY_STATISTICS, "cka")):
        raise InputError("bad_rows= is for rank_models by a structure statistic (with vector=, group= and model=)",
                         kind="argument.bad_rows")
    if statistic in SIMILARITY_STATISTICS or pairs is not None:
        return _rank_similarity(con, source, pairs, vector=vector, model=model, statistic=statistic or "spearman",
                                level=level, replicates=replicates, seed=seed)
    if statistic == "cka" or reference is not None:
        if vector is None or model is None or reference is None or statistic not in (None, "cka"):
            raise InputError("rank_models by CKA with a reference model takes statistic='cka', vector=, model= and "
                             "reference= (the source has one row per model and item, items in column 'item')")
        models, groups = model_rows(con, source, "item", model, vector, group)
        rows = rank_cka_rows(models, reference, groups=groups, group=group or "group", model=model, level=level,
                             replicates=replicates, seed=seed)
        return ResultTable.of_models("rank_models", model, RANK_COLUMNS, [(row["model"], row) for row in rows])
    if statistic in CLASSIFICATION_STATISTICS:
        if vector is not None:
            raise InputError(f"rank_models by {statistic} reads per-item predictions (columns model, item, correct; "
                             "label and predicted for macro_f1, as knn_classify(..., per_item=True) gives them), "
                             "not vectors: leave out vector=")
        return _rank_predictions(con, source, model="model" if model is None else model, group=group,
                                 statistic=statistic, level=level, replicates=replicates, seed=seed)
    if vector is None:
        return _rank_evaluation(con, source, group=group, model="model" if model is None else model,
                                metric="ndcg@10" if statistic is None else statistic, queries=queries, level=level,
                                replicates=replicates, seed=seed, sizes=sizes)
    if group is None or model is None or queries is not None:
        raise InputError("rank_models with vector= (a structure statistic) takes group= and model= (the group and "
                         "model columns) and no queries=")
    statistic = "r2" if statistic is None else statistic
    check_model_name(model, RANK_COLUMNS, "rank_models")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, model=model, skip=(skipped := Skipped.asked(bad_rows)))
    if len(parts) < 2:
        fail("model.too_few", column=f"model column {model!r}", models=len(parts), needs="a ranking")
    names = [value for value, _ in parts]
    sums = [canonical(s) for _, s in parts]
    for name, s in zip(names[1:], sums[1:]):
        check_same_groups(names[0], sums[0], name, s)
    rows = structure_rows(names, sums, statistic, replicates=replicates, seed=seed, level=level, sizes=sizes)
    return Skipped.attached(skipped, ResultTable.of_models("rank_models", model, RANK_COLUMNS,
                                                           [(row["model"], row) for row in rows]), model)


def _rank_evaluation(con: duckdb.DuckDBPyConnection, source: object, *, group: str | None, model: str, metric: str,
                     queries: object, level: float, replicates: int, seed: int, sizes: str) -> ResultTable:
    """rank_models on a per-query evaluation: one metric, the queries clustered by paraphrase group."""
    if metric in STATISTICS:
        raise InputError(f"statistic {metric!r} is a structure statistic: pass vector= (with group= and model=) "
                         "to rank models by it; without vector= the source is a per-query evaluation and the "
                         "statistic one of its metrics ('ndcg@10')")
    if sizes != "auto":
        raise InputError("sizes= is for a structure statistic (with vector=), not for a retrieval evaluation")
    check_model(model, RANK_COLUMNS, "rank_models")
    with ExitStack() as stack:
        rows, groups = evaluation_columns(con, stack, source, queries=queries, group=group, model=model,
                                          function="rank_models")
    ranked = rank_metric(rows["model"], rows["qid"], rows["metric"], rows["value"], groups, metric=metric,
                         replicates=replicates, seed=seed, level=level, what="evaluation")
    return ResultTable.of_models("rank_models", model, RANK_COLUMNS, [(row["model"], row) for row in ranked])


SIMILARITY_STATISTICS = ("spearman", "pearson")


def _rank_similarity(con: duckdb.DuckDBPyConnection, source: object, pairs: object, *, vector: str | None,
                     model: str | None, statistic: str, level: float, replicates: int, seed: int) -> ResultTable:
    """rank_models by agreement with human similarity judgements: ``source`` the embeddings (one row
    per model and item, items in column 'item'), ``pairs`` the gold pairs (item_a, item_b, score)."""
    if pairs is None or vector is None or statistic not in SIMILARITY_STATISTICS:
        raise InputError("rank_models by agreement with human similarity judgements takes pairs= (columns item_a, "
                         "item_b, score), vector= and statistic='spearman' or 'pearson'")
    column, judgements, scored = read_models(con, pairs, source, model=model, a="item_a", b="item_b", score="score",
                                             item="item", vector=vector, missing="error", output=RANK_COLUMNS,
                                             function="rank_models")
    if len(scored) < 2:
        fail("model.too_few", column=f"model column {column!r}", models=len(scored), needs="a ranking")
    rows = ranking_rows(judgements, scored, statistic, level=level, replicates=replicates, seed=seed)
    return ResultTable.of_models("rank_models", column or "model", RANK_COLUMNS, [(row["model"], row) for row in rows])


def _rank_predictions(con: duckdb.DuckDBPyConnection, source: object, *, model: str, group: str | None,
                      statistic: str, level: float, replicates: int, seed: int) -> ResultTable:
    """rank_models by classification accuracy or macro-F1 on per-item predictions, the models paired
    on their items and the items clustered by ``group`` (each its own cluster without)."""
    check_model(model, RANK_COLUMNS, "rank_models")
    wanted = ("correct",) if statistic == "accuracy" else ("label", "predicted")
    columns = {"model": model, "item": "item", **{c: c for c in wanted}, **({"group": group} if group else {})}
    values, name = prediction_columns(con, source, columns)
    rows = rank_predictions(values["model"], values["item"], values.get("group"), statistic=statistic,
                            correct=values.get("correct"), labels=values.get("label"), predicted=values.get("predicted"),
                            what=f"predictions {name!r}", column=f"model column {model!r}", level=level,
                            replicates=replicates, seed=seed)
    return ResultTable.of_models("rank_models", model, RANK_COLUMNS, [(row["model"], row) for row in rows])
