"""Cross-model agreement on the same items: do two models put the same items near
each other, and do they order all pairwise distances the same way?

* k-NN agreement.  N_M(i) is the set of the k nearest OTHER items of item i under model M, by
  cosine distance 1 - z_i.z_j on unit vectors.  The overlap of models A and B is the mean over
  items of |N_A(i) & N_B(i)| / k; unrelated neighbour sets would give k / (n - 1) (``chance``).
* Mantel.  r is the Spearman correlation of the two models' distances over the item pairs i < j;
  its p-value permutes the items of one model (one-sided, upper tail, p = (b + 1) / (B + 1)).

Both depend on a model only through the order of its similarities, so they are invariant to a
rotation, a rescaling (of the whole model or of single vectors) and a change of dimension.

Ties.  Similarities are compared on a grid of RESOLUTION = 2^-40 (about 9e-13): two that round
to the same grid point are equal.  Rounding noise of a float64 dot product of unit vectors (at
most d * 1.1e-16, typically far less) is below the grid, so exact ties (duplicated or mirrored
items) stay ties in a rotated copy, where raw floats would break them at random; distinct
distances closer than the grid are rare and change r by about 1e-12.  Among items tied at the
k-th neighbour, the one first in the canonical item order (items sorted by their text) is the
nearer.  Tied distances get their average rank in the Spearman correlation, as in
scipy.stats.spearmanr.

Standard error of the overlap: the delete-one-item jackknife, recomputing the neighbour sets
that the deleted item belonged to (see overlap_jackknife).  It is conservative: in simulations
of independent data sets from one population it was 1.4-1.9 times the true spread (holding the
neighbour sets fixed instead gave 0.67-0.89 times, too small); bench/README.md has the figures.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations

import numpy as np

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.labels import text_key
from embsql.core.model_comparison import shared_items
from embsql.core.permutation import PermutationTest, permutation_result
from embsql.core.resampling import jackknife_se
from embsql.errors import BadLabelError, DesignError, InputError, fail

RESOLUTION = 2.0 ** -40
# k-NN search: float32 Gram products in row blocks pick candidates; float64 decides among them.
# 512 rows x 20,000 items is 41 MB of similarities and 82 MB of argpartition indices.
KNN_BLOCK_ROWS = 512
KNN_SPARE = 8                 # candidates beyond the k + 1 needed (see neighbours)
# Mantel: two n x n float32 rank matrices plus the condensed ranks (n^2/2 float64) per model.
MANTEL_MAX_ITEMS = 10_000
MANTEL_BLOCK_ROWS = 32        # rows of one permuted block: a (32 x n) float32 gather stays in cache


# ----------------------------------------------------------------------------------------------
# k nearest neighbours

def _keys(similarities: np.ndarray) -> np.ndarray:
    """Similarities on the tie grid, as exact integers held in float64 (larger = nearer)."""
    return np.rint(similarities / RESOLUTION)


def _first(keys: np.ndarray, ids: np.ndarray, depth: int) -> np.ndarray:
    """Per row, the ``depth`` ids with the largest keys, ties to the smaller id, nearest first."""
    order = np.lexsort((ids, -keys), axis=-1)[:, :depth]
    return np.take_along_axis(ids, order, axis=1)


def _exact_rows(unit: np.ndarray, rows: np.ndarray, depth: int) -> np.ndarray:
    """Neighbours of ``rows`` from their full float64 similarity rows (O(n log n) per row)."""
    keys = _keys(unit[rows] @ unit.T)
    keys[np.arange(len(rows)), rows] = -np.inf             # an item is not its own neighbour
    ids = np.broadcast_to(np.arange(len(unit)), keys.shape)
    return _first(keys, ids, depth)


def _candidate_similarities(unit: np.ndarray, low: int, cand: np.ndarray) -> np.ndarray:
    """float64 z_i.z_j of rows low, low + 1, ... with their candidates, a few rows at a time so
    that the gathered candidate vectors stay in cache (about 3x faster than all at once)."""
    out = np.empty(cand.shape)
    for start in range(0, len(cand), 32):
        rows = slice(start, start + 32)
        out[rows] = np.einsum("rk,rck->rc", unit[low + start:low + start + 32], unit[cand[rows]])
    return out


def neighbours(unit: np.ndarray, depth: int) -> np.ndarray:
    """n x depth: row i lists the ``depth`` nearest other items of item i, nearest first.

    Candidates come from float32 Gram products (half the time of float64); their similarities
    are then recomputed in float64 and ordered with the tie rule.  A row is kept only if no item
    outside its candidates can reach the grid cell of its last neighbour, given the worst-case
    float32 error; the rare other rows are redone in float64 over all items.
    """
    n, d = unit.shape
    candidates = depth + KNN_SPARE
    if candidates >= n - 1:
        return np.vstack([_exact_rows(unit, np.arange(low, min(n, low + KNN_BLOCK_ROWS)), depth)
                          for low in range(0, n, KNN_BLOCK_ROWS)])
    # |float32 similarity - float64 similarity| of unit vectors: rounding the inputs (2u) and a
    # d-term float32 dot product (d u / (1 - d u)), u = 2^-24; float64 adds d 2^-53
    u = 2.0 ** -24
    slack = (d * u / (1 - d * u) + 3 * u) + d * 2.0 ** -52
    fast = unit.astype(np.float32)
    out = np.empty((n, depth), dtype=np.int64)
    for low in range(0, n, KNN_BLOCK_ROWS):
        high = min(n, low + KNN_BLOCK_ROWS)
        rows, local = np.arange(low, high), np.arange(high - low)
        sims = fast[low:high] @ fast.T
        sims[local, rows] = -np.inf
        part = np.argpartition(sims, n - 1 - candidates, axis=1)
        cand = part[:, n - candidates:]
        outside = sims[local, part[:, n - 1 - candidates]].astype(np.float64)   # best non-candidate
        keys = _keys(_candidate_similarities(unit, low, cand))
        order = np.lexsort((cand, -keys), axis=-1)[:, :depth]
        out[low:high] = np.take_along_axis(cand, order, axis=1)
        last = np.take_along_axis(keys, order[:, -1:], axis=1)[:, 0]
        unsure = outside + slack >= (last - 0.5) * RESOLUTION
        if unsure.any():
            out[rows[unsure]] = _exact_rows(unit, rows[unsure], depth)
    return out


def overlap_jackknife(near_a: np.ndarray, near_b: np.ndarray, k: int) -> tuple[np.ndarray, float, float]:
    """Per-item overlaps |N_A(i) & N_B(i)| / k, their mean, and its delete-one-item jackknife SE.

    ``near_a``, ``near_b``: n x (k + 1) ordered neighbour lists.  The jackknife is the honest
    one: deleting item j also changes the neighbour sets of the items that had j among their k
    nearest, which then take their (k + 1)-th neighbour instead.  (Holding neighbour sets fixed
    would treat the per-item overlaps as independent, which they are not: one item sits in the
    neighbour sets of about k others.)  Only those O(n k) items change, so every replicate
    follows from the k + 1 lists in closed form.  With a = the (k + 1)-th neighbour under A and
    b that under B, item i's shared count loses:
      j in both sets:  1 - [a in N_B] - [b in N_A] - [a = b]
      j in N_A only:   -[a in N_B]
      j in N_B only:   -[b in N_A]
    Why this one: it resamples what the data are, a sample of items, and it errs on the safe
    side.  The overlap is not a smooth function of the items, and the jackknife of such a
    statistic overstates its spread (Efron-Stein); the fixed-set version understates it because
    it ignores that neighbouring items share their neighbours (see the module docstring).
    """
    n = len(near_a)
    a, b = near_a[:, :k], near_b[:, :k]
    match = a[:, :, None] == b[:, None, :]
    a_in_b, b_in_a = match.any(axis=2), match.any(axis=1)
    shared = a_in_b.sum(axis=1).astype(np.float64)
    extra_a, extra_b = near_a[:, k], near_b[:, k]
    extra_a_in_b = (b == extra_a[:, None]).any(axis=1)
    extra_b_in_a = (a == extra_b[:, None]).any(axis=1)
    both = 1.0 - extra_a_in_b - extra_b_in_a - (extra_a == extra_b)
    loss_a = np.where(a_in_b, both[:, None], -extra_a_in_b[:, None].astype(np.float64))
    loss_b = np.where(b_in_a, 0.0, -extra_b_in_a[:, None].astype(np.float64))   # "both" counted once, via A
    loss = (np.bincount(a.ravel(), loss_a.ravel(), minlength=n)
            + np.bincount(b.ravel(), loss_b.ravel(), minlength=n))
    replicates = (shared.sum() - shared - loss) / ((n - 1) * k)
    return shared / k, float(shared.mean() / k), jackknife_se(replicates)


def _check_k(k: object, n: int) -> None:
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 1:
        fail("argument.k", name="k", rule="a positive whole number", value=repr(k))
    if k >= n - 1:
        fail("design.k_jackknife", k=k, need=k + 2, others=n - 1, n=n)


# ----------------------------------------------------------------------------------------------
# Mantel

def pair_ranks(unit: np.ndarray, model: object) -> np.ndarray:
    """Centred average ranks of the similarities of the pairs i < j (condensed order), float64."""
    n = len(unit)
    keys = np.empty(n * (n - 1) // 2)
    at = 0
    for low in range(0, n, KNN_BLOCK_ROWS):
        block = _keys(unit[low:low + KNN_BLOCK_ROWS] @ unit.T)
        for i, row in enumerate(block, start=low):
            keys[at:at + n - 1 - i] = row[i + 1:]
            at += n - 1 - i
    values, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    if len(values) == 1:
        raise DesignError(f"model {model!r} puts every pair of items at the same distance; "
                          "the rank correlation is undefined")
    average = np.cumsum(counts) - (counts - 1) / 2.0
    return average[inverse] - (len(keys) + 1) / 2.0


def _square(condensed: np.ndarray, n: int) -> np.ndarray:
    """The symmetric n x n float32 matrix (zero diagonal) of a condensed vector.  Centred
    average ranks are multiples of 1/2 below n^2/4, exact in float32 up to n of about 5,800."""
    out = np.zeros((n, n), dtype=np.float32)
    at = 0
    for i in range(n - 1):
        out[i, i + 1:] = condensed[at:at + n - 1 - i]
        at += n - 1 - i
    return out + out.T


class _PermutedCross:
    """sum_{i<j} A_ij B_{p(i) p(j)} for a permutation p of the items (A, B symmetric ranks).

    Rows are taken in blocks; a block keeps only the columns from its first row on, with the
    entries at or below the diagonal zeroed, so each pair i < j is counted once and the work is
    n^2 / 2 gathers and multiply-adds per permutation.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray) -> None:
        self.b, self.n = b, len(b)
        self.blocks = []
        for low in range(0, self.n, MANTEL_BLOCK_ROWS):
            block = a[low:low + MANTEL_BLOCK_ROWS, low:].copy()
            block[np.tril_indices(len(block), 0, block.shape[1])] = 0.0
            self.blocks.append((low, block))

    def __call__(self, p: np.ndarray, dtype: type = np.float32) -> float:
        total = 0.0
        for low, block in self.blocks:
            gathered = np.take(self.b[p[low:low + len(block)]], p[low:], axis=1)
            if dtype is np.float32:
                total += float(np.vdot(block, gathered))
            else:
                total += float(np.vdot(block.astype(dtype), gathered.astype(dtype)))
        return total


