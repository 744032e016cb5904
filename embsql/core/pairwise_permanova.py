"""Pairwise PERMANOVA: the one-factor pseudo-F test on the rows of every pair of groups, with the
p-values adjusted for the number of pairs.

Each pair (a, b) is exactly the test embsql.permanova runs on the two groups' rows: the same F
and R², and with the same seed the same permutations, so the same p-value.  What is shared:
  * the observed F of every pair from the per-group sums s_g and their inner products s_g.s_h
    (SS_W of the pair is n_a - ||s_a||^2/n_a + n_b - ||s_b||^2/n_b): O(G d + G^2 d) for all pairs;
  * the Gram blocks Z_g Z_h': each group's own block is computed once and serves its G - 1 pairs;
  * the permutations: one seeded draw of row orders per pair size n_a + n_b serves every pair of
    that size (they are the very orders embsql.permanova draws for those rows).
A permutation of the pair moves rows between the two groups; only the smaller permuted group's
sum s' matters (the other is s_ab - s'), and ||s'||^2 = sum of a k x k block of the pair's Gram
matrix (k = min(n_a, n_b)), so a pair costs k^2 gathers per permutation (or k d with
coordinates, when k >= d).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.labels import Labels, sort_key, text_key
from embsql.core.permutation import canonical_order, permutation_result, pseudo_f
from embsql.core.precision import check_unit_spread
from embsql.errors import DesignError, InputError

PAIRWISE_COLUMNS = ("group_a", "group_b", "items", "r2", "f", "p_value", "p_adjusted")
ADJUSTMENTS = ("holm", "bh", "bonferroni", None)
BATCH = 128          # permutations per gather: bounds the (batch x k x k) index arrays


def adjust(p_values: ArrayLike, method: str | None) -> NDArray[np.float64]:
    """Holm's step-down, Benjamini-Hochberg's step-up or Bonferroni adjusted p-values (as R's p.adjust)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if method is None or m == 0:
        return p.copy()
    if method == "bonferroni":
        return np.minimum(p * m, 1.0)
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adjusted = np.minimum(np.maximum.accumulate(ranked * (m - np.arange(m))), 1.0)
    elif method == "bh":
        adjusted = np.minimum(np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1], 1.0)
    else:
        raise InputError(f"p_adjust must be 'holm', 'bh', 'bonferroni' or None, not {method!r}")
    out = np.empty(m)
    out[order] = adjusted
    return out


def choose_pairs(names: list[object], pairs: str | Iterable[Iterable[object]], group: str) -> list[tuple[object, object]]:
    """The pairs to test: every pair of groups in display order, or the given list, checked."""
    if isinstance(pairs, str):
        if pairs != "all":
            raise InputError(f"group_pairs must be 'all' or a list of (group, group) pairs, not {pairs!r}")
        return list(combinations(sorted(names, key=sort_key), 2))
    known = {text_key(n): n for n in names}
    out: list[tuple[object, object]] = []
    seen: set[frozenset[str]] = set()
    try:
        given = [tuple(p) for p in pairs]
    except TypeError:
        raise InputError(f"group_pairs must be 'all' or a list of (group, group) pairs, not {pairs!r}") from None
    for pair in given:
        if len(pair) != 2:
            raise InputError(f"group_pairs: {pair!r} is not a pair of two groups")
        for value in pair:
            if text_key(value) not in known:
                raise InputError(f"group_pairs: group {value!r} is not a value of the group column {group!r}")
        a, b = (known[text_key(v)] for v in pair)
        if text_key(a) == text_key(b):
            raise InputError(f"group_pairs: ({a!r}, {b!r}) pairs a group with itself")
        key = frozenset((text_key(a), text_key(b)))
        if key in seen:
            raise InputError(f"group_pairs: ({a!r}, {b!r}) is listed twice")
        seen.add(key)
        out.append((a, b))
    if not out:
        raise InputError("pairs is empty: name at least one pair of groups")
    return out


class _Groups:
    """The rows of each group in canonical order (embsql.permanova's), their sums and Gram blocks."""

    def __init__(self, labels: Labels, unit: NDArray[np.float64]) -> None:
        order = canonical_order(labels, None, unit)
        labels, unit = np.asarray(labels, dtype=object)[order], unit[order]
        self.rows: dict[str, NDArray[np.float64]] = {}
        for text in sorted({text_key(x) for x in labels}):
            self.rows[text] = unit[np.fromiter((text_key(x) == text for x in labels), bool, len(labels))]
        self.sums = {g: rows.sum(axis=0) for g, rows in self.rows.items()}
        self._own: dict[str, np.ndarray] = {}

    def own_gram(self, g: str) -> np.ndarray:
        if g not in self._own:
            self._own[g] = self.rows[g] @ self.rows[g].T
        return self._own[g]


