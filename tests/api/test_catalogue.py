"""The error catalogue (embsql/errors.py): each check has one kind, one template and one class.

* The same bad input raises the same class with the same kind from Python and from SQL
  (embsql.run_sql), for every kind both routes reach.
* Every kind in the catalogue is raised somewhere (no dead entries); every ``embsql:`` message in
  the SQL files carries a kind the catalogue knows; the design checks' wording lives only in the
  catalogue (the SQL calls the generated emb__fail_* macros).
"""

from __future__ import annotations

import importlib.util
import pickle
import re
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from helpers import ROOT

import embsql
from embsql import errors
from embsql.core import design
from embsql.errors import CATALOGUE, VECTOR_KINDS
from embsql.io.udf_errors import result_type, sql_error, sql_errors

SQL_FILES = sorted((ROOT / "sql" / "modules").glob("*.sql")) + sorted((ROOT / "sql" / "python").glob("*.sql"))
CODE_FILES = [p for p in sorted((ROOT / "embsql").rglob("*.py")) if p.name != "errors.py"] \
    + sorted((ROOT / "udfs").glob("*.py")) + [ROOT / "sql" / "build.py"]   # build.py: the stubs of sql/python

RNG = np.random.default_rng(7)
SPREAD = RNG.normal(size=(8, 3))


def vectors(rows, groups, **extra) -> pa.Table:
    lists = [None if r is None else [None if x is None else float(x) for x in r] for r in rows]
    return pa.table({"g": list(groups), "v": pa.array(lists, type=pa.list_(pa.float64())), **extra})


TWO_GROUPS = list("AAAABBBB")
# name -> (table, Python call on (con, "t"), SQL query on t, expected kind)
CASES = {
    "one group": (vectors(SPREAD, "A" * 8), lambda con: embsql.anova(con, "t", group="g", vector="v"),
                  "SELECT * FROM emb_anova('t', 'g', 'v')", "design.one_group"),
    "one group, permutation test": (vectors(SPREAD, "A" * 8), lambda con: embsql.permanova(con, "t", group="g", vector="v"),
                                    "SELECT * FROM emb_dispersion('t', 'g', 'v')", "design.one_group"),
    "n = G": (vectors(SPREAD[:4], "ABCD"), lambda con: embsql.anova(con, "t", group="g", vector="v"),
              "SELECT * FROM emb_anova('t', 'g', 'v')", "design.no_residual_df"),
    "n = G, permutation test": (vectors(SPREAD[:4], "ABCD"), lambda con: embsql.dispersion(con, "t", group="g", vector="v"),
                                "SELECT * FROM emb_dispersion('t', 'g', 'v')", "design.no_residual_df"),
    "identical vectors": (vectors([[1, 0, 0]] * 8, TWO_GROUPS), lambda con: embsql.anova(con, "t", group="g", vector="v"),
                          "SELECT * FROM emb_anova('t', 'g', 'v')", "design.identical"),
    "jackknife on two groups": (vectors(SPREAD, TWO_GROUPS), lambda con: embsql.jackknife(con, "t", group="g", vector="v"),
                                "SELECT * FROM emb_jackknife('t', 'g', 'v')", "design.min_groups"),
    "label NULL": (vectors(SPREAD, ["A", None] + TWO_GROUPS[2:]), lambda con: embsql.anova(con, "t", group="g", vector="v"),
                   "SELECT * FROM emb_anova('t', 'g', 'v')", "label.null"),
    "column missing": (vectors(SPREAD, TWO_GROUPS), lambda con: embsql.anova(con, "t", group="nope", vector="v"),
                       "SELECT * FROM emb_anova('t', 'nope', 'v')", "column.missing"),
    "column type": (pa.table({"g": TWO_GROUPS, "v": ["x"] * 8}), lambda con: embsql.anova(con, "t", group="g", vector="v"),
                    "SELECT * FROM emb_anova('t', 'g', 'v')", "column.type"),
    "no rows": (vectors(SPREAD[:0], []), lambda con: embsql.anova(con, "t", group="g", vector="v"),
                "SELECT * FROM emb_anova('t', 'g', 'v')", "source.empty"),
    "vector of another length": (vectors(list(SPREAD[:7]) + [[1.0, 2.0]], TWO_GROUPS),
                                 lambda con: embsql.anova(con, "t", group="g", vector="v"),
                                 "SELECT * FROM emb_anova('t', 'g', 'v')", "vector.length"),
    "permutations 0": (vectors(SPREAD, TWO_GROUPS), lambda con: embsql.permanova(con, "t", group="g", vector="v", permutations=0),
                       "SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 0)", "argument.permutations"),
    "seed -1": (vectors(SPREAD, TWO_GROUPS), lambda con: embsql.permanova(con, "t", group="g", vector="v", seed=-1),
                "SELECT * FROM emb_permanova('t', 'g', 'v', seed := -1)", "argument.seed"),
    "level 2": (vectors(SPREAD, list("AABBCCDD")), lambda con: embsql.bootstrap(con, "t", group="g", vector="v", level=2.0),
                "SELECT * FROM emb_bootstrap('t', 'g', 'v', level := 2.0)", "argument.level"),
    "one model": (pa.table({"g": TWO_GROUPS, "v": pa.array(SPREAD.tolist()), "m": ["a"] * 8, "i": list(range(8))}),
                  lambda con: embsql.compare_structure(con, "t", group="g", vector="v", model="m", item="i"),
                  "SELECT * FROM emb_compare_structure('t', 'g', 'v', 'm', 'i')", "model.too_few"),
    "one model, agreement": (pa.table({"v": pa.array(SPREAD.tolist()), "m": ["a"] * 8, "i": list(range(8))}),
                             lambda con: embsql.knn_agreement(con, "t", item="i", model="m", vector="v", k=2),
                             "SELECT * FROM emb_knn_agreement('t', 'i', 'm', 'v', k := 2)", "model.too_few"),
}
for word, bad in (("NULL", None), ("zero-length", [0.0, 0.0, 0.0]), ("NaN", [float("nan"), 1, 0]),
                  ("infinite", [float("inf"), 1, 0]), ("NULL-element", [None, 1.0, 0.0])):
    CASES[f"{word} vector"] = (vectors(list(SPREAD[:7]) + [bad], TWO_GROUPS), lambda con: embsql.anova(con, "t", group="g",
                                                                                                       vector="v"),
                               "SELECT * FROM emb_anova('t', 'g', 'v')", VECTOR_KINDS[word])


