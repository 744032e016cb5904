"""Validity of similarity_eval's intervals and compare_similarity's paired test, by simulation.

    nice -n 10 python validation/similarity_validity.py [--runs R] [--short] > validation/similarity_validity.txt

Design (items recur across pairs as in word-similarity sets): n pairs drawn over "hub" items and
"leaf" items.  Each end of a pair is a hub with probability `hub_share`; there are 2 n hub_share / 20
hubs, so a hub is in about 20 pairs (up to 40), and about n leaves, each in Poisson(1) pairs (half
of the items that occur are in exactly one pair).  "recurring" has hub_share = 0.5, "sparse" 0.1
(about 5% of the items in 10 or more pairs), "independent" no hubs and every item in one pair.

Values: per item a true effect alpha_i ~ N(0, 1), a human-reading effect gamma_i ~ N(0, 0.5^2) and,
per model M, a model error beta_Mi ~ N(0, s_M^2); per pair true similarity t = alpha_a + alpha_b +
N(0, 1), gold score = t + gamma_a + gamma_b + N(0, 0.5^2), cosine_M = t + beta_Ma + beta_Mb +
N(0, 0.5^2).  The item effects make pairs that share an item correlated (in the score, in each
model's errors, and in the difference of two models' errors).  All normal, so the population
Pearson rho is Var(t) / sqrt(Var(score) Var(cosine)) and Spearman's is (6 / pi) asin(rho / 2).
Model A has s = 0.8 (rho_P = 0.729), model B s = 0.4 (rho_P = 0.820).

Tables (each cell a share of R runs, +- its Monte Carlo SE sqrt(p (1 - p) / R)):
  coverage of the 95% interval of A's Spearman and Pearson, and of the difference A - B;
  level: rejections at 5% of H0 "equal population correlation", two models with s = 0.8 each
  (the same pairs and gold scores, independent model errors); "rounded" also rounds the gold score
  to whole numbers (a 0-5-like scale with many ties; level only, as its population rho is not
  closed-form).
Methods: "item" is embsql's (influence values clustered by item, t with effective-item df); "pair"
treats the pairs as independent (the same influence values, each pair its own cluster, t(n - 1)):
what a pair-level bootstrap or Fisher's 1 / sqrt(n - 3) estimates.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from embsql.core import similarity

SIGMA_ALPHA, SIGMA_PAIR, SIGMA_GAMMA, SIGMA_GOLD, SIGMA_NOISE = 1.0, 1.0, 0.5, 0.5, 0.5
MODEL_A, MODEL_B = 0.8, 0.4
HUB_DEGREE = 20
DESIGNS = {"recurring": 0.5, "sparse": 0.1, "independent": 0.0}


def design(rng: np.random.Generator, n: int, hub_share: float) -> tuple[np.ndarray, np.ndarray, int]:
    """Item codes (a, b) of n pairs, a != b, and the number of items that occur."""
    if hub_share == 0:
        return np.arange(n), np.arange(n, 2 * n), 2 * n
    hubs = max(1, round(n * 2 * hub_share / HUB_DEGREE))
    weights = np.r_[np.full(hubs, n * hub_share / (1 - hub_share) / hubs), np.ones(n)]
    p = weights / weights.sum()
    a, b = rng.choice(len(p), n, p=p), rng.choice(len(p), n, p=p)
    while (same := a == b).any():
        b[same] = rng.choice(len(p), int(same.sum()), p=p)
    used, codes = np.unique(np.r_[a, b], return_inverse=True)
    return codes[:n], codes[n:], len(used)


def values(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, items: int,
           model_sds: tuple[float, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Gold scores and one cosine-like value per model (module docstring)."""
    alpha, gamma = rng.normal(0, SIGMA_ALPHA, items), rng.normal(0, SIGMA_GAMMA, items)
    t = alpha[a] + alpha[b] + rng.normal(0, SIGMA_PAIR, len(a))
    score = t + gamma[a] + gamma[b] + rng.normal(0, SIGMA_GOLD, len(a))
    cosines = []
    for sd in model_sds:
        beta = rng.normal(0, sd, items)
        cosines.append(t + beta[a] + beta[b] + rng.normal(0, SIGMA_NOISE, len(a)))
    return score, cosines


