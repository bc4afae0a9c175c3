"""The rate fits the chapters quote: exact on a power law (and on an exponential), and bad input refused by the
one rule, naming the argument."""

import numpy as np
import pytest

from resnet_theory.fits import GrowthFit, fit_power_law, growth_fit


def test_power_law_is_recovered_exactly():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    p, c = fit_power_law(x, 3.0 * x**-1.5)
    assert p == pytest.approx(-1.5, abs=1e-12) and c == pytest.approx(3.0, rel=1e-12)
    assert fit_power_law([1, 2], [np.float32(2), np.int64(4)]) == pytest.approx((1.0, 2.0))


@pytest.mark.parametrize(
    "x, y, exc, words",
    [
        ([1, 2, 3], [1, 2], ValueError, "x and y must have the same length, got 3 and 2"),
        ([1], [1], ValueError, "fit_power_law needs at least 2 points, got 1"),
        ([1, 0, 3], [1, 2, 3], ValueError, r"x must be positive; found 0.0 at index \(1,\)"),
        ([1, 2, 3], [1, -2, 3], ValueError, r"y must be positive; found -2.0 at index \(1,\)"),
        ([1, 2, np.nan], [1, 2, 3], ValueError, "x contains NaN or inf"),
        ([1, 2], [1 + 1j, 2], TypeError, "y must be real, got complex"),
        ([1, 2], "12", TypeError, "y must be a 1-D array of numbers"),
        ([[1, 2]], [[1, 2]], ValueError, "x must be 1-D"),
    ],
)
def test_bad_input_is_refused_naming_the_argument(x, y, exc, words):
    with pytest.raises(exc, match=words):
        fit_power_law(x, y)


def test_growth_fit_tells_power_laws_from_exponentials():
    x = np.array([2.0, 4, 8, 16, 32])
    power = growth_fit(x, 3 * x**1.75)
    assert isinstance(power, GrowthFit) and power.exponent == pytest.approx(1.75, abs=1e-9)
    assert power.power_rms < 1e-9 < power.exponential_rms and power.power_law_fits_better
    assert power.exponent_se < 1e-9
    s = np.linspace(5.0, 20.0, 7)
    expo = growth_fit(s, 2 * np.exp(0.5 * s))
    assert expo.exponential_rms < 1e-9 < expo.power_rms and not expo.power_law_fits_better
    affine = growth_fit(s, 40 * (s - 3))  # linear convergence: steps affine in log(1/eps)
    assert affine.power_law_fits_better


@pytest.mark.parametrize(
    "x, y, exc, words",
    [
        ([1.0, 2.0, 3.0], [1.0, 2.0], ValueError, "x and y must have the same length, got 3 and 2"),
        ([1.0, 2.0], [1.0, 2.0], ValueError, "growth_fit needs at least 3 points, got 2"),
        ([1.0, 1.0, 2.0], [1.0, 2.0, 3.0], ValueError, "growth_fit needs at least 3 distinct values of x"),
        ([1.0, 2.0, -3.0], [1.0, 2.0, 3.0], ValueError, r"x must be positive; found -3.0 at index \(2,\)"),
        ([1.0, 2.0, 3.0], [1.0, 0.0, 3.0], ValueError, r"y must be positive; found 0.0 at index \(1,\)"),
        ([1.0, 2.0, 3.0], [1.0, 2.0, np.inf], ValueError, "y contains NaN or inf"),
        ("123", [1.0, 2.0, 3.0], TypeError, "x must be a 1-D array of numbers"),
    ],
)
def test_growth_fit_refuses_bad_input_naming_the_argument(x, y, exc, words):
    with pytest.raises(exc, match=words):
        growth_fit(x, y)
