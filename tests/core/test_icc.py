"""emb_icc: ICC(1), one-way random effects (SPEC S15), on scalar values and (trace) on vectors.

Scalar values are checked against pingouin (reference/pingouin: script, data, output) and a
hand-worked unbalanced example; the trace version against emb_anova's own sums of squares and
an independent numpy computation.
"""

import json
import math
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import duckdb
import helpers
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from helpers import TESTS, vectors_table

from embsql.core.input_output import scalar_icc
from embsql.errors import VECTOR_KINDS
from embsql.io.resources import sql_entry_file

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

PINGOUIN = TESTS / "reference" / "pingouin"
REFERENCE = json.loads((PINGOUIN / "reference.json").read_text())
COLUMNS = ["icc", "n0", "ms_b", "ms_w", "f", "groups", "n", "kind"]


def icc_rows(con, query):
    return con.sql(query).to_arrow_table().to_pylist()


def sql_error(con, query):
    return helpers.sql_error(con, query, prefixed=False)


def duckdb_cli() -> str:
    found = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    assert Path(found).exists(), "the duckdb CLI (pip package duckdb-cli, in the test extra) is missing"
    return found


def run_cli(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([duckdb_cli()], input=f".read {sql_entry_file()}\n.mode csv\n{script}",
                          capture_output=True, text=True)


# ---- a hand-worked unbalanced example -----------------------------------------------------
#
#   group A: 1, 3          n_A = 2, mean 2,  squared deviations 1 + 1         = 2
#   group B: 2, 4, 6       n_B = 3, mean 4,  squared deviations 4 + 0 + 4     = 8
#   group C: 5, 6, 7, 10   n_C = 4, mean 7,  squared deviations 4 + 1 + 0 + 9 = 14
#   n = 9, G = 3, grand mean = 44/9
#   SS_W = 2 + 8 + 14 = 24
#   SS_B = sum_g n_g mean_g^2 - n mean^2 = 2*4 + 3*16 + 4*49 - 44^2/9 = 252 - 1936/9 = 332/9
#   (check: SS_T = sum x^2 - n mean^2 = 276 - 1936/9 = 548/9 = SS_B + SS_W)
#   MS_B = (332/9)/2 = 166/9,  MS_W = 24/6 = 4
#   n0 = (n - sum_g n_g^2 / n)/(G - 1) = (9 - 29/9)/2 = 26/9      (not 3 = n/G: unbalanced)
#   ICC = (MS_B - MS_W)/(MS_B + (n0 - 1) MS_W) = (130/9)/(166/9 + 68/9) = 130/234 = 5/9
#   F = MS_B/MS_W = 83/18

HAND = {"A": [1, 3], "B": [2, 4, 6], "C": [5, 6, 7, 10]}
HAND_EXPECTED = {"icc": Fraction(5, 9), "n0": Fraction(26, 9), "ms_b": Fraction(166, 9), "ms_w": Fraction(4),
                 "f": Fraction(83, 18), "groups": 3, "n": 9, "kind": "scalar"}


def hand_table(dtype=pa.int64()):
    groups = [g for g, values in HAND.items() for _ in values]
    values = [v for vs in HAND.values() for v in vs]
    return pa.table({"g": groups, "x": pa.array(values, type=dtype)})


def test_hand_worked_example_fractions():
    """The comments above, recomputed with exact fractions from the formulas of SPEC S15."""
    sizes = {g: len(v) for g, v in HAND.items()}
    n, groups = sum(sizes.values()), len(sizes)
    means = {g: Fraction(sum(v), len(v)) for g, v in HAND.items()}
    grand = Fraction(sum(sum(v) for v in HAND.values()), n)
    ss_w = sum((x - means[g]) ** 2 for g, v in HAND.items() for x in v)
    ss_b = sum(sizes[g] * (means[g] - grand) ** 2 for g in HAND)
    assert (ss_w, ss_b) == (24, Fraction(332, 9))
    ms_b, ms_w = ss_b / (groups - 1), ss_w / (n - groups)
    n0 = (n - Fraction(sum(s * s for s in sizes.values()), n)) / (groups - 1)
    icc = (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)
    assert {"icc": icc, "n0": n0, "ms_b": ms_b, "ms_w": ms_w, "f": ms_b / ms_w} == \
        {k: HAND_EXPECTED[k] for k in ("icc", "n0", "ms_b", "ms_w", "f")}


@pytest.mark.parametrize("dtype", [pa.int64(), pa.int8(), pa.uint32(), pa.float32(), pa.float64(),
                                   pa.decimal128(6, 2)])
def test_hand_worked_unbalanced_example(con, dtype):
    con.register("t", hand_table(dtype))
    rows = icc_rows(con, "SELECT * FROM emb_icc('t', 'g', 'x')")
    assert len(rows) == 1 and list(rows[0]) == COLUMNS
    row = rows[0]
    assert (row.pop("groups"), row.pop("n"), row.pop("kind")) == (3, 9, "scalar")
    expected = {k: float(HAND_EXPECTED[k]) for k in row}
    assert row == pytest.approx(expected, rel=1e-12, abs=1e-12)


def exact_icc(values, labels) -> dict:
    """ICC(1) and F of integer values in exact fractions (SPEC S15's formulas)."""
    groups: dict = {}
    for g, x in zip(labels, values):
        groups.setdefault(g, []).append(Fraction(int(x)))
    n, count = len(values), len(groups)
    grand = sum(sum(v) for v in groups.values()) / n
    means = {g: sum(v) / len(v) for g, v in groups.items()}
    ss_w = sum((x - means[g]) ** 2 for g, v in groups.items() for x in v)
    ss_b = sum(len(v) * (means[g] - grand) ** 2 for g, v in groups.items())
    ms_b, ms_w = ss_b / (count - 1), ss_w / (n - count)
    n0 = (n - Fraction(sum(len(v) ** 2 for v in groups.values()), n)) / (count - 1)
    return {"icc": float((ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)), "f": float(ms_b / ms_w) if ms_w else math.inf}


# unbalanced groups 10 apart, the items within 1 or 2 of their group's centre: ICC 0.994, F 550
LARGE_LABELS = [g for g, size in enumerate([3, 4, 2, 5, 3]) for _ in range(size)]
LARGE_OFFSETS = [10 * g + d for g, d in zip(LARGE_LABELS, [0, 1, -1, 2, 0, 1, -1, 0, 1, -2, 1, 0, 2, -1, 0, 1, 1])]


@pytest.mark.parametrize("shift", [0, 10**15, 10**15 + 7, -10**15, 2**53 - 100])
def test_scalar_icc_of_bigints_near_1e15_equals_the_values_shifted_to_0(con, shift):
    """Exact BIGINTs near 1e15 (a DOUBLE's spacing there is 1/8; near 2^53 it is 1 and 2): centred
    before summing, they give the ICC and F of the same data near 0, the exact fractions' figures
    (they gave ICC 1.0 and F inf)."""
    want = exact_icc(LARGE_OFFSETS, LARGE_LABELS)
    assert 0.99 < want["icc"] < 1 and 500 < want["f"] < 600
    con.register("t", pa.table({"g": LARGE_LABELS, "x": pa.array([shift + v for v in LARGE_OFFSETS], pa.int64())}))
    row = icc_rows(con, "SELECT icc, f FROM emb_icc('t', 'g', 'x')")[0]
    assert row == pytest.approx(want, rel=1e-12)
    # two models at different magnitudes in one call
    con.register("m", pa.table({"model": ["near0"] * 17 + ["large"] * 17, "g": LARGE_LABELS * 2,
                                "x": pa.array(LARGE_OFFSETS + [shift + v for v in LARGE_OFFSETS], pa.int64())}))
    rows = icc_rows(con, "SELECT model, icc, f FROM emb_icc('m', 'g', 'x', model := 'model')")
    assert {r.pop("model"): r for r in rows} == {"large": pytest.approx(want, rel=1e-12),
                                                "near0": pytest.approx(want, rel=1e-12)}


def test_balanced_n0_is_the_group_size_and_rows_order_does_not_matter(con):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 4)) + rng.normal(size=(6, 1)) * 2
    groups = np.repeat(np.arange(6), 4)
    order = rng.permutation(24)
    con.register("t", pa.table({"g": groups[order], "x": x.ravel()[order]}))
    row = icc_rows(con, "SELECT * FROM emb_icc('t', 'g', 'x')")[0]
    assert row["n0"] == pytest.approx(4.0, rel=1e-15)
    # direct one-way ANOVA with numpy
    means = x.mean(axis=1)
    ms_b = 4 * ((means - x.mean()) ** 2).sum() / 5
    ms_w = ((x - means[:, None]) ** 2).sum() / 18
    assert row["icc"] == pytest.approx((ms_b - ms_w) / (ms_b + 3 * ms_w), rel=1e-12)
    assert (row["ms_b"], row["ms_w"]) == pytest.approx((ms_b, ms_w), rel=1e-12)


