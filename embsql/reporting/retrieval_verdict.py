"""The verdict sentence of a paired retrieval comparison: which model retrieves better, by how much,
and how sure, read off the rows of embsql.compare_retrieval (PAIR_COLUMNS).

Every claim is a comparison made here: the model with the higher mean leads; a difference is
called significant when its adjusted p-value is at most ALPHA (then the interval excludes 0 in
the same direction as a rule, and the sentence says so only when it does); an interval that is
not calibrated (fewer than 30 groups) is said to be rough.
"""

from __future__ import annotations

from embsql.reporting.verdict import ALPHA

ADJUSTED = {"holm": "Holm", "bh": "Benjamini–Hochberg", "bonferroni": "Bonferroni"}


def _number(x: float) -> str:
    return f"{x:.3f}".replace("-", "−")


def _p(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _units(row: dict) -> str:
    if "group" in row.get("method", ""):
        return f"{row['groups']} paraphrase groups"
    return f"{row['queries']} queries, each its own group (no paraphrase groups given)"


def _pair_sentence(row: dict) -> str:
    a, b = (row["model_a"], row["model_b"])
    lead, other, mean_lead, mean_other, sign = (a, b, row["mean_a"], row["mean_b"], 1) if row["difference"] >= 0 \
        else (b, a, row["mean_b"], row["mean_a"], -1)
    metric = row["metric"]
    p_adjusted = row["p_adjusted"] if row.get("p_adjusted") is not None else row["p_value"]
    adjusted = f", {ADJUSTED[row['p_adjust']]}-adjusted" if row.get("p_adjust") in ADJUSTED else ""
    interval = ""
    if row.get("ci_low") is not None:
        low, high = sorted((sign * row["ci_low"], sign * row["ci_high"]))
        interval = f", {round(100 * row['level'])}% interval {_number(low)} to {_number(high)}"
    evidence = f"({_p(p_adjusted)}{adjusted}{interval}; over {_units(row)})"
    gap = _number(abs(row["difference"]))
    if p_adjusted <= ALPHA:
        sentence = (f"{lead} retrieves better than {other} on {metric}: {_number(mean_lead)} against "
                    f"{_number(mean_other)}, {gap} higher {evidence}.")
    else:
        sentence = (f"{lead} and {other} are not told apart on {metric}: {_number(mean_lead)} against "
                    f"{_number(mean_other)}, a gap of {gap} within chance {evidence}.")
    return sentence


def retrieval_comparison_sentence(rows) -> str:
    """One sentence per pair of models, the pair with the largest difference first; for three or
    more models, a first sentence naming the model with the highest mean and whether it beats
    every other one significantly.  ``rows``: a ResultTable or a list of dicts from
    embsql.compare_retrieval.  An empty input gives an empty string."""
    rows = rows.to_dicts() if hasattr(rows, "to_dicts") else list(rows)
    if not rows:
        return ""
    ordered = sorted(rows, key=lambda r: -abs(r["difference"]))
    sentences = [_pair_sentence(r) for r in ordered]
    means = {}
    for r in rows:
        means[r["model_a"]], means[r["model_b"]] = r["mean_a"], r["mean_b"]
    if len(means) > 2:
        best = max(means, key=lambda m: means[m])
        beaten = [r for r in rows if best in (r["model_a"], r["model_b"])
                  and (r["p_adjusted"] if r.get("p_adjusted") is not None else r["p_value"]) <= ALPHA]
        others = len(means) - 1
        lead = (f"{best} has the highest {rows[0]['metric']} ({_number(means[best])}) and beats "
                + ("every other model" if len(beaten) == others else f"{len(beaten)} of the {others} others")
                + " beyond chance.")
        sentences.insert(0, lead)
    rough = sorted({r["groups"] for r in rows if r.get("ci_low") is not None and not r.get("calibrated")})
    if rough:
        sentences.append(f"With {' or '.join(map(str, rough))} groups (under 30) the intervals are rough.")
    return " ".join(sentences)
