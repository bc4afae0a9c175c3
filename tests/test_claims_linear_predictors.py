"""The claims of the linear_predictors chapter (Shamir) as library objects: every claim runs at the tiny
profile and gives a well-formed record (a verdict, a control that fails, the data and the glue the chapter
uses), the declarations say what they were checked against, and a claim's numbers do not depend on which
claims ran before it."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

from resnet_theory import shamir as S
from resnet_theory.claims import linear_predictors as LP
from resnet_theory.claims.context import Context
from resnet_theory.claims.linear_predictors import CLAIMS, PROFILE, THM3_EPS, instance_seed
from resnet_theory.claims.run import run_claim
from resnet_theory.claims.spec import Checked, NotCheckable
from resnet_theory.ledger import VERDICTS
from resnet_theory.tables import in_words

from conftest import assert_no_ascii_math_shown

CHAPTER = (Path(__file__).resolve().parents[1] / "book" / "linear_predictors.md").read_text()

#: What the chapter reads from each claim's ``data``.
DATA_KEYS = {
    "shamir/example-1-derivatives": {"difference_gradient", "difference_hessian", "gradient_report", "hessian_report"},
    "shamir/example-1-saddle": {"rows"},
    "shamir/thm-1": {"ratio", "loss", "no_skip_rows", "witnesses", "witness_rows"},
    "shamir/thm-2": {
        "ratio",
        "loss",
        "example_1_rows",
        "witnesses",
        "witness_rows",
        "vv_block_instances",
        "vv_block_largest",
        "lambda_min_relative_largest",
    },
    "shamir/cor-1": {"rows"},
    "shamir/thm-3-approximate": {"rows"},
    "shamir/thm-3": set(),
    "shamir/figure-penalty": {"rows"},
    "shamir/figure-ball": {"rows", "window_rows"},
    "shamir/thm-4": {
        "horizons",
        "gap",
        "bound",
        "radius",
        "delta",
        "t_min",
        "control_gap",
        "control_bound",
        "original_gap",
        "flat_gap",
        "control_radius",
        "plateau_after",
    },
}


pytestmark = pytest.mark.usefixtures("one_thread_for_the_module")


@pytest.fixture(scope="module")
def tiny_runs():
    """Every claim at the tiny profile, seed 0, in one context (as the chapter runs them)."""
    ctx = Context.for_table(CLAIMS.profile, "tiny", 0)
    return {decl.id: run_claim(decl, ctx) for decl in CLAIMS}


def test_the_chapter_declares_ten_claims_and_one_skip():
    assert list(CLAIMS.claims) == list(DATA_KEYS)
    assert len(CLAIMS.skipped) == 1 and CLAIMS.skipped[0].ref.startswith("Theorem 2, first inequality")
    assert CLAIMS.profile is PROFILE


@pytest.mark.parametrize("claim_id", list(DATA_KEYS))
def test_each_claim_runs_at_tiny_size_and_its_record_is_well_formed(tiny_runs, claim_id):
    run = tiny_runs[claim_id]
    rec = run.record
    assert rec.verdict in VERDICTS
    assert rec.id == claim_id and rec.paper == "shamir"
    if isinstance(run.decl, NotCheckable):
        assert rec.verdict == "not-checkable-here" and run.evidence is None and rec.needs
        return
    assert rec.control is not None and rec.control["holds"] is False, rec.control
    assert rec.evidence["printed"]["summary"]
    assert DATA_KEYS[claim_id] <= set(run.evidence.data), sorted(run.evidence.data)
    assert rec.function.startswith("resnet_theory.claims.linear_predictors:")


def test_the_data_keys_listed_here_are_the_ones_the_chapter_reads():
    names = dict(re.findall(r'^(\w+) = chapter\.check\("([^"]+)"\)', CHAPTER, flags=re.M))
    aliases = dict(re.findall(r"^(\w+) = (\w+)\.data$", CHAPTER, flags=re.M))  # t4 = c_thm4.data
    used = [(v, k) for v, k in re.findall(r'\b(\w+)\.data\[["\'](\w+)["\']\]', CHAPTER) if v in names]
    for alias, var in aliases.items():
        used += [(var, k) for k in re.findall(rf'\b{alias}\[["\'](\w+)["\']\]', CHAPTER)]
    assert len(used) >= 15, used
    for var, key in used:
        assert key in DATA_KEYS[names[var]], f"the chapter reads {var}.data[{key!r}] of {names[var]}"


def test_no_summary_a_page_shows_has_ascii_math(tiny_runs):
    """The issue-33 scan (``tests/test_ledger_math.py``) on this file's tiny runs: not a second run of the claims."""
    assert_no_ascii_math_shown("linear_predictors", tiny_runs.values())


