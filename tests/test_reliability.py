"""Reproductions from the reliability issue (#14), one test each: the shared argument rule across modules, fast
refusal of sizes the machine cannot handle, and messages that say what is actually wrong."""

from __future__ import annotations

import time

import numpy as np
import pytest

from resnet_theory import expressivity, linear, shamir, smooth, validate


def _rotation(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


@pytest.mark.parametrize("call", [
    lambda: linear.factorization_plan(_rotation(2.0), 10**8),
    lambda: linear.factorize_near_identity(_rotation(2.0), 10**9),
])
def test_huge_depths_are_refused_at_once_with_the_estimate(call):
    start = time.perf_counter()
    with pytest.raises(validate.BudgetError, match=r"depth=1000000000? needs about 1e\+0[89] loop iterations"):
        call()
    assert time.perf_counter() - start < 1.0


def test_ill_conditioned_matrix_is_not_called_singular():
    R = np.diag([1e300, 1.0])
    assert linear.gamma(R) == pytest.approx(np.log(1e300))      # gamma is perfectly finite
    with pytest.raises(ValueError) as info:
        linear.factorize_near_identity(R, 3)
    message = str(info.value)
    assert "singular (det R = 0)" not in message and "ill-conditioned" in message and "1e+300" in message
    with pytest.raises(ValueError, match=r"singular \(det R = 0\)"):
        linear.factorize_near_identity(np.diag([1.0, 0.0]), 3)   # a truly singular one still is


@pytest.mark.parametrize("call", [
    lambda: linear.compose(np.ones((1, 2, 2)) * (1 + 1j)),
    lambda: linear.gamma(np.eye(2) * (1 + 0.5j)),
    lambda: shamir.linear_objective(np.ones((3, 2)) * 1j, np.ones(3), np.ones(2)),
    lambda: expressivity.separation(np.ones((3, 2)) * 1j),
])
def test_complex_input_is_refused_not_truncated(call):
    with pytest.raises(TypeError, match="must be real, got complex values"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: linear.factorize_near_identity(np.eye(2), 2.0), "depth"),
    (lambda: smooth.ball_points(2.0, 2, 1.0), "n"),
    (lambda: shamir.critical_points(0.1, n_starts=8.0), "n_starts"),
    (lambda: expressivity.paper_k(10.0, 0.5), "n"),
])
def test_a_float_where_an_integer_is_meant_is_a_type_error_everywhere(call, name):
    with pytest.raises(TypeError, match=rf"{name} must be (a positive |an )integer"):
        call()


def test_numpy_scalars_and_numpy_bools_are_accepted_everywhere():
    assert linear.factorize_near_identity(np.eye(2), np.int64(3)).shape == (3, 2, 2)
    assert smooth.ball_points(np.int32(4), np.int64(2), np.float32(1.0)).shape == (4, 2)
    assert validate.boolean("flag", np.True_) is True


def test_labels_too_large_for_int64_are_named_with_their_value():
    X = np.random.default_rng(0).standard_normal((3, 2))
    with pytest.raises(ValueError, match=r"y holds 1e\+20 at index \(1,\)") as info:
        expressivity.build_interpolating_resnet(X, np.array([0.0, 1e20, 1.0]))
    assert "-9223372036854775808" not in str(info.value)


def test_inputs_scaled_by_1e200_get_a_message_about_scale_not_lemma_b1():
    X = np.random.default_rng(1).standard_normal((6, 2)) * 1e200
    with pytest.raises(ValueError, match="squared norms overflow float64") as info:
        expressivity.build_interpolating_resnet(X, np.array([0, 1, 0, 1, 0, 1]))
    assert "Lemma B.1" not in str(info.value)


@pytest.mark.parametrize("tol", [float("nan"), -1.0, 0.0])
def test_critical_points_refuses_a_bad_tolerance(tol):
    with pytest.raises(ValueError, match="tol must be"):
        shamir.critical_points(0.1, tol=tol)


def test_one_divergence_exception():
    assert issubclass(smooth.NewtonConvergenceError, validate.DivergenceError)
    from resnet_theory.train import TrainingDiverged
    assert issubclass(TrainingDiverged, validate.DivergenceError) and issubclass(TrainingDiverged, RuntimeError)
    with pytest.raises(validate.DivergenceError, match="diverged"):
        linear.identity_init_gd(np.eye(2) * 3, 4, 50, lr=50.0)
