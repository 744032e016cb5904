"""The first lines of a report: one or two plain sentences computed from its numbers.

The sentences are read off the summary (r2, v, f, p_value, dispersion_p, groups, n) and the
paired comparison rows (difference, ci_low, ci_high, estimate_a, estimate_b); every claim in
them is a comparison made here (which model is ahead, whether the interval excludes 0, whether V
points the other way, whether a p-value is below ALPHA), never a fixed text.  A report that
carries its own sentences in ``meta["verdict"]`` (the demo) keeps them.

The similarity and classification sentences (:func:`similarity_sentence`, :func:`classification_sentence`)
are read off the similarity_compare rows (Spearman's, MTEB's main score) and the classification_compare rows
(k-NN) in the same way: a model is said to agree with people more, or to classify better, only when the
adjusted p-value of the paired test is at most ALPHA; otherwise the two are "not told apart".  With one
model the sentence gives the figure and its interval.

The retrieval evaluation's sentence (:func:`retrieval_comparison_sentence`) is read off the rows of
embsql.compare_retrieval (PAIR_COLUMNS): the model with the higher mean leads; a difference is
called significant when its adjusted p-value is at most ALPHA (then the interval excludes 0 in
the same direction as a rule, and the sentence says so only when it does); an interval that is
not calibrated (fewer than 30 groups) is said to be rough.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, TypeGuard

from embsql.render.document import Document
from embsql.result_table import ResultTable

ALPHA = 0.05           # the level at which a p-value is called "beyond chance" in the sentences
ADJUSTED = {"holm": "Holm", "bh": "Benjamini–Hochberg", "bonferroni": "Bonferroni"}
Row = dict[str, Any]


def verdict(result: Document) -> list[str]:
    """The report's opening sentences (an empty list when its tables hold nothing to judge).  Each
    family's ranking (the ranking section's block) ends that family's paragraph; a retrieval report
    (one with the evaluation and no embedding summary) opens with retrieval."""
    own = result.meta.get("verdict")
    if own:
        return [own] if isinstance(own, str) else list(own)
    ranked = ranking_sentences(result)
    summary = _summary(result)
    if summary and any(_finite(row.get("r2")) for row in result.summary.to_dicts()):
        summary[0] = _join(summary[0], "" if _pair_says_it(result) else ranked.get("R²", ""))
        ranked.pop("R²", None)
    retrieval = [_join(_evaluation(result), ranked.pop("nDCG@10", "")), _layers(result)]
    labels = [_join(_similarity(result), ranked.pop("Spearman", "")),
              _join(_classification(result), ranked.pop("accuracy", ""))]
    if any(s.name in ("rank", "evaluation") for s in result.sections) or not result.summary.rows:
        # a report whose question is retrieval (it ran the retrieval layers or the evaluation): its answer first
        return [s for s in retrieval + summary + labels + list(ranked.values()) if s]
    return [s for s in summary + retrieval + labels + list(ranked.values()) if s]


def _layers(result: Document) -> str:
    """The retrieval layers' answer (top-1 per model, the rank section) where the summary does not
    already give it (a report with an embedding table, or the retrieval tables alone)."""
    if any(_finite(row.get("top1")) for row in result.summary.to_dicts()):
        return ""
    rows = [row for row in _rows_of(result, "rank") if _finite(row.get("top1"))]
    return _retrieval(rows) if rows else ""


def _pair_says_it(result: Document) -> bool:
    """With two models the rank sets of R² restate the paired comparison the first sentence gives:
    the lead first and the other second when its interval excludes 0, both 1–2 when it holds 0.
    True when they do (the sentence would repeat it), False when they differ or there is no pair."""
    rows = [r for r in _rows_of(result, "ranking") if r.get("statistic") == "r2"]
    if len(rows) != 2:
        return False
    lead, second = sorted(rows, key=lambda r: -r["estimate"])
    pair = _pair(result, lead["model"], second["model"])
    if pair is None:
        return False
    sets = ((lead["rank_low"], lead["rank_high"]), (second["rank_low"], second["rank_high"]))
    if pair[1] > 0:
        return sets == ((1, 1), (2, 2))
    return pair[2] >= 0 and sets == ((1, 2), (1, 2))


def _join(*sentences: str) -> str:
    return " ".join(s for s in sentences if s)


ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def ranking_sentences(result: Document) -> dict[str, str]:
    """What the ranking section (rank confidence sets) says, one sentence per block (by its metric)."""
    blocks: dict[str, list[Row]] = {}
    for row in _rows_of(result, "ranking"):
        blocks.setdefault(str(row.get("metric") or "R²"), []).append(row)
    return {metric: ranking_sentence(rows, metric) for metric, rows in blocks.items() if len(rows) >= 2}


def ranking_sentence(rows: list[Row], metric: str = "R²") -> str:
    """One block's sets in words: who is placed, and who cannot be ordered; a tie at the top is named."""
    if len(rows) < 2:
        return ""
    level = rows[0].get("level")
    together: dict[tuple[int, int], list[Row]] = {}
    for row in sorted(rows, key=lambda r: (r["rank_low"], r["rank_high"], -r["estimate"])):
        together.setdefault((row["rank_low"], row["rank_high"]), []).append(row)
    top = [r for r in rows if r.get("top")]
    tied = len(top) >= 2 and len([key for key in together if key[0] == 1]) == 1   # the top is one set
    parts = []
    for (low, high), members in together.items():
        names = _and([_name(r["model"]) for r in members])
        if low == high and len(members) == 1:
            place = ORDINALS[low - 1] if low <= len(ORDINALS) else f"number {low}"
            parts.append(f"{names} is {place} (rank {low}–{high})")
        elif low == 1 and tied:
            parts.append(f"these {len(members)} models are tied for the top: {names} (ranks {low}–{high})")
        elif len(members) == 1:
            parts.append(f"{names} ranks {low}–{high}")
        else:
            parts.append(f"{names} cannot be ordered (ranks {low}–{high})")
    head = "" if tied or len(top) < 2 else \
        f"{_and([_name(r['model']) for r in sorted(top, key=lambda r: -r['estimate'])])} could each be first; "
    level_word = f"{level:.0%}" if _finite(level) else "95%"
    rough = "" if all(r.get("calibrated") for r in rows) else \
        " These sets are rough: their coverage was not shown for this design."
    return f"Ranked by {metric} with {level_word} simultaneous rank sets: {head}" + "; ".join(parts) + "." + rough


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _evaluation(result: Document) -> str:
    """Which model retrieves better on the qrels, by how much and how sure (the evaluation_compare rows)."""
    section = next((s for s in result.sections if s.name == "evaluation_compare"), None)
    return retrieval_comparison_sentence(section.table.to_dicts()) if section is not None else ""


