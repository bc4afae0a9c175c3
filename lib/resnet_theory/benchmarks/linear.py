"""Benchmark: the Hardt & Ma Theorem 2.1 construction at scale (default d = 256, depth 1000).

Run with ``python -m resnet_theory.benchmarks.linear [--d 256] [--depth 1000] [--gamma 1.0] [--seed 0]
[--method polar|svd]``. Prints the time to factorise, the time to multiply the factors back, the relative
error of the product, the largest layer norm and both published bounds. Not a timed test: it measures and
prints.
"""

from __future__ import annotations

import platform
import time

import numpy as np

from resnet_theory import validate
from resnet_theory.linear import (
    FACTORIZATION_METHODS,
    compose,
    factorization_plan,
    factorize_near_identity,
    gamma,
    layer_norms,
    random_matrix_with_gamma,
    theorem_2_1_bound,
    theorem_2_1_bound_early,
)


def run(d: int = 256, depth: int = 1000, target_gamma: float = 1.0, seed: int = 0, method: str = "polar") -> dict:
    """Factorise one random R with ``method`` and return the measured figures."""
    R = random_matrix_with_gamma(d, target_gamma, seed=seed)
    start = time.perf_counter()
    A = factorize_near_identity(R, depth, method)
    t_factor = time.perf_counter() - start
    start = time.perf_counter()
    P = compose(A)
    t_compose = time.perf_counter() - start
    plan = factorization_plan(R, depth, method)
    return {
        "d": d,
        "depth": depth,
        "gamma": gamma(R),
        "q": plan.q,
        "p": plan.p,
        "kind": plan.kind,
        "seconds_factorize": t_factor,
        "seconds_compose": t_compose,
        "relative_error": float(np.linalg.norm(P - R) / np.linalg.norm(R)),
        "max_layer_norm": float(np.max(layer_norms(A))),
        "bound_camera_ready": theorem_2_1_bound(R, depth),
        "bound_early": theorem_2_1_bound_early(R, depth),
        "memory_MB": A.nbytes / 2**20,
    }


def main(argv=None) -> int:
    parser = validate.OneLineParser(
        prog="python -m resnet_theory.benchmarks.linear", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--d", type=validate.int_option(1), default=256, help="matrix dimension")
    parser.add_argument("--depth", type=validate.int_option(1), default=1000, help="number of layers")
    parser.add_argument("--gamma", type=validate.float_option, default=1.0, help="gamma(R) of the random target")
    parser.add_argument("--seed", type=validate.int_option(0), default=0)
    parser.add_argument(
        "--method",
        choices=FACTORIZATION_METHODS,
        default="polar",
        help="polar split (default) or the SVD scheme of the paper's proof",
    )
    args = parser.parse_args(argv)
    try:  # sizes beyond the machine are refused at once by the library's budget checks, naming d or depth
        r = run(args.d, args.depth, args.gamma, args.seed, args.method)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    print(f"machine: {platform.processor() or platform.machine()}, numpy {np.__version__}")
    print(
        f"R: d = {r['d']}, gamma = {r['gamma']:.4g}; depth {r['depth']}: q = {r['q']} rotation and "
        f"p = {r['p']} scaling layers ({r['kind']}); layers use {r['memory_MB']:.1f} MB"
    )
    print(f"factorise: {r['seconds_factorize']:.3f} s; multiply back: {r['seconds_compose']:.3f} s")
    print(f"relative error ||prod - R||_F / ||R||_F = {r['relative_error']:.3e}")
    print(
        f"max_i ||A_i|| = {r['max_layer_norm']:.5g}; camera-ready bound {r['bound_camera_ready']:.5g}; "
        f"early bound {r['bound_early']:.5g}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
