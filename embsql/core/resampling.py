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

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from embsql.core import arguments, precision
from embsql.core.decomposition import between_ss
from embsql.core.design import check_min_groups
from embsql.core.student_t import t_quantile
from embsql.core.sums import GroupSums
from embsql.errors import InputError, fail

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
        raise InputError(f"statistic must be one of {', '.join(STATISTICS)}, not {name!r}", kind="argument.stat")
    n, g = t.n.astype(float), t.groups.astype(float)
    ss_w, ss_b = t.ss_w, t.ss_b
    ss_t = ss_w + ss_b
    with np.errstate(divide="ignore", invalid="ignore"):
        value = figure(name, n, g, ss_t, ss_w, ss_b, t.sum_n2)
    return np.where(precision.resolved(ss_t, ss_w, n), value, np.nan)


def figure(name: str, n: Any, g: Any, ss_t: Any, ss_w: Any, ss_b: Any, sum_n2: Any) -> Any:
    """The one definition of each figure from the sums of squares (scalars or arrays; no checks)."""
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


Parts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# _parts of each GroupSums still alive (by id, with a weak reference that says it is the same object): a
# report asks for them some 40 times per model, and at 10^5 rows they cost about 40 ms each
_PARTS: dict[int, tuple[weakref.ref[GroupSums], Parts]] = {}


def _parts(sums: GroupSums) -> Parts:
    """Per group: n_g, within_g, a_g = n_g (m_g - c) and n_g ||m_g - c||^2, c the full-sample mean
    (read-only arrays, computed once per GroupSums: GroupSums is frozen)."""
    found = _PARTS.get(id(sums))
    if found is not None and found[0]() is sums:
        return found[1]
    counts = sums.counts.astype(float)
    centre = sums.sums.sum(axis=0) / counts.sum()
    offsets = (sums.sums / counts[:, None] - centre) * counts[:, None]
    parts = (counts, np.array(sums.within_ss(), dtype=float), offsets, between_ss(sums, centre))
    for array in parts:
        array.flags.writeable = False
    key = id(sums)

    def forget(_: weakref.ref[GroupSums]) -> None:
        _PARTS.pop(key, None)

    _PARTS[key] = (weakref.ref(sums, forget), parts)
    return parts


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
# Intervals.  Chosen by simulation (validation/validity_intervals.py): against the value at G -> infinity
# the percentile interval of a cluster bootstrap misses on one side, because R² and F are biased by
# O(1/G) and a resample that repeats groups shifts its draws by about as much again.  What covers:
#   one model    the jackknife bias-corrected estimate +- t_{G-1} * jackknife SE, on a scale where
#                the figure is closer to normal (logit for R², W̄ and V, log for F), mapped back;
#   a difference the studentized (bootstrap-t) cluster bootstrap: t*_b = (d*_b - d) / SE*_b with
#                SE*_b the jackknife SE inside resample b, the interval d - q* SE_jackknife.
# Bootstrap intervals of one model undercovered badly (F: 40-65% with equal groups), and the
# jackknife t interval of a difference of F undercovered with unequal groups (90% at G = 30, 80% at
# G = 10); validation/validity_intervals.txt has the table.

MIN_GROUPS = 3           # the jackknife (and so every interval here) leaves one group out and needs 2 left
SIZES = ("auto", "fixed", "random")
MIN_STRATUM_GROUPS = 5   # fixed sizes: the stratified jackknife needs this many groups of each size
CALIBRATED_GROUPS = 30   # coverage measured from here on (validation/calibration.json: intervals.difference.from30)
CALIBRATED_STATS = ("r2", "f", "w_bar")  # the figures whose coverage validation/validity_intervals.py measured
MAX_DROPPED_SHARE = 0.1  # beyond this the kept resamples are a selected subset, not the bootstrap
# cka, procrustes: embsql.core.geometry (the debiased CKA's replicates, in [-1, 1]; the population
# figure, in [0, 1])
SCALES = {"r2": "logit", "w_bar": "logit", "v": "logit", "f": "log", "cka": "atanh", "procrustes": "atanh"}
UPPER = {"r2": 1.0, "w_bar": 1.0, "v": 1.0, "r2_adj": 1.0, "icc": 1.0, "cka": 1.0, "procrustes": 1.0}
LOWER = {"r2": 0.0, "w_bar": 0.0, "v": 0.0, "f": 0.0, "cka": 0.0, "procrustes": 0.0}   # F has no upper bound
INNER_CELLS = 2**21      # resamples x groups per block of the studentized bootstrap (16 MB arrays)


