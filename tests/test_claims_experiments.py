"""The experiments chapter's claims (``resnet_theory.claims.experiments``) run at the tiny profile: each gives a
well-formed record, its control fails, the data and glue the chapter uses are there, a claim run alone trains
only the shared runs it needs and gets the same numbers as in the chapter's run."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
import torch

from resnet_theory.claims import experiments as E
from resnet_theory.claims.context import Context, Knob, ProfileTable
from resnet_theory.claims.run import run_claim
from resnet_theory.claims.spec import Checked
from resnet_theory.engine import train as engine
from resnet_theory.ledger import VERDICTS
from resnet_theory.verdicts import Check, NoUsableControl

from conftest import assert_no_ascii_math_shown

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = (ROOT / "book" / "experiments.md").read_text()
#: Glue keys the chapter's prose quotes that its own cells glue (illustrations, timings, verdicts).
CHAPTER_GLUE = re.compile(
    r"^(digits_train_size|plain_.*|imagenet_.*|perf_.*|size_.*|seq_.*|gpu_.*|ledger_summary|verdict_.*|abl_head_reading|abl_init_reading|schedule_steps|cifar_seeds|decisive_se)$"
)


def tiny_context(seed: int = 0) -> Context:
    ctx = Context.for_table(E.PROFILE, "tiny", seed)
    E.use_settings(ctx, workers=1)  # no worker processes in the unit tests
    return ctx


@pytest.fixture(scope="module")
def chapter_run():
    torch.set_num_threads(1)
    ctx = tiny_context()
    return ctx, {decl.id: run_claim(decl, ctx) for decl in E.CLAIMS}


def test_every_claim_gives_a_well_formed_record(chapter_run):
    _, runs = chapter_run
    assert len(runs) == 8 and len(E.CLAIMS.skipped) == 16
    for cid, run in runs.items():
        rec = run.record
        assert rec.verdict in VERDICTS, cid
        if run.evidence is not None:
            assert isinstance(run.decl, Checked)
            assert rec.control is not None and rec.evidence["printed"]["summary"], cid
            if rec.control["usable"]:  # a usable control fails, decisively
                assert rec.control["holds"] is False and rec.control["decisive"] is True, cid
            else:  # two seeds of six steps: a statistical control may not decide, and then nothing is confirmed
                assert rec.verdict == "undecided" and rec.reason.startswith("no usable negative control"), cid
        else:  # the CIFAR claims, without the archives
            assert rec.verdict == "not-checkable-here" and rec.needs, cid


def test_no_summary_a_page_shows_has_ascii_math(chapter_run):
    """The issue-33 scan (``tests/test_ledger_math.py``) on this file's tiny runs: not a second run of the claims."""
    assert_no_ascii_math_shown("experiments", chapter_run[1].values())


def test_the_chapter_finds_its_data_and_glue(chapter_run):
    ctx, runs = chapter_run
    rows = runs["hardt-ma/sec4-architecture"].data["architecture"]
    assert rows and all(tuple(r) == E.ARCHITECTURE_COLUMNS for r in rows)
    glued = {k for run in runs.values() if run.evidence for k in run.evidence.glue}
    quoted = set(re.findall(r"\{glue:text\}`([a-z0-9_]+)", CHAPTER))
    assert quoted - glued and all(CHAPTER_GLUE.match(k) for k in quoted - glued), sorted(quoted - glued)
    # the shared results the chapter shows: the grid, the sweep, the timings, the overfitting table
    grid, sweep = E.training_grid(ctx), E.depth_sweep(ctx)
    plan = E.plan(ctx)
    # every variant at every rate, and the fixed head's control at the paper's rate only
    assert len(grid.rows()) == len(E.RATE_VARIANTS) * len(plan.lr_grid) + 1
    assert [(r["variant"], r["learning rate"]) for r in grid.rows() if r["variant"] == E.HEAD_CONTROL] == [
        (E.HEAD_CONTROL, plan.lr)
    ]
    assert {(r["variant"], r["convolutions"]) for r in sweep.rows()} == {
        (n, plan.convolutions(d)) for n in (E.IDENT, E.PLAIN) for d in plan.depths
    }
    assert [r["runs"] for r in E.performance_rows(ctx)] == ["grid", "depth"]
    assert len(E.overfitting_rows(ctx)) == 4
    assert E.table_2_rows(runs["hardt-ma/sec4-cifar10-error"])[-1]["CIFAR-10 error %"] is None


def _cell_glue(text: str) -> tuple[set[str], set[str]]:
    """The keys the chapter's own cells glue (``glue_numbers(key=...)``, ``**E.sizing_glue()`` expanded), and the
    prefixes of the keys they glue through an f-string."""
    import ast

    keys, prefixes = set(), set()
    for source in re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, re.S):
        source = re.sub(r"\A(:tags:[^\n]*\n|---\n(?s:.*?)\n---\n)", "", source)
        for node in ast.walk(ast.parse(source)):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("glue", "glue_numbers")):
                continue
            for kw in node.keywords:
                if kw.arg is not None:
                    keys.add(kw.arg)
                elif isinstance(kw.value, ast.Call) and getattr(kw.value.func, "attr", None) == "sizing_glue":
                    keys |= set(E.sizing_glue())
                else:  # {f"prefix_{...}": ...}: the f-string's literal start
                    for key in ast.walk(kw.value):
                        if isinstance(key, ast.JoinedStr) and isinstance(key.values[0], ast.Constant):
                            prefixes.add(key.values[0].value)
            if node.args and isinstance(node.args[0], ast.Constant):
                keys.add(node.args[0].value)
    return keys, prefixes


