"""The declarations of model-to-model geometry on the same items: linear CKA, the Procrustes
correlation and the paired comparison of CKAs with a reference model.  Kernels: embsql.core.geometry."""

from __future__ import annotations

from embsql.core.geometry import cka_rows, compare_cka_rows, procrustes_rows
from embsql.statistics.declaration import PAIR, PAIR_INPUTS, REQUIRED, SEED, Input, Option, Output, Statistic

PERMUTATIONS = Option("permutations", 999, "the number of permutations, a whole number (0: no p-value)",
                      sql_value="emb__whole_argument({name}, 'permutations')")
GROUPS = Output("groups", "BIGINT", 'groups of `"group"` (NULL without it)')

CKA = Statistic(
    name="cka",
    kernel=cka_rows,
    inputs=(*PAIR_INPUTS, Input("group", "a group column for the cluster jackknife (an item's group must be the same "
                                         "in every model); NULL: the delete-one-item jackknife", optional=True)),
    options=(Option("debiased", False), PERMUTATIONS, SEED, Option("common", False)),
    outputs=(*PAIR,
             Output("cka", "DOUBLE", "‖X̃ᵀỸ‖²_F / (‖X̃ᵀX̃‖_F ‖ỸᵀỸ‖_F) on the unit vectors of each model centred at "
                    "their mean (the RV coefficient), in [0, 1]; with `debiased := true` the same ratio of the unbiased "
                    "HSIC estimates of Song et al. (2012), in [−1, 1], about 0 for unrelated models at any n (a "
                    "negative value is returned as it is: read it as no detectable similarity)"),
             Output("se", "DOUBLE", 'cluster-jackknife SE over the groups of `"group"`, else the delete-one-item '
                                    "jackknife"),
             Output("corrected", "DOUBLE", "the debiased CKA, the point the interval is built around (for both forms: "
                                           "it equals `cka` with `debiased := true`); NULL without an interval"),
             Output("ci_low", "DOUBLE", "the 95% interval for the population CKA (in [0, 1]), built from the debiased "
                                        "CKA's jackknife for both forms: the debiased CKA ± t(G − 1)·SE on the atanh "
                                        "scale (NULL with fewer than 3 groups)"),
             Output("ci_high", "DOUBLE", "its upper end"),
             Output("calibrated", "BOOLEAN", 'true from 30 groups (or 30 items without `"group"`), where simulation '
                    "measured its coverage at {{figure cka.coverage range}} (within 95 ± 2.5% in "
                    "{{figure cka.coverage within}} of {{figure cka.coverage count}} designs)"),
             Output("p_value", "DOUBLE", "permutation p: the items of `model_b` are shuffled against those of "
                    "`model_a` (the same seeded shuffles for every pair); one-sided, upper tail, p = (b + 1)/(B + 1); "
                    "NULL with `permutations := 0`"),
             Output("permutations", "BIGINT"),
             Output("items", "BIGINT", "items compared (with `common := true`, those every model has)"),
             GROUPS,
             Output("debiased", "BOOLEAN", "as asked"),
             Output("invariance", "VARCHAR", "`similarity`: CKA is exactly unchanged by a rotation, a uniform scale or "
                                             "an embedding into more dimensions of either model"),
             Output("note", "VARCHAR", "NULL, or why the debiased CKA is undefined (`design.debiased_hsic`): the "
                    "unbiased HSIC of a model with itself can be 0 or negative on few items even when the model has "
                    "spread; `cka` is then NULL with `debiased := true`, and the biased CKA keeps its value but has "
                    "no interval")),
    summary="""\
Linear CKA (Kornblith et al. 2019) of models that embedded the same items: one row per pair of
models, with a jackknife SE, a 95% interval for the population CKA and a permutation p-value.""",
    notes="""\
- **Routes.** Per model, from the centred cross products X̃ᵀX̃, ỸᵀỸ, X̃ᵀỸ (one pass over the rows
  in blocks of 8,192, memory O(d²)) or, when n is small next to d, from the n × n Gram matrix,
  whose principal coordinates stand in for the rows (taken when n < d / 5, where it measured
  faster, and with 50 or more permutations when n < 3d/4, where each permutation's product
  shrinks from d to fewer than n columns).  The jackknife takes every replicate from the same
  products (one more pass: deleting a group subtracts its own products).  A permutation changes
  only X̃ᵀỸ: one blocked product, O(n p q), each; with 100,000 items of d = 384 against 768 that
  is about 1 s per permutation on a quiet 2-core machine, so pass `permutations := 0` (or a
  sample of items) for large tables.  See bench/README.md.
- **Items** must match across models (an item a model lacks is an error naming it, unless
  `common := true`); fewer than 3 items (5 for the debiased CKA), a NULL item, model or group, an
  item twice in one model, or a model with no spread (`design.identical`, naming the model) is an
  error naming the column or item.  The biased CKA is defined whenever both models have spread; the
  debiased one is NULL, with a `note`, where a model's unbiased HSIC with itself is not positive.
- **Interval.** The biased CKA is biased upward by far more than its SE when the dimensions are
  large next to the number of items (0.73 for a population CKA of 0.14 with 200 items of d = 384
  against 768), so `cka ± 1.96·se` covered the population value in {{figure cka.naive_coverage range}} of samples.  `ci_low`,
  `ci_high` come from the debiased CKA, which is unbiased: coverage {{figure cka.centre range}} at 30-40 groups or
  40 items, d = 16/384 and 384/768, CKA 0.12-0.86 (validation/cka_interval_centre.py; {{figure cka.centre_groups range}} with
  groups, higher with independent items at a low CKA).""",
    caution="""\
What it says: how far two models' geometries agree up to rotation and scale, on these items.
What it cannot say: which model is better; agreement of local neighbourhoods (that is
`emb_knn_agreement`) or of the order of distances only (`emb_mantel`).  From Python:
`embsql.cka`, the same numbers.""",
    example="""\
SELECT * FROM emb_cka('geometry', 'item_id', 'model', 'embedding', permutations := 199);
-- large  small  0.8873  0.0518  0.5183  0.9447  false  0.005  199  12  NULL  false  similarity  NULL""",
    calibration="cka.coverage",
    progress="CKA permutations",
)

