"""Classification of unit vectors by their labels: k nearest neighbours and nearest centroid, the
accuracy and macro F1 with intervals, and the paired comparison of two models' accuracy.

k-NN.  Each query item gets the k training items nearest by cosine (itself excluded under
leave-one-out), by the exact blocked top-k of retrieve (embsql.core.ranking.top_k: float32
candidates, float64 decisions, cosines on a 2^-40 grid so that rounding noise does not break
ties).  Tie rules:
  distance  among equal cosines the item that comes first in the item order wins (``order``: the
            items' text order when they have ids, else the rows' order), as scikit-learn's brute
            search does for rows in that order (its argsort is stable; its argpartition leaves
            ties at the k-th neighbour undefined, so only ties inside the k are shared with it);
  vote      majority of the k labels; a tie goes to the smallest label in the labels' sort order
            (embsql.core.labels.sort_key: numbers as numbers), as scikit-learn's mode does on its
            sorted classes_.
Leave-one-out asks for k + 1 neighbours and drops the item itself (or, when k + 1 exact
duplicates that come first push it out, the last of them): the k nearest of the others.

Nearest centroid (the sufficient statistics of R²: n_g and the group sums S_g of unit vectors).
An item z is assigned to the class whose mean of unit vectors is nearest in Euclidean distance,
||z - c||² = 1 - 2 z·c + ||c||² (scikit-learn's NearestCentroid on the unit vectors; the distance
of the within-group sum of squares).  Under leave-one-out its own class's centroid leaves it
out, c = (S_g - z)/(n_g - 1); an item alone in its class cannot be assigned to it.  Ties go to
the smallest label.

Figures.  accuracy = share correct; macro F1 = the mean over the classes present (as a label or
a prediction) of F1_c = 2 TP_c / (n_c + p_c) (n_c items labelled c, p_c predicted c), which is
scikit-learn's f1_score(average="macro").  Intervals treat the predictions as given (the
figures' sampling error over items, as for any test-set score):
  accuracy  Wilson's score interval over the items; with clusters (``group``: items that are not
            independent) Wilson's interval on the effective sample size p(1 - p)/se² (se the
            cluster-robust CR1 standard error, at most n items) with the t(G - 1) quantile (Korn and
            Graubard's recipe; it covered better than the CR1 t interval itself at 30 clusters);
  macro F1  delete-one jackknife (items, or clusters) standard error, figure -/+ t(U - 1) se.
Both are clipped to [0, 1].  ``calibrated`` is true from CALIBRATED_FROM units (items or
clusters) on, where validation/classification_validity.py measured coverage within 95 +- 2.5%.

Paired comparison of accuracy (the same items, two models): d_i = correct_a(i) - correct_b(i).
  items     McNemar: under H0 the b = #(a right, b wrong) of the m discordant items is
            Binomial(m, 1/2); the p-value is the mid-p, 2 P(X < min(b, c)) + P(X = min(b, c)) (1
            when b = c), beside the exact p = min(1, 2 P(X <= min(b, c))), which the discreteness
            makes conservative (at 5% the exact test's level is below the mid-p's, which is close to
            5% from 10 expected discordant items on: validation/calibration.json,
            classification.mcnemar_level and classification.mcnemar_level_exact;
            Fagerland, Lydersen and Laake 2013 recommend the mid-p); both in (0, 1], a tail below
            2.2e-308 given as that; the interval of the
            difference is Agresti and Min's (2005): a Wald interval after adding 1/2 to each of the
            four cells of the paired table;
  clusters  a sign-flip randomization test of whole clusters (swapping the two models' answers for
            every item of a cluster; exact when 2^G <= permutations; on clusters of one item it is
            the McNemar test) and the cluster-robust t interval, both from
            embsql.core.retrieval_comparison.  McNemar on clustered items rejects too often.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from embsql.core.arguments import check_level, check_permutations, check_replicates, check_seed
from embsql.core.labels import bad_label, clean_label, sort_key, text_key
from embsql.core.model_ranking import (
    RANK_CALIBRATED_FROM,
    check_intervals,
    jackknife_rows,
    retrieval_family,
    retrieval_rows,
    simultaneous_intervals,
)
from embsql.core.ranking import top_k, unit_float32
from embsql.core.retrieval_comparison import adjust, cluster_sums, sign_flip_p, t_interval
from embsql.core.student_t import t_quantile
from embsql.errors import BadLabelError, fail

RowName = Callable[[int], str]   # names row i in a message

CALIBRATED_FROM = 30          # items or clusters: the simulated coverage held from here on
QUERY_CHUNK = 8192            # queries scaled to float64 at a time (25 MB at d = 384)
# top_k's blocks for k-NN: 2048 x 2048 float32 products (16 MB, within the L3 cache) came out
# about 5% faster than retrieve's 1024 x 16384 (64 MB) at n = 20,000 (bench/knn_classify.py)
KNN_QUERY_BLOCK = 2048
KNN_DOC_BLOCK = 2048
VOTE_CELLS = 1 << 22          # at most this many k x k comparisons per block of the vote
EXACT_BINOMIAL = 100_000     # discordant items up to which McNemar's tail is summed in integers (< 1 s)
SPLITS = ("train", "test")
CLASSIFY_COLUMNS = ("accuracy", "ci_low", "ci_high", "macro_f1", "macro_f1_ci_low", "macro_f1_ci_high", "items",
                    "classes", "groups", "k", "classifier", "split", "level", "calibrated")
ITEM_COLUMNS = ("item", "label", "predicted", "correct")
# compare_classification's columns (Python, SQL, the report): p_value is the mid-p McNemar test (or the
# cluster test's), p_exact the exact McNemar p
COMPARE_COLUMNS = ("model_a", "model_b", "accuracy_a", "accuracy_b", "difference", "se", "ci_low", "ci_high",
                   "p_value", "p_exact", "p_adjusted", "p_adjust", "items", "groups", "a_only", "b_only",
                   "permutations", "method", "level", "calibrated")


# ----------------------------------------------------------------------------------------------
# the classifiers

def _vote(labels: np.ndarray) -> np.ndarray:
    """Per row, the most frequent code; a tie goes to the smallest code."""
    out = np.empty(len(labels), dtype=np.int64)
    k = labels.shape[1]
    step = max(1, VOTE_CELLS // (k * k))
    for low in range(0, len(labels), step):
        ordered = np.sort(labels[low:low + step], axis=1)
        counts = (ordered[:, :, None] == ordered[:, None, :]).sum(axis=2)
        # argmax takes the first maximum: in sorted order, the smallest of the tied codes
        out[low:low + len(ordered)] = ordered[np.arange(len(ordered)), np.argmax(counts, axis=1)]
    return out


def knn_neighbours(vectors: np.ndarray, inv_norms: np.ndarray, order: np.ndarray, k: int,
                   train: np.ndarray | None = None) -> np.ndarray:
    """Indices (into ``vectors``) of each query item's k nearest training items, nearest first.

    vectors: n x d as stored (float32 vectors stay float32, as in retrieve), inv_norms: 1/||x||
    in float64; order: each item's place in the tie order (smaller first).  train None:
    leave-one-out, every item a query of the others; else a boolean mask: the test items
    (~train) query the training items."""
    rows = np.arange(len(vectors)) if train is None else np.flatnonzero(~train)
    docs = np.arange(len(vectors)) if train is None else np.flatnonzero(train)
    depth = k + 1 if train is None else k
    doc_vectors = vectors if train is None else vectors[docs]
    doc_inv = inv_norms[docs]
    unit = unit_float32(doc_vectors, doc_inv)           # scaled once, not once per chunk of queries
    out = np.empty((len(rows), k), dtype=np.int64)
    for low in range(0, len(rows), QUERY_CHUNK):
        chunk = rows[low:low + QUERY_CHUNK]
        queries = vectors[chunk].astype(np.float64) * inv_norms[chunk, None]
        idx, _ = top_k(queries, doc_vectors, doc_inv, order[docs], depth, unit=unit,
                       query_block=KNN_QUERY_BLOCK, doc_block=KNN_DOC_BLOCK)
        idx = docs[idx]
        if train is None:
            keep = idx != chunk[:, None]
            keep[keep.all(axis=1), -1] = False          # itself not among the k + 1: drop the last
            idx = idx[keep].reshape(len(chunk), k)
        out[low:low + len(chunk)] = idx
    return out


def knn_predict(vectors: np.ndarray, inv_norms: np.ndarray, codes: np.ndarray, order: np.ndarray, k: int,
                train: np.ndarray | None = None) -> np.ndarray:
    """The k-NN prediction (a label code) of every query item (all under leave-one-out, else the test items)."""
    return _vote(codes[knn_neighbours(vectors, inv_norms, order, k, train)])


def centroid_predict(vectors: np.ndarray, inv_norms: np.ndarray, codes: np.ndarray, classes: int,
                     train: np.ndarray | None = None) -> np.ndarray:
    """The nearest-centroid prediction of every query item (all under leave-one-out, else the
    test items); vectors and inv_norms as for knn_neighbours."""
    fit = np.ones(len(vectors), dtype=bool) if train is None else train
    sums = np.zeros((classes, vectors.shape[1]))
    for low in range(0, len(vectors), QUERY_CHUNK):
        part = slice(low, low + QUERY_CHUNK)
        mine = fit[part]
        np.add.at(sums, codes[part][mine], vectors[part][mine].astype(np.float64) * inv_norms[part][mine, None])
    sizes = np.bincount(codes[fit], minlength=classes).astype(np.float64)
    has = sizes > 0
    safe = np.where(has, sizes, 1.0)
    centroid_sq = np.einsum("gd,gd->g", sums, sums) / safe ** 2
    rows = np.arange(len(vectors)) if train is None else np.flatnonzero(~train)
    out = np.empty(len(rows), dtype=np.int64)
    for low in range(0, len(rows), QUERY_CHUNK):
        chunk = rows[low:low + QUERY_CHUNK]
        dots = (vectors[chunk].astype(np.float64) * inv_norms[chunk, None]) @ sums.T     # z . S_h
        score = np.where(has, centroid_sq - 2 * dots / safe, np.inf)  # ||z - c_h||² - 1
        if train is None:
            own = codes[chunk]
            n_own = sizes[own]
            dot_own = dots[np.arange(len(chunk)), own]
            with np.errstate(divide="ignore", invalid="ignore"):
                # c = (S_g - z)/(n_g - 1): ||c||² = (||S_g||² - 2 z.S_g + 1)/(n_g - 1)², z.c = (z.S_g - 1)/(n_g - 1)
                left = ((centroid_sq[own] * n_own ** 2 - 2 * dot_own + 1) / (n_own - 1) ** 2
                        - 2 * (dot_own - 1) / (n_own - 1))
            score[np.arange(len(chunk)), own] = np.where(n_own > 1, left, np.inf)
        out[low:low + len(chunk)] = np.argmin(score, axis=1)           # first minimum: the smallest label
    return out


# ----------------------------------------------------------------------------------------------
# the figures and their intervals

def wilson(p: float, n: float, level: float, df: float | None = None) -> tuple[float, float]:
    """Wilson's score interval of a proportion p of n items; with ``df`` (clusters - 1) n is an
    effective sample size and the quantile is t(df)'s."""
    z = NormalDist().inv_cdf((1 + level) / 2) if df is None else t_quantile((1 + level) / 2, df)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def macro_f1(truth: np.ndarray, predicted: np.ndarray, classes: int) -> float:
    """Mean of F1_c = 2 TP_c/(n_c + p_c) over the classes that are a label or a prediction."""
    tp = np.bincount(truth[truth == predicted], minlength=classes)
    both = np.bincount(truth, minlength=classes) + np.bincount(predicted, minlength=classes)
    present = both > 0
    return float(np.mean(2 * tp[present] / both[present]))


