"""The measured figures are data: validation/calibration.json holds each one once, and every text that
quotes a figure (docstrings, the SQL reference, the report's cautions, the documentation) renders it
from there (embsql.calibration).  Also: the paths and dotted names that comments and docs mention exist.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT

import embsql
from embsql import calibration, sql_reference
from embsql.reporting import cautions

VALIDATION = ROOT / "validation"
DATA = json.loads((VALIDATION / "calibration.json").read_text(encoding="utf-8"))["figures"]
# the hand-written sources where a figure could be copied (sql/README.md and sql/embsql.sql are generated)
SOURCES = [*sorted((ROOT / "embsql").rglob("*.py")), *sorted((ROOT / "udfs").glob("*.py")),
           *sorted((ROOT / "sql" / "modules").glob("*.sql")), *sorted((ROOT / "sql" / "python").glob("*.sql")),
           *sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]


def _collect():
    spec = importlib.util.spec_from_file_location("validation_collect", VALIDATION / "collect.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_data_file_is_what_collect_makes_of_the_stored_outputs():
    """calibration.json is generated: after a rerun of a simulation, run validation/collect.py."""
    collect = _collect()
    assert (VALIDATION / "calibration.json").read_text(encoding="utf-8") == collect.render_json(collect.collect()), \
        "run: python validation/collect.py"


@pytest.mark.parametrize("key", sorted(DATA))
def test_each_figure_says_what_was_measured_and_its_monte_carlo_errors_are_binomial(key):
    """Each entry names what was measured, on what design, the nominal rate, the script and its stored output
    (which exist), and the date; its range is that of its cells; and each cell's Monte Carlo SE is the
    binomial one, sqrt(p (1 - p) / N), for its replicate count N (computed here, not read from the file)."""
    entry = DATA[key]
    for name in ("measured", "design", "text", "date", "command"):
        assert isinstance(entry[name], str) and entry[name], name
    assert re.fullmatch(r"2\d{3}-\d\d-\d\d", entry["date"])
    assert entry["nominal"] in (5.0, 95.0)
    assert (ROOT / entry["script"]).is_file() and (ROOT / entry["output"]).is_file()
    assert entry["script"].startswith("validation/") and entry["output"].startswith("validation/")
    values = [c["value"] for c in entry["cells"]]
    assert entry["count"] == len(values) >= 1
    assert (entry["low"], entry["high"]) == (min(values), max(values))
    assert entry["mc_se"] == max(c["mc_se"] for c in entry["cells"])
    for c in entry["cells"]:
        p = c["value"] / 100
        binomial = 100 * math.sqrt(p * (1 - p) / c["replicates"])
        # the stored outputs round the rate and its SE to the figure's decimals
        step = 10.0 ** -entry["decimals"]
        assert abs(c["mc_se"] - binomial) <= step + 0.06 * binomial, (c["design"], c["mc_se"], binomial)


def test_fields_render_from_the_data():
    entry = DATA["dispersion.level"]
    assert calibration.field("dispersion.level", "range") == f"{entry['low']:.1f}–{entry['high']:.1f}%"
    assert calibration.field("dispersion.level", "count") == str(len(entry["cells"]))
    assert calibration.render("x {{figure dispersion.level high}} y") == f"x {entry['high']:.1f}% y"
    sentence = calibration.sentence("dispersion.level")
    assert "{" not in sentence and calibration.field("dispersion.level_second_draw", "range") in sentence
    assert calibration.number(100.0, 1) == "100" and calibration.number(0.0, 2) == "0"
    with pytest.raises(KeyError, match="no measured figure 'no.such'"):
        calibration.render("{{figure no.such}}")
    with pytest.raises(KeyError, match="no field 'median'"):
        calibration.field("dispersion.level", "median")


def _placeholders() -> list[tuple[Path, str, str | None]]:
    found = []
    for path in SOURCES:
        for key, name in calibration.PLACEHOLDER.findall(path.read_text(encoding="utf-8")):
            if key != "KEY":                 # the syntax, as the docs describe it
                found.append((path, key, name or None))
    return found


def test_every_placeholder_names_a_figure_and_every_figure_is_quoted():
    found = _placeholders()
    assert len(found) >= 30
    for path, key, name in found:
        assert key in DATA, f"{path}: {key}"
        assert name is None or name in calibration.FIELDS, f"{path}: {key} {name}"
    texts = " ".join(entry["text"] for entry in DATA.values())
    code = "".join(p.read_text(encoding="utf-8") for p in SOURCES)
    for key in DATA:            # a figure nobody quotes does not belong in the file (the tables are in README)
        assert key in {k for _, k, _ in found} or f"figure {key}" in texts or f'"{key}"' in code, key


def _spellings(low: float, high: float, decimals: int) -> set[str]:
    out = set()
    for d in {decimals, 1}:
        lo, hi = f"{low:.{d}f}", f"{high:.{d}f}"
        for dash in ("–", "-", " to "):
            out.add(f"{lo}{dash}{hi}%")
    return out


def test_no_figure_is_copied_by_hand():
    """No hand-written source spells a figure's range: it names the figure's key instead."""
    copies = []
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        for key, entry in DATA.items():
            for spelled in _spellings(entry["low"], entry["high"], entry["decimals"]):
                if spelled in text:
                    copies.append(f"{path.relative_to(ROOT)}: {spelled} ({key})")
    assert not copies, "\n".join(copies)


def test_docstrings_render_their_figures():
    assert calibration.sentence("dispersion.level") in " ".join(embsql.dispersion.__doc__.split())
    assert calibration.field("rank_sets.coverage", "range") in embsql.rank_models.__doc__
    assert calibration.field("sequential.level_full", "range") in " ".join(embsql.report.__doc__.split()) \
        or calibration.field("sequential.level_full", "range") in " ".join(embsql.Report.__doc__.split())
    for name in embsql.__all__:
        obj = getattr(embsql, name)
        for target in (obj, *vars(obj).values()) if isinstance(obj, type) else (obj,):
            assert "{{figure" not in (getattr(target, "__doc__", None) or ""), name


def test_the_sql_reference_renders_its_figures():
    every = " ".join(" ".join(sql_reference.render(f).split()) for f in sql_reference.functions())
    assert "{{figure" not in every
    assert calibration.sentence("dispersion.level") in every
    assert calibration.field("retrieval.coverage", "range") in every
    readme = (ROOT / "sql" / "README.md").read_text(encoding="utf-8")
    assert "{{figure" not in readme and calibration.field("cka.coverage", "range") in readme


def test_the_cautions_and_the_warning_quote_the_data():
    assert calibration.sentence("dispersion.level") in cautions.DISPERSION
    assert calibration.field("intervals.model.G30", "range") in cautions.INTERVALS
    assert calibration.field("intervals.difference.G10", "range") in cautions.FEW_GROUPS
    assert calibration.field("retrieval.coverage", "range") in cautions.COMPARE_RETRIEVAL
    rng = np.random.default_rng(0)
    centre = np.eye(8)[0]
    x = np.vstack([centre + 0.1 * rng.normal(size=(30, 8)), centre + 1.0 * rng.normal(size=(30, 8))])
    import duckdb
    import pyarrow as pa
    con = duckdb.connect()                       # unequal spreads: permanova warns, quoting the dispersion test
    con.register("t", pa.table({"g": np.repeat(["a", "b"], 30), "v": [list(row) for row in x]}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        embsql.permanova(con, "t", group="g", vector="v", permutations=99)
    quoted = [str(w.message) for w in caught if "dispersion test" in str(w.message)]
    assert quoted and calibration.sentence("dispersion.level") in quoted[0]


def test_the_docs_hook_renders_the_guides():
    hooks_path = ROOT / "docs" / "hooks.py"
    spec = importlib.util.spec_from_file_location("docs_hooks_figures", hooks_path)
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = (ROOT / "docs" / "guides" / "how-sure.md").read_text(encoding="utf-8")
    assert "{{figure" in page
    rendered = hooks.on_page_markdown(page, None, None, None)
    assert "{{figure" not in rendered and calibration.field("rank_sets.coverage", "range") in rendered
    html = "<p>it covered {{figure cka.coverage range}} at 95%</p>"
    expected = f"<p>it covered {calibration.field('cka.coverage', 'range')} at 95%</p>"
    assert hooks.on_page_content(html, None, None, None) == expected


def test_installed_wheel_carries_the_figures():
    """The wheel carries validation/calibration.json as embsql/calibration.json (pyproject's force-include)."""
    package = Path(embsql.__file__).parent
    if "site-packages" not in str(package):
        assert calibration.data_file() == VALIDATION / "calibration.json"
        pytest.skip("running from a source checkout; CI (.ci/run) tests the installed wheel")
    assert calibration.data_file() == package / "calibration.json"
    assert json.loads(calibration.data_file().read_text(encoding="utf-8"))["figures"] == DATA


# ---------------------------------------------------------------- the paths and names that comments mention

_DOCS = [p for p in (*SOURCES, *sorted((ROOT / "tests").glob("*.py")), *sorted((ROOT / "bench").glob("*.py")),
                     *sorted(VALIDATION.glob("*.py")), ROOT / "bench" / "README.md", VALIDATION / "README.md",
                     ROOT / "pyproject.toml") if p.name != "test_layout.py"]
_PATH = re.compile(r"(?<![\w/.-])((?:bench|validation|tests|sql|udfs|embsql|docs|examples)/[\w/.-]*\w"
                   r"\.(?:py|sql|txt|json|md|R|parquet|css))")


def test_every_repository_path_a_comment_or_doc_names_exists():
    """A file named in a comment, docstring or page (embsql/core/labels.py, validation/rank_sets.py, ...) exists."""
    missing = []
    for path in _DOCS:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for named in _PATH.findall(line):
                if named == "embsql/calibration.json":        # the wheel's copy of validation/calibration.json
                    continue
                if not (ROOT / named).exists():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    assert not missing, "\n".join(missing)


def _resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attribute in parts[i:]:
            if not hasattr(obj, attribute):
                return False
            obj = getattr(obj, attribute)
        return True
    return False


def test_every_dotted_embsql_name_a_comment_or_doc_names_exists():
    """embsql.io.similarity_pairs, embsql.reporting.cautions ...: a module or attribute that is there."""
    pattern = re.compile(r"(?<![\w.])embsql(?:\.[A-Za-z_]\w*)+")
    missing = []
    for path in _DOCS:
        if path.name in ("test_docs_site.py", "hooks.py"):      # names made up to test the site's hooks
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for named in pattern.findall(line):
                named = named.rstrip(".")
                if "__main__" in named or re.search(r"\.(py|sql|json|md|txt|parquet)$", named) or "._udfs" in named:
                    continue
                if not _resolves(named):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {named}")
    assert not missing, "\n".join(missing)


def test_git_tracks_the_data_file():
    """The one source of the figures is committed (the wheel's copy is made from it at build time)."""
    tracked = subprocess.run(["git", "ls-files", "validation/calibration.json"], cwd=ROOT, capture_output=True,
                             text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    assert tracked.stdout.strip() == "validation/calibration.json"