def _orders(size: int, permutations: int, seed: int) -> np.ndarray:
    """The row orders embsql.permanova draws for ``size`` rows without strata."""
    rng = np.random.default_rng(seed)
    return np.stack([rng.permutation(size) for _ in range(permutations)])


def _pair_test(groups: _Groups, first: str, second: str, orders: np.ndarray | None) -> dict:
    """One pair (first before second in text order): R², F and the permutation p."""
    x_a, x_b = groups.rows[first], groups.rows[second]
    n_a, n_b = len(x_a), len(x_b)
    n = n_a + n_b
    if n <= 2:
        raise DesignError(f"the pair ({first!r}, {second!r}) has one item in each group: F has no within-group "
                          "degrees of freedom")
    s_a, s_b = groups.sums[first], groups.sums[second]
    s = s_a + s_b
    total = float(s @ s)
    ss_t = n - total / n
    ss_w = n - float(s_a @ s_a) / n_a - float(s_b @ s_b) / n_b
    try:
        check_unit_spread(np.vstack([x_a, x_b]), np.repeat([0, 1], [n_a, n_b]))
    except DesignError as error:
        raise DesignError(f"the pair ({first!r}, {second!r}): {error}", kind=error.kind) from None
    f = float(pseudo_f(ss_t - ss_w, ss_w, n, 2))
    row = {"items": n, "r2": (ss_t - ss_w) / ss_t, "f": f, "p_value": None}
    if orders is None:
        return row
    # rows of the pair: first's then second's; row i's label goes to item orders[:, i].  The
    # permuted group that is smaller (k rows) decides: its sum s', the other's s - s'.
    small, k = (slice(0, n_a), n_a) if n_a <= n_b else (slice(n_a, n), n_b)
    size_small, size_big = (n_a, n_b) if n_a <= n_b else (n_b, n_a)
    d = x_a.shape[1]
    if k < d:
        cross = x_a @ x_b.T
        gram = np.block([[groups.own_gram(first), cross], [cross.T, groups.own_gram(second)]])
        row_sums = gram.sum(axis=1)
    else:
        rows = np.vstack([x_a, x_b])
        projections = rows @ s
    sq_small = np.empty(len(orders))
    dot = np.empty(len(orders))
    for low in range(0, len(orders), BATCH):
        chosen = orders[low:low + BATCH, small]
        if k < d:
            sq_small[low:low + BATCH] = gram[chosen[:, :, None], chosen[:, None, :]].sum(axis=(1, 2))
            dot[low:low + BATCH] = row_sums[chosen].sum(axis=1)
        else:
            sums = rows[chosen].sum(axis=1)
            sq_small[low:low + BATCH] = np.einsum("bk,bk->b", sums, sums)
            dot[low:low + BATCH] = projections[chosen].sum(axis=1)
    sq_big = total - 2 * dot + sq_small
    permuted_ss_w = n - sq_small / size_small - sq_big / size_big
    permuted = pseudo_f(ss_t - permuted_ss_w, permuted_ss_w, n, 2)
    row["p_value"] = permutation_result(f, permuted, "pairs").p_value
    return row


def pairwise_rows(labels: Labels, unit: NDArray[np.float64], *, pairs: str | Iterable[Iterable[object]] = "all",
                  p_adjust: str | None = "holm", permutations: int = 999, seed: int = 42, group: str = "group",
                  progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """One row per pair of groups (PAIRWISE_COLUMNS); see embsql.pairwise_permanova."""
    check_permutations(permutations, allow_zero=True)
    check_seed(seed)
    if p_adjust not in ADJUSTMENTS:
        raise InputError(f"p_adjust must be 'holm', 'bh', 'bonferroni' or None, not {p_adjust!r}")
    names = {text_key(x): x for x in labels}
    if len(names) < 2:
        raise DesignError(f"group column {group!r} has {len(names)} group(s); pairwise tests need at least two")
    chosen = choose_pairs(list(names.values()), pairs, group)
    groups = _Groups(labels, unit)
    orders: dict[int, np.ndarray] = {}
    rows = []
    for done, (a, b) in enumerate(chosen):
        first, second = sorted((text_key(a), text_key(b)))
        size = len(groups.rows[first]) + len(groups.rows[second])
        if permutations and size not in orders:
            orders[size] = _orders(size, permutations, seed)
        rows.append({"group_a": a, "group_b": b,
                     **_pair_test(groups, first, second, orders.get(size) if permutations else None)})
        if progress is not None:
            progress(done + 1, len(chosen))
    if permutations:
        for row, adjusted in zip(rows, adjust([r["p_value"] for r in rows], p_adjust)):
            row["p_adjusted"] = float(adjusted)
    else:
        for row in rows:
            row["p_adjusted"] = None
    return rows
