"""A griffe extension for the reference pages (mkdocs.yml loads it): the ``**removed`` catch-all that
public functions take is left out of the signatures shown.

It is no parameter a user passes: it receives an old keyword (``by=``) so that the call is refused
with an error naming the new one (``by= is now model=``); the vocabulary page lists the old names.
"""

from __future__ import annotations

from typing import Any

import griffe


class HideRemoved(griffe.Extension):
    """Drop a variadic keyword parameter named ``removed`` from every function's signature."""

    def on_function_instance(self, *, func: griffe.Function, **kwargs: Any) -> None:
        if "removed" in func.parameters and func.parameters["removed"].kind is griffe.ParameterKind.var_keyword:
            del func.parameters["removed"]