def mantel_test(unit_a: np.ndarray, unit_b: np.ndarray, *, permutations: int = 999, seed: int = 42,
                models: tuple[object, object] = ("a", "b"), progress: Callable[[int, int], None] | None = None
                ) -> PermutationTest:
    """Spearman r of the two models' pairwise distances and its item-permutation p-value.

    Ranks are computed once (O(n^2 log n)); a permutation re-indexes the rank matrix of model B
    and takes one dot product with that of A (O(n^2), as float32 products summed per block).
    Permutations whose r lies within 1e-5 of the observed r are recomputed in float64 before
    they are counted, so float32 rounding never decides whether r_perm >= r.
    """
    check_permutations(permutations)
    check_seed(seed)
    n = len(unit_a)
    if n < 3:
        raise DesignError(f"the Mantel test needs at least 3 items (3 pairs); there are {n}")
    if n > MANTEL_MAX_ITEMS:
        raise InputError(f"the Mantel test keeps n x n rank matrices; {n} items is more than "
                         f"{MANTEL_MAX_ITEMS}: run it on a random sample of items")
    ranks_a, ranks_b = pair_ranks(unit_a, models[0]), pair_ranks(unit_b, models[1])
    scale = float(np.sqrt((ranks_a @ ranks_a) * (ranks_b @ ranks_b)))
    observed = float(ranks_a @ ranks_b) / scale
    cross = _PermutedCross(_square(ranks_a, n), _square(ranks_b, n))
    rng = np.random.default_rng(seed)
    permuted = np.empty(permutations)
    for t in range(permutations):
        p = rng.permutation(n)
        r = cross(p) / scale
        permuted[t] = cross(p, np.float64) / scale if abs(r - observed) <= 1e-5 else r
        if progress is not None and t % 50 == 0:
            progress(t, permutations)
    if progress is not None:
        progress(permutations, permutations)
    return permutation_result(min(max(observed, -1.0), 1.0), permuted, "items")


