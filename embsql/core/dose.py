"""Paraphrase strength as a dose: W~_q per level, its trend and a permutation test.

Queries carry a paraphrase group (the original question) and a level (paraphrase strength,
ordered).  For each level l and group g with n_gl >= 2 queries at that level,
    W~_gl = n_gl / (n_gl - 1) * (1 - ||s_gl||^2 / n_gl^2)        (s_gl the sum of unit vectors)
and W~_q(l) is the mean of W~_gl over the groups where it is defined.  Its SE is the cluster
jackknife over paraphrase groups; a step between consecutive levels gets the paired SE (the
same group deleted at both levels).

Trend test (one-sided): T = sum_l (r_l - mean r) W~_q(l), r_l = 0, 1, ... the order of the
levels that have a W~_q.  Under "level does not change the spread" the levels of a group's
queries are exchangeable, so they are permuted within each paraphrase group (the numbers of
queries per level and group stay fixed, so the same cells stay defined); p = (b + 1)/(B + 1)
with b the permutations whose T is at least the observed one.  Each permutation's W~_gl comes
from the group's Gram matrix: ||s_gl||^2 = sum_ij K_ij [level_i = l][level_j = l].
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from embsql.core import decomposition
from embsql.core.arguments import check_permutations, check_seed
from embsql.core.labels import sort_key
from embsql.core.margins import cluster_jackknife_ratio
from embsql.core.permutation import PermutationTest, permutation_result
from embsql.core.resampling import jackknife_se
from embsql.core.structure import mean_w_tilde
from embsql.core.sums import GroupSums
from embsql.errors import DesignError, InputError

PERMUTATION_BLOCK = 256       # permutations per matrix product (bounds memory for large groups)


@dataclass(frozen=True)
class Level:
    level: object
    queries: int
    groups: int               # paraphrase groups with at least 2 queries at this level
    w_tilde_q: float | None
    se: float | None
    step: float | None        # W~_q(l) - W~_q(previous level with a value)
    step_se: float | None


@dataclass(frozen=True)
class Dose:
    levels: tuple[Level, ...]
    monotone: bool            # the point estimates increase strictly from level to level
    statistic: float          # T
    p_value: float
    permutations: int
    works: bool               # monotone and p_value <= alpha: the manipulation acts as a dose


def _codes(values: Sequence[object]) -> tuple[list, np.ndarray]:
    names = sorted(set(values), key=sort_key)
    lookup = {v: k for k, v in enumerate(names)}
    return names, np.fromiter((lookup[v] for v in values), np.int64, len(values))


def analyse(groups: Sequence[object], levels: Sequence[object], keys: Sequence[object] | np.ndarray,
            unit: np.ndarray, *, permutations: int = 999, seed: int = 42,
            alpha: float = 0.05) -> Dose:
    """W~_q per level with jackknife SEs, monotonicity and the within-group permutation trend test.

    ``groups``, ``levels``: labels per query; ``keys``: the query ids as text (a canonical order,
    so a seed gives the same p-value whatever order the rows came in); ``unit``: unit vectors.
    """
    check_permutations(permutations)
    check_seed(seed)
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be between 0 and 1, not {alpha!r}")
    level_names, level_codes = _codes(list(levels))
    if len(level_names) < 2:
        raise DesignError(f"the level column has only one level ({level_names[0]!r}); a dose needs at least two")
    group_names, group_codes = _codes(list(groups))
    n_levels, n_groups = len(level_names), len(group_names)

    # W~ of every (group, level) cell from the shared sufficient statistics and decomposition
    cells = GroupSums.from_rows(list(zip(group_codes.tolist(), level_codes.tolist())), unit)
    w_cell = np.zeros((n_groups, n_levels))
    defined = np.zeros((n_groups, n_levels), bool)
    for row in decomposition.group_rows(cells):
        g, lv = row["group"]
        if row["w_tilde"] is not None:
            w_cell[g, lv], defined[g, lv] = row["w_tilde"], True
    queries_per_level = np.bincount(level_codes, minlength=n_levels)

    rows, estimates, previous = [], {}, None
    for lv, name in enumerate(level_names):
        theta, replicates = cluster_jackknife_ratio(w_cell[:, lv], defined[:, lv], np.arange(n_groups))
        has_value = defined[:, lv].any()
        step = step_se = None
        if has_value and previous is not None:
            step = float(theta - estimates[previous][0])
            if replicates is not None and estimates[previous][1] is not None:
                step_se = jackknife_se(replicates - estimates[previous][1])
        if has_value:
            estimates[lv] = (theta, replicates)
            previous = lv
        rows.append(Level(name, int(queries_per_level[lv]), int(defined[:, lv].sum()),
                          float(theta) if has_value else None,
                          jackknife_se(replicates) if has_value and replicates is not None else None, step, step_se))
    valued = sorted(estimates)
    if len(valued) < 2:
        raise DesignError("fewer than two levels have a paraphrase group with two or more queries at that level, "
                          "so W~_q cannot be compared across levels")
    monotone = bool(all(estimates[a][0] < estimates[b][0] for a, b in itertools.pairwise(valued)))
    weights = np.zeros(n_levels)
    weights[valued] = np.arange(len(valued)) - (len(valued) - 1) / 2
    test = _trend_test(group_codes, level_codes, np.asarray(keys, dtype=object), unit, defined, weights,
                       permutations, seed)
    assert test.statistic is not None and test.p_value is not None      # a trend test always runs here
    return Dose(tuple(rows), monotone, test.statistic, test.p_value, test.permutations,
                monotone and test.p_value <= alpha)


def _trend_test(group_codes: np.ndarray, level_codes: np.ndarray, keys: np.ndarray, unit: np.ndarray,
                defined: np.ndarray, weights: np.ndarray, permutations: int, seed: int) -> PermutationTest:
    n_groups, n_levels = defined.shape
    rng = np.random.default_rng(seed)
    totals = np.zeros((permutations + 1, n_levels))       # row 0: the observed levels
    for g in range(n_groups):                             # group codes follow the sorted labels
        members = np.flatnonzero(group_codes == g)
        if not defined[g].any():
            continue
        members = members[np.argsort(keys[members].astype(str), kind="stable")]
        codes = level_codes[members]
        shuffled = np.vstack([codes, rng.permuted(np.tile(codes, (permutations, 1)), axis=1)])
        gram = unit[members] @ unit[members].T
        totals += _cell_w_tilde(gram, shuffled, defined[g], n_levels)
    counts = defined.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = np.where(counts > 0, totals / np.maximum(counts, 1), 0.0)
    t = w @ weights
    return permutation_result(t[0], t[1:], "levels permuted within paraphrase groups")


def _cell_w_tilde(gram: np.ndarray, shuffled: np.ndarray, defined: np.ndarray, n_levels: int) -> np.ndarray:
    """W~ of each level's cell for every row of level codes (0 where the cell is undefined)."""
    size = np.bincount(shuffled[0], minlength=n_levels).astype(float)
    out = np.empty((len(shuffled), n_levels))
    n = shuffled.shape[1]
    for low in range(0, len(shuffled), PERMUTATION_BLOCK):
        block = shuffled[low:low + PERMUTATION_BLOCK]
        # one-hot rows per (permutation, level): ||s_l||^2 = h K h^T, as one matrix product
        onehot = (block[:, None, :] == np.arange(n_levels)[None, :, None]).reshape(-1, n).astype(float)
        squared = np.einsum("kj,kj->k", onehot @ gram, onehot).reshape(len(block), n_levels)
        with np.errstate(invalid="ignore", divide="ignore"):
            w = size / (size - 1) * np.maximum(0.0, 1 - squared / (size * size))
        out[low:low + len(block)] = np.where(defined, w, 0.0)
    return out


