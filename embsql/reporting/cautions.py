"""What each figure can and cannot say, in the words every report prints beside it.

One home for them: the report's sections (embsql.reporting.sections) and the demo's experiments
(embsql.demo) read their cautions from here.

The invariance sentences are held by tests/core/test_invariance.py: every vector is normalised first,
so a change of the raw vectors leaves a figure exactly unchanged only when, after normalisation,
it is a similarity of the unit vectors (y = aQx + b with Q orthogonal).
"""

from embsql.calibration import field, sentence

INVARIANCE = ("Each figure is labelled with the transformations of the unit vectors it ignores: isometry "
              "(rotation, reflection, embedding into more dimensions) for V, W̄ and W̃_g; similarity (an isometry "
              "with a uniform scale and a shift) for R², adjusted R², F and ICC; monotone (any order-keeping change "
              "of the similarities) for retrieval ranks. So R² and F are exactly unchanged by a rotation of the raw "
              "vectors, a uniform scaling of them, an embedding into more dimensions, or the exact lift "
              "(√λ·x, √(1−λ)), which is a similarity of the unit vectors. A shared direction added before the "
              "vectors are normalised, or a translation of the raw vectors, is not a similarity of the unit "
              "vectors: R² and F change a little (on the bundled example a shared direction of length 2 along the "
              "first principal axis moves R² from 0.401 to 0.390), and V changes a lot.")

INTERVALS = ("ci_low/ci_high are calibrated 95% (level) intervals for the value the figure would take with many "
             "more groups like these: the jackknife bias-corrected estimate (corrected, r2_corrected) ± t(G−1) × its "
             "jackknife SE, both computed on the logit scale for R² and W̄ and the log scale for F "
             "(corrected = h⁻¹(G·h(θ) − (G−1)·mean h(θ₋g)), h = logit or log) and mapped back, so they stay inside "
             "the figure's range. They are not centred on the sample figure (estimate, r2), which is biased by about "
             "−R²(1−R²)/G. In simulation they covered " + field("intervals.model.G30", "range") + " at 30 groups and "
             + field("intervals.model.G100", "range") + " at 100; calibrated is false below 30 groups, where the "
             "coverage of a paired difference fell to " + field("intervals.difference.G10", "low") + " in some designs. "
             "dropped counts bootstrap "
             "resamples in which "
             "the figure was undefined (e.g. F when only groups of one were drawn); they are left out.")

FEW_GROUPS = ("fewer than 30 groups, so the interval is not calibrated (at 10 groups its coverage was measured "
              "at " + field("intervals.model.G10", "range") + " for one model and "
              + field("intervals.difference.G10", "range") + " for a paired difference, depending on the design); "
              "read it as rough")

SUMMARY = ("One row per model. R² and F are comparable across models (similarity level: exactly unchanged by "
           "rotation, uniform scaling of the raw vectors, extra dimensions or the exact lift; only approximately "
           "by a shared direction or a translation added before normalisation); V is not (isometry level). "
           "Intervals are over groups: they say how much the figure would move with another sample of groups "
           "like these. r2 is the sample R²; r2_corrected is the bias-corrected R² the interval is built around; "
           "r2_adj = 1 − MS_W/MS_T is about 0 when the groups have no structure; calibrated is false below 30 groups.")

DECOMPOSITION = ("SS_T = SS_B + SS_W on unit vectors. R² = SS_B/SS_T describes this design's group structure and "
                 "is similarity-invariant (exactly unchanged by rotation, uniform scaling of the raw vectors, extra "
                 "dimensions or the exact lift; only approximately by a shared direction or a translation added "
                 "before normalisation), but it is biased upward (compare it with r2_null = (G−1)/(n−1), its "
                 "expectation with no structure) and it is not a population share of variance. V = SS_T/n is "
                 "isometry-invariant only and descriptive: a shared direction lowers it without changing what a "
                 "model can tell apart, so V is not comparable across models.")

