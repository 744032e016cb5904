"""Figures of a report: the paired differences of R², R² per model, W~_g per group, retrieval
margins, paraphrase dose, and V beside R² for each experiment of the demo (the models compared
and the retrieval evaluation have their own modules, geometry_plots and evaluation_plots).

``plot_report`` returns a :class:`~embsql.render.figures.Figures` list, which a notebook displays
as images with no magic command; ``report_plots`` gives each figure with its place in the HTML
report.  Each figure is drawn from one table of the report and skipped when that table, or the
columns it needs, are absent.  Figures that show a per-model scale (W~_g, W~_q) get one panel per
model with its own y axis, because those spreads are not comparable across models.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from embsql.render.document import Document, DocumentSection
from embsql.render.evaluation_plots import evaluation_compare_plot, ndcg_distribution_plot
from embsql.render.figures import Figures, Plot, finite, new_figure, require_matplotlib
from embsql.render.geometry_plots import models_plot
from embsql.render.label_plots import classification_plot, similarity_scatter_plot
from embsql.render.rank_plots import rank_plot
from embsql.result_table import model_label

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

GOLDEN = (math.sqrt(5) - 1) / 2


def plot_report(result: Document) -> Figures:
    """The report's figures (matplotlib Figures); figures whose data are absent are skipped."""
    return Figures(plot.figure for plot in report_plots(result))


def report_plots(result: Document) -> list[Plot]:
    """Like :func:`plot_report`, with each figure's place and caption (used by the HTML renderer)."""
    require_matplotlib()   # no matplotlib: say so before anything is drawn
    makers: tuple[Callable[[Document], Plot | list[Plot] | None], ...] = (
        _compare_plot, _r2_plot, _w_tilde_plot, _margin_plot, _dose_plot, _experiment_plots, models_plot,
        ndcg_distribution_plot, evaluation_compare_plot, similarity_scatter_plot, classification_plot, rank_plot)
    plots: list[Plot] = []
    for make in makers:
        made = make(result)
        plots += made if isinstance(made, list) else [made] if made is not None else []
    return plots


# ---------------------------------------------------------------- R² per model

def _r2_plot(result: Document) -> Plot | None:
    summary = result.summary
    if "r2" not in summary.columns or _experiments(result):
        return None   # the demo draws R² beside V in each experiment's figure
    points = [(row["model"], row["r2"]) for row in summary.to_dicts() if finite(row["r2"])]
    if not points:
        return None
    models = [model for model, _ in points]
    r2 = [value for _, value in points]
    low, high, source, interval = _r2_intervals(result, models, r2)
    centres = _r2_centres(result, models) if source in ("bootstrap", "summary") else None

    figure = new_figure(figsize=(max(4.6, 1.3 * len(models) + 2.5), 4.0), layout="constrained")
    ax = figure.subplots()
    x = list(range(len(models)))
    if source:
        # drawn as segments, not errorbar(yerr=...): a percentile interval need not contain the estimate
        for xi, lo, hi in zip(x, low, high):
            if finite(lo) and finite(hi):
                ax.vlines(xi, lo, hi, color="#1f5f99", linewidth=2)
                ax.hlines([lo, hi], xi - 0.08, xi + 0.08, color="#1f5f99", linewidth=2)
    if centres is not None:   # the interval is built around the bias-corrected R²: that is its point
        ax.plot(x, centres, "o", color="#1f5f99", markersize=8, label="bias-corrected R² (the interval's point)",
                zorder=3)
        ax.plot(x, r2, "o", markerfacecolor="white", markeredgecolor="#1f5f99", markersize=7, label="sample R²",
                zorder=4)
    else:
        ax.plot(x, r2, "o", color="#1f5f99", markersize=8, label="R²", zorder=3)
    nulls = _column_by_model(result, "decomposition", "r2_null")
    if nulls and all(m in nulls for m in models):
        ax.plot(x, [nulls[m] for m in models], "x", color="#b04a1c", markersize=8,
                label="null expectation (G−1)/(n−1)", zorder=3)
    ax.set_xticks(x, [_label(m) for m in models], **_tick_style(models))
    ax.set_xlim(-0.6, len(models) - 0.4)
    top = max([v for v in r2 + high + (centres or []) if finite(v)])
    ax.set_ylim(0, min(1.0, top * 1.15 + 0.02))
    ax.set_ylabel("R² = SS_B / SS_T")
    ax.set_xlabel("model")
    ax.set_title("R² per model")
    ax.grid(axis="y", alpha=0.3)
    figure.legend(loc="outside lower center", ncols=2, fontsize="small", frameon=False)
    caption = "R² per model" + (f" with {interval}" if source else " (no interval in this report)") + "."
    if centres is not None:
        caption += " The filled dot is the bias-corrected R² the interval is built around; the open dot is the sample R²."
    return Plot("summary", source or ("decomposition" if _has(result, "decomposition") else ""), caption, figure)


