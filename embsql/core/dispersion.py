"""The dispersion test (Anderson 2006; vegan::betadisper type "centroid" with bias.adjust = TRUE):
do the groups differ in spread about their centroids?

The statistic is the one-way ANOVA F of each item's distance to its group centroid, the distance
multiplied by sqrt(n_g / (n_g - 1)) (betadisper's bias adjustment: a sample centroid sits closer to
its own items than the true centre, by that factor on average for squared distances).

Why not permute the distances, or their residuals (scikit-bio's permdisp, vegan's permutest)?  Both
treat the n distances as exchangeable, but distances to a centroid estimated from the same few items
are correlated (their squares by about 1/(n_g - 1)^2 for Gaussian items: 1/4 when n_g = 3), so a
small group's mean distance varies more, and its within variance less, than a permuted group's.
On iid unit vectors in groups of 2, 3, 5, 10 and 20 items the raw scheme rejected 86% of data
sets at 5%, and permuting the adjusted distances' residuals 25% (bench/validity_tests.py).

What is permuted here are the residual *vectors* z_i - mu_g, each scaled by sqrt(n_g / (n_g - 1))
so that every one has the covariance of an item about its true centre; each permuted grouping then
re-estimates its centroids and adjusted distances exactly as the observed grouping did, so the
correlation a small group's centroid induces is reproduced, whatever the group locations (which
the residuals no longer carry).  Groups with fewer than MIN_GROUP items are left out of the test
(and reported): with 2 items both distances are the same number, and with groups of 2 or 3 in
the test it ran above its level in simulation (7-9% at 5%; with them left out 4.7-7.3%,
bench/validity_tests.py).  What remains: the scaled residuals of one group are correlated
(-1/(n_g - 1)), which the permutation spreads across groups; in high dimension with many small
groups this leaves the test somewhat liberal (8.5% at 5% on the shuffled-label null of
examples/embeddings.parquet, d = 384, 30 topics of 4 to 56 items, against 100% for the old scheme).

For unit vectors the centroid is the group mean mu_g (not renormalised) and the distance is
||z_i - mu_g||, not squared, as in betadisper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.permutation import Design, PermutationTest, permutation_result, shuffles
from embsql.core.precision import check_spread

MIN_GROUP = 4          # groups smaller than this are left out of the test (see the module docstring)
POLL_EVERY = 16        # permutations between calls of ``progress`` (it may stop the run)


@dataclass(frozen=True)
class Dispersion:
    test: PermutationTest | None      # None when fewer than two groups have MIN_GROUP items
    groups: int                       # groups in the test
    mean_distance: np.ndarray         # per group code: mean unadjusted distance (betadisper's group.distances)
    sizes: np.ndarray
    tested: np.ndarray                # per group code: in the test?
    items_left_out: int
    note: str | None

    @property
    def groups_left_out(self) -> int:
        return int(np.sum(~self.tested))


def group_means(unit: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """mu_g for codes 0..G-1 (every code present), by sorted segment sums."""
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    return np.add.reduceat(unit[order], starts, axis=0) / np.diff(np.r_[starts, len(codes)])[:, None]


def centroid_distances(unit: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """||z_i - mu_g(i)|| for every row (codes 0..G-1, every code present)."""
    residual = unit - group_means(unit, codes)[codes]
    return np.sqrt(np.einsum("ij,ij->i", residual, residual))


def bias_factors(sizes: np.ndarray) -> np.ndarray:
    """sqrt(n_g / (n_g - 1)), betadisper's bias.adjust (groups of 2 or more)."""
    return np.sqrt(sizes / (sizes - 1.0))