GROUPS = ("W̃_g is the size-corrected spread of group g about its own mean (blank for a group of one, where it is "
          "undefined; isometry level). It describes a group's spread; it is not crowding around any one item, and "
          "it is not retrieval difficulty. resolved is false for a group whose vectors are identical to within "
          "floating-point precision (spread above 0 but below 1.5e-8 on the unit sphere): its W_g is rounding noise.")

JACKKNIFE = ("Cluster jackknife: leave one group out at a time. The SE treats groups as the sampled units; it "
             "does not cover the choice of items within a group or of the model's training data.")

BOOTSTRAP = ("Cluster bootstrap: groups resampled with replacement; se is the SD of the resampled R². "
             + INTERVALS + " Like the jackknife it treats groups as the sampled units. The summary repeats the "
             "interval (r2_ci_low, r2_ci_high) with r2_corrected, the bias-corrected R² it is built around, calibrated, "
             "and r2_adj = 1 − MS_W/MS_T, the adjusted R², which is about 0 when the groups have no structure "
             "(plain R² is then about (G−1)/(n−1)).")

PERMANOVA = ("Permutation p-value of pseudo-F: how often relabelling the items at random gives an F at least "
             "this large. Valid under exchangeability of items between groups; it is not the probability that "
             "the structure is due to chance, and it is not an effect size (read R² for that).")

DISPERSION = ("Dispersion test: do the groups differ in spread about their centroids? Each group's spread W̃_g "
              "(mean squared distance to its centroid, size-corrected by n_g/(n_g−1)) is compared by a studentised "
              "F, with the variance 4a/n_g + 2b/(n_g(n_g−1)) of unit vectors (a: the items' own spread, b: the "
              "centroid's noise). The p-value permutes the labels of the vectors after reflecting each item so "
              "that its group's location (the centroid without it, shrunk towards the grand mean) lies on one "
              "common axis, which keeps every vector of unit "
              "length; " + sentence("dispersion.level") + ". Groups with fewer than 4 items are left out and counted "
              "(groups_left_out, items_left_out). When it is significant, a large pseudo-F may reflect "
              "differences in spread rather than in location.")

COMPARE = ("Paired comparison across models, paired by group label: the same groups are left out (jackknife) or "
           "drawn (bootstrap) for both models, so the SE of the difference is smaller than either model's own. "
           "Pairing by group is enough because groups are the sampled units: the interval is over samples of "
           "groups, and the items inside a group may differ between the models (in simulation the coverage was "
           "the same with different items as with the same ones). The report sees only group sums, so it cannot "
           "check the items: same_items is false when a group's size differs and blank otherwise. ci_low/ci_high "
           "are a studentized bootstrap interval (each resample's difference divided by its own jackknife SE), "
           "which covered " + field("intervals.difference.from30", "range")
           + " from 30 groups on; calibrated is false below 30 groups; dropped counts "
           "resamples in which the difference was undefined.")


# ---- each section's caution in one line: the text report prints it (the full caution: --explain)
HEADLINES = {
    "decomposition": "R² is biased up (see r2_null); V is not comparable across models.",
    "groups": "W̃_g is a group's own spread, not crowding or retrieval difficulty.",
    "jackknife": "the SEs treat groups as the sampled units, not items.",
    "bootstrap": "the interval is around corrected, not the sample R².",
    "compare": "paired by group: the interval is over groups.",
    "permanova": "p says whether the groups could be chance, not how strong they are.",
    "dispersion": "when significant, part of F may be unequal spread, not centres.",
    "models": "none of these measures says which model is better.",
    "ranking": "the sets hold for all models at once.",
}


# ---- the retrieval layers (embsql.retrieval_layers and the report's retrieval section) ----

RETRIEVAL_PAIRING = (
    "Same grouping (paraphrases of one question) on both sides: the input is the query embeddings, the "
    "output per-query correctness (top-1 as 0/1).  Compare same-side figures only (R2 with R2, ICC with "
    "ICC): R2 has no correction and ICC has one.  A difference between input and output is a clue (high "
    "input identity but low output identity suggests paraphrasing changes results somewhere in the "
    "system), not an effect size: the two live in different response spaces, and the corpus, the decision "
    "boundary, near-miss documents and later stages also move the output.  The trace ICC of embeddings is "
    "a stated multivariate extension, not the standard ICC; the ANOVA ICC of a 0/1 outcome is not the "
    "latent-scale ICC of a logistic mixed model.")
