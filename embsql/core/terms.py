"""Model terms for a multi-term PERMANOVA: parsing R-style term labels and building each term's columns.

A term is one column ("language"), an interaction of columns ("language:topic"), or R's
shorthand "a*b" for a + b + a:b.  As in R's formulas, terms are put in order of their degree
(main effects first, then two-way interactions, ...), keeping the given order within a degree.

A text (or boolean) column is a factor: one indicator column per level.  A numeric column is a
continuous covariate: its values (1 df).  An interaction's columns are the products of its
members' columns; only column spaces matter for sums of squares, so no contrast coding is needed
(the space of a + b + a:b is that of the cell means, whatever the coding).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from embsql.core.labels import Labels, clean_labels
from embsql.errors import DesignError, InputError


@dataclass(frozen=True)
class Term:
    """One model term: its label ("a:b") and the columns it multiplies."""

    label: str
    columns: tuple[str, ...]

    @property
    def degree(self) -> int:
        return len(self.columns)


def parse_terms(specs: str | Iterable[object]) -> list[Term]:
    """Terms from labels such as ["language", "topic"], ["a:b"], ["a*b"] (= a + b + a:b)."""
    if isinstance(specs, str):
        specs = [specs]
    specs = list(specs)
    if not specs:
        raise InputError("terms is empty: give at least one column name")
    seen: dict[frozenset, Term] = {}
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise InputError(f"a term must be a column name or 'a:b' / 'a*b', not {spec!r}")
        if "*" in spec:
            names = _names(spec, "*")
            expanded = [c for k in range(1, len(names) + 1) for c in combinations(names, k)]
        else:
            expanded = [tuple(_names(spec, ":"))]
        for columns in expanded:
            key = frozenset(columns)
            if len(key) < len(columns):
                raise InputError(f"term {spec!r} names a column twice")
            seen.setdefault(key, Term(":".join(columns), tuple(columns)))
    return sorted(seen.values(), key=lambda t: t.degree)   # stable: given order within a degree


def _names(spec: str, separator: str) -> list[str]:
    names = [part.strip() for part in spec.split(separator)]
    if any(not name or ":" in name or "*" in name for name in names):
        raise InputError(f"term {spec!r} is not a column name, 'a:b' or 'a*b'")
    return names


def columns_of(terms: list[Term]) -> list[str]:
    """Every column the terms use, each once, in order of first use."""
    return list(dict.fromkeys(c for t in terms for c in t.columns))


@dataclass(frozen=True)
class Variable:
    """A factor (integer codes of its levels) or a covariate (float values)."""

    name: str
    codes: np.ndarray | None = None
    levels: int = 0
    values: np.ndarray | None = None

    @property
    def is_factor(self) -> bool:
        return self.codes is not None

    @property
    def rows(self) -> int:
        """How many items (without building the n x levels indicator matrix)."""
        if self.codes is not None:
            return len(self.codes)
        assert self.values is not None
        return len(self.values)

    def matrix(self) -> np.ndarray:
        if self.codes is not None:
            out = np.zeros((len(self.codes), self.levels))
            out[np.arange(len(self.codes)), self.codes] = 1.0
            return out
        assert self.values is not None
        return self.values[:, None]


def is_numeric(values: Iterable[object]) -> bool:
    """Numbers (ints, floats; not booleans) make a covariate; anything else a factor."""
    present = [v for v in values if v is not None]
    return bool(present) and all(isinstance(v, (int, float, np.integer, np.floating))
                                 and not isinstance(v, (bool, np.bool_)) for v in present)


def variable(name: str, values: Labels) -> Variable:
    """A column as a factor or covariate; NULL (or NaN) refused naming the column."""
    values = np.asarray(values, dtype=object)
    if is_numeric(values):
        numbers = np.array([np.nan if v is None else float(v) for v in values])
        bad = ~np.isfinite(numbers)
        if bad.any():
            raise InputError(f"covariate column {name!r} has a NULL, NaN or infinite value (row {int(np.argmax(bad))});"
                             " every row needs a value (filter those rows out first)")
        return Variable(name, values=numbers)
    labels = clean_labels(values, name, role="term")
    names, codes = np.unique(labels.astype(str), return_inverse=True)
    return Variable(name, codes=codes.astype(np.int64), levels=len(names))


def term_matrix(term: Term, variables: dict[str, Variable]) -> np.ndarray:
    """The columns spanning a term: products of its members' indicator / value columns."""
    out = np.ones((next(iter(variables.values())).rows, 1))
    for name in term.columns:
        m = variables[name].matrix()
        out = (out[:, :, None] * m[:, None, :]).reshape(len(out), -1)
    return out


def check_levels(terms: list[Term], variables: dict[str, Variable]) -> None:
    """A factor term with a single level has nothing to compare."""
    for term in terms:
        for name in term.columns:
            v = variables[name]
            if v.is_factor and v.levels < 2:
                raise DesignError(f"term {term.label!r}: column {name!r} has one level only; a factor needs at "
                                  "least two")


def absorbed(terms: list[Term], variables: dict[str, Variable]) -> Term | None:
    """The main-effect factor with the most levels: its space is handled by group sums (O(n d) per
    permutation) instead of a dense basis (O(n d) per column)."""
    factors = [t for t in terms if t.degree == 1 and variables[t.columns[0]].is_factor]
    return max(factors, key=lambda t: variables[t.columns[0]].levels, default=None)
