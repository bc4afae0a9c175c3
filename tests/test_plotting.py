"""The log-log rate fit the chapters quote: exact on a power law, and bad input refused by the one rule."""

import numpy as np
import pytest

from resnet_theory.plotting import fit_power_law


def test_power_law_is_recovered_exactly():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    p, c = fit_power_law(x, 3.0 * x ** -1.5)
    assert p == pytest.approx(-1.5, abs=1e-12) and c == pytest.approx(3.0, rel=1e-12)
    assert fit_power_law([1, 2], [np.float32(2), np.int64(4)]) == pytest.approx((1.0, 2.0))


@pytest.mark.parametrize("x, y, exc, words", [
    ([1, 2, 3], [1, 2], ValueError, "x and y must have the same length, got 3 and 2"),
    ([1], [1], ValueError, "at least 2 points, got 1"),
    ([1, 0, 3], [1, 2, 3], ValueError, r"x must be positive; found 0.0 at index \(1,\)"),
    ([1, 2, 3], [1, -2, 3], ValueError, r"y must be positive; found -2.0 at index \(1,\)"),
    ([1, 2, np.nan], [1, 2, 3], ValueError, "x contains NaN or inf"),
    ([1, 2], [1 + 1j, 2], TypeError, "y must be real, got complex"),
    ([1, 2], "12", TypeError, "y must be a 1-D array of numbers"),
    ([[1, 2]], [[1, 2]], ValueError, "x must be 1-D"),
])
def test_bad_input_is_refused_naming_the_argument(x, y, exc, words):
    with pytest.raises(exc, match=words):
        fit_power_law(x, y)
