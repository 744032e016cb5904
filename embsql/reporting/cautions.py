"""What each figure can and cannot say, in the words every report prints beside it.

One home for them: the report's sections (embsql.reporting.sections) and the demo's experiments
(embsql.demo) read their cautions from here.

The invariance sentences are held by tests/test_invariance.py: every vector is normalised first,
so a change of the raw vectors leaves a figure exactly unchanged only when, after normalisation,
it is a similarity of the unit vectors (y = aQx + b with Q orthogonal).
"""

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
             "more groups like these: the jackknife bias-corrected estimate (estimate_bc, r2_bc) ± t(G−1) × its "
             "jackknife SE, built on the logit scale for R² and W̄ and the log scale for F, so they stay inside "
             "the figure's range. They are not centred on the plain estimate, which is biased by about "
             "−R²(1−R²)/G. In simulation they covered 92.7–96.5% at 30 groups and 93–97% at 100; calibrated is false below 30 "
             "groups, where the coverage of a paired difference fell to 85–90% in some designs. dropped counts bootstrap resamples in which "
             "the figure was undefined (e.g. F when only groups of one were drawn); they are left out.")

FEW_GROUPS = ("fewer than 30 groups, so the interval is not calibrated (at 10 groups its coverage was measured "
              "at 90–97% for one model and 85–97.5% for a paired difference, depending on the design); read it as "
              "rough")

SUMMARY = ("One row per model. R² and F are comparable across models (similarity level: exactly unchanged by "
           "rotation, uniform scaling of the raw vectors, extra dimensions or the exact lift; only approximately "
           "by a shared direction or a translation added before normalisation); V is not (isometry level). "
           "Intervals are over groups: they say how much the figure would move with another sample of groups "
           "like these. r2_bc is the bias-corrected R² the interval is built around; r2_adj = 1 − MS_W/MS_T is "
           "about 0 when the groups have no structure; calibrated is false below 30 groups.")

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
             "interval (r2_ci_low, r2_ci_high) with r2_bc, the bias-corrected R² it is built around, calibrated, "
             "and r2_adj = 1 − MS_W/MS_T, the adjusted R², which is about 0 when the groups have no structure "
             "(plain R² is then about (G−1)/(n−1)).")

PERMANOVA = ("Permutation p-value of pseudo-F: how often relabelling the items at random gives an F at least "
             "this large. Valid under exchangeability of items between groups; it is not the probability that "
             "the structure is due to chance, and it is not an effect size (read R² for that).")

DISPERSION = ("Dispersion test: do the groups differ in spread about their centroids? Distances to each centroid are "
              "size-corrected (× √(n_g/(n_g−1))) and the residual vectors permuted, which holds the test's level in "
              "unbalanced designs; groups with fewer than 4 items are left out and counted (groups_left_out, "
              "items_left_out). When it is significant, a large pseudo-F may reflect differences in spread rather "
              "than in location.")

COMPARE = ("Paired comparison across models, paired by group label: the same groups are left out (jackknife) or "
           "drawn (bootstrap) for both models, so the SE of the difference is smaller than either model's own. "
           "Pairing by group is enough because groups are the sampled units: the interval is over samples of "
           "groups, and the items inside a group may differ between the models (in simulation the coverage was "
           "the same with different items as with the same ones). The report sees only group sums, so it cannot "
           "check the items: same_items is false when a group's size differs and blank otherwise. ci_low/ci_high "
           "are a studentized bootstrap interval (each resample's difference divided by its own jackknife SE), "
           "which covered 92.5–97% from 30 groups on; calibrated is false below 30 groups; dropped counts "
           "resamples in which the difference was undefined.")

# the demo's three experiments (embsql.demo.EXPERIMENTS)
DEMO_COMMON_DIRECTION = ("A shared direction makes every vector more alike: V falls about five-fold while R² and F "
                         "stay put. V is therefore not comparable across models; R² is.")
DEMO_SHRINK = "Squeezing every group moves R² (and F) up while V barely changes: R² sees structure that V cannot."
DEMO_LIFT = "A similarity transform: V scales by λ exactly and R² is unchanged (to rounding), as the source proves."