@pytest.mark.parametrize("name", CASES)
def test_the_same_bad_input_gives_the_same_class_and_kind_from_python_and_sql(con, name):
    table, python, query, kind = CASES[name]
    con.register("t", table)
    with pytest.raises(embsql.EmbsqlError) as from_python:
        python(con)
    with pytest.raises(embsql.EmbsqlError) as from_sql:
        embsql.run_sql(con, query)
    cls = CATALOGUE[kind].error
    assert type(from_python.value) is cls and from_python.value.kind == kind, (from_python.value, from_python.value.kind)
    assert isinstance(from_sql.value, cls) and from_sql.value.kind == kind, (from_sql.value, from_sql.value.kind)
    assert isinstance(from_sql.value, embsql.SqlInputError)       # the SQL family still catches it
    assert str(from_sql.value).startswith(f"embsql: [{kind}] ")


def test_one_group_is_a_design_error_from_both_routes(con):
    """The point of the catalogue: ``except DesignError`` catches it whichever way it was asked."""
    con.register("t", vectors(SPREAD, "A" * 8))
    for ask in (lambda: embsql.anova(con, "t", group="g", vector="v"),
                lambda: embsql.run_sql(con, "SELECT * FROM emb_anova('t', 'g', 'v')"),
                lambda: embsql.run_sql(con, "SELECT * FROM emb_icc('t', 'g', 'v')"),
                lambda: embsql.run_sql(con, "SELECT * FROM emb_permanova('t', 'g', 'v')")):
        with pytest.raises(embsql.DesignError, match="has only one group"):
            ask()


