"""How the public functions take their arguments: the source by position, the rest by name.

The functions once took their columns by position (``embsql.anova(con, "t", "g", "v")``) and some
named the model column ``by=``.  Both still work: :func:`keyword_arguments` maps an old call to
the new names and warns once per call (EmbsqlDeprecationWarning) with what to write instead.
It is the one place that knows the old forms, so every face says it the same way.
"""

from __future__ import annotations

import functools
import inspect
import warnings

from embsql.errors import ArgumentError, EmbsqlDeprecationWarning

# Whether columns passed by position warn.  They were the documented form until this release, in
# many scripts and checks, and a check that counts warnings (permanova's spread warning) or turns
# them into errors would fail on the notice although the call is fine; so positional columns stay
# silent for now, and only by= (a name that changed) warns.
WARN_POSITIONAL = False


def keyword_arguments(*positional: str, **renamed: str):
    """Decorate a function whose parameters after ``source`` are keyword-only.

    ``positional``: the names it used to take by position after the source, in their old order;
    ``renamed``: old keyword -> new keyword (``by="model"``), which also applies to an old name
    given by position.  An unknown keyword is an ArgumentError naming it; an old and a new name
    for the same argument, or one argument by position and by name, are ArgumentErrors too.
    Warnings that the function itself raises for its caller are raised again at the caller's line.
    """

    def decorate(function):
        parameters = inspect.signature(function).parameters
        leading = sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters.values())   # con, source
        takes_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        name = "embsql." + function.__qualname__.removesuffix(".__init__")
        named = [p for p, spec in parameters.items() if spec.kind is spec.KEYWORD_ONLY]

        def new_call(args, kwargs) -> tuple[tuple, dict, list[str]]:
            notes = []
            offset = len(args) - leading
            if offset > 0:
                if offset > len(positional):
                    raise ArgumentError(f"{name}() takes the source by position and everything else by name; "
                                        f"got {offset} arguments after the source, and it never took more than "
                                        f"{len(positional)} by position")
                moved = positional[:offset]
                kwargs = dict(kwargs)
                for old, value in zip(moved, args[len(args) - offset:]):
                    new = renamed.get(old, old)
                    if old in kwargs or new in kwargs:
                        raise ArgumentError(f"{name}() got {new!r} twice: by position and by name")
                    kwargs[new] = value
                args = args[:len(args) - offset]
                if WARN_POSITIONAL:
                    notes.append("pass " + ", ".join(f"{renamed.get(n, n)}=..." for n in moved) + " by name")
            for old, new in renamed.items():
                if old in kwargs:
                    if new in kwargs:
                        raise ArgumentError(f"{name}() got both {new}= and {old}= (its old name); pass {new}= only")
                    kwargs = {**kwargs, new: kwargs[old]}
                    del kwargs[old]
                    notes.append(f"{old}= is now {new}=")
            unknown = [k for k in kwargs if k not in parameters]
            if unknown and not takes_any:
                raise ArgumentError(f"{name}() has no argument {unknown[0]!r}; after the source it takes: "
                                    f"{', '.join(named)}")
            return args, kwargs, notes

        @functools.wraps(function)
        def call(*args, **kwargs):
            args, kwargs, notes = new_call(args, kwargs)
            if notes:
                warnings.warn(f"{name}: {'; '.join(notes)} (the old form will stop working in a future release)",
                              EmbsqlDeprecationWarning, stacklevel=2)
            # a warning the function raises for its caller (stacklevel=2) would point at this wrapper:
            # catch it and raise it again one frame up, also when the function fails
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    result = function(*args, **kwargs)
            finally:
                for warning in caught:
                    warnings.warn(warning.message, warning.category, stacklevel=2)
            return result

        return call

    return decorate
