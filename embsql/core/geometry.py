"""Model-to-model geometry on the same items: linear CKA and the symmetric Procrustes correlation.

Both compare two models X (n x p) and Y (n x q) that embedded the same n items, on unit vectors
centred at their mean (X~ = H X, H the centring matrix):

* linear CKA (Kornblith et al. 2019):  ||X~'Y~||_F^2 / (||X~'X~||_F ||Y~'Y~||_F)
  = HSIC(K, L) / sqrt(HSIC(K, K) HSIC(L, L)) with K = X X', L = Y Y' (the RV coefficient);
  debiased: the same ratio of unbiased HSIC estimates (Song et al. 2012, eq. 5), on Gram matrices
  with zeroed diagonals; biased in [0, 1], debiased in [-1, 1] (see RANGE: negative values are kept);
* Procrustes (vegan's protest):  r = ||X~'Y~||_* / sqrt(tr(X~'X~) tr(Y~'Y~)) (sum of singular
  values), the correlation sqrt(1 - m12^2) of the symmetric Procrustes fit.

Both depend on a model only through K~ = X~ X~' (up to a factor): invariant to rotation, uniform
scale and embedding into more dimensions (the similarity level of the invariance hierarchy;
k-NN agreement and Mantel, which see only the order of the similarities, are the monotone level).

Two routes, chosen by measured cost per model (gram_cheaper):
  * cross products: the p x p, q x q and p x q centred products, one pass over the rows in blocks
    (CrossProducts), memory O(d^2), time O(n d^2);
  * Gram: when n is small next to d the n x n Gram matrix gives principal coordinates Z (n x r,
    r < n) with Z Z' = X~ X~' (time O(n^2 d + n^3)); every statistic here is a function of that
    Gram matrix, so Z stands in for X~ and the products shrink to r x r.
Standard error: the delete-one jackknife over items, or over groups of items (cluster jackknife),
with every replicate from the same products: deleting group g replaces X~'Y~ by X~'Y~ - P_g
(P_g = the group's own products) and the sums by the rest's; the Frobenius norms then follow from
<M, P_g> = sum_{i in g} x_i' M y_i and ||P_g||^2 = sum_{i,j in g} K_ij L_ij (one more pass, O(n d^2)).
Permutations shuffle the items of Y.  Centring commutes with a permutation, so only X~'Y~ changes:
each costs one product X~'(P Y~), in row blocks, O(n p q) (O(n r^2) on the Gram route); the
denominators, and for the debiased estimate everything but two sums, are computed once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from embsql.core.arguments import check_permutations, check_replicates, check_seed
from embsql.core.labels import text_key
from embsql.core.model_comparison import shared_items
from embsql.core.model_ranking import (
    check_intervals,
    jackknife_covariance,
    jackknife_rows,
    normal_family,
    simultaneous_critical,
)
from embsql.core.permutation import permutation_result
from embsql.core.precision import check_total_spread
from embsql.core.resampling import MIN_GROUPS, jackknife_se, jackknife_t_interval
from embsql.core.student_t import t_cdf, t_quantile
from embsql.errors import BadLabelError, DesignError, InputError, error, fail

Progress = Callable[[int, int], None]   # progress(done, total) as permutations run

INVARIANCE = "similarity"
# The range of each estimate.  Biased: a ratio of Frobenius norms, in [0, 1].  Debiased: Song's
# unbiased HSIC is the inner product of the U-centred Gram matrices (Szekely & Rizzo 2014, the
# bias-corrected distance correlation's Hilbert space), so the ratio is a cosine, in [-1, 1].  It is
# negative whenever the estimated dependence is below zero (for unrelated models, about half the
# time): it is reported as it is, because cutting it at 0 would bias it upward again.
RANGE = {False: (0.0, 1.0), True: (-1.0, 1.0)}
LEVEL_MEANING = "invariant to rotation, uniform scale and embedding into more dimensions"
INTERVAL_LEVEL = 0.95
CALIBRATED_UNITS = 30    # groups (or items, without groups) from which the CKA interval's coverage was
                         # measured (validation/calibration.json, cka.coverage)
PROCRUSTES_BLOCKS = 200  # at most this many jackknife units for Procrustes without groups (one SVD each)
BLOCK_ROWS = 8192        # rows per block product: bounds memory (a large float64 product has crashed OpenBLAS here)
MIN_ITEMS = 3
MIN_DEBIASED_ITEMS = 5   # the unbiased HSIC divides by n (n - 3); each jackknife replicate needs n' >= 4


PERMUTED_GRAM = 50       # permutations from which the Gram route pays for its eigendecomposition up to n = 3d/4


def gram_cheaper(n: int, d: int, permutations: int = 0) -> bool:
    """Principal coordinates from the n x n Gram matrix (n^2 d, plus an n x n eigendecomposition)
    against the d x d products (n d^2).  By flops the Gram route wins up to n of about 0.6 d, but
    the eigendecomposition is slow in practice (LAPACK; several times a product of the same flops
    on a busy machine): measured at d = 768 (bench/cka.py) it won at n = 100 and lost from n = 200,
    so it is taken below n = d / 5.  It also shrinks every later product from d to fewer than n
    columns, which is what permutations pay for (each is one n x d_x by n x d_y product): with 99
    permutations at d = 768 against 768 (one BLAS thread, bench/cka.py) it was 12x faster at
    n = 200, 3x at 400 and 1.7x at 600, so with PERMUTED_GRAM or more permutations it is taken
    below n = 3d/4."""
    return 5 * n < d or (permutations >= PERMUTED_GRAM and 4 * n < 3 * d)


def coordinates(unit: np.ndarray, route: str = "auto", permutations: int = 0) -> tuple[np.ndarray, str]:
    """(rows to compare, route): the rows themselves (centred later, in blocks), or on the Gram route
    centred principal coordinates Z with Z Z' = X~ X~'.  ``route``: 'auto' (gram_cheaper decides,
    given the permutations to come), 'cross products' or 'gram' (for benchmarks)."""
    n, d = unit.shape
    if route not in ("auto", "cross products", "gram"):
        raise InputError(f"route must be 'auto', 'cross products' or 'gram', not {route!r}")
    if route == "cross products" or (route == "auto" and not gram_cheaper(n, d, permutations)):
        return unit, "cross products"
    centred = unit - unit.mean(axis=0)
    k = np.empty((n, n))
    for low in range(0, n, BLOCK_ROWS):
        k[low:low + BLOCK_ROWS] = centred[low:low + BLOCK_ROWS] @ centred.T
    values, vectors = np.linalg.eigh((k + k.T) / 2)
    keep = values > max(values[-1], 0.0) * n * np.finfo(float).eps
    return vectors[:, keep] * np.sqrt(values[keep]), "gram"


def block_cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """u' v summed over row blocks."""
    out = np.zeros((u.shape[1], v.shape[1]))
    for low in range(0, len(u), BLOCK_ROWS):
        out += u[low:low + BLOCK_ROWS].T @ v[low:low + BLOCK_ROWS]
    return out


