"""Cluster jackknife and cluster bootstrap from sufficient statistics (SPEC S17, S18), and the
paired comparison of two models on the same items.

A replicate reweights whole groups: w_g = 0 or 1 for the jackknife (leave one group out), w_g =
the number of times group g was drawn for the bootstrap.  Every figure of the decomposition is a
function of five weighted sums over groups,
    n = sum w_g n_g,  G = sum w_g,  SS_W = sum w_g within_g,  Q = sum w_g n_g^2,
    SS_B = sum w_g n_g ||m_g - c||^2 - n ||a / n||^2,  a = sum w_g n_g (m_g - c),
with c the full-sample mean: centred there, no replicate's SS_B or SS_W is a difference of nearly
equal numbers (as n - ||s||^2 / n would be), whatever the spread.  A replicate costs O(d)
(jackknife, in closed form) or one row of a matrix product (bootstrap): never a pass over the items.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import precision
from .decomposition import between_ss
from .errors import DesignError, InputError
from .sufficient import GroupSums

STATISTICS = ("r2", "f", "v", "w_bar", "icc", "r2_adj")
BOOTSTRAP_BLOCK = 1024  # replicates per matrix product: bounds memory (see the OpenBLAS note); smaller
                        # blocks made OpenBLAS several times slower on a loaded machine


@dataclass(frozen=True)
class Totals:
    """The weighted sums, one entry per replicate (or a single one for the full sample)."""

    n: np.ndarray
    groups: np.ndarray
    ss_w: np.ndarray        # sum_g w_g within_g
    ss_b: np.ndarray        # between-group sum of squares about the replicate's own mean
    sum_n2: np.ndarray      # sum_g w_g n_g^2


def statistic(name: str, t: Totals) -> np.ndarray:
    """One figure of the decomposition from the weighted sums; NaN for a replicate whose spread
    float64 cannot resolve (the full sample is refused earlier, by full_totals)."""
    if name not in STATISTICS:
        raise InputError(f"stat must be one of {', '.join(STATISTICS)}, not {name!r}")
    n, g = t.n.astype(float), t.groups.astype(float)
    ss_w, ss_b = t.ss_w, t.ss_b
    ss_t = ss_w + ss_b
    with np.errstate(divide="ignore", invalid="ignore"):
        value = _figure(name, n, g, ss_t, ss_w, ss_b, t.sum_n2)
    return np.where(precision.resolved(ss_t, ss_w, n), value, np.nan)


def _figure(name, n, g, ss_t, ss_w, ss_b, sum_n2):
    if name == "r2":
        return ss_b / ss_t
    if name == "v":
        return ss_t / n
    if name == "w_bar":
        return ss_w / n
    if name == "r2_adj":  # 1 - MS_W / MS_T: about 0 when the groups have no structure
        return 1.0 - (ss_w / (n - g)) / (ss_t / (n - 1))
    ms_b, ms_w = ss_b / (g - 1), ss_w / (n - g)
    if name == "f":
        return ms_b / ms_w
    n0 = (n - sum_n2 / n) / (g - 1)
    return (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)


def _parts(sums: GroupSums):
    """Per group: n_g, within_g, a_g = n_g (m_g - c) and n_g ||m_g - c||^2, c the full-sample mean."""
    counts = sums.counts.astype(float)
    centre = sums.sums.sum(axis=0) / counts.sum()
    offsets = (sums.sums / counts[:, None] - centre) * counts[:, None]
    return counts, sums.within_ss(), offsets, between_ss(sums, centre)


def _between(between: np.ndarray, offset: np.ndarray, n: np.ndarray) -> np.ndarray:
    """A replicate's SS_B about its own mean, from its sums about c (never below 0 by rounding)."""
    return np.maximum(0.0, between - np.einsum("rk,rk->r", offset, offset) / n)


def full_totals(sums: GroupSums) -> Totals:
    """The full sample's sums; raises DesignError when its spread is below float64 resolution."""
    counts, within, offsets, between = _parts(sums)
    n = np.array([counts.sum()])
    ss_w = np.array([within.sum()])
    ss_b = _between(np.array([between.sum()]), offsets.sum(axis=0)[None, :], n)
    # with n = G there is no within-group spread to resolve (SS_W = 0 by design): only SS_T is checked,
    # and the replicates' figures that need SS_W come out undefined and say so
    ss_t = float(ss_w[0] + ss_b[0])
    precision.check_spread(ss_t, float(ss_w[0]) if n[0] > len(counts) else ss_t, int(n[0]))
    return Totals(n, np.array([len(counts)]), ss_w, ss_b, np.array([counts @ counts]))


def jackknife_totals(sums: GroupSums) -> Totals:
    """Leave-one-group-out sums in closed form (the offsets' total less group g's)."""
    counts, within, offsets, between = _parts(sums)
    n = counts.sum() - counts
    return Totals(n, np.full(len(counts), len(counts) - 1), within.sum() - within,
                  _between(between.sum() - between, offsets.sum(axis=0) - offsets, n),
                  counts @ counts - counts * counts)


