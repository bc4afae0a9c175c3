"""The linear chapter's claims (``resnet_theory.claims.linear``): every claim runs at the tiny profile and gives a
well-formed record (a verdict, a control that fails, the data and glue the chapter uses); a claim's numbers do
not depend on which claims ran before it; the chapter runs every claim and quotes only glue that exists."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from resnet_theory import linear
from resnet_theory.claims import Context
from resnet_theory.claims import linear as linear_claims
from resnet_theory.claims.linear import CLAIMS, PROFILE, PROOF_STEP_KEYS
from resnet_theory.claims.run import run_claim
from resnet_theory.claims.spec import Checked
from resnet_theory.ledger import VERDICTS

from conftest import assert_no_ascii_math_shown

CHAPTER = Path(__file__).resolve().parents[1] / "book" / "linear.md"

#: The data keys (and their keys, where the chapter reads inside them) that book/linear.md uses.
DATA_KEYS = {
    "hardt-ma/sec1-nonconvex": {"rows": None, "hessians": None},
    "hardt-ma/claim-2.3": {"rows": None, "E[x x^T]": None},
    "hardt-ma/sec1-psd-root": {"rows": None},
    "hardt-ma/sec1-no-bad-critical": {"rows": None},
    "hardt-ma/sec1-plain-zero-critical": {"rows": None},
    "hardt-ma/lemma-2.4": {"reports": ("corrected", "printed", "big", "control")},
    "hardt-ma/thm-2.1": {
        "pairs": ("kind", "depth", "max_norm", "camera", "svd_norm"),
        "worst": ("polar ratio", "polar depth", "rebuilt", "svd ratio", "svd depth"),
        "det_search": None,
        "below": None,
        "misses": ("camera-ready", "review", "3 gamma / l"),
    },
    # one claim, the printed proof's six steps: each step's data under its key
    "hardt-ma/thm-2.1-proof": {
        "rotation-blocks": ("rows",),
        "sign": ("rows",),
        "rotation-norm": ("rows",),
        "scaling": ("rows",),
        "layer-count": ("count printed", "top slots printed", "top index printed", "count fixed", "slack fixed"),
        "rounding": ("witness",),
    },
    "hardt-ma/eq-2.3": {"witnesses": None, "boundary": ("tau", "ratio", "ratio outside", "trivial")},
    "hardt-ma/thm-2.2": {"search": None, "per_layer": None},
    "bartlett-helmbold-long/spd": {"runs": None, "random": None, "fits": None, "controls": None},
    "bartlett-helmbold-long/near-identity": {"summary": None, "fits": None, "control fit": None},
    "bartlett-helmbold-long/far-from-identity": {"summary": None},
    "bartlett-helmbold-long/negative-eigenvalue": {"rows": None, "rotation": None},
}


pytestmark = pytest.mark.usefixtures("one_thread_for_the_module")


@pytest.fixture(scope="module")
def tiny():
    """One tiny context for the module (shared results computed once) and the runs made in it."""
    return Context.for_table(PROFILE, "tiny", 0), {}


def run_in(tiny, claim_id):
    ctx, runs = tiny
    if claim_id not in runs:
        runs[claim_id] = run_claim(CLAIMS.claims[claim_id], ctx)
    return runs[claim_id]


@pytest.mark.parametrize("claim_id", list(CLAIMS.claims))
def test_every_claim_runs_at_the_tiny_profile_and_gives_a_well_formed_record(tiny, claim_id):
    run = run_in(tiny, claim_id)
    rec = run.record
    assert rec.id == claim_id and rec.verdict in VERDICTS
    if not isinstance(CLAIMS.claims[claim_id], Checked):
        assert rec.verdict == "not-checkable-here" and rec.needs and run.evidence is None
        return
    assert rec.control is not None and rec.control["holds"] is False, f"{claim_id}: the control holds"
    assert rec.control["input"] == CLAIMS.claims[claim_id].control.input
    for key, inner in DATA_KEYS.get(claim_id, {}).items():
        assert key in run.data, f"{claim_id}: data lacks {key!r}"
        for k in inner or ():
            assert k in run.data[key], f"{claim_id}: data[{key!r}] lacks {k!r}"


def test_no_summary_a_page_shows_has_ascii_math(tiny):
    """The issue-33 scan (``tests/test_ledger_math.py``) on this file's tiny runs: not a second run of the claims."""
    assert_no_ascii_math_shown("linear", (run_in(tiny, claim_id) for claim_id in CLAIMS.claims))


def test_the_claims_and_their_order_are_the_chapters():
    text = CHAPTER.read_text()
    checked = re.findall(r'chapter\.check\("([^"]+)"\)', text)
    assert checked == list(CLAIMS.claims), "book/linear.md must run every claim once, in the module's order"


def chapter_glue_keys(text: str) -> set[str]:
    quoted = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", text))
    glued_here = set(re.findall(r'glue\(\s*"([A-Za-z0-9_]+)"', text))
    glued_here |= {
        k
        for call in re.findall(r"glue_numbers\((.*?)\)\n```", text, flags=re.S)
        for k in re.findall(r"([A-Za-z0-9_]+)=", call)
    }
    return quoted - glued_here


