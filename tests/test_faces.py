"""The Python faces take the source by position and everything else by name, with ``model=`` for
the model column.  The old forms (columns by position, ``by=``) still work and give the same
numbers.  ``by=`` warns (one EmbsqlDeprecationWarning per call, at the caller's line); columns by
position warn too when embsql.compat.WARN_POSITIONAL is on (these tests turn it on; by default it
is off, because positional columns were the documented form until now: see the last test)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql import ArgumentError, EmbsqlDeprecationWarning
from embsql.compat import keyword_arguments


@pytest.fixture(autouse=True)
def positional_notice(monkeypatch):
    from embsql import compat

    monkeypatch.setattr(compat, "WARN_POSITIONAL", True)


@pytest.fixture(scope="module")
def con():
    rng = np.random.default_rng(3)
    rows = []
    for model, d in (("a", 4), ("b", 6)):
        centres = rng.standard_normal((5, d))
        for i in range(40):
            rows.append({"m": model, "g": f"t{i % 5}", "item": i, "v": (centres[i % 5] + rng.standard_normal(d)).tolist()})
    connection = embsql.connect()
    connection.register("t", pa.Table.from_pylist(rows))
    connection.execute("CREATE TABLE dist AS SELECT a.item AS i, b.item AS j, list_cosine_distance(a.v, b.v) AS d "
                       "FROM t a JOIN t b ON a.m = b.m AND a.m = 'a' AND a.item < b.item")
    connection.execute("CREATE TABLE labels AS SELECT item AS id, g FROM t WHERE m = 'a'")
    yield connection
    connection.close()


# (face, the old call's arguments after con, the new call's keywords); small permutation counts
CASES = [
    (embsql.anova, ("t", "g", "v"), {"by": "m"}, {"group": "g", "vector": "v", "model": "m"}),
    (embsql.groups, ("t", "g", "v"), {"by": "m"}, {"group": "g", "vector": "v", "model": "m"}),
    (embsql.jackknife, ("t", "g", "v"), {"by": "m", "stat": "f"}, {"group": "g", "vector": "v", "model": "m", "stat": "f"}),
    (embsql.bootstrap, ("t", "g", "v"), {"by": "m", "replicates": 50},
     {"group": "g", "vector": "v", "model": "m", "replicates": 50}),
    (embsql.permanova, ("t", "g", "v"), {"by": "m", "permutations": 19, "check_dispersion": False},
     {"group": "g", "vector": "v", "model": "m", "permutations": 19, "check_dispersion": False}),
    (embsql.dispersion, ("t", "g", "v"), {"by": "m", "permutations": 19},
     {"group": "g", "vector": "v", "model": "m", "permutations": 19}),
    (embsql.compare, ("t", "g", "v", "m", "item"), {"replicates": 50},
     {"group": "g", "vector": "v", "model": "m", "item": "item", "replicates": 50}),
    (embsql.knn_agreement, ("t", "item", "m", "v"), {"k": 3}, {"item": "item", "model": "m", "vector": "v", "k": 3}),
    (embsql.mantel, ("t", "item", "m", "v"), {"permutations": 19},
     {"item": "item", "model": "m", "vector": "v", "permutations": 19}),
    (embsql.anova_dist, ("dist", "labels", "g"), {}, {"labels": "labels", "group": "g"}),
]
IDS = [case[0].__name__ for case in CASES]


def _tables(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("face,old_args,old_kwargs,new_kwargs", CASES, ids=IDS)
def test_the_old_call_warns_once_and_gives_the_same_table(con, face, old_args, old_kwargs, new_kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # the new form says nothing
        new = face(con, old_args[0], **new_kwargs)
    with pytest.warns(EmbsqlDeprecationWarning) as caught:
        old = face(con, *old_args, **old_kwargs)
    ours = [w for w in caught if w.category is EmbsqlDeprecationWarning]
    assert len(ours) == 1, [str(w.message) for w in ours]
    message = str(ours[0].message)
    assert message.startswith(f"embsql.{face.__name__}: pass ") and ours[0].filename == __file__
    for name in list(new_kwargs)[:len(old_args) - 1]:
        assert f"{name}=..." in message
    assert ("by= is now model=" in message) == ("by" in old_kwargs)
    for a, b in zip(_tables(old), _tables(new)):
        assert a.columns == b.columns and a.rows == b.rows


@pytest.mark.parametrize("face", [case[0] for case in CASES] + [embsql.report], ids=IDS + ["report"])
def test_everything_after_the_source_is_keyword_only(face):
    parameters = list(inspect.signature(face).parameters.values())
    first = 1 if face is embsql.report else 2                      # (con,) source
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:first])
    assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in parameters[first:])
    assert "by" not in [p.name for p in parameters]


def test_by_keeps_the_users_column_name(con):
    with pytest.warns(EmbsqlDeprecationWarning, match="by= is now model="):
        table = embsql.anova(con, "t", group="g", vector="v", by="m")
    assert table.columns[0] == "m" and table.column("m") == ["a", "b"]


def test_an_unknown_keyword_is_named(con):
    with pytest.raises(ArgumentError, match=r"^embsql\.anova\(\) has no argument 'modle'; after the source it takes: "
                                            r"group, vector, model, key$") as raised:
        embsql.anova(con, "t", group="g", vector="v", modle="m")
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, embsql.InputError)


def test_model_and_by_together_are_refused(con):
    with pytest.raises(ArgumentError, match=r"^embsql\.permanova\(\) got both model= and by= \(its old name\); "
                                            r"pass model= only$"):
        embsql.permanova(con, "t", group="g", vector="v", model="m", by="m")
    with pytest.raises(ArgumentError, match=r"^embsql\.anova\(\) got 'group' twice: by position and by name$"):
        embsql.anova(con, "t", "g", "v", group="g")
    with pytest.raises(ArgumentError, match="never took more than 2 by position"):
        embsql.anova(con, "t", "g", "v", "m")


def test_a_warning_from_inside_still_points_at_the_caller(con):
    """permanova's own warning (groups differ in spread) passes both wrappers and names this line."""
    rng = np.random.default_rng(0)
    spread = np.concatenate([0.05 * rng.standard_normal((30, 3)), 3 * rng.standard_normal((30, 3))]) + [4.0, 0, 0]
    con.register("spread", pa.table({"g": ["x"] * 30 + ["y"] * 30, "v": spread.tolist()}))
    with pytest.warns(UserWarning, match="dispersion test is significant") as caught:
        embsql.permanova(con, "spread", group="g", vector="v", permutations=99)
    assert {w.filename for w in caught} == {__file__}


def test_the_decorator_maps_renamed_positional_names():
    @keyword_arguments("x", "by", by="model")
    def face(con, source, *, x=None, model=None):
        return x, model

    with pytest.warns(EmbsqlDeprecationWarning, match=r"^embsql\..*face: pass x=\.\.\., model=\.\.\. by name \("):
        assert face(None, "s", 1, 2) == (1, 2)
    with pytest.raises(ArgumentError, match="got 'model' twice"):
        face(None, "s", 1, 2, model=3)


def test_the_positional_notice_is_off_by_default_and_by_still_warns(con, monkeypatch):
    """compat.WARN_POSITIONAL = False (the default) accepts the old positional form silently; by= still warns."""
    from embsql import compat

    monkeypatch.undo()
    assert compat.WARN_POSITIONAL is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = embsql.anova(con, "t", "g", "v", model="m")
    assert quiet == embsql.anova(con, "t", group="g", vector="v", model="m")
    with pytest.warns(EmbsqlDeprecationWarning, match=r"^embsql\.anova: by= is now model= \("):
        embsql.anova(con, "t", "g", "v", by="m")
