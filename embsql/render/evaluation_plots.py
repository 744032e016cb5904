"""The figure of a report's retrieval evaluation: how nDCG@10 spreads over the queries, one box
per model (5-25-50-75-95 % of queries, the mean as a marker), drawn from the
``evaluation_queries`` table.  Built on matplotlib.figure.Figure directly, as embsql.render.plots."""

from __future__ import annotations

import math

from embsql.render.document import Document
from embsql.render.figures import Plot, new_figure
from embsql.result_table import model_label

_QUANTILES = ("p05", "p25", "median", "p75", "p95")


def ndcg_distribution_plot(result: Document) -> Plot | None:
    """Boxes of per-query nDCG@10 per model, or None when the report has no evaluation."""
    section = next((s for s in result.sections if s.name == "evaluation_queries"), None)
    if section is None:
        return None
    rows = [r for r in section.table.to_dicts()
            if all(isinstance(r.get(c), float) and math.isfinite(r[c]) for c in _QUANTILES)]
    if not rows:
        return None
    stats = [{"label": model_label(r["model"]), "whislo": r["p05"], "q1": r["p25"], "med": r["median"],
              "q3": r["p75"], "whishi": r["p95"], "mean": r["mean"]} for r in rows]
    figure = new_figure(figsize=(max(4.6, 1.3 * len(rows) + 2.5), 4.0), layout="constrained")
    ax = figure.subplots()
    ax.bxp(stats, showfliers=False, showmeans=True)
    ax.set_ylim(-0.03, 1.03)
    ax.set_ylabel("nDCG@10 of a query")
    ax.set_title("Per-query nDCG@10 per model", fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    zero = ", ".join(f"{model_label(r['model'])} {r['zero']:.0%}" for r in rows)
    caption = ("Boxes: 25-75 % of queries, line the median, whiskers 5 % and 95 %, marker the mean; one box per "
               f"model. Share of queries with nothing relevant in the top 10: {zero}.")
    return Plot("evaluation_queries", "evaluation_queries", caption, figure)


def evaluation_compare_plot(result: Document) -> Plot | None:
    """Each pair's nDCG@10 difference with its interval, or None without a paired comparison."""
    section = next((s for s in result.sections if s.name == "evaluation_compare"), None)
    if section is None:
        return None
    rows = [r for r in section.table.to_dicts()
            if all(isinstance(r.get(c), float) and math.isfinite(r[c]) for c in ("difference", "ci_low", "ci_high"))]
    if not rows:
        return None
    figure = new_figure(figsize=(6.4, max(2.2, 0.55 * len(rows) + 1.4)), layout="constrained")
    ax = figure.subplots()
    for y, r in enumerate(rows):
        ax.plot([r["ci_low"], r["ci_high"]], [y, y], color="#1f5f99", linewidth=2)
        ax.plot([r["difference"]], [y], "o", color="#1f5f99")
    ax.axvline(0.0, color="#888888", linewidth=1, linestyle="--")
    ax.set_yticks(range(len(rows)), [f"{model_label(r['model_a'])} − {model_label(r['model_b'])}" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"difference in mean {rows[0]['metric']}")
    ax.set_title("Paired comparison of models", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    level = rows[0].get("level") or 0.95
    caption = (f"Dots: mean difference per pair of models; lines: its {level:.0%} interval (cluster-robust t). "
               "An interval away from the dashed line at 0 means one model retrieves better on these queries.")
    return Plot("evaluation_compare", "evaluation_compare", caption, figure)
