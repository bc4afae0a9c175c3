"""Tests for resnet_theory.smooth: the same checks as book/smooth_maps.md, plus bad inputs."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from resnet_theory import smooth as S
from resnet_theory.checks import compare_gradients, compare_hessians, sympy_derivatives
from resnet_theory.plotting import fit_power_law

torch.set_num_threads(1)
FEW = settings(max_examples=12, deadline=None)
DT = torch.float64


def _points(n, dim, radius=1.0, seed=123):
    return S.ball_points(n, dim, radius, torch.Generator().manual_seed(seed))


# --- the composition equals h ------------------------------------------------------------------------
@FEW
@given(name=st.sampled_from(S.EXAMPLE_MAPS), dim=st.integers(1, 4), m=st.integers(1, 6),
       spacing=st.sampled_from(S.SPACINGS), linear=st.sampled_from(S.LINEAR_METHODS),
       seed=st.integers(0, 1000), radius=st.sampled_from([0.5, 1.0, 1.5]))
def test_composition_equals_h(name, dim, m, spacing, linear, seed, radius):
    if name == "swirl":
        dim = 2
    h = S.example_map(name, dim, seed=seed)
    factors = S.near_identity_factors(h, m, dim, radius, spacing=spacing, linear=linear, seed=seed)
    assert len(factors) == m
    x = _points(64, dim, radius, seed)
    with torch.no_grad():
        err = (S.compose(factors, x) - h(x)).abs().max().item()
    assert err < 1e-6


def test_composition_with_explicit_scales_and_first_layer_is_rescaled_map():
    h = S.example_map("swirl", 2, seed=3)
    scales = np.array([0.0, 0.1, 0.35, 0.7, 1.0])
    factors = S.near_identity_factors(h, 4, 2, spacing=scales, linear="logarithm")
    x = _points(50, 2)
    assert (S.compose(factors, x) - h(x)).abs().max().item() < 1e-6
    # with the logarithm split, h_1(x) = B_1 g(a_1 x)/a_1 where g = A^{-1}(h - h(0))
    A = S.batch_jacobian(h, torch.zeros(1, 2, dtype=DT))[0]
    layers, _ = S.linear_near_identity_factors(A.numpy(), 4, "logarithm")
    B1 = torch.eye(2, dtype=DT) + torch.as_tensor(layers[0])
    g = (h(0.1 * x) - h(torch.zeros(1, 2, dtype=DT))) @ torch.linalg.inv(A).T / 0.1
    assert torch.allclose(factors[0](x), g @ B1.T, atol=1e-12)


def test_factors_are_near_identity_and_get_closer_with_depth():
    h = S.example_map("sine-shear", 2, seed=0)
    x = _points(200, 2)
    moves = []
    for m in (2, 8):
        factors = S.near_identity_factors(h, m, 2, linear="logarithm")
        z, worst = x, 0.0
        for f in factors:
            z_new = f(z)
            move = z_new - z          # the last layer also shifts by h(0): compare moves between points
            worst = max(worst, (move - move[:1]).norm(dim=1).max().item())
            z = z_new
        moves.append(worst)
    assert moves[1] < moves[0] / 2


# --- Lipschitz estimates against maps with known constants ----------------------------------------------
@FEW
@given(dim=st.integers(1, 4), out=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_lipschitz_of_linear_maps(dim, out, seed):
    M = torch.randn(out, dim, dtype=DT, generator=torch.Generator().manual_seed(seed))
    estimate = S.lipschitz_constant(lambda x: x @ M.T, dim, 1.0, n_points=32, refine_steps=3)
    assert estimate == pytest.approx(float(torch.linalg.matrix_norm(M, ord=2)), rel=1e-10)


@FEW
@given(c=st.floats(0.1, 5.0), dim=st.integers(1, 3), seed=st.integers(0, 10_000))
def test_lipschitz_of_scaled_tanh(c, dim, seed):
    W = torch.randn(dim, dim, dtype=DT, generator=torch.Generator().manual_seed(seed))
    # sup over the ball of ||c diag(sech^2(W x)) W|| is attained at x = 0 and equals c ||W||
    estimate = S.lipschitz_constant(lambda x: c * torch.tanh(x @ W.T), dim, 1.0, n_points=64)
    assert estimate == pytest.approx(c * float(torch.linalg.matrix_norm(W, ord=2)), rel=1e-10)


def test_lipschitz_maximum_on_the_boundary_is_found():
    # tanh(x - 2) on [-0.5, 0.5]: the slope sech^2 grows towards x = 0.5, its maximum is sech^2(1.5)
    estimate = S.lipschitz_constant(lambda x: torch.tanh(x - 2.0), 1, 0.5, n_points=16)
    assert estimate == pytest.approx(1 / math.cosh(1.5) ** 2, rel=1e-9)


def test_lipschitz_ascent_improves_on_sampling_and_stays_below_the_certificate():
    gen = torch.Generator().manual_seed(5)
    block = S.random_residual_blocks(1, 3, 8, 0.7, gen)[0]
    details = S.lipschitz_constant(lambda x: block(x) - x, 3, 2.0, n_points=64, n_refine=8, refine_steps=40,
                                   return_details=True)
    assert details.value >= details.sampled
    assert details.value <= S.residual_block_lipschitz_bound(block.W1, block.W2) * (1 + 1e-12)
    assert np.linalg.norm(details.point) <= 2.0 + 1e-12


def test_factor_deviations_match_lipschitz_estimates_of_the_factors():
    h = S.example_map("swirl", 2, seed=1)
    m = 3
    factors = S.near_identity_factors(h, m, 2, linear="logarithm")
    deviations = S.factor_deviations(h, m, 2, linear="logarithm")
    # layer 1 acts on the ball itself: the two estimates agree
    first = S.lipschitz_constant(lambda y: factors[0](y) - y, 2, 1.0, n_points=256)
    assert deviations[0] == pytest.approx(first, rel=2e-3)
    # later layers: the ball covering the layer's input set contains it, so its estimate is at least ours
    x = _points(2000, 2)
    z = x
    for i in range(1, m):
        z = factors[i - 1](z)
        radius = z.norm(dim=1).max().item()
        covering = S.lipschitz_constant(lambda y, f=factors[i]: f(y) - y, 2, radius, n_points=256)
        assert covering >= deviations[i] * (1 - 1e-3)


def test_rate_uniform_is_one_over_m_and_geometric_is_slower():
    h = S.example_map("swirl", 2, seed=1)
    ms = [4, 8, 16, 32]
    uniform = [S.factor_deviations(h, m, 2, linear="logarithm", n_points=256).max() for m in ms]
    geometric = [S.factor_deviations(h, m, 2, spacing="geometric", linear="logarithm", n_points=256).max()
                 for m in ms]
    slope_uniform, _ = fit_power_law(ms, uniform)
    slope_geometric, _ = fit_power_law(ms, geometric)
    assert slope_uniform < -0.9
    assert slope_geometric > slope_uniform + 0.2
    # geometric: eps m / log m stays bounded (log m / m); eps m grows
    assert geometric[-1] * ms[-1] > 1.5 * geometric[0] * ms[0]


def test_deviation_rates_and_alternating_split():
    rates = S.deviation_rates([("sine-shear", 1)], [4, 8], ["uniform", "equidistributed"], n_points=64)
    assert [r.spacing for r in rates] == ["uniform", "equidistributed"]
    for r in rates:
        assert r.slope == pytest.approx(fit_power_law(r.ms, r.eps)[0]) and r.label == "sine-shear, d=1"
    h = S.example_map("swirl", 2, seed=2)
    x = _points(40, 2)
    assert (S.compose(S.alternating_split(h, 5, 2), x) - h(x)).abs().max().item() < 1e-9
    stages = S.carry_grid(S.alternating_split(h, 3, 2), S.grid_lines(0.5, 3, 5))
    assert len(stages) == 4 and len(stages[0]) == 6 and stages[1][0].shape == (5, 2)


def test_equidistributed_scales_do_not_lose_to_uniform():
    h = S.example_map("swirl", 2, seed=1)
    a = S.equidistributed_scales(h, 12, 2, linear="logarithm")
    assert a[0] == 0 and a[-1] == 1 and np.all(np.diff(a) > 0)
    best = S.factor_deviations(h, 12, 2, spacing=a, linear="logarithm").max()
    uniform = S.factor_deviations(h, 12, 2, linear="logarithm").max()
    assert best <= uniform


# --- the linear part ---------------------------------------------------------------------------------
@FEW
@given(dim=st.integers(1, 4), depth=st.integers(1, 9), seed=st.integers(0, 10_000),
       method=st.sampled_from(S.LINEAR_METHODS))
def test_linear_factorisation_reproduces_R(dim, depth, seed, method):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((dim, dim))
    if np.linalg.det(R) < 0:
        R[0] *= -1
    A, _ = S.linear_near_identity_factors(R, depth, method)
    product = np.eye(dim)
    for layer in A:
        product = (np.eye(dim) + layer) @ product
    assert np.allclose(product, R, atol=1e-9)


def test_fallback_handles_negative_eigenvalues_and_half_turns():
    R = np.diag([-1.0, -2.0, 3.0])
    A, source = S.linear_near_identity_factors(R, 6, "logarithm")
    assert source == "polar fallback (no real logarithm)"
    assert S.linear_near_identity_factors(np.diag([2.0, 0.5]), 3, "logarithm")[1] == "principal logarithm"
    product = np.eye(3)
    for layer in A:
        product = (np.eye(3) + layer) @ product
    assert np.allclose(product, R, atol=1e-10)
    Q = np.diag([-1.0, -1.0, 1.0])
    L = S._orthogonal_log(Q)
    assert np.allclose(L, -L.T) and np.allclose(__import__("scipy.linalg").linalg.expm(L), Q, atol=1e-12)
    fallback = S._fallback_factorize(R, 7)
    assert np.max(np.linalg.norm(fallback, 2, axis=(1, 2))) < 1.5


def test_linear_layers_shrink_like_one_over_depth():
    R = np.array([[0.2, -1.0], [1.5, 0.3]])
    for method in S.LINEAR_METHODS:
        norms = [np.linalg.norm(S.linear_near_identity_factors(R, m, method)[0], 2, axis=(1, 2)).max()
                 for m in (8, 16, 32, 64)]
        slope, _ = fit_power_law([8, 16, 32, 64], norms)
        assert -1.1 < slope < -0.9


# --- the functional-gradient bound -------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 6), dim=st.integers(1, 4), eps=st.floats(0.02, 0.95), n_atoms=st.integers(2, 12),
       seed=st.integers(0, 10_000))
def test_functional_gradient_bound(m, dim, eps, n_atoms, seed):
    gen = torch.Generator().manual_seed(seed)
    blocks = S.random_residual_blocks(m, dim, 5, eps, gen)
    for block in blocks:
        assert S.residual_block_lipschitz_bound(block.W1, block.W2) == pytest.approx(eps, rel=1e-12)
    problem = S.random_empirical_problem(n_atoms, dim, gen)
    fg = S.functional_gradient(blocks, problem)
    assert fg.excess_risk == pytest.approx(fg.distance ** 2 / 2, rel=1e-9, abs=1e-14)
    assert np.all(fg.norms >= fg.printed_bound(eps) * (1 - 1e-9))
    assert np.all(fg.norms >= fg.sharper_bounds(eps) * (1 - 1e-9))
    for i in range(1, m + 1):
        assert np.allclose(S.functional_gradient_closed_form(blocks, problem, i), fg.gradients[i - 1],
                           atol=1e-12)


def test_functional_gradient_three_witnesses():
    gen = torch.Generator().manual_seed(11)
    blocks = S.random_residual_blocks(3, 2, 4, 0.5, gen)
    problem = S.random_empirical_problem(5, 2, gen)
    fg = S.functional_gradient(blocks, problem)
    for i in range(3):
        def q(flat, i=i):
            deltas = [torch.zeros_like(problem.atoms) for _ in blocks]
            deltas[i] = flat.reshape(problem.atoms.shape)
            return S.empirical_risk(blocks, problem, deltas)
        report = compare_gradients(q, [np.zeros(10)], closed_form={
            "closed form": lambda p, i=i: S.functional_gradient_closed_form(blocks, problem, i + 1).ravel()})
        assert report.check().holds, report.max_rel_error
        assert np.allclose(fg.gradients[i].ravel(),
                           S.functional_gradient_closed_form(blocks, problem, i + 1).ravel(), atol=1e-12)


# --- the negative result in parameter space ---------------------------------------------------------
def test_sigmoid_saddle_is_critical_not_minimal_and_target_realisable():
    import sympy as sp

    ex = S.sigmoid_saddle_example()
    assert float(ex.loss(ex.theta_star)) < 1e-30
    assert float(ex.loss(ex.theta_critical)) > 0.01
    symbols = sp.symbols("V1 V2 W1 W2 b1 b2")
    V, W, b = symbols[0:2], symbols[2:4], symbols[4:6]
    xs, ys = ex.x.numpy(), ex.y.numpy()
    expr = sum((float(x) + sum(V[k] / (1 + sp.exp(-(W[k] * float(x) + b[k]))) for k in range(2)) - float(y)) ** 2
               for x, y in zip(xs, ys)) / (2 * len(xs))
    sd = sympy_derivatives(expr, symbols, simplify=False)
    grads = compare_gradients(ex.loss, [ex.theta_critical], closed_form={"sympy": sd.gradient})
    assert grads.check().holds
    assert np.abs(sd.gradient(ex.theta_critical)).max() < 1e-14
    hess = compare_hessians(ex.loss, [ex.theta_critical], closed_form={"sympy": sd.hessian})
    assert hess.check().holds
    eig = np.linalg.eigvalsh(sd.hessian(ex.theta_critical))
    assert eig.min() < -1e-3          # a strict saddle: descent directions exist


# --- bad inputs --------------------------------------------------------------------------------------
def _good_h(x):
    return x + 0.1 * torch.sin(x)


@pytest.mark.parametrize("m", [0, -2, 1.5, True, "3"])
def test_near_identity_factors_rejects_bad_m(m):
    with pytest.raises(ValueError, match="m must"):
        S.near_identity_factors(_good_h, m, 2)


def test_near_identity_factors_rejects_bad_maps():
    with pytest.raises(ValueError, match="callable"):
        S.near_identity_factors("not a map", 3, 2)
    with pytest.raises(ValueError, match="expected"):
        S.near_identity_factors(lambda x: x[:, :1], 3, 2)
    with pytest.raises(ValueError, match="failed"):
        S.near_identity_factors(lambda x: x @ torch.ones(3, 3, dtype=DT), 3, 2)
    with pytest.raises(ValueError, match="determinant.*at the point"):
        S.near_identity_factors(lambda x: x * torch.tensor([1.0, -1.0], dtype=DT), 3, 2)
    # positive at the origin, not on the whole ball: the message names a point away from 0
    with pytest.raises(ValueError, match=r"at the point \[") as info:
        S.near_identity_factors(lambda x: x - x ** 3, 2, 1, domain_radius=1.0)
    assert "[0.0]" not in str(info.value)
    with pytest.raises(ValueError, match="domain_radius"):
        S.near_identity_factors(_good_h, 2, 2, domain_radius=-1.0)
    with pytest.raises(ValueError, match="dim"):
        S.near_identity_factors(_good_h, 2, 0)
    with pytest.raises(ValueError, match="spacing"):
        S.near_identity_factors(_good_h, 2, 2, spacing="random")
    with pytest.raises(ValueError, match="linear method"):
        S.near_identity_factors(_good_h, 2, 2, linear="qr")


def test_newton_failure_is_reported():
    h = torch.tanh                          # increasing, but its values never leave (-1, 1)
    factors = S.near_identity_factors(h, 2, 1, domain_radius=0.9)
    assert abs(S.compose(factors, torch.tensor([[0.5]], dtype=DT)).item() - h(torch.tensor(0.5, dtype=DT)).item()) < 1e-9
    with pytest.raises(S.NewtonConvergenceError, match="did not invert h at the target"):
        factors[1](torch.tensor([[5.0]], dtype=DT))
    with pytest.raises(ValueError, match="2-D"):
        S.newton_inverse(h, torch.tensor([1.0], dtype=DT))


def test_lipschitz_constant_rejects_bad_inputs():
    with pytest.raises(ValueError, match="callable"):
        S.lipschitz_constant(3.0, 2, 1.0)
    with pytest.raises(ValueError, match="dim"):
        S.lipschitz_constant(torch.sin, 0, 1.0)
    with pytest.raises(ValueError, match="domain_radius"):
        S.lipschitz_constant(torch.sin, 2, 0.0)
    with pytest.raises(ValueError, match="domain_radius"):
        S.lipschitz_constant(torch.sin, 2, float("nan"))
    with pytest.raises(ValueError, match="n_refine"):
        S.lipschitz_constant(torch.sin, 2, 1.0, n_refine=-1)
    with pytest.raises(ValueError, match="refine_steps"):
        S.lipschitz_constant(torch.sin, 2, 1.0, refine_steps=1.5)
    with pytest.raises(ValueError, match="n_points"):
        S.lipschitz_constant(torch.sin, 2, 1.0, n_points=0)
    with pytest.raises(ValueError, match="batch"):
        S.lipschitz_constant(lambda x: x.sum(), 2, 1.0)
    with pytest.raises(ValueError, match="failed"):
        S.lipschitz_constant(lambda x: x @ torch.ones(5, 5, dtype=DT), 2, 1.0)
    with pytest.raises(ValueError, match="lr"):
        S.lipschitz_constant(torch.sin, 2, 1.0, lr=-0.1)


def test_other_functions_reject_bad_inputs():
    with pytest.raises(ValueError, match="increasing"):
        S.scale_schedule(3, [0.0, 0.5, 0.4, 1.0])
    with pytest.raises(ValueError, match="m must"):
        S.scale_schedule(0)
    with pytest.raises(ValueError, match="unknown map"):
        S.example_map("banana", 2)
    with pytest.raises(ValueError, match="plane"):
        S.example_map("swirl", 3)
    with pytest.raises(ValueError, match="strength"):
        S.example_map("tanh-residual", 2, strength=1.2)
    with pytest.raises(ValueError, match="odd"):
        S.alternating_split(_good_h, 4, 2)
    with pytest.raises(ValueError, match="positive determinant"):
        S.linear_near_identity_factors(np.diag([1.0, -1.0]), 3)
    with pytest.raises(ValueError, match="square"):
        S.linear_near_identity_factors(np.ones((2, 3)), 3)
    with pytest.raises(ValueError, match="eps"):
        S.random_residual_blocks(2, 2, 3, 0.0)
    with pytest.raises(ValueError, match="W1"):
        S.residual_block_lipschitz_bound(np.ones((3, 2)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="at least one layer"):
        S.functional_gradient([], S.random_empirical_problem(3, 2))
    with pytest.raises(ValueError, match="EmpiricalProblem"):
        S.functional_gradient(S.random_residual_blocks(1, 2, 3, 0.5), "data")
    with pytest.raises(ValueError, match="layer index"):
        S.functional_gradient_closed_form(S.random_residual_blocks(2, 2, 3, 0.5), S.random_empirical_problem(3, 2), 3)
    with pytest.raises(ValueError, match="n_atoms"):
        S.random_empirical_problem(0, 2)
    with pytest.raises(ValueError, match="even"):
        S.sigmoid_saddle_example(n=7)
    with pytest.raises(ValueError, match="nonzero"):
        S.sigmoid_saddle_example(v=0.0)
    with pytest.raises(ValueError, match="two biases"):
        S.sigmoid_saddle_example(b=(0.1,))
    with pytest.raises(ValueError, match="2-D"):
        S.batch_jacobian(torch.sin, torch.zeros(3, dtype=DT))
    with pytest.raises(ValueError, match="n must"):
        S.ball_points(0, 2, 1.0)
    with pytest.raises(ValueError, match="at least one factor"):
        S.compose([], torch.zeros(1, 2, dtype=DT))
    with pytest.raises(ValueError, match="iterations"):
        S.equidistributed_scales(_good_h, 3, 2, iterations=0)
    with pytest.raises(ValueError, match="callable"):
        S.factor_deviations(None, 3, 2)
    with pytest.raises(ValueError, match="determinant"):
        S.check_positive_orientation(lambda x: -x, 1)
    with pytest.raises(ValueError, match="two depths"):
        S.deviation_rates([("swirl", 2)], [4])
    with pytest.raises(ValueError, match="unknown spacing"):
        S.deviation_rates([("swirl", 2)], [4, 8], ["random"])
    with pytest.raises(ValueError, match="half_width"):
        S.grid_lines(-1.0)
    with pytest.raises(ValueError, match="at least one factor"):
        S.carry_grid([], S.grid_lines())
    problem = S.random_empirical_problem(3, 2)
    with pytest.raises(ValueError, match="at least one layer"):
        S.empirical_risk([], problem)
    with pytest.raises(ValueError, match="one perturbation per layer"):
        S.empirical_risk(S.random_residual_blocks(2, 2, 3, 0.5), problem, [torch.zeros(3, 2, dtype=DT)])
