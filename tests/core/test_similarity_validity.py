"""Seeded small versions of validation/similarity_validity.py (whose simulation model these tests reuse;
its full tables, with Monte Carlo errors, are in validation/README.md): the item-clustered interval of
similarity_eval covers at its nominal rate and compare_similarity's paired test holds its level when
items recur across pairs, where the pair-level method (pairs as if independent) fails both by far.

Design "recurring", 500 pairs: about half of the items are in one pair and about 7% in 10 or more
(hubs of about 20 pairs).  The bounds are about 3 Monte Carlo SEs wide, and the pair-level method
misses each by more than 10 SEs (bench: coverage 70-75%, level 25-33%).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "validation"))
from similarity_validity import DESIGNS, design, run  # noqa: E402

RUNS = 600
SE = np.sqrt(0.05 * 0.95 / RUNS)          # about 0.9 percentage points

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def shares():
    return run(500, DESIGNS["recurring"], RUNS, seed=2026)


def test_the_design_has_items_in_one_pair_and_items_in_ten_or_more():
    a, b, items = design(np.random.default_rng(0), 500, DESIGNS["recurring"])
    degree = np.bincount(np.r_[a, b])
    assert np.mean(degree == 1) > 0.4 and (degree >= 10).sum() >= 10


@pytest.mark.parametrize("correlation", ["spearman", "pearson"])
def test_the_paired_test_holds_its_level_under_h0(shares, correlation):
    level = shares["item"][f"level_{correlation}"]
    assert 0.05 - 3 * SE <= level <= 0.05 + 3 * SE, level
    assert shares["pair"][f"level_{correlation}"] > 0.05 + 10 * SE      # the pair-level test rejects far too often


@pytest.mark.parametrize("what", ["cover_spearman", "cover_pearson", "cover_diff_spearman", "cover_diff_pearson"])
def test_the_intervals_cover_at_95_percent(shares, what):
    cover = shares["item"][what]
    assert 0.95 - 3 * SE <= cover <= 0.95 + 3 * SE, cover
    assert shares["pair"][what] < 0.95 - 10 * SE                         # the pair-level interval is too narrow
