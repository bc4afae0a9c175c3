"""Tests for resnet_theory.shamir: Shamir (2018) as the review states it, checked numerically."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings, strategies as st

from resnet_theory import checks
from resnet_theory import shamir as S

torch.set_num_threads(1)
FEW = settings(max_examples=6, deadline=None)


# --- Example 1 -------------------------------------------------------------------------------------
def test_example1_review_formulas_match_sympy():
    sym = S.example1_symbolic()
    review = S.example1_review_formulas()
    w, v, eps = sym["symbols"]
    rw, rv, reps = review["symbols"]
    sub = {rw: w, rv: v, reps: eps}
    assert (sym["gradient"] - review["gradient"].subs(sub)).applyfunc(sp.simplify) == sp.zeros(2, 1)
    assert (sym["hessian"] - review["hessian"].subs(sub)).applyfunc(sp.simplify) == sp.zeros(2, 2)
    assert sp.simplify(sym["objective"] - (w * (1 + eps * v) - 1) ** 2 / 2) == 0


@pytest.mark.parametrize("eps", [1, 2, Fraction(1, 3), sp.Rational(1, 10), 0.1, 0.001, 7.5])
def test_example1_saddle_exact(eps):
    e = sp.Rational(repr(eps)) if isinstance(eps, float) else sp.Rational(eps)
    s = S.example1_saddle(eps)
    assert s["point"] == (0, -1 / e)
    assert s["value"] == sp.Rational(1, 2)
    assert s["gradient"] == sp.zeros(2, 1)
    assert s["hessian"] == sp.Matrix([[0, -e], [-e, 0]])
    assert s["eigenvalues"] == [-e, e]


@FEW
@given(st.fractions(min_value=Fraction(1, 1000), max_value=Fraction(100)))
def test_example1_saddle_exact_random(eps):
    e = sp.Rational(eps.numerator, eps.denominator)
    s = S.example1_saddle(eps)
    assert s["eigenvalues"] == [-e, e] and s["value"] == sp.Rational(1, 2)
    # |v| at the saddle is 1/eps: the norm blows up as eps shrinks
    assert abs(s["point"][1]) == 1 / e


def test_example1_three_witnesses():
    sym = S.example1_symbolic()
    w, v, eps = sym["symbols"]
    rng = np.random.default_rng(0)
    for e in (0.5, 1.0, 2.0):
        sd = checks.sympy_derivatives(sym["objective"].subs(eps, e), (w, v))
        pts = rng.uniform(-2, 2, size=(5, 2))
        f = S.example1_objective(e)
        assert checks.compare_gradients(f, pts, closed_form={"sympy": sd.gradient}).check().holds
        assert checks.compare_hessians(f, pts, closed_form={"sympy": sd.hessian}).check().holds


# --- landscapes ------------------------------------------------------------------------------------
def _independent_checks(eps, penalty, radius, minimum, rng):
    """Verify a reported minimum without the finder's own code: exact review formulas and a dense probe."""
    review = S.example1_review_formulas()
    w, v, e = review["symbols"]
    g = np.array(sp.lambdify((w, v, e), review["gradient"])(*minimum["point"], eps), dtype=float).ravel()
    g = g + penalty * minimum["point"]
    H = np.array(sp.lambdify((w, v, e), review["hessian"])(*minimum["point"], eps), dtype=float) + penalty * np.eye(2)
    z = minimum["point"]
    probe = z + rng.normal(size=(2000, 2)) * np.geomspace(1e-4, 3e-2, 2000)[:, None]
    if radius is None:
        assert np.linalg.norm(g) < 1e-7
        assert np.linalg.eigvalsh(H)[0] > -1e-7
    else:
        assert np.linalg.norm(z) <= radius * (1 + 1e-9)
        probe = probe[np.linalg.norm(probe, axis=1) <= radius]
    assert np.min(S.landscape_value(eps, penalty, probe[:, 0], probe[:, 1])) >= minimum["value"] - 1e-9
    assert S.landscape_value(eps, penalty, *z) == pytest.approx(minimum["value"], abs=1e-12)


def _grid_minimum(eps, penalty, radius, box=3.0, n=801):
    g = np.linspace(-box, box, n)
    W, V = np.meshgrid(g, g)
    F = S.landscape_value(eps, penalty, W, V)
    if radius is not None:
        F = np.where(W ** 2 + V ** 2 <= radius ** 2, F, np.inf)
    return float(F.min())


