"""Level and power of the multi-term PERMANOVA's permutation schemes: a term after a strong factor.

    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity.py --workers 2 > validation/terms_validity.txt
    OPENBLAS_NUM_THREADS=1 nice -n 10 python validation/terms_validity.py --extra --workers 2 \
        > validation/terms_validity_extra.txt

The defaults (400 data sets per cell at d = 16, 200 at d = 384: about 300 s of CPU for the 58 cells) finish
in under 15 minutes of wall time on 2 shared cores; the stored validation/terms_validity.txt is the same run with
--reps 1000 --reps-384 400 (749 s of CPU), for Monte Carlo errors of 0.7% at 5%.

Each cell draws R data sets of n = 120 unit vectors (every vector normalised, as embsql does) from one
fixed design and one fixed truth, tests the term under H0 (or, in the power table, with an effect)
by several schemes on the same data and permutations, and reports the share of p <= 0.05 with its
Monte Carlo standard error sqrt(r (1 - r) / R).  B = 199 permutations per test (p <= 0.05 is then
b <= 9 of 199, exactly 5% for an exact test).  Schemes:
  rows            permute='rows': rows permuted freely, every model refitted (vegan's adonis2)
  residuals       permute='residuals': Freedman-Lane, the reduced model's residuals permuted
  rows | strata   rows permuted within the levels of the strata column (the issue's strata='a')
  residuals | strata   Freedman-Lane within strata

Data: y = normalise(s * mu[a] + (other effects) + e), centres mu ~ N(0, I_d / d) drawn once per cell,
noise e ~ N(0, Sigma), tr Sigma = 1: isotropic (I_d / d) or anisotropic (eigenvalues proportional to
1/k in a random basis).  s is set per cell (bisection on 40 pilot draws) so that the sample R^2 of
a, SS_a / SS_T on the unit vectors, has the wanted mean; the table shows the mean over the cell's
draws.  The tested term has no effect given the others (H0), exactly: it never enters y.  Designs:
  unbalanced   a: 3 levels (p = .5, .3, .2); b: 4 levels, b = a with probability .6 (correlated
               with a), cells unequal; terms a + b, test b (sequential = margin for two terms)
  balanced     a 3 x b 4, 10 per cell (b orthogonal to a)
  interaction  a 3 x b 2, unequal cells; terms a * b, test a:b.  'b null': y depends on a only;
               'b main': a and b effects on orthogonal axes of equal norm with isotropic noise, which
               keeps E[y | a, b] additive on the sphere
  three terms  a + b + c, c a numeric covariate correlated with b and without effect: sequential b
               (after a, with c after it) and margin b (after a and c)
  three factors  a + b + f, f a 3-level factor correlated with b with an effect of its own (on other
               axes than a's, equal norms, isotropic noise: additive on the sphere); margin b
  sets of 4    g: 30 sets of 4 items (paraphrase sets), lang: 4 levels, one item of each per set
               (balanced) or sets of 2-6 with lang drawn (unbalanced); terms g + lang, test lang
  blocks       the unbalanced design in 2 blocks s; terms s + a + b, strata = s; with isotropic noise
               the blocks have an effect (on axes of their own, as in 'three factors'), with
               anisotropic noise none
Power: the unbalanced design at R^2(a) = 0.54 with an effect of b (nu[b], nu ~ N(0, I_d / d) times
t); the table shows the mean partial R^2 of b given a.

--quick: R = 60, for a smoke run; --extra: only the follow-up cells (extra_cells).  The script prints each
cell as it finishes.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from embsql.core.permanova_terms import permanova_terms, plan
from embsql.core.terms import parse_terms, variable

N = 120
B = 199
ALPHA = 0.05
PILOT = 40


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ---- designs: factor codes (fixed per cell), sorted by the strata column when there is one

def unbalanced(rng) -> dict:
    a = rng.choice(3, N, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(N) < 0.6, a, rng.integers(0, 4, N))
    return {"a": a, "b": b}


def balanced(rng) -> dict:
    a, b = np.divmod(np.arange(N) // 10, 4)
    return {"a": a, "b": b}


def crossed_2(rng) -> dict:
    a = rng.choice(3, N, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(N) < 0.7, a % 2, 1 - a % 2)
    return {"a": a, "b": b}


def three_terms(rng) -> dict:
    codes = unbalanced(rng)
    codes["c"] = codes["b"] + rng.standard_normal(N)            # a covariate correlated with b
    return codes


def sets_balanced(rng) -> dict:
    return {"g": np.repeat(np.arange(N // 4), 4), "lang": np.tile(np.arange(4), N // 4)}


def sets_unbalanced(rng) -> dict:
    sizes = []
    while sum(sizes) < N:
        sizes.append(int(rng.integers(2, 7)))
    sizes[-1] -= sum(sizes) - N
    if sizes[-1] < 2:
        last = sizes.pop()                   # (not sizes[-2] += sizes.pop(): the target is indexed before the pop)
        sizes[-1] += last
    return {"g": np.repeat(np.arange(len(sizes)), sizes), "lang": rng.integers(0, 4, N)}


def three_factors(rng) -> dict:
    codes = unbalanced(rng)
    codes["f"] = np.where(rng.random(N) < 0.6, codes["b"] % 3, rng.integers(0, 3, N))   # correlated with b
    return codes


def blocks(rng) -> dict:
    codes = unbalanced(rng)
    codes["s"] = rng.integers(0, 2, N)
    return codes


DESIGNS = {"unbalanced": unbalanced, "balanced": balanced, "interaction": crossed_2, "three terms": three_terms,
           "three factors": three_factors,
           "sets of 4": sets_balanced, "sets of 2-6": sets_unbalanced, "blocks": blocks}


@dataclass(frozen=True)
class Cell:
    design: str
    terms: tuple
    tests: tuple                      # (by_terms, term label) pairs
    nuisance: str                     # the factor whose R^2 is set
    r2: float                         # wanted mean sample R^2 of the nuisance factor
    noise: str = "isotropic"
    d: int = 16
    schemes: tuple = (("rows", None), ("residuals", None))
    effects: tuple = ()               # (factor, relative scale): other effects, scaled with s
    tested_effect: float = 0.0        # power: scale t of the tested factor's own centres
    strata: str | None = None
    centres_seed: int = 0
    exact_sphere: bool = False        # main effects on orthogonal axes of equal norm (interaction 'b main')
    label: str = ""
    reps: int = 1000
    seed: int = field(default=0)


def truth(cell: Cell, codes: dict):
    """Centres per factor (fixed for the cell) and the noise's square-root covariance."""
    rng = np.random.default_rng([7, cell.centres_seed, cell.d])
    centres = {}
    if cell.exact_sphere:                         # each factor's centres on its own axes, all of one norm
        axes = np.linalg.qr(rng.standard_normal((cell.d, cell.d)))[0].T
        used = 0
        for name in [cell.nuisance, *(f for f, _ in cell.effects)]:
            levels = int(codes[name].max()) + 1
            centres[name] = axes[used:used + levels]
            used += levels
    else:
        for name in sorted({cell.nuisance, *(f for f, _ in cell.effects), cell.tests[0][1]}):
            if name in codes and name != "c":
                centres[name] = rng.standard_normal((int(codes[name].max()) + 1, cell.d)) / np.sqrt(cell.d)
        centres["c"] = rng.standard_normal(cell.d) / np.sqrt(cell.d)
    if cell.noise == "isotropic":
        root = np.eye(cell.d) / np.sqrt(cell.d)
    else:
        spectrum = 1.0 / np.arange(1, cell.d + 1)
        basis = np.linalg.qr(rng.standard_normal((cell.d, cell.d)))[0]
        root = basis * np.sqrt(spectrum / spectrum.sum())
    return centres, root


