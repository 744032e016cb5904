"""The dispersion test (SPEC S14; Anderson 2006, vegan::betadisper type "centroid", scikit-bio
permdisp): distances of items to their group centroid, a one-way ANOVA F on those distances, and
a permutation p-value from permuting the distances among groups (as permdisp does).

A significant PERMANOVA F can come from groups that differ in spread rather than location; this
test is the check.  For unit vectors the centroid is the group mean mu_g (not renormalised) and
the distance is ||z_i - mu_g||, not squared, as in betadisper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .permutation import Design, PermutationTest, _check_permutations, _result, shuffles
from .sufficient import GroupSums


@dataclass(frozen=True)
class Dispersion:
    test: PermutationTest
    groups: int
    mean_distance: np.ndarray     # per group code
    sizes: np.ndarray


def centroid_distances(unit: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """||z_i - mu_g(i)|| for every row."""
    sums = GroupSums.from_rows(codes, unit)   # labels are the codes 0..G-1, so rows come back in code order
    residual = unit - (sums.sums / sums.counts[:, None])[codes]
    return np.sqrt(np.einsum("ij,ij->i", residual, residual))


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


def dispersion_test(unit: np.ndarray, d: Design, *, permutations: int = 999, seed: int = 42,
                    progress=None) -> Dispersion:
    """F and permutation p of the distances to group centroids (rows in canonical order)."""
    _check_permutations(permutations)
    distances = centroid_distances(unit, d.codes)
    f_observed = anova_f(distances, d.codes, d.groups)
    f_permuted = np.empty(permutations)
    for k, perm in enumerate(shuffles(d, permutations, seed)):
        f_permuted[k] = anova_f(distances[perm], d.codes, d.groups)
        if progress is not None and (k + 1) % 100 == 0:
            progress(k + 1, permutations)
    sizes = np.bincount(d.codes, minlength=d.groups)
    means = np.bincount(d.codes, weights=distances, minlength=d.groups) / sizes
    return Dispersion(_result(f_observed, f_permuted, "distances"), d.groups, means, sizes)
