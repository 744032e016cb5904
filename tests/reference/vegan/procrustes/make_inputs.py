"""Write the input tables for protest.R (run once; the CSVs are kept beside the stored numbers).
Rows are unit vectors of two 'models' on the same items: a noisy, rotated copy of X in Y."""
import numpy as np

rng = np.random.default_rng(2026)
cases = {"small": (20, 3, 5, 1.2), "wide": (8, 20, 12, 0.8), "weak": (30, 4, 6, 3.0)}
for name, (n, p, q, noise) in cases.items():
    x = rng.normal(size=(n, p)) + 0.5
    rot = np.linalg.qr(rng.normal(size=(q, q)))[0]
    y = np.c_[x, np.zeros((n, max(q - p, 0)))][:, :q] @ rot + noise * rng.normal(size=(n, q))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    np.savetxt(f"{name}_x.csv", x, delimiter=",", fmt="%.17g")
    np.savetxt(f"{name}_y.csv", y, delimiter=",", fmt="%.17g")
