"""The SQL routes keep their digits on near-duplicate vectors, as the Python face does: a group of one
item has W_g = 0 exactly (and adds exactly 0 to SS_W), tight groups match a long-double reference
to 1e-6 relative on the registered SQL and the stock CLI, the same query gives the same figures
run to run with several threads, and what Python refuses as identical SQL refuses too."""

import subprocess

import duckdb
import longdouble
import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import vectors_table
from test_icc import duckdb_cli

import embsql
from embsql.errors import DesignError
from embsql.io.resources import sql_entry_file

RELATIVE = 1e-6


def tight_groups(spread: float, sizes, *, d: int = 16, seed: int = 0, within: float | None = None):
    """Groups whose centres lie within ``spread`` of one direction and whose items lie within
    ``within`` (default: ``spread``) of their centre: near-duplicates all."""
    rng = np.random.default_rng(seed)
    u = rng.normal(size=d)
    u /= np.linalg.norm(u)
    rows, labels = [], []
    for g, size in enumerate(sizes):
        centre = u + spread * rng.normal(size=d)
        for _ in range(size):
            item = centre + (spread if within is None else within) * rng.normal(size=d)
            rows.append(item * rng.uniform(0.5, 50.0))  # any length: its unit vector is rounded
            labels.append(f"g{g:02d}")
    return labels, np.array(rows)


def connection(labels, rows):
    con = embsql.connect()
    con.register("t", vectors_table(rows, labels))
    return con


def close(got, want):
    return abs(got - want) <= RELATIVE * abs(want)


# two tight groups (spread 1e-7, well above the 1.5e-8 resolution) and ten single-item groups
ISSUE_SIZES = (5, 5) + (1,) * 10


def test_a_single_item_group_has_no_spread():
    labels, rows = tight_groups(1e-7, ISSUE_SIZES)
    con = connection(labels, rows)
    singles = con.sql("SELECT w, w_tilde, resolved FROM emb_groups('t', 'g', 'v') WHERE n_g = 1").fetchall()
    assert len(singles) == 10
    assert all(row == (0.0, None, True) for row in singles), singles


@pytest.mark.parametrize("spread, sizes", [
    (1e-7, ISSUE_SIZES),                       # the issue's case
    (2.5e-8, ISSUE_SIZES),                     # near the resolution
    (3e-8, (3000, 3000) + (1,) * 10),          # big groups: parallel sums
])
def test_tight_groups_match_the_long_double_reference(spread, sizes):
    labels, rows = tight_groups(spread, sizes)
    want = longdouble.decomposition(labels, rows)
    con = connection(labels, rows)
    python = embsql.anova(con, "t", group="g", vector="v").to_dicts()[0]
    for key in ("r2", "f", "ss_w"):
        assert close(python[key], want[key]), (key, python[key], want[key])
    seen = set()
    for threads in (1, 2, 4):
        con.execute(f"SET threads = {threads}")
        for _ in range(3):
            r2, f, ss_w = con.sql("SELECT r2, f, ss_w FROM emb_anova('t', 'g', 'v')").fetchall()[0]
            assert close(r2, want["r2"]) and close(f, want["f"]) and close(ss_w, want["ss_w"]), \
                (threads, r2, f, ss_w, want)
            seen.add(r2)
        groups = dict(con.sql("SELECT \"group\", w FROM emb_groups('t', 'g', 'v')").fetchall())
        assert all(abs(groups[k] - v) <= RELATIVE * v + 1e-300 for k, v in want["w"].items())
    # run to run, with any number of threads, the figures agree far beyond the digits that count
    assert max(seen) - min(seen) <= 1e-9 * abs(want["r2"]), sorted(seen)


def test_trace_icc_and_resampling_inputs_get_no_singleton_noise():
    labels, rows = tight_groups(1e-7, ISSUE_SIZES)
    want = longdouble.decomposition(labels, rows)
    con = connection(labels, rows)
    ms_w, = con.sql("SELECT ms_w FROM emb_icc('t', 'g', 'v')").fetchall()[0]
    assert close(ms_w, want["ss_w"] / (want["n"] - want["groups"]))
    inputs = con.sql("SELECT __emb_n, __emb_ssw FROM emb__group_vectors('t', 'g', 'v', NULL)").fetchall()
    assert [ssw for n, ssw in inputs if n == 1] == [0.0] * 10
    estimate, = con.sql("SELECT estimate FROM emb_jackknife('t', 'g', 'v', statistic := 'r2')").fetchall()[0]
    assert close(estimate, want["r2"])


def test_identical_within_groups_is_refused_like_python():
    # a spread within groups just below the resolution, and 200 single-item groups whose rounding,
    # summed into SS_W, used to lift it above (F ~ 1e15 instead of the refusal)
    labels, rows = tight_groups(1e-7, (5, 5) + (1,) * 200, within=1.75e-8)
    con = connection(labels, rows)
    with pytest.raises(DesignError, match="within each group are identical"):
        embsql.anova(con, "t", group="g", vector="v")
    with pytest.raises(duckdb.Error, match=r"embsql: \[design.identical\] the vectors within each group"):
        con.sql("SELECT f FROM emb_anova('t', 'g', 'v')").fetchall()


def test_stock_cli_matches_the_reference(tmp_path):
    labels, rows = tight_groups(1e-7, ISSUE_SIZES)
    want = longdouble.decomposition(labels, rows)
    data = tmp_path / "tight.parquet"
    pq.write_table(vectors_table(rows, labels), data)
    script = (f".read {sql_entry_file()}\n.mode csv\nSET threads = 2;\n"
              + f"SELECT r2, f, ss_w FROM emb_anova('{data}', 'g', 'v');\n" * 3
              + f"SELECT max(w) FROM emb_groups('{data}', 'g', 'v') WHERE n_g = 1;\n")
    out = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if line and not line[0].isalpha()]
    figures = [tuple(map(float, line.split(","))) for line in lines[:3]]
    for r2, f, ss_w in figures:
        assert close(r2, want["r2"]) and close(f, want["f"]) and close(ss_w, want["ss_w"]), (r2, f, ss_w, want)
    assert float(lines[3]) == 0.0
