"""Margins (SPEC S20, S21): the Python API, the plain-SQL macro and the UDF-backed macro against a
brute-force numpy computation written here (tests/retrieval_data.brute_force), blocks, near-ties
closer than float32 can tell apart, exact ties, and invariance properties."""

import math
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import retrieval_data as rd
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql
from embsql.core import margins as margin_scan
from embsql.io.resources import sql_entry_file

FIELDS = ("d_pos2", "d_neg2", "margin", "m")


def plain_sql() -> duckdb.DuckDBPyConnection:
    """A connection with only sql/embsql.sql: what the stock CLI has."""
    con = duckdb.connect()
    con.execute(sql_entry_file().read_text())
    return con


def connections(queries, docs):
    """(route name, connection) for the plain-SQL and the UDF-backed macros."""
    out = []
    for name, con in (("sql", plain_sql()), ("udf", embsql.connect())):
        con.register("q", queries)
        con.register("d", docs)
        out.append((name, con))
    return out


def assert_rows_equal(got: list[dict], expected: list[dict], tol=1e-12):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g["qid"] == e["qid"]
        assert (g["rank"], g["top1"], g["ties"]) == (e["rank"], e["top1"], e["ties"]), (g, e)
        for field in FIELDS:
            assert g[field] == pytest.approx(e[field], abs=tol), (field, g, e)


def expected_rows(queries, docs, scope, models):
    rows = []
    for model in models:
        for row in sorted(rd.brute_force(rd.arrays(queries, model), rd.arrays(docs, model), scope),
                          key=lambda r: r["qid"]):
            rows.append({"model": model, **row})
    return rows


@pytest.mark.parametrize("scope", ["corpus", "group"])
def test_every_route_equals_brute_force(scope):
    queries, docs = rd.make(3, models=("a", "b"), dims=[12, 20], topics=5, docs_per_topic=4, questions=12)
    expected = expected_rows(queries, docs, scope, ("a", "b"))
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    python = embsql.margins(con, "q", "d", scope=scope, model="model")
    assert python.columns == ("model", "qid", "d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties")
    assert [r["model"] for r in python.to_dicts()] == [r["model"] for r in expected]
    assert_rows_equal(python.to_dicts(), expected)
    schemas = []
    for route, sql_con in connections(queries, docs):
        table = sql_con.sql(f"SELECT * FROM emb_margins('q', 'd', scope := '{scope}', model := 'model')"
                            ).to_arrow_table()
        assert table.column_names == list(python.columns), route
        assert table.column("model").to_pylist() == [r["model"] for r in expected]
        assert_rows_equal(table.to_pylist(), expected)
        schemas.append(table.schema)
    assert schemas[0] == schemas[1]
    top1 = np.array([r["top1"] for r in expected])
    assert 0.2 < top1.mean() < 0.95      # the data has hits and misses, so the test can fail


def test_without_model_column_rows_are_by_qid_and_there_is_no_model_column(con):
    queries, docs = rd.make(4, questions=5)
    con.register("q", queries.drop_columns(["model"]))
    con.register("d", docs.drop_columns(["model"]))
    result = embsql.margins(con, "q", "d")
    assert result.columns == ("qid", "d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties")   # no model column
    assert result.column("qid") == sorted(result.column("qid"))
    sql = con.sql("SELECT * FROM emb_margins('q', 'd')").to_arrow_table()
    assert sql.column_names == list(result.columns)
    assert_rows_equal(sql.to_pylist(), result.to_dicts())


def test_custom_column_names_and_integer_ids(con):
    queries, docs = rd.make(5, questions=4)
    number = {f"d{t}_{k}": 10 * t + k for t in range(6) for k in range(5)}
    queries = queries.set_column(4, "positive", pa.array([number[p] for p in queries.column("positive").to_pylist()]))
    docs = docs.set_column(1, "doc_id", pa.array([number[p] for p in docs.column("doc_id").to_pylist()], pa.int32()))
    queries = queries.rename_columns(["mdl", "id", "question", "strength", "answer", "emb"])
    docs = docs.rename_columns(["mdl", "doc", "topic", "emb"])
    con.register("q", queries)
    con.register("d", docs)
    python = embsql.margins(con, embsql.Queries("q", qid="id", group="question", positive="answer", vector="emb"),
                            embsql.Docs("d", doc_id="doc", group="topic", vector="emb"), scope="group", model="mdl")
    assert python.columns[0] == "mdl"                      # the model column keeps its name
    sql = con.sql("SELECT * FROM emb_margins('q', 'd', scope := 'group', qid := 'id', "
                  "positive := 'answer', vector := 'emb', doc_id := 'doc', doc_group := 'topic', "
                  "doc_vector := 'emb', model := 'mdl')").to_arrow_table()
    assert sql.column_names[0] == "mdl"
    assert_rows_equal(sql.to_pylist(), python.to_dicts())
    original = rd.make(5, questions=4)
    assert_rows_equal(python.to_dicts(), expected_rows(*original, "group", ("m1",)))