def test_penalised_landscape_has_the_spurious_minimum():
    rng = np.random.default_rng(1)
    minima = S.find_local_minima(1.0, penalty=0.25)
    assert len(minima) == 2
    good, spurious = minima
    assert np.allclose(spurious["point"], [-0.983, -1.603], atol=2e-3)
    assert spurious["value"] == pytest.approx(0.525, abs=1e-3)
    assert good["value"] == pytest.approx(_grid_minimum(1.0, 0.25, None), abs=1e-3)
    assert good["value"] <= _grid_minimum(1.0, 0.25, None) + 1e-12
    for m in minima:
        _independent_checks(1.0, 0.25, None, m, rng)


def test_ball_landscape_has_a_boundary_minimum_bottom_left():
    rng = np.random.default_rng(2)
    minima = S.find_local_minima(1.0, radius=2.0, details=True)
    assert minima[0]["value"] == pytest.approx(0.0, abs=1e-12)
    spurious = [m for m in minima if m["value"] > 1e-6]
    assert len(spurious) == 1
    m = spurious[0]
    assert m["on_boundary"] and m["multiplier"] > 0
    assert np.allclose(m["point"], [-1.0756, -1.6861], atol=1e-3)
    for m in minima:
        _independent_checks(1.0, 0.0, 2.0, m, rng)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 1e-3])
def test_saddle_is_never_reported(eps):
    saddle = np.array([0.0, -1.0 / eps])
    minima = S.find_local_minima(eps, n_starts=64, box=max(3.0, 1.5 / eps))
    assert minima and all(abs(m["value"]) < 1e-12 for m in minima)
    assert all(np.linalg.norm(m["point"] - saddle) > 1e-3 for m in minima)
    # the root finder does meet the saddle and classifies it as such
    cps = S.critical_points(eps, n_starts=64, box=max(3.0, 1.5 / eps))
    at_saddle = [c for c in cps if np.linalg.norm(c.point - saddle) < 1e-6]
    assert len(at_saddle) == 1 and at_saddle[0].kind == "saddle"
    assert at_saddle[0].min_curvature == pytest.approx(-eps, rel=1e-6)


def test_unpenalised_minima_lie_on_the_curve_of_zeros():
    for m in S.find_local_minima(1.5, n_starts=100):
        w, v = m["point"]
        assert w * (1 + 1.5 * v) == pytest.approx(1.0, abs=1e-7)


def test_strongly_convex_case_has_one_minimum():
    # penalty 10 dominates: a unique minimiser near the origin, where the gradient vanishes
    minima = S.find_local_minima(1.0, penalty=10.0, n_starts=36)
    assert len(minima) == 1
    assert minima[0]["value"] == pytest.approx(_grid_minimum(1.0, 10.0, None, box=1.0), abs=1e-4)


@FEW
@given(eps=st.floats(0.3, 3.0), penalty=st.floats(0.01, 1.0), use_ball=st.booleans(), radius=st.floats(0.5, 3.0))
def test_every_reported_minimum_is_verified(eps, penalty, use_ball, radius):
    rng = np.random.default_rng(3)
    r = radius if use_ball else None
    minima = S.find_local_minima(eps, penalty=penalty, radius=r, n_starts=100)
    assert minima
    values = [m["value"] for m in minima]
    assert values == sorted(values)
    for m in minima:
        _independent_checks(eps, penalty, r, m, rng)
    # the lowest reported minimum is the global one (within the grid's resolution)
    assert values[0] <= _grid_minimum(eps, penalty, r, n=401) + 1e-9


