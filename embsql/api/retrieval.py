"""Retrieval diagnostics, the Python faces: margins, rank figures, dose, pairing and the
four-layer report, from a queries table and a documents table (one row per query / document).

queries: qid, paraphrase group, optional level, the id of its one correct document (positive), vector.
docs:    doc_id, topic group, vector.
Both may carry a model column: every figure is then per model, and each model's queries are
matched with that model's documents.

Reading is embsql.io.retrieval_rows; the numerics are embsql.core.margins (margins and ranks),
core.query_summary (rank and alignment summaries), core.structure (R2, W~, eff_dim), core.pairing
and core.dose; the four layers are assembled by embsql.reporting.retrieval (the report's section).
"""

from __future__ import annotations

import duckdb

from embsql.core.dose import DOSE_COLUMNS, dose_rows
from embsql.core.input_output import PAIRING_COLUMNS
from embsql.core.labels import sort_key
from embsql.core.margins import MARGIN_COLUMNS, check_scope, margin_dicts, model_margins, relevant_margins
from embsql.core.query_summary import ALIGNMENT_COLUMNS, RANK_COLUMNS, SUMMARY_COLUMNS, summary_row
from embsql.core.structure import STRUCTURE_COLUMNS, participation_ratio
from embsql.errors import InputError
from embsql.io.qrels import read_qrels
from embsql.io.retrieval_rows import Columns, Rows, load_models
from embsql.io.sources import local_sources
from embsql.reporting.cautions import RETRIEVAL as CAUTIONS
from embsql.reporting.cautions import RETRIEVAL_EFF_DIM as EFF_DIM_CAUTION
from embsql.reporting.cautions import RETRIEVAL_PAIRING as PAIRING_CAUTION
from embsql.reporting.retrieval import TITLES, pairing_table, retrieval_layers
from embsql.result_table import ResultTable

__all__ = ["ALIGNMENT_COLUMNS", "CAUTIONS", "DOSE_COLUMNS", "EFF_DIM_CAUTION", "MARGIN_COLUMNS", "PAIRING_CAUTION",
           "PAIRING_COLUMNS", "RANK_COLUMNS", "STRUCTURE_COLUMNS", "SUMMARY_COLUMNS", "TITLES", "Columns", "Rows",
           "dose", "margins", "pairing", "participation_ratio", "retrieval_layers", "retrieval_summary",
           "summary_row"]


def _margins_per_model(con, queries, docs, cols: Columns, scope: str, query_group: bool, query_level: bool = False,
                       qrels=None, relevance_threshold: int = 1):
    check_scope(scope)
    if qrels is not None and scope != "corpus":
        raise InputError("qrels work with scope 'corpus' (d- is the nearest non-relevant document of the corpus); "
                         "scope 'group' needs one positive per query")
    judged = None if qrels is None else read_qrels(con, qrels)
    for m, q, d in load_models(con, queries, docs, cols, query_group=query_group, query_level=query_level,
                               doc_group=scope == "group", positive=qrels is None):
        assert d is not None                          # docs are given
        if judged is None:
            assert q.positive is not None             # read when there are no qrels
            yield m, q, d, model_margins(q.ids, q.positive, q.unit, d.keys, d.group, d.unit, scope, m)
        else:
            yield m, q, d, relevant_margins(q.ids, q.keys, q.unit, d.keys, d.unit,
                                            (judged.qid.to_pylist(), judged.doc_id.to_pylist(), judged.relevance.tolist()),
                                            relevance_threshold, m, f"qrels {judged.source!r}")