def _near_tie_data(dim=64, seed=0):
    """Distractors closer to s+ than float32 can resolve (1e-12 .. 5e-6 above and below), a
    duplicate distractor, and a query whose best distractors are such a near-equal cluster."""
    rng = np.random.default_rng(seed)
    q = rd.unit(rng.normal(size=dim))
    w = rng.normal(size=(120, dim))
    w = rd.unit(w - np.outer(w @ q, q))                       # directions orthogonal to q
    s_pos = 0.6
    targets = [s_pos] + [s_pos + e for e in (1e-12, -1e-12, 3e-9, -3e-9, 2e-8, -2e-8, 1e-7, -1e-7, 5e-6, -5e-6)]
    targets += [0.3 + 1e-10 * k for k in range(10)]
    targets += [s_pos + sign * k * 1.5e-8 for k in range(1, 20) for sign in (1, -1)]   # float32's blur
    targets += [0.8 + k * 2e-9 for k in range(30)]           # the best distractors: a cluster within float32's blur
    docs = np.array([t * q + np.sqrt(1 - t * t) * w[k] for k, t in enumerate(targets)])
    docs = np.vstack([docs, docs[3]])                          # an exact duplicate of d3
    queries = np.vstack([q, rd.unit(q + 1e-3 * w[119]), q])
    ids = [f"d{k}" for k in range(len(docs))]
    return (pa.table({"qid": ["q0", "q1", "q2"], "positive": ["d0", "d0", "d11"], "vector": rd.vector_column(queries)}),
            pa.table({"doc_id": ids, "group": ["g"] * len(ids), "vector": rd.vector_column(docs)}))


def _columns(table: pa.Table) -> dict:
    return {k: np.array(v) if k == "vector" else np.asarray(v, dtype=object) for k, v in table.to_pydict().items()}


@pytest.mark.parametrize("blocks", ["one block", "tiny blocks"])
def test_near_ties_below_float32_resolution_and_many_blocks(monkeypatch, blocks):
    if blocks == "tiny blocks":
        monkeypatch.setattr(margin_scan, "BLOCK_ELEMENTS", 4)
        monkeypatch.setattr(margin_scan, "QUERY_BLOCK", 2)
    queries, docs = _near_tie_data()
    expected = rd.brute_force(_columns(queries), _columns(docs))
    # q0: d1, d3, d5, d7, d9, the 19 at +k 1.5e-8, the cluster of 30 and the duplicate of d3 are above s+
    assert (expected[0]["rank"], expected[0]["ties"]) == (1 + 5 + 19 + 30 + 1, 0)
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    python = embsql.margins(con, "q", "d").to_dicts()
    assert_rows_equal(python, expected, tol=1e-15)
    for _route, sql_con in connections(queries, docs):
        assert_rows_equal(sql_con.sql("SELECT * FROM emb_margins('q', 'd')").to_arrow_table().to_pylist(), expected,
                          tol=1e-15)


