"""Progress of long runs: a progress bar on stderr, in a terminal or a notebook, or nothing.

The kernels in embsql.core know nothing of terminals: they take a callback ``tick(done, total)``
(:data:`Tick`) and call it every few permutations.  The public faces and the report open a bar
here and pass its callback down.

A run made of several parts (a report: its sections, each model's permutation tests) shows one
bar for the whole run (:func:`run_progress`): each part has its share of the total, an estimate of
its work made before anything runs, so the bar's rate and remaining time are those of the run, not
of one model's test.

``progress=None`` shows the bar only when stderr is a terminal (or in Jupyter); ``True`` always,
``False`` never.  The bar always goes to stderr, so that stdout holds only the report.  In a
terminal it is rich's bar; in a notebook one line of text rewritten with a carriage return
(rich would need ipywidgets there, and would display outside the cell's stderr).  Ctrl-C stops
the run cleanly: the bar is closed and KeyboardInterrupt raised.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
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


Relabel = Callable[[str], None]   # relabel(text): what the bar says it is doing


@contextmanager
def progress_bar(label: str, total: int, enabled: bool | None = None) -> Iterator[Tick | None]:
    """Yield a callback ``tick(done, total)``, or None when no bar is shown."""
    with _bar(label, total, enabled) as shown:
        yield None if shown is None else shown[0]


@contextmanager
def _bar(label: str, total: int, enabled: bool | None) -> Iterator[tuple[Tick, Relabel] | None]:
    """(tick, relabel) of a bar on stderr, or None when no bar is shown."""
    if enabled is False or (enabled is None and not _interactive()):
        yield None
        return
    if _in_notebook():
        with _text_bar(label, total) as shown:
            yield shown
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)

        def update(done: int, _total: int) -> None:
            progress.update(task, completed=done)

        yield update, lambda text: progress.update(task, description=text)


@contextmanager
def _text_bar(label: str, total: int, width: int = 30) -> Iterator[tuple[Tick, Relabel]]:
    shown = [-1]
    said = [label]

    def tick(done: int, _total: int) -> None:
        percent = int(100 * done / max(total, 1))
        if percent != shown[0]:
            shown[0] = percent
            filled = width * percent // 100
            sys.stderr.write(f"\r{said[0]}: [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
            sys.stderr.flush()

    def relabel(text: str) -> None:
        said[0] = text

    try:
        yield tick, relabel
    finally:
        if shown[0] >= 0:
            sys.stderr.write("\n")
            sys.stderr.flush()


class RunProgress:
    """One bar for a run of several parts, each with its estimated share of the work (``units``: (key,
    label, units) in the order the parts run; the bar's total is the sum of the units).

    ``with run.part(key) as tick:`` gives the part's kernels a Tick (None when no bar is shown): their
    ``(done, total)`` moves the bar across the part's share.  When the part ends the bar stands at the
    end of its share, whatever the kernel said (a sequential test that stopped early jumps there).  The
    bar only moves forward and reaches its total once, when the last part ends.  A key that is not in
    ``units`` (a part that was not planned) has no share: its ticks do not move the bar."""

    def __init__(self, units: Sequence[tuple[Hashable, str, int]], shown: tuple[Tick, Relabel] | None = None):
        self.units = {key: int(size) for key, _, size in units}
        self.labels = {key: label for key, label, _ in units}
        self.total = sum(self.units.values())
        self.start: dict[Hashable, int] = {}
        at = 0
        for key, _, size in units:
            self.start[key] = at
            at += int(size)
        self.shown, self.done = shown, 0

    def _move(self, to: int) -> None:
        if to > self.done:
            self.done = to
            if self.shown is not None:
                self.shown[0](to, self.total)

    @contextmanager
    def part(self, key: Hashable) -> Iterator[Tick | None]:
        if key not in self.units:
            yield None
            return
        start, size = self.start[key], self.units[key]
        if self.shown is not None:
            self.shown[1](self.labels[key])

        def tick(done: int, total: int) -> None:
            self._move(start + size * min(done, total) // max(total, 1))

        yield tick if self.shown is not None else None
        self._move(start + size)


@contextmanager
def run_progress(label: str, units: Sequence[tuple[Hashable, str, int]],
                 enabled: bool | None = None) -> Iterator[RunProgress]:
    """A RunProgress whose bar (shown as for :func:`progress_bar`) covers every part of ``units``."""
    with _bar(label, sum(int(size) for _, _, size in units), enabled) as shown:
        yield RunProgress(units, shown)
