"""Retrieval margins by blocked matrix products: never an nq x nd matrix at once.

For query q (unit vector) with correct document d+ and distractors D- (every other document of
the corpus, or only those of d+'s group), with s(q, d) = q . d the cosine similarity:
    s+ = s(q, d+),  s- = max over D- of s(q, d),  margin = s+ - s-
    d_pos2 = ||q - d+||^2,  d_neg2 = ||q - d-||^2 (d- the best distractor),
    m = (d_neg2 - d_pos2) / (d_neg2 + d_pos2)
    ties = #{d in D-: |s(q, d) - s+| <= tol},  higher = #{d in D-: s(q, d) > s+ + tol},
    rank = 1 + higher + ties,  top1 = (rank = 1) = (m > 0).
A tie counts against d+ (pessimistic rank).  When the best distractor ties with d+, margin and m
are reported as exactly 0, so top1 = (m > 0) holds in every row.  tol = 2 (d + 4) eps64 bounds the
rounding of a float64 dot product of two unit vectors of dimension d (the SQL macros use the same).

How: the products run in float32, documents in blocks.  A float32 similarity of unit vectors is
within delta = 2 (d + 4) eps32 of the float64 one, so only documents within delta (+ tol) of s+
(for the counts) or of the running best distractor (for s-) can be decided differently by
rounding; those few are recomputed in float64, so every figure equals a float64 brute force.
d_pos2 and d_neg2 are summed from the coordinate differences (not 2 - 2 s, which cancels when q
is close to a document).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embsql.core.labels import sort_key
from embsql.errors import BadLabelError, DesignError, InputError, fail

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps)
BLOCK_ELEMENTS = 1 << 24      # float32 similarities per block (64 MB): bounds memory, stays BLAS-sized
QUERY_BLOCK = 2048
RECALL_AT = (1, 5, 10)
MARGIN_COLUMNS = ("model", "qid", "d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties")
QUANTILES = {"m_p05": 0.05, "m_p25": 0.25, "m_median": 0.5, "m_p75": 0.75, "m_p95": 0.95}


def tie_tolerance(dim: int) -> float:
    """|s(q, d) - s+| at or below this is a tie (float64 rounding of unit-vector dot products)."""
    return 2.0 * (dim + 4) * EPS64


def screen_error(dim: int) -> float:
    """Bound on |float32 similarity - float64 similarity| for unit vectors of dimension dim."""
    return 2.0 * (dim + 4) * EPS32


@dataclass(frozen=True)
class Margins:
    """Per query, in input order."""

    d_pos2: np.ndarray
    d_neg2: np.ndarray
    margin: np.ndarray
    m: np.ndarray
    top1: np.ndarray
    rank: np.ndarray
    ties: np.ndarray


@dataclass
class _Scan:
    """Running state of one scan: exact best distractor and the rank counts, per query."""

    best: np.ndarray          # exact s of the best distractor so far
    best_index: np.ndarray    # its row in the document matrix (-1: none yet)
    higher: np.ndarray
    ties: np.ndarray

    @classmethod
    def empty(cls, n: int) -> _Scan:
        return cls(np.full(n, -np.inf), np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64))


def _f32_up(x: np.ndarray) -> np.ndarray:
    y = x.astype(np.float32)
    return np.where(y < x, np.nextafter(y, np.float32(np.inf)), y)


def _f32_down(x: np.ndarray) -> np.ndarray:
    y = x.astype(np.float32)
    return np.where(y > x, np.nextafter(y, np.float32(-np.inf)), y)


def _exact(q64: np.ndarray, d64: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", q64[rows], d64[cols])


def _scan(q64: np.ndarray, d64: np.ndarray, relevant: tuple[np.ndarray, np.ndarray], s_pos: np.ndarray,
          tol: float) -> _Scan:
    """Compare every query with every document except its relevant ones: ``relevant`` holds the
    (query row, document row) pairs left out (one positive per query, or every relevant document)."""
    nq, dim = q64.shape
    delta = screen_error(dim)
    hi = _f32_up(s_pos + delta + tol)           # float32 above hi: certainly higher than s+ + tol
    lo = _f32_down(s_pos - delta - tol)         # float32 below lo: certainly below s+ - tol
    q32, d32 = q64.astype(np.float32), d64.astype(np.float32)
    state = _Scan.empty(nq)
    running = np.full(nq, -np.inf, np.float32)  # float32 best distractor so far
    q_block = min(nq, QUERY_BLOCK)
    d_block = max(1, BLOCK_ELEMENTS // max(q_block, 1))
    by_query = np.argsort(relevant[0], kind="stable")
    left_query, left_doc = relevant[0][by_query], relevant[1][by_query]
    for q0 in range(0, nq, q_block):
        rows = slice(q0, min(nq, q0 + q_block))
        low, high = np.searchsorted(left_query, [rows.start, rows.stop])
        block_query, block_doc = left_query[low:high] - q0, left_doc[low:high]
        for d0 in range(0, len(d64), d_block):
            s = q32[rows] @ d32[d0:d0 + d_block].T
            here = (block_doc >= d0) & (block_doc < d0 + s.shape[1])
            s[block_query[here], block_doc[here] - d0] = -np.inf
            block_max = s.max(axis=1)
            _count(s, block_max, q0, d0, hi[rows], lo[rows], q64, d64, s_pos, tol, state)
            _best(s, block_max, q0, d0, running[rows], 2 * delta, q64, d64, state)
    return state


def _count(s: np.ndarray, block_max: np.ndarray, q0: int, d0: int, hi: np.ndarray, lo: np.ndarray, q64: np.ndarray,
           d64: np.ndarray, s_pos: np.ndarray, tol: float, state: _Scan) -> None:
    """Add this block's documents above s+ (and ties) to the rank counts."""
    rows = np.flatnonzero(block_max >= lo)      # other rows have nothing near or above s+ here
    if len(rows) == 0:
        return
    sub = s if len(rows) == len(s) else s[rows]
    above = np.count_nonzero(sub > hi[rows, None], axis=1)
    state.higher[q0 + rows] += above
    near = rows[np.count_nonzero(sub >= lo[rows, None], axis=1) > above]
    if len(near) == 0:
        return
    block = s[near]
    r, c = np.nonzero((block >= lo[near, None]) & (block <= hi[near, None]))
    query = q0 + near[r]
    exact = _exact(q64, d64, query, d0 + c)
    state.higher += np.bincount(query, weights=exact > s_pos[query] + tol, minlength=len(state.higher)).astype(np.int64)
    state.ties += np.bincount(query, weights=np.abs(exact - s_pos[query]) <= tol,
                              minlength=len(state.ties)).astype(np.int64)