def test_exact_ties_count_against_the_positive():
    """A duplicate of d+ ties it: not top-1, rank 2, ties 1, margin = m = 0, in every route."""
    rng = np.random.default_rng(1)
    docs = rd.unit(rng.normal(size=(6, 8)))
    docs = np.vstack([docs, docs[0] * 3.0])                   # d6 = d0 (scaled; same unit vector)
    queries = rd.unit(docs[[0, 0, 2]] + 0.05 * rng.normal(size=(3, 8)))
    q = pa.table({"qid": [1, 2, 3], "positive": ["d0", "d6", "d2"], "vector": rd.vector_column(queries)})
    d = pa.table({"doc_id": [f"d{k}" for k in range(7)], "group": ["g"] * 7, "vector": rd.vector_column(docs)})
    con = embsql.connect()
    con.register("q", q)
    con.register("d", d)
    rows = embsql.margins(con, "q", "d").to_dicts()
    assert [(r["rank"], r["ties"], r["top1"], r["m"], r["margin"]) for r in rows[:2]] == [(2, 1, False, 0.0, 0.0)] * 2
    assert rows[2]["top1"] and rows[2]["ties"] == 0
    for _route, sql_con in connections(q, d):
        assert_rows_equal(sql_con.sql("SELECT * FROM emb_margins('q', 'd')").to_arrow_table().to_pylist(), rows)


def test_float32_fixed_size_arrays():
    queries, docs = rd.make(6, questions=6, dim=10)
    as_f32 = lambda t: t.set_column(t.column_names.index("vector"), "vector", pa.FixedSizeListArray.from_arrays(
        pa.array(np.array(t.column("vector").to_pylist(), dtype=np.float32).ravel()), 10))
    queries, docs = as_f32(queries), as_f32(docs)
    expected = expected_rows(queries, docs, "corpus", ("m1",))
    con = embsql.connect()
    con.register("q", queries)
    con.register("d", docs)
    assert_rows_equal(embsql.margins(con, "q", "d", model="model").to_dicts(), expected)
    for _route, sql_con in connections(queries, docs):
        got = sql_con.sql("SELECT * FROM emb_margins('q', 'd', model := 'model')").to_arrow_table().to_pylist()
        assert_rows_equal(got, expected)


def _kernel(seed, nq, nd, dim, noise):
    rng = np.random.default_rng(seed)
    docs = rd.unit(rng.normal(size=(nd, dim)))
    positive = rng.integers(0, nd, nq)
    queries = rd.unit(docs[positive] + noise * rng.normal(size=(nq, dim)))
    return queries, positive, docs


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 30), nd=st.integers(2, 40), dim=st.integers(2, 12),
       noise=st.floats(0.01, 3.0))
def test_m_has_the_sign_of_the_margin_and_decides_top1(seed, nq, nd, dim, noise):
    queries, positive, docs = _kernel(seed, nq, nd, dim, noise)
    result = margin_scan.compute(queries, positive, docs)
    assert np.array_equal(np.sign(result.m), np.sign(result.margin))
    assert np.array_equal(result.top1, result.m > 0)
    assert np.array_equal(result.top1, result.rank == 1)
    assert np.all(np.abs(result.m) <= 1)
    assert np.all((result.rank >= 1) & (result.rank <= nd))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra=st.integers(0, 5), lam=st.floats(0.05, 1.0))
def test_m_and_ranks_are_unchanged_by_a_similarity_transform(seed, extra, lam):
    """Rotate into d' >= d dimensions, then the exact lift y = (sqrt(lam) z, sqrt(1 - lam)) (S7):
    unit vectors again, every squared distance times lam.  m and ranks stay; the cosine margin
    is multiplied by lam (cos' = lam cos + 1 - lam)."""
    queries, positive, docs = _kernel(seed, 25, 30, 6, 0.8)
    rng = np.random.default_rng(seed + 1)
    rotation = np.linalg.qr(rng.normal(size=(6 + extra, 6 + extra)))[0][:, :6]
    lift = lambda z: np.hstack([np.sqrt(lam) * z @ rotation.T, np.full((len(z), 1), np.sqrt(1 - lam))])
    before = margin_scan.compute(queries, positive, docs)
    after = margin_scan.compute(lift(queries), positive, lift(docs))
    assert np.array_equal(before.rank, after.rank)
    np.testing.assert_allclose(after.m, before.m, atol=1e-9)
    np.testing.assert_allclose(after.margin, lam * before.margin, atol=1e-12)
    np.testing.assert_allclose(after.d_pos2, lam * before.d_pos2, atol=1e-12)


