"""Family-wise coverage and power of embsql's rank confidence sets and simultaneous pairwise intervals.

    nice -n 10 python validation/rank_sets.py [--runs R] [--replicates B] [--out validation/rank_sets.json]

What is measured (embsql.core.model_ranking; level 0.95).  Per simulated data set, K models on the
same G groups, the joint studentised paired cluster bootstrap (B resamples, the same resamples of
groups for every model; what rank_models and compare_structure(..., intervals='simultaneous') run) gives
  sets      the rank confidence sets (MRSW step-down): covered when no pair is ordered falsely
            (j shown better than k while theta_j <= theta_k), i.e. every model's set holds every
            rank of its tie in truth, for all K together;
  simult.   the single-step max-|t| intervals of all K(K-1)/2 differences: covered when every
            true difference lies in its interval, all together;
and three powers, each the share of truly ordered pairs (theta_j > theta_k) shown ordered:
  sets      the rank sets above;
  Holm      Holm-adjusted pairwise tests at 5%: each pair's t = difference / se (the same paired SE)
            against t(G - 1), two-sided; a pair counts when its adjusted p <= 0.05 and the sign is
            right (bootstrap p-values cannot reach Holm's smallest thresholds with B resamples);
  indep.    the same step-down fed with independent resamples of each model (another resample of
            groups per model; the SE of a difference sqrt(se_j^2 + se_k^2)): the independence version
            that ignores the pairing, as a normal approximation with a diagonal covariance would.
Each share carries its Monte Carlo SE sqrt(r (1 - r) / R) (for power: over data sets' shares, SE of
the mean).  Family-wise error of Holm and of the independence sets is reported beside.

Data.  Truth designs for the K models' parameters: "tie" (all equal), "near" (equally spaced by
about half an SE of a difference at G = 30) and "gap" (spaced by about three such SEs; R²'s SE
varies with a_m, so "about").
  r2     groups g with 4 items each; a group centre c_g ~ N(0, I_8) shared by the models, an item
         deviation e_i ~ N(0, I_8) shared by the models (the same items), and per model its own
         noise f ~ N(0, 0.6^2 I_8): model m embeds item i as normalize(a_m c_g + e_i + f).  R² rises
         with a_m; a tie is the same a_m (exact by symmetry).  The true R² is that of 40,000 groups.
  ndcg   G paraphrase groups with 1 + Poisson(3) queries each; per group a difficulty u_g ~ N(0, 1)
         shared by the models and a model-by-question effect v_gm ~ N(0, 0.5^2), per query and model
         noise 0.5 N(0, 1) and a query difficulty shared by the models 0.5 N(0, 1); the per-query
         score is sigmoid(latent + delta_m) (an nDCG-like value in (0, 1)).  The true mean is
         E sigmoid(delta_m + s Z), s^2 = 1 + 0.25 + 0.25 + 0.25, by Gauss-Hermite quadrature.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from scipy import stats

from embsql.core import model_ranking as mr
from embsql.core import resampling
from embsql.core.model_comparison import canonical
from embsql.core.retrieval_comparison import adjust
from embsql.core.sums import GroupSums

LEVEL = 0.95
KS = (3, 5, 10)
GROUPS = (30, 100)
DESIGNS = ("tie", "near", "gap")
R2_A0, R2_NOISE, R2_DIM, R2_ITEMS = 0.3, 0.6, 8, 4
# spacings: a pilot put the SE of a difference at G = 30 near 0.055 in a (R² 0.020 at a = 0.45) and
# 0.145 on the latent scale of the nDCG-like score (0.027 in the score)
R2_STEP = {"tie": 0.0, "near": 0.027, "gap": 0.165}
NDCG_STEP = {"tie": 0.0, "near": 0.07, "gap": 0.45}


def parameters(design: str, k: int, family: str) -> np.ndarray:
    """The models' parameters, best first: a_m = 0.3 + step (K - 1 - m) (R²), delta_m centred on 0 (nDCG)."""
    if family == "r2":
        return R2_A0 + R2_STEP[design] * np.arange(k)[::-1]
    return NDCG_STEP[design] * (np.arange(k)[::-1] - (k - 1) / 2)


# ---- r2 ----------------------------------------------------------------------------------------

def r2_models(rng: np.random.Generator, a: np.ndarray, groups: int) -> list[GroupSums]:
    centre = rng.normal(size=(groups, R2_DIM))
    labels = np.repeat(np.array([f"g{i:05d}" for i in range(groups)], dtype=object), R2_ITEMS)
    shared = rng.normal(size=(groups * R2_ITEMS, R2_DIM))
    base = np.repeat(centre, R2_ITEMS, axis=0)
    out = []
    for a_m in a:
        x = a_m * base + shared + R2_NOISE * rng.normal(size=shared.shape)
        out.append(canonical(GroupSums.from_rows(labels, x / np.linalg.norm(x, axis=1, keepdims=True))))
    return out


