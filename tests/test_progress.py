"""Long runs: a progress bar when asked for, and Ctrl-C stops them cleanly."""

import numpy as np
import pytest

from embsql.core.permutation import design, permanova_vectors
from embsql.progress import progress_bar


def unit_vectors(n=40, d=5, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_progress_callback_reaches_the_total():
    seen = []
    permanova_vectors(unit_vectors(), design(np.repeat(np.arange(4), 10)), permutations=199, seed=1,
                      progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (199, 199)
    assert all(a[0] <= b[0] for a, b in zip(seen, seen[1:]))


def test_interrupt_propagates_through_the_bar():
    def interrupt(done, total):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        with progress_bar("permutations", 199, enabled=True) as tick:
            assert tick is not None
            permanova_vectors(unit_vectors(), design(np.repeat(np.arange(4), 10)), permutations=199, seed=1,
                              progress=lambda done, total: (tick(done, total), interrupt(done, total)))


def test_no_bar_unless_interactive_or_asked():
    with progress_bar("x", 10, enabled=None) as tick:      # pytest's stderr is not a terminal
        assert tick is None
    with progress_bar("x", 10, enabled=False) as tick:
        assert tick is None
