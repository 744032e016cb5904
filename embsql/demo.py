"""The source's experiment on an embedded DuckDB: what V and R2 do under common-component
transforms and under a within-group shrink.

50 dimensions, 20 random unit group centres, 4 points each: point = centre + 0.61 N(0, I/d),
normalised.  The common direction u is random with length 0.1235 (as in the source), so that
y = (z + c u) / ||z + c u|| reproduces the source's rows; shrink is y = mean_g + s (z - mean_g),
renormalised; the exact lift is y = (sqrt(lam) z, sqrt(1 - lam)).  Every configuration and seed
becomes one value of a "case" column, and one emb_anova(..., model := 'case') call computes all.
"""

from __future__ import annotations

from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from embsql.io.registration import connect
from embsql.reporting import cautions
from embsql.reporting.report_result import ReportResult, Section
from embsql.result_table import ResultTable

DIM, GROUPS, PER_GROUP, NOISE, U_LENGTH = 50, 20, 4, 0.61, 0.1235
COMMON = (0.0, 2.0, 4.0, 8.0, 16.0)
SHRINK = (1.0, 0.7, 0.4)
LIFT = (1.0, 0.5, 0.25)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def configuration(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One draw of the source's configuration: unit vectors (80 x 50) and group labels."""
    centres = _unit(rng.standard_normal((GROUPS, DIM)))
    labels = np.repeat(np.arange(GROUPS), PER_GROUP)
    points = centres[labels] + NOISE * rng.standard_normal((len(labels), DIM)) / np.sqrt(DIM)
    return _unit(points), labels


def common_direction(z: np.ndarray, c: float, u: np.ndarray) -> np.ndarray:
    """A common direction ``c u`` added to every vector, then normalised."""
    return _unit(z + c * u)


def shrink(z: np.ndarray, labels: np.ndarray, s: float) -> np.ndarray:
    """Every group squeezed towards its mean by ``s``, then normalised."""
    means = np.stack([z[labels == g].mean(axis=0) for g in range(labels.max() + 1)])
    return _unit(means[labels] + s * (z - means[labels]))


def exact_lift(z: np.ndarray, lam: float) -> np.ndarray:
    """A similarity (a = sqrt(lam)) into d + 1 dimensions; V scales by lam, R2 is unchanged."""
    return np.hstack([np.sqrt(lam) * z, np.full((len(z), 1), np.sqrt(1.0 - lam))])


def demo_table(seeds: int = 20, seed: int = 0) -> pa.Table:
    """All experiment cases in long form: experiment, param, seed, case, group, v (FLOAT vectors)."""
    rng = np.random.default_rng(seed)
    columns: dict[str, list[Any]] = {k: [] for k in ("experiment", "param", "seed", "case", "group", "v")}
    for s in range(seeds):
        z, labels = configuration(rng)
        u = U_LENGTH * _unit(rng.standard_normal(DIM))
        cases = [("common direction c", c, common_direction(z, c, u)) for c in COMMON]
        cases += [("within-group shrink s", k, shrink(z, labels, k)) for k in SHRINK]
        cases += [("exact lift lambda", lam, exact_lift(z, lam)) for lam in LIFT]
        for experiment, param, y in cases:
            n = len(y)
            columns["experiment"] += [experiment] * n
            columns["param"] += [param] * n
            columns["seed"] += [s] * n
            columns["case"] += [f"{experiment}={param}/{s}"] * n
            columns["group"] += labels.tolist()
            columns["v"] += list(y)
    return pa.table({**{k: columns[k] for k in ("experiment", "param", "seed", "case", "group")},
                     "v": pa.array([list(map(float, y)) for y in columns["v"]], type=pa.list_(pa.float64()))})


DEMO_SQL = """
SELECT d.experiment, d.param, count(*) AS seeds,
       avg(a.v) AS v, avg(a.r2) AS r2, avg(a.r2_null) AS r2_null, avg(a.f) AS f
FROM emb_anova('demo', 'group', 'v', model := 'case') a
JOIN (SELECT DISTINCT experiment, param, "case" FROM demo) d USING ("case")
GROUP BY d.experiment, d.param
ORDER BY d.experiment, CASE WHEN d.experiment LIKE 'common%' THEN d.param ELSE -d.param END
"""


def run_demo(con: duckdb.DuckDBPyConnection, seeds: int = 20, seed: int = 0) -> pa.Table:
    """Register the demo table on ``con`` and return the averaged V and R2 per case."""
    con.register("demo", demo_table(seeds, seed))
    return con.sql(DEMO_SQL).to_arrow_table()


EXPERIMENTS = (   # (experiment, section name, title, caution: embsql.reporting.cautions)
    ("common direction c", "common_direction", "Common direction added to every vector (c = 0 … 16)",
     cautions.DEMO_COMMON_DIRECTION),
    ("within-group shrink s", "within_group_shrink", "Groups squeezed towards their means (s = 1.0, 0.7, 0.4)",
     cautions.DEMO_SHRINK),
    ("exact lift lambda", "exact_lift", "Exact lift into one more dimension (λ = 1, 0.5, 0.25)", cautions.DEMO_LIFT),
)


def demo_report(seeds: int = 20, seed: int = 0) -> ReportResult:
    """The demo as a ReportResult (for the HTML report): one section per experiment; the "model"
    column names the transformed configuration, the way a report names a model."""
    rows = run_demo(connect(), seeds=seeds, seed=seed).to_pylist()
    columns = ("model", "param", "v", "r2", "r2_null", "f", "seeds")
    for row in rows:
        row["model"] = f"{row['experiment']} = {row['param']:g}"
    sections = tuple(
        Section(name, title, ResultTable.from_dicts(name, columns, [r for r in rows if r["experiment"] == experiment]),
                caution)
        for experiment, name, title, caution in EXPERIMENTS)
    # one row per configuration (not one column each, as a report's models: eleven would not fit)
    for row in rows:
        row["configuration"] = row["model"]
    summary = ResultTable.from_dicts("summary", ("configuration", "v", "r2", "r2_null", "f"), rows)
    meta = {"source": "the source's experiment", "seeds": seeds, "seed": seed,
            "design": f"{GROUPS} groups of {PER_GROUP} unit vectors in {DIM} dimensions, mean over {seeds} seeds",
            "verdict": demo_verdict(rows)}
    return ReportResult("embsql demo: V is not comparable across models, R² is", summary, sections, meta)


def demo_verdict(rows: list[dict[str, Any]]) -> list[str]:
    """What the demo's numbers show, from the first and last configuration of each experiment."""
    ends: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for experiment, _, _, _ in EXPERIMENTS:
        cases = [r for r in rows if r["experiment"] == experiment]
        if cases:
            ends[experiment] = (cases[0], cases[-1])
    sentences = []
    if "common direction c" in ends:
        first, last = ends["common direction c"]
        v_change, r2_change = _relative(first["v"], last["v"]), _relative(first["r2"], last["r2"])
        finding = ("so V is not comparable across models and R² is" if v_change > 5 * max(r2_change, 1e-3)
                   else "so on these seeds V and R² move alike")
        sentences.append(f"A common direction (c {first['param']:g} → {last['param']:g}) moves V from "
                         f"{first['v']:.2f} to {last['v']:.2f} ({_signed(first['v'], last['v'], 0)}) and R² from "
                         f"{first['r2']:.2f} to {last['r2']:.2f} ({_signed(first['r2'], last['r2'], 1)}), {finding}.")
    parts = []
    if "within-group shrink s" in ends:
        first, last = ends["within-group shrink s"]
        parts.append(f"squeezing the groups (s {first['param']:g} → {last['param']:g}) moves R² from "
                     f"{first['r2']:.2f} to {last['r2']:.2f} and V from {first['v']:.2f} to {last['v']:.2f}")
    if "exact lift lambda" in ends:
        first, last = ends["exact lift lambda"]
        parts.append(f"the exact lift (λ {first['param']:g} → {last['param']:g}) takes V from {first['v']:.3f} to "
                     f"{last['v']:.3f} (× {last['v'] / first['v']:.3f}) and R² from {first['r2']:.3f} to "
                     f"{last['r2']:.3f}")
    if parts:
        text = "; ".join(parts)
        sentences.append(text[0].upper() + text[1:] + ".")
    return sentences


def _signed(before: float, after: float, decimals: int) -> str:
    change = (after - before) / before if before else float("inf")
    return ("−" if change < 0 else "+") + f"{abs(change):.{decimals}%}"


def _relative(before: float, after: float) -> float:
    return abs(after - before) / abs(before) if before else float("inf")
