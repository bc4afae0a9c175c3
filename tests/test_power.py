"""resnet_theory.power: the seeds a statistical check needs, checked against simulated experiments, and the
experiments chapter's sizing built on it (resnet_theory.claims.experiments_sizing)."""

from __future__ import annotations

import json
from pathlib import Path

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
    assert S.PILOT is not None and len(S.PILOT.comparisons) == len(S.COMPARISONS), "the shipped pilot is read"
    sized = S.sized_knobs()
    assert {k: E.PROFILE.knobs[k].value("quick") for k in E.SEED_KNOBS} == sized
    for c in S.PILOT.comparisons:
        n, cap = sized[c.knob], S.PILOT.sizes[c.knob]
        assert c.cap == cap and S.MINIMUM <= n <= cap
        if c.needed() <= cap:  # sized: decides with the stated probability
            assert power.margin_power(c.planning_effect, c.sd_a, c.sd_b, n=n) >= S.PROBABILITY
        else:  # decided by a few standard errors: keeps the pilot's size
            assert n == cap


def test_the_shipped_pilot_ran_at_the_quick_workload_and_says_where_it_comes_from():
    prov = S.PILOT.provenance
    assert prov["profile"] == "quick" and prov["commit"] and isinstance(prov["seed"], int)
    assert {k: S.PILOT.knobs[k] for k in S.WORKLOAD_KNOBS} == {k: E.PROFILE.knobs[k].value("quick") for k in
                                                               S.WORKLOAD_KNOBS}  # fmt: skip
    assert S.PILOT.sizes == S.PILOT_SIZES and sum(S.PILOT.cpu_seconds.values()) > 0
    assert "data/*.json" in (ROOT / "pyproject.toml").read_text(), "the pilot is shipped as package data"


def test_the_shipped_pilot_was_written_by_the_command_at_a_seed_the_book_is_not_checked_at():
    """Seeds 0, 1 and 2 test the sizing; a pilot at one of them would only repeat it (the first pilot was typed
    from the chapter's seed-0 record, and sized the seeds to the seed it was then checked at)."""
    prov = S.PILOT.provenance
    assert prov["seed"] not in (0, 1, 2)
    assert "--pilot" in prov["command"] and "benchmarks.experiments" in prov["command"]


def test_the_comparisons_the_chapter_names_short_of_seeds_are_the_pilots():
    """The chapter's prose names the comparisons the shipped pilot finds short of seeds (the small
    initialisation's two, the degradation's control, and the fixed head within its noise) and says the seeds they
    ask for are several times the pilot's: both read from the pilot, so a new pilot that changes them fails here."""
    short = {(r["claim"], r["check"].split(":")[0]) for r in S.short_rows()}
    assert short == {(S._INIT, "statement"), (S._BEST, "statement"), (S._DEG, "control"), (S._HEAD, "statement")}
    assert all(r["seeds needed"] >= 3 * r["quick seeds"] and r["P(decides)"] < 0.9 for r in S.short_rows())
    assert S.sizing_glue()["size_short"] == len(S.short_rows())
    chapter = (ROOT / "book" / "experiments.md").read_text()
    for key in ("size_init_needed", "size_best_needed", "size_deg_control_needed", "size_short"):
        assert "{glue:text}`" + key in chapter


def bench_cells():
    from resnet_theory.benchmarks import experiments as bench

    return bench.CELLS


ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_pilot(tmp_path_factory):
    """The pilot command at the tiny profile (seed 100, no worker processes), and the path it wrote."""
    import torch

    from resnet_theory.benchmarks import experiments as bench

    torch.set_num_threads(1)
    path = tmp_path_factory.mktemp("pilot") / "data" / "pilot.json"
    assert bench.main(["--pilot", str(path), "--profile", "tiny", "--seed", "100", "--workers", "1"]) == 0
    return path


def tiny_workload():
    return {k: E.PROFILE.knobs[k].value("tiny") for k in S.WORKLOAD_KNOBS}


