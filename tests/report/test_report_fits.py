"""The README's first report command, run as a user runs it (a subprocess, its output piped), fits
(issue 32, item 1): no line over 100 characters (80 with COLUMNS=80), no number cut short by an
ellipsis, at most 60 lines, the verdict first, each caution in one line; --explain brings back the
full cautions."""

import os
import re
import subprocess
import sys

import pytest
from helpers import ROOT

from embsql.reporting import cautions

CUT_NUMBER = re.compile(r"\d…|…\d|\.…")


def _readme_command() -> list[str]:
    """The arguments of the README's first `embsql report` command (it runs from the repository root)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"embsql (report examples/embeddings\.parquet[^\n`&|]*)", readme)
    assert found, "the README has no `embsql report examples/embeddings.parquet ...` command"
    return found.group(1).split()


def _run(*extra: str, columns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["NO_COLOR"] = "1"
    if columns:
        env["COLUMNS"] = columns
    out = subprocess.run([sys.executable, "-m", "embsql", *_readme_command(), *extra], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def piped() -> str:
    return _run()


def test_the_readme_command_piped_fits_100_columns_and_60_lines(piped):
    lines = piped.splitlines()
    assert max(len(line) for line in lines) <= 100, max(lines, key=len)
    assert len(lines) <= 60, len(lines)
    assert not CUT_NUMBER.search(piped), CUT_NUMBER.search(piped)
    # the verdict first: the line after the title is blank, then the sentence on R²
    assert lines[1] == "" and "R²" in lines[2] and "separates" in lines[2]
    # three significant digits: no figure printed with more (integers and counts aside)
    for number in re.findall(r"(?<![\w.])\d+\.\d+", piped):
        whole, fraction = number.split(".")
        digits = (whole.lstrip("0") + fraction).lstrip("0") if whole.strip("0") else fraction.lstrip("0")
        assert len(digits) <= 3 or len(whole) >= 3, number
    # each caution in one line naming its docs page; one caution per section
    caution_lines = [line for line in lines if line.startswith("Caution: ")]
    assert len(caution_lines) == 8 and all("→ " in line and ".md#" in line for line in caution_lines)
    assert cautions.BOOTSTRAP not in " ".join(piped.split())
    # the ranking of the two models right after the verdict (before the summary), one row per metric
    ranking = next(k for k, line in enumerate(lines) if line.startswith("Rank confidence sets"))
    assert lines[ranking + 1].split() == ["R²", "base-768", "1", "[1–1]*", "mini-384", "2", "[2–2]"]
    assert lines[ranking + 2].startswith("Caution: ") and lines[ranking + 3] == "Summary"
    assert all(not line.startswith(("Sum-of-squares", "Paired")) for line in lines[:ranking])


def test_the_readme_command_fits_80_columns_when_asked():
    text = _run(columns="80")
    assert max(len(line) for line in text.splitlines()) <= 80, max(text.splitlines(), key=len)
    assert not CUT_NUMBER.search(text)
    # a table that does not fit leaves out whole columns and says which
    assert "not shown: mean_resultant_length" in " ".join(text.split())


def test_explain_brings_back_every_caution_in_full(piped):
    explained = _run("--explain")
    assert len(explained.splitlines()) > len(piped.splitlines()) + 20
    flat = " ".join(explained.split())
    for caution in (cautions.DECOMPOSITION, cautions.BOOTSTRAP, cautions.COMPARE, cautions.PERMANOVA):
        assert " ".join(caution.split()) in flat
    assert max(len(line) for line in explained.splitlines()) <= 100
