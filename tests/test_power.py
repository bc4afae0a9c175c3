"""resnet_theory.power: the seeds a statistical check needs, checked against simulated experiments, and the
experiments chapter's sizing built on it (resnet_theory.claims.experiments_sizing)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from resnet_theory import power
from resnet_theory.claims import experiments as E
from resnet_theory.claims import experiments_sizing as S


def simulated_margins(effect, sd_a, sd_b, n, draws=20_000, seed=0):
    """Welch margins of ``draws`` repeats with normal scores, as Check.statistical computes them."""
    rng = np.random.default_rng(seed)
    a = rng.normal(effect, sd_a, (draws, n))
    if sd_b is None:
        return a.mean(1) / (a.std(1, ddof=1) / np.sqrt(n))
    b = rng.normal(0.0, sd_b, (draws, n))
    return (a.mean(1) - b.mean(1)) / np.sqrt(a.var(1, ddof=1) / n + b.var(1, ddof=1) / n)


@pytest.mark.parametrize("effect, sd_a, sd_b, n", [(1.0, 1.0, 1.0, 8), (0.3, 0.2, 0.6, 5), (0.05, 0.04, None, 4)])
def test_the_power_is_the_simulated_rate_of_decisive_margins(effect, sd_a, sd_b, n):
    predicted = power.margin_power(effect, sd_a, sd_b, n=n)
    simulated = float(np.mean(simulated_margins(effect, sd_a, sd_b, n) >= 2))
    assert 0.05 < predicted < 0.995  # a case where the answer is not trivially 0 or 1
    assert simulated == pytest.approx(predicted, abs=0.02)


def test_seeds_for_gives_the_stated_error_rate_and_no_fewer_seeds_would():
    n = power.seeds_for(1.0, 1.0, 1.0, probability=0.999)
    assert power.margin_power(1.0, 1.0, 1.0, n=n) >= 0.999 > power.margin_power(1.0, 1.0, 1.0, n=n - 1)
    # simulated: fewer than 0.1% of repeats fail to decide (20,000 repeats: about 20 expected at most)
    undecided = int(np.sum(simulated_margins(1.0, 1.0, 1.0, n) < 2))
    assert undecided <= 45, undecided
    # one seed fewer misses the rate in simulation too
    assert int(np.sum(simulated_margins(1.0, 1.0, 1.0, n - 8, seed=1) < 2)) > 20


@settings(max_examples=30, deadline=None)
@given(
    effect=st.floats(0.01, 10.0),
    sd=st.floats(0.01, 5.0),
    ratio=st.floats(0.2, 5.0),
    probability=st.sampled_from([0.9, 0.99, 0.999]),
)
def test_seeds_for_is_the_smallest_that_reaches_the_probability(effect, sd, ratio, probability):
    n = power.seeds_for(effect, sd, sd * ratio, probability=probability, minimum=2, maximum=5000)
    if n < 5000:
        assert power.margin_power(effect, sd, sd * ratio, n=n) >= probability
    if n > 2:
        assert power.margin_power(effect, sd, sd * ratio, n=n - 1) < probability
    # a bigger effect never needs more seeds
    assert power.seeds_for(2 * effect, sd, sd * ratio, probability=probability, minimum=2, maximum=5000) <= n


def test_comparisons_far_beyond_their_noise_need_the_minimum_and_hopeless_ones_the_maximum():
    assert power.seeds_for(2.3, 0.001, 0.001) == 4  # thousands of standard errors
    assert power.seeds_for(1e-3, 1.0, 1.0, maximum=50) == 50  # within the noise of any affordable size
    assert power.margin_power(1.0, 0.0, 0.0, n=2) == 1.0 and power.margin_power(0.0, 0.0, None, n=3) == 0.0


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: power.margin_power(float("nan"), 1, 1, n=4), "effect must be a finite number"),
        (lambda: power.margin_power(1, -1, 1, n=4), "sd_a must be >= 0"),
        (lambda: power.margin_power(1, 1, -2, n=4), "sd_b must be >= 0"),
        (lambda: power.margin_power(1, 1, 1, n=1), "n must be at least 2"),
        (lambda: power.margin_power(1, 1, 1, n=4, decisive=0), "decisive must be > 0"),
        (lambda: power.seeds_for(1, 1, 1, probability=1.0), "probability must be < 1"),
        (lambda: power.seeds_for(1, 1, 1, minimum=1), "minimum must be at least 2"),
        (lambda: power.seeds_for(1, 1, 1, minimum=10, maximum=5), "maximum must be at least 10"),
        (lambda: power.seeds_for("1", 1, 1), "effect must be a real number"),
    ],
)
def test_bad_input_is_refused_in_one_line(call, words):
    with pytest.raises((ValueError, TypeError), match=words):
        call()


# --- the experiments chapter's sizing ----------------------------------------------------------------------------
def test_the_quick_seed_knobs_are_the_power_calculation_on_the_pilot():
    assert S.PILOT, "the pilot's comparisons are recorded"
    sized = S.sized_knobs()
    assert {k: E.PROFILE.knobs[k].value("quick") for k in E.SEED_KNOBS} == sized
    for c in S.PILOT:
        n = sized[c.knob]
        assert S.MINIMUM <= n <= S.PILOT_SIZES[c.knob]
        if c.needed() <= S.PILOT_SIZES[c.knob]:  # sized: decides with the stated probability
            assert power.margin_power(c.planning_effect, c.sd_a, c.sd_b, n=n) >= S.PROBABILITY
        else:  # decided by a few standard errors: keeps the pilot's size
            assert n == S.PILOT_SIZES[c.knob]


def test_a_comparison_within_its_noise_keeps_the_pilots_size_and_a_huge_one_the_minimum():
    near = S.PilotComparison("x", "statement", "x", "n_seeds", effect=0.3, sd_a=0.3, sd_b=0.3, n=10)
    far = S.PilotComparison("x", "control", "x", "control_seeds", effect=-2.3, sd_a=1e-3, sd_b=1e-3, n=10)
    assert near.chosen() == S.PILOT_SIZES["n_seeds"] and far.chosen() == S.MINIMUM
    assert far.margin < -1000 and near.planning_effect == pytest.approx(0.3 - near.standard_error)
    rows = S.sizing_rows((near, far))
    assert [r["quick seeds"] for r in rows] == [S.PILOT_SIZES["n_seeds"], S.MINIMUM]
    assert rows[1]["P(decides)"] > 0.999


def test_margin_rows_put_each_checks_margin_beside_the_pilots():
    from resnet_theory.verdicts import Check, NoUsableControl

    def stat(estimate, n):
        return Check.statistical(estimate, 0.1, 0.0, what="x", test="x", n=n)

    statement = Check.combine([stat(1.0, 21), stat(2.0, 20)], what="both depths")
    control = NoUsableControl.unless_decisive(stat(0.1, 4))  # a control without power keeps the check it tried
    rows = S.margin_rows({S._TRAINS: (statement, control)})
    mine = [r for r in rows if r["claim"] == S._TRAINS]
    assert [(r["margin now (SE)"], r["seeds now"]) for r in mine] == [(10.0, 21), (20.0, 20), (1.0, 4)]
    assert [r["margin before (SE)"] for r in mine] == [c.margin for c in S.PILOT if c.claim == S._TRAINS]
    assert all(r["margin now (SE)"] is None for r in rows if r["claim"] != S._TRAINS)