def test_the_pilots_cpu_model_is_read_from_cpuinfo_else_from_the_platform(tmp_path, monkeypatch):
    from resnet_theory.benchmarks import experiments as bench

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nvendor_id\t: X\nmodel name\t: Example CPU 9000 @ 3.0GHz\n\nmodel name\t: other\n"
    )
    assert bench._cpu_model(cpuinfo) == "Example CPU 9000 @ 3.0GHz"  # the first processor's
    monkeypatch.setattr(bench.platform, "processor", lambda: "x86_64")
    assert bench._cpu_model(tmp_path / "missing") == "x86_64"
    cpuinfo.write_text("processor\t: 0\nmodel name\t:\n")  # no name given: the platform's
    assert bench._cpu_model(cpuinfo) == "x86_64"
    monkeypatch.setattr(bench.platform, "processor", lambda: "")
    assert bench._cpu_model(tmp_path / "missing") is None


def test_the_pilot_command_writes_a_file_the_module_reads_back_into_the_same_sizing(tiny_pilot):
    from resnet_theory.claims.context import Context
    from resnet_theory.claims.run import run_claim

    pilot = S.read_pilot(tiny_pilot, workload=tiny_workload())
    assert pilot.provenance["seed"] == 100 and pilot.provenance["commit"] and pilot.provenance["date"]
    assert pilot.provenance["command"].endswith("--profile tiny --seed 100")  # no overrides were given
    # the CPU it ran on, as separate keys (another CPU's kernels may sum in another order)
    import torch

    from resnet_theory.benchmarks import experiments as bench

    assert pilot.provenance["cpu_model"] == bench._cpu_model()
    assert pilot.provenance["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert pilot.sizes == {k: E.PROFILE.knobs[k].value("tiny") for k in S.PILOT_SIZES}
    assert set(pilot.cpu_seconds) == set(bench_cells()) and pilot.cpu_seconds["training grid"] > 0
    # the same claims run here at the same seed give the same comparisons, hence the same sizing
    ctx = Context.for_table(E.PROFILE, "tiny", 100)
    E.use_settings(ctx, workers=1)
    checks = {}
    for claim in dict.fromkeys(c[0] for c in S.COMPARISONS):
        run = run_claim(E.CLAIMS.claims[claim], ctx)
        checks[claim] = (run.evidence.statement, run.evidence.controls[0])
    again = S.pilot_from_record(
        S.pilot_record(checks, sizes=pilot.sizes, knobs=pilot.knobs, cpu_seconds={}, provenance=pilot.provenance)
    )
    assert [(c.effect, c.sd_a, c.n, c.cap) for c in again.comparisons] == [
        (c.effect, c.sd_a, c.n, c.cap) for c in pilot.comparisons
    ]
    assert S.sized_knobs(pilot) == S.sized_knobs(again)
    sized = S.sized_knobs(pilot)
    assert [r["quick seeds"] for r in S.sizing_rows(pilot)] == [sized[knob] for *_, knob in S.COMPARISONS]


def _damaged(path, tmp_path, change):
    record = json.loads(path.read_text())
    change(record)
    out = tmp_path / "damaged.json"
    out.write_text(json.dumps(record))
    return out


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda r: r.update(format="something else"), "format"),
        (lambda r: r["comparisons"].pop(), "comparisons, expected"),
        (lambda r: r["comparisons"][0].update(claim="hardt-ma/other"), "comparison 0 is"),
        (lambda r: r["comparisons"][3].update(standard_error=-1.0), "standard_error must be"),
        (lambda r: r["comparisons"][2].update(effect="0.5"), "effect must be"),
        (lambda r: r["comparisons"][1].update(n=1), "n must be"),
        (lambda r: r["sizes"].pop("deep_seeds"), "sizes.deep_seeds"),
        (lambda r: r["provenance"].pop("commit"), "provenance has no 'commit'"),
        (lambda r: r.pop("cpu_seconds"), "'cpu_seconds' is missing"),
    ],
)
def test_a_damaged_pilot_is_refused_in_one_line(tiny_pilot, tmp_path, change, words):
    with pytest.raises(S.PilotError, match=words) as err:
        S.read_pilot(_damaged(tiny_pilot, tmp_path, change))
    assert "\n" not in str(err.value) and "--pilot" in str(err.value)


