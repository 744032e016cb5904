"""The Python faces are plain annotated functions: the source (or sources) by position, every column
by name, in the one vocabulary (embsql.vocabulary).

- A keyword a face does not take (an old spelling such as ``by=``, a misspelling) is Python's own
  TypeError; a column passed by position is refused; mypy flags both.
- ``inspect.signature`` shows the real parameters: keyword-only after the source, and no ``**kwargs``.
- The output's model column keeps the input column's name; a model column named like an output
  column is refused (``column.collision``), and a NULL model value is refused naming its row
  (``label.null``), on every face.
- A face's own warning points at the caller's line, and no face touches the warning filters.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import re
import subprocess
import sys
import warnings

import numpy as np
import pyarrow as pa
import pytest
from helpers import ROOT

import embsql
from embsql import BadLabelError, EmbsqlError, InputError
from embsql.vocabulary import NAMES

FACE_MODULES = ["embsql.api.decomposition", "embsql.api.permutation", "embsql.api.permanova_terms",
                "embsql.api.resampling", "embsql.api.agreement", "embsql.api.geometry", "embsql.api.pairwise_permanova"]


def _table(model: str = "m", nulls: int | None = None) -> pa.Table:
    """Two models (3 and 5 dimensions) of the same 24 items in 4 groups; ``nulls``: that row's model is NULL."""
    rng = np.random.default_rng(3)
    rows = []
    for name, d in (("a", 3), ("b", 5)):
        centres = rng.standard_normal((4, d))
        for i in range(24):
            rows.append({model: name, "g": f"t{i % 4}", "item": f"i{i:02d}", "lang": ("en", "fr")[i // 4 % 2],
                         "v": (centres[i % 4] + 0.8 * rng.standard_normal(d)).tolist()})
    if nulls is not None:
        rows[nulls][model] = None
    return pa.Table.from_pylist(rows)


def _registered(con, model: str, nulls: int | None = None) -> str:
    """The name of _table(model, nulls) on ``con`` (registered once)."""
    name = f"t_{model.encode().hex()}_{nulls}"
    if name not in {row[0] for row in con.sql("SELECT view_name FROM duckdb_views()").fetchall()}:
        con.register(name, _table(model, nulls))
    return name


@pytest.fixture(scope="module")
def con():
    connection = embsql.connect()
    connection.register("t", _table())
    connection.execute("CREATE TABLE labels AS SELECT item AS id, g FROM t WHERE m = 'a'")
    connection.execute("CREATE TABLE dist AS SELECT a.item AS i, b.item AS j, list_cosine_distance(a.v, b.v) AS d "
                       "FROM t a JOIN t b ON a.m = b.m AND a.m = 'a' AND a.item < b.item")
    yield connection
    connection.close()


# every public face of this area: how to call it (small settings), with the model column given as ``model``
CALLS = {
    "anova": lambda con, src, model: embsql.anova(con, src, group="g", vector="v", model=model),
    "groups": lambda con, src, model: embsql.groups(con, src, group="g", vector="v", model=model),
    "permanova": lambda con, src, model: embsql.permanova(con, src, group="g", vector="v", model=model, permutations=19,
                                                          check_dispersion=False),
    "permanova_welch": lambda con, src, model: embsql.permanova_welch(con, src, group="g", vector="v", model=model,
                                                                      permutations=19),
    "permanova_terms": lambda con, src, model: embsql.permanova_terms(con, src, terms=["g", "lang"], vector="v",
                                                                      model=model, permutations=19),
    "dispersion": lambda con, src, model: embsql.dispersion(con, src, group="g", vector="v", model=model,
                                                            permutations=19),
    "jackknife": lambda con, src, model: embsql.jackknife(con, src, group="g", vector="v", model=model),
    "bootstrap": lambda con, src, model: embsql.bootstrap(con, src, group="g", vector="v", model=model, replicates=50),
    "pairwise_permanova": lambda con, src, model: embsql.pairwise_permanova(con, src, group="g", vector="v", model=model,
                                                                            permutations=19),
    "compare_structure": lambda con, src, model: embsql.compare_structure(con, src, group="g", vector="v", model=model,
                                                                          item="item",
                                                      replicates=50),
    "knn_agreement": lambda con, src, model: embsql.knn_agreement(con, src, item="item", model=model, vector="v", k=3),
    "mantel": lambda con, src, model: embsql.mantel(con, src, item="item", model=model, vector="v", permutations=19),
    "cka": lambda con, src, model: embsql.cka(con, src, item="item", model=model, vector="v", permutations=19),
    "procrustes": lambda con, src, model: embsql.procrustes(con, src, item="item", model=model, vector="v",
                                                            permutations=19),
}
FACES = {name: getattr(embsql, name) for name in [*CALLS, "anova_dist"]}
PER_MODEL = ["anova", "groups", "permanova", "permanova_welch", "permanova_terms", "dispersion", "jackknife",
             "bootstrap", "pairwise_permanova"]         # one row (or set of rows) per model: the model column first
PER_PAIR = ["compare_structure", "knn_agreement", "mantel", "cka", "procrustes"]      # model_a, model_b


def _tables(result) -> list:
    return list(result.tables().values()) if isinstance(result, embsql.DispersionResult) else [result]


# ---------------------------------------------------------------------------------------------- unknown keywords

# (face, a keyword it does not take): names the faces took before 0.1.0, and a misspelling
OLD = [
    ("anova", "by"),
    ("anova", "key"),
    ("groups", "by"),
    ("groups", "key"),
    ("anova_dist", "d"),
    ("anova_dist", "id"),
    ("permanova", "by"),
    ("permanova", "terms"),
    ("permanova", "by_terms"),
    ("permanova", "statistic"),
    ("permanova", "null_method"),
    ("permanova", "method"),
    ("dispersion", "by"),
    ("jackknife", "by"),
    ("jackknife", "stat"),
    ("bootstrap", "by"),
    ("bootstrap", "stat"),
    ("compare_structure", "stat"),
    ("pairwise_permanova", "pairs"),
    ("pairwise_permanova", "by"),
    ("permanova_terms", "by_terms"),
    ("permanova_terms", "by"),
    ("knn_agreement", "item_col"),
    ("cka", "model_col"),
    ("anova", "modle"),
]


# each face's source and required keywords: enough for Python to call it (the unknown keyword is refused first)
REQUIRED = {
    "anova": ("t", dict(group="g", vector="v")), "groups": ("t", dict(group="g", vector="v")),
    "anova_dist": ("dist", dict(labels="labels", group="g")), "permanova": ("t", dict(group="g", vector="v")),
    "dispersion": ("t", dict(group="g", vector="v")), "jackknife": ("t", dict(group="g", vector="v")),
    "bootstrap": ("t", dict(group="g", vector="v")), "compare_structure": ("t", dict(group="g", vector="v", model="m",
                                                                                     item="item")),
    "pairwise_permanova": ("t", dict(group="g", vector="v")), "permanova_terms": ("t", dict(terms=["g"], vector="v")),
    "knn_agreement": ("t", dict(item="item", model="m", vector="v")), "cka": ("t", dict(item="item", model="m", vector="v")),
}


@pytest.mark.parametrize("face,old", OLD, ids=[f"{f}-{o}" for f, o in OLD])
def test_an_unknown_keyword_is_pythons_type_error(con, face, old):
    source, keywords = REQUIRED[face]
    with pytest.raises(TypeError) as raised:
        FACES[face](con, source, **keywords, **{old: "m"})
    assert str(raised.value) == f"{face}() got an unexpected keyword argument '{old}'"
    assert not isinstance(raised.value, EmbsqlError)


@pytest.mark.parametrize("face,args", [
    ("anova", ("g", "v")), ("groups", ("g", "v")), ("permanova", ("g", "v")), ("dispersion", ("g", "v")),
    ("jackknife", ("g", "v")), ("bootstrap", ("g", "v")), ("compare_structure", ("g", "v", "m", "item")),
    ("knn_agreement", ("item", "m", "v")), ("mantel", ("item", "m", "v")), ("anova_dist", ("labels", "g")),
    ("cka", ("item", "m", "v")), ("pairwise_permanova", ("g", "v")), ("permanova_welch", ("g", "v")),
])
def test_a_column_by_position_is_refused(con, face, args):
    first = "dist" if face == "anova_dist" else "t"
    with pytest.raises(TypeError, match=rf"^{face}\(\) takes 2 positional arguments but {2 + len(args)} were given$"):
        FACES[face](con, first, *args)


def test_mypy_flags_an_old_keyword_and_a_positional_column(tmp_path):
    """A user's script type-checked against the package: both mistakes are errors, on their lines."""
    pytest.importorskip("mypy")
    snippet = tmp_path / "user_script.py"
    snippet.write_text("import embsql\n"
                       "con = embsql.connect()\n"
                       "embsql.anova(con, 'emb', group='topic', vector='v', by='model')\n"
                       "embsql.anova(con, 'emb', 'topic', 'v')\n"
                       "embsql.permanova(con, 'emb', group='topic', vector='v', statistic='welch')\n"
                       "embsql.anova(con, 'emb', group='topic', vector='v', model='model')\n")
    # the libraries' own stubs are not what is checked here: skipping them keeps the run to seconds
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nfollow_imports = silent\nignore_missing_imports = true\n"
                      "[mypy-numpy.*,pyarrow.*,duckdb.*,pandas.*,polars.*,sqlglot.*,matplotlib.*,rich.*]\n"
                      "follow_imports = skip\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), "--cache-dir",
                             str(tmp_path / "cache"), str(snippet)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 1, result.stdout + result.stderr
    lines = {int(line.split(":")[1]) for line in errors}
    assert lines == {3, 4, 5}, result.stdout                   # the last call is the documented form
    assert any(':3: error: Unexpected keyword argument "by" for "anova"' in line for line in errors), result.stdout
    assert any(':5: error: Unexpected keyword argument "statistic" for "permanova"' in line for line in errors), result.stdout
    assert any(":4: error: Too many positional arguments for \"anova\"" in line for line in errors), result.stdout


# ---------------------------------------------------------------------------------------------- the signatures

@pytest.mark.parametrize("name", sorted(FACES))
def test_the_signature_is_the_real_one(name):
    face = FACES[name]
    parameters = list(inspect.signature(face).parameters.values())
    assert [p.kind for p in parameters[:2]] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 2     # con, the source
    assert parameters[0].name == "con" and parameters[1].name in ("source", "distances")
    assert all(p.kind is p.KEYWORD_ONLY for p in parameters[2:])                 # no **kwargs either
    assert not hasattr(face, "__wrapped__")                     # no decorator between the user and the function
    hints = inspect.get_annotations(face, eval_str=True)
    assert set(hints) == {p.name for p in parameters} | {"return"}     # every parameter annotated
    assert [p.name for p in parameters if p.name not in NAMES] == []


@pytest.mark.parametrize("name", sorted(FACES))
def test_no_public_face_takes_more_than_12_parameters(name):
    """compare (13, with con and source) takes the most: every one a choice the user makes (the
    statistic, the bootstrap's replicates, seed and level, common items, the size rule, marginal or
    simultaneous intervals); the others take 11 or fewer.  ``bad_rows`` is not counted: every face that
    reads vectors takes it, with the same meaning, so it adds no choice to learn per face."""
    count = len([p for p in inspect.signature(FACES[name]).parameters if p != "bad_rows"])
    assert count <= (13 if name == "compare_structure" else 11), count


@pytest.mark.parametrize("module", FACE_MODULES + ["embsql.result_table", "embsql.vocabulary"])
def test_the_docstring_examples_run(module):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # an example that warns is not an example to copy
        failed, attempted = doctest.testmod(importlib.import_module(module))
    assert failed == 0


@pytest.mark.parametrize("name", sorted(FACES))
def test_the_docstring_has_every_numpydoc_section(name):
    doc = inspect.getdoc(FACES[name])
    for section in ("Parameters", "Returns", "Raises", "Examples"):
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, section
    for parameter in inspect.signature(FACES[name]).parameters:
        assert parameter in doc.split("Returns\n")[0], parameter


# ---------------------------------------------------------------------------------------------- the model column

@pytest.mark.parametrize("face", PER_MODEL)
# (a name with embsql's own prefix __emb_ is refused on every route: tests/api/test_model_names_python.py)
@pytest.mark.parametrize("model", ["model name", "select", 'the "m"'])
def test_the_model_column_keeps_its_name(con, face, model):
    for got, expected in zip(_tables(CALLS[face](con, _registered(con, model), model)), _tables(CALLS[face](con, "t", "m"))):
        assert got.columns[0] == model and got.columns[1:] == expected.columns[1:]
        assert got.column(model) == expected.column("m") and set(got.column(model)) == {"a", "b"}
        assert got.rows == expected.rows


@pytest.mark.parametrize("face", PER_PAIR)
def test_the_pairwise_faces_name_models_model_a_and_model_b(con, face):
    result = CALLS[face](con, _registered(con, "model_a"), "model_a")
    assert result.columns[:2] == ("model_a", "model_b") and (result.column("model_a")[0], result.column("model_b")[0]) \
        == ("a", "b")


# a model column named like one of each face's output columns
COLLISIONS = [("anova", "n"), ("anova", "r2"), ("groups", "w"), ("groups", "group"), ("permanova", "p_value"),
              ("permanova", "f"), ("permanova_welch", "w_d"), ("permanova_terms", "term"), ("dispersion", "note"),
              ("dispersion", "mean_distance"), ("jackknife", "se"), ("jackknife", "statistic"), ("bootstrap", "ci_low"),
              ("pairwise_permanova", "group_b"), ("pairwise_permanova", "r2")]


@pytest.mark.parametrize("face,model", COLLISIONS, ids=[f"{f}-{m}" for f, m in COLLISIONS])
def test_a_model_column_named_like_an_output_column_is_refused(con, face, model):
    with pytest.raises(InputError) as raised:
        CALLS[face](con, _registered(con, model), model)
    assert raised.value.kind == "column.collision"
    assert str(raised.value) == (f'model column "{model}" has the name of one of {face}\'s output columns (the output '
                                 f'keeps the model column\'s name); rename it, e.g. SELECT "{model}" AS model_name')


@pytest.mark.parametrize("face", sorted(CALLS))
@pytest.mark.parametrize("row", [0, 30])
def test_a_null_model_is_refused_naming_the_column_and_the_row(con, face, row):
    with pytest.raises(BadLabelError) as raised:
        CALLS[face](con, _registered(con, "m", row), "m")
    assert raised.value.kind == "label.null"
    assert re.match(rf"model column 'm' has a NULL label at row {row + 1}\b", str(raised.value))    # counted from 1


def test_a_nan_model_is_refused_too():
    table = _table("m").drop(["m"]).append_column("m", pa.array([0.5] * 20 + [float("nan")] + [1.5] * 27))
    con = embsql.connect()
    con.register("t", table)
    with pytest.raises(BadLabelError, match=r"^model column 'm' has a NaN label at row 21 \("):
        embsql.anova(con, "t", group="g", vector="v", model="m")


# ---------------------------------------------------------------------------------------------- warnings

def test_a_faces_warning_points_at_the_callers_line_and_the_filters_stay():
    rng = np.random.default_rng(0)
    spread = np.concatenate([0.05 * rng.standard_normal((30, 3)), 3 * rng.standard_normal((30, 3))]) + [4.0, 0, 0]
    con = embsql.connect()
    con.register("spread", pa.table({"g": ["x"] * 30 + ["y"] * 30, "v": spread.tolist()}))
    filters = list(warnings.filters)
    with pytest.warns(UserWarning, match="dispersion test is significant") as caught:
        embsql.permanova(con, "spread", group="g", vector="v", permutations=99)
    assert {w.filename for w in caught} == {__file__}
    assert warnings.filters == filters


def test_a_warning_filter_of_the_caller_applies_inside_a_face():
    """Nothing resets the filters for the length of a call: an 'error' filter turns the face's own
    warning into an exception at the caller's line, as for any library function."""
    rng = np.random.default_rng(0)
    spread = np.concatenate([0.05 * rng.standard_normal((30, 3)), 3 * rng.standard_normal((30, 3))]) + [4.0, 0, 0]
    con = embsql.connect()
    con.register("spread", pa.table({"g": ["x"] * 30 + ["y"] * 30, "v": spread.tolist()}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="dispersion test is significant"):
            embsql.permanova(con, "spread", group="g", vector="v", permutations=99)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            embsql.permanova(con, "spread", group="g", vector="v", permutations=99)


# ---------------------------------------------------------------------------------------------- the result objects

def test_dispersion_returns_named_tables(con):
    result = embsql.dispersion(con, "t", group="g", vector="v", model="m", permutations=19)
    assert isinstance(result.test, embsql.ResultTable) and isinstance(result.groups, embsql.ResultTable)
    assert result.test.columns == ("m", "groups", "f", "p_value", "permutations", "groups_left_out", "items_left_out",
                                   "note")
    assert result.groups.columns == ("m", "group", "n_g", "mean_distance", "in_test") and len(result.groups) == 8
    shown = repr(result)
    assert shown.startswith(".test: dispersion\n") and "\n\n.groups: dispersion groups\n" in shown
    assert repr(result.test) in shown and repr(result.groups) in shown
    html = result._repr_html_()
    assert html.count("<table>") == 2 and "<code>.test</code>" in html and "<code>.groups</code>" in html
    with pytest.raises(AttributeError):
        result.test = result.groups      # frozen
    with pytest.raises(TypeError):
        _, _ = result                    # not a tuple any more: the tables are named


def test_permanova_and_permanova_welch_have_one_schema_each(con):
    pseudo = embsql.permanova(con, "t", group="g", vector="v", model="m", permutations=19, check_dispersion=False)
    welch = embsql.permanova_welch(con, "t", group="g", vector="v", model="m", permutations=19)
    assert pseudo.columns == ("m", "n", "groups", "ss_t", "ss_w", "ss_b", "r2", "r2_null", "f", "v",
                              "mean_resultant_length", "w_bar", "p_value", "permutations")
    assert welch.columns == ("m", "n", "groups", "w_d", "p_value", "permutations", "null_method", "groups_left_out",
                             "items_left_out", "note")
    assert "f" not in welch.columns          # pseudo-F is not the tested statistic there
    assert all(0 < p <= 1 for p in pseudo.column("p_value") + welch.column("p_value"))