PROCRUSTES = Statistic(
    name="procrustes",
    kernel=procrustes_rows,
    inputs=(*PAIR_INPUTS, Input("group", "a group column for the jackknife (an item's group must be the same in "
                                         "every model); NULL: items; above 200 of either, 200 random blocks of them "
                                         "(drawn with `seed`)", optional=True)),
    options=(PERMUTATIONS, SEED, Option("common", False)),
    outputs=(*PAIR,
             Output("r", "DOUBLE", "√(1 − m12²) ∈ [0, 1]"),
             Output("m12_squared", "DOUBLE", "1 − (Σ singular values of X̃ᵀỸ)², the residual sum of squares of the "
                                             "best rotation of one onto the other"),
             Output("se", "DOUBLE", 'the jackknife SE of r (over the groups of `"group"`, else the items)'),
             Output("ci_low", "DOUBLE", "the bias-corrected jackknife t interval on the atanh scale, 95% (not "
                                        "calibrated: see the notes)"),
             Output("ci_high", "DOUBLE", "its upper end"),
             Output("calibrated", "BOOLEAN", "always false: r's upward bias in high dimension is larger than the "
                    "jackknife removes (it covered {{figure procrustes.coverage range}} in "
                    "validation/cka_validity.py); for a calibrated interval use `emb_cka`"),
             Output("p_value", "DOUBLE", "permutation p: the items of `model_b` permuted, counting permutations whose "
                    "r reaches r − √(machine epsilon), as `protest` does: (b + 1)/(B + 1)"),
             Output("permutations", "BIGINT"), Output("items", "BIGINT", "items compared"), GROUPS,
             Output("invariance", "VARCHAR", "`similarity`")),
    summary="The symmetric Procrustes correlation of vegan's `protest`: one row per pair of models.",
    notes="""\
Both models' unit vectors are centred and scaled to unit total sum of squares (the one with fewer
dimensions padded with zeros).  Matches `vegan::protest` (tests/reference/vegan/procrustes/).
Items are matched as in `emb_cka`; routes and costs are the same (plus one small SVD per
permutation).  From Python: `embsql.procrustes`.""",
    caution="",
    example="""\
SELECT * FROM emb_procrustes('geometry', 'item_id', 'model', 'embedding', permutations := 199);
-- large  small  0.8790  0.2273  0.0371  0.6324  0.9047  false  0.005  199  12  NULL  similarity""",
    progress="Procrustes permutations",
)