def anova_f(values: np.ndarray, codes: np.ndarray, groups: int) -> float:
    """One-way ANOVA F of scalar ``values`` by ``codes`` (inf when there is no within variance).

    When every value is the same (to rounding), no grouping can differ: F = 0, so p = 1, never a
    0/0 NaN (which no permuted F would reach, giving a spurious p = 1/(B+1)).
    """
    n = len(values)
    if np.ptp(values) <= 1e-12 * max(1.0, float(np.max(np.abs(values)))):
        return 0.0
    sizes = np.bincount(codes, minlength=groups)
    means = np.bincount(codes, weights=values, minlength=groups) / sizes
    between = float(sizes @ (means - values.mean()) ** 2)
    within = float(np.sum((values - means[codes]) ** 2))
    if within <= 0:
        return np.inf if between > 0 else 0.0
    return (between / (groups - 1)) / (within / (n - groups))


class _ResidualPermutations:
    """F of the adjusted centroid distances of the scaled residual vectors, regrouped by a permutation."""

    def __init__(self, unit: np.ndarray, codes: np.ndarray, groups: int):
        self.codes, self.groups = codes, groups
        self.factor = bias_factors(np.bincount(codes, minlength=groups))[codes]
        self.residuals = (unit - group_means(unit, codes)[codes]) * self.factor[:, None]

    def __call__(self, perm: np.ndarray) -> float:
        distances = centroid_distances(self.residuals[perm], self.codes) * self.factor
        return anova_f(distances, self.codes, self.groups)


def _note(sizes: np.ndarray, tested: np.ndarray) -> str | None:
    left = ~tested
    if not left.any():
        return None
    what = (f"{int(left.sum())} group(s) with fewer than {MIN_GROUP} items ({int(sizes[left].sum())} items) "
            "left out: too few items to compare their spread")
    if tested.sum() < 2:
        return what + f"; the test needs at least two groups of {MIN_GROUP} or more items, so it did not run"
    return what


def dispersion_test(unit: np.ndarray, d: Design, *, permutations: int = 999, seed: int = 42,
                    progress=None) -> Dispersion:
    """F and permutation p of the adjusted distances to group centroids (rows in canonical order).

    ``progress(done, total)`` is called every POLL_EVERY permutations; it may raise to stop the run.
    """
    check_permutations(permutations)
    check_seed(seed)
    sizes = np.bincount(d.codes, minlength=d.groups)
    _check_spread(unit, d.codes, sizes)
    raw = centroid_distances(unit, d.codes)
    mean_distance = np.bincount(d.codes, weights=raw, minlength=d.groups) / sizes
    tested = sizes >= MIN_GROUP
    keep = tested[d.codes]
    items_left_out = int(np.sum(~keep))
    if tested.sum() < 2:
        return Dispersion(None, int(tested.sum()), mean_distance, sizes, tested, items_left_out, _note(sizes, tested))
    codes = (np.cumsum(tested) - 1)[d.codes[keep]]
    groups = int(tested.sum())
    kept = Design(codes, np.zeros(len(codes), dtype=np.int64), groups)
    distances = raw[keep] * bias_factors(sizes[tested])[codes]
    f_observed = anova_f(distances, codes, groups)
    permuted_f = _ResidualPermutations(unit[keep], codes, groups)
    f_permuted = np.empty(permutations)
    for k, perm in enumerate(shuffles(kept, permutations, seed)):
        f_permuted[k] = permuted_f(perm)
        if progress is not None and ((k + 1) % POLL_EVERY == 0 or k + 1 == permutations):
            progress(k + 1, permutations)
    return Dispersion(permutation_result(f_observed, f_permuted, "residual vectors"), groups, mean_distance, sizes, tested,
                      items_left_out, _note(sizes, tested))


def _check_spread(unit: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> None:
    """Identical vectors (to rounding) have no spread to compare: the same error as emb_anova."""
    n = len(codes)
    total = unit.sum(axis=0)
    sums = group_means(unit, codes) * sizes[:, None]
    check_spread(n - float(total @ total) / n, n - float(np.einsum("gk,gk->g", sums, sums) @ (1.0 / sizes)), n)
