"""Multi-term PERMANOVA: sequential ("terms") or marginal ("margin") sums of squares, pseudo-F against
the full model's residual, and permutation p-values by Freedman-Lane (the default) or adonis2's
free permutation of rows.

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

Term k is tested with its model W (the terms before it and k, or the full model F for a marginal
test) against its reduced model R (the terms before it, or F without k):
  F_k = [(||P_W Y||^2 - ||P_R Y||^2) / df_k] / [(||Y||^2 - ||P_F Y||^2) / df_res].

permute='rows' (adonis2, vegan): the rows of Y (rows and columns of G) are permuted, freely or
within strata, and every model is refitted to them; for a marginal term vegan's
anova.ccabymargin form.  A term after a strong factor then has a null far too wide: the permuted
rows carry the factor's effect into the term's columns and the residual.

permute='residuals' (Freedman and Lane 1983; Anderson and Legendre 1999; Anderson and ter Braak
2003, the default of Anderson's PERMANOVA+): for term k the residuals of its reduced model,
E_R = (I - P_R) Y, are permuted and added back to the fit, Y* = P_R Y + Pi E_R.  Every projection
that enters F_k contains R's space (R is inside W and F), so the fit drops out and
  F*_k = [(||P_W Pi E_R||^2 - ||P_R Pi E_R||^2) / df_k] / [(||E_R||^2 - ||P_F Pi E_R||^2) / df_res]:
the same sums of squares as the row permutation, of the permuted residuals instead of the permuted
rows (for distances, of Pi G_R Pi^T with G_R = (I - P_R) G (I - P_R)).  So a permutation costs what
a row permutation costs, once per distinct reduced model.  The first term of a sequential test, and
a one-term model, have the intercept as reduced model: their residuals are the centred rows, and
Freedman-Lane is the row permutation itself (so a one-term call gives the one-factor test's numbers).
Strata restrict the permutation Pi in both schemes.

A permuted Q^T Y* equals Q*^T Y with the rows of Q permuted the other way, so a batch of
permutations is one matrix product.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from embsql.core.arguments import check_permutations, check_seed
from embsql.core.permutation import (
    FEW_GROUPS,
    Design,
    PackedGram,
    choose_method,
    gather_threads,
    gram_dtype,
    over_threads,
    permutation_result,
    shuffles,
    within_pairs,
    within_sums,
)
from embsql.core.terms import Term, Variable, absorbed, check_levels, term_matrix
from embsql.errors import DesignError, DistanceTableError, InputError, fail

GramType = type[np.float64] | type[np.float32]   # the precision a packed Gram matrix is kept in

SUMS = ("sequential", "margin")
# what a permutation permutes: the reduced model's residuals (Freedman-Lane; an interaction's within the
# levels of its first factor, see permute_within), the rows (adonis2), or every term's residuals freely
PERMUTE = ("residuals", "rows", "residuals_free")
RANK_TOLERANCE = 1e-9         # a residualised column shorter than this (relative) adds no dimension
F64_MAX_N = 2000              # permuted sums in float64 up to this n, float32 beyond (as core.permutation)
BATCH = 64                    # permutations per matrix product
DENSE_COLUMNS_PER_BATCH = 4096
BLOCK_ROWS = 2048
SMALL_GROUP = 8               # equal groups up to this size have their block means summed slice by slice


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
    return x - group_means(x, codes)[codes]


def group_means(x: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """(levels, columns): the mean row of each code, by segment sums of the rows in code order
    (np.add.at is several times slower on n x d)."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    sums = np.add.reduceat(x[order], np.r_[0, np.cumsum(sizes)[:-1]], axis=0)
    return sums / sizes[:, None]


def _extend(basis: np.ndarray, block: np.ndarray, codes: np.ndarray | None) -> np.ndarray:
    """Orthonormal columns spanning block's part orthogonal to the constant, the factor and ``basis``."""
    scale = max(float(np.linalg.norm(block, axis=0).max(initial=0.0)), 1.0)
    r = _remove_means(block, codes)
    for _ in range(2):                       # twice: Gram-Schmidt against the basis, re-orthogonalised
        r = r - basis @ (basis.T @ r)
    if r.shape[1] == 0:
        return r
    u, s, _ = np.linalg.svd(r, full_matrices=False)
    return u[:, s > RANK_TOLERANCE * scale * np.sqrt(len(r))]


