"""The measured figures (coverage of intervals, levels of tests), read from the one file that holds them.

Every figure embsql quotes about its own calibration was measured by a simulation of ``validation/``
and is written once, in ``validation/calibration.json`` (built by validation/collect.py from the
simulations' stored outputs; the wheel carries it as ``embsql/calibration.json``).  Text that quotes
a figure names its key instead of copying the number:

- ``{{figure KEY}}``: the figure's sentence, e.g. ``at 5% it rejected LOW–HIGH% of null data sets on N
  designs (...)``;
- ``{{figure KEY FIELD}}``: one field: ``range`` (``LOW–HIGH%``), ``low``, ``high`` (``HIGH%``), ``count``
  (designs), ``within`` (designs within 2.5 points of a nominal 95%, or 2 of a nominal 5%),
  ``replicates`` (data sets per design), ``mc_se`` (the largest Monte Carlo SE) or ``nominal``.

:func:`render` fills them in.  Docstrings are rendered when embsql is imported (embsql/__init__.py),
the SQL reference when its doc blocks are read (embsql.sql_reference), the documentation site by its
hook (docs/hooks.py), and the report's cautions and warnings call :func:`sentence`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

PLACEHOLDER = re.compile(r"\{\{figure ([\w.]+)(?: (\w+))?\}\}")
FIELDS = ("range", "low", "high", "count", "within", "replicates", "mc_se", "nominal")


def data_file() -> Path:
    """calibration.json: inside the installed package, else the checkout's validation/ (its one source)."""
    packaged = Path(str(resources.files("embsql"))) / "calibration.json"
    if packaged.is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[1] / "validation" / "calibration.json"
    if checkout.is_file():
        return checkout
    raise FileNotFoundError(f"embsql: cannot find calibration.json (looked in {packaged} and {checkout})")


@cache
def figures() -> dict[str, dict[str, Any]]:
    """Every measured figure, by key (validation/calibration.json's ``figures``)."""
    data: dict[str, dict[str, Any]] = json.loads(data_file().read_text(encoding="utf-8"))["figures"]
    return data


def figure(key: str) -> dict[str, Any]:
    """One figure's entry; a key that is not in the file is a KeyError naming the keys there are."""
    try:
        return figures()[key]
    except KeyError:
        raise KeyError(f"no measured figure {key!r} in {data_file()}; the keys are: {', '.join(figures())}") from None


def number(value: float, decimals: int) -> str:
    """A rate as quoted: ``decimals`` places, but 0 and 100 whole."""
    return str(int(value)) if value in (0, 100) else f"{value:.{decimals}f}"


def field(key: str, name: str) -> str:
    """One field of a figure, as text (see the module's docstring)."""
    entry = figure(key)
    d = entry["decimals"]
    if name == "range":
        return f"{number(entry['low'], d)}–{number(entry['high'], d)}%"
    if name in ("low", "high", "mc_se", "nominal"):
        return f"{number(entry[name], d)}%"
    if name == "replicates":
        count = entry["replicates"]
        return f"{count[0]:,} to {count[1]:,}" if isinstance(count, list) else f"{count:,}"
    if name in ("count", "within"):
        return str(entry[name])
    raise KeyError(f"no field {name!r} of a measured figure; the fields are: {', '.join(FIELDS)}")


def sentence(key: str) -> str:
    """The figure's sentence (its ``text``, with its own fields and any other figure it names filled in)."""
    text = figure(key)["text"]
    text = re.sub(r"(?<!\{)\{(\w+)\}(?!\})", lambda m: field(key, m.group(1)), text)
    return render(text)


def render(text: str) -> str:
    """``text`` with every ``{{figure KEY}}`` and ``{{figure KEY FIELD}}`` filled in from the data file."""
    if "{{figure " not in text:
        return text
    return PLACEHOLDER.sub(lambda m: field(m.group(1), m.group(2)) if m.group(2) else sentence(m.group(1)), text)


def render_docstrings(objects: dict[str, Any]) -> None:
    """Fill in the figures of the docstrings of ``objects`` (a module's public names) and their methods."""
    for obj in objects.values():
        for target in (obj, *vars(obj).values()) if isinstance(obj, type) else (obj,):
            doc = getattr(target, "__doc__", None)
            if isinstance(doc, str) and "{{figure " in doc:
                try:
                    target.__doc__ = render(doc)
                except (AttributeError, TypeError):    # a read-only __doc__ (a property's, a builtin's)
                    pass
