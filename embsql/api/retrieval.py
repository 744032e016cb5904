"""Retrieval diagnostics: margins, rank figures, dose, pairing and
the four-layer report, from a queries table and a documents table (one row per query / document).

queries: qid, paraphrase group, optional level, the id of its one correct document (positive), vector.
docs:    doc_id, topic group, vector.
Both may carry a model column: every figure is then per model, and each model's queries are
matched with that model's documents.

The rows stream from DuckDB as Arrow batches (as in embsql.io.reading); every vector is checked
and scaled to unit length there, and a bad one is named by its row and id.  The numerics are
embsql.core.margins (margins and ranks), embsql.core.dose (the dose), embsql.core.decomposition and embsql.core.resampling (R2,
W~, jackknife); scalar ICC is the SQL macro emb_icc.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core import decomposition, resampling
from embsql.core.dose import analyse as analyse_dose
from embsql.core.labels import sort_key
from embsql.core.margins import (
    QUANTILES,
    RECALL_AT,
    Margins,
    check_scope,
    cluster_jackknife_ratio,
    model_margins,
    model_text,
)
from embsql.core.sums import GroupSums
from embsql.errors import BadLabelError, BadVectorError, DesignError, InputError, SqlInputError
from embsql.io.reading import BATCH_ROWS, KEY, G, RowNamer, unit_vectors
from embsql.io.registration import register
from embsql.io.sources import Source, accepts_frames, resolve, shown_name
from embsql.reporting.result import ReportResult, Section
from embsql.results import ResultTable

MARGIN_COLUMNS = ("model", "qid", "d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties")
SUMMARY_COLUMNS = ("model", "queries", "groups", "top1", "top1_se", "recall_at_1", "recall_at_5", "recall_at_5_se",
                   "recall_at_10", "recall_at_10_se", "mrr", "mrr_se", "m_mean", "m_mean_se", *QUANTILES,
                   "ties", "scope")
PAIRING_COLUMNS = ("model", "measure", "input", "output", "queries", "groups", "note")
DOSE_COLUMNS = ("model", "level", "queries", "groups", "w_tilde_q", "se", "step", "step_se", "w_tilde_g",
                "ratio", "monotone", "p_value", "permutations", "dose_works")
STRUCTURE_COLUMNS = ("model", "items", "groups", "singletons", "r2", "r2_se", "r2_null", "w_tilde_mean",
                     "w_tilde_se", "dim", "eff_dim", "eff_dim_bounded")
ALIGNMENT_COLUMNS = ("model", "queries", "m_mean", "m_mean_se", *QUANTILES, "m_negative", "ties", "scope")
RANK_COLUMNS = ("model", "queries", "top1", "top1_se", "recall_at_1", "recall_at_5", "recall_at_5_se",
                "recall_at_10", "recall_at_10_se", "mrr", "mrr_se", "scope")

PAIRING_CAUTION = (
    "Same grouping (paraphrases of one question) on both sides: the input is the query embeddings, the "
    "output per-query correctness (top-1 as 0/1).  Compare same-side figures only (R2 with R2, ICC with "
    "ICC): R2 has no correction and ICC has one.  A difference between input and output is a clue (high "
    "input identity but low output identity suggests paraphrasing changes results somewhere in the "
    "system), not an effect size: the two live in different response spaces, and the corpus, the decision "
    "boundary, near-miss documents and later stages also move the output.  The trace ICC of embeddings is "
    "a stated multivariate extension, not the standard ICC; the ANOVA ICC of a 0/1 outcome is not the "
    "latent-scale ICC of a logistic mixed model.")
EFF_DIM_CAUTION = (
    "eff_dim is the participation ratio (sum of covariance eigenvalues)^2 / (sum of squares): an "
    "eigenvalue-based 'number of directions'.  With n items it is bounded by n - 1, so when n <= d "
    "(eff_dim_bounded) it mostly reflects the sample size; prefer the mean-based figures.")


# ---- column names and reading ------------------------------------------------------------


@dataclass(frozen=True)
class Columns:
    """Column names in the two tables (defaults as documented in sql/README.md)."""

    qid: str = "qid"
    group: str = "group"
    level: str | None = None
    positive: str = "positive"
    vector: str = "vector"
    doc_id: str = "doc_id"
    doc_group: str = "group"
    doc_vector: str = "vector"
    model: str | None = None


@dataclass(frozen=True)
class Rows:
    """The rows of one model of one table, in scan order."""

    ids: list                       # the id column as it is (qid or doc_id)
    keys: np.ndarray                # the same ids as text: how positives are matched to doc_ids
    group: np.ndarray | None
    level: np.ndarray | None
    positive: np.ndarray | None     # queries: the positive's id as text
    unit: np.ndarray


_ALIASES = {"model": "__emb_b", "id": KEY, "key": "__emb_kstr", "group": G, "level": "__emb_l",
            "positive": "__emb_p", "vector": "__emb_v"}


def _read(con, source: Source, columns: dict[str, tuple[str | None, str]], what: str) -> dict[object, Rows]:
    """Read one table: ``columns`` maps a part (id, group, level, positive, vector, model) to
    (column name or None, role name for messages).  Returns {model value: Rows}."""
    select = []
    for part, alias in _ALIASES.items():
        if part == "key":
            name = columns["id"][0]
            assert name is not None  # every table has an id column
            select.append(exp.alias_(exp.cast(exp.column(name, quoted=True), "VARCHAR"), alias))
            continue
        name, role = columns.get(part, (None, part))
        if name is None:
            select.append(exp.alias_(exp.null(), alias))
            continue
        source.require(name, role)
        column = exp.column(name, quoted=True)
        # positives are matched to doc_ids as text (the key), as in the SQL macros
        select.append(exp.alias_(exp.cast(column, "VARCHAR") if part == "positive" else column, alias))
    vector = columns["vector"][0]
    assert vector is not None  # every table has a vector column
    source.vector_dimension(vector)
    query = exp.select(*select).from_(source.table.copy()).sql("duckdb")
    parts: dict[object, list] = {}
    dims: dict[object, int] = {}
    first_row = 0
    for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
        models = batch.column("__emb_b")
        if columns.get("model", (None,))[0] is not None and models.null_count:
            where = RowNamer(batch, np.arange(batch.num_rows), first_row, columns.get("group", (None,))[0])
            raise BadLabelError(f"{what} {source.name!r}: model column {columns['model'][0]!r} is NULL at "
                                f"{where(int(np.flatnonzero(models.is_null().to_numpy(zero_copy_only=False))[0]))}")
        values = [None] if columns.get("model", (None,))[0] is None else pc.unique(models).to_pylist()
        for value in values:
            mask = None if value is None else pc.equal(models, pa.scalar(value, models.type))
            rows = np.arange(batch.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            part = batch if mask is None else batch.filter(mask)
            where = RowNamer(batch, rows, first_row, columns.get("group", (None,))[0])
            for name in ("id", "group", "level", "positive"):
                column_name, role = columns.get(name, (None, name))
                alias = _ALIASES[name]
                if column_name is not None and part.column(alias).null_count:
                    bad = int(np.flatnonzero(part.column(alias).is_null().to_numpy(zero_copy_only=False))[0])
                    raise BadLabelError(f"{what} {source.name!r}: {role} column {column_name!r} is NULL at {where(bad)}")
            try:
                unit = unit_vectors(part.column("__emb_v"), where, vector, dims.get(value))
            except BadVectorError as error:
                raise BadVectorError(f"{what} {source.name!r}{model_text(value)}: {error}") from None
            dims.setdefault(value, unit.shape[1])
            # keep the labels and the unit vectors, not the raw vectors (memory: one copy of the data)
            labels = [name for name in part.schema.names if name != "__emb_v"]
            parts.setdefault(value, []).append((pa.RecordBatch.from_arrays([part.column(x) for x in labels], labels),
                                                unit))
        first_row += batch.num_rows
    if first_row == 0:
        raise InputError(f"{what} {source.name!r} has no rows")
    out = {}
    for value in list(parts):
        chunks = parts.pop(value)
        table = pa.Table.from_batches([c[0] for c in chunks])
        keys = _objects(table, _ALIASES["key"])
        out[value] = Rows(table.column(KEY).to_pylist(), keys,
                          _objects(table, G) if columns.get("group", (None,))[0] else None,
                          _objects(table, "__emb_l") if columns.get("level", (None,))[0] else None,
                          _objects(table, "__emb_p") if columns.get("positive", (None,))[0] else None,
                          np.vstack([c[1] for c in chunks]))
        _check_unique(keys, columns["id"], what, source.name, value)
    return out


def _objects(table: pa.Table, alias: str) -> np.ndarray:
    return np.asarray(table.column(alias).to_pylist(), dtype=object)


def _check_unique(keys: np.ndarray, column: tuple[str | None, str], what: str, name: str, model) -> None:
    if len(set(keys.tolist())) == len(keys):
        return
    seen: set = set()
    for duplicate in keys.tolist():  # the first id seen twice
        if duplicate in seen:
            break
        seen.add(duplicate)
    raise BadLabelError(f"{what} {name!r}{model_text(model)}: {column[1]} column {column[0]!r} has "
                        f"{duplicate!r} more than once; each {column[1]} must identify one row")


def _load(con, queries: str, docs: str | None, cols: Columns, *, query_group: bool, query_level: bool,
          doc_group: bool, positive: bool = True) -> list[tuple[object, Rows, Rows | None]]:
    """[(model, query rows, doc rows)] in model order, each model's tables checked against each other."""
    model = (cols.model, "model") if cols.model else (None, "model")
    q = _read(con, resolve(con, queries), {
        "id": (cols.qid, "qid"), "group": (cols.group if query_group else None, "group"),
        "level": (cols.level if query_level else None, "level"),
        "positive": (cols.positive if positive else None, "positive"), "vector": (cols.vector, "vector"),
        "model": model}, "queries")
    if docs is None:
        return [(m, q[m], None) for m in sorted(q, key=sort_key)]
    d = _read(con, resolve(con, docs), {
        "id": (cols.doc_id, "doc_id"), "group": (cols.doc_group if doc_group else None, "doc_group"),
        "vector": (cols.doc_vector, "doc_vector"), "model": model}, "docs")
    for m in set(q) ^ set(d):
        side, other = ("queries", "docs") if m in q else ("docs", "queries")
        raise InputError(f"model {m!r} is in {side} {queries if side == 'queries' else docs!r} but not in {other}")
    out: list[tuple[object, Rows, Rows | None]] = []
    for m in sorted(q, key=sort_key):
        if q[m].unit.shape[1] != d[m].unit.shape[1]:
            raise BadVectorError(f"query vectors ({cols.vector!r}) have dimension {q[m].unit.shape[1]} but document "
                                 f"vectors ({cols.doc_vector!r}) have dimension {d[m].unit.shape[1]}{model_text(m)}; "
                                 "queries and documents must be embedded by the same model")
        out.append((m, q[m], d[m]))
    return out