# --- the residual predictor, Theorems 1 and 2 -----------------------------------------------------
def test_residual_predictor_formula_and_derivatives():
    inst = S.random_theorem_instance(0, "squared")
    X, y, f, w, V = inst["X"], inst["y"], inst["f_theta"], inst["w"], inst["V"]
    p = S.residual_predictions(X, w, V, f)
    manual = np.array([w @ (x + V @ f(torch.as_tensor(x)[None])[0].detach().numpy()) for x in X.numpy()])
    assert np.allclose(p.numpy(), manual, atol=1e-12)
    assert S.residual_objective(X, y, w, V, f) == pytest.approx(float(np.mean((manual - y.numpy()) ** 2) / 2))
    assert S.residual_objective(X, y, w, np.zeros_like(V), f) == pytest.approx(S.linear_objective(X, y, w))
    der = S.objective_derivatives(X, y, w, V, f)
    z = np.concatenate([w, V.ravel()])
    assert checks.compare_gradients(der["function"], [z]).check().holds
    assert checks.compare_hessians(der["function"], [z]).check().holds
    assert np.allclose(der["gradient"], checks.finite_difference_gradient(der["function"], z), atol=1e-6)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_best_linear_predictor_is_stationary(loss):
    inst = S.random_theorem_instance(1, loss)
    X, y = inst["X"], inst["y"]
    best = S.best_linear_predictor(X, y, loss)
    f = lambda u: S.loss_values(X @ u, y, loss).mean()  # noqa: E731
    assert np.linalg.norm(checks.autograd_gradient(f, best["w"])) < 1e-7
    ball = S.best_linear_predictor(X, y, loss, radius=0.1)
    assert np.linalg.norm(ball["w"]) <= 0.1 + 1e-12
    assert ball["value"] >= best["value"] - 1e-12
    # on the boundary the gradient points inwards along -w (KKT with a non-negative multiplier)
    g = checks.autograd_gradient(f, ball["w"])
    assert np.linalg.norm(np.cross(np.append(g, 0)[:3], np.append(ball["w"], 0)[:3])) < 1e-5 * np.linalg.norm(g)
    assert g @ ball["w"] < 0


@FEW
@given(seed=st.integers(0, 10_000), loss=st.sampled_from(S.LOSSES))
def test_theorem1_holds_on_random_instances(seed, loss):
    inst = S.random_theorem_instance(seed, loss)
    sides = S.theorem1_sides(inst["X"], inst["y"], inst["w"], inst["V"], inst["f_theta"], inst["w_star"], loss)
    assert sides["lhs"] >= sides["rhs"] - 1e-12
    assert sides["rhs_frobenius"] <= sides["rhs"] + 1e-15 or sides["rhs"] <= 0


@FEW
@given(seed=st.integers(0, 10_000), loss=st.sampled_from(S.LOSSES))
def test_theorem2_holds_on_random_instances(seed, loss):
    inst = S.random_theorem_instance(seed, loss, w_zero=True)
    sides = S.theorem2_sides(inst["X"], inst["y"], inst["V"], inst["f_theta"], inst["w_star"], loss)
    assert sides["lambda_min"] <= 1e-12
    assert sides["lhs"] >= sides["rhs"] - 1e-12


def test_theorem1_adversarial_search_stays_above_one():
    inst = S.random_theorem_instance(5, "squared")
    res = S.theorem1_adversarial(inst["X"], inst["y"], inst["f_theta"], inst["w_star"], inst["w"], inst["V"],
                                 steps=60)
    start = S.theorem1_sides(inst["X"], inst["y"], inst["w"], inst["V"], inst["f_theta"], inst["w_star"])
    assert res["ratio"] >= 1.0
    assert res["ratio"] <= start["lhs"] / start["rhs"] + 1e-12


