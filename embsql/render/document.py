"""What the renderers and plots read from a report: its shape, as a Protocol.

embsql.reporting builds a report (embsql.reporting.report_result.ReportResult) and its methods
(``to_html``, ``plot`` ...) call into this package; render never imports reporting, so the
dependency runs one way.  Anything with these attributes is drawn the same: a ReportResult, the
demo's result, or a test's fake.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from embsql.result_table import ResultTable


class DocumentSection(Protocol):
    """One part of a report: its key, heading, table and caution."""

    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def table(self) -> ResultTable: ...

    @property
    def caution(self) -> str: ...


class Document(Protocol):
    """A finished report as the renderers read it: title, the opening sentences, the summary, the
    sections in report order, and ``meta`` (what was run)."""

    @property
    def title(self) -> str: ...

    @property
    def verdict(self) -> list[str]: ...

    @property
    def summary(self) -> ResultTable: ...

    @property
    def sections(self) -> Sequence[DocumentSection]: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...

    def __getitem__(self, name: str) -> ResultTable: ...
