"""How one cell of a table reads, the same everywhere: ResultTable (repr and notebook HTML) and
every report renderer (text, Markdown, JSON's non-finite markers, HTML).

6 significant digits (the report's text, Markdown and HTML ask for 3: ``digits=3``, with no
exponent below 10 million); None as "—"; booleans as true/false; infinities as "inf" and "-inf"
(never the sign lost); NaN as "nan".
"""

from __future__ import annotations

import math
import numbers

import numpy as np

MISSING = "—"


def plain(value: object) -> object:
    """numpy scalars as the Python values they hold (np.bool_ is neither bool nor a number)."""
    return value.item() if isinstance(value, np.generic) else value


def is_number(value: object) -> bool:
    """A real number that is not a boolean (numpy scalars included)."""
    value = plain(value)
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def format_cell(value: object, digits: int = 6) -> str:
    """A cell as people read it: 6 significant digits (or ``digits``), None as "—", -inf as "-inf"."""
    value = plain(value)
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        number = float(value)
        if math.isnan(number):
            return "nan"
        if math.isinf(number):
            return "inf" if number > 0 else "-inf"
        text = f"{number:.{digits}g}"
        if digits < 6 and "e+" in text and abs(number) < 1e7:
            return f"{number:.0f}"       # 1234.5 as 1234 (at least ``digits`` digits), not 1.23e+03
        return text
    return str(value)