def _summary(result: Document) -> list[str]:
    rows = [row for row in result.summary.to_dicts() if _finite(row.get("r2"))]
    if rows:
        group = _groups_word(result.meta.get("group"))
        first = _one_model(rows[0], group) if len(rows) == 1 else _models(result, rows, group)
        return [s for s in (first, _tests(rows, result.meta.get("permutations"))) if s]
    rows = [row for row in result.summary.to_dicts() if _finite(row.get("top1"))]
    if rows:
        return [_retrieval(rows)]
    return []


# ---------------------------------------------------------------- two or more models

def _models(result: Document, rows: list[Row], group: str) -> str:
    ranked = sorted(rows, key=lambda r: -r["r2"])
    lead, second = ranked[0], ranked[1]
    pair = _pair(result, lead["model"], second["model"])
    ranking = ""
    if len(ranked) > 2 and not any(s.name == "ranking" for s in result.sections):   # else the rank sets say it
        ranking = "Ranked by R²: " + ", ".join(f"{_name(r['model'])} {_num(r['r2'])}" for r in ranked) + ". "
    if pair is None:
        why = next((n for n in result.meta.get("notes", []) if "paired comparison" in n),
                   "" if any(s.name == "compare" for s in result.sections) else "this report has no compare section")
        return (f"{ranking}{_name(lead['model'])} has the higher R² ({_num(lead['r2'])} vs {_num(second['r2'])}), "
                f"but the difference has no paired interval{f' ({why})' if why else ''}, so it may be chance.")
    groups = f", {lead['groups']} groups" if lead.get("groups") else ""
    level = _level(result)
    v_lead, v_second = lead.get("v"), second.get("v")
    r2_lead, r2_second, difference, low, high = _nums(lead["r2"], second["r2"], *pair)
    if pair[1] > 0:
        sentence = (f"{_name(lead['model'])} separates {group} more than {_name(second['model'])}: "
                    f"R² {r2_lead} vs {r2_second}, paired difference {difference} "
                    f"({level} CI {_range(pair[1], low, high)}{groups})")
        if _finite(v_lead) and _finite(v_second) and v_lead != v_second:
            sentence += ("; V would rank them the other way" if v_lead < v_second else "; V points the same way") + \
                        " ({} vs {}), but V is not comparable across models".format(*_nums(v_lead, v_second))
    else:
        sentence = (f"{_name(lead['model'])} and {_name(second['model'])} cannot be told apart on these data: "
                    f"R² {r2_lead} vs {r2_second}, paired difference {difference} "
                    f"({level} CI {_range(pair[1], low, high)}{groups}) includes 0")
        if _finite(v_lead) and _finite(v_second):
            sentence += "; V ({} vs {}) is not comparable across models and cannot settle it".format(
                *_nums(v_lead, v_second))
    return ranking + sentence + "."


