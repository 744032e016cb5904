"""Independent reference for the acceptance tests: SS_T, SS_W, R², F and W_g of the unit vectors of
raw float64 rows, in 60-digit mpmath arithmetic (each row read exactly, normalised and summed in high
precision). It owes nothing to embsql's algorithms. mpmath version: see mpmath.__version__ (1.3.0 here)."""

import mpmath
import numpy as np

mpmath.mp.dps = 60


def reference(x, labels) -> dict:
    unit = []
    for row in np.asarray(x, dtype=np.float64):
        v = [mpmath.mpf(float(c)) for c in row]
        norm = mpmath.sqrt(mpmath.fsum(c * c for c in v))
        unit.append([c / norm for c in v])
    labels = list(labels)
    n, d, names = len(unit), len(unit[0]), sorted(set(labels))
    mean = [mpmath.fsum(r[j] for r in unit) / n for j in range(d)]
    ss_t = mpmath.fsum(mpmath.fsum((r[j] - mean[j]) ** 2 for j in range(d)) for r in unit)
    ss_w, w = mpmath.mpf(0), {}
    for g in names:
        rows = [unit[i] for i in range(n) if labels[i] == g]
        m = [mpmath.fsum(r[j] for r in rows) / len(rows) for j in range(d)]
        s = mpmath.fsum(mpmath.fsum((r[j] - m[j]) ** 2 for j in range(d)) for r in rows)
        ss_w += s
        w[g] = float(s / len(rows))
    G = len(names)
    return {"ss_t": float(ss_t), "ss_w": float(ss_w), "r2": float(1 - ss_w / ss_t),
            "f": float(((ss_t - ss_w) / (G - 1)) / (ss_w / (n - G))), "w": w}


def near_duplicates(spread: float, n: int, d: int, G: int, seed: int = 1):
    """n rows in G equal groups: one base point, group offsets and item noise of size ``spread``."""
    rng = np.random.default_rng(seed)
    gid = np.repeat(np.arange(G), n // G)
    x = rng.normal(size=d) + rng.normal(size=(G, d))[gid] * spread + rng.normal(size=(n, d)) * spread * 3
    return x, [f"g{g}" for g in gid]