class CrossProducts:
    """One pass over paired row blocks: n, the means and the centred products X~'X~, Y~'Y~, X~'Y~.

    Rows are accumulated about a shift (the first block's means), so the centring subtracts only
    the small rank-one term n (m - c)(m - c)': no cancellation when the vectors share a large mean.
    The two blocks are side by side in one buffer [X | Y], so one symmetric product (BLAS syrk)
    gives all three: the same flops as three separate products, in one call and one copy.
    """

    def __init__(self) -> None:
        self.n = 0

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        p, q = x.shape[1], y.shape[1]
        if self.n == 0:
            self.cx, self.cy = x.mean(axis=0), y.mean(axis=0)
            self.s = np.zeros(p + q)
            self.zz = np.zeros((p + q, p + q))
            self.buffer = np.empty((len(x), p + q))
        z = self.buffer[:len(x)] if len(x) <= len(self.buffer) else np.empty((len(x), p + q))
        np.subtract(x, self.cx, out=z[:, :p])
        np.subtract(y, self.cy, out=z[:, p:])
        self.n += len(x)
        self.s += z.sum(axis=0)
        self.zz += z.T @ z          # numpy calls syrk for a product of an array with its own transpose

    def centred(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(mean x, mean y, X~'X~, Y~'Y~, X~'Y~)."""
        p = len(self.cx)
        offset = self.s / self.n
        zz = self.zz - self.n * np.outer(offset, offset)
        del self.buffer
        return (self.cx + offset[:p], self.cy + offset[p:], np.ascontiguousarray(zz[:p, :p]),
                np.ascontiguousarray(zz[p:, p:]), np.ascontiguousarray(zz[:p, p:]))


def products(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """CrossProducts over row blocks of two aligned arrays."""
    acc = CrossProducts()
    for low in range(0, len(x), BLOCK_ROWS):
        acc.add(x[low:low + BLOCK_ROWS], y[low:low + BLOCK_ROWS])
    return acc.centred()


# ----------------------------------------------------------------------------------------------
# HSIC of one pair of kernels (u, v), on the full sample and with each group deleted

@dataclass(frozen=True)
class Terms:
    """Per replicate (index 0: the full sample; then group g deleted) the sums HSIC is built from,
    for rows u, v centred at the full-sample mean (so the full sums s_u, s_v are 0):
    frob = ||U'V||^2, sms = s_u' U'V s_v, su2 = ||s_u||^2, sv2 = ||s_v||^2, a = sum ||u_i||^2,
    b = sum ||v_i||^2, ab = sum ||u_i||^2 ||v_i||^2, svu = s_u . sum_i ||v_i||^2 u_i and
    svv = s_v . sum_i ||u_i||^2 v_i."""

    n: np.ndarray
    frob: np.ndarray
    sms: np.ndarray
    su2: np.ndarray
    sv2: np.ndarray
    a: np.ndarray
    b: np.ndarray
    ab: np.ndarray
    svu: np.ndarray
    svv: np.ndarray


def _blocks(n: int) -> Iterator[slice]:
    return (slice(low, low + BLOCK_ROWS) for low in range(0, n, BLOCK_ROWS))


def centred_square_norms(x: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """||x_i - mean||^2 per row, in blocks."""
    out = np.empty(len(x))
    for rows in _blocks(len(x)):
        centred = x[rows] - mean
        out[rows] = np.einsum("ik,ik->i", centred, centred)
    return out


def _group_sums(x: np.ndarray, mean: np.ndarray, order: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """sum_{i in g} (x_i - mean) per group, rows taken in group order a block at a time."""
    out = np.zeros((groups, x.shape[1]))
    for rows in _blocks(len(x)):
        picked = order[rows]
        c = codes[picked]
        starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        np.add.at(out, c[starts], np.add.reduceat(x[picked] - mean, starts, axis=0))
    return out


def _within_frob(u: np.ndarray, v: np.ndarray, mean_u: np.ndarray, mean_v: np.ndarray, order: np.ndarray,
                 codes: np.ndarray, groups: int) -> np.ndarray:
    """||P_g||^2 = sum_{i,j in g} (u_i.u_j)(v_i.v_j) per group, from each group's small Gram matrices."""
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=groups))]
    out = np.empty(groups)
    for g in range(groups):
        rows = order[bounds[g]:bounds[g + 1]]
        cu, cv = u[rows] - mean_u, v[rows] - mean_v
        out[g] = float(np.vdot(cu @ cu.T, cv @ cv.T))
    return out


def pair_terms(u: np.ndarray, v: np.ndarray, mean_u: np.ndarray, mean_v: np.ndarray, m: np.ndarray,
               codes: np.ndarray, groups: int, norms: tuple | None = None) -> Terms:
    """Terms of the pair (u, v) (rows centred at mean_u, mean_v in blocks; m = U~'V~) for the full
    sample and each group of ``codes`` deleted (each item its own group: item_terms, one pass for
    all three pairs).  Extra memory O(block d + G d + d^2): the centred rows are never held whole.
    ``norms``: the rows' ||u_i - mean_u||^2 and ||v_i - mean_v||^2 if already known."""
    n = len(u)
    a_i, b_i = norms if norms is not None else (centred_square_norms(u, mean_u), centred_square_norms(v, mean_v))
    same = u is v
    w_u = u.T @ b_i - mean_u * b_i.sum()       # sum_i ||v_i||^2 (u_i - mean_u)
    w_v = v.T @ a_i - mean_v * a_i.sum()
    order = np.argsort(codes, kind="stable")
    t_u, t_v = _group_sums(u, mean_u, order, codes, groups), _group_sums(v, mean_v, order, codes, groups)
    inner, cross_t, tpt, tbu, tav, tw_u, tw_v = (np.zeros(groups) for _ in range(7))
    for rows in _blocks(n):
        c = codes[rows]
        # centred rows without copying them: (u_i - mean_u)' M = u_i' M - mean_u' M, and so on
        um = u[rows] @ m
        um -= mean_u @ m
        m_i = np.einsum("ik,ik->i", um, v[rows]) - um @ mean_v
        cu = u[rows] - mean_u
        cv = cu if same else v[rows] - mean_v
        tu_dot, tv_dot = np.einsum("ik,ik->i", cu, t_u[c]), np.einsum("ik,ik->i", cv, t_v[c])
        inner += np.bincount(c, m_i, minlength=groups)                                   # <M, P_g>
        cross_t += np.bincount(c, np.einsum("ik,ik->i", um, t_v[c]), minlength=groups)   # t_u,g' M t_v,g
        tpt += np.bincount(c, tu_dot * tv_dot, minlength=groups)                         # t_u,g' P_g t_v,g
        tbu += np.bincount(c, tu_dot * b_i[rows], minlength=groups)                      # t_u,g . sum_g b_i u_i
        tav += np.bincount(c, tv_dot * a_i[rows], minlength=groups)
        tw_u += np.bincount(c, cu @ w_u, minlength=groups)                               # t_u,g . w_u
        tw_v += np.bincount(c, cv @ w_v, minlength=groups)
    sizes = np.bincount(codes, minlength=groups).astype(float)
    frob = float(np.vdot(m, m))
    a, b, ab = a_i.sum(), b_i.sum(), float(a_i @ b_i)
    within = _within_frob(u, v, mean_u, mean_v, order, codes, groups)
    su2, sv2 = np.einsum("gk,gk->g", t_u, t_u), np.einsum("gk,gk->g", t_v, t_v)
    # deleting g leaves the sums s - t_g = -t_g, and sum_i b_i u_i loses the group's share
    full = lambda value, per_group: np.r_[value, per_group]
    return Terms(
        n=full(n, n - sizes),
        frob=full(frob, frob - 2 * inner + within),
        sms=full(0.0, cross_t - tpt),
        su2=full(0.0, su2),
        sv2=full(0.0, sv2),
        a=full(a, a - np.bincount(codes, a_i, minlength=groups)),
        b=full(b, b - np.bincount(codes, b_i, minlength=groups)),
        ab=full(ab, ab - np.bincount(codes, a_i * b_i, minlength=groups)),
        svu=full(0.0, -(tw_u - tbu)),
        svv=full(0.0, -(tw_v - tav)))


def _item_deleted(m: np.ndarray, forms: np.ndarray, a_i: np.ndarray, b_i: np.ndarray,
                  tw_u: np.ndarray, tw_v: np.ndarray) -> Terms:
    """pair_terms with each item its own group, where every group sum is one item's row: t_u,i = u~_i,
    so <M, P_i> = t_u,i' M t_v,i = u~_i' M v~_i (``forms``), ||P_i||^2 = t_u,i' P_i t_v,i = a_i b_i
    and ||t_u,i||^2 = a_i.  (In CKA this is the closed form of the delete-one jackknife: deleting
    item i turns U~'V~ into U~'V~ - n/(n-1) u~_i v~_i' about the new mean.)"""
    n = len(forms)
    ab_i = a_i * b_i
    frob, a, b, ab = float(np.vdot(m, m)), a_i.sum(), b_i.sum(), float(a_i @ b_i)
    full = lambda value, per_item: np.r_[value, per_item]
    return Terms(n=full(n, np.full(n, n - 1.0)), frob=full(frob, frob - 2 * forms + ab_i),
                 sms=full(0.0, forms - ab_i), su2=full(0.0, a_i), sv2=full(0.0, b_i), a=full(a, a - a_i),
                 b=full(b, b - b_i), ab=full(ab, ab - ab_i), svu=full(0.0, -(tw_u - ab_i)),
                 svv=full(0.0, -(tw_v - ab_i)))


def item_terms(u: np.ndarray, v: np.ndarray, mean_u: np.ndarray, mean_v: np.ndarray, uu: np.ndarray,
               vv: np.ndarray, uv: np.ndarray, debiased: bool) -> tuple[Terms, Terms, Terms, np.ndarray, np.ndarray]:
    """(Terms of (u, v), of (u, u), of (v, v), a_i, b_i) for the delete-one-item jackknife, from one
    pass over the rows: per block the centred rows (into reused buffers), one product with
    [U~'U~ | U~'V~] and one with V~'V~, and per item the three forms u~_i'(U~'V~)v~_i,
    u~_i'(U~'U~)u~_i, v~_i'(V~'V~)v~_i and the squared norms a_i, b_i.  The debiased estimate also
    needs u~_i . sum_j b_j u~_j and the like: four more matrix-vector products over the rows."""
    n, p = u.shape
    left = np.hstack([uu, uv])
    forms, norms = np.empty((3, n)), np.empty((2, n))
    size = min(BLOCK_ROWS, n)
    cu, cv, ru, rv = (np.empty((size, width)) for width in (p, v.shape[1], left.shape[1], v.shape[1]))
    for low in range(0, n, size):
        x, y = u[low:low + size], v[low:low + size]
        k, rows = len(x), slice(low, low + len(x))
        bu, bv = np.subtract(x, mean_u, out=cu[:k]), np.subtract(y, mean_v, out=cv[:k])
        pu, pv = np.matmul(bu, left, out=ru[:k]), np.matmul(bv, vv, out=rv[:k])
        forms[0, rows] = np.einsum("ik,ik->i", pu[:, p:], bv)
        forms[1, rows] = np.einsum("ik,ik->i", pu[:, :p], bu)
        forms[2, rows] = np.einsum("ik,ik->i", pv, bv)
        norms[0, rows] = np.einsum("ik,ik->i", bu, bu)
        norms[1, rows] = np.einsum("ik,ik->i", bv, bv)
    a_i, b_i = norms
    if debiased:    # sum_j w_j (u_j - mean_u) for the weights w = b, a, then each item's dot product with it
        weights = np.stack([b_i, a_i], axis=1)
        w_u, w_v = u.T @ weights - np.outer(mean_u, weights.sum(axis=0)), v.T @ weights - np.outer(mean_v, weights.sum(axis=0))
        tw_u, tw_v = u @ w_u - mean_u @ w_u, v @ w_v - mean_v @ w_v      # columns: weighted by b, by a
        xy = _item_deleted(uv, forms[0], a_i, b_i, tw_u[:, 0], tw_v[:, 1])
        xx = _item_deleted(uu, forms[1], a_i, a_i, tw_u[:, 1], tw_u[:, 1])
        yy = _item_deleted(vv, forms[2], b_i, b_i, tw_v[:, 0], tw_v[:, 0])
    else:           # the biased estimate does not use the sums svu, svv
        zero = np.zeros(n)
        xy, xx, yy = (_item_deleted(m, f, a, b, zero, zero)
                      for m, f, a, b in ((uv, forms[0], a_i, b_i), (uu, forms[1], a_i, a_i), (vv, forms[2], b_i, b_i)))
    return xy, xx, yy, a_i, b_i


def hsic(t: Terms, debiased: bool) -> np.ndarray:
    """HSIC of the pair per replicate: biased ||U~'V~||^2 about each replicate's own mean (the
    factor 1/(n-1)^2 cancels in CKA), or the unbiased estimate of Song et al. (2012):
    [tr(K^ L^) + 1'K^1 1'L^1 / ((n-1)(n-2)) - 2/(n-2) 1'K^L^1] / (n (n-3)), K^ = K with a zero diagonal."""
    n = t.n.astype(float)
    if not debiased:
        return t.frob - 2 * t.sms / n + t.su2 * t.sv2 / n ** 2
    trace = t.frob - t.ab
    k_sum, l_sum = t.su2 - t.a, t.sv2 - t.b
    kl_sum = t.sms - t.svu - t.svv + t.ab
    return (trace + k_sum * l_sum / ((n - 1) * (n - 2)) - 2 * kl_sum / (n - 2)) / (n * (n - 3))


# ----------------------------------------------------------------------------------------------
# one pair of models

def permuted_cross(u: np.ndarray, v: np.ndarray, mean_u: np.ndarray, mean_v: np.ndarray,
                   perm: np.ndarray) -> np.ndarray:
    """U~' (P V~): v's items permuted, centred and multiplied a block of rows at a time."""
    out = np.zeros((u.shape[1], v.shape[1]))
    for rows in _blocks(len(u)):
        out += (u[rows] - mean_u).T @ (v[perm[rows]] - mean_v)
    return out


def _codes(groups: Sequence[object] | None) -> tuple[np.ndarray | None, int]:
    if groups is None:
        return None, 0
    names, codes = np.unique(np.asarray([text_key(g) for g in groups], dtype=object), return_inverse=True)
    return codes.astype(np.int64), len(names)


def check_model_spread(x: np.ndarray, model: object = None, undefined: str = "CKA is") -> None:
    """Refuse a model whose unit vectors are all the same point to within float64 resolution: its
    centred Gram matrix is rounding noise, which would give a small, meaningless CKA (and a p-value)
    instead of an error.  SS_T = sum ||x_i - mean||^2 in two passes, against n * eps (precision)."""
    check_total_spread(float(centred_square_norms(x, x.mean(axis=0)).sum()), len(x), model=model, undefined=undefined)


def _check_design(n: int, codes: np.ndarray | None, count: int, debiased: bool) -> None:
    _check_items(n, debiased)
    if codes is not None and count < 2:
        raise DesignError(f"the cluster jackknife needs at least 2 groups; the items are in {count}")
    if debiased and n - _largest(codes) < MIN_DEBIASED_ITEMS - 1:
        raise DesignError(f"the debiased CKA's jackknife deletes a group of {_largest(codes)} items and "
                          f"needs {MIN_DEBIASED_ITEMS - 1} left; there are {n} items")


def _largest(codes: np.ndarray | None) -> int:
    return 1 if codes is None else int(np.bincount(codes).max())


@dataclass(frozen=True)
class PairValues:
    """One pair's CKA on the full sample (index 0) and with each unit (group, else item) deleted,
    biased and debiased (None where the debiased jackknife is undefined: too few items left), with
    what the permutations reuse: the compared rows, their means and squared norms, the HSIC scale."""

    biased: np.ndarray
    debiased: np.ndarray | None
    u: np.ndarray
    v: np.ndarray
    mean_u: np.ndarray
    mean_v: np.ndarray
    a_i: np.ndarray
    b_i: np.ndarray
    scale: dict
    note: str | None = None
    undefined: dict | None = None   # the fields of design.debiased_hsic where the debiased CKA is undefined


def pair_values(x: np.ndarray, y: np.ndarray, codes: np.ndarray | None, count: int, route: str = "auto",
                permutations: int = 0, names: tuple = (None, None)) -> PairValues:
    """Both CKAs of two aligned unit-vector arrays with every jackknife replicate, from one set of
    products (the debiased sums cost four more matrix-vector products).

    The biased CKA is defined whenever both models have spread (check_model_spread).  The debiased
    one divides by sqrt(HSIC_1(K, K) HSIC_1(L, L)), and the unbiased HSIC of a model with itself can
    be 0 or negative on few items even with real spread: the debiased CKA is then undefined, left
    None with ``note`` saying why (not an error: the biased CKA stands).  ``names``: the two models."""
    n = len(x)
    u, v = coordinates(x, route, permutations)[0], coordinates(y, route, permutations)[0]
    mean_u, mean_v, uu, vv, uv = products(u, v)
    if codes is None:
        *terms, a_i, b_i = item_terms(u, v, mean_u, mean_v, uu, vv, uv, True)
    else:
        a_i, b_i = centred_square_norms(u, mean_u), centred_square_norms(v, mean_v)
        terms = [pair_terms(u, v, mean_u, mean_v, uv, codes, count, (a_i, b_i)),
                 pair_terms(u, u, mean_u, mean_u, uu, codes, count, (a_i, a_i)),
                 pair_terms(v, v, mean_v, mean_v, vv, codes, count, (b_i, b_i))]
    values: dict[bool, np.ndarray | None] = {}
    scale: dict[bool, float] = {}
    note = undefined = None
    for debiased in (False, True):
        if debiased and (n < MIN_DEBIASED_ITEMS or n - _largest(codes) < MIN_DEBIASED_ITEMS - 1):
            values[True] = None
            continue
        h_xy, h_xx, h_yy = (hsic(t, debiased) for t in terms)
        if not (h_xx[0] > 0 and h_yy[0] > 0):
            name, h = (names[0], h_xx[0]) if not h_xx[0] > 0 else (names[1], h_yy[0])
            if debiased:
                values[True] = None
                undefined = {"model": repr(name), "value": f"{float(h):.3g}", "n": n}
                note = str(error("design.debiased_hsic", whose="", **undefined))
                continue
            check_model_spread(np.zeros((n, 1)), name)   # HSIC(K, K) = ||K~||^2 > 0 with any spread: unreachable
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = h_xy / np.sqrt(h_xx * h_yy)
        values[debiased] = np.clip(ratio, RANGE[debiased][0], 1.0)   # (only the last bit of rounding lies outside)
        scale[debiased] = float(np.sqrt(h_xx[0] * h_yy[0]))
    biased = values[False]
    assert biased is not None
    return PairValues(biased, values[True], u, v, mean_u, mean_v, a_i, b_i, scale, note, undefined)


def cka_interval(debiased: np.ndarray | None, level: float = INTERVAL_LEVEL) -> tuple[float | None, float | None, bool]:
    """(ci_low, ci_high, calibrated) for the population CKA (the value both estimates tend to with
    many groups), from the debiased CKA and its jackknife replicates (index 0: the full sample):
    the debiased CKA +- t_{G-1} jackknife SE on Fisher's z scale (atanh), mapped back into [0, 1], as
    resampling.jackknife_t_interval builds R²'s but without its bias correction: the debiased CKA is
    already unbiased to a few thousandths, and correcting it again moved the centre by a quarter SD and
    cost coverage in the grouped designs (the "corrected" column of validation/cka_interval_centre.txt).
    Built on the debiased CKA for the biased
    one too: the biased CKA's upward bias grows with dimension over items (0.73 for a population
    0.14 at 200 items of d = 384 against 768), far beyond what a jackknife removes, so its own
    replicates covered 0-75% in two such designs (a prototype of validation/cka_validity.py), the debiased
    CKA's 93-99% in all of that bench's.  None where a replicate is undefined."""
    if debiased is None or len(debiased) - 1 < MIN_GROUPS or not np.all(np.isfinite(debiased)):
        return None, None, False
    _, low, high = jackknife_t_interval("cka", float(debiased[0]), debiased[1:], level, bias_correct=False)
    return low, high, len(debiased) - 1 >= CALIBRATED_UNITS


def cka_pair(x: np.ndarray, y: np.ndarray, *, groups: Sequence[object] | None = None, debiased: bool = False,
             permutations: int = 999, seed: int = 42, progress: Progress | None = None, route: str = "auto",
             names: tuple = (None, None)) -> dict:
    """CKA of two aligned unit-vector arrays, its jackknife SE (over ``groups`` if given, else over
    items), the interval of cka_interval and the permutation p-value (None with 0 permutations).
    The biased CKA is in [0, 1]; the debiased one in [-1, 1], and negative when the estimated
    dependence is (RANGE).  ``names``: the two models, for the error on a model with no spread."""
    check_permutations(permutations, allow_zero=True)
    check_seed(seed)
    n = len(x)
    codes, count = _codes(groups)
    _check_design(n, codes, count, debiased)
    check_model_spread(x, names[0])
    check_model_spread(y, names[1])
    pair = pair_values(x, y, codes, count, route, permutations, names)
    values = pair.debiased if debiased else pair.biased
    if values is None:   # the debiased CKA is undefined here (pair.note): NULL, not an error
        return {"cka": None, "se": None, "corrected": None, "ci_low": None, "ci_high": None, "calibrated": False,
                "p_value": None,
                "permutations": permutations, "items": n, "groups": None if groups is None else count,
                "debiased": True, "invariance": INVARIANCE, "note": pair.note}
    estimate, replicates = float(values[0]), values[1:]
    se = jackknife_se(replicates) if np.all(np.isfinite(replicates)) else None
    ci_low, ci_high, calibrated = cka_interval(pair.debiased)
    p_value = None
    if permutations:
        u, v, mean_u, mean_v, a_i, b_i = pair.u, pair.v, pair.mean_u, pair.mean_v, pair.a_i, pair.b_i
        scale = pair.scale[debiased]
        rng = np.random.default_rng(seed)
        permuted = np.empty(permutations)
        for t in range(permutations):
            perm = rng.permutation(n)
            frob = float(np.sum(permuted_cross(u, v, mean_u, mean_v, perm) ** 2))
            if debiased:    # s = 0, so 1'K^1 = -A, 1'L^1 = -B and 1'K^L^1 = sum a_i b_perm(i)
                ab = float(a_i @ b_i[perm])
                frob = ((frob - ab) + a_i.sum() * b_i.sum() / ((n - 1) * (n - 2)) - 2 * ab / (n - 2)) / (n * (n - 3))
            permuted[t] = frob / scale
            if progress is not None and t % 20 == 0:
                progress(t, permutations)
        p_value = permutation_result(estimate, permuted, "items").p_value
    # corrected: the debiased CKA the interval is built around (None without an interval)
    corrected = float(pair.debiased[0]) if ci_low is not None and pair.debiased is not None else None
    return {"cka": estimate, "se": se, "corrected": corrected, "ci_low": ci_low, "ci_high": ci_high,
            "calibrated": calibrated, "p_value": p_value, "permutations": permutations, "items": n,
            "groups": None if groups is None else count, "debiased": bool(debiased), "invariance": INVARIANCE,
            "note": None if pair.note is None else f"{pair.note}, so no interval"}


def jackknife_units(n: int, codes: np.ndarray | None, count: int, seed: int) -> tuple[np.ndarray, int]:
    """The units Procrustes' jackknife deletes: the groups, else the items; above PROCRUSTES_BLOCKS
    of them, that many blocks of units drawn at random (``seed``): the delete-a-block jackknife,
    whose SE and bias correction hold for independent units as the delete-one does, and which needs
    one SVD per block, not per unit."""
    codes, count = (np.arange(n), n) if codes is None else (codes, count)
    if count <= PROCRUSTES_BLOCKS:
        return codes, count
    block = (np.random.default_rng(seed).permutation(count) % PROCRUSTES_BLOCKS).astype(np.int64)
    return block[codes], PROCRUSTES_BLOCKS


def procrustes_replicates(u: np.ndarray, v: np.ndarray, mean_u: np.ndarray, mean_v: np.ndarray, uv: np.ndarray,
                          codes: np.ndarray, count: int) -> np.ndarray:
    """r with each unit of ``codes`` deleted: the cross product loses the unit's own products and
    gains the mean shift, X~'Y~ - P_g - t_u t_v' / (n - n_g) (t the unit's sums about the full
    mean), the traces likewise; one SVD each."""
    n = len(u)
    order = np.argsort(codes, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(codes, minlength=count))]
    a, b = float(centred_square_norms(u, mean_u).sum()), float(centred_square_norms(v, mean_v).sum())
    out = np.empty(count)
    for g in range(count):
        rows = order[bounds[g]:bounds[g + 1]]
        cu, cv = u[rows] - mean_u, v[rows] - mean_v
        t_u, t_v, left = cu.sum(axis=0), cv.sum(axis=0), n - len(rows)
        m = uv - cu.T @ cv - np.outer(t_u, t_v) / left
        scale = np.sqrt((a - float(np.vdot(cu, cu)) - t_u @ t_u / left) * (b - float(np.vdot(cv, cv)) - t_v @ t_v / left))
        out[g] = min(_nuclear(m) / scale, 1.0) if scale > 0 else np.nan
    return out


def _nuclear(m: np.ndarray) -> float:
    return float(np.linalg.svd(m, compute_uv=False).sum())


def procrustes_pair(x: np.ndarray, y: np.ndarray, *, groups: Sequence[object] | None = None,
                    permutations: int = 999, seed: int = 42, progress: Progress | None = None,
                    names: tuple = (None, None), jackknife: bool = True) -> dict:
    """vegan's protest: r = sqrt(1 - m12^2), m12^2 the symmetric Procrustes sum of squares, and the
    permutation p-value (items of y permuted; counted when r_perm >= r - sqrt(eps), as protest does);
    the jackknife SE over ``groups`` (else items, jackknife_units) and the bias-corrected jackknife t
    interval on the atanh scale, never calibrated: r's upward bias in high dimension is far larger
    than what the jackknife removes, and it covered 0-54% in simulation (validation/cka_validity.py).
    ``jackknife=False``: no SE and interval (None), for the report, which shows only CKA's."""
    check_permutations(permutations, allow_zero=True)
    check_seed(seed)
    n = len(x)
    _check_items(n, False)
    codes, count = _codes(groups)
    if codes is not None and count < MIN_GROUPS:
        fail("design.min_groups", what="Procrustes jackknife", minimum=MIN_GROUPS, why=f"; the items are in {count}")
    check_model_spread(x, names[0], "the Procrustes fit is")
    check_model_spread(y, names[1], "the Procrustes fit is")
    u, v = coordinates(x, permutations=permutations)[0], coordinates(y, permutations=permutations)[0]
    mean_u, mean_v, uu, vv, uv = products(u, v)
    scale = float(np.sqrt(np.trace(uu) * np.trace(vv)))
    if not scale > 0:
        raise DesignError("a model puts every item at the same point (no spread): the Procrustes fit is undefined")
    r = min(_nuclear(uv) / scale, 1.0)
    se = ci_low = ci_high = None
    if jackknife:
        units, unit_count = jackknife_units(n, codes, count, seed)
        replicates = procrustes_replicates(u, v, mean_u, mean_v, uv, units, unit_count)
    if jackknife and np.all(np.isfinite(replicates)):
        se = jackknife_se(replicates)
        _, ci_low, ci_high = jackknife_t_interval("procrustes", r, replicates, INTERVAL_LEVEL)
    p_value = None
    if permutations:
        rng = np.random.default_rng(seed)
        permuted = np.empty(permutations)
        for t in range(permutations):
            permuted[t] = _nuclear(permuted_cross(u, v, mean_u, mean_v, rng.permutation(n))) / scale
            if progress is not None and t % 20 == 0:
                progress(t, permutations)
        p_value = permutation_result(r, permuted, "items").p_value
    return {"r": r, "m12_squared": max(1.0 - r * r, 0.0), "se": se, "ci_low": ci_low, "ci_high": ci_high,
            "calibrated": False, "p_value": p_value, "permutations": permutations, "items": n,
            "groups": None if groups is None else count, "invariance": INVARIANCE}


def _check_items(n: int, debiased: bool) -> None:
    need = MIN_DEBIASED_ITEMS if debiased else MIN_ITEMS
    if n < need:
        what = "the debiased CKA" if debiased else "comparing two models' geometry"
        raise DesignError(f"{what} needs at least {need} items shared by both models; there are {n}")


# ----------------------------------------------------------------------------------------------
# every pair of models

def aligned(models: dict, common: bool, groups: dict | None = None, group: str = "group"
            ) -> tuple[list, dict, list | None]:
    """``models``: model -> (item ids, unit vectors[, group labels]).  The shared items in canonical
    order, each model's vectors in that order, and each item's group (the same in every model)."""
    if len(models) < 2:
        fail("model.too_few", column="the model column", models=len(models), needs="comparing geometry")
    if any(m is None for m in models):
        raise BadLabelError("model column has a NULL value; every row needs a model")
    items, rows_of = shared_items({m: parts[0] for m, parts in models.items()}, common)
    unit = {m: in_order(parts[1], rows_of[m]) for m, parts in models.items()}
    if groups is None:
        return items, unit, None
    group_of: dict = {}
    for m, labels in groups.items():
        for item, label in zip(items, np.asarray(labels, dtype=object)[rows_of[m]]):
            if label is None or (isinstance(label, float) and label != label):
                raise BadLabelError(f"group column {group!r} is NULL for item {item!r} of model {m!r}; "
                                    "every item needs a group")
            if group_of.setdefault(item, label) != label:
                raise InputError(f"group column {group!r}: item {item!r} is in group {group_of[item]!r} for one "
                                 f"model and {label!r} for model {m!r}; an item's group must be the same in every model")
    return items, unit, [group_of[item] for item in items]


def in_order(rows: np.ndarray, order: np.ndarray) -> np.ndarray:
    """rows[order], without the copy when the rows are in that order already (items stored sorted)."""
    if len(order) == len(rows) and np.array_equal(order, np.arange(len(rows))):
        return rows
    return rows[order]


def cka_rows(models: dict, *, groups: dict | None = None, group: str = "group", debiased: bool = False,
             permutations: int = 999, seed: int = 42, common: bool = False, progress: Progress | None = None
             ) -> list[dict]:
    """One row per pair of models (embsql.statistics.geometry.CKA's columns); see embsql.cka."""
    check_permutations(permutations, allow_zero=True)
    check_seed(seed)
    items, unit, item_groups = aligned(models, common, groups, group)
    return [{"model_a": a, "model_b": b,
             **cka_pair(unit[a], unit[b], groups=item_groups, debiased=debiased, permutations=permutations,
                        seed=seed, progress=progress, names=(a, b))}
            for a, b in combinations(sorted(unit, key=text_key), 2)]


def procrustes_rows(models: dict, *, groups: dict | None = None, group: str = "group", permutations: int = 999,
                    seed: int = 42, common: bool = False, progress: Progress | None = None,
                    jackknife: bool = True) -> list[dict]:
    """One row per pair of models (embsql.statistics.geometry.PROCRUSTES's columns); see embsql.procrustes."""
    check_permutations(permutations, allow_zero=True)
    check_seed(seed)
    _, unit, item_groups = aligned(models, common, groups, group)
    return [{"model_a": a, "model_b": b,
             **procrustes_pair(unit[a], unit[b], groups=item_groups, permutations=permutations, seed=seed,
                               progress=progress, names=(a, b), jackknife=jackknife)}
            for a, b in combinations(sorted(unit, key=text_key), 2)]


# ----------------------------------------------------------------------------------------------
# is model a closer to the reference than model b is?

def corrected_centre(d: np.ndarray) -> float:
    """The jackknife bias-corrected difference G d - (G - 1) mean(d_-g) (index 0: the full sample)."""
    g = len(d) - 1
    return g * float(d[0]) - (g - 1) * float(d[1:].mean())


def paired_difference(a: np.ndarray, b: np.ndarray, level: float = INTERVAL_LEVEL) -> tuple[float, float, float, float]:
    """(se, ci_low, ci_high, p_value) of the population CKA(a, R) - CKA(b, R) from the two pairs'
    debiased CKAs with the same units deleted (index 0: the full sample): the paired jackknife,
    the bias-corrected difference +- t_{G-1} SE (the difference has no bound to transform away
    from), and the two-sided t test of no difference on the same studentized centre."""
    d = a - b
    g = len(d) - 1
    se = jackknife_se(d[1:])
    centre = corrected_centre(d)
    if se == 0:     # the two models agree on every replicate (e.g. the same model twice)
        return 0.0, centre, centre, 1.0
    half = t_quantile((1 + level) / 2, g - 1) * se
    p_value = 2.0 * (1.0 - t_cdf(abs(centre) / se, g - 1))
    return se, max(centre - half, -1.0), min(centre + half, 1.0), float(min(max(p_value, np.finfo(float).tiny), 1.0))


def compare_cka_rows(models: dict, reference: object, *, groups: dict | None = None, group: str = "group",
                     debiased: bool = False, common: bool = False, model: str = "model", intervals: str = "marginal",
                     replicates: int = 2000, seed: int = 42) -> list[dict]:
    """One row per pair of models other than ``reference`` (COMPARE_CKA's columns, ``interval``
    saying which kind the interval is); see embsql.compare_cka."""
    intervals, seed = check_intervals(intervals), check_seed(seed)
    replicates = check_replicates(replicates)
    values, ref, codes, count, n = reference_values(models, reference, groups=groups, group=group, common=common,
                                                    model=model)
    names = sorted(values, key=text_key)
    rows = []
    for a, b in combinations(names, 2):
        pa, pb = values[a], values[b]
        assert pa.debiased is not None and pb.debiased is not None
        se, low, high, p_value = paired_difference(pa.debiased, pb.debiased)
        cka_a, cka_b = (float(pa.debiased[0]), float(pb.debiased[0])) if debiased else (float(pa.biased[0]),
                                                                                         float(pb.biased[0]))
        rows.append({"model_a": a, "model_b": b, "reference": ref, "cka_a": cka_a, "cka_b": cka_b,
                     "difference": cka_a - cka_b, "se": se, "ci_low": low, "ci_high": high, "p_value": p_value,
                     "calibrated": (count if codes is not None else n) >= CALIBRATED_UNITS, "items": n,
                     "groups": None if codes is None else count, "debiased": bool(debiased), "interval": intervals})
    if intervals == "simultaneous":
        found = [values[m].debiased for m in names]
        lows, highs = simultaneous_cka_intervals([d for d in found if d is not None], INTERVAL_LEVEL,
                                                 replicates=replicates, seed=seed)
        for p, row in enumerate(rows):
            row.update(ci_low=float(lows[p]), ci_high=float(highs[p]))
    return rows


def simultaneous_cka_intervals(debiased: list[np.ndarray], level: float, *, replicates: int,
                               seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) per pair j < k of models (pairs_of order) whose debiased CKAs with the reference
    are given with their delete-one replicates on the same units (index 0: the full sample): the
    marginal interval's centre (the bias-corrected difference) -/+ c se, se the paired jackknife SE
    and c the ``level`` quantile of the largest |t| over the pairs in ``replicates`` joint normal
    draws of the jackknife covariance (model_ranking.normal_family; a single-step max-|t|)."""
    table = np.stack([np.asarray(d, dtype=float) for d in debiased], axis=1)
    fam = normal_family(table[0], jackknife_covariance(table[1:]), replicates=replicates, seed=seed)
    c = simultaneous_critical(fam, level)
    centre = np.array([corrected_centre(table[:, a] - table[:, b]) for a, b in fam.pairs])
    se = np.array([jackknife_se(table[1:, a] - table[1:, b]) for a, b in fam.pairs])
    return np.maximum(centre - c * se, -1.0), np.minimum(centre + c * se, 1.0)


def rank_cka_rows(models: dict, reference: object, *, groups: dict | None = None, group: str = "group",
                  common: bool = False, model: str = "model", level: float = 0.95, replicates: int = 2000,
                  seed: int = 42) -> list[dict]:
    """The rank confidence sets of the models other than ``reference`` by their debiased CKA with it
    (embsql.core.model_ranking.jackknife_rows on the paired jackknife's replicates, the units those
    of compare_cka): one row of RANK_COLUMNS per model, in model order."""
    values, _, _, _, _ = reference_values(models, reference, groups=groups, group=group, common=common, model=model)
    names = sorted(values, key=text_key)
    found = []
    for m in names:
        debiased = values[m].debiased
        assert debiased is not None
        found.append(debiased)
    return jackknife_rows(names, found, "cka", level=level, replicates=replicates, seed=seed)


def reference_values(models: dict, reference: object, *, groups: dict | None, group: str, common: bool,
                     model: str) -> tuple[dict, object, np.ndarray | None, int, int]:
    """(model -> its PairValues against the reference, with its debiased jackknife replicates; the
    reference's name; the units' codes and count; the items) for every model other than the
    reference, after the design checks of the paired CKA jackknife."""
    if not any(text_key(m) == text_key(reference) for m in models):
        fail("model.reference", reference=repr(reference), column=repr(model),
             models=", ".join(map(repr, sorted(models, key=text_key))))
    if len(models) < 3:
        fail("model.too_few", column=f"model column {model!r} besides the reference {reference!r}",
             models=len(models) - 1, needs="comparing two models against a reference")
    items, unit, item_groups = aligned(models, common, groups, group)
    codes, count = _codes(item_groups)
    n = len(items)
    _check_design(n, codes, count, True)
    if codes is not None and count < MIN_GROUPS:
        fail("design.min_groups", what="paired CKA jackknife", minimum=MIN_GROUPS, why=f"; the items are in {count}")
    ref = next(m for m in unit if text_key(m) == text_key(reference))
    for m, x in unit.items():
        check_model_spread(x, m)
    values = {m: pair_values(unit[m], unit[ref], codes, count, names=(m, ref))
              for m in unit if m is not ref}
    for m in sorted(values, key=text_key):
        undefined = values[m].undefined
        if undefined is not None:   # the paired jackknife compares debiased CKAs
            fail("design.debiased_hsic", whose=f" of model {m!r} against reference {ref!r}", **undefined)
    return values, ref, codes, count, n