def _pair(result: Document, lead: object, second: object) -> tuple[float, float, float] | None:
    """R²(lead) − R²(second) and its interval from the compare rows, or None."""
    if not any(s.name == "compare" for s in result.sections):
        return None
    for row in result["compare"].to_dicts():
        difference, low, high = (row.get(k) for k in ("difference", "ci_low", "ci_high"))
        if not (_finite(difference) and _finite(low) and _finite(high)):
            continue
        if (row.get("model_a"), row.get("model_b")) == (lead, second):
            return difference, low, high
        if (row.get("model_a"), row.get("model_b")) == (second, lead):
            return -difference, -high, -low
    return None


def _level(result: Document) -> str:
    level = result.meta.get("level")
    if any(s.name == "compare" for s in result.sections):
        level = next((r.get("level") for r in result["compare"].to_dicts() if _finite(r.get("level"))), level)
    return f"{level:.0%}" if _finite(level) else "95%"


# ---------------------------------------------------------------- one model

def _one_model(row: Row, group: str) -> str:
    r2 = row["r2"]
    sentence = f"R² = {_num(r2)}: {r2:.0%} of the spread of the unit vectors lies between {group}"
    n, g = row.get("n"), row.get("groups")
    if _finite(n) and _finite(g) and n > 1:
        sentence += f", against {_num((g - 1) / (n - 1))} expected with no structure ({g} groups, {n} items)"
    if _finite(row.get("f")):
        sentence += f"; F = {_num(row['f'])}"
    sentence += (". These figures describe this grouping of these items: they cannot say whether another model "
                 "separates the groups better (compare models on the same items), what R² would be on another "
                 "design, or that R² is a population share of variance.")
    return sentence


# ---------------------------------------------------------------- the permutation tests

def _tests(rows: list[Row], permutations: object) -> str:
    if "p_value" not in rows[0]:
        return ""
    rows = [row for row in rows if _finite(row.get("p_value"))]
    if not rows:
        if _finite(permutations) and permutations:   # the tests were left out of the sections asked for
            return "No p-values: the permutation tests were not among the sections run."
        return "No p-values: the permutation tests were not run (give permutations > 0 to run them)."
    p = [row["p_value"] for row in rows]
    each = _each(rows, p)
    count = f" with {permutations} permutations" if _finite(permutations) and permutations else ""
    where = "every model" if len(rows) > 1 else "this model" if rows[0].get("model") is None else _name(rows[0]["model"])
    if all(v <= ALPHA for v in p):
        sentence = f"The groups differ beyond chance in {where} (PERMANOVA {each}{count})"
    elif any(v <= ALPHA for v in p):
        sentence = f"The groups differ beyond chance in some models only (PERMANOVA {each}{count})"
    else:
        sentence = f"PERMANOVA finds no evidence that the groups differ beyond chance ({each}{count})"
    spread = [row.get("dispersion_p") for row in rows]
    if all(_finite(v) for v in spread):
        if any(v <= ALPHA for v in spread if _finite(v)):
            sentence += (f"; the dispersion test is significant too ({_each(rows, spread)}), so part of F may be "
                         "unequal spread within groups rather than separated centres")
        else:
            sentence += f"; the dispersion test finds no unequal spread ({_each(rows, spread)})"
    if len(rows) == 1:
        sentence += "; p says whether the grouping could be chance, not how strong it is (R² says that)"
    return sentence + "."