def _best(s: np.ndarray, block_max: np.ndarray, q0: int, d0: int, running: np.ndarray, width: float,
          q64: np.ndarray, d64: np.ndarray, state: _Scan) -> None:
    """Recompute exactly every document that may be the best distractor (within width of it)."""
    previous = running.copy()
    np.maximum(running, block_max, out=running)
    rows = np.flatnonzero((block_max >= previous - width) & np.isfinite(block_max))
    if len(rows) == 0:
        return
    threshold = _f32_down(running[rows].astype(np.float64) - width)
    sub = s if len(rows) == len(s) else s[rows]
    r, c = np.nonzero(sub >= threshold[:, None])
    query = q0 + rows[r]
    exact = _exact(q64, d64, query, d0 + c)
    order = np.lexsort((exact, query))                  # by query, then by value: the last one wins
    last = order[np.r_[query[order][1:] != query[order][:-1], True]]
    better = exact[last] > state.best[query[last]]
    state.best[query[last][better]] = exact[last][better]
    state.best_index[query[last][better]] = d0 + c[last][better]


def _squared_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    diff = a - b
    return np.einsum("ij,ij->i", diff, diff)


def compute(queries: np.ndarray, positive: np.ndarray, docs: np.ndarray, doc_groups: np.ndarray | None = None) -> Margins:
    """Margins of unit query vectors against unit document vectors (float64 rows).

    ``positive`` is the row of each query's correct document in ``docs``.  With ``doc_groups``
    (integer codes per document) the distractors are the other documents of d+'s group (scope
    'group'); without, every other document (scope 'corpus').  Every query must have at least one
    distractor (the caller checks and names the query).
    """
    positive = np.asarray(positive, dtype=np.int64)
    tol = tie_tolerance(queries.shape[1])
    s_pos = np.einsum("ij,ij->i", queries, docs[positive])
    if doc_groups is None:
        state = _scan(queries, docs, (np.arange(len(queries)), positive), s_pos, tol)
    else:
        state = _Scan.empty(len(queries))
        query_group = doc_groups[positive]
        order = np.argsort(query_group, kind="stable")
        starts = np.flatnonzero(np.r_[True, query_group[order][1:] != query_group[order][:-1]])
        by_group = np.argsort(doc_groups, kind="stable")          # documents of group g: one slice
        bounds = np.searchsorted(doc_groups[by_group], [query_group[order][starts], query_group[order][starts] + 1])
        for q_rows, low, high in zip(np.split(order, starts[1:]), *bounds):
            members = by_group[low:high]                           # ascending rows (stable sort)
            local = np.searchsorted(members, positive[q_rows])
            part = _scan(queries[q_rows], docs[members], (np.arange(len(q_rows)), local), s_pos[q_rows], tol)
            state.best[q_rows], state.higher[q_rows], state.ties[q_rows] = part.best, part.higher, part.ties
            state.best_index[q_rows] = members[part.best_index]
    return _finish(queries, docs, positive, s_pos, state)


