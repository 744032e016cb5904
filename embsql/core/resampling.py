"""Cluster jackknife and cluster bootstrap from sufficient statistics, and the
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

from embsql.core import arguments, precision
from embsql.core.decomposition import between_ss
from embsql.core.student_t import t_quantile
from embsql.core.sums import GroupSums
from embsql.errors import DesignError, InputError

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


# ----------------------------------------------------------------------------------------------
# Intervals.  Chosen by simulation (bench/validity_intervals.py): against the value at G -> infinity
# the percentile interval of a cluster bootstrap misses on one side, because R² and F are biased by
# O(1/G) and a resample that repeats groups shifts its draws by about as much again.  What covers:
#   one model    the jackknife bias-corrected estimate +- t_{G-1} * jackknife SE, on a scale where
#                the figure is closer to normal (logit for R², W̄ and V, log for F), mapped back;
#   a difference the studentized (bootstrap-t) cluster bootstrap: t*_b = (d*_b - d) / SE*_b with
#                SE*_b the jackknife SE inside resample b, the interval d - q* SE_jackknife.
# Bootstrap intervals of one model undercovered badly (F: 40-65% with equal groups), and the
# jackknife t interval of a difference of F undercovered with unequal groups (90% at G = 30, 80% at
# G = 10); bench/validity_intervals.txt has the table.

MIN_GROUPS = 3           # the jackknife (and so every interval here) leaves one group out and needs 2 left
CALIBRATED_GROUPS = 30   # coverage measured at 92.5-97% from here on; at G = 10 it was 85-97.5%
CALIBRATED_STATS = ("r2", "f", "w_bar")  # the figures whose coverage bench/validity_intervals.py measured
MAX_DROPPED_SHARE = 0.1  # beyond this the kept resamples are a selected subset, not the bootstrap
SCALES = {"r2": "logit", "w_bar": "logit", "v": "logit", "f": "log"}
UPPER = {"r2": 1.0, "w_bar": 1.0, "v": 1.0, "r2_adj": 1.0, "icc": 1.0}   # F has no upper bound
LOWER = {"r2": 0.0, "w_bar": 0.0, "v": 0.0, "f": 0.0}
INNER_CELLS = 2**21      # resamples x groups per block of the studentized bootstrap (16 MB arrays)


@dataclass(frozen=True)
class Interval:
    """estimate: the plain figure; se: its SE (jackknife, or the bootstrap SD for bootstrap());
    ci_low/ci_high: the calibrated interval, built around estimate_bc (one model) or estimate (a
    difference); dropped: bootstrap resamples left out because the figure was undefined in them;
    calibrated: see calibrated(); False where the coverage was not measured to be nominal."""

    estimate: float
    se: float
    ci_low: float | None = None
    ci_high: float | None = None
    estimate_bc: float | None = None
    dropped: int = 0
    calibrated: bool | None = None


def calibrated(stat: str, groups: int) -> bool:
    """True where simulation measured the interval's coverage at 95 +- 2.5%: a figure of
    CALIBRATED_STATS (v, icc and r2_adj were not simulated) and at least CALIBRATED_GROUPS groups."""
    return stat in CALIBRATED_STATS and groups >= CALIBRATED_GROUPS


WITHIN_DF = ("f", "icc", "r2_adj")  # figures with MS_W = SS_W / (n - G): undefined when n = G


def defined_statistic(stat: str, totals: Totals) -> np.ndarray:
    """statistic(stat, totals) with NaN wherever the figure is undefined: n = G for the figures
    with MS_W (where rounding can leave SS_W a hair from 0, and F a finite 0), or fewer than 2
    groups, or any non-finite value."""
    values = np.asarray(statistic(stat, totals), dtype=float)
    bad = ~np.isfinite(values) | (np.asarray(totals.groups) < 2)
    if stat in WITHIN_DF:
        bad |= np.asarray(totals.n) <= np.asarray(totals.groups)
    return np.where(bad, np.nan, values)


def _finite(values: np.ndarray, what: str) -> np.ndarray:
    bad = int(np.count_nonzero(~np.isfinite(values)))
    if bad:
        raise DesignError(f"{bad} of {len(values)} {what} replicates leave the statistic undefined "
                          "(too few groups, or a replicate with no within-group variation)")
    return values


def jackknife_se(replicates: np.ndarray) -> float:
    """sqrt((G - 1)/G * sum_g (theta_(-g) - mean)^2)."""
    g = len(replicates)
    return float(np.sqrt((g - 1) / g * np.sum((replicates - replicates.mean()) ** 2)))


def jackknife_replicates(sums: GroupSums, stat: str, what: str = "cluster jackknife") -> tuple[float, np.ndarray]:
    """The figure on all groups and with each group left out in turn (an error if any is undefined)."""
    if len(sums.counts) < MIN_GROUPS:
        raise DesignError(f"the {what} needs at least {MIN_GROUPS} groups (each replicate keeps G - 1 >= 2)")
    estimate = float(defined_statistic(stat, full_totals(sums))[0])
    if not np.isfinite(estimate):
        raise DesignError(f"{stat} is undefined on these groups (fewer than 2 groups, as many groups as items, or "
                          "no variation)")
    return estimate, _finite(defined_statistic(stat, jackknife_totals(sums)), "jackknife")


def jackknife(sums: GroupSums, stat: str, level: float = 0.95) -> Interval:
    """Jackknife SE and the calibrated interval (see jackknife_t_interval)."""
    estimate, replicates = jackknife_replicates(sums, stat)
    centre, low, high = jackknife_t_interval(stat, estimate, replicates, arguments.check_level(level))
    return Interval(estimate, jackknife_se(replicates), low, high, centre, 0, calibrated(stat, len(replicates)))


def _scale(stat: str, values: np.ndarray):
    """(forward, back) of the scale the t interval is built on: logit or log where every value is
    inside the figure's range, else the figure itself (a replicate at R² = 1, say)."""
    kind = SCALES.get(stat)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "logit" and np.all((values > 0) & (values < 1)):
            return (lambda p: np.log(p) - np.log1p(-p)), (lambda x: 1.0 / (1.0 + np.exp(-x)))
        if kind == "log" and np.all(values > 0):
            return np.log, np.exp
    return (lambda x: x), (lambda x: x)


