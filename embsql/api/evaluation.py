"""Retrieval evaluation with relevance judgements: runs from embeddings, trec_eval's metrics.

* ``retrieve`` ranks every document of a model for every query of that model by cosine (exact,
  in blocks; embsql.core.ranking.top_k) and returns the run ``model, qid, doc_id, rank, score``.
* ``evaluate`` scores a run (retrieve's, a run table or a TREC run file) against qrels: per
  query, and the mean per model.  The definitions and the treatment of queries without
  relevant documents are trec_eval's (see embsql.core.ranking).
* ``write_trec_run`` writes a run for trec_eval, pytrec_eval or ranx.

The tie rule is trec_eval's: score descending, then doc_id descending as text.
"""

from __future__ import annotations

import itertools

import pyarrow as pa

from embsql.core import ranking
from embsql.errors import InputError
from embsql.io.qrels import check_known, qrels_from_positives, read_qrels, table_ids
from embsql.io.runs import RUN_COLUMNS, arrow_run, read_run, retrieve_run, run_ids
from embsql.io.runs import write_trec_run as write_lines
from embsql.io.scoring import PER_QUERY_COLUMNS, SUMMARY_COLUMNS, score_runs
from embsql.io.sources import describe, local_source, local_sources
from embsql.result_table import ResultTable

UNKNOWN = ("error", "skip")


# ---- runs --------------------------------------------------------------------------------


def _result(title: str, table: pa.Table) -> ResultTable:
    columns = [table.column(c).to_pylist() for c in table.column_names]
    return ResultTable(title, tuple(table.column_names), tuple(zip(*columns)))


def retrieve(con, queries, docs, *, k: int = 100, model: str | None = None, qid: str = "qid",
             doc_id: str = "doc_id", vector: str = "vector", doc_vector: str | None = None) -> ResultTable:
    """The exact cosine top-k run: ``model, qid, doc_id, rank, score`` (rank 1 = best).

    Each model's queries are ranked against that model's documents (``model`` names the model
    column of both tables).  Scores are cosines rounded to 2^-40; equal scores are ordered by
    doc_id descending as text, which is trec_eval's order, so trec_eval reproduces the ranks.

    >>> import embsql, pandas as pd
    >>> con = embsql.connect()
    >>> q = pd.DataFrame({"qid": ["q1"], "vector": [[1.0, 0.0]]})
    >>> d = pd.DataFrame({"doc_id": ["a", "b", "c"], "vector": [[1.0, 0.1], [0.0, 1.0], [1.0, 0.1]]})
    >>> [(r["doc_id"], r["rank"]) for r in embsql.retrieve(con, q, d, k=2).to_dicts()]
    [('c', 1), ('a', 2)]
    """
    with local_sources(con, queries, docs) as (queries, docs):
        return _result("retrieve", retrieve_run(con, queries, docs, k=k, model=model, qid=qid, doc_id=doc_id,
                                                  vector=vector, doc_vector=doc_vector))


def run_table(con, run, *, model: str | None = None) -> pa.Table:
    """A run as Arrow (model, qid, doc_id, score): a ResultTable, an Arrow table or frame, a
    table name, a Parquet/CSV file or a TREC run file."""
    if isinstance(run, ResultTable):
        missing = [c for c in ("qid", "doc_id", "score") if c not in run.columns]
        if missing:
            raise InputError(f"run {run.title!r} has no column {missing[0]!r}; a run has qid, doc_id and score")
        run = pa.table({c: pa.array(run.column(c)) for c in run.columns if c in RUN_COLUMNS})
    if isinstance(run, pa.Table):
        return arrow_run(run, describe(run), model=model)
    with local_source(con, run) as name:
        return read_run(con, name, model=model)


def write_trec_run(run, path: str, *, tag: str | None = None) -> int:
    """Write a run (retrieve's ResultTable, or any table with qid, doc_id, rank, score and an
    optional model) in TREC run format ``qid Q0 doc_id rank score tag``.  The tag is ``tag``,
    else the model, else "embsql".  Returns the number of lines written."""
    if isinstance(run, ResultTable):
        table = {c: run.column(c) for c in run.columns}
    else:
        if hasattr(run, "to_arrow"):
            run = run.to_arrow()
        elif type(run).__module__.startswith("pandas"):
            run = pa.Table.from_pandas(run)
        if not isinstance(run, pa.Table):
            raise InputError(f"a run must be a ResultTable or a table, not a {type(run).__name__}")
        table = {c: run.column(c).to_pylist() for c in run.column_names}
    for column in ("qid", "doc_id", "rank", "score"):
        if column not in table:
            raise InputError(f"the run has no {column!r} column; a TREC run needs qid, doc_id, rank and score")
    if not table["qid"]:
        raise InputError("the run has no rows; an empty run cannot be written")
    models = table.get("model", [None] * len(table["qid"]))
    return write_lines(zip(models, table["qid"], table["doc_id"], table["rank"], table["score"]), path, tag=tag)