@lru_cache(maxsize=2)
def bootstrap_weights(groups: int, replicates: int, seed: int) -> np.ndarray:
    """Multinomial draw counts, replicates x groups; the same seed gives the same draws.

    Cached (read-only): a report draws the same resamples for every model and every pair of
    models, and at 2000 x 5000 one draw costs seconds."""
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(groups, np.full(groups, 1.0 / groups), size=replicates).astype(float)
    weights.flags.writeable = False
    return weights


def weighted_totals(sums: GroupSums, weights: np.ndarray) -> Totals:
    counts, within, offsets, between = _parts(sums)
    n = weights @ counts
    ss_b = np.empty(len(weights))
    for low in range(0, len(weights), BOOTSTRAP_BLOCK):
        rows = slice(low, low + BOOTSTRAP_BLOCK)
        ss_b[rows] = _between(weights[rows] @ between, weights[rows] @ offsets, n[rows])
    return Totals(n, weights.sum(axis=1), weights @ within, ss_b, weights @ (counts * counts))


@dataclass(frozen=True)
class Interval:
    estimate: float
    se: float
    ci_low: float | None = None
    ci_high: float | None = None


def _finite(values: np.ndarray, what: str) -> np.ndarray:
    if not np.all(np.isfinite(values)):
        raise DesignError(f"some {what} replicates leave the statistic undefined "
                          "(too few groups, or a replicate with no within-group variation)")
    return values


def jackknife_se(replicates: np.ndarray) -> float:
    """sqrt((G - 1)/G * sum_g (theta_(-g) - mean)^2)."""
    g = len(replicates)
    return float(np.sqrt((g - 1) / g * np.sum((replicates - replicates.mean()) ** 2)))


def jackknife(sums: GroupSums, stat: str) -> Interval:
    if len(sums.counts) < 3:
        raise DesignError("the cluster jackknife needs at least 3 groups (each replicate keeps G - 1 >= 2)")
    estimate = float(statistic(stat, full_totals(sums))[0])
    return Interval(estimate, jackknife_se(_finite(statistic(stat, jackknife_totals(sums)), "jackknife")))


def bootstrap(sums: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42, level: float = 0.95) -> Interval:
    _check_bootstrap(replicates, level)
    if len(sums.counts) < 2:
        raise DesignError("the cluster bootstrap needs at least 2 groups")
    return percentile_interval(statistic(stat, full_totals(sums))[0], bootstrap_draws(sums, stat, replicates, seed),
                               level)


def percentile_interval(estimate: float, draws: np.ndarray, level: float) -> Interval:
    """The estimate, the bootstrap SE and the percentile interval at ``level``."""
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(estimate), float(np.std(draws, ddof=1)), float(low), float(high))


def bootstrap_draws(sums: GroupSums, stat: str, replicates: int, seed: int) -> np.ndarray:
    """The statistic on each cluster-bootstrap resample (the same resamples for the same G and seed)."""
    return _finite(statistic(stat, weighted_totals(sums, bootstrap_weights(len(sums.counts), replicates, seed))),
                   "bootstrap")


def paired(a: GroupSums, b: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42,
           level: float = 0.95, draws: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, float, Interval]:
    """theta_a - theta_b with the same deletions (jackknife SE) and the same resamples (interval).

    ``a`` and ``b`` must hold the same groups in the same order (the same items, two models).
    ``draws``: each model's bootstrap_draws(..., replicates, seed), when the caller has them already.
    """
    _check_bootstrap(replicates, level)
    if list(a.labels) != list(b.labels):
        raise InputError("the two models do not have the same groups")
    if len(a.counts) < 3:
        raise DesignError("the paired jackknife needs at least 3 groups")
    estimate_a = float(statistic(stat, full_totals(a))[0])
    estimate_b = float(statistic(stat, full_totals(b))[0])
    jack = (_finite(statistic(stat, jackknife_totals(a)), "jackknife")
            - _finite(statistic(stat, jackknife_totals(b)), "jackknife"))
    draws_a, draws_b = draws if draws is not None else (bootstrap_draws(a, stat, replicates, seed),
                                                         bootstrap_draws(b, stat, replicates, seed))
    difference = draws_a - draws_b
    low, high = np.quantile(difference, [(1 - level) / 2, (1 + level) / 2])
    return estimate_a, estimate_b, Interval(estimate_a - estimate_b, jackknife_se(jack), float(low), float(high))


def _check_bootstrap(replicates, level) -> None:
    if not isinstance(replicates, (int, np.integer)) or replicates < 2:
        raise InputError(f"replicates must be a whole number of at least 2, not {replicates!r}")
    if not 0 < level < 1:
        raise InputError(f"level must be between 0 and 1, not {level!r}")