def _clip(stat: str, value: float) -> float:
    return float(min(max(value, LOWER.get(stat, -np.inf)), UPPER.get(stat, np.inf)))


def jackknife_t_interval(stat: str, estimate: float, replicates: np.ndarray, level: float) -> tuple[float, float, float]:
    """(bias-corrected estimate, low, high): G*theta - (G-1)*mean(theta_(-g)) +- t_{G-1} * SE,
    on the figure's scale (_scale), mapped back and kept inside the figure's range."""
    forward, back = _scale(stat, np.append(replicates, estimate))
    g = len(replicates)
    on_scale = forward(np.asarray(replicates, dtype=float))
    centre = g * float(forward(np.float64(estimate))) - (g - 1) * float(on_scale.mean())
    half = t_quantile((1 + level) / 2, g - 1) * jackknife_se(on_scale)
    corrected, low, high = (_clip(stat, float(back(np.float64(x)))) for x in (centre, centre - half, centre + half))
    return corrected, low, high


def bootstrap(sums: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42, level: float = 0.95) -> Interval:
    """The bootstrap SE (SD of the kept resamples) with the calibrated interval of one model."""
    replicates, seed, level = _check_bootstrap(replicates, seed, level)
    estimate, jack = jackknife_replicates(sums, stat, "calibrated interval")
    draws = bootstrap_draws(sums, stat, replicates, seed)
    kept = draws[np.isfinite(draws)]
    dropped = _check_dropped(replicates - len(kept), replicates)
    centre, low, high = jackknife_t_interval(stat, estimate, jack, level)
    return Interval(estimate, float(np.std(kept, ddof=1)), low, high, centre, dropped,
                    calibrated(stat, len(sums.counts)))


def percentile_interval(estimate: float, draws: np.ndarray, level: float) -> Interval:
    """The estimate, the bootstrap SE and the percentile interval at ``level`` (not calibrated: it
    misses on one side for R² and F; kept for comparison, e.g. in bench/validity_intervals.py)."""
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(estimate), float(np.std(draws, ddof=1)), float(low), float(high))


def bootstrap_draws(sums: GroupSums, stat: str, replicates: int, seed: int) -> np.ndarray:
    """The statistic on each cluster-bootstrap resample (the same resamples for the same G and seed);
    NaN where a resample leaves it undefined (e.g. F when only groups of one were drawn)."""
    if len(sums.counts) < 2:
        raise DesignError("the cluster bootstrap needs at least 2 groups")
    return defined_statistic(stat, weighted_totals(sums, bootstrap_weights(len(sums.counts), replicates, seed)))


def _check_dropped(dropped: int, replicates: int) -> int:
    if dropped > MAX_DROPPED_SHARE * replicates or replicates - dropped < 2:
        raise DesignError(f"{dropped} of {replicates} bootstrap resamples leave the statistic undefined (more than "
                          f"{MAX_DROPPED_SHARE:.0%}), so no interval: too few groups, or too many groups of one item")
    return int(dropped)


