"""An independent reference for the decomposition: numpy long double (80-bit on x86), the textbook
formulas with no stable-sum tricks, so that it shares nothing with embsql's accumulators."""

import numpy as np


def unit(vectors) -> np.ndarray:
    """Rows scaled to unit length in long double (by the largest |coordinate| first, so that
    subnormal and huge rows keep their direction)."""
    x = np.asarray(vectors, dtype=np.longdouble)
    x = x / np.max(np.abs(x), axis=1, keepdims=True)
    return x / np.sqrt(np.einsum("ij,ij->i", x, x))[:, None]


def decomposition(labels, vectors) -> dict:
    """n, groups, ss_t, ss_w, ss_b, r2, f and the per-group w (by label) of one model."""
    z = unit(vectors)
    labels = np.asarray(labels, dtype=object)
    names = sorted(set(labels.tolist()), key=repr)
    mu = z.mean(axis=0)
    ss_t = np.sum((z - mu) ** 2)
    w, ss_w = {}, np.longdouble(0)
    for name in names:
        rows = z[labels == name]
        within = np.sum((rows - rows.mean(axis=0)) ** 2)
        w[name] = float(within / len(rows))
        ss_w += within
    n, groups = len(labels), len(names)
    ss_b = ss_t - ss_w
    return {"n": n, "groups": groups, "ss_t": float(ss_t), "ss_w": float(ss_w), "ss_b": float(ss_b),
            "r2": float(ss_b / ss_t), "f": float((ss_b / (groups - 1)) / (ss_w / (n - groups))), "w": w}
