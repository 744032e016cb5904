"""Ranked retrieval: exact cosine top-k in blocks, and the trec_eval rank metrics.

Top-k.  ``top_k`` ranks every document for every query by cosine similarity, exactly, without an
n x m product: float32 products of a block of queries with a block of documents pick candidates
(the k + SPARE best per query of a small first block of FIRST_BLOCK documents, by a partial sort;
afterwards, in blocks doubling up to DOC_BLOCK, only what reaches the current (k + SPARE)-th best,
by one comparison per product), then float64 recomputes the candidates' cosines and decides.  A query is kept only if no
document outside its candidates can reach its k-th score given the worst-case float32 error; the
rare others are ranked again over all documents in float64.  ``StreamedTopK`` gives the same
answer for documents that arrive in blocks (a table streamed from a database, never held whole):
each block is ranked as above, with the running k-th score as a floor below which a document is
of no interest, and merged with the running list by the tie rule below.

Tie rule.  Scores are float64 cosines rounded to a grid of RESOLUTION = 2^-40 (about 9e-13,
the grid of embsql.core.agreement): rounding noise of the dot product stays below it, so
duplicated documents tie exactly.  Equal scores are ordered by doc_id DESCENDING as text (byte
order), which is trec_eval's own order (it sorts by score descending, then by docno with strcmp,
descending).  The rank column is that order.  trec_eval itself compares scores as 32-bit
floats (``trec_scores``), so embsql.evaluate does too: scores closer than float32's resolution
tie there and go by doc_id, which can swap two near-equal documents of retrieve's order (ranx
compares full float64 scores, and differs from trec_eval exactly there).

Metrics (trec_eval's definitions, relevant = relevance >= 1, gain = relevance):
  ndcg@k       trec_eval ndcg_cut.k: sum_{i<k} g_i / log2(i + 2) over the ideal DCG of the judged
               gains sorted descending, cut at k; 0 when the ideal DCG is 0
  map@k        map_cut.k: sum over relevant documents at ranks i <= k of precision@i, / R
  recall@k     recall.k: relevant in the top k / R
  precision@k  P.k: relevant in the top k / k (k, even when fewer are retrieved)
  mrr@k        recip_rank of the run cut at k: 1 / rank of the first relevant document, 0 if none
  hit_rate@k   success.k: 1 if a relevant document is in the top k
R is the number of judged relevant documents of the query (retrieved or not).  A query with
judgements but no relevant document scores 0 on every metric and counts in the mean, as in
trec_eval; a query of the run without any judgement is skipped (trec_eval skips it too).
Documents without a judgement are not relevant.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from embsql.errors import InputError, fail

RESOLUTION = 2.0 ** -40
SPARE = 8                          # candidates beyond k: the float32 error must not reach past them
QUERY_BLOCK = 1024                 # queries per block
DOC_BLOCK = 16_384                 # documents per block: 1024 x 16384 float32 similarities = 64 MB
FIRST_BLOCK = 1024                 # the first block of documents (then doubling up to DOC_BLOCK)
METRICS = ("ndcg", "map", "recall", "precision", "mrr", "hit_rate")
DEFAULT_METRICS = ("ndcg@10", "map@100", "recall@10", "recall@100", "mrr@10", "precision@10", "hit_rate@10")
_METRIC = re.compile(r"^(ndcg|map|recall|precision|mrr|hit_rate)@([0-9]+)$")


# ----------------------------------------------------------------------------------------------
# arguments

def check_k(k: object) -> int:
    """A depth or cutoff: a whole number of 1 or more."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a whole number of 1 or more, not {k!r}", kind="argument.k")
    return int(k)


@dataclass(frozen=True)
class Metric:
    name: str          # as the user wrote it, lower case: "ndcg@10"
    kind: str          # one of METRICS
    cutoff: int


def parse_metrics(metrics: str | Iterable[str]) -> list[Metric]:
    """``["ndcg@10", "map@100", ...]`` -> Metric list (order kept, repeats refused)."""
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(metrics)
    if not metrics:
        fail("metric.empty")
    out, seen = [], set()
    for raw in metrics:
        name = str(raw).strip().lower()
        match = _METRIC.match(name)
        if not match or int(match.group(2)) < 1:
            fail("metric.unknown", metric=repr(raw), names=", ".join(m + "@k" for m in METRICS))
        if name in seen:
            fail("metric.repeated", metric=repr(raw))
        seen.add(name)
        out.append(Metric(name, match.group(1), int(match.group(2))))
    return out


