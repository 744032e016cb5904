"""Stopping a long UDF kernel (a permutation test, a bootstrap) when its query is interrupted.

DuckDB looks for an interrupt between chunks of work, never inside a Python UDF, and a permutation
test runs inside one UDF call; DuckDB gives the UDF no way to read the interrupt flag or to know
which connection runs it either.  So embsql counts interrupts itself, process-wide: a kernel takes a
``Watch`` when it starts and calls it between blocks of permutations (a fraction of a second apart);
once an interrupt has been counted since it started, the watch raises and the query ends with a
clear error (``embsql: [query.interrupted] ...``), leaving the connection usable.

Two things count, and embsql changes nothing in the process until the user asks for one of them:

- :func:`interrupt` (``embsql.interrupt(con)``): counted; once the running kernels have stopped
  (their queries end with ``embsql: [query.interrupted]``), ``con.interrupt()`` too, which ends a
  query that was running no kernel with DuckDB's own ``Interrupted!`` (``embsql.run_sql`` turns
  that into ``query.interrupted`` as well).  A plain ``con.interrupt()`` still interrupts DuckDB,
  but a running kernel finishes first: embsql does not wrap ``DuckDBPyConnection.interrupt``, a
  method every other user of duckdb in the process shares.
- Ctrl-C, once :func:`stop_on_ctrl_c` ran (``embsql.connect(interrupt=True)``): DuckDB runs a
  query's tasks on worker threads too, where Python raises no KeyboardInterrupt, and turns the
  signal into an interrupt of its own.  So a handler is chained in front of the process's SIGINT
  handler, from the main thread: it counts, then calls the handler that was there (by default,
  raising KeyboardInterrupt).  Without it, Ctrl-C stops a kernel that runs on the calling thread
  (the KeyboardInterrupt is raised inside it) and otherwise the query ends when the kernel does.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import duckdb

from embsql.errors import EmbsqlError, fail

_lock = threading.Lock()
_count = 0
_running = 0          # kernels running now (sql_errors' wrapper), which an interrupt waits for


class QueryInterrupted(EmbsqlError):
    """The query running a kernel was interrupted."""

    kind = "query.interrupted"


def _bump() -> None:
    global _count
    with _lock:
        _count += 1


@contextmanager
def kernel_running() -> Iterator[None]:
    """Count a kernel as running while the block runs (what :func:`interrupt` waits for)."""
    global _running
    with _lock:
        _running += 1
    try:
        yield
    finally:
        with _lock:
            _running -= 1


def interrupt(con: duckdb.DuckDBPyConnection, *, wait: float = 2.0) -> None:
    """Interrupt the query running on ``con``, and stop the embsql function it runs.

    ``con.interrupt()`` alone leaves a running embsql function (a permutation test, a bootstrap) to
    finish before the query ends: DuckDB tells a Python function nothing.  This one stops it,
    between two blocks of its work (a fraction of a second), and the query ends with the error
    ``embsql: [query.interrupted] ...``; the connection stays usable.  It returns once the running
    functions have stopped (at most ``wait`` seconds), then calls ``con.interrupt()``, which ends a
    query that was running no embsql function with DuckDB's own ``Interrupted!`` (which
    ``embsql.run_sql`` raises as ``query.interrupted`` too).  DuckDB does not say which connection
    runs a Python function, so every embsql function running in the process at that moment stops
    (queries on other connections end with the same error).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection whose query to interrupt (typically from another thread).
    wait : float, default 2.0
        How long, in seconds, to wait for the running embsql functions to stop before
        ``con.interrupt()``.

    Returns
    -------
    None

    Raises
    ------
    EmbsqlError
        Not here: the interrupted function raises ``query.interrupted`` on the thread that ran it.

    Examples
    --------
    >>> import threading, time, embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT (i % 3)::VARCHAR AS g, [random(), random()] AS v "
    ...                 "FROM range(3000) r(i)")
    >>> threading.Timer(0.5, embsql.interrupt, [con]).start()
    >>> try:
    ...     con.sql("SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 999999)").fetchall()
    ... except Exception as error:
    ...     print("[query.interrupted]" in str(error))
    True
    """
    _bump()
    deadline = time.monotonic() + wait
    while _running and time.monotonic() < deadline:
        time.sleep(0.01)
    if _running == 0:
        time.sleep(0.05)      # the stopped function's query raises its error before DuckDB's interrupt lands
    con.interrupt()


SignalHandler = Callable[[int, FrameType | None], Any]   # what signal.signal takes (and getsignal gives)


def _counting_handler(previous: SignalHandler) -> SignalHandler:
    def handler(signum: int, frame: FrameType | None) -> Any:
        _bump()
        return previous(signum, frame)

    handler.embsql_counts_interrupts = True  # type: ignore[attr-defined]  # how stop_on_ctrl_c knows its own
    return handler


def stop_on_ctrl_c(enable: object = True) -> None:
    """Chain the counting SIGINT handler in front of the current one (once per process).

    Nothing is chained where Ctrl-C does not reach Python code: under ``SIG_DFL`` it ends the
    process, under ``SIG_IGN`` the process ignores it, and embsql leaves both so.  A handler set
    later replaces this one, as it would any other."""
    if enable is not True:
        fail("argument.interrupt", name="interrupt", rule="True or False", value=repr(enable))
    if threading.current_thread() is not threading.main_thread():
        fail("argument.interrupt", name="interrupt", rule="set from the main thread, where Python runs signal "
             "handlers", value=f"True from thread {threading.current_thread().name!r}")
    previous = signal.getsignal(signal.SIGINT)
    if callable(previous) and not getattr(previous, "embsql_counts_interrupts", False):
        signal.signal(signal.SIGINT, _counting_handler(previous))


class Watch:
    """``watch(done, total)`` raises QueryInterrupted once an interrupt came after the watch began."""

    def __init__(self) -> None:
        self.start = _count

    def __call__(self, done: int | None = None, total: int | None = None) -> None:
        if _count != self.start:
            raise QueryInterrupted("the query was interrupted; the permutation test stopped"
                                   + ("" if done is None else f" after {done} of {total} permutations"))