Interval = tuple[list[Any], list[Any], str, str]   # low ends, high ends, the section they come from, in words


def _r2_centres(result: Document, models: list[Any]) -> list[Any] | None:
    """The bias-corrected R² each model's calibrated interval is built around (bootstrap's corrected,
    else the summary's r2_corrected), or None when the report does not have it for every model."""
    if _has(result, "bootstrap") and "corrected" in result["bootstrap"].columns:
        boot = {row["model"]: row.get("corrected") for row in result["bootstrap"].to_dicts()
                if row.get("statistic", "r2") == "r2"}
        if all(finite(boot.get(m)) for m in models):
            return [boot[m] for m in models]
    if "r2_corrected" in result.summary.columns:
        rows = {row["model"]: row.get("r2_corrected") for row in result.summary.to_dicts()}
        if all(finite(rows.get(m)) for m in models):
            return [rows[m] for m in models]
    return None


def _r2_intervals(result: Document, models: list[Any], r2: list[float]) -> Interval:
    """Interval ends per model, and where they came from: bootstrap CI, else ±1.96 jackknife SE,
    else the summary's own interval or SE."""
    def r2_rows(name: str) -> dict[Any, dict[str, Any]]:
        if not _has(result, name):
            return {}
        return {row["model"]: row for row in result[name].to_dicts() if row.get("statistic", "r2") == "r2"}

    boot = r2_rows("bootstrap")
    if boot and all(m in boot for m in models):
        row = boot[models[0]]
        level, replicates = row.get("level"), row.get("replicates")
        what = "calibrated interval (jackknife bias-corrected t, see the bootstrap section)"
        what = (f"{level:.0%} " if finite(level) else "") + what
        what += f" ({replicates} resamples of groups)" if replicates else ""
        return [boot[m].get("ci_low") for m in models], [boot[m].get("ci_high") for m in models], "bootstrap", what
    jack = r2_rows("jackknife")
    if jack and all(m in jack for m in models):
        se = [jack[m].get("se") for m in models]
        return _pm(r2, se) + ("jackknife", "±1.96 cluster-jackknife SE (leave one group out)")
    rows = {row["model"]: row for row in result.summary.to_dicts()}
    low = [rows[m].get("r2_ci_low") for m in models]
    high = [rows[m].get("r2_ci_high") for m in models]
    if any(finite(v) for v in low + high):
        return low, high, "summary", "the summary's interval (r2_ci_low to r2_ci_high)"
    se = [rows[m].get("r2_se") for m in models]
    if any(finite(v) for v in se):
        return _pm(r2, se) + ("summary", "±1.96 SE (the summary's r2_se)")
    return low, high, "", ""


def _pm(values: list[float], se: list[Any]) -> tuple[list[Any], list[Any]]:
    low = [v - 1.96 * s if finite(s) else None for v, s in zip(values, se)]
    high = [v + 1.96 * s if finite(s) else None for v, s in zip(values, se)]
    return low, high


# ---------------------------------------------------------------- W~_g per group