def draw(cell: Cell, codes: dict, centres: dict, root, scale: float, rng) -> np.ndarray:
    x = scale * centres[cell.nuisance][codes[cell.nuisance]]
    for name, relative in cell.effects:
        effect = centres[name] * codes[name][:, None] if name == "c" else centres[name][codes[name]]
        x = x + scale * relative * effect
    if cell.tested_effect:
        tested = cell.tests[0][1]
        x = x + cell.tested_effect * centres[tested][codes[tested]]
    return unit(x + rng.standard_normal((N, cell.d)) @ root.T)


def r2_of(x: np.ndarray, codes: np.ndarray) -> float:
    xc = x - x.mean(axis=0)
    sums = np.zeros((int(codes.max()) + 1, x.shape[1]))
    np.add.at(sums, codes, xc)
    return float(np.einsum("gk,gk->", sums, sums / np.bincount(codes)[:, None]) / np.einsum("ik,ik->", xc, xc))


def calibrate(cell: Cell, codes: dict, centres: dict, root) -> float:
    """Scale s whose mean sample R^2 of the nuisance factor over PILOT draws is cell.r2 (bisection)."""
    if cell.r2 <= 0:
        return 0.0
    rng = np.random.default_rng(99)
    noise = [rng.standard_normal((N, cell.d)) for _ in range(PILOT)]

    def mean_r2(s):
        values = []
        for e in noise:
            x = s * centres[cell.nuisance][codes[cell.nuisance]]
            for name, relative in cell.effects:
                x = x + s * relative * (centres[name] * codes[name][:, None] if name == "c" else centres[name][codes[name]])
            values.append(r2_of(unit(x + e @ root.T), codes[cell.nuisance]))
        return float(np.mean(values))
    low, high = 0.0, 1.0
    while mean_r2(high) < cell.r2:
        high *= 2
    for _ in range(30):
        middle = (low + high) / 2
        low, high = (middle, high) if mean_r2(middle) < cell.r2 else (low, middle)
    return (low + high) / 2