RETRIEVAL_EFF_DIM = (
    "eff_dim is the participation ratio (sum of covariance eigenvalues)^2 / (sum of squares): an "
    "eigenvalue-based 'number of directions'.  With n items it is bounded by n - 1, so when n <= d "
    "(eff_dim_bounded) it mostly reflects the sample size; prefer the mean-based figures.")
RETRIEVAL = {
    "query_stability": (
        "Layer 1, within the queries: R2 is the share of query spread between paraphrase groups (same design only, "
        "similarity-invariant, biased upward: compare with r2_null); W~_q, the mean size-corrected spread of a "
        "paraphrase group (singletons excluded), is how far paraphrasing moves a query (with a level column the "
        "groups pool every level; the dose section splits W~_q by level).  Neither says whether retrieval "
        "succeeds: that is decided by the alignment of queries with their documents (layer 3). "
        + RETRIEVAL_EFF_DIM),
    "document_structure": (
        "Layer 2, within the documents: R2 says how clearly the topic groups separate; W~_g is the overall spread "
        "of a topic group (size-corrected), NOT the crowding around the correct document: a wide group can still "
        "hold one near-duplicate of d+ that wins.  Do not read W~_g as retrieval difficulty; the margin m "
        "(layer 3) is the figure for that. " + RETRIEVAL_EFF_DIM),
    "alignment": (
        "Layer 3, queries against documents: m = (d-^2 - d+^2)/(d-^2 + d+^2) in [-1, 1] is the room a query has "
        "to its correct document; scale-free (unchanged by similarity transforms), so comparable across models, "
        "and m > 0 exactly when d+ ranks first.  It says nothing about ranks below the first.  m_mean_se is a "
        "cluster jackknife over paraphrase groups; quantiles carry no SE.  A tie with a distractor gives m = 0."),
    "rank": (
        "Layer 4, final ranks in the stated scope: top-1, recall@k and MRR depend only on the order of "
        "similarities (unchanged by any monotone transform).  A distractor tied with d+ counts as ranked above "
        "it.  SEs are cluster jackknives over paraphrase groups (paraphrases of one question are not "
        "independent).  These say how often retrieval succeeds, not why: layers 1-3 are the diagnosis."),
    "pairing": RETRIEVAL_PAIRING,
    "dose": (
        "W~_q per level says whether the paraphrase manipulation works as a dose (spread grows with level); it "
        "does not say whether real inputs fall in that range.  p_value is one-sided (levels permuted within "
        "paraphrase groups): small means spread increases with level beyond chance, not by how much.  The ratio "
        "W~_q / W~_g is descriptive: how far paraphrasing moves a query relative to the spread of the "
        "document groups, not a difficulty measure (W~_g is not crowding around d+)."),
}

COMPARE_RETRIEVAL = (
    "Paired comparison of retrieval models on the same queries: difference = mean_a − mean_b of the per-query "
    "metric. The p-value is a randomization test that swaps the two models' scores for whole paraphrase groups "
    "(paraphrases of one question share their difference, so swapping single queries would reject too often: "
    + field("retrieval.level_queries", "range")
    + " instead of 5% in simulation); p_adjusted corrects for every pair compared (Holm by default). The "
    "interval is difference ± t(G−1) × a cluster-robust SE over the groups; it covered "
    + field("retrieval.coverage", "range") +
    " from 30 groups on in simulation, and calibrated is false below 30 groups. Without paraphrase groups every query "
    "counts as independent. A significant difference says which model is ahead on these queries' population, "
    "not that the gap matters: read the difference and its interval for that.")
# the demo's three experiments (embsql.demo.EXPERIMENTS)
DEMO_COMMON_DIRECTION = ("A shared direction makes every vector more alike: V falls about five-fold while R² and F "
                         "stay put. V is therefore not comparable across models; R² is.")