# ---- pingouin ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,value_type", [("wine", "BIGINT"), ("wine", "DOUBLE"), ("correct01", "BOOLEAN"),
                                             ("correct01", "INTEGER")])
def test_equals_pingouin_icc1(con, name, value_type):
    """Balanced data: ICC(1) equals pingouin's ICC(1,1); a 0/1 column may be BOOLEAN."""
    reference = REFERENCE[name]
    csv = PINGOUIN / "data" / ("icc_wine.csv" if name == "wine" else "correct01.csv")
    con.execute(f"CREATE OR REPLACE TABLE data AS SELECT \"{reference['groups_col']}\" AS g, "
                f"\"{reference['value_col']}\"::{value_type} AS x FROM read_csv('{csv}')")
    assert con.sql("SELECT typeof(x) FROM data LIMIT 1").fetchall() == [(value_type,)]
    row = icc_rows(con, "SELECT * FROM emb_icc('data', 'g', 'x')")[0]
    assert row["icc"] == pytest.approx(reference["icc"], rel=1e-12)
    assert row["f"] == pytest.approx(reference["f"], rel=1e-12)
    assert row["ms_b"] == pytest.approx(reference["ms_b"], rel=1e-12)
    assert row["ms_w"] == pytest.approx(reference["ms_w"], rel=1e-12)
    assert (row["groups"] - 1, row["n"] - row["groups"]) == (reference["df1"], reference["df2"])
    assert row["n0"] == pytest.approx(reference["k"], rel=1e-15)
    assert row["kind"] == "scalar"


