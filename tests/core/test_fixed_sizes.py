"""Group sizes fixed by the design: the stratified jackknife (embsql.core.resampling.size_strata).

When every sample has the same group sizes (so many groups of 2, of 5, of 20), a group's
leave-one-out replicate moves with its size, and that movement is not sampling variation: the plain
jackknife overstated the SE (coverage 99-100% for a nominal 95%).  Deviations from the mean of the
groups of the same size measure only what varies.  The full table is validation/validity_intervals.py
(``--sizes fixed``); here a small seeded version, whose bounds come from the Monte Carlo SE.
"""

import sys

import numpy as np
import pytest
from helpers import ROOT

import embsql
from embsql.core import resampling
from embsql.core.sums import GroupSums
from embsql.errors import InputError

sys.path.insert(0, str(ROOT / "validation"))
import validity_intervals as sim  # noqa: E402


def sums_of(counts) -> GroupSums:
    counts = np.asarray(counts, dtype=np.int64)
    rng = np.random.default_rng(len(counts))
    s = rng.normal(size=(len(counts), 3))
    return GroupSums(np.array([f"g{i:02d}" for i in range(len(counts))], dtype=object), counts, s)


@pytest.mark.parametrize("counts, expected", [
    (np.tile([2, 3, 5, 10, 20], 6), "fixed"),          # a pattern repeated: a design
    ([8] * 30, "random"),                              # equal groups: no strata needed (both are the same)
    (np.tile([2, 3, 5, 10, 20], 4), "random"),         # 4 groups of each size: too few for a stratum's variance
    ([2, 3, 5, 10, 20, 2, 3, 5, 10, 20, 3] * 3, "random"),   # sizes that do not repeat evenly: drawn
])
def test_auto_takes_a_repeated_pattern_as_fixed(counts, expected):
    strata = resampling.size_strata(sums_of(counts), "auto")
    assert ("fixed" if strata is not None else "random") == expected
    if strata is not None:
        assert len(np.unique(strata)) == 5 and np.array_equal(np.bincount(strata), [6] * 5)


def test_explicit_choice_wins_and_a_bad_word_is_refused():
    drawn = sums_of([2, 3, 5, 10, 20, 2, 3, 5, 10, 20, 3] * 5)     # 55 groups, uneven multiplicities
    assert resampling.size_strata(drawn, "auto") is None
    assert resampling.size_strata(drawn, "fixed") is not None
    assert resampling.size_strata(sums_of(np.tile([2, 3, 5, 10, 20], 6)), "random") is None
    with pytest.raises(InputError, match="sizes must be one of 'auto', 'fixed', 'random', not 'design'"):
        resampling.size_strata(drawn, "design")


def test_stratified_se_of_a_mean_is_the_variance_of_the_stratified_mean():
    """For the mean of per-group values y_g, leave-one-out replicates give exactly
    Var = sum_h G_h s_h^2 / G^2 (s_h^2 the within-stratum sample variance): the factor
    G_h (G - 1)^2 / ((G_h - 1) G^2) is what makes it so."""
    rng = np.random.default_rng(3)
    strata = np.repeat(np.arange(4), [5, 6, 7, 9])
    y = rng.normal(size=len(strata)) + 3.0 * strata
    g = len(y)
    replicates = (y.sum() - y) / (g - 1)
    expected = sum(np.sum(strata == h) * np.var(y[strata == h], ddof=1) for h in range(4)) / g ** 2
    assert resampling.jackknife_se(replicates, strata) ** 2 == pytest.approx(expected, rel=1e-12)
    # without strata, the between-stratum spread (3 per stratum step) would count as sampling variation
    assert resampling.jackknife_se(replicates) ** 2 > 5 * expected


def test_fixed_sizes_interval_covers_where_the_plain_jackknife_overcovers():
    """Sizes fixed by the design ({2, 3, 5, 10, 20} x 6, G = 30), equal noise, 400 data sets:
    the stratified interval (sizes="auto" finds the pattern) covers 90-98.5% for R² and F (these
    data: 95.5% and 95.5%; MC SE 1.1%); the plain jackknife covers over 99% (these data: 100% and
    100%, its SE two to seven times the true SD)."""
    rng = np.random.default_rng(20261201)
    truth = sim.limits(rng, "unbalanced", "homogeneous")[0]
    sizes = np.tile(sim.SIZES, 6)
    hits = {stat: {"auto": 0, "plain": 0} for stat in ("r2", "f")}
    datasets = 400
    for _ in range(datasets):
        a, _ = sim.sample(rng, sizes, "homogeneous", "unbalanced")
        for stat in hits:
            auto = resampling.jackknife(a, stat)
            plain = resampling.jackknife(a, stat, sizes="random")
            assert (auto.sizes, plain.sizes) == ("fixed", "random")
            hits[stat]["auto"] += auto.ci_low <= truth[stat] <= auto.ci_high
            hits[stat]["plain"] += plain.ci_low <= truth[stat] <= plain.ci_high
    for stat, count in hits.items():
        assert 0.90 <= count["auto"] / datasets <= 0.985, (stat, count)
        assert count["plain"] / datasets > 0.99, (stat, count)


def test_the_faces_take_and_report_sizes():
    rng = np.random.default_rng(5)
    sizes = np.tile([2, 3, 5, 10, 20], 6)
    labels = np.repeat([f"t{i:02d}" for i in range(len(sizes))], sizes)
    centres = rng.normal(size=(len(sizes), 8))
    x = np.repeat(centres, sizes, axis=0) + rng.normal(size=(len(labels), 8))
    import pyarrow as pa

    table = pa.table({"g": labels, "v": pa.array(x.tolist(), pa.list_(pa.float64()))})
    with embsql.connect() as con:
        auto = embsql.bootstrap(con, table, group="g", vector="v", replicates=199).to_dicts()[0]
        plain = embsql.bootstrap(con, table, group="g", vector="v", replicates=199, sizes="random").to_dicts()[0]
        jack = embsql.jackknife(con, table, group="g", vector="v", sizes="fixed").to_dicts()[0]
        con.register("t", table)
        sql = con.execute("SELECT sizes, ci_low, ci_high FROM emb_bootstrap('t', 'g', 'v', replicates := 199)").fetchall()[0]
    assert (auto["sizes"], plain["sizes"], jack["sizes"]) == ("fixed", "random", "fixed")
    assert auto["ci_high"] - auto["ci_low"] < plain["ci_high"] - plain["ci_low"]
    assert sql[0] == "fixed" and sql[1:] == pytest.approx((auto["ci_low"], auto["ci_high"]), rel=1e-9)