# ---- margins --------------------------------------------------------------------------------


def _margins_per_model(con, queries, docs, cols: Columns, scope: str, query_group: bool, query_level: bool = False):
    check_scope(scope)
    for m, q, d in _load(con, queries, docs, cols, query_group=query_group, query_level=query_level,
                         doc_group=scope == "group"):
        assert d is not None and q.positive is not None  # margins read the documents and the positives
        yield m, q, d, model_margins(q.ids, q.positive, q.unit, d.keys, d.group, d.unit, scope, m)


def margin_dicts(model, qids: list, result: Margins) -> list[dict]:
    return [{"model": model, "qid": qid, "d_pos2": float(a), "d_neg2": float(b), "margin": float(c), "m": float(e),
             "top1": bool(f), "rank": int(g), "ties": int(h)}
            for qid, a, b, c, e, f, g, h in zip(qids, result.d_pos2, result.d_neg2, result.margin, result.m,
                                                result.top1, result.rank, result.ties)]


@accepts_frames("queries", "docs")
def margins(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus", qid: str = "qid",
            group: str = "group", level: str | None = None, positive: str = "positive", vector: str = "vector",
            doc_id: str = "doc_id", doc_group: str = "group", doc_vector: str = "vector",
            model: str | None = None) -> ResultTable:
    """Per query: d_pos2, d_neg2, margin (cosine), m (normalised margin), top1, rank, ties.

    ``scope='corpus'``: every other document is a distractor; ``'group'``: only the other
    documents of the positive's group (``doc_group``).  ``group`` and ``level`` are not used here
    (every retrieval function takes the same arguments).  Rows are ordered by model, then qid.
    """
    cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
    rows = []
    for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, query_group=False):
        rows += sorted(margin_dicts(m, q.ids, result), key=lambda r: sort_key(r["qid"]))
    return ResultTable.from_dicts("margins", MARGIN_COLUMNS, rows)