def _each(rows: list[Row], values: list[Any]) -> str:
    if len(rows) == 1:
        return f"p = {_p(values[0])}"
    if len(set(values)) == 1:
        return f"p = {_p(values[0])} for each"
    return "p = " + ", ".join(f"{_p(v)} for {_name(r['model'])}" for r, v in zip(rows, values))


# ---------------------------------------------------------------- retrieval

def _retrieval(rows: list[Row]) -> str:
    ranked = sorted(rows, key=lambda r: -r["top1"])
    queries = f"of the {ranked[0]['queries']} queries" if ranked[0].get("queries") else "of the queries"
    if len(rows) == 1:
        return f"The correct document ranks first for {rows[0]['top1']:.0%} {queries}."
    parts = ", ".join(f"{r['top1']:.0%} with {_name(r['model'])}" for r in ranked)
    return f"The correct document ranks first for {parts} {queries}."


# ---------------------------------------------------------------- words and numbers

def _groups_word(group: object) -> str:
    return f"the {group} groups" if group else "the groups"


def _name(model: object) -> str:
    return "all items" if model is None else str(model)


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _num(value: float) -> str:
    """Two decimals for figures of 0.1 and more; two significant digits below (0.0043)."""
    if value == 0:
        return "0"
    text = f"{abs(value):.2f}" if abs(value) >= 0.095 else f"{abs(value):.2g}"
    return ("−" if value < 0 else "") + text


def _nums(*values: float) -> list[str]:
    """Figures read side by side, with the same number of decimals: two, or more (at most four)
    when the smallest of them is below 0.01, so that it keeps two significant digits (0.0043), or
    when two different figures would otherwise print alike (0.972 vs 0.969)."""
    smallest = min((abs(v) for v in values if v), default=1.0)
    decimals = min(4, 1 - math.floor(math.log10(smallest))) if smallest < 0.0095 else 2
    while decimals < 4 and len({f"{v:.{decimals}f}" for v in values}) < len(set(values)):
        decimals += 1
    return [("−" if v < 0 else "") + f"{abs(v):.{decimals}f}" for v in values]


def _range(low_value: float, low: str, high: str) -> str:
    return f"{low}–{high}" if low_value >= 0 else f"{low} to {high}"


def _p(value: float) -> str:
    return f"{value:.3g}"


# ---------------------------------------------------------------- the retrieval evaluation's comparison