def _chain(factor: Term | None, others: list[Term], variables: dict[str, Variable]) -> tuple[Chain, list[int]]:
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
    # per row: (factor, codes) within whose levels its Freedman-Lane residuals are permuted, or None
    within: tuple[tuple[str, np.ndarray] | None, ...] = ()


def _model(chains: list[Chain], chain_index: int, columns: int) -> Model:
    chain = chains[chain_index]
    return Model(chain_index, columns, (chain.levels - 1 if chain.codes is not None else 0) + columns)


def _factor(terms: list[Term], variables: dict[str, Variable], min_levels: int) -> Term | None:
    factor = absorbed(terms, variables)
    return factor if factor is not None and variables[factor.columns[0]].levels >= min_levels else None


def permute_within(term: Term, variables: dict[str, Variable]) -> tuple[str, np.ndarray] | None:
    """An interaction's first factor (its name and codes), within whose levels permute='residuals' permutes
    the interaction's reduced-model residuals; None for a main term or an interaction of covariates.

    Why: on the sphere a strong factor gives its levels unequal spreads (1 - |m_a|^2 differs between
    a's centres), and with unequal cells the interaction's contrasts weigh a's levels unequally, so
    residuals permuted across a's levels make the null too narrow: free Freedman-Lane rejected too often
    at 5% for a:b after a strong a on some draws of a's centres, and far too often with levels of very
    unequal spread and size; within a's levels it held the level (validation/terms_validity_interaction.txt;
    validation/calibration.json: terms.interaction_free and terms.interaction_within).  Within a's levels
    the exchangeability that the null needs holds whatever a's spreads; a:b is still tested, since b's levels vary within a's."""
    if term.degree < 2:
        return None
    for name in term.columns:
        variable = variables[name]
        if variable.codes is not None:
            return name, variable.codes
    return None


def plan(terms: list[Term], variables: dict[str, Variable], sums: str, min_levels: int = 2) -> Plan:
    if sums not in SUMS:
        raise InputError(f"sums must be 'sequential' or 'margin', not {sums!r}", kind="argument.sums")
    check_levels(terms, variables)
    n = next(iter(variables.values())).rows
    factor = _factor(terms, variables, min_levels)
    chains, models = [], []
    if sums == "sequential":
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
        tested = list(terms)
        full = len(models) - 1
    else:
        chain, cuts = _chain(factor, [t for t in terms if t is not factor], variables)
        chains.append(chain)
        models.append(_model(chains, 0, cuts[-1] if cuts else 0))
        full, rows, tested = 0, [], []
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
            tested.append(term)
    df_residual = n - 1 - models[full].rank
    if df_residual <= 0:
        raise DesignError(f"the terms fit every item exactly (n = {n}, model df = {models[full].rank}): no residual "
                          "left to test against")
    return Plan(chains, models, rows, full, df_residual,
                tuple(permute_within(term, variables) if without is not None else None
                      for term, (_, _, _, without) in zip(tested, rows)))


def permuted_columns(q: np.ndarray, perms: np.ndarray) -> np.ndarray:
    """(n, B p): for each permutation the columns q with their rows moved the other way, so that
    X^T (this) = q^T X* for permuted data X*, row i of which is row perm[i] of X (q*[perm[i]] = q[i]).
    Built by a gather through the inverse permutations (sequential writes)."""
    inverse = np.empty_like(perms)
    rows = np.arange(perms.shape[1])
    for b, perm in enumerate(perms):
        inverse[b, perm] = rows
    return q[inverse.T].reshape(len(q), -1)


def residualise(x: np.ndarray, chain: Chain, columns: int) -> np.ndarray:
    """(I - P_M) x for the model M of ``chain`` with its first ``columns`` basis columns (and the
    intercept): the factor's group means (or the mean) removed, then the basis's part."""
    r = _remove_means(x, chain.codes)
    q = chain.basis[:, :columns]
    return r - q @ (q.T @ r)


def residual_gower(gower: np.ndarray, chain: Chain, columns: int) -> np.ndarray:
    """G_M = (I - P_M) G (I - P_M): the Gower matrix of the model's residuals."""
    once = residualise(gower, chain, columns)
    twice = residualise(np.ascontiguousarray(once.T), chain, columns)
    return (twice + twice.T) / 2                 # symmetric to the last bit


