"""The dispersion test: do the groups differ in spread about their centroids?

The spread of group g is W~_g = n_g / (n_g - 1) (1 - ||mu_g||^2), the mean squared distance to the group
centroid with betadisper's bias adjustment (vegan::betadisper(type = "centroid", bias.adjust = TRUE):
the mean of its squared distances), which for unit vectors is the U-statistic
W~_g = mean over pairs i != j of h_ij, h_ij = ||z_i - z_j||^2 / 2 = 1 - z_i.z_j, unbiased for
sigma_g^2 = E||z - m_g||^2 = 1 - ||m_g||^2.

Its variance, for n iid unit vectors with mean m and covariance S (Hoeffding decomposition, exact):
    Var(W~_g) = 4 a / n + 2 b / (n (n - 1)),   a = m'S m,   b = tr(S^2),
a from the items' own spread (on the sphere ||z - m||^2 = 1 - ||m||^2 - 2 (z - m).m, so 4a is the
variance of an item's squared distance to its true centre) and b from the noise of the estimated
centroid, which dominates with small groups in high dimension (uniform vectors: a = 0, b = 1/d).
a and b are estimated without bias from each group's inner products (b as in Chen and Qin 2010, Ann.
Statist. 38:808), pooled over the groups (weights n_g):
    Q2 = mean_{i != j} c_ij^2,  Q3 = mean_{i,j,k distinct} c_ij c_jk,  Q4 = mean_{i,j,k,l distinct} c_ij c_kl,
    a = Q3 - Q4,  b = Q2 - 2 Q3 + Q4          (c_ij = z_i.z_j; groups of 4 or more).
The statistic is the weighted between-group sum of squares of W~_g over its G - 1 degrees of freedom,
    F = sum_g (W~_g - W_bar)^2 / V_g / (G - 1),  V_g = 4 a / n_g + 2 b / (n_g (n_g - 1)),
W_bar the 1/V_g-weighted mean (about 1 under the null).

Why not chi-square, or permuting what betadisper permutes?  Each is wrong on unit vectors:
  * the chi-square reference holds for uniform vectors but not for clumped ones: small groups drawn
    from clusters give W~_g with heavy tails (too many rejections on clumped small groups);
  * permuting the distances' residuals (vegan's permutest) ignores that distances to an estimated
    centroid are correlated within a group, and permuting residual *vectors* (embsql before) builds
    permuted groups whose items are no longer unit vectors: far too few rejections with many small
    groups, too many on the example's vectors with shuffled labels.
The measured levels of each are in validation/calibration.json (dispersion.level, dispersion.level_chi2,
dispersion.level_old, dispersion.level_vegan), from validation/dispersion_validity.py.
So the reference is a permutation of vectors that keeps |z| = 1: each item is reflected (a Householder
reflection, an orthogonal map) so that its group's estimated location points along one common axis
(aligned_vectors); that removes the groups' differences in location and keeps each item's position about
its group's centre.  The location is the centroid of the other items of the group, shrunk towards the grand
mean by the share of SS_B the locations explain (location_share, an empirical-Bayes factor): near 1 when the
groups sit apart, 0 when SS_B is what equal locations give, where the reflections are the identity and the
permutation is of the items themselves (exact for exchangeable items; aligning by noisy centroids there made
the test conservative on three designs; validation/README.md).  The labels of the aligned vectors are then permuted, and each
permuted grouping re-estimates W~_g, a and b exactly as the observed one does (a studentised statistic:
the permutation supplies the tails, the re-estimated a and b the scale).

Groups with fewer than MIN_GROUP items are left out of the test (and reported): a and b need 4 items.

Two routes give the permuted groups' inner products, with the same F to rounding (choose_dispersion_method
picks by cost): coordinates regroups the n x d aligned vectors and multiplies each group's block
(sum_g min(n_g^2 d, n_g d^2) multiply-adds per permutation; groups of up to PAIR_SIZE items by their pairs'
products alone, n_g (n_g - 1) d / 2); gram reads only the within-group blocks of
their float64 Gram matrix, sum_g n_g^2 random reads per permutation.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from embsql.core.arguments import check_permutations, check_seed, check_stop_after
from embsql.core.permutation import (
    Design,
    PackedGram,
    PermutationTest,
    gather_threads,
    gram_dtype,
    one_blas_thread,
    over_threads,
    pseudo_f,
    sequential,
    size_classes,
)
from embsql.core.precision import check_unit_spread
from embsql.errors import InputError

MIN_GROUP = 4          # groups smaller than this are left out of the test (a and b need 4 items)
POLL_EVERY = 16        # permutations between calls of ``progress`` (it may stop the run), and per batch
DISPERSION_METHODS = ("gram", "coordinates")
GATHER_BYTES = 1 << 27      # gram route: at most this many bytes of gathered blocks per batch of permutations
CHUNK_BYTES = 1 << 21      # coordinates route: gathered rows per block product, as float64 (stays in cache)
ROW_CHUNK = 8192            # rows per float64 temporary of the row-wise steps (no n x d temporary)
PAIR_SIZE = 7               # groups of up to this many items: explicit pair products (numpy's stacked tiny
                            # matrix products were 1.2-1.6x slower at 4-7 items on one thread, faster from 8)
PRODUCT_ROWS = 4096         # rows per block of a large group's d x d product (one large product has crashed OpenBLAS)


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
    """mu_g for codes 0..G-1 (every code present), by sorted segment sums in float64 (rows already sorted
    by code, as in canonical order, are summed where they are: no copy of the rows)."""
    if np.all(codes[1:] >= codes[:-1]):
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        if unit.dtype == np.float64:
            sums = np.add.reduceat(unit, starts, axis=0)
        else:      # float32 rows: summed in float64 ROW_CHUNK rows at a time (reduceat would widen them all)
            sums = np.zeros((len(starts), unit.shape[1]))
            for low in range(0, len(unit), ROW_CHUNK):
                chunk = codes[low:low + ROW_CHUNK]
                local = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1]])
                sums[np.searchsorted(starts, low + local, side="right") - 1] += np.add.reduceat(
                    np.asarray(unit[low:low + ROW_CHUNK], dtype=np.float64), local, axis=0)
    else:
        order = np.argsort(codes, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
        sums = np.add.reduceat(unit[order], starts, axis=0, dtype=np.float64)
    return sums / np.diff(np.r_[starts, len(codes)])[:, None]


def centroid_distances(unit: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """||z_i - mu_g(i)|| for every row (codes 0..G-1, every code present), ROW_CHUNK rows at a time."""
    means = group_means(unit, codes)
    out = np.empty(len(unit))
    for low in range(0, len(unit), ROW_CHUNK):
        residual = unit[low:low + ROW_CHUNK] - means[codes[low:low + ROW_CHUNK]]
        out[low:low + ROW_CHUNK] = np.sqrt(np.einsum("ij,ij->i", residual, residual))
    return out


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
    return float(pseudo_f(between, within, n, groups))


@dataclass(frozen=True)
class PairSums:
    """Per group (last axis): n_g, and over its inner products c_ij (i != j): s1 = sum c_ij,
    r2 = sum_i (sum_{j != i} c_ij)^2, f2 = sum c_ij^2.  Leading axes: permutations, if any."""

    sizes: np.ndarray
    s1: np.ndarray
    r2: np.ndarray
    f2: np.ndarray


def block_sums(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """s1, r2, f2 of Gram blocks (..., s, s), the diagonal left out."""
    diagonal = np.einsum("...ii->...i", blocks)
    rows = blocks.sum(axis=-1) - diagonal
    return (rows.sum(axis=-1), np.einsum("...i,...i->...", rows, rows),
            np.einsum("...ij,...ij->...", blocks, blocks) - np.einsum("...i,...i->...", diagonal, diagonal))


def pair_products(block: np.ndarray) -> np.ndarray:
    """The Gram blocks (groups, s, s) of groups stacked position-major, ``block[p, g]`` the p-th of the s items
    of group g, with a zero diagonal: each pair's inner product by one row-wise product per pair of positions
    (only the half above the diagonal is computed; group by group the same bits whatever the groups beside it).
    float32 rows are summed in float64, from a float64 copy of the block (faster than einsum's own cast on
    blocks that stay in cache)."""
    block = block.astype(np.float64, copy=False)
    size = len(block)
    pairs = np.zeros((block.shape[1], size, size))
    for p in range(size - 1):
        pairs[:, p, p + 1:] = np.einsum("gd,qgd->gq", block[p], block[p + 1:])
    return pairs + pairs.transpose(0, 2, 1)


def _large_group_sums(z: np.ndarray) -> tuple[float, float, float]:
    """s1, r2, f2 of one group with more items than dimensions: sum_{i,j} c_ij^2 = ||Z'Z||_F^2 (d x d)."""
    z = np.asarray(z, dtype=np.float64)
    total = z.sum(axis=0)
    squares = np.einsum("ij,ij->i", z, z)
    rows = z @ total - squares
    cross = np.zeros((z.shape[1], z.shape[1]))
    for low in range(0, len(z), PRODUCT_ROWS):
        cross += z[low:low + PRODUCT_ROWS].T @ z[low:low + PRODUCT_ROWS]
    return float(rows.sum()), float(rows @ rows), float(np.sum(cross * cross) - squares @ squares)