@dataclass(frozen=True)
class Interval:
    """estimate: the plain figure; se: its SE (jackknife, or the bootstrap SD for bootstrap());
    ci_low/ci_high: the calibrated interval, built around estimate_bc (one model) or estimate (a
    difference); estimate_bc: the jackknife bias correction on the figure's scale h (logit for R², W̄
    and V, log for F, the figure itself otherwise), h^-1(G h(theta) - (G-1) mean_g h(theta_(-g)));
    dropped: bootstrap resamples left out because the figure was undefined in them;
    calibrated: see calibrated(); False where the coverage was not measured to be nominal."""

    estimate: float
    se: float
    ci_low: float | None = None
    ci_high: float | None = None
    estimate_bc: float | None = None
    dropped: int = 0
    calibrated: bool | None = None
    sizes: str = "random"   # "fixed": the SE took the group sizes as fixed by the design (size_strata)


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
        fail("design.undefined_replicates", bad=bad, total=len(values), what=what)
    return values


def jackknife_se(replicates: np.ndarray, strata: np.ndarray | None = None) -> float:
    """sqrt((G - 1)/G * sum_g (theta_(-g) - mean)^2); with ``strata`` (see size_strata) the
    stratified form, deviations taken from each stratum's own mean:
        sum_h G_h (G - 1)^2 / ((G_h - 1) G^2) * sum_{g in h} (theta_(-g) - mean_h)^2.
    (The replicates leave one group out of the whole sample; for a mean over groups that factor makes
    the sum exactly the variance of a stratified mean, where (G_h - 1)/G_h would understate it.)"""
    g = len(replicates)
    if strata is None:
        return float(np.sqrt((g - 1) / g * np.sum((replicates - replicates.mean()) ** 2)))
    return float(np.sqrt(sum(part for part, _ in _stratum_variances(replicates, strata))))


def _stratum_variances(replicates: np.ndarray, strata: np.ndarray) -> list[tuple[float, int]]:
    """Each stratum's share of the stratified jackknife variance, with the stratum's group count."""
    g, parts = len(replicates), []
    for h in np.unique(strata):
        values = replicates[strata == h]
        size = len(values)
        parts.append((size * (g - 1) ** 2 / ((size - 1) * g ** 2) * float(np.sum((values - values.mean()) ** 2)), size))
    return parts


def stratified_df(replicates: np.ndarray, strata: np.ndarray) -> float:
    """Welch-Satterthwaite degrees of freedom of the stratified variance, at most G - H:
    (sum_h v_h)^2 / sum_h v_h^2 / (G_h - 1).  With t_{G-H} the intervals covered 93% under unequal
    noise (strata with unequal variances carry fewer df than G - H); with this, 95%."""
    parts = _stratum_variances(replicates, strata)
    total = sum(v for v, _ in parts)
    spread = sum(v * v / (size - 1) for v, size in parts)
    limit = float(len(replicates) - len(parts))
    return limit if spread == 0 else min(limit, total * total / spread)


