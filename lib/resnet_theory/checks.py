"""Three independent witnesses for every derivative: SymPy (exact), torch autograd, finite differences.

Every chapter that states a gradient or a Hessian checks it here, on the same inputs, and reports the
largest disagreement between each pair of witnesses.

- :func:`sympy_derivatives` turns a SymPy expression into callables for its value, gradient and Hessian.
- :func:`autograd_gradient`, :func:`autograd_hessian`: torch autograd in float64.
- :func:`finite_difference_gradient`, :func:`finite_difference_hessian`: central differences.
- :func:`compare_gradients` and :func:`compare_hessians` run all three (or the two numerical ones plus
  any closed form the chapter supplies) at many points and return a :class:`WitnessReport`, whose
  :meth:`WitnessReport.check` is a :class:`resnet_theory.verdicts.Check` for the claims ledger.

Functions take one flat float64 vector of parameters; :func:`flatten` / :func:`unflatten` convert lists of
matrices to and from that vector.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import sympy as sp
import torch

from . import validate
from .verdicts import Check

Array = np.ndarray
TorchScalarFn = Callable[[torch.Tensor], torch.Tensor]


# --- parameter vectors ---------------------------------------------------------------------------
def flatten(arrays: Sequence[Array]) -> Array:
    """Concatenate arrays into one float64 vector."""
    return np.concatenate([np.asarray(a, dtype=np.float64).ravel() for a in arrays])


def unflatten(vector, shapes: Sequence[tuple[int, ...]]):
    """Split a flat vector (numpy or torch) back into arrays of the given shapes."""
    out, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape)) if len(shape) else 1
        out.append(vector[start : start + size].reshape(shape))
        start += size
    if start != len(vector):
        raise ValueError(f"vector has {len(vector)} entries, the shapes need {start}")
    return out


# --- SymPy ---------------------------------------------------------------------------------------
@dataclass
class SymbolicDerivatives:
    """A SymPy expression with its gradient and Hessian, exact and as numpy callables.

    Built with ``hessian=False``, ``hessian_exprs`` is ``None`` and ``hessian`` refuses to run."""

    expr: sp.Expr
    symbols: tuple
    gradient_exprs: sp.Matrix
    hessian_exprs: sp.Matrix | None
    value: Callable[[Array], float]
    gradient: Callable[[Array], Array]
    hessian: Callable[[Array], Array]


def sympy_derivatives(
    expr: sp.Expr, symbols: Sequence[sp.Symbol], simplify: bool = True, hessian: bool = True, polynomial: bool = False
) -> SymbolicDerivatives:
    """Differentiate ``expr`` exactly in ``symbols``; lambdify value, gradient and (unless ``hessian=False``) Hessian.

    With ``polynomial=True`` the expression must be a polynomial in ``symbols``; it is differentiated as one
    (``sympy.Poly``), much faster than ``sympy.diff`` term by term on a large expanded sum. The callables refuse
    a point that is not finite or does not hold one value per symbol; each is lambdified on its first call, with
    common subexpressions eliminated (the logistic Hessian of the Shamir chapter: 0.8 MB of source without, and
    ten seconds more to lambdify).
    """
    symbols = tuple(symbols)
    n = len(symbols)
    if polynomial:
        try:
            poly = sp.Poly(expr, *symbols)
        except sp.PolynomialError as exc:
            raise ValueError(f"polynomial=True needs a polynomial in the symbols: {exc}") from None
        first = [poly.diff(s) for s in symbols]
        grad = sp.Matrix([g.as_expr() for g in first])
        hess = sp.Matrix(n, n, lambda i, j: first[i].diff(symbols[j]).as_expr()) if hessian else None
    else:
        grad = sp.Matrix([sp.diff(expr, s) for s in symbols])
        hess = sp.hessian(expr, symbols) if hessian else None
    if simplify:
        grad = grad.applyfunc(sp.simplify)
        hess = hess.applyfunc(sp.simplify) if hessian else None
    compiled: dict[str, Callable] = {}

    def numeric(name: str, exprs) -> Callable:  # lambdifying an unused value or Hessian costs time for nothing
        if name not in compiled:
            compiled[name] = sp.lambdify(symbols, exprs, "numpy", cse=True)
        return compiled[name]

    def point(x) -> Array:
        x = validate.finite_array("x", x, allow_empty=True)
        if x.shape != (n,):
            raise ValueError(f"x must hold {n} entries, one per symbol, got shape {x.shape}")
        return x

    def value(x):
        return float(numeric("value", expr)(*point(x)))

    def gradient(x):
        return np.asarray(numeric("gradient", grad)(*point(x)), dtype=np.float64).reshape(-1)

    def hessian_at(x):
        if hess is None:
            raise ValueError("no Hessian: these derivatives were built with hessian=False")
        return np.asarray(numeric("hessian", hess)(*point(x)), dtype=np.float64).reshape(n, n)

    return SymbolicDerivatives(expr, symbols, grad, hess, value, gradient, hessian_at)


# --- autograd ------------------------------------------------------------------------------------
def _as_tensor(x) -> torch.Tensor:
    return torch.from_numpy(validate.finite_array("x", x, allow_empty=True))


def _scalar(f: TorchScalarFn, t: torch.Tensor) -> torch.Tensor:
    out = f(t)
    if out.numel() != 1:
        raise ValueError(f"the function must return a scalar, got shape {tuple(out.shape)}")
    return out.reshape(())


def autograd_gradient(f: TorchScalarFn, x) -> Array:
    """Gradient of a scalar torch function at ``x`` (float64)."""
    validate.callable_arg("f", f)
    t = _as_tensor(x).clone().requires_grad_(True)
    (g,) = torch.autograd.grad(_scalar(f, t), t)
    return g.detach().numpy()


def autograd_hessian(f: TorchScalarFn, x) -> Array:
    """Hessian of a scalar torch function at ``x`` (float64)."""
    validate.callable_arg("f", f)
    h = torch.autograd.functional.hessian(lambda t: _scalar(f, t), _as_tensor(x))
    return h.detach().numpy()


# --- finite differences --------------------------------------------------------------------------
def _value(f: TorchScalarFn, x: Array) -> float:
    """``f`` at a point derived from an ``x`` already checked by :func:`_difference_arguments`."""
    with torch.no_grad():
        return float(_scalar(f, torch.from_numpy(x)))


def _difference_arguments(f, x, step) -> tuple[Array, float]:
    validate.callable_arg("f", f)
    return validate.finite_array("x", x, allow_empty=True), validate.positive_float("step", step)


def finite_difference_gradient(f: TorchScalarFn, x, step: float = 1e-6) -> Array:
    """Central differences ``(f(x + h e_i) - f(x - h e_i)) / 2h`` with ``h = step * max(1, |x_i|)``."""
    x, step = _difference_arguments(f, x, step)
    g = np.empty_like(x)
    for i in range(x.size):
        h = step * max(1.0, abs(x[i]))
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (_value(f, x + e) - _value(f, x - e)) / (2 * h)
    return g


def finite_difference_hessian(f: TorchScalarFn, x, step: float = 1e-4) -> Array:
    """Central second differences of ``f`` itself (no autograd), symmetrised."""
    x, step = _difference_arguments(f, x, step)
    n = x.size
    H = np.empty((n, n))
    hs = step * np.maximum(1.0, np.abs(x))
    f0 = _value(f, x)
    for i in range(n):
        ei = np.zeros(n)
        ei[i] = hs[i]
        H[i, i] = (_value(f, x + ei) - 2 * f0 + _value(f, x - ei)) / hs[i] ** 2
        for j in range(i + 1, n):
            ej = np.zeros(n)
            ej[j] = hs[j]
            H[i, j] = H[j, i] = (
                _value(f, x + ei + ej) - _value(f, x + ei - ej) - _value(f, x - ei + ej) + _value(f, x - ei - ej)
            ) / (4 * hs[i] * hs[j])
    return H


# --- comparisons ---------------------------------------------------------------------------------
@dataclass
class WitnessReport:
    """Largest disagreement between each pair of witnesses over all points (relative to the scale)."""

    quantity: str
    points: int
    max_abs_error: dict = field(default_factory=dict)
    max_rel_error: dict = field(default_factory=dict)
    tolerances: dict = field(default_factory=dict)

    def check(self, what: str | None = None) -> Check:
        """A ledger check: every pair agrees within its tolerance."""
        pairs = sorted(self.max_rel_error)
        ok = all(self.max_rel_error[p] <= self.tolerances[p] for p in pairs)
        parts = ", ".join(f"{p} {self.max_rel_error[p]:.1e} (tol {self.tolerances[p]:.0e})" for p in pairs)
        return Check(
            ok,
            f"{what or self.quantity}: largest relative disagreement over {self._points()}: {parts}",
            {"points": self.points, **{f"rel_err[{p}]": v for p, v in self.max_rel_error.items()}},
        )

    def _repr_html_(self) -> str:
        """The book's table (:func:`resnet_theory.tables.html_table`): errors to 3 significant digits as a reader
        writes them (6.69×10⁻⁹, not Python's 6.69e-09), one row per pair of witnesses."""
        from .tables import html_table

        rows = [
            [p, self.max_abs_error[p], self.max_rel_error[p], self.tolerances[p],
             "yes" if self.max_rel_error[p] <= self.tolerances[p] else "NO"]
            for p in sorted(self.max_rel_error)
        ]  # fmt: skip
        headers = ["witnesses", "max abs error", "max rel error", "tolerance", "agree"]
        return f"<p>{html.escape(self.quantity)} at {self._points()}</p>" + html_table(headers, rows, digits=3)

    def _points(self) -> str:
        return f"{self.points:,} point" + ("" if self.points == 1 else "s")


def _compare(
    quantity: str, witnesses: dict[str, list[Array]], tolerances: dict[tuple[str, str], float]
) -> WitnessReport:
    names = list(witnesses)
    n_points = len(next(iter(witnesses.values())))
    report = WitnessReport(quantity, n_points)
    for a, b in itertools.combinations(names, 2):
        key = f"{a} vs {b}"
        abs_err, rel_err = 0.0, 0.0
        for va, vb in zip(witnesses[a], witnesses[b]):
            va, vb = np.asarray(va, dtype=float), np.asarray(vb, dtype=float)
            if va.shape != vb.shape:
                raise ValueError(f"{key}: shapes differ, {va.shape} vs {vb.shape}")
            err = float(np.max(np.abs(va - vb))) if va.size else 0.0
            scale = max(1.0, float(np.max(np.abs(vb))) if vb.size else 0.0)
            abs_err = max(abs_err, err if np.isfinite(err) else np.inf)
            rel_err = max(rel_err, err / scale if np.isfinite(err) else np.inf)
        report.max_abs_error[key] = abs_err
        report.max_rel_error[key] = rel_err
        tol = tolerances.get((a, b), tolerances.get((b, a)))
        report.tolerances[key] = tol
    return report


def _witness_report(
    quantity: str,
    caller: str,
    points: Sequence[Array],
    closed_form: dict[str, Callable[[Array], Array]],
    numerical: dict[str, Callable[[Array], Array]],
    flat: bool,
    exact_tol: float,
    fd_tol: float,
) -> WitnessReport:
    points = [validate.finite_array(f"points[{i}]", p, allow_empty=True) for i, p in enumerate(points)]
    if not points:
        raise ValueError(f"{caller} needs at least one point")
    shape = (lambda a: a.reshape(-1)) if flat else (lambda a: a)
    witnesses: dict[str, list[Array]] = {
        name: [shape(np.asarray(fn(p), dtype=float)) for p in points] for name, fn in closed_form.items()
    }
    for name, fn in numerical.items():
        witnesses[name] = [fn(p) for p in points]
    tolerances = {
        (a, b): fd_tol if "finite differences" in (a, b) else exact_tol for a, b in itertools.combinations(witnesses, 2)
    }
    return _compare(quantity, witnesses, tolerances)


def compare_gradients(
    f: TorchScalarFn,
    points: Sequence[Array],
    closed_form: dict[str, Callable[[Array], Array]] | None = None,
    fd_step: float = 1e-6,
    exact_tol: float = 1e-10,
    fd_tol: float = 1e-6,
    quantity: str = "gradient",
) -> WitnessReport:
    """Autograd, central differences and each closed form (e.g. ``{"sympy": sd.gradient}``) at every point.

    Exact witnesses (autograd and closed forms) must agree to ``exact_tol`` relative to the gradient's
    scale; finite differences to ``fd_tol``.
    """
    numerical = {
        "autograd": lambda p: autograd_gradient(f, p),
        "finite differences": lambda p: finite_difference_gradient(f, p, fd_step),
    }
    return _witness_report(quantity, "compare_gradients", points, closed_form or {}, numerical, True, exact_tol, fd_tol)


def compare_hessians(
    f: TorchScalarFn,
    points: Sequence[Array],
    closed_form: dict[str, Callable[[Array], Array]] | None = None,
    fd_step: float = 1e-4,
    exact_tol: float = 1e-10,
    fd_tol: float = 1e-5,
    quantity: str = "Hessian",
) -> WitnessReport:
    """Like :func:`compare_gradients` for Hessians (finite differences of ``f`` itself)."""
    numerical = {
        "autograd": lambda p: autograd_hessian(f, p),
        "finite differences": lambda p: finite_difference_hessian(f, p, fd_step),
    }
    return _witness_report(quantity, "compare_hessians", points, closed_form or {}, numerical, False, exact_tol, fd_tol)