class GroupBlocks:
    """The groups of ``codes`` (0..groups-1, each of 2 or more items) by size class, taken once, so that
    the PairSums of many regroupings of n x d vectors cost only their block products (groups of up to
    PAIR_SIZE items: their pairs' inner products alone, pair_products).

    ``sums(vectors, perm)``: s1, r2 and f2 (3 x groups) of the groups of ``vectors[perm]`` (row i of the
    regrouped vectors is ``vectors[perm[i]]``), each group's block gathered straight from ``vectors``
    (one copy, not two) a few groups at a time (CHUNK_BYTES, so the block stays in cache while it is
    multiplied).  Each group's numbers are computed by the same operations whatever the chunk."""

    def __init__(self, codes: np.ndarray, groups: int, dim: int):
        self.groups, self.dim = groups, dim
        self.sizes = np.bincount(codes, minlength=groups)
        self.classes = size_classes(codes)

    def sums(self, vectors: np.ndarray, perm: np.ndarray | None = None) -> np.ndarray:
        out = np.zeros((3, self.groups))
        for size, chosen, members in self.classes:
            rows = members if perm is None else perm[members]
            if size > self.dim:
                out[:, chosen] = np.array([_large_group_sums(vectors[group]) for group in rows]).T
                continue
            step = max(1, CHUNK_BYTES // (size * self.dim * 8))     # float32 rows too: counted as their float64 copy
            for low in range(0, len(chosen), step):
                if size <= PAIR_SIZE:     # position-major (size, groups, d): row p of every group contiguous
                    out[:, chosen[low:low + step]] = block_sums(pair_products(vectors[rows[low:low + step].T]))
                    continue
                block = vectors[rows[low:low + step]].astype(np.float64, copy=False)   # float32 rows: float64 sums
                out[:, chosen[low:low + step]] = block_sums(np.matmul(block, block.transpose(0, 2, 1)))
        return out


def pair_sums(unit: np.ndarray, codes: np.ndarray, groups: int) -> PairSums:
    """PairSums of the groups of ``unit`` by ``codes`` (0..groups-1, each of 2 or more items)."""
    blocks = GroupBlocks(codes, groups, unit.shape[1])
    with one_blas_thread():
        return PairSums(blocks.sizes, *blocks.sums(unit))


def spread_components(p: PairSums) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """W~_g per group, and the pooled a = m'S m and b = tr(S^2) (clipped at 0) of the module docstring."""
    n = p.sizes.astype(float)
    spread = 1.0 - p.s1 / (n * (n - 1))
    q2 = p.f2 / (n * (n - 1))
    q3 = (p.r2 - p.f2) / (n * (n - 1) * (n - 2))
    q4 = (p.s1 * p.s1 - 4.0 * p.r2 + 2.0 * p.f2) / (n * (n - 1) * (n - 2) * (n - 3))
    weights = n / n.sum()
    a = np.maximum(np.sum(weights * (q3 - q4), axis=-1), 0.0)
    b = np.maximum(np.sum(weights * (q2 - 2.0 * q3 + q4), axis=-1), 0.0)
    return spread, a, b


def spread_f(p: PairSums) -> np.ndarray:
    """The statistic F = sum_g (W~_g - W_bar)^2 / V_g / (G - 1) (one per leading index of ``p``).

    When every W~_g is the same (to rounding) F = 0; when V_g = 0 with unequal W~_g, inf."""
    spread, a, b = spread_components(p)
    n = p.sizes.astype(float)
    variance = 4.0 * a[..., None] / n + 2.0 * b[..., None] / (n * (n - 1))
    scale = np.max(np.abs(spread), axis=-1, initial=1.0)
    flat = np.ptp(spread, axis=-1) <= 1e-12 * scale
    with np.errstate(divide="ignore", invalid="ignore"):
        weights = 1.0 / variance
        centre = np.sum(weights * spread, axis=-1, keepdims=True) / np.sum(weights, axis=-1, keepdims=True)
        f = np.sum(weights * (spread - centre) ** 2, axis=-1) / (spread.shape[-1] - 1)
    f = np.where(np.all(variance > 0, axis=-1), f, np.inf)
    return np.where(flat, 0.0, f)


def location_share(unit: np.ndarray, codes: np.ndarray) -> float:
    """kappa in [0, 1]: the share of the between-group sum of squares SS_B that the groups' locations explain.

    With equal locations E[SS_B] = sum_g (1 - n_g / n) sigma_g^2 whatever the spreads (sigma_g^2 estimated
    without bias by W~_g), so kappa = max(0, 1 - sum_g (1 - n_g / n) W~_g / SS_B): the empirical-Bayes factor
    by which a group's centroid deviation is shrunk towards the grand mean (codes 0..G-1, each of 2 or more)."""
    sizes = np.bincount(codes)
    means = group_means(unit, codes)
    between = float(sizes @ np.sum((means - unit.mean(axis=0, dtype=np.float64)) ** 2, axis=1))
    spread, _, _ = spread_components(pair_sums(unit, codes, len(sizes)))
    expected = float(np.sum((1.0 - sizes / len(codes)) * spread))
    return max(0.0, 1.0 - expected / between) if between > 0 else 0.0


def aligned_vectors(unit: np.ndarray, codes: np.ndarray, share: float | None = None) -> np.ndarray:
    """Each item reflected (I - 2 v v', an orthogonal map: |z| = 1 kept) so that its group's estimated location
    points along the data's mean direction t: the groups' locations removed, each item's position about its
    group's centre kept.

    The location is estimated from the OTHER items of the group, shrunk towards the grand mean m by
    ``share`` (location_share when None): u_i = m + share (mean of the others - m).  Leaving the item out
    matters: a group's own centroid leans towards its items by 1/n_g, and reflecting every item by it would
    line up that lean, a common location the data do not have.  The shrinkage matters where locations are
    equal: the others' centroid of a small group is then mostly noise, and aligning by it mixes a group's
    composition into its location (too few rejections at 5% on three such designs without it;
    validation/README.md has the figures).  At share 0 every reflection is the identity and the test is a plain
    label permutation, exact when the items are exchangeable."""
    if share is None:
        share = location_share(unit, codes)
    sizes = np.bincount(codes)
    grand = unit.mean(axis=0, dtype=np.float64)
    length = float(np.linalg.norm(grand))
    target = grand / length if length > 0 else np.eye(unit.shape[1])[0]
    totals = group_means(unit, codes) * sizes[:, None]
    out = np.empty_like(unit)      # in unit's dtype, computed in float64 ROW_CHUNK rows at a time
    for low in range(0, len(unit), ROW_CHUNK):
        rows, chunk = np.asarray(unit[low:low + ROW_CHUNK], dtype=np.float64), codes[low:low + ROW_CHUNK]
        others = totals[chunk] - rows
        location = grand + share * (others / (sizes[chunk] - 1.0)[:, None] - grand)
        lengths = np.linalg.norm(location, axis=1, keepdims=True)
        v = np.divide(location, lengths, out=np.zeros_like(location), where=lengths > 0) - target
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        # a location without a direction (sum 0), or already on the axis: the item is left as it is
        v = np.divide(v, norms, out=np.zeros_like(v), where=(norms > 1e-12) & (lengths > 0))
        out[low:low + ROW_CHUNK] = rows - 2.0 * np.einsum("ij,ij->i", rows, v)[:, None] * v
    return out


class CoordinateSums:
    """PairSums of permuted groups by regrouping the aligned vectors (GroupBlocks: the size classes taken
    once), the permutations of a batch shared between threads (numpy's gathers and block products
    release the GIL); each permutation's sums are computed alone, so the threads do not change them."""

    def __init__(self, vectors: np.ndarray, codes: np.ndarray, groups: int):
        self.vectors, self.blocks = vectors, GroupBlocks(codes, groups, vectors.shape[1])

    def _sums(self, stacked: np.ndarray) -> np.ndarray:
        return np.stack([self.blocks.sums(self.vectors, perm) for perm in stacked], axis=1)

    def batch(self, perms: np.ndarray) -> PairSums:
        threads = min(gather_threads(), len(perms))
        with one_blas_thread():
            if threads <= 1:
                done = self._sums(perms)
            else:
                with ThreadPoolExecutor(threads) as pool:
                    done = np.concatenate(list(pool.map(self._sums, np.array_split(perms, threads))), axis=1)
        return PairSums(self.blocks.sizes, *done)


class GramSums:
    """The same sums from the aligned vectors' float64 Gram matrix (PackedGram): each permuted group's
    n_g x n_g block is gathered, sum_g n_g^2 random reads per permutation (threads share them, over_threads)."""

    def __init__(self, vectors: np.ndarray, codes: np.ndarray, groups: int):
        self.gram, self.groups = PackedGram(vectors, np.float64), groups
        self.sizes = np.bincount(codes, minlength=groups)
        self.classes = [(chosen, members) for _, chosen, members in size_classes(codes)]
        self.reads = int(np.sum(self.sizes.astype(np.int64) ** 2))

    def _sums(self, stacked: np.ndarray) -> np.ndarray:
        out = np.empty((3, len(stacked), self.groups))
        for chosen, members in self.classes:
            items = stacked[:, members]                  # item perm[i] joins row i's group
            first, second = items[..., :, None], items[..., None, :]
            index = self.gram.base[np.minimum(first, second)]
            index += np.maximum(first, second)
            out[:, :, chosen] = block_sums(np.take(self.gram.values, index))
        return out

    def batch(self, perms: np.ndarray) -> PairSums:
        done = np.concatenate(over_threads(self._sums, perms, len(perms) * self.reads), axis=1)
        return PairSums(self.sizes, *done)


# Relative costs on this machine, in units of one multiply-add of a batched block product of groups of
# BLOCK_UNIT_SIZE (bench/dispersion_routes.py, BLAS on one thread as the kernels hold it; tests/core/test_dispersion_methods.py
# pins the choice): a random read of the float64 Gram matrix, and a multiply-add of the product building it.
# Smaller blocks cost more per multiply-add (numpy's stacked products of tiny matrices): (BLOCK_UNIT_SIZE / n_g)^0.8
# fits 9.5, 1.1 and 0.5 ns per multiply-add measured at groups of 4, 50 and 200.
DISPERSION_READ = 450.0
DISPERSION_MAC = 0.6
BLOCK_UNIT_SIZE = 50
SMALL_BLOCK_POWER = 0.8


def choose_dispersion_method(n: int, dim: int, codes: np.ndarray, permutations: int) -> str:
    """gram when the float64 Gram matrix of the aligned vectors fits where PERMANOVA's pairs matrix does, a batch's
    gathered blocks fit GATHER_BYTES, and building it (n^2 d / 2 multiply-adds) plus sum_g n_g^2 random reads per
    permutation cost less than the block products, sum_g min(n_g^2 d, n_g d^2) per permutation; else coordinates."""
    costs = dispersion_costs(n, dim, codes, permutations)
    return "gram" if "gram" in costs and costs["gram"] < costs["coordinates"] else "coordinates"


def dispersion_costs(n: int, dim: int, codes: np.ndarray, permutations: int) -> dict[str, float]:
    """What choose_dispersion_method weighs, in multiply-adds of a block product: each route's cost ("gram" only
    where it fits).  The cheaper one is the test's cost (a report's progress bar estimates with it)."""
    sizes = np.bincount(codes).astype(float)
    squares = float(np.sum(sizes ** 2))
    small = np.maximum(1.0, BLOCK_UNIT_SIZE / sizes) ** SMALL_BLOCK_POWER
    costs = {"coordinates": permutations * float(np.sum(small * np.minimum(sizes * sizes * dim, sizes * dim * dim)))}
    # R's packed float64 triangle takes n^2 * 4 bytes, what PERMANOVA's budget counts for its float32 matrix
    if gram_dtype(n) is not None and POLL_EVERY * squares * 8 <= GATHER_BYTES:
        costs["gram"] = DISPERSION_MAC * n * n * dim / 2 + permutations * DISPERSION_READ * squares
    return costs


class AlignedPermutations:
    """F of the permuted groupings of the aligned vectors (aligned_vectors), by either route."""

    def __init__(self, unit: np.ndarray, codes: np.ndarray, groups: int, method: str, permutations: int):
        vectors = aligned_vectors(unit, codes)
        if method == "auto":
            method = choose_dispersion_method(len(codes), unit.shape[1], codes, permutations)
        self.method = method
        self.kernel: CoordinateSums | GramSums = (
            GramSums(vectors, codes, groups) if method == "gram" else CoordinateSums(vectors, codes, groups))

    def batch(self, perms: list) -> np.ndarray:
        return spread_f(self.kernel.batch(np.stack(perms)))


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
                    progress: Callable[[int, int], None] | None = None, method: str = "auto",
                    stop_after: int | None = None) -> Dispersion:
    """F of the groups' spreads W~_g and its p-value from permuted aligned vectors (rows in canonical order).

    ``method``: how the permuted groups' inner products are computed, 'gram' or 'coordinates' (the same F
    to rounding), or 'auto' (choose_dispersion_method).

    ``progress(done, total)`` is called every POLL_EVERY permutations; it may raise to stop the run.
    ``stop_after``: stop early by Besag and Clifford's rule (core.permutation.sequential).
    """
    check_permutations(permutations)
    check_seed(seed)
    check_stop_after(stop_after, permutations)
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
    tested_unit = unit if keep.all() else unit[keep]      # one copy at most (n x d: 1.5 GB at 10^6 rows in float32)
    f_observed = float(spread_f(pair_sums(tested_unit, codes, groups)))
    permuted_f = AlignedPermutations(tested_unit, codes, groups, method, permutations)
    test = sequential(f_observed, permuted_f.batch, kept, permutations, seed, POLL_EVERY, progress, "aligned vectors",
                      stop_after)
    return Dispersion(test, groups, mean_distance, sizes, tested, items_left_out, _note(sizes, tested))


def _check_spread(unit: np.ndarray, codes: np.ndarray, sizes: np.ndarray) -> None:
    """Identical vectors (to rounding) have no spread to compare: the same error as emb_anova."""
    check_unit_spread(unit, codes)