def _w_tilde_plot(result: Document) -> Plot | None:
    if not _has(result, "groups") or "w_tilde" not in result["groups"].columns:
        return None
    per_model: dict = {}
    singletons: dict = {}
    for row in result["groups"].to_dicts():
        per_model.setdefault(row["model"], [])
        singletons.setdefault(row["model"], 0)
        if finite(row["w_tilde"]):
            per_model[row["model"]].append(row["w_tilde"])
        else:
            singletons[row["model"]] += 1
    if not any(per_model.values()):
        return None

    figure, axes = _panel_figure(len(per_model))
    for ax, (model, values) in zip(axes, per_model.items()):
        if values:
            ax.boxplot([values], positions=[0], widths=0.5, showfliers=False,
                       medianprops={"color": "#b04a1c"}, boxprops={"color": "#555"})
            # a deterministic spread (golden-ratio steps by rank) instead of random jitter
            ranked = sorted(values)
            ax.scatter([((rank * GOLDEN) % 1 - 0.5) * 0.5 for rank in range(len(ranked))], ranked,
                       s=14, color="#1f5f99", alpha=0.75, zorder=3)
        ax.set_xticks([])
        ax.set_xlim(-0.5, 0.5)
        skipped = singletons[model]
        excluded = f"; {skipped} singleton{'s' if skipped > 1 else ''} left out" if skipped else ""
        ax.set_title(f"{_label(model)}\n{len(values)} groups{excluded}", fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel(r"$\tilde{W}_g$ (size-corrected spread)")
    _suptitle(figure, r"Within-group spread $\tilde{W}_g$ per model,", "each on its own scale", len(per_model))
    caption = ("W̃_g of every group with two or more items, one panel per model (box: quartiles and median); "
               "singleton groups have no W̃_g and are left out.")
    return Plot("groups", "groups", caption, figure)


# ---------------------------------------------------------------- retrieval margins

_QUANTILE_COLUMNS = ("m_p05", "m_p25", "m_median", "m_p75", "m_p95")


def _margin_quantile_plot(result: Document) -> Plot | None:
    """The alignment layer of a report carries quantiles of M, not every query: draw them as boxes
    (5-25-50-75-95 %), the same picture as a box plot of the queries themselves."""
    rows = [r for r in result["alignment"].to_dicts() if all(finite(r.get(c)) for c in _QUANTILE_COLUMNS)]
    if not rows:
        return None
    stats = [{"label": _label(r["model"]), "whislo": r["m_p05"], "q1": r["m_p25"], "med": r["m_median"],
              "q3": r["m_p75"], "whishi": r["m_p95"], "mean": r.get("m_mean")} for r in rows]
    figure = new_figure(figsize=(max(4.6, 1.3 * len(rows) + 2.5), 4.0), layout="constrained")
    ax = figure.subplots()
    ax.bxp(stats, showfliers=False, showmeans=all(finite(s["mean"]) for s in stats))
    ax.axhline(0, color="#444", linewidth=1, linestyle="--")
    ax.set_ylabel("normalised margin M")
    ax.set_title("Normalised retrieval margin M per model\n(M > 0: the correct document ranks first)",
                 fontsize="medium")
    caption = ("Boxes: 25-75 % of queries, line the median, whiskers 5 % and 95 %; one box per model. "
               "M > 0 exactly when the correct document ranks first.")
    return Plot("alignment", "alignment", caption, figure)


def _margin_plot(result: Document) -> Plot | None:
    if not _has(result, "alignment"):
        return None
    if "m" not in result["alignment"].columns:
        return _margin_quantile_plot(result)
    per_model: dict = {}
    for row in result["alignment"].to_dicts():
        if finite(row["m"]):
            per_model.setdefault(row["model"], []).append(row["m"])
    if not per_model:
        return None
    data = [v for values in per_model.values() for v in values]
    edges = np.linspace(min(-1.0, min(data)), max(1.0, max(data)), 41)
    figure = new_figure(figsize=(6.4, 4.0), layout="constrained")
    ax = figure.subplots()
    for model, values in per_model.items():
        counts, _ = np.histogram(values, bins=edges)
        positive = sum(v > 0 for v in values) / len(values)
        ax.stairs(counts, edges, linewidth=1.8, label=f"{_label(model)}: {positive:.0%} of {len(values)} with M > 0")
    ax.axvline(0, color="#444", linewidth=1, linestyle="--")
    ax.set_xlabel("normalised margin M  (M > 0: correct document first)")
    ax.set_ylabel("queries")
    ax.set_title("Normalised retrieval margin M per query")
    figure.legend(loc="outside lower center", ncols=min(len(per_model), 2), fontsize="small", frameon=False)
    caption = "Histogram of the per-query normalised margin M (40 bins over [-1, 1]), one line per model."
    return Plot("alignment", "alignment", caption, figure)


# ---------------------------------------------------------------- paraphrase dose

def _dose_plot(result: Document) -> Plot | None:
    if not _has(result, "dose") or not {"strength", "w_tilde_q"} <= set(result["dose"].columns):
        return None
    per_model: dict = {}
    for row in result["dose"].to_dicts():
        if finite(row["w_tilde_q"]):
            per_model.setdefault(row["model"], []).append((row["strength"], row["w_tilde_q"], row.get("se")))
    if not per_model:
        return None
    levels = list(dict.fromkeys(level for rows in per_model.values() for level, _, _ in rows))
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in levels)
    position = {level: (level if numeric else k) for k, level in enumerate(levels)}

    figure, axes = _panel_figure(len(per_model))
    for ax, (model, rows) in zip(axes, per_model.items()):
        rows = sorted(rows, key=lambda r: position[r[0]])
        x = [position[level] for level, _, _ in rows]
        y = [w for _, w, _ in rows]
        err = [1.96 * se if finite(se) else math.nan for _, _, se in rows]
        ax.errorbar(x, y, yerr=err, fmt="o-", color="#1f5f99", capsize=4)
        ax.set_title(_label(model), fontsize="medium")
        ax.set_xlabel("paraphrase level")
        if not numeric:
            ax.set_xticks(list(position.values()), [str(level) for level in levels])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(r"$\tilde{W}_q$ (query spread)")
    _suptitle(figure, r"Paraphrase dose: $\tilde{W}_q$ by level,", "each model on its own scale", len(per_model))
    caption = "W̃_q per paraphrase level with ±1.96 SE bars, one panel per model."
    return Plot("dose", "dose", caption, figure)


