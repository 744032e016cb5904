"""The one vocabulary (embsql.vocabulary), held on the Python package: every public function's
parameter names and every public result object's fields are names the vocabulary defines, and a
keyword a function does not take is Python's own TypeError (no catch-all that turns it into anything else)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil

import pytest
from helpers import ROOT

import embsql
from embsql.vocabulary import NAMES, OPTIONS, OUTPUTS, RESULTS, ROLE_DEFAULTS

PUBLIC = {name: getattr(embsql, name) for name in embsql.__all__}
CALLABLES = {name: obj for name, obj in PUBLIC.items()
             if callable(obj) and not (inspect.isclass(obj) and issubclass(obj, BaseException))}
DATACLASSES = {name: obj for name, obj in PUBLIC.items() if dataclasses.is_dataclass(obj)}

# public functions that still take **kwargs, and the area that is replacing them with named
# parameters; remove an entry when its function no longer does (the test below says so)
KWARGS_PENDING: dict[str, str] = {}


def _parameters(obj) -> list[inspect.Parameter]:
    return list(inspect.signature(obj).parameters.values())


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_parameter_name_is_in_the_vocabulary(name):
    names = [p.name for p in _parameters(CALLABLES[name]) if p.kind is not p.VAR_KEYWORD and p.name != "self"]
    assert [n for n in names if n not in NAMES] == [], f"embsql.{name}: add the name to embsql/vocabulary.py or rename it"


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_no_public_function_hides_its_keywords(name):
    hidden = [p.name for p in _parameters(CALLABLES[name]) if p.kind is p.VAR_KEYWORD]
    if name in KWARGS_PENDING:
        assert hidden, f"embsql.{name} no longer takes **{hidden}: remove it from KWARGS_PENDING"
    else:
        assert hidden == [], f"embsql.{name} takes **{hidden[0]}"


@pytest.mark.parametrize("name", sorted(set(CALLABLES) - set(KWARGS_PENDING)))
@pytest.mark.parametrize("keyword", ["by", "group_col", "no_such_argument"])
def test_an_unknown_keyword_is_pythons_type_error(name, keyword):
    """An old spelling (by=) or a misspelling is refused by Python itself, before the body runs: the
    TypeError that names the keyword (and that mypy reports from the signature), not an embsql class."""
    with pytest.raises(TypeError) as raised:
        CALLABLES[name](**{keyword: "x"})
    assert type(raised.value) is TypeError
    assert str(raised.value).endswith(f"got an unexpected keyword argument '{keyword}'"), str(raised.value)


FUNCTIONS = {name: obj for name, obj in CALLABLES.items() if inspect.isfunction(obj)}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_vector_model_and_item_are_required_or_none(name):
    """One convention for the column roles: a face never defaults a column to a conventional name
    ("vector", "model", "item", "id"), which would read the wrong column of a table that has one."""
    given = {p.name: "required" if p.default is p.empty else repr(p.default)
             for p in _parameters(FUNCTIONS[name]) if p.name in ROLE_DEFAULTS}
    assert {role: d for role, d in given.items() if d not in ROLE_DEFAULTS[role]} == {}, f"embsql.{name}"


def test_the_role_convention_has_both_kinds_in_use():
    """The convention is not vacuous: faces require each role, and others leave model and item optional."""
    kinds = {(p.name, "required" if p.default is p.empty else repr(p.default))
             for f in FUNCTIONS.values() for p in _parameters(f) if p.name in ROLE_DEFAULTS}
    assert {("vector", "required"), ("model", "required"), ("item", "required"),
            ("model", "None"), ("item", "None")} <= kinds


@pytest.mark.parametrize("name", sorted(DATACLASSES))
def test_every_field_of_a_result_object_is_in_the_vocabulary(name):
    fields = [field.name for field in dataclasses.fields(DATACLASSES[name])]
    assert [f for f in fields if f not in NAMES] == [], f"embsql.{name}: add the field to embsql/vocabulary.py"


def test_every_name_has_a_meaning_and_no_old_name_is_current():
    assert all(isinstance(meaning, str) and len(meaning) > 10 for meaning in NAMES.values())
    assert set(RESULTS) <= set(NAMES)


# ---- the output vocabulary ------------------------------------------------------------------------

def _sql_columns() -> dict[str, list[str]]:
    """Each SQL function's documented output columns (the @column lines of its doc block)."""
    columns: dict[str, list[str]] = {}
    for path in sorted((ROOT / "sql").glob("*/*.sql")):
        function = None
        for line in path.read_text().splitlines():
            if line.startswith("-- @function "):
                function = line.split()[2].split("(")[0]
            elif line.startswith("-- @column ") and function:
                columns.setdefault(function, []).append(line.split()[2])
    return columns


def _declared_columns() -> dict[str, tuple[str, ...]]:
    """Every module-level *_COLUMNS tuple of names in the package: the Python faces' and the report's columns."""
    declared = {}
    for module in pkgutil.walk_packages(embsql.__path__, "embsql."):
        if module.name.endswith("__main__"):
            continue
        for key, value in vars(importlib.import_module(module.name)).items():
            if key.endswith("COLUMNS") and isinstance(value, tuple) and all(isinstance(v, str) for v in value):
                declared[f"{module.name}.{key}"] = value
    return declared


def test_every_output_column_is_in_the_output_vocabulary():
    """One output vocabulary: a column of any SQL function or Python table is in OUTPUTS, or echoes an
    argument (OPTIONS); the model column keeps the user's name (<model>)."""
    known = set(OUTPUTS) | set(OPTIONS)
    sql = {f"{function}: {c}" for function, names in _sql_columns().items() for c in names
           if c != "<model>" and c not in known}
    python = {f"{where}: {c}" for where, names in _declared_columns().items() for c in names
              if c != "model" and c not in known}
    assert len(_sql_columns()) >= 35 and len(_declared_columns()) >= 30     # the readers found the declarations
    assert sql == set() and python == set(), "add the column to OUTPUTS in embsql/vocabulary.py, or rename it"


def test_one_name_one_meaning_in_the_output():
    """`level` is a confidence level (a number), never an invariance level or a dose level; adjusted
    p-values are `p_adjusted` everywhere."""
    retired = {"p_holm", "p_bh", "p_bonferroni", "estimate_adjusted"}
    for where, names in {**_sql_columns(), **_declared_columns()}.items():
        assert retired.isdisjoint(names), where
    for path in sorted((ROOT / "sql").glob("*/*.sql")):
        for line in path.read_text().splitlines():
            if line.startswith("-- @column level "):
                assert "confidence level" in line or "asked" in line, line
    assert OPTIONS["level"].startswith("the confidence level")
    assert all(len(meaning) > 5 for meaning in OUTPUTS.values())
