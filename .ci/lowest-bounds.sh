#!/usr/bin/env bash
# The fast suite on the lowest version of each runtime dependency that pyproject.toml allows, in a
# venv of its own (.venv-lowest): uv (from PyPI) installs embsql with its direct dependencies
# resolved to their lowest allowed versions (--resolution lowest-direct), then the test tools on
# top, held to those versions by a constraints file.  EMBSQL_LOWEST_BOUNDS=1 makes
# tests/project/test_dependency_bounds.py check that the venv holds exactly the bounds.  Ruff and mypy
# (tests/project/test_tooling.py) check the code, not the versions: they run in the main suite only.
# test_hand_worked_three_groups takes its reference from scipy's t.ppf to 1e-12; the newest scipy
# beside numpy 1.24 (1.15) gives t.ppf(0.975, 2) 1.2e-11 off the exact value that embsql (and
# scipy 1.17) compute, so it runs in the main suite only.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
rm -rf .venv-lowest
python3 -m venv .venv-lowest
.venv-lowest/bin/pip install -q uv
uv() { .venv-lowest/bin/uv "$@"; }
uv pip install -q --python .venv-lowest/bin/python --resolution lowest-direct .
uv pip freeze --python .venv-lowest/bin/python | grep -v '^embsql' > .venv-lowest/bounds.txt
# the test extra's tools that the fast suite uses, as pyproject.toml spells them
tools=$(.venv-lowest/bin/python - <<'PY'
import re, tomllib
extra = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]
wanted = {"pytest", "pytest-xdist", "hypothesis", "mpmath", "pandas", "polars", "statsmodels", "duckdb-cli",
          "scikit-learn"}
print(" ".join(r for r in extra if re.match(r"[A-Za-z0-9_.-]+", r)[0] in wanted))
PY
)
# shellcheck disable=SC2086  # one word per requirement
uv pip install -q --python .venv-lowest/bin/python -c .venv-lowest/bounds.txt $tools
echo "lowest allowed runtime dependencies: $(grep -iE '^(duckdb|pyarrow|numpy|scipy|sqlglot|rich|matplotlib)==' .venv-lowest/bounds.txt | tr '\n' ' ')"
EMBSQL_LOWEST_BOUNDS=1 .venv-lowest/bin/pytest -q -n auto --dist loadscope -m "not engines and not browser and not slow" \
    --deselect tests/project/test_tooling.py --deselect tests/api/test_compare_retrieval.py::test_hand_worked_three_groups tests
echo "lowest-bounds step: $((SECONDS - start)) s"
