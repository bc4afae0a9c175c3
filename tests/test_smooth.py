"""Tests for resnet_theory.smooth: the same checks as book/smooth_maps.md, plus bad inputs."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory import smooth as S
from resnet_theory.checks import compare_gradients, compare_hessians, sympy_derivatives
from resnet_theory.fits import fit_power_law

torch.set_num_threads(1)
FEW = settings(max_examples=12, deadline=None)
DT = torch.float64


def _points(n, dim, radius=1.0, seed=123):
    return S.ball_points(n, dim, radius, torch.Generator().manual_seed(seed))


# --- the composition equals h ------------------------------------------------------------------------
@FEW
@given(
    name=st.sampled_from(S.EXAMPLE_MAPS),
    dim=st.integers(1, 4),
    m=st.integers(1, 6),
    spacing=st.sampled_from(S.SPACINGS),
    linear=st.sampled_from(S.LINEAR_METHODS),
    seed=st.integers(0, 1000),
    radius=st.sampled_from([0.5, 1.0, 1.5]),
)
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
            move = z_new - z  # the last layer also shifts by h(0): compare moves between points
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
    details = S.lipschitz_constant(
        lambda x: block(x) - x, 3, 2.0, n_points=64, n_refine=8, refine_steps=40, return_details=True
    )
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
    geometric = [S.factor_deviations(h, m, 2, spacing="geometric", linear="logarithm", n_points=256).max() for m in ms]
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
@given(
    dim=st.integers(1, 4),
    depth=st.integers(1, 9),
    seed=st.integers(0, 10_000),
    method=st.sampled_from(S.LINEAR_METHODS),
)
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
        norms = [
            np.linalg.norm(S.linear_near_identity_factors(R, m, method)[0], 2, axis=(1, 2)).max()
            for m in (8, 16, 32, 64)
        ]
        slope, _ = fit_power_law([8, 16, 32, 64], norms)
        assert -1.1 < slope < -0.9


# --- the functional-gradient bound -------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 6),
    dim=st.integers(1, 4),
    eps=st.floats(0.02, 0.95),
    n_atoms=st.integers(2, 12),
    seed=st.integers(0, 10_000),
)
def test_functional_gradient_bound(m, dim, eps, n_atoms, seed):
    gen = torch.Generator().manual_seed(seed)
    blocks = S.random_residual_blocks(m, dim, 5, eps, gen)
    for block in blocks:
        assert S.residual_block_lipschitz_bound(block.W1, block.W2) == pytest.approx(eps, rel=1e-12)
    problem = S.random_empirical_problem(n_atoms, dim, gen)
    fg = S.functional_gradient(blocks, problem)
    assert fg.excess_risk == pytest.approx(fg.distance**2 / 2, rel=1e-9, abs=1e-14)
    assert np.all(fg.norms >= fg.talk_bound(eps) * (1 - 1e-9))
    assert np.all(fg.norms >= fg.sharper_bounds(eps) * (1 - 1e-9))
    for i in range(1, m + 1):
        assert np.allclose(S.functional_gradient_closed_form(blocks, problem, i), fg.gradients[i - 1], atol=1e-12)


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

        report = compare_gradients(
            q,
            [np.zeros(10)],
            closed_form={
                "closed form": lambda p, i=i: S.functional_gradient_closed_form(blocks, problem, i + 1).ravel()
            },
        )
        assert report.check().holds, report.max_rel_error
        assert np.allclose(
            fg.gradients[i].ravel(), S.functional_gradient_closed_form(blocks, problem, i + 1).ravel(), atol=1e-12
        )


# --- the negative result in parameter space ---------------------------------------------------------
def test_sigmoid_saddle_is_critical_not_minimal_and_target_realisable():
    import sympy as sp

    ex = S.sigmoid_saddle_example()
    assert float(ex.loss(ex.theta_star)) < 1e-30
    assert float(ex.loss(ex.theta_critical)) > 0.01
    symbols = sp.symbols("V1 V2 W1 W2 b1 b2")
    V, W, b = symbols[0:2], symbols[2:4], symbols[4:6]
    xs, ys = ex.x.numpy(), ex.y.numpy()
    expr = sum(
        (float(x) + sum(V[k] / (1 + sp.exp(-(W[k] * float(x) + b[k]))) for k in range(2)) - float(y)) ** 2
        for x, y in zip(xs, ys)
    ) / (2 * len(xs))
    sd = sympy_derivatives(expr, symbols, simplify=False)
    grads = compare_gradients(ex.loss, [ex.theta_critical], closed_form={"sympy": sd.gradient})
    assert grads.check().holds
    assert np.abs(sd.gradient(ex.theta_critical)).max() < 1e-14
    hess = compare_hessians(ex.loss, [ex.theta_critical], closed_form={"sympy": sd.hessian})
    assert hess.check().holds
    eig = np.linalg.eigvalsh(sd.hessian(ex.theta_critical))
    assert eig.min() < -1e-3  # a strict saddle: descent directions exist


# --- bad inputs --------------------------------------------------------------------------------------
def _good_h(x):
    return x + 0.1 * torch.sin(x)


@pytest.mark.parametrize(
    "m,error",
    [
        (0, ValueError),
        (-2, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        ("3", TypeError),
        (np.float64(3.0), TypeError),
    ],
)
def test_near_identity_factors_rejects_bad_m(m, error):
    with pytest.raises(error, match="m must"):
        S.near_identity_factors(_good_h, m, 2)


def test_numpy_integers_are_accepted_as_m():
    assert len(S.near_identity_factors(_good_h, np.int64(2), 2)) == 2


@pytest.mark.parametrize("tol", [-1, 0.0, float("nan"), float("inf")])
def test_newton_tolerance_must_be_positive_and_finite(tol):
    with pytest.raises(ValueError, match=r"newton_tol must be"):
        S.near_identity_factors(_good_h, 2, 2, newton_tol=tol)
    with pytest.raises(ValueError, match=r"newton_tol must be"):
        S.alternating_split(_good_h, 3, 2, newton_tol=tol)
    with pytest.raises(ValueError, match=r"tol must be"):
        S.newton_inverse(_good_h, torch.zeros(1, 2, dtype=DT), tol=tol)


def test_nan_jacobian_is_a_clear_value_error():
    def hole(x):  # sqrt of |x|^2 has an infinite derivative... use a NaN-producing map instead
        return x * torch.sqrt(x[:, :1] - 2.0)

    with pytest.raises(ValueError, match="Jacobian is not finite"):
        S.lipschitz_constant(hole, 2, 1.0, n_points=8)


def test_near_identity_factors_rejects_bad_maps():
    with pytest.raises(TypeError, match="callable"):
        S.near_identity_factors("not a map", 3, 2)
    with pytest.raises(ValueError, match="expected"):
        S.near_identity_factors(lambda x: x[:, :1], 3, 2)
    with pytest.raises(ValueError, match="failed"):
        S.near_identity_factors(lambda x: x @ torch.ones(3, 3, dtype=DT), 3, 2)
    with pytest.raises(ValueError, match="determinant.*at the point"):
        S.near_identity_factors(lambda x: x * torch.tensor([1.0, -1.0], dtype=DT), 3, 2)
    # positive at the origin, not on the whole ball: the message names a point away from 0
    with pytest.raises(ValueError, match=r"at the point \[") as info:
        S.near_identity_factors(lambda x: x - x**3, 2, 1, domain_radius=1.0)
    assert "[0.0]" not in str(info.value)
    with pytest.raises(ValueError, match="domain_radius"):
        S.near_identity_factors(_good_h, 2, 2, domain_radius=-1.0)
    with pytest.raises(ValueError, match="dim"):
        S.near_identity_factors(_good_h, 2, 0)
    with pytest.raises(ValueError, match="spacing"):
        S.near_identity_factors(_good_h, 2, 2, spacing="random")
    with pytest.raises(ValueError, match="linear must be one of 'hardt-ma'"):
        S.near_identity_factors(_good_h, 2, 2, linear="qr")


def test_newton_failure_is_reported():
    h = torch.tanh  # increasing, but its values never leave (-1, 1)
    factors = S.near_identity_factors(h, 2, 1, domain_radius=0.9)
    assert (
        abs(S.compose(factors, torch.tensor([[0.5]], dtype=DT)).item() - h(torch.tensor(0.5, dtype=DT)).item()) < 1e-9
    )
    with pytest.raises(S.NewtonConvergenceError, match="did not invert h at the target"):
        factors[1](torch.tensor([[5.0]], dtype=DT))
    with pytest.raises(ValueError, match="2-D"):
        S.newton_inverse(h, torch.tensor([1.0], dtype=DT))


def test_lipschitz_constant_rejects_bad_inputs():
    with pytest.raises(TypeError, match="callable"):
        S.lipschitz_constant(3.0, 2, 1.0)
    with pytest.raises(ValueError, match="dim"):
        S.lipschitz_constant(torch.sin, 0, 1.0)
    with pytest.raises(ValueError, match="domain_radius"):
        S.lipschitz_constant(torch.sin, 2, 0.0)
    with pytest.raises(ValueError, match="domain_radius"):
        S.lipschitz_constant(torch.sin, 2, float("nan"))
    with pytest.raises(ValueError, match="n_refine"):
        S.lipschitz_constant(torch.sin, 2, 1.0, n_refine=-1)
    with pytest.raises(TypeError, match="refine_steps"):
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
    with pytest.raises(ValueError, match="name must be one of"):
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
    with pytest.raises(ValueError, match="i must be at most 2"):
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
    with pytest.raises(TypeError, match="callable"):
        S.factor_deviations(None, 3, 2)
    with pytest.raises(ValueError, match="determinant"):
        S.check_positive_orientation(lambda x: -x, 1)
    with pytest.raises(ValueError, match="two depths"):
        S.deviation_rates([("swirl", 2)], [4])
    with pytest.raises(ValueError, match="spacing must be one of"):
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


# --- certified upper bounds of ||h_i - Id||_L ----------------------------------------------------------
@FEW
@given(name=st.sampled_from(S.EXAMPLE_MAPS), dim=st.integers(1, 4), seed=st.integers(0, 1000))
def test_second_derivative_bound_dominates_differences_of_jacobians(name, dim, seed):
    # ||h'(x) - h'(y)|| <= sup ||h''|| |x - y| on a ball containing the segment
    dim = 2 if name == "swirl" else dim
    h = S.example_map(name, dim, seed=seed)
    x, y = _points(200, dim, 1.3, seed), _points(200, dim, 1.3, seed + 1)
    y = x + 0.05 * (y - x)
    radius = torch.maximum(x.norm(dim=1), y.norm(dim=1)).numpy()
    jump = torch.linalg.matrix_norm(S.batch_jacobian(h, x) - S.batch_jacobian(h, y), ord=2).numpy()
    assert np.all(jump <= h.second_derivative_bound(radius) * (x - y).norm(dim=1).numpy())


@pytest.mark.parametrize("name,dim", [("swirl", 2), ("sine-shear", 1), ("sine-shear", 3), ("tanh-residual", 2)])
@pytest.mark.parametrize("spacing", ["uniform", "geometric"])
def test_certified_bound_is_finite_and_above_sampled_estimates(name, dim, spacing):
    h = S.example_map(name, dim, seed=3)
    for m in (1, 3, 8):
        cert = S.certified_deviations(h, m, dim, spacing=spacing, linear="logarithm", grid_points=20000)
        lower = S.factor_deviations(h, m, dim, spacing=spacing, linear="logarithm", n_points=256)
        assert cert.bound.shape == (m,) and np.all(np.isfinite(cert.bound))
        assert np.all(cert.bound >= lower)


@FEW
@given(
    dim=st.integers(1, 4), seed=st.integers(0, 10_000), scale=st.sampled_from([1e-3, 1.0, 1e3]), rank_drop=st.booleans()
)
def test_singular_values_match_lapack(dim, seed, scale, rank_drop):
    M = scale * torch.randn(50, dim, dim, dtype=DT, generator=torch.Generator().manual_seed(seed))
    if rank_drop:  # exactly singular matrices: the smallest value is 0 up to rounding
        M[:, :, 0] = 0
    ours, lapack = S.singular_values(M), torch.linalg.svdvals(M)
    assert ours.shape == lapack.shape
    # relative to the largest singular value of each matrix
    assert torch.all((ours - lapack).abs() <= 1e-13 * lapack[:, :1])
    assert torch.all(ours[:, :-1] >= ours[:, 1:])


def test_singular_values_refuse_non_square_batches():
    with pytest.raises(ValueError, match="square"):
        S.singular_values(torch.zeros(3, 2, 3, dtype=DT))
    with pytest.raises(TypeError, match="torch tensor"):
        S.singular_values(np.eye(2))


@pytest.mark.parametrize("name,dim", [("swirl", 2), ("sine-shear", 1), ("sine-shear", 3), ("tanh-residual", 4)])
@pytest.mark.parametrize("spacing", ["uniform", "geometric"])
def test_certified_bound_skips_only_cells_that_cannot_attain_the_maximum(name, dim, spacing):
    h = S.example_map(name, dim, seed=5)
    for m in (1, 6):
        kwargs = dict(spacing=spacing, linear="logarithm", grid_points=3000)
        fast = S.certified_deviations(h, m, dim, **kwargs)
        every_cell = S.certified_deviations(h, m, dim, exhaustive=True, **kwargs)
        for field in ("bound", "grid_bound", "increment_bound"):
            a, b = getattr(fast, field), getattr(every_cell, field)
            assert np.all(np.abs(a - b) <= 1e-14 * b), field


def test_certified_bound_at_one_layer_dominates_the_known_lipschitz_constant():
    # m = 1: h_1 = h - h(0), so ||h_1 - Id||_L = max_{|x| <= 1} |h'(x) - 1| in one dimension,
    # which a dense grid gives to high accuracy
    h = S.example_map("sine-shear", 1, seed=0)
    x = torch.linspace(-1, 1, 200001, dtype=DT)[:, None]
    exact = float((S.batch_jacobian(h, x)[:, 0, 0] - 1).abs().max())
    cert = S.certified_deviations(h, 1, 1, linear="logarithm", grid_points=20000).bound[0]
    assert exact <= cert <= exact * (1 + 1e-3)
    # and above the sampled Lipschitz estimate of a residual map in the plane
    h2 = S.example_map("tanh-residual", 2, seed=1)
    sampled = S.lipschitz_constant(lambda y: h2(y) - y, 2, 1.0, n_points=512)
    assert S.certified_deviations(h2, 1, 2, grid_points=20000).bound[0] >= sampled


def test_certified_bound_is_exact_for_a_linear_map():
    M = torch.tensor([[1.3, 0.4], [-0.2, 0.8]], dtype=DT)

    def h(x):
        return x @ M.T + 0.1

    for m in (1, 4, 9):
        cert = S.certified_deviations(h, m, 2, linear="logarithm", second_derivative_bound=0.0)
        layers, _ = S.linear_near_identity_factors(M.numpy(), m, "logarithm")
        assert np.allclose(cert.bound, np.linalg.norm(layers, 2, axis=(1, 2)), rtol=1e-8)


@pytest.mark.parametrize("name,dim", [("swirl", 2), ("sine-shear", 3), ("tanh-residual", 4)])
def test_rate_certificate_holds_at_every_depth_tried(name, dim):
    h = S.example_map(name, dim, seed=0)
    cert = S.rate_certificate(h, dim, grid_points=20000)
    assert math.isfinite(cert.constant) and cert.constant > 0
    for m in (2, 5, 17):
        uniform = S.factor_deviations(h, m, dim, linear="logarithm", n_points=128)
        assert uniform.max() <= cert.bound(m) <= cert.constant / m * (1 + 1e-12)
        geometric = S.factor_deviations(h, m, dim, spacing="geometric", linear="logarithm", n_points=128)
        assert geometric.max() <= cert.bound(m, "geometric") <= cert.log_constant * math.log(m) / m


def test_certificates_refuse_what_they_cannot_certify():
    with pytest.raises(ValueError, match="second_derivative_bound"):
        S.certified_deviations(_good_h, 2, 2)
    with pytest.raises(ArithmeticError, match="grid too coarse"):
        S.certified_deviations(S.example_map("swirl", 2, strength=2.0), 8, 2, grid_points=16)
    with pytest.raises(ValueError, match="second_derivative_bound"):
        S.rate_certificate(_good_h, 2)
    with pytest.raises(ValueError, match="real logarithm"):
        S.rate_certificate(lambda x: -x, 2, second_derivative_bound=lambda r: 0 * r)
    with pytest.raises(ValueError, match="grid_points"):
        S.certified_deviations(S.example_map("swirl", 2), 2, 2, grid_points=0)


# --- the aligned construction and the SVD cancellation ------------------------------------------------
@FEW
@given(m=st.integers(2, 7), dim=st.integers(1, 4), eps=st.floats(0.05, 0.95), seed=st.integers(0, 1000))
def test_aligned_blocks_make_the_depth_factor_tight(m, dim, eps, seed):
    blocks = S.aligned_residual_blocks(m, dim, eps)
    for block in blocks:
        assert S.residual_block_lipschitz_bound(block.W1, block.W2) == pytest.approx(eps, rel=1e-12)
        assert torch.allclose(block.jacobian(torch.zeros(1, dim, dtype=DT))[0], (1 - eps) * torch.eye(dim, dtype=DT))
    problem = S.random_empirical_problem(6, dim, torch.Generator().manual_seed(seed), atom_scale=1e-3)
    fg = S.functional_gradient(blocks, problem)
    ratio = fg.norms / fg.sharper_bounds(eps)
    assert np.all(ratio >= 1 - 1e-12) and np.all(ratio <= 1 + 1e-4)
    # a bound one layer stronger fails at every inner layer
    assert np.all(fg.norms[:-1] < (1 - eps) ** (m - np.arange(1, m) - 1.0) * fg.distance)


def test_svd_cancellation_near_the_identity():
    G = np.random.default_rng(0).standard_normal((3, 3))
    G /= np.linalg.norm(G, 2)
    A = __import__("scipy.linalg").linalg.expm(0.01 * G)
    angles = S.svd_cancellation(A)
    assert angles["log_norm"] == pytest.approx(0.01, rel=1e-9)
    assert angles["angle_polar"] <= 0.01
    assert min(angles["angle_U"], angles["angle_V"]) > 1.0
    svd = np.linalg.norm(S.linear_near_identity_factors(A, 32, "hardt-ma")[0], 2, axis=(1, 2)).max()
    log = np.linalg.norm(S.linear_near_identity_factors(A, 32, "logarithm")[0], 2, axis=(1, 2)).max()
    assert svd > 100 * log


def test_new_helpers_reject_bad_inputs():
    with pytest.raises(ValueError, match="eps"):
        S.aligned_residual_blocks(3, 2, 1.0)
    with pytest.raises(ValueError, match="positive determinant"):
        S.svd_cancellation(np.diag([1.0, -1.0]))
    with pytest.raises(ValueError, match="atom_scale"):
        S.random_empirical_problem(3, 2, atom_scale=0.0)


@pytest.mark.parametrize(
    "spacing, exc, words",
    [
        ("random", ValueError, "spacing must be one of 'uniform', 'geometric', got 'random'"),
        ([0.0, 0.5, 0.5, 1.0], ValueError, "spacing must be increasing; found 0.5 then 0.5 at indices 1 and 2"),
        ([0.0, 0.5, 1.0], ValueError, r"spacing must have shape \(4,\), got shape \(3,\)"),
        ([0.1, 0.5, 0.7, 1.0], ValueError, "spacing .* must run from a_0 = 0 to a_m = 1, got 0.1 to 1.0"),
        ([0.0, 0.5, np.nan, 1.0], ValueError, "spacing contains NaN or inf"),
        ([0.0, 0.5 + 1j, 0.7, 1.0], TypeError, "spacing must be real, got complex"),  # was truncated silently
        (["0", "a", "b", "1"], TypeError, "spacing must hold numbers"),
    ],
)
def test_scale_schedule_follows_the_validation_rule(spacing, exc, words):
    with pytest.raises(exc, match=words):
        S.scale_schedule(3, spacing)


# --- maps the representation theorem rules out, and the evidence the rate claims are decided on -------
def test_ruled_out_maps_are_normalised_and_break_the_hypotheses():
    origin = torch.zeros(1, 2, dtype=DT)
    for name in S.RULED_OUT_MAPS:
        h = S.ruled_out_map(name)
        assert torch.allclose(h(origin), origin)
        assert torch.allclose(S.batch_jacobian(h, origin)[0], torch.eye(2, dtype=DT), atol=1e-15)
        S.check_positive_orientation(h, 2)  # det h' >= 0, so the construction accepts it
    holder = S.ruled_out_map("holder")
    quotients = [
        float(
            torch.linalg.matrix_norm(
                S.batch_jacobian(holder, torch.tensor([[r, 0.0]], dtype=DT))[0] - torch.eye(2, dtype=DT), ord=2
            )
        )
        / r
        for r in (1e-2, 1e-4, 1e-6)
    ]
    # ||h'(x) - I|| = 0.9 |x|^(1/2): the quotient by |x| grows like |x|^(-1/2), so h' is not Lipschitz
    assert quotients == pytest.approx([0.9 * r**-0.5 for r in (1e-2, 1e-4, 1e-6)], rel=1e-9)
    assert holder.second_derivative_bound(1.0) == math.inf
    cusp = S.ruled_out_map("cusp")
    J = S.batch_jacobian(cusp, torch.tensor([[0.6, 0.3]], dtype=DT))[0]
    assert float(S.singular_values(J[None])[0, -1]) < 1e-12  # g'(0.6) = 0: h^-1 is not Lipschitz
    t = torch.linspace(-1, 1, 401, dtype=DT)[:, None]
    assert torch.all(torch.diff(cusp(torch.cat([t, 0 * t], 1))[:, 0]) > 0)  # still injective


def test_ruled_out_map_rejects_bad_inputs():
    with pytest.raises(ValueError, match="name must be one of"):
        S.ruled_out_map("fold")
    with pytest.raises(ValueError, match="strength"):
        S.ruled_out_map("holder", strength=1.5)
    with pytest.raises(ValueError, match="strength"):
        S.ruled_out_map("cusp", strength=0.0)


@pytest.mark.parametrize("spacing", S.SPACINGS)
def test_representation_evidence_certifies_a_covered_map(spacing):
    h = S.example_map("sine-shear", 1, seed=2)
    ms = [4, 8, 16]
    e = S.representation_evidence(h, 1, ms, spacing, label="sine-shear", certify_points=2000, n_points=64)
    assert e.label == "sine-shear, d=1" and math.isfinite(e.constant) and e.reason == ""
    assert np.all(e.exact_errors < 1e-12)
    assert np.all(e.eps <= e.certified) and np.all(e.certified <= e.rate_bound())
    cert = S.rate_certificate(h, 1, grid_points=2000)
    shape = np.log(ms) / ms if spacing == "geometric" else 1.0 / np.array(ms)
    expected = cert.log_constant if spacing == "geometric" else cert.constant
    assert np.allclose(e.rate_bound(), expected * shape, rtol=1e-12)


def test_representation_evidence_finds_no_certificate_for_ruled_out_maps():
    ms = [4, 8, 16, 32]
    holder = S.representation_evidence(S.ruled_out_map("holder"), 2, ms, n_points=64, certify_points=2000)
    assert holder.constant == math.inf and np.all(np.isinf(holder.certified)) and "infinite" in holder.reason
    # our construction's first layer deviates like m^(-1/2): eps(m) = 0.45 (4/m)^(1/2), m eps(m) grows
    assert np.allclose(holder.eps, 0.45 * (4 / np.array(ms)) ** 0.5, rtol=1e-6)
    assert np.all(holder.exact_errors < 1e-12)
    cusp = S.representation_evidence(S.ruled_out_map("cusp"), 2, ms, n_points=64, certify_points=2000)
    assert cusp.constant == math.inf and "singular" in cusp.reason
    assert np.all(cusp.eps > 1)  # no layer set near the identity


def test_representation_evidence_rejects_bad_inputs():
    h = S.example_map("sine-shear", 1)
    with pytest.raises(ValueError, match="two depths"):
        S.representation_evidence(h, 1, [4])
    with pytest.raises(ValueError, match="spacing must be one of"):
        S.representation_evidence(h, 1, [4, 8], "equidistributed")
    with pytest.raises(ValueError, match="second_derivative_bound"):
        S.try_rate_certificate(_good_h, 2)


# --- the gradient bound inside and outside the theorem, and its SymPy witness -------------------------
def test_gradient_bound_instances_hold_inside_and_fail_outside_the_theorem():
    gen = torch.Generator().manual_seed(5)
    inside = S.gradient_bound_instances(150, gen)
    assert np.all(inside.ratios >= 2 * (1 - 1e-12))  # our derivation: a factor 2 to spare
    assert np.all((inside.eps > 0.02) & (inside.eps < 0.95)) and set(inside.depths) <= set(range(1, 9))
    outside = S.gradient_bound_instances(600, gen, eps_range=(1.0, 2.0), depths=(3, 5, 7))
    assert set(outside.depths) <= {3, 5, 7} and np.all(outside.eps > 1)
    assert np.any(outside.ratios < 1)  # eps > 1: the talk's bound fails somewhere


def test_gradient_bound_instances_reject_bad_inputs():
    with pytest.raises(ValueError, match="n must"):
        S.gradient_bound_instances(0)
    with pytest.raises(ValueError, match="eps_range"):
        S.gradient_bound_instances(3, eps_range=(0.5, 0.2))
    with pytest.raises(ValueError, match="at least one value"):
        S.gradient_bound_instances(3, depths=())


def test_functional_risk_sympy_matches_autograd():
    from resnet_theory.checks import sympy_derivatives as sdv

    gen = torch.Generator().manual_seed(4)
    blocks = S.random_residual_blocks(2, 2, 2, 0.5, gen)
    problem = S.random_empirical_problem(3, 2, gen)
    fg = S.functional_gradient(blocks, problem)
    for i in (1, 2):
        expr, symbols = S.functional_risk_sympy(blocks, problem, i)
        sd = sdv(expr, symbols, simplify=False, hessian=False)
        assert np.allclose(sd.gradient(np.zeros(len(symbols))), fg.gradients[i - 1].ravel(), atol=1e-14)
        assert float(sd.value(np.zeros(len(symbols)))) == pytest.approx(float(S.empirical_risk(blocks, problem)))
    with pytest.raises(ValueError, match="i must be at most 2"):
        S.functional_risk_sympy(blocks, problem, 3)


# --- parameter space: a saddle for symmetric data only, a strict local minimum on generic data ---------
def test_saddle_needs_exactly_symmetric_data():
    ex = S.sigmoid_saddle_example()
    x = ex.x.clone()
    x[0] += 1e-3
    moved = S.SigmoidSaddle(
        x, S.SigmoidSaddle.network(torch.as_tensor(ex.theta_star), x), ex.theta_star, ex.theta_critical
    )
    g = torch.func.grad(moved.loss)(torch.as_tensor(ex.theta_critical))
    assert float(g.norm()) > 1e-6 and float(moved.loss(ex.theta_star)) < 1e-30


@pytest.mark.parametrize("deviation", [0.02, 0.1, 0.5])
def test_sigmoid_local_minimum_is_strict_suboptimal_and_near_identity(deviation):
    import sympy as sp

    ex = S.sigmoid_local_minimum_example(deviation)
    theta = ex.theta_critical
    assert S.sigmoid_deviation_bound(theta) == pytest.approx(deviation, rel=1e-3)
    assert float(ex.loss(ex.theta_star)) < 1e-30
    assert float(ex.loss(theta)) > 1e-3 * float(ex.loss(np.concatenate([[0.0, 0.0], theta[2:]])))
    symbols = sp.symbols("V1 V2 W1 W2 b1 b2")
    V, W, b = symbols[0:2], symbols[2:4], symbols[4:6]
    expr = sum(
        (float(x) + sum(V[k] / (1 + sp.exp(-(W[k] * float(x) + b[k]))) for k in range(2)) - float(y)) ** 2
        for x, y in zip(ex.x.numpy(), ex.y.numpy())
    ) / (2 * len(ex.x))
    sd = sympy_derivatives(expr, symbols, simplify=False)
    scale = np.array([ex.output_scale] * 2 + [1.0] * 4)
    assert np.linalg.norm(sd.gradient(theta)) < 1e-14
    eig = np.linalg.eigvalsh(sd.hessian(theta) * np.outer(scale, scale)) / ex.output_scale**2
    # in (V/s, W, b) the Hessian is s^2 times the unscaled one: the same positive spectrum at every scale
    assert eig.min() > 1e-5 and eig.max() == pytest.approx(0.854, rel=1e-2)
    # the scaled problem's minimiser is the unscaled one with V -> s V
    base = S.sigmoid_local_minimum_example(1.0)
    assert np.allclose(theta[:2] / ex.output_scale, base.theta_critical[:2] / base.output_scale, rtol=1e-6)
    assert np.allclose(theta[2:], base.theta_critical[2:], rtol=1e-6)
    # the function-space derivative at the same map is far from zero at every layer
    n = len(ex.x)
    data = S.EmpiricalProblem(ex.x[:, None], torch.full((n,), 1 / n, dtype=DT), torch.arange(n), ex.y[:, None])
    fg = S.functional_gradient(S.near_identity_factors(ex.as_map(theta), 3, 1, linear="logarithm"), data)
    assert np.all(fg.norms >= 0.5 * fg.distance) and fg.distance > 0


def test_sigmoid_helpers_reject_bad_inputs():
    with pytest.raises(ValueError, match="deviation"):
        S.sigmoid_local_minimum_example(0.0)
    with pytest.raises(ValueError, match="theta"):
        S.sigmoid_deviation_bound([1.0, 2.0])
    with pytest.raises(ValueError, match="theta"):
        S.sigmoid_saddle_example().as_map([0.0] * 5)


@pytest.mark.parametrize(
    "name,dim", [("swirl", 2), ("sine-shear", 1), ("sine-shear", 3), ("tanh-residual", 4), ("holder", 2), ("cusp", 2)]
)
def test_sympy_map_is_an_exact_witness_of_the_jacobian(name, dim):
    h = S.ruled_out_map(name) if name in S.RULED_OUT_MAPS else S.example_map(name, dim, seed=7)
    components, symbols = S.sympy_map(h)
    assert len(components) == dim == len(symbols)
    points = [p[:dim] for p in (np.array([0.3, -0.4, 0.1, 0.2]), np.array([-0.6, 0.1, 0.25, -0.3]))]
    for k, component in enumerate(components):
        sd = sympy_derivatives(component, symbols, simplify=False, hessian=False)
        for p in points:
            assert float(sd.value(p)) == pytest.approx(float(h(torch.as_tensor(p)[None])[0, k]), abs=1e-13)
        report = compare_gradients(lambda p, k=k: h(p[None])[0, k], points, closed_form={"sympy": sd.gradient})
        assert report.check().holds, report.max_rel_error


def test_sympy_map_refuses_other_maps():
    with pytest.raises(ValueError, match="example_map or ruled_out_map"):
        S.sympy_map(_good_h)