def test_every_number_glued_is_quoted_once_and_every_number_quoted_is_glued(chapter_run):
    """Both directions, for the claims' glue and the chapter cells' glue: every key quoted is glued (by a claim or
    a cell, never both), and every key glued is quoted."""
    _, runs = chapter_run
    quoted = set(re.findall(r"\{glue:(?:text)?\}`([a-z0-9_]+)", CHAPTER))
    from_claims = {k for run in runs.values() if run.evidence for k in run.evidence.glue}
    in_cells, prefixes = _cell_glue(CHAPTER)
    assert in_cells and prefixes
    assert not from_claims & in_cells, sorted(from_claims & in_cells)
    assert not from_claims - quoted, f"a claim glues what the chapter never quotes: {sorted(from_claims - quoted)}"
    assert not in_cells - quoted, f"a cell glues what the chapter never quotes: {sorted(in_cells - quoted)}"
    assert all(any(q.startswith(prefix) for q in quoted) for prefix in prefixes), prefixes
    missing = {
        k
        for k in quoted - from_claims - in_cells
        if not k.startswith("verdict_") and k != "ledger_summary" and not any(k.startswith(x) for x in prefixes)
    }
    assert not missing, f"quoted, glued nowhere: {sorted(missing)}"


def test_the_chapter_types_none_of_the_numbers_its_module_chooses():
    """The control's first-stage blocks and the bar for "trains" reach the texts from their constants."""
    assert "eight or ten" not in CHAPTER and "above 0.8" not in CHAPTER and "below 0.8" not in CHAPTER
    arch = E.CLAIMS.claims["hardt-ma/sec4-architecture"].control.input
    assert " or ".join(map(str, E.CONTROL_FIRST_STAGE)) in arch
    trains = E.CLAIMS.claims["hardt-ma/sec4-identity-trains-without-bn"].statement
    assert f"above {E.TRAINS_ACCURACY} at" in trains


def test_a_claim_alone_trains_only_what_it_needs_and_gets_the_same_numbers(chapter_run):
    _, runs = chapter_run
    ctx = tiny_context()
    run_claim(E.CLAIMS.claims["hardt-ma/sec4-architecture"], ctx)
    assert "experiments/grid" not in ctx._shared
    alone = run_claim(E.CLAIMS.claims["hardt-ma/sec4-fixed-head"], ctx)
    assert "experiments/grid" in ctx._shared
    assert "experiments/depth-sweep" not in ctx._shared
    assert alone.record.evidence == runs["hardt-ma/sec4-fixed-head"].record.evidence


def test_the_seed_scheme_is_the_chapters():
    plan = E.plan(tiny_context(seed=3))
    assert plan.run_seeds == (6, 7)  # seed s trains s * n .. s * n + n - 1
    assert plan.extra_seeds == (10**6 + 3,)  # init_seeds - n_seeds more, from 10**6
    assert plan.depths == (1, 2) and plan.base.lr_milestones == (3, 5)


def test_the_digits_rate_drops_sit_at_the_fractions_of_the_run_the_papers_drops_take_of_the_schedule():
    schedule = E.engine.TrainConfig()
    assert E.scaled_milestones(schedule.steps) == schedule.lr_milestones == (30_000, 50_000)
    assert E.scaled_milestones(640) == (300, 500) and E.scaled_milestones(64) == (30, 50)
    assert E.PROFILE.knobs["cifar_steps"].quick == schedule.steps


def test_bad_settings_and_knobs_are_refused():
    with pytest.raises(ValueError, match="lr=0.02 must be one of lr_grid"):
        ctx = Context.for_table(E.PROFILE, "tiny", 0)
        E.use_settings(ctx, lr=0.02)
        E.plan(ctx)
    with pytest.raises(ValueError, match="augmentation"):
        E.RunSettings(augmentation="mirror")
    with pytest.raises(ValueError, match="workers"):
        E.RunSettings(workers=0)
    ctx = tiny_context()
    with pytest.raises(ValueError, match="already runs with"):
        E.use_settings(ctx, workers=2)
    with pytest.raises(ValueError, match="n_seeds"):
        E.plan(Context.for_table(E.PROFILE, "tiny", 0, {"n_seeds": 1}))


def test_statements_quote_the_profiles_depths():
    claims = E.CLAIMS.claims
    assert "55 vs 19 convolutions (97 vs 19 in the full profile)" in claims["he-et-al/plain-degradation"].statement
    assert "at 19 and 55 convolutions (19 and 97" in claims["hardt-ma/sec4-identity-trains-without-bn"].statement


def test_cifar_claims_are_always_declared_and_not_available_without_the_archives(monkeypatch, tmp_path):
    monkeypatch.delenv(E.CIFAR_DATA_ENV, raising=False)
    monkeypatch.delenv(E.CIFAR_ON_CPU_ENV, raising=False)
    for name in ("cifar10", "cifar100"):
        decl = E.CLAIMS.claims[f"hardt-ma/sec4-{name}-error"]
        assert isinstance(decl, Checked)  # declared the same whatever the environment: `claims list` is stable
        run = run_claim(decl, tiny_context())
        assert run.verdict == "not-checkable-here" and "binary archives" in run.record.needs
        assert run.record.reason.startswith("no data_dir was given")
    # the chapter's settings say where the archives are; without a GPU and without cifar_on_cpu, still not
    ctx = Context.for_table(E.PROFILE, "tiny", 0, settings={"data_dir": str(tmp_path)})
    expected = None if torch.cuda.is_available() else "no CUDA GPU is available"
    assert E.cifar_unavailable(ctx) == expected
    ctx = Context.for_table(E.PROFILE, "tiny", 0, settings={"data_dir": str(tmp_path), "cifar_on_cpu": True})
    assert E.cifar_unavailable(ctx) is None and E.cifar_settings(ctx) == (str(tmp_path), True)


def test_verify_may_name_the_archives_in_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(E.CIFAR_DATA_ENV, str(tmp_path))
    monkeypatch.setenv(E.CIFAR_ON_CPU_ENV, "1")
    assert E.cifar_unavailable(Context.for_table(E.PROFILE, "tiny", 0)) is None


