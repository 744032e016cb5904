"""Stopping a long UDF kernel when its query is interrupted (``con.interrupt()``).

DuckDB looks for an interrupt between chunks of work, never inside a Python UDF, and a permutation
test runs inside one UDF call; DuckDB gives the UDF no way to read the interrupt flag either.  So
when the kernels are loaded, ``DuckDBPyConnection.interrupt`` is wrapped once: each call still
interrupts as before and also counts itself here.  A kernel takes a ``Watch`` when it starts and
calls it between blocks of permutations (a fraction of a second apart); once an interrupt has been
counted since it started, the watch raises and the query ends with a clear error, leaving the
connection usable.  The count is process-wide, so an interrupt of any connection stops the kernels
running at that moment (DuckDB tells a UDF nothing about which connection runs it).

Ctrl-C (SIGINT) is counted the same way: DuckDB runs a query's tasks on worker threads too, where
Python raises no KeyboardInterrupt, and turns the signal into an interrupt that bypasses the Python
method.  So the Python-level SIGINT handler is chained once (from the main thread): it counts, then
does whatever the previous handler did (by default, raise KeyboardInterrupt).
"""

from __future__ import annotations

import signal
import threading

import duckdb

from embsql.errors import EmbsqlError

_lock = threading.Lock()
_count = 0


class QueryInterrupted(EmbsqlError):
    """The query running a kernel was interrupted."""

    kind = "query.interrupted"


def _bump() -> None:
    global _count
    with _lock:
        _count += 1


def _counted(original):
    def interrupt(self, *args, **kwargs):
        _bump()
        return original(self, *args, **kwargs)

    interrupt.__doc__ = original.__doc__
    interrupt.embsql_counts_interrupts = True
    return interrupt


def _counting_handler(previous):
    def handler(signum, frame):
        _bump()
        if callable(previous):
            return previous(signum, frame)
        if previous == signal.SIG_DFL:
            raise KeyboardInterrupt
        return None     # SIG_IGN: ignored before, still ignored (but counted)

    handler.embsql_counts_interrupts = True
    return handler


def install() -> None:
    """Wrap DuckDBPyConnection.interrupt and chain the SIGINT handler (once each; idempotent)."""
    cls = duckdb.DuckDBPyConnection
    if not getattr(cls.interrupt, "embsql_counts_interrupts", False):
        cls.interrupt = _counted(cls.interrupt)  # type: ignore[method-assign]
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
        if previous is not None and not getattr(previous, "embsql_counts_interrupts", False):
            signal.signal(signal.SIGINT, _counting_handler(previous))


class Watch:
    """``watch(done, total)`` raises QueryInterrupted once an interrupt came after the watch began."""

    def __init__(self):
        install()
        self.start = _count

    def __call__(self, done=None, total=None) -> None:
        if _count != self.start:
            raise QueryInterrupted("the query was interrupted; the permutation test stopped"
                                   + ("" if done is None else f" after {done} of {total} permutations"))
