"""embsql: statistics of embedding tables that are comparable across models, inside DuckDB.

>>> import embsql
>>> con = embsql.connect()                       # in-memory DuckDB with every macro registered
>>> _ = con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
...                 " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
>>> con.sql("SELECT round(ss_t, 12), round(ss_w, 12), round(r2, 4) FROM emb_anova('ex', 'g', 'v')").fetchall()
[(2.2, 0.4, 0.8182)]
"""

from importlib.metadata import version

from embsql import startup as _startup  # noqa: F401  (first: Ctrl-C while the rest loads, see there)
from embsql.api.agreement import knn_agreement, mantel
from embsql.api.classification import centroid_classify, compare_classification, knn_classify
from embsql.api.compare_retrieval import compare_retrieval
from embsql.api.decomposition import anova, anova_dist, groups
from embsql.api.evaluation import evaluate, retrieve, write_trec_run
from embsql.api.geometry import cka, compare_cka, procrustes
from embsql.api.model_ranking import rank_models
from embsql.api.pairwise_permanova import pairwise_permanova
from embsql.api.permanova_terms import permanova_terms
from embsql.api.permutation import DispersionResult, dispersion, permanova, permanova_welch
from embsql.api.resampling import bootstrap, compare_structure, jackknife
from embsql.api.retrieval import margins, pairing, retrieval_dose, retrieval_layers, retrieval_summary
from embsql.api.similarity import compare_similarity, similarity_eval
from embsql.calibration import render_docstrings as _render_docstrings
from embsql.errors import (
                     ArgumentError,
                     BadLabelError,
                     BadVectorError,
                     ColumnNotFoundError,
                     ColumnTypeError,
                     DesignError,
                     DistanceTableError,
                     EmbsqlError,
                     EngineError,
                     InputError,
                     SourceNotFoundError,
                     SqlInputError,
)
from embsql.io.interrupts import interrupt
from embsql.io.registration import connect, register
from embsql.io.retrieval_tables import Docs, Qrels, Queries, Run
from embsql.io.sql import run_sql
from embsql.reporting.build import Report, report, run_on
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

__version__ = version("embsql")   # the one version source is pyproject.toml

__all__ = [
    "permanova_terms", "permanova_welch", "DispersionResult",
    "anova", "anova_dist", "groups", "run_sql", "permanova", "dispersion", "jackknife", "bootstrap", "compare_structure",
    "connect", "register", "interrupt", "ResultTable",
    "report", "Report", "run_on", "ReportResult", "Section", "knn_agreement", "mantel", "EngineError",
    "EmbsqlError", "InputError", "SourceNotFoundError", "ColumnNotFoundError", "ColumnTypeError",
    "BadVectorError", "BadLabelError", "DesignError", "DistanceTableError", "SqlInputError",
    "margins", "retrieval_summary", "retrieval_layers", "retrieval_dose", "pairing", "ArgumentError",
    "compare_retrieval",
    "knn_classify", "centroid_classify", "compare_classification",
    "retrieve", "evaluate", "write_trec_run",
    "cka", "compare_cka", "procrustes", "pairwise_permanova",
    "Queries", "Docs", "Qrels", "Run",
    "similarity_eval", "compare_similarity",
    "rank_models",
]

# the measured figures the docstrings quote ({{figure KEY}}) are filled in from validation/calibration.json
_render_docstrings({name: globals()[name] for name in __all__})
