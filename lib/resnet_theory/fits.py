"""Rate fits the chapters quote: a power law on log-log axes, and a power law against an exponential.

:func:`fit_power_law` gives the exponent a chapter reports for a rate (and :func:`resnet_theory.plotting.
loglog_with_fit` draws it); :func:`growth_fit` asks which of the two shapes, ``c x^p`` or ``b e^(c x)``, a
sequence of step counts follows (Bartlett, Helmbold & Long's polynomial growth in ``book/linear.md``). Both
take positive finite 1-D ``x`` and ``y`` of one length and say which argument is wrong otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import validate

__all__ = ["GrowthFit", "fit_power_law", "growth_fit"]


def _positive_pairs(x, y, fit: str, minimum: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``y`` as positive finite 1-D float arrays of one length, at least ``minimum`` points, for the
    fit named ``fit`` (named in the message)."""
    x = validate.finite_array("x", x, ndim=1, positive=True)
    y = validate.finite_array("y", y, ndim=1, positive=True)
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
    if x.size < minimum:
        raise ValueError(f"{fit} needs at least {minimum} points, got {x.size}")
    return x, y


def fit_power_law(x, y) -> tuple[float, float]:
    """Least-squares fit of ``y = c x^p`` on log-log axes; returns ``(p, c)``."""
    x, y = _positive_pairs(x, y, "fit_power_law", 2)
    p, logc = np.polyfit(np.log(x), np.log(y), 1)
    return float(p), float(np.exp(logc))


@dataclass
class GrowthFit:
    """How step counts grow with a variable ``x`` (:func:`growth_fit`).

    ``exponent`` (with its least-squares standard error) and ``power_rms`` are from ``log y = a + p log x``;
    ``exponential_rms`` from ``log y = b + c x``; both RMS residuals are in ``log y``."""

    exponent: float
    exponent_se: float
    power_rms: float
    exponential_rms: float

    @property
    def power_law_fits_better(self) -> bool:
        """A power law in ``x`` describes the points at least as well as an exponential in ``x``."""
        return self.power_rms <= self.exponential_rms


def growth_fit(x, y) -> GrowthFit:
    """Fit ``y = c x^p`` and ``y = b e^(c x)`` by least squares on ``log y``; see :class:`GrowthFit`.

    A finite grid cannot prove that growth is polynomial; the comparison says which of the two shapes the
    points follow over the grid (an exponential in ``x`` bends upwards on log-log axes)."""
    x, y = _positive_pairs(x, y, "growth_fit", 3)
    if np.unique(x).size < 3:
        raise ValueError("growth_fit needs at least 3 distinct values of x")
    logx, logy = np.log(x), np.log(y)

    def line(u):
        slope, intercept = np.polyfit(u, logy, 1)
        resid = logy - (slope * u + intercept)
        return float(slope), resid

    p, r_pow = line(logx)
    _, r_exp = line(x)
    se = math.sqrt(float(np.sum(r_pow**2)) / (x.size - 2) / float(np.sum((logx - logx.mean()) ** 2)))
    return GrowthFit(p, se, float(np.sqrt(np.mean(r_pow**2))), float(np.sqrt(np.mean(r_exp**2))))