def jackknife_macro_f1(truth: np.ndarray, predicted: np.ndarray, classes: int,
                        units: np.ndarray, count: int) -> np.ndarray:
    """Macro F1 with each unit (item or cluster code 0..count-1) deleted in turn: only the classes
    a unit touches change, so this is O(n), never units x classes."""
    tp = np.bincount(truth[truth == predicted], minlength=classes).astype(np.float64)
    both = (np.bincount(truth, minlength=classes) + np.bincount(predicted, minlength=classes)).astype(np.float64)
    present = both > 0
    f1 = np.where(present, 2 * tp / np.where(present, both, 1.0), 0.0)
    # per (unit, class): what deleting the unit removes from TP_c and n_c + p_c
    key = np.concatenate([units * classes + truth, units * classes + predicted])
    d_tp = np.concatenate([(truth == predicted).astype(np.float64), np.zeros(len(truth))])
    cells, inverse = np.unique(key, return_inverse=True)
    removed_tp = np.bincount(inverse, weights=d_tp)
    removed_both = np.bincount(inverse)
    unit_of, c = np.divmod(cells, classes)
    left_both = both[c] - removed_both
    left_f1 = np.where(left_both > 0, 2 * (tp[c] - removed_tp) / np.where(left_both > 0, left_both, 1.0), 0.0)
    change_f1 = np.bincount(unit_of, weights=left_f1 - f1[c], minlength=count)
    change_present = np.bincount(unit_of, weights=(left_both > 0).astype(np.float64) - present[c], minlength=count)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (f1.sum() + change_f1) / (present.sum() + change_present)


