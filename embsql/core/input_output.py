"""Input/output pairing: the same paraphrase groups on both sides of retrieval.

Input side: R2 and the trace ICC of the query embeddings.  Output side: R2 and the scalar ICC of
per-query top-1 (0/1), from the SQL macro emb_icc (embsql.io.retrieval_rows.scalar_icc), which
the caller runs on the rows :func:`pairing_inputs` returns.  Same-side figures only.
"""

from __future__ import annotations

import itertools
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


def pairing_inputs(per_model: Sequence[tuple[object, Any, Margins]]) -> tuple[list, list[tuple[int, int, int]]]:
    """((anova row, trace ICC) per model, the (model code, group code, top-1) rows for emb_icc).

    ``per_model``: [(model, query Rows, Margins)].  The input side runs first, so its design
    errors are the ones raised."""
    inputs: list = []
    scalar: list[tuple[int, int, int]] = []
    for code, (m, q, result) in enumerate(per_model):
        sums = GroupSums.from_rows(q.group, q.unit)
        inputs.append((decomposition.anova_row(sums, m),
                       float(resampling.statistic("icc", resampling.full_totals(sums))[0])))
        if len(set(result.top1.tolist())) > 1:
            scalar += zip(itertools.repeat(code), group_codes(q.group.tolist()).tolist(),
                          result.top1.astype(int).tolist())
    return inputs, scalar


def pairing_rows(per_model: Sequence[tuple[object, Any, Margins]], inputs: list[tuple[dict, float]],
                 outputs: dict[int, dict]) -> list[dict]:
    """Rows of PAIRING_COLUMNS from the input side and emb_icc's rows ({model code: row})."""
    rows = []
    for code, ((m, _, result), (anova, trace_icc)) in enumerate(zip(per_model, inputs)):
        out = outputs.get(code)
        note = out_r2 = out_icc = None
        if out is None:
            note = (f"every query has the same top-1 outcome ({'all' if result.top1.all() else 'none'} ranked "
                    "first): the output R2 and ICC are undefined")
        else:
            ss_b, ss_w = out["ms_b"] * (out["groups"] - 1), out["ms_w"] * (out["n"] - out["groups"])
            out_r2, out_icc = ss_b / (ss_b + ss_w), out["icc"]
        base = {"model": m, "queries": anova["n"], "groups": anova["groups"], "note": note}
        rows.append({**base, "measure": "R2", "input": anova["r2"], "output": out_r2})
        rows.append({**base, "measure": "ICC(1)", "input": trace_icc, "output": out_icc})
    return rows