@pytest.mark.parametrize("name", ["wine", "correct01"])
def test_python_scalar_icc_equals_pingouin_icc1(name):
    """The kernel the retrieval pairing uses (no SQL): pingouin's ICC(1,1) and mean squares."""
    reference = REFERENCE[name]
    csv = PINGOUIN / "data" / ("icc_wine.csv" if name == "wine" else "correct01.csv")
    table = pa_csv.read_csv(csv).to_pydict()
    labels, values = table[reference["groups_col"]], np.asarray(table[reference["value_col"]], dtype=float)
    codes = np.unique(np.asarray(labels), return_inverse=True)[1]
    out = scalar_icc(codes, values)
    groups, n = int(codes.max()) + 1, len(values)
    assert out["icc"] == pytest.approx(reference["icc"], rel=1e-12)
    assert out["ss_b"] / (groups - 1) == pytest.approx(reference["ms_b"], rel=1e-12)
    assert out["ss_w"] / (n - groups) == pytest.approx(reference["ms_w"], rel=1e-12)


def test_python_scalar_icc_on_the_hand_worked_unbalanced_example():
    labels = [g for g, values in HAND.items() for _ in values]
    values = np.array([v for vs in HAND.values() for v in vs], dtype=float)
    out = scalar_icc(np.unique(labels, return_inverse=True)[1], values)
    assert out == pytest.approx({"icc": float(HAND_EXPECTED["icc"]), "ss_b": 332 / 9, "ss_w": 24.0}, rel=1e-13)


def test_pingouin_reference_values_are_the_documented_ones():
    """Guards reference.json against silent regeneration: pingouin's own docstring shows 0.728 / 11.680."""
    assert REFERENCE["versions"]["pingouin"] == "0.7.0"
    assert round(REFERENCE["wine"]["icc"], 3) == 0.728 and round(REFERENCE["wine"]["f"], 3) == 11.680


