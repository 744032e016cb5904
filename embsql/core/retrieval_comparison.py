"""Paired comparison of two retrieval models on the same queries, aware of paraphrase groups.

Per query i the two models score x_a(i), x_b(i) (nDCG@10, say); d(i) = x_a(i) - x_b(i).  Queries
fall into G clusters (paraphrase groups; with no groups each query is its own cluster), with
S_g = sum of d over cluster g and n_g its size, N = sum n_g.

    difference  D = sum S_g / N                         (= mean_a - mean_b over the queries)
    se          sqrt(G/(G-1) sum_g (S_g - n_g D)^2) / N  (cluster-robust, CR1)
    interval    D -/+ t(G-1, (1+level)/2) se

p-value: a paired randomization test.  Under H0 the two models are exchangeable within each
cluster, so swapping their scores for a whole cluster (S_g -> -S_g) leaves the distribution
unchanged: T* = sum_g s_g S_g with s_g = +/-1, two-sided, p = (b + 1)/(B + 1) with b the sign
vectors with |T*| >= |T|.  When 2^G <= B every sign vector is enumerated instead and
p = (sign vectors with |T*| >= |T|)/2^G, exact.  Swapping single queries when the queries are
clustered makes the null distribution too narrow (paraphrases of one question share their
difference), so that test rejects too often: validation/retrieval_validity.py measures both.

Speed: the signs come as random bytes, one byte per 8 clusters; T* is a sum over bytes of a
looked-up partial sum (a 256-entry table per byte), so B permutations over G clusters cost
B * G / 8 additions: 10,000 x 10,000 in about 0.3 s, 6x faster than a dense sign matrix.

The interval is the t interval above: in validation/retrieval_validity.py it covered 95% within
2.5 points from G = 30 on (beside the percentile and studentized cluster bootstraps, which it
matched or beat); below 30 clusters ``calibrated`` is false.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from embsql.core.arguments import check_level, check_permutations, check_replicates, check_seed
from embsql.core.labels import clean_labels, sort_key, text_key
from embsql.core.model_ranking import check_intervals, retrieval_family, retrieval_rows, simultaneous_intervals
from embsql.core.ranking import METRICS
from embsql.core.student_t import t_quantile
from embsql.errors import DesignError, InputError, fail

T = TypeVar("T")
CALIBRATED_FROM = 30          # clusters: the simulated coverage held (95 +/- 2.5%) from here on
BYTE_BLOCK = 2048             # permutations per block of random bytes
BLOCK_CELLS = 1 << 22         # at most this many looked-up partial sums per block (32 MB of float64)
EXACT_LIMIT = 20              # enumerate every sign vector up to 2^20 of them
EXACT_BLOCK = 1 << 14         # sign vectors per block of the enumeration
ADJUSTMENTS = ("holm", "bh", "bonferroni", None)
TIE_TOLERANCE = 1e-9          # relative: |T*| this close to |T| counts as a tie (summation order)
PAIR_COLUMNS = ("model_a", "model_b", "metric", "mean_a", "mean_b", "difference", "se", "ci_low", "ci_high",
                "p_value", "p_adjusted", "p_adjust", "queries", "groups", "permutations", "method", "level",
                "calibrated")


@dataclass(frozen=True)
class PairedDifference:
    mean_a: float
    mean_b: float
    difference: float
    se: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float
    queries: int
    groups: int
    permutations: int         # sign vectors used (2^G when exact)
    exact: bool
    calibrated: bool


def cluster_sums(values: np.ndarray, clusters: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(S_g, n_g): per-cluster sums of ``values`` and sizes (clusters are codes 0..groups-1)."""
    return (np.bincount(clusters, weights=values, minlength=groups),
            np.bincount(clusters, minlength=groups).astype(np.float64))


def t_interval(sums: np.ndarray, sizes: np.ndarray,
               level: float) -> tuple[float, float | None, float | None, float | None]:
    """(D, se, low, high): the cluster-robust t interval with G - 1 degrees of freedom."""
    groups, total = len(sums), sizes.sum()
    difference = float(sums.sum() / total)
    if groups < 2:
        return difference, None, None, None
    residual = sums - sizes * difference
    se = float(np.sqrt(groups / (groups - 1) * np.dot(residual, residual)) / total)
    half = t_quantile((1 + level) / 2, groups - 1) * se
    return difference, se, difference - half, difference + half


