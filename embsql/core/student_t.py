"""Quantiles of Student's t distribution, without scipy (embsql's runtime needs numpy only).

The CDF comes from the regularised incomplete beta function (continued fraction, modified Lentz),
and the quantile from bisection on it (about 100 halvings; cached), good to about 1e-10 (checked
against scipy.stats.t.ppf in tests/core/test_calibration.py).  Above LARGE_DF degrees of freedom the
continued fraction loses digits and the Cornish-Fisher series about the normal quantile is used.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

from embsql.errors import InputError

LARGE_DF = 1e4


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 1e-16
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _incomplete_beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _incomplete_beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for T ~ t with df degrees of freedom (to about 1e-10 up to df = LARGE_DF)."""
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@lru_cache(maxsize=256)  # a report asks for the same few (level, G) again and again
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of t with df > 0 degrees of freedom, 0 < p < 1."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise InputError(f"t quantile needs 0 < p < 1 and df > 0, not p={p!r}, df={df!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df > LARGE_DF:  # the continued fraction loses digits here; the Cornish-Fisher series is exact to rounding
        z = NormalDist().inv_cdf(p)
        return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return 0.5 * (low + high)
