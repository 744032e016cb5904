"""When a spread of unit vectors is too small for float64 to resolve.

Normalising a vector rounds each coordinate to about eps relative, so every unit vector carries an
error of a few eps in norm whatever algorithm sums it afterwards.  A sum of squares whose root-mean-
square spread r = sqrt(SS / n) is that small is rounding noise: R² = SS_B / SS_T then has a relative
error of order eps / r.  Below RESOLUTION = sqrt(eps) (1.5e-8 on the unit sphere) that error could
exceed about 1e-7, so the figure is refused with a clear error instead of printed.  The same threshold
is written into the SQL macros (sql/modules), which word their message the same way.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from embsql.core.sums import add_rows
from embsql.errors import fail

RESOLUTION = math.sqrt(float(np.finfo(np.float64).eps))
SPREAD_ROWS = 8_192      # unit_spread: rows per float64 temporary


def _whose(model: object) -> str:
    return "" if model is None else f" of model {model!r}"


def _floor(n: ArrayLike) -> np.ndarray:
    """The smallest sum of squares over n vectors that float64 resolves: n * RESOLUTION^2 = n * eps."""
    return np.asarray(n, dtype=np.float64) * RESOLUTION ** 2


def resolved(ss_t: ArrayLike, ss_w: ArrayLike, n: ArrayLike) -> np.ndarray:
    """True where both SS_T and SS_W are above float64 resolution (elementwise; NaN is never resolved).

    The vectorised form of check_spread, for resampling replicates (one entry per replicate)."""
    return (np.asarray(ss_t) >= _floor(n)) & (np.asarray(ss_w) >= _floor(n))


def check_total_spread(ss_t: float, n: int, *, model: object = None, undefined: str = "R² and F are",
                       distances: bool = False) -> None:
    """Raise DesignError when SS_T, the spread of all n vectors about their mean, is below float64
    resolution (``undefined``: what that leaves undefined).  The one spread check of every test: with
    ``distances`` SS_T comes from a distance table (no unit sphere, so no resolution floor) and only
    SS_T = 0, every distance 0, is refused."""
    if distances:
        if not ss_t > 0:  # also catches NaN
            fail("design.zero_distances", undefined=undefined)
        return
    if not ss_t >= _floor(n):  # also catches NaN
        fail("design.identical", what="the vectors", whose=_whose(model), spread=math.sqrt(max(ss_t, 0.0) / n),
             resolution=RESOLUTION, undefined=undefined)


def check_spread(ss_t: float, ss_w: float, n: int, *, model: object = None) -> None:
    """Raise DesignError when SS_T (then R² and F) or SS_W (then F) is below float64 resolution."""
    check_total_spread(ss_t, n, model=model)
    if not ss_w >= _floor(n):
        fail("design.identical", what="the vectors within each group", whose=_whose(model),
             spread=math.sqrt(max(ss_w, 0.0) / n), resolution=RESOLUTION, undefined="F is")


def resolved_groups(within: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per group: False where its spread is above 0 but below float64 resolution (W_g is then
    rounding noise, so the report flags it); a group of identical unit vectors has W_g = 0 exactly."""
    within = np.asarray(within, dtype=float)
    return (within == 0) | (within >= _floor(np.asarray(counts, dtype=float)))


def unit_spread(unit: np.ndarray, codes: np.ndarray) -> tuple[float, float]:
    """SS_T and SS_W of unit vectors (rows of ``unit``, float64 or float32; ``codes`` 0..G-1 their groups),
    each summed in float64 from centred rows (two-pass): the squared deviations are non-negative, so
    identical vectors give a spread of rounding size (about eps), where n - ||sum u||^2 / n cancels to
    noise that can pass the resolution floor.  Taken SPREAD_ROWS rows at a time: no n x d temporary."""
    codes = np.asarray(codes)
    counts = np.bincount(codes).astype(np.float64)
    mean = unit.sum(axis=0, dtype=np.float64) / max(len(unit), 1)
    means = np.zeros((len(counts), unit.shape[1]))
    for low in range(0, len(unit), SPREAD_ROWS):
        means += add_rows(np.asarray(unit[low:low + SPREAD_ROWS], dtype=np.float64), codes[low:low + SPREAD_ROWS],
                          len(counts))
    means /= np.maximum(counts, 1.0)[:, None]
    ss_t = ss_w = 0.0
    for low in range(0, len(unit), SPREAD_ROWS):
        rows = np.asarray(unit[low:low + SPREAD_ROWS], dtype=np.float64)
        deviation = rows - mean
        ss_t += float(np.einsum("ij,ij->", deviation, deviation))
        deviation = rows - means[codes[low:low + SPREAD_ROWS]]
        ss_w += float(np.einsum("ij,ij->", deviation, deviation))
    return ss_t, ss_w


def check_unit_spread(unit: np.ndarray, codes: np.ndarray, *, model: object = None) -> None:
    """check_spread on the stable SS_T and SS_W of unit vectors in groups (unit_spread)."""
    ss_t, ss_w = unit_spread(unit, codes)
    check_spread(ss_t, ss_w, len(unit), model=model)


# The report holds one model's rows at a time (embsql.reporting.sections.Run).  Up to ROWS_F64_BYTES
# of float64 they are kept in float64; past that, in float32 (half the memory: 1.5 GB at 10^6 x 384),
# when the model's spread is far above float32's rounding.  Storing a unit vector in float32 moves it by
# about F32_EPS; the sums the tests take of the rows are summed in float64, so SS_W moves by about
# F32_EPS / r relative (r = sqrt(SS_W / n)), below F32_SS_ERROR from r = F32_SPREAD on.
ROWS_F64_BYTES = 1 << 30
F32_EPS = float(np.finfo(np.float32).eps)
F32_SS_ERROR = 1e-5
F32_SPREAD = F32_EPS / F32_SS_ERROR


def row_dtype(n: int, dim: int, ss_w: float) -> type[np.float64] | type[np.float32]:
    """The dtype one model's n x dim unit vectors are held in: float64 up to ROWS_F64_BYTES, and
    past that float32 when their within-group spread sqrt(ss_w / n) is at least F32_SPREAD."""
    if n * dim * 8 <= ROWS_F64_BYTES or not n or not math.sqrt(max(ss_w, 0.0) / n) >= F32_SPREAD:
        return np.float64
    return np.float32