# ---- evaluation --------------------------------------------------------------------------


def evaluate(con, run=None, qrels=None, *, metrics=ranking.DEFAULT_METRICS, model: str | None = None,
             queries=None, docs=None, k: int | None = None, per_query: bool = False, qid: str = "qid",
             doc_id: str = "doc_id", vector: str = "vector", doc_vector: str | None = None,
             relevance: str = "relevance", positive: str = "positive", unknown: str = "error") -> ResultTable:
    """Score a run against relevance judgements with trec_eval's definitions.

    run: a ResultTable (retrieve's), a run table or file (qid, doc_id, score; optional model) or a
    TREC run file; or None with ``queries=`` and ``docs=`` to retrieve first (depth k, default
    the largest cutoff).  qrels: a table or file (qid, doc_id, relevance) or a TREC qrels file;
    None with ``queries=`` uses its ``positive`` column (one relevant document per query).
    k: the depth evaluated (a deeper run is cut).  unknown: a qrels row whose qid or doc_id is
    not in ``queries``/``docs`` is an error, or with "skip" left out and counted.

    Returns per model and metric ``model, metric, value, queries, without_relevant, missing,
    unjudged`` (value = the mean over the queries evaluated: those of the run with judgements,
    as in trec_eval; without_relevant of them have judgements but no relevant document and
    score 0; missing = judged queries the run does not rank; unjudged = mean share of the top
    cutoff without a judgement), or with ``per_query=True`` one row per ``model, qid, metric, value``.
    """
    with local_sources(con, qrels, queries, docs) as (qrels, queries, docs):
        parsed = ranking.parse_metrics(metrics)
        if k is not None:
            k = ranking.check_k(k)
        if unknown not in UNKNOWN:
            raise InputError(f"unknown must be 'error' or 'skip', not {unknown!r}")
        if run is None:
            if queries is None or docs is None:
                raise InputError("evaluate needs a run, or queries= and docs= to retrieve one")
            depth = k or max(m.cutoff for m in parsed)
            table = retrieve_run(con, queries, docs, k=depth, model=model, qid=qid, doc_id=doc_id, vector=vector,
                                   doc_vector=doc_vector)
        else:
            table = run_table(con, run, model=model)
        if qrels is None:
            if queries is None:
                raise InputError("evaluate needs qrels, or queries= with a positive column")
            judgements = qrels_from_positives(con, queries, qid=qid, positive=positive)
        else:
            judgements = read_qrels(con, qrels, qid=qid, doc_id=doc_id, relevance=relevance)
        skipped = 0
        # a run retrieved here holds every id of both tables (run_ids): they are not read again
        ids_of = (lambda source, column, role: run_ids(table, role)) if run is None else \
            (lambda source, column, role: table_ids(con, source, column, role))
        if queries is not None:
            judgements, n = check_known(judgements, ids_of(queries, qid, "qid"), "qid", judgements.qid, unknown,
                                         f"queries {queries!r}")
            skipped += n
        if docs is not None:
            judgements, n = check_known(judgements, ids_of(docs, doc_id, "doc_id"), "doc_id", judgements.doc_id,
                                         unknown, f"docs {docs!r}")
            skipped += n
        if len(judgements) == 0:
            raise InputError(f"qrels {judgements.source!r} has no judgements left to evaluate with")
        summary, chunks = score_runs(table, judgements, parsed, k, per_query=per_query)
        if per_query:      # rows built from numpy and lists directly: 1M-row runs give 100,000s of rows
            return ResultTable("evaluate (per query)", PER_QUERY_COLUMNS,
                               tuple(itertools.chain.from_iterable(chunk.rows() for chunk in chunks)))
        title = "evaluate" + (f" ({skipped} qrels rows with unknown ids skipped)" if skipped else "")
        return ResultTable.from_dicts(title, SUMMARY_COLUMNS, summary)
