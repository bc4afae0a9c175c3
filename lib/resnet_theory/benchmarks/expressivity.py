"""Build time of Hardt & Ma's interpolating residual network (Theorem 3.2) and its scaling in n.

``python -m resnet_theory.benchmarks.expressivity [--sizes 1000 2000 5000 10000 20000] [--dim 64]``
builds :func:`resnet_theory.expressivity.build_interpolating_resnet` on random unit vectors in ``R^dim``
with 10 random classes, once per size, and prints for each ``n`` the build time (which includes the
verification forward pass over every input), the network's width, depth and parameter count, and the
largest deviation from the one-hot labels; then the fitted exponent of time against ``n``. The work is
``O(n^2 k)`` multiply-adds (each of ``n / k`` blocks checks its ``k`` points against all ``n``), so the
exponent should come out near 2. These are printed figures, not a timed test.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from ..expressivity import build_interpolating_resnet
from ..plotting import fit_power_law


def time_builds(sizes, dim: int = 64, classes: int = 10, seed: int = 0) -> list[dict]:
    """One build per size on random unit vectors; a row of measurements for each."""
    sizes = [int(n) for n in sizes]
    if not sizes or min(sizes) < 2:
        raise ValueError(f"sizes must be a non-empty list of integers >= 2, got {sizes}")
    if int(dim) < 1 or int(classes) < 1:
        raise ValueError(f"dim and classes must be positive, got dim={dim}, classes={classes}")
    rows = []
    for n in sizes:
        rng = np.random.default_rng([seed, n])
        X = rng.standard_normal((n, dim))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = rng.integers(0, classes, n)
        start = time.perf_counter()
        net = build_interpolating_resnet(X, y, num_classes=classes, seed=seed)
        seconds = time.perf_counter() - start
        rows.append({"n": n, "seconds": seconds, "k": net.k, "depth": net.depth,
                     "parameters": net.num_parameters, "max_fit_error": net.max_fit_error,
                     "fits": bool(np.all(net.predict(X) == y))})
    return rows


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, dim={args.dim}, "
          f"classes={args.classes}")
    rows = time_builds(args.sizes, args.dim, args.classes, args.seed)
    print(f"{'n':>8} {'k':>5} {'depth':>6} {'parameters':>12} {'max |f - onehot|':>17} {'fits':>5} {'seconds':>9}")
    for r in rows:
        print(f"{r['n']:>8} {r['k']:>5} {r['depth']:>6} {r['parameters']:>12,} {r['max_fit_error']:>17.2e} "
              f"{str(r['fits']):>5} {r['seconds']:>9.2f}")
    if len(rows) >= 2:
        p, _ = fit_power_law([r["n"] for r in rows], [r["seconds"] for r in rows])
        print(f"time ~ n^{p:.2f} (expected near 2 for large n: O(n^2 k) work)")
    return rows


if __name__ == "__main__":
    main()