def test_the_design_template_words_both_routes_alike(con):
    con.register("t", vectors(SPREAD[:4], "ABCD"))
    with pytest.raises(embsql.DesignError) as python:
        embsql.anova(con, "t", group="g", vector="v")
    with pytest.raises(embsql.DesignError) as sql:
        embsql.run_sql(con, "SELECT * FROM emb_anova('t', 'g', 'v')")
    assert str(python.value) == ("every group has one row (n = G = 4): no within-group degrees of freedom, so SS_W "
                                 "and F are undefined")
    assert str(sql.value) == ('embsql: [design.no_residual_df] every group in "g" has one row (n = G = 4): no '
                              "within-group degrees of freedom, so SS_W and F are undefined")


def test_distance_table_errors_are_distance_table_errors(con):
    con.register("lab", pa.table({"id": [1, 2, 3, 4], "g": list("AABB")}))
    con.register("dist", pa.table({"i": [1, 1, 1, 2, 2, 3], "j": [2, 3, 4, 3, 4, 5], "d": [1.0] * 6}))
    with pytest.raises(embsql.DistanceTableError, match=r"^embsql: \[distance\.unlabelled\] id 5 in distance table"):
        embsql.run_sql(con, "SELECT * FROM emb_anova_dist('dist', 'lab', 'g')")


# ---- the catalogue itself ------------------------------------------------------------------

def _code_text() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in CODE_FILES + SQL_FILES)


def _dynamic_argument_kinds(text: str) -> set[str]:
    """argument.<name> kinds raised with the name in a variable: emb__whole_argument(x, 'seed') in SQL,
    _whole("seed", ...) in embsql.core.arguments."""
    names = re.findall(r"emb__(?:whole|text)_argument\([^,()]+, '(\w+)'\)", text) + re.findall(r'_whole\("(\w+)"', text)
    return {f"argument.{name}" for name in names}


def test_every_kind_in_the_catalogue_is_raised_somewhere():
    text = _code_text()
    used = {kind for kind in CATALOGUE
            if re.search(rf"""["'\[]{re.escape(kind)}["'\]]""", text)
            or re.search(rf"\b{build_module().macro_name(kind)}\(", text)}
    if "VECTOR_KINDS[" in text:                    # a vector's word names its kind (core/sums.py)
        used |= set(VECTOR_KINDS.values())
    used |= _dynamic_argument_kinds(text) & set(CATALOGUE)
    assert set(CATALOGUE) - used == set()


def test_every_check_has_a_class_and_a_template_whose_fields_it_names():
    for kind, check in CATALOGUE.items():
        assert re.fullmatch(r"[a-z]+\.[a-z_]+", kind), kind
        assert issubclass(check.error, embsql.EmbsqlError)
        assert "embsql:" not in check.template and not check.template.endswith(".")
        filled = errors.error(kind, **{field: f"<{field}>" for field in check.fields()}
                              | {f: 0.5 for f in ("spread", "resolution")})
        assert type(filled) is check.error and filled.kind == kind


SQL_MESSAGE = re.compile(r"'embsql: ?([^']{0,40})")


def test_every_embsql_message_in_the_sql_files_carries_a_known_kind():
    built = ROOT / "sql" / "embsql.sql"
    for path in SQL_FILES + [built]:
        for line_number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("--"):
                continue                                    # a comment (the reference's doc blocks) raises nothing
            for rest in SQL_MESSAGE.findall(line):
                tag = re.match(r"\[([\w.{}]+)\] ", rest)
                assert tag, f"{path.name}:{line_number}: an embsql: message without a [kind]: {line.strip()}"
                kind = tag.group(1)
                if kind == "{}":
                    assert "emb__vector_kind(" in line or "emb__vector_kind(" in _next_line(path, line_number)
                elif kind == "argument.{}":
                    assert path.name == "60_inference.sql"
                else:
                    assert kind in CATALOGUE, f"{path.name}:{line_number}: unknown kind {kind}"


def _next_line(path: Path, line_number: int) -> str:
    return path.read_text(encoding="utf-8").splitlines()[line_number]