def test_stock_duckdb_cli_has_emb_margins(tmp_path):
    """S28: the plain-SQL macro from the CLI with no Python, on Parquet files."""
    queries, docs = rd.make(7, questions=3)
    import pyarrow.parquet as pq
    pq.write_table(queries, tmp_path / "q.parquet")
    pq.write_table(docs, tmp_path / "d.parquet")
    cli = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    script = (f".read {sql_entry_file()}\n.mode csv\nSELECT qid, rank, round(m, 12) AS m FROM emb_margins("
              f"'{tmp_path / 'q.parquet'}', '{tmp_path / 'd.parquet'}', model := 'model');\n")
    out = subprocess.run([cli], input=script, capture_output=True, text=True, check=True).stdout.strip().splitlines()
    expected = sorted(rd.brute_force(rd.arrays(queries), rd.arrays(docs)), key=lambda r: r["qid"])
    assert out[0] == "qid,rank,m"
    for line, e in zip(out[1:], expected, strict=True):
        qid, rank, m = line.split(",")
        assert (qid, int(rank)) == (e["qid"], e["rank"]) and float(m) == pytest.approx(e["m"], abs=1e-11)


@pytest.mark.parametrize("dim", [2, 64, 384, 1536])
def test_float32_screen_stays_within_its_error_bound(dim):
    """The float32 screen trusts |s32 - s64| <= screen_error(d) for unit vectors; check it on random
    vectors and on vectors with many cancelling coordinates."""
    rng = np.random.default_rng(dim)
    a = rd.unit(rng.normal(size=(300, dim)))
    b = rd.unit(np.vstack([rng.normal(size=(300, dim)), np.sign(rng.normal(size=(300, dim)))]))
    error = np.abs(a.astype(np.float32) @ b.astype(np.float32).T - a @ b.T).max()
    assert 0 < error <= margin_scan.screen_error(dim)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 25), nd=st.integers(3, 40), dim=st.integers(2, 10),
       groups=st.integers(1, 4), duplicates=st.integers(0, 3), scope=st.sampled_from(["corpus", "group"]))
def test_kernel_equals_brute_force_on_random_data(seed, nq, nd, dim, groups, duplicates, scope):
    """Random corpora with duplicated documents (exact ties), any group sizes, both scopes."""
    rng = np.random.default_rng(seed)
    nd = max(nd, 2 * groups)
    docs = rd.unit(rng.normal(size=(nd, dim)))
    docs[rng.integers(0, nd, duplicates)] = docs[rng.integers(0, nd, duplicates)]
    doc_groups = rng.integers(0, groups, nd)
    if scope == "group":                     # every group needs two documents
        doc_groups[:2 * groups] = np.repeat(np.arange(groups), 2)
    positive = rng.integers(0, nd, nq)
    queries = rd.unit(docs[positive] + rng.uniform(0.05, 2) * rng.normal(size=(nq, dim)))
    result = margin_scan.compute(queries, positive, docs, doc_groups if scope == "group" else None)
    expected = rd.brute_force({"qid": np.arange(nq), "positive": positive.astype(object), "vector": queries},
                              {"doc_id": np.arange(nd).astype(object), "group": doc_groups, "vector": docs}, scope)
    got = [{"qid": i, **{f: getattr(result, f)[i] for f in ("d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties")}}
           for i in range(nq)]
    assert_rows_equal(got, expected)


# ---- many relevant documents (qrels) ----------------------------------------------------------


def _angles(*degrees):
    return [[math.cos(math.radians(a)), math.sin(math.radians(a))] for a in degrees]


HAND_DOCS = pa.table({"doc_id": ["r1", "r2", "n1", "n2"], "vector": _angles(60, 30, 45, 90)})
HAND_QUERIES = pa.table({"qid": ["q1", "q2"], "vector": _angles(0, 50)})
HAND_QRELS = pa.table({"qid": ["q1", "q1", "q2", "q2", "q2"], "doc_id": ["r1", "r2", "r1", "r2", "n2"],
                       "relevance": [1, 2, 1, 2, 0]})


def _chord2(degrees):
    return 2 - 2 * math.cos(math.radians(degrees))