def test_an_unreadable_or_mismatched_pilot_is_refused_in_one_line(tiny_pilot, tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_text(tiny_pilot.read_text()[:200])
    for path, words in [(cut, "not readable JSON"), (tmp_path / "missing.json", "no such file")]:
        with pytest.raises(S.PilotError, match=words) as err:
            S.read_pilot(path)
        assert "\n" not in str(err.value)
    with pytest.raises(S.PilotError, match="it ran at steps=6, the quick profile has steps=150"):
        S.read_pilot(tiny_pilot, workload={**tiny_workload(), "steps": 150})
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(S.PilotError, match="holds a list"):
        S.read_pilot(tmp_path / "list.json")


def test_a_comparison_within_its_noise_keeps_the_pilots_size_and_a_huge_one_the_minimum():
    near = S.PilotComparison("x", "statement", "x", "n_seeds", effect=0.3, sd_a=0.3, sd_b=0.3, n=10)
    far = S.PilotComparison("x", "control", "x", "control_seeds", effect=-2.3, sd_a=1e-3, sd_b=1e-3, n=10)
    assert near.chosen() == S.PILOT_SIZES["n_seeds"] and far.chosen() == S.MINIMUM
    assert far.margin < -1000 and near.planning_effect == pytest.approx(0.3 - near.standard_error)
    rows = S.sizing_rows((near, far))
    assert [r["quick seeds"] for r in rows] == [S.PILOT_SIZES["n_seeds"], S.MINIMUM]
    assert rows[1]["P(decides)"] > 0.999
    capped = S.PilotComparison("x", "statement", "x", "n_seeds", effect=0.3, sd_a=0.3, sd_b=0.3, n=10, cap=7)
    assert capped.chosen() == 7


def test_margin_rows_put_each_checks_margin_beside_the_pilots():
    from resnet_theory.verdicts import Check, NoUsableControl

    def stat(estimate, n):
        return Check.statistical(estimate, 0.1, 0.0, what="x", test="x", n=n)

    statement = Check.combine([stat(1.0, 21), stat(2.0, 20)], what="both depths")
    control = NoUsableControl.unless_decisive(stat(0.1, 4))  # a control without power keeps the check it tried
    rows = S.margin_rows({S._TRAINS: (statement, control)})
    mine = [r for r in rows if r["claim"] == S._TRAINS]
    assert [(r["margin now (SE)"], r["seeds now"]) for r in mine] == [(10.0, 21), (20.0, 20), (1.0, 4)]
    assert [r["pilot margin (SE)"] for r in mine] == [c.margin for c in S.PILOT.comparisons if c.claim == S._TRAINS]
    assert all(r["margin now (SE)"] is None for r in rows if r["claim"] != S._TRAINS)


def test_the_pilot_commands_bad_options_are_refused_in_one_line(capsys, tmp_path):
    from resnet_theory.benchmarks import experiments as bench

    for argv, words in [
        (["--pilot", str(tmp_path / "p.json"), "--knob", "nope=1"], "NAME one of"),
        (["--pilot", str(tmp_path / "p.json"), "--knob", "steps=[1,"], "not a JSON value"),
        (["--knob", "steps=100"], "--knob goes with --pilot"),
    ]:
        with pytest.raises(SystemExit):
            bench.main(argv)
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err
    with pytest.raises(TypeError, match="knobs must be a dict"):
        bench.run_pilot(tmp_path / "p.json", "tiny", knobs=[("steps", 1)])
    assert not (tmp_path / "p.json").exists()


# --- the sequential design ----------------------------------------------------------------------------------------
def test_the_ladder_doubles_from_the_start_to_the_cap():
    assert power.ladder(30) == (4, 8, 16, 30) and power.ladder(8) == (4, 8) and power.ladder(4) == (4,)
    assert power.ladder(2) == (2,) and power.ladder(20, 6) == (6, 12, 20)
    assert S.ladder(10) == (S.MINIMUM, 2 * S.MINIMUM, 10)


@pytest.mark.parametrize("effect, sd_a, sd_b, n", [(1.0, 1.0, 1.0, 8), (0.05, 0.04, None, 4)])
def test_one_look_is_the_fixed_design(effect, sd_a, sd_b, n):
    sim = power.sequential_rates(effect, sd_a, sd_b, looks=(n,))
    assert sim["right"] == pytest.approx(power.margin_power(effect, sd_a, sd_b, n=n), abs=0.02)
    assert sim["seeds"] == n


def test_peeking_at_two_standard_errors_inflates_the_error_and_the_early_stop_keeps_it_under_its_bound():
    looks = power.ladder(30)
    fixed = power.sequential_rates(0.0, 1.0, 1.0, looks=looks[-1:])
    naive = power.sequential_rates(0.0, 1.0, 1.0, looks=looks, early=power.DECISIVE)
    ours = power.sequential_rates(0.0, 1.0, 1.0, looks=looks)
    decided = {k: r["right"] + r["wrong"] for k, r in (("fixed", fixed), ("naive", naive), ("ours", ours))}
    # the fixed design decides about 5% of null comparisons (two tails of t beyond 2); stopping at the first
    # look beyond 2 standard errors more than triples that: the check this design guards against can fail
    assert decided["fixed"] == pytest.approx(2 * stats_t_sf(2.0, 58), abs=0.006)
    assert decided["naive"] > 3 * decided["fixed"]
    # the design's stricter interim margin: under its union bound, and not half again the fixed design's rate
    assert decided["ours"] <= power.sequential_null_bound(looks) and decided["ours"] < 1.5 * decided["fixed"]
    assert power.sequential_null_bound(looks[-1:]) == pytest.approx(2 * stats_t_sf(2.0, 58))


def stats_t_sf(x, df):
    from scipy import stats

    return float(stats.t.sf(x, df))


def test_the_sequential_design_keeps_the_power_and_stops_early_when_the_effect_is_large():
    looks = power.ladder(30)
    for d in (0.8, 1.6):  # the pilot's small-initialisation effect in its own noise, and twice it
        fixed = power.sequential_rates(d, 1.0, 1.0, looks=looks[-1:])
        seq = power.sequential_rates(d, 1.0, 1.0, looks=looks)
        assert seq["right"] >= fixed["right"] - 0.01 and seq["wrong"] <= fixed["wrong"] + 0.001
    assert seq["seeds"] < 0.6 * looks[-1]  # a large effect stops at an early look


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: power.sequential_rates(1, 1, 1, looks=()), "looks must be increasing"),
        (lambda: power.sequential_rates(1, 1, 1, looks=(8, 4)), "looks must be increasing"),
        (lambda: power.sequential_rates(1, 1, 1, looks=(1, 4)), "looks must be at least 2"),
        (lambda: power.sequential_rates(1, 0, 1, looks=(4,)), "sd_a must be > 0"),
        (lambda: power.sequential_rates(1, 1, 1, looks=(4,), repeats=0), r"repeats must be a positive integer"),
        (lambda: power.sequential_rates(1, 1, 1, looks=(4,), early=0), "early must be > 0"),
        (lambda: power.ladder(1), "cap must be at least 2"),
        (lambda: power.sequential_null_bound(()), "looks must name at least one"),
    ],
)
def test_bad_sequential_input_is_refused_in_one_line(call, words):
    with pytest.raises((ValueError, TypeError), match=words):
        call()


