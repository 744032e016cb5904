"""The one rule for group labels, on every route: NULL and NaN labels are errors, and -0.0 is 0.0.

A NaN is not equal to itself, so as a dictionary key or a GROUP BY key every NaN row could become a
group of its own (a NaN label once gave 12 groups in one function and 3 in another); and 0.0 and -0.0
compare equal but can hash or sort apart.  Both are settled here, once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from embsql.errors import fail

# what a function takes as labels (or strata, item ids): any sequence of values, or an array of them
Labels = Sequence[object] | np.ndarray


def bad_label(value: object) -> str | None:
    """'NULL' or 'NaN' when ``value`` cannot be a group label, else None."""
    if value is None:
        return "NULL"
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return None


def clean_label(value: object, column: str, where: str = "", role: str = "group") -> object:
    """``value`` as a label (-0.0 becomes 0.0); a NULL or NaN label raises naming ``column``."""
    word = bad_label(value)
    if word is not None:
        fail("label.null", role=role, column=repr(column), word=word, where=f" at {where}" if where else "")
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def clean_labels(values: Labels, column: str, role: str = "group",
                 where: Callable[[int], str] | None = None) -> NDArray[np.object_]:
    """An object array of labels under the rule; ``where(i)`` names row i in a message."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = clean_label(value, column, where(i) if where is not None and bad_label(value) else "", role)
    return out


def sort_key(value: object) -> tuple[bool, str, object]:
    """The one canonical order of labels (and of model values): by type, then by value, NULL last.

    Every route orders groups, models and items by this key, so a seeded resample refers to the
    same groups whether the rows came from Python, SQL or another engine."""
    return (value is None, str(type(value)), value)


def text_key(value: object) -> str:
    """The resampling order's key: a label as text.  The SQL routes pass labels to the UDFs as
    VARCHAR, so ordering by text is what lets a seed draw the same groups, permutations and
    items from SQL and from Python.  (sort_key is the display order: 2 before 10.)"""
    return str(value)


def text_order(labels: Labels) -> NDArray[np.intp]:
    """Indices that put ``labels`` in the resampling order (stable for equal texts)."""
    return np.argsort(np.asarray(labels, dtype=object).astype(str), kind="stable")
