"""Power (SPEC S19): emb_normal_quantile (AS241) and the Fisher-z planners emb_power_groups / emb_power_rho."""

import math
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import norm

from embsql.io.resources import sql_entry_file

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module


def sql_error(con, query):
    with pytest.raises(duckdb.Error) as info:
        con.sql(query).fetchall()
    message = str(info.value)
    return message[message.index("embsql:"):] if "embsql:" in message else message


def one(con, query):
    rows = con.sql(query).to_arrow_table().to_pylist()
    assert len(rows) == 1
    return rows[0]


def duckdb_cli() -> str:
    found = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    assert Path(found).exists(), "the duckdb CLI (pip package duckdb-cli, in the test extra) is missing"
    return found


# ---- the normal quantile ---------------------------------------------------------------------

NAMED_P = [1e-300, 1e-100, 1e-20, 1e-12, 1e-9, 1e-6, 1e-4, 0.001, 0.01, 0.025, 0.05, 0.075 - 1e-12, 0.075,
           0.075 + 1e-12, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 0.9, 0.925, 0.95, 0.975, 0.99, 0.999,
           1 - 1e-6, 1 - 1e-9, 1 - 1e-12, 1 - 1e-14, 1 - 2 ** -52, 1 - 2 ** -53]


def test_normal_quantile_matches_scipy(con):
    """Within 1e-9 absolute of scipy's ndtri over (0, 1): the named points (including both
    branch boundaries |p - 0.5| = 0.425 and the r = 5 boundary near p = 1.4e-11), uniform draws,
    and a log-spaced sweep of the lower tail."""
    rng = np.random.default_rng(7)
    r5 = math.exp(-25.0)   # r = sqrt(-ln p) = 5
    p = np.concatenate([NAMED_P, [r5 * 0.999, r5, r5 * 1.001, 1 - r5 * 1.001], rng.random(3000),
                        10.0 ** -np.linspace(0.31, 300, 600)])
    con.register("ps", pa.table({"i": np.arange(len(p)), "p": p}))
    got = np.array([z for (z,) in con.sql("SELECT emb_normal_quantile(p) FROM ps ORDER BY i").fetchall()])
    want = norm.ppf(p)
    assert np.all(np.isfinite(got))
    worst = np.argmax(np.abs(got - want))
    assert abs(got[worst] - want[worst]) <= 1e-9, (p[worst], got[worst], want[worst])
    # AS241 is good to about 1e-16 relative; 1e-13 leaves room for libm differences but still
    # notices a wrong branch (the r <= 5 polynomial used beyond r = 5 is off by ~5e-13 at 1 - 2^-53)
    relative = np.abs(got - want) / np.maximum(np.abs(want), 1e-300)
    relative[p == 0.5] = abs(got[p == 0.5][0])
    worst = np.argmax(relative)
    assert relative[worst] <= 1e-13, (p[worst], got[worst], want[worst])


@pytest.mark.parametrize("p,z", [(0.5, 0.0), (0.975, 1.959963984540054), (0.8, 0.8416212335729143),
                                 (1e-12, -7.034483825301131), (1 - 1e-12, 7.0344869100478356)])
def test_normal_quantile_named_values(con, p, z):
    assert one(con, f"SELECT emb_normal_quantile('{p!r}'::DOUBLE) AS z")["z"] == pytest.approx(z, abs=1e-9)


def test_normal_quantile_is_odd_and_accepts_decimals_and_null(con):
    row = one(con, "SELECT emb_normal_quantile(0.975) AS a, emb_normal_quantile(0.025) AS b, "
                   "emb_normal_quantile(0.975::FLOAT) AS c, emb_normal_quantile(NULL) AS d")
    assert row["a"] == pytest.approx(-row["b"], abs=1e-15)
    assert row["c"] == pytest.approx(norm.ppf(float(np.float32(0.975))), abs=1e-9)
    assert row["d"] is None


@pytest.mark.parametrize("p", ["0", "1", "-0.1", "1.5", "'nan'::DOUBLE", "'inf'::DOUBLE"])
def test_normal_quantile_outside_unit_interval(con, p):
    message = sql_error(con, f"SELECT emb_normal_quantile({p})")
    assert message.startswith("embsql: [argument.range] normal quantile needs 0 < p < 1, got p = "), message
    shown = one(con, f"SELECT ({p})::VARCHAR AS s")["s"]
    assert message == f"embsql: [argument.range] normal quantile needs 0 < p < 1, got p = {shown}"


# ---- groups needed / detectable rho ---------------------------------------------------------

def groups_needed(rho, alpha=0.05, power=0.8):
    return ((norm.ppf(1 - alpha / 2) + norm.ppf(power)) / math.atanh(rho)) ** 2 + 3


def test_power_groups_source_values(con):
    """S19: rho = 0.5 -> 29.01 (planner: 30); rho = 0.3 -> 84.93 (85)."""
    half = con.sql("SELECT * FROM emb_power_groups(0.5)").to_arrow_table()
    assert half.column_names == ["groups_exact", "groups", "rho", "alpha", "power"]
    half = half.to_pylist()[0]
    assert round(half["groups_exact"], 2) == 29.01 and half["groups"] == 30
    assert (half["rho"], half["alpha"], half["power"]) == (0.5, 0.05, 0.8)
    assert half["groups_exact"] == pytest.approx(groups_needed(0.5), rel=1e-12)
    third = one(con, "SELECT * FROM emb_power_groups(0.3)")
    assert round(third["groups_exact"], 2) == 84.93 and third["groups"] == 85
    assert third["groups_exact"] == pytest.approx(groups_needed(0.3), rel=1e-12)