def scores(truth: np.ndarray, predicted: np.ndarray, classes: int, clusters: np.ndarray | None,
           level: float) -> dict:
    """accuracy, macro_f1, their intervals, items, groups and calibrated for label codes ``truth``
    and predicted codes; ``clusters``: cluster codes 0..G-1 of the items, or None (independent)."""
    n = len(truth)
    correct = (truth == predicted).astype(np.float64)
    accuracy = float(correct.mean())
    low: float | None
    high: float | None
    if clusters is None:
        units, count = np.arange(n), n
        low, high = wilson(accuracy, n, level)
    else:
        count = int(clusters.max()) + 1
        units = clusters
        _, se, _, _ = t_interval(*cluster_sums(correct, clusters, count), level)
        if se is None:
            low = high = None
        else:
            # Wilson on the effective sample size p(1 - p)/se² (at most n) with t(G - 1): the
            # cluster-robust t interval's spread, kept inside [0, 1] near the ends
            effective = n if se == 0 else min(n, accuracy * (1 - accuracy) / se ** 2)
            low, high = wilson(accuracy, effective, level, count - 1)
    f1 = macro_f1(truth, predicted, classes)
    f1_low: float | None = None
    f1_high: float | None = None
    if count >= 2:
        deleted = jackknife_macro_f1(truth, predicted, classes, units, count)
        deleted = deleted[np.isfinite(deleted)]
        if len(deleted) >= 2:
            se = math.sqrt((count - 1) / count * float(np.sum((deleted - deleted.mean()) ** 2)))
            half = t_quantile((1 + level) / 2, count - 1) * se
            f1_low, f1_high = max(0.0, f1 - half), min(1.0, f1 + half)
    return {"accuracy": accuracy, "ci_low": low, "ci_high": high, "macro_f1": f1, "macro_f1_ci_low": f1_low,
            "macro_f1_ci_high": f1_high, "items": n, "groups": count if clusters is not None else None,
            "calibrated": low is not None and count >= CALIBRATED_FROM}