def test_a_knob_grows_while_one_of_its_comparisons_is_under_the_early_margin_and_below_its_cap():
    init = S.COMPARISONS[0][0]
    caps = {"init_seeds": 30, "control_seeds": 6, "n_seeds": 10}
    sizes = S.first_sizes(caps, ("init_seeds", "control_seeds", "n_seeds"))
    assert sizes == {"init_seeds": 4, "control_seeds": 4, "n_seeds": 4}
    best = S._BEST
    margins = {
        (init, "statement", 0): 3.4,  # under 3.5: grows init_seeds
        (init, "control", 0): -9.0,
        (best, "statement", 0): -3.5,  # decided at the early margin: n_seeds stops
        (best, "control", 0): None,  # no margin (the check did not run): control_seeds grows
        (S._TRAINS, "statement", 0): 25.0,
    }
    look = S.next_look(sizes, caps, margins)
    assert set(look.grows) == {"init_seeds", "control_seeds"}
    assert S.grown(look, caps) == {"init_seeds": 8, "control_seeds": 6, "n_seeds": 4}
    at_caps = S.next_look({"init_seeds": 30, "control_seeds": 6, "n_seeds": 4}, caps, margins)
    assert at_caps.grows == ()  # at its cap a knob stops, decided or not
    rows = S.look_rows([("training grid", [look, at_caps])])
    assert rows[0]["grows"] == "init seeds, control seeds" and rows[1]["grows"] == "nothing: stop"
    assert f"{init} (statement)" in rows[0]["under 3.5 SE"] and "best-rate (statement)" not in rows[0]["under 3.5 SE"]