def test_every_number_the_prose_quotes_is_glued_by_a_claim(tiny_runs):
    quoted = set(re.findall(r"\{glue:text\}`(\w+)", CHAPTER)) | set(re.findall(r"\{glue:\}`(\w+)`", CHAPTER))
    quoted = {q for q in quoted if not q.startswith("verdict_") and q != "ledger_summary"}
    glued = set()
    for run in tiny_runs.values():
        if run.evidence is not None:
            assert not glued & set(run.evidence.glue), "two claims glue the same name"
            glued |= set(run.evidence.glue)
    assert quoted and quoted <= glued, sorted(quoted - glued)
    verdicts = set(re.findall(r"\{glue:text\}`verdict_(\w+)`", CHAPTER))
    assert verdicts <= {re.sub(r"[/.-]", "_", cid) for cid in DATA_KEYS}


def _chapter_glue_names(text: str) -> tuple[set[str], set[str]]:
    """The names the chapter's prose quotes, and those its cells glue (for an f-string key, its prefix)."""
    quoted = set(re.findall(r"\{glue:(?:text)?\}`([A-Za-z0-9_]+)", text))
    glued = set(re.findall(r'glue\(f?"([A-Za-z0-9_]+)', text))
    return quoted, glued


def test_every_key_a_claim_or_the_chapter_glues_is_quoted_and_glued_once(tiny_runs):
    """No glue that the chapter never quotes (a number computed for nobody), and no key glued twice: by two
    claims, or by a claim and a chapter cell."""
    quoted, chapter_glued = _chapter_glue_names(CHAPTER)
    from_claims: set[str] = set()
    for claim_id, run in tiny_runs.items():
        keys = set(run.evidence.glue) if run.evidence is not None else set()
        assert not keys - quoted, f"{claim_id} glues what the chapter never quotes: {sorted(keys - quoted)}"
        assert not keys & from_claims, f"{claim_id} glues a key another claim glues: {sorted(keys & from_claims)}"
        from_claims |= keys
    assert not from_claims & chapter_glued, "a number glued twice, by a claim and by the chapter"
    assert all(any(q.startswith(g) for q in quoted) for g in chapter_glued), chapter_glued


def test_the_texts_and_the_glue_come_from_the_module_constants(tiny_runs):
    """The book's choices typed nowhere: the statements and controls are written from the constants the
    functions use, and the prose quotes them through glue."""
    saddle = CLAIMS.claims["shamir/example-1-saddle"]
    assert f"-{LP.SADDLE_CONTROL_FACTOR}/\\epsilon" in saddle.control.input
    assert tiny_runs["shamir/example-1-saddle"].evidence.glue["shamir_saddle_control_c"] == LP.SADDLE_CONTROL_FACTOR
    assert f"first {LP.NO_SKIP_T2_INSTANCES} instances" in CLAIMS.claims["shamir/thm-2"].control.input
    thm4 = CLAIMS.claims["shamir/thm-4"]
    assert f"\\delta = {LP.T4_DELTA:g}$" in thm4.statement
    assert f"(norm {S.THEOREM_4['u_norm']:g})" in thm4.control.input
    glue = {k: v for run in tiny_runs.values() if run.evidence for k, v in run.evidence.glue.items()}
    assert all(glue[f"shamir_inst_{k}"] == v for k, v in S.INSTANCE.items())
    assert glue["shamir_inst_flip"] == S.LABEL_FLIP and glue["shamir_verify_rtol"] == S.VERIFY_RTOL
    assert (glue["shamir_ray_from"], glue["shamir_ray_to"]) == S.ESCAPE_FACTORS
    assert (glue["shamir_t4_b"], glue["shamir_t4_u_norm"]) == (S.THEOREM_4["radius"], S.THEOREM_4["u_norm"])
    assert glue["shamir_t4_delta"] == LP.T4_DELTA == tiny_runs["shamir/thm-4"].evidence.data["delta"]
    # the library's defaults are the constants the glue quotes
    defaults = inspect.signature(S.random_theorem_instance).parameters
    assert all(defaults[k].default == v for k, v in S.INSTANCE.items())
    rates = inspect.signature(S.theorem_4_rates).parameters
    assert all(rates[k].default == v for k, v in S.THEOREM_4.items())


