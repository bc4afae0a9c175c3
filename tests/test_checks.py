"""The three derivative witnesses: they agree on correct derivatives and expose a wrong closed form."""

import re

import numpy as np
import pytest
import sympy as sp
import torch

from resnet_theory.checks import (
    autograd_gradient,
    compare_gradients,
    compare_hessians,
    finite_difference_gradient,
    finite_difference_hessian,
    flatten,
    sympy_derivatives,
    unflatten,
)

x, y = sp.symbols("x y")
EXPR = sp.sin(x) * y**2 + sp.exp(x * y) / 3


def torch_f(v):
    return torch.sin(v[0]) * v[1] ** 2 + torch.exp(v[0] * v[1]) / 3


POINTS = [np.array([0.3, -0.7]), np.array([-1.2, 0.4]), np.array([0.0, 1.1])]


def test_sympy_autograd_and_finite_differences_agree_on_gradient_and_hessian():
    sd = sympy_derivatives(EXPR, (x, y))
    grad = compare_gradients(torch_f, POINTS, closed_form={"sympy": sd.gradient})
    hess = compare_hessians(torch_f, POINTS, closed_form={"sympy": sd.hessian})
    assert grad.check().holds and hess.check().holds
    assert grad.max_rel_error["sympy vs autograd"] < 1e-12
    assert set(grad.max_rel_error) == {
        "sympy vs autograd",
        "sympy vs finite differences",
        "autograd vs finite differences",
    }
    shown = grad._repr_html_()
    assert "book-table" in shown and '<td class="num">' in shown  # the book's one table helper
    assert not re.search(r"\de[-+]\d", shown), shown  # 1.2×10<sup>−9</sup>, never Python's 1.2e-09 (issue 33)
    assert "10<sup>\u2212" in shown
    # exact values against a hand derivation at one point
    px, py = POINTS[0]
    expected = [np.cos(px) * py**2 + py * np.exp(px * py) / 3, 2 * np.sin(px) * py + px * np.exp(px * py) / 3]
    np.testing.assert_allclose(autograd_gradient(torch_f, POINTS[0]), expected, rtol=1e-13)
    np.testing.assert_allclose(finite_difference_gradient(torch_f, POINTS[0]), expected, rtol=1e-7)
    np.testing.assert_allclose(
        finite_difference_hessian(torch_f, POINTS[0]), sd.hessian(POINTS[0]), rtol=1e-5, atol=1e-6
    )


def test_a_wrong_closed_form_is_caught():
    sd = sympy_derivatives(EXPR, (x, y))
    wrong = lambda v: sd.gradient(v) * np.array([1.0, 1.01])  # noqa: E731 - a 1% slip in one component
    report = compare_gradients(torch_f, POINTS, closed_form={"wrong": wrong})
    check = report.check("wrong gradient")
    assert not check.holds
    assert report.max_rel_error["autograd vs finite differences"] < 1e-6
    assert report.max_rel_error["wrong vs autograd"] > 1e-3
    bad_hessian = lambda v: sd.hessian(v).T + np.array([[0.0, 1e-3], [0.0, 0.0]])  # noqa: E731
    assert not compare_hessians(torch_f, POINTS, closed_form={"bad": bad_hessian}).check().holds


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="at least one point"):
        compare_gradients(torch_f, [])
    with pytest.raises(ValueError, match="at least one point"):
        compare_hessians(torch_f, [])
    with pytest.raises(ValueError, match="scalar"):
        autograd_gradient(lambda v: v * 2, POINTS[0])
    with pytest.raises(ValueError, match="shapes differ"):
        compare_gradients(torch_f, POINTS, closed_form={"short": lambda v: np.zeros(3)})
    with pytest.raises(ValueError, match="the shapes need"):
        unflatten(np.zeros(5), [(2, 2)])


POLY = 3 * x**3 * y - x * y**2 / 7 + 2 * y**4 + x - 5