DEMO_SHRINK = "Squeezing every group moves R² (and F) up while V barely changes: R² sees structure that V cannot."
DEMO_LIFT = "A similarity transform: V scales by λ exactly and R² is unchanged (to rounding), as the source proves."

# ---------------------------------------------------------------- human judgements and labels (reporting.labels)

SIMILARITY = (
    "Per model, the cosine of each judged pair's two items against its gold score in {pairs!r}: spearman (average "
    "ranks for ties; MTEB's STS main score) and pearson, as embsql.similarity_eval. ci_low/ci_high (and "
    "pearson_ci_low/pearson_ci_high) are t intervals on Fisher's z with a standard error clustered by item: an item "
    "recurs across pairs, so the pairs are not independent, and an interval that treats them so is too narrow. "
    "calibrated: at least 200 pairs and 20 degrees of freedom (effective items less one), where the simulated "
    "coverage held. A correlation says how well the cosine orders these pairs as these judges did; it is not "
    "accuracy on another task, and a scale with few distinct scores caps it below 1.")
SIMILARITY_COMPARE = (
    "Every pair of models on the same pairs: difference = estimate_a - estimate_b, per correlation. se from the two "
    "correlations' influence values subtracted pair by pair and clustered by item; ci_low/ci_high = difference ± "
    "t·se; p_value two-sided (H0: equal correlations); p_adjusted: Holm across the pairs of models, per correlation. A "
    "pair-level test (pairs taken as independent) rejected a true H0 several times too often in simulation.")
SIMILARITY_PAIRS = (
    "The cosine of each pair beside its gold score ({shown}), for the scatter; every figure of the similarity "
    "sections uses all the pairs. embsql.similarity_eval(..., per_pair=True) gives every pair.")
CLASSIFICATION = (
    "Per model, each item classified by the labels of its k = {k} nearest neighbours by cosine (itself excluded: "
    "leave-one-out; majority vote, ties to the nearest first and then the smallest label) and by the nearest "
    "leave-one-out class centroid, as embsql.knn_classify and embsql.centroid_classify. macro_f1 is the mean F1 over "
    "the classes. The intervals are over {unit}: {why} calibrated: 30 or more of them. Leave-one-out keeps an "
    "item's near-duplicates as its neighbours, so accuracy is optimistic for items that have them; for a held-out "
    "test set use embsql.knn_classify(..., split=...).")
CLUSTERED_ITEMS = "items of one group are not independent, so whole groups are resampled."
LABEL_IS_GROUP = ("the label is the report's group column, whose groups are the classes themselves (fixed by the "
                  "design, not sampled), so items are the units.")
UNCLUSTERED_ITEMS = "items are taken as independent."
CLASSIFICATION_COMPARE = (
    "Every pair of models on the same items, per classifier: difference = accuracy_a - accuracy_b; a_only and "
    "b_only count the items only one model gets right. {how} p_adjusted: Holm across the pairs of models, per "
    "classifier. As embsql.compare_classification.")
MCNEMAR = ("p_value: the mid-p McNemar test on the discordant items (p_exact: the exact test, conservative by "
           "its discreteness); ci_low/ci_high: Agresti and Min's interval (items taken as independent).")
CLUSTER_TEST = ("p_value: a sign-flip randomization test that swaps the two models' answers for whole groups of "
                "the {group!r} column (exact when there are few); ci_low/ci_high: a cluster-robust t interval over "
                "those groups. McNemar on clustered items rejects too often.")

RANKING = ("Simultaneous rank confidence sets, one block per metric (embsql.rank_models): every model's true rank lies in "
           "[rank_low, rank_high] for all the models together with probability level; a model tied with others "
           "in truth may take any rank of its tie. A model is ranked above another only when simultaneous intervals "
           "for every pairwise difference (Mogstad, Romano, Shaikh and Wilhelm's step-down over the paired cluster "
           "bootstrap, the same resamples of groups, or of query clusters, for every model) show it better; rank "
           "orders by the estimate alone. top marks the models that could be first. ci_low/ci_high are each model's "
           "own interval.")