def test_every_number_the_prose_quotes_is_glued_by_a_claim_or_a_chapter_cell(tiny):
    needed = chapter_glue_keys(CHAPTER.read_text())
    needed = {k for k in needed if not k.startswith("verdict_") and k != "ledger_summary"}
    glued = set()
    for claim_id in CLAIMS.claims:
        run = run_in(tiny, claim_id)
        if run.evidence is not None:
            glued |= set(run.evidence.glue)
    assert needed <= glued, f"quoted in book/linear.md but glued by no claim: {sorted(needed - glued)}"


def test_every_number_a_claim_glues_is_quoted_by_the_chapter(tiny):
    quoted = set(re.findall(r"\{glue:text\}`([A-Za-z0-9_]+)", CHAPTER.read_text()))
    for claim_id in CLAIMS.claims:
        run = run_in(tiny, claim_id)
        unquoted = set(run.evidence.glue) - quoted if run.evidence is not None else set()
        assert not unquoted, f"{claim_id} glues what book/linear.md never quotes: {sorted(unquoted)}"


def test_the_distance_claims_state_the_constants_they_run():
    """The near and far statements and the near control write the module's constants, not copies of them."""
    from resnet_theory.claims.linear import (
        FAR_DISTANCES,
        FAR_MIN_SMIN,
        NEAR_CONTROL_DISTANCE,
        NEAR_FRACTION,
    )
    from resnet_theory.tables import in_words

    near = CLAIMS.claims["bartlett-helmbold-long/near-identity"]
    far = CLAIMS.claims["bartlett-helmbold-long/far-from-identity"]
    assert f"= {NEAR_FRACTION:g}/(10e)$" in near.statement
    assert f"spectral distance {NEAR_CONTROL_DISTANCE:g} from $I$" in near.control.input
    assert NEAR_CONTROL_DISTANCE in FAR_DISTANCES
    assert f"spectral distance {in_words(FAR_DISTANCES)} with" in far.statement
    assert f"\\ge {FAR_MIN_SMIN:g}$" in far.statement


def test_a_claims_numbers_do_not_depend_on_the_claims_run_before_it(tiny):
    alone = run_claim(CLAIMS.claims["bartlett-helmbold-long/far-from-identity"], Context.for_table(PROFILE, "tiny", 0))
    run_in(tiny, "bartlett-helmbold-long/near-identity")  # computes the shared distance runs first
    together = run_in(tiny, "bartlett-helmbold-long/far-from-identity")
    assert alone.evidence.glue == together.evidence.glue
    assert alone.data["summary"] == together.data["summary"]


def test_another_seed_gives_other_numbers():
    a = run_claim(CLAIMS.claims["hardt-ma/claim-2.3"], Context.for_table(PROFILE, "tiny", 0))
    b = run_claim(CLAIMS.claims["hardt-ma/claim-2.3"], Context.for_table(PROFILE, "tiny", 1))
    assert not np.isclose(a.data["rows"][-1]["f(A)"], b.data["rows"][-1]["f(A)"])


def test_every_knob_has_a_tiny_size_of_its_kind():
    for profile in ("tiny", "quick", "full"):
        PROFILE.resolve(profile)
    tiny_cfg, quick_cfg = PROFILE.resolve("tiny"), PROFILE.resolve("quick")
    for name in PROFILE.knobs:
        assert type(getattr(tiny_cfg, name)) is type(getattr(quick_cfg, name)), name


def test_an_unknown_or_mistyped_knob_is_refused_in_one_line():
    with pytest.raises(ValueError, match="unknown knob 'max_dept'"):
        Context.for_table(PROFILE, "tiny", 0, {"max_dept": 3})
    with pytest.raises(TypeError, match="knob 'critical_configs'"):
        Context.for_table(PROFILE, "tiny", 0, {"critical_configs": 3})


def test_the_erratum_of_a_review_sourced_claim_says_as_the_review_states_it(tiny):
    from resnet_theory.ledger_html import errata_html

    rec = run_in(tiny, "hardt-ma/thm-2.1-early").record
    assert rec.verdict == "corrected" and rec.source == "review"
    assert "as the PaperWhy review states it" in rec.erratum and "as printed" not in rec.erratum
    page = errata_html([rec], link=False)
    assert "as the PaperWhy review states it" in page and "the printed statement" not in page
    printed = run_in(tiny, "hardt-ma/eq-2.3").record
    assert printed.verdict == "corrected" and printed.erratum.split(": ", 1)[1].startswith("as printed")