# ---- summaries over queries (rank layer, alignment layer) --------------------------------


def _se(theta_replicates) -> float | None:
    replicates = theta_replicates[1]
    return None if replicates is None else resampling.jackknife_se(replicates)


def summary_row(group_labels, result: Margins, scope: str) -> dict:
    """top-1, recall@k, MRR and the distribution of m, with cluster-jackknife SEs over paraphrase groups."""
    names = sorted(set(group_labels), key=sort_key)
    lookup = {g: k for k, g in enumerate(names)}
    clusters = np.fromiter((lookup[g] for g in group_labels), np.int64, len(group_labels))
    ones = np.ones(len(clusters))

    def mean(values):
        return cluster_jackknife_ratio(values, ones, clusters)

    row = {"queries": len(clusters), "groups": len(names), "ties": int((result.ties > 0).sum()), "scope": scope}
    top1 = mean(result.top1.astype(float))
    row.update(top1=float(top1[0]), top1_se=_se(top1), recall_at_1=float(top1[0]))
    for k in RECALL_AT[1:]:
        recall = mean((result.rank <= k).astype(float))
        row[f"recall_at_{k}"], row[f"recall_at_{k}_se"] = float(recall[0]), _se(recall)
    mrr = mean(1.0 / result.rank)
    m = mean(result.m)
    row.update(mrr=float(mrr[0]), mrr_se=_se(mrr), m_mean=float(m[0]), m_mean_se=_se(m),
               m_negative=float(np.mean(result.m < 0)))
    row.update({name: float(q) for name, q in zip(QUANTILES, np.quantile(result.m, list(QUANTILES.values())))})
    return row


