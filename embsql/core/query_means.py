"""The mean of a per-query figure (nDCG@10 of each query, ...) with a cluster bootstrap interval.

Paraphrases of one question are not independent queries: resampling them one by one gives
intervals that are too narrow.  So whole clusters (paraphrase groups, or single queries when
there are none) are resampled with replacement, with the seeded multinomial draws of
embsql.core.resampling.bootstrap_weights (the same draws for every figure of a report); a
replicate's mean is sum_g w_g S_g / sum_g w_g n_g, with S_g the sum and n_g the number of
queries of cluster g.  The interval is the percentile interval of the replicates.  Clusters are
numbered in the resampling order (their labels as text), so the draws do not depend on row order.
In simulation (tests/report/test_evaluation_report.py) it covers at its level with 40 clusters, where
resampling the queries of clustered data one by one does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from embsql.core.labels import text_key
from embsql.core.resampling import bootstrap_weights


@dataclass(frozen=True)
class MeanInterval:
    value: float
    se: float
    ci_low: float
    ci_high: float
    clusters: int


def cluster_codes(labels: Iterable[object]) -> np.ndarray:
    """0..G-1 per query, clusters numbered in text order of their labels."""
    keys = np.asarray([text_key(x) for x in labels], dtype=object)
    _, codes = np.unique(keys.astype(str), return_inverse=True)
    return codes.ravel()


def mean_interval(values: np.ndarray, codes: np.ndarray, *, replicates: int, seed: int, level: float) -> MeanInterval:
    """The mean of ``values`` and its cluster bootstrap SE and percentile interval at ``level``."""
    values = np.asarray(values, dtype=np.float64)
    groups = int(codes.max()) + 1
    sums = np.bincount(codes, weights=values, minlength=groups)
    counts = np.bincount(codes, minlength=groups).astype(np.float64)
    weights = bootstrap_weights(groups, replicates, seed)
    draws = (weights @ sums) / (weights @ counts)      # every replicate draws G clusters, so n > 0
    low, high = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2])
    return MeanInterval(float(values.mean()), float(np.std(draws, ddof=1)), float(low), float(high), groups)
