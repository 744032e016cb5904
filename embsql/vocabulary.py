"""The one vocabulary: every name an argument can have, in SQL, Python, the CLI and TOML.

A concept has one name on every surface: the SQL functions' named arguments (``model := 'm'``),
the Python faces' keywords (``model='m'``), the command line's flags (``--model m``) and the
report file's keys (``model = "m"``).  A flag is the name with ``-`` for ``_`` (``--doc-id``).
The reference's vocabulary page is generated from :data:`NAMES`, and tests/test_vocabulary.py
reads every SQL macro's, Python face's and CLI flag's parameters and fails on a name that is not
here.  A name a function does not take is an error: Python's own TypeError for a face, ``embsql:
[argument.unknown]`` listing what the function takes for a SQL function (embsql.run_sql), exit 2 and
one line for a flag.

Where a function returns one row per model, the model column keeps the input column's name, as
``GROUP BY`` would; a model column whose name is also one of the function's output columns is an
error naming both (:func:`check_model_name`), never a silently overwritten column.
"""

from __future__ import annotations

from collections.abc import Iterable

from embsql.errors import fail

__all__ = ["NAMES", "check_model_name"]

# name -> what it means.  Grouped by what the name stands for; the order is the reference page's.
TABLES: dict[str, str] = {
    "con": "the DuckDB connection the function runs on",
    "source": "the table to read: a table or view name, a Parquet/CSV/JSON file or directory, "
              "FILE.duckdb:TABLE, a Lance dataset, a saved Hugging Face dataset, or a pandas/polars/Arrow object",
    "distances": "a distance table (i, j, distance): one row per pair of items",
    "labels": "a labels table (item, group, ...) for a distance table",
    "queries": "a queries table: one row per query (and model)",
    "docs": "a documents table: one row per document (and model)",
    "qrels": "relevance judgements: qid, doc_id, relevance (a table, file, DataFrame or TREC qrels file)",
    "run": "a ranked run: qid, doc_id, score (retrieve's result, a table, file or TREC run file)",
    "evaluation": "a per-query evaluation (evaluate(..., per_query=True)'s result, or its table)",
    "pairs": "a pairs table of gold similarity judgements: item_a, item_b, score",
    "predictions": "per-item predictions (knn_classify(..., per_item=True)'s result, or its table)",
    "embeddings": "an embeddings table whose items another table (pairs) refers to",
}
COLUMNS: dict[str, str] = {
    "model": "the model column: one set of figures per value; the output keeps its name",
    "group": "the group column (topics, classes, paraphrase groups): the grouping the statistic is about",
    "vector": "the vector column (FLOAT[], DOUBLE[], FLOAT[d] or DOUBLE[d]); vectors are scaled to unit length",
    "item": "the item column: which rows of different models embed the same item (and names a bad row)",
    "strata": "the strata column: labels are permuted only within its values",
    "terms": "the term columns of a multi-term design, in order",
    "value": "a numeric value column (the scalar ICC)",
    "label": "the class-label column of a classification",
    "split": "the column that says which items are 'train' and which 'test'",
    "qid": "the query id column",
    "doc_id": "the document id column",
    "positive": "the queries' column holding the id of each query's one relevant document",
    "strength": "the queries' column holding the paraphrase strength (an ordered dose level)",
    "relevance": "the qrels' relevance grade column",
    "score": "the score column: a run's retrieval score, or a pair's gold similarity",
    "doc_group": "SQL only: the documents table's group column (Python: Docs(group=...))",
    "doc_vector": "SQL only: the documents table's vector column (Python: Docs(vector=...))",
    "i": "the distance table's first item column",
    "j": "the distance table's second item column",
    "distance": "the distance table's distance column",
    "a": "the pairs table's first item column",
    "b": "the pairs table's second item column",
}
OPTIONS: dict[str, str] = {
    "permutations": "the number of permutations of a permutation test",
    "seed": "the random seed (a whole number): results are reproducible from it",
    "wait": "seconds embsql.interrupt waits for a running kernel to stop",
    "stop_after": "stop a permutation test once this many permuted statistics reach the observed one (sequential p-values)",
    "replicates": "the number of bootstrap replicates",
    "level": "the confidence level of an interval (default 0.95)",
    "alpha": "the significance level a decision or a warning uses (default 0.05)",
    "statistic": "which statistic to estimate or test (r2, f, w_bar, ...)",
    "permute": "what a multi-term test permutes: 'residuals' (Freedman-Lane), 'rows' (adonis2) or 'residuals_free'",
    "sums": "which sums of squares each term is tested on: 'sequential' or 'margin'",
    "method": "how a statistic is computed (the result does not depend on it, only the time)",
    "null_method": "how the null distribution of a test is built",
    "sizes": "whether the group sizes are treated as fixed by the design: 'auto', 'fixed' or 'random'",
    "common": "use only the items every model has (instead of refusing items one model lacks)",
    "debiased": "the debiased (unbiased HSIC) form of CKA",
    "scope": "which documents are distractors: 'corpus' (all) or 'group' (the positive's group)",
    "k": "how many neighbours or documents (top-k)",
    "metrics": "the retrieval metrics to compute, e.g. ('ndcg@10', 'recall@100')",
    "metric": "one retrieval metric, e.g. 'ndcg@10'",
    "relevance_threshold": "the lowest relevance grade that counts as relevant",
    "unknown": "what to do with a qid or doc_id the other table lacks: 'error' or 'skip'",
    "missing": "what to do with a pair whose item has no vector: 'error' or 'skip'",
    "bad_rows": "what to do with a row whose vector is NULL, zero or non-finite: 'error' (the default: "
                "refuse it, naming its model, item and row) or 'skip' (leave it out and count it per model and reason)",
    "p_adjust": "the multiple-comparison adjustment of p-values: 'holm', 'bh', 'bonferroni' or None",
    "intervals": "which intervals of the pairwise differences: 'marginal' (each alone) or 'simultaneous' (all together)",
    "group_pairs": "which pairs of groups a pairwise test compares: 'all' or a list of (group, group)",
    "check_dispersion": "warn when the dispersion test is significant (pseudo-F may then reflect spread)",
    "per_item": "one row per item instead of one per model",
    "per_query": "one row per query instead of one per model",
    "per_pair": "one row per pair instead of one per model",
    "progress": "show a progress bar (None: only in a terminal or notebook)",
    "sections": "which sections of the report to run",
    "title": "the report's title",
    "table": "the source's table name on another engine",
    "where": "a SQL filter applied to the source's rows",
    "retrieval": "the report's retrieval column names (a table of qid, doc_id, ... names)",
    "similarity": "the report's pairs table column names and option (a table of a, b, score, missing)",
    "classification": "the report's classification option (a table of k)",
    "tag": "the run tag of a TREC run file",
    "path": "a file path to write",
    "database": "a DuckDB database file (':memory:' for none)",
    "query": "a SQL query",
    "read_only": "open the database file read-only",
    "interrupt": "let Ctrl-C stop a running embsql function on this connection",
    "reference": "the reference model a paired comparison measures each model against",
    "connection": "a connection to the engine a report runs on: DuckDB, a SparkSession or a psycopg connection",
    "report": "a report description (what embsql.report returns)",
    "rho": "an intra-class correlation (power analysis)",
    "power": "the power a design should reach (power analysis)",
    "groups": "a number of groups (power analysis)",
    "p": "a probability",
}
CLI: dict[str, str] = {
    "data": "the data file the report reads (a positional argument)",
    "config": "a TOML file with a [report] table; flags override it",
    "format": "the output format: table, text, json, markdown or html",
    "full": "every row and column of every section in table and Markdown output",
    "explain": "each caution of the text report in full, not in one line",
    "out": "write to this file instead of standard output",
    "min_r2": "exit 1 if any model's R² is below this",
    "fail_if_dispersion": "exit 1 if a dispersion test is significant at --alpha",
    "no_progress": "no progress bar",
    "skip_bad_rows": "leave out the rows whose vector is NULL, zero or non-finite, and say how many per model "
                     "(bad_rows = 'skip')",
    "engine": "run stage 1 (the group sums) on this engine: postgres or spark",
    "dsn": "the PostgreSQL connection string for --engine postgres",
    "spark_master": "the Spark master for --engine spark",
    "dialect": "the SQL dialect to print",
    "dims": "the vector dimension of each model (MODEL=D,...), so that nothing is probed",
    "seeds": "how many seeded configurations the demo averages over",
    "debug": "show tracebacks",
    "version": "print embsql's version and exit",
    "parse_vectors": "read a text vector column (a JSON or Python list, or numbers separated by spaces or commas)",
}
# the fields of the result objects (read as attributes: result.test, table.columns, report.summary ...)
RESULTS: dict[str, str] = {
    "title": "what a result table or report holds",
    "columns": "a result table's column names, in order",
    "rows": "a result table's rows, one tuple of values each, in column order",
    "test": "a result's test table (dispersion(...).test: one row per model)",
    "groups": "a result's per-group table (dispersion(...).groups: one row per model and group)",
    "summary": "a report's summary table (one row per model)",
    "sections": "a report's sections, in order",
    "meta": "what a report ran: source, columns, seed, versions, the SQL",
    "name": "a report section's name",
    "table": "a report section's table of figures",
    "caution": "what a report section's figures can and cannot say",
}
NAMES: dict[str, str] = {**TABLES, **COLUMNS, **OPTIONS, **CLI,
                         **{name: meaning for name, meaning in RESULTS.items() if name not in OPTIONS}}

def check_model_name(model: str | None, output: Iterable[str], function: str) -> None:
    """Refuse a model column whose name is one of ``function``'s output columns: the output keeps
    the model column's name, so the two would collide."""
    if model is not None and model in set(output):
        quoted = '"' + model.replace('"', '""') + '"'      # as SQL names it, for the message's SELECT ... AS
        fail("column.collision", column=quoted, function=function)