#: Test errors (%) of five fake seeds: well below Table 2's 6.38 (threshold 6.385), well above, and within noise.
BELOW = (5.9, 6.0, 6.1, 5.95, 6.05)
ABOVE = (7.0, 7.1, 6.9, 7.05, 6.95)
AT_THE_FIGURE = (6.2, 6.6, 6.4, 6.3, 6.5)
#: Ordinary errors at the end of the first rate's part of the schedule, far above the figure.
BEFORE_DROP = (14.0, 15.0, 13.5, 14.5, 15.5)


def _fake_cifar(final_error: float, error_before_drop: float = 15.0, *, drop: int = 30_000, steps: int = 64_000):
    """A finished run's result: evaluations at step 0, at the first rate drop, just after it (better than the
    figure: never the control's) and at the end."""
    history = [
        {"kind": "train", "step": 10, "loss": 2.0},
        {"kind": "eval", "step": 0, "test_accuracy": 0.1},
        {"kind": "eval", "step": drop, "test_accuracy": 1 - error_before_drop / 100},
        {"kind": "eval", "step": drop + 2000, "test_accuracy": 0.99},
        {"kind": "eval", "step": steps, "test_accuracy": 1 - final_error / 100},
    ]
    return engine.TrainResult(
        config=engine.TrainConfig(), history=history, steps_done=steps, final_test_accuracy=1 - final_error / 100,
        final_test_loss=0.3, final_train_loss=0.1, diverged=False, message="", checkpoint_path=None,
        wall_seconds=1.0, images_per_second=1.0, trainable_parameters=1,
    )  # fmt: skip


def _cifar_claim(monkeypatch, final_errors, errors_before_drop=BEFORE_DROP, name="cifar10", seed=0):
    """The claim on ``name`` run through ``run_claim`` on fake runs, one per seed; also the seeds it asked for."""
    asked = []

    def fake_run(ctx, dataset, run_seed):
        asked.append((dataset, run_seed))
        k = run_seed - seed * len(final_errors)
        return _fake_cifar(final_errors[k], errors_before_drop[k])

    monkeypatch.setattr(E, "cifar_run", fake_run)
    monkeypatch.setattr(E, "cifar_unavailable", lambda ctx: None)
    ctx = Context.for_table(E.PROFILE, "tiny", seed, {"cifar_seeds": len(final_errors)})
    return run_claim(E.CLAIMS.claims[f"hardt-ma/sec4-{name}-error"], ctx), asked


def _margin(check) -> float:
    return check.numbers["margin_standard_errors"]


def test_a_mean_error_well_below_the_printed_figure_confirms_the_claim(monkeypatch):
    run, asked = _cifar_claim(monkeypatch, BELOW)
    assert asked == [("cifar10", s) for s in range(5)]
    statement = run.evidence.statement
    assert statement.holds and statement.decisive and _margin(statement) >= 2
    assert statement.numbers["estimate"] == pytest.approx(np.mean(BELOW))
    assert statement.numbers["standard_error"] == pytest.approx(np.std(BELOW, ddof=1) / 5**0.5)
    assert statement.numbers["threshold"] == pytest.approx(6.385) and statement.numbers["n"] == 5
    assert run.verdict == "confirmed"
    assert run.record.control["usable"] and run.record.control["holds"] is False
    data = run.data
    assert data["errors"] == pytest.approx(list(BELOW)) and data["error"] == pytest.approx(np.mean(BELOW))
    assert data["errors_before_drop"] == pytest.approx(list(BEFORE_DROP)) and data["first_drop"] == 30_000
    assert [c["seed"] for c in data["curves"]] == [0, 1, 2, 3, 4] and data["seeds"] == [0, 1, 2, 3, 4]
    assert data["curves"][1]["test_error"][0] == [0, 30_000, 32_000, 64_000]
    assert data["curves"][1]["test_error"][1][-1] == pytest.approx(BELOW[1])
    assert E.table_2_rows(run)[-1] == {
        "method": "this book (mean of 5 seeds), 64,000 steps",
        "CIFAR-10 error %": pytest.approx(np.mean(BELOW)),
        "CIFAR-100 error %": None,
    }


def test_a_mean_error_well_above_the_printed_figure_refutes_the_claim(monkeypatch):
    # CIFAR-100's figure is 24.64: the same spread, shifted above it
    run, _ = _cifar_claim(monkeypatch, tuple(e + 18.0 for e in ABOVE), tuple(e + 30 for e in BEFORE_DROP), "cifar100")
    statement = run.evidence.statement
    assert not statement.holds and statement.decisive and _margin(statement) <= -2
    assert statement.numbers["threshold"] == pytest.approx(24.645)
    assert run.verdict == "refuted"
    run, _ = _cifar_claim(monkeypatch, ABOVE)
    assert run.verdict == "refuted" and run.evidence.statement.numbers["threshold"] == pytest.approx(6.385)


def test_a_mean_error_within_its_noise_of_the_printed_figure_is_undecided(monkeypatch):
    run, _ = _cifar_claim(monkeypatch, AT_THE_FIGURE)
    statement = run.evidence.statement
    assert not statement.decisive and abs(_margin(statement)) < 2
    assert run.verdict == "undecided" and run.record.reason.startswith("the statement's check is within its noise")


def test_the_control_is_the_same_runs_before_the_first_rate_drop(monkeypatch):
    run, _ = _cifar_claim(monkeypatch, BELOW)
    control = run.evidence.control
    assert isinstance(control, Check) and not control.holds and control.decisive and _margin(control) <= -2
    # the last evaluation at or before the drop, not the better one just after it
    assert control.numbers["estimate"] == pytest.approx(np.mean(BEFORE_DROP))
    assert control.numbers["threshold"] == run.evidence.statement.numbers["threshold"]
    assert "step 30,000" in control.summary and "before the first rate drop" in control.summary
    # pre-drop errors within their noise of the figure: the control decides nothing, and nothing is confirmed
    run, _ = _cifar_claim(monkeypatch, BELOW, (6.0, 6.8, 6.3, 6.5, 6.4))
    assert isinstance(run.evidence.control, NoUsableControl)
    assert run.verdict == "undecided" and run.record.reason.startswith("no usable negative control")


