"""Permutation tests (SPEC S10, S12-S14): emb_permanova, emb_permanova_dist, emb_dispersion(_groups)
and embsql.permanova / embsql.dispersion, checked against vegan, against exact p-values of
scikit-bio's test matrices, against the uniform law under the null, and between surfaces.

Monte Carlo checks.  A permutation p-value p = (b + 1)/(B + 1) carries its count b of permuted
statistics >= the observed one; b ~ Binomial(B, p_true) with p_true = P(F_perm >= F_obs) under a
uniformly random (within-strata) relabelling -- for vegan (shuffle / how(blocks=)), scikit-bio
and embsql alike.  Every check below is an exact test whose false-failure probability is at most
ALPHA = 1e-6 *whatever p_true is*; no normal approximation (p-values here go down to 1e-4, where
z-bounds of the form z * sqrt(p(1-p)/B) are wrong).  Each one-line derivation is in its helper.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from helpers import TESTS, sql_error, sql_rows, vectors_table

import embsql
from embsql.core.dispersion import bias_factors, centroid_distances
from embsql.core.permutation import Design, canonical_order, design, permanova_vectors, shuffles
from embsql.core.row_tests import ordered
from embsql.io.sources import opened
from embsql.io.table_stream import unit_rows

pytestmark = pytest.mark.shared_connection   # the tests register tables and read: one `con` per module

REFERENCE = TESTS / "reference"
VEGAN = json.loads((REFERENCE / "vegan" / "reference.json").read_text())
SKBIO = json.loads((REFERENCE / "skbio" / "permanova_matrices.json").read_text())
ALPHA = 1e-6
SUMS = ("ss_t", "ss_w", "ss_b", "r2", "f")


# ----------------------------------------------------------------------------------------------
# exact Monte Carlo checks (no scipy: CI does not have it)

def by_route(con, source: str, method: str, *, permutations: int, seed: int, strata: str | None = None):
    """PERMANOVA of the rows embsql.permanova reads (in its canonical order), through one kernel:
    the face picks the route itself (``method`` is not one of its arguments)."""
    with opened(con, source) as table:
        [(_, part)] = unit_rows(con, table, "g", "v", extra=strata)
    rows = ordered(part, "g", strata=strata is not None)
    return permanova_vectors(rows.unit, rows.design, permutations=permutations, seed=seed, method=method)


def exceedances(p_value: float, permutations: int) -> int:
    """b from p = (b + 1)/(B + 1); the p-value must be exactly of that form."""
    b = round(p_value * (permutations + 1)) - 1
    assert p_value == (b + 1) / (permutations + 1), (p_value, permutations)
    return b


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def _log_binomial_pmf(k: int, n: int, p: float) -> float:
    return _log_comb(n, k) + k * math.log(p) + (n - k) * math.log1p(-p)


def binomial_tails(b: int, trials: int, p: float) -> tuple[float, float]:
    """P(X <= b) and P(X >= b) for X ~ Binomial(trials, p), summed in log space."""
    if p <= 0 or p >= 1:
        return (float(b >= trials * p), float(b <= trials * p))
    logs = np.array([_log_binomial_pmf(k, trials, p) for k in range(trials + 1)])
    top = logs.max()
    weights = np.exp(logs - top)
    total = weights.sum()
    return float(weights[:b + 1].sum() / total), float(weights[b:].sum() / total)


def assert_binomial(b: int, trials: int, p: float, alpha: float = ALPHA, what: str = "") -> None:
    """b is a draw from Binomial(trials, p) with p known exactly (an enumerated p-value).

    Two-sided exact test: fail when P(X <= b) or P(X >= b) is below alpha/2; under the model
    the chance of that is <= alpha/2 + alpha/2 = alpha.
    """
    low, high = binomial_tails(b, trials, p)
    assert min(low, high) >= alpha / 2, (
        f"{what}: {b} of {trials} is not a Binomial({trials}, {p:.6g}) count "
        f"(P(X<={b}) = {low:.3g}, P(X>={b}) = {high:.3g})")


def hypergeometric_tails(x: int, population: int, successes: int, draws: int) -> tuple[float, float]:
    """P(X <= x) and P(X >= x) for X ~ Hypergeometric(population, successes, draws), in log space."""
    low, high = max(0, draws - (population - successes)), min(draws, successes)
    support = np.arange(low, high + 1)
    logs = np.array([_log_comb(successes, i) + _log_comb(population - successes, draws - i) for i in support])
    weights = np.exp(logs - logs.max())
    total = weights.sum()
    return float(weights[support <= x].sum() / total), float(weights[support >= x].sum() / total)


def same_p(b1: int, trials1: int, b2: int, trials2: int, alpha: float = ALPHA) -> bool:
    """Could b1 ~ Bin(trials1, p) and b2 ~ Bin(trials2, p) share the same unknown p?

    Conditional exact test (Fisher): given k = b1 + b2, b1 ~ Hypergeometric(trials1 + trials2, k,
    trials1) whatever p is, so rejecting when either tail of that law at b1 is < alpha/2 wrongly
    rejects with probability <= alpha for every p.
    """
    low, high = hypergeometric_tails(b1, trials1 + trials2, b1 + b2, trials1)
    return min(low, high) >= alpha / 2


def dkw_bound(count: int, alpha: float = ALPHA) -> float:
    """Dvoretzky-Kiefer-Wolfowitz with Massart's constant: P(sup|F_N - F| > eps) <= 2 exp(-2 N eps^2).

    Valid for any F (for a discrete F the sup is stochastically smaller), so eps =
    sqrt(ln(2/alpha) / (2N)) is exceeded by chance with probability <= alpha.
    """
    return math.sqrt(math.log(2 / alpha) / (2 * count))


def uniform_distance(p_values, permutations: int) -> float:
    """sup_x |F_N(x) - F(x)| against the law of an exact Monte Carlo p under H0: uniform on
    {1, ..., B+1}/(B+1).  Both CDFs are steps at those points, so the sup is taken there (for
    values off the grid, as in the p/2 sanity checks, this is a lower bound of the sup)."""
    grid = np.arange(1, permutations + 2) / (permutations + 1)
    empirical = np.searchsorted(np.sort(np.asarray(p_values)), grid, side="right") / len(p_values)
    return float(np.max(np.abs(empirical - grid)))


def check_uniform(p_values, permutations: int, alpha: float = ALPHA) -> tuple[bool, str]:
    """DKW on the whole CDF (false failure <= alpha/2) and an exact binomial test of the count of
    p <= 0.05 (P(p <= k/(B+1)) = k/(B+1) exactly; false failure <= alpha/2): in all <= alpha."""
    n = len(p_values)
    distance, bound = uniform_distance(p_values, permutations), dkw_bound(n, alpha / 2)
    k = round(0.05 * (permutations + 1))
    small = int(np.sum(np.asarray(p_values) <= k / (permutations + 1)))
    low, high = binomial_tails(small, n, k / (permutations + 1))
    ok = distance <= bound and min(low, high) >= alpha / 4
    return ok, f"sup|F_N - F| = {distance:.4f} (bound {bound:.4f}); #p<=0.05 = {small} of {n}"


# ----------------------------------------------------------------------------------------------
# brute force, independent of embsql's kernels: F from squared distances by the S5 formulas

def pseudo_f_exact(squared, labels) -> Fraction:
    """F = (SS_B/(G-1)) / (SS_W/(n-G)), SS_T = (1/n) sum_{i<j} d2, SS_W = sum_g (1/n_g) sum_{i<j in g} d2."""
    n = len(labels)
    names = sorted(set(labels))
    ss_t = sum((squared[i][j] for i in range(n) for j in range(i + 1, n)), Fraction(0)) / n
    ss_w = Fraction(0)
    for name in names:
        members = [i for i in range(n) if labels[i] == name]
        ss_w += sum((squared[i][j] for i, j in itertools.combinations(members, 2)), Fraction(0)) / len(members)
    groups = len(names)
    return ((ss_t - ss_w) / (groups - 1)) / (ss_w / (n - groups))


def distinct_orders(items):
    """The distinct orderings of a multiset (each once), without going through all n! orders."""
    if not items:
        yield []
        return
    for first in sorted(set(items)):
        rest = list(items)
        rest.remove(first)
        for tail in distinct_orders(rest):
            yield [first] + tail


def relabellings(labels, strata=None):
    """Every distinct labelling reachable by permuting labels (within strata when given)."""
    if strata is None:
        yield from distinct_orders(list(labels))
        return
    blocks = sorted(set(strata))
    positions = [[i for i, s in enumerate(strata) if s == b] for b in blocks]
    options = [list(distinct_orders([labels[i] for i in where])) for where in positions]
    for combination in itertools.product(*options):
        out = [None] * len(labels)
        for where, assigned in zip(positions, combination):
            for i, label in zip(where, assigned):
                out[i] = label
        yield out


def exact_p(squared, labels, strata=None) -> tuple[Fraction, Fraction]:
    """(F_obs, P(F >= F_obs)) over all distinct relabellings, each equally likely under a uniform
    permutation (every relabelling is reached by prod n_g! permutations within each stratum).
    Also asserts that no F value is within 1e-6 (relative) of F_obs without being equal to it, so
    the sqrt(eps) tie tolerance of vegan/embsql counts exactly the exact ties."""
    f_obs = pseudo_f_exact(squared, labels)
    assert isinstance(f_obs, Fraction)
    values = [pseudo_f_exact(squared, r) for r in relabellings(labels, strata)]
    near = [f for f in values if f != f_obs and abs(f - f_obs) <= Fraction(1, 10**6) * max(1, abs(f_obs))]
    assert not near, "a relabelling's F is too close to F_obs for an unambiguous exact p"
    return f_obs, Fraction(sum(f >= f_obs for f in values), len(values))


# ----------------------------------------------------------------------------------------------
# data

def load_vegan(name):
    with open(REFERENCE / "vegan" / "data" / f"{name}.csv") as handle:
        rows = list(csv.DictReader(handle))
    coords = [k for k in rows[0] if k not in ("id", "group", "block")]
    return rows, np.array([[float(r[k]) for k in coords] for r in rows])


def vegan_table(con, name, table="data"):
    rows, x = load_vegan(name)
    extra = {"block": [r["block"] for r in rows]} if "block" in rows[0] else {}
    con.register(table, vectors_table(x, [r["group"] for r in rows], fixed=True, id=[int(r["id"]) for r in rows],
                                      **extra))
    return rows, x




def unit(x):
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(seed, sizes, d=5, effect=0.5, noise=1.0):
    """Random group centres (scaled by effect) plus noise: a table of unnormalised vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, effect, size=(len(sizes), d))
    labels = np.repeat([f"g{k}" for k in range(len(sizes))], sizes)
    return centres[np.repeat(np.arange(len(sizes)), sizes)] + rng.normal(0.0, noise, size=(sum(sizes), d)), labels


