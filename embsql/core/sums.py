"""The sufficient statistics every kernel consumes: per group, the count n_g, the sum s_g of the unit
vectors and their within-group sum of squares (accumulated stably), plus the one rule that scales a
vector to unit length.  numpy only: the readers in embsql.io fill these from DuckDB, Arrow or SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sparse

from embsql.core.labels import sort_key
from embsql.errors import VECTOR_KINDS, BadVectorError, error

RowName = Callable[[int], str]   # names row i in a message

SEGMENT_ROWS = 1024
TINY_SQUARED, HUGE_SQUARED = 1e-290, 1e290  # ||x||^2 outside these is recomputed with scaling
SPREAD_FLOOR = 1e-4  # a block's run of one group with mean squared spread below this gets the two-pass sum


@dataclass(frozen=True)
class GroupSums:
    """Sufficient statistics of one by value: labels, counts n_g, sums s_g (G x d, float64) and
    ``within``, the per-group sum of squares about the group mean, sum_i ||u_i - s_g / n_g||^2.

    ``within`` is accumulated stably (two-pass per block of rows, merged across blocks by Chan et
    al.'s pairwise update), so it keeps its digits when a group's vectors are close together; the
    textbook n_g - ||s_g||^2 / n_g loses them all there.  It is None in a GroupSums built from sums
    alone (a route that only has s_g); within_ss() then falls back to that formula."""

    labels: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    within: np.ndarray | None = None

    @classmethod
    def from_rows(cls, labels: Iterable[object], unit: np.ndarray) -> GroupSums:
        """The sums of rows already in memory (labels and unit vectors)."""
        labels = list(labels)
        names = sorted(set(labels), key=sort_key)
        accumulator = Accumulator(dim=unit.shape[1])
        lookup = dict(zip(names, accumulator.codes(names)))
        accumulator.add_unit(np.fromiter((lookup[x] for x in labels), np.int64, len(labels)), unit)
        return accumulator.result()

    def within_ss(self) -> np.ndarray:
        """Per group sum_i ||u_i - mean_g||^2: the stable figure, or n_g - ||s_g||^2 / n_g without one."""
        if self.within is not None:
            return self.within
        counts = self.counts.astype(np.float64)
        return np.maximum(0.0, counts - np.einsum("gk,gk->g", self.sums, self.sums) / counts)

    def take(self, order: np.ndarray) -> GroupSums:
        """The same statistics with the groups in ``order`` (an index array)."""
        return GroupSums(self.labels[order], self.counts[order], self.sums[order],
                         None if self.within is None else self.within[order])


@dataclass(frozen=True)
class Summed:
    """One figure stage 1 returns per (model, group), whichever engine sums it.

    ``combine`` says how it is aggregated over a group's rows, and how two parts' figures of one
    group merge: "count" (rows; parts add), "sum", "min", "max", "spread" (the within-group sum of
    squares: parts merge by Chan et al.'s update) or "vectors" (one sum per coordinate).  ``field``
    is the GroupSums field it fills; None for a check that stage 2 reads and refuses on."""

    name: str
    combine: str
    field: str | None
    meaning: str


# What stage 1 sums: the portable SQL aggregate (embsql.io.portable_sums), pgvector's mean, Spark's
# workers (embsql.engines.spark) and the streamed Accumulator below (its counts, sums and within)
# all return these, in this order, each as the column "__emb_" + name (the coordinate sums as
# "__emb_s1" ... "__emb_sd").
STAGE1 = (
    Summed("n", "count", "counts", "n_g: the group's rows"),
    Summed("nulls", "sum", None, "its NULL vectors"),
    Summed("len_min", "min", None, "the length of its shortest vector"),
    Summed("len_max", "max", None, "the length of its longest vector"),
    Summed("bad", "sum", None, "its vectors with a NULL element or of zero length"),
    Summed("within", "spread", "within", "sum_i ||u_i - s_g / n_g||^2, about the group mean"),
    Summed("s", "vectors", "sums", "s_g: the sum of its unit vectors, coordinate by coordinate"),
)


@dataclass(frozen=True)
class UnitRows:
    """The rows of one by value: group labels, unit vectors and an optional extra column."""

    labels: np.ndarray
    unit: np.ndarray
    extra: np.ndarray | None


@dataclass
class Accumulator:
    """Running n_g, s_g and within-group sum of squares of one by value; groups are numbered in
    order of first appearance."""

    dim: int
    index: dict = field(default_factory=dict)
    labels: list = field(default_factory=list)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sums: np.ndarray = field(init=False)
    within: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        self.sums = np.zeros((0, self.dim))

    def codes(self, labels: list) -> np.ndarray:
        """Global codes of a batch's distinct labels, growing the arrays for new ones."""
        for label in labels:
            if label not in self.index:
                self.index[label] = len(self.labels)
                self.labels.append(label)
        grow = len(self.labels) - len(self.counts)
        if grow > 0:
            size = len(self.counts) + max(grow, len(self.counts))
            self.counts = np.concatenate([self.counts, np.zeros(size - len(self.counts), np.int64)])
            self.within = np.concatenate([self.within, np.zeros(size - len(self.within))])
            self.sums = np.vstack([self.sums, np.zeros((size - len(self.sums), self.dim))])
        return np.fromiter((self.index[label] for label in labels), np.int64, len(labels))

    def add(self, codes: np.ndarray, raw: np.ndarray, where: RowName | None = None, vector: str = "") -> None:
        """Add the rows ``raw`` (any float dtype; scaled to unit length here) to their groups."""
        self._add(codes, raw, lambda x, rows: normalise(x, where, vector, rows), scaled=True)

    def add_unit(self, codes: np.ndarray, unit: np.ndarray) -> None:
        """Add rows that are unit vectors already (float64 or float32, summed in float64 a few rows at a time;
        their norms are not assumed to be 1)."""
        self._add(codes, unit, lambda x, rows: None, scaled=False)

    def _add(self, codes: np.ndarray, raw: np.ndarray, normalise: Callable[[np.ndarray, np.ndarray], None],
             scaled: bool) -> None:
        """Sorted by group and taken a few rows at a time, the gather, the norm, the scaling and
        np.add.reduceat all stay in cache: several times faster than each over the whole batch.

        Each run of one group in a block gets its sum and its sum of squares about its own mean,
        and is merged into the group's running figures by Chan et al.'s update
            M2 = M2_a + M2_b + ||mean_b - mean_a||^2 n_a n_b / (n_a + n_b).
        A run's M2_b is k - ||s||^2 / k (rows we scaled have ||u||^2 = 1 to rounding) when that is
        at least k * SPREAD_FLOOR: its rounding, about 2 k eps relative to ||s||^2 / k, is then
        below 1e-8 of M2_b.  A tighter run (near-duplicates) gets the two-pass sum of its squared
        deviations from its mean instead, which keeps its digits at any spread."""
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        for low in range(0, len(codes), SEGMENT_ROWS):
            rows = order[low:low + SEGMENT_ROWS]
            block = sorted_codes[low:low + SEGMENT_ROWS]
            x = np.asarray(raw[rows], dtype=np.float64)  # a fresh copy (fancy indexing): safe to scale in place
            normalise(x, rows)
            starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
            size = np.diff(np.r_[starts, len(block)])
            run_sums = add_runs(x, starts)
            run_means = run_sums / size[:, None]
            if scaled:  # a run of one row has M2 = 0 exactly
                run_within = np.where(size > 1, size - np.einsum("gk,gk->g", run_sums, run_means), 0.0)
                tight = (size > 1) & (run_within < size * SPREAD_FLOOR)
            if not scaled or tight.any():
                x -= np.repeat(run_means, size, axis=0)
                two_pass = np.add.reduceat(np.einsum("ij,ij->i", x, x), starts)
                run_within = np.where(tight, two_pass, run_within) if scaled else two_pass
            # each code is one run of a sorted block, so the fancy-indexed updates touch each code once
            group = block[starts]
            before = self.counts[group].astype(np.float64)
            previous = self.sums[group]
            delta = run_means - previous / np.maximum(before, 1.0)[:, None]
            self.within[group] += run_within + np.einsum("gk,gk->g", delta, delta) * before * size / (before + size)
            self.sums[group] = previous + run_sums
            self.counts[group] += size

    def result(self) -> GroupSums:
        n = len(self.labels)
        order = sorted(range(n), key=lambda i: sort_key(self.labels[i]))
        labels = np.empty(n, dtype=object)
        labels[:] = [self.labels[i] for i in order]
        return GroupSums(labels, self.counts[:n][order], self.sums[:n][order], self.within[:n][order])


def _summed_dtype(x: np.ndarray) -> type[np.float32] | type[np.float64]:
    """float32 rows are summed in float32 (the permutation kernels' choice); any other in float64."""
    return np.float32 if x.dtype == np.float32 else np.float64


def add_runs(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The sums of x's runs of rows beginning at ``starts`` (np.add.reduceat(x, starts, axis=0) for
    increasing starts), as a sparse 0/1 matrix times x: scipy adds each row into its run's sum in one
    vectorised pass, about 3x faster than reduceat along axis 0 (which strides down the columns)."""
    n = len(x)
    runs = sparse.csr_array((np.ones(n, _summed_dtype(x)), np.arange(n), np.r_[starts, n]), shape=(len(starts), n))
    return np.asarray(runs @ x)


def add_rows(x: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """Per code 0..groups-1, the sum of x's rows with that code, in any order (np.add.at(out, codes, x),
    which is about 10x slower): the same sparse 0/1 product as add_runs, its rows sorted by scipy."""
    n = len(x)
    by_code = sparse.csr_array((np.ones(n, _summed_dtype(x)), (codes, np.arange(n))), shape=(groups, n))
    return np.asarray(by_code @ x)


def bad_vector(vector: str, word: str, where: str) -> BadVectorError:
    return error(VECTOR_KINDS[word], column=repr(vector), word=word, where=where)  # type: ignore[return-value]


def normalise(x: np.ndarray, where: RowName | None, vector: str, rows: np.ndarray | None = None,
              source: np.ndarray | None = None) -> None:
    """Scale the float64 rows of x to unit length in place; a zero, NaN or infinite vector names its
    row (rows maps to the part).  With ``source`` (float64, x's shape) x receives source's rows
    scaled: the same numbers as copying source into x first, with one pass over memory fewer.

    ||x||^2 is summed directly, except where it would underflow (squares of coordinates below about
    1e-154 lose digits or vanish) or overflow (above about 1e154): those rows are first divided by
    their largest |x_k|, so a finite non-zero vector of any magnitude gets its unit vector.  An empty
    vector ([], x of shape (n, 0)) is zero-length, kind vector.zero, as in SQL."""
    src = x if source is None else source
    norms2 = np.einsum("ij,ij->i", src, src)
    awkward = np.flatnonzero(~((norms2 > TINY_SQUARED) & (norms2 < HUGE_SQUARED)))  # NaN is awkward too
    scaled = None
    if len(awkward):
        # a row of no coordinates (an empty vector, []) has largest 0: zero-length, like [0, 0]
        largest = np.max(np.abs(src[awkward]), axis=1, initial=0.0)
        bad = ~(np.isfinite(largest) & (largest > 0))
        if bad.any():
            i = int(awkward[np.flatnonzero(bad)[0]])
            word = "zero-length" if largest[bad][0] == 0 else "NaN" if np.isnan(src[i]).any() else "infinite"
            row = int(i if rows is None else rows[i])
            raise bad_vector(vector, word, where(row) if where is not None else f"row {row}")
        scaled = src[awkward] / largest[:, None]
        scaled /= np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
        norms2[awkward] = 1.0
    np.multiply(src, (1.0 / np.sqrt(norms2))[:, None], out=x)
    if scaled is not None:
        x[awkward] = scaled