def bootstrap_intervals(sums: np.ndarray, sizes: np.ndarray, level: float, replicates: int, seed: int) -> dict:
    """Percentile and studentized cluster-bootstrap intervals of D (clusters resampled with
    replacement).  Not the default: kept for validation/retrieval_validity.py, which compares them."""
    groups = len(sums)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, groups, size=(replicates, groups))
    offsets = np.arange(replicates)[:, None] * groups
    weights = np.bincount((draws + offsets).ravel(), minlength=replicates * groups).reshape(replicates, groups)
    weights = weights.astype(np.float64)
    n_star = weights @ sizes
    d_star = (weights @ sums) / n_star
    spread = weights @ (sums * sums) - 2 * d_star * (weights @ (sums * sizes)) + d_star ** 2 * (weights @ (sizes * sizes))
    with np.errstate(invalid="ignore", divide="ignore"):
        se_star = np.sqrt(groups / (groups - 1) * np.maximum(spread, 0.0)) / n_star
    difference, se, _, _ = t_interval(sums, sizes, level)
    assert se is not None, "bootstrap intervals need two or more clusters"
    tail = (1 - level) / 2
    low, high = np.quantile(d_star, [tail, 1 - tail])
    usable = se_star > 0
    t_star = (d_star[usable] - difference) / se_star[usable]
    t_low, t_high = np.quantile(t_star, [tail, 1 - tail]) if usable.any() else (np.nan, np.nan)
    return {"percentile": (float(low), float(high)),
            "studentized": (difference - float(t_high) * se, difference - float(t_low) * se)}


def _byte_tables(sums: np.ndarray) -> np.ndarray:
    """table[j, v] = sum over the set bits k of byte value v of sums[8 j + k]."""
    padded = np.concatenate([sums, np.zeros(-len(sums) % 8)]).reshape(-1, 8)
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little").astype(np.float64)
    return padded @ bits.T                                  # (bytes, 256)


