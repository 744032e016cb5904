#!/usr/bin/env bash
# The documentation site as the README says to build it: a venv of its own (.venv-docs) with only
# embsql's docs extra installed (not the test extra, which would hide a package the docs need but
# the extra lacks, as pandas once was), then mkdocs build --strict into a scratch directory.
# About a minute: the pip install, and the notebook guide run on a kernel (docs/hooks.py).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
rm -rf .venv-docs
python3 -m venv .venv-docs
.venv-docs/bin/pip install -q --upgrade pip
.venv-docs/bin/pip install -q '.[docs]'
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
NO_MKDOCS_2_WARNING=1 .venv-docs/bin/mkdocs build --strict -d "$out"
echo "docs step (a venv with only .[docs]): $((SECONDS - start)) s"