DOSE_COLUMNS = ("model", "strength", "queries", "groups", "w_tilde_q", "se", "step", "step_se", "w_tilde_g",
                "ratio", "monotone", "p_value", "permutations", "dose_works")


class ModelRows(Protocol):
    """What dose_rows reads of one model's queries or documents (embsql.io.retrieval_rows.Rows)."""

    @property
    def group(self) -> np.ndarray | None: ...
    @property
    def strength(self) -> np.ndarray | None: ...
    @property
    def keys(self) -> np.ndarray: ...
    @property
    def unit(self) -> np.ndarray: ...


def dose_rows(m: object, q: ModelRows, d: ModelRows | None, permutations: int, seed: int,
              alpha: float) -> list[dict]:
    """Rows of DOSE_COLUMNS for model ``m``: ``q`` the query rows (group, strength, keys, unit), ``d``
    the document rows (group, unit) or None; the ratio is W~_q / W~_g (mean W~ of the document groups)."""
    assert q.group is not None and q.strength is not None      # read for the dose
    result = analyse(q.group.tolist(), q.strength.tolist(), q.keys, q.unit, permutations=permutations, seed=seed,
                     alpha=alpha)
    w_g = mean_w_tilde(d.group, d.unit)[2] if d is not None and d.group is not None else None
    return [{"model": m, "strength": lv.level, "queries": lv.queries, "groups": lv.groups, "w_tilde_q": lv.w_tilde_q,
             "se": lv.se, "step": lv.step, "step_se": lv.step_se, "w_tilde_g": w_g,
             "ratio": None if lv.w_tilde_q is None or not w_g else lv.w_tilde_q / w_g,
             "monotone": result.monotone, "p_value": result.p_value, "permutations": result.permutations,
             "dose_works": result.works} for lv in result.levels]