def sign_flip_statistics(sums: np.ndarray, permutations: int, seed: int) -> np.ndarray:
    """T* = sum_g s_g S_g for ``permutations`` random sign vectors (a seeded stream of bytes)."""
    tables = _byte_tables(sums)
    offsets = np.arange(tables.shape[0]) * 256
    flat, total = tables.ravel(), sums.sum()
    rng = np.random.default_rng(seed)
    out = np.empty(permutations)
    block = max(1, min(BYTE_BLOCK, BLOCK_CELLS // tables.shape[0]))     # bounds memory for many groups
    for low in range(0, permutations, block):
        count = min(block, permutations - low)
        draws = rng.integers(0, 256, size=(count, tables.shape[0]), dtype=np.uint8)
        chosen = flat[draws + offsets].sum(axis=1)         # the sum over clusters whose bit is set
        out[low:low + count] = 2 * chosen - total           # set bit: +S_g, clear bit: -S_g
    return out


def every_sign_statistic(sums: np.ndarray) -> np.ndarray:
    """T* for all 2^G sign vectors (G <= EXACT_LIMIT)."""
    total = 2 ** len(sums)
    out = np.empty(total)
    for low in range(0, total, EXACT_BLOCK):                 # blocks bound memory (2^20 x 20 at most)
        index = np.arange(low, min(total, low + EXACT_BLOCK))
        out[low:low + len(index)] = (1 - 2 * ((index[:, None] >> np.arange(len(sums))) & 1)) @ sums
    return out


def sign_flip_p(sums: np.ndarray, permutations: int, seed: int) -> tuple[float, int, bool]:
    """(p, sign vectors used, exact) for H0: the two models are exchangeable within clusters."""
    observed = abs(float(sums.sum()))
    tolerance = TIE_TOLERANCE * max(float(np.abs(sums).sum()), 1e-300)
    if len(sums) <= EXACT_LIMIT and 2 ** len(sums) <= permutations:
        null = every_sign_statistic(sums)
        return float(np.count_nonzero(np.abs(null) >= observed - tolerance) / len(null)), len(null), True
    null = sign_flip_statistics(sums, permutations, seed)
    b = int(np.count_nonzero(np.abs(null) >= observed - tolerance))
    return (b + 1) / (permutations + 1), permutations, False


def paired_difference(a: np.ndarray, b: np.ndarray, clusters: np.ndarray | None = None, *,
                      permutations: int = 10_000, seed: int = 42, level: float = 0.95) -> PairedDifference:
    """Compare two models' per-query scores ``a`` and ``b`` (same queries, same order).

    ``clusters``: integer codes 0..G-1 in the resampling order (None: each query its own)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if len(a) == 0:
        raise DesignError("no queries to compare")
    clusters = np.arange(len(a)) if clusters is None else np.asarray(clusters, dtype=np.int64)
    groups = int(clusters.max()) + 1
    sums, sizes = cluster_sums(a - b, clusters, groups)
    difference, se, low, high = t_interval(sums, sizes, level)
    p, used, exact = sign_flip_p(sums, permutations, seed)
    return PairedDifference(float(a.mean()), float(b.mean()), difference, se, low, high, p, len(a), groups, used,
                            exact, se is not None and groups >= CALIBRATED_FROM)


def adjust(p_values: Sequence[float], method: str | None = "holm") -> list[float]:
    """p-values adjusted across the family: Holm (step-down), Benjamini-Hochberg, Bonferroni or None."""
    if method not in ADJUSTMENTS:
        fail("argument.p_adjust", name="p_adjust", rule="one of 'holm', 'bh', 'bonferroni' or None", value=repr(method))
    p = np.asarray(p_values, dtype=np.float64)
    m = len(p)
    if method is None or m == 0:
        return p.tolist()
    if method == "bonferroni":
        return np.minimum(1.0, m * p).tolist()
    order = np.argsort(p, kind="stable")
    out = np.empty(m)
    if method == "holm":
        out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    else:
        scaled = m * p[order] / np.arange(1, m + 1)
        out[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return out.tolist()


def score_matrix(models: Iterable[object], qids: Iterable[object], values: Iterable[float],
                 groups: Iterable[object] | None = None, *, metric: str = "ndcg@10",
                 what: str = "evaluation") -> tuple[list, np.ndarray, np.ndarray | None, int]:
    """Long rows (model, qid, value[, group]) of one metric as (model names in display order
    (sort_key), a queries x models matrix with the queries in text order, their cluster codes
    (None: no groups), the number of clusters).  Each model must score the same queries once each;
    ``groups`` gives each row its query's paraphrase group (one group per qid)."""
    models = clean_labels(list(models), "model", "model")
    qids = clean_labels(list(qids), "qid", "qid")
    values = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        i = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InputError(f"{what}: value of {metric} for qid {qids[i]!r} (model {models[i]!r}) is {values[i]}; "
                         "every value must be a finite number")
    per_model: dict[object, dict] = {}
    for m, q, v in zip(models.tolist(), qids.tolist(), values.tolist()):
        scores = per_model.setdefault(m, {})
        if text_key(q) in scores:
            raise InputError(f"{what}: model {m!r} has {metric} for qid {q!r} more than once; one value per "
                             "model and query")
        scores[text_key(q)] = v
    names = sorted(per_model, key=sort_key)
    if len(names) < 2:
        raise DesignError(f"{what}: {metric} has only {len(names)} model ({names[0]!r}); a comparison needs two "
                          "or more" if names else f"{what}: no rows for metric {metric!r}")
    order = sorted(per_model[names[0]])
    for m in names[1:]:
        missing = set(order) ^ set(per_model[m])
        if missing:
            q = sorted(missing)[0]
            has, lacks = (names[0], m) if q in per_model[names[0]] else (m, names[0])
            raise InputError(f"{what}: model {lacks!r} has no {metric} for qid {q!r}, which model {has!r} has "
                             f"({len(missing)} such queries); models are compared on the same queries")
    clusters, group_count = _cluster_codes(qids, groups, order, what)
    matrix = np.array([[per_model[m][q] for m in names] for q in order], dtype=np.float64).reshape(len(order),
                                                                                                  len(names))
    return names, matrix, clusters, group_count


def compare_rows(models: Iterable[object], qids: Iterable[object], values: Iterable[float],
                 groups: Iterable[object] | None = None, *, metric: str = "ndcg@10", permutations: int = 10_000,
                 seed: int = 42, level: float = 0.95, p_adjust: str | None = "holm",
                 what: str = "evaluation", intervals: str = "marginal", replicates: int = 2000) -> list[dict]:
    """Every pair of models from long rows (model, qid, value[, group]) of one metric: PAIR_COLUMNS.

    Models are paired in display order (sort_key); the clusters are coded in text order, so a seed
    gives the same p-value from SQL and Python (score_matrix).  With ``intervals='simultaneous'``
    every interval is D -/+ c se, c the single-step max-|t| critical value over all pairs from
    ``replicates`` joint cluster bootstrap resamples (embsql.core.model_ranking.retrieval_family);
    every row's ``interval`` says which kind it is; the p-values stay the sign-flip tests (of
    ``permutations`` sign vectors), adjusted by p_adjust."""
    check_permutations(permutations)
    replicates = check_replicates(replicates)
    check_seed(seed)
    level = check_level(level)
    intervals = check_intervals(intervals)
    adjust([], p_adjust)
    names, matrix, clusters, group_count = score_matrix(models, qids, values, groups, metric=metric, what=what)
    rows: list[dict[str, Any]] = []
    for left, right in itertools.combinations(range(len(names)), 2):
        result = paired_difference(matrix[:, left], matrix[:, right], clusters, permutations=permutations, seed=seed,
                                   level=level)
        method = ("exact " if result.exact else "") + ("group sign-flip" if groups is not None else "query sign-flip")
        rows.append({"model_a": names[left], "model_b": names[right], "metric": metric, "mean_a": result.mean_a,
                     "mean_b": result.mean_b, "difference": result.difference, "se": result.se,
                     "ci_low": result.ci_low, "ci_high": result.ci_high, "p_value": result.p_value,
                     "p_adjust": p_adjust, "queries": result.queries, "groups": group_count,
                     "permutations": result.permutations, "method": method, "level": level,
                     "calibrated": result.calibrated, "interval": intervals})
    for row, adjusted in zip(rows, adjust([r["p_value"] for r in rows], p_adjust)):
        row["p_adjusted"] = adjusted
    if intervals == "simultaneous":
        codes = np.arange(len(matrix)) if clusters is None else clusters
        _, fam = retrieval_family(matrix, codes, replicates=replicates, seed=seed)
        low, high = simultaneous_intervals(fam, level)
        for p, row in enumerate(rows):
            row.update(ci_low=float(low[p]), ci_high=float(high[p]))
    return rows


def metric_rows(models: Sequence[object], qids: Sequence[object], metrics: Sequence[object], values: Sequence[float],
                groups: Sequence[object] | None = None, *, metric: str = "ndcg@10",
                what: str = "evaluation") -> tuple[list, list, list, list | None]:
    """(models, qids, values, groups) of the rows of a long evaluation table whose ``metrics`` entry
    is ``metric`` (metric.unknown for a name that is not a string, metric.absent for no rows)."""
    if not isinstance(metric, str) or not metric:
        fail("metric.unknown", metric=repr(metric), names=", ".join(m + "@k" for m in METRICS))
    keep = [i for i, m in enumerate(metrics) if m == metric]
    if not keep:
        shown = ", ".join(repr(m) for m in sorted({str(m) for m in metrics})) or "(none: the table is empty)"
        fail("metric.absent", what=what, metric=repr(metric), shown=shown)

    def pick(column: Sequence[T]) -> list[T]:
        return [column[i] for i in keep]

    return pick(models), pick(qids), pick(values), None if groups is None else pick(groups)


def compare_metric(models: Sequence[object], qids: Sequence[object], metrics: Sequence[object],
                   values: Sequence[float], groups: Sequence[object] | None = None, *, metric: str = "ndcg@10",
                   what: str = "evaluation", **options: Any) -> list[dict]:
    """compare_rows on the rows of a long evaluation table whose ``metrics`` entry is ``metric``."""
    picked = metric_rows(models, qids, metrics, values, groups, metric=metric, what=what)
    return compare_rows(*picked, metric=metric, what=what, **options)


def rank_metric(models: Sequence[object], qids: Sequence[object], metrics: Sequence[object], values: Sequence[float],
                groups: Sequence[object] | None = None, *, metric: str = "ndcg@10", replicates: int = 2000,
                seed: int = 42, level: float = 0.95, what: str = "evaluation") -> list[dict]:
    """embsql.core.model_ranking.retrieval_rows on the rows of one metric of a long evaluation table:
    the models' rank confidence sets, the queries clustered by paraphrase group (each query its own
    cluster without groups)."""
    picked = metric_rows(models, qids, metrics, values, groups, metric=metric, what=what)
    names, matrix, clusters, _ = score_matrix(*picked, metric=metric, what=what)
    codes = np.arange(len(matrix)) if clusters is None else clusters
    return retrieval_rows(names, matrix, codes, metric, replicates=replicates, seed=seed, level=level)


def _cluster_codes(qids: np.ndarray, groups: Iterable[object] | None, order: list[str],
                   what: str) -> tuple[np.ndarray | None, int]:
    """Cluster codes of the queries in ``order`` (text of qids), or None with no groups."""
    if groups is None:
        return None, len(order)
    groups = clean_labels(list(groups), "group", "group")
    group_of: dict[str, object] = {}
    for q, g in zip(qids.tolist(), groups.tolist()):
        if group_of.setdefault(text_key(q), g) != g:
            raise InputError(f"{what}: qid {q!r} is in group {group_of[text_key(q)]!r} and in group {g!r}; each "
                             "query belongs to one paraphrase group")
    absent = [q for q in order if q not in group_of]
    if absent:
        raise InputError(f"{what}: qid {absent[0]!r} has no paraphrase group ({len(absent)} such queries)")
    names = sorted({text_key(group_of[q]) for q in order})
    lookup = {g: k for k, g in enumerate(names)}
    return np.array([lookup[text_key(group_of[q])] for q in order], dtype=np.int64), len(names)
