"""Sequential Monte Carlo p-values (Besag and Clifford 1991): stop once h permuted statistics reach
the observed one; then p = h / L after L permutations, else the usual (b + 1) / (B + 1)."""

from __future__ import annotations

import numpy as np
import pytest

from embsql.core.dispersion import dispersion_test
from embsql.core.permutation import design, permanova_distances, permanova_vectors
from embsql.errors import InputError


def unit_rows(n: int, dim: int, rng: np.random.Generator, shift: float = 0.0, groups: int = 3):
    labels = np.repeat(np.arange(groups), n // groups)
    x = rng.standard_normal((n, dim)) + shift * np.eye(dim)[labels % dim]
    return x / np.linalg.norm(x, axis=1, keepdims=True), labels


def test_the_run_stops_at_the_h_th_permutation_that_reaches_the_observed_f():
    rng = np.random.default_rng(1)
    z, labels = unit_rows(30, 4, rng)
    d = design(labels)
    stopped = permanova_vectors(z, d, permutations=999, seed=7, stop_after=5)
    assert stopped.permutations < 999 and stopped.exceedances == 5
    assert stopped.p_value == pytest.approx(5 / stopped.permutations)
    # the same seeded stream run in full to L and to L - 1: the L-th permutation is the 5th to reach F
    full = permanova_vectors(z, d, permutations=stopped.permutations, seed=7)
    before = permanova_vectors(z, d, permutations=stopped.permutations - 1, seed=7)
    assert (full.exceedances, before.exceedances) == (5, 4)
    assert full.statistic == stopped.statistic


def test_a_run_that_never_reaches_h_is_the_ordinary_test():
    rng = np.random.default_rng(2)
    z, labels = unit_rows(30, 4, rng, shift=3.0)
    d = design(labels)
    sequential = permanova_vectors(z, d, permutations=199, seed=3, stop_after=10)
    ordinary = permanova_vectors(z, d, permutations=199, seed=3)
    assert sequential == ordinary and ordinary.exceedances < 10
    assert ordinary.p_value == (ordinary.exceedances + 1) / 200


def test_distances_and_dispersion_stop_by_the_same_rule():
    rng = np.random.default_rng(4)
    z, labels = unit_rows(32, 5, rng, groups=4)
    d = design(labels)
    squared = np.maximum(0.0, 2.0 - 2.0 * z @ z.T)
    by_distances = permanova_distances(squared, d, permutations=999, seed=5, stop_after=8)
    by_vectors = permanova_vectors(z, d, permutations=999, seed=5, stop_after=8)
    assert by_distances.permutations == by_vectors.permutations
    assert by_distances.p_value == pytest.approx(by_vectors.p_value)
    spread = dispersion_test(z, d, permutations=999, seed=5, stop_after=8).test
    spread_full = dispersion_test(z, d, permutations=spread.permutations, seed=5).test
    assert spread.exceedances == spread_full.exceedances == 8
    assert spread.p_value == pytest.approx(8 / spread.permutations)


@pytest.mark.parametrize("bad", [0, 1000, -1, 2.5, True, "10"])
def test_stop_after_outside_one_to_permutations_is_refused(bad):
    rng = np.random.default_rng(0)
    z, labels = unit_rows(12, 3, rng)
    with pytest.raises(InputError, match="stop_after") as caught:
        permanova_vectors(z, design(labels), permutations=999, stop_after=bad)
    assert caught.value.kind == "argument.stop_after"


def test_sequential_p_values_hold_the_level_under_the_null():
    """600 null data sets, h = 10, B = 999: P(p <= 0.05) must stay at 5% (Monte Carlo SE 0.9 points),
    and the run must stop early: the point of the rule."""
    rng = np.random.default_rng(2026)
    p_values, used = [], []
    for _ in range(600):
        z, labels = unit_rows(18, 3, rng)
        test = permanova_vectors(z, design(labels), permutations=999, seed=int(rng.integers(1 << 31)),
                                 stop_after=10)
        p_values.append(test.p_value)
        used.append(test.permutations)
    p_values = np.array(p_values)
    assert 0 < p_values.min() and p_values.max() <= 1
    assert 0.025 <= np.mean(p_values <= 0.05) <= 0.075
    assert 0.42 <= np.mean(p_values <= 0.5) <= 0.58
    assert np.median(used) < 60


def example_table(con):
    rng = np.random.default_rng(11)
    rows = []
    for model, shift in (("a", 0.0), ("b", 2.0)):
        z, labels = unit_rows(36, 4, rng, shift=shift)
        rows += [(model, f"g{g}", list(map(float, v))) for g, v in zip(labels, z)]
    con.execute("CREATE TABLE t (model VARCHAR, g VARCHAR, v DOUBLE[])")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)


