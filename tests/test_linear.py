"""Tests for resnet_theory.linear: Hardt & Ma Section 2 and Bartlett, Helmbold & Long (identity-initialised GD)."""

import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory import checks
from resnet_theory.linear import (
    _admissible_splits,
    best_factorization_in_ball,
    compose,
    critical_point_search,
    factorization_plan,
    factorize_near_identity,
    gamma,
    gradient_lower_bound,
    gradient_lower_bound_printed,
    identity_gd_steps_to,
    identity_init_gd,
    layer_norms,
    polar_split,
    random_layers_in_ball,
    random_matrix_with_gamma,
    random_rotation,
    random_theorem_2_1_target,
    risk,
    risk_by_quadrature,
    risk_gradient,
    risk_gradient_descent,
    risk_gradient_printed_order,
    rotation_root,
    sympy_risk,
    sympy_risk_gradient,
    theorem_2_1_bound,
    theorem_2_1_bound_early,
    theorem_2_1_bound_integer,
    theorem_2_1_min_depth,
    theorem_2_1_ratio,
    theorem_2_1_sweep,
    theorem_2_1_worst_ratio_search,
    torch_risk,
)

torch.set_num_threads(1)
FAST = settings(max_examples=25, deadline=None)


@st.composite
def oriented_matrices(draw, max_d=6, psd=None, min_d=1):
    """Random R with det R > 0: dimension, gamma (tiny to large), PSD or not (drawn unless ``psd`` is given)."""
    d = draw(st.integers(min_d, max_d))
    log_gamma = draw(st.floats(-7.0, 2.3))
    psd = draw(st.booleans()) if psd is None else psd
    seed = draw(st.integers(0, 2**32 - 1))
    return random_matrix_with_gamma(d, math.exp(log_gamma), seed=seed, psd=psd)


def rel_err(M, R):
    return np.linalg.norm(M - R) / np.linalg.norm(R)


# --- Theorem 2.1 --------------------------------------------------------------------------------
@FAST
@given(oriented_matrices(), st.integers(1, 400))
def test_product_equals_R(R, depth):
    A = factorize_near_identity(R, depth)
    assert A.shape == (depth,) + R.shape
    assert rel_err(compose(A), R) <= 1e-9


@FAST
@given(oriented_matrices(), st.integers(1, 400))
def test_plan_norms_are_the_layer_norms(R, depth):
    for method in ("polar", "svd"):
        A = factorize_near_identity(R, depth, method=method)
        plan = factorization_plan(R, depth, method=method)
        assert np.max(layer_norms(A)) == pytest.approx(plan.max_norm, rel=1e-7, abs=1e-12)
        assert rel_err(compose(A), R) <= 1e-9
        if plan.kind == "svd":
            assert 2 * plan.q + plan.p == depth and plan.q >= 1


@FAST
@given(oriented_matrices(), st.integers(1, 400))
def test_early_and_integer_bounds_hold_when_depth_at_least_3_gamma(R, depth):
    if depth < 3 * gamma(R):
        depth = theorem_2_1_min_depth(R)
    top = np.max(layer_norms(factorize_near_identity(R, depth, method="svd")))
    assert top <= theorem_2_1_bound_early(R, depth) * (1 + 1e-12)
    assert top <= theorem_2_1_bound_integer(R, depth) * (1 + 1e-12)


@pytest.mark.parametrize("d", [2, 3, 4, 7])
@pytest.mark.parametrize("depth", [12, 50, 200])
def test_camera_ready_bound_holds_for_moderate_gamma(d, depth):
    # gamma = 0.5: the rounding loss 2 (1 + sqrt(3 gamma / pi)) layers is small next to these depths
    for seed in range(5):
        R = random_matrix_with_gamma(d, 0.5, seed=seed)
        top = np.max(layer_norms(factorize_near_identity(R, depth)))
        assert top <= theorem_2_1_bound(R, depth)


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["near-pi rotation x stretch", "symmetric positive definite", "random"]),
    st.integers(2, 8),
    st.integers(0, 2**32 - 1),
    st.integers(0, 30),
)
def test_polar_split_meets_both_published_bounds(kind, d, seed, extra):
    R = random_theorem_2_1_target(kind, d, seed)
    depth = theorem_2_1_min_depth(R) + extra
    A = factorize_near_identity(R, depth)  # default: the polar split
    assert rel_err(compose(A), R) <= 1e-9
    top = np.max(layer_norms(A))
    assert top <= theorem_2_1_bound(R, depth)
    assert top <= theorem_2_1_bound_early(R, depth)


@FAST
@given(oriented_matrices(max_d=5, psd=False, min_d=2), st.integers(3, 60))
def test_polar_plan_is_a_polar_split(R, depth):
    # non-symmetric targets only: a symmetric positive definite R (and every 1 x 1 one) takes the "psd" plan
    plan = factorization_plan(R, depth)
    assert plan.kind == "polar" and plan.q + plan.p == depth
    A = factorize_near_identity(R, depth)
    scaling, rotation = compose(A[: plan.p]), compose(A[plan.p :])
    assert np.allclose(rotation @ rotation.T, np.eye(len(R)), atol=1e-9)
    assert np.allclose(scaling, scaling.T, atol=1e-9)
    assert np.min(np.linalg.eigvalsh((scaling + scaling.T) / 2)) > 0


@FAST
@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_polar_split_is_Q_times_the_root_of_R_transpose_R(d, seed):
    """Any square R (either sign of det): R = Q P with Q orthogonal and P the symmetric root of R^T R, whose
    eigenvalues are R's singular values (checked against numpy's SVD, not scipy's polar)."""
    R = np.random.default_rng(seed).standard_normal((d, d))
    Q, P = polar_split(R)
    s = np.linalg.svd(R, compute_uv=False)
    assert np.allclose(Q @ P, R, rtol=0, atol=1e-12 * s.max())
    assert np.allclose(Q.T @ Q, np.eye(d), rtol=0, atol=1e-12)
    assert np.array_equal(P, P.T)
    assert np.allclose(P @ P, R.T @ R, rtol=0, atol=1e-12 * s.max() ** 2)
    assert np.allclose(np.linalg.eigvalsh(P), np.sort(s), rtol=0, atol=1e-12 * s.max())


