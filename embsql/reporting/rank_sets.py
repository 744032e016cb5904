"""The report's ``ranking`` section: the models' simultaneous rank confidence sets, one block per
evaluation family the report ran (embsql.core.model_ranking, the kernel of embsql.rank_models).

Each family's builder hands its rows (RANK_COLUMNS, one per model) to a :class:`Blocks`, named by
the metric they rank: structure by R² (from the group sums the report already has), the retrieval
evaluation by nDCG@10, human similarity judgements by Spearman, classification by k-NN accuracy.
The report puts the section right after its verdict; nothing averages metrics of different kinds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from embsql.core.model_ranking import RANK_COLUMNS
from embsql.reporting import cautions
from embsql.reporting.report_result import Section
from embsql.result_table import ResultTable

NAME = "ranking"
TITLE = "Rank confidence sets of the models"
COLUMNS = ("metric", "model") + RANK_COLUMNS
# a block's metric, as the verdict and the chart name it, from the statistic it ranks
METRIC_NAMES = {"r2": "R²", "ndcg@10": "nDCG@10", "spearman": "Spearman", "pearson": "Pearson",
                "accuracy": "accuracy", "macro_f1": "macro-F1", "cka": "CKA"}


def metric_name(statistic: str) -> str:
    return METRIC_NAMES.get(statistic, statistic)


@dataclass
class Blocks:
    """The ranking rows of a report, block by block in the order the families ran."""

    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, ranked: list[dict[str, Any]]) -> None:
        """One family's rows (RANK_COLUMNS with ``model``), ordered by rank (then by rank set and
        model), so the table and the chart read from the first; a block of fewer than two models is
        no ranking."""
        if len(ranked) >= 2:
            ordered = sorted(ranked, key=lambda r: (r["rank"], r["rank_low"], r["rank_high"], str(r["model"])))
            self.rows += [{"metric": metric_name(str(row["statistic"])), **row} for row in ordered]

    def section(self) -> Section | None:
        if not self.rows:
            return None
        return Section(NAME, TITLE, ResultTable.from_dicts(NAME, COLUMNS, self.rows), cautions.RANKING)


def first(sections: list[Section], blocks: Blocks) -> list[Section]:
    """``sections`` with the ranking section (every block) first: it comes right after the verdict."""
    rest = [s for s in sections if s.name != NAME]
    found = blocks.section()
    return ([found] if found is not None else []) + rest
