"""Build and verification time of Hardt & Ma's interpolating residual network (Theorem 3.2) against n.

``python -m resnet_theory.benchmarks.expressivity [--sizes 1000 2000 5000 10000 20000] [--dim 256]
[--backend numpy|torch] [--device cuda]`` draws random unit vectors in ``R^dim`` with 10 random classes,
computes their separation ``rho`` (in tiles), and builds the network at the paper's width
``k = ceil(10 log n / rho^2)`` (far below ``dim`` here), which includes verifying every input. For each
``n`` it prints the time of the separation and of the build, the peak memory the Python allocator saw
(NumPy arrays included; torch tensors on a GPU are not), the width, depth and parameter count, the
largest deviation from the one-hot labels, the draws of ``A_0`` used, the CPU seconds of the process
and the 1-minute load average when the row was done (the machine may be shared: with a load above the
core count the wall-clock times include waiting, the CPU seconds much less so); then the fitted exponent
of each time in ``n``. The work is
about ``n^2 k`` multiply-adds for the build and as much for the verification (each block checks its
``k`` units against all ``n`` current points), ``n^2 dim / 2`` for the separation, and memory is linear
in ``n``. These are printed figures, not a timed test.
"""

from __future__ import annotations

import os
import platform
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from .. import validate
from ..expressivity import construct_interpolating_resnet, paper_k, separation
from ..fits import fit_power_law


def check_sizes(sizes, dim: int, backend: str, name: str = "sizes") -> None:
    """Refuse (:class:`resnet_theory.validate.BudgetError`, naming ``name``) a size whose data and build
    arrays exceed the memory, or whose work (on the CPU) exceeds the budget, before any size runs."""
    for n in sizes:
        validate.check_budget(name, 4 * 8.0 * n * dim, validate.memory_limit_bytes(), value=n)
        if backend == "numpy":
            validate.check_budget(
                name, 3.0 * n * n * dim, validate.OPS_LIMIT, what="work", unit="operations (n^2 dim)", value=n
            )


@contextmanager
def traced_peak() -> Iterator[dict]:
    """The peak bytes the Python allocator saw in the block (NumPy arrays included), as ``["bytes"]`` of the dict
    it yields once the block ends. Tracing is stopped again however the block ends (a refused size raises), and
    left on for a caller that traced before: left on, it made every later line of the process slower (measured:
    a pure-Python loop 20 to 60 times, one call of the Shamir chapter's lambdified Hessian 0.005 s to 192 s)."""
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    found: dict = {}
    try:
        yield found
    finally:
        found["bytes"] = max(tracemalloc.get_traced_memory()[1] - before, 0)
        if not was_tracing:
            tracemalloc.stop()


def time_builds(
    sizes, dim: int = 256, classes: int = 10, seed: int = 0, backend: str = "numpy", device=None, report=None
) -> list[dict]:
    """One separation and one build per size on random unit vectors; a row of measurements for each
    (passed to ``report`` as soon as it is measured, when given)."""
    sizes = [int(n) for n in sizes]
    if not sizes or min(sizes) < 2:
        raise ValueError(f"sizes must be a non-empty list of integers >= 2, got {sizes}")
    if int(dim) < 1 or int(classes) < 1:
        raise ValueError(f"dim and classes must be positive, got dim={dim}, classes={classes}")
    check_sizes(sizes, int(dim), backend)
    rows = []
    for n in sizes:
        rng = np.random.default_rng([seed, n])
        X = rng.standard_normal((n, dim))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        y = rng.integers(0, classes, n)
        with traced_peak() as peak:
            cpu = time.process_time()
            start = time.perf_counter()
            rho = separation(X, backend=backend, device=device)
            t_rho = time.perf_counter() - start
            k = paper_k(n, rho)
            start = time.perf_counter()
            net = construct_interpolating_resnet(
                X, y, k=k, num_classes=classes, seed=seed, projection="gaussian", backend=backend, device=device
            )
            t_build = time.perf_counter() - start
            cpu = time.process_time() - cpu
        rows.append(
            {
                "n": n,
                "rho": rho,
                "k": net.k,
                "depth": net.depth,
                "parameters": net.num_parameters,
                "max_fit_error": net.max_fit_error,
                "attempts": net.attempts,
                "separation_seconds": t_rho,
                "build_seconds": t_build,
                "seconds": t_rho + t_build,
                "cpu_seconds": cpu,
                "peak_mib": peak["bytes"] / 2**20,
                "load": os.getloadavg()[0],
            }
        )
        if report is not None:
            report(rows[-1])
    return rows


def main(argv=None) -> list[dict]:
    parser = validate.OneLineParser(
        prog="python -m resnet_theory.benchmarks.expressivity", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sizes", type=validate.int_option(2), nargs="+", default=[1000, 2000, 5000, 10000, 20000])
    parser.add_argument("--dim", type=validate.int_option(1), default=256)
    parser.add_argument("--classes", type=validate.int_option(1), default=10)
    parser.add_argument("--seed", type=validate.int_option(0), default=0)
    parser.add_argument("--backend", choices=["numpy", "torch"], default="numpy")
    parser.add_argument("--device", default=None, help="torch device, e.g. cuda (torch backend only)")
    args = parser.parse_args(argv)
    try:  # refused before anything runs or prints
        check_sizes(args.sizes, args.dim, args.backend, name="--sizes")
        if args.device is not None and args.backend != "torch":
            raise ValueError("--device goes with --backend torch (the numpy backend runs on the CPU)")
        if args.device is not None:
            validate.torch_device("--device", args.device)
    except ValueError as exc:
        parser.error(str(exc))
    print(
        f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, numpy {np.__version__}, "
        f"backend={args.backend}{'' if args.device is None else ' on ' + args.device}, dim={args.dim}, "
        f"classes={args.classes}"
    )
    print(
        f"{'n':>8} {'rho':>6} {'k':>4} {'depth':>6} {'parameters':>12} {'max |f-1hot|':>12} "
        f"{'draws':>5} {'rho s':>8} {'build s':>8} {'total s':>8} {'cpu s':>8} {'peak MiB':>9} {'load':>5}",
        flush=True,
    )

    def report(r):
        print(
            f"{r['n']:>8} {r['rho']:>6.3f} {r['k']:>4} {r['depth']:>6} {r['parameters']:>12,} "
            f"{r['max_fit_error']:>12.1e} {r['attempts']:>5} {r['separation_seconds']:>8.2f} "
            f"{r['build_seconds']:>8.2f} {r['seconds']:>8.2f} {r['cpu_seconds']:>8.2f} {r['peak_mib']:>9.1f} "
            f"{r['load']:>5.2f}",
            flush=True,
        )

    try:
        rows = time_builds(args.sizes, args.dim, args.classes, args.seed, args.backend, args.device, report)
    except (ValueError, TypeError) as exc:  # a size the construction refuses (too many weights for --classes)
        parser.error(str(exc))
    if len(rows) >= 2:
        ns = [r["n"] for r in rows]
        for key, name in (
            ("build_seconds", "build + verify"),
            ("separation_seconds", "separation"),
            ("seconds", "total"),
            ("cpu_seconds", "total CPU"),
            ("peak_mib", "peak memory"),
        ):
            p, _ = fit_power_law(ns, [max(r[key], 1e-9) for r in rows])
            print(f"{name} ~ n^{p:.2f}")
        print("(expected for large n: time near n^2 (n^2 k work, k ~ log n), memory near n^1)")
    return rows


if __name__ == "__main__":
    main()
