"""The retrieval section of the report: the four layers per model, with the pairing and the dose.

Reads the two tables once (embsql.io.retrieval_rows) and computes from the core kernels; the
public face embsql.retrieval_layers is this module's, and the report's retrieval section calls it too.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import duckdb

from embsql.core.dose import DOSE_COLUMNS, dose_rows
from embsql.core.input_output import PAIRING_COLUMNS, pairing_inputs, pairing_rows
from embsql.core.margins import check_scope, model_margins
from embsql.core.query_summary import ALIGNMENT_COLUMNS, RANK_COLUMNS, summary_row
from embsql.core.structure import STRUCTURE_COLUMNS, structure_row
from embsql.errors import DesignError
from embsql.io.retrieval_rows import Columns, load_models, scalar_icc
from embsql.io.sources import local_source, shown_name
from embsql.reporting import cautions
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable
from embsql.vocabulary import refuse

if TYPE_CHECKING:
    from typing_extensions import Never  # typing.Never from Python 3.11

# the settings of the report's [report.retrieval] table that the layers take (the evaluation also reads relevance)
LAYER_SETTINGS = ("qid", "group", "strength", "positive", "vector", "doc_id", "doc_group", "doc_vector", "scope",
                  "alpha")
T = TypeVar("T")


def pairing_table(con: duckdb.DuckDBPyConnection, per_model: list[tuple[Any, Any, Any]]) -> list[dict[str, Any]]:
    """Rows of PAIRING_COLUMNS: the input side from the core, the output ICC from emb_icc."""
    inputs, scalar = pairing_inputs(per_model)
    return pairing_rows(per_model, inputs, scalar_icc(con, scalar))


TITLES = {"query_stability": "1. Query stability (paraphrase groups)",
          "document_structure": "2. Document structure (topic groups)",
          "alignment": "3. Alignment: normalised margin m",
          "rank": "4. Rank: top-1, recall@k, MRR",
          "pairing": "Input/output pairing",
          "dose": "Dose: W~_q by paraphrase level"}


def retrieval_layers(con: duckdb.DuckDBPyConnection, queries: Any, docs: Any, *, scope: str = "corpus",
                     qid: str = "qid", group: str = "group", strength: str | None = None, positive: str = "positive",
                     vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
                     doc_vector: str = "vector", model: str | None = None, permutations: int = 999,
                     seed: int = 42, alpha: float = 0.05, **removed: Never) -> ReportResult:
    """The four retrieval layers per model in one report, with the input/output pairing and, given a
    strength column, the dose.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries, docs : str or DataFrame
        The queries table (qid, paraphrase group, positive, vector; optional strength) and the
        documents table (doc_id, topic group, vector): names, files or in-memory tables.
    scope : {'corpus', 'group'}
        Which documents are distractors: all, or those of the positive's topic group.
    qid, group, strength, positive, vector : str
        The queries' columns (``strength``: the paraphrase strength, which adds the dose section).
    doc_id, doc_group, doc_vector : str
        The documents' columns.
    model : str, optional
        The model column of both tables: every figure is per model.
    permutations, seed, alpha : int, int, float
        The dose's trend test: permutations (0 leaves the dose out), seed, and the level of ``dose_works``.

    Returns
    -------
    ReportResult
        The summary (one row per model: queries, docs, r2_queries, w_tilde_q, r2_docs, w_tilde_g,
        m_median, top1, mrr) and the sections query_stability, document_structure, alignment,
        rank, pairing and dose.  Every table's first column is ``model``, as in every report.

    Raises
    ------
    ArgumentError
        For a keyword it does not take (an old spelling such as ``qid_col=`` names the new one).
    InputError
        For a column that is missing or of the wrong type, or a bad scope.

    Notes
    -----
    A layer whose data do not support it (documents without topic groups, paraphrase groups of
    one query, one query per group and strength) is left out with a note in ``meta["notes"]``
    that names the table and column and says what would make it work; the other layers still run.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> layers = embsql.retrieval_layers(con, "queries.parquet", "docs.parquet", model="model")  # doctest: +SKIP
    >>> layers["rank"].to_pandas()                                                             # doctest: +SKIP
    """
    refuse(retrieval_layers, removed)
    check_scope(scope)
    names = {"qid": qid, "group": group, "strength": strength, "positive": positive, "vector": vector,
             "doc_id": doc_id, "doc_group": doc_group, "doc_vector": doc_vector, "model": model}
    with ExitStack() as stack:
        local = [stack.enter_context(local_source(con, table)) for table in (queries, docs)]
        return _layers(con, local[0], local[1], names, scope=scope, permutations=permutations, seed=seed, alpha=alpha)


def _layers(con: duckdb.DuckDBPyConnection, queries: str, docs: str, names: dict[str, Any], *, scope: str,
            permutations: int, seed: int, alpha: float) -> ReportResult:
    """retrieval_layers on tables that are names on ``con`` (``names``: its column arguments)."""
    group, strength, doc_group = names["group"], names["strength"], names["doc_group"]
    cols = Columns(*(names[key] for key in ("qid", "group", "strength", "positive", "vector", "doc_id", "doc_group",
                                            "doc_vector", "model")))
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TITLES}
    left_out: dict[str, str] = {}
    shown = {"queries": shown_name(queries), "docs": shown_name(docs)}
    why = {
        "query_stability": f"queries {shown['queries']!r}: paraphrase groups in column {group!r} need two or more "
                           "queries each for R² and W̃_q",
        "document_structure": f"documents {shown['docs']!r}: topic groups in column {doc_group!r} need two or more "
                              "documents each (give the documents a topic column, doc_group=...)",
        "pairing": f"queries {shown['queries']!r}: the pairing compares paraphrase groups (column {group!r}), which "
                   "need two or more queries each",
        "dose": f"queries {shown['queries']!r}: the dose needs two or more queries of one paraphrase group (column "
                f"{group!r}) at each of two or more strengths (column {strength!r})",
    }
    if strength is not None and not permutations:
        left_out["dose"] = (f"queries {shown['queries']!r}: the dose's trend test over column {strength!r} needs "
                            "permutations > 0 (0 were asked for)")

    def attempt(name: str, compute: Callable[..., T], *args: Any) -> T | None:
        """Run one layer's computation; a DesignError leaves that layer out, with a note."""
        if name in left_out:
            return None
        try:
            return compute(*args)
        except DesignError as error:
            left_out[name] = f"{why[name]}; here {error}"
            return None

    summary: list[dict[str, Any]] = []
    per_model: list[tuple[Any, Any, Any]] = []
    for m, q, d in load_models(con, queries, docs, cols, query_group=True, query_level=strength is not None,
                               doc_group=True):
        assert d is not None and q.positive is not None and q.group is not None   # docs, positives, groups read
        result = model_margins(q.ids, q.positive, q.unit, d.keys, d.group, d.unit, scope, m)
        per_model.append((m, q, result))
        stability = attempt("query_stability", structure_row, m, q.group, q.unit) or {}
        structure = attempt("document_structure", structure_row, m, d.group, d.unit) or {}
        figures = {"model": m, **summary_row(q.group.tolist(), result, scope)}
        tables["query_stability"].append(stability)
        tables["document_structure"].append(structure)
        tables["alignment"].append(figures)
        tables["rank"].append(figures)
        if strength is not None:
            tables["dose"] += attempt("dose", dose_rows, m, q, d, permutations, seed, alpha) or []
        summary.append({"model": m, "queries": len(q.ids), "docs": len(d.ids), "r2_queries": stability.get("r2"),
                        "w_tilde_q": stability.get("w_tilde_mean"), "r2_docs": structure.get("r2"),
                        "w_tilde_g": structure.get("w_tilde_mean"), "m_median": figures["m_median"],
                        "top1": figures["top1"], "mrr": figures["mrr"]})
    tables["pairing"] = attempt("pairing", pairing_table, con, per_model) or []
    columns = {"query_stability": STRUCTURE_COLUMNS, "document_structure": STRUCTURE_COLUMNS,
               "alignment": ALIGNMENT_COLUMNS, "rank": RANK_COLUMNS, "pairing": PAIRING_COLUMNS, "dose": DOSE_COLUMNS}
    wanted = [name for name in TITLES if (name != "dose" or strength is not None) and name not in left_out]
    sections = tuple(Section(name, TITLES[name], ResultTable.from_dicts(name, columns[name], tables[name]),
                             cautions.RETRIEVAL[name]) for name in wanted)
    summary_table = ResultTable.from_dicts("retrieval", ("model", "queries", "docs", "r2_queries", "w_tilde_q",
                                                         "r2_docs", "w_tilde_g", "m_median", "top1", "mrr"), summary)
    notes = [f"{TITLES[name].split('. ')[-1]} left out: {text}" for name, text in left_out.items()]
    meta = {"queries": shown["queries"], "docs": shown["docs"], "scope": scope, "columns": names,
            "permutations": permutations, "seed": seed, "alpha": alpha, **({"notes": notes} if notes else {})}
    return ReportResult("Retrieval diagnostics: four layers", summary_table, sections, meta)
