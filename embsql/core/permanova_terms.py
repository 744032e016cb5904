"""Multi-term PERMANOVA with adonis2's semantics (vegan): sequential ("terms") or marginal ("margin")
sums of squares, pseudo-F against the full model's residual, permutation p-values.

The sum of squares a model explains is the squared norm of the projection of the centred data
onto the model's column space, ||P_M Y||^2 for unit vectors Y (or tr(P_M G) for a Gower-centred
matrix G from distances, McArdle and Anderson 2001).  A model's space is kept as

  * one absorbed factor (the main-effect factor with most levels): its part of ||P_M Y||^2 is
    sum_g ||s_g||^2 / n_g from group sums, O(n d) per permutation, never an n x p indicator;
  * a dense orthonormal basis Q of the other terms' columns after removing the factor's group means
    (Frisch-Waugh): its part is ||Q^T Y||^2, O(n p d).

Sequential models are nested, so each is a prefix of one chain of columns (two chains when the
absorbed factor is not the first term).  Margin: the full model and, for each term not contained in
a higher-order one (R's drop.scope, as vegan), the full model without it.

Permutations follow adonis2: the rows of the data (Y, or rows and columns of G) are permuted,
freely or within strata, and every model is refitted to the permuted rows; the design stays put.
For the marginal test of term k the permuted statistic is
  F*_k = [(SS*_full - SS*_without k) / df_k] / [(SS*_T - SS*_full) / df_res],
as vegan's anova.ccabymargin computes it.  A permuted Q^T Y* equals Q*^T Y with the rows of Q
permuted the other way, so a batch of permutations is one matrix product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.permutation import Design, permutation_result, shuffles, within_sums
from embsql.core.terms import Term, Variable, absorbed, check_levels, term_matrix
from embsql.errors import DesignError, DistanceTableError, InputError

BY_TERMS = ("sequential", "margin")
RANK_TOLERANCE = 1e-9         # a residualised column shorter than this (relative) adds no dimension
F64_MAX_N = 2000              # permuted sums in float64 up to this n, float32 beyond (as core.permutation)
BATCH = 64                    # permutations per matrix product
DENSE_COLUMNS_PER_BATCH = 4096
BLOCK_ROWS = 2048


@dataclass(frozen=True)
class Chain:
    """Nested model spaces: an absorbed factor (codes, or None) plus a prefix of an orthonormal basis."""

    codes: np.ndarray | None
    levels: int
    basis: np.ndarray                 # n x p, orthogonal to the constant and to the absorbed factor


@dataclass(frozen=True)
class Model:
    chain: int
    columns: int                      # how many basis columns of the chain
    rank: int                         # dimension of the model space (without the intercept)


def _remove_means(x: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    if codes is None:
        return x - x.mean(axis=0)
    sizes = np.bincount(codes).astype(float)
    means = np.zeros((len(sizes), x.shape[1]))
    np.add.at(means, codes, x)
    return x - (means / sizes[:, None])[codes]


def _extend(basis: np.ndarray, block: np.ndarray, codes) -> np.ndarray:
    """Orthonormal columns spanning block's part orthogonal to the constant, the factor and ``basis``."""
    scale = max(float(np.linalg.norm(block, axis=0).max(initial=0.0)), 1.0)
    r = _remove_means(block, codes)
    for _ in range(2):                       # twice: Gram-Schmidt against the basis, re-orthogonalised
        r = r - basis @ (basis.T @ r)
    if r.shape[1] == 0:
        return r
    u, s, _ = np.linalg.svd(r, full_matrices=False)
    return u[:, s > RANK_TOLERANCE * scale * np.sqrt(len(r))]


def _chain(factor: Term | None, others: list[Term], variables) -> tuple[Chain, list[int]]:
    """The chain and, after each of ``others``, how many basis columns it has."""
    codes = None if factor is None else variables[factor.columns[0]].codes
    levels = 0 if factor is None else variables[factor.columns[0]].levels
    n = next(iter(variables.values())).rows
    basis, cuts = np.zeros((n, 0)), []
    for term in others:
        basis = np.hstack([basis, _extend(basis, term_matrix(term, variables), codes)])
        cuts.append(basis.shape[1])
    return Chain(codes, levels, basis), cuts


@dataclass(frozen=True)
class Plan:
    """What to compute: chains, models on them, and per tested term (label, df, with, without)."""

    chains: list[Chain]
    models: list[Model]
    rows: list[tuple[str, int, int, int | None]]   # label, df, model index with the term, without (None: null)
    full: int
    df_residual: int


def _model(chains, chain_index, columns) -> Model:
    chain = chains[chain_index]
    return Model(chain_index, columns, (chain.levels - 1 if chain.codes is not None else 0) + columns)


