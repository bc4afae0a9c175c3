"""The one argument-checking rule: TypeError for a wrong type, ValueError for a bad value."""

import errno
import math
import os
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
import torch

from resnet_theory import validate as v


# --- integers --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [3, np.int64(3), np.int32(3), np.uint8(3), np.array(3), sp.Integer(3)])
def test_integers_of_every_kind_are_accepted(value):
    out = v.positive_int("n", value)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value", [3.0, np.float64(3.0), True, np.True_, "3", None, 3 + 0j, [3]])
def test_non_integers_are_a_type_error(value):
    with pytest.raises(TypeError, match="n must be a positive integer"):
        v.positive_int("n", value)


@pytest.mark.parametrize("value,check", [(0, v.positive_int), (-1, v.non_negative_int)])
def test_out_of_range_integers_are_a_value_error_naming_argument_and_value(value, check):
    with pytest.raises(
        ValueError, match=rf"depth must be a (positive|non-negative) integer \(at least [01]\), got {value}"
    ):
        check("depth", value)


def test_integer_maximum():
    assert v.integer("k", 5, minimum=0, maximum=5) == 5
    with pytest.raises(ValueError, match="k must be at most 5, got 6"):
        v.integer("k", 6, maximum=5)


# --- reals -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value", [0.5, np.float32(0.5), np.float64(0.5), Fraction(1, 2), np.array(0.5), sp.Rational(1, 2), 1, np.int64(1)]
)
def test_reals_of_every_kind_are_accepted(value):
    out = v.positive_float("lr", value)
    assert type(out) is float and out == float(value)


def test_sympy_constants_are_reals():
    assert v.positive_float("x", sp.pi) == pytest.approx(math.pi)
    with pytest.raises(TypeError):
        v.positive_float("x", sp.I)
    with pytest.raises(TypeError):
        v.positive_float("x", sp.Symbol("t"))


@pytest.mark.parametrize("value", [True, np.False_, "0.5", None, 1 + 2j, np.complex128(1), [0.5]])
def test_non_reals_are_a_type_error(value):
    with pytest.raises(TypeError, match="lr must be a real number"):
        v.positive_float("lr", value)


def test_complex_is_named_as_such():
    with pytest.raises(TypeError, match="not complex"):
        v.finite_float("x", 1 + 0j)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_non_finite_is_a_value_error(value):
    with pytest.raises(ValueError, match="tol must be a finite number"):
        v.finite_float("tol", value)


def test_ranges_open_and_closed():
    assert v.non_negative_float("x", 0) == 0.0
    with pytest.raises(ValueError, match="x must be > 0"):
        v.positive_float("x", 0.0)
    with pytest.raises(ValueError, match="x must be >= 0"):
        v.non_negative_float("x", -1e-300)
    assert v.probability("p", 1) == 1.0
    with pytest.raises(ValueError, match="p must be < 1"):
        v.probability("p", 1.0, open_high=True)
    with pytest.raises(ValueError, match="got -1"):
        v.finite_float("newton_tol", -1, minimum=0, open_minimum=True)


# --- booleans and choices --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "value,expected", [(True, True), (False, False), (np.True_, True), (np.False_, False), (np.array(True), True)]
)
def test_booleans(value, expected):
    out = v.boolean("flip", value)
    assert out is expected


@pytest.mark.parametrize("value", [1, 0, "False", "no", None, 1.0])
def test_non_booleans_are_a_type_error(value):
    with pytest.raises(TypeError, match="flip must be True or False"):
        v.boolean("flip", value)


def test_choice():
    assert v.choice("loss", "squared", ("squared", "logistic")) == "squared"
    assert v.choice("loss", np.str_("logistic"), ("squared", "logistic")) == "logistic"
    with pytest.raises(ValueError, match="loss must be one of 'squared', 'logistic', got 'hinge'"):
        v.choice("loss", "hinge", ("squared", "logistic"))
    with pytest.raises(TypeError, match="loss must be one of"):
        v.choice("loss", 3, ("squared", "logistic"))
    # True is not the option 1, nor the option "True"
    with pytest.raises(ValueError):
        v.choice("k", True, (1, 2))
    assert v.choice("k", np.int64(2), (1, 2)) == 2


