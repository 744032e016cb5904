"""The one vocabulary (embsql.vocabulary), held on the Python package: every public function's
parameter names and every public result object's fields are names the vocabulary defines, and no
old spelling (vocabulary.REMOVED) is one of them."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import embsql
from embsql.vocabulary import NAMES, REMOVED, RESULTS

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
    names = [p.name for p in _parameters(CALLABLES[name])
             if p.name != "removed" and p.kind is not p.VAR_KEYWORD and p.name != "self"]
    assert [n for n in names if n not in NAMES] == [], f"embsql.{name}: add the name to embsql/vocabulary.py or rename it"
    assert [n for n in names if n in REMOVED and n not in NAMES] == []


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_no_public_function_hides_its_keywords(name):
    hidden = [p.name for p in _parameters(CALLABLES[name]) if p.kind is p.VAR_KEYWORD and p.name != "removed"]
    if name in KWARGS_PENDING:
        assert hidden, f"embsql.{name} no longer takes **{hidden}: remove it from KWARGS_PENDING"
    else:
        assert hidden == [], f"embsql.{name} takes **{hidden[0]}"


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_removed_catches_only_what_mypy_should_refuse(name):
    """``**removed`` is annotated Never, so any keyword a function does not take is a type error."""
    for parameter in _parameters(CALLABLES[name]):
        if parameter.name == "removed":
            assert parameter.kind is parameter.VAR_KEYWORD
            assert inspect.get_annotations(CALLABLES[name], eval_str=True)["removed"] in (embsql.vocabulary.Never,)


@pytest.mark.parametrize("name", sorted(DATACLASSES))
def test_every_field_of_a_result_object_is_in_the_vocabulary(name):
    fields = [field.name for field in dataclasses.fields(DATACLASSES[name])]
    assert [f for f in fields if f not in NAMES] == [], f"embsql.{name}: add the field to embsql/vocabulary.py"


def test_every_name_has_a_meaning_and_no_old_name_is_current():
    assert all(isinstance(meaning, str) and len(meaning) > 10 for meaning in NAMES.values())
    assert set(RESULTS) <= set(NAMES)
    assert [old for old in REMOVED if old in NAMES] == []          # an old name is never also a current one
    assert all(new in NAMES for new in REMOVED.values())
