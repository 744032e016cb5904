"""The figure of a report's ranking section: each model's rank confidence set as a bar from rank_low
to rank_high, a dot at its rank by the estimate, one row per model and one panel per metric.  Built
on matplotlib.figure.Figure directly, as embsql.render.plots."""

from __future__ import annotations

from embsql.render.document import Document
from embsql.render.figures import Plot, finite, new_figure
from embsql.result_table import model_label

BLUE, GREY = "#1f5f99", "#8a8a8a"


def rank_plot(result: Document) -> Plot | None:
    """The rank sets of the ranking section, or None when the report has none."""
    section = next((s for s in result.sections if s.name == "ranking"), None)
    if section is None:
        return None
    rows = [r for r in section.table.to_dicts()
            if all(finite(r.get(c)) for c in ("rank", "rank_low", "rank_high"))]
    blocks: dict[str, list[dict]] = {}
    for row in rows:
        blocks.setdefault(str(row.get("metric") or row.get("statistic")), []).append(row)
    blocks = {metric: found for metric, found in blocks.items() if len(found) >= 2}
    if not blocks:
        return None
    most = max(len(found) for found in blocks.values())
    heights = [len(found) + 1.2 for found in blocks.values()]
    figure = new_figure(figsize=(5.6, 0.9 + 0.32 * sum(heights)), layout="constrained")
    axes = figure.subplots(len(blocks), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, (metric, found) in zip(axes, blocks.items()):
        found = sorted(found, key=lambda r: (r["rank"], r["rank_low"], r["rank_high"]))
        for y, row in enumerate(found):
            color = BLUE if row.get("top") else GREY
            ax.plot([row["rank_low"] - 0.18, row["rank_high"] + 0.18], [y, y], color=color, linewidth=7,
                    alpha=0.35, solid_capstyle="round")
            ax.plot([row["rank"]], [y], "o", color=color, markersize=7)
        ax.set_yticks(range(len(found)), [model_label(r["model"]) for r in found])
        ax.set_ylim(len(found) - 0.4, -0.6)
        ax.set_xlim(0.5, most + 0.5)
        ax.set_xticks(range(1, most + 1))
        ax.set_title(f"Ranked by {metric}", fontsize="medium", loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1].set_xlabel("rank (1 = best)")
    level = rows[0].get("level") if finite(rows[0].get("level")) else 0.95
    caption = (f"Bars: each model's {level:.0%} simultaneous rank set, rank_low to rank_high (all models together); "
               "dots: its rank by the estimate. Blue: the models that could be first.")
    return Plot("ranking", "ranking", caption, figure)
