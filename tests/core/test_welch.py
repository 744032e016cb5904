"""PERMANOVA with the Welch-type statistic W*_d (embsql.permanova_welch, emb_permanova_welch in SQL).

Pinned to the published formulas (Hamidi et al. 2019 eq. 4; Alekseyenko 2016's Tw^2 for two
groups) as written out in R on the coordinates (tests/reference/vegan/betadisper_adjusted.R; no
R implementation of W*_d is packaged in Debian), to a hand-worked case, and by simulation to its
level where pseudo-F fails (unequal spreads, unbalanced), and its p-value from the group-wise wild
bootstrap, by simulation where label permutation fails (a small anisotropic group).
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from helpers import TESTS, sql_error, sql_rows, vectors_table

import embsql
from embsql.core.permutation import MIN_BOOTSTRAP_GROUP, design, permanova_distances, permanova_vectors, welch_statistic

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

REFERENCE = json.loads((TESTS / "reference" / "vegan" / "betadisper_adjusted.json").read_text())
DATA = TESTS / "reference" / "vegan" / "data"


def load(name):
    import csv
    rows = list(csv.DictReader(open(DATA / f"{name}.csv")))
    x = np.array([[float(r[k]) for k in r if k.startswith("x")] for r in rows])
    return [r["group"] for r in rows], x / np.linalg.norm(x, axis=1, keepdims=True)


def register_dist(con, x, labels, name="dist", lab="lab"):
    i, j = np.triu_indices(len(x), 1)
    d = np.sqrt(((x[i] - x[j]) ** 2).sum(axis=1))
    con.register(name, pa.table({"i": [str(a) for a in i], "j": [str(b) for b in j], "d": d}))
    con.register(lab, pa.table({"id": [str(k) for k in range(len(x))], "g": list(labels)}))


@pytest.mark.parametrize("name", ["unit_balanced", "unit_unbalanced"])
def test_w_d_equals_the_published_formula(con, name):
    """W*_d from Python, SQL (vector route) and emb_permanova_dist (Euclidean distances of the same
    vectors) equals the R transcription of the formula to 1e-9."""
    labels, x = load(name)
    expected = REFERENCE["welch"][name]["w_d"]
    con.register("t", vectors_table(x, labels))
    # groups of 2 to 7: null_method 'permutation' tests every group (the default leaves those under 6 out)
    got_py = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99,
                                    null_method="permutation").to_dicts()[0]
    got_sql = sql_rows(con, "SELECT * FROM emb_permanova_welch('t', 'g', 'v', permutations := 99, "
                            "null_method := 'permutation')")[0]
    register_dist(con, x, labels)
    got_dist = sql_rows(con, "SELECT * FROM emb_permanova_welch_dist('dist', 'lab', 'g', permutations := 99, "
                             "null_method := 'permutation')")[0]
    for got in (got_py, got_sql, got_dist):
        assert got["w_d"] == pytest.approx(expected, rel=1e-9)
    assert got_py["p_value"] == got_sql["p_value"]


def test_two_groups_is_tw2(con):
    """For two groups W*_d is Alekseyenko's Tw^2 (R: both formulas, groups a and b)."""
    labels, x = load("unit_unbalanced")
    keep = np.isin(labels, ["a", "b"])
    reference = REFERENCE["welch"]["two_groups_ab"]
    assert reference["w_d"] == pytest.approx(reference["tw2"], rel=1e-12)
    con.register("t", vectors_table(x[keep], list(np.array(labels)[keep])))
    got = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99, null_method="permutation")
    assert got.to_dicts()[0]["w_d"] == pytest.approx(reference["tw2"], rel=1e-9)


def test_hand_worked_tw2():
    """Points 0, 2 (mean 1, s^2 = 2) and 5, 6, 7 (mean 6, s^2 = 1) on a line:
    Tw^2 = (6 - 1)^2 / (2/2 + 1/3) = 18.75.  Three groups (add 10, 12: mean 11, s^2 = 2), by hand:
    w = (1, 3, 1), W = 5, weighted mean (1 + 18 + 11) / 5 = 6, numerator (25 + 0 + 25) / 2 = 25,
    h = 0.8^2 / 1 + 0.4^2 / 2 + 0.8^2 / 1 = 1.36, W*_d = 25 / (1 + 2/8 * 1.36) = 18.6567..."""
    points = np.array([0, 2, 5, 6, 7, 10, 12.0])
    squared = (points[:, None] - points[None]) ** 2
    two = permanova_distances(squared[:5, :5], design(np.array([0, 0, 1, 1, 1])), permutations=9, seed=1,
                              statistic="welch", null="permutation")
    assert two.statistic == pytest.approx(18.75, rel=1e-12)
    three = permanova_distances(squared, design(np.array([0, 0, 1, 1, 1, 2, 2])), permutations=9, seed=1,
                                statistic="welch", null="permutation")
    assert three.statistic == pytest.approx(25 / (1 + 0.25 * 1.36), rel=1e-12)
    # the closed form itself, from sizes, SS_g and centroid distances
    centroids = np.array([1.0, 6.0, 11.0])
    assert welch_statistic(np.array([2, 3, 2]), np.array([2.0, 2.0, 2.0]), (centroids[:, None] - centroids) ** 2) \
        == pytest.approx(three.statistic, rel=1e-12)


