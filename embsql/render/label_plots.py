"""The figures of a report's similarity and classification sections: the cosine of each judged pair
against its gold score, one panel per model (from ``similarity_pairs``, titled with the model's
Spearman and Pearson from ``similarity``), and the accuracy of k-NN and of the nearest centroid per
model with their intervals (from ``classification``).  Built on matplotlib.figure.Figure directly,
as embsql.render.plots."""

from __future__ import annotations

import math

from embsql.render.document import Document
from embsql.render.figures import Plot, finite, new_figure
from embsql.result_table import model_label

PANELS_PER_ROW = 3
COLOURS = {"knn": "#1f5f99", "centroid": "#b04a1c"}
CLASSIFIERS = {"knn": "k-NN", "centroid": "nearest centroid"}


def _rows(result: Document, name: str) -> list[dict]:
    return result[name].to_dicts() if any(s.name == name for s in result.sections) else []


def similarity_scatter_plot(result: Document) -> Plot | None:
    """Cosine against gold score per model, or None when the report has no similarity section."""
    points = [r for r in _rows(result, "similarity_pairs") if finite(r.get("cosine")) and finite(r.get("score"))]
    if not points:
        return None
    figures = {r["model"]: r for r in _rows(result, "similarity")}
    models = list(dict.fromkeys(r["model"] for r in points))
    columns = min(len(models), PANELS_PER_ROW)
    lines = math.ceil(len(models) / columns)
    figure = new_figure(figsize=(0.4 + 3.6 * columns, 0.5 + 3.3 * lines), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False, sharex=True, sharey=True).ravel()
    for ax, model in zip(axes, models):
        mine = [r for r in points if r["model"] == model]
        ax.scatter([r["score"] for r in mine], [r["cosine"] for r in mine], s=9, alpha=0.45, color="#1f5f99",
                   edgecolors="none")
        row = figures.get(model, {})
        title = model_label(model) if model is not None else "cosine against gold score"
        if finite(row.get("spearman")) and finite(row.get("pearson")):
            title += f"\nSpearman {row['spearman']:.3f}, Pearson {row['pearson']:.3f}"
        ax.set_title(title, fontsize="medium")
        ax.grid(alpha=0.3)
    for ax in axes[len(models):]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel("cosine of the two items")
    for ax in axes[-columns:]:
        ax.set_xlabel("gold similarity score")
    total = {model_label(m): sum(r["model"] == m for r in points) for m in models}
    caption = ("Each dot is one judged pair: its gold score (x) and the cosine of its two items in the model (y); "
               "the closer the dots are to a rising curve, the higher the Spearman correlation. Pairs drawn: "
               + ", ".join(f"{m} {n}" for m, n in total.items()) + ".")
    return Plot("similarity", "similarity_pairs", caption, figure)


def classification_plot(result: Document) -> Plot | None:
    """k-NN and nearest-centroid accuracy per model with intervals, or None without a classification."""
    rows = [r for r in _rows(result, "classification") if finite(r.get("accuracy"))]
    if not rows:
        return None
    models = list(dict.fromkeys(r["model"] for r in rows))
    figure = new_figure(figsize=(max(4.6, 1.4 * len(models) + 2.6), 3.8), layout="constrained")
    ax = figure.subplots()
    offsets = {"knn": -0.12, "centroid": 0.12}
    for classifier, offset in offsets.items():
        mine = {r["model"]: r for r in rows if r.get("classifier") == classifier}
        xs = [i + offset for i, m in enumerate(models) if m in mine]
        ys = [mine[m]["accuracy"] for m in models if m in mine]
        for x, m in zip(xs, [m for m in models if m in mine]):
            low, high = mine[m].get("ci_low"), mine[m].get("ci_high")
            if finite(low) and finite(high):
                ax.vlines(x, low, high, color=COLOURS[classifier], linewidth=2)
        k = next((mine[m].get("k") for m in mine if mine[m].get("k") is not None), None)
        label = CLASSIFIERS[classifier] + (f" (k = {k})" if k is not None else "")
        ax.plot(xs, ys, "o", color=COLOURS[classifier], markersize=7, label=label, zorder=3)
    ax.set_xticks(range(len(models)), [model_label(m) for m in models])
    ax.set_xlim(-0.6, len(models) - 0.4)
    ax.set_ylabel("accuracy (leave-one-out)")
    ax.set_title("Accuracy per model", fontsize="medium")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    level = next((r["level"] for r in rows if finite(r.get("level"))), 0.95)
    caption = (f"Dots: the share of items whose label each classifier predicts; lines: its {level:.0%} interval. "
               "Models are compared on the same items in the paired comparison, not by whether these lines overlap.")
    return Plot("classification", "classification", caption, figure)