COMPARE_CKA = Statistic(
    name="compare_cka",
    kernel=compare_cka_rows,
    inputs=(Input("item"), Input("model", "the model column: the reference and at least two more models"),
            Input("vector"),
            Input("group", "a group column for the paired jackknife (an item's group must be the same in every "
                           "model); NULL: items, taken as independent", optional=True)),
    options=(Option("reference", REQUIRED, "the model every other model is compared against (a value of the model "
                                           "column)", sql_value="{name}::VARCHAR", sql_type="VARCHAR"),
             Option("debiased", False, "report the debiased CKAs (the interval and p-value are the same either way)"),
             Option("common", False),
             Option("intervals", "marginal", "`'marginal'` (each pair's interval holds 95% on its own) or "
                    "`'simultaneous'` (all the pairs' intervals hold 95% together: the same centre ∓ c × se, c the 95% "
                    "quantile of the largest |t| over the pairs in joint normal draws with the debiased CKAs' "
                    "jackknife covariance, a single-step max-|t|; the p-values stay per pair)"),
             Option("replicates", 2000, "the joint normal draws of `intervals := 'simultaneous'`, a whole number from "
                                        "2 to 1,000,000", sql_value="emb__whole_argument({name}, 'replicates')"),
             Option("seed", 42, "the random seed of those draws, a whole number (0 or more)",
                    sql_value="emb__whole_argument({name}, 'seed')")),
    outputs=(*PAIR, Output("reference", "VARCHAR"),
             Output("cka_a", "DOUBLE", "CKA(model_a, reference) (biased, or debiased with `debiased := true`)"),
             Output("cka_b", "DOUBLE", "CKA(model_b, reference)"),
             Output("difference", "DOUBLE", "cka_a − cka_b"),
             Output("se", "DOUBLE", "paired jackknife SE of the debiased difference (the same group, else item, "
                                    "deleted from both pairs)"),
             Output("ci_low", "DOUBLE", "the 95% interval for the population difference: the bias-corrected "
                                        "debiased difference ± t(G − 1)·SE"),
             Output("ci_high", "DOUBLE", "its upper end"),
             Output("p_value", "DOUBLE", "two-sided p of no difference, from the same t statistic"),
             Output("calibrated", "BOOLEAN", 'true from 30 groups (or 30 items without `"group"`), where simulation '
                                             "measured level and coverage"),
             Output("items", "BIGINT", "items compared"), GROUPS, Output("debiased", "BOOLEAN", "as asked"),
             Output("interval", "VARCHAR", "which kind the interval is: `marginal` or `simultaneous` (from Python, "
                                           "the column is there with `intervals='simultaneous'` only)")),
    summary="""\
Is model A closer to the reference model than model B is?  CKA(A, R) − CKA(B, R) on the same
items, for every pair of models other than the reference, with a 95% interval and a p-value.""",
    notes="""\
Both CKAs are biased upward, each by its own amount, so the interval and the test use the debiased
CKAs.  In simulation (two d = 384 models against a d = 768 reference, validation/cka_validity.py) it
rejected a true "no difference" at {{figure cka.compare_level range}} at nominal 5% (conservative with independent items).
In simulation, with `intervals := 'simultaneous'`, {{figure rank_sets_families.cka_simultaneous}} (3 to 10
models against the reference, validation/rank_sets_families.py).
An unknown reference is `model.reference`.  From Python: `embsql.compare_cka`.""",
    caution="",
    example="""\
SELECT model_a, model_b, reference, round(difference, 4) AS difference, calibrated
FROM emb_compare_cka('geometry3', 'item_id', 'model', 'embedding', 'ref');
-- far  near  ref  -0.3465  true""",
    calibration="cka.compare_level",
    stopped="the paired CKA comparison",
    simultaneous=True,
)