def test_example1_is_a_residual_instance():
    # Example 1 in the general code: d = k = 1, f(x) = eps x, x = y = 1; at the saddle F = 1/2 > F_lin(1) = 0
    eps = 0.25
    X, y = torch.ones(1, 1, dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    f = lambda x: eps * x  # noqa: E731
    sides = S.theorem2_sides(X, y, [[-1 / eps]], f, [1.0])
    assert sides["F"] == pytest.approx(0.5) and sides["F_lin"] == pytest.approx(0.0)
    assert sides["lambda_min"] == pytest.approx(-eps)
    assert sides["lhs"] >= sides["rhs"] - 1e-12


def test_theorem2_needs_the_norm_factor():
    # Example 1 at its saddle: with the factor |V| = 1/eps the bound holds; without it the left side is eps < 1/2
    X, y = torch.ones(1, 1, dtype=torch.float64), torch.ones(1, dtype=torch.float64)
    for eps in (0.4, 0.1, 0.01):
        s = S.theorem2_sides(X, y, [[-1 / eps]], lambda x, eps=eps: eps * x, [1.0])
        assert s["gradient_norm"] == pytest.approx(0.0, abs=1e-12)
        assert s["lhs"] >= s["rhs"]
        assert s["gradient_norm"] + s["curvature_term"] == pytest.approx(eps)
        assert s["gradient_norm"] + s["curvature_term"] < s["rhs"]


def test_minima_agree_with_the_classified_critical_points():
    for penalty, radius in ((0.25, None), (0.1, None), (0.0, 2.0), (0.0, 1.5)):
        found = S.find_local_minima(1.0, penalty, radius, n_starts=144)
        cps = [c for c in S.critical_points(1.0, penalty, radius, n_starts=144) if c.kind == "local minimum"]
        if penalty > 0:  # isolated minima: the two searches must find the same points
            assert len(found) == len(cps)
            for m in found:
                assert min(np.linalg.norm(m["point"] - c.point) for c in cps) < 1e-6
        else:  # on the ball: the spurious boundary minimum is met by both
            spurious = [m for m in found if m["value"] > 1e-9]
            assert spurious
            for m in spurious:
                assert min(np.linalg.norm(m["point"] - c.point) for c in cps) < 1e-6


def test_corollary1_on_a_local_minimum():
    inst = S.random_theorem_instance(2, "squared")
    m = S.minimize_residual_objective(inst["X"], inst["y"], inst["f_theta"], "squared", seed=0)
    assert m["gradient_norm"] < 1e-6 and m["lambda_min"] > -1e-8
    assert m["value"] <= S.best_linear_predictor(inst["X"], inst["y"])["value"] + 1e-9


# --- Theorem 4 -------------------------------------------------------------------------------------
def _theorem4_setup(arch, steps=300):
    d, k, b = 3, 2, 1.5
    u = np.array([1.0, -0.5, 0.3])
    model = arch(d, k, 8, 2, seed=0)
    G = math.sqrt(1 + k)
    run = S.projected_sgd(model, S.LogisticLinearSource(u, seed=1), steps, b, G)
    return model, run, b, G


def test_projected_sgd_stays_in_the_ball_and_meets_the_regret_bound():
    model, run, b, G = _theorem4_setup(S.OutputSkipNet)
    assert math.sqrt(float((model.w @ model.w + model.v @ model.v).detach())) <= b + 1e-12
    Ts = np.array([10, 50, 100, 300])
    regret = S.average_regret(run["X"], run["y"], run["online_losses"], b, Ts)
    assert np.all(regret <= 1.5 * 2 * b * G / np.sqrt(Ts))


def test_output_skip_net_is_linear_in_w_and_v():
    model = S.OutputSkipNet(3, 2, 8, 2, seed=0)
    X = torch.randn(7, 3, dtype=torch.float64)
    with torch.no_grad():
        model.w.copy_(torch.tensor([1.0, 2.0, 3.0]))
        model.v.copy_(torch.tensor([0.5, -1.0]))
        p1 = model(X)
        model.w.mul_(2)
        model.v.mul_(2)
        assert torch.allclose(model(X), 2 * p1)
        assert torch.allclose(p1, X @ torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
                              + model.f_theta(X) @ torch.tensor([0.5, -1.0], dtype=torch.float64))
    res = S.ResidualNet(3, 2, 8, 2, seed=0)
    assert torch.allclose(res(X), torch.zeros(7, dtype=torch.float64))


def test_theorem4_bound_decreases_like_one_over_root_T():
    T = np.array([1, 4, 16, 64])
    b = S.theorem4_bound(T, 1.0, 2.0, 3.0, 0.05)
    assert np.allclose(b * np.sqrt(T), b[0])


# --- the chapter's experiment helpers -------------------------------------------------------------
def test_survey_theorems_small():
    r = S.survey_theorems(3, seed=4)
    assert len(r["t1_lhs"]) == 6 and set(r["t1_loss"]) == set(S.LOSSES)
    assert np.all(r["t1_lhs"] >= r["t1_rhs"] - 1e-12) and np.all(r["t2_lhs"] >= r["t2_rhs"] - 1e-12)
    assert np.all(r["t2_lambda_min"] <= 1e-12)


def test_theorem4_experiment_small():
    e = S.theorem4_experiment(64, 1, d=3, k=2, width=4, depth=2, n_test=200)
    assert list(e["horizons"]) == [8, 16, 32, 64]
    for name in ("output skip", "original"):
        assert e[name]["gaps"].shape == (1, 4) and e[name]["regret"].shape == (1, 4)
    assert np.all(e["output skip"]["gaps"] <= e["bound"])


def test_logistic_loss_values():
    p = torch.tensor([-2.0, 0.0, 3.0], dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, -1.0], dtype=torch.float64)
    assert torch.allclose(S.loss_values(p, y, "logistic"), torch.log1p(torch.exp(-y * p)))