# ----------------------------------------------------------------------------------------------
# the design checks

def label_codes(labels: Sequence[object], column: str, where: RowName) -> tuple[list, np.ndarray]:
    """(the distinct labels in sort order, each row's code); a NULL or NaN label names its row
    (``where(i)``)."""
    first: dict[object, int] = {}             # each distinct value (by ==, as a set has it) once, in row order
    seen = np.fromiter((first.setdefault(v, len(first)) for v in labels), dtype=np.int64, count=len(labels))
    for value in first:
        if bad_label(value):                   # the first row with a NULL or NaN (NaNs are unequal)
            i = next(i for i, v in enumerate(labels) if bad_label(v))
            clean_label(labels[i], column, where(i), role="label")
    clean = [clean_label(v, column) for v in first]
    names = sorted(set(clean), key=sort_key)
    lookup = {name: code for code, name in enumerate(names)}
    return names, np.array([lookup[v] for v in clean], dtype=np.int64)[seen]


def split_mask(values: Sequence[object], column: str, where: RowName) -> np.ndarray:
    """True for 'train' rows, False for 'test'; any other value (NULL too) names its row."""
    mask = np.empty(len(values), dtype=bool)
    for i, value in enumerate(values):
        if value not in SPLITS:
            fail("value.split", column=repr(column), value="NULL" if value is None else repr(value), where=where(i))
        mask[i] = value == "train"
    return mask


