"""Fetch a query's next Arrow batches on a second thread while the caller works on the last one.

DuckDB executes the scan and converts its result to Arrow without Python's lock, so on a machine with
two cores the reading of the next batches overlaps the numpy work on this one: stage 1 then costs the
larger of the two, not their sum (issue 31: embsql.anova against numpy on the same rows).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator

import pyarrow as pa

AHEAD = 2                    # batches read ahead: one being summed, one ready, one being fetched
_END = object()


def read_ahead(batches: Iterable[pa.RecordBatch], ahead: int = AHEAD) -> Iterator[pa.RecordBatch]:
    """Yield ``batches`` in order, fetched by a worker thread at most ``ahead`` batches in front.

    An error raised while fetching is raised here, at the batch it stopped.  When the caller stops
    early (an error of its own, a break) the worker is told to stop and is joined before this
    returns, so the connection is never used by two threads at once."""
    ready: queue.Queue[object] = queue.Queue(ahead)
    stop = threading.Event()

    def hand_over(item: object) -> bool:
        """Put item on the queue unless the caller has stopped; False once it has."""
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def fetch() -> None:
        try:
            for batch in batches:
                if not hand_over(batch):
                    return
            hand_over(_END)
        except BaseException as caught:  # noqa: BLE001 - re-raised on the caller's thread
            hand_over(caught)

    worker = threading.Thread(target=fetch, name="embsql-read-ahead", daemon=True)
    worker.start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()
