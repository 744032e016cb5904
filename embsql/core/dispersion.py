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

Two routes give the permuted distances, with the same F to rounding (choose_dispersion_method picks
by cost): coordinates regroups the n x d residuals (the codes sorted once, blocks kept in cache);
gram reads only the within-group blocks of the residuals' float64 Gram matrix, sum_g n_g^2 random
reads per permutation, and redoes by coordinates any permutation where its rounding could show.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.permutation import (
    Design,
    PackedGram,
    PermutationTest,
    gram_dtype,
    over_threads,
    permutation_result,
    shuffles,
    size_classes,
)
from embsql.core.precision import check_spread
from embsql.errors import InputError

MIN_GROUP = 4          # groups smaller than this are left out of the test (see the module docstring)
POLL_EVERY = 16        # permutations between calls of ``progress`` (it may stop the run), and per batch
DISPERSION_METHODS = ("gram", "coordinates")
DISTANCE_BLOCK_ROWS = 512   # rows per gathered block of the coordinates route (stays in cache)
NEAR_DEGENERATE = 1e-4      # Gram route: a squared distance below this share of R_kk is redone by coordinates


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


class _CoordinateDistances:
    """Squared distances of permuted rows to their permuted group's centroid, regrouping the residual
    vectors themselves: n * d reads per permutation.

    The sort order of the codes is taken once (only the rows move); rows are gathered in blocks of
    whole groups (about DISTANCE_BLOCK_ROWS), so the centring and the squared norms stay in cache.
    The sums, means and differences are those of ``centroid_distances``, in the same order.
    """

    def __init__(self, residuals: np.ndarray, codes: np.ndarray):
        self.residuals, self.n = residuals, len(codes)
        self.order = np.argsort(codes, kind="stable")
        sizes = np.bincount(codes)
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        cuts = np.unique(np.r_[np.r_[starts, self.n][np.searchsorted(starts, np.arange(0, self.n, DISTANCE_BLOCK_ROWS))],
                               self.n])
        inside = [(starts >= low) & (starts < high) for low, high in zip(cuts[:-1], cuts[1:])]
        self.blocks = [(low, high, starts[mask] - low, sizes[mask]) for low, high, mask in zip(cuts[:-1], cuts[1:], inside)]

    def squared(self, perm: np.ndarray) -> np.ndarray:
        rows = perm[self.order]
        by_group = np.empty(self.n)
        for low, high, local_starts, counts in self.blocks:
            block = self.residuals[rows[low:high]]
            block -= np.repeat(np.add.reduceat(block, local_starts, axis=0) / counts[:, None], counts, axis=0)
            by_group[low:high] = np.einsum("ij,ij->i", block, block)
        out = np.empty(self.n)
        out[self.order] = by_group
        return out

    def batch(self, perms: np.ndarray) -> np.ndarray:
        return np.stack([self.squared(perm) for perm in perms])