def test_polar_split_rejects_bad_input():
    with pytest.raises(ValueError, match="square"):
        polar_split(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        polar_split(np.array([[np.nan]]))


@FAST
@given(oriented_matrices(max_d=5), st.integers(1, 40))
def test_ratio_helper_agrees_with_the_built_layers(R, depth):
    for method in ("polar", "svd"):
        A = factorize_near_identity(R, depth, method=method)
        bound = min(theorem_2_1_bound(R, depth), theorem_2_1_bound_early(R, depth))
        measured = np.max(layer_norms(A)) / bound
        assert theorem_2_1_ratio(R, [depth], method)[0] == pytest.approx(measured, rel=1e-7, abs=1e-12)


@pytest.mark.parametrize("method", ["polar", "svd"])
@pytest.mark.parametrize("rotation_trivial", [False, True])
@pytest.mark.parametrize("scaling_trivial", [False, True])
def test_admissible_splits_follow_the_stated_rules(method, rotation_trivial, scaling_trivial):
    # q layers per rotation factor (one for polar, two for svd), p = depth - r q >= 0 scaling layers; q = 0
    # only for polar with a trivial rotation, p = 0 only with a trivial scaling. The order (increasing q)
    # matters too: _best_split keeps the first of near-equal splits. One depth at a time (the planners) and
    # all depths at once (theorem_2_1_ratio) must give the same splits.
    r = {"polar": 1, "svd": 2}[method]
    depths = np.arange(1, 61)
    q_all, p_all, ok_all = _admissible_splits(method, depths, rotation_trivial, scaling_trivial)
    for n, depth in enumerate(depths.tolist()):
        expected = sorted(
            (q, depth - r * q)
            for q in range(depth + 1)
            if depth - r * q >= 0
            and (q >= 1 or (method == "polar" and rotation_trivial))
            and (depth - r * q >= 1 or scaling_trivial)
        )
        q, p, ok = _admissible_splits(method, depth, rotation_trivial, scaling_trivial)
        assert list(zip(q[ok].tolist(), p[ok].tolist())) == expected
        assert list(zip(q_all[ok_all[n]].tolist(), p_all[n][ok_all[n]].tolist())) == expected


def _split_edge_targets():
    """Targets that exercise every split rule: 1 x 1, the identity, pure rotations (trivial scaling, p = 0
    allowed), rotations by pi, a rotation below 1e-12 of a non-symmetric R (q = 0 allowed in the polar scheme),
    one just above it, near-pi rotations with stretches, and the chapter's random families."""
    rng = np.random.default_rng(11)
    out = [
        np.array([[1.0]]),
        np.array([[0.5]]),
        np.array([[math.e**3]]),
        np.eye(3),
        -np.eye(2),
        np.diag([-1.0, -1.0, 1.0]),
    ]
    for d in (2, 3, 5):
        Q = random_rotation(d, rng)
        out.append(Q)
        for theta, a, b in ((9e-13, 1.5, 1.5), (9.9e-13, 1.5, 1.4), (2e-12, 1.5, 1.5)):
            G, D = np.eye(d), np.eye(d) * a
            G[:2, :2] = [[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]]
            D[1, 1] = b
            out.append(Q @ G @ D @ Q.T)
        for kind in ("near-pi rotation x stretch", "random"):
            out.append(random_theorem_2_1_target(kind, d, rng))
    return out


@pytest.mark.parametrize("method, rel", [("svd", 1e-15), ("polar", 1e-9)])
def test_ratio_takes_the_planners_split_at_every_depth(method, rel):
    # theorem_2_1_ratio (all depths in one call) and factorization_plan (one depth) must choose among the
    # same splits. svd: both use the same singular values, so they agree up to the rounding of the bound.
    # polar: the ratio takes P's eigenvalues from eigvalsh, the plan from eigh; they differ by up to ~4e-13,
    # which |s^(1/p) - 1| turns into relative differences up to ~4e-11 on random targets.
    depths = list(range(1, 61))
    for R in _split_edge_targets():
        ratios = theorem_2_1_ratio(R, depths, method)
        for depth, ratio in zip(depths, ratios):
            bound = min(theorem_2_1_bound(R, depth), theorem_2_1_bound_early(R, depth))
            plan = factorization_plan(R, depth, method=method)
            assert ratio * bound == pytest.approx(plan.max_norm, rel=rel, abs=0), (R, depth)


def test_adversarial_search_polar_below_one_svd_above():
    polar = theorem_2_1_worst_ratio_search(dims=(2, 3), random_starts=6, refine=1, seed=0)
    svd = theorem_2_1_worst_ratio_search(dims=(2, 3), random_starts=6, refine=1, method="svd", seed=0)
    assert 0 < polar["ratio"] < 1
    assert svd["ratio"] > 1  # the proof's whole-number SVD scheme exceeds a published bound
    depth = polar["depth"]
    assert depth >= 3 * gamma(polar["R"])
    A = factorize_near_identity(polar["R"], depth)
    bound = min(theorem_2_1_bound(polar["R"], depth), theorem_2_1_bound_early(polar["R"], depth))
    assert np.max(layer_norms(A)) / bound == pytest.approx(polar["ratio"], rel=1e-7)


@pytest.mark.parametrize("q", [2, 3, 7])
def test_rotation_root_and_the_printed_sign(q):
    Q = random_rotation(5, seed=q)
    root = rotation_root(Q, q)
    I = np.eye(5)
    assert np.allclose(np.linalg.matrix_power(root, q), Q, atol=1e-10)
    assert np.linalg.norm(root - I, 2) <= math.pi / q
    printed = np.linalg.matrix_power(I + (I - root), q)  # B = I - S W S^T as printed
    assert np.linalg.norm(printed - Q) > 1e-3


def test_new_functions_reject_bad_input():
    with pytest.raises(ValueError, match="method"):
        factorize_near_identity(np.eye(2), 3, method="qr")
    with pytest.raises(TypeError):
        factorization_plan(np.eye(2), 3, method=3)
    with pytest.raises(ValueError, match="rotation"):
        rotation_root(np.diag([1.0, -1.0]), 3)
    with pytest.raises(ValueError, match="rotation"):
        rotation_root(2 * np.eye(2), 3)
    with pytest.raises(ValueError):
        rotation_root(np.eye(2), 0)
    with pytest.raises(ValueError, match="kind"):
        random_theorem_2_1_target("orthogonal", 3)
    with pytest.raises(ValueError, match="tol"):
        identity_gd_steps_to(np.eye(2), 2, 0.1, 0.0, 10)
    with pytest.raises(ValueError, match="tau"):
        critical_point_search(np.eye(2), np.eye(2), np.zeros((1, 2, 2, 2)), 0.0)
    with pytest.raises(ValueError):
        critical_point_search(np.eye(2), np.eye(2), np.zeros((2, 2, 2)), 0.5)
    with pytest.raises(ValueError):
        theorem_2_1_worst_ratio_search(max_gamma=-1.0)


def test_camera_ready_bound_fails_with_integer_layer_counts():
    # a rotation by nearly pi with a 1% stretch: gamma is tiny, so the theorem allows any depth, but the SVD
    # construction needs p >= 1 scaling layers and so only one rotation layer per side at depth 4
    c, s = math.cos(3.1), math.sin(3.1)
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.01]])
    assert 4 >= 3 * gamma(R)
    plan = factorization_plan(R, 4, method="svd")
    assert (plan.q, plan.p) == (1, 2)
    assert plan.max_norm > theorem_2_1_bound(R, 4)
    assert factorization_plan(R, 4).max_norm <= theorem_2_1_bound(R, 4)  # the polar split meets it
    assert plan.max_norm <= theorem_2_1_bound_early(R, 4)


