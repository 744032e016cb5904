"""The one vocabulary (embsql.vocabulary), held on the Python package: every public function's
parameter names and every public result object's fields are names the vocabulary defines, and a
keyword a function does not take is Python's own TypeError (no catch-all that turns it into anything else)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import embsql
from embsql.vocabulary import NAMES, RESULTS

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


@pytest.mark.parametrize("name", sorted(DATACLASSES))
def test_every_field_of_a_result_object_is_in_the_vocabulary(name):
    fields = [field.name for field in dataclasses.fields(DATACLASSES[name])]
    assert [f for f in fields if f not in NAMES] == [], f"embsql.{name}: add the field to embsql/vocabulary.py"


def test_every_name_has_a_meaning_and_no_old_name_is_current():
    assert all(isinstance(meaning, str) and len(meaning) > 10 for meaning in NAMES.values())
    assert set(RESULTS) <= set(NAMES)
