"""Family-wise coverage of the rank sets and simultaneous intervals of the evaluation families other
than R² and retrieval (issue 33, item 5): accuracy and macro-F1 of K classifiers on the same
clustered items; Spearman and Pearson of K models' cosines against human scores on the same pairs
of recurring items; debiased CKA of K models with a reference model on the same grouped items.

    nice -n 10 python validation/rank_sets_families.py --families classification [--runs R] [--replicates B]
    nice -n 10 python validation/rank_sets_families.py --families similarity cka --runs 1000 500 --replicates 500

Each run rewrites the cells of the families it ran in validation/rank_sets_families.json and keeps
the others (with their own entry of ``meta``).

What is measured (embsql.core.model_ranking and embsql.core.classification.rank_predictions; level
0.95), per simulated data set of K models answering the same G clusters of 3 items:
  sets      the rank confidence sets (MRSW step-down): covered when no pair is ordered falsely;
  simult.   the single-step max-|t| intervals of all K(K-1)/2 differences (compare_classification's
            intervals='simultaneous' for accuracy): covered when every true difference lies in its
            interval, all together;
  power     the share of truly ordered pairs the sets resolve.
accuracy: the joint cluster bootstrap of each item's 0/1 answer (model_ranking.retrieval_family);
macro-F1: joint normal draws of the delete-one (cluster) jackknife's covariance
(model_ranking.jackknife_covariance, normal_family).  Shares carry their Monte Carlo SE
sqrt(r (1 - r) / R).

Data.  Item i of cluster g has a label uniform on 3 classes; model m answers it right when
u_g + 0.5 v_gm + 0.5 w_i + e_im + 0.5 + delta_m > 0 (u, v, w, e standard normal: a cluster
difficulty shared by the models, a model-by-cluster effect, an item difficulty shared by the
models, noise), else it predicts one of the two other classes at random.  The true accuracy is
Phi((0.5 + delta_m) / sqrt(2.5)); by the symmetry of the classes every class's precision and recall
are that too, so it is also the true macro-F1.  Designs: "tie" (all delta equal: exact ties),
"near" (delta spaced by 0.1, about a third of an SE of a difference at G = 30) and "gap" (0.6, at
most 1.8 / (K - 1): 0.2 at K = 10, so that no two models agree on nearly every item).

Similarity.  G items (30 or 100; the clusters of the item-clustered variance) in 5G pairs, each
pair two distinct random items (so items recur, in 10 pairs on average).  Item i has effects
alpha_i, beta_i; pair k = (a, b) has the gold score s_k = h_k + (alpha_a + alpha_b)/2 and model m's
"cosine" c_mk = s_k + (beta_a + beta_b)/2 + eta_k/2 + tau_m e_mk (h, eta, e, alpha, beta standard
normal): an item effect and a pair effect shared by the models (so their estimates are correlated,
as on shared items), then the model's own noise.  (s, c_m) of a random pair is bivariate normal
with Pearson rho_m = sqrt(1.5 / (2.25 + tau_m^2)) and Spearman (6/pi) asin(rho_m / 2): the truth.
Designs: rho_m all 0.6 ("tie"), spaced by 0.01 ("near") or 0.06 ("gap", at most 0.36 / (K - 1)).
Both statistics are measured on the same data sets (similarity.similarity_family, as
compare_similarity and rank_models draw them).

CKA.  G groups (30 or 100) of 4 items, d = 8: the reference embeds item i of group g as the unit
vector of z_i = u_g + e_i, model m as that of z_i + s_i / 2 + tau_m f_mi (u, e, s, f standard normal
vectors: a group effect, a noise s shared by the models, the model's own).  The truth is the
population linear CKA of each model with the reference, from one sample of 200,000 items (each its
own group) with the same draws for every tau, so tied models have the same truth exactly.
Designs: tau_m all 1 ("tie"), spaced by 0.03 ("near") or 0.2 ("gap", at most 1.2 / (K - 1)); about
-0.37 CKA per unit of tau.  The sets and intervals are geometry.reference_values' paired
jackknife of the debiased CKAs, model_ranking.normal_family (as rank_models), and
geometry.simultaneous_cka_intervals (as compare_cka(intervals='simultaneous')), whose centre is the
bias-corrected difference.

1000 data sets a cell and 500 resamples (or normal draws) by default, a small count of resamples
that keeps the whole run within a few minutes of one core; the Monte Carlo SE of a 95% share is
then 0.7 points (1.0 at 500 data sets).
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
from embsql.core import similarity as sim
from embsql.core.classification import jackknife_macro_f1, macro_f1
from embsql.core.geometry import reference_values, simultaneous_cka_intervals

LEVEL = 0.95
KS = (3, 5, 10)
GROUPS = (30, 100)
DESIGNS = ("tie", "near", "gap")
STEP = {"tie": 0.0, "near": 0.1, "gap": 0.6}
SPAN = 1.8           # the widest spread of delta (K = 10: gaps of 0.2), so that no model is right on nearly every item
ITEMS, CLASSES = 3, 3
FAMILIES = {"classification": ("accuracy", "macro_f1"), "similarity": ("spearman", "pearson"), "cka": ("cka",)}
RHO, RHO_STEP, RHO_SPAN = 0.6, {"tie": 0.0, "near": 0.01, "gap": 0.06}, 0.36
PAIRS_PER_ITEM = 5
TAU, TAU_STEP, TAU_SPAN = 1.0, {"tie": 0.0, "near": 0.03, "gap": 0.2}, 1.2
CKA_ITEMS, CKA_DIM, CKA_TRUTH_ITEMS = 4, 8, 200_000


def truth_of(delta: np.ndarray) -> np.ndarray:
    return stats.norm.cdf((0.5 + delta) / np.sqrt(2.5))


def draw(rng: np.random.Generator, delta: np.ndarray, groups: int):
    """(labels, predictions items x K, clusters) of one data set."""
    k, n = len(delta), groups * ITEMS
    clusters = np.repeat(np.arange(groups), ITEMS)
    latent = (rng.normal(size=groups)[clusters][:, None] + 0.5 * rng.normal(size=(groups, k))[clusters]
              + 0.5 * rng.normal(size=(n, 1)) + rng.normal(size=(n, k)) + 0.5 + delta)
    labels = rng.integers(0, CLASSES, n)
    wrong = (labels[:, None] + 1 + rng.integers(0, 2, (n, k))) % CLASSES
    return labels, np.where(latent > 0, labels[:, None], wrong), clusters


def covered(estimates: np.ndarray, fam: mr.PairFamily, truth: np.ndarray,
            intervals: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[bool, bool, float | None]:
    """(no pair ordered falsely, every true difference in its simultaneous interval, the share of
    truly ordered pairs the sets order); ``intervals``: the face's own, else d -/+ c se of ``fam``."""
    sets = mr.rank_sets(estimates, fam, LEVEL)
    truly = truth[:, None] > truth[None, :]
    true_diff = np.array([truth[a] - truth[b] for a, b in fam.pairs])
    low, high = mr.simultaneous_intervals(fam, LEVEL) if intervals is None else intervals
    ordered = int(truly.sum())
    return (bool(not (sets.better & ~truly).any()), bool(np.all((low <= true_diff) & (true_diff <= high))),
            float((sets.better & truly).sum() / ordered) if ordered else None)


