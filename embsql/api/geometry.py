"""Python face of model-to-model geometry on the same items: linear CKA and the Procrustes
correlation (kernels, routes and standard errors in embsql.core.geometry)."""

from __future__ import annotations

import duckdb

from embsql.api.driver import drive
from embsql.io.sources import TableLike
from embsql.result_table import ResultTable
from embsql.statistics.geometry import CKA, COMPARE_CKA, PROCRUSTES


def cka(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
        group: str | None = None, debiased: bool = False, permutations: int = 999, seed: int = 42,
        common: bool = False, progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """Linear CKA (Kornblith et al. 2019) of every pair of models that embedded the same items.

    CKA compares the two models' similarity structures on unit vectors centred per model; it is
    invariant to rotation, uniform scale and embedding into more dimensions, so models of any
    dimension compare.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con``: one row per model and item (as for :func:`embsql.anova`).
    item : str
        The item column (which rows of different models embed the same item).
    model : str
        The model column (at least two models).
    vector : str
        The vector column (its vectors are scaled to unit length).
    group : str, optional
        A group column: the standard error is then the cluster jackknife over its groups (an
        item's group must be the same in every model), else the delete-one-item jackknife.
    debiased : bool
        The ratio of unbiased HSIC estimates (Song et al. 2012), in [-1, 1]: about 0 for unrelated
        models at any n, so negative about as often as positive then (it is reported as it is:
        cutting it at 0 would bias it upward again).
    permutations : int, default 999
        Shuffles of the items of model_b for the p-value (0 for none).
    seed : int, default 42
        The random seed (0 or more).
    common : bool
        Use only the items every model has (instead of refusing items one model lacks).
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``cka`` (in [0, 1]; debiased in
        [-1, 1]), ``se`` (the jackknife SE of ``cka``), ``corrected`` (the debiased CKA, the point
        the interval is built around whichever form ``cka`` is: the biased ``cka`` is biased upward
        and may lie outside the interval; None without an interval), ``ci_low`` and ``ci_high``
        (the 95% interval for the population CKA, in [0, 1]; see Notes; None with fewer than 3 groups or, for the
        debiased form's jackknife, too few items), ``calibrated`` (True from 30 groups, or 30 items
        without ``group``: where simulation measured its coverage at {{figure cka.coverage range}}, within 95 ± 2.5% in
        {{figure cka.coverage within}} of {{figure cka.coverage count}} designs),
        ``p_value`` (one-sided, upper tail, (b + 1) / (B + 1); None with permutations=0),
        ``permutations``, ``items``, ``groups`` (of ``group``, else None), ``debiased`` and
        ``invariance`` (``'similarity'``, its level of the invariance hierarchy).

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``model.too_few``, ``model.missing``,
        ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``, ``design.identical``
        (a model whose vectors are all the same point: no spread, naming the model),
        ``design.*`` (too few items or groups).

    Notes
    -----
    The biased CKA is biased upward, by far more than its SE when the dimensions are large next to
    the number of items (0.73 for a population CKA of 0.14 with 200 items of d = 384 against 768),
    so ``cka ± 1.96 se`` covers the population value in as few as 0% of samples. The interval is
    therefore built, for both forms, from the debiased CKA and its jackknife replicates (over the
    groups, else the items): the debiased CKA ± t(G - 1) · SE on Fisher's z
    scale (atanh), mapped back, as :func:`embsql.jackknife` builds R²'s but without its bias
    correction (the debiased CKA is already unbiased). Its coverage of the population CKA (a
    60,000-item sample's) was {{figure cka.centre range}} (400 samples each, MC SE about 1.1%) at 30-40 groups
    or 40 items, for d = 16 against 384 and 384 against 768 and CKA from 0.12 to 0.86
    ({{figure cka.centre_groups range}} with groups; higher, conservative, with independent items at a low
    CKA), where the naive interval
    covered 0-35% whenever the dimension was large next to the items (validation/cka_interval_centre.py).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.cka(con, "ex", item="item_id", model="model", vector="embedding", permutations=0)
    >>> result.model_a, result.model_b, round(result.cka, 4), result.invariance
    ('large', 'small', 0.9978, 'similarity')
    >>> result.ci_low <= result.ci_high <= 1, result.calibrated     # 12 items: not calibrated
    (True, False)
    """
    return drive(CKA, locals())


def procrustes(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
               group: str | None = None, permutations: int = 999, seed: int = 42, common: bool = False,
               progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """The symmetric Procrustes correlation of every pair of models (vegan's protest).

    Both models are centred and scaled to unit total variance (the smaller one padded with zero
    dimensions), one is rotated onto the other, and r = √(1 - m12²), with m12² the residual sum
    of squares of that fit.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con``: one row per model and item (as for :func:`embsql.anova`).
    item : str
        The item column (which rows of different models embed the same item).
    model : str
        The model column (at least two models).
    vector : str
        The vector column (its vectors are scaled to unit length).
    group : str, optional
        A group column: the jackknife then deletes whole groups (an item's group must be the same
        in every model), else single items; above 200 groups (or items) it deletes 200 random
        blocks of them, drawn with ``seed`` (one SVD each).
    permutations : int, default 999
        Shuffles of the items of model_b for the p-value (0 for none).
    seed : int, default 42
        The random seed (0 or more).
    common : bool
        Use only the items every model has.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``r``, ``m12_squared``, ``se`` (the
        jackknife SE of r), ``ci_low`` and ``ci_high`` (the bias-corrected jackknife t interval on
        the atanh scale, 95%), ``calibrated`` (always False: see Notes), ``p_value`` (counting
        r_perm ≥ r - √ε, as protest does; None with permutations=0), ``permutations``, ``items``,
        ``groups`` (of ``group``, else None) and ``invariance`` (``'similarity'``).

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``model.too_few``, ``model.missing``,
        ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``, ``design.identical``
        (a model with no spread, naming it), ``design.*``.

    Notes
    -----
    r is biased upward when the dimensions are large next to the number of items (the nuclear norm
    of a noisy cross product), by much more than the jackknife removes: the interval covered the
    population r in 10% of samples (population 0.30, mean r 0.42, 40 groups of 5, d = 16 against
    384; validation/cka_validity.py). So it is never ``calibrated``; for an interval that holds use
    :func:`embsql.cka`, whose interval is calibrated.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.procrustes(con, "ex", item="item_id", model="model", vector="embedding", permutations=99)
    >>> round(result.r, 4), result.p_value
    (0.9787, 0.01)
    """
    return drive(PROCRUSTES, locals())


def compare_cka(con: duckdb.DuckDBPyConnection, source: TableLike, *, reference: object, model: str, item: str,
                vector: str, group: str | None = None, debiased: bool = False, common: bool = False,
                bad_rows: str = "error", intervals: str = "marginal", replicates: int = 2000,
                seed: int = 42) -> ResultTable:
    """Is model A closer to the reference model than model B is?  CKA(A, R) - CKA(B, R) on the same items.

    For every pair of models other than ``reference``: the difference of their CKA with the
    reference, a 95% interval for the population difference and a two-sided p-value for "no
    difference", from the paired jackknife (the same group, else item, deleted from both pairs).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con``: one row per model and item.
    reference : str or value
        The model value every other model is compared against (a value of the ``model`` column).
    model : str
        The model column (the reference and at least two more models).
    item : str
        The item column (which rows of different models embed the same item).
    vector : str
        The vector column (scaled to unit length).
    group : str, optional
        A group column: the jackknife deletes whole groups (an item's group must be the same in
        every model); without it, single items (then the items are taken as independent).
    debiased : bool
        Report the debiased CKAs in ``cka_a``, ``cka_b`` and ``difference`` (the interval and the
        p-value are the same either way: see Notes).
    common : bool
        Use only the items every model has (instead of refusing items one model lacks).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.
    intervals : {"marginal", "simultaneous"}, default "marginal"
        ``'marginal'``: each pair's interval holds 95% on its own.  ``'simultaneous'``: with three
        or more models besides the reference, the intervals hold 95% together: the same centre
        -/+ c se, c the 95% point of the largest |t| over the pairs in ``replicates`` joint normal
        draws with the models' jackknife covariance (embsql.core.model_ranking.normal_family, as
        :func:`embsql.rank_models` draws them; a single-step max-|t|).  The table then gains a
        column ``interval`` = ``'simultaneous'``; the p-values are unchanged.  In simulation
        {{figure rank_sets_families.cka_simultaneous}} (3 to 10 models against the reference,
        validation/rank_sets_families.py).
    replicates : int, default 2000
        The joint normal draws of ``intervals='simultaneous'`` (2 to 1,000,000).
    seed : int, default 42
        The random seed of the simultaneous intervals' draws (0 or more).

    Returns
    -------
    ResultTable
        One row per pair of non-reference models (in model order): ``model_a``, ``model_b``,
        ``reference``, ``cka_a`` (CKA(model_a, reference)), ``cka_b``, ``difference`` (cka_a -
        cka_b), ``se`` (paired jackknife SE of the debiased difference), ``ci_low``, ``ci_high``
        (95%, for the population difference), ``p_value`` (two-sided, of no difference),
        ``calibrated`` (True from 30 groups, or 30 items without ``group``), ``items``, ``groups``
        and ``debiased``; with ``intervals='simultaneous'`` also ``interval``.

    Raises
    ------
    InputError
        ``model.too_few`` (fewer than two models besides the reference), an unknown ``reference``,
        ``model.missing``, ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``,
        ``design.identical`` (a model with no spread), ``design.*`` (too few items or groups).

    Notes
    -----
    Both CKAs are biased upward, each by its own amount, so the difference of the biased CKAs is
    biased too. The interval is built from the debiased CKAs: the paired jackknife's bias-corrected
    difference ± t(G - 1) · SE, and p from the same t statistic. In simulation (d = 384 models
    against a d = 768 reference, 400 samples each, validation/cka_validity.py) it rejected a true "no
    difference" at {{figure cka.compare_level range}} at nominal 5% (30 groups of 1-15 items, 40 groups of 5,
    and 40 independent items, where it was conservative), and covered the population difference at 97-98%.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i) + v * sin(5 * i)] AS embedding FROM range(40) t(i), "
    ...                 "(VALUES ('ref', 0.0, 0.0), ('near', 0.2, 0.0), ('far', 0.2, 1.5)) m(m, w, v)")
    >>> result = embsql.compare_cka(con, "ex", reference="ref", model="model", item="item_id", vector="embedding")
    >>> result.model_a, result.model_b, result.difference < 0, result.ci_high < 0, result.calibrated
    ('far', 'near', True, True, True)
    """
    return drive(COMPARE_CKA, locals())
