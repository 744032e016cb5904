"""The retrieval section of the report: the four layers per model, with the pairing and the dose.

Reads the two tables once (embsql.io.retrieval_rows) and computes from the core kernels; the
public face embsql.retrieval_layers (embsql.api.retrieval) opens its sources and calls
:func:`four_layers`, and so does the report's retrieval section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import duckdb

from embsql.core.dose import DOSE_COLUMNS, dose_rows
from embsql.core.input_output import PAIRING_COLUMNS, pairing_rows
from embsql.core.margins import Margins, check_scope, model_margins
from embsql.core.query_summary import ALIGNMENT_COLUMNS, RANK_COLUMNS, summary_row
from embsql.core.structure import STRUCTURE_COLUMNS, structure_row
from embsql.errors import DesignError
from embsql.io.retrieval_rows import Rows, load_models
from embsql.io.retrieval_tables import Docs, Queries
from embsql.io.sources import shown_name
from embsql.io.table_stream import Skipped, skip_note
from embsql.reporting import cautions
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

T = TypeVar("T")


TITLES = {"query_stability": "1. Query stability (paraphrase groups)",
          "document_structure": "2. Document structure (topic groups)",
          "alignment": "3. Alignment: normalised margin m",
          "rank": "4. Rank: top-1, recall@k, MRR",
          "pairing": "Input/output pairing",
          "dose": "Dose: W̃_q by paraphrase level"}


def four_layers(con: duckdb.DuckDBPyConnection, queries: Queries, docs: Docs, *, scope: str, model: str | None,
                permutations: int, seed: int, alpha: float, skip: Skipped | None = None) -> ReportResult:
    """The four layers per model in one report, with the input/output pairing and, given the queries'
    strength column, the dose (``queries`` and ``docs`` name tables on ``con``: Queries.on).  Every
    section table starts with the column ``model``, as every report's tables do.

    A layer whose data do not support it (documents without topic groups, paraphrase groups of
    one query, one query per group and strength) is left out with a note in ``meta["notes"]`` that
    names the table and column and says what would make it work; the other layers still run.
    With ``skip`` (bad_rows="skip"), the rows with an unusable vector are left out, counted there and
    said in a note."""
    check_scope(scope)
    group, strength, doc_group = queries.group, queries.strength, docs.group
    tables: dict[str, list[dict[str, Any]]] = {name: [] for name in TITLES}
    left_out: dict[str, str] = {}
    shown = {"queries": shown_name(queries.source), "docs": shown_name(docs.source)}
    why = {
        "query_stability": f"queries {shown['queries']!r}: paraphrase groups in column {group!r} need two or more "
                           "queries each for R² and W̃_q",
        "document_structure": f"documents {shown['docs']!r}: topic groups in column {doc_group!r} need two or more "
                              "documents each (give the documents a topic column, Docs(source, group=...))",
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
    per_model: list[tuple[object, Rows, Margins]] = []
    for m, q, d in load_models(con, queries, docs, model=model, query_group=True, query_strength=strength is not None,
                               doc_group=True, skip=skip):
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
    tables["pairing"] = attempt("pairing", pairing_rows, per_model) or []
    columns = {"query_stability": STRUCTURE_COLUMNS, "document_structure": STRUCTURE_COLUMNS,
               "alignment": ALIGNMENT_COLUMNS, "rank": RANK_COLUMNS, "pairing": PAIRING_COLUMNS, "dose": DOSE_COLUMNS}
    wanted = [name for name in TITLES if (name != "dose" or strength is not None) and name not in left_out]
    sections = tuple(Section(name, TITLES[name], ResultTable.from_dicts(name, columns[name], tables[name]),
                             cautions.RETRIEVAL[name]) for name in wanted)
    summary_table = ResultTable.from_dicts("retrieval", ("model", "queries", "docs", "r2_queries", "w_tilde_q",
                                                         "r2_docs", "w_tilde_g", "m_median", "top1", "mrr"), summary)
    notes = [f"{TITLES[name].split('. ')[-1]} left out: {text}" for name, text in left_out.items()]
    said = "" if skip is None else skip_note(skip.table(model), model)
    notes += [said] if said else []
    meta = {"queries": shown["queries"], "docs": shown["docs"], "scope": scope, "model": model,
            "columns": {"queries": queries.columns(), "docs": docs.columns()},
            "permutations": permutations, "seed": seed, "alpha": alpha, **({"notes": notes} if notes else {})}
    return ReportResult("Retrieval diagnostics: four layers", summary_table, sections, meta)
