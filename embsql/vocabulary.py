"""The one vocabulary: every name an argument can have, in SQL, Python, the CLI and TOML.

A concept has one name on every surface: the SQL functions' named arguments (``model := 'm'``),
the Python faces' keywords (``model='m'``), the command line's flags (``--model m``) and the
report file's keys (``model = "m"``).  A flag is the name with ``-`` for ``_`` (``--doc-id``).
The reference's vocabulary page is generated from :data:`NAMES`, and tests/api/test_vocabulary.py
reads every SQL macro's, Python face's and CLI flag's parameters and fails on a name that is not
here.  A name a function does not take is an error: Python's own TypeError for a face, ``embsql:
[argument.unknown]`` listing what the function takes for a SQL function (embsql.run_sql), exit 2 and
one line for a flag.

Where a function returns one row per model, the model column keeps the input column's name, as
``GROUP BY`` would; a model column whose name is also one of the function's output columns is an
error naming both (:func:`check_model_name`), never a silently overwritten column.

The vector, model and item columns follow one convention in Python (:data:`ROLE_DEFAULTS`): each
is required where the face always needs it (``vector`` wherever vectors are read; ``model`` where
models are compared; ``item`` where rows are paired by item), and defaults to None where the face
can do without it (one model; no item; for rank_models, an evaluation instead of vectors).  No
face's keyword defaults to a conventional column name.
"""

from __future__ import annotations

from collections.abc import Iterable

from embsql.errors import fail

__all__ = ["NAMES", "OUTPUTS", "ROLE_DEFAULTS", "check_model_name"]