def test_the_first_drop_follows_the_knob_cifar_steps(monkeypatch):
    ctx = Context.for_table(E.PROFILE, "tiny", 0, {"cifar_steps": 6_400})
    assert E.cifar_milestones(ctx) == E.scaled_milestones(6_400) == (3_000, 5_000)
    runs = [_fake_cifar(e, 15.0, drop=3_000, steps=6_400) for e in BELOW]
    monkeypatch.setattr(E, "cifar_run", lambda ctx, name, seed: runs[seed])
    monkeypatch.setattr(E, "cifar_unavailable", lambda ctx: None)
    ev = E.sec4_cifar10_error(ctx)
    assert ev.data["first_drop"] == 3_000 and ev.data["errors_before_drop"] == pytest.approx([15.0] * 5)


def _diverged(result, at_step: int):
    """``result`` as a run that diverged at ``at_step``: its history ends there with the diverged record."""
    history = [r for r in result.history if r["step"] < at_step]
    history.append({"kind": "diverged", "step": at_step, "loss": float("nan"), "message": "diverged"})
    result.history, result.diverged, result.steps_done = history, True, at_step
    return result


@pytest.mark.parametrize("at_step, before", [(40_000, 15.0), (20_000, 90.0)])
def test_a_diverged_seed_counts_at_chance_error_and_the_others_still_count(monkeypatch, at_step, before):
    """A seed whose training diverges is scored at chance (90% error on CIFAR-10's ten classes), not left out and
    not allowed to stop the claim; before the first drop it is at chance only if it had diverged by then."""
    runs = [_fake_cifar(e) for e in BELOW]
    runs[2] = _diverged(runs[2], at_step)
    monkeypatch.setattr(E, "cifar_run", lambda ctx, name, seed: runs[seed])
    monkeypatch.setattr(E, "cifar_unavailable", lambda ctx: None)
    run = run_claim(E.CLAIMS.claims["hardt-ma/sec4-cifar10-error"], tiny_context())
    errors = [*BELOW[:2], 90.0, *BELOW[3:]]
    assert run.data["errors"] == pytest.approx(errors) and run.data["diverged"] == [2]
    assert run.evidence.statement.numbers["estimate"] == pytest.approx(np.mean(errors))
    assert not run.evidence.statement.holds and run.verdict != "confirmed"  # one chance-level seed sinks the mean
    assert run.data["errors_before_drop"][2] == pytest.approx(before)


def test_a_run_without_an_evaluation_before_the_drop_is_refused(monkeypatch):
    result = _fake_cifar(6.0)
    result.history = [r for r in result.history if r["kind"] != "eval" or r["step"] > 30_000]
    monkeypatch.setattr(E, "cifar_run", lambda ctx, name, seed: result)
    monkeypatch.setattr(E, "cifar_unavailable", lambda ctx: None)
    with pytest.raises(ValueError, match="no evaluation at or before step 30,000"):
        E.sec4_cifar10_error(tiny_context())


def test_the_threshold_is_the_printed_figure_plus_half_its_printed_unit():
    assert E.printed_unit("6.38") == Decimal("0.01") and E.printed_unit("7.3") == Decimal("0.1")
    assert E.printed_unit("12") == 1
    assert E.reproduced_threshold("6.38") == 6.385 and E.reproduced_threshold("24.64") == 24.645
    assert E.reproduced_threshold("7.3") == 7.35 and E.reproduced_threshold("19.250") == 19.2505
    for method, figures in E.PRINTED_ERRORS.items():
        assert E.PAPER_ERRORS[method] == tuple(float(f) for f in figures)
        assert all(E.printed_unit(f) == Decimal("0.01") for f in figures)  # Table 2 prints two decimals
    for bad in (6.38, "6,38", "-6.38", "", "6.38%"):
        with pytest.raises(ValueError, match="decimal numeral"):
            E.printed_unit(bad)


def test_the_readme_states_the_cifar_knobs_as_the_library_declares_them():
    """The README cannot glue: its CIFAR paragraph's typed schedule length, default seed count, least seed count
    and count of full runs are checked against the knob and the engine's schedule here."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    said = re.search(
        r"Each CIFAR claim trains `cifar_seeds` seeds of the whole ([\d,]+)-step schedule \((\d+) by default, at "
        r"least (\d+)\) and compares their mean error with Table 2, so the chapter trains (\w+) full runs",
        readme,
    )
    assert said, "the README's CIFAR paragraph changed: keep its numbers checked here"
    knob = E.PROFILE.knobs["cifar_seeds"]
    assert int(said[1].replace(",", "")) == engine.TrainConfig.steps == E.PROFILE.knobs["cifar_steps"].full
    assert (int(said[2]), int(said[3])) == (knob.full, knob.minimum)
    words = {6: "six", 8: "eight", 10: "ten", 12: "twelve", 14: "fourteen"}
    assert said[4] == words.get(2 * knob.full), f"two data sets of {knob.full} seeds each"
    schedules = re.findall(r"([\d,]+)-step schedule", readme)  # the GPU check's projection names it too
    assert len(schedules) >= 3 and {int(n.replace(",", "")) for n in schedules} == {engine.TrainConfig.steps}


def test_the_cifar_seeds_knob_needs_two_seeds():
    assert E.PROFILE.knobs["cifar_seeds"].quick == E.PROFILE.knobs["cifar_seeds"].full == 5
    assert "Table 6" in E.PROFILE.knobs["cifar_seeds"].doc
    with pytest.raises(ValueError, match="knob 'cifar_seeds': 1 is below its minimum 2"):
        Context.for_table(E.PROFILE, "tiny", 0, {"cifar_seeds": 1})
    assert E.cifar_seeds(Context.for_table(E.PROFILE, "tiny", 0, {"cifar_seeds": 2})) == (0, 1)
    assert E.cifar_seeds(Context.for_table(E.PROFILE, "tiny", 3)) == (15, 16, 17, 18, 19)  # seed s: s*n .. s*n+n-1
    # a knob's minimum, generally: its profiles must respect it, and an override's every number
    with pytest.raises(ValueError, match="knob 'n': its profiles' values must be numbers, at least 2"):
        ProfileTable(n=Knob(1, 5, "seeds", minimum=2))
    with pytest.raises(ValueError, match="knob 'ns': 1 is below its minimum 2"):
        ProfileTable(ns=Knob((2, 3), (2, 3), "seeds", minimum=2)).resolve("quick", {"ns": (2, 1)})


@pytest.mark.parametrize("knob", E.SEED_KNOBS)
def test_every_seed_knob_of_the_digits_runs_refuses_one_seed_before_anything_trains(knob):
    """A standard error needs two runs: an override of one seed is refused when the chapter's context is made,
    naming the knob, not when the grid's plan is built after other claims have trained."""
    assert E.PROFILE.knobs[knob].minimum == 2
    with pytest.raises(ValueError, match=f"knob '{knob}': 1 is below its minimum 2"):
        Context.for_table(E.PROFILE, "quick", 0, {knob: 1})
    assert getattr(Context.for_table(E.PROFILE, "tiny", 0, {knob: 2}).cfg, knob) == 2


