"""Is the inference true?  The full Monte Carlo tables, with their Monte Carlo errors.

    python validation/validity.py            # every table (tens of minutes on 2 cores)
    python validation/validity.py --quick    # fewer data sets per cell: a smoke run of a few minutes

Two parts, each a script of its own that can run alone:
  validation/validity_intervals.py   coverage of the 95% intervals (R², F, W̄ per model and the paired
                                difference between models) at G = 10 / 30 / 100, balanced and
                                unbalanced, homogeneous and heterogeneous noise
  validation/validity_tests.py       type I error of the dispersion test and of PERMANOVA (pseudo-F and
                                Welch) under H0, in the unbalanced and unequal-shape scenarios
The figures of the last full run are in validation/README.md ("validity").
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = ("validity_intervals.py", "validity_tests.py")


def main(argv: list[str]) -> int:
    status = 0
    for part in PARTS:
        print(f"\n=== {part} ===", flush=True)
        status |= subprocess.call([sys.executable, str(HERE / part), *argv])
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