def test_the_rounding_witness_exceeds_the_printed_bound_for_every_svd(tiny):
    """T(3.1) diag(1.01, 1) at l = 4 and 6: every SVD (the four sign choices; two have rotations U, V) gives the
    proof's scheme a largest layer above the printed constant, so no sign choice of numpy's rescues the step."""
    from resnet_theory.claims.linear import ROUNDING_WITNESS, svd_scheme_every_sign

    run = run_in(tiny, "hardt-ma/thm-2.1-proof")
    rows = run.data["rounding"]["witness"]
    assert sorted({r["depth"] for r in rows}) == list(ROUNDING_WITNESS["depths"]) == [4, 6]
    for depth in (4, 6):
        mine = [r for r in rows if r["depth"] == depth]
        assert sorted(r["signs"] for r in mine) == sorted(str(s) for s in ((1, 1), (1, -1), (-1, 1), (-1, -1)))
        usable = [r for r in mine if r["rotations"]]
        assert len(usable) == 2
        assert all(r["best max ||A_i||"] > r["printed bound"] and r["product error"] < 1e-12 for r in usable)
    rounding = run.evidence.proof_steps[PROOF_STEP_KEYS.index("rounding")]  # step 6 of the printed proof
    assert not rounding.step.holds and rounding.step.decisive
    assert rounding.repair.holds and run.verdict == "proof-gap"
    repair = rounding.repair.summary  # its text says both constants on every pair: both are checked
    assert r"2(\sqrt{\pi}+\sqrt{3\gamma})^2/\ell" in repair and r"(4\pi + 3\gamma)/\ell" in repair
    assert run.evidence.glue["thm21_witness_min_ratio"] > 1.05
    # the same for R^T, whose SVDs are the transposes: the scheme does not hinge on which SVD numpy returns
    R = np.array([[np.cos(3.1), -np.sin(3.1)], [np.sin(3.1), np.cos(3.1)]]) @ np.diag([1.01, 1.0])
    for r in svd_scheme_every_sign(R.T, 4):
        assert not r["rotations"] or r["best max ||A_i||"] > 1.89
    with pytest.raises(ValueError, match="distinct singular values"):
        svd_scheme_every_sign(np.eye(2), 4)


def test_the_theorem_2_2_repair_holds_for_every_sigma_singular_included(tiny):
    """The repair uses s_+(Sigma), the smallest positive eigenvalue: it holds (and is positive) at points of the
    ball with singular Sigma, where the bound with s_min(Sigma) = 0 says nothing; the search runs on one too."""
    from resnet_theory import linear

    decl = CLAIMS.claims["hardt-ma/thm-2.2"]
    repair = decl.proof_steps[0].repair
    assert "every $\\Sigma \\ne 0$" in repair and "invertible $\\Sigma$ a zero" not in repair
    run = run_in(tiny, "hardt-ma/thm-2.2")
    rows = run.data["singular"]
    assert rows and all(r["rank"] < r["d"] for r in rows)
    assert all(r["||grad f||^2"] >= r["bound, s_+"] * (1 - 1e-9) and r["bound, s_+"] > 0 for r in rows)
    assert max(r["bound, s_min"] for r in rows) < 1e-10
    assert run.evidence.proof.repair.holds and run.verdict == "proof-gap"
    assert (
        run.data["search"][-1]["Sigma"] == r"$LL^\top$, rank $d - 1$" and run.data["search"][-1]["critical points"] >= 1
    )
    # the bound for every Sigma is the s_min bound when Sigma is invertible, and s_+ for a singular one
    A, R = np.zeros((2, 2, 2)), np.array([[2.0, 0.0], [0.0, 3.0]])
    Sigma = np.diag([2.0, 0.0])
    assert linear.smallest_positive_eigenvalue(Sigma) == 2.0
    assert linear.smallest_positive_eigenvalue(np.zeros((2, 2))) == 0
    excess = float(np.trace((np.eye(2) - R) @ Sigma @ (np.eye(2) - R).T))
    assert np.isclose(linear.gradient_lower_bound_every_sigma(A, R, Sigma, 0.0), 4 * 2 * 2.0 * excess)
    S = np.diag([2.0, 5.0])
    assert np.isclose(linear.gradient_lower_bound_every_sigma(A, R, S, 0.3), linear.gradient_lower_bound(A, R, S, 0.3))
    with pytest.raises(ValueError, match="positive semidefinite"):
        linear.gradient_lower_bound_every_sigma(A, R, -S, 0.3)


#: The verdicts of the claims issue 31's coverage walk added (and Claim 2.3's, now with its proof step), at the
#: tiny profile, seed 0: the same as at the quick profile.
WALK_VERDICTS = {
    "hardt-ma/sec1-nonconvex": "confirmed",
    "hardt-ma/claim-2.3": "proof-gap",
    "hardt-ma/sec1-psd-root": "corrected",
    "hardt-ma/thm-2.1-proof": "proof-gap",  # once thm-2.1-proof-rotation-blocks and -scaling (its steps 1 and 4)
    "hardt-ma/sec1-no-bad-critical": "corrected",
    "hardt-ma/sec1-plain-zero-critical": "confirmed",
}


@pytest.mark.parametrize("claim_id", list(WALK_VERDICTS))
def test_the_walks_claims_give_their_verdicts(tiny, claim_id):
    rec = run_in(tiny, claim_id).record
    assert rec.verdict == WALK_VERDICTS[claim_id], rec.reason


