"""Sums of squares, R2 and F against R's vegan adonis2 (reference/vegan: script, data, output).

Tolerance 1e-9 relative: both sides compute in double precision from the same CSV numbers.
"""

import json

import numpy as np
import pytest
from helpers import TESTS, vectors_table

import embsql

HERE = TESTS / "reference" / "vegan"
REFERENCE = json.loads((HERE / "reference.json").read_text())
FIELDS = ("ss_t", "ss_w", "ss_b", "r2", "f")


def load(name):
    import csv

    with open(HERE / "data" / f"{name}.csv") as handle:
        rows = list(csv.DictReader(handle))
    coords = [k for k in rows[0] if k not in ("id", "group", "block")]
    return rows, np.array([[float(r[k]) for k in coords] for r in rows])


@pytest.mark.parametrize("name", ["unit_balanced", "unit_unbalanced", "strata"])
def test_vector_route_equals_adonis2(con, name):
    rows, x = load(name)
    con.register("data", vectors_table(x, [r["group"] for r in rows], fixed=True))
    reference = REFERENCE[name if name != "strata" else "strata_unrestricted"]
    from_sql = con.sql("SELECT * FROM emb_anova('data', 'g', 'v')").to_arrow_table().to_pylist()[0]
    from_python = embsql.anova(con, "data", group="g", vector="v").to_dicts()[0]
    for got in (from_sql, from_python):
        assert {k: got[k] for k in FIELDS} == pytest.approx({k: reference[k] for k in FIELDS}, rel=1e-9)
        assert got["n"] == len(rows)
        assert got["groups"] == reference["df_b"] + 1


def test_distance_route_equals_adonis2_bray_curtis(con):
    """A non-Euclidean dissimilarity: vegdist(x, 'bray'), given as an (i, j, d) table."""
    con.execute(f"CREATE TABLE lab AS SELECT * FROM read_csv('{HERE / 'data' / 'bray.csv'}')")
    con.execute(f"CREATE TABLE dist AS SELECT * FROM read_csv('{HERE / 'data' / 'bray_dist.csv'}')")
    got = embsql.anova_dist(con, "dist", labels="lab", group="group", item="id").to_dicts()[0]
    reference = REFERENCE["bray"]
    assert {k: got[k] for k in FIELDS} == pytest.approx({k: reference[k] for k in FIELDS}, rel=1e-9)
    assert (got["n"], got["groups"]) == (15, 3)


def test_distance_route_equals_adonis2_euclidean_unbalanced(con):
    from helpers import distance_table

    rows, x = load("unit_unbalanced")
    con.register("dist", distance_table(x))
    con.register("lab", __import__("pyarrow").table({"id": np.arange(len(rows)), "g": [r["group"] for r in rows]}))
    got = embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").to_dicts()[0]
    reference = REFERENCE["unit_unbalanced"]
    assert {k: got[k] for k in FIELDS} == pytest.approx({k: reference[k] for k in FIELDS}, rel=1e-9)