def check_design(codes: np.ndarray, train: np.ndarray | None, k: int | None, *, split: str | None,
                 whose: str) -> None:
    """Refuse what leaves the classification undefined: one label, a split without train or test
    items, k not below the number of training items (the neighbours of an item)."""
    fit = codes if train is None else codes[train]
    if train is not None:
        for side, rows in (("train", train), ("test", ~train)):
            if not rows.any():
                fail("design.empty_split", column=repr(split), side=side, whose=whose)
    if len(np.unique(fit)) < 2:
        fail("design.one_group", subject=f"the label column{' (training items)' if train is not None else ''}",
             where=whose, needs="classification")
    if k is not None and k >= len(fit):
        fail("design.k_items", k=k, n=len(fit), what="training items" if train is not None else "items",
             whose=whose)


def classify(vectors: np.ndarray, inv_norms: np.ndarray, labels: Sequence[object], *, classifier: str,
             k: int | None, level: float,
             items: Sequence[object] | None = None, splits: Sequence[object] | None = None,
             groups: Sequence[object] | None = None, label_column: str = "label", split_column: str | None = None,
             where: RowName = lambda i: f"row {i + 1}", whose: str = "") -> tuple[dict, dict]:
    """One model's classification: (figures: CLASSIFY_COLUMNS, per item: ITEM_COLUMNS and "group"
    as lists over the items classified, in row order).  vectors as stored, inv_norms 1/||x||.

    classifier "knn" or "centroid"; ``items`` (ids) set the tie order of k-NN (their text order;
    else the rows' order); ``splits`` ('train'/'test' per row) switch from leave-one-out to
    train -> test; ``groups`` (clusters of items that are not independent) make the intervals
    cluster-aware.  ``where(i)`` names row i in a message, ``whose`` the model."""
    names, codes = label_codes(labels, label_column, where)
    train = None if splits is None else split_mask(splits, split_column or "split", where)
    check_design(codes, train, k if classifier == "knn" else None, split=split_column, whose=whose)
    order = np.arange(len(codes))
    if items is not None:
        order[np.argsort(np.asarray([text_key(i) for i in items], dtype=object), kind="stable")] = np.arange(len(codes))
    if classifier == "knn":
        assert k is not None, "k-NN needs k"
        predicted = knn_predict(vectors, inv_norms, codes, order, k, train)
    else:
        predicted = centroid_predict(vectors, inv_norms, codes, len(names), train)
    rows = np.arange(len(codes)) if train is None else np.flatnonzero(~train)
    clusters = None
    if groups is not None:
        clean = [clean_label(groups[int(r)], "group", where(int(r)) if bad_label(groups[int(r)]) else "") for r in rows]
        keys = [text_key(g) for g in clean]
        lookup = {g: code for code, g in enumerate(sorted(set(keys)))}
        clusters = np.array([lookup[g] for g in keys], dtype=np.int64)
    truth = codes[rows]
    figures = scores(truth, predicted, len(names), clusters, level)
    figures.update(classes=len(names), k=k if classifier == "knn" else None, classifier=classifier,
                   split="leave-one-out" if train is None else "train-test", level=level)
    per_item = {"item": None if items is None else [items[int(r)] for r in rows],
                "label": [names[c] for c in truth.tolist()], "predicted": [names[c] for c in predicted.tolist()],
                "correct": (truth == predicted).tolist(),
                "group": None if groups is None else [groups[int(r)] for r in rows]}
    return figures, per_item