def test_by_gives_one_row_per_value_with_the_column_first(con):
    wine = PINGOUIN / "data" / "icc_wine.csv"
    binary = PINGOUIN / "data" / "correct01.csv"
    con.execute(f"CREATE TABLE both_sets AS "
                f"SELECT 'wine' AS dataset, Wine::VARCHAR AS g, Scores::DOUBLE AS x FROM read_csv('{wine}') "
                f"UNION ALL SELECT 'correct01', item, correct FROM read_csv('{binary}')")
    table = con.sql("SELECT * FROM emb_icc('both_sets', 'g', 'x', model := 'dataset')").to_arrow_table()
    assert table.column_names == ["dataset"] + COLUMNS
    rows = table.to_pylist()
    assert [r["dataset"] for r in rows] == ["correct01", "wine"]
    for row in rows:
        assert row["icc"] == pytest.approx(REFERENCE[row["dataset"]]["icc"], rel=1e-12)


# ---- the trace version on vectors ----------------------------------------------------------

def unit_data(seed=0, sizes=(3, 5, 2, 6), d=5):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(sizes), d))
    x = np.vstack([c + 0.8 * rng.normal(size=(s, d)) for c, s in zip(centres, sizes)])
    labels = [f"g{i}" for i, s in enumerate(sizes) for _ in range(s)]
    return x, labels


def numpy_trace_icc(x, labels):
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    labels = np.asarray(labels)
    groups = sorted(set(labels))
    n, g = len(u), len(groups)
    sizes = np.array([(labels == k).sum() for k in groups])
    means = np.array([u[labels == k].mean(axis=0) for k in groups])
    ss_w = sum(((u[labels == k] - m) ** 2).sum() for k, m in zip(groups, means))
    ss_b = (sizes[:, None] * (means - u.mean(axis=0)) ** 2).sum()
    ms_b, ms_w = ss_b / (g - 1), ss_w / (n - g)
    n0 = (n - (sizes ** 2).sum() / n) / (g - 1)
    return {"icc": (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w), "n0": n0, "ms_b": ms_b, "ms_w": ms_w,
            "f": ms_b / ms_w, "groups": g, "n": n, "kind": "trace"}


def numpy_scalar_icc(values, labels):
    values, labels = np.asarray(values, dtype=float), np.asarray(labels)
    groups = sorted(set(labels))
    n, g = len(values), len(groups)
    sizes = np.array([(labels == k).sum() for k in groups])
    means = np.array([values[labels == k].mean() for k in groups])
    ms_b = (sizes * (means - values.mean()) ** 2).sum() / (g - 1)
    ms_w = sum(((values[labels == k] - m) ** 2).sum() for k, m in zip(groups, means)) / (n - g)
    n0 = (n - (sizes ** 2).sum() / n) / (g - 1)
    return (ms_b - ms_w) / (ms_b + (n0 - 1) * ms_w)


@pytest.mark.parametrize("fixed,dtype", [(False, pa.float64()), (True, pa.float32()), (True, pa.float64()),
                                         (False, pa.float32())])
def test_trace_icc_equals_numpy_and_uses_emb_anova(con, fixed, dtype):
    x, labels = unit_data()
    con.register("t", vectors_table(x, labels, fixed=fixed, dtype=dtype))
    rows = icc_rows(con, "SELECT * FROM emb_icc('t', 'g', 'v')")
    assert len(rows) == 1 and list(rows[0]) == COLUMNS
    row = rows[0]
    expected = numpy_trace_icc(x, labels)
    assert (row["groups"], row["n"], row["kind"]) == (expected.pop("groups"), expected.pop("n"), expected.pop("kind"))
    tolerance = 1e-12 if dtype == pa.float64() else 1e-6   # float32 input: numpy sees the float64 originals
    assert {k: row[k] for k in expected} == pytest.approx(expected, rel=tolerance)
    # exactly the decomposition emb_anova reports
    anova = icc_rows(con, "SELECT * FROM emb_anova('t', 'g', 'v')")[0]
    assert (row["n"], row["groups"]) == (anova["n"], anova["groups"])
    assert row["ms_b"] == pytest.approx(anova["ss_b"] / (anova["groups"] - 1), rel=1e-14)
    assert row["ms_w"] == pytest.approx(anova["ss_w"] / (anova["n"] - anova["groups"]), rel=1e-14)
    assert row["f"] == pytest.approx(anova["f"], rel=1e-14)


