"""The reading side of classification by labels: one model's rows (its columns, its vectors as
stored and their inverse norms, a namer of its rows), read in one scan, and the classification of
every model from them (embsql.core.classification).  embsql.knn_classify and
embsql.centroid_classify (embsql.api.classification) and the report's classification section
(embsql.reporting.labels) share them, so the report's figures are the faces' figures."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.classification import ITEM_COLUMNS, classify
from embsql.core.labels import clean_label, sort_key
from embsql.core.sums import normalise
from embsql.errors import fail
from embsql.io.columns import first_bad_label
from embsql.io.sources import Source
from embsql.io.table_stream import BATCH_ROWS, Skipped, raw_vectors

ROLES = ("model", "item", "label", "split", "group")


@dataclass
class LabelledRows:
    """One model's rows as read: the columns as lists, the unit vectors, and a namer of row i."""

    columns: dict[str, list]
    vectors: np.ndarray          # as stored: FLOAT stays float32 (one copy), DOUBLE float64
    inv_norms: np.ndarray
    where: Callable[[int], str]


def read_labelled(con: duckdb.DuckDBPyConnection, table: Source, vector: str,
                  columns: dict[str, str | None], skip: Skipped | None = None) -> dict[object, LabelledRows]:
    """{model value: LabelledRows} in model order; vectors checked and scaled, NULL models refused by
    row (``skip``: rows with an unusable vector are left out and counted there, bad_rows="skip")."""
    named = {role: column for role, column in columns.items() if column}
    for role, column in named.items():
        table.require(column, role)
    dim = table.vector_dimension(vector)
    select = [(exp.column(named[r], quoted=True) if r in named else exp.null()).as_(f"__emb_{r}") for r in ROLES]
    query = exp.select(*select, exp.column(vector, quoted=True).as_("__emb_v")).from_(table.table.copy()).sql("duckdb")
    parts: dict[object, dict] = {}
    first = 0
    for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
        models = batch.column("__emb_model")
        if "model" in named:
            bad = first_bad_label(models)
            if bad is not None:
                clean_label(None if bad[1] == "NULL" else float("nan"), named["model"], f"row {first + bad[0] + 1}",
                            role="model")
        read = batch.num_rows
        positions = np.arange(read)
        if skip is not None:
            batch, kept = skip.drop(batch, "__emb_v", "__emb_model" if "model" in named else None)
            positions = positions if kept is None else kept
            models = batch.column("__emb_model")
            if batch.num_rows == 0:
                first += read
                continue
        values = [None] if not columns.get("model") else pc.unique(models).to_pylist()
        for value in values:
            rows = (np.arange(batch.num_rows) if not columns.get("model") else
                    np.flatnonzero(pc.equal(models, pa.scalar(value, models.type)).to_numpy(zero_copy_only=False)))
            part = batch if not columns.get("model") else batch.take(pa.array(rows))
            state = parts.setdefault(value, {"rows": [], "raw": [], **{r: [] for r in ROLES}})
            items = part.column("__emb_item").to_pylist()
            namer = row_namer(first + positions[rows], items, columns.get("item"), value if "model" in named else None)
            known = dim or (state["raw"][0].shape[1] if state["raw"] else None)
            state["raw"].append(raw_vectors(part.column("__emb_v"), namer, vector, known))
            state["rows"].append(first + positions[rows])
            for role in ROLES:
                state[role].extend(items if role == "item" else part.column(f"__emb_{role}").to_pylist())
        first += read
    if first == 0:
        fail("source.empty", source=repr(table.name))
    if not parts and skip is not None:
        skip.nothing_left(repr(table.name))
    out = {}
    for value in sorted(parts, key=sort_key):
        state = parts[value]
        rows = np.concatenate(state["rows"])
        where = row_namer(rows, state["item"], columns.get("item"), value if "model" in named else None)
        dtype = np.float32 if all(raw.dtype == np.float32 for raw in state["raw"]) else np.float64
        vectors = np.empty((len(rows), state["raw"][0].shape[1]), dtype=dtype)
        low = 0
        for raw in state["raw"]:            # one copy, filled part by part
            vectors[low:low + len(raw)] = raw
            low += len(raw)
        out[value] = LabelledRows({r: state[r] for r in ROLES}, vectors, inverse_norms(vectors, where, vector), where)
    return out


def inverse_norms(vectors: np.ndarray, where: Callable[[int], str], vector: str) -> np.ndarray:
    """1/||x|| in float64, a float64 block at a time; a zero, NaN or infinite vector is named by
    the one rule of embsql.core.sums.normalise."""
    out = np.empty(len(vectors))
    step = 8192
    for low in range(0, len(vectors), step):
        block = vectors[low:low + step].astype(np.float64)
        scale = np.max(np.abs(block), axis=1)
        bad = ~(np.isfinite(scale) & (scale > 0))
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            def name_row(_: int, row: int = low + first) -> str:   # the block's row 0 is this row
                return where(row)

            normalise(block[first:first + 1].copy(), name_row, vector)
        block /= scale[:, None]            # no overflow or underflow in the squares
        out[low:low + len(block)] = 1.0 / (np.sqrt(np.einsum("ij,ij->i", block, block)) * scale)
    return out


def row_namer(rows: np.ndarray, items: list, item: str | None, model: object = None) -> Callable[[int], str]:
    """Names row i of a model's rows as users see it: its row in the table (``rows``: counted from
    0; shown from 1), then its model (when not None) and its item id (when there is an ``item`` column)."""
    def name(i: int) -> str:
        named = ([] if model is None else [f"model {model!r}"]) + ([f"item {items[i]!r}"] if item else [])
        return f"row {int(rows[i]) + 1}" + (f" ({', '.join(named)})" if named else "")
    return name


def classify_models(models: dict[object, LabelledRows], *, classifier: str, label: str, k: int | None,
                    level: float, item: str | None, split: str | None, group: str | None,
                    named: bool) -> tuple[list[tuple[object, dict]], list[tuple[object, dict]]]:
    """Every model's classification: (model value, its CLASSIFY_COLUMNS figures) per model, and
    (model value, ITEM_COLUMNS and "group") per classified item; ``named``: the rows have a model
    column (messages name the model)."""
    summary, items = [], []
    for value, rows in models.items():
        whose = "" if not named else f" (model {value!r})"
        figures, per = classify(rows.vectors, rows.inv_norms, rows.columns["label"], classifier=classifier, k=k,
                                level=level, items=rows.columns["item"] if item else None,
                                splits=rows.columns["split"] if split else None,
                                groups=rows.columns["group"] if group else None, label_column=label,
                                split_column=split, where=rows.where, whose=whose)
        summary.append((value, figures))
        for i in range(len(per["label"])):
            items.append((value, {c: (per[c][i] if per[c] is not None else None) for c in (*ITEM_COLUMNS, "group")}))
    return summary, items