# ----------------------------------------------------------------------------------------------
# the paired comparison

def _two_sided(a_only: int, b_only: int, weight: int) -> float:
    """2 P(X < low) + weight P(X = low) for X ~ Binomial(a_only + b_only, 1/2), low = min(a_only, b_only),
    in (0, 1]: weight 2 is the exact two-sided p, weight 1 the mid-p."""
    m, low = a_only + b_only, min(a_only, b_only)
    if m == 0 or (weight == 1 and a_only == b_only):
        return 1.0                          # no discordant items, or the mid-p's centre (exactly 1)
    if m <= EXACT_BINOMIAL:                 # integers: the figure correctly rounded
        term, below = 1, 0
        for j in range(1, low + 1):
            below += term
            term = term * (m - j + 1) // j  # C(m, j), exactly
        value = (2 * below + weight * term) / 2 ** m
    else:
        log_pmf = (math.lgamma(m + 1) - np.array([math.lgamma(x + 1) + math.lgamma(m - x + 1) for x in range(low + 1)])
                   - m * math.log(2.0))
        top = log_pmf.max()
        value = math.exp(top) * float(2.0 * np.exp(log_pmf[:-1] - top).sum() + weight * np.exp(log_pmf[-1] - top))
    # at most 1; a tail below the smallest normal float (2.2e-308) is given as that, never 0
    return min(1.0, max(value, sys.float_info.min))


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact two-sided McNemar p: 2 P(X <= min) for X ~ Binomial(a_only + b_only, 1/2), in (0, 1]."""
    return _two_sided(a_only, b_only, 2)


def mcnemar_mid_p(a_only: int, b_only: int) -> float:
    """Mid-p McNemar (Fagerland, Lydersen and Laake 2013): the exact p less P(X = min), i.e.
    2 P(X < min) + P(X = min), in (0, 1]; exactly 1 when a_only = b_only."""
    return _two_sided(a_only, b_only, 1)


def agresti_min(both: int, a_only: int, b_only: int, neither: int, level: float) -> tuple[float, float, float]:
    """(se, low, high) of accuracy_a - accuracy_b: Wald on the paired table with 1/2 added to each cell."""
    n = both + a_only + b_only + neither + 2.0
    p10, p01 = (a_only + 0.5) / n, (b_only + 0.5) / n
    se = math.sqrt(max(0.0, (p10 + p01 - (p10 - p01) ** 2) / n))
    z = NormalDist().inv_cdf((1 + level) / 2)
    centre = p10 - p01
    return se, max(-1.0, centre - z * se), min(1.0, centre + z * se)


@dataclass(frozen=True)
class Paired:
    """One model's answers on the shared items, in the shared item order."""

    model: object
    correct: np.ndarray