def test_the_bad_critical_points_are_exactly_critical_and_the_per_layer_step_holds(tiny):
    rows = run_in(tiny, "hardt-ma/sec1-plain-zero-critical").data["rows"]
    deep = [r for r in rows if r["l"] >= 2]
    assert deep and all(r["max |gradient entry|"] == 0.0 and r["excess risk"] > 0 for r in deep)
    assert all(r["max |gradient entry|"] > 0 for r in rows if r["l"] == 1)
    assert all(r["max |closed-form gradient entry|"] == 0.0 for r in deep)
    from resnet_theory.claims.linear import _SYMPY_MAX_VARIABLES, _ZERO_CASES

    reports = run_in(tiny, "hardt-ma/sec1-plain-zero-critical").data["gradients"]
    for (d, depth), report in zip(_ZERO_CASES, reports, strict=True):
        assert {"autograd vs finite differences", "closed form vs autograd"} <= set(report.max_rel_error)
        assert ("sympy vs autograd" in report.max_rel_error) == (depth * d * d <= _SYMPY_MAX_VARIABLES)
        assert report.check().holds
    per_layer = run_in(tiny, "hardt-ma/thm-2.2").data["per_layer"]
    assert all(r["||df/dA_i||_F"] >= r["Claim C.2 side"] * (1 - 1e-10) for r in per_layer)
    assert all(r["Claim C.2 side"] >= r["(1 - tau) side"] * (1 - 1e-10) for r in per_layer)


def test_the_layer_count_step_reads_the_printed_assignment_not_only_the_garbled_count(tiny):
    """The printed p, q satisfy 2p + q = l, the printed top index A_(2p+q); the top block's p slots hold the q
    layers B_j, so the step fails on p - q as on 2q + p - l (one is minus the other), except at 3 gamma = 4 pi."""
    import sympy as sp

    from resnet_theory.claims.linear import _layer_counts

    c = _layer_counts()
    gamma = next(s for s in c["top slots printed"].free_symbols if s.name == "gamma")
    assert sp.simplify(c["top index printed"]) == 0 and sp.simplify(c["count fixed"]) == 0
    assert sp.simplify(c["count printed"] + c["top slots printed"]) == 0
    assert c["top slots printed"] != 0 and sp.simplify(c["top slots printed"].subs(gamma, 4 * sp.pi / 3)) == 0
    run = run_in(tiny, "hardt-ma/thm-2.1-proof")
    number = PROOF_STEP_KEYS.index("layer-count") + 1  # step 5 of the printed proof
    step = run.evidence.proof_steps[number - 1].step
    assert not step.holds and step.decisive and "slots" in step.summary
    where = CLAIMS.claims["hardt-ma/thm-2.1-proof"].proof_steps[number - 1].where
    assert "A_{2p+q} = B_q" in where and "(our reading of the converted fractions)" in where
    assert "(garbled in our copy)" in where  # the honest qualifiers stay with the step's printed place


#: Theorem 2.1's printed proof, once six claims (retired ids, resnet_theory.claims.registry.RETIRED): each old id's
#: step, and words of the old claim's ref that its step's printed place (ProofStep.where) keeps.
THM21_PROOF_STEPS = {
    "hardt-ma/thm-2.1-proof-rotation-blocks": (1, r"every block $D_i$ of $U = S D S^{-1}$ is a rotation"),
    "hardt-ma/thm-2.1-proof-sign": (2, r"$B_1 = \dots = B_q = \mathrm{Id} - S W S^{-1}$"),
    "hardt-ma/thm-2.1-proof-rotation-norm": (3, r"\max_i |\sin(\theta_i/q)| \le \pi/q$"),
    "hardt-ma/thm-2.1-proof-scaling": (4, r"when $p \ge \gamma$"),
    "hardt-ma/thm-2.1-proof-layer-count": (5, "the choice of $p$ and $q$ (our reading of the converted fractions)"),
    "hardt-ma/thm-2.1-proof-rounding": (6, "p and q used as layer counts"),
}