def test_landscape_panel():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    S.landscape_panel(ax, 1.0, 0.25, 2.0, S.find_local_minima(1.0, 0.25, n_starts=36), "test")
    assert ax.get_title() == "test" and len(ax.lines) >= 3


# --- bad inputs ------------------------------------------------------------------------------------
def _inst():
    return S.random_theorem_instance(0, "squared")


BAD = [
    (ValueError, lambda: S.example1_saddle(0)),
    (ValueError, lambda: S.example1_saddle(-1)),
    (ValueError, lambda: S.example1_saddle(float("nan"))),
    (TypeError, lambda: S.example1_saddle("one")),
    (ValueError, lambda: S.example1_objective(1.0, penalty=-1)),
    (ValueError, lambda: S.example1_objective(1.0)(torch.zeros(3, dtype=torch.float64))),
    (ValueError, lambda: S.find_local_minima(1.0, penalty=-0.1)),
    (ValueError, lambda: S.find_local_minima(1.0, radius=-1)),
    (ValueError, lambda: S.find_local_minima(1.0, radius=0)),
    (ValueError, lambda: S.find_local_minima(float("nan"))),
    (ValueError, lambda: S.find_local_minima(1.0, n_starts=2)),
    (TypeError, lambda: S.find_local_minima(1.0, n_starts=2.5)),
    (ValueError, lambda: S.find_local_minima(1.0, seed=-1)),
    (ValueError, lambda: S.critical_points(1.0, penalty=float("inf"))),
    (ValueError, lambda: S.landscape_value(1.0, 0.0, [1, 2], [1, 2, 3])),
    (ValueError, lambda: S.landscape_value(1.0, 0.0, [np.nan], [1])),
    (ValueError, lambda: S.residual_predictions(np.ones((4, 3)), np.ones(2), np.ones((3, 3)), lambda x: x)),
    (ValueError, lambda: S.residual_predictions(np.ones((4, 3)), np.ones(3), np.ones((3, 2)), lambda x: x)),
    (ValueError, lambda: S.residual_predictions(np.full((4, 3), np.nan), np.ones(3), np.ones((3, 3)), lambda x: x)),
    (ValueError, lambda: S.residual_predictions(np.ones(3), np.ones(3), np.ones((3, 3)), lambda x: x)),
    (TypeError, lambda: S.residual_predictions(np.ones((4, 3)), np.ones(3), np.ones((3, 3)), "not callable")),
    (ValueError, lambda: S.residual_predictions(np.ones((4, 3)), np.ones(3), np.ones((3, 3)), lambda x: x[:2])),
    (ValueError, lambda: S.residual_objective(np.ones((4, 3)), np.ones(5), np.ones(3), np.ones((3, 3)), lambda x: x)),
    (ValueError, lambda: S.residual_objective(np.ones((4, 3)), np.ones(4), np.ones(3), np.ones((3, 3)), lambda x: x,
                                              loss="hinge")),
    (ValueError, lambda: S.residual_objective(np.ones((4, 3)), np.zeros(4), np.ones(3), np.ones((3, 3)), lambda x: x,
                                              loss="logistic")),
    (ValueError, lambda: S.linear_objective(np.ones((4, 3)), np.ones(4), np.ones(2))),
    (ValueError, lambda: S.best_linear_predictor(np.ones((4, 3)), np.ones(4), radius=-1.0)),
    (ValueError, lambda: S.best_linear_predictor(np.array([[1.0], [-1.0]]), np.array([1.0, -1.0]), "logistic")),
    (ValueError, lambda: S.best_linear_predictor(np.zeros((0, 3)), np.zeros(0))),
    (TypeError, lambda: S.loss_values(np.ones(3), np.ones(3), "squared")),
    (ValueError, lambda: S.loss_values(torch.ones(3), torch.ones(2), "squared")),
    (ValueError, lambda: S.theorem1_sides(_inst()["X"], _inst()["y"], np.zeros(3), _inst()["V"], _inst()["f_theta"],
                                          _inst()["w_star"])),
    (ValueError, lambda: S.theorem1_sides(_inst()["X"], _inst()["y"], _inst()["w"], _inst()["V"], _inst()["f_theta"],
                                          np.ones(2))),
    (ValueError, lambda: S.theorem2_sides(_inst()["X"], _inst()["y"], _inst()["V"], _inst()["f_theta"], np.zeros(3))),
    (ValueError, lambda: S.objective_derivatives(_inst()["X"], _inst()["y"], _inst()["w"], np.ones((2, 3)),
                                                 _inst()["f_theta"])),
    (ValueError, lambda: S.random_theorem_instance(-1)),
    (ValueError, lambda: S.random_theorem_instance(0, "hinge")),
    (ValueError, lambda: S.random_theorem_instance(0, n=0)),
    (ValueError, lambda: S.random_mlp(3, 2, 4, 0, torch.Generator())),
    (TypeError, lambda: S.random_mlp(3, 2, 4, 2, generator=0)),
    (ValueError, lambda: S.random_mlp(3, 2, 4, 2, torch.Generator(), final="relu")),
    (ValueError, lambda: S.OutputSkipNet(0, 2, 4, 2)),
    (ValueError, lambda: S.ResidualNet(3, 2, 4, 2, seed=-3)),
    (ValueError, lambda: S.LogisticLinearSource([np.nan, 1.0])),
    (ValueError, lambda: S.LogisticLinearSource([1.0, 1.0]).sample(0)),
    (TypeError, lambda: S.projected_sgd(torch.nn.Linear(2, 1), S.LogisticLinearSource([1.0, 1.0]), 5, 1.0, 1.0)),
    (TypeError, lambda: S.projected_sgd(S.OutputSkipNet(2, 1, 4, 2), "source", 5, 1.0, 1.0)),
    (ValueError, lambda: S.projected_sgd(S.OutputSkipNet(2, 1, 4, 2), S.LogisticLinearSource([1.0, 1.0]), 5, -1.0,
                                         1.0)),
    (ValueError, lambda: S.projected_sgd(S.OutputSkipNet(2, 1, 4, 2), S.LogisticLinearSource([1.0, 1.0]), 5, 1.0,
                                         1.0, X_test=np.ones((3, 2)))),
    (ValueError, lambda: S.theorem4_bound([0, 1], 1.0, 1.0, 1.0, 0.05)),
    (ValueError, lambda: S.theorem4_bound([1, 2], 1.0, 1.0, 1.0, 1.5)),
    (ValueError, lambda: S.theorem4_bound([1, 2], 1.0, -1.0, 1.0, 0.5)),
    (ValueError, lambda: S.average_regret(np.ones((3, 2)), np.ones(3), np.ones(2), 1.0, [1])),
    (ValueError, lambda: S.average_regret(np.ones((3, 2)), np.ones(3), np.ones(3), 1.0, [4])),
    (ValueError, lambda: S.theorem1_adversarial(_inst()["X"], _inst()["y"], _inst()["f_theta"], _inst()["w_star"],
                                                _inst()["w"], _inst()["V"], steps=0)),
    (ValueError, lambda: S.minimize_residual_objective(_inst()["X"], _inst()["y"], _inst()["f_theta"], seed=-1)),
    (ValueError, lambda: S.survey_theorems(0)),
    (ValueError, lambda: S.survey_theorems(2, losses="squared")),
    (ValueError, lambda: S.survey_theorems(2, losses=["hinge"])),
    (ValueError, lambda: S.theorem4_experiment(8, 1)),
    (ValueError, lambda: S.theorem4_experiment(64, 0)),
    (ValueError, lambda: S.theorem4_experiment(64, 1, radius=-2.0)),
    (ValueError, lambda: S.landscape_panel(None, 1.0, 0.0, None, [], "x")),
    (ValueError, lambda: S.landscape_panel(None, -1.0, 0.0, None, [{"point": np.zeros(2), "value": 0.5}], "x")),
]


@pytest.mark.parametrize("error,call", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_inputs_raise_clear_errors(error, call):
    with pytest.raises(error):
        call()