def variables_of(codes: dict, order: np.ndarray) -> dict:
    return {name: variable(name, list(values[order]) if name == "c" else [f"{name}{k}" for k in values[order]])
            for name, values in codes.items()}


def run_cell(cell: Cell) -> dict:
    start = time.process_time()
    codes = DESIGNS[cell.design](np.random.default_rng([11, cell.seed]))
    order = np.argsort(codes[cell.strata], kind="stable") if cell.strata else np.arange(N)
    codes = {k: v[order] for k, v in codes.items()}
    variables = variables_of(codes, np.arange(N))
    terms = parse_terms(list(cell.terms))
    plans = {by: plan(terms, variables, by) for by in {by for by, _ in cell.tests}}
    centres, root = truth(cell, codes)
    scale = calibrate(cell, codes, centres, root)
    rng = np.random.default_rng([13, cell.seed])
    rejected = {(test, scheme): 0 for test in cell.tests for scheme in cell.schemes}
    r2, partial = [], []
    for rep in range(cell.reps):
        x = draw(cell, codes, centres, root, scale, rng)
        r2.append(r2_of(x, codes[cell.nuisance]))
        for by, plan_ in plans.items():
            for permute, strata in cell.schemes:
                # strata as zero-padded text: the kernel orders strata as text, and the rows are sorted by code
                result = permanova_terms(plan_, None if strata is None else np.char.zfill(codes[strata].astype(str), 3),
                                         unit=x,
                                         permutations=B, seed=rep, permute=permute)
                for test in cell.tests:
                    if test[0] == by:
                        row = next(t for t in result.terms if t.label == test[1])
                        rejected[(test, (permute, strata))] += row.p_value <= ALPHA
                if cell.tested_effect and by == cell.tests[0][0] and (permute, strata) == cell.schemes[0]:
                    row = next(t for t in result.terms if t.label == cell.tests[0][1])
                    partial.append(row.ss / (row.ss + result.ss_residual))
    return {"cell": cell, "rejected": rejected, "r2": float(np.mean(r2)), "scale": scale,
            "partial": float(np.mean(partial)) if partial else None, "cpu": time.process_time() - start}


