"""Out of core: the streaming statistics on an on-disk table larger than DuckDB's memory limit.

emb_anova, emb_groups and emb_jackknife (SQL) reduce the table to per-group sums without holding
its rows, so under memory_limit = '80MB' they finish on a ~90 MB table and DuckDB spills nothing.
Before the block sums of sql/modules/10_group_sums.sql the same calls spilled about 200 MB here
(twice the table; 5.9 GB for 1M rows x 384 under 1GB), because one aggregate row per (group,
coordinate) pushed DuckDB's hash aggregate out of its in-memory mode.  embsql.anova and
embsql.jackknife stream the table in Arrow batches (made small here, so groups span batches).

80MB is about the smallest limit that works: with 2 threads DuckDB needs 60-80 MB for these plans
whatever the table size (scan buffers and the minimum reservation of each hash aggregate), and
at 40-64 MB it fails with "Out of Memory" before aggregating anything.  So the table is made a
little larger than 80MB rather than the limit smaller.  Every figure is checked against numpy on
the same seeded data.  bench/out_of_core.py runs the full-size case (3 GB, 1GB).
"""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import embsql
import embsql.io.table_stream

pytestmark = pytest.mark.slow   # a ~90 MB table on disk, scanned under an 80 MB memory limit

MEMORY_LIMIT = "80MB"
ROWS, D, GROUPS, MODELS = 32_000, 384, 500, ("m0", "m1")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The table on disk, plus the same rows in numpy: model -> (labels, float32 vectors)."""
    path = tmp_path_factory.mktemp("ooc") / "emb.duckdb"
    rng = np.random.default_rng(7)
    rows = {}
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE emb (model VARCHAR, g INTEGER, v FLOAT[{D}])")
        for model in MODELS:
            labels = rng.integers(0, GROUPS, ROWS).astype(np.int32)
            centres = rng.standard_normal((GROUPS, D)) / np.sqrt(D)
            noise = rng.standard_normal((ROWS, D)) * (1.2 / np.sqrt(D))
            x = (centres[labels] + noise).astype(np.float32)  # what FLOAT[d] stores, and numpy checks
            chunk = pa.table({"model": [model] * ROWS, "g": labels,  # noqa: F841 (DuckDB reads it)
                              "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), D)})
            con.execute("INSERT INTO emb SELECT * FROM chunk")
            rows[model] = (labels, x)
    assert path.stat().st_size > 80 * 2**20, "the table must be larger than the memory limit"
    return path, rows


@pytest.fixture
def profile(tmp_path):
    return tmp_path / "profile.json"


@pytest.fixture
def con(data, tmp_path, profile):
    """A memory-limited connection that may spill to tmp_path, with DuckDB profiling each query."""
    connection = embsql.register(duckdb.connect(config={
        "memory_limit": MEMORY_LIMIT, "threads": 2, "temp_directory": str(tmp_path / "spill")}))
    connection.execute(f"ATTACH '{data[0]}' AS ooc (READ_ONLY)")
    connection.execute("PRAGMA enable_profiling = 'json'")
    connection.execute(f"PRAGMA profiling_output = '{profile}'")
    yield connection
    connection.close()


def spilled(profile) -> int:
    """Bytes DuckDB wrote to its temp directory during the last query."""
    return json.loads(profile.read_text())["system"]["total_bytes_spilled"]


def run(con, profile, query) -> list[dict]:
    cursor = con.execute(query)
    names = [c[0] for c in cursor.description]
    out = [dict(zip(names, row)) for row in cursor.fetchall()]
    assert spilled(profile) == 0, f"{query} spilled {spilled(profile):,} bytes under memory_limit {MEMORY_LIMIT}"
    return out


# ----------------------------------------------------------------------------------------------
# numpy reference, written out from the definitions (SPEC S2-S4, S17)

def reference(labels, x) -> dict:
    unit = x.astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    names = np.unique(labels)
    counts = np.array([np.sum(labels == g) for g in names], dtype=float)
    sums = np.zeros((len(names), D))
    np.add.at(sums, np.searchsorted(names, labels), unit)

    def r2(keep):
        n, s = counts[keep].sum(), sums[keep]
        ss_t = n - s.sum(axis=0) @ s.sum(axis=0) / n
        ss_w = n - np.sum(np.einsum("gk,gk->g", s, s) / counts[keep])
        return (ss_t - ss_w) / ss_t, ss_t, ss_w

    all_groups = np.ones(len(names), bool)
    full, ss_t, ss_w = r2(all_groups)
    theta = np.array([r2(all_groups & (np.arange(len(names)) != i))[0] for i in range(len(names))])
    g = len(names)
    w = 1 - np.einsum("gk,gk->g", sums, sums) / counts ** 2
    return {"n": int(counts.sum()), "groups": g, "ss_t": ss_t, "ss_w": ss_w, "r2": full,
            "f": ((ss_t - ss_w) / (g - 1)) / (ss_w / (counts.sum() - g)),
            "se": np.sqrt((g - 1) / g * np.sum((theta - theta.mean()) ** 2)),
            "per_group": {int(name): (int(c), wg, c / (c - 1) * wg) for name, c, wg in zip(names, counts, w)}}


@pytest.fixture(scope="module")
def expected(data):
    return {model: reference(*data[1][model]) for model in MODELS}


def check_anova(rows, expected):
    assert [r["model"] for r in rows] == list(MODELS)
    for row in rows:
        ref = expected[row["model"]]
        assert (row["n"], row["groups"]) == (ref["n"], ref["groups"])
        for key in ("ss_t", "ss_w", "r2", "f"):
            assert row[key] == pytest.approx(ref[key], rel=1e-9), key
    assert 0.05 < rows[0]["r2"] < 0.9  # a real group structure, not noise


def check_jackknife(rows, expected):
    assert [r["model"] for r in rows] == list(MODELS)
    for row in rows:
        ref = expected[row["model"]]
        assert row["groups"] == ref["groups"]
        assert row["estimate"] == pytest.approx(ref["r2"], rel=1e-9)
        assert row["se"] == pytest.approx(ref["se"], rel=1e-6)


# ----------------------------------------------------------------------------------------------

def test_sql_anova_streams_under_the_memory_limit(con, profile, expected):
    check_anova(run(con, profile, "SELECT * FROM emb_anova('ooc.emb', 'g', 'v', model := 'model')"), expected)


def test_sql_groups_streams_under_the_memory_limit(con, profile, expected):
    rows = run(con, profile, "SELECT * FROM emb_groups('ooc.emb', 'g', 'v', model := 'model')")
    assert len(rows) == len(MODELS) * GROUPS
    for row in rows:
        n_g, w, w_tilde = expected[row["model"]]["per_group"][row["group"]]
        assert row["n_g"] == n_g
        assert row["w"] == pytest.approx(w, rel=1e-9)
        assert row["w_tilde"] == pytest.approx(w_tilde, rel=1e-9)


def test_sql_jackknife_streams_under_the_memory_limit(con, profile, expected):
    check_jackknife(run(con, profile, "SELECT * FROM emb_jackknife('ooc.emb', 'g', 'v', model := 'model')"), expected)


def test_python_anova_and_jackknife_stream_in_batches(con, profile, expected, monkeypatch):
    # 2048-row batches: about 31 per table, so every group's sum is built across many batches
    monkeypatch.setattr(embsql.io.table_stream, "BATCH_ROWS", 2048)
    check_anova(embsql.anova(con, "ooc.emb", group="g", vector="v", model="model").to_dicts(), expected)
    assert spilled(profile) == 0
    check_jackknife(embsql.jackknife(con, "ooc.emb", group="g", vector="v", model="model").to_dicts(), expected)
    assert spilled(profile) == 0