def test_theorem_2_1s_printed_proof_is_one_claim_whose_six_steps_each_fail_and_are_repaired(tiny):
    """One claim, the printed proof's six steps in its order, each with its printed place: every step fails as
    written and decisively, every repair holds (what each of the six claims it replaces recorded), the statement
    (Theorem 2.1 with det R > 0) holds and its control fails once; each retired id names its step."""
    from resnet_theory.claims import registry

    decl = CLAIMS.claims["hardt-ma/thm-2.1-proof"]
    assert decl.ref == "Appendix A.1, proof of Theorem 2.1" and decl.section == "linear-thm-2-1-proof"
    assert decl.rests_on == ("hardt-ma/claim-c.1",) and len(decl.proof_steps) == len(PROOF_STEP_KEYS) == 6
    run = run_in(tiny, "hardt-ma/thm-2.1-proof")
    assert run.verdict == "proof-gap" and run.evidence.statement.holds and not run.evidence.control.holds
    assert list(run.data) == list(PROOF_STEP_KEYS)
    for old, (number, words) in THM21_PROOF_STEPS.items():
        assert registry.RETIRED[old] == ("hardt-ma/thm-2.1-proof", PROOF_STEP_KEYS[number - 1])
        assert registry.retired_into(old)[1] == f"its proof step {number}, {PROOF_STEP_KEYS[number - 1]}"
        assert old.removeprefix("hardt-ma/thm-2.1-proof-") == PROOF_STEP_KEYS[number - 1]
        where = decl.proof_steps[number - 1].where
        assert where.startswith("Appendix A.1, proof of Theorem 2.1: ") and words in where, (old, where)
        checks = run.evidence.proof_steps[number - 1]
        assert not checks.step.holds and checks.step.decisive and checks.repair.holds, old
        recorded = run.record.proof_steps[number - 1]
        assert recorded.where == where and recorded.step == decl.proof_steps[number - 1].step
    # the numbers the chapter quotes: each step's, as its claim glued them
    assert run.evidence.glue["thm21_sign_error"] > 1 and run.evidence.glue["thm21_norm_ratio"] > 1
    assert run.evidence.glue["thm21_scaling_below"] > 0 and run.evidence.glue["thm21_witness_choices"] == 4


def test_a_proof_steps_number_is_its_place_in_the_declaration():
    decl = CLAIMS.claims["hardt-ma/thm-2.1-proof"]
    assert [decl.step_number(k) for k in PROOF_STEP_KEYS] == list(range(1, len(PROOF_STEP_KEYS) + 1))
    assert decl.step_number("rotation-blocks") == 1 and decl.step_number("rounding") == len(PROOF_STEP_KEYS)
    with pytest.raises(KeyError, match="no proof step 'layer_count'.*layer-count"):
        decl.step_number("layer_count")
    assert PROOF_STEP_KEYS == decl.step_keys  # the keys are the declaration's, paired with each step's wording
    assert set(linear_claims._PROOF_STEPS) == set(PROOF_STEP_KEYS)  # and each with the function that checks it


def _sections(text: str, *labels: str) -> str:
    """The prose (code cells left out) of the chapter's sections ``(label)=`` up to the next label."""
    parts = re.split(r"^\((linear-[a-z0-9-]+)\)=$", text, flags=re.M)
    chosen = "".join(body for label, body in zip(parts[1::2], parts[2::2]) if label in labels)
    return re.sub(r"^```\{code-cell\}.*?^```$", "", chosen, flags=re.M | re.S)


_COUNTS = "one|two|both|three|four|five|six|seven|eight|nine|ten|first|second|third|fourth|fifth|sixth|last"
#: What a hand-typed step number or count of steps looks like: "(step 5)", "steps 2 and 3", "step six", "the
#: four step tables", "six steps", "the second proof step".
TYPED_STEP = re.compile(rf"\bsteps? (?:\d|(?:{_COUNTS})\b)|\b(?:{_COUNTS}|\d+) (?:of (?:its|the) )?(?:proof )?steps?\b")


def test_the_typed_step_pattern_finds_typed_numbers_and_counts():
    for typed in (
        "(step 5)",
        "steps 2 and 3",
        "step six",
        "The four step tables",
        "its six steps",
        "first step",
        "both steps",
        "the proof's second step",
    ):
        assert TYPED_STEP.search(typed), typed
    for glued in ("(step {glue:text}`thm21_step_scaling`)", "{glue:text}`thm21_proof_step_count` steps", "a step"):
        assert not TYPED_STEP.search(glued), glued


def test_theorem_2_1s_proof_prose_takes_every_step_number_from_the_declaration():
    """Each "(step n)" and count of steps in the prose on Theorem 2.1's printed proof is glued from the claim's
    declaration (``chapter.step_number``, one name per step key), and each step table is asked for by its key,
    so a reordered declaration cannot leave the prose pointing at the wrong step."""
    text = CHAPTER.read_text()
    typed = TYPED_STEP.findall(_sections(text, "linear-overview", "linear-thm-2-1-proof"))
    assert not typed, f"book/linear.md types step numbers by hand: {typed}"
    assert not re.findall(r"\.proof_step\(\s*\d", text), "a step table asked for by a typed number"
    assert 'step = partial(chapter.step_number, "hardt-ma/thm-2.1-proof")' in text, "numbers from the declaration"
    glued = dict(re.findall(r"(thm21_step_[a-z_]+)=step\(\"([a-z-]+)\"\)", text))
    assert glued == {f"thm21_step_{k.replace('-', '_')}": k for k in PROOF_STEP_KEYS}
    quoted = set(re.findall(r"\{glue:text\}`(thm21_step_[a-z_]+)`", text))
    assert quoted == set(glued), "each step is named in the prose by its glued number"
    asked = re.findall(r"\.proof_step\(\"([a-z-]+)\"\)", text)
    assert sorted(asked) == sorted(PROOF_STEP_KEYS), "each step's table is shown once, asked for by its key"


