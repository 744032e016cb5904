"""The design checks, once: a grouping that leaves a statistic undefined.

Every kernel that needs at least two groups, a within-group degree of freedom or a minimum number of
groups asks here; the messages are the catalogue's (embsql.errors), which the SQL macros word
from too (sql/build.py generates emb__fail_design_* from the same templates).
"""

from __future__ import annotations

from embsql.errors import fail


def subject(column: str | None) -> str:
    """How a message names the grouping: the group column when it is known, double-quoted as the SQL
    functions' messages (emb__fail_design_*) name it, so both routes word a design refusal alike."""
    return "the group column" if column is None else f'group column "{column}"'


def by_value(value: object) -> tuple[str, str]:
    """The two ways a message says which by value it is about: ' for by value x' and ', by value x'."""
    return ("", "") if value is None else (f" for by value {value!r}", f", by value {value!r}")


def check_groups(groups: int, n: int, *, needs: str, column: str | None = None, value: object = None,
                 undefined: str = "SS_W and F", unit: str = "row") -> None:
    """At least two groups (``needs`` is what needs them), and fewer groups than items (else there
    is no within-group degree of freedom and ``undefined`` is undefined)."""
    if groups < 2:
        fail("design.one_group", subject=subject(column), where=by_value(value)[0], needs=needs)
    if n == groups:
        within = "" if column is None else f' in "{column}"'
        fail("design.no_residual_df", within=within, unit=unit, n=int(n), where=by_value(value)[1],
             undefined=undefined)


def check_min_groups(groups: int, minimum: int, what: str, why: str = "") -> None:
    """At least ``minimum`` groups for ``what`` (a resampling scheme); ``why`` says why, e.g.
    ' (each replicate keeps G - 1 >= 2)'."""
    if groups < minimum:
        fail("design.min_groups", what=what, minimum=minimum, why=why)