def test_the_sequential_rows_put_the_fixed_designs_power_beside_the_sequential_ones():
    rows = S.sequential_rows()
    fixed_power = {(r["claim"], r["check"]): r["P(decides)"] for r in S.sizing_rows()}
    for r in rows:
        cap = int(r["looks"].split(", ")[-1])
        assert 2 <= r["mean seeds"] <= cap
        assert r["decides, fixed"] == pytest.approx(fixed_power[(r["claim"], r["check"])], abs=0.03)
        # the pilot's noise is read as one sample's (the sizing's reading, never more optimistic): at no effect
        # the fixed design decides as often as two tails of t with n - 1 degrees of freedom beyond 2, and the
        # sequential one stays under its union bound
        looks = tuple(int(n) for n in r["looks"].split(", "))
        at_cap = 2 * stats_t_sf(2.0, cap - 1)
        assert r["decides at no effect, fixed"] == pytest.approx(at_cap, abs=0.01)
        bound = power.sequential_null_bound(looks, two_sample=False)
        assert r["decides at no effect, fixed"] <= r["decides at no effect, sequential"] <= bound


def test_a_comparison_without_noise_decides_at_its_first_look_and_never_at_no_effect():
    """A pilot may record a standard error of 0 (every seed the same score): the simulation has no noise to
    draw, and the rows say what such a comparison does instead of failing."""
    quiet = S.PilotComparison(S._TRAINS, "control", "the same without shortcuts", "control_seeds", -0.7, 0.0, None, 6)
    (row,) = S.sequential_rows((quiet,))
    assert row["decides, fixed"] == row["decides, sequential"] == 1.0 and row["mean seeds"] == S.MINIMUM
    assert row["decides at no effect, fixed"] == row["decides at no effect, sequential"] == 0.0


def test_the_ledger_pages_definition_of_undecided_states_the_rules_margin():
    """The ledger page defines *undecided* in words and math, which no cell can glue into: its typed margin is
    checked against the rule's (:data:`resnet_theory.verdicts.DECISIVE_STANDARD_ERRORS`) here. The experiments
    chapter glues the margin (``decisive_se``) and types none."""
    import re

    from resnet_theory.verdicts import DECISIVE_STANDARD_ERRORS

    root = Path(__file__).resolve().parents[1]
    page = " ".join((root / "book" / "ledger.md").read_text().split())
    words = {1: "one", 2: "two", 3: "three"}[int(DECISIVE_STANDARD_ERRORS)]
    assert DECISIVE_STANDARD_ERRORS == int(DECISIVE_STANDARD_ERRORS)
    said = re.search(r"than (\w+) standard errors, \$\|\\hat\\theta - \\theta_0\| < (\d+)\\,\\mathrm\{se\}\$", page)
    assert said and (said[1], int(said[2])) == (words, DECISIVE_STANDARD_ERRORS), said
    chapter = (root / "book" / "experiments.md").read_text()
    prose = re.sub(r"^```\{code-cell\}.*?^```$", "", chapter, flags=re.M | re.S)
    typed = re.findall(r"\b(?:\d+|one|two|three) standard errors?\b", " ".join(prose.split()))
    assert not typed, f"book/experiments.md types the margin: {typed}"