def truth(model_sd: float) -> dict[str, float]:
    """Population Pearson and Spearman of a model's cosine with the gold score."""
    var_t = 2 * SIGMA_ALPHA**2 + SIGMA_PAIR**2
    rho = var_t / np.sqrt((var_t + 2 * SIGMA_GAMMA**2 + SIGMA_GOLD**2) * (var_t + 2 * model_sd**2 + SIGMA_NOISE**2))
    return {"pearson": float(rho), "spearman": float(6 / np.pi * np.arcsin(rho / 2))}


def run(n: int, hub_share: float, runs: int, seed: int, rounded: bool = False) -> dict[str, dict[str, float]]:
    """Shares of runs: per method, 'cover_<corr>', 'cover_diff_<corr>' and 'level_<corr>'."""
    rng = np.random.default_rng(seed)
    true_a, true_b = truth(MODEL_A), truth(MODEL_B)
    counts = {m: {} for m in ("item", "pair")}
    for _ in range(runs):
        a, b, items = design(rng, n, hub_share)
        score, (cos_a, cos_b) = values(rng, a, b, items, (MODEL_A, MODEL_B))
        pairs = similarity.Pairs(score, a, b, items)
        score0, (x0, y0) = values(rng, a, b, items, (MODEL_A, MODEL_A))
        null = similarity.Pairs(np.round(score0) if rounded else score0, a, b, items)
        for method, tally in counts.items():
            pair_level = method == "pair"
            tests = similarity.difference(null, x0, y0, 0.95, pair_level)
            for name in ("spearman", "pearson"):
                tally[f"level_{name}"] = tally.get(f"level_{name}", 0) + (tests[name].p_value <= 0.05)
            if rounded:
                continue
            one = similarity.evaluate(pairs, cos_a, 0.95, pair_level)
            two = similarity.difference(pairs, cos_a, cos_b, 0.95, pair_level)
            for name in ("spearman", "pearson"):
                tally[f"cover_{name}"] = tally.get(f"cover_{name}", 0) + (one[name].ci_low <= true_a[name] <= one[name].ci_high)
                diff = true_a[name] - true_b[name]
                tally[f"cover_diff_{name}"] = tally.get(f"cover_diff_{name}", 0) + (two[name].ci_low <= diff <= two[name].ci_high)
    return {m: {k: v / runs for k, v in tally.items()} for m, tally in counts.items()}


def degrees(n: int, hub_share: float, seed: int = 0) -> str:
    """The design's item degrees: share of items in 1 pair, in 10 or more, the largest; effective df."""
    a, b, items = design(np.random.default_rng(seed), n, hub_share)
    degree = np.bincount(np.r_[a, b])
    return (f"{items} items, {np.mean(degree == 1):.0%} in 1 pair, {np.mean(degree >= 10):.1%} in >= 10, "
            f"max {degree.max()}, effective df {similarity.effective_items(a, b, items) - 1:.0f}")


def cell(p: float, runs: int) -> str:
    return f"{100 * p:5.1f} +- {100 * np.sqrt(p * (1 - p) / runs):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--short", action="store_true", help="n = 500 only")
    args = parser.parse_args()
    sizes = (500,) if args.short else (200, 500, 1000, 2000)
    started = time.perf_counter()
    print(f"similarity validity: {args.runs} runs per row; truth A {truth(MODEL_A)}, B {truth(MODEL_B)}")
    header = ("design", "pairs", "method", "cover_spearman", "cover_pearson", "cover_diff_spearman",
              "cover_diff_pearson", "level_spearman", "level_pearson")
    print(" | ".join(header))
    for name, share in DESIGNS.items():
        for n in sizes:
            print(f"# {name}, {n} pairs: {degrees(n, share)}")
            result = run(n, share, args.runs, seed=n + int(100 * share))
            for method, shares in result.items():
                print(" | ".join([name, str(n), method] + [cell(shares[k], args.runs) for k in header[3:]]), flush=True)
    for n in sizes:
        result = run(n, DESIGNS["recurring"], args.runs, seed=7 * n, rounded=True)
        for method, shares in result.items():
            print(" | ".join(["recurring, rounded score", str(n), method] + ["-"] * 4
                             + [cell(shares[k], args.runs) for k in header[7:]]), flush=True)
    print(f"# {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
