"""embsql.core.ranking.top_k across its block schedule (a partial sort of the first FIRST_BLOCK
documents, then doubling blocks that pass only what beats the running threshold), with and without
the documents given scaled to unit float32, pinned to a brute-force numpy ranking in float64."""

import numpy as np
import pytest

from embsql.core import ranking


def _brute(q, docs, tie, k):
    """Each query's k best by the float64 cosine on the 2^-40 grid, ties to the smaller tie key."""
    d64 = np.asarray(docs, dtype=np.float64)
    keys = ranking.grid(q @ (d64 / np.linalg.norm(d64, axis=1, keepdims=True)).T)
    idx = np.array([np.lexsort((tie, -row))[:k] for row in keys])
    return idx, np.take_along_axis(keys, idx, axis=1) * ranking.RESOLUTION


def _data(seed, m, d, dtype):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(40, d))
    # a third exact duplicates (ties on the grid), a third rounded (many near-ties), a third free
    docs = np.vstack([base[rng.integers(0, 40, m // 3)], np.round(rng.normal(size=(m // 3, d))),
                      rng.normal(size=(m - 2 * (m // 3), d))])
    docs = docs[np.linalg.norm(docs, axis=1) > 0].astype(dtype)
    q = np.vstack([rng.normal(size=(30, d)), docs[:10].astype(np.float64)])   # some queries are documents
    return q / np.linalg.norm(q, axis=1, keepdims=True), docs, rng.permutation(len(docs))


@pytest.mark.parametrize("m,doc_block,k", [(3000, 16384, 10), (2500, 700, 25), (1030, 1024, 40), (90, 16, 100)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("given_unit", [False, True])
def test_top_k_equals_brute_force_over_the_block_schedule(m, doc_block, k, dtype, given_unit):
    q, docs, tie = _data(m + doc_block, m, 12, dtype)
    inv = 1 / np.linalg.norm(docs.astype(np.float64), axis=1)
    unit = ranking.unit_float32(docs, inv) if given_unit else None
    idx, score = ranking.top_k(q, docs, inv, tie, k, query_block=16, doc_block=doc_block, unit=unit)
    want_idx, want_score = _brute(q, docs, tie, min(k, len(docs)))
    assert np.array_equal(idx, want_idx)
    assert np.allclose(score, want_score, rtol=0, atol=1e-12)


def test_the_block_schedule_starts_small_and_doubles():
    assert ranking._doc_blocks(5000, 4096) == [(0, 1024), (1024, 3072), (3072, 5000)]
    assert ranking._doc_blocks(100, 30) == [(0, 30), (30, 60), (60, 90), (90, 100)]
    blocks = ranking._doc_blocks(100_000, ranking.DOC_BLOCK)
    assert blocks[0] == (0, ranking.FIRST_BLOCK) and blocks[-1][1] == 100_000
    assert all(b[0] == a[1] for a, b in zip(blocks, blocks[1:]))


def test_unit_float32_is_the_scaled_vectors_rounded_once():
    rng = np.random.default_rng(5)
    docs = rng.normal(size=(20_000, 3)).astype(np.float32)
    inv = 1 / np.linalg.norm(docs.astype(np.float64), axis=1)
    unit = ranking.unit_float32(docs, inv)
    assert unit.dtype == np.float32
    assert np.array_equal(unit, (docs.astype(np.float64) * inv[:, None]).astype(np.float32))
