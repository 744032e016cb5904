"""The report's sections as data: each one's name, title, caution and the one function that builds it.

A section's builder gets the Run (the report, its per-model group sums, the summary it fills in,
its notes) and returns the sections it adds (none when it has nothing to show).  REGISTRY holds
them in report order; adding a section is adding one Entry.  Sections whose ``off_duckdb`` is not
"run" read the rows themselves, which only the DuckDB path does: "drop" leaves them out of a
default report on another engine, "refuse" makes them an error there.  The two permutation tests
run together, model by model, as each model's rows are read (Run.test_rows): one model's rows are
held at a time.

The builders read the report's settings through :class:`Settings` (which embsql.reporting.build's
Report has), so this module does not import the builder that imports it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol

import duckdb
import numpy as np

from embsql.core import decomposition, resampling
from embsql.core.arguments import sequential_stop
from embsql.core.dispersion import MIN_GROUP, dispersion_costs
from embsql.core.model_comparison import BOOTSTRAP_COLUMNS, COMPARE_COLUMNS, bootstrap_row, compare_row, same_groups_problem
from embsql.core.model_ranking import structure_rows
from embsql.core.permutation import method_costs
from embsql.core.precision import row_dtype
from embsql.core.row_tests import Ordered, dispersion_rows, ordered, permanova_row
from embsql.core.sums import GroupSums
from embsql.errors import DesignError, InputError
from embsql.io.retrieval_tables import report_tables
from embsql.io.sources import resolve
from embsql.io.table_stream import Skipped, model_unit_rows
from embsql.progress import DISPERSION_LABEL, RunProgress, permutations_label
from embsql.reporting import cautions, rank_sets
from embsql.reporting.geometry import models_section
from embsql.reporting.rank_sets import Blocks
from embsql.reporting.report_result import Section
from embsql.reporting.retrieval import four_layers
from embsql.result_table import ResultTable

JACKKNIFE_STATS = ("r2", "f", "w_bar")
# embsql.bootstrap's columns, with estimate_bc named corrected and set beside the interval built around it
# (estimate stays the sample figure)
REPORT_BOOTSTRAP_COLUMNS = ("model", "statistic", "estimate", "se", "corrected", "ci_low", "ci_high", "calibrated",
                            "level", "replicates", "groups", "dropped", "sizes")
assert set(REPORT_BOOTSTRAP_COLUMNS) == {"model", "corrected"} | set(BOOTSTRAP_COLUMNS) - {"estimate_bc"}


class Settings(Protocol):
    """What the builders read of a report (embsql.reporting.build.Report)."""

    @property
    def source(self) -> Any: ...
    @property
    def vector(self) -> str: ...
    @property
    def group(self) -> str: ...
    @property
    def model(self) -> str | None: ...
    @property
    def item(self) -> str | None: ...
    @property
    def sections(self) -> Sequence[str]: ...
    @property
    def permutations(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def stop_after(self) -> int | None: ...
    @property
    def replicates(self) -> int: ...
    @property
    def level(self) -> float: ...
    @property
    def queries(self) -> Any: ...
    @property
    def docs(self) -> Any: ...
    @property
    def retrieval(self) -> Mapping[str, Any]: ...
    @property
    def bad_rows(self) -> str: ...

    def rows_source(self, con: duckdb.DuckDBPyConnection) -> str:
        """A name on ``con`` for the (filtered) rows."""
        ...


@dataclass
class Run:
    """What the builders of one report share while it is finished."""

    report: Settings
    parts: list[tuple[object, GroupSums]]              # per model, in the order stage 1 gave them
    resampled: list[tuple[object, GroupSums]]          # canonical order, models with enough groups
    summary: dict[Any, dict[str, Any]]                 # model -> its summary row, filled in by the builders
    con: duckdb.DuckDBPyConnection | None = None       # None on another engine (no rows to read there)
    progress: bool | None = None
    notes: list[str] = field(default_factory=list)     # the report's notes, in the order they are said
    interval_notes: list[str] = field(default_factory=list)   # said after those of the group-sums sections
    bar: RunProgress = field(default_factory=lambda: RunProgress([]))   # the report's one bar (progress_plan)
    ranks: Blocks = field(default_factory=Blocks)      # the ranking section's blocks (reporting.rank_sets)
    wanted: Sequence[str] = ()                         # the sections this run builds
    _tests: dict[str, list[dict[str, Any]]] | None = None

    def model_rows(self, value: object, sums: GroupSums) -> Ordered:
        """One model's unit vectors in canonical order, read from DuckDB (stage 1's ``sums`` count them), in
        the dtype core.precision.row_dtype gives (float32 past 1 GiB of float64) and reordered in place."""
        assert self.con is not None, "only the DuckDB path reads rows (Report._check_engine_sections)"
        report = self.report
        n, dim = int(sums.counts.sum()), sums.sums.shape[1]
        part = model_unit_rows(self.con, resolve(self.con, report.rows_source(self.con)), report.group,
                               report.vector, report.model, value, n, row_dtype(n, dim, float(sums.within_ss().sum())),
                               skip=Skipped.asked(report.bad_rows))
        return ordered(part, report.group, in_place=True)

    def test_rows(self, name: str) -> list[dict[str, Any]]:
        """The rows of one of ROW_TESTS, a row per model.  The first call runs every wanted one, model by
        model: each model's rows are read, tested and let go before the next model's are read."""
        if self._tests is None:
            self._tests = {test: [] for test in ROW_TESTS}
            tests = [test for test in ROW_TESTS if test in self.wanted]
            for value, sums in self.parts:
                rows = self.model_rows(value, sums)
                for test in tests:
                    self._tests[test].append(ROW_TESTS[test](self, value, rows))
                del rows
        return self._tests[name]


@dataclass(frozen=True)
class Entry:
    """One kind of section: its key, its heading and caution, and the builder that makes it."""

    name: str
    title: str                                         # "": the builder titles its own sections
    caution: str                                       # "": ... and gives them their cautions
    build: Callable[[Entry, Run], list[Section]]
    default: Callable[[Settings], bool] = lambda report: True   # in a report that names no sections?
    off_duckdb: str = "run"                            # "run", "drop" or "refuse" (see the module docstring)

    def section(self, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> Section:
        return Section(self.name, self.title, ResultTable.from_dicts(self.name, columns, rows), self.caution)


def whose(value: object, verb: bool = True) -> str:
    """"model 'x' has" (or "the data have" without a model column), for notes."""
    if value is None:
        return "the data have" if verb else "the data"
    return f"model {value!r} has" if verb else f"model {value!r}"


def have_groups(found: list[tuple[object, int]]) -> str:
    """"model 'x' has 5 groups", or for several models "models 'x', 'y' have 5 groups" (one note for all)."""
    if len(found) == 1:
        return f"{whose(found[0][0])} {found[0][1]} groups"
    counts = {count for _, count in found}
    if len(counts) == 1:
        return f"models {', '.join(repr(value) for value, _ in found)} have {counts.pop()} groups"
    return "models " + ", ".join(f"{value!r} ({count} groups)" for value, count in found) + " have too few groups"


def _decomposition(entry: Entry, run: Run) -> list[Section]:
    rows = [{"model": value, **decomposition.anova_row(sums, value)} for value, sums in run.parts]
    return [entry.section(("model",) + decomposition.ANOVA_COLUMNS, rows)]


def _groups(entry: Entry, run: Run) -> list[Section]:
    rows = [{"model": value, **row} for value, sums in run.parts for row in decomposition.group_rows(sums)]
    return [entry.section(("model",) + decomposition.GROUP_COLUMNS, rows)]


def _jackknife(entry: Entry, run: Run) -> list[Section]:
    rows = []
    for value, sums in run.resampled:
        for stat in JACKKNIFE_STATS:
            result = resampling.jackknife(sums, stat)
            rows.append({"model": value, "statistic": stat, "estimate": result.estimate, "se": result.se,
                         "groups": len(sums.counts)})
            if stat == "r2":
                run.summary[value]["r2_se"] = result.se
    return [entry.section(("model", "statistic", "estimate", "se", "groups"), rows)]


def _bootstrap(entry: Entry, run: Run) -> list[Section]:
    report, rows = run.report, []
    few: list[tuple[object, int]] = []
    for value, sums in run.resampled:
        result = resampling.bootstrap(sums, "r2", replicates=report.replicates, seed=report.seed, level=report.level)
        row = bootstrap_row("r2", result, report.level, report.replicates, len(sums.counts))
        rows.append({"model": value, "corrected": row.pop("estimate_bc"), **row})
        run.summary[value].update(r2_ci_low=result.ci_low, r2_ci_high=result.ci_high, r2_corrected=result.estimate_bc,
                                  calibrated=result.calibrated)
        if not result.calibrated:
            few.append((value, len(sums.counts)))
    if few:   # one note for every model it applies to
        run.interval_notes.append(f"{have_groups(few)}: {cautions.FEW_GROUPS}")
    return [entry.section(REPORT_BOOTSTRAP_COLUMNS, rows)]


def _compare(entry: Entry, run: Run) -> list[Section]:
    """Paired jackknife SE and studentized bootstrap interval of R²_a − R²_b for every pair of
    models, paired by group label (the rule embsql.compare_structure uses).  The report sees only the group
    sums, so it cannot tell whether the items are the same: same_items is false when some group's
    size differs, else blank, and shared_items is blank."""
    report = run.report
    if len(run.resampled) < 2:
        return []
    rows = []
    for (a, sums_a), (b, sums_b) in combinations(run.resampled, 2):
        problem = same_groups_problem(a, sums_a, b, sums_b)
        if problem and "compare" in report.sections:
            raise DesignError(problem)
        if problem:
            run.notes.append(f"no paired comparison: {problem}")
            return []
        estimate_a, estimate_b, diff = resampling.paired(sums_a, sums_b, "r2", replicates=report.replicates,
                                                         seed=report.seed, level=report.level)
        same_sizes = bool(np.array_equal(sums_a.counts, sums_b.counts))
        rows.append(compare_row(a, b, estimate_a, estimate_b, diff,
                                items=int(sums_a.counts.sum()) if same_sizes else None,
                                same_items=None if same_sizes else False, shared_items=None))
    return [entry.section(COMPARE_COLUMNS, rows)]


def _ranking(entry: Entry, run: Run) -> list[Section]:
    """Rank confidence sets of R² for every model (embsql.core.model_ranking, the kernel of
    embsql.rank_models), from the group sums the report already has: the structure block of the
    ranking section, which the report assembles once every family has run (reporting.rank_sets).
    Each model's own interval is the bootstrap section's when that ran (the same resamples)."""
    report = run.report
    if len(run.resampled) < 2:
        return []
    first, first_sums = run.resampled[0]
    for other, sums in run.resampled[1:]:
        problem = same_groups_problem(first, first_sums, other, sums)
        if problem and "ranking" in report.sections:
            raise DesignError(f"no ranking: {problem}")
        if problem:
            run.notes.append(f"no ranking of R²: {problem}")
            return []
    own = [(run.summary[value].get("r2_ci_low"), run.summary[value].get("r2_ci_high")) for value, _ in run.resampled]
    rows = structure_rows([value for value, _ in run.resampled], [sums for _, sums in run.resampled], "r2",
                          replicates=report.replicates, seed=report.seed, level=report.level,
                          own=own if all(low is not None for low, _ in own) else None)
    run.ranks.add(rows)
    return []


def _needs_permutations(entry: Entry, run: Run) -> None:
    if not run.report.permutations:
        raise InputError(f"the {entry.name} section needs permutations > 0")


def _permanova(entry: Entry, run: Run) -> list[Section]:
    _needs_permutations(entry, run)
    return [entry.section(("model", "f", "r2", "p_value", "permutations"), run.test_rows("permanova"))]


def _permanova_of(run: Run, value: object, rows: Ordered) -> dict[str, Any]:
    """One model's PERMANOVA row (and its summary's p_value)."""
    report = run.report
    with run.bar.part(("permanova", value)) as tick:
        row = {"model": value, **permanova_row(rows, value, permutations=report.permutations, seed=report.seed,
                                               progress=tick,
                                               stop_after=sequential_stop(report.stop_after, report.permutations))}
    run.summary[value]["p_value"] = row["p_value"]
    return row


def _dispersion(entry: Entry, run: Run) -> list[Section]:
    _needs_permutations(entry, run)
    return [entry.section(("model", "groups", "f", "p_value", "permutations", "groups_left_out", "items_left_out",
                           "note"), run.test_rows("dispersion"))]


def _dispersion_of(run: Run, value: object, rows: Ordered) -> dict[str, Any]:
    """One model's dispersion test row (and its summary's dispersion_p)."""
    report = run.report
    with run.bar.part(("dispersion", value)) as tick:
        test, _ = dispersion_rows(rows, permutations=report.permutations, seed=report.seed, progress=tick,
                                  stop_after=sequential_stop(report.stop_after, report.permutations))
    run.summary[value]["dispersion_p"] = test["p_value"]
    return {"model": value, **test}


# the tests on one model's rows, in the order they run on each model as it is read (Run.test_rows)
ROW_TESTS: dict[str, Callable[[Run, object, Ordered], dict[str, Any]]] = {
    "permanova": _permanova_of, "dispersion": _dispersion_of}


def _retrieval(entry: Entry, run: Run) -> list[Section]:
    """The retrieval layers (embsql.reporting.retrieval), titled and cautioned where the retrieval code is."""
    report = run.report
    if report.queries is None or report.docs is None or run.con is None:
        raise InputError("the retrieval section needs query and document tables (queries=..., docs=...)")
    sections, notes = retrieval_layers(run.con, report.queries, report.docs, report.retrieval, model=report.model,
                                       permutations=report.permutations, seed=report.seed, bad_rows=report.bad_rows)
    run.notes += notes
    return sections


def retrieval_layers(con: duckdb.DuckDBPyConnection, queries: Any, docs: Any, settings: Mapping[str, Any], *,
                     model: str | None, permutations: int, seed: int,
                     bad_rows: str = "error") -> tuple[list[Section], list[str]]:
    """The retrieval layers' sections and notes (embsql.reporting.retrieval.four_layers) from the
    report's retrieval tables and its [report.retrieval] settings; ``bad_rows="skip"`` leaves out the
    queries and documents with an unusable vector, and a note counts them."""
    tables = report_tables(queries, docs, None, settings)   # relevance is the qrels' alone
    layers = four_layers(con, tables.queries, tables.docs, scope=tables.scope, model=model,
                         permutations=permutations, seed=seed, alpha=tables.alpha, skip=Skipped.asked(bad_rows))
    return list(layers.sections), list(layers.meta.get("notes", []))


def _models(entry: Entry, run: Run) -> list[Section]:
    """The models compared on the same items (embsql.reporting.geometry): CKA, Procrustes, k-NN, Mantel."""
    report = run.report
    section, note = models_section(run.con, report.rows_source(run.con) if run.con is not None else report.source,
                                   item=report.item, model=report.model, group=report.group, vector=report.vector,
                                   permutations=report.permutations, seed=report.seed,
                                   asked="models" in report.sections, bad_rows=report.bad_rows)
    run.notes += [note] if note else []
    return [section] if section is not None else []


def _tests_asked(report: Settings) -> bool:
    return bool(report.permutations)


REGISTRY: dict[str, Entry] = {entry.name: entry for entry in (
    Entry("decomposition", "Sum-of-squares decomposition", cautions.DECOMPOSITION, _decomposition),
    Entry("groups", "Per-group spread W̃_g", cautions.GROUPS, _groups),
    Entry("jackknife", "Cluster jackknife (leave one group out)", cautions.JACKKNIFE, _jackknife),
    Entry("bootstrap", "Cluster bootstrap of R²", cautions.BOOTSTRAP, _bootstrap),
    Entry("compare", "Paired comparison of R² across models", cautions.COMPARE, _compare),
    Entry("permanova", "PERMANOVA permutation test", cautions.PERMANOVA, _permanova,
          default=_tests_asked, off_duckdb="drop"),
    Entry("dispersion", "Dispersion test (spread about the group centroids)", cautions.DISPERSION, _dispersion,
          default=_tests_asked, off_duckdb="drop"),
    Entry("models", "", "", _models, default=lambda report: report.item is not None and report.model is not None,
          off_duckdb="drop"),
    Entry("retrieval", "", "", _retrieval, default=lambda report: report.queries is not None, off_duckdb="refuse"),
    # runs by default: a report of one model has nothing to rank (the builder adds no block)
    Entry("ranking", rank_sets.TITLE, cautions.RANKING, _ranking),
)}


# The report's progress bar (progress_plan): each part's share is an estimate of its time, in milliseconds on
# 2 cores under light load, from the cost models the kernels choose their routes by, at the rates measured by
# bench/report_scale.py --whole (2 models, d = 384, groups of 50, 999 permutations, load 2.5-3.5; bench/README.md):
# at 10^5 rows PERMANOVA 55.6 s, the dispersion test 186 s (coordinates route), bootstrap 0.5 s, compare 1.2 s;
# at 10^4 PERMANOVA 6.5 s and the dispersion test 33 s (Gram route).  Rough, and made before anything runs:
# what matters is that the parts' shares are in proportion, so that the bar's rate and remaining time are the run's.
READ_NS = 0.8                   # PERMANOVA: one streamed float read (core.permutation.method_costs' unit)
# the dispersion test, per unit of core.dispersion.dispersion_costs (a multiply-add of a block product), by route
DISPERSION_NS = {"coordinates": 0.05, "gram": 1.7}
RESAMPLE_NS = {"bootstrap": 0.16, "compare": 0.4, "ranking": 0.6}   # per replicate x group x dimension and model
ROW_NS = 1.0                    # a section that reads rows, without a cost model: about one pass over them


def progress_plan(report: Settings, parts: list[tuple[object, GroupSums]],
                  wanted: Sequence[str]) -> list[tuple[Any, str, int]]:
    """The parts of a report's run for its one bar (embsql.progress.RunProgress), in the order they run: the
    sections on the group sums, then each model's PERMANOVA and dispersion test (model by model, as
    Run.test_rows runs them), then the other sections that read rows; (key, label, estimated milliseconds,
    at least 1)."""
    plan: list[tuple[Any, str, int]] = []

    def add(key: Any, label: str, nanoseconds: float) -> None:
        plan.append((key, label, max(1, int(nanoseconds / 1e6))))

    shapes = [(value, sums.counts.astype(np.int64), sums.sums.shape[1]) for value, sums in parts]
    for on_sums in (True, False):
        for name, entry in REGISTRY.items():
            if name not in wanted or (entry.off_duckdb == "run") != on_sums:
                continue
            if name in ROW_TESTS:
                if name != next(test for test in ROW_TESTS if test in wanted):
                    continue        # every row test was planned with the first, model by model
                for (value, counts, dim), test in ((shape, test) for shape in shapes for test in ROW_TESTS
                                                    if test in wanted):
                    codes = np.repeat(np.arange(len(counts)), counts)
                    if test == "permanova":
                        cost = READ_NS * min(method_costs(len(codes), dim, codes, report.permutations).values())
                        add((test, value), permutations_label(value), cost)
                    else:
                        tested = codes[np.repeat(counts >= MIN_GROUP, counts)]
                        tested = np.unique(tested, return_inverse=True)[1]
                        costs = dispersion_costs(len(tested), dim, tested, report.permutations)
                        route = min(costs, key=costs.__getitem__)     # the route choose_dispersion_method takes
                        cost = DISPERSION_NS[route] * costs[route]
                        add((test, value), DISPERSION_LABEL if value is None else f"{DISPERSION_LABEL} ({value})", cost)
                continue
            if name in RESAMPLE_NS:   # replicates x groups x d per model (compare: per pair of models)
                size = sum(report.replicates * len(counts) * dim for _, counts, dim in shapes)
                add(name, name, RESAMPLE_NS[name] * size * (max(1, len(shapes) - 1) if name == "compare" else 1))
            elif on_sums:             # one pass over the group sums
                add(name, name, sum(len(counts) * dim for _, counts, dim in shapes))
            else:
                add(name, name, ROW_NS * sum(int(counts.sum()) * dim for _, counts, dim in shapes))
    return plan