def resample_jackknife(sums: GroupSums, stat: str, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each resample (a row of draw counts): the figure, and the figure with one draw of group g
    left out (resamples x groups; meaningful where the group was drawn).  Closed form, as for the
    jackknife, on the sums about the full-sample mean (see _parts): with A = sum_g w_g a_g,
    ||A - a_g||^2 = ||A||^2 - 2 A.a_g + ||a_g||^2."""
    counts, within, offsets, between = _parts(sums)
    drawn = weights @ offsets
    drawn_sq = np.einsum("rk,rk->r", drawn, drawn)
    own = np.einsum("gk,gk->g", offsets, offsets)
    n, groups = weights @ counts, weights.sum(axis=1)
    ss_w, between_total, sum_n2 = weights @ within, weights @ between, weights @ counts ** 2
    n_out = n[:, None] - counts
    with np.errstate(divide="ignore", invalid="ignore"):
        ss_b_out = np.maximum(0.0, (between_total[:, None] - between)
                              - (drawn_sq[:, None] - 2 * (drawn @ offsets.T) + own) / n_out)
        left_out = Totals(n_out, groups[:, None] - 1, ss_w[:, None] - within, ss_b_out,
                          sum_n2[:, None] - counts ** 2)
        # the resample's own figure from the same sums (weighted_totals would repeat the product)
        full = Totals(n, groups, ss_w, np.maximum(0.0, between_total - drawn_sq / n), sum_n2)
    return defined_statistic(stat, full), defined_statistic(stat, left_out)


def _inner_se(replicates: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The jackknife SE inside each resample, over its G draws (a group drawn k times counts k times)."""
    g = weights.sum(axis=1)
    values = np.where(weights > 0, replicates, 0.0)
    mean = np.einsum("rg,rg->r", weights, values) / g
    return np.sqrt((g - 1) / g * np.einsum("rg,rg->r", weights, (values - mean[:, None]) ** 2))


def paired_resamples(a: GroupSums, b: GroupSums, stat: str, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta_a* - theta_b* and its jackknife SE inside each resample (NaN where undefined)."""
    difference, inner = np.empty(len(weights)), np.empty(len(weights))
    step = max(1, min(BOOTSTRAP_BLOCK, INNER_CELLS // len(a.counts)))
    with np.errstate(divide="ignore", invalid="ignore"):
        for low in range(0, len(weights), step):
            block = weights[low:low + step]
            (theta_a, left_a), (theta_b, left_b) = resample_jackknife(a, stat, block), resample_jackknife(b, stat, block)
            difference[low:low + step] = theta_a - theta_b
            inner[low:low + step] = _inner_se(left_a - left_b, block)
    return difference, inner


def paired(a: GroupSums, b: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42,
           level: float = 0.95) -> tuple[float, float, Interval]:
    """theta_a - theta_b: the paired jackknife SE (the same group left out of both) and the
    studentized bootstrap interval over the same resamples of groups for both.

    ``a`` and ``b`` must hold the same groups in the same order (two models, paired by group label;
    the items inside a group may differ between the models)."""
    replicates, seed, level = _check_bootstrap(replicates, seed, level)
    if list(a.labels) != list(b.labels):
        raise InputError("the two models do not have the same groups")
    estimate_a, jack_a = jackknife_replicates(a, stat, "paired jackknife")
    estimate_b, jack_b = jackknife_replicates(b, stat, "paired jackknife")
    estimate, jack = estimate_a - estimate_b, jack_a - jack_b
    g, se = len(jack), jackknife_se(jack)
    centre = g * estimate - (g - 1) * float(jack.mean())
    measured = calibrated(stat, g)
    if se == 0:  # the models agree on every group (e.g. a model against itself): nothing to resample
        return estimate_a, estimate_b, Interval(estimate, 0.0, estimate, estimate, centre, 0, measured)
    difference, inner = paired_resamples(a, b, stat, bootstrap_weights(g, replicates, seed))
    ok = np.isfinite(difference) & np.isfinite(inner) & (inner > 0)
    dropped = _check_dropped(replicates - int(ok.sum()), replicates)
    low_q, high_q = np.quantile((difference[ok] - estimate) / inner[ok], [(1 - level) / 2, (1 + level) / 2])
    return estimate_a, estimate_b, Interval(estimate, se, float(estimate - high_q * se), float(estimate - low_q * se),
                                            centre, dropped, measured)


def _check_bootstrap(replicates, seed, level) -> tuple[int, int, float]:
    return arguments.check_replicates(replicates), arguments.check_seed(seed), arguments.check_level(level)