def squared_distances(x):
    diff = x[:, None, :] - x[None, :, :]
    return np.einsum("ijk,ijk->ij", diff, diff)


def register_distances(con, ids, matrix, labels, strata=None, dist="dist", lab="lab"):
    """(i, j, d) for i < j and a labels table (id, g[, block])."""
    i, j = np.triu_indices(len(ids), 1)
    con.register(dist, pa.table({"i": [ids[a] for a in i], "j": [ids[b] for b in j], "d": matrix[i, j]}))
    con.register(lab, pa.table({"id": list(ids), "g": list(labels), **({"block": list(strata)} if strata is not None else {})}))


# ----------------------------------------------------------------------------------------------
# 1. vegan: adonis2 and betadisper

ADONIS = [("unit_balanced", "unit_balanced", None), ("unit_unbalanced", "unit_unbalanced", None),
          ("strata", "strata_unrestricted", None), ("strata", "strata_blocked", "block")]


@pytest.mark.parametrize("data,key,strata", ADONIS, ids=[a[1] for a in ADONIS])
def test_permanova_sums_equal_adonis2(con, data, key, strata):
    """F, R2 and the sums of squares equal adonis2's to 1e-9 (relative), with and without strata."""
    rows, _ = vegan_table(con, data)
    reference = VEGAN[key]
    strata_sql = "NULL" if strata is None else f"'{strata}'"
    got_sql = sql_rows(con, f"SELECT * FROM emb_permanova('data', 'g', 'v', permutations := 99, strata := {strata_sql})")
    got_py = embsql.permanova(con, "data", group="g", vector="v", permutations=99, strata=strata,
                              check_dispersion=False).to_dicts()
    for got in (got_sql, got_py):
        assert len(got) == 1
        assert {k: got[0][k] for k in SUMS} == pytest.approx({k: reference[k] for k in SUMS}, rel=1e-9, abs=0)
        assert (got[0]["n"], got[0]["groups"], got[0]["permutations"]) == (len(rows), reference["df_b"] + 1, 99)