@pytest.mark.parametrize("augmentation, recipe", [("crop4", {}), ("tensorflow", engine.TENSORFLOW_RECIPE)])
def test_each_seed_is_the_papers_schedule_in_its_own_folder(monkeypatch, tmp_path, augmentation, recipe):
    seen = []
    monkeypatch.setenv(E.CIFAR_DATA_ENV, str(tmp_path / "data"))
    monkeypatch.setattr(E, "cifar_unavailable", lambda ctx: None)
    monkeypatch.setattr(E.engine, "train", lambda config: seen.append(config) or _fake_cifar(6.0))
    ctx = Context.for_table(E.PROFILE, "quick", 0)
    E.use_settings(ctx, runs_dir=str(tmp_path / "runs"), augmentation=augmentation)
    kept = tmp_path / "runs" / "cifar100" / "seed-3"
    kept.mkdir(parents=True)
    (kept / engine.CHECKPOINT_NAME).write_bytes(b"")
    E.sec4_cifar10_error(ctx), E.sec4_cifar100_error(ctx)
    assert [(c.dataset, c.seed) for c in seen] == [(d, s) for d in ("cifar10", "cifar100") for s in range(5)]
    assert [c.out_dir for c in seen] == [str(tmp_path / "runs" / c.dataset / f"seed-{c.seed}") for c in seen]
    assert [c.resume for c in seen] == [False] * 5 + [False, False, False, True, False]  # the kept checkpoint
    first = seen[0]
    assert (first.data_dir, first.steps) == (str(tmp_path / "data"), 64_000)
    assert all(getattr(c, k) == v for c in seen for k, v in recipe.items())
    assert (first.lr, first.lr_milestones, first.batch_size) == (0.05, (30_000, 50_000), 128)
    assert all(c.on_divergence == "stop" for c in seen)  # a diverged seed is scored, the others still train
    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        E.cifar_run(ctx, "cifar10", -1)


# --- issue 31: the printed precision, one fixed-head claim, the book's question, Table 2's attribution ---------
def test_the_architecture_is_compared_at_the_printed_precision_and_corrected(chapter_run):
    _, runs = chapter_run
    run = runs["hardt-ma/sec4-architecture"]
    ev = run.record.evidence
    # 13,546,816 (biases) and 13,538,736 (none) are 13.55M and 13.54M at the printed four significant digits:
    # the printed 13.59M fails on either reading, both counts hold
    assert run.verdict == "corrected"
    parts = ev["printed"]["parts"]
    assert ev["printed"]["holds"] is False and [p["value"] for p in parts] == [13_546_816, 13_538_736]
    assert [p["rounded"] for p in parts] == [13.55e6, 13.54e6] and ev["corrected"]["holds"] is True
    assert E.table_1_formula() == 13_546_816 and E.table_1_formula(bias=False) == 13_538_736
    assert E.CORRECTED_PARAMS == {"with biases": 13.55e6, "without biases": 13.54e6}
    correction = run.decl.correction.statement
    assert "13,546,816" in correction and "13,538,736" in correction and "does not say" in correction
    # the book's explanation, counted from modules: three 1x1 convolution shortcuts, and only with biases
    assert run.data["projection"] == {"changing": 3, "with_bias": 13_589_248, "without_bias": 13_588_800}
    assert run.data["projection_without_biases"]["without_bias"] == 13_580_720
    assert run.data["explanation"].holds and not run.data["explanation_without_biases"].holds
    # the control can fail: 8 or 10 blocks in the first stage pass no comparison, with or without biases
    assert run.record.control["holds"] is False and run.record.control["usable"] is True
    for first in (8, 10):
        for reading, bias in (("with biases", True), ("without biases", False)):
            n = E.trainable_count(E.allconv.AllConvResNet(num_classes=10, blocks_per_stage=(first, 9, 9), bias=bias))
            assert not E._params_check(n, E.PAPER_PARAMS, "x").holds
            assert not E._params_check(n, E.CORRECTED_PARAMS[reading], "x").holds