def test_psd_fast_path_gives_equal_layers():
    R = random_matrix_with_gamma(5, 1.0, seed=3, psd=True)
    A = factorize_near_identity(R, 30)
    assert factorization_plan(R, 30).kind == "psd"
    assert np.allclose(A, A[0])
    assert rel_err(compose(A), R) <= 1e-9
    assert np.max(layer_norms(A)) <= 3 * gamma(R) / 30


@pytest.mark.parametrize(
    "R",
    [np.diag([-1.0, -1.0, 1.0]), np.diag([-1.0, -1.0, -1.0, -1.0]), -np.eye(2), np.array([[0.0, -1.0], [1.0, 0.0]])],
)
def test_rotations_with_minus_one_eigenvalues(R):
    for depth in (2, 3, 4, 9):
        A = factorize_near_identity(R, depth)
        assert rel_err(compose(A), R) <= 1e-9


def test_gamma_and_bounds_values():
    R = np.diag([math.e**2, 1.0, math.e**-0.5])
    assert gamma(R) == pytest.approx(2.0)
    assert theorem_2_1_bound(R, 10) == pytest.approx(2 * (math.sqrt(math.pi) + math.sqrt(6)) ** 2 / 10)
    assert theorem_2_1_bound_early(R, 10) == pytest.approx((4 * math.pi + 6) / 10)
    assert theorem_2_1_min_depth(R) == 6
    assert theorem_2_1_bound_integer(R, 2) == math.inf


