"""A fake ReportResult for the rendering and plotting tests.

Two models of different dimension, every section the renderers and plots know about, and the
awkward cells a renderer must survive: a None, an inf, a NaN, and a group label that is HTML
(``<script>``) with a Markdown pipe in it.  The numbers are made up but hang together (R² is the
same in the summary, the decomposition and the jackknife), so a plot can be checked against a table.
"""

from __future__ import annotations

import math

from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

MODELS = ("mini-384", "base-768")
EVIL_LABEL = '<script>alert("x")</script> | a&b [red]'  # HTML, a Markdown pipe, rich markup
R2 = {"mini-384": 0.312345678, "base-768": 0.4567891}
R2_SE = {"mini-384": 0.0412, "base-768": 0.0388}
BOOT_CI = {"mini-384": (0.241, 0.401), "base-768": (0.383, 0.532)}
GROUPS = ("astronomy", "baking", "chess", EVIL_LABEL, "singleton-topic", "zoology")
SIZES = (12, 9, 15, 7, 1, 10)
# W~_g per group; None for the singleton (SPEC S4: no W~ on a singleton group)
W_TILDE = {
    "mini-384": (0.61, 0.58, 0.66, 0.70, None, 0.55),
    "base-768": (0.52, 0.47, 0.59, 0.63, None, 0.44),
}
MARGINS = {  # per-query normalised margins M in [-1, 1]
    "mini-384": tuple(round(-0.35 + 0.021 * k, 4) for k in range(40)),
    "base-768": tuple(round(-0.25 + 0.023 * k, 4) for k in range(40)),
}
DOSE_LEVELS = (0, 1, 2, 3)
DOSE = {"mini-384": (0.10, 0.14, 0.19, 0.27), "base-768": (0.08, 0.11, 0.13, 0.20)}
DOSE_SE = {"mini-384": (0.01, 0.012, 0.015, 0.02), "base-768": (0.008, 0.01, 0.012, 0.018)}
CAUTIONS = {
    "decomposition": "V is descriptive and not comparable across models; R² compares the same design only.",
    "groups": "W~_g is a group's spread, size-corrected; it is not crowding around a correct document.",
    "jackknife": "Leave-one-group-out standard errors; they treat groups as the sampled units.",
    "bootstrap": "Percentile intervals from resampling groups with replacement.",
    "permanova": "A permutation p-value is not the chance the null is true, and not an effect size.",
    "dispersion": "A significant dispersion test means spreads differ; F may reflect spread, not location.",
    "compare": "Paired over the same items: the same deletions and resamples for both models.",
    "alignment": "M is scale-free and says only whether the correct document ranks first.",
    "dose": "W~_q per level: does paraphrase spread grow with level? Descriptive, with uncertainty.",
}


def _table(title, columns, rows):
    return ResultTable(title, tuple(columns), tuple(tuple(r) for r in rows))


def _sections(models) -> dict[str, Section]:
    n = sum(SIZES)
    groups = len(SIZES)
    tables = {
        "decomposition": _table("decomposition", (
            "model", "n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v", "mean_resultant_length", "w_bar"),
            [(m, n, groups, 30.0, 30.0 * (1 - R2[m]), 30.0 * R2[m], R2[m], (groups - 1) / (n - 1),
              math.inf if m == "base-768" else 4.54, 0.5, 0.7071, 0.5 * (1 - R2[m])) for m in models]),
        "groups": _table("groups", ("model", "group", "n_g", "w", "w_tilde"),
                         [(m, g, size, 0.0 if size == 1 else w * (size - 1) / size, w)
                          for m in models for g, size, w in zip(GROUPS, SIZES, W_TILDE[m])]),
        "jackknife": _table("jackknife", ("model", "statistic", "estimate", "se", "groups"),
                            [(m, "r2", R2[m], R2_SE[m], groups) for m in models]),
        "bootstrap": _table("bootstrap", (
            "model", "stat", "estimate", "se", "ci_low", "ci_high", "level", "replicates", "groups"),
            [(m, "r2", R2[m], R2_SE[m] * 1.05, *BOOT_CI[m], 0.95, 2000, groups) for m in models]),
        "permanova": _table("permanova", ("model", "f", "p_value", "permutations"),
                            [(m, 4.54, 0.001, 999) for m in models]),
        "dispersion": _table("dispersion", ("model", "f", "p_value", "permutations"),
                             [(m, 1.2 if m == models[0] else math.nan, 0.31, 999) for m in models]),
        "compare": _table("compare", (
            "model_a", "model_b", "estimate_a", "estimate_b", "difference", "se", "ci_low", "ci_high", "items"),
            [(models[0], models[1], R2[models[0]], R2[models[1]], R2[models[0]] - R2[models[1]],
              0.021, -0.185, -0.103, n)] if len(models) > 1 else []),
        "alignment": _table("alignment", ("model", "query", "m"),
                            [(m, f"q{k:03d}", value) for m in models for k, value in enumerate(MARGINS[m])]),
        "dose": _table("dose", ("model", "strength", "w_tilde_q", "se", "queries"),
                       [(m, level, w, se, 20) for m in models
                        for level, w, se in zip(DOSE_LEVELS, DOSE[m], DOSE_SE[m])]),
    }
    return {name: Section(name, name.capitalize(), table, CAUTIONS[name]) for name, table in tables.items()}


def fake_report(*, sections: tuple[str, ...] | None = None, models=MODELS) -> ReportResult:
    """The fake report; ``sections`` picks which sections to keep (default: all, in a fixed order)."""
    made = _sections(models)
    names = tuple(made) if sections is None else sections
    n = sum(SIZES)
    summary = _table("summary", (
        "model", "n", "groups", "r2", "r2_se", "r2_ci_low", "r2_ci_high", "f", "p_value", "v", "w_bar", "dispersion_p"),
        [(m, n, len(SIZES), R2[m], R2_SE[m], R2[m] - 1.96 * R2_SE[m], R2[m] + 1.96 * R2_SE[m],
          4.54, 0.001 if m == "mini-384" else None, 0.5, 0.5 * (1 - R2[m]), None) for m in models])
    meta = {
        "source": "examples/embeddings.parquet", "vector": "embedding", "group": "topic", "model": "model",
        "permutations": 999, "seed": 42, "embsql_version": "0.1.0", "duckdb_version": "2.0.1",
        "created": "2025-01-02T03:04:05+00:00",
        "sql": 'SELECT "model", "topic", count(*) AS n_g\nFROM "embeddings" GROUP BY ALL',
    }
    return ReportResult("embsql report: topic structure by model", summary,
                        tuple(made[name] for name in names), meta)


def unlabelled_report() -> ReportResult:
    """A report without a model column: one row whose model is None, and only the decomposition section."""
    full = fake_report(sections=("decomposition",), models=("mini-384",))
    def unlabel(table):
        return ResultTable(table.title, table.columns, tuple((None, *row[1:]) for row in table.rows))
    sections = tuple(Section(s.name, s.title, unlabel(s.table), s.caution) for s in full.sections)
    return ReportResult("embsql report", unlabel(full.summary), sections, {**full.meta, "model": None})