def _factor(terms, variables, min_levels):
    factor = absorbed(terms, variables)
    return factor if factor is not None and variables[factor.columns[0]].levels >= min_levels else None


def plan(terms: list[Term], variables: dict[str, Variable], by_terms: str, min_levels: int = 2) -> Plan:
    if by_terms not in BY_TERMS:
        raise InputError(f"by_terms must be 'sequential' or 'margin', not {by_terms!r}", kind="argument.by_terms")
    check_levels(terms, variables)
    n = next(iter(variables.values())).rows
    factor = _factor(terms, variables, min_levels)
    chains, models = [], []
    if by_terms == "sequential":
        at = len(terms) if factor is None else terms.index(factor)
        if at > 0:                                     # models before the factor enters: no absorption
            chain, cuts = _chain(None, terms[:at], variables)
            chains.append(chain)
            models += [_model(chains, 0, c) for c in cuts]
        if factor is not None:
            chain, cuts = _chain(factor, [t for t in terms if t is not factor], variables)
            chains.append(chain)
            # model k (k >= at) holds the factor and the k other terms before or after it
            models += [_model(chains, len(chains) - 1, cuts[k - 1] if k else 0) for k in range(at, len(terms))]
        rows = []
        for k, term in enumerate(terms):
            df = models[k].rank - (models[k - 1].rank if k else 0)
            if df <= 0:
                raise DesignError(f"term {term.label!r} adds nothing to the terms before it (zero df): it is "
                                  "constant or collinear with them; drop it or change the order")
            rows.append((term.label, df, k, k - 1 if k else None))
        full = len(models) - 1
    else:
        chain, cuts = _chain(factor, [t for t in terms if t is not factor], variables)
        chains.append(chain)
        models.append(_model(chains, 0, cuts[-1] if cuts else 0))
        full, rows = 0, []
        for term in terms:
            if any(set(term.columns) < set(other.columns) for other in terms):
                continue                               # contained in an interaction: not a marginal term
            rest = [t for t in terms if t is not term]
            if not rest:
                reduced = None
            else:
                f = _factor(rest, variables, min_levels)
                chain, cuts = _chain(f, [t for t in rest if t is not f], variables)
                chains.append(chain)
                models.append(_model(chains, len(chains) - 1, cuts[-1] if cuts else 0))
                reduced = len(models) - 1
            df = models[0].rank - (models[reduced].rank if reduced is not None else 0)
            if df <= 0:
                raise DesignError(f"term {term.label!r} adds nothing to the other terms (zero df): it is collinear "
                                  "with them")
            rows.append((term.label, df, 0, reduced))
    df_residual = n - 1 - models[full].rank
    if df_residual <= 0:
        raise DesignError(f"the terms fit every item exactly (n = {n}, model df = {models[full].rank}): no residual "
                          "left to test against")
    return Plan(chains, models, rows, full, df_residual)