def test_udfs_raise_no_embsql_message_of_their_own():
    for path in sorted((ROOT / "udfs").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "embsql:" not in text.replace('"embsql: [', ""), path.name
        assert "except " not in text or path.name == "retrieval.py", path.name   # retrieval adds the table name
        for name in re.findall(r'"function": (\w+)', text):
            # a kernel, or an adapter that returns its decorated inner kernel (udfs/declared.py)
            decorated = (re.search(rf"@sql_errors(\([^)]*\))?\ndef {name}\(", text)
                         or re.search(rf"\ndef {name}\(.*?\n    @sql_errors(\([^)]*\))?\n    def kernel\("
                                      r".*?\n    return kernel\n", text, re.S))
            assert decorated, f"{path.name}: {name} is not decorated"


def build_module():
    spec = importlib.util.spec_from_file_location("sql_build", ROOT / "sql" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_design_wording_lives_only_in_the_catalogue():
    """The SQL files call emb__fail_design_* instead of spelling a design message out."""
    for path in SQL_FILES:
        text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                          if not line.lstrip().startswith("--"))     # the doc blocks may describe the errors
        for phrase in ("has only one group", "no within-group degrees of freedom", "identical to within floating",
                       "every distance is 0", "are equal (MS_B", "has no rows"):
            assert phrase not in text, f"{path.name} spells out '{phrase}'; call the catalogue's macro"
    built = (ROOT / "sql" / "embsql.sql").read_text(encoding="utf-8")
    for kind in CATALOGUE:
        assert f"MACRO {build_module().macro_name(kind)}(" in built


def test_generated_macros_word_the_message_like_python():
    con = duckdb.connect()
    con.execute((ROOT / "sql" / "embsql.sql").read_text(encoding="utf-8"))
    with pytest.raises(duckdb.Error) as info:
        con.sql("SELECT emb__fail_design_one_group('group column \"g\"', ' for by value 2', 'the decomposition')").fetchall()
    python = errors.error("design.one_group", subject='group column "g"', where=" for by value 2",
                          needs="the decomposition")
    assert str(info.value).endswith(f"embsql: [design.one_group] {python}")
    assert errors.from_sql(str(info.value)).kind == "design.one_group"


# ---- the mapping back and the UDF adapter --------------------------------------------------

def test_run_sql_maps_kinds_back_and_keeps_untagged_messages_sql_input_errors():
    line = "embsql: [design.one_group] the group column has only one group: ICC needs at least two"
    raised = errors.from_sql("Invalid Input Error: " + line + "\nLINE 1: ...")
    assert isinstance(raised, embsql.DesignError) and isinstance(raised, embsql.SqlInputError)
    assert str(raised) == line and raised.kind == "design.one_group"
    assert type(errors.from_sql("embsql: something")) is embsql.SqlInputError
    assert isinstance(errors.from_sql("embsql: [vector.other] x"), embsql.BadVectorError)    # by family
    assert pickle.loads(pickle.dumps(raised)).kind == "design.one_group"


def test_udf_adapter_returns_embsql_errors_and_interrupts_as_data_and_passes_bugs_through():
    """A kernel's result travels as STRUCT(error, value): the error is the embsql: message (every row
    of the chunk carries it), which the calling macro raises with SQL's error()."""
    @sql_errors(stopped="the permutation test")
    def kernel(what):
        if what[0].as_py() == "design":
            design.check_groups(1, 5, needs="the test")
        if what[0].as_py() == "interrupt":
            raise KeyboardInterrupt
        if what[0].as_py() == "bug":
            raise ZeroDivisionError
        return pa.array([1.5] * len(what))

    def rows(what):
        return kernel(pa.array([what, "x"])).to_pylist()

    assert rows("design") == [{"error": "embsql: [design.one_group] the group column has only one group: the test "
                                        "needs at least two", "value": None}] * 2
    assert rows("interrupt") == [{"error": "embsql: [query.interrupted] the query was interrupted; the permutation "
                                           "test stopped", "value": None}] * 2
    assert rows("fine") == [{"error": None, "value": 1.5}] * 2
    with pytest.raises(ZeroDivisionError):
        rows("bug")
    assert sql_error(embsql.InputError("x", kind="source.empty")) == "embsql: [source.empty] x"
    assert result_type("DOUBLE[]") == "STRUCT(error VARCHAR, value DOUBLE[])"


def test_the_sql_readme_lists_every_kind():
    text = (ROOT / "sql" / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([a-z]+\.[a-z_]+)` \| (\w+) \|", text, flags=re.M))
    assert listed == {(kind, check.error.__name__) for kind, check in CATALOGUE.items()}