@accepts_frames("queries", "docs")
def retrieval_summary(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus",
                      qid: str = "qid", group: str = "group", level: str | None = None, positive: str = "positive",
                      vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
                      doc_vector: str = "vector", model: str | None = None) -> ResultTable:
    """Per model: queries, top-1, recall@1/5/10, MRR, mean and quantiles of m, with cluster-jackknife SEs
    over the paraphrase groups (``group``) and the number of queries whose d+ ties with a distractor."""
    cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
    rows = [{"model": m, **summary_row(q.group.tolist(), result, scope)}
            for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, query_group=True)]
    return ResultTable.from_dicts("retrieval summary", SUMMARY_COLUMNS, rows)


# ---- input/output pairing ----------------------------------------------------------------


def _scalar_icc(con, rows: list[tuple[int, int, int]]) -> dict[int, dict]:
    """emb_icc (sql/modules/40_icc.sql) on (model code, group code, 0/1 value) rows: {model code: its row}."""
    if not rows:
        return {}
    if not con.sql("SELECT 1 FROM duckdb_functions() WHERE function_name = 'emb_icc'").fetchall():
        register(con)
    name = f"__emb_pairing_{id(rows)}"
    con.register(name, pa.table({"m": [r[0] for r in rows], "g": [r[1] for r in rows], "y": [r[2] for r in rows]}))
    try:
        query = exp.select("*").from_(exp.func("emb_icc", *(exp.Literal.string(s) for s in (name, "g", "y")),
                                               exp.Kwarg(this=exp.var("by"), expression=exp.Literal.string("m"))))
        result = con.sql(query.sql("duckdb")).to_arrow_table().to_pylist()
    except duckdb.Error as error:
        message = str(error)
        raise SqlInputError(message[message.index("embsql:"):].splitlines()[0] if "embsql:" in message
                            else message) from None
    finally:
        con.unregister(name)
    return {r["m"]: r for r in result}


def _group_codes(labels) -> np.ndarray:
    lookup = {g: k for k, g in enumerate(sorted(set(labels), key=sort_key))}
    return np.fromiter((lookup[g] for g in labels), np.int64, len(labels))


