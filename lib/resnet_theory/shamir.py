"""Shamir (2018), "Are ResNets provably better than linear predictors?" (NeurIPS; arXiv 1804.06739).

The paper's own text was not available to the book: the statements implemented and tested here follow
the seminar review of the paper (``seeds/003``) and are checked numerically, not trusted.

Contents, in the order of the chapter ``book/linear_predictors.md``:

- The residual predictor ``x -> w^T (x + V f_theta(x))`` (Section 2 of the paper as the review gives it):
  :func:`residual_predictions`, :func:`residual_objective`, :func:`linear_objective`,
  :func:`best_linear_predictor`, :func:`objective_derivatives` (gradient and Hessian in ``(w, V)``),
  :func:`random_theorem_instance`.
- Example 1 (why the bounds must depend on the norms): :func:`example_1_symbolic`, :func:`example_1_saddle`,
  :func:`example_1_objective` (torch, for autograd and finite differences), :func:`example_1_instance` (the
  example as an instance of the general code), :func:`example_1_theorem_2` (Theorem 2 at its saddle).
- Theorems 1 and 2: :func:`theorem_1_sides`, :func:`theorem_2_sides`, :func:`survey_theorems`,
  :func:`theorem_1_rhs_along`, :func:`theorem_1_adversarial`.
- Corollary 1 and Theorem 3: :func:`minimize_residual_objective`, :func:`verify_local_minimum`,
  :func:`corollary_1_survey`; Theorem 3 without its polynomial: :func:`approximate_stationary_points`
  (eps-SOPSPs on a search path).
- The negative controls: the same network without the skip, ``x -> w^T V f_theta(x)`` (``skip=False`` in
  :func:`objective_derivatives`, :func:`theorem_1_sides`, :func:`theorem_2_sides`,
  :func:`minimize_residual_objective`, :func:`verify_local_minimum`, :func:`corollary_1_survey`).
- The landscapes of the review's figure, with a penalty or in a ball: :func:`landscape_value`,
  :func:`find_local_minima` (multi-start, every candidate verified; saddles are rejected),
  :func:`critical_points` (every critical point found by root finding on the gradient, with its
  classification) and :func:`landscape_sweep`.
- Theorem 4 (a skip connection to the output): :class:`OutputSkipNet` ``x -> w^T x + v^T f_theta(x)``,
  :class:`ResidualNet` (the original architecture, for contrast), :class:`LogisticLinearSource` (a data
  distribution whose best predictor is linear), :func:`projected_sgd`, :func:`theorem_4_bound` and
  :func:`theorem_4_rates` (the rate in T over many runs at once).

Norms: ``||V||`` is the spectral norm (the smaller of the usual matrix norms, so the inequalities tested
with it are the stronger ones); vectors use the Euclidean norm.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy as sp
import torch
from scipy import optimize

from . import validate
from .fits import fit_power_law

LOSSES = ("squared", "logistic")
#: Instance seeds of the surveys are ``SEED_STRIDE * seed + i``: different chapter seeds share no instance.
SEED_STRIDE = 100_000
#: The random instances of Theorems 1 and 2 and Corollary 1 (:func:`random_theorem_instance`): the sample size,
#: the input and feature dimensions, and the width and depth of the random ReLU network ``f_theta``.
INSTANCE = {"n": 30, "d": 3, "k": 3, "width": 8, "depth": 3}
#: The fraction of labels flipped in a logistic instance, and the powers of ten between which the scales of
#: ``w`` and ``V`` are drawn (log-uniformly).
LABEL_FLIP = 0.2
SCALE_POWERS = (-2.0, 1.0)
#: :func:`verify_local_minimum`: its relative tolerance (gradient, curvature and escape alike), and the ray
#: ``c -> F(c w, V)`` it walks, ``c`` from the first to the second factor in ``ESCAPE_POINTS`` geometric steps.
VERIFY_RTOL = 1e-8
ESCAPE_FACTORS = (1.5, 2.0**16)
ESCAPE_POINTS = 24
#: Theorem 4's setting (:func:`theorem_4_rates`): inputs uniform in the unit ball of ``R^d``, ``f_theta`` a ReLU
#: network ``R^d -> R^k`` of that width and depth ending in tanh, the ball ``M_1`` of ``radius``, the norm of
#: ``u*``, and the fresh inputs per step that estimate the iterate's excess risk.
THEOREM_4 = {"d": 5, "k": 4, "width": 16, "depth": 3, "radius": 2.0, "u_norm": 1.5, "n_fresh": 64}


# --- input validation -----------------------------------------------------------------------------------
def _seed(seed) -> int:
    return validate.non_negative_int("seed", seed)


def _check_loss(loss: str) -> str:
    return validate.choice("loss", loss, LOSSES)


def _skip(skip) -> bool:
    if not isinstance(skip, bool):
        raise TypeError(f"skip must be True (the residual network) or False (no skip connection), got {skip!r}")
    return skip


def _tensor(x, name: str, ndim: int) -> torch.Tensor:
    return torch.as_tensor(validate.finite_array(name, x, ndim=ndim, allow_empty=True))


# --- Section 2, the setting: the residual predictor, its objective, and the best linear predictor -------
def _features(f_theta, X: torch.Tensor) -> torch.Tensor:
    """``f_theta(X)`` as a float64 (n, k) tensor, with theta fixed (no gradient through it)."""
    if not callable(f_theta):
        raise TypeError(f"f_theta must be callable (a torch module or function), got {type(f_theta).__name__}")
    dtype = X.dtype
    if isinstance(f_theta, torch.nn.Module):
        params = list(f_theta.parameters())
        if params:
            dtype = params[0].dtype
    with torch.no_grad():
        Z = f_theta(X.to(dtype))
    if not isinstance(Z, torch.Tensor):
        raise TypeError("f_theta must return a torch tensor")
    Z = Z.detach().to(torch.float64)
    if Z.ndim != 2 or Z.shape[0] != X.shape[0]:
        raise ValueError(f"f_theta(X) must have shape (n, k) with n = {X.shape[0]}, got {tuple(Z.shape)}")
    if not torch.isfinite(Z).all():
        raise ValueError("f_theta(X) contains NaN or infinite entries")
    return Z


def _data(X, y, loss):
    loss = _check_loss(loss)
    X = _tensor(X, "X", 2)
    y = _tensor(y, "y", 1)
    if X.shape[0] == 0:
        raise ValueError("the sample must not be empty")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if loss == "logistic" and not torch.all((y == 1) | (y == -1)):
        raise ValueError("the logistic loss needs labels y in {-1, +1}")
    return X, y, loss


def _wV(w, V, d: int, k: int):
    w = _tensor(w, "w", 1)
    V = _tensor(V, "V", 2)
    if w.shape[0] != d:
        raise ValueError(f"w must have {d} entries (the input dimension), got {w.shape[0]}")
    if V.shape != (d, k):
        raise ValueError(f"V must have shape ({d}, {k}) (input dimension, width of f_theta), got {tuple(V.shape)}")
    return w, V


def loss_values(p: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """``l(p; y)``: squared ``(p - y)^2 / 2`` or logistic ``log(1 + exp(-y p))``, elementwise."""
    _check_loss(loss)
    if not isinstance(p, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError("p and y must be torch tensors")
    if p.shape != y.shape:
        raise ValueError(f"p and y must have the same shape, got {tuple(p.shape)} and {tuple(y.shape)}")
    if loss == "squared":
        return 0.5 * (p - y) ** 2
    return torch.nn.functional.softplus(-y * p)


def residual_predictions(X, w, V, f_theta) -> torch.Tensor:
    """The residual predictor ``x -> w^T (x + V f_theta(x))`` on the rows of ``X`` (float64)."""
    X = _tensor(X, "X", 2)
    Z = _features(f_theta, X)
    w, V = _wV(w, V, X.shape[1], Z.shape[1])
    return (X + Z @ V.T) @ w


def residual_objective(X, y, w, V, f_theta, loss: str = "squared") -> float:
    """``F(w, V, theta)``: the mean loss of the residual predictor on the sample ``(X, y)``."""
    X, y, loss = _data(X, y, loss)
    return float(loss_values(residual_predictions(X, w, V, f_theta), y, loss).mean())


def linear_objective(X, y, w, loss: str = "squared") -> float:
    """``F_lin(w) = F(w, 0, theta)``: the mean loss of the linear predictor ``x -> w^T x``."""
    X, y, loss = _data(X, y, loss)
    w = _tensor(w, "w", 1)
    if w.shape[0] != X.shape[1]:
        raise ValueError(f"w must have {X.shape[1]} entries, got {w.shape[0]}")
    return float(loss_values(X @ w, y, loss).mean())


def best_linear_predictor(X, y, loss: str = "squared", radius=None) -> dict:
    """``argmin F_lin`` on the sample (over the ball ``|w| <= radius`` when given): dict ``w``, ``value``.

    Squared loss without a radius: least squares. Otherwise a Newton-type method (SLSQP on the ball);
    raises ValueError when the unconstrained logistic problem has no minimiser (separable data).
    """
    X, y, loss = _data(X, y, loss)
    if radius is not None:
        radius = validate.positive_float("radius", radius)
    Xn, yn = X.numpy(), y.numpy()
    n, d = Xn.shape
    if loss == "squared" and radius is None:
        w = np.linalg.lstsq(Xn, yn, rcond=None)[0]
        return {"w": w, "value": linear_objective(X, y, w, loss)}

    def value(w):
        p = Xn @ w
        return float(np.mean(0.5 * (p - yn) ** 2 if loss == "squared" else np.logaddexp(0, -yn * p)))

    def grad(w):
        p = Xn @ w
        dl = (p - yn) if loss == "squared" else -yn / (1 + np.exp(yn * p))
        return Xn.T @ dl / n

    def hess(w):
        p = Xn @ w
        d2 = np.ones(n) if loss == "squared" else 0.25 / np.cosh(yn * p / 2) ** 2
        return (Xn.T * d2) @ Xn / n

    if radius is None:
        if loss == "logistic" and _has_recession_direction(Xn, yn):
            raise ValueError(
                "the logistic F_lin has no minimiser on this sample (a direction separates the data): give a radius"
            )
        # damped Newton on a convex objective (scipy's trust-exact can stop early once rounding dominates)
        w = np.zeros(d)
        for _ in range(200):
            g = grad(w)
            step = np.linalg.lstsq(hess(w), g, rcond=None)[0]
            f0, t = value(w), 1.0
            while value(w - t * step) > f0 and t > 1e-12:
                t /= 2
            w = w - t * step
            if np.linalg.norm(t * step) <= 1e-15 * max(1.0, np.linalg.norm(w)):
                break
        if np.linalg.norm(grad(w)) * max(1.0, np.linalg.norm(w)) > 1e-8 * value(w):
            raise ValueError(
                "the minimisation of F_lin did not converge (gradient not negligible at the scale of the loss)"
            )
    else:
        cons = {"type": "ineq", "fun": lambda w: radius**2 - w @ w, "jac": lambda w: -2 * w}
        sol = optimize.minimize(
            value, np.zeros(d), jac=grad, method="SLSQP", constraints=[cons], options={"ftol": 1e-15, "maxiter": 1000}
        )
        w = sol.x
        if np.linalg.norm(w) > radius:
            w = w * radius / np.linalg.norm(w)
    return {"w": w, "value": value(w)}


def _has_recession_direction(X: np.ndarray, y: np.ndarray) -> bool:
    """Whether some u has ``y_i u^T x_i >= 0`` for all i with a positive sum (then the logistic F_lin
    keeps decreasing along u and has no minimiser). A linear programme over the box ``|u|_inf <= 1``."""
    A = y[:, None] * X
    res = optimize.linprog(
        -A.sum(axis=0), A_ub=-A, b_ub=np.zeros(len(y)), bounds=[(-1, 1)] * X.shape[1], method="highs"
    )
    return bool(res.status == 0 and -res.fun > 1e-9)


def objective_derivatives(X, y, w, V, f_theta, loss: str = "squared", *, skip: bool = True) -> dict:
    """Value, gradient and Hessian of ``F_theta(w, V)`` in the flat parameters ``(w, vec V)`` (row-major V).

    Also returns the blocks ``hessian_ww`` (d x d) and the split gradients ``gradient_w``, ``gradient_V``.
    Computed by torch autograd in float64 with theta fixed. With ``skip=False`` the same for the network
    without the skip connection, ``x -> w^T V f_theta(x)`` (the input the paper's results rule out).
    """
    X, y, loss = _data(X, y, loss)
    skip = _skip(skip)
    Z = _features(f_theta, X)
    w, V = _wV(w, V, X.shape[1], Z.shape[1])
    d, k = V.shape

    def F(z):
        return loss_values((X * float(skip) + Z @ z[d:].reshape(d, k).T) @ z[:d], y, loss).mean()

    z = torch.cat([w, V.reshape(-1)])
    zg = z.clone().requires_grad_(True)
    value = F(zg)
    (g,) = torch.autograd.grad(value, zg)
    H = torch.autograd.functional.hessian(F, z)
    g, H = g.numpy(), H.numpy()
    return {
        "value": float(value.detach()),
        "gradient": g,
        "hessian": H,
        "gradient_w": g[:d],
        "gradient_V": g[d:].reshape(d, k),
        "hessian_ww": H[:d, :d],
        "function": F,
    }


def objective_sympy(X, y, f_theta, loss: str = "squared", *, skip: bool = True) -> tuple[sp.Expr, list[sp.Symbol]]:
    """``F_theta(w, V)`` as a SymPy expression in the symbols ``(w, vec V)`` (row-major ``V``, the order of
    :func:`objective_derivatives`), written from the formula ``mean_j l(w^T (x_j + V f_theta(x_j)); y_j)`` with the
    sample and the features ``f_theta(x_j)`` as numbers: the exact witness of the autograd derivatives that
    Theorems 1 and 2 are checked with. ``skip=False``: the network without the skip, ``w^T V f_theta(x)``."""
    X, y, loss = _data(X, y, loss)
    skip = _skip(skip)
    Z = _features(f_theta, X).numpy()
    d, k = X.shape[1], Z.shape[1]
    validate.check_budget(
        "(n, d, k)", 1.0 * X.shape[0] * (d * k) ** 2, 10**7, what="work", unit="Hessian terms", value=tuple(X.shape)
    )
    w = sp.symbols(f"w0:{d}")
    V = sp.Matrix(d, k, sp.symbols(f"V0:{d * k}"))
    terms = []
    for x_j, z_j, y_j in zip(X.numpy(), Z, y.numpy()):
        inner = sp.Matrix(x_j * float(skip)) + V * sp.Matrix(z_j)
        p = sum(w[a] * inner[a] for a in range(d))
        terms.append(
            sp.Rational(1, 2) * (p - float(y_j)) ** 2 if loss == "squared" else sp.log(1 + sp.exp(-float(y_j) * p))
        )
    return sp.Add(*terms) / len(terms), [*w, *V]


def random_mlp(
    d: int, k: int, width: int, depth: int, generator: torch.Generator, final: str = "none"
) -> torch.nn.Sequential:
    """A random float64 ReLU network ``R^d -> R^k`` with ``depth`` linear layers (He-scaled Gaussian weights)."""
    d, k = validate.positive_int("d", d), validate.positive_int("k", k)
    width, depth = validate.positive_int("width", width), validate.positive_int("depth", depth)
    final = validate.choice("final", final, ("none", "tanh"))
    validate.check_budget("depth", depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=depth)
    validate.check_budget(
        "(width, depth)",
        16.0 * ((d + k) * width + (depth - 1) * width * (width + 1)),
        validate.memory_limit_bytes(),
        value=(width, depth),
    )
    if not isinstance(generator, torch.Generator):
        raise TypeError("generator must be a torch.Generator")
    dims = [d] + [width] * (depth - 1) + [k]
    layers: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        lin = torch.nn.Linear(a, b, dtype=torch.float64)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(b, a, generator=generator, dtype=torch.float64) * math.sqrt(2.0 / a))
            lin.bias.copy_(0.1 * torch.randn(b, generator=generator, dtype=torch.float64))
        layers.append(lin)
        if i < depth - 1:
            layers.append(torch.nn.ReLU())
    if final == "tanh":
        layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def random_theorem_instance(
    seed: int,
    loss: str = "squared",
    n: int = INSTANCE["n"],
    d: int = INSTANCE["d"],
    k: int = INSTANCE["k"],
    width: int = INSTANCE["width"],
    depth: int = INSTANCE["depth"],
    w_zero: bool = False,
) -> dict:
    """A random instance for Theorems 1 and 2: data, a random deep ``f_theta``, a point ``(w, V)``, ``w_star``.

    Data ``x ~ N(0, I)``; targets a nonlinear function of ``x`` plus noise (squared loss) or its sign with a
    fraction :data:`LABEL_FLIP` of labels flipped (logistic). ``w`` and ``V`` have random scales, log-uniform
    between the powers of ten :data:`SCALE_POWERS`; with
    ``w_zero`` the point has ``w = 0``. ``w_star`` is the best linear predictor on the sample (over the
    ball of radius 10 for the logistic loss), so the right-hand sides are as large as they can be.
    """
    seed = _seed(seed)
    loss = _check_loss(loss)
    for name, val in (("n", n), ("d", d), ("k", k), ("width", width), ("depth", depth)):
        validate.positive_int(name, val)
    validate.check_budget(
        "(n, d, k, width, depth)",
        16.0 * (n * (d + width + k) + (d + k) * width + depth * width * (width + 1)),
        validate.memory_limit_bytes(),
        value=(n, d, k, width, depth),
    )
    validate.check_budget("depth", depth, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=depth)
    gen = torch.Generator().manual_seed(int(seed))
    rng = np.random.default_rng(seed)
    X = torch.randn(n, d, generator=gen, dtype=torch.float64)
    signal = torch.sin(X @ torch.randn(d, generator=gen, dtype=torch.float64)) + 0.5 * X[:, 0] ** 2
    if loss == "squared":
        y = signal + 0.3 * torch.randn(n, generator=gen, dtype=torch.float64)
    else:
        y = torch.where(signal >= signal.median(), 1.0, -1.0).to(torch.float64)
        flip = torch.rand(n, generator=gen) < LABEL_FLIP
        y = torch.where(flip, -y, y)
    f_theta = random_mlp(d, k, width, depth, gen)
    scale_w, scale_V = 10 ** rng.uniform(*SCALE_POWERS), 10 ** rng.uniform(*SCALE_POWERS)
    w = np.zeros(d) if w_zero else scale_w * rng.normal(size=d) / math.sqrt(d)
    V = scale_V * rng.normal(size=(d, k)) / math.sqrt(d * k)
    w_star = best_linear_predictor(X, y, loss, radius=None if loss == "squared" else 10.0)["w"]
    return {"X": X, "y": y, "f_theta": f_theta, "w": w, "V": V, "w_star": w_star, "loss": loss}


# --- Example 1: a saddle that is almost flat and worse than linear --------------------------------------
def _exact(eps) -> sp.Rational:
    """eps as an exact SymPy number: floats through their shortest decimal (0.1 -> 1/10)."""
    validate.positive_float("eps", eps)
    if isinstance(eps, sp.Basic):
        return sp.nsimplify(eps)
    if isinstance(eps, (Fraction, numbers.Integral)):
        return sp.Rational(eps)
    return sp.Rational(repr(float(eps)))


def example_1_symbolic() -> dict:
    """Example 1 exactly: ``F(w, v) = 1/2 (w (1 + eps v) - 1)^2`` with its gradient and Hessian in ``(w, v)``.

    Scalars ``x = y = 1``, ``w* = 1``, ``f_theta(x) = eps x`` and the squared loss (review 003). Returns a dict
    with ``symbols`` ``(w, v, eps)``, ``objective``, ``gradient`` (2x1 SymPy matrix) and ``hessian`` (2x2).
    """
    w, v = sp.symbols("w v", real=True)
    eps = sp.Symbol("epsilon", positive=True)  # typeset as \epsilon
    F = sp.Rational(1, 2) * (w * (1 + eps * v) - 1) ** 2
    gradient = sp.Matrix([sp.diff(F, w), sp.diff(F, v)]).applyfunc(sp.factor)
    hessian = sp.hessian(F, (w, v)).applyfunc(sp.factor)
    return {"symbols": (w, v, eps), "objective": F, "gradient": gradient, "hessian": hessian}


def example_1_review_formulas() -> dict:
    """The gradient and Hessian of Example 1 as the review prints them (to compare with SymPy)."""
    w, v = sp.symbols("w v", real=True)
    eps = sp.Symbol("epsilon", positive=True)  # typeset as \epsilon
    r = w - 1 + eps * w * v
    gradient = sp.Matrix([r * (1 + eps * v), r * eps * w])
    off = eps * (2 * w + 2 * eps * w * v - 1)
    hessian = sp.Matrix([[(1 + eps * v) ** 2, off], [off, eps**2 * w**2]])
    return {"symbols": (w, v, eps), "gradient": gradient, "hessian": hessian}


def example_1_saddle(eps) -> dict:
    """The point ``(0, -1/eps)`` of Example 1 with its value, gradient, Hessian and eigenvalues, exactly.

    ``eps`` must be positive; floats are read through their shortest decimal form (``0.1`` is ``1/10``).
    Eigenvalues are sorted ascending.
    """
    e = _exact(eps)
    sym = example_1_symbolic()
    w, v, eps_s = sym["symbols"]
    point = (sp.Integer(0), -1 / e)
    subs = {w: point[0], v: point[1], eps_s: e}
    hessian = sym["hessian"].subs(subs).applyfunc(sp.simplify)
    eigenvalues = sorted(hessian.eigenvals(multiple=True), key=lambda z: float(z))
    return {
        "point": point,
        "value": sp.simplify(sym["objective"].subs(subs)),
        "gradient": sym["gradient"].subs(subs).applyfunc(sp.simplify),
        "hessian": hessian,
        "eigenvalues": [sp.simplify(z) for z in eigenvalues],
    }


def example_1_objective(eps: float, penalty: float = 0.0) -> Callable[[torch.Tensor], torch.Tensor]:
    """``F(w, v) + (penalty/2)(w^2 + v^2)`` as a torch function of the vector ``(w, v)``."""
    eps = validate.positive_float("eps", eps)
    penalty = validate.non_negative_float("penalty", penalty)

    def F(z: torch.Tensor) -> torch.Tensor:
        if z.shape != (2,):
            raise ValueError(f"the point must be a vector (w, v), got shape {tuple(z.shape)}")
        w, v = z[0], z[1]
        return 0.5 * (w * (1 + eps * v) - 1) ** 2 + 0.5 * penalty * (w**2 + v**2)

    return F


def example_1_instance(eps: float) -> dict:
    """Example 1 as a residual instance of the general code (``d = k = 1``): one sample ``x = y = 1``,
    ``f_theta(x) = eps x``, ``w_star = 1``; ``X``, ``y``, ``f_theta``, ``w_star`` as in
    :func:`random_theorem_instance` (squared loss)."""
    eps = validate.positive_float("eps", eps)
    one = torch.ones(1, 1, dtype=torch.float64)
    return {"X": one, "y": one[0], "f_theta": lambda x: eps * x, "w_star": [1.0], "loss": "squared"}


def example_1_theorem_2(eps_values=(1.0, 0.1, 0.01, 0.001)) -> list[dict]:
    """Theorem 2's two sides at Example 1's saddle ``(0, -1/eps)`` by the general code, one row per eps; the
    last column is the left side without the factor ``|V|`` (what a bound free of the norms would have)."""
    eps_values = validate.finite_array("eps_values", eps_values, ndim=1, positive=True)
    rows = []
    for e in eps_values:
        a = example_1_instance(float(e))
        s2 = theorem_2_sides(a["X"], a["y"], [[-1 / e]], a["f_theta"], a["w_star"])
        rows.append(
            {
                "eps": float(e),
                "lambda_min": s2["lambda_min"],
                "|V|": s2["norm_V"],
                "Theorem 2 left side": s2["lhs"],
                "right side": s2["rhs"],
                "left side without the factor |V|": s2["gradient_norm"] + s2["curvature_term"],
            }
        )
    return rows


# --- Theorems 1 and 2: a point worse than linear is not (approximately) stationary ----------------------
def _w_star(w_star, d):
    w_star = _tensor(w_star, "w_star", 1).numpy()
    if w_star.shape[0] != d:
        raise ValueError(f"w_star must have {d} entries, got {w_star.shape[0]}")
    return w_star


def theorem_1_sides(X, y, w, V, f_theta, w_star, loss: str = "squared", *, skip: bool = True) -> dict:
    """Both sides of Theorem 1 at ``(w, V, theta)`` with ``w != 0``, against the linear predictor ``w_star``.

    ``lhs = |grad F_theta(w, V)|`` and
    ``rhs = (F(w, V, theta) - F_lin(w_star)) / sqrt(2|w|^2 + |w_star|^2 (2 + |V|^2 / |w|^2))`` with the spectral
    norm of ``V`` (``rhs_frobenius`` uses the Frobenius norm, a weaker statement; ``rhs_without_V`` drops the
    term ``|V|^2 / |w|^2``, a stronger statement that Example 1 refutes).
    """
    X, y, loss = _data(X, y, loss)
    der = objective_derivatives(X, y, w, V, f_theta, loss, skip=skip)
    w = _tensor(w, "w", 1).numpy()
    V = _tensor(V, "V", 2).numpy()
    w_star = _w_star(w_star, X.shape[1])
    nw2 = float(w @ w)
    if nw2 == 0:
        raise ValueError("Theorem 1 needs w != 0 (use theorem_2_sides at w = 0)")
    F_lin = linear_objective(X, y, w_star, loss)
    gap = der["value"] - F_lin
    ns2 = float(w_star @ w_star)

    def rhs(normV):
        return gap / math.sqrt(2 * nw2 + ns2 * (2 + normV**2 / nw2))

    return {
        "lhs": float(np.linalg.norm(der["gradient"])),
        "rhs": rhs(np.linalg.norm(V, 2)),
        "rhs_frobenius": rhs(np.linalg.norm(V)),
        "rhs_without_V": gap / math.sqrt(2 * nw2 + 2 * ns2),
        "F": der["value"],
        "F_lin": F_lin,
        "norm_w": math.sqrt(nw2),
        "norm_V": float(np.linalg.norm(V, 2)),
    }


def theorem_2_sides(X, y, V, f_theta, w_star, loss: str = "squared", *, skip: bool = True) -> dict:
    """Both parts of Theorem 2 at ``w = 0``.

    ``lambda_min`` of the Hessian in ``(w, V)`` (the theorem says it is at most 0), and
    ``lhs = |grad F_theta(0, V)| + |V| sqrt(|lambda_min| |d^2F/dw^2| + lambda_min^2)`` against
    ``rhs = (F(0, V, theta) - F_lin(w_star)) / |w_star|`` (spectral norms; ``w_star != 0``).
    """
    X, y, loss = _data(X, y, loss)
    V = _tensor(V, "V", 2)
    w_star = _w_star(w_star, X.shape[1])
    if not np.any(w_star):
        raise ValueError("Theorem 2 needs w_star != 0")
    der = objective_derivatives(X, y, torch.zeros(X.shape[1], dtype=torch.float64), V, f_theta, loss, skip=skip)
    lam = float(np.linalg.eigvalsh(der["hessian"])[0])
    Hww = float(np.linalg.norm(der["hessian_ww"], 2))
    normV = float(np.linalg.norm(V.numpy(), 2))
    gradient_norm = float(np.linalg.norm(der["gradient"]))
    curvature_term = math.sqrt(abs(lam) * Hww + lam**2)
    lhs = gradient_norm + normV * curvature_term
    F_lin = linear_objective(X, y, w_star, loss)
    return {
        "lambda_min": lam,
        "lhs": lhs,
        "gradient_norm": gradient_norm,
        "curvature_term": curvature_term,
        "rhs": (der["value"] - F_lin) / float(np.linalg.norm(w_star)),
        "F": der["value"],
        "F_lin": F_lin,
        "norm_V": normV,
        "hessian_ww_norm": Hww,
        "hessian_norm": float(np.linalg.norm(der["hessian"], 2)),
    }


def survey_theorems(n_instances: int, seed: int = 0, losses=LOSSES) -> dict:
    """Both sides of Theorems 1 and 2 on ``n_instances`` random instances per loss.

    Theorem 1 at a random ``(w, V)``; Theorem 2 at ``(0, V)`` of an independent instance. Returns numpy
    arrays ``t1_lhs, t1_rhs, t1_loss, t2_lhs, t2_rhs, t2_lambda_min, t2_loss, t2_hessian_norm`` (the
    spectral norm of the whole Hessian, the scale of ``t2_lambda_min``).
    """
    n_instances = validate.positive_int("n_instances", n_instances)
    seed = _seed(seed)
    if isinstance(losses, str) or not losses or any(l not in LOSSES for l in losses):
        raise ValueError(f"losses must be a non-empty sequence drawn from {LOSSES}")
    validate.check_budget(
        "n_instances", 0.02 * 2 * len(losses) * n_instances, 3600.0, what="time", unit="seconds", value=n_instances
    )  # ~20 ms each
    rows1, rows2 = [], []
    for loss in losses:
        for i in range(n_instances):
            a = random_theorem_instance(SEED_STRIDE * seed + 2 * i, loss)
            s1 = theorem_1_sides(a["X"], a["y"], a["w"], a["V"], a["f_theta"], a["w_star"], loss)
            rows1.append((s1["lhs"], s1["rhs"], loss))
            b = random_theorem_instance(SEED_STRIDE * seed + 2 * i + 1, loss, w_zero=True)
            s2 = theorem_2_sides(b["X"], b["y"], b["V"], b["f_theta"], b["w_star"], loss)
            rows2.append((s2["lhs"], s2["rhs"], s2["lambda_min"], loss, s2["hessian_norm"]))
    return {
        "t1_lhs": np.array([r[0] for r in rows1]),
        "t1_rhs": np.array([r[1] for r in rows1]),
        "t1_loss": np.array([r[2] for r in rows1]),
        "t2_lhs": np.array([r[0] for r in rows2]),
        "t2_rhs": np.array([r[1] for r in rows2]),
        "t2_lambda_min": np.array([r[2] for r in rows2]),
        "t2_loss": np.array([r[3] for r in rows2]),
        "t2_hessian_norm": np.array([r[4] for r in rows2]),
    }


def theorem_1_rhs_along(X, y, w, V, f_theta, w_star, scales, loss: str = "squared") -> np.ndarray:
    """Theorem 1's right side with the comparator ``c w_star`` for each ``c`` in ``scales``.

    The numerator ``F - F_lin(c w_star)`` is largest at the best linear predictor, but the denominator grows
    with ``|c w_star|``, so a shorter comparator can give a larger right side.
    """
    X, y, loss = _data(X, y, loss)
    Z = _features(f_theta, X)
    w_t, V_t = _wV(w, V, X.shape[1], Z.shape[1])
    w_star = _w_star(w_star, X.shape[1])
    scales = validate.finite_array("scales", scales, ndim=1)
    nw2 = float((w_t**2).sum())
    if nw2 == 0:
        raise ValueError("Theorem 1 needs w != 0")
    F = residual_objective(X, y, w_t, V_t, f_theta, loss)
    normV2 = float(np.linalg.norm(V_t.numpy(), 2)) ** 2
    ns2 = float(w_star @ w_star)
    return np.array(
        [
            (F - linear_objective(X, y, c * w_star, loss)) / math.sqrt(2 * nw2 + c * c * ns2 * (2 + normV2 / nw2))
            for c in scales
        ]
    )


def theorem_1_adversarial(
    X, y, f_theta, w_star, w0, V0, loss: str = "squared", steps: int = 200, lr: float = 0.03
) -> dict:
    """Minimise the ratio ``lhs / rhs`` of Theorem 1 over ``(w, V)`` by Adam, starting at ``(w0, V0)``.

    A search for violations: the theorem says the ratio never drops below 1 where ``rhs > 0``. Returns the
    smallest ratio met (and the point), computed again with :func:`theorem_1_sides` at that point.
    """
    X, y, loss = _data(X, y, loss)
    Z = _features(f_theta, X)
    w0, V0 = _wV(w0, V0, X.shape[1], Z.shape[1])
    w_star_t = torch.as_tensor(_w_star(w_star, X.shape[1]))
    steps = validate.positive_int("steps", steps)
    lr = validate.positive_float("lr", lr)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    F_lin = loss_values(X @ w_star_t, y, loss).mean()
    ns2 = float(w_star_t @ w_star_t)
    w = w0.clone().requires_grad_(True)
    V = V0.clone().requires_grad_(True)
    opt = torch.optim.Adam([w, V], lr=lr)
    best = (math.inf, w0.numpy().copy(), V0.numpy().copy())
    for _ in range(steps):
        F = loss_values((X + Z @ V.T) @ w, y, loss).mean()
        gw, gV = torch.autograd.grad(F, (w, V), create_graph=True)
        lhs = torch.sqrt((gw**2).sum() + (gV**2).sum())
        nw2 = (w**2).sum()
        normV = torch.linalg.matrix_norm(V, ord=2)
        rhs = (F - F_lin) / torch.sqrt(2 * nw2 + ns2 * (2 + normV**2 / nw2))
        if not bool(rhs > 0):
            break
        ratio = lhs / rhs
        if float(ratio.detach()) < best[0]:
            best = (float(ratio.detach()), w.detach().numpy().copy(), V.detach().numpy().copy())
        opt.zero_grad()
        torch.log(ratio).backward()
        opt.step()
    sides = theorem_1_sides(X, y, best[1], best[2], f_theta, w_star, loss)
    return {"w": best[1], "V": best[2], **sides, "ratio": sides["lhs"] / sides["rhs"] if sides["rhs"] > 0 else math.inf}


# --- Corollary 1 and Theorem 3: local minima are at least as good as linear -----------------------------
def minimize_residual_objective(X, y, f_theta, loss: str = "squared", seed: int = 0, *, skip: bool = True) -> dict:
    """A local minimum of ``F_theta(w, V)`` (theta fixed) by a trust-region Newton method from a random start.

    Returns the point, the value, the gradient norm and the smallest Hessian eigenvalue there, so that the
    caller can verify it is (numerically) a second-order stationary point, and the search's ``path`` (every
    iterate ``(w, V)`` from the start to the end point: the candidates of :func:`approximate_stationary_points`).
    ``skip=False``: the network without the skip connection, ``x -> w^T V f_theta(x)``.
    """
    X, y, loss = _data(X, y, loss)
    Z = _features(f_theta, X)
    d, k = X.shape[1], Z.shape[1]
    rng = np.random.default_rng(_seed(seed))

    def unpack(z):
        return z[:d], z[d:].reshape(d, k)

    cache: dict = {}

    def derivatives(z):  # one autograd pass per point serves value, gradient and Hessian
        key = z.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = objective_derivatives(X, y, *unpack(z), f_theta, loss, skip=skip)
        return cache[key]

    z0 = rng.normal(size=d + d * k) * 0.5
    path = [z0.copy()]
    sol = optimize.minimize(
        lambda z: derivatives(z)["value"],
        z0,
        jac=lambda z: derivatives(z)["gradient"],
        hess=lambda z: derivatives(z)["hessian"],
        method="trust-exact",
        options={"gtol": 1e-10, "maxiter": 500},
        callback=lambda zk: path.append(np.array(zk, dtype=float)),
    )
    z = sol.x
    # polish: Newton steps through the pseudo-inverse (the minima are degenerate: F depends on V only
    # through V^T w), kept while the gradient shrinks and the value does not rise beyond rounding
    for _ in range(20):
        der = derivatives(z)
        step = np.linalg.lstsq(der["hessian"], der["gradient"], rcond=1e-12)[0]
        trial = z - step
        if not np.all(np.isfinite(trial)):
            break
        new = derivatives(trial)
        if new["value"] > der["value"] + 1e-13 * abs(der["value"]) or np.linalg.norm(new["gradient"]) >= np.linalg.norm(
            der["gradient"]
        ):
            break
        z = trial
        path.append(z.copy())
        if np.linalg.norm(step) <= 1e-14 * max(1.0, np.linalg.norm(z)):
            break
    sol.x = z
    der = objective_derivatives(X, y, *unpack(sol.x), f_theta, loss, skip=skip)
    w, V = unpack(sol.x)
    return {
        "w": w,
        "V": V,
        "value": der["value"],
        "gradient_norm": float(np.linalg.norm(der["gradient"])),
        "lambda_min": float(np.linalg.eigvalsh(der["hessian"])[0]),
        "path": [unpack(p) for p in path],
    }


def residual_class_separates(X, y, f_theta, *, skip: bool = True) -> bool:
    """Whether some residual predictor separates a logistic sample (then ``inf F = 0`` is not attained).

    For ``w != 0`` the residual predictors ``w^T (x + V f_theta(x)) = w^T x + (V^T w)^T f_theta(x)`` are
    exactly the linear predictors on the features ``[x, f_theta(x)]``; the test is a linear programme.
    Without the skip (``skip=False``) they are the linear predictors on ``f_theta(x)`` alone.
    """
    X, y, _ = _data(X, y, "logistic")
    skip = _skip(skip)
    Z = _features(f_theta, X)
    features = np.hstack([X.numpy(), Z.numpy()]) if skip else Z.numpy()
    return _has_recession_direction(features, y.numpy())


def verify_local_minimum(
    X,
    y,
    w,
    V,
    f_theta,
    loss: str = "squared",
    *,
    rtol_gradient: float = VERIFY_RTOL,
    rtol_curvature: float = VERIFY_RTOL,
    rtol_escape: float = VERIFY_RTOL,
    skip: bool = True,
) -> dict:
    """Decide whether ``(w, V)`` is a local minimum of ``F_theta``, with tolerances at the problem's scale.

    - gradient: ``|grad F| max(|z|, 1) / F <= rtol_gradient`` with ``z = (w, vec V)``: the first-order change
      of ``F`` under a relative change of the parameters, compared with ``F`` itself (an absolute threshold
      such as ``|grad| < 1e-6`` passes any point where ``F`` is tiny);
    - curvature: ``lambda_min(grad^2 F) >= -rtol_curvature |grad^2 F|`` (spectral norm);
    - escape: along the ray ``c -> F(c w, V)``, which is convex in ``c`` (the prediction is linear in ``c``
      and the loss convex in the prediction), no value for ``c`` in :data:`ESCAPE_FACTORS` (``[1.5, 2^16]``) is below
      ``F (1 - rtol_escape)``; a loss that keeps falling along it has no minimum there;
    - for the logistic loss, whether the residual class separates the sample
      (:func:`residual_class_separates`): then no minimum is attained anywhere.

    Returns the numbers and ``status``: ``"local minimum"``, ``"no minimum attained"``, ``"not stationary"``
    or ``"negative curvature"``. ``skip=False``: the same for the network without the skip connection.
    """
    X, y, loss = _data(X, y, loss)
    rtol_gradient = validate.positive_float("rtol_gradient", rtol_gradient)
    rtol_curvature = validate.positive_float("rtol_curvature", rtol_curvature)
    rtol_escape = validate.positive_float("rtol_escape", rtol_escape)
    der = objective_derivatives(X, y, w, V, f_theta, loss, skip=skip)
    w_t, V_t = _wV(w, V, X.shape[1], _features(f_theta, X).shape[1])
    F, g, H = der["value"], der["gradient"], der["hessian"]
    z_norm = max(math.sqrt(float((w_t**2).sum() + (V_t**2).sum())), 1.0)
    g_norm = float(np.linalg.norm(g))
    relative_gradient = g_norm * z_norm / F if F > 0 else (0.0 if g_norm == 0 else math.inf)
    eig = np.linalg.eigvalsh(H)
    H_norm = float(np.max(np.abs(eig)))
    relative_curvature = float(eig[0]) / H_norm if H_norm > 0 else 0.0
    p = residual_predictions(X, w_t, V_t, f_theta) if skip else (_features(f_theta, X) @ V_t.T) @ w_t
    factors = np.geomspace(*ESCAPE_FACTORS, ESCAPE_POINTS)
    along = np.array([float(loss_values(c * p, y, loss).mean()) for c in factors])
    escape_drop = max(0.0, (F - float(along.min())) / F) if F > 0 else 0.0
    separable = loss == "logistic" and residual_class_separates(X, y, f_theta, skip=skip)
    if separable or escape_drop > rtol_escape:
        status = "no minimum attained"
    elif relative_gradient > rtol_gradient:
        status = "not stationary"
    elif relative_curvature < -rtol_curvature:
        status = "negative curvature"
    else:
        status = "local minimum"
    return {
        "status": status,
        "value": F,
        "gradient_norm": g_norm,
        "lambda_min": float(eig[0]),
        "relative_gradient": relative_gradient,
        "relative_curvature": relative_curvature,
        "escape_drop": escape_drop,
        "separable": bool(separable),
    }


def infimum_linear_objective(X, y, loss: str = "squared") -> float:
    """``inf_w F_lin(w)`` over all of ``R^d`` (0 for a linearly separable logistic sample, not attained)."""
    X, y, loss = _data(X, y, loss)
    if loss == "logistic" and _has_recession_direction(X.numpy(), y.numpy()):
        return 0.0
    return float(best_linear_predictor(X, y, loss)["value"])


def corollary_1_survey(n_instances: int, seed: int = 0, losses=LOSSES, *, skip: bool = True) -> list[dict]:
    """Corollary 1 on random instances: a local search for a minimum, its verification, the linear baseline.

    Instance ``i`` uses the loss ``losses[i % len(losses)]`` and :func:`random_theorem_instance` with seed
    ``SEED_STRIDE seed + 20000 + i``; :func:`minimize_residual_objective` starts from a random point (seed
    ``i``),
    :func:`verify_local_minimum` decides what was found, and ``inf_linear`` is the unconstrained
    :func:`infimum_linear_objective` (the residual model is unconstrained too). ``skip=False``: the same
    search on the same instances for the network without the skip, ``x -> w^T V f_theta(x)``.
    """
    n_instances = validate.positive_int("n_instances", n_instances)
    seed = validate.non_negative_int("seed", seed)
    if isinstance(losses, str) or not losses or any(l not in LOSSES for l in losses):
        raise ValueError(f"losses must be a non-empty sequence drawn from {LOSSES}, got {losses!r}")
    validate.check_budget("n_instances", 0.05 * n_instances, 3600.0, what="time", unit="seconds", value=n_instances)
    rows = []
    for i in range(n_instances):
        loss = losses[i % len(losses)]
        instance = SEED_STRIDE * seed + 20_000 + i
        a = random_theorem_instance(instance, loss)
        m = minimize_residual_objective(a["X"], a["y"], a["f_theta"], loss, seed=i, skip=skip)
        v = verify_local_minimum(a["X"], a["y"], m["w"], m["V"], a["f_theta"], loss, skip=skip)
        rows.append(
            {
                "instance": instance,
                "loss": loss,
                **v,
                "inf_linear": infimum_linear_objective(a["X"], a["y"], loss),
                "w": m["w"],
                "V": m["V"],
                "path": m["path"],
            }
        )
    return rows


def approximate_stationary_points(
    X, y, f_theta, path, loss: str = "squared", *, bound: float, eps_levels=(1e-2, 1e-4, 1e-6, 1e-8), skip: bool = True
) -> dict:
    """The points of a search ``path`` that are eps-SOPSPs of ``F_theta`` on ``max(|w|, |V|) < bound``.

    Definition 1 as review 003 gives it: ``|grad F_theta| <= eps`` and ``lambda_min(grad^2 F_theta) >=
    -sqrt(mu_2 eps)``, with ``mu_2`` the Lipschitz constant of the Hessian in ``(w, V)`` on the domain. Here
    ``mu_2`` is estimated *from below* by the largest ``|H(z_i) - H(z_j)| / |z_i - z_j|`` over pairs of points
    of the path inside the domain: a smaller ``mu_2`` makes the curvature condition stricter, so every point
    counted is an eps-SOPSP for the true ``mu_2`` too. ``|V|`` is the spectral norm.

    Per point inside the domain: ``value``, ``gradient_norm``, ``lambda_min`` and ``excess = F -
    min_{|u| <= bound} F_lin(u)`` (Theorem 3's comparator with ``r = bound``). Per level ``eps``:
    ``count[eps]`` points and the largest excess among them, ``worst_excess[eps]`` (``-inf`` when none).
    ``scale = F(0, V) - min_{|u| <= bound} F_lin(u)`` is the loss's own scale (``F(0, V)`` does not depend on
    ``V``): what the best linear predictor gains over predicting 0.
    """
    X, y, loss = _data(X, y, loss)
    bound = validate.positive_float("bound", bound)
    levels = validate.finite_array("eps_levels", eps_levels, ndim=1)
    if np.any(levels <= 0):
        raise ValueError("eps_levels must be positive")
    if not isinstance(path, (list, tuple)) or not path:
        raise ValueError("path must be a non-empty list of points (w, V)")
    linear = best_linear_predictor(X, y, loss, radius=bound)["value"]
    zero_value = float(loss_values(torch.zeros_like(y), y, loss).mean())
    rows, hessians, points = [], [], []
    for w, V in path:
        w_t, V_t = _tensor(w, "w", 1), _tensor(V, "V", 2)
        norm_w, norm_V = float(w_t.norm()), float(np.linalg.norm(V_t.numpy(), 2))
        if max(norm_w, norm_V) >= bound:
            continue
        der = objective_derivatives(X, y, w_t, V_t, f_theta, loss, skip=skip)
        rows.append(
            (
                der["value"],
                float(np.linalg.norm(der["gradient"])),
                float(np.linalg.eigvalsh(der["hessian"])[0]),
                norm_w,
                norm_V,
            )
        )
        hessians.append(der["hessian"])
        points.append(torch.cat([w_t, V_t.reshape(-1)]).numpy())
    mu2 = 0.0
    for i in range(len(points)):
        for j in range(i):
            dz = float(np.linalg.norm(points[i] - points[j]))
            if dz > 0:
                mu2 = max(mu2, float(np.linalg.norm(hessians[i] - hessians[j], 2)) / dz)
    arr = np.array(rows, dtype=float).reshape(-1, 5)
    excess = arr[:, 0] - linear
    count, worst = {}, {}
    for eps in levels:
        ok = (arr[:, 1] <= eps) & (arr[:, 2] >= -math.sqrt(mu2 * eps))
        count[float(eps)] = int(ok.sum())
        worst[float(eps)] = float(excess[ok].max()) if ok.any() else -math.inf
    return {
        "value": arr[:, 0],
        "gradient_norm": arr[:, 1],
        "lambda_min": arr[:, 2],
        "norm_w": arr[:, 3],
        "norm_V": arr[:, 4],
        "excess": excess,
        "mu2": mu2,
        "linear_value": linear,
        "scale": zero_value - linear,
        "count": count,
        "worst_excess": worst,
    }


# --- Regularisation and constraints: the landscapes of Example 1 with a penalty or in a ball ------------
def _landscape(eps: float, penalty: float):
    """Value, gradient and Hessian of ``F + (penalty/2)|z|^2`` in numpy (closed forms of the review)."""

    def value(z):
        w, v = z[..., 0], z[..., 1]
        return 0.5 * (w * (1 + eps * v) - 1) ** 2 + 0.5 * penalty * (w**2 + v**2)

    def gradient(z):
        w, v = z
        r = w * (1 + eps * v) - 1
        return np.array([r * (1 + eps * v) + penalty * w, r * eps * w + penalty * v])

    def hessian(z):
        w, v = z
        a = 1 + eps * v
        off = eps * (2 * w * a - 1)
        return np.array([[a * a + penalty, off], [off, eps * eps * w * w + penalty]])

    return value, gradient, hessian


def landscape_value(eps: float, penalty: float, w, v):
    """``F(w, v) + (penalty/2)(w^2 + v^2)`` on arrays ``w, v`` (for contour plots)."""
    eps = validate.positive_float("eps", eps)
    penalty = validate.non_negative_float("penalty", penalty)
    w = validate.finite_array("w", w)
    v = validate.finite_array("v", v)
    if w.shape != v.shape:
        raise ValueError(f"w and v must have the same shape, got {w.shape} and {v.shape}")
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(v))):
        raise ValueError("w and v must be finite")
    return _landscape(eps, penalty)[0](np.stack([w, v], axis=-1))


def _check_landscape_args(eps, penalty, radius, n_starts, box):
    eps = validate.positive_float("eps", eps)
    penalty = validate.non_negative_float("penalty", penalty)
    if radius is not None:
        radius = validate.positive_float("radius", radius)
    n_starts = validate.integer("n_starts", n_starts, minimum=4)
    box = validate.positive_float("box", box)
    return eps, penalty, radius, n_starts, box


def _starts(n_starts: int, box: float, radius: float | None) -> np.ndarray:
    side = int(math.ceil(math.sqrt(n_starts)))
    half = box if radius is None else min(box, radius)
    g = np.linspace(-half, half, side)
    pts = np.array([(a, b) for a in g for b in g])
    if radius is not None:
        pts = pts[np.linalg.norm(pts, axis=1) < radius]
    return pts


@dataclass
class CriticalPoint:
    """A critical point of the (possibly constrained) landscape and what the verification found."""

    point: np.ndarray
    value: float
    on_boundary: bool
    residual: float  # |gradient|, or the KKT residual on the boundary
    multiplier: float  # KKT multiplier (0 in the interior)
    min_curvature: float  # smallest Hessian eigenvalue, or the tangential curvature on the boundary
    lower_nearby: float  # lowest value found in a small feasible neighbourhood minus the value
    kind: str = field(default="")  # "local minimum", "saddle", "not stationary", ...


def _classify(z, eps, penalty, radius, tol, neighbourhood, rng) -> CriticalPoint:
    value, gradient, hessian = _landscape(eps, penalty)
    z = np.asarray(z, dtype=float)
    f0 = float(value(z))
    g = gradient(z)
    H = hessian(z)
    on_boundary = radius is not None and abs(np.linalg.norm(z) - radius) <= 1e-7 * max(1.0, radius)
    if on_boundary:
        # KKT: grad + mu z = 0 with mu >= 0; curvature of F + (mu/2)|z|^2 along the tangent.
        mu = -float(g @ z) / radius**2
        residual = float(np.linalg.norm(g + mu * z))
        t = np.array([-z[1], z[0]]) / radius
        curvature = float(t @ H @ t + mu)
        scale = 1.0 + abs(mu)
    else:
        mu = 0.0
        residual = float(np.linalg.norm(g))
        curvature = float(np.linalg.eigvalsh(H)[0])
        scale = 1.0 + float(np.max(np.abs(H)))
    # No lower value nearby: random feasible points at several small distances.
    dirs = rng.normal(size=(400, 2))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    radii = neighbourhood * np.repeat(np.geomspace(1e-3, 1.0, 8), 50)[:, None]
    near = z + radii * dirs
    if radius is not None:
        norms = np.linalg.norm(near, axis=1)
        near = near[norms <= radius]
    lower = float(np.min(value(near)) - f0) if len(near) else 0.0
    stationary = residual <= tol * scale
    if not stationary:
        kind = "not stationary"
    elif on_boundary and mu < -tol * scale:
        kind = "boundary point with a descent direction into the ball"
    elif curvature < -tol * scale or lower < -tol * max(1.0, abs(f0)):
        kind = "saddle" if not on_boundary else "boundary saddle or maximum"
    else:
        kind = "local minimum"
    return CriticalPoint(z, f0, bool(on_boundary), residual, mu, curvature, lower, kind)


def _polish(z, eps, penalty, radius, tol):
    """Newton on the gradient (interior) or on the angle (boundary) to reach machine precision."""
    _, gradient, hessian = _landscape(eps, penalty)
    z = np.asarray(z, dtype=float)
    if radius is not None and np.linalg.norm(z) >= radius * (1 - 1e-6):
        phi = math.atan2(z[1], z[0])
        for _ in range(50):
            c, s = math.cos(phi), math.sin(phi)
            p = radius * np.array([c, s])
            dp = radius * np.array([-s, c])
            g1 = float(gradient(p) @ dp)
            g2 = float(dp @ hessian(p) @ dp - gradient(p) @ p)
            if g2 == 0:
                break
            step = g1 / g2
            phi -= step
            if abs(step) < 1e-15:
                break
        return radius * np.array([math.cos(phi), math.sin(phi)])
    for _ in range(50):
        H = hessian(z)
        try:
            step = np.linalg.solve(H, gradient(z))
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(step)) or np.linalg.norm(step) > 1.0:
            break
        z = z - step
        if np.linalg.norm(step) < 1e-15:
            break
    return z


def critical_points(
    eps,
    penalty=0.0,
    radius=None,
    *,
    n_starts: int = 400,
    box: float = 3.0,
    tol: float = 1e-8,
    neighbourhood: float = 1e-2,
    seed: int = 0,
) -> list[CriticalPoint]:
    """Every critical point found by root finding from a grid of starts, each classified.

    Interior: roots of the gradient (Newton-type root finding converges to saddles as readily as to
    minima). On the circle of the given ``radius``: critical points of the objective restricted to it.
    Returned sorted by value, with duplicates (closer than ``1e-5``) removed.
    """
    eps, penalty, radius, n_starts, box = _check_landscape_args(eps, penalty, radius, n_starts, box)
    validate.check_budget(
        "n_starts", 100.0 * n_starts, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=n_starts
    )  # ~100 a start
    tol = validate.positive_float("tol", tol)
    neighbourhood = validate.positive_float("neighbourhood", neighbourhood)
    _, gradient, hessian = _landscape(eps, penalty)
    rng = np.random.default_rng(_seed(seed))
    cands = []
    for z0 in _starts(n_starts, box, radius):
        sol = optimize.root(gradient, z0, jac=hessian, method="hybr")
        if sol.success and (radius is None or np.linalg.norm(sol.x) < radius):
            cands.append(_polish(sol.x, eps, penalty, None, tol))
    if radius is not None:
        for phi0 in np.linspace(-math.pi, math.pi, max(16, n_starts // 4), endpoint=False):

            def dg(phi):
                p = radius * np.array([math.cos(phi[0]), math.sin(phi[0])])
                return [float(gradient(p) @ np.array([-p[1], p[0]]))]

            sol = optimize.root(dg, [phi0], method="hybr")
            if sol.success:
                cands.append(
                    _polish(radius * np.array([math.cos(sol.x[0]), math.sin(sol.x[0])]), eps, penalty, radius, tol)
                )
    return _dedupe([_classify(z, eps, penalty, radius, tol, neighbourhood, rng) for z in cands], 1e-5)


def _dedupe(points: list[CriticalPoint], separation: float) -> list[CriticalPoint]:
    kept: list[CriticalPoint] = []
    for p in sorted(points, key=lambda p: (p.value, p.residual)):
        if all(np.linalg.norm(p.point - q.point) > separation for q in kept):
            kept.append(p)
    return kept


def find_local_minima(
    eps,
    penalty=0.0,
    radius=None,
    *,
    n_starts: int = 400,
    box: float = 3.0,
    tol: float = 1e-8,
    neighbourhood: float = 1e-2,
    separation: float = 0.05,
    seed: int = 0,
    details: bool = False,
) -> list[dict]:
    """All distinct local minima of ``F(w, v) + (penalty/2)(w^2 + v^2)``, optionally on the ball ``|z| <= radius``.

    Local minimisation (a trust-region Newton method, or SLSQP on the ball) from a grid of ``n_starts``
    points in ``[-box, box]^2``; every candidate is polished and verified: gradient (or KKT residual with a
    non-negative multiplier) at most ``tol`` relative to the scale, no direction of negative curvature, and
    no lower feasible value at random points within ``neighbourhood``. Saddles fail the last two tests.
    Minima closer than ``separation`` are merged, so a curve of global minima (no penalty) is reported by
    representatives. Returns dicts with ``point`` and ``value`` (and, with ``details``, the verification
    numbers), sorted by value.
    """
    eps, penalty, radius, n_starts, box = _check_landscape_args(eps, penalty, radius, n_starts, box)
    separation = validate.positive_float("separation", separation)
    validate.check_budget(
        "n_starts", 100.0 * n_starts, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=n_starts
    )
    value, gradient, hessian = _landscape(eps, penalty)
    rng = np.random.default_rng(_seed(seed))
    found = []
    for z0 in _starts(n_starts, box, radius):
        if radius is None:
            sol = optimize.minimize(
                value, z0, jac=gradient, hess=hessian, method="trust-exact", options={"gtol": 1e-12}
            )
        else:
            cons = {"type": "ineq", "fun": lambda z: radius**2 - z @ z, "jac": lambda z: -2 * z}
            sol = optimize.minimize(
                value, z0, jac=gradient, method="SLSQP", constraints=[cons], options={"ftol": 1e-14, "maxiter": 500}
            )
            if np.linalg.norm(sol.x) > radius * (1 - 1e-6):
                sol.x = sol.x * radius / np.linalg.norm(sol.x)
        z = _polish(sol.x, eps, penalty, radius, tol)
        if radius is not None and np.linalg.norm(z) > radius * (1 + 1e-9):
            continue
        cp = _classify(z, eps, penalty, radius, tol, neighbourhood, rng)
        if cp.kind == "local minimum":
            found.append(cp)
    out = []
    for cp in _dedupe(found, separation):
        d = {"point": cp.point, "value": cp.value}
        if details:
            d.update(
                on_boundary=cp.on_boundary,
                residual=cp.residual,
                multiplier=cp.multiplier,
                min_curvature=cp.min_curvature,
                hessian=hessian(cp.point),
                lower_nearby=cp.lower_nearby,
            )
        out.append(d)
    return out


def landscape_panel(
    ax, eps: float, penalty: float, radius, minima: list[dict], title: str, box: float = 3.0, levels: int = 30
) -> None:
    """Contours of ``F + (penalty/2)|z|^2`` over ``[-box, box]^2`` with the ball and the minima marked."""
    if not minima or not all(isinstance(m, dict) and "point" in m and "value" in m for m in minima):
        raise ValueError("minima must be a non-empty list of dicts with 'point' and 'value'")
    if radius is not None:
        radius = validate.positive_float("radius", radius)
    box = validate.positive_float("box", box)
    g = np.linspace(-box, box, 301)
    W, V = np.meshgrid(g, g)
    F = landscape_value(eps, penalty, W, V)
    ax.contour(W, V, np.log10(F + 1e-3), levels=levels, linewidths=0.6, cmap="viridis")
    if radius is not None:
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(radius * np.cos(t), radius * np.sin(t), color="k", linewidth=1.2)
    best = min(m["value"] for m in minima)
    for m in minima:
        spurious = m["value"] > best + 1e-9
        ax.plot(
            *m["point"],
            marker="X" if spurious else "o",
            color="#cc4125" if spurious else "#0b5394",
            markersize=9 if spurious else 4,
            linestyle="none",
        )
    ax.set(xlabel="w", ylabel="v", title=title, xlim=(-box, box), ylim=(-box, box), aspect="equal")


def landscape_linear_optimum(penalty: float = 0.0, radius=None) -> float:
    """The best linear predictor's value on Example 1's landscape: ``min_{|w| <= radius} F(w, 0) + penalty w^2/2``.

    ``F(w, 0) = (w - 1)^2 / 2`` for every ``eps``; the minimiser is ``min(1 / (1 + penalty), radius)``.
    """
    penalty = validate.non_negative_float("penalty", penalty)
    w = 1.0 / (1.0 + penalty)
    if radius is not None:
        w = min(w, validate.positive_float("radius", radius))
    return 0.5 * (w - 1.0) ** 2 + 0.5 * penalty * w * w


def ball_bottom_left_minimum_radii(eps) -> tuple[float, float]:
    """The radii ``R`` for which Example 1's objective on the disc ``|(w, v)| <= R`` has a local minimum on the
    bottom-left arc of its circle: exactly ``1/eps < R < d``, returned as ``(1/eps, d)``. Its value is positive
    (``g < 1`` there), so it is spurious whenever the disc also reaches a zero of ``F`` (the global value is then 0).

    On the circle, ``F = (g - 1)^2 / 2`` with ``g(t) = R cos t (1 + eps R sin t)``, and ``g'(t) = R (eps R - s -
    2 eps R s^2)`` with ``s = sin t``. On the bottom-left arc (``s`` from 0 to -1) ``g'`` is positive at ``s = 0``
    and has the sign of ``1 - eps R`` at ``s = -1``; it is concave in ``s``, so ``g`` has an interior maximum
    there iff ``eps R > 1``, i.e. iff the disc holds the saddle ``(0, -1/eps)`` inside. That maximum is a local
    minimum of ``F`` on the disc (the gradient points inwards there) unless ``g`` reaches 1 on the arc, i.e. unless
    the disc reaches the bottom-left branch of the zeros ``w (1 + eps v) = 1``, whose distance from the origin is
    ``d``: with ``u = -(1 + eps v) > 0`` the branch is ``(-1/u, -(1 + u)/eps)``, and ``d^2 = 1/u^2 + (1 + u)^2 /
    eps^2`` is least at the positive root of ``u^3 (1 + u) = eps^2``.
    """
    eps = validate.positive_float("eps", eps)
    u = max(r.real for r in np.roots([1.0, 1.0, 0.0, 0.0, -(eps**2)]) if abs(r.imag) < 1e-12 and r.real > 0)
    return 1.0 / eps, math.sqrt(1.0 / u**2 + (1.0 + u) ** 2 / eps**2)


def landscape_sweep(eps, penalties=(), radii=(), *, n_starts: int = 100) -> list[dict]:
    """Every verified local minimum of Example 1's landscape for each penalty (no ball) and each radius.

    One row per setting: ``setting`` (``"penalty"`` or ``"radius"``), ``parameter``, ``global_value`` (the
    lowest verified minimum), ``spurious`` (the verified minima above it by more than ``1e-9`` relative to
    the landscape's scale), and ``linear_optimum`` (:func:`landscape_linear_optimum`). With a penalty the
    search box grows as ``1.5 / sqrt(penalty)`` (the penalty confines every point below ``F(0) = 1/2``).
    """
    eps = validate.positive_float("eps", eps)
    n_starts = validate.integer("n_starts", n_starts, minimum=4)
    rows = []
    for kind, values in (("penalty", penalties), ("radius", radii)):
        for value in values:
            value = (validate.non_negative_float if kind == "penalty" else validate.positive_float)(kind, value)
            if kind == "penalty":
                box = max(3.0, 1.5 / math.sqrt(value)) if value > 0 else 3.0
                minima = find_local_minima(eps, value, None, n_starts=n_starts, box=box)
                linear = landscape_linear_optimum(value)
            else:
                minima = find_local_minima(eps, 0.0, value, n_starts=n_starts, box=value)
                linear = landscape_linear_optimum(0.0, value)
            best = minima[0]["value"]
            spurious = [m for m in minima if m["value"] > best + 1e-9 * max(1.0, abs(best))]
            rows.append(
                {
                    "setting": kind,
                    "parameter": value,
                    "global_value": best,
                    "spurious": spurious,
                    "linear_optimum": linear,
                }
            )
    return rows


# --- Theorem 4: a skip connection to the output, and projected SGD --------------------------------------
class OutputSkipNet(torch.nn.Module):
    """``x -> w^T x + v^T f_theta(x)``: linear in ``(w, v)`` for every ``theta`` (Theorem 4's architecture).

    ``f_theta`` is a random ReLU network ending in tanh, so ``|f_theta(x)|_inf <= 1`` and the loss stays
    Lipschitz in ``(w, v)``. ``(w, v)`` start at 0.
    """

    def __init__(self, d: int, k: int, width: int, depth: int, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(_seed(seed))
        self.f_theta = random_mlp(d, k, width, depth, gen, final="tanh")
        self.w = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
        self.v = torch.nn.Parameter(torch.zeros(k, dtype=torch.float64))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return X @ self.w + self.f_theta(X) @ self.v

    def output_parameters(self) -> list[torch.nn.Parameter]:
        """The parameters projected onto the ball ``M_1`` (here ``(w, v)``)."""
        return [self.w, self.v]


class ResidualNet(torch.nn.Module):
    """The original architecture ``x -> w^T (x + V f_theta(x))``, same ``f_theta`` as :class:`OutputSkipNet`.

    ``w`` starts at 0 and ``V`` at 0, the same start as the output-skip network.
    """

    def __init__(self, d: int, k: int, width: int, depth: int, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(_seed(seed))
        self.f_theta = random_mlp(d, k, width, depth, gen, final="tanh")
        self.w = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))
        self.V = torch.nn.Parameter(torch.zeros(d, k, dtype=torch.float64))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return (X + self.f_theta(X) @ self.V.T) @ self.w

    def output_parameters(self) -> list[torch.nn.Parameter]:
        return [self.w, self.V]


class LogisticLinearSource:
    """``x`` uniform in the unit ball of ``R^d``; ``P(y = 1 | x) = sigmoid(u*^T x)`` with ``y in {-1, +1}``.

    The Bayes-optimal predictor is the linear ``u*``, so no network beats the best linear predictor in
    population and the gap of Theorem 4 is non-negative: its decay can be read on log-log axes.
    """

    def __init__(self, u_star, seed: int = 0):
        self.u_star = _tensor(u_star, "u_star", 1)
        self.d = self.u_star.shape[0]
        self.gen = torch.Generator().manual_seed(_seed(seed))

    def sample(self, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        n = validate.positive_int("n", n)
        g = torch.randn(n, self.d, generator=self.gen, dtype=torch.float64)
        g /= g.norm(dim=1, keepdim=True)
        r = torch.rand(n, 1, generator=self.gen, dtype=torch.float64) ** (1.0 / self.d)
        X = g * r
        p = torch.sigmoid(X @ self.u_star)
        y = torch.where(torch.rand(n, generator=self.gen, dtype=torch.float64) < p, 1.0, -1.0)
        return X, y.to(torch.float64)


def _project(params: list[torch.nn.Parameter], radius: float) -> None:
    with torch.no_grad():
        norm = math.sqrt(sum(float((p**2).sum()) for p in params))
        if norm > radius:
            for p in params:
                p.mul_(radius / norm)


def projected_sgd(
    model: torch.nn.Module,
    source: LogisticLinearSource,
    steps: int,
    radius: float,
    lipschitz: float,
    lr_theta: float = 0.05,
    X_test=None,
    y_test=None,
) -> dict:
    """Projected SGD on the logistic loss, one fresh sample per step (Theorem 4's procedure).

    The output parameters (``model.output_parameters()``) take steps ``eta_t = D / (G sqrt(t))`` with
    ``D = 2 radius`` (the diameter of the ball ``M_1``) and ``G = lipschitz`` (a bound on the loss's gradient
    in them), then are projected back onto the ball of ``radius``; ``theta`` takes steps
    ``lr_theta / sqrt(t)`` and is not projected (``M_2`` is the whole space). Returns numpy arrays: the
    samples, the online losses ``l_t(w_t, v_t, theta_t)`` (before the step on sample t) and, when a test
    sample is given, the risk of every iterate on it.
    """
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "output_parameters"):
        raise TypeError("model must be an OutputSkipNet or ResidualNet (a module with output_parameters())")
    if not isinstance(source, LogisticLinearSource):
        raise TypeError("source must be a LogisticLinearSource")
    steps = validate.positive_int("steps", steps)
    radius = validate.positive_float("radius", radius)
    lipschitz = validate.positive_float("lipschitz", lipschitz)
    lr_theta = validate.non_negative_float("lr_theta", lr_theta)
    validate.check_budget("steps", steps, validate.LOOP_LIMIT, what="work", unit="loop iterations", value=steps)
    validate.check_budget("steps", 8.0 * 4 * steps * (source.d + 2), validate.memory_limit_bytes(), value=steps)
    if (X_test is None) != (y_test is None):
        raise ValueError("give both X_test and y_test, or neither")
    if X_test is not None:
        X_test, y_test, _ = _data(X_test, y_test, "logistic")
    out_params = model.output_parameters()
    out_ids = {id(p) for p in out_params}
    theta = [p for p in model.parameters() if id(p) not in out_ids]
    X, y = source.sample(steps)
    online = np.empty(steps)
    risks = np.empty(steps) if X_test is not None else None
    for t in range(steps):
        if risks is not None:
            with torch.no_grad():
                risks[t] = float(loss_values(model(X_test), y_test, "logistic").mean())
        loss = loss_values(model(X[t : t + 1]), y[t : t + 1], "logistic").sum()
        model.zero_grad()
        loss.backward()
        online[t] = float(loss.detach())
        eta = 2 * radius / (lipschitz * math.sqrt(t + 1))
        with torch.no_grad():
            for p in out_params:
                p -= eta * p.grad
            for p in theta:
                if p.grad is not None:
                    p -= lr_theta / math.sqrt(t + 1) * p.grad
        _project(out_params, radius)
    return {"X": X.numpy(), "y": y.numpy(), "online_losses": online, "risks": risks}


def output_skip_hessian(X, y, w, v, f_theta, loss: str = "squared") -> np.ndarray:
    """Hessian in ``(w, v)`` of the mean loss of ``x -> w^T x + v^T f_theta(x)`` (Theorem 4's architecture).

    This objective is convex in ``(w, v)``: unlike the residual one, its Hessian at ``w = 0`` is positive
    semi-definite, and definite when the features ``[x, f_theta(x)]`` span their space.
    """
    X, y, loss = _data(X, y, loss)
    Z = _features(f_theta, X)
    w = _tensor(w, "w", 1)
    v = _tensor(v, "v", 1)
    if w.shape[0] != X.shape[1] or v.shape[0] != Z.shape[1]:
        raise ValueError(f"w must have {X.shape[1]} entries and v {Z.shape[1]}, got {w.shape[0]} and {v.shape[0]}")
    d = X.shape[1]
    H = torch.autograd.functional.hessian(
        lambda z: loss_values(X @ z[:d] + Z @ z[d:], y, loss).mean(), torch.cat([w, v])
    )
    return H.numpy()


def theorem_4_bound(T, radius: float, lipschitz: float, loss_bound: float, delta: float) -> np.ndarray:
    """Our explicit form of Theorem 4's ``O(.)`` for projected SGD with steps ``D / (G sqrt(t))``.

    ``1.5 D G / sqrt(T)`` (online gradient descent's regret, ``D = 2 radius``) plus
    ``r sqrt(2 log(2/delta) / T)`` (Azuma-Hoeffding for the iterates' risks and Hoeffding for the comparator,
    each at level ``delta/2``), for losses in ``[0, r]``. [derived: not the paper's constant]
    """
    if isinstance(T, (str, bytes, bool, np.bool_)) or np.asarray(T).dtype.kind not in "iuf":
        raise TypeError(f"T must be a number of steps or an array of them, got {validate.show(T)} ({type(T).__name__})")
    T = np.asarray(T, dtype=float)
    if T.size == 0 or np.any(~np.isfinite(T)) or np.any(T < 1):
        raise ValueError("T must be finite and at least 1")
    radius = validate.positive_float("radius", radius)
    lipschitz = validate.positive_float("lipschitz", lipschitz)
    loss_bound = validate.positive_float("loss_bound", loss_bound)
    delta = validate.probability("delta", delta, open_low=True, open_high=True)
    return 1.5 * 2 * radius * lipschitz / np.sqrt(T) + loss_bound * np.sqrt(2 * math.log(2 / delta) / T)


def average_regret(X, y, online_losses, radius: float, horizons) -> np.ndarray:
    """``(1/T) sum_{t<=T} l_t(iterate_t) - min_{|u|<=radius} (1/T) sum_{t<=T} l(u^T x_t; y_t)`` for each T.

    The comparator is the best fixed linear predictor in hindsight on the same samples (logistic loss).
    Online gradient descent guarantees at most ``1.5 D G / sqrt(T)`` for any sequence of convex losses.
    """
    X, y, _ = _data(X, y, "logistic")
    online = validate.finite_array("online_losses", online_losses)
    if online.shape != (X.shape[0],):
        raise ValueError("online_losses must be finite, one per sample")
    radius = validate.positive_float("radius", radius)
    horizons = validate.integer_array("horizons", horizons, ndim=1)
    if (
        horizons.size == 0
        or not np.issubdtype(horizons.dtype, np.integer)
        or np.any(horizons < 1)
        or np.any(horizons > X.shape[0])
    ):
        raise ValueError(f"horizons must be integers in [1, {X.shape[0]}]")
    out = []
    for T in horizons:
        best = best_linear_predictor(X[:T], y[:T], "logistic", radius=radius)["value"]
        out.append(online[:T].mean() - best)
    return np.array(out)


def theorem_4_experiment(
    steps: int,
    n_seeds: int,
    seed: int = 0,
    d: int = 5,
    k: int = 4,
    width: int = 16,
    depth: int = 3,
    radius: float = 2.0,
    n_test: int = 2000,
    delta: float = 0.05,
) -> dict:
    """Projected SGD on both architectures for ``steps`` steps, ``n_seeds`` runs each (Theorem 4).

    Data from :class:`LogisticLinearSource` with ``|u*| = 1.5 <= radius``; risks on a test sample of
    ``n_test`` points. For horizons ``T = 8, 16, ..., <= steps`` returns per architecture the gap
    ``(1/T) sum_t risk(iterate_t) - min_{|u| <= radius} F_lin(u)`` (mean over runs, and every run), the
    average regret against the best linear predictor in hindsight, and our explicit bound
    :func:`theorem_4_bound` (``G = sqrt(1 + k)``: ``|x| <= 1`` and ``|f_theta(x)|_inf <= 1``;
    ``r = log(1 + exp(radius G))``).
    """
    steps = validate.integer("steps", steps, minimum=16)
    n_seeds = validate.positive_int("n_seeds", n_seeds)
    seed = _seed(seed)
    radius = validate.positive_float("radius", radius)
    n_test = validate.positive_int("n_test", n_test)
    validate.check_budget(
        "(steps, n_seeds)",
        float(steps) * n_seeds,
        validate.LOOP_LIMIT,
        what="work",
        unit="loop iterations",
        value=(steps, n_seeds),
    )
    validate.check_budget(
        "(steps, n_seeds)", 8.0 * 8 * steps * n_seeds, validate.memory_limit_bytes(), value=(steps, n_seeds)
    )
    validate.check_budget("n_test", 8.0 * 4 * n_test * (d + 2), validate.memory_limit_bytes(), value=n_test)
    u_star = np.full(d, 1.5 / math.sqrt(d))
    X_test, y_test = LogisticLinearSource(u_star, seed=seed + 10_000).sample(n_test)
    best = best_linear_predictor(X_test, y_test, "logistic", radius=radius)
    G = math.sqrt(1 + k)
    r = math.log1p(math.exp(radius * G))
    horizons = 2 ** np.arange(3, int(math.log2(steps)) + 1)
    out = {
        "horizons": horizons,
        "best_linear": best["value"],
        "lipschitz": G,
        "loss_bound": r,
        "bound": theorem_4_bound(horizons, radius, G, r, delta),
        "radius": radius,
        "delta": delta,
    }
    for name, arch in (("output skip", OutputSkipNet), ("original", ResidualNet)):
        gaps, regrets = [], []
        for s in range(n_seeds):
            model = arch(d, k, width, depth, seed=seed + s)
            run = projected_sgd(
                model, LogisticLinearSource(u_star, seed=seed + 100 + s), steps, radius, G, X_test=X_test, y_test=y_test
            )
            avg_risk = np.cumsum(run["risks"]) / np.arange(1, steps + 1)
            gaps.append(avg_risk[horizons - 1] - best["value"])
            regrets.append(average_regret(run["X"], run["y"], run["online_losses"], radius, horizons))
        out[name] = {"gap": np.mean(gaps, axis=0), "gaps": np.array(gaps), "regret": np.array(regrets)}
    return out


# --- Theorem 4: the rate in T, many runs at once, the population gap measured exactly over y ------------
def _batched_mlp(n_runs: int, dims: list[int], generator: torch.Generator) -> list[torch.Tensor]:
    """Weights and biases of ``n_runs`` independent random ReLU networks (He-scaled, as :func:`random_mlp`)."""
    params = []
    for a, b in zip(dims[:-1], dims[1:]):
        W = torch.randn(n_runs, b, a, generator=generator, dtype=torch.float64) * math.sqrt(2.0 / a)
        bias = 0.1 * torch.randn(n_runs, 1, b, generator=generator, dtype=torch.float64)
        params += [W.requires_grad_(True), bias.requires_grad_(True)]
    return params


def _batched_features(theta: list[torch.Tensor], X: torch.Tensor) -> torch.Tensor:
    """``f_theta(X)`` for every run: ``X`` is (runs, m, d); ReLU layers, tanh output in [-1, 1]."""
    h = X
    n_layers = len(theta) // 2
    for i in range(n_layers):
        h = h @ theta[2 * i].transpose(1, 2) + theta[2 * i + 1]
        h = torch.relu(h) if i < n_layers - 1 else torch.tanh(h)
    return h


def _uniform_ball(n_runs: int, m: int, d: int, generator: torch.Generator) -> torch.Tensor:
    g = torch.randn(n_runs, m, d, generator=generator, dtype=torch.float64)
    g = g / g.norm(dim=-1, keepdim=True)
    return g * torch.rand(n_runs, m, 1, generator=generator, dtype=torch.float64) ** (1.0 / d)


def bernoulli_kl(a: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """``E_y[l(p; y)] - E_y[l(a; y)]`` for the logistic loss when ``P(y = 1) = sigmoid(a)``, elementwise.

    This is the Kullback-Leibler divergence of Bernoulli(sigmoid(a)) from Bernoulli(sigmoid(p)): it is
    non-negative and zero only at ``p = a``. With ``a = u*^T x`` it is the population excess risk of the
    prediction ``p`` at ``x`` over the Bayes-optimal (and best linear) predictor ``u*``.
    """
    if not isinstance(a, torch.Tensor) or not isinstance(p, torch.Tensor):
        raise TypeError("a and p must be torch tensors")
    q = torch.sigmoid(a)
    sp_ = torch.nn.functional.softplus
    return q * (sp_(-p) - sp_(-a)) + (1 - q) * (sp_(p) - sp_(a))


def _theorem_4_ball(radius, u_norm, comparator_outside: bool) -> tuple[float, float]:
    """The ball's radius and ``|u*|``, checked: ``u*`` in the ball unless the run is meant to leave it."""
    radius = validate.positive_float("radius", radius)
    u_norm = validate.positive_float("u_norm", u_norm)
    if u_norm > radius and comparator_outside is not True:
        raise ValueError(
            f"u_norm must be at most radius (the comparator must lie in the ball), got {u_norm}; "
            "pass comparator_outside=True for a run Theorem 4 does not cover"
        )
    return radius, u_norm


def _theorem_4_step(w, second, theta, grads, eta: float, radius: float, theta_lr: float) -> None:
    """One step of Theorem 4's procedure, in place: ``(w, second)`` by ``eta`` and then projected onto the ball
    of ``radius`` (every run at once), ``theta`` by ``theta_lr``, unprojected."""
    with torch.no_grad():
        w -= eta * grads[0]
        second -= eta * grads[1]
        norm = torch.sqrt((w**2).sum(1) + (second**2).flatten(1).sum(1))
        shrink = torch.clamp(radius / norm.clamp_min(1e-300), max=1.0)
        w *= shrink[:, None]
        second *= shrink.view(-1, *([1] * (second.ndim - 1)))
        for p_, g_ in zip(theta, grads[2:]):
            p_ -= theta_lr * g_


def _theorem_4_gaps(excess: torch.Tensor, excess_var: torch.Tensor) -> dict:
    """The average excess risk of the iterates up to ``T = 8, 16, ...`` (at most the run's steps), per run, with
    its standard error from the fresh-input estimates."""
    steps = excess.shape[1]
    horizons = 2 ** np.arange(3, int(math.log2(steps)) + 1)
    counts = torch.arange(1, steps + 1, dtype=torch.float64)
    avg = (torch.cumsum(excess, dim=1) / counts).numpy()
    avg_se = (torch.sqrt(torch.cumsum(excess_var, dim=1)) / counts).numpy()
    return {
        "horizons": horizons,
        "excess": excess.numpy(),
        "gap": avg[:, horizons - 1],
        "gap_standard_error": avg_se[:, horizons - 1],
    }


def theorem_4_rates(
    steps: int,
    n_runs: int,
    seed: int = 0,
    *,
    architecture: str = "output skip",
    d: int = THEOREM_4["d"],
    k: int = THEOREM_4["k"],
    width: int = THEOREM_4["width"],
    depth: int = THEOREM_4["depth"],
    radius: float = THEOREM_4["radius"],
    u_norm: float = THEOREM_4["u_norm"],
    lr_theta: float = 0.05,
    n_fresh: int = THEOREM_4["n_fresh"],
    step_exponent: float = 0.5,
    comparator_outside: bool = False,
    plateau_after: int | None = None,
) -> dict:
    """Projected SGD (Theorem 4's procedure) for ``n_runs`` independent runs at once, and its exact-in-y gap.

    Data: :class:`LogisticLinearSource` with ``u* = u_norm (1, ..., 1)/sqrt(d)``; ``u*`` is the population
    minimiser of ``F_lin`` (the logistic loss is proper and the Bayes predictor is linear), so the best
    linear predictor is known exactly. Each run draws its own sample stream and its own ``f_theta``.
    Steps: ``(w, v)`` (or ``(w, V)`` for ``architecture="original"``) take ``eta_t = D / (G t^s)`` with
    ``D = 2 radius``, ``G = sqrt(1 + k)``, ``s = step_exponent`` (the theorem's ``s = 1/2``), then are
    projected onto the ball of ``radius``; ``theta`` takes ``lr_theta / sqrt(t)``, unprojected. With
    ``plateau_after = t0`` the step stops shrinking at ``t0``: ``eta_t = D / (G min(t, t0)^s)``, a schedule
    the theorem does not cover.

    Before every step the population excess risk of the current iterate, ``E_x KL(...)`` (see
    :func:`bernoulli_kl`), is estimated on ``n_fresh`` fresh inputs per run (exact over ``y``, unbiased over
    ``x``). Returns ``excess`` (runs, steps), ``gap`` (runs, horizons): the average excess risk of the
    iterates up to ``T`` for ``T = 8, 16, ..., <= steps``, its ``gap_standard_error`` from the fresh-input
    sampling, and the constants ``radius``, ``lipschitz``, ``loss_bound`` (``log(1 + e^{radius G})``, the
    largest loss on the ball) and ``loss_range`` (``radius G``: on ``|p| <= radius G`` the logistic loss
    spans ``log(1 + e^{bG}) - log(1 + e^{-bG}) = bG``; the gap does not change when a constant is
    subtracted from the loss, so Theorem 4 applies with ``r`` the half-range and Hoeffding needs the range).

    The gap is always measured against ``F_lin(u*)``. With ``radius < u_norm`` (allowed only with
    ``comparator_outside=True``) ``u*`` lies outside the ball, so that is not Theorem 4's comparator
    ``min_{|u| <= radius} F_lin(u)``: a run the theorem does not cover (a negative control).
    """
    steps = validate.integer("steps", steps, minimum=16)
    n_runs = validate.positive_int("n_runs", n_runs)
    seed = _seed(seed)
    if architecture not in ("output skip", "original"):
        raise ValueError(f"architecture must be 'output skip' or 'original', got {architecture!r}")
    for name, val in (("d", d), ("k", k), ("width", width), ("depth", depth), ("n_fresh", n_fresh)):
        validate.positive_int(name, val)
    validate.check_budget("(steps, n_runs)", steps * n_runs, validate.LOOP_LIMIT, what="steps", value=(steps, n_runs))
    validate.check_budget("n_fresh", 8.0 * 4 * n_fresh * (d + 2), validate.memory_limit_bytes(), value=n_fresh)
    radius, u_norm = _theorem_4_ball(radius, u_norm, comparator_outside)
    lr_theta = validate.non_negative_float("lr_theta", lr_theta)
    step_exponent = validate.positive_float("step_exponent", step_exponent)
    plateau = math.inf if plateau_after is None else validate.positive_int("plateau_after", plateau_after)
    gen = torch.Generator().manual_seed(seed)
    u_star = torch.full((d,), u_norm / math.sqrt(d), dtype=torch.float64)
    theta = _batched_mlp(n_runs, [d] + [width] * (depth - 1) + [k], gen)
    w = torch.zeros(n_runs, d, dtype=torch.float64, requires_grad=True)
    second = (
        torch.zeros(n_runs, k, dtype=torch.float64)
        if architecture == "output skip"
        else torch.zeros(n_runs, d, k, dtype=torch.float64)
    ).requires_grad_(True)

    def predict(X):
        Z = _batched_features(theta, X)
        if architecture == "output skip":
            return (X @ w[:, :, None] + Z @ second[:, :, None])[..., 0]
        return ((X + Z @ second.transpose(1, 2)) @ w[:, :, None])[..., 0]

    G = math.sqrt(1 + k)
    X_train = _uniform_ball(n_runs, steps, d, gen)
    y_train = torch.where(
        torch.rand(n_runs, steps, generator=gen, dtype=torch.float64) < torch.sigmoid(X_train @ u_star), 1.0, -1.0
    ).to(torch.float64)
    excess = torch.empty(n_runs, steps, dtype=torch.float64)
    excess_var = torch.empty(n_runs, steps, dtype=torch.float64)
    for t in range(steps):
        with torch.no_grad():
            Xf = _uniform_ball(n_runs, n_fresh, d, gen)
            kl = bernoulli_kl(Xf @ u_star, predict(Xf))
            excess[:, t] = kl.mean(dim=1)
            excess_var[:, t] = kl.var(dim=1) / n_fresh
        p = predict(X_train[:, t : t + 1])[:, 0]
        loss = torch.nn.functional.softplus(-y_train[:, t] * p).sum()
        grads = torch.autograd.grad(loss, [w, second] + theta)
        eta = 2 * radius / (G * min(t + 1, plateau) ** step_exponent)
        _theorem_4_step(w, second, theta, grads, eta, radius, lr_theta / math.sqrt(t + 1))
    return {
        **_theorem_4_gaps(excess, excess_var),
        "radius": radius,
        "lipschitz": G,
        "loss_bound": math.log1p(math.exp(radius * G)),
        "loss_range": radius * G,
        "u_norm": u_norm,
        "architecture": architecture,
        "step_exponent": step_exponent,
        "plateau_after": plateau_after,
    }


def rate_exponents(horizons, gaps, t_min: int) -> np.ndarray:
    """The least-squares slope of ``log gap`` against ``log T`` over ``T >= t_min``, one per run (row)."""
    horizons = validate.finite_array("horizons", horizons, ndim=1, positive=True)
    gaps = np.atleast_2d(validate.finite_array("gaps", gaps))
    t_min = validate.integer("t_min", t_min, minimum=1)
    if gaps.shape[1] != horizons.size:
        raise ValueError(f"gaps must have one column per horizon ({horizons.size}), got shape {gaps.shape}")
    keep = horizons >= t_min
    if keep.sum() < 2:
        raise ValueError(f"need at least two horizons >= t_min = {t_min}")
    return np.array([fit_power_law(horizons[keep], row)[0] for row in gaps[:, keep]])