def test_permanova_dist_equals_adonis2_bray_curtis(con):
    """The distance route on vegdist(x, 'bray'): F and R2 to 1e-9, p within Monte Carlo error."""
    con.execute(f"CREATE TABLE lab AS SELECT * FROM read_csv('{REFERENCE / 'vegan' / 'data' / 'bray.csv'}')")
    con.execute(f"CREATE TABLE dist AS SELECT * FROM read_csv('{REFERENCE / 'vegan' / 'data' / 'bray_dist.csv'}')")
    got = sql_rows(con, "SELECT * FROM emb_permanova_dist('dist', 'lab', 'group', permutations := 9999)")[0]
    reference = VEGAN["bray"]
    assert {k: got[k] for k in SUMS} == pytest.approx({k: reference[k] for k in SUMS}, rel=1e-9, abs=0)
    assert got["permutations"] == 9999
    assert same_p(exceedances(got["p_value"], 9999), 9999,
                  exceedances(reference["p_value"], reference["permutations"]), reference["permutations"])


@pytest.mark.parametrize("data,key,strata", ADONIS, ids=[a[1] for a in ADONIS])
def test_permanova_p_agrees_with_adonis2(con, data, key, strata):
    """Our p and adonis2's estimate the same P(F_perm >= F_obs): b ~ Bin(9999, p) and vegan's
    b' ~ Bin(B', p) (B' = 999 or 9999), checked by the exact conditional test of `same_p`
    (false failure <= 1e-6 for any p).  Python and SQL give the identical p (tested below)."""
    vegan_table(con, data)
    reference = VEGAN[key]
    got = embsql.permanova(con, "data", group="g", vector="v", permutations=9999, strata=strata,
                           check_dispersion=False).to_dicts()[0]
    b_ours, b_vegan = exceedances(got["p_value"], 9999), exceedances(reference["p_value"], reference["permutations"])
    assert same_p(b_ours, 9999, b_vegan, reference["permutations"]), (got["p_value"], reference["p_value"])