def one_run(delta: np.ndarray, groups: int, truth: dict, seed: int, replicates: int) -> dict:
    labels, predicted, clusters = draw(np.random.default_rng(seed), delta, groups)
    correct = (predicted == labels[:, None]).astype(np.float64)
    means, fam = mr.retrieval_family(correct, clusters, replicates=replicates, seed=seed)
    out = dict(zip(("accuracy_sets", "accuracy_simultaneous", "accuracy_power"), covered(means, fam, truth["accuracy"])))
    values = np.stack([np.concatenate([[macro_f1(labels, predicted[:, m], CLASSES)],
                                       jackknife_macro_f1(labels, predicted[:, m], CLASSES, clusters, groups)])
                       for m in range(len(delta))], axis=1)
    normal = mr.normal_family(values[0], mr.jackknife_covariance(values[1:]), replicates=replicates, seed=seed)
    out.update(zip(("macro_f1_sets", "macro_f1_simultaneous", "macro_f1_power"),
                   covered(values[0], normal, truth["macro_f1"])))
    return out


def similarity_setting(step: float, k: int) -> tuple[np.ndarray, dict]:
    """(each model's own noise tau_m, the true correlations by statistic) of a design."""
    rho = RHO + min(step, RHO_SPAN / (k - 1)) * (np.arange(k)[::-1] - (k - 1) / 2)
    return np.sqrt(1.5 / rho**2 - 2.25), {"pearson": rho, "spearman": 6 / np.pi * np.arcsin(rho / 2)}