def test_the_landscape_verdicts_rest_on_the_reviews_statement_only(tiny_runs):
    """The review says the minima are spurious (not global), and for the ball that it lies in the bottom left;
    the comparison with the best linear predictor is the book's: glued beside the verdict, not a part of it."""
    for claim_id, kind in (("shamir/figure-penalty", "pen"), ("shamir/figure-ball", "ball")):
        run = tiny_runs[claim_id]
        assert "linear" not in run.decl.statement
        assert "linear" not in run.record.evidence["printed"]["summary"]
        glue = run.evidence.glue
        assert 0 <= glue[f"shamir_{kind}_spurious_worse"] <= glue[f"shamir_{kind}_spurious_n"]


def test_theorems_1_and_2_put_their_derivatives_to_three_witnesses(tiny_runs):
    """The gradient (Theorem 1) and the gradient and Hessian at w = 0 (Theorem 2) that the checks use, SymPy
    against autograd against finite differences, per loss, as parts of the statements' checks."""
    for claim_id, n_reports in (("shamir/thm-1", 2), ("shamir/thm-2", 4)):
        reports = tiny_runs[claim_id].evidence.data["witnesses"]
        assert len(reports) == n_reports and all(r.check().holds for r in reports)
        rows = tiny_runs[claim_id].evidence.data["witness_rows"]
        assert [(r["loss"], r["derivative"]) for r in rows] == [
            (loss, kind) for loss in S.LOSSES for kind in ("gradient", "Hessian")[: n_reports // 2]
        ]
        assert all(r["agree"] == "yes" for r in rows)
        assert all({"sympy vs autograd", "autograd vs finite differences"} <= set(r.max_rel_error) for r in reports)
    assert {r.quantity for r in tiny_runs["shamir/thm-2"].evidence.data["witnesses"]} == {"gradient", "Hessian"}


def test_the_ball_window_explains_the_sweep_and_is_no_part_of_the_verdict(tiny_runs):
    """The closed form ``1/eps < R < d`` (``shamir.ball_bottom_left_minimum_radii``) predicts, radius by radius,
    where the search finds a spurious minimum on the ball; the prose quotes the agreement, which the statement's
    check does not use."""
    run = tiny_runs["shamir/figure-ball"]
    glue = run.evidence.glue
    assert glue["shamir_ball_window_n"] == len(run.evidence.data["rows"]) > 0
    assert glue["shamir_ball_window_agree"] == glue["shamir_ball_window_n"]
    assert "window" not in run.record.evidence["printed"]["summary"]
    for row in run.evidence.data["window_rows"]:
        assert row["radii in $(1/\\epsilon, d)$"] == row["radii with a spurious minimum found"]


def test_every_claim_is_checked_in_the_chapter_and_shown():
    for claim_id in DATA_KEYS:
        assert f'chapter.check("{claim_id}")' in CHAPTER
    assert CHAPTER.rstrip().endswith("chapter.show()\n```")
    for banned in ("ledger.claim(", "ledger.skip(", "resolve_profile(", "if quick", "glue_numbers("):
        assert banned not in CHAPTER, banned


def test_sources_say_what_each_statement_was_checked_against():
    for decl in CLAIMS:
        if decl.id == "shamir/cor-1":
            assert decl.source.kind == "abstract" and "TU Munich" in decl.source.detail
        elif decl.id == "shamir/thm-3-approximate":
            # the polynomial is unknown: what is tested (no worse than linear, no tolerance) is the book's question
            assert decl.source.kind == "question" and not decl.rests_on
        else:
            assert decl.source.kind == "review" and "TU Munich seminar review" in decl.source.detail
    assert CLAIMS.claims["shamir/cor-1"].rests_on == ("shamir/thm-3",)
    assert CLAIMS.claims["shamir/thm-3"].rests_on == ("shamir/thm-1", "shamir/thm-2")
    assert "our reading" in CLAIMS.claims["shamir/thm-4"].statement
    assert all(isinstance(d, Checked) for d in CLAIMS if d.id != "shamir/thm-3")


def test_the_statements_name_the_settings_their_functions_use():
    statement = CLAIMS.claims["shamir/thm-3-approximate"].statement
    assert in_words(THM3_EPS) in statement and "b = r = 10" in statement
    assert "radius 0.05" in CLAIMS.claims["shamir/thm-4"].control.input


def test_a_claim_alone_gives_the_numbers_it_gives_in_its_chapter(tiny_runs):
    """Each function draws from ctx.rng(its key) and shares results through ctx.shared: run alone, in a fresh
    context, it gives the same numbers as after the claims before it."""
    for claim_id in ("shamir/thm-2", "shamir/figure-ball", "shamir/example-1-derivatives"):
        alone = run_claim(CLAIMS.claims[claim_id], Context.for_table(CLAIMS.profile, "tiny", 0))
        assert alone.evidence.glue == tiny_runs[claim_id].evidence.glue
        assert alone.record.evidence == tiny_runs[claim_id].record.evidence


def test_the_instance_seed_depends_on_the_seed_only():
    table = CLAIMS.profile
    a, b = Context.for_table(table, "tiny", 0), Context.for_table(table, "quick", 0)
    assert instance_seed(a) == instance_seed(b) != instance_seed(Context.for_table(table, "tiny", 1))


def test_the_profile_table_keeps_todays_sizes():
    quick, full = PROFILE.resolve("quick"), PROFILE.resolve("full")
    assert (quick.n_instances, quick.n_adversarial, quick.n_corollary) == (150, 4, 8)
    assert (full.n_instances, full.n_adversarial, full.n_corollary) == (2000, 40, 40)
    assert (quick.sgd_steps, quick.sgd_runs, full.sgd_steps, full.sgd_runs) == (4096, 16, 32768, 32)
    assert tuple(quick.sweep_eps) == (1.0,) and tuple(full.sweep_eps) == (0.5, 1.0, 2.0)
    with pytest.raises(ValueError, match="unknown knob 'n_instance'"):
        PROFILE.resolve("quick", {"n_instance": 3})


# --- the paper module's additions -------------------------------------------------------------------------------
def test_example_1_instance_is_example_1():
    a = S.example_1_instance(0.5)
    F = S.residual_objective(a["X"], a["y"], [2.0], [[3.0]], a["f_theta"])
    assert F == pytest.approx(0.5 * (2.0 * (1 + 0.5 * 3.0) - 1) ** 2, rel=1e-15)
    assert S.linear_objective(a["X"], a["y"], a["w_star"]) == 0.0


def test_example_1_theorem_2_at_the_saddle():
    rows = S.example_1_theorem_2((1.0, 0.1))
    assert [r["eps"] for r in rows] == [1.0, 0.1]
    for r in rows:
        assert r["lambda_min"] == pytest.approx(-r["eps"], rel=1e-12)
        assert r["|V|"] == pytest.approx(1 / r["eps"], rel=1e-12)
        assert r["right side"] == pytest.approx(0.5, rel=1e-12)
        assert r["Theorem 2 left side"] >= r["right side"]
    assert np.isclose(rows[1]["left side without the factor |V|"], 0.1, rtol=1e-9)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), "one"])
def test_example_1_functions_refuse_a_bad_eps(bad):
    with pytest.raises((ValueError, TypeError), match="eps"):
        S.example_1_instance(bad)
    with pytest.raises((ValueError, TypeError), match="eps"):
        S.example_1_theorem_2([bad])


def test_the_saddle_is_the_only_critical_point_with_a_positive_loss_and_the_check_can_say_otherwise():
    sym = S.example_1_symbolic()
    for e in (sp.Integer(1), sp.Rational(1, 10)):
        assert LP._only_critical_point_above_zero(e, (0, -1 / e), sym)
        assert not LP._only_critical_point_above_zero(e, (0, -LP.SADDLE_CONTROL_FACTOR / e), sym)
    shifted = {**sym, "objective": sym["objective"] + sp.Rational(1, 2)}  # every critical point above zero
    assert not LP._only_critical_point_above_zero(sp.Integer(1), (0, -1), shifted)