def cells(reps: int, reps_384: int) -> list[Cell]:
    out = []
    two = dict(terms=("a", "b"), tests=(("sequential", "b"),), nuisance="a")
    for d in (16, 384):
        for noise in ("isotropic", "anisotropic"):
            for r2 in (0.0, 0.2, 0.54, 0.8):
                out.append(Cell("unbalanced", **two, r2=r2, noise=noise, d=d, reps=reps if d == 16 else reps_384))
    for seed in (1, 2, 3):                      # other draws of a's centres (the 0% and 9%)
        out.append(Cell("unbalanced", **two, r2=0.54, centres_seed=seed, reps=reps, label=f"centres {seed}"))
    for noise in ("isotropic", "anisotropic"):
        for r2 in (0.2, 0.54, 0.8):
            out.append(Cell("balanced", **two, r2=r2, noise=noise, reps=reps))
    out.append(Cell("balanced", **two, r2=0.54, d=384, reps=reps_384))
    strata = (("rows", None), ("residuals", None), ("rows", "a"), ("residuals", "a"))
    for noise in ("isotropic", "anisotropic"):
        for r2 in (0.54, 0.8):
            out.append(Cell("unbalanced", **two, r2=r2, noise=noise, schemes=strata, strata="a", reps=reps))
    by_blocks = (("rows", "s"), ("residuals", "s"))
    for noise, block_effect in (("isotropic", (("s", 0.5),)), ("anisotropic", ())):
        out.append(Cell("blocks", terms=("s", "a", "b"), tests=(("sequential", "b"),), nuisance="a", r2=0.54,
                        noise=noise, schemes=by_blocks, strata="s", effects=block_effect,
                        exact_sphere=bool(block_effect), reps=reps, label="block effect" if block_effect else ""))
    interaction = dict(terms=("a*b",), tests=(("sequential", "a:b"),), nuisance="a")
    for noise in ("isotropic", "anisotropic"):
        for r2 in (0.54, 0.8):
            out.append(Cell("interaction", **interaction, r2=r2, noise=noise, reps=reps, label="b null"))
    for r2 in (0.54, 0.8):
        out.append(Cell("interaction", **interaction, r2=r2, exact_sphere=True, effects=(("b", 0.5),), reps=reps,
                        label="b main"))
    out.append(Cell("interaction", **interaction, r2=0.54, d=384, reps=reps_384, label="b null"))
    three = dict(terms=("a", "b", "c"), nuisance="a", r2=0.54, reps=reps)
    for noise in ("isotropic", "anisotropic"):
        out.append(Cell("three terms", **three, tests=(("sequential", "b"), ("margin", "b")), noise=noise,
                        label="c null"))
    out.append(Cell("three factors", terms=("a", "b", "f"), tests=(("margin", "b"),), nuisance="a", r2=0.54,
                    effects=(("f", 0.7),), exact_sphere=True, reps=reps, label="f strong"))
    sets = dict(terms=("g", "lang"), tests=(("sequential", "lang"),), nuisance="g")
    for design in ("sets of 4", "sets of 2-6"):
        for r2 in (0.3, 0.54, 0.8):
            out.append(Cell(design, **sets, r2=r2, reps=reps))
        out.append(Cell(design, **sets, r2=0.54, d=384, reps=reps_384))
        out.append(Cell(design, **sets, r2=0.54, noise="anisotropic", reps=reps))
    return [Cell(**{**c.__dict__, "seed": k}) for k, c in enumerate(out)]


def power_cells(reps: int, reps_384: int) -> list[Cell]:
    out = []
    schemes = (("rows", None), ("residuals", None), ("rows", "a"))
    for d, effects in ((16, (0.1, 0.15, 0.2)), (384, (0.04, 0.06, 0.08))):
        for t in effects:
            out.append(Cell("unbalanced", terms=("a", "b"), tests=(("sequential", "b"),), nuisance="a", r2=0.54, d=d,
                            schemes=schemes, strata="a", tested_effect=t, reps=reps if d == 16 else reps_384,
                            label="power"))
    return [Cell(**{**c.__dict__, "seed": 1000 + k}) for k, c in enumerate(out)]


