"""Input/output pairing: the same paraphrase groups on both sides of retrieval.

Input side: R2 and the trace ICC of the query embeddings.  Output side: R2 and the scalar ICC(1)
of per-query top-1 (0/1), by :func:`scalar_icc` (the formula SQL's emb_icc uses, from
embsql.core.resampling.figure).  Same-side figures only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from embsql.core import decomposition, resampling
from embsql.core.labels import sort_key
from embsql.core.margins import Margins
from embsql.core.sums import GroupSums

PAIRING_COLUMNS = ("model", "measure", "input", "output", "queries", "groups", "note")


def group_codes(labels: Sequence[object]) -> np.ndarray:
    """Codes 0..G-1 of labels in display order (sort_key)."""
    lookup = {g: k for k, g in enumerate(sorted(set(labels), key=sort_key))}
    return np.fromiter((lookup[g] for g in labels), np.int64, len(labels))


def scalar_icc(codes: np.ndarray, values: np.ndarray) -> dict[str, float]:
    """ICC(1) of scalar values by group (``codes`` 0..G-1), with the sums of squares it comes from.

    One-way random effects: (MS_B - MS_W) / (MS_B + (n0 - 1) MS_W), n0 = (n - sum n_g^2 / n) / (G - 1).
    The caller has checked the design: two or more groups, fewer groups than values, values not all equal."""
    values = np.asarray(values, dtype=np.float64)
    n_g = np.bincount(codes).astype(np.float64)
    means = np.bincount(codes, values) / n_g
    ss_w = float(np.square(values - means[codes]).sum())
    ss_b = float((n_g * np.square(means - values.mean())).sum())
    icc = resampling.figure("icc", float(values.size), float(n_g.size), ss_b + ss_w, ss_w, ss_b,
                            float(np.square(n_g).sum()))
    return {"icc": float(icc), "ss_b": ss_b, "ss_w": ss_w}


def pairing_rows(per_model: Sequence[tuple[object, Any, Margins]]) -> list[dict]:
    """Rows of PAIRING_COLUMNS, per model: R2 and ICC(1) of the query embeddings (input) beside those
    of the per-query top-1 outcome (output).  ``per_model``: [(model, query Rows, Margins)].  The
    input side runs first, so its design errors are the ones raised."""
    rows = []
    for m, q, result in per_model:
        sums = GroupSums.from_rows(q.group, q.unit)
        anova = decomposition.anova_row(sums, m)
        trace_icc = float(resampling.statistic("icc", resampling.full_totals(sums))[0])
        note = out_r2 = out_icc = None
        if len(set(result.top1.tolist())) < 2:
            note = (f"every query has the same top-1 outcome ({'all' if result.top1.all() else 'none'} ranked "
                    "first): the output R2 and ICC are undefined")
        else:
            out = scalar_icc(group_codes(q.group.tolist()), result.top1.astype(np.float64))
            out_r2, out_icc = out["ss_b"] / (out["ss_b"] + out["ss_w"]), out["icc"]
        base = {"model": m, "queries": anova["n"], "groups": anova["groups"], "note": note}
        rows.append({**base, "measure": "R2", "input": anova["r2"], "output": out_r2})
        rows.append({**base, "measure": "ICC(1)", "input": trace_icc, "output": out_icc})
    return rows
