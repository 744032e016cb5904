"""Stage 2: the sum-of-squares decomposition from sufficient statistics (S2-S4, S10, S11).

For unit vectors everything follows from n_g and s_g (the per-group sum of unit vectors):
    SS_T = n - ||s||^2 / n,   SS_W = n - sum_g ||s_g||^2 / n_g,   SS_B = sum_g ||s_g||^2 / n_g - ||s||^2 / n.
The same formulas are in sql/embsql.sql (emb__anova); tests hold the two to each other.
"""

from __future__ import annotations

import numpy as np

from .errors import DesignError
from .sufficient import GroupSums

ANOVA_COLUMNS = ("n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v",
                 "mean_resultant_length", "w_bar")
GROUP_COLUMNS = ("group", "n_g", "w", "w_tilde")


def _where(by_value) -> str:
    return "" if by_value is None else f" (by value {by_value!r})"


def anova_row(sums: GroupSums, by_value=None) -> dict:
    """The decomposition of one by value; raises DesignError where it is undefined."""
    counts = sums.counts.astype(np.float64)
    n, groups = float(counts.sum()), len(counts)
    if groups < 2:
        raise DesignError(f"only one group{_where(by_value)}: the decomposition needs at least two")
    if n == groups:
        raise DesignError(f"every group has one row (n = G = {int(n)}){_where(by_value)}: "
                          "no within-group degrees of freedom, so SS_W and F are undefined")
    total = sums.sums.sum(axis=0)
    tt = float(total @ total)
    between = float(np.einsum("gk,gk->g", sums.sums, sums.sums) @ (1.0 / counts))
    ss_t = n - tt / n
    if ss_t <= 0:
        raise DesignError(f"all {int(n)} vectors point the same way (SS_T = 0){_where(by_value)}: R2 and F are undefined")
    ss_w = max(0.0, n - between)
    ss_b = max(0.0, between - tt / n)
    f = np.inf if ss_w == 0 else (ss_b / (groups - 1)) / (ss_w / (n - groups))
    return {"n": int(n), "groups": groups, "ss_t": ss_t, "ss_w": ss_w, "ss_b": ss_b, "r2": ss_b / ss_t,
            "r2_null": (groups - 1) / (n - 1), "f": f, "v": ss_t / n,
            "mean_resultant_length": float(np.sqrt(tt)) / n, "w_bar": ss_w / n}


def group_rows(sums: GroupSums) -> list[dict]:
    """W_g = 1 - ||s_g||^2 / n_g^2 and W~_g = n_g / (n_g - 1) W_g (None for singletons), by label."""
    counts = sums.counts.astype(np.float64)
    w = np.maximum(0.0, 1.0 - np.einsum("gk,gk->g", sums.sums, sums.sums) / (counts * counts))
    rows = [{"group": label, "n_g": int(c), "w": float(wg), "w_tilde": float(c / (c - 1) * wg) if c > 1 else None}
            for label, c, wg in zip(sums.labels, counts, w)]
    return sorted(rows, key=lambda r: r["group"])