# ---------------------------------------------------------------- paired differences

def _compare_plot(result: Document) -> Plot | None:
    """R²_a − R²_b of every pair of models with its interval, against the line of no difference."""
    if not _has(result, "compare"):
        return None
    rows = [r for r in result["compare"].to_dicts() if finite(r.get("difference"))]
    if not rows:
        return None
    names = [f"{_label(r.get('model_a'))} − {_label(r.get('model_b'))}" for r in rows]
    width = 3.6 + 0.075 * max(len(n) for n in names)       # room for the pair names beside the axis
    figure = new_figure(figsize=(width, 1.5 + 0.5 * len(rows)), layout="constrained")
    ax = figure.subplots()
    y = list(range(len(rows)))[::-1]
    for yi, row in zip(y, rows):
        low, high = row.get("ci_low"), row.get("ci_high")
        if finite(low) and finite(high):
            excludes = low > 0 or high < 0
            ax.hlines(yi, low, high, color="#1f5f99" if excludes else "#8a939c", linewidth=2.5)
            ax.vlines([low, high], yi - 0.12, yi + 0.12, color="#1f5f99" if excludes else "#8a939c", linewidth=2)
    ax.plot([r["difference"] for r in rows], y, "o", color="#1f5f99", markersize=7, zorder=3)
    ax.axvline(0, color="#444", linewidth=1, linestyle="--")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(6))      # wide tick labels (−0.025) must not run into each other
    ax.set_yticks(y, names)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("difference of R²")
    ax.set_title("Paired difference of R² between models", fontsize="medium")
    ax.grid(axis="x", alpha=0.3)
    level = next((r.get("level") for r in rows if finite(r.get("level"))), result.meta.get("level"))
    what = f"{level:.0%} interval" if finite(level) else "interval"
    caption = (f"R² of the first model minus R² of the second (point), paired over the same groups, with its "
               f"{what} (bar); an interval that misses the dashed line at 0 separates the two models.")
    return Plot("verdict", "compare", caption, figure)