def _pairing_rows(con, per_model: list[tuple[object, Rows, Margins]]) -> list[dict]:
    inputs: list = []
    scalar: list[tuple[int, int, int]] = []
    for code, (m, q, result) in enumerate(per_model):
        assert q.group is not None  # the pairing layer reads the query groups
        sums = GroupSums.from_rows(q.group, q.unit)          # the input side first: its design errors
        inputs.append((decomposition.anova_row(sums, m),
                       float(resampling.statistic("icc", resampling.full_totals(sums))[0])))
        if len(set(result.top1.tolist())) > 1:
            scalar += zip(itertools.repeat(code), _group_codes(q.group.tolist()).tolist(),
                          result.top1.astype(int).tolist())
    outputs = _scalar_icc(con, scalar)
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


@accepts_frames("queries", "docs")
def pairing(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus", qid: str = "qid",
            group: str = "group", level: str | None = None, positive: str = "positive", vector: str = "vector",
            doc_id: str = "doc_id", doc_group: str = "group", doc_vector: str = "vector",
            model: str | None = None) -> ResultTable:
    """Per model, R2 of the query embeddings beside R2 of per-query top-1 (0/1), and trace ICC
    beside scalar ICC, all over the paraphrase groups.  Same-side figures only; see PAIRING_CAUTION."""
    cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
    per_model = [(m, q, result) for m, q, _, result in _margins_per_model(con, queries, docs, cols, scope, True)]
    return ResultTable.from_dicts("pairing (same-side figures; a difference is a clue, not an effect size)",
                                  PAIRING_COLUMNS, _pairing_rows(con, per_model))


# ---- dose ----------------------------------------------------------------------------------


def _mean_w_tilde(labels, unit) -> tuple[GroupSums, list, float | None, float | None]:
    """Group sums, W~ of each group (None for singletons), their mean and its jackknife SE."""
    sums = GroupSums.from_rows(labels, unit)
    w = [r["w_tilde"] for r in decomposition.group_rows(sums)]
    defined = np.array([x is not None for x in w])
    if not defined.any():
        return sums, w, None, None
    theta, replicates = cluster_jackknife_ratio(np.array([x or 0.0 for x in w]), defined, np.arange(len(w)))
    return sums, w, float(theta), None if replicates is None else resampling.jackknife_se(replicates)


def _dose_rows(m, q: Rows, d: Rows | None, permutations: int, seed: int, alpha: float) -> list[dict]:
    assert q.group is not None and q.level is not None  # the dose reads the query groups and levels
    result = analyse_dose(q.group.tolist(), q.level.tolist(), q.keys, q.unit, permutations=permutations, seed=seed,
                          alpha=alpha)
    w_g = _mean_w_tilde(d.group, d.unit)[2] if d is not None else None
    return [{"model": m, "level": lv.level, "queries": lv.queries, "groups": lv.groups, "w_tilde_q": lv.w_tilde_q,
             "se": lv.se, "step": lv.step, "step_se": lv.step_se, "w_tilde_g": w_g,
             "ratio": None if lv.w_tilde_q is None or not w_g else lv.w_tilde_q / w_g,
             "monotone": result.monotone, "p_value": result.p_value, "permutations": result.permutations,
             "dose_works": result.works} for lv in result.levels]


@accepts_frames("queries", "docs")
def dose(con: duckdb.DuckDBPyConnection, queries: str, docs: str | None = None, *, qid: str = "qid",
         group: str = "group", level: str = "level", vector: str = "vector", doc_id: str = "doc_id",
         doc_group: str = "group", doc_vector: str = "vector", model: str | None = None, positive: str = "positive",
         scope: str = "corpus", permutations: int = 999, seed: int = 42, alpha: float = 0.05) -> ResultTable:
    """W~_q per level with jackknife SE and the step from the previous level (paired SE),
    whether it increases monotonically, a one-sided permutation trend test (levels permuted within
    paraphrase groups), and with ``docs`` the ratio W~_q / W~_g (mean W~ of the document groups).
    dose_works = monotone and p_value <= alpha.  ``positive`` and ``scope`` are not used."""
    if level is None:
        raise InputError("dose needs a level column (paraphrase strength); pass level='column name'")
    cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
    rows = []
    for m, q, d in _load(con, queries, docs, cols, query_group=True, query_level=True, doc_group=True,
                         positive=False):
        rows += _dose_rows(m, q, d, permutations, seed, alpha)
    return ResultTable.from_dicts("dose", DOSE_COLUMNS, rows)


