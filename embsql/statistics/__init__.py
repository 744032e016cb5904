"""The statistics embsql declares once (embsql.statistics.declaration): each one's kernel, inputs,
options, output columns, caution and calibration key.  Their Python faces, UDFs and SQL macros
are generated from :data:`STATISTICS`."""

from __future__ import annotations

from embsql.statistics.agreement import KNN_AGREEMENT, KNN_AGREEMENT_ITEMS, MANTEL
from embsql.statistics.declaration import Statistic
from embsql.statistics.geometry import CKA, COMPARE_CKA, PROCRUSTES

__all__ = ["STATISTICS", "Statistic"]

STATISTICS: tuple[Statistic, ...] = (CKA, PROCRUSTES, COMPARE_CKA, KNN_AGREEMENT, KNN_AGREEMENT_ITEMS, MANTEL)