def test_the_proofs_evidence_table_names_each_steps_printed_place_after_its_check(tiny):
    from resnet_theory.claims.chapter import evidence_html

    run = run_in(tiny, "hardt-ma/thm-2.1-proof")
    rows = re.findall(r"<tr><th>([^<]*)</th>", evidence_html(run))
    for number in range(1, len(PROOF_STEP_KEYS) + 1):
        at = next(i for i, row in enumerate(rows) if row.startswith(f"proof step {number} as printed: "))
        assert rows[at + 1] == f"where step {number} is printed", rows
    assert sum(row.startswith("where") for row in rows) == len(PROOF_STEP_KEYS)
    assert rows[-2:] == ["verdict", "re-check alone"]
    bare = run_in(tiny, "hardt-ma/claim-2.3")  # a step that names no place: nothing more
    assert not any(row.startswith("where") for row in re.findall(r"<tr><th>([^<]*)</th>", evidence_html(bare)))


def test_the_non_convexity_hessian_has_three_witnesses_where_sympy_is_affordable(tiny):
    from resnet_theory.claims.linear import _CONVEXITY_CASES, _SYMPY_MAX_VARIABLES, _hessian_witnesses

    run = run_in(tiny, "hardt-ma/sec1-nonconvex")
    reports = run.data["hessians"]
    assert len(reports) == len(_CONVEXITY_CASES)
    for (d, depth), report in zip(_CONVEXITY_CASES, reports):
        assert "autograd vs finite differences" in report.max_rel_error
        assert ("sympy vs autograd" in report.max_rel_error) == (depth * d * d <= _SYMPY_MAX_VARIABLES)
    assert sum("sympy vs autograd" in r.max_rel_error for r in reports) >= len(reports) - 1
    # the eigenvalues are the Hessian's: at l = 1 it is 2 Sigma (x) I, positive definite
    Sigma = np.diag([1.0, 3.0])
    eig, report = _hessian_witnesses(1, np.eye(2), Sigma)
    assert np.allclose(eig, sorted([2.0, 2.0, 6.0, 6.0])) and report.check().holds


def test_the_plain_zero_claim_states_its_reading_of_bad():
    statement = CLAIMS.claims["hardt-ma/sec1-plain-zero-critical"].statement
    assert "Our reading" in statement and r"R\Sigma \ne 0" in statement and r"R \ne 0" not in statement


def test_every_svd_of_r_with_positive_determinant_has_a_reflection_twin(tiny):
    rows = run_in(tiny, "hardt-ma/thm-2.1-proof").data["rotation-blocks"]["rows"]
    numpy, negated = ([r["det U"] for r in rows if r["SVD"] == name] for name in ("numpy", "last columns negated"))
    assert all(np.isclose(a, -b) and abs(abs(a) - 1) < 1e-9 for a, b in zip(numpy, negated))
    # det R > 0 makes det U = det V for every SVD; the repair orients both, and both factors get rotation roots
    assert all(np.isclose(r["det U"], r["det V"]) for r in rows)
    oriented = [r for r in rows if r["SVD"].startswith("oriented")]
    assert oriented and all(r["det V"] > 0 and r["((V^T)^(1/q))^q error"] < 1e-9 for r in oriented)


# --- the batched computations the chapter's claims use: the same numbers as one run at a time -------------------
def test_the_batched_exact_runs_are_the_single_runs():
    spectra = np.array([[-1.0, 0.5, 1.0, 2.0], [1.0, 0.5, 1.0, 2.0], [-3.0, 0.5, 1.0, 2.0]])
    lrs, regs = [0.05, 0.02, 0.01], [0.0, 0.1, 1e-3]
    many = linear.symmetric_identity_gd_many(spectra, 4, lrs, 400, regs)
    for lam, lr, reg, run in zip(spectra, lrs, regs, many):
        one = linear.symmetric_identity_gd(lam, 4, lr, 400, reg=reg)
        assert np.array_equal(run.losses, one.losses) and np.array_equal(run.mu, one.mu)
        assert run.min_mu == one.min_mu
    with pytest.raises(ValueError, match="one step and one regulariser per target"):
        linear.symmetric_identity_gd_many(spectra, 4, lrs[:2], 10, regs)
    with pytest.raises(linear.validate.DivergenceError, match="diverged"):
        linear.symmetric_identity_gd_many(spectra, 4, [50.0, 0.02, 0.01], 200, regs)


def _one_descent(R, depth, radius, A):
    """The projected descent of ``best_factorization_in_ball`` for one start, written as a plain loop."""
    res, lr = float(np.linalg.norm(linear.compose(A) - R)), 0.5 / depth
    for _ in range(60):
        g = linear.risk_gradient(A, R, np.eye(len(R)))
        while lr > 1e-12:
            trial = linear._project_to_ball(A - lr * g, radius)
            res_trial = float(np.linalg.norm(linear.compose(trial) - R))
            if res_trial < res:
                A, res, lr = trial, res_trial, lr * 1.5
                break
            lr /= 2
        else:
            break
    return res


