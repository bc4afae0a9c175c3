"""The log-log rate plot: its legend quotes the fitted exponent, and the fitted line runs through the points."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from resnet_theory.fits import fit_power_law
from resnet_theory.plotting import loglog_with_fit


def test_loglog_with_fit_draws_the_points_and_their_fitted_power_law():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    y = 3.0 * x**-1.5
    ax = Figure().add_subplot()
    p = loglog_with_fit(ax, x, y, "rate")
    assert p == pytest.approx(fit_power_law(x, y)[0]) and p == pytest.approx(-1.5, abs=1e-12)
    points, line = ax.get_lines()
    assert points.get_label() == "rate (slope -1.50)" and points.get_color() == line.get_color()
    assert np.allclose(points.get_ydata(), y)
    xs, ys = line.get_xdata(), line.get_ydata()
    assert xs[0] == 1.0 and xs[-1] == 8.0 and np.allclose(ys, 3.0 * xs**-1.5)
    assert ax.get_xscale() == ax.get_yscale() == "log"


def test_loglog_with_fit_refuses_what_the_fit_refuses():
    with pytest.raises(ValueError, match=r"y must be positive; found 0.0 at index \(1,\)"):
        loglog_with_fit(Figure().add_subplot(), [1, 2, 3], [1, 0, 3], "rate")
