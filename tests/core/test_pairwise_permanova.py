"""Pairwise PERMANOVA: embsql.pairwise_permanova.

R's pairwiseAdonis cannot be installed here (not on CRAN, no network beyond the package
registries), so the references are: a hand-worked case (F, R² and the exact permutation
distribution of a 2 + 2 design), R's p.adjust on a fixed vector (values pasted from
`Rscript -e 'p.adjust(c(0.01, 0.04, 0.03, 0.2, 0.04), m)'`, R 4.2.2), and per pair a one-factor
embsql.permanova on the two groups' rows, whose own numbers are pinned to vegan elsewhere.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql.core.pairwise_permanova import adjust, pairwise_rows
from embsql.errors import BadLabelError, DesignError, InputError


def table(labels, x, model=None) -> pa.Table:
    columns = {"g": list(labels), "v": pa.array([list(map(float, r)) for r in x], pa.list_(pa.float64()))}
    if model is not None:
        columns["m"] = list(model)
    return pa.table(columns)


def data(seed, sizes, d, shift=0.4):
    rng = np.random.default_rng(seed)
    labels = np.concatenate([[f"g{i:02d}"] * s for i, s in enumerate(sizes)])
    x = rng.normal(size=(len(labels), d))
    x[labels == "g00"] += shift
    return labels, x


@pytest.fixture
def con():
    return embsql.connect()


def test_hand_worked_two_by_two(con):
    """a = {(1,0), (0,1)}, b = {(-1,0), (0,-1)}: s_a = (1,1), s_b = -s_a, so SS_T = 4, SS_W = 1 + 1,
    R² = 1/2, F = (2/1)/(2/2) = 2.  The three splits into 2 + 2 give F = 2, 0, 2: p -> 2/3."""
    con.register("t", table("aabb", [(1, 0), (0, 1), (-1, 0), (0, -1)]))
    row = embsql.pairwise_permanova(con, "t", group="g", vector="v", permutations=9999).to_dicts()[0]
    assert (row["group_a"], row["group_b"], row["items"]) == ("a", "b", 4)
    assert row["r2"] == pytest.approx(0.5, abs=1e-15) and row["f"] == pytest.approx(2.0, abs=1e-14)
    assert abs(row["p_value"] - 2 / 3) <= 4 * np.sqrt(2 / 9 / 9999)     # 4 Monte Carlo SEs
    assert row["p_adjusted"] == row["p_value"]                           # one pair: nothing to adjust


def test_adjustments_match_r_p_adjust():
    p = [0.01, 0.04, 0.03, 0.2, 0.04]
    r = {"holm": [0.05, 0.12, 0.12, 0.2, 0.12], "bh": [0.05, 0.05, 0.05, 0.2, 0.05],
         "bonferroni": [0.05, 0.2, 0.15, 1.0, 0.2], None: p}
    for method, expected in r.items():
        assert adjust(p, method) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize("sizes,d", [((5, 7, 4, 6), 12), ((6, 5, 8), 3)])    # Gram blocks; coordinates (k >= d)
def test_every_pair_is_the_one_factor_permanova_of_its_rows(con, sizes, d):
    labels, x = data(len(sizes), sizes, d)
    con.register("t", table(labels, x))
    rows = embsql.pairwise_permanova(con, "t", group="g", vector="v", permutations=199, seed=9,
                                     p_adjust="bh").to_dicts()
    assert len(rows) == len(sizes) * (len(sizes) - 1) // 2
    for row in rows:
        keep = (labels == row["group_a"]) | (labels == row["group_b"])
        con.register("pair", table(labels[keep], x[keep]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one = embsql.permanova(con, "pair", group="g", vector="v", permutations=199, seed=9).to_dicts()[0]
        assert row["items"] == one["n"]
        assert row["f"] == pytest.approx(one["f"], rel=1e-12) and row["r2"] == pytest.approx(one["r2"], rel=1e-12)
        assert row["p_value"] == one["p_value"]
    assert [r["p_adjusted"] for r in rows] == pytest.approx(adjust([r["p_value"] for r in rows], "bh"))


def test_listed_pairs_models_and_no_permutations(con):
    labels, x = data(3, (5, 5, 5), 4)
    model = ["m1"] * 15
    con.register("t", pa.concat_tables([table(labels, x, model), table(labels, x[::-1], ["m2"] * 15)]))
    rows = embsql.pairwise_permanova(con, "t", group="g", vector="v", model="m", group_pairs=[("g02", "g00")],
                                     permutations=0).to_dicts()
    assert [(r["m"], r["group_a"], r["group_b"], r["p_value"], r["p_adjusted"]) for r in rows] == \
        [("m1", "g02", "g00", None, None), ("m2", "g02", "g00", None, None)]
    keep = (labels == "g00") | (labels == "g02")
    con.register("pair", table(labels[keep], x[keep]))
    assert rows[0]["r2"] == pytest.approx(embsql.anova(con, "pair", group="g", vector="v").to_dicts()[0]["r2"], rel=1e-12)


def test_holm_keeps_the_familywise_rate_under_h0():
    """4 groups of 4 from one population, 6 pairs, Holm at 5%: P(any rejection) <= 0.05.  300 data sets:
    MC SE 0.0126; the bound allows 4 SEs above 0.05 (the true rate is below 0.05)."""
    rng = np.random.default_rng(77)
    labels = np.repeat(["a", "b", "c", "d"], 4)
    runs, any_rejected, raw_rejected = 300, 0, 0
    for _ in range(runs):
        z = rng.normal(size=(16, 3))
        z /= np.linalg.norm(z, axis=1, keepdims=True)
        rows = pairwise_rows(labels, z, permutations=99, seed=int(rng.integers(2**31)))
        any_rejected += min(r["p_adjusted"] for r in rows) <= 0.05
        raw_rejected += rows[0]["p_value"] <= 0.05
    assert any_rejected / runs <= 0.05 + 4 * np.sqrt(0.05 * 0.95 / runs)
    assert abs(raw_rejected / runs - 0.05) <= 4 * np.sqrt(0.05 * 0.95 / runs)   # one pair: at its level


def test_bad_input(con):
    labels, x = data(4, (3, 3), 3)
    con.register("t", table(labels, x))
    call = lambda **kw: embsql.pairwise_permanova(con, "t", group="g", vector="v", **kw)
    with pytest.raises(InputError, match="group 'zz' is not a value of the group column 'g'"):
        call(group_pairs=[("g00", "zz")])
    with pytest.raises(InputError, match="pairs a group with itself"):
        call(group_pairs=[("g00", "g00")])
    with pytest.raises(InputError, match="listed twice"):
        call(group_pairs=[("g00", "g01"), ("g01", "g00")])
    with pytest.raises(InputError, match="p_adjust must be"):
        call(p_adjust="fdr")
    with pytest.raises(InputError, match="group_pairs must be 'all'"):
        call(group_pairs="some")
    con.register("one", table(["a"] * 3, x[:3]))
    with pytest.raises(DesignError, match="1 group"):
        embsql.pairwise_permanova(con, "one", group="g", vector="v")
    con.register("singles", table(["a", "b", "c", "c"], x[:4]))
    with pytest.raises(DesignError, match=r"the pair \('a', 'b'\) has one item in each group"):
        embsql.pairwise_permanova(con, "singles", group="g", vector="v")
    con.register("nulls", table([None] + list(labels[1:]), x))
    with pytest.raises(BadLabelError, match="group column 'g'"):
        embsql.pairwise_permanova(con, "nulls", group="g", vector="v")