def _three_decimals(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def _p_phrase(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _units(row: Row) -> str:
    if "group" in row.get("method", ""):
        return f"{row['groups']} paraphrase groups"
    return f"{row['queries']} queries, each its own group (no paraphrase groups given)"


def _pair_sentence(row: Row) -> str:
    a, b = (row["model_a"], row["model_b"])
    lead, other, mean_lead, mean_other, sign = (a, b, row["mean_a"], row["mean_b"], 1) if row["difference"] >= 0 \
        else (b, a, row["mean_b"], row["mean_a"], -1)
    metric = row["metric"]
    p_adjusted = row["p_adjusted"] if row.get("p_adjusted") is not None else row["p_value"]
    adjusted = f", {ADJUSTED[row['p_adjust']]}-adjusted" if row.get("p_adjust") in ADJUSTED else ""
    interval = ""
    if row.get("ci_low") is not None:
        low, high = sorted((sign * row["ci_low"], sign * row["ci_high"]))
        interval = f", {round(100 * row['level'])}% interval {_three_decimals(low)} to {_three_decimals(high)}"
    evidence = f"({_p_phrase(p_adjusted)}{adjusted}{interval}; over {_units(row)})"
    gap = _three_decimals(abs(row["difference"]))
    if p_adjusted <= ALPHA:
        sentence = (f"{lead} retrieves better than {other} on {metric}: {_three_decimals(mean_lead)} against "
                    f"{_three_decimals(mean_other)}, {gap} higher {evidence}.")
    else:
        sentence = (f"{lead} and {other} are not told apart on {metric}: {_three_decimals(mean_lead)} against "
                    f"{_three_decimals(mean_other)}, a gap of {gap} within chance {evidence}.")
    return sentence


def retrieval_comparison_sentence(rows: ResultTable | Iterable[Row]) -> str:
    """One sentence per pair of models, the pair with the largest difference first; for three or
    more models, a first sentence naming the model with the highest mean and whether it beats
    every other one significantly.  ``rows``: a ResultTable or a list of dicts from
    embsql.compare_retrieval.  An empty input gives an empty string."""
    found = rows.to_dicts() if isinstance(rows, ResultTable) else list(rows)
    if not found:
        return ""
    ordered = sorted(found, key=lambda r: -abs(r["difference"]))
    sentences = [_pair_sentence(r) for r in ordered]
    means: dict[Any, float] = {}
    for r in found:
        means[r["model_a"]], means[r["model_b"]] = r["mean_a"], r["mean_b"]
    if len(means) > 2:
        best = max(means, key=lambda m: means[m])
        beaten = [r for r in found if best in (r["model_a"], r["model_b"])
                  and (r["p_adjusted"] if r.get("p_adjusted") is not None else r["p_value"]) <= ALPHA]
        others = len(means) - 1
        lead = (f"{best} has the highest {found[0]['metric']} ({_three_decimals(means[best])}) and beats "
                + ("every other model" if len(beaten) == others else f"{len(beaten)} of the {others} others")
                + " beyond chance.")
        sentences.insert(0, lead)
    rough = sorted({r["groups"] for r in found if r.get("ci_low") is not None and not r.get("calibrated")})
    if rough:
        sentences.append(f"With {' or '.join(map(str, rough))} groups (under 30) the intervals are rough.")
    return " ".join(sentences)


# ---------------------------------------------------------------- human judgements and labels

def _rows_of(result: Document, name: str) -> list[Row]:
    section = next((s for s in result.sections if s.name == name), None)
    return section.table.to_dicts() if section is not None else []


def _interval(row: Row, sign: int, low_key: str = "ci_low", high_key: str = "ci_high") -> str:
    if not (_finite(row.get(low_key)) and _finite(row.get(high_key))):
        return ""
    low, high = sorted((sign * row[low_key], sign * row[high_key]))
    level = row["level"] if _finite(row.get("level")) else 0.95
    return f", {round(100 * level)}% interval {_three_decimals(low)} to {_three_decimals(high)}"


def _adjusted_p(row: Row, key: str) -> float:
    """The adjusted p-value of a row, or its p-value when it has none."""
    value = row.get(key)
    return float(value) if _finite(value) else float(row["p_value"])


def _paired(rows: list[Row], *, first: str, second: str, p_key: str, adjusted: str, better: str, apart: str,
            figure: str, units: Any, rough: str) -> str:
    """One sentence per pair of models (largest difference first): the lead is named the better one
    only when the adjusted p-value is at most ALPHA; for three or more models a first sentence says
    which has the highest figure and how many of the others it beats beyond chance."""
    sentences = []
    for row in sorted(rows, key=lambda r: -abs(r["difference"])):
        sign = 1 if row["difference"] >= 0 else -1
        lead, other = (row["model_a"], row["model_b"]) if sign > 0 else (row["model_b"], row["model_a"])
        mean_lead, mean_other = (row[first], row[second]) if sign > 0 else (row[second], row[first])
        p = _adjusted_p(row, p_key)
        evidence = f"({_p_phrase(p)}{adjusted}{_interval(row, sign)}; {units(row)})"
        values = f"{figure} {_three_decimals(mean_lead)} against {_three_decimals(mean_other)}"
        gap = _three_decimals(abs(row["difference"]))
        if p <= ALPHA:
            sentences.append(f"{_name(lead)} {better} {_name(other)}: {values}, {gap} higher {evidence}.")
        else:
            sentences.append(f"{_name(lead)} and {_name(other)} {apart}: {values}, a gap of {gap} within chance "
                             f"{evidence}.")
    figures: dict[Any, float] = {}
    for r in rows:
        figures[r["model_a"]], figures[r["model_b"]] = r[first], r[second]
    if len(figures) > 2:
        best = max(figures, key=lambda m: figures[m])
        beaten = [r for r in rows if best in (r["model_a"], r["model_b"])
                  and _adjusted_p(r, p_key) <= ALPHA]
        others = len(figures) - 1
        sentences.insert(0, f"{_name(best)} has the highest {figure} ({_three_decimals(figures[best])}) and beats "
                         + ("every other model" if len(beaten) == others else f"{len(beaten)} of the {others} others")
                         + " beyond chance.")
    if any(not r.get("calibrated") for r in rows):
        sentences.append(rough)
    return " ".join(sentences)


def similarity_sentence(compare: list[Row], evaluation: list[Row]) -> str:
    """Which model's cosine agrees more with the human similarity judgements (Spearman), by how much and
    how sure: the similarity_compare rows, or with one model its similarity row."""
    rows = [r for r in compare if r.get("correlation") == "spearman" and _finite(r.get("difference"))]
    if rows:
        return _paired(rows, first="estimate_a", second="estimate_b", p_key="p_adjusted", adjusted=", Holm-adjusted",
                       better="agrees with the human similarity judgements more than",
                       apart="are not told apart on agreement with the human similarity judgements",
                       figure="Spearman", units=lambda r: f"{r['pairs']} pairs of {r['items']} items, clustered by item",
                       rough="With fewer than 200 pairs or 20 degrees of freedom the intervals are rough.")
    found = [r for r in evaluation if _finite(r.get("spearman"))]
    if len(found) != 1:
        return ""
    row = found[0]
    who = "The cosine" if row.get("model") is None else f"{_name(row['model'])}'s cosine"
    sentence = (f"{who} agrees with the human similarity judgements at Spearman {_three_decimals(row['spearman'])}"
                f" ({_interval(row, 1).lstrip(', ')}; {row['pairs']} pairs of {row['items']} items)")
    return sentence + (", a rough interval (fewer than 200 pairs or 20 degrees of freedom)." if not row.get("calibrated")
                       else ".")


def classification_sentence(compare: list[Row], classification: list[Row], label: object = None) -> str:
    """Which model classifies the labels better by k-NN (accuracy), by how much and how sure: the
    classification_compare rows, or with one model its k-NN row."""
    knn = [r for r in classification if r.get("classifier") == "knn" and _finite(r.get("accuracy"))]
    k = f" (k = {knn[0]['k']})" if knn and knn[0].get("k") is not None else ""
    labels = f"the {label} labels" if label else "the labels"
    rows = [r for r in compare if r.get("classifier") == "knn" and _finite(r.get("difference"))]
    if rows:
        def units(r: Row) -> str:
            method = r.get("method") or "mid-p McNemar"
            over = f"{r['groups']} groups" if r.get("groups") else f"{r['items']} items"
            return f"{method}, {over}"

        return _paired(rows, first="accuracy_a", second="accuracy_b", p_key="p_adjusted", adjusted=", Holm-adjusted"
                       if len(rows) > 1 else "", better=f"classifies {labels} better by k-NN{k} than",
                       apart=f"are not told apart on k-NN{k} accuracy for {labels}", figure="accuracy", units=units,
                       rough="With fewer than 30 items or groups the intervals are rough.")
    if len(knn) != 1:
        return ""
    row = knn[0]
    who = "" if row.get("model") is None else f" with {_name(row['model'])}"
    interval = ""
    if _finite(row.get("ci_low")) and _finite(row.get("ci_high")):
        level = row["level"] if _finite(row.get("level")) else 0.95
        interval = f" ({round(100 * level)}% interval {row['ci_low']:.1%} to {row['ci_high']:.1%})"
    label_word = f"{label} label" if label else "label"
    return f"k-NN{k}{who} predicts the {label_word} of {row['accuracy']:.1%} of the {row['items']} items{interval}."


def _similarity(result: Document) -> str:
    return similarity_sentence(_rows_of(result, "similarity_compare"), _rows_of(result, "similarity"))


def _classification(result: Document) -> str:
    return classification_sentence(_rows_of(result, "classification_compare"), _rows_of(result, "classification"),
                                   result.meta.get("label"))