def similarity_run(tau: np.ndarray, groups: int, truth: dict, seed: int, replicates: int) -> dict:
    rng = np.random.default_rng(seed)
    n = PAIRS_PER_ITEM * groups
    a = rng.integers(0, groups, n)
    b = (a + rng.integers(1, groups, n)) % groups                # never the item itself
    alpha, beta = rng.normal(size=groups), rng.normal(size=groups)
    score = rng.normal(size=n) + (alpha[a] + alpha[b]) / 2
    shared = (beta[a] + beta[b]) / 2 + rng.normal(size=n) / 2
    cosines = [score + shared + t * rng.normal(size=n) for t in tau]
    pairs = sim.Pairs(score, a, b, groups)
    out = {}
    for statistic in FAMILIES["similarity"]:
        estimates, fam = sim.similarity_family(pairs, cosines, statistic, replicates=replicates, seed=seed)
        out.update(zip((f"{statistic}_sets", f"{statistic}_simultaneous", f"{statistic}_power"),
                       covered(estimates, fam, truth[statistic])))
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def cka_setting(step: float, k: int) -> tuple[np.ndarray, dict]:
    """(each model's own noise tau_m, the population CKAs with the reference) of a design: one large
    sample of items, the same draws for every tau (module docstring)."""
    tau = TAU + min(step, TAU_SPAN / (k - 1)) * (np.arange(k) - (k - 1) / 2)      # model 0 nearest the reference
    rng = np.random.default_rng(2026)
    z = rng.normal(size=(CKA_TRUTH_ITEMS, CKA_DIM)) + rng.normal(size=(CKA_TRUTH_ITEMS, CKA_DIM))
    shared, own = rng.normal(size=z.shape), rng.normal(size=z.shape)
    ref = _unit(z)
    ref -= ref.mean(axis=0)
    ref_norm = np.linalg.norm(ref.T @ ref)
    truth = {}
    for t in np.unique(tau):
        x = _unit(z + shared / 2 + t * own)
        x -= x.mean(axis=0)
        truth[t] = float(np.linalg.norm(x.T @ ref) ** 2 / (np.linalg.norm(x.T @ x) * ref_norm))
    return tau, {"cka": np.array([truth[t] for t in tau])}


def cka_run(tau: np.ndarray, groups: int, truth: dict, seed: int, replicates: int) -> dict:
    rng = np.random.default_rng(seed)
    n = CKA_ITEMS * groups
    labels = np.repeat(np.arange(groups), CKA_ITEMS)
    z = rng.normal(size=(groups, CKA_DIM))[labels] + rng.normal(size=(n, CKA_DIM))
    shared = rng.normal(size=z.shape) / 2
    ids = np.array([f"i{i:04d}" for i in range(n)], dtype=object)
    names = [f"m{m:02d}" for m in range(len(tau))]
    models = {"ref": (ids, _unit(z)), **{name: (ids, _unit(z + shared + t * rng.normal(size=z.shape)))
                                         for name, t in zip(names, tau)}}
    values = reference_values(models, "ref", groups={m: labels for m in models}, group="group", common=False,
                              model="model")[0]
    debiased = [values[name].debiased for name in names]
    table = np.stack(debiased, axis=1)
    fam = mr.normal_family(table[0], mr.jackknife_covariance(table[1:]), replicates=replicates, seed=seed)
    intervals = simultaneous_cka_intervals(debiased, LEVEL, replicates=replicates, seed=seed)
    return dict(zip(("cka_sets", "cka_simultaneous", "cka_power"), covered(table[0], fam, truth["cka"], intervals)))