def test_trace_icc_with_by_and_decimal_list_literals(con):
    con.execute("""CREATE TABLE ex AS SELECT * FROM (VALUES
        ('m1', 'A', [1.0, 0.0]), ('m1', 'A', [0.8, 0.6]), ('m1', 'B', [0.0, 1.0]), ('m1', 'B', [-0.6, 0.8]),
        ('m1', 'B', [-0.8, 0.6]),
        ('m2', 'A', [1.0, 0.0, 1.0]), ('m2', 'A', [0.8, 0.6, 1.0]), ('m2', 'B', [0.0, 1.0, 1.0]),
        ('m2', 'B', [-0.6, 0.8, 1.0])) t(model, topic, embedding)""")
    table = con.sql("SELECT * FROM emb_icc('ex', 'topic', 'embedding', model := 'model')").to_arrow_table()
    assert table.column_names == ["model"] + COLUMNS
    rows = table.to_pylist()
    anova = icc_rows(con, "SELECT * FROM emb_anova('ex', 'topic', 'embedding', model := 'model')")
    for row, a in zip(rows, anova):
        assert row["model"] == a["model"] and row["kind"] == "trace"
        assert row["ms_b"] == pytest.approx(a["ss_b"] / (a["groups"] - 1), rel=1e-14)
        assert row["ms_w"] == pytest.approx(a["ss_w"] / (a["n"] - a["groups"]), rel=1e-14)
    # m1: groups of 2 and 3 -> n0 = (5 - 13/5)/1 = 2.4;  m2 (Example 1 lifted): n0 = 2,
    # SS_B = 0.9, SS_W = 0.2 -> MS_B = 0.9, MS_W = 0.1, ICC = 0.8/1.0
    assert rows[0]["n0"] == pytest.approx(2.4, rel=1e-15)
    assert (rows[1]["n0"], rows[1]["icc"], rows[1]["f"]) == pytest.approx((2.0, 0.8, 9.0), rel=1e-12)


# ---- bad input -----------------------------------------------------------------------------

def scalar_table(values, groups=("A", "A", "B", "B")):
    return pa.table({"g": list(groups), "x": pa.array(values, type=pa.float64())})


@pytest.mark.parametrize("bad,word", [(None, "NULL"), (float("nan"), "NaN"), (float("inf"), "infinite"),
                                      (float("-inf"), "infinite")])
def test_bad_scalar_value(con, bad, word):
    con.register("t", scalar_table([1.0, 2.0, bad, 4.0]))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x')") == \
        f"embsql: [{'value.null' if word == 'NULL' else 'value.nonfinite'}] value column \"x\" has 1 {word} value(s) in group 'B'"


def test_null_boolean_value(con):
    con.register("t", pa.table({"g": ["A", "A", "B", "B"], "ok": [True, None, False, True]}))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'ok')") == \
        "embsql: [value.null] value column \"ok\" has 1 NULL value(s) in group 'A'"


@pytest.mark.parametrize("group,value,message", [
    ("nope", "x", 'embsql: [column.missing] group column "nope" not found in t'),
    ("g", "nope", 'embsql: [column.missing] value column "nope" not found in t'),
])
def test_missing_column(con, group, value, message):
    con.register("t", scalar_table([1.0, 2.0, 3.0, 4.0]))
    assert sql_error(con, f"SELECT * FROM emb_icc('t', '{group}', '{value}')") == message


def test_missing_column_of_a_vector_table(con):
    x, labels = unit_data()
    con.register("t", vectors_table(x, labels))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'nope', 'v')") == \
        'embsql: [column.missing] group column "nope" not found in t'


@pytest.mark.parametrize("values,type_name", [(["a", "b", "c", "d"], "VARCHAR"),
                                              ([["a"], ["b"], ["c"], ["d"]], "VARCHAR[]"),
                                              ([[[1.0]], [[2.0]], [[3.0]], [[1.0]]], "DOUBLE[][]")])
def test_value_column_of_wrong_type(con, values, type_name):
    con.register("t", pa.table({"g": ["A", "A", "B", "B"], "x": values}))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x')") == (
        f'embsql: [column.type] value column "x" has type {type_name}: ICC needs a numeric or BOOLEAN column, '
        "or a numeric vector column (FLOAT[], DOUBLE[], FLOAT[d])")


def test_null_group_label(con):
    con.register("t", scalar_table([1.0, 2.0, 3.0, 4.0], groups=("A", None, "B", "B")))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x')") == \
        ('embsql: [label.null] group column "g" has a NULL label; every row needs a label (filter those rows out, '
         'or give them one)')


