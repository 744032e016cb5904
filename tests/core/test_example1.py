"""The source's worked Example 1 (two groups of two 2-d unit vectors), by every route."""

import pytest

import embsql

EXAMPLE = "SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]), ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)"
# From the source: mu_A = (0.9, 0.3), W_A = 0.10, W~_A = 0.20; ||mu||^2 = 0.45; SS_T = 4 x 0.55 = 2.2.
EXPECTED = {"n": 4, "groups": 2, "ss_t": 2.2, "ss_w": 0.4, "ss_b": 1.8, "r2": 1.8 / 2.2,
            "r2_null": 1 / 3, "f": (1.8 / 1) / (0.4 / 2), "v": 0.55, "mean_resultant_length": 0.45 ** 0.5,
            "w_bar": 0.1}


@pytest.fixture
def example(con):
    con.execute(f"CREATE TABLE ex AS {EXAMPLE}")
    return con


def test_sql_macro_matches_source(example):
    row = example.sql("SELECT * FROM emb_anova('ex', 'g', 'v')").to_arrow_table().to_pylist()
    assert len(row) == 1
    assert list(row[0]) == list(EXPECTED)
    assert row[0] == pytest.approx(EXPECTED, rel=1e-12)
    assert row[0]["r2"] == pytest.approx(0.818, abs=5e-4)


def test_python_route_matches_source(example):
    result = embsql.anova(example, "ex", group="g", vector="v")
    assert result.columns == tuple(EXPECTED)
    assert result.to_dicts()[0] == pytest.approx(EXPECTED, rel=1e-12)


def test_groups_by_both_routes(example):
    expected = [{"n_g": 2, "w": 0.1, "w_tilde": 0.2}, {"n_g": 2, "w": 0.1, "w_tilde": 0.2}]
    from_sql = example.sql("SELECT * FROM emb_groups('ex', 'g', 'v')").to_arrow_table().to_pylist()
    from_python = embsql.groups(example, "ex", group="g", vector="v").to_dicts()
    for rows in (from_sql, from_python):
        assert [r["group"] for r in rows] == ["A", "B"]
        for got, want in zip(rows, expected):
            assert {k: got[k] for k in want} == pytest.approx(want, rel=1e-12)


def test_distance_route_matches_source(example):
    # squared distances: within A and B 0.4; across, from the coordinates
    points = {1: (1.0, 0.0), 2: (0.8, 0.6), 3: (0.0, 1.0), 4: (-0.6, 0.8)}
    rows = [(i, j, ((points[i][0] - points[j][0]) ** 2 + (points[i][1] - points[j][1]) ** 2) ** 0.5)
            for i in points for j in points if i < j]
    example.execute("CREATE TABLE dist(i INT, j INT, d DOUBLE)")
    example.executemany("INSERT INTO dist VALUES (?, ?, ?)", rows)
    example.execute("CREATE TABLE lab AS SELECT * FROM (VALUES (1, 'A'), (2, 'A'), (3, 'B'), (4, 'B')) t(id, g)")
    result = embsql.anova_dist(example, "dist", labels="lab", group="g", item="id").to_dicts()[0]
    assert set(result) == {"n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f"}
    assert result == pytest.approx({k: EXPECTED[k] for k in result}, rel=1e-12)