def test_callable_arg():
    assert v.callable_arg("f", abs) is abs
    with pytest.raises(TypeError, match="f must be a callable, got 3"):
        v.callable_arg("f", 3)


# --- arrays ----------------------------------------------------------------------------------------------
def test_finite_array_accepts_lists_arrays_tensors():
    for x in ([[1, 2], [3, 4]], np.eye(2, dtype=np.float32), torch.eye(2, requires_grad=True)):
        out = v.finite_array("A", x, shape=(2, None))
        assert out.dtype == np.float64 and out.shape == (2, 2)


@pytest.mark.parametrize(
    "x,exc,pattern",
    [
        (None, TypeError, "A must be a 2-D array of numbers"),
        ("abc", TypeError, "A must be a 2-D array of numbers"),
        ([["a"]], TypeError, "must hold numbers"),
        ([[1j, 0], [0, 1]], TypeError, "must be real"),
        ([[1, 2], [3]], ValueError, "ragged"),
        (np.zeros((0, 2)), ValueError, "empty"),
        (np.zeros(3), ValueError, "A must be 2-D, got array of shape"),
        ([[1.0, np.nan], [0, 1]], ValueError, r"NaN or inf \(1 entries; the first at index \(0, 1\)\)"),
    ],
)
def test_finite_array_refusals(x, exc, pattern):
    with pytest.raises(exc, match=pattern):
        v.finite_array("A", x, ndim=2)


def test_finite_array_shape_and_complex():
    with pytest.raises(ValueError, match=r"must have shape \(\*, 3\), got shape \(2, 2\)"):
        v.finite_array("X", np.eye(2), shape=(None, 3))
    out = v.finite_array("Z", [1j, 2], allow_complex=True)
    assert out.dtype == np.complex128


def test_square_matrix():
    assert v.square_matrix("R", np.eye(3), size=3).shape == (3, 3)
    with pytest.raises(ValueError, match="square"):
        v.square_matrix("R", np.ones((2, 3)))
    with pytest.raises(ValueError, match="must be 2 x 2"):
        v.square_matrix("R", np.eye(3), size=2)
    # huge but finite entries are fine: judging singularity is not the checker's business
    assert v.square_matrix("R", np.diag([1e300, 1.0]))[0, 0] == 1e300


def test_integer_array_never_wraps_around():
    assert v.integer_array("y", [0.0, 2.0, 1.0], ndim=1).tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"y holds 1e\+20 at index \(1,\), outside the 64-bit integer range"):
        v.integer_array("y", [0, 1e20], ndim=1)
    with pytest.raises(ValueError, match=r"found 0.5 at index \(0,\)"):
        v.integer_array("y", [0.5])
    with pytest.raises(ValueError, match=r"y must be <= 2; found 3 at index \(2,\)"):
        v.integer_array("y", [0, 1, 3], maximum=2)
    with pytest.raises(TypeError):
        v.integer_array("y", [1j])


# --- disk errors -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "code,words",
    [
        (errno.ENOSPC, "no space left on the device"),
        (errno.EDQUOT, "the disk quota is exceeded"),
        (errno.EACCES, "permission denied"),
        (errno.EPERM, "permission denied"),
        (errno.EROFS, "the file system is read-only"),
    ],
)
def test_storage_errors_are_named(code, words):
    exc = OSError(code, os.strerror(code), "/some/file")
    assert v.storage_problem(exc) == words
    assert v.describe_os_error(exc) == words


def test_other_errors_are_not_storage_problems():
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "/some/file")
    assert v.storage_problem(missing) is None
    assert v.describe_os_error(missing) == "[Errno 2] No such file or directory: '/some/file'"  # its own text
    assert v.storage_problem(OSError("no errno")) is None
    assert v.describe_os_error(OSError("no errno")) == "no errno"
    not_os = ValueError("bad")
    not_os.errno = errno.ENOSPC  # an errno attribute alone does not make a disk error
    assert v.storage_problem(not_os) is None


