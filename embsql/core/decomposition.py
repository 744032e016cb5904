"""Stage 2: the sum-of-squares decomposition from sufficient statistics.

For unit vectors u_i, with group means m_g = s_g / n_g and the overall mean m = s / n:
    SS_W = sum_g within_g (within_g = sum_{i in g} ||u_i - m_g||^2, accumulated stably in stage 1),
    SS_B = sum_g n_g ||m_g - m||^2,   SS_T = SS_W + SS_B.
Algebraically SS_T = n - ||s||^2 / n and SS_W = n - sum_g ||s_g||^2 / n_g, but those differences of
nearly equal numbers lose every digit when the vectors are close together; the sums above only
ever add non-negative terms, so SS_W <= SS_T and 0 <= R^2 <= 1 by construction.  Spreads float64
cannot resolve at all are refused (embsql.core.precision).
"""

from __future__ import annotations

import numpy as np

from embsql.core import design, precision
from embsql.core.permutation import pseudo_f, within_pairs
from embsql.core.sums import GroupSums

ANOVA_COLUMNS = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v",
                 "mean_resultant_length", "w_bar")
GROUP_COLUMNS = ("group", "n_g", "w", "w_tilde", "resolved")
DISTANCE_COLUMNS = ANOVA_COLUMNS[:8]     # the distance route has no vectors: no v, mean resultant length, w_bar


def between_ss(sums: GroupSums, centre: np.ndarray | None = None) -> np.ndarray:
    """Per group n_g ||m_g - c||^2, about ``centre`` c (default: the overall mean)."""
    counts = sums.counts.astype(np.float64)
    means = sums.sums / counts[:, None]
    if centre is None:
        centre = sums.sums.sum(axis=0) / counts.sum()
    deviation = means - centre
    return counts * np.einsum("gk,gk->g", deviation, deviation)


def sums_of_squares(sums: GroupSums) -> dict:
    """n, groups, SS_W, SS_B and the mean resultant length: the parts every decomposition figure is
    derived from (no checks: anova_row checks them; the SQL route of emb_permanova checks them in SQL)."""
    n = int(sums.counts.sum())
    return {"n": n, "groups": len(sums.counts), "ss_w": float(sums.within_ss().sum()),
            "ss_b": float(between_ss(sums).sum()),
            "mean_resultant_length": float(np.linalg.norm(sums.sums.sum(axis=0))) / n}


def anova_row(sums: GroupSums, by_value: object = None) -> dict:
    """The decomposition of one by value; raises DesignError where it is undefined."""
    parts = sums_of_squares(sums)
    n, groups, ss_w, ss_b = float(parts["n"]), parts["groups"], parts["ss_w"], parts["ss_b"]
    design.check_groups(groups, int(n), needs="the decomposition", value=by_value)
    ss_t = ss_w + ss_b
    precision.check_spread(ss_t, ss_w, int(n), model=by_value)
    return {**decomposition(int(n), groups, ss_t, ss_w, ss_b), "v": ss_t / n,
            "mean_resultant_length": parts["mean_resultant_length"], "w_bar": ss_w / n}


def decomposition(n: int, groups: int, ss_t: float, ss_w: float, ss_b: float) -> dict:
    """The figures of DISTANCE_COLUMNS from the sums of squares: R² = SS_B / SS_T, its null
    expectation (G - 1) / (n - 1), and pseudo-F = (SS_B / (G - 1)) / (SS_W / (n - G)), infinite when
    SS_W = 0 (every group's items coincide)."""
    return {"n": n, "groups": groups, "ss_t": ss_t, "ss_w": ss_w, "ss_b": ss_b, "r2": ss_b / ss_t,
            "r2_null": (groups - 1) / (n - 1.0),
            "f": float(pseudo_f(ss_b, ss_w, n, groups))}


def distance_anova_row(squared: np.ndarray, codes: np.ndarray, *, column: str | None = None) -> dict:
    """The decomposition from an n x n matrix of squared dissimilarities (symmetric, zero diagonal) of
    items in groups ``codes`` (0..G-1): SS_T = (1/n) sum_{i<j} d_ij^2, SS_W = sum_g (1/n_g)
    sum_{i<j in g} d_ij^2 (the sums of squares of the principal-coordinates embedding), SS_B = SS_T - SS_W
    signed: negative only for a dissimilarity that is not Euclidean-embeddable.  Squared distances add
    without cancellation, so one pass suffices.  Raises DesignError where the decomposition is
    undefined (``column``: the group column, named in the message)."""
    n, groups = len(codes), int(codes.max()) + 1 if len(codes) else 0
    design.check_groups(groups, n, needs="the decomposition", column=column, unit="id")
    ss_t = float(np.triu(squared, 1).sum()) / n
    precision.check_total_spread(ss_t, n, undefined="R2 and F are", distances=True)
    first, second, weight = within_pairs(codes)
    ss_w = float(squared[first, second] @ weight)
    return decomposition(n, groups, ss_t, ss_w, ss_t - ss_w)


def group_rows(sums: GroupSums) -> list[dict]:
    """W_g = within_g / n_g (the mean squared distance to the group mean; 1 - ||s_g||^2 / n_g^2 in
    exact arithmetic) and W~_g = n_g / (n_g - 1) W_g (None for singletons), by label; ``resolved`` is
    False where the group's spread is above 0 but below float64 resolution (precision.RESOLUTION), so
    its W_g is rounding noise and must not be read as a figure."""
    counts = sums.counts.astype(np.float64)
    within = sums.within_ss()
    w = within / counts
    resolved = precision.resolved_groups(within, counts)
    rows = [{"group": label, "n_g": int(c), "w": float(wg), "w_tilde": float(c / (c - 1) * wg) if c > 1 else None,
             "resolved": bool(ok)}
            for label, c, wg, ok in zip(sums.labels, counts, w, resolved)]
    return sorted(rows, key=lambda r: r["group"])