# ---------------------------------------------------------------- the demo's experiments

def _experiments(result: Document) -> list[DocumentSection]:
    return [s for s in result.sections if {"param", "v", "r2"} <= set(s.table.columns)]


def _experiment_plots(result: Document) -> list[Plot]:
    """For each experiment: V (left) and R² (right) against the parameter, side by side."""
    plots: list[Plot] = []
    for section in _experiments(result):
        rows = sorted((r for r in section.table.to_dicts() if finite(r["v"]) and finite(r["r2"])),
                      key=lambda r: r["param"])
        if not rows:
            continue
        figure = new_figure(figsize=(6.4, 2.9), layout="constrained")
        left, right = figure.subplots(1, 2)
        x = [r["param"] for r in rows]
        for ax, column, name, colour in ((left, "v", "V = SS_T / n", "#b04a1c"), (right, "r2", "R² = SS_B / SS_T", "#1f5f99")):
            ax.plot(x, [r[column] for r in rows], "o-", color=colour)
            ax.set_ylim(0, max(1.0, max(r[column] for r in rows) * 1.1))
            ax.set_title(name, fontsize="medium")
            ax.set_xlabel(_parameter(section))
            ax.grid(alpha=0.3)
        if "r2_null" in section.table.columns and all(finite(r["r2_null"]) for r in rows):
            right.plot(x, [r["r2_null"] for r in rows], "x--", color="#8a939c", label="no structure")
            right.legend(fontsize="small", frameon=False)
        figure.suptitle(section.title, fontsize="medium")
        caption = f"V (left) and R² (right) against {_parameter(section)}, mean over the seeds."
        plots.append(Plot(section.name, section.name, caption, figure))
    return plots


def _parameter(section: DocumentSection) -> str:
    """The experiment's parameter name: the last word of its configurations' label ("c", "s", "lambda")."""
    label = str(section.table.to_dicts()[0].get("model", ""))
    return label.split(" = ")[0].split()[-1] if " = " in label else "parameter"


# ---------------------------------------------------------------- helpers

def _suptitle(figure: Figure, first: str, rest: str, panels: int) -> None:
    """A figure title on one line, or on two when the figure is one narrow panel."""
    figure.suptitle(first + ("\n" if panels < 2 else " ") + rest)


def _tick_style(labels: Sequence[Any]) -> dict[str, Any]:
    """Long or many tick labels slant, so that they do not run into each other."""
    if len(labels) > 4 or sum(len(_label(m)) for m in labels) > 40:
        return {"rotation": 30, "ha": "right", "rotation_mode": "anchor"}
    return {}


def _panel_figure(count: int) -> tuple[Figure, list[Axes]]:
    ncols = min(count, 3)
    nrows = math.ceil(count / ncols)
    figure = new_figure(figsize=(min(2.6 * ncols + 1.0, 9.0), 3.2 * nrows + 0.5), layout="constrained")
    axes = list(figure.subplots(nrows, ncols, squeeze=False).ravel())
    for ax in axes[count:]:
        ax.set_visible(False)
    return figure, axes[:count]


def _has(result: Document, name: str) -> bool:
    return any(section.name == name for section in result.sections)


def _column_by_model(result: Document, name: str, column: str) -> dict[Any, float]:
    if not _has(result, name) or column not in result[name].columns:
        return {}
    return {row["model"]: row[column] for row in result[name].to_dicts() if finite(row[column])}


def _label(model: object) -> str:
    return model_label(model)

