"""Summaries of per-query margins over the queries of one model: the rank and alignment layers.

top-1, recall@k, MRR and the mean of m are means over queries; their SEs are cluster jackknives
over paraphrase groups (paraphrases of one question are not independent).  The quantiles of m
carry no SE.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embsql.core import resampling
from embsql.core.labels import sort_key
from embsql.core.margins import QUANTILES, RECALL_AT, Margins, cluster_jackknife_ratio

SUMMARY_COLUMNS = ("model", "queries", "groups", "top1", "top1_se", "recall_at_1", "recall_at_5", "recall_at_5_se",
                   "recall_at_10", "recall_at_10_se", "mrr", "mrr_se", "m_mean", "m_mean_se", *QUANTILES,
                   "ties", "scope")
ALIGNMENT_COLUMNS = ("model", "queries", "m_mean", "m_mean_se", *QUANTILES, "m_negative", "ties", "scope")
RANK_COLUMNS = ("model", "queries", "top1", "top1_se", "recall_at_1", "recall_at_5", "recall_at_5_se",
                "recall_at_10", "recall_at_10_se", "mrr", "mrr_se", "scope")


def jackknife_se_of(theta_replicates: tuple[float, np.ndarray | None]) -> float | None:
    """The SE of a (theta, replicates) pair from cluster_jackknife_ratio (None without replicates)."""
    replicates = theta_replicates[1]
    return None if replicates is None else resampling.jackknife_se(replicates)


def summary_row(group_labels: Sequence[object], result: Margins, scope: str) -> dict:
    """top-1, recall@k, MRR and the distribution of m, with cluster-jackknife SEs over paraphrase groups."""
    names = sorted(set(group_labels), key=sort_key)
    lookup = {g: k for k, g in enumerate(names)}
    clusters = np.fromiter((lookup[g] for g in group_labels), np.int64, len(group_labels))
    ones = np.ones(len(clusters))

    def mean(values: np.ndarray) -> tuple[float, np.ndarray | None]:
        return cluster_jackknife_ratio(values, ones, clusters)

    row = {"queries": len(clusters), "groups": len(names), "ties": int((result.ties > 0).sum()), "scope": scope}
    top1 = mean(result.top1.astype(float))
    row.update(top1=float(top1[0]), top1_se=jackknife_se_of(top1), recall_at_1=float(top1[0]))
    for k in RECALL_AT[1:]:
        recall = mean((result.rank <= k).astype(float))
        row[f"recall_at_{k}"], row[f"recall_at_{k}_se"] = float(recall[0]), jackknife_se_of(recall)
    mrr = mean(1.0 / result.rank)
    m = mean(result.m)
    row.update(mrr=float(mrr[0]), mrr_se=jackknife_se_of(mrr), m_mean=float(m[0]), m_mean_se=jackknife_se_of(m),
               m_negative=float(np.mean(result.m < 0)))
    row.update({name: float(q) for name, q in zip(QUANTILES, np.quantile(result.m, list(QUANTILES.values())))})
    return row
