"""Similarity (STS) evaluation: how well a model's cosine of two items agrees with people's
similarity judgements of them, and whether one model agrees better than another.

* Cosine.  For pair k of items (a_k, b_k), c_k = x_a.x_b / (||x_a|| ||x_b||), in float64 (the
  vectors are gathered in blocks of pairs, so memory stays O(block d) beyond the vectors).
* Pearson r between c and the gold score s; Spearman rho = Pearson's r of their average ranks
  (tied values share the mean of the ranks they span), as scipy.stats.spearmanr; cosines are ranked
  on a grid of 2^-40 (see influences).

Intervals.  The pairs are not independent: an item recurs across pairs (a word of a word-similarity
set is in many), and its errors -- how far off the model puts it, how people read it -- recur with it.
Each correlation is a smooth function of the pairs' empirical distribution, so it is close to
rho + (1/n) sum_k psi_k, with psi_k pair k's empirical influence value (for Spearman it includes how
pair k moves every other pair's rank; see spearman_influence).  Its variance is then

    V = (1/n^2) sum over ordered pairs (k, l) that share an item of psi_k psi_l
      = (1/n^2) (sum_i S_i^2 - sum_d D_d^2),

with S_i the sum of psi over the pairs that contain item i and D_d that over the pairs of the same two
items d (a pair that shares both its items with itself would otherwise count twice).  This is the
dyadic-robust ("two-way clustered by item") variance (Fafchamps & Gubert 2007; Aronow, Samii & Assenova
2015), the delta-method analogue of a bootstrap that resamples items with all their pairs; without
recurring items it is the usual pair-level variance sum_k psi_k^2 / n^2.  The interval of a
correlation is t(items - 1) on Fisher's z = atanh(r), mapped back (so it stays in [-1, 1]); that of a
difference of two models' correlations on the same pairs uses psi_A - psi_B and stays on the raw
scale.  The variance used is never below the pair-level one: a negative within-item covariance (rare,
and then mostly noise) does not narrow the interval.  Its calibration, against the pair-level method,
is measured in validation/similarity_validity.py (validation/README.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from embsql.core.agreement import RESOLUTION
from embsql.core.arguments import check_level, check_replicates, check_seed
from embsql.core.model_ranking import RANK_CALIBRATED_FROM, PairFamily, normal_family, normal_rows, pairs_of
from embsql.core.student_t import t_cdf, t_quantile
from embsql.errors import InputError, fail

MIN_PAIRS = 3
COSINE_BLOCK = 512           # pairs per gather: two 512 x d blocks stay in cache (0.8 MB at d = 384, float32)
# The simulations of validation/similarity_validity.py measured the interval's coverage and the paired
# test's level wherever the t quantile had 20 or more degrees of freedom (effective_items - 1) on 200 or
# more pairs (validation/calibration.json, similarity.coverage and similarity.level); not at 10.
CALIBRATED_PAIRS = 200
CALIBRATED_DF = 20
EVAL_COLUMNS = ("spearman", "ci_low", "ci_high", "se", "pearson", "pearson_ci_low", "pearson_ci_high",
                "pearson_se", "pairs", "items", "skipped", "level", "calibrated")
COMPARE_COLUMNS = ("model_a", "model_b", "correlation", "estimate_a", "estimate_b", "difference", "se",
                   "ci_low", "ci_high", "p_value", "p_adjusted", "pairs", "items", "level", "calibrated")


def pair_cosines(vectors: np.ndarray, inv_norms: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of rows a[k] and b[k] of ``vectors`` (as stored: float32 or float64), in float64.

    ``inv_norms`` is 1 / ||row||.  The rows are gathered COSINE_BLOCK pairs at a time (two blocks
    stay in cache) and their products summed in float64, so a float32 table gives the cosine of its
    stored values to float64 rounding (a float32 dot product would move each cosine by up to
    d 2^-24)."""
    out = np.empty(len(a))
    for low in range(0, len(a), COSINE_BLOCK):
        ia, ib = a[low:low + COSINE_BLOCK], b[low:low + COSINE_BLOCK]
        # (1/||a||)(1/||b||) first: the same cosine for (a, b) and (b, a), so a pair given in both orders ties
        out[low:low + len(ia)] = (np.einsum("ij,ij->i", vectors[ia], vectors[ib], dtype=np.float64, casting="safe")
                                  * (inv_norms[ia] * inv_norms[ib]))
    return np.clip(out, -1.0, 1.0, out=out)