def size_strata(sums: GroupSums | np.ndarray, sizes: str = "auto") -> np.ndarray | None:
    """Strata of groups of equal size when the sizes are fixed by the design, else None.

    A group's leave-one-out replicate moves with the group's size: a large group carries more of
    every figure.  When sizes are drawn with the groups, that movement is sampling variation and
    the plain jackknife is right.  When every sample has the same sizes (a design: so many groups
    of 2, of 5, of 20), it is not, and the plain jackknife overstated the SE 1.3-7 times (coverage
    99-100% for a nominal 95%, validation/validity_intervals.py); deviations from the mean of groups of
    the same size measure only what varies.  "auto" takes the sizes as fixed when every distinct
    size occurs equally often (equal groups, or a pattern repeated, as designs are written).  Equal
    groups need no strata; a stratum with fewer than MIN_STRATUM_GROUPS groups gives too noisy a
    variance, so the plain (conservative) jackknife is kept there."""
    if sizes not in SIZES:
        raise InputError(f"sizes must be one of {', '.join(map(repr, SIZES))}, not {sizes!r}")
    counts = sums.counts if isinstance(sums, GroupSums) else sums   # or a key per group (paired models)
    values, codes, multiplicity = np.unique(np.asarray(counts), return_inverse=True, return_counts=True)
    fixed = sizes == "fixed" or (sizes == "auto" and bool(np.all(multiplicity == multiplicity[0])))
    if not fixed or len(values) < 2 or multiplicity.min() < MIN_STRATUM_GROUPS:
        return None
    return codes


def sizes_word(strata: np.ndarray | None) -> str:
    return "random" if strata is None else "fixed"


def paired_strata(a: GroupSums, b: GroupSums, sizes: str = "auto") -> np.ndarray | None:
    """size_strata for two models paired by group: a group's size is the pair (n_a, n_b)."""
    return size_strata(a.counts.astype(np.int64) * (int(b.counts.max()) + 1) + b.counts, sizes)