@pytest.mark.parametrize("call,alpha,power", [
    ("emb_power_groups(0.5, power := 0.9)", 0.05, 0.9),
    ("emb_power_groups(0.5, alpha := 0.01)", 0.01, 0.8),
    ("emb_power_groups(0.5, alpha := 0.01, power := 0.9)", 0.01, 0.9),
    ("emb_power_groups(0.5, power := 0.9, alpha := 0.01)", 0.01, 0.9),
    ("emb_power_groups(rho := 0.5, power := 0.95)", 0.05, 0.95),
])
def test_power_groups_named_arguments(con, call, alpha, power):
    row = one(con, f"SELECT * FROM {call}")
    assert (row["alpha"], row["power"]) == (alpha, power)
    assert row["groups_exact"] == pytest.approx(groups_needed(0.5, alpha, power), rel=1e-12)
    assert row["groups"] == math.ceil(row["groups_exact"])
    assert row["groups_exact"] > groups_needed(0.5)   # stricter alpha or more power needs more groups


def test_power_rho_source_value_and_inverse(con):
    table = con.sql("SELECT * FROM emb_power_rho(20)").to_arrow_table()
    assert table.column_names == ["rho", "groups", "alpha", "power"]
    row = table.to_pylist()[0]
    assert round(row["rho"], 3) == 0.591 and (row["groups"], row["alpha"], row["power"]) == (20, 0.05, 0.8)
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert row["rho"] == pytest.approx(math.tanh(z / math.sqrt(17)), rel=1e-12)
    # inverse of emb_power_groups: the rounded-up group count detects a slightly smaller rho
    for rho in (0.3, 0.5, 0.7):
        groups = one(con, f"SELECT groups FROM emb_power_groups({rho})")["groups"]
        detectable = one(con, f"SELECT rho FROM emb_power_rho({groups})")["rho"]
        before = one(con, f"SELECT rho FROM emb_power_rho({groups - 1})")["rho"]
        assert before > rho >= detectable


def test_power_rho_named_arguments(con):
    row = one(con, "SELECT * FROM emb_power_rho(40, power := 0.9, alpha := 0.01)")
    z = norm.ppf(0.995) + norm.ppf(0.9)
    assert row["rho"] == pytest.approx(math.tanh(z / math.sqrt(37)), rel=1e-12)
    assert (row["groups"], row["alpha"], row["power"]) == (40, 0.01, 0.9)


@pytest.mark.parametrize("rho", ["0", "1", "-0.5", "1.5", "'nan'::DOUBLE", "NULL"])
def test_power_groups_bad_rho(con, rho):
    shown = one(con, f"SELECT coalesce(({rho})::VARCHAR, 'NULL') AS s")["s"]
    assert sql_error(con, f"SELECT * FROM emb_power_groups({rho})") == \
        f"embsql: [argument.range] rho must be in (0, 1), got rho = {shown}"


@pytest.mark.parametrize("macro", ["emb_power_groups(0.5", "emb_power_rho(20"])
@pytest.mark.parametrize("name,value", [("alpha", "0"), ("alpha", "1"), ("alpha", "1.5"), ("power", "0"),
                                        ("power", "1"), ("power", "-0.2"), ("power", "NULL")])
def test_bad_alpha_or_power(con, macro, name, value):
    shown = "NULL" if value == "NULL" else value
    assert sql_error(con, f"SELECT * FROM {macro}, {name} := {value})") == \
        f"embsql: [argument.range] {name} must be in (0, 1), got {name} = {shown}"


@pytest.mark.parametrize("groups", ["3", "2", "-5", "20.5", "'inf'::DOUBLE", "NULL"])
def test_power_rho_bad_groups(con, groups):
    shown = one(con, f"SELECT coalesce(({groups})::VARCHAR, 'NULL') AS s")["s"]
    assert sql_error(con, f"SELECT * FROM emb_power_rho({groups})") == \
        f"embsql: [argument.range] groups must be a whole number greater than 3, got groups = {shown}"


# ---- the stock DuckDB CLI --------------------------------------------------------------------

def test_stock_cli_power_macros():
    script = (f".read {sql_entry_file()}\n.mode csv\n"
              "SELECT emb_normal_quantile(0.975) AS z;\n"
              "SELECT * FROM emb_power_groups(0.5);\n"
              "SELECT * FROM emb_power_groups(0.5, power := 0.9);\n"
              "SELECT * FROM emb_power_rho(20);\n")
    out = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "z" and float(lines[1]) == pytest.approx(1.959963984540054, abs=1e-12)
    assert lines[2] == lines[4] == "groups_exact,groups,rho,alpha,power"
    exact, groups, *rest = lines[3].split(",")
    assert float(exact) == pytest.approx(groups_needed(0.5), rel=1e-12) and groups == "30"
    assert [float(v) for v in rest] == [0.5, 0.05, 0.8]
    assert float(lines[5].split(",")[0]) == pytest.approx(groups_needed(0.5, power=0.9), rel=1e-12)
    assert lines[6] == "rho,groups,alpha,power"
    assert float(lines[7].split(",")[0]) == pytest.approx(0.5911839833526782, rel=1e-12)


def test_stock_cli_power_error():
    script = f".read {sql_entry_file()}\nSELECT * FROM emb_power_rho(3);\n"
    out = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True)
    assert "embsql: [argument.range] groups must be a whole number greater than 3, got groups = 3" in out.stdout + out.stderr