def test_the_faces_report_the_permutations_run():
    import embsql

    con = embsql.connect()
    example_table(con)
    full = embsql.permanova(con, "t", group="g", vector="v", model="model", permutations=499, check_dispersion=False)
    early = embsql.permanova(con, "t", group="g", vector="v", model="model", permutations=499, stop_after=10,
                             check_dispersion=False)
    by_model = dict(zip(early.column("model"), zip(early.column("permutations"), early.column("p_value"))))
    full_by_model = dict(zip(full.column("model"), full.column("p_value")))
    assert by_model["a"][0] < 499 and by_model["a"][1] == pytest.approx(10 / by_model["a"][0])   # no effect: stops
    assert by_model["b"] == (499, full_by_model["b"]) and full_by_model["b"] < 10 / 499           # an effect: all B
    spread = embsql.dispersion(con, "t", group="g", vector="v", model="model", permutations=499, stop_after=10).test
    assert all(p <= 499 for p in spread.column("permutations"))
    with pytest.raises(InputError, match="stop_after"):
        embsql.dispersion(con, "t", group="g", vector="v", permutations=99, stop_after=100)


def test_the_report_and_the_cli_pass_stop_after_to_both_tests(tmp_path):
    import json
    import subprocess
    import sys

    import embsql

    con = embsql.connect()
    example_table(con)
    path = tmp_path / "t.parquet"
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    result = embsql.report(str(path), vector="v", group="g", model="model", sections=("permanova", "dispersion"),
                           permutations=499, stop_after=10).run(progress=False)
    for name in ("permanova", "dispersion"):
        used = dict(zip(result[name].column("model"), result[name].column("permutations")))
        assert used["a"] < 499       # the model without an effect stops early in both tests
    out = subprocess.run([sys.executable, "-m", "embsql", "report", str(path), "--vector", "v", "--group", "g",
                          "--model", "model", "--sections", "permanova", "--permutations", "499", "--stop-after", "10",
                          "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["meta"]["stop_after"] == 10
    section = next(s for s in data["sections"] if s["name"] == "permanova")
    used = section["columns"].index("permutations")
    assert min(row[used] for row in section["rows"]) < 499
    bad = subprocess.run([sys.executable, "-m", "embsql", "report", str(path), "--vector", "v", "--group", "g",
                          "--permutations", "99", "--stop-after", "-1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "stop_after" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_report_stops_at_10_by_default_and_0_runs_every_permutation():
    import embsql

    con = embsql.connect()
    example_table(con)
    default = embsql.report("t", vector="v", group="g", model="model", sections=("permanova", "dispersion"),
                            permutations=499).run(con, progress=False)
    every = embsql.report("t", vector="v", group="g", model="model", sections=("permanova", "dispersion"),
                          permutations=499, stop_after=0).run(con, progress=False)
    assert default.meta["stop_after"] == 10
    for name in ("permanova", "dispersion"):
        assert set(every[name].column("permutations")) == {499}
        used = dict(zip(default[name].column("model"), default[name].column("permutations")))
        assert used["a"] < 499
    # a p-value under 10 / B is the full test's: model b's PERMANOVA
    assert default["permanova"].column("p_value")[1] == every["permanova"].column("p_value")[1] < 10 / 499
