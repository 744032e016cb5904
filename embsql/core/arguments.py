"""The argument rules every face shares: permutations, seed, replicates, level.

Each check raises InputError naming the argument and the value, so the same bad argument gets the
same message from every Python function (the SQL functions word theirs from the same rules).
"""

from __future__ import annotations

import numbers

from embsql.errors import InputError, fail

# A permutation test costs one pass over the design per permutation: above this it runs for hours
# on a laptop, and its Monte Carlo error (about sqrt(p(1-p)/B)) is far below anything a p-value needs.
MAX_PERMUTATIONS = 1_000_000
MAX_REPLICATES = 1_000_000
SEED_LIMIT = 2**63  # numpy's generators take any non-negative integer; DuckDB's BIGINT caps SQL seeds


def _whole(name: str, value: object, minimum: int, maximum: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not minimum <= int(value) <= maximum:
        fail(f"argument.{name}", name=name, rule=f"a whole number {what}", value=repr(value))
    return int(value)


def check_permutations(value: object, *, allow_zero: bool = False) -> int:
    """A permutation count: 1..MAX_PERMUTATIONS (0 allowed where it means "no test")."""
    low = 0 if allow_zero else 1
    return _whole("permutations", value, low, MAX_PERMUTATIONS,
                  f"from {low} to {MAX_PERMUTATIONS:,}")


def check_replicates(value: object) -> int:
    """A bootstrap replicate count: 2..MAX_REPLICATES."""
    return _whole("replicates", value, 2, MAX_REPLICATES, f"from 2 to {MAX_REPLICATES:,}")


# The report stops each permutation test at the 10th permuted statistic that reaches the observed one:
# the level is that of the full test (validation/sequential_level.txt) and a large p-value costs about 10/p
# permutations instead of all of them; a p-value under 10/B comes out exactly as with all B.
REPORT_STOP_AFTER = 10


def check_stop_after(value: object, permutations: int, *, allow_zero: bool = False) -> int | None:
    """Besag and Clifford's h: stop once h permuted statistics reach the observed one (None: never;
    0 too where ``allow_zero``, as in the report, whose h applies to tests of any size)."""
    if value is None:
        return None
    low = 0 if allow_zero else 1
    return _whole("stop_after", value, low, permutations, f"from {low} to permutations ({permutations:,})")


def sequential_stop(stop_after: int | None, permutations: int) -> int | None:
    """The h a test of ``permutations`` runs with: None (all of them) for None or 0, else at most B."""
    return min(stop_after, permutations) if stop_after else None


def check_seed(value: object) -> int:
    """A seed: a non-negative whole number.  None is refused: a p-value or an interval must be
    reproducible from what the call says."""
    if value is None:
        raise InputError("seed must be a whole number (0 or more), not None: results are reproducible "
                         "only from a fixed seed", kind="argument.seed")
    return _whole("seed", value, 0, SEED_LIMIT - 1, "(0 or more)")


def check_level(value: object) -> float:
    """A confidence level strictly between 0 and 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < float(value) < 1:
        fail("argument.level", name="level", rule="a number between 0 and 1", value=repr(value))
    return float(value)