def test_the_batched_search_in_the_ball_is_one_descent_per_start():
    rng = np.random.default_rng(3)
    R = np.eye(3) + 0.1 * rng.standard_normal((3, 3))  # near I: reachable with every ||A_i|| <= 0.2 at depth 6
    R_neg = R * np.r_[-1.0, 1.0, 1.0][None, :]
    radii = [0.2, 0.2]
    found = linear.best_factorizations_in_ball([R, R_neg], 6, radii, 3, 60, seed=5)
    draws = np.random.default_rng(5)
    for R_s, radius, best in zip([R, R_neg], radii, found):
        starts = [np.zeros((6, 3, 3))] + [linear.random_layers_in_ball(6, 3, radius, draws) for _ in range(2)]
        assert best["residual"] == pytest.approx(min(_one_descent(R_s, 6, radius, A) for A in starts), rel=1e-9)
    assert found[0]["residual"] < 1e-9 * np.linalg.norm(R) and found[1]["residual"] >= found[1]["s_min"] * 0.999
    with pytest.raises(ValueError, match="one radius per target"):
        linear.best_factorizations_in_ball([R, R_neg], 6, [0.2], 3, 10)
    with pytest.raises(ValueError, match="one size"):
        linear.best_factorizations_in_ball([R, np.eye(2)], 6, radii, 3, 10)


def test_the_batched_traces_are_the_single_traces_each_stopping_at_its_own_step():
    rng = np.random.default_rng(7)
    Phis = [np.eye(3) + r * rng.standard_normal((3, 3)) / 3 for r in (0.3, 0.6, 2.0)]
    lrs, regs = [linear.bhl_step_size(Phi, 4) for Phi in Phis], [0.0, 0.01, 0.1]
    many = linear.identity_gd_trace_many(Phis, 4, lrs, 500, regs, tol=1e-6)
    lengths = set()
    for Phi, lr, reg, run in zip(Phis, lrs, regs, many):
        one = linear.identity_gd_trace(Phi, 4, lr, 500, reg=reg, tol=1e-6)
        assert np.array_equal(run.losses, one.losses) and np.array_equal(run.product_dets, one.product_dets)
        assert np.array_equal(run.layers, one.layers)
        lengths.add(run.losses.size)
    assert len(lengths) > 1, "the runs should stop at different steps"
    with pytest.raises(ValueError, match="one step and one regulariser per target"):
        linear.identity_gd_trace_many(Phis, 4, lrs[:1], 10)
    with pytest.raises(ValueError, match="square matrices"):
        linear.identity_gd_trace_many(np.ones((2, 3, 2)), 4, lrs[:2], 10)
    with pytest.raises(linear.validate.DivergenceError, match="diverged"):
        linear.identity_gd_trace_many(Phis, 4, [50.0, *lrs[1:]], 200)


def test_the_far_targets_and_their_positive_definite_counterparts():
    """The far targets keep ``s_min >= FAR_MIN_SMIN`` (the rule the control called for); each control target has the
    far target's singular values (so its floor) and is symmetric positive definite; the near targets sit inside
    the restated radius (Arora et al.: one over 10e), in the Frobenius norm and so in the spectral one."""
    from resnet_theory.claims.linear import FAR_MIN_SMIN, NEAR_FRACTION, RESTATED_RADIUS, _far_targets, spd_counterpart

    assert RESTATED_RADIUS == pytest.approx(1 / (10 * np.e), rel=1e-15) and 0 < NEAR_FRACTION < 1
    for Phi in _far_targets(np.random.default_rng(3), 3.0, 20):
        s = np.linalg.svd(Phi, compute_uv=False)
        assert s.min() >= FAR_MIN_SMIN and np.linalg.norm(Phi - np.eye(4), 2) == pytest.approx(3.0, rel=1e-12)
        P = spd_counterpart(Phi)
        assert np.allclose(P, P.T, rtol=0, atol=1e-12 * s.max()) and np.linalg.eigvalsh(P).min() > 0
        assert np.allclose(np.linalg.svd(P, compute_uv=False), s, rtol=1e-10, atol=0)
    G = np.diag([-2.0, 1.0])  # det < 0: its counterpart is diag(2, 1)
    assert np.allclose(spd_counterpart(G), np.diag([2.0, 1.0]), rtol=1e-12, atol=0)


def test_the_far_control_is_decided_by_its_runs_not_by_its_construction(tiny):
    """The control's count is of runs on positive definite targets that stay above the same floor: a run that had
    not converged would be counted (the count is not zero by construction, as a det Phi < 0 condition would make
    it)."""
    from resnet_theory.claims.linear import _certified, _stays_above_floor

    slow = {"converged": False, "det P_t > 0": True, "min loss": 0.5, "half s_min^2": 0.1, "det Phi < 0": False}
    assert _stays_above_floor(slow) and not _certified(slow)
    assert _certified({**slow, "det Phi < 0": True})
    assert not _stays_above_floor({**slow, "converged": True})
    assert not _stays_above_floor({**slow, "min loss": 0.05})
    run = run_in(tiny, "bartlett-helmbold-long/far-from-identity")
    rows = {r["targets"]: r for r in run.data["summary"]}
    assert any(k.startswith("positive definite counterparts") for k in rows)
    near = run_in(tiny, "bartlett-helmbold-long/near-identity")
    assert near.evidence.glue["bhl_near_inside"] < near.evidence.glue["bhl_near_radius"]