@pytest.mark.parametrize("kind", ["scalar", "trace"])
def test_one_group(con, kind):
    if kind == "scalar":
        con.register("t", scalar_table([1.0, 2.0, 3.0, 4.0], groups=("A",) * 4))
        column = "x"
    else:
        x, _ = unit_data(sizes=(4,))
        con.register("t", vectors_table(x, ["A"] * 4))
        column = "v"
    assert sql_error(con, f"SELECT * FROM emb_icc('t', 'g', '{column}')") == \
        'embsql: [design.one_group] group column "g" has only one group: ICC needs at least two'


def test_one_group_in_one_by_value(con):
    con.register("t", pa.table({"m": ["m1"] * 4 + ["m2"] * 4, "g": list("AABB") + list("AAAA"),
                                "x": [1.0, 2.0, 3.0, 5.0] * 2}))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x', model := 'm')") == \
        'embsql: [design.one_group] group column "g" has only one group for by value m2: ICC needs at least two'


@pytest.mark.parametrize("kind", ["scalar", "trace"])
def test_every_group_a_singleton(con, kind):
    if kind == "scalar":
        con.register("t", scalar_table([1.0, 2.0, 3.0, 4.0], groups=("A", "B", "C", "D")))
        column = "x"
    else:
        x, _ = unit_data(sizes=(4,))
        con.register("t", vectors_table(x, list("ABCD")))
        column = "v"
    assert sql_error(con, f"SELECT * FROM emb_icc('t', 'g', '{column}')") == (
        'embsql: [design.no_residual_df] every group in "g" has one row (n = G = 4): no within-group degrees of freedom, '
        "so MS_W and ICC are undefined")


@pytest.mark.parametrize("value", [0.1, 7.0, -3.25])
def test_all_values_equal(con, value):
    # 0.1: the group means of equal values need not come out exactly equal in floating point
    con.register("t", scalar_table([value] * 5, groups=("A", "A", "B", "B", "B")))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x')") == \
        'embsql: [design.equal_values] all 5 values in "x" are equal (MS_B + (n0-1) MS_W = 0): ICC is undefined'


def test_all_values_equal_within_one_by_value(con):
    con.register("t", pa.table({"m": ["m1"] * 4 + ["m2"] * 4, "g": list("AABB") * 2,
                                "x": [1.0, 2.0, 3.0, 5.0] + [2.0] * 4}))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'x', model := 'm')") == \
        'embsql: [design.equal_values] all 4 values in "x" are equal (MS_B + (n0-1) MS_W = 0, by value m2): ICC is undefined'


def test_all_vectors_point_the_same_way(con):
    """Trace: all unit vectors equal means SS_T = 0; the shared decomposition refuses it (ICC is not 1)."""
    con.register("t", vectors_table(np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [0.5, 0.0]]), list("AABB")))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'v')") == \
        "embsql: [design.identical] the vectors are identical to within floating-point precision " \
        "(root-mean-square spread 0 < 1.5e-08); " \
        "R² and F are undefined"


@pytest.mark.parametrize("word,bad", [("NULL", None), ("NaN", [float("nan"), 1.0]), ("zero-length", [0.0, 0.0])])
def test_bad_vector(con, word, bad):
    con.register("t", pa.table({"g": list("AABB"), "v": pa.array([[1.0, 0.0], [0.8, 0.6], bad, [-0.6, 0.8]],
                                                                  type=pa.list_(pa.float64()))}))
    assert sql_error(con, "SELECT * FROM emb_icc('t', 'g', 'v')").startswith(
        f"embsql: [{VECTOR_KINDS[word]}] vector column \"v\" has a {word} vector at row 3 (group 'B');")


def test_ms_w_zero_gives_icc_one_and_infinite_f(con):
    con.register("t", scalar_table([1.0, 1.0, 3.0, 3.0]))
    row = icc_rows(con, "SELECT * FROM emb_icc('t', 'g', 'x')")[0]
    assert (row["icc"], row["ms_w"], row["f"]) == (1.0, 0.0, float("inf"))


# ---- the stock DuckDB CLI ------------------------------------------------------------------