def classification_setting(step: float, k: int) -> tuple[np.ndarray, dict]:
    delta = min(step, SPAN / (k - 1)) * (np.arange(k)[::-1] - (k - 1) / 2)
    truth = truth_of(delta)
    return delta, {"accuracy": truth, "macro_f1": truth}


# each family group: (its designs' steps, setting(step, K) -> (parameters, truth by family), run)
GROUPS_OF = {"classification": (STEP, classification_setting, one_run),
             "similarity": (RHO_STEP, similarity_setting, similarity_run),
             "cka": (TAU_STEP, cka_setting, cka_run)}


def share(values: list) -> list[float]:
    r = float(np.mean(values))
    return [r, float(np.sqrt(r * (1 - r) / len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", choices=list(FAMILIES), default=["classification"])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000],
                        help="data sets per cell (one number, or one per family group)")
    parser.add_argument("--replicates", type=int, default=500, help="resamples (or normal draws) per data set")
    parser.add_argument("--out", default="validation/rank_sets_families.json")
    args = parser.parse_args()
    out = Path(args.out)
    stored = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {"meta": {}, "cells": []}
    ran = {f for group in args.families for f in FAMILIES[group]}
    cells = [c for c in stored["cells"] if c["family"] not in ran]
    meta = {k: v for k, v in stored["meta"].items() if k not in args.families}
    runs_of = dict(zip(args.families, args.runs * len(args.families) if len(args.runs) == 1 else args.runs))
    print(f"{'family':9} {'K':>3} {'G':>4} {'design':6} {'sets cover':>13} {'simult. cover':>13} {'power sets':>12}")
    for group in args.families:
        started = time.perf_counter()
        steps, setting, run = GROUPS_OF[group]
        runs = runs_of[group]
        for k in KS:
            for design in DESIGNS:
                parameters, truth = setting(steps[design], k)
                for groups in GROUPS:
                    found = [run(parameters, groups, truth, 1000 * r + 29, args.replicates) for r in range(runs)]
                    for family in FAMILIES[group]:
                        powers = [r[f"{family}_power"] for r in found if r[f"{family}_power"] is not None]
                        cell = {"family": family, "k": k, "groups": groups, "design": design, "runs": runs,
                                "replicates": args.replicates, "truth": truth[family].tolist(),
                                "sets_cover": share([r[f"{family}_sets"] for r in found]),
                                "simultaneous_cover": share([r[f"{family}_simultaneous"] for r in found]),
                                "sets_power": [float(np.mean(powers)),
                                               float(np.std(powers, ddof=1) / np.sqrt(len(powers)))]
                                if powers else None}
                        cells.append(cell)

                        def pct(x):
                            return "       -    " if x is None else f"{100 * x[0]:5.1f} ± {100 * x[1]:3.1f}"
                        print(f"{family:9} {k:3d} {groups:4d} {design:6} {pct(cell['sets_cover']):>13} "
                              f"{pct(cell['simultaneous_cover']):>13} {pct(cell['sets_power']):>12}", flush=True)
                    meta[group] = {"level": LEVEL, "runs": runs, "replicates": args.replicates,
                                   "seconds": round(time.perf_counter() - started, 1),
                                   "date": time.strftime("%Y-%m-%d", time.gmtime()),
                                   "python": platform.python_version(), "machine": platform.machine(),
                                   "command": f"nice -n 10 python validation/rank_sets_families.py --families {group} "
                                              f"--runs {runs} --replicates {args.replicates}",
                                   "note": "shares are [value, Monte Carlo SE]"}
                    out.write_text(json.dumps({"meta": meta, "cells": cells}, indent=1) + "\n", encoding="utf-8")
        print(f"{group}: {round(time.perf_counter() - started, 1)} s")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