@pytest.mark.parametrize("threshold,expected", [
    # q1 at 0 deg: nearest relevant r2 (30 deg away), nearest non-relevant n1 (45); nothing beats r2
    # q2 at 50 deg: nearest relevant r1 (10 deg), nearest non-relevant n1 (5): rank 2 (n2, judged 0, is not relevant)
    (1, {"q1": (30, 45, 1), "q2": (10, 5, 2)}),
    # relevance >= 2: only r2 is relevant, so r1 becomes a distractor
    # q1: d+ r2 (30), d- n1 (45), rank 1; q2: d+ r2 (20), d- n1 (5), above it n1 and r1 (10): rank 3
    (2, {"q1": (30, 45, 1), "q2": (20, 5, 3)}),
])
def test_hand_worked_many_relevant_documents(threshold, expected):
    con = embsql.connect()
    rows = embsql.margins(con, HAND_QUERIES, HAND_DOCS, qrels=HAND_QRELS, relevance_threshold=threshold).to_dicts()
    for row in rows:
        pos, neg, rank = expected[row["qid"]]
        d_pos2, d_neg2 = _chord2(pos), _chord2(neg)
        assert row["d_pos2"] == pytest.approx(d_pos2, abs=1e-15) and row["d_neg2"] == pytest.approx(d_neg2, abs=1e-15)
        assert row["m"] == pytest.approx((d_neg2 - d_pos2) / (d_neg2 + d_pos2), abs=1e-14)
        assert row["margin"] == pytest.approx(math.cos(math.radians(pos)) - math.cos(math.radians(neg)), abs=1e-15)
        assert (row["rank"], row["top1"], row["ties"]) == (rank, rank == 1, 0)


def test_trec_qrels_file_gives_the_same_rows(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("".join(f"{r['qid']} 0 {r['doc_id']} {r['relevance']}\n" for r in HAND_QRELS.to_pylist()))
    con = embsql.connect()
    assert embsql.margins(con, HAND_QUERIES, HAND_DOCS, qrels=str(path)).to_dicts() == \
        embsql.margins(con, HAND_QUERIES, HAND_DOCS, qrels=HAND_QRELS).to_dicts()


def test_one_relevant_document_each_equals_the_positive_column():
    queries, docs = rd.make(11, topics=4, docs_per_topic=5, questions=8)     # qrels hold for every model
    qrels = pa.table({"qid": queries.column("qid"), "doc_id": queries.column("positive"),
                      "relevance": pa.array([3] * queries.num_rows)})
    con = embsql.connect()
    by_positive = embsql.margins(con, queries, docs, model="model").to_dicts()
    by_qrels = embsql.margins(con, queries.drop(["positive"]), docs, model="model", qrels=qrels).to_dicts()
    assert by_qrels == by_positive
    assert embsql.retrieval_summary(con, queries.drop(["positive"]), docs, model="model", qrels=qrels).to_dicts() == \
        embsql.retrieval_summary(con, queries, docs, model="model").to_dicts()


def _relevant_kernel(seed, nq, nd, dim, per_query):
    rng = np.random.default_rng(seed)
    docs = rd.unit(rng.normal(size=(nd, dim)))
    rq, rdoc = [], []
    for q in range(nq):
        chosen = rng.choice(nd - 1, size=min(per_query, nd - 1), replace=False)
        rq += [q] * len(chosen)
        rdoc += chosen.tolist()
    rq, rdoc = np.array(rq), np.array(rdoc)
    queries = rd.unit(docs[rdoc[np.r_[0, np.flatnonzero(np.diff(rq)) + 1]]] + rng.uniform(0.1, 2)
                      * rng.normal(size=(nq, dim)))
    return queries, rq, rdoc, docs


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 20), nd=st.integers(3, 30), dim=st.integers(2, 10),
       per_query=st.integers(1, 5))
def test_many_relevant_sign_property_and_brute_force(seed, nq, nd, dim, per_query):
    """m > 0 exactly when the nearest relevant document beats every non-relevant one, and every
    figure equals a float64 brute force written here."""
    queries, rq, rdoc, docs = _relevant_kernel(seed, nq, nd, dim, per_query)
    result = margin_scan.compute_relevant(queries, rq, rdoc, docs)
    sims = queries @ docs.T
    tol = margin_scan.tie_tolerance(dim)
    for q in range(nq):
        relevant = np.zeros(nd, bool)
        relevant[rdoc[rq == q]] = True
        best_rel, best_non = sims[q][relevant].max(), sims[q][~relevant].max()
        higher = int(np.sum(sims[q][~relevant] > best_rel + tol))
        ties = int(np.sum(np.abs(sims[q][~relevant] - best_rel) <= tol))
        assert (result.rank[q], result.ties[q]) == (1 + higher + ties, ties)
        assert result.top1[q] == (result.m[q] > 0) == (best_rel > best_non + tol)
        if ties == 0 or higher > 0:
            d_pos2 = np.sum((queries[q] - docs[relevant][np.argmax(sims[q][relevant])]) ** 2)
            d_neg2 = np.sum((queries[q] - docs[~relevant][np.argmax(sims[q][~relevant])]) ** 2)
            assert result.m[q] == pytest.approx((d_neg2 - d_pos2) / (d_neg2 + d_pos2), abs=1e-12)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), extra=st.integers(0, 5), lam=st.floats(0.05, 1.0))