def test_each_statistic_is_its_own_function(con):
    """emb_permanova tests pseudo-F and emb_permanova_welch W*_d: neither takes statistic :=, and each
    row carries only its own statistic beside its p-value."""
    labels, x = load("unit_unbalanced")
    con.register("t", vectors_table(x, labels))
    pseudo_f = sql_rows(con, "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 199)")[0]
    welch = sql_rows(con, "SELECT * FROM emb_permanova_welch('t', 'g', 'v', permutations := 199)")[0]
    assert "f" in pseudo_f and "w_d" not in pseudo_f and "statistic" not in pseudo_f
    assert "w_d" in welch and "f" not in welch and "statistic" not in welch
    for function in ("emb_permanova", "emb_permanova_dist"):
        call = f"SELECT * FROM {function}('t', 'g', 'v', statistic := 'welch')"
        with pytest.raises(embsql.ArgumentError, match=rf"^embsql: \[argument\.unknown\] {function} has no argument "
                                                       rf"statistic :=; it takes: "):
            embsql.run_sql(con, call)


def test_welch_by_and_strata(con):
    """emb_permanova_welch runs per model value and within strata (the same machinery as pseudo-F):
    strata that each hold one group leave nothing to permute, so p = 1."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((24, 4)) + np.repeat(np.eye(4)[:3] * 2, 8, axis=0)
    labels = np.repeat(["a", "b", "c"], 8)
    con.register("t", vectors_table(np.vstack([x, x]), list(labels) * 2, rep=["r1"] * 24 + ["r2"] * 24,
                                    block=list(np.repeat(["s1", "s2", "s3"], 8)) * 2))
    rows = sql_rows(con, "SELECT * FROM emb_permanova_welch('t', 'g', 'v', permutations := 99, "
                         "model := 'rep')")
    assert [r["rep"] for r in rows] == ["r1", "r2"] and rows[0]["w_d"] == pytest.approx(rows[1]["w_d"], rel=1e-12)
    assert rows[0]["p_value"] == 0.01
    blocked = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99, strata="block",
                                     model="rep").to_dicts()
    assert [r["p_value"] for r in blocked] == [1.0, 1.0]


@pytest.mark.slow
def test_welch_holds_its_level_where_pseudo_f_does_not():
    """Equal centres, unequal spreads, unbalanced: 6 items with sd 2 against 40 with sd 1 (d = 8,
    Euclidean distances).  200 data sets x 199 resamples: in 1000 data sets (validation/validity_tests.py)
    pseudo-F rejected 61.4%, W*_d (wild bootstrap, the default here) 5.4%.  Bounds: the W*_d count is Binomial(200, p) with p near
    0.05 (SE 1.5%); [1%, 10%] is more than 3 SE either side; pseudo-F above 35% is 15 SE below its rate."""
    rng = np.random.default_rng(3)
    d = design(np.repeat(["a", "b"], [6, 40]))
    rejected = {"pseudo-f": 0, "welch": 0}
    for rep in range(200):
        x = np.vstack([2 * rng.standard_normal((6, 8)), rng.standard_normal((40, 8))])
        squared = ((x[:, None] - x[None]) ** 2).sum(-1)
        for statistic in rejected:
            rejected[statistic] += permanova_distances(squared, d, permutations=199, seed=rep,
                                                       statistic=statistic).p_value <= 0.05
    assert 0.01 <= rejected["welch"] / 200 <= 0.10, rejected
    assert rejected["pseudo-f"] / 200 > 0.35, rejected


def test_welch_needs_two_items_per_group(con):
    con.register("t", vectors_table(np.eye(5)[[0, 1, 2, 3, 4]] + 0.1, ["a", "a", "b", "b", "c"]))
    with pytest.raises(embsql.DesignError, match="statistic 'welch' needs at least 2 items in every group"):
        embsql.permanova_welch(con, "t", group="g", vector="v", permutations=9)


def anisotropic(rng, n_small=6, n_large=40, rank=2, dim=16, radius=0.5):
    """As validation/validity_tests.py: every item m + r u, u a unit vector orthogonal to m; the small
    group's u in a rank-2 subspace, the large group's in all dim - 1 directions.  Equal centres and
    equal spread (every norm sqrt(1 + r^2)); only the shape differs."""
    def directions(n, k):
        e = np.zeros((n, dim))
        g = rng.standard_normal((n, k))
        e[:, 1:1 + k] = g / np.linalg.norm(g, axis=1, keepdims=True)
        return e
    x = np.vstack([np.eye(dim)[0] + radius * directions(n_small, rank),
                   np.eye(dim)[0] + radius * directions(n_large, dim - 1)])
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.slow
def test_wild_bootstrap_holds_the_level_where_label_permutation_does_not():
    """6 items in a rank-2 subspace against 40 isotropic ones, equal centres and spread: 200 data sets
    x 199 resamples.  In 1000 data sets (validation/validity_tests.py, Table 2) the wild bootstrap rejected
    4.5% (SE 0.7), label permutation of the same W*_d 17.3% (SE 1.2).  Here the counts are
    Binomial(200, p): the bootstrap's bound 10% is 3.7 SE (at p = 0.05, SE 1.5%) above 5%; the
    permutation's bound 12% is 4.5 SE above 5%, so it fails only if permutation were near its level."""
    rng = np.random.default_rng(11)
    d = design(np.repeat(["a", "b"], [6, 40]))
    rejected = {"wild bootstrap": 0, "permutation": 0}
    for rep in range(200):
        z = anisotropic(rng)
        for null in rejected:
            test = permanova_vectors(z, d, permutations=199, seed=rep, statistic="welch", null=null)
            rejected[null] += test.p_value <= 0.05
    assert rejected["wild bootstrap"] / 200 <= 0.10, rejected
    assert rejected["permutation"] / 200 > 0.12, rejected