def paired_rows(models: list[Paired], clusters: np.ndarray | None, *, level: float = 0.95,
                p_adjust: str | None = "holm", permutations: int = 10_000, seed: int = 42,
                intervals: str = "marginal", replicates: int = 2000) -> list[dict]:
    """COMPARE_COLUMNS and ``interval`` (which kind the interval is) for every pair of models (in
    the given order) answering the same items; with ``intervals='simultaneous'`` the intervals of
    embsql.core.model_ranking.simultaneous_intervals over ``replicates`` resamples of the joint
    cluster bootstrap of each item's 0/1 answer (``permutations``: the sign-flip test's)."""
    level = check_level(level)
    intervals = check_intervals(intervals)
    check_permutations(permutations)
    replicates = check_replicates(replicates)
    check_seed(seed)
    adjust([], p_adjust)
    if len(models) < 2:
        fail("model.too_few", column="the predictions", models=len(models), needs="a paired comparison")
    groups = 0 if clusters is None else int(clusters.max()) + 1
    rows: list[dict[str, object]] = []
    for left, right in itertools.combinations(models, 2):
        a, b = left.correct.astype(bool), right.correct.astype(bool)
        a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
        n = len(a)
        row = {"model_a": left.model, "model_b": right.model, "accuracy_a": float(a.mean()),
               "accuracy_b": float(b.mean()), "difference": (a_only - b_only) / n, "items": n, "groups": groups or None,
               "a_only": a_only, "b_only": b_only, "level": level, "p_adjust": p_adjust, "interval": intervals}
        if clusters is None:
            se, low, high = agresti_min(int(np.sum(a & b)), a_only, b_only, int(np.sum(~a & ~b)), level)
            row.update(se=se, ci_low=low, ci_high=high, p_value=mcnemar_mid_p(a_only, b_only),
                       p_exact=mcnemar_p(a_only, b_only), permutations=None, method="mid-p McNemar",
                       calibrated=n >= CALIBRATED_FROM)
        else:
            sums, sizes = cluster_sums(a.astype(np.float64) - b, clusters, groups)
            _, se_c, low_c, high_c = t_interval(sums, sizes, level)
            p, used, exact = sign_flip_p(sums, permutations, seed)
            row.update(se=se_c, ci_low=None if low_c is None else max(-1.0, low_c),
                       ci_high=None if high_c is None else min(1.0, high_c), p_value=p, p_exact=None, permutations=used,
                       method=("exact " if exact else "") + "cluster sign-flip",
                       calibrated=se_c is not None and groups >= CALIBRATED_FROM)
        rows.append(row)
    for row, adjusted in zip(rows, adjust([float(r["p_value"]) for r in rows], p_adjust)):  # type: ignore[arg-type]
        row["p_adjusted"] = adjusted
    if intervals == "simultaneous":
        matrix = np.stack([m.correct.astype(np.float64) for m in models], axis=1)
        codes = np.arange(len(matrix)) if clusters is None else clusters
        _, fam = retrieval_family(matrix, codes, replicates=replicates, seed=seed)
        lows, highs = simultaneous_intervals(fam, level)
        for p, row in enumerate(rows):
            row.update(se=float(fam.se[p]), ci_low=max(-1.0, float(lows[p])), ci_high=min(1.0, float(highs[p])))
    return [{column: row[column] for column in COMPARE_COLUMNS + ("interval",)} for row in rows]


def align(models: Sequence[object], items: Sequence[object], correct: Sequence[object],
          groups: Sequence[object] | None, what: str) -> tuple[list[Paired], np.ndarray | None]:
    """Per model (in display order) its answers on the items every model has (each once), and the
    items' cluster codes (clusters in text order; None without groups)."""
    nulls = [i for i, ok in enumerate(correct) if ok is None]
    if nulls:
        fail("value.null", role="correct", column="'correct'", count=len(nulls), where=f" (row {nulls[0] + 1} of {what})")
    per_model: dict[object, dict[str, bool]] = {}
    group_of: dict[str, object] = {}
    for i, (m, item, ok) in enumerate(zip(models, items, correct)):
        m = clean_label(m, "model", f"row {i + 1} of {what}" if bad_label(m) else "", role="model")
        item = clean_label(item, "item", f"row {i + 1} of {what}" if bad_label(item) else "", role="item")
        answers = per_model.setdefault(m, {})
        if text_key(item) in answers:
            fail("label.duplicate", id=repr(item), source=f"the predictions of model {m!r} in {what}")
        answers[text_key(item)] = bool(ok)
        if groups is not None:
            g = clean_label(groups[i], "group", f"row {i + 1} of {what}" if bad_label(groups[i]) else "")
            if group_of.setdefault(text_key(item), g) != g:
                raise BadLabelError(f"{what}: item {item!r} is in group {group_of[text_key(item)]!r} and in group "
                                 f"{g!r}; each item belongs to one group")
    names = sorted(per_model, key=sort_key)
    if not names:
        fail("source.empty", source=what)
    order = sorted(per_model[names[0]])
    for m in names[1:]:
        differ = set(order) ^ set(per_model[m])
        if differ:
            item = sorted(differ)[0]
            has, lacks = (names[0], m) if item in per_model[names[0]] else (m, names[0])
            fail("item.missing", item=repr(item), has=repr(has), lacks=repr(lacks), source=what, count=len(differ))
    paired = [Paired(m, np.array([per_model[m][q] for q in order])) for m in names]
    if groups is None:
        return paired, None
    cluster_names = sorted({text_key(group_of[q]) for q in order})
    lookup = {g: code for code, g in enumerate(cluster_names)}
    return paired, np.array([lookup[text_key(group_of[q])] for q in order], dtype=np.int64)