def compute_relevant(queries: np.ndarray, relevant_query: np.ndarray, relevant_doc: np.ndarray,
                     docs: np.ndarray) -> Margins:
    """Margins with any number of relevant documents per query (scope 'corpus').

    ``relevant_query``, ``relevant_doc``: the (query row, document row) pairs judged relevant;
    every query needs one, and one document that is not (the caller checks and names the query).
    d+ is the nearest relevant document, d- the nearest non-relevant one; the rank is that of the
    first relevant document (ties with non-relevant ones count against it), so with one relevant
    document per query this is :func:`compute` exactly.
    """
    relevant_query = np.asarray(relevant_query, dtype=np.int64)
    relevant_doc = np.asarray(relevant_doc, dtype=np.int64)
    similarity = np.einsum("ij,ij->i", queries[relevant_query], docs[relevant_doc])
    order = np.lexsort((similarity, relevant_query))          # by query, then by similarity: the last is d+
    last = order[np.r_[relevant_query[order][1:] != relevant_query[order][:-1], True]]
    positive = np.empty(len(queries), np.int64)
    positive[relevant_query[last]] = relevant_doc[last]
    s_pos = np.einsum("ij,ij->i", queries, docs[positive])
    state = _scan(queries, docs, (relevant_query, relevant_doc), s_pos, tie_tolerance(queries.shape[1]))
    return _finish(queries, docs, positive, s_pos, state)


def _finish(queries: np.ndarray, docs: np.ndarray, positive: np.ndarray, s_pos: np.ndarray, state: _Scan) -> Margins:
    """Distances, margins and ranks from a finished scan (positive: the row of d+ per query)."""
    if (state.best_index < 0).any():
        raise AssertionError("a query without distractors reached the margin kernel")
    d_pos2 = _squared_distances(queries, docs[positive])
    d_neg2 = _squared_distances(queries, docs[state.best_index])
    margin = s_pos - state.best
    with np.errstate(invalid="ignore", divide="ignore"):
        m = (d_neg2 - d_pos2) / (d_neg2 + d_pos2)
    # the best distractor ties with d+ (or rounding leaves the two signs in doubt): exactly 0
    tie = ((state.higher == 0) & (state.ties > 0)) | (np.sign(margin) != np.sign(m)) | (d_neg2 + d_pos2 == 0)
    margin[tie] = 0.0
    m[tie] = 0.0
    rank = 1 + state.higher + state.ties
    return Margins(d_pos2, d_neg2, margin, m, rank == 1, rank, state.ties)


# ---- summaries over queries -------------------------------------------------------------