# --- bad inputs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [factorize_near_identity, factorization_plan])
def test_factorize_rejects_bad_input(fn):
    with pytest.raises(ValueError, match="square"):
        fn(np.ones((2, 3)), 3)
    with pytest.raises(ValueError, match="2-D"):
        fn(np.ones(3), 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        fn(np.array([[1.0, np.nan], [0.0, 1.0]]), 3)
    with pytest.raises(ValueError, match="NaN or inf"):
        fn(np.array([[1.0, np.inf], [0.0, 1.0]]), 3)
    with pytest.raises(ValueError, match=r"det R < 0.*positive determinant"):
        fn(np.diag([1.0, -1.0]), 3)
    with pytest.raises(ValueError, match="singular"):
        fn(np.diag([1.0, 0.0]), 3)
    with pytest.raises(ValueError, match="at least 1"):
        fn(np.eye(2), 0)
    with pytest.raises(TypeError, match="integer"):
        fn(np.eye(2), 2.5)
    with pytest.raises(TypeError):
        fn("abc", 2)


def test_other_functions_reject_bad_input():
    with pytest.raises(ValueError, match="singular"):
        gamma(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="square"):
        gamma(np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least 1"):
        theorem_2_1_bound(np.eye(2), 0)
    with pytest.raises(ValueError, match="at least 1"):
        theorem_2_1_bound_early(np.eye(2), -3)
    with pytest.raises(TypeError):
        theorem_2_1_bound_integer(np.eye(2), "3")
    with pytest.raises(ValueError, match="NaN"):
        theorem_2_1_min_depth(np.array([[np.nan]]))
    with pytest.raises(ValueError, match=r"shape \(depth, d, d\)"):
        compose(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"shape \(depth, d, d\)"):
        layer_norms(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="NaN"):
        compose(np.full((1, 2, 2), np.nan))


def test_risk_functions_reject_bad_input():
    A, R, S = np.zeros((2, 3, 3)), np.eye(3), np.eye(3)
    for fn in (risk, risk_gradient, risk_gradient_printed_order):
        with pytest.raises(ValueError, match="R is 2 x 2"):
            fn(A, np.eye(2), S)
        with pytest.raises(ValueError, match="Sigma must be 3 x 3"):
            fn(A, R, np.eye(2))
        with pytest.raises(ValueError, match="symmetric"):
            fn(A, R, np.triu(np.ones((3, 3))))
        with pytest.raises(ValueError, match="positive semidefinite"):
            fn(A, R, -np.eye(3))
        with pytest.raises(ValueError, match="NaN"):
            fn(A, np.full((3, 3), np.inf), S)
    for fn in (gradient_lower_bound, gradient_lower_bound_printed):
        with pytest.raises(ValueError, match="0 <= tau < 1"):
            fn(A, R, S, 1.0)
        with pytest.raises(ValueError, match="0 <= tau < 1"):
            fn(A, R, S, -0.1)
        with pytest.raises(TypeError, match="tau"):
            fn(A, R, S, "0.5")
        with pytest.raises(ValueError, match="outside the tau-ball"):
            fn(np.full((2, 3, 3), 0.5), R, S, 0.2)
    with pytest.raises(ValueError, match="R is 2 x 2"):
        torch_risk(2, 3, np.eye(2), S)
    with pytest.raises(ValueError, match="positive semidefinite"):
        sympy_risk(2, 3, R, -S)
    with pytest.raises(ValueError, match="expected 18 parameters"):
        torch_risk(2, 3, R, S)(torch.zeros(5, dtype=torch.float64))
    with pytest.raises(ValueError, match="lr"):
        risk_gradient_descent(A, R, S, 10, 0.0)
    with pytest.raises(ValueError, match="steps"):
        risk_gradient_descent(A, R, S, 0, 0.1)


def test_identity_init_gd_rejects_bad_input():
    Phi = np.eye(2)
    with pytest.raises(ValueError, match="at least 1"):
        identity_init_gd(Phi, 0, 10, 0.1)
    with pytest.raises(ValueError, match="steps"):
        identity_init_gd(Phi, 2, 0, 0.1)
    with pytest.raises(TypeError, match="steps"):
        identity_init_gd(Phi, 2, 1.5, 0.1)
    with pytest.raises(ValueError, match="lr"):
        identity_init_gd(Phi, 2, 10, -0.1)
    with pytest.raises(ValueError, match="lr"):
        identity_init_gd(Phi, 2, 10, float("nan"))
    with pytest.raises(ValueError, match="reg"):
        identity_init_gd(Phi, 2, 10, 0.1, reg=-1.0)
    with pytest.raises(ValueError, match="backend"):
        identity_init_gd(Phi, 2, 10, 0.1, backend="jax")
    with pytest.raises(ValueError, match="CPU only"):
        identity_init_gd(Phi, 2, 10, 0.1, device="cuda")
    with pytest.raises(ValueError, match="square"):
        identity_init_gd(np.ones((2, 3)), 2, 10, 0.1)
    with pytest.raises(ValueError, match="dtype"):
        identity_init_gd(Phi, 2, 10, 0.1, backend="torch", device="cpu", dtype=torch.int64)
    with pytest.raises(FloatingPointError, match="diverged"):
        identity_init_gd(10 * np.eye(2), 4, 50, 5.0)
    with pytest.raises(ValueError):
        random_matrix_with_gamma(3, -1.0)
    with pytest.raises(ValueError):
        random_rotation(0)
    with pytest.raises(ValueError, match="tau"):
        random_layers_in_ball(2, 3, -0.5)
    with pytest.raises(ValueError, match="at least 1"):
        random_layers_in_ball(0, 3, 0.5)
    with pytest.raises(ValueError, match="at least one depth"):
        theorem_2_1_sweep(np.eye(2), [])
    with pytest.raises(ValueError, match="det R < 0"):
        theorem_2_1_sweep(-np.eye(3), [4])
    with pytest.raises(TypeError, match="integer"):
        theorem_2_1_sweep(np.eye(2), [2.5])


def test_sweep_and_ball_sampler():
    R = random_matrix_with_gamma(3, 0.5, seed=1)
    sweep = theorem_2_1_sweep(R, [1, 5, 40])
    assert np.all(sweep["relative_error"] <= 1e-9)
    assert np.all(sweep["q"][1:] + sweep["p"][1:] == sweep["depth"][1:])
    svd = theorem_2_1_sweep(R, [1, 5, 40], method="svd")
    assert np.all(2 * svd["q"][1:] + svd["p"][1:] == svd["depth"][1:])
    A = random_layers_in_ball(6, 4, 0.3, seed=2)
    assert A.shape == (6, 4, 4) and np.max(layer_norms(A)) <= 0.3 + 1e-12


# --- Claim 2.3 and Lemma 2.4 ----------------------------------------------------------------------
def test_risk_matches_monte_carlo():
    rng = np.random.default_rng(0)
    d, n = 3, 200_000
    A = 0.2 * rng.standard_normal((3, d, d))
    R = rng.standard_normal((d, d))
    L = rng.standard_normal((d, d))
    Sigma = L @ L.T
    x = rng.standard_normal((n, d)) @ L.T
    y = x @ R.T + rng.standard_normal((n, d))
    losses = np.sum((x @ compose(A).T - y) ** 2, axis=1)
    se = losses.std() / math.sqrt(n)
    assert abs(losses.mean() - risk(A, R, Sigma)) <= 5 * se


@FAST
@given(st.integers(1, 5), st.integers(1, 5), st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_quadrature_risk_is_claim_2_3_for_any_layers(d, depth, atoms, seed):
    """Eq. (2.2) integrated exactly equals ||E Sigma^1/2||_F^2 + d for any layers and any discrete input law."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((atoms, d))
    w = rng.random(atoms) + 0.1
    w /= w.sum()
    Sigma = (X.T * w) @ X
    R = rng.standard_normal((d, d))
    A = rng.standard_normal((depth, d, d))
    expected = risk(A, R, Sigma)
    assert risk_by_quadrature(A, R, X, w) == pytest.approx(expected, rel=1e-10, abs=1e-10 * d)


def test_quadrature_risk_with_input_dependent_noise():
    """Noise xi = M x + eta moves the target to R + M: the constant of Claim 2.3 then depends on A."""
    rng = np.random.default_rng(3)
    d = 3
    X, w = rng.standard_normal((6, d)), np.full(6, 1 / 6)
    Sigma = (X.T * w) @ X
    R, M = rng.standard_normal((d, d)), 0.1 * rng.standard_normal((d, d))
    gaps = []
    for scale in (0.0, 0.5, 1.0):
        A = scale * rng.standard_normal((3, d, d))
        f = risk_by_quadrature(A, R, X, w, noise_map=M)
        assert f == pytest.approx(risk(A, R + M, Sigma), rel=1e-12)
        gaps.append(f - (risk(A, R, Sigma) - d))
    assert np.ptp(gaps) > 1e-3


def test_quadrature_risk_rejects_bad_input():
    A, R = np.zeros((2, 2, 2)), np.eye(2)
    X, w = np.ones((3, 2)), np.full(3, 1 / 3)
    with pytest.raises(ValueError, match="sum to one"):
        risk_by_quadrature(A, R, X, np.ones(3))
    with pytest.raises(ValueError, match="shape"):
        risk_by_quadrature(A, R, np.ones((3, 3)), w)
    with pytest.raises(ValueError, match="noise_map"):
        risk_by_quadrature(A, R, X, w, noise_map=np.eye(3))
    with pytest.raises(ValueError):
        risk_by_quadrature(A, np.eye(3), X, w)


def test_search_in_ball_finds_oriented_targets_and_not_reflections():
    """det R > 0: an exact product inside the printed radius is found; det R < 0: the residual stays at
    s_min(R) or above, as every product of factors I + A_i with ||A_i|| < 1 has positive determinant."""
    depth = 24
    radius = 2 * math.pi / depth  # the camera-ready bound at gamma = 0
    c, s = math.cos(3.0), math.sin(3.0)
    rotation = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    found = best_factorization_in_ball(rotation, depth, radius, seed=0)
    assert found["residual"] <= 1e-9 and found["max_norm"] <= radius * (1 + 1e-12)
    reflection = np.diag([-1.0, 1.0, 1.0])
    stuck = best_factorization_in_ball(reflection, depth, radius, seed=0)
    assert stuck["residual"] >= stuck["s_min"] * (1 - 1e-9) and stuck["det"] >= 0
    with pytest.raises(ValueError):
        best_factorization_in_ball(reflection, 0, radius)
    with pytest.raises(ValueError):
        best_factorization_in_ball(reflection, depth, -1.0)


def test_bound_outside_the_ball_only_when_asked():
    A = np.tile(-0.6 * np.eye(2), (3, 1, 1))
    R = np.eye(2) * 2
    with pytest.raises(ValueError, match="outside the tau-ball"):
        gradient_lower_bound(A, R, np.eye(2), 0.5)
    outside = gradient_lower_bound(A, R, np.eye(2), 0.5, allow_outside=True)
    assert np.sum(risk_gradient(A, R, np.eye(2)) ** 2) < outside  # A_i = -0.6 I breaks the bound for tau = 0.5


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(0, 2**32 - 1))
def test_gradient_three_witnesses(d, depth, seed):
    rng = np.random.default_rng(seed)
    R = rng.standard_normal((d, d))
    L = rng.standard_normal((d, d))
    Sigma = L @ L.T
    points = [0.3 * rng.standard_normal(depth * d * d) for _ in range(2)]
    report = checks.compare_gradients(
        torch_risk(depth, d, R, Sigma),
        points,
        closed_form={"Lemma 2.4": lambda v: risk_gradient(v.reshape(depth, d, d), R, Sigma)},
    )
    assert report.check().holds, report.max_rel_error


def test_sympy_risk_gradient_refuses_bad_points():
    _, gradient = sympy_risk_gradient(1, 2, np.eye(2), np.eye(2))
    assert gradient(np.zeros(4)).shape == (4,)
    with pytest.raises(ValueError, match="4 entries, one per symbol"):
        gradient(np.zeros(3))
    with pytest.raises(ValueError):
        gradient(np.array([0.0, np.nan, 0.0, 0.0]))


def test_gradient_against_sympy_and_printed_order_disagrees():
    d, depth = 2, 3
    Rn, Sn = np.array([[1.0, 2.0], [-1.0, 1.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])
    expr, syms = sympy_risk(depth, d, Rn, Sn)
    sd = checks.sympy_derivatives(
        expr, syms, simplify=False, hessian=False
    )  # sympy.diff, not Poly: an independent path
    rng = np.random.default_rng(1)
    points = [0.3 * rng.standard_normal(len(syms)) for _ in range(3)]
    poly_exprs, poly_gradient = sympy_risk_gradient(depth, d, Rn, Sn)
    assert len(poly_exprs) == len(syms)
    assert all(sp.expand(p - e) == 0 for p, e in zip(poly_exprs, sd.gradient_exprs))  # the same exact gradient
    for v in points:
        exact = sd.gradient(v)
        assert np.max(np.abs(poly_gradient(v) - exact)) <= 1e-12 * max(1, np.max(np.abs(exact)))
        ours = risk_gradient(v.reshape(depth, d, d), Rn, Sn).ravel()
        printed = risk_gradient_printed_order(v.reshape(depth, d, d), Rn, Sn).ravel()
        assert np.max(np.abs(ours - exact)) <= 1e-10 * max(1, np.max(np.abs(exact)))
        assert np.max(np.abs(printed - exact)) > 1e-3 * np.max(np.abs(exact))
        assert sd.value(v) == pytest.approx(risk(v.reshape(depth, d, d), Rn, Sn), rel=1e-12)
    report = checks.compare_gradients(torch_risk(depth, d, Rn, Sn), points, closed_form={"sympy": sd.gradient})
    assert report.check().holds


def test_printed_order_agrees_when_depth_at_most_two():
    rng = np.random.default_rng(2)
    A = 0.3 * rng.standard_normal((2, 3, 3))
    R, S = rng.standard_normal((3, 3)), np.eye(3)
    assert np.allclose(risk_gradient(A, R, S), risk_gradient_printed_order(A, R, S), rtol=1e-12, atol=1e-13)


# --- eq. (2.3) ----------------------------------------------------------------------------------
@pytest.mark.parametrize("c", [1.5, 2.0, 10.0])
def test_printed_gradient_bound_counterexample(c):
    d, depth = 3, 4
    R = random_matrix_with_gamma(d, 0.7, seed=5)
    A, Sigma = np.zeros((depth, d, d)), c * np.eye(d)
    grad_sq = np.sum(risk_gradient(A, R, Sigma) ** 2)
    assert grad_sq < gradient_lower_bound_printed(A, R, Sigma, 0.0)
    assert grad_sq == pytest.approx(gradient_lower_bound(A, R, Sigma, 0.0), rel=1e-10)


@FAST
@given(st.integers(1, 5), st.integers(1, 6), st.floats(0.0, 0.9), st.integers(0, 2**32 - 1))
def test_corrected_gradient_bound_on_random_points(d, depth, tau, seed):
    rng = np.random.default_rng(seed)
    A = random_layers_in_ball(depth, d, tau, rng)
    R = rng.standard_normal((d, d))
    L = rng.standard_normal((d, d))
    Sigma = L @ L.T + 0.1 * np.eye(d)
    grad_sq = np.sum(risk_gradient(A, R, Sigma) ** 2)
    assert grad_sq >= gradient_lower_bound(A, R, Sigma, tau) * (1 - 1e-9)


@FAST
@given(st.integers(1, 5), st.integers(2, 8), st.floats(0.05, 0.95), st.integers(0, 2**32 - 1))
def test_exponent_witness_printed_fails_corrected_tight(d, depth, tau, seed):
    R = random_matrix_with_gamma(d, 0.7, seed=seed)
    A, Sigma = np.tile(-tau * np.eye(d), (depth, 1, 1)), np.eye(d)
    grad_sq = np.sum(risk_gradient(A, R, Sigma) ** 2)
    assert grad_sq == pytest.approx(gradient_lower_bound(A, R, Sigma, tau), rel=1e-9)
    assert grad_sq < gradient_lower_bound_printed(A, R, Sigma, tau) * (1 - 1e-9)


@FAST
@given(st.integers(1, 5), st.integers(1, 6), st.floats(0.0, 0.95), st.integers(0, 2**32 - 1))
def test_corrected_gradient_bound_on_the_boundary(d, depth, tau, seed):
    rng = np.random.default_rng(seed)
    A = random_layers_in_ball(depth, d, tau, rng, boundary=True)
    assert np.allclose(layer_norms(A), tau, rtol=1e-12, atol=1e-15)
    R = rng.standard_normal((d, d))
    L = rng.standard_normal((d, d))
    Sigma = L @ L.T + 0.1 * np.eye(d)
    grad_sq = np.sum(risk_gradient(A, R, Sigma) ** 2)
    assert grad_sq >= gradient_lower_bound(A, R, Sigma, tau) * (1 - 1e-9)


def test_critical_point_search_inside_ball_finds_only_global_minima():
    rng = np.random.default_rng(3)
    d, depth, tau = 2, 3, 0.6
    R = compose(random_layers_in_ball(depth, d, tau / 2, rng))
    L = rng.standard_normal((d, d))
    Sigma = L @ L.T + 0.1 * np.eye(d)
    starts = np.stack([random_layers_in_ball(depth, d, tau, rng, boundary=k % 2 == 0) for k in range(4)])
    found = critical_point_search(R, Sigma, starts, tau)
    assert found.critical.any()
    assert np.all(found.max_norm <= tau * (1 + 1e-9))
    assert np.all(found.excess[found.critical] <= 1e-10 * found.excess_start[found.critical])
    # outside the ball (tau = 1) A = -I is a critical point that is not a global minimum
    outside = critical_point_search(R, Sigma, -np.tile(np.eye(d), (1, depth, 1, 1)), 1.0)
    assert outside.critical[0] and outside.excess[0] > 0.01


def test_steps_to_tolerance():
    Phi = random_matrix_with_gamma(3, 0.5, seed=1, psd=True)
    steps = identity_gd_steps_to(Phi, 4, 0.1, 1e-8, 10_000)
    assert steps is not None and steps > 1  # this target needs more than one step, so steps - 1 is a run
    run = identity_init_gd(Phi, 4, steps, 0.1)
    assert run.losses[-1] <= 1e-8  # losses[t] is the loss after t + 1 steps
    assert run.initial_loss > 1e-8 and np.all(run.losses[:-1] > 1e-8)  # no earlier step reached the tolerance
    assert identity_init_gd(Phi, 4, steps - 1, 0.1).losses[-1] > 1e-8
    assert identity_gd_steps_to(np.diag([-0.5, 1.0, 1.0]), 4, 0.1, 1e-8, 2000) is None


def test_gd_from_zero_reaches_global_minimum_but_plain_zero_is_stuck():
    d, depth = 3, 6
    R = random_matrix_with_gamma(d, 0.4, seed=8)
    Sigma = np.eye(d)
    residual, A = risk_gradient_descent(np.zeros((depth, d, d)), R, Sigma, 400, 0.02)
    assert residual[-1] < 1e-8 * residual[0]
    assert np.max(layer_norms(A)) < 1
    plain, _ = risk_gradient_descent(-np.tile(np.eye(d), (depth, 1, 1)), R, Sigma, 50, 0.02)
    assert np.all(plain == plain[0])


# --- Bartlett, Helmbold & Long -------------------------------------------------------------------
def test_identity_gd_converges_on_spd_target():
    Phi = random_matrix_with_gamma(4, 1.0, seed=2, psd=True)
    result = identity_init_gd(Phi, 5, 3000, 0.05)
    assert result.losses.shape == (3000,)
    assert result.losses[-1] < 1e-10
    assert np.allclose(result.product, Phi, atol=1e-5)


@pytest.mark.parametrize("reg", [0.0, 0.05])
@settings(max_examples=8, deadline=None)
@given(lam=st.floats(-2.0, -0.05), seed=st.integers(0, 2**32 - 1))
def test_identity_gd_plateaus_with_negative_eigenvalue(reg, lam, seed):
    d = 3
    Q = random_rotation(d, seed)
    Phi = Q @ np.diag([lam, 1.0, 0.5]) @ Q.T
    result = identity_init_gd(Phi, 4, 300, 0.05, reg=reg)
    assert np.min(result.losses) >= lam**2 / 2 * (1 - 1e-9)
    assert np.linalg.det(result.product) > 0


def test_torch_backend_matches_numpy():
    Phi = random_matrix_with_gamma(3, 0.8, seed=4)
    a = identity_init_gd(Phi, 4, 60, 0.05, reg=0.01)
    b = identity_init_gd(Phi, 4, 60, 0.05, reg=0.01, backend="torch", device="cpu")
    assert b.backend == "torch" and b.device == "cpu"
    assert np.allclose(a.losses, b.losses, rtol=1e-10, atol=1e-14)
    assert np.allclose(a.layers, b.layers, rtol=1e-10, atol=1e-14)


# --- the benchmark runs ---------------------------------------------------------------------------
def test_benchmark_runs_small():
    out = subprocess.run(
        [sys.executable, "-m", "resnet_theory.benchmarks.linear", "--d", "8", "--depth", "20"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "relative error" in out.stdout


def test_identity_init_gd_backend_options_follow_the_validation_rule():
    Phi = np.eye(2)
    with pytest.raises(TypeError, match="backend must be one of 'numpy', 'torch', got 3"):
        identity_init_gd(Phi, 2, 10, 0.1, backend=3)  # a wrong type (it was a ValueError)
    with pytest.raises(ValueError, match="device must be 'cpu' or a CUDA device, got 'tpu9'"):
        identity_init_gd(Phi, 2, 10, 0.1, backend="torch", device="tpu9")
    with pytest.raises(TypeError, match="device must be a device name"):
        identity_init_gd(Phi, 2, 10, 0.1, backend="torch", device=1.5)
    with pytest.raises(ValueError, match="dtype must be one of torch.float32, torch.float64, got torch.int64"):
        identity_init_gd(Phi, 2, 10, 0.1, backend="torch", device="cpu", dtype=torch.int64)
    # a torch.device for the CPU is the CPU for the numpy backend too (it was refused)
    assert identity_init_gd(Phi, 2, 3, 0.1, device=torch.device("cpu")).backend == "numpy"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available here"):
            identity_init_gd(Phi, 2, 10, 0.1, backend="torch", device="cuda")


# --- Theorem 2.1: special case, depth hypothesis, printed proof steps (Appendix A.1) --------------------
@FAST
@given(oriented_matrices(psd=True), st.integers(0, 40))
def test_psd_layers_meet_three_gamma_over_depth(R, extra):
    """Appendix A.1's special case: equal roots, max ||A_j|| <= 3 gamma / l once l >= 3 gamma."""
    depth = theorem_2_1_min_depth(R) + extra
    A = factorize_near_identity(R, depth)
    assert rel_err(compose(A), R) <= 1e-9
    assert np.max(layer_norms(A)) <= 3 * gamma(R) / depth * (1 + 1e-12) + 1e-15


def test_bounds_are_missed_below_three_gamma():
    """Below l = 3 gamma every factorisation of diag(e^gamma, ...) has a layer of norm >= e^(gamma/l) - 1."""
    g = 8.0
    R = np.diag([math.exp(g), 1.0, math.exp(-g / 2)])
    A = factorize_near_identity(R, 1)
    norm = np.max(layer_norms(A))
    assert norm == pytest.approx(math.expm1(g), rel=1e-12)
    assert norm > theorem_2_1_bound(R, 1) and norm > theorem_2_1_bound_early(R, 1) and norm > 3 * g


@pytest.mark.parametrize("q", [2, 3, 5])
def test_rotation_layer_norm_is_twice_half_angle_sine(q):
    """||S W S^T - I|| = max 2|sin(theta/2q)|, not the printed max|sin(theta/q)|; both stay below pi/q."""
    Q = random_rotation(4, seed=q)
    theta = np.angle(np.linalg.eigvals(Q))
    norm = np.linalg.norm(rotation_root(Q, q) - np.eye(4), 2)
    assert norm == pytest.approx(np.max(2 * np.abs(np.sin(theta / (2 * q)))), rel=1e-10)
    assert norm > np.max(np.abs(np.sin(theta / q))) * (1 + 1e-6)
    assert norm <= math.pi / q


def test_printed_layer_counts_do_not_add_up():
    """With the printed p and q (our reading), 2q + p != l unless gamma = 4 pi / 3; swapped, they add up."""
    ell, g = sp.symbols("ell gamma", positive=True)
    a, b = sp.sqrt(sp.pi), sp.sqrt(3 * g)
    p_printed, q_printed = ell * b / (2 * (a + b)), ell * a / (a + b)
    assert sp.simplify(2 * q_printed + p_printed - ell) != 0
    assert sp.simplify((2 * q_printed + p_printed - ell).subs(g, 4 * sp.pi / 3)) == 0
    assert sp.simplify(2 * p_printed + q_printed - ell) == 0
    p_fixed, q_fixed = ell * b / (a + b), ell * a / (2 * (a + b))
    assert sp.simplify(2 * q_fixed + p_fixed - ell) == 0
    slack = sp.simplify(2 * (a + b) ** 2 / ell - sp.pi / q_fixed - 3 * g / p_fixed)
    assert slack.is_nonnegative


# --- Bartlett, Helmbold & Long: step suited to the target, traces, determinant floor ----------------------
from resnet_theory.linear import (  # noqa: E402  (kept apart from the imports above, which another branch edits)
    BHL_STEP_SCALE,
    bhl_step_size,
    det_loss_floor,
    identity_gd_trace,
)
from resnet_theory.validate import DivergenceError  # noqa: E402


def test_bhl_step_size_values():
    assert bhl_step_size(np.diag([0.5, 0.2]), 4) == pytest.approx(0.5 / 4)  # ||Phi|| <= 1: scale / L
    assert bhl_step_size(np.diag([4.0, 1.0]), 2) == pytest.approx(0.5 / (2 * 4.0))  # 4^(2 - 2/2) = 4
    assert bhl_step_size(np.diag([16.0, 1.0]), 4, scale=1.0) == pytest.approx(1 / (4 * 16**1.5))
    assert bhl_step_size(np.diag([4.0, 1.0]), 2) == bhl_step_size(np.diag([4.0, 1.0]), 2, scale=BHL_STEP_SCALE)


def test_fixed_step_diverges_on_spectrum_1_to_4_but_the_suited_step_converges():
    Q = random_rotation(6, 3)
    Phi = Q @ np.diag(np.geomspace(1.0, 4.0, 6)) @ Q.T
    with pytest.raises(DivergenceError):
        identity_gd_steps_to(Phi, 8, 0.5 / 8, 1e-8, 30_000)
    steps = identity_gd_steps_to(Phi, 8, bhl_step_size(Phi, 8), 1e-8, 30_000)
    assert steps is not None
    assert identity_gd_trace(Phi, 8, bhl_step_size(Phi, 8), steps).losses[-1] <= 1e-8


@settings(max_examples=15, deadline=None)
@given(
    log_lam=st.lists(st.floats(-2.5, 2.5), min_size=2, max_size=5),
    depth=st.sampled_from([2, 4, 8]),
    seed=st.integers(0, 2**32 - 1),
)
def test_suited_step_converges_on_random_spd_targets_of_any_norm(log_lam, depth, seed):
    Q = random_rotation(len(log_lam), seed)
    Phi = Q @ np.diag(np.exp(log_lam)) @ Q.T
    assert identity_gd_steps_to(Phi, depth, bhl_step_size(Phi, depth), 1e-8, 200_000) is not None


@pytest.mark.parametrize("reg", [0.0, 0.03])
def test_trace_agrees_with_identity_init_gd(reg):
    Phi = np.random.default_rng(4).standard_normal((3, 3)) * 0.4 + np.eye(3)
    tr = identity_gd_trace(Phi, 5, 0.05, 200, reg=reg)
    ref = identity_init_gd(Phi, 5, 200, 0.05, reg=reg)
    assert tr.losses.shape == (201,) and tr.product_dets.shape == (201,)
    assert tr.losses[0] == pytest.approx(ref.initial_loss, rel=1e-12)
    np.testing.assert_allclose(tr.losses[1:], ref.losses, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(tr.layers, ref.layers, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(tr.product_dets[-1], np.linalg.det(ref.product), rtol=1e-9)


@pytest.mark.parametrize("reg", [0.0, 0.1])
def test_the_bhl_gradient_the_runs_use_has_three_witnesses(reg):
    """The update of :func:`identity_gd_trace` (and so of every run it agrees with) is the gradient of
    ``1/2 ||Theta_L ... Theta_1 - Phi||_F^2 + reg sum_i ||Theta_i - I||_F^2``: its second step, read off the
    layers, against SymPy, autograd and finite differences at the first step's layers (where the regulariser's
    gradient is not zero)."""
    depth, d, lr = 3, 2, 0.05
    Phi = np.array([[0.5, 1.0], [-0.75, 1.5]])
    T1 = identity_gd_trace(Phi, depth, lr, 1, reg=reg).layers
    step = (T1 - identity_gd_trace(Phi, depth, lr, 2, reg=reg).layers) / lr  # the gradient at T1

    def f(v):
        T = v.reshape(depth, d, d)
        P, I = torch.eye(d, dtype=v.dtype), torch.eye(d, dtype=v.dtype)
        for i in range(depth):
            P = T[i] @ P
        return 0.5 * torch.sum((P - torch.as_tensor(Phi)) ** 2) + reg * torch.sum((T - I) ** 2)

    symbols = sp.symbols(f"t0:{depth * d * d}")
    layers = [sp.Matrix(d, d, symbols[i * d * d : (i + 1) * d * d]) for i in range(depth)]
    P = sp.eye(d)
    for T in layers:
        P = T * P
    E = P - sp.Matrix(Phi.tolist()).applyfunc(sp.nsimplify)
    expr = sp.Rational(1, 2) * sum(e**2 for e in E) + sp.nsimplify(reg) * sum(
        (x - y) ** 2 for T in layers for x, y in zip(T, sp.eye(d))
    )
    sd = checks.sympy_derivatives(sp.expand(expr), symbols, simplify=False, hessian=False, polynomial=True)
    report = checks.compare_gradients(
        f, [T1.ravel()], closed_form={"sympy": sd.gradient, "identity_gd_trace's step": lambda v: step.ravel()}
    )
    assert report.check().holds, report.max_rel_error
    assert np.max(np.abs(step)) > 0.1  # a gradient, not a vanishing one that anything would match
    # the comparison can fail: the same step against the witnesses at another point
    elsewhere = checks.compare_gradients(f, [(T1 + 0.1).ravel()], closed_form={"step": lambda v: step.ravel()})
    assert not elsewhere.check().holds


def test_trace_stops_at_the_tolerance_like_steps_to():
    Phi = random_matrix_with_gamma(3, 0.5, seed=1, psd=True)
    steps = identity_gd_steps_to(Phi, 4, 0.1, 1e-8, 10_000)
    tr = identity_gd_trace(Phi, 4, 0.1, 10_000, tol=1e-8)
    assert tr.losses.size == steps + 1 and tr.losses[-1] <= 1e-8 and np.all(tr.losses[:-1] > 1e-8)


@settings(max_examples=30, deadline=None)
@given(d=st.integers(2, 5), seed=st.integers(0, 2**32 - 1))
def test_det_loss_floor_is_the_distance_to_nonnegative_determinants(d, seed):
    rng = np.random.default_rng(seed)
    Phi = rng.standard_normal((d, d))
    if np.linalg.det(Phi) > 0:
        Phi[0] *= -1  # det Phi < 0
    floor = det_loss_floor(Phi)
    U, s, Vt = np.linalg.svd(Phi)
    assert floor == pytest.approx(0.5 * s[-1] ** 2, rel=1e-12)
    nearest = U @ np.diag(np.r_[s[:-1], 0.0]) @ Vt  # attained by zeroing the smallest singular value
    assert 0.5 * np.sum((nearest - Phi) ** 2) == pytest.approx(floor, rel=1e-9)
    for _ in range(20):  # no matrix with det >= 0 is closer
        P = Phi + rng.standard_normal((d, d)) * rng.uniform(0.01, 3.0)
        if np.linalg.det(P) >= 0:
            assert 0.5 * np.sum((P - Phi) ** 2) >= floor * (1 - 1e-12)
    assert det_loss_floor(np.eye(d)) == 0.0 and det_loss_floor(-Phi if d % 2 else Phi @ Phi) == 0.0


@pytest.mark.parametrize("reg", [0.0, 0.01, 0.1])
def test_negative_determinant_runs_stay_above_the_floor(reg):
    Q = random_rotation(4, 7)
    Phi = Q @ np.diag([-3.0, 0.5, 1.0, 2.0]) @ Q.T
    tr = identity_gd_trace(Phi, 8, bhl_step_size(Phi, 8), 4000, reg=reg)
    assert np.all(tr.product_dets > 0)
    assert tr.losses.min() >= det_loss_floor(Phi) == pytest.approx(0.125)
    flipped = Q @ np.diag([3.0, 0.5, 1.0, 2.0]) @ Q.T  # same singular values, positive definite
    assert identity_gd_trace(flipped, 8, bhl_step_size(flipped, 8), 4000, reg=reg).losses.min() < 0.125


def test_bhl_functions_reject_bad_input():
    with pytest.raises(ValueError):
        bhl_step_size(np.ones((2, 3)), 2)
    with pytest.raises(ValueError):
        bhl_step_size(np.eye(2), 0)
    with pytest.raises(ValueError):
        bhl_step_size(np.eye(2), 2, scale=-1.0)
    with pytest.raises(TypeError):
        bhl_step_size(np.eye(2), 2.5)
    with pytest.raises(ValueError):
        identity_gd_trace(np.eye(2), 2, 0.1, 0)
    with pytest.raises(ValueError):
        identity_gd_trace(np.eye(2), 2, 0.1, 10, reg=-1.0)
    with pytest.raises(ValueError):
        identity_gd_trace(np.eye(2), 2, 0.1, 10, tol=0.0)
    with pytest.raises(ValueError):
        identity_gd_trace(np.eye(2), 2, float("nan"), 10)
    with pytest.raises(DivergenceError):
        identity_gd_trace(10 * np.eye(2), 4, 5.0, 50)
    with pytest.raises(ValueError):
        det_loss_floor(np.ones((2, 3)))


from resnet_theory.linear import symmetric_identity_gd  # noqa: E402


@pytest.mark.parametrize("reg", [0.0, 0.01])
def test_symmetric_reduction_agrees_with_matrix_runs_before_the_symmetry_breaks(reg):
    """The scalar recursion is what exact arithmetic does; float matrix runs follow it until rounding grows."""
    spectrum = np.array([-3.0, 0.5, 1.0, 2.0])
    Q = random_rotation(4, 11)
    Phi = Q @ np.diag(spectrum) @ Q.T
    eta = bhl_step_size(Phi, 8)
    exact = symmetric_identity_gd(spectrum, 8, eta, 300, reg=reg)
    matrix = identity_gd_trace(Phi, 8, eta, 300, reg=reg)
    np.testing.assert_allclose(exact.losses, matrix.losses, rtol=1e-9)
    eig = np.linalg.eigvalsh(0.5 * (matrix.layers[0] + matrix.layers[0].T))
    np.testing.assert_allclose(np.sort(eig), np.sort(exact.mu), atol=1e-9)


@pytest.mark.parametrize("reg", [0.0, 1e-3, 1e-2, 1e-1])
def test_exact_runs_keep_the_negative_eigenvalue_floor(reg):
    spectrum = np.array([-1.0, -0.5, 0.5, 2.0])
    eta = bhl_step_size(np.diag(spectrum), 8)
    run = symmetric_identity_gd(spectrum, 8, eta, 20_000, reg=reg)
    assert run.min_mu > 0 and run.losses.min() >= 0.5 * (1.0 + 0.25)
    flipped = symmetric_identity_gd(np.abs(spectrum), 8, eta, 20_000, reg=reg)
    assert flipped.losses[-1] < 0.01


def test_symmetric_identity_gd_rejects_bad_input():
    with pytest.raises(ValueError):
        symmetric_identity_gd(np.ones((2, 2)), 2, 0.1, 10)
    with pytest.raises(ValueError):
        symmetric_identity_gd([1.0, float("nan")], 2, 0.1, 10)
    with pytest.raises(ValueError):
        symmetric_identity_gd([1.0], 0, 0.1, 10)
    with pytest.raises(ValueError):
        symmetric_identity_gd([1.0], 2, -0.1, 10)
    with pytest.raises(ValueError):
        symmetric_identity_gd([1.0], 2, 0.1, 10, reg=-1.0)
    with pytest.raises(DivergenceError):
        symmetric_identity_gd([10.0], 4, 5.0, 50)