# --- budgets and divergence ------------------------------------------------------------------------------
def test_check_budget_names_the_estimate():
    assert v.check_budget("n", 10, 100) == 10.0
    with pytest.raises(v.BudgetError, match=r"widths=\[20000\] needs about 14 GB of memory, more than"):
        v.check_budget("widths", 14e9, 1e9, value=[20000])
    with pytest.raises(ValueError, match=r"depth needs about 1e\+15 operations of work"):
        v.check_budget("depth", 1e15, v.OPS_LIMIT, what="work", unit="operations")
    with pytest.raises(ValueError):
        v.check_budget("n", math.nan, 1)


def test_memory_limit_is_positive_and_overridable(monkeypatch):
    assert v.memory_limit_bytes() > 10**8
    monkeypatch.setenv("RESNET_THEORY_MEMORY_LIMIT", "1e6")
    assert v.memory_limit_bytes() == 10**6


def test_divergence_error_is_a_floating_point_error():
    assert issubclass(v.DivergenceError, FloatingPointError)
    assert issubclass(v.DivergenceError, ArithmeticError)
    assert issubclass(v.BudgetError, ValueError)


def test_long_values_are_cut_in_messages():
    with pytest.raises(TypeError) as info:
        v.positive_int("n", "x" * 1000)
    assert len(str(info.value)) < 200


# --- instances, paths, devices, tensors, orders ---------------------------------------------------------------
def test_instance_and_path():
    assert v.instance("g", torch.Generator(), torch.Generator) is not None
    with pytest.raises(TypeError, match="generator must be a torch.Generator, got 3 \\(int\\)"):
        v.instance("generator", 3, torch.Generator, what="a torch.Generator")
    with pytest.raises(TypeError, match="rows must be a dict or a list"):
        v.instance("rows", 3, (dict, list))
    from pathlib import Path

    assert v.path("root", "data") == "data" and v.path("root", Path("x")) == Path("x")
    with pytest.raises(TypeError, match=r"root must be a path \(str or pathlib.Path\), got 3"):
        v.path("root", 3)
    with pytest.raises(ValueError, match="root must be a path, got an empty name ''"):
        v.path("root", "")


def test_torch_device():
    assert v.torch_device("device", "cpu") == torch.device("cpu")
    assert v.torch_device("device", torch.device("cpu")).type == "cpu"
    with pytest.raises(ValueError, match="device must be 'cpu' or a CUDA device, got 'tpu9'"):
        v.torch_device("device", "tpu9")
    with pytest.raises(TypeError, match="device must be a device name"):
        v.torch_device("device", 3.5)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available here"):
            v.torch_device("device", "cuda")


def test_tensor():
    x = torch.zeros(2, 3)
    assert v.tensor("x", x, ndim=2, floating=True) is x
    with pytest.raises(TypeError, match=r"x must be a torch tensor of shape \(N, C, H, W\), got array"):
        v.tensor("x", np.zeros((1, 1, 2, 2)), ndim=4, shape_text="(N, C, H, W)")
    with pytest.raises(ValueError, match=r"got shape \(2, 3\)"):
        v.tensor("x", x, ndim=4)
    with pytest.raises(ValueError, match="got dtype torch.int64"):
        v.tensor("x", torch.zeros(2, dtype=torch.int64), floating=True)


def test_increasing_and_positive_arrays():
    a = np.array([0.0, 0.5, 1.0])
    assert v.increasing("a", a) is a
    with pytest.raises(ValueError, match="a must be increasing; found 0.5 then 0.5 at indices 1 and 2"):
        v.increasing("a", np.array([0.0, 0.5, 0.5]))
    assert v.increasing("a", np.array([1, 1, 2]), strict=False).size == 3
    with pytest.raises(ValueError, match="m must be non-decreasing; found 3 then 2"):
        v.increasing("m", np.array([3, 2]), strict=False)
    with pytest.raises(ValueError, match=r"y must be positive; found 0.0 at index \(1,\)"):
        v.finite_array("y", [1.0, 0.0], positive=True)