def test_wild_bootstrap_is_seeded_and_route_free(con):
    """The same seed gives the same p whatever the row order; another seed another draw; on the same
    row order the distance route (Euclidean distances of the same unit vectors, residual inner
    products from the Gower matrix) draws the very same bootstrap statistics, so the same count."""
    rng = np.random.default_rng(2)
    z = anisotropic(rng, 8, 30, rank=3)
    labels = np.repeat(["small", "large"], [8, 30])
    rows = rng.permutation(len(z))
    con.register("t", vectors_table(z, list(labels)))
    con.register("shuffled", vectors_table(z[rows], list(labels[rows])))
    query = "SELECT p_value, null_method, permutations FROM emb_permanova_welch('{}', 'g', 'v', permutations := 499, " \
            "seed := {})"
    first = sql_rows(con, query.format("t", 7))[0]
    assert first == sql_rows(con, query.format("shuffled", 7))[0]
    assert first["null_method"] == "wild bootstrap" and first["permutations"] == 499
    assert sql_rows(con, query.format("t", 8))[0]["p_value"] != first["p_value"]
    # the kernels on the same row order: coordinates and the Gower route draw the same statistics
    d = design(labels)
    squared = ((z[:, None] - z[None]) ** 2).sum(-1)
    vectors = permanova_vectors(z, d, permutations=499, seed=7, statistic="welch")
    distances = permanova_distances(squared, d, permutations=499, seed=7, statistic="welch")
    assert (vectors.null, vectors.exceedances) == (distances.null, distances.exceedances) == ("wild bootstrap",
                                                                                              vectors.exceedances)
    assert vectors.statistic == pytest.approx(distances.statistic, rel=1e-9)
    register_dist(con, z, labels)
    dist = sql_rows(con, "SELECT null_method FROM emb_permanova_welch_dist('dist', 'lab', 'g', permutations := 99, "
                         ")")[0]
    assert dist["null_method"] == "wild bootstrap"
    assert sql_rows(con, "SELECT null_method FROM emb_permanova_welch_dist('dist', 'lab', 'g', permutations := 9, "
                         "null_method := 'permutation')")[0]["null_method"] == "permutation"
    py = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=499, seed=7).to_dicts()[0]
    assert py["p_value"] == first["p_value"] and py["null_method"] == "wild bootstrap"


