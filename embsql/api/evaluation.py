"""Retrieval evaluation with relevance judgements: runs from embeddings, trec_eval's metrics.

* ``retrieve`` ranks every document of a model for every query of that model by cosine (exact,
  in blocks; embsql.core.ranking.top_k) and returns the run ``<model>, qid, doc_id, rank, score``.
* ``evaluate`` scores a run (retrieve's, a run table or a TREC run file) against qrels: per
  query, and the mean per model.  The definitions and the treatment of queries without
  relevant documents are trec_eval's (see embsql.core.ranking).
* ``write_trec_run`` writes a run for trec_eval, pytrec_eval or ranx.

The tables are embsql.Queries, Docs, Qrels and Run (embsql.io.retrieval_tables), or plain sources
with the default column names.  The tie rule is trec_eval's: score descending, then doc_id
descending as text.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from contextlib import ExitStack

import duckdb
import pyarrow as pa

from embsql.core import ranking
from embsql.errors import ArgumentError, InputError
from embsql.io.qrels import read_qrels
from embsql.io.retrieval_tables import (
    Docs,
    Qrels,
    Queries,
    Run,
    arrow_of,
    as_table,
    check_model,
    model_table,
    shown,
)
from embsql.io.runs import RUN_COLUMNS, arrow_run, read_run, retrieve_run, trec_rows
from embsql.io.runs import write_trec_run as write_lines
from embsql.io.scoring import PER_QUERY_COLUMNS, SUMMARY_COLUMNS, score_runs
from embsql.io.table_stream import Skipped
from embsql.result_table import ResultTable


def retrieve(con: duckdb.DuckDBPyConnection, queries: Queries | object, docs: Docs | object, *, k: int = 100,
             model: str | None = None, bad_rows: str = "error") -> ResultTable:
    """The exact cosine top-k run: each query's ``k`` nearest documents by cosine similarity.

    Each model's queries are ranked against that model's documents.  Scores are cosines rounded
    to 2^-40, so that duplicated documents tie exactly; equal scores are ordered by doc_id
    descending as text, which is trec_eval's order, so trec_eval reproduces the ranks.  The
    documents stream from DuckDB in blocks (never held whole); float32 products pick candidates
    and float64 decides, so the run equals a float64 brute force.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    queries : Queries or source
        The queries: qid and vector.
    docs : Docs or source
        The documents: doc_id and vector.
    k : int, default 100
        How many documents per query (all of them when there are fewer).
    model : str, optional
        The model column of both tables: one run per model.
    bad_rows : {"error", "skip"}, default "error"
        A query or document whose vector is NULL (or has a NULL element), zero or non-finite: an
        error naming its row, id and model ("error"), or left out ("skip": a skipped query has no
        rows in the run, a skipped document is never ranked) and counted per model and reason, the
        two tables together, in the result's ``skipped`` table (``skipped_null``, ``skipped_zero``,
        ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per query and ranked document, by model, qid and rank: ``<model>`` (the model column
        under its own name; absent without ``model``), ``qid``, ``doc_id``, ``rank`` (1 = best),
        ``score`` (the cosine).

    Raises
    ------
    InputError
        k is not a whole number of 1 or more (argument.k); a model in one table only (model.missing);
        a model column named like an output column (column.collision).
    ColumnNotFoundError, BadLabelError, BadVectorError
        A missing column, a NULL or repeated id or a NULL model (label.null), a bad vector or query and
        document vectors of different dimensions (vector.dimension).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> q = pa.table({"qid": ["q1"], "vector": [[1.0, 0.0]]})
    >>> d = pa.table({"doc_id": ["a", "b", "c"], "vector": [[1.0, 0.1], [0.0, 1.0], [1.0, 0.1]]})
    >>> run = embsql.retrieve(con, q, d, k=2)
    >>> run.columns, [(r["doc_id"], r["rank"]) for r in run.to_dicts()]
    (('qid', 'doc_id', 'rank', 'score'), [('c', 1), ('a', 2)])
    """
    check_model(model, RUN_COLUMNS, "retrieve")
    skipped = Skipped.asked(bad_rows)
    with ExitStack() as stack:
        q = stack.enter_context(as_table(queries, Queries, "queries").on(con))
        d = stack.enter_context(as_table(docs, Docs, "docs").on(con))
        table = retrieve_run(con, q, d, k=k, model=model, skip=skipped)
    read = RUN_COLUMNS if model is None else ("model", *RUN_COLUMNS)      # the run's model column is "model"
    columns = [table.column(c).to_pylist() for c in read]
    return Skipped.attached(skipped, ResultTable("retrieve", RUN_COLUMNS if model is None else (model, *RUN_COLUMNS),
                                                 tuple(zip(*columns))), model)


def _run_arrow(con: duckdb.DuckDBPyConnection, run: Run | object, model: str | None) -> pa.Table:
    """A run as the Arrow table embsql.io.scoring reads (model, qid, doc_id, score): an Arrow table or
    a ResultTable directly, any other source through DuckDB."""
    if run is None:
        raise InputError("a run is needed: retrieve one first (run = embsql.retrieve(con, queries, docs, k=100)), "
                         "or pass a run table or TREC run file")
    spec = as_table(run, Run, "run")
    table = arrow_of(spec.source)
    if isinstance(table, pa.Table):
        return arrow_run(table, shown(spec.source), spec, model)
    with spec.on(con) as opened:
        return read_run(con, opened, model)


def evaluate(con: duckdb.DuckDBPyConnection, run: Run | object, qrels: Qrels | object, *,
             metrics: Sequence[str] | str = ranking.DEFAULT_METRICS, model: str | None = None,
             per_query: bool = False) -> ResultTable:
    """Score a run against relevance judgements with trec_eval's definitions.

    nDCG, MAP, recall, precision, MRR and hit rate at any cutoff, as trec_eval's ndcg_cut, map_cut,
    recall, P, recip_rank (of the run cut at k) and success (relevant: relevance >= 1; gain: the
    relevance).  Each query's documents are ordered by score descending, then doc_id descending
    (the run's rank column is not read), comparing scores as 32-bit floats, as trec_eval stores
    them.  Queries of the run without judgements are skipped, and judged queries without a relevant
    document score 0 and count, as in trec_eval.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    run : Run or source
        The run: retrieve's result, a table, a Parquet/CSV file or a TREC run file (qid, doc_id, score).
        To evaluate embeddings, retrieve first: ``evaluate(con, retrieve(con, queries, docs), qrels)``.
    qrels : Qrels or source
        The judgements: a table, Parquet/CSV or TREC qrels file (qid, doc_id, relevance), or
        ``Qrels(queries, doc_id="positive", relevance=None)`` for one relevant document per query.
    metrics : sequence of str, default ("ndcg@10", "map@100", "recall@10", "recall@100", "mrr@10", "precision@10", "hit_rate@10")
        Each ``name@k`` with name one of ndcg, map, recall, precision, mrr, hit_rate.
    model : str, optional
        The run's model column (``model="tag"`` for a TREC run file's tags): one set of figures per model.
    per_query : bool, default False
        One row per query and metric instead of the mean per model.

    Returns
    -------
    ResultTable
        Per model and metric (``per_query=False``): ``<model>`` (the model column under its own name;
        absent without ``model``), ``metric``, ``value`` (the mean over the queries evaluated: those of
        the run with judgements), ``queries``, ``without_relevant`` (of them, judged without a relevant
        document: they score 0), ``missing`` (judged queries the run does not rank), ``unjudged`` (the
        mean share of the top cutoff without a judgement).  With ``per_query=True``: ``<model>``,
        ``qid``, ``metric``, ``value``.

    Raises
    ------
    InputError
        An unknown metric, a bad relevance (negative or fractional), a pair judged twice, a document
        ranked twice for one query, an empty run, no judged query in the run, a model column named like
        an output column (column.collision).
    ColumnNotFoundError, ColumnTypeError, BadLabelError
        A missing column, a score that is not a number, a NULL id or model (label.null).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> con = embsql.connect()
    >>> run = pa.table({"qid": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "score": [0.9, 0.5, 0.3]})
    >>> qrels = pa.table({"qid": ["q1", "q2"], "doc_id": ["b", "c"], "relevance": [1, 2]})
    >>> [(r["metric"], r["value"]) for r in embsql.evaluate(con, run, qrels, metrics=["mrr@10", "recall@1"]).to_dicts()]
    [('mrr@10', 0.75), ('recall@1', 0.5)]
    """
    parsed = ranking.parse_metrics(metrics)
    columns = (PER_QUERY_COLUMNS if per_query else SUMMARY_COLUMNS)[1:]
    check_model(model, columns, "evaluate")
    if qrels is None:
        raise InputError("evaluate needs qrels: a table or file of qid, doc_id, relevance, or "
                         "Qrels(queries, doc_id='positive', relevance=None) for a queries table's positive column")
    table = _run_arrow(con, run, model)
    with as_table(qrels, Qrels, "qrels").on(con) as judged:
        judgements = read_qrels(con, judged)
    summary, chunks = score_runs(table, judgements, parsed, None, per_query=per_query)
    if not per_query:
        return model_table("evaluate", model, columns, summary)
    # rows built from numpy and lists directly: 1M-row runs give 100,000s of rows
    rows = itertools.chain.from_iterable(chunk.rows() for chunk in chunks)
    return ResultTable("evaluate (per query)", columns if model is None else (model, *columns),
                       tuple(rows) if model is not None else tuple(row[1:] for row in rows))


def write_trec_run(con: duckdb.DuckDBPyConnection, run: Run | object, path: str, *, model: str | None = None,
                   tag: str | None = None) -> int:
    """Write a run in TREC run format, ``qid Q0 doc_id rank score tag`` per line, for trec_eval,
    pytrec_eval or ranx.

    Each query's documents are written in trec_eval's order (score descending, then doc_id
    descending as text), ranked 1, 2, ... in that order (retrieve's ranks; a run's own rank column is
    not read).  Scores keep every digit, so trec_eval orders them as embsql did.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection a run given as a table or file is read on.
    run : Run or source
        retrieve's result, or any run table or file (qid, doc_id, score).
    path : str
        The file to write.
    model : str, optional
        The run's model column: its value is each line's tag (unless ``tag`` is given).
    tag : str, optional
        The tag of every line (default: the model's value, else "embsql").

    Returns
    -------
    int
        The number of lines written.

    Raises
    ------
    InputError
        An empty run, an id or tag that is empty or has white space, a score that is not finite.
    ColumnNotFoundError, BadLabelError, ArgumentError
        A missing column, a NULL id or model (label.null), or a run passed where the connection goes.

    Examples
    --------
    >>> import embsql, pyarrow as pa, tempfile, os
    >>> con = embsql.connect()
    >>> run = pa.table({"qid": ["q1", "q1"], "doc_id": ["a", "b"], "score": [0.5, 0.9]})
    >>> path = os.path.join(tempfile.mkdtemp(), "run.trec")
    >>> embsql.write_trec_run(con, run, path, tag="mine")
    2
    >>> print(open(path).read(), end="")
    q1 Q0 b 1 0.9 mine
    q1 Q0 a 2 0.5 mine
    """
    if not isinstance(con, duckdb.DuckDBPyConnection):
        raise ArgumentError(f"write_trec_run takes the connection first, write_trec_run(con, run, path), not a "
                            f"{type(con).__name__}")
    check_model(model, (), "write_trec_run")
    return write_lines(trec_rows(_run_arrow(con, run, model)), path, tag=tag)