# ---- the four layers -------------------------------------------------------------------


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


def _structure_row(m, labels, unit) -> dict:
    sums, w, w_mean, w_se = _mean_w_tilde(labels, unit)
    anova = decomposition.anova_row(sums, m)
    try:
        r2_se = resampling.jackknife(sums, "r2").se
    except DesignError:                  # fewer than 3 groups
        r2_se = None
    n, dim = unit.shape
    return {"model": m, "items": n, "groups": len(w), "singletons": sum(x is None for x in w), "r2": anova["r2"],
            "r2_se": r2_se, "r2_null": anova["r2_null"], "w_tilde_mean": w_mean, "w_tilde_se": w_se, "dim": dim,
            "eff_dim": participation_ratio(unit), "eff_dim_bounded": n <= dim}


CAUTIONS = {
    "query_stability": (
        "Layer 1, within the queries: R2 is the share of query spread between paraphrase groups (same design only, "
        "similarity-invariant, biased upward: compare with r2_null); W~_q, the mean size-corrected spread of a "
        "paraphrase group (singletons excluded), is how far paraphrasing moves a query (with a level column the "
        "groups pool every level; the dose section splits W~_q by level).  Neither says whether retrieval "
        "succeeds: that is decided by the alignment of queries with their documents (layer 3). "
        + EFF_DIM_CAUTION),
    "document_structure": (
        "Layer 2, within the documents: R2 says how clearly the topic groups separate; W~_g is the overall spread "
        "of a topic group (size-corrected), NOT the crowding around the correct document: a wide group can still "
        "hold one near-duplicate of d+ that wins.  Do not read W~_g as retrieval difficulty; the margin m "
        "(layer 3) is the figure for that. " + EFF_DIM_CAUTION),
    "alignment": (
        "Layer 3, queries against documents: m = (d-^2 - d+^2)/(d-^2 + d+^2) in [-1, 1] is the room a query has "
        "to its correct document; scale-free (unchanged by similarity transforms), so comparable across models, "
        "and m > 0 exactly when d+ ranks first.  It says nothing about ranks below the first.  m_mean_se is a "
        "cluster jackknife over paraphrase groups; quantiles carry no SE.  A tie with a distractor gives m = 0."),
    "rank": (
        "Layer 4, final ranks in the stated scope: top-1, recall@k and MRR depend only on the order of "
        "similarities (unchanged by any monotone transform).  A distractor tied with d+ counts as ranked above "
        "it.  SEs are cluster jackknives over paraphrase groups (paraphrases of one question are not "
        "independent).  These say how often retrieval succeeds, not why: layers 1-3 are the diagnosis."),
    "pairing": PAIRING_CAUTION,
    "dose": (
        "W~_q per level says whether the paraphrase manipulation works as a dose (spread grows with level); it "
        "does not say whether real inputs fall in that range.  p_value is one-sided (levels permuted within "
        "paraphrase groups): small means spread increases with level beyond chance, not by how much.  The ratio "
        "W~_q / W~_g is descriptive: how far paraphrasing moves a query relative to the spread of the "
        "document groups, not a difficulty measure (W~_g is not crowding around d+)."),
}
TITLES = {"query_stability": "1. Query stability (paraphrase groups)",
          "document_structure": "2. Document structure (topic groups)",
          "alignment": "3. Alignment: normalised margin m",
          "rank": "4. Rank: top-1, recall@k, MRR",
          "pairing": "Input/output pairing",
          "dose": "Dose: W~_q by paraphrase level"}


