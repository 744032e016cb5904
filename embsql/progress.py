"""Progress of long runs: a progress bar on stderr, in a terminal or a notebook, or nothing.

The kernels in embsql.core know nothing of terminals: they take a callback ``tick(done, total)``
(:data:`Tick`) and call it every few permutations.  The public faces and the report open a bar
here and pass its callback down.

``progress=None`` shows the bar only when stderr is a terminal (or in Jupyter); ``True`` always,
``False`` never.  The bar always goes to stderr, so that stdout holds only the report.  In a
terminal it is rich's bar; in a notebook one line of text rewritten with a carriage return
(rich would need ipywidgets there, and would display outside the cell's stderr).  Ctrl-C stops
the run cleanly: the bar is closed and KeyboardInterrupt raised.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Tick = Callable[[int, int], None]   # tick(done, total): what a kernel calls as it goes
DISPERSION_LABEL = "dispersion permutations"


def permutations_label(value: object) -> str:
    """The bar's label for one model's permutation test: "permutations (model value)"."""
    return "permutations" if value is None else f"permutations ({value})"


def _in_notebook() -> bool:
    """Running inside a Jupyter kernel (importing ipykernel is not enough: a test runner may)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return getattr(shell, "kernel", None) is not None and not sys.stderr.isatty()


def _interactive() -> bool:
    return sys.stderr.isatty() or _in_notebook()


@contextmanager
def progress_bar(label: str, total: int, enabled: bool | None = None) -> Iterator[Tick | None]:
    """Yield a callback ``tick(done, total)``, or None when no bar is shown."""
    if enabled is False or (enabled is None and not _interactive()):
        yield None
        return
    if _in_notebook():
        with _text_bar(label, total) as tick:
            yield tick
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)

        def update(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        yield update


@contextmanager
def _text_bar(label: str, total: int, width: int = 30) -> Iterator[Tick]:
    shown = [-1]

    def tick(done: int, _total: int) -> None:
        percent = int(100 * done / max(total, 1))
        if percent != shown[0]:
            shown[0] = percent
            filled = width * percent // 100
            sys.stderr.write(f"\r{label}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            sys.stderr.flush()

    try:
        yield tick
    finally:
        if shown[0] >= 0:
            sys.stderr.write("\n")
            sys.stderr.flush()