RANK_STATISTICS = ("accuracy", "macro_f1")


def rank_predictions(models: Sequence[object], items: Sequence[object], groups: Sequence[object] | None, *,
                     statistic: str, correct: Sequence[object] | None = None, labels: Sequence[object] | None = None,
                     predicted: Sequence[object] | None = None, what: str,
                     column: str = "the model column", level: float = 0.95,
                     replicates: int = 2000, seed: int = 42) -> list[dict]:
    """The rank confidence sets of K classifiers by ``statistic`` on per-item predictions (one row
    of embsql.core.model_ranking.RANK_COLUMNS per model, in model order), the models paired on their
    items and the items clustered by ``groups`` (each its own cluster without): accuracy by the
    cluster bootstrap of each item's 0/1 answer (model_ranking.retrieval_rows), macro-F1 by the
    joint normal draws of the delete-one jackknife's covariance (model_ranking.jackknife_rows).
    ``correct`` for accuracy; ``labels`` and ``predicted`` for macro-F1; ``column`` names the model
    column in the message for fewer than two models."""
    if statistic not in RANK_STATISTICS:
        fail("argument.statistic", name="statistic", rule="'accuracy' or 'macro_f1'", value=repr(statistic))
    if statistic == "macro_f1":
        assert labels is not None and predicted is not None
        correct = [None if t is None or p is None else text_key(t) == text_key(p) for t, p in zip(labels, predicted)]
    assert correct is not None
    paired, clusters = align(models, items, correct, groups, what)
    if len(paired) < 2:
        fail("model.too_few", column=column, models=len(paired), needs="a ranking")
    names = [p.model for p in paired]
    units = np.arange(len(paired[0].correct)) if clusters is None else clusters
    if statistic == "accuracy":
        matrix = np.stack([p.correct.astype(np.float64) for p in paired], axis=1)
        return retrieval_rows(names, matrix, units, "accuracy", replicates=replicates, seed=seed, level=level,
                              calibrated_from=RANK_CALIBRATED_FROM["accuracy"])
    assert labels is not None and predicted is not None
    answers: dict[str, dict[str, tuple[str, str]]] = {}
    for m, item, t, p in zip(models, items, labels, predicted):
        answers.setdefault(text_key(m), {})[text_key(item)] = (text_key(t), text_key(p))
    classes = sorted({c for given in answers.values() for pair in given.values() for c in pair})
    code = {c: k for k, c in enumerate(classes)}
    count = int(units.max()) + 1
    found = []
    for m in names:
        given = answers[text_key(m)]
        order = sorted(given)
        truth = np.array([code[given[q][0]] for q in order])
        guess = np.array([code[given[q][1]] for q in order])
        found.append(np.concatenate([[macro_f1(truth, guess, len(classes))],
                                     jackknife_macro_f1(truth, guess, len(classes), units, count)]))
    return jackknife_rows(names, found, "macro_f1", level=level, replicates=replicates, seed=seed)
