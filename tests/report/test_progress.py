"""Long runs: a progress bar when asked for, and Ctrl-C stops them cleanly."""

from contextlib import contextmanager

import numpy as np
import pytest
from test_report import model_table

import embsql
from embsql import progress
from embsql.core.permutation import design, permanova_vectors
from embsql.core.sums import GroupSums
from embsql.progress import RunProgress, progress_bar
from embsql.reporting.sections import progress_plan


def unit_vectors(n=40, d=5, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_progress_callback_reaches_the_total():
    seen = []
    permanova_vectors(unit_vectors(), design(np.repeat(np.arange(4), 10)), permutations=199, seed=1,
                      progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (199, 199)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_interrupt_propagates_through_the_bar():
    def interrupt(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        with progress_bar("permutations", 199, enabled=True) as tick:
            assert tick is not None
            permanova_vectors(unit_vectors(), design(np.repeat(np.arange(4), 10)), permutations=199, seed=1,
                              progress=lambda done, total: (tick(done, total), interrupt(done, total)))


def test_no_bar_unless_interactive_or_asked():
    with progress_bar("x", 10, enabled=None) as tick:      # pytest's stderr is not a terminal
        assert tick is None
    with progress_bar("x", 10, enabled=False) as tick:
        assert tick is None


def model_rows():
    """model_table()'s rows per model: (labels, unit vectors)."""
    table = model_table().to_pylist()
    out = {}
    for model in ("a", "b"):
        rows = [row for row in table if row["model"] == model]
        x = np.array([row["emb"] for row in rows])
        out[model] = ([row["topic"] for row in rows], x / np.linalg.norm(x, axis=1, keepdims=True))
    return out


class Recorder:
    """Stands in for the bar on stderr (embsql.progress._bar): records every bar opened, its total, its ticks and labels."""

    def __init__(self):
        self.bars = []

    @contextmanager
    def __call__(self, label, total, enabled):
        bar = {"label": label, "total": total, "ticks": [], "labels": []}
        self.bars.append(bar)
        yield (lambda done, _total: bar["ticks"].append(done)), bar["labels"].append


def test_a_run_s_bar_moves_through_each_part_s_share_and_reaches_the_total_once():
    ticks = []
    run = RunProgress([("a", "first", 10), ("b", "second", 30), ("c", "third", 5)],
                      (lambda done, total: ticks.append((done, total)), lambda text: None))
    assert run.total == 45
    with run.part("a"):                 # a part whose kernel says nothing: the bar jumps to its end
        pass
    with run.part("b") as tick:
        for done in range(0, 200, 16):  # a test of 199 permutations, stopped early after 64
            tick(min(done, 199), 199)
            if done == 64:
                tick(199, 199)          # the runner says "done" when it stops early
                break
    with run.part("unplanned") as tick:     # not in the plan: no share, the bar stays
        assert tick is None
    with run.part("c") as tick:
        tick(5, 5)
    done = [d for d, _ in ticks]
    assert all(total == 45 for _, total in ticks)
    assert done == sorted(set(done))                  # only forward
    assert done[0] == 10 and 10 < done[1] < 40 and done.count(40) == 1
    assert done[-1] == 45 and done.count(45) == 1     # 100% exactly once, at the end


def test_the_report_shows_one_bar_whose_total_is_the_sum_of_every_section_and_model(monkeypatch, con):
    recorder = Recorder()
    monkeypatch.setattr(progress, "_bar", recorder)
    con.register("emb", model_table())
    report = embsql.report("emb", vector="emb", group="topic", model="model", permutations=99, seed=3, stop_after=0)
    report.run(con, progress=True)
    assert len(recorder.bars) == 1                    # one bar for the whole report, none per test
    bar = recorder.bars[0]
    parts = report.sections_on(True)
    plan = progress_plan(report, [(m, GroupSums.from_rows(*rows)) for m, rows in model_rows().items()], parts)
    keys = [key for key, _, _ in plan]
    assert keys == [name for name in parts if name not in ("permanova", "dispersion")] + [
        ("permanova", "a"), ("dispersion", "a"), ("permanova", "b"), ("dispersion", "b")]   # model by model
    assert bar["total"] == sum(units for _, _, units in plan) > 0
    assert bar["ticks"] == sorted(set(bar["ticks"])) and bar["ticks"][-1] == bar["total"]
    assert bar["ticks"].count(bar["total"]) == 1
    assert bar["labels"] == [label for _, label, _ in plan]
    assert "permutations (a)" in bar["labels"] and "dispersion permutations (b)" in bar["labels"]


def test_the_bar_s_shares_follow_the_kernels_cost_models():
    """PERMANOVA's share grows as B n d (the coordinates route), the dispersion test's as B sum_g n_g^2 d
    (groups smaller than d); the resampling sections' as replicates x groups x d."""
    def plan(n, size, permutations=999, replicates=2000):
        counts = np.full(n // size, size)
        sums = GroupSums(np.arange(len(counts)), counts, np.zeros((len(counts), 384)))
        report = embsql.report("emb", vector="v", group="g", permutations=permutations, replicates=replicates)
        return {key: units for key, _, units in progress_plan(report, [(None, sums)], report.sections_on(True))}
    small, large = plan(100_000, 50), plan(200_000, 50)
    assert large[("permanova", None)] == pytest.approx(2 * small[("permanova", None)], rel=1e-3)
    assert large[("dispersion", None)] == pytest.approx(2 * small[("dispersion", None)], rel=1e-3)
    assert large["bootstrap"] == pytest.approx(2 * small["bootstrap"], rel=1e-2)      # whole milliseconds
    wider = plan(100_000, 100)
    assert wider[("dispersion", None)] == pytest.approx(2 * small[("dispersion", None)], rel=1e-3)
    assert wider[("permanova", None)] == small[("permanova", None)]
    assert plan(100_000, 50, permutations=99)[("permanova", None)] == pytest.approx(
        small[("permanova", None)] / 999 * 99, rel=1e-2)