def margins(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, qrels=None, relevance_threshold: int = 1,
            scope: str = "corpus", qid: str = "qid", group: str = "group", level: str | None = None,
            positive: str = "positive", vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
            doc_vector: str = "vector", model: str | None = None) -> ResultTable:
    """Per query: d_pos2, d_neg2, margin (cosine), m (normalised margin), top1, rank, ties.

    ``scope='corpus'``: every other document is a distractor; ``'group'``: only the other
    documents of the positive's group (``doc_group``).  ``group`` and ``level`` are not used here
    (every retrieval function takes the same arguments).  Rows are ordered by model, then qid.

    ``qrels`` (a table, Parquet/CSV file, DataFrame or TREC qrels text file with qid, doc_id,
    relevance) replaces the ``positive`` column: a document with relevance >= ``relevance_threshold``
    is relevant, every other one a distractor; d_pos2 is the squared distance to the nearest
    relevant document, d_neg2 to the nearest non-relevant one, rank that of the first relevant
    document.  m > 0 exactly when the nearest relevant document beats every non-relevant one.
    """
    with local_sources(con, queries, docs, qrels) as (queries, docs, qrels):
        cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
        rows = []
        for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, query_group=False, qrels=qrels,
                                                  relevance_threshold=relevance_threshold):
            rows += sorted(margin_dicts(m, q.ids, result), key=lambda r: sort_key(r["qid"]))
        return ResultTable.from_dicts("margins", MARGIN_COLUMNS, rows)


def retrieval_summary(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus",
                      qid: str = "qid", group: str = "group", level: str | None = None, positive: str = "positive",
                      vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
                      doc_vector: str = "vector", model: str | None = None, qrels=None,
                      relevance_threshold: int = 1) -> ResultTable:
    """Per model: queries, top-1, recall@1/5/10, MRR, mean and quantiles of m, with cluster-jackknife SEs
    over the paraphrase groups (``group``) and the number of queries whose d+ ties with a distractor.
    ``qrels`` and ``relevance_threshold`` as in :func:`margins` (the ranks are those of the first
    relevant document, so recall@k here is success@k)."""
    with local_sources(con, queries, docs, qrels) as (queries, docs, qrels):
        cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
        rows = [{"model": m, **summary_row(q.group.tolist(), result, scope)}
                for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, query_group=True, qrels=qrels,
                                                          relevance_threshold=relevance_threshold)]
        return ResultTable.from_dicts("retrieval summary", SUMMARY_COLUMNS, rows)


def pairing(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus", qid: str = "qid",
            group: str = "group", level: str | None = None, positive: str = "positive", vector: str = "vector",
            doc_id: str = "doc_id", doc_group: str = "group", doc_vector: str = "vector",
            model: str | None = None) -> ResultTable:
    """Per model, R2 of the query embeddings beside R2 of per-query top-1 (0/1), and trace ICC
    beside scalar ICC, all over the paraphrase groups.  Same-side figures only; see PAIRING_CAUTION."""
    with local_sources(con, queries, docs) as (queries, docs):
        cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
        per_model = [(m, q, result) for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, True)]
        return ResultTable.from_dicts("pairing (same-side figures; a difference is a clue, not an effect size)",
                                      PAIRING_COLUMNS, pairing_table(con, per_model))


def dose(con: duckdb.DuckDBPyConnection, queries: str, docs: str | None = None, *, qid: str = "qid",
         group: str = "group", level: str = "level", vector: str = "vector", doc_id: str = "doc_id",
         doc_group: str = "group", doc_vector: str = "vector", model: str | None = None, positive: str = "positive",
         scope: str = "corpus", permutations: int = 999, seed: int = 42, alpha: float = 0.05) -> ResultTable:
    """W~_q per level with jackknife SE and the step from the previous level (paired SE),
    whether it increases monotonically, a one-sided permutation trend test (levels permuted within
    paraphrase groups), and with ``docs`` the ratio W~_q / W~_g (mean W~ of the document groups).
    dose_works = monotone and p_value <= alpha.  ``positive`` and ``scope`` are not used."""
    with local_sources(con, queries, docs) as (queries, docs):
        if level is None:
            raise InputError("dose needs a level column (paraphrase strength); pass level='column name'")
        cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
        rows = []
        for m, q, d in load_models(con, queries, docs, cols, query_group=True, query_level=True, doc_group=True,
                             positive=False):
            rows += dose_rows(m, q, d, permutations, seed, alpha)
        return ResultTable.from_dicts("dose", DOSE_COLUMNS, rows)