class _ResidualPairs:
    """sum_h ||sum_{i in h} x_{perm i}||^2 / n_h over a factor's groups h, for rows x of any length (a
    reduced model's residuals, not unit vectors): from the packed upper triangle of X X^T, the
    squared lengths sum_i |x_{perm i}|^2 / n_{h(i)} plus twice the pairs i < j of a group, weighted 1 / n_h.
    Random reads of an n x n matrix, sum_h n_h (n_h - 1) / 2 per permutation, like the one-factor test's pairs."""

    def __init__(self, x: np.ndarray, codes: np.ndarray, dtype: GramType) -> None:
        self.packed = PackedGram(x, dtype)
        self.first, self.second, self.weight = within_pairs(codes)
        self.lengths = np.einsum("ik,ik->i", x, x)
        self.inverse_sizes = 1.0 / np.bincount(codes)[codes]

    def _pair_sums(self, stacked: np.ndarray) -> np.ndarray:
        a, b = stacked[:, self.first], stacked[:, self.second]
        index = self.packed.base[np.minimum(a, b)] + np.maximum(a, b)
        return np.take(self.packed.values, index).astype(np.float64) @ self.weight

    def __call__(self, perms: np.ndarray) -> np.ndarray:
        pairs = np.concatenate(over_threads(self._pair_sums, perms, len(perms) * len(self.first)))
        return self.lengths[perms] @ self.inverse_sizes + 2.0 * pairs


def _residual_absorber(x: np.ndarray, codes: np.ndarray, method: str, permutations: int) -> _ResidualPairs | None:
    """The absorbed factor's sums for permuted residual rows by the pairs route where it pays
    (core.permutation.choose_method, as for the rows), else None (group sums of the rows)."""
    dtype = gram_dtype(len(x))
    if method == "auto":
        method = choose_method(len(x), x.shape[1], codes, permutations)
    return _ResidualPairs(x, codes, dtype) if method == "pairs" and dtype is not None else None