def cluster_jackknife_ratio(values: np.ndarray, weights: np.ndarray,
                            clusters: np.ndarray) -> tuple[float, np.ndarray | None]:
    """theta = sum(values) / sum(weights) and its delete-one-cluster replicates.

    ``clusters`` holds integer codes 0..G-1; deleting cluster g removes its values and weights.
    A mean of per-query figures (top-1, MRR, mean m) uses weights 1; a mean of per-group figures
    (W~ of each group) uses one value per group.  Returns (theta, replicates) with replicates
    of length G (None unless at least two clusters carry weight); resampling.jackknife_se turns
    replicates into the SE.
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    total_v, total_w = values.sum(), weights.sum()
    theta = total_v / total_w if total_w > 0 else np.nan      # nan only where no cluster has weight
    groups = int(clusters.max()) + 1 if len(clusters) else 0
    per_v = np.bincount(clusters, weights=values, minlength=groups)
    per_w = np.bincount(clusters, weights=weights, minlength=groups)
    if np.count_nonzero(per_w > 0) < 2:     # deleting the only cluster with weight leaves nothing
        return theta, None
    with np.errstate(invalid="ignore", divide="ignore"):
        replicates = (total_v - per_v) / (total_w - per_w)
    return theta, replicates


SCOPES = ("corpus", "group")


def model_text(model: object) -> str:
    return "" if model is None else f" (model {model!r})"


def check_scope(scope: object) -> None:
    if scope not in SCOPES:
        fail("argument.scope", name="scope", rule="'corpus' or 'group'", value=repr(scope))


def model_margins(q_ids: list, positive: np.ndarray, q_unit: np.ndarray, d_keys: np.ndarray,
                  d_groups: np.ndarray | None, d_unit: np.ndarray, scope: str, model: object = None) -> Margins:
    """Map positives to documents, check that every query has distractors, run the kernel."""
    check_scope(scope)
    index = {k: i for i, k in enumerate(d_keys.tolist())}
    rows = np.fromiter((index.get(p, -1) for p in positive.tolist()), np.int64, len(positive))
    if (rows < 0).any():
        i = int(np.flatnonzero(rows < 0)[0])
        fail("label.unknown_positive", query=repr(q_ids[i]), whose=model_text(model), positive=repr(positive[i]),
             docs=f"the documents ({(rows < 0).sum()} such queries)")
    if scope == "corpus":
        if len(d_keys) < 2:
            fail("design.no_distractor", query=repr(q_ids[0]), whose=model_text(model), scope="'corpus'",
                 positive=repr(positive[0]), where="")
        return compute(q_unit, rows, d_unit)
    assert d_groups is not None, "scope 'group' needs the documents' groups"
    names = sorted(set(d_groups.tolist()), key=sort_key)
    lookup = {g: k for k, g in enumerate(names)}
    codes = np.fromiter((lookup[g] for g in d_groups.tolist()), np.int64, len(d_groups))
    sizes = np.bincount(codes, minlength=len(names))
    lonely = np.flatnonzero(sizes[codes[rows]] < 2)
    if len(lonely):
        i = int(lonely[0])
        fail("design.no_distractor", query=repr(q_ids[i]), whose=model_text(model), scope="'group'",
             positive=repr(positive[i]), where=f" of group {d_groups[rows[i]]!r}; {len(lonely)} such queries: use "
                                               "scope 'corpus' or add documents")
    return compute(q_unit, rows, d_unit, codes)


def margin_dicts(model: object, qids: list, result: Margins) -> list[dict]:
    """Rows of MARGIN_COLUMNS for one model's queries (in the order of ``qids``)."""
    return [{"model": model, "qid": qid, "d_pos2": float(a), "d_neg2": float(b), "margin": float(c), "m": float(e),
             "top1": bool(f), "rank": int(g), "ties": int(h)}
            for qid, a, b, c, e, f, g, h in zip(qids, result.d_pos2, result.d_neg2, result.margin, result.m,
                                                result.top1, result.rank, result.ties)]


def relevant_margins(q_ids: list, q_keys: np.ndarray, q_unit: np.ndarray, d_keys: np.ndarray, d_unit: np.ndarray,
                     judged: tuple[list, list, list], threshold: int = 1, model: object = None,
                     name: str = "qrels") -> Margins:
    """Margins from qrels: ``judged`` = (qids, doc_ids, relevance) as text, text, whole numbers.

    A document is relevant to a query when its relevance is at least ``threshold``; every other
    document (judged below it, or not judged) is a distractor.  Every qrels id must be in the tables,
    and every query needs one relevant document and one distractor: each is an error naming it."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, np.integer)) or threshold < 1:
        raise InputError(f"relevance_threshold must be a whole number >= 1, not {threshold!r}")
    query_row = {k: i for i, k in enumerate(q_keys.tolist())}
    doc_row = {k: i for i, k in enumerate(d_keys.tolist())}
    qids, docs, relevance = judged
    for ids, rows, what in ((qids, query_row, "qid"), (docs, doc_row, "doc_id")):
        absent = [x for x in ids if x not in rows]
        if absent:
            raise BadLabelError(f"{name}: {what} {absent[0]!r} is not a {what} of the "
                                f"{'queries' if what == 'qid' else 'documents'}{model_text(model)} "
                                f"({len(set(absent))} such ids); qrels must refer to rows of the tables")
    keep = [i for i, r in enumerate(relevance) if r >= threshold]
    rq = np.fromiter((query_row[qids[i]] for i in keep), np.int64, len(keep))
    rd = np.fromiter((doc_row[docs[i]] for i in keep), np.int64, len(keep))
    counts = np.bincount(rq, minlength=len(q_keys))
    if (counts == 0).any():
        i = int(np.flatnonzero(counts == 0)[0])
        raise DesignError(f"query {q_ids[i]!r}{model_text(model)} has no document with relevance >= {threshold} in "
                          f"{name} ({int((counts == 0).sum())} such queries): its margin is undefined; leave those "
                          "queries out or lower relevance_threshold")
    if (counts >= len(d_keys)).any():
        i = int(np.flatnonzero(counts >= len(d_keys))[0])
        raise DesignError(f"query {q_ids[i]!r}{model_text(model)}: every document is relevant, so it has no distractor")
    return compute_relevant(q_unit, rq, rd, d_unit)