class _Projections:
    """||P_M Y*||^2 of every model for batches of permuted rows, from vectors (Y, n x d, centred) or
    from a Gower-centred matrix (G, n x n)."""

    def __init__(self, plan_: Plan, y: np.ndarray | None = None, gower: np.ndarray | None = None, absorbers=None):
        self.plan, self.y, self.gower = plan_, y, gower
        # per chain, SS_W of the absorbed factor for permuted rows (core.permutation.within_sums), or None
        self.absorbers = absorbers or [None] * len(plan_.chains)
        self.ss_total = float(np.einsum("ik,ik->", y, y)) if y is not None else None
        given = y if y is not None else gower
        assert given is not None                  # one of y and gower
        n = len(given)
        self.dtype = np.float64 if n <= F64_MAX_N else np.float32
        self.data = given.astype(self.dtype)
        self.orders = [None if c.codes is None else np.argsort(c.codes, kind="stable") for c in plan_.chains]
        self.sizes = [None if c.codes is None else np.bincount(c.codes).astype(float) for c in plan_.chains]
        self.pairs = [None if c.codes is None or gower is None else _within_pairs(c.codes) for c in plan_.chains]

    def _absorbed(self, chain: int, perms: np.ndarray, data, exact: bool) -> np.ndarray:
        """sum_g ||sum_{i in g} y*_i||^2 / n_g (vectors) or sum_g (1/n_g) sum_{i,j in g} G*_ij."""
        order, sizes = self.orders[chain], self.sizes[chain]
        out = np.zeros(len(perms))
        if order is None:
            return out
        assert sizes is not None
        within = self.absorbers[chain]
        if within is not None and not exact:     # permuted rows: the one-factor test's own kernel
            batch = getattr(within, "batch", None)
            ss_w = batch(list(perms)) if batch is not None else np.array([within(p) for p in perms])
            return self.ss_total - np.asarray(ss_w, dtype=float)
        starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        equal = bool(np.all(sizes == sizes[0]))
        if self.gower is not None:
            pairs = self.pairs[chain]
            assert pairs is not None
            first, second, weight = pairs
            return np.array([float(data[perm[first], perm[second]] @ weight) for perm in perms])
        for b, perm in enumerate(perms):
            rows = perm[order]
            if equal:
                size = int(sizes[0])
                step = max(1, BLOCK_ROWS // size) * size
                for low in range(0, len(rows), step):
                    s = data[rows[low:low + step]].reshape(-1, size, data.shape[1]).sum(axis=1, dtype=np.float64)
                    out[b] += float(np.einsum("gk,gk->", s, s)) / size
            else:
                s = np.add.reduceat(data[rows], starts, axis=0).astype(np.float64)
                out[b] = float(np.einsum("gk,gk->g", s, s) @ (1.0 / sizes))
        return out

    def _dense(self, chain: int, perms: np.ndarray, data) -> np.ndarray:
        """(B, p): squared norm of each basis column's projection, q*^T Y, for each permutation."""
        basis = self.plan.chains[chain].basis
        p = basis.shape[1]
        out = np.zeros((len(perms), p))
        if p == 0:
            return out
        step = max(1, DENSE_COLUMNS_PER_BATCH // p)
        q = basis.astype(self.dtype)
        for low in range(0, len(perms), step):
            part = perms[low:low + step]
            stacked = np.empty((len(q), len(part) * p), dtype=self.dtype)
            for b, perm in enumerate(part):
                stacked[perm, b * p:(b + 1) * p] = q      # row i of the permuted data is row perm[i]
            if self.gower is not None:
                values = np.einsum("ij,ij->j", stacked, data @ stacked, dtype=np.float64)
            else:
                projected = (data.T @ stacked).astype(np.float64)
                values = np.einsum("kj,kj->j", projected, projected)
            out[low:low + len(part)] = values.reshape(len(part), p)
        return out

    def __call__(self, perms: np.ndarray, exact: bool = False) -> np.ndarray:
        """(B, models): explained sums of squares.  ``exact``: in float64 whatever n (observed values)."""
        data = (self.y if self.y is not None else self.gower) if exact else self.data
        saved, self.dtype = self.dtype, (np.float64 if exact else self.dtype)
        try:
            parts = [(self._absorbed(c, perms, data, exact), np.cumsum(self._dense(c, perms, data), axis=1))
                     for c in range(len(self.plan.chains))]
        finally:
            self.dtype = saved
        out = np.empty((len(perms), len(self.plan.models)))
        for m, model in enumerate(self.plan.models):
            absorbed_ss, dense = parts[model.chain]
            out[:, m] = absorbed_ss + (dense[:, model.columns - 1] if model.columns else 0.0)
        return out


def _within_pairs(codes: np.ndarray):
    """Every ordered pair (i, j) of rows in one group, with weight 1/n_g: sum_g (1/n_g) sum_{i,j in g} G_ij."""
    firsts, seconds, weights = [], [], []
    for g in range(int(codes.max()) + 1):
        members = np.flatnonzero(codes == g)
        firsts.append(np.repeat(members, len(members)))
        seconds.append(np.tile(members, len(members)))
        weights.append(np.full(len(members) ** 2, 1.0 / len(members)))
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(weights)


@dataclass(frozen=True)
class TermTest:
    label: str
    df: int
    ss: float
    f: float
    p_value: float | None


@dataclass(frozen=True)
class TermsResult:
    """Per tested term, and the residual and total sums of squares."""

    terms: list[TermTest]
    ss_residual: float
    df_residual: int
    ss_total: float
    permutations: int
    n: int

    def rows(self) -> list[dict]:
        """term, df, ss, r2, f, p_value: the terms, then 'Residual' and 'Total' (as adonis2 prints)."""
        total = self.ss_total
        out = [{"term": t.label, "df": t.df, "ss": t.ss, "r2": _ratio(t.ss, total), "f": t.f, "p_value": t.p_value}
               for t in self.terms]
        out.append({"term": "Residual", "df": self.df_residual, "ss": self.ss_residual,
                    "r2": _ratio(self.ss_residual, total), "f": None, "p_value": None})
        out.append({"term": "Total", "df": self.n - 1,
                    "ss": total, "r2": 1.0, "f": None, "p_value": None})
        return out


def _ratio(a: float, b: float) -> float:
    return min(max(a / b, 0.0), 1.0)


def _statistics(plan_: Plan, explained: np.ndarray, ss_total: float) -> tuple[np.ndarray, np.ndarray]:
    """(B, terms) pseudo-F and SS of each tested term from the models' explained SS (B, models)."""
    residual = ss_total - explained[:, plan_.full]
    ss = np.stack([explained[:, with_] - (explained[:, without] if without is not None else 0.0)
                   for _, _, with_, without in plan_.rows], axis=1)
    dfs = np.array([df for _, df, _, _ in plan_.rows], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (ss / dfs) / (residual[:, None] / plan_.df_residual)
    f = np.where(residual[:, None] > 0, f, np.inf)
    return f, ss


def permanova_terms(plan_: Plan, strata: np.ndarray | None, *, unit: np.ndarray | None = None,
                    gower: np.ndarray | None = None, permutations: int = 999, seed: int = 42,
                    progress=None, method: str = "auto") -> TermsResult:
    """Test every row of ``plan_`` on unit vectors ``unit`` (n x d) or a Gower-centred matrix ``gower``.

    Rows must be in canonical order (sorted by stratum; core.permutation.canonical_order).  With
    vectors, the absorbed factor's sums for permuted rows come from the one-factor test's kernel
    (core.permutation.within_sums: a Gram matrix or the coordinates, ``method``), so a one-term call
    gives the one-factor call's numbers."""
    check_permutations(permutations)
    check_seed(seed)
    y = None if unit is None else centred(unit)
    given = y if y is not None else gower
    assert given is not None                      # one of unit and gower
    n = len(given)
    if n < 3:
        raise DesignError(f"PERMANOVA needs at least 3 items; there are {n}")
    strata_codes = (np.zeros(n, dtype=np.int64) if strata is None
                    else np.unique(np.asarray(strata, dtype=object).astype(str), return_inverse=True)[1])
    ss_total = float(np.einsum("ik,ik->", y, y)) if y is not None else float(np.trace(given))
    if not ss_total > 0:
        raise DesignError("every item is the same (SS_T = 0): F is undefined")
    absorbers = [None if unit is None or c.codes is None else
                 within_sums(unit, Design(c.codes, strata_codes.astype(np.int64), c.levels), method, permutations)[0]
                 for c in plan_.chains]
    projections = _Projections(plan_, y=y, gower=gower, absorbers=absorbers)
    explained = projections(np.arange(n)[None, :], exact=True)
    f_observed, ss_observed = _statistics(plan_, explained, ss_total)
    permuted = np.empty((permutations, len(plan_.rows)))
    stream = shuffles(Design(np.zeros(n, dtype=np.int64), strata_codes.astype(np.int64), 1), permutations, seed)
    for low in range(0, permutations, BATCH):
        perms = np.stack([next(stream) for _ in range(min(BATCH, permutations - low))])
        permuted[low:low + len(perms)] = _statistics(plan_, projections(perms), ss_total)[0]
        if progress is not None:
            progress(low + len(perms), permutations)
    tests = []
    for k, (label, df, _, _) in enumerate(plan_.rows):
        result = permutation_result(f_observed[0, k], permuted[:, k], "terms")
        tests.append(TermTest(label, df, float(ss_observed[0, k]), float(f_observed[0, k]), result.p_value))
    ss_residual = ss_total - float(explained[0, plan_.full])
    return TermsResult(tests, max(ss_residual, 0.0), plan_.df_residual, ss_total, permutations, n)


def centred(unit: np.ndarray) -> np.ndarray:
    return unit - unit.mean(axis=0)


def gower_matrix(squared: np.ndarray) -> np.ndarray:
    """G = -1/2 J D^2 J, J = I - 11^T / n (Gower 1966)."""
    a = -0.5 * np.asarray(squared, dtype=float)
    return a - a.mean(axis=0) - a.mean(axis=1)[:, None] + a.mean()


def squared_from_pairs(first, second, distance, ids) -> np.ndarray:
    """The n x n matrix of squared distances from pairs (i, j, d); every pair of labelled ids must be there."""
    position = {item: k for k, item in enumerate(ids)}
    for item in (*first, *second):
        if item not in position:
            raise DistanceTableError(f"id {item} in the distance table has no row in the labels table")
    a = np.fromiter((position[x] for x in first), np.int64, len(first))
    b = np.fromiter((position[x] for x in second), np.int64, len(second))
    d = np.asarray(distance, dtype=float)
    if np.any(~np.isfinite(d)) or np.any(d < 0):
        raise DistanceTableError("the distance table has a NULL, negative or non-finite distance")
    squared = np.full((len(ids), len(ids)), np.nan)
    squared[a, b] = squared[b, a] = d * d
    np.fill_diagonal(squared, 0.0)
    missing = int(np.isnan(squared[np.triu_indices(len(ids), 1)]).sum())
    if missing:
        raise DistanceTableError(f"the distance table lacks {missing} of the {len(ids) * (len(ids) - 1) // 2} pairs "
                                 "of the labelled ids; every pair needs a distance")
    return squared