def test_a_corrected_figure_is_called_the_books_computed_figure_never_printed():
    n = E.table_1_formula()
    corrected = E._params_check(n, E.CORRECTED_PARAMS["with biases"], "x", printed=False)
    printed = E._params_check(n, E.PAPER_PARAMS, "x")
    assert corrected.holds and "the book's computed figure 13,550,000" in corrected.summary
    assert "printed" not in corrected.summary and "printed" not in corrected.numbers
    assert not printed.holds and "printed 13,590,000" in printed.summary
    assert corrected.numbers["rounded"] == printed.numbers["rounded"] == 13.55e6
    with pytest.raises(ValueError, match="figure must be 'printed' or 'computed'"):
        E.Check.at_printed_precision(n, E.PAPER_PARAMS, digits=4, what="x", figure="typed")


def test_the_fixed_head_sentences_give_a_zero_margin_its_own_case_and_read_the_verdict():
    assert E.head_direction(1.2, -0.5) == E.head_direction(-1.2, 0.5) == "point opposite ways"
    assert E.head_direction(0.0, 0.0) == "are both exactly 0: neither points either way"
    assert E.head_direction(0.0, -0.5) == "point neither way (exactly 0) here and against the claim in the pilot"
    assert E.head_direction(1.0, 0.0) == "point the claim's way here and neither way (exactly 0) in the pilot"
    assert "undecided is not support" in E.head_verdict_sentence("undecided")
    assert "support" not in E.head_verdict_sentence("confirmed") + E.head_verdict_sentence("refuted")
    assert "against the claim" in E.head_verdict_sentence("refuted")


def test_the_initialisation_sentence_reads_both_verdicts_and_types_no_result():
    both = E.init_verdict_sentence("confirmed", "refuted")
    at_paper, at_best = both.split("; ")
    assert "small initialisation reaches the lower" in at_paper and "printed standard" in at_best
    assert (
        E.init_verdict_sentence("refuted", "confirmed")
        .split("; ")[0]
        .endswith("printed standard initialisation reaches the lower mean final training loss")
    )
    undecided = E.init_verdict_sentence("undecided", "undecided")
    assert undecided.count("undecided") == 2 and "lower" not in undecided
    for bad in ("corrected", "proof-gap", "not-checkable-here", ""):
        with pytest.raises(ValueError, match="verdict is one of"):
            E.init_verdict_sentence("confirmed", bad)
    # the chapter quotes the sentence, never a typed reading of the runs
    assert "{glue:text}`abl_init_reading`" in CHAPTER and "trains further within the same budget" not in CHAPTER


def test_either_reading_holds_when_one_does():
    yes, no = E._params_check(13_590_000, E.PAPER_PARAMS, "a"), E._params_check(13_540_000, E.PAPER_PARAMS, "b")
    assert E._either([no, yes], "x").holds and not E._either([no, no], "x").holds


def test_one_fixed_head_claim_covers_both_readings(chapter_run):
    _, runs = chapter_run
    assert "hardt-ma/sec4-fixed-head-best-rate" not in E.CLAIMS.claims
    run = runs["hardt-ma/sec4-fixed-head"]
    glue = run.evidence.glue
    same = (glue["abl_ident_acc_best"], glue["abl_head_best"]) == (E.PAPER_LR, E.PAPER_LR)
    assert glue["abl_head_readings"] == ("one comparison" if same else "two comparisons")
    assert "fixed head tests better, at the paper's rate" in run.record.evidence["printed"]["summary"]
    # the control is the same comparison with a fixed head of rank 1 on the same network: only the head differs
    assert f"a = {E.RANK1_HEAD} at" in run.record.control["summary"]
    assert E.VARIANTS[E.RANK1_HEAD] == dict(head_rank=1)
    assert glue["abl_rank1_seeds"] == min(
        len(E.training_grid(chapter_run[0]).runs[key]) for key in [(E.RANK1_HEAD, E.PAPER_LR), (E.HEAD, E.PAPER_LR)]
    )


def test_the_fixed_head_control_decides_where_the_runs_do(chapter_run, monkeypatch):
    # the tiny runs with made-up accuracies: near chance for the rank-1 head's runs, 0.9 for the rest
    ctx, _ = chapter_run
    spread = np.array([-0.01, 0.01])
    rank1 = {"accuracy": 0.15 + spread}

    def made_up(runs, metric):
        if metric == "accuracy" and all(r.config.head_rank == 1 for r in runs):
            return rank1["accuracy"][: len(runs)]
        return (0.9 + spread)[: len(runs)]

    monkeypatch.setattr(E, "_scores", made_up)
    ev = E.CLAIMS.claims["hardt-ma/sec4-fixed-head"].evidence(ctx)
    assert isinstance(ev.control, Check) and ev.control.holds is False
    assert ev.control.numbers["margin_standard_errors"] < -2  # it decides: usable
    # the same control inside its noise is not usable, and the ledger would refuse it
    rank1["accuracy"] = 0.9 + spread[::-1] * 0.5
    ev = E.CLAIMS.claims["hardt-ma/sec4-fixed-head"].evidence(ctx)
    assert isinstance(ev.control, NoUsableControl)


def test_the_claims_run_without_a_pilot_as_the_pilot_command_runs_them(chapter_run, monkeypatch):
    """The pilot command rewrites a shipped pilot it cannot read (one that measured a replaced comparison, say) by
    running the claims with none loaded: nothing the claims compute may need the pilot."""
    from resnet_theory.claims import experiments_sizing as S

    ctx, _ = chapter_run
    monkeypatch.setattr(S, "PILOT", None)
    for decl in E.CLAIMS:
        evidence = decl.evidence(ctx)
        assert evidence is not None, decl.id
    glue = E.CLAIMS.claims["hardt-ma/sec4-fixed-head"].evidence(ctx).glue
    assert glue["abl_head_direction"].startswith("cannot be set beside each other: no pilot is loaded")