def test_stock_cli_scalar_and_trace(tmp_path):
    data = tmp_path / "hand.parquet"
    duckdb.sql(f"COPY (SELECT * FROM (VALUES ('A', 1), ('A', 3), ('B', 2), ('B', 4), ('B', 6), ('C', 5), ('C', 6), "
               f"('C', 7), ('C', 10)) t(g, x)) TO '{data}'")
    out = run_cli(f"SELECT * FROM emb_icc('{data}', 'g', 'x');\n"
                  "CREATE TABLE ex AS SELECT * FROM (VALUES ('m1', 'A', [1.0, 0.0]), ('m1', 'A', [0.8, 0.6]), "
                  "('m1', 'B', [0.0, 1.0]), ('m1', 'B', [-0.6, 0.8]), ('m2', 'A', [1.0, 0.0, 1.0]), "
                  "('m2', 'A', [0.8, 0.6, 1.0]), ('m2', 'B', [0.0, 1.0, 1.0]), ('m2', 'B', [-0.6, 0.8, 1.0])) t(m, g, v);\n"
                  "CREATE VIEW m1 AS SELECT g, v FROM ex WHERE m = 'm1';\n"
                  "SELECT * FROM emb_icc('m1', 'g', 'v');\n"
                  "SELECT * FROM emb_icc('ex', 'g', 'v', model := 'm');\n")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == lines[2] == ",".join(COLUMNS) and lines[4] == ",".join(["m"] + COLUMNS)
    scalar, trace = lines[1].split(","), lines[3].split(",")
    assert [float(v) for v in scalar[:5]] == pytest.approx([5 / 9, 26 / 9, 166 / 9, 4.0, 83 / 18], rel=1e-12)
    assert scalar[5:] == ["3", "9", "scalar"]
    # Example 1: SS_B = 1.8, SS_W = 0.4, G = 2, n = 4: MS_B = 1.8, MS_W = 0.2, ICC = 1.6/2.0
    assert [float(v) for v in trace[:5]] == pytest.approx([0.8, 2.0, 1.8, 0.2, 9.0], rel=1e-12)
    assert trace[5:] == ["2", "4", "trace"]
    # by: m1 as above; m2 is its exact lift with lambda = 1/2 (SS halved, ICC and F unchanged)
    by_m1, by_m2 = lines[5].split(","), lines[6].split(",")
    assert by_m1[0] == "m1" and [float(v) for v in by_m1[1:6]] == pytest.approx([float(v) for v in trace[:5]], rel=1e-12)
    assert by_m2[0] == "m2" and [float(v) for v in by_m2[1:6]] == pytest.approx([0.8, 2.0, 0.9, 0.1, 9.0], rel=1e-12)
    assert by_m2[6:] == ["2", "4", "trace"]


def test_stock_cli_error(tmp_path):
    out = run_cli("CREATE TABLE t AS SELECT * FROM (VALUES ('A', 1.0), ('A', 2.0), ('B', NULL), ('B', 3.0)) t(g, x);\n"
                  "SELECT * FROM emb_icc('t', 'g', 'x');\n")
    assert "embsql: [value.null] value column \"x\" has 1 NULL value(s) in group 'B'" in out.stdout + out.stderr


@pytest.mark.parametrize("name", ["design", "stats", "rows", "meta", "trace", "checked"])
def test_table_named_like_a_step_inside_the_macro(con, name):
    """The macro's own steps must not hide a user table of the same name (plain words are common)."""
    x, labels = unit_data()
    con.register(name, vectors_table(x, labels, s=np.arange(len(labels)) % 3 + np.repeat([0, 5, 1, 9], (3, 5, 2, 6))))
    trace = icc_rows(con, f"SELECT * FROM emb_icc('{name}', 'g', 'v')")[0]
    assert trace["icc"] == pytest.approx(numpy_trace_icc(x, labels)["icc"], rel=1e-12)
    scalar = icc_rows(con, f"SELECT * FROM emb_icc('{name}', 'g', 's')")[0]
    values = con.sql(f"SELECT s FROM {name}").fetchall()
    assert (scalar["kind"], scalar["n"], scalar["groups"]) == ("scalar", 16, 4)
    assert scalar["icc"] == pytest.approx(numpy_scalar_icc([v for (v,) in values], labels), rel=1e-12)
