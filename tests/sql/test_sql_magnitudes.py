"""Vectors of any finite magnitude get their unit vectors on every route (1e-310 x v is subnormal:
its own 1 / ||v|| overflows, so each route scales by the largest |coordinate| first), and the scalar
ICC reads values constant within groups as SS_W = 0 (F = inf) even when they are not exactly
representable (3 x 0.1 against 3 x 0.2)."""

import subprocess

import longdouble
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import vectors_table
from test_icc import duckdb_cli

import embsql
from embsql.io.resources import sql_entry_file

LABELS = list("aabbccdd")


def raw(scale):
    return np.random.default_rng(3).normal(size=(8, 4)) * scale


@pytest.mark.parametrize("scale", [1e-310, 1e-300, 1e-160, 1e160, 1e300])
def test_any_magnitude_on_python_and_sql(scale):
    want = longdouble.decomposition(LABELS, raw(scale))
    con = embsql.connect()
    con.register("t", vectors_table(raw(scale), LABELS))
    python = embsql.anova(con, "t", group="g", vector="v").to_dicts()[0]
    r2, ss_w = con.sql("SELECT r2, ss_w FROM emb_anova('t', 'g', 'v')").fetchall()[0]
    assert python["r2"] == pytest.approx(want["r2"], rel=1e-9)
    assert r2 == pytest.approx(want["r2"], rel=1e-9) and ss_w == pytest.approx(want["ss_w"], rel=1e-9)
    w = dict(con.sql("SELECT \"group\", w FROM emb_groups('t', 'g', 'v')").fetchall())
    assert w == pytest.approx(want["w"], rel=1e-9)


def test_subnormal_vectors_on_the_stock_cli(tmp_path):
    want = longdouble.decomposition(LABELS, raw(1e-310))
    data = tmp_path / "tiny.parquet"
    pq.write_table(vectors_table(raw(1e-310), LABELS), data)
    out = subprocess.run([duckdb_cli()], capture_output=True, text=True, check=True,
                         input=f".read {sql_entry_file()}\n.mode csv\nSELECT r2 FROM emb_anova('{data}', 'g', 'v');\n")
    assert float(out.stdout.split()[-1]) == pytest.approx(want["r2"], rel=1e-9)


def test_subnormal_vectors_in_the_portable_sql():
    """The report's portable aggregate (the route of the other engines), run on DuckDB."""
    con = embsql.connect()
    con.register("t0", vectors_table(raw(1e-310), LABELS))
    con.execute("CREATE TABLE t AS SELECT * FROM t0")
    *_, aggregate = [s for s in embsql.report("t", vector="v", group="g").sql("duckdb", con=con).split(";") if s.strip()]
    rows = con.sql(aggregate).to_arrow_table().to_pylist()
    unit = longdouble.unit(raw(1e-310)).astype(float)
    for row in rows:
        members = unit[[label == row["__emb_g"] for label in LABELS]]
        assert row["__emb_bad"] == 0
        assert [row[f"__emb_s{k}"] for k in range(1, 5)] == pytest.approx(members.sum(axis=0).tolist(), rel=1e-9)


def test_scalar_icc_constant_within_groups_is_infinite():
    con = embsql.connect()
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES ('a', 0.1), ('a', 0.1), ('a', 0.1), "
                "('b', 0.2), ('b', 0.2), ('b', 0.2)) t(g, x)")
    icc, ms_w, f = con.sql("SELECT icc, ms_w, f FROM emb_icc('s', 'g', 'x')").fetchall()[0]
    assert (icc, ms_w, f) == (1.0, 0.0, float("inf"))
    # a real spread, however small against the values, is kept
    con.execute("CREATE TABLE u AS SELECT * FROM (VALUES ('a', 1.0), ('a', 1.0 + 1e-12), ('b', 2.0), ('b', 2.0)) t(g, x)")
    ms_w, f = con.sql("SELECT ms_w, f FROM emb_icc('u', 'g', 'x')").fetchall()[0]
    assert ms_w == pytest.approx(0.25e-24, rel=1e-3) and 1e23 < f < float("inf")