# ----------------------------------------------------------------------------------------------
# exact top-k

def float32_slack(d: int) -> float:
    """|float32 cosine - exact cosine| of unit vectors: rounding the inputs and the scale (3u) and a
    d-term float32 dot product (d u / (1 - d u)), u = 2^-24; plus the float64 error d 2^-52."""
    u = 2.0 ** -24
    return (d * u / (1 - d * u) + 4 * u) + d * 2.0 ** -52


def grid(similarities: np.ndarray) -> np.ndarray:
    """Cosines on the tie grid, as exact integers held in float64 (larger = nearer)."""
    return np.rint(np.clip(similarities, -1.0, 1.0) / RESOLUTION)


def _merge(idx: np.ndarray, val: np.ndarray, rows: list[np.ndarray], cols: list[np.ndarray],
           vals: list[np.ndarray], depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, the ``depth`` best of the current candidates and new hits (float32 values);
    returns (idx, val, best value dropped per row or -inf)."""
    b = len(idx)
    all_rows = np.concatenate([np.repeat(np.arange(b), idx.shape[1]), *rows])
    all_cols = np.concatenate([idx.ravel(), *cols])
    all_vals = np.concatenate([val.ravel(), *vals])
    # one sort on a single float64 key: row, then value descending (a float32 value clipped to
    # [-3, 3] is exact in float64 and rows are 8 apart; placeholders at -inf sort last in their row)
    order = np.argsort(all_rows * 8.0 - np.clip(all_vals, -3.0, 3.0))
    all_rows, all_cols, all_vals = all_rows[order], all_cols[order], all_vals[order]
    start = np.searchsorted(all_rows, np.arange(b))
    position = np.arange(len(all_rows)) - start[all_rows]
    keep = position < depth
    new_idx = all_cols[keep].reshape(b, depth)
    new_val = all_vals[keep].reshape(b, depth)
    dropped = np.full(b, -np.inf, dtype=np.float32)
    first_out = position == depth
    dropped[all_rows[first_out]] = all_vals[first_out]
    return new_idx, new_val, dropped


def unit_float32(docs: np.ndarray, inv_norms: np.ndarray, step: int = 8192) -> np.ndarray:
    """The documents scaled to unit length and rounded once to float32 (``unit`` of top_k), a block
    at a time so that no float64 copy of all of them is made."""
    out = np.empty(docs.shape, dtype=np.float32)
    for low in range(0, len(docs), step):
        out[low:low + step] = docs[low:low + step] * inv_norms[low:low + step, None]
    return out


def _doc_blocks(m: int, doc_block: int) -> list[tuple[int, int]]:
    """Document blocks (start, stop): the first FIRST_BLOCK wide (its partial sort is cheap), then
    doubling up to doc_block, so that each block's threshold comes from a comparable number of
    documents already seen and lets few candidates through."""
    out, low, width = [], 0, min(doc_block, FIRST_BLOCK)
    while low < m:
        out.append((low, min(m, low + width)))
        low += width
        width = min(doc_block, 2 * width)
    return out


def _exact_scores(queries: np.ndarray, docs: np.ndarray, inv_norms: np.ndarray, low: int,
                  cand: np.ndarray) -> np.ndarray:
    """float64 cosines of queries low, low + 1, ... with their candidates, 32 rows at a time so
    the gathered candidate vectors stay in cache."""
    out = np.empty(cand.shape)
    for start in range(0, len(cand), 32):
        stop = min(len(cand), start + 32)
        rows = slice(start, stop)
        gathered = docs[cand[rows]].astype(np.float64)
        out[rows] = np.einsum("rk,rck->rc", queries[low + start:low + stop], gathered) * inv_norms[cand[rows]]
    return out


def _order(keys: np.ndarray, cand: np.ndarray, tie_key: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k best per row: larger key first, then smaller tie key."""
    order = np.lexsort((tie_key[cand], -keys), axis=-1)[:, :k]
    return order


def _exact_rows(queries: np.ndarray, docs: np.ndarray, inv_norms: np.ndarray, tie_key: np.ndarray, k: int,
                doc_block: int) -> tuple[np.ndarray, np.ndarray]:
    """Top k of a few queries over every document in float64 (the fallback)."""
    m = len(docs)
    keys = np.empty((len(queries), m))
    for a in range(0, m, doc_block):
        keys[:, a:a + doc_block] = grid((queries @ docs[a:a + doc_block].astype(np.float64).T) * inv_norms[a:a + doc_block])
    idx = np.empty((len(queries), k), dtype=np.int64)
    out = np.empty((len(queries), k))
    for r, row in enumerate(keys):
        bound = np.partition(row, m - k)[m - k]
        cand = np.flatnonzero(row >= bound)
        order = np.lexsort((tie_key[cand], -row[cand]))[:k]
        idx[r], out[r] = cand[order], row[cand[order]]
    return idx, out


def top_k(queries: np.ndarray, docs: np.ndarray, inv_norms: np.ndarray, tie_key: np.ndarray, k: int, *,
          query_block: int = QUERY_BLOCK, doc_block: int = DOC_BLOCK,
          floor: np.ndarray | None = None, unit: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(indices, scores), both n x min(k, m): each query's best documents by cosine, best first.

    queries: n x d unit vectors (float64).  docs: m x d vectors as given (float32 keeps memory at
    one copy); inv_norms: 1 / ||doc|| in float64.  tie_key: int per document, smaller first among
    equal scores (the position of the doc_id in descending text order gives trec_eval's rule).
    scores are grid-rounded float64 cosines (see the module docstring).

    floor (n scores, from a running list; see StreamedTopK): documents whose score is below a
    query's floor are of no interest, and may be left out; where fewer than k documents reach
    the floor the row is padded with index -1 and score -inf.

    unit (optional): the documents already scaled to unit length in float32 (unit_float32), for a
    caller that ranks the same documents again and again; else each block is scaled as it is read.
    """
    n, d = queries.shape
    m = len(docs)
    k = min(k, m)
    depth = min(m, k + SPARE)
    slack = float32_slack(d)
    q32 = queries.astype(np.float32)
    inv32 = inv_norms.astype(np.float32)
    tie_key = np.asarray(tie_key, dtype=np.int64)
    out_idx = np.empty((n, k), dtype=np.int64)
    out_score = np.empty((n, k))
    # below this float32 value a document's exact score rounds below the floor's grid point
    low_bound = (np.full(n, -np.inf, dtype=np.float32) if floor is None else
                 np.nextafter((floor - 0.5 * RESOLUTION - slack).astype(np.float32), np.float32(-np.inf)))
    for low in range(0, n, query_block):
        high = min(n, low + query_block)
        b = high - low
        if floor is None:
            idx = np.empty((b, 0), dtype=np.int64)
            val = np.empty((b, 0), dtype=np.float32)
        else:           # placeholders: every document above the floor is a candidate from the start
            idx = np.full((b, depth), -1, dtype=np.int64)
            val = np.full((b, depth), -np.inf, dtype=np.float32)
        threshold = np.maximum(val[:, -1], low_bound[low:high]) if idx.shape[1] else low_bound[low:high]
        outside = np.full(b, -np.inf, dtype=np.float32)
        pending: tuple[list, list, list] = ([], [], [])
        buffered = 0
        for a, z in _doc_blocks(m, doc_block):
            if unit is not None:
                sims = q32[low:high] @ unit[a:z].T
            else:
                block = docs[a:z]
                sims = q32[low:high] @ (block if block.dtype == np.float32 else block.astype(np.float32)).T
                sims *= inv32[a:z]
            width = sims.shape[1]
            if idx.shape[1] < depth:
                # too few candidates yet: take this block's best outright
                take = min(width, depth)
                if take < width:
                    # one kth: the take best lie after it, and it is the best left out
                    part = np.argpartition(sims, width - take - 1, axis=1)
                    cols = part[:, width - take:]
                    best_left = np.take_along_axis(sims, part[:, width - take - 1:width - take], axis=1)[:, 0]
                    outside = np.maximum(outside, best_left)
                else:
                    cols = np.broadcast_to(np.arange(width), (b, width))
                vals = np.take_along_axis(sims, cols, axis=1)
                idx, val, dropped = _merge(idx, val, [np.repeat(np.arange(b), take)], [(cols + a).ravel()],
                                           [vals.ravel()], min(depth, idx.shape[1] + take))
                outside = np.maximum(outside, dropped)
                if idx.shape[1] == depth:
                    threshold = np.maximum(val[:, -1], threshold)
                continue
            # flatnonzero is several times faster than a 2-d nonzero on a mostly-False mask
            rows, cols = np.divmod(np.flatnonzero(sims >= threshold[:, None]), width)
            # what is not taken lies below the threshold: below the floor (of no interest) or
            # below the depth-th candidate, which therefore bounds the outside
            outside = np.maximum(outside, val[:, -1])
            if len(rows):
                pending[0].append(rows)
                pending[1].append(cols + a)
                pending[2].append(sims[rows, cols])
                buffered += len(rows)
            if buffered > b * depth or (buffered and z >= m):
                idx, val, dropped = _merge(idx, val, *pending, depth)
                outside = np.maximum(outside, dropped)
                threshold = np.maximum(val[:, -1], low_bound[low:high])
                pending, buffered = ([], [], []), 0
        if floor is not None:
            # candidates come first in each row (placeholders are -inf): score only those columns
            idx = idx[:, :int((idx >= 0).sum(axis=1).max(initial=0))]
        keys = grid(_exact_scores(queries, docs, inv_norms, low, idx))
        keys[idx < 0] = -np.inf                                   # placeholders
        order = _order(keys, idx, tie_key, k)
        got = order.shape[1]
        out_idx[low:high, :got] = np.take_along_axis(idx, order, axis=1)
        out_score[low:high, :got] = np.take_along_axis(keys, order, axis=1)
        out_idx[low:high, got:] = -1
        out_score[low:high, got:] = -np.inf
        if depth < m:
            last = out_score[low:high, -1]
            # nothing left out but under the floor (outside -inf): sure even with placeholders
            unsure = np.flatnonzero((outside > -np.inf)
                                    & (outside.astype(np.float64) + slack >= (last - 0.5) * RESOLUTION))
            if len(unsure):
                rows = low + unsure
                out_idx[rows], out_score[rows] = _exact_rows(queries[rows], docs, inv_norms, tie_key, k, doc_block)
    return out_idx, out_score * RESOLUTION


class StreamedTopK:
    """Exact top-k over documents that arrive in blocks (a table streamed from a database), so
    that they are never held whole: each block is ranked by ``top_k`` with the running k-th
    score as its floor, and its best are merged with the running list by the same rule (score
    descending, then tie key ascending).  The tie keys are those of all the documents, given
    up front; the result equals ``top_k`` over all documents at once."""

    def __init__(self, queries: np.ndarray, tie_key: np.ndarray, k: int):
        self.queries, self.tie_key, self.k = queries, np.asarray(tie_key, dtype=np.int64), k
        self.idx = np.empty((len(queries), 0), dtype=np.int64)
        self.score = np.empty((len(queries), 0))

    def add(self, docs: np.ndarray, inv_norms: np.ndarray, positions: np.ndarray) -> None:
        """Rank a block: ``positions`` are the documents' indices into the tie keys (and the result)."""
        full = self.idx.shape[1] == self.k
        idx, score = top_k(self.queries, docs, inv_norms, self.tie_key[positions], self.k,
                           floor=self.score[:, -1] if full else None)
        idx = np.where(idx >= 0, positions[np.maximum(idx, 0)], -1)
        # only rows with a new document at or above the running k-th can change
        rows = np.flatnonzero(score[:, 0] >= self.score[:, -1]) if full else np.arange(len(idx))
        if not len(rows):
            return
        both_idx = np.concatenate([self.idx[rows], idx[rows]], axis=1)
        both_score = np.concatenate([self.score[rows], score[rows]], axis=1)
        order = np.lexsort((self.tie_key[both_idx], -both_score), axis=-1)[:, :self.k]
        if not full:
            width = order.shape[1]
            self.idx, self.score = np.empty((len(idx), width), dtype=np.int64), np.empty((len(idx), width))
        self.idx[rows] = np.take_along_axis(both_idx, order, axis=1)
        self.score[rows] = np.take_along_axis(both_score, order, axis=1)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """(indices, scores) as top_k gives them."""
        return self.idx, self.score


# ----------------------------------------------------------------------------------------------
# ordering a run and the metrics

def trec_scores(score: np.ndarray) -> np.ndarray:
    """A run's scores as trec_eval compares them: 32-bit floats (its TEXT_TR.sim is a C float;
    pytrec_eval stores them the same way).  Scores closer than float32's resolution (about 6e-8 at
    0.5) therefore tie there and are ordered by doc_id, so evaluate orders by these values to give
    trec_eval's numbers; beyond float32's range a score is +-inf, as the C conversion gives."""
    with np.errstate(over="ignore"):
        return np.asarray(score, dtype=np.float64).astype(np.float32)


def positions(query_sorted: np.ndarray) -> np.ndarray:
    """0-based rank of each row within its query, for rows sorted by query."""
    start = np.flatnonzero(np.r_[True, query_sorted[1:] != query_sorted[:-1]])
    return np.arange(len(query_sorted)) - np.repeat(start, np.diff(np.r_[start, len(query_sorted)]))


def rank_metrics(query: np.ndarray, position: np.ndarray, gain: np.ndarray, judged: np.ndarray,
                 ideal: np.ndarray, relevant: np.ndarray, metrics: list[Metric]) -> dict[str, np.ndarray]:
    """Per-query values of each metric.

    query, position, gain, judged: per run row (query index 0..n-1, 0-based rank, relevance of the
    document or 0, whether it has a judgement).  ideal: n x c judged gains sorted descending (c >=
    every cutoff, zero-padded); relevant: n, the number of documents with relevance >= 1.
    Also returns "unjudged@k": the share of the top k (of k) without a judgement.
    """
    n = len(relevant)
    depth = max(m.cutoff for m in metrics)
    keep = position < depth
    rows, cols = query[keep], position[keep]
    g = np.zeros((n, depth))
    g[rows, cols] = gain[keep]
    unjudged = np.zeros((n, depth), dtype=bool)
    unjudged[rows, cols] = ~judged[keep]
    hit = g >= 1
    # one running count (relevant so far, for precision at each relevant rank); every other
    # figure at cutoff c is a row sum over the first c ranks, computed for the cutoffs asked only
    found = np.cumsum(hit, axis=1, dtype=np.int32)
    discount = 1.0 / np.log2(np.arange(depth) + 2.0)
    r = relevant.astype(np.float64)
    has = r > 0
    safe_r = np.where(has, r, 1.0)
    weighted: dict[str, np.ndarray] = {}

    def at(kind: str, c: int) -> np.ndarray:
        """Row sums over the first c ranks of a per-rank figure (each figure built once)."""
        if kind not in weighted:
            if kind == "dcg":
                weighted[kind] = g * discount
            elif kind == "idcg":
                weighted[kind] = ideal[:, :depth] * discount[:ideal.shape[1]]
            elif kind == "ap":
                weighted[kind] = np.where(hit, found / np.arange(1.0, depth + 1), 0.0)
            else:
                weighted[kind] = unjudged
        return weighted[kind][:, :c].sum(axis=1)

    first = np.where(hit.any(axis=1), np.argmax(hit, axis=1), depth)
    out = {}
    for metric in metrics:
        c = metric.cutoff
        if metric.kind == "ndcg":
            idcg = at("idcg", c)
            value = np.where(idcg > 0, at("dcg", c) / np.where(idcg > 0, idcg, 1.0), 0.0)
        elif metric.kind == "map":
            value = np.where(has, at("ap", c) / safe_r, 0.0)
        elif metric.kind == "recall":
            value = np.where(has, found[:, c - 1] / safe_r, 0.0)
        elif metric.kind == "precision":
            value = found[:, c - 1] / c
        elif metric.kind == "mrr":
            value = np.where(first < c, 1.0 / (first + 1.0), 0.0)
        else:  # hit_rate
            value = (found[:, c - 1] > 0).astype(np.float64)
        out[metric.name] = value
        if f"unjudged@{c}" not in out:
            out[f"unjudged@{c}"] = at("unjudged", c) / c
    return out
