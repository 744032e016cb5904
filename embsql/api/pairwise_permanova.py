"""Python face of pairwise PERMANOVA (kernels and what they share in embsql.core.pairwise_permanova)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import duckdb

from embsql.core.labels import clean_labels
from embsql.core.pairwise_permanova import PAIRWISE_COLUMNS, pairwise_rows
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import Skipped, unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name


def pairwise_permanova(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
                       group_pairs: Literal["all"] | Sequence[tuple[object, object]] = "all",
                       p_adjust: str | None = "holm", permutations: int = 999, seed: int = 42,
                       model: str | None = None, progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """PERMANOVA on the rows of every pair of groups, with p-values adjusted over the pairs.

    Each pair gives the numbers :func:`embsql.permanova` gives on the two groups' rows with the
    same seed.  Which groups differ, after an overall test says that some do.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (a name, a file or a frame, as for :func:`embsql.anova`).
    group : str
        The group column.
    vector : str
        The vector column (its vectors are scaled to unit length).
    group_pairs : 'all' or sequence of (group, group)
        Which pairs of groups to compare: ``'all'`` (default) or a list of pairs of group labels.
    p_adjust : str or None
        The adjustment over the pairs (within each model): ``'holm'`` (default), ``'bh'``
        (Benjamini-Hochberg), ``'bonferroni'`` or None.
    permutations : int, default 999
        The number of permutations per pair (0 for R² and F only).
    seed : int, default 42
        The random seed (0 or more).
    model : str, optional
        The model column: one set of pairs per value, under this column's name.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per pair of groups (per model, the model column first when ``model`` is given):
        ``group_a``, ``group_b``, ``items`` (of the two groups), ``r2`` and ``f`` (of the pair),
        ``p_value`` (its permutation p-value) and ``p_adjusted``.

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, an unknown ``p_adjust``, a pair naming a
        group the column lacks, ``column.missing``, ``column.collision``, ``label.null``,
        ``vector.*``, ``design.*``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 3) AS topic, [cos(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5)), "
    ...                 "sin(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5))] AS embedding FROM range(24) t(i)")
    >>> result = embsql.pairwise_permanova(con, "ex", group="topic", vector="embedding", permutations=99)
    >>> [(row["group_a"], row["group_b"], row["p_adjusted"]) for row in result.to_dicts()]
    [('g0', 'g1', 0.03), ('g0', 'g2', 0.03), ('g1', 'g2', 0.03)]
    """
    check_model_name(model, PAIRWISE_COLUMNS, "pairwise_permanova")
    with opened(con, source) as table:
        parts = unit_rows(con, table, group, vector, model=model, skip=(skipped := Skipped.asked(bad_rows)))
    rows = []
    for value, part in parts:
        labels = clean_labels(part.labels, group)
        with progress_bar("pairs", 1, progress if permutations else False) as tick:
            found = pairwise_rows(labels, part.unit, pairs=group_pairs, p_adjust=p_adjust, permutations=permutations,
                                  seed=seed, group=group, progress=tick)
        rows += [(value, row) for row in found]
    return Skipped.attached(skipped, ResultTable.of_models("pairwise_permanova", model, PAIRWISE_COLUMNS, rows), model)