def test_many_relevant_m_is_unchanged_by_a_similarity_transform(seed, extra, lam):
    queries, rq, rdoc, docs = _relevant_kernel(seed, 20, 25, 6, 3)
    rng = np.random.default_rng(seed + 1)
    rotation = np.linalg.qr(rng.normal(size=(6 + extra, 6 + extra)))[0][:, :6]
    lift = lambda z: np.hstack([np.sqrt(lam) * z @ rotation.T, np.full((len(z), 1), np.sqrt(1 - lam))])
    before = margin_scan.compute_relevant(queries, rq, rdoc, docs)
    after = margin_scan.compute_relevant(lift(queries), rq, rdoc, lift(docs))
    assert np.array_equal(before.rank, after.rank)
    np.testing.assert_allclose(after.m, before.m, atol=1e-9)
    np.testing.assert_allclose(after.d_pos2, lam * before.d_pos2, atol=1e-12)


@pytest.mark.parametrize("qrels,kwargs,error,words", [
    ({"qid": ["q1", "q9"], "doc_id": ["r1", "r1"], "relevance": [1, 1]}, {}, embsql.BadLabelError,
     "qid 'q9' is not a qid of the queries"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "zz"], "relevance": [1, 1]}, {}, embsql.BadLabelError,
     "doc_id 'zz' is not a doc_id of the documents"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "r1"], "relevance": [1, -1]}, {}, embsql.InputError,
     "has -1 at row 2; relevance must be a whole number of 0 or more"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "r1"], "relevance": [1, 1.5]}, {}, embsql.InputError,
     "has 1.5 at row 2; relevance must be a whole number of 0 or more"),
    ({"qid": ["q1", "q1", "q2"], "doc_id": ["r1", "r1", "r1"], "relevance": [1, 2, 1]}, {}, embsql.InputError,
     "is judged 2 times"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "r1"], "relevance": [1, 0]}, {}, embsql.DesignError,
     "query 'q2' has no document with relevance >= 1"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "r1"], "relevance": [1, 1]}, {"relevance_threshold": 0},
     embsql.InputError, "relevance_threshold must be a whole number >= 1"),
    ({"qid": ["q1", "q2"], "doc_id": ["r1", "r1"], "relevance": [1, 1]}, {"scope": "group"}, embsql.InputError,
     "qrels work with scope 'corpus'"),
])
def test_bad_qrels_are_named(qrels, kwargs, error, words):
    with pytest.raises(error) as caught:
        embsql.margins(embsql.connect(), HAND_QUERIES, HAND_DOCS, qrels=pa.table(qrels), **kwargs)
    assert words in str(caught.value)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), nq=st.integers(1, 25), nd=st.integers(2, 40), dim=st.integers(2, 10),
       duplicates=st.integers(0, 3))
def test_one_relevant_each_is_the_positive_kernel_exactly(seed, nq, nd, dim, duplicates):
    """compute_relevant with one relevant document per query gives compute's numbers bit for bit,
    exact ties (duplicated documents) included."""
    rng = np.random.default_rng(seed)
    docs = rd.unit(rng.normal(size=(nd, dim)))
    docs[rng.integers(0, nd, duplicates)] = docs[rng.integers(0, nd, duplicates)]
    positive = rng.integers(0, nd, nq)
    queries = rd.unit(docs[positive] + rng.uniform(0.05, 2) * rng.normal(size=(nq, dim)))
    one = margin_scan.compute(queries, positive, docs)
    order = rng.permutation(nq)                      # qrels in any order
    many = margin_scan.compute_relevant(queries, order, positive[order], docs)
    for field in ("d_pos2", "d_neg2", "margin", "m", "top1", "rank", "ties"):
        assert np.array_equal(getattr(one, field), getattr(many, field)), field