def test_polynomial_differentiation_matches_sympy_diff_exactly():
    """``polynomial=True`` (``sympy.Poly``) gives the same exact gradient and Hessian as ``sympy.diff``."""
    plain = sympy_derivatives(POLY, (x, y), simplify=False)
    poly = sympy_derivatives(POLY, (x, y), simplify=False, polynomial=True)
    assert all(sp.expand(a - b) == 0 for a, b in zip(plain.gradient_exprs, poly.gradient_exprs))
    assert all(sp.expand(a - b) == 0 for a, b in zip(plain.hessian_exprs, poly.hessian_exprs))
    assert poly.gradient_exprs[0] == 9 * x**2 * y - y**2 / 7 + 1  # by hand
    assert poly.hessian_exprs[0, 1] == 9 * x**2 - 2 * y / 7
    for p in POINTS:
        np.testing.assert_allclose(poly.gradient(p), plain.gradient(p), rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(poly.hessian(p), plain.hessian(p), rtol=1e-14, atol=1e-14)
        assert poly.value(p) == plain.value(p)
    with pytest.raises(ValueError, match="needs a polynomial in the symbols"):
        sympy_derivatives(EXPR, (x, y), polynomial=True)


@pytest.mark.parametrize("polynomial", [False, True])
def test_gradient_only(polynomial):
    """``hessian=False`` builds no Hessian and refuses to evaluate one; the gradient is unchanged."""
    full = sympy_derivatives(POLY, (x, y), simplify=False, polynomial=polynomial)
    grad_only = sympy_derivatives(POLY, (x, y), simplify=False, hessian=False, polynomial=polynomial)
    assert grad_only.hessian_exprs is None
    assert grad_only.gradient_exprs == full.gradient_exprs
    assert np.array_equal(grad_only.gradient(POINTS[1]), full.gradient(POINTS[1]))
    with pytest.raises(ValueError, match="hessian=False"):
        grad_only.hessian(POINTS[1])


def test_symbolic_callables_refuse_bad_points():
    sd = sympy_derivatives(EXPR, (x, y))
    for fn in (sd.value, sd.gradient, sd.hessian):
        with pytest.raises(ValueError, match="2 entries, one per symbol"):
            fn(np.zeros(3))
        with pytest.raises(ValueError, match="x contains NaN or inf"):
            fn([float("nan"), 0.1])


def test_flatten_round_trip():
    arrays = [np.arange(6.0).reshape(2, 3), np.array([[7.0]])]
    back = unflatten(flatten(arrays), [(2, 3), (1, 1)])
    assert all(np.array_equal(a, b) for a, b in zip(arrays, back))


@pytest.mark.parametrize("call", [autograd_gradient, finite_difference_gradient, finite_difference_hessian])
def test_points_and_functions_follow_the_validation_rule(call):
    with pytest.raises(TypeError, match="x must be real, got complex"):
        call(torch_f, np.array([0.3 + 1j, 0.1]))  # was silently truncated to its real part
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        call(torch_f, [float("nan"), 0.1])
    with pytest.raises(TypeError, match="f must be a callable"):
        call("sin", POINTS[0])
    with pytest.raises(TypeError, match="x must be an array of numbers"):
        call(torch_f, "0.3, 0.1")


def test_finite_difference_steps_and_points_are_checked():
    with pytest.raises(ValueError, match="step must be > 0"):
        finite_difference_gradient(torch_f, POINTS[0], step=0.0)
    with pytest.raises(TypeError, match="step must be a real number"):
        finite_difference_hessian(torch_f, POINTS[0], step="1e-4")
    with pytest.raises(ValueError, match=r"points\[1\] contains NaN"):
        compare_gradients(torch_f, [POINTS[0], [np.inf, 0.0]])


@pytest.mark.parametrize("n, words", [(1, "1 point"), (2, "2 points"), (1500, "1,500 points")])
def test_a_witness_report_counts_its_points_in_words(n, words):
    from resnet_theory.checks import WitnessReport

    report = WitnessReport("gradient", n, {"a-b": 0.0}, {"a-b": 1e-12}, {"a-b": 1e-8})
    assert f"over {words}:" in report.check().summary
    assert report._repr_html_().startswith(f"<p>gradient at {words}</p>")
