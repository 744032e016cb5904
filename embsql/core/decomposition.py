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
from embsql.core.sums import GroupSums

ANOVA_COLUMNS = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v",
                 "mean_resultant_length", "w_bar")
GROUP_COLUMNS = ("group", "n_g", "w", "w_tilde", "resolved")


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
    return {"n": int(n), "groups": groups, "ss_t": ss_t, "ss_w": ss_w, "ss_b": ss_b, "r2": ss_b / ss_t,
            "r2_null": (groups - 1) / (n - 1), "f": (ss_b / (groups - 1)) / (ss_w / (n - groups)), "v": ss_t / n,
            "mean_resultant_length": parts["mean_resultant_length"], "w_bar": ss_w / n}


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