@dataclass(frozen=True)
class Ranking:
    """One sort of a column, shared by its ranks and by the rank terms of Spearman's influence
    values (and, for the gold score, by every model)."""

    order: np.ndarray          # indices that sort the values (ties in any order: only runs matter)
    starts: np.ndarray         # where each run of tied values starts in that order
    ranks: np.ndarray          # 1-based average ranks, in the original order

    @classmethod
    def of(cls, x: np.ndarray) -> Ranking:
        order = np.argsort(x)
        sorted_x = x[order]
        starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
        ends = np.r_[starts[1:], len(x)]
        ranks = np.empty(len(x))
        ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
        return cls(order, starts, ranks)

    def above(self, w: np.ndarray) -> np.ndarray:
        """sum_k H(x_k - x_l) w_k for every l, H(t) = 1 for t > 0, 1/2 for t = 0, 0 below: the weight
        of the pairs that rank above pair l (half of those tied with it), in O(n)."""
        tied = np.add.reduceat(w[self.order], self.starts)           # weight of each run of tied values
        beyond = np.r_[np.cumsum(tied[::-1])[::-1][1:], 0.0]          # weight of the runs above each run
        out = np.empty(len(w))
        out[self.order] = np.repeat(beyond + tied / 2, np.diff(np.r_[self.starts, len(w)]))
        return out


def midranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing the mean of the ranks they span (scipy's 'average')."""
    return Ranking.of(x).ranks


def _standardised(x: np.ndarray) -> tuple[np.ndarray, float]:
    centred = x - x.mean()
    sd = float(np.sqrt(centred @ centred / len(x)))
    return centred / sd, sd


def pearson_influence(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Pearson's r and each pair's empirical influence value psi_k = u v - r (u^2 + v^2) / 2, with
    u, v the standardised x and y (sum_k psi_k = 0).  x and y must not be constant."""
    u, _ = _standardised(x)
    v, _ = _standardised(y)
    r = float(np.clip(u @ v / len(u), -1.0, 1.0))
    return r, u * v - r / 2 * (u * u + v * v)


def spearman_influence(x: np.ndarray | Ranking, y: np.ndarray | Ranking) -> tuple[float, np.ndarray]:
    """Spearman's rho (average ranks) and each pair's empirical influence value (x, y: the values
    or their Ranking).

    rho is Pearson's r of the ranks R, S; a pair adds its own term (pearson_influence on the ranks)
    and moves every other pair's ranks: pair l raises R_k by H(x_k - x_l), which changes r by
    (v_k - r u_k) / (n sd(R)) (u, v the standardised ranks).  So
    psi_l = u_l v_l - r (u_l^2 + v_l^2) / 2 + sum_k H(x_k - x_l)(v_k - r u_k) / sd(R)
            + sum_k H(y_k - y_l)(u_k - r v_k) / sd(S),   centred to sum 0.
    Holding the ranks fixed (the first two terms only) misstates the variance when rho is far from 0."""
    rx, ry = (z if isinstance(z, Ranking) else Ranking.of(z) for z in (x, y))
    u, sd_x = _standardised(rx.ranks)
    v, sd_y = _standardised(ry.ranks)
    rho = float(np.clip(u @ v / len(u), -1.0, 1.0))
    psi = u * v - rho / 2 * (u * u + v * v) + rx.above(v - rho * u) / sd_x + ry.above(u - rho * v) / sd_y
    return rho, psi - psi.mean()


def dyadic_variance(psi: np.ndarray, a: np.ndarray, b: np.ndarray, items: int,
                    dyads: np.ndarray | None = None) -> float:
    """The variance of (1/n) sum_k psi_k when pairs that share an item may be correlated (module
    docstring), a and b item codes 0 .. items - 1.  Each item's and each dyad's term is scaled as in
    the delete-one jackknife: deleting item i removes its m_i pairs and moves the statistic by about
    S_i / (n - m_i), so sum_i S_i^2 / (n - m_i)^2 - sum_d D_d^2 / (n - m_d)^2 (without the scaling the
    variance is too small by about the share of the pairs the busiest items carry).  ``dyads``: each
    pair's dyad code, if known."""
    n = len(psi)
    per_item = np.bincount(a, psi, minlength=items) + np.bincount(b, psi, minlength=items)
    degree = np.bincount(a, minlength=items) + np.bincount(b, minlength=items)
    if dyads is None:
        dyads = np.unique(np.minimum(a, b).astype(np.int64) * items + np.maximum(a, b), return_inverse=True)[1].ravel()
    per_dyad = np.bincount(dyads, psi)
    dyad_size = np.bincount(dyads)
    return float(np.sum((per_item / np.maximum(n - degree, 1)) ** 2)
                 - np.sum((per_dyad / np.maximum(n - dyad_size, 1)) ** 2))


def effective_items(a: np.ndarray, b: np.ndarray, items: int) -> float:
    """(sum_i m_i^2)^2 / sum_i m_i^4, m_i the pairs of item i: the degrees of freedom of the variance
    when an item's pairs move together (Satterthwaite; n items of one pair each give n)."""
    degree = (np.bincount(a, minlength=items) + np.bincount(b, minlength=items)).astype(np.float64)
    squares = degree**2
    return float(squares.sum() ** 2 / (squares @ squares))


def pair_variance(psi: np.ndarray) -> float:
    """sum_k psi_k^2 / n^2: the variance if every pair were independent of every other."""
    return float(psi @ psi) / len(psi) ** 2


@dataclass(frozen=True)
class Pairs:
    """The pairs of one evaluation: gold scores and item codes 0 .. items - 1 (a_k != b_k)."""

    score: np.ndarray
    a: np.ndarray
    b: np.ndarray
    items: int

    @cached_property
    def score_ranking(self) -> Ranking:
        return Ranking.of(self.score)

    @cached_property
    def dyads(self) -> np.ndarray:
        """Each pair's dyad (unordered pair of items) as a code 0 .. dyads - 1."""
        key = np.minimum(self.a, self.b).astype(np.int64) * self.items + np.maximum(self.a, self.b)
        return np.unique(key, return_inverse=True)[1].ravel()

    @cached_property
    def df(self) -> float:
        """The degrees of freedom of the t quantile: effective_items - 1 (at least 1)."""
        return max(effective_items(self.a, self.b, self.items) - 1, 1.0)

    def degrees(self, pair_level: bool = False) -> float:
        """df of the item-clustered method, or n - 1 for the pair-level one."""
        return len(self.score) - 1.0 if pair_level else self.df

    def variance(self, psi: np.ndarray, pair_level: bool = False) -> float:
        """The variance of the statistic whose influence values are ``psi`` (item-clustered unless
        ``pair_level``), never below the pair-level one."""
        pairwise = pair_variance(psi)
        return pairwise if pair_level else max(dyadic_variance(psi, self.a, self.b, self.items, self.dyads), pairwise)


@dataclass(frozen=True)
class Correlation:
    """One correlation with its standard error and Fisher-z interval."""

    estimate: float
    se: float
    ci_low: float
    ci_high: float


def _quantile(level: float, df: float) -> float:
    return t_quantile((1 + level) / 2, df)


def fisher_interval(estimate: float, variance: float, level: float, df: float) -> Correlation:
    """atanh(r) -/+ t se / (1 - r^2), mapped back with tanh (r = +-1 gives [r, r])."""
    se = float(np.sqrt(variance))
    if abs(estimate) >= 1.0:
        return Correlation(estimate, se, estimate, estimate)
    half = _quantile(level, df) * se / (1 - estimate**2)
    z = np.arctanh(estimate)
    return Correlation(estimate, se, float(np.tanh(z - half)), float(np.tanh(z + half)))


def check_pairs(score: np.ndarray, cosine: np.ndarray, what: str) -> None:
    """Refuse what leaves a correlation undefined: fewer than MIN_PAIRS pairs, a constant score or
    a constant cosine."""
    if len(score) < MIN_PAIRS:
        fail("pair.too_few", what=what, pairs=len(score), minimum=MIN_PAIRS)
    for values, name in ((score, "the gold score"), (cosine, "the cosine")):
        if np.ptp(values) == 0:
            fail("pair.constant", what=what, name=name, value=f"{values[0]:.6g}")


def influences(pairs: Pairs, cosine: np.ndarray) -> dict[str, tuple[float, np.ndarray]]:
    """{'spearman': (rho, psi), 'pearson': (r, psi)} of the cosine against the score.

    Spearman ranks the cosines on the tie grid of embsql.core.agreement (2^-40): cosines that are
    equal in exact arithmetic (an item embedded twice, a pair given in both orders) differ by float64
    rounding noise, which would break their tie one way in one computation and the other way in
    another (Python and SQL, a rotated copy); distinct cosines closer than the grid are rare and move
    rho by about 1e-12."""
    return {"spearman": spearman_influence(np.rint(cosine / RESOLUTION), pairs.score_ranking),
            "pearson": pearson_influence(cosine, pairs.score)}


def evaluate(pairs: Pairs, cosine: np.ndarray, level: float, pair_level: bool = False) -> dict[str, Correlation]:
    """Spearman and Pearson of ``cosine`` against the gold score, with their intervals."""
    return {name: fisher_interval(estimate, pairs.variance(psi, pair_level), level, pairs.degrees(pair_level))
            for name, (estimate, psi) in influences(pairs, cosine).items()}


def eval_row(pairs: Pairs, cosine: np.ndarray, level: float, skipped: int) -> dict:
    """The row of one model (EVAL_COLUMNS)."""
    s, p = (evaluate(pairs, cosine, level)[name] for name in ("spearman", "pearson"))
    return {"spearman": s.estimate, "ci_low": s.ci_low, "ci_high": s.ci_high, "se": s.se,
            "pearson": p.estimate, "pearson_ci_low": p.ci_low, "pearson_ci_high": p.ci_high, "pearson_se": p.se,
            "pairs": len(cosine), "items": pairs.items, "skipped": skipped, "level": level,
            "calibrated": calibrated(pairs)}


def calibrated(pairs: Pairs) -> bool:
    """Whether the design is one where the simulations showed the interval calibrated."""
    return len(pairs.score) >= CALIBRATED_PAIRS and pairs.df >= CALIBRATED_DF


@dataclass(frozen=True)
class Difference:
    """estimate_a - estimate_b with its standard error, t interval and two-sided p-value."""

    estimate_a: float
    estimate_b: float
    difference: float
    se: float
    ci_low: float
    ci_high: float
    p_value: float


def difference(pairs: Pairs, cosine_a: np.ndarray, cosine_b: np.ndarray, level: float,
               pair_level: bool = False) -> dict[str, Difference]:
    """Per correlation, model A's minus model B's on the same pairs (influence values subtracted
    pair by pair, so what the two models share cancels)."""
    first, second = influences(pairs, cosine_a), influences(pairs, cosine_b)
    out = {}
    for name in first:
        (ra, psi_a), (rb, psi_b) = first[name], second[name]
        d = ra - rb
        se = float(np.sqrt(pairs.variance(psi_a - psi_b, pair_level)))
        df = pairs.degrees(pair_level)
        half = _quantile(level, df) * se
        if se > 0:
            p = 2 * (1 - t_cdf(abs(d) / se, df))
        else:                                # the same cosines: no difference, nothing to test
            p = 1.0
        out[name] = Difference(ra, rb, d, se, d - half, d + half, float(min(1.0, max(p, 1e-300))))
    return out


# ----------------------------------------------------------------------------------------------
# ranking K models on the same pairs (embsql.core.model_ranking's normal family)

def dyadic_covariance(psi: np.ndarray, a: np.ndarray, b: np.ndarray, items: int, dyads: np.ndarray) -> np.ndarray:
    """The K x K covariance of correlations whose influence values over the same pairs are the
    columns of ``psi`` (pairs x K), items recurring across pairs: the bilinear form of
    embsql.core.similarity.dyadic_variance, sum_i S_i S_i^T / (n - m_i)^2 - sum_d D_d D_d^T / (n - m_d)^2."""
    n = len(psi)
    degree = np.bincount(a, minlength=items) + np.bincount(b, minlength=items)
    dyad_size = np.bincount(dyads)
    per_item = np.stack([np.bincount(a, psi[:, j], minlength=items) + np.bincount(b, psi[:, j], minlength=items)
                         for j in range(psi.shape[1])], axis=1) / np.maximum(n - degree, 1)[:, None]
    per_dyad = np.stack([np.bincount(dyads, psi[:, j], minlength=len(dyad_size)) for j in range(psi.shape[1])],
                        axis=1) / np.maximum(n - dyad_size, 1)[:, None]
    return per_item.T @ per_item - per_dyad.T @ per_dyad


def similarity_family(pairs: Pairs, cosines: list[np.ndarray], statistic: str, *, replicates: int,
                      seed: int) -> tuple[np.ndarray, PairFamily]:
    """(the K correlations, their pair family): the normal family of the correlations with their
    item-clustered covariance, each pair of models studentised by embsql.compare_similarity's SE."""
    found = [influences(pairs, cosine)[statistic] for cosine in cosines]
    estimates = np.array([estimate for estimate, _ in found])
    psi = np.stack([influence for _, influence in found], axis=1)
    covariance = dyadic_covariance(psi, pairs.a, pairs.b, pairs.items, pairs.dyads)
    se = np.array([np.sqrt(pairs.variance(psi[:, a] - psi[:, b])) for a, b in pairs_of(len(cosines))])
    return estimates, normal_family(estimates, covariance, replicates=replicates, seed=seed, se=se)


def similarity_rows(names: list, pairs: Pairs, cosines: list[np.ndarray], statistic: str, *, level: float = 0.95,
                    replicates: int = 2000, seed: int = 42) -> list[dict]:
    """Rank K models by their Spearman or Pearson correlation with the gold scores of the same
    ``pairs`` (cosines: each model's, pair by pair): the normal family of the correlations with their
    item-clustered covariance (dyadic_covariance of the influence values), each pair of models
    studentised by embsql.compare_similarity's SE; ci_low/ci_high: each model's Fisher interval
    (embsql.similarity_eval's); calibrated from RANK_CALIBRATED_FROM[statistic] items on (the
    clusters of the item-clustered covariance)."""
    replicates, seed, level = check_replicates(replicates), check_seed(seed), check_level(level)
    if len(cosines) < 2:
        raise InputError(f"a ranking needs two or more models; there are {len(cosines)}")
    estimates, fam = similarity_family(pairs, cosines, statistic, replicates=replicates, seed=seed)
    own = [evaluate(pairs, cosine, level)[statistic] for cosine in cosines]
    calibrated = RANK_CALIBRATED_FROM.get(statistic) is not None and pairs.items >= RANK_CALIBRATED_FROM[statistic]
    return normal_rows(names, estimates, fam, statistic, [(c.ci_low, c.ci_high) for c in own], level=level,
                       calibrated=calibrated)
