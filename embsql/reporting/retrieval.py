"""The retrieval section of the report: the four layers per model, with the pairing and the dose.

Reads the two tables once (embsql.io.retrieval_rows) and computes from the core kernels; the
public face embsql.retrieval_layers is this module's, and the report's retrieval section calls it too.
"""

from __future__ import annotations

import duckdb

from embsql.core.dose import DOSE_COLUMNS, dose_rows
from embsql.core.input_output import PAIRING_COLUMNS, pairing_inputs, pairing_rows
from embsql.core.margins import check_scope, model_margins
from embsql.core.query_summary import ALIGNMENT_COLUMNS, RANK_COLUMNS, summary_row
from embsql.core.structure import STRUCTURE_COLUMNS, structure_row
from embsql.errors import DesignError
from embsql.io.retrieval_rows import Columns, load_models, scalar_icc
from embsql.io.sources import TableLike, local_sources, shown_name
from embsql.reporting import cautions
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable


def pairing_table(con, per_model) -> list[dict]:
    """Rows of PAIRING_COLUMNS: the input side from the core, the output ICC from emb_icc."""
    inputs, scalar = pairing_inputs(per_model)
    return pairing_rows(per_model, inputs, scalar_icc(con, scalar))


TITLES = {"query_stability": "1. Query stability (paraphrase groups)",
          "document_structure": "2. Document structure (topic groups)",
          "alignment": "3. Alignment: normalised margin m",
          "rank": "4. Rank: top-1, recall@k, MRR",
          "pairing": "Input/output pairing",
          "dose": "Dose: W~_q by paraphrase level"}


def retrieval_layers(con: duckdb.DuckDBPyConnection, queries: TableLike, docs: TableLike, *, scope: str = "corpus",
                     qid: str = "qid", group: str = "group", level: str | None = None, positive: str = "positive",
                     vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
                     doc_vector: str = "vector", model: str | None = None, permutations: int = 999,
                     seed: int = 42, alpha: float = 0.05) -> ReportResult:
    """The four layers per model in one report, with the input/output pairing and, given a level
    column, the dose.  Every section table starts with the model column.

    A layer whose data do not support it (documents without topic groups, paraphrase groups of
    one query, one query per group and level) is left out with a note in ``meta["notes"]`` that
    names the table and column and says what would make it work; the other layers still run."""
    with local_sources(con, queries, docs) as (queries, docs):
        check_scope(scope)
        cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
        tables: dict[str, list[dict]] = {name: [] for name in TITLES}
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
                    f"{group!r}) at each of two or more levels (column {level!r})",
        }
        if level is not None and not permutations:
            left_out["dose"] = (f"queries {shown['queries']!r}: the dose's trend test over column {level!r} needs "
                                "permutations > 0 (0 were asked for)")

        def attempt(name, compute, *args):
            """Run one layer's computation; a DesignError leaves that layer out, with a note."""
            if name in left_out:
                return None
            try:
                return compute(*args)
            except DesignError as error:
                left_out[name] = f"{why[name]}; here {error}"
                return None

        summary, per_model = [], []
        for m, q, d in load_models(con, queries, docs, cols, query_group=True, query_level=level is not None, doc_group=True):
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
            if level is not None:
                tables["dose"] += attempt("dose", dose_rows, m, q, d, permutations, seed, alpha) or []
            summary.append({"model": m, "queries": len(q.ids), "docs": len(d.ids), "r2_queries": stability.get("r2"),
                            "w_tilde_q": stability.get("w_tilde_mean"), "r2_docs": structure.get("r2"),
                            "w_tilde_g": structure.get("w_tilde_mean"), "m_median": figures["m_median"],
                            "top1": figures["top1"], "mrr": figures["mrr"]})
        tables["pairing"] = attempt("pairing", pairing_table, con, per_model) or []
        columns = {"query_stability": STRUCTURE_COLUMNS, "document_structure": STRUCTURE_COLUMNS,
                   "alignment": ALIGNMENT_COLUMNS, "rank": RANK_COLUMNS, "pairing": PAIRING_COLUMNS, "dose": DOSE_COLUMNS}
        wanted = [name for name in TITLES if (name != "dose" or level is not None) and name not in left_out]
        sections = tuple(Section(name, TITLES[name], ResultTable.from_dicts(name, columns[name], tables[name]),
                                 cautions.RETRIEVAL[name]) for name in wanted)
        summary_table = ResultTable.from_dicts("retrieval", ("model", "queries", "docs", "r2_queries", "w_tilde_q",
                                                             "r2_docs", "w_tilde_g", "m_median", "top1", "mrr"), summary)
        notes = [f"{TITLES[name].split('. ')[-1]} left out: {text}" for name, text in left_out.items()]
        meta = {"queries": shown["queries"], "docs": shown["docs"], "scope": scope, "columns": cols.__dict__.copy(),
                "permutations": permutations, "seed": seed, "alpha": alpha, **({"notes": notes} if notes else {})}
        return ReportResult("Retrieval diagnostics: four layers", summary_table, sections, meta)