def test_blocked_and_unrestricted_p_differ_as_in_vegan(con):
    """vegan: blocked p = 0.0001, unrestricted p = 0.031 (9999 permutations each).  Ours agree with
    each (exact conditional test), ours differ from each other (the same test rejects), and the
    check has power: a p-value off by a factor 2 would be rejected."""
    vegan_table(con, "strata")
    p = {s: embsql.permanova(con, "data", group="g", vector="v", permutations=9999, strata=s,
                             check_dispersion=False).to_dicts()[0]
         ["p_value"] for s in (None, "block")}
    b = {s: exceedances(v, 9999) for s, v in p.items()}
    b_vegan = {None: exceedances(VEGAN["strata_unrestricted"]["p_value"], 9999),
               "block": exceedances(VEGAN["strata_blocked"]["p_value"], 9999)}
    assert same_p(b[None], 9999, b_vegan[None], 9999) and same_p(b["block"], 9999, b_vegan["block"], 9999), p
    assert not same_p(b[None], 9999, b["block"], 9999), p
    assert not same_p(b_vegan[None], 9999, b_vegan["block"], 9999)
    # sanity: the check would catch a p-value twice too large or twice too small
    assert not same_p(2 * b[None], 9999, b_vegan[None], 9999)
    assert not same_p(b[None] // 2, 9999, b_vegan[None], 9999)


ADJUSTED = json.loads((REFERENCE / "vegan" / "betadisper_adjusted.json").read_text())
SPREAD = json.loads((REFERENCE / "vegan" / "dispersion_spread.json").read_text())   # the test's F, written out in R


@pytest.mark.parametrize("name", ["unit_balanced", "unit_unbalanced"])
def test_dispersion_equals_betadisper(con, name):
    """betadisper(dist(Z), g, type = 'centroid'): every item's distance to its centroid and the
    group.distances equal ours to 1e-9; with bias.adjust = TRUE on the groups of 4 or more items
    (the ones embsql tests) the adjusted distances equal ours to 1e-9, and F (the spreads' statistic,
    tests/reference/vegan/dispersion_spread.R) equals R's to 1e-9 (Python, emb_dispersion and
    emb_dispersion_groups)."""
    rows, x = vegan_table(con, name)
    reference, adjusted = VEGAN[f"betadisper_{name}"], ADJUSTED[f"betadisper_adjusted_{name}"]
    labels = np.array([r["group"] for r in rows], dtype=object)
    codes = np.unique(labels, return_inverse=True)[1]
    assert centroid_distances(unit(x), codes) == pytest.approx(reference["distances"], rel=1e-9, abs=0)
    kept = np.isin(labels, adjusted["groups"])
    sizes = np.bincount(np.unique(labels[kept], return_inverse=True)[1])
    kept_codes = np.unique(labels[kept], return_inverse=True)[1]
    assert (centroid_distances(unit(x)[kept], kept_codes) * bias_factors(sizes)[kept_codes]
            == pytest.approx(adjusted["distances"], rel=1e-9, abs=0))

    result = embsql.dispersion(con, "data", group="g", vector="v", permutations=99)
    tests, groups = result.test, result.groups
    sql_tests = sql_rows(con, "SELECT * FROM emb_dispersion('data', 'g', 'v', permutations := 99)")
    sql_groups = sql_rows(con, "SELECT * FROM emb_dispersion_groups('data', 'g', 'v', permutations := 99)")
    left_out = sorted(set(labels) - set(adjusted["groups"]))
    for test in (tests.to_dicts()[0], sql_tests[0]):
        assert test["f"] == pytest.approx(SPREAD[name]["f"], rel=1e-9, abs=0)
        assert (test["groups"], test["permutations"]) == (adjusted["df_b"] + 1, 99)
        assert (test["groups_left_out"], test["items_left_out"]) == (len(left_out), int(np.sum(~kept)))
        assert (test["note"] is None) == (not left_out)
    assert tests.to_dicts()[0]["p_value"] == sql_tests[0]["p_value"]
    sizes = {g: sum(r["group"] == g for r in rows) for g in reference["group_distances"]}
    for table in (groups.to_dicts(), sql_groups):
        assert {r["group"]: r["mean_distance"] for r in table} == pytest.approx(reference["group_distances"],
                                                                                rel=1e-9, abs=0)
        assert {r["group"]: r["n_g"] for r in table} == sizes
        assert {r["group"] for r in table if not r["in_test"]} == set(left_out)


@pytest.mark.parametrize("name", ["unit_unbalanced"])
def test_dispersion_p_agrees_with_permutest(con, name):
    """permutest(betadisper(bias.adjust = TRUE)) p (999 permutations) vs ours (9999), exact
    conditional test of same_p.

    Caveat, stated so nobody mistakes it for an identity: vegan permutes the residuals of the
    one-way model on the distances and tests their F; embsql compares the groups' mean squared
    adjusted distances with the variance of unit vectors and permutes aligned vectors (embsql.core.dispersion
    says why), so the two p's estimate different probabilities.  On unit_unbalanced (a clear spread
    difference) both are small and agree within this check's resolution; what pins embsql's p-value is
    its level on simulated data (tests/core/test_dispersion_level.py, validation/dispersion_validity.py).
    """
    vegan_table(con, name)
    reference = ADJUSTED[f"betadisper_adjusted_{name}"]
    got = embsql.dispersion(con, "data", group="g", vector="v", permutations=9999).test.to_dicts()[0]
    assert got["permutations"] == 9999
    b, b_vegan = exceedances(got["p_value"], 9999), exceedances(reference["p_value"], reference["permutations"])
    assert same_p(b, 9999, b_vegan, reference["permutations"]), (got["p_value"], reference["p_value"])


# ----------------------------------------------------------------------------------------------
# 2. scikit-bio's PERMANOVA test matrices: exact p by full enumeration

def skbio_matrix(name):
    case = SKBIO["matrices"][name]
    exact = [[Fraction(s) for s in row] for row in case["distances"]]
    squared = [[d * d for d in row] for row in exact]
    return case, np.array([[float(d) for d in row] for row in exact]), squared


@pytest.mark.parametrize("name", sorted(SKBIO["matrices"]))
def test_skbio_matrix_exact_p(con, name):
    """F equals skbio's; the exact p (every distinct relabelling, rational arithmetic) equals the
    one scikit-bio's own F gives; embsql's Monte Carlo b (9999 permutations, two seeds, SQL and
    the kernel) and skbio's are Binomial(9999, p_exact) draws (exact binomial test, <= 1e-6)."""
    case, matrix, squared = skbio_matrix(name)
    f_exact, p = exact_p(squared, case["grouping"])
    assert float(f_exact) == pytest.approx(case["skbio_permanova"]["statistic"], rel=1e-12)
    assert float(f_exact) == pytest.approx(case["skbio_expected"]["statistic"], rel=1e-6)
    assert p == Fraction(case["skbio_exact_p"]["at_least_observed"], case["skbio_exact_p"]["relabellings"])
    assert_binomial(exceedances(case["skbio_permanova"]["p_value"], 9999), 9999, float(p), what="skbio")

    register_distances(con, case["ids"], matrix, case["grouping"])
    for seed in (42, 7):
        got = sql_rows(con, f"SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 9999, seed := {seed})")[0]
        assert got["f"] == pytest.approx(float(f_exact), rel=1e-12)
        assert got["permutations"] == 9999
        assert_binomial(exceedances(got["p_value"], 9999), 9999, float(p), what=f"emb_permanova_dist seed {seed}")


@pytest.mark.parametrize("seed", [1, 5])
@pytest.mark.parametrize("method", ["pairs", "coordinates"])
def test_exact_ties_from_duplicated_vectors(con, seed, method):
    """8 items = 4 vectors each twice: many relabellings tie exactly with the observed F, but the
    kernels compute them in other summation orders (last-bit differences).  Exact p by
    enumeration (70 relabellings) vs embsql's b (9999 permutations, exact binomial test); a
    count without vegan's sqrt(eps) tolerance falls far outside (0.37 -> 0.32, 0.14 -> 0.07)."""
    z = np.repeat(unit(np.random.default_rng(seed).normal(size=(4, 3))), 2, axis=0)
    labels = list("aabbabab")
    _, p = exact_p([[Fraction(v) for v in row] for row in squared_distances(z)], labels)
    con.register("t", vectors_table(z, labels))
    got = by_route(con, "t", method, permutations=9999, seed=1)
    assert_binomial(exceedances(got.p_value, 9999), 9999, float(p), what=method)


def test_skbio_ties_count_as_exceedances():
    """dm_ties: the exact p is 2/3 only because the swapped labelling of each split has the same F;
    a count that drops exact ties (F computed in another summation order can differ in the last
    bit) would estimate 1/3 and fail assert_binomial."""
    case, matrix, squared = skbio_matrix("ties")
    assert exact_p(squared, case["grouping"])[1] == Fraction(2, 3)
    with pytest.raises(AssertionError):
        assert_binomial(3333, 9999, 2 / 3)


# ----------------------------------------------------------------------------------------------
# 3. the null: p-values uniform

@pytest.mark.slow
def test_null_p_values_are_uniform():
    """1000 data sets, n = 24 in 4 groups of 6, d = 5, iid vectors (labels independent of them),
    99 permutations, a different seed for each.  Given the data, the observed labelling and the
    99 permuted ones are iid uniform relabellings, so b is uniform on {0..99} (ties have
    probability ~1e-11) and p is uniform on {1..100}/100 exactly.  check_uniform: false failure
    <= 1e-6; sanity: p/2 and a one-sided shift fail the same check."""
    labels = np.repeat(np.array(["a", "b", "c", "d"], dtype=object), 6)
    d = design(labels)
    rng = np.random.default_rng(20240601)
    p = np.array([permanova_vectors(unit(rng.normal(size=(24, 5))), d, permutations=99, seed=k).p_value
                  for k in range(1000)])
    ok, message = check_uniform(p, 99)
    assert ok, message
    assert not check_uniform(p / 2, 99)[0]
    assert not check_uniform(np.minimum(1.0, p + 0.1), 99)[0]


@pytest.mark.slow
def test_null_p_values_with_strata_are_uniform_only_when_blocked():
    """Two blocks with a strong block effect, labels unbalanced across blocks (block 1: 8 a, 4 b;
    block 2: 4 a, 8 b), no group effect within blocks.  Vectors are exchangeable within a block,
    so the blocked p is exactly uniform (check_uniform, false failure <= 1e-6); permuting
    across blocks is invalid here and its p-values must fail the same check (power)."""
    labels = np.array(list("aaaaaaaabbbb" + "aaaabbbbbbbb"), dtype=object)
    blocks = np.repeat(np.array(["x", "y"], dtype=object), 12)
    shift = np.where(blocks == "x", 1.5, -1.5)[:, None] * np.array([1.0, 0, 0, 0, 0])
    order = canonical_order(labels, blocks)
    d_blocked, d_free = design(labels[order], blocks[order]), design(labels[order])
    rng = np.random.default_rng(20240602)
    blocked, free = [], []
    for k in range(400):
        z = unit(shift + rng.normal(size=(24, 5)))[order]
        blocked.append(permanova_vectors(z, d_blocked, permutations=99, seed=k).p_value)
        free.append(permanova_vectors(z, d_free, permutations=99, seed=k).p_value)
    ok, message = check_uniform(blocked, 99)
    assert ok, message
    assert not check_uniform(free, 99)[0], check_uniform(free, 99)[1]


@pytest.mark.slow
def test_null_p_values_from_sql_are_uniform(con):
    """The SQL path: 40 null data sets, one emb_permanova call each with its own seed
    (check_uniform, false failure <= 1e-6; p/2 still fails it at this size); and one `by` query
    over 60 data sets returns exactly the p-values embsql.permanova's kernel gives."""
    rng = np.random.default_rng(20240603)
    labels = np.repeat(["a", "b", "c", "d"], 6)
    p = []
    for k in range(40):
        con.register("t", vectors_table(rng.normal(size=(24, 5)), labels))
        p.append(sql_rows(con, f"SELECT p_value FROM emb_permanova('t', 'g', 'v', permutations := 99, seed := {k})")
                 [0]["p_value"])
    ok, message = check_uniform(p, 99)
    assert ok, message
    assert not check_uniform(np.array(p) / 2, 99)[0]

    con.register("many", vectors_table(rng.normal(size=(24 * 60, 5)), np.tile(labels, 60), rep=np.repeat(np.arange(60), 24)))
    from_sql = sql_rows(con, "SELECT rep, p_value FROM emb_permanova('many', 'g', 'v', permutations := 99, model := 'rep')")
    from_python = embsql.permanova(con, "many", group="g", vector="v", permutations=99, model="rep",
                                   check_dispersion=False).to_dicts()
    assert [(r["rep"], r["p_value"]) for r in from_sql] == [(r["rep"], r["p_value"]) for r in from_python]
    assert len(from_sql) == 60


# ----------------------------------------------------------------------------------------------
# 4. strata

def test_shuffles_stay_within_strata():
    """Every shuffle maps each stratum onto itself, and within a stratum every item reaches every
    position (so the shuffles are not trivially the identity)."""
    labels = np.array(list("abcabcabcabcabca"), dtype=object)
    strata = np.array(list("zzzzzxxxxxxxyyyy"), dtype=object)
    order = canonical_order(labels, strata)
    d = design(labels[order], strata[order])
    assert np.all(np.diff(d.strata) >= 0)
    seen = np.zeros((d.n, d.n), dtype=bool)
    for perm in shuffles(d, 3000, seed=5):
        assert sorted(perm.tolist()) == list(range(d.n))
        assert np.array_equal(d.strata[perm], d.strata)
        seen[np.arange(d.n), perm] = True
    assert np.array_equal(seen, d.strata[:, None] == d.strata[None, :])


def test_shuffles_refuse_unsorted_strata():
    d = Design(np.array([0, 1, 0, 1]), np.array([1, 0, 1, 0]), 2)
    with pytest.raises(ValueError, match="sorted by stratum"):
        next(shuffles(d, 10, seed=1))


def test_labels_never_cross_strata(con):
    """Each stratum holds one group only: no within-stratum shuffle changes the labelling, so every
    permuted F equals the observed one and p = 1 exactly (any shuffle across strata would give a
    smaller p).  Vector route (Python, SQL) and distance route."""
    x, _ = clustered(3, [5, 5, 5], effect=2.0)
    labels = np.repeat(["a", "b", "c"], 5)
    con.register("t", vectors_table(x, labels, block=np.repeat(["s1", "s2", "s3"], 5)))
    got_py = embsql.permanova(con, "t", group="g", vector="v", permutations=199, strata="block",
                              check_dispersion=False).to_dicts()
    got_sql = sql_rows(con, "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 199, strata := 'block')")
    register_distances(con, list(range(15)), np.sqrt(squared_distances(unit(x))), labels, np.repeat(["s1", "s2", "s3"], 5))
    got_dist = sql_rows(con, "SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 199, strata := 'block')")
    assert [r["p_value"] for r in got_py + got_sql + got_dist] == [1.0, 1.0, 1.0]
    # the same data without strata is clearly significant
    assert embsql.permanova(con, "t", group="g", vector="v", permutations=199,
                            check_dispersion=False).to_dicts()[0]["p_value"] == 1 / 200


def strata_example():
    """12 items, 2 blocks x (3 a + 3 b), strong block effect, moderate group effect (d = 3)."""
    rng = np.random.default_rng(11)
    labels = ["a", "a", "a", "b", "b", "b"] * 2
    blocks = ["x"] * 6 + ["y"] * 6
    x = (np.where(np.array(blocks) == "x", 2.0, -2.0)[:, None] * np.array([1.0, 0.0, 0.0])
         + np.where(np.array(labels) == "a", 0.45, -0.45)[:, None] * np.array([0.0, 1.0, 0.0])
         + rng.normal(0.0, 0.5, size=(12, 3)))
    return unit(x), labels, blocks


def test_blocked_p_matches_exact_enumeration(con):
    """Exact p over the 400 within-block relabellings (blocked) and the 924 free ones, in rational
    arithmetic from the squared distances; the two exact p's differ; embsql's b (9999
    permutations) on every route is a Binomial(9999, p_exact) draw (exact test, <= 1e-6 each)."""
    z, labels, blocks = strata_example()
    squared = [[Fraction(v) for v in row] for row in squared_distances(z)]
    f_obs, p_blocked = exact_p(squared, labels, blocks)
    _, p_free = exact_p(squared, labels)
    assert p_free - p_blocked > Fraction(1, 10), (p_blocked, p_free)   # the example must separate them

    con.register("t", vectors_table(z, labels, block=blocks))
    register_distances(con, list(range(12)), np.sqrt(squared_distances(z)), labels, blocks)
    for strata, p in (("block", p_blocked), (None, p_free)):
        s = "NULL" if strata is None else f"'{strata}'"
        results = {
            "python": embsql.permanova(con, "t", group="g", vector="v", permutations=9999, strata=strata,
                                       check_dispersion=False).to_dicts()[0],
            "sql": sql_rows(con, f"SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 9999, strata := {s})")[0],
            "dist": sql_rows(con, f"SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 9999, "
                                  f"strata := {s})")[0],
        }
        for route, got in results.items():
            assert got["f"] == pytest.approx(float(f_obs), rel=1e-12)
            assert_binomial(exceedances(got["p_value"], 9999), 9999, float(p), what=f"{route}, strata {strata}")


# ----------------------------------------------------------------------------------------------
# 5. seeds and reproducibility

def mixed_table(seed=5):
    """Unbalanced, float32 fixed-size vectors, integer labels and integer strata; p about 0.4."""
    x, labels = clustered(seed, [7, 5, 9, 6], d=6, effect=0.1)
    codes = [int(s[1:]) for s in labels]
    return pa.table({"g": codes, "block": [i % 3 for i in range(len(codes))],
                     "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel(), pa.float32()), 6)})


@pytest.mark.parametrize("strata", [None, "block"])
def test_python_and_sql_give_identical_p(con, strata):
    table = mixed_table()
    con.register("t", table)
    s = "NULL" if strata is None else f"'{strata}'"
    for seed in (42, 1, 2):
        got_py = embsql.permanova(con, "t", group="g", vector="v", permutations=499, seed=seed, strata=strata,
                                  check_dispersion=False).to_dicts()[0]
        got_sql = sql_rows(con, f"SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 499, seed := {seed}, "
                                f"strata := {s})")[0]
        assert got_py["p_value"] == got_sql["p_value"]
        assert 0.005 < got_py["p_value"] < 0.995        # a p that a wrong shuffle could change
        assert got_py["f"] == pytest.approx(got_sql["f"], rel=1e-12)
        assert got_py["permutations"] == got_sql["permutations"] == 499


@pytest.mark.parametrize("strata", [None, "block"])
def test_row_order_does_not_change_p(con, strata):
    table = mixed_table()
    con.register("t", table)
    s = "NULL" if strata is None else f"'{strata}'"
    reference = embsql.permanova(con, "t", group="g", vector="v", permutations=499, strata=strata, check_dispersion=False).p_value
    for k in range(3):
        con.register("shuffled", table.take(np.random.default_rng(k).permutation(table.num_rows)))
        assert embsql.permanova(con, "shuffled", group="g", vector="v", permutations=499, strata=strata,
                                check_dispersion=False).p_value == reference
        assert sql_rows(con, f"SELECT p_value FROM emb_permanova('shuffled', 'g', 'v', permutations := 499, "
                             f"strata := {s})")[0]["p_value"] == reference


def test_row_order_does_not_change_p_distance_route(con):
    x, labels = clustered(1, [6, 6, 6, 6], d=3, effect=0.2)
    register_distances(con, list(range(24)), np.sqrt(squared_distances(x)), labels)
    reference = sql_rows(con, "SELECT p_value FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 999)")
    lab = con.sql("SELECT * FROM lab").to_arrow_table()
    for k in range(3):
        con.register("lab2", lab.take(np.random.default_rng(k).permutation(24)))
        assert sql_rows(con, "SELECT p_value FROM emb_permanova_dist('dist', 'lab2', 'g', permutations := 999)") \
            == reference


def test_seeds(con):
    """Same seed, same p (run twice); different seeds give different p here; p in (0, 1],
    p >= 1/(B+1) and p (B+1) a whole number."""
    con.register("t", mixed_table())
    runs = {seed: [embsql.permanova(con, "t", group="g", vector="v", permutations=199, seed=seed, check_dispersion=False).p_value
                   for _ in range(2)] for seed in range(1, 7)}
    assert all(a == b for a, b in runs.values())
    values = [a for a, _ in runs.values()]
    assert len(set(values)) > 1, values
    for p in values:
        assert 1 / 200 <= p <= 1
        exceedances(p, 199)


def test_p_floor_and_by(con):
    """Well separated groups reach the floor 1/(B+1) exactly, never 0; `by` gives per model the
    p of a separate call on that model's rows (same seed), in Python and SQL."""
    x1, labels = clustered(8, [6, 6, 6], effect=3.0, noise=0.3)
    x2, _ = clustered(9, [6, 6, 6], effect=0.3)
    con.register("t", vectors_table(np.vstack([x1, x2]), np.tile(labels, 2), model=["m1"] * 18 + ["m2"] * 18))
    con.register("t1", vectors_table(x1, labels))
    con.register("t2", vectors_table(x2, labels))
    by_py = embsql.permanova(con, "t", group="g", vector="v", permutations=299, model="model", check_dispersion=False).to_dicts()
    by_sql = sql_rows(con, "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 299, model := 'model')")
    alone = [embsql.permanova(con, name, group="g", vector="v", permutations=299, check_dispersion=False).p_value
             for name in ("t1", "t2")]
    assert [r["model"] for r in by_py] == [r["model"] for r in by_sql] == ["m1", "m2"]
    assert [r["p_value"] for r in by_py] == [r["p_value"] for r in by_sql] == alone
    assert alone[0] == 1 / 300
    assert alone[1] > 1 / 300


# ----------------------------------------------------------------------------------------------
# 6. the two kernels

@pytest.mark.parametrize("case", ["vegan_balanced", "vegan_strata", "vegan_strata_blocked", "mixed", "null", "ties"])
def test_pairs_and_coordinates_give_identical_p(con, case):
    strata = None
    if case.startswith("vegan"):
        vegan_table(con, "unit_balanced" if case == "vegan_balanced" else "strata")
        strata = "block" if case.endswith("blocked") else None
    elif case == "mixed":
        con.register("data", mixed_table())
    elif case == "null":
        x, labels = clustered(12, [5, 8, 6, 4], effect=0.0)
        con.register("data", vectors_table(x, labels))
    else:   # duplicated vectors: many exactly tied F values
        base = unit(np.random.default_rng(2).normal(size=(4, 3)))
        con.register("data", vectors_table(np.repeat(base, 3, axis=0), list("aabbaabbaabb")))
    results = {method: by_route(con, "data", method, permutations=999, seed=3, strata=strata)
               for method in ("pairs", "coordinates", "auto")}
    face = embsql.permanova(con, "data", group="g", vector="v", permutations=999, seed=3, strata=strata,
                            check_dispersion=False)
    assert results["pairs"].p_value == results["coordinates"].p_value == results["auto"].p_value == face.p_value
    assert results["pairs"].statistic == pytest.approx(results["coordinates"].statistic, rel=1e-12)


def test_kernels_agree_on_every_permuted_statistic():
    """The kernels themselves: the same exceedance count b for several seeds, not only the same p
    through the public API."""
    x, labels = clustered(21, [4, 7, 5], d=8, effect=0.25)
    order = canonical_order(labels, None, unit(x))
    d = design(labels[order])
    for seed in range(5):
        pairs = permanova_vectors(unit(x)[order], d, permutations=300, seed=seed, method="pairs")
        coordinates = permanova_vectors(unit(x)[order], d, permutations=300, seed=seed, method="coordinates")
        assert (pairs.exceedances, pairs.p_value) == (coordinates.exceedances, coordinates.p_value)
        assert pairs.statistic == pytest.approx(coordinates.statistic, rel=1e-12)
        assert (pairs.method, coordinates.method) == ("pairs", "coordinates")


# ----------------------------------------------------------------------------------------------
# 10. bad input



@pytest.fixture
def small(con):
    x, labels = clustered(5, [4, 4, 4], d=3)
    con.register("t", vectors_table(x, labels, s=["p", "q"] * 6, s_null=["p"] * 11 + [None]))
    con.register("one", vectors_table(x, ["only"] * 12))
    register_distances(con, list(range(12)), np.sqrt(squared_distances(x)), labels)
    con.register("lab_one", pa.table({"id": list(range(12)), "g": ["only"] * 12}))
    con.register("lab_null", pa.table({"id": list(range(12)), "g": list(labels), "s": ["p"] * 11 + [None]}))
    return con


PERMUTATIONS_MESSAGE = "permutations must be a whole number from 1 to 1,000,000, not 0"


def test_permutations_zero(small):
    with pytest.raises(embsql.InputError, match=f"^{PERMUTATIONS_MESSAGE}$"):
        embsql.permanova(small, "t", group="g", vector="v", permutations=0)
    with pytest.raises(embsql.InputError, match=f"^{PERMUTATIONS_MESSAGE}$"):
        embsql.dispersion(small, "t", group="g", vector="v", permutations=0)
    with pytest.raises(embsql.InputError, match=r"^permutations must be a whole number from 1 to 1,000,000, not -5$"):
        embsql.permanova(small, "t", group="g", vector="v", permutations=-5)
    with pytest.raises(embsql.InputError, match=r"^permutations must be a whole number from 1 to 1,000,000, not 1\.5$"):
        embsql.permanova(small, "t", group="g", vector="v", permutations=1.5)
    for query in ("SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 0)",
                  "SELECT * FROM emb_dispersion('t', 'g', 'v', permutations := 0)",
                  "SELECT * FROM emb_dispersion_groups('t', 'g', 'v', permutations := 0)",
                  "SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', permutations := 0)"):
        assert sql_error(small, query) == f"embsql: [argument.permutations] {PERMUTATIONS_MESSAGE}"


def test_one_group(small):
    message = "the group column has only one group: the permutation test needs at least two"
    with pytest.raises(embsql.DesignError, match=f"^{message}$"):
        embsql.permanova(small, "one", group="g", vector="v")
    with pytest.raises(embsql.DesignError, match=f"^{message}$"):
        embsql.dispersion(small, "one", group="g", vector="v")
    # emb_permanova and emb_permanova_dist check the design twice (the decomposition and the
    # permutation UDF); DuckDB runs both in parallel, so either message may come first
    decomposition = ('embsql: [design.one_group] group column "g" has only one group: the decomposition needs at least two',)
    for query, also in (("SELECT * FROM emb_permanova('one', 'g', 'v')", decomposition),
                        ("SELECT * FROM emb_dispersion('one', 'g', 'v')", ()),
                        ("SELECT * FROM emb_dispersion_groups('one', 'g', 'v')", ()),
                        ("SELECT * FROM emb_permanova_dist('dist', 'lab_one', 'g')", decomposition)):
        assert sql_error(small, query) in (f"embsql: [design.one_group] {message}",) + also


def test_strata_column_missing(small):
    with pytest.raises(embsql.ColumnNotFoundError, match=r"^strata column 'nope' not found in 't'; its columns are: "):
        embsql.permanova(small, "t", group="g", vector="v", strata="nope")
    assert sql_error(small, "SELECT * FROM emb_permanova('t', 'g', 'v', strata := 'nope')") \
        == 'embsql: [column.missing] column "nope" not found in t'


def test_strata_column_missing_distance_route(small):
    message = sql_error(small, "SELECT * FROM emb_permanova_dist('dist', 'lab', 'g', strata := 'nope')")
    assert "nope" in message and "not found" in message, message


def test_null_stratum(small):
    message = "the strata column has a NULL value; every row needs a stratum"
    with pytest.raises(embsql.InputError, match=f"^{message}$"):
        embsql.permanova(small, "t", group="g", vector="v", strata="s_null")
    assert sql_error(small, "SELECT * FROM emb_permanova('t', 'g', 'v', strata := 's_null')") == f"embsql: [input] {message}"
    assert sql_error(small, "SELECT * FROM emb_permanova_dist('dist', 'lab_null', 'g', strata := 's')") \
        == f"embsql: [input] {message}"


def test_unknown_method(small):
    """The route is the kernel's choice: the face takes no method=, the kernel checks its own."""
    with pytest.raises(embsql.InputError, match=r"^method must be 'auto', 'pairs' or 'coordinates', not 'exact'$"):
        by_route(small, "t", "exact", permutations=9, seed=1)
    with pytest.raises(TypeError, match=r"^permanova\(\) got an unexpected keyword argument 'method'$"):
        embsql.permanova(small, "t", group="g", vector="v", method="exact")  # type: ignore[call-arg]


def test_run_sql_turns_permanova_errors_into_sql_input_error(small):
    with pytest.raises(embsql.SqlInputError, match=rf"^embsql: \[argument\.permutations\] {PERMUTATIONS_MESSAGE}$"):
        embsql.run_sql(small, "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 0)")


# ----------------------------------------------------------------------------------------------
# 11. the dispersion warning

def spread_table(con, tight, wide):
    """Two groups around the same centre, one with noise `tight`, one with noise `wide`."""
    rng = np.random.default_rng(17)
    centre = np.array([3.0, 0, 0, 0])
    x = np.vstack([centre + rng.normal(0, tight, size=(15, 4)), centre + rng.normal(0, wide, size=(15, 4))])
    con.register("spread", vectors_table(x, ["a"] * 15 + ["b"] * 15))


def test_permanova_warns_when_groups_differ_in_spread(con):
    spread_table(con, 0.1, 1.5)
    with pytest.warns(UserWarning, match="spread"):
        embsql.permanova(con, "spread", group="g", vector="v", permutations=199)
    assert embsql.dispersion(con, "spread", group="g", vector="v", permutations=199).test.p_value <= 0.05


def test_permanova_does_not_warn_for_equal_spread(con):
    spread_table(con, 0.8, 0.8)
    assert embsql.dispersion(con, "spread", group="g", vector="v", permutations=199).test.p_value > 0.05
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embsql.permanova(con, "spread", group="g", vector="v", permutations=199)
        spread_table(con, 0.1, 1.5)
        embsql.permanova(con, "spread", group="g", vector="v", permutations=199, check_dispersion=False)


def test_dispersion_with_equal_spreads_is_not_significant(con):
    """Every item lies s from its group centroid (4 items per group, placed symmetrically), so no
    grouping can differ in spread: F = 0 and p = 1, and permanova does not warn (a 0/0 NaN F would
    give the smallest p and a spurious warning)."""
    c, s = 0.8, 0.6
    rows = [("A", [c, s, 0]), ("A", [c, -s, 0]), ("A", [c, 0, s]), ("A", [c, 0, -s]),
            ("B", [s, c, 0]), ("B", [-s, c, 0]), ("B", [0, c, s]), ("B", [0, c, -s])]
    con.register("ex", vectors_table(np.array([v for _, v in rows]), [g for g, _ in rows]))
    result = embsql.dispersion(con, "ex", group="g", vector="v", permutations=99)
    tests, groups = result.test, result.groups
    assert (tests.f, tests.p_value) == (0.0, 1.0)
    assert groups.column("mean_distance") == pytest.approx([s] * 2, rel=1e-12)
    assert sql_rows(con, "SELECT f, p_value FROM emb_dispersion('ex', 'g', 'v', permutations := 99)") == \
        [{"f": 0.0, "p_value": 1.0}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        embsql.permanova(con, "ex", group="g", vector="v", permutations=99)


def test_dispersion_leaves_out_groups_too_small_to_test(con):
    """The source's Example 1 (two groups of 2): no group has the 4 items the test needs, so it does
    not run: f and p are None, and the note and counts say which items were left out and why."""
    con.execute("CREATE TABLE ex1 AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]), "
                "('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    result = embsql.dispersion(con, "ex1", group="g", vector="v", permutations=99)
    tests, groups = result.test, result.groups
    row = tests.to_dicts()[0]
    assert (row["f"], row["p_value"], row["groups"], row["groups_left_out"], row["items_left_out"]) == \
        (None, None, 0, 2, 4)
    assert "fewer than 4 items" in row["note"] and "did not run" in row["note"]
    assert groups.column("mean_distance") == pytest.approx([0.1 ** 0.5] * 2, rel=1e-12)
    sql = sql_rows(con, "SELECT * FROM emb_dispersion('ex1', 'g', 'v', permutations := 99)")[0]
    assert {k: sql[k] for k in row} == row


def test_identical_vectors_within_groups_are_refused_as_in_anova():
    """SS_W = 0 (each group one repeated vector): F is undefined, and permanova (either statistic)
    and the dispersion test refuse it with emb_anova's message (embsql.core.precision)."""
    from embsql.core.dispersion import dispersion_test
    from embsql.core.permutation import design, permanova_vectors
    z = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [-1, 0], [-1, 0.0]])
    d = design(np.array([0, 0, 1, 1, 2, 2]))
    for run in (lambda: permanova_vectors(z, d, permutations=99, seed=3),
                lambda: permanova_vectors(z, d, permutations=99, seed=3, statistic="welch"),
                lambda: dispersion_test(z, d, permutations=99, seed=3)):
        with pytest.raises(embsql.DesignError, match="within each group are identical to within floating-point"):
            run()
