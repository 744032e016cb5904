"""Family-wise coverage of the rank sets and simultaneous intervals of the classification family
(issue 33, item 5): accuracy and macro-F1 of K classifiers on the same clustered items.

    nice -n 10 python validation/rank_sets_families.py [--runs R] [--replicates B] [--out validation/rank_sets_families.json]

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

1000 data sets a cell and 500 resamples (or normal draws) by default, a small count of resamples
that keeps the whole run within a few minutes of one core; the Monte Carlo SE of a 95% share is
then 0.7 points.
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
from embsql.core.classification import jackknife_macro_f1, macro_f1

LEVEL = 0.95
KS = (3, 5, 10)
GROUPS = (30, 100)
DESIGNS = ("tie", "near", "gap")
STEP = {"tie": 0.0, "near": 0.1, "gap": 0.6}
SPAN = 1.8           # the widest spread of delta (K = 10: gaps of 0.2), so that no model is right on nearly every item
ITEMS, CLASSES = 3, 3


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


def covered(estimates: np.ndarray, fam: mr.PairFamily, truth: np.ndarray) -> tuple[bool, bool, float | None]:
    sets = mr.rank_sets(estimates, fam, LEVEL)
    truly = truth[:, None] > truth[None, :]
    true_diff = np.array([truth[a] - truth[b] for a, b in fam.pairs])
    low, high = mr.simultaneous_intervals(fam, LEVEL)
    ordered = int(truly.sum())
    return (bool(not (sets.better & ~truly).any()), bool(np.all((low <= true_diff) & (true_diff <= high))),
            float((sets.better & truly).sum() / ordered) if ordered else None)


def one_run(delta: np.ndarray, groups: int, truth: np.ndarray, seed: int, replicates: int) -> dict:
    labels, predicted, clusters = draw(np.random.default_rng(seed), delta, groups)
    correct = (predicted == labels[:, None]).astype(np.float64)
    means, fam = mr.retrieval_family(correct, clusters, replicates=replicates, seed=seed)
    out = dict(zip(("accuracy_sets", "accuracy_simultaneous", "accuracy_power"), covered(means, fam, truth)))
    values = np.stack([np.concatenate([[macro_f1(labels, predicted[:, m], CLASSES)],
                                       jackknife_macro_f1(labels, predicted[:, m], CLASSES, clusters, groups)])
                       for m in range(len(delta))], axis=1)
    normal = mr.normal_family(values[0], mr.jackknife_covariance(values[1:]), replicates=replicates, seed=seed)
    out.update(zip(("macro_f1_sets", "macro_f1_simultaneous", "macro_f1_power"), covered(values[0], normal, truth)))
    return out


def share(values: list) -> list[float]:
    r = float(np.mean(values))
    return [r, float(np.sqrt(r * (1 - r) / len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="data sets per cell")
    parser.add_argument("--replicates", type=int, default=500, help="resamples (or normal draws) per data set")
    parser.add_argument("--out", default="validation/rank_sets_families.json")
    args = parser.parse_args()
    started = time.perf_counter()
    cells = []
    print(f"{'family':9} {'K':>3} {'G':>4} {'design':6} {'sets cover':>13} {'simult. cover':>13} {'power sets':>12}")
    for k in KS:
        for design in DESIGNS:
            delta = min(STEP[design], SPAN / (k - 1)) * (np.arange(k)[::-1] - (k - 1) / 2)
            truth = truth_of(delta)
            for groups in GROUPS:
                runs = [one_run(delta, groups, truth, 1000 * r + 29, args.replicates) for r in range(args.runs)]
                for family in ("accuracy", "macro_f1"):
                    powers = [r[f"{family}_power"] for r in runs if r[f"{family}_power"] is not None]
                    cell = {"family": family, "k": k, "groups": groups, "design": design, "runs": args.runs,
                            "replicates": args.replicates, "truth": truth.tolist(),
                            "sets_cover": share([r[f"{family}_sets"] for r in runs]),
                            "simultaneous_cover": share([r[f"{family}_simultaneous"] for r in runs]),
                            "sets_power": [float(np.mean(powers)), float(np.std(powers, ddof=1) / np.sqrt(len(powers)))]
                            if powers else None}
                    cells.append(cell)

                    def pct(x):
                        return "       -    " if x is None else f"{100 * x[0]:5.1f} ± {100 * x[1]:3.1f}"
                    print(f"{family:9} {k:3d} {groups:4d} {design:6} {pct(cell['sets_cover']):>13} "
                          f"{pct(cell['simultaneous_cover']):>13} {pct(cell['sets_power']):>12}", flush=True)
                meta = {"level": LEVEL, "runs": args.runs, "replicates": args.replicates,
                        "seconds": round(time.perf_counter() - started, 1), "python": platform.python_version(),
                        "machine": platform.machine(),
                        "command": f"nice -n 10 python validation/rank_sets_families.py --runs {args.runs} "
                                   f"--replicates {args.replicates}",
                        "note": "shares are [value, Monte Carlo SE]"}
                Path(args.out).write_text(json.dumps({"meta": meta, "cells": cells}, indent=1) + "\n",
                                          encoding="utf-8")
    print(f"wrote {args.out} in {round(time.perf_counter() - started, 1)} s")


if __name__ == "__main__":
    main()
