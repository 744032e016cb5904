"""Permutation tests of the pseudo-F: PERMANOVA on unit vectors or on any
dissimilarity, with labels permuted freely or only within strata.

Two statistics: the pseudo-F (Anderson 2001; the default) and the Welch-type W*_d (Hamidi,
Wallace, Vinzant and Alekseyenko 2019; for two groups Alekseyenko's 2016 Tw^2), which weights each
group by n_g / s_g^2 instead of pooling the within spread, so that a small group with a larger
spread does not inflate the statistic (the Behrens-Fisher weakness of pseudo-F).  W*_d's p-value
comes by default from a group-wise wild bootstrap (embsql.core.wild_bootstrap; see default_null).

Two ways to get SS_W for permuted labels, chosen by cost (bench/README.md has the figures):
  * pairs: from a precomputed n x n matrix (the Gram matrix of unit vectors, or squared
    distances), SS_W needs only the within-group pairs, sum_g n_g (n_g - 1) / 2 per permutation;
  * coordinates: regroup the unit vectors and sum them, n * d per permutation, no n x n matrix.
Rows are first put in a canonical order (strata, label, vector bytes), so a seed gives the same
p-value whatever order the database returned the rows in.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from embsql.core.arguments import check_permutations, check_seed, check_stop_after
from embsql.core.design import check_groups
from embsql.core.labels import Labels
from embsql.core.precision import check_total_spread, check_unit_spread
from embsql.core.sums import add_runs
from embsql.core.wild_bootstrap import bootstrap_welch, cells, residual_gram, residuals
from embsql.errors import DesignError, InputError

# vegan's adonis2 counts a permuted F as "at least as large" within sqrt(machine epsilon)
TIE_TOLERANCE = float(np.sqrt(np.finfo(float).eps))
# The pairs method keeps an n x n Gram matrix: float64 up to 1 GB, float32 up to 2 GB (then
# each permuted F carries a relative error near 1e-7, far below any difference that decides a
# count; the observed F is computed the same way, so ties stay ties).
# Past F64_GRAM_MAX_N items float32 is used anyway: it halves the time to build the matrix and
# the memory each permutation reads, and with thousands of items a permutation that ties the
# observed grouping exactly (where float32 rounding could matter) has a negligible chance.
GRAM_BYTES: dict[type[np.float64] | type[np.float32], int] = {np.float64: 1 << 30, np.float32: 1 << 31}
F64_GRAM_MAX_N = 2000
BLOCK_ROWS = 2048             # rows per block when building a Gram matrix (bounds memory; see README)
BATCH_PERMUTATIONS = 64       # permutations per matrix product when there are few groups
FEW_GROUPS = 32
F32_SUM_MAX_GROUP = 1024      # the coordinates route sums groups up to this size in float32 (past F64_GRAM_MAX_N items)
GATHER_THREADS = 4           # threads sharing a batch's random reads of the Gram matrix (at most the cores)
MIN_THREADED_READS = 1 << 18  # fewer reads per batch than this: one thread (starting threads costs more)
STATISTICS = ("pseudo-f", "welch")
# how the p-value's null distribution is drawn: labels permuted, or (W*_d) the group-wise wild bootstrap
NULLS = ("permutation", "wild bootstrap")
MIN_BOOTSTRAP_GROUP = 6   # smallest cell W*_d's default test keeps (smaller ones are left out: welch_left_out)


@dataclass(frozen=True)
class PermutationTest:
    """Observed pseudo-F, its permutation p-value and how it was obtained."""

    statistic: float | None       # None: no test (fewer than two groups left)
    p_value: float | None
    permutations: int
    exceedances: int
    method: str
    null: str = "permutation"
    groups_left_out: int = 0      # W*_d by default: cells under MIN_BOOTSTRAP_GROUP items are not tested
    items_left_out: int = 0
    note: str | None = None


@dataclass(frozen=True)
class Design:
    """Labels and strata as integer codes, in the canonical row order."""

    codes: np.ndarray
    strata: np.ndarray
    groups: int

    @property
    def n(self) -> int:
        return len(self.codes)


def canonical_order(labels: Labels, strata: Labels | None = None, data: np.ndarray | None = None,
                    ids: Labels | None = None) -> NDArray[np.intp]:
    """Row order sorted by stratum, then label, then item id (if given) or the bytes of the row's
    data (vectors: equal vectors are interchangeable, so their order does not matter)."""
    labels = np.asarray(labels, dtype=object).astype(str)
    keys = [labels] if strata is None else [labels, np.asarray(strata, dtype=object).astype(str)]
    order = np.arange(len(labels))
    if ids is not None:
        order = np.argsort(np.asarray(ids, dtype=object).astype(str), kind="stable")
    elif data is not None:
        rows = np.ascontiguousarray(data).view(np.dtype((np.void, data.dtype.itemsize * data.shape[1])))[:, 0]
        order = np.argsort(rows, kind="stable")
    return order[np.lexsort([k[order] for k in keys])]


def design(labels: Labels, strata: Labels | None = None) -> Design:
    """Integer codes for labels (and strata) that are already in canonical order."""
    names, codes = np.unique(np.asarray(labels, dtype=object).astype(str), return_inverse=True)
    if strata is None:
        strata_codes = np.zeros(len(codes), dtype=np.int64)
    else:
        strata = np.asarray(strata, dtype=object)
        if any(s is None for s in strata):
            raise InputError("the strata column has a NULL value; every row needs a stratum")
        strata_codes = np.unique(strata.astype(str), return_inverse=True)[1]
    groups = len(names)
    check_groups(groups, len(codes), needs="the permutation test")
    return Design(codes.astype(np.int64), strata_codes.astype(np.int64), groups)


def shuffles(design: Design, permutations: int, seed: int) -> Iterator[NDArray[np.int64]]:
    """Yield row orders: each shuffles rows within strata; labels stay with positions."""
    rng = np.random.default_rng(seed)
    segments = np.split(np.arange(design.n), np.flatnonzero(np.diff(design.strata)) + 1)
    if not np.all(np.diff(design.strata) >= 0):
        raise ValueError("rows must be sorted by stratum (use canonical_order)")
    for _ in range(permutations):
        yield np.concatenate([rng.permutation(segment) for segment in segments]) if len(segments) > 1 \
            else rng.permutation(design.n)


def pseudo_f(ss_b: ArrayLike, ss_w: ArrayLike, n: int, groups: int) -> NDArray[np.float64]:
    """(SS_B / (G - 1)) / (SS_W / (n - G)), the one definition of the (pseudo-)F; infinite where SS_W = 0
    (every group's items coincide).  Elementwise over arrays of permuted sums of squares."""
    ss_b, ss_w = np.asarray(ss_b, dtype=float), np.asarray(ss_w, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ss_w > 0, (ss_b / (groups - 1)) / (ss_w / (n - groups)), np.inf)


def reaches(f_observed: float, f_permuted: np.ndarray) -> NDArray[np.bool_]:
    """Which permuted statistics are at least the observed one (ties within TIE_TOLERANCE count)."""
    f_permuted = np.asarray(f_permuted, dtype=np.float64)
    if np.isinf(f_observed):      # SS_W = 0: only another perfect separation ties it
        return np.isinf(f_permuted)
    return f_permuted >= f_observed - TIE_TOLERANCE * max(1.0, abs(f_observed))


def stop_index(f_observed: float, f_permuted: np.ndarray, stop_after: int | None) -> int | None:
    """Besag and Clifford's (1991) sequential rule: the number of permutations after which ``stop_after``
    of them have reached the observed statistic, or None (not yet, or no sequential stopping)."""
    if stop_after is None:
        return None
    hits = np.flatnonzero(reaches(f_observed, f_permuted))
    return int(hits[stop_after - 1]) + 1 if len(hits) >= stop_after else None


def permutation_result(f_observed: float, f_permuted: NDArray[np.float64], method: str,
                       stop_after: int | None = None) -> PermutationTest:
    """p = (b + 1) / (B + 1) from B permuted statistics, b of them reaching the observed one.

    With ``stop_after = h`` the permutations were drawn one by one and stopped at the h-th that reached
    the observed statistic (``f_permuted`` ends there): then p = h / L after L permutations, which is
    still a valid p-value (Besag and Clifford 1991), and L is the number reported."""
    b = int(np.sum(reaches(f_observed, f_permuted)))
    if stop_after is not None and b >= stop_after:
        return PermutationTest(float(f_observed), stop_after / len(f_permuted), len(f_permuted), b, method)
    p_value = (b + 1) / (len(f_permuted) + 1)
    return PermutationTest(float(f_observed), p_value, len(f_permuted), b, method)


def size_classes(codes: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Groups of one size together: (size, their codes, their rows: one row of ``size`` items per group).
    Thousands of paraphrase sets of 4 then take one numpy step, not one each."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    out = []
    for size in np.unique(sizes[sizes > 0]):
        chosen = np.flatnonzero(sizes == size)
        out.append((int(size), chosen, order[starts[chosen][:, None] + np.arange(size)]))
    return out


def within_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair i < j of rows with the same code, group by group, with weight 1 / n_g."""
    groups, firsts, seconds, weights = [], [], [], []
    for size, chosen, members in size_classes(codes):
        if size < 2:
            continue
        i, j = np.triu_indices(size, 1)
        groups.append(np.repeat(chosen, len(i)))
        firsts.append(members[:, i].ravel())
        seconds.append(members[:, j].ravel())
        weights.append(np.full(len(chosen) * len(i), 1.0 / size))
    if not groups:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    by_group = np.argsort(np.concatenate(groups), kind="stable")
    return tuple(np.concatenate(part)[by_group] for part in (firsts, seconds, weights))  # type: ignore[return-value]


class PackedGram:
    """The upper triangle of Z Z^T, stored as row bands: band k holds rows [low_k, low_k + BLOCK_ROWS) from
    column low_k on, computed by one matrix product written in place (no n x n temporary, no transposed
    copy, about half the memory of the full matrix and so half the pages the kernel must hand over).
    Bands also bound each product's size: one large float64 product has crashed OpenBLAS here.

    Entry (a, b) with a <= b is ``values[base[a] + b]``; ``base`` folds the band's offset and width in.
    """

    def __init__(self, unit: NDArray[np.floating], dtype: type[np.float64] | type[np.float32] = np.float32) -> None:
        z = np.ascontiguousarray(unit, dtype=dtype)
        n = len(z)
        lows = np.arange(0, n, BLOCK_ROWS)
        heights, widths = np.minimum(BLOCK_ROWS, n - lows), n - lows
        offsets = np.r_[0, np.cumsum(heights * widths)]
        self.values = np.empty(int(offsets[-1]), dtype=dtype)
        for low, height, width, offset in zip(lows, heights, widths, offsets[:-1]):
            band = self.values[offset:offset + height * width].reshape(height, width)
            np.matmul(z[low:low + height], z[low:].T, out=band)
        rows = np.arange(n)
        band_of = rows // BLOCK_ROWS
        self.base = offsets[band_of] + (rows - lows[band_of]) * widths[band_of] - lows[band_of]


def gather_threads() -> int:
    return max(1, min(GATHER_THREADS, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                      else (os.cpu_count() or 1)))


def over_threads(function: Callable[[NDArray[np.int64]], NDArray[np.float64]], stacked: NDArray[np.int64],
                 reads: int) -> list[NDArray[np.float64]]:
    """``function`` on row slices of ``stacked`` (one batch of permutations), one slice per thread when
    the batch makes at least MIN_THREADED_READS random reads of a Gram matrix: the reads are cache
    misses, so threads keep more in flight (numpy releases the GIL in them).  The slices' results, in order."""
    threads = gather_threads() if reads >= MIN_THREADED_READS else 1
    threads = min(threads, len(stacked))
    if threads <= 1:
        return [function(stacked)]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(function, np.array_split(stacked, threads)))


@cache
def _blas_controller() -> object:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread() -> AbstractContextManager[object]:
    """BLAS on one thread within the block (``with one_blas_thread(): ...``), for kernels that make many
    small matrix products and share them between threads of their own.  OpenBLAS otherwise splits each
    small product over its own threads, which wait for work by spinning: on 2 cores under a load of 7 a
    50 x 384 x 50 product took 16x longer than on one thread (0.28 s against 0.017 s per 100 of them)."""
    return _blas_controller().limit(limits=1, user_api="blas")  # type: ignore[attr-defined,no-any-return]


class _PairSums:
    """sum_g (1/n_g) sum_{i<j in g} M[perm i, perm j] for a symmetric matrix M whose entry (a, b), a <= b,
    is ``values[base[a] + b]`` (a PackedGram's upper triangle, or a full matrix with base = n * row)."""

    def __init__(self, values: np.ndarray, base: NDArray[np.int64], d: Design) -> None:
        self.values, self.base = values, base
        self.i, self.j, self.w = within_pairs(d.codes)

    @classmethod
    def of_matrix(cls, matrix: np.ndarray, d: Design) -> _PairSums:
        matrix = np.ascontiguousarray(matrix)
        return cls(matrix.reshape(-1), np.arange(len(matrix), dtype=np.int64) * len(matrix), d)

    def __call__(self, perm: NDArray[np.int64]) -> float:
        return float(self.batch([perm])[0])

    def _sums(self, stacked: np.ndarray) -> np.ndarray:
        a, b = stacked[:, self.i], stacked[:, self.j]
        index = self.base[np.minimum(a, b)]
        index += np.maximum(a, b, out=b)
        # accumulate in float64 whatever the matrix holds
        return np.take(self.values, index).astype(np.float64) @ self.w

    def batch(self, perms: Sequence[NDArray[np.int64]]) -> NDArray[np.float64]:
        """Many permutations with one gather per thread (over_threads)."""
        stacked = np.stack(perms)
        return np.concatenate(over_threads(self._sums, stacked, len(stacked) * len(self.i)))


class _GramWithin:
    """SS_W from the Gram matrix: SS_W = n - sum_g ||s_g||^2 / n_g and, for unit vectors,
    ||s_g||^2 = n_g + 2 sum_{i<j in g} z_i.z_j, so SS_W = n - G - 2 (pair sums)."""

    def __init__(self, packed: PackedGram, d: Design) -> None:
        self.pairs, self.constant = _PairSums(packed.values, packed.base, d), d.n - d.groups

    def __call__(self, perm: NDArray[np.int64]) -> float:
        return self.constant - 2.0 * self.pairs(perm)

    def batch(self, perms: Sequence[NDArray[np.int64]]) -> NDArray[np.float64]:
        return self.constant - 2.0 * self.pairs.batch(perms).astype(np.float64)


class CoordinateSums:
    """SS_W = n - sum_g ||s_g||^2 / n_g for permuted rows, regrouping the vectors themselves.

    Rows are taken in blocks of whole groups (about BLOCK_ROWS rows), so the gather, the
    segment sums and the squared norms of one block stay in cache.
    """

    def __init__(self, unit: NDArray[np.float64], d: Design) -> None:
        sizes = np.bincount(d.codes)
        # One group's sum in float32 carries a relative error near 1e-7 sqrt(n_g); with thousands of items
        # a tie with the observed grouping has a negligible chance (as for the float32 Gram matrix), and the
        # gathers, which are the cost, read half the bytes: 2.6x faster at n = 10,000 (bench/permanova.py)
        many = d.n > F64_GRAM_MAX_N and sizes.max() <= F32_SUM_MAX_GROUP and len(sizes) > FEW_GROUPS
        self.unit, self.n = (unit.astype(np.float32, copy=False) if many else unit), d.n
        order = np.argsort(d.codes, kind="stable")
        # without strata the canonical order sorts the labels already: no gather of each permutation then
        self.order = None if np.array_equal(order, np.arange(d.n)) else order
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        # cut between groups, at the first group start past each multiple of BLOCK_ROWS
        cuts = np.unique(np.r_[np.r_[starts, d.n][np.searchsorted(starts, np.arange(0, d.n, BLOCK_ROWS))], d.n])
        self.blocks = [(low, high, starts[(starts >= low) & (starts < high)] - low,
                        1.0 / sizes[(starts >= low) & (starts < high)])
                       for low, high in zip(cuts[:-1], cuts[1:])]

        # equal group sizes (paraphrase sets of 4, say): a reshape sums them faster still than add_runs
        self.size = int(sizes[0]) if np.all(sizes == sizes[0]) else None
        self.codes, self.inverse_sizes = d.codes, 1.0 / sizes
        if len(sizes) > FEW_GROUPS:   # many groups: one permutation at a time, a batch's shared between threads
            self.batch = self._each  # type: ignore[method-assign]
            self.batch_size = POLL_BLOCK

    def batch(self, perms: Sequence[NDArray[np.int64]]) -> NDArray[np.float64]:
        """Few groups: the group sums of many permutations as one matrix product (BLAS), with a
        0/1 matrix whose row (b, g) marks the items that permutation b puts in group g."""
        groups = len(self.inverse_sizes)
        indicator = np.zeros((len(perms) * groups, self.n))
        for b, perm in enumerate(perms):
            indicator[b * groups + self.codes, perm] = 1.0   # item perm[i] takes the label of row i
        sums = (indicator @ self.unit).reshape(len(perms), groups, -1)
        return self.n - np.einsum("bgk,bgk->bg", sums, sums) @ self.inverse_sizes

    def _each(self, perms: Sequence[NDArray[np.int64]]) -> NDArray[np.float64]:
        """SS_W of each permutation alone (__call__), the permutations shared between threads: the gathers and
        sums release the GIL, and each permutation's figure is computed as it is on one thread."""
        threads = min(gather_threads(), len(perms))
        if threads <= 1:
            return np.array([self(perm) for perm in perms])
        with ThreadPoolExecutor(threads) as pool:
            return np.array(list(pool.map(self, perms)))

    def __call__(self, perm: NDArray[np.int64]) -> float:
        rows = perm if self.order is None else perm[self.order]
        between = 0.0
        if self.size is not None:
            step = max(1, BLOCK_ROWS // self.size) * self.size   # whole groups per block
            for low in range(0, self.n, step):
                sums = self.unit[rows[low:low + step]].reshape(-1, self.size, self.unit.shape[1]).sum(axis=1)
                between += (float(np.einsum("gk,gk->", sums, sums)) if sums.dtype == np.float64
                            else float(np.sum(self._norms(sums)))) / self.size
            return self.n - between
        for low, high, local_starts, inverse_sizes in self.blocks:
            sums = add_runs(self.unit[rows[low:high]], local_starts)
            between += float(self._norms(sums) @ inverse_sizes)
        return self.n - between

    @staticmethod
    def _norms(sums: np.ndarray) -> np.ndarray:
        """||s_g||^2 of each group, in float64 for float64 sums.  Float32 sums keep float32 for the 384 or so
        products of one group (relative error near 1e-7 sqrt(d), the size of the sums' own rounding) and the
        groups are added in float64: converting every sum to float64 first cost a quarter of the gather."""
        if sums.dtype == np.float32:
            return np.einsum("gk,gk->g", sums, sums).astype(np.float64)
        return np.einsum("gk,gk->g", sums, sums)


POLL_BLOCK = 16   # permutations between calls of ``progress`` without a batch (it may stop the run)


def _run(statistic_of: Callable[[NDArray[np.int64]], float],
         finish: Callable[[NDArray[np.float64]], NDArray[np.float64]], d: Design, permutations: int, seed: int,
         progress: Callable[[int, int], None] | None, method: str, stop_after: int | None = None) -> PermutationTest:
    """``statistic_of(perm)`` gives a raw value (SS_W, or the statistic itself), ``finish`` the statistic.

    ``progress(done, total)`` is called after every block (a fraction of a second): besides a
    progress bar it is how a caller stops the run (by raising), e.g. on an interrupt.
    """
    f_observed = float(finish(np.asarray(statistic_of(np.arange(d.n)), dtype=np.float64)))
    batch = getattr(statistic_of, "batch", None)
    step = getattr(statistic_of, "batch_size", BATCH_PERMUTATIONS) if batch is not None else POLL_BLOCK

    def values(perms: list[NDArray[np.int64]]) -> NDArray[np.float64]:
        raw = batch(perms) if batch is not None else np.array([statistic_of(p) for p in perms])
        return finish(np.asarray(raw, dtype=np.float64))

    return sequential(f_observed, values, d, permutations, seed, step, progress, method, stop_after)


def sequential(f_observed: float, values: Callable[[list[NDArray[np.int64]]], NDArray[np.float64]], d: Design,
               permutations: int, seed: int, step: int, progress: Callable[[int, int], None] | None, method: str,
               stop_after: int | None) -> PermutationTest:
    """Draw the permutations ``step`` at a time, ``values(perms)`` giving their statistics, calling
    ``progress(done, total)`` after each step (it may raise to stop the run), and stop early by
    Besag and Clifford's rule when ``stop_after`` is given (stop_index); then the test's result."""
    check_stop_after(stop_after, permutations)
    f_permuted = np.empty(permutations)
    stream = shuffles(d, permutations, seed)
    def draw(low: int) -> list[NDArray[np.int64]]:
        return [next(stream) for _ in range(min(step, permutations - low))]

    # one thread draws the next step's permutations (numpy's shuffle releases the GIL) while ``values`` takes
    # this step's: the same permutations in the same order, drawn beside the work instead of between it
    with ThreadPoolExecutor(1) as drawer:
        upcoming = drawer.submit(draw, 0)
        for low in range(0, permutations, step):
            perms = upcoming.result()
            if low + step < permutations:
                upcoming = drawer.submit(draw, low + step)
            done = low + len(perms)
            f_permuted[low:done] = values(perms)
            stop = stop_index(f_observed, f_permuted[:done], stop_after)
            if progress is not None:
                progress(permutations if stop is not None else done, permutations)
            if stop is not None:
                return permutation_result(f_observed, f_permuted[:stop], method, stop_after)
    return permutation_result(f_observed, f_permuted, method, stop_after)



def welch_statistic(sizes: NDArray[np.float64], ss: NDArray[np.float64],
                    centroid_sq: NDArray[np.float64]) -> NDArray[np.float64]:
    """W*_d (Hamidi et al. 2019, eq. 4) from group sizes n_g, within sums of squares SS_g (..., G) and
    squared distances between group centroids (..., G, G):

        W*_d = [sum_{i<j} (w_i w_j / W) ||c_i - c_j||^2 / (G - 1)] / [1 + 2 (G - 2) / (G^2 - 1) * h],
        w_g = n_g / s_g^2,  s_g^2 = SS_g / (n_g - 1),  W = sum_g w_g,  h = sum_g (1 - w_g / W)^2 / (n_g - 1).

    For two groups the denominator is 1 and W*_d = ||c_1 - c_2||^2 / (s_1^2 / n_1 + s_2^2 / n_2), Tw^2.
    A group without spread (SS_g = 0) has infinite weight: W*_d is then inf.
    """
    sizes = np.asarray(sizes, dtype=float)
    ss = np.asarray(ss, dtype=float)
    groups = len(sizes)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = sizes * (sizes - 1) / ss
        total = w.sum(axis=-1)
        numerator = np.einsum("...i,...ij,...j->...", w, centroid_sq, w) / (2 * total * (groups - 1))
        h = np.sum((1 - w / total[..., None]) ** 2 / (sizes - 1), axis=-1)
        value = numerator / (1 + 2 * (groups - 2) / (groups ** 2 - 1) * h)
    return np.where(np.any(ss <= 0, axis=-1), np.inf, value)


def _centroid_sq(centroids: np.ndarray) -> np.ndarray:
    """||c_i - c_j||^2 for rows of (..., G, d)."""
    norms = np.einsum("...gk,...gk->...g", centroids, centroids)
    return np.maximum(norms[..., :, None] + norms[..., None, :] - 2 * centroids @ np.swapaxes(centroids, -1, -2), 0)


class _WelchVectors:
    """W*_d of unit vectors regrouped by a permutation: group sums give SS_g = n_g - ||s_g||^2 / n_g
    and the centroids s_g / n_g."""

    def __init__(self, unit: NDArray[np.float64], d: Design) -> None:
        self.unit = unit
        self.order = np.argsort(d.codes, kind="stable")
        self.sizes = np.bincount(d.codes).astype(float)
        self.starts = np.r_[0, np.cumsum(self.sizes)[:-1]].astype(np.int64)

    def __call__(self, perm: NDArray[np.int64]) -> float:
        sums = np.add.reduceat(self.unit[perm[self.order]], self.starts, axis=0)
        ss = self.sizes - np.einsum("gk,gk->g", sums, sums) / self.sizes
        return float(welch_statistic(self.sizes, ss, _centroid_sq(sums / self.sizes[:, None])))


class _WelchDistances:
    """W*_d from an n x n matrix of squared dissimilarities: with block sums B_gh = sum over i in g,
    j in h of d_ij^2, SS_g = B_gg / (2 n_g) and ||c_g - c_h||^2 = B_gh / (n_g n_h) - SS_g / n_g - SS_h / n_h
    (the centroids of the principal-coordinates embedding; Hamidi et al. 2019, eqs. 5-6)."""

    def __init__(self, squared: NDArray[np.float64], d: Design) -> None:
        self.squared, self.codes = squared, d.codes
        self.sizes = np.bincount(d.codes).astype(float)
        self.order = np.argsort(d.codes, kind="stable")
        self.starts = np.r_[0, np.cumsum(self.sizes)[:-1]].astype(np.int64)

    def __call__(self, perm: NDArray[np.int64]) -> float:
        return float(self.batch([perm])[0])

    def batch(self, perms: Sequence[NDArray[np.int64]]) -> NDArray[np.float64]:
        groups, n = len(self.sizes), len(self.codes)
        indicator = np.zeros((n, len(perms) * groups))
        for b, perm in enumerate(perms):
            indicator[perm, b * groups + self.codes] = 1.0     # item perm[i] takes the label of row i
        to_groups = self.squared @ indicator                     # (n, B G): sum over j in h of d_ij^2
        out = np.empty(len(perms))
        for b, perm in enumerate(perms):
            blocks = np.add.reduceat(to_groups[perm[self.order], b * groups:(b + 1) * groups], self.starts, axis=0)
            ss = np.diag(blocks) / (2 * self.sizes)
            within = ss / self.sizes
            centroid_sq = np.maximum(blocks / np.outer(self.sizes, self.sizes) - within[:, None] - within[None, :], 0)
            out[b] = welch_statistic(self.sizes, ss, centroid_sq)
        return out


def _wild_bootstrap(observed: float, d: Design, samples: int, seed: int, progress: Callable[[int, int], None] | None,
                    **residual: NDArray[np.float64]) -> PermutationTest:
    """p of W*_d against its group-wise wild bootstrap (embsql.core.wild_bootstrap).  With strata, no
    stratum holding two groups leaves nothing to compare: p = 1, as a permutation within strata gives."""
    if not any(len(np.unique(d.codes[d.strata == s])) > 1 for s in np.unique(d.strata)):
        return PermutationTest(float(observed), 1.0, samples, samples, "welch", "wild bootstrap")
    boot = bootstrap_welch(d.codes, samples, seed, welch_statistic, progress=progress, **residual)
    result = permutation_result(observed, boot, "welch")
    return PermutationTest(result.statistic, result.p_value, result.permutations, result.exceedances, "welch",
                           "wild bootstrap")


def _check_null(null: str | None, statistic: str) -> None:
    if null not in NULLS:
        raise InputError(f"null_method must be 'auto', 'permutation' or 'wild bootstrap', not {null!r}",
                         kind="argument.null_method")
    if null == "wild bootstrap" and statistic != "welch":
        raise InputError("null_method 'wild bootstrap' is for statistic 'welch' (pseudo-F pools the spreads it "
                         "would keep)")


def _check_statistic(statistic: str, d: Design) -> None:
    if statistic not in STATISTICS:
        raise InputError(f"statistic must be 'pseudo-f' or 'welch', not {statistic!r}", kind="argument.statistic")
    if statistic == "welch" and np.min(np.bincount(d.codes)) < 2:
        raise DesignError("statistic 'welch' needs at least 2 items in every group (it weights each group by "
                          "its own spread); a group has 1")


def default_null(statistic: str, d: Design) -> str:
    """Where W*_d's p-value comes from when the caller does not say: the group-wise wild bootstrap,
    on the groups (stratum x group cells) with at least MIN_BOOTSTRAP_GROUP items (welch_left_out).

    The wild bootstrap keeps each group's covariance shape, which label permutation mixes: with a
    rank-2 group of 6 against 40 (equal centres and spread) permutation rejected 17%, the bootstrap
    4.5%; with a group of 5 (4) against 40, permutation 21% (22%).  But it estimates each group's
    shape from that group's residuals, which span at most n_g - 1 directions: with small groups the
    bootstrap statistic has too few dimensions, a heavy tail, and the test turns conservative
    (exchangeable data, 5 groups of 5: 1%, of 3: 0%).  Smaller groups are therefore left out of the
    default test, and counted (validation/validity_tests.py, Table 2).
    """
    return "wild bootstrap" if statistic == "welch" else "permutation"


def welch_left_out(d: Design) -> tuple[np.ndarray, str | None]:
    """Which items W*_d's default test keeps (their stratum x group cell has MIN_BOOTSTRAP_GROUP
    items or more), and a note naming what was left out and why (None when nothing was)."""
    cell = cells(d.codes, d.strata)
    sizes = np.bincount(cell)
    keep = sizes[cell] >= MIN_BOOTSTRAP_GROUP
    if keep.all():
        return keep, None
    small = int(np.sum(sizes < MIN_BOOTSTRAP_GROUP))
    unit = "group" if np.all(d.strata == d.strata[0]) else "stratum x group cell"
    return keep, (f"{small} {unit}{'s' if small > 1 else ''} under {MIN_BOOTSTRAP_GROUP} items ({int((~keep).sum())} "
                  f"items) left out of the W*_d test: the wild bootstrap cannot estimate so small a group's covariance "
                  "shape, and permuting labels is not valid when shapes differ (null_method 'permutation' tests "
                  "every group, exact only if their spreads have the same shape)")


def _left_out_result(d: Design, keep: NDArray[np.bool_], note: str,
                     run: Callable[[Design, NDArray[np.intp]], PermutationTest]) -> PermutationTest:
    """Run ``run(subset design, kept rows)`` on the kept items; with fewer than two groups left, no test."""
    kept_groups = len(np.unique(d.codes[keep]))
    left = len(np.unique(cells(d.codes, d.strata)[~keep]))
    if kept_groups < 2:
        return PermutationTest(None, None, 0, 0, "welch", "wild bootstrap", left, int((~keep).sum()),
                               note + "; fewer than two groups are left, so there is no test")
    sub = Design(np.unique(d.codes[keep], return_inverse=True)[1].astype(np.int64),
                 np.unique(d.strata[keep], return_inverse=True)[1].astype(np.int64), kept_groups)
    test = run(sub, np.flatnonzero(keep))
    return PermutationTest(test.statistic, test.p_value, test.permutations, test.exceedances, test.method, test.null,
                           left, int((~keep).sum()), note)


def gram_dtype(n: int) -> type[np.float64] | type[np.float32] | None:
    """The most precise float type whose n x n Gram matrix fits its budget, or None."""
    return next((t for t, budget in GRAM_BYTES.items() if n * n * np.dtype(t).itemsize <= budget
                 and (t is not np.float64 or n <= F64_GRAM_MAX_N)), None)


# Relative costs, in units of one streamed float read of the coordinates route, measured as CPU time
# (bench/permanova.py's kernels at n = 5,000, d = 384, 999 permutations, groups of 4 to 500; see
# bench/README.md): a random read of the Gram matrix (a cache miss, gathered 64 permutations at a time)
# costs about PAIR_READ of them (21 to 39 measured), a multiply-add of the banded float32 Gram product
# GRAM_MAC of them.
PAIR_READ = 30.0
GRAM_MAC = 0.03


def choose_method(n: int, dim: int, codes: np.ndarray, permutations: int = 999) -> str:
    """pairs when the Gram matrix fits and building it plus the permutations' random reads cost less
    than streaming the vectors once per permutation; else coordinates.

    pairs: n^2 d / 2 multiply-adds to build Z Z^T, then sum_g n_g (n_g - 1) / 2 random reads per
    permutation; coordinates: n d streamed reads per permutation.
    """
    costs = method_costs(n, dim, codes, permutations)
    return "pairs" if "pairs" in costs and costs["pairs"] < costs["coordinates"] else "coordinates"


def method_costs(n: int, dim: int, codes: np.ndarray, permutations: int = 999) -> dict[str, float]:
    """What choose_method weighs, in streamed float reads: each route's cost ("pairs" only where its Gram
    matrix fits).  The cheaper one is the test's cost (a report's progress bar estimates with it)."""
    within = float(np.sum(np.bincount(codes).astype(float) * (np.bincount(codes) - 1))) / 2
    costs = {"coordinates": float(permutations) * n * dim}
    if gram_dtype(n) is not None:
        costs["pairs"] = GRAM_MAC * n * n * dim / 2 + permutations * PAIR_READ * within
    return costs


def within_sums(unit: NDArray[np.float64], d: Design, method: str = "auto",
                permutations: int = 999) -> tuple[_GramWithin | CoordinateSums, str]:
    """SS_W of unit vectors regrouped by permutations: a callable ``f(perm)`` (some with ``f.batch(perms)``),
    by the pairs or the coordinates method (``'auto'``: choose_method)."""
    method = choose_method(d.n, unit.shape[1], d.codes, permutations) if method == "auto" else method
    if method == "pairs":
        dtype = gram_dtype(d.n)
        if dtype is None:
            raise InputError(f"method 'pairs' needs an n x n matrix, too large for n = {d.n}; use 'coordinates'")
        return _GramWithin(PackedGram(unit, dtype), d), method
    if method == "coordinates":
        return CoordinateSums(unit, d), method
    raise InputError(f"method must be 'auto', 'pairs' or 'coordinates', not {method!r}")


def _check_run(permutations: int, seed: int, statistic: str, d: Design, stop_after: int | None = None) -> None:
    check_permutations(permutations)
    check_seed(seed)
    check_stop_after(stop_after, permutations)
    _check_statistic(statistic, d)


def permanova_vectors(unit: NDArray[np.float64], d: Design, *, permutations: int = 999, seed: int = 42,
                      method: str = "auto", progress: Callable[[int, int], None] | None = None, statistic: str = "pseudo-f",
                      null: str | None = None, stop_after: int | None = None) -> PermutationTest:
    """Permutation test of pseudo-F for unit vectors (rows of ``unit``, canonical order), or test of
    W*_d, its null from the wild bootstrap or label permutation (``null``; None or 'auto': default_null).
    ``stop_after``: stop the permutations early by Besag and Clifford's rule (sequential; not for the
    wild bootstrap)."""
    _check_run(permutations, seed, statistic, d, stop_after)
    default = null in (None, "auto")
    null = default_null(statistic, d) if default else null
    _check_null(null, statistic)
    n = d.n
    total = unit.sum(axis=0, dtype=np.float64)
    ss_t = n - float(total @ total) / n
    check_unit_spread(unit, d.codes)
    if statistic == "welch" and default:
        keep, note = welch_left_out(d)
        if note is not None:
            return _left_out_result(d, keep, note, lambda sub, rows: permanova_vectors(
                unit[rows], sub, permutations=permutations, seed=seed, progress=progress, statistic=statistic,
                null="wild bootstrap"))
    if null == "wild bootstrap":
        observed = _WelchVectors(unit, d)(np.arange(n))
        return _wild_bootstrap(observed, d, permutations, seed, progress,
                               coordinates=residuals(unit, cells(d.codes, d.strata)))
    if statistic == "welch":
        return _run(_WelchVectors(unit, d), lambda w: w, d, permutations, seed, progress, "welch", stop_after)
    within, method = within_sums(unit, d, method, permutations)
    return _run(within, lambda ss_w: pseudo_f(ss_t - ss_w, ss_w, n, d.groups), d, permutations, seed, progress, method,
                stop_after)


def permanova_distances(squared: NDArray[np.float64], d: Design, *, permutations: int = 999, seed: int = 42,
                        progress: Callable[[int, int], None] | None = None, statistic: str = "pseudo-f",
                        null: str | None = None, stop_after: int | None = None) -> PermutationTest:
    """Permutation test of pseudo-F (or W*_d, by default against its wild bootstrap on the residual
    inner products of the principal-coordinates embedding) from an n x n matrix of squared dissimilarities.
    ``stop_after`` as for permanova_vectors."""
    _check_run(permutations, seed, statistic, d, stop_after)
    default = null in (None, "auto")
    null = default_null(statistic, d) if default else null
    _check_null(null, statistic)
    ss_t = float(np.triu(squared, 1).sum()) / d.n
    check_total_spread(ss_t, d.n, undefined="F is", distances=True)
    if statistic == "welch" and default:
        keep, note = welch_left_out(d)
        if note is not None:
            return _left_out_result(d, keep, note, lambda sub, rows: permanova_distances(
                squared[np.ix_(rows, rows)], sub, permutations=permutations, seed=seed, progress=progress,
                statistic=statistic, null="wild bootstrap"))
    if null == "wild bootstrap":
        observed = _WelchDistances(squared, d)(np.arange(d.n))
        return _wild_bootstrap(observed, d, permutations, seed, progress,
                               gram=residual_gram(squared, cells(d.codes, d.strata)))
    if statistic == "welch":
        return _run(_WelchDistances(squared, d), lambda w: w, d, permutations, seed, progress, "welch", stop_after)
    pair_sums = _PairSums.of_matrix(squared, d)
    return _run(pair_sums, lambda ss_w: pseudo_f(ss_t - ss_w, ss_w, d.n, d.groups), d, permutations, seed, progress,
                "pairs", stop_after)