def test_the_rank_1_head_predicts_at_most_two_classes():
    """The control's premise, on the engine's own head: with a fixed head of rank 1 every image's logits lie on
    one line, so whatever the features, at most two classes are ever predicted (the full-rank head, at the same
    seed, predicts more)."""
    from resnet_theory.engine import allconv

    features = torch.randn(4000, 32, generator=torch.Generator().manual_seed(1))
    predicted = {}
    for rank in (1, None):
        torch.manual_seed(0)
        head = allconv.RandomProjection(32, 10, rank=rank)
        predicted[rank] = set(head(features).argmax(1).tolist())
        if rank == 1:
            assert torch.linalg.matrix_rank(head.weight) == 1
    assert len(predicted[1]) <= 2 < len(predicted[None])


def test_the_best_rate_initialisation_claim_is_the_books_question():
    decl = E.CLAIMS.claims["hardt-ma/sec4-small-init-best-rate"]
    assert decl.source.kind == "question" and decl.source.ledger_key == "question"
    assert E.CLAIMS.claims["hardt-ma/sec4-small-init"].source.kind == "printed"
    overview = CHAPTER.split("(experiments-overview)=\n## Overview", 1)[1].split("\n## ", 1)[0]
    verdict_sentence = overview.split("One finding of the book's own", 1)
    assert len(verdict_sentence) == 2 and "small_init_best_rate" not in verdict_sentence[0]


def test_table_2s_resnet_row_is_not_attributed_to_he_et_al_for_cifar_100():
    resnet = [s for s in E.CLAIMS.skipped if "'ResNet'" in s.ref]
    assert len(resnet) == 1
    assert "no CIFAR-100 result" in resnet[0].statement
    assert not resnet[0].statement.startswith("ResNet, He et al. (2015):")


# --- issue 35: the workload sized by what each claim must decide, and its benchmark -----------------------------
def test_each_kind_of_configuration_trains_the_seeds_its_knob_gives():
    ctx = Context.for_table(E.PROFILE, "tiny", 1, {"n_seeds": 2, "init_seeds": 5, "deep_seeds": 3})
    E.use_settings(ctx, workers=1)
    p = E.plan(ctx)
    assert p.count(E.IDENT, p.lr) == p.count(E.PSTD, p.lr) == 5  # the initialisation comparison
    assert p.count(E.IDENT, p.lr_grid[0]) == p.count(E.PLAIN, p.lr) == 2  # the grid's other configurations
    assert p.count(E.HEAD, p.lr) == p.sizes["head_seeds"] and p.count(E.PLAIN_SMALL, p.lr) == p.sizes["control_seeds"]
    assert p.count(E.IDENT, p.lr, p.deep) == 3 and p.count(E.PLAIN, p.lr, p.deep) == p.sizes["depth_seeds"]
    # the first seeds are the run seeds, the rest extra seeds: a smaller size trains a subset of a larger one
    assert p.seeds(5) == (2, 3, 10**6 + 3, 10**6 + 4, 10**6 + 5) and p.seeds(2) == p.run_seeds


def test_the_shared_runs_have_the_sizes_of_the_plan(chapter_run):
    ctx, _ = chapter_run
    p, grid, sweep = E.plan(ctx), E.training_grid(ctx), E.depth_sweep(ctx)
    for (name, rate), runs in grid.runs.items():
        depth = p.shallowest if name in E.CONTROL_VARIANTS else p.blocks
        assert [r.config.seed for r in runs] == list(p.seeds(p.count(name, rate, depth))), (name, rate)
    # the ablation's depth is the grid's runs (the same objects), topped up to what the fixed design trains:
    # the residual network to deep_seeds, the plain network to depth_seeds, where the grid has fewer
    for name, knob in ((E.IDENT, "deep_seeds"), (E.PLAIN, "depth_seeds")):
        had, runs = grid.runs[(name, sweep.rates[name])], sweep.runs[(name, p.blocks)]
        assert all(a is b for a, b in zip(runs, had)) and len(runs) >= len(had)
        want = max(p.count(name, sweep.rates[name]), p.sizes[knob])
        assert [r.config.seed for r in runs] == list(p.seeds(want)), name


def test_the_benchmark_runs_both_workloads_cell_by_cell_at_tiny_sizes(capsys):
    from resnet_theory.benchmarks import experiments as bench

    rows = bench.run("tiny", 0, workers=1, baseline={"n_seeds": 3, "init_seeds": 4})
    assert [r["cell"] for r in rows] == [*bench.CELLS, "total"]
    for r in rows:  # a claim on shared runs may take under the clock's 10 ms; training never does
        assert r["baseline CPU s"] >= 0 and r["sized CPU s"] >= 0
        if r["cell"] in ("training grid", "depth sweep", "total"):
            assert r["baseline CPU s"] > 0 and r["sized CPU s"] > 0
        if r["baseline CPU s"] > 0:
            assert r["ratio"] == pytest.approx(r["sized CPU s"] / r["baseline CPU s"])
    assert rows[-1]["baseline CPU s"] == pytest.approx(sum(r["baseline CPU s"] for r in rows[:-1]))
    deg = rows[bench.CELLS.index("he-et-al/plain-degradation")]
    assert deg["verdict (baseline)"] in VERDICTS and deg["verdict (sized)"] in VERDICTS
    text = bench.format_rows(rows)
    assert text.splitlines()[-1].startswith("total") and "control" in text
    with pytest.raises(SystemExit):
        bench.main(["--workers", "0"])
    assert "argument --workers" in capsys.readouterr().err


def test_the_fixed_head_comparison_uses_the_same_seeds_for_both_heads(chapter_run):
    # the paper-rate runs of the fixed head are the initialisation comparison's (init_seeds, 3 at tiny), more
    # than the trained head's (head_seeds, 2): the comparison takes the seeds both have
    ctx, runs = chapter_run
    grid, lr = E.training_grid(ctx), E.plan(ctx).lr
    assert len(grid.runs[(E.IDENT, lr)]) > len(grid.runs[(E.HEAD, lr)])
    assert "$n = 2$" in runs["hardt-ma/sec4-fixed-head"].record.evidence["printed"]["summary"]