def r2_truth(a: np.ndarray) -> np.ndarray:
    values = {}
    for a_m in sorted(set(a.tolist())):
        rng = np.random.default_rng(777)          # one draw for every a: ties stay exact
        sums = r2_models(rng, np.array([a_m]), 40_000)[0]
        values[a_m] = resampling.jackknife_replicates(sums, "r2")[0]
    return np.array([values[x] for x in a.tolist()])


def r2_independent(models: list[GroupSums], replicates: int, seed: int) -> mr.PairFamily:
    """The independence version: each model resampled on its own (another seed per model)."""
    strata = mr.joint_strata(models, "auto")
    g = len(models[0].counts)
    theta, se, theta_star, se_star = [], [], [], []
    step = max(1, min(resampling.BOOTSTRAP_BLOCK, resampling.INNER_CELLS // g))
    for m, s in enumerate(models):
        estimate, jack = resampling.jackknife_replicates(s, "r2")
        theta.append(estimate)
        se.append(resampling.jackknife_se(jack, strata))
        weights = resampling.resample_weights(g, replicates, seed + 7919 * (m + 1), strata)
        t_m, s_m = np.empty(replicates), np.empty(replicates)
        with np.errstate(divide="ignore", invalid="ignore"):
            for low in range(0, replicates, step):
                block = weights[low:low + step]
                full, left = resampling.resample_jackknife(s, "r2", block)
                t_m[low:low + step] = full
                s_m[low:low + step] = resampling.inner_se(left, block, strata)
        theta_star.append(t_m)
        se_star.append(s_m)
    return independent_family(np.array(theta), np.array(se), np.array(theta_star).T, np.array(se_star).T)


def independent_family(theta, se, theta_star, se_star) -> mr.PairFamily:
    pairs = mr.pairs_of(len(theta))
    difference = np.array([theta[a] - theta[b] for a, b in pairs])
    pair_se = np.array([np.hypot(se[a], se[b]) for a, b in pairs])
    diff_star = np.stack([theta_star[:, a] - theta_star[:, b] for a, b in pairs], axis=1)
    se_pair_star = np.stack([np.hypot(se_star[:, a], se_star[:, b]) for a, b in pairs], axis=1)
    return mr.family(difference, pair_se, diff_star, se_pair_star)


# ---- ndcg-like -----------------------------------------------------------------------------------

def ndcg_scores(rng: np.random.Generator, delta: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = 1 + rng.poisson(3, groups)
    clusters = np.repeat(np.arange(groups), sizes)
    k, n = len(delta), len(clusters)
    latent = (rng.normal(size=groups)[clusters][:, None] + 0.5 * rng.normal(size=(groups, k))[clusters]
              + 0.5 * rng.normal(size=(n, 1)) + 0.5 * rng.normal(size=(n, k)) + delta)
    return 1 / (1 + np.exp(-latent)), clusters


def ndcg_truth(delta: np.ndarray) -> np.ndarray:
    z, w = np.polynomial.hermite_e.hermegauss(120)
    s = np.sqrt(1 + 0.25 + 0.25 + 0.25)
    return np.array([float(np.sum(w / (1 + np.exp(-(d + s * z)))) / np.sqrt(2 * np.pi)) for d in delta])


def ndcg_independent(scores: np.ndarray, clusters: np.ndarray, replicates: int, seed: int) -> mr.PairFamily:
    groups = int(clusters.max()) + 1
    sizes = np.bincount(clusters, minlength=groups).astype(float)
    theta, se, theta_star, se_star = [], [], [], []
    for m in range(scores.shape[1]):
        sums = np.bincount(clusters, weights=scores[:, m], minlength=groups)
        mean, s = mr.cluster_robust(sums, sizes)
        theta.append(mean)
        se.append(s)
        weights = resampling.bootstrap_weights(groups, replicates, seed + 7919 * (m + 1))
        n_star, g_star = weights @ sizes, weights.sum(axis=1)
        d = (weights @ sums) / n_star
        spread = weights @ (sums * sums) - 2 * d * (weights @ (sums * sizes)) + d ** 2 * (weights @ (sizes * sizes))
        theta_star.append(d)
        se_star.append(np.sqrt(g_star / (g_star - 1) * np.maximum(spread, 0.0)) / n_star)
    return independent_family(np.array(theta), np.array(se), np.array(theta_star).T, np.array(se_star).T)


# ---- one data set ----------------------------------------------------------------------------------

def decisions(estimates: np.ndarray, fam: mr.PairFamily, truth: np.ndarray, groups: int) -> dict:
    k = len(truth)
    sets = mr.rank_sets(estimates, fam, LEVEL)
    truly = truth[:, None] > truth[None, :]
    true_diff = np.array([truth[a] - truth[b] for a, b in fam.pairs])
    low, high = mr.simultaneous_intervals(fam, LEVEL)
    t = np.divide(fam.difference, fam.se, out=np.zeros_like(fam.difference), where=fam.se > 0)
    p = 2 * stats.t.sf(np.abs(t), groups - 1)
    p = np.where(fam.se > 0, p, np.where(fam.difference == 0, 1.0, 0.0))
    holm = np.asarray(adjust(p.tolist(), "holm")) <= 1 - LEVEL
    holm_better = np.zeros((k, k), dtype=bool)
    for i, (a, b) in enumerate(fam.pairs):
        holm_better[a, b] = holm[i] and fam.difference[i] > 0
        holm_better[b, a] = holm[i] and fam.difference[i] < 0
    ordered = int(truly.sum())
    return {"sets_cover": bool(not (sets.better & ~truly).any()),
            "simultaneous_cover": bool(np.all((low <= true_diff) & (true_diff <= high))),
            "holm_cover": bool(not (holm_better & ~truly).any()),
            "sets_power": float((sets.better & truly).sum() / ordered) if ordered else None,
            "holm_power": float((holm_better & truly).sum() / ordered) if ordered else None}


def one_run(family: str, design: str, k: int, groups: int, truth: np.ndarray, params: np.ndarray, seed: int,
            replicates: int) -> dict:
    rng = np.random.default_rng(seed)
    if family == "r2":
        models = r2_models(rng, params, groups)
        estimates, fam, _ = mr.structure_family(models, "r2", replicates=replicates, seed=seed)
        independent = r2_independent(models, replicates, seed)
    else:
        scores, clusters = ndcg_scores(rng, params, groups)
        estimates, fam = mr.retrieval_family(scores, clusters, replicates=replicates, seed=seed)
        independent = ndcg_independent(scores, clusters, replicates, seed)
    out = decisions(estimates, fam, truth, groups)
    alone = decisions(estimates, independent, truth, groups)
    out["independent_cover"], out["independent_power"] = alone["sets_cover"], alone["sets_power"]
    return out


def share(values: list) -> tuple[float, float]:
    r = float(np.mean(values))
    return r, float(np.sqrt(r * (1 - r) / len(values)))


def mean_se(values: list) -> tuple[float, float] | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return float(np.mean(values)), float(np.std(values, ddof=1) / np.sqrt(len(values)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="data sets per cell")
    parser.add_argument("--replicates", type=int, default=400, help="joint bootstrap resamples per data set")
    parser.add_argument("--families", default="r2,ndcg")
    parser.add_argument("--out", default="validation/rank_sets.json")
    args = parser.parse_args()
    cells = []
    started = time.perf_counter()
    print(f"{'family':6} {'K':>3} {'G':>4} {'design':6} {'sets cover':>13} {'simult. cover':>13} "
          f"{'power sets':>12} {'power Holm':>12} {'power indep.':>12} {'Holm no-FWE':>11} {'indep. cover':>13}")
    for family in args.families.split(","):
        for k in KS:
            for design in DESIGNS:
                params = parameters(design, k, family)
                truth = r2_truth(params) if family == "r2" else ndcg_truth(params)
                for groups in GROUPS:
                    tick = time.perf_counter()
                    runs = [one_run(family, design, k, groups, truth, params, 1000 * r + 17, args.replicates)
                            for r in range(args.runs)]
                    cell = {"family": family, "k": k, "groups": groups, "design": design, "runs": args.runs,
                            "replicates": args.replicates, "truth": truth.tolist(),
                            "sets_cover": share([r["sets_cover"] for r in runs]),
                            "simultaneous_cover": share([r["simultaneous_cover"] for r in runs]),
                            "holm_cover": share([r["holm_cover"] for r in runs]),
                            "independent_cover": share([r["independent_cover"] for r in runs]),
                            "sets_power": mean_se([r["sets_power"] for r in runs]),
                            "holm_power": mean_se([r["holm_power"] for r in runs]),
                            "independent_power": mean_se([r["independent_power"] for r in runs]),
                            "seconds": round(time.perf_counter() - tick, 1)}
                    cells.append(cell)

                    def pct(x):
                        return "       -    " if x is None else f"{100 * x[0]:5.1f} ± {100 * x[1]:3.1f}"
                    print(f"{family:6} {k:3d} {groups:4d} {design:6} {pct(cell['sets_cover']):>13} "
                          f"{pct(cell['simultaneous_cover']):>13} {pct(cell['sets_power']):>12} "
                          f"{pct(cell['holm_power']):>12} {pct(cell['independent_power']):>12} "
                          f"{100 * cell['holm_cover'][0]:10.1f}% {pct(cell['independent_cover']):>13}", flush=True)
                    write(args.out, args, cells, started)
    print(f"wrote {args.out} in {round(time.perf_counter() - started, 1)} s")


def write(out: str, args: argparse.Namespace, cells: list, started: float) -> None:
    """The JSON so far (written after every cell, so a stopped run keeps its finished cells)."""
    meta = {"level": LEVEL, "runs": args.runs, "replicates": args.replicates, "families": args.families,
            "seconds": round(time.perf_counter() - started, 1), "python": platform.python_version(),
            "machine": platform.machine(), "command": f"nice -n 10 python validation/rank_sets.py --runs {args.runs} "
                                                      f"--replicates {args.replicates} --families {args.families}",
            "note": "shares are [value, Monte Carlo SE]; the printed 'Holm no-FWE' column is holm_cover, the share "
                    "of data sets where Holm ordered no pair falsely"}
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"meta": meta, "cells": cells}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
