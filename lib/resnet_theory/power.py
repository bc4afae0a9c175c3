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


# --- a sequential design: looks at growing seed counts, stopping early only at a stricter margin ----------------
#: A comparison stops at an interim look only when its margin reaches this many standard errors; at its last
#: look it decides at :data:`DECISIVE`, as a fixed design does. Haybittle and Peto's rule stops at 3 for normal
#: statistics; at the first looks' 4 to 8 seeds a margin follows a t distribution with few degrees of freedom,
#: whose tails are heavier, hence 3.5 (:func:`sequential_rates` gives what each choice costs in errors).
EARLY_STOP = 3.5


def ladder(cap: int, start: int = 4) -> tuple[int, ...]:
    """The seed counts at which a sequential design looks: ``start``, doubling while below ``cap``, then
    ``cap`` (``(cap,)`` when ``cap <= start``): ``ladder(30) == (4, 8, 16, 30)``."""
    cap = validate.integer("cap", cap, minimum=2)
    start = validate.integer("start", start, minimum=2)
    rungs, n = [], min(start, cap)
    while n < cap:
        rungs.append(n)
        n *= 2
    return (*rungs, cap)


def _welch_margins(a, b, looks, effect: float):
    """Margins ``(repeats, looks)`` of simulated comparisons: one sample (``b`` None) or Welch's two."""
    import numpy as np

    out = []
    for n in looks:
        xa = a[:, :n]
        va = xa.var(axis=1, ddof=1) / n
        if b is None:
            est, var = xa.mean(axis=1) + effect, va
        else:
            xb = b[:, :n]
            est, var = xa.mean(axis=1) - xb.mean(axis=1) + effect, va + xb.var(axis=1, ddof=1) / n
        out.append(est / np.sqrt(var))
    return np.stack(out, axis=1)


def sequential_rates(
    effect,
    sd_a,
    sd_b=None,
    *,
    looks,
    early: float = EARLY_STOP,
    decisive: float = DECISIVE,
    repeats: int = 20_000,
    seed: int = 0,
) -> dict:
    """Monte Carlo of a sequential comparison with normal scores (true difference ``effect``, per-run
    standard deviations ``sd_a``, ``sd_b``; ``sd_b=None``: one sample against a threshold): it looks at each
    seed count of ``looks`` in turn, stops at an interim look when its margin reaches ``early`` standard
    errors, and at the last look decides at ``decisive``. Returns the fractions of ``repeats`` that end
    decided in ``effect``'s direction (``"right"``; with ``effect`` 0, the positive direction) and in the
    other (``"wrong"``), and the mean seeds per sample used (``"seeds"``)."""
    import numpy as np

    effect = validate.finite_float("effect", effect)
    sd_a = validate.positive_float("sd_a", sd_a)
    sd_b = None if sd_b is None else validate.positive_float("sd_b", sd_b)
    looks = tuple(validate.integer("looks", n, minimum=2) for n in looks)
    if not looks or list(looks) != sorted(set(looks)):
        raise ValueError(f"looks must be increasing seed counts, got {looks!r}")
    early = validate.positive_float("early", early)
    decisive = validate.positive_float("decisive", decisive)
    repeats = validate.integer("repeats", repeats, minimum=1)
    numbers = repeats * looks[-1] * (1 if sd_b is None else 2)
    validate.check_budget("looks and repeats", 32.0 * numbers,  # the samples and working copies
                          validate.memory_limit_bytes(0.25),
                          value=f"{repeats} repeats of {looks[-1]} seeds")  # fmt: skip
    rng = np.random.default_rng(validate.integer("seed", seed, minimum=0))
    a = rng.normal(0.0, sd_a, (repeats, looks[-1]))
    b = None if sd_b is None else rng.normal(0.0, sd_b, (repeats, looks[-1]))
    margins = _welch_margins(a, b, looks, effect)
    thresholds = np.array([early] * (len(looks) - 1) + [decisive])
    crossed = np.abs(margins) >= thresholds
    stop = np.where(crossed.any(axis=1), crossed.argmax(axis=1), len(looks) - 1)
    final = margins[np.arange(repeats), stop]
    decided = np.abs(final) >= thresholds[stop]
    sign = 1.0 if effect >= 0 else -1.0
    return {
        "right": float(np.mean(decided & (sign * final > 0))),
        "wrong": float(np.mean(decided & (sign * final < 0))),
        "seeds": float(np.mean(np.array(looks)[stop])),
    }


def sequential_null_bound(looks, *, early: float = EARLY_STOP, decisive: float = DECISIVE, two_sample=True) -> float:
    """An upper bound on how often a sequential comparison with no true effect ends decided (either way), for
    normal scores of equal noise: each interim look's chance of a margin beyond ``early`` plus the last look's
    of one beyond ``decisive`` (Student's t with the look's degrees of freedom; a union bound, so the looks'
    dependence can only make the truth smaller)."""
    looks = tuple(validate.integer("looks", n, minimum=2) for n in looks)
    if not looks:
        raise ValueError("looks must name at least one seed count")
    total = 0.0
    for i, n in enumerate(looks):
        df = 2 * n - 2 if two_sample else n - 1
        total += 2 * float(stats.t.sf(early if i < len(looks) - 1 else decisive, df))
    return min(total, 1.0)
