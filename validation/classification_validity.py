"""Validity of the classification intervals and of the paired comparison of accuracy, by simulation.

    nice -n 10 python validation/classification_validity.py [--runs 2000] > validation/classification_validity.txt

Every cell is a share over ``runs`` seeded replications with its Monte Carlo error
sqrt(p (1 - p) / runs).  Nominal: 5% rejection under H0 (alpha 0.05), 95% coverage.

1. compare_classification (embsql.core.classification.paired_rows): two models' right/wrong on G
   clusters of s items; each cluster has its own chance of each model being right (logit ~
   N(1, 1) shared, plus N(0, spread) per model; model a shifted by `shift` under H1).  s = 1 and
   spread 0: independent items.  Beside embsql's method, the item-level method (exact McNemar and
   Agresti-Min) on the same clustered data.
2. The accuracy interval: Wilson over items (independent items), Wilson on the clusters' effective
   sample size with t(G - 1) (embsql with group), and Wilson over items on the clustered data beside it.
   The truth is E[p].
3. The macro-F1 interval (delete-one jackknife, t(U - 1)): 5 classes with priors 0.4, 0.25, 0.15,
   0.12, 0.08; an item is predicted right with its class's probability (0.9 ... 0.5), else as a
   uniformly random other class.  The truth is the population macro F1, 2 P(c, c) / (P(t = c) +
   P(p = c)) averaged over classes.  Clustered: items of a cluster share their class.
4. Leave-one-out k-NN (k = 10) on a mixture of 5 Gaussian classes in d = 16, scaled to unit length:
   Wilson's interval of the leave-one-out accuracy against the accuracy of the rule fitted on the
   sample, measured on 20,000 fresh items.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from embsql.core import classification as core


def mc(p: float, runs: int) -> str:
    return f"{100 * p:5.1f} ± {100 * np.sqrt(p * (1 - p) / runs):.1f}"


def correctness(rng, groups: int, size: int, shift: float, spread: float):
    base = rng.normal(1.0, 1.0, groups)
    la = base + shift + spread * rng.normal(size=groups)
    lb = base + spread * rng.normal(size=groups)
    a = rng.random((groups, size)) < (1 / (1 + np.exp(-la)))[:, None]
    b = rng.random((groups, size)) < (1 / (1 + np.exp(-lb)))[:, None]
    return a.ravel(), b.ravel(), np.repeat(np.arange(groups), size)


def true_difference(shift: float, spread: float, draws: int = 4_000_000) -> float:
    rng = np.random.default_rng(0)
    base = rng.normal(1.0, 1.0, draws)
    la, lb = base + shift + spread * rng.normal(size=draws), base + spread * rng.normal(size=draws)
    return float(np.mean(1 / (1 + np.exp(-la)) - 1 / (1 + np.exp(-lb))))


def paired_table(runs: int) -> None:
    print("## 1. compare_classification: rejection at 5% under H0 (shift 0) and coverage of the difference (shift 0.5)")
    print(f"{'design':34} {'method':28} {'level %':>12} {'coverage %':>12}")
    designs = [("independent, n = 50", 50, 1, 0.0), ("independent, n = 200", 200, 1, 0.0),
               ("independent, n = 1000", 1000, 1, 0.0), ("30 clusters of 8, spread 1.5", 30, 8, 1.5),
               ("60 clusters of 8, spread 1.5", 60, 8, 1.5), ("120 clusters of 8, spread 1.5", 120, 8, 1.5),
               ("60 clusters of 8, spread 0.5", 60, 8, 0.5)]
    for number, (name, groups, size, spread) in enumerate(designs):
        truth = true_difference(0.5, spread)
        methods = [("exact McNemar + Agresti-Min", False)] + ([("cluster sign-flip + CR1 t", True)] if size > 1 else [])
        for label, clustered in methods[::-1]:
            reject = cover = 0
            for shift, counter in ((0.0, "level"), (0.5, "coverage")):
                rng = np.random.default_rng([number, int(10 * shift)])
                for r in range(runs):
                    a, b, clusters = correctness(rng, groups, size, shift, spread)
                    row = core.paired_rows([core.Paired("a", a), core.Paired("b", b)],
                                           clusters if clustered else None, permutations=999, seed=r)[0]
                    if counter == "level":       # the exact McNemar p (p_value is the mid-p since issue 24:
                        # validation/classification_validity_mcnemar.py has both); the cluster test's p_value
                        reject += row["p_value" if clustered else "p_exact"] <= 0.05
                    else:
                        cover += row["ci_low"] <= truth <= row["ci_high"]
            print(f"{name:34} {label:28} {mc(reject / runs, runs):>12} {mc(cover / runs, runs):>12}")
    print()


def accuracy_table(runs: int) -> None:
    print("## 2. accuracy interval: coverage of E[p]")
    print(f"{'design':34} {'interval':28} {'coverage %':>12}")
    draws = 1 / (1 + np.exp(-np.random.default_rng(1).normal(2.0, 1.0, 4_000_000)))
    truth = float(draws.mean())
    for name, groups, size in (("independent, n = 30", 30, 1), ("independent, n = 100", 100, 1),
                               ("independent, n = 500", 500, 1), ("30 clusters of 8", 30, 8),
                               ("60 clusters of 8", 60, 8), ("120 clusters of 8", 120, 8)):
        rng = np.random.default_rng(groups * 10 + size)
        hits = {"wilson": 0, "cluster": 0}
        for _ in range(runs):
            a, _, clusters = correctness(rng, groups, size, 1.0, 0.0)
            predicted = np.where(a, 0, 1)
            labels = np.zeros(len(a), dtype=np.int64)
            naive = core.scores(labels, predicted, 2, None, 0.95)
            hits["wilson"] += naive["ci_low"] <= truth <= naive["ci_high"]
            if size > 1:
                clustered = core.scores(labels, predicted, 2, clusters, 0.95)
                hits["cluster"] += clustered["ci_low"] <= truth <= clustered["ci_high"]
        if size > 1:
            print(f"{name:34} {'Wilson, effective n (embsql)':28} {mc(hits['cluster'] / runs, runs):>12}")
        print(f"{name:34} {'Wilson over items':28} {mc(hits['wilson'] / runs, runs):>12}")
    print()


PRIORS = np.array([0.4, 0.25, 0.15, 0.12, 0.08])
RIGHT = np.array([0.9, 0.8, 0.7, 0.6, 0.5])


def population_macro_f1() -> float:
    classes = len(PRIORS)
    joint = np.zeros((classes, classes))
    for c in range(classes):
        joint[c, c] = PRIORS[c] * RIGHT[c]
        for other in range(classes):
            if other != c:
                joint[c, other] = PRIORS[c] * (1 - RIGHT[c]) / (classes - 1)
    return float(np.mean(2 * np.diag(joint) / (joint.sum(axis=1) + joint.sum(axis=0))))


def labels_and_predictions(rng, groups: int, size: int):
    classes = len(PRIORS)
    truth = np.repeat(rng.choice(classes, size=groups, p=PRIORS), size)
    right = rng.random(len(truth)) < RIGHT[truth]
    other = (truth + rng.integers(1, classes, len(truth))) % classes
    return truth, np.where(right, truth, other), np.repeat(np.arange(groups), size)


def f1_table(runs: int) -> None:
    print("## 3. macro-F1 interval (jackknife, t(U - 1)): coverage of the population macro F1")
    print(f"{'design':34} {'units':28} {'coverage %':>12}")
    truth_f1 = population_macro_f1()
    for name, groups, size in (("independent, n = 50", 50, 1), ("independent, n = 200", 200, 1),
                               ("independent, n = 1000", 1000, 1), ("60 clusters of 5", 60, 5),
                               ("200 clusters of 5", 200, 5)):
        rng = np.random.default_rng(groups + 7 * size)
        hits = {"items": 0, "clusters": 0}
        for _ in range(runs):
            truth, predicted, clusters = labels_and_predictions(rng, groups, size)
            naive = core.scores(truth, predicted, len(PRIORS), None, 0.95)
            low = naive["macro_f1_ci_low"]
            hits["items"] += low is not None and low <= truth_f1 <= naive["macro_f1_ci_high"]
            if size > 1:
                clustered = core.scores(truth, predicted, len(PRIORS), clusters, 0.95)
                hits["clusters"] += clustered["macro_f1_ci_low"] <= truth_f1 <= clustered["macro_f1_ci_high"]
        if size > 1:
            print(f"{name:34} {'clusters (embsql with group)':28} {mc(hits['clusters'] / runs, runs):>12}")
        print(f"{name:34} {'items':28} {mc(hits['items'] / runs, runs):>12}")
    print()


def knn_table(runs: int) -> None:
    print("## 4. leave-one-out k-NN (k = 10): Wilson's interval against the fitted rule's accuracy on 20,000 new items")
    print(f"{'design':34} {'mean accuracy':>14} {'coverage %':>12}")
    d, classes = 16, 5
    centres = np.random.default_rng(3).normal(size=(classes, d)) * 0.45
    for n in (100, 400):
        rng = np.random.default_rng(n)
        cover, accuracy = 0, []
        for _ in range(runs):
            y = rng.integers(0, classes, n)
            x = centres[y] + rng.normal(size=(n, d))
            figures, _ = core.classify(x, 1 / np.linalg.norm(x, axis=1), y.tolist(), classifier="knn", k=10,
                                       level=0.95)
            fresh_y = rng.integers(0, classes, 20_000)
            fresh = centres[fresh_y] + rng.normal(size=(20_000, d))
            both = np.concatenate([x, fresh])
            train = np.r_[np.ones(n, dtype=bool), np.zeros(20_000, dtype=bool)]
            predicted = core.knn_predict(both, 1 / np.linalg.norm(both, axis=1), np.r_[y, fresh_y], np.arange(len(both)),
                                         10, train)
            target = float(np.mean(predicted == fresh_y))
            accuracy.append(target)
            cover += figures["ci_low"] <= target <= figures["ci_high"]
        print(f"{f'n = {n}, d = {d}, {classes} classes':34} {np.mean(accuracy):14.3f} {mc(cover / runs, runs):>12}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--knn-runs", type=int, default=400)
    args = parser.parse_args()
    start = time.time()
    print(f"# classification validity: {args.runs} runs per cell ({args.knn_runs} for k-NN), seeded; "
          "± is the Monte Carlo error\n")
    paired_table(args.runs)
    accuracy_table(args.runs)
    f1_table(args.runs)
    knn_table(args.knn_runs)
    print(f"({time.time() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