def test_one_diverged_run_cannot_swamp_the_depth_comparison():
    """The degradation's statistic (claim and control): one deep run scored at chance, among twenty, leaves the
    difference of medians decisive where it leaves the difference of means within its noise."""
    rng = np.random.default_rng(3)
    shallow, deeper = rng.normal(0.05, 0.01, 21), rng.normal(0.02, 0.01, 20)
    deeper[7] = 0.9  # a diverged run, scored at chance
    args = dict(seed=0, what="deeper trains worse", test="deep minus shallow")
    check = E.depth_difference(deeper, shallow, **args)
    assert not check.holds and check.numbers["margin_standard_errors"] < -2 and check.decisive
    assert check.numbers["estimate"] == pytest.approx(np.median(deeper) - np.median(shallow))
    assert "difference of medians" in check.summary
    from resnet_theory.engine import ablation

    means = ablation.mean_difference(deeper, shallow)  # what the mean made of the same runs
    assert abs(means["difference"] / means["se"]) < 2
    # the statistic still sees a real degradation: most deep runs near chance
    worse = E.depth_difference(np.r_[rng.normal(0.85, 0.02, 8), 0.3, 0.4], shallow, **args)
    assert worse.holds and worse.decisive
    with pytest.raises(ValueError, match="finite"):
        E.depth_difference([0.1, float("nan")], shallow, **args)


def test_settings_and_sizes_are_shown_as_a_reader_writes_them():
    """No Python repr in the recipe table or the architecture table (issue 33, item 5)."""
    assert E.shown_setting((30000, 50000)) == "30,000 and 50,000"
    assert E.shown_setting((1, 2, 3)) == "1, 2 and 3"
    assert E.shown_setting(True) == "yes" and E.shown_setting(False) == "no"
    assert E.shown_setting(64000) == "64,000" and E.shown_setting(0.0001) == "0.0001"
    assert E.shown_setting("small") == "small"
    assert E._shown_size("32x32") == "32 × 32" and E._shown_size("10") == "10"
    assert set(E.HEADERS) <= set(E.ARCHITECTURE_COLUMNS)


#: Seed knobs at which the tiny workload's looks are more than one (ladders 4, 6 and 4, 8).
SEQUENTIAL_KNOBS = {"n_seeds": 6, "init_seeds": 8, "head_seeds": 4, "control_seeds": 6, "depth_seeds": 4,
                    "deep_seeds": 6}  # fmt: skip


def test_the_sequential_design_trains_the_fixed_designs_first_seeds_and_stops_where_its_checks_decide():
    """Every configuration's runs are the first seeds of the runs the fixed design trains (the same runs: final
    losses equal to float rounding, as batched models of different sizes give); each look's knobs grow exactly
    as :func:`experiments_sizing.next_look` says on the margins the claims give at that look; the last look
    grows nothing."""
    from resnet_theory import power
    from resnet_theory.claims import experiments_sizing as S

    torch.set_num_threads(1)
    seq, fixed = (Context.for_table(E.PROFILE, "tiny", 0, {**SEQUENTIAL_KNOBS, "sequential": s}) for s in (True, False))
    for ctx in (seq, fixed):
        E.use_settings(ctx, workers=1)
    loss = E.METRICS["training loss"]
    for get in (E.training_grid, E.depth_sweep):
        a, b = get(seq), get(fixed)
        assert b.looks == () and a.looks and a.looks[-1].grows == ()
        for key, runs in a.runs.items():
            assert 2 <= len(runs) <= len(b.runs[key])
            # the same runs: equal up to the float rounding of a batched model of another group size
            assert [loss(r) for r in runs] == pytest.approx([loss(r) for r in b.runs[key][: len(runs)]], rel=1e-5), key
        for look, after in zip(a.looks, a.looks[1:]):
            assert look.grows and after.sizes == S.grown(look, SEQUENTIAL_KNOBS)
            assert S.next_look(look.sizes, SEQUENTIAL_KNOBS, look.margins) == look
        last = a.looks[-1]
        for claim, role, part, _, knob in S.COMPARISONS:  # a knob below its cap stopped: its checks decided
            m = last.margins.get((claim, role, part), 0.0)
            if knob in last.sizes and last.sizes[knob] < SEQUENTIAL_KNOBS[knob] and (claim, role, part) in last.margins:
                assert m is not None and abs(m) >= power.EARLY_STOP, (claim, role, part, m)
    grid = E.training_grid(seq)
    sizes = grid.looks[-1].sizes
    p = E.plan(seq)
    assert len(grid.runs[(E.PSTD, p.lr)]) == sizes["init_seeds"]
    assert len(grid.runs[(E.IDENT, p.lr)]) == max(sizes["init_seeds"], sizes["head_seeds"])
    assert [r["look"] for r in E.look_rows(seq)] == [*range(1, len(grid.looks) + 1),
                                                    *range(1, len(E.depth_sweep(seq).looks) + 1)]  # fmt: skip
    assert E.look_rows(fixed) == []


def test_the_benchmark_against_every_seed_at_once_gives_the_same_verdicts_at_one_look(capsys):
    """``--baseline fixed``: the profile's own sizes with no looks. At the tiny sizes every knob has one look,
    so both workloads train the same runs and must give the same verdicts and margins."""
    from resnet_theory.benchmarks import experiments as bench

    assert bench.main(["--profile", "tiny", "--baseline", "fixed", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "baseline fixed" in out and out.strip().splitlines()[-1].startswith("total")
    rows = bench.run("tiny", 0, workers=1, baseline=bench.FIXED)
    for r in rows[:-1]:
        if "verdict (sized)" in r and r["verdict (sized)"] is not None:
            assert r["verdict (sized)"] == r["verdict (baseline)"], r["cell"]
            for margin in ("statement margin", "control margin"):
                a, b = r[f"{margin} (sized)"], r[f"{margin} (baseline)"]
                assert (a is None and b is None) or a == pytest.approx(b, rel=1e-6), (r["cell"], margin)
