"""How many seeds a statistical check needs to decide: a power calculation for the book's comparisons.

A statistical check (:meth:`resnet_theory.verdicts.Check.statistical`) decides when its estimate is at least
``decisive`` (2) standard errors from its threshold. For a difference of two means with Welch's standard error,
``margin = (mean_a - mean_b) / sqrt(s_a^2 / n_a + s_b^2 / n_b)`` follows (approximately) a noncentral t
distribution with Welch-Satterthwaite degrees of freedom and noncentrality ``effect / SE``, where ``effect``
and the standard deviations are the true ones. Given a pilot's effect and noise, :func:`margin_power` is the
probability that a repeat with ``n`` seeds per side decides in the pilot's direction, and :func:`seeds_for`
the fewest seeds that make that probability at least ``probability`` (the experiments chapter sizes its runs
with it at 99.9%). With ``sd_b=None`` the check is one sample against a threshold (``sd_a`` is then the noise
of one run, e.g. the median's bootstrap standard error times the square root of the pilot's seeds).

The approximation assumes roughly normal scores. A two-mode outcome (a run trains or diverges) is not
normal: a small sample may miss the rarer mode and so understate the noise, which is why :func:`seeds_for`
never goes below ``minimum``.
"""

from __future__ import annotations

import math

from scipy import stats

from . import validate

#: A statistical check decides at this many standard errors (as :mod:`resnet_theory.verdicts`).
DECISIVE = 2.0


def _welch_df(sd_a: float, sd_b: float | None, n: int) -> float:
    if sd_b is None:
        return float(n - 1)
    va, vb = sd_a**2 / n, sd_b**2 / n
    if va + vb == 0:
        return float(2 * n - 2)
    return (va + vb) ** 2 / (va**2 / (n - 1) + vb**2 / (n - 1))


def margin_power(effect, sd_a, sd_b=None, *, n, decisive: float = DECISIVE) -> float:
    """The probability that a check with ``n`` seeds per sample has a margin of at least ``decisive``
    standard errors in the direction of ``effect`` (the true difference or the true distance from the
    threshold), when the true per-run standard deviations are ``sd_a`` (and ``sd_b``)."""
    effect = abs(validate.finite_float("effect", effect))
    sd_a = validate.non_negative_float("sd_a", sd_a)
    sd_b = None if sd_b is None else validate.non_negative_float("sd_b", sd_b)
    n = validate.integer("n", n, minimum=2)
    decisive = validate.positive_float("decisive", decisive)
    se = math.sqrt((sd_a**2 + (0.0 if sd_b is None else sd_b**2)) / n)
    if se == 0:
        return 1.0 if effect > 0 else 0.0
    return float(stats.nct.sf(decisive, _welch_df(sd_a, sd_b, n), effect / se))


def seeds_for(
    effect,
    sd_a,
    sd_b=None,
    *,
    probability: float = 0.999,
    minimum: int = 4,
    maximum: int = 1000,
    decisive: float = DECISIVE,
) -> int:
    """The fewest seeds per sample, at least ``minimum``, whose check decides in ``effect``'s direction with
    at least ``probability`` (see :func:`margin_power`); ``maximum`` when even that many do not suffice (a
    comparison within its noise: the caller keeps what it can afford and says so)."""
    probability = validate.probability("probability", probability, open_low=True, open_high=True)
    minimum = validate.integer("minimum", minimum, minimum=2)
    maximum = validate.integer("maximum", maximum, minimum=minimum)
    margin_power(effect, sd_a, sd_b, n=minimum, decisive=decisive)  # validates the rest
    if margin_power(effect, sd_a, sd_b, n=maximum, decisive=decisive) < probability:
        return maximum
    low, high = minimum, maximum  # power grows with n: the smallest n in [low, high] that reaches it
    while low < high:
        mid = (low + high) // 2
        if margin_power(effect, sd_a, sd_b, n=mid, decisive=decisive) >= probability:
            high = mid
        else:
            low = mid + 1
    return low