def extra_cells(reps: int, reps_384: int) -> list[Cell]:
    """--extra: the cells where the main run's Freedman-Lane rate was 7.0 +- 0.8% (moderate nuisance with
    anisotropic noise; the interaction after R^2 = 0.8) again with 3x the data sets and with strata,
    and with other draws of the centres: is that real?  And the paraphrase-like sets, where both
    schemes were conservative at d = 384, with permutations within the sets, and their power."""
    out = []
    strata = (("rows", None), ("residuals", None), ("rows", "a"), ("residuals", "a"))
    two = dict(terms=("a", "b"), tests=(("sequential", "b"),), nuisance="a", r2=0.2)
    for noise in ("isotropic", "anisotropic"):
        out.append(Cell("unbalanced", **two, noise=noise, schemes=strata, strata="a", reps=3 * reps, label="again"))
    for seed in (1, 2, 3):
        out.append(Cell("unbalanced", **two, noise="anisotropic", centres_seed=seed, reps=reps, label=f"centres {seed}"))
    # the interaction after a very strong factor (7.0 +- 0.8% in the main run)
    interaction = dict(terms=("a*b",), tests=(("sequential", "a:b"),), nuisance="a", r2=0.8)
    out.append(Cell("interaction", **interaction, schemes=strata, strata="a", reps=3 * reps, label="b null, again"))
    for seed in (1, 2):
        out.append(Cell("interaction", **interaction, centres_seed=seed, reps=reps, label=f"b null, centres {seed}"))
    # paraphrase-like sets (a nuisance of 29 df in n = 120): both schemes were conservative at d = 384
    # (0.5-0.8%); permuting within the sets is exact there (the tested factor varies within them)
    within_sets = (("rows", None), ("residuals", None), ("rows", "g"), ("residuals", "g"))
    sets = dict(terms=("g", "lang"), tests=(("sequential", "lang"),), nuisance="g", r2=0.54, schemes=within_sets,
                strata="g")
    for design in ("sets of 4", "sets of 2-6"):
        out.append(Cell(design, **sets, d=384, reps=reps_384, label="within sets"))
        out.append(Cell(design, **sets, noise="anisotropic", reps=reps, label="within sets"))
    for t in (0.03, 0.05):
        out.append(Cell("sets of 4", **sets, d=384, tested_effect=t, reps=reps_384, label="power"))
    # the interaction's 12.6% draw (centres 1) again, with permutations within a (run on its own: --only "with strata")
    again = Cell("interaction", **{**interaction, "r2": 0.8}, centres_seed=1, schemes=strata, strata="a", reps=500,
                 label="b null, centres 1, with strata", seed=3001)
    return [Cell(**{**c.__dict__, "seed": 2000 + k}) for k, c in enumerate(out)] + [again]


def scheme_name(scheme) -> str:
    permute, strata = scheme
    return permute + ("" if strata is None else f" | strata {strata}")


def describe(result: dict) -> str:
    cell = result["cell"]
    head = (f"{cell.design:12} {'+'.join(cell.terms):8} R2({cell.nuisance})={result['r2']:.2f} {cell.noise[:5]} "
            f"d={cell.d:<3} R={cell.reps:<4} {cell.label}")
    if result["partial"] is not None:
        head += f" partial R2(b|a)={result['partial']:.3f}"
    parts = []
    for (test, scheme), count in result["rejected"].items():
        rate = count / cell.reps
        se = np.sqrt(rate * (1 - rate) / cell.reps)
        parts.append(f"{test[0][:3]} {test[1]} {scheme_name(scheme)}: {100 * rate:5.1f} +- {100 * se:.1f}%")
    return head + f" [{result['cpu']:.0f} s CPU]\n    " + "\n    ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--reps", type=int, default=400, help="data sets per cell at d = 16")
    parser.add_argument("--reps-384", type=int, default=200, help="data sets per cell at d = 384")
    parser.add_argument("--extra", action="store_true", help="only the follow-up cells (extra_cells)")
    parser.add_argument("--only", help="only the cells whose design and label contain this text")
    args = parser.parse_args()
    reps, reps_384 = (60, 30) if args.quick else (args.reps, args.reps_384)
    todo = extra_cells(reps, reps_384) if args.extra else cells(reps, reps_384) + power_cells(reps, reps_384)
    if args.only:
        todo = [cell for cell in todo if args.only in f"{cell.design} {cell.label}"]
    print(f"{len(todo)} cells, B = {B}, n = {N}, alpha = {ALPHA}; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}; load average {os.getloadavg()[0]:.1f}", flush=True)
    started = time.time()
    results = []
    with ProcessPoolExecutor(args.workers) as pool:
        for result in pool.map(run_cell, todo):
            results.append(result)
            print(describe(result), flush=True)
    cpu = sum(r["cpu"] for r in results)
    print(f"\n{len(results)} cells in {time.time() - started:.0f} s wall, {cpu:.0f} s CPU (workers: {args.workers})")


if __name__ == "__main__":
    main()
