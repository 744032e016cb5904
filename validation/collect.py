"""Gather the measured figures of the simulations into one file, validation/calibration.json.

    python validation/collect.py            # rewrite validation/calibration.json from the stored outputs
    python validation/collect.py --check    # exit 1 if the file is not what the stored outputs give

Each simulation here writes its table (``*.txt``, or ``*.json``) beside it; this script reads those
stored outputs (it reruns nothing) and writes one entry per *figure key*: what was measured, the
design, the nominal rate, the cells (each a design with its measured rate, Monte Carlo standard
error and replicate count), their range, the script that measured it, its stored output and the
date of the run.  ``text`` is the sentence that quotes the figure; embsql renders it
(embsql/calibration.py) wherever the figure is quoted: docstrings, the SQL reference, the report's
cautions and the documentation, which name the key as ``{{figure KEY}}`` (the sentence) or
``{{figure KEY range}}`` (``low–high%``).  So a figure is written once, here, from the data.

After a rerun that changes a stored output: run this script and commit both files
(tests/project/test_figures.py checks that calibration.json is what this script makes of the outputs).
Rates are in percent.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "calibration.json"
PM = r"(-?\d+(?:\.\d+)?)%?\s*(?:±|\+-)\s*(\d+(?:\.\d+)?)"   # "5.8 ± 1.2", "5.8% ± 1.2" or "5.8 +- 1.2"


def cell(design: str, value: float, se: float, replicates: int) -> dict[str, Any]:
    return {"design": design, "value": value, "mc_se": se, "replicates": replicates}


def figure(*, measured: str, design: str, nominal: float, cells: list[dict[str, Any]], script: str,
           output: str, date: str, text: str, decimals: int = 1, command: str = "") -> dict[str, Any]:
    """One entry: the cells and their summary (range, largest Monte Carlo SE, replicate counts)."""
    if not cells:
        raise ValueError(f"no cells for {measured!r}: the stored output {output} changed its layout")
    values = [c["value"] for c in cells]
    counts = sorted({c["replicates"] for c in cells})
    band = 2.5 if nominal >= 50 else 2.0        # 95 +- 2.5% for a coverage, 3-7% for a level at 5%
    return {"measured": measured, "design": design, "nominal": nominal, "unit": "%",
            "low": min(values), "high": max(values), "mc_se": max(c["mc_se"] for c in cells),
            "replicates": counts[0] if len(counts) == 1 else [counts[0], counts[-1]],
            "count": len(cells), "within": sum(abs(v - nominal) <= band + 1e-9 for v in values),
            "band": band, "decimals": decimals, "text": text,
            "script": script, "output": output, "command": command, "date": date, "cells": cells}


def _table_rows(lines: list[str], start: str) -> list[list[str]]:
    """The rows of the Markdown table that follows the first line starting with ``start``."""
    i = next(i for i, line in enumerate(lines) if line.startswith(start))
    rows = []
    for line in lines[i + 1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts[0] in ("design", "shape") or set(parts[0]) <= set("-"):
            continue
        rows.append(parts)
    return rows


def _pm(text: str) -> tuple[float, float]:
    m = re.search(PM, text)
    if not m:
        raise ValueError(f"no 'value ± se' in {text!r}")
    return float(m.group(1)), float(m.group(2))


# ---------------------------------------------------------------- the dispersion test

def dispersion() -> dict[str, Any]:
    lines = (HERE / "dispersion_validity.txt").read_text(encoding="utf-8").splitlines()
    table = _table_rows(lines, "Level (groups equal in spread)")
    first = [cell(r[0], *_pm(r[2]), 400) for r in table]
    second = []
    for r in _table_rows(lines, "Second draw of the five lowest cells"):
        second.append(cell(r[0], *_pm(r[2]), 800 if "topic" in r[0] else 1200))
    common = dict(script="validation/dispersion_validity.py", output="validation/dispersion_validity.txt",
                  date="2026-12-02", nominal=5.0,
                  command="nice -n 10 python validation/dispersion_validity.py --runs 400 --vegan-runs 50")
    return {
        "dispersion.level": figure(
            measured="rejection rate at 5% of the dispersion test (permanova's dispersion check) on null data sets",
            design="groups equal in spread: groups of 2 to 200 items, d = 16 to 768, uniform, clumped and "
                   "anisotropic vectors, equal and differing locations; B = 19 permutations",
            cells=first,
            text="at 5% it rejected {range} of null data sets on {count} designs (groups of 2 to 200 items, "
                 "d = 16 to 768, uniform, clumped and anisotropic, equal and differing locations; {replicates} "
                 "data sets each); the lowest cells gave {{figure dispersion.level_second_draw range}} on a second "
                 "draw of {{figure dispersion.level_second_draw replicates}} data sets each", **common),
        "dispersion.level_chi2": figure(
            measured="rejection rate at 5% of the same statistic against chi-square(G - 1)/(G - 1) (not used)",
            design="the designs of dispersion.level", cells=[cell(r[0], *_pm(r[3]), 400) for r in table],
            text="against chi-square the same F rejected {range}", **common),
        "dispersion.level_old": figure(
            measured="rejection rate at 5% of the scheme it replaced (betadisper's distances, their ANOVA F, the "
                     "residual vectors permuted)", design="the designs of dispersion.level",
            cells=[cell(r[0], *_pm(r[5]), 400) for r in table],
            text="the scheme it replaced rejected {range}", **common),
        "dispersion.level_vegan": figure(
            measured="rejection rate at 5% of vegan's permutest(betadisper(dist(X), group, bias.adjust = TRUE))",
            design="the designs of dispersion.level, the first 50 data sets of each",
            cells=[cell(r[0], *_pm(r[6]), 50) for r in table],
            text="vegan's permutest rejected {range} ({replicates} data sets each)", **common),
        "dispersion.level_second_draw": figure(
            measured="rejection rate at 5% of the dispersion test, a second draw of the lowest cells",
            design="the five lowest cells of dispersion.level, another seed",
            cells=second, text="at 5% it rejected {range} of null data sets in a second draw of the lowest cells",
            **{**common, "command": "nice -n 10 python validation/dispersion_validity.py --tables level --only NAME "
                                    "--runs 1200 --schemes new --seed 99"}),
    }


# ---------------------------------------------------------------- sequential p-values

def sequential() -> dict[str, Any]:
    records = json.loads((HERE / "sequential_level.json").read_text(encoding="utf-8"))["records"]
    null = [r for r in records if r["null"]]

    def cells(column: str) -> list[dict[str, Any]]:
        return [cell(f"{r['test']}, {r['design']}", r[column][0], r[column][1], r["runs"]) for r in null]

    common = dict(script="validation/sequential_level.py", output="validation/sequential_level.json",
                  date="2026-12-05", nominal=5.0,
                  design="PERMANOVA and the dispersion test on 4 null designs (3 to 10 groups, d = 3 to 64); "
                         "B = 999, stop after the 10th permuted statistic reaching the observed one",
                  command="nice python validation/sequential_level.py --runs 600")
    return {
        "sequential.level": figure(
            measured="rejection rate at 5% of the sequential (Besag-Clifford) permutation p-value on null data sets",
            cells=cells("sequential_05"),
            text="at 5% the sequential tests rejected {range} of null data sets where the full ones rejected "
                 "{{figure sequential.level_full range}}", **common),
        "sequential.level_full": figure(
            measured="rejection rate at 5% of the full permutation p-value (all B permutations), same data sets",
            cells=cells("full_05"), text="at 5% the full tests rejected {range} of null data sets", **common),
    }


# ---------------------------------------------------------------- the intervals of one model and of a difference

def _interval_blocks(path: Path) -> list[tuple[str, int, int, dict[str, float], dict[str, float]]]:
    """(design, G, data sets, {row: calibrated %}, {row: its MC SE}) per block; percentile too, as 'pct ' rows."""
    blocks = []
    for line in path.read_text(encoding="utf-8").splitlines():
        head = re.match(r"(\S.*), G = (\d+)\s+\((\d+) data sets", line)
        if head:
            blocks.append((head.group(1), int(head.group(2)), int(head.group(3)), {}, {}))
            continue
        row = re.match(r"\s+(r2|f|w_bar) (A|B|A−B)\s+(\d+\.\d) \((\d+\.\d)\)(?:\s+(\d+\.\d) \((\d+\.\d)\))?", line)
        if row and blocks:
            key = f"{row.group(1)} {row.group(2)}"
            blocks[-1][3][key], blocks[-1][4][key] = float(row.group(3)), float(row.group(4))
            if row.group(5):
                blocks[-1][3]["pct " + key], blocks[-1][4]["pct " + key] = float(row.group(5)), float(row.group(6))
    return blocks


def intervals() -> dict[str, Any]:
    blocks = _interval_blocks(HERE / "validity_intervals.txt")
    # at 30 groups: the 1000-data-set cells (the first design's own run, the others' combined runs)
    chosen = [b for b in blocks if b[1] != 30 or b[2] == 1000]

    def cells(groups: int, difference: bool, percentile: bool = False) -> list[dict[str, Any]]:
        out = []
        for design, g, runs, values, ses in chosen:
            if g != groups:
                continue
            for key, value in values.items():
                if key.startswith("pct ") != percentile or key.endswith("A−B") != difference:
                    continue
                out.append(cell(f"{design}, G = {g}: {key.removeprefix('pct ')}", value, ses[key], runs))
        return out

    common = dict(script="validation/validity_intervals.py", output="validation/validity_intervals.txt",
                  date="2026-12-01", nominal=95.0,
                  command="python validation/validity_intervals.py (the commands are in the output's header)")
    design = ("superpopulation design: G group centres on the sphere, two models (d = 64 and 32) of the same "
              "items; balanced and unbalanced sizes, homogeneous and heterogeneous noise; 999 resamples")
    out = {}
    for groups in (10, 30, 100):
        out[f"intervals.model.G{groups}"] = figure(
            measured=f"coverage of the calibrated 95% interval of one model's R², F and W̄ at {groups} groups",
            design=design, cells=cells(groups, False),
            text=f"one model's interval covered {{range}} at {groups} groups", **common)
        out[f"intervals.difference.G{groups}"] = figure(
            measured=f"coverage of the studentized bootstrap 95% interval of a paired difference of two models "
                     f"at {groups} groups", design=design, cells=cells(groups, True),
            text=f"the interval of a paired difference covered {{range}} at {groups} groups", **common)
    out["intervals.difference.from30"] = figure(
        measured="coverage of the studentized bootstrap 95% interval of a paired difference from 30 groups on",
        design=design, cells=cells(30, True) + cells(100, True),
        text="the interval of a paired difference covered {range} from 30 groups on", **common)
    fixed = [cell(f"{design}, G = {g}: {key}", value, ses[key], runs)
             for design, g, runs, values, ses in _interval_blocks(HERE / "validity_intervals_fixed.txt")
             for key, value in values.items() if g == 30 and not key.startswith("pct ") and not key.endswith("A−B")]
    out["intervals.fixed_sizes.G30"] = figure(
        measured="coverage of one model's 95% interval by the stratified jackknife (group sizes fixed by the design: "
                 "deviations from the mean of the groups of the same size, Welch-Satterthwaite df) at 30 groups",
        design="every sample has the same group sizes; homogeneous and heterogeneous noise; 999 resamples",
        cells=fixed, text="the stratified jackknife covered {range} at 30 groups",
        **{**common, "output": "validation/validity_intervals_fixed.txt",
           "command": "python validation/validity_intervals.py --datasets 400 --groups 10,30,100 --designs 6,7"})
    out["intervals.percentile.G30"] = figure(
        measured="coverage of the plain percentile bootstrap interval of one model's figures at 30 groups (not used)",
        design=design, cells=cells(30, False, percentile=True),
        text="the percentile bootstrap covered {range} at 30 groups", **common)
    return out


# ---------------------------------------------------------------- rank sets of K models

def rank_sets() -> dict[str, Any]:
    data = json.loads((HERE / "rank_sets.json").read_text(encoding="utf-8"))
    common = dict(script="validation/rank_sets.py", output="validation/rank_sets.json", date="2026-12-05",
                  nominal=95.0, command=data["meta"]["command"].replace("bench/", "validation/"))
    design = ("K = 3, 5 and 10 models on the same 30 or 100 groups; all tied, near ties, gaps; R² of unit vectors "
              "and an nDCG-like per-query score; {runs} data sets a cell, {replicates} joint resamples")
    design = design.format(**data["meta"])

    def cells(column: str, family: str | None = None) -> list[dict[str, Any]]:
        return [cell(f"{c['family']}, K = {c['k']}, G = {c['groups']}, {c['design']}", round(100 * c[column][0], 1),
                     round(100 * c[column][1], 1), c["runs"])
                for c in data["cells"] if family in (None, c["family"])]

    return {
        "rank_sets.coverage": figure(
            measured="share of data sets where the rank sets of all K models held together (no pair ordered falsely)",
            design=design, cells=cells("sets_cover"), text="the rank sets held together in {range} of simulated "
                                                           "data sets at 95%", **common),
        "rank_sets.simultaneous_r2": figure(
            measured="the same as rank_sets.simultaneous, for R² only", design=design,
            cells=cells("simultaneous_cover", "r2"),
            text="all the intervals of R² held together in {range} of simulated data sets at 95%", **common),
        "rank_sets.simultaneous_ndcg": figure(
            measured="the same as rank_sets.simultaneous, for the nDCG-like retrieval score only", design=design,
            cells=cells("simultaneous_cover", "ndcg"),
            text="all the intervals of a retrieval metric held together in {range} of simulated data sets at 95%",
            **common),
        "rank_sets.simultaneous": figure(
            measured="share of data sets where all K(K-1)/2 simultaneous pairwise intervals held together",
            design=design, cells=cells("simultaneous_cover"),
            text="all the intervals held together in {range} of simulated data sets at 95%", **common),
    }


def rank_sets_families() -> dict[str, Any]:
    """The rank sets and simultaneous intervals of classification, similarity and CKA
    (validation/rank_sets_families.py): one entry per family and kind, and, where a family's sets
    are calibrated only from 100 clusters, one for G = 100 alone."""
    data = json.loads((HERE / "rank_sets_families.json").read_text(encoding="utf-8"))
    designs = {"classification": "K = 3, 5 and 10 classifiers on the same {groups} clusters of 3 items",
               "similarity": "K = 3, 5 and 10 models' cosines against the same gold scores of pairs of {groups} "
                             "recurring items (five pairs per item), the models' estimates correlated",
               "cka": "K = 3, 5 and 10 models against one reference model on the same {groups} groups of 4 items "
                      "(d = 8), the models' estimates correlated"}
    group_of = {"accuracy": "classification", "macro_f1": "classification", "spearman": "similarity",
                "pearson": "similarity", "cka": "cka"}

    def cells(family: str, column: str, groups: tuple[int, ...]) -> list[dict[str, Any]]:
        return [cell(f"{c['family']}, K = {c['k']}, G = {c['groups']}, {c['design']}", round(100 * c[column][0], 1),
                     round(100 * c[column][1], 1), c["runs"])
                for c in data["cells"] if c["family"] == family and c["groups"] in groups]

    out = {}
    # the figures the text quotes: each family's sets and simultaneous intervals at 30 and 100
    # clusters, and the sets from 100 on where they are calibrated only from there (macro-F1)
    for family, word, groups, suffix, column in (
            ("accuracy", "accuracy", (30, 100), "sets", "sets_cover"),
            ("accuracy", "accuracy", (30, 100), "simultaneous", "simultaneous_cover"),
            ("macro_f1", "macro-F1", (30, 100), "sets", "sets_cover"),
            ("macro_f1", "macro-F1", (100,), "sets_G100", "sets_cover"),
            ("spearman", "Spearman", (30, 100), "sets", "sets_cover"),
            ("spearman", "Spearman", (30, 100), "simultaneous", "simultaneous_cover"),
            ("pearson", "Pearson", (30, 100), "sets", "sets_cover"),
            ("pearson", "Pearson", (30, 100), "simultaneous", "simultaneous_cover"),
            ("cka", "CKA", (30, 100), "sets", "sets_cover"),
            ("cka", "CKA", (30, 100), "simultaneous", "simultaneous_cover")):
        meta = data["meta"][group_of[family]]
        what = "rank sets" if column == "sets_cover" else "K(K-1)/2 simultaneous intervals"
        out[f"rank_sets_families.{family}_{suffix}"] = figure(
            measured=f"share of data sets where the {what} by {word} of all K models held together",
            design=(designs[group_of[family]].format(groups=" or ".join(map(str, groups)))
                    + "; all tied, near ties, gaps; {runs} data sets a cell, {replicates} joint resamples or "
                      "normal draws".format(**meta)),
            cells=cells(family, column, groups),
            text=f"the {what} by {word} held together in {{range}} of simulated data sets at 95%",
            script="validation/rank_sets_families.py", output="validation/rank_sets_families.json",
            date=meta.get("date", "2026-12-05"), nominal=95.0, command=meta["command"])
    return out


# ---------------------------------------------------------------- the paired retrieval comparison

def retrieval() -> dict[str, Any]:
    lines = (HERE / "retrieval_validity.txt").read_text(encoding="utf-8").splitlines()
    runs = int(re.match(r"R = (\d+)", lines[0]).group(1))
    level = [cell(f"{r[0]}, G = {r[1]}", *_pm(r[3]), runs)
             for r in _table_rows(lines, "Table 1.") if int(r[1]) >= 30]
    cover = [cell(f"{r[0]}, G = {r[1]}", *_pm(r[2]), runs)
             for r in _table_rows(lines, "Table 2.") if int(r[1]) >= 30]
    queries = [cell(f"{r[0]}, G = {r[1]}", *_pm(r[4]), runs) for r in _table_rows(lines, "Table 1.")]
    common = dict(script="validation/retrieval_validity.py", output="validation/retrieval_validity.txt",
                  date="2026-12-01", command="python validation/retrieval_validity.py",
                  design="queries in paraphrase groups of 1 + Poisson(3), graded, binary and mixed metrics, "
                         "30 and 100 groups")
    return {
        "retrieval.level": figure(measured="rejection rate at 5% of compare_retrieval's group sign-flip test under H0",
                                  nominal=5.0, cells=level, text="under H0 the test rejected {range} at 5% from "
                                                                 "30 groups on", **common),
        "retrieval.level_queries": figure(
            measured="rejection rate at 5% under H0 of a sign-flip test that swaps single queries (not used)",
            nominal=5.0, cells=queries, text="swapping single queries rejected {range} at 5%",
            **{**common, "design": "queries in paraphrase groups of 1 + Poisson(3), graded, binary and mixed "
                                   "metrics, 10 to 100 groups"}),
        "retrieval.coverage": figure(measured="coverage of compare_retrieval's cluster t interval", nominal=95.0,
                                     cells=cover, text="the interval covered {range} from 30 groups on", **common),
    }


# ---------------------------------------------------------------- STS similarity

def similarity() -> dict[str, Any]:
    lines = (HERE / "similarity_validity.txt").read_text(encoding="utf-8").splitlines()
    runs = int(re.search(r"(\d+) runs per row", lines[0]).group(1))
    df = {}
    cover, level, cover10, pair_cover, pair_level = [], [], [], [], []
    for line in lines:
        head = re.match(r"# (\w+), (\d+) pairs: .* effective df (\d+)", line)
        if head:
            df[(head.group(1), head.group(2))] = int(head.group(3))
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 9 or (parts[0], parts[1]) not in df:
            continue
        name = f"{parts[0]}, {parts[1]} pairs (df {df[parts[0], parts[1]]}), {parts[2]}"
        covers = [cell(f"{name}: {label}", *_pm(text), runs)
                  for label, text in zip(("rho_S", "rho_P", "difference of rho_S", "difference of rho_P"), parts[3:7])]
        levels = [cell(f"{name}: {label}", *_pm(text), runs) for label, text in zip(("rho_S", "rho_P"), parts[7:9])]
        if parts[2] == "item" and df[parts[0], parts[1]] >= 20:
            cover += covers
            level += levels
        elif parts[2] == "item" and parts[0] == "recurring":
            cover10 += covers
        elif parts[2] == "pair" and parts[0] == "recurring":
            pair_cover += covers
            pair_level += levels
    common = dict(script="validation/similarity_validity.py", output="validation/similarity_validity.txt",
                  date="2026-12-02", command="nice -n 10 python validation/similarity_validity.py --runs 1000",
                  design="pairs over recurring (hub) and leaf items and independent pairs, 200 to 2000 pairs, "
                         "20 or more effective degrees of freedom")
    return {
        "similarity.coverage": figure(measured="coverage of the item-clustered 95% intervals of Spearman and Pearson "
                                               "and of a difference of two models", nominal=95.0, cells=cover,
                                      text="the item-clustered intervals covered {range}", **common),
        "similarity.level": figure(measured="rejection rate at 5% of the paired test of two models under H0",
                                   nominal=5.0, cells=level, text="the paired test rejected {range} at 5%", **common),
        "similarity.coverage_df10": figure(
            measured="coverage of the item-clustered 95% intervals with 10 effective degrees of freedom (calibrated "
                     "is false)", nominal=95.0, cells=cover10, text="with 10 degrees of freedom they covered {range}",
            **{**common, "design": "recurring items, 200 pairs (hubs of about 20), 10 effective degrees of freedom"}),
        "similarity.coverage_pairs": figure(
            measured="coverage of the same intervals with pairs treated as independent (not used)", nominal=95.0,
            cells=pair_cover, text="treating pairs as independent covered {range}",
            **{**common, "design": "recurring items (half of the pairs on hubs), 200 to 2000 pairs"}),
        "similarity.level_pairs": figure(
            measured="rejection rate at 5% of the paired test with pairs treated as independent (not used)",
            nominal=5.0, cells=pair_level, text="treating pairs as independent rejected {range} at 5%",
            **{**common, "design": "recurring items (half of the pairs on hubs), 200 to 2000 pairs"}),
    }


# ---------------------------------------------------------------- PERMANOVA terms after a strong factor

def _terms_cells(path: Path) -> list[tuple[str, str, float, float, int]]:
    """(cell heading, test line, rate, MC SE, data sets) of a terms_validity*.txt output."""
    out, head, runs = [], "", 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith(" ") and re.search(r"R=\d+", line):
            head = re.sub(r"\s+\[.*", "", line).strip()
            runs = int(re.search(r"R=(\d+)", line).group(1))
            continue
        m = re.match(r"\s+(.+?):\s+" + PM + "%", line)
        if m and head:
            out.append((re.sub(r"\s+", " ", head), m.group(1), float(m.group(2)), float(m.group(3)), runs))
    return out


def terms() -> dict[str, Any]:
    main = _terms_cells(HERE / "terms_validity.txt")
    extra = _terms_cells(HERE / "terms_validity_extra.txt")
    interaction = _terms_cells(HERE / "terms_validity_interaction.txt")
    spreads = "spreads 0.2/1/3"

    def pick(rows, test, where=lambda head: True):
        return [cell(head, value, se, runs) for head, line, value, se, runs in rows if line == test and where(head)]

    common = dict(nominal=5.0, date="2026-12-02", script="validation/terms_validity.py",
                  output="validation/terms_validity.txt",
                  command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity.py --workers 2")
    inter = dict(common, script="validation/terms_validity_interaction.py",
                 output="validation/terms_validity_interaction.txt",
                 command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity_interaction.py",
                 design="a 3 x b 2, unequal cells, n = 120, b null; R² of a 0.2 to 0.8, isotropic and anisotropic "
                        "noise, several draws of a's centres, d = 16 and 384")
    strong = lambda noise: lambda head: "R2(a)=0.54" in head and noise in head and "power" not in head \
        and head.startswith(("unbalanced", "balanced"))
    freedman_lane = [cell(head, value, se, runs) for head, line, value, se, runs in main
                     if line.endswith("residuals") and "power" not in head]
    paraphrase_384 = [c for c in freedman_lane if c["design"].startswith("sets of") and "d=384" in c["design"]]
    return {
        "terms.freedman_lane": figure(
            measured="rejection rate at 5% of a term after others with the reduced model's residuals permuted "
                     "(Freedman-Lane, the default), on null designs",
            design="n = 120; R² of the first factor 0 to 0.8, isotropic and anisotropic noise, balanced and "
                   "unbalanced crossed designs, blocks, three terms, interactions, d = 16 and 384; not the "
                   "paraphrase-like sets at d = 384 (terms.freedman_lane_sets_384)",
            cells=[c for c in freedman_lane if c not in paraphrase_384],
            text="Freedman-Lane rejected {range} in {count} null designs", **common),
        "terms.freedman_lane_sets_384": figure(
            measured="the same after about 30 paraphrase-like sets (of 4, of 2-6 items) at d = 384",
            design="g + lang, R² of the sets 0.54, d = 384", cells=paraphrase_384,
            text="after about 30 paraphrase-like sets at d = 384 it was conservative, {range}", **common),
        "terms.interaction_within": figure(
            measured="rejection rate at 5% of a:b with its residuals permuted within a's levels (the default)",
            cells=pick(interaction, "seq a:b residuals"), text="within a's levels {range} in {count} designs",
            **inter),
        "terms.interaction_free": figure(
            measured="rejection rate at 5% of a:b with its residuals permuted freely (permute='residuals_free')",
            cells=pick(interaction, "seq a:b residuals_free", lambda head: spreads not in head),
            text="permuting the residuals freely rejected up to {high}", **inter),
        "terms.interaction_free_spreads": figure(
            measured="the same, where a's levels differ much in spread (0.2/1/3) and size (24/36/60)",
            cells=pick(interaction, "seq a:b residuals_free", lambda head: spreads in head),
            text="permuting the residuals freely rejected {high} where a's levels differ much in spread and size",
            **inter),
        "terms.interaction_within_spreads": figure(
            measured="the default (within a's levels) where a's levels differ much in spread and size",
            cells=pick(interaction, "seq a:b residuals", lambda head: spreads in head),
            text="within a's levels {high} there", **inter),
        "terms.rows_strong_isotropic": figure(
            measured="rejection rate at 5% of b after a with rows permuted (adonis2's scheme, permute='rows')",
            design="a + b, R² of a 0.54, isotropic noise, d = 16 and 384, several draws of a's centres",
            cells=pick(main, "seq b rows", strong("isotr")),
            text="rows rejected {range} after a factor with R² 0.54 and isotropic noise", **common),
        "terms.rows_strong_anisotropic": figure(
            measured="the same with anisotropic noise",
            design="a + b, R² of a 0.54, anisotropic noise, d = 16 and 384",
            cells=pick(main, "seq b rows", strong("aniso")),
            text="rows rejected {range} after a factor with R² 0.54 and anisotropic noise", **common),
        "terms.strata_sets": figure(
            measured="rejection rate at 5% of a term after many small paraphrase-like sets, residuals permuted "
                     "within the sets (strata = the sets column)",
            design="sets of 4 and of 2-6 items, R² of the sets 0.54, d = 16 (anisotropic) and 384 (isotropic)",
            cells=pick(extra, "seq lang residuals | strata g"), text="strata set to the sets column held the level "
                                                                      "({range})",
            **dict(common, output="validation/terms_validity_extra.txt",
                   command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity.py --extra --only "
                           "'within sets' --reps 200 --reps-384 200")),
    }


# ---------------------------------------------------------------- PERMANOVA under unequal shapes (welch)

def welch() -> dict[str, Any]:
    lines = (HERE / "validity_tests_permanova.txt").read_text(encoding="utf-8").splitlines()
    rows = [r for r in _table_rows(lines, "#") if "anisotropic" in r[0]]
    common = dict(nominal=5.0, script="validation/validity_tests.py", output="validation/validity_tests_permanova.txt",
                  date="2026-12-01", command="python validation/validity_tests.py --only permanova --runs 300",
                  design="unit vectors, one small group anisotropic (rank 2 or 8) beside larger ones (sizes 4 to 40), "
                         "equal centres and spread; 199 resamples")
    return {
        "welch.level_shapes": figure(
            measured="rejection rate at 5% of permanova_welch (W*_d, the wild bootstrap on groups of 6 or more) "
                     "under unequal shapes", cells=[cell(r[0], *_pm(r[4]), 300) for r in rows if "±" in r[4]],
            text="W*_d rejected {range} at 5% under unequal shapes", **common),
        "welch.level_shapes_pseudo_f": figure(
            measured="rejection rate at 5% of the pseudo-F permutation test on the same designs",
            cells=[cell(r[0], *_pm(r[1]), 300) for r in rows],
            text="the pseudo-F permutation test rejected {range} at 5% under unequal shapes", **common),
    }


# ---------------------------------------------------------------- McNemar's mid-p test

def mcnemar() -> dict[str, Any]:
    lines = (HERE / "classification_validity_mcnemar.txt").read_text(encoding="utf-8").splitlines()
    runs = int(re.search(r"(\d+) runs per cell", lines[0]).group(1))
    mid, exact = [], []
    for line in lines:
        m = re.match(r"\s+(\d+)\s+(\d\.\d+)\s+(\d+\.\d)\s+\|\s+" + PM + r"\s+[\d.]+\s+" + PM, line)
        if m and float(m.group(3)) >= 10:
            name = f"n = {m.group(1)}, discordance {m.group(2)} ({m.group(3)} expected)"
            mid.append(cell(name, float(m.group(4)), float(m.group(5)), runs))
            exact.append(cell(name, float(m.group(6)), float(m.group(7)), runs))
    accuracy = []
    text = (HERE / "classification_validity.txt").read_text(encoding="utf-8")
    accuracy_runs = int(re.search(r"(\d+) runs per cell", text).group(1))
    for line in text.split("## 2.")[1].split("## 3.")[0].splitlines():
        m = re.match(r"(independent, n = \d+|\d+ clusters of \d+)\s+(.+?)\s+" + PM, line)
        if m and (m.group(1).startswith("independent") or "embsql" in m.group(2)):
            accuracy.append(cell(f"{m.group(1)}: {m.group(2)}", float(m.group(3)), float(m.group(4)), accuracy_runs))
    common = dict(design="n = 50 to 400 independent items, 10 or more expected discordant items", nominal=5.0,
                  decimals=2, script="validation/classification_validity_mcnemar.py",
                  output="validation/classification_validity_mcnemar.txt", date="2026-12-02",
                  command="nice -n 10 python validation/classification_validity_mcnemar.py --runs 10000")
    return {"classification.mcnemar_level": figure(
        measured="rejection rate at 5% of compare_classification's mid-p McNemar test (p_value)", cells=mid,
        text="from 10 expected discordant items on, the mid-p test rejected {range} at 5%", **common),
        "classification.accuracy_coverage": figure(
        measured="coverage of the expected accuracy by the accuracy interval (Wilson's, on the effective sample size "
                 "with clusters)", cells=accuracy, text="the accuracy interval covered {range} in simulation",
        **{**common, "nominal": 95.0, "decimals": 1, "script": "validation/classification_validity.py",
           "output": "validation/classification_validity.txt",
           "command": "nice -n 10 python validation/classification_validity.py --runs 2000 --knn-runs 200",
           "design": "30 to 500 independent items, 30 to 120 clusters of 8"}),
        "classification.mcnemar_level_exact": figure(
        measured="rejection rate at 5% of the exact McNemar test (p_exact)", cells=exact,
        text="from 10 expected discordant items on, the exact test rejected {range} at 5%", **common)}


# ---------------------------------------------------------------- linear CKA

def cka() -> dict[str, Any]:
    text = (HERE / "cka_validity.txt").read_text(encoding="utf-8")
    runs = int(re.search(r"--reps (\d+)", text).group(1))
    cells, naive = [], []
    for line in text.split("## Paired comparison")[0].splitlines():
        m = re.match(r"\s*(\d+/\d+)\s+(.+?)\s+(\d+)\s+(\d\.\d+)\s+\d\.\d+\s+\d\.\d+\s+" + PM + r"\s+" + PM, line)
        if m:
            design = f"d {m.group(1)}, {m.group(2)}, {m.group(3)} units, CKA {m.group(4)}"
            cells.append(cell(design, float(m.group(5)), float(m.group(6)), runs))
            naive.append(cell(design, float(m.group(7)), float(m.group(8)), runs))
    procrustes = []
    for line in text.split("## Procrustes r")[1].split("#")[0].splitlines():
        m = re.match(r"\s*(\d+/\d+)\s+(.+?)\s+(\d+)\s+(\d\.\d+)\s+\d\.\d+\s+" + PM, line)
        if m:
            # 100 samples a design (the section's Monte Carlo SEs: 10.0 +- 3.0 and 86.0 +- 3.5)
            procrustes.append(cell(f"d {m.group(1)}, {m.group(2)}, {m.group(3)} units, r {m.group(4)}",
                                   float(m.group(5)), float(m.group(6)), 100))
    centre_text = (HERE / "cka_interval_centre.txt").read_text(encoding="utf-8")
    centre, centre_groups = [], []
    for line in centre_text.splitlines():
        m = re.match(r"\s*(\d+/\d+)\s+(.+?)\s+(\d+)\s+(\d\.\d+)\s+" + PM + r"\s+" + PM, line)
        if m:
            c = cell(f"d {m.group(1)}, {m.group(2)}, {m.group(3)} units, CKA {m.group(4)}", float(m.group(7)),
                     float(m.group(8)), 400)
            centre.append(c)
            if "groups" in m.group(2):
                centre_groups.append(c)
    paired = []
    for line in text.split("## Paired comparison")[1].split("##")[0].splitlines():
        m = re.match(r"\s*H0, (.+?)\s+(\d+)\s+0\.0000\s+" + PM, line)
        if m:
            paired.append(cell(f"H0, {m.group(1)}, {m.group(2)} units", float(m.group(3)), float(m.group(4)), runs))
    centre_common = dict(
        nominal=95.0, script="validation/cka_interval_centre.py", output="validation/cka_interval_centre.txt",
        date="2026-12-02", command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_interval_centre.py 16 400 "
                                   "(and 384 400)",
        design="the designs of cka.coverage: d = 16 against 384 and 384 against 768, 30 or 40 units, CKA 0.12 to "
               "0.86; 400 samples each")
    return {"cka.centre": figure(
        measured="coverage of the population CKA by the interval centred on the debiased CKA without a second bias "
                 "correction (embsql's)", cells=centre, text="the interval covered {range}", **centre_common),
        "cka.centre_groups": figure(
        measured="the same, in the grouped designs", cells=centre_groups, text="with groups it covered {range}",
        **centre_common),
        "cka.compare_level": figure(
        measured="rejection rate at 5% of compare_cka's paired test of no difference under H0",
        design="two d = 384 models against a d = 768 reference; 30 groups of 1-15 items, 40 groups of 5, 40 items",
        nominal=5.0, cells=paired, script="validation/cka_validity.py", output="validation/cka_validity.txt",
        date="2026-12-02", command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_validity.py --reps 400",
        text="it rejected a true no difference at {range} at nominal 5%"),
        "cka.naive_coverage": figure(
        measured="coverage of the population CKA by the naive interval: the biased CKA -/+ 1.96 jackknife SE",
        design="the designs of cka.coverage", nominal=95.0, cells=naive, script="validation/cka_validity.py",
        output="validation/cka_validity.txt", date="2026-12-02",
        command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_validity.py --reps 400",
        text="the naive interval covered {range}"),
        "procrustes.coverage": figure(
        measured="coverage of the population Procrustes r by the bias-corrected jackknife t interval (atanh)",
        design="d = 16 against 384, 40 equal groups of 5, population r 0.30 and 0.80; 100 samples each", nominal=95.0,
        cells=procrustes, script="validation/cka_validity.py", output="validation/cka_validity.txt",
        date="2026-12-02", command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_validity.py --reps 400",
        text="the interval covered {range}"),
        "cka.coverage": figure(
        measured="coverage of emb_cka's 95% interval of the population linear CKA",
        design="d = 16 against 384 and 384 against 768, 30 or 40 units (items or groups), CKA 0.12 to 0.86",
        nominal=95.0, cells=cells, script="validation/cka_validity.py", output="validation/cka_validity.txt",
        date="2026-12-02", command="OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/cka_validity.py --reps 400",
        text="the interval covered {range} of the population CKA in {count} designs")}


def collect() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for part in (dispersion, sequential, intervals, rank_sets, rank_sets_families, retrieval, similarity, mcnemar, cka,
                 terms, welch):
        figures.update(part())
    return {"about": "The measured figures embsql quotes, one entry per key; rates in percent, mc_se the largest "
                     "Monte Carlo standard error of the cells. GENERATED by validation/collect.py from the stored "
                     "outputs beside it: do not edit, rerun a simulation and collect.py.",
            "figures": dict(sorted(figures.items()))}


def render_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if calibration.json is not current")
    args = parser.parse_args()
    text = render_json(collect())
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is not current: run python validation/collect.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}: {len(json.loads(text)['figures'])} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