# ----------------------------------------------------------------------------------------------
# per pair of models

def _aligned(models: dict, common: bool) -> tuple[list, dict]:
    """``models``: model -> (item ids, unit vectors).  The shared items in canonical order and
    each model's unit vectors in that order."""
    if len(models) < 2:
        fail("model.too_few", column="the model column", models=len(models), needs="agreement")
    if any(m is None for m in models):
        raise BadLabelError("the model column has a NULL value; every row needs a model")
    items, rows_of = shared_items({m: ids for m, (ids, _) in models.items()}, common)
    return items, {m: unit[rows_of[m]] for m, (_, unit) in models.items()}


def knn_rows(models: dict, k: int, *, common: bool = False) -> tuple[list[dict], list[dict]]:
    """(one row per pair of models, one row per pair and item); see knn_agreement."""
    items, unit = _aligned(models, common)
    _check_k(k, len(items))
    near = {m: neighbours(unit[m], k + 1) for m in sorted(unit, key=text_key)}
    rows, item_rows = [], []
    for a, b in combinations(sorted(near, key=text_key), 2):
        per_item, estimate, se = overlap_jackknife(near[a], near[b], k)
        rows.append({"model_a": a, "model_b": b, "k": k, "overlap": estimate, "se": se,
                     "chance": k / (len(items) - 1), "items": len(items)})
        item_rows += [{"model_a": a, "model_b": b, "item": item, "overlap": float(value)}
                      for item, value in zip(items, per_item)]
    return rows, item_rows


def knn_agreement_rows(models: dict, *, k: int = 10, common: bool = False) -> list[dict]:
    """One row per pair of models; see knn_agreement."""
    return knn_rows(models, k, common=common)[0]


def knn_item_rows(models: dict, *, k: int = 10, common: bool = False) -> list[dict]:
    """One row per pair of models and item; see knn_agreement(per_item=True)."""
    return knn_rows(models, k, common=common)[1]


def mantel_rows(models: dict, *, permutations: int = 999, seed: int = 42, common: bool = False,
                progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """One row per pair of models; see mantel."""
    items, unit = _aligned(models, common)
    rows = []
    for a, b in combinations(sorted(unit, key=text_key), 2):
        test = mantel_test(unit[a], unit[b], permutations=permutations, seed=seed, models=(a, b),
                           progress=progress)
        rows.append({"model_a": a, "model_b": b, "r": test.statistic, "p_value": test.p_value,
                     "permutations": test.permutations, "items": len(items)})
    return rows