class _Projections:
    """||P_M X*||^2 of the models ``wanted`` for batches of permuted rows of X: the centred vectors
    (n x d) or, for Freedman-Lane, a reduced model's residuals, or a Gower-type matrix (n x n).

    ``absorbers``: per chain index, a callable giving the absorbed factor's part for a batch of
    permutations (the pairs routes); chains without one sum the permuted rows by group."""

    def __init__(self, plan_: Plan, wanted: Iterable[int], x: np.ndarray | None = None,
                 gower: np.ndarray | None = None, absorbers: dict | None = None) -> None:
        self.plan, self.gower = plan_, gower
        self.wanted = sorted(set(wanted))
        self.exact_data = x if x is not None else gower
        assert self.exact_data is not None       # one of x and gower
        n = len(self.exact_data)
        self.dtype = np.float64 if n <= F64_MAX_N else np.float32
        self.data = self.exact_data.astype(self.dtype)
        chains = {plan_.models[m].chain for m in self.wanted}
        self.columns = {c: max(plan_.models[m].columns for m in self.wanted if plan_.models[m].chain == c)
                        for c in chains}
        self.absorbers = absorbers or {}
        self.orders: dict[int, np.ndarray | None] = {}
        self.sizes: dict[int, np.ndarray | None] = {}
        self.pairs: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray] | None] = {}
        for c in chains:
            codes = plan_.chains[c].codes
            self.orders[c] = None if codes is None else np.argsort(codes, kind="stable")
            self.sizes[c] = None if codes is None else np.bincount(codes).astype(float)
            self.pairs[c] = None if codes is None or gower is None else _within_pairs(codes)

    def _absorbed(self, chain: int, perms: np.ndarray, data: np.ndarray, exact: bool) -> np.ndarray:
        """sum_g ||sum_{i in g} x*_i||^2 / n_g (vectors) or sum_g (1/n_g) sum_{i,j in g} G*_ij."""
        order, sizes = self.orders[chain], self.sizes[chain]
        out = np.zeros(len(perms))
        if order is None:
            return out
        assert sizes is not None
        if chain in self.absorbers and not exact:      # permuted rows: a pairs route
            return np.asarray(self.absorbers[chain](perms), dtype=float)
        if self.gower is not None:
            pairs = self.pairs[chain]
            assert pairs is not None
            first, second, weight = pairs
            return np.array([float(data[perm[first], perm[second]] @ weight) for perm in perms])
        codes = self.plan.chains[chain].codes
        assert codes is not None
        if not exact and len(sizes) <= FEW_GROUPS:   # few groups: the group sums of a batch in one product
            indicator = np.zeros((len(perms) * len(sizes), len(data)), dtype=data.dtype)
            for b, perm in enumerate(perms):
                indicator[b * len(sizes) + codes, perm] = 1.0      # row perm[i] goes to row i's group
            sums = (indicator @ data).reshape(len(perms), len(sizes), -1).astype(np.float64)
            return np.einsum("bgk,bgk->bg", sums, sums) @ (1.0 / sizes)
        starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
        equal = bool(np.all(sizes == sizes[0]))
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

    def _dense(self, chain: int, perms: np.ndarray, data: np.ndarray) -> np.ndarray:
        """(B, p): squared norm of each basis column's projection, q*^T X, for each permutation."""
        basis = self.plan.chains[chain].basis[:, :self.columns[chain]]
        p = basis.shape[1]
        out = np.zeros((len(perms), p))
        if p == 0:
            return out
        step = max(1, DENSE_COLUMNS_PER_BATCH // p)
        q = basis.astype(self.dtype)
        for low in range(0, len(perms), step):
            part = perms[low:low + step]
            stacked = permuted_columns(q, part)
            if self.gower is not None:
                values = np.einsum("ij,ij->j", stacked, data @ stacked, dtype=np.float64)
            else:
                projected = (data.T @ stacked).astype(np.float64)
                values = np.einsum("kj,kj->j", projected, projected)
            out[low:low + len(part)] = values.reshape(len(part), p)
        return out

    def __call__(self, perms: np.ndarray, exact: bool = False) -> np.ndarray:
        """(B, models): explained sums of squares of the wanted models (NaN for the others).
        ``exact``: in float64 whatever n (observed values)."""
        data = self.exact_data if exact else self.data
        assert data is not None                  # one of x and gower
        saved, self.dtype = self.dtype, (np.float64 if exact else self.dtype)
        try:
            parts = {c: (self._absorbed(c, perms, data, exact), np.cumsum(self._dense(c, perms, data), axis=1))
                     for c in self.columns}
        finally:
            self.dtype = saved
        out = np.full((len(perms), len(self.plan.models)), np.nan)
        for m in self.wanted:
            model = self.plan.models[m]
            absorbed_ss, dense = parts[model.chain]
            out[:, m] = absorbed_ss + (dense[:, model.columns - 1] if model.columns else 0.0)
        return out


def _within_pairs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
    permute: str = "residuals"        # what was permuted: each term's reduced-model residuals, or the rows

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


def _statistics(plan_: Plan, explained: np.ndarray, ss_total: float,
                rows: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(B, terms) pseudo-F and SS of the tested terms ``rows`` (all by default) from the models'
    explained SS (B, models) and the data's total SS: the observed rows, permuted rows, or a reduced
    model's permuted residuals (Freedman-Lane: ``ss_total`` is then ||E_R||^2)."""
    tested = [plan_.rows[k] for k in (range(len(plan_.rows)) if rows is None else rows)]
    residual = ss_total - explained[:, plan_.full]
    ss = np.stack([explained[:, with_] - (explained[:, without] if without is not None else 0.0)
                   for _, _, with_, without in tested], axis=1)
    dfs = np.array([df for _, df, _, _ in tested], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = (ss / dfs) / (residual[:, None] / plan_.df_residual)
    f = np.where(residual[:, None] > 0, f, np.inf)
    return f, ss


PERMUTE_RULE = "'residuals' (Freedman-Lane), 'rows' (adonis2) or 'residuals_free'"


def check_permute(permute: object) -> str:
    """``permute`` itself, if it is one of PERMUTE; else the catalogue's argument.permute error."""
    if not isinstance(permute, str) or permute not in PERMUTE:
        fail("argument.permute", name="permute", rule=PERMUTE_RULE, value=repr(permute))
    return permute


def _remove_block_means(band: np.ndarray, row_codes: np.ndarray, column_codes: np.ndarray) -> None:
    """K_rows band K_columns in place, K = I - H_c: every block of rows and columns of one group (contiguous
    runs of the codes) loses its row and column means."""
    for axis, codes in ((1, column_codes), (0, row_codes)):
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        sizes = np.diff(np.r_[starts, len(codes)])
        if np.all(sizes == sizes[0]) and sizes[0] <= SMALL_GROUP:
            # equal small groups (paraphrase sets): a sum of strided slices, twice as fast as .mean()
            size = int(sizes[0])
            shaped = band.reshape(-1, size, band.shape[1]) if axis == 0 else band.reshape(band.shape[0], -1, size)
            members = [shaped[:, k] for k in range(size)] if axis == 0 else [shaped[:, :, k] for k in range(size)]
            total = members[0].copy()
            for member in members[1:]:
                total += member
            total *= 1.0 / size
            shaped -= np.expand_dims(total, 1 if axis == 0 else 2)
        else:
            means = np.add.reduceat(band, starts, axis=axis) / (sizes[:, None] if axis == 0 else sizes)
            band -= np.repeat(means, sizes, axis=axis)


class _FactorGram:
    """sum_h ||sum_{i in h} x_{perm i}||^2 / n_h over a factor's groups h, for x = y (the centred rows)
    and x = e = (I - H_c) y (their residuals from the same factor's group means) at once.

    Both packed upper triangles are kept with rows in the factor's order, in row bands cut at group
    starts, so that K = I - H_c is block diagonal: a band of E E^T = K (Y Y^T) K is the band of Y Y^T less
    its blocks' row and column means, O(n^2) (in threads) instead of a second n^2 d / 2 product.  One
    index per random read serves both matrices."""

    def __init__(self, y: np.ndarray, codes: np.ndarray, dtype: GramType) -> None:
        n = len(y)
        order = np.argsort(codes, kind="stable")
        self.position = np.empty(n, dtype=np.int64)
        self.position[order] = np.arange(n)            # row r of y is row position[r] of the sorted copy
        ordered = codes[order]
        sizes = np.bincount(codes)
        starts = np.r_[0, np.cumsum(sizes)[:-1]]
        lows = np.unique(np.r_[starts, n][np.searchsorted(starts, np.arange(0, n, BLOCK_ROWS))])
        lows = lows[lows < n]
        heights, widths = np.diff(np.r_[lows, n]), n - lows
        offsets = np.r_[0, np.cumsum(heights * widths)]
        z = np.ascontiguousarray(y[order], dtype=dtype)
        self.rows, self.residuals = np.empty(int(offsets[-1]), dtype=dtype), np.empty(int(offsets[-1]), dtype=dtype)
        bands = [(low, height, slice(offset, offset + height * width), width)
                 for low, height, width, offset in zip(lows, heights, widths, offsets[:-1])]
        for low, height, where, width in bands:
            np.matmul(z[low:low + height], z[low:].T, out=self.rows[where].reshape(height, width))

        def centre(band: tuple[int, int, slice, int]) -> None:
            low, height, where, width = band
            residual = self.residuals[where].reshape(height, width)
            np.copyto(residual, self.rows[where].reshape(height, width))
            _remove_block_means(residual, ordered[low:low + height], ordered[low:])
        with ThreadPoolExecutor(gather_threads()) as pool:
            list(pool.map(centre, bands))
        band_of = np.searchsorted(lows, np.arange(n), side="right") - 1
        self.base = offsets[band_of] + (np.arange(n) - lows[band_of]) * widths[band_of] - lows[band_of]
        e = _remove_means(y, codes)
        self.lengths = np.stack([np.einsum("ik,ik->i", y, y), np.einsum("ik,ik->i", e, e)], axis=1)
        self.first, self.second, self.weight = within_pairs(codes)
        self.inverse_sizes = 1.0 / sizes[codes]

    def _pair_sums(self, stacked: np.ndarray) -> np.ndarray:
        sorted_rows = self.position[stacked]
        a, b = sorted_rows[:, self.first], sorted_rows[:, self.second]
        index = self.base[np.minimum(a, b)] + np.maximum(a, b)
        return np.stack([np.take(values, index).astype(np.float64) @ self.weight
                         for values in (self.rows, self.residuals)], axis=1)

    def __call__(self, perms: np.ndarray) -> np.ndarray:
        """(B, 2): the factor's part of y's and of e's permuted rows."""
        pairs = np.concatenate(over_threads(self._pair_sums, perms, 2 * len(perms) * len(self.first)))
        return np.einsum("bik,i->bk", self.lengths[perms], self.inverse_sizes) + 2.0 * pairs


class _FactorNull:
    """The first two sequential terms when the first is the absorbed factor c: the first permutes rows,
    the second (Freedman-Lane) permutes E = (I - H_c) Y, the residuals from c's group means.  One pass
    serves both: their factor parts from a _FactorGram, their dense columns from one product per batch,
    the residuals' projections from the rows' as
        Q^T Pi E = Q^T Pi Y - Ybar^T (C^T Pi^T Q)
    (C the factor's indicator, Ybar its group means): a G x p product instead of a second n x p one."""

    def __init__(self, plan_: Plan, y: np.ndarray, dtype: GramType) -> None:
        chain = plan_.chains[0]
        assert chain.codes is not None
        self.plan, self.dtype = plan_, dtype
        self.rows = [0, 1]
        self.gram = _FactorGram(y, chain.codes, dtype)
        self.ss_total = tuple(float(total) for total in self.gram.lengths.sum(axis=0))
        self.order = np.argsort(chain.codes, kind="stable")
        self.starts = np.r_[0, np.cumsum(np.bincount(chain.codes))[:-1]].astype(np.int64)
        self.means_t = np.ascontiguousarray(group_means(y, chain.codes).T, dtype=dtype)
        self.data = y.astype(dtype)
        self.basis = chain.basis.astype(dtype)

    def _dense(self, perms: np.ndarray) -> np.ndarray:
        """(2, B, p): each basis column's squared projection of the permuted rows and residuals."""
        p = self.basis.shape[1]
        out = np.zeros((2, len(perms), p))
        step = max(1, DENSE_COLUMNS_PER_BATCH // max(p, 1))
        for low in range(0, len(perms) if p else 0, step):
            part = perms[low:low + step]
            stacked = permuted_columns(self.basis, part)
            rows = self.data.T @ stacked
            residuals = rows - self.means_t @ np.add.reduceat(stacked[self.order], self.starts, axis=0)
            for k, projected in enumerate((rows, residuals)):
                projected = projected.astype(np.float64)
                out[k, low:low + len(part)] = np.einsum("kj,kj->j", projected, projected).reshape(len(part), p)
        return out

    def __call__(self, perms: np.ndarray) -> np.ndarray:
        absorbed = self.gram(perms).T
        dense = self._dense(perms)
        out = np.empty((len(perms), 2))
        for k in range(2):
            explained = np.empty((len(perms), len(self.plan.models)))
            cumulative = np.cumsum(dense[k], axis=1)
            for m, model in enumerate(self.plan.models):
                explained[:, m] = absorbed[k] + (cumulative[:, model.columns - 1] if model.columns else 0.0)
            out[:, k] = _statistics(self.plan, explained, self.ss_total[k], [k])[0][:, 0]
        return out


@dataclass(frozen=True)
class _Null:
    """What the permutations act on for some tested terms: their reduced model's residuals (or the rows)."""

    plan: Plan
    rows: list[int]                   # indices into plan.rows
    projections: _Projections
    ss_total: float                   # ||X||^2 (or tr G) of the permuted data: the same for every permutation
    within: np.ndarray | None = None  # codes within whose levels (and the strata) the rows are permuted

    def __call__(self, perms: np.ndarray) -> np.ndarray:
        """(B, rows): the permuted F of the null's terms."""
        return _statistics(self.plan, self.projections(perms), self.ss_total, self.rows)[0]


def _factor_first(plan_: Plan, permute: str, y: np.ndarray | None, method: str, permutations: int) -> bool:
    """Whether _FactorNull serves the first two terms: Freedman-Lane on vectors, a sequential test whose
    first term is the absorbed factor (one chain; the second term's reduced model is the factor alone),
    and the factor's pairs route pays (choose_method) and fits: the case of paraphrase sets and a
    factor within them, where the second n x p product would cost as much as the pairs."""
    if permute == "rows" or y is None or len(plan_.rows) < 2 or len(plan_.chains) != 1:
        return False
    chain, first = plan_.chains[0], plan_.models[0]
    if chain.codes is None or first.columns != 0 or plan_.rows[0][3] is not None or plan_.rows[1][3] != 0:
        return False
    if method == "auto":
        method = choose_method(len(y), y.shape[1], chain.codes, permutations)
    return method == "pairs" and gram_dtype(len(y)) is not None


def _nulls(plan_: Plan, permute: str, y: np.ndarray | None, gower: np.ndarray | None, unit: np.ndarray | None,
           strata_codes: np.ndarray, method: str, permutations: int) -> list:
    """One null per distinct reduced model (Freedman-Lane), or one for every term (rows).  A term whose
    reduced model is the intercept alone (the first sequential term, a one-term model) permutes rows."""
    nulls: list = []
    rest = range(len(plan_.rows))
    if _factor_first(plan_, permute, y, method, permutations):
        assert y is not None                     # _factor_first: Freedman-Lane on vectors
        dtype = gram_dtype(len(y))
        assert dtype is not None                 # _factor_first: the pairs route fits
        nulls.append(_FactorNull(plan_, y, dtype))
        rest = range(2, len(plan_.rows))
    by_reduced: dict[tuple[int | None, str | None], list[int]] = {}
    for k in rest:
        without = plan_.rows[k][3]
        within = plan_.within[k] if permute == "residuals" and k < len(plan_.within) else None
        key = (without if permute != "rows" else None, None if within is None else within[0])
        by_reduced.setdefault(key, []).append(k)
    for (reduced, within_name), rows in by_reduced.items():
        wanted = {plan_.full} | {m for k in rows for m in plan_.rows[k][2:] if m is not None}
        chains = {plan_.models[m].chain for m in wanted}
        if reduced is None:
            x = y
            g = gower
            absorbers = {} if unit is None or y is None else _row_absorbers(plan_, chains, unit, strata_codes, y,
                                                                              method, permutations)
        else:
            model = plan_.models[reduced]
            chain = plan_.chains[model.chain]
            x = None if y is None else residualise(y, chain, model.columns)
            g = None if gower is None else residual_gower(gower, chain, model.columns)
            absorbers = {} if x is None else _shared(
                {c: plan_.chains[c].codes for c in chains if plan_.chains[c].codes is not None},
                functools.partial(_residual_absorber, x, method=method, permutations=permutations))
        if x is not None:
            ss = float(np.einsum("ik,ik->", x, x))
        else:
            assert g is not None                 # one of the vectors and the Gower matrix
            ss = float(np.trace(g))
        within_codes = None
        if within_name is not None:
            factor = plan_.within[rows[0]]
            assert factor is not None            # the key's name comes from plan_.within
            within_codes = factor[1]
        nulls.append(_Null(plan_, rows, _Projections(plan_, wanted, x=x, gower=g, absorbers=absorbers), ss,
                           within_codes))
    return nulls


def restricted_shuffles(strata_codes: np.ndarray, within: np.ndarray, permutations: int,
                        seed: int) -> Iterator[np.ndarray]:
    """Row orders that permute rows only within the cells of strata x ``within`` (rows in any order):
    core.permutation.shuffles on the rows sorted by cell, mapped back (row i of the permuted data is row
    perm[i])."""
    cells = np.unique(np.stack([strata_codes, within]), axis=1, return_inverse=True)[1].reshape(-1)
    order = np.argsort(cells, kind="stable")
    sorted_design = Design(np.zeros(len(order), dtype=np.int64), cells[order].astype(np.int64), 1)
    for perm in shuffles(sorted_design, permutations, seed):
        out = np.empty(len(order), dtype=np.int64)
        out[order] = order[perm]
        yield out


def _shared(codes_of: dict, build: Callable[[np.ndarray], object]) -> dict:
    """{chain: build(codes)}, built once per factor (chains of one factor share its codes array),
    leaving out chains whose build gives None."""
    built: dict[int, object] = {}
    out = {}
    for chain, codes in codes_of.items():
        if id(codes) not in built:
            built[id(codes)] = build(codes)
        if built[id(codes)] is not None:
            out[chain] = built[id(codes)]
    return out


def _row_absorbers(plan_: Plan, chains: Iterable[int], unit: np.ndarray, strata_codes: np.ndarray, y: np.ndarray,
                   method: str, permutations: int) -> dict:
    """The absorbed factor's part for permuted rows of unit vectors: the one-factor test's kernel
    (core.permutation.within_sums: SS_W by a Gram matrix or the coordinates, ``method``), so a one-term
    call gives the one-factor call's numbers; explained = SS_T - SS_W."""
    ss_total = float(np.einsum("ik,ik->", y, y))

    def build(codes: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        levels = int(codes.max()) + 1
        within = within_sums(unit, Design(codes, strata_codes.astype(np.int64), levels), method, permutations)[0]
        batch = getattr(within, "batch", None)

        def absorbed(perms: np.ndarray) -> np.ndarray:
            ss_w = batch(list(perms)) if batch is not None else np.array([within(p) for p in perms])
            return ss_total - np.asarray(ss_w, dtype=float)
        return absorbed
    return _shared({c: plan_.chains[c].codes for c in chains if plan_.chains[c].codes is not None}, build)


def permanova_terms(plan_: Plan, strata: np.ndarray | None, *, unit: np.ndarray | None = None,
                    gower: np.ndarray | None = None, permutations: int = 999, seed: int = 42,
                    progress: Callable[[int, int], None] | None = None, method: str = "auto",
                    permute: str = "residuals") -> TermsResult:
    """Test every row of ``plan_`` on unit vectors ``unit`` (n x d) or a Gower-centred matrix ``gower``.

    ``permute``: 'residuals' (Freedman-Lane: each term's reduced-model residuals are permuted; the
    first sequential term and a one-term model permute rows, which is the same thing there) or
    'rows' (adonis2: rows permuted, every model refitted).  Both permute within ``strata``.

    Rows must be in canonical order (sorted by stratum; core.permutation.canonical_order).  With
    vectors, the absorbed factor's sums for permuted rows come from the one-factor test's kernel
    (core.permutation.within_sums: a Gram matrix or the coordinates, ``method``), so a one-term call
    gives the one-factor call's numbers."""
    null = null_distribution(plan_, strata, unit=unit, gower=gower, permutations=permutations, seed=seed,
                             progress=progress, method=method, permute=permute)
    tests = []
    for k, (label, df, _, _) in enumerate(plan_.rows):
        result = permutation_result(null.f[k], null.permuted[:, k], "terms")
        tests.append(TermTest(label, df, float(null.ss[k]), float(null.f[k]), result.p_value))
    return TermsResult(tests, max(null.ss_residual, 0.0), plan_.df_residual, null.ss_total, permutations,
                       null.n, permute)


@dataclass(frozen=True)
class NullDistribution:
    """Observed SS and F of each tested term, and F of each term for every permutation (B, terms)."""

    ss: np.ndarray
    f: np.ndarray
    permuted: np.ndarray
    ss_total: float
    ss_residual: float
    n: int


def null_distribution(plan_: Plan, strata: np.ndarray | None, *, unit: np.ndarray | None = None,
                      gower: np.ndarray | None = None, permutations: int = 999, seed: int = 42,
                      progress: Callable[[int, int], None] | None = None, method: str = "auto",
                      permute: str = "residuals") -> NullDistribution:
    """The observed statistics and their permutation distribution (permanova_terms' arguments)."""
    check_permutations(permutations)
    check_seed(seed)
    check_permute(permute)
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
    observed = _Projections(plan_, range(len(plan_.models)), x=y, gower=gower)
    explained = observed(np.arange(n)[None, :], exact=True)
    f_observed, ss_observed = _statistics(plan_, explained, ss_total)
    nulls = _nulls(plan_, permute, y, gower, unit, strata_codes, method, permutations)
    permuted = np.empty((permutations, len(plan_.rows)))
    stream = shuffles(Design(np.zeros(n, dtype=np.int64), strata_codes.astype(np.int64), 1), permutations, seed)
    restricted = {id(part.within): restricted_shuffles(strata_codes, part.within, permutations, seed)
                  for part in nulls if getattr(part, "within", None) is not None}
    for low in range(0, permutations, BATCH):
        size = min(BATCH, permutations - low)
        perms = np.stack([next(stream) for _ in range(size)])
        batches = {key: np.stack([next(shuffled) for _ in range(size)]) for key, shuffled in restricted.items()}
        for part in nulls:
            within = getattr(part, "within", None)
            permuted[low:low + len(perms), part.rows] = part(perms if within is None else batches[id(within)])
        if progress is not None:
            progress(low + len(perms), permutations)
    return NullDistribution(ss_observed[0], f_observed[0], permuted, ss_total,
                            ss_total - float(explained[0, plan_.full]), n)


def centred(unit: np.ndarray) -> np.ndarray:
    return unit - unit.mean(axis=0)


def gower_matrix(squared: np.ndarray) -> np.ndarray:
    """G = -1/2 J D^2 J, J = I - 11^T / n (Gower 1966)."""
    a = -0.5 * np.asarray(squared, dtype=float)
    return a - a.mean(axis=0) - a.mean(axis=1)[:, None] + a.mean()


def squared_from_pairs(first: Sequence[object], second: Sequence[object], distance: Sequence[float],
                       ids: Sequence[object]) -> np.ndarray:
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
