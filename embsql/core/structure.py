"""Structure of one set of embeddings over its groups: the query-stability and document-structure layers.

R2 with its cluster-jackknife SE and r2_null, the mean size-corrected spread W~ of the groups
(singletons excluded) with its jackknife SE, and the participation ratio eff_dim.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from embsql.core import decomposition, resampling
from embsql.core.margins import cluster_jackknife_ratio
from embsql.core.sums import GroupSums
from embsql.errors import DesignError

STRUCTURE_COLUMNS = ("model", "items", "groups", "singletons", "r2", "r2_se", "r2_null", "w_tilde_mean",
                     "w_tilde_se", "dim", "eff_dim", "eff_dim_bounded")


def mean_w_tilde(labels: Iterable[object], unit: np.ndarray) -> tuple[GroupSums, list, float | None, float | None]:
    """Group sums, W~ of each group (None for singletons), their mean and its jackknife SE."""
    sums = GroupSums.from_rows(labels, unit)
    w = [r["w_tilde"] for r in decomposition.group_rows(sums)]
    defined = np.array([x is not None for x in w])
    if not defined.any():
        return sums, w, None, None
    theta, replicates = cluster_jackknife_ratio(np.array([x or 0.0 for x in w]), defined, np.arange(len(w)))
    return sums, w, float(theta), None if replicates is None else resampling.jackknife_se(replicates)


def participation_ratio(unit: np.ndarray) -> float | None:
    """(sum of covariance eigenvalues)^2 / (sum of their squares), from the smaller of the
    d x d scatter and the n x n centred Gram matrix (they share their non-zero eigenvalues)."""
    n, d = unit.shape
    mean = unit.mean(axis=0)
    if n <= d:
        centred = unit - mean
        matrix = centred @ centred.T
    else:
        matrix = -n * np.outer(mean, mean)
        for low in range(0, n, 8192):
            block = unit[low:low + 8192]
            matrix += block.T @ block
    square = float(np.einsum("ij,ij->", matrix, matrix))
    return None if square <= 0 else float(np.trace(matrix)) ** 2 / square


def structure_row(m: object, labels: Iterable[object], unit: np.ndarray) -> dict:
    """One row of STRUCTURE_COLUMNS for model ``m``."""
    sums, w, w_mean, w_se = mean_w_tilde(labels, unit)
    anova = decomposition.anova_row(sums, m)
    try:
        r2_se = resampling.jackknife(sums, "r2").se
    except DesignError:                  # fewer than 3 groups
        r2_se = None
    n, dim = unit.shape
    return {"model": m, "items": n, "groups": len(w), "singletons": sum(x is None for x in w), "r2": anova["r2"],
            "r2_se": r2_se, "r2_null": anova["r2_null"], "w_tilde_mean": w_mean, "w_tilde_se": w_se, "dim": dim,
            "eff_dim": participation_ratio(unit), "eff_dim_bounded": n <= dim}