@lru_cache(maxsize=2)
def _stratified_weights(strata: tuple, replicates: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    codes = np.asarray(strata)
    weights = np.zeros((replicates, len(codes)))
    for h in np.unique(codes):
        members = np.flatnonzero(codes == h)
        weights[:, members] = rng.multinomial(len(members), np.full(len(members), 1.0 / len(members)), size=replicates)
    weights.flags.writeable = False
    return weights


def resample_weights(groups: int, replicates: int, seed: int, strata: np.ndarray | None = None) -> np.ndarray:
    """Draw counts, replicates x groups: bootstrap_weights, or with ``strata`` each stratum's groups
    drawn among themselves (so every resample keeps the design's sizes)."""
    if strata is None:
        return bootstrap_weights(groups, replicates, seed)
    return _stratified_weights(tuple(int(h) for h in strata), replicates, seed)


def jackknife_replicates(sums: GroupSums, stat: str, what: str = "cluster jackknife") -> tuple[float, np.ndarray]:
    """The figure on all groups and with each group left out in turn (an error if any is undefined)."""
    check_min_groups(len(sums.counts), MIN_GROUPS, what, " (each replicate keeps G - 1 >= 2)")
    estimate = float(defined_statistic(stat, full_totals(sums))[0])
    if not np.isfinite(estimate):
        fail("design.undefined_statistic", stat=stat)
    return estimate, _finite(defined_statistic(stat, jackknife_totals(sums)), "jackknife")


def jackknife(sums: GroupSums, stat: str, level: float = 0.95, sizes: str = "auto") -> Interval:
    """Jackknife SE and the calibrated interval (see jackknife_t_interval; ``sizes``: size_strata)."""
    strata = size_strata(sums, sizes)
    estimate, replicates = jackknife_replicates(sums, stat)
    centre, low, high = jackknife_t_interval(stat, estimate, replicates, arguments.check_level(level), strata)
    return Interval(estimate, jackknife_se(replicates, strata), low, high, centre, 0, calibrated(stat, len(replicates)),
                    sizes_word(strata))


def _scale(stat: str, values: np.ndarray) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(forward, back) of the scale the t interval is built on: logit, log or atanh (Fisher's z) where
    every value is inside the figure's range, else the figure itself (a replicate at R² = 1, say)."""
    kind = SCALES.get(stat)
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "logit" and np.all((values > 0) & (values < 1)):
            return (lambda p: np.log(p) - np.log1p(-p)), (lambda x: 1.0 / (1.0 + np.exp(-x)))
        if kind == "atanh" and np.all(np.abs(values) < 1):
            return np.arctanh, np.tanh
        if kind == "log" and np.all(values > 0):
            return np.log, np.exp
    return (lambda x: x), (lambda x: x)


def _clip(stat: str, value: float) -> float:
    return float(min(max(value, LOWER.get(stat, -np.inf)), UPPER.get(stat, np.inf)))


def jackknife_t_interval(stat: str, estimate: float, replicates: np.ndarray, level: float,
                         strata: np.ndarray | None = None, bias_correct: bool = True) -> tuple[float, float, float]:
    """(bias-corrected estimate, low, high), all on the figure's scale h (_scale: logit for R², W̄ and
    V, log for F, the figure itself for ICC and adjusted R² or where a value is at its bound) and mapped
    back: estimate_bc = h^-1(G h(theta) - (G-1) mean_g h(theta_(-g))), the interval h^-1(that +- t_df *
    the jackknife SE of h(theta_(-g))), kept inside the figure's range; df = G - 1, or with size
    strata the stratified SE and stratified_df (the bias correction stays the plain one, which
    measured unbiased in both designs where the stratified correction was off by 0.4 SD).
    ``bias_correct=False`` centres the interval on h(theta) itself, for an estimate already unbiased."""
    forward, back = _scale(stat, np.append(replicates, estimate))
    g = len(replicates)
    on_scale = forward(np.asarray(replicates, dtype=float))
    centre = float(forward(np.float64(estimate)))
    if bias_correct:
        centre = g * centre - (g - 1) * float(on_scale.mean())
    df = g - 1 if strata is None else stratified_df(on_scale, strata)
    half = t_quantile((1 + level) / 2, df) * jackknife_se(on_scale, strata)
    low, high = centre - half, centre + half
    return (_clip(stat, float(back(np.float64(centre)))), _clip(stat, float(back(np.float64(low)))),
            _clip(stat, float(back(np.float64(high)))))


def bootstrap(sums: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42, level: float = 0.95,
              sizes: str = "auto") -> Interval:
    """The bootstrap SE (SD of the kept resamples) with the calibrated interval of one model
    (``sizes``: see size_strata)."""
    replicates, seed, level = _check_bootstrap(replicates, seed, level)
    estimate, jack = jackknife_replicates(sums, stat, "calibrated interval")
    draws = bootstrap_draws(sums, stat, replicates, seed)
    kept = draws[np.isfinite(draws)]
    dropped = check_dropped(replicates - len(kept), replicates)
    strata = size_strata(sums, sizes)
    centre, low, high = jackknife_t_interval(stat, estimate, jack, level, strata)
    return Interval(estimate, float(np.std(kept, ddof=1)), low, high, centre, dropped,
                    calibrated(stat, len(sums.counts)), sizes_word(strata))


def percentile_interval(estimate: float, draws: np.ndarray, level: float) -> Interval:
    """The estimate, the bootstrap SE and the percentile interval at ``level`` (not calibrated: it
    misses on one side for R² and F; kept for comparison, e.g. in validation/validity_intervals.py)."""
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(estimate), float(np.std(draws, ddof=1)), float(low), float(high))


def bootstrap_draws(sums: GroupSums, stat: str, replicates: int, seed: int) -> np.ndarray:
    """The statistic on each cluster-bootstrap resample (the same resamples for the same G and seed);
    NaN where a resample leaves it undefined (e.g. F when only groups of one were drawn)."""
    check_min_groups(len(sums.counts), 2, "cluster bootstrap")
    return defined_statistic(stat, weighted_totals(sums, bootstrap_weights(len(sums.counts), replicates, seed)))


def check_dropped(dropped: int, replicates: int) -> int:
    if dropped > MAX_DROPPED_SHARE * replicates or replicates - dropped < 2:
        fail("design.dropped_resamples", dropped=dropped, total=replicates, share=f"{MAX_DROPPED_SHARE:.0%}")
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


def inner_se(replicates: np.ndarray, weights: np.ndarray, strata: np.ndarray | None = None) -> np.ndarray:
    """The jackknife SE inside each resample, over its G draws (a group drawn k times counts k times);
    with ``strata`` the stratified form of jackknife_se (each stratum keeps its G_h draws)."""
    g = weights.sum(axis=1)
    values = np.where(weights > 0, replicates, 0.0)
    if strata is None:
        mean = np.einsum("rg,rg->r", weights, values) / g
        return np.sqrt((g - 1) / g * np.einsum("rg,rg->r", weights, (values - mean[:, None]) ** 2))
    total = np.zeros(len(weights))
    for h in np.unique(strata):
        w, v = weights[:, strata == h], values[:, strata == h]
        size = w.sum(axis=1)
        mean = np.einsum("rg,rg->r", w, v) / size
        total += size * (g - 1) ** 2 / ((size - 1) * g ** 2) * np.einsum("rg,rg->r", w, (v - mean[:, None]) ** 2)
    return np.sqrt(total)


def paired_resamples(a: GroupSums, b: GroupSums, stat: str, weights: np.ndarray,
                     strata: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """theta_a* - theta_b* and its jackknife SE inside each resample (NaN where undefined)."""
    difference, inner = np.empty(len(weights)), np.empty(len(weights))
    step = max(1, min(BOOTSTRAP_BLOCK, INNER_CELLS // len(a.counts)))
    with np.errstate(divide="ignore", invalid="ignore"):
        for low in range(0, len(weights), step):
            block = weights[low:low + step]
            (theta_a, left_a), (theta_b, left_b) = resample_jackknife(a, stat, block), resample_jackknife(b, stat, block)
            difference[low:low + step] = theta_a - theta_b
            inner[low:low + step] = inner_se(left_a - left_b, block, strata)
    return difference, inner


def paired(a: GroupSums, b: GroupSums, stat: str, *, replicates: int = 2000, seed: int = 42,
           level: float = 0.95, sizes: str = "auto") -> tuple[float, float, Interval]:
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
    strata = paired_strata(a, b, sizes)
    g, se = len(jack), jackknife_se(jack, strata)
    centre = g * estimate - (g - 1) * float(jack.mean())
    # the difference of F with sizes fixed by the design covered 91.6% (+-0.7%) in simulation, short of
    # the 92.5% that calibrated promises (validation/validity_intervals.txt)
    measured = calibrated(stat, g) and not (stat == "f" and strata is not None)
    if se == 0:  # the models agree on every group (e.g. a model against itself): nothing to resample
        return estimate_a, estimate_b, Interval(estimate, 0.0, estimate, estimate, centre, 0, measured,
                                                sizes_word(strata))
    difference, inner = paired_resamples(a, b, stat, resample_weights(g, replicates, seed, strata), strata)
    ok = np.isfinite(difference) & np.isfinite(inner) & (inner > 0)
    dropped = check_dropped(replicates - int(ok.sum()), replicates)
    low_q, high_q = np.quantile((difference[ok] - estimate) / inner[ok], [(1 - level) / 2, (1 + level) / 2])
    return estimate_a, estimate_b, Interval(estimate, se, float(estimate - high_q * se), float(estimate - low_q * se),
                                            centre, dropped, measured, sizes_word(strata))


def _check_bootstrap(replicates: object, seed: object, level: object) -> tuple[int, int, float]:
    return arguments.check_replicates(replicates), arguments.check_seed(seed), arguments.check_level(level)
