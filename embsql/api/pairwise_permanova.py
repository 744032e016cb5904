"""Python face of pairwise PERMANOVA (kernels and what they share in embsql.core.pairwise_permanova)."""

from __future__ import annotations

import duckdb

from embsql.core.labels import clean_labels
from embsql.core.pairwise_permanova import PAIRWISE_COLUMNS, pairwise_rows
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable


@accepts_frames()
def pairwise_permanova(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str, pairs="all",
                       p_adjust: str | None = "holm", permutations: int = 999, seed: int = 42,
                       model: str | None = None, progress: bool | None = None) -> ResultTable:
    """PERMANOVA on the rows of every pair of groups (or of the ``pairs`` listed), R² and pseudo-F
    of the pair, its permutation p-value and the p-value adjusted over the pairs (``p_adjust``:
    'holm', 'bh' (Benjamini-Hochberg), 'bonferroni' or None).  Each pair gives the numbers
    ``embsql.permanova`` gives on the two groups' rows with the same seed.  With ``model=``: one
    set of pairs per model, adjusted within the model, the model column first under its own name.
    """
    rows = []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=model):
        labels = clean_labels(part.labels, group)
        with progress_bar("pairs", 1, progress if permutations else False) as tick:
            found = pairwise_rows(labels, part.unit, pairs=pairs, p_adjust=p_adjust, permutations=permutations,
                                  seed=seed, group=group, progress=tick)
        rows += [{**({model: value} if model else {}), **row} for row in found]
    return ResultTable.from_dicts("pairwise_permanova", ((model,) if model else ()) + PAIRWISE_COLUMNS, rows)
