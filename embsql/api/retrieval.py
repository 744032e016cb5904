"""Retrieval diagnostics, the Python faces: margins, rank figures, dose, pairing and the
four-layer report, from a queries table and a documents table (one row per query / document).

The tables are embsql.Queries and embsql.Docs (embsql.io.retrieval_tables), or plain sources with
the default column names.  Both may carry a model column (``model=``): every figure is then per
model, each model's queries are matched with that model's documents, and the output's model column
keeps the input column's name.

Reading is embsql.io.retrieval_rows; the numerics are embsql.core.margins (margins and ranks),
core.query_summary (rank and alignment summaries), core.structure (R2, W~, eff_dim), core.input_output
(the pairing) and core.dose; the four layers are assembled by embsql.reporting.retrieval (the
report's section).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import duckdb

from embsql.core.dose import DOSE_COLUMNS, dose_rows
from embsql.core.input_output import PAIRING_COLUMNS, pairing_rows
from embsql.core.labels import sort_key
from embsql.core.margins import MARGIN_COLUMNS, Margins, check_scope, margin_dicts, model_margins, relevant_margins
from embsql.core.query_summary import SUMMARY_COLUMNS, summary_row
from embsql.errors import InputError
from embsql.io.qrels import read_qrels
from embsql.io.retrieval_rows import Rows, load_models
from embsql.io.retrieval_tables import Docs, Qrels, Queries, as_table, check_model, model_table
from embsql.io.table_stream import Skipped
from embsql.reporting.report_result import ReportResult
from embsql.reporting.retrieval import four_layers
from embsql.result_table import ResultTable

__all__ = ["margins", "pairing", "retrieval_dose", "retrieval_layers", "retrieval_summary"]


def _margins_per_model(con: duckdb.DuckDBPyConnection, queries: Queries, docs: Docs, *, model: str | None,
                       scope: str, query_group: bool, qrels: Qrels | None = None,
                       relevance_threshold: int = 1,
                       skip: Skipped | None = None) -> Iterator[tuple[object, Rows, Margins]]:
    """(model, query rows, margins) per model, the tables already on ``con`` (Queries.on)."""
    if qrels is not None and scope != "corpus":
        raise InputError("qrels work with scope 'corpus' (d- is the nearest non-relevant document of the corpus); "
                         "scope 'group' needs one positive per query")
    judged = None if qrels is None else read_qrels(con, qrels)
    for m, q, d in load_models(con, queries, docs, model=model, query_group=query_group, query_strength=False,
                               doc_group=scope == "group", positive=qrels is None, skip=skip):
        assert d is not None                          # docs are given
        if judged is None:
            assert q.positive is not None             # read when there are no qrels
            yield m, q, model_margins(q.ids, q.positive, q.unit, d.keys, d.group, d.unit, scope, m)
        else:
            yield m, q, relevant_margins(q.ids, q.keys, q.unit, d.keys, d.unit,
                                         (judged.qid.to_pylist(), judged.doc_id.to_pylist(), judged.relevance.tolist()),
                                         relevance_threshold, m, f"qrels {judged.source!r}")


def _per_model(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object,
               qrels: Qrels | object | None, *, model: str | None, scope: str, query_group: bool,
               relevance_threshold: int = 1, skip: Skipped | None = None) -> list[tuple[object, Rows, Margins]]:
    """_margins_per_model with the tables opened on ``con`` for the length of the read."""
    with ExitStack() as stack:
        q = stack.enter_context(as_table(queries, Queries, "queries").on(con))
        d = stack.enter_context(as_table(docs, Docs, "docs").on(con))
        j = None if qrels is None else stack.enter_context(as_table(qrels, Qrels, "qrels").on(con))
        return list(_margins_per_model(con, q, d, model=model, scope=scope, query_group=query_group, qrels=j,
                                       relevance_threshold=relevance_threshold, skip=skip))


def margins(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object, *,
            qrels: Qrels | object | None = None, relevance_threshold: int = 1, scope: str = "corpus",
            model: str | None = None, bad_rows: str = "error") -> ResultTable:
    """Per query: the distances to the correct document and to the best distractor, the margin, and the rank.

    For a query q with correct document d+ and distractors D- (every other document of the corpus,
    or only the other documents of d+'s topic group), with s the cosine similarity:
    margin = s(q, d+) - max s(q, D-); d_pos2 = ||q - d+||², d_neg2 = ||q - d-||² (d- the best
    distractor); m = (d_neg2 - d_pos2) / (d_neg2 + d_pos2); rank = 1 + the distractors above d+
    + the ties (a tie counts against d+).  Every figure equals a float64 brute force: the products
    run in float32 in blocks, and the few documents rounding could misplace are recomputed in float64.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on (embsql.connect()).
    queries : Queries or source
        The queries: qid, vector, and positive (the id of the correct document) unless ``qrels`` is given.
    docs : Docs or source
        The documents: doc_id, vector, and group with ``scope="group"``.
    qrels : Qrels or source, optional
        Relevance judgements instead of the positive column: a document with relevance >=
        ``relevance_threshold`` is relevant, every other one a distractor; d_pos2 is then the
        distance to the nearest relevant document, d_neg2 to the nearest non-relevant one, rank that
        of the first relevant document (m > 0 exactly when it beats every non-relevant one).
    relevance_threshold : int, default 1
        The lowest relevance grade that counts as relevant (with ``qrels``).
    scope : {"corpus", "group"}, default "corpus"
        Which documents are distractors: all others, or the others of the positive's group.
    model : str, optional
        The model column of both tables: one set of rows per model.
    bad_rows : {"error", "skip"}, default "error"
        A row of the queries or the documents whose vector is NULL (or has a NULL element), zero or
        non-finite: an error naming its row, id and model ("error"), or left out ("skip") and counted
        per model and reason, the two tables together, in the result's ``skipped`` table
        (``skipped_null``, ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per query, ordered by model, then qid: ``<model>`` (the model column, under its own
        name; absent without ``model``), ``qid``, ``d_pos2``, ``d_neg2``, ``margin``, ``m`` (in
        [-1, 1], > 0 exactly when d+ ranks first), ``top1`` (rank = 1), ``rank``, ``ties`` (distractors
        whose similarity equals s+ to within rounding; margin and m are then 0).

    Raises
    ------
    ColumnNotFoundError
        A named column is not in its table (column.missing).
    BadLabelError
        A NULL qid, doc_id, positive or model value (label.null), a repeated id, or a positive that is
        no doc_id.
    BadVectorError
        A NULL, zero-length or non-finite vector, or vectors of different lengths (vector.*).
    DesignError
        A query without a distractor (scope 'group' with a one-document group).
    InputError
        A bad scope, qrels with scope 'group', a model column named like an output column
        (column.collision), a model in one table only (model.missing).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> q = pa.table({"qid": ["q1", "q2"], "positive": ["a", "b"], "vector": [[1.0, 0.0], [0.6, 0.8]]})
    >>> d = pa.table({"doc_id": ["a", "b", "c"], "vector": [[1.0, 0.1], [0.0, 1.0], [0.7, 0.7]]})
    >>> [(r["qid"], r["rank"], r["top1"]) for r in embsql.margins(con, q, d).to_dicts()]
    [('q1', 1, True), ('q2', 2, False)]
    >>> embsql.margins(con, embsql.Queries(q, qid="qid"), d).columns[:3]
    ('qid', 'd_pos2', 'd_neg2')
    """
    check_scope(scope)
    check_model(model, MARGIN_COLUMNS[1:], "margins")
    skipped = Skipped.asked(bad_rows)
    rows = []
    for m, q, result in _per_model(con, queries, docs, qrels, model=model, scope=scope, query_group=False,
                                   relevance_threshold=relevance_threshold, skip=skipped):
        rows += sorted(margin_dicts(m, q.ids, result), key=lambda r: sort_key(r["qid"]))
    return Skipped.attached(skipped, model_table("margins", model, MARGIN_COLUMNS[1:], rows), model)


def retrieval_summary(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object, *,
                      qrels: Qrels | object | None = None, relevance_threshold: int = 1, scope: str = "corpus",
                      model: str | None = None, bad_rows: str = "error") -> ResultTable:
    """Per model: top-1, recall@1/5/10, MRR and the distribution of m, with cluster-jackknife SEs.

    The figures are means over the queries of the per-query margins (:func:`margins`); their SEs
    are cluster jackknives over the paraphrase groups (the queries' group column), since paraphrases
    of one question are not independent queries.  With ``qrels`` the ranks are those of the first
    relevant document, so recall@k here is success@k.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries : Queries or source
        The queries: qid, vector, group (the paraphrase group), and positive unless ``qrels`` is given.
    docs : Docs or source
        The documents: doc_id, vector, and group with ``scope="group"``.
    qrels : Qrels or source, optional
        Relevance judgements instead of the positive column (as in :func:`margins`).
    relevance_threshold : int, default 1
        The lowest relevance grade that counts as relevant (with ``qrels``).
    scope : {"corpus", "group"}, default "corpus"
        Which documents are distractors (as in :func:`margins`).
    model : str, optional
        The model column of both tables: one row per model.
    bad_rows : {"error", "skip"}, default "error"
        A row of the queries or the documents whose vector is NULL (or has a NULL element), zero or
        non-finite: an error naming its row, id and model ("error"), or left out ("skip") and counted
        per model and reason, the two tables together, in the result's ``skipped`` table
        (``skipped_null``, ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model: ``<model>`` (under its own name; absent without ``model``), ``queries``,
        ``groups``, ``top1`` and ``top1_se``, ``recall_at_1``, ``recall_at_5`` and ``recall_at_5_se``,
        ``recall_at_10`` and ``recall_at_10_se``, ``mrr`` and ``mrr_se``, ``m_mean`` and ``m_mean_se``,
        the quantiles ``m_p05``, ``m_p25``, ``m_median``, ``m_p75``, ``m_p95``, ``ties`` (queries whose
        d+ ties with a distractor) and ``scope``.  An SE is None with fewer than two groups.

    Raises
    ------
    ColumnNotFoundError, BadLabelError, BadVectorError, DesignError, InputError
        As :func:`margins`; the group column is read too (a NULL group is label.null).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> q = pa.table({"encoder": ["e5"] * 4, "qid": ["q1", "q2", "q3", "q4"], "group": ["A", "A", "B", "B"],
    ...               "positive": ["a", "a", "b", "b"],
    ...               "vector": [[1.0, 0.0], [0.9, 0.3], [0.0, 1.0], [0.8, 0.6]]})
    >>> d = pa.table({"encoder": ["e5"] * 2, "doc_id": ["a", "b"], "vector": [[1.0, 0.0], [0.0, 1.0]]})
    >>> row = embsql.retrieval_summary(con, q, d, model="encoder").to_dicts()[0]
    >>> row["encoder"], row["queries"], row["groups"], row["top1"]
    ('e5', 4, 2, 0.75)
    """
    check_scope(scope)
    check_model(model, SUMMARY_COLUMNS[1:], "retrieval_summary")
    skipped = Skipped.asked(bad_rows)
    rows = []
    for m, q, result in _per_model(con, queries, docs, qrels, model=model, scope=scope, query_group=True,
                                   relevance_threshold=relevance_threshold, skip=skipped):
        assert q.group is not None
        rows.append({"model": m, **summary_row(q.group.tolist(), result, scope)})
    return Skipped.attached(skipped, model_table("retrieval summary", model, SUMMARY_COLUMNS[1:], rows), model)


def pairing(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object, *,
            scope: str = "corpus", model: str | None = None, bad_rows: str = "error") -> ResultTable:
    """Per model: the same paraphrase groups on both sides of retrieval, input beside output.

    R² of the query embeddings over the paraphrase groups beside R² of the per-query top-1 outcome
    (0/1), and the trace ICC of the embeddings beside the scalar ICC(1) of the outcome (as SQL emb_icc computes it).
    Same-side figures only: a difference is a clue, not an effect size.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries : Queries or source
        The queries: qid, vector, group (the paraphrase group) and positive.
    docs : Docs or source
        The documents: doc_id, vector, and group with ``scope="group"``.
    scope : {"corpus", "group"}, default "corpus"
        Which documents are distractors for the top-1 outcome (as in :func:`margins`).
    model : str, optional
        The model column of both tables.
    bad_rows : {"error", "skip"}, default "error"
        A row of the queries or the documents whose vector is NULL (or has a NULL element), zero or
        non-finite: an error naming its row, id and model ("error"), or left out ("skip") and counted
        per model and reason, the two tables together, in the result's ``skipped`` table
        (``skipped_null``, ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        Two rows per model: ``<model>`` (under its own name; absent without ``model``), ``measure``
        ("R2" or "ICC(1)"), ``input`` (of the query embeddings), ``output`` (of the 0/1 top-1
        outcome; None when every query has the same outcome), ``queries``, ``groups``, ``note`` (why
        an output is None).

    Raises
    ------
    ColumnNotFoundError, BadLabelError, BadVectorError, DesignError, InputError
        As :func:`retrieval_summary`; a DesignError also where the groups leave R² undefined (one
        group, or one query per group).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> q = pa.table({"qid": ["q1", "q2", "q3", "q4"], "group": ["A", "A", "B", "B"], "positive": ["a", "a", "b", "b"],
    ...               "vector": [[1.0, 0.0], [0.9, 0.3], [0.0, 1.0], [0.8, 0.6]]})
    >>> d = pa.table({"doc_id": ["a", "b"], "vector": [[1.0, 0.0], [0.0, 1.0]]})
    >>> [(r["measure"], round(r["output"], 4)) for r in embsql.pairing(con, q, d).to_dicts()]
    [('R2', 0.3333), ('ICC(1)', 0.0)]
    """
    check_scope(scope)
    check_model(model, PAIRING_COLUMNS[1:], "pairing")
    skipped = Skipped.asked(bad_rows)
    per_model = _per_model(con, queries, docs, None, model=model, scope=scope, query_group=True, skip=skipped)
    return Skipped.attached(skipped, model_table("pairing (same-side figures; a difference is a clue, not an effect "
                                                 "size)", model, PAIRING_COLUMNS[1:], pairing_rows(per_model)),
                            model)


def retrieval_dose(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object | None = None, *,
         model: str | None = None, permutations: int = 999, seed: int = 42, alpha: float = 0.05,
         bad_rows: str = "error") -> ResultTable:
    """Paraphrase strength as a dose: W~_q per strength, its trend, and a permutation trend test.

    For each strength l, W~_q(l) is the mean over paraphrase groups of the size-corrected spread
    W~ of the group's queries at that strength (groups with two or more such queries), with its
    cluster-jackknife SE and the step from the previous strength (paired SE).  The one-sided trend
    test permutes the strengths within each paraphrase group: p = (b + 1)/(B + 1).  With ``docs``,
    ratio = W~_q / W~_g, the mean W~ of the document topic groups.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries : Queries
        The queries: qid, vector, group (the paraphrase group) and strength, which dose needs
        (``Queries(source, strength="level")``; a plain source has none).
    docs : Docs or source, optional
        The documents: vector and group, for the ratio (None: no ratio).
    model : str, optional
        The model column of both tables.
    permutations : int, default 999
        Permutations of the trend test (1 or more).
    seed : int, default 42
        The random seed of the permutations (a seed gives the same p whatever the row order).
    alpha : float, default 0.05
        The level of ``dose_works``.
    bad_rows : {"error", "skip"}, default "error"
        A row of the queries or the documents whose vector is NULL (or has a NULL element), zero or
        non-finite: an error naming its row, id and model ("error"), or left out ("skip") and counted
        per model and reason, the two tables together, in the result's ``skipped`` table
        (``skipped_null``, ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model and strength: ``<model>`` (under its own name; absent without ``model``),
        ``strength``, ``queries``, ``groups`` (paraphrase groups with two or more queries at this
        strength), ``w_tilde_q`` and ``se``, ``step`` and ``step_se`` (from the previous strength with
        a value), ``w_tilde_g`` and ``ratio`` (None without ``docs``), ``monotone`` (the estimates
        increase strictly), ``p_value``, ``permutations``, ``dose_works`` (monotone and p_value <= alpha).

    Raises
    ------
    InputError
        No strength column in ``queries``, a bad permutations, seed or alpha, a model column named
        like an output column (column.collision).
    DesignError
        Fewer than two strengths with a W~_q.
    ColumnNotFoundError, BadLabelError, BadVectorError
        As :func:`margins`.

    Examples
    --------
    >>> import embsql, numpy as np, pyarrow as pa
    >>> rng = np.random.default_rng(0)
    >>> q = pa.table({"qid": [f"q{i}" for i in range(16)], "group": [f"g{i // 4}" for i in range(16)],
    ...               "level": [i // 2 % 2 for i in range(16)], "vector": rng.normal(size=(16, 3)).tolist()})
    >>> table = embsql.retrieval_dose(embsql.connect(), embsql.Queries(q, strength="level"), permutations=99)
    >>> table.columns[:4], table.column("strength"), table.column("groups")
    (('strength', 'queries', 'groups', 'w_tilde_q'), [0, 1], [4, 4])
    """
    check_model(model, DOSE_COLUMNS[1:], "retrieval_dose")
    skipped = Skipped.asked(bad_rows)
    spec = as_table(queries, Queries, "queries")
    if spec.strength is None:
        raise InputError("dose needs the queries' paraphrase-strength column: pass Queries(source, strength='column')")
    rows = []
    with ExitStack() as stack:
        q_spec = stack.enter_context(spec.on(con))
        d_spec = None if docs is None else stack.enter_context(as_table(docs, Docs, "docs").on(con))
        for m, q, d in load_models(con, q_spec, d_spec, model=model, query_group=True, query_strength=True,
                                   doc_group=True, positive=False, skip=skipped):
            rows += dose_rows(m, q, d, permutations, seed, alpha)
    return Skipped.attached(skipped, model_table("retrieval_dose", model, DOSE_COLUMNS[1:], rows), model)


def retrieval_layers(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object, *,
                     scope: str = "corpus", model: str | None = None, permutations: int = 999, seed: int = 42,
                     alpha: float = 0.05, bad_rows: str = "error") -> ReportResult:
    """The four-layer retrieval report: query stability, document structure, alignment and rank,
    with the input/output pairing and, given a strength column, the dose.

    This is the report's retrieval section on its own: a ReportResult (sections, notes, a verdict;
    it prints, renders as HTML/Markdown/JSON and plots like embsql.report's).  Its tables are those of
    a report, so their model column is called ``model`` whatever the input column is called (the
    single-table faces, :func:`retrieval_summary`, :func:`pairing` and :func:`retrieval_dose`, keep its name).
    A layer the data do not support (documents without topic groups, paraphrase groups of one query,
    one query per group and strength) is left out with a note in ``meta["notes"]``; the others run.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries : Queries or source
        The queries: qid, vector, group, positive, and strength for the dose section.
    docs : Docs or source
        The documents: doc_id, vector and group (the topic group).
    scope : {"corpus", "group"}, default "corpus"
        Which documents are distractors (as in :func:`margins`).
    model : str, optional
        The model column of both tables.
    permutations : int, default 999
        Permutations of the dose's trend test (0 leaves the dose out, with a note).
    seed : int, default 42
        Its random seed.
    alpha : float, default 0.05
        The level of the dose's ``dose_works``.
    bad_rows : {"error", "skip"}, default "error"
        A row of the queries or the documents whose vector is NULL (or has a NULL element), zero or
        non-finite: an error naming its row, id and model ("error"), or left out ("skip") and counted
        per model and reason, the two tables together, in the result's ``skipped`` table (and a note)
        (``skipped_null``, ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ReportResult
        ``summary`` (per model: model, queries, docs, r2_queries, w_tilde_q, r2_docs, w_tilde_g,
        m_median, top1, mrr) and the sections ``query_stability`` and ``document_structure`` (model,
        items, groups, singletons, r2, r2_se, r2_null, w_tilde_mean, w_tilde_se, dim, eff_dim,
        eff_dim_bounded), ``alignment`` (the m columns of :func:`retrieval_summary`), ``rank`` (its
        top-1, recall and MRR columns), ``pairing`` (as :func:`pairing`) and ``dose`` (as :func:`retrieval_dose`).

    Raises
    ------
    ColumnNotFoundError, BadLabelError, BadVectorError, InputError
        As :func:`retrieval_summary`.

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> q = pa.table({"qid": ["q1", "q2", "q3", "q4"], "group": ["A", "A", "B", "B"], "positive": ["a", "a", "c", "c"],
    ...               "vector": [[1.0, 0.0], [0.9, 0.3], [0.0, 1.0], [0.8, 0.6]]})
    >>> d = pa.table({"doc_id": ["a", "b", "c", "d"], "group": ["x", "x", "y", "y"],
    ...               "vector": [[1.0, 0.0], [0.9, 0.4], [0.0, 1.0], [0.3, 0.9]]})
    >>> [s.name for s in embsql.retrieval_layers(con, q, d).sections]
    ['query_stability', 'document_structure', 'alignment', 'rank', 'pairing']
    """
    check_scope(scope)
    check_model(model, (), "retrieval_layers")
    skipped = Skipped.asked(bad_rows)
    with ExitStack() as stack:
        q = stack.enter_context(as_table(queries, Queries, "queries").on(con))
        d = stack.enter_context(as_table(docs, Docs, "docs").on(con))
        result = four_layers(con, q, d, scope=scope, model=model, permutations=permutations, seed=seed, alpha=alpha,
                             skip=skipped)
    return Skipped.attached(skipped, result, model)
