"""Ctrl-C in the second the package takes to load, on the command line.

``embsql.cli.main`` turns an interrupt into the one line ``embsql: interrupted`` and exit status 130,
but only once it runs: the console script (and ``python -m embsql``) first imports the package,
which takes about a second (DuckDB, numpy, pyarrow), and an interrupt then would print Python's
traceback.  So the package imports this module first, and importing it calls
``quiet_interrupts_while_loading``, which, in the command's own process only, makes an interrupt
that nothing catches end the same way.
``--debug`` keeps the traceback, as it does later.  Nothing else is imported here.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType

EXIT_INTERRUPTED = 130      # the shell's status for SIGINT (128 + 2), as embsql.cli's


def from_the_command_line() -> bool:
    """Whether this process is the ``embsql`` command: its console script, or ``python -m embsql``."""
    if os.path.basename(sys.argv[0]).split(".")[0] in ("embsql", "embsql-script"):
        return True
    argv = list(getattr(sys, "orig_argv", sys.argv))
    return any(flag == "-m" and name == "embsql" for flag, name in zip(argv, argv[1:]))


def quiet_interrupts_while_loading() -> None:
    """On the command line (without --debug): an uncaught KeyboardInterrupt prints the one line
    ``embsql: interrupted`` and exits with 130.  Elsewhere (a library import) nothing changes."""
    if not from_the_command_line() or "--debug" in sys.argv[1:] or "--debug" in getattr(sys, "orig_argv", ()):
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            sys.stderr.write("embsql: interrupted\n")
            sys.stderr.flush()
            os._exit(EXIT_INTERRUPTED)          # (the interpreter would end by SIGINT: -2, not 130)
        previous(kind, value, traceback)

    sys.excepthook = hook


quiet_interrupts_while_loading()