def test_small_groups_are_left_out_of_the_default_test(con):
    """Below MIN_BOOTSTRAP_GROUP items the bootstrap cannot estimate a group's shape (and label
    permutation is not valid when shapes differ): the default W*_d test leaves such groups out and
    says so (groups_left_out, items_left_out, note), in Python and in SQL; with one group left there is
    no test (p NULL).  pseudo-F is untouched; null_method 'permutation' tests every group."""
    rng = np.random.default_rng(4)
    sizes = [MIN_BOOTSTRAP_GROUP - 1, 12, 9]
    z = anisotropic(rng, sizes[0], sizes[1] + sizes[2], rank=3)
    labels = list(np.repeat(["a", "b", "c"], sizes))
    con.register("t", vectors_table(z, labels))
    con.register("two", vectors_table(z[:sizes[0] + sizes[1]], labels[:sizes[0] + sizes[1]]))
    welch = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99).to_dicts()[0]
    assert (welch["null_method"], welch["groups_left_out"], welch["items_left_out"]) == ("wild bootstrap", 1, sizes[0])
    assert welch["note"].startswith(f"1 group under {MIN_BOOTSTRAP_GROUP} items ({sizes[0]} items) left out")
    con.register("kept", vectors_table(z[sizes[0]:], labels[sizes[0]:]))     # the same test without group a
    kept = embsql.permanova_welch(con, "kept", group="g", vector="v", permutations=99).to_dicts()[0]
    assert (welch["w_d"], welch["p_value"]) == (kept["w_d"], kept["p_value"]) and kept["note"] is None
    sql = sql_rows(con, "SELECT p_value, groups_left_out, items_left_out, note FROM emb_permanova_welch('t', 'g', 'v', "
                        "permutations := 99)")[0]
    assert sql == {k: welch[k] for k in sql}
    none = embsql.permanova_welch(con, "two", group="g", vector="v", permutations=99).to_dicts()[0]
    assert none["p_value"] is None and none["w_d"] is None and "fewer than two groups are left" in none["note"]
    pseudo = embsql.permanova(con, "t", group="g", vector="v", permutations=99, check_dispersion=False)
    assert pseudo.n == sum(sizes) and pseudo.groups == 3       # pseudo-F tests every group
    every = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99,
                                   null_method="permutation").to_dicts()[0]
    assert every["null_method"] == "permutation" and every["groups_left_out"] == 0
    forced = embsql.permanova_welch(con, "t", group="g", vector="v", permutations=99,
                                    null_method="wild bootstrap").to_dicts()[0]
    assert forced["null_method"] == "wild bootstrap" and forced["groups_left_out"] == 0


def test_null_method_arguments(con):
    """null_method 'wild bootstrap' is for W*_d only; a bad value is an error naming the argument."""
    rng = np.random.default_rng(4)
    con.register("t", vectors_table(anisotropic(rng, 8, 12, rank=3), list(np.repeat(["a", "b"], [8, 12]))))
    sql = "SELECT null_method FROM emb_permanova_welch('t', 'g', 'v', permutations := 99{})"
    assert sql_rows(con, sql.format(""))[0]["null_method"] == "wild bootstrap"
    assert sql_rows(con, sql.format(", null_method := 'permutation'"))[0]["null_method"] == "permutation"
    with pytest.raises(TypeError, match=r"^permanova\(\) got an unexpected keyword argument 'null_method'$"):
        embsql.permanova(con, "t", group="g", vector="v", permutations=9, null_method="wild bootstrap")  # type: ignore[call-arg]
    message = "null_method must be 'auto', 'permutation' or 'wild bootstrap', not {}"
    with pytest.raises(embsql.InputError, match=f"^{message.format(repr('x'))}$"):
        embsql.permanova_welch(con, "t", group="g", vector="v", permutations=9, null_method="x")
    for value, shown in (("'x'", "'x'"), ("NULL", "NULL")):
        assert sql_error(con, sql.format(f", null_method := {value}")) == \
            "embsql: [argument.null_method] " + message.format(shown)


def test_default_welch_holds_its_level_with_a_small_group():
    """A rank-2 group of 4 beside isotropic groups of 10 and 20 (equal centres and spread): the old
    default (labels permuted, every group) rejects about 20% of such data sets at 5%; the default now
    leaves the group of 4 out and bootstraps the rest.  200 data sets x 199 samples: the count is
    Binomial(200, p); 11% is 4 SE (1.5% at p = 0.05) above 5% and 5 SE below 20%; 1% is 2.7 SE
    below 5% (the bootstrap may be conservative, not dead).  The old default is checked to fail here."""
    rng = np.random.default_rng(21)
    d = design(np.repeat(["a", "b", "c"], (4, 10, 20)))
    rejected = {"auto": 0, "permutation": 0}
    for rep in range(200):
        z = anisotropic(rng, 4, 30, rank=2)
        for null in rejected:
            rejected[null] += permanova_vectors(z, d, permutations=199, seed=rep, statistic="welch",
                                                null=null).p_value <= 0.05
    assert 0.01 <= rejected["auto"] / 200 <= 0.11, rejected
    assert rejected["permutation"] / 200 > 0.12, rejected