@accepts_frames("queries", "docs")
def retrieval_layers(con: duckdb.DuckDBPyConnection, queries: str, docs: str, *, scope: str = "corpus",
                     qid: str = "qid", group: str = "group", level: str | None = None, positive: str = "positive",
                     vector: str = "vector", doc_id: str = "doc_id", doc_group: str = "group",
                     doc_vector: str = "vector", model: str | None = None, permutations: int = 999,
                     seed: int = 42, alpha: float = 0.05) -> ReportResult:
    """The four layers per model in one report, with the input/output pairing and, given a level
    column, the dose.  Every section table starts with the model column.

    A layer whose data do not support it (documents without topic groups, paraphrase groups of
    one query, one query per group and level) is left out with a note in ``meta["notes"]`` that
    names the table and column and says what would make it work; the other layers still run."""
    check_scope(scope)
    cols = Columns(qid, group, level, positive, vector, doc_id, doc_group, doc_vector, model)
    tables: dict[str, list[dict]] = {name: [] for name in TITLES}
    left_out: dict[str, str] = {}
    shown = {"queries": shown_name(queries), "docs": shown_name(docs)}
    why = {
        "query_stability": f"queries {shown['queries']!r}: paraphrase groups in column {group!r} need two or more "
                           "queries each for R² and W̃_q",
        "document_structure": f"documents {shown['docs']!r}: topic groups in column {doc_group!r} need two or more "
                              "documents each (give the documents a topic column, doc_group=...)",
        "pairing": f"queries {shown['queries']!r}: the pairing compares paraphrase groups (column {group!r}), which "
                   "need two or more queries each",
        "dose": f"queries {shown['queries']!r}: the dose needs two or more queries of one paraphrase group (column "
                f"{group!r}) at each of two or more levels (column {level!r})",
    }
    if level is not None and not permutations:
        left_out["dose"] = (f"queries {shown['queries']!r}: the dose's trend test over column {level!r} needs "
                            "permutations > 0 (0 were asked for)")

    def attempt(name, compute):
        """Run one layer's computation; a DesignError leaves that layer out, with a note."""
        if name in left_out:
            return None
        try:
            return compute()
        except DesignError as error:
            left_out[name] = f"{why[name]}; here {error}"
            return None

    summary, per_model = [], []
    for m, q, d in _load(con, queries, docs, cols, query_group=True, query_level=level is not None, doc_group=True):
        assert d is not None and q.positive is not None and q.group is not None  # all three were asked for
        result = model_margins(q.ids, q.positive, q.unit, d.keys, d.group, d.unit, scope, m)
        per_model.append((m, q, result))
        stability = attempt("query_stability", functools.partial(_structure_row, m, q.group, q.unit)) or {}
        structure = attempt("document_structure", functools.partial(_structure_row, m, d.group, d.unit)) or {}
        figures = {"model": m, **summary_row(q.group.tolist(), result, scope)}
        tables["query_stability"].append(stability)
        tables["document_structure"].append(structure)
        tables["alignment"].append(figures)
        tables["rank"].append(figures)
        if level is not None:
            tables["dose"] += attempt("dose", functools.partial(_dose_rows, m, q, d, permutations, seed, alpha)) or []
        summary.append({"model": m, "queries": len(q.ids), "docs": len(d.ids), "r2_queries": stability.get("r2"),
                        "w_tilde_q": stability.get("w_tilde_mean"), "r2_docs": structure.get("r2"),
                        "w_tilde_g": structure.get("w_tilde_mean"), "m_median": figures["m_median"],
                        "top1": figures["top1"], "mrr": figures["mrr"]})
    tables["pairing"] = attempt("pairing", lambda: _pairing_rows(con, per_model)) or []
    columns = {"query_stability": STRUCTURE_COLUMNS, "document_structure": STRUCTURE_COLUMNS,
               "alignment": ALIGNMENT_COLUMNS, "rank": RANK_COLUMNS, "pairing": PAIRING_COLUMNS, "dose": DOSE_COLUMNS}
    wanted = [name for name in TITLES if (name != "dose" or level is not None) and name not in left_out]
    sections = tuple(Section(name, TITLES[name], ResultTable.from_dicts(name, columns[name], tables[name]),
                             CAUTIONS[name]) for name in wanted)
    summary_table = ResultTable.from_dicts("retrieval", ("model", "queries", "docs", "r2_queries", "w_tilde_q",
                                                         "r2_docs", "w_tilde_g", "m_median", "top1", "mrr"), summary)
    notes = [f"{TITLES[name].split('. ')[-1]} left out: {text}" for name, text in left_out.items()]
    meta = {"queries": shown["queries"], "docs": shown["docs"], "scope": scope, "columns": cols.__dict__.copy(),
            "permutations": permutations, "seed": seed, "alpha": alpha, **({"notes": notes} if notes else {})}
    return ReportResult("Retrieval diagnostics: four layers", summary_table, sections, meta)
