"""Which of K models is best, and how sure: simultaneous confidence sets for the models' ranks, and
simultaneous intervals for all their pairwise differences.

The method is that of Mogstad, Romano, Shaikh and Wilhelm, "Inference for Ranks" (Review of
Economic Studies, 2024; the R package csranks), fed with embsql's joint resampling of the models
instead of a normal approximation with an independence assumption.

Notation.  K models with estimates theta_1..theta_K (higher is better: rank 1 is the largest).
For every pair j < k: the difference d_jk = theta_j - theta_k, its jackknife SE se_jk (the same
group left out of both models), and B joint resamples of the groups (the same resample for all K
models) giving t*_jk = (d*_jk - d_jk) / se*_jk, studentised by each resample's own SE.  For the
ordered pair (k, j), t*_kj = -t*_jk.

Simultaneous intervals (single step).  c = the ``level`` quantile of max over pairs of |t*_jk|;
the interval of d_jk is d_jk -/+ c se_jk.  Together they hold with probability ``level``.

Rank sets (with the step-down).  The hypotheses are the ordered pairs (j, k), j != k,
"theta_j <= theta_k"; (j, k) is rejected ("j is better than k") when d_jk - c(I) se_jk > 0, where
c(I) is the ``level`` quantile of max over the ordered pairs (a, b) in I of t*_ab and I holds the
pairs not yet rejected.  It starts with every ordered pair (then c(I) is the c above); after each
round the rejected pairs leave I and c(I) is computed again, until a round rejects nothing new
(Romano and Wolf's step-down; MRSW's Algorithm 3.1).  Then

    rank_low_j  = 1 + #{k: k is better than j}
    rank_high_j = K - #{k: j is better than k}

and with probability ``level`` no pair is ordered falsely (j shown better than k while theta_j <=
theta_k), so every model's set holds its true rank, and for models tied in truth every rank of
their tie: [1 + #{k: theta_k > theta_j}, #{k: theta_k >= theta_j}], for all K together.  The
confidence set for the best is {j: rank_low_j = 1}: over all ordered pairs the one-sided and the
two-sided families coincide, so this is csranks' cstaubest with tau = 1.

Resamples where some pair's t* is undefined are dropped, up to resampling.MAX_DROPPED_SHARE.  A pair
whose SE is 0 (the two models agree on every group: a model against itself) has t* = 0 in every
resample: it is ordered only if its difference is not 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from embsql.core import resampling
from embsql.core.arguments import check_level, check_replicates, check_seed
from embsql.core.student_t import t_quantile
from embsql.core.sums import GroupSums
from embsql.errors import InputError, fail

RANK_COLUMNS = ("statistic", "estimate", "ci_low", "ci_high", "rank", "rank_low", "rank_high", "top", "level",
                "calibrated")
# the rows of RANK_COLUMNS as the SQL kernels (udfs/) return them, the model as text first
RANK_SQL_TYPE = ("STRUCT(model VARCHAR, statistic VARCHAR, estimate DOUBLE, ci_low DOUBLE, ci_high DOUBLE, "
                 "rank BIGINT, rank_low BIGINT, rank_high BIGINT, top BOOLEAN, level DOUBLE, calibrated BOOLEAN)[]")
INTERVALS = ("marginal", "simultaneous")
RANK_CALIBRATED_STATS = ("r2",)   # with retrieval metrics: measured by validation/rank_sets.py (validation/README.md)
RANK_CALIBRATED_GROUPS = 30
# From how many groups (clusters, or units) on a family's rank sets are calibrated: the smallest
# simulated G (30 or 100) from which the family-wise coverage held 95 +- 2.5% (or above) in every
# cell of validation/rank_sets.py (R², retrieval) or validation/rank_sets_families.py
# (classification; similarity, whose clusters are the items of the pairs; CKA, whose units are the
# jackknife's groups or items); a statistic absent here was not simulated and is never calibrated.
RANK_CALIBRATED_FROM = {"r2": RANK_CALIBRATED_GROUPS, "retrieval": RANK_CALIBRATED_GROUPS,
                        "accuracy": 30, "macro_f1": 100, "spearman": 30, "pearson": 30, "cka": 30}


@dataclass(frozen=True)
class PairFamily:
    """Every pair j < k of K models (``pairs``, in combinations order): the difference d_jk, its SE,
    and the studentised resamples t* (resamples x pairs, the undefined resamples already dropped)."""

    pairs: tuple[tuple[int, int], ...]
    difference: np.ndarray
    se: np.ndarray
    t_star: np.ndarray
    dropped: int = 0


@dataclass(frozen=True)
class RankSets:
    rank: np.ndarray          # 1 + the number of models with a strictly larger estimate
    rank_low: np.ndarray
    rank_high: np.ndarray
    top: np.ndarray           # in the confidence set for the best
    better: np.ndarray        # K x K booleans: better[j, k] when j was shown better than k


def pairs_of(k: int) -> tuple[tuple[int, int], ...]:
    return tuple(combinations(range(k), 2))


def family(difference: np.ndarray, se: np.ndarray, diff_star: np.ndarray, se_star: np.ndarray) -> PairFamily:
    """A PairFamily from the resampled differences and their SEs (resamples x pairs).  A resample
    where some pair is undefined (NaN, or an SE of 0 where the pair's own SE is not 0) is dropped."""
    difference, se = np.asarray(difference, dtype=float), np.asarray(se, dtype=float)
    k = int(round((1 + np.sqrt(1 + 8 * len(difference))) / 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        t_star = (diff_star - difference) / se_star
    t_star[:, se == 0] = 0.0
    ok = np.all(np.isfinite(t_star), axis=1)
    dropped = resampling.check_dropped(len(t_star) - int(ok.sum()), len(t_star))
    return PairFamily(pairs_of(k), difference, se, t_star[ok], dropped)


def _quantile(values: np.ndarray, level: float) -> float:
    return float(np.quantile(values, level))


def simultaneous_critical(fam: PairFamily, level: float) -> float:
    """c: the ``level`` quantile of max over the pairs of |t*|."""
    return _quantile(np.abs(fam.t_star).max(axis=1), level)


def simultaneous_intervals(fam: PairFamily, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per pair: d -/+ c se, holding together with probability ``level`` (the single
    step of the module docstring: c from every pair at once, no step-down)."""
    c = simultaneous_critical(fam, level)
    return fam.difference - c * fam.se, fam.difference + c * fam.se


def rank_sets(estimates: np.ndarray, fam: PairFamily, level: float, stepdown: bool = True) -> RankSets:
    """The simultaneous rank confidence sets and the confidence set for the best (module docstring)."""
    estimates = np.asarray(estimates, dtype=float)
    k = len(estimates)
    # ordered hypotheses as (pair column, sign): sign +1 is "j better than k", -1 "k better than j"
    t_signed = np.concatenate([fam.t_star, -fam.t_star], axis=1)          # resamples x 2P
    d_signed = np.concatenate([fam.difference, -fam.difference])
    se_signed = np.concatenate([fam.se, fam.se])
    active = np.ones(len(d_signed), dtype=bool)
    rejected = np.zeros(len(d_signed), dtype=bool)
    while active.any():
        c = _quantile(t_signed[:, active].max(axis=1), level)
        new = active & (d_signed - c * se_signed > 0)
        if not new.any():
            break
        rejected |= new
        active &= ~new
        if not stepdown:
            break
    better = np.zeros((k, k), dtype=bool)
    for p, (a, b) in enumerate(fam.pairs):
        better[a, b] = rejected[p]
        better[b, a] = rejected[len(fam.pairs) + p]
    rank_low = 1 + better.sum(axis=0)
    rank_high = k - better.sum(axis=1)
    rank = 1 + (estimates[None, :] > estimates[:, None]).sum(axis=1)
    return RankSets(rank, rank_low, rank_high, rank_low == 1, better)


# ----------------------------------------------------------------------------------------------
# structure: K models' group sums, paired by group label

def joint_strata(models: list[GroupSums], sizes: str) -> np.ndarray | None:
    """resampling.size_strata for K models paired by group: a group's size is the tuple of its K sizes."""
    key = np.stack([np.asarray(s.counts, dtype=np.int64) for s in models], axis=1)
    codes = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    return resampling.size_strata(codes, sizes)


def structure_family(models: list[GroupSums], stat: str, *, replicates: int, seed: int,
                     sizes: str = "auto") -> tuple[np.ndarray, PairFamily, str]:
    """(estimates, the pair family, the sizes rule) of K models whose GroupSums hold the same groups
    in the same (canonical) order: jackknife SEs of the differences, and studentised differences
    from the same resamples of groups for all K models (the paired bootstrap of compare, jointly)."""
    labels = list(models[0].labels)
    for m, s in enumerate(models[1:], start=1):
        if list(s.labels) != labels:
            differ = sorted(set(map(str, labels)) ^ set(map(str, s.labels)))
            example = f"group {differ[0]!r} is in one and not the other" if differ else "the groups are in another order"
            fail("model.unpaired_groups", models=f"0 and {m} (in the order given)", example=example)
    strata = joint_strata(models, sizes)
    jack = [resampling.jackknife_replicates(s, stat, "paired jackknife") for s in models]
    estimates = np.array([e for e, _ in jack])
    pairs = pairs_of(len(models))
    difference = np.array([estimates[a] - estimates[b] for a, b in pairs])
    se = np.array([resampling.jackknife_se(jack[a][1] - jack[b][1], strata) for a, b in pairs])
    g = len(labels)
    weights = resampling.resample_weights(g, replicates, seed, strata)
    diff_star = np.empty((replicates, len(pairs)))
    se_star = np.empty((replicates, len(pairs)))
    step = max(1, min(resampling.BOOTSTRAP_BLOCK, resampling.INNER_CELLS // g))
    with np.errstate(divide="ignore", invalid="ignore"):
        for low in range(0, replicates, step):
            block = weights[low:low + step]
            drawn = [resampling.resample_jackknife(s, stat, block) for s in models]
            for p, (a, b) in enumerate(pairs):
                diff_star[low:low + step, p] = drawn[a][0] - drawn[b][0]
                se_star[low:low + step, p] = resampling.inner_se(drawn[a][1] - drawn[b][1], block, strata)
    return estimates, family(difference, se, diff_star, se_star), resampling.sizes_word(strata)


def structure_rows(names: list, models: list[GroupSums], stat: str, *, replicates: int = 2000, seed: int = 42,
                   level: float = 0.95, sizes: str = "auto",
                   own: list[tuple[float | None, float | None]] | None = None) -> list[dict]:
    """One row of RANK_COLUMNS per model (in the order given); ci_low/ci_high are each model's own
    calibrated bootstrap interval (resampling.bootstrap), or ``own`` where the caller already has
    them from the same replicates, seed, level and sizes (the report's bootstrap section)."""
    replicates, seed, level = check_replicates(replicates), check_seed(seed), check_level(level)
    if len(models) < 2:
        raise InputError("a ranking needs two or more models")
    estimates, fam, _ = structure_family(models, stat, replicates=replicates, seed=seed, sizes=sizes)
    sets = rank_sets(estimates, fam, level)
    groups = len(models[0].counts)
    calibrated = stat in RANK_CALIBRATED_STATS and groups >= RANK_CALIBRATED_GROUPS
    rows = []
    for j, (name, s) in enumerate(zip(names, models)):
        if own is None:
            interval = resampling.bootstrap(s, stat, replicates=replicates, seed=seed, level=level, sizes=sizes)
            low, high = interval.ci_low, interval.ci_high
        else:
            low, high = own[j]
        rows.append(rank_row(name, stat, float(estimates[j]), low, high, sets, j, level, calibrated))
    return rows


def rank_row(name: object, stat: str, estimate: float, ci_low: float | None, ci_high: float | None,
             sets: RankSets, j: int, level: float, calibrated: bool) -> dict:
    return {"model": name, "statistic": stat, "estimate": estimate, "ci_low": ci_low, "ci_high": ci_high,
            "rank": int(sets.rank[j]), "rank_low": int(sets.rank_low[j]), "rank_high": int(sets.rank_high[j]),
            "top": bool(sets.top[j]), "level": level, "calibrated": calibrated}


# ----------------------------------------------------------------------------------------------
# retrieval: per-query scores of K models, queries clustered by paraphrase group

def cluster_robust(sums: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    """(mean, CR1 SE) of a per-query figure from its per-cluster sums (the SE of
    embsql.core.retrieval_comparison's t interval)."""
    groups, total = len(sums), sizes.sum()
    mean = float(sums.sum() / total)
    residual = sums - sizes * mean
    return mean, float(np.sqrt(groups / (groups - 1) * np.dot(residual, residual)) / total)


def retrieval_family(scores: np.ndarray, clusters: np.ndarray, *, replicates: int,
                     seed: int) -> tuple[np.ndarray, PairFamily]:
    """(per-model means, the pair family) of a queries x K matrix of per-query scores, the queries
    in clusters coded 0..G-1: CR1 SEs of the differences of means, and studentised differences from
    the same cluster bootstrap resamples for all K models (each resample's own CR1 SE)."""
    scores = np.asarray(scores, dtype=float)
    groups = int(clusters.max()) + 1
    if groups < 2:
        raise InputError("a ranking of retrieval models needs two or more query clusters")
    sizes = np.bincount(clusters, minlength=groups).astype(float)
    sums = np.stack([np.bincount(clusters, weights=scores[:, m], minlength=groups)
                     for m in range(scores.shape[1])], axis=1)                      # G x K
    means = sums.sum(axis=0) / sizes.sum()
    pairs = pairs_of(scores.shape[1])
    weights = resampling.bootstrap_weights(groups, replicates, seed)
    n_star = weights @ sizes
    g_star = weights.sum(axis=1)
    difference, se = np.empty(len(pairs)), np.empty(len(pairs))
    diff_star, se_star = np.empty((replicates, len(pairs))), np.empty((replicates, len(pairs)))
    for p, (a, b) in enumerate(pairs):
        s = sums[:, a] - sums[:, b]
        difference[p], se[p] = cluster_robust(s, sizes)
        d = (weights @ s) / n_star
        spread = weights @ (s * s) - 2 * d * (weights @ (s * sizes)) + d ** 2 * (weights @ (sizes * sizes))
        diff_star[:, p] = d
        with np.errstate(invalid="ignore", divide="ignore"):
            se_star[:, p] = np.sqrt(g_star / (g_star - 1) * np.maximum(spread, 0.0)) / n_star
    return means, family(difference, se, diff_star, se_star)


def retrieval_rows(names: list, scores: np.ndarray, clusters: np.ndarray, metric: str, *, replicates: int = 2000,
                   seed: int = 42, level: float = 0.95,
                   calibrated_from: int | None = RANK_CALIBRATED_FROM["retrieval"]) -> list[dict]:
    """One row of RANK_COLUMNS per model; ci_low/ci_high: each model's mean with its CR1 t interval.
    Any per-unit score averaged over clustered units ranks this way (k-NN accuracy: each item's 0 or
    1); calibrated is true from ``calibrated_from`` clusters on (RANK_CALIBRATED_FROM of the
    figure; None: its rank sets' coverage was not simulated, calibrated false whatever the clusters)."""
    replicates, seed, level = check_replicates(replicates), check_seed(seed), check_level(level)
    if scores.shape[1] < 2:
        raise InputError(f"a ranking needs two or more models; {metric} has {scores.shape[1]}")
    means, fam = retrieval_family(scores, clusters, replicates=replicates, seed=seed)
    sets = rank_sets(means, fam, level)
    groups = int(clusters.max()) + 1
    sizes = np.bincount(clusters, minlength=groups).astype(float)
    half_q = t_quantile((1 + level) / 2, groups - 1)
    rows = []
    for j, name in enumerate(names):
        mean, se = cluster_robust(np.bincount(clusters, weights=scores[:, j], minlength=groups), sizes)
        rows.append(rank_row(name, metric, mean, mean - half_q * se, mean + half_q * se, sets, j, level,
                             calibrated_from is not None and groups >= calibrated_from))
    return rows


# ----------------------------------------------------------------------------------------------
# the joint normal approximation: similarity (embsql.core.similarity.similarity_rows), CKA and
# macro-F1 (delete-one jackknife replicates on the same units for every model)

def normal_family(estimates: np.ndarray, covariance: np.ndarray, *, replicates: int, seed: int,
                  se: np.ndarray | None = None) -> PairFamily:
    """The pair family of K estimates from their joint normal approximation, as csranks draws it:
    x* ~ N(0, covariance) (negative eigenvalues of the estimated covariance set to 0), the same
    draw for every pair, and t*_jk = (x*_j - x*_k) / sd_jk with sd_jk^2 = V_jj + V_kk - 2 V_jk.
    The pairs' SEs are ``se`` where the caller has its own (the compare face's), else sd_jk."""
    covariance = np.asarray(covariance, dtype=float)
    values, vectors = np.linalg.eigh((covariance + covariance.T) / 2)
    draws = np.random.default_rng(seed).standard_normal((replicates, len(covariance))) @ \
        (vectors * np.sqrt(np.clip(values, 0.0, None))).T
    pairs = pairs_of(len(covariance))
    sd = np.sqrt(np.clip([covariance[a, a] + covariance[b, b] - 2 * covariance[a, b] for a, b in pairs], 0.0, None))
    se = sd if se is None else np.asarray(se, dtype=float)
    difference = np.array([estimates[a] - estimates[b] for a, b in pairs])
    t_star = np.zeros((replicates, len(pairs)))
    for p, (a, b) in enumerate(pairs):
        if sd[p] > 0 and se[p] > 0:
            t_star[:, p] = (draws[:, a] - draws[:, b]) / sd[p]
    return PairFamily(pairs, difference, se, t_star)


def jackknife_covariance(replicates: np.ndarray) -> np.ndarray:
    """(G - 1)/G sum_g (theta_-g - mean)(theta_-g - mean)^T of delete-one replicates (units x K):
    its quadratic form in (e_j - e_k) is the paired jackknife variance of theta_j - theta_k."""
    replicates = np.asarray(replicates, dtype=float)
    g = len(replicates)
    centred = replicates - replicates.mean(axis=0)
    return (g - 1) / g * centred.T @ centred


def normal_rows(names: list, estimates: np.ndarray, fam: PairFamily, statistic: str,
                intervals: list[tuple[float | None, float | None]], *, level: float,
                calibrated: bool = False) -> list[dict]:
    """One row of RANK_COLUMNS per model from a normal family; ``intervals``: each model's own
    interval; ``calibrated`` where the coverage of these sets was simulated (RANK_CALIBRATED_FROM)."""
    sets = rank_sets(estimates, fam, level)
    return [rank_row(name, statistic, float(estimates[j]), low, high, sets, j, level, calibrated)
            for j, (name, (low, high)) in enumerate(zip(names, intervals))]


def jackknife_rows(names: list, values: list[np.ndarray], statistic: str, *, level: float = 0.95,
                   replicates: int = 2000, seed: int = 42) -> list[dict]:
    """Rank K models by a figure given with its delete-one jackknife replicates on the same units
    for every model (values[j]: index 0 the full sample, then the replicates; CKA with a reference
    model, macro-F1): the normal family of the jackknife covariance (the pairs' SEs are the paired
    jackknife's); ci_low/ci_high: the figure -/+ t_{G-1} its own jackknife SE; calibrated from
    RANK_CALIBRATED_FROM[statistic] units on."""
    replicates, seed, level = check_replicates(replicates), check_seed(seed), check_level(level)
    if len(values) < 2:
        raise InputError(f"a ranking needs two or more models; there are {len(values)}")
    table = np.stack([np.asarray(v, dtype=float) for v in values], axis=1)
    estimates, deleted = table[0], table[1:]
    if not np.all(np.isfinite(deleted)):
        bad = int((~np.all(np.isfinite(deleted), axis=1)).sum())
        fail("design.undefined_replicates", bad=bad, total=len(deleted), what=f"{statistic} jackknife")
    covariance = jackknife_covariance(deleted)
    fam = normal_family(estimates, covariance, replicates=replicates, seed=seed)
    half = t_quantile((1 + level) / 2, len(deleted) - 1) * np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    return normal_rows(names, estimates, fam, statistic, list(zip((estimates - half).tolist(),
                                                                  (estimates + half).tolist())), level=level,
                       calibrated=RANK_CALIBRATED_FROM.get(statistic) is not None and
                       len(deleted) >= RANK_CALIBRATED_FROM[statistic])


def check_intervals(value: object) -> str:
    """The ``intervals=`` option of the compare faces: 'marginal' (each pair's interval alone) or
    'simultaneous' (all pairs together, simultaneous_intervals)."""
    if not isinstance(value, str) or value not in INTERVALS:
        fail("argument.intervals", name="intervals", rule="'marginal' or 'simultaneous'", value=repr(value))
    return value
