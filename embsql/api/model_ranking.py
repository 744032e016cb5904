"""Python face of the ranking of K models: simultaneous rank confidence sets (embsql.core.model_ranking).

emb_rank_models (sql/python/72_model_ranking.sql) calls the same kernel through udfs/model_ranking.py.
"""

from __future__ import annotations

import duckdb

from embsql.core.model_comparison import canonical, check_same_groups
from embsql.core.model_ranking import RANK_COLUMNS, structure_rows
from embsql.errors import fail
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import group_sums
from embsql.result_table import ResultTable
from embsql.vocabulary import Never, check_model_name, refuse


def rank_models(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str, model: str,
                statistic: str = "r2", level: float = 0.95, replicates: int = 2000, seed: int = 42,
                sizes: str = "auto", **removed: Never) -> ResultTable:
    """Rank K models by a statistic, with simultaneous confidence sets for their ranks.

    Each model gets a set of ranks ``[rank_low, rank_high]``; all K true ranks lie in their sets
    together with probability ``level`` (rank 1 is the largest statistic; the set of a model tied
    with others in truth holds every rank of the tie: no pair is ordered falsely).  ``top`` marks
    the confidence set for the best: the models that could be first.  The sets come from simultaneous intervals for every pairwise
    difference (Mogstad, Romano, Shaikh and Wilhelm, "Inference for Ranks", 2024, with their
    step-down), and those from the paired cluster bootstrap of :func:`embsql.compare` run jointly
    for all models: the same resamples of groups for every model, each difference studentised by
    its own jackknife SE.  A model is ranked above another only when the family of comparisons
    shows it better.

    Parameters
    ----------
    con, source
        The connection, and the table read on it (a name, a file or a frame, as for :func:`embsql.anova`):
        one row per model and item.
    group : str
        The group column; models are paired by group label (every model needs every group).
    vector : str
        The vector column; vectors are scaled to unit length (models may differ in dimension).
    model : str
        The model column (two or more models).
    statistic : str
        ``'r2'`` (default), ``'r2_adj'``, ``'f'``, ``'v'``, ``'w_bar'`` or ``'icc'``.
    level : float
        The simultaneous confidence level, strictly between 0 and 1 (default 0.95).
    replicates : int
        The number of joint bootstrap replicates (default 2000).
    seed : int
        The random seed (0 or more).
    sizes : str
        ``'fixed'``, ``'random'`` or ``'auto'``, as for :func:`embsql.jackknife`.

    Returns
    -------
    ResultTable
        One row per model (in model order), the model column first under its own name, then
        ``statistic``, ``estimate``, ``ci_low`` and ``ci_high`` (the model's own interval, as
        :func:`embsql.bootstrap` gives it), ``rank`` (by the estimate, 1 = largest; ties share the
        smaller rank), ``rank_low``, ``rank_high``, ``top``, ``level`` and ``calibrated`` (true
        for R² from 30 groups on; false otherwise).

    Raises
    ------
    ArgumentError
        ``argument.unknown``.
    InputError
        ``model.too_few`` (one model), ``column.collision`` (a model column named like an output
        column), ``argument.*``, ``column.missing``, ``label.null``, ``vector.*``, ``design.*``, a group
        that some model lacks.

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
    """
    refuse(rank_models, removed)
    check_model_name(model, RANK_COLUMNS, "rank_models")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, by=model)
    if len(parts) < 2:
        fail("model.too_few", column=f"model column {model!r}", models=len(parts), needs="a ranking")
    names = [value for value, _ in parts]
    sums = [canonical(s) for _, s in parts]
    for name, s in zip(names[1:], sums[1:]):
        check_same_groups(names[0], sums[0], name, s)
    rows = structure_rows(names, sums, statistic, replicates=replicates, seed=seed, level=level, sizes=sizes)
    return ResultTable.of_models("rank_models", model, RANK_COLUMNS, [(row["model"], row) for row in rows])
