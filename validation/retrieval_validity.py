"""Validity of embsql.compare_retrieval: rejection rates under H0 and interval coverage, by simulation.

    python validation/retrieval_validity.py [--runs R] [--short]

Data: G paraphrase groups (questions) with 1 + Poisson(3) queries each (unequal sizes).  Per group a
difficulty u_g ~ N(0, 1) shared by both models and a model-by-question effect v_g ~ N(0, tau^2)
(one model suits some questions better: the clustering that single-query resampling ignores); per
query and model a noise e ~ N(0, 0.5^2).  Model a's latent score is u_g + v_g/2 + e + delta, model b's
u_g - v_g/2 + e'.  Three metric shapes:
  graded   sigmoid(latent)                          (an nDCG-like value in (0, 1))
  binary   [latent > 0]                             (hit rate, top-1)
  mixed    0 with probability 0.3, else sigmoid     (nDCG@10 with many complete misses)
Under H0 (delta = 0) the two models have equal expected metric by symmetry.

Table 1: share of R data sets with p <= 0.05 (B = 999 sign vectors), for the group sign-flip test
(embsql's, with group=) beside the query-level test (the same test swapping single queries, as a
cluster-unaware tool does).  Table 2: coverage of the 95% intervals at delta = 0.4, the true
difference taken from 400,000 simulated groups: the cluster t interval (embsql's), the percentile and
studentized cluster bootstraps (499 resamples), and the query-level t interval; the row
"independent" has groups of one query only (no clustering), where the query-level interval is right.
Table 3: the time of the randomization test (10,000 sign vectors, 10,000 queries) beside a dense
+/-1 sign matrix times the differences, measured side by side, warm.
Each cell carries its Monte Carlo SE sqrt(r (1 - r) / R).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from embsql.core.retrieval_comparison import bootstrap_intervals, cluster_sums, sign_flip_p, t_interval

SHAPES = ("graded", "binary", "mixed")
COVERAGE_SHAPES = SHAPES + ("independent",)     # graded, every group of one query: no clustering
TAU = 0.8


def simulate(rng, groups: int, shape: str, delta: float = 0.0, tau: float = TAU):
    """(a, b, clusters): per-query metric values of two models and the paraphrase-group codes."""
    sizes = np.ones(groups, np.int64) if shape == "independent" else 1 + rng.poisson(3, groups)
    clusters = np.repeat(np.arange(groups), sizes)
    u = rng.normal(size=groups)[clusters]
    v = tau * rng.normal(size=groups)[clusters]
    latent_a = u + v / 2 + 0.5 * rng.normal(size=len(clusters)) + delta
    latent_b = u - v / 2 + 0.5 * rng.normal(size=len(clusters))
    if shape == "binary":
        return (latent_a > 0).astype(float), (latent_b > 0).astype(float), clusters
    a, b = 1 / (1 + np.exp(-latent_a)), 1 / (1 + np.exp(-latent_b))
    if shape == "mixed":
        a = np.where(rng.random(len(a)) < 0.3, 0.0, a)
        b = np.where(rng.random(len(b)) < 0.3, 0.0, b)
    return a, b, clusters


def true_difference(shape: str, delta: float, seed: int = 12345) -> float:
    """The expected per-query difference (query-weighted), from 400,000 groups."""
    a, b, _ = simulate(np.random.default_rng(seed), 400_000, shape, delta)
    return float(a.mean() - b.mean())


def rate(hits: int, runs: int) -> str:
    r = hits / runs
    return f"{100 * r:5.1f} ± {100 * np.sqrt(r * (1 - r) / runs):.1f}"


def rejection_table(runs: int, group_counts, permutations: int = 999) -> list[str]:
    lines = ["| shape | G | queries (mean) | group sign-flip | query-level sign-flip |", "|---|---|---|---|---|"]
    for shape in SHAPES:
        for g in group_counts:
            rng = np.random.default_rng(1000 + g)
            group_hits = query_hits = total = 0
            for run in range(runs):
                a, b, clusters = simulate(rng, g, shape)
                d = a - b
                sums, _ = cluster_sums(d, clusters, g)
                group_hits += sign_flip_p(sums, permutations, run)[0] <= 0.05
                query_hits += sign_flip_p(d, permutations, run)[0] <= 0.05
                total += len(d)
            lines.append(f"| {shape} | {g} | {total / runs:.0f} | {rate(group_hits, runs)} | "
                         f"{rate(query_hits, runs)} |")
    return lines


def coverage_table(runs: int, group_counts, delta: float = 0.4, replicates: int = 499) -> list[str]:
    lines = ["| shape | G | cluster t (embsql) | percentile bootstrap | studentized bootstrap | query-level t |",
             "|---|---|---|---|---|---|"]
    for shape in COVERAGE_SHAPES:
        truth = true_difference(shape, delta)
        for g in group_counts:
            rng = np.random.default_rng(2000 + g)
            hits = {"t": 0, "percentile": 0, "studentized": 0, "query": 0}
            for run in range(runs):
                a, b, clusters = simulate(rng, g, shape, delta)
                d = a - b
                sums, sizes = cluster_sums(d, clusters, g)
                _, _, low, high = t_interval(sums, sizes, 0.95)
                hits["t"] += low <= truth <= high
                boot = bootstrap_intervals(sums, sizes, 0.95, replicates, run)
                for name in ("percentile", "studentized"):
                    hits[name] += boot[name][0] <= truth <= boot[name][1]
                _, _, low, high = t_interval(d, np.ones(len(d)), 0.95)
                hits["query"] += low <= truth <= high
            lines.append(f"| {shape} | {g} | " + " | ".join(rate(hits[k], runs) for k in hits) + " |")
    return lines


def naive_sign_flip(d: np.ndarray, permutations: int, seed: int, block: int = 500) -> np.ndarray:
    """The plain way: a dense +/-1 matrix times the differences, in blocks (float64)."""
    rng = np.random.default_rng(seed)
    out = np.empty(permutations)
    for low in range(0, permutations, block):
        count = min(block, permutations - low)
        signs = rng.integers(0, 2, size=(count, len(d)), dtype=np.int8).astype(np.float64) * 2 - 1
        out[low:low + count] = signs @ d
    return out


def timing_table(queries: int = 10_000, permutations: int = 10_000, repeats: int = 3) -> list[str]:
    """Wall time of the randomization test, embsql's kernel beside the dense sign matrix, warm, best of 3."""
    d = np.random.default_rng(0).normal(size=queries)
    sign_flip_p(d, 10, 0)
    naive_sign_flip(d, 10, 0)
    best = {}
    for name, run in (("embsql (byte tables)", lambda: sign_flip_p(d, permutations, 1)),
                      ("numpy dense +/-1 matrix", lambda: naive_sign_flip(d, permutations, 1))):
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            run()
            times.append(time.perf_counter() - started)
        best[name] = min(times)
    base = best["embsql (byte tables)"]
    return ["| way | seconds | ratio to embsql |", "|---|---|---|"] + \
        [f"| {name} | {t:.3f} | {t / base:.1f} |" for name, t in best.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--short", action="store_true", help="R = 300, fewer group counts")
    args = parser.parse_args()
    runs = 300 if args.short else args.runs
    started = time.perf_counter()
    print(f"R = {runs} data sets per cell; tau = {TAU}; group sizes 1 + Poisson(3)\n")
    print("Table 1. Rejection rate (%) at 5% under H0 (equal expected metric), B = 999")
    print("\n".join(rejection_table(runs, (10, 30, 100) if not args.short else (30,))))
    print("\nTable 2. Coverage (%) of 95% intervals, delta = 0.4")
    print("\n".join(coverage_table(runs, (10, 20, 30, 50, 100) if not args.short else (30,))))
    print("\nTable 3. Randomization test, 10,000 sign vectors over 10,000 queries (single queries), best of 3")
    print("\n".join(timing_table()))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
