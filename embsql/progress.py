"""Progress of long runs: a rich progress bar in a terminal or a notebook, or nothing.

``progress=None`` shows the bar only when stderr is a terminal (or in Jupyter); ``True`` always,
``False`` never.  Ctrl-C stops the run cleanly: the bar is closed and KeyboardInterrupt raised.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager


def _interactive() -> bool:
    return sys.stderr.isatty() or "ipykernel" in sys.modules


@contextmanager
def progress_bar(label: str, total: int, enabled: bool | None = None):
    """Yield a callback ``tick(done, total)``, or None when no bar is shown."""
    if enabled is False or (enabled is None and not _interactive()):
        yield None
        return
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda done, _total: progress.update(task, completed=done)