# the defaults a Python face may give the vector, model and item columns: required, or None where optional
ROLE_DEFAULTS: dict[str, tuple[str, ...]] = {role: ("required", "None") for role in ("vector", "model", "item")}

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
# the columns of the result tables, on every surface (SQL functions, Python faces, the report) -> what the
# column holds.  A column that echoes an argument (level, alpha, k, statistic, method, ...) is that
# argument's name and means what OPTIONS says.  One name, one meaning: `level` is only a confidence level,
# `p_adjusted` the only adjusted p-value, `invariance` the level of the invariance hierarchy.
# tests/api/test_vocabulary.py holds every SQL function's documented columns and every *_COLUMNS tuple to this.
OUTPUTS: dict[str, str] = {
    # counts and design
    "n": "the number of vectors (or rows, or labelled items) the figure is computed on",
    "n_g": "the number of vectors in the group",
    "n0": "the effective group size of the ICC, (n − Σ n_g²/n)/(G − 1)",
    "groups": "the number of groups G (or paraphrase groups, or groups in the test)",
    "groups_exact": "G as computed, before rounding up",
    "groups_left_out": "groups a test left out (too few items), with the reason in `note`",
    "items": "the number of items the figure is computed on",
    "items_left_out": "items of the groups a test left out",
    "shared_items": "the items both models have",
    "same_items": "whether the two models have exactly the same items",
    "singletons": "groups of one item, left out of the group figures",
    "clusters": "the clusters (groups) an interval resamples",
    "queries": "the number of queries",
    "pairs": "the number of pairs used",
    "classes": "the number of distinct labels",
    "dim": "the vector dimension d",
    "in_test": "whether the group is in the dispersion test",
    "resolved": "false where a group's vectors are identical to within floating-point precision",
    # the decomposition
    "ss_t": "the total sum of squares Σ_i ‖z_i − μ‖² of the unit vectors",
    "ss_w": "the within-group sum of squares Σ_g Σ_{i in g} ‖z_i − μ_g‖²",
    "ss_b": "the between-group sum of squares Σ_g n_g ‖μ_g − μ‖²",
    "ss": "a term's sum of squares (SS_res and SS_T on the residual and total rows)",
    "df": "the degrees of freedom a term adds",
    "ms_b": "the between-group mean square SS_B/(G − 1)",
    "ms_w": "the within-group mean square SS_W/(n − G)",
    "r2": "SS_B / SS_T, the share of the spread the groups explain",
    "r2_null": "(G − 1)/(n − 1), roughly E[R²] with no group structure",
    "r2_se": "the cluster-jackknife standard error of R²",
    "r2_adj": "R² adjusted for the number of groups, 1 − (1 − R²)(n − 1)/(n − G)",
    "r2_corrected": "the jackknife bias-corrected R² that R²'s interval is built around",
    "r2_ci_low": "the lower end of R²'s interval",
    "r2_ci_high": "the upper end of R²'s interval",
    "f": "pseudo-F (SS_B/(G−1)) / (SS_W/(n−G)), or the dispersion test's statistic",
    "v": "the spread 1 − ‖μ‖² = SS_T/n: descriptive, not comparable across models",
    "w": "W_g = 1 − ‖μ_g‖², the group's mean squared distance to its centroid",
    "w_tilde": "W̃_g = n_g/(n_g − 1) W_g, size-corrected",
    "w_bar": "SS_W / n",
    "w_d": "the Welch-type statistic W*_d that permanova_welch tests",
    "w_tilde_mean": "the mean of W̃_g over the groups",
    "w_tilde_se": "its cluster-jackknife standard error",
    "w_tilde_q": "the mean W̃ of the paraphrase groups of queries",
    "w_tilde_g": "the mean W̃ of the documents' topic groups",
    "ratio": "W̃_q / W̃_g, descriptive",
    "eff_dim": "the participation ratio (Σ eigenvalues)² / Σ eigenvalues² of the covariance",
    "eff_dim_bounded": "whether eff_dim is bounded by the sample size rather than by the vectors",
    "mean_resultant_length": "‖μ‖, the length of the mean unit vector",
    "mean_distance": "the mean unadjusted distance to the group centroid",
    "icc": "the intra-class correlation ICC(1); negative when groups differ less than chance",
    "kind": "which ICC: 'scalar' or 'trace'",
    "term": "a term of a multi-term design ('a:b' for an interaction), 'Residual' or 'Total'",
    # estimates, intervals and tests
    "estimate": "the statistic's value on all the data",
    "corrected": "the bias-corrected value an interval is built around",
    "estimate_bc": "the jackknife bias-corrected estimate the interval is built around",
    "estimate_a": "the statistic of model_a",
    "estimate_b": "the statistic of model_b",
    "difference": "model_a's value minus model_b's",
    "se": "the standard error of the row's figure (cluster-jackknife or item-clustered, as the function says)",
    "ci_low": "the lower end of the row's interval",
    "ci_high": "the upper end of the row's interval",
    "calibrated": "whether simulation showed the interval's coverage or the test's level at this size",
    "dropped": "bootstrap replicates left out because the statistic was undefined in them",
    "interval": "which kind the row's interval is: 'marginal' or 'simultaneous'",
    "p_value": "the p-value of the row's test",
    "p_adjusted": "the p-value adjusted for multiple comparisons (Holm by default)",
    "p_exact": "the exact McNemar p-value",
    "permutations": "the number of permutations B actually run",
    "dispersion_p": "the dispersion test's p-value (the report's summary)",
    "note": "NULL, or what was left out and why",
    "rank": "the model's rank by its estimate (or the positive document's rank among the distractors)",
    "rank_low": "the lowest rank the model may have, simultaneously with all the others",
    "rank_high": "the highest rank the model may have, simultaneously with all the others",
    "top": "whether the model is in the confidence set for the best",
    # models and pairs
    "model_a": "the first model of the pair",
    "model_b": "the second model of the pair",
    "reference": "the reference model both models are measured against",
    "measure": "which agreement measure the row holds",
    "invariance": "the measure's level of the invariance hierarchy: 'similarity' or 'monotone'",
    "cka": "linear CKA between the two models' centred unit vectors",
    "cka_a": "CKA(model_a, reference)",
    "cka_b": "CKA(model_b, reference)",
    "r": "a correlation between two models' geometries (Procrustes r, or Mantel's Spearman r)",
    "m12_squared": "the residual sum of squares of the best rotation of one model onto the other",
    "overlap": "the mean share of k nearest neighbours two models have in common",
    "chance": "the overlap unrelated neighbour sets would give",
    # groups, items and labels
    "group": "the group label",
    "group_a": "the first group of the pair",
    "group_b": "the second group of the pair",
    "item": "the item",
    "item_a": "the pair's first item",
    "item_b": "the pair's second item",
    "label": "the item's label",
    "predicted": "the predicted label",
    "correct": "whether the predicted label is the label",
    "classifier": "'knn' or 'centroid'",
    "split": "'leave-one-out' or 'train-test'",
    "accuracy": "the share of items whose predicted label is their label",
    "accuracy_a": "model_a's accuracy",
    "accuracy_b": "model_b's accuracy",
    "a_only": "the items only model_a gets right",
    "b_only": "the items only model_b gets right",
    "macro_f1": "the mean over the classes of F1 (scikit-learn's average='macro')",
    "macro_f1_ci_low": "the lower end of macro_f1's interval",
    "macro_f1_ci_high": "the upper end of macro_f1's interval",
    # similarity
    "correlation": "which correlation: 'spearman' or 'pearson'",
    "spearman": "Spearman's rho of cosine similarity and the gold score",
    "pearson": "Pearson's r of cosine similarity and the gold score",
    "pearson_se": "its item-clustered standard error",
    "pearson_ci_low": "the lower end of pearson's interval",
    "pearson_ci_high": "the upper end of pearson's interval",
    "score": "a gold similarity score, or a run's retrieval score",
    "cosine": "the cosine similarity of the pair's vectors",
    "skipped": "rows or pairs left out (only when asked to skip them)",
    "skipped_null": "rows left out for a NULL vector or element (bad_rows = 'skip')",
    "skipped_zero": "rows left out for a zero vector (bad_rows = 'skip')",
    "skipped_nonfinite": "rows left out for a NaN or infinite coordinate (bad_rows = 'skip')",
    # retrieval
    "qid": "the query id",
    "doc_id": "the document id",
    "metric": "the metric and its cutoff, e.g. ndcg@10",
    "value": "the metric's value (the mean over the queries, or one query's)",
    "mean_a": "model_a's mean over the queries",
    "mean_b": "model_b's mean over the queries",
    "without_relevant": "judged queries without a relevant document (they score 0 and count)",
    "missing": "judged queries the run does not rank",
    "unjudged": "the mean share of each query's top documents that has no judgement",
    "d_pos2": "the squared distance of the query to its positive document",
    "d_neg2": "the squared distance of the query to its nearest distractor",
    "margin": "the positive's similarity minus the best distractor's",
    "m": "the scale-free margin (d_neg2 − d_pos2)/(d_neg2 + d_pos2), in [−1, 1]",
    "ties": "distractors whose similarity equals the positive's to rounding",
    "top1": "the share of queries whose positive ranks first",
    "top1_se": "its cluster-jackknife standard error",
    "recall_at_1": "the share of queries whose positive is in the top 1",
    "recall_at_5": "the share of queries whose positive is in the top 5",
    "recall_at_5_se": "its cluster-jackknife standard error",
    "recall_at_10": "the share of queries whose positive is in the top 10",
    "recall_at_10_se": "its cluster-jackknife standard error",
    "mrr": "the mean reciprocal rank of the positive",
    "mrr_se": "its cluster-jackknife standard error",
    "m_mean": "the mean of m over the queries",
    "m_mean_se": "its cluster-jackknife standard error",
    "m_median": "the median of m",
    "m_negative": "the share of queries with m < 0 (a distractor nearer than the positive)",
    "m_p05": "the 5% quantile of m", "m_p25": "the 25% quantile of m", "m_p75": "the 75% quantile of m",
    "m_p95": "the 95% quantile of m",
    "mean": "the mean of the metric over the queries",
    "median": "the median of the metric over the queries",
    "p05": "the 5% quantile of the metric over the queries", "p25": "the 25% quantile",
    "p75": "the 75% quantile", "p95": "the 95% quantile",
    "quantile": "which quantile a row holds",
    "zero": "the share of queries scoring 0",
    "perfect": "the share of queries scoring 1",
    "strength": "the paraphrase strength level (a value of the strength column)",
    "step": "the change of W̃_q from the previous strength level",
    "step_se": "its paired jackknife standard error",
    "monotone": "whether the estimates increase strictly with the strength",
    "dose_works": "monotone and the trend test's p-value at most alpha",
    "input": "the input figure a pairing compares (query-side)",
    "output": "the output figure a pairing compares (document-side)",
}
NAMES: dict[str, str] = {**TABLES, **COLUMNS, **OPTIONS, **CLI,
                         **{name: meaning for name, meaning in RESULTS.items() if name not in OPTIONS}}

def check_model_name(model: str | None, output: Iterable[str], function: str) -> None:
    """Refuse a model column whose name is one of ``function``'s output columns: the output keeps
    the model column's name, so the two would collide."""
    if model is not None and model in set(output):
        quoted = '"' + model.replace('"', '""') + '"'      # as SQL names it, for the message's SELECT ... AS
        fail("column.collision", column=quoted, function=function)