class _GramDistances:
    """The same squared distances from R, the Gram matrix of the residual vectors (PackedGram, float64):
    ||r_j - m_g||^2 = R_jj - (2 / n_g) sum_{k in g} R_jk + (1 / n_g^2) sum_{k, l in g} R_kl, which reads only
    the n_g x n_g block of each permuted group, sum_g n_g^2 random reads per permutation.

    The Gram form loses digits when a distance is far below the residuals' length (its rounding error is
    eps * R_jj, the coordinates' eps * sqrt(R_jj) * distance): a permutation with a squared distance under
    NEAR_DEGENERATE * (its group's largest R_kk) is redone by coordinates, so every F agrees with theirs.
    float32 would not do: its rounding (1e-7 of R) moves the F of these data by about 1e-7.
    """

    def __init__(self, residuals: np.ndarray, codes: np.ndarray, coordinates: _CoordinateDistances):
        self.gram, self.coordinates, self.n = PackedGram(residuals, np.float64), coordinates, len(codes)
        self.diagonal = self.gram.values[self.gram.base + np.arange(self.n)]
        self.classes = [(size, members) for size, _, members in size_classes(codes)]
        self.reads = int(np.sum(np.bincount(codes).astype(np.int64) ** 2))

    def _squared(self, stacked: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = np.empty(stacked.shape)
        suspect = np.zeros(len(stacked), dtype=bool)
        for size, members in self.classes:
            items = stacked[:, members]                  # item perm[i] joins row i's group
            first, second = items[..., :, None], items[..., None, :]
            index = self.gram.base[np.minimum(first, second)]
            index += np.maximum(first, second)
            row_sums = np.take(self.gram.values, index).sum(axis=-1)
            diagonal = np.take(self.diagonal, items)
            squared = diagonal - (2.0 / size) * row_sums + row_sums.sum(axis=-1, keepdims=True) / (size * size)
            out[:, members] = squared
            suspect |= np.any(squared < NEAR_DEGENERATE * diagonal.max(axis=-1, keepdims=True), axis=(1, 2))
        return out, suspect

    def batch(self, perms: np.ndarray) -> np.ndarray:
        """Threads share the random reads, as in PERMANOVA's pairs route (over_threads)."""
        done = over_threads(self._squared, perms, len(perms) * self.reads)
        out, suspect = np.concatenate([o for o, _ in done]), np.concatenate([s for _, s in done])
        for b in np.flatnonzero(suspect):
            out[b] = self.coordinates.squared(perms[b])
        return out


# Relative costs on this machine, in units of one streamed float64 read of the coordinates route
# (tests/test_dispersion_methods.py pins the choice; bench/README.md, "dispersion test", has the figures):
# a random read of the float64 Gram matrix and the product building it (one multiply-add).
DISPERSION_READ = 10.0
DISPERSION_MAC = 0.04


def choose_dispersion_method(n: int, dim: int, codes: np.ndarray, permutations: int) -> str:
    """gram when the float64 Gram matrix of the residuals fits where PERMANOVA's pairs matrix does and building it
    (n^2 d / 2 multiply-adds) plus sum_g n_g^2 random reads per permutation cost less than n d streamed
    reads per permutation; else coordinates."""
    sizes = np.bincount(codes).astype(float)
    gram = DISPERSION_MAC * n * n * dim / 2 + permutations * DISPERSION_READ * float(np.sum(sizes ** 2))
    # R's packed float64 triangle takes n^2 * 4 bytes, what PERMANOVA's budget counts for its float32 matrix
    fits = gram_dtype(n) is not None
    return "gram" if fits and gram < permutations * n * dim else "coordinates"


class ResidualPermutations:
    """F of the adjusted centroid distances of the scaled residual vectors, regrouped by permutations."""

    def __init__(self, unit: np.ndarray, codes: np.ndarray, groups: int, method: str, permutations: int):
        self.codes, self.groups = codes, groups
        self.factor = bias_factors(np.bincount(codes, minlength=groups))[codes]
        residuals = (unit - group_means(unit, codes)[codes]) * self.factor[:, None]
        if method == "auto":
            method = choose_dispersion_method(len(codes), unit.shape[1], codes, permutations)
        self.method = method
        coordinates = _CoordinateDistances(residuals, codes)
        self.kernel: _CoordinateDistances | _GramDistances = (
            _GramDistances(residuals, codes, coordinates) if method == "gram" else coordinates)

    def batch(self, perms: list) -> np.ndarray:
        squared = self.kernel.batch(np.stack(perms))
        return np.array([anova_f(np.sqrt(row) * self.factor, self.codes, self.groups) for row in squared])


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
                    progress=None, method: str = "auto") -> Dispersion:
    """F and permutation p of the adjusted distances to group centroids (rows in canonical order).

    ``method``: how permuted distances are computed, 'gram' or 'coordinates' (the same F to rounding),
    or 'auto' (choose_dispersion_method).

    ``progress(done, total)`` is called every POLL_EVERY permutations; it may raise to stop the run.
    """
    check_permutations(permutations)
    check_seed(seed)
    if method != "auto" and method not in DISPERSION_METHODS:
        raise InputError(f"method must be 'auto', 'gram' or 'coordinates', not {method!r}")
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
    permuted_f = ResidualPermutations(unit[keep], codes, groups, method, permutations)
    f_permuted = np.empty(permutations)
    stream = shuffles(kept, permutations, seed)
    for low in range(0, permutations, POLL_EVERY):
        perms = [next(stream) for _ in range(min(POLL_EVERY, permutations - low))]
        f_permuted[low:low + len(perms)] = permuted_f.batch(perms)
        if progress is not None:
            progress(low + len(perms), permutations)
    return Dispersion(permutation_result(f_observed, f_permuted, "residual vectors"), groups, mean_distance, sizes, tested,
                      items_left_out, _note(sizes, tested))


def _check_spread(unit: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> None:
    """Identical vectors (to rounding) have no spread to compare: the same error as emb_anova."""
    n = len(codes)
    total = unit.sum(axis=0)
    sums = group_means(unit, codes) * sizes[:, None]
    check_spread(n - float(total @ total) / n, n - float(np.einsum("gk,gk->g", sums, sums) @ (1.0 / sizes)), n)