def test_the_near_growth_check_counts_what_steps_to_counts_and_can_fail(tiny):
    """The near claim's tolerances lie below every near target's starting loss and include TOL; its counts read off
    one run are those :func:`steps_to` gives run by run; affine counts pass its shape check and exponential ones
    fail it; at the tiny profile the statement holds and the singular control fails by its shape."""
    from resnet_theory.claims.linear import (
        NEAR_EPS_GRID,
        NEAR_FRACTION,
        RESTATED_RADIUS,
        TOL,
        _first_steps,
        _fits,
        _near_sweep,
        _power_law_fits_every,
        steps_to,
    )

    assert NEAR_EPS_GRID.max() < 0.5 * (NEAR_FRACTION * RESTATED_RADIUS) ** 2 and TOL in NEAR_EPS_GRID
    rng = np.random.default_rng(4)
    Delta = rng.standard_normal((3, 3))
    Phi = np.eye(3) + NEAR_FRACTION * RESTATED_RADIUS * Delta / np.linalg.norm(Delta)
    trace = linear.identity_gd_trace(Phi, 4, linear.bhl_step_size(Phi, 4), 500, tol=NEAR_EPS_GRID.min())
    assert _first_steps(trace.losses, NEAR_EPS_GRID) == [steps_to(Phi, 4, 500, eps) for eps in NEAR_EPS_GRID]
    assert _first_steps(trace.losses[:3], [1e-30]) == [None]
    affine = {"L": 2, "d": 4, "steps to eps": [int(5 + 2 * k) for k in range(NEAR_EPS_GRID.size)]}
    exponential = {**affine, "d": 16, "steps to eps": [int(np.exp(0.9 * np.log(16 / e))) for e in NEAR_EPS_GRID]}
    assert _power_law_fits_every(_fits(_near_sweep([affine])), what="affine").holds
    assert not _power_law_fits_every(_fits(_near_sweep([affine, exponential])), what="with an exponential").holds
    run = run_in(tiny, "bartlett-helmbold-long/near-identity")
    assert run.record.verdict == "confirmed"
    assert len(run.data["fits"]) == run.evidence.glue["bhl_near_n"]
    control = run.data["control fit"]
    assert control["RMS exponential"] < control["RMS power law"]
    near = CLAIMS.claims["bartlett-helmbold-long/near-identity"]
    assert "$10^{-4}$ to $10^{-12}$" in near.statement and NEAR_EPS_GRID.max() == 1e-4 and NEAR_EPS_GRID.min() == 1e-12


def test_the_negative_claim_asks_for_strictly_positive_layer_eigenvalues_and_lists_every_target(tiny):
    """The chapter says the exact runs keep their layer eigenvalues strictly positive, and the check asks exactly
    that (a zero fails it); the glued spectra, one negative eigenvalue and two, are all of the claim's targets."""
    from resnet_theory.claims.linear import NEGATIVE_SPECTRA, _spectra_text, _with_negatives

    assert len(_with_negatives(1)) + len(_with_negatives(2)) == len(NEGATIVE_SPECTRA)
    assert _spectra_text([[-1.0, 0.5], [-3.0, 2.0]]) == "(-1, 0.5) and (-3, 2)"
    run = run_in(tiny, "bartlett-helmbold-long/negative-eigenvalue")
    assert "smallest layer eigenvalue over the run $> 0$" in run.evidence.statement.summary
    assert all(r["smallest mu"] > 0 for r in run.data["rows"])
    assert "keeps its layer eigenvalues strictly positive" in CHAPTER.read_text()


def test_a_distance_run_without_tolerances_runs_to_tol_and_counts_as_the_batch_does():
    """:func:`_distance_run` with its defaults (no trace, no tolerances) runs to ``TOL`` alone, and gives the
    record the same run computed as a trace gives; with tolerances it counts the first step below each."""
    from resnet_theory.claims.linear import NEAR_EPS_GRID, TOL, _distance_run, steps_to

    rng = np.random.default_rng(7)
    Phi = np.eye(3) + 0.01 * rng.standard_normal((3, 3))
    alone = _distance_run(Phi, 4, 500)
    trace = linear.identity_gd_trace(Phi, 4, linear.bhl_step_size(Phi, 4), 500, tol=TOL)
    assert alone == _distance_run(Phi, 4, 500, trace=trace)
    assert alone["converged"] and alone["steps"] == steps_to(Phi, 4, 500) and alone["steps to eps"] == []
    further = _distance_run(Phi, 4, 500, tolerances=NEAR_EPS_GRID)
    assert further["steps"] == alone["steps"]
    assert further["steps to eps"] == [steps_to(Phi, 4, 500, eps) for eps in NEAR_EPS_GRID]
