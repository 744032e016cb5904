"""What each figure can and cannot say (SPEC S27), in the words every report prints beside it."""

SUMMARY = ("One row per model. R² and F are comparable across models (unchanged by rotation, uniform scale, "
           "a shared direction added to every vector, or extra dimensions); V is not. Intervals are over groups: "
           "they say how much the figure would move with another sample of groups like these.")

DECOMPOSITION = ("SS_T = SS_B + SS_W on unit vectors. R² = SS_B/SS_T describes this design's group structure and "
                 "is similarity-invariant, but it is biased upward (compare it with r2_null = (G−1)/(n−1), its "
                 "expectation with no structure) and it is not a population share of variance. V = SS_T/n is "
                 "descriptive only: a shared direction lowers it without changing what a model can tell apart, "
                 "so V is not comparable across models.")

GROUPS = ("W̃_g is the size-corrected spread of group g about its own mean (blank for a group of one, where it is "
          "undefined). It describes a group's spread; it is not crowding around any one item, and it is not "
          "retrieval difficulty.")

JACKKNIFE = ("Cluster jackknife: leave one group out at a time. The SE treats groups as the sampled units; it "
             "does not cover the choice of items within a group or of the model's training data.")

BOOTSTRAP = ("Cluster bootstrap: groups resampled with replacement; percentile interval. Like the jackknife it "
             "treats groups as the sampled units. With few groups (under about 20) the interval is rough.")

PERMANOVA = ("Permutation p-value of pseudo-F: how often relabelling the items at random gives an F at least "
             "this large. Valid under exchangeability of items between groups; it is not the probability that "
             "the structure is due to chance, and it is not an effect size (read R² for that).")

DISPERSION = ("Dispersion test: do the groups differ in spread about their centroids? When it is significant, a "
              "large pseudo-F may reflect differences in spread rather than in location (SPEC S14).")

COMPARE = ("Paired comparison across models: the same groups are deleted (jackknife) or drawn (bootstrap) for "
           "both models, so the SE of the difference is smaller than either model's own. It pairs by group "
           "label; it assumes both models embedded the same items in each group.")
